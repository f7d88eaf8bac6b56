//! The draft socket types against libzmq 4.3.5 built with its draft API (the draft peer, see
//! [`crate::libzmq_peer::draft_peer_binary`]), written once and run on every backend, over tcp
//! and ipc, with either side binding: CLIENT/SERVER both ways, SCATTER/GATHER both ways,
//! CHANNEL, and PEER with `connect_peer` on either side.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use omq_driver::{Message, Options, Runtime, Socket, SocketType};

use crate::async_peer::AsyncPeer;
use crate::backend::Backend;

const T: Duration = Duration::from_secs(10);

/// The draft interop cases.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum DraftCase {
    /// omq CLIENT ↔ libzmq SERVER.
    ClientToServer,
    /// libzmq CLIENT ↔ omq SERVER: replies by routing id.
    ServerFromClient,
    /// omq SCATTER → libzmq GATHER.
    ScatterToGather,
    /// libzmq SCATTER → omq GATHER.
    GatherFromScatter,
    /// CHANNEL both ways.
    Channel,
    /// omq PEER ↔ libzmq PEER, each addressing the other by routing id.
    Peer,
    /// omq RADIO → libzmq DISH: libzmq's JOIN reaches omq, only its group arrives.
    RadioToDish,
    /// libzmq RADIO → omq DISH: omq's JOIN reaches libzmq, the group comes with the body.
    DishFromRadio,
}

/// Transports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DraftTransport {
    /// tcp on loopback.
    Tcp,
    /// ipc.
    Ipc,
}

static UNIQUE: AtomicU64 = AtomicU64::new(0);

/// Runs one case on backend `B`.
pub fn run_draft<B: Backend>(case: DraftCase, tr: DraftTransport, omq_binds: bool) {
    B::block_on(async move {
        let peer = AsyncPeer::spawn_draft().unwrap_or_else(|e| panic!("{e}"));
        // The draft build, not the system's libzmq (4.3.4 on Debian 12, without drafts).
        let version = peer.call(|p| p.version().to_owned()).await;
        assert_eq!(
            version, "4.3.5",
            "the draft peer runs on the libzmq built with drafts"
        );
        run::<B::R>(&peer, case, tr, omq_binds).await;
    });
}

/// RADIO and DISH over `udp://` against the draft libzmq: the DISH binds, the RADIO connects;
/// no JOIN crosses (the DISH filters), and each message is one datagram as libzmq writes it.
/// `omq_radio`: omq is the RADIO (else the DISH).
pub fn run_draft_udp<B: Backend>(omq_radio: bool) {
    B::block_on(async move {
        let peer = AsyncPeer::spawn_draft().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(peer.call(|p| p.version().to_owned()).await, "4.3.5");
        udp::<B::R>(&peer, omq_radio).await;
    });
}

async fn udp<R: Runtime>(peer: &AsyncPeer, omq_radio: bool) {
    let o = Options::default()
        .recv_timeout(Some(T))
        .send_timeout(Some(T));
    // Fits one datagram (libzmq reads at most 8 KiB of one).
    let bodies = [
        b"one".to_vec(),
        b"\x00\xff binary".to_vec(),
        vec![7u8; 8000],
    ];
    if omq_radio {
        // libzmq binds a port found free a moment ago (its udp bind has no wildcard port).
        let port = std::net::UdpSocket::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let ep = format!("udp://127.0.0.1:{port}");
        let bind_at = ep.clone();
        peer.call(move |p| {
            p.socket(1, "DISH").unwrap();
            p.setsockopt(1, "LINGER", 0).unwrap();
            p.bind(1, &bind_at).unwrap();
            p.join(1, b"news", true).unwrap();
        })
        .await;
        let omq = Socket::<R>::new(SocketType::Radio, o).unwrap();
        omq.connect(&ep).await.unwrap();
        // libzmq opens its udp socket on its I/O thread after `zmq_bind` returns: what is sent
        // before that is lost, as udp loses it. Probe until one arrives, then count exactly.
        let mut arrived = false;
        for _ in 0..200 {
            omq.send(Message::from("probe").with_group("news"))
                .await
                .unwrap();
            if peer
                .call(|p| p.recvx(1, Duration::from_millis(20)))
                .await
                .is_ok()
            {
                arrived = true;
                break;
            }
        }
        assert!(arrived, "libzmq's DISH never received a probe");
        radio_to_libzmq_dish(&omq, peer, bodies).await;
    } else {
        let omq = Socket::<R>::new(SocketType::Dish, o).unwrap();
        let ep = omq.bind("udp://127.0.0.1:0").await.unwrap().to_string();
        omq.join("news").unwrap();
        peer.call(move |p| {
            p.socket(1, "RADIO").unwrap();
            p.setsockopt(1, "LINGER", 0).unwrap();
            p.connect(1, &ep).unwrap();
        })
        .await;
        for m in bodies {
            let body = m.clone();
            peer.call(move |p| {
                p.sendx(1, 0, Some(b"weather"), &body).unwrap();
                p.sendx(1, 0, Some(b"news"), &body).unwrap();
            })
            .await;
            let got = omq.recv().await.unwrap();
            assert_eq!((got.group(), body_of(&got)), (Some(&b"news"[..]), m));
        }
    }
}

