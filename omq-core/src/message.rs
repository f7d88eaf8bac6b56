//! Messages and their parts.
//!
//! A ZeroMQ message is a short list of parts (frames). Each part is either stored inline (small
//! parts, copied out of the read buffer so that a queued small message never keeps a large read
//! buffer alive) or held as a [`Bytes`] (larger parts; copies, sent or received, go into a
//! shared arena or an allocation of their own; big received ones are sliced out of the read
//! buffer without a copy).
//!
//! Four tiers for received parts, chosen so that memory queued in a pipe is bounded by the
//! messages' own sizes, never by the size of the buffers they were read into (the first three
//! are also what [`Part::copy_from_slice`] does with a sender's bytes):
//! - up to [`INLINE_CAP`] bytes: inline, no allocation at all (libzmq's "very small message" is 33
//!   bytes for the same reason; ours is what fits in a `Part` the size of a `Bytes`);
//! - up to [`ARENA_PART_MAX`] bytes: copied into the thread's receiving arena of
//!   [`ARENA_SIZE`]-byte buffers (one allocation per buffer, not per part, and none once the
//!   parts of an earlier buffer have all been dropped: see [`ARENA_KEPT`]; a sender's copies of
//!   up to [`SEND_ARENA_PART_MAX`] bytes go into a sending arena of larger buffers,
//!   [`SEND_ARENA_SIZE`]);
//! - below [`SLICE_MIN`] bytes: one exact-size allocation (what libzmq does for every message
//!   larger than its inline size);
//! - from [`SLICE_MIN`] bytes up: a zero-copy slice of the read buffer. The driver sizes its read
//!   buffer from [`crate::session::Session::read_hint`], so a large body lands in a buffer that
//!   is mostly the body itself.
//!
//! A part's representation is private ([`Part::shared`] shows the buffer of a shared one, for
//! vectored writes), and so is how a [`Message`] holds its parts (up to two without an
//! allocation of their own): parts are added and removed through the message's methods.

use std::cell::RefCell;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;
use std::thread::LocalKey;

use bytes::{Buf, Bytes, BytesMut};
use smallvec::SmallVec;

use crate::arena::{self, Arena};
use crate::wire::metadata::Metadata;

/// Largest part kept inline inside the [`Part`] value itself: the most that keeps a `Part` the
/// size of a `Bytes` (32 bytes; the inline bytes and their length fit beside the field whose
/// non-null value tells the two kinds apart). Measured (omq-tokio, tcp, 64 B PUSH/PULL): an
/// inline area of 64 bytes, which makes 64 B messages allocation-free, ran at 6.2M msg/s against
/// 7.3M for a `Part` the size of a `Bytes`: moving larger parts through the queues costs more
/// than the allocation saves. At 30 bytes a `Part` had grown to 40 bytes (and a `Message` to
/// 112) with the `bytes` release in use; 23 bytes brought it back to 32 (`Message` 96), and
/// PUSH/PULL rose by 9-19% at 8 B and 64 B on tcp and inproc, every backend measured
/// (stop 37, docs/PERFORMANCE.md); 30-byte messages, which now allocate on the sending side,
/// measured level.
pub const INLINE_CAP: usize = 23;

/// Smallest received part that is sliced out of the read buffer instead of copied.
pub const SLICE_MIN: usize = 8 * 1024;

/// Parts up to this size (and above [`INLINE_CAP`]), received or copied by a sender, are
/// copied into a shared arena rather than each into an allocation of its own: one allocation
/// per arena buffer instead of one per message. A received part keeps at most its one buffer
/// alive, at most [`ARENA_SIZE_MAX`] bytes, so what a peer's queued messages keep alive is
/// bounded by RCVHWM times that, never by the read buffer or a size the peer claims. A stream
/// of parts up to 256 B uses 8 KiB buffers (libzmq's zero-copy decoder has that bound: its
/// messages point into its 8 KiB read buffer); a small part can still be cut from the rest of
/// a larger buffer that parts over 256 B started, so the worst case, a stalled pipe whose
/// parts land one per buffer between other connections' traffic on the same thread, is
/// RCVHWM x 32 KiB (it was RCVHWM x 8 KiB before stop 43). Measured (Python binding, 1 KiB tcp PUSH/PULL,
/// where the runtime thread allocates and the Python thread frees): an allocation per 1 KiB
/// part cost a fifth of the samples in malloc, free and glibc's arena lock; one per eight parts
/// does not show.
pub const ARENA_PART_MAX: usize = 2 * 1024;

