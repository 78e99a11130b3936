//! The SA end to end on the simulated fabric.
//!
//! The SM sweeps a generated or example fabric; then queries go to [`ibsm::sa::serve`] with
//! the snapshot the core built (RMPP limits, so a GetTable carries every record) and, for the
//! wiring, through the fabric from a probe port as `saquery` would send them (single MADs, as
//! the simulator and ibsim carry). Expected answers come from the topology and from forwarding
//! tables read back from the simulated switches with directed-route SMPs, not from the SM.
//! Multicast is in `tests/sa_multicast.rs`, event subscriptions in `tests/sa_notices.rs`, the
//! shared helpers in `tests/support/sa.rs`.

use std::collections::HashSet;

use ibsm::core::{Guid2Lid, Sm, SmConfig};
use ibsm::sa::{self, Limits, Live, SaState, Snapshot};
use ibsm::transport::sim::SimDriver;
use ibsm_mad::attrs::{LinearForwardingTable, NodeType, PortState, SmState};
use ibsm_mad::header::Method;
use ibsm_mad::ids::status;
use ibsm_mad::records::{
    LftRecord, LinkRecord, NodeRecord, PathRecord, PortInfoRecord, Selector, ServiceRecord, SmInfoRecord,
    SwitchInfoRecord, stride,
};
use ibsm_mad::sa::{SA_HEADER_LEN, SaHeader, request};
use ibsm_mad::{Attribute, Gid, Guid, Lid, MAD_LEN, PKey};
use ibsm_sim::fabric::Dest;
use ibsm_topology::{GenSpec, NodeKind};

mod support;

use support::sa::*;

#[test]
fn node_records_one_per_end_port_selected_by_any_component() {
    let s = sweep(example("fat-tree-3l-k4.net"), 0);
    let ends = s.end_ports();
    let all = s.ask(Method::GetTable, 0, &NodeRecord::parse(&[0; 108]).unwrap());
    assert_eq!(all.status, status::OK);
    let recs: Vec<NodeRecord> = records(&all);
    assert_eq!(recs.len(), ends.len(), "one NodeRecord per end port");
    let guids: HashSet<Guid> = recs.iter().map(|r| r.node_info.port_guid).collect();
    assert_eq!(guids, ends.iter().map(|e| e.2).collect(), "every end port once");
    for r in &recs {
        assert_eq!(r.lid, s.lid_of(r.node_info.port_guid));
        let node = s.topo.nodes.iter().find(|n| n.node_guid == r.node_info.node_guid).expect("known node");
        assert_eq!(r.node_description.text(), node.node_desc());
        if node.kind == NodeKind::Switch {
            assert_eq!(r.node_info.local_port_num.0, 0);
        } else {
            assert_eq!(node.port_guid(r.node_info.local_port_num.0), r.node_info.port_guid);
        }
    }
    // Get by LID: exactly that port.
    let pick = &recs[recs.len() / 2];
    let q = NodeRecord { lid: pick.lid, ..recs[0] };
    let one = s.ask(Method::Get, NodeRecord::COMP_LID, &q);
    assert_eq!((one.status, records::<NodeRecord>(&one)), (status::OK, vec![*pick]));
    // Get with nothing selected: too many; an unknown LID: none.
    assert_eq!(s.ask(Method::Get, 0, &q).status, status::SA_TOO_MANY_RECORDS);
    let nobody = NodeRecord { lid: Lid(0xbfff), ..q };
    assert_eq!(s.ask(Method::Get, NodeRecord::COMP_LID, &nobody).status, status::SA_NO_RECORDS);
    let empty = s.ask(Method::GetTable, NodeRecord::COMP_LID, &nobody);
    assert_eq!((empty.status, empty.records), (status::OK, 0), "an empty table is a success");
    // By node type, and by NodeDescription.
    let mut sw = q;
    sw.node_info.node_type = NodeType::Switch;
    let switches = s.ask(Method::GetTable, NodeRecord::COMP_NODE_TYPE, &sw);
    assert_eq!(switches.records, s.topo.nodes.iter().filter(|n| n.kind == NodeKind::Switch).count());
    let by_desc = s.ask(Method::GetTable, NodeRecord::COMP_NODE_DESCRIPTION, pick);
    assert_eq!(records::<NodeRecord>(&by_desc), vec![*pick]);
}

