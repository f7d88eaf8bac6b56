//! RADIO and DISH over `udp://` (spec 48, as libzmq's udp engine writes it): one message per
//! datagram, no handshake, no commands. A datagram is the group's length (one byte), the group,
//! then the body. A DISH filters by its own groups (nothing tells a RADIO what was joined over
//! udp), so a RADIO sends every message to each udp peer.

use bytes::{BufMut, Bytes, BytesMut};

use crate::message::{Message, MAX_GROUP};

/// The largest datagram a RADIO sends: libzmq reads udp into a buffer of this size, so a
/// larger one would reach a libzmq DISH cut short.
pub const MAX_DATAGRAM: usize = 8192;

/// The room a DISH reads a datagram into: the largest UDP payload, so that whatever arrives
/// is judged whole (a datagram cut to a smaller buffer would deliver a truncated body).
pub const MAX_RECEIVED: usize = 65_536;

/// Why a message cannot go out as a datagram, or a datagram is not a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DatagramError {
    /// The message is not the RADIO's wire form, `[group][body]`.
    #[error("not a group and a body")]
    NotGroupAndBody,
    /// The group is longer than 255 bytes.
    #[error("group longer than 255 bytes")]
    GroupTooLong,
    /// Group and body together exceed [`MAX_DATAGRAM`].
    #[error("message of {0} bytes does not fit a {MAX_DATAGRAM}-byte datagram")]
    TooLarge(usize),
    /// An empty datagram, or one shorter than the group length it announces.
    #[error("datagram shorter than its group")]
    Truncated,
}

/// Writes a RADIO's queued message (`[group][body]`) as one datagram.
pub fn encode(msg: &Message) -> Result<Bytes, DatagramError> {
    let [group, body] = msg.parts() else {
        return Err(DatagramError::NotGroupAndBody);
    };
    if group.len() > MAX_GROUP {
        return Err(DatagramError::GroupTooLong);
    }
    let size = 1 + group.len() + body.len();
    if size > MAX_DATAGRAM {
        return Err(DatagramError::TooLarge(size));
    }
    let mut out = BytesMut::with_capacity(size);
    out.put_u8(group.len() as u8);
    out.put_slice(group);
    out.put_slice(body);
    Ok(out.freeze())
}

/// Reads a datagram as the DISH's wire form, `[group][body]`, sharing its bytes.
pub fn decode(datagram: Bytes) -> Result<Message, DatagramError> {
    let Some(&len) = datagram.first() else {
        return Err(DatagramError::Truncated);
    };
    let end = 1 + usize::from(len);
    if datagram.len() < end {
        return Err(DatagramError::Truncated);
    }
    let group = datagram.slice(1..end);
    let body = datagram.slice(end..);
    Ok(Message::multipart([group, body]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_crosses_as_libzmq_writes_it() {
        let wire = encode(&Message::multipart(["news", "hello"])).unwrap();
        assert_eq!(&wire[..], b"\x04newshello");
        assert_eq!(decode(wire).unwrap(), Message::multipart(["news", "hello"]));
        // Empty group and empty body are both allowed.
        let wire = encode(&Message::multipart(["", ""])).unwrap();
        assert_eq!(&wire[..], b"\x00");
        assert_eq!(decode(wire).unwrap(), Message::multipart(["", ""]));
    }

    #[test]
    fn what_does_not_fit_is_refused() {
        assert_eq!(
            encode(&Message::from("one part")),
            Err(DatagramError::NotGroupAndBody)
        );
        assert_eq!(
            encode(&Message::multipart([vec![b'g'; 256], vec![]])),
            Err(DatagramError::GroupTooLong)
        );
        let fits = Message::multipart([vec![b'g'; 255], vec![0; MAX_DATAGRAM - 256]]);
        assert_eq!(encode(&fits).unwrap().len(), MAX_DATAGRAM);
        let over = Message::multipart([vec![b'g'; 255], vec![0; MAX_DATAGRAM - 255]]);
        assert_eq!(
            encode(&over),
            Err(DatagramError::TooLarge(MAX_DATAGRAM + 1))
        );
    }

    #[test]
    fn a_datagram_shorter_than_its_group_is_refused() {
        assert_eq!(decode(Bytes::new()), Err(DatagramError::Truncated));
        assert_eq!(
            decode(Bytes::from_static(b"\x05news")),
            Err(DatagramError::Truncated)
        );
        assert_eq!(
            decode(Bytes::from_static(b"\x04news")).unwrap(),
            Message::multipart(["news", ""])
        );
    }

    proptest::proptest! {
        /// Any bytes decode to a message or an error, and what decodes re-encodes to the same
        /// bytes (when it fits a datagram we send).
        #[test]
        fn decoding_is_total_and_round_trips(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..600)) {
            if let Ok(msg) = decode(Bytes::from(bytes.clone())) {
                proptest::prop_assert_eq!(&encode(&msg).unwrap()[..], &bytes[..]);
            }
        }
    }
}
