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

/// Whether leaves `a` and `b` have the same labels everywhere but at `a` and `b`: both ranked
/// on one level, with no down links (no switch reaches either going up) and the same up
/// neighbours in the same order. Then both have the same ancestors (above the leaf itself) at
/// the same distances, and every other switch's label, read from its up neighbours, never meets
/// `a` or `b`. The leaves of one pod of a fat tree are twins, so a repair walking the
/// destination leaves in order labels each pod's ancestors once, not once per leaf.
fn twins(tree: &Tree, a: usize, b: usize) -> bool {
    let (Some(&la), Some(&lb)) = (tree.level.get(a), tree.level.get(b)) else { return false };
    la == lb
        && la != FAR
        && tree.down.of(a).is_empty()
        && tree.down.of(b).is_empty()
        && tree.up.of(a).iter().map(|l| l.n).eq(tree.up.of(b).iter().map(|l| l.n))
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

    /// Starts over for `leaf`: its ancestors labelled, everything else unknown. After a twin
    /// leaf ([`twins`]) only the two leaves' labels change: the rest is kept.
    pub(super) fn reset(&mut self, tree: &Tree, leaf: usize) {
        if self.leaf == leaf {
            return;
        }
        if twins(tree, self.leaf, leaf) {
            // The old leaf is now labelled from its up neighbours, like any other switch.
            if let Some(s) = self.stamp.get_mut(self.leaf) {
                *s = 0;
            }
            self.leaf = leaf;
            self.mark(leaf, DOWN);
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

#[cfg(test)]
mod tests {
    use ibsm_topology::generators::{FatTree as Gen, GenSpec};

    use super::{Labels, Tree, twins};
    use crate::graph::Indexed;
    use crate::testing::{cut, generated, trunks};

    /// Labels kept across twin leaves are the labels a full labelling gives, and the next hops
    /// those of labels started afresh, at every switch, for leaves taken in index order (pods
    /// in a row, as a repair takes them) and backwards, on whole, cut and degraded trees.
    #[test]
    fn labels_kept_across_twin_leaves_equal_a_full_labelling() {
        let mut fabrics = Vec::new();
        for spec in [GenSpec::fat_tree(3, 8), GenSpec::FatTree(Gen::new(3, 8).degraded(12, 3, 11))] {
            let base = generated(&spec, 0);
            let cables = trunks(&base);
            fabrics.push(cut(&base, cables[0].0, cables[0].1));
            fabrics.push(cut(&base, cables[cables.len() / 2].0, cables[cables.len() / 2].1));
            fabrics.push(base);
        }
        let mut twin_resets = 0;
        for (k, view) in fabrics.iter().enumerate() {
            let idx = Indexed::new(view).unwrap();
            let tree = Tree::new(view, &idx).unwrap();
            let n = tree.len();
            let leaves: Vec<usize> = (0..n).filter(|&s| idx.hosts_at[s] > 0).collect();
            for order in [leaves.clone(), leaves.iter().rev().copied().collect()] {
                let mut kept = Labels::new(n);
                let (mut full, mut queue) = (Vec::new(), Vec::new());
                let (mut a, mut b) = (Vec::new(), Vec::new());
                let mut prev = usize::MAX;
                for &leaf in &order {
                    twin_resets += usize::from(twins(&tree, prev, leaf));
                    prev = leaf;
                    kept.reset(&tree, leaf);
                    let mut fresh = Labels::new(n);
                    fresh.reset(&tree, leaf);
                    super::super::label(&tree, leaf, &mut full, &mut queue, |_, _| {}, |_| {});
                    for (x, &want) in full.iter().enumerate() {
                        assert_eq!(kept.of(&tree, x), want, "fabric {k} leaf {leaf} switch {x}");
                        kept.next_hops(&tree, x, &mut a);
                        fresh.next_hops(&tree, x, &mut b);
                        assert_eq!(a, b, "fabric {k} leaf {leaf} switch {x}");
                    }
                }
            }
        }
        assert!(twin_resets > 0, "some leaves are twins");
    }
}
