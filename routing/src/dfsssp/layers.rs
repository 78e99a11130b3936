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
//! Removing dependencies keeps an order valid, so taking a path back needs no reordering. An
//! empty layer starts from an order that up-then-down routes keep ([`Layer::over`]: channels
//! climbing from the CAs' switches first, descending ones last), which on a fat tree spares
//! most of that reordering; the order changes the work only, never which dependency is taken. A
//! dependency that closes a cycle with a layer's placed paths alone is remembered as refused
//! there (placed paths stay), so later paths with it are turned away without a search.
//!
//! Paths are placed destination by destination as stage one routes them (`Placer`, fed each
//! destination's forwarding as channels), sources in switch order. Owns only this placement;
//! guarantees each layer's graph acyclic when it returns `Ok`, and never panics on any view and
//! tables. Where more than one layer was needed, `Placer::refine` places every path again, class
//! by class of the best placement so far (iterated greedy colouring), keeping a placement only
//! if it needs no more layers; the budget is judged after that.

mod conflict;
mod pairs;

use crate::check::{PortSet, set_ports};
use crate::dfsssp::{DestLid, PathLayers};
use crate::graph::Indexed;
use crate::{FabricView, RoutingError};

/// No channel.
pub(crate) const NONE: u32 = u32::MAX;

/// The channels of the switch graph, numbered, with their ends.
pub(crate) struct Channels {
    /// Far switch of each channel.
    pub(crate) to: Vec<u32>,
    /// Near switch and port of each channel.
    pub(crate) near: Vec<(u32, u8)>,
    /// `by_port[port_start[s] + p]`: the channel out of switch `s` port `p`, or `NONE`.
    port_start: Vec<usize>,
    by_port: Vec<u32>,
    /// Channels into each switch: `into[into_start[s]..into_start[s + 1]]`.
    into_start: Vec<usize>,
    into: Vec<u32>,
    /// The channels in the order a fresh layer starts from ([`Channels::seed_order`]).
    seed: Vec<u32>,
}

impl Channels {
    pub(crate) fn new(view: &FabricView, idx: &Indexed) -> Channels {
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
        let seed = Channels::seed_order(idx, &to, &near);
        Channels { to, near, port_start, by_port, into_start, into, seed }
    }

    /// A first topological order for layers that are still empty, so that the dependencies of
    /// minimal routes on a tree-like fabric need no reordering: with each switch's height its
    /// hop distance from the nearest switch with CAs, the channels that climb (by the height
    /// they leave, lowest first), then those that stay level, then those that descend (highest
    /// first), channel number within each. Up-then-down routes, a fat tree's minimal ones, then
    /// only ever depend from a channel to a later one. Any order is valid for an empty layer,
    /// and whether a dependency is taken never depends on the order, only the work does; a
    /// fabric with CAs on every switch keeps the channel numbering.
    fn seed_order(idx: &Indexed, to: &[u32], near: &[(u32, u8)]) -> Vec<u32> {
        let g = &idx.graph;
        let leaves: Vec<usize> = (0..g.len()).filter(|&s| idx.hosts_at.get(s).is_some_and(|&h| h > 0)).collect();
        let mut height = Vec::new();
        g.bfs(&leaves, &mut height, &mut std::collections::VecDeque::new());
        let h = |s: u32| height.get(s as usize).copied().unwrap_or(crate::graph::FAR);
        let mut seed: Vec<u32> = (0..to.len()).filter_map(|c| u32::try_from(c).ok()).collect();
        seed.sort_by_key(|&c| {
            let (from, into) = (h(near[c as usize].0), h(to[c as usize]));
            match into.cmp(&from) {
                std::cmp::Ordering::Greater => (0, from),
                std::cmp::Ordering::Equal => (1, 0),
                std::cmp::Ordering::Less => (2, u32::MAX - from),
            }
        });
        seed
    }

    pub(crate) fn len(&self) -> usize {
        self.to.len()
    }

    /// The channel out of switch `s` by port `p`.
    pub(crate) fn out(&self, s: usize, p: u8) -> u32 {
        match (self.port_start.get(s), self.port_start.get(s + 1)) {
            (Some(&a), Some(&b)) if a + usize::from(p) < b => self.by_port[a + usize::from(p)],
            _ => NONE,
        }
    }

