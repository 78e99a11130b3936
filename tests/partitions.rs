//! Partitions on the simulated fabric: the policy resolved for the discovered subnet, written into
//! every end port's P_Key table (read back from the simulated ports with SMPs), written only
//! where it changes on the next sweep, and the SA's PathRecord and P_KeyTableRecord answers
//! limited by it: a pair gets a path only under a P_Key that both ports and the requester hold,
//! and two limited members never do, nor does their traffic get through the fabric the SM
//! programmed (the receiving HCA drops it), while a full member's reaches both and theirs reach
//! it, and a port that is only a limited member reaches the SA; a port whose P_Key table write failed gets no path and is
//! seen by nobody until a later sweep writes it (fail closed).

use std::collections::{HashMap, VecDeque};
use std::path::Path;

use ibsm::core::{Guid2Lid, Sm, SmConfig};
use ibsm::sa::{self, Limits, Live, SaState};
use ibsm::transport::sim::SimDriver;
use ibsm_mad::attrs::PKeyTable;
use ibsm_mad::header::Method;
use ibsm_mad::ids::{attr, status};
use ibsm_mad::records::{PKeyTableRecord, PathRecord, stride};
use ibsm_mad::sa::{SA_HEADER_LEN, request};
use ibsm_mad::{Attribute, DrPath, Guid, PKey, PortNum};
use ibsm_sim::fabric::Dest;
use ibsm_topology::{NodeKind, Topology};

mod support;

const LIMIT: u64 = 600_000_000_000;

fn topo() -> Topology {
    Topology::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fabrics/fat-tree-2l-k4.net")).expect("fabric")
}

/// A directed route from the SM's port to `node` (breadth-first through the switches).
fn route_to(drv: &SimDriver, topo: &Topology, node: usize) -> DrPath {
    let (start, port) = drv.at;
    let mut routes: HashMap<usize, Vec<u8>> = HashMap::new();
    let mut q = VecDeque::new();
    let first = topo.nodes[start].peer(port).expect("SM cabled");
    routes.insert(first.node, vec![port]);
    q.push_back(first.node);
    while let Some(i) = q.pop_front() {
        for p in 1..=topo.nodes[i].num_ports {
            let Some(peer) = topo.nodes[i].peer(p) else { continue };
            if routes.contains_key(&peer.node) || (topo.nodes[peer.node].kind != NodeKind::Switch && peer.node != node)
            {
                continue;
            }
            let mut r = routes[&i].clone();
            r.push(p);
            routes.insert(peer.node, r);
            q.push_back(peer.node);
        }
    }
    DrPath::new(&routes[&node]).expect("route")
}

/// The data of a Get of `attr_id`/`attr_mod` sent to `node` from the SM's port.
fn get(drv: &mut SimDriver, topo: &Topology, node: usize, attr_id: u16, attr_mod: u32) -> [u8; 64] {
    let path = route_to(drv, topo, node);
    support::sa::dr_get(drv, &path, attr_id, attr_mod).unwrap_or_else(|| panic!("no answer from node {node}"))
}

/// The non-zero entries of block 0 of the P_Key table of `node`'s port `port` (0 for a CA's
/// port the route enters by), read from the simulated node.
fn read_pkeys_at(drv: &mut SimDriver, topo: &Topology, node: usize, port: u8) -> Vec<u16> {
    let data = get(drv, topo, node, attr::PKEY_TABLE, PKeyTable::attr_mod(PortNum(port), 0));
    PKeyTable::parse(&data).expect("table").keys.iter().map(|k| k.0).filter(|&k| k != 0).collect()
}

/// The P_Key table of CA `node`'s port 1, read from the simulated port.
fn read_pkeys(drv: &mut SimDriver, topo: &Topology, node: usize) -> Vec<u16> {
    read_pkeys_at(drv, topo, node, 0)
}

