//! Subscriptions are peer input: what the tries hold must stay proportional to the distinct
//! topics' bytes (a hostile 64 KiB SUBSCRIBE must not cost megabytes), and cancelling
//! everything must give all of it back.
//!
//! One test per binary: the allocation counters are process-wide.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::BTreeSet;

use omq_core::pipe::{Origin, PipeState, Pipes};
use omq_core::routing::trie::{PipeSet, Trie};

/// Counts the bytes this thread holds: the test harness's other threads allocate now and then
/// (a process-wide count made this test fail about one run in four with "900 bytes left").
struct PerThread;

thread_local! {
    static HELD: Cell<isize> = const { Cell::new(0) };
}

fn count(delta: isize) {
    // `try_with`: nothing to count while the thread is being torn down.
    let _ = HELD.try_with(|h| h.set(h.get() + delta));
}

// SAFETY-free: the allocator forwards to `System` and only counts; no unsafe beyond the
// trait's own contract, which `System` fulfils.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for PerThread {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as isize);
        // SAFETY: same layout, passed straight to the system allocator.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as isize));
        // SAFETY: `ptr` came from `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size as isize - layout.size() as isize);
        // SAFETY: `ptr` came from this allocator with `layout`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: PerThread = PerThread;

/// Bytes this thread allocated and has not freed since a region began.
struct Region(isize);

impl Region {
    fn new() -> Region {
        Region(HELD.with(Cell::get))
    }
}

fn held(region: &Region) -> isize {
    HELD.with(Cell::get) - region.0
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
    let region = Region::new();
    pubs.add(&topic, a);
    pubs.add(&topic, b);
    let pub_one = held(&region);
    pubs.remove(&topic, a);
    pubs.remove(&topic, b);
    let pub_after = held(&region);

    let mut subs: Trie<u32> = Trie::new();
    let region = Region::new();
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

    let region = Region::new();
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

    let region = Region::new();
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
