//! The NULL mechanism (spec 23): no security. Each side sends READY with its properties as
//! soon as the greetings are exchanged, and the handshake is over when the peer's READY
//! arrives. An ERROR from the peer ends it; any other command is a handshake failure.
//!
//! With an authenticator attached and a ZAP domain set, NULL asks its owner first (libzmq
//! consults ZAP for NULL only when ZAP_DOMAIN is set): READY goes out only once the owner lets
//! the peer in, and a peer READY that arrives meanwhile waits for that decision.

use bytes::Bytes;

use super::auth::{connection_properties, AuthSettings, Credentials};
use super::{peer_error, refuse, unexpected, AuthReply, AuthRequest, LocalProperties};
use crate::error::SessionError;
use crate::wire::command::Command;
use crate::wire::greeting::MechanismName;
use crate::wire::metadata::Metadata;
use crate::wire::tx::TxQueue;

/// NULL handshake state.
#[derive(Debug, Default)]
pub struct NullMechanism {
    auth: AuthSettings,
    ready_sent: bool,
    /// The question for the owner, until the session takes it.
    pending: Option<AuthRequest>,
    /// Waiting for the owner's answer.
    awaiting_reply: bool,
    /// The accepted reply, whose User-Id and metadata the connection carries.
    reply: Option<AuthReply>,
    /// The peer's READY properties, when they arrived before the owner answered.
    peer_ready: Option<Metadata>,
}

impl NullMechanism {
    /// A fresh NULL mechanism that asks nobody.
    pub fn new() -> Self {
        NullMechanism::default()
    }

    pub(super) fn with_auth(auth: AuthSettings) -> Self {
        NullMechanism {
            auth,
            ..NullMechanism::default()
        }
    }

    fn send_ready(&mut self, local: &LocalProperties, out: &mut TxQueue) {
        let ready = Command::Ready(local.to_metadata());
        out.push_frame_with(true, ready.encoded_len(), |b| ready.encode(b));
        self.ready_sent = true;
    }

    pub(super) fn start(&mut self, local: &LocalProperties, out: &mut TxQueue) {
        if self.auth.authenticate && !self.auth.zap_domain.is_empty() {
            self.pending = Some(self.auth.request(MechanismName::NULL, Credentials::Null));
            self.awaiting_reply = true;
        } else {
            self.send_ready(local, out);
        }
    }

    pub(super) fn take_auth_request(&mut self) -> Option<AuthRequest> {
        self.pending.take()
    }

    pub(super) fn handle_command(
        &mut self,
        body: &Bytes,
        _local: &LocalProperties,
        _out: &mut TxQueue,
    ) -> Result<Option<Metadata>, SessionError> {
        let (name, _) = Command::split(body)?;
        match &name[..] {
            b"READY" if self.peer_ready.is_none() => {
                let Command::Ready(props) = Command::decode(body)? else {
                    return Err(unexpected(&name));
                };
                if self.ready_sent {
                    Ok(Some(connection_properties(props, self.reply.as_ref())))
                } else {
                    self.peer_ready = Some(props);
                    Ok(None)
                }
            }
            b"ERROR" => Err(peer_error(body)),
            _ => Err(unexpected(&name)),
        }
    }

    pub(super) fn handle_auth_reply(
        &mut self,
        reply: AuthReply,
        local: &LocalProperties,
        out: &mut TxQueue,
    ) -> Result<Option<Metadata>, SessionError> {
        if !self.awaiting_reply {
            return Ok(None);
        }
        self.awaiting_reply = false;
        if !reply.is_allowed() {
            // libzmq's NULL says nothing to the peer on a temporary failure (300).
            return Err(refuse(&reply, reply.status_code != 300, out));
        }
        self.send_ready(local, out);
        self.reply = Some(reply);
        Ok(self
            .peer_ready
            .take()
            .map(|props| connection_properties(props, self.reply.as_ref())))
    }
}
