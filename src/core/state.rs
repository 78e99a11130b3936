//! The SM's explicit states and its model of the subnet found by discovery.
//!
//! Owns: [`SmState`], [`SweepPhase`], and the discovered subnet ([`Subnet`]; its [`Node`]s and
//! [`PortRecord`]s are [`super::nodes`]', re-exported here): every node by GUID with the attributes read from it, the directed routes that
//! reach it, the links between ports, and the LIDs assigned; and [`Subnet::describe`], the subnet
//! as the neutral description the fabric-view builder ([`crate::fabric_view`]) reads; and
//! [`port_info_set`], a PortInfo as read turned into the base of a Set. Holds values only: no
//! MADs are built here and nothing here sends anything.

use ibsm_mad::attrs::{LinkDownDefaultState, PhysPortState, PortInfo, PortState};
use ibsm_mad::{Lid, PortNum};

use super::nodes::Nodes;
use crate::fabric_view::{DescNode, DescPort, FabricDesc, PortRef};

/// What the SM as a whole is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SmState {
    /// Created, no sweep started yet.
    NotActive,
    /// The first sweep is running (or a standby's takeover sweep).
    Discovering,
    /// Another SM is master; this one watches it, ready to take over.
    Standby,
    /// A sweep has completed: this SM is the master of the subnet.
    Master,
}

/// The phases of one sweep, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SweepPhase {
    /// Breadth-first directed-route discovery (NodeInfo, NodeDescription, PortInfo, SwitchInfo).
    Discovering,
    /// Choosing a unique, LMC-aligned base LID for every end port (no MADs).
    AssigningLids,
    /// PortInfo read-modify-write of every port, SwitchInfo of every switch.
    ConfiguringPorts,
    /// Running the routing engine on the discovered fabric (no MADs).
    Routing,
    /// Writing the LinearForwardingTable blocks that differ from what switches hold.
    ProgrammingLfts,
    /// Every linked port from Init to Armed (both ends of each link).
    Arming,
    /// Every armed port to Active.
    Activating,
    /// The sweep is over.
    Up,
}

impl SweepPhase {
    /// Every phase, in order.
    pub const ALL: [SweepPhase; 8] = [
        SweepPhase::Discovering,
        SweepPhase::AssigningLids,
        SweepPhase::ConfiguringPorts,
        SweepPhase::Routing,
        SweepPhase::ProgrammingLfts,
        SweepPhase::Arming,
        SweepPhase::Activating,
        SweepPhase::Up,
    ];

    /// A short kebab-case name for logs and summaries.
    pub const fn name(self) -> &'static str {
        match self {
            SweepPhase::Discovering => "discovering",
            SweepPhase::AssigningLids => "assigning-lids",
            SweepPhase::ConfiguringPorts => "configuring-ports",
            SweepPhase::Routing => "routing",
            SweepPhase::ProgrammingLfts => "programming-lfts",
            SweepPhase::Arming => "arming",
            SweepPhase::Activating => "activating",
            SweepPhase::Up => "up",
        }
    }
}

pub use super::nodes::{Node, NodeIdx, PortRecord};

/// `info` (a PortInfo as read) with the fields a Set must leave alone set to "no change": the
/// base of every PortInfo Set, which then changes only what it means to.
pub fn port_info_set(info: &PortInfo) -> PortInfo {
    let mut s = *info;
    s.port_state = PortState::NoChange;
    s.port_physical_state = PhysPortState::NoChange;
    s.link_down_default_state = LinkDownDefaultState::NoChange;
    s
}

/// The subnet as discovered in the current sweep.
#[derive(Debug, Clone, Default)]
pub struct Subnet {
    /// Every node reached, in discovery order (index 0 is the SM's own node). That order
    /// follows the timing of the answers; [`Subnet::canonical_order`] does not. Changed only
    /// through [`Nodes`]' methods, which mark what they hand out for the SA's snapshot.
    pub nodes: Nodes,
    /// NodeGUID to index.
    pub by_guid: super::guid_hash::GuidMap<NodeIdx>,
    /// The SM's own node and port.
    pub local: Option<(NodeIdx, PortNum)>,
}

