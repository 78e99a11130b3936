//! What a trap makes the master do, once it has been acknowledged with TrapRepress.
//!
//! Owns the trap policy: which traps bring a heavy sweep (128 link state change, 144 with a
//! capability change, and anything unknown), which do not (129–131 mark a port unhealthy; 144
//! about a NodeDescription only re-reads that; 256–259 are security reports), the suppression
//! of identical traps from one source past a threshold, the rate limit on trap-driven heavy
//! sweeps, and the coalescing of traps that arrive during a sweep: a trap 128 from a switch
//! whose ports the running sweep asked for after the trap arrived is already seen by that
//! sweep, so both ends of one pulled cable cost one heavy sweep, not two.
//!
//! A trap that is suppressed, deferred or coalesced is never lost: the deferred sweep runs when
//! the rate limit allows, and the light sweep finds any PortStateChange left behind.

use std::collections::{BTreeMap, HashMap};

use ibsm_mad::attrs::{NodeDescription, Notice, NoticeDetails};
use ibsm_mad::header::{Mad, MadHeader, Method};
use ibsm_mad::ids::status;
use ibsm_mad::{Attribute, Guid, Lid, MAD_LEN, PortNum};

use super::Sm;
use super::events::SmEvent;
pub use super::events::TrapAction;
use super::io::MadSource;
use super::requests::{SMP_DATA, reply_to};
use super::state::{SmState, SweepPhase};
use super::transactions::{Op, Outcome, Req, Request};

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
    pub deferred_at: Option<u64>,
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
    /// Entries each of its tables holds (for [`Sm::footprint`]).
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

    /// When [`Sm::handle_timeout`] is due for a deferred or quick sweep or a NodeDescription
    /// patch.
    pub fn poll_timeout(&self) -> Option<u64> {
        [self.deferred_at, self.descs_at, self.quick_at].into_iter().flatten().min()
    }
}

impl Sm {
    /// What traps did: counters and unhealthy ports.
    pub fn trap_book(&self) -> &Traps {
        &self.traps
    }

    /// Light sweeps completed.
    pub fn light_sweeps(&self) -> u64 {
        self.light.done()
    }

    /// A trap (SubnTrap(Notice)) from `src`: acknowledged with TrapRepress, heard by the SA's
    /// subscribers, a bad M_Key reported, and acted on ([`Sm::act_on_trap`]).
    pub(super) fn on_trap(&mut self, h: &MadHeader, bytes: &[u8], src: &MadSource) {
        self.counters.traps += 1;
        let notice = bytes.get(SMP_DATA..).and_then(|d| ibsm_mad::attrs::Notice::parse(d).ok());
        let number = notice.as_ref().and_then(|n| match n.source {
            ibsm_mad::attrs::NoticeSource::Generic { trap_number, .. } => Some(trap_number),
            ibsm_mad::attrs::NoticeSource::Vendor { .. } => None,
        });
        // TrapRepress: the trap itself, method 0x07, back to the issuer (not a response: no R bit,
        // but sent once like one), with the issuer's M_Key (a wrong one would be refused). Not
        // for a bad-M_Key trap about a refused TrapRepress: the port does not know this SM's key,
        // and repressing again would only raise the next such trap, for ever.
        let repress_refused = notice.as_ref().is_some_and(|n| {
            matches!(n.details, ibsm_mad::attrs::NoticeDetails::Trap256 { method, .. } if method == Method::TrapRepress.raw())
        });
        if let Some(mut repress) = bytes.get(..MAD_LEN).map(<[u8]>::to_vec).filter(|_| !repress_refused) {
            let key = self.mkeys.issuer_key(&self.cfg.m_key, self.ports(), src.slid);
            let mut m = Mad::new_unchecked(&mut repress[..]);
            m.set_method(Method::TrapRepress);
            m.set_status(status::OK);
            ibsm_mad::smp::Smp::new_unchecked(&mut repress[..]).set_m_key(key);
            self.respond(repress, reply_to(h, src));
        }
        // Subscribers hear of it (as OpenSM forwards traps to InformInfo subscribers); a bad
        // M_Key is a security event, reported per source.
        if let Some(n) = notice.as_ref() {
            if number == Some(256) {
                let ports = super::mkeys::Ports { snapshot: self.sa.snapshot(), subnet: &self.subnet };
                let event = self.mkeys.on_bad_mkey(&self.cfg.m_key, ports, self.now, src.slid, &n.details);
                self.events.extend(event);
            }
            // Only to subscribers who share a partition with the issuer (o13-17.1.1).
            self.sa.notify_trap(n, self.now);
        }
        let action = self.act_on_trap(src.slid, notice.as_ref());
        self.events.push_back(SmEvent::TrapReceived { from: src.slid, number, action });
    }

