//! The layered repair on random fabrics and tori, dfsssp's and nue's routes: after one cable
//! cut, every pair is routed, no layer has a credit loop (nor, without stranded pairs, the new
//! tables with every pair on its old layer; nor, where the repair says one pass, any state that
//! writes the switches one by one), and every path that did not cross the cable keeps its route
//! and layer.

use ibsm_mad::Lid;
use proptest::prelude::*;

use super::*;
use crate::check::{CreditLoops, check, credit_loops_per_vl};
use crate::dfsssp::Dfsssp;
use crate::nue::Nue;
use crate::testing::{cut, generated, trunks};
use crate::{Engine, NodeId, Routes};
use ibsm_topology::generators::GenSpec;

/// The switches and ports the route from switch `s` to `lid` crosses, `None` if it does not
/// arrive at `lid`'s switch within the switch count.
fn route(view: &FabricView, routes: &Routes, s: usize, d: &DestLid) -> Option<Vec<(usize, u8)>> {
    let mut at = s;
    let mut hops = Vec::new();
    for _ in 0..=view.switches.len() {
        if at == d.attach {
            return Some(hops);
        }
        let p = routes.tables.get(at)?.port_for(Lid(d.lid))?;
        hops.push((at, p.0));
        match view.switches.get(at)?.ports.get(usize::from(p.0)).copied().flatten()?.node {
            NodeId::Switch(o) => at = o,
            NodeId::Ca(_) => return None,
        }
    }
    None
}

/// The destination LIDs of `view` as the placer takes them.
fn dests(view: &FabricView) -> (Indexed, Vec<DestLid>) {
    let idx = Indexed::new(view).expect("a valid view");
    let d = idx
        .dests
        .iter()
        .flat_map(|d| {
            (0..idx.per_port).map(move |k| DestLid { lid: d.base + k, attach: d.attach, to_ca: d.ca.is_some() })
        })
        .collect();
    (idx, d)
}

/// Cuts cable `k` (of the trunks, modulo) of `view` routed as `old`, repairs, and checks the
/// properties the module doc gives; returns (paths kept, re-routed, stranded).
fn cut_and_check(
    view: &FabricView,
    old: &Layered,
    k: usize,
    budget: u8,
    engine: &'static str,
) -> (usize, LayeredRepair) {
    let cables = trunks(view);
    let (s0, p0) = cables[k % cables.len()];
    let new = cut(view, s0, p0);
    // Both ends of the cable.
    let far = view.switches[s0].ports[p0].map(|n| (n.node, n.port)).expect("a cable");
    let NodeId::Switch(s1) = far.0 else { panic!("a trunk") };
    let lost = [(s0, u8::try_from(p0).expect("port")), (s1, far.1.0)];
    let rep =
        repair(view, &old.routes, Some(&old.layers), &new, budget, engine).expect("a cut fabric").expect("repaired");
    let got = &rep.layered;
    // Every pair routed where the cut leaves a way (as a full route finds).
    let full_routes = Dfsssp::with_layers(15).route(&new).expect("routable");
    let full = check(&new, &full_routes);
    let r = check(&new, &got.routes);
    assert_eq!((r.reachable, r.black_holes, r.loops), (full.reachable, full.black_holes, 0), "cable {s0}:{p0}");
    // No credit loop on any layer.
    for vl in credit_loops_per_vl(&new, &got.routes, &|s, d| got.layers.layer(s, d)) {
        assert!(matches!(vl.loops, CreditLoops::None), "cable {s0}:{p0} VL {}: {:?}", vl.vl, vl.loops);
    }
    assert!(got.layers.used() <= budget.max(old.layers.used()));
    // Paths that did not cross the cable keep their route and layer; the others cross it no more.
    let (idx, ds) = dests(&new);
    let mut kept = 0;
    for d in &ds {
        for s in (0..new.switches.len()).filter(|&s| laid(&idx, d, s)) {
            let before = route(view, &old.routes, s, d).expect("the old route arrives");
            let Some(after) = route(&new, &got.routes, s, d) else {
                assert!(route(&new, &full_routes, s, d).is_none(), "cable {s0}:{p0}: switch {s} to LID {}", d.lid);
                continue;
            };
            let (l0, l1) = (old.layers.layer(s, Lid(d.lid)), got.layers.layer(s, Lid(d.lid)));
            if before.iter().any(|h| lost.contains(h)) {
                assert!(after.iter().all(|h| !lost.contains(h)));
            } else {
                assert_eq!(before, after, "cable {s0}:{p0}: switch {s} to LID {}", d.lid);
                assert_eq!(l0, l1, "cable {s0}:{p0}: switch {s} to LID {}", d.lid);
                kept += 1;
            }
        }
    }
    // Where the repair says one pass, every state between old and new entries is free of
    // credit loops on the old layers: checked on the states that write the switches one by one
    // in switch order and in reverse.
    let n = new.switches.len();
    let old_sl = |s: usize, d: Lid| old.layers.layer(s, d);
    if rep.one_pass {
        for rev in [false, true] {
            let mut state = old.routes.clone();
            for k in 0..n {
                let x = if rev { n - 1 - k } else { k };
                state.tables[x] = Arc::clone(&got.routes.tables[x]);
                for vl in credit_loops_per_vl(&new, &state, &old_sl) {
                    assert!(matches!(vl.loops, CreditLoops::None), "cable {s0}:{p0} state {k}: VL {}", vl.vl);
                }
            }
        }
    }
    // The new tables with the old layers: every pair kept its layer but the stranded.
    if rep.stranded == 0 {
        for vl in credit_loops_per_vl(&new, &got.routes, &old_sl) {
            assert!(matches!(vl.loops, CreditLoops::None), "cable {s0}:{p0} old SLs: VL {}", vl.vl);
        }
    }
    (kept, rep)
}

