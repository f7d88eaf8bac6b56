//! A DISH's udp datagrams (`omq_core::wire::datagram`): any bytes at all.
//!
//! Invariants: no panic; a datagram is refused exactly when it is empty or shorter than the
//! group it announces; an accepted one is a group and a body that a RADIO writes back as the
//! same bytes (or refuses as too large for a datagram it may send).
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use omq_core::wire::datagram::{decode, encode, DatagramError, MAX_DATAGRAM};

fuzz_target!(|data: &[u8]| {
    let wire = Bytes::copy_from_slice(data);
    let short = data.first().is_none_or(|&len| data.len() < 1 + usize::from(len));
    match decode(wire.clone()) {
        Ok(m) => {
            assert!(!short, "a short datagram was accepted");
            assert_eq!(m.len(), 2);
            assert_eq!(m.parts()[0].len(), usize::from(data[0]));
            match encode(&m) {
                Ok(again) => assert_eq!(again, wire, "written back differently"),
                Err(e) => {
                    assert!(data.len() > MAX_DATAGRAM, "{e}");
                    assert_eq!(e, DatagramError::TooLarge(data.len()));
                }
            }
        }
        Err(e) => {
            assert!(short, "refused a well-formed datagram: {e}");
            assert_eq!(e, DatagramError::Truncated);
        }
    }
});
