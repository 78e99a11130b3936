//! MulticastForwardingTable (attribute 0x001B): which ports a switch floods each multicast LID to.
//!
//! Each block covers 32 multicast LIDs and 16 ports. The attribute modifier carries the block
//! (bits 0..9: LIDs `0xC000 + 32 * block ..`) and the position (bits 28..32: ports
//! `16 * position .. 16 * position + 16`). Entry `i` of the block is a 16-bit big-endian mask
//! whose bit `j` (least significant first) is port `16 * position + j`.

use crate::{Attribute, Lid, PortNum, Result, check_len, ids};

/// A 16-bit port mask of one MFT entry: bit `j` is port `16 * position + j`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PortMask(pub u16);

impl PortMask {
    /// True when the port at offset `j` (0..16) of the block's position is in the mask.
    pub const fn has(self, j: u8) -> bool {
        j < 16 && self.0 & (1 << j) != 0
    }

    /// The mask with the port at offset `j` (0..16) added; offsets above 15 are ignored.
    #[must_use]
    pub const fn with(self, j: u8) -> PortMask {
        if j < 16 { PortMask(self.0 | (1 << j)) } else { self }
    }

    /// The ports in the mask, for a block at `position`.
    pub fn ports(self, position: u8) -> impl Iterator<Item = PortNum> {
        let base = u16::from(position) * 16;
        (0u8..16).filter(move |&j| self.has(j)).filter_map(move |j| u8::try_from(base + u16::from(j)).ok().map(PortNum))
    }
}

/// One MFT block: 32 multicast LIDs by 16 ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MulticastForwardingTable {
    /// Port mask per multicast LID of the block, in LID order.
    pub masks: [PortMask; 32],
}

impl MulticastForwardingTable {
    /// Entries (multicast LIDs) per block.
    pub const ENTRIES: usize = 32;
    /// Highest block number (the 9-bit field).
    pub const MAX_BLOCK: u16 = 0x1ff;
    /// Highest position (the 4-bit field: ports 240..=255).
    pub const MAX_POSITION: u8 = 0xf;

    /// The attribute modifier for `block` and port group `position` (both truncated to their
    /// field widths).
    pub const fn attr_mod(block: u16, position: u8) -> u32 {
        ((position as u32 & 0xf) << 28) | (block as u32 & 0x1ff)
    }

    /// Splits an attribute modifier into (block, position).
    pub const fn split_attr_mod(attr_mod: u32) -> (u16, u8) {
        ((attr_mod & 0x1ff) as u16, ((attr_mod >> 28) & 0xf) as u8)
    }

    /// Block number and index in the block of a multicast LID; `None` for a non-multicast LID.
    pub const fn locate(mlid: Lid) -> Option<(u16, usize)> {
        if !mlid.is_multicast() {
            return None;
        }
        let off = mlid.0 - Lid::MULTICAST_BASE.0;
        Some((off / 32, (off % 32) as usize))
    }
}

impl Attribute for MulticastForwardingTable {
    const ID: u16 = ids::attr::MFT;
    const LEN: usize = 64;

    fn parse(buf: &[u8]) -> Result<Self> {
        check_len("MulticastForwardingTable", buf, Self::LEN)?;
        let mut masks = [PortMask(0); 32];
        for (m, c) in masks.iter_mut().zip(buf.chunks_exact(2)) {
            *m = PortMask(u16::from_be_bytes([c[0], c[1]]));
        }
        Ok(MulticastForwardingTable { masks })
    }

    fn emit(&self, buf: &mut [u8]) {
        for (c, m) in buf[..Self::LEN].chunks_exact_mut(2).zip(&self.masks) {
            c.copy_from_slice(&m.0.to_be_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attrs::test_util::{emit_parse_roundtrip, rejects_short};
    use proptest::prelude::*;

    /// ibsim 0.10 `net` example: block 0 / position 0 of Switch1 after a libibmad
    /// `smp_set_via` Set, read back with `ibroute -M -D 0`, which printed 0xc000 -> ports 0,1;
    /// 0xc001 -> ports 1,2,3; 0xc01f -> port 4 (ibroute shows only the switch's 8 ports; the
    /// mask also has bit 15).
    fn ibsim_block0() -> [u8; 64] {
        let mut b = [0u8; 64];
        b[..4].copy_from_slice(&[0x00, 0x03, 0x00, 0x0e]);
        b[62..].copy_from_slice(&[0x80, 0x10]);
        b
    }

    #[test]
    fn deconstruct_ibsim() {
        let t = MulticastForwardingTable::parse(&ibsim_block0()).unwrap();
        let ports = |i: usize| t.masks[i].ports(0).map(PortNum::get).collect::<Vec<_>>();
        assert_eq!(ports(0), [0, 1]);
        assert_eq!(ports(1), [1, 2, 3]);
        assert_eq!(ports(31), [4, 15]);
        assert!((2..31).all(|i| t.masks[i] == PortMask(0)));
        assert_eq!(t.masks[31].ports(15).map(PortNum::get).collect::<Vec<_>>(), [244, 255]);
    }

    #[test]
    fn construct_ibsim() {
        let mut t = MulticastForwardingTable::default();
        t.masks[0] = PortMask(0).with(0).with(1);
        t.masks[1] = PortMask(0).with(1).with(2).with(3);
        t.masks[31] = PortMask(0).with(4).with(15).with(16);
        assert_eq!(t.to_vec(), ibsim_block0());
        rejects_short::<MulticastForwardingTable>();
    }

    #[test]
    fn attr_mod_and_lids() {
        // ibroute's own debug output: "reading block 601 chunk 0 mod 1" uses modifier 1.
        assert_eq!(MulticastForwardingTable::attr_mod(1, 0), 1);
        assert_eq!(MulticastForwardingTable::attr_mod(0x1ff, 0xf), 0xf000_01ff);
        assert_eq!(MulticastForwardingTable::split_attr_mod(0x2000_0003), (3, 2));
        assert_eq!(MulticastForwardingTable::locate(Lid(0xc01f)), Some((0, 31)));
        assert_eq!(MulticastForwardingTable::locate(Lid(0xc020)), Some((1, 0)));
        assert_eq!(MulticastForwardingTable::locate(Lid(0xfffe)), Some((0x1ff, 30)));
        assert_eq!(MulticastForwardingTable::locate(Lid(5)), None);
    }

    proptest! {
        #[test]
        fn roundtrip(m in any::<[u16; 32]>()) {
            emit_parse_roundtrip(&MulticastForwardingTable { masks: m.map(PortMask) });
        }

        #[test]
        fn attr_mod_roundtrip(block in 0u16..=0x1ff, pos in 0u8..=0xf) {
            let m = MulticastForwardingTable::attr_mod(block, pos);
            prop_assert_eq!(MulticastForwardingTable::split_attr_mod(m), (block, pos));
        }

        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = MulticastForwardingTable::parse(&b);
        }
    }
}
