//! Fabric connectivity: the cabling of a [`FabricView`] as a petgraph graph, its connected
//! components, and a Graphviz DOT rendering for topology views.
//!
//! Owns: [`fabric_graph`] (switches and CAs as nodes, one edge per cable), [`components`] (which
//! component each node is in, and how big each is) and [`to_dot`]. Node numbering is fixed:
//! switch `i` is node `i`, CA `j` is node `switches.len() + j`; components are numbered in order
//! of their first node, so the numbering is deterministic.
//!
//! Guarantees: never panics on any view. A cable listed from both ends is one edge; a cable
//! listed from one end only (an inconsistent view) is still an edge; a neighbour outside the view
//! is ignored. No routing policy, no I/O.

use core::fmt::Write as _;

use ibsm_mad::PortNum;
use petgraph::dot::{Config, Dot};
use petgraph::graph::{NodeIndex, UnGraph};
use petgraph::unionfind::UnionFind;
use petgraph::visit::EdgeRef;

use crate::{FabricView, Neighbor, NodeId};

/// A cable: the port at the edge's source node and the port at its target node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cable {
    /// Port on the source node of the edge.
    pub source_port: PortNum,
    /// Port on the target node of the edge.
    pub target_port: PortNum,
}

/// How many nodes of each kind a component holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ComponentSize {
    /// Switches in the component.
    pub switches: usize,
    /// CAs in the component.
    pub cas: usize,
}

/// The connected components of a fabric.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Components {
    /// Component number of each switch, in [`FabricView::switches`] order.
    pub of_switch: Vec<usize>,
    /// Component number of each CA, in [`FabricView::cas`] order.
    pub of_ca: Vec<usize>,
    /// Size of each component, by component number.
    pub sizes: Vec<ComponentSize>,
}

impl Components {
    /// Number of components (0 for an empty fabric).
    pub fn count(&self) -> usize {
        self.sizes.len()
    }

    /// Whether every node can reach every other (true for an empty fabric).
    pub fn is_connected(&self) -> bool {
        self.sizes.len() <= 1
    }
}

/// The node number of `id` in [`fabric_graph`], if it is in the view.
fn node_index(view: &FabricView, id: NodeId) -> Option<NodeIndex> {
    let i = match id {
        NodeId::Switch(s) if s < view.switches.len() => s,
        NodeId::Ca(c) if c < view.cas.len() => view.switches.len() + c,
        _ => return None,
    };
    Some(NodeIndex::new(i))
}

/// Where port `port` of node `id` is cabled, per the view.
fn far_end(view: &FabricView, id: NodeId, port: PortNum) -> Option<Neighbor> {
    match id {
        NodeId::Switch(s) => view.switches.get(s)?.ports.get(usize::from(port.0)).copied().flatten(),
        NodeId::Ca(c) => view.cas.get(c)?.ports.iter().find(|p| p.num == port)?.neighbor,
    }
}

/// Every cable end of the view: `(node, port, far end)`, switch port 0 left out.
fn cable_ends(view: &FabricView) -> impl Iterator<Item = (NodeId, PortNum, Neighbor)> + '_ {
    let sw = view.switches.iter().enumerate().flat_map(|(s, sw)| {
        sw.ports
            .iter()
            .enumerate()
            .skip(1)
            .filter_map(move |(p, nb)| Some((NodeId::Switch(s), PortNum(u8::try_from(p).ok()?), (*nb)?)))
    });
    let ca = view
        .cas
        .iter()
        .enumerate()
        .flat_map(|(c, ca)| ca.ports.iter().filter_map(move |p| Some((NodeId::Ca(c), p.num, p.neighbor?))));
    sw.chain(ca)
}

/// The fabric as an undirected graph: node weights are the [`NodeId`]s (switches first, then
/// CAs, in view order), edge weights the ports at each end.
pub fn fabric_graph(view: &FabricView) -> UnGraph<NodeId, Cable> {
    let nodes = view.switches.len() + view.cas.len();
    let mut g = UnGraph::with_capacity(nodes, nodes);
    for s in 0..view.switches.len() {
        g.add_node(NodeId::Switch(s));
    }
    for c in 0..view.cas.len() {
        g.add_node(NodeId::Ca(c));
    }
    for (id, port, nb) in cable_ends(view) {
        let (Some(a), Some(b)) = (node_index(view, id), node_index(view, nb.node)) else { continue };
        // A cable both ends agree on is added from its lower end only.
        let mutual = far_end(view, nb.node, nb.port) == Some(Neighbor { node: id, port });
        if mutual && (nb.node, nb.port) < (id, port) {
            continue;
        }
        g.add_edge(a, b, Cable { source_port: port, target_port: nb.port });
    }
    g
}

/// The connected components of `view`.
pub fn components(view: &FabricView) -> Components {
    components_of(view, &fabric_graph(view))
}

/// The connected components of `g`, the [`fabric_graph`] of `view`.
fn components_of(view: &FabricView, g: &UnGraph<NodeId, Cable>) -> Components {
    let mut sets = UnionFind::<usize>::new(g.node_count());
    for e in g.edge_references() {
        sets.union(e.source().index(), e.target().index());
    }
    let labels = sets.into_labeling();
    // Renumber the representatives in order of first appearance.
    let mut number = vec![usize::MAX; labels.len()];
    let mut sizes: Vec<ComponentSize> = Vec::new();
    let mut of_node = Vec::with_capacity(labels.len());
    for (i, &rep) in labels.iter().enumerate() {
        let Some(slot) = number.get_mut(rep) else { continue };
        if *slot == usize::MAX {
            *slot = sizes.len();
            sizes.push(ComponentSize::default());
        }
        let comp = *slot;
        if i < view.switches.len() {
            sizes[comp].switches += 1;
        } else {
            sizes[comp].cas += 1;
        }
        of_node.push(comp);
    }
    let of_ca = of_node.split_off(view.switches.len().min(of_node.len()));
    Components { of_switch: of_node, of_ca, sizes }
}

/// The fabric in Graphviz DOT: an undirected `graph` with one node per switch (a box labelled
/// with its GUID and LID) and per CA (labelled with its GUID), and one edge per cable with the
/// port numbers at its ends.
pub fn to_dot(view: &FabricView) -> String {
    let g = fabric_graph(view);
    let node_attrs = |_: &UnGraph<NodeId, Cable>, (_, id): (NodeIndex, &NodeId)| -> String {
        match *id {
            NodeId::Switch(s) => view
                .switches
                .get(s)
                .map_or_else(String::new, |sw| format!("label = \"switch {}\\nLID {}\", shape = box", sw.guid, sw.lid)),
            NodeId::Ca(c) => view.cas.get(c).map_or_else(String::new, |ca| format!("label = \"CA {}\"", ca.guid)),
        }
    };
    let edge_attrs = |_: &UnGraph<NodeId, Cable>, e: petgraph::graph::EdgeReference<'_, Cable>| -> String {
        let w = e.weight();
        format!("taillabel = \"{}\", headlabel = \"{}\"", w.source_port, w.target_port)
    };
    let dot = Dot::with_attr_getters(&g, &[Config::NodeNoLabel, Config::EdgeNoLabel], &edge_attrs, &node_attrs);
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = write!(out, "{dot:?}");
    out
}

#[cfg(test)]
mod tests;
