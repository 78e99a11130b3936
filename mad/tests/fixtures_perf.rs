//! Byte-fixture tests for the performance-management class (0x04): PMA ClassPortInfo,
//! PortCounters, PortCountersExtended and the Set that clears counters, as ibsim 0.10's PMA
//! answered `perfquery` 44.0 (`fixtures/perf_*.fix`; how they were captured is in each file's
//! header and in `fixtures/README.md`).
//!
//! Same method as the other `fixtures_*` tests: decode the captured bytes with our parser and
//! compare with what perfquery printed for the same MAD, then re-encode and compare bytes.

mod common;

use common::{Fixture, header_round_trip};
use ibsm_mad::header::{Method, MgmtClass};
use ibsm_mad::perf::{CounterSelect, PERF_DATA_OFFSET, PerfMad, PmCapabilities, PortCounters, PortCountersExtended};
use ibsm_mad::records::ClassPortInfo;
use ibsm_mad::{Attribute, ids};

macro_rules! fixture {
    ($name:literal) => {
        Fixture::parse($name, include_str!(concat!("fixtures/", $name, ".fix")))
    };
}

// Checks the PerfMgt headers of request and response, and returns the response's data area.
fn perf_exchange(f: &Fixture, attr_id: u16, method: Method) -> Vec<u8> {
    let req = header_round_trip(f, "request");
    let rsp = header_round_trip(f, "response");
    for h in [&req, &rsp] {
        h.validate().unwrap_or_else(|e| panic!("{}: validate: {e}", f.name));
        assert_eq!(h.mgmt_class, MgmtClass::Perf, "{}", f.name);
        assert_eq!((h.base_version, h.class_version, h.attr_id), (1, 1, attr_id), "{}", f.name);
    }
    assert_eq!(req.method, method, "{}", f.name);
    assert_eq!(rsp.method, Method::GetResp, "{}: a Get and a Set are both answered by GetResp", f.name);
    assert_eq!(rsp.status, 0, "{}", f.name);
    assert_eq!(rsp.tid & 0xffff_ffff, req.tid & 0xffff_ffff, "{}: TID", f.name);
    let view = PerfMad::new_checked(f.bytes("response")).unwrap_or_else(|e| panic!("{}: {e}", f.name));
    assert_eq!(view.header().attr_id(), attr_id);
    view.data().to_vec()
}

// Re-emits `a` and compares it with the response's data area (garbage bytes skipped).
fn re_emit<A: Attribute>(f: &Fixture, a: &A) -> usize {
    let mut out = vec![0u8; A::LEN];
    a.emit(&mut out);
    f.assert_bytes_eq("response", PERF_DATA_OFFSET, &out, "attribute re-emitted")
}

#[test]
fn class_port_info_of_a_switch_pma() {
    let f = fixture!("perf_classportinfo_switch");
    let data = perf_exchange(&f, ids::perf_attr::CLASS_PORT_INFO, Method::Get);
    let cpi = ClassPortInfo::parse(&data).unwrap();
    assert_eq!(re_emit(&f, &cpi), ClassPortInfo::LEN);
    // perfquery prints the mask in its header line: "(CapMask: 0x1300)".
    let line = &f.tool[0];
    let printed = line.split("CapMask: ").nth(1).map(common::num).expect("CapMask in the header");
    assert_eq!(u64::from(cpi.capability_mask), printed);
    let caps = PmCapabilities::from_class_port_info(&cpi);
    assert!(caps.all_port_select(), "ibsim switches advertise AllPortSelect");
    assert!(caps.extended_counters() && caps.unicast_multicast_counters() && caps.xmit_wait());
    assert!(!caps.extended_error_counters());
    assert_eq!((cpi.base_version, cpi.class_version, cpi.resp_time_value), (1, 1, 0x12));
}

