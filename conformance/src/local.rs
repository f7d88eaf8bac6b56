//! omq-to-omq scenarios over tcp, ipc, inproc, lz4+tcp and zstd+tcp, written once and run on
//! every backend: each
//! standard socket pairing carries multipart messages (with empty and binary parts and a large
//! one) in every direction it allows.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use omq_driver::{Message, Options, Runtime, Socket, SocketType};

use crate::backend::Backend;

/// Transports for omq-to-omq scenarios.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocalTransport {
    /// TCP on loopback.
    Tcp,
    /// Unix domain sockets.
    Ipc,
    /// In-process.
    Inproc,
    /// `lz4+tcp://` on loopback: every part in the LZ4 envelope.
    Lz4Tcp,
    /// `zstd+tcp://` on loopback.
    ZstdTcp,
}

/// The pairings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Pairing {
    /// PUSH → PULL.
    PushPull,
    /// REQ ↔ REP.
    ReqRep,
    /// DEALER ↔ ROUTER.
    DealerRouter,
    /// DEALER ↔ REP.
    DealerRep,
    /// REQ ↔ ROUTER: the REQ's delimiter reaches the ROUTER as a part on every transport,
    /// in process too (REQ and REP carry it as a flag only between themselves).
    ReqRouter,
    /// PUB → SUB.
    PubSub,
    /// XSUB ↔ XPUB.
    XsubXpub,
    /// PAIR ↔ PAIR.
    Pair,
    /// CLIENT ↔ SERVER (draft, spec 41): two clients, replies by routing id.
    ClientServer,
    /// SCATTER → GATHER (draft, spec 49).
    ScatterGather,
    /// CHANNEL ↔ CHANNEL (draft, spec 52).
    Channel,
    /// PEER ↔ PEER (draft, spec 51): `connect_peer`'s id both ways.
    Peer,
    /// RADIO → DISH (draft, spec 48): groups joined, exact filtering.
    RadioDish,
}

impl Pairing {
    /// Every pairing.
    pub const ALL: [Pairing; 13] = [
        Pairing::PushPull,
        Pairing::ReqRep,
        Pairing::DealerRouter,
        Pairing::DealerRep,
        Pairing::ReqRouter,
        Pairing::PubSub,
        Pairing::XsubXpub,
        Pairing::Pair,
        Pairing::ClientServer,
        Pairing::ScatterGather,
        Pairing::Channel,
        Pairing::Peer,
        Pairing::RadioDish,
    ];
}

static UNIQUE: AtomicU64 = AtomicU64::new(0);

fn endpoint(t: LocalTransport, tag: &str) -> String {
    let n = UNIQUE.fetch_add(1, Ordering::Relaxed);
    let pid = std::process::id();
    match t {
        LocalTransport::Tcp => "tcp://127.0.0.1:0".into(),
        LocalTransport::Ipc => format!("ipc:///tmp/omq-local-{pid}-{tag}-{n}.sock"),
        LocalTransport::Inproc => format!("inproc://local-{tag}-{n}"),
        LocalTransport::Lz4Tcp => "lz4+tcp://127.0.0.1:0".into(),
        LocalTransport::ZstdTcp => "zstd+tcp://127.0.0.1:0".into(),
    }
}

fn msgs() -> Vec<Message> {
    vec![
        Message::from("one"),
        Message::multipart([&b"two"[..], b"", b"\x00\xff"]),
        Message::multipart([vec![5u8; 300_000], b"tail".to_vec()]),
        // Compressible and larger than the compressed transports' thresholds.
        Message::from(
            "{\"sensor\":\"t-1\",\"unit\":\"C\",\"value\":21.5},"
                .repeat(40)
                .into_bytes(),
        ),
    ]
}

/// Single parts, for the draft types: text, binary with a zero byte, and a large one.
fn singles() -> Vec<Message> {
    vec![
        Message::from("one"),
        Message::from(&b"\x00\xff binary"[..]),
        Message::from(vec![5u8; 300_000]),
    ]
}

async fn pair<R: Runtime>(
    a: SocketType,
    b: SocketType,
    t: LocalTransport,
    subscribe: bool,
) -> (Socket<R>, Socket<R>) {
    let o = Options::default()
        .recv_timeout(Some(Duration::from_secs(10)))
        .send_timeout(Some(Duration::from_secs(10)));
    let x = Socket::<R>::new(a, o.clone()).unwrap();
    let y = Socket::<R>::new(b, o).unwrap();
    if subscribe {
        y.subscribe("").unwrap();
    }
    let ep = x.bind(&endpoint(t, a.name())).await.unwrap().to_string();
    y.connect(&ep).await.unwrap();
    (x, y)
}

/// Runs one pairing over one transport on backend `B`.
pub fn run_local<B: Backend>(p: Pairing, t: LocalTransport) {
    B::block_on(run_on::<B::R>(p, t));
}

