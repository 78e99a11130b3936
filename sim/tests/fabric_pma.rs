//! The simulated nodes' performance management agents (PerfMgt, class 0x04, on QP1): what they
//! advertise, how their ports count the MADs that cross each cable (packets, and data in 4-byte
//! words: 72 per MAD), how a Set clears what its CounterSelect names, PortSelect 0xFF on
//! switches, the error rate a `Fault::LinkErrors` gives a cable, and the statuses of bad requests.
//! Every test drives raw MAD bytes through `Fabric` in virtual time, from the SM agent at H1
//! (LID 1) of the shared bench (H1 - S1[1], S1[3] - S2[3], LIDs S1 = 2, S2 = 3).

mod common;

use common::Bench;
use ibsm_mad::header::{Mad, Method};
use ibsm_mad::perf::{
    ALL_PORTS, COUNTER_SELECT2_XMIT_WAIT, CounterSelect, PerfMad, PmCapabilities, PortCounters, PortCountersExtended,
};
use ibsm_mad::records::ClassPortInfo;
use ibsm_mad::smp::SmpRepr;
use ibsm_mad::{Attribute, Lid, ids};
use ibsm_sim::fabric::{Dest, ErrorRate, Fault};

const S1: u16 = 2;
const S2: u16 = 3;
const H3: u16 = 5;

/// Sends a PerfMgt request built from `mad` to `dlid` and returns the answer's status and data.
fn perf_raw(b: &mut Bench, dlid: u16, mut mad: [u8; 256]) -> (u16, Vec<u8>) {
    let tid = b.next_tid();
    ibsm_mad::bits::put_u64(&mut mad, 8, tid);
    b.f.send(b.sm, &mad, Dest { dlid: Lid(dlid), qpn: 1 });
    b.run();
    while let Some(r) = b.f.recv(b.sm) {
        let h = Mad::new_unchecked(&r.mad[..]);
        if h.mgmt_class().raw() == ids::class::PERF && h.tid() & 0xffff_ffff == tid {
            assert_eq!(h.method(), Method::GetResp, "a PMA answers Get and Set with GetResp");
            assert_eq!(r.sqpn, 1, "PerfMgt answers come from QP1");
            let v = PerfMad::new_checked(&r.mad[..]).expect("a whole PerfMgt MAD");
            return (h.status(), v.data().to_vec());
        }
    }
    panic!("no PerfMgt answer from LID {dlid}");
}

fn perf<A: Attribute>(b: &mut Bench, dlid: u16, method: Method, a: &A) -> (u16, Vec<u8>) {
    perf_raw(b, dlid, PerfMad::request(method, 0, 0, a))
}

fn counters(b: &mut Bench, dlid: u16, port: u8) -> PortCounters {
    let (st, d) = perf(b, dlid, Method::Get, &PortCounters { port_select: port, ..Default::default() });
    assert_eq!(st, 0, "Get(PortCounters) of LID {dlid} port {port}");
    PortCounters::parse(&d).expect("PortCounters parses")
}

fn counters_ext(b: &mut Bench, dlid: u16, port: u8) -> PortCountersExtended {
    let (st, d) = perf(b, dlid, Method::Get, &PortCountersExtended { port_select: port, ..Default::default() });
    assert_eq!(st, 0, "Get(PortCountersExtended) of LID {dlid} port {port}");
    PortCountersExtended::parse(&d).expect("PortCountersExtended parses")
}

fn clear_all(b: &mut Bench, dlid: u16, port: u8) -> PortCounters {
    let req = PortCounters {
        port_select: port,
        counter_select: CounterSelect::ALL,
        counter_select2: COUNTER_SELECT2_XMIT_WAIT,
        ..Default::default()
    };
    let (st, d) = perf(b, dlid, Method::Set, &req);
    assert_eq!(st, 0, "Set(PortCounters) of LID {dlid} port {port}");
    PortCounters::parse(&d).expect("PortCounters parses")
}

/// `n` LID-routed SMP Gets from H1 to S2 and their answers: each crosses S1[3] - S2[3] once
/// each way.
fn smp_traffic_to_s2(b: &mut Bench, n: usize) {
    for _ in 0..n {
        let tid = b.next_tid();
        let (st, _) = b
            .exchange(SmpRepr::get_lid(ids::attr::NODE_INFO, 0, tid), Dest { dlid: Lid(S2), qpn: 0 })
            .expect("NodeInfo answered");
        assert_eq!(st, 0);
    }
}

fn up() -> Bench {
    let mut b = Bench::new(7);
    b.bring_up();
    b
}

