//! Nue routing: deadlock-free routes within any virtual-lane budget, one included, found on the
//! channel dependency graph itself (after Domke, Hoefler and Matsuoka, HPDC 2016).
//!
//! The destinations are split into as many subsets as there are layers (virtual lanes), each a
//! compact region of the fabric ([`partition`]: contiguous runs of a depth-first order of a
//! breadth-first tree from a central switch, balanced by LIDs); every LID of a subset is on its
//! layer, for paths from every source, so a pair's SL depends on its destination only. Each
//! layer keeps one channel dependency graph (the online topological order of
//! [`crate::dfsssp::layers`]) holding every dependency its routes use so far.
//!
//! Per destination LID, a Dijkstra search grows the tree of routes toward the LID's switch
//! from that switch outward, switch by switch on the lexicographic cost (switch hops, then the
//! summed load of the channels, the load being the end ports routed over a channel so far, as
//! in [`crate::dfsssp`]). A switch `x` may join through its channel `c` to a switch `y`
//! already in the tree only if the dependency from `c` to the channel `y` forwards on is in the
//! layer's graph already (used dependencies are free) or can be added without closing a cycle
//! (checked incrementally; one that would close a cycle is remembered as refused, since the
//! graph only grows). So each switch takes the cheapest route whose dependencies keep the
//! layer acyclic, and the route is minimal unless a cycle forbids it.
//!
//! The search can get stuck: a switch whose every way in would close a cycle. It first tries
//! local backtracking (as Nue does): a neighbour in the tree is routed again through another
//! of its neighbours, if the dependencies of the stuck switch, of the neighbour and of every
//! switch routed through it stay acyclic; then the search goes on. Every layer also starts
//! with the dependencies of an escape tree ([`escape`]: a breadth-first
//! spanning tree of each connected component from the switch nearest its subset's
//! destinations), the up-then-down routes of which are acyclic together. A destination the
//! search cannot bring every switch of its component to takes back what it added and is routed
//! along the tree, whose dependencies are in the graph already. So Nue always routes every
//! pair of a connected component, on any budget, and never declines a valid view.
//!
//! Owns only the algorithm; the output is [`crate::dfsssp::Layered`] (tables and a layer per
//! source switch and destination LID), which the SM programs as it does dfsssp's, and the
//! checks of the result are [`crate::check`]'s. Guarantees: deterministic, never panics on any
//! view, every layer's dependency graph acyclic (the dependencies of all routes of the layer
//! are a subset of those it holds).

mod escape;
mod partition;

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::dfsssp::layers::{Channels, Layer, NONE, flip, has};
use crate::dfsssp::{Layered, PathLayers};
use crate::graph::{Indexed, set};
use crate::{Engine, FabricView, Lft, Routes, RoutingError};

/// The Nue engine with a layer budget.
#[derive(Debug, Clone, Copy)]
pub struct Nue {
    /// The layers (virtual lanes) the paths may use, 1 to 15.
    pub max_layers: u8,
}

impl Default for Nue {
    fn default() -> Self {
        Nue { max_layers: Nue::DEFAULT_LAYERS }
    }
}

impl Nue {
    /// Registry name.
    pub const NAME: &'static str = "nue";
    /// The budget when none is given: the 8 data VLs most switches operate.
    pub const DEFAULT_LAYERS: u8 = 8;

    /// An engine that uses up to `max_layers` layers (clamped to 1..=15).
    pub fn with_layers(max_layers: u8) -> Nue {
        Nue { max_layers: max_layers.clamp(1, 15) }
    }

    /// Routes `view` and gives every path a layer.
    pub fn layered(&self, view: &FabricView) -> Result<Layered, RoutingError> {
        self.run(view).map(|(l, _)| l)
    }

    /// [`Nue::layered`] and how many destination LIDs were routed along the escape tree.
    pub fn layered_with_stats(&self, view: &FabricView) -> Result<(Layered, Stats), RoutingError> {
        self.run(view)
    }

    fn run(self, view: &FabricView) -> Result<(Layered, Stats), RoutingError> {
        let idx = Indexed::new(view)?;
        let mut r = Router::new(view, &idx, self.max_layers.clamp(1, 15));
        r.route_all()?;
        Ok(r.finish())
    }
}

impl Engine for Nue {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn route(&self, view: &FabricView) -> Result<Routes, RoutingError> {
        self.layered(view).map(|l| l.routes)
    }

    fn route_layered(&self, view: &FabricView) -> Result<(Routes, Option<PathLayers>), RoutingError> {
        self.layered(view).map(|l| (l.routes, Some(l.layers)))
    }
}

