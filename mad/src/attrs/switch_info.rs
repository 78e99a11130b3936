//! SwitchInfo (attribute 0x0012): a switch's forwarding-table capacities and switch-wide settings.
//!
//! Layout (IBTA 14.2.5.4, cross-checked with libibmad `fields.c` and OpenSM
//! `ib_switch_info_t`), bit offset/width: LinearFDBCap 0/16, RandomFDBCap 16/16,
//! MulticastFDBCap 32/16, LinearFDBTop 48/16, DefaultPort 64/8, DefaultMulticastPrimaryPort 72/8,
//! DefaultMulticastNotPrimaryPort 80/8, LifeTimeValue 88/5, PortStateChange 93/1,
//! OptimizedSLtoVLMappingProgramming 94/2, LIDsPerPort 96/16, PartitionEnforcementCap 112/16,
//! InboundEnforcementCap 128/1, OutboundEnforcementCap 129/1, FilterRawInboundCap 130/1,
//! FilterRawOutboundCap 131/1, EnhancedPort0 132/1, reserved 133..144, MulticastFDBTop 144/16,
//! reserved 160..512.

use super::{flag, put_flag, put_small, small};
use crate::bits;
use crate::{Attribute, Lid, PortNum, Result, check_len, ids};

/// SwitchInfo: how many LIDs a switch can forward and how it treats unknown destinations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[allow(clippy::struct_excessive_bools)] // one bool per one-bit flag of the spec layout
pub struct SwitchInfo {
    /// Number of LinearForwardingTable entries the switch supports (LIDs 0..cap).
    pub linear_fdb_cap: u16,
    /// Number of RandomForwardingTable entries (0: not supported).
    pub random_fdb_cap: u16,
    /// Number of multicast LIDs the MulticastForwardingTable holds.
    pub multicast_fdb_cap: u16,
    /// Highest LID the switch forwards by its LFT; set by the SM (LID routing fails above it).
    pub linear_fdb_top: Lid,
    /// Port for unicast DLIDs not in the forwarding table (random FDB switches only).
    pub default_port: PortNum,
    /// Port for multicast DLIDs not in the MFT.
    pub default_multicast_primary_port: PortNum,
    /// Port for multicast DLIDs not in the MFT, when the packet came in on the primary port.
    pub default_multicast_not_primary_port: PortNum,
    /// Switch lifetime code: packets older than 4.096 us * 2^n are dropped (5 bits).
    pub life_time_value: u8,
    /// Set by the switch when any port changed state; the SM writes 1 to clear it.
    pub port_state_change: bool,
    /// Optimized SL-to-VL mapping programming support (2 bits).
    pub optimized_sl_to_vl_mapping_programming: u8,
    /// Number of LID/LMC combinations each port supports (0: one LID per port).
    pub lids_per_port: u16,
    /// P_Key table entries on each external port.
    pub partition_enforcement_cap: u16,
    /// The switch can enforce P_Keys on inbound packets.
    pub inbound_enforcement_cap: bool,
    /// The switch can enforce P_Keys on outbound packets.
    pub outbound_enforcement_cap: bool,
    /// The switch can drop raw packets on inbound.
    pub filter_raw_inbound_cap: bool,
    /// The switch can drop raw packets on outbound.
    pub filter_raw_outbound_cap: bool,
    /// Port 0 is an enhanced port (has its own VLs, arbitration and P_Key checks).
    pub enhanced_port0: bool,
    /// Highest multicast LID the switch forwards by its MFT (0: use MulticastFDBCap).
    pub multicast_fdb_top: Lid,
}

impl Attribute for SwitchInfo {
    const ID: u16 = ids::attr::SWITCH_INFO;
    const LEN: usize = 64;