/// Size of one buffer of the receiving arena (the bodies a frame decoder copies), for parts
/// up to 256 B.
pub const ARENA_SIZE: usize = 8 * 1024;

/// Largest buffer of the receiving arena: a buffer holds 32 parts of the size it was made for
/// (`arena::PARTS_PER_BUFFER`), in powers of two from [`ARENA_SIZE`] (parts up to 256 B) to
/// this (parts from 513 B to [`ARENA_PART_MAX`]). Measured (Python binding, tcp 1 KiB, where
/// the runtime thread allocates the buffers and the Python thread frees them, HWM 100,000 so
/// few are taken back): 8 KiB buffers 1.11M msg/s, 16 KiB 1.20M, 32 KiB 1.27M; omq-tokio tcp
/// 1 KiB +5%, omq-tokio-mt tcp 1 KiB +7%. One size of 32 KiB for every part made
/// omq-tokio-mt tcp 64 B about 7% slower (512 parts to a buffer: the decoding and the reading
/// thread share its reference count more often), hence the size by part.
pub const ARENA_SIZE_MAX: usize = 32 * 1024;

/// How many filled buffers of the receiving arena a thread remembers, to take back once their
/// parts are gone. Enough for what is in flight on one thread in a stream of small messages: a
/// 64 KiB read of 64-byte messages fills eight buffers before the first of its messages is
/// received, and a pipe at the default HWM of 1,000 holds as many. So a thread keeps at most
/// `(1 + ARENA_KEPT) * ARENA_SIZE` = 136 KiB of receiving-arena memory that no part holds
/// while the parts are small; the ring remembers `ARENA_KEPT * ARENA_SIZE` bytes' worth (four
/// buffers of [`ARENA_SIZE_MAX`] for parts over 512 B), and slots a shorter ring no longer
/// uses keep their older, smaller buffers, so after the sizes changed it is under 300 KiB.
pub const ARENA_KEPT: usize = 16;

/// Size of one buffer of the sending arena, which [`Part::copy_from_slice`] copies into: eight
/// times [`ARENA_SIZE`], because a sender's parts usually die on another thread (the receiver
/// of an inproc pipe; the Python binding's runtime thread) and a buffer that cannot be taken
/// back is one `malloc` on the sending thread and one `free` on the other, which glibc
/// serialises on the sending thread's arena lock. With [`SEND_ARENA_KEPT`] it covers a full
/// inproc pipe of small messages (SNDHWM + RCVHWM = 2,000 parts of up to 512 bytes, 1 MiB),
/// so such a stream takes its buffers back instead of allocating. Measured (omq-tokio inproc
/// PUSH/PULL, docs/PERFORMANCE.md "Sending arena"): 256 B 4.5M -> 9M msg/s, 1 KiB 3.0M ->
/// 3.8M. What a part can keep alive here is the application's own doing (it made the part and
/// keeps it); what a peer sends goes into the receiving arena, whose buffers stay small.
pub const SEND_ARENA_SIZE: usize = 64 * 1024;

/// Largest part a sender's copy puts into the sending arena (eight or more to a buffer); larger
/// ones get an allocation of their own. Measured as [`SEND_ARENA_SIZE`] (omq-tokio inproc): 4 KiB
/// 1.5M -> 2.6M msg/s, 8 KiB 1.1M -> 2.1M, 16 KiB (own allocations either way) level.
pub const SEND_ARENA_PART_MAX: usize = 8 * 1024;

/// How many filled buffers of the sending arena a thread remembers: a thread keeps at most
/// `(1 + SEND_ARENA_KEPT) * SEND_ARENA_SIZE` = 1,088 KiB of sending-arena memory that no part
/// holds, and only after it has had about that much in flight at once.
pub const SEND_ARENA_KEPT: usize = 16;

