//! DFSSSP-class routing: minimal paths balanced by edge weights, made deadlock-free by putting
//! paths on different layers (virtual lanes, through the service level of each pair).
//!
//! Two stages, after Domke, Hoefler and Nagel (IPDPS 2011):
//!
//! 1. **Balanced shortest paths.** Destination LIDs are taken one at a time (destination switches
//!    in view order, their LIDs in order). For each, every switch picks the egress port of a
//!    shortest path (fewest switch hops) whose accumulated weight is the least: a single-source
//!    search from the destination on the lexicographic cost (hops, weight). A channel's weight is
//!    the number of routes laid over it so far, each route counted once per source switch's end
//!    ports (as DFSSSP weighs an edge by the paths that use it), so the next destination avoids
//!    the links the earlier ones loaded. Hop distances are one breadth-first search per
//!    destination switch, from which the shortest-path DAG toward it (each switch's links one
//!    hop nearer, as channel numbers) is listed once for all its LIDs; the weighted pass per LID
//!    walks that DAG level by level, so no heap is needed.
//! 2. **Layers.** Every path, from a source switch to a destination LID, is placed on the first
//!    layer whose channel dependency graph stays acyclic with the path's dependencies added
//!    ([`layers`]: an online topological order per layer, so a cycle is found when it would
//!    close, and the path's dependencies are taken back). A path no layer can take makes the
//!    engine fail with [`RoutingError::Declined`], naming the budget, so the chain falls back.
//!    Each destination's paths are placed as soon as stage one has routed it, from the channels
//!    it just chose (no walk through the tables), on a second thread where the machine has one:
//!    the two stages form a pipeline whose result is the sequential one. Where more than one
//!    layer was needed, the paths are placed again class by class of the best placement so far
//!    (iterated greedy, in [`layers`]), which never adds a layer and often frees
//!    one: the 4x4x4 torus goes from 6 layers to 4, the random 64-switch fabric from 4 to 3.
//!    Before that, the paths are placed again a pair of switches at a time (both directions
//!    between two switches on one layer, [`layers`]' `pair_up`), and that placement is kept
//!    where it fits the budget: every pair's two directions then share an SL, and an RC
//!    responder's replies, sent on the requester's SL, stay within that layer's dependencies
//!    ([`PathLayers::paired`]). The random 64-switch fabric needs 6 layers so, the 4x4x4 torus
//!    more than 15 (it keeps per-path layers).
//!
//! The result ([`Layered`]) is the tables plus a layer per (source switch, destination LID):
//! the SL a pair of end ports uses is the layer of the pair (source's attach switch, destination
//! LID). The paths laid are those of the check's data plane: every switch to every CA port's LID
//! (switch agents answer CAs too), and the switches CAs hang off to switch LIDs; paths between
//! switches alone carry only SMPs, on VL15, and get layer 0 without a check.
//!
//! After a cable fault, [`repair`] repairs such a result (this engine's or nue's) instead of
//! routing again: only the paths that crossed the cable move, each on its old layer where it fits.
//!
//! Owns only the algorithm and its output types; the checks of the result are in [`crate::check`]
//! ([`crate::check::credit_loops_per_vl`]). Guarantees: deterministic, never panics on any view.

pub mod layers;
pub mod repair;

use ibsm_mad::{Lid, PortNum};

use crate::graph::{FAR, Indexed, set};
use crate::{Engine, FabricView, Lft, Routes, RoutingError};

/// The DFSSSP engine with a layer budget.
#[derive(Debug, Clone, Copy)]
pub struct Dfsssp {
    /// The most layers (virtual lanes) the paths may use, 1 to 15.
    pub max_layers: u8,
}

impl Default for Dfsssp {
    fn default() -> Self {
        Dfsssp { max_layers: Dfsssp::DEFAULT_LAYERS }
    }
}

impl Dfsssp {
    /// Registry name.
    pub const NAME: &'static str = "dfsssp";
    /// The budget when none is given: the 8 data VLs most switches operate.
    pub const DEFAULT_LAYERS: u8 = 8;

    /// An engine that may use up to `max_layers` layers (clamped to 1..=15).
    pub fn with_layers(max_layers: u8) -> Dfsssp {
        Dfsssp { max_layers: max_layers.clamp(1, 15) }
    }

    /// Routes `view` and assigns every path a layer.
    pub fn layered(&self, view: &FabricView) -> Result<Layered, RoutingError> {
        self.layered_on(view, crate::par::threads() > 1)
    }

