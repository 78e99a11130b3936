//! SLtoVLMappingTableRecord (IBTA vol. 1, 15.2.5.4) and VLArbitrationTableRecord (15.2.5.9): a
//! port's SL-to-VL map and one block of its VL arbitration table, keyed by the port's LID.
//!
//! SLtoVLMappingTableRecord is 16 bytes: LID at byte 0, InputPortNum at byte 2, OutputPortNum
//! at byte 3, 32 reserved bits, the 8-byte table at byte 8. VLArbitrationTableRecord is 72
//! bytes: LID at byte 0, OutputPortNum at byte 2, BlockNum at byte 3, 32 reserved bits, the
//! 64-byte block at byte 8. The tables are read and written by [`crate::attrs::SlToVlTable`]
//! and [`crate::attrs::VlArbitrationTable`].

use crate::attrs::{SlToVlTable, VlArbitrationTable};
use crate::records::{comp, emit_embedded, parse_embedded};
use crate::{Attribute, Lid, PortNum, Result, bits, check_len, ids};

/// Byte offset of the table in both records.
const TABLE_OFF: usize = 8;

/// SLtoVLMappingTableRecord.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SlToVlTableRecord {
    /// LID of the port (of port 0 for a switch).
    pub lid: Lid,
    /// InputPortNum: a switch's input port; 0 for a CA.
    pub input_port: PortNum,
    /// OutputPortNum: a switch's output port; 0 for a CA.
    pub output_port: PortNum,
    /// The map.
    pub table: SlToVlTable,
}

impl SlToVlTableRecord {
    /// ComponentMask: LID.
    pub const COMP_LID: u64 = comp(0);
    /// ComponentMask: InputPortNum.
    pub const COMP_INPUT_PORT_NUM: u64 = comp(1);
    /// ComponentMask: OutputPortNum.
    pub const COMP_OUTPUT_PORT_NUM: u64 = comp(2);
    /// ComponentMask: the reserved 32 bits.
    pub const COMP_RESERVED1: u64 = comp(3);
    /// ComponentMask: SLtoVLMappingTable.
    pub const COMP_SL_TO_VL_TABLE: u64 = comp(4);
}

impl Attribute for SlToVlTableRecord {
    const ID: u16 = ids::sa_attr::SL2VL_RECORD;
    const LEN: usize = TABLE_OFF + SlToVlTable::LEN;

    fn parse(buf: &[u8]) -> Result<Self> {
        check_len("SLtoVLMappingTableRecord", buf, Self::LEN)?;
        Ok(SlToVlTableRecord {
            lid: Lid(bits::u16_at(buf, 0)),
            input_port: PortNum(buf[2]),
            output_port: PortNum(buf[3]),
            table: parse_embedded(buf, TABLE_OFF, SlToVlTable::LEN)?,
        })
    }

    fn emit(&self, buf: &mut [u8]) {
        let end = Self::LEN.min(buf.len());
        buf[..end].fill(0);
        bits::put_u16(buf, 0, self.lid.0);
        bits::set(buf, 16, 8, self.input_port.0.into());
        bits::set(buf, 24, 8, self.output_port.0.into());
        emit_embedded(&self.table, buf, TABLE_OFF, SlToVlTable::LEN);
    }
}

/// VLArbitrationTableRecord.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct VlArbTableRecord {
    /// LID of the port (of port 0 for a switch).
    pub lid: Lid,
    /// OutputPortNum: the port whose table this is.
    pub output_port: PortNum,
    /// BlockNum: which block (the [`VlArbitrationTable`] block selectors, 1..=4).
    pub block_num: u8,
    /// The 32 entries of the block.
    pub table: VlArbitrationTable,
}

impl VlArbTableRecord {
    /// ComponentMask: LID.
    pub const COMP_LID: u64 = comp(0);
    /// ComponentMask: OutputPortNum.
    pub const COMP_OUTPUT_PORT_NUM: u64 = comp(1);
    /// ComponentMask: BlockNum.
    pub const COMP_BLOCK_NUM: u64 = comp(2);
    /// ComponentMask: the reserved 32 bits.
    pub const COMP_RESERVED1: u64 = comp(3);
    /// ComponentMask: VLArbitrationTable.
    pub const COMP_VL_ARBITRATION_TABLE: u64 = comp(4);
}

