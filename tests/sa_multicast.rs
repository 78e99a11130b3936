//! SA multicast on the simulated fabric: groups created, joined and left with MCMemberRecords
//! (statuses as the IBTA's o15 rules and OpenSM give them), and the multicast forwarding tables
//! the SM programs, followed hop by hop through the simulated switches' own tables; the MLIDs
//! a join as 0x9 and a leave as 0x1 would leak in OpenSM.

use std::collections::{HashMap, HashSet, VecDeque};

use ibsm::core::{Guid2Lid, Sm, SmConfig};
use ibsm::transport::sim::SimDriver;
use ibsm_mad::header::Method;
use ibsm_mad::ids::status;
use ibsm_mad::records::{Selector, stride};
use ibsm_mad::sa::{SaHeader, request};
use ibsm_mad::{Attribute, DrPath, Gid, Guid, Lid, PKey, ids};
use ibsm_topology::{NodeKind, Topology};

mod support;

use support::sa::*;

/// Ports switch `sw` forwards `mlid` to, read from the simulated switch itself (MFT blocks of
/// every position) over a directed route from the SM's port.
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

/// Whether a packet sent to `mlid` by the host at (`from`, port 1) reaches every host in `to`,
/// following the switches' own tables (flooding every port of the mask but the ingress one).
fn reaches(
    drv: &mut SimDriver,
    routes: &HashMap<usize, Vec<u8>>,
    topo: &Topology,
    mlid: u16,
    from: usize,
) -> HashSet<usize> {
    let mut got = HashSet::new();
    let Some(first) = topo.nodes[from].peer(1) else { return got };
    let mut queue = VecDeque::from([(first.node, first.port)]);
    let mut seen = HashSet::new();
    while let Some((sw, ingress)) = queue.pop_front() {
        if !seen.insert((sw, ingress)) || seen.len() > 10_000 {
            continue;
        }
        for p in mft_ports(drv, routes, topo, sw, mlid) {
            if p == ingress || p == 0 {
                continue;
            }
            let Some(peer) = topo.nodes[sw].peer(p) else { continue };
            if topo.nodes[peer.node].kind == NodeKind::Switch {
                queue.push_back((peer.node, peer.port));
            } else {
                got.insert(peer.node);
            }
        }
    }
    got
}

