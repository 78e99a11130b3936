//! What a trap makes the master do, once it has been acknowledged with TrapRepress.
//!
//! Owns [`Traps`], the trap book and policy: which traps bring a heavy sweep (128 link state
//! change, 144 with a capability change, and anything unknown), which do not (129–131 mark a
//! port unhealthy; 144 about a NodeDescription only re-reads that; 256–259 are security
//! reports), the suppression of identical traps from one source past a threshold, the rate
//! limit on trap-driven heavy sweeps, and the coalescing of traps that arrive during a sweep: a
//! trap 128 from a switch whose ports the running sweep asked for after the trap arrived is
//! already seen by that sweep, so both ends of one pulled cable cost one heavy sweep, not two.
//!
//! A component: it takes the trap, the time and what the SM is doing ([`Ctx`]: the subnet and
//! the SA's snapshot as arguments) and answers with values ([`Answer`]: the action, a read to
//! queue, an event; at its deadline, [`Due`]: NodeDescriptions to patch into the snapshot and the
//! sweep it asks for, [`Wanted`]). Starting that sweep (quick or heavy: `scheduling.rs`) and
//! acknowledging the trap (`requests.rs`) are the coordinator's (`Sm`); this file reaches into
//! nothing of it.
//!
//! A trap that is suppressed, deferred or coalesced is never lost: the deferred sweep runs when
//! the rate limit allows, and the light sweep finds any PortStateChange left behind.

use std::collections::{BTreeMap, HashMap};

use ibsm_mad::attrs::{NodeDescription, Notice, NoticeDetails};
use ibsm_mad::{Attribute, Guid, Lid, PortNum};

use super::events::SmEvent;
pub use super::events::TrapAction;
use super::state::Subnet;
use super::transactions::{Op, Outcome, Req, Request};
use crate::sa::Snapshot;

/// Identical traps (same source, number and details) within this window are counted together.
pub const DUPLICATE_WINDOW_NS: u64 = 10_000_000_000;
/// Past this many identical traps in the window, further ones are acknowledged and dropped.
pub const DUPLICATE_LIMIT: u32 = 5;
/// Trap-driven heavy sweeps allowed back to back (the token bucket's depth).
pub const SWEEP_BURST: u32 = 4;
/// After the burst, one trap-driven heavy sweep per this interval.
pub const SWEEP_REFILL_NS: u64 = 2_000_000_000;
/// A trap at rest is looked into this much later, with the traps that came meanwhile.
pub const GATHER_NS: u64 = 1_000_000;
/// NodeDescriptions read for trap 144 reach the SA's snapshot this long after the first.
const DESC_QUIET_NS: u64 = 1_000_000_000;
/// Sources remembered for duplicate suppression (memory stays bounded whatever arrives).
const MAX_REMEMBERED: usize = 4096;

/// A port reported unhealthy by trap 129, 130 or 131.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unhealthy {
    /// The last trap number reported for it.
    pub trap: u16,
    /// Traps received for it.
    pub count: u64,
    /// When the last one arrived, ns.
    pub last_at: u64,
}

/// Trap counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrapCounters {
    /// Traps received, by generic number (vendor notices under 0).
    pub by_number: BTreeMap<u16, u64>,
    /// Dropped as duplicates past the threshold.
    pub suppressed: u64,
    /// Handled with others: gathered into a sweep about to start, or arrived during a sweep
    /// that read their source after they arrived (no further sweep either way).
    pub coalesced: u64,
    /// Heavy sweeps the rate limit deferred.
    pub deferred: u64,
}

/// The trap book of one SM.
#[derive(Debug, Clone, Default)]
pub struct Traps {
    /// Identical traps seen lately: (source, details) → (window start, count).
    recent: HashMap<(Lid, NoticeDetails), (u64, u32)>,
    /// Token bucket of trap-driven heavy sweeps: tokens left and when they were counted.
    tokens: Option<(u32, u64)>,
    /// A rate-limited heavy sweep: when it may start.
    deferred_at: Option<u64>,
    /// Trap 128s that arrived during the running sweep: (source switch, mark).
    during: Vec<(Option<Guid>, u64)>,
    /// One mark per trap during a sweep.
    mark: u64,
    /// Switch → the mark when the running sweep asked for its ports.
    read_marks: HashMap<Guid, u64>,
    /// Ports reported unhealthy: (node GUID, port) → what was reported.
    pub unhealthy: BTreeMap<(Guid, u8), Unhealthy>,
    /// Switches whose trap a quick sweep is to look into (see `quick.rs`), when it is due.
    quick: Vec<Guid>,
    /// A trap with no known source is among them: a heavy sweep instead.
    quick_unknown: bool,
    /// When the quick sweep of `quick` is due.
    quick_at: Option<u64>,
    /// NodeDescriptions read for trap 144, not in the snapshot yet.
    descs: HashMap<Guid, String>,
    /// When they go into the snapshot.
    descs_at: Option<u64>,
    /// Counters.
    pub counters: TrapCounters,
}

