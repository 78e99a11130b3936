//! Up/down labels towards one leaf of a fat tree, computed only where they are read.
//!
//! Owns [`Labels`]: a switch's label is its up/down distance to the leaf (`DOWN | d` for the
//! leaf's ancestors, reached by a pure down path of `d` hops; `v` for a shortest up-then-down
//! path of `v` hops; [`FAR`] for none), the values a full labelling (`super::label`) gives,
//! but each found on first read from its up neighbours. A repair asks about the few switches
//! whose routes it changes, and the valley search about the neighbours of the switches cut off
//! from a leaf, so neither pays for a pass over the whole tree per leaf. [`LeafLabels`] lets the
//! valley search read either kind.

use ibsm_mad::PortNum;

use super::{DOWN, Tree, value};
use crate::graph::FAR;

/// Up/down labels towards one leaf, as the valley search reads them: a full labelling (a
/// slice, as a full route has it) or [`Labels`].
pub(super) trait LeafLabels {
    /// Switch `x`'s label.
    fn of(&mut self, tree: &Tree, x: usize) -> u32;
    /// Every switch's label.
    fn all(&mut self, tree: &Tree) -> &[u32];
}

impl LeafLabels for &[u32] {
    fn of(&mut self, _: &Tree, x: usize) -> u32 {
        self.get(x).copied().unwrap_or(FAR)
    }

    fn all(&mut self, _: &Tree) -> &[u32] {
        self
    }
}

impl LeafLabels for Labels {
    fn of(&mut self, tree: &Tree, x: usize) -> u32 {
        Labels::of(self, tree, x)
    }

    fn all(&mut self, tree: &Tree) -> &[u32] {
        for x in 0..tree.len() {
            Labels::of(self, tree, x);
        }
        &self.lab
    }
}

/// Up/down labels towards one leaf, computed only where asked: ancestors (a pure down path)
/// by a breadth-first walk up from the leaf, every other switch from its up neighbours.
pub(super) struct Labels {
    leaf: usize,
    /// `DOWN | d` for ancestors, `v` for others, [`FAR`] for none; valid where `stamp` holds
    /// the current `epoch` (the switch is known).
    lab: Vec<u32>,
    /// The epoch each label was set in. Starting over for another leaf is a new epoch, not a
    /// pass over every switch: a repair starts over once per affected destination, thousands of
    /// times on a large tree, and labels only the few switches it asks about.
    stamp: Vec<u32>,
    epoch: u32,
    queue: Vec<u32>,
}

impl Labels {
    pub(super) fn new(n: usize) -> Labels {
        Labels { leaf: usize::MAX, lab: vec![FAR; n], stamp: vec![0; n], epoch: 1, queue: Vec::new() }
    }

    /// Whether `x` is labelled in this epoch (a switch past the tree counts as known, as FAR).
    fn known(&self, x: usize) -> bool {
        self.stamp.get(x).is_none_or(|&s| s == self.epoch)
    }

    fn mark(&mut self, x: usize, label: u32) {
        if let (Some(s), Some(l)) = (self.stamp.get_mut(x), self.lab.get_mut(x)) {
            *s = self.epoch;
            *l = label;
        }
    }

    /// Starts over for `leaf`: its ancestors labelled, everything else unknown.
    pub(super) fn reset(&mut self, tree: &Tree, leaf: usize) {
        if self.leaf == leaf {
            return;
        }
        self.leaf = leaf;
        self.epoch = if self.epoch == u32::MAX {
            self.stamp.fill(0);
            1
        } else {
            self.epoch + 1
        };
        self.queue.clear();
        if leaf >= tree.len() || tree.level[leaf] == FAR {
            return;
        }
        self.mark(leaf, DOWN);
        self.queue.push(leaf as u32);
        let mut head = 0;
        while let Some(&y) = self.queue.get(head) {
            head += 1;
            let d = self.lab[y as usize] + 1;
            for l in tree.up.of(y as usize) {
                let x = l.n as usize;
                if !self.known(x) {
                    self.mark(x, d);
                    self.queue.push(l.n);
                }
            }
        }
    }

    /// Switch `x`'s label: 1 + the nearest of its up neighbours for a non-ancestor.
    pub(super) fn of(&mut self, tree: &Tree, x: usize) -> u32 {
        if self.known(x) {
            return self.lab.get(x).copied().unwrap_or(FAR);
        }
        // Up neighbours are one level higher: the recursion is as deep as the tree.
        let mut best = FAR;
        for l in tree.up.of(x) {
            let v = self.of(tree, l.n as usize);
            if v != FAR {
                best = best.min(value(v));
            }
        }
        let label = if best == FAR { FAR } else { best + 1 };
        self.mark(x, label);
        label
    }

    /// Switch `x`'s shortest up/down next hops (ports); for a switch with none (stranded), its
    /// links to the labelled switch nearest the leaf.
    pub(super) fn next_hops(&mut self, tree: &Tree, x: usize, out: &mut Vec<PortNum>) {
        out.clear();
        let lx = self.of(tree, x);
        if lx & DOWN != 0 && lx != FAR {
            let want = lx - 1;
            out.extend(
                tree.down
                    .of(x)
                    .iter()
                    .filter(|l| self.lab[l.n as usize] == want && self.known(l.n as usize))
                    .map(|l| l.port),
            );
            return;
        }
        if lx != FAR {
            for l in tree.up.of(x) {
                let v = self.of(tree, l.n as usize);
                if v != FAR && value(v) + 1 == lx {
                    out.push(l.port);
                }
            }
            return;
        }
        let mut best = FAR;
        for l in tree.up.of(x).iter().chain(tree.down.of(x)) {
            let v = self.of(tree, l.n as usize);
            if v != FAR && value(v) <= best {
                if value(v) < best {
                    out.clear();
                    best = value(v);
                }
                out.push(l.port);
            }
        }
    }
}
