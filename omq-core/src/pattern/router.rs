//! ROUTER (spec 28): every peer is known by a routing id (see
//! [`crate::routing::router::RouterTable`]). A received message is prefixed with its peer's id;
//! a message sent starts with the id of the peer it goes to, which is taken off.
//!
//! A message for an unknown peer (or one not attached) is dropped, or, with ROUTER_MANDATORY,
//! refused with EHOSTUNREACH; for a peer at SNDHWM it is dropped, or, with ROUTER_MANDATORY,
//! refused with EAGAIN. A peer announcing an id in use is refused, or with ROUTER_HANDOVER takes
//! it over (never a generated one). A ROUTER attaches a connecting pipe only after its
//! handshake, since it cannot address a peer before knowing its id.

use bytes::Bytes;

use super::{Addressed, Attach, Ctx, Rules};
use crate::message::Message;
use crate::options::Options;
use crate::pipe::{PipeId, Pipes};
use crate::routing::router::{Identified, RouterTable};
use crate::socket::{MessageError, RecvError, SendError};

/// ROUTER: the identity table.
#[derive(Debug)]
pub(crate) struct Router {
    table: RouterTable,
}

impl Router {
    /// Generated routing ids count up from `first_id`.
    pub(crate) fn new(first_id: u32) -> Self {
        Router {
            table: RouterTable::new(first_id),
        }
    }
}

impl Rules for Router {
    fn send(&mut self, ctx: &mut Ctx<'_>, mut msg: Message) -> Result<(), SendError> {
        if msg.len() < 2 {
            return Err(SendError::InvalidMessage(msg, MessageError::NoRoutingId));
        }
        let mandatory = ctx.options.router_mandatory;
        let id = match ctx.addressed(self.table.lookup(&msg.parts()[0])) {
            Addressed::Ready(id) => id,
            Addressed::Unknown if mandatory => return Err(SendError::HostUnreachable(msg)),
            Addressed::Full if mandatory => return Err(SendError::WouldBlock(msg)),
            Addressed::Unknown => {
                crate::trace::dropped!("ROUTER: no peer with that routing id");
                return Ok(());
            }
            Addressed::Full => {
                crate::trace::dropped!("ROUTER: the peer is at SNDHWM");
                return Ok(());
            }
        };
        msg.pop_front();
        ctx.enqueue(id, msg);
        Ok(())
    }

    fn recv(&mut self, ctx: &mut Ctx<'_>) -> Result<Message, RecvError> {
        let (rid, mut msg) = ctx.pop_with_id()?;
        msg.push_front(rid.unwrap_or_default());
        Ok(msg)
    }

    /// A ROUTER send never blocks: what cannot go is dropped (or refused with MANDATORY).
    fn can_send(&self, _pipes: &Pipes, _options: &Options) -> bool {
        true
    }

    fn can_recv(&mut self, ctx: &mut Ctx<'_>) -> bool {
        ctx.has_message()
    }

    fn attach(&mut self, ctx: &mut Ctx<'_>, pipe: PipeId) -> Attach {
        let handover = ctx.options.router_handover;
        let Some(p) = ctx.pipes.get_mut(pipe) else {
            return Attach::Refused;
        };
        let assigned = p.assigned_routing_id.take();
        let announced = p.peer.as_ref().and_then(|i| i.routing_id.clone());
        match self
            .table
            .identify(pipe, assigned, announced.as_ref(), handover)
        {
            Identified::Named(rid) => {
                p.routing_id = Some(rid);
                Attach::Attached
            }
            Identified::Refused => Attach::Refused,
            Identified::TookOver { id: rid, old } => {
                p.routing_id = Some(rid);
                // The old pipe must not remove the id now held by the newcomer.
                if let Some(o) = ctx.pipes.get_mut(old) {
                    o.routing_id = None;
                }
                Attach::Replaces(old)
            }
        }
    }

    fn detach(&mut self, _ctx: &mut Ctx<'_>, pipe: PipeId, routing_id: Option<&Bytes>) {
        if let Some(rid) = routing_id {
            self.table.remove(rid, pipe);
        }
    }

