//! Nue routing: deadlock-free routes within any virtual-lane budget, one included, found on the
//! channel dependency graph itself (after Domke, Hoefler and Matsuoka, HPDC 2016).
//!
//! The destinations are split into as many subsets as there are layers (virtual lanes)
//! (`partition`: runs of switches in view order, balanced by LIDs, independent of the cabling);
//! every LID of a subset is on its layer, for paths from every source, so a pair's SL depends on
//! its destination only, and a cable that fails or returns changes no pair's SL. Each
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
//! with the dependencies of an escape tree (`escape`: a breadth-first
//! spanning tree of each connected component from the switch nearest its subset's
//! destinations), the up-then-down routes of which are acyclic together. A destination the
//! search cannot bring every switch of its component to takes back what it added and is routed
//! along the tree, whose dependencies are in the graph already. So Nue always routes every
//! pair of a connected component, on any budget, and never declines a valid view.
//!
//! The layers are independent but for the loads, so they are routed side by side in rounds:
//! each layer routes its next `BATCH` destinations (in view order of their switches) from the
//! loads as the round began plus its own, on as many threads as the machine has; then the
//! round's tables are written and the loads summed, layer by layer. The result is the same on
//! any number of threads.
//!
//! A switch's own LID is first routed by the search with no dependency checked; then only the
//! dependencies of the routes that carry data there, from switches with CAs, are added (a
//! switch without CAs sends no data to another switch; `check` and dfsssp count the same
//! pairs). Only if one of them would close a cycle is the LID searched again as a CA's is. On a
//! fat tree the switch-to-switch routes of the middle and top switches turn down then up, and
//! checking them closed cycles with the CAs' up-then-down routes at every turn.
//!
//! Owns only the algorithm; the output is [`crate::dfsssp::Layered`] (tables and a layer per
//! source switch and destination LID), which the SM programs as it does dfsssp's, and the
//! checks of the result are [`crate::check`]'s. Guarantees: deterministic, never panics on any
//! view, every layer's dependency graph acyclic (the dependencies of the layer's routes to CAs
//! from every switch and to switches from every switch with CAs are a subset of those it
//! holds).

#![allow(clippy::many_single_char_names)] // graph code: x, y switches, c channels, t the destination

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
        self.run_on(view, true)
    }

    /// [`Nue::run`], with the layers of a round on several threads or one after another.
    fn run_on(self, view: &FabricView, parallel: bool) -> Result<(Layered, Stats), RoutingError> {
        let idx = Indexed::new(view)?;
        let mut r = Router::new(view, &idx, self.max_layers.clamp(1, 15));
        r.route_all(parallel)?;
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
    /// Dependencies the search found to close a cycle in their layer (each a bounded search
    /// of the layer's graph; on a fat tree, none).
    pub refused: usize,
}

/// Destinations each layer routes per round.
const BATCH: usize = 64;

/// One layer: its dependency graph, escape tree, destinations and scratch space. Layers are
/// routed side by side, one destination each per round.
struct Lane {
    id: u8,
    cdg: Layer,
    tree: escape::Tree,
    /// Its destinations: (switch, LID, whether a CA's), in routing order.
    todo: Vec<(usize, u16, bool)>,
    w: Work,
    /// This round's routes: (LID, switch, channel), each LID's opened by one with no channel.
    out: Vec<(u16, u32, u32)>,
    /// The loads as this layer sees them in a round: the round's start plus its own routes.
    load: Vec<u64>,
    stats: Stats,
    err: Option<RoutingError>,
}

/// What every layer reads during a round.
struct Shared<'s> {
    ch: &'s Channels,
    comp: &'s [usize],
    comp_size: &'s [usize],
    weight: &'s [u64],
    hosts: &'s [u32],
}

/// The state of a run: channels, layers, loads and the tables being filled.
struct Router<'a> {
    idx: &'a Indexed,
    ch: Channels,
    lanes: Vec<Lane>,
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
}

/// Per-destination scratch space, reused.
#[derive(Default)]
struct Work {
    stamp: Vec<u32>,
    epoch: u32,
    next: Vec<u32>,
    /// Hops and cost of each switch in the tree, and the best candidate offered for each
    /// switch outside it.
    hops: Vec<u32>,
    cost: Vec<u64>,
    best: Vec<u128>,
    order: Vec<u32>,
    heap: BinaryHeap<Reverse<u128>>,
    added: Vec<(u32, u8)>,
    refused: Vec<(u32, u8)>,
    sub: Vec<u64>,
    /// Switches whose carried route's dependencies are in (this epoch).
    live: Vec<u32>,
}

