//! QoS programming through the core on the simulated fabric: with a policy the SM writes every
//! port's SL2VL tables (a switch's for every input/output pair), its VL arbitration blocks and
//! VLHighLimit, as read back from the simulated ports with directed-route Gets; a sweep with
//! nothing changed writes no table; a reload with changed QoS options rewrites the tables that
//! change and writes no LFT block; without a policy nothing is written. Path records carry the
//! SL of the QoS level their query matches and honour its MTU and rate limits. With
//! `use-optimized-slvl`, a switch that advertises the one-Set SL2VL form gets one Set per port.

use ibsm::core::{Guid2Lid, QosSetting, Sm, SmConfig, SmEvent, SubnetReport};
use ibsm::transport::sim::SimDriver;
use ibsm_mad::attrs::{PortInfo, SlToVlTable, VlArbEntry, VlArbitrationTable};
use ibsm_mad::{Attribute, DrPath, PortNum};
use ibsm_topology::{NodeKind, Topology};

mod support;
use support::sa::{LIMIT, Oracle, Swept, dr_get, example, records};

const SL2VL: &str = "0,1,2,3,0,1,2,3,0,1,2,3,0,1,2,15";

fn setting(ca_low: &str) -> QosSetting {
    let mut options = ibsm_qos::QosOptions::default();
    options.set_opensm("qos_sl2vl", SL2VL).expect("valid");
    options.set_opensm("qos_ca_vlarb_low", ca_low).expect("valid");
    options.set_opensm("qos_ca_vlarb_high", "0:4").expect("valid");
    options.set_opensm("qos_ca_high_limit", "6").expect("valid");
    options.set_opensm("qos_swe_high_limit", "3").expect("valid");
    let policy = ibsm_qos::parse_qos_policy("qos-ulps\n default : 0\n ipoib : 1\nend-qos-ulps\n").expect("policy");
    QosSetting { options, policy }
}

fn up(topo: &Topology, cfg: SmConfig) -> (SimDriver, SubnetReport) {
    let mut drv = SimDriver::new(topo, 11, Sm::new(cfg, Guid2Lid::default()), None).expect("attach");
    let report = drv.sweep(LIMIT, |_| {}).expect("sweep report");
    assert!(report.complete, "{report:?}");
    (drv, report)
}

fn next_report(drv: &mut SimDriver) -> SubnetReport {
    match drv.run_until(drv.now() + LIMIT, |ev| matches!(ev, SmEvent::SubnetUp(_))) {
        Some(SmEvent::SubnetUp(r)) => r,
        other => panic!("no report: {other:?}"),
    }
}

/// (path to the switch or through the CA port, is switch, number of ports) of every node.
fn targets(topo: &Topology, drv: &SimDriver) -> Vec<(DrPath, bool, u8)> {
    let routes = Oracle::from_topology(topo, drv.at).routes;
    let mut out = Vec::new();
    for (i, n) in topo.nodes.iter().enumerate() {
        if n.kind == NodeKind::Switch {
            out.push((DrPath::new(&routes[&i]).expect("path"), true, n.num_ports));
        } else if i == drv.at.0 {
            out.push((DrPath::new(&[]).expect("path"), false, 1));
        } else {
            let peer = n.peer(1).expect("cabled");
            let mut hops = routes[&peer.node].clone();
            hops.push(peer.port);
            out.push((DrPath::new(&hops).expect("path"), false, 1));
        }
    }
    out
}

fn sl2vl(drv: &mut SimDriver, path: &DrPath, input: u8, output: u8) -> [u8; 16] {
    let data = dr_get(drv, path, SlToVlTable::ID, SlToVlTable::attr_mod(PortNum(input), PortNum(output)))
        .expect("SL2VL answered");
    SlToVlTable::parse(&data).expect("parses").vls
}

fn vlarb(drv: &mut SimDriver, path: &DrPath, block: u16, port: u8) -> VlArbitrationTable {
    let data = dr_get(drv, path, VlArbitrationTable::ID, VlArbitrationTable::attr_mod(block, PortNum(port)))
        .expect("VLArb answered");
    VlArbitrationTable::parse(&data).expect("parses")
}

fn port_info(drv: &mut SimDriver, path: &DrPath, port: u8) -> PortInfo {
    let data = dr_get(drv, path, PortInfo::ID, u32::from(port)).expect("PortInfo answered");
    PortInfo::parse(&data).expect("parses")
}