    /// Acts on an acknowledged trap from `from` (its Notice, when it parsed).
    pub(super) fn act_on_trap(&mut self, from: Lid, notice: Option<&Notice>) -> TrapAction {
        let number = notice.and_then(Notice::trap_number);
        *self.traps.counters.by_number.entry(number.unwrap_or(0)).or_insert(0) += 1;
        if !matches!(self.state, SmState::Master | SmState::Discovering) {
            return TrapAction::Ignored;
        }
        if let Some(n) = notice
            && self.traps.duplicate(from, n.details, self.now)
        {
            self.traps.counters.suppressed += 1;
            return TrapAction::Suppressed;
        }
        match notice.map(|n| n.details) {
            Some(NoticeDetails::PortHealth { trap, lid, port }) => {
                self.mark_unhealthy(trap, lid, port);
                TrapAction::Unhealthy
            }
            Some(NoticeDetails::Trap144 {
                lid,
                other_local_changes: true,
                node_description_change: true,
                capability_mask2_change: false,
                hierarchy_info_change: false,
                sm_priority_change: false,
                link_speed_enabled_change: false,
                link_width_enabled_change: false,
                ..
            }) if self.reread_node_desc(lid) => TrapAction::NodeDescription,
            Some(
                NoticeDetails::Trap64 { .. }
                | NoticeDetails::Trap65 { .. }
                | NoticeDetails::Trap66 { .. }
                | NoticeDetails::Trap67 { .. }
                | NoticeDetails::Trap256 { .. }
                | NoticeDetails::Trap257(_)
                | NoticeDetails::Trap258(_)
                | NoticeDetails::Trap259 { .. },
            ) => TrapAction::Reported,
            Some(NoticeDetails::Trap128 { lid }) => {
                self.trap_sweep(self.switch_at(lid).or_else(|| self.switch_at(from)))
            }
            _ => self.trap_sweep(None),
        }
    }

    /// The node at `lid` in the last sweep's snapshot: its GUID, whether it is a switch, and
    /// the port the LID names.
    fn node_at(&self, lid: Lid) -> Option<(Guid, bool, u8)> {
        let snap = self.sa.snapshot()?;
        let at = snap.by_lid(lid)?;
        let node = snap.node(at.0)?;
        Some((node.info.node_guid, node.is_switch(), at.1))
    }

    /// The node GUID of the switch at `lid` in the last sweep's snapshot.
    fn switch_at(&self, lid: Lid) -> Option<Guid> {
        self.node_at(lid).filter(|n| n.1).map(|n| n.0)
    }

    /// Trap 144 said the NodeDescription of the node at `lid` changed: read it (one SMP).
    /// `false` when the node is unknown (a heavy sweep finds it instead).
    fn reread_node_desc(&mut self, lid: Lid) -> bool {
        let Some((guid, _, port)) = self.node_at(lid) else { return false };
        let Some(node) = self.subnet.by_guid.get(&guid).and_then(|&i| self.subnet.nodes.get(i)) else { return false };
        if node.carried {
            return false;
        }
        let path = node.path_for(PortNum(port));
        self.tx.push(Request { path, req: Req::ReadNodeDesc { guid, port: PortNum(port) }, op: Op::Light });
        true
    }

    /// The NodeDescription read for trap 144 came back: the SA's records show it after a
    /// short quiet time (a boot storm of such traps patches the snapshot once).
    pub(super) fn on_reread_node_desc(&mut self, guid: Guid, outcome: &Outcome) {
        let text = match outcome {
            Outcome::Reply { status: 0, data } => NodeDescription::parse(data).ok().map(|d| d.text()),
            _ => None,
        };
        let Some(text) = text else {
            // The node did not answer: the heavy sweep sorts it out.
            let _ = self.trap_sweep(Some(guid));
            return;
        };
        if let Some(n) = self.subnet.by_guid.get(&guid).and_then(|&i| self.subnet.nodes.get_mut(i)) {
            n.desc.clone_from(&text);
        }
        self.traps.descs.insert(guid, text);
        if self.traps.descs_at.is_none() {
            self.traps.descs_at = Some(self.now.saturating_add(DESC_QUIET_NS));
        }
    }