impl Traps {
    /// Entries each of its tables holds (for `Sm::footprint`).
    pub(super) fn sizes(&self) -> [(&'static str, usize); 6] {
        [
            ("traps.recent", self.recent.len()),
            ("traps.during", self.during.len()),
            ("traps.read_marks", self.read_marks.len()),
            ("traps.unhealthy", self.unhealthy.len()),
            ("traps.quick", self.quick.len()),
            ("traps.descs", self.descs.len()),
        ]
    }

    /// Whether this trap is one too many of its kind from `from` (and counts it).
    fn duplicate(&mut self, from: Lid, details: NoticeDetails, now: u64) -> bool {
        if self.recent.len() >= MAX_REMEMBERED {
            self.recent.retain(|_, (start, _)| now.saturating_sub(*start) < DUPLICATE_WINDOW_NS);
        }
        if self.recent.len() >= MAX_REMEMBERED && !self.recent.contains_key(&(from, details)) {
            return false;
        }
        let e = self.recent.entry((from, details)).or_insert((now, 0));
        if now.saturating_sub(e.0) >= DUPLICATE_WINDOW_NS {
            *e = (now, 0);
        }
        e.1 = e.1.saturating_add(1);
        e.1 > DUPLICATE_LIMIT
    }

    /// Takes a token for a trap-driven heavy sweep at `now`; `Err(when)` if none is left.
    fn take_token(&mut self, now: u64) -> Result<(), u64> {
        let (left, at) = self.tokens.unwrap_or((SWEEP_BURST, now));
        let refilled = now.saturating_sub(at) / SWEEP_REFILL_NS;
        let left = u32::try_from(u64::from(left).saturating_add(refilled)).unwrap_or(SWEEP_BURST).min(SWEEP_BURST);
        let at = if left == SWEEP_BURST { now } else { at.saturating_add(refilled.saturating_mul(SWEEP_REFILL_NS)) };
        if left == 0 {
            self.tokens = Some((0, at));
            return Err(at.saturating_add(SWEEP_REFILL_NS));
        }
        self.tokens = Some((left - 1, at));
        Ok(())
    }

    /// A sweep starts: forget the last one's marks (a heavy sweep also covers the switches
    /// waiting for a quick one, and the traps that came during a quick one it replaces).
    pub(super) fn sweep_started(&mut self, heavy: bool) {
        // A heavy sweep reads every switch from now on: it sees what these traps said.
        if heavy {
            self.counters.coalesced += self.during.len() as u64;
        }
        self.during.clear();
        self.read_marks.clear();
        self.mark = 0;
        self.quick.clear();
        self.quick_unknown = false;
        self.quick_at = None;
    }

    /// Remembers a trap's source for the next quick sweep.
    fn want_quick(&mut self, source: Option<Guid>) {
        match source {
            Some(g) if !self.quick.contains(&g) => self.quick.push(g),
            Some(_) => {}
            None => self.quick_unknown = true,
        }
    }

    /// The running sweep asks for the ports of switch `guid` now.
    pub(super) fn reading(&mut self, guid: Guid) {
        self.read_marks.entry(guid).or_insert(self.mark);
    }

    /// The sweep ended: whether a trap that arrived during it may show a change it missed
    /// (its source was not read after it arrived, or is unknown); the sources are kept for the
    /// quick sweep that follows. `present` says whether a switch is still in the fabric (a
    /// vanished one has nothing left to read).
    pub(super) fn missed(&mut self, present: impl Fn(Guid) -> bool) -> bool {
        let during = std::mem::take(&mut self.during);
        let mut missed = false;
        for (source, mark) in during {
            let seen = source.is_some_and(|g| !present(g) || self.read_marks.get(&g).is_some_and(|&r| r >= mark));
            if seen {
                self.counters.coalesced += 1;
            } else {
                missed = true;
                self.want_quick(source);
            }
        }
        missed
    }

    /// When the trap book is due ([`Traps::on_timeout`]) for a deferred or quick sweep or a
    /// NodeDescription patch.
    pub fn poll_timeout(&self) -> Option<u64> {
        [self.deferred_at, self.descs_at, self.quick_at].into_iter().flatten().min()
    }
}

/// What the SM is doing when a trap comes in or an answer about one returns: the facts the
/// trap policy needs, lent by the coordinator.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ctx<'a> {
    /// The time, ns.
    pub now: u64,
    /// The SM is master (or discovering to become one): traps are acted on, else only counted.
    pub acting: bool,
    /// A sweep runs (its phase is not `Up`).
    pub sweeping: bool,
    /// The SA's snapshot of the last completed sweep: where a LID names a node.
    pub snapshot: Option<&'a Snapshot>,
    /// The subnet being swept: the directed routes of its nodes.
    pub subnet: &'a Subnet,
}

