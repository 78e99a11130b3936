//! Repairing fat-tree routes after links failed, instead of routing again from scratch.
//!
//! Owns [`FatTree::repair`]: given the tables the engine made for a fabric (`base`) and the
//! fabric as it is now (`view`: `base` with some cables gone, and the switches and CAs that went
//! with them; the LIDs of the rest unchanged),
//! only the LIDs whose routes crossed a lost cable get new routes, and for each of them only the
//! switches whose path crossed it: those that sent the LID over a lost port, and, going back,
//! every switch that sent it to one of those. Each of them takes, among its shortest up/down next
//! hops towards the destination leaf (the engine's own candidates, from up/down labels on the
//! new fabric, computed only as far as needed), the one its table uses least; a switch cut off
//! from the leaf takes the route a full route gives it, through the leaf's valley switch
//! ([`super::valley`], computed for every cut-off leaf of the new fabric). Every new entry goes
//! strictly closer to the destination along an up/down path (or along the cut-off route into
//! the switches that have one), and every untouched switch keeps a path that never meets a
//! changed one, so the repaired tables have no loop and no credit loop between CAs, and cross no
//! lost cable. A non-leaf switch's LID whose routes crossed a lost cable: its bad switches with
//! an up/down path take the next hop a full route gives them, the others reattach to switches
//! whose paths are intact or repaired, and the leaves cut off from it go through their valley
//! switch, as in a full route. The work is proportional to the damage, not to the fabric.
//!
//! Two passes: the first finds, on the tables as they are, which switches must choose for each
//! LID and among which ports, and the new ports for switch LIDs (a LID's repair reads and writes
//! only that LID's entries, so one destination switch's LIDs at a time run on all cores); then
//! the tables of the switches that choose are copied and their entries counted per port on all
//! cores; the second pass applies it all in LID order, each switch's loads as its table stood
//! when it first chose plus its choices since (the result of repairing LID after LID in one
//! pass).
//!
//! The per-port counts of the base's tables do not change between faults: [`PortLoads`] counts
//! them once per base (the caller keeps them with it, [`FatTree::repair_counted`]), and a
//! repair copies a chooser's counts from there instead of counting its table again (after an
//! edge cable cut at k = 48, 1,153 tables of 30,000 entries each).
//!
//! Repairing from the same `base` is deterministic: when a cable comes back, repairing `base`
//! for the cables still missing gives exactly the tables of that state, and when none is
//! missing the caller uses `base`'s own tables again (the pre-failure balance).

use std::collections::HashMap;
use std::sync::Arc;

use ibsm_mad::{Guid, PortNum};

use super::labels::Labels;
use super::shape::{Prepared, Shape};
use super::valley::{Tops, Valleys};
use super::{FatTree, FtreeError, Tree};
use crate::graph::{FAR, Indexed};
use crate::{FabricView, Lft, NodeId, Routes, TableDelta, par};

/// What [`FatTree::repair`] made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repaired {
    /// The tables, in `view.switches` order.
    pub routes: Routes,
    /// Switch ports whose cable is gone (switch index, port).
    pub lost: Vec<(usize, PortNum)>,
    /// LIDs that got new routes.
    pub lids: usize,
    /// Table entries that changed.
    pub entries: usize,
    /// For each table (in `view.switches` order), how it differs from the table it was made
    /// from: `None` where it is that table itself (the same `Arc`: a switch the repair left
    /// alone, or one whose choices all came back to its old ports) or where the difference is
    /// not known entry by entry (a table lengthened to the view's top).
    pub deltas: Vec<Option<TableDelta>>,
}

/// The GUID of the node a neighbour reference names in `view`.
fn guid_of(view: &FabricView, n: NodeId) -> Option<Guid> {
    match n {
        NodeId::Switch(i) => view.switches.get(i).map(|s| s.guid),
        NodeId::Ca(i) => view.cas.get(i).map(|c| c.guid),
    }
}

/// For each view switch, its index in the base; and the cables lost, as view switch ports.
pub(crate) type Derivation = (Vec<usize>, Vec<(usize, PortNum)>);

