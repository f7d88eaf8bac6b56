//! The soak: every backend at once, mixed patterns over an impaired link between two network
//! namespaces, for a given time, with random peer restarts and changing network conditions.
//! Run by `scripts/soak.sh MINUTES` (as root). Exits non-zero on any lost, duplicated, reordered
//! or corrupted message where the pattern promises none, or when memory or descriptors grow past
//! their bound (see `docs/FAULTS.md`).
//!
//! Layout: namespace A holds the servers (PULL, PUB, ROUTER, and REPs in processes of their own
//! that are SIGKILLed and started again at random times: the `omq` CLI on each backend and a
//! libzmq REP); namespace B holds the clients (PUSH,
//! churning SUBs, DEALERs that come and go, lazy-pirate REQs). Each backend runs its servers on
//! one thread in A and its clients on one thread in B. CURVE protects ROUTER/DEALER on tokio and
//! monoio, PUSH/PULL on compio and glommio.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use conformance::backend::{Backend, CompioBackend, GlommioBackend, MonoioBackend, TokioBackend};
use conformance::libzmq_peer::LibzmqPeer;
use conformance::netfaults::{check, numbered, self_fds, self_rss, sleep, timeout, Rng};
use conformance::netns::{in_netns, Impairment, Link};
use omq_driver::{generate_keypair, Options, OsRng, Runtime, Socket, SocketType};

/// RSS may exceed the highest value seen during warm-up by at most this much.
const RSS_BOUND: u64 = 64 << 20;
/// Open descriptors may exceed the highest count seen during warm-up by at most this many.
const FD_BOUND: usize = 64;
/// How long the end of the run waits for messages still in flight.
const DRAIN: Duration = Duration::from_secs(90);
/// The libzmq REP every backend's second REQ talks to.
const ZMQ_REP_PORT: u16 = 7000;

#[derive(Default, Debug)]
struct Counters {
    pushed: AtomicU64,
    pulled: AtomicU64,
    published: AtomicU64,
    sub_received: AtomicU64,
    subscribers: AtomicU64,
    dealer_msgs: AtomicU64,
    dealers: AtomicU64,
    requests: AtomicU64,
    zmq_requests: AtomicU64,
    retries: AtomicU64,
    rep_restarts: AtomicU64,
}

struct Shared {
    running: AtomicBool,
    push_done: AtomicBool,
    clients_done: AtomicBool,
    failures: Mutex<Vec<String>>,
    c: Vec<Counters>,
    seed: u64,
}

impl Shared {
    fn fail(&self, s: String) {
        eprintln!("FAILURE: {s}");
        self.failures.lock().unwrap().push(s);
    }
    fn running(&self) -> bool {
        self.running.load(Ordering::Relaxed)
    }
}

fn curve_pair() -> (Options, Options) {
    let s = generate_keypair(&mut OsRng);
    let c = generate_keypair(&mut OsRng);
    let server = Options::default()
        .curve_server(true)
        .curve_secretkey(s.secret().to_z85().to_string().as_bytes());
    let client = Options::default()
        .curve_serverkey(s.public().to_z85().as_bytes())
        .curve_publickey(c.public().to_z85().as_bytes())
        .curve_secretkey(c.secret().to_z85().to_string().as_bytes());
    (server, client)
}

fn port(b: usize, k: u16) -> u16 {
    6000 + b as u16 * 10 + k
}

fn ep(addr: &str, port: u16) -> String {
    format!("tcp://{addr}:{port}")
}

const POLL: Duration = Duration::from_millis(200);

// ---------------------------------------------------------------- servers (namespace A)