thread_local! {
    /// The arena every [`Part::copy_from_slice`] of [`INLINE_CAP`] to [`SEND_ARENA_PART_MAX`] bytes
    /// on a thread copies into: the sender's copies of its messages. A part keeps its one
    /// buffer alive; a buffer whose parts have all been dropped is used again (see
    /// `arena.rs`), so a steady stream of small messages allocates nothing. Thread-local
    /// because a part is made before any socket sees it; it changes where the bytes are, never
    /// what a function returns.
    static SEND_ARENA: RefCell<Arena<SEND_ARENA_SIZE, SEND_ARENA_KEPT>> = RefCell::new(Arena::default());
    /// The arena the bodies a frame decoder receives are copied into (connections share
    /// their thread's, so an idle connection keeps no partly used buffer of its own): buffers
    /// made for 32 parts of the size that needed them, from [`ARENA_SIZE`] (parts up to
    /// 256 B, as libzmq's 8 KiB read buffer) up to [`ARENA_SIZE_MAX`]; see
    /// [`ARENA_PART_MAX`] for what a queued part can keep alive.
    static RECV_ARENA: RefCell<Arena<ARENA_SIZE, ARENA_KEPT, ARENA_SIZE_MAX>> = RefCell::new(Arena::default());
}

/// One part (frame) of a message.
#[derive(Clone)]
pub struct Part(Repr);

#[derive(Clone)]
enum Repr {
    Inline { len: u8, data: [u8; INLINE_CAP] },
    Shared(Bytes),
}

impl Part {
    /// An empty part (the REQ/REP delimiter, for example).
    pub const fn empty() -> Self {
        Part(Repr::Inline {
            len: 0,
            data: [0; INLINE_CAP],
        })
    }

    /// A part holding a copy of `data`: inline when it is small, in this thread's sending arena
    /// up to [`SEND_ARENA_PART_MAX`] bytes (see [`SEND_ARENA_SIZE`]), in an allocation of its own
    /// above.
    pub fn copy_from_slice(data: &[u8]) -> Self {
        Self::copy_into(&SEND_ARENA, data, SEND_ARENA_PART_MAX)
    }

    /// A received part holding a copy of `data`: as [`Part::copy_from_slice`], but in the
    /// thread's receiving arena, whose buffers ([`ARENA_SIZE`] up to [`ARENA_SIZE_MAX`]) bound
    /// what a peer's queued messages keep alive.
    pub(crate) fn copy_received(data: &[u8]) -> Self {
        Self::copy_into(&RECV_ARENA, data, ARENA_PART_MAX)
    }

    fn copy_into<const SIZE: usize, const KEPT: usize, const MAX: usize>(
        arena: &'static LocalKey<RefCell<Arena<SIZE, KEPT, MAX>>>,
        data: &[u8],
        max: usize,
    ) -> Self {
        if data.len() <= INLINE_CAP {
            let mut buf = [0u8; INLINE_CAP];
            buf[..data.len()].copy_from_slice(data);
            Part(Repr::Inline {
                len: data.len() as u8,
                data: buf,
            })
        } else if data.len() <= max {
            let b = arena::with_thread(arena, |a| a.copy(data));
            Part(Repr::Shared(
                b.unwrap_or_else(|| Bytes::copy_from_slice(data)),
            ))
        } else {
            Part(Repr::Shared(Bytes::copy_from_slice(data)))
        }
    }

    /// Takes the first `len` bytes of a read buffer as a part, choosing between inline, copy
    /// and zero-copy slice as described in the module docs. `len` must not exceed `buf.len()`.
    pub(crate) fn take_from(buf: &mut BytesMut, len: usize) -> Self {
        debug_assert!(len <= buf.len());
        if len < SLICE_MIN {
            let part = Part::copy_received(&buf[..len]);
            buf.advance(len);
            part
        } else {
            Part(Repr::Shared(buf.split_to(len).freeze()))
        }
    }

    /// The bytes of the part.
    pub fn as_slice(&self) -> &[u8] {
        match &self.0 {
            Repr::Inline { len, data } => &data[..*len as usize],
            Repr::Shared(b) => b,
        }
    }

    /// The part as `Bytes` (copies inline data into a new allocation; free for shared parts).
    pub fn to_bytes(&self) -> Bytes {
        match &self.0 {
            Repr::Inline { .. } => Bytes::copy_from_slice(self.as_slice()),
            Repr::Shared(b) => b.clone(),
        }
    }

    /// The part as `Bytes`, by value: a shared part gives up its buffer (still unique if it
    /// was), an inline one is copied.
    pub(crate) fn into_bytes(self) -> Bytes {
        match self.0 {
            Repr::Inline { len, data } => Bytes::copy_from_slice(&data[..len as usize]),
            Repr::Shared(b) => b,
        }
    }

