//! A connection's writes allocate nothing at steady state, on every backend: neither the list
//! of chunks the driver hands the backend nor the I/O slices the backend makes of it. A
//! connection that carries one message at a time (request and reply, a trickle of updates)
//! makes a write a message, so an allocation a write was an allocation a message; on tokio's
//! multi-threaded runtime, where a write carries a few messages, it was most of what that
//! layout allocated (docs/PERFORMANCE.md, stop 46).
//!
//! A REQ/REP round trip's messages allocate nothing on the REQ's thread either (the delimiter
//! travels as a flag of the message, not as a part that would spill the message's one inline
//! part); what is left is the runtime's and the waiting receive's (`check_req`).
//!
//! The allocator below counts per thread, for every test in this binary; each test counts
//! only on the thread its sending socket and that socket's connection task run on. glommio is
//! not counted: its executor allocates on that thread every time it polls (glommio 0.9.0
//! re-arms its preemption timer with a new `Source` each time, about five allocations a
//! message here whatever omq does), so a count there measures glommio. The chunk list is the
//! driver's, shared with it; its writer makes its slices on the stack (`net::send_now`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use conformance::backend::{Backend, CompioBackend, MonoioBackend, TokioBackend};
use omq_driver::{Message, Options, Socket, SocketType};

struct PerThread;

thread_local! {
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

fn count() {
    // `try_with`: nothing to count while the thread is being torn down.
    let _ = ALLOCS.try_with(|a| a.set(a.get() + 1));
}

#[allow(unsafe_code)]
// SAFETY: every call is passed straight to the system allocator; this only counts.
unsafe impl GlobalAlloc for PerThread {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: the same layout, passed to the system allocator.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `alloc` or `realloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: `ptr` came from this allocator with `layout`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: PerThread = PerThread;

/// Messages sent one at a time, each waited for, so that each goes out in a write of its own.
const MESSAGES: usize = 300;

/// Messages sent the same way before counting: the handshake, the buffers' first growth, the
/// runtime's own set-up.
const WARM_UP: usize = 50;

/// Allocations on the sending thread while [`MESSAGES`] messages go out one write each.
fn one_message_writes<B: Backend>() -> usize {
    // The PULL, on a thread and runtime of its own, says when each message has arrived
    // (through a channel whose receiving end allocates nothing).
    let (ep_tx, ep_rx) = std::sync::mpsc::channel();
    let (ack_tx, mut ack_rx) = tokio::sync::mpsc::unbounded_channel();
    let pull_thread = std::thread::spawn(move || {
        B::block_on(async move {
            let pull = Socket::<B::R>::new(SocketType::Pull, Options::default()).unwrap();
            let ep = pull.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
            ep_tx.send(ep).unwrap();
            for _ in 0..WARM_UP + MESSAGES {
                let m = pull.recv().await.unwrap();
                ack_tx.send(m.get(0).map_or(0, |p| p.len())).unwrap();
            }
            pull.close().await.unwrap();
        });
    });
    let ep = ep_rx.recv().unwrap();
    let counted = B::block_on_one_thread(async move {
        let push = Socket::<B::R>::new(SocketType::Push, Options::default()).unwrap();
        push.connect(&ep).await.unwrap();
        let mut one_by_one = async |n: usize| {
            for _ in 0..n {
                // Eight bytes: held inline, so the message itself allocates nothing.
                push.send(Message::from("8 bytes!")).await.unwrap();
                assert_eq!(ack_rx.recv().await, Some(8));
            }
        };
        one_by_one(WARM_UP).await;
        let before = ALLOCS.with(Cell::get);
        one_by_one(MESSAGES).await;
        let counted = ALLOCS.with(Cell::get) - before;
        push.close().await.unwrap();
        counted
    });
    pull_thread.join().unwrap();
    counted
}

/// Two a write before (the chunk list, and omq-tokio's slices): 300 to 600 here. A few are
/// left to the runtimes' own bookkeeping.
fn check<B: Backend>() {
    let counted = one_message_writes::<B>();
    assert!(
        counted < MESSAGES / 10,
        "{}: {counted} allocations for {MESSAGES} one-message writes",
        B::NAME
    );
}

/// Allocations on the REQ's thread (the REQ and its connection task) over [`MESSAGES`] round
/// trips with a REP on a thread of its own, over tcp: the request and the reply each cross
/// as one part inline behind the delimiter flag. With the delimiter as a part, the request
/// and the reply each took an allocation on this thread (600 more here).
fn req_round_trips<B: Backend>() -> usize {
    let (ep_tx, ep_rx) = std::sync::mpsc::channel();
    let rep_thread = std::thread::spawn(move || {
        B::block_on(async move {
            let rep = Socket::<B::R>::new(SocketType::Rep, Options::default()).unwrap();
            let ep = rep.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
            ep_tx.send(ep).unwrap();
            for _ in 0..WARM_UP + MESSAGES {
                let m = rep.recv().await.unwrap();
                rep.send(m).await.unwrap();
            }
            rep.close().await.unwrap();
        });
    });
    let ep = ep_rx.recv().unwrap();
    let counted = B::block_on_one_thread(async move {
        let req = Socket::<B::R>::new(SocketType::Req, Options::default()).unwrap();
        req.connect(&ep).await.unwrap();
        let round_trips = async |n: usize| {
            for _ in 0..n {
                req.send(Message::from("8 bytes!")).await.unwrap();
                let reply = req.recv().await.unwrap();
                assert_eq!(reply.len(), 1);
            }
        };
        round_trips(WARM_UP).await;
        let before = ALLOCS.with(Cell::get);
        round_trips(MESSAGES).await;
        let counted = ALLOCS.with(Cell::get) - before;
        req.close().await.unwrap();
        counted
    });
    rep_thread.join().unwrap();
    counted
}

/// What a round trip allocates besides the messages: the receive that waits for the reply
/// boxes its waiting half (so that `recv`'s future stays small: omq-tokio's `basic` tests),
/// one a round trip; compio also allocates each read it submits (its operations live on the
/// heap), one more. The messages themselves: nothing (they took two more a round trip).
fn check_req<B: Backend>(per_round_trip: usize) {
    let counted = req_round_trips::<B>();
    assert!(
        counted < per_round_trip * MESSAGES + MESSAGES / 10,
        "{}: {counted} allocations for {MESSAGES} REQ/REP round trips",
        B::NAME
    );
}

#[test]
fn a_req_rep_round_trip_allocates_only_its_wait_on_tokio() {
    check_req::<TokioBackend>(1);
}

#[test]
fn a_req_rep_round_trip_allocates_only_its_wait_and_read_on_compio() {
    check_req::<CompioBackend>(2);
}

#[test]
fn a_req_rep_round_trip_allocates_only_its_wait_on_monoio() {
    check_req::<MonoioBackend>(1);
}

#[test]
fn a_write_allocates_nothing_on_tokio() {
    check::<TokioBackend>();
}

#[test]
fn a_write_allocates_nothing_on_compio() {
    check::<CompioBackend>();
}

#[test]
fn a_write_allocates_nothing_on_monoio() {
    check::<MonoioBackend>();
}
