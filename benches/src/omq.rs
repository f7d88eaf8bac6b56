//! omq on every backend, one body generic over [`omq_driver::Runtime`]: each backend only says
//! how its two sides run ([`Backend::pair`]). omq-tokio, omq-compio, omq-monoio and
//! omq-glommio: each side on its own OS thread with its own single-threaded runtime (a socket's
//! connection tasks run on its side's thread). omq-tokio-mt: one multi-threaded tokio runtime
//! (one worker per core) runs every connection task, and each side's application code blocks
//! on it from its own OS thread. inproc: the same two threads in one process.

use std::future::Future;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::{join, join_all};
use omq_driver::{proxy_steerable, Message, Options, Part, Runtime, Socket, SocketType};
use tokio::sync::{oneshot, watch};

use crate::common::{self, Fanout, PubTimes, Samples, SubResult, ThrTimes};
use crate::spec::{Cell, Impl, Pattern};

/// How a backend runs the sides of a cell (two, or three for the proxy cells).
pub trait Backend {
    /// The omq-driver runtime.
    type R: Runtime;

    /// Runs a future to completion on a fresh runtime on the current thread.
    fn block_on<F: Future>(f: F) -> F::Output;

    /// A runtime every side blocks on instead of a fresh one of its own (omq-tokio-mt's one
    /// multi-threaded runtime); none by default.
    fn shared() -> Option<tokio::runtime::Runtime> {
        None
    }

    /// Runs the two sides, each built and run on an OS thread of its own.
    fn pair<A, FA, B, FB>(a: A, b: B) -> (FA::Output, FB::Output)
    where
        A: FnOnce() -> FA + Send + 'static,
        FA: Future + 'static,
        FA::Output: Send + 'static,
        B: FnOnce() -> FB + Send + 'static,
        FB: Future + 'static,
        FB::Output: Send + 'static,
    {
        let rt = Self::shared();
        let h = rt.as_ref().map(|r| r.handle().clone());
        let ta = side::<Self, _, _>("side-a", h.clone(), a);
        let tb = side::<Self, _, _>("side-b", h, b);
        (ta.join().expect("side a"), tb.join().expect("side b"))
    }

    /// Runs three parties (producer, proxy, consumer), each built and run on an OS thread of
    /// its own, as [`Backend::pair`] runs two.
    fn trio<A, FA, B, FB, C, FC>(a: A, b: B, c: C) -> (FA::Output, FB::Output, FC::Output)
    where
        A: FnOnce() -> FA + Send + 'static,
        FA: Future + 'static,
        FA::Output: Send + 'static,
        B: FnOnce() -> FB + Send + 'static,
        FB: Future + 'static,
        FB::Output: Send + 'static,
        C: FnOnce() -> FC + Send + 'static,
        FC: Future + 'static,
        FC::Output: Send + 'static,
    {
        let rt = Self::shared();
        let h = rt.as_ref().map(|r| r.handle().clone());
        let ta = side::<Self, _, _>("side-a", h.clone(), a);
        let tb = side::<Self, _, _>("side-b", h.clone(), b);
        let tc = side::<Self, _, _>("side-c", h, c);
        (
            ta.join().expect("side a"),
            tb.join().expect("side b"),
            tc.join().expect("side c"),
        )
    }
}

/// One side on an OS thread of its own: on a fresh runtime of the backend, or blocking on the
/// shared runtime from that thread (its connection tasks then run on the shared workers).
fn side<B, F, Fut>(
    name: &str,
    shared: Option<tokio::runtime::Handle>,
    f: F,
) -> std::thread::JoinHandle<Fut::Output>
where
    B: Backend + ?Sized,
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future + 'static,
    Fut::Output: Send + 'static,
{
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || match shared {
            Some(h) => h.block_on(f()),
            None => B::block_on(f()),
        })
        .expect("thread")
}

/// omq-tokio: a current-thread runtime per side.
#[derive(Debug)]
pub struct TokioSt;

impl Backend for TokioSt {
    type R = omq_tokio::Tokio;
    fn block_on<F: Future>(f: F) -> F::Output {
        common::current_thread().block_on(f)
    }
}

/// omq-tokio-mt: one multi-threaded runtime for every side.
#[derive(Debug)]
pub struct TokioMt;

