//! Discovery's answers: breadth-first exploration of the fabric with directed-route SMPs.
//!
//! The coordinator's side of discovery (an `impl Sm`: each answer feeds the subnet being built
//! and the components that learn from it: M_Keys, fabric checks, programming, the election).
//! Owns the handling of NodeInfo, NodeDescription, PortInfo, SwitchInfo and LFT-read answers
//! during the Discovering phase. Starting from the SM's own port (the empty route), every new
//! node is asked for its NodeDescription, the PortInfo of every port (switches) or of the port
//! the route enters (CAs), and SwitchInfo; every linked switch port whose far end is not known
//! yet is probed with NodeInfo one hop further. Nodes are recognised by NodeGUID, so loops,
//! parallel links and several routes to one node are discovered once; CA ports are recognised
//! by the port the route enters. Failed SMPs (error status or silence after retries) leave the
//! port unexplored and are reported; they never stop discovery. A port whose PortInfo (port 0's,
//! for a switch) advertises extended speeds 2 (XDR) is read a second time with
//! SMSupportExtendedSpeeds (attribute modifier bit 31), the read whose answer is kept.

use ibsm_mad::attrs::{LinearForwardingTable, NodeDescription, NodeInfo, NodeType, PortInfo, SwitchInfo};
use ibsm_mad::{Attribute, DrPath, PortNum};

use crate::core::Sm;
use crate::core::state::{Node, NodeIdx, PortRecord};
use crate::core::transactions::{Outcome, Req, Request, has_extended_speeds2};

/// The data of a successful reply, or `None` (after reporting the failure).
fn ok_data(outcome: &Outcome) -> Option<&[u8; 64]> {
    match outcome {
        Outcome::Reply { status: 0, data } => Some(data),
        _ => None,
    }
}

impl Sm {
    /// Queues the first SMP of a sweep: NodeInfo of the SM's own node. The last sweep's subnet
    /// is kept aside for the nodes that may not answer this time.
    pub(crate) fn start_discovery(&mut self) {
        self.discovery.start(&mut self.subnet);
        self.checks.discovery_started();
        self.tx.push(Request::sweep(DrPath::local(), Req::NodeInfo { from: None }));
    }

    pub(crate) fn on_node_info(&mut self, request: &Request, from: Option<(NodeIdx, PortNum)>, outcome: &Outcome) {
        let Some(ni) = ok_data(outcome).and_then(|d| NodeInfo::parse(d).ok()) else {
            if let Some(f) = from {
                self.discovery.unanswered(f);
            }
            self.fail(request, outcome);
            return;
        };
        self.discovered(request, from, ni, false);
    }

    /// The new route's NodeInfo asked again: still the same GUID and still a contradiction
    /// quarantines both instances ([`crate::core::checks::Checks::quarantine_both`]); anything else
    /// is discovered as usual.
    pub(crate) fn on_confirm_node_info(&mut self, request: &Request, from: (NodeIdx, PortNum), outcome: &Outcome) {
        let Some(ni) = ok_data(outcome).and_then(|d| NodeInfo::parse(d).ok()) else {
            self.discovery.unanswered(from);
            self.fail(request, outcome);
            return;
        };
        match self.subnet.by_guid.get(&ni.node_guid) {
            Some(&idx) if crate::core::checks::contradicts(&self.subnet, idx, &ni, Some(from)) => {
                let event = self.checks.quarantine_both(&mut self.subnet, idx, &ni, from);
                self.events.extend(event);
            }
            _ => self.discovered(request, Some(from), ni, true),
        }
    }

