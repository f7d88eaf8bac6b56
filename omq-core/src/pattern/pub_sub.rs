//! Publish/subscribe (spec 29): PUB, XPUB, SUB, XSUB.
//!
//! - PUB sends each message to every peer subscribed to a prefix of its first part (with
//!   INVERT_MATCHING, to every peer that is not); a peer at SNDHWM misses it, or with
//!   XPUB_NODROP the send fails with EAGAIN and nobody gets it. It never receives: data from
//!   subscribers is dropped.
//! - XPUB is a PUB that also hands its peers' (un)subscriptions to the application as
//!   `\x01topic` / `\x00topic` (when a topic gets its first subscriber or loses its last, or
//!   always with XPUB_VERBOSE / XPUB_VERBOSER; with XPUB_MANUAL, always and without recording
//!   them: the application subscribes the peer itself), and receives its peers' messages.
//! - SUB keeps what the application subscribed to, tells every peer on each (re)connection,
//!   and drops what does not match (what matches, with INVERT_MATCHING). It never sends.
//! - XSUB is a SUB whose subscriptions are sent as messages (`\x01topic`, `\x00topic`); any
//!   other message goes to every publisher.
//!
//! Publishers and subscribers keep the list of their peers in a [`LoadBalancer`] ring: they
//! address all of them, never one in turn.

use std::collections::VecDeque;

use bytes::Bytes;

use super::{Attach, Ctx, Rules};
use crate::message::Message;
use crate::options::Options;
use crate::pipe::{Command, PipeId, Pipes};
use crate::routing::trie::{Change, PipeSet, Trie};
use crate::routing::LoadBalancer;
use crate::socket::{RecvError, SendError};

/// What PUB and XPUB share: the peers, who is subscribed to what, and the distribution.
#[derive(Debug, Default)]
struct Publisher {
    peers: LoadBalancer,
    /// Who is subscribed to what.
    trie: Trie<PipeSet>,
    /// Distribution round, to give each pipe a message once.
    round: u64,
    /// Reused list of the pipes a message goes to (no allocation per send).
    targets: Vec<PipeId>,
}

impl Publisher {
    /// Every matching subscriber gets the message; a full one loses it (or, with XPUB_NODROP,
    /// the send fails with "would block" and nobody gets it).
    fn distribute(&mut self, ctx: &mut Ctx<'_>, msg: Message) -> Result<(), SendError> {
        let hwm = ctx.send_hwm();
        let invert = ctx.options.invert_matching;
        let nodrop = ctx.options.xpub_nodrop;
        self.round += 1;
        let round = self.round;
        let pipes = &mut *ctx.pipes;
        let targets = &mut self.targets;
        targets.clear();
        let first = msg.parts().first().map_or(&[][..], |p| &p[..]);
        self.trie.for_each_prefix(first, |set| {
            for &id in set {
                if let Some(p) = pipes.get_mut(id) {
                    if p.mark != round {
                        p.mark = round;
                        if !invert {
                            targets.push(id);
                        }
                    }
                }
            }
        });
        if invert {
            for &id in self.peers.pipes() {
                if pipes.get(id).is_some_and(|p| p.mark != round) {
                    targets.push(id);
                }
            }
        }
        if nodrop
            && targets
                .iter()
                .any(|&id| !pipes.get(id).is_some_and(|p| p.has_room(hwm)))
        {
            return Err(SendError::WouldBlock(msg));
        }
        let last = targets.len();
        let mut msg = Some(msg);
        for (i, &id) in self.targets.iter().enumerate() {
            if !ctx
                .pipes
                .get(id)
                .is_some_and(|p| p.attached && p.has_room(hwm))
            {
                crate::trace::dropped!("PUB: the subscriber is at SNDHWM");
                continue;
            }
            let m = if i + 1 == last {
                msg.take().expect("last use")
            } else {
                msg.clone().expect("still here")
            };
            ctx.enqueue(id, m);
        }
        Ok(())
    }