#[test]
fn port_info_switch_link_lft_and_sm_info_records_describe_the_fabric() {
    let mut s = sweep(example("fat-tree-2l-k4.net"), 0);
    let topo = s.topo.clone();
    let topo = &topo;
    let switches: Vec<usize> = (0..topo.nodes.len()).filter(|&i| topo.nodes[i].kind == NodeKind::Switch).collect();
    let zero_pir = PortInfoRecord::parse(&[0; 68]).unwrap();

    // PortInfoRecord: a switch's LID gives all its ports, a CA's its one port; M_Key hidden.
    let sw = switches[0];
    let sw_lid = s.lid_of(topo.nodes[sw].port_guid(0));
    let q = PortInfoRecord { endport_lid: sw_lid, ..zero_pir };
    let pirs: Vec<PortInfoRecord> = records(&s.ask(Method::GetTable, PortInfoRecord::COMP_ENDPORT_LID, &q));
    assert_eq!(pirs.len(), usize::from(topo.nodes[sw].num_ports) + 1);
    for r in &pirs {
        assert_eq!(r.port_info.m_key.0, 0, "M_Key is never shown");
        let p = r.port_num.0;
        let cabled = p > 0 && topo.nodes[sw].peer(p).is_some();
        assert_eq!(r.port_info.port_state == PortState::Active, cabled || p == 0, "port {p}");
    }
    // Selecting by PortState Active on top gives the cabled ports and port 0.
    let mut active = q;
    active.port_info.port_state = PortState::Active;
    let n_active = s.ask(Method::GetTable, PortInfoRecord::COMP_ENDPORT_LID | PortInfoRecord::COMP_PORT_STATE, &active);
    assert_eq!(n_active.records, pirs.iter().filter(|r| r.port_info.port_state == PortState::Active).count());
    let ca = (0..topo.nodes.len()).find(|&i| topo.nodes[i].kind == NodeKind::Ca).unwrap();
    let ca_lid = s.lid_of(topo.nodes[ca].port_guid(1));
    let ca_pir: Vec<PortInfoRecord> = records(&s.ask(
        Method::GetTable,
        PortInfoRecord::COMP_ENDPORT_LID,
        &PortInfoRecord { endport_lid: ca_lid, ..q },
    ));
    assert_eq!(ca_pir.len(), 1);
    assert_eq!((ca_pir[0].port_num.0, ca_pir[0].port_info.lid), (1, ca_lid));
    assert_eq!(ca_pir[0].port_info.gid_prefix, PREFIX);

    // SwitchInfoRecord: one per switch, LinearFDBTop covering every LID.
    let max_lid = s.end_ports().iter().map(|e| s.lid_of(e.2).0).max().unwrap();
    let swir: Vec<SwitchInfoRecord> = records(&s.ask(Method::GetTable, 0, &SwitchInfoRecord::default()));
    assert_eq!(swir.len(), switches.len());
    assert!(swir.iter().all(|r| r.switch_info.linear_fdb_top.0 == max_lid));

    // LinkRecord: every cable twice, once from each end.
    let links: Vec<LinkRecord> = records(&s.ask(Method::GetTable, 0, &LinkRecord::default()));
    let cables = topo.nodes.iter().map(|n| (1..=n.num_ports).filter(|&p| n.peer(p).is_some()).count()).sum::<usize>();
    assert_eq!(links.len(), cables);
    let set: HashSet<(u16, u8, u8, u16)> =
        links.iter().map(|l| (l.from_lid.0, l.from_port.0, l.to_port.0, l.to_lid.0)).collect();
    assert!(set.iter().all(|&(a, pa, pb, b)| set.contains(&(b, pb, pa, a))), "both directions");
    let from_sw =
        s.ask(Method::GetTable, LinkRecord::COMP_FROM_LID, &LinkRecord { from_lid: sw_lid, ..LinkRecord::default() });
    assert_eq!(from_sw.records, (1..=topo.nodes[sw].num_ports).filter(|&p| topo.nodes[sw].peer(p).is_some()).count());

    // LFTRecord: block 0 of a switch equals what the switch itself holds (read back by SMP).
    let mut held = Oracle::new(&s);
    let q = LftRecord { lid: sw_lid, block_num: 0, lft: LinearForwardingTable::default() };
    let lft: Vec<LftRecord> = records(&s.ask(Method::Get, LftRecord::COMP_LID | LftRecord::COMP_BLOCK_NUM, &q));
    assert_eq!(lft.len(), 1);
    for lid in 1..=max_lid.min(63) {
        assert_eq!(Some(lft[0].lft.ports[usize::from(lid)].0), held.entry(&mut s.drv, sw, lid), "LID {lid}");
    }

    // SMInfoRecord: this SM, master.
    let smir: Vec<SmInfoRecord> = records(&s.ask(Method::GetTable, 0, &SmInfoRecord::default()));
    assert_eq!(smir.len(), 1);
    assert_eq!((smir[0].sm_info.guid, smir[0].sm_info.sm_state), (s.drv.sm.port_guid(), SmState::Master));
    assert_eq!(smir[0].lid, s.lid_of(s.drv.sm.port_guid()));

    // ClassPortInfo, and the statuses for what is not served.
    let cpi = s.ask(Method::Get, 0, &ibsm_mad::records::ClassPortInfo::default());
    assert_eq!(cpi.status, status::OK);
    let cpi = ibsm_mad::records::ClassPortInfo::parse(&cpi.bytes[SA_HEADER_LEN..]).unwrap();
    assert_eq!((cpi.base_version, cpi.class_version, cpi.redirect_qkey), (1, 2, 0x8001_0000));
    assert_eq!(s.ask(Method::Set, 0, &NodeRecord::parse(&[0; 108]).unwrap()).status, status::BAD_METHOD_ATTR);
    // A GUIDInfoRecord Set is served (alias GUIDs), but one that names no LID and block is
    // refused, as OpenSM refuses it.
    assert_eq!(
        s.ask(Method::Set, 0, &ibsm_mad::records::GuidInfoRecord::parse(&[0; 72]).unwrap()).status,
        status::SA_INSUFFICIENT_COMPONENTS
    );
}

/// PacketLifeTime as docs/subnet-administration.md states it: the SubnetTimeout (18) on every path between two
/// ports, whatever it crosses, as OpenSM gives it; 0 for a port to itself.
fn expected_life(switches: u32) -> u8 {
    if switches == 0 { 0 } else { 18 }
}

