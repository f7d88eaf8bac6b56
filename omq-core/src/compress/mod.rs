//! Compressed transports: `lz4+tcp://` and `zstd+tcp://`, as omq.rs defines them (its drafts
//! `doc/lz4-rfc.md` and `doc/zstd-rfc.md`), so omq talks to omq.rs and pyomq.
//!
//! The scheme is the contract: no property in READY, no negotiation. Greeting, handshake and
//! every command travel as over `tcp://`; after the handshake each message part travels in an
//! envelope whose first four bytes say what follows (a plain part, a compressed one, or the
//! sender's dictionary, shipped at most once per direction). Each part decodes on its own.
//!
//! A [`Codec`] is one connection's transform, kept by its session beside the security
//! mechanism: parts are compressed before the mechanism boxes them (so under CURVE the
//! compressed bytes are what is encrypted) and decompressed after it opens them. Every backend
//! gets it by running the session; none has code of its own for it.
//!
//! The receiver bounds every decompression before it starts: a part's claimed size is checked
//! against what is left of MAXMSGSIZE for its message (summed over the parts) and against the
//! most the format can expand the bytes actually received, so no buffer is ever sized by a
//! claim alone.

pub mod lz4;
pub mod train;
pub mod zstd;

use bytes::Bytes;

use crate::error::{CompressionError, ConfigError};
use crate::message::Part;

pub use train::TrainingParams;

/// Largest dictionary either transport ships (8 KiB).
pub const MAX_DICT: usize = 8192;

/// Sentinel of a part sent as it is.
pub const PLAIN_SENTINEL: [u8; 4] = [0; 4];

/// Which compressed transport a connection runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Compression {
    /// `lz4+tcp://`: LZ4 block format, raw-bytes dictionaries.
    Lz4,
    /// `zstd+tcp://`: Zstandard frames, ZDICT-format dictionaries.
    Zstd,
}

impl Compression {
    /// The endpoint scheme.
    pub fn scheme(self) -> &'static str {
        match self {
            Compression::Lz4 => "lz4+tcp",
            Compression::Zstd => "zstd+tcp",
        }
    }

    /// The transport for a scheme, if it is a compressed one.
    pub fn from_scheme(scheme: &str) -> Option<Self> {
        match scheme {
            "lz4+tcp" => Some(Compression::Lz4),
            "zstd+tcp" => Some(Compression::Zstd),
            _ => None,
        }
    }
}

/// How one connection compresses: the transport, and the socket's compression options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompressionConfig {
    /// Which transport.
    pub kind: Compression,
    /// A dictionary to ship and compress with (COMPRESSION_DICT): raw bytes for LZ4, a
    /// ZDICT blob (starting `37 A4 30 EC`) for zstd; 1 to [`MAX_DICT`] bytes.
    pub dict: Option<Bytes>,
    /// Train a dictionary from the first outgoing parts and ship it (COMPRESSION_AUTO_TRAIN).
    /// Ignored when [`CompressionConfig::dict`] is set.
    pub auto_train: bool,
    /// zstd level (COMPRESSION_LEVEL, -7 to 4; LZ4 has none).
    pub level: i32,
    /// Randomness for a trained zstd dictionary's id (the driver or socket supplies it).
    pub seed: u64,
}

impl CompressionConfig {
    /// A configuration with no dictionary, no training and the default level.
    pub fn new(kind: Compression) -> Self {
        CompressionConfig {
            kind,
            dict: None,
            auto_train: false,
            level: DEFAULT_LEVEL,
            seed: 0,
        }
    }
}

/// Default zstd level (the drafts suggest 1).
pub const DEFAULT_LEVEL: i32 = 1;

/// The zstd levels the encoder has.
pub const LEVELS: std::ops::RangeInclusive<i32> = -7..=4;

/// Checks a user dictionary for a transport; the error says what is wrong.
pub fn check_dict(kind: Compression, dict: &[u8]) -> Result<(), ConfigError> {
    if dict.is_empty() || dict.len() > MAX_DICT {
        return Err(ConfigError::CompressionDict(
            "a dictionary is 1 to 8192 bytes",
        ));
    }
    if kind == Compression::Zstd && zstd::parse_dict(dict).is_err() {
        return Err(ConfigError::CompressionDict(
            "a zstd+tcp dictionary is a ZDICT blob (magic 37 A4 30 EC, as zstd --train writes)",
        ));
    }
    Ok(())
}

/// A sender's dictionary, ready to compress with.
#[derive(Clone)]
enum SendDict {
    Lz4(Bytes),
    Zstd(Bytes, Box<zrip::Dictionary>),
}

