//! Repair sweeps: a sweep whose only failures were Sets (a PortInfo, SwitchInfo, LFT or
//! P_KeyTable write that got no answer or an error) is followed, soon, by a sweep without
//! discovery: the model is current, so configuring, routing (the last tables again), LFT
//! programming, arming and activating compare what each node should hold with what it answered,
//! and SMPs go only to the nodes whose Sets failed. Half a second after the sweep, then one and
//! two seconds; after three attempts, or when discovery itself failed, the usual heavy re-sweep
//! takes over. The report names the nodes a Set failed on (`failed_nodes`).
//!
//! When a repair is due is the `schedule` component's; this file keeps the sweep's book of
//! failures and starts the repair sweep.

use super::discovery::BlockedNode;
use super::schedule::SweepKind;
use super::transactions::Req;
use super::{Sm, SmState, SweepPhase};

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

    /// Whether the running sweep can be repaired without discovery: only Sets failed.
    pub(super) fn repairable(&self) -> bool {
        let s = &self.sweep;
        !s.failed_sets.is_empty() && s.read_failures == 0 && s.blocked.is_empty()
    }

    /// Starts the repair sweep when it is due (a master with no sweep running).
    pub(super) fn repair_timer(&mut self) {
        if self.phase != SweepPhase::Up || !self.schedule.take_repair(self.now) {
            return;
        }
        if self.state != SmState::Master {
            return;
        }
        self.begin_sweep(SweepKind::Repair);
        self.enter(SweepPhase::ConfiguringPorts);
        self.configure_ports();
        self.advance();
    }
}