impl Backend for TokioMt {
    type R = omq_tokio::Tokio;
    fn block_on<F: Future>(f: F) -> F::Output {
        common::current_thread().block_on(f)
    }

    fn shared() -> Option<tokio::runtime::Runtime> {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(common::mt_workers()).enable_all();
        // OMQ_BENCH_NO_LIFO (set to anything, in a build with RUSTFLAGS="--cfg tokio_unstable"):
        // no LIFO slot, to tell tokio's placement of woken tasks apart from omq's own work
        // (docs/PERFORMANCE.md, "The tasks layout: one worker or two").
        #[cfg(tokio_unstable)]
        if std::env::var_os("OMQ_BENCH_NO_LIFO").is_some() {
            b.disable_lifo_slot();
        }
        Some(b.build().expect("tokio runtime"))
    }
}

/// OMQ_BENCH_EPOLL (set to anything): omq-compio and omq-monoio run on their epoll drivers
/// instead of io_uring, to tell the kernel's wake-up path apart from omq's (docs/PERFORMANCE.md,
/// "REQ/REP on compio and monoio").
fn epoll_wanted() -> bool {
    std::env::var_os("OMQ_BENCH_EPOLL").is_some()
}

/// omq-compio with the driver compio picks (io_uring where the kernel allows it).
#[derive(Debug)]
pub struct CompioSt;

impl Backend for CompioSt {
    type R = omq_compio::Compio;
    fn block_on<F: Future>(f: F) -> F::Output {
        let mut proactor = compio::driver::ProactorBuilder::new();
        if epoll_wanted() {
            proactor.driver_type(compio::driver::DriverType::Poll);
        }
        compio::runtime::RuntimeBuilder::new()
            .with_proactor(proactor)
            .build()
            .expect("compio runtime")
            .block_on(f)
    }
}

/// omq-monoio with monoio's FusionDriver (io_uring where the kernel allows it), timers on.
#[derive(Debug)]
pub struct MonoioSt;

impl Backend for MonoioSt {
    type R = omq_monoio::Monoio;
    fn block_on<F: Future>(f: F) -> F::Output {
        if epoll_wanted() {
            return monoio::RuntimeBuilder::<monoio::LegacyDriver>::new()
                .enable_timer()
                .build()
                .expect("monoio runtime")
                .block_on(f);
        }
        monoio::RuntimeBuilder::<monoio::FusionDriver>::new()
            .enable_timer()
            .build()
            .expect("monoio runtime")
            .block_on(f)
    }
}

/// omq-glommio: a glommio executor per side.
#[derive(Debug)]
pub struct GlommioSt;

impl Backend for GlommioSt {
    type R = omq_glommio::Glommio;
    fn block_on<F: Future>(f: F) -> F::Output {
        // OMQ_BENCH_GLOMMIO_SPIN_US: glommio's spin-before-park, for latency experiments.
        match std::env::var("OMQ_BENCH_GLOMMIO_SPIN_US")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
        {
            Some(us) => glommio::LocalExecutorBuilder::new(glommio::Placement::Unbound)
                .io_memory(omq_glommio::IO_MEMORY)
                .spin_before_park(Duration::from_micros(us))
                .make()
                .expect("glommio executor")
                .run(omq_glommio::run_then_close(f)),
            None => omq_glommio::block_on(f).expect("glommio executor"),
        }
    }
}

/// Runs one cell of an omq implementation.
pub fn run(cell: &Cell) -> Result<Samples, String> {
    match cell.imp {
        Impl::OmqTokio => run_on::<TokioSt>(cell),
        Impl::OmqTokioMt => run_on::<TokioMt>(cell),
        Impl::OmqTokioTasks => match cell.pattern {
            Pattern::PushPull | Pattern::Curve => Ok(push_pull_tasks(cell)),
            p => Err(format!("omq-tokio-tasks has no {p:?} cell")),
        },
        Impl::OmqCompio => run_on::<CompioSt>(cell),
        Impl::OmqMonoio => run_on::<MonoioSt>(cell),
        Impl::OmqGlommio => run_on::<GlommioSt>(cell),
        other => Err(format!("{other} is not omq")),
    }
}

