//! Monitor events compared with libzmq's own monitor, scenario by scenario.
//!
//! Each scenario is written once against a watched socket that is either an omq socket
//! (with [`Socket::monitor`]) or a libzmq socket in the peer process (with
//! `zmq_socket_monitor`); every other socket in the scenario is a libzmq socket in the same
//! peer. Running it both ways and comparing the two event logs checks omq's names, order and
//! endpoints against what libzmq really emits, not against an order written by hand.
//!
//! Events are logged as `NAME` or `NAME@ENDPOINT`, the endpoint written `EP` when it is the
//! scenario's endpoint (ports differ between the two runs). Values (fds, delays) are not
//! compared: they are the implementation's own.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use omq_driver::{Monitor, Options, Runtime, Socket, SocketType};

use crate::api::within_for;
use crate::async_peer::AsyncPeer;
use crate::backend::Backend;
use crate::libzmq_peer::OptValue;
use crate::ports::reserve_tcp_port;
use crate::scenarios::Transport;

/// The longest one awaited event may take.
const T: Duration = Duration::from_secs(10);
/// How long a step waits for events that may follow it (none must come later).
const SETTLE: Duration = Duration::from_millis(300);
/// RECONNECT_IVL of the watched socket: long enough that a step can rebind a listener
/// between the CONNECT_RETRIED event and the retry itself.
const RECONNECT_IVL_MS: i32 = 1000;

/// The scenarios compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MonitorScenario {
    /// The watched PUSH connects to a libzmq PULL, which closes; a new PULL binds the same
    /// endpoint and the watched socket reconnects; then it disconnects and closes.
    ConnectReconnect,
    /// The watched PULL binds; a libzmq PUSH connects and closes, another connects; the
    /// watched socket unbinds (the accepted connection stays), then closes.
    BindAcceptUnbind,
    /// The watched PULL binds; a raw ZMTP client connects, introduces itself as a PULL (an
    /// incompatible type) and waits. (A libzmq PULL would check the watched socket's type at
    /// the same moment, and which side hangs up first would be a race.)
    IncompatiblePeer,
    /// The watched PUSH connects to a port where nothing listens.
    ConnectRefused,
}

impl MonitorScenario {
    /// Every scenario.
    pub const ALL: [MonitorScenario; 4] = [
        MonitorScenario::ConnectReconnect,
        MonitorScenario::BindAcceptUnbind,
        MonitorScenario::IncompatiblePeer,
        MonitorScenario::ConnectRefused,
    ];
}

/// The socket whose events are logged.
enum Watched<R: Runtime> {
    /// An omq socket and its monitor.
    Omq(Option<Socket<R>>, Monitor<R>),
    /// Socket 1 in the libzmq peer.
    Zmq,
}

/// One run of a scenario: the watched socket, the peer, and the log.
struct Run<'a, R: Runtime> {
    watched: Watched<R>,
    peer: &'a AsyncPeer,
    endpoint: String,
    log: Vec<String>,
}