/// One step of FxHash's fold (one multiply a word), for digests of accidental change, not of
/// an adversary's ([`Subnet::routing_digest`]: 1 ms at k = 48 where SipHash took several).
pub fn fold(h: u64, x: u64) -> u64 {
    (h.rotate_left(5) ^ x).wrapping_mul(0x517c_c1b7_2722_0a95)
}

impl Subnet {
    /// The node at `idx`.
    pub fn node(&self, idx: NodeIdx) -> Option<&Node> {
        self.nodes.get(idx)
    }

    /// Records a cable between two ports (both directions).
    pub fn link(&mut self, a: (NodeIdx, PortNum), b: (NodeIdx, PortNum)) {
        if let Some(p) = self.nodes.get_mut(a.0).and_then(|n| n.port_mut(a.1)) {
            p.remote = Some(b);
        }
        if let Some(p) = self.nodes.get_mut(b.0).and_then(|n| n.port_mut(b.1)) {
            p.remote = Some(a);
        }
    }

    /// Number of switches.
    pub fn switch_count(&self) -> usize {
        self.nodes.iter().filter(|n| n.is_switch()).count()
    }

    /// A digest of what routing reads of the subnet: every node's GUID, kind, port count and
    /// whether it is carried, and every port's GUID, LID, cable, VLCap and whether its link is
    /// up. Equal digests before and after the ports' configuration say that a route made of
    /// the subnet before it (as the early route is, [`super::lft::Routing::want_early`]) is the
    /// route of the subnet after it.
    pub fn routing_digest(&self) -> u64 {
        let mix = fold;
        let mut h = mix(0, self.nodes.len() as u64);
        for n in &self.nodes {
            h = mix(h, n.info.node_guid.0);
            h = mix(
                h,
                u64::from(n.info.node_type.raw()) | u64::from(n.info.num_ports) << 8 | u64::from(n.carried) << 16,
            );
            for r in &n.ports {
                let (remote_node, remote_port) = r.remote.map_or((u64::MAX, 0), |(rn, rp)| (rn as u64, rp.0));
                let info = r.info.map_or(0, |i| 1 | u64::from(r.is_linked()) << 1 | u64::from(i.vl_cap) << 2);
                h = mix(h, r.guid.map_or(0, |g| g.0));
                h = mix(h, remote_node);
                h = mix(
                    h,
                    u64::from(r.lid.0) | u64::from(remote_port) << 16 | info << 24 | u64::from(r.guid.is_some()) << 40,
                );
            }
        }
        h
    }

    /// Number of links seen from both ends, each counted once.
    pub fn link_count(&self) -> usize {
        self.nodes.iter().map(|n| n.ports.iter().filter(|p| p.remote.is_some()).count()).sum::<usize>() / 2
    }

    /// Every node, in an order that depends only on the discovered cabling, never on the order
    /// answers came in: breadth-first from the SM's node over the recorded links, a switch's
    /// ports ascending, the SM's own CA through its own port only, other CAs not crossed. So
    /// nodes come by hop count from the SM, and among equals by their smallest directed route
    /// (the lexicographically smallest of their shortest routes). Nodes no link leads to (none
    /// after a complete discovery) follow in discovery order.
    pub fn canonical_order(&self) -> Vec<NodeIdx> {
        let mut order = Vec::with_capacity(self.nodes.len());
        let mut seen = vec![false; self.nodes.len()];
        if let Some((start, _)) = self.local
            && let Some(s) = seen.get_mut(start)
        {
            *s = true;
            order.push(start);
        }
        let mut next = 0;
        while let Some(&i) = order.get(next) {
            next += 1;
            let Some(n) = self.nodes.get(i) else { continue };
            let crossed = |p: usize| {
                if n.is_switch() { p > 0 } else { self.local.is_some_and(|(l, lp)| l == i && usize::from(lp.0) == p) }
            };
            for (p, rec) in n.ports.iter().enumerate() {
                let Some((peer, _)) = rec.remote.filter(|_| crossed(p)) else { continue };
                if let Some(s) = seen.get_mut(peer)
                    && !*s
                {
                    *s = true;
                    order.push(peer);
                }
            }
        }
        order.extend((0..self.nodes.len()).filter(|&i| !seen[i]));
        order
    }

