//! Nue's destination subsets: one per layer, each a compact region of the fabric.
//!
//! Per connected component, a central switch is found by a double sweep (the middle of a
//! longest shortest path found from the component's first switch), and the switches are taken
//! in the depth-first order of a breadth-first tree from it, so a subtree's switches are
//! contiguous. That order, components one after another, is cut into as many runs as there are
//! layers, of about equal LIDs. Owns only the split; deterministic, never panics.

#![allow(clippy::many_single_char_names)] // graph code: x, y switches, c channels, t the destination

use std::collections::VecDeque;

use crate::graph::{FAR, SwitchGraph};

/// The layer of each switch's destinations, `0..layers`, from the LIDs each switch holds.
pub(super) fn split(g: &SwitchGraph, lids_at: &[u64], layers: u8) -> Vec<u8> {
    let n = g.len();
    let order = compact_order(g);
    let total: u64 = lids_at.iter().sum();
    let k = u64::from(layers.max(1));
    let mut lane = vec![0u8; n];
    let mut before = 0u64;
    for &s in &order {
        let w = lids_at.get(s).copied().unwrap_or(0);
        // The run holding the middle of this switch's LIDs.
        let mid = before.saturating_mul(2).saturating_add(w);
        let l = if total == 0 { 0 } else { (mid.saturating_mul(k) / total.saturating_mul(2)).min(k - 1) };
        lane[s] = u8::try_from(l).unwrap_or(0);
        before = before.saturating_add(w);
    }
    lane
}

/// Every switch once: per component (in order of their first switch), the depth-first order
/// of a breadth-first tree from the component's centre.
fn compact_order(g: &SwitchGraph) -> Vec<usize> {
    let n = g.len();
    let mut done = vec![false; n];
    let mut order = Vec::with_capacity(n);
    let mut dist = Vec::new();
    let mut queue = VecDeque::new();
    let mut parent = vec![usize::MAX; n];
    for first in 0..n {
        if done[first] {
            continue;
        }
        let centre = centre(g, first, &mut dist, &mut queue, &mut parent);
        // Breadth-first tree from the centre, children in discovery order.
        let mut members = vec![centre];
        done[centre] = true;
        let mut kids: Vec<Vec<usize>> = Vec::new();
        let mut slot = vec![usize::MAX; n];
        slot[centre] = 0;
        kids.push(Vec::new());
        let mut i = 0;
        while let Some(&y) = members.get(i) {
            i += 1;
            for &(_, x, _) in g.links(y) {
                if !done[x] {
                    done[x] = true;
                    slot[x] = kids.len();
                    kids.push(Vec::new());
                    kids[slot[y]].push(x);
                    members.push(x);
                }
            }
        }
        let mut stack = vec![centre];
        while let Some(y) = stack.pop() {
            order.push(y);
            stack.extend(kids[slot[y]].iter().rev());
        }
    }
    order
}

/// The middle switch of a longest shortest path found by a double sweep from `first`.
fn centre(
    g: &SwitchGraph,
    first: usize,
    dist: &mut Vec<u32>,
    queue: &mut VecDeque<usize>,
    parent: &mut [usize],
) -> usize {
    g.bfs(&[first], dist, queue);
    let far = farthest(dist, first);
    // From `far`, with parents, to the farthest again.
    dist.clear();
    dist.resize(g.len(), FAR);
    dist[far] = 0;
    parent[far] = usize::MAX;
    queue.clear();
    queue.push_back(far);
    while let Some(y) = queue.pop_front() {
        for &(_, x, _) in g.links(y) {
            if dist[x] == FAR {
                dist[x] = dist[y] + 1;
                parent[x] = y;
                queue.push_back(x);
            }
        }
    }
    let end = farthest(dist, far);
    let mut at = end;
    for _ in 0..dist[end] / 2 {
        if parent[at] == usize::MAX {
            break;
        }
        at = parent[at];
    }
    at
}

/// The switch of greatest finite distance (the lowest index on a tie; `fallback` if none).
fn farthest(dist: &[u32], fallback: usize) -> usize {
    let mut best = fallback;
    for (s, &d) in dist.iter().enumerate() {
        if d != FAR && d > dist.get(best).copied().unwrap_or(0) {
            best = s;
        }
    }
    best
}
