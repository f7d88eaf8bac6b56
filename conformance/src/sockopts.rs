//! The connection options (TCP_KEEPALIVE*, SNDBUF, RCVBUF, TOS, TCP_MAXRT, BINDTODEVICE,
//! BACKLOG, IPV6, CONNECT_TIMEOUT) on every backend: each is read back from the real sockets
//! with getsockopt, or its effect observed. The cases join `api_suite!`.

use std::collections::HashSet;
use std::os::fd::BorrowedFd;
use std::time::Duration;

use futures_util::StreamExt;
use omq_driver::{EventKind, Message, Options, Runtime, Socket, SocketType};
use socket2::SockRef;

use crate::api::{within, within_for};

/// The cases.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum SockoptCase {
    /// Every per-socket option, read back on the listener, the accepted and the connected
    /// socket.
    ReadBack,
    /// IPV6: `tcp://*` serves `[::1]` only with the option.
    Ipv6,
    /// CONNECT_TIMEOUT: a connect that hangs is given up and retried.
    ConnectTimeout,
}

/// Runs one case on backend `B`.
pub fn run_sockopt_case<B: crate::backend::Backend>(case: SockoptCase) {
    B::block_on(run::<B::R>(case));
}

/// What one tcp socket of this process looks like.
#[derive(Debug)]
struct Found {
    local_port: u16,
    peer_port: Option<u16>,
    keepalive: bool,
    idle: Duration,
    interval: Duration,
    retries: u32,
    sndbuf: usize,
    rcvbuf: usize,
    tos: u32,
    user_timeout: Option<Duration>,
    device: Option<Vec<u8>>,
}

/// Every IPv4 tcp socket among this process's descriptors, with its options (each test runs in
/// a process of its own under nextest, so these are the test's own).
#[allow(unsafe_code)]
fn tcp_sockets() -> Vec<Found> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return out;
    };
    for entry in dir.flatten() {
        let Ok(fd) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let is_socket = std::fs::read_link(entry.path())
            .is_ok_and(|t| t.to_string_lossy().starts_with("socket:"));
        if !is_socket {
            continue;
        }
        // SAFETY: the descriptor is open (listed just now) and stays open for this loop
        // iteration: the sockets under test live until the test's end, and only reads happen.
        let fd = unsafe { BorrowedFd::borrow_raw(fd) };
        let s = SockRef::from(&fd);
        let Ok(local) = s.local_addr() else { continue };
        let Some(local) = local.as_socket_ipv4() else {
            continue;
        };
        if !matches!(s.r#type(), Ok(socket2::Type::STREAM)) {
            continue;
        }
        out.push(Found {
            local_port: local.port(),
            peer_port: s
                .peer_addr()
                .ok()
                .and_then(|a| a.as_socket_ipv4())
                .map(|a| a.port()),
            keepalive: s.keepalive().unwrap_or(false),
            idle: s.tcp_keepalive_time().unwrap_or_default(),
            interval: s.tcp_keepalive_interval().unwrap_or_default(),
            retries: s.tcp_keepalive_retries().unwrap_or_default(),
            sndbuf: s.send_buffer_size().unwrap_or_default(),
            rcvbuf: s.recv_buffer_size().unwrap_or_default(),
            tos: s.tos_v4().unwrap_or_default(),
            user_timeout: s.tcp_user_timeout().ok().flatten(),
            device: s.device().ok().flatten(),
        });
    }
    out
}

/// The listen backlog of the tcp listener on `port`, as `ss` shows it (Send-Q of a listener).
fn backlog_of(port: u16) -> Option<u32> {
    let out = std::process::Command::new("ss")
        .args(["-ltnH", &format!("sport = :{port}")])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().next()?;
    line.split_whitespace().nth(2)?.parse().ok()
}

fn port_of(endpoint: &str) -> u16 {
    endpoint.rsplit(':').next().unwrap().parse().unwrap()
}

