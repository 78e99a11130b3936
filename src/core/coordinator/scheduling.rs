//! The coordinator's side of sweep scheduling: `Sm` acting on what the scheduling components
//! answer. The trap book ([`crate::core::traps::Traps`]) decides what a trap is worth and when the
//! sweep it asks for is due; the light sweep ([`crate::core::light::Light`]) reads the switches and
//! judges; a quick sweep ([`crate::core::quick::Quick`]) reads the ports of a few switches and judges;
//! the schedule ([`crate::core::schedule::Schedule`]) says when a repair is due. Here those answers
//! meet the rest of the SM: the SMPs they ask for are queued, a heavy, quick, light or repair
//! sweep is started (only a master sweeps, and only when no sweep runs), the snapshot gets the
//! NodeDescriptions read for traps, and the cabling check hears of cables lost. No state lives
//! here: this is `Sm`'s own code, split from `mod.rs` by concept.

use ibsm_mad::header::{Mad, MadHeader, Method};
use ibsm_mad::ids::status;
use ibsm_mad::{Attribute as _, Lid, MAD_LEN};

use crate::core::events::SmEvent;
use crate::core::io::MadSource;
use crate::core::requests::{SMP_DATA, reply_to};

use crate::core::state::{NodeIdx, SmState, SweepPhase};
use crate::core::{ComputeStep, Sm, light, quick, schedule, traps};

