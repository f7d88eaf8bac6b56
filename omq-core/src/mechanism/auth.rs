//! The authentication hook: how a server-side mechanism asks its owner whether to let a peer
//! in, instead of deciding itself. This is ZAP (spec 27) turned sans-io.
//!
//! libzmq sends a ZAP request over an inproc socket and blocks the handshake until the handler
//! answers. Here the session emits [`crate::SessionEvent::AuthRequest`] with what ZAP would
//! carry (domain, mechanism, credentials), pauses the handshake, and resumes when its owner
//! calls [`crate::Session::handle_auth_reply`]. The owner may answer at once, or later (after
//! a database lookup on another task); the handshake timer keeps running meanwhile.
//!
//! Who is asked, as in libzmq 4.3:
//! - PLAIN server: after the client's HELLO, before WELCOME;
//! - CURVE server: after the client's INITIATE (the client's long-term key is proven), before
//!   READY;
//! - NULL, on either side: before our READY, and only when a ZAP domain is configured.
//!
//! Without an authenticator (`SessionConfig::authenticate` false) nobody is asked: PLAIN takes
//! any username and password and CURVE any client key, which is what libzmq does when no ZAP
//! handler runs. A refusal sends the peer an ERROR whose reason is the three-digit status code
//! (as libzmq does) and ends the session with [`crate::SessionError::AuthFailed`].
//!
//! An accepted reply's User-Id and metadata become properties of every message received on the
//! connection ([`crate::Message::property`]), as ZAP's do in libzmq. A `User-Id` the peer sends
//! in its own properties is dropped: only the authenticator can set it.

use std::fmt;

use bytes::Bytes;
use zeroize::Zeroizing;

use super::keys::CurvePublicKey;
use crate::wire::greeting::MechanismName;
use crate::wire::metadata::{self, Metadata};

/// What the peer presented, by mechanism.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Credentials {
    /// NULL: nothing (the decision rests on the domain and, in the socket layer, the address).
    Null,
    /// PLAIN: the username and password from the client's HELLO.
    Plain {
        /// Username (0–255 bytes).
        username: Bytes,
        /// Password (0–255 bytes). Wiped when dropped; never printed.
        password: Zeroizing<Vec<u8>>,
    },
    /// CURVE: the client's long-term public key, proven by the vouch in its INITIATE.
    Curve {
        /// The client's long-term public key.
        client_key: CurvePublicKey,
    },
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Credentials::Null => f.write_str("Null"),
            Credentials::Plain { username, .. } => f
                .debug_struct("Plain")
                .field("username", username)
                .field("password", &"<redacted>")
                .finish(),
            Credentials::Curve { client_key } => f
                .debug_struct("Curve")
                .field("client_key", client_key)
                .finish(),
        }
    }
}

/// A question for the session's owner: may this peer in? Answer with
/// [`crate::Session::handle_auth_reply`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuthRequest {
    /// The socket's ZAP domain (ZAP_DOMAIN; empty when unset).
    pub zap_domain: Bytes,
    /// The mechanism the peer is using.
    pub mechanism: MechanismName,
    /// What the peer presented.
    pub credentials: Credentials,
    /// The peer's address as the driver knows it (`127.0.0.1:41532`; empty when unknown).
    pub peer_address: String,
}

/// The owner's answer to an [`AuthRequest`], shaped like a ZAP reply (spec 27).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuthReply {
    /// ZAP status: 200 lets the peer in; 300 (temporary failure), 400 (refused) and 500
    /// (internal error) keep it out.
    pub status_code: u16,
    /// Why, in words (becomes the reason of [`crate::SessionError::AuthFailed`]).
    pub status_text: String,
    /// The authenticated identity, shown on every message as the `User-Id` property (when not
    /// empty).
    pub user_id: Bytes,
    /// Further properties shown on every message of the connection.
    pub metadata: Metadata,
}

impl AuthReply {
    /// Lets the peer in (status 200), with no User-Id.
    pub fn allow() -> Self {
        AuthReply {
            status_code: 200,
            status_text: "OK".into(),
            user_id: Bytes::new(),
            metadata: Metadata::new(),
        }
    }

    /// Keeps the peer out (status 400) for the reason given.
    pub fn deny(reason: impl Into<String>) -> Self {
        AuthReply {
            status_code: 400,
            status_text: reason.into(),
            user_id: Bytes::new(),
            metadata: Metadata::new(),
        }
    }

    /// A reply with an explicit ZAP status code.
    pub fn with_status(status_code: u16, status_text: impl Into<String>) -> Self {
        AuthReply {
            status_code,
            status_text: status_text.into(),
            user_id: Bytes::new(),
            metadata: Metadata::new(),
        }
    }

    /// Sets the User-Id.
    pub fn user_id(mut self, user_id: impl Into<Bytes>) -> Self {
        self.user_id = user_id.into();
        self
    }

    /// Adds a property for the connection's messages.
    pub fn property(mut self, name: &str, value: impl Into<Bytes>) -> Self {
        self.metadata.insert(name, value);
        self
    }

