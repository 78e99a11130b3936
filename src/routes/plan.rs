//! Offline planning: a topology to the routing input the SM would build after discovering it.
//!
//! LIDs are assigned by the SM's own allocator ([`crate::core::lids::assign`]) to end ports in
//! breadth-first order from the SM's port, ports in ascending order, as a fresh SM's discovery
//! meets them. A live SM may meet nodes in another order (answers race), so its LIDs can differ;
//! give the SM's `guid2lid` table to reproduce its numbering exactly.

use std::collections::VecDeque;

use ibsm_mad::{Lid, PortNum};
use ibsm_routing::{CaPortView, CaView, FabricView, Neighbor, NodeId, SwitchView};
use ibsm_topology::{NodeKind, Topology};

use crate::core::lids::{Guid2Lid, LidRequest, assign};
use crate::fabric_view::{FabricDesc, build};
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
/// sits at `at` (node index, port), or on the first cabled CA port.
pub fn plan(topo: &Topology, lmc: u8, table: Guid2Lid, at: Option<(usize, u8)>) -> Plan {
    let at = at.or_else(|| topo.first_cabled_ca_port());
    let order = bfs_order(topo, at.map_or(0, |a| a.0));
    // End ports in discovery order: switch port 0, CA ports with a cable (and the SM's own).
    let mut who: Vec<(usize, u8)> = Vec::new();
    for &i in &order {
        let n = &topo.nodes[i];
        if n.kind == NodeKind::Switch {
            who.push((i, 0));
        } else {
            for p in 1..=n.num_ports {
                if n.peer(p).is_some() || at == Some((i, p)) {
                    who.push((i, p));
                }
            }
        }
    }
    let reqs: Vec<LidRequest> =
        who.iter().map(|&(i, p)| LidRequest { guid: topo.nodes[i].port_guid(p), current: Lid::UNASSIGNED }).collect();
    let mut guid2lid = table;
    let lids = assign(&reqs, lmc, &mut guid2lid);
    let mut lid_of = vec![Vec::new(); topo.nodes.len()];
    for (i, n) in topo.nodes.iter().enumerate() {
        lid_of[i] = vec![Lid::UNASSIGNED; usize::from(n.num_ports) + 1];
    }
    for (&(i, p), &lid) in who.iter().zip(&lids) {
        lid_of[i][usize::from(p)] = lid;
    }
    // View ids: switches and CAs numbered in topology order.
    let mut ids = Vec::with_capacity(topo.nodes.len());
    let (mut ns, mut nc) = (0usize, 0usize);
    for n in &topo.nodes {
        if n.kind == NodeKind::Switch {
            ids.push(NodeId::Switch(ns));
            ns += 1;
        } else {
            ids.push(NodeId::Ca(nc));
            nc += 1;
        }
    }
    let neighbor =
        |i: usize, p: u8| topo.nodes[i].peer(p).map(|peer| Neighbor { node: ids[peer.node], port: PortNum(peer.port) });
    let mut view = FabricView { switches: Vec::with_capacity(ns), cas: Vec::with_capacity(nc), lmc };
    let mut switch_names = Vec::with_capacity(ns);
    let span = 1usize << lmc.min(7);
    let max = lids.iter().map(|l| usize::from(l.0)).max().unwrap_or(0) + span;
    let mut owners: Vec<Option<LidOwner>> = vec![None; max];
    for (i, n) in topo.nodes.iter().enumerate() {
        let kind = match n.kind {
            NodeKind::Switch => OwnerKind::Switch,
            NodeKind::Ca => OwnerKind::Ca,
            NodeKind::Router => OwnerKind::Router,
        };
        let mut own = |lid: Lid, p: u8| {
            if lid == Lid::UNASSIGNED {
                return;
            }
            for l in usize::from(lid.0)..usize::from(lid.0) + span {
                if let Some(slot) = owners.get_mut(l) {
                    *slot = Some(LidOwner { kind, port_guid: n.port_guid(p), name: n.node_desc().to_owned() });
                }
            }
        };
        if n.kind == NodeKind::Switch {
            let lid = lid_of[i][0];
            own(lid, 0);
            let ports = (0..=n.num_ports).map(|p| if p == 0 { None } else { neighbor(i, p) }).collect();
            view.switches.push(SwitchView { guid: n.node_guid, lid, ports });
            switch_names.push(n.node_desc().to_owned());
        } else {
            let mut ports = Vec::new();
            for p in 1..=n.num_ports {
                let lid = lid_of[i][usize::from(p)];
                let nb = neighbor(i, p);
                if nb.is_some() || lid != Lid::UNASSIGNED {
                    own(lid, p);
                    ports.push(CaPortView { num: PortNum(p), lid, neighbor: nb });
                }
            }
            view.cas.push(CaView { guid: n.node_guid, ports });
        }
    }
    Plan { view, switch_names, owners, guid2lid }
}

/// Node indices in breadth-first order from `start`, neighbours by ascending port number;
/// nodes not reachable from `start` follow in topology order.
fn bfs_order(topo: &Topology, start: usize) -> Vec<usize> {
    let mut seen = vec![false; topo.nodes.len()];
    let mut order = Vec::with_capacity(topo.nodes.len());
    let mut q = VecDeque::new();
    for root in std::iter::once(start).chain(0..topo.nodes.len()) {
        if root >= topo.nodes.len() || seen[root] {
            continue;
        }
        seen[root] = true;
        q.push_back(root);
        while let Some(i) = q.pop_front() {
            order.push(i);
            let n = &topo.nodes[i];
            // A CA does not forward: discovery only crosses CAs at the SM's own node.
            if n.kind != NodeKind::Switch && i != start {
                continue;
            }
            for p in 1..=n.num_ports {
                if let Some(peer) = n.peer(p) {
                    if !seen[peer.node] {
                        seen[peer.node] = true;
                        q.push_back(peer.node);
                    }
                }
            }
        }
    }
    order
}
