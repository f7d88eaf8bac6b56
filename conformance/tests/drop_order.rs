//! Dropping a socket, or its runtime, in any order never panics on any backend: the socket
//! closes (its listener lets go of its port, its dialer stops), and what LINGER promised is
//! either done (the messages go out, when the socket's runtime still runs somewhere) or
//! reported (a `WARN` from omq_driver, when no runtime is left to send them).
//!
//! Each test names one order: socket dropped after its runtime; on another thread while the
//! runtime runs; runtime dropped while a task of its own still holds sockets and live
//! connections. Each runs with LINGER 0 (nothing owed, nothing reported) and LINGER > 0.
//! The WARN count is process-wide, which holds because nextest runs every test in a process of
//! its own.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use futures_util::future::{select, Either};
use omq_driver::{Message, Options, Runtime, SocketType};

/// Upper bound for anything a test waits on.
const T: Duration = Duration::from_secs(10);

/// A runtime the test owns, so it can drop it whenever the order under test says.
trait Rt: Sized {
    type R: Runtime;
    fn make() -> Self;
    fn run<F: Future>(&mut self, f: F) -> F::Output;
    /// Spawns (from inside the runtime) a task that holds `keep` until the runtime drops it.
    fn hold(keep: Box<dyn std::any::Any + Send>);
}

struct TokioRt(tokio::runtime::Runtime);
impl Rt for TokioRt {
    type R = omq_tokio::Tokio;
    fn make() -> Self {
        TokioRt(
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap(),
        )
    }
    fn run<F: Future>(&mut self, f: F) -> F::Output {
        self.0.block_on(f)
    }
    fn hold(keep: Box<dyn std::any::Any + Send>) {
        tokio::spawn(async move {
            let _keep = keep;
            std::future::pending::<()>().await
        });
    }
}

struct CompioRt(compio::runtime::Runtime);
impl Rt for CompioRt {
    type R = omq_compio::Compio;
    fn make() -> Self {
        CompioRt(compio::runtime::Runtime::new().unwrap())
    }
    fn run<F: Future>(&mut self, f: F) -> F::Output {
        self.0.block_on(f)
    }
    fn hold(keep: Box<dyn std::any::Any + Send>) {
        compio::runtime::spawn(async move {
            let _keep = keep;
            std::future::pending::<()>().await
        })
        .detach();
    }
}

/// monoio and glommio never drop the tasks still pending when they are dropped: a runtime
/// ends through the backend's `block_on`, which closes the sockets left open first
/// (`close_orphans`). Each `run` is then a whole runtime, started and ended.
struct MonoioRt;
impl Rt for MonoioRt {
    type R = omq_monoio::Monoio;
    fn make() -> Self {
        MonoioRt
    }
    fn run<F: Future>(&mut self, f: F) -> F::Output {
        omq_monoio::block_on(f).unwrap()
    }
    fn hold(keep: Box<dyn std::any::Any + Send>) {
        drop(monoio::spawn(async move {
            let _keep = keep;
            std::future::pending::<()>().await
        }));
    }
}

struct GlommioRt;
impl Rt for GlommioRt {
    type R = omq_glommio::Glommio;
    fn make() -> Self {
        GlommioRt
    }
    fn run<F: Future>(&mut self, f: F) -> F::Output {
        omq_glommio::block_on(f).unwrap()
    }
    fn hold(keep: Box<dyn std::any::Any + Send>) {
        glommio::spawn_local(async move {
            let _keep = keep;
            std::future::pending::<()>().await
        })
        .detach();
    }
}

type Socket<B> = omq_driver::Socket<<B as Rt>::R>;

/// WARN events omq_driver has logged in this process.
fn reports() -> usize {
    static COUNT: AtomicUsize = AtomicUsize::new(0);
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        tracing::subscriber::set_global_default(Counter(&COUNT)).unwrap();
    });
    COUNT.load(Ordering::SeqCst)
}

