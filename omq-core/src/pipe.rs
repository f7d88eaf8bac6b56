//! Pipes: the socket's per-peer queues, and the table that holds them.
//!
//! A pipe is the socket's view of one peer: an outgoing queue bounded by SNDHWM, an incoming
//! queue bounded by RCVHWM, and what the handshake said about the peer. A pipe is not a
//! connection: a connecting socket's pipe exists from `connect` on (so messages queue before the
//! peer is reachable, as in libzmq) and outlives reconnections; an accepting socket's pipe
//! exists from the end of the handshake until the connection ends and its received messages
//! have been read.

use std::collections::VecDeque;
use std::fmt;

use bytes::Bytes;

use crate::message::Message;
use crate::session::PeerInfo;

/// Identifies a pipe within its socket. Never reused: a stale id is simply not found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PipeId(u64);

impl PipeId {
    fn new(index: u32, generation: u32) -> Self {
        PipeId((u64::from(generation) << 32) | u64::from(index))
    }
    fn index(self) -> usize {
        (self.0 & 0xffff_ffff) as usize
    }
    fn generation(self) -> u32 {
        (self.0 >> 32) as u32
    }
    /// A number for logs and tests.
    pub fn raw(self) -> u64 {
        self.0
    }
}

/// Where a pipe came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// From `connect`, with the index of the connect endpoint.
    Connect(usize),
    /// Accepted on a bound endpoint (its text).
    Accept(String),
}

/// The life of a pipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PipeState {
    /// No connection (being dialled, or waiting to redial). Connect side only.
    Disconnected,
    /// A connection exists and its handshake is running.
    Handshaking,
    /// The handshake is done; messages flow.
    Active,
    /// The connection is gone for good; the pipe stays only until its received messages are read.
    Draining,
}

/// Something other than a message to send to a peer (does not count toward SNDHWM).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Command {
    /// Subscribe (SUB, XSUB → PUB, XPUB).
    Subscribe(Bytes),
    /// Unsubscribe.
    Cancel(Bytes),
    /// Join a group (DISH → RADIO).
    Join(Bytes),
    /// Leave a group.
    Leave(Bytes),
}

/// What a driver takes from a pipe to send to its peer.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outbound {
    /// A whole message.
    Message(Message),
    /// A command.
    Command(Command),
}

/// One peer's queues and state. The socket owns its pipes; outside the core they are read
/// only, through the accessors below ([`Socket::pipes`](crate::Socket::pipes), for tests and
/// diagnostics): the queues and the routing flags are the socket's business, so they can
/// change without breaking anyone.
///
/// ```compile_fail
/// fn reach_in(s: &omq_core::Socket) {
///     let p = s.pipes().iter().next().unwrap();
///     let _ = p.out.len(); // the queue itself is not public
/// }
/// ```
pub struct Pipe {
    /// This pipe's id.
    pub(crate) id: PipeId,
    /// Where it came from.
    pub(crate) origin: Origin,
    /// Where it is in its life.
    pub(crate) state: PipeState,
    /// Whether the routing strategy counts this pipe (for sending or receiving).
    pub(crate) attached: bool,
    /// Messages waiting to go to the peer.
    pub(crate) out: VecDeque<Message>,
    /// Commands waiting to go to the peer, sent before `out`.
    pub(crate) commands: VecDeque<Command>,
    /// Messages received and not yet read.
    pub(crate) inbound: VecDeque<Message>,
    /// The routing id a ROUTER knows this peer by.
    pub(crate) routing_id: Option<Bytes>,
    /// The routing id CONNECT_ROUTING_ID gave this pipe, to use once it is ready.
    pub(crate) assigned_routing_id: Option<Bytes>,
    /// What the handshake said about the peer.
    pub(crate) peer: Option<PeerInfo>,
    /// The peer's properties, given to each message as it is read (see `FairQueue::pop`):
    /// set when the handshake completes over a connection; `None` for an in-process link
    /// (whose messages never crossed a connection: libzmq gives them no properties either)
    /// and a datagram pipe.
    pub(crate) properties: Option<std::sync::Arc<crate::wire::metadata::Metadata>>,
    /// The driver has been told there is something to send and has not yet found the queue
    /// empty (so the next message needs no new wake-up).
    pub(crate) flush_requested: bool,
    /// The driver stopped reading this pipe's connection because `inbound` was full.
    pub(crate) read_paused: bool,
    /// The pipe is in the fair-queue ring.
    pub(crate) queued_for_read: bool,
    /// Scratch mark used while distributing one message, so a pipe matched by several
    /// subscriptions gets it once.
    pub(crate) mark: u64,
    /// How many topics (RADIO: groups) the peer holds subscribed, for MAX_SUBSCRIPTIONS.
    pub(crate) subscriptions: usize,
    /// The pipe serves a `udp://` socket: no handshake, no commands, one message per
    /// datagram (a RADIO sends it every group; a DISH tells it nothing).
    pub(crate) datagram: bool,
}

impl Pipe {
    /// Whether the peer is a REQ or REP, which takes a request's or reply's delimiter as the
    /// message's flag (`Message::delimited`). Only then does a REQ or REP send it so: a
    /// ROUTER or DEALER peer in process would get the message as it is, flag and all.
    pub(crate) fn peer_flags_delimiter(&self) -> bool {
        self.peer
            .as_ref()
            .is_some_and(|p| p.socket_type.flags_delimiter())
    }

