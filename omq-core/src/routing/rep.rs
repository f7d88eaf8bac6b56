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

/// Splits a request into envelope and body; `None` when it has no delimiter.
pub fn split_envelope(msg: Message) -> Option<(Envelope, Message)> {
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
    fn no_delimiter_is_malformed() {
        assert!(split_envelope(Message::multipart(["r1", "body"])).is_none());
    }
}