async fn run<R: Runtime>(case: SockoptCase) {
    match case {
        SockoptCase::ReadBack => {
            let opts = || {
                Options::default()
                    .tcp_keepalive(Some(true))
                    .tcp_keepalive_idle(Some(Duration::from_secs(31)))
                    .tcp_keepalive_intvl(Some(Duration::from_secs(7)))
                    .tcp_keepalive_cnt(Some(4))
                    .send_buffer(Some(96 * 1024))
                    .recv_buffer(Some(80 * 1024))
                    .tos(Some(0x28))
                    .tcp_maxrt(Some(Duration::from_millis(7500)))
                    .bind_to_device(Some("lo".into()))
                    .backlog(7)
            };
            let pull = Socket::<R>::new(SocketType::Pull, opts()).unwrap();
            let ep = pull.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
            let push = Socket::<R>::new(SocketType::Push, opts()).unwrap();
            push.connect(&ep).await.unwrap();
            within::<R, _>(push.send(Message::from("x"))).await.unwrap();
            within::<R, _>(pull.recv()).await.unwrap();
            let port = port_of(&ep);
            let all = tcp_sockets();
            let listener = all
                .iter()
                .find(|f| f.local_port == port && f.peer_port.is_none());
            let accepted = all
                .iter()
                .find(|f| f.local_port == port && f.peer_port.is_some());
            let connected = all.iter().find(|f| f.peer_port == Some(port));
            for (what, f) in [
                ("listener", listener),
                ("accepted", accepted),
                ("connected", connected),
            ] {
                let f = f.unwrap_or_else(|| panic!("no {what} socket among {all:?}"));
                assert!(f.keepalive, "{what}: SO_KEEPALIVE {f:?}");
                assert_eq!(f.idle, Duration::from_secs(31), "{what}: TCP_KEEPIDLE");
                assert_eq!(f.interval, Duration::from_secs(7), "{what}: TCP_KEEPINTVL");
                assert_eq!(f.retries, 4, "{what}: TCP_KEEPCNT");
                // The kernel doubles what it is given (for its own bookkeeping).
                assert!(f.sndbuf >= 96 * 1024, "{what}: SO_SNDBUF {}", f.sndbuf);
                assert!(f.rcvbuf >= 80 * 1024, "{what}: SO_RCVBUF {}", f.rcvbuf);
                assert_eq!(f.tos, 0x28, "{what}: IP_TOS");
                assert_eq!(
                    f.user_timeout,
                    Some(Duration::from_millis(7500)),
                    "{what}: TCP_USER_TIMEOUT"
                );
                assert_eq!(f.device.as_deref(), Some(&b"lo"[..]), "{what}: device");
            }
            assert_eq!(backlog_of(port), Some(7), "BACKLOG");
            // Unset options leave the system's defaults.
            let plain = Socket::<R>::new(SocketType::Pull, Options::default()).unwrap();
            let ep2 = plain.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
            let port2 = port_of(&ep2);
            let l2 = tcp_sockets()
                .into_iter()
                .find(|f| f.local_port == port2 && f.peer_port.is_none())
                .unwrap();
            assert!(!l2.keepalive && l2.tos == 0 && l2.user_timeout.is_none());
            assert_eq!(backlog_of(port2), Some(100), "libzmq's default backlog");
        }
        SockoptCase::Ipv6 => {
            for ipv6 in [true, false] {
                let pull =
                    Socket::<R>::new(SocketType::Pull, Options::default().ipv6(ipv6)).unwrap();
                let ep = pull.bind("tcp://*:0").await.unwrap().to_string();
                let port = port_of(&ep);
                let push = Socket::<R>::new(SocketType::Push, Options::default()).unwrap();
                push.connect(&format!("tcp://[::1]:{port}")).await.unwrap();
                push.send(Message::from("v6")).await.unwrap();
                let got = within_for::<R, _>(Duration::from_millis(500), pull.recv()).await;
                assert_eq!(
                    got.is_some(),
                    ipv6,
                    "tcp://* with IPV6={ipv6} serving [::1]"
                );
            }
        }
        SockoptCase::ConnectTimeout => {
            // A listener nobody accepts on, with a backlog of one: once its queue is full the
            // kernel drops further SYNs, so a connect hangs (for minutes of SYN retries).
            let hog =
                socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
            hog.bind(
                &"127.0.0.1:0"
                    .parse::<std::net::SocketAddr>()
                    .unwrap()
                    .into(),
            )
            .unwrap();
            hog.listen(0).unwrap();
            let addr = hog.local_addr().unwrap().as_socket().unwrap();
            let mut fillers = Vec::new();
            for _ in 0..4 {
                let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
                    .unwrap();
                s.set_nonblocking(true).unwrap();
                let _ = s.connect(&addr.into());
                fillers.push(s);
            }
            let push = Socket::<R>::new(
                SocketType::Push,
                Options::default()
                    .connect_timeout(Some(Duration::from_millis(100)))
                    .reconnect_ivl(Some(Duration::from_millis(50))),
            )
            .unwrap();
            let mut events = push.monitor();
            push.connect(&format!("tcp://{addr}")).await.unwrap();
            let mut retried = HashSet::new();
            let seen = within_for::<R, _>(Duration::from_secs(20), async {
                while let Some(e) = events.next().await {
                    if e.kind == EventKind::ConnectRetried {
                        retried.insert(retried.len());
                        if retried.len() >= 3 {
                            return;
                        }
                    }
                }
            })
            .await;
            assert!(
                seen.is_some(),
                "a hanging connect was not given up ({} retries)",
                retried.len()
            );
            drop(fillers);
        }
    }
}

/// Instantiates every case for a backend (invoked from `api_suite!`).
#[macro_export]
macro_rules! sockopts_suite {
    ($backend:ty) => {
        mod sockopts {
            use $crate::sockopts::{run_sockopt_case, SockoptCase};
            $crate::sockopts_suite!(@cases $backend;
                connection_options_are_set_on_every_socket: ReadBack,
                ipv6_makes_star_dual_stack: Ipv6,
                connect_timeout_gives_up_a_hanging_connect: ConnectTimeout
            );
        }
    };
    (@cases $backend:ty; $($name:ident : $case:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                run_sockopt_case::<$backend>(SockoptCase::$case);
            }
        )*
    };
}
