//! libzmq through the `zmq` crate (linked against the system libzmq). Each side is an OS
//! thread with its own context, and so its own I/O thread (libzmq's default of one); inproc
//! needs one context for both sides, so there the two sides share it (and its I/O thread).
//! The proxy cells have three parties (producer or client, proxy, consumer or worker), each
//! on its own thread with its own context.

use std::hint::black_box;
use std::sync::mpsc;
use std::thread;
use std::time::Instant;

use crate::common::{self, Fanout, PubTimes, Samples, SubResult, ThrTimes};
use crate::spec::{Cell, Pattern, Transport};

/// libzmq's version, as the linked library reports it.
pub fn version() -> String {
    let (a, b, c) = zmq::version();
    format!("{a}.{b}.{c}")
}

/// Runs one cell.
pub fn run(cell: &Cell) -> Result<Samples, String> {
    if cell.pattern.is_scale() {
        return crate::scale::run(cell);
    }
    match cell.pattern {
        Pattern::PushPull | Pattern::Curve => push_pull(cell),
        Pattern::ReqRep => req_rep(cell),
        Pattern::PubSub => pub_sub(cell),
        Pattern::Proxy => proxy_thr(cell),
        Pattern::ProxyLat => proxy_lat(cell),
        Pattern::Scale | Pattern::ScalePub | Pattern::ScaleCurve | Pattern::CurveClients => {
            unreachable!("handled above")
        }
    }
    .map_err(|e| format!("libzmq: {e}"))
}

/// One context per side, or one shared by both for inproc.
fn contexts(cell: &Cell) -> (zmq::Context, zmq::Context) {
    if cell.transport == Transport::Inproc {
        let c = zmq::Context::new();
        (c.clone(), c)
    } else {
        (zmq::Context::new(), zmq::Context::new())
    }
}

fn bind_endpoint(cell: &Cell) -> String {
    common::bind_endpoint(cell).replace("127.0.0.1:0", "127.0.0.1:*")
}

fn bind(s: &zmq::Socket, ep: &str) -> zmq::Result<String> {
    s.bind(ep)?;
    Ok(s.get_last_endpoint()?.expect("utf-8 endpoint"))
}

fn spawn<T: Send + 'static>(
    name: &str,
    f: impl FnOnce() -> zmq::Result<T> + Send + 'static,
) -> thread::JoinHandle<zmq::Result<T>> {
    thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .expect("thread")
}

/// CURVE keys (Z85 text) of a CURVE cell, made by omq's key generator.
#[derive(Clone)]
struct CurveKeys {
    server_public: String,
    server_secret: String,
    client_public: String,
    client_secret: String,
}

fn curve_keys(cell: &Cell) -> Option<CurveKeys> {
    (cell.pattern == Pattern::Curve).then(|| {
        let server = omq_driver::generate_keypair(&mut omq_driver::OsRng);
        let client = omq_driver::generate_keypair(&mut omq_driver::OsRng);
        CurveKeys {
            server_public: server.public().to_z85(),
            server_secret: server.secret().to_z85().to_string(),
            client_public: client.public().to_z85(),
            client_secret: client.secret().to_z85().to_string(),
        }
    })
}

