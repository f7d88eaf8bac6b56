//! Messaging patterns: what each socket type does with the messages it sends and receives.
//!
//! Each module owns one pattern's routing state and rules (ZeroMQ's specs 28–31, 41, 49, 51,
//! 52): `push_pull` (PUSH, PULL), `req`, `rep`, `dealer`, `router`, `pair`, `pub_sub` (PUB,
//! XPUB, SUB, XSUB), `radio_dish` (RADIO, DISH), `server` (SERVER, PEER), `stream` (STREAM:
//! raw TCP) and `single_part` (CLIENT, SCATTER, GATHER,
//! CHANNEL: DEALER, PUSH, PULL and PAIR restricted to single-part messages). Every socket type is one struct implementing [`Rules`]; [`Pattern`] holds one of
//! them and is the only place that asks "which type?": once per call, in [`dispatch!`], with
//! every arm a direct (inlined, monomorphic) call. No `dyn`, no allocation on the message path.
//!
//! The socket keeps what every type shares (pipes, endpoints, options, monitor events, actions,
//! HWM bookkeeping, the fair-queued incoming side) and lends it to the pattern as a [`Ctx`].
//!
//! Adding a socket type: a struct implementing [`Rules`] in its own file, a variant of
//! [`Pattern`], its arm in [`dispatch!`] and its line in [`Pattern::new`].

use std::collections::VecDeque;

use bytes::Bytes;

use crate::message::Message;
use crate::options::Options;
use crate::pipe::{Command, PipeId, PipeState, Pipes};
use crate::rng::SplitMix64;
use crate::routing::{FairQueue, LoadBalancer};
use crate::socket::{Action, RecvError, SendError};
use crate::socket_type::SocketType;

mod dealer;
mod pair;
mod pub_sub;
mod push_pull;
mod radio_dish;
mod rep;
mod req;
mod router;
mod server;
mod single_part;
mod stream;

pub(crate) use radio_dish::GroupError;
pub(crate) use server::number as peer_number;

/// What a socket shares with its pattern for one call: its pipes, the fair-queued incoming
/// side, its options and the actions for the driver. Built from disjoint fields of the socket,
/// so a pattern holds its own state and these at once without borrow workarounds.
pub(crate) struct Ctx<'a> {
    pub(crate) pipes: &'a mut Pipes,
    pub(crate) fq: &'a mut FairQueue,
    pub(crate) options: &'a Options,
    pub(crate) actions: &'a mut VecDeque<Action>,
}

/// SNDHWM as the pipes apply it (CONFLATE keeps one message, whatever the HWM).
pub(crate) fn send_hwm(options: &Options) -> usize {
    if options.conflate {
        0
    } else {
        options.sndhwm
    }
}

