//! CURVE keys (Curve25519, specs 25 and 26): public keys, secret keys that wipe themselves,
//! keypairs, and the per-connection entropy CURVE draws its short-term keys and nonces from.
//!
//! Keys are accepted in the two forms libzmq accepts for its `CURVE_*KEY` options: 32 raw
//! bytes, or 40 characters of Z85 (spec 32), optionally followed by the NUL that C strings
//! carry. Secret keys are zeroed when dropped and never appear in `Debug` output; comparing
//! two of them takes the same time wherever they differ.
//!
//! Nothing here reads a global random source: generating a keypair takes the caller's
//! cryptographic RNG, and a session's CURVE mechanism seeds its own generator from
//! [`Entropy`] the driver supplies for each connection.

use std::fmt;
use std::str::FromStr;

use rand_chacha::ChaCha20Rng;
use rand_core::{CryptoRngCore, SeedableRng};
use subtle::ConstantTimeEq;
use zeroize::{Zeroize, ZeroizeOnDrop, Zeroizing};

use crate::error::ConfigError;
use crate::z85;

/// Length of every CURVE key in bytes.
pub const KEY_LEN: usize = 32;

/// Turns 32 raw bytes or 40 (or 41, NUL-terminated) Z85 characters into key bytes.
fn key_bytes(input: &[u8]) -> Result<Zeroizing<[u8; KEY_LEN]>, ConfigError> {
    let mut out = Zeroizing::new([0u8; KEY_LEN]);
    match input.len() {
        KEY_LEN => out.copy_from_slice(input),
        40 => *out = z85::decode_key(input)?,
        41 if input[40] == 0 => *out = z85::decode_key(&input[..40])?,
        len => return Err(ConfigError::KeyLength { len }),
    }
    Ok(out)
}

/// A CURVE public key. Prints as its Z85 text, the form people exchange.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CurvePublicKey([u8; KEY_LEN]);

impl CurvePublicKey {
    /// A key from its 32 bytes.
    pub const fn from_bytes(bytes: [u8; KEY_LEN]) -> Self {
        CurvePublicKey(bytes)
    }

    /// A key from 32 raw bytes or 40 Z85 characters (as libzmq's `CURVE_PUBLICKEY` and
    /// `CURVE_SERVERKEY` options take it).
    pub fn from_slice(input: &[u8]) -> Result<Self, ConfigError> {
        Ok(CurvePublicKey(*key_bytes(input)?))
    }

    /// A key from its 40-character Z85 text.
    pub fn from_z85(text: &str) -> Result<Self, ConfigError> {
        Ok(CurvePublicKey(z85::decode_key(text)?))
    }

    /// The 32 bytes.
    pub fn as_bytes(&self) -> &[u8; KEY_LEN] {
        &self.0
    }

    /// The 40-character Z85 text.
    pub fn to_z85(&self) -> String {
        z85::encode_key(&self.0)
    }

    /// True for a key of small order on Curve25519 (in any of its encodings): Diffie-Hellman
    /// with it gives an all-zero shared secret whatever our secret key is, so a box "sealed"
    /// with it is readable by anyone. libsodium (and so libzmq) refuses these keys; so do we.
    pub fn is_weak(&self) -> bool {
        // X25519 ignores the top bit of the last byte.
        let mut k = self.0;
        k[KEY_LEN - 1] &= 0x7f;
        SMALL_ORDER.contains(&k)
    }

    pub(crate) fn to_crypto(self) -> crypto_box::PublicKey {
        crypto_box::PublicKey::from(self.0)
    }
}

