//! Sockets as `Stream`s and `Sink`s, and the proxy, written once and run on every backend (the
//! cases join `api_suite!`).

use std::time::Duration;

use futures_util::future::{join, select, Either};
use futures_util::{SinkExt, StreamExt};
use omq_driver::{proxy, proxy_steerable, Message, Options, Runtime, Socket, SocketType};

use crate::api::{unique, within, within_for};

/// The cases.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum StreamCase {
    /// A PUSH sink feeds a PULL stream; `forward` pipes one socket into another.
    StreamAndSink,
    /// `poll_ready` waits while no peer has room; a dropped `next` takes nothing.
    BackpressureAndCancel,
    /// The sink takes a batch ahead of the socket, never past the socket's room, hands it over
    /// at flush (or when dropped), and reports a held message's error at flush.
    SinkBatches,
    /// PULL -> proxy -> PUSH with a capture socket.
    ProxyStreamer,
    /// REQ clients -> ROUTER | proxy | DEALER -> REP workers.
    ProxyBroker,
    /// PUB -> XSUB | proxy | XPUB -> SUB, subscriptions travelling back through the proxy.
    ProxyForwarder,
    /// PAUSE, RESUME, STATISTICS and TERMINATE over a REP and a PAIR control socket.
    ProxySteerable,
}

/// Runs one case on backend `B`.
pub fn run_stream_case<B: crate::backend::Backend>(case: StreamCase) {
    B::block_on(run::<B::R>(case));
}

fn sock<R: Runtime>(t: SocketType) -> Socket<R> {
    Socket::<R>::new(t, Options::default()).unwrap()
}

async fn pair<R: Runtime>(bind: SocketType, connect: SocketType) -> (Socket<R>, Socket<R>) {
    let a = sock::<R>(bind);
    let ep = a.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
    let b = sock::<R>(connect);
    b.connect(&ep).await.unwrap();
    (a, b)
}

/// A PUSH with SNDHWM 5 connected to an ipc endpoint nobody has bound yet, and that endpoint.
async fn push_to_nobody<R: Runtime>(tag: &str) -> (Socket<R>, String) {
    let ep = format!("ipc:///tmp/omq-streams-{}.sock", unique(tag));
    let push = Socket::<R>::new(
        SocketType::Push,
        Options::default()
            .send_hwm(5)
            .reconnect_ivl(Some(Duration::from_millis(20))),
    )
    .unwrap();
    push.connect(&ep).await.unwrap();
    (push, ep)
}

