//! Discovery: the component that owns what a heavy sweep's exploration keeps between answers.
//!
//! Owns [`Discovery`]: the last completed sweep's subnet (kept aside while a new one is
//! discovered, for the nodes that may not answer this time: [`silent`]), the linked ports whose
//! NodeInfo probe got no answer, and the switch PortInfo reads still to queue (one port of each
//! switch in turn, so that no switch's agent holds the window). A switch's ports are read only
//! once its SwitchInfo is in and, when that showed PortStateChange, once the write clearing it
//! is answered: a port that changes after its read sets the flag again, for the light sweep to
//! find (cleared after the reads, such a change would be lost). It takes the subnet and the room
//! in the SMP window as arguments and answers with the Gets to queue and the nodes carried
//! over; it sends nothing and touches no other component's state.
//!
//! The subnet being built is the coordinator's (`Sm::subnet`, which the getters and the other
//! components read); the handling of each answer, which feeds the subnet and the components
//! that learn from it, is the coordinator's side in `coordinator/discovery.rs`.

pub mod silent;

use std::collections::VecDeque;

use ibsm_mad::{DrPath, Lid, PortNum};

pub use silent::BlockedNode;

use super::state::{NodeIdx, Subnet};
use super::transactions::{Req, Request};

/// The PortInfo Gets of one switch still to queue: ports `next..=last`.
#[derive(Debug, Clone, Copy)]
struct PortReads {
    node: NodeIdx,
    path: DrPath,
    next: u8,
    last: u8,
}

/// What discovery keeps between answers.
#[derive(Debug, Default)]
pub(super) struct Discovery {
    /// The subnet of the last sweep, while a new one is being discovered.
    last: Option<Subnet>,
    /// Linked ports whose NodeInfo probe got no answer in this sweep.
    unanswered: Vec<(NodeIdx, PortNum)>,
    /// Switch PortInfo Gets yet to queue, one switch after another in turn.
    port_reads: VecDeque<PortReads>,
    /// Switches whose PortStateChange is being cleared: their reads wait for the clear.
    clearing: Vec<PortReads>,
}

impl Discovery {
    /// A heavy sweep starts: no port reads left from an earlier one.
    pub fn sweep_started(&mut self) {
        self.port_reads.clear();
        self.clearing.clear();
    }

    /// Discovery starts: the last sweep's `subnet` is kept aside (when it has nodes) and
    /// `subnet` starts empty.
    pub fn start(&mut self, subnet: &mut Subnet) {
        let last = std::mem::take(subnet);
        if !last.nodes.is_empty() {
            self.last = Some(last);
        }
        self.unanswered.clear();
    }

    /// The NodeInfo probe through `at` (node, port) got no answer.
    pub fn unanswered(&mut self, at: (NodeIdx, PortNum)) {
        self.unanswered.push(at);
    }

    /// Plans the PortInfo reads of switch `node` (ports `0..=last`, by `path`).
    pub fn read_ports(&mut self, node: NodeIdx, path: DrPath, last: u8) {
        self.port_reads.push_back(PortReads { node, path, next: 0, last });
    }

    /// Plans the PortInfo reads of switch `node` for when the write clearing its
    /// PortStateChange is answered ([`Discovery::cleared`]).
    pub fn read_ports_after_clear(&mut self, node: NodeIdx, path: DrPath, last: u8) {
        self.clearing.push(PortReads { node, path, next: 0, last });
    }

    /// The write clearing `node`'s PortStateChange was answered (or failed: its ports are read
    /// all the same, and a flag left set brings a quick sweep later): its reads are planned.
    /// `false` when no read waited for it (a clear outside discovery).
    pub fn cleared(&mut self, node: NodeIdx) -> bool {
        let Some(i) = self.clearing.iter().position(|r| r.node == node) else { return false };
        let r = self.clearing.swap_remove(i);
        self.port_reads.push_back(r);
        true
    }

    /// Up to `room` planned PortInfo Gets, one port of each switch in turn: a switch's agent
    /// serves one SMP at a time, so its 49 reads queued at once would keep the window waiting
    /// on it while the other switches idle.
    pub(crate) fn port_reads(&mut self, room: usize) -> Vec<Request> {
        let mut gets = Vec::new();
        while gets.len() < room {
            let Some(mut r) = self.port_reads.pop_front() else { break };
            gets.push(Request::sweep(r.path, Req::GetPortInfo { node: r.node, port: PortNum(r.next) }));
            if r.next < r.last {
                r.next += 1;
                self.port_reads.push_back(r);
            }
        }
        gets
    }

    /// Whether PortInfo reads are still to queue.
    pub fn reads_pending(&self) -> bool {
        !self.port_reads.is_empty()
    }

    /// The SM's LID in the last completed sweep, if there was one.
    pub fn last_sm_lid(&self) -> Option<Lid> {
        self.last.as_ref().map(Subnet::local_lid)
    }
}

#[cfg(test)]
mod tests {
    use ibsm_mad::Guid;
    use ibsm_mad::attrs::PortState;

    use super::*;
    use crate::core::testing::star;

    #[test]
    fn port_reads_go_one_port_of_each_switch_in_turn_within_the_room() {
        let mut d = Discovery::default();
        d.read_ports(1, DrPath::local(), 2);
        d.read_ports(5, DrPath::local(), 1);
        let at = |reqs: Vec<Request>| -> Vec<(NodeIdx, u8)> {
            reqs.iter()
                .map(|r| match r.req {
                    Req::GetPortInfo { node, port } => (node, port.0),
                    _ => (usize::MAX, 0),
                })
                .collect()
        };
        assert_eq!(at(d.port_reads(3)), [(1, 0), (5, 0), (1, 1)]);
        assert!(d.reads_pending());
        assert_eq!(at(d.port_reads(0)), []);
        assert_eq!(at(d.port_reads(10)), [(5, 1), (1, 2)]);
        assert!(!d.reads_pending());
        d.read_ports(1, DrPath::local(), 2);
        d.sweep_started();
        assert!(!d.reads_pending(), "a new sweep plans its own");
    }

    #[test]
    fn a_silent_node_behind_a_live_port_is_carried_over_with_what_only_it_reaches() {
        let mut d = Discovery::default();
        let mut subnet = star(0x102, 0x103);
        subnet.nodes[2].ports[1].lid = Lid(3);
        d.start(&mut subnet);
        assert!(subnet.nodes.is_empty());
        assert_eq!(d.last_sm_lid(), Some(Lid(0)));
        // This sweep: the SM's CA and the switch answer; the switch's port 2 is up but the CA
        // behind it is silent, and port 3's cable was pulled.
        let mut now = star(0x102, 0x103);
        now.nodes.truncate(2);
        now.by_guid.retain(|_, &mut i| i < 2);
        for p in [2, 3] {
            now.nodes[1].ports[p].remote = None;
        }
        if let Some(i) = now.nodes[1].ports[3].info.as_mut() {
            i.port_state = PortState::Down;
        }
        d.unanswered((1, PortNum(2)));
        d.unanswered((1, PortNum(3)));
        let blocked = d.carry_over_silent(&mut now);
        assert_eq!(blocked, [BlockedNode { guid: Guid(0x102), desc: "n102".to_owned() }]);
        let idx = now.by_guid[&Guid(0x102)];
        assert!(now.nodes[idx].carried);
        assert_eq!(now.nodes[idx].ports[1].lid, Lid(3), "its LID stays in the routing");
        assert_eq!(now.nodes[1].ports[2].remote, Some((idx, PortNum(1))));
        assert!(!now.by_guid.contains_key(&Guid(0x103)), "behind a port that went down: gone");
    }
}
