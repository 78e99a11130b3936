//! Multicast at scale on the simulated fabric (issue 27): the MLID pool the switches can hold
//! (the smallest non-zero MulticastFDBCap, switches with mixed caps among them, a create past
//! it refused with NO_RESOURCES, counted and reported once), IPv6 solicited-node groups
//! sharing one MLID per partition (`consolidate_ipv6_snm`, OpenSM's
//! `consolidate_ipv6_snm_req`) with 20,000 hosts joining, and the tree root chosen central to
//! the members (OpenSM's rule), followed through the simulated switches' own tables: no loop,
//! every member reached; switches reporting MulticastFDBCap 0 left out of the trees and never
//! sent an MFT, as OpenSM does.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};

use ibsm::core::{Guid2Lid, Sm, SmConfig, SmEvent};
use ibsm::transport::sim::SimDriver;
use ibsm_mad::header::Method;
use ibsm_mad::ids::status;
use ibsm_mad::records::{JoinState, McMemberRecord};
use ibsm_mad::{Attribute, DrPath, Gid, Guid, Lid, PKey, ids};
use ibsm_sim::fabric::SimConfig;
use ibsm_topology::generators::GenSpec;
use ibsm_topology::{NodeKind, Topology};

mod support;

use support::sa::*;

const JOIN: u64 = McMemberRecord::COMP_MGID | McMemberRecord::COMP_PORT_GID | McMemberRecord::COMP_JOIN_STATE;

fn hosts(topo: &Topology) -> Vec<usize> {
    (0..topo.nodes.len()).filter(|&i| topo.nodes[i].kind == NodeKind::Ca).collect()
}

fn lid_of(drv: &SimDriver, topo: &Topology, h: usize) -> Lid {
    drv.sm.guid2lid().get(topo.nodes[h].port_guid(1)).expect("LID").0
}

/// A create of `mgid` by host `h` as a full member in the default partition, with the IPoIB
/// broadcast group's Q_Key (IP groups need it).
fn create(drv: &mut SimDriver, topo: &Topology, h: usize, mgid: Gid) -> (u16, Option<McMemberRecord>) {
    let r = McMemberRecord {
        mgid,
        port_gid: Gid { prefix: PREFIX, guid: topo.nodes[h].port_guid(1) },
        qkey: 0x0b1b,
        pkey: PKey(0xffff),
        join_state: JoinState::FULL_MEMBER,
        ..McMemberRecord::default()
    };
    let (now, from) = (drv.now(), lid_of(drv, topo, h));
    let (st, data) = through_core(drv, now, from, (Method::Set, MC_CREATE, 0), &r);
    (st, McMemberRecord::parse(&data).ok().filter(|_| st == status::OK))
}

fn exhausted_events(drv: &mut SimDriver) -> usize {
    std::iter::from_fn(|| drv.sm.poll_event()).filter(|e| matches!(e, SmEvent::MlidPoolExhausted { .. })).count()
}

#[test]
fn the_mlid_pool_is_the_switches_multicast_fdb_cap_and_a_create_past_it_gets_no_resources() {
    let topo = example("fat-tree-3l-k4.net");
    let cfg = SimConfig { seed: 2, multicast_fdb_cap: 8, ..SimConfig::default() };
    let sm = Sm::new(SmConfig::default(), Guid2Lid::default());
    let mut drv = SimDriver::with_config(&topo, cfg, sm, None).expect("attach");
    drv.sweep(LIMIT, |_| {}).expect("up");
    let h = hosts(&topo)[2];
    let mgid = |i: u64| Gid { prefix: 0xff12_a01c_0000_0000, guid: Guid(i) };
    // 0xC000 is the IPoIB broadcast group's; seven more fit in eight.
    let mut mlids = BTreeSet::new();
    for i in 1..=7 {
        let (st, rec) = create(&mut drv, &topo, h, mgid(i));
        assert_eq!(st, status::OK, "group {i}");
        mlids.insert(rec.expect("record").mlid.0);
    }
    assert_eq!(mlids, (0xc001..=0xc007).collect::<BTreeSet<u16>>());
    let _ = exhausted_events(&mut drv);
    // Past the pool: NO_RESOURCES each time, counted each time, reported once.
    for i in 8..=10 {
        assert_eq!(create(&mut drv, &topo, h, mgid(i)).0, status::SA_NO_RESOURCES, "group {i}");
    }
    assert_eq!((drv.sm.mlid_refusals(), exhausted_events(&mut drv)), (3, 1));
    // A group ends: its MLID serves the next create; the pool full again is reported again.
    let leave = McMemberRecord {
        mgid: mgid(3),
        port_gid: Gid { prefix: PREFIX, guid: topo.nodes[h].port_guid(1) },
        join_state: JoinState::FULL_MEMBER,
        ..McMemberRecord::default()
    };
    let (now, from) = (drv.now(), lid_of(&drv, &topo, h));
    assert_eq!(through_core(&mut drv, now, from, (Method::Delete, JOIN, 0), &leave).0, status::OK);
    let (st, rec) = create(&mut drv, &topo, h, mgid(11));
    assert_eq!((st, rec.map(|r| r.mlid)), (status::OK, Some(Lid(0xc003))));
    assert_eq!(create(&mut drv, &topo, h, mgid(12)).0, status::SA_NO_RESOURCES);
    assert_eq!((drv.sm.mlid_refusals(), exhausted_events(&mut drv)), (4, 1));
}