fn run_on<B: Backend>(cell: &Cell) -> Result<Samples, String> {
    match cell.pattern {
        Pattern::PushPull | Pattern::Curve => Ok(push_pull::<B>(cell)),
        Pattern::ReqRep => Ok(req_rep::<B>(cell)),
        Pattern::PubSub => Ok(pub_sub::<B>(cell)),
        Pattern::Proxy => Ok(proxy_thr::<B>(cell)),
        Pattern::ProxyLat => Ok(proxy_lat::<B>(cell)),
        Pattern::Scale | Pattern::ScalePub | Pattern::ScaleCurve | Pattern::CurveClients => {
            crate::scale::run(cell)
        }
    }
}

fn socket<R: Runtime>(t: SocketType, options: Options) -> Socket<R> {
    Socket::new(t, options).expect("socket")
}

/// A message holding a fresh copy of `payload` (the per-send copy every implementation makes).
fn copy(payload: &[u8]) -> Message {
    Message::from(Part::copy_from_slice(payload))
}

/// The receiving side of a throughput cell: `warm` messages, then `ready`, then `n` timed
/// ones of `size` bytes; `done` once all have arrived. Returns the first and last receive.
async fn receive_timed<R: Runtime>(
    pull: &Socket<R>,
    (warm, n, size): (usize, usize, usize),
    ready: oneshot::Sender<()>,
    done: oneshot::Sender<()>,
) -> (Instant, Instant) {
    for _ in 0..warm {
        pull.recv().await.expect("recv");
    }
    ready.send(()).expect("ready");
    let m = pull.recv().await.expect("recv");
    let first = Instant::now();
    assert_eq!(m.byte_len(), size);
    for _ in 1..n {
        black_box(pull.recv().await.expect("recv"));
    }
    let last = Instant::now();
    let _ = done.send(());
    (first, last)
}

/// The sending side of a throughput cell: `warm` messages, then, once the receiver is
/// `ready`, `n` timed ones; then waits until all arrived (keeping this side's runtime, and so
/// its connection task, alive). Returns the first send.
async fn send_timed<R: Runtime>(
    push: &Socket<R>,
    (warm, n, size): (usize, usize, usize),
    ready: oneshot::Receiver<()>,
    done: oneshot::Receiver<()>,
) -> Instant {
    let payload = common::payload(size);
    for _ in 0..warm {
        push.send(copy(&payload)).await.expect("send");
    }
    ready.await.expect("ready");
    let t0 = Instant::now();
    if std::env::var_os("OMQ_BENCH_SINK").is_some() {
        // The socket's Sink fed by a stream (docs/PERFORMANCE.md, "A sink that batches").
        use futures_util::{SinkExt, StreamExt};
        let mut items = futures_util::stream::iter(0..n).map(|_| Ok(copy(&payload)));
        push.sink().send_all(&mut items).await.expect("send_all");
    } else {
        for _ in 0..n {
            push.send(copy(&payload)).await.expect("send");
        }
    }
    done.await.expect("done");
    t0
}

fn sleep<R: Runtime>(d: Duration) -> impl Future<Output = ()> {
    R::sleep_until(R::now() + d)
}

/// Options of the receiving (server) and sending (client) side: default, or CURVE with fresh
/// keys for a CURVE cell.
fn options(cell: &Cell) -> (Options, Options) {
    if cell.pattern != Pattern::Curve {
        return (Options::default(), Options::default());
    }
    let server = omq_driver::generate_keypair(&mut omq_driver::OsRng);
    let client = omq_driver::generate_keypair(&mut omq_driver::OsRng);
    let server_public = server.public().to_z85();
    (
        Options::default()
            .curve_server(true)
            .curve_secretkey(server.secret().to_z85().as_bytes()),
        Options::default()
            .curve_serverkey(server_public.as_bytes())
            .curve_publickey(client.public().to_z85().as_bytes())
            .curve_secretkey(client.secret().to_z85().as_bytes()),
    )
}

