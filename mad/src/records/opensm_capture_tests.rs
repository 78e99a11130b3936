//! Real traffic: the first record of SA responses sent by OpenSM 3.3.23 under ibsim 0.10
//! (net.2sw2path4hca, `ibsim -v -v -v` packet dumps), queried with infiniband-diags 44.0
//! `saquery <TYPE>` from Hca3. Expected values are the ones saquery printed for the same
//! responses. Each capture must parse to those values, re-emit to the same bytes (OpenSM leaves
//! reserved bits zero), and sit at the AttributeOffset stride OpenSM used.

use super::*;
use crate::attrs::{LinkWidth, Mtu as PortMtu, NodeType, PhysPortState, PortState, SmState};
use crate::records::testutil::hex;
use crate::{Guid, Lid, PKey, PortNum};

/// Parses a capture, checks that it re-emits byte for byte and that OpenSM's AttributeOffset
/// (in 8-byte words) equals our stride, and returns the record.
fn check<A: Attribute + core::fmt::Debug>(capture: &str, attribute_offset: usize) -> A {
    let bytes = hex(capture);
    let rec = A::parse(&bytes).expect("capture parses");
    assert_eq!(rec.to_vec(), bytes[..A::LEN], "re-emit of {rec:?}");
    if attribute_offset != 0 {
        assert_eq!(stride::<A>(), attribute_offset * 8);
    }
    rec
}

const fn fe80(guid: u64) -> Gid {
    Gid { prefix: 0xfe80_0000_0000_0000, guid: Guid(guid) }
}

#[test]
fn class_port_info() {
    // Get(ClassPortInfo) response; saquery -c: CapabilityMask 0x2602, CapabilityMask2 0xB5E8,
    // RespTimeValue 0x10, RedirectQP 1, RedirectQKey and TrapQKey 0x80010000.
    let c: ClassPortInfo = check(
        "01 02 26 02 00 16 bd 10 00 00 00 00 00 00 00 00
         00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
         00 00 00 01 80 01 00 00 00 00 00 00 00 00 00 00
         00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
         00 00 00 00 80 01 00 00",
        0,
    );
    assert_eq!((c.base_version, c.class_version, c.capability_mask), (1, 2, 0x2602));
    assert_eq!((c.capability_mask2, c.resp_time_value), (0xb5e8, 0x10));
    assert_eq!((c.redirect_qp, c.redirect_qkey, c.trap_qkey), (1, 0x8001_0000, 0x8001_0000));
    assert_eq!(c.redirect_lid, Lid(0));
}

#[test]
fn node_record() {
    // AttributeOffset 14; saquery NR: lid 2, CA, 2 ports, node_guid 0x100000, port_guid
    // 0x100001, partition_cap 0x40, revision 0xA1, port_num 1, "Hca1".
    let n: NodeRecord = check(
        "00 02 00 00 01 01 01 02 00 00 00 00 00 10 00 00
         00 00 00 00 00 10 00 00 00 00 00 00 00 10 00 01
         00 40 00 00 00 00 00 a1 01 00 00 00 48 63 61 31
         00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
         00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
         00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
         00 00 00 00 00 00 00 00 00 00 00 00",
        14,
    );
    assert_eq!(n.lid, Lid(2));
    assert_eq!(n.node_info.node_type, NodeType::Ca);
    assert_eq!(n.node_info.num_ports, 2);
    assert_eq!(n.node_info.node_guid, Guid(0x10_0000));
    assert_eq!(n.node_info.port_guid, Guid(0x10_0001));
    assert_eq!((n.node_info.partition_cap, n.node_info.revision), (0x40, 0xa1));
    assert_eq!(n.node_info.local_port_num, PortNum(1));
    assert_eq!(n.node_description.text(), "Hca1");
}

#[test]
fn port_info_record() {
    // AttributeOffset 9; saquery PIR: EndPortLid 2, PortNum 1, Lid 2, SMLid 2, CapMask 0x50c04a,
    // MkeyLeasePeriod 4089, LinkWidthActive 4X, Active/LinkUp, NeighborMTU and MtuCap 2048,
    // VLStallCount 7, GuidCap 32, SubnetTimeout 31.
    let p: PortInfoRecord = check(
        "00 02 01 00 00 00 00 00 00 00 00 00 fe 80 00 00
         00 00 00 00 00 02 00 02 00 50 c0 4a 00 00 0f f9
         01 02 1f 02 74 52 00 11 40 40 00 08 08 04 e0 40
         00 00 00 00 00 00 20 1f 00 00 00 00 00 00 00 00
         00 30 00 00",
        9,
    );
    let pi = &p.port_info;
    assert_eq!((p.endport_lid, p.port_num, p.options), (Lid(2), PortNum(1), 0));
    assert_eq!((pi.lid, pi.master_sm_lid, pi.capability_mask.0), (Lid(2), Lid(2), 0x0050_c04a));
    assert_eq!(pi.m_key_lease_period, 4089);
    assert_eq!(pi.link_width_active, LinkWidth::X4);
    assert_eq!((pi.port_state, pi.port_physical_state), (PortState::Active, PhysPortState::LinkUp));
    assert_eq!((pi.neighbor_mtu, pi.mtu_cap), (PortMtu::M2048, PortMtu::M2048));
    assert_eq!(Mtu::from(pi.mtu_cap), Mtu::Mtu2048);
    assert_eq!((pi.vl_stall_count, pi.guid_cap, pi.subnet_timeout), (7, 32, 31));
}

