//! Quick sweeps: a switch that reported a port change (trap 128, or PortStateChange seen by a
//! light sweep) has its ports read, and nothing else. When the only change is links gone down,
//! and every node is still reachable without them, the model drops those links (both ends),
//! the directed routes are worked out again where they crossed them, and the sweep goes
//! straight to routing (a repair of the last tables) and the LFT blocks that change: no
//! rediscovery of the fabric, no LID or port configuration. Anything else (a port come up, a
//! node cut off, a read that fails, a node kept from an earlier sweep) falls back to a heavy
//! sweep. A switch's PortStateChange is cleared first and its ports are read once the clear is
//! answered (one round trip more): a port that changes after its read sets the flag again, for
//! the light sweep to find (cleared after the reads, such a change would be lost when its trap
//! is: suppressed, dropped, or routed over the cable just cut).
//!
//! Owns [`Quick`], a quick sweep in progress: the clears to send first and the reads they hold
//! back ([`Quick::start`], [`Quick::cleared`]), the answers so far, and the verdict on them
//! ([`Quick::judge`]), which updates the subnet it is given (the lost cables dropped, the
//! directed routes worked out again) and answers with values ([`Judged`]: the verdict, the
//! SMPs to queue, the cables lost). Whether a quick sweep may start
//! (a master, no sweep running, a completed sweep before), the pipeline after it (routing,
//! programming, the report: the heavy sweep's) and the cabling check of the lost cables are the
//! coordinator's (`Sm`, in `scheduling.rs`); this file reaches into nothing of it.

use std::collections::VecDeque;

use ibsm_mad::attrs::{PortInfo, PortState, SwitchInfo};
use ibsm_mad::{Attribute, DrPath, Guid, PortNum};

use super::state::{NodeIdx, Subnet};
use super::transactions::{Outcome, Req, Request};

/// A quick sweep in progress: the ports read so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Quick {
    /// Reads held until the clear of their switch's PortStateChange is answered.
    held: Vec<(NodeIdx, Vec<Request>)>,
    /// (switch, port, what it says now; `None`: no answer).
    reads: Vec<(NodeIdx, PortNum, Option<PortInfo>)>,
    /// Second round: the far ends of the lost cables were asked whether they are alive (a
    /// crashed switch takes all its cables with it: a heavy sweep drops it properly).
    far_ends: bool,
}

/// What the reads showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Links went down and the fabric stays connected: route and program.
    Route,
    /// Waiting for the far ends of the lost cables to answer.
    Wait,
    /// Nothing changed.
    Nothing,
    /// Something a quick sweep cannot handle: a heavy sweep.
    Heavy,
}

/// A cable by its two ends: (node GUID, port) each.
pub(crate) type Cable = ((Guid, u8), (Guid, u8));

/// The verdict on a round of reads, and what the coordinator queues for it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Judged {
    /// What the reads showed.
    pub verdict: Verdict,
    /// Reads of the lost cables' far ends, by their new routes: one try each (a far end that
    /// does not answer at once sends us to a heavy sweep).
    pub far_ends: Vec<Request>,
    /// The cables that went down (for the cabling check).
    pub lost: Vec<Cable>,
    /// The quick sweep's next round ([`Verdict::Wait`]: the far ends' answers).
    pub next: Option<Quick>,
    /// The subnet ports the verdict changed (both ends of each lost cable), for the routing
    /// view's relink ([`super::relink::LastView::touch`]).
    pub touched: Vec<(NodeIdx, PortNum)>,
}

impl Judged {
    /// A heavy sweep, nothing to queue.
    pub fn heavy() -> Judged {
        Judged { verdict: Verdict::Heavy, far_ends: Vec::new(), lost: Vec::new(), next: None, touched: Vec::new() }
    }
}

fn up(state: PortState) -> bool {
    matches!(state, PortState::Init | PortState::Armed | PortState::Active)
}

