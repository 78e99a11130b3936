//! Up/down routing for arbitrary switch graphs (tori, meshes, random graphs, trees), deadlock-free
//! by construction.
//!
//! **Roots.** Given by GUID ([`UpDown::with_roots`]), or chosen automatically per connected
//! component of the switch graph ([`UpDown::auto`]):
//! 1. rank every switch by its hop distance from the CA level (switches with CAs have rank 0);
//!    the roots are the switches of the highest rank (the spines or cores of a tree);
//! 2. if that rank is 0 (every switch has CAs, as in tori and random graphs), or if those roots
//!    leave a CA-attached switch without an up/down path to some LID, the root is the component's
//!    centre instead: the switch with the smallest eccentricity (ties: lowest GUID).
//!
//! A component without a given root gets its centre as root.
//!
//! **Direction.** Switches are ordered by (hop distance from the nearest root, GUID, index); a
//! link is *up* towards the smaller end of that total order, so the up links form an acyclic
//! orientation. Every route is a run of up links followed by a run of down links, never down then
//! up, so the channel dependency graph has no cycle (no credit loop).
//!
//! **Routes.** For each destination switch `t`: a switch with a pure down path to `t` sends the
//! LID down along a shortest such path; any other switch sends it up along a shortest up/down
//! path. Among equally short next hops, the port carrying the fewest LIDs wins (ties: lowest
//! port); with LMC > 0 the LIDs of one end port prefer different neighbours.
//!
//! **Every switch reaches every LID of its component.** With several roots, a switch without
//! CAs may have no up/down path to another switch's LID (a root cannot go down and back up to
//! another root). Such a switch is *stranded* for that LID and routes it along a shortest path
//! into the switches that have one; no switch with an up/down path ever forwards into a stranded
//! one, so no forwarding loop forms, and only the stranded switch's own packets to a switch
//! (management traffic between switches, SMPs on VL15, which has no credits) take that path.
//! Stranding is allowed only there: every switch must have an up/down path to every CA LID and
//! every CA-attached switch to every LID, or the roots are rejected (tiered roots, then the
//! centres; a single root per component strands nothing). So all traffic that holds credits (to
//! and from CAs, `routes check --cdg data-plane`) is free of credit loops.
//!
//! Cost: one breadth-first search per destination switch and one pass per LFT entry; the
//! per-switch work runs on all cores and does not depend on their number.

use std::collections::VecDeque;

use ibsm_mad::{Guid, PortNum};

use crate::graph::{FAR, Indexed, SwitchGraph};
use crate::spread::{Adj, Link, Policy, groups, ordered, spread_tuned};
use crate::{Engine, FabricView, Routes, RoutingError, Tuning};

/// The up/down engine.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpDown {
    roots: Option<Vec<Guid>>,
    tuning: Tuning,
}

impl UpDown {
    /// Registry name.
    pub const NAME: &'static str = "updn";

    /// Roots chosen automatically (see the module docs).
    pub fn auto() -> UpDown {
        UpDown { roots: None, tuning: Tuning::default() }
    }

    /// Roots given by switch NodeGUID.
    pub fn with_roots(roots: Vec<Guid>) -> UpDown {
        UpDown { roots: Some(roots), tuning: Tuning::default() }
    }

    /// This engine balancing with OpenSM's options (routing order, port shifting, scattering).
    #[must_use]
    pub fn tuned(mut self, tuning: Tuning) -> UpDown {
        self.tuning = tuning;
        self
    }

    /// The roots this engine would use on `view` (automatic or given), as switch GUIDs.
    pub fn roots_for(&self, view: &FabricView) -> Result<Vec<Guid>, RoutingError> {
        let idx = Indexed::new(view)?;
        let (_, roots) = self.solve(view, &idx)?;
        Ok(roots.iter().filter_map(|&s| view.switches.get(s).map(|s| s.guid)).collect())
    }

    fn declined(reason: String) -> RoutingError {
        RoutingError::Declined { engine: Self::NAME, reason }
    }

