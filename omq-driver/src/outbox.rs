//! Sends that skip the socket's lock: a lock-free queue between the user's handle and the
//! socket's pipes, for the load-balanced types on a runtime whose connection tasks may run on
//! another thread than the sender (tokio's multi-threaded scheduler; docs/ARCHITECTURE.md,
//! "The outbox").
//!
//! Why: with the socket's lock taken per message, a sender on one core and the connection task
//! that encodes on another pass the lock's cache line, and the pipe's, back and forth with every
//! message (docs/PERFORMANCE.md, "The multi-threaded block_on layout"). Here a send takes a
//! unit of *credit*, pushes the message onto a bounded lock-free queue, and wakes a *mover* (one
//! of the socket's connection tasks) only when no wake-up is already owed; the mover, woken once
//! for a batch, moves the whole queue into the core under one lock.
//!
//! The rules, each of which the loom model in this file checks:
//! - **Room.** Credit is lent out of the core's room under the socket's lock ([`Outbox::grant`]):
//!   what is lent and not yet moved (`lent`: credit not taken plus messages taken and not yet
//!   moved) never exceeds the room the core had when it was lent, so SNDHWM holds as if every
//!   message had gone through the lock. A peer lost meanwhile can leave moved messages without
//!   room: they wait in the stash, in order, ahead of every later send.
//! - **Nobody forgotten.** Whoever turns `owed` from false to true must see to a drain after its
//!   push: it wakes the mover, or, with none, drains itself under the lock. A drain turns `owed`
//!   back to false (a read-modify-write, so it sees every push made before a swap it reads)
//!   before it pops. Whoever takes a mover away drains after, so a sender that saw the old
//!   mover is drained by that drain. The flag can stay up with nothing queued (a drain took a
//!   message between its push and the flag); the next drain lowers it, and credit is only ever
//!   lent after such a drain.
//! - **Closing.** [`Outbox::revoke`] takes back the credit nobody took and drains until every
//!   message sent with credit taken before has been moved (`lent` counts exactly those; a
//!   sender between taking credit and pushing takes a few instructions, never a lock), so
//!   nothing a send said `Ok` for is left when the core closes.

use std::collections::VecDeque;

#[cfg(omq_loom)]
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
#[cfg(omq_loom)]
use loom::sync::{Mutex, MutexGuard};
#[cfg(not(omq_loom))]
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
#[cfg(not(omq_loom))]
use std::sync::{Mutex, MutexGuard};

/// Most messages lent out at once (and the queue's capacity): a mover woken once moves at most
/// this many; more credit comes with each of its turns.
pub(crate) const OUTBOX_CAP: usize = 64;

/// What the sender has to do after [`Outbox::try_stage`].
#[derive(Debug)]
pub(crate) enum Staged<T> {
    /// Queued; a drain is owed by someone else, or the mover was woken.
    Done,
    /// Queued, and no mover is there: the sender drains under the socket's lock itself.
    DrainHere,
    /// No credit: the message comes back for the locked path.
    NoCredit(T),
}

/// Whom a sender wakes to move the queue.
pub(crate) trait Mover: Clone {
    /// Wakes the mover (it will drain on its next turn). The wake-up must be a
    /// read-modify-write of the flag the mover takes with another (as `Signal::raise`'s
    /// `fetch_or` and `Signal::take`'s `swap`): then wake-ups from several senders form one
    /// release sequence, and a mover that takes the flag sees every push made before any of
    /// them. With a plain store one of two wake-ups can be lost (the loom model finds it).
    fn wake(&self);
}

/// The lock-free half of a socket's outbox (the stash and the lent count are in the socket's
/// locked state, see [`Locked`]).
#[derive(Debug)]
pub(crate) struct Outbox<T, M> {
    queue: Queue<T>,
    /// Credit: how many messages may be queued now without the lock.
    credit: AtomicUsize,
    /// A drain is owed: set by the sender that queued onto a queue nobody was going to drain.
    owed: AtomicBool,
    /// The connection task that drains when woken, if any.
    mover: Mutex<Option<M>>,
}