#[test]
fn the_policy_is_written_to_every_port_and_a_second_sweep_writes_nothing() {
    let topo = example("fat-tree-2l-k4.net");
    let cfg = SmConfig { qos: Some(setting("0:0,1:64,2:128,3:192")), ..SmConfig::default() };
    let (mut drv, _) = up(&topo, cfg);
    let written = drv.sm.qos_tables_sent();
    assert!(written > 0);
    let mut want_sl2vl: [u8; 16] = [0; 16];
    for (sl, vl) in SL2VL.split(',').enumerate() {
        want_sl2vl[sl] = vl.parse().expect("number");
    }
    let mut tables = 0u64;
    for (path, switch, ports) in targets(&topo, &drv) {
        if switch {
            for out in 1..=ports {
                let pi = port_info(&mut drv, &path, out);
                if pi.port_state == ibsm_mad::attrs::PortState::Down {
                    continue;
                }
                assert_eq!(pi.vl_high_limit, 3, "switch external ports use qos_swe");
                for input in 0..=ports {
                    assert_eq!(sl2vl(&mut drv, &path, input, out), want_sl2vl, "switch pair {input}->{out}");
                    tables += 1;
                }
                tables += 2;
            }
        } else {
            let pi = port_info(&mut drv, &path, 1);
            assert_eq!(pi.vl_high_limit, 6, "CA ports use qos_ca");
            assert_eq!(sl2vl(&mut drv, &path, 0, 0), want_sl2vl);
            let low = vlarb(&mut drv, &path, VlArbitrationTable::LOW_0_31, 0);
            assert_eq!(low.entries[3], VlArbEntry { vl: 3, weight: 192 });
            assert_eq!(low.entries[4], VlArbEntry::default(), "past the list");
            let high = vlarb(&mut drv, &path, VlArbitrationTable::HIGH_0_31, 0);
            assert_eq!(high.entries[0], VlArbEntry { vl: 0, weight: 4 });
            tables += 3;
        }
    }
    let cas = topo.nodes.iter().filter(|n| n.kind == NodeKind::Ca).count() as u64;
    assert_eq!(tables, 6 * 4 * (5 + 2) + cas * 3, "every switch port and every CA read");
    assert_eq!(written, tables, "one Set per table held");
    // A second sweep with nothing changed writes no table.
    drv.sm.request_sweep(ibsm::core::Requested::Heavy).expect("master");
    let report = next_report(&mut drv);
    assert!(report.complete);
    assert_eq!(drv.sm.qos_tables_sent(), written, "nothing changed, nothing written");
}

/// `max-op-vls` bounds OperationalVLs with QoS on too, as OpenSM's link manager does (QoS
/// does not raise it), and the tables stay within the VLs a port runs.
#[test]
fn max_op_vls_bounds_operational_vls_with_qos_on() {
    let topo = example("fat-tree-2l-k4.net");
    let mut cfg = SmConfig { qos: Some(setting("0:0,1:64,2:128,3:192")), ..SmConfig::default() };
    cfg.ports.max_op_vls = 1;
    let (mut drv, _) = up(&topo, cfg);
    let mut linked = 0;
    for (path, switch, ports) in targets(&topo, &drv) {
        let nums: Vec<u8> = if switch { (1..=ports).collect() } else { vec![1] };
        for out in nums {
            let pi = port_info(&mut drv, &path, out);
            if pi.port_state == ibsm_mad::attrs::PortState::Down {
                continue;
            }
            assert_eq!(pi.operational_vls, 1, "max-op-vls 1: VL0 only, port {out} of {path:?}");
            linked += 1;
            if !switch {
                // SL2VL maps SL 15 to VL15 (drop), kept; every other SL is masked to VL0.
                let mut want = [0; 16];
                want[15] = 15;
                assert_eq!(sl2vl(&mut drv, &path, 0, 0), want, "one VL: every SL on VL0");
            }
        }
    }
    assert!(linked > 0);
}

#[test]
fn a_changed_setting_rewrites_only_what_changes_and_no_lft() {
    let topo = example("fat-tree-2l-k4.net");
    let cfg = SmConfig { qos: Some(setting("0:0,1:64")), ..SmConfig::default() };
    let (mut drv, _) = up(&topo, cfg.clone());
    let before = drv.sm.qos_tables_sent();
    let changed = SmConfig { qos: Some(setting("0:0,1:32")), ..cfg };
    let done = drv.sm.reconfigure(changed);
    assert!(done.sweep && !done.reroute, "{done:?}");
    assert!(done.applied.contains(&"qos-policy-file"), "{done:?}");
    let report = next_report(&mut drv);
    assert_eq!(report.lft_blocks_sent, 0, "a QoS change writes no LFT block");
    let cas = topo.nodes.iter().filter(|n| n.kind == NodeKind::Ca).count() as u64;
    assert_eq!(drv.sm.qos_tables_sent() - before, cas, "only the CAs' low-priority block changed");
    let (path, _, _) = targets(&topo, &drv).into_iter().find(|(_, switch, _)| !switch).expect("a CA");
    assert_eq!(vlarb(&mut drv, &path, VlArbitrationTable::LOW_0_31, 0).entries[1].weight, 32);
}

