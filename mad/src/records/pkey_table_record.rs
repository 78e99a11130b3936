//! P_KeyTableRecord (IBTA vol. 1, 15.2.5.11): one 32-entry block of a port's P_Key table.
//!
//! Layout: LID at byte 0, BlockNum (16 bits) at byte 2, PortNum at byte 4, 24 reserved bits,
//! the P_KeyTable block's 64 bytes at byte 8; 72 bytes. The block is read and written by
//! [`crate::attrs::PKeyTable`].
//!
//! BlockNum travels little-endian, unlike every other field: OpenSM writes it in host order
//! and `saquery` reads and sends it so (`saquery PKTR 5//1` asks for bytes `01 00`, and prints
//! OpenSM's block 1 as 1 and a big-endian 1 as 256). Every client in use speaks that form, so
//! this crate does too.

use crate::attrs::PKeyTable;
use crate::records::{comp, emit_embedded, parse_embedded};
use crate::{Attribute, Lid, PortNum, Result, bits, check_len, ids};

/// P_KeyTableRecord.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PKeyTableRecord {
    /// LID of the port (of port 0 for a switch port).
    pub lid: Lid,
    /// BlockNum: entries `32 * block_num ..`.
    pub block_num: u16,
    /// PortNum: the switch port; reserved for a CA.
    pub port_num: PortNum,
    /// The 32 P_Keys of the block.
    pub pkey_table: PKeyTable,
}

impl PKeyTableRecord {
    const TABLE_OFF: usize = 8;

    /// ComponentMask: LID.
    pub const COMP_LID: u64 = comp(0);
    /// ComponentMask: BlockNum.
    pub const COMP_BLOCK_NUM: u64 = comp(1);
    /// ComponentMask: PortNum.
    pub const COMP_PORT_NUM: u64 = comp(2);
    /// ComponentMask: the reserved 24 bits after PortNum.
    pub const COMP_RESERVED1: u64 = comp(3);
    /// ComponentMask: P_KeyTable.
    pub const COMP_PKEY_TABLE: u64 = comp(4);
}

impl Attribute for PKeyTableRecord {
    const ID: u16 = ids::sa_attr::PKEY_TABLE_RECORD;
    const LEN: usize = Self::TABLE_OFF + 64;

    fn parse(buf: &[u8]) -> Result<Self> {
        check_len("P_KeyTableRecord", buf, Self::LEN)?;
        Ok(PKeyTableRecord {
            lid: Lid(bits::u16_at(buf, 0)),
            block_num: u16::from_le_bytes([buf[2], buf[3]]),
            port_num: PortNum(bits::get(buf, 32, 8) as u8),
            pkey_table: parse_embedded(buf, Self::TABLE_OFF, 64)?,
        })
    }

    fn emit(&self, buf: &mut [u8]) {
        let end = Self::LEN.min(buf.len());
        buf[..end].fill(0);
        bits::put_u16(buf, 0, self.lid.0);
        if let Some(b) = buf.get_mut(2..4) {
            b.copy_from_slice(&self.block_num.to_le_bytes());
        }
        bits::set(buf, 32, 8, self.port_num.0.into());
        emit_embedded(&self.pkey_table, buf, Self::TABLE_OFF, 64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PKey;
    use crate::records::testutil::{emit_short_is_safe, hex, rejects_short, round_trip};
    use proptest::prelude::*;

    /// OpenSM 3.3.23 `ib_pkey_table_record_t`: LID=7 BlockNum=8 (bytes `08 00`: host order, as
    /// OpenSM writes it) PortNum=12,
    /// P_Keys [0]=0xffff [1]=0x8001 [2]=0x0002 [31]=0x7fff, the rest 0.
    const OPENSM: &str = "
        00 07 08 00 0c 00 00 00 ff ff 80 01 00 02 00 00
        00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
        00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
        00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
        00 00 00 00 00 00 7f ff";

    fn expected() -> PKeyTableRecord {
        let mut keys = [PKey(0); 32];
        keys[0] = PKey(0xffff);
        keys[1] = PKey(0x8001);
        keys[2] = PKey(0x0002);
        keys[31] = PKey(0x7fff);
        PKeyTableRecord { lid: Lid(7), block_num: 8, port_num: PortNum(12), pkey_table: PKeyTable { keys } }
    }

    #[test]
    fn parse_opensm_fixture() {
        assert_eq!(PKeyTableRecord::parse(&hex(OPENSM)).unwrap(), expected());
    }

    #[test]
    fn emit_matches_opensm_fixture() {
        assert_eq!(expected().to_vec(), hex(OPENSM));
    }

    #[test]
    fn short_input_is_truncated() {
        rejects_short::<PKeyTableRecord>(&hex(OPENSM));
        emit_short_is_safe(&expected());
    }

    proptest! {
        #[test]
        fn round_trips(b in proptest::collection::vec(any::<u8>(), PKeyTableRecord::LEN)) {
            round_trip(&PKeyTableRecord::parse(&b).unwrap());
        }

        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..100)) {
            let _ = PKeyTableRecord::parse(&b);
        }
    }
}
