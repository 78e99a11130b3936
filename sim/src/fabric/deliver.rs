//! Moving packets: the public driving API of [`Fabric`], directed-route and LID-routed
//! forwarding, fault rules on cables, and hand-off to SMAs and agents.
//!
//! Directed routes follow the IBTA rules for outgoing (D=0) and returning (D=1) SMPs: the
//! sender's SMI moves the hop pointer to 1, every switch on the way records its arrival port in
//! the return path, the destination sees `hop_pointer == hop_count + 1`, and the response walks
//! the return path back, decrementing the hop pointer to 0 at the requester. Only permissive
//! DrSLID/DrDLID (pure directed routes) are modelled; SMPs with a LID-routed part are dropped and
//! counted as malformed. LID-routed packets follow each switch's LFT and cross only Active ports.
//! GSI packets carry a P_Key: a CA port takes one that matches its table (same partition, one of
//! the two a full member); an enforcing switch port checks the partition only. Every packet that
//! crosses a cable is counted on the ports at both ends (see `pma.rs`); PerfMgt requests go to
//! the node's PMA, not to an agent.

use ibsm_mad::smp::DrSmp;
use ibsm_mad::{Guid, Lid, MAD_LEN, PKey, ids};

use super::fault::{Fault, Verdict};
use super::state::{LState, NodeRef, PState, PortRef};
use super::{Agent, AgentId, Dest, Event, Fabric, Received, SimConfig, SimTime, Stats};
use crate::rng::Rng;
use crate::topology::{NodeKind, Topology};

/// Hops after which a LID-routed packet is considered looping and dropped.
const MAX_LID_HOPS: u32 = 64;

/// Where a packet in flight is headed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// The SMA of the node owning this port (the arrival port).
    Sma(PortRef),
    /// Agents at this port.
    Port(PortRef),
}

/// A packet in flight. Its MAD is boxed once, when it is sent: the box travels with the
/// packet through the event queue, carries the answer an SMA makes in its place, and is handed
/// to the agent it reaches ([`Received::mad`]).
#[derive(Debug)]
pub(crate) struct Packet {
    pub mad: Box<[u8; MAD_LEN]>,
    pub slid: Lid,
    pub sqpn: u32,
    pub target: Target,
    /// P_Key carried (0xffff for SMPs, which are not checked).
    pub pkey: PKey,
}

impl Packet {
    /// A packet carrying `mad`; the other fields are set when it is routed.
    fn new(mad: Box<[u8; MAD_LEN]>) -> Packet {
        Packet { mad, slid: Lid(0), sqpn: 0, target: Target::Port(0), pkey: PKey(0xffff) }
    }
}

/// Where a packet that crossed a cable arrived.
#[derive(Debug, Clone, Copy)]
struct Arrival {
    port: PortRef,
    /// The port's node and number.
    node: NodeRef,
    num: u8,
    /// The hop's latency, ns.
    lat: u64,
}

/// Why a packet did not make it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Drop {
    Malformed,
    NoRoute,
    Fault,
    Unreachable,
    PKey,
}

impl Fabric {
    /// Power-on fabric for `topo`.
    pub fn new(topo: &Topology, cfg: SimConfig) -> Fabric {
        let (nodes, ports, switches) = super::state::build(topo);
        Fabric {
            nodes,
            names: topo.nodes.iter().map(|n| n.node_desc().to_owned()).collect(),
            ports,
            switches,
            lft_blocks: super::lft::LftBlocks::default(),
            agents: Vec::new(),
            queue: super::queue::EventQueue::default(),
            now: SimTime(0),
            rng: Rng::new(cfg.seed),
            rules: Vec::new(),
            set_faults: Vec::new(),
            traps: std::collections::VecDeque::new(),
            reregistrations: std::collections::VecDeque::new(),
            cfg,
            stats: Stats::default(),
        }
    }

    /// Current virtual time.
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Packet counters.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Number of nodes.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Attaches an agent (an SM process) at `port` of `node`: a CA port (1..) or a switch's
    /// port 0. Returns `None` for a port that does not exist.
    pub fn attach(&mut self, node: NodeRef, port: u8) -> Option<AgentId> {
        let p = self.port_ref(node, port)?;
        let n = self.nodes.get(node)?;
        if n.kind == NodeKind::Switch && port != 0 {
            return None;
        }
        if n.kind != NodeKind::Switch && port == 0 {
            return None;
        }
        self.agents.push(Agent { port: p, inbox: std::collections::VecDeque::new(), is_sm: false });
        Some(AgentId((self.agents.len() - 1) as u32))
    }

