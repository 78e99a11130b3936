//! Fat-tree routing: contention-free for shift permutations on complete fat trees, balanced on
//! degraded, rail-optimized and oversubscribed ones, and explicit about what is not a fat tree.
//!
//! **Ranks.** Levels are counted from the CA level: a switch with CAs is a leaf (level 0), and
//! every other switch's level is its hop distance to the nearest leaf. The view is a fat tree when
//! every switch-to-switch link joins two adjacent levels and every leaf can reach every other leaf
//! of its component going up then down. Otherwise [`FtreeError::NotFatTree`] says why
//! ([`NotFatTree`]); the engine never falls back to something else silently.
//!
//! **CA LIDs.** Leaves are taken in the order of their first CA in the view, and each leaf's CA
//! ports in view order, so host `i` of the view is the `i`-th destination. For each destination
//! LID, as in OpenSM's ftree:
//! 1. from its leaf, go up choosing each time the up link that carries the fewest destinations
//!    downwards so far (ties: lowest port); every switch on that chain routes the LID down the
//!    link it was reached by;
//! 2. from each chain switch, bottom first, walk down: every switch reached that is not an
//!    ancestor of the leaf routes the LID up to the switch it was reached from, if that is a
//!    shortest up/down path;
//! 3. every remaining switch routes it along a shortest up/down path (ancestors of the leaf down,
//!    others up) over the port this step has given the fewest LIDs so far (ties: lowest port),
//!    a level of equally loaded ports at a time. A switch with no up/down path at all (a top
//!    switch cut off from the leaf's subtree in a degraded tree) routes along a shortest path
//!    into the routed region: only its own traffic goes that way, since no routed switch
//!    forwards into it.
//!
//! On a complete tree this is the classic D-mod-K assignment: the hosts of one leaf leave over
//! distinct up links, each upper link carries one destination's traffic per shift, and the
//! maximum number of routes on any directed link in any shift permutation is 1 (oversubscribed
//! trees: the oversubscription ratio). CA-to-CA routes only ever go up then down, so they have no
//! credit loop (check with [`crate::check::CdgTraffic::CaToCa`]).
//!
//! **Switch LIDs** are always routed from every switch. A leaf's LID is routed like its CAs'
//! (step 3 only). Other switches' LIDs follow shortest paths (a breadth-first tree from the
//! switch), as OpenSM's ftree routes them; on a complete tree these are up/down paths too, but a
//! top switch reaching another top switch must go down and up again, so switch-to-switch
//! management routes can close a cycle in the full channel dependency graph.
//!
//! Cost: one up/down labelling per leaf, a walk per CA LID over its chain and the switches below
//! it, and one breadth-first search per non-leaf switch. Labellings, the walks of step 2 (after
//! the chains, which are sequential, are chosen), the per-switch step 3 and the switch LIDs run on
//! all cores; the result does not depend on their number.

use ibsm_mad::{Guid, PortNum};

use crate::graph::{Dest, FAR, Indexed};
use crate::{Engine, FabricView, Lft, Routes, RoutingError, par};

/// The fat-tree engine.
#[derive(Debug, Clone, Copy, Default)]
pub struct FatTree;

impl FatTree {
    /// Registry name.
    pub const NAME: &'static str = "ftree";
}

/// Why a view is not a fat tree.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotFatTree {
    /// No switch has a CA, so there is no leaf level to rank from.
    #[error("no switch has a CA attached, so there is no leaf level")]
    NoLeaves,
    /// Two linked switches are on the same level.
    #[error("switches {a} and {b} are linked but both on level {level} (levels count hops from the CA level)")]
    SameLevelLink {
        /// One end.
        a: Guid,
        /// The other end.
        b: Guid,
        /// Their level.
        level: u32,
    },
    /// A leaf cannot reach another leaf of its component going up then down.
    #[error("leaf switch {from} has no up-then-down path to leaf switch {to}")]
    NoUpDownPath {
        /// The leaf without a path.
        from: Guid,
        /// The leaf it cannot reach.
        to: Guid,
    },
}

