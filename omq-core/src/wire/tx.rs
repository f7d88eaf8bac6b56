//! The transmit queue: frames become a sequence of byte chunks ready for one vectored write.
//!
//! Headers and small bodies are copied into a shared staging buffer; a body of at least
//! [`VECTOR_MIN`] bytes held as `Bytes` is handed out as a chunk of its own (a reference count,
//! no copy). Whatever has been queued when the connection becomes writable goes out in one
//! write: under load that is a large batch, at rest a single message, and nobody calls flush.

use std::collections::VecDeque;

use bytes::{BufMut, Bytes, BytesMut};

use crate::wire::frame;

/// Bodies at least this large are not copied into the staging buffer but written from their
/// own memory. Copying a few KiB costs less than an extra iovec entry and keeps small writes
/// contiguous.
pub const VECTOR_MIN: usize = 4 * 1024;

/// Staging buffer size once traffic flows. A full buffer is sealed as a chunk and a fresh one
/// started, never grown: growing would copy everything staged so far.
pub const STAGING: usize = 64 * 1024;

/// Staging buffer size during the greeting and handshake: a few small commands, so a connection
/// that never completes its handshake costs a few hundred bytes, not [`STAGING`].
pub const HANDSHAKE_STAGING: usize = 512;

/// Chunks waiting to be written, in order.
#[derive(Debug)]
pub struct TxQueue {
    chunks: VecDeque<Bytes>,
    staging: BytesMut,
    /// The last filled staging buffer, taken back for the next once its chunks have all been
    /// written (the driver drops written chunks, which leaves the buffer unshared). A
    /// connection that streams fills a buffer, hands it out and fills the next while the
    /// kernel takes the first, so one spare is enough: it spares the allocation of a 64 KiB
    /// buffer, which made glibc merge its small free chunks (`malloc_consolidate`) and the
    /// sender's small allocations after it take the slow path (tcp PUSH/PULL 256 B and 1 KiB
    /// about 1.2x faster with it). Only a connection that has filled a buffer keeps one: it
    /// then holds two staging buffers, not one, while it lives.
    spare: Option<BytesMut>,
    /// The staging buffer was made [`STAGING`] bytes long (so it may become the spare).
    streaming: bool,
    /// Size of a fresh staging buffer ([`HANDSHAKE_STAGING`] or [`STAGING`]).
    staging_size: usize,
    queued: usize,
    /// Bytes handed out by [`TxQueue::poll_transmit`] since the queue was made.
    handed_out: u64,
}

impl Default for TxQueue {
    fn default() -> Self {
        TxQueue::new()
    }
}

impl TxQueue {
    /// An empty queue with [`STAGING`]-sized staging buffers.
    pub fn new() -> Self {
        TxQueue::with_staging(STAGING)
    }

    /// An empty queue whose staging buffers are `size` bytes (larger frames still fit).
    pub fn with_staging(size: usize) -> Self {
        TxQueue {
            chunks: VecDeque::new(),
            staging: BytesMut::new(),
            spare: None,
            streaming: false,
            staging_size: size,
            queued: 0,
            handed_out: 0,
        }
    }

    /// Changes the size of the next fresh staging buffer (the session grows it when its
    /// handshake completes).
    pub fn set_staging(&mut self, size: usize) {
        self.staging_size = size;
    }

    /// Queues raw bytes (the greeting).
    pub fn push_raw(&mut self, data: &[u8]) {
        self.reserve(data.len());
        self.staging.put_slice(data);
        self.queued += data.len();
    }

    /// Queues one frame with the given flags and body.
    pub fn push_frame(&mut self, more: bool, command: bool, body: &[u8], shared: Option<&Bytes>) {
        let hlen = frame::header_len(body.len());
        match shared {
            Some(b) if b.len() >= VECTOR_MIN => {
                self.reserve(hlen);
                frame::encode_header(&mut self.staging, more, command, b.len());
                self.seal();
                self.chunks.push_back(b.clone());
            }
            _ => {
                self.reserve(hlen + body.len());
                frame::encode_header(&mut self.staging, more, command, body.len());
                self.staging.put_slice(body);
            }
        }
        self.queued += hlen + body.len();
    }

    /// Queues a frame whose body is written by `fill` straight into the staging buffer
    /// (commands), avoiding an intermediate allocation.
    pub fn push_frame_with(&mut self, command: bool, len: usize, fill: impl FnOnce(&mut BytesMut)) {
        let hlen = frame::header_len(len);
        self.reserve(hlen + len);
        frame::encode_header(&mut self.staging, false, command, len);
        let before = self.staging.len();
        fill(&mut self.staging);
        debug_assert_eq!(self.staging.len() - before, len);
        self.queued += hlen + len;
    }

    fn reserve(&mut self, n: usize) {
        if self.staging.capacity() - self.staging.len() < n {
            self.seal();
            let (fresh, streaming) = self.fresh(n);
            let full = std::mem::replace(&mut self.staging, fresh);
            if std::mem::replace(&mut self.streaming, streaming) {
                self.spare = Some(full);
            }
        }
    }

