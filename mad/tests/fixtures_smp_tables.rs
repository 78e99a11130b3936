//! Byte-fixture tests for the switch and table SMP attributes (`SwitchInfo`, `P_KeyTable`,
//! `LinearForwardingTable`, `SMInfo`) against captures from ibsim, `OpenSM` and infiniband-diags.
//!
//! Same method as `fixtures_smp.rs`: decode the captured MAD, compare with what `smpquery`,
//! `ibroute` or `sminfo` printed for it, re-encode and compare bytes.

mod common;

use common::{Fixture, SMP_DATA, attr_round_trip, check_smp_headers, header_round_trip, num};
use ibsm_mad::attrs::{LinearForwardingTable, PKeyTable, SmInfo, SmState, SwitchInfo};
use ibsm_mad::{Attribute, Lid};

macro_rules! fixture {
    ($name:literal) => {
        Fixture::parse($name, include_str!(concat!("fixtures/", $name, ".fix")))
    };
}

fn check_switch_info(f: &Fixture) -> SwitchInfo {
    check_smp_headers(f, 0x0012);
    let si: SwitchInfo = attr_round_trip(f);
    assert_eq!(u64::from(si.linear_fdb_cap), f.tool_num("LinearFdbCap"));
    assert_eq!(u64::from(si.random_fdb_cap), f.tool_num("RandomFdbCap"));
    assert_eq!(u64::from(si.multicast_fdb_cap), f.tool_num("McastFdbCap"));
    assert_eq!(u64::from(si.linear_fdb_top.get()), f.tool_num("LinearFdbTop"));
    assert_eq!(u64::from(si.default_port.get()), f.tool_num("DefPort"));
    assert_eq!(u64::from(si.default_multicast_primary_port.get()), f.tool_num("DefMcastPrimPort"));
    assert_eq!(u64::from(si.default_multicast_not_primary_port.get()), f.tool_num("DefMcastNotPrimPort"));
    assert_eq!(u64::from(si.life_time_value), f.tool_num("LifeTime"));
    assert_eq!(u64::from(si.port_state_change), f.tool_num("StateChange"));
    assert_eq!(u64::from(si.optimized_sl_to_vl_mapping_programming), f.tool_num("OptSLtoVLMapping"));
    assert_eq!(u64::from(si.lids_per_port), f.tool_num("LidsPerPort"));
    assert_eq!(u64::from(si.partition_enforcement_cap), f.tool_num("PartEnforceCap"));
    assert_eq!(u64::from(si.inbound_enforcement_cap), f.tool_num("InboundPartEnf"));
    assert_eq!(u64::from(si.outbound_enforcement_cap), f.tool_num("OutboundPartEnf"));
    assert_eq!(u64::from(si.filter_raw_inbound_cap), f.tool_num("FilterRawInbound"));
    assert_eq!(u64::from(si.filter_raw_outbound_cap), f.tool_num("FilterRawOutbound"));
    assert_eq!(u64::from(si.enhanced_port0), f.tool_num("EnhancedPort0"));
    assert_eq!(u64::from(si.multicast_fdb_top.get()), f.tool_num("MulticastFDBTop"));
    si
}

#[test]
fn switchinfo_lid_routed() {
    let si = check_switch_info(&fixture!("smp_switchinfo_lid"));
    // ibsim 0.10's default -L is 30720 (ibsim.md §8); the tool printed the same.
    assert_eq!(si.linear_fdb_cap, 30720);
}

#[test]
fn switchinfo_directed_route() {
    check_switch_info(&fixture!("smp_switchinfo_dr"));
}

// OpenSM's SwitchInfo Set (read-modify-write of what ibsim reported): decode and re-encode.
#[test]
fn switchinfo_set_from_opensm() {
    let f = fixture!("smp_opensm_set_switchinfo");
    let h = header_round_trip(&f, "request");
    assert_eq!((h.method.raw(), h.attr_id), (0x02, 0x0012));
    let si = SwitchInfo::parse(&f.bytes("request")[SMP_DATA]).unwrap();
    let n = f.assert_bytes_eq("request", SMP_DATA.start, &si.to_vec(), "SwitchInfo Set re-emitted");
    assert_eq!(n, 64);
    let reported = fixture!("smp_switchinfo_lid");
    assert_eq!(u64::from(si.linear_fdb_cap), reported.tool_num("LinearFdbCap"));
    assert_eq!(u64::from(si.multicast_fdb_cap), reported.tool_num("McastFdbCap"));
}

