//! The PLAIN mechanism (spec 24): a username and password in clear, for telling apart
//! services and catching misconfigured clients on a trusted network. It protects nothing from
//! anyone who can read the traffic.
//!
//! ```text
//! client                         server
//! HELLO username password  ->
//!                          <-    WELCOME            (or ERROR: refused)
//! INITIATE properties      ->
//!                          <-    READY properties   (or ERROR)
//! ```
//!
//! The server asks its owner about the credentials after HELLO, when an authenticator is
//! attached (see [`super::AuthRequest`]); without one, any credentials pass, as in libzmq
//! without a ZAP handler. Traffic after the handshake is not transformed.

use std::fmt;

use bytes::{BufMut, Bytes};
use zeroize::Zeroizing;

use super::auth::{connection_properties, AuthSettings, Credentials};
use super::{
    peer_error, push_command, refuse, unexpected, AuthReply, AuthRequest, LocalProperties,
};
use crate::error::{ConfigError, ProtocolError, SessionError};
use crate::wire::command::Command;
use crate::wire::greeting::MechanismName;
use crate::wire::metadata::Metadata;
use crate::wire::tx::TxQueue;

/// A PLAIN side: a client with its credentials, or a server. `Debug` hides the password.
#[derive(Clone, PartialEq, Eq)]
pub struct PlainConfig(Role);

#[derive(Clone, PartialEq, Eq)]
enum Role {
    Client {
        username: Bytes,
        password: Zeroizing<Vec<u8>>,
    },
    Server,
}

impl PlainConfig {
    /// A client logging in as `username` with `password`, each at most 255 bytes (their length
    /// travels in one byte).
    pub fn client(
        username: impl AsRef<[u8]>,
        password: impl AsRef<[u8]>,
    ) -> Result<Self, ConfigError> {
        let (username, password) = (username.as_ref(), password.as_ref());
        for (field, len) in [("username", username.len()), ("password", password.len())] {
            if len > 255 {
                return Err(ConfigError::CredentialTooLong { field, len });
            }
        }
        Ok(PlainConfig(Role::Client {
            username: Bytes::copy_from_slice(username),
            password: Zeroizing::new(password.to_vec()),
        }))
    }

    /// A server.
    pub fn server() -> Self {
        PlainConfig(Role::Server)
    }

    /// True for the server side.
    pub fn is_server(&self) -> bool {
        matches!(self.0, Role::Server)
    }

    /// The client's username (None for a server).
    pub fn username(&self) -> Option<&[u8]> {
        match &self.0 {
            Role::Client { username, .. } => Some(username),
            Role::Server => None,
        }
    }
}

impl fmt::Debug for PlainConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Role::Client { username, .. } => f
                .debug_struct("PlainClient")
                .field("username", username)
                .field("password", &"<redacted>")
                .finish(),
            Role::Server => f.write_str("PlainServer"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Start,
    ExpectWelcome,
    ExpectReady,
    ExpectHello,
    AwaitAuth,
    ExpectInitiate,
    Done,
}

/// PLAIN handshake state.
pub struct PlainMechanism {
    config: PlainConfig,
    auth: AuthSettings,
    state: State,
    pending: Option<AuthRequest>,
    reply: Option<AuthReply>,
}

impl fmt::Debug for PlainMechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PlainMechanism")
            .field("config", &self.config)
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

impl PlainMechanism {
    pub(super) fn new(config: &PlainConfig, auth: AuthSettings) -> Self {
        PlainMechanism {
            config: config.clone(),
            auth,
            state: State::Start,
            pending: None,
            reply: None,
        }
    }

    pub(super) fn start(&mut self, out: &mut TxQueue) {
        match &self.config.0 {
            Role::Client { username, password } => {
                let len = 2 + username.len() + password.len();
                push_command(out, b"HELLO", len, |b| {
                    b.put_u8(username.len() as u8);
                    b.put_slice(username);
                    b.put_u8(password.len() as u8);
                    b.put_slice(password);
                });
                self.state = State::ExpectWelcome;
            }
            Role::Server => self.state = State::ExpectHello,
        }
    }

    pub(super) fn take_auth_request(&mut self) -> Option<AuthRequest> {
        self.pending.take()
    }

