//! The outbox (omq-driver/src/outbox.rs): on tokio's multi-threaded scheduler, PUSH, DEALER
//! and PAIR sends go ahead of the socket's lock through a lock-free queue a connection task
//! moves in batches. Over real tcp sockets: SNDHWM stays exact, a close moves what the queue
//! holds, senders on many threads keep their order and lose nothing, and a connection that
//! goes away strands nothing. Timing is only bounded from above, with wide slack.

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use futures_util::StreamExt;
use omq_tokio::{Error, EventKind, Message, Options, Socket, SocketType};

const T: Duration = Duration::from_secs(20);

fn runtime(workers: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .unwrap()
}

async fn within<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(T, f).await.expect("took too long")
}

/// Waits until the socket's dump says `what`.
async fn until_dump(s: &Socket, what: &str) {
    within(async {
        while !s.debug_dump().contains(what) {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await
}

/// A PULL on a thread and current-thread runtime of its own, bound to tcp: returns its
/// endpoint and a receiver of everything it receives (it stops after `n`).
fn pull_elsewhere(n: usize) -> (String, mpsc::Receiver<Message>) {
    let (tx, rx) = mpsc::channel();
    (pull_into(n, tx, |m| m), rx)
}

/// A PULL as [`pull_elsewhere`], handing what it receives to `tx` through `tag`.
fn pull_into<M: Send + 'static>(
    n: usize,
    tx: mpsc::Sender<M>,
    tag: impl Fn(Message) -> M + Send + 'static,
) -> String {
    let (ep_tx, ep_rx) = mpsc::channel();
    on_own_thread(async move {
        let pull = Socket::new(SocketType::Pull, Options::default()).unwrap();
        let ep = pull.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
        ep_tx.send(ep).unwrap();
        for _ in 0..n {
            let m = within(pull.recv()).await.unwrap();
            if tx.send(tag(m)).is_err() {
                return;
            }
        }
    });
    ep_rx.recv().unwrap()
}

/// Runs `f` on a thread and current-thread runtime of its own.
fn on_own_thread(f: impl std::future::Future<Output = ()> + Send + 'static) {
    thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(f)
    });
}

fn body(k: u32, i: u32) -> Message {
    Message::multipart([k.to_be_bytes(), i.to_be_bytes()])
}

fn unbody(m: &Message) -> (u32, u32) {
    let n = |p: usize| u32::from_be_bytes(m.parts()[p][..].try_into().unwrap());
    (n(0), n(1))
}

/// A PUSH whose only peer accepted the connection and never answers the greeting: its
/// connection task runs (and moves the outbox), its pipe keeps every message. Senders on
/// four threads offer messages until refused: exactly SNDHWM go, through the outbox (the
/// dump shows the room it lent), and all of them in each sender's order.
#[test]
fn sndhwm_is_exact_through_the_outbox() {
    let rt = runtime(2);
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let ep = format!("tcp://{}", silent.local_addr().unwrap());
    let opts = Options::default()
        .send_hwm(40)
        .send_timeout(Some(Duration::ZERO));
    let push = rt.block_on(async {
        let push = Socket::new(SocketType::Push, opts).unwrap();
        push.connect(&ep).await.unwrap();
        push
    });
    let (_conn, _) = silent.accept().unwrap();
    rt.block_on(until_dump(&push, "outbox lent=40"));
    let senders: Vec<_> = (0..4u32)
        .map(|k| {
            let (push, h) = (push.clone(), rt.handle().clone());
            thread::spawn(move || {
                let mut n = 0;
                loop {
                    match h.block_on(push.send(body(k, n))) {
                        Ok(()) => n += 1,
                        Err(Error::WouldBlock) => return n,
                        Err(e) => panic!("{e}"),
                    }
                    assert!(n <= 40);
                }
            })
        })
        .collect();
    let sent: u32 = senders.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(sent, 40, "SNDHWM 40, four senders through the outbox");
    // Nothing went past the pipe, and nothing is left on the way into it.
    rt.block_on(until_dump(&push, "outbox lent=0 stashed=0"));
    assert!(
        matches!(push.try_send(Message::from("more")), Err(e) if matches!(e.error, Error::WouldBlock))
    );
}