async fn run<R: Runtime>(case: StreamCase) {
    match case {
        StreamCase::StreamAndSink => {
            let (pull, push) = pair::<R>(SocketType::Pull, SocketType::Push).await;
            let mut sink = push.sink();
            let items = (0..1000u32).map(|i| Ok(Message::from(i.to_be_bytes().to_vec())));
            within::<R, _>(sink.send_all(&mut futures_util::stream::iter(items)))
                .await
                .unwrap();
            let got: Vec<Message> = within::<R, _>(pull.stream().take(1000).collect::<Vec<_>>())
                .await
                .into_iter()
                .map(Result::unwrap)
                .collect();
            for (i, m) in got.iter().enumerate() {
                assert_eq!(&m.parts()[0][..], &(i as u32).to_be_bytes());
            }
            // `forward`: everything a PULL receives goes out of a PUSH.
            let (pull2, push2) = pair::<R>(SocketType::Pull, SocketType::Push).await;
            let piped = pull.stream().take(100).forward(push2.sink());
            let feed = async {
                for i in 0..100u32 {
                    push.send(Message::from(format!("m{i}"))).await.unwrap();
                }
                let mut out = Vec::new();
                for _ in 0..100 {
                    out.push(pull2.recv().await.unwrap());
                }
                out
            };
            let (r, out) = within::<R, _>(join(piped, feed)).await;
            r.unwrap();
            let want: Vec<Message> = (0..100).map(|i| Message::from(format!("m{i}"))).collect();
            assert_eq!(out, want);
        }
        StreamCase::BackpressureAndCancel => {
            // No peer yet: a PUSH queues SNDHWM messages for the endpoint, then the sink
            // waits; once a peer binds, everything flows.
            let (push, ep) = push_to_nobody::<R>("bp").await;
            let mut sink = push.sink();
            for i in 0..5u8 {
                within::<R, _>(sink.send(Message::from(vec![i])))
                    .await
                    .unwrap();
            }
            let waited = within_for::<R, _>(
                Duration::from_millis(200),
                sink.send(Message::from(vec![5])),
            )
            .await;
            assert!(waited.is_none(), "the sink took a 6th message past SNDHWM");
            let pull = sock::<R>(SocketType::Pull);
            pull.bind(&ep).await.unwrap();
            within::<R, _>(sink.send(Message::from(vec![6])))
                .await
                .unwrap();
            let got: Vec<Message> = within::<R, _>(pull.stream().take(6).collect::<Vec<_>>())
                .await
                .into_iter()
                .map(Result::unwrap)
                .collect();
            let want: Vec<Message> = [0u8, 1, 2, 3, 4, 6]
                .iter()
                .map(|&i| Message::from(vec![i]))
                .collect();
            assert_eq!(got, want, "the send dropped while waiting (5) sent nothing");
            // A `next` dropped while waiting leaves nothing behind: what arrives afterwards is
            // received whole and in order.
            let quiet = sock::<R>(SocketType::Pull);
            let qep = quiet.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
            let mut stream = quiet.stream();
            for _ in 0..5 {
                let r = within_for::<R, _>(Duration::from_millis(20), stream.next()).await;
                assert!(r.is_none(), "nothing was sent yet");
            }
            // The stream keeps its registration between polls; dropping it ends it.
            assert!(quiet.debug_dump().contains("recv_waiters=1"));
            drop(stream);
            assert!(quiet.debug_dump().contains("recv_waiters=0"));
            let mut stream = quiet.stream();
            let late = sock::<R>(SocketType::Push);
            late.connect(&qep).await.unwrap();
            for i in 0..3u8 {
                late.send(Message::from(vec![i])).await.unwrap();
            }
            for i in 0..3u8 {
                let m = within::<R, _>(stream.next()).await.unwrap().unwrap();
                assert_eq!(m, Message::from(vec![i]));
            }
        }
        StreamCase::SinkBatches => {
            // No peer yet, SNDHWM 5: `send_all` takes exactly the five the socket has room
            // for (and the one `send_all` keeps while it waits), not a batch.
            let (push, ep) = push_to_nobody::<R>("batch").await;
            let pulled = std::cell::Cell::new(0u32);
            let mut items = futures_util::stream::iter(0..10u8).map(|i| {
                pulled.set(pulled.get() + 1);
                Ok(Message::from(vec![i]))
            });
            let mut sink = push.sink();
            let waited =
                within_for::<R, _>(Duration::from_millis(200), sink.send_all(&mut items)).await;
            assert!(waited.is_none(), "the sink went past SNDHWM");
            assert_eq!(
                pulled.get(),
                6,
                "the sink took more than the socket had room for"
            );
            assert!(
                push.try_send(Message::from("x")).is_err(),
                "the five went to the socket"
            );
            drop(sink);
            let pull = sock::<R>(SocketType::Pull);
            pull.bind(&ep).await.unwrap();
            for i in 0..5u8 {
                let m = within::<R, _>(pull.recv()).await.unwrap();
                assert_eq!(m, Message::from(vec![i]));
            }
            // With room, `feed` holds messages in the sink until the flush hands them over in
            // one go, in order.
            let mut sink = push.sink();
            for i in 10..13u8 {
                within::<R, _>(sink.feed(Message::from(vec![i])))
                    .await
                    .unwrap();
            }
            let early = within_for::<R, _>(Duration::from_millis(100), pull.recv()).await;
            assert!(early.is_none(), "a fed message went out before the flush");
            within::<R, _>(sink.flush()).await.unwrap();
            for i in 10..13u8 {
                let m = within::<R, _>(pull.recv()).await.unwrap();
                assert_eq!(m, Message::from(vec![i]));
            }
            // A sink dropped unflushed hands what it holds to the socket.
            for i in 20..22u8 {
                within::<R, _>(sink.feed(Message::from(vec![i])))
                    .await
                    .unwrap();
            }
            drop(sink);
            for i in 20..22u8 {
                let m = within::<R, _>(pull.recv()).await.unwrap();
                assert_eq!(m, Message::from(vec![i]));
            }
            // A held message the socket refuses: the error comes from the flush, the message
            // is gone, and the sink goes on.
            let router = Socket::<R>::new(
                SocketType::Router,
                Options::default().router_mandatory(true),
            )
            .unwrap();
            router.bind("tcp://127.0.0.1:0").await.unwrap();
            let mut sink = router.sink();
            within::<R, _>(sink.feed(Message::multipart([b"nobody".to_vec(), b"x".to_vec()])))
                .await
                .unwrap();
            let r = within::<R, _>(sink.flush()).await;
            assert!(
                matches!(r, Err(omq_driver::Error::HostUnreachable)),
                "{r:?}"
            );
            within::<R, _>(sink.flush()).await.unwrap();
        }
        StreamCase::ProxyStreamer => {
            let front = sock::<R>(SocketType::Pull);
            let fep = front.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
            let back = sock::<R>(SocketType::Push);
            let bep = back.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
            let capture = sock::<R>(SocketType::Push);
            let cep = capture.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
            let producer = sock::<R>(SocketType::Push);
            producer.connect(&fep).await.unwrap();
            let consumer = sock::<R>(SocketType::Pull);
            consumer.connect(&bep).await.unwrap();
            let tap = sock::<R>(SocketType::Pull);
            tap.connect(&cep).await.unwrap();
            let n = 2000u32;
            let body = async {
                for i in 0..n {
                    producer
                        .send(Message::multipart([
                            b"job".to_vec(),
                            i.to_be_bytes().to_vec(),
                        ]))
                        .await
                        .unwrap();
                }
                for i in 0..n {
                    let m = consumer.recv().await.unwrap();
                    assert_eq!(&m.parts()[1][..], &i.to_be_bytes());
                    let c = tap.recv().await.unwrap();
                    assert_eq!(c, m, "the capture sees every message whole");
                }
            };
            let p = proxy(&front, &back, Some(&capture));
            let r = within::<R, _>(select(Box::pin(p), Box::pin(body))).await;
            match r {
                Either::Left((r, _)) => panic!("the proxy ended: {r:?}"),
                Either::Right(((), _)) => {}
            }
        }
        StreamCase::ProxyBroker => {
            let front = sock::<R>(SocketType::Router);
            let fep = front.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
            let back = sock::<R>(SocketType::Dealer);
            let bep = back.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
            let workers: Vec<Socket<R>> = (0..2).map(|_| sock::<R>(SocketType::Rep)).collect();
            for w in &workers {
                w.connect(&bep).await.unwrap();
            }
            let clients: Vec<Socket<R>> = (0..3).map(|_| sock::<R>(SocketType::Req)).collect();
            for c in &clients {
                c.connect(&fep).await.unwrap();
            }
            let serve = async {
                // Each worker answers with its index and the request.
                let one = |i: usize, w: &Socket<R>| {
                    let w = w.clone();
                    async move {
                        loop {
                            let req = w.recv().await.unwrap();
                            let mut rep = req.clone();
                            rep.push_front(vec![i as u8]);
                            w.send(rep).await.unwrap();
                        }
                    }
                };
                let a = one(0, &workers[0]);
                let b = one(1, &workers[1]);
                let _: ((), ()) = join(a, b).await;
            };
            let ask = async {
                for round in 0..20u32 {
                    for (i, c) in clients.iter().enumerate() {
                        let req = Message::from(format!("c{i} r{round}"));
                        c.send(req.clone()).await.unwrap();
                        let rep = c.recv().await.unwrap();
                        assert_eq!(rep.len(), 2);
                        assert_eq!(rep.parts()[1], req.parts()[0]);
                    }
                }
            };
            let p = proxy(&front, &back, None);
            let rest = select(Box::pin(serve), Box::pin(ask));
            let r = within::<R, _>(select(Box::pin(p), rest)).await;
            match r {
                Either::Left((r, _)) => panic!("the proxy ended: {r:?}"),
                Either::Right((Either::Left(_), _)) => panic!("a worker stopped"),
                Either::Right((Either::Right(_), _)) => {}
            }
        }
        StreamCase::ProxyForwarder => {
            let publ = sock::<R>(SocketType::Pub);
            let pep = publ.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
            let xsub = sock::<R>(SocketType::XSub);
            xsub.connect(&pep).await.unwrap();
            let xpub = sock::<R>(SocketType::XPub);
            let xep = xpub.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
            let sub = sock::<R>(SocketType::Sub);
            sub.subscribe("weather").unwrap();
            sub.connect(&xep).await.unwrap();
            let body = async {
                // The subscription crosses the proxy upstream; publish until it has.
                loop {
                    publ.send(Message::from("noise")).await.unwrap();
                    publ.send(Message::from("weather sunny")).await.unwrap();
                    let quick = within_for::<R, _>(Duration::from_millis(20), sub.recv()).await;
                    if let Some(m) = quick {
                        assert_eq!(m.unwrap(), Message::from("weather sunny"));
                        break;
                    }
                }
            };
            let p = proxy(&xsub, &xpub, None);
            let r = within::<R, _>(select(Box::pin(p), Box::pin(body))).await;
            match r {
                Either::Left((r, _)) => panic!("the proxy ended: {r:?}"),
                Either::Right(((), _)) => {}
            }
        }
        StreamCase::ProxySteerable => {
            for control_type in [SocketType::Rep, SocketType::Pair] {
                let front = sock::<R>(SocketType::Pull);
                let fep = front.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
                let back = sock::<R>(SocketType::Push);
                let bep = back.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
                let control = sock::<R>(control_type);
                let ctl_ep = format!("inproc://{}", unique("steer"));
                control.bind(&ctl_ep).await.unwrap();
                let steer = sock::<R>(if control_type == SocketType::Rep {
                    SocketType::Req
                } else {
                    SocketType::Pair
                });
                steer.connect(&ctl_ep).await.unwrap();
                let producer = sock::<R>(SocketType::Push);
                producer.connect(&fep).await.unwrap();
                let consumer = sock::<R>(SocketType::Pull);
                consumer.connect(&bep).await.unwrap();
                let rep = control_type == SocketType::Rep;
                let command = |word: &'static str| {
                    let steer = steer.clone();
                    async move {
                        steer.send(Message::from(word)).await.unwrap();
                        if rep || word == "STATISTICS" {
                            Some(steer.recv().await.unwrap())
                        } else {
                            None
                        }
                    }
                };
                let body = async {
                    producer.send(Message::from("one")).await.unwrap();
                    assert_eq!(consumer.recv().await.unwrap(), Message::from("one"));
                    command("PAUSE").await;
                    producer.send(Message::from("two")).await.unwrap();
                    let held =
                        within_for::<R, _>(Duration::from_millis(200), consumer.recv()).await;
                    assert!(held.is_none(), "a paused proxy forwarded");
                    command("RESUME").await;
                    assert_eq!(consumer.recv().await.unwrap(), Message::from("two"));
                    let stats = command("STATISTICS").await.unwrap();
                    assert_eq!(stats.len(), 8);
                    let n = |i: usize| {
                        u64::from_ne_bytes(stats.parts()[i][..].try_into().expect("8 bytes"))
                    };
                    // Frames and bytes in from the frontend and out to the backend.
                    assert_eq!((n(0), n(1), n(6), n(7)), (2, 6, 2, 6));
                    assert_eq!((n(2), n(3), n(4), n(5)), (0, 0, 0, 0));
                    command("TERMINATE").await;
                };
                let p = proxy_steerable(&front, &back, None, &control);
                let (stats, ()) = within::<R, _>(join(p, body)).await;
                let stats = stats.unwrap();
                assert_eq!(stats.frontend_recv_frames, 2);
                assert_eq!(stats.backend_sent_bytes, 6);
            }
        }
    }
}

/// Instantiates every case for a backend (invoked from `api_suite!`).
#[macro_export]
macro_rules! streams_suite {
    ($backend:ty) => {
        mod streams {
            use $crate::streams::{run_stream_case, StreamCase};
            $crate::streams_suite!(@cases $backend;
                a_sink_feeds_a_stream_and_forward_pipes_sockets: StreamAndSink,
                sinks_wait_for_room_and_a_dropped_next_takes_nothing: BackpressureAndCancel,
                a_sink_batches_within_the_room_and_flushes_in_order: SinkBatches,
                proxy_streams_pull_to_push_with_a_capture: ProxyStreamer,
                proxy_brokers_req_clients_to_rep_workers: ProxyBroker,
                proxy_forwards_pub_sub_and_subscriptions: ProxyForwarder,
                steerable_proxy_pauses_resumes_counts_and_terminates: ProxySteerable
            );
        }
    };
    (@cases $backend:ty; $($name:ident : $case:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                run_stream_case::<$backend>(StreamCase::$case);
            }
        )*
    };
}
