//! Whether a path fits a layer, found before any of its dependencies is added.
//!
//! [`Layer::add`] keeps the topological order valid dependency by dependency, so a path that
//! is refused at its third dependency has already paid for reordering the layer around its
//! first two (and its taking back leaves them reordered for nothing). On a fabric whose layers
//! fill up (a random one, where most paths are turned away by several layers before one takes
//! them, or by all of them when the budget is too small), those reorders of refused paths were
//! most of the placement's work: on the random 700-switch fabric, 87 % of the backward
//! searches' channels.
//!
//! A path's channels `c_0 .. c_k` form a chain; the layer's graph `G` with the chain added
//! holds a cycle exactly when some `c_j` reaches an earlier `c_i` (`i < j`) in `G` alone (a
//! cycle through the chain leaves it somewhere after it entered it). So the dependencies are
//! tried in path order, and at each new one `c_t -> c_(t+1)` one forward search from `c_(t+1)`
//! through `G`, pruned by the layer's order to the channels placed before the latest of
//! `c_0 .. c_t`, looks for any of them. The first dependency so found, or refused already, is
//! the one [`Layer::try_place`] used to stop at; whether it closes a cycle with `G` alone (and
//! is then remembered as refused) is one more search, from `c_(t+1)` for `c_t`. Nothing in the
//! layer changes but its search marks, so a refused path costs forward searches only, and
//! [`Layer::try_place`] gives the same answers and remembers the same refusals as before.
//! The chain is what makes one search per dependency enough: [`Layer::try_place`] checks a
//! list of dependencies that is one path's (each leaving the channel the last one entered) so,
//! and adds any other list (a pair of switches' unit, several paths) one by one as before.
//! Owns only this check; never panics on any path and layer.

use super::{Channels, Layer, has};

impl Layer {
    /// The first of `path`'s dependencies (one path's chain: each leaves the channel the last
    /// one entered) that is refused here or closes a cycle with the
    /// layer and the path's earlier ones, and whether it closes one with the layer alone;
    /// `None` if the whole path fits. Changes nothing but the search marks.
    pub(super) fn first_conflict(&mut self, ch: &Channels, path: &[(u32, u8, u32)]) -> Option<(usize, bool)> {
        let &(first, _, _) = path.first()?;
        let mut goal = self.next_epoch();
        self.mark[first as usize] = goal;
        // The latest position of the path's channels so far: any channel that reaches one of
        // them in the layer is placed before it.
        let mut top = self.ord[first as usize];
        for (t, &(a, p, b)) in path.iter().enumerate() {
            let (ai, bi) = (a as usize, b as usize);
            if !has(&self.deps[ai], p) {
                if has(&self.refused[ai], p) {
                    return Some((t, false));
                }
                if self.mark[bi] == goal || (self.ord[bi] < top && self.reaches_goal(ch, b, goal, top)) {
                    let alone = self.ord[bi] < self.ord[ai] && self.reaches(ch, b, a);
                    return Some((t, alone));
                }
            }
            // The searches' epochs may have wrapped and cleared the goals: mark them again.
            if self.epoch < goal {
                goal = self.next_epoch();
                for &(c, _, _) in &path[..=t] {
                    self.mark[c as usize] = goal;
                }
            }
            self.mark[bi] = goal;
            top = top.max(self.ord[bi]);
        }
        None
    }

    /// [`Layer::try_place`] for the dependencies of several paths at once (a pair of switches'
    /// unit, [`super::Placer::pair_up`]): each path (each run of dependencies that forms a
    /// chain) is checked alone first, and one that does not fit the layer alone turns the unit
    /// away before any reordering; else the unit's dependencies are added one by one, which
    /// finds the cycles that only paths together close. Which units fit is as before; a
    /// dependency that closes a cycle with the layer alone may be remembered as refused from
    /// another path than before, which changes nothing in a layer that only grows (as the
    /// units' layers do).
    pub(crate) fn try_place_unit(
        &mut self,
        ch: &Channels,
        deps: &[(u32, u8, u32)],
        added: &mut Vec<(u32, u8)>,
    ) -> bool {
        added.clear();
        let mut start = 0;
        while start < deps.len() {
            let mut end = start + 1;
            while end < deps.len() && deps[end - 1].2 == deps[end].0 {
                end += 1;
            }
            let chain = &deps[start..end];
            if let Some((t, alone)) = self.first_conflict(ch, chain) {
                if alone && let Some(&(a, p, _)) = chain.get(t) {
                    super::flip(&mut self.refused[a as usize], p, true);
                }
                return false;
            }
            start = end;
        }
        self.add_path(ch, deps, added)
    }

