//! The draft socket types against pyomq (omq.rs's Python binding, from PyPI), an independent
//! implementation, over tcp, either side binding, run on every backend: CLIENT/SERVER both
//! ways, SCATTER/GATHER both ways, CHANNEL, and RADIO/DISH both ways ([`run_pyomq_groups`];
//! over tcp only: pyomq 0.21 starts each udp datagram with a byte 0x01 that libzmq 4.3.5
//! neither writes nor reads, and omq follows libzmq). `conformance/pyomq/draft_peer.py` plays pyomq's side; a missing
//! venv fails the test (see [`crate::pyomq::python`]).

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use omq_driver::{Message, Options, Runtime, Socket, SocketType};

use crate::backend::Backend;

const COUNT: usize = 50;
const T: Duration = Duration::from_secs(20);

/// The cases.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum PyomqDraft {
    /// omq CLIENT → pyomq SERVER, which answers by routing id.
    ClientToServer,
    /// pyomq CLIENT → omq SERVER, which answers by routing id.
    ServerFromClient,
    /// omq SCATTER → pyomq GATHER.
    ScatterToGather,
    /// pyomq SCATTER → omq GATHER.
    GatherFromScatter,
    /// omq CHANNEL ↔ pyomq CHANNEL.
    Channel,
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("pyomq/draft_peer.py")
}

struct Peer(Child);

impl Drop for Peer {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Starts pyomq's side and returns it with the line it printed (its endpoint, or
/// "connected").
fn spawn(kind: &str, role: &str, endpoint: Option<&str>) -> (Peer, String) {
    let (peer, first, _) = spawn_lines(kind, role, endpoint);
    (peer, first)
}

/// As [`spawn`], with the lines pyomq's side prints after the first, as they come.
fn spawn_lines(
    kind: &str,
    role: &str,
    endpoint: Option<&str>,
) -> (Peer, String, std::sync::mpsc::Receiver<String>) {
    let mut child = Command::new(crate::pyomq::python())
        .arg(script())
        .args([kind, role, &COUNT.to_string()])
        .args(endpoint)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the pyomq peer");
    let mut out = BufReader::new(child.stdout.take().expect("piped"));
    let mut line = String::new();
    out.read_line(&mut line).expect("read the pyomq peer");
    assert!(
        !line.is_empty(),
        "the pyomq peer exited before it was ready"
    );
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in out.lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                return;
            }
        }
    });
    (Peer(child), line.trim().to_string(), rx)
}

/// RADIO and DISH against pyomq (which gives a group's message as `[group, body]`) over tcp:
/// `omq_radio` says which side omq plays, `omq_binds` who binds. omq's RADIO probes until pyomq's DISH says it has joined, then sends
/// `m0, m1, ...` (with another group's messages between, which must not arrive); pyomq's
/// RADIO sends without end and omq's DISH takes `COUNT` consecutive ones.
pub fn run_pyomq_groups<B: Backend>(omq_radio: bool, omq_binds: bool) {
    B::block_on(groups::<B::R>(omq_radio, omq_binds));
}

async fn groups<R: Runtime>(omq_radio: bool, omq_binds: bool) {
    let o = Options::default()
        .recv_timeout(Some(T))
        .send_timeout(Some(T));
    let omq_type = if omq_radio {
        SocketType::Radio
    } else {
        SocketType::Dish
    };
    let py_kind = if omq_radio { "dish" } else { "radio" };
    let omq = Socket::<R>::new(omq_type, o).unwrap();
    if !omq_radio {
        omq.join("news").unwrap();
    }
    let (peer, lines) = if omq_binds {
        let ep = omq.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
        let (peer, _, lines) = spawn_lines(py_kind, "connect", Some(&ep));
        (peer, lines)
    } else {
        let (peer, ep, lines) = spawn_lines(py_kind, "bind", None);
        omq.connect(&ep).await.unwrap();
        (peer, lines)
    };
    if omq_radio {
        let deadline = R::now() + T;
        loop {
            assert!(R::now() < deadline, "pyomq's DISH never got a probe");
            omq.send(Message::from("probe").with_group("news"))
                .await
                .unwrap();
            if lines.try_recv().is_ok_and(|l| l == "joined") {
                break;
            }
            R::sleep_until(R::now() + Duration::from_millis(10)).await;
        }
        for i in 0..COUNT {
            omq.send(Message::from("x").with_group("weather"))
                .await
                .unwrap();
            omq.send(body(i).with_group("news")).await.unwrap();
        }
        finished::<R>(peer).await;
    } else {
        let first = omq.recv().await.unwrap();
        assert_eq!(first.group(), Some(&b"news"[..]));
        let start: usize = std::str::from_utf8(&first.parts()[0][1..])
            .unwrap()
            .parse()
            .unwrap();
        for i in 1..COUNT {
            let m = omq.recv().await.unwrap();
            assert_eq!(m.group(), Some(&b"news"[..]));
            assert_eq!(m, body(start + i));
        }
        drop(peer);
    }
}

