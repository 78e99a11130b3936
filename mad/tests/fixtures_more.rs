//! Byte-fixture tests for the remaining SMP tables (SL to VL, VL arbitration, GUID info, MFT) and
//! the SA records that wrap SMP attributes (switch info, SM info, LFT and GUID info records).
//!
//! Same method as the other `fixtures_*` tests: decode the capture, compare with the tool's
//! printed output for the same packet, re-encode and compare bytes.

mod common;

use common::{Fixture, attr_round_trip, check_smp_headers, num};
use ibsm_mad::attrs::{GuidInfo, MulticastForwardingTable, SlToVlTable, VlArbitrationTable};
use ibsm_mad::records::{GuidInfoRecord, LftRecord, SmInfoRecord, SwitchInfoRecord, stride};
use ibsm_mad::{Attribute, Lid};

macro_rules! fixture {
    ($name:literal) => {
        Fixture::parse($name, include_str!(concat!("fixtures/", $name, ".fix")))
    };
}

// Numbers between `|` separators on a tool line, e.g. `ports: in 0, out 0: | 0| 1| 2|`.
fn bar_numbers(line: &str) -> Vec<u64> {
    line.split('|').skip(1).map(str::trim).filter(|s| !s.is_empty()).map(num).collect()
}

#[test]
fn sl2vl_ca() {
    let f = fixture!("smp_sl2vl_ca");
    check_smp_headers(&f, 0x0017);
    let t: SlToVlTable = attr_round_trip(&f);
    let line = f.tool.iter().find(|l| l.starts_with("ports:")).expect("sl2vl line");
    let printed = bar_numbers(line);
    assert_eq!(printed.len(), 16);
    let ours: Vec<u64> = t.vls.iter().map(|&v| u64::from(v)).collect();
    assert_eq!(ours, printed);
}

#[test]
fn vlarb_ca_low_priority_block() {
    let f = fixture!("smp_vlarb_ca");
    check_smp_headers(&f, 0x0018);
    let t: VlArbitrationTable = attr_round_trip(&f);
    // The captured MAD is AttrMod 0x0001_0001: the low-priority table (block 1) of port 1. The tool
    // printed it under "# Low priority VL Arbitration Table:" as a VL row and a WEIGHT row.
    let low = f.tool.iter().position(|l| l.starts_with("# Low priority")).unwrap();
    let vls = bar_numbers(&f.tool[low + 1]);
    let weights = bar_numbers(&f.tool[low + 2]);
    assert_eq!(vls.len(), 8, "VLArbLowCap 8");
    for (i, (vl, w)) in vls.iter().zip(&weights).enumerate() {
        assert_eq!(u64::from(t.entries[i].vl), *vl, "entry {i} VL");
        assert_eq!(u64::from(t.entries[i].weight), *w, "entry {i} weight");
    }
}

#[test]
fn guidinfo_ca_block0() {
    let f = fixture!("smp_guidinfo_ca");
    check_smp_headers(&f, 0x0014);
    let g: GuidInfo = attr_round_trip(&f);
    // smpquery prints `   N: 0xG 0xG` (two GUIDs a line); block 0 holds indices 0..8.
    let mut printed = Vec::new();
    for line in &f.tool {
        let Some((idx, rest)) = line.split_once(": ") else { continue };
        if idx.trim().parse::<usize>().is_ok() {
            printed.extend(rest.split_whitespace().map(num));
        }
    }
    let ours: Vec<u64> = g.guids.iter().map(|g| g.get()).collect();
    assert_eq!(&ours[..], &printed[..8]);
    assert_eq!(ours[0], 0x10_000a, "entry 0 is the port GUID of Hca4 port 1");
}

#[test]
fn mft_block0_empty() {
    let f = fixture!("smp_mft_block0");
    check_smp_headers(&f, 0x001b);
    let m: MulticastForwardingTable = attr_round_trip(&f);
    assert!(f.tool.iter().any(|l| l == "0 valid mlids dumped"));
    assert!(m.masks.iter().all(|p| p.0 == 0), "ibroute found no MLID with ports");
}