    /// Whether a channel marked `goal` is reachable from `from` through the layer, searching
    /// the channels placed before position `top` only.
    fn reaches_goal(&mut self, ch: &Channels, from: u32, goal: u32, top: u32) -> bool {
        let seen = self.next_epoch();
        self.stack.clear();
        self.stack.push(from);
        self.mark[from as usize] = seen;
        while let Some(c) = self.stack.pop() {
            let onward = ch.by_port_of(ch.to[c as usize] as usize);
            for (w, &word) in self.deps[c as usize].iter().enumerate() {
                let mut bits = word;
                while bits != 0 {
                    let q = w * 64 + bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    let Some(&d) = onward.get(q) else { continue };
                    let Some(&m) = self.mark.get(d as usize) else { continue };
                    if m == goal {
                        return true;
                    }
                    if m != seen && self.ord[d as usize] < top {
                        self.mark[d as usize] = seen;
                        self.stack.push(d);
                    }
                }
            }
        }
        false
    }

    /// Whether `to` is reachable from `from` through the layer (`from` placed before `to`).
    fn reaches(&mut self, ch: &Channels, from: u32, to: u32) -> bool {
        let goal = self.next_epoch();
        let top = self.ord[to as usize];
        self.mark[to as usize] = goal;
        self.reaches_goal(ch, from, goal, top)
    }
}

#[cfg(test)]
mod tests {
    use ibsm_topology::generators::GenSpec;

    use super::super::walk_tables;
    use super::*;
    use crate::Engine;
    use crate::check::PortSet;
    use crate::dfsssp::DestLid;
    use crate::graph::Indexed;
    use crate::minhop::MinHop;
    use crate::testing::generated;

    /// The fabric both tests place on: a random 48-switch fabric's index, channels and
    /// minimal routes.
    fn fabric() -> (Indexed, Channels, crate::Routes) {
        let v = generated(&GenSpec::random(48, 16, 2, 150, 1), 0);
        let idx = Indexed::new(&v).unwrap();
        let ch = Channels::new(&v, &idx);
        let routes = MinHop.route(&v).unwrap();
        (idx, ch, routes)
    }

    /// Places on the first of up to 15 layers that `place` accepts, opening layers as needed;
    /// `refused` is told of each layer that turned it away, with the layer's order before the
    /// try. The layer taken, if any.
    fn first_fit(
        layers: &mut Vec<Layer>,
        ch: &Channels,
        mut place: impl FnMut(&mut Layer) -> bool,
        mut refused: impl FnMut(usize, &Layer, &[u32]),
    ) -> Option<usize> {
        for l in 0..15 {
            if l == layers.len() {
                layers.push(Layer::over(ch));
            }
            let before = layers[l].ord.clone();
            if place(&mut layers[l]) {
                return Some(l);
            }
            refused(l, &layers[l], &before);
        }
        None
    }

