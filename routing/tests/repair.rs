//! Repairing fat-tree routes after cables fail: the repaired tables route every pair of the
//! degraded fabric without a loop or a credit loop between CAs, change only the LIDs whose
//! routes crossed a lost cable, and are the same whichever order the cables fail in.

mod common;

use ibsm_mad::PortNum;
use ibsm_routing::check::{CdgTraffic, CheckOptions, CreditLoops, check_with};
use ibsm_routing::ftree::FatTree;
use ibsm_routing::{Engine, FabricView, NodeId, Routes};
use ibsm_topology::generators::GenSpec;

/// `view` less the switch-to-switch cable at switch `s` port `p` (both ends).
fn cut(view: &FabricView, s: usize, p: u8) -> FabricView {
    let mut v = view.clone();
    let Some(nb) = v.switches[s].ports[usize::from(p)].take() else { panic!("no cable at {s}/{p}") };
    match nb.node {
        NodeId::Switch(o) => v.switches[o].ports[usize::from(nb.port.0)] = None,
        NodeId::Ca(c) => {
            // The CA behind it is gone from the view with its cable.
            v.cas.remove(c);
            for sw in &mut v.switches {
                for q in sw.ports.iter_mut().flatten() {
                    if let NodeId::Ca(k) = q.node
                        && k > c
                    {
                        q.node = NodeId::Ca(k - 1);
                    }
                }
            }
        }
    }
    v
}

/// The switch-to-switch cables of `view`, as (switch, port) on the lower-indexed end.
fn trunks(view: &FabricView) -> Vec<(usize, u8)> {
    let mut out = Vec::new();
    for (s, sw) in view.switches.iter().enumerate() {
        for (p, nb) in sw.ports.iter().enumerate() {
            if let Some(nb) = nb
                && matches!(nb.node, NodeId::Switch(o) if o > s)
            {
                out.push((s, p as u8));
            }
        }
    }
    out
}

/// Every CA pair reachable without a loop, and no credit loop in the CA-to-CA traffic (what
/// the engine guarantees on any fat tree, as a full route of a degraded tree does).
fn assert_routes_everything(view: &FabricView, routes: &Routes, what: &str) {
    let opts = CheckOptions { credit_loops: true, cdg_traffic: CdgTraffic::CaToCa, ..CheckOptions::default() };
    let rep = check_with(view, routes, &opts);
    assert_eq!(rep.reachable, rep.pairs, "{what}: {rep}");
    assert_eq!(rep.loops, 0, "{what}: {rep}");
    assert!(!matches!(rep.credit_loops, CreditLoops::Found(_)), "{what}: {rep}");
}

#[test]
fn a_lost_trunk_changes_only_the_lids_routed_over_it_and_the_rest_stays() {
    let base = common::view(&common::generate(&GenSpec::fat_tree(3, 8)), 0);
    let old = FatTree.route(&base).expect("routes");
    let cables = trunks(&base);
    // Every tenth trunk: edge-agg and agg-core cables alike.
    for &(s, p) in cables.iter().step_by(10) {
        let view = cut(&base, s, p);
        let r = FatTree.repair(&base, &old, &view).expect("a subset").expect("still a fat tree");
        assert_routes_everything(&view, &r.routes, &format!("cut {s}/{p}"));
        assert_eq!(r.lost.len(), 2, "both ends");
        // A LID keeps its whole column unless its route crossed the lost cable.
        let crossed = |lid: usize| r.lost.iter().any(|&(x, q)| old.tables[x].entry(lid) == Some(q));
        for lid in 0..old.tables[0].len() {
            let changed = (0..base.switches.len()).any(|x| old.tables[x].entry(lid) != r.routes.tables[x].entry(lid));
            assert!(!changed || crossed(lid), "cut {s}/{p}: LID {lid} changed without crossing the cable");
        }
        assert!(r.lids > 0 && r.entries > 0, "cut {s}/{p}");
        // As balanced as a full route of the degraded fabric, within one route per link.
        let shifts =
            |routes: &Routes| check_with(&view, routes, &CheckOptions::default()).shifts.expect("shifts").worst;
        let full = FatTree.route(&view).expect("full route");
        let (repaired, fresh) = (shifts(&r.routes), shifts(&full));
        assert!(repaired <= fresh + 1, "cut {s}/{p}: repaired {repaired}, full {fresh}");
        // Nothing is routed over the lost ports any more.
        for &(x, q) in &r.lost {
            assert!(!r.routes.tables[x].iter().any(|e| e == q), "cut {s}/{p}: switch {x} still uses port {}", q.0);
        }
    }
}