/// A subscriber that counts omq_driver's WARN events.
struct Counter(&'static AtomicUsize);
impl tracing::Subscriber for Counter {
    fn enabled(&self, m: &tracing::Metadata<'_>) -> bool {
        *m.level() <= tracing::Level::WARN && m.target().starts_with("omq_driver")
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, e: &tracing::Event<'_>) {
        if self.enabled(e.metadata()) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

async fn sleep<R: Runtime>(d: Duration) {
    R::sleep_until(R::now() + d).await;
}

async fn timeout<R: Runtime, F: Future>(d: Duration, f: F) -> Option<F::Output> {
    match select(std::pin::pin!(f), std::pin::pin!(sleep::<R>(d))).await {
        Either::Left((v, _)) => Some(v),
        Either::Right(_) => None,
    }
}

async fn within<R: Runtime, F: Future>(f: F) -> F::Output {
    timeout::<R, _>(T, f).await.expect("took too long")
}

fn ipc(tag: &str) -> String {
    format!("ipc:///tmp/omq-drop-{}-{tag}.sock", std::process::id())
}

fn linger(ms: u64) -> Options {
    Options::default().linger(Some(Duration::from_millis(ms)))
}

/// True once nothing listens on `addr` any more (it can be bound again).
fn port_free(addr: &str) -> bool {
    let addr = addr.trim_start_matches("tcp://");
    std::net::TcpListener::bind(addr).is_ok()
}

fn wait_port_free(addr: &str) {
    let until = Instant::now() + T;
    while !port_free(addr) {
        assert!(Instant::now() < until, "{addr} is still bound");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Sockets a test leaves behind: a bound PULL, a PUSH connected to it (one message through),
/// and a PUSH holding one message for a peer that never comes.
struct Left<B: Rt> {
    pull: Socket<B>,
    push: Socket<B>,
    owing: Socket<B>,
    addr: String,
}

async fn setup<B: Rt>(tag: &str, options: Options) -> Left<B> {
    let pull = Socket::<B>::new(SocketType::Pull, Options::default()).unwrap();
    let addr = pull.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
    let push = Socket::<B>::new(SocketType::Push, options.clone()).unwrap();
    push.connect(&addr).await.unwrap();
    push.send(Message::from("through")).await.unwrap();
    let m = within::<B::R, _>(pull.recv()).await.unwrap();
    assert_eq!(m.parts()[0].as_ref(), b"through");
    let owing = Socket::<B>::new(SocketType::Push, options).unwrap();
    owing.connect(ipc(&format!("{tag}-nobody"))).await.unwrap();
    owing.send(Message::from("owed")).await.unwrap();
    Left {
        pull,
        push,
        owing,
        addr,
    }
}

/// The runtime goes first; then the sockets are dropped, one of them on another thread.
fn dropped_after_runtime<B: Rt>(tag: &str, ms: u64) {
    let before = reports();
    let mut rt = B::make();
    let left = rt.run(setup::<B>(tag, linger(ms)));
    drop(rt);
    let Left {
        pull,
        push,
        owing,
        addr,
    } = left;
    drop(push);
    std::thread::spawn(move || drop(owing)).join().unwrap();
    drop(pull);
    wait_port_free(&addr);
    let reported = reports() - before;
    if ms == 0 {
        assert_eq!(reported, 0, "LINGER 0 owes nothing, so nothing is reported");
    } else {
        assert!(
            reported >= 1,
            "a message LINGER could not send must be reported"
        );
    }
}

/// The socket is dropped on another thread while its runtime still runs: it closes there, and
/// LINGER is honoured by its runtime (queued messages reach a peer that binds afterwards).
fn dropped_on_another_thread<B: Rt>(tag: &str, ms: u64) {
    let before = reports();
    let mut rt = B::make();
    rt.run(async {
        let path = ipc(tag);
        let push = Socket::<B>::new(SocketType::Push, linger(ms)).unwrap();
        // A listener of its own, to see that the socket really closes.
        let own = push.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
        push.connect(&path).await.unwrap();
        for i in 0..3u8 {
            push.send(Message::from(vec![i])).await.unwrap();
        }
        std::thread::spawn(move || drop(push)).join().unwrap();
        let pull = Socket::<B>::new(SocketType::Pull, Options::default()).unwrap();
        pull.bind(&path).await.unwrap();
        if ms == 0 {
            let got = timeout::<B::R, _>(Duration::from_millis(500), pull.recv()).await;
            assert!(got.is_none(), "LINGER 0 discards what was queued");
        } else {
            for i in 0..3u8 {
                let m = within::<B::R, _>(pull.recv()).await.unwrap();
                assert_eq!(m.parts()[0].as_ref(), &[i]);
            }
        }
        let until = Instant::now() + T;
        while !port_free(&own) {
            assert!(Instant::now() < until, "the dropped socket still listens");
            sleep::<B::R>(Duration::from_millis(10)).await;
        }
    });
    drop(rt);
    assert_eq!(reports() - before, 0, "everything LINGER promised was done");
}

/// The runtime is dropped while a task of its own holds sockets with live connections and
/// unsent messages: the sockets go down with the runtime's tasks, and the ports are free.
fn runtime_dropped_with_sockets_alive<B: Rt>(tag: &str, ms: u64) {
    let before = reports();
    let mut rt = B::make();
    let addr = rt.run(async {
        let left = setup::<B>(tag, linger(ms)).await;
        let addr = left.addr.clone();
        B::hold(Box::new((left.pull, left.push, left.owing)));
        // Let the holder start.
        sleep::<B::R>(Duration::from_millis(20)).await;
        addr
    });
    drop(rt);
    wait_port_free(&addr);
    let reported = reports() - before;
    if ms == 0 {
        assert_eq!(reported, 0, "LINGER 0 owes nothing, so nothing is reported");
    } else {
        assert!(
            reported >= 1,
            "a message LINGER could not send must be reported"
        );
    }
}

/// A REP answers its last request and is dropped, and its runtime ends right after (through
/// the backend's `block_on`, which closes what is left open as libzmq's context termination
/// does): the last reply still reaches the REQ, on another thread and runtime. 200 rounds, each
/// a runtime of its own, so a reply still being written as the runtime ends is met.
fn last_reply_survives_the_runtime_end<B: Rt + 'static>() {
    const ROUNDS: usize = 200;
    let (tx, rx) = std::sync::mpsc::channel();
    let server = std::thread::spawn(move || {
        for _ in 0..ROUNDS {
            let tx = tx.clone();
            let mut rt = B::make();
            rt.run(async move {
                let rep = Socket::<B>::new(SocketType::Rep, Options::default()).unwrap();
                let addr = rep.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
                tx.send(addr).unwrap();
                let m = within::<B::R, _>(rep.recv()).await.unwrap();
                rep.send(m).await.unwrap();
                // `rep` is dropped here, and its runtime ends right after.
            });
        }
    });
    let mut rt = B::make();
    rt.run(async {
        for i in 0..ROUNDS {
            let addr = rx.recv_timeout(T).unwrap();
            let req = Socket::<B>::new(SocketType::Req, Options::default()).unwrap();
            req.connect(&addr).await.unwrap();
            req.send(Message::from(format!("{i}"))).await.unwrap();
            let got = within::<B::R, _>(req.recv()).await.unwrap();
            assert_eq!(got, Message::from(format!("{i}")), "round {i}");
        }
    });
    server.join().unwrap();
}

/// A socket dropped with an infinite LINGER keeps trying to deliver what it owes for at most
/// `omq_driver::socket::DROP_LINGER_CAP` (5 s), then gives up: a peer that binds 1 s after the drop gets the
/// message; one that binds 1.5 s after the cap has run out gets nothing (the socket no longer
/// dials).
fn dropped_with_infinite_linger_gives_up_at_the_cap<B: Rt>(tag: &str, late: bool) {
    let mut rt = B::make();
    rt.run(async {
        let path = ipc(tag);
        let push = Socket::<B>::new(SocketType::Push, Options::default().linger(None)).unwrap();
        push.connect(&path).await.unwrap();
        push.send(Message::from("owed")).await.unwrap();
        drop(push);
        // The documented cap (5 s) plus 1.5 s, written out rather than derived from the
        // constant, so that a longer cap fails this test.
        let wait = if late {
            Duration::from_millis(6500)
        } else {
            Duration::from_secs(1)
        };
        sleep::<B::R>(wait).await;
        let pull = Socket::<B>::new(SocketType::Pull, Options::default()).unwrap();
        pull.bind(&path).await.unwrap();
        if late {
            let got = timeout::<B::R, _>(Duration::from_secs(1), pull.recv()).await;
            assert!(
                got.is_none(),
                "the dropped socket still dialled after the cap: {got:?}"
            );
        } else {
            let m = within::<B::R, _>(pull.recv()).await.unwrap();
            assert_eq!(m.parts()[0].as_ref(), b"owed");
        }
    });
}

macro_rules! drop_order {
    ($($backend:ident: $rt:ty),* $(,)?) => {$(
        mod $backend {
            use super::*;
            #[test]
            fn socket_dropped_after_its_runtime_linger_0() {
                dropped_after_runtime::<$rt>(concat!(stringify!($backend), "-after0"), 0);
            }
            #[test]
            fn socket_dropped_after_its_runtime_linger_1s() {
                dropped_after_runtime::<$rt>(concat!(stringify!($backend), "-after1"), 1000);
            }
            #[test]
            fn socket_dropped_on_another_thread_linger_0() {
                dropped_on_another_thread::<$rt>(concat!(stringify!($backend), "-thread0"), 0);
            }
            #[test]
            fn socket_dropped_on_another_thread_linger_5s() {
                dropped_on_another_thread::<$rt>(concat!(stringify!($backend), "-thread5"), 5000);
            }
            #[test]
            fn dropped_with_infinite_linger_delivers_within_the_cap() {
                dropped_with_infinite_linger_gives_up_at_the_cap::<$rt>(
                    concat!(stringify!($backend), "-cap-early"),
                    false,
                );
            }
            #[test]
            fn dropped_with_infinite_linger_gives_up_after_the_cap() {
                dropped_with_infinite_linger_gives_up_at_the_cap::<$rt>(
                    concat!(stringify!($backend), "-cap-late"),
                    true,
                );
            }
            #[test]
            fn runtime_dropped_with_sockets_alive_linger_0() {
                runtime_dropped_with_sockets_alive::<$rt>(concat!(stringify!($backend), "-rt0"), 0);
            }
            #[test]
            fn runtime_dropped_with_sockets_alive_linger_1s() {
                runtime_dropped_with_sockets_alive::<$rt>(concat!(stringify!($backend), "-rt1"), 1000);
            }
        }
    )*};
}

drop_order!(
    on_tokio: TokioRt,
    on_compio: CompioRt,
    on_monoio: MonoioRt,
    on_glommio: GlommioRt,
);

/// The backends whose `block_on` ends their runtime (tokio's and compio's runtimes end when
/// the application drops them, and drop what is still pending: close sockets with
/// `close().await` there first).
#[test]
fn last_reply_survives_the_runtime_end_on_monoio() {
    last_reply_survives_the_runtime_end::<MonoioRt>();
}

#[test]
fn last_reply_survives_the_runtime_end_on_glommio() {
    last_reply_survives_the_runtime_end::<GlommioRt>();
}

/// Several sockets still owe messages to peers that never come when their runtime ends: each
/// waits out its own LINGER, all at the same time, so the end takes one LINGER, not one per
/// socket (4 x 1.5 s one after the other would be 6 s).
fn runtime_end_lingers_once_for_all_sockets<B: Rt>(tag: &str) {
    const SOCKETS: usize = 4;
    const LINGER_MS: u64 = 1500;
    let before = reports();
    let mut rt = B::make();
    let body_done = rt.run(async {
        let mut held = Vec::new();
        for i in 0..SOCKETS {
            let owing = Socket::<B>::new(SocketType::Push, linger(LINGER_MS)).unwrap();
            owing
                .connect(ipc(&format!("{tag}-nobody-{i}")))
                .await
                .unwrap();
            owing.send(Message::from("owed")).await.unwrap();
            held.push(owing);
        }
        B::hold(Box::new(held));
        // Let the holder start.
        sleep::<B::R>(Duration::from_millis(20)).await;
        Instant::now()
    });
    let ending = body_done.elapsed();
    drop(rt);
    assert!(
        ending >= Duration::from_millis(LINGER_MS - 100),
        "the sockets were closed without their LINGER ({ending:?})"
    );
    assert!(
        ending < Duration::from_millis(LINGER_MS * 2 + 500),
        "the runtime's end lingered socket by socket ({ending:?} for {SOCKETS} sockets of \
         {LINGER_MS} ms each)"
    );
    assert!(
        reports() - before >= SOCKETS,
        "every socket whose messages were discarded is reported"
    );
}

#[test]
fn runtime_end_lingers_once_for_all_sockets_on_monoio() {
    runtime_end_lingers_once_for_all_sockets::<MonoioRt>("monoio-once");
}

#[test]
fn runtime_end_lingers_once_for_all_sockets_on_glommio() {
    runtime_end_lingers_once_for_all_sockets::<GlommioRt>("glommio-once");
}

/// Only names the runtime for [`Left`] in the raw tests.
struct RawRt<R>(std::marker::PhantomData<R>);
impl<R: Runtime> Rt for RawRt<R> {
    type R = R;
    fn make() -> Self {
        unreachable!()
    }
    fn run<F: Future>(&mut self, _: F) -> F::Output {
        unreachable!()
    }
    fn hold(_: Box<dyn std::any::Any + Send>) {
        unreachable!()
    }
}

fn drop_all<B: Rt>(left: Left<B>) {
    let Left {
        pull, push, owing, ..
    } = left;
    drop(push);
    std::thread::spawn(move || drop(owing)).join().unwrap();
    drop(pull);
}

/// A monoio runtime or glommio executor built by hand and dropped without `close_orphans`
/// leaks the tasks still pending (the runtime's doing), but dropping the sockets afterwards,
/// here or on another thread, still never panics.
#[test]
fn monoio_runtime_built_by_hand_dropped_before_its_sockets() {
    let mut rt = monoio::RuntimeBuilder::<monoio::FusionDriver>::new()
        .enable_timer()
        .build()
        .unwrap();
    let left = rt.block_on(setup::<RawRt<omq_monoio::Monoio>>(
        "raw-monoio",
        linger(1000),
    ));
    drop(rt);
    drop_all(left);
}

#[test]
fn glommio_executor_built_by_hand_dropped_before_its_sockets() {
    let ex = omq_glommio::executor().unwrap();
    let left = ex.run(setup::<RawRt<omq_glommio::Glommio>>(
        "raw-glommio",
        linger(1000),
    ));
    drop(ex);
    drop_all(left);
}