    /// True when the peer may in (a 2xx status, as libzmq reads it).
    pub fn is_allowed(&self) -> bool {
        (200..300).contains(&self.status_code)
    }

    /// The ERROR reason sent to a refused peer: the three-digit status code, as libzmq sends.
    pub(crate) fn error_reason(&self) -> Bytes {
        let code = if (100..1000).contains(&self.status_code) {
            self.status_code
        } else {
            500
        };
        Bytes::from(code.to_string())
    }

    /// The reason for [`crate::SessionError::AuthFailed`].
    pub(crate) fn failure_reason(&self) -> String {
        if self.status_text.is_empty() {
            format!("status {}", self.status_code)
        } else {
            format!("{} ({})", self.status_text, self.status_code)
        }
    }
}

/// Who to ask, from the session's configuration.
#[derive(Debug, Clone, Default)]
pub(crate) struct AuthSettings {
    /// An authenticator is attached.
    pub(crate) authenticate: bool,
    /// ZAP_DOMAIN.
    pub(crate) zap_domain: Bytes,
    /// The peer's address, for the authenticator.
    pub(crate) peer_address: String,
}

impl AuthSettings {
    pub(crate) fn request(
        &self,
        mechanism: MechanismName,
        credentials: Credentials,
    ) -> AuthRequest {
        AuthRequest {
            zap_domain: self.zap_domain.clone(),
            mechanism,
            credentials,
            peer_address: self.peer_address.clone(),
        }
    }
}

/// The properties a connection's messages carry: the peer's own, without any `User-Id` it
/// claimed, then what the authenticator added (its metadata, and its User-Id when not empty).
pub(crate) fn connection_properties(peer: Metadata, auth: Option<&AuthReply>) -> Metadata {
    let mut props = peer;
    props.retain(|name| !name.eq_ignore_ascii_case(metadata::USER_ID));
    if let Some(reply) = auth {
        props.extend_from(&reply.metadata);
        if !reply.user_id.is_empty() {
            props.insert(metadata::USER_ID, reply.user_id.clone());
        }
    }
    props
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn password_is_not_printed() {
        let c = Credentials::Plain {
            username: Bytes::from_static(b"admin"),
            password: Zeroizing::new(b"hunter2".to_vec()),
        };
        let s = format!("{c:?}");
        assert!(s.contains("admin") && !s.contains("hunter2"), "{s}");
    }

    #[test]
    fn only_the_authenticator_sets_user_id() {
        let mut peer = Metadata::new();
        peer.insert("Socket-Type", Bytes::from_static(b"DEALER"));
        peer.insert("user-id", Bytes::from_static(b"root"));
        let p = connection_properties(peer.clone(), None);
        assert_eq!(p.get("User-Id"), None);
        assert_eq!(p.get("Socket-Type"), Some(&b"DEALER"[..]));
        let reply = AuthReply::allow()
            .user_id("alice")
            .property("X-Role", "admin");
        let p = connection_properties(peer, Some(&reply));
        assert_eq!(p.get("User-Id"), Some(&b"alice"[..]));
        assert_eq!(p.get("x-role"), Some(&b"admin"[..]));
    }

    #[test]
    fn error_reason_is_the_status_code() {
        assert_eq!(&AuthReply::deny("no").error_reason()[..], b"400");
        assert_eq!(&AuthReply::with_status(7, "").error_reason()[..], b"500");
        assert!(!AuthReply::with_status(300, "later").is_allowed());
        assert!(AuthReply::allow().is_allowed());
    }
}

/// Decides who may connect to a server socket (PLAIN, CURVE, or NULL with a ZAP domain), in
/// place of libzmq's ZAP handler. Called with the peer's credentials; its reply's User-Id and
/// metadata reach every message from that peer. It runs inside the connection's handling, so
/// it should answer quickly; an application that must consult something slow can answer from
/// a cache it keeps warm.
pub trait Authenticator: Send + Sync + 'static {
    /// Decides on one peer.
    fn authenticate(&self, request: &AuthRequest) -> AuthReply;
}

impl<F> Authenticator for F
where
    F: Fn(&AuthRequest) -> AuthReply + Send + Sync + 'static,
{
    fn authenticate(&self, request: &AuthRequest) -> AuthReply {
        self(request)
    }
}

/// An authenticator that admits exactly the CURVE clients whose public keys it lists (and
/// every PLAIN or NULL peer it is asked about is refused).
#[derive(Debug, Clone, Default)]
pub struct CurveAllowList {
    keys: Vec<[u8; 32]>,
}

impl CurveAllowList {
    /// An allow-list of raw 32-byte public keys.
    pub fn new(keys: impl IntoIterator<Item = [u8; 32]>) -> Self {
        CurveAllowList {
            keys: keys.into_iter().collect(),
        }
    }
}

impl Authenticator for CurveAllowList {
    fn authenticate(&self, request: &AuthRequest) -> AuthReply {
        match &request.credentials {
            Credentials::Curve { client_key } if self.keys.contains(client_key.as_bytes()) => {
                AuthReply::allow()
            }
            _ => AuthReply::deny("client key not allowed"),
        }
    }
}