    /// The shared buffer behind this part, if it is not inline. Encoders use it to hand large
    /// bodies to a vectored write without copying them.
    pub fn shared(&self) -> Option<&Bytes> {
        match &self.0 {
            Repr::Inline { .. } => None,
            Repr::Shared(b) => Some(b),
        }
    }
}

impl Default for Part {
    fn default() -> Self {
        Part::empty()
    }
}

impl Deref for Part {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl AsRef<[u8]> for Part {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl PartialEq for Part {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}
impl Eq for Part {}

impl PartialEq<[u8]> for Part {
    fn eq(&self, other: &[u8]) -> bool {
        self.as_slice() == other
    }
}

impl fmt::Debug for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        debug_bytes(self.as_slice(), f)
    }
}

/// Writes bytes as a short escaped string, truncated, so logs of large messages stay readable.
pub(crate) fn debug_bytes(b: &[u8], f: &mut fmt::Formatter<'_>) -> fmt::Result {
    const SHOW: usize = 48;
    write!(f, "b\"")?;
    for &c in b.iter().take(SHOW) {
        for e in std::ascii::escape_default(c) {
            write!(f, "{}", e as char)?;
        }
    }
    if b.len() > SHOW {
        write!(f, "\"..({} bytes)", b.len())
    } else {
        write!(f, "\"")
    }
}

impl From<Bytes> for Part {
    fn from(b: Bytes) -> Self {
        if b.len() <= INLINE_CAP {
            Part::copy_from_slice(&b)
        } else {
            Part(Repr::Shared(b))
        }
    }
}
impl From<Vec<u8>> for Part {
    fn from(v: Vec<u8>) -> Self {
        Part::from(Bytes::from(v))
    }
}
impl From<&[u8]> for Part {
    fn from(v: &[u8]) -> Self {
        Part::copy_from_slice(v)
    }
}
impl<const N: usize> From<&[u8; N]> for Part {
    fn from(v: &[u8; N]) -> Self {
        Part::copy_from_slice(v)
    }
}
impl<const N: usize> From<[u8; N]> for Part {
    fn from(v: [u8; N]) -> Self {
        Part::copy_from_slice(&v)
    }
}
impl From<&str> for Part {
    fn from(v: &str) -> Self {
        Part::copy_from_slice(v.as_bytes())
    }
}
impl From<String> for Part {
    fn from(v: String) -> Self {
        Part::from(v.into_bytes())
    }
}
impl From<&Bytes> for Part {
    fn from(b: &Bytes) -> Self {
        Part::from(b.clone())
    }
}

/// A whole message: one or more parts, delivered all together or not at all.
///
/// Received messages also carry the metadata of the connection they came in on (the peer's
/// READY properties, and later the authenticator's User-Id), shared by every message of that
/// connection.
///
/// SERVER and PEER sockets (specs 41, 51) address peers by a number that travels beside the
/// message, never on the wire: [`Message::routing_id`] says which peer a received message came
/// from, and which peer a sent one goes to.
///
/// Two messages are equal when their parts are; metadata and routing id are not compared.
#[derive(Clone, Default)]
pub struct Message {
    /// One part inline, so that a message is one cache line (64 bytes): every message is moved
    /// by value several times on its way (decoder, session events, pipe, inbox or outbox
    /// slot, the caller), and between threads each move of a two-line message cost two
    /// transfers. With two parts inline (96 bytes) omq-tokio tcp 64 B PUSH/PULL ran 11% slower,
    /// compio and monoio about 20%, the multi-threaded block_on layout 27%
    /// (docs/PERFORMANCE.md, "A message in one cache line"). The price: a message of two or
    /// more parts keeps them in an allocation of its own (a ROUTER's received message, identity
    /// and body, allocates; a REQ's or REP's delimiter does not count, see `delimited`).
    parts: SmallVec<[Part; 1]>,
    metadata: Option<Arc<Metadata>>,
    routing_id: Option<std::num::NonZeroU32>,
    /// REQ, REP: an empty delimiter part goes before `parts` on the wire (a request or reply
    /// that crossed no ROUTER), kept as a flag so that a one-part request or reply stays one
    /// part inline and allocates nothing (it took an allocation on each side of each hop with
    /// the 64-byte message). Set and cleared only inside the core: by a REQ or REP sending
    /// to a REQ or REP peer (to a ROUTER or DEALER, which may be in process, the delimiter
    /// stays a part: `Pipe::peer_flags_delimiter`), and by a REQ or REP session that decodes
    /// such a delimiter. The encoder writes it back; REQ and REP strip it, so an application
    /// never sees the flag. Equality and `Debug` count it as the part it stands for. Fits in
    /// what was padding. A `u8` (0 or 1), not a `bool`: a `bool`'s spare values would become
    /// the niche of every enum around a message (`Option<Message>`, `Result`, the session's
    /// events), whose tests then read this byte: 79 more instructions a PUSH/PULL message,
    /// measured.
    delimited: u8,
    /// RADIO/DISH: boxed, so the other types pay one pointer for it.
    group: Option<Box<Bytes>>,
}

