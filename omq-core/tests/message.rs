//! The message API as users see it: every way to make a part gives the same bytes, whatever
//! storage it picks; envelopes are pushed and popped at the front; routing ids and groups
//! travel beside the parts and do not take part in equality.

use std::sync::Arc;

use bytes::Bytes;
use omq_core::message::{Message, Part, MAX_GROUP};
use omq_core::wire::metadata::Metadata;

/// Sizes on both sides of every storage boundary (inline, copied, shared).
const SIZES: [usize; 9] = [0, 1, 29, 30, 31, 512, 513, 8191, 70_000];

fn bytes(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + n) as u8).collect()
}

#[test]
fn every_constructor_keeps_the_bytes() {
    for n in SIZES {
        let v = bytes(n);
        let parts = [
            Part::copy_from_slice(&v),
            Part::from(v.clone()),
            Part::from(&v[..]),
            Part::from(Bytes::from(v.clone())),
            Part::from(&Bytes::from(v.clone())),
        ];
        for (k, p) in parts.iter().enumerate() {
            assert_eq!(p.as_slice(), &v[..], "constructor {k}, {n} bytes");
            assert_eq!(p.as_ref(), &v[..]);
            assert_eq!(&p[..], &v[..]);
            assert_eq!(p.len(), n);
            assert_eq!(p.to_bytes(), Bytes::from(v.clone()));
            assert!(*p == v[..]);
            assert_eq!(p, &parts[0]);
        }
    }
    // Fixed-size arrays, by value and by reference, and text.
    assert_eq!(Part::from([1u8, 2, 3]).as_slice(), &[1, 2, 3]);
    assert_eq!(Part::from(&[4u8, 5]).as_slice(), &[4, 5]);
    assert_eq!(Part::from([9u8; 40]).as_slice(), &[9u8; 40][..]);
    assert_eq!(Part::from("text").as_slice(), b"text");
    assert_eq!(Part::from(String::from("a string")).as_slice(), b"a string");
    assert!(Part::default().is_empty());
    assert!(Part::empty().is_empty());
    assert_ne!(Part::from("a"), Part::from("b"));
}

#[test]
fn large_parts_share_their_buffer_and_small_ones_do_not() {
    let big = Bytes::from(bytes(70_000));
    let p = Part::from(big.clone());
    let shared = p.shared().expect("a large part is shared");
    assert_eq!(shared.as_ptr(), big.as_ptr(), "no copy");
    assert_eq!(p.to_bytes().as_ptr(), big.as_ptr());
    assert!(
        Part::from("small").shared().is_none(),
        "small parts are inline"
    );
}

#[test]
fn messages_are_built_and_taken_apart_at_the_front() {
    let mut m = Message::new();
    assert!(m.is_empty());
    assert_eq!(m.pop_front(), None);
    m.push("body");
    m.push_front("");
    m.push_front("id");
    assert_eq!(m.len(), 3);
    assert!(!m.is_empty());
    assert_eq!(m.byte_len(), 6);
    assert_eq!(m.get(0).unwrap().as_slice(), b"id");
    assert_eq!(m.get(1).unwrap().as_slice(), b"");
    assert_eq!(m.get(3), None);
    assert_eq!(m.pop_front().unwrap().as_slice(), b"id");
    assert_eq!(m, Message::multipart(["", "body"]));
    let collected: Message = ["", "body"].into_iter().collect();
    assert_eq!(m, collected);
    let parts: Vec<Part> = m.clone().into_parts().collect();
    assert_eq!(parts, m.parts());
    assert_eq!(Message::from("one"), Message::multipart(["one"]));
    assert_ne!(Message::from("one"), Message::multipart(["one", ""]));
}

#[test]
fn routing_ids_groups_and_metadata_travel_beside_the_parts() {
    let mut m = Message::from("x").with_routing_id(7).with_group("news");
    assert_eq!(m.routing_id(), Some(7));
    assert_eq!(m.group(), Some(&b"news"[..]));
    // Neither takes part in equality.
    assert_eq!(m, Message::from("x"));
    m.set_routing_id(0);
    assert_eq!(m.routing_id(), None, "0 clears it");
    m.set_group(Bytes::new());
    assert_eq!(m.group(), None, "an empty group clears it");
    let g = vec![b'g'; MAX_GROUP];
    m.set_group(g.clone());
    assert_eq!(m.group(), Some(&g[..]));

    assert!(m.metadata().is_none());
    assert_eq!(m.property("Socket-Type"), None);
    let mut meta = Metadata::new();
    meta.insert("Socket-Type", "DEALER");
    let meta = Arc::new(meta);
    m.set_metadata(Some(meta.clone()));
    assert_eq!(m.property("Socket-Type"), Some(&b"DEALER"[..]));
    assert!(Arc::ptr_eq(m.shared_metadata().unwrap(), &meta));
    assert_eq!(
        m.metadata().unwrap().get("Socket-Type"),
        Some(&b"DEALER"[..])
    );
}
