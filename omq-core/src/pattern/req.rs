//! REQ (spec 28): a strict request/reply cycle. A request goes to the next peer in turn behind
//! an empty delimiter (and, with REQ_CORRELATE, a request id); only the matching reply from that
//! peer is delivered and anything else is discarded. Without REQ_RELAXED, sending twice or
//! receiving before sending is a state error (EFSM).

use bytes::Bytes;

use super::{Attach, Ctx, Rules};
use crate::message::Message;
use crate::options::Options;
use crate::pipe::{PipeId, Pipes};
use crate::routing::req::ReqState;
use crate::routing::LoadBalancer;
use crate::socket::{RecvError, SendError};

/// REQ: round robin for requests, the envelope state for replies.
#[derive(Debug)]
pub(crate) struct Req {
    lb: LoadBalancer,
    state: ReqState,
}

impl Req {
    /// Request ids (with REQ_CORRELATE) start at `first_id`.
    pub(crate) fn new(first_id: u32) -> Self {
        Req {
            lb: LoadBalancer::default(),
            state: ReqState::new(first_id),
        }
    }
}

/// Drops what `pipe` has queued (stale replies), and lets the socket resume or retire it.
fn forget_queued(ctx: &mut Ctx<'_>, pipe: PipeId) {
    if let Some(p) = ctx.pipes.get_mut(pipe) {
        p.inbound.clear();
    }
    ctx.maybe_resume(pipe);
}

impl Rules for Req {
    fn send(&mut self, ctx: &mut Ctx<'_>, mut msg: Message) -> Result<(), SendError> {
        if self.state.waiting.is_some() && !ctx.options.req_relaxed {
            return Err(SendError::InvalidState(msg));
        }
        let Some(id) = self.lb.pick(ctx.pipes, ctx.send_hwm()) else {
            return Err(SendError::WouldBlock(msg));
        };
        // REQ_RELAXED: what the previous request's peer queued can no longer be the reply.
        if let Some((old, _)) = self.state.waiting {
            forget_queued(ctx, old);
        }
        let flag = ctx.pipes.get(id).is_some_and(|p| p.peer_flags_delimiter());
        let req_id = self.state.wrap(&mut msg, ctx.options.req_correlate, flag);
        self.state.waiting = Some((id, req_id));
        ctx.enqueue(id, msg);
        Ok(())
    }

    fn recv(&mut self, ctx: &mut Ctx<'_>) -> Result<Message, RecvError> {
        if self.state.waiting.is_none() {
            return Err(RecvError::InvalidState);
        }
        let correlate = ctx.options.req_correlate;
        loop {
            let Some((id, msg)) = ctx.pop() else {
                return Err(RecvError::WouldBlock);
            };
            let reply = self.state.accept(id, msg, correlate);
            if reply.is_some() {
                self.state.waiting = None;
                // Whatever that peer queued behind its reply answers nothing.
                forget_queued(ctx, id);
            }
            ctx.maybe_resume(id);
            if let Some(reply) = reply {
                return Ok(reply);
            }
        }
    }

    /// Only the pipe of the request in flight can bring its reply: anything else (a message
    /// while no request waits, or from another peer) is dropped at once, as `recv` would drop
    /// it, instead of waiting in a queue (a chatty peer grew memory between requests).
    fn handle_message(
        &mut self,
        ctx: &mut Ctx<'_>,
        pipe: PipeId,
        msg: Message,
    ) -> Result<(), Message> {
        match self.state.waiting {
            Some((waiting, _)) if waiting == pipe => ctx.push_inbound(pipe, msg),
            _ => {
                crate::trace::dropped!("REQ: not the reply to the request in flight");
                Ok(())
            }
        }
    }

    fn can_send(&self, pipes: &Pipes, options: &Options) -> bool {
        (self.state.waiting.is_none() || options.req_relaxed)
            && self.lb.has_room(pipes, super::send_hwm(options))
    }

    fn can_recv(&mut self, ctx: &mut Ctx<'_>) -> bool {
        let Some((pipe, _)) = self.state.waiting else {
            return false;
        };
        // Discard what cannot be the reply, so the answer is exact. Messages from other pipes
        // are never the reply.
        let correlate = ctx.options.req_correlate;
        loop {
            let Some(front) = ctx.pipes.get(pipe).and_then(|p| p.inbound.front()) else {
                return false;
            };
            if self.state.is_reply(pipe, front, correlate) {
                return true;
            }
            if let Some(p) = ctx.pipes.get_mut(pipe) {
                p.inbound.pop_front();
            }
            ctx.maybe_resume(pipe);
        }
    }