fn push_pull(cell: &Cell) -> zmq::Result<Samples> {
    let (n, warm, size) = (cell.count, cell.warmup, cell.size);
    let (rctx, sctx) = contexts(cell);
    let ep = bind_endpoint(cell);
    let (ep_tx, ep_rx) = mpsc::channel::<String>();
    let (ready_tx, ready_rx) = mpsc::channel::<()>();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let keys = curve_keys(cell);
    let client_keys = keys.clone();
    let receiver = spawn("recv", move || {
        let pull = rctx.socket(zmq::PULL)?;
        if let Some(k) = &keys {
            pull.set_curve_server(true)?;
            pull.set_curve_secretkey(k.server_secret.as_bytes())?;
        }
        ep_tx.send(bind(&pull, &ep)?).expect("endpoint");
        let mut msg = zmq::Message::new();
        for _ in 0..warm {
            pull.recv(&mut msg, 0)?;
        }
        ready_tx.send(()).expect("ready");
        pull.recv(&mut msg, 0)?;
        let first = Instant::now();
        assert_eq!(msg.len(), size);
        for _ in 1..n {
            pull.recv(&mut msg, 0)?;
            black_box(&msg);
        }
        let last = Instant::now();
        let _ = done_tx.send(());
        Ok((first, last))
    });
    let sender = spawn("send", move || {
        let push = sctx.socket(zmq::PUSH)?;
        if let Some(k) = &client_keys {
            push.set_curve_serverkey(k.server_public.as_bytes())?;
            push.set_curve_publickey(k.client_public.as_bytes())?;
            push.set_curve_secretkey(k.client_secret.as_bytes())?;
        }
        push.connect(&ep_rx.recv().expect("endpoint"))?;
        let payload = common::payload(size);
        for _ in 0..warm {
            push.send(&payload[..], 0)?;
        }
        ready_rx.recv().expect("ready");
        let t0 = Instant::now();
        for _ in 0..n {
            push.send(&payload[..], 0)?;
        }
        done_rx.recv().expect("done");
        Ok(t0)
    });
    let (first_recv, last_recv) = receiver.join().expect("receiver")?;
    let first_send = sender.join().expect("sender")?;
    Ok(ThrTimes {
        first_send,
        first_recv,
        last_recv,
    }
    .metrics(n))
}

fn req_rep(cell: &Cell) -> zmq::Result<Samples> {
    let (n, warm, size) = (cell.count, cell.warmup, cell.size);
    let total = n + warm;
    let (rctx, sctx) = contexts(cell);
    let ep = bind_endpoint(cell);
    let (ep_tx, ep_rx) = mpsc::channel::<String>();
    let server = spawn("rep", move || {
        let rep = rctx.socket(zmq::REP)?;
        ep_tx.send(bind(&rep, &ep)?).expect("endpoint");
        for _ in 0..total {
            let m = rep.recv_msg(0)?;
            rep.send(m, 0)?;
        }
        Ok(())
    });
    let client = spawn("req", move || {
        let req = sctx.socket(zmq::REQ)?;
        req.connect(&ep_rx.recv().expect("endpoint"))?;
        let payload = common::payload(size);
        let mut msg = zmq::Message::new();
        let mut rtts = Vec::with_capacity(n);
        for i in 0..total {
            let t = Instant::now();
            req.send(&payload[..], 0)?;
            req.recv(&mut msg, 0)?;
            let dt = t.elapsed();
            assert_eq!(msg.len(), size);
            if i >= warm {
                rtts.push(dt);
            }
        }
        Ok(rtts)
    });
    let mut rtts = client.join().expect("client")?;
    server.join().expect("server")?;
    Ok(common::latency_metrics(&mut rtts))
}

