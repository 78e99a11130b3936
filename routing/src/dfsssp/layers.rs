//! DFSSSP's second stage: every path on the first layer whose channel dependency graph stays
//! acyclic with it.
//!
//! A channel is a directed switch-to-switch link; a path from switch `s` to a LID depends, at
//! each switch it crosses, from the channel it came in on to the channel it leaves by. Each layer
//! keeps its dependencies as one 256-bit egress-port set per channel (as the check's graph does)
//! and a topological order of its channels maintained online (Pearce and Kelly's dynamic
//! topological sort): a new dependency `a -> b` with `a` already before `b` costs nothing; else a
//! search bounded to the channels between the two in the order finds either the cycle it would
//! close (the path is refused and its new dependencies taken back) or the channels to reorder.
//! Removing dependencies keeps an order valid, so taking a path back needs no reordering.
//!
//! Paths are placed destination by destination in the order stage one routed them, sources in
//! switch order. Owns only this placement; guarantees each layer's graph acyclic when it returns
//! `Ok`, and never panics on any view and tables.

use crate::check::{PortSet, set_ports};
use crate::dfsssp::{DestLid, PathLayers};
use crate::graph::Indexed;
use crate::{FabricView, Routes, RoutingError};

const NONE: u32 = u32::MAX;

/// The channels of the switch graph, numbered, with their ends.
struct Channels {
    /// Far switch of each channel.
    to: Vec<u32>,
    /// Near switch and port of each channel.
    near: Vec<(u32, u8)>,
    /// `by_port[port_start[s] + p]`: the channel out of switch `s` port `p`, or `NONE`.
    port_start: Vec<usize>,
    by_port: Vec<u32>,
    /// Channels into each switch: `into[into_start[s]..into_start[s + 1]]`.
    into_start: Vec<usize>,
    into: Vec<u32>,
}

impl Channels {
    fn new(view: &FabricView, idx: &Indexed) -> Channels {
        let g = &idx.graph;
        let n = g.len();
        let mut to = Vec::new();
        let mut near = Vec::new();
        let mut port_start = Vec::with_capacity(n + 1);
        let mut by_port = Vec::new();
        let mut incoming: Vec<Vec<u32>> = vec![Vec::new(); n];
        for s in 0..n {
            port_start.push(by_port.len());
            let ports = view.switches.get(s).map_or(0, |sw| sw.ports.len()).max(1);
            let base = by_port.len();
            by_port.resize(base + ports, NONE);
            for &(p, y, _) in g.links(s) {
                let c = u32::try_from(to.len()).unwrap_or(NONE);
                to.push(u32::try_from(y).unwrap_or(NONE));
                near.push((u32::try_from(s).unwrap_or(NONE), p.0));
                if let Some(e) = by_port.get_mut(base + usize::from(p.0)) {
                    *e = c;
                }
                if let Some(v) = incoming.get_mut(y) {
                    v.push(c);
                }
            }
        }
        port_start.push(by_port.len());
        let mut into_start = Vec::with_capacity(n + 1);
        let mut into = Vec::new();
        for v in incoming {
            into_start.push(into.len());
            into.extend(v);
        }
        into_start.push(into.len());
        Channels { to, near, port_start, by_port, into_start, into }
    }

    fn len(&self) -> usize {
        self.to.len()
    }

    /// The channel out of switch `s` by port `p`.
    fn out(&self, s: usize, p: u8) -> u32 {
        match (self.port_start.get(s), self.port_start.get(s + 1)) {
            (Some(&a), Some(&b)) if a + usize::from(p) < b => self.by_port[a + usize::from(p)],
            _ => NONE,
        }
    }

    fn into_of(&self, s: usize) -> &[u32] {
        match (self.into_start.get(s), self.into_start.get(s + 1)) {
            (Some(&a), Some(&b)) => self.into.get(a..b).unwrap_or(&[]),
            _ => &[],
        }
    }
}

/// One layer: its dependencies and a topological order of its channels.
struct Layer {
    deps: Vec<PortSet>,
    ord: Vec<u32>,
    /// Channel at each position of the order.
    at: Vec<u32>,
    mark: Vec<u32>,
    epoch: u32,
    stack: Vec<u32>,
    fwd: Vec<u32>,
    back: Vec<u32>,
}

fn has(set: &PortSet, p: u8) -> bool {
    set[usize::from(p >> 6)] & (1u64 << (p & 63)) != 0
}

fn flip(set: &mut PortSet, p: u8, on: bool) {
    let w = &mut set[usize::from(p >> 6)];
    if on {
        *w |= 1u64 << (p & 63);
    } else {
        *w &= !(1u64 << (p & 63));
    }
}

impl Layer {
    fn new(channels: usize) -> Layer {
        let ids: Vec<u32> = (0..channels).map(|c| u32::try_from(c).unwrap_or(NONE)).collect();
        Layer {
            deps: vec![[0; 4]; channels],
            ord: ids.clone(),
            at: ids,
            mark: vec![0; channels],
            epoch: 0,
            stack: Vec::new(),
            fwd: Vec::new(),
            back: Vec::new(),
        }
    }