/// The fabric swept with a policy: hosts[0] carries the SM; alpha: h1, h2 full; beta: h3 full,
/// h4 and h5 limited. Every port is a limited member of the default partition (the resolver's
/// rule, as OpenSM's), the SM a full member of every partition.
fn setup() -> (Topology, SimDriver, Vec<usize>) {
    let topo = topo();
    let hosts: Vec<usize> = (0..topo.nodes.len()).filter(|&i| topo.nodes[i].kind == NodeKind::Ca).collect();
    let guid = |i: usize| topo.nodes[i].port_guid(1);
    let text = format!(
        "Default=0x7fff : SELF=full ;\nalpha=0x0001 : 0x{:016x}=full, 0x{:016x}=full ;\nbeta=0x0002 : 0x{:016x}=full, 0x{:016x}=limited, 0x{:016x}=limited ;\n",
        guid(hosts[1]).0,
        guid(hosts[2]).0,
        guid(hosts[3]).0,
        guid(hosts[4]).0,
        guid(hosts[5]).0
    );
    let policy = ibsm_partitions::parse_partitions_conf(&text).expect("policy");
    let cfg = SmConfig { partitions: policy, ..SmConfig::default() };
    let mut drv = SimDriver::new(&topo, 3, Sm::new(cfg, Guid2Lid::default()), None).expect("attach");
    let report = drv.sweep(LIMIT, |_| {}).expect("up");
    assert!(report.complete, "{report:?}");
    (topo, drv, hosts)
}

/// A GSI Send (performance class, which nobody answers) from `from` to the port at `dlid`
/// with the P_Key at `index` of the sender's table, through the switches' tables; returns
/// whether `to` received it and the traps the SM saw meanwhile.
fn gsi_send(
    drv: &mut SimDriver,
    from: ibsm_sim::fabric::AgentId,
    to: ibsm_sim::fabric::AgentId,
    dlid: ibsm_mad::Lid,
    index: u16,
) -> (bool, Vec<u16>) {
    use ibsm::core::SmEvent;
    use ibsm_mad::header::{Mad, MgmtClass};
    let mut mad = [0u8; ibsm_mad::MAD_LEN];
    {
        let mut m = Mad::new_unchecked(&mut mad[..]);
        m.set_base_version(1);
        m.set_mgmt_class(MgmtClass::from_raw(0x04));
        m.set_class_version(1);
        m.set_method(Method::Send);
        m.set_tid(0x4242);
    }
    while drv.fabric.recv(to).is_some() {}
    drv.fabric.send_pkey(from, &mad, Dest { dlid, qpn: 1 }, index);
    let mut traps = Vec::new();
    drv.run_until(drv.now() + 100_000_000, |ev| {
        if let SmEvent::TrapReceived { number: Some(n), .. } = ev {
            traps.push(*n);
        }
        false
    });
    let mut got = false;
    while let Some(r) = drv.fabric.recv(to) {
        got |= r.mad[1] == 0x04 && r.mad[12..16] == 0x4242u32.to_be_bytes();
    }
    (got, traps)
}

