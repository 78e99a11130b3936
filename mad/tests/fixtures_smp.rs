//! Byte-fixture tests for SMP attributes against captures from ibsim + infiniband-diags.
//!
//! Each test reads a fixture from `fixtures/` (see its README for how it was captured), decodes
//! the captured response with ibsm-mad, checks the decoded values against what the tool
//! (`smpquery`, `ibroute`, `sminfo`) printed for the same packet, and re-encodes the attribute and
//! the header to compare them with the captured bytes. Expected values come from the saved tool
//! output or from the capture, never from ibsm's own encoder.

mod common;

use common::{Fixture, SMP_DATA, attr_round_trip, check_smp_headers, header_round_trip, num};
use ibsm_mad::Attribute;
use ibsm_mad::attrs::{
    LinkDownDefaultState, LinkSpeed, LinkWidth, Mtu, NodeDescription, NodeInfo, NodeType, PhysPortState, PortInfo,
    PortState,
};

macro_rules! fixture {
    ($name:literal) => {
        Fixture::parse($name, include_str!(concat!("fixtures/", $name, ".fix")))
    };
}

fn node_type_from_tool(s: &str) -> NodeType {
    match s {
        "Channel Adapter" => NodeType::Ca,
        "Switch" => NodeType::Switch,
        "Router" => NodeType::Router,
        other => panic!("unexpected NodeType text {other}"),
    }
}

fn check_node_info(f: &Fixture) {
    check_smp_headers(f, 0x0011);
    let ni: NodeInfo = attr_round_trip(f);
    assert_eq!(u64::from(ni.base_version), f.tool_num("BaseVers"));
    assert_eq!(u64::from(ni.class_version), f.tool_num("ClassVers"));
    assert_eq!(ni.node_type, node_type_from_tool(f.tool_value("NodeType")));
    assert_eq!(u64::from(ni.num_ports), f.tool_num("NumPorts"));
    assert_eq!(ni.system_image_guid.get(), f.tool_num("SystemGuid"));
    assert_eq!(ni.node_guid.get(), f.tool_num("Guid"));
    assert_eq!(ni.port_guid.get(), f.tool_num("PortGuid"));
    assert_eq!(u64::from(ni.partition_cap), f.tool_num("PartCap"));
    assert_eq!(u64::from(ni.device_id), f.tool_num("DevId"));
    assert_eq!(u64::from(ni.revision), f.tool_num("Revision"));
    assert_eq!(u64::from(ni.local_port_num.get()), f.tool_num("LocalPort"));
    assert_eq!(u64::from(ni.vendor_id), f.tool_num("VendorId"));
}

#[test]
fn nodeinfo_switch_lid_routed() {
    let f = fixture!("smp_nodeinfo_switch_lid");
    check_node_info(&f);
    assert_eq!(f.bytes("response")[1], 0x01, "LID-routed class");
}

#[test]
fn nodeinfo_ca_directed_route_three_hops() {
    let f = fixture!("smp_nodeinfo_ca_dr3");
    check_node_info(&f);
    let rsp = f.bytes("response");
    assert_eq!(rsp[1], 0x81, "directed-route class");
    // The tool printed the path it used: "DR path slid 65535; dlid 65535; 0,1,3,2".
    let path = f.tool[0].rsplit("; ").next().unwrap();
    let ports: Vec<u8> = path.split(',').map(|p| p.parse().unwrap()).collect();
    assert_eq!(u64::from(rsp[7]), (ports.len() - 1) as u64, "HopCount");
    assert_eq!(&rsp[128..128 + ports.len()], &ports[..], "InitialPath");
}

fn check_node_desc(f: &Fixture) {
    check_smp_headers(f, 0x0010);
    let nd: NodeDescription = attr_round_trip(f);
    assert_eq!(nd.text(), f.tool_value("Node Description"));
}

#[test]
fn nodedesc_switch_directed_route() {
    check_node_desc(&fixture!("smp_nodedesc_switch_dr"));
}

#[test]
fn nodedesc_ca_lid_routed() {
    check_node_desc(&fixture!("smp_nodedesc_ca_lid"));
}

fn width_mask_from_tool(s: &str) -> u8 {
    s.split(" or ")
        .map(|w| match w {
            "1X" => 1,
            "4X" => 2,
            "8X" => 4,
            "12X" => 8,
            "2X" => 16,
            other => panic!("width {other}"),
        })
        .fold(0, |a, b| a | b)
}

fn speed_mask_from_tool(s: &str) -> u8 {
    s.split(" or ")
        .map(|w| match w {
            "2.5 Gbps" => 1,
            "5.0 Gbps" => 2,
            "10.0 Gbps" => 4,
            other => panic!("speed {other}"),
        })
        .fold(0, |a, b| a | b)
}

fn mtu_from_tool(s: &str) -> Mtu {
    match s {
        "256" => Mtu::M256,
        "512" => Mtu::M512,
        "1024" => Mtu::M1024,
        "2048" => Mtu::M2048,
        "4096" => Mtu::M4096,
        other => panic!("mtu {other}"),
    }
}