/// The part of an outbox kept under the socket's lock.
#[derive(Debug)]
pub(crate) struct Locked<T> {
    /// Credit lent plus messages queued and not yet moved (see the module's rules).
    lent: usize,
    /// Messages moved off the queue that the core had no room for, in order: they go first.
    pub(crate) stash: VecDeque<T>,
    /// A mover is set (the mover's slot, seen without taking its lock).
    has_mover: bool,
}

impl<T> Default for Locked<T> {
    fn default() -> Self {
        Locked {
            lent: 0,
            stash: VecDeque::new(),
            has_mover: false,
        }
    }
}

impl<T> Locked<T> {
    /// Nothing lent, nothing stashed: the outbox has nothing to do.
    pub(crate) fn is_idle(&self) -> bool {
        self.lent == 0 && self.stash.is_empty()
    }

    /// Room lent out of the core that the core does not know about yet.
    pub(crate) fn lent(&self) -> usize {
        self.lent
    }
}

impl<T, M: Mover> Default for Outbox<T, M> {
    fn default() -> Self {
        Outbox {
            queue: Queue::new(OUTBOX_CAP),
            credit: AtomicUsize::new(0),
            owed: AtomicBool::new(false),
            mover: Mutex::new(None),
        }
    }
}

impl<T, M: Mover> Outbox<T, M> {
    /// Queues `msg` if there is credit. Never blocks and takes no lock but the mover's slot's
    /// (only when it must wake the mover: once a batch).
    pub(crate) fn try_stage(&self, msg: T) -> Staged<T> {
        let mut c = self.credit.load(Ordering::Relaxed);
        loop {
            if c == 0 {
                return Staged::NoCredit(msg);
            }
            match self
                .credit
                .compare_exchange_weak(c, c - 1, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(now) => c = now,
            }
        }
        // Credit never exceeds the queue's free room (grant keeps lent <= OUTBOX_CAP); were it
        // ever to, the message takes the locked path instead.
        if let Err(msg) = self.queue.push(msg) {
            self.credit.fetch_add(1, Ordering::Release);
            return Staged::NoCredit(msg);
        }
        let wake = !self.owed.swap(true, Ordering::AcqRel);
        if !wake {
            return Staged::Done;
        }
        match lock(&self.mover).clone() {
            Some(m) => {
                m.wake();
                Staged::Done
            }
            None => Staged::DrainHere,
        }
    }

    /// Whether any credit is out (a sender may try [`Outbox::try_stage`]).
    #[inline]
    pub(crate) fn has_credit(&self) -> bool {
        self.credit.load(Ordering::Relaxed) > 0
    }

    /// Whether a drain may find something: the stash holds messages, or a push owes one.
    /// The flag can be left up with nothing queued (a drain took a message between its push
    /// and its sender raising the flag); such a drain finds nothing and lowers it, and must
    /// not be skipped: lending again with the flag up would leave the next sender thinking a
    /// drain is on its way (loom found it, when this looked only while something was lent).
    pub(crate) fn needs_drain(&self, locked: &Locked<T>) -> bool {
        !locked.stash.is_empty() || self.owed.load(Ordering::Acquire)
    }

    /// Moves what is stashed and queued, in order, into the core through `accept` (which gives
    /// a message back when the core has no room). Call under the socket's lock. What finds no
    /// room is stashed, in order. Returns how many `accept` took.
    pub(crate) fn drain(
        &self,
        locked: &mut Locked<T>,
        mut accept: impl FnMut(T) -> Result<(), T>,
    ) -> usize {
        // Before popping: every push this swap sees is popped below, and a push after it owes
        // (and sees to) a drain of its own.
        self.owed.swap(false, Ordering::AcqRel);
        let mut moved = 0;
        while let Some(m) = locked.stash.pop_front() {
            match accept(m) {
                Ok(()) => moved += 1,
                Err(m) => {
                    locked.stash.push_front(m);
                    break;
                }
            }
        }
        while let Some(m) = self.queue.pop() {
            locked.lent -= 1;
            if !locked.stash.is_empty() {
                locked.stash.push_back(m);
                continue;
            }
            match accept(m) {
                Ok(()) => moved += 1,
                Err(m) => locked.stash.push_back(m),
            }
        }
        moved
    }