#[test]
fn without_a_policy_no_table_is_written() {
    let topo = example("fat-tree-2l-k4.net");
    let (drv, _) = up(&topo, SmConfig::default());
    assert_eq!(drv.sm.qos_tables_sent(), 0);
}

const SA_POLICY: &str = "\
qos-levels
    qos-level
        name: DEFAULT
        sl: 0
    end-qos-level
    qos-level
        name: Storage
        sl: 4
        mtu-limit: 2
        rate-limit: 2
        packet-life: 9
    end-qos-level
end-qos-levels
qos-match-rules
    qos-match-rule
        service-id: 0x100-0x1ff
        qos-level-name: Storage
    end-qos-match-rule
end-qos-match-rules
qos-ulps
    default : 0
    sdp     : 3
end-qos-ulps
";

#[test]
fn path_records_carry_the_sl_of_the_matching_level_and_its_limits() {
    use ibsm_mad::header::Method;
    use ibsm_mad::records::{Mtu, PathRecord, Rate};
    use ibsm_mad::{Gid, ids::status};
    let topo = example("fat-tree-2l-k4.net");
    let policy = ibsm_qos::parse_qos_policy(SA_POLICY).expect("policy");
    let cfg =
        SmConfig { qos: Some(QosSetting { options: ibsm_qos::QosOptions::default(), policy }), ..SmConfig::default() };
    let (drv, _) = up(&topo, cfg);
    let snap = drv.sm.snapshot().expect("a snapshot");
    let s = Swept { topo: topo.clone(), drv, snap };
    let cas: Vec<usize> = (0..topo.nodes.len()).filter(|&i| topo.nodes[i].kind == NodeKind::Ca).collect();
    let gid = |i: usize| Gid { prefix: 0xfe80_0000_0000_0000, guid: topo.nodes[i].port_guid(1) };
    let ends = PathRecord::COMP_SGID | PathRecord::COMP_DGID;
    let ask = |service: Option<u64>, sl: Option<u8>| -> Vec<PathRecord> {
        let mut rec = PathRecord { sgid: gid(cas[0]), dgid: gid(cas[cas.len() - 1]), ..PathRecord::default() };
        let mut mask = ends;
        if let Some(id) = service {
            rec.service_id = id;
            mask |= PathRecord::COMP_SERVICE_ID;
        }
        if let Some(sl) = sl {
            rec.sl = sl;
            mask |= PathRecord::COMP_SL;
        }
        let a = s.ask(Method::GetTable, mask, &rec);
        assert_eq!(a.status, status::OK);
        records::<PathRecord>(&a)
    };
    let plain = ask(None, None);
    assert_eq!(plain.len(), 1);
    assert_eq!(plain[0].sl, 0, "no rule matches: DEFAULT");
    assert!(plain[0].mtu.raw() > 2, "the simulated links carry more than the level's limit");
    assert!(plain[0].rate.mbps() > Rate::from_raw(2).mbps(), "and a faster rate");
    let sdp = ask(Some(0x1_0000 + 80), None);
    assert_eq!(sdp[0].sl, 3, "the sdp line");
    let storage = ask(Some(0x150), None);
    assert_eq!(storage[0].sl, 4, "the match rule's level");
    assert_eq!(storage[0].mtu, Mtu::from_raw(2), "capped at the level's mtu-limit (512)");
    assert_eq!(storage[0].rate, Rate::from_raw(2), "capped at the level's rate-limit (2.5 Gb/s)");
    assert_eq!(storage[0].packet_life_time, 9);
    // A deliberate difference from OpenSM 3.3.23, which answers ServiceID 0 (docs/opensm-migration.md):
    // a record answering a query with ServiceID in its mask carries that ServiceID, so it matches
    // the query's components as an SA answer must.
    assert_eq!(storage[0].service_id, 0x150, "the requested ServiceID is echoed");
    assert_eq!(plain[0].service_id, 0, "and none is made up when none was asked");
    assert!(ask(Some(0x150), Some(3)).is_empty(), "SL 3 is not the level's: no record");
    assert_eq!(ask(Some(0x150), Some(4)).len(), 1);
    assert!(ask(None, Some(4)).is_empty(), "without QoS matching, SL 4 is not this path's");
}

