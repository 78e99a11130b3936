//! The sweep's books: what the running sweep has done so far and the report of the last one.
//!
//! Owns [`Sweep`]: the compute step the sweep waits for ([`ComputeStep`]), the running sweep's
//! figures (when it and its phase started, the phases' durations, SMPs at the start, LFT blocks
//! sent and unchanged, ports armed and activated, nodes that did not answer) and its book of
//! failures (the nodes a Set failed on, the discovery reads that failed: only Sets failing make
//! a sweep repairable without discovery, see `schedule`), and the report of the last completed
//! sweep with its time. It takes the facts of the sweep as arguments (the subnet, the SMP
//! counters, the time) and answers with values: whether a sweep is repairable, the nodes a Set
//! failed on, the [`SubnetReport`]. The phase itself is `Sm`'s, which enters phases and emits
//! their events; this book only times them.

use std::collections::BTreeSet;

use ibsm_mad::{Guid, Lid};

use super::discovery::BlockedNode;
use super::events::{PhaseTiming, RouteMode, SubnetReport};
use super::state::{NodeIdx, Subnet, SweepPhase};
use super::transactions::{Counters, PortStep, Req};

/// A step of pure computation in a sweep, run by [`super::Sm::handle_compute`] so that the
/// driver's clock measures it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ComputeStep {
    /// Choosing LIDs for every end port.
    AssignLids,
    /// Building the ports' configuration (PortInfo, SwitchInfo, P_Key and QoS Sets) after LID
    /// assignment, once the driver had the chance to take the early route's job
    /// ([`super::Sm::take_route_job`]): the route runs while the configuration is built, not
    /// after.
    Configure,
    /// Running the routing engine chain.
    Route,
    /// Building the SA's snapshot of the swept subnet, the last step before the sweep ends
    /// (on a large fabric it costs as much as a repair: the driver's clock measures it).
    Snapshot,
}

/// The sweep's books.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sweep {
    /// The compute step the sweep waits for.
    compute: Option<ComputeStep>,
    /// The configuration step waited once for the early route's job to be taken.
    configure_deferred: bool,
    /// The configuration's P_Key and QoS table Sets are still to build: they are built once
    /// its first port Sets are out ([`super::Sm::build_due_table_sets`]).
    tables_due: bool,
    started_at: u64,
    phase_started_at: u64,
    phases: Vec<PhaseTiming>,
    failures: usize,
    lft_sent: u64,
    lft_unchanged: u64,
    armed: usize,
    activated: usize,
    smps_at_start: Counters,
    blocked: Vec<BlockedNode>,
    /// Nodes a Set failed on (a repair sweep redoes what they miss).
    failed_sets: BTreeSet<NodeIdx>,
    /// SMPs of discovery that failed (only a heavy sweep can redo them).
    read_failures: usize,
    /// LinearForwardingTable Sets that failed (after their retries).
    lft_failures: usize,
    /// The report of the last completed sweep, and when it was made.
    last: Option<(SubnetReport, u64)>,
    /// How long building this sweep's SA snapshot took, once built.
    snapshot_ns: Option<u64>,
}

/// What the report of a sweep is made from, besides the book.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Facts<'a> {
    /// The subnet as the sweep leaves it.
    pub subnet: &'a Subnet,
    /// The SMP counters now.
    pub smps: Counters,
    /// The routing engine that routed, and how.
    pub routing: (&'a str, RouteMode),
    /// The LMC of end ports.
    pub lmc: u8,
    /// The time, ns.
    pub now: u64,
}

impl Sweep {
    /// A sweep starts at `now` with the SMP counters at `smps`: fresh figures (the last report
    /// and a pending compute step stay).
    pub fn begin(&mut self, now: u64, smps: Counters) {
        let (compute, last) = (self.compute, self.last.take());
        *self = Sweep { compute, last, started_at: now, smps_at_start: smps, ..Sweep::default() };
    }