    pub(super) fn handle_command(
        &mut self,
        body: &Bytes,
        local: &LocalProperties,
        out: &mut TxQueue,
    ) -> Result<Option<Metadata>, SessionError> {
        let (name, data) = Command::split(body)?;
        match (self.state, &name[..]) {
            (_, b"ERROR") => Err(peer_error(body)),
            // A client greeted by a client (libzmq's greeting never says which it is).
            (State::ExpectWelcome, b"HELLO") => Err(ProtocolError::RoleMismatch.into()),
            (State::ExpectWelcome, b"WELCOME") => {
                if !data.is_empty() {
                    return Err(ProtocolError::MalformedCommand { name: "WELCOME" }.into());
                }
                send_properties(out, b"INITIATE", local);
                self.state = State::ExpectReady;
                Ok(None)
            }
            (State::ExpectReady, b"READY") => {
                let props = Metadata::decode(&data)?;
                self.state = State::Done;
                Ok(Some(connection_properties(props, None)))
            }
            (State::ExpectHello, b"HELLO") => {
                let (username, password) = parse_hello(&data)?;
                if self.auth.authenticate {
                    let credentials = Credentials::Plain { username, password };
                    self.pending = Some(self.auth.request(MechanismName::PLAIN, credentials));
                    self.state = State::AwaitAuth;
                } else {
                    push_command(out, b"WELCOME", 0, |_| {});
                    self.state = State::ExpectInitiate;
                }
                Ok(None)
            }
            (State::ExpectInitiate, b"INITIATE") => {
                let props = Metadata::decode(&data)?;
                send_properties(out, b"READY", local);
                self.state = State::Done;
                Ok(Some(connection_properties(props, self.reply.as_ref())))
            }
            _ => Err(unexpected(&name)),
        }
    }

    pub(super) fn handle_auth_reply(
        &mut self,
        reply: AuthReply,
        out: &mut TxQueue,
    ) -> Result<Option<Metadata>, SessionError> {
        if self.state != State::AwaitAuth {
            return Ok(None);
        }
        if !reply.is_allowed() {
            self.state = State::Done;
            return Err(refuse(&reply, true, out));
        }
        push_command(out, b"WELCOME", 0, |_| {});
        self.reply = Some(reply);
        self.state = State::ExpectInitiate;
        Ok(None)
    }
}

/// Queues INITIATE or READY carrying our properties.
fn send_properties(out: &mut TxQueue, name: &[u8], local: &LocalProperties) {
    let props = local.to_metadata();
    push_command(out, name, props.encoded_len(), |b| props.encode(b));
}

/// Username and password from HELLO's data: two length-prefixed strings and nothing after.
fn parse_hello(data: &Bytes) -> Result<(Bytes, Zeroizing<Vec<u8>>), ProtocolError> {
    let malformed = ProtocolError::MalformedCommand { name: "HELLO" };
    let ulen = *data.first().ok_or(malformed.clone())? as usize;
    let plen_at = 1 + ulen;
    let plen = *data.get(plen_at).ok_or(malformed.clone())? as usize;
    if data.len() != plen_at + 1 + plen {
        return Err(malformed);
    }
    Ok((
        data.slice(1..plen_at),
        Zeroizing::new(data[plen_at + 1..].to_vec()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_config_tells_its_username_and_a_server_none() {
        let client = PlainConfig::client("admin", "secret").unwrap();
        assert_eq!(client.username(), Some(&b"admin"[..]));
        assert!(!client.is_server());
        assert_eq!(PlainConfig::server().username(), None);
    }

    #[test]
    fn hello_parsing() {
        let ok = Bytes::from_static(b"\x05admin\x08password");
        let (u, p) = parse_hello(&ok).unwrap();
        assert_eq!((&u[..], &p[..]), (&b"admin"[..], &b"password"[..]));
        assert!(parse_hello(&Bytes::from_static(b"\x00\x00")).is_ok());
        for bad in [
            &b""[..],
            b"\x05admi",
            b"\x05admin",
            b"\x05admin\x02p",
            b"\x00\x00x",
        ] {
            assert!(
                parse_hello(&Bytes::copy_from_slice(bad)).is_err(),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn long_credentials_are_refused() {
        assert_eq!(
            PlainConfig::client([b'u'; 256], ""),
            Err(ConfigError::CredentialTooLong {
                field: "username",
                len: 256
            })
        );
        assert!(PlainConfig::client([b'u'; 255], [b'p'; 255]).is_ok());
        let dbg = format!("{:?}", PlainConfig::client("bob", "s3cret").unwrap());
        assert!(dbg.contains("bob") && !dbg.contains("s3cret"), "{dbg}");
    }
}
