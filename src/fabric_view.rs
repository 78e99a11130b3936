//! The one fabric-view builder: from a neutral description of a discovered fabric to the routing
//! input ([`FabricView`]), the description node behind each view switch and CA, and the end
//! port behind every LID.
//!
//! Three producers fill the same description ([`FabricDesc`]): the SM core from what it
//! discovered (`core::Subnet::describe`), the offline planner from a topology file as the core
//! would discover it (`routes::plan`), and a running SM's control-socket snapshot read back
//! (`routes::live`). So the core, `ibsm routes dump`/`check` and the tests route exactly the same
//! input for the same fabric, and differ only in where the description came from.
//!
//! [`avoid_links`] leaves links out of a built view for routing (the performance manager's
//! avoided ports, `perf-avoid-unhealthy`), never one whose absence would cut a LID off.
//!
//! This module sits below the core and the commands: it imports nothing from this crate, only
//! the wire newtypes of `ibsm-mad` and the view types of `ibsm-routing`. It never panics on a
//! malformed description: a peer that names a missing node is treated as no link, a port
//! number past the node's ports is ignored.

use ibsm_mad::attrs::NodeType;
use ibsm_mad::{Guid, Lid, PortNum};
use ibsm_routing::{CaPortView, CaView, FabricView, Neighbor, NodeId, SwitchView};

/// A port of a described node: node index in [`FabricDesc::nodes`] and port number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PortRef {
    /// Index of the node in [`FabricDesc::nodes`].
    pub node: usize,
    /// Port number.
    pub port: PortNum,
}

/// One port of a described node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DescPort {
    /// Port number (0 = a switch's management port).
    pub num: PortNum,
    /// Port GUID (for a switch, the switch's single port GUID on every port).
    pub guid: Guid,
    /// Base LID of an end port ([`Lid::UNASSIGNED`] if none; ignored on switch ports 1..).
    pub lid: Lid,
    /// The port at the other end, when the link is up and both ends are known.
    pub peer: Option<PortRef>,
}

/// One described node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescNode<'a> {
    /// Node type (anything but a switch is an end node; routers are named as such in dumps).
    pub kind: NodeType,
    /// NodeGUID.
    pub guid: Guid,
    /// NodeDescription.
    pub name: &'a str,
    /// Number of external ports.
    pub num_ports: u8,
    /// The ports discovery knows, in any order. A switch: port 0 (its end port: GUID and LID)
    /// and its external ports, each with its peer when linked. A CA or router: its end ports,
    /// the ports discovery entered it through (an HCA's other ports are not listed).
    pub ports: Vec<DescPort>,
}

impl DescNode<'_> {
    /// Whether the node is a switch.
    pub fn is_switch(&self) -> bool {
        self.kind == NodeType::Switch
    }

    /// The node's end ports: port 0 of a switch, every listed port of a CA or router.
    pub fn end_ports(&self) -> impl Iterator<Item = &DescPort> + '_ {
        let switch = self.is_switch();
        self.ports.iter().filter(move |p| !switch || p.num.0 == 0)
    }

    /// The listed port `num`.
    pub fn port(&self, num: PortNum) -> Option<&DescPort> {
        self.ports.iter().find(|p| p.num == num)
    }
}

/// A fabric as discovery sees it: nodes in discovery order, names borrowed from the producer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FabricDesc<'a> {
    /// Every node.
    pub nodes: Vec<DescNode<'a>>,
}

/// What owns a LID, for the dumps' comments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnerKind {
    /// A channel adapter port.
    Ca,
    /// A switch (its management port 0).
    Switch,
    /// A router port.
    Router,
}

impl OwnerKind {
    /// The owner kind of a node type (anything unknown is an end node, as the core treats it).
    pub fn of(kind: NodeType) -> OwnerKind {
        match kind {
            NodeType::Switch => OwnerKind::Switch,
            NodeType::Router => OwnerKind::Router,
            _ => OwnerKind::Ca,
        }
    }

