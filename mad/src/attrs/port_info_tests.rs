//! Tests of [`super::PortInfo`]: real packets from ibsim (decoded independently by smpquery),
//! a libibmad-encoded packet with every field non-zero, and property tests.

use super::*;
use crate::attrs::test_util::{emit_parse_roundtrip, rejects_short};
use proptest::prelude::*;

/// ibsim 0.10 `net` example after one OpenSM 3.3.23 sweep: `smpquery -D portinfo 0,1 1`
/// (Hca1 port 1), GetResp data bytes 64..128. smpquery printed: GidPrefix fe80::, Lid 2,
/// SMLid 1, CapMask 0x50c048, MkeyLeasePeriod 4089, LocalPort 1, LinkWidthEnabled 4X,
/// LinkWidthSupported 1X/4X/8X/12X/2X, LinkWidthActive 4X, LinkSpeedSupported 2.5/5/10,
/// Active, LinkUp, LinkDownDefState Polling, LinkSpeedActive/Enabled 2.5, NeighborMTU 2048,
/// VLCap VL0-7, VLArbHigh/LowCap 8, MtuCap 2048, VLStallCount 7, OperVLs VL0-7, GuidCap 32,
/// SubnetTimeout 31, CapabilityMask2 0x30, everything else 0.
const IBSIM_HCA_ACTIVE: [u8; 64] = [
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00,
    0x01, 0x00, 0x50, 0xc0, 0x48, 0x00, 0x00, 0x0f, 0xf9, 0x01, 0x02, 0x1f, 0x02, 0x74, 0x52, 0x00, 0x11, 0x40, 0x40,
    0x00, 0x08, 0x08, 0x04, 0xe0, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x20, 0x1f, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x30, 0x00, 0x00,
];

/// Same fabric, `smpquery -D portinfo 0 0` (Switch1 management port 0). smpquery printed:
/// Lid 1, SMLid 1, CapMask 0xc048, LocalPort 0, NeighborMTU 256, MtuCap 1024, VLStallCount 0,
/// GuidCap 1, SubnetTimeout 31, RespTimeVal 8; the rest as for the HCA port.
const IBSIM_SWITCH_PORT0: [u8; 64] = [
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00,
    0x01, 0x00, 0x00, 0xc0, 0x48, 0x00, 0x00, 0x0f, 0xf9, 0x00, 0x02, 0x1f, 0x02, 0x74, 0x52, 0x00, 0x11, 0x10, 0x40,
    0x00, 0x08, 0x08, 0x03, 0x00, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x1f, 0x08, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x30, 0x00, 0x00,
];

/// Same fabric, `smpquery -D portinfo 0 5` (Switch1 port 5, no cable). smpquery printed:
/// LinkState Down, PhysLinkState Polling, LocalPhysErr 4, CapMask 0, GidPrefix 0.
const IBSIM_SWITCH_PORT5_DOWN: [u8; 64] = [
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x1f, 0x02, 0x71, 0x22, 0x00, 0x11, 0x40, 0x40,
    0x00, 0x08, 0x08, 0x04, 0xe0, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
];

/// Encoded by libibmad 44.0 `mad_set_field` (a throw-away C program), one call per field with
/// the values of [`every_field`]: every field non-zero, including those ibsim always leaves 0.
const LIBIBMAD_EVERY_FIELD: [u8; 64] = [
    0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x0a, 0xbc, 0x12, 0x34, 0x00,
    0x42, 0x02, 0x51, 0x08, 0x4a, 0x01, 0x02, 0x02, 0x58, 0x07, 0xff, 0x1f, 0x08, 0x73, 0x52, 0xc5, 0x4f, 0x59, 0x4a,
    0x33, 0x08, 0x10, 0xc4, 0xd3, 0x3a, 0x11, 0x11, 0x22, 0x22, 0x33, 0x33, 0x80, 0xd2, 0x14, 0x8e, 0xbe, 0xef, 0x00,
    0xab, 0xcd, 0xef, 0x04, 0x32, 0x2b, 0x1e,
];

