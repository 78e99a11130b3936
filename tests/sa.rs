//! The SA end to end on the simulated fabric.
//!
//! The SM sweeps a generated or example fabric; then queries go to [`ibsm::sa::serve`] with
//! the snapshot the core built (RMPP limits, so a GetTable carries every record) and, for the
//! wiring, through the fabric from a probe port as `saquery` would send them (single MADs, as
//! the simulator and ibsim carry). Expected answers come from the topology and from forwarding
//! tables read back from the simulated switches with directed-route SMPs, not from the SM.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::Path;

use ibsm::core::{Guid2Lid, Sm, SmConfig};
use ibsm::sa::{self, Answer, Limits, Live, SaState, Snapshot};
use ibsm::transport::sim::SimDriver;
use ibsm_mad::attrs::{LinearForwardingTable, NodeType, PortState, SmState};
use ibsm_mad::header::Method;
use ibsm_mad::ids::status;
use ibsm_mad::records::{
    LftRecord, LinkRecord, NodeRecord, PathRecord, PortInfoRecord, Selector, ServiceRecord, SmInfoRecord,
    SwitchInfoRecord, stride,
};
use ibsm_mad::sa::{SA_HEADER_LEN, SaHeader, request};
use ibsm_mad::smp::SmpRepr;
use ibsm_mad::{Attribute, DrPath, Gid, Guid, Lid, MAD_LEN, PKey, ids};
use ibsm_sim::fabric::{Dest, SimTime};
use ibsm_topology::{GenSpec, NodeKind, Topology};

const LIMIT: u64 = 600_000_000_000;
const PREFIX: u64 = 0xfe80_0000_0000_0000;

/// A swept fabric and the SA's snapshot of it.
struct Swept {
    topo: Topology,
    drv: SimDriver,
    snap: std::sync::Arc<Snapshot>,
}

fn sweep(topo: Topology, lmc: u8) -> Swept {
    let cfg = SmConfig { lmc, ..SmConfig::default() };
    let mut drv = SimDriver::new(&topo, 11, Sm::new(cfg, Guid2Lid::default()), None).expect("attach");
    let report = drv.sweep(LIMIT, |_| {}).expect("sweep report");
    assert!(report.complete, "{report:?}");
    let snap = drv.sm.snapshot().expect("a snapshot after the sweep");
    Swept { topo, drv, snap }
}

fn example(name: &str) -> Topology {
    Topology::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fabrics").join(name)).expect("example")
}

/// Records of an answer, split at the stride of `A`.
fn records<A: Attribute>(a: &Answer) -> Vec<A> {
    let data = a.bytes.get(SA_HEADER_LEN..).unwrap_or(&[]);
    let s = stride::<A>();
    data.chunks(s).take(a.records).map(|c| A::parse(c).expect("record parses")).collect()
}

impl Swept {
    fn ask<A: Attribute>(&self, method: Method, mask: u64, rec: &A) -> Answer {
        let live = Live::new(self.drv.sm.sm_info(false));
        let bytes = request(method, mask, 0x42, rec).expect("request");
        let a = sa::serve(&self.snap, &mut SaState::default(), &live, &bytes, self.snap.sm.lid, &Limits::default())
            .expect("answered");
        let h = SaHeader::from_bytes(&a.bytes).expect("answer header");
        assert_eq!(h.tid, 0x42);
        assert_eq!(h.status, a.status);
        a
    }

    /// Every end port as (topology node, port) with its port GUID.
    fn end_ports(&self) -> Vec<(usize, u8, Guid)> {
        let mut out = Vec::new();
        for (i, n) in self.topo.nodes.iter().enumerate() {
            if n.kind == NodeKind::Switch {
                out.push((i, 0, n.port_guid(0)));
            } else {
                for p in 1..=n.num_ports {
                    if n.peer(p).is_some() {
                        out.push((i, p, n.port_guid(p)));
                    }
                }
            }
        }
        out
    }