#[test]
fn a_cut_on_a_torus_re_routes_only_the_paths_that_crossed_it() {
    let v = generated(&GenSpec::torus(&[4, 4, 4], 1), 0);
    let old = Dfsssp::default().layered(&v).unwrap();
    for k in [0, 7, 50] {
        let (kept, rep) = cut_and_check(&v, &old, k, 8, Dfsssp::NAME);
        assert!(rep.rerouted > 0 && rep.entries > 0 && rep.lids > 0);
        assert!(kept > 10 * rep.rerouted, "kept {kept}, re-routed {}", rep.rerouted);
        eprintln!(
            "cable {k}: {kept} kept, {} re-routed, {} stranded, one pass {}",
            rep.rerouted, rep.stranded, rep.one_pass
        );
        assert!(rep.stranded * 5 < rep.rerouted, "most re-routed paths keep their layer");
        assert!(rep.rank.iter().any(|&r| r != u32::MAX));
    }
}

#[test]
fn an_equal_fabric_changes_nothing_and_a_foreign_one_is_refused() {
    let v = generated(&GenSpec::torus(&[3, 3], 1), 0);
    let old = Dfsssp::default().layered(&v).unwrap();
    let same = repair(&v, &old.routes, Some(&old.layers), &v, 8, Dfsssp::NAME).unwrap().unwrap();
    assert_eq!((same.lids, same.entries, same.rerouted), (0, 0, 0));
    assert_eq!(same.layered.routes, old.routes);
    for d in &dests(&v).1 {
        for s in 0..v.switches.len() {
            assert_eq!(same.layered.layers.layer(s, Lid(d.lid)), old.layers.layer(s, Lid(d.lid)));
        }
    }
    let other = generated(&GenSpec::torus(&[3, 4], 1), 0);
    assert!(repair(&v, &old.routes, Some(&old.layers), &other, 8, Dfsssp::NAME).is_none());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn random_fabrics_and_tori_repaired_after_a_cut(
        seed in 0u64..1000,
        torus in any::<bool>(),
        nue in any::<bool>(),
        k in 0usize..1000,
    ) {
        let spec = if torus {
            GenSpec::torus(&[3 + (seed % 3) as u16, 3 + (seed / 3 % 3) as u16], 1)
        } else {
            GenSpec::random(12 + (seed % 12) as usize, 8, 2, 24 + (seed % 9) as usize, seed)
        };
        let v = generated(&spec, 0);
        let (old, engine) = if nue {
            (Nue::with_layers(4).layered(&v).unwrap(), Nue::NAME)
        } else {
            (Dfsssp::with_layers(8).layered(&v).unwrap(), Dfsssp::NAME)
        };
        cut_and_check(&v, &old, k, 8, engine);
    }
}

