//! The last routing view, kept so that a sweep that found the same nodes with the same LIDs
//! (only links lost or back, as a cable cut or a returned cable brings) derives its view from
//! the last one instead of describing the subnet and building anew.
//!
//! Owns [`LastView`]: the view [`crate::fabric_view::build`] made of
//! [`Subnet::describe`](super::state::Subnet::describe) at the last full build, with the
//! subnet node behind each view switch and CA. [`LastView::relink`] checks that every node is
//! where it was (same index, NodeGUID, kind, port count, end ports and LIDs) and sets each
//! port's neighbor by the same rule as `describe` (a peer where the link is up, both ends are
//! known and the far end was not read with its link down): the result is the view the
//! builder would make, at a fraction of the cost (no description, no sort, no allocation).
//! Anything else (a node found or lost, a LID moved, LMC changed) is not derived: the caller
//! builds anew. At k = 48 the description and the build took 12–16 ms of a quick sweep.
//!
//! The view is shared (an `Arc`) with the routing job made from it and the last full route's
//! base: one copy of the view, not one for each (6 MB at k = 48), until a relink changes it.

use std::sync::Arc;

use ibsm_mad::{Lid, PortNum};
use ibsm_routing::{FabricView, Neighbor, NodeId};

use super::state::{NodeIdx, PortRecord, Subnet};
use crate::fabric_view::Built;

/// The view of the last full build and the subnet node behind each of its switches and CAs.
#[derive(Debug, Clone)]
pub struct LastView {
    view: Arc<FabricView>,
    switch_nodes: Vec<NodeIdx>,
    ca_nodes: Vec<NodeIdx>,
    /// The view node of each subnet node, by subnet index.
    ids: Vec<NodeId>,
}

impl LastView {
    /// Keeps `built` (its view before any link is left out for routing).
    pub fn new(built: Built) -> LastView {
        let len = built.switch_nodes.len() + built.ca_nodes.len();
        let mut ids = vec![NodeId::Switch(0); len];
        for (k, &i) in built.switch_nodes.iter().enumerate() {
            if let Some(slot) = ids.get_mut(i) {
                *slot = NodeId::Switch(k);
            }
        }
        for (k, &i) in built.ca_nodes.iter().enumerate() {
            if let Some(slot) = ids.get_mut(i) {
                *slot = NodeId::Ca(k);
            }
        }
        LastView { view: Arc::new(built.view), switch_nodes: built.switch_nodes, ca_nodes: built.ca_nodes, ids }
    }

    /// The view (shared) and the subnet node of each view switch.
    pub fn view(&self) -> (&Arc<FabricView>, &[NodeIdx]) {
        (&self.view, &self.switch_nodes)
    }