#[test]
fn path_records_follow_the_tables_the_switches_hold() {
    let mut fab = sweep(example("fat-tree-3l-k4.net"), 0);
    let topo = fab.topo.clone();
    let mut oracle = Oracle::new(&fab);
    let ends = fab.end_ports();
    let mut checked = 0;
    let mut lengths = HashSet::new();
    for &(si, sp, sg) in &ends {
        for &(di, dp, dg) in &ends {
            let (slid, dlid) = (fab.lid_of(sg), fab.lid_of(dg));
            let (mask, q) = path_query(Some(slid), Some(dlid), None, None);
            let a = fab.ask(Method::Get, mask, &q);
            assert_eq!(a.status, status::OK, "{slid:?} -> {dlid:?}");
            let r = records::<PathRecord>(&a)[0];
            assert_eq!((r.slid, r.dlid), (slid, dlid));
            assert_eq!((r.sgid, r.dgid), (Gid { prefix: PREFIX, guid: sg }, Gid { prefix: PREFIX, guid: dg }));
            assert!(r.reversible);
            assert_eq!((r.pkey, r.sl, r.hop_limit), (PKey(0xffff), 0, 0));
            assert_eq!(
                (r.mtu_selector, r.rate_selector, r.packet_life_time_selector),
                (Selector::Exactly, Selector::Exactly, Selector::Exactly)
            );
            assert!(r.mtu.raw() >= 1 && r.rate.mbps().is_some());
            let crossed = oracle
                .switches_crossed(&mut fab.drv, &topo, (si, sp), dlid.0, (di, dp))
                .unwrap_or_else(|| panic!("the switches do not deliver {slid:?} -> {dlid:?}"));
            assert_eq!(r.packet_life_time, expected_life(crossed), "{slid:?} -> {dlid:?} crosses {crossed}");
            lengths.insert(crossed);
            // The same path by GIDs.
            let (mask, q) = path_query(None, None, Some(sg), Some(dg));
            assert_eq!(records::<PathRecord>(&fab.ask(Method::Get, mask, &q)), vec![r]);
            checked += 1;
        }
    }
    assert_eq!(checked, ends.len() * ends.len());
    assert!(lengths.len() >= 3, "paths of several lengths, one lifetime: {lengths:?}");

    // From one source to every end port.
    let src = ends[0].2;
    let (mask, q) = path_query(Some(fab.lid_of(src)), None, None, None);
    let from_one: Vec<PathRecord> = records(&fab.ask(Method::GetTable, mask, &q));
    assert_eq!(from_one.len(), ends.len());
    assert!(from_one.iter().all(|r| r.slid == fab.lid_of(src)));

    // Statuses.
    let (a, b) = (ends[1].2, ends[2].2);
    let (mask, q) = path_query(None, None, Some(Guid(0xdead)), Some(b));
    assert_eq!(fab.ask(Method::Get, mask, &q).status, status::SA_INVALID_GID);
    let (mask, q) = path_query(Some(fab.lid_of(a)), Some(fab.lid_of(a)), None, Some(b));
    assert_eq!(fab.ask(Method::Get, mask, &q).status, status::SA_REQ_INVALID, "DGID and DLID name different ports");
    let (mask, q) = path_query(None, Some(fab.lid_of(b)), None, None);
    assert_eq!(fab.ask(Method::Get, mask, &q).status, status::SA_INSUFFICIENT_COMPONENTS);
    let (mask, mut q) = path_query(Some(fab.lid_of(a)), Some(fab.lid_of(b)), None, None);
    q.pkey = PKey(0x8001);
    assert_eq!(
        fab.ask(Method::Get, mask | PathRecord::COMP_PKEY, &q).status,
        status::SA_NO_RECORDS,
        "no such partition"
    );
    q.pkey = PKey(0x7fff);
    let limited = records::<PathRecord>(&fab.ask(Method::Get, mask | PathRecord::COMP_PKEY, &q));
    assert_eq!(limited[0].pkey, PKey(0x7fff), "the default P_Key as asked");
    q.pkey = PKey(0);
    q.sl = 1;
    assert_eq!(fab.ask(Method::Get, mask | PathRecord::COMP_SL, &q).status, status::SA_NO_RECORDS);
    // Selectors: the path's MTU exactly, more than it, less than one above it.
    let base = records::<PathRecord>(&fab.ask(Method::Get, mask, &q))[0];
    let sel = mask | PathRecord::COMP_MTU | PathRecord::COMP_MTU_SELECTOR;
    q.mtu = base.mtu;
    q.mtu_selector = Selector::Exactly;
    assert_eq!(fab.ask(Method::Get, sel, &q).status, status::OK);
    q.mtu_selector = Selector::GreaterThan;
    assert_eq!(fab.ask(Method::Get, sel, &q).status, status::SA_NO_RECORDS);
    q.mtu = ibsm_mad::records::Mtu::from_raw(base.mtu.raw() + 1);
    q.mtu_selector = Selector::LessThan;
    assert_eq!(fab.ask(Method::Get, sel, &q).status, status::OK);
    q.rate = base.rate;
    q.rate_selector = Selector::Exactly;
    assert_eq!(
        fab.ask(Method::Get, mask | PathRecord::COMP_RATE | PathRecord::COMP_RATE_SELECTOR, &q).status,
        status::OK
    );
}