    /// [`Dfsssp::layered`], with the stages in a pipeline on two threads or not.
    fn layered_on(self, view: &FabricView, pipeline: bool) -> Result<Layered, RoutingError> {
        let idx = Indexed::new(view)?;
        let mut placer = layers::Placer::new(view, &idx, self.max_layers.clamp(1, 15));
        let routes = if pipeline {
            pipelined(view, &idx, &mut placer)?
        } else {
            balanced(view, &idx, |d, next| placer.place(d, next))?
        };
        // Both directions of every pair on one layer where that fits; else per path.
        if placer.used() > 1 && !placer.pair_up(&routes) {
            placer.refine(&routes);
        }
        Ok(Layered { routes, layers: placer.finish()? })
    }
}

impl Engine for Dfsssp {
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

/// The tables and the layer of every path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layered {
    /// One table per switch, as every engine gives.
    pub routes: Routes,
    /// The layer of each (source switch, destination LID).
    pub layers: PathLayers,
}

/// The layer of every path, by source switch and destination LID.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PathLayers {
    switches: usize,
    /// Row of each LID (`u32::MAX`: not a routed destination), indexed by LID.
    row: Vec<u32>,
    /// `layer[row * switches + s]`.
    layer: Vec<u8>,
    /// Layers used (the highest layer plus one; 1 when every path is on layer 0).
    used: u8,
    /// Whether both directions between any two switches are on one layer.
    paired: bool,
}

impl PathLayers {
    /// Layers from their parts: `row[lid]` is the row of each routed LID (`u32::MAX`: none),
    /// `layer[row * switches + s]` the layer of the path from switch `s`, `used` the count.
    pub(crate) fn from_parts(switches: usize, row: Vec<u32>, layer: Vec<u8>, used: u8) -> PathLayers {
        PathLayers { switches, row, layer, used, paired: used <= 1 }
    }

    /// Whether every pair's two directions are on one layer (the layer of the path from switch
    /// `s` to a LID at switch `t` is that of the path from `t` to any LID at `s`), so an RC
    /// responder's replies, sent on the requester's SL, stay within that layer's dependencies.
    /// True on one layer; dfsssp pairs its layers where that fits its budget, nue does not.
    pub fn paired(&self) -> bool {
        self.paired || self.used <= 1
    }

    /// The layer of the path from switch `src` to `dlid`, if both are known.
    pub fn layer(&self, src: usize, dlid: Lid) -> Option<u8> {
        if src >= self.switches {
            return None;
        }
        let row = *self.row.get(usize::from(dlid.0))?;
        if row == u32::MAX {
            return None;
        }
        self.layer.get(row as usize * self.switches + src).copied()
    }

    /// The layers of every source switch's path to `dlid` (indexed by switch), if it is a
    /// routed destination: what a comparison of two routes' SLs reads a LID at a time.
    pub fn lid_row(&self, dlid: Lid) -> Option<&[u8]> {
        let row = *self.row.get(usize::from(dlid.0))?;
        if row == u32::MAX {
            return None;
        }
        let at = (row as usize).checked_mul(self.switches)?;
        self.layer.get(at..at.checked_add(self.switches)?)
    }

    /// The number of source switches (the length of a [`PathLayers::lid_row`]).
    pub fn switches(&self) -> usize {
        self.switches
    }

    /// One past the highest LID a row may be known for.
    pub fn lids(&self) -> usize {
        self.row.len()
    }

    /// How many layers the paths use.
    pub fn used(&self) -> u8 {
        self.used
    }

    /// The number of (source switch, LID) entries on each layer (paths between switches alone,
    /// which are not layered, count on layer 0).
    pub fn per_layer(&self) -> Vec<u64> {
        let mut n = vec![0u64; usize::from(self.used.max(1))];
        for &l in &self.layer {
            if let Some(c) = n.get_mut(usize::from(l)) {
                *c += 1;
            }
        }
        n
    }
}

/// A destination LID and the switch it is delivered at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DestLid {
    pub lid: u16,
    pub attach: usize,
    /// A CA port's LID (else a switch's).
    pub to_ca: bool,
}