impl<R: Runtime> Run<'_, R> {
    fn note(&mut self, name: &str, endpoint: &str) {
        let entry = if endpoint.is_empty() {
            name.to_owned()
        } else if endpoint == self.endpoint {
            format!("{name}@EP")
        } else {
            format!("{name}@{endpoint}")
        };
        self.log.push(entry);
    }

    /// The next event within `d`, logged; None if none came.
    async fn next_event(&mut self, d: Duration) -> Option<String> {
        let (name, endpoint) = match &mut self.watched {
            Watched::Omq(_, monitor) => {
                let e = within_for::<R, _>(d, monitor.next()).await??;
                (e.kind.name().to_owned(), e.endpoint)
            }
            Watched::Zmq => {
                let (name, _, endpoint) = self.peer.call(move |p| p.event(1, d).ok()).await?;
                (name, endpoint)
            }
        };
        self.note(&name, &endpoint);
        Some(name)
    }

    /// Logs events until one named `last`.
    async fn until(&mut self, last: &str) {
        loop {
            match self.next_event(T).await {
                Some(name) if name == last => return,
                Some(_) => {}
                None => panic!("no {last} event within {T:?}; so far {:?}", self.log),
            }
        }
    }

    /// Logs whatever events come within [`SETTLE`] of the last one.
    async fn settle(&mut self) {
        while self.next_event(SETTLE).await.is_some() {}
    }

    async fn bind(&mut self, want: &str) -> String {
        let want = want.to_owned();
        let got = match &self.watched {
            Watched::Omq(Some(s), _) => s.bind(want.as_str()).await.expect("bind").to_string(),
            Watched::Omq(None, _) => unreachable!("closed"),
            Watched::Zmq => self.peer.call(move |p| p.bind(1, &want).unwrap()).await,
        };
        self.endpoint = got.clone();
        got
    }

    async fn connect(&mut self, endpoint: &str) {
        self.endpoint = endpoint.to_owned();
        let ep = endpoint.to_owned();
        match &self.watched {
            Watched::Omq(Some(s), _) => s.connect(ep.as_str()).await.expect("connect"),
            Watched::Omq(None, _) => unreachable!("closed"),
            Watched::Zmq => self.peer.call(move |p| p.connect(1, &ep).unwrap()).await,
        }
    }

    async fn unbind(&mut self) {
        let ep = self.endpoint.clone();
        match &self.watched {
            Watched::Omq(Some(s), _) => s.unbind(ep.as_str()).await.expect("unbind"),
            Watched::Omq(None, _) => unreachable!("closed"),
            Watched::Zmq => self.peer.call(move |p| p.unbind(1, &ep).unwrap()).await,
        }
    }

    async fn disconnect(&mut self) {
        let ep = self.endpoint.clone();
        match &self.watched {
            Watched::Omq(Some(s), _) => s.disconnect(ep.as_str()).await.expect("disconnect"),
            Watched::Omq(None, _) => unreachable!("closed"),
            Watched::Zmq => self.peer.call(move |p| p.disconnect(1, &ep).unwrap()).await,
        }
    }

    /// Closes the watched socket and logs the events up to MONITOR_STOPPED.
    async fn close(&mut self) {
        match &mut self.watched {
            Watched::Omq(s, _) => s.take().expect("open").close().await.expect("close"),
            Watched::Zmq => self.peer.call(|p| p.close(1).unwrap()).await,
        }
        self.until("MONITOR_STOPPED").await;
    }

    /// A libzmq socket `id` of `kind` in the peer, with LINGER 0.
    async fn zmq_socket(&self, id: u32, kind: &'static str) {
        self.peer
            .call(move |p| {
                p.socket(id, kind).unwrap();
                p.setsockopt(id, "LINGER", 0).unwrap();
            })
            .await;
    }
}

static UNIQUE: AtomicU64 = AtomicU64::new(0);

/// An endpoint nothing has bound yet: a fresh ipc path, or any free loopback port.
fn fresh(transport: Transport) -> String {
    match transport {
        Transport::Tcp => "tcp://127.0.0.1:0".into(),
        Transport::Ipc => format!(
            "ipc:///tmp/omq-monitor-{}-{}.sock",
            std::process::id(),
            UNIQUE.fetch_add(1, Ordering::Relaxed)
        ),
    }
}

/// The event log of `scenario` over `transport`, with the watched socket omq's (`omq`) or
/// libzmq's.
async fn log_of<R: Runtime>(
    peer: &AsyncPeer,
    scenario: MonitorScenario,
    transport: Transport,
    omq: bool,
) -> Vec<String> {
    use MonitorScenario as M;
    let (omq_type, zmq_type) = match scenario {
        M::ConnectReconnect | M::ConnectRefused => (SocketType::Push, "PUSH"),
        M::BindAcceptUnbind | M::IncompatiblePeer => (SocketType::Pull, "PULL"),
    };
    let ivl = Duration::from_millis(RECONNECT_IVL_MS as u64);
    let watched = if omq {
        let options = Options::default()
            .linger(Some(Duration::ZERO))
            .reconnect_ivl(Some(ivl));
        let s = Socket::<R>::new(omq_type, options).expect("socket");
        let monitor = s.monitor();
        Watched::Omq(Some(s), monitor)
    } else {
        peer.call(move |p| {
            p.socket(1, zmq_type).unwrap();
            p.setsockopt(1, "LINGER", 0).unwrap();
            p.setsockopt(1, "RECONNECT_IVL", OptValue::from(RECONNECT_IVL_MS))
                .unwrap();
            p.monitor(1).unwrap();
        })
        .await;
        Watched::Zmq
    };
    let mut run = Run {
        watched,
        peer,
        endpoint: String::new(),
        log: Vec::new(),
    };
    match scenario {
        M::ConnectReconnect => {
            run.zmq_socket(2, "PULL").await;
            let want = fresh(transport);
            let ep = peer.call(move |p| p.bind(2, &want).unwrap()).await;
            run.connect(&ep).await;
            run.until("HANDSHAKE_SUCCEEDED").await;
            peer.call(|p| p.close(2).unwrap()).await;
            run.until("CONNECT_RETRIED").await;
            run.zmq_socket(3, "PULL").await;
            let again = ep.clone();
            peer.call(move |p| p.bind(3, &again).unwrap()).await;
            run.until("HANDSHAKE_SUCCEEDED").await;
            run.disconnect().await;
            run.settle().await;
            run.close().await;
            peer.call(|p| p.close(3).unwrap()).await;
        }
        M::BindAcceptUnbind => {
            let ep = run.bind(&fresh(transport)).await;
            run.until("LISTENING").await;
            for id in [2, 3] {
                run.zmq_socket(id, "PUSH").await;
                let ep = ep.clone();
                peer.call(move |p| p.connect(id, &ep).unwrap()).await;
                run.until("HANDSHAKE_SUCCEEDED").await;
                if id == 2 {
                    peer.call(|p| p.close(2).unwrap()).await;
                    run.until("DISCONNECTED").await;
                }
            }
            run.unbind().await;
            run.settle().await;
            run.close().await;
            peer.call(|p| p.close(3).unwrap()).await;
        }
        M::IncompatiblePeer => {
            let ep = run.bind(&fresh(transport)).await;
            run.until("LISTENING").await;
            let client = std::thread::spawn(move || raw_pull_client(&ep));
            run.until("DISCONNECTED").await;
            run.settle().await;
            client.join().expect("raw client");
            run.close().await;
        }
        M::ConnectRefused => {
            let port = reserve_tcp_port();
            let nowhere = match transport {
                Transport::Tcp => port.endpoint(),
                Transport::Ipc => fresh(transport),
            };
            run.connect(&nowhere).await;
            run.until("CONNECT_RETRIED").await;
            run.close().await;
        }
    }
    run.log
}

