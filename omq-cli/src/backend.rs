//! The runtimes `omq` can run on. The socket code ([`crate::run::run`]) is generic over
//! omq-driver's `Runtime`; a backend only has to say how to start its executor, so adding one
//! is a name in [`Backend::from_name`] and an arm in [`Backend::run`].

use crate::args::{Config, ProxyConfig};
use crate::Failure;

/// Runs the future `$f` makes for runtime type `R` to completion on `$backend`'s executor.
macro_rules! on_runtime {
    ($backend:expr, |$r:ident| $f:expr) => {
        match $backend {
            Backend::Tokio => {
                type $r = omq_tokio::Tokio;
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| Failure::Other(format!("cannot start tokio: {e}")))?
                    .block_on($f)
            }
            Backend::Compio => {
                type $r = omq_compio::Compio;
                compio::runtime::RuntimeBuilder::new()
                    .build()
                    .map_err(|e| Failure::Other(format!("cannot start compio: {e}")))?
                    .block_on($f)
            }
            Backend::Monoio => {
                type $r = omq_monoio::Monoio;
                monoio::RuntimeBuilder::<monoio::FusionDriver>::new()
                    .enable_timer()
                    .build()
                    .map_err(|e| Failure::Other(format!("cannot start monoio: {e}")))?
                    .block_on($f)
            }
            Backend::Glommio => {
                type $r = omq_glommio::Glommio;
                omq_glommio::block_on($f)
                    .map_err(|e| Failure::Other(format!("cannot start glommio: {e}")))?
            }
        }
    };
}

/// A runtime to run the socket on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Backend {
    /// omq-tokio, on a current-thread tokio runtime.
    Tokio,
    /// omq-compio (io_uring, or epoll where io_uring is unavailable).
    Compio,
    /// omq-monoio (io_uring, or epoll where io_uring is unavailable).
    Monoio,
    /// omq-glommio (io_uring only; a clear error where it is unavailable).
    Glommio,
}

impl Backend {
    /// The backend called `name` (any case).
    pub(crate) fn from_name(name: &str) -> Result<Backend, Failure> {
        let lower = name.to_ascii_lowercase();
        match lower.as_str() {
            "tokio" => Ok(Backend::Tokio),
            "compio" => Ok(Backend::Compio),
            "monoio" => Ok(Backend::Monoio),
            "glommio" => Ok(Backend::Glommio),
            _ => Err(Failure::Usage(format!(
                "unknown backend {name:?} (available: tokio, compio, monoio, glommio)"
            ))),
        }
    }

    /// Runs `config` to the end on this backend.
    pub(crate) fn run(self, config: Config) -> Result<(), Failure> {
        on_runtime!(self, |R| crate::run::run::<R>(config))
    }

    /// Runs a proxy on this backend until it fails.
    pub(crate) fn run_proxy(self, config: ProxyConfig) -> Result<(), Failure> {
        on_runtime!(self, |R| crate::run::proxy::<R>(config))
    }
}