/// What a trap asks of the coordinator.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Answer {
    /// What was done with it (reported with the trap).
    pub action: TrapAction,
    /// An SMP to queue: the NodeDescription read of a trap 144.
    pub read: Option<Request>,
    /// An event: a port reported unhealthy.
    pub event: Option<SmEvent>,
}

impl Answer {
    fn action(action: TrapAction) -> Answer {
        Answer { action, read: None, event: None }
    }
}

/// The sweep the trap book asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Wanted {
    /// A quick sweep of these switches (by node GUID); a heavy sweep when one is not possible.
    Quick(Vec<Guid>),
    /// A heavy sweep (a trap came from a source no switch of the last sweep is known as).
    Heavy,
}

/// What is due at a deadline of [`Traps::poll_timeout`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Due {
    /// NodeDescriptions read for trap 144, to patch into the SA's snapshot (node GUID → text).
    pub descs: Option<HashMap<Guid, String>>,
    /// The sweep to start.
    pub sweep: Option<Wanted>,
}

impl Traps {
    /// Acts on an acknowledged trap from `from` (its Notice, when it parsed).
    pub(crate) fn on_trap(&mut self, from: Lid, notice: Option<&Notice>, cx: Ctx<'_>) -> Answer {
        let number = notice.and_then(Notice::trap_number);
        *self.counters.by_number.entry(number.unwrap_or(0)).or_insert(0) += 1;
        if !cx.acting {
            return Answer::action(TrapAction::Ignored);
        }
        if let Some(n) = notice
            && self.duplicate(from, n.details, cx.now)
        {
            self.counters.suppressed += 1;
            return Answer::action(TrapAction::Suppressed);
        }
        let details = notice.map(|n| n.details);
        // A NodeDescription change alone: read that, no sweep (an unknown node gets one).
        if let Some(NoticeDetails::Trap144 {
            lid,
            other_local_changes: true,
            node_description_change: true,
            capability_mask2_change: false,
            hierarchy_info_change: false,
            sm_priority_change: false,
            link_speed_enabled_change: false,
            link_width_enabled_change: false,
            ..
        }) = details
            && let Some(read) = reread_node_desc(lid, cx)
        {
            return Answer { read: Some(read), ..Answer::action(TrapAction::NodeDescription) };
        }
        match details {
            Some(NoticeDetails::PortHealth { trap, lid, port }) => {
                Answer { event: self.mark_unhealthy(trap, lid, port, cx), ..Answer::action(TrapAction::Unhealthy) }
            }
            Some(
                NoticeDetails::Trap64 { .. }
                | NoticeDetails::Trap65 { .. }
                | NoticeDetails::Trap66 { .. }
                | NoticeDetails::Trap67 { .. }
                | NoticeDetails::Trap256 { .. }
                | NoticeDetails::Trap257(_)
                | NoticeDetails::Trap258(_)
                | NoticeDetails::Trap259 { .. },
            ) => Answer::action(TrapAction::Reported),
            Some(NoticeDetails::Trap128 { lid }) => {
                let source = switch_at(cx.snapshot, lid).or_else(|| switch_at(cx.snapshot, from));
                Answer::action(self.trap_sweep(source, cx.now, cx.sweeping))
            }
            _ => Answer::action(self.trap_sweep(None, cx.now, cx.sweeping)),
        }
    }

