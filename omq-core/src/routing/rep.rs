//! REP's envelope (spec 28): a request is read up to and including its first empty part (the
//! envelope: routing ids added by ROUTERs on the way, then the delimiter), the body is handed
//! to the application, and the reply goes back to the same pipe behind the same envelope.
//! A request without a delimiter is malformed and discarded.

use smallvec::SmallVec;

use crate::message::{Message, Part};
use crate::pipe::PipeId;

/// The envelope of the request being answered.
pub type Envelope = SmallVec<[Part; 2]>;

/// Where a REP socket is in its cycle.
#[derive(Debug, Default)]
pub struct RepState {
    /// The request being answered: its pipe and envelope.
    pub replying: Option<(PipeId, Envelope)>,
}

/// Splits a request into envelope and body; `None` when it has no delimiter. A request that
/// carries its delimiter as a flag (it crossed no ROUTER) has an empty envelope: the reply
/// carries the flag again ([`wrap_reply`]).
pub fn split_envelope(mut msg: Message) -> Option<(Envelope, Message)> {
    if msg.delimited() {
        msg.set_delimited(false);
        return Some((Envelope::new(), msg));
    }
    let at = msg.parts().iter().position(|p| p.is_empty())?;
    let mut envelope = Envelope::new();
    let mut body = Message::new();
    let meta = msg.shared_metadata().cloned();
    for (i, part) in msg.into_parts().enumerate() {
        if i <= at {
            envelope.push(part);
        } else {
            body.push(part);
        }
    }
    body.set_metadata(meta);
    Some((envelope, body))
}

/// The reply to a request whose envelope [`split_envelope`] took: behind that envelope, or,
/// when the envelope is the delimiter alone (an empty envelope is the flag: one taken from
/// parts always holds the delimiter) and `flag` says the peer takes it so (a REQ:
/// `Pipe::peer_flags_delimiter`), behind the delimiter flag.
pub fn wrap_reply(envelope: Envelope, msg: Message, flag: bool) -> Message {
    let delimiter_alone = envelope.iter().all(|p| p.is_empty()) && envelope.len() <= 1;
    if delimiter_alone && flag {
        let mut out = msg;
        out.set_delimited(true);
        return out;
    }
    let mut out = if envelope.is_empty() {
        Message::from(Part::empty())
    } else {
        Message::multipart(envelope)
    };
    for part in msg.into_parts() {
        out.push(part);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_at_the_first_delimiter() {
        let msg = Message::multipart(["r1", "r2", "", "body", "", "more"]);
        let (envelope, body) = split_envelope(msg).unwrap();
        let envelope: Vec<&[u8]> = envelope.iter().map(|p| &p[..]).collect();
        assert_eq!(envelope, [&b"r1"[..], b"r2", b""]);
        assert_eq!(body, Message::multipart(["body", "", "more"]));
    }

    #[test]
    fn a_delimiter_alone_is_an_empty_request() {
        let (envelope, body) = split_envelope(Message::multipart([""])).unwrap();
        assert_eq!(envelope.len(), 1);
        assert!(body.is_empty());
    }

    #[test]
    fn a_flagged_request_has_an_empty_envelope_and_its_reply_the_flag() {
        let mut request = Message::multipart(["body", ""]);
        request.set_delimited(true);
        let (envelope, body) = split_envelope(request).unwrap();
        assert!(envelope.is_empty());
        assert!(!body.delimited());
        assert_eq!(body, Message::multipart(["body", ""]));
        let reply = wrap_reply(envelope, Message::from("r"), true);
        assert!(reply.delimited());
        assert_eq!(reply.len(), 1);
        assert_eq!(reply, Message::multipart(["", "r"]));
    }

    #[test]
    fn a_reply_behind_the_delimiter_alone_takes_the_flag_and_behind_ids_the_parts() {
        let (envelope, _) = split_envelope(Message::multipart(["", "q"])).unwrap();
        let reply = wrap_reply(envelope, Message::from("r"), true);
        assert!(reply.delimited());
        assert_eq!(reply.len(), 1);
        assert_eq!(reply, Message::multipart(["", "r"]));

        let (envelope, _) = split_envelope(Message::multipart(["id", "", "q"])).unwrap();
        let reply = wrap_reply(envelope, Message::multipart(["r1", "r2"]), true);
        assert!(!reply.delimited());
        assert_eq!(reply, Message::multipart(["id", "", "r1", "r2"]));
        // An envelope of one part that is not empty is no delimiter.
        let reply = wrap_reply(
            Envelope::from_iter([Part::from("id")]),
            Message::from("r"),
            true,
        );
        assert!(!reply.delimited());
        assert_eq!(reply, Message::multipart(["id", "r"]));
    }

    #[test]
    fn a_reply_to_a_peer_that_takes_no_flag_has_the_delimiter_as_a_part() {
        let mut flagged = Message::from("q");
        flagged.set_delimited(true);
        for request in [flagged, Message::multipart(["", "q"])] {
            let (envelope, _) = split_envelope(request).unwrap();
            let reply = wrap_reply(envelope, Message::from("r"), false);
            assert!(!reply.delimited());
            assert_eq!(reply.len(), 2);
            assert_eq!(reply, Message::multipart(["", "r"]));
        }
    }

    #[test]
    fn no_delimiter_is_malformed() {
        assert!(split_envelope(Message::multipart(["r1", "body"])).is_none());
    }
}
