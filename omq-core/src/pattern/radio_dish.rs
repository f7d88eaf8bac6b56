//! RADIO and DISH (spec 48): groups instead of prefixes. A DISH joins groups by exact name (at
//! most [`MAX_GROUP`] bytes) and tells each peer with JOIN / LEAVE commands (again after every
//! reconnection); a RADIO sends a message only to the peers that joined its group, dropping it
//! for a peer at SNDHWM (it never blocks, as PUB).
//!
//! On the wire a RADIO message is two frames, the group (with MORE) then the body, as
//! libzmq's `radio_session_t` writes it; the RADIO queues it in that form, so inproc peers see
//! the same. The DISH turns it back into one part carrying [`Message::group`], and drops what
//! is malformed or for a group it has not joined. Single-part messages only (a RADIO is wrapped
//! in [`super::single_part::SinglePart`]; a DISH checks the wire form itself).

use std::collections::{HashMap, HashSet};

use bytes::Bytes;

use super::{Attach, Ctx, Rules};
use crate::message::{Message, Part, MAX_GROUP};
use crate::options::Options;
use crate::pipe::{Command, PipeId, Pipes};
use crate::socket::{MessageError, RecvError, SendError};

/// RADIO: the peers that joined each group. A list per group, not a set: a group has few
/// members, and a group joined by one dish (what a flood of JOINs makes) costs one small
/// allocation beside its name.
#[derive(Debug, Default)]
pub(crate) struct Radio {
    groups: HashMap<Bytes, Vec<PipeId>>,
    /// udp peers: they get every group (a DISH filters for itself over udp).
    everyone: Vec<PipeId>,
}

impl Rules for Radio {
    fn send(&mut self, ctx: &mut Ctx<'_>, msg: Message) -> Result<(), SendError> {
        let Some(group) = msg.group().map(Bytes::copy_from_slice) else {
            return Err(SendError::InvalidMessage(msg, MessageError::NoGroup));
        };
        if group.len() > MAX_GROUP {
            return Err(SendError::InvalidMessage(msg, MessageError::GroupTooLong));
        }
        let members = self.groups.get(&group).map_or(&[][..], Vec::as_slice);
        if members.is_empty() && self.everyone.is_empty() {
            return Ok(());
        }
        let hwm = ctx.send_hwm();
        let body = msg.into_parts().next().unwrap_or_default();
        let wire = Message::multipart([Part::from(group), body]);
        for &id in members.iter().chain(&self.everyone) {
            if ctx
                .pipes
                .get(id)
                .is_some_and(|p| p.attached && p.has_room(hwm))
            {
                ctx.enqueue(id, wire.clone());
            } else {
                crate::trace::dropped!("RADIO: the dish is at SNDHWM");
            }
        }
        Ok(())
    }

    fn recv(&mut self, _ctx: &mut Ctx<'_>) -> Result<Message, RecvError> {
        Err(RecvError::NotSupported)
    }

    /// A RADIO never blocks: a full dish loses the message.
    fn can_send(&self, _pipes: &Pipes, _options: &Options) -> bool {
        true
    }

    fn can_recv(&mut self, _ctx: &mut Ctx<'_>) -> bool {
        false
    }

    fn handle_message(&mut self, _: &mut Ctx<'_>, _: PipeId, _: Message) -> Result<(), Message> {
        crate::trace::dropped!("RADIO: a dish sent a message");
        Ok(())
    }

    /// A udp peer hears every group from now on.
    fn attach(&mut self, ctx: &mut Ctx<'_>, pipe: PipeId) -> Attach {
        if ctx.pipes.get(pipe).is_some_and(|p| p.datagram) && !self.everyone.contains(&pipe) {
            self.everyone.push(pipe);
        }
        Attach::Attached
    }

    fn detach(&mut self, _ctx: &mut Ctx<'_>, pipe: PipeId, _routing_id: Option<&Bytes>) {
        self.everyone.retain(|&p| p != pipe);
        self.groups.retain(|_, members| {
            members.retain(|&p| p != pipe);
            !members.is_empty()
        });
        self.shrink();
    }

    /// A dish joined (`on`) or left a group; true when it was not (or was) a member.
    fn handle_subscription(
        &mut self,
        _ctx: &mut Ctx<'_>,
        pipe: PipeId,
        group: &[u8],
        on: bool,
    ) -> bool {
        if group.len() > MAX_GROUP {
            return false;
        }
        if on {
            let members = self
                .groups
                .entry(Bytes::copy_from_slice(group))
                .or_default();
            if members.contains(&pipe) {
                return false;
            }
            members.push(pipe);
            return true;
        }
        let Some(members) = self.groups.get_mut(group) else {
            return false;
        };
        let Some(at) = members.iter().position(|&p| p == pipe) else {
            return false;
        };
        members.swap_remove(at);
        if members.is_empty() {
            self.groups.remove(group);
            self.shrink();
        }
        true
    }
}