#[test]
fn class_port_info_advertises_what_ibsim_does() {
    let mut b = up();
    for (lid, mask) in [(S1, 0x1300u16), (H3, 0x1200)] {
        let (st, d) = perf(&mut b, lid, Method::Get, &ClassPortInfo::default());
        assert_eq!(st, 0);
        let cpi = ClassPortInfo::parse(&d).expect("ClassPortInfo parses");
        assert_eq!((cpi.base_version, cpi.class_version, cpi.capability_mask), (1, 1, mask), "LID {lid}");
        let caps = PmCapabilities::from_class_port_info(&cpi);
        assert_eq!(caps.all_port_select(), lid == S1, "AllPortSelect on switches only");
        assert!(caps.extended_counters() && caps.xmit_wait());
    }
    assert_eq!(b.f.stats().pma_answered, 2);
}

#[test]
fn ports_count_every_mad_that_crosses_their_cable_in_packets_and_4_byte_words() {
    let mut b = up();
    // Clear S2 first, then S1 (whose clearing answer then crosses only S1[1]).
    clear_all(&mut b, S2, ALL_PORTS);
    let after = clear_all(&mut b, S1, ALL_PORTS);
    assert_eq!((after.xmit_pkts, after.rcv_pkts, after.xmit_data), (0, 0, 0), "the Set answers after clearing");
    smp_traffic_to_s2(&mut b, 10);
    // S1[3] carried 10 requests out and 10 answers in; the Get below arrives on S1[1].
    let s1p3 = counters(&mut b, S1, 3);
    assert_eq!((s1p3.port_select, s1p3.xmit_pkts, s1p3.rcv_pkts), (3, 10, 10));
    assert_eq!((s1p3.xmit_data, s1p3.rcv_data), (720, 720), "PortXmitData/RcvData count 4-byte words: 72 per MAD");
    // S1[1]: the Set's answer, 10 answers and the last Get's answer went out to H1; 10 requests
    // and the two Gets (this one included: counted on arrival, before the PMA reads) came in.
    let s1p1 = counters(&mut b, S1, 1);
    assert_eq!((s1p1.xmit_pkts, s1p1.rcv_pkts), (1 + 10 + 1, 10 + 2));
    // S2[3]: the answer to S2's own clearing Set (sent after clearing) and the 10 answers went
    // out; the 10 requests and this Get came in.
    let s2p3 = counters(&mut b, S2, 3);
    assert_eq!((s2p3.xmit_pkts, s2p3.rcv_pkts), (1 + 10, 10 + 1));
    // No error without an error rate.
    assert_eq!((s1p3.symbol_errors, s1p3.rcv_errors, s1p3.link_downed), (0, 0, 0));
    // PortCountersExtended reads the same counters, 64 bits wide; S2's last answer has since
    // crossed S2[3] out, and this request came in.
    let ext = counters_ext(&mut b, S2, 3);
    assert_eq!((ext.xmit_pkts, ext.rcv_pkts, ext.xmit_data, ext.rcv_data), (12, 12, 12 * 72, 12 * 72));
    // Every MAD is unicast, but a Set of PortCounters has no bit for the unicast counters: they
    // still hold the bring-up's SMPs as well.
    assert!(ext.unicast_xmit_pkts > ext.xmit_pkts && ext.unicast_rcv_pkts > ext.rcv_pkts, "{ext:?}");
    // AllPortSelect sums the switch's ports: S1[1] and S1[3] are its only busy ones.
    let all = counters(&mut b, S1, ALL_PORTS);
    let (p1, p3) = (counters(&mut b, S1, 1), counters(&mut b, S1, 3));
    // Between the sum and the read of S1[1], the Get of S1[1] came in and the sum's answer went
    // out, both on S1[1]; S1[3] carried nothing.
    assert_eq!(all.rcv_pkts + 1, p1.rcv_pkts + p3.rcv_pkts);
    assert_eq!(all.xmit_pkts + 1, p1.xmit_pkts + p3.xmit_pkts);
    assert_eq!(all.xmit_data + 72, p1.xmit_data + p3.xmit_data);
}

