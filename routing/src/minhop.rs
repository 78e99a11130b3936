//! Min-hop routing: every LID is reached over a shortest path, with destination LIDs balanced
//! over the equally short egress ports of each switch.
//!
//! For each switch that end ports hang off (their "attach" switch), a breadth-first search over
//! the switch graph gives every switch's hop distance to it. A switch then routes each LID of
//! those end ports out of one of its ports whose neighbour is one hop closer, choosing the port
//! that carries the fewest LIDs so far (ties: the lowest port number). With LMC > 0, the LIDs of
//! one port prefer neighbours not yet used by that port's other LIDs, so they take different
//! paths when the fabric has them. Destinations are processed in attach-switch order and LID
//! order, so the result is deterministic.
//!
//! Owns only the algorithm; the input and output types are in the crate root.

use std::collections::VecDeque;

use ibsm_mad::{Guid, Lid, PortNum};

use crate::{Engine, FabricView, Lft, NodeId, Routes, RoutingError};

/// The min-hop engine (OpenSM's default `minhop`, with per-port balancing).
#[derive(Debug, Clone, Copy, Default)]
pub struct MinHop;

impl MinHop {
    /// Registry name.
    pub const NAME: &'static str = "minhop";
}

/// An end port's LID range and where it attaches to the switch graph.
#[derive(Debug, Clone, Copy)]
struct Dest {
    base: u16,
    /// Index of the switch the port is or hangs off.
    attach: usize,
    /// Port of `attach` that leads to the end port (0 for the switch itself).
    port: PortNum,
}

const UNREACHABLE: u32 = u32::MAX;

impl Engine for MinHop {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn route(&self, view: &FabricView) -> Result<Routes, RoutingError> {
        let adj = switch_adjacency(view)?;
        let dests = destinations(view)?;
        let top = view.max_lid();
        let per_port = view.lids_per_port();
        let mut tables: Vec<Lft> = view.switches.iter().map(|_| Lft::unrouted(top)).collect();
        let mut load: Vec<Vec<u32>> = view.switches.iter().map(|s| vec![0; s.ports.len()]).collect();

        // Destinations grouped by attach switch, each group in LID order.
        let mut by_switch: Vec<Vec<Dest>> = vec![Vec::new(); view.switches.len()];
        for d in &dests {
            if let Some(g) = by_switch.get_mut(d.attach) {
                g.push(*d);
            }
        }
        let mut dist = vec![UNREACHABLE; view.switches.len()];
        let mut candidates: Vec<(PortNum, usize)> = Vec::new();
        let mut used: Vec<usize> = Vec::new();
        for (t, group) in by_switch.iter_mut().enumerate() {
            if group.is_empty() {
                continue;
            }
            group.sort_by_key(|d| d.base);
            bfs(&adj, t, &mut dist);
            for (s, table) in tables.iter_mut().enumerate() {
                if dist[s] == UNREACHABLE {
                    continue;
                }
                if s == t {
                    for d in group.iter() {
                        for k in 0..per_port {
                            set(table, d.base.saturating_add(k), d.port);
                        }
                    }
                    continue;
                }
                candidates.clear();
                candidates.extend(adj[s].iter().copied().filter(|&(_, n)| dist[n].saturating_add(1) == dist[s]));
                let loads = &mut load[s];
                for d in group.iter() {
                    used.clear();
                    for k in 0..per_port {
                        let Some(&(port, n)) = candidates.iter().min_by_key(|&&(p, n)| {
                            (used.contains(&n), loads.get(usize::from(p.0)).copied().unwrap_or(0), p.0)
                        }) else {
                            break;
                        };
                        used.push(n);
                        if let Some(l) = loads.get_mut(usize::from(port.0)) {
                            *l += 1;
                        }
                        set(table, d.base.saturating_add(k), port);
                    }
                }
            }
        }
        Ok(Routes { tables })
    }
}

fn set(table: &mut Lft, lid: u16, port: PortNum) {
    if let Some(e) = table.ports.get_mut(usize::from(lid)) {
        *e = port;
    }
}