fn push_pull<B: Backend>(cell: &Cell) -> Samples {
    let (n, warm, size) = (cell.count, cell.warmup, cell.size);
    let bind = common::bind_endpoint(cell);
    let (server_opts, client_opts) = options(cell);
    let (ep_tx, ep_rx) = oneshot::channel::<String>();
    let (ready_tx, ready_rx) = oneshot::channel::<()>();
    let (done_tx, done_rx) = oneshot::channel::<()>();
    let receiver = move || async move {
        let pull = socket::<B::R>(SocketType::Pull, server_opts);
        let ep = pull.bind(&bind).await.expect("bind");
        ep_tx.send(ep.to_string()).expect("endpoint");
        receive_timed(&pull, (warm, n, size), ready_tx, done_tx).await
    };
    let sender = move || async move {
        let push = socket::<B::R>(SocketType::Push, client_opts);
        push.connect(&ep_rx.await.expect("endpoint"))
            .await
            .expect("connect");
        send_timed(&push, (warm, n, size), ready_rx, done_rx).await
    };
    let ((first_recv, last_recv), first_send) = B::pair(receiver, sender);
    ThrTimes {
        first_send,
        first_recv,
        last_recv,
    }
    .metrics(n)
}

/// PUSH/PULL with both sides as tasks of one multi-threaded tokio runtime (omq-tokio-tasks):
/// the usual shape of a tokio application, where the sockets' user-facing futures and their
/// connection tasks share the same workers. The same body as [`push_pull`], written for
/// omq-tokio alone: `tokio::spawn` needs `Send` futures, which the generic body cannot promise
/// for every backend.
fn push_pull_tasks(cell: &Cell) -> Samples {
    let (n, warm, size) = (cell.count, cell.warmup, cell.size);
    let bind = common::bind_endpoint(cell);
    let (server_opts, client_opts) = options(cell);
    let (ep_tx, ep_rx) = oneshot::channel::<String>();
    let (ready_tx, ready_rx) = oneshot::channel::<()>();
    let (done_tx, done_rx) = oneshot::channel::<()>();
    let rt = TokioMt::shared().expect("tokio runtime");
    let receiver = rt.spawn(async move {
        let pull = omq_tokio::Socket::new(SocketType::Pull, server_opts).expect("socket");
        let ep = pull.bind(&bind).await.expect("bind");
        ep_tx.send(ep.to_string()).expect("endpoint");
        receive_timed(&pull, (warm, n, size), ready_tx, done_tx).await
    });
    let sender = rt.spawn(async move {
        let push = omq_tokio::Socket::new(SocketType::Push, client_opts).expect("socket");
        push.connect(&ep_rx.await.expect("endpoint"))
            .await
            .expect("connect");
        send_timed(&push, (warm, n, size), ready_rx, done_rx).await
    });
    let ((first_recv, last_recv), first_send) = rt.block_on(async {
        (
            receiver.await.expect("receiver"),
            sender.await.expect("sender"),
        )
    });
    ThrTimes {
        first_send,
        first_recv,
        last_recv,
    }
    .metrics(n)
}

fn req_rep<B: Backend>(cell: &Cell) -> Samples {
    let (n, warm, size) = (cell.count, cell.warmup, cell.size);
    let total = n + warm;
    let bind = common::bind_endpoint(cell);
    let (ep_tx, ep_rx) = oneshot::channel::<String>();
    let (done_tx, done_rx) = oneshot::channel::<()>();
    let server = move || async move {
        let rep = socket::<B::R>(SocketType::Rep, Options::default());
        let ep = rep.bind(&bind).await.expect("bind");
        ep_tx.send(ep.to_string()).expect("endpoint");
        for _ in 0..total {
            let m = rep.recv().await.expect("recv");
            rep.send(m).await.expect("send");
        }
        done_rx.await.expect("done");
    };
    let client = move || async move {
        let req = socket::<B::R>(SocketType::Req, Options::default());
        req.connect(&ep_rx.await.expect("endpoint"))
            .await
            .expect("connect");
        let payload = common::payload(size);
        let mut rtts = Vec::with_capacity(n);
        for i in 0..total {
            let t = Instant::now();
            req.send(copy(&payload)).await.expect("send");
            let r = req.recv().await.expect("recv");
            let dt = t.elapsed();
            assert_eq!(r.byte_len(), size);
            if i >= warm {
                rtts.push(dt);
            }
        }
        let _ = done_tx.send(());
        rtts
    };
    let ((), mut rtts) = B::pair(server, client);
    common::latency_metrics(&mut rtts)
}

