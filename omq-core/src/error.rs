//! Errors, grouped by cause: the peer broke the protocol, the two sockets cannot talk to each
//! other, a local limit was hit, a timer ran out, or the caller misused the API.
//!
//! A session error is fatal and sticky (the connection is over and the session keeps saying
//! why); a [`UsageError`] is not, and leaves the session as it was.

use std::fmt;

use crate::monitor::{protocol_error as code, EventKind};
use crate::socket_type::SocketType;

/// The peer sent something ZMTP does not allow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProtocolError {
    /// The first bytes are not a ZMTP 3 greeting signature (or are a ZMTP 1.0 peer).
    #[error("peer is not speaking ZMTP (bad greeting signature)")]
    NotZmtp,
    /// The peer announced a major version below 3, which omq does not speak.
    #[error("peer speaks ZMTP {major}.x; omq needs ZMTP 3.0 or later")]
    UnsupportedVersion {
        /// The peer's major version.
        major: u8,
    },
    /// The peer's security mechanism is not ours.
    #[error("security mechanism mismatch: we use {ours}, peer uses {theirs}")]
    MechanismMismatch {
        /// Our mechanism name.
        ours: String,
        /// The peer's mechanism name (printable form).
        theirs: String,
    },
    /// Both sides claim the same server/client role in a mechanism that needs one of each.
    #[error("both peers claim the same as-server role")]
    RoleMismatch,
    /// A command frame had its MORE flag set.
    #[error("command frame with the MORE flag")]
    CommandWithMore,
    /// A command frame was empty or its name ran past its end.
    #[error("malformed command frame")]
    MalformedCommandFrame,
    /// A known command had a body its definition does not allow.
    #[error("malformed {name} command")]
    MalformedCommand {
        /// The command's name.
        name: &'static str,
    },
    /// A property list was truncated or held an invalid name.
    #[error("malformed metadata in handshake")]
    MalformedMetadata,
    /// A command that does not belong at this point of the handshake.
    #[error("unexpected {name} command during handshake")]
    UnexpectedCommand {
        /// The command's name (printable form).
        name: String,
    },
    /// A message frame arrived before the handshake finished.
    #[error("message frame before the handshake completed")]
    UnexpectedMessage,
    /// READY carried no Socket-Type property.
    #[error("peer did not say its socket type")]
    MissingSocketType,
    /// READY carried a Socket-Type omq does not know.
    #[error("unknown peer socket type {0:?}")]
    UnknownSocketType(String),
    /// The peer's Identity property is not a valid routing id (longer than 255 bytes, or
    /// starting with a zero byte, which libzmq reserves for generated ids).
    #[error("invalid peer routing id")]
    InvalidRoutingId,
    /// CURVE refused a handshake command or a traffic frame; the cause says which and why.
    #[error(transparent)]
    Curve(#[from] CurveError),
}

impl ProtocolError {
    /// libzmq's protocol error code for this error (the value of a HANDSHAKE_FAILED_PROTOCOL
    /// monitor event, `ZMQ_PROTOCOL_ERROR_ZMTP_*`).
    pub fn zmtp_code(&self) -> i64 {
        match self {
            ProtocolError::UnexpectedCommand { .. } | ProtocolError::UnexpectedMessage => {
                code::ZMTP_UNEXPECTED_COMMAND
            }
            ProtocolError::MalformedCommand { .. } | ProtocolError::MalformedCommandFrame => {
                code::ZMTP_MALFORMED_COMMAND_UNSPECIFIED
            }
            ProtocolError::MalformedMetadata
            | ProtocolError::MissingSocketType
            | ProtocolError::UnknownSocketType(_) => code::ZMTP_INVALID_METADATA,
            ProtocolError::MechanismMismatch { .. } => code::ZMTP_MECHANISM_MISMATCH,
            ProtocolError::Curve(c) => c.zmtp_code(),
            _ => code::ZMTP_UNSPECIFIED,
        }
    }
}