#[test]
fn a_set_clears_only_what_counter_select_names() {
    let mut b = up();
    clear_all(&mut b, S1, 3);
    smp_traffic_to_s2(&mut b, 4);
    b.f.inject_fault(Fault::LinkErrors {
        node: b.node("S1"),
        port: 3,
        rate: ErrorRate { symbol_errors: 10, rcv_errors: 0, link_downed: 2, interval_ns: 1_000_000_000 },
    });
    let t = b.f.now().plus(1_000_000_000);
    b.f.advance_to(t);
    let req = PortCounters {
        port_select: 3,
        counter_select: CounterSelect::XMIT_DATA | CounterSelect::XMIT_PKTS | CounterSelect::SYMBOL_ERRORS,
        ..Default::default()
    };
    let (st, d) = perf(&mut b, S1, Method::Set, &req);
    assert_eq!(st, 0);
    let got = PortCounters::parse(&d).expect("parses");
    assert_eq!(got.counter_select, req.counter_select, "the selects are echoed");
    assert_eq!((got.xmit_pkts, got.xmit_data, got.symbol_errors), (0, 0, 0), "selected: cleared");
    assert_eq!((got.rcv_pkts, got.rcv_data, got.link_downed), (4, 4 * 72, 2), "not selected: kept");
    // A Set of PortCountersExtended clears its own selection of the same counters.
    let ext = PortCountersExtended {
        port_select: 3,
        counter_select: ibsm_mad::perf::CounterSelectExt::RCV_PKTS,
        ..Default::default()
    };
    let (st, d) = perf(&mut b, S1, Method::Set, &ext);
    assert_eq!(st, 0);
    let got = PortCountersExtended::parse(&d).expect("parses");
    assert_eq!((got.rcv_pkts, got.rcv_data), (0, 4 * 72));
    assert_eq!(counters(&mut b, S1, 3).rcv_pkts, 0);
}

#[test]
fn an_error_rate_counts_on_both_ends_of_the_cable_per_interval_and_nowhere_else() {
    let mut b = up();
    for lid in [S1, S2] {
        clear_all(&mut b, lid, ALL_PORTS);
    }
    let rate = ErrorRate { symbol_errors: 5, rcv_errors: 2, link_downed: 1, interval_ns: 1_000_000_000 };
    b.f.inject_fault(Fault::LinkErrors { node: b.node("S2"), port: 3, rate });
    let t = b.f.now().plus(3_000_000_000);
    b.f.advance_to(t);
    for lid in [S1, S2] {
        let c = counters(&mut b, lid, 3);
        assert_eq!((c.symbol_errors, c.rcv_errors, c.link_downed), (15, 6, 3), "LID {lid} port 3 after 3 intervals");
    }
    let other = counters(&mut b, S1, 1);
    assert_eq!((other.symbol_errors, other.rcv_errors, other.link_downed), (0, 0, 0), "a good cable");
    // A zero rate ends it: nothing more is counted.
    b.f.inject_fault(Fault::LinkErrors { node: b.node("S1"), port: 3, rate: ErrorRate::default() });
    let t = b.f.now().plus(5_000_000_000);
    b.f.advance_to(t);
    let c = counters(&mut b, S2, 3);
    assert_eq!((c.symbol_errors, c.rcv_errors, c.link_downed), (15, 6, 3));
    // Half an interval at 3 per interval counts 1 and carries the rest: nothing is lost.
    let half = ErrorRate { symbol_errors: 3, rcv_errors: 0, link_downed: 0, interval_ns: 1_000_000_000 };
    clear_all(&mut b, S1, 3);
    b.f.inject_fault(Fault::LinkErrors { node: b.node("S1"), port: 3, rate: half });
    let t = b.f.now().plus(500_000_000);
    b.f.advance_to(t);
    assert_eq!(counters(&mut b, S1, 3).symbol_errors, 1);
    let t = b.f.now().plus(500_000_000);
    b.f.advance_to(t);
    assert_eq!(counters(&mut b, S1, 3).symbol_errors, 3);
}

#[test]
fn narrow_counters_saturate_and_the_extended_ones_do_not() {
    let mut b = up();
    let rate = ErrorRate { symbol_errors: 70_000, rcv_errors: 0, link_downed: 300, interval_ns: 1_000_000_000 };
    b.f.inject_fault(Fault::LinkErrors { node: b.node("S1"), port: 3, rate });
    let t = b.f.now().plus(1_000_000_000);
    b.f.advance_to(t);
    let c = counters(&mut b, S1, 3);
    assert_eq!((c.symbol_errors, c.link_downed), (u16::MAX, u8::MAX), "16- and 8-bit counters stop at their maximum");
}

