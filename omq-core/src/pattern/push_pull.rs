//! PUSH and PULL (spec 30, pipeline): PUSH load-balances each message to the next peer with
//! room and never receives; PULL fair-queues from its peers and never sends.

use bytes::Bytes;

use super::{load_balance, Attach, Ctx, Rules};
use crate::message::Message;
use crate::options::Options;
use crate::pipe::{PipeId, Pipes};
use crate::routing::LoadBalancer;
use crate::socket::{RecvError, SendError};

/// PUSH: round robin over the peers with room; all full (or none) blocks.
#[derive(Debug, Default)]
pub(crate) struct Push {
    lb: LoadBalancer,
}

impl Rules for Push {
    fn send(&mut self, ctx: &mut Ctx<'_>, msg: Message) -> Result<(), SendError> {
        load_balance(&mut self.lb, ctx, msg)
    }

    fn recv(&mut self, _ctx: &mut Ctx<'_>) -> Result<Message, RecvError> {
        Err(RecvError::NotSupported)
    }

    fn can_send(&self, pipes: &Pipes, options: &Options) -> bool {
        self.lb.has_room(pipes, super::send_hwm(options))
    }

    fn send_room(&self, pipes: &Pipes, options: &Options, enough: usize) -> usize {
        self.lb.room(pipes, super::send_hwm(options), enough)
    }

    fn can_recv(&mut self, _ctx: &mut Ctx<'_>) -> bool {
        false
    }

    /// A PUSH never reads: what a peer sends it is dropped, not queued where nothing would
    /// ever take it (a peer sending and reconnecting in a loop grew memory without bound).
    fn handle_message(&mut self, _: &mut Ctx<'_>, _: PipeId, _: Message) -> Result<(), Message> {
        crate::trace::dropped!("PUSH: a peer sent something");
        Ok(())
    }

    fn attach(&mut self, _ctx: &mut Ctx<'_>, pipe: PipeId) -> Attach {
        self.lb.add(pipe);
        Attach::Attached
    }

    fn detach(&mut self, _ctx: &mut Ctx<'_>, pipe: PipeId, _routing_id: Option<&Bytes>) {
        self.lb.remove(pipe);
    }
}

/// PULL: fair-queued receive; no routing state of its own.
#[derive(Debug, Default)]
pub(crate) struct Pull;

impl Rules for Pull {
    fn send(&mut self, _ctx: &mut Ctx<'_>, msg: Message) -> Result<(), SendError> {
        Err(SendError::NotSupported(msg))
    }

    fn recv(&mut self, ctx: &mut Ctx<'_>) -> Result<Message, RecvError> {
        ctx.fair_recv()
    }

    fn can_send(&self, _pipes: &Pipes, _options: &Options) -> bool {
        false
    }

    fn can_recv(&mut self, ctx: &mut Ctx<'_>) -> bool {
        ctx.has_message()
    }

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
    fn push_round_robins_and_pull_fair_queues() {
        let mut h = Harness::default();
        let mut push = Push::default();
        let a = h.add(&mut push);
        let b = h.add(&mut push);
        for m in ["1", "2", "3"] {
            push.send(&mut h.ctx(), Message::from(m)).unwrap();
        }
        assert_eq!(h.out(a), [Message::from("1"), Message::from("3")]);
        assert_eq!(h.out(b), [Message::from("2")]);
        assert_eq!(push.recv(&mut h.ctx()), Err(RecvError::NotSupported));
        assert!(!push.can_recv(&mut h.ctx()));

        let mut h = Harness::default();
        let mut pull = Pull;
        let a = h.add(&mut pull);
        let b = h.add(&mut pull);
        h.arrive(&mut pull, a, Message::from("a1"));
        h.arrive(&mut pull, a, Message::from("a2"));
        h.arrive(&mut pull, b, Message::from("b1"));
        assert!(pull.can_recv(&mut h.ctx()));
        let got: Vec<Message> = std::iter::from_fn(|| pull.recv(&mut h.ctx()).ok()).collect();
        assert_eq!(got, ["a1", "b1", "a2"].map(Message::from));
        assert_eq!(pull.recv(&mut h.ctx()), Err(RecvError::WouldBlock));
        assert!(!pull.can_send(&h.pipes, &h.options));
        assert!(matches!(
            pull.send(&mut h.ctx(), Message::from("x")),
            Err(SendError::NotSupported(_))
        ));
    }

    #[test]
    fn push_blocks_with_no_peer_and_forgets_a_detached_one() {
        let mut h = Harness::default();
        let mut push = Push::default();
        assert!(!push.can_send(&h.pipes, &h.options));
        assert!(matches!(
            push.send(&mut h.ctx(), Message::from("x")),
            Err(SendError::WouldBlock(_))
        ));
        let a = h.add(&mut push);
        assert!(push.can_send(&h.pipes, &h.options));
        push.detach(&mut h.ctx(), a, None);
        assert!(!push.can_send(&h.pipes, &h.options));
    }
}
