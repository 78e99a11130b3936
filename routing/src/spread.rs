//! The shared driver of the destination-based engines (`minhop`, `updn`): label every switch for
//! each destination switch, then spread the destination's LIDs over the least-loaded of each
//! switch's next hops.
//!
//! Owns the compact adjacency ([`Adj`]), the per-switch assignment state ([`Work`]) and the
//! batch loop: destination switches are taken 64 at a time; their labellings are computed in
//! parallel (independent per destination), then every switch assigns its ports for the batch in
//! parallel (independent per switch, destinations in order). Each switch's choices depend only on
//! its own loads and the labels, so the tables do not depend on the number of threads.
//!
//! Also owns OpenSM's balancing options ([`Tuning`]): destinations routed first in a given order
//! (`guid_routing_order_file`, [`ordered`]), port shifting (the least-loaded port searched from a
//! rotating start, so that consecutive LIDs do not line up on the same port numbers), and port
//! scattering (a random port among the least loaded, from a seed: per switch, so the tables
//! still do not depend on the number of threads).

use ibsm_mad::{Guid, PortNum};

use crate::graph::{Dest, Indexed};
use crate::{FabricView, Lft, Routes, Tuning, par};

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
    /// The switch's own random stream (port scattering).
    rng: u64,
}

impl Work {
    fn new(top: u16, ports: usize) -> Work {
        Work { table: Lft::unrouted(top), load: vec![0; ports.max(1)], cands: Vec::new(), used: Vec::new(), rng: 0 }
    }

    /// The next number of the switch's stream (splitmix64).
    fn next_random(&mut self) -> u64 {
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// The index in `cands` of the base LID's port under `tuning`: a random one of the least
    /// loaded (scattering), else the first least-loaded one from the rotating start
    /// `(total load / candidates) mod candidates` (shifting).
    fn pick_tuned(&mut self, tuning: &Tuning) -> Option<usize> {
        let n = self.cands.len();
        let min = self.cands.iter().map(|&(p, _)| self.load_of(p)).min()?;
        if tuning.scatter_ports != 0 {
            let at_min = self.cands.iter().filter(|&&(p, _)| self.load_of(p) == min).count();
            let r = usize::try_from(self.next_random() % at_min.max(1) as u64).unwrap_or(0);
            return self.cands.iter().enumerate().filter(|(_, (p, _))| self.load_of(*p) == min).nth(r).map(|(i, _)| i);
        }
        let total: u64 = self.cands.iter().map(|&(p, _)| u64::from(self.load_of(p))).sum();
        let start = usize::try_from(total / n as u64 % n as u64).unwrap_or(0);
        (0..n).map(|i| (start + i) % n).find(|&i| self.load_of(self.cands[i].0) == min)
    }

    /// As [`Work::assign`], with port shifting or scattering for each base LID (further LIDs of
    /// a port prefer neighbours its other LIDs do not use, as without them).
    fn assign_tuned(&mut self, dests: &[Dest], per_port: u16, tuning: &Tuning) {
        for d in dests {
            self.used.clear();
            for k in 0..per_port {
                let pick = if k == 0 {
                    self.pick_tuned(tuning).map(|i| self.cands[i])
                } else {
                    self.cands.iter().copied().min_by_key(|&(p, n)| (self.used.contains(&n), self.load_of(p), p.0))
                };
                let Some((p, n)) = pick else { break };
                self.used.push(n);
                self.bump(p);
                crate::graph::set(&mut self.table, d.base.saturating_add(k), p);
            }
        }
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

/// `groups` with the destinations `tuning.order` names first, in its order (consecutive ones on
/// one switch share a group), then the others as they were; unchanged without an order.
pub(crate) fn ordered(view: &FabricView, groups: Vec<(usize, Vec<Dest>)>, tuning: &Tuning) -> Vec<(usize, Vec<Dest>)> {
    let Some(order) = tuning.order.as_deref().filter(|o| !o.is_empty()) else { return groups };
    let mut rank: Vec<((Guid, PortNum), usize)> = order.iter().enumerate().map(|(i, &k)| (k, i)).collect();
    rank.sort_unstable();
    rank.dedup_by_key(|r| r.0);
    let key = |d: &Dest| match d.ca.and_then(|c| view.cas.get(c)) {
        Some(ca) => ca.ports.iter().find(|p| p.lid.0 == d.base).map(|p| (ca.guid, p.num)),
        None => view.switches.get(d.attach).map(|s| (s.guid, PortNum(0))),
    };
    let pos = |d: &Dest| key(d).and_then(|k| rank.binary_search_by_key(&k, |r| r.0).ok().map(|i| rank[i].1));
    let mut first: Vec<(usize, Dest)> = Vec::new();
    let mut rest = Vec::with_capacity(groups.len());
    for (t, dests) in groups {
        let (listed, others): (Vec<Dest>, Vec<Dest>) = dests.into_iter().partition(|d| pos(d).is_some());
        first.extend(listed.into_iter().filter_map(|d| pos(&d).map(|p| (p, d))));
        if !others.is_empty() {
            rest.push((t, others));
        }
    }
    first.sort_by_key(|f| f.0);
    let mut out: Vec<(usize, Vec<Dest>)> = Vec::new();
    for (_, d) in first {
        match out.last_mut() {
            Some((t, v)) if *t == d.attach => v.push(d),
            _ => out.push((d.attach, vec![d])),
        }
    }
    out.extend(rest);
    out
}

/// Routes every group with `policy`. `verify(t, labels)` may reject a labelling (the error is
/// returned as is).
#[allow(dead_code, reason = "the untuned entry, for engines without OpenSM's balancing options")]
pub(crate) fn spread<P: Policy, E>(
    view: &FabricView,
    idx: &Indexed,
    groups: &[(usize, Vec<Dest>)],
    policy: &P,
    verify: impl FnMut(usize, &[u32]) -> Result<(), E>,
) -> Result<Routes, E> {
    spread_tuned(view, idx, (groups, &Tuning::default()), policy, verify)
}

/// As [`spread`], balancing with `tuning`'s port shifting or scattering (the groups' order is
/// the caller's: see [`ordered`]).
pub(crate) fn spread_tuned<P: Policy, E>(
    view: &FabricView,
    idx: &Indexed,
    (groups, tuning): (&[(usize, Vec<Dest>)], &Tuning),
    policy: &P,
    mut verify: impl FnMut(usize, &[u32]) -> Result<(), E>,
) -> Result<Routes, E> {
    const BATCH: usize = 64;
    let per_port = idx.per_port;
    let tuned = tuning.port_shifting || tuning.scatter_ports != 0;
    let mut work: Vec<Work> = view.switches.iter().map(|s| Work::new(idx.top, s.ports.len())).collect();
    for (x, w) in work.iter_mut().enumerate() {
        w.rng = tuning.scatter_ports ^ (x as u64 + 1).wrapping_mul(0xd6e8_feb8_6659_fd93);
    }
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
                    if tuned {
                        w.assign_tuned(dests, per_port, tuning);
                    } else {
                        w.assign(dests, per_port);
                    }
                }
            }
        });
    }
    Ok(Routes::from_tables(work.into_iter().map(|w| w.table).collect()))
}