/// Why [`FatTree::route_typed`] failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FtreeError {
    /// The view is inconsistent (same errors as every engine).
    #[error(transparent)]
    View(#[from] RoutingError),
    /// The view is consistent but not a fat tree.
    #[error("not a fat tree: {0}")]
    NotFatTree(#[from] NotFatTree),
}

impl From<FtreeError> for RoutingError {
    fn from(e: FtreeError) -> RoutingError {
        match e {
            FtreeError::View(e) => e,
            e @ FtreeError::NotFatTree(_) => RoutingError::Declined { engine: FatTree::NAME, reason: e.to_string() },
        }
    }
}

impl Engine for FatTree {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn route(&self, view: &FabricView) -> Result<Routes, RoutingError> {
        self.route_typed(view).map_err(RoutingError::from)
    }
}

/// A link to an adjacent level: neighbour, local port, the neighbour's port.
#[derive(Debug, Clone, Copy)]
struct Link {
    n: u32,
    port: PortNum,
    rport: PortNum,
}

/// Compressed adjacency of one direction (up or down).
#[derive(Debug, Default)]
struct Csr {
    start: Vec<u32>,
    links: Vec<Link>,
}

impl Csr {
    fn of(&self, s: usize) -> &[Link] {
        self.range(s).and_then(|r| self.links.get(r)).unwrap_or(&[])
    }
    fn range(&self, s: usize) -> Option<std::ops::Range<usize>> {
        Some(*self.start.get(s)? as usize..*self.start.get(s + 1)? as usize)
    }
}

/// The ranked tree.
struct Tree {
    level: Vec<u32>,
    up: Csr,
    /// The local port of each of `up.links`.
    up_ports: Vec<PortNum>,
    down: Csr,
    /// Every switch-to-switch link, ranked or not.
    all: Csr,
    /// Switches by level, highest first (unranked switches left out).
    by_level: Vec<u32>,
    comp: Vec<usize>,
}

/// Label bit: an ancestor of the destination (a pure down path exists).
const DOWN: u32 = 1 << 31;

impl Tree {
    fn new(view: &FabricView, idx: &Indexed) -> Result<Tree, NotFatTree> {
        let leafy: Vec<bool> = idx.hosts_at.iter().map(|&h| h > 0).collect();
        Tree::ranked(view, idx, &leafy)
    }

    /// The tree ranked from the switches marked in `leafy` (those with compute nodes).
    fn ranked(view: &FabricView, idx: &Indexed, leafy: &[bool]) -> Result<Tree, NotFatTree> {
        let g = &idx.graph;
        let n = g.len();
        let leaves: Vec<usize> = (0..n).filter(|&s| leafy.get(s).copied().unwrap_or(false)).collect();
        if leaves.is_empty() {
            return Err(NotFatTree::NoLeaves);
        }
        let mut level = Vec::new();
        g.bfs(&leaves, &mut level, &mut std::collections::VecDeque::new());
        let guid = |s: usize| view.switches.get(s).map(|s| s.guid).unwrap_or_default();
        let mut up = Csr::default();
        let mut down = Csr::default();
        let mut all = Csr::default();
        for s in 0..n {
            up.start.push(up.links.len() as u32);
            down.start.push(down.links.len() as u32);
            all.start.push(all.links.len() as u32);
            for &(port, nb, rport) in g.links(s) {
                let link = Link { n: nb as u32, port, rport };
                all.links.push(link);
                if level[s] == FAR {
                    continue;
                }
                if level[nb] == level[s] {
                    return Err(NotFatTree::SameLevelLink { a: guid(s), b: guid(nb), level: level[s] });
                }
                if level[nb] > level[s] {
                    up.links.push(link);
                } else {
                    down.links.push(link);
                }
            }
        }
        up.start.push(up.links.len() as u32);
        down.start.push(down.links.len() as u32);
        all.start.push(all.links.len() as u32);
        let mut by_level: Vec<u32> = (0..n as u32).filter(|&s| level[s as usize] != FAR).collect();
        by_level.sort_by_key(|&s| std::cmp::Reverse(level[s as usize]));
        let (comp, _) = g.components();
        let up_ports = up.links.iter().map(|l| l.port).collect();
        Ok(Tree { level, up, up_ports, down, all, by_level, comp })
    }

    fn len(&self) -> usize {
        self.level.len()
    }
}

fn value(label: u32) -> u32 {
    label & !DOWN
}

impl FatTree {
    /// Routes `view`, or says why it is not a fat tree.
    pub fn route_typed(&self, view: &FabricView) -> Result<Routes, FtreeError> {
        route_classed(view, None).map(|(r, _)| r)
    }
}

/// Routes `view` with every CA port a compute node (`hosts` `None`) or as `hosts` classes them
/// ([`hosts`]); also returns the top-level switches of the ranked tree, by GUID.
fn route_classed(view: &FabricView, hosts: Option<&hosts::Hosts>) -> Result<(Routes, Vec<Guid>), FtreeError> {
    let idx = Indexed::new(view)?;
    let compute: Vec<bool> =
        idx.dests.iter().map(|d| d.ca.is_some() && hosts.is_none_or(|h| h.is_compute(view, d))).collect();
    let mut leafy = vec![false; idx.graph.len()];
    for (d, _) in idx.dests.iter().zip(&compute).filter(|(_, c)| **c) {
        if let Some(l) = leafy.get_mut(d.attach) {
            *l = true;
        }
    }
    let tree = Tree::ranked(view, &idx, &leafy)?;
    // Fresh tables fault their pages in on first touch: on all cores.
    let mut tables: Vec<Lft> = view.switches.iter().map(|_| Lft::default()).collect();
    par::for_chunks(&mut tables, 64, |_, chunk| chunk.fill_with(|| Lft::unrouted(idx.top)));
    let tops = valley::Tops::new(&tree);
    let valleys = route_cas(view, &idx, (&tree, &tops), (&compute, &leafy), &mut tables)?;
    route_switches(&idx, (&tree, &tops), (&valley::Valleys::new(&tree, &tops, &valleys), &leafy), &mut tables);
    Ok((Routes::from_tables(tables), roots::top_level(view, &tree)))
}

/// Up/down labels towards switch `t` into `lab`: `DOWN | d` for `t` and its ancestors (a pure
/// down path of `d` hops), `v` for a shortest up-then-down path of `v` hops, else [`FAR`].
/// `pair(x, port)` hears each ancestor's down ports towards `t` (in breadth-first order) and each
/// other switch's shortest up ports, unless all its up links are shortest: then `all_up(x)`.
fn label(
    tree: &Tree,
    t: usize,
    lab: &mut Vec<u32>,
    queue: &mut Vec<u32>,
    mut pair: impl FnMut(u32, PortNum),
    mut all_up: impl FnMut(usize),
) {
    lab.clear();
    lab.resize(tree.len(), FAR);
    queue.clear();
    if t >= tree.len() || tree.level[t] == FAR {
        return;
    }
    // Ancestors, breadth-first up from `t`; each records the links it can go down.
    lab[t] = DOWN;
    queue.push(t as u32);
    let mut head = 0;
    while let Some(&y) = queue.get(head) {
        head += 1;
        let d = lab[y as usize] + 1;
        for l in tree.up.of(y as usize) {
            let x = l.n as usize;
            if lab[x] == FAR {
                lab[x] = d;
                queue.push(l.n);
            }
            if lab[x] == d {
                pair(l.n, l.rport);
            }
        }
    }
    // Everything else, top level first: up to the nearest of its up neighbours.
    for &x in &tree.by_level {
        let x = x as usize;
        if lab[x] != FAR {
            continue;
        }
        let ups = tree.up.of(x);
        // The nearest up neighbours' distance, and how many up neighbours are that near.
        let (mut min, mut near) = (FAR, 0);
        for l in ups {
            let v = lab[l.n as usize];
            if v == FAR {
                continue;
            }
            let v = value(v);
            if v < min {
                (min, near) = (v, 1);
            } else if v == min {
                near += 1;
            }
        }
        if near == 0 {
            continue;
        }
        lab[x] = min + 1;
        if near == ups.len() {
            all_up(x);
        } else {
            for l in ups {
                let v = lab[l.n as usize];
                if v != FAR && value(v) == min {
                    pair(x as u32, l.port);
                }
            }
        }
    }
}

/// Marks a switch whose shortest up/down next hops are all its up links.
const ALL_UP: u32 = u32::MAX;

/// What one destination leaf needs: up/down labels, and every switch's shortest up/down next
/// hops (or its single stranded route).
#[derive(Default)]
struct LeafPlan {
    /// `DOWN | d` for the leaf and its ancestors (a pure down path of `d` hops), `v` for a
    /// shortest up-then-down path of `v` hops, else [`FAR`].
    lab: Vec<u32>,
    /// Per switch, `(start, len)` into `hops`, or `len` = [`ALL_UP`].
    span: Vec<(u32, u32)>,
    hops: Vec<PortNum>,
    pairs: Vec<(u32, PortNum)>,
    /// The valley switch of the switches cut off from this leaf, if one was chosen
    /// ([`valley::Strand::routes`]).
    valley: Option<u32>,
}

impl LeafPlan {
    fn build(&mut self, tree: &Tree, leaf: usize, queue: &mut Vec<u32>, strand: &mut valley::Strand<'_>) {
        let n = tree.len();
        self.span.clear();
        self.span.resize(n, (0, 0));
        self.pairs.clear();
        let (span, pairs) = (&mut self.span, &mut self.pairs);
        label(tree, leaf, &mut self.lab, queue, |x, p| pairs.push((x, p)), |x| span[x].1 = ALL_UP);
        if self.lab.get(leaf).is_none_or(|&l| l == FAR) {
            return;
        }
        self.valley = strand.routes(tree, leaf, &mut self.lab.as_slice());
        self.pairs.extend_from_slice(&strand.out);
        // Counting sort of the pairs by switch, keeping their order.
        for &(x, _) in &self.pairs {
            let sp = &mut self.span[x as usize];
            if sp.1 != ALL_UP {
                sp.1 += 1;
            }
        }
        let mut at = 0u32;
        for sp in &mut self.span {
            if sp.1 != ALL_UP {
                sp.0 = at;
                at += sp.1;
                sp.1 = 0;
            }
        }
        self.hops.clear();
        self.hops.resize(at as usize, PortNum(0));
        for &(x, p) in &self.pairs {
            let sp = &mut self.span[x as usize];
            if sp.1 == ALL_UP {
                continue;
            }
            if let Some(h) = self.hops.get_mut((sp.0 + sp.1) as usize) {
                *h = p;
            }
            sp.1 += 1;
        }
    }

    /// Switch `x`'s shortest up/down next hops (or its stranded route), in port order for
    /// all-up switches.
    fn candidates<'a>(&'a self, tree: &'a Tree, x: usize) -> &'a [PortNum] {
        let (start, len) = self.span.get(x).copied().unwrap_or((0, 0));
        if len == ALL_UP {
            tree.up.range(x).and_then(|r| tree.up_ports.get(r)).unwrap_or(&[])
        } else {
            self.hops.get(start as usize..(start + len) as usize).unwrap_or(&[])
        }
    }
}

/// CA LIDs, grouped by leaf (leaves in order of their first CA), up to 64 leaves at a time: plans
/// in parallel; the chains in order; the subtrees below them in parallel, one LID per row of a
/// LID-major scratch (a LID's writes land in one row instead of one cache line in every table);
/// then every switch in parallel takes its column of the rows and routes the rest.
///
/// The result does not depend on the batch boundaries: the chains depend only on earlier chains,
/// a switch's step 3 only on its own earlier choices, and each LID is written by its own leaf's
/// steps only.
fn route_cas(
    view: &FabricView,
    idx: &Indexed,
    (tree, tops): (&Tree, &valley::Tops),
    (compute, leafy): (&[bool], &[bool]),
    tables: &mut [Lft],
) -> Result<Vec<Option<u32>>, NotFatTree> {
    const BATCH: usize = 64;
    /// Bytes of LID-major scratch per batch (a batch has at least one leaf, whatever its size).
    const SCRATCH: usize = 16 << 20;
    let n = tree.len();
    // Two passes: the compute nodes, then the other CA ports (I/O nodes), so that the others
    // change nothing of the compute nodes' routes and balance.
    let mut passes: Vec<(Vec<Vec<Dest>>, Vec<usize>)> = Vec::with_capacity(2);
    for cn in [true, false] {
        let mut by_leaf: Vec<Vec<Dest>> = vec![Vec::new(); n];
        let mut leaf_order = Vec::new();
        for (d, _) in idx.dests.iter().zip(compute).filter(|(d, c)| d.ca.is_some() && **c == cn) {
            if by_leaf[d.attach].is_empty() {
                leaf_order.push(d.attach);
            }
            by_leaf[d.attach].push(*d);
        }
        if cn {
            // A leaf's own LID goes with its CAs (after them), without a chain of its own.
            for d in idx.dests.iter().filter(|d| d.ca.is_none()) {
                if let Some(v) = by_leaf.get_mut(d.attach)
                    && !v.is_empty()
                {
                    v.push(*d);
                }
            }
        }
        passes.push((by_leaf, leaf_order));
    }
    let leaves: Vec<usize> = (0..n).filter(|&s| leafy.get(s).copied().unwrap_or(false)).collect();
    let guid = |s: usize| view.switches.get(s).map(|s| s.guid).unwrap_or_default();
    let per_port = usize::from(idx.per_port);
    let max_rows = (SCRATCH / n.max(1)).max(1);
    let mut chains = Chains { down_load: vec![0; tree.up.links.len()], jobs: Vec::new(), links: Vec::new() };
    let most = passes.iter().map(|p| p.1.len()).max().unwrap_or(0);
    let mut plans: Vec<LeafPlan> = (0..BATCH.min(most)).map(|_| LeafPlan::default()).collect();
    let mut rows: Vec<PortNum> = Vec::new();
    let mut slots: Vec<Slot> = tables
        .iter_mut()
        .zip(&view.switches)
        .map(|(t, sw)| Slot {
            table: std::mem::take(t.entries_mut()),
            load: vec![0; sw.ports.len().max(1)],
            block: Vec::new(),
        })
        .collect();
    let mut valleys = vec![None; n];
    for (pass, (by_leaf, leaf_order)) in passes.iter().enumerate() {
        let mut rest = &leaf_order[..];
        while !rest.is_empty() {
            let mut take = 0;
            let mut m = 0;
            while let Some(&leaf) = rest.get(take)
                && take < BATCH
            {
                let r = by_leaf[leaf].len() * per_port;
                if take > 0 && m + r > max_rows {
                    break;
                }
                m += r;
                take += 1;
            }
            let (batch, more) = rest.split_at(take);
            rest = more;
            let plans = &mut plans[..batch.len()];
            par::for_chunks(plans, 2, |off, chunk| {
                let mut queue = Vec::new();
                let mut strand = valley::Strand::new(tops);
                for (i, plan) in chunk.iter_mut().enumerate() {
                    plan.build(tree, batch[off + i], &mut queue, &mut strand);
                }
            });
            for (&leaf, plan) in batch.iter().zip(plans.iter()) {
                if pass == 0 {
                    valleys[leaf] = plan.valley;
                }
                if let Some(&bad) = leaves.iter().find(|&&x| tree.comp[x] == tree.comp[leaf] && plan.lab[x] == FAR) {
                    for (t, slot) in tables.iter_mut().zip(slots.iter_mut()) {
                        *t = Lft::from(std::mem::take(&mut slot.table));
                    }
                    return Err(NotFatTree::NoUpDownPath { from: guid(bad), to: guid(leaf) });
                }
            }
            // 1, in destination order; then 2, a row per LID.
            chains.jobs.clear();
            chains.links.clear();
            for (b, &leaf) in batch.iter().enumerate() {
                for d in &by_leaf[leaf] {
                    for k in 0..idx.per_port {
                        chains.up(tree, b, leaf, d, d.base.saturating_add(k));
                    }
                }
            }
            // Cleared row by row in the walks, in parallel.
            rows.resize(chains.jobs.len() * n, Lft::UNROUTED);
            let step = Batch { leaves: batch, plans, by_leaf, per_port: idx.per_port, n };
            step.walk(tree, &chains, idx.top, &mut rows);
            // 3. Every entry still unrouted: the least-loaded of the shortest up/down ports.
            step.fill(tree, &chains.jobs, &rows, &mut slots);
        }
    }
    for (t, slot) in tables.iter_mut().zip(slots) {
        *t = Lft::from(slot.table);
    }
    Ok(valleys)
}

/// One batch of leaves with their plans, for steps 2 and 3.
struct Batch<'a> {
    leaves: &'a [usize],
    plans: &'a [LeafPlan],
    by_leaf: &'a [Vec<Dest>],
    per_port: u16,
    /// Switches, the length of a row.
    n: usize,
}