impl Ctx<'_> {
    /// See [`send_hwm`].
    pub(crate) fn send_hwm(&self) -> usize {
        send_hwm(self.options)
    }

    /// Queues a message for a pipe (with CONFLATE, in place of what waits) and tells the
    /// driver if it has to.
    pub(crate) fn enqueue(&mut self, id: PipeId, msg: Message) {
        let conflate = self.options.conflate;
        if let Some(p) = self.pipes.get_mut(id) {
            if conflate {
                p.out.clear();
            }
            p.out.push_back(msg);
        }
        self.request_flush(id);
    }

    /// Queues a command (subscription...) for a pipe.
    ///
    /// A command asks for a flush even while one is pending: a driver may hold a pipe's
    /// messages back while the peer is busy reading (the inproc driver parks them in the
    /// pipe), but a command must reach a peer that may never read.
    pub(crate) fn enqueue_command(&mut self, id: PipeId, cmd: Command) {
        if let Some(p) = self.pipes.get_mut(id) {
            p.commands.push_back(cmd);
            if p.state == PipeState::Active {
                p.flush_requested = true;
                self.actions.push_back(Action::Flush { pipe: id });
            }
        }
    }

    /// Queues a command for each of `to`.
    pub(crate) fn broadcast_command(&mut self, to: &[PipeId], cmd: &Command) {
        for &id in to {
            self.enqueue_command(id, cmd.clone());
        }
    }

    /// Emits [`Action::Flush`] for an active pipe with something to send, unless the driver
    /// already has one it has not acted on (edge-triggered).
    pub(crate) fn request_flush(&mut self, id: PipeId) {
        if let Some(p) = self.pipes.get_mut(id) {
            if p.state == PipeState::Active
                && !p.flush_requested
                && !(p.out.is_empty() && p.commands.is_empty())
            {
                p.flush_requested = true;
                self.actions.push_back(Action::Flush { pipe: id });
            }
        }
    }

    /// Resumes reading a paused pipe once its queue has drained to the low-water mark (half
    /// the HWM, as libzmq's pipes do), so a reader that keeps up is refilled in batches rather
    /// than one message per wake-up. The HWM itself stays exact. A draining pipe goes once
    /// it is empty.
    pub(crate) fn maybe_resume(&mut self, id: PipeId) {
        let hwm = self.options.rcvhwm;
        let lwm = hwm / 2;
        if let Some(p) = self.pipes.get_mut(id) {
            if p.read_paused && (hwm == 0 || p.inbound.len() <= lwm) {
                p.read_paused = false;
                self.actions.push_back(Action::ResumeRead { pipe: id });
            }
            if p.state == PipeState::Draining && p.inbound.is_empty() {
                self.pipes.remove(id);
                self.fq.remove(id);
            }
        }
    }

    /// [`Ctx::maybe_resume`] for every pipe (after RCVHWM rose, or a queue above the pipes
    /// drained).
    pub(crate) fn resume_all(&mut self) {
        let ids: Vec<PipeId> = self.pipes.iter().map(|p| p.id).collect();
        for id in ids {
            self.maybe_resume(id);
        }
    }

    /// The next message in turn from the pipes' incoming queues, and its pipe. The caller
    /// calls [`Ctx::maybe_resume`] once it is done with the pipe.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<(PipeId, Message)> {
        self.fq.pop(self.pipes)
    }

    /// Fair-queued receive: the next message in turn, its pipe resumed if it may be.
    #[inline]
    pub(crate) fn fair_recv(&mut self) -> Result<Message, RecvError> {
        let (id, msg) = self.pop().ok_or(RecvError::WouldBlock)?;
        self.maybe_resume(id);
        Ok(msg)
    }

    /// The next message in turn and the routing id of the pipe it came from, read before the
    /// pipe is resumed (a drained pipe goes then): ROUTER and STREAM put it in front, SERVER
    /// and PEER attach it as a number.
    pub(crate) fn pop_with_id(&mut self) -> Result<(Option<Bytes>, Message), RecvError> {
        let (id, msg) = self.pop().ok_or(RecvError::WouldBlock)?;
        let rid = self.pipes.get(id).and_then(|p| p.routing_id.clone());
        self.maybe_resume(id);
        Ok((rid, msg))
    }

    /// What an addressed send (ROUTER, SERVER, PEER, STREAM) finds at `target`, the pipe its
    /// routing id names.
    pub(crate) fn addressed(&self, target: Option<PipeId>) -> Addressed {
        match target.and_then(|id| Some((id, self.pipes.get(id)?))) {
            Some((id, p)) if p.attached => {
                if p.has_room(self.send_hwm()) {
                    Addressed::Ready(id)
                } else {
                    Addressed::Full
                }
            }
            _ => Addressed::Unknown,
        }
    }

    /// Whether any pipe has a message waiting.
    pub(crate) fn has_message(&self) -> bool {
        self.fq.has_message(self.pipes)
    }

    /// Puts a received message in its pipe's incoming queue. Gives it back when the queue is
    /// at RCVHWM (the pipe is then paused); drops it when the pipe is gone or not active.
    #[inline]
    pub(crate) fn push_inbound(&mut self, pipe: PipeId, msg: Message) -> Result<(), Message> {
        let hwm = self.options.rcvhwm;
        let conflate = self.options.conflate;
        let Some(p) = self.pipes.get_mut(pipe) else {
            return Ok(());
        };
        if p.state != PipeState::Active {
            return Ok(());
        }
        if conflate {
            p.inbound.clear();
        } else if hwm != 0 && p.inbound.len() >= hwm {
            #[cfg(feature = "tracing")]
            if !p.read_paused {
                tracing::debug!(target: "omq::hwm", pipe = ?pipe, "RCVHWM reached: reading paused");
            }
            p.read_paused = true;
            return Err(msg);
        }
        p.inbound.push_back(msg);
        self.fq.notify(self.pipes, pipe);
        Ok(())
    }
}

/// What an addressed send found (see [`Ctx::addressed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Addressed {
    /// No attached pipe has that routing id.
    Unknown,
    /// The pipe is at SNDHWM.
    Full,
    /// The pipe takes the message.
    Ready(PipeId),
}

