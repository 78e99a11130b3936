//! SLtoVLMappingTableRecords and VLArbitrationTableRecords through the core on the simulated
//! fabric: nothing is read until the SA is asked; the first request waits for the census and is
//! answered with what the simulated ports hold (two tables changed by SMP first, so the
//! answer cannot be a default); Get and the key components select; a node that leaves is
//! forgotten, and read again when it comes back.

use ibsm_mad::attrs::{SlToVlTable, VlArbEntry, VlArbitrationTable};
use ibsm_mad::header::Method;
use ibsm_mad::ids::status;
use ibsm_mad::records::{SlToVlTableRecord, VlArbTableRecord, stride};
use ibsm_mad::sa::{SA_HEADER_LEN, SaHeader, request};
use ibsm_mad::smp::{SMP_DATA_LEN, SmpRepr};
use ibsm_mad::{Attribute, DrPath, Lid, PortNum};
use ibsm_sim::fabric::{AgentId, Dest, Fault, SimTime};
use ibsm_topology::NodeKind;

mod support;
use support::sa::{LIMIT, Oracle, Swept, example, listen, sweep};

/// Sends an SA request from `probe` (trusted: SA key 1) and returns the answer's status and
/// records.
fn ask<A: Attribute>(s: &mut Swept, probe: AgentId, method: Method, mask: u64, rec: &A) -> (u16, Vec<A>) {
    let (st, recs, _) = ask_at(s, probe, method, mask, rec);
    (st, recs)
}

/// As [`ask`], with the fabric time the answer arrived at.
fn ask_at<A: Attribute>(s: &mut Swept, probe: AgentId, method: Method, mask: u64, rec: &A) -> (u16, Vec<A>, u64) {
    let mut bytes = request(method, mask, 0x5151, rec).expect("request");
    bytes[36..44].copy_from_slice(&1u64.to_be_bytes());
    s.drv.fabric.send(probe, &bytes, Dest { dlid: s.snap.sm.lid, qpn: 1 });
    let r = listen(&mut s.drv, probe).expect("an answer");
    let h = SaHeader::from_bytes(&r.mad[..]).expect("header");
    let data = r.mad.get(SA_HEADER_LEN..).unwrap_or(&[]);
    // A GetTableResp says its length in the RMPP PayloadLength (the SA header's last 20 bytes
    // and the records); the simulator's MAD is padded to 256 bytes.
    let payload = u32::from_be_bytes(r.mad[32..36].try_into().expect("4 bytes")) as usize;
    let n = if h.method == Method::GetResp {
        usize::from(h.status == status::OK)
    } else {
        payload.saturating_sub(20) / stride::<A>()
    };
    let recs = data.chunks(stride::<A>()).take(n).filter_map(|c| A::parse(c).ok()).collect();
    (h.status, recs, r.at.0)
}

/// A directed-route Set from the SM's port, run to its answer.
fn dr_set(s: &mut Swept, path: &DrPath, attr_id: u16, attr_mod: u32, data: [u8; SMP_DATA_LEN]) {
    let smp = SmpRepr::set_dr(path, attr_id, attr_mod, 0x7100_0001, data);
    s.drv.fabric.send(s.drv.agent, &smp.to_bytes(), Dest { dlid: Lid::PERMISSIVE, qpn: 0 });
    let t = s.drv.fabric.now().0 + 1_000_000_000;
    s.drv.fabric.run_until_idle(SimTime(t));
    while s.drv.fabric.recv(s.drv.agent).is_some() {}
}

fn footprint(s: &Swept, name: &str) -> usize {
    s.drv.sm.footprint().into_iter().find(|(n, _)| *n == name).map_or(usize::MAX, |(_, v)| v)
}