    /// A node answered NodeInfo along `request`'s route: a new node, or another route to one
    /// already found (after `confirmed`, a suspected duplicate GUID asked again, is not one).
    pub(crate) fn discovered(
        &mut self,
        request: &Request,
        from: Option<(NodeIdx, PortNum)>,
        ni: NodeInfo,
        confirmed: bool,
    ) {
        let path = request.path;
        let arrival = ni.local_port_num;
        if let Some(&idx) = self.subnet.by_guid.get(&ni.node_guid) {
            if !confirmed
                && let Some(f) = from
                && crate::core::checks::contradicts(&self.subnet, idx, &ni, from)
            {
                // Perhaps a duplicate GUID: asked again before anything is decided.
                self.tx.push(Request::sweep(request.path, Req::ConfirmNodeInfo { from: f }));
                return;
            }
            self.mkeys.learn_neighbor(&self.subnet, from, ni.port_guid);
            if let Some(f) = from {
                self.subnet.link(f, (idx, arrival));
            }
            let Some(node) = self.subnet.nodes.get_mut(idx) else { return };
            if !node.is_switch()
                && let Some(port) = node.port_mut(arrival)
                && port.path.is_none()
            {
                // Another port of a known CA: read its PortInfo through this route.
                port.path = Some(Box::new(path));
                port.guid = Some(ni.port_guid);
                self.tx.push(Request::sweep(path, Req::GetPortInfo { node: idx, port: arrival }));
            }
            return;
        }
        self.mkeys.learn_neighbor(&self.subnet, from, ni.port_guid);
        let idx = self.subnet.nodes.len();
        let is_switch = ni.node_type == NodeType::Switch;
        let mut ports = vec![PortRecord::default(); usize::from(ni.num_ports) + 1];
        if is_switch {
            for p in &mut ports {
                p.guid = Some(ni.port_guid);
            }
        } else if let Some(p) = ports.get_mut(usize::from(arrival.0)) {
            p.guid = Some(ni.port_guid);
            p.path = Some(Box::new(path));
        } else {
            // A CA claiming to be entered through a port it does not have: unusable.
            self.fail(request, &Outcome::Reply { status: ibsm_mad::ids::status::BAD_FIELD, data: [0; 64] });
            return;
        }
        self.subnet.by_guid.insert(ni.node_guid, idx);
        self.subnet.nodes.push(Node { info: ni, desc: String::new(), switch_info: None, path, ports, carried: false });
        if path.hop_count() == 0 {
            self.subnet.local = Some((idx, arrival));
            self.port_guid = ni.port_guid;
        }
        if let Some(f) = from {
            self.subnet.link(f, (idx, arrival));
        }
        self.tx.push(Request::sweep(path, Req::NodeDesc { node: idx }));
        if is_switch {
            self.traps.reading(ni.node_guid);
            // Its ports are read once the SwitchInfo is in (`on_switch_info`).
            self.tx.push(Request::sweep(path, Req::GetSwitchInfo { node: idx }));
        } else {
            self.tx.push(Request::sweep(path, Req::GetPortInfo { node: idx, port: arrival }));
        }
    }

    pub(crate) fn on_node_desc(&mut self, request: &Request, node: NodeIdx, outcome: &Outcome) {
        let Some(nd) = ok_data(outcome).and_then(|d| NodeDescription::parse(d).ok()) else {
            self.fail(request, outcome);
            return;
        };
        if let Some(n) = self.subnet.nodes.get_mut(node) {
            n.desc = nd.text();
        }
    }

    pub(crate) fn on_port_info(&mut self, request: &Request, node: NodeIdx, port: PortNum, outcome: &Outcome) {
        let Some(pi) = ok_data(outcome).and_then(|d| PortInfo::parse(d).ok()) else {
            self.fail(request, outcome);
            return;
        };
        // A port with extended speeds 2 (XDR) reports them only to a read with
        // SMSupportExtendedSpeeds: read it again so (OpenSM's two-stage read). A switch's other
        // ports say so on port 0 (once its PortInfo is kept; until then, each port for itself).
        if matches!(request.req, Req::GetPortInfo { .. }) && self.discovery.wants_ext_read(node, port, &pi) {
            self.tx.push(Request::sweep(request.path, Req::GetPortInfoExt { node, port }));
            return;
        }
        self.mkeys.learn_key(&self.subnet, node, port, &pi);
        self.ask_if_sm(node, port, &pi);
        let local = self.subnet.local;
        if port.0 == 0 && self.subnet.node(node).is_some_and(crate::core::state::Node::is_switch) {
            self.distrust_if_other_master(node, pi.master_sm_lid);
        }
        let disabled = self.subnet.node(node).is_some_and(|n| self.port_disabled(n.info.node_guid, port));
        let Some(n) = self.subnet.nodes.get_mut(node) else { return };
        let is_switch = n.is_switch();
        let path = n.path;
        let Some(rec) = n.port_mut(port) else { return };
        rec.info = Some(pi);
        if is_switch && port.0 == 0 {
            self.discovery.port0_kept(node, has_extended_speeds2(&pi));
        }
        self.routing.unsettle_view();
        // Explore further out of linked switch ports, and out of the SM's own CA port; never
        // through a port an operator disabled (a sweep disables it again).
        let may_explore = !disabled && if is_switch { port.0 >= 1 } else { local == Some((node, port)) };
        if may_explore
            && rec.is_linked()
            && rec.remote.is_none()
            && let Ok(next) = path.push(port.0)
        {
            self.tx.push(Request::sweep(next, Req::NodeInfo { from: Some((node, port)) }));
        }
    }