/// Runs `scenario` over `transport` with libzmq's socket watched, then omq's on backend `B`,
/// and asserts the two event logs are the same.
pub fn compare<B: Backend>(scenario: MonitorScenario, transport: Transport) {
    B::block_on(async move {
        let peer = AsyncPeer::spawn().unwrap_or_else(|e| panic!("{e}"));
        let libzmq = log_of::<B::R>(&peer, scenario, transport, false).await;
        let peer = AsyncPeer::spawn().unwrap_or_else(|e| panic!("{e}"));
        let omq = log_of::<B::R>(&peer, scenario, transport, true).await;
        assert_eq!(
            omq,
            libzmq,
            "{scenario:?} over {transport:?} on {}: omq's monitor (left) against libzmq's \
             (right)",
            B::NAME
        );
    });
}

/// Connects to `endpoint` (tcp or ipc) without a ZeroMQ library, sends a NULL greeting and a
/// READY saying Socket-Type PULL, and reads until the other side hangs up.
fn raw_pull_client(endpoint: &str) {
    use std::io::{Read, Write};
    let mut hello = Vec::with_capacity(64 + 28);
    hello.extend_from_slice(&[0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0x7f, 3, 1]);
    let mut mechanism = [0u8; 20];
    mechanism[..4].copy_from_slice(b"NULL");
    hello.extend_from_slice(&mechanism);
    hello.extend_from_slice(&[0u8; 32]); // as-server 0, then the filler
    let body: Vec<u8> = [
        &b"\x05READY\x0bSocket-Type"[..],
        &4u32.to_be_bytes(),
        b"PULL",
    ]
    .concat();
    hello.extend_from_slice(&[0x04, body.len() as u8]);
    hello.extend_from_slice(&body);
    let timeout = Some(T);
    let mut stream: Box<dyn ReadWrite> = if let Some(path) = endpoint.strip_prefix("ipc://") {
        let s = std::os::unix::net::UnixStream::connect(path).expect("ipc connect");
        s.set_read_timeout(timeout).unwrap();
        Box::new(s)
    } else {
        let addr = endpoint.strip_prefix("tcp://").expect("tcp or ipc");
        let s = std::net::TcpStream::connect(addr).expect("tcp connect");
        s.set_read_timeout(timeout).unwrap();
        Box::new(s)
    };
    stream.write_all(&hello).expect("greeting and READY");
    let mut sink = Vec::new();
    // Ends at the hang-up (or a reset); a read timeout means the peer kept the connection.
    if let Err(e) = stream.read_to_end(&mut sink) {
        assert_ne!(e.kind(), std::io::ErrorKind::WouldBlock, "never hung up");
        assert_ne!(e.kind(), std::io::ErrorKind::TimedOut, "never hung up");
    }
}

trait ReadWrite: std::io::Read + std::io::Write {}
impl<T: std::io::Read + std::io::Write> ReadWrite for T {}