    fn parse(buf: &[u8]) -> Result<Self> {
        check_len("SwitchInfo", buf, Self::LEN)?;
        Ok(SwitchInfo {
            linear_fdb_cap: bits::u16_at(buf, 0),
            random_fdb_cap: bits::u16_at(buf, 2),
            multicast_fdb_cap: bits::u16_at(buf, 4),
            linear_fdb_top: Lid(bits::u16_at(buf, 6)),
            default_port: PortNum(buf[8]),
            default_multicast_primary_port: PortNum(buf[9]),
            default_multicast_not_primary_port: PortNum(buf[10]),
            life_time_value: small(buf, 88, 5),
            port_state_change: flag(buf, 93),
            optimized_sl_to_vl_mapping_programming: small(buf, 94, 2),
            lids_per_port: bits::u16_at(buf, 12),
            partition_enforcement_cap: bits::u16_at(buf, 14),
            inbound_enforcement_cap: flag(buf, 128),
            outbound_enforcement_cap: flag(buf, 129),
            filter_raw_inbound_cap: flag(buf, 130),
            filter_raw_outbound_cap: flag(buf, 131),
            enhanced_port0: flag(buf, 132),
            multicast_fdb_top: Lid(bits::u16_at(buf, 18)),
        })
    }

    fn emit(&self, buf: &mut [u8]) {
        let b = &mut buf[..Self::LEN];
        b.fill(0);
        bits::put_u16(b, 0, self.linear_fdb_cap);
        bits::put_u16(b, 2, self.random_fdb_cap);
        bits::put_u16(b, 4, self.multicast_fdb_cap);
        bits::put_u16(b, 6, self.linear_fdb_top.0);
        b[8] = self.default_port.0;
        b[9] = self.default_multicast_primary_port.0;
        b[10] = self.default_multicast_not_primary_port.0;
        put_small(b, 88, 5, self.life_time_value);
        put_flag(b, 93, self.port_state_change);
        put_small(b, 94, 2, self.optimized_sl_to_vl_mapping_programming);
        bits::put_u16(b, 12, self.lids_per_port);
        bits::put_u16(b, 14, self.partition_enforcement_cap);
        put_flag(b, 128, self.inbound_enforcement_cap);
        put_flag(b, 129, self.outbound_enforcement_cap);
        put_flag(b, 130, self.filter_raw_inbound_cap);
        put_flag(b, 131, self.filter_raw_outbound_cap);
        put_flag(b, 132, self.enhanced_port0);
        bits::put_u16(b, 18, self.multicast_fdb_top.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attrs::test_util::{emit_parse_roundtrip, rejects_short};
    use proptest::prelude::*;

    /// ibsim 0.10 `net` example after an OpenSM sweep, `smpquery -D switchinfo 0` (Switch1).
    /// smpquery printed: LinearFdbCap 30720, RandomFdbCap 0, McastFdbCap 1024, LinearFdbTop 4,
    /// LifeTime 18, PartEnforceCap 64, FilterRawInbound 1, FilterRawOutbound 1, the rest 0.
    const IBSIM_SWITCH1: [u8; 64] = {
        let mut b = [0u8; 64];
        let head =
            [0x78, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x90, 0x00, 0x00, 0x00, 0x40, 0x30];
        let mut i = 0;
        while i < head.len() {
            b[i] = head[i];
            i += 1;
        }
        b
    };

    /// Encoded by libibmad 44.0 `mad_set_field` (throw-away C program) with the values of
    /// [`every_field`].
    const LIBIBMAD_EVERY_FIELD: [u8; 20] = [
        0xc0, 0x00, 0x12, 0x34, 0x04, 0x00, 0x0b, 0xff, 0x03, 0xff, 0x24, 0xae, 0x01, 0x01, 0x00, 0x20, 0x98, 0x00,
        0xc1, 0xff,
    ];

    fn every_field() -> SwitchInfo {
        SwitchInfo {
            linear_fdb_cap: 49152,
            random_fdb_cap: 0x1234,
            multicast_fdb_cap: 1024,
            linear_fdb_top: Lid(0x0bff),
            default_port: PortNum(3),
            default_multicast_primary_port: PortNum(0xff),
            default_multicast_not_primary_port: PortNum(0x24),
            life_time_value: 21,
            port_state_change: true,
            optimized_sl_to_vl_mapping_programming: 2,
            lids_per_port: 0x0101,
            partition_enforcement_cap: 32,
            inbound_enforcement_cap: true,
            outbound_enforcement_cap: false,
            filter_raw_inbound_cap: false,
            filter_raw_outbound_cap: true,
            enhanced_port0: true,
            multicast_fdb_top: Lid(0xc1ff),
        }
    }

    #[test]
    fn deconstruct_ibsim() {
        let s = SwitchInfo::parse(&IBSIM_SWITCH1).unwrap();
        assert_eq!(s.linear_fdb_cap, 30720);
        assert_eq!(s.random_fdb_cap, 0);
        assert_eq!(s.multicast_fdb_cap, 1024);
        assert_eq!(s.linear_fdb_top, Lid(4));
        assert_eq!(s.default_port, PortNum(0));
        assert_eq!(s.life_time_value, 18);
        assert!(!s.port_state_change);
        assert_eq!(s.optimized_sl_to_vl_mapping_programming, 0);
        assert_eq!(s.lids_per_port, 0);
        assert_eq!(s.partition_enforcement_cap, 64);
        assert!(!s.inbound_enforcement_cap && !s.outbound_enforcement_cap);
        assert!(s.filter_raw_inbound_cap && s.filter_raw_outbound_cap);
        assert!(!s.enhanced_port0);
        assert_eq!(s.multicast_fdb_top, Lid(0));
        assert_eq!(s.to_vec(), IBSIM_SWITCH1);
    }

    #[test]
    fn every_field_matches_libibmad() {
        let mut b = [0u8; 64];
        b[..20].copy_from_slice(&LIBIBMAD_EVERY_FIELD);
        assert_eq!(SwitchInfo::parse(&b).unwrap(), every_field());
        assert_eq!(every_field().to_vec(), b);
    }

    #[test]
    fn reserved_ignored_and_short_rejected() {
        let mut b = IBSIM_SWITCH1;
        b[16] |= 0x07;
        b[17] = 0xff;
        b[40] = 0xff;
        assert_eq!(SwitchInfo::parse(&b).unwrap().to_vec(), IBSIM_SWITCH1);
        rejects_short::<SwitchInfo>();
    }

    prop_compose! {
        fn arb_switch_info()(
            caps in any::<(u16, u16, u16, u16, u16, u16)>(),
            ports in any::<(u8, u8, u8)>(),
            small in any::<(u8, u8, u8)>(),
            top in any::<u16>(),
        ) -> SwitchInfo {
            SwitchInfo {
                linear_fdb_cap: caps.0,
                random_fdb_cap: caps.1,
                multicast_fdb_cap: caps.2,
                linear_fdb_top: Lid(caps.3),
                default_port: PortNum(ports.0),
                default_multicast_primary_port: PortNum(ports.1),
                default_multicast_not_primary_port: PortNum(ports.2),
                life_time_value: small.0 & 0x1f,
                port_state_change: small.0 & 0x20 != 0,
                optimized_sl_to_vl_mapping_programming: small.1 & 3,
                lids_per_port: caps.4,
                partition_enforcement_cap: caps.5,
                inbound_enforcement_cap: small.2 & 1 != 0,
                outbound_enforcement_cap: small.2 & 2 != 0,
                filter_raw_inbound_cap: small.2 & 4 != 0,
                filter_raw_outbound_cap: small.2 & 8 != 0,
                enhanced_port0: small.2 & 16 != 0,
                multicast_fdb_top: Lid(top),
            }
        }
    }

    proptest! {
        #[test]
        fn roundtrip(s in arb_switch_info()) {
            emit_parse_roundtrip(&s);
        }

        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = SwitchInfo::parse(&b);
        }
    }
}
