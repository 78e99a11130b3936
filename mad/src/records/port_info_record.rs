//! PortInfoRecord (IBTA vol. 1, 15.2.5.3): one port's PortInfo, keyed by endport LID and port.
//!
//! Layout: EndportLID at byte 0, PortNum at byte 2, Options at byte 3, PortInfo's 64 bytes at
//! byte 4; 68 bytes. The embedded PortInfo is read and written by [`crate::attrs::PortInfo`].

use crate::attrs::PortInfo;
use crate::records::{comp, emit_embedded, parse_embedded};
use crate::{Attribute, Lid, PortNum, Result, bits, check_len, ids};

/// PortInfoRecord.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PortInfoRecord {
    /// EndportLID: the LID of the port, or of port 0 for a switch port.
    pub endport_lid: Lid,
    /// PortNum: the port on that node (0 for an HCA port, where the LID names it).
    pub port_num: PortNum,
    /// Options (bit 7 in later spec releases: the request asks for all ports, not one).
    pub options: u8,
    /// PortInfo of the port.
    pub port_info: PortInfo,
}

impl PortInfoRecord {
    const INFO_OFF: usize = 4;

    /// ComponentMask: EndportLID.
    pub const COMP_ENDPORT_LID: u64 = comp(0);
    /// ComponentMask: PortNum.
    pub const COMP_PORT_NUM: u64 = comp(1);
    /// ComponentMask: Options (reserved in older releases).
    pub const COMP_OPTIONS: u64 = comp(2);
    /// ComponentMask: PortInfo.M_Key.
    pub const COMP_M_KEY: u64 = comp(3);
    /// ComponentMask: PortInfo.GIDPrefix.
    pub const COMP_GID_PREFIX: u64 = comp(4);
    /// ComponentMask: PortInfo.LID.
    pub const COMP_LID: u64 = comp(5);
    /// ComponentMask: PortInfo.MasterSMLID.
    pub const COMP_MASTER_SM_LID: u64 = comp(6);
    /// ComponentMask: PortInfo.CapabilityMask.
    pub const COMP_CAPABILITY_MASK: u64 = comp(7);
    /// ComponentMask: PortInfo.DiagCode.
    pub const COMP_DIAG_CODE: u64 = comp(8);
    /// ComponentMask: PortInfo.M_KeyLeasePeriod.
    pub const COMP_M_KEY_LEASE_PERIOD: u64 = comp(9);
    /// ComponentMask: PortInfo.LocalPortNum.
    pub const COMP_LOCAL_PORT_NUM: u64 = comp(10);
    /// ComponentMask: PortInfo.LinkWidthEnabled.
    pub const COMP_LINK_WIDTH_ENABLED: u64 = comp(11);
    /// ComponentMask: PortInfo.LinkWidthSupported.
    pub const COMP_LINK_WIDTH_SUPPORTED: u64 = comp(12);
    /// ComponentMask: PortInfo.LinkWidthActive.
    pub const COMP_LINK_WIDTH_ACTIVE: u64 = comp(13);
    /// ComponentMask: PortInfo.LinkSpeedSupported.
    pub const COMP_LINK_SPEED_SUPPORTED: u64 = comp(14);
    /// ComponentMask: PortInfo.PortState.
    pub const COMP_PORT_STATE: u64 = comp(15);
    /// ComponentMask: PortInfo.PortPhysicalState.
    pub const COMP_PORT_PHYSICAL_STATE: u64 = comp(16);
    /// ComponentMask: PortInfo.LinkDownDefaultState.
    pub const COMP_LINK_DOWN_DEFAULT_STATE: u64 = comp(17);
    /// ComponentMask: PortInfo.M_KeyProtectBits.
    pub const COMP_M_KEY_PROTECT_BITS: u64 = comp(18);
    /// ComponentMask: the reserved 3 bits before LMC.
    pub const COMP_RESERVED2: u64 = comp(19);
    /// ComponentMask: PortInfo.LMC.
    pub const COMP_LMC: u64 = comp(20);
    /// ComponentMask: PortInfo.LinkSpeedActive.
    pub const COMP_LINK_SPEED_ACTIVE: u64 = comp(21);
    /// ComponentMask: PortInfo.LinkSpeedEnabled.
    pub const COMP_LINK_SPEED_ENABLED: u64 = comp(22);
    /// ComponentMask: PortInfo.NeighborMTU.
    pub const COMP_NEIGHBOR_MTU: u64 = comp(23);
    /// ComponentMask: PortInfo.MasterSMSL.
    pub const COMP_MASTER_SM_SL: u64 = comp(24);
    /// ComponentMask: PortInfo.VLCap.
    pub const COMP_VL_CAP: u64 = comp(25);
    /// ComponentMask: PortInfo.InitType.
    pub const COMP_INIT_TYPE: u64 = comp(26);
    /// ComponentMask: PortInfo.VLHighLimit.
    pub const COMP_VL_HIGH_LIMIT: u64 = comp(27);
    /// ComponentMask: PortInfo.VLArbitrationHighCap.
    pub const COMP_VL_ARBITRATION_HIGH_CAP: u64 = comp(28);
    /// ComponentMask: PortInfo.VLArbitrationLowCap.
    pub const COMP_VL_ARBITRATION_LOW_CAP: u64 = comp(29);
    /// ComponentMask: PortInfo.InitTypeReply.
    pub const COMP_INIT_TYPE_REPLY: u64 = comp(30);
    /// ComponentMask: PortInfo.MTUCap.
    pub const COMP_MTU_CAP: u64 = comp(31);
    /// ComponentMask: PortInfo.VLStallCount.
    pub const COMP_VL_STALL_COUNT: u64 = comp(32);
    /// ComponentMask: PortInfo.HOQLife.
    pub const COMP_HOQ_LIFE: u64 = comp(33);
    /// ComponentMask: PortInfo.OperationalVLs.
    pub const COMP_OPERATIONAL_VLS: u64 = comp(34);
    /// ComponentMask: PortInfo.PartitionEnforcementInbound.
    pub const COMP_PARTITION_ENFORCEMENT_INBOUND: u64 = comp(35);
    /// ComponentMask: PortInfo.PartitionEnforcementOutbound.
    pub const COMP_PARTITION_ENFORCEMENT_OUTBOUND: u64 = comp(36);
    /// ComponentMask: PortInfo.FilterRawInbound.
    pub const COMP_FILTER_RAW_INBOUND: u64 = comp(37);
    /// ComponentMask: PortInfo.FilterRawOutbound.
    pub const COMP_FILTER_RAW_OUTBOUND: u64 = comp(38);
    /// ComponentMask: PortInfo.M_KeyViolations.
    pub const COMP_M_KEY_VIOLATIONS: u64 = comp(39);
    /// ComponentMask: PortInfo.P_KeyViolations.
    pub const COMP_P_KEY_VIOLATIONS: u64 = comp(40);
    /// ComponentMask: PortInfo.Q_KeyViolations.
    pub const COMP_Q_KEY_VIOLATIONS: u64 = comp(41);
    /// ComponentMask: PortInfo.GUIDCap.
    pub const COMP_GUID_CAP: u64 = comp(42);
    /// ComponentMask: PortInfo.ClientReregister.
    pub const COMP_CLIENT_REREGISTER: u64 = comp(43);
    /// ComponentMask: PortInfo.MulticastPKeyTrapSuppressionEnabled.
    pub const COMP_MULTICAST_PKEY_TRAP_SUPPRESSION_ENABLED: u64 = comp(44);
    /// ComponentMask: PortInfo.SubnetTimeOut.
    pub const COMP_SUBNET_TIMEOUT: u64 = comp(45);
    /// ComponentMask: the reserved 3 bits before RespTimeValue.
    pub const COMP_RESERVED3: u64 = comp(46);
    /// ComponentMask: PortInfo.RespTimeValue.
    pub const COMP_RESP_TIME_VALUE: u64 = comp(47);
    /// ComponentMask: PortInfo.LocalPhyErrors.
    pub const COMP_LOCAL_PHY_ERRORS: u64 = comp(48);
    /// ComponentMask: PortInfo.OverrunErrors.
    pub const COMP_OVERRUN_ERRORS: u64 = comp(49);
    /// ComponentMask: PortInfo.MaxCreditHint.
    pub const COMP_MAX_CREDIT_HINT: u64 = comp(50);
    /// ComponentMask: the reserved 8 bits before LinkRoundTripLatency.
    pub const COMP_RESERVED4: u64 = comp(51);
    /// ComponentMask: PortInfo.LinkRoundTripLatency.
    pub const COMP_LINK_ROUND_TRIP_LATENCY: u64 = comp(52);
    /// ComponentMask: PortInfo.CapabilityMask2.
    pub const COMP_CAPABILITY_MASK2: u64 = comp(53);
    /// ComponentMask: PortInfo.LinkSpeedExtActive.
    pub const COMP_LINK_SPEED_EXT_ACTIVE: u64 = comp(54);
    /// ComponentMask: PortInfo.LinkSpeedExtSupported.
    pub const COMP_LINK_SPEED_EXT_SUPPORTED: u64 = comp(55);
    /// ComponentMask: the reserved 3 bits before LinkSpeedExtEnabled.
    pub const COMP_RESERVED5: u64 = comp(56);
    /// ComponentMask: PortInfo.LinkSpeedExtEnabled.
    pub const COMP_LINK_SPEED_EXT_ENABLED: u64 = comp(57);
}

