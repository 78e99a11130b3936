//! Quick sweeps: a switch that reported a port change (trap 128, or PortStateChange seen by a
//! light sweep) has its ports read, and nothing else. When the only change is links gone down,
//! and every node is still reachable without them, the model drops those links (both ends),
//! the directed routes are worked out again where they crossed them, and the sweep goes
//! straight to routing (a repair of the last tables) and the LFT blocks that change: no
//! rediscovery of the fabric, no LID or port configuration. Anything else (a port come up, a
//! node cut off, a read that fails, a node kept from an earlier sweep) falls back to a heavy
//! sweep. Both ends' switches get their PortStateChange cleared.
//!
//! Owns the quick sweep's reads and its verdict; the pipeline after it (routing, programming,
//! the report) is the heavy sweep's. The coordinator's side of light sweeps (`light.rs`) is
//! here too: starting one when due, and acting on its verdict.

use std::collections::VecDeque;

use ibsm_mad::attrs::{PortInfo, PortState};
use ibsm_mad::{Attribute, DrPath, PortNum};

use super::state::{NodeIdx, SmState, SweepPhase};
use super::transactions::{Op, Outcome, Req, Request};
use super::{ComputeStep, Sm};

/// A quick sweep in progress: the ports read so far.
#[derive(Debug, Clone, Default)]
pub struct Quick {
    /// (switch, port, what it says now; `None`: no answer).
    reads: Vec<(NodeIdx, PortNum, Option<PortInfo>)>,
    /// Second round: the far ends of the lost cables were asked whether they are alive (a
    /// crashed switch takes all its cables with it: a heavy sweep drops it properly).
    far_ends: bool,
}

/// What the reads showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Links went down and the fabric stays connected: route and program.
    Route,
    /// Waiting for the far ends of the lost cables to answer.
    Wait,
    /// Nothing changed.
    Nothing,
    /// Something a quick sweep cannot handle: a heavy sweep.
    Heavy,
}

fn up(state: PortState) -> bool {
    matches!(state, PortState::Init | PortState::Armed | PortState::Active)
}

impl Sm {
    /// After a heavy sweep: the next light sweep one interval from now.
    pub(super) fn schedule_light(&mut self) {
        self.light.schedule(self.now, self.cfg.sweep_interval_ns);
    }

    /// Starts the light sweep when it is due (a master with no sweep running).
    pub(super) fn light_timer(&mut self) {
        if !self.light.take_due(self.now) || self.state != SmState::Master || self.phase != SweepPhase::Up {
            return;
        }
        let reads = self.light.start(&self.subnet, self.election.found(), self.port_guid, self.cfg.sm_key);
        if reads.is_empty() {
            self.schedule_light();
        }
        for r in reads {
            self.tx.push(r);
        }
    }

    /// One light read less to wait for; at the last, acts on the light sweep's verdict.
    pub(super) fn light_read_done(&mut self) {
        let Some(verdict) = self.light.read_done() else { return };
        let master_up = self.state == SmState::Master && self.phase == SweepPhase::Up;
        match verdict {
            super::light::Verdict::Failed if master_up => self.start_sweep(self.now),
            // Switches that saw a port change: a quick sweep of them (heavy if it cannot).
            super::light::Verdict::Changed(psc) if master_up => self.sweep_switches(&psc),
            _ if self.phase == SweepPhase::Up => self.schedule_light(),
            _ => {}
        }
    }
    /// Starts a quick sweep of `switches`; `false` (nothing started) when one is not possible
    /// now (not master, a sweep running, no completed sweep yet, nodes kept from an earlier
    /// sweep): the caller sweeps heavily instead.
    pub(super) fn start_quick_sweep(&mut self, switches: &[NodeIdx]) -> bool {
        let ok = self.state == SmState::Master
            && self.phase == SweepPhase::Up
            && self.sa.snapshot().is_some()
            && !switches.is_empty()
            && !self.subnet.nodes.iter().any(|n| n.carried)
            && switches.iter().all(|&s| self.subnet.node(s).is_some_and(super::state::Node::is_switch));
        if !ok {
            return false;
        }
        self.begin_sweep(super::schedule::SweepKind::Quick);
        self.quick = Some(Quick::default());
        self.enter(SweepPhase::Discovering);
        for &s in switches {
            let Some(n) = self.subnet.node(s) else { continue };
            let (path, guid, ports) = (n.path, n.info.node_guid, n.info.num_ports);
            self.traps.reading(guid);
            for p in 1..=ports {
                self.tx.push(Request::sweep(path, Req::CheckPortInfo { node: s, port: PortNum(p) }));
            }
        }
        self.advance();
        true
    }