#[test]
fn p_key_tables_follow_the_policy_and_the_sa_answers_within_partitions() {
    let (topo, mut drv, hosts) = setup();
    let guid = |i: usize| topo.nodes[i].port_guid(1);
    let (h1, h2, h3, h4, h5, h6) = (hosts[1], hosts[2], hosts[3], hosts[4], hosts[5], hosts[6]);

    // What every port holds, read from the simulated ports.
    let expect: [(usize, &[u16]); 7] = [
        // The SM's host: what the policy gives it (SELF in Default), as OpenSM programs it.
        (hosts[0], &[0xffff]),
        (h1, &[0x7fff, 0x8001]),
        (h2, &[0x7fff, 0x8001]),
        (h3, &[0x7fff, 0x8002]),
        (h4, &[0x7fff, 0x0002]),
        (h5, &[0x7fff, 0x0002]),
        (h6, &[0x7fff]),
    ];
    for (h, want) in expect {
        assert_eq!(read_pkeys(&mut drv, &topo, h), want, "{}", topo.nodes[h].name);
        let table: Vec<u16> = drv.sm.port_pkeys()[&guid(h)].iter().map(|k| k.0).collect();
        assert_eq!(table, want, "the SM's record of {}", topo.nodes[h].name);
    }

    // A second sweep writes no P_Key block: nothing changed.
    let sent = drv.sm.pkey_blocks_sent();
    drv.sweep(LIMIT, |_| {}).expect("up again");
    assert_eq!(drv.sm.pkey_blocks_sent(), sent, "unchanged tables are not rewritten");

    let snap = drv.sm.snapshot().expect("snapshot");
    let lid = |i: usize| drv.sm.guid2lid().get(guid(i)).expect("LID").0;
    let live = Live::new(drv.sm.sm_info(false));
    let path = |from: usize, a: usize, b: usize| -> (u16, Option<PKey>) {
        let q = PathRecord { slid: lid(a), dlid: lid(b), ..PathRecord::default() };
        let bytes = request(Method::Get, PathRecord::COMP_SLID | PathRecord::COMP_DLID, 1, &q).unwrap();
        let ans = sa::serve(&snap, &mut SaState::default(), &live, &bytes, lid(from), &Limits::default()).unwrap();
        let rec = (ans.status == status::OK).then(|| PathRecord::parse(&ans.bytes[SA_HEADER_LEN..]).unwrap().pkey);
        (ans.status, rec)
    };
    assert_eq!(path(h1, h1, h2), (status::OK, Some(PKey(0x8001))), "alpha, full and full");
    assert_eq!(path(h3, h3, h4), (status::OK, Some(PKey(0x8002))), "beta, full and limited");
    assert_eq!(path(h4, h4, h3), (status::OK, Some(PKey(0x0002))), "the source's own entry");
    assert_eq!(path(h4, h4, h5).0, status::SA_NO_RECORDS, "two limited members");
    assert_eq!(path(h1, h1, h3).0, status::SA_NO_RECORDS, "only the default partition, both limited");
    assert_eq!(path(h6, h1, h2).0, status::SA_NO_RECORDS, "the requester is not in alpha");
    // OpenSM's rule: the requester shares a partition with each end, not necessarily theirs.
    assert_eq!(path(hosts[0], h1, h2), (status::OK, Some(PKey(0x8001))), "the SM shares Default with each");
    assert_eq!(path(hosts[0], h3, h4), (status::OK, Some(PKey(0x8002))), "beta, asked by a port not in beta");
    assert_eq!(path(h6, h6, hosts[0]), (status::OK, Some(PKey(0x7fff))), "h6 reaches the SM, a full member");

    // P_KeyTableRecords: trusted requesters only (they name every partition of every peer).
    let pktr = |from: usize, sm_key: u64| -> (u16, Vec<(u16, Vec<u16>)>) {
        let mut bytes = request(Method::GetTable, 0, 2, &PKeyTableRecord::parse(&[0; 72]).unwrap()).unwrap();
        bytes[36..44].copy_from_slice(&sm_key.to_be_bytes());
        let ans = sa::serve(&snap, &mut SaState::default(), &live, &bytes, lid(from), &Limits::default()).unwrap();
        let recs = ans.bytes[SA_HEADER_LEN..]
            .chunks(stride::<PKeyTableRecord>())
            .take(ans.records)
            .map(|c| PKeyTableRecord::parse(c).unwrap())
            .map(|r| (r.lid.0, r.pkey_table.keys.iter().map(|k| k.0).filter(|&k| k != 0).collect()))
            .collect();
        (ans.status, recs)
    };
    assert_eq!(pktr(h1, 0), (status::SA_REQ_INVALID, vec![]), "untrusted: refused, as OpenSM refuses it");
    // NodeRecords likewise: h6, a limited member of the default partition only, sees itself and
    // the SM (a full member), trusted or not, as OpenSM filters them.
    let nodes = |from: usize, sm_key: u64| -> usize {
        let mut bytes =
            request(Method::GetTable, 0, 4, &ibsm_mad::records::NodeRecord::parse(&[0; 108]).unwrap()).unwrap();
        bytes[36..44].copy_from_slice(&sm_key.to_be_bytes());
        sa::serve(&snap, &mut SaState::default(), &live, &bytes, lid(from), &Limits::default()).unwrap().records
    };
    assert_eq!(nodes(h6, 0), 2, "itself and the SM");
    assert_eq!(nodes(h6, 1), 2, "trusted: no more");

    // Trusted, from the SM's host (a full member of the default partition): every port's table;
    // from h1, only those of the ports h1 shares a partition with, as OpenSM filters them.
    let (st, all) = pktr(hosts[0], 1);
    assert_eq!(st, status::OK);
    assert!(all.iter().any(|(l, keys)| *l == lid(h4).0 && keys == &[0x7fff, 0x0002]), "{all:?}");
    let (st, mine) = pktr(h1, 1);
    assert_eq!(st, status::OK);
    assert!(!mine.iter().any(|(l, _)| *l == lid(h4).0), "h1 and h4 share no partition: {mine:?}");
    assert!(mine.iter().any(|(l, _)| *l == lid(h2).0), "h1 and h2 share alpha: {mine:?}");
}