    /// Marks the agent as an SM (sets or clears PortInfo.CapabilityMask.IsSM on its port), as
    /// opening or closing `/dev/infiniband/issmN` does. A change sends trap 144 to the master SM.
    pub fn set_is_sm(&mut self, agent: AgentId, is_sm: bool) {
        let Some(a) = self.agents.get_mut(agent.0 as usize) else { return };
        a.is_sm = is_sm;
        let p = a.port;
        let Some(port) = self.ports.get_mut(p as usize) else { return };
        let before = port.cap_mask;
        if is_sm {
            port.cap_mask |= super::state::cap::IS_SM;
        } else {
            port.cap_mask &= !super::state::cap::IS_SM;
        }
        if before != port.cap_mask {
            self.trap_144(p, false);
        }
    }

    /// Gives switch `node` its own SwitchInfo.MulticastFDBCap (`cap` entries from MLID 0xC000,
    /// 0 for none), in place of [`super::SimConfig::multicast_fdb_cap`]; not a switch: nothing.
    pub fn set_multicast_fdb_cap(&mut self, node: NodeRef, cap: u16) {
        let Some(s) = self.nodes.get(node).and_then(|n| n.switch) else { return };
        if let Some(sw) = self.switches.get_mut(s as usize) {
            sw.mcast_cap = Some(cap);
        }
    }

    /// Gives port `port` of node `node` a GUIDInfo table of `cap` entries (PortInfo.GUIDCap; a
    /// port starts with 1, its port GUID). Unknown port: nothing.
    pub fn set_guid_cap(&mut self, node: NodeRef, port: u8, cap: u8) {
        if let Some(p) = self.port_ref(node, port) {
            self.ports[p as usize].guid_cap = cap.max(1);
        }
    }

    /// The GUIDInfo table of port `port` of node `node` as SubnSet(GUIDInfo) left it: its
    /// GUIDCap entries, the port GUID first, unset entries 0.
    pub fn port_guids(&self, node: NodeRef, port: u8) -> Option<Vec<Guid>> {
        let p = &self.ports[self.port_ref(node, port)? as usize];
        let cap = usize::from(p.guid_cap.max(1));
        Some((0..cap).map(|i| p.alias(i)).collect())
    }

    /// Renames node `node` (as `rdma-ndd` does when a host boots): its NodeDescription becomes
    /// `text`, and trap 144 with NodeDescriptionChange goes to the master from the node's
    /// port 0 (switch) or from each of its ports (CA).
    pub fn set_node_desc(&mut self, node: NodeRef, text: &str) {
        let Some(name) = self.names.get_mut(node) else { return };
        text.clone_into(name);
        let n = &self.nodes[node];
        let (first, np, switch) = (n.first_port, n.num_ports, n.kind == NodeKind::Switch);
        let ports: Vec<PortRef> =
            if switch { vec![first] } else { (1..=np).map(|i| first + PortRef::from(i)).collect() };
        for p in ports {
            self.trap_144(p, true);
        }
    }

    /// Sends a MAD from an agent with the P_Key at index 0 of its port's table. Requests get
    /// TID bits 32..63 replaced by the agent id, as the kernel does, so responses find their
    /// way back to the sender.
    pub fn send(&mut self, agent: AgentId, mad: &[u8; MAD_LEN], dest: Dest) {
        self.send_pkey(agent, mad, dest, 0);
    }

    /// As [`Fabric::send`], with the P_Key at `pkey_index` of the agent port's P_Key table
    /// (ignored for SMPs, which carry no P_Key check). GSI packets are checked against the
    /// P_Key tables of enforcing switch ports on the way and of the destination port.
    pub fn send_pkey(&mut self, agent: AgentId, mad: &[u8; MAD_LEN], dest: Dest, pkey_index: u16) {
        self.send_boxed(agent, Box::new(*mad), dest, pkey_index);
    }

    /// As [`Fabric::send_pkey`], with the MAD in a box of its own: the box travels with the
    /// packet (and its answer) as it is, neither copied nor allocated again.
    pub fn send_boxed(&mut self, agent: AgentId, mad: Box<[u8; MAD_LEN]>, dest: Dest, pkey_index: u16) {
        self.stats.sent += 1;
        let Some(a) = self.agents.get(agent.0 as usize) else { return };
        let src = a.port;
        let mut pkt = Packet::new(mad);
        let buf = &mut *pkt.mad;
        if buf[3] & ids::method::RESPONSE == 0 {
            let tid = ibsm_mad::bits::u64_at(buf, 8);
            let tid = (tid & 0xffff_ffff) | (u64::from(agent.0) << 32);
            ibsm_mad::bits::put_u64(buf, 8, tid);
        }
        let now = self.now;
        let pkey = if is_smp(buf) {
            None
        } else {
            let key = self.ports[src as usize].pkey(usize::from(pkey_index));
            if !PKey(key).is_valid() {
                self.stats.dropped_pkey += 1;
                return;
            }
            Some(key)
        };
        self.inject_packet(now, src, pkt, dest, pkey);
    }

    /// Takes the next MAD that reached `agent`, if any.
    pub fn recv(&mut self, agent: AgentId) -> Option<Received> {
        self.agents.get_mut(agent.0 as usize)?.inbox.pop_front()
    }