impl Batch<'_> {
    /// Step 2 for every LID of the batch (`chains.jobs`), each into its row of `rows` (cleared
    /// first).
    fn walk(&self, tree: &Tree, chains: &Chains, top: u16, rows: &mut [PortNum]) {
        let n = self.n;
        let mut row_refs: Vec<&mut [PortNum]> = rows.chunks_mut(n.max(1)).collect();
        par::for_chunks(&mut row_refs, 64, |off, chunk| {
            let mut walk = Walk { stamp: vec![u32::MAX; n], now: 0, queue: Vec::new() };
            for (i, row) in chunk.iter_mut().enumerate() {
                row.fill(Lft::UNROUTED);
                if let Some(job) = chains.jobs.get(off + i)
                    && job.lid <= top
                    && let Some(plan) = self.plans.get(job.plan as usize)
                {
                    walk.down(tree, &plan.lab, job, &chains.links, row);
                }
            }
        });
    }

    /// Step 3 for every switch: a block of switches leaf by leaf, so that the rows of one leaf's
    /// LIDs are read once for the whole block.
    fn fill(&self, tree: &Tree, jobs: &[Job], rows: &[PortNum], slots: &mut [Slot]) {
        par::for_chunks(slots, 16, |off, chunk| {
            const BLOCK: usize = 64;
            for (bi, block) in chunk.chunks_mut(BLOCK).enumerate() {
                let x0 = off + bi * BLOCK;
                let mut j0 = 0;
                for (&leaf, plan) in self.leaves.iter().zip(self.plans) {
                    let j1 = j0 + self.by_leaf[leaf].len() * usize::from(self.per_port);
                    let jobs = jobs.get(j0..j1).unwrap_or(&[]);
                    for (i, slot) in block.iter_mut().enumerate() {
                        let col = rows.get(j0 * self.n + x0 + i..).unwrap_or(&[]).iter().step_by(self.n.max(1));
                        slot.fill(tree, plan, x0 + i, jobs, col);
                    }
                    j0 = j1;
                }
            }
        });
    }
}