/// How `view` derives from `base`: for each view switch, its index in `base`, and the cables
/// lost, as view switch ports. `None` when `view` is not `base` less some cables, switches and
/// CAs (everything that remains the same, LIDs included).
pub(crate) fn lost_cables(base: &FabricView, view: &FabricView) -> Option<Derivation> {
    derivation(base, view).map(|(from, lost, _)| (from, lost))
}

/// A [`Derivation`], and whether `view` is its base less switch ports only ([`derivation`]).
pub(crate) type Derived = (Vec<usize>, Vec<(usize, PortNum)>, bool);

/// [`lost_cables`], and whether `view` is `base` less switch ports only: every node at its
/// index, no CA port lost its neighbour (what a [`Shape`] can be taken down to).
pub(crate) fn derivation(base: &FabricView, view: &FabricView) -> Option<Derived> {
    if base.lmc != view.lmc || view.switches.len() > base.switches.len() {
        return None;
    }
    // When both views list the same nodes in the same order (a cable cut: the usual case), a
    // neighbour is the same node in both exactly when it has the same index: no GUID is looked
    // up per port (a random read of another node's record each, 170,000 of them at k = 48).
    let aligned = base.switches.len() == view.switches.len()
        && base.cas.len() == view.cas.len()
        && base.switches.iter().zip(&view.switches).all(|(b, v)| b.guid == v.guid)
        && base.cas.iter().zip(&view.cas).all(|(b, v)| b.guid == v.guid);
    let same_node = |x: NodeId, y: NodeId| if aligned { x == y } else { guid_of(base, x) == guid_of(view, y) };
    // Most nodes keep their index: the maps are built only when one moved.
    let mut base_switches: Option<HashMap<Guid, usize>> = None;
    let mut from = Vec::with_capacity(view.switches.len());
    let mut lost = Vec::new();
    for (i, v) in view.switches.iter().enumerate() {
        let m = if base.switches.get(i).is_some_and(|b| b.guid == v.guid) {
            i
        } else {
            let map = base_switches
                .get_or_insert_with(|| base.switches.iter().enumerate().map(|(i, s)| (s.guid, i)).collect());
            *map.get(&v.guid)?
        };
        let b = &base.switches[m];
        if (b.lid, b.ports.len()) != (v.lid, v.ports.len()) {
            return None;
        }
        from.push(m);
        // Aligned, equal neighbours are the same nodes: a switch that kept every cable is one
        // slice compare.
        if aligned && b.ports == v.ports {
            continue;
        }
        for (p, (bn, vn)) in b.ports.iter().zip(&v.ports).enumerate() {
            match (bn, vn) {
                (Some(_), None) => lost.push((i, PortNum(p as u8))),
                (Some(x), Some(y)) if x.port == y.port && same_node(x.node, y.node) => {}
                (None, None) => {}
                _ => return None,
            }
        }
    }
    let mut base_cas: Option<HashMap<Guid, usize>> = None;
    let mut links_only = aligned;
    for (i, c) in view.cas.iter().enumerate() {
        let b = if let Some(b) = base.cas.get(i).filter(|b| b.guid == c.guid) {
            b
        } else {
            let map = base_cas.get_or_insert_with(|| base.cas.iter().enumerate().map(|(i, c)| (c.guid, i)).collect());
            map.get(&c.guid).and_then(|&i| base.cas.get(i))?
        };
        if b.ports.len() != c.ports.len() {
            return None;
        }
        if aligned && b.ports == c.ports {
            continue;
        }
        for (bp, vp) in b.ports.iter().zip(&c.ports) {
            let same_far = match (bp.neighbor, vp.neighbor) {
                (Some(x), Some(y)) => x.port == y.port && same_node(x.node, y.node),
                (None, None) => true,
                (Some(_), None) => {
                    links_only = false;
                    true
                }
                (None, Some(_)) => false,
            };
            if (bp.num, bp.lid) != (vp.num, vp.lid) || !same_far {
                return None;
            }
        }
    }
    Some((from, lost, links_only))
}

/// Per-port entry counts of one table (256 counts), four interleaved counters so that runs of
/// one port do not wait on each other.
fn port_loads(table: &Lft) -> Vec<u32> {
    let mut c = [[0u32; 256]; 4];
    for block in table.runs() {
        let mut quads = block.chunks_exact(4);
        for q in &mut quads {
            for (k, p) in q.iter().enumerate() {
                c[k][usize::from(p.0)] += 1;
            }
        }
        for p in quads.remainder() {
            c[0][usize::from(p.0)] += 1;
        }
    }
    (0..256).map(|i| c[0][i] + c[1][i] + c[2][i] + c[3][i]).collect()
}