impl Work {
    fn begin(&mut self, n: usize) -> u32 {
        if self.stamp.len() != n {
            self.stamp = vec![0; n];
            self.next = vec![NONE; n];
            self.sub = vec![0; n];
            self.live = vec![0; n];
            self.hops = vec![0; n];
            self.cost = vec![0; n];
            self.best = vec![u128::MAX; n];
            self.epoch = 0;
        }
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.stamp.fill(0);
            self.live.fill(0);
            self.epoch = 1;
        }
        self.next.fill(NONE);
        self.best.fill(u128::MAX);
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
        let mut tables: Vec<Lft> = view.switches.iter().map(|_| Lft::unrouted(idx.top)).collect();
        let mut by_switch: Vec<Vec<(u16, bool)>> = vec![Vec::new(); n];
        for d in &idx.dests {
            if let Some(v) = by_switch.get_mut(d.attach) {
                for k in 0..idx.per_port {
                    let lid = d.base.saturating_add(k);
                    v.push((lid, d.ca.is_some()));
                    set(&mut tables[d.attach], lid, d.port);
                }
            }
        }
        let lids_at: Vec<u64> = by_switch.iter().map(|v| v.len() as u64).collect();
        let lane_of = partition::split(&lids_at, budget);
        let lanes = (0..budget)
            .map(|l| {
                let mine: Vec<u64> = lids_at.iter().zip(&lane_of).map(|(&w, &o)| if o == l { w } else { 0 }).collect();
                let tree = escape::Tree::new(g, &ch, &comp, count, &mine, &idx.hosts_at);
                let mut cdg = Layer::over(&ch);
                tree.reserve(g, &ch, &mut cdg);
                let todo = by_switch
                    .iter()
                    .enumerate()
                    .filter(|&(t, _)| lane_of.get(t) == Some(&l))
                    .flat_map(|(t, lids)| lids.iter().map(move |&(lid, to_ca)| (t, lid, to_ca)))
                    .collect();
                Lane {
                    id: l,
                    cdg,
                    tree,
                    todo,
                    w: Work::default(),
                    out: Vec::new(),
                    load: Vec::new(),
                    stats: Stats::default(),
                    err: None,
                }
            })
            .collect();
        Router {
            idx,
            lanes,
            comp,
            comp_size,
            load: vec![0; ch.len()],
            weight: idx.hosts_at.iter().map(|&h| u64::from(h).max(1)).collect(),
            tables,
            row: vec![NONE; usize::from(idx.top) + 1],
            layer: Vec::new(),
            used: 1,
            ch,
        }
    }

    /// Every destination LID, in rounds: each layer routes its next `BATCH` destinations
    /// (on two threads or more where the machine has them) from the loads as the round began
    /// plus its own, then the rounds' routes are written and their loads added, layer by
    /// layer. So the result does not depend on the number of threads.
    fn route_all(&mut self, parallel: bool) -> Result<(), RoutingError> {
        let n = self.idx.graph.len();
        let most = self.lanes.iter().map(|l| l.todo.len()).max().unwrap_or(0);
        for first in (0..most).step_by(BATCH) {
            let shared = Shared {
                ch: &self.ch,
                comp: &self.comp,
                comp_size: &self.comp_size,
                weight: &self.weight,
                hosts: &self.idx.hosts_at,
            };
            let before = &self.load;
            let min_chunk = if parallel { 1 } else { usize::MAX };
            crate::par::for_chunks(&mut self.lanes, min_chunk, |_, lanes| {
                for lane in lanes {
                    lane.out.clear();
                    lane.load.clone_from(before);
                    for i in first..(first + BATCH).min(lane.todo.len()) {
                        let (t, lid, to_ca) = lane.todo[i];
                        if let Err(e) = lane.route(&shared, t, lid, to_ca) {
                            lane.err = Some(e);
                            break;
                        }
                    }
                }
            });
            let mut load = self.load.clone();
            for lane in &mut self.lanes {
                if let Some(e) = lane.err.take() {
                    return Err(e);
                }
                for ((l, &mine), &was) in load.iter_mut().zip(&lane.load).zip(&self.load) {
                    *l += mine.saturating_sub(was);
                }
                for &(lid, x, c) in &lane.out {
                    if c == NONE {
                        // The start of a destination's routes: its row of layers.
                        let row = u32::try_from(self.layer.len() / n.max(1)).unwrap_or(NONE);
                        if let Some(e) = self.row.get_mut(usize::from(lid)) {
                            *e = row;
                        }
                        self.layer.resize(self.layer.len() + n, lane.id);
                        self.used = self.used.max(lane.id + 1);
                        continue;
                    }
                    let Some(&(_, port)) = self.ch.near.get(c as usize) else { continue };
                    if let Some(t) = self.tables.get_mut(x as usize) {
                        set(t, lid, ibsm_mad::PortNum(port));
                    }
                }
            }
            self.load = load;
        }
        Ok(())
    }

    fn finish(self) -> (Layered, Stats) {
        let n = self.idx.graph.len();
        let mut stats = Stats::default();
        for l in &self.lanes {
            stats.destinations += l.stats.destinations;
            stats.escaped += l.stats.escaped;
            stats.impasses_resolved += l.stats.impasses_resolved;
            stats.refused += l.stats.refused;
        }
        let layers = PathLayers::from_parts(n, self.row, self.layer, self.used);
        (Layered { routes: Routes::from_tables(self.tables), layers }, stats)
    }
}

