//! What a lost connection loses (docs/COMPATIBILITY.md's table), row by row, against a libzmq
//! peer process that is SIGKILLed and, where the row needs it, started again on the same
//! address. Written once, run on tokio and an io_uring backend.
//!
//! The sender rows stall the reader first (a libzmq peer that never reads, with small kernel
//! buffers on both sides), so that at the kill some messages are in the pipe and some are
//! already handed to the dead connection: what arrives after the restart must then be exactly
//! a contiguous run ending with the last message sent (kept: the pipe's queue), and what is
//! missing only a prefix (lost: what was in flight), bounded in bytes.

use std::time::Duration;

use futures_util::StreamExt;
use omq_driver::{Error, EventKind, Message, Monitor, Options, Runtime, Socket, SocketType};

use crate::async_peer::AsyncPeer;
use crate::backend::Backend;
use crate::libzmq_peer::OptValue;

const T: Duration = Duration::from_secs(20);
/// Each message of the sender rows.
const SIZE: usize = 1024;
/// SNDHWM of the sender rows: 1 MiB queued at most.
const HWM: usize = 1000;
/// Kernel buffers asked for on both sides (the kernel doubles them).
const KERNEL_BUF: i32 = 32 * 1024;
/// What may be lost in flight: 256 KiB batched for the wire, and the kernel's buffers (asked
/// for small, but loopback may keep more: a wide bound).
const IN_FLIGHT_BOUND: usize = 256 * 1024 + 2 * 1024 * 1024;

/// The rows.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Row {
    /// A connecting PUSH (to a libzmq PULL) keeps its queue across the peer's restart.
    ConnectingPush,
    /// The same for a connecting DEALER (to a libzmq DEALER).
    ConnectingDealer,
    /// The same for a connecting PAIR.
    ConnectingPair,
    /// With IMMEDIATE the pipe goes with the connection: nothing queued before the loss
    /// arrives after the restart.
    Immediate,
    /// An accepting PULL keeps what it had received: still readable after the peer died.
    AcceptingSide,
    /// A ROUTER drops replies to a peer that has gone; with ROUTER_MANDATORY it says
    /// HostUnreachable.
    Router,
    /// An XPUB reports a dead subscriber's topic as unsubscribed.
    Xpub,
    /// A REQ whose request died in flight gets no answer (RCVTIMEO); with REQ_RELAXED it sends
    /// again and the restarted REP answers.
    Req,
}

/// Runs one row on backend `B`.
pub fn run_row<B: Backend>(row: Row) {
    B::block_on(run::<B::R>(row));
}

async fn sleep<R: Runtime>(d: Duration) {
    R::sleep_until(R::now() + d).await;
}

async fn within<R: Runtime, F: std::future::Future>(what: &str, f: F) -> F::Output {
    use futures_util::future::{select, Either};
    match select(Box::pin(f), Box::pin(sleep::<R>(T))).await {
        Either::Left((v, _)) => v,
        Either::Right(_) => panic!("{what}: not within {T:?}"),
    }
}

async fn disconnected<R: Runtime>(events: &mut Monitor<R>) {
    within::<R, _>("the loss noticed", async {
        while let Some(e) = events.next().await {
            if e.kind == EventKind::Disconnected {
                return;
            }
        }
        panic!("the monitor ended");
    })
    .await;
}