impl FatTree {
    /// Routes `view` by repairing `old`, the tables this engine made for `base`: `None` when
    /// `view` is not `base` less some cables, switches and CAs, with the same LIDs (route it in
    /// full then). The LID of a vanished switch or CA keeps its routes.
    ///
    /// # Errors
    /// When `view` is no longer a fat tree ([`FtreeError`]); route it in full then.
    pub fn repair(&self, base: &FabricView, old: &Routes, view: &FabricView) -> Option<Result<Repaired, FtreeError>> {
        self.repair_counted(base, old, None, view)
    }

    /// [`FatTree::repair`], with the per-port counts of `old`'s tables worked out before
    /// ([`PortLoads::count`], between faults): a table the repair changes is not counted again
    /// where `loads` holds its counts. The result is the same with or without them.
    pub fn repair_counted(
        &self,
        base: &FabricView,
        old: &Routes,
        loads: Option<&PortLoads>,
        view: &FabricView,
    ) -> Option<Result<Repaired, FtreeError>> {
        self.repair_shaped(base, old, loads, None, view)
    }

    /// [`FatTree::repair_counted`], with `base`'s [`Shape`] worked out before (between
    /// faults): where `view` is `base` less some switch-to-switch cables and the shape can be
    /// shown to rank the same, the lost links are taken out of it instead of indexing and
    /// ranking `view` again. The result is the same with or without it.
    pub fn repair_shaped(
        &self,
        base: &FabricView,
        old: &Routes,
        loads: Option<&PortLoads>,
        shape: Option<&Shape>,
        view: &FabricView,
    ) -> Option<Result<Repaired, FtreeError>> {
        let (from, lost, links_only) = derivation(base, view)?;
        if old.tables.len() != base.switches.len() {
            return None;
        }
        // The tables of the switches that remain, in view order, and their counts where known.
        let tables = from.iter().map(|&m| Arc::clone(&old.tables[m])).collect();
        let counted: Vec<Option<&[u32]>> =
            from.iter().map(|&m| loads.and_then(|l| l.of(m, old.tables.get(m)?))).collect();
        let kept = shape.filter(|s| links_only && s.is_of(base)).and_then(|s| s.without(&lost));
        let prep = match kept {
            Some(p) => p,
            None => match Prepared::fresh(view) {
                Ok(p) => p,
                Err(e) => return Some(Err(e)),
            },
        };
        Some(Ok(repair_lost(prep, tables, &counted, lost)))
    }
}

/// The per-port entry counts of every table of a route (256 per table, in the route's table
/// order), with the tables they were counted on: what a repair of that route would otherwise
/// count on each table it changes. Worked out once per route, between faults.
#[derive(Debug, Clone, Default)]
pub struct PortLoads {
    /// The tables counted (shared with the route), to tell that a count is of the table asked.
    tables: Vec<Arc<Lft>>,
    /// `counts[256 * i..256 * (i + 1)]`: table `i`'s entries per port.
    counts: Vec<u32>,
}

impl PortLoads {
    /// Counts every table of `routes`, on all cores.
    pub fn count(routes: &Routes) -> PortLoads {
        let mut counts = vec![0u32; 256 * routes.tables.len()];
        let mut rows: Vec<(usize, &mut [u32])> = counts.chunks_mut(256).enumerate().collect();
        par::for_chunks(&mut rows, 16, |_, chunk| {
            for (i, row) in chunk {
                if let Some(t) = routes.tables.get(*i) {
                    row.copy_from_slice(&port_loads(t));
                }
            }
        });
        PortLoads { tables: routes.tables.clone(), counts }
    }

    /// Table `i`'s counts, if `table` is the table counted there.
    fn of(&self, i: usize, table: &Arc<Lft>) -> Option<&[u32]> {
        let counted = self.tables.get(i).filter(|t| Arc::ptr_eq(t, table))?;
        debug_assert_eq!(counted.len(), table.len());
        self.counts.get(256 * i..256 * (i + 1))
    }
}