/// Single parts: text, binary with zero bytes, and a large one.
/// With libzmq's DISH (socket 1) joined to "news" and reached: its queue drained of probes,
/// each body is published in "weather" and in "news" by the omq RADIO, and only the "news" one
/// arrives, in order.
async fn radio_to_libzmq_dish<R: Runtime>(
    omq: &Socket<R>,
    peer: &AsyncPeer,
    bodies: impl IntoIterator<Item = Vec<u8>>,
) {
    while peer
        .call(|p| p.recvx(1, Duration::from_millis(50)))
        .await
        .is_ok()
    {}
    for m in bodies {
        omq.send(Message::from(m.clone()).with_group("weather"))
            .await
            .unwrap();
        omq.send(Message::from(m.clone()).with_group("news"))
            .await
            .unwrap();
        let got = peer.call(|p| p.recvx(1, T)).await.unwrap();
        assert_eq!((got.group.as_deref(), got.part), (Some(&b"news"[..]), m));
    }
}

fn singles() -> Vec<Vec<u8>> {
    vec![
        b"one".to_vec(),
        b"\x00\xff binary".to_vec(),
        vec![7u8; 100_000],
    ]
}

/// The omq socket linked to the peer's socket 1, and the endpoint the binding side bound.
/// PEERs are left to dial in the case itself, with `connect_peer`.
async fn link<R: Runtime>(
    peer: &AsyncPeer,
    omq_type: SocketType,
    zmq_type: &'static str,
    tr: DraftTransport,
    omq_binds: bool,
) -> (Socket<R>, String) {
    let o = Options::default()
        .recv_timeout(Some(T))
        .send_timeout(Some(T));
    let omq = Socket::<R>::new(omq_type, o).unwrap();
    let ep = match tr {
        DraftTransport::Tcp => None,
        DraftTransport::Ipc => Some(format!(
            "ipc:///tmp/omq-draft-{}-{}.sock",
            std::process::id(),
            UNIQUE.fetch_add(1, Ordering::Relaxed)
        )),
    };
    peer.call(move |p| {
        p.socket(1, zmq_type).unwrap();
        p.setsockopt(1, "LINGER", 0).unwrap();
    })
    .await;
    let dials = omq_type != SocketType::Peer;
    let bound = if omq_binds {
        let want = ep.unwrap_or_else(|| "tcp://127.0.0.1:0".into());
        let bound = omq.bind(&want).await.unwrap().to_string();
        if dials {
            let ep = bound.clone();
            peer.call(move |p| p.connect(1, &ep).unwrap()).await;
        }
        bound
    } else {
        let want = ep.unwrap_or_else(|| "tcp://127.0.0.1:*".into());
        let bound = peer.call(move |p| p.bind(1, &want).unwrap()).await;
        if dials {
            omq.connect(&bound).await.unwrap();
        }
        bound
    };
    (omq, bound)
}

