//! GUIDInfoRecord (IBTA vol. 1, 15.2.5.18): one 8-entry block of a port's GUIDInfo table.
//!
//! Layout: LID at byte 0, BlockNum (8 bits) at byte 2, 40 reserved bits, the GUIDInfo block's
//! 64 bytes at byte 8; 72 bytes. The block is read and written by [`crate::attrs::GuidInfo`].

use crate::attrs::GuidInfo;
use crate::records::{comp, emit_embedded, parse_embedded};
use crate::{Attribute, Lid, Result, bits, check_len, ids};

/// GUIDInfoRecord.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GuidInfoRecord {
    /// LID of the port.
    pub lid: Lid,
    /// BlockNum: entries `8 * block_num ..`.
    pub block_num: u8,
    /// The 8 GUIDs of the block.
    pub guid_info: GuidInfo,
}

impl GuidInfoRecord {
    const BLOCK_OFF: usize = 8;

    /// ComponentMask: LID.
    pub const COMP_LID: u64 = comp(0);
    /// ComponentMask: BlockNum.
    pub const COMP_BLOCK_NUM: u64 = comp(1);
    /// ComponentMask: the reserved 8 bits after BlockNum.
    pub const COMP_RESERVED1: u64 = comp(2);
    /// ComponentMask: the reserved 32 bits before the block.
    pub const COMP_RESERVED2: u64 = comp(3);
    /// ComponentMask: GUID 0 of the block; GUID n is `COMP_GUID0 << n` (n < 8).
    pub const COMP_GUID0: u64 = comp(4);
}

impl Attribute for GuidInfoRecord {
    const ID: u16 = ids::sa_attr::GUID_INFO_RECORD;
    const LEN: usize = Self::BLOCK_OFF + 64;

    fn parse(buf: &[u8]) -> Result<Self> {
        check_len("GUIDInfoRecord", buf, Self::LEN)?;
        Ok(GuidInfoRecord {
            lid: Lid(bits::u16_at(buf, 0)),
            block_num: bits::get(buf, 16, 8) as u8,
            guid_info: parse_embedded(buf, Self::BLOCK_OFF, 64)?,
        })
    }

    fn emit(&self, buf: &mut [u8]) {
        let end = Self::LEN.min(buf.len());
        buf[..end].fill(0);
        bits::put_u16(buf, 0, self.lid.0);
        bits::set(buf, 16, 8, self.block_num.into());
        emit_embedded(&self.guid_info, buf, Self::BLOCK_OFF, 64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Guid;
    use crate::records::testutil::{emit_short_is_safe, hex, rejects_short, round_trip};
    use proptest::prelude::*;

    /// libibmad 44.0 `mad_set_field`/`mad_set_field64` with IB_SA_GIR_*_F: LID=0x10 BlockNum=3
    /// GUID[i] = 0x0002c90300000a00 + i.
    const LIBIBMAD: &str = "
        00 10 03 00 00 00 00 00 00 02 c9 03 00 00 0a 00
        00 02 c9 03 00 00 0a 01 00 02 c9 03 00 00 0a 02
        00 02 c9 03 00 00 0a 03 00 02 c9 03 00 00 0a 04
        00 02 c9 03 00 00 0a 05 00 02 c9 03 00 00 0a 06
        00 02 c9 03 00 00 0a 07";

    /// OpenSM 3.3.23 under ibsim 0.10, `saquery GIR` from Hca3 (AttributeOffset 9): LID 2,
    /// Block 0, GUID 0 = 0x100001, the others 0.
    const OPENSM_CAPTURE: &str = "
        00 02 00 00 00 00 00 00 00 00 00 00 00 10 00 01
        00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
        00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
        00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
        00 00 00 00 00 00 00 00";

    fn expected() -> GuidInfoRecord {
        GuidInfoRecord {
            lid: Lid(0x10),
            block_num: 3,
            guid_info: GuidInfo { guids: core::array::from_fn(|i| Guid(0x0002_c903_0000_0a00 + i as u64)) },
        }
    }

    #[test]
    fn libibmad_fixture() {
        assert_eq!(GuidInfoRecord::parse(&hex(LIBIBMAD)).unwrap(), expected());
        assert_eq!(expected().to_vec(), hex(LIBIBMAD));
        rejects_short::<GuidInfoRecord>(&hex(LIBIBMAD));
        emit_short_is_safe(&expected());
    }

    #[test]
    fn opensm_capture() {
        let r = GuidInfoRecord::parse(&hex(OPENSM_CAPTURE)).unwrap();
        assert_eq!((r.lid, r.block_num), (Lid(2), 0));
        assert_eq!(r.guid_info.guids[0], Guid(0x10_0001));
        assert!(r.guid_info.guids[1..].iter().all(|g| *g == Guid(0)));
        assert_eq!(r.to_vec(), hex(OPENSM_CAPTURE));
        assert_eq!(crate::records::stride::<GuidInfoRecord>(), 9 * 8);
    }

    proptest! {
        #[test]
        fn round_trips(b in proptest::collection::vec(any::<u8>(), GuidInfoRecord::LEN)) {
            round_trip(&GuidInfoRecord::parse(&b).unwrap());
        }

        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..100)) {
            let _ = GuidInfoRecord::parse(&b);
        }
    }
}