    fn can_send(&self, pipes: &Pipes, options: &Options) -> bool {
        let hwm = super::send_hwm(options);
        !options.xpub_nodrop
            || self
                .peers
                .pipes()
                .iter()
                .all(|&id| pipes.get(id).is_some_and(|p| p.has_room(hwm)))
    }

    /// Records a (un)subscription; true when the topic got its first subscriber or lost its
    /// last.
    fn record(&mut self, topic: &[u8], pipe: PipeId, on: bool) -> Change {
        if on {
            self.trie.add(topic, pipe)
        } else {
            self.trie.remove(topic, pipe)
        }
    }
}

/// PUB.
#[derive(Debug, Default)]
pub(crate) struct Pub(Publisher);

impl Rules for Pub {
    fn topics_count(&self) -> Option<usize> {
        Some(self.0.trie.len())
    }

    fn send(&mut self, ctx: &mut Ctx<'_>, msg: Message) -> Result<(), SendError> {
        self.0.distribute(ctx, msg)
    }

    fn recv(&mut self, _ctx: &mut Ctx<'_>) -> Result<Message, RecvError> {
        Err(RecvError::NotSupported)
    }

    fn can_send(&self, pipes: &Pipes, options: &Options) -> bool {
        self.0.can_send(pipes, options)
    }

    fn can_recv(&mut self, _ctx: &mut Ctx<'_>) -> bool {
        false
    }

    /// A PUB has no use for data from its subscribers.
    fn handle_message(&mut self, _: &mut Ctx<'_>, _: PipeId, _: Message) -> Result<(), Message> {
        Ok(())
    }

    fn attach(&mut self, _ctx: &mut Ctx<'_>, pipe: PipeId) -> Attach {
        self.0.peers.add(pipe);
        Attach::Attached
    }

    fn detach(&mut self, _ctx: &mut Ctx<'_>, pipe: PipeId, _routing_id: Option<&Bytes>) {
        self.0.peers.remove(pipe);
        drop(self.0.trie.remove_pipe(pipe));
    }

    fn handle_subscription(
        &mut self,
        ctx: &mut Ctx<'_>,
        pipe: PipeId,
        topic: &[u8],
        on: bool,
    ) -> bool {
        ctx.pipes.get(pipe).is_some() && self.0.record(topic, pipe, on).pipe
    }
}

/// XPUB.
#[derive(Debug, Default)]
pub(crate) struct XPub {
    publisher: Publisher,
    /// Subscription notifications waiting for the application.
    up: VecDeque<Message>,
    /// XPUB_MANUAL: the pipe whose subscription the application is answering.
    last_pipe: Option<PipeId>,
    /// `up` reached RCVHWM and some connection stopped reading because of it.
    up_paused: bool,
}

/// An XPUB notification: `\x01topic` for a subscription, `\x00topic` for a cancellation.
fn notification(flag: u8, topic: &[u8]) -> Message {
    let mut body = Vec::with_capacity(1 + topic.len());
    body.push(flag);
    body.extend_from_slice(topic);
    Message::from(body)
}

impl Rules for XPub {
    fn topics_count(&self) -> Option<usize> {
        Some(self.publisher.trie.len())
    }

    fn send(&mut self, ctx: &mut Ctx<'_>, msg: Message) -> Result<(), SendError> {
        self.publisher.distribute(ctx, msg)
    }

    /// Notifications first, then the peers' messages.
    fn recv(&mut self, ctx: &mut Ctx<'_>) -> Result<Message, RecvError> {
        if let Some(m) = self.up.pop_front() {
            if self.up_paused && self.up.len() <= ctx.options.rcvhwm / 2 {
                self.up_paused = false;
                ctx.resume_all();
            }
            return Ok(m);
        }
        ctx.fair_recv()
    }

    fn can_send(&self, pipes: &Pipes, options: &Options) -> bool {
        self.publisher.can_send(pipes, options)
    }