    /// Patches the snapshot with the NodeDescriptions read since the last patch.
    fn apply_descs(&mut self) {
        self.traps.descs_at = None;
        let descs = std::mem::take(&mut self.traps.descs);
        self.sa.set_node_descs(&descs);
    }

    /// A heavy sweep for a trap from `source`: now, after the running sweep if it misses the
    /// change, or when the rate limit allows.
    fn trap_sweep(&mut self, source: Option<Guid>) -> TrapAction {
        if self.phase != SweepPhase::Up {
            self.traps.mark += 1;
            let mark = self.traps.mark;
            self.traps.during.push((source, mark));
            return TrapAction::AfterSweep;
        }
        self.traps.want_quick(source);
        if self.traps.deferred_at.is_some() {
            return TrapAction::Deferred;
        }
        if self.traps.quick_at.is_some() {
            // Gathered into the sweep about to start.
            self.traps.counters.coalesced += 1;
            return TrapAction::Sweep;
        }
        match self.traps.take_token(self.now) {
            Ok(()) => {
                // Traps that come together (both ends of a cable, every neighbour of a switch
                // that died) are looked into together.
                self.traps.quick_at = Some(self.now.saturating_add(GATHER_NS));
                TrapAction::Sweep
            }
            Err(at) => {
                self.traps.counters.deferred += 1;
                self.traps.deferred_at = Some(at);
                TrapAction::Deferred
            }
        }
    }

    /// Looks into the switches the traps named: a quick sweep of them when they are all known
    /// and one is possible, else a heavy sweep.
    fn sweep_wanted(&mut self) {
        let guids = std::mem::take(&mut self.traps.quick);
        let unknown = std::mem::take(&mut self.traps.quick_unknown);
        self.traps.quick_at = None;
        let idx: Option<Vec<usize>> = guids.iter().map(|g| self.subnet.by_guid.get(g).copied()).collect();
        match idx {
            Some(idx) if !unknown && !idx.is_empty() && self.start_quick_sweep(&idx) => {}
            _ => self.start_sweep(self.now),
        }
    }

    /// Looks into `switches` (a light sweep saw their PortStateChange), as [`Sm::sweep_wanted`].
    pub(super) fn sweep_switches(&mut self, switches: &[usize]) {
        if !self.start_quick_sweep(switches) {
            self.start_sweep(self.now);
        }
    }

    /// At the end of a sweep: sweep again (rate-limited) if a trap during it may show a
    /// change it did not see.
    pub(super) fn traps_after_sweep(&mut self) {
        let by_guid = &self.subnet.by_guid;
        if self.traps.missed(|g| by_guid.contains_key(&g)) && self.traps.deferred_at.is_none() {
            match self.traps.take_token(self.now) {
                Ok(()) => self.traps.quick_at = Some(self.now),
                Err(at) => {
                    self.traps.counters.deferred += 1;
                    self.traps.deferred_at = Some(at);
                }
            }
        }
    }

    /// A deferred trap sweep or a NodeDescription patch is due.
    pub(super) fn traps_timer(&mut self) {
        if self.traps.descs_at.is_some_and(|t| t <= self.now) {
            self.apply_descs();
        }
        if self.traps.deferred_at.is_some_and(|t| t <= self.now) && self.phase == SweepPhase::Up {
            self.traps.deferred_at = None;
            if self.state == SmState::Master {
                let _ = self.traps.take_token(self.now);
                self.sweep_wanted();
            }
        }
        if self.traps.quick_at.is_some_and(|t| t <= self.now) && self.phase == SweepPhase::Up {
            self.traps.quick_at = None;
            if self.state == SmState::Master {
                self.sweep_wanted();
            }
        }
    }

    fn mark_unhealthy(&mut self, trap: u16, lid: Lid, port: PortNum) {
        let Some((guid, ..)) = self.node_at(lid) else { return };
        let e = self.traps.unhealthy.entry((guid, port.0)).or_insert(Unhealthy { trap, count: 0, last_at: self.now });
        *e = Unhealthy { trap, count: e.count + 1, last_at: self.now };
        self.events.push_back(SmEvent::PortUnhealthy { node: guid, port, trap });
    }
}