/// Why CURVE (specs 25 and 26) refused what the peer sent. Every one of these ends the
/// connection before anything from the peer reaches the application.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CurveError {
    /// A handshake command or MESSAGE of a size its layout does not allow (HELLO is exactly
    /// 200 bytes, WELCOME 168, INITIATE at least 257, READY at least 30, MESSAGE at least 33).
    #[error("{command} command of {len} bytes; it must be {expected}")]
    BadLength {
        /// The command's name.
        command: &'static str,
        /// The size received.
        len: usize,
        /// What the layout allows, in words ("200 bytes", "at least 257 bytes").
        expected: &'static str,
    },
    /// HELLO announced a CurveZMQ version other than 1.0.
    #[error("HELLO announces CurveZMQ version {major}.{minor}; only 1.0 exists")]
    BadVersion {
        /// Major version sent.
        major: u8,
        /// Minor version sent.
        minor: u8,
    },
    /// The HELLO signature box does not open with our long-term key: the client was given
    /// another server's public key, or the command was altered.
    #[error("HELLO signature does not open (the client holds a different server key?)")]
    HelloBox,
    /// The WELCOME box does not open: the server is not the one whose public key we hold.
    #[error("WELCOME does not open (the server's key is not the one configured)")]
    WelcomeBox,
    /// The cookie in INITIATE does not open with our cookie key, or holds other keys.
    #[error("INITIATE carries a cookie we did not issue for this connection")]
    BadCookie,
    /// The INITIATE box does not open with the short-term keys.
    #[error("INITIATE box does not open")]
    InitiateBox,
    /// The vouch in INITIATE does not open with the client's long-term key, or vouches for
    /// other short-term or server keys.
    #[error("INITIATE vouch does not prove the client's long-term key")]
    BadVouch,
    /// The READY box does not open with the short-term keys.
    #[error("READY box does not open")]
    ReadyBox,
    /// A MESSAGE box does not open: altered in transit, or not from our peer.
    #[error("MESSAGE box does not open (altered in transit?)")]
    MessageBox,
    /// A short nonce not above the last one seen: a replayed or reordered command.
    #[error("short nonce {got} is not above the last one seen ({last}): replayed or reordered")]
    NonceNotIncreasing {
        /// The nonce received.
        got: u64,
        /// The highest nonce accepted so far.
        last: u64,
    },
    /// The peer offered a public key of small order (all zeros, say): any box made with it
    /// has a shared secret everyone knows. libsodium, and so libzmq, refuses such keys too.
    #[error("the peer's {which} public key is of small order (a key anyone could open)")]
    WeakKey {
        /// Which key: "short-term" or "long-term".
        which: &'static str,
    },
    /// After the handshake, a frame that is not a MESSAGE command.
    #[error("frame after the handshake is not a MESSAGE command")]
    NotAMessage,
}

impl CurveError {
    /// libzmq's protocol error code for this CURVE failure (see [`ProtocolError::zmtp_code`]).
    pub fn zmtp_code(&self) -> i64 {
        match self {
            // The names are the five literals the CURVE mechanism reports.
            CurveError::BadLength { command, .. } => match *command {
                "HELLO" => code::ZMTP_MALFORMED_COMMAND_HELLO,
                "WELCOME" => code::ZMTP_MALFORMED_COMMAND_WELCOME,
                "INITIATE" => code::ZMTP_MALFORMED_COMMAND_INITIATE,
                "READY" => code::ZMTP_MALFORMED_COMMAND_READY,
                "MESSAGE" => code::ZMTP_MALFORMED_COMMAND_MESSAGE,
                "ERROR" => code::ZMTP_MALFORMED_COMMAND_ERROR,
                _ => code::ZMTP_MALFORMED_COMMAND_UNSPECIFIED,
            },
            CurveError::BadVersion { .. } => code::ZMTP_MALFORMED_COMMAND_HELLO,
            CurveError::NonceNotIncreasing { .. } => code::ZMTP_INVALID_SEQUENCE,
            CurveError::NotAMessage => code::ZMTP_UNEXPECTED_COMMAND,
            _ => code::ZMTP_CRYPTOGRAPHIC,
        }
    }
}

