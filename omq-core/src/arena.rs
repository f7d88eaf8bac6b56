//! Arenas that small parts are copied into: one allocation for many parts, and none at all
//! once the parts of an earlier arena have all been dropped.
//!
//! Each part copied in is split off the front of the arena's spare room, so it shares the
//! arena's buffer (reference-counted) and keeps that one buffer alive while it lives, never
//! more. When the room runs out, the filled buffer is remembered beside the next, and the
//! oldest one remembered is taken back if nothing points into it any more
//! (`BytesMut::try_reclaim`, which succeeds only for a buffer no part shares): a stream of
//! messages that are consumed as they come cycles through the same few buffers without
//! allocating. A buffer still in use when its turn comes is let go (its parts keep it alive
//! until they are dropped) and a new one is allocated, so memory is never held back from a
//! queued part, and an arena holds at most `1 + KEPT` buffers of `SIZE` bytes of its own.
//!
//! Two arenas per thread use it, each a thread-local reached through [`with_thread`]: the
//! one behind [`crate::message::Part::copy_from_slice`] (a sender's copies and every frame
//! decoder's received bodies) and CURVE's, for opened bodies.

use std::cell::RefCell;
use std::thread::LocalKey;

use bytes::{Bytes, BytesMut};

/// Runs `f` on this thread's arena behind `key`; `None` while the thread's locals are being
/// torn down (the caller then makes an allocation of its own).
pub(crate) fn with_thread<const SIZE: usize, const KEPT: usize, R>(
    key: &'static LocalKey<RefCell<Arena<SIZE, KEPT>>>,
    f: impl FnOnce(&mut Arena<SIZE, KEPT>) -> R,
) -> Option<R> {
    key.try_with(|a| a.try_borrow_mut().ok().map(|mut a| f(&mut a)))
        .ok()
        .flatten()
}

/// An arena of `SIZE`-byte buffers that remembers up to `KEPT` filled ones to take back.
#[derive(Debug)]
pub(crate) struct Arena<const SIZE: usize, const KEPT: usize> {
    /// Empty between calls: its capacity is the room left.
    buf: BytesMut,
    /// Filled buffers, oldest at `next`; an unused slot is an empty `BytesMut` that owns
    /// nothing.
    kept: [BytesMut; KEPT],
    next: usize,
}

impl<const SIZE: usize, const KEPT: usize> Default for Arena<SIZE, KEPT> {
    fn default() -> Self {
        Arena {
            buf: BytesMut::new(),
            kept: std::array::from_fn(|_| BytesMut::new()),
            next: 0,
        }
    }
}

impl<const SIZE: usize, const KEPT: usize> Arena<SIZE, KEPT> {
    /// The arena's buffer with room for at least `len` more bytes (`len` at most `SIZE`).
    /// The caller writes the part at its end and takes it with [`Arena::take`] (or clears the
    /// buffer to give the room back).
    pub(crate) fn room(&mut self, len: usize) -> &mut BytesMut {
        debug_assert!(self.buf.is_empty());
        debug_assert!(len <= SIZE);
        if self.buf.capacity() < len {
            self.refill();
        }
        &mut self.buf
    }

    /// Takes what was written since [`Arena::room`] as a part of its own.
    pub(crate) fn take(&mut self) -> BytesMut {
        self.buf.split()
    }

    /// A copy of `data` (at most `SIZE` bytes) in the arena.
    pub(crate) fn copy(&mut self, data: &[u8]) -> Bytes {
        self.room(data.len()).extend_from_slice(data);
        self.take().freeze()
    }

    fn refill(&mut self) {
        let filled = std::mem::take(&mut self.buf);
        let mut oldest = match self.kept.get_mut(self.next) {
            Some(slot) => std::mem::replace(slot, filled),
            None => filled,
        };
        if KEPT > 0 {
            self.next = (self.next + 1) % KEPT;
        }
        self.buf = if oldest.try_reclaim(SIZE) {
            oldest
        } else {
            BytesMut::with_capacity(SIZE)
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where a part's bytes start, to tell which buffer it was cut from.
    fn at(b: &[u8]) -> usize {
        b.as_ptr() as usize
    }

    #[test]
    fn parts_are_cut_back_to_back_from_one_buffer() {
        let mut a: Arena<64, 2> = Arena::default();
        let p = a.copy(&[1; 10]);
        let q = a.copy(&[2; 20]);
        assert_eq!(&p[..], &[1; 10]);
        assert_eq!(&q[..], &[2; 20]);
        assert_eq!(at(&q), at(&p) + 10);
    }

    #[test]
    fn a_buffer_whose_parts_are_gone_is_used_again() {
        // KEPT = 1: the buffer filled before the current one is taken back.
        let mut a: Arena<64, 1> = Arena::default();
        let first = at(&a.copy(&[0; 64]));
        let second = at(&a.copy(&[0; 64]));
        assert_ne!(first, second);
        // The first buffer's part was dropped at once: the third part reuses it.
        assert_eq!(at(&a.copy(&[0; 64])), first);
        assert_eq!(at(&a.copy(&[0; 64])), second);
    }

    #[test]
    fn a_buffer_still_shared_is_left_to_its_parts() {
        let mut a: Arena<64, 1> = Arena::default();
        let held = a.copy(&[7; 64]);
        let _second = a.copy(&[0; 64]);
        let third = a.copy(&[9; 64]);
        assert_ne!(
            at(&third),
            at(&held),
            "a buffer a part still holds was written over"
        );
        assert_eq!(&held[..], &[7; 64]);
        assert_eq!(&third[..], &[9; 64]);
    }

    #[test]
    fn the_oldest_of_the_kept_buffers_comes_back_first() {
        // KEPT = 3: four buffers in turn, the parts of each dropped at once.
        let mut a: Arena<32, 3> = Arena::default();
        let starts: Vec<usize> = (0..8).map(|_| at(&a.copy(&[0; 32]))).collect();
        assert_eq!(starts[4], starts[0]);
        assert_eq!(starts[5], starts[1]);
        assert_eq!(starts[7], starts[3]);
        let distinct: std::collections::HashSet<_> = starts.iter().collect();
        assert_eq!(distinct.len(), 4);
    }

    #[test]
    fn with_no_kept_buffers_a_held_part_stays_whole() {
        let mut a: Arena<32, 0> = Arena::default();
        let p = a.copy(&[1; 32]);
        let q = a.copy(&[2; 32]);
        assert_eq!((&p[..], &q[..]), (&[1; 32][..], &[2; 32][..]));
    }
}
