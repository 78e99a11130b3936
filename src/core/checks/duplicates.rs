//! The duplicate-GUID half of [`Checks`]. Duplicate GUIDs, found while discovering: a node reached through a new route answers with
//! the NodeGUID of a node already found, but cannot be that node (another node type or port
//! count, another port GUID on that port, or that port already cabled to another neighbour).
//! The suspicion is confirmed by asking the new route's NodeInfo again; confirmed, both
//! instances are quarantined: the cables into them at those ports are taken out of the model
//! (never armed, never routed), a CA instance gets no LID, and the SM goes on with the rest of
//! the fabric (OpenSM exits by default). End ports of different nodes with one port GUID
//! (which would share a LID) are quarantined the same way before LIDs are given. The SM's own
//! node is never cut off: only the other instance is left out then. Discovery asks the
//! questions (the re-query is its SMP); this file only judges the answers.

use std::collections::{BTreeMap, BTreeSet};

use ibsm_mad::attrs::NodeInfo;
use ibsm_mad::{Guid, PortNum};

use super::Checks;
use crate::core::events::SmEvent;
use crate::core::state::{NodeIdx, Subnet};

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

/// Whether `ni`, reached from `from`, cannot be the known node `idx` of the same GUID.
pub fn contradicts(subnet: &Subnet, idx: NodeIdx, ni: &NodeInfo, from: Option<(NodeIdx, PortNum)>) -> bool {
    let Some(known) = subnet.node(idx) else { return false };
    if known.info.node_type != ni.node_type || known.info.num_ports != ni.num_ports {
        return true;
    }
    let Some(rec) = known.port(ni.local_port_num) else { return true };
    if !known.is_switch() && rec.guid.is_some_and(|g| g != ni.port_guid) {
        return true;
    }
    rec.remote.is_some_and(|r| Some(r) != from)
}

impl Checks {
    /// The re-query confirmed a duplicate: takes both instances of `ni`'s GUID out at the
    /// contradicting port (the known one's cable too, unless it is the SM's own node). Returns
    /// the event when the GUID is new.
    pub fn quarantine_both(
        &mut self,
        subnet: &mut Subnet,
        idx: NodeIdx,
        ni: &NodeInfo,
        from: (NodeIdx, PortNum),
    ) -> Option<SmEvent> {
        let guid = ni.node_guid;
        let end = |s: &Subnet, (n, p): (NodeIdx, PortNum)| s.node(n).map(|node| (node.info.node_guid, p.0));
        let mut ends = BTreeSet::new();
        ends.extend(end(subnet, from));
        ends.insert((guid, ni.local_port_num.0));
        let local = subnet.local.map(|(n, _)| n);
        let arrival = ni.local_port_num;
        // The known instance, unless it is the SM's own node: its cable at that port goes too.
        if local != Some(idx)
            && let Some(r) = subnet.node(idx).and_then(|n| n.port(arrival)).and_then(|r| r.remote)
        {
            ends.extend(end(subnet, r));
            for (n, p) in [(idx, arrival), r] {
                if let Some(rec) = subnet.nodes.get_mut(n).and_then(|n| n.port_mut(p)) {
                    rec.remote = None;
                }
            }
        }
        let known_before = self.quarantine.guids.contains_key(&guid) || self.quarantine_sweep.guids.contains_key(&guid);
        self.quarantine_sweep.guids.entry(guid).or_default().extend(ends.iter().copied());
        (!known_before).then(|| SmEvent::DuplicateGuid { guid, ports: ends.into_iter().collect() })
    }

    /// Whether the end port `(node, port)` belongs to a quarantined instance (it gets no LID):
    /// a CA whose NodeGUID is duplicated, or any end port whose port GUID is.
    pub fn quarantined_end(&self, subnet: &Subnet, node: NodeIdx, port: PortNum) -> bool {
        let Some(n) = subnet.node(node) else { return false };
        if subnet.local.map(|(l, _)| l) == Some(node) {
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
    /// Returns an event for each GUID not known before.
    pub fn quarantine_duplicate_port_guids(&mut self, subnet: &mut Subnet) -> Vec<SmEvent> {
        let mut by_guid: BTreeMap<Guid, Vec<(NodeIdx, PortNum)>> = BTreeMap::new();
        for (i, n) in subnet.nodes.iter().enumerate() {
            for p in n.end_ports() {
                if let Some(g) = n.port(p).and_then(|r| r.guid) {
                    by_guid.entry(g).or_default().push((i, p));
                }
            }
        }
        let local = subnet.local;
        let mut events = Vec::new();
        for (guid, at) in by_guid.into_iter().filter(|(_, at)| at.len() > 1) {
            let mut ends = BTreeSet::new();
            for (i, p) in at {
                let Some(node_guid) = subnet.node(i).map(|n| n.info.node_guid) else { continue };
                if local == Some((i, p)) || (local.map(|l| l.0) == Some(i) && p == PortNum(0)) {
                    continue;
                }
                ends.insert((node_guid, p.0));
                let remote = subnet.node(i).and_then(|n| n.port(p)).and_then(|r| r.remote);
                if let Some(r) = remote {
                    if let Some(g) = subnet.node(r.0).map(|n| n.info.node_guid) {
                        ends.insert((g, r.1.0));
                    }
                    for (n, q) in [(i, p), r] {
                        if let Some(rec) = subnet.nodes.get_mut(n).and_then(|n| n.port_mut(q)) {
                            rec.remote = None;
                        }
                    }
                }
            }
            let known_before = self.quarantine.guids.contains_key(&guid);
            self.quarantine_sweep.guids.entry(guid).or_default().extend(ends.iter().copied());
            if !known_before {
                events.push(SmEvent::DuplicateGuid { guid, ports: ends.into_iter().collect() });
            }
        }
        events
    }
}