/// Every single switch-to-switch cut of `view` routed as `old`, repaired: every pair stays
/// routed, no layer has a credit loop, and every path whose layer moved is one whose old route
/// crossed the cut cable (the rule of issue 25: a path that did not cross the fault keeps its
/// SL). Returns each cut's (stranded, re-routed).
fn every_cut(what: &str, view: &FabricView, old: &Layered, engine: &'static str) -> Vec<(usize, usize)> {
    let (idx, ds) = dests(view);
    let mut out = Vec::new();
    for (s0, p0) in trunks(view) {
        let new = cut(view, s0, p0);
        let rep =
            repair(view, &old.routes, Some(&old.layers), &new, 8, engine).expect("a cut fabric").expect("repaired");
        let got = &rep.layered;
        let r = check(&new, &got.routes);
        assert_eq!((r.reachable, r.loops), (r.pairs, 0), "{what} cable {s0}:{p0}");
        for vl in credit_loops_per_vl(&new, &got.routes, &|s, d| got.layers.layer(s, d)) {
            assert!(matches!(vl.loops, CreditLoops::None), "{what} cable {s0}:{p0} VL {}: {:?}", vl.vl, vl.loops);
        }
        let NodeId::Switch(s1) = view.switches[s0].ports[p0].expect("a cable").node else { panic!("a trunk") };
        let far = view.switches[s0].ports[p0].expect("a cable").port.0;
        let lost = [(s0, u8::try_from(p0).expect("port")), (s1, far)];
        let mut moved = 0;
        for d in &ds {
            for s in (0..view.switches.len()).filter(|&s| laid(&idx, d, s)) {
                if old.layers.layer(s, Lid(d.lid)) == got.layers.layer(s, Lid(d.lid)) {
                    continue;
                }
                moved += 1;
                let before = route(view, &old.routes, s, d).expect("the old route arrives");
                assert!(
                    before.iter().any(|h| lost.contains(h)),
                    "{what} cable {s0}:{p0}: switch {s} to LID {} moved layer without crossing the cable",
                    d.lid
                );
            }
        }
        assert_eq!(moved, rep.stranded, "{what} cable {s0}:{p0}: the stranded paths are those that moved");
        out.push((rep.stranded, rep.rerouted));
    }
    let stranded: Vec<usize> = out.iter().map(|o| o.0).collect();
    eprintln!(
        "{what}: {} cuts, {} strand a path, {} stranded of {} re-routed (most {} in one cut)",
        out.len(),
        stranded.iter().filter(|&&s| s > 0).count(),
        stranded.iter().sum::<usize>(),
        out.iter().map(|o| o.1).sum::<usize>(),
        stranded.iter().max().unwrap_or(&0),
    );
    out
}

/// Issue 25's stability rule on every single switch-to-switch cut of a 4x4x4 torus, a
/// dragonfly (9 groups of 4) and a random 64-switch fabric: under dfsssp, no path that did not
/// cross the cut changes its layer (SL), and paths that crossed it may (`stranded`: counted);
/// under nue, no path changes its layer at all.
#[test]
fn every_single_cut_of_a_torus_a_dragonfly_and_a_random_fabric_keeps_the_sl_of_unaffected_paths() {
    let fabrics = [
        ("torus 4x4x4", generated(&GenSpec::torus(&[4, 4, 4], 2), 0)),
        ("dragonfly 9x4", generated(&GenSpec::dragonfly(9, 4, 2), 0)),
        ("random 64", generated(&GenSpec::random(64, 16, 4, 200, 7), 0)),
    ];
    for (what, v) in &fabrics {
        let old = Dfsssp::default().layered(v).unwrap();
        let out = every_cut(what, v, &old, Dfsssp::NAME);
        assert_eq!(out.len(), trunks(v).len());
        assert!(out.iter().all(|&(_, rerouted)| rerouted > 0), "{what}: every cut re-routes something");
        // Nue's layers (destinations partitioned, an escape per layer) keep every pair's layer.
        let old = Nue::default().layered(v).unwrap();
        let out = every_cut(&format!("{what} nue"), v, &old, Nue::NAME);
        assert!(out.iter().all(|&(stranded, _)| stranded == 0), "{what} nue: {out:?}");
    }
}
