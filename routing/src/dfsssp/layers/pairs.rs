//! Layers by pair of switches: both directions between two switches on one layer.
//!
//! An RC connection's responder sends its ACKs and read responses on the route back to the
//! requester, with the SL of the requester's path (the CM's REQ carries one SL for both
//! directions). If the paths A→B and B→A were on different layers, the replies would travel
//! B→A's route on A→B's VL, whose dependency graph never held that route. So the unit placed
//! here is the pair of switches {s, t}: the paths from `s` to the LIDs delivered at `t` and those
//! from `t` to the LIDs delivered at `s`, as one list of dependencies on the first layer that
//! stays acyclic with all of them. Every CA pair's two directions then share a layer, which
//! holds both routes: the SL a host is given for A→B is the SL of B→A, and either end's traffic
//! on it stays within that layer's graph (`crate::check::credit_loops_per_vl_with_replies`).
//!
//! As in the per-path placement, the units are placed again class by class of the best
//! placement so far (iterated greedy) while that frees a layer. Owns only this placement;
//! guarantees each layer's graph acyclic, and never panics on any tables.

use super::{Layer, MAX_LAYERS, PASSES, Placer, REFINE_WORK, walk_tables};

impl Placer<'_> {
    /// Places every path again, a pair of switches at a time (both directions on one layer),
    /// and keeps that placement, replacing the per-path layers, if it fits the budget; whether
    /// it did. Paths from a switch to its own LIDs have no dependencies and stay on layer 0.
    pub(crate) fn pair_up(&mut self, routes: &crate::Routes) -> bool {
        let n = self.idx.graph.len();
        // The destination rows delivered at each switch.
        let mut at: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (r, d) in self.dests.iter().enumerate() {
            if let Some(v) = at.get_mut(d.attach) {
                v.push(r);
            }
        }
        let units = n * n.saturating_sub(1) / 2;
        let passes = (REFINE_WORK / self.dests.len().saturating_mul(n).max(1)).clamp(1, PASSES);
        let mut best: Option<(Vec<u8>, u8)> = None;
        for pass in 0..passes.max(2) {
            // The first pass in switch-pair order, the second by falling number of dependencies
            // (largest first, as in greedy colouring); then the best placement's classes,
            // highest layer first.
            if pass >= 2 && best.is_none() {
                break;
            }
            let mut order: Vec<(u8, usize, usize)> = Vec::with_capacity(units);
            for s in 0..n {
                for t in s + 1..n {
                    let k = match (pass, &best) {
                        (0, _) => 0,
                        (1, _) => u8::MAX - u8::try_from(self.unit_deps(routes, &at, s, t)).unwrap_or(u8::MAX),
                        (_, Some((layer, used))) => (used - 1).saturating_sub(self.unit_layer(layer, &at, s, t)),
                        (_, None) => 0,
                    };
                    order.push((k, s, t));
                }
            }
            order.sort_by_key(|&(k, ..)| k);
            let next = self.place_units(routes, &at, &order);
            match (next, &best) {
                (Some(next), Some((_, used))) if next.1 < *used => best = Some(next),
                (Some(next), None) => best = Some(next),
                // A class-ordered pass that frees no layer ends the search.
                _ if pass >= 2 => break,
                _ => {}
            }
            if best.as_ref().is_some_and(|b| b.1 <= 1) {
                break;
            }
        }
        match best {
            Some((layer, used)) if used <= self.budget => {
                self.layer = layer;
                self.used = used;
                self.paired = true;
                true
            }
            _ => false,
        }
    }

    /// How many dependencies unit {s, t} has (with repeats).
    fn unit_deps(&mut self, routes: &crate::Routes, at: &[Vec<usize>], a: usize, b: usize) -> usize {
        let switches = self.idx.graph.len();
        let mut total = 0;
        for (src, dst) in [(a, b), (b, a)] {
            let hosts = self.idx.hosts_at.get(src).is_some_and(|&h| h > 0);
            for &r in &at[dst] {
                let d = self.dests[r];
                if (d.to_ca || hosts) && walk_tables(&self.ch, &routes.tables, src, &d, switches, &mut self.path) {
                    total += self.path.len();
                }
            }
        }
        total
    }

    /// The layer a placement gave unit {s, t} (that of any of its paths; 0 without one).
    fn unit_layer(&self, layer: &[u8], at: &[Vec<usize>], s: usize, t: usize) -> u8 {
        let n = self.idx.graph.len();
        let first = at[t].iter().map(|&r| r * n + s).chain(at[s].iter().map(|&r| r * n + t)).next();
        first.and_then(|i| layer.get(i).copied()).unwrap_or(0)
    }

    /// One placement of the units in `order` on fresh layers; the layer of every path and the
    /// count, or `None` if a unit fits in none of [`MAX_LAYERS`].
    fn place_units(
        &mut self,
        routes: &crate::Routes,
        at: &[Vec<usize>],
        order: &[(u8, usize, usize)],
    ) -> Option<(Vec<u8>, u8)> {
        let n = self.idx.graph.len();
        let mut layers: Vec<Layer> = vec![Layer::over(&self.ch)];
        let mut layer = vec![0u8; self.dests.len() * n];
        let mut used = 1u8;
        let mut deps: Vec<(u32, u8, u32)> = Vec::new();
        let mut members: Vec<usize> = Vec::new();
        for &(_, s, t) in order {
            deps.clear();
            members.clear();
            for (src, dst) in [(s, t), (t, s)] {
                let hosts = self.idx.hosts_at.get(src).is_some_and(|&h| h > 0);
                for &r in &at[dst] {
                    let d = self.dests[r];
                    if !d.to_ca && !hosts {
                        continue;
                    }
                    members.push(r * n + src);
                    if walk_tables(&self.ch, &routes.tables, src, &d, n, &mut self.path) {
                        deps.extend_from_slice(&self.path);
                    }
                }
            }
            if members.is_empty() {
                continue;
            }
            let mut placed = None;
            for l in 0..MAX_LAYERS {
                if usize::from(l) == layers.len() {
                    layers.push(Layer::over(&self.ch));
                }
                if deps.is_empty() || layers[usize::from(l)].try_place_unit(&self.ch, &deps, &mut self.added) {
                    placed = Some(l);
                    break;
                }
            }
            let l = placed?;
            used = used.max(l + 1);
            for &i in &members {
                layer[i] = l;
            }
        }
        Some((layer, used))
    }
}
