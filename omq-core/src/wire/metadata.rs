//! Connection metadata: the name/value properties carried by READY (and by the security
//! mechanisms' INITIATE), as in spec 23 section "Connection metadata".
//!
//! Wire form of each property: a one-byte name length, the name, a four-byte big-endian value
//! length, the value. Names are compared without regard to case, as the spec asks.

use std::fmt;

use bytes::{BufMut, Bytes, BytesMut};

use crate::error::ProtocolError;

/// Property name of the sending socket's type.
pub const SOCKET_TYPE: &str = "Socket-Type";
/// Property name of the sending socket's routing id (sent by REQ, DEALER and ROUTER).
pub const IDENTITY: &str = "Identity";
/// Property name of the peer's address (set locally by the driver, never sent on the wire).
pub const PEER_ADDRESS: &str = "Peer-Address";
/// Property name of the authenticated user (set by an authenticator, never sent on the wire).
pub const USER_ID: &str = "User-Id";

/// An ordered list of properties.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Metadata {
    props: Vec<(Box<str>, Bytes)>,
}

impl Metadata {
    /// An empty property list.
    pub fn new() -> Self {
        Metadata::default()
    }

    /// Adds a property, replacing an earlier one of the same name. Names must be 1–255
    /// characters of letters, digits and `-_.+` (checked by [`is_valid_name`]).
    pub fn insert(&mut self, name: &str, value: impl Into<Bytes>) {
        let value = value.into();
        if let Some(slot) = self
            .props
            .iter_mut()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
        {
            slot.1 = value;
        } else {
            self.props.push((name.into(), value));
        }
    }

    /// The value of a property, looked up without regard to case.
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        self.props
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| &v[..])
    }

    /// All properties in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.props.iter().map(|(n, v)| (&**n, &v[..]))
    }

    /// Number of properties.
    pub fn len(&self) -> usize {
        self.props.len()
    }

    /// True when there are no properties.
    pub fn is_empty(&self) -> bool {
        self.props.is_empty()
    }

    /// Appends the properties of `other`, replacing same-named ones (as [`Metadata::insert`]
    /// of each would, but linear in both lists: a peer may send a very long list, and looking
    /// each name up in it would be quadratic).
    pub fn extend_from(&mut self, other: &Metadata) {
        if other.props.is_empty() {
            return;
        }
        let mut slots: std::collections::HashMap<String, usize> = self
            .props
            .iter()
            .enumerate()
            .rev()
            .map(|(i, (n, _))| (n.to_ascii_lowercase(), i))
            .collect();
        for (n, v) in &other.props {
            match slots.entry(n.to_ascii_lowercase()) {
                std::collections::hash_map::Entry::Occupied(e) => {
                    self.props[*e.get()].1 = v.clone();
                }
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(self.props.len());
                    self.props.push((n.clone(), v.clone()));
                }
            }
        }
    }

    /// Keeps only the properties whose name `keep` accepts, in order (linear).
    pub fn retain(&mut self, mut keep: impl FnMut(&str) -> bool) {
        self.props.retain(|(n, _)| keep(n));
    }

    /// Number of bytes [`Metadata::encode`] writes.
    pub fn encoded_len(&self) -> usize {
        self.props
            .iter()
            .map(|(n, v)| 1 + n.len() + 4 + v.len())
            .sum()
    }

    /// Writes the properties in wire form.
    pub fn encode(&self, out: &mut BytesMut) {
        out.reserve(self.encoded_len());
        for (n, v) in &self.props {
            out.put_u8(n.len() as u8);
            out.put_slice(n.as_bytes());
            out.put_u32(v.len() as u32);
            out.put_slice(v);
        }
    }

    /// Parses properties from `data`, which must hold whole properties and nothing else.
    pub fn decode(data: &Bytes) -> Result<Metadata, ProtocolError> {
        // Count first, so the list is allocated once at its exact size: growing it by
        // doubling held up to three times the entries at once, ~24 bytes of memory per byte
        // of tiny properties received (found by the metadata fuzz target's budget).
        let mut props = Vec::with_capacity(Self::count(data));
        let mut i = 0usize;
        while i < data.len() {
            let name_len = data[i] as usize;
            i += 1;
            if name_len == 0 || data.len() - i < name_len {
                return Err(ProtocolError::MalformedMetadata);
            }
            let name = &data[i..i + name_len];
            let name = std::str::from_utf8(name).map_err(|_| ProtocolError::MalformedMetadata)?;
            if !is_valid_name(name) {
                return Err(ProtocolError::MalformedMetadata);
            }
            i += name_len;
            if data.len() - i < 4 {
                return Err(ProtocolError::MalformedMetadata);
            }
            let vlen = u32::from_be_bytes([data[i], data[i + 1], data[i + 2], data[i + 3]]);
            i += 4;
            // Spec 23: a value is at most 2^31-1 bytes.
            if vlen > i32::MAX as u32 {
                return Err(ProtocolError::MalformedMetadata);
            }
            let vlen = vlen as usize;
            if data.len() - i < vlen {
                return Err(ProtocolError::MalformedMetadata);
            }
            props.push((Box::from(name), data.slice(i..i + vlen)));
            i += vlen;
        }
        Ok(Metadata { props })
    }

    /// How many properties `data` holds, as far as its lengths are consistent (what
    /// [`Metadata::decode`] then checks in full).
    fn count(data: &[u8]) -> usize {
        let (mut i, mut n) = (0usize, 0usize);
        while i < data.len() {
            let name_len = data[i] as usize;
            let Some(vlen_at) = (i + 1 + name_len)
                .checked_add(4)
                .filter(|&e| e <= data.len())
            else {
                break;
            };
            let v = &data[vlen_at - 4..vlen_at];
            let vlen = u32::from_be_bytes([v[0], v[1], v[2], v[3]]) as usize;
            match vlen_at.checked_add(vlen) {
                Some(end) if end <= data.len() && name_len > 0 => {
                    n += 1;
                    i = end;
                }
                _ => break,
            }
        }
        n
    }
}