    /// A buffer with room for `n`, and whether it is of the streaming size: the spare if its
    /// chunks have all been written, or a new one.
    fn fresh(&mut self, n: usize) -> (BytesMut, bool) {
        let size = n.max(self.staging_size);
        let streaming = size == STAGING;
        if streaming {
            if let Some(mut spare) = self.spare.take() {
                if spare.try_reclaim(STAGING) {
                    return (spare, true);
                }
                self.spare = Some(spare);
            }
        }
        (BytesMut::with_capacity(size), streaming)
    }

    /// Moves what is staged into the chunk list.
    fn seal(&mut self) {
        if !self.staging.is_empty() {
            self.chunks.push_back(self.staging.split().freeze());
        }
    }

    /// The next chunk to write, if any. A driver gathers several into one vectored write.
    pub fn poll_transmit(&mut self) -> Option<Bytes> {
        let chunk = match self.chunks.pop_front() {
            Some(c) => c,
            None if !self.staging.is_empty() => self.staging.split().freeze(),
            None => return None,
        };
        self.queued -= chunk.len();
        self.handed_out += chunk.len() as u64;
        Some(chunk)
    }

    /// Bytes queued and not yet handed out.
    pub fn queued_bytes(&self) -> usize {
        self.queued
    }

    /// Where the end of the queue is, counted in bytes since the queue was made: a mark taken
    /// after queueing something is passed by [`TxQueue::handed_out`] once all of it has left.
    pub fn end_mark(&self) -> u64 {
        self.handed_out + self.queued as u64
    }

    /// Bytes handed out for writing since the queue was made.
    pub fn handed_out(&self) -> u64 {
        self.handed_out
    }