impl Attribute for PortInfoRecord {
    const ID: u16 = ids::sa_attr::PORT_INFO_RECORD;
    const LEN: usize = Self::INFO_OFF + 64;

    fn parse(buf: &[u8]) -> Result<Self> {
        check_len("PortInfoRecord", buf, Self::LEN)?;
        Ok(PortInfoRecord {
            endport_lid: Lid(bits::u16_at(buf, 0)),
            port_num: PortNum(bits::get(buf, 16, 8) as u8),
            options: bits::get(buf, 24, 8) as u8,
            port_info: parse_embedded(buf, Self::INFO_OFF, 64)?,
        })
    }

    fn emit(&self, buf: &mut [u8]) {
        let end = Self::LEN.min(buf.len());
        buf[..end].fill(0);
        bits::put_u16(buf, 0, self.endport_lid.0);
        bits::set(buf, 16, 8, self.port_num.0.into());
        bits::set(buf, 24, 8, self.options.into());
        emit_embedded(&self.port_info, buf, Self::INFO_OFF, 64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attrs::{
        CapabilityMask, LinkDownDefaultState, LinkSpeedMask, LinkWidth, LinkWidthMask, Mtu, PhysPortState, PortState,
    };
    use crate::records::testutil::{emit_short_is_safe, hex, rejects_short, round_trip};
    use proptest::prelude::*;

    /// OpenSM 3.3.23 `ib_portinfo_record_t` filled field by field: EndportLID=4 PortNum=1
    /// Options=0, PortInfo{GIDPrefix=fe80:: LID=4 MasterSMLID=1 CapabilityMask=0x02510868
    /// LocalPortNum=1 LinkWidthEnabled=3 LinkWidthSupported=3 LinkWidthActive=2 (4x)
    /// LinkSpeedSupported=1 PortState=Active PortPhysicalState=LinkUp LinkDownDefaultState=2
    /// MTUCap=5}.
    const OPENSM: &str = "
        00 04 01 00 00 00 00 00 00 00 00 00 fe 80 00 00
        00 00 00 00 00 04 00 01 02 51 08 68 00 00 00 00
        01 03 03 02 14 52 00 00 00 00 00 00 00 05 00 00
        00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
        00 00 00 00";

    fn expected() -> PortInfoRecord {
        PortInfoRecord {
            endport_lid: Lid(4),
            port_num: PortNum(1),
            options: 0,
            port_info: PortInfo {
                gid_prefix: 0xfe80_0000_0000_0000,
                lid: Lid(4),
                master_sm_lid: Lid(1),
                capability_mask: CapabilityMask(0x0251_0868),
                local_port_num: PortNum(1),
                link_width_enabled: LinkWidthMask(3),
                link_width_supported: LinkWidthMask(3),
                link_width_active: LinkWidth::X4,
                link_speed_supported: LinkSpeedMask(1),
                port_state: PortState::Active,
                port_physical_state: PhysPortState::LinkUp,
                link_down_default_state: LinkDownDefaultState::Polling,
                mtu_cap: Mtu::M4096,
                ..PortInfo::default()
            },
        }
    }

    #[test]
    fn parse_opensm_fixture() {
        assert_eq!(PortInfoRecord::parse(&hex(OPENSM)).unwrap(), expected());
    }

    #[test]
    fn emit_matches_opensm_fixture() {
        assert_eq!(expected().to_vec(), hex(OPENSM));
    }

    #[test]
    fn short_input_is_truncated() {
        rejects_short::<PortInfoRecord>(&hex(OPENSM));
        emit_short_is_safe(&expected());
    }

    #[test]
    fn component_bits_match_opensm() {
        // OpenSM ib_types.h IB_PIR_COMPMASK_LMC, _CLIENTREREG and _LINKSPDEXTENAB (host order).
        assert_eq!(PortInfoRecord::COMP_LMC, 1 << 20);
        assert_eq!(PortInfoRecord::COMP_CLIENT_REREGISTER, 1 << 43);
        assert_eq!(PortInfoRecord::COMP_LINK_SPEED_EXT_ENABLED, 1 << 57);
    }

    proptest! {
        #[test]
        fn round_trips(b in proptest::collection::vec(any::<u8>(), PortInfoRecord::LEN)) {
            round_trip(&PortInfoRecord::parse(&b).unwrap());
        }

        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = PortInfoRecord::parse(&b);
        }
    }
}
