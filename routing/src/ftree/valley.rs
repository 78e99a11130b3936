//! Where the valleys of a degraded fat tree go.
//!
//! A switch cut off from a leaf's subtree (no up-then-down path to it: a spine that lost its
//! cable into a pod, and in a k-ary tree every switch of that spine's column above the pod) can
//! reach that leaf only down and then up again, a *valley*; and so can the leaf reach it, for the
//! CAs' requests to its management port. Each valley is a down-to-up turn, and two valleys in
//! different places, with the CAs' own up-then-down routes between them, close a credit loop.
//!
//! Owns the choice of one *valley switch* `V` per cut-off leaf `L` ([`Strand::routes`]): a
//! switch with an up/down path to `L`, next to one without, that has an up/down path to every
//! switch cut off from `L` (the nearest to `L` that does, ties by index: a sibling leaf when a
//! leaf cable is lost, a switch of the next pod when a spine loses its cable into a pod). Every
//! switch cut off from `L` routes `L`'s LIDs to `V` along shortest up/down paths through
//! switches cut off from `L` too, and `V` routes them on to `L` like any other switch; the LIDs
//! of the switches cut off from `L` are routed from `L` the same way in reverse
//! ([`Valleys::reroute`]): up/down to `V` through switches cut off from the destination, then on
//! from `V`. So every valley of `L`'s traffic turns at `V`, in both directions. With one cut-off
//! leaf (or several sharing their cut), no credit loop forms: leaving `V` upwards, a route comes
//! back down into `V` only through another valley, and there is none elsewhere. With several
//! cuts their valleys can still close a loop between them; `routes check` reports those (they
//! need switch management traffic only).
//!
//! When no candidate qualifies (or a cut-off switch has no such path), the old rule stays: a
//! breadth-first route into the switches that have an up/down path ([`super::stranded`]).

use ibsm_mad::PortNum;

use super::labels::{Labels, LeafLabels};
use super::{DOWN, Tree, label, stranded, value};
use crate::graph::FAR;
use crate::par;

/// Candidate valley switches tried per cut-off leaf.
const CANDIDATES: usize = 8;

/// Per switch, the set of top switches (switches with no up link) it reaches going up. Two
/// switches have an up-then-down path between them exactly when their sets meet: going up from
/// a common ancestor always ends at a common top switch.
#[derive(Clone)]
pub(super) struct Tops {
    words: usize,
    bits: Vec<u64>,
    /// Per component of the switch graph, its top switches.
    comp_bits: Vec<u64>,
}

impl Tops {
    pub(super) fn new(tree: &Tree) -> Tops {
        let n = tree.len();
        let tops: Vec<u32> = tree.by_level.iter().copied().filter(|&x| tree.up.of(x as usize).is_empty()).collect();
        let words = tops.len().div_ceil(64).max(1);
        let mut bits = vec![0u64; n * words];
        for (i, &x) in tops.iter().enumerate() {
            bits[x as usize * words + i / 64] |= 1 << (i % 64);
        }
        // Highest level first: a switch's up neighbours are done before it.
        let mut acc = vec![0u64; words];
        for &x in &tree.by_level {
            let x = x as usize;
            let ups = tree.up.of(x);
            if ups.is_empty() {
                continue;
            }
            acc.fill(0);
            for l in ups {
                let Some(theirs) = bits.get(l.n as usize * words..(l.n as usize + 1) * words) else { continue };
                for (a, b) in acc.iter_mut().zip(theirs) {
                    *a |= b;
                }
            }
            if let Some(mine) = bits.get_mut(x * words..(x + 1) * words) {
                for (m, a) in mine.iter_mut().zip(&acc) {
                    *m |= a;
                }
            }
        }
        let ncomp = tree.comp.iter().copied().max().map_or(0, |c| c + 1);
        let mut comp_bits = vec![0u64; ncomp * words];
        for (i, &x) in tops.iter().enumerate() {
            comp_bits[tree.comp[x as usize] * words + i / 64] |= 1 << (i % 64);
        }
        Tops { words, bits, comp_bits }
    }