    /// True when nothing is waiting.
    pub fn is_empty(&self) -> bool {
        self.queued == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_bodies_go_by_reference() {
        let mut q = TxQueue::new();
        q.push_frame(true, false, b"ab", None);
        let big = Bytes::from(vec![9u8; VECTOR_MIN]);
        q.push_frame(false, false, &big, Some(&big));
        q.push_frame(false, false, b"c", None);
        let a = q.poll_transmit().unwrap();
        assert_eq!(
            &a[..],
            &[1, 2, b'a', b'b', 2, 0, 0, 0, 0, 0, 0, 0x10, 0][..]
        );
        let b = q.poll_transmit().unwrap();
        assert_eq!(b.as_ptr(), big.as_ptr());
        assert_eq!(&q.poll_transmit().unwrap()[..], &[0, 1, b'c'][..]);
        assert!(q.poll_transmit().is_none());
        assert!(q.is_empty());
    }

    /// One byte short of [`VECTOR_MIN`] a shared body is copied into the staging buffer with
    /// its header, so the two go out as one chunk.
    #[test]
    fn bodies_below_the_vector_minimum_are_copied() {
        let mut q = TxQueue::new();
        let body = Bytes::from(vec![9u8; VECTOR_MIN - 1]);
        q.push_frame(false, false, &body, Some(&body));
        let chunk = q.poll_transmit().unwrap();
        assert_eq!(chunk.len(), 9 + VECTOR_MIN - 1);
        assert_eq!(&chunk[9..], &body[..]);
        assert!(q.poll_transmit().is_none());
    }

    /// A full staging buffer is sealed as a chunk and a fresh one started: 512-byte staging
    /// holds two 202-byte frames, not three. The counters follow every byte.
    #[test]
    fn a_full_staging_buffer_is_sealed_not_grown() {
        let mut q = TxQueue::with_staging(512);
        for _ in 0..3 {
            q.push_frame(false, false, &[5u8; 200], None);
        }
        assert_eq!(
            (q.queued_bytes(), q.handed_out(), q.end_mark()),
            (606, 0, 606)
        );
        assert!(!q.is_empty());
        assert_eq!(q.poll_transmit().unwrap().len(), 404);
        assert_eq!(
            (q.queued_bytes(), q.handed_out(), q.end_mark()),
            (202, 404, 606)
        );
        assert_eq!(q.poll_transmit().unwrap().len(), 202);
        assert_eq!(
            (q.queued_bytes(), q.handed_out(), q.end_mark()),
            (0, 606, 606)
        );
        assert!(q.is_empty());
        assert!(q.poll_transmit().is_none());
    }

    /// A frame larger than the staging size gets a buffer of exactly its size, so the frame
    /// after it starts a fresh one.
    #[test]
    fn a_frame_past_the_staging_size_gets_a_buffer_of_its_own_size() {
        let mut q = TxQueue::with_staging(512);
        q.push_frame(false, false, &[1u8; 1000], None);
        q.push_frame(false, false, b"x", None);
        assert_eq!(q.poll_transmit().unwrap().len(), 1009);
        assert_eq!(&q.poll_transmit().unwrap()[..], &[0, 1, b'x'][..]);
    }

    /// Raw bytes, a command written in place and a vectored body, each counted in the queue.
    #[test]
    fn raw_bytes_commands_and_vectored_bodies_are_counted() {
        let mut q = TxQueue::with_staging(512);
        q.push_raw(&[0xff; 10]);
        assert_eq!(q.queued_bytes(), 10);
        q.push_frame_with(true, 5, |b| b.put_slice(b"hello"));
        assert_eq!(q.queued_bytes(), 17);
        let big = Bytes::from(vec![3u8; VECTOR_MIN]);
        q.push_frame(true, false, &big, Some(&big));
        assert_eq!(q.queued_bytes(), 17 + 9 + VECTOR_MIN);
        let first = q.poll_transmit().unwrap();
        assert_eq!(
            &first[10..],
            &[4, 5, b'h', b'e', b'l', b'l', b'o', 3, 0, 0, 0, 0, 0, 0, 0x10, 0][..]
        );
        assert_eq!(q.poll_transmit().unwrap().as_ptr(), big.as_ptr());
        assert!(q.is_empty());
    }

    /// `set_staging` sizes the next fresh buffer (the session grows it once the handshake is
    /// done): after it, a 600-byte frame and a 3,000-byte one share a 4 KiB buffer.
    #[test]
    fn set_staging_sizes_the_next_buffer() {
        let mut q = TxQueue::with_staging(512);
        q.push_raw(&[0; 10]);
        q.set_staging(4096);
        q.push_frame(false, false, &[1u8; 600], None);
        q.push_frame(false, false, &[2u8; 3000], None);
        assert_eq!(q.poll_transmit().unwrap().len(), 10);
        assert_eq!(q.poll_transmit().unwrap().len(), 609 + 3009);
        assert!(q.poll_transmit().is_none());
    }

    /// Fills a streaming queue's staging buffer with 64 frames of 1 KiB and hands it out.
    fn fill_and_hand_out(q: &mut TxQueue, byte: u8) -> Vec<Bytes> {
        for _ in 0..64 {
            q.push_frame(false, false, &[byte; 1015], None);
        }
        // The 65th frame seals the full buffer and starts the next one.
        q.push_frame(false, false, &[byte; 1015], None);
        let mut out = Vec::new();
        while let Some(c) = q.poll_transmit() {
            out.push(c);
        }
        out
    }

    /// True when `chunk` is whole frames of `fill_and_hand_out`, each a long-frame header and a
    /// body of `byte`s.
    fn frames_of(chunk: &[u8], byte: u8) -> bool {
        chunk
            .chunks(1024)
            .all(|f| f[0] == 2 && f[9..].iter().all(|&b| b == byte))
    }

    /// A filled buffer whose chunks have all been written (dropped) is used again for the
    /// one after next, rather than a new allocation: the third buffer starts where the first
    /// did. A 64 KiB block held meanwhile takes the address a freed buffer would have left.
    #[test]
    fn a_written_buffer_is_used_again() {
        let mut q = TxQueue::new();
        let first = fill_and_hand_out(&mut q, 1);
        let start = first[0].as_ptr();
        drop(first);
        let filler = vec![0u8; STAGING];
        let second = fill_and_hand_out(&mut q, 2);
        assert_eq!(
            second[1].as_ptr(),
            start,
            "the third buffer is the first one again"
        );
        assert!(frames_of(&second[1], 2));
        drop(filler);
    }

    /// A buffer is never written again while a chunk of it waits to be written: with the
    /// first buffer's chunk still held, the next fill takes new memory and the held bytes stay
    /// as they were.
    #[test]
    fn a_buffer_still_being_written_is_left_alone() {
        let mut q = TxQueue::new();
        let first = fill_and_hand_out(&mut q, 1);
        let held = first[0].clone();
        drop(first);
        for round in 2..6u8 {
            for c in fill_and_hand_out(&mut q, round) {
                assert_ne!(c.as_ptr(), held.as_ptr());
                assert!(frames_of(&c, round));
            }
        }
        assert_eq!(held.len(), STAGING);
        assert!(frames_of(&held, 1));
    }

    /// A frame that fills the staging buffer exactly still goes in it: two 256-byte frames
    /// make one 512-byte chunk. A fresh queue stages 64 KiB: 64 frames of 1 KiB go as one
    /// chunk, the 65th starts the next.
    #[test]
    fn staging_fills_to_the_last_byte() {
        let mut q = TxQueue::with_staging(512);
        q.push_frame(false, false, &[1u8; 254], None);
        q.push_frame(false, false, &[2u8; 254], None);
        assert_eq!(q.poll_transmit().unwrap().len(), 512);
        assert!(q.poll_transmit().is_none());
        // The same for a command written in place.
        let mut q = TxQueue::with_staging(512);
        q.push_raw(&[0; 505]);
        q.push_frame_with(true, 5, |b| b.put_slice(b"hello"));
        assert_eq!(q.poll_transmit().unwrap().len(), 512);
        assert!(q.poll_transmit().is_none());

        let mut q = TxQueue::new();
        for _ in 0..65 {
            q.push_frame(false, false, &[3u8; 1015], None);
        }
        assert_eq!(q.poll_transmit().unwrap().len(), 64 * 1024);
        assert_eq!(q.poll_transmit().unwrap().len(), 1024);
        assert!(q.poll_transmit().is_none());
    }
}
