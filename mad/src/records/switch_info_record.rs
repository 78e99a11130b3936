//! SwitchInfoRecord (IBTA vol. 1, 15.2.5.4): a switch's SwitchInfo, keyed by its LID.
//!
//! Layout: LID at byte 0, 16 reserved bits, SwitchInfo's 20 defined bytes at byte 4; 24 bytes.
//! The embedded SwitchInfo is read and written by [`crate::attrs::SwitchInfo`].

use crate::attrs::SwitchInfo;
use crate::records::{comp, emit_embedded, parse_embedded};
use crate::{Attribute, Lid, Result, bits, check_len, ids};

/// SwitchInfoRecord.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SwitchInfoRecord {
    /// LID of the switch (its port 0).
    pub lid: Lid,
    /// The switch's SwitchInfo.
    pub switch_info: SwitchInfo,
}

impl SwitchInfoRecord {
    const INFO_OFF: usize = 4;
    /// Bytes of SwitchInfo that the spec defines (up to MulticastFDBTop), i.e. its span here.
    const INFO_SPAN: usize = 20;

    /// ComponentMask: LID.
    pub const COMP_LID: u64 = comp(0);
    /// ComponentMask: the reserved 16 bits after LID.
    pub const COMP_RESERVED1: u64 = comp(1);
    /// ComponentMask: SwitchInfo.LinearFDBCap.
    pub const COMP_LINEAR_FDB_CAP: u64 = comp(2);
    /// ComponentMask: SwitchInfo.RandomFDBCap.
    pub const COMP_RANDOM_FDB_CAP: u64 = comp(3);
    /// ComponentMask: SwitchInfo.MulticastFDBCap.
    pub const COMP_MULTICAST_FDB_CAP: u64 = comp(4);
    /// ComponentMask: SwitchInfo.LinearFDBTop.
    pub const COMP_LINEAR_FDB_TOP: u64 = comp(5);
    /// ComponentMask: SwitchInfo.DefaultPort.
    pub const COMP_DEFAULT_PORT: u64 = comp(6);
    /// ComponentMask: SwitchInfo.DefaultMulticastPrimaryPort.
    pub const COMP_DEFAULT_MULTICAST_PRIMARY_PORT: u64 = comp(7);
    /// ComponentMask: SwitchInfo.DefaultMulticastNotPrimaryPort.
    pub const COMP_DEFAULT_MULTICAST_NOT_PRIMARY_PORT: u64 = comp(8);
    /// ComponentMask: SwitchInfo.LifeTimeValue.
    pub const COMP_LIFE_TIME_VALUE: u64 = comp(9);
    /// ComponentMask: SwitchInfo.PortStateChange.
    pub const COMP_PORT_STATE_CHANGE: u64 = comp(10);
    /// ComponentMask: SwitchInfo.OptimizedSLtoVLMappingProgramming.
    pub const COMP_OPTIMIZED_SL_TO_VL_MAPPING_PROGRAMMING: u64 = comp(11);
    /// ComponentMask: SwitchInfo.LIDsPerPort.
    pub const COMP_LIDS_PER_PORT: u64 = comp(12);
    /// ComponentMask: SwitchInfo.PartitionEnforcementCap.
    pub const COMP_PARTITION_ENFORCEMENT_CAP: u64 = comp(13);
    /// ComponentMask: SwitchInfo.InboundEnforcementCap.
    pub const COMP_INBOUND_ENFORCEMENT_CAP: u64 = comp(14);
    /// ComponentMask: SwitchInfo.OutboundEnforcementCap.
    pub const COMP_OUTBOUND_ENFORCEMENT_CAP: u64 = comp(15);
    /// ComponentMask: SwitchInfo.FilterRawInboundCap.
    pub const COMP_FILTER_RAW_INBOUND_CAP: u64 = comp(16);
    /// ComponentMask: SwitchInfo.FilterRawOutboundCap.
    pub const COMP_FILTER_RAW_OUTBOUND_CAP: u64 = comp(17);
    /// ComponentMask: SwitchInfo.EnhancedPort0.
    pub const COMP_ENHANCED_PORT0: u64 = comp(18);
    /// ComponentMask: SwitchInfo's reserved bits before MulticastFDBTop.
    pub const COMP_RESERVED2: u64 = comp(19);
    /// ComponentMask: SwitchInfo.MulticastFDBTop.
    pub const COMP_MULTICAST_FDB_TOP: u64 = comp(20);
}

