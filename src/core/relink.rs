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
//!
//! Between faults the view is settled ([`LastView::settle`], at the end of every sweep: the
//! full relink, and the copy where the base shares the view); a quick sweep then names the
//! ports it changed ([`LastView::touch`]: the two ends of each lost cable) and its relink sets
//! only those and their far ends ([`LastView::relink_touched`]) instead of going over every
//! port (10 ms of CPU at k = 48 under load, most of it reads of the far ends' records). Anything
//! else that writes the subnet's ports (a heavy sweep, a PortInfo read or Set) unsettles it
//! ([`LastView::unsettle`]), and the next relink goes over every port again.

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
    /// Settled ([`LastView::settle`]): the view is the one the subnet gives, but for the
    /// ports named since ([`LastView::touch`]); `None` when that is not known.
    settled: Option<Vec<(NodeIdx, PortNum)>>,
}

/// The neighbour a view port shows for subnet port `r`, by the rule of `describe`: the peer
/// where the link is up, the far end is known and was not read with its link down.
fn peer_of(subnet: &Subnet, ids: &[NodeId], r: &PortRecord) -> Option<Neighbor> {
    let far_down = |(node, port): (NodeIdx, PortNum)| {
        subnet.nodes.get(node).and_then(|n| n.port(port)).is_some_and(|r| r.info.is_some() && !r.is_linked())
    };
    let (node, port) = r.remote.filter(|&far| r.is_linked() && !far_down(far))?;
    Some(Neighbor { node: *ids.get(node)?, port })
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
        LastView {
            view: Arc::new(built.view),
            switch_nodes: built.switch_nodes,
            ca_nodes: built.ca_nodes,
            ids,
            settled: None,
        }
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
        self.settled = None;
        if self.view.lmc != lmc || subnet.nodes.len() != self.ids.len() {
            return false;
        }
        let view = Arc::make_mut(&mut self.view);
        let ids = &self.ids;
        let peer = |r: &PortRecord| peer_of(subnet, ids, r);
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

    /// Brings the view up to `subnet` in full ([`LastView::relink`]) between faults, at the end
    /// of a sweep, and copies it there if it is shared (with the base): a quick sweep's relink
    /// then sets only the ports it changed ([`LastView::relink_touched`]). False (and nothing
    /// settled) when the subnet is not the view's any more.
    pub fn settle(&mut self, subnet: &Subnet, lmc: u8) -> bool {
        let ok = self.relink(subnet, lmc);
        self.settled = ok.then(Vec::new);
        ok
    }

    /// The subnet's ports `ports` changed since the view was settled (their links or states).
    pub fn touch(&mut self, ports: &[(NodeIdx, PortNum)]) {
        if let Some(t) = self.settled.as_mut() {
            t.extend_from_slice(ports);
        }
    }

    /// Something else of the subnet may have changed since the view was settled: the next
    /// relink goes over every port.
    pub fn unsettle(&mut self) {
        self.settled = None;
    }

    /// [`LastView::relink`] of a settled view where only the touched ports changed: each of
    /// them, the port its view neighbour was and the port its cable now reaches are set by the
    /// same rule, and nothing else is read (at k = 48, a handful of ports instead of 200,000).
    /// False when the view is not settled (the caller relinks in full); the view is then
    /// unchanged. Either way it is not settled afterwards.
    pub fn relink_touched(&mut self, subnet: &Subnet, lmc: u8) -> bool {
        let Some(touched) = self.settled.take() else { return false };
        if self.view.lmc != lmc || subnet.nodes.len() != self.ids.len() {
            return false;
        }
        // Each touched port, and the far ends before and after: the view's neighbour of it and
        // the subnet's remote.
        let mut ports = Vec::with_capacity(touched.len() * 3);
        for &(node, port) in &touched {
            ports.push((node, port));
            if let Some(r) = subnet.nodes.get(node).and_then(|n| n.port(port)) {
                ports.extend(r.remote);
            }
            if let Some(nb) = self.neighbor(node, port) {
                let far = match nb.node {
                    NodeId::Switch(k) => self.switch_nodes.get(k),
                    NodeId::Ca(k) => self.ca_nodes.get(k),
                };
                ports.extend(far.map(|&f| (f, nb.port)));
            }
        }
        ports.sort_unstable();
        ports.dedup();
        let view = Arc::make_mut(&mut self.view);
        for (node, port) in ports {
            let (Some(&id), Some(r)) = (self.ids.get(node), subnet.nodes.get(node).and_then(|n| n.port(port))) else {
                continue;
            };
            let peer = peer_of(subnet, &self.ids, r);
            match id {
                NodeId::Switch(k) => {
                    if let Some(slot) = view.switches.get_mut(k).and_then(|s| s.ports.get_mut(usize::from(port.0))) {
                        *slot = peer;
                    }
                }
                NodeId::Ca(k) => {
                    if let Some(slot) = view.cas.get_mut(k).and_then(|c| c.ports.iter_mut().find(|p| p.num == port)) {
                        slot.neighbor = peer;
                    }
                }
            }
        }
        true
    }

    /// The neighbour the view shows on subnet port (`node`, `port`).
    fn neighbor(&self, node: NodeIdx, port: PortNum) -> Option<Neighbor> {
        match *self.ids.get(node)? {
            NodeId::Switch(k) => *self.view.switches.get(k)?.ports.get(usize::from(port.0))?,
            NodeId::Ca(k) => self.view.cas.get(k)?.ports.iter().find(|p| p.num == port)?.neighbor,
        }
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

    /// Every cable of `s`, by its two ends.
    fn cables(s: &Subnet) -> Vec<Cable> {
        (0..s.nodes.len())
            .flat_map(|i| (0..s.nodes[i].ports.len()).map(move |p| (i, PortNum(p as u8))))
            .filter_map(|a| Some((a, s.nodes[a.0].ports[usize::from(a.1.0)].remote?)))
            .filter(|(a, b)| a < b)
            .collect()
    }

    type Cable = ((NodeIdx, PortNum), (NodeIdx, PortNum));

    /// A random tree of `seed`, its LMC, its view, a generator and its cables.
    fn seeded(seed: u64) -> (Subnet, u8, LastView, Rng, Vec<Cable>) {
        let s = tree(4, 6, seed);
        let lmc = (seed % 3) as u8;
        let last = LastView::new(build(&s.describe(), lmc));
        let cables = cables(&s);
        (s, lmc, last, Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1), cables)
    }

    fn state(s: &mut Subnet, at: (NodeIdx, PortNum), to: PortState) {
        if let Some(info) = s.nodes[at.0].ports[usize::from(at.1.0)].info.as_mut() {
            info.port_state = to;
        }
    }

    #[test]
    fn a_view_relinked_on_random_link_changes_is_the_view_built_anew() {
        for seed in 1..=40u64 {
            let (mut s, lmc, mut last, mut rng, cables) = seeded(seed);
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
    fn a_settled_view_relinked_at_the_touched_ports_is_the_view_built_anew() {
        for seed in 1..=40u64 {
            let (mut s, lmc, mut last, mut rng, cables) = seeded(seed);
            let mut cut = Vec::new();
            for round in 0..12 {
                assert!(last.settle(&s, lmc), "seed {seed} round {round}");
                // One to three changes, each naming the ports it wrote, as a quick sweep does.
                for _ in 0..=rng.below(3) {
                    let (at, far) = cables[rng.below(cables.len())];
                    match rng.below(4) {
                        // A cable lost as a quick sweep drops it: both ends down, no remote.
                        0 | 1 => {
                            for end in [at, far] {
                                state(&mut s, end, PortState::Down);
                                s.nodes[end.0].ports[usize::from(end.1.0)].remote = None;
                            }
                            cut.push((at, far));
                        }
                        // One end read down, and only it named: the far end's view port
                        // changes with it.
                        2 => {
                            state(&mut s, at, PortState::Down);
                            last.touch(&[at]);
                            continue;
                        }
                        // A cable lost earlier back up at both ends.
                        _ => {
                            let Some((a, b)) = cut.pop() else { continue };
                            s.link(a, b);
                            state(&mut s, a, PortState::Active);
                            state(&mut s, b, PortState::Active);
                            last.touch(&[a, b]);
                            continue;
                        }
                    }
                    last.touch(&[at, far]);
                }
                let built = build(&s.describe(), lmc);
                assert!(last.relink_touched(&s, lmc), "seed {seed} round {round}: settled");
                assert_eq!(**last.view().0, built.view, "seed {seed} round {round}");
                assert!(!last.relink_touched(&s, lmc), "not settled after a relink");
            }
        }
    }

    #[test]
    fn a_view_not_settled_or_unsettled_is_relinked_in_full() {
        let mut s = tree(2, 3, 5);
        let mut last = LastView::new(build(&s.describe(), 0));
        let before = (**last.view().0).clone();
        assert!(!last.relink_touched(&s, 0), "never settled");
        assert_eq!(**last.view().0, before, "left alone");
        assert!(last.settle(&s, 0));
        // A port written that no quick sweep named: only a full relink finds it.
        let leaf = s.by_guid[&Guid(0x200)];
        state(&mut s, (leaf, PortNum(1)), PortState::Down);
        last.unsettle();
        assert!(!last.relink_touched(&s, 0));
        assert!(last.relink(&s, 0));
        assert_eq!(**last.view().0, build(&s.describe(), 0).view);
        assert_ne!(**last.view().0, before, "the port's link left the view");
        // Settled on another LMC: not relinked at the touched ports.
        assert!(last.settle(&s, 0));
        assert!(!last.relink_touched(&s, 1));
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
