//! The Nue engine on generated fabrics, judged by the check alone (independent of the engine's
//! own dependency graphs): on random fabrics and every budget from 1 to 8, every pair routed
//! and no credit loop within any layer; on fat trees, minimal routes and no dependency refused
//! (the search's costly case); on a 3D torus, a random
//! fabric and a dragonfly, shift permutations as balanced as min-hop's.

mod common;

use ibsm_routing::Engine;
use ibsm_routing::FabricView;
use ibsm_routing::check::{CreditLoops, check, credit_loops_per_vl};
use ibsm_routing::minhop::MinHop;
use ibsm_routing::nue::Nue;
use ibsm_topology::generators::GenSpec;
use proptest::prelude::*;

/// Routes `v` with Nue on `budget` layers and checks it: every pair, no loop in any layer.
/// Returns the shift worst, the number of non-minimal routes and the layers used.
fn judge(name: &str, v: &FabricView, budget: u8) -> (u32, u64, u8) {
    let l = Nue::with_layers(budget).layered(v).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(l.layers.used() <= budget, "{name}: {} layers on a budget of {budget}", l.layers.used());
    let r = check(v, &l.routes);
    assert_eq!(r.reachable, r.pairs, "{name} on {budget}: every CA pair routed");
    assert_eq!(r.switch_reachable, r.switch_pairs, "{name} on {budget}: every switch route");
    for x in credit_loops_per_vl(v, &l.routes, &|s, d| l.layers.layer(s, d)) {
        assert_eq!(x.loops, CreditLoops::None, "{name} on {budget}: VL {} has a credit loop", x.vl);
    }
    (r.shifts.map(|s| s.worst).unwrap_or_default(), r.hops.non_minimal, l.layers.used())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn random_fabrics_route_on_every_budget(
        switches in 3usize..40,
        extra in 0usize..60,
        hosts in 1u8..3,
        seed in 0u64..1000,
        budget in 1u8..=8,
    ) {
        let links = (switches - 1 + extra).min(switches * 5);
        let v = common::view(&common::generate(&GenSpec::random(switches, 12, hosts, links, seed)), 0);
        judge(&format!("random {switches}/{links} seed {seed}"), &v, budget);
    }
}

#[test]
fn fat_trees_are_routed_minimally_on_any_budget() {
    for spec in [GenSpec::fat_tree(2, 8), GenSpec::fat_tree(3, 4), GenSpec::fat_tree(3, 6)] {
        let v = common::view(&common::generate(&spec), 0);
        for budget in [1, 2, 8] {
            let (_, non_minimal, _) = judge(&format!("{spec:?}"), &v, budget);
            assert_eq!(non_minimal, 0, "{spec:?} on {budget}");
        }
    }
}

/// A fat tree's minimal routes climb, then descend: with the escape tree rooted at a leaf and
/// the middle and top switches' routes to one another (which turn down, then up) not in the
/// layers, no dependency closes a cycle, so no search is spent on one. Rooted at a top switch
/// and with those routes in, the 3-level trees refused hundreds (k = 32: 250,000 searches,
/// most of Nue's time there).
#[test]
fn a_fat_tree_refuses_no_dependency() {
    for spec in [GenSpec::fat_tree(3, 4), GenSpec::fat_tree(3, 8)] {
        let v = common::view(&common::generate(&spec), 0);
        for budget in [1, 2, 8] {
            let name = format!("{spec:?} on {budget}");
            judge(&name, &v, budget);
            let (_, stats) = Nue::with_layers(budget).layered_with_stats(&v).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!((stats.refused, stats.escaped), (0, 0), "{name}");
        }
    }
}

#[test]
fn lmc_lids_are_each_routed() {
    let v = common::view(&common::generate(&GenSpec::torus(&[3, 3], 1)), 2);
    for budget in [1, 3] {
        judge("torus 3x3 lmc 2", &v, budget);
    }
}