    /// The NodeDescription read for a trap 144 came back at `now` (`sweeping`: a sweep runs):
    /// the node's description in `subnet` is updated, and the SA's records show it after a
    /// short quiet time (a boot storm of such traps patches the snapshot once). A node that
    /// does not answer gets a heavy sweep, as any trap 128 from it.
    pub(crate) fn on_node_desc(
        &mut self,
        guid: Guid,
        outcome: &Outcome,
        subnet: &mut Subnet,
        now: u64,
        sweeping: bool,
    ) {
        let text = match outcome {
            Outcome::Reply { status: 0, data } => NodeDescription::parse(data).ok().map(|d| d.text()),
            _ => None,
        };
        let Some(text) = text else {
            let _ = self.trap_sweep(Some(guid), now, sweeping);
            return;
        };
        if let Some(n) = subnet.by_guid.get(&guid).and_then(|&i| subnet.nodes.get_mut(i)) {
            n.desc.clone_from(&text);
        }
        self.descs.insert(guid, text);
        if self.descs_at.is_none() {
            self.descs_at = Some(now.saturating_add(DESC_QUIET_NS));
        }
    }

    /// What is due at `now`: the NodeDescriptions to patch into the snapshot, and, when no
    /// sweep runs (`up`), the deferred or gathered sweep (only a `master` starts one; the
    /// deadline passes either way).
    pub(crate) fn on_timeout(&mut self, now: u64, up: bool, master: bool) -> Due {
        let mut due = Due::default();
        if self.descs_at.is_some_and(|t| t <= now) {
            self.descs_at = None;
            due.descs = Some(std::mem::take(&mut self.descs));
        }
        if self.deferred_at.is_some_and(|t| t <= now) && up {
            self.deferred_at = None;
            if master {
                let _ = self.take_token(now);
                due.sweep = Some(self.take_wanted());
            }
        }
        if self.quick_at.is_some_and(|t| t <= now) && up {
            self.quick_at = None;
            if master {
                due.sweep = Some(self.take_wanted());
            }
        }
        due
    }

    /// At the end of a sweep at `now`: a sweep again (rate-limited, at the next
    /// [`Traps::on_timeout`]) if a trap during it may show a change it did not see. `present`
    /// says whether a switch is still in the fabric.
    pub(crate) fn after_sweep(&mut self, now: u64, present: impl Fn(Guid) -> bool) {
        if self.missed(present) && self.deferred_at.is_none() {
            match self.take_token(now) {
                Ok(()) => self.quick_at = Some(now),
                Err(at) => {
                    self.counters.deferred += 1;
                    self.deferred_at = Some(at);
                }
            }
        }
    }

    /// The switches the traps named, for a quick sweep (a heavy one when a source is unknown).
    fn take_wanted(&mut self) -> Wanted {
        let guids = std::mem::take(&mut self.quick);
        let unknown = std::mem::take(&mut self.quick_unknown);
        self.quick_at = None;
        if unknown || guids.is_empty() { Wanted::Heavy } else { Wanted::Quick(guids) }
    }

    /// A heavy sweep for a trap from `source` at `now`: after the running sweep (`sweeping`)
    /// if it misses the change, else soon, or when the rate limit allows.
    fn trap_sweep(&mut self, source: Option<Guid>, now: u64, sweeping: bool) -> TrapAction {
        if sweeping {
            self.mark += 1;
            self.during.push((source, self.mark));
            return TrapAction::AfterSweep;
        }
        self.want_quick(source);
        if self.deferred_at.is_some() {
            return TrapAction::Deferred;
        }
        if self.quick_at.is_some() {
            // Gathered into the sweep about to start.
            self.counters.coalesced += 1;
            return TrapAction::Sweep;
        }
        match self.take_token(now) {
            Ok(()) => {
                // Traps that come together (both ends of a cable, every neighbour of a switch
                // that died) are looked into together.
                self.quick_at = Some(now.saturating_add(GATHER_NS));
                TrapAction::Sweep
            }
            Err(at) => {
                self.counters.deferred += 1;
                self.deferred_at = Some(at);
                TrapAction::Deferred
            }
        }
    }

