//! DEALER (spec 28): an asynchronous REQ. It load-balances what it sends and fair-queues what
//! it receives, and adds or removes no envelope.

use bytes::Bytes;

use super::{load_balance, Attach, Ctx, Rules};
use crate::message::Message;
use crate::options::Options;
use crate::pipe::{PipeId, Pipes};
use crate::routing::LoadBalancer;
use crate::socket::{RecvError, SendError};

/// DEALER: round robin out, fair queue in.
#[derive(Debug, Default)]
pub(crate) struct Dealer {
    lb: LoadBalancer,
}

impl Rules for Dealer {
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
    use crate::Options;

    #[test]
    fn sends_in_turn_to_peers_with_room_and_receives_as_is() {
        let mut h = Harness::with_options(Options::default().send_hwm(1));
        let mut d = Dealer::default();
        let a = h.add(&mut d);
        let b = h.add(&mut d);
        assert!(d.can_send(&h.pipes, &h.options));
        d.send(&mut h.ctx(), Message::multipart(["", "1"])).unwrap();
        d.send(&mut h.ctx(), Message::from("2")).unwrap();
        assert!(!d.can_send(&h.pipes, &h.options));
        assert!(matches!(
            d.send(&mut h.ctx(), Message::from("3")),
            Err(SendError::WouldBlock(_))
        ));
        assert_eq!(h.out(a), [Message::multipart(["", "1"])]);
        assert_eq!(h.out(b), [Message::from("2")]);
        h.arrive(&mut d, b, Message::multipart(["x", "y"]));
        assert!(d.can_recv(&mut h.ctx()));
        assert_eq!(d.recv(&mut h.ctx()), Ok(Message::multipart(["x", "y"])));
        assert!(!d.can_recv(&mut h.ctx()));
    }

    #[test]
    fn a_detached_peer_is_sent_nothing_more() {
        let mut h = Harness::default();
        let mut d = Dealer::default();
        let a = h.add(&mut d);
        let b = h.add(&mut d);
        d.detach(&mut h.ctx(), a, None);
        for i in 0..4 {
            d.send(&mut h.ctx(), Message::from(format!("{i}"))).unwrap();
        }
        assert!(h.out(a).is_empty(), "the detached peer got messages");
        assert_eq!(h.out(b).len(), 4);
    }
}