/// One LID of a batch: its plan, its leaf, the leaf's port to it, and (for a CA LID) its chain.
struct Job {
    plan: u32,
    leaf: u32,
    lid: u16,
    port: PortNum,
    /// `links[start..start + len]` of [`Chains`]: the chain, bottom first.
    start: u32,
    len: u32,
}

/// Step 1 for one LID at a time, in destination order.
struct Chains {
    /// Destinations routed down each up link so far, aligned with `tree.up.links`.
    down_load: Vec<u32>,
    jobs: Vec<Job>,
    /// Chain switches and the port each routes the LID down.
    links: Vec<(u32, PortNum)>,
}

impl Chains {
    /// Records `lid` of `d` (on `leaf`, plan `plan`) and, for a CA LID, its chain up from the
    /// leaf: each step over the up link with the fewest destinations routed down it so far (ties:
    /// lowest port).
    fn up(&mut self, tree: &Tree, plan: usize, leaf: usize, d: &Dest, lid: u16) {
        let start = self.links.len();
        if d.ca.is_some() {
            let mut x = leaf;
            while let Some(i) =
                tree.up.range(x).and_then(|r| r.min_by_key(|&i| (self.down_load[i], tree.up.links[i].port.0)))
            {
                self.down_load[i] += 1;
                let l = tree.up.links[i];
                x = l.n as usize;
                self.links.push((l.n, l.rport));
            }
        }
        self.jobs.push(Job {
            plan: plan as u32,
            leaf: leaf as u32,
            lid,
            port: d.port,
            start: start as u32,
            len: (self.links.len() - start) as u32,
        });
    }
}