impl Sm {
    /// A trap (SubnTrap(Notice)) from `src`: acknowledged with TrapRepress, heard by the SA's
    /// subscribers, a bad M_Key reported, and acted on ([`Sm::act_on_trap`]).
    pub(in crate::core) fn on_trap(&mut self, h: &MadHeader, bytes: &[u8], src: &MadSource) {
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
                let ports = crate::core::mkeys::Ports { snapshot: self.sa.snapshot(), subnet: &self.subnet };
                let event = self.mkeys.on_bad_mkey(&self.cfg.m_key, ports, self.now, src.slid, &n.details);
                self.events.extend(event);
            }
            // Only to subscribers who share a partition with the issuer (o13-17.1.1).
            self.sa.notify_trap(n, self.now);
        }
        let action = self.act_on_trap(src.slid, notice.as_ref());
        self.count_babble(src.slid, notice.as_ref());
        self.events.push_back(SmEvent::TrapReceived { from: src.slid, number, action });
    }

    /// Acts on an acknowledged trap from `from` (its Notice, when it parsed): the trap book
    /// decides, what it answers is queued here.
    pub(in crate::core) fn act_on_trap(
        &mut self,
        from: Lid,
        notice: Option<&ibsm_mad::attrs::Notice>,
    ) -> traps::TrapAction {
        let cx = traps::Ctx {
            now: self.now,
            acting: matches!(self.state, SmState::Master | SmState::Discovering),
            sweeping: self.phase != SweepPhase::Up,
            snapshot: self.sa.snapshot(),
            subnet: &self.subnet,
        };
        let answer = self.traps.on_trap(from, notice, cx);
        if let Some(read) = answer.read {
            self.tx.push(read);
        }
        self.events.extend(answer.event);
        answer.action
    }

    /// The trap book's deadline: NodeDescriptions into the snapshot, the sweep it asks for.
    pub(in crate::core) fn traps_timer(&mut self) {
        let due = self.traps.on_timeout(self.now, self.phase == SweepPhase::Up, self.state == SmState::Master);
        if let Some(descs) = due.descs {
            // A record patched: the next snapshot compares it with the subnet's node.
            for g in self.sa.set_node_descs(&descs) {
                if let Some(&i) = self.subnet.by_guid.get(&g) {
                    self.subnet.nodes.mark(i);
                }
            }
        }
        match due.sweep {
            Some(traps::Wanted::Quick(guids)) => {
                let idx: Option<Vec<NodeIdx>> = guids.iter().map(|g| self.subnet.by_guid.get(g).copied()).collect();
                self.quick_or_heavy(&idx.unwrap_or_default());
            }
            Some(traps::Wanted::Heavy) => self.start_sweep(self.now),
            None => {}
        }
    }

    /// After a heavy sweep: the next light sweep one interval from now.
    pub(in crate::core) fn schedule_light(&mut self) {
        self.light.schedule(self.now, self.cfg.sweep_interval_ns);
    }

    /// Starts the light sweep when it is due (a master with no sweep running).
    pub(in crate::core) fn light_timer(&mut self) {
        if !self.light.take_due(self.now) || self.state != SmState::Master || self.phase != SweepPhase::Up {
            return;
        }
        if self.sweeping_held() {
            return; // the release's heavy sweep schedules the next one
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
    pub(in crate::core) fn light_read_done(&mut self) {
        let Some(verdict) = self.light.read_done() else { return };
        let master_up = self.state == SmState::Master && self.phase == SweepPhase::Up;
        match verdict {
            light::Verdict::Failed if master_up => self.start_sweep(self.now),
            // Switches that saw a port change: a quick sweep of them (heavy if it cannot).
            light::Verdict::Changed(psc) if master_up => self.quick_or_heavy(&psc),
            _ if self.phase == SweepPhase::Up => self.schedule_light(),
            _ => {}
        }
    }

    /// Looks into `switches` (a light sweep saw their PortStateChange, or traps named them):
    /// a quick sweep of them when one is possible (a master, no sweep running, a completed
    /// sweep before, and [`quick::Quick::start`] agrees), else a heavy sweep. Their
    /// PortStateChange clears go first; each switch's reads follow its clear's answer
    /// ([`Sm::quick_cleared`]).
    pub(in crate::core) fn quick_or_heavy(&mut self, switches: &[NodeIdx]) {
        if self.sweeping_held() {
            return;
        }
        let start = (self.state == SmState::Master && self.phase == SweepPhase::Up && self.sa.snapshot().is_some())
            .then(|| quick::Quick::start(&self.subnet, switches))
            .flatten();
        let Some((quick, reads)) = start else {
            self.start_sweep(self.now);
            return;
        };
        self.begin_sweep(schedule::SweepKind::Quick);
        self.quick = Some(quick);
        self.enter(SweepPhase::Discovering);
        for &s in switches {
            if let Some(n) = self.subnet.node(s) {
                self.traps.reading(n.info.node_guid);
            }
        }
        for r in reads {
            self.tx.push(r);
        }
        self.advance();
    }

    /// In the pipeline, at the end of a quick sweep's reads: on to routing, done, or a heavy
    /// sweep, as [`quick::Quick::judge`] says. `true` when the pipeline goes on.
    pub(in crate::core) fn after_quick_reads(&mut self) -> bool {
        let judged = self.quick.take().map_or_else(quick::Judged::heavy, |q| q.judge(&mut self.subnet));
        // The routing view's relink sets only these ports (the view was settled at the end of
        // the last sweep).
        self.routing.touch_view(&judged.touched);
        if !judged.lost.is_empty() {
            let event = self.checks.cabling_lost(self.cfg.expected_topology.as_deref(), &judged.lost);
            self.events.extend(event);
        }
        for r in judged.far_ends {
            self.tx.push_with_retries(r, 0);
        }
        self.quick = judged.next;
        match judged.verdict {
            quick::Verdict::Route => {
                self.enter(SweepPhase::Routing);
                self.sweep.wait_for(ComputeStep::Route);
                true
            }
            quick::Verdict::Wait => true,
            quick::Verdict::Nothing => {
                // The last sweep's report stands. Traps that came meanwhile are looked into as
                // after any sweep.
                self.enter(SweepPhase::Up);
                self.schedule_light();
                let by_guid = &self.subnet.by_guid;
                self.traps.after_sweep(self.now, |g| by_guid.contains_key(&g));
                false
            }
            quick::Verdict::Heavy => {
                self.enter(SweepPhase::Up);
                self.start_sweep(self.now);
                false
            }
        }
    }

    /// A quick sweep's clear of `node`'s PortStateChange was answered (or failed): its
    /// ports are read now.
    pub(in crate::core) fn quick_cleared(&mut self, node: NodeIdx) {
        if let Some(q) = self.quick.as_mut() {
            for r in q.cleared(node) {
                self.tx.push(r);
            }
        }
    }

    /// Starts the repair sweep when it is due (a master with no sweep running): a sweep without
    /// discovery (the model is current) that configures, routes (the last tables again),
    /// programs, arms and activates, sending SMPs only where a node does not hold what it
    /// should (see `schedule` for when, [`sweep::Sweep::repairable`] for which sweeps).
    pub(in crate::core) fn repair_timer(&mut self) {
        if self.phase != SweepPhase::Up || !self.schedule.take_repair(self.now) || self.state != SmState::Master {
            return;
        }
        if self.sweeping_held() {
            return;
        }
        self.begin_sweep(schedule::SweepKind::Repair);
        self.enter(SweepPhase::ConfiguringPorts);
        self.configure_ports();
        self.advance();
    }
}