    /// Routes with the configured or automatic roots; returns the routes and the roots used.
    fn solve(&self, view: &FabricView, idx: &Indexed) -> Result<(Routes, Vec<usize>), RoutingError> {
        let g = &idx.graph;
        let (comp, ncomp) = g.components();
        let guids: Vec<Guid> = view.switches.iter().map(|s| s.guid).collect();
        if let Some(given) = &self.roots {
            let mut roots = Vec::new();
            for guid in given {
                let Some(s) = guids.iter().position(|g| g == guid) else {
                    return Err(Self::declined(format!("root {guid} is not a switch of the fabric")));
                };
                roots.push(s);
            }
            let mut has_root = vec![false; ncomp];
            for &r in &roots {
                has_root[comp[r]] = true;
            }
            for (c, _) in has_root.iter().enumerate().filter(|(_, has)| !**has) {
                roots.push(centre(g, &comp, c, &guids));
            }
            roots.sort_unstable();
            roots.dedup();
            return match route_with(view, idx, (&roots, &self.tuning), &guids) {
                Ok(r) => Ok((r, roots)),
                Err((from, to)) => Err(Self::declined(format!(
                    "with roots {}, switch {} has no up/down path to switch {}",
                    list(&roots, &guids),
                    guids[from],
                    guids[to]
                ))),
            };
        }
        if let Some(tiered) = tiered_roots(g, idx, &comp, ncomp, &guids)
            && let Ok(r) = route_with(view, idx, (&tiered, &self.tuning), &guids)
        {
            return Ok((r, tiered));
        }
        let centres: Vec<usize> = (0..ncomp).map(|c| centre(g, &comp, c, &guids)).collect();
        match route_with(view, idx, (&centres, &self.tuning), &guids) {
            Ok(r) => Ok((r, centres)),
            Err((from, to)) => Err(Self::declined(format!(
                "switch {} has no up/down path to switch {} even from the centre roots",
                guids[from], guids[to]
            ))),
        }
    }
}

impl Engine for UpDown {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn route(&self, view: &FabricView) -> Result<Routes, RoutingError> {
        let idx = Indexed::new(view)?;
        self.solve(view, &idx).map(|(r, _)| r)
    }
}

fn list(roots: &[usize], guids: &[Guid]) -> String {
    let v: Vec<String> = roots.iter().map(|&r| guids[r].to_string()).collect();
    v.join(", ")
}

/// The highest-rank-from-CAs roots of every component (the centre for a component without CAs),
/// or `None` if some component has CAs on every switch (then the centres are used everywhere).
fn tiered_roots(g: &SwitchGraph, idx: &Indexed, comp: &[usize], ncomp: usize, guids: &[Guid]) -> Option<Vec<usize>> {
    let leaves: Vec<usize> = (0..g.len()).filter(|&s| idx.hosts_at[s] > 0).collect();
    let mut rank = Vec::new();
    g.bfs(&leaves, &mut rank, &mut VecDeque::new());
    let mut top: Vec<Option<u32>> = vec![None; ncomp];
    for s in 0..g.len() {
        if rank[s] != FAR {
            let t = &mut top[comp[s]];
            *t = Some(t.map_or(rank[s], |t| t.max(rank[s])));
        }
    }
    if top.contains(&Some(0)) {
        return None;
    }
    let mut roots: Vec<usize> = (0..g.len()).filter(|&s| rank[s] != FAR && Some(rank[s]) == top[comp[s]]).collect();
    roots.extend((0..ncomp).filter(|&c| top[c].is_none()).map(|c| centre(g, comp, c, guids)));
    roots.sort_unstable();
    Some(roots)
}

/// The switch of component `c` with the smallest eccentricity (ties: lowest GUID, then index).
fn centre(g: &SwitchGraph, comp: &[usize], c: usize, guids: &[Guid]) -> usize {
    let mut dist = Vec::new();
    let mut queue = VecDeque::new();
    let mut best: Option<(u32, Guid, usize)> = None;
    for s in (0..g.len()).filter(|&s| comp[s] == c) {
        g.bfs(&[s], &mut dist, &mut queue);
        let ecc = dist.iter().copied().filter(|&d| d != FAR).max().unwrap_or(0);
        let key = (ecc, guids[s], s);
        if best.is_none_or(|b| key < b) {
            best = Some(key);
        }
    }
    best.map_or(0, |b| b.2)
}