/// A close moves what senders queued ahead of the lock into the socket before it closes, so
/// LINGER covers it: the runtime's only worker is kept busy while a thread sends 60 messages
/// (through the outbox: the connection task that would move them cannot run) and closes; all
/// of them arrive once the worker is free.
#[test]
fn close_moves_what_the_outbox_holds() {
    let rt = runtime(1);
    let (ep, got) = pull_elsewhere(61);
    let push = rt.block_on(async {
        let push = Socket::new(SocketType::Push, Options::default()).unwrap();
        push.connect(&ep).await.unwrap();
        push.send(Message::from("first")).await.unwrap();
        push
    });
    assert_eq!(got.recv_timeout(T).unwrap(), Message::from("first"));
    rt.block_on(until_dump(&push, "outbox lent=64"));
    let (busy_tx, busy_rx) = mpsc::channel();
    rt.spawn(async move {
        busy_tx.send(()).unwrap();
        // Blocks the worker on purpose: the socket's tasks wait meanwhile.
        thread::sleep(Duration::from_millis(400));
    });
    busy_rx.recv().unwrap();
    let h = rt.handle().clone();
    for i in 0..60u32 {
        h.block_on(push.send(body(0, i))).unwrap();
    }
    assert!(
        push.debug_dump().contains("lent=64"),
        "the sends went through the outbox: {}",
        push.debug_dump()
    );
    h.block_on(push.close()).unwrap();
    for i in 0..60u32 {
        let m = got.recv_timeout(T).expect("a message sent before close");
        assert_eq!(unbody(&m), (0, i));
    }
}

/// One PUSH shared by four threads blocking on the runtime, 20,000 messages each, to two
/// PULLs: everything arrives, each sender's messages in order at each receiver.
#[test]
fn four_threads_on_one_push_lose_nothing_and_keep_their_order() {
    let rt = runtime(2);
    let (tx, got) = mpsc::channel();
    let a = pull_into(usize::MAX, tx.clone(), |m| (0usize, m));
    let b = pull_into(usize::MAX, tx, |m| (1usize, m));
    let push = rt.block_on(async {
        let push = Socket::new(SocketType::Push, Options::default()).unwrap();
        push.connect(&a).await.unwrap();
        push.connect(&b).await.unwrap();
        push
    });
    const N: u32 = 20_000;
    let senders: Vec<_> = (0..4u32)
        .map(|k| {
            let (push, h) = (push.clone(), rt.handle().clone());
            thread::spawn(move || {
                for i in 0..N {
                    h.block_on(push.send(body(k, i))).unwrap();
                }
            })
        })
        .collect();
    for t in senders {
        t.join().unwrap();
    }
    let mut seen = [0u32; 4];
    let mut last = [[None::<u32>; 4]; 2];
    for _ in 0..4 * N {
        let (side, m) = got.recv_timeout(T).expect("every message arrives");
        let (k, i) = unbody(&m);
        let prev = last[side][k as usize].replace(i);
        assert!(
            prev.is_none_or(|p| p < i),
            "sender {k}'s order at receiver {side}"
        );
        seen[k as usize] += 1;
    }
    assert_eq!(seen, [N; 4]);
    rt.block_on(push.close()).unwrap();
}

