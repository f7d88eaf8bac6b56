//! `omq`: a zmqcat. ZeroMQ sockets from the shell, on omq (pure Rust).
//!
//! `omq --help` says how to use it; `src/args.rs` holds the command line, `src/run.rs` the
//! socket loop (generic over omq-driver runtimes) and `src/backend.rs` the runtimes.

mod args;
mod backend;
mod run;

use std::io::Write;
use std::process::ExitCode;

/// Why a run did not end well, and so its exit status.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Bad arguments or endpoints: one line on stderr, exit 2.
    Usage(String),
    /// `omq` with no arguments: the help on stderr, exit 2.
    Help(String),
    /// Nothing arrived (or could be sent) within --timeout: exit 1.
    Timeout(String),
    /// Anything else that went wrong while running: exit 1.
    Other(String),
}

impl Failure {
    fn report(self) -> ExitCode {
        let (text, code) = match self {
            Failure::Usage(t) => (format!("omq: {t}\n"), 2),
            Failure::Help(t) => (t, 2),
            Failure::Timeout(t) | Failure::Other(t) => (format!("omq: {t}\n"), 1),
        };
        let _ = std::io::stderr().write_all(text.as_bytes());
        ExitCode::from(code)
    }
}

fn keygen() -> ExitCode {
    let pair = omq_core::mechanism::generate_keypair(&mut rand_core::OsRng);
    let secret = pair.secret().to_z85();
    let text = zeroize::Zeroizing::new(format!(
        "public: {}\nsecret: {}\n",
        pair.public().to_z85(),
        secret.as_str()
    ));
    match std::io::stdout().write_all(text.as_bytes()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => Failure::Other(format!("cannot write the keys: {e}")).report(),
    }
}

fn main() -> ExitCode {
    match args::parse(std::env::args_os()) {
        Ok(args::Command::Print(text)) => {
            let _ = std::io::stdout().write_all(text.as_bytes());
            ExitCode::SUCCESS
        }
        Ok(args::Command::Keygen) => keygen(),
        Ok(args::Command::Proxy(config)) => match config.runtime.run_proxy(*config) {
            Ok(()) => ExitCode::SUCCESS,
            Err(f) => f.report(),
        },
        Ok(args::Command::Run(config)) => match config.backend.run(*config) {
            Ok(()) => ExitCode::SUCCESS,
            Err(f) => f.report(),
        },
        Err(f) => f.report(),
    }
}
