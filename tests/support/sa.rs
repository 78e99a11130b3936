//! Helpers of the SA tests (`tests/sa*.rs`): a fabric swept by the SM on the simulator, SA
//! requests straight to `sa::serve` or through the core and the fabric, and an oracle that reads
//! forwarding tables back from the simulated switches with directed-route SMPs.

use std::collections::{HashMap, VecDeque};
use std::path::Path;

use ibsm::core::{Guid2Lid, Sm, SmConfig};
use ibsm::sa::{self, Answer, Limits, Live, SaState, Snapshot};
use ibsm::transport::sim::SimDriver;
use ibsm_mad::attrs::{LinearForwardingTable, SlToVlTable};
use ibsm_mad::header::Method;
use ibsm_mad::ids::status;
use ibsm_mad::records::{PathRecord, stride};
use ibsm_mad::sa::{SA_HEADER_LEN, SaHeader, request};
use ibsm_mad::smp::SmpRepr;
use ibsm_mad::{Attribute, DrPath, Gid, Guid, Lid, PortNum, ids};
use ibsm_sim::fabric::{Dest, SimTime};
use ibsm_topology::{NodeKind, Topology};

pub const LIMIT: u64 = 600_000_000_000;
pub const PREFIX: u64 = 0xfe80_0000_0000_0000;

/// A swept fabric and the SA's snapshot of it.
pub struct Swept {
    pub topo: Topology,
    pub drv: SimDriver,
    pub snap: std::sync::Arc<Snapshot>,
}

pub fn sweep(topo: Topology, lmc: u8) -> Swept {
    let cfg = SmConfig { lmc, ..SmConfig::default() };
    let mut drv = SimDriver::new(&topo, 11, Sm::new(cfg, Guid2Lid::default()), None).expect("attach");
    let report = drv.sweep(LIMIT, |_| {}).expect("sweep report");
    assert!(report.complete, "{report:?}");
    let snap = drv.sm.snapshot().expect("a snapshot after the sweep");
    Swept { topo, drv, snap }
}

pub fn example(name: &str) -> Topology {
    Topology::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fabrics").join(name)).expect("example")
}

/// Records of an answer, split at the stride of `A`.
pub fn records<A: Attribute>(a: &Answer) -> Vec<A> {
    let data = a.bytes.get(SA_HEADER_LEN..).unwrap_or(&[]);
    let s = stride::<A>();
    data.chunks(s).take(a.records).map(|c| A::parse(c).expect("record parses")).collect()
}

