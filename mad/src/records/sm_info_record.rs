//! SMInfoRecord (IBTA vol. 1, 15.2.5.8): an SM's SMInfo, keyed by the LID of its port.
//!
//! Layout: LID at byte 0, 16 reserved bits, SMInfo's 21 defined bytes at byte 4; 25 bytes. The
//! embedded SMInfo is read and written by [`crate::attrs::SmInfo`].

use crate::attrs::SmInfo;
use crate::records::{comp, emit_embedded, parse_embedded};
use crate::{Attribute, Lid, Result, bits, check_len, ids};

/// SMInfoRecord.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SmInfoRecord {
    /// LID of the port the SM runs on.
    pub lid: Lid,
    /// That SM's SMInfo.
    pub sm_info: SmInfo,
}

impl SmInfoRecord {
    const INFO_OFF: usize = 4;
    /// Bytes of SMInfo that the spec defines, i.e. the span it takes in the record.
    const INFO_SPAN: usize = 21;

    /// ComponentMask: LID.
    pub const COMP_LID: u64 = comp(0);
    /// ComponentMask: the reserved 16 bits after LID.
    pub const COMP_RESERVED1: u64 = comp(1);
    /// ComponentMask: SMInfo.GUID.
    pub const COMP_GUID: u64 = comp(2);
    /// ComponentMask: SMInfo.SM_Key.
    pub const COMP_SM_KEY: u64 = comp(3);
    /// ComponentMask: SMInfo.ActCount.
    pub const COMP_ACT_COUNT: u64 = comp(4);
    /// ComponentMask: SMInfo.Priority.
    pub const COMP_PRIORITY: u64 = comp(5);
    /// ComponentMask: SMInfo.SMState.
    pub const COMP_SM_STATE: u64 = comp(6);
}

impl Attribute for SmInfoRecord {
    const ID: u16 = ids::sa_attr::SM_INFO_RECORD;
    const LEN: usize = Self::INFO_OFF + Self::INFO_SPAN;

    fn parse(buf: &[u8]) -> Result<Self> {
        check_len("SMInfoRecord", buf, Self::LEN)?;
        Ok(SmInfoRecord {
            lid: Lid(bits::u16_at(buf, 0)),
            sm_info: parse_embedded(buf, Self::INFO_OFF, Self::INFO_SPAN)?,
        })
    }

    fn emit(&self, buf: &mut [u8]) {
        let end = Self::LEN.min(buf.len());
        buf[..end].fill(0);
        bits::put_u16(buf, 0, self.lid.0);
        emit_embedded(&self.sm_info, buf, Self::INFO_OFF, Self::INFO_SPAN);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Guid;
    use crate::attrs::SmState;
    use crate::records::testutil::{emit_short_is_safe, hex, rejects_short, round_trip};
    use proptest::prelude::*;

    /// OpenSM 3.3.23 `ib_sminfo_record_t`: LID=1 GUID=0x0002c90300000101
    /// SM_Key=0x0123456789abcdef ActCount=0x10203 Priority=14 SMState=3 (Master).
    const OPENSM: &str = "
        00 01 00 00 00 02 c9 03 00 00 01 01 01 23 45 67
        89 ab cd ef 00 01 02 03 e3";

    fn expected() -> SmInfoRecord {
        SmInfoRecord {
            lid: Lid(1),
            sm_info: SmInfo {
                guid: Guid(0x0002_c903_0000_0101),
                sm_key: 0x0123_4567_89ab_cdef,
                act_count: 0x0001_0203,
                priority: 14,
                sm_state: SmState::Master,
            },
        }
    }

    #[test]
    fn parse_opensm_fixture() {
        assert_eq!(SmInfoRecord::parse(&hex(OPENSM)).unwrap(), expected());
    }

    #[test]
    fn emit_matches_opensm_fixture() {
        assert_eq!(expected().to_vec(), hex(OPENSM));
    }

    #[test]
    fn short_input_is_truncated() {
        rejects_short::<SmInfoRecord>(&hex(OPENSM));
        emit_short_is_safe(&expected());
    }

    proptest! {
        #[test]
        fn round_trips(b in proptest::collection::vec(any::<u8>(), SmInfoRecord::LEN)) {
            round_trip(&SmInfoRecord::parse(&b).unwrap());
        }

        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = SmInfoRecord::parse(&b);
        }
    }
}