/// Switches with different MulticastFDBCap values: the pool is the smallest non-zero one (a
/// switch reporting 0 is left out, as OpenSM), and the SA hands out no MLID past it.
#[test]
fn with_mixed_multicast_fdb_caps_the_pool_is_the_smallest_nonzero_cap() {
    let topo = example("fat-tree-3l-k4.net");
    let switches: Vec<usize> = (0..topo.nodes.len()).filter(|&i| topo.nodes[i].kind == NodeKind::Switch).collect();
    let sm = Sm::new(SmConfig::default(), Guid2Lid::default());
    let mut drv =
        SimDriver::with_config(&topo, SimConfig { seed: 3, ..SimConfig::default() }, sm, None).expect("attach");
    // The default 1024 everywhere but one switch with 4, one with 6 and one with none.
    drv.fabric.set_multicast_fdb_cap(switches[1], 6);
    drv.fabric.set_multicast_fdb_cap(switches[switches.len() - 1], 4);
    drv.fabric.set_multicast_fdb_cap(switches[2], 0);
    drv.sweep(LIMIT, |_| {}).expect("up");
    assert_eq!(drv.sm.snapshot().expect("a snapshot").mcast_fdb_cap(), Some(4));
    let h = hosts(&topo)[1];
    let mgid = |i: u64| Gid { prefix: 0xff12_a01c_0000_0000, guid: Guid(i) };
    // 0xC000 is the IPoIB broadcast group's; three more fit in four.
    let mut mlids = BTreeSet::new();
    for i in 1..=3 {
        let (st, rec) = create(&mut drv, &topo, h, mgid(i));
        assert_eq!(st, status::OK, "group {i}");
        mlids.insert(rec.expect("record").mlid.0);
    }
    assert_eq!(mlids, (0xc001..=0xc003).collect::<BTreeSet<u16>>());
    assert_eq!(create(&mut drv, &topo, h, mgid(4)).0, status::SA_NO_RESOURCES, "past the smallest cap");
    assert_eq!(drv.sm.mlid_refusals(), 1);
}

/// The solicited-node MGID of a port GUID's low 24 bits, scope `scope`, partition `pkey`.
fn snm(scope: u8, pkey: u16, guid: Guid) -> Gid {
    let prefix = 0xff10_601b_0000_0000 | u64::from(scope & 0xf) << 48 | u64::from(pkey) << 16;
    Gid { prefix, guid: Guid(0x0000_0001_ff00_0000 | guid.0 & 0x00ff_ffff) }
}