#[test]
fn link_record() {
    // AttributeOffset 1; saquery LR: FromLID 2, FromPort 1, ToPort 1, ToLID 1.
    let l: LinkRecord = check("00 02 01 01 00 01", 1);
    assert_eq!(l, LinkRecord { from_lid: Lid(2), from_port: PortNum(1), to_port: PortNum(1), to_lid: Lid(1) });
}

#[test]
fn path_record() {
    // AttributeOffset 8; saquery PR: dgid = sgid = fe80::20:0, dlid = slid = 1,
    // num_path_revers 0x80, pkey 0xFFFF, mtu 0x83, rate 0x83, pkt_life 0x80.
    let p: PathRecord = check(
        "00 00 00 00 00 00 00 00 fe 80 00 00 00 00 00 00
         00 00 00 00 00 20 00 00 fe 80 00 00 00 00 00 00
         00 00 00 00 00 20 00 00 00 01 00 01 00 00 00 00
         00 80 ff ff 00 00 83 83 80 00 00 00 00 00 00 00",
        8,
    );
    assert_eq!((p.dgid, p.sgid), (fe80(0x20_0000), fe80(0x20_0000)));
    assert_eq!((p.dlid, p.slid), (Lid(1), Lid(1)));
    assert!(p.reversible);
    assert_eq!((p.numb_path, p.pkey), (0, PKey(0xffff)));
    assert_eq!((p.mtu_selector, p.mtu), (Selector::Exactly, Mtu::Mtu1024));
    assert_eq!((p.rate_selector, p.rate), (Selector::Exactly, Rate::Gbps10));
    assert_eq!((p.packet_life_time_selector, p.packet_life_time), (Selector::Exactly, 0));
}

#[test]
fn mc_member_record() {
    // AttributeOffset 7; saquery MCMR: MGID ff12:401b:ffff::ffff:ffff (IPoIB broadcast),
    // qkey 0xb1b, mlid 0xc000, mtu 0x84, pkey 0xffff, rate 0x83, pkt_life 0x92, Scope 2.
    let m: McMemberRecord = check(
        "ff 12 40 1b ff ff 00 00 00 00 00 00 ff ff ff ff
         00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
         00 00 0b 1b c0 00 84 00 ff ff 83 92 00 00 00 00
         20 00 00 00",
        7,
    );
    assert_eq!(m.mgid, Gid { prefix: 0xff12_401b_ffff_0000, guid: Guid(0xffff_ffff) });
    assert_eq!((m.qkey, m.mlid, m.pkey), (0xb1b, Lid(0xc000), PKey(0xffff)));
    assert_eq!((m.mtu_selector, m.mtu), (Selector::Exactly, Mtu::Mtu2048));
    assert_eq!((m.rate_selector, m.rate), (Selector::Exactly, Rate::Gbps10));
    assert_eq!((m.packet_life_time_selector, m.packet_life_time), (Selector::Exactly, 18));
    assert_eq!((m.scope, m.join_state, m.proxy_join), (2, JoinState(0), false));
}

#[test]
fn lft_record() {
    // AttributeOffset 9; saquery LFTR: LID 1, Block 0, LID 0 -> 255, 1 -> 0, 2 -> 1, 3 -> 3,
    // 4 -> 255, 5 -> 3, 6 -> 2, 7 -> 5.
    let l: LftRecord = check(
        "00 01 00 00 00 00 00 00 ff 00 01 03 ff 03 02 05
         ff ff ff ff ff ff ff ff ff ff ff ff ff ff ff ff
         ff ff ff ff ff ff ff ff ff ff ff ff ff ff ff ff
         ff ff ff ff ff ff ff ff ff ff ff ff ff ff ff ff
         ff ff ff ff ff ff ff ff",
        9,
    );
    assert_eq!((l.lid, l.block_num), (Lid(1), 0));
    let ports: Vec<u8> = l.lft.ports[..8].iter().map(|p| p.0).collect();
    assert_eq!(ports, [255, 0, 1, 3, 255, 3, 2, 5]);
}

#[test]
fn switch_info_record() {
    // AttributeOffset 3; saquery SWIR: LID 1, LinearFDBCap 0x7800, MulticastFDBCap 0x400,
    // LinearFDBTop 7, LifeTimeValue/PortStateChange/OpSL2VL 0x90, PartitionEnforcementCap 0x40,
    // flags 0x30.
    let s: SwitchInfoRecord = check(
        "00 01 00 00 78 00 00 00 04 00 00 07 00 00 00 90
         00 00 00 40 30 00 00 00",
        3,
    );
    let si = &s.switch_info;
    assert_eq!(s.lid, Lid(1));
    assert_eq!((si.linear_fdb_cap, si.multicast_fdb_cap, si.linear_fdb_top), (0x7800, 0x400, Lid(7)));
    assert_eq!((si.life_time_value, si.port_state_change), (18, false));
    assert_eq!(si.partition_enforcement_cap, 0x40);
    assert!(si.filter_raw_inbound_cap && si.filter_raw_outbound_cap && !si.inbound_enforcement_cap);
}

#[test]
fn sm_info_record() {
    // AttributeOffset 4; saquery SMIR: LID 2, GUID 0x100001, ActCount 120, Priority 0,
    // SMState 3.
    let s: SmInfoRecord = check(
        "00 02 00 00 00 00 00 00 00 10 00 01 00 00 00 00
         00 00 00 00 00 00 00 78 03",
        4,
    );
    assert_eq!(s.lid, Lid(2));
    assert_eq!((s.sm_info.guid, s.sm_info.act_count), (Guid(0x10_0001), 120));
    assert_eq!((s.sm_info.priority, s.sm_info.sm_state), (0, SmState::Master));
}
