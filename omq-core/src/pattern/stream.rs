//! STREAM: raw TCP, no ZMTP. Every connection is known by a routing id the socket generates
//! (five bytes, a zero then a counter, as ROUTER's generated ids; CONNECT_ROUTING_ID names the
//! next outgoing one). The application receives `[id][bytes]` as bytes arrive, and sends
//! `[id][bytes]` to write them to that connection; `[id][""]` closes it once what was queued
//! before is written. With STREAM_NOTIFY (on by default, as libzmq) a connection that opens or
//! ends is reported as `[id][""]`.
//!
//! A message for an unknown id is refused with EHOSTUNREACH and one for a connection at SNDHWM
//! with EAGAIN, as libzmq's `stream_t::xsend`.

use bytes::Bytes;

use super::{Addressed, Attach, Ctx, Rules};
use crate::message::Message;
use crate::options::Options;
use crate::pipe::{PipeId, Pipes};
use crate::routing::router::{Identified, RouterTable};
use crate::socket::{MessageError, RecvError, SendError};

/// STREAM: the table of generated ids.
#[derive(Debug)]
pub(crate) struct Stream {
    table: RouterTable,
}

impl Stream {
    /// Generated ids count up from `first_id`.
    pub(crate) fn new(first_id: u32) -> Self {
        Stream {
            table: RouterTable::new(first_id),
        }
    }
}

impl Rules for Stream {
    fn send(&mut self, ctx: &mut Ctx<'_>, mut msg: Message) -> Result<(), SendError> {
        if msg.len() != 2 {
            return Err(SendError::InvalidMessage(msg, MessageError::NoRoutingId));
        }
        let id = match ctx.addressed(self.table.lookup(&msg.parts()[0])) {
            Addressed::Ready(id) => id,
            Addressed::Unknown => return Err(SendError::HostUnreachable(msg)),
            Addressed::Full => return Err(SendError::WouldBlock(msg)),
        };
        msg.pop_front();
        // An empty body stays empty: the connection closes when it reaches the wire.
        ctx.enqueue(id, msg);
        Ok(())
    }

    fn recv(&mut self, ctx: &mut Ctx<'_>) -> Result<Message, RecvError> {
        let (rid, mut msg) = ctx.pop_with_id()?;
        msg.push_front(rid.unwrap_or_default());
        Ok(msg)
    }

    /// Which connection a send is for comes with the message: always ready to try.
    fn can_send(&self, _pipes: &Pipes, _options: &Options) -> bool {
        true
    }

    fn can_recv(&mut self, ctx: &mut Ctx<'_>) -> bool {
        ctx.has_message()
    }

    fn attach(&mut self, ctx: &mut Ctx<'_>, pipe: PipeId) -> Attach {
        let Some(p) = ctx.pipes.get_mut(pipe) else {
            return Attach::Refused;
        };
        let assigned = p.assigned_routing_id.take();
        match self.table.identify(pipe, assigned, None, false) {
            Identified::Named(rid) => {
                p.routing_id = Some(rid);
                Attach::Attached
            }
            _ => Attach::Refused,
        }
    }

    fn detach(&mut self, _ctx: &mut Ctx<'_>, pipe: PipeId, routing_id: Option<&Bytes>) {
        if let Some(rid) = routing_id {
            self.table.remove(rid, pipe);
        }
    }

    /// Like a ROUTER, a STREAM addresses a connection only once it exists.
    fn attaches_early(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pattern::testing::Harness;
    use crate::pipe::{Origin, PipeState};

    #[test]
    fn writes_to_the_connection_its_id_names_and_refuses_others() {
        let mut h = Harness::with_options(Options::default().send_hwm(1));
        let mut s = Stream::new(7);
        let a = h
            .pipes
            .insert(Origin::Accept("tcp://x".into()), PipeState::Active);
        assert_eq!(s.attach(&mut h.ctx(), a), Attach::Attached);
        h.pipes.get_mut(a).unwrap().attached = true;
        let id = h.pipes.get(a).unwrap().routing_id.clone().unwrap();
        assert_eq!(id.len(), 5);
        assert_eq!(id[0], 0, "generated ids start with a zero byte");
        s.send(
            &mut h.ctx(),
            Message::multipart([id.clone(), Bytes::from("GET /")]),
        )
        .unwrap();
        assert_eq!(h.out(a), [Message::from("GET /")]);
        assert!(matches!(
            s.send(&mut h.ctx(), Message::multipart([&b"nobody"[..], b"x"])),
            Err(SendError::HostUnreachable(_))
        ));
        assert!(matches!(
            s.send(&mut h.ctx(), Message::from("no id")),
            Err(SendError::InvalidMessage(_, MessageError::NoRoutingId))
        ));
        s.send(
            &mut h.ctx(),
            Message::multipart([id.clone(), Bytes::from("1")]),
        )
        .unwrap();
        assert!(matches!(
            s.send(
                &mut h.ctx(),
                Message::multipart([id.clone(), Bytes::from("2")])
            ),
            Err(SendError::WouldBlock(_))
        ));
        assert!(
            s.can_send(&h.pipes, &h.options),
            "a STREAM send never waits"
        );
        assert!(!s.can_recv(&mut h.ctx()));
        h.arrive(&mut s, a, Message::from("bytes in"));
        assert!(s.can_recv(&mut h.ctx()));
        assert_eq!(
            s.recv(&mut h.ctx()),
            Ok(Message::multipart([id.clone(), Bytes::from("bytes in")]))
        );
        // Once the connection is gone its id names nobody.
        s.detach(&mut h.ctx(), a, Some(&id));
        assert!(matches!(
            s.send(&mut h.ctx(), Message::multipart([id, Bytes::from("late")])),
            Err(SendError::HostUnreachable(_))
        ));
    }
}