impl Lane {
    /// Routes `lid` at switch `t` (a CA's LID if `to_ca`, else the switch's): the search, or
    /// the escape tree; the routes into `out`. A switch's LID is first routed by the search
    /// with no dependency checked, then the dependencies of the routes from switches with CAs
    /// are added ([`carried`]): a switch without CAs sends no data to a switch, so its route
    /// there needs none (the pairs `check` counts are the same). If one would close a cycle,
    /// they are taken back and the LID is searched as a CA's is.
    fn route(&mut self, s: &Shared<'_>, t: usize, lid: u16, to_ca: bool) -> Result<(), RoutingError> {
        let ch = s.ch;
        let n = s.comp.len();
        let (cdg, w, load) = (&mut self.cdg, &mut self.w, &mut self.load);
        self.out.push((lid, NONE, NONE));
        self.stats.destinations += 1;
        let component = s.comp.get(t).and_then(|&c| s.comp_size.get(c)).copied().unwrap_or(0);
        if !to_ca {
            let e = start(ch, cdg, w, load, n, t, true);
            search(ch, cdg, w, load, e, true);
            if w.order.len() >= component && carried(ch, cdg, w, s.hosts, e) {
                emit(ch, w, s.weight, load, lid, &mut self.out);
                return Ok(());
            }
            for &(a, p) in &w.added {
                flip(&mut cdg.deps[a as usize], p, false);
            }
        }
        let e = start(ch, cdg, w, load, n, t, false);
        let mut backtracked = false;
        loop {
            search(ch, cdg, w, load, e, false);
            if w.order.len() >= component || !resolve_impasse(ch, cdg, w, load, s.comp, t, e) {
                break;
            }
            backtracked = true;
            self.stats.impasses_resolved += 1;
        }
        self.stats.refused += w.refused.len();
        if w.order.len() < component {
            // Stuck: take this destination's dependencies back and use the escape tree.
            for &(a, p) in &w.added {
                flip(&mut cdg.deps[a as usize], p, false);
            }
            for &(a, p) in &w.refused {
                flip(&mut cdg.refused[a as usize], p, false);
            }
            self.tree.route_to(s.comp, t, &mut w.next);
            w.order.clear();
            tree_order(ch, t, &w.next, &mut w.order);
            if !escape::Tree::covered(ch, cdg, &w.next, &w.order) {
                return Err(RoutingError::Declined {
                    engine: Nue::NAME,
                    reason: format!("the escape tree of layer {} misses a dependency toward LID {lid}", self.id),
                });
            }
            self.stats.escaped += 1;
        } else if backtracked {
            // A switch routed again may now forward to one that joined after it.
            tree_order(ch, t, &w.next, &mut w.order);
        }
        emit(ch, w, s.weight, load, lid, &mut self.out);
        Ok(())
    }
}