    fn lid_of(&self, guid: Guid) -> Lid {
        self.drv.sm.guid2lid().get(guid).map(|(lo, _)| lo).expect("port has a LID")
    }
}

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
    assert_eq!(
        s.ask(Method::GetTable, 0, &ibsm_mad::records::GuidInfoRecord::parse(&[0; 72]).unwrap()).status,
        status::BAD_METHOD_ATTR
    );
}

/// Forwarding entries read from the simulated switches by directed route from the SM's port.
struct Oracle {
    routes: HashMap<usize, Vec<u8>>,
    blocks: HashMap<(usize, u16), LinearForwardingTable>,
}

impl Oracle {
    fn new(s: &Swept) -> Oracle {
        Oracle::from_topology(&s.topo, s.drv.at)
    }

    /// Breadth-first directed routes from the SM's port `at` to every switch of `topo`.
    fn from_topology(topo: &Topology, at: (usize, u8)) -> Oracle {
        let (start, port) = at;
        let mut routes = HashMap::new();
        let mut q = VecDeque::new();
        if let Some(peer) = topo.nodes[start].peer(port) {
            routes.insert(peer.node, vec![port]);
            q.push_back(peer.node);
        }
        while let Some(i) = q.pop_front() {
            let n = &topo.nodes[i];
            for p in 1..=n.num_ports {
                let Some(peer) = n.peer(p) else { continue };
                if topo.nodes[peer.node].kind == NodeKind::Switch && !routes.contains_key(&peer.node) {
                    let mut r = routes[&i].clone();
                    r.push(p);
                    routes.insert(peer.node, r);
                    q.push_back(peer.node);
                }
            }
        }
        Oracle { routes, blocks: HashMap::new() }
    }

    /// The egress port switch `sw` holds for `lid`, read with an SMP from the SM's port (the SM
    /// is idle between sweeps; the test drains the answer itself).
    fn entry(&mut self, drv: &mut SimDriver, sw: usize, lid: u16) -> Option<u8> {
        let block = lid / 64;
        if !self.blocks.contains_key(&(sw, block)) {
            let path = DrPath::new(self.routes.get(&sw)?).ok()?;
            let tid = 0x7000_0000 + (sw as u64) * 4096 + u64::from(block);
            let smp = SmpRepr::get_dr(&path, ids::attr::LFT, u32::from(block), tid);
            drv.fabric.send(drv.agent, &smp.to_bytes(), Dest { dlid: Lid::PERMISSIVE, qpn: 0 });
            let t = drv.fabric.now().0 + 1_000_000_000;
            drv.fabric.run_until_idle(SimTime(t));
            while let Some(r) = drv.fabric.recv(drv.agent) {
                let Ok(resp) = SmpRepr::parse(&r.mad[..]) else { continue };
                if resp.tid & 0xffff_ffff == tid & 0xffff_ffff {
                    self.blocks.insert((sw, block), LinearForwardingTable::parse(&resp.data).ok()?);
                }
            }
        }
        self.blocks.get(&(sw, block)).map(|t| t.ports[usize::from(lid % 64)].0)
    }

    /// Switches a packet crosses from end port `src` to `dlid` (owned by `dest`), following the
    /// switches' own tables over the topology's cables; `None` if it never arrives.
    fn switches_crossed(
        &mut self,
        drv: &mut SimDriver,
        topo: &Topology,
        src: (usize, u8),
        dlid: u16,
        dest: (usize, u8),
    ) -> Option<u32> {
        if src == dest {
            return Some(0);
        }
        let mut at =
            if topo.nodes[src.0].kind == NodeKind::Switch { src.0 } else { topo.nodes[src.0].peer(src.1)?.node };
        let mut crossed = 1;
        loop {
            if (at, 0) == dest {
                return Some(crossed);
            }
            let out = self.entry(drv, at, dlid)?;
            let peer = topo.nodes[at].peer(out)?;
            if topo.nodes[peer.node].kind != NodeKind::Switch {
                return ((peer.node, peer.port) == dest).then_some(crossed);
            }
            at = peer.node;
            crossed += 1;
            if crossed > 64 {
                return None;
            }
        }
    }
}