/// The longest RADIO/DISH group, in bytes (libzmq's ZMQ_GROUP_MAX_LENGTH).
pub const MAX_GROUP: usize = 255;

impl Message {
    /// A message with no parts yet.
    pub fn new() -> Self {
        Message::default()
    }

    /// A message made of the given parts, in order.
    pub fn multipart<I, P>(parts: I) -> Self
    where
        I: IntoIterator<Item = P>,
        P: Into<Part>,
    {
        Message {
            parts: parts.into_iter().map(Into::into).collect(),
            metadata: None,
            routing_id: None,
            delimited: 0,
            group: None,
        }
    }

    /// Appends a part.
    pub fn push(&mut self, part: impl Into<Part>) {
        self.parts.push(part.into());
    }

    /// Inserts a part in front (envelopes: a ROUTER's routing id, a REQ's delimiter).
    pub fn push_front(&mut self, part: impl Into<Part>) {
        self.parts.insert(0, part.into());
    }

    /// Removes and returns the first part.
    pub fn pop_front(&mut self) -> Option<Part> {
        if self.parts.is_empty() {
            None
        } else {
            Some(self.parts.remove(0))
        }
    }

    /// The parts of the message.
    pub fn parts(&self) -> &[Part] {
        &self.parts
    }

    /// The parts, to change in place (replace a body, rewrite an envelope). Adding and
    /// removing parts goes through [`Message::push`], [`Message::push_front`] and
    /// [`Message::pop_front`], so how the parts are stored stays the message's own business:
    ///
    /// ```compile_fail
    /// let mut m = omq_core::Message::from("a");
    /// m.parts_mut().push("b".into()); // a slice, not the storage behind it
    /// ```
    pub fn parts_mut(&mut self) -> &mut [Part] {
        &mut self.parts
    }

    /// The number of parts.
    pub fn len(&self) -> usize {
        self.parts.len()
    }

    /// True when the message has no parts.
    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    /// Total number of body bytes over all parts.
    pub fn byte_len(&self) -> usize {
        self.parts.iter().map(|p| p.len()).sum()
    }

    /// The part at `i`.
    pub fn get(&self, i: usize) -> Option<&Part> {
        self.parts.get(i)
    }

    /// The connection metadata this message arrived with, if any.
    pub fn metadata(&self) -> Option<&Metadata> {
        self.metadata.as_deref()
    }

    /// A connection property of the peer this message came from (`Socket-Type`, `Identity`,
    /// `User-Id`, or an application `X-` property), as libzmq's `zmq_msg_gets`.
    pub fn property(&self, name: &str) -> Option<&[u8]> {
        self.metadata.as_ref().and_then(|m| m.get(name))
    }

    /// The shared connection metadata, for moving it to another message without a copy.
    pub fn shared_metadata(&self) -> Option<&Arc<Metadata>> {
        self.metadata.as_ref()
    }

    /// Attaches connection metadata (done for every received message: by the socket as it is
    /// read, or by a session used on its own).
    pub fn set_metadata(&mut self, metadata: Option<Arc<Metadata>>) {
        self.metadata = metadata;
    }

    /// Attaches `metadata` unless the message already carries some.
    #[inline]
    pub(crate) fn stamp_metadata(&mut self, metadata: &Arc<Metadata>) {
        if self.metadata.is_none() {
            self.metadata = Some(metadata.clone());
        }
    }

    /// SERVER, PEER: the peer a received message came from, or the one a message to send goes
    /// to (libzmq's `zmq_msg_routing_id`). Never 0.
    pub fn routing_id(&self) -> Option<u32> {
        self.routing_id.map(std::num::NonZeroU32::get)
    }

    /// Sets (or, with 0, clears) the routing id (libzmq's `zmq_msg_set_routing_id`).
    pub fn set_routing_id(&mut self, id: u32) {
        self.routing_id = std::num::NonZeroU32::new(id);
    }