#[test]
fn with_lmc_every_lid_pair_is_a_path_and_numb_path_limits_them() {
    let fab = sweep(example("fat-tree-2l-k4.net"), 1);
    let ends = fab.end_ports();
    let cas: Vec<Guid> = ends.iter().filter(|e| e.1 > 0).map(|e| e.2).collect();
    let (a, b) = (cas[0], cas[cas.len() - 1]);
    let (mask, q) = path_query(None, None, Some(a), Some(b));
    let all: Vec<PathRecord> = records(&fab.ask(Method::GetTable, mask, &q));
    let pairs: HashSet<(u16, u16)> = all.iter().map(|r| (r.slid.0, r.dlid.0)).collect();
    let (la, lb) = (fab.lid_of(a).0, fab.lid_of(b).0);
    assert_eq!(pairs, HashSet::from([(la, lb), (la, lb + 1), (la + 1, lb), (la + 1, lb + 1)]));
    let mut q1 = q;
    q1.numb_path = 1;
    assert_eq!(fab.ask(Method::GetTable, mask | PathRecord::COMP_NUMB_PATH, &q1).records, 1);
    // Every LID of a port names it.
    let (mask, q) = path_query(Some(Lid(la + 1)), Some(Lid(lb + 1)), None, None);
    let r = records::<PathRecord>(&fab.ask(Method::Get, mask, &q));
    assert_eq!((r[0].sgid.guid, r[0].dgid.guid), (a, b));
}

#[test]
fn saquery_style_requests_through_the_fabric() {
    let topo = example("fat-tree-2l-k4.net");
    let mut drv = SimDriver::new(&topo, 5, Sm::new(SmConfig::default(), Guid2Lid::default()), None).expect("attach");
    let (sm_node, _) = drv.at;
    let (pn, pp) = topo
        .nodes
        .iter()
        .enumerate()
        .filter(|&(i, n)| n.kind == NodeKind::Ca && i != sm_node)
        .find_map(|(i, n)| n.peer(1).map(|_| (i, 1u8)))
        .expect("another host");
    let probe = drv.fabric.attach(pn, pp).expect("probe");
    let nr = request(Method::GetTable, 0, 0x51, &NodeRecord::parse(&[0; 108]).unwrap()).unwrap();
    // Before any sweep there is no master: no answer (the fabric could not carry one yet
    // anyway, so the request goes straight into the core).
    drv.sm.handle_mad(0, &nr, ibsm::core::MadSource::lid(Lid(5), 1));
    assert!(drv.sm.poll_transmit(0).is_none(), "no answer before the first sweep");
    assert_eq!(drv.sm.request_counters().sa_not_ready, 1);

    let report = drv.sweep(LIMIT, |_| {}).expect("sweep");
    drv.fabric.send(probe, &nr, Dest { dlid: report.sm_lid, qpn: 1 });
    let heard = listen(&mut drv, probe).expect("answer");
    let h = SaHeader::from_bytes(&heard.mad[..]).expect("SA header");
    assert_eq!((h.method, h.status, h.tid & 0xffff_ffff), (Method::GetTableResp, 0, 0x51));
    assert_eq!(heard.sqpn, 1);
    assert!(h.rmpp.flags.active && h.rmpp.flags.first && h.rmpp.flags.last);
    let stride = stride::<NodeRecord>();
    assert_eq!(h.attr_offset as usize * 8, stride);
    let payload = h.rmpp.data2 as usize - 20;
    assert_eq!(payload, stride, "one NodeRecord fits a single MAD");
    let rec = NodeRecord::parse(&heard.mad[SA_HEADER_LEN..]).unwrap();
    assert_eq!(rec.lid, drv.sm.guid2lid().get(rec.node_info.port_guid).unwrap().0);

    // A PathRecord Get from the probe to the SM, by LIDs.
    let probe_lid = drv.sm.guid2lid().get(topo.nodes[pn].port_guid(pp)).unwrap().0;
    let (m, q) = path_query(Some(probe_lid), Some(report.sm_lid), None, None);
    let pr = request(Method::Get, m, 0x52, &q).unwrap();
    drv.fabric.send(probe, &pr, Dest { dlid: report.sm_lid, qpn: 1 });
    let heard = listen(&mut drv, probe).expect("answer");
    let h = SaHeader::from_bytes(&heard.mad[..]).unwrap();
    assert_eq!((h.method, h.status), (Method::GetResp, 0));
    let r = PathRecord::parse(&heard.mad[SA_HEADER_LEN..]).unwrap();
    assert_eq!((r.slid, r.dlid, r.packet_life_time), (probe_lid, report.sm_lid, 18), "same leaf: one switch");
    assert!(drv.sm.request_counters().sa_answered >= 2);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
    /// Whatever a client sends, the SA answers or drops it without panicking, with a response
    /// method, the request's TID, and never more than one MAD in single-MAD mode.
    #[test]
    fn any_request_is_answered_or_dropped_without_panic(
        method in proptest::sample::select(vec![0x01u8, 0x02, 0x12, 0x14, 0x15, 0x13, 0x81, 0x7f]),
        attr in proptest::sample::select(vec![0x01u16, 0x11, 0x12, 0x14, 0x15, 0x18, 0x20, 0x35, 0x31, 0x38, 0xffff]),
        mask in proptest::prelude::any::<u64>(),
        data in proptest::collection::vec(proptest::prelude::any::<u8>(), 200),
        len in 0usize..300,
    ) {
        let s = shared();
        let mut mad = vec![0u8; MAD_LEN];
        mad[0] = 1;
        mad[1] = 3;
        mad[2] = 2;
        mad[3] = method;
        mad[8..16].copy_from_slice(&0x99u64.to_be_bytes());
        mad[16..18].copy_from_slice(&attr.to_be_bytes());
        mad[48..56].copy_from_slice(&mask.to_be_bytes());
        mad[56..].copy_from_slice(&data);
        mad.truncate(len.max(1));
        let live = Live::new(ibsm_mad::attrs::SmInfo::default());
        let mut state = SaState::default();
        for limits in [Limits::default(), Limits::UMAD2SIM] {
            if let Ok(a) = sa::serve(s, &mut state, &live, &mad, Lid(3), &limits) {
                let h = SaHeader::from_bytes(&a.bytes).expect("answer parses");
                proptest::prop_assert!(h.method.is_response());
                proptest::prop_assert_eq!(h.tid, 0x99);
                if limits.single_mad_bytes.is_some() {
                    proptest::prop_assert!(a.bytes.len() <= MAD_LEN);
                }
            }
        }
    }
}

