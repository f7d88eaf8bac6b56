//! omq-xsalsa against NaCl's secretbox vector, RFC 8439's Poly1305 vectors, and RustCrypto's
//! `crypto_secretbox` and `poly1305` at every length up to beyond two 8-block strides.

use crypto_secretbox::aead::{AeadInPlace, KeyInit};
use crypto_secretbox::XSalsa20Poly1305;
use omq_xsalsa::{hsalsa20, poly1305, SecretBox};

use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn arr<const N: usize>(v: &[u8]) -> [u8; N] {
    v.try_into().unwrap()
}

/// NaCl's tests/secretbox.c and secretbox.out.
#[test]
fn nacl_secretbox_vector() {
    let key = arr::<32>(&hex(
        "1b27556473e985d462cd51197a9a46c76009549eac6474f206c4ee0844f68389",
    ));
    let nonce = arr::<24>(&hex("69696ee955b62b73cd62bda875fc73d68219e0036b7a0b37"));
    let plain = hex(
        "be075fc53c81f2d5cf141316ebeb0c7b5228c52a4c62cbd44b66849b64244ffce5ecbaaf33bd751a
         1ac728d45e6c61296cdc3c01233561f41db66cce314adb310e3be8250c46f06dceea3a7fa1348057
         e2f6556ad6b1318a024a838f21af1fde048977eb48f59ffd4924ca1c60902e52f0a089bc76897040
         e082f937763848645e0705",
    );
    let boxed = hex(
        "f3ffc7703f9400e52a7dfb4b3d3305d98e993b9f48681273c29650ba32fc76ce48332ea7164d96a4
         476fb8c531a1186ac0dfc17c98dce87b4da7f011ec48c97271d2c20f9b928fe2270d6fb863d51738
         b48eeee314a7cc8ab932164548e526ae90224368517acfeabd6bb3732bc0e9da99832b61ca01b6de
         56244a9e88d5f9b37973f622a43d14a6599b1f654cb45a74e355a5",
    );
    let b = SecretBox::new(&key);
    let mut data = plain.clone();
    let tag = b.seal_in_place(&nonce, &mut data);
    assert_eq!(&boxed[..16], &tag);
    assert_eq!(&boxed[16..], &data[..]);
    assert!(b.open_in_place(&nonce, &mut data, &tag));
    assert_eq!(data, plain);
}

/// NaCl's crypto_box_beforenm of tests/box.c's keys: HSalsa20 of the X25519 secret.
#[test]
fn nacl_beforenm_vector() {
    let shared = arr::<32>(&hex(
        "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742",
    ));
    let k = hsalsa20(&shared, &[0; 16]);
    assert_eq!(
        k.to_vec(),
        hex("1b27556473e985d462cd51197a9a46c76009549eac6474f206c4ee0844f68389")
    );
}

/// RFC 8439 §2.5.2 and Appendix A.3.
#[test]
fn rfc8439_poly1305_vectors() {
    let key = arr::<32>(&hex(
        "85d6be7857556d337f4452fe42d506a80103808afb0db2fd4abff6af4149f51b",
    ));
    assert_eq!(
        poly1305(&key, b"Cryptographic Forum Research Group").to_vec(),
        hex("a8061dc1305136c6c22b8baf0c0127a9")
    );
    // A.3 #1: all zero.
    assert_eq!(poly1305(&[0; 32], &[0; 64]), [0; 16]);
    // A.3 #5: h reaches p exactly... (r = 2, s = 0, message all ff): tag 03 00..
    let mut k = [0u8; 32];
    k[0] = 2;
    assert_eq!(
        poly1305(&k, &[0xff; 16]).to_vec(),
        hex("03000000000000000000000000000000")
    );
    // A.3 #6: r = 2, s = ff.., message 02 00..: tag 03 00..
    let mut k = [0u8; 32];
    k[0] = 2;
    k[16..].fill(0xff);
    let mut m = [0u8; 16];
    m[0] = 2;
    assert_eq!(
        poly1305(&k, &m).to_vec(),
        hex("03000000000000000000000000000000")
    );
    // A.3 #7: r = 1, message ff..ff f0ff.. 11 00..: tag 05 00..
    let mut k = [0u8; 32];
    k[0] = 1;
    let m = hex(
        "ffffffffffffffffffffffffffffffff f0ffffffffffffffffffffffffffffff
         11000000000000000000000000000000",
    );
    assert_eq!(
        poly1305(&k, &m).to_vec(),
        hex("05000000000000000000000000000000")
    );
    // A.3 #8: tag 00..
    let m = hex(
        "ffffffffffffffffffffffffffffffff fbfefefefefefefefefefefefefefefe
         01010101010101010101010101010101",
    );
    assert_eq!(poly1305(&k, &m), [0; 16]);
    // A.3 #11: r = 1 + 4·2^64, tag 13 00..
    k[8] = 4;
    let m = hex(
        "e33594d7505e43b900000000000000003394d7505e4379cd01000000000000000000000000000000
         0000000000000000",
    );
    assert_eq!(
        poly1305(&k, &m).to_vec(),
        hex("13000000000000000000000000000000")
    );
}

#[test]
fn poly1305_matches_rustcrypto() {
    use poly1305::universal_hash::KeyInit as _;
    let mut rng = ChaCha20Rng::from_seed([3; 32]);
    let mut msg = vec![0u8; 1200];
    for len in 0..1200 {
        let mut key = [0u8; 32];
        rng.fill_bytes(&mut key);
        rng.fill_bytes(&mut msg[..len]);
        if len % 7 == 0 {
            msg[..len].fill(0xff);
        }
        let theirs = poly1305::Poly1305::new((&key).into()).compute_unpadded(&msg[..len]);
        assert_eq!(poly1305(&key, &msg[..len]), theirs.as_slice(), "len {len}");
    }
}