    /// The tops of `tree`, where `tree` is the tree these were worked out on less some links
    /// (the same levels and components) and `lower` lists the lower end of every link it lost:
    /// only those switches and the switches below them are worked out again. `None` when one
    /// of them has no up link left (the top switches are others then: [`Tops::new`]).
    pub(super) fn without(&self, tree: &Tree, lower: &[usize]) -> Option<Tops> {
        let n = tree.len();
        if self.bits.len() != n * self.words || lower.iter().any(|&x| x >= n || tree.up.of(x).is_empty()) {
            return None;
        }
        // The switches whose sets may change: the lower ends and every switch below them.
        let mut again = vec![false; n];
        let mut stack: Vec<usize> = Vec::new();
        for &x in lower {
            if !again[x] {
                again[x] = true;
                stack.push(x);
            }
        }
        while let Some(x) = stack.pop() {
            for l in tree.down.of(x) {
                let y = l.n as usize;
                if !again[y] {
                    again[y] = true;
                    stack.push(y);
                }
            }
        }
        let mut out = self.clone();
        let w = self.words;
        let mut acc = vec![0u64; w];
        // Highest level first: a switch's up neighbours are done before it. None of these is
        // a top switch (each has an up link), so its set is its up neighbours' sets.
        for &x in &tree.by_level {
            let x = x as usize;
            if !again[x] {
                continue;
            }
            acc.fill(0);
            for l in tree.up.of(x) {
                let Some(theirs) = out.bits.get(l.n as usize * w..(l.n as usize + 1) * w) else { continue };
                for (a, b) in acc.iter_mut().zip(theirs) {
                    *a |= b;
                }
            }
            if let Some(mine) = out.bits.get_mut(x * w..(x + 1) * w) {
                mine.copy_from_slice(&acc);
            }
        }
        Some(out)
    }

    /// The words per switch, the sets and the components' sets, for tests to compare.
    #[cfg(test)]
    pub(super) fn raw(&self) -> (usize, Vec<u64>, Vec<u64>) {
        (self.words, self.bits.clone(), self.comp_bits.clone())
    }

    /// Some switch of `x`'s component has no up-then-down path to `x`: `x` does not reach
    /// every top switch of its component going up (a top switch outside its set is one).
    pub(super) fn cut_off(&self, tree: &Tree, x: usize) -> bool {
        let w = self.words;
        let Some(&c) = tree.comp.get(x) else { return false };
        match (self.bits.get(x * w..(x + 1) * w), self.comp_bits.get(c * w..(c + 1) * w)) {
            (Some(mine), Some(all)) => mine != all,
            _ => false,
        }
    }

    /// An up-then-down path joins `first` and `second`.
    pub(super) fn meet(&self, first: usize, second: usize) -> bool {
        let words = self.words;
        let set = |x: usize| self.bits.get(x * words..(x + 1) * words);
        match (set(first), set(second)) {
            (Some(mine), Some(theirs)) => mine.iter().zip(theirs).any(|(p, q)| p & q != 0),
            _ => false,
        }
    }
}

/// Switch `x`'s shortest up/down next hops towards the switch `lab` labels, that `ok` accepts:
/// `(port, neighbour)` into `out`.
fn hops(tree: &Tree, lab: &[u32], x: usize, mut ok: impl FnMut(usize) -> bool, out: &mut Vec<(PortNum, u32)>) {
    out.clear();
    let lx = lab[x];
    if lx == FAR || lx == DOWN {
        return;
    }
    if lx & DOWN != 0 {
        let want = lx - 1;
        out.extend(
            tree.down.of(x).iter().filter(|l| lab[l.n as usize] == want && ok(l.n as usize)).map(|l| (l.port, l.n)),
        );
    } else {
        let want = lx - 1;
        out.extend(
            tree.up
                .of(x)
                .iter()
                .filter(|l| {
                    let v = lab[l.n as usize];
                    v != FAR && value(v) == want && ok(l.n as usize)
                })
                .map(|l| (l.port, l.n)),
        );
    }
}

/// Routes of switches cut off from one leaf: (switch, port), several per switch (its choices).
type StrandRoutes = Vec<(u32, PortNum)>;

/// Scratch for the routes of the switches cut off from one leaf, per worker.
pub(super) struct Strand<'a> {
    tops: &'a Tops,
    /// The routes found: switch, port (several per switch: its choices).
    pub(super) out: StrandRoutes,
    lab_v: Vec<u32>,
    /// The switch `lab_v` labels: the leaves of one cut share their candidates, and labelling
    /// one costs a pass over the whole tree.
    lab_v_of: Option<usize>,
    queue: Vec<u32>,
    /// The switches cut off from the leaf being routed.
    cut: Vec<u32>,
    /// Candidate valley switches: (distance to the leaf, switch).
    cands: Vec<(u32, u32)>,
    hops: Vec<(PortNum, u32)>,
}