#[test]
fn twenty_thousand_hosts_join_their_solicited_node_groups_on_one_mlid() {
    // 200 leaves of 100 hosts under 100 spines: 20,000 hosts.
    let topo = GenSpec::fat_tree(2, 200).generate().expect("generator");
    let all = hosts(&topo);
    assert_eq!(all.len(), 20_000);
    let cfg = SmConfig { consolidate_ipv6_snm: true, ..SmConfig::default() };
    let mut drv = SimDriver::new(&topo, 3, Sm::new(cfg, Guid2Lid::default()), None).expect("attach");
    drv.sweep(LIMIT, |_| {}).expect("up");
    let mut shared = None;
    let mut mgids = HashSet::new();
    for &h in &all {
        let mgid = snm(2, 0xffff, topo.nodes[h].port_guid(1));
        let (st, rec) = create(&mut drv, &topo, h, mgid);
        assert_eq!(st, status::OK, "host {h}");
        let rec = rec.expect("record");
        assert_eq!(rec.mgid, mgid);
        assert_eq!(*shared.get_or_insert(rec.mlid), rec.mlid, "host {h}: the partition's one MLID");
        mgids.insert(mgid);
    }
    let shared = shared.expect("joins");
    assert!((0xc001..0xc000 + 1024).contains(&shared.0), "{shared:?} within the switches' pool");
    assert_eq!(drv.sm.mlid_refusals(), 0);
    // Each group answers with its own MGID and the shared MLID (a trusted Get by MGID).
    for &h in all.iter().step_by(997) {
        let mgid = snm(2, 0xffff, topo.nodes[h].port_guid(1));
        let q = McMemberRecord { mgid, ..McMemberRecord::default() };
        let (now, from) = (drv.now(), lid_of(&drv, &topo, h));
        let (st, data) = through_core(&mut drv, now, from, (Method::Get, McMemberRecord::COMP_MGID, 1), &q);
        let rec = McMemberRecord::parse(&data).expect("record");
        assert_eq!((st, rec.mgid, rec.mlid, rec.port_gid.guid), (status::OK, mgid, shared, topo.nodes[h].port_guid(1)));
    }
    // Another partition's solicited-node group would take its own; another group of this
    // partition's too (not solicited-node): the pool is not touched by the 20,000.
    let (st, rec) = create(&mut drv, &topo, all[0], Gid { prefix: 0xff12_a01c_0000_0000, guid: Guid(5) });
    assert_eq!((st, rec.map(|r| r.mlid != shared)), (status::OK, Some(true)));
    // The switches forward the shared MLID to every host.
    drv.run_until(drv.now() + 2_000_000_000, |_| false);
    let root = drv.sm.multicast_root(shared).expect("a root");
    let spine = topo.nodes.iter().find(|n| n.node_guid == root).expect("root switch");
    assert!(spine.name.starts_with("spine-"), "root {}", spine.name);
    for leaf in topo.nodes.iter().filter(|n| n.name.starts_with("leaf-")).take(3) {
        let ports = drv.sm.programmed_mft(leaf.node_guid, shared).expect("programmed");
        assert_eq!(ports.len(), 101, "{}: its 100 hosts and one up-link", leaf.name);
    }
    assert_eq!(mgids.len(), 20_000);
}

/// Ports switch `sw` forwards `mlid` to, read from the simulated switch itself.
fn mft_ports(drv: &mut SimDriver, routes: &HashMap<usize, Vec<u8>>, topo: &Topology, sw: usize, mlid: u16) -> Vec<u8> {
    let (block, entry) = ibsm_mad::attrs::MulticastForwardingTable::locate(Lid(mlid)).expect("multicast LID");
    let path = DrPath::new(&routes[&sw]).expect("route");
    let mut ports = Vec::new();
    for position in 0..=topo.nodes[sw].num_ports / 16 {
        let attr_mod = ibsm_mad::attrs::MulticastForwardingTable::attr_mod(block, position);
        let data = dr_get(drv, &path, ids::attr::MFT, attr_mod).expect("MFT answer");
        let t = ibsm_mad::attrs::MulticastForwardingTable::parse(&data).expect("MFT");
        ports.extend(t.masks[entry].ports(position).map(|p| p.0));
    }
    ports
}