    /// Every path of minimal routes on a random fabric, placed first-fit on up to 15 layers
    /// twice: by [`Layer::try_place`] and by adding the dependencies one by one as the
    /// placement did before ([`Layer::add_path`]). Same layer for every path, same graphs and
    /// refusals at the end; and where a layer turned a path away, the checked placement left
    /// its order untouched while the one-by-one placement had reordered it (for nothing) at
    /// least sometimes.
    #[test]
    fn a_path_a_layer_refuses_is_found_before_any_reordering_with_the_same_answers() {
        let (idx, ch, routes) = fabric();
        let n = idx.graph.len();
        let (mut checked, mut by_adding): (Vec<Layer>, Vec<Layer>) = (Vec::new(), Vec::new());
        let (mut path, mut added) = (Vec::new(), Vec::new());
        let (mut placed, mut refusals, mut wasted_reorders) = (0, 0, 0);
        for d in &idx.dests {
            let dest = DestLid { lid: d.base, attach: d.attach, to_ca: d.ca.is_some() };
            for s in 0..n {
                if !walk_tables(&ch, &routes.tables, s, &dest, n, &mut path) || path.is_empty() {
                    continue;
                }
                let a = first_fit(
                    &mut checked,
                    &ch,
                    |layer| layer.try_place(&ch, &path, &mut added),
                    |l, layer, before| {
                        refusals += 1;
                        assert_eq!(layer.ord, before, "a refused path reordered layer {l}");
                    },
                );
                let b = first_fit(
                    &mut by_adding,
                    &ch,
                    |layer| layer.add_path(&ch, &path, &mut added),
                    |_, layer, before| wasted_reorders += usize::from(layer.ord != before),
                );
                assert_eq!(a, b, "path from switch {s} to LID {}", d.base);
                assert!(a.is_some());
                placed += 1;
            }
        }
        assert_eq!(checked.len(), by_adding.len());
        for (a, b) in checked.iter().zip(&by_adding) {
            assert_eq!(a.deps, b.deps);
            assert_eq!(a.refused, b.refused);
        }
        assert!(checked.len() >= 3, "{} layers", checked.len());
        assert!(placed > 1000 && refusals > 100, "{placed} paths, {refusals} refusals");
        assert!(wasted_reorders > 0, "the one-by-one placement never reordered for a refused path");
    }

    /// Units of several paths (here the paths from two switches to one LID), placed first-fit
    /// by [`Layer::try_place_unit`] and one dependency at a time: the same layer for every
    /// unit and the same graphs at the end.
    #[test]
    fn a_unit_of_paths_fits_where_it_did() {
        let (idx, ch, routes) = fabric();
        let n = idx.graph.len();
        let (mut checked, mut by_adding): (Vec<Layer>, Vec<Layer>) = (Vec::new(), Vec::new());
        let (mut path, mut unit, mut added) = (Vec::new(), Vec::new(), Vec::new());
        let (mut units, mut refusals) = (0, 0);
        for d in &idx.dests {
            let dest = DestLid { lid: d.base, attach: d.attach, to_ca: d.ca.is_some() };
            for s in (0..n.saturating_sub(1)).step_by(2) {
                unit.clear();
                for src in [s, s + 1] {
                    if walk_tables(&ch, &routes.tables, src, &dest, n, &mut path) {
                        unit.extend_from_slice(&path);
                    }
                }
                if unit.is_empty() {
                    continue;
                }
                let a = first_fit(
                    &mut checked,
                    &ch,
                    |layer| layer.try_place_unit(&ch, &unit, &mut added),
                    |_, _, _| refusals += 1,
                );
                let b = first_fit(&mut by_adding, &ch, |layer| layer.add_path(&ch, &unit, &mut added), |_, _, _| {});
                assert_eq!(a, b, "switches {s} and {} to LID {}", s + 1, d.base);
                assert!(a.is_some());
                units += 1;
            }
        }
        assert_eq!(checked.len(), by_adding.len());
        for (a, b) in checked.iter().zip(&by_adding) {
            assert_eq!(a.deps, b.deps);
        }
        assert!(
            checked.len() >= 3 && units > 1000 && refusals > 100,
            "{} layers, {units} units, {refusals} refusals",
            checked.len()
        );
    }

    /// Whether channel `to` is reachable from `from` along the layer's dependencies: a plain
    /// search over `deps`, independent of the layer's order and marks.
    fn reachable(layer: &Layer, ch: &Channels, from: u32, to: u32) -> bool {
        let mut seen = vec![false; ch.to.len()];
        let mut stack = vec![from];
        while let Some(c) = stack.pop() {
            if c == to {
                return true;
            }
            if std::mem::replace(&mut seen[c as usize], true) {
                continue;
            }
            let far = ch.to[c as usize] as usize;
            for p in 0..=u8::MAX {
                if has(&layer.deps[c as usize], p) && ch.out(far, p) != super::super::NONE {
                    stack.push(ch.out(far, p));
                }
            }
        }
        false
    }

