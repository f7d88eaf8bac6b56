//! The 64-byte greeting: `check_prefix` on every prefix of arbitrary bytes, and `decode`.
//!
//! Invariants: no panic; refusal is monotone (once a prefix is refused, every longer prefix
//! is refused with the same error); `decode` accepts exactly what `check_prefix` accepts; a
//! decoded greeting re-encodes to the fields it was read from.
#![no_main]

use libfuzzer_sys::fuzz_target;
use omq_core::wire::greeting::{Greeting, GREETING_LEN};

fuzz_target!(|data: &[u8]| {
    let _budget = omq_fuzz::alloc::budget(4096);
    let n = data.len().min(GREETING_LEN);
    let mut first_err = None;
    for k in 0..=n {
        let r = Greeting::check_prefix(&data[..k]);
        match (&first_err, r) {
            (None, Ok(())) => {}
            (None, Err(e)) => first_err = Some(e),
            (Some(prev), r) => assert_eq!(r.as_ref(), Err(prev), "refusal is monotone"),
        }
    }
    if data.len() < GREETING_LEN {
        return;
    }
    let mut g = [0u8; GREETING_LEN];
    g.copy_from_slice(&data[..GREETING_LEN]);
    let decoded = Greeting::decode(&g);
    assert_eq!(decoded.is_ok(), first_err.is_none());
    let Ok(greeting) = decoded else { return };
    assert_eq!(greeting.major, g[10]);
    assert!(greeting.major >= 3);
    assert_eq!(greeting.minor, g[11]);
    assert_eq!(&greeting.mechanism.as_field()[..], &g[12..32]);
    assert_eq!(greeting.as_server, g[32] != 0);
    assert_eq!(greeting.is_zmtp31(), g[10] > 3 || g[11] >= 1);
    let _ = greeting.mechanism.display();
    let again = greeting.encode();
    assert_eq!(
        Greeting::decode(&again),
        Ok(greeting),
        "encode/decode round trip"
    );
    assert_eq!(&again[10..32], &g[10..32]);
});