async fn zmq_recvx(peer: &AsyncPeer) -> (u32, Vec<u8>) {
    let m = peer.call(|p| p.recvx(1, T)).await.expect("libzmq received");
    (m.rid, m.part)
}

async fn zmq_sendx(peer: &AsyncPeer, rid: u32, part: Vec<u8>) {
    peer.call(move |p| p.sendx(1, rid, None, &part))
        .await
        .expect("libzmq sent");
}

fn body_of(m: &Message) -> Vec<u8> {
    body(m)
}

fn body(m: &Message) -> Vec<u8> {
    assert_eq!(m.len(), 1, "single part");
    m.parts()[0].to_vec()
}

async fn run<R: Runtime>(peer: &AsyncPeer, case: DraftCase, tr: DraftTransport, binds: bool) {
    use SocketType as S;
    match case {
        DraftCase::ClientToServer => {
            let (omq, _) = link::<R>(peer, S::Client, "SERVER", tr, binds).await;
            for m in singles() {
                omq.send(Message::from(m.clone())).await.unwrap();
                let (rid, got) = zmq_recvx(peer).await;
                assert_eq!(got, m);
                assert_ne!(rid, 0, "libzmq's SERVER numbers its client");
                let mut reply = m.clone();
                reply.reverse();
                zmq_sendx(peer, rid, reply.clone()).await;
                assert_eq!(body(&omq.recv().await.unwrap()), reply);
            }
        }
        DraftCase::ServerFromClient => {
            let (omq, _) = link::<R>(peer, S::Server, "CLIENT", tr, binds).await;
            for m in singles() {
                zmq_sendx(peer, 0, m.clone()).await;
                let got = omq.recv().await.unwrap();
                assert_eq!(body(&got), m);
                let id = got.routing_id().expect("omq's SERVER numbers its client");
                omq.send(Message::from(b"re".to_vec()).with_routing_id(id))
                    .await
                    .unwrap();
                assert_eq!(zmq_recvx(peer).await.1, b"re");
            }
        }
        DraftCase::ScatterToGather => {
            let (omq, _) = link::<R>(peer, S::Scatter, "GATHER", tr, binds).await;
            for m in singles() {
                omq.send(Message::from(m.clone())).await.unwrap();
                assert_eq!(zmq_recvx(peer).await.1, m);
            }
        }
        DraftCase::GatherFromScatter => {
            let (omq, _) = link::<R>(peer, S::Gather, "SCATTER", tr, binds).await;
            for m in singles() {
                zmq_sendx(peer, 0, m.clone()).await;
                assert_eq!(body(&omq.recv().await.unwrap()), m);
            }
        }
        DraftCase::Channel => {
            let (omq, _) = link::<R>(peer, S::Channel, "CHANNEL", tr, binds).await;
            for m in singles() {
                omq.send(Message::from(m.clone())).await.unwrap();
                assert_eq!(zmq_recvx(peer).await.1, m);
                zmq_sendx(peer, 0, m.clone()).await;
                assert_eq!(body(&omq.recv().await.unwrap()), m);
            }
        }
        DraftCase::RadioToDish => {
            let (omq, _) = link::<R>(peer, S::Radio, "DISH", tr, binds).await;
            peer.call(|p| p.join(1, b"news", true)).await.unwrap();
            // Send until the JOIN has arrived, then exactly what follows.
            let mut first = None;
            for _ in 0..200 {
                omq.send(Message::from("probe").with_group("news"))
                    .await
                    .unwrap();
                if let Ok(m) = peer.call(|p| p.recvx(1, Duration::from_millis(20))).await {
                    first = Some(m);
                    break;
                }
            }
            let first = first.expect("libzmq's JOIN never arrived");
            assert_eq!(first.group.as_deref(), Some(&b"news"[..]));
            radio_to_libzmq_dish(&omq, peer, singles()).await;
        }
        DraftCase::DishFromRadio => {
            let (omq, _) = link::<R>(peer, S::Dish, "RADIO", tr, binds).await;
            omq.join("news").unwrap();
            let mut joined = false;
            for _ in 0..200 {
                peer.call(|p| p.sendx(1, 0, Some(b"news"), b"probe"))
                    .await
                    .unwrap();
                let r = futures_util::future::select(
                    Box::pin(omq.recv()),
                    Box::pin(R::sleep_until(R::now() + Duration::from_millis(20))),
                )
                .await;
                if let futures_util::future::Either::Left((Ok(_), _)) = r {
                    joined = true;
                    break;
                }
            }
            assert!(joined, "omq's JOIN never reached libzmq");
            while omq.try_recv().is_ok() {}
            for m in singles() {
                let body = m.clone();
                peer.call(move |p| {
                    p.sendx(1, 0, Some(b"weather"), &body).unwrap();
                    p.sendx(1, 0, Some(b"news"), &body).unwrap();
                })
                .await;
                let got = omq.recv().await.unwrap();
                assert_eq!((got.group(), body_of(&got)), (Some(&b"news"[..]), m));
            }
        }
        DraftCase::Peer => {
            let (omq, ep) = link::<R>(peer, S::Peer, "PEER", tr, binds).await;
            if binds {
                // libzmq dials omq and speaks first, by the id connect_peer gave it.
                let to_omq = peer.call(move |p| p.connect_peer(1, &ep)).await.unwrap();
                for m in singles() {
                    zmq_sendx(peer, to_omq, m.clone()).await;
                    let got = omq.recv().await.unwrap();
                    assert_eq!(body(&got), m);
                    let id = got.routing_id().unwrap();
                    omq.send(Message::from(m.clone()).with_routing_id(id))
                        .await
                        .unwrap();
                    assert_eq!(zmq_recvx(peer).await, (to_omq, m));
                }
            } else {
                let to_zmq = omq.connect_peer(&ep).await.unwrap();
                for m in singles() {
                    omq.send(Message::from(m.clone()).with_routing_id(to_zmq))
                        .await
                        .unwrap();
                    let (rid, got) = zmq_recvx(peer).await;
                    assert_eq!(got, m);
                    zmq_sendx(peer, rid, m.clone()).await;
                    let back = omq.recv().await.unwrap();
                    assert_eq!((back.routing_id(), body(&back)), (Some(to_zmq), m));
                }
            }
        }
    }
}