#[test]
fn bad_requests_get_the_spec_statuses() {
    let mut b = up();
    // PortSelect beyond the switch's 4 ports; 0xFF on a CA (no AllPortSelect); port 0 of a CA.
    for (lid, sel) in [(S1, 9u8), (H3, ALL_PORTS), (H3, 0)] {
        let (st, _) = perf(&mut b, lid, Method::Get, &PortCounters { port_select: sel, ..Default::default() });
        assert_eq!(st, ids::status::BAD_FIELD, "PortSelect {sel} at LID {lid}");
    }
    let (st, _) = perf(&mut b, S1, Method::Set, &ClassPortInfo::default());
    assert_eq!(st, ids::status::BAD_METHOD_ATTR, "Set(ClassPortInfo)");
    let mut mad = PerfMad::request(Method::Get, 0, 0, &PortCounters::default());
    ibsm_mad::bits::put_u16(&mut mad, 16, 0x0036);
    assert_eq!(perf_raw(&mut b, S1, mad).0, ids::status::BAD_METHOD_ATTR, "an attribute the PMA lacks");
    let mut mad = PerfMad::request(Method::Get, 0, 0, &PortCounters { port_select: 1, ..Default::default() });
    mad[2] = 2;
    assert_eq!(perf_raw(&mut b, S1, mad).0, ids::status::BAD_VERSION);
    // A CA answers for its own port.
    assert_eq!(counters(&mut b, H3, 1).port_select, 1);
}

/// A port's receive counts are its peer's deliveries (the simulator does not write the far
/// end's record on a hop): they must still read as if counted at the port. A restarted node's
/// ports count from zero while their peers count on; a MAD a rule drops on the cable is sent
/// by one end and received by neither.
#[test]
fn receive_counts_survive_a_restart_at_either_end_and_skip_what_a_rule_drops() {
    let mut b = up();
    let (s1, s2, h3) = (b.node("S1"), b.node("S2"), b.node("H3"));
    let now = |b: &mut Bench, node, port| {
        let c = b.f.port_counters_now(node, port).expect("port exists");
        (c.xmit_pkts, c.rcv_pkts)
    };
    let (s1_before, h3_before) = (now(&mut b, s1, 3), now(&mut b, h3, 1));
    assert!(s1_before.0 > 0 && s1_before.1 > 0 && h3_before.1 > 0, "the bring-up crossed both cables");
    b.f.inject_fault(Fault::Crash(s2));
    b.f.inject_fault(Fault::Restart(s2));
    assert_eq!((now(&mut b, s2, 3), now(&mut b, s2, 1)), ((0, 0), (0, 0)), "S2's ports count from zero");
    assert_eq!((now(&mut b, s1, 3), now(&mut b, h3, 1)), (s1_before, h3_before), "their peers count on");
    b.run();
    let (s1_mid, s2_mid) = (now(&mut b, s1, 3), now(&mut b, s2, 3));
    // Directed-route Gets to the restarted S2: each crosses S1[3] - S2[3] once each way.
    for _ in 0..3 {
        assert_eq!(b.dr_get(&[1, 3], ids::attr::NODE_INFO, 0).expect("NodeInfo answered").0, 0);
    }
    let (s1_after, s2_after) = (now(&mut b, s1, 3), now(&mut b, s2, 3));
    assert_eq!((s1_after.0 - s1_mid.0, s1_after.1 - s1_mid.1), (3, 3));
    assert_eq!((s2_after.0 - s2_mid.0, s2_after.1 - s2_mid.1), (3, 3));
    // Every packet on the cable dropped: S1[3] sends one more, S2[3] receives none of it.
    b.f.inject_fault(Fault::AddRule(ibsm_sim::fabric::LinkRule {
        link: Some((s1, 3)),
        drop: 1.0,
        delay_ns: 0,
        jitter_ns: 0,
    }));
    assert_eq!(b.dr_get(&[1, 3], ids::attr::NODE_INFO, 0), None, "dropped on the cable");
    assert_eq!(now(&mut b, s1, 3).0, s1_after.0 + 1);
    assert_eq!(now(&mut b, s2, 3), s2_after);
    b.f.inject_fault(Fault::ClearRules);
    // Now S1 restarts: S2[3] keeps what it received, S1[3] starts again.
    b.f.inject_fault(Fault::Crash(s1));
    b.f.inject_fault(Fault::Restart(s1));
    assert_eq!((now(&mut b, s1, 3), now(&mut b, s2, 3)), ((0, 0), s2_after));
    assert_eq!(b.dr_get(&[1, 3], ids::attr::NODE_INFO, 0).expect("NodeInfo answered").0, 0);
    assert_eq!(now(&mut b, s1, 3), (1, 1));
    assert_eq!(now(&mut b, s2, 3), (s2_after.0 + 1, s2_after.1 + 1));
}
