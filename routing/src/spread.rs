//! The shared driver of the destination-based engines (`minhop`, `updn`): label every switch for
//! each destination switch, then spread the destination's LIDs over the least-loaded of each
//! switch's next hops.
//!
//! Owns the compact adjacency ([`Adj`]), the per-switch assignment state ([`Work`]) and the
//! batch loop: destination switches are taken 64 at a time; their labellings are computed in
//! parallel (independent per destination), then every switch assigns its ports for the batch in
//! parallel (independent per switch, destinations in order). Each switch's choices depend only on
//! its own loads and the labels, so the tables do not depend on the number of threads.

use ibsm_mad::PortNum;

use crate::graph::{Dest, Indexed};
use crate::{FabricView, Lft, Routes, par};

/// One link of the compact adjacency: neighbour switch and local port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Link {
    /// Neighbour switch index.
    pub n: u32,
    /// Local port.
    pub port: PortNum,
}

/// Compressed sparse-row adjacency over `u32` switch indices.
#[derive(Debug, Clone, Default)]
pub(crate) struct Adj {
    start: Vec<u32>,
    links: Vec<Link>,
}

impl Adj {
    /// Builds from per-switch link lists produced by `f(s)`.
    pub(crate) fn build(n: usize, mut f: impl FnMut(usize, &mut Vec<Link>)) -> Adj {
        let mut start = Vec::with_capacity(n + 1);
        let mut links = Vec::new();
        for s in 0..n {
            start.push(u32::try_from(links.len()).unwrap_or(u32::MAX));
            f(s, &mut links);
        }
        start.push(u32::try_from(links.len()).unwrap_or(u32::MAX));
        Adj { start, links }
    }

    /// Number of switches.
    pub(crate) fn len(&self) -> usize {
        self.start.len().saturating_sub(1)
    }

    /// Switch `s`'s links.
    #[inline]
    pub(crate) fn of(&self, s: usize) -> &[Link] {
        match (self.start.get(s), self.start.get(s + 1)) {
            (Some(&a), Some(&b)) => self.links.get(a as usize..b as usize).unwrap_or(&[]),
            _ => &[],
        }
    }
}

/// How an engine labels switches and picks next hops.
pub(crate) trait Policy: Sync {
    /// Labels every switch for destination switch `t` (`lab` gets one entry per switch).
    fn label(&self, t: usize, lab: &mut Vec<u32>, queue: &mut Vec<u32>);
    /// The next hops of switch `x` (never `t`) under labelling `lab`, into `cands`.
    fn next_hops(&self, lab: &[u32], x: usize, cands: &mut Vec<(PortNum, u32)>);
}

/// Per-switch state while assigning ports.
pub(crate) struct Work {
    table: Lft,
    /// LIDs routed out of each port so far.
    load: Vec<u32>,
    cands: Vec<(PortNum, u32)>,
    used: Vec<u32>,
}

impl Work {
    fn new(top: u16, ports: usize) -> Work {
        Work { table: Lft::unrouted(top), load: vec![0; ports.max(1)], cands: Vec::new(), used: Vec::new() }
    }

    fn load_of(&self, p: PortNum) -> u32 {
        self.load.get(usize::from(p.0)).copied().unwrap_or(u32::MAX)
    }

    fn bump(&mut self, p: PortNum) {
        if let Some(l) = self.load.get_mut(usize::from(p.0)) {
            *l += 1;
        }
    }

    /// Routes every LID of `dests` over the least-loaded of `self.cands` (ties: lowest port);
    /// with several LIDs per port, a port's LIDs prefer neighbours its other LIDs do not use.
    fn assign(&mut self, dests: &[Dest], per_port: u16) {
        if self.cands.is_empty() {
            return;
        }
        if per_port == 1 {
            // Argmin of (load, port) one LID at a time, in levels: the candidates at the lowest
            // load, in port order, each take one LID; then the next lowest level is gathered.
            // The candidates come in port order, so no sort is needed.
            let mut block = std::mem::take(&mut self.used);
            block.clear();
            let mut next = 0;
            for d in dests {
                if next == block.len() {
                    let min = self.cands.iter().map(|&(p, _)| self.load_of(p)).min().unwrap_or(0);
                    block.clear();
                    block.extend(
                        (0..self.cands.len())
                            .filter(|&i| self.load_of(self.cands[i].0) == min)
                            .map(|i| u32::try_from(i).unwrap_or(0)),
                    );
                    next = 0;
                }
                let Some(&i) = block.get(next) else { break };
                next += 1;
                let p = self.cands[i as usize].0;
                crate::graph::set(&mut self.table, d.base, p);
                self.bump(p);
            }
            self.used = block;
            return;
        }
        for d in dests {
            self.used.clear();
            for k in 0..per_port {
                let Some(&(p, n)) =
                    self.cands.iter().min_by_key(|&&(p, n)| (self.used.contains(&n), self.load_of(p), p.0))
                else {
                    break;
                };
                self.used.push(n);
                self.bump(p);
                crate::graph::set(&mut self.table, d.base.saturating_add(k), p);
            }
        }
    }
}

/// Destinations grouped by attach switch, in switch order; within a group, the switch's own LID
/// first, then CA ports in view order.
pub(crate) fn groups(idx: &Indexed) -> Vec<(usize, Vec<Dest>)> {
    let mut by: Vec<Vec<Dest>> = vec![Vec::new(); idx.graph.len()];
    for d in &idx.dests {
        if let Some(v) = by.get_mut(d.attach) {
            v.push(*d);
        }
    }
    by.into_iter().enumerate().filter(|(_, v)| !v.is_empty()).collect()
}

/// Routes every group with `policy`. `verify(t, labels)` may reject a labelling (the error is
/// returned as is).
pub(crate) fn spread<P: Policy, E>(
    view: &FabricView,
    idx: &Indexed,
    groups: &[(usize, Vec<Dest>)],
    policy: &P,
    mut verify: impl FnMut(usize, &[u32]) -> Result<(), E>,
) -> Result<Routes, E> {
    const BATCH: usize = 64;
    let per_port = idx.per_port;
    let mut work: Vec<Work> = view.switches.iter().map(|s| Work::new(idx.top, s.ports.len())).collect();
    let mut labs: Vec<Vec<u32>> = vec![Vec::new(); BATCH];
    for batch in groups.chunks(BATCH) {
        let labs = &mut labs[..batch.len()];
        par::for_chunks(labs, 4, |off, chunk| {
            let mut queue = Vec::new();
            for (i, lab) in chunk.iter_mut().enumerate() {
                policy.label(batch[off + i].0, lab, &mut queue);
            }
        });
        for ((t, _), lab) in batch.iter().zip(labs.iter()) {
            verify(*t, lab)?;
        }
        let labs = &*labs;
        par::for_chunks(&mut work, 16, |off, chunk| {
            for (i, w) in chunk.iter_mut().enumerate() {
                let x = off + i;
                for ((t, dests), lab) in batch.iter().zip(labs) {
                    if x == *t {
                        for d in dests {
                            for k in 0..per_port {
                                crate::graph::set(&mut w.table, d.base.saturating_add(k), d.port);
                            }
                        }
                        continue;
                    }
                    policy.next_hops(lab, x, &mut w.cands);
                    w.assign(dests, per_port);
                }
            }
        });
    }
    Ok(Routes::from_tables(work.into_iter().map(|w| w.table).collect()))
}