fn pub_sub(cell: &Cell) -> zmq::Result<Samples> {
    let (n, size, subs) = (cell.count, cell.size, cell.subs);
    let (pctx, sctx) = contexts(cell);
    let ep = bind_endpoint(cell);
    let (ep_tx, ep_rx) = mpsc::channel::<String>();
    let fanout = Fanout::new(n, subs);
    let f = fanout.clone();
    let publisher = spawn("pub", move || {
        let publ = pctx.socket(zmq::PUB)?;
        ep_tx.send(bind(&publ, &ep)?).expect("endpoint");
        let hello = common::tagged(size, common::TAG_HELLO);
        while f.ready() < subs {
            publ.send(&hello[..], 0)?;
            thread::sleep(common::PROBE_EVERY);
        }
        // Paced phase: no subscriber falls more than WINDOW messages behind.
        let mut data = common::tagged(size, common::TAG_DATA);
        let first_send = Instant::now();
        for i in 0..n {
            if i >= common::WINDOW && i % (common::WINDOW / 4) == 0 {
                f.wait_blocking(i + common::WINDOW / 4 - common::WINDOW);
            }
            common::set_seq(&mut data, i);
            publ.send(&data[..], 0)?;
        }
        f.wait_blocking(n);
        // Flood phase: as fast as the publisher can go.
        let flood = common::tagged(size, common::TAG_FLOOD);
        let flood_first = Instant::now();
        for _ in 0..n {
            publ.send(&flood[..], 0)?;
        }
        let flood_last = Instant::now();
        let end = common::tagged(size, common::TAG_END);
        while f.done() < subs {
            publ.send(&end[..], 0)?;
            thread::sleep(common::PROBE_EVERY);
        }
        Ok(PubTimes {
            first_send,
            flood_first,
            flood_last,
        })
    });
    let subscribers = spawn("subs", move || {
        let ep = ep_rx.recv().expect("endpoint");
        let mut socks = Vec::with_capacity(subs);
        let mut tallies = Vec::with_capacity(subs);
        for _ in 0..subs {
            let s = sctx.socket(zmq::SUB)?;
            s.set_subscribe(b"")?;
            s.connect(&ep)?;
            socks.push(s);
            tallies.push(fanout.tally(tallies.len()));
        }
        let mut msg = zmq::Message::new();
        if subs == 1 {
            loop {
                socks[0].recv(&mut msg, 0)?;
                if tallies[0].on_message(&msg) {
                    break;
                }
            }
        } else {
            // One thread serves every subscriber: poll, then drain each readable socket.
            let mut active: Vec<usize> = (0..subs).collect();
            let mut readable = Vec::with_capacity(subs);
            while !active.is_empty() {
                {
                    let mut items: Vec<zmq::PollItem<'_>> = active
                        .iter()
                        .map(|&i| socks[i].as_poll_item(zmq::POLLIN))
                        .collect();
                    zmq::poll(&mut items, -1)?;
                    readable.clear();
                    readable.extend(items.iter().map(zmq::PollItem::is_readable));
                }
                let mut finished = Vec::new();
                for (k, &i) in active.iter().enumerate() {
                    if !readable[k] {
                        continue;
                    }
                    loop {
                        match socks[i].recv(&mut msg, zmq::DONTWAIT) {
                            Ok(()) => {
                                if tallies[i].on_message(&msg) {
                                    finished.push(i);
                                    break;
                                }
                            }
                            Err(zmq::Error::EAGAIN) => break,
                            Err(e) => return Err(e),
                        }
                    }
                }
                active.retain(|i| !finished.contains(i));
            }
        }
        Ok(tallies.into_iter().map(|t| t.result).collect::<Vec<_>>())
    });
    let results: Vec<SubResult> = subscribers.join().expect("subscribers")?;
    let times = publisher.join().expect("publisher")?;
    Ok(common::pubsub_metrics(n, &times, &results))
}

/// The inproc endpoint of the proxy's control socket (in the proxy's context).
const CONTROL: &str = "inproc://omq-bench-proxy-control";

/// Runs `zmq_proxy_steerable` on its own thread, in context `ctx`, between a `front` socket and
/// a `back` socket that both bind; their endpoints go to `front_tx` and `back_tx`. The control
/// socket is a PAIR bound over inproc: [`terminate`] stops the proxy.
fn steered(
    ctx: zmq::Context,
    ep: String,
    (front_type, back_type): (zmq::SocketType, zmq::SocketType),
    front_tx: mpsc::Sender<String>,
    back_tx: mpsc::Sender<String>,
) -> thread::JoinHandle<zmq::Result<()>> {
    spawn("proxy", move || {
        let mut front = ctx.socket(front_type)?;
        let mut back = ctx.socket(back_type)?;
        let mut control = ctx.socket(zmq::PAIR)?;
        control.bind(CONTROL)?;
        front_tx.send(bind(&front, &ep)?).expect("endpoint");
        back_tx.send(bind(&back, &ep)?).expect("endpoint");
        zmq::proxy_steerable(&mut front, &mut back, &mut control)
    })
}

/// Sends TERMINATE to the proxy of context `ctx` and waits for its thread.
fn terminate(ctx: &zmq::Context, proxy: thread::JoinHandle<zmq::Result<()>>) -> zmq::Result<()> {
    let steer = ctx.socket(zmq::PAIR)?;
    steer.connect(CONTROL)?;
    steer.send("TERMINATE", 0)?;
    proxy.join().expect("proxy")
}

