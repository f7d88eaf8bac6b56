//! Subscriptions are peer input: what the tries hold must stay proportional to the distinct
//! topics' bytes (a hostile 64 KiB SUBSCRIBE must not cost megabytes), and cancelling
//! everything must give all of it back.
//!
//! One test per binary: the allocation counters are process-wide.

use std::alloc::System;
use std::collections::BTreeSet;

use omq_core::pipe::{Origin, PipeState, Pipes};
use omq_core::routing::trie::{PipeSet, Trie};
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Bytes allocated and not yet freed since the region began.
fn held(region: &Region<'_, System>) -> isize {
    let s = region.change();
    s.bytes_allocated as isize - s.bytes_deallocated as isize
}

/// `n` topics of 1 to 48 bytes over four letters (xorshift, fixed seed): they share prefixes
/// and part ways at every depth.
fn random_topics(n: usize) -> Vec<Vec<u8>> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..n)
        .map(|_| {
            let len = 1 + (next() % 48) as usize;
            (0..len).map(|_| b'a' + (next() % 4) as u8).collect()
        })
        .collect()
}

#[test]
fn memory_follows_the_distinct_topics() {
    const TOPIC: usize = 64 * 1024;
    let mut table = Pipes::default();
    let a = table.insert(Origin::Connect(0), PipeState::Active);
    let b = table.insert(Origin::Connect(0), PipeState::Active);
    let topic = vec![b'x'; TOPIC];

    // One 64 KiB topic, on each side.
    let mut pubs: Trie<PipeSet> = Trie::new();
    let region = Region::new(GLOBAL);
    pubs.add(&topic, a);
    pubs.add(&topic, b);
    let pub_one = held(&region);
    pubs.remove(&topic, a);
    pubs.remove(&topic, b);
    let pub_after = held(&region);

    let mut subs: Trie<u32> = Trie::new();
    let region = Region::new(GLOBAL);
    subs.add(&topic);
    subs.add(&topic);
    let sub_one = held(&region);
    subs.remove(&topic);
    subs.remove(&topic);
    let sub_after = held(&region);

    eprintln!("64 KiB topic: publisher trie {pub_one} bytes, subscriber trie {sub_one} bytes");
    assert!(
        pub_one < 4 * TOPIC as isize,
        "{pub_one} bytes for a 64 KiB topic"
    );
    assert!(
        sub_one < 4 * TOPIC as isize,
        "{sub_one} bytes for a 64 KiB topic"
    );
    assert_eq!(
        (pub_after, sub_after),
        (0, 0),
        "memory left after cancelling"
    );
    assert!(pubs.is_empty() && subs.is_empty());

    // Many short topics that branch a lot.
    let topics = random_topics(20_000);
    let distinct: BTreeSet<&[u8]> = topics.iter().map(|t| &t[..]).collect();
    let distinct_bytes: usize = distinct.iter().map(|t| t.len()).sum();
    let bound = (2 * distinct_bytes + 256 * distinct.len()) as isize;

    let region = Region::new(GLOBAL);
    for (i, t) in topics.iter().enumerate() {
        pubs.add(t, a);
        if i % 2 == 0 {
            pubs.add(t, b);
        }
    }
    let pub_many = held(&region);
    drop(pubs.remove_pipe(a));
    drop(pubs.remove_pipe(b));
    let pub_after = held(&region);

    let region = Region::new(GLOBAL);
    for t in &topics {
        subs.add(t);
    }
    let sub_many = held(&region);
    for t in &topics {
        subs.remove(t);
    }
    let sub_after = held(&region);

    eprintln!(
        "{} distinct topics, {distinct_bytes} bytes: publisher trie {pub_many} bytes, \
         subscriber trie {sub_many} bytes",
        distinct.len()
    );
    assert!(pub_many < bound, "{pub_many} bytes, over {bound}");
    assert!(sub_many < bound, "{sub_many} bytes, over {bound}");
    assert_eq!(
        (pub_after, sub_after),
        (0, 0),
        "memory left after cancelling"
    );
    assert!(pubs.is_empty() && subs.is_empty());
}
