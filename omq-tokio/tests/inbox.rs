//! The inbox (omq-driver/src/inbox.rs): a receive on a PULL, SUB, DEALER, ROUTER or PAIR that
//! takes the socket's lock also takes what else is queued, up to 32 messages, ahead of the
//! application, and the next receives take those without the lock. Over real tcp sockets:
//! every way of receiving hands them out in order, two receivers on one socket get every
//! message once, close drops what was taken ahead, and REQ takes nothing ahead. Timing is
//! only bounded from above, with wide slack.

use std::time::Duration;

use futures_util::StreamExt;
use omq_tokio::{Error, Message, Options, Socket, SocketType};

const T: Duration = Duration::from_secs(20);

/// How many messages a receive takes ahead at most (omq-driver's `INBOX_CAP`).
const CAP: usize = 32;

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

/// The messages queued in the socket's pipes, from its dump.
fn queued(s: &Socket) -> usize {
    s.debug_dump()
        .split("in: ")
        .skip(1)
        .filter_map(|rest| rest.split(',').next()?.parse::<usize>().ok())
        .sum()
}

fn numbered(i: u32) -> Message {
    Message::from(&i.to_le_bytes()[..])
}

fn number(m: &Message) -> u32 {
    u32::from_le_bytes(m.get(0).unwrap()[..4].try_into().unwrap())
}

/// A `kind` socket bound over tcp with `n` numbered messages from a `peer` queued in its pipe
/// (the sender is returned so the connection stays up).
async fn with_queued(kind: SocketType, peer: SocketType, n: u32) -> (Socket, Socket) {
    let receiver = Socket::new(kind, Options::default()).unwrap();
    let ep = receiver
        .bind("tcp://127.0.0.1:0")
        .await
        .unwrap()
        .to_string();
    let push = Socket::new(peer, Options::default()).unwrap();
    push.connect(&ep).await.unwrap();
    for i in 0..n {
        within(push.send(numbered(i))).await.unwrap();
    }
    until_dump(&receiver, &format!("in: {n},")).await;
    (receiver, push)
}