/// Label bit: the switch has a pure down path to the destination.
const DOWN: u32 = 1 << 31;

/// Label bit: the switch has no up/down path to the destination (it is stranded); the value is
/// its hop distance to the nearest switch that has one. [`FAR`] has this bit set too, so
/// `label & STRAND == 0` means "has an up/down path".
const STRAND: u32 = 1 << 30;

/// The up/down orientation: per switch, its up links and its down links.
struct Oriented {
    up: Adj,
    down: Adj,
    /// Switches in orientation order (roots first).
    by_pos: Vec<u32>,
}

impl Oriented {
    /// Every link of switch `x`, up then down.
    fn links(&self, x: usize) -> impl Iterator<Item = &Link> {
        self.up.of(x).iter().chain(self.down.of(x))
    }
}

impl Policy for Oriented {
    /// Per switch: `DOWN | d` (a pure down path of `d` hops to `t`), `v` (a shortest up/down
    /// path of `v` hops) or [`FAR`].
    fn label(&self, t: usize, lab: &mut Vec<u32>, queue: &mut Vec<u32>) {
        lab.clear();
        lab.resize(self.by_pos.len(), FAR);
        queue.clear();
        if let Some(l) = lab.get_mut(t) {
            *l = DOWN;
            queue.push(t as u32);
        }
        let mut head = 0;
        while let Some(&y) = queue.get(head) {
            head += 1;
            let d = lab[y as usize];
            // The switches above `y` reach `t` going down through `y`.
            for l in self.up.of(y as usize) {
                if lab[l.n as usize] == FAR {
                    lab[l.n as usize] = d + 1;
                    queue.push(l.n);
                }
            }
        }
        for &x in &self.by_pos {
            let x = x as usize;
            if lab[x] != FAR {
                continue;
            }
            let best = self.up.of(x).iter().map(|l| lab[l.n as usize]).filter(|&v| v != FAR).map(|v| v & !DOWN).min();
            if let Some(b) = best {
                lab[x] = b + 1;
            }
        }
        // Stranded switches: breadth-first from those with an up/down path, over any link.
        queue.clear();
        for &x in &self.by_pos {
            let x = x as usize;
            if lab[x] == FAR && self.links(x).any(|l| lab[l.n as usize] & STRAND == 0) {
                lab[x] = STRAND | 1;
                queue.push(x as u32);
            }
        }
        let mut head = 0;
        while let Some(&y) = queue.get(head) {
            head += 1;
            let d = (lab[y as usize] & !STRAND) + 1;
            for l in self.links(y as usize) {
                if lab[l.n as usize] == FAR {
                    lab[l.n as usize] = STRAND | d;
                    queue.push(l.n);
                }
            }
        }
    }

    fn next_hops(&self, lab: &[u32], x: usize, cands: &mut Vec<(PortNum, u32)>) {
        cands.clear();
        let lx = lab[x];
        if lx == FAR || lx == DOWN {
            return;
        }
        let want = lx - 1;
        if lx & STRAND != 0 {
            if lx == STRAND | 1 {
                // Into the routed switches: the nearest to the destination.
                let legal = |l: &&Link| lab[l.n as usize] & STRAND == 0;
                let best = self.links(x).filter(legal).map(|l| lab[l.n as usize] & !DOWN).min();
                cands.extend(
                    self.links(x)
                        .filter(|l| legal(l) && Some(lab[l.n as usize] & !DOWN) == best)
                        .map(|l| (l.port, l.n)),
                );
            } else {
                cands.extend(self.links(x).filter(|l| lab[l.n as usize] == want).map(|l| (l.port, l.n)));
            }
            return;
        }
        if lx & DOWN != 0 {
            cands.extend(self.down.of(x).iter().filter(|l| lab[l.n as usize] == want).map(|l| (l.port, l.n)));
        } else {
            cands.extend(
                self.up
                    .of(x)
                    .iter()
                    .filter(|l| {
                        let v = lab[l.n as usize];
                        v != FAR && v & !DOWN == want
                    })
                    .map(|l| (l.port, l.n)),
            );
        }
    }
}