    /// OpenSM's words for the node type.
    pub fn opensm_name(self) -> &'static str {
        match self {
            OwnerKind::Ca => "Channel Adapter",
            OwnerKind::Switch => "Switch",
            OwnerKind::Router => "Router",
        }
    }
}

/// The end port behind a LID, named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LidOwner {
    /// Node type.
    pub kind: OwnerKind,
    /// Port GUID.
    pub port_guid: Guid,
    /// NodeGUID of its node.
    pub node_guid: Guid,
    /// NodeDescription.
    pub name: String,
}

impl FabricDesc<'_> {
    /// The named owner of the end port `at`.
    pub fn lid_owner(&self, at: PortRef) -> Option<LidOwner> {
        let node = self.nodes.get(at.node)?;
        let port = node.port(at.port)?;
        Some(LidOwner {
            kind: OwnerKind::of(node.kind),
            port_guid: port.guid,
            node_guid: node.guid,
            name: node.name.to_owned(),
        })
    }
}

/// What [`build`] makes of a description.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Built {
    /// The routing input: switches and CAs in description order.
    pub view: FabricView,
    /// The description node of each view switch: `view.switches[k]` is `nodes[switch_nodes[k]]`.
    pub switch_nodes: Vec<usize>,
    /// The description node of each view CA.
    pub ca_nodes: Vec<usize>,
    /// The end port owning each LID, indexed by LID up to `view.max_lid()` (each end port owns
    /// `2^lmc` LIDs from its base).
    pub owners: Vec<Option<PortRef>>,
}

/// Every end port of a CA or router of `desc`: `(port GUID, NodeGUID, port number)`, as
/// [`ibsm_routing::EngineOptions::resolve_ports`] takes them.
pub fn end_ports<'a>(desc: &'a FabricDesc<'_>) -> impl Iterator<Item = (Guid, Guid, PortNum)> + 'a {
    desc.nodes.iter().filter(|n| !n.is_switch()).flat_map(|n| n.ports.iter().map(move |p| (p.guid, n.guid, p.num)))
}

/// Builds the routing input of `desc` with LID mask control `lmc`. Switches and CAs enter the
/// view in NodeGUID order, whatever order the description lists them in (discovery's order
/// depends on where the SM sits): any SM on the fabric, master or standby taking over, routes
/// the same view into the same tables.
pub fn build(desc: &FabricDesc<'_>, lmc: u8) -> Built {
    let (mut switch_nodes, mut ca_nodes): (Vec<usize>, Vec<usize>) =
        (0..desc.nodes.len()).partition(|&i| desc.nodes[i].is_switch());
    switch_nodes.sort_by_key(|&i| (desc.nodes[i].guid, i));
    ca_nodes.sort_by_key(|&i| (desc.nodes[i].guid, i));
    let mut ids = vec![NodeId::Switch(0); desc.nodes.len()];
    for (k, &i) in switch_nodes.iter().enumerate() {
        ids[i] = NodeId::Switch(k);
    }
    for (k, &i) in ca_nodes.iter().enumerate() {
        ids[i] = NodeId::Ca(k);
    }
    let neighbor = |peer: Option<PortRef>| {
        let peer = peer?;
        Some(Neighbor { node: *ids.get(peer.node)?, port: peer.port })
    };
    let mut view =
        FabricView { switches: Vec::with_capacity(switch_nodes.len()), cas: Vec::with_capacity(ca_nodes.len()), lmc };
    for n in switch_nodes.iter().chain(&ca_nodes).map(|&i| &desc.nodes[i]) {
        if n.is_switch() {
            let mut ports = vec![None; usize::from(n.num_ports) + 1];
            let mut lid = Lid::UNASSIGNED;
            for p in &n.ports {
                if p.num.0 == 0 {
                    lid = p.lid;
                } else if let Some(slot) = ports.get_mut(usize::from(p.num.0)) {
                    *slot = neighbor(p.peer);
                }
            }
            view.switches.push(SwitchView { guid: n.guid, lid, ports });
        } else {
            let mut ports: Vec<CaPortView> =
                n.ports.iter().map(|p| CaPortView { num: p.num, lid: p.lid, neighbor: neighbor(p.peer) }).collect();
            ports.sort_by_key(|p| p.num);
            view.cas.push(CaView { guid: n.guid, ports });
        }
    }
    let span = usize::from(view.lids_per_port());
    let mut owners = vec![None; usize::from(view.max_lid()) + 1];
    for (i, n) in desc.nodes.iter().enumerate() {
        for p in n.end_ports().filter(|p| p.lid != Lid::UNASSIGNED) {
            let base = usize::from(p.lid.0);
            for slot in owners.iter_mut().skip(base).take(span) {
                *slot = Some(PortRef { node: i, port: p.num });
            }
        }
    }
    Built { view, switch_nodes, ca_nodes, owners }
}