/// The values given to libibmad for [`LIBIBMAD_EVERY_FIELD`].
fn every_field() -> PortInfo {
    PortInfo {
        m_key: MKey(0x0123_4567_89ab_cdef),
        gid_prefix: 0xfe80_0000_0000_0abc,
        lid: Lid(0x1234),
        master_sm_lid: Lid(0x42),
        capability_mask: CapabilityMask(0x0251_084a),
        diag_code: 0x0102,
        m_key_lease_period: 600,
        local_port_num: PortNum(7),
        link_width_enabled: LinkWidthMask::SET_TO_SUPPORTED,
        link_width_supported: LinkWidthMask(0x1f),
        link_width_active: LinkWidth::X12,
        link_speed_supported: LinkSpeedMask(7),
        port_state: PortState::Armed,
        port_physical_state: PhysPortState::LinkUp,
        link_down_default_state: LinkDownDefaultState::Polling,
        m_key_protect_bits: 3,
        lmc: 5,
        link_speed_active: LinkSpeed::Qdr,
        link_speed_enabled: LinkSpeedMask::SET_TO_SUPPORTED,
        neighbor_mtu: Mtu::M4096,
        master_sm_sl: 9,
        vl_cap: 4,
        init_type: 0xa,
        vl_high_limit: 0x33,
        vl_arbitration_high_cap: 8,
        vl_arbitration_low_cap: 16,
        init_type_reply: 0xc,
        mtu_cap: Mtu::M2048,
        vl_stall_count: 6,
        hoq_life: 19,
        operational_vls: 3,
        partition_enforcement_inbound: true,
        partition_enforcement_outbound: false,
        filter_raw_inbound: true,
        filter_raw_outbound: false,
        m_key_violations: 0x1111,
        p_key_violations: 0x2222,
        q_key_violations: 0x3333,
        guid_cap: 128,
        client_reregister: true,
        multicast_pkey_trap_suppression_enabled: 2,
        subnet_timeout: 18,
        resp_time_value: 20,
        local_phy_errors: 8,
        overrun_errors: 0xe,
        max_credit_hint: 0xbeef,
        link_speed_ext_active2: 0,
        link_speed_ext_supported2: 0,
        link_speed_ext_enabled2: 0,
        link_round_trip_latency: 0xab_cdef,
        capability_mask2: CapabilityMask2(0x0432),
        link_speed_ext_active: LinkSpeedExt::Edr,
        link_speed_ext_supported: LinkSpeedExtMask(0xb),
        link_speed_ext_enabled: LinkSpeedExtMask::DISABLE,
    }
}

#[test]
fn deconstruct_ibsim_hca_port() {
    let p = PortInfo::parse(&IBSIM_HCA_ACTIVE).unwrap();
    assert_eq!(p.m_key, MKey(0));
    assert_eq!(p.gid_prefix, 0xfe80_0000_0000_0000);
    assert_eq!(p.lid, Lid(2));
    assert_eq!(p.master_sm_lid, Lid(1));
    assert_eq!(p.capability_mask, CapabilityMask(0x0050_c048));
    assert_eq!(p.m_key_lease_period, 4089);
    assert_eq!(p.local_port_num, PortNum(1));
    assert_eq!(p.link_width_enabled, LinkWidthMask::X4);
    assert_eq!(p.link_width_supported, LinkWidthMask(0x1f));
    assert_eq!(p.link_width_active, LinkWidth::X4);
    assert_eq!(p.link_speed_supported, LinkSpeedMask::SDR | LinkSpeedMask::DDR | LinkSpeedMask::QDR);
    assert_eq!(p.port_state, PortState::Active);
    assert_eq!(p.port_physical_state, PhysPortState::LinkUp);
    assert_eq!(p.link_down_default_state, LinkDownDefaultState::Polling);
    assert_eq!((p.m_key_protect_bits, p.lmc), (0, 0));
    assert_eq!(p.link_speed_active, LinkSpeed::Sdr);
    assert_eq!(p.link_speed_enabled, LinkSpeedMask::SDR);
    assert_eq!(p.neighbor_mtu, Mtu::M2048);
    assert_eq!(p.master_sm_sl, 0);
    assert_eq!(p.vl_cap, 4);
    assert_eq!((p.vl_arbitration_high_cap, p.vl_arbitration_low_cap), (8, 8));
    assert_eq!(p.mtu_cap, Mtu::M2048);
    assert_eq!((p.vl_stall_count, p.hoq_life, p.operational_vls), (7, 0, 4));
    assert_eq!(p.guid_cap, 32);
    assert!(!p.client_reregister);
    assert_eq!((p.subnet_timeout, p.resp_time_value), (31, 0));
    assert_eq!(p.capability_mask2, CapabilityMask2(0x30));
    assert_eq!(p.link_speed_ext_active, LinkSpeedExt::None);
    assert_eq!(p.link_speed_ext_supported, LinkSpeedExtMask(0));
}

