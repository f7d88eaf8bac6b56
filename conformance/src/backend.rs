//! The backends the suite runs on. A scenario is written once, generic over
//! [`omq_driver::Runtime`]; each backend says how to run a future to completion on it.

use std::future::Future;

use omq_driver::Runtime;

/// A runtime the conformance scenarios can run on.
pub trait Backend {
    /// The omq-driver runtime.
    type R: Runtime;
    /// A name for test output.
    const NAME: &'static str;
    /// Runs a scenario to completion.
    fn block_on<F: Future>(f: F) -> F::Output;
    /// Runs a scenario with every task on the calling thread, for one about how tasks share a
    /// thread (the same as [`Backend::block_on`] but for a multi-threaded runtime).
    fn block_on_one_thread<F: Future>(f: F) -> F::Output {
        Self::block_on(f)
    }
    /// Starts `f` as a task of its own on the runtime [`Backend::block_on`] is running, for a
    /// scenario that needs another task beside the socket's (the multi-threaded tokio backend
    /// may run it on its other worker).
    fn spawn<F: Future<Output = ()> + Send + 'static>(f: F);
}

/// omq-tokio, on a two-worker multi-threaded runtime (the default choice of most users).
#[derive(Debug)]
pub struct TokioBackend;

impl Backend for TokioBackend {
    type R = omq_tokio::Tokio;
    const NAME: &'static str = "tokio";
    fn block_on<F: Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("tokio runtime")
            .block_on(f)
    }
    fn block_on_one_thread<F: Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("tokio runtime")
            .block_on(f)
    }
    fn spawn<F: Future<Output = ()> + Send + 'static>(f: F) {
        tokio::spawn(f);
    }
}

/// omq-compio with the driver compio picks (io_uring where the kernel allows it).
#[derive(Debug)]
pub struct CompioBackend;

impl Backend for CompioBackend {
    type R = omq_compio::Compio;
    const NAME: &'static str = "compio";
    fn block_on<F: Future>(f: F) -> F::Output {
        compio::runtime::RuntimeBuilder::new()
            .build()
            .expect("compio runtime")
            .block_on(f)
    }
    fn spawn<F: Future<Output = ()> + Send + 'static>(f: F) {
        compio::runtime::spawn(f).detach();
    }
}

/// omq-compio forced onto its readiness-based (epoll) fallback driver, as where io_uring is
/// unavailable.
#[derive(Debug)]
pub struct CompioPollBackend;

impl Backend for CompioPollBackend {
    type R = omq_compio::Compio;
    const NAME: &'static str = "compio-poll";
    fn block_on<F: Future>(f: F) -> F::Output {
        let mut proactor = compio::driver::ProactorBuilder::new();
        proactor.driver_type(compio::driver::DriverType::Poll);
        compio::runtime::RuntimeBuilder::new()
            .with_proactor(proactor)
            .build()
            .expect("compio runtime")
            .block_on(f)
    }
    fn spawn<F: Future<Output = ()> + Send + 'static>(f: F) {
        compio::runtime::spawn(f).detach();
    }
}

/// omq-monoio with the driver monoio picks (`FusionDriver`: io_uring where the kernel allows
/// it), with timers enabled as omq needs.
#[derive(Debug)]
pub struct MonoioBackend;

impl Backend for MonoioBackend {
    type R = omq_monoio::Monoio;
    const NAME: &'static str = "monoio";
    fn block_on<F: Future>(f: F) -> F::Output {
        // A runtime built by hand ends as omq_monoio::block_on does (close_orphans): monoio
        // never drops pending tasks, so a listener would keep its ipc file.
        monoio::RuntimeBuilder::<monoio::FusionDriver>::new()
            .enable_timer()
            .build()
            .expect("monoio runtime")
            .block_on(omq_monoio::run_then_close(f))
    }
    fn spawn<F: Future<Output = ()> + Send + 'static>(f: F) {
        drop(monoio::spawn(f));
    }
}

/// omq-monoio forced onto monoio's legacy (epoll) driver, as where io_uring is unavailable.
#[derive(Debug)]
pub struct MonoioLegacyBackend;

impl Backend for MonoioLegacyBackend {
    type R = omq_monoio::Monoio;
    const NAME: &'static str = "monoio-legacy";
    fn block_on<F: Future>(f: F) -> F::Output {
        // A runtime built by hand ends as omq_monoio::block_on does (close_orphans): monoio
        // never drops pending tasks, so a listener would keep its ipc file.
        monoio::RuntimeBuilder::<monoio::LegacyDriver>::new()
            .enable_timer()
            .build()
            .expect("monoio runtime")
            .block_on(omq_monoio::run_then_close(f))
    }
    fn spawn<F: Future<Output = ()> + Send + 'static>(f: F) {
        drop(monoio::spawn(f));
    }
}

/// omq-glommio on a glommio executor on the test's thread (io_uring, thread-per-core).
#[derive(Debug)]
pub struct GlommioBackend;

impl Backend for GlommioBackend {
    type R = omq_glommio::Glommio;
    const NAME: &'static str = "glommio";
    fn block_on<F: Future>(f: F) -> F::Output {
        omq_glommio::block_on(f).expect("glommio executor")
    }
    fn spawn<F: Future<Output = ()> + Send + 'static>(f: F) {
        glommio::spawn_local(f).detach();
    }
}