impl std::fmt::Debug for SendDict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (kind, len) = match self {
            SendDict::Lz4(b) => ("lz4", b.len()),
            SendDict::Zstd(b, _) => ("zstd", b.len()),
        };
        write!(f, "SendDict({kind}, {len} bytes)")
    }
}

impl SendDict {
    fn new(kind: Compression, bytes: Bytes) -> Result<Self, ConfigError> {
        check_dict(kind, &bytes)?;
        Ok(match kind {
            Compression::Lz4 => SendDict::Lz4(bytes),
            Compression::Zstd => {
                let d = zstd::parse_dict(&bytes)
                    .map_err(|_| ConfigError::CompressionDict("not a valid ZDICT dictionary"))?;
                SendDict::Zstd(bytes, Box::new(d))
            }
        })
    }

    /// The body of the dictionary message on the wire.
    fn shipment(&self) -> Bytes {
        match self {
            SendDict::Lz4(b) => {
                let mut v = Vec::with_capacity(4 + b.len());
                v.extend_from_slice(&lz4::DICT_SENTINEL);
                v.extend_from_slice(b);
                Bytes::from(v)
            }
            // A ZDICT blob starts with its own magic, which is the sentinel.
            SendDict::Zstd(b, _) => b.clone(),
        }
    }
}

/// A receiver's installed dictionary.
enum RecvDict {
    Lz4(Bytes),
    Zstd(Box<zrip::Dictionary>),
}

impl std::fmt::Debug for RecvDict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecvDict::Lz4(b) => write!(f, "RecvDict(lz4, {} bytes)", b.len()),
            RecvDict::Zstd(d) => write!(f, "RecvDict(zstd, id {})", d.id()),
        }
    }
}

/// One connection's compression, both directions.
#[derive(Debug)]
pub struct Codec {
    kind: Compression,
    level: i32,
    dict: Option<SendDict>,
    /// The dictionary has gone out on this connection (at most once).
    shipped: bool,
    trainer: Option<train::Trainer>,
    seed: u64,
    recv_dict: Option<RecvDict>,
    /// Decompressed bytes of the message being received so far (the MAXMSGSIZE budget).
    spent: u64,
    /// A part with MORE has arrived and the message's last part has not.
    in_message: bool,
}

/// What an incoming wire part turned out to be.
#[derive(Debug, PartialEq, Eq)]
pub enum Decoded {
    /// A message part for the application.
    Part(Part),
    /// The peer's dictionary, now installed; nothing for the application.
    Dictionary,
}

impl Codec {
    /// The codec for a connection. A dictionary that does not suit the transport is a
    /// configuration error.
    pub fn new(config: &CompressionConfig) -> Result<Self, ConfigError> {
        if !LEVELS.contains(&config.level) {
            return Err(ConfigError::CompressionLevel(config.level));
        }
        let dict = match &config.dict {
            Some(d) => Some(SendDict::new(config.kind, d.clone())?),
            None => None,
        };
        let trainer = (config.auto_train && dict.is_none())
            .then(|| train::Trainer::new(TrainingParams::for_kind(config.kind)));
        Ok(Codec {
            kind: config.kind,
            level: config.level,
            dict,
            shipped: false,
            trainer,
            seed: config.seed,
            recv_dict: None,
            spent: 0,
            in_message: false,
        })
    }

    /// The transport.
    pub fn kind(&self) -> Compression {
        self.kind
    }

