//! Property tests of the routing rules: round robin is fair over any attach/detach sequence,
//! fair queuing starves nobody, HWM bounds what is queued for any sequence of operations, no
//! message is delivered twice, the subscription trie equals a naive model, and a reconnect
//! never loses or duplicates a subscription.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use proptest::prelude::*;

use omq_core::pipe::{Outbound, PipeId};
use omq_core::routing::trie::{Change, PipeSet, Trie};
use omq_core::simnet::Net;
use omq_core::{CloseReason, Message, Options, PeerInfo, Socket, SocketType};

/// Accepts a new ready connection on a bound socket.
fn accept(s: &mut Socket, peer_type: SocketType, now: Instant) -> PipeId {
    let (p, _) = s.handle_accepted("tcp://127.0.0.1:1", now);
    s.handle_ready(p, PeerInfo::new(peer_type), now);
    p
}

#[derive(Debug, Clone)]
enum LbOp {
    Attach,
    Detach(usize),
    Send,
    Drain(usize),
}

fn lb_op() -> impl Strategy<Value = LbOp> {
    prop_oneof![
        1 => Just(LbOp::Attach),
        1 => (0usize..8).prop_map(LbOp::Detach),
        6 => Just(LbOp::Send),
        2 => (0usize..8).prop_map(LbOp::Drain),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Between attach/detach events, consecutive sends with room everywhere go to each pipe
    /// once per round; nothing queued ever exceeds SNDHWM; every message is taken once.
    #[test]
    fn round_robin_is_fair_and_hwm_bounds_queues(ops in proptest::collection::vec(lb_op(), 1..200), hwm in 1usize..6) {
        let now = Instant::now();
        let mut s = Socket::new(SocketType::Push, Options::default().send_hwm(hwm), 1).unwrap();
        let mut pipes: Vec<PipeId> = Vec::new();
        let mut sent = 0u64;
        let mut taken: HashSet<u64> = HashSet::new();
        let mut round: Vec<PipeId> = Vec::new();
        for op in ops {
            match op {
                LbOp::Attach => { pipes.push(accept(&mut s, SocketType::Pull, now)); round.clear(); }
                LbOp::Detach(i) if !pipes.is_empty() => {
                    let p = pipes.remove(i % pipes.len());
                    s.handle_closed(p, &CloseReason::Eof, now);
                    round.clear();
                }
                LbOp::Send => {
                    let msg = Message::from(sent.to_be_bytes().to_vec());
                    let all_have_room = s.pipes().iter().all(|p| p.queued_out() < hwm);
                    match s.send(msg) {
                        Ok(()) => {
                            sent += 1;
                            // Which pipe got it: the one whose queue grew.
                            let got: Vec<PipeId> = s.pipes().iter()
                                .filter(|p| p.outgoing().next_back().is_some_and(|m| m.parts()[0][..] == (sent - 1).to_be_bytes()))
                                .map(|p| p.id()).collect();
                            prop_assert_eq!(got.len(), 1);
                            if all_have_room {
                                prop_assert!(!round.contains(&got[0]), "a pipe got two messages in one round");
                                round.push(got[0]);
                                if round.len() == pipes.len() { round.clear(); }
                            } else {
                                round.clear();
                            }
                        }
                        Err(_) => {
                            prop_assert!(s.pipes().iter().all(|p| p.queued_out() >= hwm));
                        }
                    }
                }
                LbOp::Drain(i) if !pipes.is_empty() => {
                    let p = pipes[i % pipes.len()];
                    while let Some(Outbound::Message(m)) = s.poll_transmit(p) {
                        let n = u64::from_be_bytes(m.parts()[0][..].try_into().unwrap());
                        prop_assert!(taken.insert(n), "message {} taken twice", n);
                    }
                    round.clear();
                }
                _ => {}
            }
            for p in s.pipes().iter() {
                prop_assert!(p.queued_out() <= hwm);
            }
        }
    }

    /// With every peer sending all the time, a receiver reading n messages gets them spread
    /// evenly: no peer gets more than one message ahead of another.
    #[test]
    fn fair_queue_starves_nobody(peers in 1usize..6, per_peer in 1usize..20, reads in 1usize..60) {
        let now = Instant::now();
        let mut s = Socket::new(SocketType::Pull, Options::default().recv_hwm(0), 1).unwrap();
        let pipes: Vec<PipeId> = (0..peers).map(|_| accept(&mut s, SocketType::Push, now)).collect();
        for (i, p) in pipes.iter().enumerate() {
            for j in 0..per_peer {
                s.handle_message(*p, Message::from(vec![i as u8, j as u8])).unwrap();
            }
        }
        let mut counts = vec![0usize; peers];
        let mut seen = HashSet::new();
        for _ in 0..reads.min(peers * per_peer) {
            let m = s.recv().unwrap();
            let (i, j) = (m.parts()[0][0] as usize, m.parts()[0][1]);
            prop_assert!(seen.insert((i, j)), "delivered twice");
            counts[i] += 1;
            let max = *counts.iter().max().unwrap();
            let min_active = counts.iter().enumerate()
                .filter(|(k, c)| **c < per_peer || *k == i)
                .map(|(_, c)| *c).min().unwrap();
            prop_assert!(max - min_active <= 1, "{:?}", counts);
        }
    }

    /// RCVHWM bounds each pipe's incoming queue for any interleaving of arrivals and reads,
    /// and what is refused comes back to the caller (nothing is lost).
    #[test]
    fn rcvhwm_bounds_incoming(ops in proptest::collection::vec(any::<(bool, u8)>(), 1..300), hwm in 1usize..5) {
        let now = Instant::now();
        let mut s = Socket::new(SocketType::Pull, Options::default().recv_hwm(hwm), 1).unwrap();
        let pipes: Vec<PipeId> = (0..3).map(|_| accept(&mut s, SocketType::Push, now)).collect();
        let mut next = 0u32;
        let mut stash: HashMap<PipeId, Message> = HashMap::new();
        let mut got = Vec::new();
        for (arrive, who) in ops {
            let p = pipes[who as usize % 3];
            if arrive {
                let msg = stash.remove(&p).unwrap_or_else(|| { next += 1; Message::from(next.to_be_bytes().to_vec()) });
                if let Err(m) = s.handle_message(p, msg) { stash.insert(p, m); }
            } else if let Ok(m) = s.recv() {
                got.push(u32::from_be_bytes(m.parts()[0][..].try_into().unwrap()));
            }
            for pipe in s.pipes().iter() { prop_assert!(pipe.queued_in() <= hwm); }
            while s.poll_action().is_some() {}
        }
        while let Ok(m) = s.recv() { got.push(u32::from_be_bytes(m.parts()[0][..].try_into().unwrap())); }
        let mut all: Vec<u32> = got.clone();
        for m in stash.values() { all.push(u32::from_be_bytes(m.parts()[0][..].try_into().unwrap())); }
        all.sort_unstable();
        prop_assert_eq!(all, (1..=next).collect::<Vec<_>>());
    }

    /// Any sequence of subscribe/unsubscribe over a few pipes leaves the trie equal to a map
    /// of sets, and matching equals the naive prefix scan.
    #[test]
    fn trie_equals_naive_model(
        ops in proptest::collection::vec((any::<bool>(), 0u8..3, proptest::collection::vec(0u8..3, 0..4)), 0..100),
        probes in proptest::collection::vec(proptest::collection::vec(0u8..3, 0..6), 1..10),
    ) {
        let now = Instant::now();
        let mut s = Socket::new(SocketType::Push, Options::default(), 1).unwrap();
        let ids: Vec<PipeId> = (0..3).map(|_| accept(&mut s, SocketType::Pull, now)).collect();
        let mut trie: Trie<PipeSet> = Trie::new();
        let mut model: HashMap<Vec<u8>, HashSet<PipeId>> = HashMap::new();
        for (add, who, topic) in ops {
            let p = ids[who as usize];
            if add {
                let first = model.get(&topic).is_none_or(|s| s.is_empty());
                let new = model.entry(topic.clone()).or_default().insert(p);
                prop_assert_eq!(trie.add(&topic, p), Change { pipe: new, topic: first });
            } else {
                let had = model.get_mut(&topic).is_some_and(|s| s.remove(&p));
                let now_empty = model.get(&topic).is_none_or(|s| s.is_empty());
                prop_assert_eq!(
                    trie.remove(&topic, p),
                    Change { pipe: had, topic: had && now_empty }
                );
            }
        }
        let mut got: HashMap<Vec<u8>, HashSet<PipeId>> = HashMap::new();
        for (t, set) in trie.topics() { got.insert(t.to_vec(), set.iter().copied().collect()); }
        model.retain(|_, s| !s.is_empty());
        prop_assert_eq!(&got, &model);
        for probe in probes {
            let mut matched = HashSet::new();
            trie.for_each_prefix(&probe, |set| matched.extend(set.iter().copied()));
            let naive: HashSet<PipeId> = model.iter().filter(|(t, _)| probe.starts_with(t)).flat_map(|(_, s)| s.iter().copied()).collect();
            prop_assert_eq!(matched, naive);
        }
    }

    /// However often the connection drops, the publisher ends up with exactly the
    /// subscriber's current topics: nothing lost, nothing duplicated.
    #[test]
    fn reconnects_never_lose_or_duplicate_subscriptions(
        ops in proptest::collection::vec((0u8..4, 0u8..3), 1..40),
        seed: u64,
    ) {
        let mut net = Net::new(seed);
        let xpub = net.socket(SocketType::XPub, Options::default().xpub_verboser(true)).unwrap();
        let ep = net.bind(xpub, "tcp://*:0").unwrap();
        let sub = net.socket(SocketType::Sub, Options::default()).unwrap();
        net.connect(sub, &ep).unwrap();
        let mut model: HashMap<u8, u32> = HashMap::new();
        for (op, topic) in ops {
            match op {
                0 | 1 => { net.get(sub).subscribe(&[topic]).unwrap(); *model.entry(topic).or_default() += 1; }
                2 => {
                    net.get(sub).unsubscribe(&[topic]).unwrap();
                    if let Some(c) = model.get_mut(&topic) { *c = c.saturating_sub(1); }
                }
                _ => net.kill_connections(xpub),
            }
            net.run_for(Duration::from_millis(20));
        }
        net.run_for(Duration::from_millis(500));
        // Replay the XPUB's notifications into a per-topic state.
        let mut state: HashMap<u8, bool> = HashMap::new();
        while let Ok(m) = net.recv(xpub) {
            let b = &m.parts()[0];
            prop_assert_eq!(b.len(), 2);
            state.insert(b[1], b[0] == 1);
        }
        for t in 0..3u8 {
            let want = model.get(&t).copied().unwrap_or(0) > 0;
            prop_assert_eq!(state.get(&t).copied().unwrap_or(false), want, "topic {}", t);
        }
        // And the publisher's own table matches: a message per subscribed topic arrives once.
        for t in 0..3u8 { net.send(xpub, Message::from(vec![t])).unwrap(); }
        net.run_for(Duration::from_millis(20));
        let mut got = Vec::new();
        while let Ok(m) = net.recv(sub) { got.push(m.parts()[0][0]); }
        let want: Vec<u8> = (0..3u8).filter(|t| model.get(t).copied().unwrap_or(0) > 0).collect();
        prop_assert_eq!(got, want);
    }
}