fn pub_sub<B: Backend>(cell: &Cell) -> Samples {
    let (n, size, subs) = (cell.count, cell.size, cell.subs);
    let bind = common::bind_endpoint(cell);
    let (ep_tx, ep_rx) = watch::channel(None::<String>);
    let fanout = Fanout::new(n, subs);
    let f = fanout.clone();
    let publisher = move || async move {
        let publ = socket::<B::R>(SocketType::Pub, Options::default());
        let ep = publ.bind(&bind).await.expect("bind");
        ep_tx.send(Some(ep.to_string())).expect("endpoint");
        let hello = common::tagged(size, common::TAG_HELLO);
        while f.ready() < subs {
            publ.send(copy(&hello)).await.expect("send");
            sleep::<B::R>(common::PROBE_EVERY).await;
        }
        // Paced phase: no subscriber falls more than WINDOW messages behind.
        let mut data = common::tagged(size, common::TAG_DATA);
        let first_send = Instant::now();
        for i in 0..n {
            if i >= common::WINDOW && i % (common::WINDOW / 4) == 0 {
                f.wait_with(i + common::WINDOW / 4 - common::WINDOW, sleep::<B::R>)
                    .await;
            }
            common::set_seq(&mut data, i);
            publ.send(copy(&data)).await.expect("send");
        }
        f.wait_with(n, sleep::<B::R>).await;
        // Flood phase: as fast as the publisher can go.
        let flood = common::tagged(size, common::TAG_FLOOD);
        let flood_first = Instant::now();
        for _ in 0..n {
            publ.send(copy(&flood)).await.expect("send");
        }
        let flood_last = Instant::now();
        let end = common::tagged(size, common::TAG_END);
        while f.done() < subs {
            publ.send(copy(&end)).await.expect("send");
            sleep::<B::R>(common::PROBE_EVERY).await;
        }
        PubTimes {
            first_send,
            flood_first,
            flood_last,
        }
    };
    let subscribers = move || async move {
        let one = |mut ep_rx: watch::Receiver<Option<String>>, fanout: Arc<Fanout>, i: usize| async move {
            let ep = ep_rx
                .wait_for(Option::is_some)
                .await
                .expect("endpoint")
                .clone()
                .expect("endpoint");
            let sub = socket::<B::R>(SocketType::Sub, Options::default());
            sub.subscribe(b"").expect("subscribe");
            sub.connect(&ep).await.expect("connect");
            let mut tally = fanout.tally(i);
            loop {
                let m = sub.recv().await.expect("recv");
                if tally.on_message(m.get(0).map_or(&[][..], |p| &p[..])) {
                    break;
                }
            }
            tally.result
        };
        let all = (0..subs).map(|i| one(ep_rx.clone(), fanout.clone(), i));
        join_all(all).await
    };
    let (times, results): (PubTimes, Vec<SubResult>) = B::pair(publisher, subscribers);
    common::pubsub_metrics(n, &times, &results)
}

/// The proxy's control pair over inproc: the PAIR the proxy is steered through, and the PAIR
/// that sends it TERMINATE (both in the proxy's thread: the proxy runs in the caller's task).
async fn control<R: Runtime>() -> (Socket<R>, Socket<R>) {
    const EP: &str = "inproc://omq-bench-proxy-control";
    let control = socket::<R>(SocketType::Pair, Options::default());
    control.bind(EP).await.expect("bind control");
    let steer = socket::<R>(SocketType::Pair, Options::default());
    steer.connect(EP).await.expect("connect control");
    (control, steer)
}

/// Runs `proxy_steerable` between `front` and `back` until `done` fires, then stops it with
/// TERMINATE over the control pair (as the libzmq cell stops `zmq_proxy_steerable`).
async fn steered<R: Runtime>(
    front: &Socket<R>,
    back: &Socket<R>,
    done: oneshot::Receiver<()>,
) -> omq_driver::ProxyStatistics {
    let (control, steer) = control::<R>().await;
    let stop = async move {
        done.await.expect("done");
        steer
            .send(Message::from("TERMINATE"))
            .await
            .expect("terminate");
    };
    let (stats, ()) = join(proxy_steerable(front, back, None, &control), stop).await;
    stats.expect("proxy")
}