async fn run_on<R: Runtime>(p: Pairing, t: LocalTransport) {
    use SocketType as S;
    match p {
        Pairing::PushPull => {
            let (pull, push) = pair::<R>(S::Pull, S::Push, t, false).await;
            for m in msgs() {
                push.send(m.clone()).await.unwrap();
                let got = pull.recv().await.unwrap();
                assert_eq!(got, m);
                // Connection properties come with the handshake; inproc has none, as in libzmq.
                if t != LocalTransport::Inproc {
                    assert_eq!(got.property("Socket-Type"), Some(&b"PUSH"[..]));
                }
                if matches!(
                    t,
                    LocalTransport::Tcp | LocalTransport::Lz4Tcp | LocalTransport::ZstdTcp
                ) {
                    assert_eq!(got.property("Peer-Address"), Some(&b"127.0.0.1"[..]));
                }
            }
        }
        Pairing::ReqRep => {
            let (rep, req) = pair::<R>(S::Rep, S::Req, t, false).await;
            for m in msgs() {
                req.send(m.clone()).await.unwrap();
                let got = rep.recv().await.unwrap();
                assert_eq!(got, m);
                rep.send(got).await.unwrap();
                assert_eq!(req.recv().await.unwrap(), m);
            }
        }
        Pairing::DealerRouter => {
            let (router, dealer) = pair::<R>(S::Router, S::Dealer, t, false).await;
            for m in msgs() {
                dealer.send(m.clone()).await.unwrap();
                let mut got = router.recv().await.unwrap();
                let id = got.pop_front().unwrap();
                assert_eq!(got, m);
                got.push_front(id);
                router.send(got).await.unwrap();
                assert_eq!(dealer.recv().await.unwrap(), m);
            }
        }
        Pairing::DealerRep => {
            let (rep, dealer) = pair::<R>(S::Rep, S::Dealer, t, false).await;
            for m in msgs() {
                let mut out = m.clone();
                out.push_front(Vec::new());
                dealer.send(out.clone()).await.unwrap();
                let got = rep.recv().await.unwrap();
                assert_eq!(got, m);
                rep.send(got).await.unwrap();
                assert_eq!(dealer.recv().await.unwrap(), out);
            }
        }
        Pairing::ReqRouter => {
            let (router, req) = pair::<R>(S::Router, S::Req, t, false).await;
            for m in msgs() {
                req.send(m.clone()).await.unwrap();
                let mut got = router.recv().await.unwrap();
                let id = got.pop_front().unwrap();
                let delimiter = got.pop_front().unwrap();
                assert!(delimiter.is_empty(), "the delimiter arrives as a part");
                assert_eq!(got, m);
                got.push_front(delimiter);
                got.push_front(id);
                router.send(got).await.unwrap();
                assert_eq!(req.recv().await.unwrap(), m);
            }
        }
        Pairing::PubSub => {
            let (publ, sub) = pair::<R>(S::Pub, S::Sub, t, true).await;
            // Publish until the subscription has arrived, then everything must arrive.
            let probe = Message::from("probe");
            let quick = Duration::from_millis(20);
            let mut ready = false;
            for _ in 0..500 {
                publ.send(probe.clone()).await.unwrap();
                let r = futures_util::future::select(
                    Box::pin(sub.recv()),
                    Box::pin(R::sleep_until(R::now() + quick)),
                )
                .await;
                if let futures_util::future::Either::Left((Ok(_), _)) = r {
                    ready = true;
                    break;
                }
            }
            assert!(ready, "subscription never arrived");
            while let Ok(m) = sub.try_recv() {
                assert_eq!(m, probe);
            }
            for m in msgs() {
                publ.send(m.clone()).await.unwrap();
                let mut got = sub.recv().await.unwrap();
                while got == probe {
                    got = sub.recv().await.unwrap();
                }
                assert_eq!(got, m);
            }
        }
        Pairing::XsubXpub => {
            let (xpub, xsub) = pair::<R>(S::XPub, S::XSub, t, false).await;
            xsub.send(Message::from("\x01")).await.unwrap();
            assert_eq!(xpub.recv().await.unwrap(), Message::from("\x01"));
            for m in msgs() {
                xpub.send(m.clone()).await.unwrap();
                assert_eq!(xsub.recv().await.unwrap(), m);
            }
        }
        Pairing::Pair => {
            let (a, b) = pair::<R>(S::Pair, S::Pair, t, false).await;
            for m in msgs() {
                a.send(m.clone()).await.unwrap();
                assert_eq!(b.recv().await.unwrap(), m);
                b.send(m.clone()).await.unwrap();
                assert_eq!(a.recv().await.unwrap(), m);
            }
        }
        Pairing::ClientServer => {
            let server = Socket::<R>::new(S::Server, Options::default()).unwrap();
            let ep = server.bind(&endpoint(t, "SERVER")).await.unwrap();
            let c1 = Socket::<R>::new(S::Client, Options::default()).unwrap();
            let c2 = Socket::<R>::new(S::Client, Options::default()).unwrap();
            c1.connect(&ep).await.unwrap();
            c2.connect(&ep).await.unwrap();
            for m in singles() {
                for (who, c) in [(b'1', &c1), (b'2', &c2)] {
                    let mut ask = m.clone();
                    ask.push(vec![who]);
                    // Multipart is refused: a client sends one part.
                    assert!(matches!(
                        c.try_send(ask),
                        Err(e) if matches!(e.error, omq_driver::Error::InvalidMessage(_))
                    ));
                    c.send(m.clone()).await.unwrap();
                    let got = server.recv().await.unwrap();
                    assert_eq!(got, m);
                    let id = got.routing_id().expect("the client's routing id");
                    server
                        .send(Message::from(vec![who]).with_routing_id(id))
                        .await
                        .unwrap();
                    assert_eq!(c.recv().await.unwrap(), Message::from(vec![who]));
                }
            }
        }
        Pairing::ScatterGather => {
            let (gather, scatter) = pair::<R>(S::Gather, S::Scatter, t, false).await;
            for m in singles() {
                scatter.send(m.clone()).await.unwrap();
                assert_eq!(gather.recv().await.unwrap(), m);
            }
        }
        Pairing::Channel => {
            let (a, b) = pair::<R>(S::Channel, S::Channel, t, false).await;
            for m in singles() {
                a.send(m.clone()).await.unwrap();
                assert_eq!(b.recv().await.unwrap(), m);
                b.send(m.clone()).await.unwrap();
                assert_eq!(a.recv().await.unwrap(), m);
            }
        }
        Pairing::RadioDish => {
            let (radio, dish) = pair::<R>(S::Radio, S::Dish, t, false).await;
            dish.join("news").unwrap();
            // The JOIN crosses the connection: send until the first arrives.
            let quick = Duration::from_millis(20);
            let mut joined = false;
            for _ in 0..500 {
                radio
                    .send(Message::from("probe").with_group("news"))
                    .await
                    .unwrap();
                let r = futures_util::future::select(
                    Box::pin(dish.recv()),
                    Box::pin(R::sleep_until(R::now() + quick)),
                )
                .await;
                if let futures_util::future::Either::Left((Ok(_), _)) = r {
                    joined = true;
                    break;
                }
            }
            assert!(joined, "the join never arrived");
            while dish.try_recv().is_ok() {}
            for m in singles() {
                radio.send(m.clone().with_group("other")).await.unwrap();
                radio.send(m.clone().with_group("news")).await.unwrap();
                let got = dish.recv().await.unwrap();
                assert_eq!((got.group(), &got), (Some(&b"news"[..]), &m));
            }
        }
        Pairing::Peer => {
            let o = Options::default().recv_timeout(Some(Duration::from_secs(10)));
            let a = Socket::<R>::new(S::Peer, o.clone()).unwrap();
            let b = Socket::<R>::new(S::Peer, o).unwrap();
            let ep = b.bind(&endpoint(t, "PEER")).await.unwrap().to_string();
            let to_b = a.connect_peer(&ep).await.unwrap();
            for m in singles() {
                a.send(m.clone().with_routing_id(to_b)).await.unwrap();
                let got = b.recv().await.unwrap();
                assert_eq!(got, m);
                let to_a = got.routing_id().unwrap();
                b.send(m.clone().with_routing_id(to_a)).await.unwrap();
                let back = a.recv().await.unwrap();
                assert_eq!((back.routing_id(), back), (Some(to_b), m));
            }
        }
    }
}