fn path_query(slid: Option<Lid>, dlid: Option<Lid>, sgid: Option<Guid>, dgid: Option<Guid>) -> (u64, PathRecord) {
    let mut m = 0;
    let mut r = PathRecord::default();
    if let Some(l) = slid {
        m |= PathRecord::COMP_SLID;
        r.slid = l;
    }
    if let Some(l) = dlid {
        m |= PathRecord::COMP_DLID;
        r.dlid = l;
    }
    if let Some(g) = sgid {
        m |= PathRecord::COMP_SGID;
        r.sgid = Gid { prefix: PREFIX, guid: g };
    }
    if let Some(g) = dgid {
        m |= PathRecord::COMP_DGID;
        r.dgid = Gid { prefix: PREFIX, guid: g };
    }
    (m, r)
}

/// PacketLifeTime as the README states it: LifeTimeValue 18 plus log2 of the switches crossed.
fn expected_life(switches: u32) -> u8 {
    if switches == 0 { 0 } else { 18 + (u32::BITS - (switches - 1).leading_zeros()) as u8 }
}

#[test]
fn path_records_follow_the_tables_the_switches_hold() {
    let mut fab = sweep(example("fat-tree-3l-k4.net"), 0);
    let topo = fab.topo.clone();
    let mut oracle = Oracle::new(&fab);
    let ends = fab.end_ports();
    let mut checked = 0;
    let mut lifetimes = HashSet::new();
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
            lifetimes.insert(r.packet_life_time);
            // The same path by GIDs.
            let (mask, q) = path_query(None, None, Some(sg), Some(dg));
            assert_eq!(records::<PathRecord>(&fab.ask(Method::Get, mask, &q)), vec![r]);
            checked += 1;
        }
    }
    assert_eq!(checked, ends.len() * ends.len());
    assert!(lifetimes.len() >= 3, "paths of several lengths: {lifetimes:?}");

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

