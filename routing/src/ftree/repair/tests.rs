//! The repair against the straightforward form it was first written in (one pass, LID after
//! LID, each switch's loads counted from its table when it first chooses, tables copied as they
//! change): the same tables, LIDs and entries on single and double cable cuts, crashed switches
//! and degraded trees, at LMC 0 and 1.

use std::collections::HashMap;
use std::sync::Arc;

use ibsm_mad::PortNum;
use ibsm_topology::generators::{FatTree as Gen, GenSpec};

use super::{Labels, PortLoads, Repaired, find_bad, lost_cables, reroute_switch_lid};
use crate::NodeId;
use crate::ftree::Csr;
use crate::ftree::shape::{Prepared, Shape};
use crate::ftree::valley::{Tops, Valleys};
use crate::ftree::{FatTree, FtreeError, Tree};
use crate::graph::FAR;
use crate::graph::Indexed;
use crate::testing::{crash, cut, generated, trunks};
use crate::{Engine, FabricView, Lft, Routes};

/// The first form of the repair (see the module doc).
fn reference_repair(base: &FabricView, old: &Routes, view: &FabricView) -> Option<Repaired> {
    let (from, lost) = lost_cables(base, view)?;
    let tables = from.iter().map(|&m| Arc::clone(&old.tables[m])).collect();
    reference(view, tables, lost).ok()
}

fn port_loads_ref(table: &Lft) -> Vec<u32> {
    let mut loads = vec![0u32; 256];
    for p in table.iter() {
        loads[usize::from(p.0)] += 1;
    }
    loads
}