/// The u-coordinates of the points of small order on Curve25519, as 32 little-endian bytes
/// with the (ignored) top bit clear: 0 and 1, the two points of order 8, p-1, and the
/// non-canonical encodings p and p+1 of 0 and 1. The same list libsodium checks.
const SMALL_ORDER: [[u8; KEY_LEN]; 7] = [
    [0; KEY_LEN],
    {
        let mut k = [0; KEY_LEN];
        k[0] = 1;
        k
    },
    [
        0xe0, 0xeb, 0x7a, 0x7c, 0x3b, 0x41, 0xb8, 0xae, 0x16, 0x56, 0xe3, 0xfa, 0xf1, 0x9f, 0xc4,
        0x6a, 0xda, 0x09, 0x8d, 0xeb, 0x9c, 0x32, 0xb1, 0xfd, 0x86, 0x62, 0x05, 0x16, 0x5f, 0x49,
        0xb8, 0x00,
    ],
    [
        0x5f, 0x9c, 0x95, 0xbc, 0xa3, 0x50, 0x8c, 0x24, 0xb1, 0xd0, 0xb1, 0x55, 0x9c, 0x83, 0xef,
        0x5b, 0x04, 0x44, 0x5c, 0xc4, 0x58, 0x1c, 0x8e, 0x86, 0xd8, 0x22, 0x4e, 0xdd, 0xd0, 0x9f,
        0x11, 0x57,
    ],
    high_field(0xec),
    high_field(0xed),
    high_field(0xee),
];

/// A number near the field prime p = 2^255 - 19 (whose lowest byte is 0xed): `low` 0xec gives
/// p - 1, 0xed gives p, 0xee gives p + 1.
const fn high_field(low: u8) -> [u8; KEY_LEN] {
    let mut k = [0xff; KEY_LEN];
    k[0] = low;
    k[KEY_LEN - 1] = 0x7f;
    k
}

impl fmt::Debug for CurvePublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CurvePublicKey({})", self.to_z85())
    }
}

impl fmt::Display for CurvePublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_z85())
    }
}

impl FromStr for CurvePublicKey {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        CurvePublicKey::from_slice(s.as_bytes())
    }
}

impl From<[u8; KEY_LEN]> for CurvePublicKey {
    fn from(bytes: [u8; KEY_LEN]) -> Self {
        CurvePublicKey(bytes)
    }
}

/// A CURVE secret key. Zeroed on drop; `Debug` shows nothing of it; equality is constant-time.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct CurveSecretKey([u8; KEY_LEN]);

impl CurveSecretKey {
    /// A key from its 32 bytes.
    pub fn from_bytes(bytes: [u8; KEY_LEN]) -> Self {
        CurveSecretKey(bytes)
    }

    /// A key from 32 raw bytes or 40 Z85 characters (as libzmq's `CURVE_SECRETKEY` takes it).
    pub fn from_slice(input: &[u8]) -> Result<Self, ConfigError> {
        Ok(CurveSecretKey(*key_bytes(input)?))
    }

    /// A key from its 40-character Z85 text (nothing else: 32 raw bytes are refused here,
    /// so a mistyped key cannot pass as a binary one).
    pub fn from_z85(text: &str) -> Result<Self, ConfigError> {
        Ok(CurveSecretKey(z85::decode_key(text)?))
    }

    /// A fresh random key from the caller's cryptographic RNG.
    pub fn generate(rng: &mut impl CryptoRngCore) -> Self {
        let mut key = CurveSecretKey([0; KEY_LEN]);
        rng.fill_bytes(&mut key.0);
        key
    }

    /// The 32 secret bytes. Handle with care: copies are not wiped for you.
    pub fn expose_bytes(&self) -> &[u8; KEY_LEN] {
        &self.0
    }

    /// The Z85 text of the secret key, wiped when dropped.
    pub fn to_z85(&self) -> Zeroizing<String> {
        Zeroizing::new(z85::encode_key(&self.0))
    }

    /// The public key that belongs to this secret key (X25519 base-point multiplication).
    pub fn public_key(&self) -> CurvePublicKey {
        CurvePublicKey(self.to_crypto().public_key().to_bytes())
    }

