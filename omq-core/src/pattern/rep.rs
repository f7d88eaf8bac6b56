//! REP (spec 28): receives a request, strips its envelope (everything up to the first empty
//! part), hands the body to the application, and sends the reply back to the same peer behind
//! the same envelope. Requests without a delimiter are discarded; a reply to a peer that is
//! gone, or full, is dropped. Receiving twice or replying before receiving is EFSM.

use bytes::Bytes;

use super::{Attach, Ctx, Rules};
use crate::message::Message;
use crate::options::Options;
use crate::pipe::{PipeId, Pipes};
use crate::routing::rep::{split_envelope, wrap_reply, RepState};
use crate::socket::{RecvError, SendError};

/// REP: fair queue in, the request's pipe and envelope out.
#[derive(Debug, Default)]
pub(crate) struct Rep {
    state: RepState,
}

impl Rules for Rep {
    fn send(&mut self, ctx: &mut Ctx<'_>, msg: Message) -> Result<(), SendError> {
        let Some((id, envelope)) = self.state.replying.take() else {
            return Err(SendError::InvalidState(msg));
        };
        let flag = ctx.pipes.get(id).is_some_and(|p| p.peer_flags_delimiter());
        let out = wrap_reply(envelope, msg, flag);
        // A reply to a peer that is gone, or full, is dropped, as libzmq does.
        let hwm = ctx.send_hwm();
        if ctx
            .pipes
            .get(id)
            .is_some_and(|p| p.attached && p.has_room(hwm))
        {
            ctx.enqueue(id, out);
        } else {
            crate::trace::dropped!("REP: the requester is gone or at SNDHWM");
        }
        Ok(())
    }

    fn recv(&mut self, ctx: &mut Ctx<'_>) -> Result<Message, RecvError> {
        if self.state.replying.is_some() {
            return Err(RecvError::InvalidState);
        }
        loop {
            let Some((id, msg)) = ctx.pop() else {
                return Err(RecvError::WouldBlock);
            };
            ctx.maybe_resume(id);
            if let Some((envelope, body)) = split_envelope(msg) {
                self.state.replying = Some((id, envelope));
                return Ok(body);
            }
        }
    }

    fn can_send(&self, _pipes: &Pipes, _options: &Options) -> bool {
        self.state.replying.is_some()
    }

    /// A request without the empty delimiter of its envelope can never be answered: dropped
    /// here, as `recv` would, so that `can_recv` is exact.
    fn handle_message(
        &mut self,
        ctx: &mut Ctx<'_>,
        pipe: PipeId,
        msg: Message,
    ) -> Result<(), Message> {
        if !msg.delimited() && !msg.parts().iter().any(|p| p.is_empty()) {
            crate::trace::dropped!("REP: a request without an envelope delimiter");
            return Ok(());
        }
        ctx.push_inbound(pipe, msg)
    }

    fn can_recv(&mut self, ctx: &mut Ctx<'_>) -> bool {
        self.state.replying.is_none() && ctx.has_message()
    }

    /// REP sends only replies, to the pipe the request came from: it keeps no list of peers.
    fn attach(&mut self, _ctx: &mut Ctx<'_>, _pipe: PipeId) -> Attach {
        Attach::Attached
    }

    fn detach(&mut self, _ctx: &mut Ctx<'_>, _pipe: PipeId, _routing_id: Option<&Bytes>) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pattern::testing::Harness;

    #[test]
    fn replies_behind_the_requests_envelope_to_its_peer() {
        let mut h = Harness::default();
        let mut rep = Rep::default();
        let a = h.add(&mut rep);
        let b = h.add(&mut rep);
        assert!(matches!(
            rep.send(&mut h.ctx(), Message::from("early")),
            Err(SendError::InvalidState(_))
        ));
        h.arrive(&mut rep, a, Message::from("no envelope"));
        h.arrive(&mut rep, b, Message::multipart(["id", "", "q"]));
        assert!(rep.can_recv(&mut h.ctx()));
        // The malformed request is skipped.
        assert_eq!(rep.recv(&mut h.ctx()), Ok(Message::from("q")));
        assert!(rep.can_send(&h.pipes, &h.options));
        assert!(!rep.can_recv(&mut h.ctx()));
        assert_eq!(rep.recv(&mut h.ctx()), Err(RecvError::InvalidState));
        rep.send(&mut h.ctx(), Message::from("r")).unwrap();
        assert_eq!(h.out(b), [Message::multipart(["id", "", "r"])]);
        assert!(h.out(a).is_empty());
        assert!(!rep.can_send(&h.pipes, &h.options));
    }

    #[test]
    fn a_reply_to_a_peer_gone_is_dropped() {
        let mut h = Harness::default();
        let mut rep = Rep::default();
        let a = h.add(&mut rep);
        h.arrive(&mut rep, a, Message::multipart(["", "q"]));
        assert_eq!(rep.recv(&mut h.ctx()), Ok(Message::from("q")));
        h.pipes.get_mut(a).unwrap().attached = false;
        assert_eq!(rep.send(&mut h.ctx(), Message::from("r")), Ok(()));
        assert!(h.out(a).is_empty());
        assert!(h.actions.is_empty());
    }
}
