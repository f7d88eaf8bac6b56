//! The connection-scale cells: N peers on one socket, the socket measured in the cell's own
//! process, the peers in a second process (`omq-bench peers ...`, omq on a two-worker tokio
//! runtime, the same peers for every implementation measured), so the measured process holds
//! only the one socket and its N connections.
//!
//! - `scale`: N DEALERs connect to one ROUTER and each sends one message; then the peers send
//!   `count` messages round robin over all N connections.
//! - `scalepub`: N SUBs (subscribed to everything) connect to one PUB, which publishes probes
//!   until every SUB has seen one; then it publishes `count` messages of `size` bytes to all.
//! - `scalecurve`: `scale` with CURVE (the ROUTER is the server, every DEALER a client with
//!   the same keypair), `size`-byte messages: `conn_per_s` is CURVE handshakes served per second,
//!   and N = 1 beside N = 4 shows whether the crypto of several connections runs in parallel.
//! - `curveclients`: `scalecurve`'s ROUTER, with N = 1 and 4 clients that cost the shared CPU
//!   little: each (omq-core's sans-io session over a blocking std socket, on a thread of its
//!   own) seals all its messages while the measured side waits and then only writes them, so
//!   the steady rate shows what the ROUTER's box opening does with more connections, not what
//!   the peers' sealing leaves it of two vCPUs.
//!
//! Metrics: `conn_s`, seconds from starting the peers until all N connections have
//! handshaken and carried a first message (`conn_per_s` = N over that); `kb_per_conn`, the
//! measured process's resident memory with the N connections up and idle, less the same
//! before the peers started, over N (`peak_kb_per_conn` from the peak, VmHWM); then
//! `steady_msg_s` (ROUTER: messages received per second) or `fanout_msg_s` (PUB: deliveries
//! per second, all subscribers together, as the peers count them).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use omq_driver::{Message, Options, Part, Runtime, Socket, SocketType};

use crate::common::{self, Samples};
use crate::omq::{Backend, CompioSt, GlommioSt, MonoioSt, TokioMt, TokioSt};
use crate::spec::{Cell, Impl, Pattern};

/// CPU seconds the threads of this process have run (the first field of each thread's
/// `/proc/self/task/*/schedstat`, nanoseconds on the CPU; user and system time alike).
fn cpu_secs() -> f64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return f64::NAN;
    };
    let ns: u64 = tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    ns as f64 * 1e-9
}

/// Resident memory now and at its peak (VmRSS, VmHWM), in KiB.
pub fn rss_kb() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Raises the open-file limit to its hard limit (N connections need N descriptors).
pub fn raise_nofile() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read and write the struct passed in.
    #[allow(unsafe_code)]
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

/// The peer process, seen from the measured one: its stdin (`go`, then closed to stop it) and
/// the instants and values of the lines it prints.
struct Peers {
    child: Child,
    stdin: Option<ChildStdin>,
    ready: Arc<(AtomicBool, Mutex<Option<Instant>>)>,
    done: Arc<(AtomicBool, AtomicU64, Mutex<f64>)>,
}