    /// Counts a trap 129–131 about the port at `lid` (a node of the last sweep); the event.
    fn mark_unhealthy(&mut self, trap: u16, lid: Lid, port: PortNum, cx: Ctx<'_>) -> Option<SmEvent> {
        let (guid, ..) = node_at(cx.snapshot, lid)?;
        let e = self.unhealthy.entry((guid, port.0)).or_insert(Unhealthy { trap, count: 0, last_at: cx.now });
        *e = Unhealthy { trap, count: e.count + 1, last_at: cx.now };
        Some(SmEvent::PortUnhealthy { node: guid, port, trap })
    }
}

/// The node at `lid` in the last sweep's snapshot: its GUID, whether it is a switch, and the
/// port the LID names.
fn node_at(snapshot: Option<&Snapshot>, lid: Lid) -> Option<(Guid, bool, u8)> {
    let snap = snapshot?;
    let at = snap.by_lid(lid)?;
    let node = snap.node(at.0)?;
    Some((node.info.node_guid, node.is_switch(), at.1))
}

/// The node GUID of the switch at `lid` in the last sweep's snapshot.
fn switch_at(snapshot: Option<&Snapshot>, lid: Lid) -> Option<Guid> {
    node_at(snapshot, lid).filter(|n| n.1).map(|n| n.0)
}

/// Trap 144 said the NodeDescription of the node at `lid` changed: the read of it (one SMP).
/// `None` when the node is unknown or carried from an earlier sweep (a heavy sweep finds it
/// instead).
fn reread_node_desc(lid: Lid, cx: Ctx<'_>) -> Option<Request> {
    let (guid, _, port) = node_at(cx.snapshot, lid)?;
    let node = cx.subnet.by_guid.get(&guid).and_then(|&i| cx.subnet.nodes.get(i))?;
    if node.carried {
        return None;
    }
    let path = node.path_for(PortNum(port));
    Some(Request { path, req: Req::ReadNodeDesc { guid, port: PortNum(port) }, op: Op::Light })
}

#[cfg(test)]
mod tests {
    use ibsm_mad::attrs::{CapabilityMask, CapabilityMask2, NoticeType, ProducerType};

    use super::*;
    use crate::core::testing::star;
    use crate::sa::snapshot::{SmPort, SnapNode, SnapPort};

    const S: u64 = 1_000_000_000;
    /// LIDs of the star: the switch (node 1) 1, the CAs (nodes 2 and 3) 2 and 3.
    const SWITCH: Lid = Lid(1);

    /// The star of `testing`, and the snapshot a sweep of it leaves (LIDs 1 to 3, the SM's
    /// CA unaddressed).
    fn fabric() -> (Subnet, Snapshot) {
        let mut s = star(0x102, 0x103);
        s.nodes[1].ports[0].lid = Lid(1);
        s.nodes[2].ports[1].lid = Lid(2);
        s.nodes[3].ports[1].lid = Lid(3);
        let nodes = s
            .nodes
            .iter()
            .map(|n| SnapNode {
                info: n.info,
                desc: n.desc.clone(),
                switch_info: n.switch_info,
                ports: std::sync::Arc::new(
                    n.ports
                        .iter()
                        .map(|r| SnapPort {
                            info: r.info,
                            guid: r.guid.unwrap_or(n.info.port_guid),
                            lid: r.lid,
                            ..SnapPort::default()
                        })
                        .collect(),
                ),
                table: None,
            })
            .collect();
        (s, Snapshot::new(0, 0, 0x12, nodes, SmPort::default()))
    }

    fn cx<'a>(now: u64, sweeping: bool, subnet: &'a Subnet, snap: &'a Snapshot) -> Ctx<'a> {
        Ctx { now, acting: true, sweeping, snapshot: Some(snap), subnet }
    }

    fn notice(issuer: Lid, details: NoticeDetails) -> Notice {
        Notice::generic(NoticeType::Urgent, ProducerType::Switch, issuer, details).unwrap()
    }

    fn link_change() -> Notice {
        notice(SWITCH, NoticeDetails::Trap128 { lid: SWITCH })
    }