    fn next_epoch(&mut self) -> u32 {
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.mark.iter_mut().for_each(|m| *m = 0);
            self.epoch = 1;
        }
        self.epoch
    }

    /// Adds the dependency `a -> b` (`b` leaves `a`'s far switch by `p`) unless it closes a
    /// cycle; returns whether it was added.
    fn add(&mut self, ch: &Channels, a: u32, p: u8, b: u32) -> bool {
        let (ai, bi) = (a as usize, b as usize);
        if a == b {
            return false;
        }
        let (ub, lb) = (self.ord[ai], self.ord[bi]);
        if ub < lb {
            flip(&mut self.deps[ai], p, true);
            return true;
        }
        // Forward from b over channels ordered at most `ub`.
        let e = self.next_epoch();
        self.fwd.clear();
        self.stack.clear();
        self.stack.push(b);
        self.mark[bi] = e;
        while let Some(c) = self.stack.pop() {
            self.fwd.push(c);
            let far = ch.to[c as usize] as usize;
            let set = self.deps[c as usize];
            for q in set_ports(set) {
                let d = ch.out(far, q);
                if d == NONE {
                    continue;
                }
                if d == a {
                    return false;
                }
                let di = d as usize;
                if self.mark[di] != e && self.ord[di] < ub {
                    self.mark[di] = e;
                    self.stack.push(d);
                }
            }
        }
        // Backward from a over channels ordered above `lb`.
        self.back.clear();
        self.stack.push(a);
        self.mark[ai] = e;
        while let Some(c) = self.stack.pop() {
            self.back.push(c);
            // Channels whose far switch is c's near switch and that go on by c's port.
            let Some((near, port)) = near_of(ch, c) else { continue };
            for &i in ch.into_of(near) {
                let ii = i as usize;
                if self.mark[ii] != e && self.ord[ii] > lb && has(&self.deps[ii], port) {
                    self.mark[ii] = e;
                    self.stack.push(i);
                }
            }
        }
        // Reorder: the backward set first, then the forward set, over their old positions.
        let ord = &self.ord;
        self.back.sort_unstable_by_key(|&c| ord[c as usize]);
        self.fwd.sort_unstable_by_key(|&c| ord[c as usize]);
        let mut pos: Vec<u32> = self.back.iter().chain(&self.fwd).map(|&c| self.ord[c as usize]).collect();
        pos.sort_unstable();
        for (&c, &o) in self.back.iter().chain(&self.fwd).zip(&pos) {
            self.ord[c as usize] = o;
            self.at[o as usize] = c;
        }
        flip(&mut self.deps[ai], p, true);
        true
    }
}

/// The switch a channel leaves and its port there.
fn near_of(ch: &Channels, c: u32) -> Option<(usize, u8)> {
    ch.near.get(c as usize).map(|&(s, p)| (s as usize, p))
}

/// Places every path on a layer, at most `budget` layers.
pub(crate) fn assign(
    view: &FabricView,
    idx: &Indexed,
    routes: &Routes,
    lids: &[DestLid],
    budget: u8,
) -> Result<PathLayers, RoutingError> {
    let ch = Channels::new(view, idx);
    let n = idx.graph.len();
    let mut row = vec![NONE; usize::from(idx.top) + 1];
    let mut layer = vec![0u8; lids.len() * n];
    let mut layers: Vec<Layer> = vec![Layer::new(ch.len())];
    let mut path: Vec<(u32, u8, u32)> = Vec::new();
    let mut added: Vec<(u32, u8)> = Vec::new();
    let mut used = 1u8;
    for (r, d) in lids.iter().enumerate() {
        if let Some(e) = row.get_mut(usize::from(d.lid)) {
            *e = u32::try_from(r).unwrap_or(NONE);
        }
        for s in 0..n {
            if !d.to_ca && idx.hosts_at.get(s).is_none_or(|&h| h == 0) {
                continue;
            }
            if !walk(&ch, routes, s, d, n, &mut path) || path.is_empty() {
                continue;
            }
            let mut placed = None;
            for l in 0..budget {
                if usize::from(l) == layers.len() {
                    layers.push(Layer::new(ch.len()));
                }
                if try_place(&mut layers[usize::from(l)], &ch, &path, &mut added) {
                    placed = Some(l);
                    break;
                }
            }
            let Some(l) = placed else {
                let guid = view.switches.get(s).map(|s| s.guid).unwrap_or_default();
                return Err(RoutingError::Declined {
                    engine: super::Dfsssp::NAME,
                    reason: format!(
                        "the path from switch {guid} to LID {} fits in none of {budget} layers \
                         (a credit loop in each): more virtual lanes are needed",
                        d.lid
                    ),
                });
            };
            used = used.max(l + 1);
            layer[r * n + s] = l;
        }
    }
    Ok(PathLayers { switches: n, row, layer, used })
}

/// The dependencies of the path from switch `s` to `d` into `path`; false if the tables do not
/// lead there within `n` hops.
fn walk(ch: &Channels, routes: &Routes, s: usize, d: &DestLid, n: usize, path: &mut Vec<(u32, u8, u32)>) -> bool {
    path.clear();
    let mut x = s;
    let mut prev = NONE;
    for _ in 0..=n {
        if x == d.attach {
            return true;
        }
        let Some(p) = routes.tables.get(x).and_then(|t| t.port_for(ibsm_mad::Lid(d.lid))) else { return false };
        let c = ch.out(x, p.0);
        if c == NONE {
            return false;
        }
        if prev != NONE {
            path.push((prev, p.0, c));
        }
        prev = c;
        x = ch.to[c as usize] as usize;
    }
    false
}

/// Adds `path`'s dependencies to `layer`, or none of them if one would close a cycle.
fn try_place(layer: &mut Layer, ch: &Channels, path: &[(u32, u8, u32)], added: &mut Vec<(u32, u8)>) -> bool {
    added.clear();
    for &(a, p, b) in path {
        if has(&layer.deps[a as usize], p) {
            continue;
        }
        if !layer.add(ch, a, p, b) {
            for &(a, p) in added.iter() {
                flip(&mut layer.deps[a as usize], p, false);
            }
            return false;
        }
        added.push((a, p));
    }
    true
}
