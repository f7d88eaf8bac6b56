//! SERVER (spec 41) and PEER (spec 51): every peer is known by a number the socket gives it
//! when its pipe attaches (counting up from a random start, never 0, as libzmq). A received
//! message carries its peer's number in [`Message::routing_id`]; a message sent goes to the
//! peer its routing id names. Single-part messages only, both ways (the pattern is wrapped in
//! [`super::single_part::SinglePart`]).
//!
//! A message for an unknown peer is refused with EHOSTUNREACH, one for a peer at SNDHWM with
//! EAGAIN (libzmq's `server_t::xsend`); a multipart message from a peer is dropped. A PEER is
//! a SERVER that also connects: `connect_peer` tells the number of the peer it dials, which
//! stays the same across reconnections (the pipe outlives its connections).

use std::collections::HashMap;

use bytes::Bytes;

use super::{Addressed, Attach, Ctx, Rules};
use crate::message::Message;
use crate::options::Options;
use crate::pipe::{PipeId, Pipes};
use crate::socket::{RecvError, SendError};

/// SERVER and PEER: peers by number.
#[derive(Debug)]
pub(crate) struct Server {
    by_id: HashMap<u32, PipeId>,
    next_id: u32,
}

impl Server {
    /// Numbers count up from `first_id` (0 is skipped).
    pub(crate) fn new(first_id: u32) -> Self {
        Server {
            by_id: HashMap::new(),
            next_id: first_id,
        }
    }

    fn take_id(&mut self) -> u32 {
        loop {
            let id = self.next_id;
            self.next_id = self.next_id.wrapping_add(1);
            if id != 0 && !self.by_id.contains_key(&id) {
                return id;
            }
        }
    }
}

/// A pipe's number, as kept in its routing id (4 bytes, big-endian).
pub(crate) fn number(routing_id: &[u8]) -> Option<u32> {
    Some(u32::from_be_bytes(routing_id.try_into().ok()?))
}

impl Rules for Server {
    fn send(&mut self, ctx: &mut Ctx<'_>, mut msg: Message) -> Result<(), SendError> {
        let target = msg.routing_id().and_then(|id| self.by_id.get(&id).copied());
        let id = match ctx.addressed(target) {
            Addressed::Ready(id) => id,
            Addressed::Unknown => return Err(SendError::HostUnreachable(msg)),
            Addressed::Full => return Err(SendError::WouldBlock(msg)),
        };
        msg.set_routing_id(0);
        ctx.enqueue(id, msg);
        Ok(())
    }

    fn recv(&mut self, ctx: &mut Ctx<'_>) -> Result<Message, RecvError> {
        let (rid, mut msg) = ctx.pop_with_id()?;
        if let Some(n) = rid.as_deref().and_then(number) {
            msg.set_routing_id(n);
        }
        Ok(msg)
    }

    /// Whether a send may succeed: which peer it is for is only known with the message, so
    /// always (a full or unknown peer is an error of that send, as libzmq's).
    fn can_send(&self, _pipes: &Pipes, _options: &Options) -> bool {
        true
    }

    fn can_recv(&mut self, ctx: &mut Ctx<'_>) -> bool {
        ctx.has_message()
    }

    fn attach(&mut self, ctx: &mut Ctx<'_>, pipe: PipeId) -> Attach {
        let id = self.take_id();
        let Some(p) = ctx.pipes.get_mut(pipe) else {
            return Attach::Refused;
        };
        p.routing_id = Some(Bytes::copy_from_slice(&id.to_be_bytes()));
        self.by_id.insert(id, pipe);
        Attach::Attached
    }

    fn detach(&mut self, _ctx: &mut Ctx<'_>, pipe: PipeId, routing_id: Option<&Bytes>) {
        if let Some(n) = routing_id.and_then(|r| number(r)) {
            if self.by_id.get(&n) == Some(&pipe) {
                self.by_id.remove(&n);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pattern::single_part::SinglePart;
    use crate::pattern::testing::Harness;

    fn id_of(h: &Harness, pipe: PipeId) -> u32 {
        number(h.pipes.get(pipe).unwrap().routing_id.as_deref().unwrap()).unwrap()
    }

    #[test]
    fn replies_by_the_number_each_message_came_with() {
        let mut h = Harness::with_options(Options::default().send_hwm(1));
        let mut s = SinglePart(Server::new(u32::MAX));
        let a = h.add(&mut s);
        let b = h.add(&mut s);
        assert!(
            s.can_send(&h.pipes, &h.options),
            "a SERVER send never waits"
        );
        // Numbers skip 0 on wrapping.
        assert_eq!((id_of(&h, a), id_of(&h, b)), (u32::MAX, 1));
        h.arrive(&mut s, b, Message::from("from b"));
        h.arrive(&mut s, a, Message::multipart(["dropped", "multipart"]));
        let got = s.recv(&mut h.ctx()).unwrap();
        assert_eq!(
            (got.routing_id(), got.clone()),
            (Some(1), Message::from("from b"))
        );
        assert_eq!(s.recv(&mut h.ctx()), Err(RecvError::WouldBlock));
        s.send(&mut h.ctx(), Message::from("to b").with_routing_id(1))
            .unwrap();
        assert_eq!(h.out(b), [Message::from("to b")]);
        assert!(h.out(a).is_empty());
        // Full, unknown, unaddressed and multipart are each refused.
        s.send(&mut h.ctx(), Message::from("1").with_routing_id(1))
            .unwrap();
        assert!(matches!(
            s.send(&mut h.ctx(), Message::from("2").with_routing_id(1)),
            Err(SendError::WouldBlock(_))
        ));
        assert!(matches!(
            s.send(&mut h.ctx(), Message::from("x").with_routing_id(7)),
            Err(SendError::HostUnreachable(_))
        ));
        assert!(matches!(
            s.send(&mut h.ctx(), Message::from("x")),
            Err(SendError::HostUnreachable(_))
        ));
        assert!(matches!(
            s.send(
                &mut h.ctx(),
                Message::multipart(["a", "b"]).with_routing_id(1)
            ),
            Err(SendError::InvalidMessage(..))
        ));
        // A detached peer's number is unknown from then on.
        let rid = h.pipes.get_mut(a).unwrap().routing_id.clone();
        s.detach(&mut h.ctx(), a, rid.as_ref());
        assert!(matches!(
            s.send(&mut h.ctx(), Message::from("x").with_routing_id(u32::MAX)),
            Err(SendError::HostUnreachable(_))
        ));
    }
}