/// One LID of the repair, as the first pass found it.
enum Step {
    /// A CA LID (or a leaf's own): `choices[range]` of its run must pick a new next hop.
    Choose(usize, std::ops::Range<usize>),
    /// A non-leaf switch's LID, routed again: the entries that change, `sets[range]` of its run.
    Reroute(usize, std::ops::Range<usize>),
}

/// A switch that must pick a new next hop for a LID, among `ports[hops]` of its run.
struct Choice {
    x: usize,
    hops: std::ops::Range<usize>,
}

/// What the first pass needs to read: the view's index and tree, the tables, the lost ports,
/// the owner of each LID and the affected (destination switch, LID) pairs.
type Shared<'a> = (
    &'a Indexed,
    &'a Tree,
    &'a [Arc<Lft>],
    &'a [(usize, PortNum)],
    &'a [Option<usize>],
    &'a [(usize, usize)],
    (&'a Valleys, &'a Tops),
);

/// The affected LIDs of one destination switch (`affected[lids]`), and what the first pass
/// found for them.
#[derive(Default)]
struct Run {
    lids: std::ops::Range<usize>,
    steps: Vec<Step>,
    choices: Vec<Choice>,
    ports: Vec<PortNum>,
    /// Switch LIDs routed again: switch, new port.
    sets: Vec<(usize, PortNum)>,
    /// Scratch for a valley path.
    path: Vec<(u32, PortNum)>,
}

impl Run {
    /// The first pass over this run's LIDs, on the tables as they are.
    fn find(
        &mut self,
        (idx, tree, tables, lost, owner, affected, (valleys, tops)): Shared<'_>,
        labels: &mut Labels,
        (bad, is_bad, hops): &mut (Vec<usize>, Vec<bool>, Vec<PortNum>),
    ) {
        for &(_, lid) in affected.get(self.lids.clone()).unwrap_or(&[]) {
            let Some(d) = owner.get(lid).copied().flatten().and_then(|k| idx.dests.get(k)) else { continue };
            let leafy = d.ca.is_some() || idx.hosts_at.get(d.attach).is_some_and(|&h| h > 0);
            find_bad(idx, tables, lost, lid, bad, is_bad);
            if !leafy {
                let first = self.sets.len();
                if !bad.is_empty() {
                    let shared = (idx, tree, tables);
                    reroute_switch_lid(shared, (d.attach, lid), (bad, is_bad, valleys.cut), labels, &mut self.sets);
                    // The cut-off leaves go through their valley switch: a switch on that way
                    // takes its port from there.
                    let mut via: Vec<(usize, PortNum)> = Vec::new();
                    valleys.reroute((tree, tops), d.attach, &mut self.path, |x, p| via.push((x, p)));
                    if !via.is_empty() {
                        let mut keep = std::collections::HashSet::new();
                        via.reverse();
                        via.retain(|v| keep.insert(v.0));
                        via.reverse();
                        let mut head = self.sets.split_off(first);
                        head.retain(|h| !keep.contains(&h.0));
                        self.sets.extend(head);
                        self.sets.extend(via);
                    }
                }
                self.steps.push(Step::Reroute(lid, first..self.sets.len()));
                continue;
            }
            for &x in bad.iter() {
                is_bad[x] = false;
            }
            labels.reset(tree, d.attach);
            let strand = valleys.strand_of(d.attach);
            let first = self.choices.len();
            for &x in bad.iter() {
                labels.next_hops(tree, x, hops);
                if let Some(routes) = strand
                    && labels.of(tree, x) == FAR
                {
                    // Cut off from the leaf: the route a full route gives it ([`Valleys`]).
                    hops.clear();
                    hops.extend(routes.iter().filter(|r| r.0 as usize == x).map(|r| r.1));
                }
                // A switch that only sent the LID towards a repaired one keeps its port when
                // that is still a shortest up/down next hop.
                if tables[x].entry(lid).is_some_and(|was| hops.contains(&was)) {
                    continue;
                }
                self.choices.push(Choice { x, hops: self.ports.len()..self.ports.len() + hops.len() });
                self.ports.extend_from_slice(hops);
            }
            self.steps.push(Step::Choose(lid, first..self.choices.len()));
        }
    }
}