    /// A quick sweep's PortInfo read came back (or failed).
    pub(super) fn on_check_port_info(&mut self, node: NodeIdx, port: PortNum, outcome: &Outcome) {
        let info = match outcome {
            Outcome::Reply { status: 0, data } => PortInfo::parse(data).ok(),
            _ => None,
        };
        if let Some(q) = self.quick.as_mut() {
            q.reads.push((node, port, info));
        }
    }

    /// Every read is in: what changed, and the model updated when it is only links gone.
    pub(super) fn quick_verdict(&mut self) -> Verdict {
        let Some(q) = self.quick.take() else { return Verdict::Heavy };
        if q.far_ends {
            // Each far end answered, and its port is down as the model has it now.
            let alive = q.reads.iter().all(|(_, _, i)| i.is_some_and(|i| !up(i.port_state)));
            return if alive { Verdict::Route } else { Verdict::Heavy };
        }
        let mut lost = Vec::new();
        let mut read = Vec::new();
        for (node, port, info) in q.reads {
            let Some(info) = info else { return Verdict::Heavy };
            let Some(rec) = self.subnet.node(node).and_then(|n| n.port(port)) else { return Verdict::Heavy };
            let was = rec.remote.is_some() && rec.is_linked();
            match (was, up(info.port_state)) {
                (true, false) => lost.push((node, port, info)),
                // A port come up (a new cable, a node back): only discovery knows what is there.
                (false, true) => return Verdict::Heavy,
                (true, true) if rec.info.map(|i| i.port_state) != Some(info.port_state) => return Verdict::Heavy,
                _ => {}
            }
            if !read.contains(&node) {
                read.push(node);
            }
        }
        if lost.is_empty() {
            self.clear_port_state_change(&read, Op::Light);
            return Verdict::Nothing;
        }
        let mut far = Vec::new();
        let mut cables = Vec::new();
        for (node, port, info) in lost {
            let remote = self.subnet.node(node).and_then(|n| n.port(port)).and_then(|r| r.remote);
            far.extend(remote);
            if let (Some(a), Some((rn, rp))) = (self.subnet.node(node), remote)
                && let Some(b) = self.subnet.node(rn)
            {
                cables.push(((a.info.node_guid, port.0), (b.info.node_guid, rp.0)));
            }
            if let Some(r) = self.subnet.nodes.get_mut(node).and_then(|n| n.port_mut(port)) {
                r.remote = None;
                r.info = Some(info);
            }
            // The other end went down with the cable.
            if let Some((rn, rp)) = remote
                && let Some(r) = self.subnet.nodes.get_mut(rn).and_then(|n| n.port_mut(rp))
            {
                r.remote = None;
                if let Some(i) = r.info.as_mut() {
                    i.port_state = PortState::Down;
                }
            }
        }
        let event = self.checks.cabling_lost(self.cfg.expected_topology.as_deref(), &cables);
        self.events.extend(event);
        if !self.reroute_paths() {
            return Verdict::Heavy;
        }
        // By the new routes: the old one of a switch may have crossed a lost cable.
        self.clear_port_state_change(&read, Op::Sweep);
        // Ask each far end (by its new route) before writing to it.
        far.retain(|f| !read.contains(&f.0));
        if far.is_empty() {
            return Verdict::Route;
        }
        for (n, p) in far {
            let Some(node) = self.subnet.node(n) else { return Verdict::Heavy };
            // One try: a far end that does not answer at once sends us to a heavy sweep.
            self.tx.push_with_retries(Request::sweep(node.path_for(p), Req::CheckPortInfo { node: n, port: p }), 0);
        }
        self.quick = Some(Quick { reads: Vec::new(), far_ends: true });
        Verdict::Wait
    }