    /// The key in `crypto_box`'s own type, for building a box. Kept short-lived: crypto_box
    /// 0.9 wipes the scalar it derives when its key drops, but not its copy of these bytes.
    pub(crate) fn to_crypto(&self) -> crypto_box::SecretKey {
        crypto_box::SecretKey::from(self.0)
    }
}

impl PartialEq for CurveSecretKey {
    fn eq(&self, other: &Self) -> bool {
        self.0.ct_eq(&other.0).into()
    }
}
impl Eq for CurveSecretKey {}

impl fmt::Debug for CurveSecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CurveSecretKey(<redacted>)")
    }
}

impl FromStr for CurveSecretKey {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        CurveSecretKey::from_slice(s.as_bytes())
    }
}

/// A long-term CURVE keypair: the secret key and the public key it derives. `Debug` shows the
/// public half only.
#[derive(Clone, PartialEq, Eq)]
pub struct CurveKeyPair {
    public: CurvePublicKey,
    secret: CurveSecretKey,
}

impl CurveKeyPair {
    /// A fresh keypair from the caller's cryptographic RNG (libzmq's `zmq_curve_keypair`,
    /// without the global RNG).
    pub fn generate(rng: &mut impl CryptoRngCore) -> Self {
        CurveKeyPair::from_secret(CurveSecretKey::generate(rng))
    }

    /// The keypair of a secret key (its public key is derived, so the two always match).
    pub fn from_secret(secret: CurveSecretKey) -> Self {
        CurveKeyPair {
            public: secret.public_key(),
            secret,
        }
    }

    /// A keypair from both halves, as a socket with separate `CURVE_PUBLICKEY` and
    /// `CURVE_SECRETKEY` options holds it; refused when they do not belong together (libzmq
    /// would only find out when the peer fails to open the vouch).
    pub fn new(public: CurvePublicKey, secret: CurveSecretKey) -> Result<Self, ConfigError> {
        if secret.public_key() != public {
            return Err(ConfigError::KeyPairMismatch);
        }
        Ok(CurveKeyPair { public, secret })
    }

    /// A keypair whose halves do not belong together, for tests of what a peer does with one.
    #[cfg(test)]
    pub(crate) fn mismatched(public: CurvePublicKey, secret: CurveSecretKey) -> Self {
        CurveKeyPair { public, secret }
    }

    /// The public key.
    pub fn public(&self) -> &CurvePublicKey {
        &self.public
    }

    /// The secret key.
    pub fn secret(&self) -> &CurveSecretKey {
        &self.secret
    }
}

impl fmt::Debug for CurveKeyPair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CurveKeyPair")
            .field("public", &self.public)
            .field("secret", &self.secret)
            .finish()
    }
}

/// A fresh keypair from the caller's cryptographic RNG. The core never reads a global random
/// source; pass `rand::rngs::OsRng` or any other `rand_core` 0.6 `CryptoRngCore`.
pub fn generate_keypair(rng: &mut impl CryptoRngCore) -> CurveKeyPair {
    CurveKeyPair::generate(rng)
}

/// Fresh randomness for one connection, from which a mechanism seeds its own generator
/// (ChaCha20). CURVE draws its short-term keypair, its cookie key and its long nonces from it.
///
/// The driver fills it from the operating system for every new connection; tests pass fixed
/// seeds to get reproducible runs. Reusing one value for two connections would reuse their
/// short-term keys, so a [`crate::Session`] takes it out of its configuration when it starts.
/// Zeroed on drop and never printed.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct Entropy([u8; 32]);

impl Entropy {
    /// Entropy from 32 random bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Entropy(bytes)
    }

    /// Entropy drawn from the caller's cryptographic RNG.
    pub fn generate(rng: &mut impl CryptoRngCore) -> Self {
        let mut e = Entropy([0; 32]);
        rng.fill_bytes(&mut e.0);
        e
    }

    /// The generator a mechanism draws from.
    pub(crate) fn rng(&self) -> ChaCha20Rng {
        ChaCha20Rng::from_seed(self.0)
    }
}