    /// Whether a MAD that reached `agent` waits to be taken ([`Fabric::recv`]).
    pub fn has_mail(&self, agent: AgentId) -> bool {
        self.agents.get(agent.0 as usize).is_some_and(|a| !a.inbox.is_empty())
    }

    /// Time of the next queued event (packet arrival, scheduled fault, lease expiry).
    pub fn next_event(&self) -> Option<SimTime> {
        self.queue.peek_at().map(SimTime)
    }

    /// Processes every event up to and including `t`, then sets the clock to `t`.
    pub fn advance_to(&mut self, t: SimTime) {
        while let Some(at) = self.queue.peek_at() {
            if at > t.0 {
                break;
            }
            let Some((at, ev)) = self.queue.pop() else { break };
            self.now = self.now.max(SimTime(at));
            match ev {
                Event::Arrive(pkt) => self.arrive(pkt),
                Event::Serve(pkt, boots) => self.serve(pkt, boots),
                Event::Fault(f) => self.apply(*f),
                Event::LeaseCheck(p) => self.lease_check(p),
            }
        }
        self.now = self.now.max(t);
    }

    /// Processes events until none is left (or `limit` virtual time is reached).
    pub fn run_until_idle(&mut self, limit: SimTime) {
        while let Some(t) = self.next_event() {
            if t > limit {
                break;
            }
            self.advance_to(t);
        }
    }

    /// Applies a fault now.
    pub fn inject_fault(&mut self, f: Fault) {
        self.apply(f);
    }

    /// The traps the nodes sent (the last [`super::TRAP_LOG_LEN`]), oldest first, each with
    /// the time a TrapRepress for it came back, if one did.
    pub fn traps(&self) -> impl Iterator<Item = &super::TrapLog> {
        self.traps.iter()
    }

    /// The ClientReregister Sets CA ports took (the last [`super::TRAP_LOG_LEN`]), oldest
    /// first: (node, port, when).
    pub fn reregistrations(&self) -> impl Iterator<Item = &(NodeRef, u8, SimTime)> {
        self.reregistrations.iter()
    }

    /// Applies a fault at virtual time `at` (now, if `at` is in the past).
    pub fn schedule(&mut self, at: SimTime, f: Fault) {
        let at = at.max(self.now);
        self.push(at, Event::Fault(Box::new(f)));
    }

    pub(crate) fn push(&mut self, at: SimTime, ev: Event) {
        self.queue.push(at.0, ev);
    }

    pub(crate) fn port_ref(&self, node: NodeRef, port: u8) -> Option<PortRef> {
        let n = self.nodes.get(node)?;
        if port > n.num_ports {
            return None;
        }
        Some(n.first_port + PortRef::from(port))
    }

    pub(crate) fn is_switch_port(&self, p: PortRef) -> bool {
        self.ports
            .get(p as usize)
            .and_then(|port| self.nodes.get(port.node as usize))
            .is_some_and(|n| n.kind == NodeKind::Switch)
    }

    /// Routes a packet leaving `src` and queues its arrival. `pkey` is the P_Key a non-SMP
    /// packet carries (`None` for SMPs).
    pub(crate) fn inject(&mut self, at: SimTime, src: PortRef, mad: [u8; MAD_LEN], dest: Dest, pkey: Option<u16>) {
        self.inject_packet(at, src, Packet::new(Box::new(mad)), dest, pkey);
    }

    /// As [`Fabric::inject`], with the MAD in `pkt` (its other fields are set here): the box
    /// of a request travels on with its answer, one allocation for the round trip.
    fn inject_packet(&mut self, at: SimTime, src: PortRef, mut pkt: Packet, dest: Dest, pkey: Option<u16>) {
        let mad = &mut *pkt.mad;
        let routed = if dest.dlid == Lid::PERMISSIVE {
            self.route_dr(src, mad).map(|(t, lat)| (t, lat, Lid::PERMISSIVE))
        } else {
            let slid = self.source_lid(src);
            self.route_lid(src, dest.dlid.0, pkey).map(|(p, lat)| {
                let target = if mad[1] == ids::class::SUBN_LID && !Self::wants_agent(mad) {
                    Target::Sma(p)
                } else {
                    Target::Port(p)
                };
                (target, lat, slid)
            })
        };
        match routed {
            Ok((target, lat, slid)) => {
                // GSI (every class but the SMPs') travels QP1 to QP1.
                pkt.sqpn = u32::from(!is_smp(&pkt.mad));
                pkt.slid = slid;
                pkt.target = target;
                pkt.pkey = PKey(pkey.unwrap_or(0xffff));
                self.push(at.plus(lat), Event::Arrive(pkt));
            }
            Err(d) => self.count_drop(d),
        }
    }