#[test]
fn multicast_groups_are_created_joined_left_and_programmed_into_the_switches() {
    use ibsm_mad::records::{JoinState, McMemberRecord};
    let topo = example("fat-tree-3l-k4.net");
    let mut drv = SimDriver::new(&topo, 2, Sm::new(SmConfig::default(), Guid2Lid::default()), None).expect("attach");
    drv.sweep(LIMIT, |_| {}).expect("up");
    let routes = Oracle::from_topology(&topo, drv.at).routes;
    let hosts: Vec<usize> = (0..topo.nodes.len()).filter(|&i| topo.nodes[i].kind == NodeKind::Ca).collect();
    let lids: HashMap<usize, Lid> =
        hosts.iter().map(|&i| (i, drv.sm.guid2lid().get(topo.nodes[i].port_guid(1)).expect("LID").0)).collect();
    let lid = |i: usize| lids[&i];
    let gid = |i: usize| Gid { prefix: PREFIX, guid: topo.nodes[i].port_guid(1) };
    let now = drv.now();

    // The IPoIB broadcast group exists from the first sweep, without members.
    let (st, data) = through_core(&mut drv, now, lid(hosts[0]), (Method::GetTable, 0, 1), &McMemberRecord::default());
    assert_eq!(st, status::OK);
    let ipoib = McMemberRecord::parse(&data).unwrap();
    assert_eq!((ipoib.mgid, ipoib.mlid, ipoib.qkey), (ibsm::sa::multicast::IPOIB_BROADCAST, Lid(0xc000), 0x0b1b));

    // Create a group with MGID 0 as a full member (all creation components given).
    let create = MC_CREATE;
    let first = hosts[0];
    let req = McMemberRecord {
        port_gid: gid(first),
        qkey: 0x1234,
        pkey: PKey(0xffff),
        join_state: JoinState::FULL_MEMBER,
        ..McMemberRecord::default()
    };
    let (st, data) = through_core(&mut drv, now, lid(first), (Method::Set, create, 0), &req);
    assert_eq!(st, status::OK);
    let group = McMemberRecord::parse(&data).unwrap();
    assert_eq!(group.mgid.prefix >> 48, 0xff12, "an SA-assigned link-local MGID");
    assert!(group.mlid.0 > 0xc000 && group.mlid.0 < 0xc400);
    // Missing creation components, a bad rate, someone else's port: refused.
    let mut other = req;
    other.mgid = Gid { prefix: 0xff12_a01c_0000_0000, guid: Guid(77) };
    assert_eq!(
        through_core(&mut drv, now, lid(first), (Method::Set, create & !McMemberRecord::COMP_SL, 0), &other).0,
        status::SA_INSUFFICIENT_COMPONENTS
    );
    let mut fast = other;
    fast.rate = ibsm_mad::records::Rate::from_raw(22);
    fast.rate_selector = Selector::GreaterThan;
    let rate = McMemberRecord::COMP_RATE | McMemberRecord::COMP_RATE_SELECTOR;
    assert_eq!(
        through_core(&mut drv, now, lid(first), (Method::Set, create | rate, 0), &fast).0,
        status::SA_REQ_INVALID
    );
    let bad_mgid = McMemberRecord { mgid: Gid { prefix: 0xfa12_a01c_0000_0000, guid: Guid(1) }, ..req };
    assert_eq!(through_core(&mut drv, now, lid(first), (Method::Set, create, 0), &bad_mgid).0, status::SA_REQ_INVALID);
    let stranger = McMemberRecord { port_gid: Gid { prefix: PREFIX, guid: Guid(0xdead) }, ..other };
    assert_eq!(
        through_core(&mut drv, now, lid(hosts[1]), (Method::Set, create, 0), &stranger).0,
        status::SA_REQ_INVALID,
        "not a port of the subnet"
    );

    // Three more hosts join (one send-only); a join with another Q_Key is refused.
    let join = McMemberRecord::COMP_MGID | McMemberRecord::COMP_PORT_GID | McMemberRecord::COMP_JOIN_STATE;
    let members = [hosts[1], hosts[hosts.len() / 2], hosts[hosts.len() - 1]];
    for (k, &h) in members.iter().enumerate() {
        let js = if k == 2 { JoinState::SEND_ONLY_NON_MEMBER } else { JoinState::FULL_MEMBER };
        let r = McMemberRecord { mgid: group.mgid, port_gid: gid(h), join_state: js, ..McMemberRecord::default() };
        let (st, data) = through_core(&mut drv, now, lid(h), (Method::Set, join, 0), &r);
        assert_eq!(st, status::OK);
        assert_eq!(McMemberRecord::parse(&data).unwrap().mlid, group.mlid);
    }
    let wrong_qkey = McMemberRecord {
        mgid: group.mgid,
        port_gid: gid(hosts[2]),
        qkey: 9,
        join_state: JoinState::FULL_MEMBER,
        ..McMemberRecord::default()
    };
    assert_eq!(
        through_core(&mut drv, now, lid(hosts[2]), (Method::Set, join | McMemberRecord::COMP_QKEY, 0), &wrong_qkey).0,
        status::SA_REQ_INVALID
    );

    // The switches forward the MLID from each member to exactly the receiving members.
    drv.run_until(drv.now() + 1_000_000_000, |_| false);
    let receivers: HashSet<usize> = [first, members[0], members[1]].into_iter().collect();
    for &src in &[first, members[0], members[1], members[2]] {
        let got = reaches(&mut drv, &routes, &topo, group.mlid.0, src);
        let want: HashSet<usize> = receivers.iter().copied().filter(|&h| h != src).collect();
        assert_eq!(got, want, "from host {src}");
    }
    assert!(drv.sm.mft_blocks_sent() > 0);

    // Everyone leaves: the group ends, its MLID is free, the switches forget it.
    for h in [members[2], first, members[0], members[1]] {
        let js = if h == members[2] { JoinState::SEND_ONLY_NON_MEMBER } else { JoinState::FULL_MEMBER };
        let r = McMemberRecord { mgid: group.mgid, port_gid: gid(h), join_state: js, ..McMemberRecord::default() };
        assert_eq!(through_core(&mut drv, now, lid(h), (Method::Delete, join, 0), &r).0, status::OK);
    }
    let r = McMemberRecord {
        mgid: group.mgid,
        port_gid: gid(first),
        join_state: JoinState::FULL_MEMBER,
        ..McMemberRecord::default()
    };
    assert_eq!(
        through_core(&mut drv, now, lid(first), (Method::Delete, join, 0), &r).0,
        status::SA_REQ_INVALID,
        "no such group"
    );
    drv.run_until(drv.now() + 1_000_000_000, |_| false);
    assert!(reaches(&mut drv, &routes, &topo, group.mlid.0, first).is_empty(), "tables cleared");
}