    /// Brings the view up to `subnet`'s links, with LID mask control `lmc`: true when the
    /// subnet has the same nodes, end ports and LIDs as the view, and the view is now the one
    /// `build(&subnet.describe(), lmc)` makes. False otherwise; the view is then left half
    /// done and must be dropped. A view still shared is copied first.
    pub fn relink(&mut self, subnet: &Subnet, lmc: u8) -> bool {
        if self.view.lmc != lmc || subnet.nodes.len() != self.ids.len() {
            return false;
        }
        let view = Arc::make_mut(&mut self.view);
        let far_down = |(node, port): (NodeIdx, PortNum)| {
            subnet.nodes.get(node).and_then(|n| n.port(port)).is_some_and(|r| r.info.is_some() && !r.is_linked())
        };
        let ids = &self.ids;
        let peer = |r: &PortRecord| {
            let (node, port) = r.remote.filter(|&far| r.is_linked() && !far_down(far))?;
            Some(Neighbor { node: *ids.get(node)?, port })
        };
        for (sv, &i) in view.switches.iter_mut().zip(&self.switch_nodes) {
            let Some(n) = subnet.nodes.get(i) else { return false };
            if !n.is_switch()
                || n.info.node_guid != sv.guid
                || sv.ports.len() != usize::from(n.info.num_ports) + 1
                || n.ports.first().map_or(Lid::UNASSIGNED, |r| r.lid) != sv.lid
            {
                return false;
            }
            for (p, slot) in sv.ports.iter_mut().enumerate().skip(1) {
                *slot = n.ports.get(p).and_then(peer);
            }
        }
        for (cv, &i) in view.cas.iter_mut().zip(&self.ca_nodes) {
            let Some(n) = subnet.nodes.get(i) else { return false };
            if n.is_switch() || n.info.node_guid != cv.guid {
                return false;
            }
            // `end_ports` goes up by port number: the view's order (sorted by number).
            let mut k = 0;
            for num in n.end_ports() {
                let Some(r) = n.port(num).filter(|r| r.guid.is_some()) else { continue };
                let Some(slot) = cv.ports.get_mut(k) else { return false };
                if slot.num != num || slot.lid != r.lid {
                    return false;
                }
                slot.neighbor = peer(r);
                k += 1;
            }
            if k != cv.ports.len() {
                return false;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use ibsm_mad::attrs::{NodeType, PortState};
    use ibsm_mad::{Guid, Lid, PortNum};

    use super::*;
    use crate::core::testing::{add, node};
    use crate::fabric_view::build;

    /// A two-level tree: `tops` top switches, `leaves` leaf switches each cabled to every top
    /// (leaf port t+1 to top port l+1) and two CAs on each leaf (ports tops+1, tops+2); a LID
    /// on every end port. Nodes in a shuffled discovery order.
    fn tree(tops: usize, leaves: usize, seed: u64) -> Subnet {
        let mut s = Subnet::default();
        let mut rng = Rng(seed | 1);
        let mut lid = 1u16;
        let mut order: Vec<(NodeType, u64)> = (0..tops)
            .map(|t| (NodeType::Switch, 0x100 + t as u64))
            .chain((0..leaves).map(|l| (NodeType::Switch, 0x200 + l as u64)))
            .chain((0..leaves * 2).map(|c| (NodeType::Ca, 0x1000 + c as u64)))
            .collect();
        for i in (1..order.len()).rev() {
            order.swap(i, rng.below(i + 1));
        }
        for (kind, guid) in order {
            let ports =
                if kind == NodeType::Switch { u8::try_from(tops.max(leaves) + 2).unwrap_or(u8::MAX) } else { 1 };
            let mut n = node(kind, guid, ports);
            let end = usize::from(kind != NodeType::Switch);
            n.ports[end].lid = Lid(lid);
            n.ports[end].guid = Some(Guid(guid));
            lid += 1;
            add(&mut s, n);
        }
        let at = |s: &Subnet, g: u64| s.by_guid[&Guid(g)];
        for l in 0..leaves {
            let leaf = at(&s, 0x200 + l as u64);
            for t in 0..tops {
                let top = at(&s, 0x100 + t as u64);
                s.link((leaf, PortNum(t as u8 + 1)), (top, PortNum(l as u8 + 1)));
            }
            for c in 0..2 {
                let ca = at(&s, 0x1000 + (l * 2 + c) as u64);
                s.link((leaf, PortNum((tops + 1 + c) as u8)), (ca, PortNum(1)));
            }
        }
        s
    }

    /// xorshift64: the test's randomness from a seed.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }
    }

    fn state(s: &mut Subnet, at: (NodeIdx, PortNum), to: PortState) {
        if let Some(info) = s.nodes[at.0].ports[usize::from(at.1.0)].info.as_mut() {
            info.port_state = to;
        }
    }

    #[test]
    fn a_view_relinked_on_random_link_changes_is_the_view_built_anew() {
        for seed in 1..=40u64 {
            let mut s = tree(4, 6, seed);
            let lmc = (seed % 3) as u8;
            let mut last = LastView::new(build(&s.describe(), lmc));
            let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
            // Every cable, by its two ends.
            let cables: Vec<((NodeIdx, PortNum), (NodeIdx, PortNum))> = (0..s.nodes.len())
                .flat_map(|i| (0..s.nodes[i].ports.len()).map(move |p| (i, PortNum(p as u8))))
                .filter_map(|a| Some((a, s.nodes[a.0].ports[usize::from(a.1.0)].remote?)))
                .filter(|(a, b)| a < b)
                .collect();
            for step in 0..30 {
                let (mut at, mut far) = cables[rng.below(cables.len())];
                if rng.below(2) == 0 {
                    (at, far) = (far, at);
                }
                let up = [PortState::Active, PortState::Armed, PortState::Init];
                let down = [PortState::Down, PortState::NoChange];
                match rng.below(4) {
                    // The cable lost at both ends, or back at both.
                    0 => {
                        let to = down[rng.below(2)];
                        state(&mut s, at, to);
                        state(&mut s, far, to);
                    }
                    1 => {
                        let to = up[rng.below(3)];
                        state(&mut s, at, to);
                        state(&mut s, far, to);
                    }
                    // One end read down, the other still up (a cut seen mid-sweep).
                    2 => state(&mut s, at, down[rng.below(2)]),
                    // The far end not known any more.
                    _ => s.nodes[at.0].ports[usize::from(at.1.0)].remote = None,
                }
                let built = build(&s.describe(), lmc);
                assert!(last.relink(&s, lmc), "seed {seed} step {step}: same nodes, only links changed");
                let (view, switch_nodes) = last.view();
                assert_eq!(**view, built.view, "seed {seed} step {step}");
                assert_eq!(switch_nodes, built.switch_nodes.as_slice());
                if step % 10 == 9 {
                    s.link(at, far);
                }
            }
            assert!(s.link_count() > 0);
        }
    }

    #[test]
    fn a_subnet_with_other_nodes_or_lids_is_not_relinked() {
        let s = tree(2, 3, 7);
        let built = build(&s.describe(), 0);
        assert!(LastView::new(built.clone()).relink(&s, 0), "the same subnet");
        assert!(!LastView::new(built.clone()).relink(&s, 1), "another LMC");
        let mut moved = s.clone();
        let ca = moved.by_guid[&Guid(0x1000)];
        moved.nodes[ca].ports[1].lid = Lid(99);
        assert!(!LastView::new(built.clone()).relink(&moved, 0), "a CA's LID moved");
        let mut sw = s.clone();
        let top = sw.by_guid[&Guid(0x100)];
        sw.nodes[top].ports[0].lid = Lid(98);
        assert!(!LastView::new(built.clone()).relink(&sw, 0), "a switch's LID moved");
        let mut more = s.clone();
        add(&mut more, node(NodeType::Ca, 0x5000, 1));
        assert!(!LastView::new(built.clone()).relink(&more, 0), "a node found");
        let mut fewer = s.clone();
        fewer.nodes.pop();
        assert!(!LastView::new(built.clone()).relink(&fewer, 0), "a node lost");
        let mut swapped = s.clone();
        swapped.nodes.swap(0, 1);
        assert!(!LastView::new(built.clone()).relink(&swapped, 0), "nodes in another discovery order");
        let mut port = s;
        port.nodes[ca].ports[1].guid = None;
        assert!(!LastView::new(built.clone()).relink(&port, 0), "an end port gone");
    }
}
