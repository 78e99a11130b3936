//! Discovery: the component that owns what a heavy sweep's exploration keeps between answers.
//!
//! Owns [`Discovery`]: the last completed sweep's subnet (kept aside while a new one is
//! discovered, for the nodes that may not answer this time: [`silent`]), the linked ports whose
//! NodeInfo probe got no answer, and the switch PortInfo reads still to queue (one port of each
//! switch in turn, so that no switch's agent holds the window), and what each switch's port 0
//! said of extended speeds 2 (one byte a node: a switch's other ports take their capability
//! from port 0, and reading that from the port's record, 152 bytes somewhere in the switch's
//! ports, was a cache miss on nearly every PortInfo answer of a large fabric, since the reads
//! go round the switches). A switch's ports are read only
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

use ibsm_mad::attrs::PortInfo;
use ibsm_mad::{DrPath, Lid, PortNum};

pub use silent::BlockedNode;

use super::state::{NodeIdx, Subnet};
use super::transactions::{Req, Request, has_extended_speeds2};

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
    /// By node index: what the PortInfo of the switch's port 0 kept in this sweep's subnet
    /// says of extended speeds 2 ([`Port0::Unread`] for a CA and before the read).
    port0: Vec<Port0>,
}

/// What a switch's port 0 said of extended speeds 2 (XDR), as kept in this sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Port0 {
    /// Not read (yet), or not a switch.
    #[default]
    Unread,
    /// Read: no extended speeds 2.
    Plain,
    /// Read: extended speeds 2 supported.
    Xdr,
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
        self.port0.clear();
    }

    /// The PortInfo of switch `node`'s port 0 was kept in the subnet: `xdr` is whether it
    /// advertises extended speeds 2.
    pub fn port0_kept(&mut self, node: NodeIdx, xdr: bool) {
        if self.port0.len() <= node {
            self.port0.resize(node + 1, Port0::Unread);
        }
        self.port0[node] = if xdr { Port0::Xdr } else { Port0::Plain };
    }

    /// What switch `node`'s port 0 said of extended speeds 2 in this sweep.
    pub fn port0(&self, node: NodeIdx) -> Port0 {
        self.port0.get(node).copied().unwrap_or_default()
    }

    /// Whether a plain PortInfo read of `node`'s `port` that answered `pi` must be made again
    /// with SMSupportExtendedSpeeds (a port with extended speeds 2 reports them only to such a
    /// read; OpenSM's two-stage read). A switch's other ports take the capability from its port
    /// 0 once that is kept ([`Discovery::port0_kept`]); before, and for a CA, each port from
    /// its own answer.
    pub fn wants_ext_read(&self, node: NodeIdx, port: PortNum, pi: &PortInfo) -> bool {
        match (port.0, self.port0(node)) {
            (1.., Port0::Xdr) => true,
            (1.., Port0::Plain) => false,
            _ => has_extended_speeds2(pi),
        }
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
    /// on it while the other switches idle. Made as they are taken (no list of them is built:
    /// this runs after most answers of a bring-up).
    pub(crate) fn port_reads(&mut self, room: usize) -> impl Iterator<Item = Request> + '_ {
        let mut left = room;
        std::iter::from_fn(move || {
            left = left.checked_sub(1)?;
            let mut r = self.port_reads.pop_front()?;
            let get = Request::sweep(r.path, Req::GetPortInfo { node: r.node, port: PortNum(r.next) });
            if r.next < r.last {
                r.next += 1;
                self.port_reads.push_back(r);
            }
            Some(get)
        })
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
        let at = |reqs: &mut dyn Iterator<Item = Request>| -> Vec<(NodeIdx, u8)> {
            reqs.map(|r| match r.req {
                Req::GetPortInfo { node, port } => (node, port.0),
                _ => (usize::MAX, 0),
            })
            .collect()
        };
        assert_eq!(at(&mut d.port_reads(3)), [(1, 0), (5, 0), (1, 1)]);
        assert!(d.reads_pending());
        assert_eq!(at(&mut d.port_reads(0)), []);
        assert_eq!(at(&mut d.port_reads(10)), [(5, 1), (1, 2)]);
        assert!(!d.reads_pending());
        d.read_ports(1, DrPath::local(), 2);
        d.sweep_started();
        assert!(!d.reads_pending(), "a new sweep plans its own");
    }

    #[test]
    fn a_switch_port_takes_extended_speeds_2_from_port_0_once_kept_and_a_sweep_forgets_it() {
        use ibsm_mad::attrs::{CapabilityMask, CapabilityMask2};
        let xdr = PortInfo {
            capability_mask: CapabilityMask::IS_CAPABILITY_MASK2_SUPPORTED,
            capability_mask2: CapabilityMask2::IS_EXTENDED_SPEEDS2_SUPPORTED,
            ..PortInfo::default()
        };
        let plain = PortInfo::default();
        let mut d = Discovery::default();
        // Nothing kept: every port (and a CA's) answers for itself.
        for p in [0, 1, 7] {
            assert!(d.wants_ext_read(3, PortNum(p), &xdr));
            assert!(!d.wants_ext_read(3, PortNum(p), &plain));
        }
        // Switch 3's port 0 kept with extended speeds 2: its other ports follow it, whatever
        // they say; port 0 itself and other nodes still answer for themselves.
        d.port0_kept(3, true);
        assert_eq!(d.port0(3), Port0::Xdr);
        assert!(d.wants_ext_read(3, PortNum(5), &plain));
        assert!(!d.wants_ext_read(3, PortNum(0), &plain));
        assert!(!d.wants_ext_read(2, PortNum(5), &plain) && !d.wants_ext_read(9, PortNum(1), &plain));
        // Kept without: none of its ports is read again, even one that claims it.
        d.port0_kept(3, false);
        assert_eq!(d.port0(3), Port0::Plain);
        assert!(!d.wants_ext_read(3, PortNum(5), &xdr));
        assert!(d.wants_ext_read(3, PortNum(0), &xdr));
        // A new discovery starts from nothing (node indices are the new subnet's).
        d.start(&mut Subnet::default());
        assert_eq!(d.port0(3), Port0::Unread);
        assert!(d.wants_ext_read(3, PortNum(5), &xdr));
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
