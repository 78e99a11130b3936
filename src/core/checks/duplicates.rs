//! Duplicate GUIDs, found while discovering: a node reached through a new route answers with
//! the NodeGUID of a node already found, but cannot be that node (another node type or port
//! count, another port GUID on that port, or that port already cabled to another neighbour).
//! The suspicion is confirmed by asking the new route's NodeInfo again; confirmed, both
//! instances are quarantined: the cables into them at those ports are taken out of the model
//! (never armed, never routed), a CA instance gets no LID, and the SM goes on with the rest of
//! the fabric (OpenSM exits by default). End ports of different nodes with one port GUID
//! (which would share a LID) are quarantined the same way before LIDs are given. The SM's own
//! node is never cut off: only the other instance is left out then.

use std::collections::{BTreeMap, BTreeSet};

use ibsm_mad::attrs::NodeInfo;
use ibsm_mad::{Attribute, Guid, PortNum};

use super::state::NodeIdx;
use super::transactions::{Outcome, Req, Request};
use super::{Sm, SmEvent};

/// Duplicated GUIDs and the ports left out because of them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Quarantine {
    /// Each duplicated NodeGUID and the port ends (node GUID, port) taken out of the model:
    /// the ports of both instances and of their neighbours.
    pub guids: BTreeMap<Guid, BTreeSet<(Guid, u8)>>,
}

impl Quarantine {
    /// Whether `end` was taken out.
    pub fn holds(&self, end: (Guid, u8)) -> bool {
        self.guids.values().any(|ends| ends.contains(&end))
    }
}

impl Sm {
    /// Whether `ni`, reached from `from`, cannot be the known node `idx` of the same GUID.
    pub(super) fn contradicts(&self, idx: NodeIdx, ni: &NodeInfo, from: Option<(NodeIdx, PortNum)>) -> bool {
        let Some(known) = self.subnet.node(idx) else { return false };
        if known.info.node_type != ni.node_type || known.info.num_ports != ni.num_ports {
            return true;
        }
        let Some(rec) = known.port(ni.local_port_num) else { return true };
        if !known.is_switch() && rec.guid.is_some_and(|g| g != ni.port_guid) {
            return true;
        }
        rec.remote.is_some_and(|r| Some(r) != from)
    }

    /// The new route's NodeInfo asked again: still the same GUID and still a contradiction
    /// quarantines both instances; anything else is discovered as usual.
    pub(super) fn on_confirm_node_info(&mut self, request: &Request, from: (NodeIdx, PortNum), outcome: &Outcome) {
        let ni = match outcome {
            Outcome::Reply { status: 0, data } => NodeInfo::parse(data).ok(),
            _ => None,
        };
        let Some(ni) = ni else {
            self.unanswered.push(from);
            self.fail(request, outcome);
            return;
        };
        match self.subnet.by_guid.get(&ni.node_guid) {
            Some(&idx) if self.contradicts(idx, &ni, Some(from)) => self.quarantine_both(idx, &ni, from),
            _ => self.discovered(request, Some(from), ni, true),
        }
    }

    /// Takes both instances of `ni`'s GUID out at the contradicting port.
    fn quarantine_both(&mut self, idx: NodeIdx, ni: &NodeInfo, from: (NodeIdx, PortNum)) {
        let guid = ni.node_guid;
        let end = |s: &Self, (n, p): (NodeIdx, PortNum)| s.subnet.node(n).map(|node| (node.info.node_guid, p.0));
        let mut ends = BTreeSet::new();
        ends.extend(end(self, from));
        ends.insert((guid, ni.local_port_num.0));
        let local = self.subnet.local.map(|(n, _)| n);
        let arrival = ni.local_port_num;
        // The known instance, unless it is the SM's own node: its cable at that port goes too.
        if local != Some(idx)
            && let Some(r) = self.subnet.node(idx).and_then(|n| n.port(arrival)).and_then(|r| r.remote)
        {
            ends.extend(end(self, r));
            for (n, p) in [(idx, arrival), r] {
                if let Some(rec) = self.subnet.nodes.get_mut(n).and_then(|n| n.port_mut(p)) {
                    rec.remote = None;
                }
            }
        }
        let known_before = self.quarantine.guids.contains_key(&guid) || self.quarantine_sweep.guids.contains_key(&guid);
        self.quarantine_sweep.guids.entry(guid).or_default().extend(ends.iter().copied());
        if !known_before {
            self.events.push_back(SmEvent::DuplicateGuid { guid, ports: ends.into_iter().collect() });
        }
    }