/// Step 2 for one LID at a time, into its row.
struct Walk {
    /// `stamp[x] == now`: switch `x` already routes the current LID.
    stamp: Vec<u32>,
    now: u32,
    queue: Vec<u32>,
}

impl Walk {
    /// Routes `job`'s LID on its leaf and chain, then down from each chain switch, bottom first:
    /// non-ancestors one hop farther than the switch they were reached from route up to it.
    fn down(&mut self, tree: &Tree, lab: &[u32], job: &Job, links: &[(u32, PortNum)], row: &mut [PortNum]) {
        self.now = self.now.wrapping_add(1);
        let now = self.now;
        let leaf = job.leaf as usize;
        if let Some(e) = row.get_mut(leaf) {
            *e = job.port;
        }
        self.stamp[leaf] = now;
        let chain = links.get(job.start as usize..(job.start + job.len) as usize).unwrap_or(&[]);
        for &(x, p) in chain {
            if let Some(e) = row.get_mut(x as usize) {
                *e = p;
            }
            self.stamp[x as usize] = now;
        }
        for &(top, _) in chain {
            self.queue.clear();
            self.queue.push(top);
            let mut head = 0;
            while let Some(&y) = self.queue.get(head) {
                head += 1;
                let dy = value(lab[y as usize]);
                for l in tree.down.of(y as usize) {
                    let z = l.n as usize;
                    if self.stamp[z] != now && lab[z] & DOWN == 0 && lab[z] == dy + 1 {
                        if let Some(e) = row.get_mut(z) {
                            *e = l.rport;
                        }
                        self.stamp[z] = now;
                        self.queue.push(l.n);
                    }
                }
            }
        }
    }
}