impl<'a> Strand<'a> {
    pub(super) fn new(tops: &'a Tops) -> Strand<'a> {
        Strand {
            tops,
            out: Vec::new(),
            lab_v: Vec::new(),
            lab_v_of: None,
            queue: Vec::new(),
            cut: Vec::new(),
            cands: Vec::new(),
            hops: Vec::new(),
        }
    }

    /// Routes, into `out`, the switches of `leaf`'s component that have no up/down path to it
    /// (`lab` labels `leaf`): through a valley switch when one qualifies (returned), else
    /// breadth-first into the routed switches. Which switches are cut off comes from the top
    /// sets ([`Tops::meet`]); `lab` is read for the candidates' distances only (and whole for
    /// the breadth-first fallback).
    pub(super) fn routes(&mut self, tree: &Tree, leaf: usize, lab: &mut impl LeafLabels) -> Option<u32> {
        self.out.clear();
        let n = tree.len();
        let &ct = tree.comp.get(leaf)?;
        let tops = self.tops;
        let reaches = |x: usize| tops.meet(x, leaf);
        self.cut.clear();
        self.cut.extend(
            (0..n)
                .filter(|&x| x != leaf && tree.level[x] != FAR && tree.comp[x] == ct && !reaches(x))
                .map(|x| x as u32),
        );
        if self.cut.is_empty() {
            return None;
        }
        // Candidates: the switches with an up/down path next to one without, nearest the leaf
        // first (ties: index).
        self.cands.clear();
        for &x in &self.cut {
            for l in tree.all.of(x as usize) {
                if reaches(l.n as usize) {
                    self.cands.push((0, l.n));
                }
            }
        }
        self.cands.sort_unstable_by_key(|c| c.1);
        self.cands.dedup();
        for c in &mut self.cands {
            c.0 = value(lab.of(tree, c.1 as usize));
        }
        self.cands.sort_unstable();
        let cands = std::mem::take(&mut self.cands);
        let mut found = None;
        for &(_, v) in cands.iter().take(CANDIDATES) {
            let v = v as usize;
            if !self.cut.iter().all(|&x| tops.meet(x as usize, v)) {
                continue;
            }
            if self.lab_v_of != Some(v) {
                label(tree, v, &mut self.lab_v, &mut self.queue, |_, _| {}, |_| {});
                self.lab_v_of = Some(v);
            }
            self.out.clear();
            let mut ok = true;
            for &x in &self.cut {
                let x = x as usize;
                hops(tree, &self.lab_v, x, |y| y == v || !reaches(y), &mut self.hops);
                if self.hops.is_empty() {
                    ok = false;
                    break;
                }
                self.out.extend(self.hops.iter().map(|&(p, _)| (x as u32, p)));
            }
            if ok {
                found = Some(v as u32);
                break;
            }
        }
        self.cands = cands;
        if found.is_none() {
            stranded(tree, leaf, lab.all(tree), &mut self.out);
        }
        found
    }
}

/// The valley switches chosen while routing the CA LIDs, for the switch LIDs: per cut-off leaf,
/// its valley switch and the labels towards it.
pub(super) struct Valleys {
    /// `(cut-off leaf, valley switch)`, in leaf order.
    pairs: Vec<(u32, u32)>,
    /// The routes of the switches cut off from each cut-off leaf (with or without a valley
    /// switch), in leaf order, when computed by [`Valleys::compute`].
    strands: Vec<(u32, StrandRoutes)>,
    /// Labels towards each distinct valley switch, in `pairs` order of first use.
    labels: Vec<(u32, Vec<u32>)>,
    /// Some leaf is cut off from some switch ([`Tops::cut_off`]).
    pub(super) cut: bool,
}

impl Valleys {
    /// From the valley switch of each leaf (`None` for a leaf that is not cut off from anything).
    pub(super) fn new(tree: &Tree, tops: &Tops, of_leaf: &[Option<u32>]) -> Valleys {
        let pairs: Vec<(u32, u32)> = of_leaf.iter().enumerate().filter_map(|(l, v)| v.map(|v| (l as u32, v))).collect();
        let mut labels: Vec<(u32, Vec<u32>)> = Vec::new();
        let mut queue = Vec::new();
        for &(_, v) in &pairs {
            if labels.iter().all(|(w, _)| *w != v) {
                let mut lab = Vec::new();
                label(tree, v as usize, &mut lab, &mut queue, |_, _| {}, |_| {});
                labels.push((v, lab));
            }
        }
        let cut = (0..tree.len()).any(|x| tree.level[x] == 0 && tops.cut_off(tree, x));
        Valleys { pairs, labels, strands: Vec::new(), cut }
    }