    fn count_drop(&mut self, d: Drop) {
        match d {
            Drop::Malformed => self.stats.dropped_malformed += 1,
            Drop::NoRoute => self.stats.dropped_no_route += 1,
            Drop::Fault => self.stats.dropped_fault += 1,
            Drop::Unreachable => self.stats.dropped_unreachable += 1,
            Drop::PKey => self.stats.dropped_pkey += 1,
        }
    }

    /// SMP attributes that the node's SMA hands to an agent instead of answering itself.
    fn wants_agent(mad: &[u8; MAD_LEN]) -> bool {
        let method = mad[3];
        let attr = ibsm_mad::bits::u16_at(mad, 16);
        method & ids::method::RESPONSE != 0 || attr == ids::attr::SM_INFO || method == ids::method::TRAP
    }

    fn source_lid(&self, src: PortRef) -> Lid {
        let Some(p) = self.ports.get(src as usize) else { return Lid(0) };
        // A switch's LID lives on port 0; its SMA and agents send from there.
        Lid(p.lid)
    }

    /// The verdict of the rule chain for a packet crossing the cable at `port`.
    fn cross(&mut self, port: PortRef) -> Verdict {
        if self.rules.is_empty() {
            return Verdict::Pass { extra_ns: 0 };
        }
        let Some(p) = self.ports.get(port as usize) else { return Verdict::Drop };
        let here = (p.node as usize, p.num);
        let there = p.peer.and_then(|q| self.ports.get(q as usize)).map(|q| (q.node as usize, q.num));
        let mut extra = 0u64;
        for i in 0..self.rules.len() {
            let r = self.rules[i];
            let applies = match r.link {
                None => true,
                Some(l) => l == here || Some(l) == there,
            };
            if !applies {
                continue;
            }
            if r.drop > 0.0 && self.rng.chance(r.drop) {
                return Verdict::Drop;
            }
            extra += r.delay_ns;
            if r.jitter_ns > 0 {
                extra += self.rng.below(r.jitter_ns + 1);
            }
        }
        Verdict::Pass { extra_ns: extra }
    }

    /// Sends a packet out of `out` onto its cable: returns where it arrived. Only `out`'s
    /// record is read and written (the arrival port's node and number are kept on it, and the
    /// arrival port's receive count is `out`'s delivered count).
    #[inline]
    fn hop(&mut self, out: PortRef) -> Result<Arrival, Drop> {
        let Some(p) = self.ports.get_mut(out as usize) else { return Err(Drop::NoRoute) };
        if !p.link_up() {
            return Err(Drop::NoRoute);
        }
        let Some(peer) = p.peer else { return Err(Drop::NoRoute) };
        p.perf.count_xmit();
        let (node, num) = (p.peer_node, p.peer_num);
        match self.cross(out) {
            Verdict::Drop => {
                self.ports[out as usize].perf.count_lost();
                Err(Drop::Fault)
            }
            Verdict::Pass { extra_ns } => {
                Ok(Arrival { port: peer, node: node as usize, num, lat: self.cfg.timing.hop_ns + extra_ns })
            }
        }
    }