fn reference(
    view: &FabricView,
    mut tables: Vec<Arc<Lft>>,
    lost: Vec<(usize, PortNum)>,
) -> Result<Repaired, FtreeError> {
    let idx = Indexed::new(view)?;
    let tree = Tree::new(view, &idx)?;
    let n = tree.len();
    for t in &mut tables {
        if t.len() != usize::from(idx.top) + 1 {
            Arc::make_mut(t).entries_mut().resize(usize::from(idx.top) + 1, Lft::UNROUTED);
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
    let tops = Tops::new(&tree);
    let mut leaves: Vec<usize> = affected.iter().map(|a| a.0).filter(|&s| idx.hosts_at[s] > 0).collect();
    leaves.dedup();
    let valleys = Valleys::compute(&tree, &tops, &leaves);
    let mut labels = Labels::new(n);
    let mut path = Vec::new();
    let mut loads: HashMap<usize, Vec<u32>> = HashMap::new();
    let (mut bad, mut is_bad, mut hops) = (Vec::new(), vec![false; n], Vec::new());
    let mut entries = 0;
    for &(_, lid) in &affected {
        let Some(d) = owner.get(lid).copied().flatten().and_then(|k| idx.dests.get(k)) else { continue };
        let leafy = d.ca.is_some() || idx.hosts_at.get(d.attach).is_some_and(|&h| h > 0);
        find_bad(&idx, &tables, &lost, lid, &mut bad, &mut is_bad);
        if !leafy {
            if bad.is_empty() {
                continue;
            }
            let mut sets = Vec::new();
            let shared = (&idx, &tree, &tables[..]);
            reroute_switch_lid(shared, (d.attach, lid), (&bad, &mut is_bad, valleys.cut), &mut labels, &mut sets);
            valleys.reroute((&tree, &tops), d.attach, &mut path, |x, p| sets.push((x, p)));
            // In order, later entries win: what changes in the end is what counts.
            let was: Vec<(usize, PortNum)> = sets.iter().map(|&(x, _)| (x, tables[x].entry(lid).unwrap())).collect();
            for &(x, p) in &sets {
                set(&mut tables, x, lid, p);
            }
            let mut seen = std::collections::HashSet::new();
            for &(x, old) in &was {
                if seen.insert(x) && tables[x].entry(lid) != Some(old) {
                    entries += 1;
                }
            }
            continue;
        }
        for &x in &bad {
            is_bad[x] = false;
        }
        labels.reset(&tree, d.attach);
        for &x in &bad {
            labels.next_hops(&tree, x, &mut hops);
            if let Some(routes) = valleys.strand_of(d.attach)
                && labels.of(&tree, x) == FAR
            {
                hops.clear();
                hops.extend(routes.iter().filter(|r| r.0 as usize == x).map(|r| r.1));
            }
            // A switch that only sent the LID towards a repaired one keeps its port when that is
            // still a shortest up/down next hop.
            if tables[x].entry(lid).is_some_and(|was| hops.contains(&was)) {
                continue;
            }
            let load = loads.entry(x).or_insert_with(|| port_loads_ref(&tables[x]));
            let new = hops.iter().copied().min_by_key(|p| (load[usize::from(p.0)], p.0)).unwrap_or(Lft::UNROUTED);
            if new != Lft::UNROUTED {
                load[usize::from(new.0)] += 1;
            }
            if set(&mut tables, x, lid, new) {
                entries += 1;
            }
        }
    }
    Ok(Repaired { routes: Routes { tables }, lost, lids: affected.len(), entries, deltas: Vec::new() })
}

/// Each repaired table against the base table its switch started from, entry by entry: the
/// LIDs that differ (`None` where none does).
fn deltas_by_comparison(
    base: &FabricView,
    old: &Routes,
    view: &FabricView,
    tables: &[Arc<Lft>],
) -> Vec<Option<Vec<u16>>> {
    let Some((from, _)) = lost_cables(base, view) else { return Vec::new() };
    from.iter()
        .zip(tables)
        .map(|(&m, t)| {
            let was = &old.tables[m];
            let lids: Vec<u16> = (0..t.len().max(was.len()))
                .filter(|&l| t.entry(l) != was.entry(l))
                .map(|l| u16::try_from(l).unwrap())
                .collect();
            (!lids.is_empty()).then_some(lids)
        })
        .collect()
}

/// Sets switch `x`'s entry for `lid` to `port`, copying its table first if it is shared;
/// whether the entry changed.
fn set(tables: &mut [Arc<Lft>], x: usize, lid: usize, port: PortNum) -> bool {
    let Some(t) = tables.get_mut(x) else { return false };
    if t.entry(lid).is_none_or(|e| e == port) {
        return false;
    }
    Arc::make_mut(t).set(lid, port)
}

fn assert_same(base: &FabricView, old: &Routes, view: &FabricView, what: &str) {
    let want = reference_repair(base, old, view);
    let got = FatTree.repair(base, old, view).and_then(Result::ok);
    assert_eq!(want.is_some(), got.is_some(), "{what}");
    // With the counts of the base's tables worked out before, the same repair.
    let counted = FatTree.repair_counted(base, old, Some(&PortLoads::count(old)), view).and_then(Result::ok);
    assert!(counted == got, "{what}: the repair with counts given differs");
    // With the base's shape kept, the same repair (taken down to the cut fabric or not).
    let kept = Arc::new(base.clone());
    let shape = Shape::of(&kept);
    let shaped = FatTree.repair_shaped(&kept, old, Some(&PortLoads::count(old)), shape.as_ref(), view);
    assert!(shaped.and_then(Result::ok) == got, "{what}: the repair from the kept shape differs");
    if let (Some(w), Some(g)) = (want, got) {
        assert_eq!((w.lids, w.entries, &w.lost), (g.lids, g.entries, &g.lost), "{what}");
        assert!(w.routes == g.routes, "{what}: tables differ");
        // The deltas name exactly the entries that differ from the base's table, and a table
        // with none is the base's own `Arc`.
        let (from, _) = lost_cables(base, view).unwrap();
        let truth = deltas_by_comparison(base, old, view, &g.routes.tables);
        assert_eq!(g.deltas.len(), g.routes.tables.len(), "{what}");
        for (i, (d, t)) in g.deltas.iter().zip(&truth).enumerate() {
            let same_len = g.routes.tables[i].len() == old.tables[from[i]].len();
            match (d, t) {
                (Some(d), Some(t)) => {
                    assert_eq!(&d.lids, t, "{what}: switch {i}'s delta");
                    assert!(Arc::ptr_eq(&d.from, &old.tables[from[i]]), "{what}: switch {i}'s delta from");
                }
                (None, None) if same_len => {
                    assert!(Arc::ptr_eq(&g.routes.tables[i], &old.tables[from[i]]), "{what}: switch {i} copied");
                }
                (None, _) if !same_len => {}
                _ => panic!("{what}: switch {i}: delta {d:?}, entries that differ {t:?}"),
            }
        }
    }
}

#[test]
fn repairs_equal_the_first_form_on_cuts_pairs_and_crashes() {
    let specs = [
        GenSpec::fat_tree(3, 8),
        GenSpec::fat_tree(2, 8),
        GenSpec::FatTree(Gen::new(3, 6).oversubscribed(2)),
        GenSpec::FatTree(Gen::new(3, 8).degraded(12, 3, 11)),
        GenSpec::FatTree(Gen::new(3, 8).degraded(30, 2, 5)),
    ];
    for (k, spec) in specs.iter().enumerate() {
        for lmc in [0, 1] {
            let base = generated(spec, lmc);
            let Ok(old) = FatTree.route(&base) else { continue };
            let cables = trunks(&base);
            let mut changed = 0;
            for (i, &(s, p)) in cables.iter().enumerate() {
                let one = cut(&base, s, p);
                assert_same(&base, &old, &one, &format!("fabric {k} lmc {lmc} cut {s}/{p}"));
                changed +=
                    usize::from(FatTree.repair(&base, &old, &one).and_then(Result::ok).is_some_and(|r| r.entries > 0));
                // And with a second cable further on (several LIDs through both, reattachments
                // before choices on one switch).
                if i % 3 == 0 {
                    let (s2, p2) = cables[(i * 7 + 5) % cables.len()];
                    let two = cut(&one, s2, p2);
                    assert_same(&base, &old, &two, &format!("fabric {k} lmc {lmc} cuts {s}/{p} {s2}/{p2}"));
                }
            }
            assert!(changed > 0, "fabric {k}: some cut changes routes");
            for s in (0..base.switches.len()).step_by(5) {
                assert_same(&base, &old, &crash(&base, s), &format!("fabric {k} lmc {lmc} crash {s}"));
            }
        }
    }
}

/// Counts of other tables than the base's (equal in length, different in content: every entry
/// unrouted) are not taken for the base's: the repair counts those tables itself and comes out
/// as the first form's.
#[test]
fn counts_of_other_tables_are_not_taken() {
    let base = generated(&GenSpec::fat_tree(3, 8), 0);
    let old = FatTree.route(&base).unwrap();
    let others =
        Routes { tables: old.tables.iter().map(|t| Arc::new(Lft::from(vec![Lft::UNROUTED; t.len()]))).collect() };
    let wrong = PortLoads::count(&others);
    let mut compared = 0;
    for &(s, p) in trunks(&base).iter().step_by(4) {
        let one = cut(&base, s, p);
        let want = reference_repair(&base, &old, &one).expect("a cut is repaired");
        let got = FatTree.repair_counted(&base, &old, Some(&wrong), &one).and_then(Result::ok).expect("repaired");
        assert!(got.routes == want.routes, "cut {s}/{p}: tables differ");
        assert_eq!((got.lids, got.entries), (want.lids, want.entries), "cut {s}/{p}");
        compared += usize::from(got.entries > 0);
    }
    assert!(compared > 0, "some cut moves entries");
}

/// A repair copies only the blocks it changes: each table it changes is derived from the old
/// one and shares the memory of every block without a moved LID; the others are the old ones.
#[test]
fn a_repair_copies_only_the_blocks_it_changes() {
    use std::collections::BTreeSet;
    let base = generated(&GenSpec::fat_tree(3, 12), 0);
    let old = FatTree.route(&base).unwrap();
    let mut derived = 0;
    for &(s, p) in trunks(&base).iter().step_by(7) {
        let one = cut(&base, s, p);
        let (from, _) = lost_cables(&base, &one).unwrap();
        let got = FatTree.repair(&base, &old, &one).and_then(Result::ok).expect("repaired");
        for (i, (t, d)) in got.routes.tables.iter().zip(&got.deltas).enumerate() {
            let was = &old.tables[from[i]];
            let Some(d) = d else {
                assert!(Arc::ptr_eq(t, was), "cut {s}/{p}: switch {i} unchanged, yet not the old table");
                continue;
            };
            let moved: BTreeSet<usize> = d.lids.iter().map(|&l| usize::from(l) / Lft::BLOCK).collect();
            let copied: BTreeSet<usize> =
                (0..t.len().div_ceil(Lft::BLOCK)).filter(|&b| !t.shares_block(was, b)).collect();
            match t.own_blocks() {
                Some(n) => {
                    assert_eq!(moved, copied, "cut {s}/{p}: switch {i}'s own blocks are those of its moved LIDs");
                    assert_eq!(n, copied.len(), "cut {s}/{p}: switch {i}");
                    derived += 1;
                }
                // Made flat again: more than eight blocks changed (at most an eighth, and at
                // least eight, are held as copies), and none is shared.
                None => assert!(moved.len() > 8 && copied.len() == t.len().div_ceil(Lft::BLOCK), "cut {s}/{p}: {i}"),
            }
        }
    }
    assert!(derived > 0, "some cut changes tables");
}

// The base's shape taken down to a cut fabric ([`Shape::without`]) against a fresh set-up.

/// Everything a repair reads from a set-up, as plain values.
fn flat(p: &Prepared<'_>) -> impl PartialEq + std::fmt::Debug {
    let csr = |c: &Csr| (c.start.clone(), c.links.iter().map(|l| (l.n, l.port, l.rport)).collect::<Vec<_>>());
    let t = &p.tree;
    (
        (p.idx.graph.all_links(), p.idx.dests.clone(), p.idx.hosts_at.clone(), p.idx.per_port, p.idx.top),
        (t.level.clone(), csr(&t.up), t.up_ports.clone(), csr(&t.down), csr(&t.all), t.by_level.clone()),
        (t.comp.clone(), p.tops.raw(), p.owner.to_vec()),
    )
}

/// What the repair would take from the shape for `view`, as it asks (`None`: set up afresh).
fn taken<'a>(shape: &'a Shape, base: &FabricView, view: &FabricView) -> Option<Prepared<'a>> {
    let (from, lost, cas_whole) = super::derivation(base, view)?;
    let aligned = from.len() == base.switches.len() && from.iter().enumerate().all(|(i, &m)| i == m);
    shape.without(&lost).filter(|_| aligned && cas_whole)
}