    fn attach(&mut self, _ctx: &mut Ctx<'_>, pipe: PipeId) -> Attach {
        self.lb.add(pipe);
        Attach::Attached
    }

    fn detach(&mut self, _ctx: &mut Ctx<'_>, pipe: PipeId, _routing_id: Option<&Bytes>) {
        self.lb.remove(pipe);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pattern::testing::Harness;
    use crate::routing::req::request_id_bytes;

    #[test]
    fn one_request_then_only_its_reply() {
        let mut h = Harness::default();
        let mut req = Req::new(0);
        let a = h.add(&mut req);
        let b = h.add(&mut req);
        assert_eq!(req.recv(&mut h.ctx()), Err(RecvError::InvalidState));
        req.send(&mut h.ctx(), Message::from("q")).unwrap();
        assert!(!req.can_send(&h.pipes, &h.options));
        assert!(matches!(
            req.send(&mut h.ctx(), Message::from("again")),
            Err(SendError::InvalidState(_))
        ));
        assert_eq!(h.out(a), [Message::multipart(["", "q"])]);
        // A stray message from the other peer and a malformed one from the right peer are
        // discarded; the reply is delivered without its delimiter.
        h.arrive(&mut req, b, Message::multipart(["", "stray"]));
        assert!(
            h.pipes.get(b).unwrap().inbound.is_empty(),
            "a message from a peer no request waits on is dropped, not queued"
        );
        h.arrive(&mut req, a, Message::multipart(["no delimiter"]));
        assert_eq!(req.recv(&mut h.ctx()), Err(RecvError::WouldBlock));
        h.arrive(&mut req, a, Message::multipart(["", "r"]));
        assert_eq!(req.recv(&mut h.ctx()), Ok(Message::from("r")));
        assert!(req.can_send(&h.pipes, &h.options));
        // The next request goes to the next peer.
        req.send(&mut h.ctx(), Message::from("q2")).unwrap();
        assert_eq!(h.out(b), [Message::multipart(["", "q2"])]);
    }

    #[test]
    fn can_recv_discards_what_is_not_the_reply() {
        let mut h = Harness::with_options(Options::default().req_correlate(true));
        let mut req = Req::new(41);
        let a = h.add(&mut req);
        assert!(!req.can_recv(&mut h.ctx()));
        req.send(&mut h.ctx(), Message::from("q")).unwrap();
        let mut sent = Message::multipart(["", "q"]);
        sent.push_front(request_id_bytes(41));
        assert_eq!(h.out(a), [sent]);
        let mut old = Message::multipart(["", "late"]);
        old.push_front(request_id_bytes(40));
        h.arrive(&mut req, a, old);
        assert!(!req.can_recv(&mut h.ctx()));
        assert!(h.pipes.get(a).unwrap().inbound.is_empty());
        let mut reply = Message::multipart(["", "r"]);
        reply.push_front(request_id_bytes(41));
        h.arrive(&mut req, a, reply);
        assert!(req.can_recv(&mut h.ctx()));
        assert_eq!(req.recv(&mut h.ctx()), Ok(Message::from("r")));
    }

    #[test]
    fn relaxed_sends_again_and_only_the_last_request_is_answered() {
        let mut h = Harness::with_options(Options::default().req_relaxed(true));
        let mut req = Req::new(0);
        let a = h.add(&mut req);
        let b = h.add(&mut req);
        req.send(&mut h.ctx(), Message::from("1")).unwrap();
        assert!(req.can_send(&h.pipes, &h.options));
        req.send(&mut h.ctx(), Message::from("2")).unwrap();
        h.arrive(&mut req, a, Message::multipart(["", "to 1"]));
        h.arrive(&mut req, b, Message::multipart(["", "to 2"]));
        assert_eq!(req.recv(&mut h.ctx()), Ok(Message::from("to 2")));
    }

    #[test]
    fn a_detached_peer_is_sent_no_request() {
        let mut h = Harness::default();
        let mut req = Req::new(0);
        let a = h.add(&mut req);
        let b = h.add(&mut req);
        req.detach(&mut h.ctx(), a, None);
        for i in 0..3 {
            req.send(&mut h.ctx(), Message::from(format!("{i}")))
                .unwrap();
            h.arrive(&mut req, b, Message::multipart(["", "r"]));
            assert_eq!(req.recv(&mut h.ctx()), Ok(Message::from("r")));
        }
        assert!(h.out(a).is_empty(), "the detached peer got a request");
        assert_eq!(h.out(b).len(), 3);
    }
}