/// What a run did besides its tables.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Destination LIDs routed.
    pub destinations: usize,
    /// Of those, the ones the search could not route and the escape tree did.
    pub escaped: usize,
    /// Impasses (a switch the search could not reach) resolved by routing a neighbour again.
    pub impasses_resolved: usize,
}

/// One layer: its dependency graph and escape tree.
struct Lane {
    cdg: Layer,
    tree: escape::Tree,
}

/// The state of a run: channels, layers, loads and the tables being filled.
struct Router<'a> {
    idx: &'a Indexed,
    ch: Channels,
    lanes: Vec<Lane>,
    /// Layer of each switch's destinations.
    lane_of: Vec<u8>,
    /// Component of each switch and the size of each component.
    comp: Vec<usize>,
    comp_size: Vec<usize>,
    /// End ports routed over each channel so far.
    load: Vec<u64>,
    /// The weight a source switch adds to the channels its route crosses (its CA ports, one at
    /// least).
    weight: Vec<u64>,
    tables: Vec<Lft>,
    row: Vec<u32>,
    layer: Vec<u8>,
    used: u8,
    stats: Stats,
    w: Work,
}

/// Per-destination scratch space, reused.
#[derive(Default)]
struct Work {
    stamp: Vec<u32>,
    epoch: u32,
    next: Vec<u32>,
    order: Vec<u32>,
    heap: BinaryHeap<Reverse<(u32, u64, u32, u32)>>,
    added: Vec<(u32, u8)>,
    refused: Vec<(u32, u8)>,
    sub: Vec<u64>,
}

impl Work {
    fn begin(&mut self, n: usize) -> u32 {
        if self.stamp.len() != n {
            self.stamp = vec![0; n];
            self.next = vec![NONE; n];
            self.sub = vec![0; n];
            self.epoch = 0;
        }
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.stamp.fill(0);
            self.epoch = 1;
        }
        self.next.fill(NONE);
        self.order.clear();
        self.heap.clear();
        self.added.clear();
        self.refused.clear();
        self.epoch
    }
}