#[test]
fn the_tree_root_is_central_to_the_members_and_the_tree_has_no_loop() {
    let topo = GenSpec::fat_tree(3, 4).generate().expect("generator");
    let mut drv = SimDriver::new(&topo, 2, Sm::new(SmConfig::default(), Guid2Lid::default()), None).expect("attach");
    drv.sweep(LIMIT, |_| {}).expect("up");
    let routes = Oracle::from_topology(&topo, drv.at).routes;
    let all = hosts(&topo);
    // One host of each pod (4 hosts a pod in a k=4 tree), the first two in the same pod.
    let members: Vec<usize> = [0, 1, 5, 9, 13].iter().map(|&i| all[i]).collect();
    let mgid = Gid { prefix: 0xff12_a01c_0000_0000, guid: Guid(0x77) };
    let (st, rec) = create(&mut drv, &topo, members[0], mgid);
    assert_eq!(st, status::OK);
    let mlid = rec.expect("record").mlid;
    for &h in &members[1..] {
        let r = McMemberRecord {
            mgid,
            port_gid: Gid { prefix: PREFIX, guid: topo.nodes[h].port_guid(1) },
            join_state: JoinState::FULL_MEMBER,
            ..McMemberRecord::default()
        };
        let (now, from) = (drv.now(), lid_of(&drv, &topo, h));
        assert_eq!(through_core(&mut drv, now, from, (Method::Set, JOIN, 0), &r).0, status::OK);
    }
    drv.run_until(drv.now() + 1_000_000_000, |_| false);
    let root = drv.sm.multicast_root(mlid).expect("a root");
    let name = &topo.nodes.iter().find(|n| n.node_guid == root).expect("root").name;
    assert!(name.starts_with("core-"), "root {name}: members span every pod, a core switch is nearest the farthest");
    // From each member, the switches' own tables deliver once to every other member and enter
    // no switch twice (a loop would).
    for &src in &members {
        let first = topo.nodes[src].peer(1).expect("cabled");
        let mut queue = VecDeque::from([(first.node, first.port)]);
        let mut entered: HashMap<usize, usize> = HashMap::new();
        let mut got: HashMap<usize, usize> = HashMap::new();
        while let Some((sw, ingress)) = queue.pop_front() {
            *entered.entry(sw).or_default() += 1;
            assert!(entered[&sw] == 1, "from host {src}: switch {} entered twice", topo.nodes[sw].name);
            for p in mft_ports(&mut drv, &routes, &topo, sw, mlid.0) {
                if p == ingress || p == 0 {
                    continue;
                }
                let Some(peer) = topo.nodes[sw].peer(p) else { continue };
                if topo.nodes[peer.node].kind == NodeKind::Switch {
                    queue.push_back((peer.node, peer.port));
                } else {
                    *got.entry(peer.node).or_default() += 1;
                }
            }
        }
        let want: HashMap<usize, usize> = members.iter().filter(|&&h| h != src).map(|&h| (h, 1)).collect();
        assert_eq!(got, want, "from host {src}");
    }
}

/// Switches that report MulticastFDBCap 0 (they forward no multicast; their MFT answers every
/// Set with BAD_FIELD): OpenSM builds no tree through them and writes them no MFT
/// (`osm_switch_supports_mcast`). A spine and a leaf of the 2-level tree report 0; hosts on
/// every leaf join one group. Over several sweeps no MFT Set fails (none is sent to those
/// two: the SM holds no block for them), no repair follows, and the other switches' own
/// tables deliver every member's packets to the members behind multicast switches, through
/// the other spine; the member behind the leaf without multicast is reached by none.
#[test]
fn switches_without_multicast_get_no_mft_and_the_tree_goes_around_them() {
    let topo = example("fat-tree-2l-k4.net");
    let name = |n: &str| topo.find(n).expect("node");
    let sm = Sm::new(SmConfig::default(), Guid2Lid::default());
    let mut drv =
        SimDriver::with_config(&topo, SimConfig { seed: 5, ..SimConfig::default() }, sm, None).expect("attach");
    let (spine, leaf) = (name("spine-0"), name("leaf-3"));
    drv.fabric.set_multicast_fdb_cap(spine, 0);
    drv.fabric.set_multicast_fdb_cap(leaf, 0);
    let mut failed = 0;
    let mut count = |e: &SmEvent| {
        if matches!(e, SmEvent::SmpFailed { attr_id, .. } if *attr_id == ids::attr::MFT || *attr_id == ids::attr::SWITCH_INFO)
        {
            failed += 1;
        }
    };
    drv.sweep(LIMIT, &mut count).expect("up");
    let routes = Oracle::from_topology(&topo, drv.at).routes;
    // h0, h2, h4 on leaves 0 to 2; h6 on leaf-3.
    let members: Vec<usize> = ["h0", "h2", "h4", "h6"].iter().map(|h| name(h)).collect();
    let mgid = Gid { prefix: 0xff12_a01c_0000_0000, guid: Guid(0x78) };
    let (st, rec) = create(&mut drv, &topo, members[0], mgid);
    assert_eq!(st, status::OK);
    let mlid = rec.expect("record").mlid;
    for &h in &members[1..] {
        let r = McMemberRecord {
            mgid,
            port_gid: Gid { prefix: PREFIX, guid: topo.nodes[h].port_guid(1) },
            join_state: JoinState::FULL_MEMBER,
            ..McMemberRecord::default()
        };
        let (now, from) = (drv.now(), lid_of(&drv, &topo, h));
        assert_eq!(through_core(&mut drv, now, from, (Method::Set, JOIN, 0), &r).0, status::OK);
    }
    // Several sweeps' worth of time (the sweep interval is 10 s by default): no MFT or
    // SwitchInfo Set fails, so no repair sweep is asked for either.
    let until = drv.now() + 35_000_000_000;
    drv.run_until(until, |e| {
        count(e);
        false
    });
    assert_eq!(failed, 0, "MFT or SwitchInfo Sets refused");
    for sw in [spine, leaf] {
        assert!(
            drv.sm.mft(topo.nodes[sw].node_guid).is_none_or(BTreeMap::is_empty),
            "{}: no MFT held",
            topo.nodes[sw].name
        );
    }
    assert!(drv.sm.mft_blocks_sent() > 0, "the other switches were programmed");
    // From each member behind a multicast leaf, the switches' own tables reach the others
    // there, entering no switch without multicast (reading its MFT would fail).
    for &src in &members[..3] {
        let first = topo.nodes[src].peer(1).expect("cabled");
        let mut queue = VecDeque::from([(first.node, first.port)]);
        let mut got = BTreeSet::new();
        while let Some((sw, ingress)) = queue.pop_front() {
            assert!(sw != spine && sw != leaf, "from {}: into {}", topo.nodes[src].name, topo.nodes[sw].name);
            for p in mft_ports(&mut drv, &routes, &topo, sw, mlid.0) {
                let Some(peer) = topo.nodes[sw].peer(p).filter(|_| p != ingress && p != 0) else { continue };
                if topo.nodes[peer.node].kind == NodeKind::Switch {
                    queue.push_back((peer.node, peer.port));
                } else {
                    got.insert(peer.node);
                }
            }
        }
        let want: BTreeSet<usize> = members[..3].iter().copied().filter(|&h| h != src).collect();
        assert_eq!(got, want, "from {}", topo.nodes[src].name);
    }
}