    fn new(id: PipeId, origin: Origin, state: PipeState) -> Self {
        Pipe {
            id,
            origin,
            state,
            attached: false,
            out: VecDeque::new(),
            commands: VecDeque::new(),
            inbound: VecDeque::new(),
            routing_id: None,
            assigned_routing_id: None,
            peer: None,
            properties: None,
            flush_requested: false,
            read_paused: false,
            queued_for_read: false,
            mark: 0,
            subscriptions: 0,
            datagram: false,
        }
    }

    /// Whether the outgoing queue has room under `hwm` (0: unlimited).
    #[inline]
    pub fn has_room(&self, hwm: usize) -> bool {
        hwm == 0 || self.out.len() < hwm
    }

    /// This pipe's id.
    pub fn id(&self) -> PipeId {
        self.id
    }

    /// Where the pipe came from.
    pub fn origin(&self) -> &Origin {
        &self.origin
    }

    /// Where the pipe is in its life.
    pub fn state(&self) -> PipeState {
        self.state
    }

    /// The routing id a ROUTER knows this peer by.
    pub fn routing_id(&self) -> Option<&Bytes> {
        self.routing_id.as_ref()
    }

    /// What the handshake said about the peer (once it is done).
    pub fn peer(&self) -> Option<&PeerInfo> {
        self.peer.as_ref()
    }

    /// How many messages wait to go to the peer (what SNDHWM bounds).
    pub fn queued_out(&self) -> usize {
        self.out.len()
    }

    /// How many received messages wait to be read (what RCVHWM bounds).
    pub fn queued_in(&self) -> usize {
        self.inbound.len()
    }

    /// The messages waiting to go to the peer, oldest first.
    pub fn outgoing(&self) -> impl DoubleEndedIterator<Item = &Message> + ExactSizeIterator {
        self.out.iter()
    }
}

/// One line, with the queues' lengths rather than their messages, for diagnostics.
impl fmt::Debug for Pipe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pipe")
            .field("id", &self.id.raw())
            .field("origin", &self.origin)
            .field("state", &self.state)
            .field("out", &self.out.len())
            .field("commands", &self.commands.len())
            .field("in", &self.inbound.len())
            .field("read_paused", &self.read_paused)
            .field("queued_for_read", &self.queued_for_read)
            .field("flush_requested", &self.flush_requested)
            .finish_non_exhaustive()
    }
}

#[derive(Debug)]
struct Slot {
    generation: u32,
    pipe: Option<Pipe>,
}

/// The socket's pipes: a slab with generation-checked ids, so lookups are an index and a
/// comparison, and a stale id from a closed connection finds nothing.
#[derive(Debug, Default)]
pub struct Pipes {
    slots: Vec<Slot>,
    free: Vec<u32>,
    len: usize,
}

impl Pipes {
    /// Creates a pipe and returns its id. (Public for building a table of one's own to drive
    /// the [`routing`](crate::routing) structures with; a socket's table is read-only outside
    /// the core.)
    pub fn insert(&mut self, origin: Origin, state: PipeState) -> PipeId {
        let index = match self.free.pop() {
            Some(i) => i,
            None => {
                self.slots.push(Slot {
                    generation: 0,
                    pipe: None,
                });
                (self.slots.len() - 1) as u32
            }
        };
        let slot = &mut self.slots[index as usize];
        slot.generation = slot.generation.wrapping_add(1);
        let id = PipeId::new(index, slot.generation);
        slot.pipe = Some(Pipe::new(id, origin, state));
        self.len += 1;
        id
    }

    /// Removes a pipe.
    pub(crate) fn remove(&mut self, id: PipeId) -> Option<Pipe> {
        let slot = self.slots.get_mut(id.index())?;
        if slot.generation != id.generation() {
            return None;
        }
        let pipe = slot.pipe.take()?;
        self.free.push(id.index() as u32);
        self.len -= 1;
        Some(pipe)
    }

    /// A pipe by id.
    #[inline]
    pub fn get(&self, id: PipeId) -> Option<&Pipe> {
        let slot = self.slots.get(id.index())?;
        if slot.generation != id.generation() {
            return None;
        }
        slot.pipe.as_ref()
    }

    /// A pipe by id, mutably.
    #[inline]
    pub(crate) fn get_mut(&mut self, id: PipeId) -> Option<&mut Pipe> {
        let slot = self.slots.get_mut(id.index())?;
        if slot.generation != id.generation() {
            return None;
        }
        slot.pipe.as_mut()
    }

    /// Every pipe.
    pub fn iter(&self) -> impl Iterator<Item = &Pipe> {
        self.slots.iter().filter_map(|s| s.pipe.as_ref())
    }

    /// Number of pipes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_ids_find_nothing() {
        let mut pipes = Pipes::default();
        let a = pipes.insert(Origin::Connect(0), PipeState::Disconnected);
        assert!(pipes.remove(a).is_some());
        let b = pipes.insert(Origin::Connect(0), PipeState::Disconnected);
        assert_ne!(a, b);
        assert!(pipes.get(a).is_none());
        assert!(pipes.get(b).is_some());
        assert_eq!(pipes.len(), 1);
    }
}