#[test]
fn a_ca_port_whose_link_is_down_gets_no_table() {
    // h0 is a dual-port HCA with port 2 not cabled: its port 1 gets its tables, port 2 none
    // (a Set through a port that is down cannot arrive), and no SMP fails.
    let topo = Topology::load(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/ring-mixed.net"))
        .expect("fabric");
    let cfg = SmConfig { qos: Some(setting("0:0,1:64")), ..SmConfig::default() };
    let (drv, report) = up(&topo, cfg);
    assert_eq!((report.smps_failed, report.smps_retried), (0, 0), "{report:?}");
    assert!(drv.sm.qos_tables_sent() > 0);
}

/// Two partitions besides the default: `storage` (SL 3 by its `sl=`, an IPoIB partition) and
/// `backup`; every host a full member of both.
const PARTITIONS: &str = "Default=0x7fff, ipoib : ALL=full ;\n\
                          storage=0x0a01, ipoib, sl=3 : ALL=full ;\n\
                          backup=0x0a02 : ALL=full ;\n";

/// A level for the storage partition's members by `partition:` group, limited to its P_Key.
const PARTITION_POLICY: &str = "\
port-groups
    port-group
        name: StorageMembers
        partition: storage
    end-port-group
end-port-groups
qos-levels
    qos-level
        name: DEFAULT
        sl: 0
    end-qos-level
    qos-level
        name: Storage
        sl: 6
        pkey: 0x8a01
    end-qos-level
end-qos-levels
qos-match-rules
    qos-match-rule
        destination: StorageMembers
        qos-level-name: Storage
    end-qos-match-rule
end-qos-match-rules
";

fn partitioned(policy: ibsm_qos::QosPolicy) -> Swept {
    let topo = example("fat-tree-2l-k4.net");
    let partitions = ibsm_partitions::parse_partitions_conf(PARTITIONS).expect("partitions");
    let cfg = SmConfig {
        partitions,
        qos: Some(QosSetting { options: ibsm_qos::QosOptions::default(), policy }),
        ..SmConfig::default()
    };
    let (drv, _) = up(&topo, cfg);
    let snap = drv.sm.snapshot().expect("a snapshot");
    Swept { topo, drv, snap }
}

/// The records between the first and the last host, asked with `pkey` if given.
fn paths(s: &Swept, pkey: Option<u16>) -> Vec<ibsm_mad::records::PathRecord> {
    use ibsm_mad::records::PathRecord;
    let cas: Vec<usize> = (0..s.topo.nodes.len()).filter(|&i| s.topo.nodes[i].kind == NodeKind::Ca).collect();
    let gid = |i: usize| ibsm_mad::Gid { prefix: 0xfe80_0000_0000_0000, guid: s.topo.nodes[i].port_guid(1) };
    let mut rec = PathRecord { sgid: gid(cas[0]), dgid: gid(cas[cas.len() - 1]), ..PathRecord::default() };
    let mut mask = PathRecord::COMP_SGID | PathRecord::COMP_DGID;
    if let Some(k) = pkey {
        rec.pkey = ibsm_mad::PKey(k);
        mask |= PathRecord::COMP_PKEY;
    }
    let a = s.ask(ibsm_mad::header::Method::GetTable, mask, &rec);
    assert_eq!(a.status, ibsm_mad::ids::status::OK);
    records::<PathRecord>(&a)
}

#[test]
fn a_level_by_partition_group_gives_its_sl_and_only_its_p_keys() {
    let s = partitioned(ibsm_qos::parse_qos_policy(PARTITION_POLICY).expect("policy"));
    // No P_Key asked: the level's, as its base (OpenSM answers the base it matched).
    let any = paths(&s, None);
    assert_eq!(any.len(), 1);
    assert_eq!((any[0].sl, any[0].pkey.0), (6, 0x0a01), "the Storage level, by the partition group");
    // The level's P_Key asked for (either membership): the same level.
    assert_eq!(paths(&s, Some(0x8a01)).first().map(|r| (r.sl, r.pkey.0)), Some((6, 0x8a01)));
    // Another partition both ends share, outside the level's P_Keys: no path.
    assert!(paths(&s, Some(0x8a02)).is_empty(), "0x0a02 is not a P_Key of the level");
}

#[test]
fn with_qos_on_and_no_level_a_path_and_a_group_take_the_partition_sl() {
    use ibsm_mad::header::Method;
    use ibsm_mad::records::McMemberRecord;
    // QoS on without a policy file: an empty policy, as OpenSM's `qos TRUE` alone.
    let mut s = partitioned(ibsm_qos::QosPolicy::default());
    assert_eq!(paths(&s, Some(0x8a01)).first().map(|r| r.sl), Some(3), "storage's sl=3");
    assert_eq!(paths(&s, Some(0x8a02)).first().map(|r| r.sl), Some(0), "backup has no sl=");
    assert!(paths(&s, Some(0x8a01)).iter().all(|r| r.sl == 3));
    // The storage partition's IPoIB broadcast group is on its SL too.
    let mgid = ibsm_mad::Gid { prefix: 0xff12_401b_8a01_0000, guid: ibsm_mad::Guid(0xffff_ffff) };
    let lid = s.snap.sm.lid;
    let now = s.drv.now();
    let q = McMemberRecord { mgid, ..McMemberRecord::default() };
    let (st, data) =
        support::sa::through_core(&mut s.drv, now, lid, (Method::GetTable, McMemberRecord::COMP_MGID, 1), &q);
    assert_eq!(st, ibsm_mad::ids::status::OK);
    let g = McMemberRecord::parse(&data).expect("the storage broadcast group");
    assert_eq!((g.mgid, g.sl), (mgid, 3));
}

/// OpenSM's MCMemberRecord create keeps the SL the creator asks for (a create must give one):
/// neither the QoS level of the partition's members nor the partition's `sl=` replaces it (its
/// `mcmr_rcv_create_new_mgrp` copies the request; only the groups partitions.conf pre-creates
/// take the partition's `sl=`). ibsm does the same; a join with another SL is then refused.
#[test]
fn a_created_group_keeps_the_sl_its_creator_asked_for_with_qos_on() {
    use ibsm_mad::header::Method;
    use ibsm_mad::records::{JoinState, McMemberRecord};
    let mut s = partitioned(ibsm_qos::parse_qos_policy(PARTITION_POLICY).expect("policy"));
    assert_eq!(paths(&s, Some(0x8a01)).first().map(|r| r.sl), Some(6), "the level's SL on paths");
    let (lid, guid) = (s.snap.sm.lid, s.snap.sm.guid);
    let port_gid = ibsm_mad::Gid { prefix: 0xfe80_0000_0000_0000, guid };
    // The MGID given as 0: the SA assigns one.
    let create = support::sa::MC_CREATE;
    let req = McMemberRecord {
        port_gid,
        qkey: 0x1234,
        pkey: ibsm_mad::PKey(0x8a01),
        sl: 1,
        join_state: JoinState::FULL_MEMBER,
        ..McMemberRecord::default()
    };
    let now = s.drv.now();
    let (st, data) = support::sa::through_core(&mut s.drv, now, lid, (Method::Set, create, 0), &req);
    assert_eq!(st, ibsm_mad::ids::status::OK);
    let made = McMemberRecord::parse(&data).expect("the created group");
    assert_eq!((made.pkey.0 & 0x7fff, made.sl), (0x0a01, 1), "the creator's SL, not 6 (level) or 3 (sl=)");
    let q = McMemberRecord { mgid: made.mgid, ..McMemberRecord::default() };
    let (st, data) =
        support::sa::through_core(&mut s.drv, now, lid, (Method::GetTable, McMemberRecord::COMP_MGID, 1), &q);
    assert_eq!(st, ibsm_mad::ids::status::OK);
    assert_eq!(McMemberRecord::parse(&data).ok().map(|g| g.sl), Some(1), "the group as queried");
    // A join naming the group with the level's SL does not match it.
    let join = McMemberRecord { mgid: made.mgid, sl: 6, ..req };
    let (st, _) = support::sa::through_core(&mut s.drv, now, lid, (Method::Set, create, 0), &join);
    assert_eq!(st, ibsm_mad::ids::status::SA_REQ_INVALID);
}

#[test]
fn vl_arbitration_records_follow_the_tables_written_after_a_change() {
    use ibsm_mad::header::Method;
    use ibsm_mad::records::{VlArbTableRecord, stride};
    use ibsm_mad::sa::{SA_HEADER_LEN, request};
    let topo = example("fat-tree-2l-k4.net");
    let cfg = SmConfig { qos: Some(setting("0:0,1:64")), ..SmConfig::default() };
    let (mut drv, _) = up(&topo, cfg.clone());
    let cas: Vec<usize> =
        (0..topo.nodes.len()).filter(|&i| topo.nodes[i].kind == NodeKind::Ca && i != drv.at.0).collect();
    let (ca, host) = (cas[0], cas[cas.len() - 1]);
    let probe = drv.fabric.attach(host, 1).expect("attach");
    let lid = drv.sm.guid2lid().get(topo.nodes[ca].port_guid(1)).expect("a LID").0;
    let sm_lid = drv.sm.guid2lid().get(drv.sm.port_guid()).expect("the SM's LID").0;
    // The weight of VL 1 in the CA's low-priority block, as the SA answers (the first request
    // waits for the census to read every node).
    let ask = |drv: &mut SimDriver| -> u8 {
        let q = VlArbTableRecord { lid, block_num: 1, ..VlArbTableRecord::default() };
        let mask = VlArbTableRecord::COMP_LID | VlArbTableRecord::COMP_BLOCK_NUM;
        let mut bytes = request(Method::GetTable, mask, 0x66, &q).expect("request");
        bytes[36..44].copy_from_slice(&1u64.to_be_bytes());
        drv.fabric.send(probe, &bytes, ibsm_sim::fabric::Dest { dlid: sm_lid, qpn: 1 });
        let r = support::sa::listen(drv, probe).expect("an answer");
        let rec = r.mad.get(SA_HEADER_LEN..SA_HEADER_LEN + stride::<VlArbTableRecord>()).expect("a record");
        VlArbTableRecord::parse(rec).expect("parses").table.entries[1].weight
    };
    assert_eq!(ask(&mut drv), 64);
    let done = drv.sm.reconfigure(SmConfig { qos: Some(setting("0:0,1:32")), ..cfg });
    assert!(done.sweep, "{done:?}");
    next_report(&mut drv);
    assert_eq!(ask(&mut drv), 32, "the block as written, not as the census first read it");
}

/// `use-optimized-slvl`: a switch that advertises OptimizedSLtoVLMappingProgramming gets one
/// SL2VL Set per output port (modifier bit 16: every input port), and every pair reads back the
/// table; a switch that does not advertise it still gets one Set per pair.
#[test]
fn use_optimized_slvl_writes_one_sl2vl_set_per_output_port_where_advertised() {
    let topo = example("fat-tree-2l-k4.net");
    let cas = topo.nodes.iter().filter(|n| n.kind == NodeKind::Ca).count() as u64;
    let cfg = || SmConfig { qos: Some(setting("0:0,1:64")), use_optimized_slvl: true, ..SmConfig::default() };
    let sim = ibsm_sim::fabric::SimConfig { seed: 11, optimized_sl2vl: true, ..ibsm_sim::fabric::SimConfig::default() };
    let mut drv = SimDriver::with_config(&topo, sim, Sm::new(cfg(), Guid2Lid::default()), None).expect("attach");
    assert!(drv.sweep(LIMIT, |_| {}).expect("sweep report").complete);
    // 6 switches, 4 cabled ports each: one SL2VL and two VLArb Sets a port; 3 tables a CA.
    assert_eq!(drv.sm.qos_tables_sent(), 6 * 4 * (1 + 2) + cas * 3, "one SL2VL Set per output port");
    let mut want: [u8; 16] = [0; 16];
    for (sl, vl) in SL2VL.split(',').enumerate() {
        want[sl] = vl.parse().expect("number");
    }
    for (path, switch, ports) in targets(&topo, &drv) {
        if !switch {
            continue;
        }
        for out in 1..=ports {
            if port_info(&mut drv, &path, out).port_state == ibsm_mad::attrs::PortState::Down {
                continue;
            }
            for input in 0..=ports {
                assert_eq!(sl2vl(&mut drv, &path, input, out), want, "switch pair {input}->{out}");
            }
        }
    }
    let written = drv.sm.qos_tables_sent();
    drv.sm.request_sweep(ibsm::core::Requested::Heavy).expect("master");
    assert!(next_report(&mut drv).complete);
    assert_eq!(drv.sm.qos_tables_sent(), written, "the one-Set form is held per pair: nothing rewritten");
    // Switches that do not advertise the form get one Set per (input, output) pair.
    let (drv, _) = up(&topo, cfg());
    assert_eq!(drv.sm.qos_tables_sent(), 6 * 4 * (5 + 2) + cas * 3, "not advertised: one Set per pair");
}