impl Peers {
    fn start(mode: &str, ep: &str, cell: &Cell, server_key: Option<&str>) -> Peers {
        let exe = std::env::current_exe().expect("current_exe");
        let mut child = Command::new(exe)
            .arg("peers")
            .args(server_key.map(|k| format!("serverkey={k}")))
            .arg(format!("mode={mode}"))
            .arg(format!("ep={ep}"))
            .arg(format!("n={}", cell.subs))
            .arg(format!("size={}", cell.size))
            .arg(format!("count={}", cell.count))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn peers");
        let stdin = child.stdin.take();
        let out = child.stdout.take().expect("stdout");
        let ready = Arc::new((AtomicBool::new(false), Mutex::new(None)));
        let done = Arc::new((AtomicBool::new(false), AtomicU64::new(0), Mutex::new(0.0)));
        let (r, d) = (ready.clone(), done.clone());
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                let mut it = line.split_whitespace();
                match it.next() {
                    Some("ready") => {
                        *r.1.lock().unwrap() = Some(Instant::now());
                        r.0.store(true, Ordering::Release);
                    }
                    Some("done") => {
                        let n: u64 = it.next().and_then(|v| v.parse().ok()).unwrap_or(0);
                        let secs: f64 = it.next().and_then(|v| v.parse().ok()).unwrap_or(0.0);
                        d.1.store(n, Ordering::Release);
                        *d.2.lock().unwrap() = secs;
                        d.0.store(true, Ordering::Release);
                    }
                    _ => {}
                }
            }
        });
        Peers {
            child,
            stdin,
            ready,
            done,
        }
    }

    fn go(&mut self) {
        if let Some(s) = self.stdin.as_mut() {
            let _ = s.write_all(b"go\n");
            let _ = s.flush();
        }
    }

    fn ready_at(&self) -> Option<Instant> {
        if self.ready.0.load(Ordering::Acquire) {
            *self.ready.1.lock().unwrap()
        } else {
            None
        }
    }

    fn done(&self) -> Option<(u64, f64)> {
        self.done.0.load(Ordering::Acquire).then(|| {
            (
                self.done.1.load(Ordering::Acquire),
                *self.done.2.lock().unwrap(),
            )
        })
    }

    fn stop(mut self) {
        drop(self.stdin.take());
        let until = Instant::now() + Duration::from_secs(10);
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        // Our own child, by its handle.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the measured side saw, turned into metrics.
struct Seen {
    n: usize,
    base: (u64, u64),
    conn: Duration,
    idle: (u64, u64),
    steady: (&'static str, f64),
    /// CPU time of the measured process over the steady phase ÷ its wall time: how many cores
    /// the socket kept busy (ROUTER cells).
    cores: Option<f64>,
}

impl Seen {
    fn metrics(&self) -> Samples {
        let n = self.n as f64;
        vec![
            ("conn_s".into(), self.conn.as_secs_f64()),
            ("conn_per_s".into(), n / self.conn.as_secs_f64()),
            (
                "kb_per_conn".into(),
                self.idle.0.saturating_sub(self.base.0) as f64 / n,
            ),
            (
                "peak_kb_per_conn".into(),
                self.idle.1.saturating_sub(self.base.1) as f64 / n,
            ),
            (self.steady.0.into(), self.steady.1),
        ]
        .into_iter()
        .chain(self.cores.map(|c| ("steady_cores".into(), c)))
        .collect()
    }
}

/// How often the publisher repeats its (5-byte) probe and end marker: rarely enough not to load
/// a publisher with N connections, often enough to add little to the connect time. Each probe
/// goes to every SUB connected so far, so the interval grows with N (20 ms up to 1,000 SUBs,
/// 200 ms for 10,000): at a fixed 20 ms, 10,000 SUBs made 500,000 probe deliveries a second,
/// which kept every publisher (libzmq's I/O thread too) too busy to accept the rest.
fn probe(n: usize) -> Duration {
    Duration::from_millis(20).max(Duration::from_micros(20) * n as u32)
}

/// The measured socket's listen backlog (BACKLOG), the same for every implementation: large
/// enough (the kernel caps it at net.core.somaxconn, 4096 here) that a burst of N connects is
/// not mostly dropped and retried by the peers' kernels a second or more later, which would
/// measure TCP's SYN back-off instead of the socket. (With libzmq's default of 100, 10,000
/// connects take 10-37 s on every implementation, libzmq included.)
const BACKLOG: i32 = 4096;

/// The measured socket's options, and the CURVE server's public key (Z85) its peers need in a
/// CURVE cell.
fn server_options(cell: &Cell) -> (Options, Option<String>) {
    let o = Options::default().backlog(BACKLOG);
    match server_keys(cell) {
        Some((public, secret)) => (
            o.curve_server(true).curve_secretkey(secret.as_bytes()),
            Some(public),
        ),
        None => (o, None),
    }
}

/// A fresh CURVE server keypair (public, secret; Z85) for a CURVE cell.
fn server_keys(cell: &Cell) -> Option<(String, String)> {
    matches!(cell.pattern, Pattern::ScaleCurve | Pattern::CurveClients).then(|| {
        let k = omq_driver::generate_keypair(&mut omq_driver::OsRng);
        (k.public().to_z85(), k.secret().to_z85().to_string())
    })
}

/// The peer process's mode for a ROUTER cell: omq DEALERs, or pre-sealing CURVE clients.
fn client_mode(cell: &Cell) -> &'static str {
    if cell.pattern == Pattern::CurveClients {
        "sealed"
    } else {
        "dealer"
    }
}

/// Lets connections that have just carried their first message go idle before memory is read.
const SETTLE: Duration = Duration::from_millis(300);

/// Runs a scale cell of any implementation (the measured side).
pub fn run(cell: &Cell) -> Result<Samples, String> {
    raise_nofile();
    match cell.imp {
        Impl::OmqTokio => Ok(on::<TokioSt>(cell)),
        Impl::OmqTokioMt => {
            Ok(TokioMt::shared()
                .expect("runtime")
                .block_on(side::<omq_tokio::Tokio>(cell.clone())))
        }
        // The measured side as a task on the workers, as in a `#[tokio::main]` application.
        Impl::OmqTokioTasks => {
            let cell = cell.clone();
            TokioMt::shared()
                .expect("runtime")
                .block_on(async { tokio::spawn(side::<omq_tokio::Tokio>(cell)).await })
                .map_err(|e| format!("the measured task: {e}"))
        }
        Impl::OmqCompio => Ok(on::<CompioSt>(cell)),
        Impl::OmqMonoio => Ok(on::<MonoioSt>(cell)),
        Impl::OmqGlommio => Ok(on::<GlommioSt>(cell)),
        Impl::Libzmq => libzmq_side(cell).map_err(|e| format!("libzmq: {e}")),
        other => Err(format!("{other} has no scale cell")),
    }
}

fn on<B: Backend>(cell: &Cell) -> Samples {
    B::block_on(side::<B::R>(cell.clone()))
}

async fn sleep<R: Runtime>(d: Duration) {
    R::sleep_until(R::now() + d).await;
}

async fn side<R: Runtime>(cell: Cell) -> Samples {
    let n = cell.subs;
    match cell.pattern {
        Pattern::Scale | Pattern::ScaleCurve | Pattern::CurveClients => {
            let (options, key) = server_options(&cell);
            let router = Socket::<R>::new(SocketType::Router, options).expect("socket");
            let ep = router.bind("tcp://127.0.0.1:0").await.expect("bind");
            let base = rss_kb();
            let t0 = Instant::now();
            let mut peers =
                Peers::start(client_mode(&cell), &ep.to_string(), &cell, key.as_deref());
            for _ in 0..n {
                router.recv().await.expect("recv");
            }
            let conn = t0.elapsed();
            sleep::<R>(SETTLE).await;
            let idle = rss_kb();
            peers.go();
            router.recv().await.expect("recv");
            let (first, cpu0) = (Instant::now(), cpu_secs());
            for _ in 1..cell.count {
                router.recv().await.expect("recv");
            }
            let secs = first.elapsed().as_secs_f64();
            let cores = (cpu_secs() - cpu0) / secs;
            peers.stop();
            Seen {
                n,
                base,
                conn,
                idle,
                steady: ("steady_msg_s", (cell.count - 1) as f64 / secs),
                cores: Some(cores),
            }
            .metrics()
        }
        _ => {
            let publ = Socket::<R>::new(SocketType::Pub, server_options(&cell).0).expect("socket");
            let ep = publ.bind("tcp://127.0.0.1:0").await.expect("bind");
            let base = rss_kb();
            let t0 = Instant::now();
            let mut peers = Peers::start("sub", &ep.to_string(), &cell, None);
            let hello = common::tagged(5, common::TAG_HELLO);
            let ready = loop {
                if let Some(at) = peers.ready_at() {
                    break at;
                }
                publ.send(copy(&hello)).await.expect("send");
                sleep::<R>(probe(n)).await;
            };
            let conn = ready - t0;
            sleep::<R>(SETTLE).await;
            let idle = rss_kb();
            peers.go();
            let data = common::tagged(cell.size, common::TAG_DATA);
            for _ in 0..cell.count {
                publ.send(copy(&data)).await.expect("send");
            }
            let end = common::tagged(5, common::TAG_END);
            let (delivered, secs) = loop {
                if let Some(d) = peers.done() {
                    break d;
                }
                publ.send(copy(&end)).await.expect("send");
                sleep::<R>(probe(n)).await;
            };
            peers.stop();
            Seen {
                n,
                base,
                conn,
                idle,
                steady: ("fanout_msg_s", delivered as f64 / secs.max(1e-9)),
                cores: None,
            }
            .metrics()
        }
    }
}

fn copy(payload: &[u8]) -> Message {
    Message::from(Part::copy_from_slice(payload))
}

fn libzmq_side(cell: &Cell) -> zmq::Result<Samples> {
    let n = cell.subs;
    let ctx = zmq::Context::new();
    let pattern = cell.pattern;
    if matches!(
        pattern,
        Pattern::Scale | Pattern::ScaleCurve | Pattern::CurveClients
    ) {
        let router = ctx.socket(zmq::ROUTER)?;
        router.set_backlog(BACKLOG)?;
        let keys = server_keys(cell);
        if let Some((_, secret)) = &keys {
            router.set_curve_server(true)?;
            router.set_curve_secretkey(secret.as_bytes())?;
        }
        router.bind("tcp://127.0.0.1:*")?;
        let ep = router.get_last_endpoint()?.expect("utf-8 endpoint");
        let base = rss_kb();
        let t0 = Instant::now();
        let mut peers = Peers::start(
            client_mode(cell),
            &ep,
            cell,
            keys.as_ref().map(|k| k.0.as_str()),
        );
        for _ in 0..n {
            router.recv_multipart(0)?;
        }
        let conn = t0.elapsed();
        std::thread::sleep(SETTLE);
        let idle = rss_kb();
        peers.go();
        router.recv_multipart(0)?;
        let (first, cpu0) = (Instant::now(), cpu_secs());
        for _ in 1..cell.count {
            router.recv_multipart(0)?;
        }
        let secs = first.elapsed().as_secs_f64();
        let cores = (cpu_secs() - cpu0) / secs;
        peers.stop();
        Ok(Seen {
            n,
            base,
            conn,
            idle,
            steady: ("steady_msg_s", (cell.count - 1) as f64 / secs),
            cores: Some(cores),
        }
        .metrics())
    } else {
        let publ = ctx.socket(zmq::PUB)?;
        publ.set_backlog(BACKLOG)?;
        publ.bind("tcp://127.0.0.1:*")?;
        let ep = publ.get_last_endpoint()?.expect("utf-8 endpoint");
        let base = rss_kb();
        let t0 = Instant::now();
        let mut peers = Peers::start("sub", &ep, cell, None);
        let hello = common::tagged(5, common::TAG_HELLO);
        let ready = loop {
            if let Some(at) = peers.ready_at() {
                break at;
            }
            publ.send(&hello[..], 0)?;
            std::thread::sleep(probe(n));
        };
        let conn = ready - t0;
        std::thread::sleep(SETTLE);
        let idle = rss_kb();
        peers.go();
        let data = common::tagged(cell.size, common::TAG_DATA);
        for _ in 0..cell.count {
            publ.send(&data[..], 0)?;
        }
        let end = common::tagged(5, common::TAG_END);
        let (delivered, secs) = loop {
            if let Some(d) = peers.done() {
                break d;
            }
            publ.send(&end[..], 0)?;
            std::thread::sleep(probe(n));
        };
        peers.stop();
        Ok(Seen {
            n,
            base,
            conn,
            idle,
            steady: ("fanout_msg_s", delivered as f64 / secs.max(1e-9)),
            cores: None,
        }
        .metrics())
    }
}

/// The peer process: `omq-bench peers mode=dealer|sub|sealed ep=E n=N size=S count=C
/// [serverkey=Z85]` (with a server key the DEALERs are CURVE clients; `sealed` needs one).
pub fn peers_main(args: &[String]) -> Result<(), String> {
    let mut mode = String::new();
    let mut server_key = None;
    let (mut ep, mut n, mut size, mut count) = (String::new(), 1usize, 64usize, 1usize);
    for a in args {
        let (k, v) = a
            .split_once('=')
            .ok_or_else(|| format!("bad argument {a:?}"))?;
        let num = || v.parse::<usize>().map_err(|e| format!("{k}: {e}"));
        match k {
            "mode" => mode = v.into(),
            "ep" => ep = v.into(),
            "n" => n = num()?,
            "size" => size = num()?,
            "count" => count = num()?,
            "serverkey" => server_key = Some(v.to_owned()),
            _ => return Err(format!("unknown key {k:?}")),
        }
    }
    raise_nofile();
    if mode == "sealed" {
        let key = server_key.ok_or("mode=sealed needs serverkey=")?;
        return sealed_clients(&ep, n, size, count, &key);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(async move {
        match mode.as_str() {
            "dealer" => dealers(&ep, n, size, count, client_options(server_key)).await,
            "sub" => subs(&ep, n).await,
            m => Err(format!("unknown mode {m:?}")),
        }
    })
}

type PeerSocket = omq_tokio::Socket;

/// Lines read from stdin (`go`), by a thread that ends the whole process when stdin closes:
/// the measured process closes it to stop the peers, and a measured process killed for its
/// time limit closes it too, so no peer process outlives its cell.
fn stdin_lines() -> tokio::sync::mpsc::UnboundedReceiver<()> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || loop {
        let mut line = String::new();
        match std::io::stdin().read_line(&mut line) {
            Ok(k) if k > 0 => {
                let _ = tx.send(());
            }
            _ => std::process::exit(0),
        }
    });
    rx
}