// smpquery prints the P_Key table as lines `   N: 0xkkkk 0xkkkk ...` (8 a line).
fn pkeys_from_tool(f: &Fixture) -> Vec<u16> {
    let mut out = Vec::new();
    for line in &f.tool {
        let Some((idx, rest)) = line.split_once(": ") else { continue };
        if idx.trim().parse::<usize>().is_err() {
            continue;
        }
        out.extend(rest.split_whitespace().map(|k| num(k) as u16));
    }
    out
}

fn check_pkeys(f: &Fixture) {
    check_smp_headers(f, 0x0016);
    let t: PKeyTable = attr_round_trip(f);
    let printed = pkeys_from_tool(f);
    assert!(printed.len() >= 32, "{}: tool printed {} keys", f.name, printed.len());
    let ours: Vec<u16> = t.keys.iter().map(|k| k.get()).collect();
    assert_eq!(&ours[..], &printed[..32], "{}: block 0", f.name);
    assert_eq!(ours[0], 0xffff, "default full-member key in entry 0");
}

#[test]
fn pkeys_ca() {
    check_pkeys(&fixture!("smp_pkeys_ca"));
}

#[test]
fn pkeys_switch() {
    check_pkeys(&fixture!("smp_pkeys_switch"));
}

// ibroute prints `0xLLLL PPP : (...)` per routed LID of the switch.
#[test]
fn lft_block0() {
    let f = fixture!("smp_lft_block0");
    check_smp_headers(&f, 0x0019);
    let lft: LinearForwardingTable = attr_round_trip(&f);
    let mut seen = 0;
    for line in &f.tool {
        let mut it = line.split_whitespace();
        let (Some(lid), Some(port), Some(":")) = (it.next(), it.next(), it.next()) else { continue };
        if !lid.starts_with("0x") {
            continue;
        }
        let lid = Lid(num(lid) as u16);
        let port: u8 = port.parse().unwrap();
        assert_eq!(lft.port_for(lid).map(ibsm_mad::PortNum::get), Some(port), "LID {lid:?}");
        assert_eq!(lft.ports[usize::from(lid.get())].get(), port);
        seen += 1;
    }
    assert_eq!(seen, 6, "ibroute listed LIDs 1..=6");
    // Entries ibroute did not list are unrouted (0xff) in ibsim.
    assert!(lft.ports[7..].iter().all(|p| p.get() == 0xff));
}

// OpenSM's LFT Set for block 0 of a switch decodes and re-encodes byte for byte.
#[test]
fn lft_set_from_opensm() {
    let f = fixture!("smp_opensm_set_lft");
    let h = header_round_trip(&f, "request");
    assert_eq!((h.method.raw(), h.attr_id, h.attr_mod), (0x02, 0x0019, 0));
    let lft = LinearForwardingTable::parse(&f.bytes("request")[SMP_DATA]).unwrap();
    assert_eq!(f.assert_bytes_eq("request", SMP_DATA.start, &lft.to_vec(), "LFT Set re-emitted"), 64);
    // Every LID of the fabric (1..=6) is routed somewhere by OpenSM.
    assert!((1..=6).all(|l| lft.port_for(Lid(l)).is_some_and(|p| p.get() != 0xff)));
}

// sminfo prints: `sminfo: sm lid L sm guid 0xG, activity count N priority P state S NAME`.
fn check_sminfo(f: &Fixture) {
    check_smp_headers(f, 0x0020);
    let si: SmInfo = attr_round_trip(f);
    let line = &f.tool[0];
    let words: Vec<&str> = line.split_whitespace().collect();
    let after = |w: &str| words[words.iter().position(|x| *x == w).unwrap() + 1].trim_end_matches(',');
    assert_eq!(si.guid.get(), num(after("guid")), "{line}");
    assert_eq!(u64::from(si.act_count), num(after("count")), "{line}");
    assert_eq!(u64::from(si.priority), num(after("priority")), "{line}");
    assert_eq!(u64::from(si.sm_state.raw()), num(after("state")), "{line}");
    assert!(line.ends_with("SMINFO_MASTER"));
    assert_eq!(si.sm_state, SmState::Master);
    // OpenSM's default configuration (`opensm -c` writes `sm_key 0x0000000000000001`), returned
    // as is to a Get without M_Key.
    assert_eq!(si.sm_key, 1);
}

#[test]
fn sminfo_lid_routed() {
    check_sminfo(&fixture!("smp_sminfo_lid"));
}

#[test]
fn sminfo_directed_route() {
    check_sminfo(&fixture!("smp_sminfo_dr"));
}
