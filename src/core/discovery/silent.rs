//! Silent nodes, a part of [`Discovery`]. Partial sweeps: what the SM does about nodes that stop answering while their links stay up.
//!
//! A sweep that simply leaves out a silent switch would program LinearFDBTop and the LFTs of
//! every other switch without the LIDs behind it, cutting off its hosts although their links
//! may be fine (a busy or wedged management agent, a lost SMP burst). So after discovery, every
//! port that is still up but whose NodeInfo probe got no answer is followed into the last
//! completed sweep's subnet: the node that was there, and whatever was reachable only through
//! it, is carried into this sweep as it was (GUIDs, ports, LIDs, links). Routing sees it, so
//! the other switches keep their routes to its LIDs; nothing is sent to it (it is not
//! configured, programmed or armed); the report names it and the sweep is not complete, so a
//! re-sweep follows, and when the node answers again it is discovered and finished normally.
//!
//! A port that went down is not followed: a node behind a pulled cable is really gone.

use std::collections::{HashMap, VecDeque};

use ibsm_mad::{Guid, PortNum};

use super::Discovery;
use crate::core::state::{Node, NodeIdx, Subnet};

/// A node that did not answer in a sweep, as the report names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockedNode {
    /// NodeGUID.
    pub guid: Guid,
    /// NodeDescription from the last sweep that read it.
    pub desc: String,
}

impl Discovery {
    /// Carries the nodes behind unanswered, still-linked ports over from the last sweep into
    /// `subnet`. Returns the nodes that did not answer (the first node behind each such port).
    pub fn carry_over_silent(&self, subnet: &mut Subnet) -> Vec<BlockedNode> {
        let Some(last) = self.last.as_ref() else { return Vec::new() };
        let mut blocked = Vec::new();
        // Old index -> new index of every carried node.
        let mut carried: HashMap<NodeIdx, NodeIdx> = HashMap::new();
        let mut queue = VecDeque::new();
        for &(node, port) in &self.unanswered {
            let Some(old) = old_peer(subnet, last, node, port) else { continue };
            let Some(on) = last.node(old.0) else { continue };
            if subnet.by_guid.contains_key(&on.info.node_guid) || carried.contains_key(&old.0) {
                continue;
            }
            blocked.push(BlockedNode { guid: on.info.node_guid, desc: on.desc.clone() });
            carried.insert(old.0, usize::MAX);
            queue.push_back(old.0);
        }
        // Everything reachable only through a carried node comes along (a switch's hosts).
        let mut order = Vec::new();
        while let Some(o) = queue.pop_front() {
            order.push(o);
            let Some(n) = last.node(o) else { continue };
            if !n.is_switch() {
                continue;
            }
            for r in n.ports.iter().skip(1) {
                let Some((rn, _)) = r.remote else { continue };
                let Some(peer) = last.node(rn) else { continue };
                if !subnet.by_guid.contains_key(&peer.info.node_guid) && !carried.contains_key(&rn) {
                    carried.insert(rn, usize::MAX);
                    queue.push_back(rn);
                }
            }
        }
        for &o in &order {
            let Some(n) = last.node(o) else { continue };
            let mut copy: Node = n.clone();
            copy.carried = true;
            for r in &mut copy.ports {
                r.remote = None;
            }
            let idx = subnet.nodes.len();
            subnet.by_guid.insert(copy.info.node_guid, idx);
            subnet.nodes.push(copy);
            carried.insert(o, idx);
        }
        // Links: every old link of a carried node whose far end is in this sweep's subnet (carried
        // or discovered with the facing port still up and unexplained).
        for &o in &order {
            let (Some(n), Some(&idx)) = (last.node(o), carried.get(&o)) else { continue };
            for (p, r) in n.ports.iter().enumerate() {
                let Some((rn, rp)) = r.remote else { continue };
                let Some(peer_guid) = last.node(rn).map(|x| x.info.node_guid) else { continue };
                let Some(&now_idx) = subnet.by_guid.get(&peer_guid) else { continue };
                let Some(peer_rec) = subnet.node(now_idx).and_then(|x| x.port(rp)) else { continue };
                let peer_free = peer_rec.remote.is_none() && (peer_rec.is_linked() || subnet.nodes[now_idx].carried);
                if peer_free {
                    let port = PortNum(u8::try_from(p).unwrap_or(u8::MAX));
                    subnet.link((idx, port), (now_idx, rp));
                }
            }
        }
        blocked
    }
}

/// The node and port at the far end of `(node, port)` of `now` in the last sweep's subnet.
fn old_peer(now: &Subnet, last: &Subnet, node: NodeIdx, port: PortNum) -> Option<(NodeIdx, PortNum)> {
    let guid = now.node(node)?.info.node_guid;
    let old = *last.by_guid.get(&guid)?;
    let rec = now.node(node)?.port(port)?;
    if !rec.is_linked() {
        return None;
    }
    last.node(old)?.port(port)?.remote
}
