//! Interop scenarios against a real libzmq, written once and run on every backend.
//!
//! Each scenario links an omq socket and a libzmq socket (over tcp or ipc, with either side
//! binding) and checks what crosses in each direction the pair allows: multipart messages with
//! empty and binary parts, REQ/REP envelopes, ROUTER identities, subscriptions, heartbeats.
//! Time bounds are wide: a scenario fails on a hang, never on a slow machine.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use omq_driver::{Error, Message, Options, Runtime, Socket, SocketType};

use crate::async_peer::AsyncPeer;
use crate::backend::Backend;
use crate::libzmq_peer::OptValue;

/// The longest any single step may take.
pub const T: Duration = Duration::from_secs(10);

/// The transports scenarios run over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// TCP on loopback.
    Tcp,
    /// Unix domain sockets under /tmp.
    Ipc,
}

/// Every scenario of the suite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Scenario {
    /// omq PUSH → libzmq PULL.
    PushToPull,
    /// libzmq PUSH → omq PULL.
    PullFromPush,
    /// PAIR both ways.
    Pair,
    /// omq REQ ↔ libzmq REP.
    ReqToRep,
    /// libzmq REQ ↔ omq REP.
    RepFromReq,
    /// omq REQ ↔ libzmq ROUTER (the envelope as ROUTER sees it).
    ReqToRouter,
    /// libzmq REQ ↔ omq ROUTER.
    RouterFromReq,
    /// omq DEALER ↔ libzmq REP.
    DealerToRep,
    /// libzmq DEALER ↔ omq REP.
    RepFromDealer,
    /// omq DEALER (with a routing id) ↔ libzmq ROUTER.
    DealerToRouter,
    /// libzmq DEALER (with a routing id) ↔ omq ROUTER.
    RouterFromDealer,
    /// DEALER ↔ DEALER both ways.
    DealerDealer,
    /// omq ROUTER ↔ libzmq ROUTER (by announced identities).
    RouterRouter,
    /// omq PUB → libzmq SUB.
    PubToSub,
    /// libzmq PUB → omq SUB.
    SubFromPub,
    /// omq XPUB ↔ libzmq SUB: the subscription arrives at omq.
    XpubFromSub,
    /// libzmq XPUB ↔ omq SUB.
    SubToXpub,
    /// omq XSUB ↔ libzmq PUB.
    XsubToPub,
    /// libzmq XSUB ↔ omq PUB.
    PubFromXsub,
    /// Heartbeats on both sides keep an idle connection up.
    Heartbeats,
    /// omq ROUTER with ROUTER_NOTIFY, HELLO_MSG and DISCONNECT_MSG ↔ libzmq DEALER: the
    /// hello reaches libzmq first, the notices reach omq's application in order.
    RouterNotices,
    /// omq DEALER with HELLO_MSG and HICCUP_MSG ↔ libzmq ROUTER: the hello reaches libzmq as
    /// the first message; when omq connected, libzmq closing its socket gives the hiccup.
    DealerNotices,
    /// omq STREAM ↔ libzmq STREAM: raw bytes both ways, each side announcing the
    /// connection as `[id][""]`; an empty message from omq closes it and libzmq hears the end.
    Stream,
    /// omq PUB with MAX_SUBSCRIPTIONS 2 ↔ libzmq SUB: two topics are served; the third
    /// subscription ends the connection (omq's monitor says why).
    PubSubscriptionLimit,
}

impl Scenario {
    /// Every scenario.
    pub const ALL: [Scenario; 24] = [
        Scenario::PushToPull,
        Scenario::PullFromPush,
        Scenario::Pair,
        Scenario::ReqToRep,
        Scenario::RepFromReq,
        Scenario::ReqToRouter,
        Scenario::RouterFromReq,
        Scenario::DealerToRep,
        Scenario::RepFromDealer,
        Scenario::DealerToRouter,
        Scenario::RouterFromDealer,
        Scenario::DealerDealer,
        Scenario::RouterRouter,
        Scenario::PubToSub,
        Scenario::SubFromPub,
        Scenario::XpubFromSub,
        Scenario::SubToXpub,
        Scenario::XsubToPub,
        Scenario::PubFromXsub,
        Scenario::Heartbeats,
        Scenario::RouterNotices,
        Scenario::DealerNotices,
        Scenario::Stream,
        Scenario::PubSubscriptionLimit,
    ];
}

