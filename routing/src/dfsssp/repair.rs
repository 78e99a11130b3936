//! Repairing layered routes (dfsssp's or nue's) after cables failed, instead of routing again.
//!
//! Owns [`repair`]: given the tables and the layer of every path a layered engine made for a
//! fabric (`base`), and the fabric as it is now (`base` less some cables, and the CAs that went
//! with them; the same switches and LIDs), only the paths that crossed a lost cable (or were
//! left without a route) get new routes, and every other path keeps its route and its layer.
//!
//! Per destination LID, the switches whose route toward it reaches the destination over cables
//! that remain keep their entries (the "good" switches, each at the hop count of its route).
//! The others (the "broken" set) settle from the good switches outward, cheapest first (a
//! switch's cost: its hops to the destination), each through a neighbour that has settled, so
//! the forwarding of a LID stays a tree without loops and a path that did not cross a lost
//! cable meets no changed entry. A broken switch with a laid path takes the cheapest settled
//! neighbour through which its whole new path keeps its old layer acyclic (its old port first
//! among equals, then the port its table uses least); it may wait a few hops (`SLACK`) for
//! one. When none does, it takes the cheapest, and its path goes on the first layer within
//! the budget that takes it (its SL changes). When no layer takes it, the repair declines and
//! the caller routes in full. A pass takes the destinations in order; up to `PASSES` passes
//! take first the destinations whose paths changed layer in the last, and the pass with the
//! fewest changes is kept.
//!
//! Layers: each layer starts with the dependencies of the old paths that are kept (their routes
//! arrive over cables that remain), and re-routed paths are added only where they keep it
//! acyclic: the new tables with every pair on its layer are free of credit loops. A re-routed
//! pair that fits its old layer on no route the search finds is `stranded`: it goes on another
//! layer (its SL changes, and until its host asks again it sends on the old one, which may
//! loop). The result says whether the new entries may be written in one pass (`one_pass`):
//! every mix of old and new entries, with every pair on its old layer, is free of credit loops
//! (checked on a superset: per changed LID, every walk from a source that takes at each switch
//! its old or its new entry). Where not, the caller writes every changed entry unrouted first,
//! then the new entries: every state of the first pass is a prefix of the old routes, every
//! state of the second a prefix of the new. The result also gives each switch a write rank,
//! the fewest hops to the destination among the entries it changed.
//!
//! Guarantees: deterministic, never panics on any view and tables, every layer's dependency
//! graph acyclic; the work is a walk of every path (to seed the layers) plus a search per
//! destination that lost a route, per pass.

#![allow(clippy::many_single_char_names)] // graph code: x, y switches, c costs, p ports

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;

use ibsm_mad::Lid;

use super::layers::{Channels, Layer, NONE, flip, walk_tables};
use super::{DestLid, Layered, PathLayers};
use crate::check::PortSet;
use crate::graph::{FAR, Indexed};
use crate::{FabricView, Lft, Routes, RoutingError};

/// Hops beyond its cheapest route a re-routed switch may wait for a route that keeps its layer.
const SLACK: u32 = 3;
/// The most passes of the repair, each taking first the destinations whose paths the last
/// could not keep on their layers.
const PASSES: usize = 4;

/// What [`repair`] made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayeredRepair {
    /// The tables (in `view.switches` order) and the layer of every path.
    pub layered: Layered,
    /// LIDs that got new routes.
    pub lids: usize,
    /// Table entries that changed.
    pub entries: usize,
    /// Paths (source switch, destination LID) that got a new route.
    pub rerouted: usize,
    /// Re-routed paths that could not keep their layer (`stranded`): no route within the slack
    /// keeps it acyclic. Their SL changes; until the hosts ask again they send on the old one.
    pub stranded: usize,
    /// For each switch, the lowest cost (hops to the destination) among its changed entries
    /// (`u32::MAX`: none changed): writing switches by increasing rank writes each re-routed
    /// LID destination-outwards.
    pub rank: Vec<u32>,
    /// Whether the new entries may be written in one pass, in any order: every state between
    /// the old tables and the new ones is free of credit loops with every path on its old
    /// layer. When not, write every changed entry unrouted first, then the new entries.
    pub one_pass: bool,
}