    #[test]
    fn a_trap_128_asks_for_a_quick_sweep_of_its_switch_after_gathering_the_others() {
        let (s, snap) = fabric();
        let mut t = Traps::default();
        let a = t.on_trap(SWITCH, Some(&link_change()), cx(0, false, &s, &snap));
        assert_eq!(a, Answer::action(TrapAction::Sweep));
        assert_eq!(t.poll_timeout(), Some(GATHER_NS));
        assert_eq!(t.on_timeout(GATHER_NS - 1, true, true), Due::default(), "not yet");
        // One from an unknown source comes meanwhile: gathered, and the sweep is heavy.
        let other = notice(Lid(9), NoticeDetails::Trap128 { lid: Lid(9) });
        assert_eq!(t.on_trap(Lid(9), Some(&other), cx(10, false, &s, &snap)).action, TrapAction::Sweep);
        assert_eq!(t.counters.coalesced, 1);
        let due = t.on_timeout(GATHER_NS, true, true);
        assert_eq!(due.sweep, Some(Wanted::Heavy));
        assert_eq!(t.poll_timeout(), None, "due once");
        // Alone, the known switch gets a quick sweep.
        t.sweep_started(true);
        t.on_trap(SWITCH, Some(&link_change()), cx(S, false, &s, &snap));
        assert_eq!(t.on_timeout(S + GATHER_NS, true, true).sweep, Some(Wanted::Quick(vec![Guid(0x20)])));
        assert_eq!(t.counters.by_number.get(&128), Some(&3));
    }

    #[test]
    fn a_standby_counts_traps_and_does_nothing_else() {
        let (s, snap) = fabric();
        let mut t = Traps::default();
        let idle = Ctx { acting: false, ..cx(0, false, &s, &snap) };
        assert_eq!(t.on_trap(SWITCH, Some(&link_change()), idle).action, TrapAction::Ignored);
        assert_eq!(t.on_trap(SWITCH, None, idle).action, TrapAction::Ignored);
        assert_eq!(t.poll_timeout(), None);
        assert_eq!(t.counters.by_number.get(&128), Some(&1));
        assert_eq!(t.counters.by_number.get(&0), Some(&1), "an unparsed one under 0");
    }

    #[test]
    fn identical_traps_past_the_limit_are_suppressed_until_the_window_ends() {
        let (s, snap) = fabric();
        let mut t = Traps::default();
        let health = notice(Lid(2), NoticeDetails::PortHealth { trap: 129, lid: Lid(2), port: PortNum(1) });
        for i in 0..DUPLICATE_LIMIT {
            let a = t.on_trap(Lid(2), Some(&health), cx(u64::from(i), false, &s, &snap));
            assert_eq!(a.action, TrapAction::Unhealthy);
            assert_eq!(a.event, Some(SmEvent::PortUnhealthy { node: Guid(0x102), port: PortNum(1), trap: 129 }));
        }
        let a = t.on_trap(Lid(2), Some(&health), cx(10, false, &s, &snap));
        assert_eq!(a, Answer::action(TrapAction::Suppressed));
        assert_eq!(t.counters.suppressed, 1);
        let u = t.unhealthy[&(Guid(0x102), 1)];
        assert_eq!((u.trap, u.count), (129, u64::from(DUPLICATE_LIMIT)));
        let a = t.on_trap(Lid(2), Some(&health), cx(DUPLICATE_WINDOW_NS, false, &s, &snap));
        assert_eq!(a.action, TrapAction::Unhealthy, "a new window");
        // A port the snapshot does not know: counted as unhealthy, no event, nothing kept.
        let stranger = notice(Lid(7), NoticeDetails::PortHealth { trap: 130, lid: Lid(7), port: PortNum(1) });
        assert_eq!(t.on_trap(Lid(7), Some(&stranger), cx(0, false, &s, &snap)), Answer::action(TrapAction::Unhealthy));
        assert_eq!(t.unhealthy.len(), 1);
    }

    #[test]
    fn trap_driven_sweeps_past_the_burst_are_deferred_by_the_token_bucket() {
        let (s, snap) = fabric();
        let mut t = Traps::default();
        let mut now = 0;
        for _ in 0..SWEEP_BURST {
            assert_eq!(t.on_trap(SWITCH, None, cx(now, false, &s, &snap)).action, TrapAction::Sweep);
            now += GATHER_NS;
            assert_eq!(t.on_timeout(now, true, true).sweep, Some(Wanted::Heavy));
            t.sweep_started(true);
        }
        assert_eq!(t.on_trap(SWITCH, None, cx(now, false, &s, &snap)).action, TrapAction::Deferred);
        assert_eq!(t.counters.deferred, 1);
        assert_eq!(t.poll_timeout(), Some(SWEEP_REFILL_NS));
        assert_eq!(t.on_trap(SWITCH, None, cx(now, false, &s, &snap)).action, TrapAction::Deferred, "still waiting");
        assert_eq!(t.on_timeout(SWEEP_REFILL_NS, false, true), Due::default(), "not while a sweep runs");
        assert_eq!(t.on_timeout(SWEEP_REFILL_NS, true, true).sweep, Some(Wanted::Heavy));
        assert_eq!(t.poll_timeout(), None);
    }