/// Load-balanced send: the next pipe in turn with room takes the message.
pub(crate) fn load_balance(
    lb: &mut LoadBalancer,
    ctx: &mut Ctx<'_>,
    msg: Message,
) -> Result<(), SendError> {
    let Some(id) = lb.pick(ctx.pipes, ctx.send_hwm()) else {
        return Err(SendError::WouldBlock(msg));
    };
    ctx.enqueue(id, msg);
    Ok(())
}

/// What became of a pipe offered to a pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Attach {
    /// The pattern routes to and from it now.
    Attached,
    /// The pattern will not have it (a PAIR's second peer, a ROUTER id in use): the socket
    /// closes it.
    Refused,
    /// Attached, and it replaces this older pipe (ROUTER_HANDOVER), which the socket closes.
    Replaces(PipeId),
}

/// One socket type's rules. The socket calls these; each type implements what applies to it.
pub(crate) trait Rules {
    /// Sends a message (never empty: the socket checks).
    fn send(&mut self, ctx: &mut Ctx<'_>, msg: Message) -> Result<(), SendError>;

    /// Receives a message.
    fn recv(&mut self, ctx: &mut Ctx<'_>) -> Result<Message, RecvError>;

    /// Whether [`Rules::send`] would accept a message now.
    fn can_send(&self, pipes: &Pipes, options: &Options) -> bool;

    /// At least how many messages [`Rules::send`] would take now, one after another, before
    /// it would block (a lower bound: sends fail for other reasons as before), counted no
    /// further than needed to reach `enough`. By default one when [`Rules::can_send`] says so;
    /// the load-balanced types count their pipes' room.
    fn send_room(&self, pipes: &Pipes, options: &Options, enough: usize) -> usize {
        let _ = enough;
        usize::from(self.can_send(pipes, options))
    }

    /// Whether [`Rules::recv`] would return a message (or a state error) now. May discard
    /// what `recv` would discard, so the answer is exact.
    fn can_recv(&mut self, ctx: &mut Ctx<'_>) -> bool;

    /// A whole message arrived on `pipe`; `Err` gives it back (incoming queue full).
    fn handle_message(
        &mut self,
        ctx: &mut Ctx<'_>,
        pipe: PipeId,
        msg: Message,
    ) -> Result<(), Message> {
        ctx.push_inbound(pipe, msg)
    }

    /// Takes a pipe into routing (before or after its handshake, see [`Rules::attaches_early`]).
    fn attach(&mut self, ctx: &mut Ctx<'_>, pipe: PipeId) -> Attach;

    /// Takes a pipe out of routing; `routing_id` is the id it was known by, if any. The pipe
    /// may already be gone from `ctx.pipes`.
    fn detach(&mut self, ctx: &mut Ctx<'_>, pipe: PipeId, routing_id: Option<&Bytes>);

    /// Whether a connecting pipe is attached before its handshake (unless IMMEDIATE), so
    /// messages queue for a peer not there yet, and kept across reconnections.
    fn attaches_early(&self) -> bool {
        true
    }

    /// `pipe`'s handshake completed (every connection and reconnection), after it attached.
    fn handle_ready(&mut self, _ctx: &mut Ctx<'_>, _pipe: PipeId) {}

    /// The peer on `pipe` subscribed (`on`) to `topic` or cancelled it. True when that
    /// changed what the peer holds (a topic or group it had not, or had), so the socket can
    /// keep MAX_SUBSCRIPTIONS per peer.
    fn handle_subscription(
        &mut self,
        _ctx: &mut Ctx<'_>,
        _pipe: PipeId,
        _topic: &[u8],
        _on: bool,
    ) -> bool {
        false
    }

    /// Whether a (un)subscription from `pipe` can be taken now (see
    /// [`crate::Socket::subscription_room`]).
    fn subscription_room(&mut self, _ctx: &mut Ctx<'_>, _pipe: PipeId) -> bool {
        true
    }

    /// The application subscribed (`on`) to `topic` or unsubscribed (the socket has checked
    /// that the option applies).
    fn subscribe(&mut self, _ctx: &mut Ctx<'_>, _topic: &[u8], _on: bool) {}

    /// How many distinct topics the socket holds (libzmq's TOPICS_COUNT): a subscriber's
    /// own, a publisher's from its peers; `None` for a type without topics.
    fn topics_count(&self) -> Option<usize> {
        None
    }
}

/// One socket's pattern: a variant per socket type.
#[derive(Debug)]
pub(crate) enum Pattern {
    Push(push_pull::Push),
    Pull(push_pull::Pull),
    Req(req::Req),
    Rep(rep::Rep),
    Dealer(dealer::Dealer),
    Router(router::Router),
    Pair(pair::Pair),
    Pub(pub_sub::Pub),
    XPub(pub_sub::XPub),
    Sub(pub_sub::Sub),
    XSub(pub_sub::XSub),
    Client(single_part::SinglePart<dealer::Dealer>),
    Server(single_part::SinglePart<server::Server>),
    Scatter(single_part::SinglePart<push_pull::Push>),
    Gather(single_part::SinglePart<push_pull::Pull>),
    Channel(single_part::SinglePart<pair::Pair>),
    Peer(single_part::SinglePart<server::Server>),
    Radio(single_part::SinglePart<radio_dish::Radio>),
    Dish(radio_dish::Dish),
    Stream(stream::Stream),
}

/// Calls `$call` on the pattern's rules, whatever its type: the one place that asks.
macro_rules! dispatch {
    ($pattern:expr, $p:ident => $call:expr) => {
        match $pattern {
            Pattern::Push($p) => $call,
            Pattern::Pull($p) => $call,
            Pattern::Req($p) => $call,
            Pattern::Rep($p) => $call,
            Pattern::Dealer($p) => $call,
            Pattern::Router($p) => $call,
            Pattern::Pair($p) => $call,
            Pattern::Pub($p) => $call,
            Pattern::XPub($p) => $call,
            Pattern::Sub($p) => $call,
            Pattern::XSub($p) => $call,
            Pattern::Client($p) => $call,
            Pattern::Server($p) => $call,
            Pattern::Scatter($p) => $call,
            Pattern::Gather($p) => $call,
            Pattern::Channel($p) => $call,
            Pattern::Peer($p) => $call,
            Pattern::Radio($p) => $call,
            Pattern::Dish($p) => $call,
            Pattern::Stream($p) => $call,
        }
    };
}

impl Pattern {
    /// The pattern of a socket of type `t`; `None` for a type not implemented. Draws from
    /// `rng` what the type needs (ROUTER's first generated id, REQ's first request id).
    pub(crate) fn new(t: SocketType, rng: &mut SplitMix64) -> Option<Pattern> {
        Some(match t {
            SocketType::Push => Pattern::Push(push_pull::Push::default()),
            SocketType::Pull => Pattern::Pull(push_pull::Pull),
            SocketType::Req => Pattern::Req(req::Req::new(rng.next_u64() as u32)),
            SocketType::Rep => Pattern::Rep(rep::Rep::default()),
            SocketType::Dealer => Pattern::Dealer(dealer::Dealer::default()),
            SocketType::Router => Pattern::Router(router::Router::new(rng.next_u64() as u32)),
            SocketType::Pair => Pattern::Pair(pair::Pair::default()),
            SocketType::Pub => Pattern::Pub(pub_sub::Pub::default()),
            SocketType::XPub => Pattern::XPub(pub_sub::XPub::default()),
            SocketType::Sub => Pattern::Sub(pub_sub::Sub::default()),
            SocketType::XSub => Pattern::XSub(pub_sub::XSub::default()),
            SocketType::Client => Pattern::Client(single_part::SinglePart::default()),
            SocketType::Server => Pattern::Server(single_part::SinglePart(server::Server::new(
                rng.next_u64() as u32,
            ))),
            SocketType::Scatter => Pattern::Scatter(single_part::SinglePart::default()),
            SocketType::Gather => Pattern::Gather(single_part::SinglePart(push_pull::Pull)),
            SocketType::Channel => Pattern::Channel(single_part::SinglePart::default()),
            SocketType::Peer => Pattern::Peer(single_part::SinglePart(server::Server::new(
                rng.next_u64() as u32,
            ))),
            SocketType::Radio => Pattern::Radio(single_part::SinglePart::default()),
            SocketType::Dish => Pattern::Dish(radio_dish::Dish::default()),
            SocketType::Stream => Pattern::Stream(stream::Stream::new(rng.next_u64() as u32)),
        })
    }

    #[inline]
    pub(crate) fn send(&mut self, ctx: &mut Ctx<'_>, msg: Message) -> Result<(), SendError> {
        dispatch!(self, p => p.send(ctx, msg))
    }

    #[inline]
    pub(crate) fn recv(&mut self, ctx: &mut Ctx<'_>) -> Result<Message, RecvError> {
        dispatch!(self, p => p.recv(ctx))
    }

    pub(crate) fn can_send(&self, pipes: &Pipes, options: &Options) -> bool {
        dispatch!(self, p => p.can_send(pipes, options))
    }

    pub(crate) fn send_room(&self, pipes: &Pipes, options: &Options, enough: usize) -> usize {
        dispatch!(self, p => p.send_room(pipes, options, enough))
    }

    pub(crate) fn can_recv(&mut self, ctx: &mut Ctx<'_>) -> bool {
        dispatch!(self, p => p.can_recv(ctx))
    }

    #[inline]
    pub(crate) fn handle_message(
        &mut self,
        ctx: &mut Ctx<'_>,
        pipe: PipeId,
        msg: Message,
    ) -> Result<(), Message> {
        dispatch!(self, p => p.handle_message(ctx, pipe, msg))
    }

    pub(crate) fn attach(&mut self, ctx: &mut Ctx<'_>, pipe: PipeId) -> Attach {
        dispatch!(self, p => p.attach(ctx, pipe))
    }

    pub(crate) fn detach(&mut self, ctx: &mut Ctx<'_>, pipe: PipeId, routing_id: Option<&Bytes>) {
        dispatch!(self, p => p.detach(ctx, pipe, routing_id))
    }

    pub(crate) fn attaches_early(&self) -> bool {
        dispatch!(self, p => p.attaches_early())
    }

    pub(crate) fn handle_ready(&mut self, ctx: &mut Ctx<'_>, pipe: PipeId) {
        dispatch!(self, p => p.handle_ready(ctx, pipe))
    }

    pub(crate) fn handle_subscription(
        &mut self,
        ctx: &mut Ctx<'_>,
        pipe: PipeId,
        topic: &[u8],
        on: bool,
    ) -> bool {
        dispatch!(self, p => p.handle_subscription(ctx, pipe, topic, on))
    }

    pub(crate) fn subscription_room(&mut self, ctx: &mut Ctx<'_>, pipe: PipeId) -> bool {
        dispatch!(self, p => p.subscription_room(ctx, pipe))
    }

    pub(crate) fn subscribe(&mut self, ctx: &mut Ctx<'_>, topic: &[u8], on: bool) {
        dispatch!(self, p => p.subscribe(ctx, topic, on))
    }

    pub(crate) fn topics_count(&self) -> Option<usize> {
        dispatch!(self, p => p.topics_count())
    }

    /// DISH: joins or leaves a group; `None` for any other type.
    pub(crate) fn join(
        &mut self,
        ctx: &mut Ctx<'_>,
        group: &[u8],
        on: bool,
    ) -> Option<Result<(), GroupError>> {
        match self {
            Pattern::Dish(d) => Some(d.join(ctx, group, on)),
            _ => None,
        }
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! A socket's shared pieces without a socket, for the patterns' unit tests.

    use super::*;
    use crate::pipe::Origin;

    /// Pipes, fair queue, options and actions, lent out as a [`Ctx`].
    #[derive(Default)]
    pub(crate) struct Harness {
        pub(crate) pipes: Pipes,
        pub(crate) fq: FairQueue,
        pub(crate) options: Options,
        pub(crate) actions: VecDeque<Action>,
    }

    impl Harness {
        pub(crate) fn with_options(options: Options) -> Self {
            Harness {
                options,
                ..Harness::default()
            }
        }

        pub(crate) fn ctx(&mut self) -> Ctx<'_> {
            Ctx {
                pipes: &mut self.pipes,
                fq: &mut self.fq,
                options: &self.options,
                actions: &mut self.actions,
            }
        }

        /// A new active pipe (as after a handshake), attached to `pattern`.
        pub(crate) fn add(&mut self, pattern: &mut impl Rules) -> PipeId {
            let id = self.pipes.insert(Origin::Connect(0), PipeState::Active);
            assert_eq!(pattern.attach(&mut self.ctx(), id), Attach::Attached);
            self.pipes.get_mut(id).unwrap().attached = true;
            id
        }

        /// A message from `pipe`'s peer.
        pub(crate) fn arrive(&mut self, pattern: &mut impl Rules, pipe: PipeId, msg: Message) {
            pattern
                .handle_message(&mut self.ctx(), pipe, msg)
                .expect("room");
        }

        /// What waits to go out on `pipe`.
        pub(crate) fn out(&mut self, pipe: PipeId) -> Vec<Message> {
            self.pipes.get_mut(pipe).unwrap().out.drain(..).collect()
        }
    }
}
