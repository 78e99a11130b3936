//! Offline planning: a topology to the routing input the SM would build after discovering it.
//!
//! The planner walks the topology as the core's discovery does (`core::discovery`): from the
//! SM's port, breadth-first, crossing every port of a switch but, of the SM's own HCA, only the
//! port the SM sits on (its other ports are entered, if at all, from a switch, like any CA's);
//! a CA port is known once a walk enters it. Nodes the walk does not reach are not in the plan,
//! as the SM would not see them. LIDs come from the SM's own allocator
//! ([`crate::core::lids::assign`]) over the end ports in the core's order: nodes in the
//! subnet's canonical order ([`crate::core::state::Subnet::canonical_order`]: by hop count from
//! the SM, then by smallest directed route, which is exactly this walk's order), ports
//! ascending. The result is described ([`FabricDesc`]) and built by the builder the core uses
//! ([`crate::fabric_view::build`]).
//!
//! A live SM meets nodes in the order their answers arrive, which depends on how fast each
//! node's SMA answers; its LIDs do not, as it numbers ports in the canonical order. Ports that
//! already hold LIDs keep them in the SM (the plan assumes none do): give the SM's `guid2lid`
//! table to reproduce the numbering of a fabric that has been up before.

use std::collections::HashMap;

use ibsm_mad::attrs::NodeType;
use ibsm_mad::{Lid, PortNum};
use ibsm_routing::FabricView;
use ibsm_topology::{NodeKind, Topology};

use crate::core::lids::{Guid2Lid, LidRequest, assign};
use crate::fabric_view::{DescNode, DescPort, FabricDesc, PortRef, build};
pub use crate::fabric_view::{LidOwner, OwnerKind};

/// The routing input plus what the dumps need to name things.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// The fabric as the routing engines see it.
    pub view: FabricView,
    /// Switch names, by view switch index.
    pub switch_names: Vec<String>,
    /// Owner of every LID, indexed by LID (`None` for unassigned LIDs).
    pub owners: Vec<Option<LidOwner>>,
    /// The GUID-to-LID table after assignment (what the SM would persist).
    pub guid2lid: Guid2Lid,
}

impl Plan {
    /// Shows the nodes `map` names by those names (infiniband-diags' node name map), the
    /// others by their NodeDescriptions.
    pub fn rename(&mut self, map: &crate::opensm::node_name_map::NameMap) {
        for (name, sw) in self.switch_names.iter_mut().zip(&self.view.switches) {
            if let Some(n) = map.get(sw.guid) {
                n.clone_into(name);
            }
        }
        for owner in self.owners.iter_mut().flatten() {
            if let Some(n) = map.get(owner.node_guid) {
                n.clone_into(&mut owner.name);
            }
        }
    }

    /// The plan of a described fabric: the built view, its switches' names and its LIDs' owners;
    /// `guid2lid` is kept as given.
    pub fn from_desc(desc: &FabricDesc<'_>, lmc: u8, guid2lid: Guid2Lid) -> Plan {
        let built = build(desc, lmc);
        let switch_names =
            built.switch_nodes.iter().map(|&i| desc.nodes.get(i).map_or_else(String::new, |n| n.name.to_owned()));
        let owners = built.owners.iter().map(|o| o.and_then(|at| desc.lid_owner(at))).collect();
        Plan { view: built.view, switch_names: switch_names.collect(), owners, guid2lid }
    }
}

/// Builds the plan for `topo` with `lmc`, starting from `table` (empty for a fresh SM). The SM
/// sits at `at` (node index, port), or on the first cabled CA port, or on the first switch.
pub fn plan(topo: &Topology, lmc: u8, table: Guid2Lid, at: Option<(usize, u8)>) -> Plan {
    let at = at.or_else(|| topo.first_cabled_ca_port()).or_else(|| {
        let s = topo.nodes.iter().position(|n| n.kind == NodeKind::Switch)?;
        Some((s, 0))
    });
    let walk = at.map(|at| Walk::from(topo, at)).unwrap_or_default();
    // End ports in the core's order: nodes in the canonical order (this walk's), ports ascending.
    let who: Vec<(usize, u8)> = walk
        .order
        .iter()
        .flat_map(|&i| walk.known[i].iter().map(move |&p| (i, p)))
        .filter(|&(i, p)| p == 0 || topo.nodes[i].kind != NodeKind::Switch)
        .collect();
    let reqs: Vec<LidRequest> =
        who.iter().map(|&(i, p)| LidRequest { guid: topo.nodes[i].port_guid(p), current: Lid::UNASSIGNED }).collect();
    let mut guid2lid = table;
    let lids: HashMap<(usize, u8), Lid> = who.into_iter().zip(assign(&reqs, lmc, &mut guid2lid)).collect();
    let nodes = walk
        .order
        .iter()
        .map(|&i| {
            let n = &topo.nodes[i];
            let ports = walk.known[i]
                .iter()
                .map(|&p| {
                    let peer = n.peer(p).and_then(|peer| {
                        let node = walk.pos[peer.node]?;
                        walk.known[peer.node].contains(&peer.port).then_some(PortRef { node, port: PortNum(peer.port) })
                    });
                    let lid = lids.get(&(i, p)).copied().unwrap_or(Lid::UNASSIGNED);
                    DescPort { num: PortNum(p), guid: n.port_guid(p), lid, peer }
                })
                .collect();
            let kind = match n.kind {
                NodeKind::Switch => NodeType::Switch,
                NodeKind::Ca => NodeType::Ca,
                NodeKind::Router => NodeType::Router,
            };
            DescNode { kind, guid: n.node_guid, name: n.node_desc(), num_ports: n.num_ports, ports }
        })
        .collect();
    Plan::from_desc(&FabricDesc { nodes }, lmc, guid2lid)
}