/// A DEALER's options: a CURVE client of `server_key` (every peer with one keypair), or none.
fn client_options(server_key: Option<String>) -> Options {
    let Some(server) = server_key else {
        return Options::default();
    };
    let me = omq_driver::generate_keypair(&mut omq_driver::OsRng);
    Options::default()
        .curve_serverkey(server.as_bytes())
        .curve_publickey(me.public().to_z85().as_bytes())
        .curve_secretkey(me.secret().to_z85().as_bytes())
}

async fn dealers(
    ep: &str,
    n: usize,
    size: usize,
    count: usize,
    options: Options,
) -> Result<(), String> {
    let mut lines = stdin_lines();
    let payload = common::payload(size);
    let all = join_all((0..n).map(|_| {
        let (payload, options) = (payload.clone(), options.clone());
        async move {
            let d = PeerSocket::new(SocketType::Dealer, options).expect("socket");
            d.connect(ep).await.expect("connect");
            d.send(copy(&payload)).await.expect("send");
            d
        }
    }))
    .await;
    lines.recv().await;
    for k in 0..count {
        all[k % n].send(copy(&payload)).await.expect("send");
    }
    lines.recv().await;
    Ok(())
}

/// `what` failed with `err`, as a message.
fn fail(what: &str, err: impl std::fmt::Debug) -> String {
    format!("{what}: {err:?}")
}