    /// For a repair, which does not route every leaf: each of `leaves` (sorted, no repeats) that
    /// is cut off from a switch gets its valley switch and the routes of the switches cut off
    /// from it, as [`Strand::routes`] gives them while a full route labels the leaf (here the
    /// leaf's labels are computed only where the search reads them).
    pub(super) fn compute(tree: &Tree, tops: &Tops, leaves: &[usize]) -> Valleys {
        let n = tree.len();
        let cut: Vec<usize> =
            leaves.iter().copied().filter(|&x| tree.level.get(x) == Some(&0) && tops.cut_off(tree, x)).collect();
        // Each leaf's labels and routes depend on that leaf only: on all cores.
        let mut found: Vec<(Option<u32>, StrandRoutes)> = vec![(None, Vec::new()); cut.len()];
        par::for_chunks(&mut found, 2, |off, chunk| {
            let mut labels = Labels::new(n);
            let mut strand = Strand::new(tops);
            for (slot, &leaf) in chunk.iter_mut().zip(&cut[off..]) {
                labels.reset(tree, leaf);
                let valley = strand.routes(tree, leaf, &mut labels);
                *slot = (valley, std::mem::take(&mut strand.out));
            }
        });
        let mut of_leaf = vec![None; n];
        let mut strands = Vec::with_capacity(cut.len());
        for (&leaf, (valley, routes)) in cut.iter().zip(found) {
            of_leaf[leaf] = valley;
            strands.push((leaf as u32, routes));
        }
        let mut v = Valleys::new(tree, tops, &of_leaf);
        v.strands = strands;
        v
    }

    /// The routes [`Valleys::compute`] found for the switches cut off from `leaf`, if it is
    /// cut off from any.
    pub(super) fn strand_of(&self, leaf: usize) -> Option<&[(u32, PortNum)]> {
        self.strands.iter().find(|(l, _)| *l as usize == leaf).map(|(_, r)| r.as_slice())
    }

    /// No cut-off leaf has a valley switch.
    pub(super) fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// Routes each cut-off leaf that has no up/down path to switch `t` through its valley
    /// switch: up/down to it through switches that have none either, then on as they route `t`
    /// already. `set(x, port)` hears the new ports, in path order. A leaf whose way there passes
    /// a switch with an up/down path keeps its route.
    pub(super) fn reroute(
        &self,
        (tree, tops): (&Tree, &Tops),
        t: usize,
        path: &mut Vec<(u32, PortNum)>,
        mut set: impl FnMut(usize, PortNum),
    ) {
        let far = |x: usize| !tops.meet(x, t);
        let mut hop = Vec::new();
        for &(leaf, valley) in &self.pairs {
            let (leaf, target) = (leaf as usize, valley as usize);
            if !far(leaf) || far(target) {
                continue;
            }
            let Some((_, lab_v)) = self.labels.iter().find(|(w, _)| *w == valley) else { continue };
            path.clear();
            let mut at = leaf;
            let complete = loop {
                if at == target {
                    break true;
                }
                hops(tree, lab_v, at, |y| y == target || far(y), &mut hop);
                let Some(&(port, next)) = hop.first() else { break false };
                path.push((at as u32, port));
                at = next as usize;
            };
            if complete {
                for &(x, port) in path.iter() {
                    set(x as usize, port);
                }
            }
        }
    }
}

/// Every switch's port towards switch `t` into `col`, along a breadth-first tree towards `t`
/// (shortest paths over any link), as OpenSM's ftree routes switch LIDs. On a tree where some
/// leaf is cut off from some switch (`cut`), a shortest path may go down and up where an
/// up/down path exists: there every switch with an up/down path takes one instead (the `t`-th
/// of its next hops, modulo their number, so that the targets spread over them); the others
/// keep the breadth-first tree, which only ever enters switches that have an up/down path or
/// are nearer `t`, so no loop forms. `lab` gets the up/down labels towards `t` when `cut` (else
/// it is cleared); `pairs` is scratch.
pub(super) fn switch_column(
    tree: &Tree,
    t: usize,
    cut: bool,
    (lab, queue, pairs): (&mut Vec<u32>, &mut Vec<u32>, &mut Vec<(u32, PortNum)>),
    col: &mut Vec<PortNum>,
) {
    super::bfs_column(tree, t, queue, col);
    if !cut {
        lab.clear();
        return;
    }
    pairs.clear();
    label(
        tree,
        t,
        lab,
        queue,
        |x, p| pairs.push((x, p)),
        |x| {
            let ports = tree.up.range(x).and_then(|r| tree.up_ports.get(r)).unwrap_or(&[]);
            if let (Some(c), Some(&p)) = (col.get_mut(x), ports.get(t % ports.len().max(1))) {
                *c = p;
            }
        },
    );
    // Ancestors' down ports come in breadth-first order: by switch, in port order.
    pairs.sort_unstable();
    for group in pairs.chunk_by(|a, b| a.0 == b.0) {
        if let Some(&(x, p)) = group.get(t % group.len())
            && let Some(c) = col.get_mut(x as usize)
        {
            *c = p;
        }
    }
}
