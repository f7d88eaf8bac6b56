//! Subscriptions are peer input: no topic, however long, and no nesting of topics, however
//! deep, may overflow the stack. Everything runs on a thread with a 64 KiB stack, where any
//! walk that recursed once per topic byte or per nested topic would overflow (and abort the
//! process).

use std::time::Instant;

use bytes::Bytes;
use omq_core::pipe::{Origin, PipeId, PipeState, Pipes};
use omq_core::routing::trie::{PipeSet, Trie};
use omq_core::{CloseReason, Message, Options, PeerInfo, Socket, SocketType};

const SMALL_STACK: usize = 64 * 1024;
const MIB: usize = 1 << 20;

fn on_small_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(SMALL_STACK)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap();
}

fn pipe_ids(n: usize) -> Vec<PipeId> {
    let mut table = Pipes::default();
    (0..n)
        .map(|_| table.insert(Origin::Connect(0), PipeState::Active))
        .collect()
}

/// A 1 MiB topic, subscribed, matched, listed, cancelled; then subscribed and dropped.
#[test]
fn a_long_topic_in_a_count_trie() {
    on_small_stack(|| {
        let topic = vec![b'a'; MIB];
        let mut t: Trie<u32> = Trie::new();
        assert!(t.add(&topic));
        let mut longer = topic.clone();
        longer.push(b'!');
        assert!(t.matches(&topic) && t.matches(&longer));
        assert!(!t.matches(&topic[1..]));
        assert_eq!(t.topics().len(), 1);
        assert!(!t.remove(&topic[1..]));
        assert!(t.remove(&topic));
        assert!(t.is_empty());
        t.add(&topic);
        drop(t);
    });
}

#[test]
fn a_long_topic_in_a_pipe_trie() {
    on_small_stack(|| {
        let [a, b] = pipe_ids(2)[..] else {
            unreachable!()
        };
        let topic = vec![b'a'; MIB];
        let mut t: Trie<PipeSet> = Trie::new();
        assert!(t.add(&topic, a).topic);
        assert!(!t.add(&topic, b).topic);
        let mut seen = Vec::new();
        t.for_each_prefix(&topic, |set| seen.extend_from_slice(set));
        assert_eq!(seen, [a, b]);
        assert!(!t.remove(&topic, a).topic);
        assert!(t.remove(&topic, b).topic);
        assert!(t.is_empty());
        t.add(&topic, a);
        assert_eq!(t.remove_pipe(a), [Bytes::from(topic.clone())]);
        assert!(t.is_empty());
        t.add(&topic, a);
        drop(t);
    });
}

/// Topics nested 2000 deep ("", "a", "aa", ...): as many levels as topics, each walk
/// passing them all.
#[test]
fn deeply_nested_topics() {
    const DEPTH: usize = 2000;
    on_small_stack(|| {
        let [a] = pipe_ids(1)[..] else { unreachable!() };
        let deepest = vec![b'a'; DEPTH];
        let mut t: Trie<PipeSet> = Trie::new();
        let mut counts: Trie<u32> = Trie::new();
        for len in 0..=DEPTH {
            t.add(&deepest[..len], a);
            counts.add(&deepest[..len]);
        }
        assert_eq!(t.topics().len(), DEPTH + 1);
        let mut visits = 0;
        t.for_each_prefix(&deepest, |_| visits += 1);
        assert_eq!(visits, DEPTH + 1);
        assert_eq!(t.remove_pipe(a).len(), DEPTH + 1);
        assert!(t.is_empty());
        for len in 0..=DEPTH {
            assert!(counts.remove(&deepest[..len]));
        }
        assert!(counts.is_empty());
        for len in 0..=DEPTH {
            t.add(&deepest[..len], a);
        }
        drop(t);
    });
}

/// The same through a PUB socket: a peer's 1 MiB SUBSCRIBE and CANCEL, its disconnection,
/// and dropping the socket while it holds the subscription.
#[test]
fn a_long_subscription_through_a_pub_socket() {
    on_small_stack(|| {
        let now = Instant::now();
        let mut s = Socket::new(SocketType::Pub, Options::default(), 1).unwrap();
        let accept = |s: &mut Socket| {
            let (p, _) = s.handle_accepted("tcp://127.0.0.1:1", now);
            let peer = PeerInfo::new(SocketType::Sub);
            s.handle_ready(p, peer, now);
            p
        };
        let p = accept(&mut s);
        let topic = Bytes::from(vec![b't'; MIB]);
        s.handle_subscribe(p, topic.clone());
        s.send(Message::from(topic.to_vec())).unwrap();
        assert!(s.poll_transmit(p).is_some());
        s.handle_cancel(p, topic.clone());
        s.handle_subscribe(p, topic.clone());
        s.handle_closed(p, &CloseReason::Eof, now);
        let q = accept(&mut s);
        s.handle_subscribe(q, topic);
        drop(s);
    });
}
