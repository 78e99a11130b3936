//! Nue's escape paths: per layer, a breadth-first spanning tree of each connected component,
//! rooted at the switch with CAs nearest the layer's destinations (the least hop distance
//! summed over them, weighted by their LIDs; the lowest index on a tie or where the layer has
//! none there; any switch in a component without CAs). A root with CAs keeps the tree's turns
//! from a descending channel into a climbing one near the root: rooted at a top switch of a
//! fat tree, the tree reaches the other top switches through a leaf of every pod, and those
//! turns close cycles with the fabric's minimal (up-then-down) routes, which then cost a
//! refused dependency search each (on the k = 32 tree, most of Nue's time).
//!
//! Routes along a tree go up toward the root as far as the lowest common ancestor, then down.
//! Their dependencies (up then up, up then down into another child, down then down) are
//! acyclic together, so [`Tree::reserve`] puts them all in the layer's dependency graph before
//! any route is searched, and a destination the search cannot route is routed along the tree
//! ([`Tree::route_to`]) with no new dependency. Owns only the tree; never panics.

use std::collections::VecDeque;

use crate::dfsssp::layers::{Channels, Layer, NONE, has};
use crate::graph::{FAR, SwitchGraph};

/// A spanning forest of the switch graph, as channels.
pub(super) struct Tree {
    /// Parent switch (`NONE` at a root).
    parent: Vec<u32>,
    /// The channel to the parent (`NONE` at a root).
    up: Vec<u32>,
    /// The channel from the parent (`NONE` at a root).
    down: Vec<u32>,
}

impl Tree {
    /// The forest rooted, in each of the `count` components of `comp`, at the switch nearest
    /// the switches `weight` gives a weight, among those with CAs (`hosts_at`) if any.
    pub(super) fn new(
        g: &SwitchGraph,
        ch: &Channels,
        comp: &[usize],
        count: usize,
        weight: &[u64],
        hosts_at: &[u32],
    ) -> Tree {
        let n = g.len();
        let mut sum = vec![0u64; n];
        let mut dist = Vec::new();
        let mut queue = VecDeque::new();
        for (d, &w) in weight.iter().enumerate().filter(|&(_, &w)| w > 0) {
            g.bfs(&[d], &mut dist, &mut queue);
            for (s, &h) in sum.iter_mut().zip(&dist) {
                if h != FAR {
                    *s = s.saturating_add(w.saturating_mul(u64::from(h)));
                }
            }
        }
        let mut root: Vec<Option<usize>> = vec![None; count];
        let has_cas = |s: usize| hosts_at.get(s).is_some_and(|&h| h > 0);
        for s in 0..n {
            let Some(r) = comp.get(s).and_then(|&c| root.get_mut(c)) else { continue };
            if r.is_none_or(|b| (!has_cas(s), sum[s]) < (!has_cas(b), sum[b])) {
                *r = Some(s);
            }
        }
        let mut t = Tree { parent: vec![NONE; n], up: vec![NONE; n], down: vec![NONE; n] };
        let mut seen = vec![false; n];
        for r in root.into_iter().flatten() {
            seen[r] = true;
            queue.clear();
            queue.push_back(r);
            while let Some(y) = queue.pop_front() {
                for &(p, x, q) in g.links(y) {
                    if seen[x] {
                        continue;
                    }
                    seen[x] = true;
                    t.parent[x] = u32::try_from(y).unwrap_or(NONE);
                    t.down[x] = ch.out(y, p.0);
                    t.up[x] = ch.out(x, q.0);
                    queue.push_back(x);
                }
            }
        }
        t
    }

    /// Puts the dependencies of every route along the tree into `cdg` (acyclic, so each is
    /// taken).
    pub(super) fn reserve(&self, g: &SwitchGraph, ch: &Channels, cdg: &mut Layer) {
        let n = g.len();
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (x, &p) in self.parent.iter().enumerate() {
            if let Some(v) = children.get_mut(p as usize) {
                v.push(x);
            }
        }
        let mut dep = |a: u32, b: u32| {
            if a != NONE
                && b != NONE
                && let Some(&(_, p)) = ch.near.get(b as usize)
            {
                cdg.add(ch, a, p, b);
            }
        };
        for (y, kids) in children.iter().enumerate() {
            for &c in kids {
                // Up, then on up.
                dep(self.up[c], self.up[y]);
                // Down, then on down.
                dep(self.down[y], self.down[c]);
                // Up, then down into another child.
                for &c2 in kids.iter().filter(|&&c2| c2 != c) {
                    dep(self.up[c], self.down[c2]);
                }
            }
        }
    }

    /// Each switch's channel toward `t` along the tree, into `next` (`NONE` at `t` and outside
    /// its component).
    pub(super) fn route_to(&self, comp: &[usize], t: usize, next: &mut [u32]) {
        let mine = comp.get(t).copied();
        for (x, e) in next.iter_mut().enumerate() {
            *e = if x != t && comp.get(x).copied() == mine { self.up.get(x).copied().unwrap_or(NONE) } else { NONE };
        }
        // The switches above `t` go down toward it.
        let mut a = t;
        for _ in 0..next.len() {
            let p = self.parent.get(a).copied().unwrap_or(NONE);
            if p == NONE {
                break;
            }
            if let Some(e) = next.get_mut(p as usize) {
                *e = self.down[a];
            }
            a = p as usize;
        }
    }

    /// Whether every dependency of the routes `next` gives the switches of `order` is in `cdg`.
    pub(super) fn covered(ch: &Channels, cdg: &Layer, next: &[u32], order: &[u32]) -> bool {
        order.iter().all(|&x| {
            let Some(&c) = next.get(x as usize) else { return false };
            if c == NONE {
                return true;
            }
            let Some(&y) = ch.to.get(c as usize) else { return false };
            let onward = next.get(y as usize).copied().unwrap_or(NONE);
            onward == NONE || ch.near.get(onward as usize).is_some_and(|&(_, p)| has(&cdg.deps[c as usize], p))
        })
    }
}