/// Instantiates every draft case over tcp and ipc with either side binding, for a backend.
#[macro_export]
macro_rules! draft_suite {
    ($backend:ty) => {
        $crate::draft_suite!(@cases $backend;
            client_to_server: ClientToServer, server_from_client: ServerFromClient,
            scatter_to_gather: ScatterToGather, gather_from_scatter: GatherFromScatter,
            channel: Channel, peer: Peer, radio_to_dish: RadioToDish,
            dish_from_radio: DishFromRadio
        );
    };
    (@cases $backend:ty; $($name:ident : $case:ident),* $(,)?) => {
        mod draft {
            mod udp {
                #[test]
                fn radio_to_libzmq_dish() {
                    $crate::draft::run_draft_udp::<$backend>(true);
                }
                #[test]
                fn dish_from_libzmq_radio() {
                    $crate::draft::run_draft_udp::<$backend>(false);
                }
            }
            $(
                mod $name {
                    use $crate::draft::{run_draft, DraftCase, DraftTransport};
                    #[test]
                    fn tcp_omq_binds() {
                        run_draft::<$backend>(DraftCase::$case, DraftTransport::Tcp, true);
                    }
                    #[test]
                    fn tcp_libzmq_binds() {
                        run_draft::<$backend>(DraftCase::$case, DraftTransport::Tcp, false);
                    }
                    #[test]
                    fn ipc_omq_binds() {
                        run_draft::<$backend>(DraftCase::$case, DraftTransport::Ipc, true);
                    }
                    #[test]
                    fn ipc_libzmq_binds() {
                        run_draft::<$backend>(DraftCase::$case, DraftTransport::Ipc, false);
                    }
                }
            )*
        }
    };
}