    fn attaches_early(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pattern::testing::Harness;
    use crate::pipe::{Origin, PipeState};
    use crate::session::PeerInfo;
    use crate::socket_type::SocketType;

    fn peer(h: &mut Harness, router: &mut Router, id: &'static [u8]) -> (PipeId, Attach) {
        let pipe = h.pipes.insert(Origin::Connect(0), PipeState::Active);
        h.pipes.get_mut(pipe).unwrap().peer =
            Some(PeerInfo::new(SocketType::Dealer).with_routing_id(Bytes::from_static(id)));
        let outcome = router.attach(&mut h.ctx(), pipe);
        if outcome != Attach::Refused {
            h.pipes.get_mut(pipe).unwrap().attached = true;
        }
        (pipe, outcome)
    }

    #[test]
    fn routes_by_the_first_part_and_prefixes_what_it_receives() {
        let mut h = Harness::default();
        let mut r = Router::new(0);
        let (a, _) = peer(&mut h, &mut r, b"A");
        let (b, _) = peer(&mut h, &mut r, b"B");
        r.send(&mut h.ctx(), Message::multipart(["B", "hello"]))
            .unwrap();
        assert_eq!(h.out(b), [Message::from("hello")]);
        assert!(h.out(a).is_empty());
        h.arrive(&mut r, a, Message::from("up"));
        assert_eq!(r.recv(&mut h.ctx()), Ok(Message::multipart(["A", "up"])));
        assert!(matches!(
            r.send(&mut h.ctx(), Message::from("no id")),
            Err(SendError::InvalidMessage(..))
        ));
    }

    #[test]
    fn a_message_for_an_unknown_peer_is_dropped() {
        let mut h = Harness::default();
        let mut r = Router::new(0);
        let (a, _) = peer(&mut h, &mut r, b"A");
        // A ROUTER send never waits, whoever it is for.
        assert!(r.can_send(&h.pipes, &h.options));
        assert_eq!(
            r.send(&mut h.ctx(), Message::multipart(["nobody", "x"])),
            Ok(())
        );
        assert!(h.out(a).is_empty());
        assert!(h.actions.is_empty());
    }

    #[test]
    fn mandatory_refuses_unknown_and_full_peers() {
        let mut h = Harness::with_options(Options::default().router_mandatory(true).send_hwm(1));
        let mut r = Router::new(0);
        let (a, _) = peer(&mut h, &mut r, b"A");
        assert!(matches!(
            r.send(&mut h.ctx(), Message::multipart(["nobody", "x"])),
            Err(SendError::HostUnreachable(_))
        ));
        r.send(&mut h.ctx(), Message::multipart(["A", "1"]))
            .unwrap();
        assert!(matches!(
            r.send(&mut h.ctx(), Message::multipart(["A", "2"])),
            Err(SendError::WouldBlock(_))
        ));
        // Without MANDATORY the same message is dropped.
        h.options = Options::default().send_hwm(1);
        assert_eq!(r.send(&mut h.ctx(), Message::multipart(["A", "2"])), Ok(()));
        assert_eq!(h.out(a), [Message::from("1")]);
    }

    #[test]
    fn a_detached_peer_is_unknown() {
        let mut h = Harness::with_options(Options::default().router_mandatory(true));
        let mut r = Router::new(0);
        let (a, _) = peer(&mut h, &mut r, b"A");
        let rid = h.pipes.get_mut(a).unwrap().routing_id.take();
        r.detach(&mut h.ctx(), a, rid.as_ref());
        assert!(matches!(
            r.send(&mut h.ctx(), Message::multipart(["A", "x"])),
            Err(SendError::HostUnreachable(_))
        ));
    }

    #[test]
    fn an_id_in_use_is_refused_or_handed_over() {
        let mut h = Harness::default();
        let mut r = Router::new(0);
        let (a, _) = peer(&mut h, &mut r, b"A");
        assert_eq!(peer(&mut h, &mut r, b"A").1, Attach::Refused);
        h.options = Options::default().router_handover(true);
        let (c, outcome) = peer(&mut h, &mut r, b"A");
        assert_eq!(outcome, Attach::Replaces(a));
        assert_eq!(h.pipes.get(a).unwrap().routing_id, None);
        r.send(&mut h.ctx(), Message::multipart(["A", "x"]))
            .unwrap();
        assert_eq!(h.out(c), [Message::from("x")]);
    }
}