    fn can_recv(&mut self, ctx: &mut Ctx<'_>) -> bool {
        !self.up.is_empty() || ctx.has_message()
    }

    fn attach(&mut self, ctx: &mut Ctx<'_>, pipe: PipeId) -> Attach {
        self.publisher.peers.add(pipe);
        if let Some(welcome) = &ctx.options.xpub_welcome_msg {
            if let Some(p) = ctx.pipes.get_mut(pipe) {
                p.out.push_back(Message::from(welcome.clone()));
            }
        }
        Attach::Attached
    }

    /// The peer's subscriptions go with it: the application hears of each topic left without
    /// a subscriber (of each of the peer's topics with XPUB_VERBOSER).
    fn detach(&mut self, ctx: &mut Ctx<'_>, pipe: PipeId, _routing_id: Option<&Bytes>) {
        self.publisher.peers.remove(pipe);
        let verboser = ctx.options.xpub_verboser;
        let all: Vec<Bytes> = if verboser {
            self.publisher
                .trie
                .topics()
                .into_iter()
                .filter(|(_, set)| set.contains(&pipe))
                .map(|(t, _)| t)
                .collect()
        } else {
            Vec::new()
        };
        let emptied = self.publisher.trie.remove_pipe(pipe);
        for t in if verboser { all } else { emptied } {
            self.up.push_back(notification(0, &t));
        }
        if self.last_pipe == Some(pipe) {
            self.last_pipe = None;
        }
    }

    fn handle_subscription(
        &mut self,
        ctx: &mut Ctx<'_>,
        pipe: PipeId,
        topic: &[u8],
        on: bool,
    ) -> bool {
        let o = ctx.options;
        let verbose = if on {
            o.xpub_verbose || o.xpub_verboser
        } else {
            o.xpub_verboser
        };
        if ctx.pipes.get(pipe).is_none() {
            return false;
        }
        let flag = u8::from(on);
        if o.xpub_manual {
            // The application decides; what waits for it is bounded by RCVHWM.
            self.last_pipe = Some(pipe);
            self.up.push_back(notification(flag, topic));
            return false;
        }
        let change = self.publisher.record(topic, pipe, on);
        if change.topic || verbose {
            self.up.push_back(notification(flag, topic));
        }
        change.pipe
    }

    /// False when RCVHWM notifications already wait: the connection keeps the event, stops
    /// reading, and resumes once the application has read half of them.
    fn subscription_room(&mut self, ctx: &mut Ctx<'_>, pipe: PipeId) -> bool {
        let hwm = ctx.options.rcvhwm;
        if hwm == 0 || self.up.len() < hwm {
            return true;
        }
        self.up_paused = true;
        if let Some(p) = ctx.pipes.get_mut(pipe) {
            p.read_paused = true;
        }
        false
    }

    /// XPUB_MANUAL: (un)subscribes the peer whose subscription was last received.
    fn subscribe(&mut self, ctx: &mut Ctx<'_>, topic: &[u8], on: bool) {
        if let Some(pipe) = self.last_pipe.filter(|&p| ctx.pipes.get(p).is_some()) {
            self.publisher.record(topic, pipe, on);
        }
    }
}

/// SUB: the peers and what we are subscribed to.
#[derive(Debug, Default)]
pub(crate) struct Sub {
    peers: LoadBalancer,
    /// What we are subscribed to, with counts (duplicates need as many unsubscriptions).
    trie: Trie<u32>,
}

impl Rules for Sub {
    fn topics_count(&self) -> Option<usize> {
        Some(self.trie.len())
    }

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

    /// Queues a matching message (or, with INVERT_MATCHING, one that does not match).
    fn handle_message(
        &mut self,
        ctx: &mut Ctx<'_>,
        pipe: PipeId,
        msg: Message,
    ) -> Result<(), Message> {
        let first = msg.parts().first().map_or(&[][..], |p| &p[..]);
        if self.trie.matches(first) == ctx.options.invert_matching {
            return Ok(());
        }
        ctx.push_inbound(pipe, msg)
    }