/// Waits for pyomq's side to exit, without blocking the runtime (its sockets may still have
/// to serve it), and asserts it succeeded.
async fn finished<R: Runtime>(mut peer: Peer) {
    let deadline = R::now() + T + T;
    loop {
        if let Some(status) = peer.0.try_wait().expect("wait for the pyomq peer") {
            assert!(status.success(), "the pyomq peer failed: {status}");
            return;
        }
        assert!(R::now() < deadline, "the pyomq peer did not finish");
        R::sleep_until(R::now() + Duration::from_millis(10)).await;
    }
}

/// Runs one case on backend `B`.
pub fn run_pyomq_draft<B: Backend>(case: PyomqDraft, omq_binds: bool) {
    B::block_on(run::<B::R>(case, omq_binds));
}

fn body(i: usize) -> Message {
    Message::from(format!("m{i}"))
}

async fn run<R: Runtime>(case: PyomqDraft, omq_binds: bool) {
    use SocketType as S;
    let (omq_type, py_kind) = match case {
        PyomqDraft::ClientToServer => (S::Client, "server"),
        PyomqDraft::ServerFromClient => (S::Server, "client"),
        PyomqDraft::ScatterToGather => (S::Scatter, "gather"),
        PyomqDraft::GatherFromScatter => (S::Gather, "scatter"),
        PyomqDraft::Channel => (S::Channel, "channel"),
    };
    let o = Options::default()
        .recv_timeout(Some(T))
        .send_timeout(Some(T));
    let omq = Socket::<R>::new(omq_type, o).unwrap();
    let peer = if omq_binds {
        let ep = omq.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
        spawn(py_kind, "connect", Some(&ep)).0
    } else {
        let (peer, ep) = spawn(py_kind, "bind", None);
        omq.connect(&ep).await.unwrap();
        peer
    };
    match case {
        PyomqDraft::ClientToServer | PyomqDraft::Channel => {
            for i in 0..COUNT {
                omq.send(body(i)).await.unwrap();
                assert_eq!(omq.recv().await.unwrap(), body(i), "reply {i}");
            }
        }
        PyomqDraft::ServerFromClient => {
            for i in 0..COUNT {
                let m = omq.recv().await.unwrap();
                assert_eq!(m, body(i));
                let id = m.routing_id().expect("pyomq's client has an id here");
                omq.send(m.with_routing_id(id)).await.unwrap();
            }
        }
        PyomqDraft::ScatterToGather => {
            for i in 0..COUNT {
                omq.send(body(i)).await.unwrap();
            }
        }
        PyomqDraft::GatherFromScatter => {
            for i in 0..COUNT {
                assert_eq!(omq.recv().await.unwrap(), body(i));
            }
        }
    }
    finished::<R>(peer).await;
}

/// Instantiates every case, either side binding, for a backend.
#[macro_export]
macro_rules! pyomq_draft_suite {
    ($backend:ty) => {
        mod pyomq_draft {
            $crate::pyomq_draft_suite!(@cases $backend;
                client_to_server: ClientToServer, server_from_client: ServerFromClient,
                scatter_to_gather: ScatterToGather, gather_from_scatter: GatherFromScatter,
                channel: Channel
            );
        }
    };
    (@cases $backend:ty; $($name:ident : $case:ident),* $(,)?) => {
        mod groups {
            use $crate::pyomq_draft::run_pyomq_groups;
            #[test]
            fn radio_to_dish_omq_binds() {
                run_pyomq_groups::<$backend>(true, true);
            }
            #[test]
            fn radio_to_dish_pyomq_binds() {
                run_pyomq_groups::<$backend>(true, false);
            }
            #[test]
            fn dish_from_radio_omq_binds() {
                run_pyomq_groups::<$backend>(false, true);
            }
            #[test]
            fn dish_from_radio_pyomq_binds() {
                run_pyomq_groups::<$backend>(false, false);
            }
        }
        $(
            mod $name {
                use $crate::pyomq_draft::{run_pyomq_draft, PyomqDraft};
                #[test]
                fn omq_binds() {
                    run_pyomq_draft::<$backend>(PyomqDraft::$case, true);
                }
                #[test]
                fn pyomq_binds() {
                    run_pyomq_draft::<$backend>(PyomqDraft::$case, false);
                }
            }
        )*
    };
}