#[test]
fn multicast_members_must_hold_the_groups_partition() {
    use ibsm_mad::records::{JoinState, McMemberRecord};
    let (topo, drv, hosts) = setup();
    let guid = |i: usize| topo.nodes[i].port_guid(1);
    let (h1, h2, h3, h6) = (hosts[1], hosts[2], hosts[3], hosts[6]);
    let snap = drv.sm.snapshot().expect("snapshot");
    let lid = |i: usize| drv.sm.guid2lid().get(guid(i)).expect("LID").0;
    let live = Live::new(drv.sm.sm_info(false));
    let mut state = SaState::default();
    let mgid = ibsm_mad::Gid { prefix: 0xff12_a01c_0000_0000, guid: Guid(0xa1) };
    let create = support::sa::MC_CREATE;
    let mut join = |who: usize, mask: u64| {
        let r = McMemberRecord {
            mgid,
            port_gid: ibsm_mad::Gid { prefix: 0xfe80_0000_0000_0000, guid: guid(who) },
            qkey: 7,
            pkey: PKey(0x8001),
            join_state: JoinState::FULL_MEMBER,
            ..McMemberRecord::default()
        };
        let bytes = request(Method::Set, mask, 3, &r).unwrap();
        sa::serve(&snap, &mut state, &live, &bytes, lid(who), &Limits::default()).unwrap().status
    };
    assert_eq!(join(h6, create), status::SA_REQ_INVALID, "h6 cannot create a group in alpha");
    assert_eq!(join(h1, create), status::OK);
    let plain = McMemberRecord::COMP_MGID | McMemberRecord::COMP_PORT_GID | McMemberRecord::COMP_JOIN_STATE;
    assert_eq!(join(h2, plain), status::OK, "h2 is in alpha");
    assert_eq!(join(h3, plain), status::SA_REQ_INVALID, "h3 is not");
}

#[test]
fn switch_ports_facing_cas_enforce_their_cas_partitions() {
    use ibsm_mad::attrs::PortInfo;
    let (topo, mut drv, hosts) = setup();
    let h1 = hosts[1];
    let leaf = topo.nodes[h1].peer(1).expect("cabled");
    // The leaf port facing h1 holds h1's table and enforces both ways.
    assert_eq!(read_pkeys_at(&mut drv, &topo, leaf.node, leaf.port), [0x7fff, 0x8001]);
    let info = PortInfo::parse(&get(&mut drv, &topo, leaf.node, attr::PORT_INFO, u32::from(leaf.port))).unwrap();
    assert!(info.partition_enforcement_inbound && info.partition_enforcement_outbound);
    // A port towards another switch does not enforce.
    let up = (1..=topo.nodes[leaf.node].num_ports)
        .find(|&p| topo.nodes[leaf.node].peer(p).is_some_and(|x| topo.nodes[x.node].kind == NodeKind::Switch))
        .expect("an uplink");
    let info = PortInfo::parse(&get(&mut drv, &topo, leaf.node, attr::PORT_INFO, u32::from(up))).unwrap();
    assert!(!info.partition_enforcement_inbound && !info.partition_enforcement_outbound);

    // part-enforce = off: no enforcement bits on CA-facing ports.
    let text = "Default=0x7fff : ALL=full ;\n";
    let cfg = SmConfig {
        partitions: ibsm_partitions::parse_partitions_conf(text).expect("policy"),
        part_enforce: ibsm::core::PartEnforce::Off,
        ..SmConfig::default()
    };
    let mut off = SimDriver::new(&topo, 3, Sm::new(cfg, Guid2Lid::default()), None).expect("attach");
    assert!(off.sweep(LIMIT, |_| {}).expect("up").complete);
    let info = PortInfo::parse(&get(&mut off, &topo, leaf.node, attr::PORT_INFO, u32::from(leaf.port))).unwrap();
    assert!(!info.partition_enforcement_inbound && !info.partition_enforcement_outbound);
}