impl Quick {
    /// The reads of a quick sweep of `switches` in `subnet`: every port of each. `None` when a
    /// quick sweep cannot look into them (none named, one is not a switch, or the subnet
    /// holds nodes kept from an earlier sweep): a heavy sweep instead.
    pub fn reads(subnet: &Subnet, switches: &[NodeIdx]) -> Option<Vec<Request>> {
        let ok = !switches.is_empty()
            && !subnet.nodes.iter().any(|n| n.carried)
            && switches.iter().all(|&s| subnet.node(s).is_some_and(super::state::Node::is_switch));
        if !ok {
            return None;
        }
        let mut reads = Vec::new();
        for &s in switches {
            let Some(n) = subnet.node(s) else { continue };
            for p in 1..=n.info.num_ports {
                reads.push(Request::sweep(n.path, Req::CheckPortInfo { node: s, port: PortNum(p) }));
            }
        }
        Some(reads)
    }

    /// A quick sweep of `switches` in `subnet` (see [`Quick::reads`]) and the SMPs to send now:
    /// the write clearing PortStateChange of each switch whose SwitchInfo the model holds (its
    /// reads held until [`Quick::cleared`]), the reads of any other at once.
    pub fn start(subnet: &Subnet, switches: &[NodeIdx]) -> Option<(Quick, Vec<Request>)> {
        let mut reads = Quick::reads(subnet, switches)?;
        let mut quick = Quick::default();
        let mut now = Vec::new();
        for &s in switches {
            let Some(clear) = clear(subnet, s) else { continue };
            if quick.held.iter().any(|h| h.0 == s) {
                continue;
            }
            let (mine, rest) =
                reads.into_iter().partition(|r| matches!(r.req, Req::CheckPortInfo { node, .. } if node == s));
            reads = rest;
            quick.held.push((s, mine));
            now.push(clear);
        }
        now.extend(reads);
        Some((quick, now))
    }

    /// The write clearing `node`'s PortStateChange was answered (or failed: its ports are read
    /// all the same, and a flag left set brings a quick sweep later): the reads it held.
    pub fn cleared(&mut self, node: NodeIdx) -> Vec<Request> {
        let Some(i) = self.held.iter().position(|h| h.0 == node) else { return Vec::new() };
        self.held.swap_remove(i).1
    }

    /// A PortInfo read came back (or failed).
    pub fn on_read(&mut self, node: NodeIdx, port: PortNum, outcome: &Outcome) {
        let info = match outcome {
            Outcome::Reply { status: 0, data } => PortInfo::parse(data).ok(),
            _ => None,
        };
        self.reads.push((node, port, info));
    }

    /// Every read is in: what changed, and `subnet` updated when it is only links gone.
    pub fn judge(self, subnet: &mut Subnet) -> Judged {
        if self.far_ends {
            // Each far end answered, and its port is down as the model has it now.
            let alive = self.reads.iter().all(|(_, _, i)| i.is_some_and(|i| !up(i.port_state)));
            return Judged { verdict: if alive { Verdict::Route } else { Verdict::Heavy }, ..Judged::heavy() };
        }
        let mut lost = Vec::new();
        let mut read = Vec::new();
        for (node, port, info) in self.reads {
            let Some(info) = info else { return Judged::heavy() };
            let Some(rec) = subnet.node(node).and_then(|n| n.port(port)) else { return Judged::heavy() };
            let was = rec.remote.is_some() && rec.is_linked();
            match (was, up(info.port_state)) {
                (true, false) => lost.push((node, port, info)),
                // A port come up (a new cable, a node back): only discovery knows what is there.
                (false, true) => return Judged::heavy(),
                (true, true) if rec.info.map(|i| i.port_state) != Some(info.port_state) => return Judged::heavy(),
                _ => {}
            }
            if !read.contains(&node) {
                read.push(node);
            }
        }
        if lost.is_empty() {
            return Judged { verdict: Verdict::Nothing, ..Judged::heavy() };
        }
        let mut far = Vec::new();
        let mut cables = Vec::new();
        let mut touched = Vec::new();
        for (node, port, info) in lost {
            let remote = subnet.node(node).and_then(|n| n.port(port)).and_then(|r| r.remote);
            far.extend(remote);
            if let (Some(a), Some((rn, rp))) = (subnet.node(node), remote)
                && let Some(b) = subnet.node(rn)
            {
                cables.push(((a.info.node_guid, port.0), (b.info.node_guid, rp.0)));
            }
            if let Some(r) = subnet.nodes.get_mut(node).and_then(|n| n.port_mut(port)) {
                r.remote = None;
                r.info = Some(info);
            }
            touched.push((node, port));
            touched.extend(remote);
            // The other end went down with the cable.
            if let Some((rn, rp)) = remote
                && let Some(r) = subnet.nodes.get_mut(rn).and_then(|n| n.port_mut(rp))
            {
                r.remote = None;
                if let Some(i) = r.info.as_mut() {
                    i.port_state = PortState::Down;
                }
            }
        }
        if !reroute_paths(subnet) {
            return Judged { lost: cables, touched, ..Judged::heavy() };
        }
        // By the new routes: the old one of a switch may have crossed a lost cable.
        let mut judged = Judged { verdict: Verdict::Route, lost: cables, touched, ..Judged::heavy() };
        // Ask each far end (by its new route) before writing to it.
        far.retain(|f| !read.contains(&f.0));
        for (n, p) in far {
            let Some(node) = subnet.node(n) else {
                judged.verdict = Verdict::Heavy;
                return judged;
            };
            judged.far_ends.push(Request::sweep(node.path_for(p), Req::CheckPortInfo { node: n, port: p }));
        }
        if !judged.far_ends.is_empty() {
            judged.verdict = Verdict::Wait;
            judged.next = Some(Quick { far_ends: true, ..Quick::default() });
        }
        judged
    }
}