/// `counted[x]`: the per-port counts of `tables[x]` as given, where known ([`PortLoads`]).
fn repair_lost(
    prep: Prepared<'_>,
    mut tables: Vec<Arc<Lft>>,
    counted: &[Option<&[u32]>],
    lost: Vec<(usize, PortNum)>,
) -> Repaired {
    let Prepared { idx, tree, tops, owner } = prep;
    let n = tree.len();
    // A table lengthened or cut to the view's top is another table: its counts are not known.
    let mut counted = counted.to_vec();
    counted.resize(tables.len(), None);
    for (t, c) in tables.iter_mut().zip(&mut counted) {
        if t.len() != usize::from(idx.top) + 1 {
            Arc::make_mut(t).entries_mut().resize(usize::from(idx.top) + 1, Lft::UNROUTED);
            *c = None;
        }
    }
    // LIDs routed over a lost cable somewhere, that still have an owner.
    let mut affected: Vec<(usize, usize)> = Vec::new();
    for &(s, p) in &lost {
        let Some(t) = tables.get(s) else { continue };
        for (lid, e) in t.iter().enumerate() {
            if e == p
                && let Some(Some(k)) = owner.get(lid)
            {
                affected.push((idx.dests[*k].attach, lid));
            }
        }
    }
    // By destination switch, so that each leaf is labelled once.
    affected.sort_unstable();
    affected.dedup();
    // First pass, on the tables as they are: which switches must choose a new next hop for
    // which LID, and among which ports, and the new ports for switch LIDs. A LID's repair reads
    // and writes only that LID's entries, so this does not depend on the LIDs before it (only
    // the port loads do, and they are kept in the second pass): one destination switch's LIDs
    // at a time, on all cores.
    let mut runs: Vec<Run> = Vec::new();
    for (i, &(attach, _)) in affected.iter().enumerate() {
        match runs.last_mut() {
            Some(r) if affected.get(r.lids.start).is_some_and(|a| a.0 == attach) => r.lids.end = i + 1,
            _ => runs.push(Run { lids: i..i + 1, ..Run::default() }),
        }
    }
    // The leaves whose LIDs are repaired: those cut off from a switch need their valley switch.
    let mut leaves: Vec<usize> =
        affected.iter().map(|a| a.0).filter(|&s| idx.hosts_at.get(s).is_some_and(|&h| h > 0)).collect();
    leaves.dedup();
    let valleys = Valleys::compute(&tree, &tops, &leaves);
    let shared = (&idx, &tree, &tables[..], &lost[..], &owner[..], &affected[..], (&valleys, &tops));
    par::for_chunks(&mut runs, 4, |_, chunk| {
        let mut labels = Labels::new(n);
        let mut scratch = (Vec::new(), vec![false; n], Vec::new());
        for run in chunk {
            run.find(shared, &mut labels, &mut scratch);
        }
    });
    let mut choosers = vec![false; n];
    for c in runs.iter().flat_map(|r| &r.choices) {
        choosers[c.x] = true;
    }
    // The tables as they were (lengthened), to tell which entries the repair moved.
    let was = tables.clone();
    // The entries of the tables of the switches that choose, counted per port, on all cores.
    // A table is not copied: its first change derives it from the old one (sharing every
    // block but the changed ones).
    let mut work = Tables::new(tables, &choosers, &counted);
    // Second pass, in LID order: each choice takes the least-loaded candidate (ties: lowest
    // port), the loads as the switch's table stood when it first chose, plus its choices since.
    let mut entries = 0;
    for run in &runs {
        for step in &run.steps {
            match *step {
                Step::Reroute(lid, ref range) => {
                    for &(x, p) in run.sets.get(range.clone()).unwrap_or(&[]) {
                        entries += usize::from(work.set(x, lid, p));
                    }
                }
                Step::Choose(lid, ref range) => {
                    for c in run.choices.get(range.clone()).unwrap_or(&[]) {
                        let hops = run.ports.get(c.hops.clone()).unwrap_or(&[]);
                        entries += usize::from(work.choose(c.x, lid, hops));
                    }
                }
            }
        }
    }
    let deltas = work.deltas(&was);
    Repaired { routes: Routes { tables: work.lfts }, lost, lids: affected.len(), entries, deltas }
}