#[tokio::test]
async fn every_way_of_receiving_hands_out_taken_ahead_messages_in_order() {
    const N: u32 = 300;
    let (pull, _push) = with_queued(SocketType::Pull, SocketType::Push, N).await;
    let first = within(pull.recv()).await.unwrap();
    assert_eq!(number(&first), 0);
    // The first receive took the next 32 ahead.
    assert!(
        pull.debug_dump().contains(&format!("taken_ahead={CAP}")),
        "{}",
        pull.debug_dump()
    );
    let mut stream = pull.stream();
    let mut got = vec![0];
    let mut turn = 0;
    while got.len() < N as usize {
        turn += 1;
        match turn % 4 {
            0 => got.push(number(&within(pull.recv()).await.unwrap())),
            1 => match pull.try_recv() {
                Ok(m) => got.push(number(&m)),
                Err(Error::WouldBlock) => {}
                Err(e) => panic!("{e}"),
            },
            2 => {
                let mut batch = Vec::new();
                pull.try_recv_many(&mut batch, 3).unwrap();
                got.extend(batch.iter().map(number));
            }
            _ => got.push(number(&within(stream.next()).await.unwrap().unwrap())),
        }
    }
    assert_eq!(got, (0..N).collect::<Vec<_>>());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_receivers_on_one_socket_get_every_message_once() {
    const N: u32 = 2_000;
    let pull = Socket::new(SocketType::Pull, Options::default()).unwrap();
    let ep = pull.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
    let push = Socket::new(SocketType::Push, Options::default()).unwrap();
    push.connect(&ep).await.unwrap();
    let receiver = |pull: Socket| {
        tokio::spawn(async move {
            let mut got = Vec::new();
            loop {
                let m = within(pull.recv()).await.unwrap();
                let n = number(&m);
                if n == u32::MAX {
                    return got;
                }
                got.push(n);
            }
        })
    };
    let a = receiver(pull.clone());
    let b = receiver(pull.clone());
    for i in 0..N {
        within(push.send(numbered(i))).await.unwrap();
    }
    // One end marker for each receiver.
    for _ in 0..2 {
        within(push.send(numbered(u32::MAX))).await.unwrap();
    }
    let (a, b) = (a.await.unwrap(), b.await.unwrap());
    // Each receiver's share is in order, and together they are every message once.
    assert!(a.windows(2).all(|w| w[0] < w[1]));
    assert!(b.windows(2).all(|w| w[0] < w[1]));
    let mut all: Vec<u32> = a.into_iter().chain(b).collect();
    all.sort_unstable();
    assert_eq!(all, (0..N).collect::<Vec<_>>());
}

#[tokio::test]
async fn close_drops_what_was_taken_ahead() {
    let (pull, _push) = with_queued(SocketType::Pull, SocketType::Push, 100).await;
    let other = pull.clone();
    within(pull.recv()).await.unwrap();
    assert!(other.debug_dump().contains("taken_ahead="));
    within(pull.close()).await.unwrap();
    assert!(
        matches!(other.try_recv(), Err(Error::Closed)),
        "a receive after close got a message taken ahead"
    );
}

#[tokio::test]
async fn a_dealer_and_a_sub_take_ahead() {
    let (dealer, _peer) = with_queued(SocketType::Dealer, SocketType::Dealer, 50).await;
    within(dealer.recv()).await.unwrap();
    assert!(dealer.debug_dump().contains("taken_ahead="));
    let sub = Socket::new(SocketType::Sub, Options::default()).unwrap();
    sub.subscribe(b"").unwrap();
    let ep = sub.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
    let publisher = Socket::new(SocketType::Pub, Options::default()).unwrap();
    publisher.connect(&ep).await.unwrap();
    // Until the subscription has reached the publisher, what it sends is dropped.
    within(async {
        while sub.try_recv().is_err() {
            publisher.send(numbered(0)).await.unwrap();
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await;
    for i in 1..=50 {
        publisher.send(numbered(i)).await.unwrap();
    }
    // Late probes may still be queued ahead of the 50.
    within(async {
        while queued(&sub) < 50 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await;
    let mut first = number(&within(sub.recv()).await.unwrap());
    assert!(sub.debug_dump().contains("taken_ahead="));
    while first == 0 {
        first = number(&within(sub.recv()).await.unwrap());
    }
    assert_eq!(first, 1);
}

/// CONFLATE keeps only the newest message of each pipe; one taken ahead would outlive a newer
/// one. A conflating PULL with two peers: after the first receive, the other peer's older
/// message must still be in its pipe, where its newer one replaces it.
#[tokio::test]
async fn a_conflating_socket_takes_nothing_ahead() {
    let pull = Socket::new(SocketType::Pull, Options::default().conflate(true)).unwrap();
    let ep = pull.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
    let a = Socket::new(SocketType::Push, Options::default()).unwrap();
    a.connect(&ep).await.unwrap();
    let b = Socket::new(SocketType::Push, Options::default()).unwrap();
    b.connect(&ep).await.unwrap();
    until_dump(&pull, "conns=2").await;
    within(a.send(numbered(1))).await.unwrap();
    within(async {
        while queued(&pull) < 1 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await;
    within(b.send(numbered(2))).await.unwrap();
    within(async {
        while queued(&pull) < 2 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await;
    assert_eq!(number(&within(pull.recv()).await.unwrap()), 1);
    assert!(
        !pull.debug_dump().contains("taken_ahead="),
        "{}",
        pull.debug_dump()
    );
    // b's newer message, then b goes: its connection ends after the message on the same
    // stream, so once the PULL has one connection left the message is in.
    within(b.send(numbered(3))).await.unwrap();
    within(b.close()).await.unwrap();
    until_dump(&pull, "conns=1").await;
    assert_eq!(number(&within(pull.recv()).await.unwrap()), 3);
}