/// Repairs `old` (tables and layers made by a layered engine for `base`) for `view`, within
/// `budget` layers: `None` when `view` is not `base` less some cables (and CAs) with the same
/// switches and LIDs (route it in full then).
///
/// # Errors
/// [`RoutingError::Declined`] when a re-routed path fits in no layer of the budget; any error
/// of indexing `view`. Route in full then.
pub fn repair(
    base: &FabricView,
    old: &Routes,
    layers: Option<&PathLayers>,
    view: &FabricView,
    budget: u8,
    engine: &'static str,
) -> Option<Result<LayeredRepair, RoutingError>> {
    let (from, _lost) = crate::ftree::repair::lost_cables(base, view)?;
    if old.tables.len() != base.switches.len() || from.len() != base.switches.len() {
        return None;
    }
    let tables: Vec<Arc<Lft>> = from.iter().map(|&m| Arc::clone(&old.tables[m])).collect();
    let old_layer = |s: usize, lid: u16| layers.and_then(|l| l.layer(from[s], Lid(lid))).unwrap_or(0);
    Some(run(view, &tables, &old_layer, budget.clamp(1, 15), engine))
}

/// The state of one switch toward one destination.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reach {
    Unknown,
    Visiting,
    /// Its route arrives, after this many hops.
    Good(u32),
    Broken,
}

/// Whether the path from switch `s` to `d` is one the layers hold (as the placer lays them).
fn laid(idx: &Indexed, d: &DestLid, s: usize) -> bool {
    d.to_ca || idx.hosts_at.get(s).is_some_and(|&h| h > 0)
}

fn run(
    view: &FabricView,
    tables: &[Arc<Lft>],
    old_layer: &dyn Fn(usize, u16) -> u8,
    budget: u8,
    engine: &'static str,
) -> Result<LayeredRepair, RoutingError> {
    let idx = Indexed::new(view)?;
    let ch = Channels::new(view, &idx);
    let g = &idx.graph;
    let n = g.len();
    let dests: Vec<DestLid> = idx
        .dests
        .iter()
        .flat_map(|d| {
            (0..idx.per_port).map(move |k| DestLid {
                lid: d.base.saturating_add(k),
                attach: d.attach,
                to_ca: d.ca.is_some(),
            })
        })
        .collect();

    // Layers seeded with the dependencies of the old paths that arrive (they are kept as they
    // are); `old` holds every old path's, up to a lost cable, for the write order.
    let mut deps: Vec<Vec<PortSet>> = Vec::new();
    let mut old: Vec<Vec<PortSet>> = Vec::new();
    let mut path = Vec::new();
    for d in &dests {
        for s in (0..n).filter(|&s| laid(&idx, d, s)) {
            let arrives = walk_tables(&ch, tables, s, d, n, &mut path);
            if path.is_empty() {
                continue;
            }
            let l = usize::from(old_layer(s, d.lid));
            if deps.len() <= l {
                deps.resize(l + 1, vec![[0; 4]; ch.len()]);
                old.resize(l + 1, vec![[0; 4]; ch.len()]);
            }
            for &(a, p, _) in &path {
                flip(&mut old[l][a as usize], p, true);
                if arrives {
                    flip(&mut deps[l][a as usize], p, true);
                }
            }
        }
    }
    let declined = |reason: String| RoutingError::Declined { engine, reason };
    let mut layers: Vec<Layer> = Vec::with_capacity(deps.len().max(1));
    for (l, d) in deps.into_iter().enumerate() {
        let layer = Layer::seeded(&ch, d)
            .ok_or_else(|| declined(format!("the old routes of layer {l} hold a credit loop: route in full")))?;
        layers.push(layer);
    }
    if layers.is_empty() {
        layers.push(Layer::new(ch.len()));
    }

    let cx = Cx { view, idx: &idx, ch: &ch, dests: &dests, budget, engine, old_layer };
    // Paths that cannot keep their layer go first in the next pass, which often lets them.
    let mut order: Vec<usize> = (0..dests.len()).collect();
    let mut best: Option<LayeredRepair> = None;
    for _ in 0..PASSES {
        let (rep, stuck) = pass(&cx, tables.to_vec(), layers.clone(), &order)?;
        let done = rep.stranded == 0 || stuck.is_empty();
        if best.as_ref().is_none_or(|b| rep.stranded < b.stranded) {
            best = Some(rep);
        }
        if done {
            break;
        }
        order.sort_by_key(|r| stuck.binary_search(r).is_err());
    }
    let mut best = best.ok_or_else(|| declined(String::new()))?;
    best.one_pass = mixed_states_acyclic(&cx, tables, &best.layered.routes.tables, old);
    Ok(best)
}