#[test]
fn deconstruct_ibsim_switch_ports() {
    let p0 = PortInfo::parse(&IBSIM_SWITCH_PORT0).unwrap();
    assert_eq!((p0.lid, p0.master_sm_lid, p0.local_port_num), (Lid(1), Lid(1), PortNum(0)));
    assert_eq!(p0.capability_mask, CapabilityMask(0xc048));
    assert_eq!((p0.neighbor_mtu, p0.mtu_cap), (Mtu::M256, Mtu::M1024));
    assert_eq!((p0.vl_stall_count, p0.guid_cap, p0.resp_time_value), (0, 1, 8));

    let p5 = PortInfo::parse(&IBSIM_SWITCH_PORT5_DOWN).unwrap();
    assert_eq!(p5.port_state, PortState::Down);
    assert_eq!(p5.port_physical_state, PhysPortState::Polling);
    assert_eq!(p5.local_phy_errors, 4);
    assert_eq!(p5.lid, Lid(0));
    assert_eq!(p5.gid_prefix, 0);
}

#[test]
fn construct_equals_real_bytes() {
    for fixture in [IBSIM_HCA_ACTIVE, IBSIM_SWITCH_PORT0, IBSIM_SWITCH_PORT5_DOWN] {
        assert_eq!(PortInfo::parse(&fixture).unwrap().to_vec(), fixture);
    }
    assert_eq!(every_field().to_vec(), LIBIBMAD_EVERY_FIELD);
}

#[test]
fn deconstruct_libibmad_every_field() {
    assert_eq!(PortInfo::parse(&LIBIBMAD_EVERY_FIELD).unwrap(), every_field());
}

#[test]
fn reserved_bits_are_ignored_and_zeroed() {
    let mut b = IBSIM_HCA_ACTIVE;
    // Reserved: bits 274..277 (byte 34 mask 0x38), 416..419 (byte 52 mask 0xe0),
    // bit 448 (byte 56 mask 0x80), bits 504..507 (byte 63 mask 0xe0).
    b[34] |= 0x38;
    b[52] |= 0xe0;
    b[56] |= 0x80;
    b[63] |= 0xe0;
    let p = PortInfo::parse(&b).unwrap();
    assert_eq!(p, PortInfo::parse(&IBSIM_HCA_ACTIVE).unwrap());
    assert_eq!(p.to_vec(), IBSIM_HCA_ACTIVE);
}

/// The XDR fields of IBTA 1.7 as libibmad (rdma-core HEAD, `fields.c`: LinkSpeedExtActive2 at
/// bit 449 width 2, LinkSpeedExtSupported2 at 451 width 2, LinkSpeedExtEnabled2 at 453 width 3)
/// and the Linux mlx5 driver (`(data[56] >> 4) & 0x6 == 2` is an XDR link) lay them out: byte 56
/// 0x29 is Active2 1 (XDR), Supported2 1, Enabled2 1.
#[test]
fn xdr_fields_sit_in_byte_56() {
    let mut b = IBSIM_HCA_ACTIVE;
    b[56] = 0x29;
    let p = PortInfo::parse(&b).unwrap();
    assert_eq!((p.link_speed_ext_active2, p.link_speed_ext_supported2, p.link_speed_ext_enabled2), (1, 1, 1));
    assert_eq!(p.link_speed_ext_active2, LINK_SPEED_EXT2_XDR);
    assert_eq!((b[56] >> 4) & 0x6, 2, "what the kernel reads as an XDR link");
    assert_eq!(p.to_vec(), b);
    // Each field alone, at its own bits.
    for (info, byte) in [
        (PortInfo { link_speed_ext_active2: 3, ..PortInfo::default() }, 0x60),
        (PortInfo { link_speed_ext_supported2: 3, ..PortInfo::default() }, 0x18),
        (PortInfo { link_speed_ext_enabled2: 7, ..PortInfo::default() }, 0x07),
    ] {
        assert_eq!(info.to_vec()[56], byte, "{info:?}");
        assert_eq!(PortInfo::parse(&info.to_vec()).unwrap(), info);
    }
    // The other fields of the ibsim packet are untouched.
    let plain = PortInfo::parse(&IBSIM_HCA_ACTIVE).unwrap();
    assert_eq!(
        PortInfo { link_speed_ext_active2: 0, link_speed_ext_supported2: 0, link_speed_ext_enabled2: 0, ..p },
        plain
    );
    assert_eq!(SM_SUPPORTS_EXTENDED_SPEEDS, 0x8000_0000);
}

#[test]
fn short_input() {
    rejects_short::<PortInfo>();
}

fn bits_of(v: u64, width: u32) -> u8 {
    (v & ((1 << width) - 1)) as u8
}