#[test]
fn repairs_depend_only_on_what_is_lost_and_nothing_lost_is_nothing_changed() {
    let base = common::view(&common::generate(&GenSpec::fat_tree(3, 8)), 0);
    let old = FatTree.route(&base).expect("routes");
    let same = FatTree.repair(&base, &old, &base).expect("a subset").expect("fat tree");
    assert_eq!((same.routes, same.lids, same.entries), (old.clone(), 0, 0));
    let cables = trunks(&base);
    let (a, b) = (cables[3], cables[40]);
    let both = cut(&cut(&base, a.0, a.1), b.0, b.1);
    let r = FatTree.repair(&base, &old, &both).expect("subset").expect("fat tree");
    assert_routes_everything(&both, &r.routes, "two cuts");
    assert_eq!(r.lost.len(), 4);
    // The second cable comes back: repairing from the same base for the one still missing
    // gives the tables of the first failure alone.
    let one = cut(&base, a.0, a.1);
    let r1 = FatTree.repair(&base, &old, &one).expect("subset").expect("fat tree");
    let again = FatTree.repair(&base, &old, &one).expect("subset").expect("fat tree");
    assert_eq!(r1.routes, again.routes, "deterministic");
}

#[test]
fn a_host_cable_lost_keeps_every_route_and_other_changes_are_not_repairs() {
    let base = common::view(&common::generate(&GenSpec::fat_tree(2, 8)), 0);
    let old = FatTree.route(&base).expect("routes");
    // Leaf 0 port 1 leads to a host: it vanishes; routes to the others stay as they were.
    let leaf = (0..base.switches.len())
        .find(|&s| base.switches[s].ports.iter().flatten().any(|n| matches!(n.node, NodeId::Ca(_))))
        .expect("a leaf");
    let port = (1..base.switches[leaf].ports.len())
        .find(|&p| matches!(base.switches[leaf].ports[p].map(|n| n.node), Some(NodeId::Ca(_))))
        .expect("host port") as u8;
    let view = cut(&base, leaf, port);
    let r = FatTree.repair(&base, &old, &view).expect("subset").expect("fat tree");
    assert_eq!(r.entries, 0, "a vanished host's LID keeps its routes; nothing else crossed its cable");
    assert_routes_everything(&view, &r.routes, "host gone");
    // A cable that appears, or a LID that moves, is no repair.
    let mut moved = base.clone();
    moved.cas[0].ports[0].lid = ibsm_mad::Lid(moved.cas[0].ports[0].lid.0 + 1000);
    assert!(FatTree.repair(&base, &old, &moved).is_none());
    assert!(FatTree.repair(&view, &old, &base).is_none(), "a cable more than the base");
    let mut rewired = base.clone();
    let (s, p) = trunks(&base)[0];
    if let Some(n) = rewired.switches[s].ports[usize::from(p)].as_mut() {
        n.port = PortNum(n.port.0 ^ 1);
    }
    assert!(FatTree.repair(&base, &old, &rewired).is_none(), "a cable moved");
}