impl Attribute for VlArbTableRecord {
    const ID: u16 = ids::sa_attr::VL_ARB_RECORD;
    const LEN: usize = TABLE_OFF + VlArbitrationTable::LEN;

    fn parse(buf: &[u8]) -> Result<Self> {
        check_len("VLArbitrationTableRecord", buf, Self::LEN)?;
        Ok(VlArbTableRecord {
            lid: Lid(bits::u16_at(buf, 0)),
            output_port: PortNum(buf[2]),
            block_num: buf[3],
            table: parse_embedded(buf, TABLE_OFF, VlArbitrationTable::LEN)?,
        })
    }

    fn emit(&self, buf: &mut [u8]) {
        let end = Self::LEN.min(buf.len());
        buf[..end].fill(0);
        bits::put_u16(buf, 0, self.lid.0);
        bits::set(buf, 16, 8, self.output_port.0.into());
        bits::set(buf, 24, 8, self.block_num.into());
        emit_embedded(&self.table, buf, TABLE_OFF, VlArbitrationTable::LEN);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attrs::VlArbEntry;
    use crate::records::testutil::{emit_short_is_safe, hex, rejects_short, round_trip};
    use proptest::prelude::*;

    /// OpenSM 3.3.23 `ib_slvl_table_record_t` (be16 lid, u8 in_port_num, u8 out_port_num, be32
    /// resv, 8-byte table): LID 2, in 3, out 4, SL i to VL i for SL 0..=14 and SL 15 to VL 7,
    /// the map ibsim's switches hold by default (`smpquery sl2vl`).
    const SL2VL: &str = "00 02 03 04 00 00 00 00 01 23 45 67 89 ab cd e7";

    fn sl2vl() -> SlToVlTableRecord {
        let mut vls: [u8; 16] = std::array::from_fn(|i| i as u8);
        vls[15] = 7;
        SlToVlTableRecord { lid: Lid(2), input_port: PortNum(3), output_port: PortNum(4), table: SlToVlTable { vls } }
    }

    /// OpenSM 3.3.23 `ib_vl_arb_table_record_t` (be16 lid, u8 port_num, u8 block_num, be32
    /// reserved, 32 entries of u8 vl and u8 weight): LID 1, port 1, block 1, VL 0..7 with weights
    /// 0,4,4,4,4,4,4,4 (ibsim's low-priority default).
    const VLARB: &str = "
        00 01 01 01 00 00 00 00 00 00 01 04 02 04 03 04
        04 04 05 04 06 04 07 04 00 00 00 00 00 00 00 00
        00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
        00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
        00 00 00 00 00 00 00 00";

    fn vlarb() -> VlArbTableRecord {
        let mut table = VlArbitrationTable::default();
        for (i, e) in table.entries[..8].iter_mut().enumerate() {
            *e = VlArbEntry { vl: i as u8, weight: if i == 0 { 0 } else { 4 } };
        }
        VlArbTableRecord { lid: Lid(1), output_port: PortNum(1), block_num: 1, table }
    }

    #[test]
    fn opensm_layouts() {
        assert_eq!(SlToVlTableRecord::parse(&hex(SL2VL)).unwrap(), sl2vl());
        assert_eq!(sl2vl().to_vec(), hex(SL2VL));
        assert_eq!(VlArbTableRecord::parse(&hex(VLARB)).unwrap(), vlarb());
        assert_eq!(vlarb().to_vec(), hex(VLARB));
        assert_eq!((SlToVlTableRecord::LEN, VlArbTableRecord::LEN), (16, 72));
    }

    #[test]
    fn short_input_is_truncated() {
        rejects_short::<SlToVlTableRecord>(&hex(SL2VL));
        rejects_short::<VlArbTableRecord>(&hex(VLARB));
        emit_short_is_safe(&sl2vl());
        emit_short_is_safe(&vlarb());
    }

    proptest! {
        #[test]
        fn round_trips(b in proptest::collection::vec(any::<u8>(), VlArbTableRecord::LEN)) {
            // Reserved bits (the 32 after the keys, VLArb's high VL nibbles) do not survive.
            round_trip(&SlToVlTableRecord::parse(&b).unwrap());
            round_trip(&VlArbTableRecord::parse(&b).unwrap());
        }

        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..100)) {
            let _ = SlToVlTableRecord::parse(&b);
            let _ = VlArbTableRecord::parse(&b);
        }
    }
}