/// One swept fabric shared by the property test's cases.
fn shared() -> &'static Snapshot {
    static SNAP: std::sync::OnceLock<std::sync::Arc<Snapshot>> = std::sync::OnceLock::new();
    SNAP.get_or_init(|| sweep(GenSpec::fat_tree(2, 4).generate().expect("generates"), 1).snap)
}

#[test]
fn a_burst_of_requests_is_answered_or_refused_with_bounded_memory() {
    let mut fab = sweep(example("fat-tree-2l-k4.net"), 0);
    let ends = fab.end_ports();
    let (a, b) = (fab.lid_of(ends[0].2), fab.lid_of(ends[1].2));
    let (mask, q) = path_query(Some(a), Some(b), None, None);
    let req = request(Method::Get, mask, 7, &q).unwrap();
    let now = fab.drv.now();
    // 100,000 requests from one port, nothing sent meanwhile.
    for _ in 0..100_000 {
        fab.drv.sm.handle_mad(now, &req, ibsm::core::MadSource::lid(a, 1));
    }
    let c = fab.drv.sm.request_counters();
    let mut queued = 0;
    let (mut ok, mut busy) = (0, 0);
    while let Some(t) = fab.drv.sm.poll_transmit(now) {
        queued += 1;
        match SaHeader::from_bytes(&t.bytes).unwrap().status {
            status::OK => ok += 1,
            status::BUSY => busy += 1,
            other => panic!("status {other:#x}"),
        }
    }
    assert!(queued <= 16_384, "{queued} answers queued");
    assert_eq!(c.sa_answered + c.sa_busy + c.sa_dropped, 100_000, "{c:?}");
    assert_eq!((ok, busy), (c.sa_answered, c.sa_busy));
    assert!(c.sa_dropped > 0 && ok > 0);

    // Past its rate a requester gets BUSY; another is still served; time restores the first.
    let cfg = SmConfig { sa_rate_limit: 100, ..SmConfig::default() };
    let mut drv = SimDriver::new(&fab.topo, 3, Sm::new(cfg, Guid2Lid::default()), None).expect("attach");
    drv.sweep(LIMIT, |_| {}).expect("up");
    let now = drv.now();
    let statuses = |drv: &mut SimDriver, from: Lid, n: usize, at: u64| -> Vec<u16> {
        (0..n)
            .map(|_| {
                drv.sm.handle_mad(at, &req, ibsm::core::MadSource::lid(from, 1));
                SaHeader::from_bytes(&drv.sm.poll_transmit(at).expect("answer").bytes).unwrap().status
            })
            .collect()
    };
    let first = statuses(&mut drv, a, 150, now);
    assert_eq!(first.iter().filter(|&&st| st == status::OK).count(), 100);
    assert_eq!(first.iter().filter(|&&st| st == status::BUSY).count(), 50);
    assert_eq!(statuses(&mut drv, b, 1, now), vec![status::OK], "another requester is served");
    assert_eq!(statuses(&mut drv, a, 1, now + 1_000_000_000), vec![status::OK], "a second later");
}