    /// Whether the end port `(node, port)` belongs to a quarantined instance (it gets no LID):
    /// a CA whose NodeGUID is duplicated, or any end port whose port GUID is.
    pub(super) fn quarantined_end(&self, node: NodeIdx, port: PortNum) -> bool {
        let Some(n) = self.subnet.node(node) else { return false };
        if self.subnet.local.map(|(l, _)| l) == Some(node) {
            return false;
        }
        let end = (n.info.node_guid, port.0);
        let by_node =
            !n.is_switch() && self.quarantine_sweep.guids.get(&n.info.node_guid).is_some_and(|e| e.contains(&end));
        let by_port = n
            .port(port)
            .and_then(|r| r.guid)
            .and_then(|g| self.quarantine_sweep.guids.get(&g))
            .is_some_and(|e| e.contains(&end));
        by_node || by_port
    }

    /// Before LIDs are given: end ports of different nodes that answer with one port GUID (they
    /// would get one LID) are quarantined, each with its cable, except the SM's own port.
    pub(super) fn quarantine_duplicate_port_guids(&mut self) {
        let mut by_guid: BTreeMap<Guid, Vec<(NodeIdx, PortNum)>> = BTreeMap::new();
        for (i, n) in self.subnet.nodes.iter().enumerate() {
            for p in n.end_ports() {
                if let Some(g) = n.port(p).and_then(|r| r.guid) {
                    by_guid.entry(g).or_default().push((i, p));
                }
            }
        }
        let local = self.subnet.local;
        for (guid, at) in by_guid.into_iter().filter(|(_, at)| at.len() > 1) {
            let mut ends = BTreeSet::new();
            for (i, p) in at {
                let Some(node_guid) = self.subnet.node(i).map(|n| n.info.node_guid) else { continue };
                if local == Some((i, p)) || (local.map(|l| l.0) == Some(i) && p == PortNum(0)) {
                    continue;
                }
                ends.insert((node_guid, p.0));
                let remote = self.subnet.node(i).and_then(|n| n.port(p)).and_then(|r| r.remote);
                if let Some(r) = remote {
                    if let Some(g) = self.subnet.node(r.0).map(|n| n.info.node_guid) {
                        ends.insert((g, r.1.0));
                    }
                    for (n, q) in [(i, p), r] {
                        if let Some(rec) = self.subnet.nodes.get_mut(n).and_then(|n| n.port_mut(q)) {
                            rec.remote = None;
                        }
                    }
                }
            }
            let known_before = self.quarantine.guids.contains_key(&guid);
            self.quarantine_sweep.guids.entry(guid).or_default().extend(ends.iter().copied());
            if !known_before {
                self.events.push_back(SmEvent::DuplicateGuid { guid, ports: ends.into_iter().collect() });
            }
        }
    }

    /// The end of a sweep: its quarantine becomes the one reported.
    pub(super) fn settle_quarantine(&mut self) {
        self.quarantine = std::mem::take(&mut self.quarantine_sweep);
    }

    /// The duplicated GUIDs of the last completed sweep.
    pub fn quarantine(&self) -> &Quarantine {
        &self.quarantine
    }

    /// Queues the re-query of a suspected duplicate.
    pub(super) fn confirm_duplicate(&mut self, request: &Request, from: (NodeIdx, PortNum)) {
        self.tx.push(Request::sweep(request.path, Req::ConfirmNodeInfo { from }));
    }
}