    /// The channel out of each port of switch `s` (`NONE` where none), indexed by port.
    pub(crate) fn by_port_of(&self, s: usize) -> &[u32] {
        match (self.port_start.get(s), self.port_start.get(s + 1)) {
            (Some(&a), Some(&b)) => self.by_port.get(a..b).unwrap_or(&[]),
            _ => &[],
        }
    }

    /// The channels out of switch `s`, in port order.
    pub(crate) fn out_of(&self, s: usize) -> impl Iterator<Item = u32> + '_ {
        let range = match (self.port_start.get(s), self.port_start.get(s + 1)) {
            (Some(&a), Some(&b)) => self.by_port.get(a..b).unwrap_or(&[]),
            _ => &[],
        };
        range.iter().copied().filter(|&c| c != NONE)
    }

    pub(crate) fn incoming(&self, s: usize) -> &[u32] {
        match (self.into_start.get(s), self.into_start.get(s + 1)) {
            (Some(&a), Some(&b)) => self.into.get(a..b).unwrap_or(&[]),
            _ => &[],
        }
    }
}

/// One layer: its dependencies and a topological order of its channels.
#[derive(Clone)]
pub(crate) struct Layer {
    pub(crate) deps: Vec<PortSet>,
    /// Dependencies known to close a cycle with the placed paths alone.
    pub(crate) refused: Vec<PortSet>,
    ord: Vec<u32>,
    /// Channel at each position of the order.
    at: Vec<u32>,
    mark: Vec<u32>,
    epoch: u32,
    stack: Vec<u32>,
    fwd: Vec<u32>,
    back: Vec<u32>,
}

pub(crate) fn has(set: &PortSet, p: u8) -> bool {
    set[usize::from(p >> 6)] & (1u64 << (p & 63)) != 0
}

pub(crate) fn flip(set: &mut PortSet, p: u8, on: bool) {
    let w = &mut set[usize::from(p >> 6)];
    if on {
        *w |= 1u64 << (p & 63);
    } else {
        *w &= !(1u64 << (p & 63));
    }
}

impl Layer {
    pub(crate) fn new(channels: usize) -> Layer {
        let ids: Vec<u32> = (0..channels).map(|c| u32::try_from(c).unwrap_or(NONE)).collect();
        Layer {
            deps: vec![[0; 4]; channels],
            refused: vec![[0; 4]; channels],
            ord: ids.clone(),
            at: ids,
            mark: vec![0; channels],
            epoch: 0,
            stack: Vec::new(),
            fwd: Vec::new(),
            back: Vec::new(),
        }
    }

    /// An empty layer over `ch`, its order [`Channels::seed_order`]'s.
    pub(crate) fn over(ch: &Channels) -> Layer {
        let mut l = Layer::new(ch.len());
        if ch.seed.len() == ch.len() {
            for (i, &c) in ch.seed.iter().enumerate() {
                l.ord[c as usize] = u32::try_from(i).unwrap_or(NONE);
            }
            l.at.clone_from(&ch.seed);
        }
        l
    }

