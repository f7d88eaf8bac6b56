//! Receives that skip the socket's lock: messages a receive took ahead of the application, for
//! the types whose receive keeps no state (`omq_core::SocketType::receives_without_state`:
//! PULL, SUB, DEALER, ROUTER, PAIR and their kin; docs/ARCHITECTURE.md, "The inbox").
//!
//! Why: a receive took the socket's lock, asked the core for one message and routed the core's
//! actions, once per message; a stream of small messages spent a large share of the receiving
//! side there (docs/PERFORMANCE.md, "The inbox"). Now a receive that takes the lock also takes
//! what else is already queued in the core, up to [`INBOX_CAP`] messages, into this queue; the
//! next receives pop from it without the lock.
//!
//! The rules:
//! - **Order.** Only a holder of the socket's lock pushes, and only messages the core hands
//!   out then, so the queue holds the oldest messages not yet received, in order; every
//!   receive, with the lock or without, takes from the queue before the core.
//! - **Nothing lost.** The pusher checks for room first and only pops happen meanwhile, so a
//!   push cannot find the queue full. A receive pops a message and returns it in the same
//!   step, so a receive that is dropped takes nothing.
//! - **Nobody left waiting.** The queue goes from empty to not empty only under the socket's
//!   lock, and the wake-ups of waiting receives are decided under the same lock, after it
//!   (the dispatch counts the queue as something to receive), so a receive that found nothing
//!   and waits is woken.
//! - **Bound.** The queue holds at most [`INBOX_CAP`] messages taken out of their pipes: once
//!   an application has started receiving, that many more than RCVHWM can be queued for it
//!   (each bounded by MAXMSGSIZE). Close empties it; a CONFLATE socket takes nothing ahead.

use std::sync::OnceLock;

use concurrent_queue::ConcurrentQueue;

/// Most messages a receive takes ahead of the application.
pub(crate) const INBOX_CAP: usize = 32;

/// The messages taken ahead, made by the first receive that finds more than one waiting (so a
/// socket that never streams, or an application with thousands of sockets, pays nothing).
#[derive(Debug, Default)]
pub(crate) struct Inbox<T> {
    queue: OnceLock<ConcurrentQueue<T>>,
}

impl<T> Inbox<T> {
    /// The oldest message taken ahead, if any; needs no lock.
    #[inline]
    pub(crate) fn pop(&self) -> Option<T> {
        self.queue.get()?.pop().ok()
    }

    /// Whether nothing is taken ahead.
    pub(crate) fn is_empty(&self) -> bool {
        self.queue.get().is_none_or(ConcurrentQueue::is_empty)
    }

    /// How many messages are taken ahead.
    pub(crate) fn len(&self) -> usize {
        self.queue.get().map_or(0, ConcurrentQueue::len)
    }

    /// Takes messages from `next` while there is room. Call with the socket's lock held (the
    /// only place anyone pushes), after the receive that took the lock has its own message.
    pub(crate) fn fill(&self, mut next: impl FnMut() -> Option<T>) {
        let queue = match self.queue.get() {
            Some(q) => q,
            None => {
                let Some(first) = next() else {
                    return;
                };
                let q = self
                    .queue
                    .get_or_init(|| ConcurrentQueue::bounded(INBOX_CAP));
                Self::push(q, first);
                q
            }
        };
        while !queue.is_full() {
            match next() {
                Some(m) => Self::push(queue, m),
                None => break,
            }
        }
    }

    /// Pushes onto a queue that was seen with room by the only pusher: only pops can have
    /// happened since, so the push finds room.
    fn push(queue: &ConcurrentQueue<T>, m: T) {
        let pushed = queue.push(m);
        debug_assert!(pushed.is_ok(), "the inbox's only pusher found it full");
    }

    /// Drops everything taken ahead (the socket closed).
    pub(crate) fn clear(&self) {
        if let Some(q) = self.queue.get() {
            while q.pop().is_ok() {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_only_when_something_is_taken_ahead() {
        let inbox = Inbox::<u32>::default();
        inbox.fill(|| None);
        assert!(inbox.queue.get().is_none());
        assert_eq!(inbox.pop(), None);
        assert!(inbox.is_empty());
    }

    #[test]
    fn fills_to_its_cap_in_order_and_hands_out_in_order() {
        let inbox = Inbox::default();
        let mut source = 0..100u32;
        inbox.fill(|| source.next());
        assert_eq!(inbox.len(), INBOX_CAP);
        // What was not taken stays where it was.
        assert_eq!(source.next(), Some(INBOX_CAP as u32));
        for want in 0..3 {
            assert_eq!(inbox.pop(), Some(want));
        }
        // Refilled after three pops: three more, after the rest.
        inbox.fill(|| source.next());
        assert_eq!(inbox.len(), INBOX_CAP);
        let got: Vec<u32> = std::iter::from_fn(|| inbox.pop()).collect();
        let want: Vec<u32> = (3..INBOX_CAP as u32)
            .chain(INBOX_CAP as u32 + 1..INBOX_CAP as u32 + 4)
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn clear_drops_everything() {
        let inbox = Inbox::default();
        let mut source = 0..5u32;
        inbox.fill(|| source.next());
        inbox.clear();
        assert!(inbox.is_empty());
        assert_eq!(inbox.pop(), None);
    }
}