/// `n` CURVE clients, each omq-core's session over a blocking std socket on a thread of its
/// own: handshake and a first message, then each seals its share of `count` messages into one
/// buffer (the measured side is waiting for `go` meanwhile, its clock not started), and on
/// `go` writes the buffer. Sealing before the clock leaves the two vCPUs to the measured
/// ROUTER; what the peers still cost is the kernel's copy of the bytes.
fn sealed_clients(
    ep: &str,
    n: usize,
    size: usize,
    count: usize,
    server_key: &str,
) -> Result<(), String> {
    use omq_core::mechanism::{CurveKeyPair, CurvePublicKey, Entropy, MechanismConfig};
    use std::sync::mpsc;
    let addr = ep
        .strip_prefix("tcp://")
        .ok_or_else(|| format!("not a tcp endpoint: {ep}"))?
        .to_owned();
    let server = CurvePublicKey::from_z85(server_key).map_err(|e| format!("server key: {e:?}"))?;
    let msg = copy(&common::payload(size));
    let (ready_tx, ready_rx) = mpsc::channel::<Result<(), String>>();
    let go = Arc::new(std::sync::Barrier::new(n + 1));
    for i in 0..n {
        let share = count / n + usize::from(i < count % n);
        let (addr, msg, ready, go) = (addr.clone(), msg.clone(), ready_tx.clone(), go.clone());
        std::thread::spawn(move || {
            let client = || -> Result<(std::net::TcpStream, Vec<u8>), String> {
                let mut config = omq_core::SessionConfig::new(SocketType::Dealer);
                let me: CurveKeyPair = omq_driver::generate_keypair(&mut omq_driver::OsRng);
                config.mechanism = MechanismConfig::curve_client(server, me);
                config.entropy = Some(Entropy::generate(&mut omq_driver::OsRng));
                let mut stream =
                    std::net::TcpStream::connect(&addr).map_err(|x| fail("connect", x))?;
                stream.set_nodelay(true).map_err(|x| fail("nodelay", x))?;
                let mut session = omq_core::Session::new(config, Instant::now());
                let mut rx = bytes::BytesMut::with_capacity(4096);
                let flush = |session: &mut omq_core::Session,
                             stream: &mut std::net::TcpStream|
                 -> Result<(), String> {
                    while let Some(chunk) = session.poll_transmit() {
                        stream.write_all(&chunk).map_err(|x| fail("write", x))?;
                    }
                    Ok(())
                };
                while !session.is_ready() {
                    flush(&mut session, &mut stream)?;
                    let mut tmp = [0u8; 4096];
                    let k = std::io::Read::read(&mut stream, &mut tmp)
                        .map_err(|x| fail("handshake read", x))?;
                    if k == 0 {
                        return Err("the server closed during the handshake".into());
                    }
                    rx.extend_from_slice(&tmp[..k]);
                    session
                        .handle_input(&mut rx, Instant::now())
                        .map_err(|x| fail("handshake", x))?;
                }
                session.send_message(&msg).map_err(|x| fail("first", x))?;
                flush(&mut session, &mut stream)?;
                let mut sealed = Vec::new();
                for _ in 0..share {
                    session.send_message(&msg).map_err(|x| fail("seal", x))?;
                    while let Some(chunk) = session.poll_transmit() {
                        sealed.extend_from_slice(&chunk);
                    }
                }
                Ok((stream, sealed))
            };
            match client() {
                Ok((mut stream, sealed)) => {
                    let _ = ready.send(Ok(()));
                    go.wait();
                    let _ = stream.write_all(&sealed);
                    // Held open until the process ends (stdin closed).
                    std::thread::park();
                }
                Err(why) => {
                    let _ = ready.send(Err(why));
                }
            }
        });
    }
    drop(ready_tx);
    for _ in 0..n {
        ready_rx
            .recv()
            .map_err(|_| "a client thread ended".to_string())??;
    }
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
    go.wait();
    // Until stdin closes.
    while std::io::stdin().read_line(&mut line).is_ok_and(|k| k > 0) {}
    std::process::exit(0)
}