/// Whether every state the switches can pass through while `new` replaces `old` entry by
/// entry, in any order, is free of credit loops with each path on its old layer (the SL the
/// hosts hold): each layer's graph of the dependencies of `old_deps` (every old path's) and,
/// for every destination with a changed entry, of every walk from its sources that takes at
/// each switch its old or its new entry (a superset of every mixed state's paths) is acyclic.
fn mixed_states_acyclic(cx: &Cx<'_>, old: &[Arc<Lft>], new: &[Arc<Lft>], mut old_deps: Vec<Vec<PortSet>>) -> bool {
    let Cx { idx, ch, dests, old_layer, .. } = *cx;
    let n = idx.graph.len();
    let mut seen = vec![false; ch.len()];
    let mut stack: Vec<u32> = Vec::new();
    for d in dests {
        let lid = Lid(d.lid);
        let outs = |x: usize| {
            let a = old.get(x).and_then(|t| t.port_for(lid));
            let b = new.get(x).and_then(|t| t.port_for(lid));
            [a, b.filter(|&b| Some(b) != a)]
        };
        if (0..n).all(|x| outs(x)[1].is_none()) {
            continue;
        }
        let layers = (0..n).filter(|&s| laid(idx, d, s)).map(|s| old_layer(s, d.lid)).max().unwrap_or(0);
        for l in 0..=layers {
            let li = usize::from(l);
            if old_deps.len() <= li {
                old_deps.resize(li + 1, vec![[0; 4]; ch.len()]);
            }
            seen.fill(false);
            stack.clear();
            for s in (0..n).filter(|&s| s != d.attach && laid(idx, d, s) && old_layer(s, d.lid) == l) {
                for p in outs(s).into_iter().flatten() {
                    let c = ch.out(s, p.0);
                    if c != NONE && !seen[c as usize] {
                        seen[c as usize] = true;
                        stack.push(c);
                    }
                }
            }
            while let Some(c) = stack.pop() {
                let x = ch.to[c as usize] as usize;
                if x == d.attach {
                    continue;
                }
                for p in outs(x).into_iter().flatten() {
                    let c2 = ch.out(x, p.0);
                    if c2 == NONE {
                        continue;
                    }
                    flip(&mut old_deps[li][c as usize], p.0, true);
                    if !seen[c2 as usize] {
                        seen[c2 as usize] = true;
                        stack.push(c2);
                    }
                }
            }
        }
    }
    old_deps.into_iter().all(|deps| Layer::seeded(ch, deps).is_some())
}

/// What every pass reads: the fabric, its index and channels, the destination LIDs, the
/// budget, the engine's name and the old layer of each (switch, LID).
struct Cx<'a> {
    view: &'a FabricView,
    idx: &'a Indexed,
    ch: &'a Channels,
    dests: &'a [DestLid],
    budget: u8,
    engine: &'static str,
    old_layer: &'a dyn Fn(usize, u16) -> u8,
}