/// Wall-clock time of Nue on the 1,000-switch random fabric with 8,000 CAs (8 layers), with
/// the per-VL check (ignored by default: `cargo test -p ibsm-routing --release --test nue --
/// --ignored --nocapture`).
#[test]
#[ignore = "slow: timing run"]
fn random_1000_timing() {
    let v = common::view(&common::generate(&GenSpec::random(1000, 24, 8, 4000, 1)), 0);
    let budget = std::env::var("IBSM_LAYERS").ok().and_then(|s| s.parse().ok()).unwrap_or(8);
    let t = std::time::Instant::now();
    let (l, stats) = Nue::with_layers(budget).layered_with_stats(&v).unwrap();
    let dt = t.elapsed();
    let t = std::time::Instant::now();
    let per_vl = credit_loops_per_vl(&v, &l.routes, &|s, d| l.layers.layer(s, d));
    let loops = per_vl.iter().filter(|x| x.loops != CreditLoops::None).count();
    eprintln!(
        "random 1000: {} switches, {} CAs: nue {dt:?} on {} layers {:?}, {} of {} destinations escaped, {} impasses resolved; \
         per-VL check {:?}, VLs with a loop: {loops}",
        v.switches.len(),
        v.cas.len(),
        l.layers.used(),
        l.layers.per_layer(),
        stats.escaped,
        stats.destinations,
        stats.impasses_resolved,
        t.elapsed()
    );
    assert_eq!(loops, 0);
}

/// Nue on `budget` layers against min-hop: (nue shift worst, minhop shift worst, nue edge
/// forwarding max, minhop's, layers used).
fn against_minhop(name: &str, v: &FabricView, budget: u8) -> (u32, u32, u64, u64, u8) {
    let (worst, _, used) = judge(name, v, budget);
    let (_, stats) = Nue::with_layers(budget).layered_with_stats(v).unwrap();
    let nue = check(v, &Nue::with_layers(budget).route(v).unwrap());
    let mh = check(v, &MinHop.route(v).unwrap());
    let m = mh.shifts.map(|s| s.worst).unwrap_or_default();
    let (ef, mef) = (nue.forwarding_index.max, mh.forwarding_index.max);
    eprintln!(
        "{name}: nue shift worst {worst} on {used} layers (budget {budget}), minhop {m}; edge forwarding max {ef} vs {mef}; {stats:?}"
    );
    (worst, m, ef, mef, used)
}

#[test]
fn quality_against_minhop() {
    let torus = common::view(&common::generate(&GenSpec::torus(&[4, 4, 4], 2)), 0);
    let random = common::view(&common::generate(&GenSpec::random(64, 16, 4, 200, 7)), 0);
    let dragonfly = common::dragonfly(9, 4, 2);
    for budget in [8, 4, 2, 1] {
        for (name, v) in [("torus 4x4x4", &torus), ("random 64", &random), ("dragonfly 9x4", &dragonfly)] {
            let (worst, minhop, ..) = against_minhop(name, v, budget);
            // Within 8 layers, at least as balanced as min-hop (whose routes loop on one VL).
            if budget == 8 {
                assert!(worst <= minhop, "{name}: nue {worst} vs minhop {minhop}");
            }
        }
    }
}

/// `v` with the cable at switch `s` port `p` pulled (both ends).
fn cut(v: &FabricView, s: usize, p: usize) -> Option<FabricView> {
    let mut w = v.clone();
    let nb = w.switches[s].ports.get_mut(p)?.take()?;
    let ibsm_routing::NodeId::Switch(far) = nb.node else { return None };
    w.switches[far].ports[usize::from(nb.port.0)] = None;
    Some(w)
}

#[test]
fn a_cable_cut_changes_no_pairs_layer() {
    let torus = common::view(&common::generate(&GenSpec::torus(&[4, 4, 4], 2)), 0);
    let dragonfly = common::dragonfly(9, 4, 2);
    for (name, v) in [("torus 4x4x4", &torus), ("dragonfly 9x4", &dragonfly)] {
        let before = Nue::default().layered(v).unwrap();
        let mut cuts = 0;
        for s in [0, 5, 17, 30] {
            for p in 1..4 {
                let Some(w) = cut(v, s, p) else { continue };
                let what = format!("{name} cut at switch {s} port {p}");
                judge(&what, &w, 8);
                let after = Nue::default().layered(&w).unwrap();
                for src in 0..v.switches.len() {
                    for lid in 1..=v.max_lid() {
                        let lid = ibsm_mad::Lid(lid);
                        assert_eq!(
                            before.layers.layer(src, lid),
                            after.layers.layer(src, lid),
                            "{what}: {src} -> {lid:?}"
                        );
                    }
                }
                cuts += 1;
            }
        }
        assert!(cuts >= 8, "{name}: {cuts} cuts");
    }
}