/// One switch's table while the CA LIDs are routed, with its per-port LID counts. The table
/// is held flat (its entries, written in place: a write per CA LID and switch, 80 M at
/// k = 48, where a write through [`Lft`]'s shared-block check cost 12 % more instructions).
struct Slot {
    table: Vec<PortNum>,
    load: Vec<u32>,
    block: Vec<PortNum>,
}

impl Slot {
    fn load(&self, p: PortNum) -> u32 {
        self.load.get(usize::from(p.0)).copied().unwrap_or(u32::MAX)
    }

    /// Writes `port` for `lid`, if the LID is in the table.
    fn set(&mut self, lid: u16, port: PortNum) {
        if let Some(e) = self.table.get_mut(usize::from(lid)) {
            *e = port;
        }
    }

    fn bump(&mut self, p: PortNum) {
        if let Some(l) = self.load.get_mut(usize::from(p.0)) {
            *l += 1;
        }
    }

    /// Writes the LIDs of `jobs` that steps 1 and 2 routed (their entries in `col`), and routes
    /// the others at switch `x` over the least-loaded of its next hops (ties: lowest port), a
    /// level of equal loads at a time.
    fn fill<'a>(
        &mut self,
        tree: &Tree,
        plan: &LeafPlan,
        x: usize,
        jobs: &[Job],
        col: impl Iterator<Item = &'a PortNum>,
    ) {
        let mut block = std::mem::take(&mut self.block);
        block.clear();
        let mut next = 0;
        let mut done = false;
        let mut cands: Option<&[PortNum]> = None;
        for (job, &routed) in jobs.iter().zip(col) {
            let lid = job.lid;
            if routed != Lft::UNROUTED {
                self.set(lid, routed);
                continue;
            }
            if done {
                continue;
            }
            let cands = *cands.get_or_insert_with(|| plan.candidates(tree, x));
            if let &[p] = cands {
                // A single next hop: every level is that port alone.
                self.set(lid, p);
                self.bump(p);
                continue;
            }
            if next == block.len() {
                let min = cands.iter().map(|&p| self.load(p)).min().unwrap_or(u32::MAX);
                block.clear();
                block.extend(cands.iter().copied().filter(|&p| self.load(p) == min));
                next = 0;
            }
            let Some(&p) = block.get(next) else {
                done = true;
                continue;
            };
            next += 1;
            self.set(lid, p);
            self.bump(p);
        }
        self.block = block;
    }
}