async fn pull_server<R: Runtime>(sh: Arc<Shared>, b: usize, base: Options) {
    let pull = Socket::<R>::new(SocketType::Pull, base.recv_timeout(Some(POLL))).unwrap();
    pull.bind(ep("0.0.0.0", port(b, 0)).as_str()).await.unwrap();
    let tag = 100 + b as u64;
    let mut next = 0u64;
    let mut drain_deadline = None;
    loop {
        match pull.recv().await {
            Ok(m) => match check(&m, tag, 3000) {
                Ok(seq) if seq == next => {
                    next += 1;
                    sh.c[b].pulled.fetch_add(1, Ordering::Relaxed);
                }
                Ok(seq) => {
                    sh.fail(format!("b{b} PULL: got {seq}, want {next}"));
                    next = seq + 1;
                }
                Err(e) => sh.fail(format!("b{b} PULL: {e}")),
            },
            Err(_) => {
                if sh.push_done.load(Ordering::Relaxed) {
                    let sent = sh.c[b].pushed.load(Ordering::Relaxed);
                    if next == sent {
                        return;
                    }
                    let d = *drain_deadline.get_or_insert_with(|| Instant::now() + DRAIN);
                    if Instant::now() > d {
                        sh.fail(format!("b{b} PULL: {} of {sent} arrived", next));
                        return;
                    }
                }
            }
        }
    }
}

async fn pub_server<R: Runtime>(sh: Arc<Shared>, b: usize) {
    let publ = Socket::<R>::new(SocketType::Pub, Options::default().send_hwm(2000)).unwrap();
    publ.bind(ep("0.0.0.0", port(b, 1)).as_str()).await.unwrap();
    let tag = 200 + b as u64;
    let mut seq = 0;
    while sh.running() {
        let mut m = numbered(tag, seq, 500);
        m.push_front("t");
        let _ = publ.send(m).await;
        seq += 1;
        sh.c[b].published.fetch_add(1, Ordering::Relaxed);
        sleep::<R>(Duration::from_millis(5)).await;
    }
}

async fn router_server<R: Runtime>(sh: Arc<Shared>, b: usize, base: Options) {
    let router = Socket::<R>::new(
        SocketType::Router,
        base.recv_timeout(Some(POLL)).send_hwm(5000),
    )
    .unwrap();
    router
        .bind(ep("0.0.0.0", port(b, 2)).as_str())
        .await
        .unwrap();
    while !sh.clients_done.load(Ordering::Relaxed) {
        if let Ok(m) = router.recv().await {
            // Echo: the routing id frame routes it back.
            let _ = router.send(m).await;
        }
    }
}