/// The largest limbs the four-lane code can meet: r and s all ones (r clamped), messages of all
/// ones, at every length the four-lane code takes.
#[test]
fn poly1305_extremes_match_rustcrypto() {
    use poly1305::universal_hash::KeyInit as _;
    let msg = vec![0xffu8; 4200];
    for key in [[0xffu8; 32], [0u8; 32], {
        let mut k = [0xffu8; 32];
        k[16..].fill(0);
        k
    }] {
        for len in (240..4200).step_by(7) {
            let theirs = poly1305::Poly1305::new((&key).into()).compute_unpadded(&msg[..len]);
            assert_eq!(poly1305(&key, &msg[..len]), theirs.as_slice(), "len {len}");
        }
    }
}

/// Every length up to past two 8-block strides (and some long ones): the same ciphertext and
/// tag as RustCrypto, and every box opens; a flipped bit anywhere does not.
#[test]
fn secretbox_matches_rustcrypto() {
    let mut rng = ChaCha20Rng::from_seed([4; 32]);
    let lens = (0..1400).chain([4095, 4096, 4097, 16 * 1024 + 33, 65536 + 5]);
    for len in lens {
        let mut key = [0u8; 32];
        let mut nonce = [0u8; 24];
        rng.fill_bytes(&mut key);
        rng.fill_bytes(&mut nonce);
        let mut plain = vec![0u8; len];
        rng.fill_bytes(&mut plain);

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

        if len > 0 && len < 300 {
            let i = (rng.next_u32() as usize) % len;
            let mut bad = data.clone();
            bad[i] ^= 1 << (rng.next_u32() % 8);
            assert!(!ours.open_in_place(&nonce, &mut bad, &our_tag));
            let mut bad_tag = our_tag;
            bad_tag[(rng.next_u32() % 16) as usize] ^= 0x40;
            let before = data.clone();
            assert!(!ours.open_in_place(&nonce, &mut data, &bad_tag));
            assert_eq!(data, before, "a refused box is left as it was");
        }
        assert!(ours.open_in_place(&nonce, &mut data, &our_tag), "len {len}");
        assert_eq!(data, plain, "len {len}");
    }
}

/// A box bound to a nonce prefix seals and opens as RustCrypto does with the whole nonce, and
/// refuses what was sealed under another prefix or another tail.
#[test]
fn prefix_box_matches_rustcrypto() {
    let mut rng = ChaCha20Rng::from_seed([5; 32]);
    let mut key = [0u8; 32];
    rng.fill_bytes(&mut key);
    let theirs = XSalsa20Poly1305::new((&key).into());
    let ours = SecretBox::new(&key);
    let client = ours.with_prefix(b"CurveZMQMESSAGEC");
    let server = ours.with_prefix(b"CurveZMQMESSAGES");
    for (i, len) in (0..300).chain([1024, 16 * 1024 + 7]).enumerate() {
        let tail = (i as u64 * 0x0101_0101 + 1).to_be_bytes();
        let mut nonce = [0u8; 24];
        nonce[..16].copy_from_slice(b"CurveZMQMESSAGEC");
        nonce[16..].copy_from_slice(&tail);
        let mut plain = vec![0u8; len];
        rng.fill_bytes(&mut plain);

        let mut expected = plain.clone();
        let tag = theirs
            .encrypt_in_place_detached((&nonce).into(), b"", &mut expected)
            .unwrap();
        let mut data = plain.clone();
        let our_tag = client.seal_in_place(&tail, &mut data);
        assert_eq!(&our_tag[..], tag.as_slice(), "tag, len {len}");
        assert_eq!(data, expected, "ciphertext, len {len}");

        let other_tail = (i as u64 * 0x0101_0101 + 2).to_be_bytes();
        assert!(
            !server.open_in_place(&tail, &mut data, &our_tag),
            "len {len}"
        );
        assert!(
            !client.open_in_place(&other_tail, &mut data, &our_tag),
            "len {len}"
        );
        assert_eq!(data, expected, "a refused box is left as it was");
        assert!(
            client.open_in_place(&tail, &mut data, &our_tag),
            "len {len}"
        );
        assert_eq!(data, plain, "len {len}");
    }
}

#[test]
fn hsalsa20_matches_crypto_box_key_derivation() {
    // SalsaBox(pk, sk) seals like SecretBox::from_shared_secret(X25519(sk, pk)).
    use crypto_secretbox::aead::AeadInPlace as _;
    let mut rng = ChaCha20Rng::from_seed([5; 32]);
    let mut shared = [0u8; 32];
    rng.fill_bytes(&mut shared);
    let k = hsalsa20(&shared, &[0; 16]);
    let theirs = XSalsa20Poly1305::new((&k).into());
    let ours = SecretBox::from_shared_secret(&shared);
    let nonce = [7u8; 24];
    let mut a = vec![1u8; 100];
    let mut b = a.clone();
    let t1 = theirs
        .encrypt_in_place_detached((&nonce).into(), b"", &mut a)
        .unwrap();
    let t2 = ours.seal_in_place(&nonce, &mut b);
    assert_eq!((t1.as_slice(), a), (&t2[..], b));
}
