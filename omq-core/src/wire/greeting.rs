//! The 64-byte ZMTP 3.x greeting (specs 23 and 37, "Version Negotiation").
//!
//! Layout: signature (`0xFF`, 8 padding bytes, `0x7F`), major version, minor version, a 20-byte
//! null-padded mechanism name, the as-server byte, and 31 filler bytes.
//!
//! Sending happens in stages, as libzmq does: the 10-byte signature at once, the major version
//! once the peer's signature has arrived, and the other 53 bytes once the peer's major version
//! has. A peer that is not
//! speaking ZMTP is refused at its first wrong byte, and one older than ZMTP 3 at its 11th.

use crate::error::ProtocolError;

/// Total greeting length.
pub const GREETING_LEN: usize = 64;
/// Length of the signature that is sent first.
pub const SIGNATURE_LEN: usize = 10;
/// Length of the mechanism field.
pub const MECHANISM_LEN: usize = 20;
/// The major version we speak.
pub const MAJOR: u8 = 3;
/// The minor version we announce (3.1).
pub const MINOR: u8 = 1;

/// Our signature. The padding bytes hold the value libzmq puts there (an 8-byte big-endian 1,
/// its "routing id length + 1" for an empty id) so that our bytes match libzmq's exactly;
/// receivers ignore them either way.
pub const SIGNATURE: [u8; SIGNATURE_LEN] = [0xFF, 0, 0, 0, 0, 0, 0, 0, 1, 0x7F];

/// A mechanism name as it travels in the greeting: up to 20 bytes, null-padded.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct MechanismName([u8; MECHANISM_LEN]);

impl MechanismName {
    /// The NULL mechanism.
    pub const NULL: MechanismName = MechanismName::new(b"NULL");
    /// The PLAIN mechanism.
    pub const PLAIN: MechanismName = MechanismName::new(b"PLAIN");
    /// The CURVE mechanism.
    pub const CURVE: MechanismName = MechanismName::new(b"CURVE");

    /// A name from its bytes (at most 20; longer names are cut).
    pub const fn new(name: &[u8]) -> Self {
        let mut raw = [0u8; MECHANISM_LEN];
        let mut i = 0;
        while i < name.len() && i < MECHANISM_LEN {
            raw[i] = name[i];
            i += 1;
        }
        MechanismName(raw)
    }

    /// The raw 20-byte field.
    pub fn as_field(&self) -> &[u8; MECHANISM_LEN] {
        &self.0
    }

    /// The name without its padding, lossily as text (for errors and logs).
    pub fn display(&self) -> String {
        let end = self.0.iter().position(|&b| b == 0).unwrap_or(MECHANISM_LEN);
        String::from_utf8_lossy(&self.0[..end]).into_owned()
    }
}

impl std::fmt::Debug for MechanismName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.display())
    }
}

/// A parsed greeting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Greeting {
    /// Major version (3 for every peer we accept).
    pub major: u8,
    /// Minor version: 0 for ZMTP 3.0, 1 for ZMTP 3.1.
    pub minor: u8,
    /// Security mechanism.
    pub mechanism: MechanismName,
    /// The as-server flag.
    pub as_server: bool,
}

impl Greeting {
    /// Our greeting for a mechanism and role.
    pub fn ours(mechanism: MechanismName, as_server: bool) -> Self {
        Greeting {
            major: MAJOR,
            minor: MINOR,
            mechanism,
            as_server,
        }
    }

    /// The full 64 bytes.
    pub fn encode(&self) -> [u8; GREETING_LEN] {
        let mut g = [0u8; GREETING_LEN];
        g[..SIGNATURE_LEN].copy_from_slice(&SIGNATURE);
        g[10] = self.major;
        g[11] = self.minor;
        g[12..32].copy_from_slice(self.mechanism.as_field());
        g[32] = self.as_server as u8;
        g
    }

