//! What a peer sends first, for tests that feed a session by hand.

use bytes::{Bytes, BytesMut};
use omq_core::wire::command::Command;
use omq_core::wire::frame::encode_header;
use omq_core::wire::greeting::{Greeting, MechanismName};
use omq_core::wire::metadata::Metadata;

/// A NULL peer's greeting and READY for a socket of type `socket_type` (its name on the wire).
pub(crate) fn null_handshake(socket_type: &'static [u8]) -> Vec<u8> {
    let mut input = Greeting::ours(MechanismName::NULL, false).encode().to_vec();
    let mut m = Metadata::new();
    m.insert("Socket-Type", Bytes::from_static(socket_type));
    let ready = Command::Ready(m).to_bytes();
    let mut hdr = BytesMut::new();
    encode_header(&mut hdr, false, true, ready.len());
    input.extend_from_slice(&hdr);
    input.extend_from_slice(&ready);
    input
}