/// Switch-to-switch links: for each switch, `(port, neighbour switch)` in port order.
fn switch_adjacency(view: &FabricView) -> Result<Vec<Vec<(PortNum, usize)>>, RoutingError> {
    let mut adj = Vec::with_capacity(view.switches.len());
    for sw in &view.switches {
        let mut links = Vec::new();
        for (p, nb) in sw.ports.iter().enumerate() {
            let Some(nb) = nb else { continue };
            let port = PortNum(u8::try_from(p).unwrap_or(u8::MAX));
            let exists = match nb.node {
                NodeId::Switch(i) => i < view.switches.len(),
                NodeId::Ca(i) => i < view.cas.len(),
            };
            if !exists {
                return Err(RoutingError::DanglingNeighbor { guid: sw.guid, port, node: nb.node });
            }
            if let NodeId::Switch(i) = nb.node {
                links.push((port, i));
            }
        }
        adj.push(links);
    }
    Ok(adj)
}

/// Every routable end port: switches with a LID, CA ports with a LID cabled to a switch.
/// Overlapping LID ranges are an error.
fn destinations(view: &FabricView) -> Result<Vec<Dest>, RoutingError> {
    let per_port = view.lids_per_port();
    let mut owner: Vec<Option<Guid>> = vec![None; usize::from(view.max_lid()) + 1];
    let mut claim = |base: Lid, guid: Guid| -> Result<(), RoutingError> {
        for k in 0..per_port {
            let lid = base.0.saturating_add(k);
            if let Some(slot) = owner.get_mut(usize::from(lid)) {
                if let Some(first) = *slot {
                    return Err(RoutingError::DuplicateLid { lid: Lid(lid), first, second: guid });
                }
                *slot = Some(guid);
            }
        }
        Ok(())
    };
    let mut dests = Vec::new();
    for (i, sw) in view.switches.iter().enumerate() {
        if sw.lid.is_unicast() {
            claim(sw.lid, sw.guid)?;
            dests.push(Dest { base: sw.lid.0, attach: i, port: PortNum(0) });
        }
    }
    for ca in &view.cas {
        for p in &ca.ports {
            if !p.lid.is_unicast() {
                continue;
            }
            claim(p.lid, ca.guid)?;
            if let Some(nb) = p.neighbor
                && let NodeId::Switch(s) = nb.node
                && s < view.switches.len()
            {
                dests.push(Dest { base: p.lid.0, attach: s, port: nb.port });
            }
        }
    }
    Ok(dests)
}