    /// The sweep goes from phase `from` to `to` at `now`: `from`'s time is recorded (a sweep
    /// that is not running records nothing, but the end of one does).
    pub fn enter(&mut self, from: SweepPhase, to: SweepPhase, now: u64) {
        if from != SweepPhase::Up || to == SweepPhase::Up {
            self.phases.push(PhaseTiming { phase: from, ns: now.saturating_sub(self.phase_started_at) });
        }
        self.phase_started_at = now;
    }

    /// When the current phase started.
    pub fn phase_started_at(&self) -> u64 {
        self.phase_started_at
    }

    /// The current phase starts at `now` instead, the time up to it going to the phase before;
    /// `false` (nothing changed) when `now` is not later.
    pub fn restamp(&mut self, now: u64) -> bool {
        let Some(extra) = now.checked_sub(self.phase_started_at).filter(|&d| d > 0) else { return false };
        if let Some(last) = self.phases.last_mut() {
            last.ns += extra;
        }
        self.phase_started_at = now;
        true
    }

    /// Whether the configuration step is to wait for the driver to take the early route's job:
    /// true the first time a sweep asks, false after (a driver that takes no job does not
    /// hold the configuration up twice).
    pub fn defer_configure(&mut self) -> bool {
        !std::mem::replace(&mut self.configure_deferred, true)
    }

    /// The configuration's table Sets are to build after its port Sets are sent.
    pub fn defer_tables(&mut self) {
        self.tables_due = true;
    }

    /// Whether the configuration's table Sets were still to build (they are now: the flag is
    /// taken).
    pub fn take_tables_due(&mut self) -> bool {
        std::mem::take(&mut self.tables_due)
    }

    /// The sweep waits for `step`.
    pub fn wait_for(&mut self, step: ComputeStep) {
        self.compute = Some(step);
    }

    /// The SA's snapshot of this sweep is built; it took `ns` on the driver's clock.
    pub fn snapshot_built(&mut self, ns: u64) {
        self.snapshot_ns = Some(ns);
    }

    /// Whether this sweep's SA snapshot is built.
    pub fn has_snapshot(&self) -> bool {
        self.snapshot_ns.is_some()
    }

    /// The compute step the sweep waits for.
    pub fn compute(&self) -> Option<ComputeStep> {
        self.compute
    }

    /// Takes the compute step to run.
    pub fn take_compute(&mut self) -> Option<ComputeStep> {
        self.compute.take()
    }

    /// `n` more failures (SMPs, ports without a LID, a routing that failed).
    pub fn failed(&mut self, n: usize) {
        self.failures += n;
    }

    /// Notes a failed SMP of the sweep (`discovering`: in the discovery phase): a Set's node,
    /// or a read.
    pub fn note_failure(&mut self, req: &Req, discovering: bool) {
        self.failures += 1;
        self.lft_failures += usize::from(matches!(req, Req::SetLft { .. }));
        match req {
            Req::SetPortInfo { node, .. }
            | Req::SetSwitchInfo { node, .. }
            | Req::SetLft { node, .. }
            | Req::SetPKeys { node, .. }
            | Req::SetSl2Vl { node, .. }
            | Req::SetVlArb { node, .. } => {
                self.failed_sets.insert(*node);
            }
            _ if discovering => self.read_failures += 1,
            _ => {}
        }
    }

    /// LinearForwardingTable Sets of this sweep that failed after their retries.
    pub fn lft_failures(&self) -> usize {
        self.lft_failures
    }

    /// A port reached the state of `step`.
    pub fn port_stepped(&mut self, step: PortStep) {
        match step {
            PortStep::Arm => self.armed += 1,
            PortStep::Activate => self.activated += 1,
            PortStep::Configure | PortStep::Toggle => {}
        }
    }

    /// LFT blocks: `sent` written, `unchanged` left as they were.
    pub fn lfts(&mut self, sent: u64, unchanged: u64) {
        self.lft_sent += sent;
        self.lft_unchanged += unchanged;
    }

    /// The nodes that did not answer this sweep (carried from the last one).
    pub fn set_blocked(&mut self, blocked: Vec<BlockedNode>) {
        self.blocked = blocked;
    }