prop_compose! {
    fn arb_port_info()(w in proptest::array::uniform32(any::<u64>())) -> PortInfo {
        PortInfo {
            m_key: MKey(w[0]),
            gid_prefix: w[1],
            lid: Lid(w[2] as u16),
            master_sm_lid: Lid((w[2] >> 16) as u16),
            capability_mask: CapabilityMask((w[2] >> 32) as u32),
            diag_code: w[3] as u16,
            m_key_lease_period: (w[3] >> 16) as u16,
            local_port_num: PortNum((w[3] >> 32) as u8),
            link_width_enabled: LinkWidthMask((w[3] >> 40) as u8),
            link_width_supported: LinkWidthMask((w[3] >> 48) as u8),
            link_width_active: LinkWidth::from_raw((w[3] >> 56) as u8),
            link_speed_supported: LinkSpeedMask(bits_of(w[4], 4)),
            port_state: PortState::from_raw(bits_of(w[4] >> 4, 4)),
            port_physical_state: PhysPortState::from_raw(bits_of(w[4] >> 8, 4)),
            link_down_default_state: LinkDownDefaultState::from_raw(bits_of(w[4] >> 12, 4)),
            m_key_protect_bits: bits_of(w[4] >> 16, 2),
            lmc: bits_of(w[4] >> 18, 3),
            link_speed_active: LinkSpeed::from_raw(bits_of(w[4] >> 21, 4)),
            link_speed_enabled: LinkSpeedMask(bits_of(w[4] >> 25, 4)),
            neighbor_mtu: Mtu::from_raw(bits_of(w[4] >> 29, 4)),
            master_sm_sl: bits_of(w[4] >> 33, 4),
            vl_cap: bits_of(w[4] >> 37, 4),
            init_type: bits_of(w[4] >> 41, 4),
            vl_high_limit: w[5] as u8,
            vl_arbitration_high_cap: (w[5] >> 8) as u8,
            vl_arbitration_low_cap: (w[5] >> 16) as u8,
            init_type_reply: bits_of(w[5] >> 24, 4),
            mtu_cap: Mtu::from_raw(bits_of(w[5] >> 28, 4)),
            vl_stall_count: bits_of(w[5] >> 32, 3),
            hoq_life: bits_of(w[5] >> 35, 5),
            operational_vls: bits_of(w[5] >> 40, 4),
            partition_enforcement_inbound: w[5] >> 44 & 1 == 1,
            partition_enforcement_outbound: w[5] >> 45 & 1 == 1,
            filter_raw_inbound: w[5] >> 46 & 1 == 1,
            filter_raw_outbound: w[5] >> 47 & 1 == 1,
            m_key_violations: w[6] as u16,
            p_key_violations: (w[6] >> 16) as u16,
            q_key_violations: (w[6] >> 32) as u16,
            guid_cap: (w[6] >> 48) as u8,
            client_reregister: w[6] >> 56 & 1 == 1,
            multicast_pkey_trap_suppression_enabled: bits_of(w[6] >> 57, 2),
            subnet_timeout: bits_of(w[7], 5),
            resp_time_value: bits_of(w[7] >> 5, 5),
            local_phy_errors: bits_of(w[7] >> 10, 4),
            overrun_errors: bits_of(w[7] >> 14, 4),
            max_credit_hint: (w[7] >> 18) as u16,
            link_speed_ext_active2: bits_of(w[9], 2),
            link_speed_ext_supported2: bits_of(w[9] >> 2, 2),
            link_speed_ext_enabled2: bits_of(w[9] >> 4, 3),
            link_round_trip_latency: (w[8] & 0xff_ffff) as u32,
            capability_mask2: CapabilityMask2((w[8] >> 24) as u16),
            link_speed_ext_active: LinkSpeedExt::from_raw(bits_of(w[8] >> 40, 4)),
            link_speed_ext_supported: LinkSpeedExtMask(bits_of(w[8] >> 44, 4)),
            link_speed_ext_enabled: LinkSpeedExtMask(bits_of(w[8] >> 48, 5)),
        }
    }
}

proptest! {
    #[test]
    fn roundtrip(p in arb_port_info()) {
        emit_parse_roundtrip(&p);
    }

    #[test]
    fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..100)) {
        if let Ok(p) = PortInfo::parse(&b) {
            // Whatever was read re-encodes to the same bytes outside the reserved bits.
            let out = p.to_vec();
            prop_assert_eq!(PortInfo::parse(&out).unwrap(), p);
        }
    }
}
