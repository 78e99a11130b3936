//! Light sweeps: between heavy sweeps, the master reads every switch's SwitchInfo every
//! `sweep-interval`; a switch whose PortStateChange is set, or one that does not answer, brings
//! a heavy sweep, and otherwise nothing happens until the next light sweep.
//!
//! Owns the light sweep's schedule and its book of outstanding reads. Traps are MADs like any
//! other and can be lost (or a switch may never repeat one); this is how a change is noticed
//! anyway, at the cost of one SMP per switch per interval (2,880 every 10 s on the 27,648-HCA
//! tree). The heavy sweep's SwitchInfo Set clears PortStateChange, so one change brings one
//! heavy sweep.

use ibsm_mad::Attribute;
use ibsm_mad::attrs::SwitchInfo;

use super::Sm;
use super::state::{SmState, SweepPhase};
use super::transactions::{Op, Outcome, Req, Request};

/// A light sweep in progress.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Light {
    /// When the next light sweep is due.
    pub at: Option<u64>,
    /// Reads not answered yet.
    pub pending: usize,
    /// A read showed a change (or failed).
    pub changed: bool,
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
        self.light.pending = reads.len();
        self.light.changed = false;
        if reads.is_empty() {
            self.schedule_light();
        }
        for r in reads {
            self.tx.push(r);
        }
    }

    /// A light sweep's SwitchInfo read came back (or failed).
    pub(super) fn on_light_switch_info(&mut self, outcome: &Outcome) {
        let changed = match outcome {
            Outcome::Reply { status: 0, data } => SwitchInfo::parse(data).map_or(true, |si| si.port_state_change),
            _ => true,
        };
        self.light.changed |= changed;
        self.light.pending = self.light.pending.saturating_sub(1);
        if self.light.pending > 0 {
            return;
        }
        self.light.done += 1;
        if self.light.changed && self.state == SmState::Master && self.phase == SweepPhase::Up {
            self.start_sweep(self.now);
        } else if self.phase == SweepPhase::Up {
            self.schedule_light();
        }
    }
}