/// PUSH -> [PULL | zmq_proxy_steerable | PUSH] -> PULL over tcp, as the omq cell.
fn proxy_thr(cell: &Cell) -> zmq::Result<Samples> {
    let (n, warm, size) = (cell.count, cell.warmup, cell.size);
    let (pctx, cctx, sctx) = (
        zmq::Context::new(),
        zmq::Context::new(),
        zmq::Context::new(),
    );
    let ep = bind_endpoint(cell);
    let (front_tx, front_rx) = mpsc::channel::<String>();
    let (back_tx, back_rx) = mpsc::channel::<String>();
    let (ready_tx, ready_rx) = mpsc::channel::<()>();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let proxy = steered(pctx.clone(), ep, (zmq::PULL, zmq::PUSH), front_tx, back_tx);
    let consumer = spawn("consumer", move || {
        let pull = cctx.socket(zmq::PULL)?;
        pull.connect(&back_rx.recv().expect("endpoint"))?;
        let mut msg = zmq::Message::new();
        for _ in 0..warm {
            pull.recv(&mut msg, 0)?;
        }
        ready_tx.send(()).expect("ready");
        pull.recv(&mut msg, 0)?;
        let first = Instant::now();
        assert_eq!(msg.len(), size);
        for _ in 1..n {
            pull.recv(&mut msg, 0)?;
            black_box(&msg);
        }
        let last = Instant::now();
        let _ = done_tx.send(());
        Ok((first, last))
    });
    let producer = spawn("producer", move || {
        let push = sctx.socket(zmq::PUSH)?;
        push.connect(&front_rx.recv().expect("endpoint"))?;
        let payload = common::payload(size);
        for _ in 0..warm {
            push.send(&payload[..], 0)?;
        }
        ready_rx.recv().expect("ready");
        let t0 = Instant::now();
        for _ in 0..n {
            push.send(&payload[..], 0)?;
        }
        done_rx.recv().expect("done");
        Ok(t0)
    });
    let (first_recv, last_recv) = consumer.join().expect("consumer")?;
    let first_send = producer.join().expect("producer")?;
    terminate(&pctx, proxy)?;
    Ok(ThrTimes {
        first_send,
        first_recv,
        last_recv,
    }
    .metrics(n))
}

/// REQ -> [ROUTER | zmq_proxy_steerable | DEALER] -> REP over tcp, as the omq cell.
fn proxy_lat(cell: &Cell) -> zmq::Result<Samples> {
    let (n, warm, size) = (cell.count, cell.warmup, cell.size);
    let total = n + warm;
    let (pctx, rctx, qctx) = (
        zmq::Context::new(),
        zmq::Context::new(),
        zmq::Context::new(),
    );
    let ep = bind_endpoint(cell);
    let (front_tx, front_rx) = mpsc::channel::<String>();
    let (back_tx, back_rx) = mpsc::channel::<String>();
    let proxy = steered(
        pctx.clone(),
        ep,
        (zmq::ROUTER, zmq::DEALER),
        front_tx,
        back_tx,
    );
    let server = spawn("rep", move || {
        let rep = rctx.socket(zmq::REP)?;
        rep.connect(&back_rx.recv().expect("endpoint"))?;
        for _ in 0..total {
            let m = rep.recv_msg(0)?;
            rep.send(m, 0)?;
        }
        Ok(())
    });
    let client = spawn("req", move || {
        let req = qctx.socket(zmq::REQ)?;
        req.connect(&front_rx.recv().expect("endpoint"))?;
        let payload = common::payload(size);
        let mut msg = zmq::Message::new();
        let mut rtts = Vec::with_capacity(n);
        for i in 0..total {
            let t = Instant::now();
            req.send(&payload[..], 0)?;
            req.recv(&mut msg, 0)?;
            let dt = t.elapsed();
            assert_eq!(msg.len(), size);
            if i >= warm {
                rtts.push(dt);
            }
        }
        Ok(rtts)
    });
    let mut rtts = client.join().expect("client")?;
    server.join().expect("server")?;
    terminate(&pctx, proxy)?;
    Ok(common::latency_metrics(&mut rtts))
}