/// The tables being repaired, with the per-port entry counts of the switches that choose.
struct Tables {
    lfts: Vec<Arc<Lft>>,
    /// Per switch, its entries per port (256 counts; empty for a switch that never chooses).
    loads: Vec<Vec<u32>>,
    /// Whether the switch has chosen yet: until then its counts follow its table exactly; from
    /// then on they only count its own choices on top.
    chosen: Vec<bool>,
    /// Per switch, the LIDs whose entry was set to another port (some may have come back).
    moved: Vec<Vec<u16>>,
}

impl Tables {
    /// `tables`, with the entries of the tables of the `choosers` counted per port (their
    /// counts taken from `counted` where known). The tables are shared until changed
    /// ([`Tables::set`]).
    fn new(tables: Vec<Arc<Lft>>, choosers: &[bool], counted: &[Option<&[u32]>]) -> Tables {
        let n = tables.len();
        let mut fresh: Vec<(usize, Vec<u32>)> =
            (0..n).filter(|&x| choosers.get(x).copied().unwrap_or(false)).map(|x| (x, Vec::new())).collect();
        let shared = &tables;
        par::for_chunks(&mut fresh, 16, |_, chunk| {
            for (x, loads) in chunk {
                if let Some(t) = shared.get(*x) {
                    *loads = match counted.get(*x).copied().flatten() {
                        Some(c) => c.to_vec(),
                        None => port_loads(t),
                    };
                }
            }
        });
        let mut loads = vec![Vec::new(); n];
        for (x, l) in fresh {
            loads[x] = l;
        }
        Tables { lfts: tables, loads, chosen: vec![false; n], moved: vec![Vec::new(); n] }
    }

    /// How each table differs from the same switch's in `was` (the tables before the repair):
    /// the LIDs moved and not come back. A table that ends as it was is `was`'s again (the
    /// same `Arc`, so that what shares it need not compare it).
    fn deltas(&mut self, was: &[Arc<Lft>]) -> Vec<Option<TableDelta>> {
        let mut out = Vec::with_capacity(self.lfts.len());
        for ((t, from), moved) in self.lfts.iter_mut().zip(was).zip(&mut self.moved) {
            if Arc::ptr_eq(t, from) || t.len() != from.len() || t.len() > 1 << 16 {
                out.push(None);
                continue;
            }
            moved.sort_unstable();
            moved.dedup();
            moved.retain(|&lid| t.entry(usize::from(lid)) != from.entry(usize::from(lid)));
            if moved.is_empty() {
                *t = Arc::clone(from);
                out.push(None);
            } else {
                out.push(Some(TableDelta { from: Arc::clone(from), lids: std::mem::take(moved) }));
            }
        }
        out
    }

    /// Sets switch `x`'s entry for `lid` to `port`, deriving its table from the shared one
    /// first (only the entry's block is copied: [`Lft::set_shared`]); whether the entry changed.
    fn set(&mut self, x: usize, lid: usize, port: PortNum) -> bool {
        let Some(t) = self.lfts.get_mut(x) else { return false };
        let Some(was) = t.entry(lid) else { return false };
        if !Lft::set_shared(t, lid, port) {
            return false;
        }
        if let Some(m) = self.moved.get_mut(x) {
            // A table is at most 65,536 entries (LIDs to the view's top); past that, not known.
            m.push(u16::try_from(lid).unwrap_or(u16::MAX));
        }
        if !self.chosen.get(x).copied().unwrap_or(true)
            && let Some(l) = self.loads.get_mut(x)
            && !l.is_empty()
        {
            l[usize::from(was.0)] -= 1;
            l[usize::from(port.0)] += 1;
        }
        true
    }

    /// Switch `x` routes `lid` over the least-loaded of `hops` (ties: lowest port; none:
    /// unrouted); whether the entry changed.
    fn choose(&mut self, x: usize, lid: usize, hops: &[PortNum]) -> bool {
        let Some(load) = self.loads.get_mut(x).filter(|l| !l.is_empty()) else { return false };
        let new = hops.iter().copied().min_by_key(|p| (load[usize::from(p.0)], p.0)).unwrap_or(Lft::UNROUTED);
        if new != Lft::UNROUTED {
            load[usize::from(new.0)] += 1;
        }
        self.chosen[x] = true;
        self.set(x, lid, new)
    }
}