    /// A layer holding `deps` (as [`Layer::deps`]), with a topological order of its channels
    /// found at once (Kahn's algorithm) rather than dependency by dependency; `None` if they
    /// hold a cycle (or do not fit `ch`).
    pub(crate) fn seeded(ch: &Channels, deps: Vec<PortSet>) -> Option<Layer> {
        let n = ch.len();
        if deps.len() != n {
            return None;
        }
        let succ = |c: usize| {
            let far = ch.to[c] as usize;
            set_ports(deps[c]).map(move |q| ch.out(far, q)).filter(|&d| d != NONE)
        };
        let mut indeg = vec![0u32; n];
        for c in 0..n {
            for d in succ(c) {
                indeg[d as usize] += 1;
            }
        }
        let mut ready: Vec<u32> = (0..n).filter(|&c| indeg[c] == 0).filter_map(|c| u32::try_from(c).ok()).collect();
        let mut at = Vec::with_capacity(n);
        while let Some(c) = ready.pop() {
            at.push(c);
            for d in succ(c as usize) {
                let e = &mut indeg[d as usize];
                *e -= 1;
                if *e == 0 {
                    ready.push(d);
                }
            }
        }
        if at.len() != n {
            return None;
        }
        let mut ord = vec![0u32; n];
        for (i, &c) in at.iter().enumerate() {
            ord[c as usize] = u32::try_from(i).ok()?;
        }
        let mut l = Layer::new(n);
        l.deps = deps;
        l.ord = ord;
        l.at = at;
        Some(l)
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
    pub(crate) fn add(&mut self, ch: &Channels, a: u32, p: u8, b: u32) -> bool {
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
        let epoch = self.next_epoch();
        self.fwd.clear();
        self.stack.clear();
        self.stack.push(b);
        self.mark[bi] = epoch;
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
                if self.mark[di] != epoch && self.ord[di] < ub {
                    self.mark[di] = epoch;
                    self.stack.push(d);
                }
            }
        }
        // Backward from a over channels ordered above `lb`.
        self.back.clear();
        self.stack.push(a);
        self.mark[ai] = epoch;
        while let Some(c) = self.stack.pop() {
            self.back.push(c);
            // Channels whose far switch is c's near switch and that go on by c's port.
            let Some((near, port)) = near_of(ch, c) else { continue };
            for &i in ch.incoming(near) {
                let ii = i as usize;
                if self.mark[ii] != epoch && self.ord[ii] > lb && has(&self.deps[ii], port) {
                    self.mark[ii] = epoch;
                    self.stack.push(i);
                }
            }
        }
        // Reorder: the backward set first, then the forward set, over their old positions.
        let ord = &self.ord;
        self.back.sort_unstable_by_key(|&c| ord[c as usize]);
        self.fwd.sort_unstable_by_key(|&c| ord[c as usize]);
        let pos = merged_positions(ord, &self.back, &self.fwd);
        for (&c, &o) in self.back.iter().chain(&self.fwd).zip(&pos) {
            self.ord[c as usize] = o;
            self.at[o as usize] = c;
        }
        flip(&mut self.deps[ai], p, true);
        true
    }
}

/// The positions in `ord` of the channels of `back` and `fwd` (each sorted by position), in
/// order: the two sorted runs merged.
fn merged_positions(ord: &[u32], back: &[u32], fwd: &[u32]) -> Vec<u32> {
    let mut pos = Vec::with_capacity(back.len() + fwd.len());
    let (mut in_back, mut in_fwd) = (back.iter().peekable(), fwd.iter().peekable());
    loop {
        let from_back = in_back.peek().map(|&&c| ord[c as usize]);
        let from_fwd = in_fwd.peek().map(|&&c| ord[c as usize]);
        match (from_back, from_fwd) {
            (Some(early), Some(late)) if early < late => {
                pos.push(early);
                in_back.next();
            }
            (_, Some(late)) => {
                pos.push(late);
                in_fwd.next();
            }
            (Some(early), None) => {
                pos.push(early);
                in_back.next();
            }
            (None, None) => return pos,
        }
    }
}

/// The switch a channel leaves and its port there.
fn near_of(ch: &Channels, c: u32) -> Option<(usize, u8)> {
    ch.near.get(c as usize).map(|&(s, p)| (s as usize, p))
}

/// The most layers a placement may open: InfiniBand's data VLs.
const MAX_LAYERS: u8 = 15;
/// The most passes of [`Placer::refine`].
const PASSES: usize = 40;
/// Path placements [`Placer::refine`] may spend in all: a fabric with more paths than this is
/// placed once. Seconds on a random fabric, where most paths are turned away by several layers
/// (release build, one thread, session 25): the 4 passes over 992 K paths of a random 450-switch
/// fabric (1,800 CAs, 3,600 links) took 3.8 s of CPU, one pass over 2.2 M paths of a 500-switch
/// one (4,000 CAs, 6,000 links) 1.7 s: about 0.8-0.95 us a placement.
const REFINE_WORK: usize = 1 << 22;

/// Places paths on layers destination by destination, as stage one routes them.
pub(crate) struct Placer<'a> {
    view: &'a FabricView,
    idx: &'a Indexed,
    ch: Channels,
    budget: u8,
    /// The layers the first placement may open: all of them if [`Placer::refine`] may bring
    /// the count down again, else the budget.
    cap: u8,
    layers: Vec<Layer>,
    /// Row of each LID in `layer`, indexed by LID.
    row: Vec<u32>,
    /// `layer[row * switches + s]`.
    layer: Vec<u8>,
    used: u8,
    path: Vec<(u32, u8, u32)>,
    added: Vec<(u32, u8)>,
    /// The destinations placed, by row.
    dests: Vec<DestLid>,
    /// Switch hops of each path (0: no path), as `layer`.
    hops: Vec<u8>,
    /// Whether the layers are by pair of switches ([`Placer::pair_up`]).
    paired: bool,
}

