//! Repairing fat-tree routes after links failed, instead of routing again from scratch.
//!
//! Owns [`FatTree::repair`]: given the tables the engine made for a fabric (`base`) and the
//! fabric as it is now (`view`: `base` with some cables gone, and the switches and CAs that went
//! with them; the LIDs of the rest unchanged),
//! only the LIDs whose routes crossed a lost cable get new routes, and for each of them only the
//! switches whose path crossed it: those that sent the LID over a lost port, and, going back,
//! every switch that sent it to one of those. Each of them takes, among its shortest up/down next
//! hops towards the destination leaf (the engine's own candidates, from up/down labels on the
//! new fabric, computed only as far as needed), the one its table uses least. Every new entry
//! goes strictly closer to the destination along an up/down path, and every untouched switch
//! keeps a path that never meets a changed one, so the repaired tables have no loop and no
//! credit loop between CAs, and cross no lost cable. Switch LIDs of non-leaf switches follow
//! shortest paths, as in a full route. The work is proportional to the damage, not to the
//! fabric.
//!
//! Repairing from the same `base` is deterministic: when a cable comes back, repairing `base`
//! for the cables still missing gives exactly the tables of that state, and when none is
//! missing the caller uses `base`'s own tables again (the pre-failure balance).

use std::collections::HashMap;
use std::sync::Arc;

use ibsm_mad::{Guid, PortNum};

use super::{DOWN, FatTree, FtreeError, Tree, value};
use crate::graph::{FAR, Indexed};
use crate::{FabricView, Lft, NodeId, Routes};

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
}

/// The GUID of the node a neighbour reference names in `view`.
fn guid_of(view: &FabricView, n: NodeId) -> Option<Guid> {
    match n {
        NodeId::Switch(i) => view.switches.get(i).map(|s| s.guid),
        NodeId::Ca(i) => view.cas.get(i).map(|c| c.guid),
    }
}

/// For each view switch, its index in the base; and the cables lost, as view switch ports.
type Derivation = (Vec<usize>, Vec<(usize, PortNum)>);

/// How `view` derives from `base`: for each view switch, its index in `base`, and the cables
/// lost, as view switch ports. `None` when `view` is not `base` less some cables, switches and
/// CAs (everything that remains the same, LIDs included).
fn lost_cables(base: &FabricView, view: &FabricView) -> Option<Derivation> {
    if base.lmc != view.lmc || view.switches.len() > base.switches.len() {
        return None;
    }
    let base_switches: HashMap<Guid, usize> = base.switches.iter().enumerate().map(|(i, s)| (s.guid, i)).collect();
    let mut from = Vec::with_capacity(view.switches.len());
    let mut lost = Vec::new();
    for (i, v) in view.switches.iter().enumerate() {
        let m = *base_switches.get(&v.guid)?;
        let b = &base.switches[m];
        if (b.lid, b.ports.len()) != (v.lid, v.ports.len()) {
            return None;
        }
        from.push(m);
        for (p, (bn, vn)) in b.ports.iter().zip(&v.ports).enumerate() {
            match (bn, vn) {
                (Some(_), None) => lost.push((i, PortNum(p as u8))),
                (Some(x), Some(y)) if guid_of(base, x.node) == guid_of(view, y.node) && x.port == y.port => {}
                (None, None) => {}
                _ => return None,
            }
        }
    }
    let base_cas: HashMap<Guid, usize> = base.cas.iter().enumerate().map(|(i, c)| (c.guid, i)).collect();
    for c in &view.cas {
        let b = base_cas.get(&c.guid).and_then(|&i| base.cas.get(i))?;
        if b.ports.len() != c.ports.len() {
            return None;
        }
        for (bp, vp) in b.ports.iter().zip(&c.ports) {
            let same_far = match (bp.neighbor, vp.neighbor) {
                (Some(x), Some(y)) => guid_of(base, x.node) == guid_of(view, y.node) && x.port == y.port,
                (_, None) => true,
                (None, Some(_)) => false,
            };
            if (bp.num, bp.lid) != (vp.num, vp.lid) || !same_far {
                return None;
            }
        }
    }
    Some((from, lost))
}

