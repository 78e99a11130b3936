//! LinearForwardingTableRecord (IBTA vol. 1, 15.2.5.6) and MulticastForwardingTableRecord
//! (15.2.5.8): one block of a switch's forwarding table, keyed by the switch LID.
//!
//! Both are 72 bytes: LID at byte 0, a 16-bit block selector at byte 2, 32 reserved bits, and
//! the 64-byte table block at byte 8, read and written by the SMP attribute types of
//! [`crate::attrs`].

use crate::attrs::{LinearForwardingTable, MulticastForwardingTable};
use crate::records::{comp, emit_embedded, parse_embedded};
use crate::{Attribute, Lid, Result, bits, check_len, ids};

/// Byte offset of the table block in both records.
const BLOCK_OFF: usize = 8;

/// LinearForwardingTableRecord.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LftRecord {
    /// LID of the switch.
    pub lid: Lid,
    /// BlockNum: the block holds LIDs `64 * block_num ..`.
    pub block_num: u16,
    /// The 64 egress ports of the block.
    pub lft: LinearForwardingTable,
}

impl LftRecord {
    /// ComponentMask: LID.
    pub const COMP_LID: u64 = comp(0);
    /// ComponentMask: BlockNum.
    pub const COMP_BLOCK_NUM: u64 = comp(1);
    /// ComponentMask: the reserved 32 bits after BlockNum.
    pub const COMP_RESERVED1: u64 = comp(2);
    /// ComponentMask: LinearForwardingTable.
    pub const COMP_LINEAR_FORWARDING_TABLE: u64 = comp(3);
}

impl Attribute for LftRecord {
    const ID: u16 = ids::sa_attr::LFT_RECORD;
    const LEN: usize = BLOCK_OFF + 64;

    fn parse(buf: &[u8]) -> Result<Self> {
        check_len("LinearForwardingTableRecord", buf, Self::LEN)?;
        Ok(LftRecord {
            lid: Lid(bits::u16_at(buf, 0)),
            block_num: bits::u16_at(buf, 2),
            lft: parse_embedded(buf, BLOCK_OFF, 64)?,
        })
    }

    fn emit(&self, buf: &mut [u8]) {
        let end = Self::LEN.min(buf.len());
        buf[..end].fill(0);
        bits::put_u16(buf, 0, self.lid.0);
        bits::put_u16(buf, 2, self.block_num);
        emit_embedded(&self.lft, buf, BLOCK_OFF, 64);
    }
}

/// MulticastForwardingTableRecord.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MftRecord {
    /// LID of the switch.
    pub lid: Lid,
    /// Position (4 bits): which 16-port slice of the port masks the block holds.
    pub position: u8,
    /// BlockNum (9 bits): the block holds MLIDs `0xc000 + 32 * block_num ..`.
    pub block_num: u16,
    /// The 32 port masks of the block.
    pub mft: MulticastForwardingTable,
}

impl MftRecord {
    /// ComponentMask: LID.
    pub const COMP_LID: u64 = comp(0);
    /// ComponentMask: Position.
    pub const COMP_POSITION: u64 = comp(1);
    /// ComponentMask: the reserved 3 bits after Position.
    pub const COMP_RESERVED1: u64 = comp(2);
    /// ComponentMask: BlockNum.
    pub const COMP_BLOCK_NUM: u64 = comp(3);
    /// ComponentMask: the reserved 32 bits after BlockNum.
    pub const COMP_RESERVED2: u64 = comp(4);
    /// ComponentMask: MulticastForwardingTable.
    pub const COMP_MULTICAST_FORWARDING_TABLE: u64 = comp(5);
}

impl Attribute for MftRecord {
    const ID: u16 = ids::sa_attr::MFT_RECORD;
    const LEN: usize = BLOCK_OFF + 64;