/// One pass of the repair, destinations in `order`, from the old `tables` and the seeded
/// `layers`: the result, and the destinations (sorted) with a path that changed layer.
#[allow(clippy::too_many_lines)] // one destination's stages, in order
fn pass(
    cx: &Cx<'_>,
    mut tables: Vec<Arc<Lft>>,
    mut layers: Vec<Layer>,
    order: &[usize],
) -> Result<(LayeredRepair, Vec<usize>), RoutingError> {
    let Cx { view, idx, ch, dests, budget, engine, old_layer } = *cx;
    let g = &idx.graph;
    let n = g.len();
    let declined = |reason: String| RoutingError::Declined { engine, reason };
    let mut path = Vec::new();
    let mut stuck = Vec::new();
    // Per-port entry counts of each table, for the choice among equal ports.
    let mut load: Vec<Vec<u32>> = Vec::new();
    let mut reach = vec![Reach::Unknown; n];
    let mut cost = vec![FAR; n];
    let mut heap = BinaryHeap::new();
    let mut stack = Vec::new();
    let mut rank = vec![u32::MAX; n];
    let mut out = vec![0u8; dests.len() * n];
    let (mut lids, mut entries, mut rerouted, mut stranded, mut used) = (0, 0, 0, 0, 1u8);
    let mut added = Vec::new();
    let (mut settled, mut waited, mut fit) = (vec![false; n], vec![false; n], vec![false; n]);
    let mut cands = Vec::new();
    for &r in order {
        let Some(d) = dests.get(r) else { continue };
        let lid = Lid(d.lid);
        let stranded_before = stranded;
        // Which switches' routes still arrive, and after how many hops.
        reach.fill(Reach::Unknown);
        if let Some(e) = reach.get_mut(d.attach) {
            *e = Reach::Good(0);
        }
        for s in 0..n {
            let mut x = s;
            stack.clear();
            let verdict = loop {
                match reach[x] {
                    Reach::Good(h) => break Reach::Good(h),
                    Reach::Broken | Reach::Visiting => break Reach::Broken,
                    Reach::Unknown => {}
                }
                reach[x] = Reach::Visiting;
                stack.push(x);
                let chan = tables[x].port_for(lid).map_or(NONE, |p| ch.out(x, p.0));
                if chan == NONE {
                    break Reach::Broken;
                }
                x = ch.to[chan as usize] as usize;
            };
            let mut v = verdict;
            while let Some(y) = stack.pop() {
                v = match v {
                    Reach::Good(h) => Reach::Good(h + 1),
                    _ => Reach::Broken,
                };
                reach[y] = v;
            }
        }
        let broken: Vec<usize> = (0..n).filter(|&x| reach[x] == Reach::Broken).collect();
        if broken.is_empty() {
            for s in 0..n {
                out[r * n + s] = old_layer(s, d.lid);
            }
            continue;
        }
        // Broken switches settle from the good ones outward, cheapest first (a switch's cost:
        // its hops to the destination), each through a settled neighbour: its route is final
        // when it settles. A switch with a laid path takes the cheapest neighbour through which
        // the path fits its old layer (waiting once if that is dearer than its cheapest), else
        // the cheapest, and its path is laid on another layer below.
        if load.is_empty() {
            load = tables.iter().map(|t| port_loads(t)).collect();
        }
        heap.clear();
        settled.fill(false);
        waited.fill(false);
        for x in 0..n {
            cost[x] = FAR;
            if let Reach::Good(h) = reach[x] {
                cost[x] = h;
                settled[x] = true;
                for &(_, z, _) in g.links(x) {
                    if reach[z] == Reach::Broken {
                        heap.push(Reverse((h + 1, z)));
                    }
                }
            }
        }
        let mut changed = false;
        while let Some(Reverse((k, x))) = heap.pop() {
            if settled[x] {
                continue;
            }
            let Some(old) = tables[x].port_for(lid) else { continue };
            cands.clear();
            cands.extend(
                g.links(x)
                    .iter()
                    .filter(|&&(_, y, _)| settled[y])
                    .map(|&(p, y, _)| (cost[y].saturating_add(1), p != old, load[x][usize::from(p.0)], p, y)),
            );
            cands.sort_unstable();
            let Some(&(cheapest, ..)) = cands.first() else { continue };
            if k < cheapest {
                heap.push(Reverse((cheapest, x)));
                continue;
            }
            let was = old_layer(x, d.lid);
            let mut chosen = None;
            if laid(idx, d, x) {
                for &(c, _, _, p, y) in &cands {
                    let first = ch.out(x, p.0);
                    let ok = walk_tables(ch, &tables, y, d, n, &mut path);
                    if !ok || first == NONE {
                        continue;
                    }
                    if y != d.attach
                        && let Some(q) = tables[y].port_for(lid)
                    {
                        path.insert(0, (first, q.0, ch.out(y, q.0)));
                    }
                    let l = usize::from(was);
                    while layers.len() <= l {
                        layers.push(Layer::new(ch.len()));
                    }
                    if layers[l].try_place(ch, &path, &mut added) {
                        if c > k && !waited[x] {
                            // Dearer than its cheapest: others settle first, then it tries again.
                            // Taken back at once, nothing placed between: the layer's
                            // dependencies are as before the try, so the refusals it remembers
                            // stay true (a refusal outliving its cause would only refuse more,
                            // never let a cycle in; `layers::conflict`'s tests).
                            layers[l].take_back(&added);
                            waited[x] = true;
                            heap.push(Reverse((c, x)));
                            chosen = Some(None);
                        } else {
                            chosen = Some(Some((c, p, true)));
                        }
                        break;
                    }
                }
            }
            let (c, p, fits) = match chosen {
                Some(None) => continue,
                Some(Some(found)) => found,
                // Nothing settled yet takes it: a few hops more may bring a neighbour that does.
                None if laid(idx, d, x) && k < cheapest.saturating_add(SLACK) => {
                    heap.push(Reverse((k + 1, x)));
                    continue;
                }
                None => (cands[0].0, cands[0].3, !laid(idx, d, x)),
            };
            settled[x] = true;
            cost[x] = c;
            fit[x] = fits;
            for &(_, z, _) in g.links(x) {
                if reach[z] == Reach::Broken && !settled[z] {
                    heap.push(Reverse((c + 1, z)));
                }
            }
            if p != old {
                load[x][usize::from(old.0)] = load[x][usize::from(old.0)].saturating_sub(1);
                load[x][usize::from(p.0)] += 1;
                Lft::set_shared(&mut tables[x], usize::from(d.lid), p);
                entries += 1;
                changed = true;
                rank[x] = rank[x].min(c);
            }
        }
        // Cut off from the destination: unrouted.
        for &x in &broken {
            if !settled[x] && tables[x].port_for(lid).is_some_and(|p| p != Lft::UNROUTED) {
                Lft::set_shared(&mut tables[x], usize::from(d.lid), Lft::UNROUTED);
                entries += 1;
                changed = true;
            }
        }
        lids += usize::from(changed);
        // Layers: kept paths keep theirs, and so do re-routed ones that fit theirs; the
        // others go on the first layer that takes them.
        for s in 0..n {
            let was = old_layer(s, d.lid);
            out[r * n + s] = was;
            if reach[s] != Reach::Broken || !settled[s] || !laid(idx, d, s) {
                continue;
            }
            rerouted += 1;
            if fit[s] || !walk_tables(ch, &tables, s, d, n, &mut path) || path.is_empty() {
                continue;
            }
            let mut placed = None;
            for l in 0..budget {
                while layers.len() <= usize::from(l) {
                    layers.push(Layer::new(ch.len()));
                }
                if layers[usize::from(l)].try_place(ch, &path, &mut added) {
                    placed = Some(l);
                    break;
                }
            }
            let Some(l) = placed else {
                let guid = view.switches.get(s).map(|s| s.guid).unwrap_or_default();
                return Err(declined(format!(
                    "the repaired path from switch {guid} to LID {} fits in none of {budget} layers: route in full",
                    d.lid
                )));
            };
            stranded += usize::from(l != was);
            out[r * n + s] = l;
        }
        if stranded > stranded_before {
            stuck.push(r);
        }
    }
    stuck.sort_unstable();
    let mut row = vec![NONE; usize::from(idx.top) + 1];
    for (r, d) in dests.iter().enumerate() {
        if let Some(e) = row.get_mut(usize::from(d.lid)) {
            *e = u32::try_from(r).unwrap_or(NONE);
        }
    }
    for &l in &out {
        used = used.max(l.saturating_add(1));
    }
    let rep = LayeredRepair {
        layered: Layered { routes: Routes { tables }, layers: PathLayers::from_parts(n, row, out, used) },
        lids,
        entries,
        rerouted,
        stranded,
        rank,
        one_pass: false,
    };
    Ok((rep, stuck))
}

/// Entries of `table` per egress port (256 counts).
fn port_loads(table: &Lft) -> Vec<u32> {
    let mut c = vec![0u32; 256];
    for b in table.runs() {
        for p in b {
            c[usize::from(p.0)] += 1;
        }
    }
    c
}

#[cfg(test)]
mod tests;