/// The write clearing switch `s`'s PortStateChange (a write of 1 clears it), in the sweep's
/// book; `None` when the model holds no SwitchInfo of it to write back.
fn clear(subnet: &Subnet, s: NodeIdx) -> Option<Request> {
    let n = subnet.node(s)?;
    let info = SwitchInfo { port_state_change: true, ..n.switch_info? };
    Some(Request::sweep(n.path, Req::SetSwitchInfo { node: s, info }))
}

/// Directed routes again, breadth-first from the SM's node over the links that remain;
/// `false` when a node can no longer be reached (a heavy sweep drops it properly).
fn reroute_paths(subnet: &mut Subnet) -> bool {
    let Some((local, _)) = subnet.local else { return false };
    let n = subnet.nodes.len();
    let mut seen = vec![false; n];
    let mut queue = VecDeque::new();
    seen[local] = true;
    queue.push_back(local);
    let mut ca_ports: Vec<(NodeIdx, PortNum, DrPath)> = Vec::new();
    let mut paths: Vec<Option<DrPath>> = vec![None; n];
    paths[local] = Some(DrPath::local());
    while let Some(u) = queue.pop_front() {
        let node = &subnet.nodes[u];
        // Only the SM's own CA and switches forward directed routes.
        if u != local && !node.is_switch() {
            continue;
        }
        let Some(base) = paths[u] else { continue };
        for (p, rec) in node.ports.iter().enumerate().skip(1) {
            let Some((v, q)) = rec.remote.filter(|_| rec.is_linked()) else { continue };
            let Ok(port) = u8::try_from(p) else { continue };
            let Ok(path) = base.push(port) else { continue };
            if subnet.nodes.get(v).is_some_and(|x| !x.is_switch()) {
                ca_ports.push((v, q, path));
            }
            if !seen[v] {
                seen[v] = true;
                paths[v] = Some(path);
                queue.push_back(v);
            }
        }
    }
    if seen.iter().any(|s| !s) {
        return false;
    }
    // The routes are not what the SA's snapshot shows: changed without marking the nodes.
    for (v, path) in paths.into_iter().enumerate() {
        if let Some(path) = path.filter(|_| v != local)
            && let Some(mut r) = subnet.nodes.routes_mut(v)
        {
            *r.path() = path;
        }
    }
    // A CA port's route enters through that port: the first (shortest) one found, none for
    // a port whose cable is gone. The SM's own node keeps its own.
    for i in (0..n).filter(|&i| i != local) {
        let Some(mut r) = subnet.nodes.routes_mut(i).filter(|r| !r.is_switch()) else { continue };
        for p in 1..r.port_count() {
            if let Some(slot) = r.port_path(p) {
                *slot = None;
            }
        }
    }
    for (v, q, path) in ca_ports {
        if v != local
            && let Some(slot) = subnet.nodes.routes_mut(v).as_mut().and_then(|r| r.port_path(usize::from(q.0)))
            && slot.is_none()
        {
            *slot = Some(Box::new(path));
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use ibsm_mad::attrs::NodeType;

    use super::*;
    use crate::core::testing::{add, node, star};
    use crate::core::transactions::Op;

    fn answer(state: PortState) -> Outcome {
        let mut data = [0u8; 64];
        PortInfo { port_state: state, ..PortInfo::default() }.emit(&mut data);
        Outcome::Reply { status: 0, data }
    }

    /// The star's switch (node 1) read: each port as the model has it, but `changed`.
    fn read_switch(s: &Subnet, changed: &[(u8, Outcome)]) -> Quick {
        let mut q = Quick::default();
        for r in Quick::reads(s, &[1]).unwrap() {
            let Req::CheckPortInfo { node, port } = r.req else { panic!("{r:?}") };
            let now = s.nodes[node].ports[usize::from(port.0)].remote.map_or(PortState::Down, |_| PortState::Active);
            let outcome = changed.iter().find(|c| c.0 == port.0).map_or_else(|| answer(now), |c| c.1.clone());
            q.on_read(node, port, &outcome);
        }
        q
    }

    /// The SM's CA (0x10) on port 1 of switch A (0x20), switch B (0x30) cabled to A twice (A's
    /// ports 4 and 5 to B's 1 and 2), a CA (0x103) on B's port 3.
    fn two_switches() -> Subnet {
        let mut s = Subnet::default();
        let sm = add(&mut s, node(NodeType::Ca, 0x10, 1));
        let a = add(&mut s, node(NodeType::Switch, 0x20, 6));
        let b = add(&mut s, node(NodeType::Switch, 0x30, 6));
        let ca = add(&mut s, node(NodeType::Ca, 0x103, 1));
        for (x, p, y, q) in [(sm, 1, a, 1), (a, 4, b, 1), (a, 5, b, 2), (b, 3, ca, 1)] {
            s.link((x, PortNum(p)), (y, PortNum(q)));
        }
        for n in [a, b] {
            s.nodes[n].switch_info = Some(SwitchInfo::default());
            for p in s.nodes[n].ports.iter_mut().skip(1).filter(|p| p.remote.is_none()) {
                p.info = Some(PortInfo { port_state: PortState::Down, ..PortInfo::default() });
            }
        }
        s.local = Some((sm, PortNum(1)));
        s.nodes[a].path = DrPath::local().push(1).unwrap();
        s.nodes[b].path = s.nodes[a].path.push(4).unwrap();
        s.nodes[ca].path = s.nodes[b].path.push(3).unwrap();
        s
    }

    #[test]
    fn a_quick_sweep_reads_every_port_of_switches_only() {
        let mut s = star(0x102, 0x103);
        let reads = Quick::reads(&s, &[1]).unwrap();
        assert_eq!(reads.len(), 6);
        assert!(reads.iter().all(|r| r.op == Op::Sweep && r.path == s.nodes[1].path));
        assert_eq!(Quick::reads(&s, &[]), None, "nothing to read");
        assert_eq!(Quick::reads(&s, &[2]), None, "a CA");
        assert_eq!(Quick::reads(&s, &[9]), None, "no such node");
        s.nodes[3].carried = true;
        assert_eq!(Quick::reads(&s, &[1]), None, "a node kept from an earlier sweep");
    }

    #[test]
    fn port_state_change_is_cleared_before_the_ports_are_read() {
        let mut s = two_switches();
        s.nodes[2].switch_info = None;
        // A (its SwitchInfo known): the clear alone, its reads held; B (none known): read at once.
        let (mut q, now) = Quick::start(&s, &[1, 2]).unwrap();
        assert_eq!(now.len(), 1 + 6);
        assert!(matches!(now[0].req, Req::SetSwitchInfo { node: 1, info } if info.port_state_change));
        assert_eq!((now[0].op, now[0].path), (Op::Sweep, s.nodes[1].path));
        assert!(now[1..].iter().all(|r| matches!(r.req, Req::CheckPortInfo { node: 2, .. })));
        assert!(q.cleared(2).is_empty(), "no clear of B");
        let held = q.cleared(1);
        assert_eq!(held.len(), 6);
        assert!(held.iter().all(|r| matches!(r.req, Req::CheckPortInfo { node: 1, .. }) && r.op == Op::Sweep));
        assert!(q.cleared(1).is_empty(), "released once");
        assert_eq!(Quick::start(&s, &[0]), None, "a CA");
    }

    #[test]
    fn nothing_changed_leaves_the_model_untouched() {
        let mut s = star(0x102, 0x103);
        s.nodes[1].switch_info = Some(SwitchInfo::default());
        let before = s.clone();
        let j = read_switch(&s, &[]).judge(&mut s);
        assert_eq!((j.verdict, j.lost.len(), j.far_ends.len(), j.next.is_none()), (Verdict::Nothing, 0, 0, true));
        assert_eq!(s.nodes, before.nodes, "the model is untouched");
    }

    #[test]
    fn a_port_come_up_a_failed_read_or_a_node_cut_off_needs_a_heavy_sweep() {
        let mut s = star(0x102, 0x103);
        let before = s.clone();
        assert_eq!(read_switch(&s, &[(4, answer(PortState::Init))]).judge(&mut s), Judged::heavy(), "a new cable");
        assert_eq!(read_switch(&s, &[(2, answer(PortState::Armed))]).judge(&mut s), Judged::heavy(), "a state change");
        assert_eq!(read_switch(&s, &[(2, Outcome::Timeout)]).judge(&mut s), Judged::heavy(), "no answer");
        assert_eq!(s.nodes, before.nodes);
        // The cable to 0x103 is gone: nothing else reaches it.
        let j = read_switch(&s, &[(3, answer(PortState::Down))]).judge(&mut s);
        assert_eq!(j.verdict, Verdict::Heavy);
        assert_eq!(j.lost, vec![((Guid(0x20), 3), (Guid(0x103), 1))]);
        assert!(j.far_ends.is_empty());
        assert_eq!(s.nodes[1].ports[3].remote, None, "dropped from the model, both ends");
        assert_eq!(s.nodes[3].ports[1].remote, None);
    }

    #[test]
    fn a_lost_cable_with_a_way_around_it_is_rerouted_once_the_far_end_says_it_is_down() {
        let mut s = two_switches();
        let mut q = Quick::default();
        for p in 1..=6 {
            let state = if [1, 5].contains(&p) { PortState::Active } else { PortState::Down };
            q.on_read(1, PortNum(p), &answer(state));
        }
        let j = q.judge(&mut s);
        assert_eq!(j.verdict, Verdict::Wait);
        assert_eq!(j.lost, vec![((Guid(0x20), 4), (Guid(0x30), 1))]);
        // B and its CA are reached through A's port 5 now.
        let via5 = DrPath::local().push(1).unwrap().push(5).unwrap();
        assert_eq!(s.nodes[2].path, via5);
        assert_eq!(s.nodes[3].path, via5.push(3).unwrap());
        assert_eq!(s.nodes[3].ports[1].path.as_deref(), Some(&via5.push(3).unwrap()));
        assert_eq!(j.far_ends.len(), 1);
        assert_eq!(
            (j.far_ends[0].req.clone(), j.far_ends[0].path),
            (Req::CheckPortInfo { node: 2, port: PortNum(1) }, via5)
        );
        // The far end says it is down: route.
        let mut next = j.next.clone().unwrap();
        next.on_read(2, PortNum(1), &answer(PortState::Down));
        assert_eq!(next.judge(&mut s).verdict, Verdict::Route);
        // It does not answer, or says it is up: a heavy sweep.
        let mut next = j.next.clone().unwrap();
        next.on_read(2, PortNum(1), &Outcome::Timeout);
        assert_eq!(next.judge(&mut s).verdict, Verdict::Heavy);
        let mut next = j.next.unwrap();
        next.on_read(2, PortNum(1), &answer(PortState::Active));
        assert_eq!(next.judge(&mut s).verdict, Verdict::Heavy);
    }

    #[test]
    fn a_lost_cable_between_two_switches_read_needs_no_far_end_read() {
        let mut s = two_switches();
        let mut q = Quick::default();
        for (n, p, state) in
            [(1, 4, PortState::Down), (1, 5, PortState::Active), (2, 1, PortState::Down), (2, 2, PortState::Active)]
        {
            q.on_read(n, PortNum(p), &answer(state));
        }
        let j = q.judge(&mut s);
        assert_eq!((j.verdict, j.far_ends.len()), (Verdict::Route, 0));
        assert_eq!(j.lost, vec![((Guid(0x20), 4), (Guid(0x30), 1))], "one cable, seen from both ends");
    }
}