/// What the SUB peers have seen, together: how many saw a probe, how many the end marker, how
/// many data messages arrived and when the first and last of them did.
#[derive(Default)]
struct Tally {
    n: usize,
    ready: AtomicU64,
    done: AtomicU64,
    delivered: AtomicU64,
    span: Mutex<Option<(Instant, Instant)>>,
}

impl Tally {
    /// One SUB received a message tagged `tag`; returns true once that SUB has seen the end.
    /// Prints `ready` when the last SUB sees its first probe, `done DELIVERED SECONDS` when the
    /// last sees the end.
    fn seen(&self, tag: u8, seen_hello: &mut bool) -> bool {
        match tag {
            common::TAG_HELLO if !*seen_hello => {
                *seen_hello = true;
                if self.ready.fetch_add(1, Ordering::AcqRel) + 1 == self.n as u64 {
                    println!("ready");
                }
            }
            common::TAG_DATA => {
                let now = Instant::now();
                let mut span = self.span.lock().unwrap();
                span.get_or_insert((now, now)).1 = now;
                drop(span);
                self.delivered.fetch_add(1, Ordering::Relaxed);
            }
            common::TAG_END => {
                if self.done.fetch_add(1, Ordering::AcqRel) + 1 == self.n as u64 {
                    let (f, l) = self.span.lock().unwrap().unwrap_or_else(|| {
                        let now = Instant::now();
                        (now, now)
                    });
                    println!(
                        "done {} {}",
                        self.delivered.load(Ordering::Acquire),
                        (l - f).as_secs_f64()
                    );
                }
                return true;
            }
            _ => {}
        }
        false
    }
}

