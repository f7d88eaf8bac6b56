//! REQ's envelope and state (spec 28): a request goes out behind an empty delimiter (and,
//! with REQ_CORRELATE, a 4-byte request id before it); only a well-formed reply from the pipe
//! the request went to, carrying the right id, is accepted; anything else is discarded.
//! Without REQ_RELAXED a second send before the reply, or a receive before a send, is a state
//! error (libzmq's EFSM).

use bytes::Bytes;

use crate::message::{Message, Part};
use crate::pipe::PipeId;

/// Where a REQ socket is in its request/reply cycle.
#[derive(Debug, Default)]
pub struct ReqState {
    /// The request in flight: the pipe it went to, and its id when correlating.
    pub waiting: Option<(PipeId, u32)>,
    next_id: u32,
}

impl ReqState {
    /// A state whose request ids start at `start`.
    pub fn new(start: u32) -> Self {
        ReqState {
            waiting: None,
            next_id: start,
        }
    }

    /// Wraps a request for the wire and returns the id it was given.
    pub fn wrap(&mut self, msg: &mut Message, correlate: bool) -> u32 {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        msg.push_front(Part::empty());
        if correlate {
            msg.push_front(Part::copy_from_slice(&id.to_be_bytes()));
        }
        id
    }

    /// Checks a received message against the request in flight and unwraps it. `None` means
    /// discard it.
    pub fn accept(&self, from: PipeId, mut msg: Message, correlate: bool) -> Option<Message> {
        if !self.is_reply(from, &msg, correlate) {
            return None;
        }
        if correlate {
            msg.pop_front();
        }
        msg.pop_front();
        Some(msg)
    }

    /// Whether `msg` from `from` is the reply to the request in flight (without taking it).
    pub fn is_reply(&self, from: PipeId, msg: &Message, correlate: bool) -> bool {
        let Some((pipe, id)) = self.waiting else {
            return false;
        };
        let parts = msg.parts();
        let envelope = if correlate { 2 } else { 1 };
        from == pipe
            && parts.len() > envelope
            && (!correlate || parts[0][..] == id.to_be_bytes())
            && parts[envelope - 1].is_empty()
    }
}

/// The request id bytes of a correlated request, for tests.
pub fn request_id_bytes(id: u32) -> Bytes {
    Bytes::copy_from_slice(&id.to_be_bytes())
}
