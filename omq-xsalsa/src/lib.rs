//! XSalsa20-Poly1305, NaCl's `crypto_secretbox`, the cipher of every CurveZMQ box, written for
//! the shape of omq's CURVE traffic: many short messages, each sealed or opened in place.
//!
//! - **Salsa20** runs sixteen blocks at once in 512-bit registers when the CPU has AVX-512F
//!   and VL, eight in AVX2 registers when it has AVX2 (both detected at run time, no
//!   `target-cpu` flag), single blocks in SSE2 diagonals, and plain lane loops on other CPUs.
//! - **Poly1305** keeps h in base 2^64 (two words and a few bits above) and multiplies by r's
//!   two words, four 64×64→128-bit products a block, with no set-up cost, so a 64-byte message
//!   pays only for its few blocks; from 256 bytes, eight blocks at a time in AVX-512 or four
//!   in AVX2 (26-bit limbs, `vpmuludq`).
//! - **Nonce prefixes**: XSalsa20's subkey depends only on the key and the nonce's first 16
//!   bytes, which CurveZMQ fixes per direction, so [`PrefixBox`] derives it once.
//!
//! `unsafe` is confined to the SIMD intrinsics' loads and stores, the one `vpmuludq` written as
//! assembly, and the calls into AVX2 code after the CPU was seen to support it, each with a
//! SAFETY comment. Tested against NaCl's secretbox vector, RFC 8439's Poly1305 vectors, and
//! differentially against RustCrypto's `crypto_secretbox` and `poly1305` at every length up to
//! several blocks of each parallel width (tests/), and under Miri (`scripts/miri.sh`).

#![deny(unsafe_code)]

use subtle::ConstantTimeEq;
use zeroize::{Zeroize, ZeroizeOnDrop};

mod poly1305;
mod salsa;

pub use crate::poly1305::poly1305;
pub use crate::salsa::hsalsa20;

/// Tag length: a box is this much longer than what it holds.
pub const TAG_LEN: usize = 16;

/// A secretbox key (XSalsa20-Poly1305), for sealing and opening boxes in place. The key is
/// wiped when the value drops.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct SecretBox {
    key: [u32; 8],
}

impl std::fmt::Debug for SecretBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretBox(..)")
    }
}

impl SecretBox {
    /// A box with this 32-byte key.
    pub fn new(key: &[u8; 32]) -> Self {
        SecretBox {
            key: salsa::words(key),
        }
    }

    /// NaCl's `crypto_box_beforenm` from an X25519 shared secret: the key is
    /// HSalsa20(shared, 0).
    pub fn from_shared_secret(shared: &[u8; 32]) -> Self {
        let mut key = hsalsa20(shared, &[0; 16]);
        let b = SecretBox::new(&key);
        key.zeroize();
        b
    }

    /// Encrypts `data` in place under `nonce` and returns the tag (NaCl's layout puts the tag
    /// before the ciphertext).
    pub fn seal_in_place(&self, nonce: &[u8; 24], data: &mut [u8]) -> [u8; TAG_LEN] {
        let (sub, tail) = self.split(nonce);
        seal(sub, tail, data)
    }

    /// Checks `tag` over the ciphertext `data` and decrypts it in place. On false (not sealed
    /// with this key and nonce, or altered) `data` is left as it was.
    #[must_use]
    pub fn open_in_place(&self, nonce: &[u8; 24], data: &mut [u8], tag: &[u8]) -> bool {
        let (sub, tail) = self.split(nonce);
        open(sub, tail, data, tag)
    }

    /// The box for every nonce that begins with `prefix`. XSalsa20 derives its Salsa20 key
    /// from the key and the nonce's first 16 bytes (HSalsa20), so nonces sharing those bytes
    /// share that subkey and it can be derived once. CurveZMQ's MESSAGE nonces are a fixed
    /// prefix per direction followed by a counter: a connection derives two subkeys, not two
    /// per message.
    pub fn with_prefix(&self, prefix: &[u8; 16]) -> PrefixBox {
        PrefixBox {
            sub: salsa::hsalsa20_words(&self.key, prefix),
        }
    }

    /// The subkey of `nonce`'s first 16 bytes, and its last 8.
    fn split(&self, nonce: &[u8; 24]) -> ([u32; 8], [u8; 8]) {
        let mut n16 = [0u8; 16];
        n16.copy_from_slice(&nonce[..16]);
        let mut n8 = [0u8; 8];
        n8.copy_from_slice(&nonce[16..]);
        (salsa::hsalsa20_words(&self.key, &n16), n8)
    }
}

/// A [`SecretBox`] bound to the first 16 bytes of its nonces (see [`SecretBox::with_prefix`]):
/// sealing and opening take the last 8. The subkey is wiped when the value drops.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct PrefixBox {
    sub: [u32; 8],
}

impl std::fmt::Debug for PrefixBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PrefixBox(..)")
    }
}

impl PrefixBox {
    /// [`SecretBox::seal_in_place`] with the nonce `prefix ‖ tail`.
    pub fn seal_in_place(&self, tail: &[u8; 8], data: &mut [u8]) -> [u8; TAG_LEN] {
        seal(self.sub, *tail, data)
    }

    /// [`SecretBox::open_in_place`] with the nonce `prefix ‖ tail`.
    #[must_use]
    pub fn open_in_place(&self, tail: &[u8; 8], data: &mut [u8], tag: &[u8]) -> bool {
        open(self.sub, *tail, data, tag)
    }
}

/// Seals `data` under the Salsa20 subkey `sub` and the nonce's last 8 bytes. The stream's
/// first 32 bytes are the Poly1305 key; the data is encrypted from byte 32 on.
fn seal(sub: [u32; 8], tail: [u8; 8], data: &mut [u8]) -> [u8; TAG_LEN] {
    let (stream, mut poly_key) = salsa::Stream::new(sub, tail, data.len());
    stream.xor(data);
    let tag = poly1305::poly1305_words(&poly_key, data);
    poly_key.zeroize();
    tag
}

/// Opens `data` under the Salsa20 subkey `sub` and the nonce's last 8 bytes; `data` is left
/// as it was when the tag does not match.
fn open(sub: [u32; 8], tail: [u8; 8], data: &mut [u8], tag: &[u8]) -> bool {
    let (stream, mut poly_key) = salsa::Stream::new(sub, tail, data.len());
    let expected = poly1305::poly1305_words(&poly_key, data);
    poly_key.zeroize();
    if tag.len() != TAG_LEN || !tags_equal(&expected, tag) {
        return false;
    }
    stream.xor(data);
    true
}

/// Compares two tags in constant time, as two 64-bit words: `subtle` compares a byte slice
/// with one optimisation barrier per byte, a word with one.
fn tags_equal(a: &[u8; TAG_LEN], b: &[u8]) -> bool {
    let word = |t: &[u8], i: usize| u64::from_le_bytes(t[i..i + 8].try_into().expect("8 bytes"));
    bool::from(word(a, 0).ct_eq(&word(b, 0)) & word(a, 8).ct_eq(&word(b, 8)))
}