#[test]
fn a_join_as_0x9_and_a_leave_as_0x1_leak_no_mlid() {
    use ibsm_mad::records::{JoinState, McMemberRecord};
    let topo = example("fat-tree-3l-k4.net");
    let mut drv = SimDriver::new(&topo, 2, Sm::new(SmConfig::default(), Guid2Lid::default()), None).expect("attach");
    drv.sweep(LIMIT, |_| {}).expect("up");
    let h = (0..topo.nodes.len()).filter(|&i| topo.nodes[i].kind == NodeKind::Ca).nth(3).expect("a host");
    let my_lid = drv.sm.guid2lid().get(topo.nodes[h].port_guid(1)).expect("LID").0;
    let lid = |_: usize| my_lid;
    let gid = |i: usize| Gid { prefix: PREFIX, guid: topo.nodes[i].port_guid(1) };
    let now = drv.now();
    let create = MC_CREATE;
    let join = McMemberRecord::COMP_MGID | McMemberRecord::COMP_PORT_GID | McMemberRecord::COMP_JOIN_STATE;
    // Join as full+send-only full (0x9), leave as full (0x1) only, 2,000 times.
    for round in 0..2000u32 {
        let mgid = Gid { prefix: 0xff12_a01c_0000_0000, guid: Guid(u64::from(round)) };
        let r = McMemberRecord {
            mgid,
            port_gid: gid(h),
            qkey: 1,
            pkey: PKey(0xffff),
            join_state: JoinState(0x9),
            ..McMemberRecord::default()
        };
        let (st, _) = through_core(&mut drv, now, lid(h), (Method::Set, create, 0), &r);
        assert_eq!(st, status::OK, "round {round}");
        let leave = McMemberRecord { join_state: JoinState::FULL_MEMBER, ..r };
        assert_eq!(through_core(&mut drv, now, lid(h), (Method::Delete, join, 0), &leave).0, status::OK);
    }
    // Only the IPoIB group is left: one record, and every MLID but 0xC000 free again.
    let mut table = request(Method::GetTable, 0, 0x91, &McMemberRecord::default()).unwrap();
    table[36..44].copy_from_slice(&1u64.to_be_bytes());
    drv.sm.handle_mad(now, &table, ibsm::core::MadSource::lid(lid(h), 1));
    let t = drv.sm.poll_transmit(now).expect("answer");
    let hdr = SaHeader::from_bytes(&t.bytes).unwrap();
    assert_eq!((hdr.status, (hdr.rmpp.data2 as usize - 20) / stride::<McMemberRecord>()), (status::OK, 1));
    let r = McMemberRecord {
        mgid: Gid::default(),
        port_gid: gid(h),
        qkey: 1,
        pkey: PKey(0xffff),
        join_state: JoinState::FULL_MEMBER,
        ..McMemberRecord::default()
    };
    let (st, data) = through_core(&mut drv, now, lid(h), (Method::Set, create, 0), &r);
    assert_eq!((st, McMemberRecord::parse(&data).unwrap().mlid), (status::OK, Lid(0xc001)), "the lowest MLID is free");
}

/// Found while following OpenSM's rules for the policy's IP groups (issue 21): an IP group
/// (signature 0x401B or 0x601B) may be created only where its partition's IPv4 broadcast group
/// of the same scope exists, and with its Q_Key; as OpenSM with its default
/// `ipoib_mcgroup_creation_validation`.
#[test]
fn an_ip_group_needs_its_partitions_broadcast_group() {
    use ibsm_mad::records::{JoinState, McMemberRecord};
    let topo = example("fat-tree-3l-k4.net");
    let mut drv = SimDriver::new(&topo, 2, Sm::new(SmConfig::default(), Guid2Lid::default()), None).expect("attach");
    drv.sweep(LIMIT, |_| {}).expect("up");
    let h = (0..topo.nodes.len()).filter(|&i| topo.nodes[i].kind == NodeKind::Ca).nth(1).expect("a host");
    let my_lid = drv.sm.guid2lid().get(topo.nodes[h].port_guid(1)).expect("LID").0;
    let now = drv.now();
    let create = |drv: &mut SimDriver, prefix: u64, guid: u64, qkey: u32| {
        let r = McMemberRecord {
            mgid: Gid { prefix, guid: Guid(guid) },
            port_gid: Gid { prefix: PREFIX, guid: topo.nodes[h].port_guid(1) },
            qkey,
            pkey: PKey(0xffff),
            join_state: JoinState::FULL_MEMBER,
            ..McMemberRecord::default()
        };
        through_core(drv, now, my_lid, (Method::Set, MC_CREATE, 0), &r).0
    };
    // The default partition's link-local broadcast group exists (no partitions file): IPv4 and
    // IPv6 groups beside it may be created with its Q_Key.
    assert_eq!(create(&mut drv, 0xff12_401b_ffff_0000, 0xe000_0001, 0x0b1b), status::OK);
    assert_eq!(create(&mut drv, 0xff12_601b_ffff_0000, 0x16, 0x0b1b), status::OK);
    // Another Q_Key than the broadcast group's; a site-local scope, a partition without a
    // broadcast group: refused. Other MGIDs are not concerned.
    assert_eq!(create(&mut drv, 0xff12_601b_ffff_0000, 0x17, 0x10), status::SA_REQ_INVALID);
    assert_eq!(create(&mut drv, 0xff15_401b_ffff_0000, 0xe000_0002, 0x0b1b), status::SA_REQ_INVALID);
    assert_eq!(create(&mut drv, 0xff12_601b_8001_0000, 0x18, 0x0b1b), status::SA_REQ_INVALID);
    assert_eq!(create(&mut drv, 0xff15_1234_0000_0000, 0x19, 0x10), status::OK);
}
