//! Z85 (spec 32) and CURVE keys against known answers: the spec's test case and the four
//! CurveZMQ reference keys libzmq and pyzmq test with.

mod security_support;

use omq_core::error::ConfigError;
use omq_core::mechanism::{
    generate_keypair, CurveKeyPair, CurvePublicKey, CurveSecretKey, MechanismConfig,
};
use omq_core::z85::{self, Z85Error};
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;
use security_support::*;

#[test]
fn spec_32_test_case() {
    let bin = [0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B];
    assert_eq!(z85::encode(&bin).unwrap(), "HelloWorld");
    assert_eq!(z85::decode("HelloWorld").unwrap(), bin);
}

#[test]
fn reference_keys_encode_and_decode() {
    for (text, bytes) in [
        (CLIENT_PUBLIC, CLIENT_PUBLIC_BYTES),
        (CLIENT_SECRET, CLIENT_SECRET_BYTES),
        (SERVER_PUBLIC, SERVER_PUBLIC_BYTES),
        (SERVER_SECRET, SERVER_SECRET_BYTES),
    ] {
        assert_eq!(z85::encode_key(&bytes), text);
        assert_eq!(z85::decode_key(text).unwrap(), bytes);
        assert_eq!(z85::decode(text).unwrap(), bytes);
    }
}

#[test]
fn reference_secret_keys_derive_their_public_keys() {
    let client = CurveSecretKey::from_z85(CLIENT_SECRET).unwrap();
    assert_eq!(client.public_key().to_z85(), CLIENT_PUBLIC);
    let server = CurveSecretKey::from_slice(&SERVER_SECRET_BYTES).unwrap();
    assert_eq!(server.public_key().as_bytes(), &SERVER_PUBLIC_BYTES);
    let pair = CurveKeyPair::new(
        CurvePublicKey::from_z85(SERVER_PUBLIC).unwrap(),
        server.clone(),
    )
    .unwrap();
    assert_eq!(pair.secret(), &server);
    assert_eq!(
        CurveKeyPair::new(CurvePublicKey::from_z85(CLIENT_PUBLIC).unwrap(), server),
        Err(ConfigError::KeyPairMismatch)
    );
}

#[test]
fn keys_are_accepted_raw_or_as_z85_and_nothing_else() {
    let raw = CurvePublicKey::from_slice(&SERVER_PUBLIC_BYTES).unwrap();
    let text = CurvePublicKey::from_slice(SERVER_PUBLIC.as_bytes()).unwrap();
    let c_string = CurvePublicKey::from_slice(format!("{SERVER_PUBLIC}\0").as_bytes()).unwrap();
    let parsed: CurvePublicKey = SERVER_PUBLIC.parse().unwrap();
    assert!(raw == text && text == c_string && c_string == parsed);
    assert_eq!(raw.to_string(), SERVER_PUBLIC);
    for len in [0, 31, 33, 39, 42] {
        assert_eq!(
            CurvePublicKey::from_slice(&vec![b'0'; len]),
            Err(ConfigError::KeyLength { len })
        );
    }
    assert_eq!(
        CurveSecretKey::from_z85("JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh\""),
        Err(ConfigError::Z85(Z85Error::BadCharacter {
            byte: b'"',
            at: 39
        }))
    );
}

#[test]
fn secrets_never_reach_debug_output() {
    let secret = CurveSecretKey::from_z85(CLIENT_SECRET).unwrap();
    let config = MechanismConfig::curve_client(server_public(), client_keys());
    let plain = MechanismConfig::plain_client("admin", "correct horse").unwrap();
    for text in [
        format!("{secret:?}"),
        format!("{:?}", client_keys()),
        format!("{config:?}"),
        format!("{plain:?}"),
    ] {
        assert!(!text.contains(CLIENT_SECRET), "{text}");
        assert!(!text.contains("123"), "{text}"); // 0x7B, the first secret byte
        assert!(!text.contains("correct horse"), "{text}");
    }
    assert!(format!("{config:?}").contains(SERVER_PUBLIC));
    assert_eq!(secret.to_z85().as_str(), CLIENT_SECRET);
}

#[test]
fn keypairs_come_from_the_callers_rng() {
    let a = generate_keypair(&mut ChaCha20Rng::from_seed([1; 32]));
    let b = generate_keypair(&mut ChaCha20Rng::from_seed([1; 32]));
    let c = generate_keypair(&mut ChaCha20Rng::from_seed([2; 32]));
    assert_eq!(a, b, "same seed, same keys: nothing else is consulted");
    assert_ne!(a.public(), c.public());
    assert_eq!(a.secret().public_key(), *a.public());
}