/// Per-port entry counts of one table (computed when a switch first needs a new choice).
fn port_loads(table: &Lft) -> Vec<u32> {
    let mut loads = vec![0u32; 256];
    for p in &table.ports {
        loads[usize::from(p.0)] += 1;
    }
    loads
}

impl FatTree {
    /// Routes `view` by repairing `old`, the tables this engine made for `base`: `None` when
    /// `view` is not `base` less some cables, switches and CAs, with the same LIDs (route it in
    /// full then). The LID of a vanished switch or CA keeps its routes.
    ///
    /// # Errors
    /// When `view` is no longer a fat tree ([`FtreeError`]); route it in full then.
    pub fn repair(&self, base: &FabricView, old: &Routes, view: &FabricView) -> Option<Result<Repaired, FtreeError>> {
        let (from, lost) = lost_cables(base, view)?;
        if old.tables.len() != base.switches.len() {
            return None;
        }
        // The tables of the switches that remain, in view order.
        let tables = from.iter().map(|&m| Arc::clone(&old.tables[m])).collect();
        Some(repair_lost(view, tables, lost))
    }
}

/// Up/down labels towards one leaf, computed only where asked: ancestors (a pure down path)
/// by a breadth-first walk up from the leaf, every other switch from its up neighbours.
struct Labels {
    leaf: usize,
    /// `DOWN | d` for ancestors, `v` for others, [`FAR`] for none; valid where `stamp` is set.
    lab: Vec<u32>,
    known: Vec<bool>,
    queue: Vec<u32>,
}

impl Labels {
    fn new(n: usize) -> Labels {
        Labels { leaf: usize::MAX, lab: vec![FAR; n], known: vec![false; n], queue: Vec::new() }
    }

    /// Starts over for `leaf`: its ancestors labelled, everything else unknown.
    fn reset(&mut self, tree: &Tree, leaf: usize) {
        if self.leaf == leaf {
            return;
        }
        self.leaf = leaf;
        self.lab.fill(FAR);
        self.known.fill(false);
        self.queue.clear();
        if leaf >= tree.len() || tree.level[leaf] == FAR {
            return;
        }
        self.lab[leaf] = DOWN;
        self.known[leaf] = true;
        self.queue.push(leaf as u32);
        let mut head = 0;
        while let Some(&y) = self.queue.get(head) {
            head += 1;
            let d = self.lab[y as usize] + 1;
            for l in tree.up.of(y as usize) {
                let x = l.n as usize;
                if !self.known[x] {
                    self.known[x] = true;
                    self.lab[x] = d;
                    self.queue.push(l.n);
                }
            }
        }
    }