    /// Lends credit out of the core's `room` (its room now, counted up to [`OUTBOX_CAP`]), so
    /// that what is lent and not yet moved never exceeds it. Lends nothing while messages wait
    /// in the stash (they go first) or while there is no mover. Call under the socket's lock.
    pub(crate) fn grant(&self, locked: &mut Locked<T>, room: usize) {
        if !locked.stash.is_empty() || !locked.has_mover {
            return;
        }
        let extra = room.min(OUTBOX_CAP).saturating_sub(locked.lent);
        if extra > 0 {
            locked.lent += extra;
            self.credit.fetch_add(extra, Ordering::Release);
        }
    }

    /// Takes back the credit not yet taken, so the locked path may use that room itself (a
    /// send that found no credit, a sink counting its room): what is still lent is then only
    /// what senders have queued or are queueing. Call under the socket's lock.
    pub(crate) fn reclaim(&self, locked: &mut Locked<T>) {
        if locked.lent > 0 {
            locked.lent -= self.credit.swap(0, Ordering::AcqRel);
        }
    }

    /// Sets (or takes away) the mover. Call under the socket's lock; after taking one away,
    /// drain (see the module's rules).
    pub(crate) fn set_mover(&self, locked: &mut Locked<T>, mover: Option<M>) {
        locked.has_mover = mover.is_some();
        *lock(&self.mover) = mover;
    }

    /// Takes back all credit not yet taken, then drains (as [`Outbox::drain`]) until every
    /// message sent with credit taken before has been moved: `lent` then counts exactly those
    /// still on their way (a sender between taking credit and pushing takes a few
    /// instructions and never a lock), so this sees every message a send said `Ok` for. Call
    /// under the socket's lock.
    pub(crate) fn revoke(
        &self,
        locked: &mut Locked<T>,
        mut accept: impl FnMut(T) -> Result<(), T>,
    ) {
        self.reclaim(locked);
        loop {
            self.drain(locked, &mut accept);
            if locked.lent == 0 {
                return;
            }
            spin();
        }
    }
}

fn lock<M>(m: &Mutex<M>) -> MutexGuard<'_, M> {
    #[cfg(omq_loom)]
    {
        m.lock().unwrap()
    }
    #[cfg(not(omq_loom))]
    {
        m.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(not(omq_loom))]
fn spin() {
    std::thread::yield_now();
}

#[cfg(omq_loom)]
fn spin() {
    loom::thread::yield_now();
}

/// The bounded multi-producer queue: `concurrent-queue`'s array queue, made by the first push
/// (its slots are a Message each, 6.6 KiB for 64 of them, which a socket that never sends
/// through its outbox, or an application with thousands of sockets, should not pay); under
/// loom a locked `VecDeque`, whose interleavings loom can see (the outbox's own atomics are
/// what the model checks).
#[cfg(not(omq_loom))]
#[derive(Debug)]
struct Queue<T>(
    std::sync::OnceLock<concurrent_queue::ConcurrentQueue<T>>,
    usize,
);

#[cfg(not(omq_loom))]
impl<T> Queue<T> {
    fn new(cap: usize) -> Self {
        Queue(std::sync::OnceLock::new(), cap)
    }
    fn push(&self, t: T) -> Result<(), T> {
        self.0
            .get_or_init(|| concurrent_queue::ConcurrentQueue::bounded(self.1))
            .push(t)
            .map_err(|e| e.into_inner())
    }
    fn pop(&self) -> Option<T> {
        self.0.get()?.pop().ok()
    }
}

#[cfg(omq_loom)]
#[derive(Debug)]
struct Queue<T>(Mutex<VecDeque<T>>, usize);