impl<'a> Placer<'a> {
    /// A placer for `view` with at most `budget` layers.
    pub(crate) fn new(view: &'a FabricView, idx: &'a Indexed, budget: u8) -> Placer<'a> {
        let ch = Channels::new(view, idx);
        let first = Layer::over(&ch);
        let n = idx.graph.len();
        let paths = idx.dests.len().saturating_mul(usize::from(idx.per_port)).saturating_mul(n);
        let cap = if paths <= REFINE_WORK { MAX_LAYERS } else { budget };
        Placer {
            cap,
            view,
            idx,
            ch,
            budget,
            layers: vec![first],
            row: vec![NONE; usize::from(idx.top) + 1],
            layer: Vec::new(),
            used: 1,
            path: Vec::new(),
            added: Vec::new(),
            dests: Vec::new(),
            hops: Vec::new(),
            paired: false,
        }
    }

    /// Places the path from every source switch to `d`. `next[x]` is the channel switch `x`
    /// forwards `d` on (numbered as stage one numbers them: links in switch and port order), or
    /// `NONE` at `d`'s own switch and where `d` is unreachable.
    pub(crate) fn place(&mut self, d: &DestLid, next: &[u32]) -> Result<(), RoutingError> {
        let n = self.idx.graph.len();
        let r = self.layer.len() / n.max(1);
        if let Some(e) = self.row.get_mut(usize::from(d.lid)) {
            *e = u32::try_from(r).unwrap_or(NONE);
        }
        self.layer.resize(self.layer.len() + n, 0);
        self.hops.resize(self.layer.len(), 0);
        self.dests.push(*d);
        for s in 0..n {
            if !d.to_ca && self.idx.hosts_at.get(s).is_none_or(|&h| h == 0) {
                continue;
            }
            if !walk(&self.ch, next, s, d.attach, n, &mut self.path) || self.path.is_empty() {
                continue;
            }
            let mut placed = None;
            for l in 0..self.cap {
                if usize::from(l) == self.layers.len() {
                    self.layers.push(Layer::over(&self.ch));
                }
                if self.layers[usize::from(l)].try_place(&self.ch, &self.path, &mut self.added) {
                    placed = Some(l);
                    break;
                }
            }
            let Some(l) = placed else { return Err(self.declined(s, d.lid)) };
            self.used = self.used.max(l + 1);
            self.layer[r * n + s] = l;
            self.hops[r * n + s] = u8::try_from(self.path.len() + 1).unwrap_or(u8::MAX);
        }
        Ok(())
    }

    /// Places every path again, on fresh layers each time, and keeps a placement with fewer
    /// layers: as in iterated greedy colouring (Culberson), the paths are taken class by class
    /// of the best placement so far, highest layer first, each on the first layer that takes
    /// it. That never needs more layers than there are classes (a class is acyclic, and layer
    /// `k` receives paths of class `k` or earlier only), so a pass is at worst as good as the
    /// last, and a new order often frees the highest layer. At most [`PASSES`] passes, fewer on
    /// large fabrics ([`REFINE_WORK`] path placements in all).
    pub(crate) fn refine(&mut self, routes: &crate::Routes) {
        let paths = self.hops.iter().filter(|&&h| h > 0).count().max(1);
        let passes = (REFINE_WORK / paths).min(PASSES);
        let hops = std::mem::take(&mut self.hops);
        for _ in 0..passes {
            if self.used <= 1 {
                break;
            }
            let best = std::mem::take(&mut self.layer);
            let used = self.used;
            let key = |i: usize| if hops[i] == 0 { u32::MAX } else { u32::from(used - 1 - best[i]) };
            let next = self.replace(routes, key, u32::from(used));
            self.layer = best;
            match next {
                Some((layer, u)) if u <= self.used => {
                    self.layer = layer;
                    self.used = u;
                }
                _ => break,
            }
        }
        self.hops = hops;
    }

    /// Every path with dependencies placed afresh by increasing `key` (below `keys`), ties in
    /// (destination, source) order; the layers and the count, or `None` past the budget.
    fn replace(&mut self, routes: &crate::Routes, key: impl Fn(usize) -> u32, keys: u32) -> Option<(Vec<u8>, u8)> {
        let n = self.idx.graph.len();
        let mut layers: Vec<Layer> = vec![Layer::over(&self.ch)];
        let mut layer = vec![0u8; self.dests.len() * n];
        let mut used = 1u8;
        for k in 0..keys {
            for (r, d) in self.dests.iter().enumerate() {
                for s in 0..n {
                    let i = r * n + s;
                    if key(i) != k || !walk_tables(&self.ch, &routes.tables, s, d, n, &mut self.path) {
                        continue;
                    }
                    let mut placed = None;
                    for l in 0..MAX_LAYERS {
                        if usize::from(l) == layers.len() {
                            layers.push(Layer::over(&self.ch));
                        }
                        if layers[usize::from(l)].try_place(&self.ch, &self.path, &mut self.added) {
                            placed = Some(l);
                            break;
                        }
                    }
                    let l = placed?;
                    used = used.max(l + 1);
                    layer[i] = l;
                }
            }
        }
        Some((layer, used))
    }

    /// Layers used so far.
    pub(crate) fn used(&self) -> u8 {
        self.used
    }

    /// The layer of every path placed, or the first path past the budget.
    pub(crate) fn finish(self) -> Result<PathLayers, RoutingError> {
        let n = self.idx.graph.len();
        if self.used > self.budget
            && let Some(i) = self.layer.iter().position(|&l| l >= self.budget)
            && let Some(d) = self.dests.get(i / n.max(1))
        {
            return Err(self.declined(i % n.max(1), d.lid));
        }
        Ok(PathLayers { switches: n, row: self.row, layer: self.layer, used: self.used, paired: self.paired })
    }

    /// The refusal naming the path from switch `s` to `lid`.
    fn declined(&self, s: usize, lid: u16) -> RoutingError {
        let guid = self.view.switches.get(s).map(|s| s.guid).unwrap_or_default();
        RoutingError::Declined {
            engine: super::Dfsssp::NAME,
            reason: format!(
                "the path from switch {guid} to LID {lid} fits in none of {} layers (a credit loop \
                 in each): more virtual lanes are needed",
                self.budget
            ),
        }
    }
}