    /// Called once per outgoing message before its parts are encoded: feeds the trainer and,
    /// when a dictionary is ready and has not gone out yet, returns the single-part message
    /// that ships it (send it before the message's parts).
    pub fn start_message<'a>(&mut self, parts: impl Iterator<Item = &'a [u8]>) -> Option<Bytes> {
        if let Some(t) = &mut self.trainer {
            for p in parts {
                t.sample(p);
            }
            if t.ready() {
                let t = self.trainer.take().expect("checked");
                // Training that fails leaves the connection without a dictionary for good.
                if let Some(d) = t.train(self.kind, self.seed) {
                    self.dict = SendDict::new(self.kind, d).ok();
                }
            }
        }
        match &self.dict {
            Some(d) if !self.shipped => {
                self.shipped = true;
                Some(d.shipment())
            }
            _ => None,
        }
    }

    /// True once this side has a dictionary it compresses with.
    pub fn has_send_dict(&self) -> bool {
        self.dict.is_some()
    }

    /// The wire body for one outgoing part.
    pub fn encode_part(&self, part: &[u8]) -> Bytes {
        let encoded = match (&self.dict, self.kind) {
            (Some(SendDict::Lz4(d)), _) => lz4::encode(part, Some(d)),
            (None, Compression::Lz4) => lz4::encode(part, None),
            (Some(SendDict::Zstd(_, d)), _) => zstd::encode(part, self.level, Some(d)),
            (None, Compression::Zstd) => zstd::encode(part, self.level, None),
        };
        encoded.unwrap_or_else(|| passthrough(part))
    }

    /// Decodes one incoming wire part. `max_msg_size` is MAXMSGSIZE, applied to the
    /// decompressed size of the whole message (its parts summed).
    pub fn decode_part(
        &mut self,
        wire: Part,
        more: bool,
        max_msg_size: Option<u64>,
    ) -> Result<Decoded, CompressionError> {
        let Some(sentinel) = wire.get(..4) else {
            return Err(CompressionError::ShortPart {
                len: wire.len(),
                need: 4,
            });
        };
        let sentinel: [u8; 4] = sentinel.try_into().expect("four bytes");
        let is_dict = match self.kind {
            Compression::Lz4 => sentinel == lz4::DICT_SENTINEL,
            Compression::Zstd => sentinel == zstd::DICT_MAGIC,
        };
        if is_dict {
            self.install_dict(&wire, more)?;
            return Ok(Decoded::Dictionary);
        }
        let left = max_msg_size.map_or(u64::MAX, |m| m.saturating_sub(self.spent));
        let part = if sentinel == PLAIN_SENTINEL {
            let len = (wire.len() - 4) as u64;
            if len > left {
                return Err(CompressionError::OverBudget { claimed: len, left });
            }
            match wire.shared() {
                Some(b) => Part::from(b.slice(4..)),
                None => Part::copy_received(&wire[4..]),
            }
        } else {
            let out = match (self.kind, &self.recv_dict) {
                (Compression::Lz4, d) => {
                    let d = match d {
                        Some(RecvDict::Lz4(b)) => Some(&b[..]),
                        _ => None,
                    };
                    lz4::decode(&wire, d, left)?
                }
                (Compression::Zstd, d) => {
                    let d = match d {
                        Some(RecvDict::Zstd(d)) => Some(&**d),
                        _ => None,
                    };
                    zstd::decode(&wire, d, left)?
                }
            };
            Part::from(out)
        };
        if more {
            self.spent += part.len() as u64;
            self.in_message = true;
        } else {
            self.spent = 0;
            self.in_message = false;
        }
        Ok(Decoded::Part(part))
    }

    fn install_dict(&mut self, wire: &[u8], more: bool) -> Result<(), CompressionError> {
        if more || self.in_message {
            return Err(CompressionError::DictInMultipart);
        }
        if self.recv_dict.is_some() {
            return Err(CompressionError::SecondDict);
        }
        self.recv_dict = Some(match self.kind {
            Compression::Lz4 => {
                let d = &wire[4..];
                if d.is_empty() || d.len() > MAX_DICT {
                    return Err(CompressionError::DictSize(d.len()));
                }
                RecvDict::Lz4(Bytes::copy_from_slice(d))
            }
            Compression::Zstd => {
                if wire.len() > MAX_DICT {
                    return Err(CompressionError::DictSize(wire.len()));
                }
                let d =
                    zstd::parse_dict(wire).map_err(|e| CompressionError::BadDict(e.to_string()))?;
                RecvDict::Zstd(Box::new(d))
            }
        });
        Ok(())
    }

    /// The largest wire frame a receiver with MAXMSGSIZE `max` must accept: a plain part
    /// carries four more bytes than its payload, and a dictionary message up to 8 KiB
    /// whatever the limit.
    pub fn wire_limit(max: Option<u64>) -> Option<u64> {
        max.map(|m| {
            // LZ4M adds 4 bytes per 1 GiB block to the 12-byte envelope.
            let envelope = 12 + 4 * (m / lz4::BLOCK_SIZE + 1);
            m.saturating_add(envelope).max(4 + MAX_DICT as u64)
        })
    }
}

/// `00 00 00 00 | part`.
fn passthrough(part: &[u8]) -> Bytes {
    let mut v = Vec::with_capacity(4 + part.len());
    v.extend_from_slice(&PLAIN_SENTINEL);
    v.extend_from_slice(part);
    Bytes::from(v)
}

/// Refuses a claim larger than what is left of the message's budget, or larger than the
/// format can produce from `wire` bytes (so a buffer sized by the claim is never larger than a
/// fixed multiple of the bytes received).
fn check_claim(
    claimed: u64,
    left: u64,
    wire: usize,
    max_ratio: u64,
) -> Result<(), CompressionError> {
    if claimed > left {
        return Err(CompressionError::OverBudget { claimed, left });
    }
    if claimed > (wire as u64).saturating_mul(max_ratio) {
        return Err(CompressionError::Implausible { claimed, wire });
    }
    Ok(())
}