/// Stage one: the tables. Each destination LID's forwarding, as the channel every switch takes
/// toward it (`NONE` at its own switch and where it is unreachable), goes to `sink` as soon as
/// it is routed, in routing order.
fn balanced(
    view: &FabricView,
    idx: &Indexed,
    mut sink: impl FnMut(&DestLid, &[u32]) -> Result<(), RoutingError>,
) -> Result<Routes, RoutingError> {
    let g = &idx.graph;
    let n = g.len();
    // Channel numbers: links in CSR order, so switch s's channels are contiguous.
    let mut chan_start = Vec::with_capacity(n + 1);
    let mut chan_port = Vec::new();
    for s in 0..n {
        chan_start.push(chan_port.len());
        chan_port.extend(g.links(s).iter().map(|&(p, _, _)| p));
    }
    let mut load = vec![0u64; chan_port.len()];
    let mut tables: Vec<Lft> = view.switches.iter().map(|_| Lft::unrouted(idx.top)).collect();

    let mut by_switch: Vec<Vec<(u16, PortNum, bool)>> = vec![Vec::new(); n];
    for d in &idx.dests {
        if let Some(v) = by_switch.get_mut(d.attach) {
            for k in 0..idx.per_port {
                v.push((d.base.saturating_add(k), d.port, d.ca.is_some()));
            }
        }
    }
    let weight: Vec<u64> = idx.hosts_at.iter().map(|&h| u64::from(h).max(1)).collect();
    let mut dist = Vec::new();
    let mut queue = std::collections::VecDeque::new();
    let mut order: Vec<usize> = Vec::with_capacity(n);
    // The shortest-path DAG toward the destination switch: for `order[k]` (k >= 1), its links
    // one hop nearer, as (channel, neighbour), in port order.
    let mut cand_start: Vec<usize> = Vec::with_capacity(n + 1);
    let mut cand: Vec<(u32, u32)> = Vec::new();
    let mut cost = vec![0u64; n];
    let mut next: Vec<u32> = vec![layers::NONE; n];
    let mut sub = vec![0u64; n];
    for (t, dl) in by_switch.iter().enumerate() {
        if dl.is_empty() {
            continue;
        }
        g.bfs(&[t], &mut dist, &mut queue);
        order.clear();
        order.extend((0..n).filter(|&x| dist[x] != FAR));
        order.sort_by_key(|&x| dist[x]);
        cand_start.clear();
        cand.clear();
        for &x in &order {
            cand_start.push(cand.len());
            let want = dist[x].wrapping_sub(1);
            for (i, &(_, y, _)) in g.links(x).iter().enumerate() {
                if dist[y] == want {
                    cand.push((
                        u32::try_from(chan_start[x] + i).unwrap_or(layers::NONE),
                        u32::try_from(y).unwrap_or(layers::NONE),
                    ));
                }
            }
        }
        cand_start.push(cand.len());
        next.fill(layers::NONE);
        for &(lid, port, to_ca) in dl {
            set(&mut tables[t], lid, port);
            cost[t] = 0;
            for (k, &x) in order.iter().enumerate().skip(1) {
                let mut best: Option<(u64, u32)> = None;
                for &(c, y) in &cand[cand_start[k]..cand_start[k + 1]] {
                    let w = cost[y as usize].saturating_add(load[c as usize]);
                    if best.is_none_or(|(b, _)| w < b) {
                        best = Some((w, c));
                    }
                }
                if let Some((w, c)) = best {
                    cost[x] = w;
                    next[x] = c;
                    set(&mut tables[x], lid, chan_port[c as usize]);
                }
            }
            // Weights: each channel gains the sources whose route crosses it.
            for &x in &order {
                sub[x] = weight[x];
            }
            for &x in order.iter().skip(1).rev() {
                let c = next[x] as usize;
                if let Some(&(_, y, _)) = g.links(x).get(c.wrapping_sub(chan_start[x])) {
                    load[c] += sub[x];
                    sub[y] += sub[x];
                }
            }
            sink(&DestLid { lid, attach: t, to_ca }, &next)?;
        }
    }
    Ok(Routes::from_tables(tables))
}

/// Stage one on this thread and the placement of each routed destination on a second one, in
/// routing order (so the result is the sequential one); sequential if no thread can be had.
fn pipelined(view: &FabricView, idx: &Indexed, placer: &mut layers::Placer) -> Result<Routes, RoutingError> {
    use std::sync::mpsc;
    let outcome = std::thread::scope(|scope| {
        let (tx, rx) = mpsc::sync_channel::<(DestLid, Vec<u32>)>(64);
        let (spare_tx, spare_rx) = mpsc::channel::<Vec<u32>>();
        let p = &mut *placer;
        let placing = std::thread::Builder::new()
            .spawn_scoped(scope, move || {
                for (d, next) in rx {
                    p.place(&d, &next)?;
                    // The router may be done: a lost buffer is only a lost reuse.
                    let _ = spare_tx.send(next);
                }
                Ok(())
            })
            .ok()?;
        let routed = balanced(view, idx, |d, next| {
            let mut v = spare_rx.try_recv().unwrap_or_default();
            v.clear();
            v.extend_from_slice(next);
            // Closed: the placer stopped on an error, which `join` gives.
            tx.send((*d, v)).map_err(|_| RoutingError::Declined { engine: Dfsssp::NAME, reason: String::new() })
        });
        drop(tx);
        Some(match placing.join() {
            Ok(Ok(())) => routed,
            Ok(Err(e)) => Err(e),
            Err(panic) => std::panic::resume_unwind(panic),
        })
    });
    match outcome {
        Some(r) => r,
        None => balanced(view, idx, |d, next| placer.place(d, next)),
    }
}

#[cfg(test)]
mod tests;