fn listen(drv: &mut SimDriver, probe: ibsm_sim::fabric::AgentId) -> Option<ibsm_sim::fabric::Received> {
    for _ in 0..1000 {
        if let Some(r) = drv.fabric.recv(probe) {
            return Some(r);
        }
        let step = drv.now() + 1_000_000;
        if drv.run_until(step, |_| false).is_none() && drv.fabric.next_event().is_none() {
            drv.fabric.advance_to(SimTime(step));
        }
    }
    None
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

/// Sends `rec` with `method` and `mask` to the SA through the core at `now` from `from`, with
/// `sm_key` in the SA header, and returns the answer's status and data.
fn through_core<A: Attribute>(
    drv: &mut SimDriver,
    at: u64,
    from: Lid,
    (method, mask, sm_key): (Method, u64, u64),
    rec: &A,
) -> (u16, Vec<u8>) {
    let mut bytes = request(method, mask, 0x77, rec).expect("request");
    bytes[36..44].copy_from_slice(&sm_key.to_be_bytes());
    drv.sm.handle_mad(at, &bytes, ibsm::core::MadSource::lid(from, 1));
    let t = drv.sm.poll_transmit(at).expect("an answer");
    let h = SaHeader::from_bytes(&t.bytes).expect("header");
    (h.status, t.bytes[SA_HEADER_LEN..].to_vec())
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
    // Delete by ServiceID answers with the record; a second Delete finds nothing.
    let (st, data) = ask(&mut drv, later, Method::Delete, ServiceRecord::COMP_SERVICE_ID, &db);
    assert_eq!((st, ServiceRecord::parse(&data).unwrap()), (status::OK, db));
    assert_eq!(ask(&mut drv, later, Method::Delete, ServiceRecord::COMP_SERVICE_ID, &db).0, status::SA_NO_RECORDS);
    assert_eq!(ask(&mut drv, later, Method::Get, 0, &db).0, status::SA_NO_RECORDS);
}

#[test]
fn the_sm_key_is_shown_only_to_requests_carrying_the_sa_key() {
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
    assert_eq!(key_seen(&mut drv, 0x55), 0xabcd, "trusted");
    assert_eq!(key_seen(&mut drv, 0), 0, "untrusted");
    assert_eq!(key_seen(&mut drv, 1), 0, "OpenSM's default is not this SA's key");
}

/// Everything the probe receives while the SM and fabric run for `ns` of virtual time.
fn hear_for(drv: &mut SimDriver, probe: ibsm_sim::fabric::AgentId, ns: u64) -> Vec<ibsm_sim::fabric::Received> {
    let end = drv.now() + ns;
    let mut heard = Vec::new();
    while drv.now() < end {
        let step = (drv.now() + 1_000_000).min(end);
        drv.run_until(step, |_| false);
        if drv.now() < step {
            drv.fabric.advance_to(SimTime(step));
        }
        while let Some(r) = drv.fabric.recv(probe) {
            heard.push(r);
        }
    }
    heard
}

#[test]
fn subscribers_get_reports_of_traps_and_of_ports_leaving_until_they_acknowledge() {
    use ibsm_mad::attrs::{Notice, NoticeDetails};
    use ibsm_mad::records::{InformInfo, InformInfoRecord};
    let topo = example("fat-tree-2l-k4.net");
    let (mut drv, probe, probe_guid, sm) = subscribed_probe(&topo);
    let victim = (0..topo.nodes.len()).rev().find(|&i| topo.nodes[i].kind == NodeKind::Ca).expect("a host");
    let send = |drv: &mut SimDriver, bytes: &[u8; MAD_LEN]| drv.fabric.send(probe, bytes, Dest { dlid: sm, qpn: 1 });
    let all = inform_all();
    // An untrusted subscription to a security trap by number is refused.
    let security = InformInfo { trap_number_or_device_id: 256, ..all };
    send(&mut drv, &request(Method::Set, 0, 0x62, &security).unwrap());
    let r = listen(&mut drv, probe).expect("answer");
    assert_eq!(SaHeader::from_bytes(&r.mad[..]).unwrap().status, status::SA_REQ_DENIED);
    // The probe sees its subscription.
    send(&mut drv, &request(Method::GetTable, 0, 0x63, &InformInfoRecord::parse(&[0; 60]).unwrap()).unwrap());
    let r = listen(&mut drv, probe).expect("answer");
    let rec = InformInfoRecord::parse(&r.mad[SA_HEADER_LEN..]).unwrap();
    assert_eq!(rec.subscriber_gid, Gid { prefix: PREFIX, guid: probe_guid });
    assert_eq!(rec.inform_info.trap_number_or_device_id, 0xffff);

    // The victim's cable is pulled at its leaf: the leaf traps (128), the SM forwards that and
    // sweeps; the victim's port is gone (65).
    let leaf = topo.nodes[victim].peer(1).expect("cabled");
    drv.fabric.inject_fault(ibsm_sim::fabric::Fault::LinkDown { node: leaf.node, port: leaf.port });
    let heard = hear_for(&mut drv, probe, 5_000_000_000);
    let reports: Vec<(u64, Notice)> = heard
        .iter()
        .filter_map(|r| {
            let h = SaHeader::from_bytes(&r.mad[..]).ok()?;
            (h.method == Method::Report).then(|| (h.tid, Notice::parse(&r.mad[SA_HEADER_LEN..]).expect("notice")))
        })
        .collect();
    let of = |n: u16| reports.iter().filter(|(_, r)| r.trap_number() == Some(n)).count();
    assert!(of(128) >= 1, "trap 128 forwarded: {reports:?}");
    let gone = Gid { prefix: PREFIX, guid: topo.nodes[victim].port_guid(1) };
    let lost: Vec<&(u64, Notice)> = reports.iter().filter(|(_, r)| r.trap_number() == Some(65)).collect();
    assert!(!lost.is_empty(), "65 for the lost port");
    assert!(lost.iter().all(|(_, n)| n.details == NoticeDetails::Trap65 { gid: gone }));
    // Nothing was acknowledged: every Report went out four times (first try and three retries).
    let tids: HashSet<u64> = reports.iter().map(|(t, _)| *t).collect();
    assert_eq!(reports.len(), tids.len() * 4, "{} reports, {} distinct", reports.len(), tids.len());
    let c = drv.sm.sa_report_counters();
    assert_eq!((c.expired, c.acknowledged), (tids.len() as u64, 0));

    // The cable comes back: the port returns (64); this time the probe acknowledges.
    drv.fabric.inject_fault(ibsm_sim::fabric::Fault::LinkUp { node: leaf.node, port: leaf.port });
    let mut acked = 0;
    let mut back = 0;
    let end = drv.now() + 5_000_000_000;
    while drv.now() < end {
        for r in hear_for(&mut drv, probe, 1_000_000) {
            let Ok(h) = SaHeader::from_bytes(&r.mad[..]) else { continue };
            if h.method != Method::Report {
                continue;
            }
            let n = Notice::parse(&r.mad[SA_HEADER_LEN..]).unwrap();
            if n.details == (NoticeDetails::Trap64 { gid: gone }) {
                back += 1;
            }
            let mut resp = r.mad;
            resp[3] = 0x86; // ReportResp
            send(&mut drv, &resp);
            acked += 1;
        }
    }
    assert_eq!(back, 1, "64 for the returning port, once: acknowledged, so not retried");
    let c2 = drv.sm.sa_report_counters();
    assert_eq!(c2.acknowledged, acked);
    assert_eq!(c2.expired, c.expired, "nothing more given up");
}

/// Ports switch `sw` forwards `mlid` to, read from the simulated switch itself (MFT blocks of
/// every position) over a directed route from the SM's port.
fn mft_ports(drv: &mut SimDriver, routes: &HashMap<usize, Vec<u8>>, topo: &Topology, sw: usize, mlid: u16) -> Vec<u8> {
    let (block, entry) = ibsm_mad::attrs::MulticastForwardingTable::locate(Lid(mlid)).expect("multicast LID");
    let path = DrPath::new(&routes[&sw]).expect("route");
    let mut ports = Vec::new();
    for position in 0..=topo.nodes[sw].num_ports / 16 {
        let attr_mod = ibsm_mad::attrs::MulticastForwardingTable::attr_mod(block, position);
        let tid = 0x6600_0000 + u64::from(attr_mod & 0xffff) + ((sw as u64) << 16);
        let smp = SmpRepr::get_dr(&path, ids::attr::MFT, attr_mod, tid);
        drv.fabric.send(drv.agent, &smp.to_bytes(), Dest { dlid: Lid::PERMISSIVE, qpn: 0 });
        let t = drv.fabric.now().0 + 1_000_000_000;
        drv.fabric.run_until_idle(SimTime(t));
        while let Some(r) = drv.fabric.recv(drv.agent) {
            let Ok(resp) = SmpRepr::parse(&r.mad[..]) else { continue };
            if resp.tid & 0xffff_ffff == tid & 0xffff_ffff {
                let t = ibsm_mad::attrs::MulticastForwardingTable::parse(&resp.data).expect("MFT");
                ports.extend(t.masks[entry].ports(position).map(|p| p.0));
            }
        }
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

/// The components a group creation names (everything the SA requires).
const MC_CREATE: u64 = {
    use ibsm_mad::records::McMemberRecord;
    McMemberRecord::COMP_MGID
        | McMemberRecord::COMP_PORT_GID
        | McMemberRecord::COMP_QKEY
        | McMemberRecord::COMP_PKEY
        | McMemberRecord::COMP_SL
        | McMemberRecord::COMP_FLOW_LABEL
        | McMemberRecord::COMP_TCLASS
        | McMemberRecord::COMP_JOIN_STATE
};

/// A generic subscription to every notice, Reports to QP 1, for the subscriber's own port.
fn inform_all() -> ibsm_mad::records::InformInfo {
    use ibsm_mad::records::InformInfo;
    InformInfo {
        gid: Gid::default(),
        lid_range_begin: InformInfo::ALL_LIDS,
        lid_range_end: Lid(0),
        is_generic: true,
        subscribe: true,
        trap_type: InformInfo::ALL_TYPES,
        trap_number_or_device_id: 0xffff,
        qpn: 1,
        resp_time_value: 18,
        producer_type_or_vendor_id: InformInfo::ALL_PRODUCERS,
    }
}

/// A SimDriver swept on `topo`, a probe on another host subscribed to every notice, its port
/// GUID, and the SM's LID.
fn subscribed_probe(topo: &Topology) -> (SimDriver, ibsm_sim::fabric::AgentId, Guid, Lid) {
    let mut drv = SimDriver::new(topo, 4, Sm::new(SmConfig::default(), Guid2Lid::default()), None).expect("attach");
    let report = drv.sweep(LIMIT, |_| {}).expect("up");
    let host = (0..topo.nodes.len()).find(|&i| topo.nodes[i].kind == NodeKind::Ca && i != drv.at.0).expect("host");
    let probe = drv.fabric.attach(host, 1).expect("probe");
    let all = inform_all();
    drv.fabric.send(probe, &request(Method::Set, 0, 0x61, &all).unwrap(), Dest { dlid: report.sm_lid, qpn: 1 });
    let r = listen(&mut drv, probe).expect("answer");
    assert_eq!(SaHeader::from_bytes(&r.mad[..]).unwrap().status, status::OK);
    (drv, probe, topo.nodes[host].port_guid(1), report.sm_lid)
}

#[test]
fn subscribers_hear_of_multicast_groups_created_and_deleted() {
    use ibsm_mad::attrs::{Notice, NoticeDetails};
    use ibsm_mad::records::{JoinState, McMemberRecord};
    let topo = example("fat-tree-2l-k4.net");
    let (mut drv, probe, probe_guid, sm) = subscribed_probe(&topo);
    let send = |drv: &mut SimDriver, bytes: &[u8; MAD_LEN]| drv.fabric.send(probe, bytes, Dest { dlid: sm, qpn: 1 });
    // A group created and deleted by the probe: 66, then 67, with its MGID.
    let mgid = Gid { prefix: 0xff12_a01c_0000_0000, guid: Guid(0x66) };
    let me = McMemberRecord {
        mgid,
        port_gid: Gid { prefix: PREFIX, guid: probe_guid },
        qkey: 5,
        pkey: PKey(0xffff),
        join_state: JoinState::FULL_MEMBER,
        ..McMemberRecord::default()
    };
    let create = MC_CREATE;
    let mut group_notices = Vec::new();
    for (method, mask) in [
        (Method::Set, create),
        (Method::Delete, McMemberRecord::COMP_MGID | McMemberRecord::COMP_PORT_GID | McMemberRecord::COMP_JOIN_STATE),
    ] {
        send(&mut drv, &request(method, mask, 0x70, &me).unwrap());
        for r in hear_for(&mut drv, probe, 100_000_000) {
            let Ok(h) = SaHeader::from_bytes(&r.mad[..]) else { continue };
            if h.method == Method::Report {
                group_notices.push(Notice::parse(&r.mad[SA_HEADER_LEN..]).unwrap().details);
                let mut resp = r.mad;
                resp[3] = 0x86;
                send(&mut drv, &resp);
            } else {
                assert_eq!(h.status, status::OK, "{method:?}");
            }
        }
    }
    assert_eq!(group_notices, vec![NoticeDetails::Trap66 { mgid }, NoticeDetails::Trap67 { mgid }]);
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
