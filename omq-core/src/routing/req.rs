//! REQ's envelope and state (spec 28): a request goes out behind an empty delimiter (and,
//! with REQ_CORRELATE, a 4-byte request id before it); only a well-formed reply from the pipe
//! the request went to, carrying the right id, is accepted; anything else is discarded.
//! Without REQ_RELAXED a second send before the reply, or a receive before a send, is a state
//! error (libzmq's EFSM).

use bytes::Bytes;

use crate::message::{Message, Part};
use crate::pipe::PipeId;

/// Where a REQ socket is in its request/reply cycle.
#[derive(Debug, Default)]
pub struct ReqState {
    /// The request in flight: the pipe it went to, and its id when correlating.
    pub waiting: Option<(PipeId, u32)>,
    next_id: u32,
}

impl ReqState {
    /// A state whose request ids start at `start`.
    pub fn new(start: u32) -> Self {
        ReqState {
            waiting: None,
            next_id: start,
        }
    }

    /// Wraps a request for the wire and returns the id it was given. `flag`: the peer takes
    /// the delimiter as the message's flag (a REP: `Pipe::peer_flags_delimiter`), so a
    /// one-part request stays inline.
    pub fn wrap(&mut self, msg: &mut Message, correlate: bool, flag: bool) -> u32 {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        if flag && !correlate {
            msg.set_delimited(true);
        } else {
            msg.push_front(Part::empty());
            if correlate {
                msg.push_front(Part::copy_from_slice(&id.to_be_bytes()));
            }
        }
        id
    }

    /// Checks a received message against the request in flight and unwraps it. `None` means
    /// discard it.
    pub fn accept(&self, from: PipeId, mut msg: Message, correlate: bool) -> Option<Message> {
        if !self.is_reply(from, &msg, correlate) {
            return None;
        }
        if msg.delimited() {
            msg.set_delimited(false);
        } else {
            if correlate {
                msg.pop_front();
            }
            msg.pop_front();
        }
        Some(msg)
    }

    /// Whether `msg` from `from` is the reply to the request in flight (without taking it).
    pub fn is_reply(&self, from: PipeId, msg: &Message, correlate: bool) -> bool {
        let Some((pipe, id)) = self.waiting else {
            return false;
        };
        let parts = msg.parts();
        if msg.delimited() {
            // The delimiter came first on the wire: a correlated reply starts with its id.
            return from == pipe && !correlate && !parts.is_empty();
        }
        let envelope = if correlate { 2 } else { 1 };
        from == pipe
            && parts.len() > envelope
            && (!correlate || parts[0][..] == id.to_be_bytes())
            && parts[envelope - 1].is_empty()
    }
}

