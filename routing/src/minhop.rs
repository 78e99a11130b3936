//! Min-hop routing: every LID is reached over a shortest path, with destination LIDs balanced
//! over the equally short egress ports of each switch.
//!
//! For each switch that end ports hang off (their "attach" switch), a breadth-first search over
//! the switch graph gives every switch's hop distance to it. A switch then routes each LID of
//! those end ports out of one of its ports whose neighbour is one hop closer, choosing the port
//! that carries the fewest LIDs so far (ties: the lowest port number). With LMC > 0, the LIDs of
//! one port prefer neighbours not yet used by that port's other LIDs, so they take different
//! paths when the fabric has them. Destinations are processed in attach-switch order and LID
//! order, so the result is deterministic (and independent of the number of threads: the
//! per-switch work of the shared driver in `spread.rs` runs on all cores).
//!
//! Owns only the algorithm; the input and output types are in the crate root.

use ibsm_mad::PortNum;

use crate::graph::{FAR, Indexed};
use crate::spread::{Adj, Link, Policy, groups, ordered, spread_tuned};
use crate::{Engine, FabricView, Routes, RoutingError, Tuning};

/// The min-hop engine (OpenSM's default `minhop`, with per-port balancing).
#[derive(Debug, Clone, Copy, Default)]
pub struct MinHop;

impl MinHop {
    /// Registry name.
    pub const NAME: &'static str = "minhop";
}

/// Breadth-first distances over every switch-to-switch link.
struct Shortest {
    adj: Adj,
}

impl Policy for Shortest {
    fn label(&self, t: usize, lab: &mut Vec<u32>, queue: &mut Vec<u32>) {
        let n = self.adj.len();
        lab.clear();
        lab.resize(n, FAR);
        queue.clear();
        if t < n {
            lab[t] = 0;
            queue.push(t as u32);
        }
        let mut head = 0;
        while let Some(&y) = queue.get(head) {
            head += 1;
            let d = lab[y as usize] + 1;
            for l in self.adj.of(y as usize) {
                if lab[l.n as usize] == FAR {
                    lab[l.n as usize] = d;
                    queue.push(l.n);
                }
            }
        }
    }

    fn next_hops(&self, lab: &[u32], x: usize, cands: &mut Vec<(PortNum, u32)>) {
        cands.clear();
        let lx = lab[x];
        if lx == FAR || lx == 0 {
            return;
        }
        cands.extend(self.adj.of(x).iter().filter(|l| lab[l.n as usize] == lx - 1).map(|l| (l.port, l.n)));
    }
}

impl Engine for MinHop {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn route(&self, view: &FabricView) -> Result<Routes, RoutingError> {
        Tuned(Tuning::default()).route(view)
    }
}

/// Min-hop with OpenSM's balancing options ([`Tuning`]: routing order, port shifting, port
/// scattering); with none set, the same tables as [`MinHop`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tuned(pub Tuning);

impl Engine for Tuned {
    fn name(&self) -> &'static str {
        MinHop::NAME
    }

    fn route(&self, view: &FabricView) -> Result<Routes, RoutingError> {
        let idx = Indexed::new(view)?;
        let g = &idx.graph;
        let adj = Adj::build(g.len(), |s, out| {
            out.extend(g.links(s).iter().map(|&(port, n, _)| Link { n: n as u32, port }));
        });
        let mut groups = groups(&idx);
        for (_, dests) in &mut groups {
            dests.sort_by_key(|d| d.base);
        }
        let groups = ordered(view, groups, &self.0);
        spread_tuned(view, &idx, (&groups, &self.0), &Shortest { adj }, |_, _| Ok::<(), RoutingError>(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CaPortView, CaView, Neighbor, NodeId, SwitchView};
    use ibsm_mad::{Guid, Lid};

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
