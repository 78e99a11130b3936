//! GUIDInfoRecords and MulticastForwardingTableRecords on the simulated fabric, checked against
//! what the simulated ports and switches hold (read with SMPs).

use ibsm::core::{Guid2Lid, Sm, SmConfig};
use ibsm::transport::sim::SimDriver;
use ibsm_mad::attrs::{MulticastForwardingTable, PortInfo};
use ibsm_mad::header::Method;
use ibsm_mad::ids::status;
use ibsm_mad::records::{GuidInfoRecord, JoinState, McMemberRecord, MftRecord, stride};
use ibsm_mad::{Attribute, DrPath, Gid, Guid, Lid, PKey, ids};
use ibsm_topology::NodeKind;

mod support;
use support::sa::{LIMIT, MC_CREATE, Oracle, PREFIX, dr_get, example, records, sweep, through_core};

#[test]
fn guid_info_records_give_each_end_port_its_guid_in_guidcap_blocks() {
    let mut s = sweep(example("fat-tree-2l-k4.net"), 0);
    let routes = Oracle::from_topology(&s.topo, s.drv.at).routes;
    let all = s.ask(Method::GetTable, 0, &GuidInfoRecord::default());
    assert_eq!(all.status, status::OK);
    let recs: Vec<GuidInfoRecord> = records(&all);
    let mut expected = 0;
    for at in s.snap.end_ports() {
        let port = s.snap.port(at).expect("port").clone();
        let node = s.snap.node(at.0).expect("node").clone();
        // GUIDCap as the simulated port itself reports it.
        let idx = s.topo.nodes.iter().position(|n| n.node_guid == node.info.node_guid).expect("in topology");
        let cap = if idx == s.drv.at.0 {
            port.info.expect("PortInfo").guid_cap
        } else {
            // Switches have a route; a CA is one hop past the switch it is cabled to.
            let hops = routes.get(&idx).cloned().unwrap_or_else(|| {
                let peer = s.topo.nodes[idx].peer(at.1).expect("cabled");
                let mut r = routes[&peer.node].clone();
                r.push(peer.port);
                r
            });
            let path = DrPath::new(&hops).expect("route");
            let attr_mod = if node.is_switch() { 0 } else { u32::from(at.1) };
            let data = dr_get(&mut s.drv, &path, ids::attr::PORT_INFO, attr_mod).expect("PortInfo");
            PortInfo::parse(&data).expect("PortInfo").guid_cap
        };
        let mine: Vec<&GuidInfoRecord> = recs.iter().filter(|r| r.lid == port.lid).collect();
        assert_eq!(mine.len(), usize::from(cap.max(1).div_ceil(8)), "blocks of LID {}", port.lid.0);
        for r in &mine {
            let want0 = if r.block_num == 0 { port.guid } else { Guid(0) };
            assert_eq!(r.guid_info.guids[0], want0);
            assert!(r.guid_info.guids[1..].iter().all(|g| *g == Guid(0)), "no alias GUIDs");
        }
        expected += mine.len();
    }
    assert_eq!(recs.len(), expected, "one record per block of every end port");

    // Get by LID and block: exactly one; an unknown LID: none.
    let lid = s.snap.port(s.snap.end_ports().last().expect("ports")).expect("port").lid;
    let one = GuidInfoRecord { lid, ..GuidInfoRecord::default() };
    let a = s.ask(Method::Get, GuidInfoRecord::COMP_LID | GuidInfoRecord::COMP_BLOCK_NUM, &one);
    assert_eq!((a.status, a.records), (status::OK, 1));
    let none = GuidInfoRecord { lid: Lid(0xbfff), ..GuidInfoRecord::default() };
    assert_eq!(s.ask(Method::Get, GuidInfoRecord::COMP_LID, &none).status, status::SA_NO_RECORDS);
}