/// PUSH -> [PULL | proxy | PUSH] -> PULL over tcp: the proxy binds both sides (a streamer),
/// the producer and the consumer connect. Measured at the consumer as the PUSH/PULL cell.
fn proxy_thr<B: Backend>(cell: &Cell) -> Samples {
    let (n, warm, size) = (cell.count, cell.warmup, cell.size);
    let bind = common::bind_endpoint(cell);
    let (front_tx, front_rx) = oneshot::channel::<String>();
    let (back_tx, back_rx) = oneshot::channel::<String>();
    let (ready_tx, ready_rx) = oneshot::channel::<()>();
    let (done_tx, done_rx) = oneshot::channel::<()>();
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let proxy = move || async move {
        let front = socket::<B::R>(SocketType::Pull, Options::default());
        let back = socket::<B::R>(SocketType::Push, Options::default());
        let fep = front.bind(&bind).await.expect("bind");
        let bep = back.bind(&bind).await.expect("bind");
        front_tx.send(fep.to_string()).expect("endpoint");
        back_tx.send(bep.to_string()).expect("endpoint");
        steered(&front, &back, stop_rx).await
    };
    let consumer = move || async move {
        let pull = socket::<B::R>(SocketType::Pull, Options::default());
        pull.connect(&back_rx.await.expect("endpoint"))
            .await
            .expect("connect");
        let times = receive_timed(&pull, (warm, n, size), ready_tx, done_tx).await;
        let _ = stop_tx.send(());
        times
    };
    let producer = move || async move {
        let push = socket::<B::R>(SocketType::Push, Options::default());
        push.connect(&front_rx.await.expect("endpoint"))
            .await
            .expect("connect");
        send_timed(&push, (warm, n, size), ready_rx, done_rx).await
    };
    let (first_send, stats, (first_recv, last_recv)) = B::trio(producer, proxy, consumer);
    // Every message went through the proxy, once.
    assert_eq!(stats.frontend_recv_frames, (n + warm) as u64);
    ThrTimes {
        first_send,
        first_recv,
        last_recv,
    }
    .metrics(n)
}

/// REQ -> [ROUTER | proxy | DEALER] -> REP over tcp: the proxy binds both sides (a broker),
/// the REP worker and the REQ client connect. Round trips timed at REQ as the REQ/REP cell.
fn proxy_lat<B: Backend>(cell: &Cell) -> Samples {
    let (n, warm, size) = (cell.count, cell.warmup, cell.size);
    let total = n + warm;
    let bind = common::bind_endpoint(cell);
    let (front_tx, front_rx) = oneshot::channel::<String>();
    let (back_tx, back_rx) = oneshot::channel::<String>();
    let (done_tx, done_rx) = oneshot::channel::<()>();
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let proxy = move || async move {
        let front = socket::<B::R>(SocketType::Router, Options::default());
        let back = socket::<B::R>(SocketType::Dealer, Options::default());
        let fep = front.bind(&bind).await.expect("bind");
        let bep = back.bind(&bind).await.expect("bind");
        front_tx.send(fep.to_string()).expect("endpoint");
        back_tx.send(bep.to_string()).expect("endpoint");
        steered(&front, &back, stop_rx).await
    };
    let server = move || async move {
        let rep = socket::<B::R>(SocketType::Rep, Options::default());
        rep.connect(&back_rx.await.expect("endpoint"))
            .await
            .expect("connect");
        for _ in 0..total {
            let m = rep.recv().await.expect("recv");
            rep.send(m).await.expect("send");
        }
        done_rx.await.expect("done");
    };
    let client = move || async move {
        let req = socket::<B::R>(SocketType::Req, Options::default());
        req.connect(&front_rx.await.expect("endpoint"))
            .await
            .expect("connect");
        let payload = common::payload(size);
        let mut rtts = Vec::with_capacity(n);
        for i in 0..total {
            let t = Instant::now();
            req.send(copy(&payload)).await.expect("send");
            let r = req.recv().await.expect("recv");
            let dt = t.elapsed();
            assert_eq!(r.byte_len(), size);
            if i >= warm {
                rtts.push(dt);
            }
        }
        let _ = done_tx.send(());
        let _ = stop_tx.send(());
        rtts
    };
    let (mut rtts, _stats, ()) = B::trio(client, proxy, server);
    common::latency_metrics(&mut rtts)
}