#[test]
fn enforcing_switches_drop_traffic_between_ports_sharing_no_partition_and_trap() {
    let (topo, mut drv, hosts) = setup();
    let (h1, h2, h3, h4, h5) = (hosts[1], hosts[2], hosts[3], hosts[4], hosts[5]);
    let lid = |drv: &SimDriver, i: usize| drv.sm.guid2lid().get(topo.nodes[i].port_guid(1)).expect("LID").0;
    let agents: HashMap<usize, ibsm_sim::fabric::AgentId> =
        [h1, h2, h3, h4, h5].iter().map(|&h| (h, drv.fabric.attach(h, 1).expect("agent"))).collect();
    let send = |drv: &mut SimDriver, from: usize, to: usize, index: u16| -> (bool, Vec<u16>) {
        let dlid = lid(drv, to);
        gsi_send(drv, agents[&from], agents[&to], dlid, index)
    };
    // alpha (index 1 of h1's table: 0x8001) reaches h2, a full member of alpha.
    assert_eq!(send(&mut drv, h1, h2, 1), (true, vec![]));
    // beta, full to limited: reaches h4.
    assert_eq!(send(&mut drv, h3, h4, 1), (true, vec![]));
    // h1's alpha key towards h3, which is not in alpha: the switch port facing h3 drops it (259).
    let (got, traps) = send(&mut drv, h1, h3, 1);
    assert!(!got, "dropped");
    assert!(traps.contains(&259), "trap 259 from the enforcing switch reached the SM: {traps:?}");
    // Two limited members of beta cannot talk: dropped at the switch (h5's port holds only the
    // limited key) or at h5 (257).
    let (got, traps) = send(&mut drv, h4, h5, 1);
    assert!(!got, "limited to limited is dropped");
    assert!(traps.iter().any(|&t| t == 257 || t == 259), "{traps:?}");
}

#[test]
fn two_limited_members_never_reach_each_other_and_a_full_member_reaches_both() {
    // PK1 in the data plane: beta has h3 as a full member and h4, h5 as limited members (the SM
    // wrote every table and the enforcing switch ports). Traffic with the beta key at index 1,
    // each way, through the switches' own tables.
    let (topo, mut drv, hosts) = setup();
    let (h3, h4, h5) = (hosts[3], hosts[4], hosts[5]);
    for h in [h3, h4, h5] {
        let beta = if h == h3 { 0x8002 } else { 0x0002 };
        assert_eq!(read_pkeys(&mut drv, &topo, h), [0x7fff, beta], "{}", topo.nodes[h].name);
    }
    let agents: HashMap<usize, ibsm_sim::fabric::AgentId> =
        [h3, h4, h5].iter().map(|&h| (h, drv.fabric.attach(h, 1).expect("agent"))).collect();
    let mut send = |from: usize, to: usize| {
        let dlid = drv.sm.guid2lid().get(topo.nodes[to].port_guid(1)).expect("LID").0;
        gsi_send(&mut drv, agents[&from], agents[&to], dlid, 1)
    };
    // The full member reaches both limited members.
    assert_eq!(send(h3, h4), (true, vec![]), "full to limited");
    assert_eq!(send(h3, h5), (true, vec![]), "full to the other limited member");
    // Each limited member reaches the full member: the enforcing switch ports on the way hold
    // the senders' limited key, and a switch checks the partition, not the membership.
    assert_eq!(send(h4, h3), (true, vec![]), "limited to full");
    assert_eq!(send(h5, h3), (true, vec![]), "the other limited member to full");
    // The two limited members reach each other in neither direction: the receiving CA drops it
    // (its P_Key check is the one that knows membership) and traps it (257).
    for (a, b) in [(h4, h5), (h5, h4)] {
        let (got, traps) = send(a, b);
        assert!(!got, "limited {} to limited {} delivered", topo.nodes[a].name, topo.nodes[b].name);
        assert_eq!(traps, [257], "dropped by {}", topo.nodes[b].name);
    }
}

#[test]
fn a_port_that_is_only_a_limited_member_reaches_the_sa() {
    // A limited member may talk to a full member, and the SM's port is a full member of the
    // default partition: h6, a limited member of the default partition and of nothing else,
    // asks the SA for the NodeRecords across its leaf's enforcing port (which holds h6's table,
    // the limited key only) and is answered.
    use ibsm_mad::records::NodeRecord;
    let (topo, mut drv, hosts) = setup();
    let h6 = hosts[6];
    assert_eq!(read_pkeys(&mut drv, &topo, h6), [0x7fff]);
    let leaf = topo.nodes[h6].peer(1).expect("cabled");
    assert_eq!(read_pkeys_at(&mut drv, &topo, leaf.node, leaf.port), [0x7fff], "the leaf port enforces h6's table");
    let sm_lid = drv.sm.guid2lid().get(topo.nodes[hosts[0]].port_guid(1)).expect("LID").0;
    let probe = drv.fabric.attach(h6, 1).expect("agent");
    let bytes = request(Method::GetTable, 0, 0x77, &NodeRecord::parse(&[0; 108]).expect("record")).expect("request");
    drv.fabric.send(probe, &bytes, Dest { dlid: sm_lid, qpn: 1 });
    let answer = support::sa::listen(&mut drv, probe).expect("the SA's answer reached h6");
    let header = ibsm_mad::sa::SaHeader::from_bytes(&answer.mad[..]).expect("an SA answer");
    assert_eq!((header.tid & 0xffff_ffff, header.status), (0x77, status::OK));
    assert_eq!(drv.fabric.stats().dropped_pkey, 0, "nothing dropped for its P_Key");
}