    fn parse(buf: &[u8]) -> Result<Self> {
        check_len("MulticastForwardingTableRecord", buf, Self::LEN)?;
        Ok(MftRecord {
            lid: Lid(bits::u16_at(buf, 0)),
            position: bits::get(buf, 16, 4) as u8,
            block_num: bits::get(buf, 23, 9) as u16,
            mft: parse_embedded(buf, BLOCK_OFF, 64)?,
        })
    }

    fn emit(&self, buf: &mut [u8]) {
        let end = Self::LEN.min(buf.len());
        buf[..end].fill(0);
        bits::put_u16(buf, 0, self.lid.0);
        bits::set(buf, 16, 4, self.position.into());
        bits::set(buf, 23, 9, self.block_num.into());
        emit_embedded(&self.mft, buf, BLOCK_OFF, 64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PortNum;
    use crate::attrs::PortMask;
    use crate::records::testutil::{emit_short_is_safe, hex, rejects_short, round_trip};
    use proptest::prelude::*;

    /// OpenSM 3.3.23 `ib_lft_record_t`: LID=2 BlockNum=0x201, entry i = i % 5 for i < 32,
    /// 0xff (unrouted) after.
    const OPENSM_LFT: &str = "
        00 02 02 01 00 00 00 00 00 01 02 03 04 00 01 02
        03 04 00 01 02 03 04 00 01 02 03 04 00 01 02 03
        04 00 01 02 03 04 00 01 ff ff ff ff ff ff ff ff
        ff ff ff ff ff ff ff ff ff ff ff ff ff ff ff ff
        ff ff ff ff ff ff ff ff";

    fn lft_expected() -> LftRecord {
        let mut lft = LinearForwardingTable::unrouted();
        for (i, p) in lft.ports.iter_mut().enumerate().take(32) {
            *p = PortNum((i % 5) as u8);
        }
        LftRecord { lid: Lid(2), block_num: 0x201, lft }
    }

    #[test]
    fn lft_fixture() {
        assert_eq!(LftRecord::parse(&hex(OPENSM_LFT)).unwrap(), lft_expected());
        assert_eq!(lft_expected().to_vec(), hex(OPENSM_LFT));
        rejects_short::<LftRecord>(&hex(OPENSM_LFT));
        emit_short_is_safe(&lft_expected());
    }

    /// OpenSM 3.3.23 `ib_mft_record_t`: LID=2 Position=3 BlockNum=0x1ff, mask i = 1 << (i % 16).
    const OPENSM_MFT: &str = "
        00 02 31 ff 00 00 00 00 00 01 00 02 00 04 00 08
        00 10 00 20 00 40 00 80 01 00 02 00 04 00 08 00
        10 00 20 00 40 00 80 00 00 01 00 02 00 04 00 08
        00 10 00 20 00 40 00 80 01 00 02 00 04 00 08 00
        10 00 20 00 40 00 80 00";

    fn mft_expected() -> MftRecord {
        let mut mft = MulticastForwardingTable::default();
        for (i, m) in mft.masks.iter_mut().enumerate() {
            *m = PortMask(1 << (i % 16));
        }
        MftRecord { lid: Lid(2), position: 3, block_num: 0x1ff, mft }
    }

    #[test]
    fn mft_fixture() {
        assert_eq!(MftRecord::parse(&hex(OPENSM_MFT)).unwrap(), mft_expected());
        assert_eq!(mft_expected().to_vec(), hex(OPENSM_MFT));
        rejects_short::<MftRecord>(&hex(OPENSM_MFT));
        emit_short_is_safe(&mft_expected());
    }

    proptest! {
        #[test]
        fn mft_round_trips(b in proptest::collection::vec(any::<u8>(), MftRecord::LEN)) {
            round_trip(&MftRecord::parse(&b).unwrap());
        }

        #[test]
        fn lft_round_trips(b in proptest::collection::vec(any::<u8>(), LftRecord::LEN)) {
            round_trip(&LftRecord::parse(&b).unwrap());
        }

        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..100)) {
            let _ = LftRecord::parse(&b);
            let _ = MftRecord::parse(&b);
        }
    }
}