// smpquery prints VLCap/OperVLs as "VL0", "VL0-1", "VL0-3", "VL0-7", "VL0-14" (codes 1..5).
fn vls_from_tool(s: &str) -> u8 {
    match s {
        "VL0" => 1,
        "VL0-1" => 2,
        "VL0-3" => 3,
        "VL0-7" => 4,
        "VL0-14" => 5,
        other => panic!("vls {other}"),
    }
}

fn port_state_from_tool(s: &str) -> PortState {
    match s {
        "Down" => PortState::Down,
        "Initialize" => PortState::Init,
        "Armed" => PortState::Armed,
        "Active" => PortState::Active,
        other => panic!("port state {other}"),
    }
}

fn phys_from_tool(s: &str) -> PhysPortState {
    match s {
        "Sleep" => PhysPortState::Sleep,
        "Polling" => PhysPortState::Polling,
        "Disabled" => PhysPortState::Disabled,
        "LinkUp" => PhysPortState::LinkUp,
        other => panic!("phys state {other}"),
    }
}

fn check_port_info(f: &Fixture) -> PortInfo {
    check_smp_headers(f, 0x0015);
    let pi: PortInfo = attr_round_trip(f);
    assert_eq!(pi.m_key.0, f.tool_num("Mkey"));
    assert_eq!(pi.gid_prefix, f.tool_num("GidPrefix"));
    assert_eq!(u64::from(pi.lid.get()), f.tool_num("Lid"));
    assert_eq!(u64::from(pi.master_sm_lid.get()), f.tool_num("SMLid"));
    assert_eq!(u64::from(pi.capability_mask.bits()), f.tool_num("CapMask"));
    assert_eq!(u64::from(pi.diag_code), f.tool_num("DiagCode"));
    assert_eq!(u64::from(pi.m_key_lease_period), f.tool_num("MkeyLeasePeriod"));
    assert_eq!(u64::from(pi.local_port_num.get()), f.tool_num("LocalPort"));
    assert_eq!(pi.link_width_enabled.bits(), width_mask_from_tool(f.tool_value("LinkWidthEnabled")));
    assert_eq!(pi.link_width_supported.bits(), width_mask_from_tool(f.tool_value("LinkWidthSupported")));
    assert_eq!(pi.link_width_active.raw(), width_mask_from_tool(f.tool_value("LinkWidthActive")));
    assert_eq!(pi.link_speed_supported.bits(), speed_mask_from_tool(f.tool_value("LinkSpeedSupported")));
    assert_eq!(pi.port_state, port_state_from_tool(f.tool_value("LinkState")));
    assert_eq!(pi.port_physical_state, phys_from_tool(f.tool_value("PhysLinkState")));
    assert_eq!(
        pi.link_down_default_state.raw(),
        phys_from_tool(f.tool_value("LinkDownDefState")).raw(),
        "LinkDownDefState shares PhysPortState's codes for Sleep/Polling"
    );
    assert_eq!(u64::from(pi.m_key_protect_bits), f.tool_num("ProtectBits"));
    assert_eq!(u64::from(pi.lmc), f.tool_num("LMC"));
    assert_eq!(pi.link_speed_active.raw(), speed_mask_from_tool(f.tool_value("LinkSpeedActive")));
    assert_eq!(pi.link_speed_enabled.bits(), speed_mask_from_tool(f.tool_value("LinkSpeedEnabled")));
    assert_eq!(pi.neighbor_mtu, mtu_from_tool(f.tool_value("NeighborMTU")));
    assert_eq!(u64::from(pi.master_sm_sl), f.tool_num("SMSL"));
    assert_eq!(pi.vl_cap, vls_from_tool(f.tool_value("VLCap")));
    assert_eq!(u64::from(pi.init_type), f.tool_num("InitType"));
    assert_eq!(u64::from(pi.vl_high_limit), f.tool_num("VLHighLimit"));
    assert_eq!(u64::from(pi.vl_arbitration_high_cap), f.tool_num("VLArbHighCap"));
    assert_eq!(u64::from(pi.vl_arbitration_low_cap), f.tool_num("VLArbLowCap"));
    assert_eq!(u64::from(pi.init_type_reply), f.tool_num("InitReply"));
    assert_eq!(pi.mtu_cap, mtu_from_tool(f.tool_value("MtuCap")));
    assert_eq!(u64::from(pi.vl_stall_count), f.tool_num("VLStallCount"));
    // smpquery stops after VLStallCount on switch ports other than 0 (external switch ports do
    // not carry the rest for it); check the tail only where it was printed.
    if f.tool_values("HoqLife").is_empty() {
        return pi;
    }
    assert_eq!(u64::from(pi.hoq_life), f.tool_num("HoqLife"));
    assert_eq!(pi.operational_vls, vls_from_tool(f.tool_value("OperVLs")));
    assert_eq!(u64::from(pi.partition_enforcement_inbound), f.tool_num("PartEnforceInb"));
    assert_eq!(u64::from(pi.partition_enforcement_outbound), f.tool_num("PartEnforceOutb"));
    assert_eq!(u64::from(pi.filter_raw_inbound), f.tool_num("FilterRawInb"));
    assert_eq!(u64::from(pi.filter_raw_outbound), f.tool_num("FilterRawOutb"));
    assert_eq!(u64::from(pi.m_key_violations), f.tool_num("MkeyViolations"));
    assert_eq!(u64::from(pi.p_key_violations), f.tool_num("PkeyViolations"));
    assert_eq!(u64::from(pi.q_key_violations), f.tool_num("QkeyViolations"));
    assert_eq!(u64::from(pi.guid_cap), f.tool_num("GuidCap"));
    assert_eq!(u64::from(pi.client_reregister), f.tool_num("ClientReregister"));
    assert_eq!(u64::from(pi.multicast_pkey_trap_suppression_enabled), f.tool_num("McastPkeyTrapSuppressionEnabled"));
    assert_eq!(u64::from(pi.subnet_timeout), f.tool_num("SubnetTimeout"));
    assert_eq!(u64::from(pi.resp_time_value), f.tool_num("RespTimeVal"));
    assert_eq!(u64::from(pi.local_phy_errors), f.tool_num("LocalPhysErr"));
    assert_eq!(u64::from(pi.overrun_errors), f.tool_num("OverrunErr"));
    assert_eq!(u64::from(pi.max_credit_hint), f.tool_num("MaxCreditHint"));
    assert_eq!(u64::from(pi.link_round_trip_latency), f.tool_num("RoundTrip"));
    let cap2 = crate::num(f.tool_value("CapabilityMask2"));
    assert_eq!(u64::from(capability_mask2_bits(&pi)), cap2);
    assert_eq!(f.tool_value("LinkSpeedExtActive"), "No Extended Speed");
    assert_eq!(pi.link_speed_ext_active.raw(), 0);
    assert_eq!(u64::from(pi.link_speed_ext_supported.bits()), f.tool_num("LinkSpeedExtSupported"));
    assert_eq!(u64::from(pi.link_speed_ext_enabled.bits()), f.tool_num("LinkSpeedExtEnabled"));
    pi
}