impl From<[u8; 32]> for Entropy {
    fn from(bytes: [u8; 32]) -> Self {
        Entropy(bytes)
    }
}

impl fmt::Debug for Entropy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Entropy(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_stay_out_of_debug() {
        let sk = CurveSecretKey::from_bytes([0x41; 32]);
        let kp = CurveKeyPair::from_secret(sk.clone());
        for text in [format!("{sk:?}"), format!("{kp:?}")] {
            assert!(!text.contains("AAAA") && !text.contains("65, 65"), "{text}");
            assert!(text.contains("redacted"));
        }
        assert!(!format!("{:?}", Entropy::from_bytes([7; 32])).contains('7'));
    }

    #[test]
    fn key_forms() {
        let raw = [5u8; 32];
        let z = z85::encode_key(&raw);
        assert_eq!(CurvePublicKey::from_slice(&raw).unwrap().as_bytes(), &raw);
        assert_eq!(
            CurvePublicKey::from_slice(z.as_bytes()).unwrap().as_bytes(),
            &raw
        );
        let mut nul = z.clone().into_bytes();
        nul.push(0);
        assert_eq!(CurvePublicKey::from_slice(&nul).unwrap().as_bytes(), &raw);
        // A 41st character other than NUL is not a terminator.
        let mut tail = z.clone().into_bytes();
        tail.push(b'0');
        assert_eq!(
            CurvePublicKey::from_slice(&tail),
            Err(ConfigError::KeyLength { len: 41 })
        );
        assert_eq!(
            CurvePublicKey::from_slice(&[0; 33]),
            Err(ConfigError::KeyLength { len: 33 })
        );
        assert!(matches!(
            CurveSecretKey::from_slice(&[b' '; 40]),
            Err(ConfigError::Z85(_))
        ));
        assert_eq!(z.parse::<CurvePublicKey>().unwrap().to_string(), z);
        // Secret keys compare by value (in constant time).
        let (a, b) = ([1u8; 32], [2u8; 32]);
        assert_eq!(CurveSecretKey::from_bytes(a), CurveSecretKey::from_bytes(a));
        assert_ne!(CurveSecretKey::from_bytes(a), CurveSecretKey::from_bytes(b));
    }

    #[test]
    fn small_order_keys_give_a_zero_secret_and_are_refused() {
        use curve25519_dalek::montgomery::MontgomeryPoint;
        let secrets = [[7u8; KEY_LEN], [0xa5; KEY_LEN], [1; KEY_LEN]];
        for bad in SMALL_ORDER {
            for top in [0u8, 0x80] {
                let mut k = bad;
                k[KEY_LEN - 1] |= top;
                let key = CurvePublicKey::from_bytes(k);
                assert!(key.is_weak(), "{key:?}");
                for s in secrets {
                    let shared = MontgomeryPoint(k).mul_clamped(s);
                    assert_eq!(shared.0, [0; KEY_LEN], "{key:?} is not of small order");
                }
            }
        }
        // The three near the field prime, written out here rather than taken from the list
        // under test: p - 1 = 2^255 - 20, and p and p + 1, non-canonical forms of 0 and 1.
        for low in [0xec, 0xed, 0xee] {
            let mut k = [0xffu8; KEY_LEN];
            k[0] = low;
            k[KEY_LEN - 1] = 0x7f;
            assert!(CurvePublicKey::from_bytes(k).is_weak(), "{k:02x?}");
        }
        for (i, a) in SMALL_ORDER.iter().enumerate() {
            assert!(!SMALL_ORDER[..i].contains(a), "listed twice: {a:02x?}");
        }
        // Real keys are not.
        for seed in 0..50u8 {
            let pair = CurveKeyPair::generate(&mut Entropy::from_bytes([seed; 32]).rng());
            assert!(!pair.public().is_weak());
        }
    }
}