#[test]
fn multicast_forwarding_table_records_show_what_the_switches_hold() {
    let topo = example("fat-tree-2l-k4.net");
    let mut drv = SimDriver::new(&topo, 2, Sm::new(SmConfig::default(), Guid2Lid::default()), None).expect("attach");
    assert!(drv.sweep(LIMIT, |_| {}).expect("up").complete);
    drv.sm.set_sa_limits(ibsm::sa::Limits::default());
    let routes = Oracle::from_topology(&topo, drv.at).routes;
    let hosts: Vec<usize> = (0..topo.nodes.len()).filter(|&i| topo.nodes[i].kind == NodeKind::Ca).collect();
    let lids: std::collections::HashMap<usize, Lid> =
        hosts.iter().map(|&i| (i, drv.sm.guid2lid().get(topo.nodes[i].port_guid(1)).expect("LID").0)).collect();
    let lid0 = |i: usize| lids[&i];
    let gid = |i: usize| Gid { prefix: PREFIX, guid: topo.nodes[i].port_guid(1) };
    let now = drv.now();

    // A group of three hosts.
    let create = McMemberRecord {
        port_gid: gid(hosts[0]),
        qkey: 5,
        pkey: PKey(0xffff),
        join_state: JoinState::FULL_MEMBER,
        ..McMemberRecord::default()
    };
    let (st, data) = through_core(&mut drv, now, lid0(hosts[0]), (Method::Set, MC_CREATE, 0), &create);
    assert_eq!(st, status::OK);
    let group = McMemberRecord::parse(&data).expect("group");
    let join = McMemberRecord::COMP_MGID | McMemberRecord::COMP_PORT_GID | McMemberRecord::COMP_JOIN_STATE;
    for &h in &[hosts[3], hosts[hosts.len() - 1]] {
        let r = McMemberRecord {
            mgid: group.mgid,
            port_gid: gid(h),
            join_state: JoinState::FULL_MEMBER,
            ..McMemberRecord::default()
        };
        assert_eq!(through_core(&mut drv, now, lid0(h), (Method::Set, join, 0), &r).0, status::OK);
    }
    drv.run_until(drv.now() + 1_000_000_000, |_| false);

    let now = drv.now();
    let (st, data) = through_core(&mut drv, now, lid0(hosts[0]), (Method::GetTable, 0, 0), &MftRecord::default());
    assert_eq!(st, status::OK);
    let recs: Vec<MftRecord> =
        data.chunks_exact(stride::<MftRecord>()).map(|c| MftRecord::parse(c).expect("record")).collect();
    let (block, _) = MulticastForwardingTable::locate(group.mlid).expect("multicast LID");
    // Every switch's block of the group's MLID, read from the switch: the records hold exactly
    // the non-empty ones, with the same masks.
    let mut held = 0;
    for sw in (0..topo.nodes.len()).filter(|&i| topo.nodes[i].kind == NodeKind::Switch) {
        let sw_lid = drv.sm.guid2lid().get(topo.nodes[sw].port_guid(0)).expect("switch LID").0;
        let path = DrPath::new(&routes[&sw]).expect("route");
        for position in 0..=topo.nodes[sw].num_ports / 16 {
            let attr_mod = MulticastForwardingTable::attr_mod(block, position);
            let data = dr_get(&mut drv, &path, ids::attr::MFT, attr_mod).expect("MFT answer");
            let table = MulticastForwardingTable::parse(&data).expect("MFT");
            let rec = recs.iter().find(|r| r.lid == sw_lid && r.block_num == block && r.position == position);
            if table.masks.iter().all(|m| m.0 == 0) {
                assert!(rec.is_none(), "an empty block is not listed");
            } else {
                assert_eq!(rec.map(|r| r.mft), Some(table), "switch LID {} block {block}", sw_lid.0);
                held += 1;
            }
        }
    }
    assert!(held >= 3, "the group spans several switches ({held})");
    assert_eq!(recs.len(), held, "no other records");
}