/// Hop distances from switch `from` to every switch, into `dist`.
fn bfs(adj: &[Vec<(PortNum, usize)>], from: usize, dist: &mut [u32]) {
    dist.fill(UNREACHABLE);
    let mut queue = VecDeque::new();
    if let Some(d) = dist.get_mut(from) {
        *d = 0;
        queue.push_back(from);
    }
    while let Some(s) = queue.pop_front() {
        let next = dist[s] + 1;
        for &(_, n) in &adj[s] {
            if dist[n] == UNREACHABLE {
                dist[n] = next;
                queue.push_back(n);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CaPortView, CaView, Neighbor, SwitchView};

    #[allow(clippy::unnecessary_wraps)] // builds `SwitchView::ports` entries, which are options
    fn nb(node: NodeId, port: u8) -> Option<Neighbor> {
        Some(Neighbor { node, port: PortNum(port) })
    }

    /// Two leaves (S0, S1) joined by two spines (S2, S3); CA i hangs off leaf i/2 at port 1 + i%2.
    /// Leaf ports 3/4 go to spines S2/S3 (spine port = leaf index + 1).
    fn two_level(lmc: u8, lid_step: u16) -> FabricView {
        let leaf = |l: usize| SwitchView {
            guid: Guid(0x100 + l as u64),
            lid: Lid(1 + l as u16 * lid_step),
            ports: vec![
                None,
                nb(NodeId::Ca(2 * l), 1),
                nb(NodeId::Ca(2 * l + 1), 1),
                nb(NodeId::Switch(2), l as u8 + 1),
                nb(NodeId::Switch(3), l as u8 + 1),
            ],
        };
        let spine = |s: usize| SwitchView {
            guid: Guid(0x200 + s as u64),
            lid: Lid(1 + s as u16 * lid_step),
            ports: vec![None, nb(NodeId::Switch(0), 3 + (s as u8 - 2)), nb(NodeId::Switch(1), 3 + (s as u8 - 2))],
        };
        let ca = |i: usize| CaView {
            guid: Guid(0x300 + i as u64),
            ports: vec![CaPortView {
                num: PortNum(1),
                lid: Lid(1 + (4 + i as u16) * lid_step),
                neighbor: nb(NodeId::Switch(i / 2), 1 + (i % 2) as u8),
            }],
        };
        FabricView { switches: vec![leaf(0), leaf(1), spine(2), spine(3)], cas: (0..4).map(ca).collect(), lmc }
    }

    /// Follows the tables from the switch a CA hangs off to `dlid`; returns the hop count.
    fn walk(v: &FabricView, r: &Routes, mut sw: usize, dlid: Lid) -> Option<usize> {
        for hops in 0..16 {
            let port = r.tables[sw].port_for(dlid)?;
            if port.0 == 0 {
                return (v.switches[sw].lid.0 <= dlid.0).then_some(hops);
            }
            match v.switches[sw].ports.get(usize::from(port.0)).copied().flatten()?.node {
                NodeId::Switch(n) => sw = n,
                NodeId::Ca(c) => {
                    let p = v.cas[c].ports[0];
                    let span = v.lids_per_port();
                    return (p.lid.0 <= dlid.0 && dlid.0 < p.lid.0 + span).then_some(hops + 1);
                }
            }
        }
        None
    }

    #[test]
    fn every_lid_reachable_over_shortest_paths() {
        let v = two_level(0, 1);
        let r = MinHop.route(&v).unwrap();
        assert_eq!(r.tables.len(), 4);
        for src_leaf in 0..2 {
            for ca in 0..4usize {
                let dlid = v.cas[ca].ports[0].lid;
                let hops = walk(&v, &r, src_leaf, dlid).unwrap();
                // Same leaf: 1 hop (leaf -> CA); other leaf: leaf -> spine -> leaf -> CA.
                assert_eq!(hops, if ca / 2 == src_leaf { 1 } else { 3 }, "leaf {src_leaf} -> CA {ca}");
            }
            for s in 0..4 {
                assert!(walk(&v, &r, src_leaf, v.switches[s].lid).is_some());
            }
        }
    }

    #[test]
    fn remote_cas_are_balanced_over_both_spines() {
        let v = two_level(0, 1);
        let r = MinHop.route(&v).unwrap();
        // Leaf 0 reaches CAs 2 and 3 (on leaf 1) through ports 3 and 4: one each.
        let p2 = r.tables[0].port_for(v.cas[2].ports[0].lid).unwrap();
        let p3 = r.tables[0].port_for(v.cas[3].ports[0].lid).unwrap();
        assert_ne!(p2, p3);
        assert!([p2, p3].iter().all(|p| p.0 == 3 || p.0 == 4));
    }

    #[test]
    fn lmc_spreads_lids_of_one_port_over_paths() {
        let v = two_level(1, 2);
        let r = MinHop.route(&v).unwrap();
        let base = v.cas[2].ports[0].lid;
        let a = r.tables[0].port_for(base).unwrap();
        let b = r.tables[0].port_for(Lid(base.0 + 1)).unwrap();
        assert_ne!(a, b, "both LIDs of one port took the same spine");
        assert_eq!(walk(&v, &r, 0, Lid(base.0 + 1)), Some(3));
    }

    #[test]
    fn deterministic() {
        let v = two_level(0, 1);
        assert_eq!(MinHop.route(&v).unwrap(), MinHop.route(&v).unwrap());
    }

    #[test]
    fn overlapping_lids_and_dangling_neighbours_are_errors() {
        let mut v = two_level(0, 1);
        v.cas[1].ports[0].lid = v.cas[0].ports[0].lid;
        assert!(matches!(MinHop.route(&v), Err(RoutingError::DuplicateLid { .. })));
        let mut v = two_level(0, 1);
        v.switches[2].ports[1] = nb(NodeId::Switch(42), 1);
        assert!(matches!(MinHop.route(&v), Err(RoutingError::DanglingNeighbor { .. })));
    }

    #[test]
    fn unreachable_switch_gets_no_routes() {
        let mut v = two_level(0, 1);
        v.switches.push(SwitchView { guid: Guid(0x999), lid: Lid(50), ports: vec![None, None] });
        let r = MinHop.route(&v).unwrap();
        assert_eq!(r.tables[0].port_for(Lid(50)), None);
        assert_eq!(r.tables[4].port_for(Lid(50)), Some(PortNum(0)));
        assert_eq!(r.tables[4].port_for(v.cas[0].ports[0].lid), None);
    }
}