/// LIDs of switches without CAs: shortest paths, as OpenSM's ftree routes them (on a complete
/// tree every shortest path from a leaf is an up/down path); when some leaf is cut off from some
/// switch, up/down paths wherever they exist, and the leaves cut off from the switch through their
/// valley switch ([`valley::switch_column`], [`valley::Valleys::reroute`]).
fn route_switches(
    idx: &Indexed,
    (tree, tops): (&Tree, &valley::Tops),
    (valleys, leafy): (&valley::Valleys, &[bool]),
    tables: &mut [Lft],
) {
    const BATCH: usize = 256;
    let n = tree.len();
    let targets: Vec<&Dest> =
        idx.dests.iter().filter(|d| d.ca.is_none() && !leafy.get(d.attach).copied().unwrap_or(false)).collect();
    let mut cols: Vec<Vec<PortNum>> = vec![Vec::new(); BATCH.min(targets.len())];
    for batch in targets.chunks(BATCH) {
        let cols = &mut cols[..batch.len()];
        par::for_chunks(cols, 8, |off, chunk| {
            let (mut queue, mut lab, mut out, mut path) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            for (i, col) in chunk.iter_mut().enumerate() {
                let t = batch[off + i].attach;
                valley::switch_column(tree, t, valleys.cut, (&mut lab, &mut queue, &mut out), col);
                if !valleys.is_empty() {
                    valleys.reroute((tree, tops), t, &mut path, |x, p| {
                        if let Some(c) = col.get_mut(x) {
                            *c = p;
                        }
                    });
                }
            }
        });
        // Switch after switch, so that each table is written in one place at a time.
        let cols = &*cols;
        let w = n.min(tables.len());
        par::for_chunks(&mut tables[..w], 16, |off, chunk| {
            for (i, table) in chunk.iter_mut().enumerate() {
                let x = off + i;
                let table = table.entries_mut();
                for (d, col) in batch.iter().zip(cols) {
                    let Some(&p) = col.get(x).filter(|&&p| p != Lft::UNROUTED) else { continue };
                    for k in 0..idx.per_port {
                        if let Some(e) = table.get_mut(usize::from(d.base.saturating_add(k))) {
                            *e = p;
                        }
                    }
                }
            }
        });
    }
}