/// What [`avoid_links`] did with the ports it was given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AvoidedLinks {
    /// Ports whose link is left out of the view (both ends of a link named twice are listed).
    pub cut: Vec<(Guid, PortNum)>,
    /// Ports whose link stays in the view: leaving it out would cut some end port's LIDs off
    /// from the rest of the fabric.
    pub kept: Vec<(Guid, PortNum)>,
}

/// Leaves the links of `ports` (by NodeGUID and port number) out of `view`, as if they were
/// down for routing, one by one in the order given, except a link whose absence would split
/// the fabric so that some LID could no longer be reached from the others (a host's only
/// cable, a switch's last way up): that one stays and is listed as kept. A port not in the
/// view, or with no link, is ignored. Cost: one pass over the view per port given.
pub fn avoid_links(view: &mut FabricView, ports: &[(Guid, PortNum)]) -> AvoidedLinks {
    let mut out = AvoidedLinks::default();
    if ports.is_empty() {
        return out;
    }
    let mut at: std::collections::HashMap<Guid, NodeId> = std::collections::HashMap::new();
    for (k, s) in view.switches.iter().enumerate() {
        at.insert(s.guid, NodeId::Switch(k));
    }
    for (k, c) in view.cas.iter().enumerate() {
        at.insert(c.guid, NodeId::Ca(k));
    }
    let islands = lid_islands(view);
    let mut cut_ends: std::collections::HashSet<(NodeId, PortNum)> = std::collections::HashSet::new();
    for &(guid, port) in ports {
        let Some(&node) = at.get(&guid) else { continue };
        let Some(peer) = neighbor_mut(view, node, port).and_then(|n| *n) else {
            if cut_ends.contains(&(node, port)) {
                out.cut.push((guid, port));
            }
            continue;
        };
        set_neighbor(view, node, port, None);
        set_neighbor(view, peer.node, peer.port, None);
        if lid_islands(view) > islands {
            set_neighbor(view, node, port, Some(peer));
            set_neighbor(view, peer.node, peer.port, Some(Neighbor { node, port }));
            out.kept.push((guid, port));
        } else {
            cut_ends.insert((node, port));
            cut_ends.insert((peer.node, peer.port));
            out.cut.push((guid, port));
        }
    }
    out
}

fn neighbor_mut(view: &mut FabricView, node: NodeId, port: PortNum) -> Option<&mut Option<Neighbor>> {
    match node {
        NodeId::Switch(k) => view.switches.get_mut(k)?.ports.get_mut(usize::from(port.0)),
        NodeId::Ca(k) => view.cas.get_mut(k)?.ports.iter_mut().find(|p| p.num == port).map(|p| &mut p.neighbor),
    }
}

fn set_neighbor(view: &mut FabricView, node: NodeId, port: PortNum, to: Option<Neighbor>) {
    if let Some(slot) = neighbor_mut(view, node, port) {
        *slot = to;
    }
}

/// The root of `v` in the union-find `parent`, halving the path on the way.
fn root(parent: &mut [usize], mut v: usize) -> usize {
    while parent[v] != v {
        parent[v] = parent[parent[v]];
        v = parent[v];
    }
    v
}