    fn attach(&mut self, _ctx: &mut Ctx<'_>, pipe: PipeId) -> Attach {
        self.peers.add(pipe);
        Attach::Attached
    }

    fn detach(&mut self, _ctx: &mut Ctx<'_>, pipe: PipeId, _routing_id: Option<&Bytes>) {
        self.peers.remove(pipe);
    }

    /// A new connection (or a reconnection) hears every topic once, in place of whatever
    /// (un)subscriptions still waited for the old one.
    fn handle_ready(&mut self, ctx: &mut Ctx<'_>, pipe: PipeId) {
        if let Some(p) = ctx.pipes.get_mut(pipe) {
            p.commands
                .retain(|c| !matches!(c, Command::Subscribe(_) | Command::Cancel(_)));
            p.commands.extend(
                self.trie
                    .topics()
                    .into_iter()
                    .map(|(t, _)| Command::Subscribe(t)),
            );
        }
    }

    /// Records a subscription and tells every peer when it is the topic's first (or, for a
    /// cancellation, its last).
    fn subscribe(&mut self, ctx: &mut Ctx<'_>, topic: &[u8], on: bool) {
        let changed = if on {
            self.trie.add(topic)
        } else {
            self.trie.remove(topic)
        };
        if changed {
            let t = Bytes::copy_from_slice(topic);
            let cmd = if on {
                Command::Subscribe(t)
            } else {
                Command::Cancel(t)
            };
            ctx.broadcast_command(self.peers.pipes(), &cmd);
        }
    }
}

/// XSUB: a SUB that sends.
#[derive(Debug, Default)]
pub(crate) struct XSub(Sub);

impl Rules for XSub {
    fn topics_count(&self) -> Option<usize> {
        Some(self.0.trie.len())
    }

    /// `\x01topic` subscribes and `\x00topic` unsubscribes (forwarded upstream, a cancel only
    /// when the last subscription to the topic goes, unless XSUB_VERBOSE_UNSUBSCRIBE), anything
    /// else goes upstream to every publisher with room.
    fn send(&mut self, ctx: &mut Ctx<'_>, msg: Message) -> Result<(), SendError> {
        let sub = &mut self.0;
        let first = &msg.parts()[0];
        match first.first() {
            Some(1) => {
                let topic = Bytes::copy_from_slice(&first[1..]);
                sub.trie.add(&topic);
                ctx.broadcast_command(sub.peers.pipes(), &Command::Subscribe(topic));
            }
            Some(0) => {
                let topic = Bytes::copy_from_slice(&first[1..]);
                if sub.trie.remove(&topic) || ctx.options.xsub_verbose_unsubscribe {
                    ctx.broadcast_command(sub.peers.pipes(), &Command::Cancel(topic));
                }
            }
            _ => {
                let hwm = ctx.send_hwm();
                for &id in sub.peers.pipes() {
                    if ctx.pipes.get(id).is_some_and(|p| p.has_room(hwm)) {
                        ctx.enqueue(id, msg.clone());
                    }
                }
            }
        }
        Ok(())
    }

    fn can_send(&self, _pipes: &Pipes, _options: &Options) -> bool {
        true
    }

    // The rest is SUB's.

    fn recv(&mut self, ctx: &mut Ctx<'_>) -> Result<Message, RecvError> {
        self.0.recv(ctx)
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
        self.0.handle_message(ctx, pipe, msg)
    }

    fn attach(&mut self, ctx: &mut Ctx<'_>, pipe: PipeId) -> Attach {
        self.0.attach(ctx, pipe)
    }

    fn detach(&mut self, ctx: &mut Ctx<'_>, pipe: PipeId, routing_id: Option<&Bytes>) {
        self.0.detach(ctx, pipe, routing_id);
    }