/// The shape less lost cables equals a fresh set-up of the cut fabric wherever it answers,
/// and it answers for every single trunk cut of whole trees (the case it is for).
#[test]
fn shape_less_lost_links_equals_a_fresh_set_up() {
    let specs = [
        (GenSpec::fat_tree(3, 8), 0, true),
        (GenSpec::fat_tree(3, 4), 1, true),
        (GenSpec::fat_tree(2, 6), 0, true),
        (GenSpec::FatTree(Gen::new(3, 6).oversubscribed(2)), 0, true),
        (GenSpec::FatTree(Gen::new(3, 8).degraded(12, 3, 11)), 0, false),
    ];
    for (spec, lmc, whole) in specs {
        let base = Arc::new(generated(&spec, lmc));
        let shape = Shape::of(&base).expect("a fat tree");
        assert!(shape.is_of(&base) && !shape.is_of(&base.as_ref().clone()));
        let links = trunks(&base);
        let mut cases: Vec<FabricView> = links.iter().map(|&(s, p)| cut(&base, s, p)).collect();
        // Pairs of cables, a crashed switch, a host's cable.
        for (i, &(s, p)) in links.iter().enumerate().step_by(3) {
            let (t, q) = links[(i * 7 + 1) % links.len()];
            cases.push(cut(&cut(&base, s, p), t, q));
        }
        cases.push(crash(&base, 0));
        cases.push(crash(&base, base.switches.len() - 1));
        let mut host = base.as_ref().clone();
        if let Some(p) = host.cas[0].ports.first_mut() {
            let far = p.neighbor.take().expect("cabled");
            let NodeId::Switch(s) = far.node else { panic!("a switch") };
            host.switches[s].ports[usize::from(far.port.0)] = None;
        }
        cases.push(host);
        let (mut answered, mut singles) = (0, 0);
        for (k, view) in cases.iter().enumerate() {
            let Some(got) = taken(&shape, &base, view) else { continue };
            answered += 1;
            singles += usize::from(k < links.len());
            let want = Prepared::fresh(view).expect("still a fat tree");
            assert_eq!(flat(&got), flat(&want), "{spec:?} lmc {lmc} case {k}");
        }
        assert!(taken(&shape, &base, cases.last().expect("host")).is_none(), "a host's cable");
        if whole {
            assert_eq!(singles, links.len(), "{spec:?}: every single cut taken from the shape");
        }
        assert!(answered > 0, "{spec:?}");
    }
}