/// Routes every LID with up/down directions from `roots`; `Err((from, to))` if switch `from`
/// has no up/down path to switch `to` where one is required: from every switch when `to` has
/// CAs, from every CA-attached switch otherwise (see the module docs).
fn route_with(
    view: &FabricView,
    idx: &Indexed,
    (roots, tuning): (&[usize], &Tuning),
    guids: &[Guid],
) -> Result<Routes, (usize, usize)> {
    let g = &idx.graph;
    let n = g.len();
    let mut rank = Vec::new();
    g.bfs(roots, &mut rank, &mut VecDeque::new());
    let mut by_pos: Vec<usize> = (0..n).collect();
    by_pos.sort_unstable_by_key(|&s| (rank[s], guids[s], s));
    let mut pos = vec![0usize; n];
    for (i, &s) in by_pos.iter().enumerate() {
        pos[s] = i;
    }
    let link = |&(port, nb, _): &(PortNum, usize, PortNum)| Link { n: nb as u32, port };
    let up = Adj::build(n, |s, out| out.extend(g.links(s).iter().filter(|l| pos[l.1] < pos[s]).map(link)));
    let down = Adj::build(n, |s, out| out.extend(g.links(s).iter().filter(|l| pos[l.1] > pos[s]).map(link)));
    let policy = Oriented { up, down, by_pos: by_pos.iter().map(|&s| s as u32).collect() };
    let (comp, _) = g.components();
    let groups = ordered(view, groups(idx), tuning);
    spread_tuned(view, idx, (&groups, tuning), &policy, |t, lab| {
        let strict = idx.hosts_at[t] > 0;
        let stranded = (0..n).find(|&x| comp[x] == comp[t] && (strict || idx.hosts_at[x] > 0) && lab[x] & STRAND != 0);
        match stranded {
            Some(x) => Err((x, t)),
            None => Ok(()),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{CreditLoops, check};
    use crate::testing::ring;
    use ibsm_mad::Lid;

    #[test]
    fn ring_is_routed_without_credit_loops() {
        for n in [3, 4, 5, 8] {
            let v = ring(n);
            let r = UpDown::auto().route(&v).unwrap();
            let rep = check(&v, &r);
            assert_eq!(rep.reachable, rep.pairs, "ring {n}: {rep}");
            assert_eq!(rep.switch_reachable, rep.switch_pairs, "ring {n}: {rep}");
            assert_eq!(rep.credit_loops, CreditLoops::None, "ring {n}: {rep}");
        }
    }

    #[test]
    fn given_roots_are_used_and_unknown_roots_declined() {
        let v = ring(5);
        let e = UpDown::with_roots(vec![Guid(0x502)]);
        assert_eq!(e.roots_for(&v).unwrap(), vec![Guid(0x502)]);
        // In a ring every switch is a centre; the lowest GUID wins.
        assert_eq!(UpDown::auto().roots_for(&v).unwrap(), vec![Guid(0x500)]);
        let r = e.route(&v).unwrap();
        assert!(check(&v, &r).is_clean());
        let err = UpDown::with_roots(vec![Guid(0xdead)]).route(&v).unwrap_err();
        assert!(err.to_string().contains("0x000000000000dead"), "{err}");
    }

    #[test]
    fn lmc_lids_get_routes() {
        let mut v = ring(4);
        v.lmc = 1;
        for (i, s) in v.switches.iter_mut().enumerate() {
            s.lid = Lid(2 + 2 * i as u16);
        }
        for (i, c) in v.cas.iter_mut().enumerate() {
            c.ports[0].lid = Lid(10 + 2 * i as u16);
        }
        let r = UpDown::auto().route(&v).unwrap();
        let rep = check(&v, &r);
        assert_eq!(rep.pairs, 4 * 3 * 2);
        assert!(rep.is_clean(), "{rep}");
    }
}