/// The number of connected pieces of `view` that hold a LID, where a switch is one vertex and
/// each CA port another (a CA forwards nothing between its ports).
fn lid_islands(view: &FabricView) -> usize {
    let switches = view.switches.len();
    let mut first_port = Vec::with_capacity(view.cas.len());
    let mut n = switches;
    for c in &view.cas {
        first_port.push(n);
        n += c.ports.len();
    }
    let vertex = |nb: &Neighbor| -> Option<usize> {
        match nb.node {
            NodeId::Switch(k) => (k < switches).then_some(k),
            NodeId::Ca(k) => {
                let i = view.cas.get(k)?.ports.iter().position(|p| p.num == nb.port)?;
                Some(first_port[k] + i)
            }
        }
    };
    let mut parent: Vec<usize> = (0..n).collect();
    let mut join = |a: usize, b: usize| {
        let (ra, rb) = (root(&mut parent, a), root(&mut parent, b));
        if ra != rb {
            parent[ra] = rb;
        }
    };
    for (k, s) in view.switches.iter().enumerate() {
        for nb in s.ports.iter().flatten() {
            if let Some(v) = vertex(nb) {
                join(k, v);
            }
        }
    }
    for (k, c) in view.cas.iter().enumerate() {
        for (i, p) in c.ports.iter().enumerate() {
            if let Some(v) = p.neighbor.as_ref().and_then(vertex) {
                join(first_port[k] + i, v);
            }
        }
    }
    let mut owners: Vec<usize> = Vec::new();
    owners.extend(view.switches.iter().enumerate().filter(|(_, s)| s.lid != Lid::UNASSIGNED).map(|(k, _)| k));
    for (k, c) in view.cas.iter().enumerate() {
        owners.extend(
            c.ports.iter().enumerate().filter(|(_, p)| p.lid != Lid::UNASSIGNED).map(|(i, _)| first_port[k] + i),
        );
    }
    let mut roots: Vec<usize> = owners.into_iter().map(|v| root(&mut parent, v)).collect();
    roots.sort_unstable();
    roots.dedup();
    roots.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn port(num: u8, guid: u64, lid: u16, peer: Option<(usize, u8)>) -> DescPort {
        DescPort {
            num: PortNum(num),
            guid: Guid(guid),
            lid: Lid(lid),
            peer: peer.map(|(node, port)| PortRef { node, port: PortNum(port) }),
        }
    }

    /// host (2 ports, only port 2 entered) -- sw port 3; sw port 1 -- router port 1.
    fn desc() -> FabricDesc<'static> {
        FabricDesc {
            nodes: vec![
                DescNode {
                    kind: NodeType::Ca,
                    guid: Guid(0x10),
                    name: "host",
                    num_ports: 2,
                    ports: vec![port(2, 0x12, 2, Some((1, 3)))],
                },
                DescNode {
                    kind: NodeType::Switch,
                    guid: Guid(0x20),
                    name: "sw",
                    num_ports: 4,
                    ports: vec![
                        port(3, 0x20, 0, Some((0, 2))),
                        port(0, 0x20, 4, None),
                        port(1, 0x20, 0, Some((2, 1))),
                        port(9, 0x20, 0, Some((2, 1))),
                    ],
                },
                DescNode {
                    kind: NodeType::Router,
                    guid: Guid(0x30),
                    name: "rt",
                    num_ports: 1,
                    ports: vec![port(1, 0x31, 6, Some((1, 1)))],
                },
            ],
        }
    }

    #[test]
    fn builds_the_view_the_index_maps_and_the_owners() {
        let d = desc();
        let b = build(&d, 1);
        assert_eq!((b.switch_nodes.clone(), b.ca_nodes.clone()), (vec![1], vec![0, 2]));
        let sw = &b.view.switches[0];
        assert_eq!((sw.guid, sw.lid, sw.ports.len()), (Guid(0x20), Lid(4), 5));
        assert_eq!(sw.ports[3], Some(Neighbor { node: NodeId::Ca(0), port: PortNum(2) }));
        assert_eq!(sw.ports[1], Some(Neighbor { node: NodeId::Ca(1), port: PortNum(1) }));
        assert_eq!((sw.ports[0], sw.ports[2], sw.ports[4]), (None, None, None), "port 9 is past the switch");
        let host = &b.view.cas[0];
        assert_eq!(
            host.ports,
            vec![CaPortView {
                num: PortNum(2),
                lid: Lid(2),
                neighbor: Some(Neighbor { node: NodeId::Switch(0), port: PortNum(3) })
            }]
        );
        // LMC 1: every end port owns two LIDs; LID 1 is nobody's.
        assert_eq!(b.view.max_lid(), 7);
        let at = |node, port| Some(PortRef { node, port: PortNum(port) });
        assert_eq!(b.owners, vec![None, None, at(0, 2), at(0, 2), at(1, 0), at(1, 0), at(2, 1), at(2, 1)]);
        let owner = d.lid_owner(PortRef { node: 2, port: PortNum(1) }).unwrap();
        assert_eq!(owner.port_guid, Guid(0x31));
        assert_eq!((owner.kind, owner.name.as_str()), (OwnerKind::Router, "rt"));
        assert_eq!(d.lid_owner(PortRef { node: 0, port: PortNum(1) }), None, "port 1 was not entered");
    }

    #[test]
    fn a_peer_outside_the_description_is_no_link() {
        let mut d = desc();
        d.nodes[0].ports[0].peer = Some(PortRef { node: 99, port: PortNum(1) });
        let b = build(&d, 0);
        assert_eq!(b.view.cas[0].ports[0].neighbor, None);
        assert!(build(&FabricDesc::default(), 0).view.switches.is_empty());
    }

    /// sw0 and sw1 joined by two cables (ports 1-1 and 2-2); host A on sw0[3], host B on sw1[3].
    fn twin() -> FabricView {
        let sw = |k: usize| NodeId::Switch(k);
        let nb = |node, port| Some(Neighbor { node, port: PortNum(port) });
        let switch = |guid: u64, lid: u16, other: usize, host: usize| SwitchView {
            guid: Guid(guid),
            lid: Lid(lid),
            ports: vec![None, nb(sw(other), 1), nb(sw(other), 2), nb(NodeId::Ca(host), 1)],
        };
        let ca = |guid: u64, lid: u16, at: usize| CaView {
            guid: Guid(guid),
            ports: vec![CaPortView { num: PortNum(1), lid: Lid(lid), neighbor: nb(sw(at), 3) }],
        };
        FabricView {
            switches: vec![switch(0x20, 1, 1, 0), switch(0x21, 2, 0, 1)],
            cas: vec![ca(0x10, 3, 0), ca(0x11, 4, 1)],
            lmc: 0,
        }
    }

    #[test]
    fn avoided_links_are_left_out_unless_a_lid_would_be_cut_off() {
        let p = |g: u64, n: u8| (Guid(g), PortNum(n));
        let mut v = twin();
        // Both ends of one of the two cables: it is cut; the other cable must stay.
        let done = avoid_links(&mut v, &[p(0x20, 1), p(0x21, 1), p(0x21, 2), p(0x10, 1), p(0x99, 1)]);
        assert_eq!(done.cut, vec![p(0x20, 1), p(0x21, 1)]);
        assert_eq!(done.kept, vec![p(0x21, 2), p(0x10, 1)], "the last cable between the switches, a host's only one");
        assert_eq!((v.switches[0].ports[1], v.switches[1].ports[1]), (None, None));
        let full = twin();
        assert_eq!(v.switches[0].ports[2..], full.switches[0].ports[2..]);
        assert_eq!(
            (v.cas.clone(), v.switches[1].ports[2..].to_vec()),
            (full.cas.clone(), full.switches[1].ports[2..].to_vec())
        );
        let mut same = twin();
        assert_eq!(avoid_links(&mut same, &[]), AvoidedLinks::default());
        assert_eq!(same, full);
    }
}
