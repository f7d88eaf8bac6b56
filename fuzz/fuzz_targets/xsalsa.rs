//! omq-xsalsa's secretbox against RustCrypto's `crypto_secretbox`, differentially.
//!
//! Input: a 32-byte key, a 24-byte nonce, then the message (any length).
//!
//! Invariants: the same tag and ciphertext as `XSalsa20Poly1305`, from `SecretBox` with the
//! whole nonce and from `PrefixBox` bound to its first 16 bytes; the box opens back to the
//! message; a box with one bit flipped (chosen by the input) does not open and is left as it
//! was.
#![no_main]

use crypto_secretbox::aead::{AeadInPlace, KeyInit};
use crypto_secretbox::XSalsa20Poly1305;
use libfuzzer_sys::fuzz_target;
use omq_xsalsa::SecretBox;

fuzz_target!(|data: &[u8]| {
    if data.len() < 56 {
        return;
    }
    let key: [u8; 32] = data[..32].try_into().unwrap();
    let nonce: [u8; 24] = data[32..56].try_into().unwrap();
    let msg = &data[56..];

    let mut theirs = msg.to_vec();
    let their_tag = XSalsa20Poly1305::new((&key).into())
        .encrypt_in_place_detached((&nonce).into(), b"", &mut theirs)
        .unwrap();
    let ours = SecretBox::new(&key);
    let mut sealed = msg.to_vec();
    let tag = ours.seal_in_place(&nonce, &mut sealed);
    assert_eq!(&tag[..], their_tag.as_slice());
    assert_eq!(sealed, theirs);
    let prefixed = ours.with_prefix(nonce[..16].try_into().unwrap());
    let tail: [u8; 8] = nonce[16..].try_into().unwrap();
    let mut sealed_too = msg.to_vec();
    assert_eq!(prefixed.seal_in_place(&tail, &mut sealed_too), tag);
    assert_eq!(sealed_too, theirs);

    if !sealed.is_empty() {
        let bit = usize::from(key[0]) * 256 + usize::from(key[1]);
        let at = bit / 8 % sealed.len();
        let mut bad = sealed.clone();
        bad[at] ^= 1 << (bit % 8);
        let before = bad.clone();
        assert!(!ours.open_in_place(&nonce, &mut bad, &tag));
        assert_eq!(bad, before);
    }
    assert!(ours.open_in_place(&nonce, &mut sealed, &tag));
    assert_eq!(sealed, msg);
});
