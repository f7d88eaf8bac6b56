//! The `unsafe` of omq-xsalsa (SIMD loads, stores and calls after feature detection) under
//! Miri, which checks every memory access the intrinsics make. Sized for an interpreter: one
//! length in each regime (no SIMD, the two-block AVX2 path, eight-block AVX2 Salsa20 with
//! tails, four-lane AVX2 Poly1305), each checked against RustCrypto.
//!
//! `scripts/miri.sh` runs it with AVX2 enabled for Miri
//! (`RUSTFLAGS="-C target-feature=+avx2" cargo +nightly miri test -p omq-xsalsa --test miri`);
//! under plain `cargo test` it is one more differential test.

use crypto_secretbox::aead::AeadInPlace;
use crypto_secretbox::XSalsa20Poly1305;
use omq_xsalsa::{poly1305, SecretBox};

#[test]
fn every_simd_path_matches_rustcrypto() {
    let key = [7u8; 32];
    let nonce = [9u8; 24];
    // 0: nothing; 40: blocks 0 and 1 together; 200: one-block tail; 600: an 8-block stride
    // and a partial one (the Poly1305 four-lane code from 256 bytes); with AVX-512F, 1,100: a
    // 16-block stride and a short rest, 1,700: a 16-block stride and a rest through a buffer.
    for len in [0usize, 40, 200, 600, 1100, 1700] {
        let plain: Vec<u8> = (0..len).map(|i| (i * 31 + 7) as u8).collect();
        let theirs = XSalsa20Poly1305::new((&key).into());
        let mut expected = plain.clone();
        let tag = theirs
            .encrypt_in_place_detached((&nonce).into(), b"", &mut expected)
            .unwrap();
        let ours = SecretBox::new(&key);
        let mut data = plain.clone();
        let our_tag = ours.seal_in_place(&nonce, &mut data);
        assert_eq!(&our_tag[..], tag.as_slice(), "tag, len {len}");
        assert_eq!(data, expected, "ciphertext, len {len}");
        assert!(ours.open_in_place(&nonce, &mut data, &our_tag));
        assert_eq!(data, plain);
    }
    use poly1305::universal_hash::KeyInit as _;
    let msg: Vec<u8> = (0..300).map(|i| i as u8).collect();
    let theirs = poly1305::Poly1305::new((&key).into()).compute_unpadded(&msg);
    assert_eq!(poly1305(&key, &msg), theirs.as_slice());
}
