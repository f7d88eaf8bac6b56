//! Z85, ZeroMQ's printable encoding of binary data (spec 32), used above all for CURVE keys:
//! a 32-byte key becomes 40 characters that survive source code, configuration files and
//! shell quoting.
//!
//! Every 4 bytes, read as a big-endian 32-bit number, become 5 base-85 digits, most significant
//! first, drawn from an alphabet with no quotes, backslash or space. Input lengths must be
//! multiples of 4 (encoding) and 5 (decoding); padding is the caller's business, as the spec
//! says. Decoding refuses characters outside the alphabet and 5-character groups whose value
//! does not fit in 32 bits, rather than wrapping around as some implementations do, so every
//! string has at most one meaning.

/// The 85 digits, in value order (spec 32, "Formal Specification").
const ALPHABET: &[u8; 85] =
    b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";

/// Value of each ASCII character, or `NOT_Z85`. Built at compile time from [`ALPHABET`] so the
/// two cannot disagree.
const DECODE: [u8; 128] = {
    let mut t = [NOT_Z85; 128];
    let mut i = 0;
    while i < ALPHABET.len() {
        t[ALPHABET[i] as usize] = i as u8;
        i += 1;
    }
    t
};
const NOT_Z85: u8 = 0xFF;

/// Why a Z85 encoding or decoding was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Z85Error {
    /// Binary input whose length is not a multiple of 4.
    #[error("Z85 encodes whole 4-byte groups; {0} bytes is not a multiple of 4")]
    BinaryLength(usize),
    /// Text whose length is not a multiple of 5.
    #[error("Z85 text comes in 5-character groups; {0} characters is not a multiple of 5")]
    TextLength(usize),
    /// A character outside the Z85 alphabet.
    #[error("byte {byte:#04x} at offset {at} is not a Z85 character")]
    BadCharacter {
        /// The offending byte.
        byte: u8,
        /// Its offset in the text.
        at: usize,
    },
    /// A 5-character group whose value exceeds 2^32 - 1.
    #[error("Z85 group at offset {at} is larger than 32 bits")]
    Overflow {
        /// Offset of the group's first character.
        at: usize,
    },
}

/// Encodes `data` (a multiple of 4 bytes long) as Z85 text.
pub fn encode(data: &[u8]) -> Result<String, Z85Error> {
    if !data.len().is_multiple_of(4) {
        return Err(Z85Error::BinaryLength(data.len()));
    }
    let mut out = String::with_capacity(data.len() / 4 * 5);
    for group in data.chunks_exact(4) {
        let mut n = u32::from_be_bytes([group[0], group[1], group[2], group[3]]);
        let mut digits = [0u8; 5];
        for d in digits.iter_mut().rev() {
            *d = ALPHABET[(n % 85) as usize];
            n /= 85;
        }
        // Every digit comes from ALPHABET, which is ASCII.
        out.extend(digits.iter().map(|&c| c as char));
    }
    Ok(out)
}

/// Decodes Z85 text (a multiple of 5 characters long) into bytes.
pub fn decode(text: impl AsRef<[u8]>) -> Result<Vec<u8>, Z85Error> {
    let text = text.as_ref();
    if text.len() % 5 != 0 {
        return Err(Z85Error::TextLength(text.len()));
    }
    let mut out = Vec::with_capacity(text.len() / 5 * 4);
    for (g, group) in text.chunks_exact(5).enumerate() {
        let mut n: u64 = 0;
        for (i, &c) in group.iter().enumerate() {
            let v = DECODE.get(c as usize).copied().unwrap_or(NOT_Z85);
            if v == NOT_Z85 {
                return Err(Z85Error::BadCharacter {
                    byte: c,
                    at: g * 5 + i,
                });
            }
            n = n * 85 + u64::from(v);
        }
        let n = u32::try_from(n).map_err(|_| Z85Error::Overflow { at: g * 5 })?;
        out.extend_from_slice(&n.to_be_bytes());
    }
    Ok(out)
}

/// Encodes a 32-byte key as its 40-character Z85 form.
pub fn encode_key(key: &[u8; 32]) -> String {
    // 32 is a multiple of 4: cannot fail.
    encode(key).unwrap_or_default()
}

/// Decodes a 40-character Z85 key into its 32 bytes.
pub fn decode_key(text: impl AsRef<[u8]>) -> Result<[u8; 32], Z85Error> {
    let text = text.as_ref();
    if text.len() != 40 {
        return Err(Z85Error::TextLength(text.len()));
    }
    let bytes = decode(text)?;
    let mut key = [0u8; 32];
    key.copy_from_slice(&bytes);
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_test_case() {
        let bin = [0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B];
        assert_eq!(encode(&bin).unwrap(), "HelloWorld");
        assert_eq!(decode("HelloWorld").unwrap(), bin);
    }

    #[test]
    fn extremes_and_errors() {
        assert_eq!(encode(&[]).unwrap(), "");
        assert_eq!(encode(&[0; 4]).unwrap(), "00000");
        assert_eq!(encode(&[0xFF; 4]).unwrap(), "%nSc0");
        assert_eq!(decode("%nSc0").unwrap(), [0xFF; 4]);
        assert_eq!(decode("%nSc1"), Err(Z85Error::Overflow { at: 0 }));
        assert_eq!(decode("#####"), Err(Z85Error::Overflow { at: 0 }));
        // The position names the group's first character, wherever the group is.
        assert_eq!(
            decode("0000000000%nSc1"),
            Err(Z85Error::Overflow { at: 10 })
        );
        assert_eq!(encode(&[1, 2, 3]), Err(Z85Error::BinaryLength(3)));
        assert_eq!(decode("abcd"), Err(Z85Error::TextLength(4)));
        assert_eq!(
            decode("00000 0000"),
            Err(Z85Error::BadCharacter { byte: b' ', at: 5 })
        );
        assert_eq!(
            decode("0000\u{e9}"),
            Err(Z85Error::TextLength(6)),
            "length counts bytes"
        );
        assert_eq!(
            decode(b"0000\xe9"),
            Err(Z85Error::BadCharacter { byte: 0xe9, at: 4 })
        );
        assert!(decode_key("HelloWorld").is_err());
    }

    #[test]
    fn alphabet_is_85_distinct_printable_characters() {
        let mut seen = [false; 128];
        for &c in ALPHABET {
            assert!(c.is_ascii_graphic() && !matches!(c, b'"' | b'\'' | b'\\' | b','));
            assert!(!seen[c as usize]);
            seen[c as usize] = true;
        }
    }
}