impl Radio {
    /// Gives the table's room back once most of it is unused, so that memory follows the
    /// groups down after a flood of JOINs is left (a shrink costs the groups left, and comes
    /// only after three quarters of the room emptied: amortised constant per LEAVE).
    fn shrink(&mut self) {
        if self.groups.capacity() > 64 && self.groups.len() * 4 < self.groups.capacity() {
            self.groups.shrink_to(self.groups.len() * 2);
        }
    }
}

/// DISH: the groups joined, and the peers to tell.
#[derive(Debug, Default)]
pub(crate) struct Dish {
    groups: HashSet<Bytes>,
    peers: Vec<PipeId>,
}

/// Why a join or leave was refused (libzmq's EINVAL).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GroupError {
    /// Longer than [`MAX_GROUP`].
    TooLong,
    /// Joined twice, or left without joining.
    NotChanged,
}

impl Dish {
    /// Joins (`on`) or leaves `group`, telling every peer.
    pub(crate) fn join(
        &mut self,
        ctx: &mut Ctx<'_>,
        group: &[u8],
        on: bool,
    ) -> Result<(), GroupError> {
        if group.len() > MAX_GROUP {
            return Err(GroupError::TooLong);
        }
        let changed = if on {
            self.groups.insert(Bytes::copy_from_slice(group))
        } else {
            self.groups.remove(group)
        };
        if !changed {
            return Err(GroupError::NotChanged);
        }
        let g = Bytes::copy_from_slice(group);
        let cmd = if on {
            Command::Join(g)
        } else {
            Command::Leave(g)
        };
        ctx.broadcast_command(&self.peers, &cmd);
        Ok(())
    }
}

impl Rules for Dish {
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

    /// `[group][body]` from the wire becomes the body with its group; anything else, or a
    /// group not joined, is dropped.
    fn handle_message(
        &mut self,
        ctx: &mut Ctx<'_>,
        pipe: PipeId,
        msg: Message,
    ) -> Result<(), Message> {
        if msg.len() != 2 {
            crate::trace::dropped!("DISH: not a group and a body");
            return Ok(());
        }
        let mut parts = msg.into_parts();
        let (Some(group), Some(body)) = (parts.next(), parts.next()) else {
            return Ok(());
        };
        if !self.groups.contains(&group[..]) {
            crate::trace::dropped!("DISH: a group not joined");
            return Ok(());
        }
        ctx.push_inbound(
            pipe,
            Message::from(body).with_group(Bytes::copy_from_slice(&group)),
        )
    }

    /// A udp pipe is told nothing: over udp the DISH filters by itself.
    fn attach(&mut self, ctx: &mut Ctx<'_>, pipe: PipeId) -> Attach {
        if !ctx.pipes.get(pipe).is_some_and(|p| p.datagram) {
            self.peers.push(pipe);
        }
        Attach::Attached
    }

    fn detach(&mut self, _ctx: &mut Ctx<'_>, pipe: PipeId, _routing_id: Option<&Bytes>) {
        self.peers.retain(|&p| p != pipe);
    }