#[cfg(omq_loom)]
impl<T> Queue<T> {
    fn new(cap: usize) -> Self {
        Queue(Mutex::new(VecDeque::new()), cap)
    }
    fn push(&self, t: T) -> Result<(), T> {
        let mut q = self.0.lock().unwrap();
        if q.len() == self.1 {
            return Err(t);
        }
        q.push_back(t);
        Ok(())
    }
    fn pop(&self) -> Option<T> {
        self.0.lock().unwrap().pop_front()
    }
}

/// The protocol under loom (`scripts/loom.sh`): every interleaving of senders, a mover and a
/// closer. Each checks that a message a send said `Ok` for ends up in the core (or, without
/// room, in the stash), in each sender's order, and that the core never holds more than the
/// room lent.
#[cfg(all(test, omq_loom))]
mod loom_model {
    use super::*;
    use loom::sync::atomic::AtomicBool;
    use loom::sync::Arc;

    /// A mover's wake-up: a flag its thread looks at. Raised with a read-modify-write, as
    /// `Signal::raise` raises its bits (`fetch_or`): wake-ups from two senders then form one
    /// release sequence, and the mover that takes the flag sees both senders' pushes. (A
    /// plain store would not: loom finds the wake-up lost.)
    #[derive(Clone)]
    struct Flag(Arc<AtomicBool>);

    impl Mover for Flag {
        fn wake(&self) {
            self.0.fetch_or(true, Ordering::AcqRel);
        }
    }

    /// The socket: its locked state, a core that takes up to `room` messages and refuses
    /// everything once closed.
    struct Socket {
        locked: Mutex<(Locked<u32>, Vec<u32>, bool)>,
        outbox: Outbox<u32, Flag>,
        room: usize,
    }

    impl Socket {
        fn new(room: usize, mover: Option<Flag>) -> Arc<Self> {
            let s = Arc::new(Socket {
                locked: Mutex::new((Locked::default(), Vec::new(), false)),
                outbox: Outbox::default(),
                room,
            });
            {
                let mut st = s.locked.lock().unwrap();
                let has = mover.is_some();
                s.outbox.set_mover(&mut st.0, mover);
                if has {
                    let r = room;
                    s.outbox.grant(&mut st.0, r);
                }
            }
            s
        }

        /// Drains under the lock if a drain is owed (as `State::settle_outbox`), then lends
        /// what room is left (as `State::dispatch`): what the mover and a sender that drains
        /// do.
        fn drain_and_grant(&self) {
            let mut st = self.locked.lock().unwrap();
            let (locked, core, closed) = &mut *st;
            let room = self.room;
            if !self.outbox.needs_drain(locked) {
                let left = room - core.len();
                if !*closed {
                    self.outbox.grant(locked, left);
                }
                return;
            }
            self.outbox.drain(locked, |m| {
                if *closed || core.len() >= room {
                    Err(m)
                } else {
                    core.push(m);
                    Ok(())
                }
            });
            let left = room - core.len();
            if !*closed {
                self.outbox.grant(locked, left);
            }
        }

        /// A send: staged, or through the lock (drain first, then the core). `Ok` or not.
        fn send(&self, m: u32) -> bool {
            match self.outbox.try_stage(m) {
                Staged::Done => true,
                Staged::DrainHere => {
                    self.drain_and_grant();
                    true
                }
                Staged::NoCredit(m) => {
                    // As `State::send`: drain, take back the credit nobody took, then send.
                    self.drain_and_grant();
                    let mut st = self.locked.lock().unwrap();
                    let (locked, core, closed) = &mut *st;
                    self.outbox.reclaim(locked);
                    if *closed
                        || !locked.stash.is_empty()
                        || core.len() + locked.lent() >= self.room
                    {
                        return false;
                    }
                    core.push(m);
                    true
                }
            }
        }

        fn close(&self) {
            let mut st = self.locked.lock().unwrap();
            let (locked, core, closed) = &mut *st;
            let room = self.room;
            self.outbox.revoke(locked, |m| {
                if core.len() >= room {
                    Err(m)
                } else {
                    core.push(m);
                    Ok(())
                }
            });
            *closed = true;
        }

