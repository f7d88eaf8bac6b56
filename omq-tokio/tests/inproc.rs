//! inproc:// on tokio: exact HWM (libzmq's test_hwm), connect before bind, no copies, and the
//! usual patterns. Every test uses its own names.

use std::time::Duration;

use bytes::Bytes;
use omq_tokio::{Error, Message, Options, Socket, SocketType};

const T: Duration = Duration::from_secs(10);

async fn within<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(T, f).await.expect("took too long")
}

fn fill(s: &Socket) -> usize {
    let mut n = 0;
    while s.try_send(Message::from("x")).is_ok() {
        n += 1;
        assert!(n < 1_000_000);
    }
    n
}

#[tokio::test]
async fn holds_exactly_sndhwm_plus_rcvhwm() {
    for (snd, rcv, name) in [
        (1000, 1000, "hwm-default"),
        (1, 1, "hwm-1-1"),
        (5, 3, "hwm-5-3"),
    ] {
        let pull = Socket::new(SocketType::Pull, Options::default().recv_hwm(rcv)).unwrap();
        pull.bind(&format!("inproc://{name}")).await.unwrap();
        let push = Socket::new(SocketType::Push, Options::default().send_hwm(snd)).unwrap();
        push.connect(&format!("inproc://{name}")).await.unwrap();
        assert_eq!(fill(&push), snd + rcv, "{name}");
        // As in libzmq, the reader hands room back in batches: once it has read down to the
        // low-water mark (half of RCVHWM), exactly as many as it read fit again.
        let read = rcv - rcv / 2;
        for _ in 0..read {
            within(pull.recv()).await.unwrap();
        }
        assert_eq!(fill(&push), read, "{name}");
    }
}

#[tokio::test]
async fn connect_before_bind_queues_then_delivers() {
    let push = Socket::new(SocketType::Push, Options::default().send_hwm(1)).unwrap();
    push.connect("inproc://cbb").await.unwrap();
    assert_eq!(fill(&push), 1, "exactly SNDHWM before the bind");
    let pull = Socket::new(SocketType::Pull, Options::default()).unwrap();
    pull.bind("inproc://cbb").await.unwrap();
    assert_eq!(within(pull.recv()).await.unwrap(), Message::from("x"));
}

