//! PAIR (spec 31): exactly one peer. A second one is refused (closed) while the first is
//! there; messages go to the peer while it has room and come from it as they are.

use bytes::Bytes;

use super::{load_balance, Attach, Ctx, Rules};
use crate::message::Message;
use crate::options::Options;
use crate::pipe::{PipeId, Pipes};
use crate::routing::LoadBalancer;
use crate::socket::{RecvError, SendError};

/// PAIR: a balancer that never holds more than one pipe.
#[derive(Debug, Default)]
pub(crate) struct Pair {
    lb: LoadBalancer,
}

impl Rules for Pair {
    fn send(&mut self, ctx: &mut Ctx<'_>, msg: Message) -> Result<(), SendError> {
        load_balance(&mut self.lb, ctx, msg)
    }

    fn recv(&mut self, ctx: &mut Ctx<'_>) -> Result<Message, RecvError> {
        ctx.fair_recv()
    }

    fn can_send(&self, pipes: &Pipes, options: &Options) -> bool {
        self.lb.has_room(pipes, super::send_hwm(options))
    }

    fn send_room(&self, pipes: &Pipes, options: &Options, enough: usize) -> usize {
        self.lb.room(pipes, super::send_hwm(options), enough)
    }

    fn can_recv(&mut self, ctx: &mut Ctx<'_>) -> bool {
        ctx.has_message()
    }

    fn attach(&mut self, _ctx: &mut Ctx<'_>, pipe: PipeId) -> Attach {
        if !self.lb.is_empty() {
            return Attach::Refused;
        }
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
    use crate::pipe::{Origin, PipeState};

    #[test]
    fn a_second_peer_is_refused_until_the_first_leaves() {
        let mut h = Harness::default();
        let mut pair = Pair::default();
        let a = h.add(&mut pair);
        assert!(pair.can_send(&h.pipes, &h.options), "room towards the peer");
        let b = h.pipes.insert(Origin::Connect(0), PipeState::Active);
        assert_eq!(pair.attach(&mut h.ctx(), b), Attach::Refused);
        pair.send(&mut h.ctx(), Message::from("x")).unwrap();
        assert_eq!(h.out(a), [Message::from("x")]);
        pair.detach(&mut h.ctx(), a, None);
        assert!(!pair.can_send(&h.pipes, &h.options));
        assert_eq!(pair.attach(&mut h.ctx(), b), Attach::Attached);
    }
}
