//! The rule every draft type shares: single-part messages only. CLIENT is a DEALER (spec 41),
//! SCATTER a PUSH and GATHER a PULL (spec 49), CHANNEL a PAIR (spec 52), each wrapped in
//! [`SinglePart`]; SERVER and PEER (`server`) and RADIO (`radio_dish`) are wrapped too.
//!
//! Sending a message of more than one part is refused (libzmq's EINVAL); a multipart message
//! a peer sends is dropped, as libzmq's `client_t`, `gather_t` and `channel_t` drop it, so the
//! application only ever sees single parts. Everything else is the wrapped pattern's rule.

use bytes::Bytes;

use super::{Attach, Ctx, Rules};
use crate::message::Message;
use crate::options::Options;
use crate::pipe::{PipeId, Pipes};
use crate::socket::{MessageError, RecvError, SendError};

/// A pattern that only carries single-part messages.
#[derive(Debug, Default)]
pub(crate) struct SinglePart<P>(pub(crate) P);

impl<P: Rules> Rules for SinglePart<P> {
    fn send(&mut self, ctx: &mut Ctx<'_>, msg: Message) -> Result<(), SendError> {
        if msg.len() != 1 {
            return Err(SendError::InvalidMessage(msg, MessageError::Multipart));
        }
        self.0.send(ctx, msg)
    }

    fn recv(&mut self, ctx: &mut Ctx<'_>) -> Result<Message, RecvError> {
        self.0.recv(ctx)
    }

    fn can_send(&self, pipes: &Pipes, options: &Options) -> bool {
        self.0.can_send(pipes, options)
    }

    fn send_room(&self, pipes: &Pipes, options: &Options, enough: usize) -> usize {
        self.0.send_room(pipes, options, enough)
    }

    fn can_recv(&mut self, ctx: &mut Ctx<'_>) -> bool {
        self.0.can_recv(ctx)
    }

    fn handle_message(
        &mut self,
        ctx: &mut Ctx<'_>,
        pipe: PipeId,
        msg: Message,
    ) -> Result<(), Message> {
        if msg.len() != 1 {
            crate::trace::dropped!("a multipart message for a single-part socket type");
            return Ok(());
        }
        self.0.handle_message(ctx, pipe, msg)
    }

    fn attach(&mut self, ctx: &mut Ctx<'_>, pipe: PipeId) -> Attach {
        self.0.attach(ctx, pipe)
    }

    fn detach(&mut self, ctx: &mut Ctx<'_>, pipe: PipeId, routing_id: Option<&Bytes>) {
        self.0.detach(ctx, pipe, routing_id)
    }

    fn attaches_early(&self) -> bool {
        self.0.attaches_early()
    }

    fn handle_ready(&mut self, ctx: &mut Ctx<'_>, pipe: PipeId) {
        self.0.handle_ready(ctx, pipe)
    }

    fn handle_subscription(
        &mut self,
        ctx: &mut Ctx<'_>,
        pipe: PipeId,
        topic: &[u8],
        on: bool,
    ) -> bool {
        self.0.handle_subscription(ctx, pipe, topic, on)
    }

    fn subscription_room(&mut self, ctx: &mut Ctx<'_>, pipe: PipeId) -> bool {
        self.0.subscription_room(ctx, pipe)
    }

    fn subscribe(&mut self, ctx: &mut Ctx<'_>, topic: &[u8], on: bool) {
        self.0.subscribe(ctx, topic, on)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pattern::dealer::Dealer;
    use crate::pattern::testing::Harness;

    #[test]
    fn multipart_is_refused_going_out_and_dropped_coming_in() {
        let mut h = Harness::with_options(Options::default().send_hwm(1));
        let mut client = SinglePart(Dealer::default());
        let a = h.add(&mut client);
        assert!(
            client.can_send(&h.pipes, &h.options),
            "the wrapped DEALER has room"
        );
        assert!(matches!(
            client.send(&mut h.ctx(), Message::multipart(["a", "b"])),
            Err(SendError::InvalidMessage(m, MessageError::Multipart)) if m.len() == 2
        ));
        client.send(&mut h.ctx(), Message::from("one")).unwrap();
        assert!(
            !client.can_send(&h.pipes, &h.options),
            "the wrapped DEALER is full"
        );
        assert_eq!(h.out(a), [Message::from("one")]);
        h.arrive(&mut client, a, Message::multipart(["x", "y"]));
        assert!(!client.can_recv(&mut h.ctx()));
        h.arrive(&mut client, a, Message::from("single"));
        assert_eq!(client.recv(&mut h.ctx()), Ok(Message::from("single")));
    }
}
