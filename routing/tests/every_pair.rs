//! Every engine routes every LID from every switch, or declines the fabric with a reason: on the
//! generator zoo, the shipped example fabrics and random graphs, at LMC 0 and 1. Up/down keeps
//! its data plane free of credit loops while doing so (the switches it strands take a path only
//! their own switch-to-switch packets use).

mod common;

use std::path::Path;

use ibsm_routing::check::{CheckOptions, CreditLoops, check_with};
use ibsm_routing::{ENGINE_NAMES, RoutingError, engine_by_name};
use ibsm_topology::Topology;
use ibsm_topology::generators::GenSpec;

/// The zoo, the shipped examples and a few more random graphs.
fn fabrics() -> Vec<(String, Topology)> {
    let mut all = common::zoo();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/fabrics");
    let mut files: Vec<_> = std::fs::read_dir(&dir).expect("examples/fabrics").flatten().map(|e| e.path()).collect();
    files.sort();
    for f in files.iter().filter(|f| f.extension().is_some_and(|e| e == "net")) {
        all.push((f.display().to_string(), Topology::load(f).expect("example fabric loads")));
    }
    for seed in 1..=4 {
        all.push((format!("random 10 seed {seed}"), common::generate(&GenSpec::random(10, 6, 1, 16, seed))));
    }
    all
}

#[test]
fn every_engine_routes_every_switch_to_every_lid_or_declines() {
    let mut routed = 0;
    for (name, topo) in fabrics() {
        for lmc in [0u8, 1] {
            let view = common::view(&topo, lmc);
            for engine in ENGINE_NAMES.iter().filter_map(|n| engine_by_name(n)) {
                let who = format!("{} on {name} (lmc {lmc})", engine.name());
                let routes = match engine.route(&view) {
                    Ok(r) => r,
                    Err(RoutingError::Declined { reason, .. }) => {
                        assert!(!reason.is_empty(), "{who}: declined without a reason");
                        continue;
                    }
                    Err(e) => panic!("{who}: {e}"),
                };
                let opts = CheckOptions { shifts: false, ..CheckOptions::default() };
                let rep = check_with(&view, &routes, &opts);
                assert!(rep.switch_pairs > 0, "{who}");
                assert_eq!(rep.switch_reachable, rep.switch_pairs, "{who}:\n{rep}");
                assert_eq!(rep.reachable, rep.pairs, "{who}:\n{rep}");
                if engine.name() == "updn" {
                    assert_eq!(rep.credit_loops, CreditLoops::None, "{who}:\n{rep}");
                }
                routed += 1;
            }
        }
    }
    assert!(routed > 60, "{routed}");
}

/// The live case of the issue: up/down on the k = 4 three-level tree left 12 switch LIDs
/// unrouted (its four cores, one per root, could not reach each other).
#[test]
fn updn_routes_core_to_core_on_the_three_level_tree() {
    let view = common::view(&common::generate(&GenSpec::fat_tree(3, 4)), 0);
    let r = engine_by_name("updn").expect("updn").route(&view).expect("routes");
    let rep = check_with(&view, &r, &CheckOptions { shifts: false, ..CheckOptions::default() });
    assert_eq!((rep.switch_reachable, rep.switch_pairs), (700, 700), "{rep}");
    assert_eq!(rep.credit_loops, CreditLoops::None, "{rep}");
}