/// What the core's discovery reaches from the SM's port.
#[derive(Debug, Default)]
struct Walk {
    /// Topology node indices in the order discovery meets them.
    order: Vec<usize>,
    /// Position in `order` of each topology node (`None`: not reached).
    pos: Vec<Option<usize>>,
    /// Known ports of each topology node, ascending: every port of a reached switch, the ports
    /// a walk entered of a CA.
    known: Vec<Vec<u8>>,
}

impl Walk {
    /// Breadth-first from `at`, neighbours by ascending port number. A switch is crossed
    /// through every cabled port; a CA only through the SM's own port, and only at the start.
    fn from(topo: &Topology, at: (usize, u8)) -> Walk {
        let len = topo.nodes.len();
        let mut w = Walk { order: Vec::new(), pos: vec![None; len], known: vec![Vec::new(); len] };
        let Some(start) = topo.nodes.get(at.0) else { return w };
        w.reach(topo, at.0);
        if start.kind != NodeKind::Switch {
            w.known[at.0].push(at.1);
        }
        let mut next = 0;
        while let Some(&i) = w.order.get(next) {
            next += 1;
            let n = &topo.nodes[i];
            let crossed: Vec<u8> = if n.kind == NodeKind::Switch {
                (1..=n.num_ports).collect()
            } else if i == at.0 {
                vec![at.1]
            } else {
                Vec::new()
            };
            for p in crossed {
                let Some(peer) = n.peer(p).filter(|peer| peer.node < len) else { continue };
                w.reach(topo, peer.node);
                let known = &mut w.known[peer.node];
                if topo.nodes[peer.node].kind != NodeKind::Switch && !known.contains(&peer.port) {
                    known.push(peer.port);
                    known.sort_unstable();
                }
            }
        }
        w
    }

    /// Appends node `i` to the discovery order if it is new; a switch knows all its ports.
    fn reach(&mut self, topo: &Topology, i: usize) {
        if self.pos[i].is_some() {
            return;
        }
        self.pos[i] = Some(self.order.len());
        self.order.push(i);
        if topo.nodes[i].kind == NodeKind::Switch {
            self.known[i] = (0..=topo.nodes[i].num_ports).collect();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibsm_mad::Guid;

    /// The SM's HCA `sm` has port 1 on `s1` and port 2 on `s2`; `s1` and `s2` are cabled;
    /// `h` hangs off `s2`; `island` (a switch with host `far`) is cabled only to `h`'s port 2,
    /// which a CA never forwards through.
    const NET: &str = "\
Hca 2 \"sm\"
[1] \"s1\"[1]
[2] \"s2\"[1]

Switch 4 \"s1\"
[2] \"s2\"[2]

Switch 4 \"s2\"
[3] \"h\"[1]

Hca 2 \"h\"
[2] \"island\"[1]

Switch 2 \"island\"
[2] \"far\"[1]

Hca 1 \"far\"
";

    #[test]
    fn the_sms_other_hca_ports_and_cas_are_not_crossed() {
        let t = Topology::parse_str(NET, "t.net").unwrap();
        let w = Walk::from(&t, (0, 1));
        let names: Vec<&str> = w.order.iter().map(|&i| t.nodes[i].name.as_str()).collect();
        // Not sm, s1, s2 (which crossing sm's port 2 would give) and never the island.
        assert_eq!(names, ["sm", "s1", "s2", "h"]);
        assert_eq!(w.known[0], [1, 2], "sm's port 2 is entered from s2");
        assert_eq!(w.known[3], [1], "h's port 2 is not entered");
        let p = plan(&t, 0, Guid2Lid::default(), Some((0, 1)));
        assert_eq!(p.switch_names, ["s1", "s2"]);
        assert_eq!(p.view.cas.len(), 2);
        assert_eq!(p.view.cas[1].ports.len(), 1);
        // LIDs: sm's two ports first (node order, then port order), then s1, s2, h.
        let lid_of = |g: u64| p.guid2lid.get(Guid(g)).map(|(lo, _)| lo.0);
        let sm = t.nodes[0].node_guid.0;
        assert_eq!((lid_of(sm + 1), lid_of(sm + 2)), (Some(1), Some(2)));
        assert_eq!(p.view.switches.iter().map(|s| s.lid.0).collect::<Vec<_>>(), [3, 4]);
        assert_eq!(p.view.cas[1].ports[0].lid, Lid(5));
        assert_eq!(p.owners.len(), 6);
        assert!(p.owners[1..].iter().all(Option::is_some));
    }

    #[test]
    fn a_switch_sm_crosses_every_port_and_an_empty_topology_plans_nothing() {
        let t = Topology::parse_str(NET, "t.net").unwrap();
        let s1 = t.find("s1").unwrap();
        let w = Walk::from(&t, (s1, 0));
        assert_eq!(w.order.iter().map(|&i| t.nodes[i].name.as_str()).collect::<Vec<_>>(), ["s1", "sm", "s2", "h"]);
        assert_eq!(w.known[0], [1, 2]);
        let empty = plan(&Topology::default(), 0, Guid2Lid::default(), None);
        assert!(empty.view.switches.is_empty() && empty.view.cas.is_empty() && empty.owners == [None]);
    }
}