/// The connection whose task moves the outbox goes away: another takes over (or the senders
/// move it themselves), so nothing waits in the queue with nobody to move it. A PUSH with
/// IMMEDIATE connects to A (whose connection task becomes the mover) and then to B; A is
/// closed; each message sent after the PUSH saw A go arrives at B. Twelve times.
#[test]
fn a_lost_connection_strands_nothing() {
    let rt = runtime(2);
    let h = rt.handle().clone();
    for round in 0..12u32 {
        let (b, got_b) = pull_elsewhere(usize::MAX);
        let (a, a_stop) = pull_until_told();
        let push = h.block_on(async {
            Socket::new(SocketType::Push, Options::default().immediate(true)).unwrap()
        });
        let mut events = push.monitor();
        let mut wait_for = |kind: EventKind, ep: &str| {
            h.block_on(within(async {
                while let Some(e) = events.next().await {
                    if e.kind == kind && e.endpoint == ep {
                        return;
                    }
                }
            }))
        };
        h.block_on(push.connect(&a)).unwrap();
        wait_for(EventKind::HandshakeSucceeded, &a);
        h.block_on(until_dump(&push, "mover=Some"));
        h.block_on(push.connect(&b)).unwrap();
        wait_for(EventKind::HandshakeSucceeded, &b);
        for i in 0..200 {
            h.block_on(push.send(body(round, i))).unwrap();
        }
        a_stop.send(()).unwrap();
        wait_for(EventKind::Disconnected, &a);
        h.block_on(push.disconnect(&a)).unwrap();
        // Only B is left. One message at a time, each after the last arrived (so B's task
        // is idle when it is sent): every one arrives there.
        for i in 1000..1020 {
            h.block_on(push.send(body(round, i))).unwrap();
            loop {
                let m = got_b
                    .recv_timeout(T)
                    .expect("a message sent with only B connected");
                let (r, j) = unbody(&m);
                assert_eq!(r, round);
                if j >= 1000 {
                    assert_eq!(j, i, "round {round}");
                    break;
                }
            }
        }
        h.block_on(push.close()).unwrap();
    }
}

/// A PULL on its own thread that reads until told to stop, then closes.
fn pull_until_told() -> (String, mpsc::Sender<()>) {
    let (ep_tx, ep_rx) = mpsc::channel();
    let (stop_tx, stop_rx) = mpsc::channel::<()>();
    on_own_thread(async move {
        let pull = Socket::new(
            SocketType::Pull,
            Options::default().linger(Some(Duration::ZERO)),
        )
        .unwrap();
        let ep = pull.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
        ep_tx.send(ep).unwrap();
        loop {
            if stop_rx.try_recv().is_ok() {
                break;
            }
            let _ = tokio::time::timeout(Duration::from_millis(5), pull.recv()).await;
        }
        pull.close().await.ok();
    });
    (ep_rx.recv().unwrap(), stop_tx)
}

/// A DEALER sends through the outbox and receives as before: requests to a ROUTER that
/// echoes them come back whole and in order.
#[test]
fn a_dealer_through_the_outbox_gets_its_replies() {
    let rt = runtime(2);
    rt.block_on(async {
        let router = Socket::new(SocketType::Router, Options::default()).unwrap();
        let ep = router.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
        let echo = tokio::spawn(async move {
            for _ in 0..2000 {
                let m = within(router.recv()).await.unwrap();
                router.send(m).await.unwrap();
            }
            router
        });
        let dealer = Socket::new(SocketType::Dealer, Options::default()).unwrap();
        dealer.connect(&ep).await.unwrap();
        for i in 0..1000u32 {
            dealer.send(body(1, i)).await.unwrap();
        }
        for i in 0..1000u32 {
            assert_eq!(unbody(&within(dealer.recv()).await.unwrap()), (1, i));
        }
        for i in 0..1000u32 {
            dealer.send(body(2, i)).await.unwrap();
            assert_eq!(unbody(&within(dealer.recv()).await.unwrap()), (2, i));
        }
        assert!(
            dealer.debug_dump().contains("outbox"),
            "the DEALER has an outbox"
        );
        echo.await.unwrap();
    });
}

/// A socket made on a current-thread runtime has no outbox (its sends and connection tasks
/// share one thread), and neither do the types whose sends keep state or route by message.
#[test]
fn only_the_balanced_types_on_a_multi_threaded_runtime_have_one() {
    let st = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let push = st.block_on(async { Socket::new(SocketType::Push, Options::default()).unwrap() });
    assert!(!push.debug_dump().contains("outbox"));
    let rt = runtime(2);
    for (t, has) in [
        (SocketType::Push, true),
        (SocketType::Dealer, true),
        (SocketType::Pair, true),
        (SocketType::Req, false),
        (SocketType::Router, false),
        (SocketType::Pub, false),
    ] {
        let s = rt.block_on(async { Socket::new(t, Options::default()).unwrap() });
        assert_eq!(s.debug_dump().contains("outbox"), has, "{t:?}");
    }
}