/// A libzmq socket 1 of `kind` with small kernel buffers and RCVHWM, bound to `ep`
/// (retrying while the old process's port is still held).
async fn peer_bound(kind: &'static str, ep: &str) -> (AsyncPeer, String) {
    let peer = AsyncPeer::spawn().unwrap_or_else(|e| panic!("{e}"));
    let ep = ep.to_string();
    let bound = peer
        .call(move |p| {
            p.socket(1, kind).unwrap();
            p.setsockopt(1, "LINGER", 0).unwrap();
            p.setsockopt(1, "RCVHWM", OptValue::from(10)).unwrap();
            p.setsockopt(1, "RCVBUF", OptValue::from(KERNEL_BUF))
                .unwrap();
            for _ in 0..100 {
                if let Ok(b) = p.bind(1, &ep) {
                    return Some(b);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            None
        })
        .await
        .expect("bind the restarted peer");
    (peer, bound)
}

fn numbered(i: u32) -> Message {
    let mut body = vec![0u8; SIZE];
    body[..4].copy_from_slice(&i.to_be_bytes());
    Message::from(body)
}

fn number(parts: &[Vec<u8>]) -> u32 {
    u32::from_be_bytes(parts.last().expect("a part")[..4].try_into().unwrap())
}

async fn run<R: Runtime>(row: Row) {
    match row {
        Row::ConnectingPush => sender::<R>(SocketType::Push, "PULL", false).await,
        Row::ConnectingDealer => sender::<R>(SocketType::Dealer, "DEALER", false).await,
        Row::ConnectingPair => sender::<R>(SocketType::Pair, "PAIR", false).await,
        Row::Immediate => sender::<R>(SocketType::Push, "PULL", true).await,
        Row::AcceptingSide => accepting::<R>().await,
        Row::Router => router::<R>().await,
        Row::Xpub => xpub::<R>().await,
        Row::Req => req::<R>().await,
    }
}

/// Fills the pipe while the peer reads nothing, kills it, restarts it, and counts.
async fn sender<R: Runtime>(t: SocketType, peer_kind: &'static str, immediate: bool) {
    let (peer, ep) = peer_bound(peer_kind, "tcp://127.0.0.1:*").await;
    let o = Options::default()
        .send_hwm(HWM)
        .send_buffer(Some(KERNEL_BUF as usize))
        .reconnect_ivl(Some(Duration::from_millis(50)))
        .immediate(immediate)
        .linger(Some(Duration::ZERO));
    let omq = Socket::<R>::new(t, o).unwrap();
    let mut events = omq.monitor();
    omq.connect(&ep).await.unwrap();
    // Until the pipe is full: the peer reads nothing, so the kernel's buffers and the
    // connection's batch fill first, then the pipe.
    let mut sent = 0u32;
    within::<R, _>("the pipe filling", async {
        let mut idle = 0;
        while idle < 50 {
            match omq.try_send(numbered(sent)) {
                Ok(()) => {
                    sent += 1;
                    idle = 0;
                }
                Err(_) => {
                    idle += 1;
                    sleep::<R>(Duration::from_millis(10)).await;
                }
            }
        }
    })
    .await;
    assert!(
        sent as usize > HWM,
        "only {sent} sent: the wire took nothing?"
    );
    peer.call(|p| p.kill().unwrap()).await;
    drop(peer);
    disconnected::<R>(&mut events).await;
    let (peer, _) = peer_bound(peer_kind, &ep).await;
    if immediate {
        // The queue went with the connection: the first message to arrive is one sent after
        // the restart.
        let after = 1_000_000u32;
        within::<R, _>("a message after the restart", async {
            loop {
                let _ = omq.try_send(numbered(after));
                let got = peer.call(|p| p.recv(1, Duration::from_millis(50))).await;
                if let Ok(parts) = got {
                    assert_eq!(
                        number(&parts),
                        after,
                        "a message queued before the loss arrived with IMMEDIATE"
                    );
                    return;
                }
            }
        })
        .await;
        return;
    }
    let mut got: Vec<u32> = Vec::new();
    loop {
        let r = peer.call(|p| p.recv(1, Duration::from_secs(3))).await;
        match r {
            Ok(parts) => {
                let n = number(&parts);
                got.push(n);
                if n == sent - 1 {
                    break;
                }
            }
            Err(e) => panic!("{t:?}: after {} of the queue: {e}", got.len()),
        }
    }
    let first = got[0];
    assert_eq!(
        got,
        (first..sent).collect::<Vec<u32>>(),
        "{t:?}: what arrives is the queue, in order, each once"
    );
    let lost = first as usize * SIZE;
    println!(
        "{t:?}: {sent} sent, {} kept in the pipe and delivered, {first} ({} KiB) lost in flight",
        got.len(),
        lost / 1024
    );
    // The pipe was full (SNDHWM) when the peer died, and all of it came through.
    assert_eq!(got.len(), HWM, "{t:?}: the pipe's queue, whole");
    assert!(
        lost <= IN_FLIGHT_BOUND,
        "{t:?}: {lost} bytes lost in flight"
    );
}

async fn accepting<R: Runtime>() {
    let pull = Socket::<R>::new(SocketType::Pull, Options::default()).unwrap();
    let mut events = pull.monitor();
    let ep = pull.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
    let peer = AsyncPeer::spawn().unwrap_or_else(|e| panic!("{e}"));
    peer.call(move |p| {
        p.socket(1, "PUSH").unwrap();
        p.connect(1, &ep).unwrap();
        for i in 0..10u32 {
            p.send(1, &[&i.to_be_bytes()]).unwrap();
        }
    })
    .await;
    // Nothing read yet; give the messages time to arrive, then kill the sender.
    sleep::<R>(Duration::from_millis(300)).await;
    peer.call(|p| p.kill().unwrap()).await;
    disconnected::<R>(&mut events).await;
    for i in 0..10u32 {
        let m = within::<R, _>("a message received before the loss", pull.recv())
            .await
            .unwrap();
        assert_eq!(m, Message::from(i.to_be_bytes()));
    }
}

async fn router<R: Runtime>() {
    for mandatory in [false, true] {
        let o = Options::default().router_mandatory(mandatory);
        let router = Socket::<R>::new(SocketType::Router, o).unwrap();
        let mut events = router.monitor();
        let ep = router.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
        let peer = AsyncPeer::spawn().unwrap_or_else(|e| panic!("{e}"));
        peer.call(move |p| {
            p.socket(1, "DEALER").unwrap();
            p.setsockopt(1, "ROUTING_ID", &b"D"[..]).unwrap();
            p.connect(1, &ep).unwrap();
            p.send(1, &[b"hi"]).unwrap();
        })
        .await;
        let m = within::<R, _>("the request", router.recv()).await.unwrap();
        assert_eq!(m, Message::multipart(["D", "hi"]));
        peer.call(|p| p.kill().unwrap()).await;
        disconnected::<R>(&mut events).await;
        let r = router.send(Message::multipart(["D", "reply"])).await;
        if mandatory {
            assert!(matches!(r, Err(Error::HostUnreachable)), "{r:?}");
        } else {
            assert!(
                r.is_ok(),
                "dropped silently without ROUTER_MANDATORY: {r:?}"
            );
        }
    }
}

async fn xpub<R: Runtime>() {
    let xpub = Socket::<R>::new(SocketType::XPub, Options::default()).unwrap();
    let ep = xpub.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
    let peer = AsyncPeer::spawn().unwrap_or_else(|e| panic!("{e}"));
    peer.call(move |p| {
        p.socket(1, "SUB").unwrap();
        p.setsockopt(1, "SUBSCRIBE", &b"topic"[..]).unwrap();
        p.connect(1, &ep).unwrap();
    })
    .await;
    let m = within::<R, _>("the subscription", xpub.recv())
        .await
        .unwrap();
    assert_eq!(m, Message::from(&b"\x01topic"[..]));
    peer.call(|p| p.kill().unwrap()).await;
    let m = within::<R, _>("the unsubscription", xpub.recv())
        .await
        .unwrap();
    assert_eq!(m, Message::from(&b"\x00topic"[..]));
}

async fn req<R: Runtime>() {
    for relaxed in [false, true] {
        let (peer, ep) = peer_bound("REP", "tcp://127.0.0.1:*").await;
        let o = Options::default()
            .recv_timeout(Some(Duration::from_millis(500)))
            .reconnect_ivl(Some(Duration::from_millis(50)))
            .req_relaxed(relaxed)
            .req_correlate(relaxed);
        let req = Socket::<R>::new(SocketType::Req, o).unwrap();
        let mut events = req.monitor();
        req.connect(&ep).await.unwrap();
        req.send(Message::from("first")).await.unwrap();
        // The REP takes the request and dies before answering.
        let got = peer.call(|p| p.recv(1, T)).await.unwrap();
        assert_eq!(got, vec![b"first".to_vec()]);
        peer.call(|p| p.kill().unwrap()).await;
        drop(peer);
        disconnected::<R>(&mut events).await;
        let (peer, _) = peer_bound("REP", &ep).await;
        // Nobody will answer the first request.
        assert!(matches!(req.recv().await, Err(Error::WouldBlock)));
        if !relaxed {
            continue;
        }
        // REQ_RELAXED: a new request goes out and the restarted REP answers it.
        req.send(Message::from("again")).await.unwrap();
        let got = peer.call(|p| p.recv(1, T)).await.unwrap();
        assert_eq!(got, vec![b"again".to_vec()]);
        peer.call(|p| p.send(1, &[b"answer"]).unwrap()).await;
        assert_eq!(req.recv().await.unwrap(), Message::from("answer"));
    }
}

/// Instantiates every row for a backend.
#[macro_export]
macro_rules! restart_suite {
    ($backend:ty) => {
        $crate::restart_suite!(@rows $backend;
            connecting_push_keeps_its_queue: ConnectingPush,
            connecting_dealer_keeps_its_queue: ConnectingDealer,
            connecting_pair_keeps_its_queue: ConnectingPair,
            immediate_loses_the_queue_with_the_connection: Immediate,
            the_accepting_side_keeps_what_it_received: AcceptingSide,
            a_router_drops_replies_to_a_gone_peer: Router,
            an_xpub_reports_a_dead_subscribers_topics: Xpub,
            a_req_whose_request_died_gets_no_answer: Req
        );
    };
    (@rows $backend:ty; $($name:ident : $row:ident),* $(,)?) => {
        mod restarts {
            $(
                #[test]
                fn $name() {
                    $crate::restarts::run_row::<$backend>($crate::restarts::Row::$row);
                }
            )*
        }
    };
}