#[test]
fn p_keys_keep_their_index_across_a_restart_with_a_changed_policy() {
    let topo = topo();
    let hosts: Vec<usize> = (0..topo.nodes.len()).filter(|&i| topo.nodes[i].kind == NodeKind::Ca).collect();
    let guid = |i: usize| topo.nodes[i].port_guid(1);
    let h3 = hosts[3];
    let policy = |text: String| ibsm_partitions::parse_partitions_conf(&text).expect("policy");
    let before = policy(format!("Default=0x7fff : ALL=limited ;\nbeta=0x0002 : 0x{:016x}=full ;\n", guid(h3).0));
    // The new policy puts h3 in alpha too; alpha (0x0001) sorts before beta.
    let after = policy(format!(
        "Default=0x7fff : ALL=limited ;\nalpha=0x0001 : 0x{0:016x}=full ;\nbeta=0x0002 : 0x{0:016x}=full ;\n",
        guid(h3).0
    ));
    let run = |p: ibsm_partitions::Policy, layout: Option<&std::collections::BTreeMap<Guid, Vec<PKey>>>| {
        let mut sm = Sm::new(SmConfig { partitions: p, ..SmConfig::default() }, Guid2Lid::default());
        if let Some(l) = layout {
            sm.set_pkey_layout(l.clone());
        }
        let mut drv = SimDriver::new(&topo, 3, sm, None).expect("attach");
        assert!(drv.sweep(LIMIT, |_| {}).expect("up").complete);
        let table = read_pkeys(&mut drv, &topo, h3);
        (table, drv.sm.pkey_layout().clone())
    };
    let (first, layout) = run(before, None);
    assert_eq!(first, [0x7fff, 0x8002]);
    // Restarted with the layout the first run saved: beta stays at index 1, alpha takes index 2.
    let (kept, _) = run(after.clone(), Some(&layout));
    assert_eq!(kept, [0x7fff, 0x8002, 0x8001]);
    // Without it, the policy's order would move beta to index 2.
    let (moved, _) = run(after, None);
    assert_eq!(moved, [0x7fff, 0x8001, 0x8002]);
    // The layout survives the state file.
    let dir = std::env::temp_dir().join(format!("ibsm-pkeys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join(ibsm::daemon::state::PKEYS);
    ibsm::daemon::state::save_pkeys(&path, &layout).expect("save");
    assert_eq!(ibsm::daemon::state::load_pkeys(&path).expect("load"), layout);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_port_whose_p_key_write_failed_is_reachable_by_nobody_until_it_is_written() {
    // PK4, fail closed: the SM cannot tell what a port whose P_Key table write failed holds, so
    // the SA treats its table as empty: no path to or from it, no record of it for others, under
    // any partition, the default one included. Once a later sweep writes it, it is back.
    use ibsm::core::{SmEvent, SubnetReport, SweepPhase};
    use ibsm_mad::records::NodeRecord;
    use ibsm_sim::fabric::{Fault, LinkRule};
    let topo = topo();
    let hosts: Vec<usize> = (0..topo.nodes.len()).filter(|&i| topo.nodes[i].kind == NodeKind::Ca).collect();
    let (sm_host, h1, h2, h4) = (hosts[0], hosts[1], hosts[2], hosts[4]);
    let guid = |i: usize| topo.nodes[i].port_guid(1);
    let mut drv = SimDriver::new(&topo, 11, Sm::new(SmConfig::default(), Guid2Lid::default()), None).expect("attach");
    assert!(drv.sweep(LIMIT, |_| {}).expect("up").complete);
    // A new policy puts h1 and h4 in alpha: the next sweep writes their P_Key tables. Every MAD on
    // h4's cable is lost from the moment the sweep configures the ports.
    let text = format!(
        "Default=0x7fff : ALL=full ;\nalpha=0x0001 : 0x{:016x}=full, 0x{:016x}=full ;\n",
        guid(h1).0,
        guid(h4).0
    );
    let policy = ibsm_partitions::parse_partitions_conf(&text).expect("policy");
    assert!(drv.sm.reconfigure(SmConfig { partitions: policy, ..SmConfig::default() }).sweep);
    let at = drv.run_until(drv.now() + LIMIT, |ev| {
        matches!(ev, SmEvent::PhaseStarted { phase: SweepPhase::ConfiguringPorts, .. })
    });
    assert!(at.is_some(), "the sweep configures ports");
    drv.fabric.inject_fault(Fault::AddRule(LinkRule { link: Some((h4, 1)), drop: 1.0, delay_ns: 0, jitter_ns: 0 }));
    let report = |drv: &mut SimDriver| -> SubnetReport {
        match drv.run_until(drv.now() + LIMIT, |ev| matches!(ev, SmEvent::SubnetUp(_))) {
            Some(SmEvent::SubnetUp(r)) => r,
            other => panic!("no report: {other:?}"),
        }
    };
    let failed = report(&mut drv);
    assert!(!failed.complete, "{failed:?}");
    assert_eq!(drv.sm.port_pkeys().get(&guid(h1)).map(|t| t.iter().any(|k| k.0 == 0x8001)), Some(true));

    let lid = |i: usize| drv.sm.guid2lid().get(guid(i)).expect("LID").0;
    let (l1, l2, l4, lsm) = (lid(h1), lid(h2), lid(h4), lid(sm_host));
    let ask = |drv: &SimDriver, from: ibsm_mad::Lid, bytes: &[u8]| -> (u16, usize) {
        let snap = drv.sm.snapshot().expect("snapshot");
        let live = Live::new(drv.sm.sm_info(false));
        let ans = sa::serve(&snap, &mut SaState::default(), &live, bytes, from, &Limits::default()).expect("served");
        (ans.status, ans.records)
    };
    let path = |drv: &SimDriver, from: ibsm_mad::Lid, a: ibsm_mad::Lid, b: ibsm_mad::Lid| -> u16 {
        let q = PathRecord { slid: a, dlid: b, ..PathRecord::default() };
        ask(drv, from, &request(Method::Get, PathRecord::COMP_SLID | PathRecord::COMP_DLID, 1, &q).unwrap()).0
    };
    let node_of = |drv: &SimDriver, from: ibsm_mad::Lid, l: ibsm_mad::Lid| -> usize {
        let q = NodeRecord { lid: l, ..NodeRecord::parse(&[0; 108]).unwrap() };
        ask(drv, from, &request(Method::GetTable, NodeRecord::COMP_LID, 2, &q).unwrap()).1
    };
    assert_eq!(path(&drv, l1, l1, l2), status::OK, "h1 and h2 share the default partition");
    assert_eq!(path(&drv, l1, l1, l4), status::SA_NO_RECORDS, "h1 -> h4 (alpha, default)");
    assert_eq!(path(&drv, l2, l2, l4), status::SA_NO_RECORDS, "h2 -> h4 (default)");
    assert_eq!(path(&drv, l4, l4, l1), status::SA_NO_RECORDS, "h4 -> h1");
    assert_eq!(path(&drv, lsm, l1, l4), status::SA_NO_RECORDS, "h1 -> h4 asked by the SM's host");
    assert_eq!(node_of(&drv, l1, l2), 1, "h1 sees h2");
    assert_eq!(node_of(&drv, l1, l4), 0, "h1 sees no record of h4");
    assert!(!drv.sm.port_pkeys().contains_key(&guid(h4)), "h4's table is not taken as written");

    // The cable heals; the repair sweep writes h4's table and h4 is reachable again.
    drv.fabric.inject_fault(Fault::ClearRules);
    let repaired = report(&mut drv);
    assert!(repaired.complete, "{repaired:?}");
    assert_eq!(read_pkeys(&mut drv, &topo, h4), [0xffff, 0x8001]);
    assert_eq!(path(&drv, l1, l1, l4), status::OK, "h1 -> h4 once h4's table is written");
    assert_eq!(node_of(&drv, l1, l4), 1, "h1 sees h4 again");
}