#[tokio::test]
async fn large_parts_cross_without_a_copy() {
    let pull = Socket::new(SocketType::Pull, Options::default()).unwrap();
    pull.bind("inproc://nocopy").await.unwrap();
    let push = Socket::new(SocketType::Push, Options::default()).unwrap();
    push.connect("inproc://nocopy").await.unwrap();
    let body = Bytes::from(vec![1u8; 1 << 20]);
    let ptr = body.as_ptr();
    push.send(Message::from(body)).await.unwrap();
    let got = within(pull.recv()).await.unwrap();
    assert_eq!(got.parts()[0].shared().unwrap().as_ptr(), ptr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn req_rep_pub_sub_and_pair() {
    let rep = Socket::new(SocketType::Rep, Options::default()).unwrap();
    rep.bind("inproc://rr").await.unwrap();
    let req = Socket::new(SocketType::Req, Options::default()).unwrap();
    req.connect("inproc://rr").await.unwrap();
    let server = tokio::spawn(async move {
        for _ in 0..1000 {
            let m = rep.recv().await.unwrap();
            rep.send(m).await.unwrap();
        }
    });
    for i in 0..1000 {
        req.send(Message::from(format!("{i}"))).await.unwrap();
        assert_eq!(
            within(req.recv()).await.unwrap(),
            Message::from(format!("{i}"))
        );
    }
    server.await.unwrap();

    let publ = Socket::new(SocketType::Pub, Options::default()).unwrap();
    publ.bind("inproc://ps").await.unwrap();
    let sub = Socket::new(SocketType::Sub, Options::default()).unwrap();
    sub.subscribe("a").unwrap();
    sub.connect("inproc://ps").await.unwrap();
    // inproc subscriptions arrive synchronously with the connect.
    publ.send(Message::from("b-no")).await.unwrap();
    publ.send(Message::from("a-yes")).await.unwrap();
    assert_eq!(within(sub.recv()).await.unwrap(), Message::from("a-yes"));

    let a = Socket::new(SocketType::Pair, Options::default()).unwrap();
    let b = Socket::new(SocketType::Pair, Options::default()).unwrap();
    a.bind("inproc://pair").await.unwrap();
    b.connect("inproc://pair").await.unwrap();
    a.send(Message::multipart(["1", "2"])).await.unwrap();
    b.send(Message::from("3")).await.unwrap();
    assert_eq!(
        within(b.recv()).await.unwrap(),
        Message::multipart(["1", "2"])
    );
    assert_eq!(within(a.recv()).await.unwrap(), Message::from("3"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_messages_in_order_across_threads() {
    let pull = Socket::new(SocketType::Pull, Options::default()).unwrap();
    pull.bind("inproc://stream").await.unwrap();
    let push = Socket::new(SocketType::Push, Options::default()).unwrap();
    push.connect("inproc://stream").await.unwrap();
    let n = 100_000u32;
    let sender = tokio::spawn(async move {
        for i in 0..n {
            push.send(Message::from(i.to_be_bytes())).await.unwrap();
        }
    });
    for i in 0..n {
        let m = within(pull.recv()).await.unwrap();
        assert_eq!(m.parts()[0][..], i.to_be_bytes());
    }
    sender.await.unwrap();
}

#[tokio::test]
async fn names_are_exclusive_and_reusable_after_unbind() {
    let a = Socket::new(SocketType::Pull, Options::default()).unwrap();
    a.bind("inproc://excl").await.unwrap();
    let b = Socket::new(SocketType::Pull, Options::default()).unwrap();
    assert!(matches!(b.bind("inproc://excl").await, Err(Error::Io(_))));
    a.unbind("inproc://excl").await.unwrap();
    b.bind("inproc://excl").await.unwrap();
    let push = Socket::new(SocketType::Push, Options::default()).unwrap();
    push.connect("inproc://excl").await.unwrap();
    push.send(Message::from("to b")).await.unwrap();
    assert_eq!(within(b.recv()).await.unwrap(), Message::from("to b"));
}

#[tokio::test]
async fn incompatible_inproc_peers_do_not_link() {
    let a = Socket::new(SocketType::Pull, Options::default()).unwrap();
    a.bind("inproc://incompat").await.unwrap();
    // A PULL would take what a linked DEALER sends: only the refused link keeps the message
    // from crossing (a PUB would send nothing anyway). With the link refused the DEALER has
    // no peer, so its send waits (and times out): nothing is queued anywhere.
    let b = Socket::new(
        SocketType::Dealer,
        Options::default()
            .reconnect_ivl(None)
            .send_timeout(Some(Duration::from_millis(100)))
            .linger(Some(Duration::ZERO)),
    )
    .unwrap();
    b.connect("inproc://incompat").await.unwrap();
    let _ = b.send(Message::from("must not cross")).await;
    let r = tokio::time::timeout(Duration::from_millis(200), a.recv()).await;
    assert!(r.is_err(), "nothing may cross: {r:?}");
}

/// Messages a sender has handed over but its peer has not looked for yet (they wait in the
/// link's lane, not in the peer's queue) still arrive when the sender closes or is dropped
/// right after sending, and when the sender disconnects.
#[tokio::test]
async fn messages_on_their_way_survive_close_drop_and_disconnect() {
    for (how, name) in [
        ("close", "otw-close"),
        ("drop", "otw-drop"),
        ("disconnect", "otw-disc"),
    ] {
        let pull = Socket::new(SocketType::Pull, Options::default()).unwrap();
        pull.bind(&format!("inproc://{name}")).await.unwrap();
        let push = Socket::new(SocketType::Push, Options::default()).unwrap();
        push.connect(&format!("inproc://{name}")).await.unwrap();
        // One received first: the receiver has looked, so the next ones wait in the lane.
        push.send(Message::from(0u32.to_be_bytes())).await.unwrap();
        within(pull.recv()).await.unwrap();
        push.send(Message::from(1u32.to_be_bytes())).await.unwrap();
        assert_eq!(
            within(pull.recv()).await.unwrap().parts()[0][..],
            1u32.to_be_bytes()
        );
        for i in 2..600u32 {
            push.send(Message::from(i.to_be_bytes())).await.unwrap();
        }
        match how {
            "close" => within(push.close()).await.unwrap(),
            "drop" => drop(push),
            _ => {
                within(push.disconnect(&format!("inproc://{name}")))
                    .await
                    .unwrap();
                drop(push);
            }
        }
        for i in 2..600u32 {
            let m = within(pull.recv()).await.unwrap();
            assert_eq!(m.parts()[0][..], i.to_be_bytes(), "{how}");
        }
    }
}

/// Bursts with pauses on both sides, across threads, through every receive path (recv,
/// try_recv, try_recv_many, the Stream): nothing lost, nothing duplicated, in order, and a
/// receiver that went to sleep on an empty lane is always woken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bursts_and_pauses_every_receive_path() {
    use futures_util::StreamExt;
    let pull = Socket::new(SocketType::Pull, Options::default().recv_hwm(7)).unwrap();
    pull.bind("inproc://bursts").await.unwrap();
    let push = Socket::new(SocketType::Push, Options::default().send_hwm(5)).unwrap();
    push.connect("inproc://bursts").await.unwrap();
    let n = 20_000u32;
    let sender = tokio::spawn(async move {
        for i in 0..n {
            push.send(Message::from(i.to_be_bytes())).await.unwrap();
            if i.is_multiple_of(997) {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        push
    });
    let mut next = 0u32;
    let mut stream = pull.stream();
    let mut batch = Vec::new();
    while next < n {
        let got: Vec<Message> = match next % 4 {
            0 => vec![within(pull.recv()).await.unwrap()],
            1 => match pull.try_recv() {
                Ok(m) => vec![m],
                Err(Error::WouldBlock) => {
                    tokio::task::yield_now().await;
                    vec![]
                }
                Err(e) => panic!("{e}"),
            },
            2 => {
                batch.clear();
                pull.try_recv_many(&mut batch, 3).unwrap();
                if batch.is_empty() {
                    tokio::task::yield_now().await;
                }
                std::mem::take(&mut batch)
            }
            _ => vec![within(stream.next()).await.unwrap().unwrap()],
        };
        for m in got {
            assert_eq!(m.parts()[0][..], next.to_be_bytes());
            next += 1;
        }
        if next.is_multiple_of(1500) {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    let _push = sender.await.unwrap();
    assert!(matches!(pull.try_recv(), Err(Error::WouldBlock)));
}

/// Once the receiver has read (it is busy, so its sender leaves what follows in its own pipe
/// instead of handing over each message), the link still holds exactly SNDHWM + RCVHWM,
/// through every send path, and all of it arrives in order.
#[tokio::test]
async fn a_busy_receiver_still_holds_exactly_sndhwm_plus_rcvhwm() {
    use futures_util::Sink;
    use std::pin::Pin;
    for path in ["try_send", "send", "try_send_many", "sink"] {
        let name = format!("inproc://busy-{path}");
        let pull = Socket::new(SocketType::Pull, Options::default().recv_hwm(3)).unwrap();
        pull.bind(&name).await.unwrap();
        let opts = Options::default()
            .send_hwm(5)
            .send_timeout(Some(Duration::ZERO));
        let push = Socket::new(SocketType::Push, opts).unwrap();
        push.connect(&name).await.unwrap();
        push.send(Message::from("first")).await.unwrap();
        within(pull.recv()).await.unwrap();
        let msg = |i: usize| Message::from(i.to_string());
        let mut n = 0;
        match path {
            "try_send" => {
                while push.try_send(msg(n)).is_ok() {
                    n += 1;
                    assert!(n < 100);
                }
            }
            "send" => {
                while push.send(msg(n)).await.is_ok() {
                    n += 1;
                    assert!(n < 100);
                }
            }
            "try_send_many" => loop {
                let mut q: std::collections::VecDeque<Message> = (n..n + 4).map(msg).collect();
                let sent = push.try_send_many(&mut q).unwrap();
                n += sent;
                if sent == 0 {
                    break;
                }
                assert!(n < 100);
            },
            _ => {
                let mut sink = push.sink();
                let waker = futures_util::task::noop_waker();
                let mut cx = std::task::Context::from_waker(&waker);
                while Pin::new(&mut sink).poll_ready(&mut cx).is_ready() {
                    Pin::new(&mut sink).start_send(msg(n)).unwrap();
                    n += 1;
                    assert!(n < 100);
                }
            }
        }
        assert_eq!(n, 5 + 3, "{path}");
        for i in 0..n {
            let m = within(pull.recv()).await.unwrap();
            assert_eq!(m.parts()[0][..], *i.to_string().as_bytes(), "{path}");
        }
    }
}

/// A subscription goes to an in-process publisher at once even while data the XSUB sent
/// waits for the publisher to read (it never does here): commands never wait behind
/// messages.
#[tokio::test]
async fn a_subscription_is_not_held_behind_unread_upstream_data() {
    let xpub = Socket::new(SocketType::XPub, Options::default()).unwrap();
    xpub.bind("inproc://sub-behind-data").await.unwrap();
    let xsub = Socket::new(SocketType::XSub, Options::default()).unwrap();
    xsub.connect("inproc://sub-behind-data").await.unwrap();
    xsub.send(Message::from("d0")).await.unwrap();
    assert_eq!(within(xpub.recv()).await.unwrap(), Message::from("d0"));
    // The publisher has read, so these stay with the XSUB until it reads again.
    xsub.send(Message::from("d1")).await.unwrap();
    xsub.send(Message::from("d2")).await.unwrap();
    xsub.send(Message::from(&b"\x01A"[..])).await.unwrap();
    // The publisher never receives; the subscription must still have reached it.
    let deadline = tokio::time::Instant::now() + T;
    loop {
        xpub.send(Message::from("A-hello")).await.unwrap();
        if let Ok(m) = tokio::time::timeout(Duration::from_millis(20), xsub.recv()).await {
            assert_eq!(m.unwrap(), Message::from("A-hello"));
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "subscription held back"
        );
    }
}

/// A sender dropped after its runtime has gone (no task left to honour LINGER, so it closes
/// on the spot) still leaves to its in-process peer everything it had sent, including what
/// waited in its own pipe while the peer was busy.
#[test]
fn messages_on_their_way_survive_a_drop_after_the_runtime() {
    let current = || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    };
    let (pull_rt, push_rt) = (current(), current());
    let pull = pull_rt.block_on(async {
        let pull = Socket::new(SocketType::Pull, Options::default()).unwrap();
        pull.bind("inproc://drop-after-runtime").await.unwrap();
        pull
    });
    let push = push_rt.block_on(async {
        let push = Socket::new(SocketType::Push, Options::default()).unwrap();
        push.connect("inproc://drop-after-runtime").await.unwrap();
        push.send(Message::from(0u32.to_be_bytes())).await.unwrap();
        push
    });
    pull_rt.block_on(async { within(pull.recv()).await.unwrap() });
    push_rt.block_on(async {
        for i in 1..600u32 {
            push.send(Message::from(i.to_be_bytes())).await.unwrap();
        }
    });
    drop(push_rt);
    drop(push);
    pull_rt.block_on(async {
        for i in 1..600u32 {
            let m = within(pull.recv()).await.unwrap();
            assert_eq!(m.parts()[0][..], i.to_be_bytes());
        }
    });
}