/// The request id bytes of a correlated request, for tests.
pub fn request_id_bytes(id: u32) -> Bytes {
    Bytes::copy_from_slice(&id.to_be_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipe::{Origin, PipeState, Pipes};

    fn two_pipes() -> (PipeId, PipeId) {
        let mut pipes = Pipes::default();
        (
            pipes.insert(Origin::Connect(0), PipeState::Active),
            pipes.insert(Origin::Connect(0), PipeState::Active),
        )
    }

    #[test]
    fn request_ids_are_four_big_endian_bytes() {
        assert_eq!(&request_id_bytes(0x0102_0304)[..], &[1, 2, 3, 4]);
        assert_eq!(&request_id_bytes(0)[..], &[0, 0, 0, 0]);
    }

    #[test]
    fn wrap_adds_a_delimiter_and_the_id_when_correlating() {
        let mut s = ReqState::new(7);
        let mut m = Message::from("q");
        assert_eq!(s.wrap(&mut m, false, true), 7);
        assert_eq!(m, Message::multipart(["", "q"]));
        // The delimiter as the flag: still one part inline.
        assert!(m.delimited());
        assert_eq!(m.len(), 1);
        // To a peer that takes no flag, a part.
        let mut m = Message::from("q");
        s.wrap(&mut m, false, false);
        assert!(!m.delimited());
        assert_eq!(m.len(), 2);
        assert_eq!(m, Message::multipart(["", "q"]));
        let mut s = ReqState::new(8);
        let mut m = Message::from("q");
        assert_eq!(s.wrap(&mut m, true, true), 8);
        let mut want = Message::multipart(["", "q"]);
        want.push_front(request_id_bytes(8));
        assert_eq!(m, want);
        // The id goes first on the wire, so the delimiter is a part then.
        assert!(!m.delimited());
        // Ids wrap around.
        let mut s = ReqState::new(u32::MAX);
        assert_eq!(s.wrap(&mut Message::from("q"), true, true), u32::MAX);
        assert_eq!(s.wrap(&mut Message::from("q"), true, true), 0);
    }

    #[test]
    fn a_reply_needs_a_body_behind_the_delimiter() {
        let (a, _) = two_pipes();
        let s = ReqState {
            waiting: Some((a, 5)),
            next_id: 6,
        };
        assert!(s.is_reply(a, &Message::multipart(["", "r"]), false));
        // The delimiter alone is not a reply.
        assert!(!s.is_reply(a, &Message::multipart([""]), false));
        // The first part must be the delimiter.
        assert!(!s.is_reply(a, &Message::multipart(["x", "r"]), false));

        let mut ok = Message::multipart(["", "r"]);
        ok.push_front(request_id_bytes(5));
        assert!(s.is_reply(a, &ok, true));
        let mut bare = Message::multipart([""]);
        bare.push_front(request_id_bytes(5));
        assert!(!s.is_reply(a, &bare, true));
        let mut wrong_id = Message::multipart(["", "r"]);
        wrong_id.push_front(request_id_bytes(4));
        assert!(!s.is_reply(a, &wrong_id, true));
        let mut no_delimiter = Message::multipart(["x", "r"]);
        no_delimiter.push_front(request_id_bytes(5));
        assert!(!s.is_reply(a, &no_delimiter, true));
    }

    #[test]
    fn a_flagged_reply_is_one_without_correlation_and_with_a_body() {
        let (a, b) = two_pipes();
        let s = ReqState {
            waiting: Some((a, 5)),
            next_id: 6,
        };
        let flagged = |parts: &[&str]| {
            let mut m = Message::multipart(parts.iter().copied());
            m.set_delimited(true);
            m
        };
        assert!(s.is_reply(a, &flagged(&["r"]), false));
        assert!(!s.is_reply(b, &flagged(&["r"]), false));
        // The delimiter alone is not a reply.
        assert!(!s.is_reply(a, &flagged(&[]), false));
        // Correlating, the id comes first on the wire: a reply starting with the delimiter
        // has none, whatever follows it.
        let mut id_behind = flagged(&["", "r"]);
        id_behind.parts_mut()[0] = Part::from(request_id_bytes(5));
        assert!(!s.is_reply(a, &id_behind, true));
        assert_eq!(s.accept(a, id_behind, true), None);
        // Accepted: the flag goes, the body stays.
        let got = s.accept(a, flagged(&["r1", "r2"]), false).unwrap();
        assert!(!got.delimited());
        assert_eq!(got, Message::multipart(["r1", "r2"]));
    }

    #[test]
    fn only_the_pipe_asked_may_reply() {
        let (a, b) = two_pipes();
        let mut s = ReqState::new(0);
        assert!(!s.is_reply(a, &Message::multipart(["", "r"]), false));
        s.waiting = Some((a, 0));
        assert!(!s.is_reply(b, &Message::multipart(["", "r"]), false));
        assert_eq!(s.accept(b, Message::multipart(["", "r"]), false), None);
    }

    #[test]
    fn accept_unwraps_the_reply() {
        let (a, _) = two_pipes();
        let mut s = ReqState::new(0);
        s.waiting = Some((a, 9));
        assert_eq!(
            s.accept(a, Message::multipart(["", "r1", "r2"]), false),
            Some(Message::multipart(["r1", "r2"]))
        );
        let mut m = Message::multipart(["", "r"]);
        m.push_front(request_id_bytes(9));
        assert_eq!(s.accept(a, m, true), Some(Message::from("r")));
        assert_eq!(s.accept(a, Message::multipart([""]), false), None);
    }
}