/// True for a property name the wire can carry: 1–255 characters of ASCII letters, digits and
/// `-`, `_`, `.`, `+`.
pub fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && name
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.' | b'+'))
}

impl fmt::Debug for Metadata {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        struct V<'a>(&'a [u8]);
        impl fmt::Debug for V<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                crate::message::debug_bytes(self.0, f)
            }
        }
        f.debug_map()
            .entries(self.props.iter().map(|(n, v)| (n, V(v))))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_case_insensitive_lookup() {
        let mut m = Metadata::new();
        m.insert(SOCKET_TYPE, Bytes::from_static(b"DEALER"));
        m.insert(IDENTITY, Bytes::new());
        m.insert("X-Hello", Bytes::from_static(b"world"));
        let mut out = BytesMut::new();
        m.encode(&mut out);
        assert_eq!(out.len(), m.encoded_len());
        let back = Metadata::decode(&out.freeze()).unwrap();
        assert_eq!(back, m);
        assert_eq!(back.get("socket-type"), Some(&b"DEALER"[..]));
        assert_eq!(back.get("identity"), Some(&b""[..]));
    }

    #[test]
    fn rejects_truncation_and_bad_names() {
        let mut m = Metadata::new();
        m.insert("A", Bytes::from_static(b"xyz"));
        let mut out = BytesMut::new();
        m.encode(&mut out);
        let full = out.freeze();
        for cut in 1..full.len() {
            assert!(Metadata::decode(&full.slice(..cut)).is_err(), "cut {cut}");
        }
        assert!(Metadata::decode(&Bytes::from_static(b"\x00\x00\x00\x00\x00")).is_err());
        assert!(Metadata::decode(&Bytes::from_static(b"\x01 \x00\x00\x00\x00")).is_err());
    }

    fn wire(props: &[(&str, &[u8])]) -> Bytes {
        let mut m = Metadata::new();
        for (n, v) in props {
            m.props.push((Box::from(*n), Bytes::copy_from_slice(v)));
        }
        let mut out = BytesMut::new();
        m.encode(&mut out);
        out.freeze()
    }

    /// `insert` replaces a property of the same name in any case, in place and under its first
    /// spelling; a new name goes last.
    #[test]
    fn insert_replaces_without_regard_to_case() {
        let mut m = Metadata::new();
        assert!(m.is_empty());
        m.insert("Socket-Type", Bytes::from_static(b"REQ"));
        m.insert("X-A", Bytes::from_static(b"1"));
        m.insert("SOCKET-TYPE", Bytes::from_static(b"DEALER"));
        assert_eq!(m.len(), 2);
        assert!(!m.is_empty());
        let all: Vec<_> = m.iter().collect();
        assert_eq!(all, [("Socket-Type", &b"DEALER"[..]), ("X-A", &b"1"[..])]);
        assert_eq!(m.get("x-b"), None);
    }

    /// `extend_from` is `insert` of each property in turn: same names (in any case) replaced
    /// where they stand, new ones appended, and of two same-named new ones the later wins.
    #[test]
    fn extend_from_is_insert_of_each() {
        let mut m = Metadata::new();
        m.insert("A", Bytes::from_static(b"1"));
        m.insert("b", Bytes::from_static(b"2"));
        let mut other = Metadata::new();
        other.props.push((Box::from("a"), Bytes::from_static(b"3")));
        other.props.push((Box::from("C"), Bytes::from_static(b"4")));
        other.props.push((Box::from("c"), Bytes::from_static(b"5")));
        let mut by_insert = m.clone();
        for (n, v) in other.iter() {
            by_insert.insert(n, Bytes::copy_from_slice(v));
        }
        m.extend_from(&other);
        let all: Vec<_> = m.iter().collect();
        assert_eq!(all, [("A", &b"3"[..]), ("b", &b"2"[..]), ("C", &b"5"[..])]);
        assert_eq!(m, by_insert);
        // A list that already holds a name twice (decoded from a peer): the first is replaced,
        // as `insert` would.
        let mut twice = Metadata::decode(&wire(&[("X", b"1"), ("x", b"2")])).unwrap();
        let mut one = Metadata::new();
        one.insert("X", Bytes::from_static(b"3"));
        let mut by_insert = twice.clone();
        by_insert.insert("X", Bytes::from_static(b"3"));
        twice.extend_from(&one);
        assert_eq!(twice, by_insert);
        assert_eq!(twice.iter().next(), Some(("X", &b"3"[..])));
    }

    /// Every byte of the four-byte value length counts: a value of 70,000 bytes (length bytes
    /// 00 01 11 70) and one of 16 MiB + 1 round-trip.
    #[test]
    fn long_values_round_trip() {
        for len in [70_000, (1 << 24) + 1] {
            let value = vec![b'v'; len];
            let data = wire(&[("Big", &value), ("After", b"x")]);
            let m = Metadata::decode(&data).unwrap();
            assert_eq!(m.get("big").map(<[u8]>::len), Some(len));
            assert_eq!(m.get("after"), Some(&b"x"[..]));
        }
    }

    #[test]
    fn retain_keeps_what_it_is_told_in_order() {
        let mut m = Metadata::decode(&wire(&[("A", b"1"), ("B", b"2"), ("C", b"3")])).unwrap();
        m.retain(|n| n != "B");
        let names: Vec<_> = m.iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["A", "C"]);
    }

    /// The decoded list is allocated at its exact size: `count` finds every whole property,
    /// and stops at the first one whose lengths do not fit.
    #[test]
    fn decoding_counts_first_and_allocates_once() {
        let three = wire(&[("A", b"1"), ("Bb", b""), ("C", &[7u8; 300])]);
        assert_eq!(Metadata::count(&three), 3);
        let m = Metadata::decode(&three).unwrap();
        assert_eq!((m.props.len(), m.props.capacity()), (3, 3));
        // Cut inside the third property: two whole ones.
        assert_eq!(Metadata::count(&three[..three.len() - 1]), 2);
        // Cut inside the second's value length, and inside the first's name.
        assert_eq!(Metadata::count(&three[..8]), 1);
        assert_eq!(Metadata::count(&three[..1]), 0);
        assert_eq!(Metadata::count(&[]), 0);
        // A zero-length name ends the count (decode refuses it).
        let mut zero = three.to_vec();
        zero.extend_from_slice(&[0, 0, 0, 0, 0]);
        zero.extend_from_slice(&three);
        assert_eq!(Metadata::count(&zero), 3);
        // A value length past the end ends it too.
        let mut long = wire(&[("A", b"1")]).to_vec();
        long.extend_from_slice(&[1, b'B', 0, 0, 0, 9, 1]);
        assert_eq!(Metadata::count(&long), 1);
        // A value that ends exactly at the end of the data counts.
        let exact = wire(&[("A", b"123")]);
        assert_eq!(Metadata::count(&exact), 1);
        // So does an empty value whose length field is the last four bytes.
        let empty_last = wire(&[("A", b"1"), ("B", b"")]);
        assert_eq!(Metadata::count(&empty_last), 2);
    }

    #[test]
    fn names_of_up_to_255_letters_digits_and_four_signs() {
        assert!(is_valid_name(&"a".repeat(255)));
        assert!(!is_valid_name(&"a".repeat(256)));
        assert!(!is_valid_name(""));
        assert!(is_valid_name("Az09-_.+"));
        for bad in ["a b", "a/b", "a:b", "a\u{e9}", "a\0"] {
            assert!(!is_valid_name(bad), "{bad:?}");
        }
        // The same rule on the wire: a 255-byte name decodes, a bad sign does not.
        let long = "N".repeat(255);
        assert!(Metadata::decode(&wire(&[(&long, b"v")])).is_ok());
        assert!(Metadata::decode(&wire(&[("a:b", b"v")])).is_err());
        assert!(Metadata::decode(&wire(&[("a\u{e9}", b"v")])).is_err());
    }
}