/// The dependencies of the path from switch `s` to the destination at switch `attach` into
/// `path`, following `next`; false if it does not lead there within `n` hops.
fn walk(ch: &Channels, next: &[u32], src: usize, attach: usize, limit: usize, path: &mut Vec<(u32, u8, u32)>) -> bool {
    path.clear();
    let mut at = src;
    let mut prev = NONE;
    for _ in 0..=limit {
        if at == attach {
            return true;
        }
        let Some(&chan) = next.get(at) else { return false };
        let (Some(&(_, port)), Some(&to)) = (ch.near.get(chan as usize), ch.to.get(chan as usize)) else {
            return false;
        };
        if prev != NONE {
            path.push((prev, port, chan));
        }
        prev = chan;
        at = to as usize;
    }
    false
}

impl Layer {
    /// Adds `path`'s dependencies, or none of them if one would close a cycle.
    ///
    /// A dependency that closes a cycle with this layer's placed paths alone is remembered as
    /// refused: placed paths are never taken back, so it would close one on every later try.
    /// Whether one path fits is found first ([`Layer::first_conflict`]), so a refused path
    /// leaves the layer's order as it was and costs no reordering.
    pub(crate) fn try_place(&mut self, ch: &Channels, path: &[(u32, u8, u32)], added: &mut Vec<(u32, u8)>) -> bool {
        added.clear();
        // The check is for one path's chain of channels; a list of several paths' (a pair of
        // switches' unit) is added one by one.
        if !path.windows(2).all(|w| w[0].2 == w[1].0) {
            return self.add_path(ch, path, added);
        }
        if let Some((t, alone)) = self.first_conflict(ch, path) {
            if alone && let Some(&(a, p, _)) = path.get(t) {
                flip(&mut self.refused[a as usize], p, true);
            }
            return false;
        }
        // It fits: every dependency is added (the refusals there are never reached, but keep
        // the layer right should the check above ever miss one).
        self.add_path(ch, path, added)
    }