    /// Whether the sweep can be repaired without discovery: only Sets failed.
    pub fn repairable(&self) -> bool {
        !self.failed_sets.is_empty() && self.read_failures == 0 && self.blocked.is_empty()
    }

    /// The nodes of `subnet` a Set failed on in the sweep.
    pub fn failed_nodes(&self, subnet: &Subnet) -> Vec<BlockedNode> {
        self.failed_sets
            .iter()
            .filter_map(|&n| subnet.node(n))
            .map(|n| BlockedNode { guid: n.info.node_guid, desc: n.desc.clone() })
            .collect()
    }

    /// The report of the sweep that ends: ports counted in `facts.subnet` (those `left_out`
    /// on purpose, refused as miscabled or quarantined, are not counted as not active).
    pub fn report(&self, facts: Facts<'_>, left_out: impl Fn((Guid, u8)) -> bool) -> SubnetReport {
        let Facts { subnet, smps: c, routing, lmc, now } = facts;
        let (mut active, mut not_active) = (0, 0);
        let mut end_ports = 0;
        for n in &subnet.nodes {
            for (p, rec) in n.ports.iter().enumerate() {
                if rec.lid != Lid::UNASSIGNED {
                    end_ports += 1;
                }
                if p == 0 || !rec.is_linked() || n.carried {
                    continue;
                }
                if rec.remote.is_none() && u8::try_from(p).is_ok_and(|p| left_out((n.info.node_guid, p))) {
                    continue;
                }
                match rec.info.map(|i| i.port_state) {
                    Some(ibsm_mad::attrs::PortState::Active) => active += 1,
                    _ => not_active += 1,
                }
            }
        }
        let s = self;
        let switches = subnet.switch_count();
        SubnetReport {
            switches,
            cas: subnet.nodes.len() - switches,
            end_ports,
            links: subnet.link_count(),
            lmc,
            sm_lid: subnet.local_lid(),
            routing_engine: routing.0.to_owned(),
            routing_mode: routing.1,
            smps_sent: c.sent - s.smps_at_start.sent,
            smps_retried: c.retried - s.smps_at_start.retried,
            smps_failed: c.failed - s.smps_at_start.failed,
            lft_blocks_sent: s.lft_sent,
            lft_blocks_unchanged: s.lft_unchanged,
            ports_armed: s.armed,
            ports_activated: s.activated,
            ports_active: active,
            ports_not_active: not_active,
            complete: s.failures == 0 && not_active == 0 && s.blocked.is_empty(),
            blocked: s.blocked.clone(),
            failed_nodes: s.failed_nodes(subnet),
            phases: s.phases.iter().copied().filter(|p| p.phase != SweepPhase::Up).collect(),
            total_ns: now.saturating_sub(s.started_at),
            snapshot_ns: s.snapshot_ns.unwrap_or(0),
        }
    }

    /// The sweep completed at `now` with `report`.
    pub fn completed(&mut self, report: SubnetReport, now: u64) {
        self.last = Some((report, now));
    }

    /// The report of the last completed sweep.
    pub fn last_report(&self) -> Option<&SubnetReport> {
        self.last.as_ref().map(|l| &l.0)
    }

    /// When the last report was made.
    pub fn last_report_at(&self) -> Option<u64> {
        self.last.as_ref().map(|l| l.1)
    }
}

#[cfg(test)]
mod tests {
    use ibsm_mad::PortNum;
    use ibsm_mad::attrs::{PortInfo, PortState};

    use super::*;
    use crate::core::testing::star;
    use crate::core::transactions::PlannedInfo;