/// Instantiates every pairing over tcp, ipc and inproc for a backend.
#[macro_export]
macro_rules! local_suite {
    ($backend:ty) => {
        $crate::local_suite!(@pairings $backend;
            push_pull: PushPull, req_rep: ReqRep, dealer_router: DealerRouter,
            dealer_rep: DealerRep, req_router: ReqRouter, pub_sub: PubSub, xsub_xpub: XsubXpub, pair: Pair,
            client_server: ClientServer, scatter_gather: ScatterGather, channel: Channel,
            peer: Peer, radio_dish: RadioDish
        );
    };
    (@pairings $backend:ty; $($name:ident : $variant:ident),* $(,)?) => {
        $(
            mod $name {
                use $crate::local::{run_local, LocalTransport, Pairing};
                #[test]
                fn tcp() {
                    run_local::<$backend>(Pairing::$variant, LocalTransport::Tcp);
                }
                #[test]
                fn ipc() {
                    run_local::<$backend>(Pairing::$variant, LocalTransport::Ipc);
                }
                #[test]
                fn inproc() {
                    run_local::<$backend>(Pairing::$variant, LocalTransport::Inproc);
                }
                #[test]
                fn lz4_tcp() {
                    run_local::<$backend>(Pairing::$variant, LocalTransport::Lz4Tcp);
                }
                #[test]
                fn zstd_tcp() {
                    run_local::<$backend>(Pairing::$variant, LocalTransport::ZstdTcp);
                }
            }
        )*
    };
}
