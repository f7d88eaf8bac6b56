//! Runs the whole conformance suite on a runtime and prints the report.
//! `cargo run -p conformance --example check_runtime -- [tokio|compio|compio-poll|monoio|monoio-legacy|glommio|async-io]`

use conformance::backend::{
    CompioBackend, CompioPollBackend, GlommioBackend, MonoioBackend, MonoioLegacyBackend,
    TokioBackend,
};
use conformance::plugged::AsyncIoBackend;
use conformance::report::run_suite;

fn main() {
    let which = std::env::args().nth(1).unwrap_or_else(|| "async-io".into());
    let report = match which.as_str() {
        "tokio" => run_suite::<TokioBackend>(),
        "compio" => run_suite::<CompioBackend>(),
        "compio-poll" => run_suite::<CompioPollBackend>(),
        "monoio" => run_suite::<MonoioBackend>(),
        "monoio-legacy" => run_suite::<MonoioLegacyBackend>(),
        "glommio" => run_suite::<GlommioBackend>(),
        "async-io" => run_suite::<AsyncIoBackend>(),
        other => {
            eprintln!("unknown runtime {other}");
            std::process::exit(2);
        }
    };
    print!("{report}");
    std::process::exit(if report.failed() == 0 { 0 } else { 1 });
}