#[test]
fn tables_are_read_when_first_asked_and_answered_as_the_ports_hold_them() {
    let topo = example("fat-tree-2l-k4.net");
    let mut s = sweep(topo.clone(), 0);
    let routes = Oracle::from_topology(&topo, s.drv.at).routes;
    let switches: Vec<usize> = (0..topo.nodes.len()).filter(|&i| topo.nodes[i].kind == NodeKind::Switch).collect();
    let sw = switches[0];
    let sw_path = DrPath::new(&routes[&sw]).expect("route");
    // A CA other than the SM's and the probe's, reached through its switch.
    let cas: Vec<usize> =
        (0..topo.nodes.len()).filter(|&i| topo.nodes[i].kind == NodeKind::Ca && i != s.drv.at.0).collect();
    let (ca, probe_host) = (cas[0], cas[cas.len() - 1]);
    let peer = topo.nodes[ca].peer(1).expect("cabled");
    let mut hops = routes[&peer.node].clone();
    hops.push(peer.port);
    let ca_path = DrPath::new(&hops).expect("route");

    // Two tables that are not the default: switch pair (2, 3) maps every SL to VL 1; the CA's
    // high-priority block gives VL 2 weight 9.
    let mut data = [0u8; SMP_DATA_LEN];
    data[..8].fill(0x11);
    dr_set(&mut s, &sw_path, SlToVlTable::ID, SlToVlTable::attr_mod(PortNum(2), PortNum(3)), data);
    let mut high = VlArbitrationTable::default();
    high.entries[0] = VlArbEntry { vl: 2, weight: 9 };
    let mut data = [0u8; SMP_DATA_LEN];
    high.emit(&mut data);
    let high_mod = VlArbitrationTable::attr_mod(VlArbitrationTable::HIGH_0_31, PortNum(0));
    dr_set(&mut s, &ca_path, VlArbitrationTable::ID, high_mod, data);

    // Nothing read yet: the sweep left the tables alone.
    assert_eq!(footprint(&s, "vl_tables"), 0);
    let sent_before = s.drv.sm.smp_counters().0;

    let probe = s.drv.fabric.attach(probe_host, 1).expect("probe");
    let asked_at = s.drv.fabric.now().0;
    let (st, all, answered_at) = ask_at(&mut s, probe, Method::GetTable, 0, &SlToVlTableRecord::default());
    assert_eq!(st, status::OK);
    let nodes = topo.nodes.len();
    assert_eq!(footprint(&s, "vl_tables"), nodes, "every node read");
    // Every switch: (N + 1)^2 maps; every CA port: one (records that fit in one MAD here).
    let want: usize = topo
        .nodes
        .iter()
        .map(|n| if n.kind == NodeKind::Switch { (usize::from(n.num_ports) + 1).pow(2) } else { 1 })
        .sum();
    let reads = s.drv.sm.smp_counters().0 - sent_before;
    assert!(reads as usize >= want, "{reads} SMPs for {want} maps");
    // The reads go to many nodes in turn: on the simulator's clock (10 µs per SMP at each
    // agent) the census takes a small part of reading one table after another.
    let census = answered_at - asked_at;
    eprintln!("census: {reads} reads in {census} ns of fabric time");
    assert!(census * 4 <= reads * 10_000, "{reads} reads answered in {census} ns");
    assert!(!all.is_empty());

    let sw_lid = s.snap.port(s.snap.by_guid(topo.nodes[sw].node_guid).expect("switch")).expect("port").lid;
    let ca_at = s.snap.by_guid(topo.nodes[ca].port_guid(1)).expect("ca");
    let ca_lid = s.snap.port(ca_at).expect("port").lid;
    let default_map: [u8; 16] = std::array::from_fn(|sl| if sl == 15 { 7 } else { sl as u8 });

    // The switch's maps into port 3: input 2 is the one set, the others the default.
    let m = SlToVlTableRecord::COMP_LID | SlToVlTableRecord::COMP_OUTPUT_PORT_NUM;
    let q = SlToVlTableRecord { lid: sw_lid, output_port: PortNum(3), ..Default::default() };
    let (st, into3) = ask(&mut s, probe, Method::GetTable, m, &q);
    assert_eq!(st, status::OK);
    let ports = usize::from(topo.nodes[sw].num_ports);
    assert_eq!(into3.len(), ports + 1, "{into3:?}");
    for r in &into3 {
        assert_eq!((r.lid, r.output_port), (sw_lid, PortNum(3)));
        let want = if r.input_port == PortNum(2) { [1; 16] } else { default_map };
        assert_eq!(r.table.vls, want, "input {}", r.input_port.0);
    }
    // Get with the whole key: one record; a port past the switch's: none.
    let key = m | SlToVlTableRecord::COMP_INPUT_PORT_NUM;
    let (st, one) = ask(&mut s, probe, Method::Get, key, &SlToVlTableRecord { input_port: PortNum(2), ..q });
    assert_eq!((st, one.len()), (status::OK, 1));
    assert_eq!(one[0].table.vls, [1; 16]);
    let past = SlToVlTableRecord { input_port: PortNum(u8::try_from(ports + 1).unwrap()), ..q };
    assert_eq!(ask(&mut s, probe, Method::Get, key, &past).0, status::SA_NO_RECORDS);
    // A CA: one map, ports 0/0.
    let q = SlToVlTableRecord { lid: ca_lid, ..Default::default() };
    let (st, ca_map) = ask(&mut s, probe, Method::GetTable, SlToVlTableRecord::COMP_LID, &q);
    assert_eq!(st, status::OK);
    assert_eq!(ca_map.len(), 1);
    assert_eq!(
        (ca_map[0].input_port, ca_map[0].output_port, ca_map[0].table.vls),
        (PortNum(0), PortNum(0), default_map)
    );

    // The CA's arbitration blocks: 1 (low priority) and 3 (high), its port number in each,
    // block 3 the one set; blocks 2 and 4 (entries 32..63) are past the port's caps of 8.
    let q = VlArbTableRecord { lid: ca_lid, ..Default::default() };
    let (st, blocks) = ask(&mut s, probe, Method::GetTable, VlArbTableRecord::COMP_LID, &q);
    assert_eq!(st, status::OK);
    assert_eq!(blocks.iter().map(|b| (b.output_port.0, b.block_num)).collect::<Vec<_>>(), [(1, 1), (1, 3)]);
    assert_eq!(blocks[1].table, high);
    let low: Vec<(u8, u8)> = blocks[0].table.entries[..8].iter().map(|e| (e.vl, e.weight)).collect();
    assert_eq!(low, [(0, 0), (1, 4), (2, 4), (3, 4), (4, 4), (5, 4), (6, 4), (7, 4)]);
    let m = VlArbTableRecord::COMP_LID | VlArbTableRecord::COMP_BLOCK_NUM;
    assert_eq!(ask(&mut s, probe, Method::Get, m, &VlArbTableRecord { block_num: 2, ..q }).0, status::SA_NO_RECORDS);
    // A switch port's blocks, by port and block.
    let m = VlArbTableRecord::COMP_LID | VlArbTableRecord::COMP_OUTPUT_PORT_NUM | VlArbTableRecord::COMP_BLOCK_NUM;
    let q = VlArbTableRecord { lid: sw_lid, output_port: PortNum(4), block_num: 1, ..Default::default() };
    let (st, one) = ask(&mut s, probe, Method::Get, m, &q);
    assert_eq!((st, one.len()), (status::OK, 1));
    assert_eq!(one[0].table.entries[1], VlArbEntry { vl: 1, weight: 4 });

    // Read once: later questions send no SMP.
    let sent = s.drv.sm.smp_counters().0;
    ask(&mut s, probe, Method::GetTable, 0, &VlArbTableRecord::default());
    assert_eq!(s.drv.sm.smp_counters().0, sent);

    // The CA crashes: the next sweep forgets its tables. It restarts with power-on tables: the
    // sweep after that finds it again and the census reads them (block 3 is the default again).
    s.drv.fabric.inject_fault(Fault::Crash(ca));
    s.drv.sweep(LIMIT, |_| {}).expect("swept");
    assert_eq!(footprint(&s, "vl_tables"), nodes - 1);
    s.drv.fabric.inject_fault(Fault::Restart(ca));
    s.drv.sweep(LIMIT, |_| {}).expect("swept");
    let quiet = s.drv.now() + 1_000_000_000;
    s.drv.run_until(quiet, |_| false);
    assert_eq!(footprint(&s, "vl_tables"), nodes);
    let q = VlArbTableRecord { lid: ca_lid, block_num: 3, ..Default::default() };
    let (st, back) = ask(&mut s, probe, Method::Get, VlArbTableRecord::COMP_LID | VlArbTableRecord::COMP_BLOCK_NUM, &q);
    assert_eq!((st, back.len()), (status::OK, 1));
    assert_eq!(back[0].table.entries[0], VlArbEntry { vl: 0, weight: 4 }, "read again after the restart");
}