/// `view` less switch `s` (its cables with it).
fn crash(view: &FabricView, s: usize) -> FabricView {
    let mut v = view.clone();
    v.switches.remove(s);
    let fix = |n: &mut Option<ibsm_routing::Neighbor>| match n.map(|x| x.node) {
        Some(NodeId::Switch(o)) if o == s => *n = None,
        Some(NodeId::Switch(o)) if o > s => {
            if let Some(x) = n.as_mut() {
                x.node = NodeId::Switch(o - 1);
            }
        }
        _ => {}
    };
    for sw in &mut v.switches {
        sw.ports.iter_mut().for_each(fix);
    }
    for ca in &mut v.cas {
        for p in &mut ca.ports {
            fix(&mut p.neighbor);
        }
    }
    v
}

#[test]
fn a_crashed_switch_is_repaired_around() {
    let base = common::view(&common::generate(&GenSpec::fat_tree(3, 8)), 0);
    let old = FatTree.route(&base).expect("routes");
    let leaves: Vec<usize> = (0..base.switches.len())
        .filter(|&s| base.switches[s].ports.iter().flatten().any(|n| matches!(n.node, NodeId::Ca(_))))
        .collect();
    // A switch without CAs, and the last switch of the view (a leaf: its CAs go with it).
    for s in [(0..base.switches.len()).find(|s| !leaves.contains(s)).expect("non-leaf"), base.switches.len() - 1] {
        let view = crash(&base, s);
        let r = FatTree.repair(&base, &old, &view).expect("a subset").expect("still a fat tree");
        assert_eq!(r.routes.tables.len(), view.switches.len());
        assert_routes_everything(&view, &r.routes, &format!("switch {s} crashed"));
        // No LID that still has an owner is routed over a lost cable (the crashed switch's own
        // LID keeps its routes: they lead nowhere either way).
        let owned: Vec<usize> = view
            .switches
            .iter()
            .map(|w| usize::from(w.lid.0))
            .chain(
                view.cas
                    .iter()
                    .flat_map(|c| c.ports.iter().filter(|p| p.neighbor.is_some()).map(|p| usize::from(p.lid.0))),
            )
            .collect();
        for &(x, q) in &r.lost {
            for &lid in &owned {
                assert_ne!(
                    r.routes.tables[x].entry(lid),
                    Some(q),
                    "switch {x} routes LID {lid} over lost port {}",
                    q.0
                );
            }
        }
        // Tables of switches that kept every cable and every route are the old ones.
        let untouched = (0..view.switches.len()).filter(|&i| {
            let m = if i >= s { i + 1 } else { i };
            r.routes.tables[i] == old.tables[m]
        });
        assert!(untouched.count() > 0);
    }
}

/// Any one trunk cable lost (every fourth of the 3-level k = 8 tree's, spine and leaf cables
/// alike): the whole data plane, the switches' management traffic included, is free of credit
/// loops, routed from scratch and repaired alike: every valley turns at the cut-off leaf's
/// valley switch. (Before the valley switch, half of these cuts gave loops routed from scratch,
/// and every repair did.)
#[test]
fn one_lost_cable_leaves_the_whole_data_plane_free_of_credit_loops() {
    let base = common::view(&common::generate(&GenSpec::fat_tree(3, 8)), 0);
    let old = FatTree.route(&base).expect("routes");
    let opts = CheckOptions { shifts: false, cdg_traffic: CdgTraffic::DataPlane, ..CheckOptions::default() };
    for &(s, p) in trunks(&base).iter().step_by(4) {
        let view = cut(&base, s, p);
        let full = FatTree.route(&view).expect("full route");
        let rep = check_with(&view, &full, &opts);
        assert!(rep.is_clean(), "cut {s}/{p}, routed from scratch: {rep}");
        let r = FatTree.repair(&base, &old, &view).expect("a subset").expect("still a fat tree");
        let rep = check_with(&view, &r.routes, &opts);
        assert!(rep.is_clean(), "cut {s}/{p}, repaired: {rep}");
    }
}
