//! Repair sweeps: a sweep whose only failures were Sets (a PortInfo, SwitchInfo, LFT or
//! P_KeyTable write that got no answer or an error) is followed, soon, by a sweep without
//! discovery: the model is current, so configuring, routing (the last tables again), LFT
//! programming, arming and activating compare what each node should hold with what it answered,
//! and SMPs go only to the nodes whose Sets failed. Half a second after the sweep, then one and
//! two seconds; after three attempts, or when discovery itself failed, the usual heavy re-sweep
//! takes over. The report names the nodes a Set failed on (`failed_nodes`).

use super::partial::BlockedNode;
use super::transactions::Req;
use super::{Sm, SmState, SweepPhase};

/// The first repair this long after the sweep; each further one waits twice as long.
const FIRST_DELAY_NS: u64 = 500_000_000;
/// Repairs in a row before the heavy re-sweep takes over.
const ATTEMPTS: u32 = 3;

/// What a sweep is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SweepKind {
    /// Discovery and everything after it.
    Heavy,
    /// Some cables gone: the model updated, routes repaired (`quick.rs`).
    Quick,
    /// Failed Sets redone, without discovery.
    Repair,
}

/// The repair schedule.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Repair {
    /// When the next repair sweep starts.
    pub at: Option<u64>,
    /// Repairs since the last complete sweep.
    pub attempts: u32,
}

impl Sm {
    /// Notes a failed SMP of the running sweep: a Set's node, or a read.
    pub(super) fn note_failure(&mut self, req: &Req) {
        match req {
            Req::SetPortInfo { node, .. }
            | Req::SetSwitchInfo { node, .. }
            | Req::SetLft { node, .. }
            | Req::SetPKeys { node, .. } => {
                self.sweep.failed_sets.insert(*node);
            }
            _ if self.phase == SweepPhase::Discovering => self.sweep.read_failures += 1,
            _ => {}
        }
    }

    /// The nodes a Set failed on in the running sweep.
    pub(super) fn failed_nodes(&self) -> Vec<BlockedNode> {
        self.sweep
            .failed_sets
            .iter()
            .filter_map(|&n| self.subnet.node(n))
            .map(|n| BlockedNode { guid: n.info.node_guid, desc: n.desc.clone() })
            .collect()
    }

    /// After an incomplete sweep: a repair when only Sets failed and attempts are left.
    pub(super) fn schedule_repair(&mut self) -> bool {
        let s = &self.sweep;
        if s.failed_sets.is_empty() || s.read_failures > 0 || !s.blocked.is_empty() || self.repair.attempts >= ATTEMPTS
        {
            return false;
        }
        let delay = FIRST_DELAY_NS << self.repair.attempts;
        self.repair.attempts += 1;
        self.repair.at = Some(self.now.saturating_add(delay));
        true
    }

    /// Starts the repair sweep when it is due (a master with no sweep running).
    pub(super) fn repair_timer(&mut self) {
        if self.repair.at.is_none_or(|t| t > self.now) || self.phase != SweepPhase::Up {
            return;
        }
        self.repair.at = None;
        if self.state != SmState::Master {
            return;
        }
        self.begin_sweep(SweepKind::Repair);
        self.enter(SweepPhase::ConfiguringPorts);
        self.configure_ports();
        self.advance();
    }
}