    fn facts(subnet: &Subnet, sent: u64, now: u64) -> Facts<'_> {
        let smps = Counters { sent, ..Counters::default() };
        Facts { subnet, smps, routing: ("ftree", RouteMode::Full), lmc: 0, now }
    }

    #[test]
    fn phases_are_timed_from_entry_to_exit_and_a_restamp_moves_time_back() {
        let mut b = Sweep::default();
        b.begin(100, Counters::default());
        b.enter(SweepPhase::Up, SweepPhase::Discovering, 100);
        b.enter(SweepPhase::Discovering, SweepPhase::AssigningLids, 130);
        assert!(!b.restamp(130), "no later");
        assert!(b.restamp(135));
        assert_eq!(b.phase_started_at(), 135);
        b.enter(SweepPhase::AssigningLids, SweepPhase::Up, 150);
        let s = star(0x102, 0x103);
        let r = b.report(facts(&s, 0, 150), |_| false);
        let phases: Vec<_> = r.phases.iter().map(|p| (p.phase, p.ns)).collect();
        assert_eq!(phases, [(SweepPhase::Discovering, 35), (SweepPhase::AssigningLids, 15)]);
        assert_eq!(r.total_ns, 50);
        // Leaving Up (no sweep ran) records nothing.
        b.enter(SweepPhase::Up, SweepPhase::Discovering, 200);
        assert_eq!(b.phases.len(), 2);
    }

    #[test]
    fn only_a_sweep_whose_failures_are_all_sets_is_repairable() {
        let s = star(0x102, 0x103);
        let mut b = Sweep::default();
        let info = PortInfo::default();
        let set =
            Req::SetPortInfo { node: 2, port: PortNum(1), info: PlannedInfo::one(info), step: PortStep::Configure };
        assert!(!b.repairable(), "nothing failed");
        b.note_failure(&set, false);
        assert!(b.repairable());
        assert_eq!(b.failed_nodes(&s), vec![BlockedNode { guid: Guid(0x102), desc: "n102".into() }]);
        b.note_failure(&Req::GetSwitchInfo { node: 1 }, false);
        assert!(b.repairable(), "a read outside discovery");
        b.note_failure(&Req::GetSwitchInfo { node: 1 }, true);
        assert!(!b.repairable(), "a discovery read failed: only a heavy sweep redoes it");
        let r = b.report(facts(&s, 0, 0), |_| false);
        assert!(!r.complete);
        b.begin(10, Counters::default());
        assert!(!b.repairable() && b.failed_nodes(&s).is_empty(), "a new sweep, a new book");
        b.note_failure(&set, false);
        b.set_blocked(vec![BlockedNode { guid: Guid(0x103), desc: String::new() }]);
        assert!(!b.repairable(), "a node that did not answer");
    }

    #[test]
    fn the_report_counts_ports_smps_and_blocks_of_this_sweep_and_is_kept() {
        let mut s = star(0x102, 0x103);
        s.nodes[1].ports[0].lid = Lid(1);
        s.nodes[2].ports[1].lid = Lid(2);
        // 0x103's port is linked but only Armed; a port refused on purpose does not count.
        s.nodes[3].ports[1].info = Some(PortInfo { port_state: PortState::Armed, ..PortInfo::default() });
        s.nodes[1].ports[4].info = Some(PortInfo { port_state: PortState::Init, ..PortInfo::default() });
        let mut b = Sweep::default();
        b.begin(0, Counters { sent: 5, ..Counters::default() });
        b.lfts(3, 4);
        b.port_stepped(PortStep::Arm);
        b.port_stepped(PortStep::Activate);
        b.port_stepped(PortStep::Configure);
        let r = b.report(facts(&s, 12, 7), |end| end == (Guid(0x20), 4));
        assert_eq!((r.switches, r.cas, r.end_ports, r.links), (1, 3, 2, 3));
        assert_eq!((r.smps_sent, r.lft_blocks_sent, r.lft_blocks_unchanged), (7, 3, 4));
        assert_eq!((r.ports_armed, r.ports_activated), (1, 1));
        // Switch ports 1-3, 0x10's and 0x102's ports are Active; 0x103's is Armed; 0x20/4 left out;
        // 0x20/5-6 are Active with no cable (counted active, as before).
        assert_eq!(r.ports_not_active, 1);
        assert!(!r.complete);
        assert_eq!(r.routing_engine, "ftree");
        assert_eq!(b.last_report(), None);
        b.completed(r.clone(), 7);
        assert_eq!((b.last_report(), b.last_report_at()), (Some(&r), Some(7)));
        b.begin(8, Counters::default());
        assert_eq!(b.last_report_at(), Some(7), "kept across sweeps");
    }
}