    /// Clears PortStateChange on `switches` (a write of 1 clears it): part of the sweep when it
    /// goes on, on the side when nothing changed.
    fn clear_port_state_change(&mut self, switches: &[NodeIdx], op: Op) {
        for &s in switches {
            if let Some(n) = self.subnet.node(s)
                && let Some(si) = n.switch_info
            {
                let info = ibsm_mad::attrs::SwitchInfo { port_state_change: true, ..si };
                self.tx.push(Request { path: n.path, req: Req::SetSwitchInfo { node: s, info }, op });
            }
        }
    }

    /// Directed routes again, breadth-first from the SM's node over the links that remain;
    /// `false` when a node can no longer be reached (a heavy sweep drops it properly).
    fn reroute_paths(&mut self) -> bool {
        let Some((local, _)) = self.subnet.local else { return false };
        let n = self.subnet.nodes.len();
        let mut seen = vec![false; n];
        let mut queue = VecDeque::new();
        seen[local] = true;
        queue.push_back(local);
        let mut ca_ports: Vec<(NodeIdx, PortNum, DrPath)> = Vec::new();
        let mut paths: Vec<Option<DrPath>> = vec![None; n];
        paths[local] = Some(DrPath::local());
        while let Some(u) = queue.pop_front() {
            let node = &self.subnet.nodes[u];
            // Only the SM's own CA and switches forward directed routes.
            if u != local && !node.is_switch() {
                continue;
            }
            let Some(base) = paths[u] else { continue };
            for (p, rec) in node.ports.iter().enumerate().skip(1) {
                let Some((v, q)) = rec.remote.filter(|_| rec.is_linked()) else { continue };
                let Ok(port) = u8::try_from(p) else { continue };
                let Ok(path) = base.push(port) else { continue };
                if self.subnet.nodes.get(v).is_some_and(|x| !x.is_switch()) {
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
        for (v, path) in paths.into_iter().enumerate() {
            if let Some(path) = path.filter(|_| v != local) {
                self.subnet.nodes[v].path = path;
            }
        }
        // A CA port's route enters through that port: the first (shortest) one found, none for
        // a port whose cable is gone. The SM's own node keeps its own.
        for (i, node) in self.subnet.nodes.iter_mut().enumerate() {
            if i != local && !node.is_switch() {
                for rec in node.ports.iter_mut().skip(1) {
                    rec.path = None;
                }
            }
        }
        for (v, q, path) in ca_ports {
            if let Some(r) = self.subnet.nodes.get_mut(v).and_then(|n| n.port_mut(q))
                && v != local
                && r.path.is_none()
            {
                r.path = Some(path);
            }
        }
        true
    }

    /// In the pipeline, at the end of a quick sweep's reads: on to routing, done, or a heavy
    /// sweep. `true` when the pipeline goes on.
    pub(super) fn after_quick_reads(&mut self) -> bool {
        match self.quick_verdict() {
            Verdict::Route => {
                self.enter(SweepPhase::Routing);
                self.compute = Some(ComputeStep::Route);
                true
            }
            Verdict::Wait => true,
            Verdict::Nothing => {
                // The PortStateChange clears go out; the last sweep's report stands. Traps that
                // came meanwhile are looked into as after any sweep.
                self.enter(SweepPhase::Up);
                self.schedule_light();
                self.traps_after_sweep();
                false
            }
            Verdict::Heavy => {
                self.enter(SweepPhase::Up);
                self.start_sweep(self.now);
                false
            }
        }
    }
}