impl Attribute for SwitchInfoRecord {
    const ID: u16 = ids::sa_attr::SWITCH_INFO_RECORD;
    const LEN: usize = Self::INFO_OFF + Self::INFO_SPAN;

    fn parse(buf: &[u8]) -> Result<Self> {
        check_len("SwitchInfoRecord", buf, Self::LEN)?;
        Ok(SwitchInfoRecord {
            lid: Lid(bits::u16_at(buf, 0)),
            switch_info: parse_embedded(buf, Self::INFO_OFF, Self::INFO_SPAN)?,
        })
    }

    fn emit(&self, buf: &mut [u8]) {
        let end = Self::LEN.min(buf.len());
        buf[..end].fill(0);
        bits::put_u16(buf, 0, self.lid.0);
        emit_embedded(&self.switch_info, buf, Self::INFO_OFF, Self::INFO_SPAN);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PortNum;
    use crate::records::testutil::{emit_short_is_safe, hex, rejects_short, round_trip};
    use proptest::prelude::*;

    /// OpenSM 3.3.23 `ib_switch_info_record_t`: LID=2 LinearFDBCap=0xc000 RandomFDBCap=0
    /// MulticastFDBCap=0x400 LinearFDBTop=6 DefaultPort=0 DefaultMulticastPrimaryPort=0xff
    /// DefaultMulticastNotPrimaryPort=0xff LifeTimeValue=18 PortStateChange=1 LIDsPerPort=0
    /// PartitionEnforcementCap=32 flags byte 0xf8 (the five capability bits)
    /// MulticastFDBTop=0xc003.
    const OPENSM: &str = "
        00 02 00 00 c0 00 00 00 04 00 00 06 00 ff ff 94
        00 00 00 20 f8 00 c0 03";

    fn expected() -> SwitchInfoRecord {
        SwitchInfoRecord {
            lid: Lid(2),
            switch_info: SwitchInfo {
                linear_fdb_cap: 0xc000,
                random_fdb_cap: 0,
                multicast_fdb_cap: 0x400,
                linear_fdb_top: Lid(6),
                default_port: PortNum(0),
                default_multicast_primary_port: PortNum(0xff),
                default_multicast_not_primary_port: PortNum(0xff),
                life_time_value: 18,
                port_state_change: true,
                optimized_sl_to_vl_mapping_programming: 0,
                lids_per_port: 0,
                partition_enforcement_cap: 32,
                inbound_enforcement_cap: true,
                outbound_enforcement_cap: true,
                filter_raw_inbound_cap: true,
                filter_raw_outbound_cap: true,
                enhanced_port0: true,
                multicast_fdb_top: Lid(0xc003),
            },
        }
    }

    #[test]
    fn parse_opensm_fixture() {
        assert_eq!(SwitchInfoRecord::parse(&hex(OPENSM)).unwrap(), expected());
    }

    #[test]
    fn emit_matches_opensm_fixture() {
        assert_eq!(expected().to_vec(), hex(OPENSM));
    }

    #[test]
    fn short_input_is_truncated() {
        rejects_short::<SwitchInfoRecord>(&hex(OPENSM));
        emit_short_is_safe(&expected());
    }

    proptest! {
        #[test]
        fn round_trips(b in proptest::collection::vec(any::<u8>(), SwitchInfoRecord::LEN)) {
            round_trip(&SwitchInfoRecord::parse(&b).unwrap());
        }

        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = SwitchInfoRecord::parse(&b);
        }
    }
}