/// The switches whose path to `lid` crosses a lost cable, into `bad` (and flagged in
/// `is_bad`): those that send it over a lost port, and, going back, every switch that sends it
/// to one of them.
fn find_bad(
    idx: &Indexed,
    tables: &[Arc<Lft>],
    lost: &[(usize, PortNum)],
    lid: usize,
    bad: &mut Vec<usize>,
    is_bad: &mut [bool],
) {
    bad.clear();
    for &(s, p) in lost {
        if tables.get(s).and_then(|t| t.entry(lid)) == Some(p) && !is_bad[s] {
            is_bad[s] = true;
            bad.push(s);
        }
    }
    let mut head = 0;
    while let Some(&z) = bad.get(head) {
        head += 1;
        for &(_, y, rport) in idx.graph.links(z) {
            if !is_bad[y] && tables[y].entry(lid) == Some(rport) {
                is_bad[y] = true;
                bad.push(y);
            }
        }
    }
}

/// A non-leaf switch's LID whose routes crossed a lost cable, into `sets` in order. With some
/// leaf cut off (`cut`), each `bad` switch with an up/down path takes the next hop a full route
/// would give it ([`super::valley::switch_column`]: the `t`-th, modulo their number, in port
/// order) and counts as repaired; the other bad switches [`reattach`]. Clears the flags.
fn reroute_switch_lid(
    (idx, tree, tables): (&Indexed, &Tree, &[Arc<Lft>]),
    (t, lid): (usize, usize),
    (bad, is_bad, cut): (&[usize], &mut [bool], bool),
    labels: &mut Labels,
    sets: &mut Vec<(usize, PortNum)>,
) {
    if cut {
        labels.reset(tree, t);
        let mut hops = Vec::new();
        for &x in bad {
            if labels.of(tree, x) == FAR {
                continue;
            }
            labels.next_hops(tree, x, &mut hops);
            if let Some(&p) = hops.get(t % hops.len().max(1)) {
                sets.push((x, p));
                is_bad[x] = false;
            }
        }
    }
    reattach(idx, tables, lid, bad, is_bad, sets);
}

/// A non-leaf switch's LID: the `bad` switches reattach to switches whose paths are intact or
/// already repaired. One whose old next hop is (or becomes) repaired keeps its port; when none
/// can, the first bad switch (nearest the lost cable) with a repaired or intact neighbour takes
/// its lowest port to one, and so on. One that cannot (cut off) drops the LID. A switch is only
/// ever pointed at a path that meets no bad switch, so no loop forms. Linear in the bad set and
/// its links, plus a scan of it per reattachment. Reads the tables only: the new entries go to
/// `sets`, in order. Clears the flags.
fn reattach(
    idx: &Indexed,
    tables: &[Arc<Lft>],
    lid: usize,
    bad: &[usize],
    is_bad: &mut [bool],
    sets: &mut Vec<(usize, PortNum)>,
) {
    let entry = |tables: &[Arc<Lft>], x: usize| tables.get(x).and_then(|t| t.entry(lid));
    let mut queue = Vec::new();
    for &x in bad {
        let was = entry(tables, x);
        if idx.graph.links(x).iter().any(|l| Some(l.0) == was && !is_bad[l.1]) {
            queue.push(x);
        }
    }
    for &x in &queue {
        is_bad[x] = false;
    }
    loop {
        // Switches that send the LID to a repaired one are repaired as they are.
        while let Some(z) = queue.pop() {
            for &(_, y, rport) in idx.graph.links(z) {
                if is_bad[y] && entry(tables, y) == Some(rport) {
                    is_bad[y] = false;
                    queue.push(y);
                }
            }
        }
        let next = bad.iter().find_map(|&x| {
            if !is_bad[x] {
                return None;
            }
            idx.graph.links(x).iter().find(|l| !is_bad[l.1]).map(|l| (x, l.0))
        });
        let Some((x, p)) = next else { break };
        is_bad[x] = false;
        sets.push((x, p));
        queue.push(x);
    }
    for &x in bad {
        if is_bad[x] {
            is_bad[x] = false;
            sets.push((x, Lft::UNROUTED));
        }
    }
}

#[cfg(test)]
mod tests;
