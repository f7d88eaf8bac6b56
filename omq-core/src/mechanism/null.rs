//! The NULL mechanism (spec 23): no security. Each side sends READY with its properties as
//! soon as the greetings are exchanged, and the handshake is over when the peer's READY
//! arrives. An ERROR from the peer ends it; any other command is a handshake failure.

use bytes::Bytes;

use super::LocalProperties;
use crate::error::{ProtocolError, SessionError};
use crate::wire::command::{printable_name, Command};
use crate::wire::metadata::Metadata;
use crate::wire::tx::TxQueue;

/// NULL handshake state.
#[derive(Debug, Default)]
pub struct NullMechanism {
    ready_sent: bool,
}

impl NullMechanism {
    /// A fresh NULL mechanism.
    pub fn new() -> Self {
        NullMechanism::default()
    }

    pub(super) fn start(&mut self, local: &LocalProperties, out: &mut TxQueue) {
        let ready = Command::Ready(local.to_metadata());
        out.push_frame_with(true, ready.encoded_len(), |b| ready.encode(b));
        self.ready_sent = true;
    }

    pub(super) fn handle_command(
        &mut self,
        body: &Bytes,
        _local: &LocalProperties,
        _out: &mut TxQueue,
    ) -> Result<Option<Metadata>, SessionError> {
        match Command::decode(body)? {
            Command::Ready(props) => Ok(Some(props)),
            Command::Error { reason } => Err(SessionError::PeerError {
                reason: String::from_utf8_lossy(&reason).into_owned(),
            }),
            other => Err(ProtocolError::UnexpectedCommand {
                name: printable_name(other.name()),
            }
            .into()),
        }
    }
}