#[test]
fn port_counters_of_a_switch_port_with_errors() {
    let f = fixture!("perf_portcounters_switch");
    let data = perf_exchange(&f, ids::perf_attr::PORT_COUNTERS, Method::Get);
    let pc = PortCounters::parse(&data).unwrap();
    assert_eq!(re_emit(&f, &pc), PortCounters::LEN);
    // Nothing past the attribute: ibsim answers zeros up to the garbage.
    assert!(data[PortCounters::LEN..160].iter().all(|&b| b == 0));
    let ours: [(&str, u64); 20] = [
        ("PortSelect", pc.port_select.into()),
        ("CounterSelect", pc.counter_select.0.into()),
        ("SymbolErrorCounter", pc.symbol_errors.into()),
        ("LinkErrorRecoveryCounter", pc.link_error_recovery.into()),
        ("LinkDownedCounter", pc.link_downed.into()),
        ("PortRcvErrors", pc.rcv_errors.into()),
        ("PortRcvRemotePhysicalErrors", pc.rcv_remote_physical_errors.into()),
        ("PortRcvSwitchRelayErrors", pc.rcv_switch_relay_errors.into()),
        ("PortXmitDiscards", pc.xmit_discards.into()),
        ("PortXmitConstraintErrors", pc.xmit_constraint_errors.into()),
        ("PortRcvConstraintErrors", pc.rcv_constraint_errors.into()),
        ("CounterSelect2", pc.counter_select2.into()),
        ("LocalLinkIntegrityErrors", pc.local_link_integrity_errors.into()),
        ("ExcessiveBufferOverrunErrors", pc.excessive_buffer_overrun_errors.into()),
        ("VL15Dropped", pc.vl15_dropped.into()),
        ("PortXmitData", pc.xmit_data.into()),
        ("PortRcvData", pc.rcv_data.into()),
        ("PortXmitPkts", pc.xmit_pkts.into()),
        ("PortRcvPkts", pc.rcv_pkts.into()),
        ("PortXmitWait", pc.xmit_wait.into()),
    ];
    for (key, v) in ours {
        assert_eq!(v, f.tool_num(key), "{key}");
    }
    // Every error counter was set to a distinct non-zero value on the console, so a swapped or
    // shifted field cannot pass by accident.
    assert_eq!((pc.symbol_errors, pc.link_downed, pc.vl15_dropped, pc.xmit_wait), (0x1234, 0x78, 0xf00d, 0x1234_5678));
    // perfquery 44.0 prints VL15Dropped's value under QP1Dropped too (its field table reads
    // byte 22 for both); the bytes hold QP1Dropped = 0 at 20..22 (ibsim does not count it).
    assert_eq!(f.tool_num("QP1Dropped"), u64::from(pc.vl15_dropped));
    assert_eq!(pc.qp1_dropped, 0);
    // Data counts 4-byte words: ibsim adds 72 (288 octets) per MAD, as the IBTA defines.
    assert_eq!(pc.xmit_data, pc.xmit_pkts * 72);
    assert_eq!(pc.rcv_data, pc.rcv_pkts * 72);
}

#[test]
fn port_counters_extended_of_a_ca() {
    let f = fixture!("perf_portcounters_ext_ca");
    let data = perf_exchange(&f, ids::perf_attr::PORT_COUNTERS_EXTENDED, Method::Get);
    let pc = PortCountersExtended::parse(&data).unwrap();
    // Bytes 160.. of the data (MAD 224..) are umad2sim's garbage and are skipped.
    assert_eq!(re_emit(&f, &pc), 160);
    let ours: [(&str, u64); 10] = [
        ("PortSelect", pc.port_select.into()),
        ("CounterSelect", pc.counter_select.0.into()),
        ("PortXmitData", pc.xmit_data),
        ("PortRcvData", pc.rcv_data),
        ("PortXmitPkts", pc.xmit_pkts),
        ("PortRcvPkts", pc.rcv_pkts),
        ("PortUnicastXmitPkts", pc.unicast_xmit_pkts),
        ("PortUnicastRcvPkts", pc.unicast_rcv_pkts),
        ("PortMulticastXmitPkts", pc.multicast_xmit_pkts),
        ("PortMulticastRcvPkts", pc.multicast_rcv_pkts),
    ];
    for (key, v) in ours {
        assert_eq!(v, f.tool_num(key), "{key}");
    }
    assert!(pc.xmit_data > 0 && pc.xmit_data == pc.xmit_pkts * 72);
}

#[test]
fn set_that_clears_counters() {
    let f = fixture!("perf_portcounters_reset");
    let data = perf_exchange(&f, ids::perf_attr::PORT_COUNTERS, Method::Set);
    let req = PortCounters::parse(&f.bytes("request")[PERF_DATA_OFFSET..]).unwrap();
    // perfquery -R: every counter of the mask, and CounterSelect2 bit 0 for PortXmitWait.
    let want = PortCounters {
        port_select: 3,
        counter_select: CounterSelect::ALL,
        counter_select2: ibsm_mad::perf::COUNTER_SELECT2_XMIT_WAIT,
        ..Default::default()
    };
    assert_eq!(req, want);
    // Our request builder writes the same 256 bytes perfquery wrote.
    let tid = ibsm_mad::header::MadHeader::from_bytes(f.bytes("request")).unwrap().tid;
    let ours = PerfMad::request(Method::Set, tid, 0, &want);
    assert_eq!(f.assert_bytes_eq("request", 0, &ours, "Set request built by PerfMad::request"), 256);
    // ibsim answers with the counters after clearing: all zero, the selects echoed.
    assert_eq!(PortCounters::parse(&data).unwrap(), want);
}