    /// Adds `path`'s dependencies one by one, reordering the layer as each needs; at the first
    /// that is refused or closes a cycle, takes back those added and returns false (remembering
    /// that one as refused if it closes a cycle with the layer alone).
    fn add_path(&mut self, ch: &Channels, path: &[(u32, u8, u32)], added: &mut Vec<(u32, u8)>) -> bool {
        added.clear();
        for &(a, p, b) in path {
            let ai = a as usize;
            if has(&self.deps[ai], p) {
                continue;
            }
            if has(&self.refused[ai], p) {
                self.take_back(added);
                return false;
            }
            if !self.add(ch, a, p, b) {
                let alone = added.is_empty();
                self.take_back(added);
                if alone || !self.add(ch, a, p, b) {
                    flip(&mut self.refused[ai], p, true);
                } else {
                    // It fits alone: only this path's own dependencies made the cycle.
                    flip(&mut self.deps[ai], p, false);
                }
                return false;
            }
            added.push((a, p));
        }
        true
    }

    /// Removes the dependencies in `added` (removing keeps the order valid).
    pub(crate) fn take_back(&mut self, added: &[(u32, u8)]) {
        for &(a, p) in added {
            flip(&mut self.deps[a as usize], p, false);
        }
    }
}

/// [`walk`] through the tables: the dependencies of the path from switch `src` along `tables`
/// toward `dest`, as far as it goes (to the destination, a port with no channel, or `limit`
/// hops), into `path`; whether it arrived. The repair walks partial tables with it too.
pub(super) fn walk_tables(
    ch: &Channels,
    tables: &[std::sync::Arc<crate::Lft>],
    src: usize,
    dest: &DestLid,
    limit: usize,
    path: &mut Vec<(u32, u8, u32)>,
) -> bool {
    path.clear();
    let mut at = src;
    let mut prev = NONE;
    for _ in 0..=limit {
        if at == dest.attach {
            return true;
        }
        let Some(port) = tables.get(at).and_then(|t| t.port_for(ibsm_mad::Lid(dest.lid))) else { return false };
        let chan = ch.out(at, port.0);
        if chan == NONE {
            return false;
        }
        if prev != NONE {
            path.push((prev, port.0, chan));
        }
        prev = chan;
        at = ch.to[chan as usize] as usize;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::ring;

    #[test]
    fn a_turn_that_closes_a_cycle_alone_is_remembered_and_only_then() {
        let v = ring(4);
        let idx = Indexed::new(&v).unwrap();
        let ch = Channels::new(&v, &idx);
        // Clockwise channels (port 1) and the turn from each into the next.
        let cw: Vec<u32> = (0..4).map(|s| ch.out(s, 1)).collect();
        assert!(cw.iter().all(|&c| c != NONE));
        let turn = |i: usize| (cw[i], 1u8, cw[(i + 1) % 4]);
        let mut added = Vec::new();

        // Three of the four turns fit; the fourth alone closes the ring: refused, remembered.
        let mut l = Layer::new(ch.len());
        assert!(l.try_place(&ch, &[turn(0), turn(1)], &mut added));
        assert!(l.try_place(&ch, &[turn(2)], &mut added));
        assert!(!l.try_place(&ch, &[turn(3)], &mut added));
        assert!(has(&l.refused[cw[3] as usize], 1));
        assert!(!l.try_place(&ch, &[turn(3)], &mut added));

        // A path whose own turns close the cycle with the layer's: refused, nothing remembered
        // and nothing of it left in the layer.
        let mut l = Layer::new(ch.len());
        assert!(l.try_place(&ch, &[turn(0), turn(1)], &mut added));
        assert!(!l.try_place(&ch, &[turn(2), turn(3)], &mut added));
        for i in [2, 3] {
            assert!(!has(&l.refused[cw[i] as usize], 1), "turn {i}");
            assert!(!has(&l.deps[cw[i] as usize], 1), "turn {i}");
        }
        // Either turn alone still fits; after one, the other closes the ring by itself.
        assert!(l.try_place(&ch, &[turn(3)], &mut added));
        assert!(!l.try_place(&ch, &[turn(2)], &mut added));
        assert!(has(&l.refused[cw[2] as usize], 1));
    }
}