    /// The message addressed to the SERVER or PEER peer `id`.
    #[must_use]
    pub fn with_routing_id(mut self, id: u32) -> Self {
        self.set_routing_id(id);
        self
    }

    /// RADIO, DISH: the group a message is published to, or was received in (libzmq's
    /// `zmq_msg_group`). At most [`MAX_GROUP`] bytes: RADIO refuses a longer one.
    pub fn group(&self) -> Option<&[u8]> {
        self.group.as_deref().map(|g| &g[..])
    }

    /// Sets the group (libzmq's `zmq_msg_set_group`); an empty one clears it.
    pub fn set_group(&mut self, group: impl Into<Bytes>) {
        let g: Bytes = group.into();
        self.group = (!g.is_empty()).then(|| Box::new(g));
    }

    /// The message published to `group`.
    #[must_use]
    pub fn with_group(mut self, group: impl Into<Bytes>) -> Self {
        self.set_group(group);
        self
    }

    /// REQ, REP: whether an empty delimiter goes before [`Message::parts`] on the wire. A REQ
    /// or REP [`Session`](crate::Session) used on its own hands out a request or reply that
    /// crossed no ROUTER this way (the delimiter and a one-part body stay one part inline);
    /// a socket strips the delimiter before the application sees the message, so messages
    /// from a socket never have it. Equality and `Debug` count it as the empty part it
    /// stands for.
    #[inline]
    pub fn delimited(&self) -> bool {
        self.delimited != 0
    }

    /// Says that an empty delimiter goes before the parts on the wire (REQ, REP).
    #[inline]
    pub(crate) fn set_delimited(&mut self, delimited: bool) {
        self.delimited = u8::from(delimited);
    }

    /// The parts as they go on the wire: the delimiter the flag stands for, then the parts.
    fn wire_parts(&self) -> impl Iterator<Item = &[u8]> {
        let delimiter: Option<&[u8]> = self.delimited().then_some(&[]);
        delimiter
            .into_iter()
            .chain(self.parts.iter().map(|p| p.as_slice()))
    }

    /// The parts, consumed, as an iterator.
    pub fn into_parts(self) -> impl Iterator<Item = Part> {
        self.parts.into_iter()
    }
}

impl PartialEq for Message {
    fn eq(&self, other: &Self) -> bool {
        if self.delimited == other.delimited {
            self.parts == other.parts
        } else {
            self.wire_parts().eq(other.wire_parts())
        }
    }
}
impl Eq for Message {}

impl fmt::Debug for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let delimiter = self.delimited().then(Part::empty);
        f.debug_list()
            .entries(delimiter.iter().chain(self.parts.iter()))
            .finish()
    }
}

impl<P: Into<Part>> From<P> for Message {
    fn from(p: P) -> Self {
        let mut m = Message::new();
        m.push(p);
        m
    }
}