/// Every switch's port towards `t` along a breadth-first tree rooted at `t` (port 0 at `t`).
///
/// The search stops as soon as every switch has its port: the switches still queued then would
/// only find ports already set. On a connected tree that spares scanning the links of the last
/// levels (at k = 48, more than half the switches), and the ports are those of a complete search.
fn bfs_column(tree: &Tree, t: usize, queue: &mut Vec<u32>, col: &mut Vec<PortNum>) {
    col.clear();
    col.resize(tree.len(), Lft::UNROUTED);
    queue.clear();
    let Some(c) = col.get_mut(t) else { return };
    *c = PortNum(0);
    queue.push(t as u32);
    // Switches other than `t` still without a port.
    let mut left = tree.len() - 1;
    let mut head = 0;
    while left > 0
        && let Some(&y) = queue.get(head)
    {
        head += 1;
        for l in tree.all.of(y as usize) {
            let z = l.n as usize;
            if col[z] == Lft::UNROUTED {
                col[z] = l.rport;
                queue.push(l.n);
                // A port number of 255 (unrouted) would leave the switch open to a later link.
                if l.rport != Lft::UNROUTED {
                    left -= 1;
                }
            }
        }
    }
}

/// Routes for the switches of `t`'s component that have no up/down path to `t` (`lab[x]` is
/// [`FAR`]): breadth-first from the up/down-routed region into them, over any link. They only
/// carry their own traffic: no routed switch ever forwards into them, so no loop can form.
fn stranded(tree: &Tree, t: usize, lab: &[u32], out: &mut Vec<(u32, PortNum)>) {
    out.clear();
    let n = tree.len();
    let Some(&ct) = tree.comp.get(t) else { return };
    let mut seen: Vec<bool> = Vec::new();
    let mut frontier: Vec<u32> = Vec::new();
    for x in 0..n {
        if x == t || lab[x] != FAR || tree.level[x] == FAR || tree.comp[x] != ct {
            continue;
        }
        let mut best: Option<(u32, u8, PortNum)> = None;
        for l in tree.up.of(x).iter().chain(tree.down.of(x)) {
            let v = lab[l.n as usize];
            if v != FAR && best.is_none_or(|b| (value(v), l.port.0) < (b.0, b.1)) {
                best = Some((value(v), l.port.0, l.port));
            }
        }
        if let Some((_, _, port)) = best {
            if seen.is_empty() {
                seen.resize(n, false);
            }
            seen[x] = true;
            out.push((x as u32, port));
            frontier.push(x as u32);
        }
    }
    let mut head = 0;
    while let Some(&y) = frontier.get(head) {
        head += 1;
        for l in tree.up.of(y as usize).iter().chain(tree.down.of(y as usize)) {
            let z = l.n as usize;
            if lab[z] == FAR && !seen[z] && z != t {
                seen[z] = true;
                out.push((l.n, l.rport));
                frontier.push(l.n);
            }
        }
    }
}

pub mod hosts;
mod labels;
pub(crate) mod repair;
mod roots;
mod shape;
mod valley;

pub use hosts::{Hinted, Hosts};
pub use repair::{PortLoads, Repaired};
pub use roots::Rooted;
pub use shape::Shape;

#[cfg(test)]
mod tests;
