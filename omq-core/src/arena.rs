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
//! queued part, and an arena holds at most `1 + KEPT` buffers of its own (of `SIZE` bytes, or up
//! to `MAX` for one whose buffers grow with the parts).
//!
//! Two arenas per thread use it, each a thread-local reached through [`with_thread`]: the
//! one behind [`crate::message::Part::copy_from_slice`] (a sender's copies and every frame
//! decoder's received bodies) and CURVE's, for opened bodies.

use std::cell::RefCell;
use std::thread::LocalKey;

use bytes::{Bytes, BytesMut};

/// Runs `f` on this thread's arena behind `key`; `None` while the thread's locals are being
/// torn down (the caller then makes an allocation of its own).
pub(crate) fn with_thread<const SIZE: usize, const KEPT: usize, const MAX: usize, R>(
    key: &'static LocalKey<RefCell<Arena<SIZE, KEPT, MAX>>>,
    f: impl FnOnce(&mut Arena<SIZE, KEPT, MAX>) -> R,
) -> Option<R> {
    key.try_with(|a| a.try_borrow_mut().ok().map(|mut a| f(&mut a)))
        .ok()
        .flatten()
}

/// How many parts of the size being copied a buffer is made to hold, when the arena's buffers
/// may grow past `SIZE` (see [`Arena`]).
pub(crate) const PARTS_PER_BUFFER: usize = 32;

/// An arena of buffers that remembers up to `KEPT` filled ones to take back. A buffer is
/// `SIZE` bytes; when `MAX` is larger, a buffer made for a part of `len` bytes holds
/// [`PARTS_PER_BUFFER`] of them, in powers of two from `SIZE` up to `MAX`: fewer allocations
/// for larger parts, while a small part still shares (and keeps alive) only a small buffer.
#[derive(Debug)]
pub(crate) struct Arena<const SIZE: usize, const KEPT: usize, const MAX: usize = SIZE> {
    /// Empty between calls: its capacity is the room left.
    buf: BytesMut,
    /// Filled buffers, oldest at `next`; an unused slot is an empty `BytesMut` that owns
    /// nothing.
    kept: [BytesMut; KEPT],
    next: usize,
}

impl<const SIZE: usize, const KEPT: usize, const MAX: usize> Default for Arena<SIZE, KEPT, MAX> {
    fn default() -> Self {
        Arena {
            buf: BytesMut::new(),
            kept: std::array::from_fn(|_| BytesMut::new()),
            next: 0,
        }
    }
}