#[test]
fn services_are_registered_found_replaced_deleted_and_expire() {
    let topo = example("fat-tree-2l-k4.net");
    let mut drv = SimDriver::new(&topo, 9, Sm::new(SmConfig::default(), Guid2Lid::default()), None).expect("attach");
    drv.sweep(LIMIT, |_| {}).expect("up");
    let port = topo.nodes.iter().find(|n| n.kind == NodeKind::Ca).expect("a host").port_guid(1);
    let me = drv.sm.guid2lid().get(port).expect("LID").0;
    let t0 = drv.now();
    let mut web = ServiceRecord {
        service_id: 0x1000_0000_0000_0001,
        service_gid: Gid { prefix: PREFIX, guid: port },
        service_pkey: PKey(0xffff),
        service_lease: 60,
        ..ServiceRecord::default()
    };
    web.set_name("ibsm-test-web");
    let mut db =
        ServiceRecord { service_id: 0x1000_0000_0000_0002, service_lease: ServiceRecord::INFINITE_LEASE, ..web };
    db.set_name("ibsm-test-db");
    let key = ServiceRecord::COMP_SERVICE_ID | ServiceRecord::COMP_SERVICE_GID | ServiceRecord::COMP_SERVICE_PKEY;
    let set =
        |drv: &mut SimDriver, at, rec: &ServiceRecord, mask| through_core(drv, at, me, (Method::Set, mask, 0), rec);
    let (st, data) = set(&mut drv, t0, &web, key);
    assert_eq!(st, status::OK);
    assert_eq!(ServiceRecord::parse(&data).unwrap(), web, "the Set is answered with the record");
    assert_eq!(set(&mut drv, t0, &db, key).0, status::OK);
    assert_eq!(set(&mut drv, t0, &db, ServiceRecord::COMP_SERVICE_ID).0, status::SA_INSUFFICIENT_COMPONENTS);
    let stranger = ServiceRecord { service_gid: Gid { prefix: PREFIX, guid: Guid(0xdead) }, ..db };
    assert_eq!(set(&mut drv, t0, &stranger, key).0, status::SA_INVALID_GID);

    // Found by name; GetTable lists both; a Set with the same key replaces.
    let ask =
        |drv: &mut SimDriver, at, method, mask, rec: &ServiceRecord| through_core(drv, at, me, (method, mask, 0), rec);
    let (st, data) = ask(&mut drv, t0, Method::Get, ServiceRecord::COMP_SERVICE_NAME, &db);
    assert_eq!((st, ServiceRecord::parse(&data).unwrap()), (status::OK, db));
    let mut web2 = web;
    web2.data32[0] = 7;
    assert_eq!(set(&mut drv, t0, &web2, key).0, status::OK);
    let (st, data) = ask(&mut drv, t0, Method::Get, ServiceRecord::COMP_SERVICE_NAME, &web);
    assert_eq!((st, ServiceRecord::parse(&data).unwrap().data32[0]), (status::OK, 7), "replaced, not added");
    let by_data = ask(&mut drv, t0, Method::Get, ServiceRecord::COMP_DATA32_0, &web2);
    assert_eq!(by_data.0, status::OK);
    assert_eq!(ask(&mut drv, t0, Method::Get, 0, &web).0, status::SA_TOO_MANY_RECORDS, "two are registered");

    // The 60 s lease ends; the infinite one stays.
    let later = t0 + 61_000_000_000;
    assert_eq!(ask(&mut drv, later, Method::Get, ServiceRecord::COMP_SERVICE_NAME, &web).0, status::SA_NO_RECORDS);
    assert_eq!(ask(&mut drv, later, Method::Get, 0, &web).0, status::OK, "only db is left");
    // A Delete names one record by its ServiceID, ServiceGID and ServiceP_Key, as OpenSM's:
    // whatever the component mask, a template that names none removes nothing (a mask of 0 once
    // removed every service of every port).
    let blank = ServiceRecord::default();
    assert_eq!(ask(&mut drv, later, Method::Delete, 0, &blank).0, status::SA_NO_RECORDS);
    let other = ServiceRecord { service_pkey: PKey(0x7fff), ..db };
    assert_eq!(ask(&mut drv, later, Method::Delete, ServiceRecord::COMP_SERVICE_ID, &other).0, status::SA_NO_RECORDS);
    assert_eq!(ask(&mut drv, later, Method::Get, 0, &db).0, status::OK, "db is still there");
    // Delete by its record ID answers with the record; a second Delete finds nothing.
    let (st, data) = ask(&mut drv, later, Method::Delete, ServiceRecord::COMP_SERVICE_ID, &db);
    assert_eq!((st, ServiceRecord::parse(&data).unwrap()), (status::OK, db));
    assert_eq!(ask(&mut drv, later, Method::Delete, ServiceRecord::COMP_SERVICE_ID, &db).0, status::SA_NO_RECORDS);
    assert_eq!(ask(&mut drv, later, Method::Get, 0, &db).0, status::SA_NO_RECORDS);
}

#[test]
fn the_sa_never_shows_the_sm_key_and_drops_a_wrong_sa_key() {
    let topo = example("fat-tree-2l-k4.net");
    let cfg = SmConfig { sm_key: 0xabcd, sa_key: 0x55, ..SmConfig::default() };
    let mut drv = SimDriver::new(&topo, 9, Sm::new(cfg, Guid2Lid::default()), None).expect("attach");
    drv.sweep(LIMIT, |_| {}).expect("up");
    let now = drv.now();
    let key_seen = |drv: &mut SimDriver, sa_key| {
        let (st, data) = through_core(drv, now, Lid(3), (Method::GetTable, 0, sa_key), &SmInfoRecord::default());
        assert_eq!(st, status::OK);
        SmInfoRecord::parse(&data).unwrap().sm_info.sm_key
    };
    // As OpenSM: not even to a trusted requester (the SA key is widely known; the SM_Key guards
    // handover).
    assert_eq!(key_seen(&mut drv, 0x55), 0, "trusted");
    assert_eq!(key_seen(&mut drv, 0), 0, "untrusted");
    // OpenSM's default is not this SA's key: a wrong non-zero key gets no answer at all.
    let mut bytes = request(Method::GetTable, 0, 0x78, &SmInfoRecord::default()).expect("request");
    bytes[36..44].copy_from_slice(&1u64.to_be_bytes());
    drv.sm.handle_mad(now, &bytes, ibsm::core::MadSource::lid(Lid(3), 1));
    assert!(drv.sm.poll_transmit(now).is_none(), "a wrong SA key is dropped");
    assert_eq!(drv.sm.request_counters().sa_bad_key, 1);
}

