//! `Command::decode` on arbitrary bodies, and round trips both ways.
//!
//! Invariants: no panic; whatever decodes re-encodes to exactly the bytes it came from, with
//! `encoded_len` equal to that length; a command built from the input (any variant with an
//! encoder) decodes back to itself (an ERROR reason longer than 255 bytes to its first 255).
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use omq_core::wire::command::Command;
use omq_core::wire::metadata::Metadata;

#[derive(Debug, Arbitrary)]
enum Spec {
    Ready(Vec<(u8, Vec<u8>)>),
    Error(Vec<u8>),
    Subscribe(Vec<u8>),
    Cancel(Vec<u8>),
    Ping(u16, Vec<u8>),
    Pong(Vec<u8>),
    Join(Vec<u8>),
    Leave(Vec<u8>),
    Other(Vec<u8>, Vec<u8>),
}

const NAME_CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.+";
const KNOWN: [&[u8]; 8] = [
    b"READY",
    b"ERROR",
    b"SUBSCRIBE",
    b"CANCEL",
    b"PING",
    b"PONG",
    b"JOIN",
    b"LEAVE",
];

fn build(spec: Spec) -> Option<(Command, Command)> {
    let b = Bytes::from;
    let cmd = match spec {
        Spec::Ready(props) => {
            let mut m = Metadata::new();
            for (n, v) in props {
                // A valid property name from the byte: 1..=4 characters.
                let len = 1 + (n as usize % 4);
                let name: String = (0..len)
                    .map(|i| NAME_CHARS[(n as usize * 7 + i * 13) % NAME_CHARS.len()] as char)
                    .collect();
                m.insert(&name, b(v));
            }
            Command::Ready(m)
        }
        Spec::Error(r) => {
            let cmd = Command::Error { reason: b(r) };
            let Command::Error { reason } = &cmd else {
                unreachable!()
            };
            let cut = Command::Error {
                reason: reason.slice(..reason.len().min(255)),
            };
            return Some((cmd, cut));
        }
        Spec::Subscribe(t) => Command::Subscribe(b(t)),
        Spec::Cancel(t) => Command::Cancel(b(t)),
        Spec::Ping(ttl, c) => Command::Ping {
            ttl_deciseconds: ttl,
            context: b(c),
        },
        Spec::Pong(c) => Command::Pong { context: b(c) },
        Spec::Join(g) => Command::Join(b(g)),
        Spec::Leave(g) => Command::Leave(b(g)),
        Spec::Other(name, data) => {
            if name.is_empty() || name.len() > 255 || KNOWN.contains(&&name[..]) {
                return None;
            }
            Command::Other {
                name: b(name),
                data: b(data),
            }
        }
    };
    Some((cmd.clone(), cmd))
}

fuzz_target!(|data: &[u8]| {
    // Decoding arbitrary bytes: a small multiple of the input.
    let budget = omq_fuzz::alloc::budget(16 * data.len() + 4096);
    let body = Bytes::copy_from_slice(data);
    if let Ok(cmd) = Command::decode(&body) {
        assert_eq!(cmd.encoded_len(), body.len());
        assert_eq!(
            cmd.to_bytes(),
            body,
            "decode then encode gives the same bytes"
        );
        assert_eq!(cmd.name(), &body[1..1 + body[0] as usize]);
    }
    if let Ok((name, rest)) = Command::split(&body) {
        assert!(!name.is_empty());
        assert_eq!(1 + name.len() + rest.len(), body.len());
    }

    drop(budget);

    // Structured values built from the input: `arbitrary` turns one byte into a vector element
    // (and then an entry), so this side only guards against allocations sized from a claim.
    let _budget = omq_fuzz::alloc::budget(1024 * data.len() + (64 << 10));
    let mut u = Unstructured::new(data);
    let Ok(spec) = Spec::arbitrary(&mut u) else {
        return;
    };
    let Some((cmd, expected)) = build(spec) else {
        return;
    };
    let bytes = cmd.to_bytes();
    assert_eq!(bytes.len(), cmd.encoded_len());
    assert_eq!(
        Command::decode(&bytes).as_ref(),
        Ok(&expected),
        "encode then decode"
    );
});