/// The `omq` CLI as a REP echo server on backend `name`, in its own process: SIGKILLed and
/// started again on the same port at random times.
fn omq_rep(sh: Arc<Shared>, b: usize, name: &'static str) {
    let bin = std::env::var_os("OMQ_BIN").map_or_else(
        || {
            let exe = std::env::current_exe().unwrap();
            exe.parent().unwrap().parent().unwrap().join("omq")
        },
        Into::into,
    );
    let mut rng = Rng::new(sh.seed ^ (b as u64) << 8 ^ 0x5e);
    while !sh.clients_done.load(Ordering::Relaxed) {
        let mut child = std::process::Command::new(&bin)
            .args(["rep", "--recv", "--echo", "--backend", name, "--bind"])
            .arg(ep("0.0.0.0", port(b, 3)))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", bin.display()));
        let until = Instant::now() + Duration::from_secs(rng.range(8, 30));
        let mut exited = false;
        while !sh.clients_done.load(Ordering::Relaxed) && (Instant::now() < until || !sh.running())
        {
            // It exits by itself only if its port is not free yet: start it again.
            if child.try_wait().unwrap().is_some() {
                exited = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = child.kill();
        let _ = child.wait();
        if !exited && sh.running() {
            sh.c[b].rep_restarts.fetch_add(1, Ordering::Relaxed);
        }
    }
}

// ---------------------------------------------------------------- clients (namespace B)

async fn push_client<R: Runtime>(sh: Arc<Shared>, b: usize, base: Options) {
    let push = Socket::<R>::new(SocketType::Push, base.linger(None)).unwrap();
    push.connect(ep(Link::ADDR_A, port(b, 0)).as_str())
        .await
        .unwrap();
    let tag = 100 + b as u64;
    let mut seq = 0;
    while sh.running() {
        push.send(numbered(tag, seq, 3000)).await.unwrap();
        seq += 1;
        sh.c[b].pushed.store(seq, Ordering::Relaxed);
        if seq % 4 == 0 {
            sleep::<R>(Duration::from_millis(10)).await;
        }
    }
    sh.push_done.store(true, Ordering::Relaxed);
    // Keep the socket (and what it still has queued) until the PULL has it all (the PULL
    // reports a shortfall after its own deadline).
    let deadline = Instant::now() + DRAIN;
    while sh.c[b].pulled.load(Ordering::Relaxed) < seq && Instant::now() < deadline {
        sleep::<R>(POLL).await;
    }
}

async fn sub_churn<R: Runtime>(sh: Arc<Shared>, b: usize) {
    let mut rng = Rng::new(sh.seed ^ (b as u64) << 8 ^ 0x50b);
    let tag = 200 + b as u64;
    while sh.running() {
        let sub = Socket::<R>::new(
            SocketType::Sub,
            Options::default()
                .recv_timeout(Some(POLL))
                .linger(Some(Duration::ZERO)),
        )
        .unwrap();
        sub.subscribe("t").unwrap();
        sub.connect(ep(Link::ADDR_A, port(b, 1)).as_str())
            .await
            .unwrap();
        sh.c[b].subscribers.fetch_add(1, Ordering::Relaxed);
        let until = Instant::now() + Duration::from_millis(rng.range(500, 8000));
        let mut last: Option<u64> = None;
        while Instant::now() < until && sh.running() {
            if let Ok(m) = sub.recv().await {
                match check(&m, tag, 500) {
                    // One connection: in order and never twice, though some may be missing.
                    Ok(seq) if last.is_some_and(|l| seq <= l) => {
                        sh.fail(format!("b{b} SUB: {seq} after {last:?}"))
                    }
                    Ok(seq) => {
                        last = Some(seq);
                        sh.c[b].sub_received.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => sh.fail(format!("b{b} SUB: {e}")),
                }
            }
        }
    }
}

async fn dealer_churn<R: Runtime>(sh: Arc<Shared>, b: usize, base: Options) {
    let mut rng = Rng::new(sh.seed ^ (b as u64) << 8 ^ 0xdea1);
    let mut client = 0u64;
    while sh.running() {
        client += 1;
        let tag = 1_000_000 * (b as u64 + 1) + client;
        let dealer = Socket::<R>::new(
            SocketType::Dealer,
            base.clone()
                .linger(Some(Duration::ZERO))
                .recv_timeout(Some(POLL)),
        )
        .unwrap();
        dealer
            .connect(ep(Link::ADDR_A, port(b, 2)).as_str())
            .await
            .unwrap();
        sh.c[b].dealers.fetch_add(1, Ordering::Relaxed);
        let n = rng.range(5, 200);
        let window = rng.range(1, 20);
        let (mut sent, mut got) = (0u64, 0u64);
        let deadline = Instant::now() + DRAIN;
        while got < n {
            while sent < n && sent < got + window {
                dealer.send(numbered(tag, sent, 2000)).await.unwrap();
                sent += 1;
            }
            match dealer.recv().await {
                Ok(m) => match check(&m, tag, 2000) {
                    Ok(seq) if seq == got => {
                        got += 1;
                        sh.c[b].dealer_msgs.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(seq) => {
                        sh.fail(format!("b{b} DEALER {client}: got {seq}, want {got}"));
                        break;
                    }
                    Err(e) => {
                        sh.fail(format!("b{b} DEALER {client}: {e}"));
                        break;
                    }
                },
                Err(_) if Instant::now() > deadline => {
                    sh.fail(format!("b{b} DEALER {client}: {got} of {n} replies"));
                    break;
                }
                Err(_) => {}
            }
        }
        drop(dealer);
        sleep::<R>(Duration::from_millis(rng.range(0, 300))).await;
    }
}

/// A lazy-pirate REQ (REQ_RELAXED + REQ_CORRELATE, resend on timeout); every request must
/// complete before the drain deadline.
async fn lazy_pirate<R: Runtime>(sh: Arc<Shared>, b: usize, endpoint: String, zmq: bool) {
    let req = Socket::<R>::new(
        SocketType::Req,
        Options::default()
            .req_relaxed(true)
            .req_correlate(true)
            .linger(Some(Duration::ZERO))
            .heartbeat_ivl(Some(Duration::from_secs(1)))
            .heartbeat_timeout(Some(Duration::from_secs(3)))
            .reconnect_ivl(Some(Duration::from_millis(100)))
            .reconnect_ivl_max(Duration::from_secs(1))
            .recv_timeout(Some(Duration::from_millis(1500))),
    )
    .unwrap();
    req.connect(endpoint.as_str()).await.unwrap();
    let tag = 300 + b as u64 + if zmq { 50 } else { 0 };
    let mut seq = 0;
    while sh.running() {
        let deadline = Instant::now() + DRAIN;
        let request = numbered(tag, seq, 1000);
        let mut done = false;
        while !done {
            if timeout::<R, _>(Duration::from_secs(5), req.send(request.clone()))
                .await
                .is_none()
            {
                // A send blocks only without a connection; try again.
            }
            match req.recv().await {
                Ok(reply) if reply == request => done = true,
                Ok(reply) => {
                    sh.fail(format!(
                        "b{b} REQ: wrong reply {:?}",
                        check(&reply, tag, 1000)
                    ));
                    return;
                }
                Err(_) if Instant::now() > deadline => {
                    sh.fail(format!(
                        "b{b} REQ (libzmq {zmq}): request {seq} never answered"
                    ));
                    return;
                }
                Err(_) => {
                    sh.c[b].retries.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        seq += 1;
        if zmq {
            sh.c[b].zmq_requests.fetch_add(1, Ordering::Relaxed);
        } else {
            sh.c[b].requests.fetch_add(1, Ordering::Relaxed);
        }
        sleep::<R>(Duration::from_millis(20)).await;
    }
}

async fn clients<R: Runtime>(sh: Arc<Shared>, b: usize) {
    let (push_opts, dealer_opts) = {
        let keys = KEYS.lock().unwrap()[b].clone();
        if b.is_multiple_of(2) {
            (Options::default(), keys)
        } else {
            (keys, Options::default())
        }
    };
    futures_util::join!(
        push_client::<R>(sh.clone(), b, push_opts),
        sub_churn::<R>(sh.clone(), b),
        dealer_churn::<R>(sh.clone(), b, dealer_opts),
        lazy_pirate::<R>(sh.clone(), b, ep(Link::ADDR_A, port(b, 3)), false),
        lazy_pirate::<R>(sh.clone(), b, ep(Link::ADDR_A, ZMQ_REP_PORT), true),
    );
}

/// Per backend: the CURVE client options matching its servers' key.
static KEYS: Mutex<Vec<Options>> = Mutex::new(Vec::new());
/// Per backend: the CURVE server options.
static SERVER_KEYS: Mutex<Vec<Options>> = Mutex::new(Vec::new());

fn run_backend<B: Backend>(
    link: &Link,
    sh: &Arc<Shared>,
    b: usize,
) -> [std::thread::JoinHandle<()>; 3] {
    let (a_ns, b_ns) = link.netns();
    let s = sh.clone();
    let servers = in_netns(a_ns, move || B::block_on(servers_keyed::<B::R>(s, b)));
    let s = sh.clone();
    let rep = in_netns(a_ns, move || omq_rep(s, b, B::NAME));
    let s = sh.clone();
    let clients = in_netns(b_ns, move || B::block_on(clients::<B::R>(s, b)));
    [servers, clients, rep]
}

async fn servers_keyed<R: Runtime>(sh: Arc<Shared>, b: usize) {
    let server = SERVER_KEYS.lock().unwrap()[b].clone();
    let (pull_opts, router_opts) = if b.is_multiple_of(2) {
        (Options::default(), server)
    } else {
        (server, Options::default())
    };
    futures_util::join!(
        pull_server::<R>(sh.clone(), b, pull_opts),
        pub_server::<R>(sh.clone(), b),
        router_server::<R>(sh.clone(), b, router_opts),
    );
}

/// The libzmq REP in namespace A, SIGKILLed and restarted at random times.
fn zmq_rep(sh: Arc<Shared>) {
    let mut rng = Rng::new(sh.seed ^ 0x2e9);
    let mut restarts = 0u64;
    while !sh.clients_done.load(Ordering::Relaxed) {
        let mut peer = LibzmqPeer::spawn().unwrap_or_else(|e| panic!("{e}"));
        peer.socket(1, "REP").unwrap();
        peer.setsockopt(1, "LINGER", 0).unwrap();
        let mut bound = false;
        for _ in 0..100 {
            if peer.bind(1, &ep("0.0.0.0", ZMQ_REP_PORT)).is_ok() {
                bound = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        if !bound {
            sh.fail("libzmq REP: could not bind again".into());
            return;
        }
        let until = Instant::now() + Duration::from_secs(rng.range(8, 30));
        while !sh.clients_done.load(Ordering::Relaxed) && (Instant::now() < until || !sh.running())
        {
            if let Ok(parts) = peer.recv(1, Duration::from_millis(100)) {
                let parts: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
                let _ = peer.send(1, &parts);
            }
        }
        peer.kill().unwrap();
        restarts += 1;
    }
    eprintln!("libzmq REP restarts (SIGKILL): {restarts}");
}

fn main() {
    let secs: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("usage: soak SECONDS [SEED]");
    let seed: u64 = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs()
        });
    println!("soak: {secs} s, seed {seed}");
    let link = Link::new().unwrap_or_else(|e| panic!("{e}"));
    const BACKENDS: [&str; 4] = ["tokio", "compio", "monoio", "glommio"];
    for _ in BACKENDS {
        let (s, c) = curve_pair();
        SERVER_KEYS.lock().unwrap().push(s);
        KEYS.lock().unwrap().push(c);
    }
    let sh = Arc::new(Shared {
        running: AtomicBool::new(true),
        push_done: AtomicBool::new(false),
        clients_done: AtomicBool::new(false),
        failures: Mutex::new(Vec::new()),
        c: BACKENDS.iter().map(|_| Counters::default()).collect(),
        seed,
    });
    let zmq = {
        let s = sh.clone();
        in_netns(link.netns().0, move || zmq_rep(s))
    };
    let threads = vec![
        run_backend::<TokioBackend>(&link, &sh, 0),
        run_backend::<CompioBackend>(&link, &sh, 1),
        run_backend::<MonoioBackend>(&link, &sh, 2),
        run_backend::<GlommioBackend>(&link, &sh, 3),
    ];

    let start = Instant::now();
    let warmup = Duration::from_secs((secs / 4).clamp(10, 60));
    let (mut base_rss, mut base_fds) = (0u64, 0usize);
    let mut samples: Vec<(u64, u64, usize)> = Vec::new();
    let mut rng = Rng::new(seed ^ 0x4e7);
    let mut next_change = Instant::now() + Duration::from_secs(5);
    let mut heal_at: Option<Instant> = None;
    let mut condition = "clean";
    while start.elapsed() < Duration::from_secs(secs) {
        std::thread::sleep(Duration::from_secs(1));
        let (t, rss, fds) = (start.elapsed().as_secs(), self_rss(), self_fds());
        samples.push((t, rss, fds));
        if start.elapsed() < warmup {
            base_rss = base_rss.max(rss);
            base_fds = base_fds.max(fds);
        } else {
            if rss > base_rss + RSS_BOUND {
                sh.fail(format!(
                    "RSS {} MiB at {t} s, bound {} MiB",
                    rss >> 20,
                    (base_rss + RSS_BOUND) >> 20
                ));
            }
            if fds > base_fds + FD_BOUND {
                sh.fail(format!(
                    "{fds} descriptors at {t} s, bound {}",
                    base_fds + FD_BOUND
                ));
            }
        }
        println!("t={t} rss_kib={} fds={fds} net={condition}", rss >> 10);
        if heal_at.is_some_and(|h| Instant::now() >= h) {
            link.partition(false);
            heal_at = None;
            condition = "healed";
        }
        if Instant::now() >= next_change {
            next_change = Instant::now() + Duration::from_secs(rng.range(8, 20));
            let lossy = Impairment::lossy();
            let (name, imp, mtu) = match rng.range(0, 6) {
                0 => ("clean", Impairment::CLEAN, 1500),
                1 => ("lossy", lossy, 1500),
                2 => (
                    "slow",
                    Impairment {
                        delay: Duration::from_millis(30),
                        rate_bps: Some(2_000_000),
                        ..Impairment::CLEAN
                    },
                    576,
                ),
                3 => (
                    "dup",
                    Impairment {
                        delay: Duration::from_millis(5),
                        jitter: Duration::from_millis(5),
                        duplicate: 0.02,
                        ..Impairment::CLEAN
                    },
                    1500,
                ),
                4 => ("lossy-mtu576", lossy, 576),
                _ => {
                    heal_at = Some(Instant::now() + Duration::from_secs(rng.range(2, 7)));
                    ("partition", link.impairment(), 0)
                }
            };
            if mtu == 0 {
                link.partition(true);
            } else {
                link.set(imp);
                link.set_mtu(mtu).unwrap();
            }
            condition = name;
        }
        if t % 10 == 0 {
            for (b, name) in BACKENDS.iter().enumerate() {
                println!("  {name}: {:?}", sh.c[b]);
            }
        }
    }
    println!("stopping; draining on a clean link");
    link.set(Impairment::CLEAN);
    link.set_mtu(1500).unwrap();
    sh.running.store(false, Ordering::Relaxed);
    let mut servers = Vec::new();
    for [s, c, r] in threads {
        if c.join().is_err() {
            sh.fail("a client thread panicked".into());
        }
        servers.push(s);
        servers.push(r);
    }
    sh.clients_done.store(true, Ordering::Relaxed);
    for s in servers {
        if s.join().is_err() {
            sh.fail("a server thread panicked".into());
        }
    }
    if zmq.join().is_err() {
        sh.fail("the libzmq REP thread panicked".into());
    }
    for (b, name) in BACKENDS.iter().enumerate() {
        println!("final {name}: {:?}", sh.c[b]);
    }
    // The curves, in tenths of the run.
    println!("RSS/fd curve (per tenth of the run: min..max):");
    let tenth = samples.len().div_ceil(10).max(1);
    for chunk in samples.chunks(tenth) {
        let (lo, hi) = (chunk[0].0, chunk[chunk.len() - 1].0);
        let rmin = chunk.iter().map(|s| s.1).min().unwrap_or(0) >> 20;
        let rmax = chunk.iter().map(|s| s.1).max().unwrap_or(0) >> 20;
        let fmin = chunk.iter().map(|s| s.2).min().unwrap_or(0);
        let fmax = chunk.iter().map(|s| s.2).max().unwrap_or(0);
        println!("  {lo:>5}-{hi:>5} s: rss {rmin}..{rmax} MiB, fds {fmin}..{fmax}");
    }
    println!(
        "bounds: rss <= {} MiB, fds <= {} (warm-up maxima {} MiB, {} + margins)",
        (base_rss + RSS_BOUND) >> 20,
        base_fds + FD_BOUND,
        base_rss >> 20,
        base_fds
    );
    println!(
        "wire: {} packets, {} dropped, {} duplicated",
        link.stats().packets.load(Ordering::Relaxed),
        link.stats().dropped.load(Ordering::Relaxed),
        link.stats().duplicated.load(Ordering::Relaxed)
    );
    let failures = sh.failures.lock().unwrap();
    if failures.is_empty() {
        println!("soak: PASS");
    } else {
        println!("soak: FAIL ({} failures)", failures.len());
        for f in failures.iter().take(50) {
            println!("  {f}");
        }
        drop(failures);
        drop(link);
        std::process::exit(1);
    }
}