    /// Directed-route forwarding from `src` (see the module doc). Returns the target and latency.
    ///
    /// The whole path is walked at once, so the hop pointer is written once, with the value it
    /// has where the walk ends (what the hops in between would see is never read; a packet
    /// dropped on the way is dropped with its buffer).
    fn route_dr(&mut self, src: PortRef, mad: &mut [u8; MAD_LEN]) -> Result<(Target, u64), Drop> {
        let attr = u16::from_be_bytes([mad[16], mad[17]]);
        let attr_mod = u32::from_be_bytes([mad[20], mad[21], mad[22], mad[23]]);
        let Ok(mut smp) = DrSmp::new_checked(&mut mad[..]) else { return Err(Drop::Malformed) };
        if smp.dr_slid() != Lid::PERMISSIVE || smp.dr_dlid() != Lid::PERMISSIVE {
            return Err(Drop::Malformed);
        }
        let n = smp.hop_count();
        let Some(start) = self.ports.get(src as usize) else { return Err(Drop::NoRoute) };
        let mut node = start.node as usize;
        let mut lat = 0u64;
        if !smp.d_bit() {
            if smp.hop_pointer() != 0 {
                return Err(Drop::Malformed);
            }
            if n == 0 {
                smp.set_hop_pointer(1).map_err(|_| Drop::Malformed)?;
                return Ok((Target::Sma(src), 0));
            }
            // InitialPath[1..=n] (n <= 63 in a checked view: always within the 64 bytes).
            let mut path = [0u8; 64];
            path.copy_from_slice(smp.initial_path().get(..64).ok_or(Drop::Malformed)?);
            // The ports the walk arrives at are the ones the answer will leave by: touched
            // now, with the records the SMA will read (see the `warm` module).
            let mut touched = 0u32;
            for h in 1..=n {
                let out = self.exit_port(node, path[usize::from(h)], src)?;
                let arrival = self.hop(out)?;
                lat += arrival.lat;
                node = arrival.node;
                smp.set_return_path_port(h, arrival.num).map_err(|_| Drop::Malformed)?;
                if h < n {
                    touched ^= self.touch_port(arrival.port);
                    if self.nodes[node].kind != NodeKind::Switch {
                        return Err(Drop::NoRoute);
                    }
                    continue;
                }
                smp.set_hop_pointer(n + 1).map_err(|_| Drop::Malformed)?;
                if !self.nodes[node].alive {
                    return Err(Drop::Unreachable);
                }
                self.warm_sma(arrival.port, node, attr, attr_mod, touched);
                return Ok((Target::Sma(arrival.port), lat));
            }
            return Err(Drop::Malformed);
        }
        // Returning (D = 1): the responder's hop pointer is hop_count + 1.
        if smp.hop_pointer() != n.wrapping_add(1) {
            return Err(Drop::Malformed);
        }
        smp.set_hop_pointer(0).map_err(|_| Drop::Malformed)?;
        if n == 0 {
            return Ok((Target::Port(src), 0));
        }
        // ReturnPath[n..=1], as the switches on the way wrote it.
        let mut path = [0u8; 64];
        path.copy_from_slice(smp.return_path().get(..64).ok_or(Drop::Malformed)?);
        for h in (1..=n).rev() {
            let out = self.exit_port(node, path[usize::from(h)], src)?;
            let arrival = self.hop(out)?;
            lat += arrival.lat;
            node = arrival.node;
            if h > 1 {
                if self.nodes[node].kind != NodeKind::Switch {
                    return Err(Drop::NoRoute);
                }
                continue;
            }
            // Back at the requester: an SM on a switch sits on its management port 0.
            let n = &self.nodes[node];
            let home = if n.kind == NodeKind::Switch { n.first_port } else { arrival.port };
            return Ok((Target::Port(home), lat));
        }
        Err(Drop::Malformed)
    }

    /// The port a DR SMP leaves `node` through. On a CA the exit port must be `src`'s own port
    /// when the SMP starts there (a CA does not forward).
    #[inline]
    fn exit_port(&self, node: NodeRef, exit: u8, src: PortRef) -> Result<PortRef, Drop> {
        let n = &self.nodes[node];
        if exit == 0 || exit > n.num_ports {
            return Err(Drop::NoRoute);
        }
        let p = n.first_port + PortRef::from(exit);
        if n.kind != NodeKind::Switch && self.ports[src as usize].node as usize == node && p != src {
            // A CA answers and originates only on the port the SMP concerns.
            return Err(Drop::NoRoute);
        }
        Ok(p)
    }

    /// LID-routed forwarding from `src` to `dlid`: returns the destination port and latency.
    fn route_lid(&mut self, src: PortRef, dlid: u16, pkey: Option<u16>) -> Result<(PortRef, u64), Drop> {
        if dlid == 0 || dlid >= 0xc000 {
            return Err(Drop::NoRoute);
        }
        let Some(sp) = self.ports.get(src as usize) else { return Err(Drop::NoRoute) };
        let slid = sp.lid;
        let mut node = sp.node as usize;
        let mut lat = 0u64;
        let mut out = if self.nodes[node].kind == NodeKind::Switch {
            None
        } else {
            if sp.owns_lid(dlid) {
                return Ok((src, 0));
            }
            if !sp.is_active() {
                return Err(Drop::NoRoute);
            }
            Some(src)
        };
        for _ in 0..MAX_LID_HOPS {
            let exit = if let Some(p) = out {
                p
            } else {
                // At a switch: deliver to itself or look up the LFT.
                let n = &self.nodes[node];
                let port0 = n.first_port;
                if self.ports[port0 as usize].owns_lid(dlid) {
                    return Ok((port0, lat));
                }
                let sw = n.switch.and_then(|s| self.switches.get(s as usize)).ok_or(Drop::NoRoute)?;
                let e = sw.lft_port(&self.lft_blocks, dlid).ok_or(Drop::NoRoute)?;
                if e == 0 || e > n.num_ports {
                    return Err(Drop::NoRoute);
                }
                let p = port0 + PortRef::from(e);
                if !self.ports[p as usize].is_active() {
                    return Err(Drop::NoRoute);
                }
                if let Some(k) = pkey
                    && self.ports[p as usize].part_enf_out
                    && !self.port_accepts(p, k)
                {
                    self.pkey_violation(p, k, (slid, dlid), true);
                    return Err(Drop::PKey);
                }
                p
            };
            let Arrival { port: arr, lat: l, .. } = self.hop(exit)?;
            lat += l;
            let ap = &self.ports[arr as usize];
            if !ap.is_active() {
                return Err(Drop::NoRoute);
            }
            let owns = ap.owns_lid(dlid);
            let enforce_in = ap.part_enf_in;
            node = ap.node as usize;
            if !self.nodes[node].alive {
                return Err(Drop::Unreachable);
            }
            let is_switch = self.nodes[node].kind == NodeKind::Switch;
            if let Some(k) = pkey {
                // CAs always check; switch ports only with inbound enforcement on.
                if (!is_switch || enforce_in) && !self.port_accepts(arr, k) {
                    self.pkey_violation(arr, k, (slid, dlid), is_switch);
                    return Err(Drop::PKey);
                }
            }
            if !is_switch {
                return if owns { Ok((arr, lat)) } else { Err(Drop::NoRoute) };
            }
            out = None;
        }
        Err(Drop::NoRoute)
    }