/// A session's or a mechanism's configuration cannot work. Reported by the constructors of
/// keys and credentials, and (sticky, as the session's error) by a session whose configuration
/// was found wanting when it started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// CURVE needs fresh randomness for every connection and `SessionConfig::entropy` was None.
    #[error("CURVE needs SessionConfig::entropy (fresh randomness for every connection)")]
    MissingEntropy,
    /// A CURVE key given as bytes that are neither 32 raw bytes nor 40 Z85 characters.
    #[error("a CURVE key is 32 raw bytes or 40 Z85 characters, not {len} bytes")]
    KeyLength {
        /// The length given.
        len: usize,
    },
    /// A CURVE key given as malformed Z85 text.
    #[error("a CURVE key that is not valid Z85")]
    Z85(#[from] crate::z85::Z85Error),
    /// A public key that is not the one the secret key derives.
    #[error("the CURVE public key does not belong to the secret key")]
    KeyPairMismatch,
    /// A CURVE server key of small order (all zeros, say): a client would seal its HELLO with
    /// a shared secret anyone can compute.
    #[error("the CURVE server key is of small order (no real server has it)")]
    WeakServerKey,
    /// A PLAIN username or password longer than the 255 bytes its length byte can say.
    #[error("PLAIN {field} of {len} bytes; at most 255 fit")]
    CredentialTooLong {
        /// "username" or "password".
        field: &'static str,
        /// The length given.
        len: usize,
    },
    /// A compression dictionary (COMPRESSION_DICT) that the transport cannot use.
    #[error("compression dictionary: {0}")]
    CompressionDict(&'static str),
    /// A zstd level (COMPRESSION_LEVEL) outside -7 to 4.
    #[error("compression level {0}; zstd+tcp has -7 to 4")]
    CompressionLevel(i32),
}

/// A peer on `lz4+tcp://` or `zstd+tcp://` sent a part its envelope does not allow, or one
/// whose decompression would break a limit. Each ends the connection before the part's
/// claimed size is allocated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CompressionError {
    /// A part too short for its envelope.
    #[error("compressed-transport part of {len} bytes is shorter than its {need}-byte envelope")]
    ShortPart {
        /// The part's length.
        len: usize,
        /// The envelope's length.
        need: usize,
    },
    /// The first four bytes are no sentinel of this transport (a peer on plain tcp://, or on
    /// the other compressed transport, looks like this).
    #[error("unknown sentinel {0:02x?}: is the peer on the same compressed transport?")]
    UnknownSentinel([u8; 4]),
    /// The part claims more decompressed bytes than MAXMSGSIZE leaves for its message.
    #[error("part claims {claimed} decompressed bytes; MAXMSGSIZE leaves {left} for its message")]
    OverBudget {
        /// The size claimed.
        claimed: u64,
        /// What the limit left for the message.
        left: u64,
    },
    /// The part claims more than its compressed bytes can expand to.
    #[error(
        "part claims {claimed} bytes from {wire} compressed bytes, more than the format can hold"
    )]
    Implausible {
        /// The size claimed.
        claimed: u64,
        /// The compressed bytes received.
        wire: usize,
    },
    /// An LZ4B part claiming more than one 1 GiB block.
    #[error("LZ4B part claims {0} bytes; one block holds at most 1 GiB")]
    BlockTooLarge(u64),
    /// A zstd frame without Frame_Content_Size (the receiver needs it to bound decoding).
    #[error("zstd frame without Frame_Content_Size")]
    MissingContentSize,
    /// The compressed data does not decode.
    #[error("malformed compressed part: {0}")]
    Malformed(String),
    /// The part decoded to another size than it declared.
    #[error("part declared {declared} bytes and decoded to {got}")]
    SizeMismatch {
        /// Declared size.
        declared: u64,
        /// Decoded size.
        got: u64,
    },
    /// A dictionary shipment with MORE set or inside a multipart message.
    #[error("dictionary shipped inside a multipart message")]
    DictInMultipart,
    /// A dictionary of 0 bytes or more than 8 KiB.
    #[error("dictionary of {0} bytes; 1 to 8192 are allowed")]
    DictSize(usize),
    /// A second dictionary on the same connection.
    #[error("second dictionary on one connection")]
    SecondDict,
    /// A zstd dictionary that is not a valid ZDICT blob.
    #[error("invalid zstd dictionary: {0}")]
    BadDict(String),
}

/// A local limit the peer exceeded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LimitError {
    /// A frame larger than the configured maximum message size (MAXMSGSIZE).
    #[error("frame of {size} bytes exceeds the maximum message size of {max}")]
    MessageTooLarge {
        /// Announced frame size.
        size: u64,
        /// Configured maximum.
        max: u64,
    },
    /// A multipart message with more parts than the session accepts.
    #[error("message has more than {max} parts")]
    TooManyParts {
        /// Configured maximum.
        max: usize,
    },
    /// The peer subscribed to more topics (or joined more groups) than MAX_SUBSCRIPTIONS.
    #[error("peer holds more than {max} subscriptions (MAX_SUBSCRIPTIONS)")]
    TooManySubscriptions {
        /// Configured maximum.
        max: usize,
    },
}