    /// A switch's SwitchInfo: kept, and its ports read in turn with the other switches'
    /// (`feed_port_reads`). A PortStateChange it shows is cleared first, and the ports are read
    /// after the clear: a change after a port's read then sets it again for the light sweep
    /// (cleared later, with the port settings, it would be lost). Failed, the ports are read
    /// all the same.
    pub(crate) fn on_switch_info(&mut self, request: &Request, node: NodeIdx, outcome: &Outcome) {
        let si = ok_data(outcome).and_then(|d| SwitchInfo::parse(d).ok());
        if si.is_none() {
            self.fail(request, outcome);
        }
        let Some(n) = self.subnet.nodes.get_mut(node) else { return };
        let (path, last) = (n.path, n.info.num_ports);
        match si {
            Some(si) if si.port_state_change => {
                n.switch_info = Some(SwitchInfo { port_state_change: false, ..si });
                let clear = SwitchInfo { port_state_change: true, ..si };
                self.tx.push(Request::sweep(path, Req::SetSwitchInfo { node, info: clear }));
                self.discovery.read_ports_after_clear(node, path, last);
            }
            _ => {
                n.switch_info = si.or(n.switch_info);
                self.discovery.read_ports(node, path, last);
                self.feed_port_reads();
            }
        }
        if si.is_some() {
            self.programming.switch_info_read(&self.subnet, node);
            self.publish_digests_if_changed();
        }
    }

    /// Queues the planned PortInfo Gets of discovered switches, one port of each switch in
    /// turn, while fewer than a window's worth of SMPs wait: a switch's agent serves one SMP at
    /// a time, so its 49 reads queued at once would keep the window waiting on it while the
    /// other switches idle.
    pub(crate) fn feed_port_reads(&mut self) {
        // Called after every answer (2 million in a k = 48 bring-up), nearly always with none.
        if !self.discovery.reads_pending() {
            return;
        }
        let room = self.tx.window().saturating_sub(self.tx.sizes().0);
        for r in self.discovery.port_reads(room) {
            self.tx.push(r);
        }
    }

    /// A switch whose port 0 names another master SM LID than ours may have had its tables
    /// written by that SM: what this SM cached about it is not trusted; it is read back.
    fn distrust_if_other_master(&mut self, node: NodeIdx, master: ibsm_mad::Lid) {
        let Some(ours) = self.discovery.last_sm_lid() else { return };
        if master != ours {
            self.programming.distrust(&self.subnet, node, master);
            self.publish_digests_if_changed();
        }
    }

    pub(crate) fn on_get_lft(&mut self, request: &Request, node: NodeIdx, block: u32, outcome: &Outcome) {
        let Some(t) = ok_data(outcome).and_then(|d| LinearForwardingTable::parse(d).ok()) else {
            // Unknown content: the block will simply be written.
            self.fail(request, outcome);
            return;
        };
        let Some(guid) = self.subnet.node(node).map(|n| n.info.node_guid) else { return };
        self.programming.lft_read(guid, block, t);
        self.publish_digests_if_changed();
    }
}