    /// A packet reached the end of its path.
    fn arrive(&mut self, pkt: Packet) {
        match pkt.target {
            Target::Sma(p) => {
                let node = self.ports[p as usize].node as usize;
                if !self.nodes[node].alive {
                    self.stats.dropped_unreachable += 1;
                    return;
                }
                if Self::wants_agent(&pkt.mad) {
                    self.deliver_to_agent(p, pkt);
                    return;
                }
                if self.sma_service_ns(node) == 0 {
                    self.sma_answer(p, pkt);
                    return;
                }
                // Queued at the SMA: served when it is done with what came before.
                let done = self.sma_slot(node);
                let boots = self.nodes[node].boots;
                self.push(done, Event::Serve(pkt, boots));
            }
            // The PMA takes Get and Set; any other PerfMgt method (tests send PerfMgt Sends as
            // plain data-plane traffic) goes to an agent at the port.
            Target::Port(p)
                if pkt.mad[1] == ids::class::PERF && matches!(pkt.mad[3], ids::method::GET | ids::method::SET) =>
            {
                self.pma_answer(p, &pkt);
            }
            Target::Port(p) => self.deliver_to_agent(p, pkt),
        }
    }

    /// SMA service time of node `node`, ns.
    fn sma_service_ns(&self, node: NodeRef) -> u64 {
        let t = self.cfg.timing;
        match self.nodes.get(node) {
            Some(n) if n.kind == NodeKind::Switch => t.switch_sma_ns,
            _ => t.ca_sma_ns,
        }
    }

    /// Books the next service slot of `node`'s SMA: returns when the work given now is done
    /// (now, when the service time is 0).
    pub(crate) fn sma_slot(&mut self, node: NodeRef) -> SimTime {
        let service = self.sma_service_ns(node);
        let now = self.now;
        let Some(n) = self.nodes.get_mut(node) else { return now };
        if service == 0 {
            return now;
        }
        let done = n.sma_free.max(now).plus(service);
        n.sma_free = done;
        done
    }

    /// A queued SMP's service is over: the SMA handles it now, unless the node died or
    /// restarted meanwhile.
    fn serve(&mut self, pkt: Packet, boots: u32) {
        let Target::Sma(p) = pkt.target else { return };
        let node = self.ports[p as usize].node as usize;
        let n = &self.nodes[node];
        if !n.alive || n.boots != boots {
            self.stats.dropped_unreachable += 1;
            return;
        }
        self.sma_answer(p, pkt);
    }

    /// The SMA of the node owning port `p` handles an SMP that arrived there and sends the
    /// answer at once (made in the request's place).
    fn sma_answer(&mut self, p: PortRef, mut pkt: Packet) {
        let is_dr = pkt.mad[1] == ids::class::SUBN_DR;
        match self.sma(p, &mut pkt.mad, is_dr) {
            super::sma::Outcome::Reply => {
                self.stats.sma_answered += 1;
                let dest = Dest { dlid: if is_dr { Lid::PERMISSIVE } else { pkt.slid }, qpn: 0 };
                let src = if is_dr { p } else { self.reply_port(p) };
                self.inject_packet(self.now, src, pkt, dest, None);
            }
            super::sma::Outcome::ToAgent => self.deliver_to_agent(p, pkt),
            super::sma::Outcome::Silent => {}
        }
    }

    /// The port a LID-routed reply leaves from: a switch answers from port 0.
    pub(crate) fn reply_port(&self, p: PortRef) -> PortRef {
        let port = &self.ports[p as usize];
        let n = &self.nodes[port.node as usize];
        if n.kind == NodeKind::Switch { n.first_port } else { p }
    }

