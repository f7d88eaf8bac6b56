//! Runs test bodies on compio's runtime, once with the driver compio picks (io_uring where the
//! kernel allows it) and once forced onto its `polling` fallback.

#![allow(dead_code)]

use std::future::Future;
use std::time::Duration;

use compio::driver::{DriverType, ProactorBuilder};
use compio::runtime::RuntimeBuilder;

/// Upper bound for anything a test waits on.
pub(crate) const T: Duration = Duration::from_secs(10);

/// Which compio driver a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Driver {
    /// Whatever compio picks: io_uring if available, else polling.
    Auto,
    /// The readiness-based fallback, forced.
    Polling,
}

impl Driver {
    /// A tag for names that must differ between the two runs (ipc paths).
    pub(crate) fn tag(self) -> &'static str {
        match self {
            Driver::Auto => "auto",
            Driver::Polling => "poll",
        }
    }
}

/// Runs `f` to completion on a fresh compio runtime with `driver`.
pub(crate) fn block_on<F: Future>(driver: Driver, f: F) -> F::Output {
    let mut proactor = ProactorBuilder::new();
    if driver == Driver::Polling {
        proactor.driver_type(DriverType::Poll);
    }
    let rt = RuntimeBuilder::new()
        .with_proactor(proactor)
        .build()
        .expect("compio runtime");
    if driver == Driver::Polling {
        assert_eq!(rt.driver_type(), DriverType::Poll);
    }
    rt.block_on(f)
}

/// `f` or a panic after [`T`].
pub(crate) async fn within<F: Future>(f: F) -> F::Output {
    compio::time::timeout(T, f).await.expect("took too long")
}

/// Declares each `async fn name(driver: Driver)` as two tests, `auto::name` and
/// `polling::name`.
#[macro_export]
macro_rules! on_both_drivers {
    ($($name:ident),* $(,)?) => {
        mod auto {
            $(#[test] fn $name() { $crate::common::block_on($crate::common::Driver::Auto, super::$name($crate::common::Driver::Auto)) })*
        }
        mod polling {
            $(#[test] fn $name() { $crate::common::block_on($crate::common::Driver::Polling, super::$name($crate::common::Driver::Polling)) })*
        }
    };
}