    /// Switch `x`'s label: 1 + the nearest of its up neighbours for a non-ancestor.
    fn of(&mut self, tree: &Tree, x: usize) -> u32 {
        if self.known.get(x).is_none_or(|&k| k) {
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
        self.known[x] = true;
        self.lab[x] = if best == FAR { FAR } else { best + 1 };
        self.lab[x]
    }

    /// Switch `x`'s shortest up/down next hops (ports); for a switch with none (stranded), its
    /// links to the labelled switch nearest the leaf.
    fn next_hops(&mut self, tree: &Tree, x: usize, out: &mut Vec<PortNum>) {
        out.clear();
        let lx = self.of(tree, x);
        if lx & DOWN != 0 && lx != FAR {
            let want = lx - 1;
            out.extend(
                tree.down
                    .of(x)
                    .iter()
                    .filter(|l| self.lab[l.n as usize] == want && self.known[l.n as usize])
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

fn repair_lost(
    view: &FabricView,
    mut tables: Vec<Arc<Lft>>,
    lost: Vec<(usize, PortNum)>,
) -> Result<Repaired, FtreeError> {
    let idx = Indexed::new(view)?;
    let tree = Tree::new(view, &idx)?;
    let n = tree.len();
    for t in &mut tables {
        if t.ports.len() != usize::from(idx.top) + 1 {
            Arc::make_mut(t).ports.resize(usize::from(idx.top) + 1, Lft::UNROUTED);
        }
    }
    // LIDs routed over a lost cable somewhere, that still have an owner.
    let mut owner: Vec<Option<usize>> = vec![None; usize::from(idx.top) + 1];
    for (k, d) in idx.dests.iter().enumerate() {
        for j in 0..idx.per_port {
            if let Some(o) = owner.get_mut(usize::from(d.base.saturating_add(j))) {
                *o = Some(k);
            }
        }
    }
    let mut affected: Vec<(usize, usize)> = Vec::new();
    for &(s, p) in &lost {
        let Some(t) = tables.get(s) else { continue };
        for (lid, &e) in t.ports.iter().enumerate() {
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
    let mut labels = Labels::new(n);
    let mut loads: HashMap<usize, Vec<u32>> = HashMap::new();
    let (mut bad, mut is_bad, mut hops) = (Vec::new(), vec![false; n], Vec::new());
    let mut entries = 0;
    for &(_, lid) in &affected {
        let Some(d) = owner.get(lid).copied().flatten().and_then(|k| idx.dests.get(k)) else { continue };
        let leafy = d.ca.is_some() || idx.hosts_at.get(d.attach).is_some_and(|&h| h > 0);
        find_bad(&idx, &tables, &lost, lid, &mut bad, &mut is_bad);
        if !leafy {
            entries += reattach(&idx, &mut tables, lid, &bad, &mut is_bad);
            continue;
        }
        labels.reset(&tree, d.attach);
        for &x in &bad {
            is_bad[x] = false;
            labels.next_hops(&tree, x, &mut hops);
            // A switch that only sent the LID towards a repaired one keeps its port when that is
            // still a shortest up/down next hop.
            if tables[x].ports.get(lid).is_some_and(|was| hops.contains(was)) {
                continue;
            }
            let load = loads.entry(x).or_insert_with(|| port_loads(&tables[x]));
            let new = hops.iter().copied().min_by_key(|p| (load[usize::from(p.0)], p.0)).unwrap_or(Lft::UNROUTED);
            if new != Lft::UNROUTED {
                load[usize::from(new.0)] += 1;
            }
            if set(&mut tables, x, lid, new) {
                entries += 1;
            }
        }
    }
    Ok(Repaired { routes: Routes { tables }, lost, lids: affected.len(), entries })
}

/// Sets switch `x`'s entry for `lid` to `port`, copying its table first if it is shared;
/// whether the entry changed.
fn set(tables: &mut [Arc<Lft>], x: usize, lid: usize, port: PortNum) -> bool {
    let Some(t) = tables.get_mut(x) else { return false };
    if t.ports.get(lid).is_none_or(|&e| e == port) {
        return false;
    }
    if let Some(e) = Arc::make_mut(t).ports.get_mut(lid) {
        *e = port;
    }
    true
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
        if tables.get(s).and_then(|t| t.ports.get(lid)) == Some(&p) && !is_bad[s] {
            is_bad[s] = true;
            bad.push(s);
        }
    }
    let mut head = 0;
    while let Some(&z) = bad.get(head) {
        head += 1;
        for &(_, y, rport) in idx.graph.links(z) {
            if !is_bad[y] && tables[y].ports.get(lid) == Some(&rport) {
                is_bad[y] = true;
                bad.push(y);
            }
        }
    }
}

/// A non-leaf switch's LID: the `bad` switches reattach to switches whose paths are intact or
/// already repaired. One whose old next hop is (or becomes) repaired keeps its port; when none
/// can, the first bad switch (nearest the lost cable) with a repaired or intact neighbour takes
/// its lowest port to one, and so on. One that cannot (cut off) drops the LID. A switch is only
/// ever pointed at a path that meets no bad switch, so no loop forms. Linear in the bad set and
/// its links, plus a scan of it per reattachment. Returns the entries changed; clears the flags.
fn reattach(idx: &Indexed, tables: &mut [Arc<Lft>], lid: usize, bad: &[usize], is_bad: &mut [bool]) -> usize {
    let entry = |tables: &[Arc<Lft>], x: usize| tables.get(x).and_then(|t| t.ports.get(lid)).copied();
    let mut changed = 0;
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
        if set(tables, x, lid, p) {
            changed += 1;
        }
        queue.push(x);
    }
    for &x in bad {
        if is_bad[x] {
            is_bad[x] = false;
            if set(tables, x, lid, Lft::UNROUTED) {
                changed += 1;
            }
        }
    }
    changed
}