/// A leaf that loses its only up link: the shape declines, and so it does for a cable to a
/// CA and a cable lost at one end only.
#[test]
fn shape_declines_what_it_cannot_show() {
    let base = Arc::new(generated(&GenSpec::fat_tree(3, 4), 0));
    let shape = Shape::of(&base).expect("a fat tree");
    let is_ca = |n: &Option<crate::Neighbor>| n.is_some_and(|n| matches!(n.node, NodeId::Ca(_)));
    let leaf = (0..base.switches.len()).find(|&s| base.switches[s].ports.iter().any(is_ca)).expect("a leaf");
    let ca_port = base.switches[leaf].ports.iter().position(is_ca).expect("a host port");
    assert!(shape.without(&[(leaf, PortNum(ca_port as u8))]).is_none());
    let ups: Vec<(usize, PortNum)> = base.switches[leaf]
        .ports
        .iter()
        .enumerate()
        .filter(|(_, n)| n.is_some_and(|n| matches!(n.node, NodeId::Switch(_))))
        .map(|(p, _)| (leaf, PortNum(p as u8)))
        .collect();
    assert!(ups.len() >= 2);
    assert!(shape.without(&ups[..1]).is_none(), "one end only");
    let both = |ports: &[(usize, PortNum)]| {
        let mut out = Vec::new();
        for &(s, p) in ports {
            let far = base.switches[s].ports[usize::from(p.0)].expect("cabled");
            let NodeId::Switch(j) = far.node else { panic!("a trunk") };
            out.extend([(s, p), (j, far.port)]);
        }
        out
    };
    assert!(shape.without(&both(&ups[..1])).is_some());
    assert!(shape.without(&both(&ups)).is_none(), "the leaf's last up link");
}