    /// The layered repair (`dfsssp::repair`) takes back a path that fitted its layer when the
    /// switch should wait for cheaper neighbours, and keeps the layer's remembered refusals.
    /// It takes it back at once, with nothing placed between: the layer's dependencies and
    /// refusals are then exactly as before the try, so every refusal is still true (the
    /// dependency still closes a cycle with the layer alone), and no layering changes. Checked
    /// on every path of a random fabric placed first-fit, each taken back and placed again; at
    /// the end every refusal of every layer is checked by a plain search.
    #[test]
    fn a_path_taken_back_at_once_leaves_its_layer_and_the_layers_refusals_as_they_were() {
        let (idx, ch, routes) = fabric();
        let n = idx.graph.len();
        let mut layers: Vec<Layer> = Vec::new();
        let (mut path, mut added) = (Vec::new(), Vec::new());
        let mut taken_back = 0;
        for d in &idx.dests {
            let dest = DestLid { lid: d.base, attach: d.attach, to_ca: d.ca.is_some() };
            for s in 0..n {
                if !walk_tables(&ch, &routes.tables, s, &dest, n, &mut path) || path.is_empty() {
                    continue;
                }
                let before: Vec<(Vec<PortSet>, Vec<PortSet>)> =
                    layers.iter().map(|l| (l.deps.clone(), l.refused.clone())).collect();
                let l = first_fit(&mut layers, &ch, |layer| layer.try_place(&ch, &path, &mut added), |_, _, _| {});
                let l = l.expect("15 layers take every path");
                let (deps, refused) =
                    before.get(l).cloned().unwrap_or_else(|| (Layer::over(&ch).deps, Layer::over(&ch).refused));
                layers[l].take_back(&added);
                assert_eq!(layers[l].deps, deps, "path from switch {s} to LID {}: taken back", d.base);
                assert_eq!(layers[l].refused, refused, "path from switch {s} to LID {}: refusals", d.base);
                taken_back += 1;
                assert!(layers[l].try_place(&ch, &path, &mut added), "fits again");
            }
        }
        let mut refusals = 0;
        for (l, layer) in layers.iter().enumerate() {
            for a in 0..u32::try_from(ch.to.len()).expect("channels") {
                let far = ch.to[a as usize] as usize;
                for p in (0..=u8::MAX).filter(|&p| has(&layer.refused[a as usize], p)) {
                    let b = ch.out(far, p);
                    assert!(reachable(layer, &ch, b, a), "layer {l}: refusal {a} -> port {p} no longer closes a cycle");
                    refusals += 1;
                }
            }
        }
        assert!(
            taken_back > 1000 && refusals > 10 && layers.len() >= 3,
            "{taken_back} taken back, {refusals} refusals"
        );
    }

    /// Were an older path taken back (one placed before others were refused), a refusal it
    /// caused would stay while no longer true: the layer would refuse a path it could take.
    /// That makes a layering worse, never wrong: a refusal only turns paths away, and the
    /// layer's dependencies stay acyclic. On a ring of four: the fourth turn is refused while
    /// the first three are placed; with the third taken back the fourth would fit, but the
    /// layer still refuses it, and holds no cycle.
    #[test]
    fn a_refusal_outliving_the_path_it_came_from_only_refuses_more() {
        let v = crate::testing::ring(4);
        let idx = Indexed::new(&v).unwrap();
        let ch = Channels::new(&v, &idx);
        let cw: Vec<u32> = (0..4).map(|s| ch.out(s, 1)).collect();
        let turn = |i: usize| (cw[i], 1u8, cw[(i + 1) % 4]);
        let mut added = Vec::new();
        let mut l = Layer::new(ch.len());
        assert!(l.try_place(&ch, &[turn(0), turn(1)], &mut added));
        assert!(l.try_place(&ch, &[turn(2)], &mut added));
        let third = added.clone();
        assert!(!l.try_place(&ch, &[turn(3)], &mut added));
        l.take_back(&third);
        // A layer holding only the first two turns takes the fourth ...
        let mut fresh = Layer::new(ch.len());
        assert!(fresh.try_place(&ch, &[turn(0), turn(1)], &mut added));
        assert!(fresh.try_place(&ch, &[turn(3)], &mut added));
        // ... the one whose third was taken back still refuses it, and holds no cycle.
        assert!(!l.try_place(&ch, &[turn(3)], &mut added));
        for &c in &cw {
            let far = ch.to[c as usize] as usize;
            for p in (0..=u8::MAX).filter(|&p| has(&l.deps[c as usize], p)) {
                assert!(!reachable(&l, &ch, ch.out(far, p), c), "a cycle through channel {c}");
            }
        }
    }
}