impl<const SIZE: usize, const KEPT: usize, const MAX: usize> Arena<SIZE, KEPT, MAX> {
    /// The arena's buffer with room for at least `len` more bytes (`len` at most `SIZE`).
    /// The caller writes the part at its end and takes it with [`Arena::take`] (or clears the
    /// buffer to give the room back).
    pub(crate) fn room(&mut self, len: usize) -> &mut BytesMut {
        debug_assert!(self.buf.is_empty());
        debug_assert!(len <= SIZE);
        if self.buf.capacity() < len {
            self.refill(Self::buffer_size(len));
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

    /// The size of a buffer made for parts of `len` bytes.
    fn buffer_size(len: usize) -> usize {
        len.saturating_mul(PARTS_PER_BUFFER)
            .next_power_of_two()
            .clamp(SIZE, MAX.max(SIZE))
    }

    fn refill(&mut self, size: usize) {
        let filled = std::mem::take(&mut self.buf);
        // The ring remembers about `KEPT * SIZE` bytes whatever the buffers' size: fewer, larger
        // buffers keep the round a stream cycles through as small (and as warm in cache).
        // (A ring that shrank goes on from its start; what its other slots hold comes back
        // into the round if the buffers shrink again.)
        let slots = (KEPT * SIZE / size).clamp(1, KEPT.max(1));
        let i = self.next % slots;
        let mut oldest = match self.kept.get_mut(i) {
            Some(slot) => std::mem::replace(slot, filled),
            None => filled,
        };
        self.next = i + 1;
        // Taken back only at the size wanted: a large buffer cut into small parts would keep
        // many more parts' bytes alive per part.
        self.buf = if oldest.try_reclaim(size) && oldest.capacity() == size {
            oldest
        } else {
            BytesMut::with_capacity(size)
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

    /// Where each of `n` copies of `len` bytes starts.
    fn starts<const S: usize, const K: usize, const M: usize>(
        a: &mut Arena<S, K, M>,
        len: usize,
        n: usize,
    ) -> Vec<usize> {
        (0..n).map(|_| at(&a.copy(&vec![1; len]))).collect()
    }

    /// Whether `s` runs back to back in steps of `len`.
    fn back_to_back(s: &[usize], len: usize) -> bool {
        s.windows(2).all(|w| w[1] == w[0] + len)
    }

    #[test]
    fn buffers_grow_to_hold_thirty_two_parts_up_to_the_most() {
        // SIZE 64, MAX 256: 1-byte parts get 64-byte buffers (64 to a buffer), 4-byte parts
        // 128-byte ones (32), 8- and 16-byte parts 256-byte ones (32, then 16).
        let mut a: Arena<64, 2, 256> = Arena::default();
        let s = starts(&mut a, 1, 65);
        assert!(back_to_back(&s[..64], 1));
        assert!(!back_to_back(&s[63..], 1), "a 64-byte buffer holds 64");
        for (len, per_buffer) in [(4, 32), (8, 32), (16, 16)] {
            let mut a: Arena<64, 2, 256> = Arena::default();
            let s = starts(&mut a, len, per_buffer + 1);
            assert!(back_to_back(&s[..per_buffer], len), "{len}");
            assert!(!back_to_back(&s[per_buffer - 1..], len), "{len}");
        }
        // Without a larger MAX every buffer is SIZE.
        let mut a: Arena<64, 2> = Arena::default();
        let s = starts(&mut a, 16, 5);
        assert!(back_to_back(&s[..4], 16));
        assert!(!back_to_back(&s[3..], 16));
    }

    #[test]
    fn a_large_buffer_is_not_taken_back_for_small_parts() {
        // KEPT = 1. Two buffers of 8-byte parts (256 bytes) or 4-byte parts (128), all
        // dropped; then 1-byte parts want 64-byte buffers: a free larger one is not cut into
        // them.
        for (len, buffer) in [(8, 256), (4, 128)] {
            let mut a: Arena<64, 1, 256> = Arena::default();
            let big = starts(&mut a, len, 64);
            let s = starts(&mut a, 1, 200);
            for p in &s {
                assert!(
                    !big.iter().any(|b| (*b..*b + buffer).contains(p)),
                    "a 1-byte part was cut from a {buffer}-byte buffer"
                );
            }
        }
        // And a free buffer of the size wanted is taken back as before.
        let mut a: Arena<64, 1, 256> = Arena::default();
        let first = starts(&mut a, 8, 32)[0];
        let _second = starts(&mut a, 8, 32);
        assert_eq!(starts(&mut a, 8, 1)[0], first);
    }

    #[test]
    fn larger_buffers_are_remembered_fewer_at_a_time() {
        // KEPT 4 of SIZE 64 remember 256 bytes: four 64-byte buffers, or one of 256 bytes.
        let firsts = |len: usize, per_buffer: usize| {
            let mut a: Arena<64, 4, 256> = Arena::default();
            (0..6)
                .map(|_| starts(&mut a, len, per_buffer)[0])
                .collect::<Vec<_>>()
        };
        let small = firsts(1, 64);
        assert_eq!(small[5], small[0], "five buffers in the round");
        assert_eq!(
            small[..5]
                .iter()
                .collect::<std::collections::HashSet<_>>()
                .len(),
            5
        );
        let large = firsts(8, 32);
        assert_eq!(
            (large[2], large[3]),
            (large[0], large[1]),
            "two in the round"
        );
        assert_ne!(large[0], large[1]);
    }

    #[test]
    fn with_no_kept_buffers_a_held_part_stays_whole() {
        let mut a: Arena<32, 0> = Arena::default();
        let p = a.copy(&[1; 32]);
        let q = a.copy(&[2; 32]);
        assert_eq!((&p[..], &q[..]), (&[1; 32][..], &[2; 32][..]));
    }
}