/// Starts the tree of routes toward switch `t` (`free`: with no dependency checked).
fn start(ch: &Channels, cdg: &Layer, w: &mut Work, load: &[u64], n: usize, t: usize, free: bool) -> u32 {
    let e = w.begin(n);
    w.stamp[t] = e;
    w.next[t] = NONE;
    w.hops[t] = 0;
    w.cost[t] = 0;
    w.order.push(u32::try_from(t).unwrap_or(NONE));
    push_into(ch, cdg, w, load, t, NONE, 0, 0, e, free);
    e
}

/// The routes of `w.order` (each switch after the one it forwards to) into `out`, and the end
/// ports each carries onto the loads.
fn emit(ch: &Channels, w: &mut Work, weight: &[u64], load: &mut [u64], lid: u16, out: &mut Vec<(u16, u32, u32)>) {
    for &x in &w.order {
        w.sub[x as usize] = weight.get(x as usize).copied().unwrap_or(1);
    }
    for &x in w.order.iter().skip(1).rev() {
        let c = w.next[x as usize];
        if c == NONE {
            continue;
        }
        out.push((lid, x, c));
        load[c as usize] += w.sub[x as usize];
        let y = ch.to[c as usize] as usize;
        w.sub[y] += w.sub[x as usize];
    }
}

/// Adds the dependencies of the routes (by `w.next`) from every switch with CAs, and of the
/// routes they go on along, noting them in `w.added`; false, with some added, if one would
/// close a cycle.
fn carried(ch: &Channels, cdg: &mut Layer, w: &mut Work, hosts: &[u32], e: u32) -> bool {
    for i in 0..w.order.len() {
        let mut at = w.order[i] as usize;
        if hosts.get(at).is_none_or(|&h| h == 0) {
            continue;
        }
        while w.live[at] != e {
            w.live[at] = e;
            let c = w.next[at];
            if c == NONE {
                break;
            }
            let y = ch.to[c as usize] as usize;
            let onward = w.next[y];
            if onward == NONE {
                break;
            }
            let p = ch.near[onward as usize].1;
            let ci = c as usize;
            if !has(&cdg.deps[ci], p) {
                if has(&cdg.refused[ci], p) || !cdg.add(ch, c, p, onward) {
                    return false;
                }
                w.added.push((c, p));
            }
            at = y;
        }
    }
    true
}

/// The search proper: candidates by increasing (hops, cost); a switch joins through a channel
/// whose dependency on the next hop's channel the layer holds or takes. Only a switch's best
/// candidate is kept in the heap; when it is refused, the switch's channels to the tree are
/// offered again.
fn search(ch: &Channels, cdg: &mut Layer, w: &mut Work, load: &[u64], e: u32, free: bool) {
    while let Some(Reverse(key)) = w.heap.pop() {
        let (h, cost, x, c) = unpack(key);
        let xi = x as usize;
        if w.stamp[xi] == e {
            continue;
        }
        let y = ch.to[c as usize] as usize;
        let onward = w.next[y];
        if onward != NONE && !free {
            let p = ch.near[onward as usize].1;
            let ci = c as usize;
            if !has(&cdg.deps[ci], p) {
                let taken = !has(&cdg.refused[ci], p) && cdg.add(ch, c, p, onward);
                if !taken {
                    if !has(&cdg.refused[ci], p) {
                        flip(&mut cdg.refused[ci], p, true);
                        w.refused.push((c, p));
                    }
                    if w.best[xi] == key {
                        reoffer(ch, cdg, w, load, xi, e);
                    }
                    continue;
                }
                w.added.push((c, p));
            }
        }
        w.stamp[xi] = e;
        w.next[xi] = c;
        w.hops[xi] = h;
        w.cost[xi] = cost;
        w.order.push(x);
        push_into(ch, cdg, w, load, xi, c, h, cost, e, free);
    }
}