#[test]
fn readers_of_the_snapshot_do_not_wait_for_a_running_sweep() {
    use ibsm::core::{SmEvent, SweepPhase};
    use ibsm::routes::live::LiveRoutes;
    let topo = example("fat-tree-2l-k4.net");
    let mut drv = SimDriver::new(&topo, 6, Sm::new(SmConfig::default(), Guid2Lid::default()), None).expect("attach");
    assert!(LiveRoutes::from_sm(&drv.sm).is_err(), "nothing before the first sweep");
    drv.sweep(LIMIT, |_| {}).expect("up");
    let before = LiveRoutes::from_sm(&drv.sm).expect("routes after the sweep");
    let snap = drv.sm.snapshot().expect("snapshot");
    // A second sweep, stopped in the middle (the subnet model is being rebuilt).
    drv.sm.start_sweep(drv.now());
    let ev = drv
        .run_until(drv.now() + LIMIT, |ev| matches!(ev, SmEvent::PhaseStarted { phase: SweepPhase::Discovering, .. }));
    assert!(ev.is_some() && drv.sm.phase() != SweepPhase::Up);
    let during = LiveRoutes::from_sm(&drv.sm).expect("answered during the sweep");
    assert_eq!(serde_json::to_string(&during).unwrap(), serde_json::to_string(&before).unwrap());
    assert!(std::sync::Arc::ptr_eq(&snap, &drv.sm.snapshot().unwrap()), "the last sweep's snapshot, not a new one");
    // The SA answers from it too.
    let (a, b) = (snap.end_ports().next().unwrap(), snap.end_ports().last().unwrap());
    let (la, lb) = (snap.port(a).unwrap().lid, snap.port(b).unwrap().lid);
    let (st, _) = through_core(
        &mut drv,
        0,
        la,
        (Method::Get, PathRecord::COMP_SLID | PathRecord::COMP_DLID, 0),
        &PathRecord { slid: la, dlid: lb, ..PathRecord::default() },
    );
    assert_eq!(st, status::OK);
}

#[test]
fn multi_path_records_give_every_source_destination_pair() {
    use ibsm_mad::records::MultiPathRecord;
    let fab = sweep(example("fat-tree-3l-k4.net"), 0);
    let ends = fab.end_ports();
    let cas: Vec<Guid> = ends.iter().filter(|e| e.1 > 0).map(|e| e.2).collect();
    let g = |guid: Guid| Gid { prefix: PREFIX, guid };
    let req = MultiPathRecord {
        sgids: vec![g(cas[0]), g(cas[1])],
        dgids: vec![g(cas[2]), g(cas[5]), g(cas[9])],
        ..MultiPathRecord::default()
    };
    let a = fab.ask(Method::GetMulti, MultiPathRecord::COMP_SGID_COUNT | MultiPathRecord::COMP_DGID_COUNT, &req);
    assert_eq!(a.status, status::OK);
    let got: Vec<PathRecord> = records(&a);
    assert_eq!(got.len(), 6, "two sources by three destinations");
    for r in &got {
        let (mask, q) = path_query(None, None, Some(r.sgid.guid), Some(r.dgid.guid));
        assert_eq!(records::<PathRecord>(&fab.ask(Method::Get, mask, &q)), vec![*r], "as PathRecord answers it");
    }
    let stranger = MultiPathRecord { dgids: vec![g(Guid(0xdead))], ..req.clone() };
    assert_eq!(fab.ask(Method::GetMulti, 0, &stranger).status, status::SA_INVALID_GID);
    let none = MultiPathRecord { dgids: Vec::new(), ..req };
    assert_eq!(fab.ask(Method::GetMulti, 0, &none).status, status::SA_REQ_INVALID);
}

#[test]
fn answers_are_counted_by_attribute_and_status_in_the_metrics() {
    let topo = example("fat-tree-2l-k4.net");
    let mut drv = SimDriver::new(&topo, 3, Sm::new(SmConfig::default(), Guid2Lid::default()), None).expect("attach");
    assert!(drv.sweep(LIMIT, |_| {}).expect("up").complete);
    let me = drv.sm.subnet().local_lid();
    let any = NodeRecord::parse(&[0; 108]).expect("record");
    for _ in 0..2 {
        let now = drv.now();
        assert_eq!(through_core(&mut drv, now, me, (Method::GetTable, 0, 1), &any).0, status::OK);
    }
    let nobody = NodeRecord { lid: Lid(0xbfff), ..any };
    let now = drv.now();
    let st = through_core(&mut drv, now, me, (Method::Get, NodeRecord::COMP_LID, 1), &nobody).0;
    assert_eq!(st, status::SA_NO_RECORDS);
    let counted: Vec<_> = drv.sm.sa_counts().iter().collect();
    assert_eq!(counted, [(("NodeRecord", "no_records"), 1), (("NodeRecord", "ok"), 2)]);
    let text = ibsm::daemon::metrics::render(&drv.sm);
    assert!(text.contains("ibsm_sa_answers_total{attribute=\"NodeRecord\",status=\"ok\"} 2\n"), "{text}");
    assert!(text.contains("ibsm_sa_answers_total{attribute=\"NodeRecord\",status=\"no_records\"} 1\n"), "{text}");
}