impl<P: Into<Part>> FromIterator<P> for Message {
    fn from_iter<T: IntoIterator<Item = P>>(iter: T) -> Self {
        Message::multipart(iter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_is_the_size_of_a_bytes() {
        // Every message is moved by value several times on its way: a `bytes` release that
        // changes its layout, or an INLINE_CAP raised past what fits, must not grow it unseen.
        assert_eq!(std::mem::size_of::<Part>(), std::mem::size_of::<Bytes>());
        // One cache line (see `Message::parts`).
        assert!(std::mem::size_of::<Message>() <= 64);
    }

    #[test]
    fn the_delimiter_flag_compares_and_prints_as_the_empty_part_it_stands_for() {
        let mut flagged = Message::from("body");
        flagged.set_delimited(true);
        let parts = Message::multipart(["", "body"]);
        assert_eq!(flagged, parts);
        assert_eq!(parts, flagged);
        assert_ne!(flagged, Message::from("body"));
        assert_ne!(flagged, Message::multipart(["x", "body"]));
        assert_eq!(format!("{flagged:?}"), format!("{parts:?}"));
        assert_eq!(flagged.len(), 1);
        flagged.set_delimited(false);
        assert_eq!(flagged, Message::from("body"));
    }

    #[test]
    fn part_sizes_choose_representation() {
        let mut buf = BytesMut::from(&vec![7u8; 3 * SLICE_MIN][..]);
        let small = Part::take_from(&mut buf, INLINE_CAP);
        assert!(small.shared().is_none());
        let mid = Part::take_from(&mut buf, INLINE_CAP + 1);
        assert!(mid.shared().is_some());
        let big = Part::take_from(&mut buf, SLICE_MIN);
        assert_eq!(big.len(), SLICE_MIN);
        assert_eq!(buf.len(), 3 * SLICE_MIN - SLICE_MIN - 2 * INLINE_CAP - 1);
    }

    /// Where a received part starts, to tell parts that share an arena (each right after the
    /// one before) from parts with allocations of their own.
    fn addr(p: &Part) -> usize {
        p.as_slice().as_ptr() as usize
    }

    /// `n` parts of `len` bytes, as a decoder takes them, share one receiving-arena buffer
    /// back to back, and the next one starts another.
    fn share_one_buffer(len: usize, n: usize) {
        let mut buf = BytesMut::from(&vec![7u8; (n + 1) * len][..]);
        let first = Part::take_from(&mut buf, len);
        let mut last = addr(&first);
        for i in 1..n {
            let p = Part::take_from(&mut buf, len);
            assert_eq!(
                addr(&p),
                last + len,
                "{len}-byte part {i} shares the buffer"
            );
            last = addr(&p);
        }
        let next = Part::take_from(&mut buf, len);
        assert_ne!(
            addr(&next),
            last + len,
            "{n} {len}-byte parts fill a buffer"
        );
    }

    /// The tiers as documented, in literal sizes (a test written in terms of the constants
    /// would hold whatever they were): 2 KiB parts share 32 KiB buffers, 1 KiB parts too, 257 B
    /// parts 16 KiB ones and 256 B parts 8 KiB ones. One size per test: a test's thread has an
    /// arena of its own, fresh.
    #[test]
    fn sixteen_2k_parts_share_one_32k_buffer() {
        share_one_buffer(2048, 16);
    }

    #[test]
    fn thirty_two_1k_parts_share_one_32k_buffer() {
        share_one_buffer(1024, 32);
    }

    #[test]
    fn sixty_three_257_byte_parts_share_one_16k_buffer() {
        share_one_buffer(257, 63);
    }

    #[test]
    fn thirty_two_256_byte_parts_share_one_8k_buffer() {
        share_one_buffer(256, 32);
    }

    #[test]
    fn parts_past_2k_get_their_own_allocation() {
        let mut buf = BytesMut::from(&vec![7u8; 8 * 1024][..]);
        let a = Part::take_from(&mut buf, 2049);
        assert!(a.shared().is_some());
        // Not a slice of the read buffer: the buffer's next bytes would follow the part's.
        assert_ne!(addr(&a) + a.len(), buf.as_ptr() as usize);
        let b = Part::take_from(&mut buf, 100);
        let c = Part::take_from(&mut buf, 100);
        assert_ne!(addr(&b), addr(&a) + a.len(), "not in the arena");
        assert_eq!(addr(&c), addr(&b) + 100, "small parts share the arena");
    }

    /// From 8 KiB up a part is the read buffer's own bytes (no copy); one byte less is copied
    /// into an allocation of its own.
    #[test]
    fn parts_from_8k_are_slices_of_the_read_buffer() {
        let mut buf = BytesMut::from(&vec![7u8; 32 * 1024][..]);
        let at = buf.as_ptr() as usize;
        let sliced = Part::take_from(&mut buf, 8192);
        assert_eq!(addr(&sliced), at);
        let at = buf.as_ptr() as usize;
        let copied = Part::take_from(&mut buf, 8191);
        assert_ne!(addr(&copied), at);
        assert_eq!(copied.len(), 8191);
        assert_eq!(buf.as_ptr() as usize, at + 8191);
    }

    /// How many times a run of parts, each `len` bytes, is not back to back (a new buffer).
    fn buffer_breaks(parts: &[Part], len: usize) -> usize {
        parts
            .windows(2)
            .filter(|w| addr(&w[1]) != addr(&w[0]) + len)
            .count()
    }

    /// A sender's copies go into 64 KiB buffers, received bodies into 8 KiB ones: 1,000 parts
    /// of 64 bytes (62.5 KiB) start a new buffer at most once when sent, about eight times
    /// when received; a sent 4 KiB part is in the arena too, a received one is not. (Each test
    /// has a thread, so a fresh pair of arenas, of its own.)
    #[test]
    fn sent_copies_and_received_bodies_use_their_own_buffer_sizes() {
        let sent: Vec<Part> = (0..1000).map(|_| Part::copy_from_slice(&[1; 64])).collect();
        assert!(
            buffer_breaks(&sent, 64) <= 1,
            "sent: {}",
            buffer_breaks(&sent, 64)
        );
        let mut buf = BytesMut::from(&[2u8; 64 * 1000][..]);
        let received: Vec<Part> = (0..1000).map(|_| Part::take_from(&mut buf, 64)).collect();
        let breaks = buffer_breaks(&received, 64);
        assert!((7..=8).contains(&breaks), "received: {breaks}");
        // 4 KiB parts too: sixteen to a sending buffer; received, each allocated on its own.
        let sent_4k: Vec<Part> = (0..16).map(|_| Part::copy_from_slice(&[3; 4096])).collect();
        assert!(buffer_breaks(&sent_4k, 4096) <= 1);
        let mut buf = BytesMut::from(&[4u8; 4096 * 16][..]);
        let received_4k: Vec<Part> = (0..16).map(|_| Part::take_from(&mut buf, 4096)).collect();
        assert_eq!(buffer_breaks(&received_4k, 4096), 15);
        assert!(sent_4k.iter().all(|p| p[..] == [3; 4096]));
        assert!(received_4k.iter().all(|p| p[..] == [4; 4096]));
        assert!(sent.iter().all(|p| p[..] == [1; 64]));
        assert!(received.iter().all(|p| p[..] == [2; 64]));
    }

    /// The thread's arena takes buffers back only when no part points into them: a stream of
    /// 64-byte copies with 500 in flight (about four buffers' worth), and one part held
    /// throughout, read back intact. (That the stream allocates nothing is
    /// `tests/allocation_arena.rs`.)
    #[test]
    fn parts_in_flight_are_never_written_over() {
        let held = Part::copy_from_slice(&[0xAB; 64]);
        let mut in_flight = std::collections::VecDeque::new();
        for i in 0..100_000u32 {
            let mut body = [0u8; 64];
            body[..4].copy_from_slice(&i.to_le_bytes());
            let p = Part::copy_from_slice(&body);
            assert!(p.shared().is_some());
            in_flight.push_back((i, p));
            if in_flight.len() > 500 {
                let (j, old) = in_flight.pop_front().unwrap();
                assert_eq!(
                    &old[..4],
                    &j.to_le_bytes(),
                    "a part in flight was written over"
                );
            }
        }
        assert_eq!(&held[..], &[0xAB; 64], "a held part was written over");
    }

    #[test]
    fn a_part_equals_exactly_its_bytes() {
        let p = Part::from("abc");
        assert!(p == *b"abc".as_slice());
        assert!(p != *b"abd".as_slice());
        assert!(p != *b"ab".as_slice());
    }

    /// Debug output escapes bytes and stops at 48 of them, saying how many there were, so a
    /// log line of a large message stays short.
    #[test]
    fn debug_output_is_escaped_and_cut_at_48_bytes() {
        assert_eq!(
            format!("{:?}", Part::from(&b"a\n\x01"[..])),
            r#"b"a\n\x01""#
        );
        let at_48 = Part::from(vec![b'x'; 48]);
        assert_eq!(format!("{at_48:?}"), format!("b\"{}\"", "x".repeat(48)));
        let at_49 = Part::from(vec![b'x'; 49]);
        assert_eq!(
            format!("{at_49:?}"),
            format!("b\"{}\"..(49 bytes)", "x".repeat(48))
        );
        assert_eq!(format!("{:?}", Part::empty()), r#"b"""#);
    }

    #[test]
    fn part_stays_small() {
        // A part is about the size of a `Bytes` plus a tag: a queued message of small parts
        // costs no heap allocation beyond the message's own (none for up to two parts).
        assert!(
            std::mem::size_of::<Part>() <= 40,
            "{}",
            std::mem::size_of::<Part>()
        );
    }

    #[test]
    fn message_building() {
        let mut m = Message::multipart(["a", "bb"]);
        m.push_front(Part::empty());
        assert_eq!(m.len(), 3);
        assert_eq!(m.byte_len(), 3);
        assert_eq!(m.pop_front().unwrap().len(), 0);
        assert_eq!(&m.parts()[1][..], b"bb");
        let single = Message::from("hello");
        assert_eq!(single.len(), 1);
    }
}