    /// Hands a packet to the right agent at port `p`: a response to the agent named in the TID,
    /// a request to the SM agent there.
    fn deliver_to_agent(&mut self, p: PortRef, pkt: Packet) {
        let is_resp = pkt.mad[3] & ids::method::RESPONSE != 0;
        let tid = ibsm_mad::bits::u64_at(&pkt.mad[..], 8);
        let want = (tid >> 32) as u32;
        let idx = if is_resp {
            self.agents.get(want as usize).filter(|a| a.port == p).map(|_| want as usize)
        } else {
            // A request goes to the SM at that port, or else to the first agent there.
            let at_port = |a: &Agent| a.port == p;
            self.agents.iter().position(|a| at_port(a) && a.is_sm).or_else(|| self.agents.iter().position(at_port))
        };
        let Some(i) = idx else {
            if !is_resp && pkt.mad[1] != ids::class::SUBN_ADM && pkt.mad[3] != ids::method::TRAP {
                // No SM here: the SMA answers "unsupported" for SMInfo, like a port without SM.
                let is_dr = pkt.mad[1] == ids::class::SUBN_DR;
                let mut mad = *pkt.mad;
                if ibsm_mad::smp::make_response(&mut mad, ids::status::BAD_METHOD_ATTR).is_ok() {
                    let dest = Dest { dlid: if is_dr { Lid::PERMISSIVE } else { pkt.slid }, qpn: 0 };
                    let node = self.ports[p as usize].node as usize;
                    let at = self.sma_slot(node);
                    self.inject(at, p, mad, dest, None);
                    return;
                }
            }
            self.stats.dropped_unreachable += 1;
            return;
        };
        self.stats.delivered += 1;
        let pkey_index = self.ports.get(p as usize).map_or(0, |port| {
            let want = pkt.pkey.0 & 0x7fff;
            let len = port.pkeys().len().max(1);
            (0..len).find(|&i| port.pkey(i) & 0x7fff == want).map_or(0, |i| i as u16)
        });
        let rec = Received { mad: pkt.mad, slid: pkt.slid, sqpn: pkt.sqpn, pkey: pkt.pkey, pkey_index, at: self.now };
        self.agents[i].inbox.push_back(rec);
    }

    /// Applies a fault.
    fn apply(&mut self, f: Fault) {
        match f {
            Fault::LinkDown { node, port } => {
                if let Some(p) = self.port_ref(node, port) {
                    self.set_cable(p, false);
                }
            }
            Fault::LinkUp { node, port } => {
                if let Some(p) = self.port_ref(node, port) {
                    self.set_cable(p, true);
                }
            }
            Fault::Crash(node) => self.crash(node),
            Fault::Restart(node) => self.restart(node),
            Fault::SetGuid { node, guid } => self.set_guid(node, guid),
            Fault::AddRule(r) => self.rules.push(r),
            Fault::ClearRules => self.rules.clear(),
            Fault::FailSets(f) => self.set_faults.push(f),
            Fault::ClearSetFaults => self.set_faults.clear(),
            Fault::LinkErrors { node, port, rate } => self.set_link_errors(node, port, rate),
        }
    }

    /// Plugs or pulls the cable at `p`; both ends change state and switches raise trap 128.
    fn set_cable(&mut self, p: PortRef, up: bool) {
        let Some(peer) = self.ports.get(p as usize).and_then(|x| x.peer) else { return };
        for q in [p, peer] {
            self.ports[q as usize].cable = up;
        }
        self.retrain(p);
    }

    /// Re-evaluates the physical state of the link at `p` (both ends) after a change.
    pub(crate) fn retrain(&mut self, p: PortRef) {
        let Some(peer) = self.ports.get(p as usize).and_then(|x| x.peer) else { return };
        let alive = |f: &Fabric, q: PortRef| {
            let port = &f.ports[q as usize];
            f.nodes[port.node as usize].alive && port.cable && port.phys != PState::Disabled
        };
        let up = alive(self, p) && alive(self, peer);
        for q in [p, peer] {
            let port = &mut self.ports[q as usize];
            let was = (port.phys, port.state);
            if port.phys != PState::Disabled {
                port.phys = if up { PState::LinkUp } else { PState::Polling };
            }
            port.state = if up { LState::Init } else { LState::Down };
            if was != (port.phys, port.state) {
                self.port_changed(q);
            }
        }
    }

    /// Marks a switch's PortStateChange and sends trap 128 for a change at port `q`.
    fn port_changed(&mut self, q: PortRef) {
        let node = self.ports[q as usize].node as usize;
        if !self.nodes[node].alive {
            return;
        }
        if let Some(s) = self.nodes[node].switch {
            if let Some(sw) = self.switches.get_mut(s as usize) {
                sw.port_state_change = true;
            }
            let port0 = self.nodes[node].first_port;
            self.trap_128(port0);
        }
    }

    fn crash(&mut self, node: NodeRef) {
        let Some(n) = self.nodes.get_mut(node) else { return };
        if !n.alive {
            return;
        }
        n.alive = false;
        let (first, np) = (n.first_port, n.num_ports);
        for i in 1..=np {
            self.retrain(first + PortRef::from(i));
        }
    }