#[test]
fn a_switch_without_a_route_for_a_lid_shows_in_the_snapshots_unrouted_lids() {
    let topo = example("fat-tree-2l-k4.net");
    let mut drv = SimDriver::new(&topo, 3, Sm::new(SmConfig::default(), Guid2Lid::default()), None).expect("attach");
    assert!(drv.sweep(LIMIT, |_| {}).expect("up").complete);
    let snap = drv.sm.snapshot().expect("snapshot");
    let mut broken = (*snap).clone();
    assert_eq!(snap.unrouted().total, 0, "every switch routes every end-port LID");
    // Two switches lose their route to one host's LID, one switch to another's.
    // Not the SM's host (the first one): another.
    let host = topo.nodes.iter().enumerate().filter(|(_, n)| n.kind == NodeKind::Ca).nth(1).expect("a host").0;
    let (a, b) = (drv.sm.guid2lid().get(topo.nodes[host].port_guid(1)).expect("LID").0, snap.sm.lid);
    let switches: Vec<usize> = (0..broken.nodes.len()).filter(|&n| broken.nodes[n].is_switch()).collect();
    for (&sw, lid) in switches.iter().zip([a, a, b]) {
        let mut table = broken.nodes[sw].lft().to_vec();
        table[usize::from(lid.0)] = ibsm_routing::Lft::UNROUTED;
        broken.nodes[sw].table = Some(std::sync::Arc::new(ibsm_routing::Lft::from(table)));
    }
    let u = broken.unrouted();
    assert_eq!(u.total, 2);
    let mut want = vec![(a, 2), (b, 1)];
    want.sort();
    assert_eq!(u.lids, want);
}

/// SA2: one requesting port cannot fill the SA's registration tables. Past its own cap (64
/// subscriptions, 1,024 services) a port gets NO_RESOURCES, as OpenSM answers when it cannot
/// take a registration; another port is still served, and a repeated registration (which
/// replaces) is not refused.
#[test]
fn one_port_cannot_fill_the_subscriptions_or_the_services_others_are_served() {
    use ibsm::sa::inform::MAX_SUBSCRIPTIONS_PER_PORT;
    use ibsm::sa::service_record::MAX_SERVICES_PER_PORT;
    let s = sweep(example("fat-tree-2l-k4.net"), 0);
    let cas: Vec<Guid> = s.end_ports().iter().filter(|(_, p, _)| *p > 0).map(|(_, _, g)| *g).collect();
    let (greedy, other) = (cas[0], cas[1]);
    let live = Live::new(s.drv.sm.sm_info(false));
    let mut state = SaState::default();
    let mut ask = |from: Guid, bytes: &[u8; MAD_LEN]| {
        let a = sa::serve(&s.snap, &mut state, &live, bytes, s.lid_of(from), &Limits::default()).expect("answered");
        a.status
    };
    let sub =
        |qpn: u32| request(Method::Set, 0, 0x900, &ibsm_mad::records::InformInfo { qpn, ..inform_all() }).unwrap();
    for qpn in 0..MAX_SUBSCRIPTIONS_PER_PORT as u32 {
        assert_eq!(ask(greedy, &sub(qpn + 2)), status::OK, "subscription {qpn}");
    }
    assert_eq!(ask(greedy, &sub(10_000)), status::SA_NO_RESOURCES, "one subscription past the cap");
    assert_eq!(ask(greedy, &sub(2)), status::OK, "the same subscription again replaces");
    assert_eq!(ask(other, &sub(2)), status::OK, "another port subscribes");

    let service = |id: u64, gid: Guid| {
        let rec = ServiceRecord {
            service_id: id,
            service_gid: Gid { prefix: PREFIX, guid: gid },
            service_pkey: PKey(0xffff),
            service_lease: ServiceRecord::INFINITE_LEASE,
            ..ServiceRecord::default()
        };
        request(Method::Set, ServiceRecord::COMP_SERVICE_ID | ServiceRecord::COMP_SERVICE_GID, 0x901, &rec).unwrap()
    };
    for id in 0..MAX_SERVICES_PER_PORT as u64 {
        // Naming other ports' GIDs does not escape the cap: it counts the requester.
        let gid = if id % 2 == 0 { greedy } else { other };
        assert_eq!(ask(greedy, &service(id, gid)), status::OK, "service {id}");
    }
    assert_eq!(ask(greedy, &service(1 << 40, other)), status::SA_NO_RESOURCES, "one service past the cap");
    assert_eq!(ask(greedy, &service(0, greedy)), status::OK, "the same service again replaces");
    assert_eq!(ask(other, &service(1 << 40, other)), status::OK, "another port registers");
    assert_eq!(state.services.len(), MAX_SERVICES_PER_PORT + 1);
}

/// Found by the differential test on `tests/data/chain-4.net`: OpenSM lists NodeRecords in the
/// order of its node table, keyed by the GUID as it travels (big-endian) and compared as a
/// little-endian integer. There host h0 (0x0008000000000000) comes before switch s1
/// (0x0007000000000100), which ascending GUID order puts first; under umad2sim, which carries
/// the first record only, `saquery -O 1` named h0 under OpenSM and nothing under ibsm.
#[test]
fn get_table_answers_list_nodes_in_opensms_order() {
    let topo =
        ibsm_topology::Topology::load(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/chain-4.net"))
            .expect("chain-4.net");
    let s = sweep(topo, 0);
    let all = s.ask(Method::GetTable, 0, &NodeRecord::parse(&[0; 108]).unwrap());
    assert_eq!(all.status, status::OK);
    let guids: Vec<u64> = records::<NodeRecord>(&all).iter().map(|r| r.node_info.node_guid.0).collect();
    assert_eq!(guids.first(), Some(&0x0008_0000_0000_0000), "h0 first, as from OpenSM: {guids:x?}");
    let s1 = guids.iter().position(|&g| g == 0x0007_0000_0000_0100);
    let h1 = guids.iter().position(|&g| g == 0x0008_0000_0000_0100);
    assert!(s1.is_some() && h1.is_some() && s1 < h1, "s1 (last byte 0x00 0x01 ...) before h1: {guids:x?}");
}