impl<'a> Router<'a> {
    fn new(view: &FabricView, idx: &'a Indexed, budget: u8) -> Router<'a> {
        let g = &idx.graph;
        let n = g.len();
        let ch = Channels::new(view, idx);
        let (comp, count) = g.components();
        let mut comp_size = vec![0usize; count];
        for &c in &comp {
            comp_size[c] += 1;
        }
        let mut lids_at = vec![0u64; n];
        for d in &idx.dests {
            if let Some(x) = lids_at.get_mut(d.attach) {
                *x += u64::from(idx.per_port);
            }
        }
        let lane_of = partition::split(g, &lids_at, budget);
        let lanes = (0..budget)
            .map(|l| {
                let mine: Vec<u64> =
                    lids_at.iter().zip(&lane_of).map(|(&w, &o)| if o == l { w } else { 0 }).collect();
                let tree = escape::Tree::new(g, &ch, &comp, count, &mine);
                let mut cdg = Layer::new(ch.len());
                tree.reserve(g, &ch, &mut cdg);
                Lane { cdg, tree }
            })
            .collect();
        Router {
            idx,
            lanes,
            lane_of,
            comp,
            comp_size,
            load: vec![0; ch.len()],
            weight: idx.hosts_at.iter().map(|&h| u64::from(h).max(1)).collect(),
            tables: view.switches.iter().map(|_| Lft::unrouted(idx.top)).collect(),
            row: vec![NONE; usize::from(idx.top) + 1],
            layer: Vec::new(),
            used: 1,
            stats: Stats::default(),
            ch,
            w: Work::default(),
        }
    }

    /// Every destination LID, destination switches in view order, their LIDs in order.
    fn route_all(&mut self) -> Result<(), RoutingError> {
        let n = self.idx.graph.len();
        let mut by_switch: Vec<Vec<(u16, ibsm_mad::PortNum)>> = vec![Vec::new(); n];
        for d in &self.idx.dests {
            if let Some(v) = by_switch.get_mut(d.attach) {
                for k in 0..self.idx.per_port {
                    v.push((d.base.saturating_add(k), d.port));
                }
            }
        }
        for (t, lids) in by_switch.iter().enumerate() {
            let lane = self.lane_of.get(t).copied().unwrap_or(0);
            for &(lid, port) in lids {
                set(&mut self.tables[t], lid, port);
                self.route_lid(t, lid, lane)?;
                let r = u32::try_from(self.layer.len() / n.max(1)).unwrap_or(NONE);
                if let Some(e) = self.row.get_mut(usize::from(lid)) {
                    *e = r;
                }
                self.layer.resize(self.layer.len() + n, lane);
                self.used = self.used.max(lane + 1);
                self.stats.destinations += 1;
            }
        }
        Ok(())
    }

    /// Routes `lid` at switch `t` on layer `lane`: the search, or the escape tree.
    fn route_lid(&mut self, t: usize, lid: u16, lane: u8) -> Result<(), RoutingError> {
        let n = self.idx.graph.len();
        let Some(Lane { cdg, tree }) = self.lanes.get_mut(usize::from(lane)) else { return Ok(()) };
        let ch = &self.ch;
        let w = &mut self.w;
        let e = w.begin(n);
        let tt = u32::try_from(t).unwrap_or(NONE);
        w.stamp[t] = e;
        w.next[t] = NONE;
        w.order.push(tt);
        push_into(ch, cdg, w, &self.load, t, NONE, 0, 0, e);
        let component = self.comp.get(t).and_then(|&c| self.comp_size.get(c)).copied().unwrap_or(0);
        let mut backtracked = false;
        loop {
            search(ch, cdg, w, &self.load, e);
            if w.order.len() >= component || !resolve_impasse(ch, cdg, w, &self.load, &self.comp, t, e) {
                break;
            }
            backtracked = true;
            self.stats.impasses_resolved += 1;
        }
        if w.order.len() < component {
            // Stuck: take this destination's dependencies back and use the escape tree.
            for &(a, p) in &w.added {
                flip(&mut cdg.deps[a as usize], p, false);
            }
            for &(a, p) in &w.refused {
                flip(&mut cdg.refused[a as usize], p, false);
            }
            tree.route_to(&self.comp, t, &mut w.next);
            w.order.clear();
            tree_order(ch, t, &w.next, &mut w.order);
            if !escape::Tree::covered(ch, cdg, &w.next, &w.order) {
                return Err(RoutingError::Declined {
                    engine: Nue::NAME,
                    reason: format!("the escape tree of layer {lane} misses a dependency toward LID {lid}"),
                });
            }
            self.stats.escaped += 1;
        }
        if backtracked {
            // A switch routed again may now forward to one that joined after it.
            tree_order(ch, t, &w.next, &mut w.order);
        }
        for &x in &w.order {
            w.sub[x as usize] = self.weight[x as usize];
        }
        for &x in w.order.iter().skip(1).rev() {
            let c = w.next[x as usize];
            if c == NONE {
                continue;
            }
            let (_, port) = ch.near[c as usize];
            set(&mut self.tables[x as usize], lid, ibsm_mad::PortNum(port));
            self.load[c as usize] += w.sub[x as usize];
            let y = ch.to[c as usize] as usize;
            w.sub[y] += w.sub[x as usize];
        }
        Ok(())
    }

    fn finish(self) -> (Layered, Stats) {
        let n = self.idx.graph.len();
        let layers = PathLayers::from_parts(n, self.row, self.layer, self.used);
        (Layered { routes: Routes::from_tables(self.tables), layers }, self.stats)
    }
}

/// The search proper: candidates by increasing (hops, cost); a switch joins through a channel
/// whose dependency on the next hop's channel the layer holds or takes.
fn search(ch: &Channels, cdg: &mut Layer, w: &mut Work, load: &[u64], e: u32) {
    while let Some(Reverse((h, cost, x, c))) = w.heap.pop() {
            let xi = x as usize;
            if w.stamp[xi] == e {
                continue;
            }
            let y = ch.to[c as usize] as usize;
            let onward = w.next[y];
            if onward != NONE {
                let p = ch.near[onward as usize].1;
                let ci = c as usize;
                if !has(&cdg.deps[ci], p) {
                    if has(&cdg.refused[ci], p) {
                        continue;
                    }
                    if !cdg.add(ch, c, p, onward) {
                        flip(&mut cdg.refused[ci], p, true);
                        w.refused.push((c, p));
                        continue;
                    }
                    w.added.push((c, p));
                }
            }
            w.stamp[xi] = e;
            w.next[xi] = c;
            w.order.push(x);
            push_into(ch, cdg, w, load, xi, c, h, cost, e);
        }
}

/// Whether the dependency `a -> b` is in the layer, or was added now (noted in `trial`).
fn try_dep(ch: &Channels, cdg: &mut Layer, w: &mut Work, a: u32, b: u32, trial: &mut Vec<(u32, u8)>) -> bool {
    let Some(&(_, p)) = ch.near.get(b as usize) else { return false };
    let ai = a as usize;
    if has(&cdg.deps[ai], p) {
        return true;
    }
    if has(&cdg.refused[ai], p) {
        return false;
    }
    if cdg.add(ch, a, p, b) {
        trial.push((a, p));
        return true;
    }
    flip(&mut cdg.refused[ai], p, true);
    w.refused.push((a, p));
    false
}

/// Local backtracking at an impasse: a switch `x` outside the tree, next to a switch `y` in it
/// whose route `x` cannot follow, joins through `y` once `y` is routed again through another
/// neighbour `z` in the tree (not downstream of `y`) such that `x`'s, `y`'s and every switch
/// routed through `y` keep dependencies the layer holds or takes. The first that works, by
/// switch and port order; false if none.
fn resolve_impasse(ch: &Channels, cdg: &mut Layer, w: &mut Work, load: &[u64], comp: &[usize], t: usize, e: u32) -> bool {
    let mine = comp.get(t).copied();
    let n = w.stamp.len();
    let mut trial = Vec::new();
    for x in 0..n {
        if w.stamp[x] == e || comp.get(x).copied() != mine {
            continue;
        }
        for c in outs_of(ch, x) {
            let y = ch.to[c as usize] as usize;
            if w.stamp[y] != e || y == t {
                continue;
            }
            let old = w.next[y];
            for &c2 in &outs_of(ch, y) {
                let z = ch.to[c2 as usize] as usize;
                if c2 == old || z == x || w.stamp[z] != e || leads_through(ch, &w.next, z, y, t, n) {
                    continue;
                }
                trial.clear();
                let onward = w.next[z];
                let mut ok = try_dep(ch, cdg, w, c, c2, &mut trial)
                    && (onward == NONE || try_dep(ch, cdg, w, c2, onward, &mut trial));
                if ok {
                    for &cin in ch.into_of(y) {
                        let Some(&(wv, _)) = ch.near.get(cin as usize) else { continue };
                        if w.stamp[wv as usize] == e && w.next[wv as usize] == cin && !try_dep(ch, cdg, w, cin, c2, &mut trial) {
                            ok = false;
                            break;
                        }
                    }
                }
                if !ok {
                    for &(a, p) in &trial {
                        flip(&mut cdg.deps[a as usize], p, false);
                    }
                    continue;
                }
                w.added.extend_from_slice(&trial);
                w.next[y] = c2;
                w.stamp[x] = e;
                w.next[x] = c;
                w.order.push(u32::try_from(x).unwrap_or(NONE));
                push_into(ch, cdg, w, load, x, c, 0, 0, e);
                return true;
            }
        }
    }
    false
}

/// The channels out of switch `s`, in port order.
fn outs_of(ch: &Channels, s: usize) -> Vec<u32> {
    (0..=u8::MAX).map(|p| ch.out(s, p)).filter(|&c| c != NONE).collect()
}

/// Whether the route from `z` (by `next`) passes through `y` before reaching `t`.
fn leads_through(ch: &Channels, next: &[u32], z: usize, y: usize, t: usize, limit: usize) -> bool {
    let mut at = z;
    for _ in 0..=limit {
        if at == y {
            return true;
        }
        if at == t {
            return false;
        }
        let c = next.get(at).copied().unwrap_or(NONE);
        let Some(&to) = ch.to.get(c as usize) else { return true };
        at = to as usize;
    }
    true
}

/// Offers every channel into switch `y` from a switch not yet in the tree as a candidate, `y`
/// forwarding on `onward` (`NONE` at the destination), `hops` and `cost` away from it. A channel
/// whose dependency on `onward` is known to close a cycle is left out.
#[allow(clippy::too_many_arguments)]
fn push_into(ch: &Channels, cdg: &Layer, w: &mut Work, load: &[u64], y: usize, onward: u32, hops: u32, cost: u64, e: u32) {
    let p = if onward == NONE { None } else { ch.near.get(onward as usize).map(|&(_, p)| p) };
    for &c in ch.into_of(y) {
        let ci = c as usize;
        let Some(&(x, _)) = ch.near.get(ci) else { continue };
        if w.stamp[x as usize] == e || p.is_some_and(|p| has(&cdg.refused[ci], p)) {
            continue;
        }
        w.heap.push(Reverse((hops + 1, cost.saturating_add(load[ci]), x, c)));
    }
}

/// The switches whose route (by `next`) leads to `t`, each after the switch it forwards to.
fn tree_order(ch: &Channels, t: usize, next: &[u32], order: &mut Vec<u32>) {
    order.clear();
    order.push(u32::try_from(t).unwrap_or(NONE));
    let mut i = 0;
    while let Some(&y) = order.get(i) {
        i += 1;
        for &c in ch.into_of(y as usize) {
            let Some(&(x, _)) = ch.near.get(c as usize) else { continue };
            if next.get(x as usize) == Some(&c) && x as usize != t {
                order.push(x);
            }
        }
    }
}

#[cfg(test)]
mod tests;