/// Offers again every channel from switch `x` (not in the tree) to a switch in it whose
/// dependency is not known to close a cycle.
fn reoffer(ch: &Channels, cdg: &Layer, w: &mut Work, load: &[u64], x: usize, e: u32) {
    w.best[x] = u128::MAX;
    let xx = u32::try_from(x).unwrap_or(NONE);
    for c in ch.out_of(x) {
        let y = ch.to[c as usize] as usize;
        if w.stamp[y] != e {
            continue;
        }
        let onward = w.next[y];
        if onward != NONE && ch.near.get(onward as usize).is_some_and(|&(_, p)| has(&cdg.refused[c as usize], p)) {
            continue;
        }
        let key = pack(w.hops[y] + 1, w.cost[y].saturating_add(load[c as usize]), xx, c);
        w.best[x] = w.best[x].min(key);
        w.heap.push(Reverse(key));
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
fn resolve_impasse(
    ch: &Channels,
    cdg: &mut Layer,
    w: &mut Work,
    load: &[u64],
    comp: &[usize],
    t: usize,
    e: u32,
) -> bool {
    let mine = comp.get(t).copied();
    let n = w.stamp.len();
    let mut trial = Vec::new();
    for x in 0..n {
        if w.stamp[x] == e || comp.get(x).copied() != mine {
            continue;
        }
        for c in ch.out_of(x) {
            let y = ch.to[c as usize] as usize;
            if w.stamp[y] != e || y == t {
                continue;
            }
            let old = w.next[y];
            for c2 in ch.out_of(y) {
                let z = ch.to[c2 as usize] as usize;
                if c2 == old || z == x || w.stamp[z] != e || leads_through(ch, &w.next, z, y, t, n) {
                    continue;
                }
                trial.clear();
                let onward = w.next[z];
                let mut ok = try_dep(ch, cdg, w, c, c2, &mut trial)
                    && (onward == NONE || try_dep(ch, cdg, w, c2, onward, &mut trial));
                if ok {
                    for &cin in ch.incoming(y) {
                        let Some(&(wv, _)) = ch.near.get(cin as usize) else { continue };
                        if w.stamp[wv as usize] == e
                            && w.next[wv as usize] == cin
                            && !try_dep(ch, cdg, w, cin, c2, &mut trial)
                        {
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
                w.hops[x] = w.hops[y] + 1;
                w.cost[x] = w.cost[y].saturating_add(load[c as usize]);
                w.order.push(u32::try_from(x).unwrap_or(NONE));
                push_into(ch, cdg, w, load, x, c, w.hops[x], w.cost[x], e, false);
                return true;
            }
        }
    }
    false
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
/// whose dependency on `onward` is known to close a cycle is left out (unless `free`: no
/// dependency checked).
#[allow(clippy::too_many_arguments)]
fn push_into(
    ch: &Channels,
    cdg: &Layer,
    w: &mut Work,
    load: &[u64],
    y: usize,
    onward: u32,
    hops: u32,
    cost: u64,
    e: u32,
    free: bool,
) {
    let p = if onward == NONE || free { None } else { ch.near.get(onward as usize).map(|&(_, p)| p) };
    for &c in ch.incoming(y) {
        let ci = c as usize;
        let Some(&(x, _)) = ch.near.get(ci) else { continue };
        if w.stamp[x as usize] == e || p.is_some_and(|p| has(&cdg.refused[ci], p)) {
            continue;
        }
        let key = pack(hops + 1, cost.saturating_add(load[ci]), x, c);
        if key < w.best[x as usize] {
            w.best[x as usize] = key;
            w.heap.push(Reverse(key));
        }
    }
}

/// A candidate as one heap key: hops (8 bits), cost (56 bits, saturated), switch, channel; so
/// keys order by (hops, cost) and then deterministically by switch and channel.
fn pack(hops: u32, cost: u64, x: u32, c: u32) -> u128 {
    let hops = u128::from(hops.min(255));
    let cost = u128::from(cost.min((1 << 56) - 1));
    (hops << 120) | (cost << 64) | (u128::from(x) << 32) | u128::from(c)
}

/// [`pack`]'s fields back.
#[allow(clippy::cast_possible_truncation)] // each field is masked to its width first
fn unpack(k: u128) -> (u32, u64, u32, u32) {
    ((k >> 120) as u32, ((k >> 64) as u64) & ((1 << 56) - 1), (k >> 32) as u32, k as u32)
}

/// The switches whose route (by `next`) leads to `t`, each after the switch it forwards to.
fn tree_order(ch: &Channels, t: usize, next: &[u32], order: &mut Vec<u32>) {
    order.clear();
    order.push(u32::try_from(t).unwrap_or(NONE));
    let mut i = 0;
    while let Some(&y) = order.get(i) {
        i += 1;
        for &c in ch.incoming(y as usize) {
            let Some(&(x, _)) = ch.near.get(c as usize) else { continue };
            if next.get(x as usize) == Some(&c) && x as usize != t {
                order.push(x);
            }
        }
    }
}

#[cfg(test)]
mod tests;
