//! zmq.rs (the `zeromq` crate) on tokio: each side on its own OS thread with a current-thread
//! runtime, as omq-tokio. The proxy round-trip cell: three parties, each on its own thread and
//! runtime, with `zeromq::proxy` as the broker.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use futures_util::future::{join_all, select, Either};
use futures_util::StreamExt;
use tokio::sync::{oneshot, watch};
use zeromq::{Socket, SocketEvent, SocketRecv, SocketSend, ZmqMessage};

use crate::common::{self, Fanout, PubTimes, Samples, SubResult, ThrTimes};
use crate::spec::{Cell, Pattern};

/// A message holding a fresh copy of `payload` (the per-send copy every implementation makes).
fn copy(payload: &[u8]) -> ZmqMessage {
    ZmqMessage::from(Bytes::copy_from_slice(payload))
}

fn byte_len(m: &ZmqMessage) -> usize {
    m.iter().map(Bytes::len).sum()
}

/// Runs one cell.
pub fn run(cell: &Cell) -> Result<Samples, String> {
    match cell.pattern {
        Pattern::PushPull => Ok(push_pull(cell)),
        Pattern::ReqRep => Ok(req_rep(cell)),
        Pattern::PubSub => Ok(pub_sub(cell)),
        Pattern::Curve => Err("zmq.rs has no CURVE".into()),
        Pattern::ProxyLat => Ok(proxy_lat(cell)),
        Pattern::Proxy => {
            Err("zmq.rs's proxy needs sockets that both send and receive: not PULL/PUSH".into())
        }
        Pattern::Scale | Pattern::ScalePub | Pattern::ScaleCurve | Pattern::CurveClients => {
            Err("zmq.rs: no scale cell".into())
        }
    }
}

fn push_pull(cell: &Cell) -> Samples {
    let (n, warm, size) = (cell.count, cell.warmup, cell.size);
    let bind = common::bind_endpoint(cell);
    let (ep_tx, ep_rx) = oneshot::channel::<String>();
    let (ready_tx, ready_rx) = oneshot::channel::<()>();
    let (done_tx, done_rx) = oneshot::channel::<()>();
    let receiver = async move {
        let mut pull = zeromq::PullSocket::new();
        let ep = pull.bind(&bind).await.expect("bind");
        ep_tx.send(ep.to_string()).expect("endpoint");
        for _ in 0..warm {
            pull.recv().await.expect("recv");
        }
        ready_tx.send(()).expect("ready");
        let m = pull.recv().await.expect("recv");
        let first = Instant::now();
        assert_eq!(byte_len(&m), size);
        for _ in 1..n {
            black_box(pull.recv().await.expect("recv"));
        }
        let last = Instant::now();
        let _ = done_tx.send(());
        (first, last)
    };
    let sender = async move {
        let mut push = zeromq::PushSocket::new();
        push.connect(&ep_rx.await.expect("endpoint"))
            .await
            .expect("connect");
        let payload = common::payload(size);
        for _ in 0..warm {
            push.send(copy(&payload)).await.expect("send");
        }
        ready_rx.await.expect("ready");
        let t0 = Instant::now();
        for _ in 0..n {
            push.send(copy(&payload)).await.expect("send");
        }
        done_rx.await.expect("done");
        t0
    };
    let ((first_recv, last_recv), first_send) = common::run_pair(false, receiver, sender);
    ThrTimes {
        first_send,
        first_recv,
        last_recv,
    }
    .metrics(n)
}

fn req_rep(cell: &Cell) -> Samples {
    let (n, warm, size) = (cell.count, cell.warmup, cell.size);
    let total = n + warm;
    let bind = common::bind_endpoint(cell);
    let (ep_tx, ep_rx) = oneshot::channel::<String>();
    let (done_tx, done_rx) = oneshot::channel::<()>();
    let server = async move {
        let mut rep = zeromq::RepSocket::new();
        let ep = rep.bind(&bind).await.expect("bind");
        ep_tx.send(ep.to_string()).expect("endpoint");
        for _ in 0..total {
            let m = rep.recv().await.expect("recv");
            rep.send(m).await.expect("send");
        }
        done_rx.await.expect("done");
    };
    let client = async move {
        let mut req = zeromq::ReqSocket::new();
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
            assert_eq!(byte_len(&r), size);
            if i >= warm {
                rtts.push(dt);
            }
        }
        let _ = done_tx.send(());
        rtts
    };
    let ((), mut rtts) = common::run_pair(false, server, client);
    common::latency_metrics(&mut rtts)
}

