//! What the `main` of every zguide example shares: picking the runtime from the command line.
//!
//! The examples' code is generic over `omq_driver::Runtime`; only `main` names an executor.
//! This file is not an example of its own (cargo takes `examples/*.rs` and
//! `examples/*/main.rs`); each example includes it with `#[path]`.

/// The runtime named by `--runtime NAME` (tokio when absent), and the other arguments in order.
pub(crate) fn args() -> (String, Vec<String>) {
    let mut runtime = "tokio".to_string();
    let mut rest = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.strip_prefix("--runtime") {
            Some("") => runtime = args.next().unwrap_or_default(),
            Some(v) if v.starts_with('=') => runtime = v[1..].to_string(),
            _ => rest.push(a),
        }
    }
    (runtime, rest)
}

/// Runs the future `$fut`, written for the omq runtime type `$r`, to completion on the
/// executor called `$name` (tokio, compio, monoio or glommio). `$fut` gives a
/// `Result<_, Box<dyn Error>>`; an unknown name is an error of the same type.
macro_rules! on_runtime {
    ($name:expr, |$r:ident| $fut:expr) => {{
        use conformance::backend::{
            Backend, CompioBackend, GlommioBackend, MonoioBackend, TokioBackend,
        };
        match $name {
            "tokio" => {
                type $r = <TokioBackend as Backend>::R;
                TokioBackend::block_on($fut)
            }
            "compio" => {
                type $r = <CompioBackend as Backend>::R;
                CompioBackend::block_on($fut)
            }
            "monoio" => {
                type $r = <MonoioBackend as Backend>::R;
                MonoioBackend::block_on($fut)
            }
            "glommio" => {
                type $r = <GlommioBackend as Backend>::R;
                GlommioBackend::block_on($fut)
            }
            other => {
                Err(format!("unknown runtime {other:?}: tokio, compio, monoio or glommio").into())
            }
        }
    }};
}
pub(crate) use on_runtime;