/// A group of one member port needs no tree and gets none, as under OpenSM (which builds none
/// for fewer than two ports): no switch forwards its MLID. A second member's join programs
/// the tree to both; that member's leave clears every entry again.
#[test]
fn a_group_of_one_member_is_forwarded_by_no_switch() {
    let topo = example("fat-tree-2l-k4.net");
    let name = |n: &str| topo.find(n).expect("node");
    let mut drv = SimDriver::new(&topo, 6, Sm::new(SmConfig::default(), Guid2Lid::default()), None).expect("attach");
    drv.sweep(LIMIT, |_| {}).expect("up");
    let routes = Oracle::from_topology(&topo, drv.at).routes;
    let switches: Vec<usize> = (0..topo.nodes.len()).filter(|&i| topo.nodes[i].kind == NodeKind::Switch).collect();
    let (h0, h2) = (name("h0"), name("h2"));
    let mgid = Gid { prefix: 0xff12_a01c_0000_0000, guid: Guid(0x79) };
    let (st, rec) = create(&mut drv, &topo, h0, mgid);
    assert_eq!(st, status::OK);
    let mlid = rec.expect("record").mlid;
    // Every switch's (name, ports it forwards the MLID to), read from the simulated switches.
    let held = |drv: &mut SimDriver| -> Vec<(String, Vec<u8>)> {
        drv.run_until(drv.now() + 1_000_000_000, |_| false);
        switches
            .iter()
            .map(|&s| (topo.nodes[s].name.clone(), mft_ports(drv, &routes, &topo, s, mlid.0)))
            .filter(|(_, p)| !p.is_empty())
            .collect()
    };
    assert_eq!(held(&mut drv), vec![], "one member: no entry");
    let member = |h: usize| McMemberRecord {
        mgid,
        port_gid: Gid { prefix: PREFIX, guid: topo.nodes[h].port_guid(1) },
        join_state: JoinState::FULL_MEMBER,
        ..McMemberRecord::default()
    };
    let (now, from) = (drv.now(), lid_of(&drv, &topo, h2));
    assert_eq!(through_core(&mut drv, now, from, (Method::Set, JOIN, 0), &member(h2)).0, status::OK);
    let two = held(&mut drv);
    for h in [h0, h2] {
        let leaf = topo.nodes[h].peer(1).expect("cabled");
        let ports = two.iter().find(|(n, _)| *n == topo.nodes[leaf.node].name).map(|(_, p)| p.clone());
        assert!(ports.is_some_and(|p| p.contains(&leaf.port)), "{}'s leaf forwards to it: {two:?}", topo.nodes[h].name);
    }
    let (now, from) = (drv.now(), lid_of(&drv, &topo, h2));
    assert_eq!(through_core(&mut drv, now, from, (Method::Delete, JOIN, 0), &member(h2)).0, status::OK);
    assert_eq!(held(&mut drv), vec![], "back to one member: every entry cleared");
}
