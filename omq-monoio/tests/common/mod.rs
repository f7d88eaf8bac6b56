//! Runs test bodies on monoio's runtime, once with the driver monoio picks (`FusionDriver`:
//! io_uring where the kernel allows it) and once forced onto its `legacy` (epoll) driver.

#![allow(dead_code)]

use std::future::Future;
use std::time::Duration;

use monoio::{FusionDriver, LegacyDriver, RuntimeBuilder};

/// Upper bound for anything a test waits on.
pub(crate) const T: Duration = Duration::from_secs(10);

/// Which monoio driver a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Driver {
    /// Whatever monoio picks: io_uring if available, else legacy.
    Auto,
    /// The epoll-based legacy driver, forced.
    Legacy,
}

impl Driver {
    /// A tag for names that must differ between the two runs (ipc paths).
    pub(crate) fn tag(self) -> &'static str {
        match self {
            Driver::Auto => "auto",
            Driver::Legacy => "legacy",
        }
    }
}

/// Runs `f` to completion on a fresh monoio runtime (with timers) with `driver`.
pub(crate) fn block_on<F: Future>(driver: Driver, f: F) -> F::Output {
    match driver {
        Driver::Auto => RuntimeBuilder::<FusionDriver>::new()
            .enable_timer()
            .build()
            .expect("monoio runtime")
            .block_on(f),
        Driver::Legacy => RuntimeBuilder::<LegacyDriver>::new()
            .enable_timer()
            .build()
            .expect("monoio runtime")
            .block_on(async {
                assert!(monoio::utils::is_legacy());
                f.await
            }),
    }
}

/// `f` or a panic after [`T`].
pub(crate) async fn within<F: Future>(f: F) -> F::Output {
    monoio::time::timeout(T, f).await.expect("took too long")
}

/// Declares each `async fn name(driver: Driver)` as two tests, `auto::name` and
/// `legacy::name`.
#[macro_export]
macro_rules! on_both_drivers {
    ($($name:ident),* $(,)?) => {
        mod auto {
            $(#[test] fn $name() { $crate::common::block_on($crate::common::Driver::Auto, super::$name($crate::common::Driver::Auto)) })*
        }
        mod legacy {
            $(#[test] fn $name() { $crate::common::block_on($crate::common::Driver::Legacy, super::$name($crate::common::Driver::Legacy)) })*
        }
    };
}