    /// The base LID assigned to the SM's own port.
    pub fn local_lid(&self) -> Lid {
        self.local
            .and_then(|(n, p)| {
                let node = self.nodes.get(n)?;
                let p = if node.is_switch() { PortNum(0) } else { p };
                node.port(p).map(|r| r.lid)
            })
            .unwrap_or(Lid::UNASSIGNED)
    }

    /// The subnet as the fabric-view builder's description: description node `i` is
    /// [`Subnet::nodes`]`[i]` (discovery order); a switch lists port 0 and every external port,
    /// a CA its end ports; a port has a peer where its link is up and both ends were discovered,
    /// unless the far end was read with its link down: the two ends were read on either side of
    /// a change (a cable cut during the sweep), and a cable is routed over only when both ends
    /// agree (else only one direction of it would be).
    pub fn describe(&self) -> FabricDesc<'_> {
        let far_down = |(node, port): (NodeIdx, PortNum)| {
            self.nodes.get(node).and_then(|n| n.port(port)).is_some_and(|r| r.info.is_some() && !r.is_linked())
        };
        let nodes = self
            .nodes
            .iter()
            .map(|n| {
                let peer = |r: &PortRecord| {
                    r.remote.filter(|&far| r.is_linked() && !far_down(far)).map(|(node, port)| PortRef { node, port })
                };
                let ports = if n.is_switch() {
                    n.ports
                        .iter()
                        .enumerate()
                        .filter_map(|(p, r)| {
                            let num = PortNum(u8::try_from(p).ok()?);
                            let peer = if p == 0 { None } else { peer(r) };
                            Some(DescPort { num, guid: r.guid.unwrap_or(n.info.port_guid), lid: r.lid, peer })
                        })
                        .collect()
                } else {
                    n.end_ports()
                        .filter_map(|num| {
                            let r = n.port(num)?;
                            Some(DescPort { num, guid: r.guid?, lid: r.lid, peer: peer(r) })
                        })
                        .collect()
                };
                DescNode {
                    kind: n.info.node_type,
                    guid: n.info.node_guid,
                    name: &n.desc,
                    num_ports: n.info.num_ports,
                    ports,
                }
            })
            .collect();
        FabricDesc { nodes }
    }
}

#[cfg(test)]
mod tests {
    use ibsm_mad::attrs::{Mtu, PortState};

    use super::*;
    use crate::core::testing::star;

    #[test]
    fn the_routing_digest_moves_with_links_and_lids_not_with_port_settings() {
        let mut s = star(0x102, 0x103);
        let d = s.routing_digest();
        assert_eq!(d, star(0x102, 0x103).routing_digest(), "a function of the subnet");
        // What the port configuration writes: not what routing reads.
        if let Some(i) = s.nodes[1].ports[2].info.as_mut() {
            i.neighbor_mtu = Mtu::from_raw(5);
            i.operational_vls = 4;
            i.port_state = PortState::Armed;
        }
        assert_eq!(s.routing_digest(), d);
        // A link down, a LID moved, a cable moved: routing reads them.
        let mut down = s.clone();
        if let Some(i) = down.nodes[1].ports[2].info.as_mut() {
            i.port_state = PortState::Down;
        }
        assert_ne!(down.routing_digest(), d);
        let mut lid = s.clone();
        lid.nodes[2].ports[1].lid = Lid(9);
        assert_ne!(lid.routing_digest(), d);
        let mut cable = s.clone();
        cable.nodes[1].ports[2].remote = None;
        assert_ne!(cable.routing_digest(), d);
    }
}