static UNIQUE: AtomicU64 = AtomicU64::new(0);

fn ipc_path(tag: &str) -> String {
    format!(
        "ipc:///tmp/omq-interop-{}-{}-{}.sock",
        std::process::id(),
        tag,
        UNIQUE.fetch_add(1, Ordering::Relaxed)
    )
}

/// Runs one scenario on backend `B`.
pub fn run<B: Backend>(scenario: Scenario, transport: Transport, omq_binds: bool) {
    B::block_on(async move {
        let peer = AsyncPeer::spawn().unwrap_or_else(|e| panic!("{e}"));
        run_on::<B::R>(&peer, scenario, transport, omq_binds).await;
    });
}

/// A linked pair: the omq socket, and the libzmq socket's id (always 1) in `peer`.
async fn link<R: Runtime>(
    peer: &AsyncPeer,
    omq_type: SocketType,
    options: Options,
    zmq_type: &'static str,
    zmq_options: Vec<(&'static str, OptValue)>,
    transport: Transport,
    omq_binds: bool,
) -> Socket<R> {
    let omq = Socket::<R>::new(omq_type, options).expect("valid options");
    let ep = match transport {
        Transport::Tcp => None,
        Transport::Ipc => Some(ipc_path(zmq_type)),
    };
    peer.call(move |p| {
        p.socket(1, zmq_type).unwrap();
        p.setsockopt(1, "LINGER", 0).unwrap();
        for (name, value) in zmq_options {
            p.setsockopt(1, name, value).unwrap();
        }
    })
    .await;
    if omq_binds {
        let want = ep.unwrap_or_else(|| "tcp://127.0.0.1:0".into());
        let bound = omq.bind(&want).await.expect("omq binds").to_string();
        peer.call(move |p| p.connect(1, &bound).unwrap()).await;
    } else {
        let want = ep.unwrap_or_else(|| "tcp://127.0.0.1:*".into());
        let bound = peer.call(move |p| p.bind(1, &want).unwrap()).await;
        omq.connect(&bound).await.expect("omq connects");
    }
    omq
}

fn msgs() -> Vec<Vec<Vec<u8>>> {
    vec![
        vec![b"single".to_vec()],
        vec![b"multi".to_vec(), vec![], b"\x00\x01\xff binary\n".to_vec()],
        vec![vec![0xabu8; 100_000], b"tail".to_vec()],
    ]
}

async fn zmq_recv(peer: &AsyncPeer) -> Vec<Vec<u8>> {
    peer.call(|p| p.recv(1, T)).await.expect("libzmq received")
}

async fn zmq_send(peer: &AsyncPeer, parts: Vec<Vec<u8>>) {
    peer.call(move |p| {
        let refs: Vec<&[u8]> = parts.iter().map(|v| &v[..]).collect();
        p.send(1, &refs).unwrap()
    })
    .await;
}

async fn omq_recv<R: Runtime>(s: &Socket<R>) -> Vec<Vec<u8>> {
    let m = s.recv().await.expect("omq received");
    m.parts().iter().map(|p| p.to_vec()).collect()
}

fn opts() -> Options {
    Options::default()
        .recv_timeout(Some(T))
        .send_timeout(Some(T))
}

/// Sends from omq and checks libzmq gets each message exactly.
async fn omq_to_zmq<R: Runtime>(omq: &Socket<R>, peer: &AsyncPeer) {
    for m in msgs() {
        omq.send(Message::multipart(m.clone())).await.unwrap();
        assert_eq!(zmq_recv(peer).await, m);
    }
}

/// Sends from libzmq and checks omq gets each message exactly.
async fn zmq_to_omq<R: Runtime>(omq: &Socket<R>, peer: &AsyncPeer) {
    for m in msgs() {
        zmq_send(peer, m.clone()).await;
        assert_eq!(omq_recv(omq).await, m);
    }
}

/// `f`, or None after `d`, on the runtime's own timer.
async fn within<R: Runtime, F: std::future::Future>(d: Duration, f: F) -> Option<F::Output> {
    use futures_util::future::{select, Either};
    let sleep = R::sleep_until(R::now() + d);
    match select(Box::pin(f), Box::pin(sleep)).await {
        Either::Left((v, _)) => Some(v),
        Either::Right(_) => None,
    }
}

/// Publishes until the subscriber has seen a message (subscriptions take a moment to
/// arrive), then checks prefix filtering on what follows.
async fn until_subscribed<F, Fp, G, Fr>(mut publish: F, mut received: G)
where
    F: FnMut() -> Fp,
    Fp: std::future::Future<Output = ()>,
    G: FnMut() -> Fr,
    Fr: std::future::Future<Output = Option<Vec<Vec<u8>>>>,
{
    for _ in 0..500 {
        let _ = publish().await;
        if let Some(m) = received().await {
            assert!(m[0].starts_with(b"A"), "{m:?}");
            return;
        }
    }
    panic!("subscription never took effect");
}

async fn run_on<R: Runtime>(peer: &AsyncPeer, s: Scenario, tr: Transport, binds: bool) {
    use SocketType as S;
    match s {
        Scenario::PushToPull => {
            let omq = link::<R>(peer, S::Push, opts(), "PULL", vec![], tr, binds).await;
            omq_to_zmq(&omq, peer).await;
        }
        Scenario::PullFromPush => {
            let omq = link::<R>(peer, S::Pull, opts(), "PUSH", vec![], tr, binds).await;
            zmq_to_omq(&omq, peer).await;
        }
        Scenario::Pair => {
            let omq = link::<R>(peer, S::Pair, opts(), "PAIR", vec![], tr, binds).await;
            omq_to_zmq(&omq, peer).await;
            zmq_to_omq(&omq, peer).await;
        }
        Scenario::ReqToRep => {
            let omq = link::<R>(peer, S::Req, opts(), "REP", vec![], tr, binds).await;
            for m in msgs() {
                omq.send(Message::multipart(m.clone())).await.unwrap();
                assert_eq!(zmq_recv(peer).await, m);
                zmq_send(peer, vec![b"re".to_vec(), m[0].clone()]).await;
                assert_eq!(omq_recv(&omq).await, vec![b"re".to_vec(), m[0].clone()]);
            }
        }
        Scenario::RepFromReq => {
            let omq = link::<R>(peer, S::Rep, opts(), "REQ", vec![], tr, binds).await;
            for m in msgs() {
                zmq_send(peer, m.clone()).await;
                let got = omq_recv(&omq).await;
                assert_eq!(got, m);
                omq.send(Message::multipart(got)).await.unwrap();
                assert_eq!(zmq_recv(peer).await, m);
            }
        }
        Scenario::ReqToRouter => {
            let omq = link::<R>(
                peer,
                S::Req,
                opts().routing_id("omq-req".into()),
                "ROUTER",
                vec![],
                tr,
                binds,
            )
            .await;
            for m in msgs() {
                omq.send(Message::multipart(m.clone())).await.unwrap();
                let got = zmq_recv(peer).await;
                assert_eq!(got[0], b"omq-req");
                assert!(got[1].is_empty(), "delimiter");
                assert_eq!(got[2..], m[..]);
                zmq_send(peer, vec![got[0].clone(), vec![], b"reply".to_vec()]).await;
                assert_eq!(omq_recv(&omq).await, vec![b"reply".to_vec()]);
            }
        }
        Scenario::RouterFromReq => {
            let zopts = vec![("ROUTING_ID", OptValue::from(&b"zmq-req"[..]))];
            let omq = link::<R>(peer, S::Router, opts(), "REQ", zopts, tr, binds).await;
            for m in msgs() {
                zmq_send(peer, m.clone()).await;
                let got = omq_recv(&omq).await;
                assert_eq!(got[0], b"zmq-req");
                assert!(got[1].is_empty());
                assert_eq!(got[2..], m[..]);
                omq.send(Message::multipart(vec![
                    got[0].clone(),
                    vec![],
                    b"ok".to_vec(),
                ]))
                .await
                .unwrap();
                assert_eq!(zmq_recv(peer).await, vec![b"ok".to_vec()]);
            }
        }
        Scenario::DealerToRep => {
            let omq = link::<R>(peer, S::Dealer, opts(), "REP", vec![], tr, binds).await;
            for m in msgs() {
                let mut out = vec![vec![]];
                out.extend(m.clone());
                omq.send(Message::multipart(out)).await.unwrap();
                assert_eq!(zmq_recv(peer).await, m);
                zmq_send(peer, vec![b"done".to_vec()]).await;
                assert_eq!(omq_recv(&omq).await, vec![vec![], b"done".to_vec()]);
            }
        }
        Scenario::RepFromDealer => {
            let omq = link::<R>(peer, S::Rep, opts(), "DEALER", vec![], tr, binds).await;
            for m in msgs() {
                let mut out = vec![b"hop".to_vec(), vec![]];
                out.extend(m.clone());
                zmq_send(peer, out).await;
                let got = omq_recv(&omq).await;
                assert_eq!(got, m);
                omq.send(Message::from("answer")).await.unwrap();
                assert_eq!(
                    zmq_recv(peer).await,
                    vec![b"hop".to_vec(), vec![], b"answer".to_vec()]
                );
            }
        }
        Scenario::DealerToRouter => {
            let omq = link::<R>(
                peer,
                S::Dealer,
                opts().routing_id("omq-dealer".into()),
                "ROUTER",
                vec![],
                tr,
                binds,
            )
            .await;
            for m in msgs() {
                omq.send(Message::multipart(m.clone())).await.unwrap();
                let got = zmq_recv(peer).await;
                assert_eq!(got[0], b"omq-dealer");
                assert_eq!(got[1..], m[..]);
                let mut back = vec![got[0].clone()];
                back.extend(m.clone());
                zmq_send(peer, back).await;
                assert_eq!(omq_recv(&omq).await, m);
            }
        }
        Scenario::RouterFromDealer => {
            let zopts = vec![("ROUTING_ID", OptValue::from(&b"zmq-dealer"[..]))];
            let omq = link::<R>(peer, S::Router, opts(), "DEALER", zopts, tr, binds).await;
            for m in msgs() {
                zmq_send(peer, m.clone()).await;
                let got = omq_recv(&omq).await;
                assert_eq!(got[0], b"zmq-dealer");
                assert_eq!(got[1..], m[..]);
                omq.send(Message::multipart(got)).await.unwrap();
                assert_eq!(zmq_recv(peer).await, m);
            }
        }
        Scenario::DealerDealer => {
            let omq = link::<R>(peer, S::Dealer, opts(), "DEALER", vec![], tr, binds).await;
            omq_to_zmq(&omq, peer).await;
            zmq_to_omq(&omq, peer).await;
        }
        Scenario::RouterRouter => {
            let zopts = vec![("ROUTING_ID", OptValue::from(&b"zmq-router"[..]))];
            let omq = link::<R>(
                peer,
                S::Router,
                opts()
                    .routing_id("omq-router".into())
                    .router_mandatory(true),
                "ROUTER",
                zopts,
                tr,
                binds,
            )
            .await;
            // The handshake must finish before either side can address the other.
            let mut sent = false;
            for _ in 0..500 {
                match omq.send(Message::multipart(["zmq-router", "hello"])).await {
                    Ok(()) => {
                        sent = true;
                        break;
                    }
                    Err(Error::HostUnreachable) => {
                        let _ = peer.call(|p| p.cmd("sleep 10")).await;
                    }
                    Err(e) => panic!("{e}"),
                }
            }
            assert!(sent, "omq never learned libzmq's routing id");
            assert_eq!(
                zmq_recv(peer).await,
                vec![b"omq-router".to_vec(), b"hello".to_vec()]
            );
            zmq_send(peer, vec![b"omq-router".to_vec(), b"back".to_vec()]).await;
            assert_eq!(
                omq_recv(&omq).await,
                vec![b"zmq-router".to_vec(), b"back".to_vec()]
            );
        }
        Scenario::PubToSub => {
            let zopts = vec![
                ("SUBSCRIBE", OptValue::from(&b"A"[..])),
                ("RCVTIMEO", OptValue::from(20)),
            ];
            let omq = link::<R>(peer, S::Pub, opts(), "SUB", zopts, tr, binds).await;
            until_subscribed(
                || async {
                    omq.send(Message::from("B-not-wanted")).await.unwrap();
                    omq.send(Message::multipart(["A-wanted", "part"]))
                        .await
                        .unwrap();
                },
                || async {
                    peer.call(|p| p.recv(1, Duration::from_millis(20)).ok())
                        .await
                },
            )
            .await;
        }
        Scenario::SubFromPub => {
            let quick = Options::default().recv_timeout(Some(Duration::from_millis(20)));
            let omq = link::<R>(peer, S::Sub, quick, "PUB", vec![], tr, binds).await;
            omq.subscribe("A").unwrap();
            until_subscribed(
                || async {
                    zmq_send(peer, vec![b"B-not".to_vec()]).await;
                    zmq_send(peer, vec![b"A-yes".to_vec(), b"x".to_vec()]).await;
                },
                || async {
                    omq.recv()
                        .await
                        .ok()
                        .map(|m| m.parts().iter().map(|p| p.to_vec()).collect())
                },
            )
            .await;
        }
        Scenario::XpubFromSub => {
            let zopts = vec![("SUBSCRIBE", OptValue::from(&b"topic"[..]))];
            let quick = opts().recv_timeout(Some(Duration::from_millis(20)));
            let omq = link::<R>(peer, S::XPub, quick, "SUB", zopts, tr, binds).await;
            // A libzmq socket attaches a new connection's pipe (and so sends its
            // subscriptions) only when the application calls into it; poll it meanwhile.
            let mut first = None;
            for _ in 0..500 {
                let _ = peer.call(|p| p.getsockopt(1, "EVENTS")).await;
                if let Ok(m) = omq.recv().await {
                    first = Some(m);
                    break;
                }
            }
            assert_eq!(first, Some(Message::from("\x01topic")));
            omq.send(Message::from("topic-data")).await.unwrap();
            assert_eq!(zmq_recv(peer).await, vec![b"topic-data".to_vec()]);
            peer.call(|p| p.setsockopt(1, "UNSUBSCRIBE", &b"topic"[..]).unwrap())
                .await;
            let mut cancel = None;
            for _ in 0..500 {
                if let Ok(m) = omq.recv().await {
                    cancel = Some(m);
                    break;
                }
            }
            assert_eq!(cancel, Some(Message::from("\x00topic")));
        }
        Scenario::SubToXpub => {
            let omq = link::<R>(
                peer,
                S::Sub,
                opts(),
                "XPUB",
                vec![("RCVTIMEO", OptValue::from(10_000))],
                tr,
                binds,
            )
            .await;
            omq.subscribe("topic").unwrap();
            assert_eq!(zmq_recv(peer).await, vec![b"\x01topic".to_vec()]);
            zmq_send(peer, vec![b"topic-data".to_vec()]).await;
            assert_eq!(omq_recv(&omq).await, vec![b"topic-data".to_vec()]);
        }
        Scenario::XsubToPub => {
            let quick = opts().recv_timeout(Some(Duration::from_millis(20)));
            let omq = link::<R>(peer, S::XSub, quick, "PUB", vec![], tr, binds).await;
            omq.send(Message::from("\x01A")).await.unwrap();
            until_subscribed(
                || async {
                    zmq_send(peer, vec![b"B".to_vec()]).await;
                    zmq_send(peer, vec![b"A!".to_vec()]).await;
                },
                || async {
                    omq.recv()
                        .await
                        .ok()
                        .map(|m| m.parts().iter().map(|p| p.to_vec()).collect())
                },
            )
            .await;
        }
        Scenario::PubFromXsub => {
            let omq = link::<R>(peer, S::Pub, opts(), "XSUB", vec![], tr, binds).await;
            zmq_send(peer, vec![b"\x01A".to_vec()]).await;
            until_subscribed(
                || async {
                    omq.send(Message::from("B")).await.unwrap();
                    omq.send(Message::from("A!")).await.unwrap();
                },
                || async {
                    peer.call(|p| p.recv(1, Duration::from_millis(20)).ok())
                        .await
                },
            )
            .await;
        }
        Scenario::Heartbeats => {
            let hb = opts()
                .heartbeat_ivl(Some(Duration::from_millis(50)))
                .heartbeat_timeout(Some(Duration::from_millis(500)))
                .heartbeat_ttl(Duration::from_millis(500));
            let zopts = vec![
                ("HEARTBEAT_IVL", OptValue::from(50)),
                ("HEARTBEAT_TIMEOUT", OptValue::from(500)),
                ("HEARTBEAT_TTL", OptValue::from(500)),
            ];
            let omq = link::<R>(peer, S::Dealer, hb, "DEALER", zopts, tr, binds).await;
            let mut monitor = omq.monitor();
            omq_to_zmq(&omq, peer).await;
            // Idle for many heartbeat intervals: both sides keep the connection.
            let _ = peer.call(|p| p.cmd("sleep 600")).await;
            zmq_to_omq(&omq, peer).await;
            omq_to_zmq(&omq, peer).await;
            use futures_util::StreamExt;
            let mut saw_disconnect = false;
            while let Some(Some(e)) = futures_util::FutureExt::now_or_never(monitor.next()) {
                saw_disconnect |= e.kind == omq_driver::EventKind::Disconnected;
            }
            assert!(!saw_disconnect, "heartbeats must keep the connection");
        }
        Scenario::RouterNotices => {
            let o = opts()
                .router_notify(omq_driver::RouterNotify {
                    connect: true,
                    disconnect: true,
                })
                .hello_msg(Some("hello from omq".into()))
                .disconnect_msg(Some("gone".into()));
            let zopts = vec![("ROUTING_ID", OptValue::from(&b"zmq-dealer"[..]))];
            let omq = link::<R>(peer, S::Router, o, "DEALER", zopts, tr, binds).await;
            let id = b"zmq-dealer".to_vec();
            assert_eq!(zmq_recv(peer).await, [b"hello from omq".to_vec()]);
            assert_eq!(omq_recv(&omq).await, [id.clone(), vec![]], "connect notice");
            zmq_send(peer, vec![b"last words".to_vec()]).await;
            assert_eq!(omq_recv(&omq).await, [id.clone(), b"last words".to_vec()]);
            peer.call(|p| p.close(1).unwrap()).await;
            assert_eq!(
                omq_recv(&omq).await,
                [id.clone(), vec![]],
                "disconnect notice"
            );
            assert_eq!(omq_recv(&omq).await, [id, b"gone".to_vec()]);
        }
        Scenario::PubSubscriptionLimit => {
            let zopts = vec![
                ("SUBSCRIBE", OptValue::from(&b"A"[..])),
                ("SUBSCRIBE", OptValue::from(&b"B"[..])),
                ("RCVTIMEO", OptValue::from(20)),
            ];
            let o = opts().max_subscriptions(2);
            let omq = link::<R>(peer, S::Pub, o, "SUB", zopts, tr, binds).await;
            let mut events = omq.monitor();
            until_subscribed(
                || async {
                    omq.send(Message::from("C-not-yet")).await.unwrap();
                    omq.send(Message::from("A-wanted")).await.unwrap();
                },
                || async {
                    peer.call(|p| p.recv(1, Duration::from_millis(20)).ok())
                        .await
                },
            )
            .await;
            peer.call(|p| p.setsockopt(1, "SUBSCRIBE", &b"C"[..]).unwrap())
                .await;
            let cause = within::<R, _>(T, async {
                loop {
                    let e = futures_util::StreamExt::next(&mut events)
                        .await
                        .expect("monitor events");
                    if e.kind == omq_driver::EventKind::Disconnected {
                        break e.cause.map(|c| c.to_string()).unwrap_or_default();
                    }
                }
            })
            .await
            .expect("the third subscription ends the connection");
            assert!(cause.contains("MAX_SUBSCRIPTIONS"), "{cause}");
        }
        Scenario::Stream => {
            let omq = link::<R>(peer, S::Stream, opts(), "STREAM", vec![], tr, binds).await;
            let hello = omq_recv(&omq).await;
            assert_eq!(hello[1], b"", "omq announces the connection");
            let id = hello[0].clone();
            let zhello = zmq_recv(peer).await;
            assert_eq!(zhello[1], b"", "libzmq announces the connection");
            let zid = zhello[0].clone();
            omq.send(Message::multipart([id.clone(), b"from omq".to_vec()]))
                .await
                .unwrap();
            let mut got = Vec::new();
            while got.len() < 8 {
                let m = zmq_recv(peer).await;
                assert_eq!(m[0], zid);
                got.extend_from_slice(&m[1]);
            }
            assert_eq!(got, b"from omq");
            zmq_send(peer, vec![zid.clone(), b"from libzmq".to_vec()]).await;
            let mut got = Vec::new();
            while got.len() < 11 {
                let m = omq_recv(&omq).await;
                assert_eq!(m[0], id);
                got.extend_from_slice(&m[1]);
            }
            assert_eq!(got, b"from libzmq");
            omq.send(Message::multipart([id, Vec::new()]))
                .await
                .unwrap();
            let end = zmq_recv(peer).await;
            assert_eq!(
                (end[0].clone(), end[1].is_empty()),
                (zid, true),
                "libzmq hears the end"
            );
        }
        Scenario::DealerNotices => {
            let o = opts()
                .routing_id("omq-dealer".into())
                .hello_msg(Some("hello from omq".into()))
                .hiccup_msg(Some("hiccup".into()));
            let omq = link::<R>(peer, S::Dealer, o, "ROUTER", vec![], tr, binds).await;
            assert_eq!(
                zmq_recv(peer).await,
                [b"omq-dealer".to_vec(), b"hello from omq".to_vec()]
            );
            omq_to_zmq_routed(&omq, peer).await;
            let mut monitor = omq.monitor();
            peer.call(|p| p.close(1).unwrap()).await;
            if binds {
                // An accepted connection's pipe ends with it: nothing to hiccup about.
                use futures_util::StreamExt;
                while let Some(e) = monitor.next().await {
                    if e.kind == omq_driver::EventKind::Disconnected {
                        break;
                    }
                }
                let quiet = omq.try_recv();
                assert!(quiet.is_err(), "{quiet:?}");
            } else {
                assert_eq!(omq_recv(&omq).await, [b"hiccup".to_vec()]);
            }
        }
    }
}

/// Sends from an omq DEALER to a libzmq ROUTER and checks each message arrives behind the
/// DEALER's id.
async fn omq_to_zmq_routed<R: Runtime>(omq: &Socket<R>, peer: &AsyncPeer) {
    for m in msgs() {
        omq.send(Message::multipart(m.clone())).await.unwrap();
        let got = zmq_recv(peer).await;
        assert_eq!(got[1..], m[..]);
    }
}

/// Instantiates every scenario, over tcp and ipc, with either side binding, for a backend.
#[macro_export]
macro_rules! interop_suite {
    ($backend:ty) => {
        $crate::interop_suite!(@scenarios $backend;
            push_to_pull: PushToPull, pull_from_push: PullFromPush, pair: Pair,
            req_to_rep: ReqToRep, rep_from_req: RepFromReq, req_to_router: ReqToRouter,
            router_from_req: RouterFromReq, dealer_to_rep: DealerToRep,
            rep_from_dealer: RepFromDealer, dealer_to_router: DealerToRouter,
            router_from_dealer: RouterFromDealer, dealer_dealer: DealerDealer,
            router_router: RouterRouter, pub_to_sub: PubToSub, sub_from_pub: SubFromPub,
            xpub_from_sub: XpubFromSub, sub_to_xpub: SubToXpub, xsub_to_pub: XsubToPub,
            pub_from_xsub: PubFromXsub, heartbeats: Heartbeats,
            router_notices: RouterNotices, dealer_notices: DealerNotices, stream: Stream,
            pub_subscription_limit: PubSubscriptionLimit
        );
    };
    (@scenarios $backend:ty; $($name:ident : $variant:ident),* $(,)?) => {
        $(
            mod $name {
                use $crate::scenarios::{run, Scenario, Transport};
                #[test]
                fn tcp_omq_binds() {
                    run::<$backend>(Scenario::$variant, Transport::Tcp, true);
                }
                #[test]
                fn tcp_libzmq_binds() {
                    run::<$backend>(Scenario::$variant, Transport::Tcp, false);
                }
                #[test]
                fn ipc_omq_binds() {
                    run::<$backend>(Scenario::$variant, Transport::Ipc, true);
                }
                #[test]
                fn ipc_libzmq_binds() {
                    run::<$backend>(Scenario::$variant, Transport::Ipc, false);
                }
            }
        )*
    };
}