impl Swept {
    pub fn ask<A: Attribute>(&self, method: Method, mask: u64, rec: &A) -> Answer {
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
    pub fn end_ports(&self) -> Vec<(usize, u8, Guid)> {
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

    pub fn lid_of(&self, guid: Guid) -> Lid {
        self.drv.sm.guid2lid().get(guid).map(|(lo, _)| lo).expect("port has a LID")
    }
}

/// Forwarding entries read from the simulated switches by directed route from the SM's port.
pub struct Oracle {
    pub routes: HashMap<usize, Vec<u8>>,
    pub blocks: HashMap<(usize, u16), LinearForwardingTable>,
}

impl Oracle {
    pub fn new(s: &Swept) -> Oracle {
        Oracle::from_topology(&s.topo, s.drv.at)
    }

    /// Breadth-first directed routes from the SM's port `at` to every switch of `topo`.
    pub fn from_topology(topo: &Topology, at: (usize, u8)) -> Oracle {
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
    pub fn entry(&mut self, drv: &mut SimDriver, sw: usize, lid: u16) -> Option<u8> {
        let block = lid / 64;
        if !self.blocks.contains_key(&(sw, block)) {
            let path = DrPath::new(self.routes.get(&sw)?).ok()?;
            let data = dr_get(drv, &path, ids::attr::LFT, u32::from(block))?;
            self.blocks.insert((sw, block), LinearForwardingTable::parse(&data).ok()?);
        }
        self.blocks.get(&(sw, block)).map(|t| t.ports[usize::from(lid % 64)].0)
    }

    /// Switches a packet crosses from end port `src` to `dlid` (owned by `dest`), following the
    /// switches' own tables over the topology's cables; `None` if it never arrives.
    pub fn switches_crossed(
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

pub fn path_query(slid: Option<Lid>, dlid: Option<Lid>, sgid: Option<Guid>, dgid: Option<Guid>) -> (u64, PathRecord) {
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

pub fn listen(drv: &mut SimDriver, probe: ibsm_sim::fabric::AgentId) -> Option<ibsm_sim::fabric::Received> {
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

/// Sends `rec` with `method` and `mask` to the SA through the core at `now` from `from`, with
/// `sm_key` in the SA header, and returns the answer's status and data.
pub fn through_core<A: Attribute>(
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

/// Everything the probe receives while the SM and fabric run for `ns` of virtual time.
pub fn hear_for(drv: &mut SimDriver, probe: ibsm_sim::fabric::AgentId, ns: u64) -> Vec<ibsm_sim::fabric::Received> {
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

/// The components a group creation names (everything the SA requires).
pub const MC_CREATE: u64 = {
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
pub fn inform_all() -> ibsm_mad::records::InformInfo {
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
pub fn subscribed_probe(topo: &Topology) -> (SimDriver, ibsm_sim::fabric::AgentId, Guid, Lid) {
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

/// The data of a Get of `attr_id`/`attr_mod` sent along `path` from the SM's port and answered
/// by the simulated node (the SM is idle between sweeps; the caller drains the answer itself),
/// or `None` when no answer came.
pub fn dr_get(drv: &mut SimDriver, path: &DrPath, attr_id: u16, attr_mod: u32) -> Option<[u8; 64]> {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0x6000_0000);
    let tid = u64::from(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    let smp = SmpRepr::get_dr(path, attr_id, attr_mod, tid);
    drv.fabric.send(drv.agent, &smp.to_bytes(), Dest { dlid: Lid::PERMISSIVE, qpn: 0 });
    let t = drv.fabric.now().0 + 1_000_000_000;
    drv.fabric.run_until_idle(SimTime(t));
    let mut data = None;
    while let Some(r) = drv.fabric.recv(drv.agent) {
        let Ok(resp) = SmpRepr::parse(&r.mad[..]) else { continue };
        if resp.tid & 0xffff_ffff == tid {
            data = Some(resp.data);
        }
    }
    data
}

/// `topo` on the simulator (seed `seed`) with every switch's SL2VL set to VL 0 first
/// ([`all_on_vl0`]), swept once by an SM with `cfg`: the sweep complete, its snapshot taken.
pub fn swept_on_vl0(topo: &Topology, seed: u64, cfg: SmConfig) -> Swept {
    let mut drv = SimDriver::new(topo, seed, Sm::new(cfg, Guid2Lid::default()), None).expect("attach");
    all_on_vl0(&mut drv, topo);
    let report = drv.sweep(LIMIT, |_| {}).expect("a report");
    assert!(report.complete, "{report:?}");
    let snap = drv.sm.snapshot().expect("a snapshot");
    Swept { topo: topo.clone(), drv, snap }
}

/// Every switch's SL2VL on every input/output pair set to VL 0 for every SL, before any SM
/// runs (the simulator starts with SL n on VL n, which would hide an SM that writes nothing).
pub fn all_on_vl0(drv: &mut SimDriver, topo: &Topology) {
    let oracle = Oracle::from_topology(topo, drv.at);
    for (i, n) in topo.nodes.iter().enumerate().filter(|(_, n)| n.kind == NodeKind::Switch) {
        let path = DrPath::new(&oracle.routes[&i]).expect("path");
        for out in 1..=n.num_ports {
            for input in 0..=n.num_ports {
                let smp = SmpRepr::set_dr(
                    &path,
                    SlToVlTable::ID,
                    SlToVlTable::attr_mod(PortNum(input), PortNum(out)),
                    0x7000_0000,
                    [0; 64],
                );
                drv.fabric.send(drv.agent, &smp.to_bytes(), Dest { dlid: Lid::PERMISSIVE, qpn: 0 });
            }
        }
        drv.fabric.run_until_idle(SimTime(drv.fabric.now().0 + 1_000_000_000));
        while drv.fabric.recv(drv.agent).is_some() {}
    }
}

/// Reads back every switch's SL2VL on every input/output pair of live ports (input 0 included)
/// and hands each table to `each` with the switch's name and the pair; the tables read.
pub fn each_switch_sl2vl(drv: &mut SimDriver, topo: &Topology, mut each: impl FnMut(&str, u8, u8, [u8; 16])) -> usize {
    let oracle = Oracle::from_topology(topo, drv.at);
    let mut tables = 0;
    for (i, n) in topo.nodes.iter().enumerate().filter(|(_, n)| n.kind == NodeKind::Switch) {
        let path = DrPath::new(&oracle.routes[&i]).expect("path");
        let live: Vec<u8> = (1..=n.num_ports).filter(|&p| n.peer(p).is_some()).collect();
        for &out in &live {
            for input in std::iter::once(0).chain(live.iter().copied()) {
                let data = dr_get(drv, &path, SlToVlTable::ID, SlToVlTable::attr_mod(PortNum(input), PortNum(out)))
                    .expect("SL2VL answered");
                each(&n.name, input, out, SlToVlTable::parse(&data).expect("parses").vls);
                tables += 1;
            }
        }
    }
    tables
}

/// Reads back every switch's SL2VL on every input/output pair of live ports (input 0 included)
/// and asserts that SL n goes to VL n for the first `layers` SLs; the tables read.
pub fn sl_n_on_vl_n(drv: &mut SimDriver, topo: &Topology, layers: usize) -> usize {
    each_switch_sl2vl(drv, topo, |name, input, out, vls| {
        for (sl, &vl) in vls.iter().enumerate().take(layers) {
            assert_eq!(usize::from(vl), sl, "switch {name} {input}->{out}: SL {sl}");
        }
    })
}