fn pub_sub(cell: &Cell) -> Samples {
    let (n, size, subs) = (cell.count, cell.size, cell.subs);
    let bind = common::bind_endpoint(cell);
    let (ep_tx, ep_rx) = watch::channel(None::<String>);
    let fanout = Fanout::new(n, subs);
    let f = fanout.clone();
    let publisher = async move {
        let mut publ = zeromq::PubSocket::new();
        let ep = publ.bind(&bind).await.expect("bind");
        ep_tx.send(Some(ep.to_string())).expect("endpoint");
        let hello = common::tagged(size, common::TAG_HELLO);
        while f.ready() < subs {
            publ.send(copy(&hello)).await.expect("send");
            tokio::time::sleep(common::PROBE_EVERY).await;
        }
        // Paced phase: no subscriber falls more than WINDOW messages behind.
        let mut data = common::tagged(size, common::TAG_DATA);
        let first_send = Instant::now();
        for i in 0..n {
            if i >= common::WINDOW && i % (common::WINDOW / 4) == 0 {
                f.wait_async(i + common::WINDOW / 4 - common::WINDOW).await;
            }
            common::set_seq(&mut data, i);
            publ.send(copy(&data)).await.expect("send");
        }
        f.wait_async(n).await;
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
            tokio::time::sleep(common::PROBE_EVERY).await;
        }
        PubTimes {
            first_send,
            flood_first,
            flood_last,
        }
    };
    let subscribers = async move {
        let one = |mut ep_rx: watch::Receiver<Option<String>>, fanout: Arc<Fanout>, i: usize| async move {
            let ep = ep_rx
                .wait_for(Option::is_some)
                .await
                .expect("endpoint")
                .clone()
                .expect("endpoint");
            let mut sub = zeromq::SubSocket::new();
            sub.subscribe("").await.expect("subscribe");
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
    let (times, results): (PubTimes, Vec<SubResult>) =
        common::run_pair(false, publisher, subscribers);
    common::pubsub_metrics(n, &times, &results)
}

/// REQ -> [ROUTER | zeromq::proxy | DEALER] -> REP over tcp, as the omq cell. `zeromq::proxy`
/// has no control socket and never returns, so it is raced against the client's done signal.
fn proxy_lat(cell: &Cell) -> Samples {
    let (n, warm, size) = (cell.count, cell.warmup, cell.size);
    let total = n + warm;
    let bind = common::bind_endpoint(cell);
    let (front_tx, front_rx) = oneshot::channel::<String>();
    let (back_tx, back_rx) = oneshot::channel::<String>();
    let (done_tx, done_rx) = oneshot::channel::<()>();
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let proxy = move || async move {
        let mut router = zeromq::RouterSocket::new();
        let mut dealer = zeromq::DealerSocket::new();
        let mut events = dealer.monitor();
        let fep = router.bind(&bind).await.expect("bind");
        let bep = dealer.bind(&bind).await.expect("bind");
        back_tx.send(bep.to_string()).expect("endpoint");
        // zmq.rs's DEALER fails a send while it has no peer (libzmq's and omq's wait), and
        // the proxy would end with it: the client gets the frontend only once the worker is in.
        while let Some(e) = events.next().await {
            if matches!(e, SocketEvent::Accepted(..)) {
                break;
            }
        }
        front_tx.send(fep.to_string()).expect("endpoint");
        let p = Box::pin(zeromq::proxy(router, dealer, None));
        if let Either::Left((r, _)) = select(p, stop_rx).await {
            panic!("zmq.rs's proxy ended: {r:?}");
        }
    };
    let server = move || async move {
        let mut rep = zeromq::RepSocket::new();
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
        let mut req = zeromq::ReqSocket::new();
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
            assert_eq!(byte_len(&r), size);
            if i >= warm {
                rtts.push(dt);
            }
        }
        let _ = done_tx.send(());
        let _ = stop_tx.send(());
        rtts
    };
    let (mut rtts, (), ()) = common::run_three(client, proxy, server);
    common::latency_metrics(&mut rtts)
}