    #[test]
    fn a_trap_during_a_sweep_costs_a_sweep_only_when_the_sweep_read_its_switch_before_it() {
        let (s, snap) = fabric();
        let present = |g: Guid| g == Guid(0x20);
        // Read after the trap: seen by the running sweep.
        let mut t = Traps::default();
        t.sweep_started(true);
        assert_eq!(t.on_trap(SWITCH, Some(&link_change()), cx(0, true, &s, &snap)).action, TrapAction::AfterSweep);
        t.reading(Guid(0x20));
        t.after_sweep(S, present);
        assert_eq!((t.poll_timeout(), t.counters.coalesced), (None, 1));
        // Read before it: a quick sweep of that switch, at once.
        let mut t = Traps::default();
        t.sweep_started(true);
        t.reading(Guid(0x20));
        t.on_trap(SWITCH, Some(&link_change()), cx(0, true, &s, &snap));
        t.after_sweep(S, present);
        assert_eq!(t.poll_timeout(), Some(S));
        assert_eq!(t.on_timeout(S, true, true).sweep, Some(Wanted::Quick(vec![Guid(0x20)])));
        // A heavy sweep that starts meanwhile covers it.
        let mut t = Traps::default();
        t.on_trap(SWITCH, Some(&link_change()), cx(0, true, &s, &snap));
        t.sweep_started(true);
        assert_eq!(t.counters.coalesced, 1);
        t.after_sweep(S, present);
        assert_eq!(t.poll_timeout(), None);
    }

    #[test]
    fn a_trap_144_about_a_node_description_reads_it_and_patches_the_snapshot_once() {
        let (mut s, snap) = fabric();
        let mut t = Traps::default();
        let desc = |lid| {
            notice(
                lid,
                NoticeDetails::Trap144 {
                    lid,
                    other_local_changes: true,
                    capability_mask: CapabilityMask::default(),
                    capability_mask2_change: false,
                    hierarchy_info_change: false,
                    sm_priority_change: false,
                    link_speed_enabled_change: false,
                    link_width_enabled_change: false,
                    node_description_change: true,
                    capability_mask2: CapabilityMask2::default(),
                },
            )
        };
        let a = t.on_trap(Lid(3), Some(&desc(Lid(3))), cx(0, false, &s, &snap));
        assert_eq!(a.action, TrapAction::NodeDescription);
        let read = a.read.unwrap();
        assert_eq!(read.req, Req::ReadNodeDesc { guid: Guid(0x103), port: PortNum(1) });
        assert_eq!(read.path, s.nodes[3].path_for(PortNum(1)));
        assert_eq!(t.poll_timeout(), None, "no sweep");
        let mut data = [0u8; 64];
        NodeDescription::new("renamed").emit(&mut data);
        t.on_node_desc(Guid(0x103), &Outcome::Reply { status: 0, data }, &mut s, 5, false);
        assert_eq!(s.nodes[3].desc, "renamed");
        assert_eq!(t.poll_timeout(), Some(5 + DESC_QUIET_NS));
        let due = t.on_timeout(5 + DESC_QUIET_NS, false, true);
        assert_eq!(due.descs, Some(HashMap::from([(Guid(0x103), "renamed".to_owned())])), "even during a sweep");
        assert_eq!(due.sweep, None);
        // No answer: a heavy sweep finds out why.
        t.on_node_desc(Guid(0x103), &Outcome::Timeout, &mut s, 10 * S, false);
        assert_eq!(t.on_timeout(10 * S + GATHER_NS, true, true).sweep, Some(Wanted::Quick(vec![Guid(0x103)])));
        // A node the snapshot does not know, or one carried from an earlier sweep: a sweep.
        assert_eq!(t.on_trap(Lid(8), Some(&desc(Lid(8))), cx(20 * S, false, &s, &snap)).action, TrapAction::Sweep);
        s.nodes[3].carried = true;
        let a = t.on_trap(Lid(3), Some(&desc(Lid(3))), cx(20 * S, false, &s, &snap));
        assert_eq!((a.action, a.read), (TrapAction::Sweep, None));
    }
}
