//! Light sweeps: between heavy sweeps, the master reads every switch's SwitchInfo every
//! `sweep-interval`; switches whose PortStateChange is set get a quick sweep (their ports read;
//! see `quick.rs`, which falls back to a heavy sweep), one that does not answer brings a heavy
//! sweep, and otherwise nothing happens until the next light sweep. It also reads the
//! SMInfo of the other SMs the last heavy sweep found: a second master (a standby that took
//! over when it lost the master's answers, say) is resolved there: this SM stands by if the
//! other is better, else tells it with a trap 144 to sweep, find this master and stand by.
//!
//! Owns the light sweep's schedule and its book of outstanding reads. Traps are MADs like any
//! other and can be lost (or a switch may never repeat one); this is how a change is noticed
//! anyway, at the cost of one SMP per switch per interval (2,880 every 10 s on the 27,648-HCA
//! tree). The heavy or quick sweep's SwitchInfo Set clears PortStateChange, so one change
//! brings one sweep.

use ibsm_mad::attrs::{SmInfo, SmState as WireSmState, SwitchInfo};
use ibsm_mad::{Attribute, Guid};

use super::Sm;
use super::election::FoundSm;
use super::state::{SmState, SweepPhase};
use super::transactions::{Op, Outcome, Req, Request};

/// A light sweep in progress.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Light {
    /// When the next light sweep is due.
    pub at: Option<u64>,
    /// Reads not answered yet.
    pub pending: usize,
    /// A read showed a change (or failed).
    pub changed: bool,
    /// Switches whose PortStateChange was set.
    pub psc: Vec<super::state::NodeIdx>,
    /// A read failed (a switch gone or not answering: a heavy sweep).
    pub failed: bool,
    /// Light sweeps completed.
    pub done: u64,
}

impl Sm {
    /// After a heavy sweep: the next light sweep one interval from now.
    pub(super) fn schedule_light(&mut self) {
        self.light.at = self.cfg.sweep_interval_ns.filter(|&d| d > 0).map(|d| self.now.saturating_add(d));
    }

    /// Starts the light sweep when it is due (a master with no sweep running).
    pub(super) fn light_timer(&mut self) {
        if self.light.at.is_none_or(|t| t > self.now) || self.light.pending > 0 {
            return;
        }
        self.light.at = None;
        if self.state != SmState::Master || self.phase != SweepPhase::Up {
            return;
        }
        let mut reads = Vec::new();
        for (i, n) in self.subnet.nodes.iter().enumerate().filter(|(_, n)| n.is_switch() && !n.carried) {
            reads.push(Request { path: n.path, req: Req::LightSwitchInfo { node: i }, op: Op::Light });
        }
        let me = self.port_guid;
        for f in self.election.found.iter().filter(|f| f.info.guid != me) {
            reads.push(Request {
                path: f.path,
                req: Req::LightSmInfo { guid: f.info.guid, key: self.cfg.sm_key },
                op: Op::Light,
            });
        }
        self.light.pending = reads.len();
        self.light.changed = false;
        self.light.psc.clear();
        self.light.failed = false;
        if reads.is_empty() {
            self.schedule_light();
        }
        for r in reads {
            self.tx.push(r);
        }
    }

    /// A light sweep's SwitchInfo read came back (or failed).
    pub(super) fn on_light_switch_info(&mut self, node: super::state::NodeIdx, outcome: &Outcome) {
        match outcome {
            Outcome::Reply { status: 0, data } => match SwitchInfo::parse(data) {
                Ok(si) if si.port_state_change => {
                    self.light.changed = true;
                    self.light.psc.push(node);
                }
                Ok(_) => {}
                Err(_) => self.light.failed = true,
            },
            _ => self.light.failed = true,
        }
        self.light_read_done();
    }

    /// A light sweep's SMInfo read of another SM came back (or failed: it may be gone, which
    /// the next heavy sweep sees).
    pub(super) fn on_light_sm_info(&mut self, guid: Guid, outcome: &Outcome) {
        let info = match outcome {
            Outcome::Reply { status: 0, data } => SmInfo::parse(data).ok(),
            _ => None,
        };
        let found = self.election.found.iter().find(|f| f.info.guid == guid).copied();
        if let (Some(info), Some(f), SmState::Master) = (info, found, self.state)
            && info.sm_state == WireSmState::Master
            && info.sm_key == self.cfg.sm_key
        {
            // Its port's LID now (it may have had none when the heavy sweep found it).
            let lid =
                self.snapshot.as_ref().and_then(|s| s.by_guid(guid).and_then(|at| s.port(at))).map_or(f.lid, |p| p.lid);
            let other = FoundSm { info, lid, ..f };
            if super::election::better((info.priority & 0x0f, info.guid), (self.priority(), self.port_guid)) {
                // Two masters: the worse one (this one) stands by.
                self.light.pending = 0;
                self.light.at = None;
                self.become_standby(other);
                return;
            }
            self.nudge(&other);
        }
        self.light_read_done();
    }

    /// One light read less to wait for; at the last, the light sweep's verdict.
    fn light_read_done(&mut self) {
        self.light.pending = self.light.pending.saturating_sub(1);
        if self.light.pending > 0 {
            return;
        }
        self.light.done += 1;
        let master_up = self.state == SmState::Master && self.phase == SweepPhase::Up;
        if master_up && self.light.failed {
            self.start_sweep(self.now);
        } else if master_up && self.light.changed {
            // Switches that saw a port change: a quick sweep of them (heavy if it cannot).
            let psc = std::mem::take(&mut self.light.psc);
            self.sweep_switches(&psc);
        } else if self.phase == SweepPhase::Up {
            self.schedule_light();
        }
    }
}