    /// Checks a prefix of a peer's greeting, so a bad peer is refused as soon as the offending
    /// byte arrives. `prefix` may be of any length up to 64.
    pub fn check_prefix(prefix: &[u8]) -> Result<(), ProtocolError> {
        if let Some(&first) = prefix.first() {
            if first != 0xFF {
                return Err(ProtocolError::NotZmtp);
            }
        }
        // Bytes 1..=8 are padding and ignored. Bit 0 of byte 9 distinguishes ZMTP 2+ (set)
        // from a ZMTP 1.0 identity frame (clear).
        if let Some(&b9) = prefix.get(9) {
            if b9 & 0x01 == 0 {
                return Err(ProtocolError::NotZmtp);
            }
        }
        if let Some(&major) = prefix.get(10) {
            if major < MAJOR {
                return Err(ProtocolError::UnsupportedVersion { major });
            }
        }
        Ok(())
    }

    /// Parses a complete 64-byte greeting (after [`Greeting::check_prefix`] accepted it).
    pub fn decode(g: &[u8; GREETING_LEN]) -> Result<Greeting, ProtocolError> {
        Greeting::check_prefix(g)?;
        let mut mech = [0u8; MECHANISM_LEN];
        mech.copy_from_slice(&g[12..32]);
        Ok(Greeting {
            major: g[10],
            minor: g[11],
            mechanism: MechanismName(mech),
            // Spec: as-server is 0 or 1; libzmq reads any nonzero as true.
            as_server: g[32] != 0,
        })
    }

    /// True when the peer speaks ZMTP 3.1 or later (SUBSCRIBE/CANCEL/PING as commands).
    /// A major above 3 speaks at least 3.1.
    pub fn is_zmtp31(&self) -> bool {
        self.major > 3 || self.minor >= 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_the_spec_layout() {
        let g = Greeting::ours(MechanismName::NULL, false).encode();
        assert_eq!(&g[..10], &SIGNATURE);
        assert_eq!(&g[10..12], &[3, 1]);
        assert_eq!(&g[12..16], b"NULL");
        assert!(g[16..].iter().all(|&b| b == 0));
        assert_eq!(Greeting::decode(&g).unwrap().mechanism, MechanismName::NULL);
    }

    #[test]
    fn a_mechanism_name_displays_without_its_padding() {
        // The text a mechanism-mismatch error names both sides by.
        assert_eq!(MechanismName::CURVE.display(), "CURVE");
        assert_eq!(MechanismName::new(b"").display(), "");
        let full = MechanismName::new(b"ABCDEFGHIJKLMNOPQRST");
        assert_eq!(full.display(), "ABCDEFGHIJKLMNOPQRST", "no padding at all");
        assert_eq!(
            MechanismName::new(b"X\0Y").display(),
            "X",
            "ends at the first NUL"
        );
    }

    #[test]
    fn a_later_major_version_speaks_3_1_whatever_its_minor() {
        for (major, minor, is_31) in [(3, 0, false), (3, 1, true), (3, 2, true), (4, 0, true)] {
            let mut g = Greeting::ours(MechanismName::NULL, false);
            (g.major, g.minor) = (major, minor);
            assert_eq!(g.is_zmtp31(), is_31, "{major}.{minor}");
        }
    }

    #[test]
    fn refuses_early() {
        assert_eq!(Greeting::check_prefix(b"G"), Err(ProtocolError::NotZmtp));
        assert_eq!(
            Greeting::check_prefix(&[0xFF, 9, 9, 9, 9, 9, 9, 9, 9, 0x7E]),
            Err(ProtocolError::NotZmtp)
        );
        assert_eq!(
            Greeting::check_prefix(&[0xFF, 0, 0, 0, 0, 0, 0, 0, 0, 0x7F, 2]),
            Err(ProtocolError::UnsupportedVersion { major: 2 })
        );
        // Padding is ignored.
        assert!(Greeting::check_prefix(&[0xFF, 1, 2, 3, 4, 5, 6, 7, 8, 0x7F, 3]).is_ok());
    }
}