/// Which timer ended a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Timeout {
    /// The handshake did not finish within HANDSHAKE_IVL.
    Handshake,
    /// No traffic arrived within HEARTBEAT_TIMEOUT after our PING.
    Heartbeat,
    /// No traffic arrived within the TTL the peer announced in its PING.
    PeerTtl,
}

impl fmt::Display for Timeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Timeout::Handshake => "handshake did not complete in time",
            Timeout::Heartbeat => "peer did not answer heartbeats in time",
            Timeout::PeerTtl => "no traffic from peer within its heartbeat TTL",
        })
    }
}

/// Why a session ended. Sticky: once a session has failed it keeps this error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// The peer misbehaved.
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
    /// The two socket types cannot be connected (e.g. PUSH to PUB).
    #[error("incompatible socket types: {local} cannot talk to {peer}")]
    Incompatible {
        /// Our socket type.
        local: SocketType,
        /// The peer's socket type.
        peer: SocketType,
    },
    /// The peer sent an ERROR command.
    #[error("peer reported an error: {reason}")]
    PeerError {
        /// The reason text the peer gave.
        reason: String,
    },
    /// The peer was refused by authentication.
    #[error("authentication failed: {reason}")]
    AuthFailed {
        /// Why (status text).
        reason: String,
    },
    /// A local limit was exceeded.
    #[error(transparent)]
    Limit(#[from] LimitError),
    /// A timer ran out.
    #[error("timeout: {0}")]
    Timeout(Timeout),
    /// The session's configuration cannot work (found when it started).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A compressed transport's peer sent a part that does not decode within the limits.
    #[error("compressed transport: {0}")]
    Compression(#[from] CompressionError),
}

impl SessionError {
    /// The monitor event, and its value, for a connection that ended with this error during
    /// its handshake (or, for a CURVE failure, at any time: libzmq reports those as handshake
    /// failures even once traffic has started).
    pub fn handshake_failure(&self) -> (EventKind, i64) {
        match self {
            SessionError::AuthFailed { .. } => (EventKind::HandshakeFailedAuth, 400),
            // A server that refuses us sends ERROR with its 3-digit status code as the reason;
            // libzmq reports that as HANDSHAKE_FAILED_AUTH with the code.
            SessionError::PeerError { reason }
                if reason.len() == 3 && reason.bytes().all(|b| b.is_ascii_digit()) =>
            {
                let code = reason.parse().unwrap_or(400);
                (EventKind::HandshakeFailedAuth, code)
            }
            SessionError::Protocol(p) => (EventKind::HandshakeFailedProtocol, p.zmtp_code()),
            SessionError::Incompatible { .. } => (
                EventKind::HandshakeFailedProtocol,
                code::ZMTP_INVALID_METADATA,
            ),
            _ => (EventKind::HandshakeFailedNoDetail, 0),
        }
    }
}

/// The caller asked for something the session cannot do now. Not fatal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UsageError {
    /// The handshake has not completed yet.
    #[error("the connection is not ready yet")]
    NotReady,
    /// The session has failed or closed.
    #[error("the connection is closed")]
    Closed,
    /// A message with no parts cannot be sent.
    #[error("a message needs at least one part")]
    EmptyMessage,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bad_length(command: &'static str) -> CurveError {
        CurveError::BadLength {
            command,
            len: 0,
            expected: "",
        }
    }

    #[test]
    fn curve_errors_map_to_libzmq_codes() {
        let cases = [
            (bad_length("HELLO"), code::ZMTP_MALFORMED_COMMAND_HELLO),
            (bad_length("WELCOME"), code::ZMTP_MALFORMED_COMMAND_WELCOME),
            (
                bad_length("INITIATE"),
                code::ZMTP_MALFORMED_COMMAND_INITIATE,
            ),
            (bad_length("READY"), code::ZMTP_MALFORMED_COMMAND_READY),
            (bad_length("MESSAGE"), code::ZMTP_MALFORMED_COMMAND_MESSAGE),
            (bad_length("ERROR"), code::ZMTP_MALFORMED_COMMAND_ERROR),
            (
                bad_length("OTHER"),
                code::ZMTP_MALFORMED_COMMAND_UNSPECIFIED,
            ),
            (
                CurveError::BadVersion { major: 2, minor: 0 },
                code::ZMTP_MALFORMED_COMMAND_HELLO,
            ),
            (
                CurveError::NonceNotIncreasing { got: 1, last: 1 },
                code::ZMTP_INVALID_SEQUENCE,
            ),
            (CurveError::NotAMessage, code::ZMTP_UNEXPECTED_COMMAND),
            (CurveError::MessageBox, code::ZMTP_CRYPTOGRAPHIC),
        ];
        for (e, want) in cases {
            assert_eq!(e.zmtp_code(), want, "{e:?}");
            let p = ProtocolError::Curve(e);
            assert_eq!(p.zmtp_code(), want);
            assert_eq!(
                SessionError::Protocol(p).handshake_failure(),
                (EventKind::HandshakeFailedProtocol, want)
            );
        }
    }

    #[test]
    fn session_errors_map_to_handshake_events() {
        let cases = [
            (
                SessionError::AuthFailed {
                    reason: "no".into(),
                },
                (EventKind::HandshakeFailedAuth, 400),
            ),
            (
                SessionError::Incompatible {
                    local: SocketType::Push,
                    peer: SocketType::Pub,
                },
                (
                    EventKind::HandshakeFailedProtocol,
                    code::ZMTP_INVALID_METADATA,
                ),
            ),
            (
                ProtocolError::UnexpectedMessage.into(),
                (
                    EventKind::HandshakeFailedProtocol,
                    code::ZMTP_UNEXPECTED_COMMAND,
                ),
            ),
            (
                ProtocolError::MalformedCommandFrame.into(),
                (
                    EventKind::HandshakeFailedProtocol,
                    code::ZMTP_MALFORMED_COMMAND_UNSPECIFIED,
                ),
            ),
            (
                ProtocolError::MissingSocketType.into(),
                (
                    EventKind::HandshakeFailedProtocol,
                    code::ZMTP_INVALID_METADATA,
                ),
            ),
            (
                ProtocolError::MechanismMismatch {
                    ours: "NULL".into(),
                    theirs: "CURVE".into(),
                }
                .into(),
                (
                    EventKind::HandshakeFailedProtocol,
                    code::ZMTP_MECHANISM_MISMATCH,
                ),
            ),
            (
                ProtocolError::NotZmtp.into(),
                (EventKind::HandshakeFailedProtocol, code::ZMTP_UNSPECIFIED),
            ),
            (
                SessionError::Timeout(Timeout::Handshake),
                (EventKind::HandshakeFailedNoDetail, 0),
            ),
        ];
        for (e, want) in cases {
            assert_eq!(e.handshake_failure(), want, "{e:?}");
        }
    }

    #[test]
    fn a_refusal_from_the_server_is_an_auth_failure_with_its_code() {
        let refused = SessionError::PeerError {
            reason: "400".into(),
        };
        assert_eq!(
            refused.handshake_failure(),
            (EventKind::HandshakeFailedAuth, 400)
        );
        let other = SessionError::PeerError {
            reason: "Incompatible socket type".into(),
        };
        assert_eq!(
            other.handshake_failure(),
            (EventKind::HandshakeFailedNoDetail, 0)
        );
        // A status code is exactly three digits: three letters or two digits are a reason.
        for reason in ["abc", "40", "4000", "40x"] {
            let e = SessionError::PeerError {
                reason: reason.into(),
            };
            assert_eq!(
                e.handshake_failure(),
                (EventKind::HandshakeFailedNoDetail, 0),
                "{reason}"
            );
        }
    }

    /// An error chain printed link by link (as anyhow and eyre do) says each thing once: no
    /// error's text ends with the text of the error its `source()` gives.
    #[test]
    fn display_never_repeats_the_source() {
        let chains: Vec<Box<dyn std::error::Error>> = vec![
            Box::new(SessionError::Protocol(ProtocolError::Curve(bad_length(
                "HELLO",
            )))),
            Box::new(SessionError::Limit(LimitError::TooManyParts { max: 3 })),
            Box::new(SessionError::Config(ConfigError::Z85(
                crate::z85::Z85Error::TextLength(3),
            ))),
            Box::new(ProtocolError::Curve(bad_length("WELCOME"))),
        ];
        for e in chains {
            let mut link: Option<&dyn std::error::Error> = Some(e.as_ref());
            while let Some(err) = link {
                if let Some(src) = err.source() {
                    let (outer, inner) = (err.to_string(), src.to_string());
                    assert!(!outer.ends_with(&inner), "{outer:?} repeats {inner:?}");
                }
                link = err.source();
            }
            // And the text still says what happened.
            assert!(!e.to_string().is_empty());
        }
    }
}