    fn handle_ready(&mut self, ctx: &mut Ctx<'_>, pipe: PipeId) {
        self.0.handle_ready(ctx, pipe);
    }

    fn subscribe(&mut self, ctx: &mut Ctx<'_>, topic: &[u8], on: bool) {
        self.0.subscribe(ctx, topic, on);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pattern::testing::Harness;
    use crate::pipe::Outbound;
    use crate::socket::Action;

    fn subscribe(h: &mut Harness, p: &mut impl Rules, pipe: PipeId, topic: &str, on: bool) {
        p.handle_subscription(&mut h.ctx(), pipe, topic.as_bytes(), on);
    }

    #[test]
    fn pub_sends_to_matching_subscribers_once_each() {
        let mut h = Harness::default();
        let mut p = Pub::default();
        let a = h.add(&mut p);
        let b = h.add(&mut p);
        subscribe(&mut h, &mut p, a, "news", true);
        subscribe(&mut h, &mut p, a, "ne", true);
        subscribe(&mut h, &mut p, b, "sport", true);
        p.send(&mut h.ctx(), Message::from("news today")).unwrap();
        p.send(&mut h.ctx(), Message::from("weather")).unwrap();
        assert_eq!(h.out(a), [Message::from("news today")]);
        assert!(h.out(b).is_empty());
        subscribe(&mut h, &mut p, a, "news", false);
        subscribe(&mut h, &mut p, a, "ne", false);
        p.send(&mut h.ctx(), Message::from("news again")).unwrap();
        assert!(h.out(a).is_empty());
        // What subscribers send is dropped.
        h.arrive(&mut p, a, Message::from("up"));
        assert!(h.pipes.get(a).unwrap().inbound.is_empty());
        assert_eq!(p.recv(&mut h.ctx()), Err(RecvError::NotSupported));
    }

    #[test]
    fn invert_matching_sends_to_those_not_subscribed() {
        let mut h = Harness::with_options(Options::default().invert_matching(true));
        let mut p = Pub::default();
        let a = h.add(&mut p);
        let b = h.add(&mut p);
        subscribe(&mut h, &mut p, a, "x", true);
        p.send(&mut h.ctx(), Message::from("xyz")).unwrap();
        assert!(h.out(a).is_empty());
        assert_eq!(h.out(b), [Message::from("xyz")]);
    }

    #[test]
    fn a_full_subscriber_misses_messages_unless_nodrop() {
        let mut h = Harness::with_options(Options::default().send_hwm(1));
        let mut p = Pub::default();
        let a = h.add(&mut p);
        let b = h.add(&mut p);
        subscribe(&mut h, &mut p, a, "", true);
        subscribe(&mut h, &mut p, b, "", true);
        p.send(&mut h.ctx(), Message::from("1")).unwrap();
        h.out(b);
        // `a` is full: without XPUB_NODROP sending never waits for it.
        assert!(p.can_send(&h.pipes, &h.options));
        p.send(&mut h.ctx(), Message::from("2")).unwrap();
        assert_eq!(h.out(a), [Message::from("1")]);
        assert_eq!(h.out(b), [Message::from("2")]);

        let mut h = Harness::with_options(Options::default().send_hwm(1).xpub_nodrop(true));
        let mut p = Pub::default();
        let a = h.add(&mut p);
        let b = h.add(&mut p);
        subscribe(&mut h, &mut p, a, "", true);
        subscribe(&mut h, &mut p, b, "", true);
        assert!(
            p.can_send(&h.pipes, &h.options),
            "every subscriber has room"
        );
        p.send(&mut h.ctx(), Message::from("1")).unwrap();
        h.out(b);
        assert!(!p.can_send(&h.pipes, &h.options));
        assert!(matches!(
            p.send(&mut h.ctx(), Message::from("2")),
            Err(SendError::WouldBlock(_))
        ));
        assert_eq!(h.out(a), [Message::from("1")]);
        assert!(h.out(b).is_empty());
    }

    #[test]
    fn xpub_passes_first_and_last_subscriptions_up() {
        let mut h = Harness::default();
        let mut x = XPub::default();
        let a = h.add(&mut x);
        let b = h.add(&mut x);
        subscribe(&mut h, &mut x, a, "t", true);
        subscribe(&mut h, &mut x, b, "t", true);
        subscribe(&mut h, &mut x, a, "t", false);
        assert_eq!(x.recv(&mut h.ctx()), Ok(Message::from("\x01t")));
        assert_eq!(x.recv(&mut h.ctx()), Err(RecvError::WouldBlock));
        // The last subscriber leaving passes the cancel up.
        x.detach(&mut h.ctx(), b, None);
        assert!(x.can_recv(&mut h.ctx()));
        assert_eq!(x.recv(&mut h.ctx()), Ok(Message::from("\x00t")));
        // XPUB also receives its peers' messages.
        h.arrive(&mut x, a, Message::from("data"));
        assert_eq!(x.recv(&mut h.ctx()), Ok(Message::from("data")));
    }

    #[test]
    fn topics_count_counts_distinct_topics() {
        let mut h = Harness::default();
        let mut x = XPub::default();
        let a = h.add(&mut x);
        let b = h.add(&mut x);
        assert_eq!(x.topics_count(), Some(0));
        subscribe(&mut h, &mut x, a, "t", true);
        subscribe(&mut h, &mut x, b, "t", true);
        subscribe(&mut h, &mut x, b, "u", true);
        assert_eq!(x.topics_count(), Some(2));
        // `u` goes with the only peer that held it; `t` stays while `a` holds it.
        x.detach(&mut h.ctx(), b, None);
        assert_eq!(x.topics_count(), Some(1));
        subscribe(&mut h, &mut x, a, "t", false);
        assert_eq!(x.topics_count(), Some(0));

        let mut s = Sub::default();
        s.subscribe(&mut h.ctx(), b"t", true);
        s.subscribe(&mut h.ctx(), b"t", true);
        s.subscribe(&mut h.ctx(), b"", true);
        assert_eq!(s.topics_count(), Some(2));
        s.subscribe(&mut h.ctx(), b"t", false);
        assert_eq!(
            s.topics_count(),
            Some(2),
            "a duplicate needs two unsubscriptions"
        );
        s.subscribe(&mut h.ctx(), b"t", false);
        assert_eq!(s.topics_count(), Some(1));
        assert_eq!(
            crate::pattern::dealer::Dealer::default().topics_count(),
            None
        );
    }

    #[test]
    fn xpub_manual_lets_the_application_subscribe_the_peer() {
        let mut h = Harness::with_options(Options::default().xpub_manual(true));
        let mut x = XPub::default();
        let a = h.add(&mut x);
        subscribe(&mut h, &mut x, a, "t", true);
        assert_eq!(x.recv(&mut h.ctx()), Ok(Message::from("\x01t")));
        x.send(&mut h.ctx(), Message::from("t1")).unwrap();
        assert!(h.out(a).is_empty());
        x.subscribe(&mut h.ctx(), b"t", true);
        x.send(&mut h.ctx(), Message::from("t2")).unwrap();
        assert_eq!(h.out(a), [Message::from("t2")]);
        // Another peer leaving does not make the application's answer go astray: it is still
        // for `a`, whose subscription it answers.
        let b = h.add(&mut x);
        subscribe(&mut h, &mut x, a, "u", true);
        assert_eq!(x.recv(&mut h.ctx()), Ok(Message::from("\x01u")));
        x.detach(&mut h.ctx(), b, None);
        x.subscribe(&mut h.ctx(), b"u", true);
        x.send(&mut h.ctx(), Message::from("u1")).unwrap();
        assert_eq!(h.out(a), [Message::from("u1")]);
        // `a` leaving ends it: nothing is recorded for a peer that is gone.
        x.detach(&mut h.ctx(), a, None);
        assert_eq!(x.last_pipe, None);
    }

    #[test]
    fn xpub_notifications_hold_back_at_rcvhwm() {
        let mut h = Harness::with_options(Options::default().recv_hwm(2));
        let mut x = XPub::default();
        let a = h.add(&mut x);
        for t in ["a", "b"] {
            assert!(x.subscription_room(&mut h.ctx(), a));
            subscribe(&mut h, &mut x, a, t, true);
        }
        assert!(!x.subscription_room(&mut h.ctx(), a));
        assert!(h.pipes.get(a).unwrap().read_paused);
        assert!(x.recv(&mut h.ctx()).is_ok());
        assert_eq!(h.actions.pop_front(), Some(Action::ResumeRead { pipe: a }));
    }

    #[test]
    fn xpub_resumes_reading_once_half_the_notifications_are_read() {
        let mut h = Harness::with_options(Options::default().recv_hwm(4));
        let mut x = XPub::default();
        let a = h.add(&mut x);
        assert!(
            x.can_send(&h.pipes, &h.options),
            "XPUB sends without waiting"
        );
        assert!(!x.can_recv(&mut h.ctx()), "nothing to read yet");
        for t in ["a", "b", "c", "d"] {
            subscribe(&mut h, &mut x, a, t, true);
        }
        assert!(!x.subscription_room(&mut h.ctx(), a));
        assert!(x.can_recv(&mut h.ctx()));
        h.actions.clear();
        // Three of four left: not yet.
        assert!(x.recv(&mut h.ctx()).is_ok());
        assert!(h.actions.is_empty(), "resumed with 3 of 4 still unread");
        // Two of four: half read, reading resumes, once.
        assert!(x.recv(&mut h.ctx()).is_ok());
        assert_eq!(h.actions.pop_front(), Some(Action::ResumeRead { pipe: a }));
        assert!(x.recv(&mut h.ctx()).is_ok());
        assert!(x.recv(&mut h.ctx()).is_ok());
        assert!(
            h.actions.is_empty(),
            "resumed again though nothing was paused"
        );
        assert!(!x.can_recv(&mut h.ctx()));
    }

    #[test]
    fn a_pub_forgets_a_detached_subscriber() {
        let mut h = Harness::default();
        let mut p = Pub::default();
        let a = h.add(&mut p);
        assert!(!p.can_recv(&mut h.ctx()), "a PUB receives nothing");
        subscribe(&mut h, &mut p, a, "topic", true);
        assert!(!p.0.trie.is_empty());
        p.detach(&mut h.ctx(), a, None);
        assert!(p.0.trie.is_empty(), "its topics stay after it left");
        assert!(p.0.peers.is_empty());
    }

    #[test]
    fn xpub_welcomes_each_peer() {
        let welcome = Bytes::from_static(b"hi");
        let mut h = Harness::with_options(Options::default().xpub_welcome_msg(Some(welcome)));
        let mut x = XPub::default();
        let a = h.add(&mut x);
        assert_eq!(h.out(a), [Message::from("hi")]);
    }

    #[test]
    fn sub_filters_and_tells_every_peer() {
        let mut h = Harness::default();
        let mut s = Sub::default();
        let a = h.add(&mut s);
        s.subscribe(&mut h.ctx(), b"t", true);
        s.subscribe(&mut h.ctx(), b"t", true);
        let cmds: Vec<Command> = h.pipes.get_mut(a).unwrap().commands.drain(..).collect();
        assert_eq!(cmds, [Command::Subscribe(Bytes::from_static(b"t"))]);
        h.arrive(&mut s, a, Message::from("other"));
        h.arrive(&mut s, a, Message::from("topic"));
        assert_eq!(s.recv(&mut h.ctx()), Ok(Message::from("topic")));
        assert!(!s.can_recv(&mut h.ctx()));
        assert!(!s.can_send(&h.pipes, &h.options), "a SUB sends no messages");
        // A new connection hears each topic once, in place of stale commands.
        let b = h.add(&mut s);
        h.pipes
            .get_mut(b)
            .unwrap()
            .commands
            .push_back(Command::Cancel(Bytes::from_static(b"old")));
        s.handle_ready(&mut h.ctx(), b);
        let cmds: Vec<Command> = h.pipes.get_mut(b).unwrap().commands.drain(..).collect();
        assert_eq!(cmds, [Command::Subscribe(Bytes::from_static(b"t"))]);
        // Two subscriptions need two cancels; only the last is sent.
        s.subscribe(&mut h.ctx(), b"t", false);
        assert!(h.pipes.get(a).unwrap().commands.is_empty());
        s.subscribe(&mut h.ctx(), b"t", false);
        let cmds: Vec<Command> = h.pipes.get_mut(a).unwrap().commands.drain(..).collect();
        assert_eq!(cmds, [Command::Cancel(Bytes::from_static(b"t"))]);
        assert!(matches!(
            s.send(&mut h.ctx(), Message::from("x")),
            Err(SendError::NotSupported(_))
        ));
        // A peer that left is told nothing more.
        s.detach(&mut h.ctx(), a, None);
        assert!(!s.peers.pipes().contains(&a));
    }

    #[test]
    fn xsub_sends_subscriptions_as_commands_and_the_rest_upstream() {
        let mut h = Harness::default();
        let mut x = XSub::default();
        let a = h.add(&mut x);
        x.send(&mut h.ctx(), Message::from("\x01t")).unwrap();
        x.send(&mut h.ctx(), Message::from("\x00t")).unwrap();
        x.send(&mut h.ctx(), Message::from("\x00never")).unwrap();
        x.send(&mut h.ctx(), Message::from("up")).unwrap();
        let got: Vec<Outbound> = std::iter::from_fn(|| {
            let p = h.pipes.get_mut(a).unwrap();
            p.commands
                .pop_front()
                .map(Outbound::Command)
                .or_else(|| p.out.pop_front().map(Outbound::Message))
        })
        .collect();
        assert_eq!(
            got,
            [
                Outbound::Command(Command::Subscribe(Bytes::from_static(b"t"))),
                Outbound::Command(Command::Cancel(Bytes::from_static(b"t"))),
                Outbound::Message(Message::from("up")),
            ]
        );
    }

    #[test]
    fn xsub_keeps_its_subscriptions_across_peers() {
        let mut h = Harness::default();
        let mut x = XSub::default();
        assert!(x.can_send(&h.pipes, &h.options), "XSUB always takes a send");
        let a = h.add(&mut x);
        x.send(&mut h.ctx(), Message::from("\x01t")).unwrap();
        // The option-style subscribe does what a `\x01` message does.
        x.subscribe(&mut h.ctx(), b"s", true);
        let cmds: Vec<Command> = h.pipes.get_mut(a).unwrap().commands.drain(..).collect();
        assert_eq!(
            cmds,
            [
                Command::Subscribe(Bytes::from_static(b"t")),
                Command::Subscribe(Bytes::from_static(b"s"))
            ]
        );
        // A publisher that connects later hears every topic.
        let b = h.add(&mut x);
        x.handle_ready(&mut h.ctx(), b);
        let mut cmds: Vec<Command> = h.pipes.get_mut(b).unwrap().commands.drain(..).collect();
        cmds.sort_by_key(|c| format!("{c:?}"));
        assert_eq!(
            cmds,
            [
                Command::Subscribe(Bytes::from_static(b"s")),
                Command::Subscribe(Bytes::from_static(b"t"))
            ]
        );
        // And one that left is told nothing more.
        x.detach(&mut h.ctx(), a, None);
        assert_eq!(x.0.peers.pipes(), [b]);
    }
}