// First record of a GetTable response after checking OpenSM's AttributeOffset against LEN.
fn first_record<A: Attribute + core::fmt::Debug>(f: &Fixture) -> A {
    let rsp = f.bytes("response");
    assert_eq!(rsp[3], 0x92, "{}: GetTableResp", f.name);
    assert_eq!(usize::from(u16::from_be_bytes([rsp[44], rsp[45]])) * 8, stride::<A>(), "{}", f.name);
    let r = A::parse(&rsp[56..]).unwrap_or_else(|e| panic!("{}: {e}", f.name));
    assert_eq!(f.assert_bytes_eq("response", 56, &r.to_vec(), "record re-emitted"), A::LEN);
    r
}

#[test]
fn switchinforecord() {
    let f = fixture!("sa_switchinforecord");
    let r: SwitchInfoRecord = first_record(&f);
    let si = &r.switch_info;
    assert_eq!(u64::from(r.lid.get()), f.tool_num("LID"));
    assert_eq!(u64::from(si.linear_fdb_cap), f.tool_num("LinearFDBCap"));
    assert_eq!(u64::from(si.random_fdb_cap), f.tool_num("RandomFDBCap"));
    assert_eq!(u64::from(si.multicast_fdb_cap), f.tool_num("MulticastFDBCap"));
    assert_eq!(u64::from(si.linear_fdb_top.get()), f.tool_num("LinearFDBTop"));
    assert_eq!(u64::from(si.default_port.get()), f.tool_num("DefaultPort"));
    // saquery prints LifeTimeValue(5) | PortStateChange(1) | OptimizedSLtoVL(2) as one byte.
    let b = f.tool_num("LifeTimeValue/PortStateChange/OpSL2VL");
    assert_eq!(u64::from(si.life_time_value), b >> 3);
    assert_eq!(u64::from(si.port_state_change), (b >> 2) & 1);
    assert_eq!(u64::from(si.optimized_sl_to_vl_mapping_programming), b & 3);
    assert_eq!(u64::from(si.lids_per_port), f.tool_num("LIDsPerPort"));
    assert_eq!(u64::from(si.partition_enforcement_cap), f.tool_num("PartitionEnforcementCap"));
}

#[test]
fn sminforecord() {
    let f = fixture!("sa_sminforecord");
    let r: SmInfoRecord = first_record(&f);
    assert_eq!(u64::from(r.lid.get()), f.tool_num("LID"));
    assert_eq!(r.sm_info.guid.get(), f.tool_num("GUID"));
    assert_eq!(r.sm_info.sm_key, f.tool_num("SM_Key"));
    assert_eq!(u64::from(r.sm_info.act_count), f.tool_num("ActCount"));
    assert_eq!(u64::from(r.sm_info.priority), f.tool_num("Priority"));
    assert_eq!(u64::from(r.sm_info.sm_state.raw()), f.tool_num("SMState"));
}

#[test]
fn lftrecord() {
    let f = fixture!("sa_lftrecord");
    let r: LftRecord = first_record(&f);
    assert_eq!(u64::from(r.lid.get()), f.tool_num("LID"));
    assert_eq!(u64::from(r.block_num), f.tool_num("Block"));
    // saquery prints `LID<TAB>Port Number` rows for the 64 entries of the block.
    let mut rows = 0;
    for line in &f.tool {
        let mut it = line.split_whitespace();
        let (Some(a), Some(b), None) = (it.next(), it.next(), it.next()) else { continue };
        let (Ok(lid), Ok(port)) = (a.parse::<u16>(), b.parse::<u8>()) else { continue };
        let entry = r.lft.port_for(Lid(lid)).map_or(0xff, ibsm_mad::PortNum::get);
        assert_eq!(entry, port, "LID {lid}");
        rows += 1;
    }
    assert_eq!(rows, 64);
}

#[test]
fn guidinforecord() {
    let f = fixture!("sa_guidinforecord");
    let r: GuidInfoRecord = first_record(&f);
    assert_eq!(u64::from(r.lid.get()), f.tool_num("LID"));
    assert_eq!(u64::from(r.block_num), f.tool_num("Block"));
    for (i, g) in r.guid_info.guids.iter().enumerate() {
        assert_eq!(g.get(), f.tool_num(&format!("GUID {i}")), "GUID {i}");
    }
}