    fn restart(&mut self, node: NodeRef) {
        let Some(n) = self.nodes.get(node) else { return };
        if n.alive {
            return;
        }
        let (first, np, kind) = (n.first_port, n.num_ports, n.kind);
        // A port's receive count is what its peer delivered (see `PortPerf`): the peers count
        // on past this node's send counts going back to 0, and this node's ports count from
        // what their peers have delivered so far (after the reset, for a cable between two
        // of its own ports).
        for q in first..=first + PortRef::from(np) {
            let port = &self.ports[q as usize];
            if let Some(peer) = port.peer {
                let delivered = port.perf.delivered();
                self.ports[peer as usize].perf.shift_rcv_base(delivered.wrapping_neg());
            }
        }
        // Power-on state: no LIDs, keys or tables; cables as they were.
        for i in 0..=np {
            let q = (first + PortRef::from(i)) as usize;
            let p = &self.ports[q];
            // Identity and cabling survive the restart; everything set by an SM does not.
            let mut fresh = p.clone();
            fresh.lid = 0;
            fresh.lmc = 0;
            fresh.sm_lid = 0;
            fresh.m_key = 0;
            fresh.protect = 0;
            fresh.lease = 0;
            fresh.lease_deadline = None;
            fresh.reset_pkeys();
            fresh.reset_vlarb();
            fresh.perf.power_on(self.now);
            fresh.state = if kind == NodeKind::Switch && i == 0 { LState::Active } else { LState::Down };
            fresh.phys = if kind == NodeKind::Switch && i == 0 { PState::LinkUp } else { PState::Polling };
            fresh.part_enf_in = false;
            fresh.part_enf_out = false;
            fresh.cap_mask &= !super::state::cap::IS_SM;
            self.ports[q] = fresh;
        }
        for q in first..=first + PortRef::from(np) {
            if let Some(peer) = self.ports[q as usize].peer {
                let delivered = self.ports[peer as usize].perf.delivered();
                self.ports[q as usize].perf.shift_rcv_base(delivered);
            }
        }
        if let Some(s) = self.nodes[node].switch {
            let sw = &mut self.switches[s as usize];
            sw.lft.clear(&mut self.lft_blocks);
            sw.lft_top = 0;
            sw.mft.clear();
            sw.mft_top = 0;
            sw.port_state_change = false;
            sw.sl2vl.clear();
        }
        let n = &mut self.nodes[node];
        n.alive = true;
        n.boots = n.boots.wrapping_add(1);
        n.sma_free = SimTime(0);
        for i in 1..=np {
            self.retrain(first + PortRef::from(i));
        }
    }

    fn set_guid(&mut self, node: NodeRef, guid: ibsm_mad::Guid) {
        let Some(n) = self.nodes.get_mut(node) else { return };
        let old = n.guid.0;
        n.guid = guid;
        let (first, np, kind) = (n.first_port, n.num_ports, n.kind);
        for i in 0..=np {
            let p = &mut self.ports[(first + PortRef::from(i)) as usize];
            p.guid = if kind == NodeKind::Switch {
                guid
            } else {
                ibsm_mad::Guid(guid.0.wrapping_add(p.guid.0.wrapping_sub(old)))
            };
        }
    }

    /// Delivers an agent-independent check of M_Key leases (see `sma`).
    fn lease_check(&mut self, p: PortRef) {
        let now = self.now;
        if let Some(port) = self.ports.get_mut(p as usize)
            && port.lease_deadline.is_some_and(|d| d.get() <= now.0)
        {
            port.lease_deadline = None;
            port.protect = 0;
        }
    }
}

/// SMPs (classes 0x01 and 0x81) travel on VL15 and are exempt from P_Key checks.
fn is_smp(mad: &[u8; MAD_LEN]) -> bool {
    matches!(mad[1], ids::class::SUBN_LID | ids::class::SUBN_DR)
}

impl Fabric {
    /// The port's P_Key table holds a key that matches `key`. At a CA port: the same
    /// partition, at least one of the two a full member. At an enforcing switch port: the same
    /// partition, whatever the membership: a switch port holds its CA's table, limited entries
    /// included, and passes a limited member's packets to a full member; the membership rule
    /// is the receiving CA's to apply (as an SM that copies a CA's table to the switch port
    /// facing it, OpenSM's way, relies on).
    fn port_accepts(&self, p: PortRef, key: u16) -> bool {
        let port = &self.ports[p as usize];
        let n = port.pkeys().len().max(1);
        let key = PKey(key);
        if self.is_switch_port(p) {
            key.is_valid() && (0..n).any(|i| PKey(port.pkey(i)).is_valid() && PKey(port.pkey(i)).base() == key.base())
        } else {
            (0..n).any(|i| PKey(port.pkey(i)).matches(key))
        }
    }

    /// Counts a P_Key violation at port `p` and raises trap 257 (at a CA) or 259 (at a switch
    /// port) to the SM.
    fn pkey_violation(&mut self, p: PortRef, key: u16, lids: (u16, u16), at_switch: bool) {
        let port = &mut self.ports[p as usize];
        port.pkey_violations = port.pkey_violations.saturating_add(1);
        self.trap_pkey(p, key, lids, at_switch);
    }
}