        /// Everything that arrived: the core, then the stash.
        fn arrived(&self) -> Vec<u32> {
            let st = self.locked.lock().unwrap();
            let mut all = st.1.clone();
            all.extend(st.0.stash.iter().copied());
            assert!(st.1.len() <= self.room, "the core took more than its room");
            all
        }
    }

    /// Each of `sent`'s messages that was `Ok` is in `arrived`, in order per sender.
    fn check(arrived: &[u32], sent: &[Vec<(u32, bool)>]) {
        for s in sent {
            let ok: Vec<u32> = s.iter().filter(|(_, ok)| *ok).map(|(m, _)| *m).collect();
            let got: Vec<u32> = arrived
                .iter()
                .copied()
                .filter(|m| s.iter().any(|(x, _)| x == m))
                .collect();
            assert_eq!(got, ok, "a sender's Ok messages, in its order");
        }
    }

    #[test]
    fn two_senders_and_a_mover_lose_nothing() {
        loom::model(|| {
            let woken = Arc::new(AtomicBool::new(false));
            let s = Socket::new(4, Some(Flag(woken.clone())));
            let senders: Vec<_> = (0..2u32)
                .map(|k| {
                    let s = s.clone();
                    loom::thread::spawn(move || {
                        (1..=2)
                            .map(|i| (k * 10 + i, s.send(k * 10 + i)))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            let mover = {
                let (s, woken) = (s.clone(), woken.clone());
                loom::thread::spawn(move || {
                    if woken.swap(false, Ordering::AcqRel) {
                        s.drain_and_grant();
                    }
                })
            };
            let sent: Vec<_> = senders.into_iter().map(|t| t.join().unwrap()).collect();
            mover.join().unwrap();
            // The mover's next turn, if it was woken since.
            let again = woken.swap(false, Ordering::AcqRel);
            if again {
                s.drain_and_grant();
            }
            check(&s.arrived(), &sent);
            // The connection writes what the core holds, and the mover's next turn lends that
            // room again: the next send is not left waiting for a drain nobody will make.
            s.locked.lock().unwrap().1.clear();
            s.drain_and_grant();
            if s.send(99) {
                if woken.swap(false, Ordering::AcqRel) {
                    s.drain_and_grant();
                }
                assert!(
                    s.arrived().contains(&99),
                    "a later send left in the queue (woken again: {again}, sent {sent:?})"
                );
            }
        });
    }

    #[test]
    fn a_mover_taken_away_leaves_the_sender_to_drain() {
        loom::model(|| {
            let woken = Arc::new(AtomicBool::new(false));
            let s = Socket::new(3, Some(Flag(woken.clone())));
            let sender = {
                let s = s.clone();
                loom::thread::spawn(move || vec![(1, s.send(1)), (2, s.send(2))])
            };
            // The mover's connection ends: it is taken away, then the queue drained.
            {
                let mut st = s.locked.lock().unwrap();
                let (locked, core, _) = &mut *st;
                s.outbox.set_mover(locked, None);
                s.outbox.drain(locked, |m| {
                    core.push(m);
                    Ok(())
                });
            }
            let sent = sender.join().unwrap();
            check(&s.arrived(), &[sent]);
            // Whatever wake-up went to the old mover is lost with it: a later send (on the
            // credit left) must not wait for it.
            if s.send(3) {
                assert!(
                    s.arrived().contains(&3),
                    "a send after the mover went was left queued"
                );
            }
        });
    }

    #[test]
    fn close_sees_every_message_sent_ok() {
        loom::model(|| {
            let woken = Arc::new(AtomicBool::new(false));
            let s = Socket::new(4, Some(Flag(woken.clone())));
            let sender = {
                let s = s.clone();
                loom::thread::spawn(move || vec![(1, s.send(1)), (2, s.send(2))])
            };
            s.close();
            let sent = sender.join().unwrap();
            // After close nothing more is drained: what was Ok must be in the core already.
            let core = s.locked.lock().unwrap().1.clone();
            check(&core, &[sent]);
        });
    }
}
