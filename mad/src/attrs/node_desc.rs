//! NodeDescription (attribute 0x0010): the 64-byte, operator-assigned node name.
//!
//! The spec defines it as 64 bytes of UTF-8, padded with NULs. The raw bytes are kept as read
//! so that any value round-trips; [`NodeDescription::text`] gives the printable name.

use crate::{Attribute, Result, check_len, ids};

/// NodeDescription: the node's human-readable name (for example `"Switch1"` or
/// `"node17 HCA-1"`), as shown by ibnetdiscover and in SM logs.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct NodeDescription {
    /// The 64 bytes exactly as on the wire (UTF-8, NUL-padded by convention).
    pub raw: [u8; 64],
}

impl NodeDescription {
    /// A description from text: truncated to 64 bytes (at a character boundary), NUL-padded.
    pub fn new(text: &str) -> NodeDescription {
        let mut raw = [0u8; 64];
        let mut end = text.len().min(64);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        raw[..end].copy_from_slice(&text.as_bytes()[..end]);
        NodeDescription { raw }
    }

    /// The name as text: everything before the first NUL, invalid UTF-8 replaced by U+FFFD.
    pub fn text(&self) -> String {
        let end = self.raw.iter().position(|&b| b == 0).unwrap_or(self.raw.len());
        String::from_utf8_lossy(&self.raw[..end]).into_owned()
    }
}

impl Default for NodeDescription {
    fn default() -> Self {
        NodeDescription { raw: [0; 64] }
    }
}

impl core::fmt::Debug for NodeDescription {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "NodeDescription({:?})", self.text())
    }
}

impl core::fmt::Display for NodeDescription {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.text())
    }
}

impl Attribute for NodeDescription {
    const ID: u16 = ids::attr::NODE_DESC;
    const LEN: usize = 64;

    fn parse(buf: &[u8]) -> Result<Self> {
        check_len("NodeDescription", buf, Self::LEN)?;
        let mut raw = [0u8; 64];
        raw.copy_from_slice(&buf[..64]);
        Ok(NodeDescription { raw })
    }

    fn emit(&self, buf: &mut [u8]) {
        buf[..Self::LEN].copy_from_slice(&self.raw);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attrs::test_util::{emit_parse_roundtrip, rejects_short};
    use proptest::prelude::*;

    /// ibsim 0.10 `net` example, `smpquery -D nodedesc 0`: smpquery printed `Switch1`.
    fn ibsim_switch1() -> [u8; 64] {
        let mut b = [0u8; 64];
        b[..7].copy_from_slice(&[0x53, 0x77, 0x69, 0x74, 0x63, 0x68, 0x31]);
        b
    }

    #[test]
    fn deconstruct_and_construct() {
        let d = NodeDescription::parse(&ibsim_switch1()).unwrap();
        assert_eq!(d.text(), "Switch1");
        assert_eq!(d.to_string(), "Switch1");
        assert_eq!(NodeDescription::new("Switch1").to_vec(), ibsim_switch1());
    }

    #[test]
    fn text_is_lossy_and_stops_at_nul() {
        let mut b = [0u8; 64];
        b[..4].copy_from_slice(&[b'a', 0xff, b'b', 0]);
        b[5] = b'z';
        let d = NodeDescription::parse(&b).unwrap();
        assert_eq!(d.text(), "a\u{fffd}b");
        assert_eq!(d.to_vec(), b, "bytes after the NUL are kept");
        let full = NodeDescription::parse(&[b'x'; 64]).unwrap();
        assert_eq!(full.text().len(), 64);
    }

    #[test]
    fn new_truncates_at_char_boundary() {
        let s = format!("{}é", "a".repeat(63));
        let d = NodeDescription::new(&s);
        assert_eq!(d.text(), "a".repeat(63));
        rejects_short::<NodeDescription>();
    }

    proptest! {
        #[test]
        fn roundtrip(raw in any::<[u8; 32]>(), raw2 in any::<[u8; 32]>()) {
            let mut r = [0u8; 64];
            r[..32].copy_from_slice(&raw);
            r[32..].copy_from_slice(&raw2);
            emit_parse_roundtrip(&NodeDescription { raw: r });
        }

        #[test]
        fn text_roundtrip(s in "[^\u{0}]{0,20}") {
            let d = NodeDescription::new(&s);
            if s.len() <= 64 {
                prop_assert_eq!(d.text(), s);
            }
        }

        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = NodeDescription::parse(&b).map(|d| d.text());
        }
    }
}