    /// Every (re)connection hears every group joined, once.
    fn handle_ready(&mut self, ctx: &mut Ctx<'_>, pipe: PipeId) {
        if let Some(p) = ctx.pipes.get_mut(pipe).filter(|p| !p.datagram) {
            p.commands
                .retain(|c| !matches!(c, Command::Join(_) | Command::Leave(_)));
            p.commands
                .extend(self.groups.iter().cloned().map(Command::Join));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pattern::testing::Harness;

    #[test]
    fn a_radio_sends_to_the_dishes_of_the_group_only() {
        let mut h = Harness::with_options(Options::default().send_hwm(1));
        let mut r = Radio::default();
        let a = h.add(&mut r);
        let b = h.add(&mut r);
        r.handle_subscription(&mut h.ctx(), a, b"news", true);
        r.handle_subscription(&mut h.ctx(), b, b"weather", true);
        r.send(&mut h.ctx(), Message::from("hi").with_group("news"))
            .unwrap();
        r.send(&mut h.ctx(), Message::from("x").with_group("nobody"))
            .unwrap();
        assert_eq!(h.out(a), [Message::multipart(["news", "hi"])]);
        assert!(h.out(b).is_empty());
        // Full: dropped, never blocking.
        r.send(&mut h.ctx(), Message::from("1").with_group("news"))
            .unwrap();
        r.send(&mut h.ctx(), Message::from("2").with_group("news"))
            .unwrap();
        assert_eq!(h.out(a), [Message::multipart(["news", "1"])]);
        assert!(matches!(
            r.send(&mut h.ctx(), Message::from("no group")),
            Err(SendError::InvalidMessage(..))
        ));
        assert!(matches!(
            r.send(&mut h.ctx(), Message::from("x").with_group(vec![b'g'; 256])),
            Err(SendError::InvalidMessage(..))
        ));
        r.handle_subscription(&mut h.ctx(), a, b"news", false);
        r.send(&mut h.ctx(), Message::from("3").with_group("news"))
            .unwrap();
        assert!(h.out(a).is_empty());
    }

    #[test]
    fn a_radio_only_sends_and_takes_groups_up_to_255_bytes() {
        let mut h = Harness::default();
        let mut r = Radio::default();
        assert_eq!(r.recv(&mut h.ctx()), Err(RecvError::NotSupported));
        assert!(r.can_send(&h.pipes, &h.options), "a RADIO never blocks");
        assert!(!r.can_recv(&mut h.ctx()));
        let a = h.add(&mut r);
        let longest = vec![b'g'; MAX_GROUP];
        assert!(r.handle_subscription(&mut h.ctx(), a, &longest, true));
        assert!(!r.handle_subscription(&mut h.ctx(), a, &[b'g'; MAX_GROUP + 1], true));
        r.send(&mut h.ctx(), Message::from("x").with_group(longest.clone()))
            .unwrap();
        assert_eq!(h.out(a), [Message::multipart([longest, b"x".to_vec()])]);
    }

    #[test]
    fn a_detached_dish_leaves_every_group_and_only_it_does() {
        let mut h = Harness::default();
        let mut r = Radio::default();
        let a = h.add(&mut r);
        let b = h.add(&mut r);
        for p in [a, b] {
            r.handle_subscription(&mut h.ctx(), p, b"news", true);
        }
        r.detach(&mut h.ctx(), a, None);
        r.send(&mut h.ctx(), Message::from("1").with_group("news"))
            .unwrap();
        assert!(h.out(a).is_empty());
        assert_eq!(h.out(b), [Message::multipart(["news", "1"])]);
        r.detach(&mut h.ctx(), b, None);
        assert!(r.groups.is_empty());
    }

    #[test]
    fn the_group_table_gives_room_back_only_when_mostly_empty() {
        let mut h = Harness::default();
        let mut r = Radio::default();
        let a = h.add(&mut r);
        let group = |i: u32| i.to_be_bytes();
        for i in 0..1000 {
            r.handle_subscription(&mut h.ctx(), a, &group(i), true);
        }
        let full = r.groups.capacity();
        // A tenth left: the room stays.
        for i in 0..100 {
            r.handle_subscription(&mut h.ctx(), a, &group(i), false);
        }
        // (hashbrown counts a few deleted slots out of its capacity: no shrink, nonetheless.)
        assert!(
            r.groups.capacity() > full * 9 / 10,
            "{} of {full}",
            r.groups.capacity()
        );
        // Most left: the room follows, keeping twice what is left.
        for i in 100..800 {
            r.handle_subscription(&mut h.ctx(), a, &group(i), false);
        }
        let left = r.groups.len();
        assert_eq!(left, 200);
        assert!(
            r.groups.capacity() < full / 2,
            "{} of {full}",
            r.groups.capacity()
        );
        assert!(r.groups.capacity() >= 2 * left, "{}", r.groups.capacity());
        // A small table is left alone.
        let mut small = Radio::default();
        for i in 0..10 {
            small.handle_subscription(&mut h.ctx(), a, &group(i), true);
        }
        let cap = small.groups.capacity();
        for i in 0..9 {
            small.handle_subscription(&mut h.ctx(), a, &group(i), false);
        }
        assert!(
            small.groups.capacity() >= cap - 1,
            "{} of {cap}",
            small.groups.capacity()
        );
    }

    #[test]
    fn a_dish_only_receives_joins_up_to_255_bytes_and_tells_a_reconnection_once() {
        let mut h = Harness::default();
        let mut d = Dish::default();
        assert!(matches!(
            d.send(&mut h.ctx(), Message::from("x")),
            Err(SendError::NotSupported(_))
        ));
        assert!(!d.can_send(&h.pipes, &h.options));
        assert!(!d.can_recv(&mut h.ctx()));
        let a = h.add(&mut d);
        let b = h.add(&mut d);
        assert_eq!(d.join(&mut h.ctx(), &[b'g'; MAX_GROUP], true), Ok(()));
        d.join(&mut h.ctx(), b"news", true).unwrap();
        h.arrive(&mut d, a, Message::multipart(["news", "x"]));
        assert!(d.can_recv(&mut h.ctx()));
        // A reconnection hears each group once, whatever was still waiting for the old one.
        d.handle_ready(&mut h.ctx(), a);
        let joins = h.pipes.get_mut(a).unwrap().commands.len();
        assert_eq!(joins, 2, "one JOIN per group");
        // A detached peer is told nothing more.
        d.detach(&mut h.ctx(), b, None);
        h.pipes.get_mut(b).unwrap().commands.clear();
        d.join(&mut h.ctx(), b"sport", true).unwrap();
        assert!(h.pipes.get_mut(b).unwrap().commands.is_empty());
        assert_eq!(h.pipes.get_mut(a).unwrap().commands.len(), 3);
    }

    #[test]
    fn udp_pipes_hear_every_group_and_are_told_nothing() {
        let mut h = Harness::default();
        let mut r = Radio::default();
        let tcp = h.add(&mut r);
        let udp = h.pipes.insert(
            crate::pipe::Origin::Connect(1),
            crate::pipe::PipeState::Active,
        );
        h.pipes.get_mut(udp).unwrap().datagram = true;
        assert_eq!(r.attach(&mut h.ctx(), udp), Attach::Attached);
        assert_eq!(r.attach(&mut h.ctx(), udp), Attach::Attached);
        h.pipes.get_mut(udp).unwrap().attached = true;
        r.handle_subscription(&mut h.ctx(), tcp, b"news", true);
        for g in ["news", "other"] {
            r.send(&mut h.ctx(), Message::from("x").with_group(g))
                .unwrap();
        }
        assert_eq!(h.out(tcp), [Message::multipart(["news", "x"])]);
        assert_eq!(
            h.out(udp),
            [
                Message::multipart(["news", "x"]),
                Message::multipart(["other", "x"])
            ],
            "once each, however often it was attached"
        );
        r.detach(&mut h.ctx(), udp, None);
        r.send(&mut h.ctx(), Message::from("y").with_group("other"))
            .unwrap();
        assert!(h.out(udp).is_empty());

        let mut d = Dish::default();
        let udp = h.pipes.insert(
            crate::pipe::Origin::Connect(0),
            crate::pipe::PipeState::Active,
        );
        h.pipes.get_mut(udp).unwrap().datagram = true;
        assert_eq!(d.attach(&mut h.ctx(), udp), Attach::Attached);
        d.join(&mut h.ctx(), b"news", true).unwrap();
        d.handle_ready(&mut h.ctx(), udp);
        assert!(h.pipes.get_mut(udp).unwrap().commands.is_empty());
    }

    #[test]
    fn a_dish_filters_by_exact_group_and_rejoins_after_reconnecting() {
        let mut h = Harness::default();
        let mut d = Dish::default();
        let a = h.add(&mut d);
        d.join(&mut h.ctx(), b"news", true).unwrap();
        assert_eq!(
            d.join(&mut h.ctx(), b"news", true),
            Err(GroupError::NotChanged)
        );
        assert_eq!(
            d.join(&mut h.ctx(), &[b'g'; 256], true),
            Err(GroupError::TooLong)
        );
        for (g, body) in [("news", "1"), ("newsy", "2"), ("new", "3")] {
            h.arrive(&mut d, a, Message::multipart([g, body]));
        }
        h.arrive(&mut d, a, Message::from("malformed"));
        let got = d.recv(&mut h.ctx()).unwrap();
        assert_eq!(
            (got.group(), got.clone()),
            (Some(&b"news"[..]), Message::from("1"))
        );
        assert_eq!(d.recv(&mut h.ctx()), Err(RecvError::WouldBlock));
        let p = h.pipes.get_mut(a).unwrap();
        assert_eq!(
            p.commands.drain(..).collect::<Vec<_>>(),
            [Command::Join(Bytes::from_static(b"news"))]
        );
        d.handle_ready(&mut h.ctx(), a);
        assert_eq!(
            h.pipes.get_mut(a).unwrap().commands.len(),
            1,
            "one JOIN per group on every reconnection"
        );
    }
}