/// `n` SUBs subscribed to everything. Each is omq-core's sans-io session over a tokio
/// `TcpStream`, in a task of its own: no socket, no queue, no connection task behind it, so
/// 10,000 of them on the peers' two cores read what the publisher sends instead of making it
/// wait (as 10,000 omq SUB sockets did: the N = 10,000 cell then measured the peers).
async fn subs(ep: &str, n: usize) -> Result<(), String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut lines = stdin_lines();
    let addr = ep
        .strip_prefix("tcp://")
        .ok_or_else(|| format!("not a tcp endpoint: {ep}"))?
        .to_owned();
    let tally = Arc::new(Tally {
        n,
        ..Tally::default()
    });
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let (addr, tally) = (addr.clone(), tally.clone());
            tokio::spawn(async move {
                let mut stream = tokio::net::TcpStream::connect(&addr)
                    .await
                    .map_err(|x| fail("connect", x))?;
                stream.set_nodelay(true).map_err(|x| fail("nodelay", x))?;
                let config = omq_core::SessionConfig::new(SocketType::Sub);
                let mut session = omq_core::Session::new(config, Instant::now());
                let mut buf = bytes::BytesMut::with_capacity(SUB_READ);
                let mut seen_hello = false;
                loop {
                    while let Some(chunk) = session.poll_transmit() {
                        stream
                            .write_all(&chunk)
                            .await
                            .map_err(|x| fail("write", x))?;
                    }
                    if buf.capacity() - buf.len() < SUB_READ / 4 {
                        buf.reserve(SUB_READ);
                    }
                    if stream
                        .read_buf(&mut buf)
                        .await
                        .map_err(|x| fail("read", x))?
                        == 0
                    {
                        return Err("the publisher closed".to_string());
                    }
                    session
                        .handle_input(&mut buf, Instant::now())
                        .map_err(|x| fail("input", x))?;
                    while let Some(event) = session.poll_event() {
                        match event {
                            omq_core::SessionEvent::HandshakeSucceeded => session
                                .send_subscribe(b"")
                                .map_err(|x| fail("subscribe", x))?,
                            omq_core::SessionEvent::Message(m) => {
                                let tag = m.get(0).and_then(|p| p.first().copied()).unwrap_or(0);
                                if tally.seen(tag, &mut seen_hello) {
                                    return Ok(());
                                }
                            }
                            _ => {}
                        }
                    }
                }
            })
        })
        .collect();
    for t in join_all(tasks).await {
        t.map_err(|x| fail("sub task", x))??;
    }
    // Until stdin closes (the thread then ends the process).
    while lines.recv().await.is_some() {}
    Ok(())
}

/// Read room of each SUB peer: 10,000 of them hold 160 MB at most.
const SUB_READ: usize = 16 * 1024;