// CapabilityMask2 as a number, read through the attribute's own emit so the test does not
// depend on the field's Rust type: bytes 60..62 of the PortInfo (IBTA 14.2.5.6, bit 480).
fn capability_mask2_bits(pi: &PortInfo) -> u16 {
    let v = pi.to_vec();
    u16::from_be_bytes([v[60], v[61]])
}

#[test]
fn portinfo_ca_port1() {
    let f = fixture!("smp_portinfo_ca_lid");
    let pi = check_port_info(&f);
    assert_eq!(pi.port_state, PortState::Active);
    assert_eq!(pi.link_width_active, LinkWidth::X4);
    assert_eq!(pi.link_speed_active, LinkSpeed::Sdr);
}

#[test]
fn portinfo_switch_port0() {
    let f = fixture!("smp_portinfo_switch_port0_lid");
    check_port_info(&f);
}

#[test]
fn portinfo_switch_port3_directed_route() {
    let f = fixture!("smp_portinfo_switch_port3_dr");
    check_port_info(&f);
}

#[test]
fn portinfo_switch_port4_down() {
    let f = fixture!("smp_portinfo_switch_port4_down");
    let pi = check_port_info(&f);
    assert_eq!(pi.port_state, PortState::Down);
    assert_eq!(pi.port_physical_state, PhysPortState::Polling);
    assert_eq!(pi.link_down_default_state, LinkDownDefaultState::Polling);
}

// OpenSM's own PortInfo Set during its first sweep: decode, re-encode, compare the data area.
#[test]
fn portinfo_set_from_opensm() {
    let f = fixture!("smp_opensm_set_portinfo");
    let req = f.bytes("request");
    let h = header_round_trip(&f, "request");
    assert_eq!((h.method.raw(), h.attr_id), (0x02, 0x0015));
    let pi = PortInfo::parse(&req[SMP_DATA]).unwrap();
    let out = pi.to_vec();
    assert_eq!(f.assert_bytes_eq("request", SMP_DATA.start, &out, "PortInfo Set re-emitted"), 64);
    // A LID-assigning Set from OpenSM carries one of the fabric's LIDs (1..=6, see ibnetdiscover in
    // the README) and OpenSM's own port as MasterSMLID (LID 1: `sminfo` printed "sm lid 1").
    let sminfo = fixture!("smp_sminfo_lid");
    assert!(sminfo.tool[0].starts_with("sminfo: sm lid 1 "), "{}", sminfo.tool[0]);
    assert_eq!(pi.master_sm_lid.get(), 1);
    assert!((1..=6).contains(&pi.lid.get()), "LID {}", pi.lid.get());
}

#[test]
fn tool_value_parser_reads_both_styles() {
    // Guards the helper the other tests rely on: it must not match a longer key by prefix.
    let f = Fixture::parse("inline", "tool: Lid:.....6\ntool: LidsPerPort:...0\ntool: \t\tdlid....0x0004\n");
    assert_eq!(f.tool_value("Lid"), "6");
    assert_eq!(f.tool_num("dlid"), 4);
    assert!(f.tool_values("Li").is_empty());
    assert_eq!(num("0x50c048"), 0x50_c048);
}
