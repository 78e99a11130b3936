//! The petgraph component analysis of the channel dependency graph agrees with the early-exit
//! depth-first search on every test fabric, engine and traffic choice, the check's combination
//! of the two gives the component analysis's answer, and every example cycle is a real cycle of
//! dependencies.

mod common;

use ibsm_routing::check::{CdgTraffic, ChannelDeps, CreditLoops};
use ibsm_routing::components::components;
use ibsm_routing::{ENGINE_NAMES, engine_by_name};
use ibsm_topology::generators::GenSpec;

/// Asserts `cycle` (node numbers) is a cycle of `deps`.
fn assert_cycle(deps: &ChannelDeps, cycle: &[usize], what: &str) {
    assert!(!cycle.is_empty(), "{what}: empty cycle");
    for (i, &a) in cycle.iter().enumerate() {
        let b = cycle[(i + 1) % cycle.len()];
        assert!(deps.depends(a, b), "{what}: {a} does not depend on {b} in {cycle:?}");
    }
}

#[test]
fn scc_and_dfs_agree_on_every_fabric() {
    let mut found = 0;
    for (name, topo) in common::zoo() {
        let view = common::view(&topo, 0);
        assert_eq!(components(&view).count(), 1, "{name}: generated fabrics are connected");
        for engine in ENGINE_NAMES {
            let Some(routes) = engine_by_name(engine).and_then(|e| e.route(&view).ok()) else { continue };
            for traffic in [CdgTraffic::DataPlane, CdgTraffic::All, CdgTraffic::CaToCa] {
                let what = format!("{name} {engine} {traffic:?}");
                let deps = ChannelDeps::new(&view, &routes, traffic);
                let (loops, stats) = deps.scc_analysis();
                assert_eq!(deps.credit_loops(), (loops.clone(), stats), "{what}: the check's shortcut changes nothing");
                let dfs = deps.first_cycle_dfs();
                match (&loops, &dfs) {
                    (CreditLoops::Found(cycle), Some(d)) => {
                        let nodes: Vec<usize> =
                            cycle.iter().map(|c| deps.channels().iter().position(|x| x == c).unwrap()).collect();
                        assert_cycle(&deps, &nodes, &what);
                        assert_cycle(&deps, d, &what);
                        assert!(stats.cyclic_components >= 1 && stats.cyclic_channels >= cycle.len(), "{what}");
                        found += 1;
                    }
                    (CreditLoops::None, None) => assert_eq!(stats.cyclic_components, 0, "{what}"),
                    _ => panic!("{what}: components say {loops:?}, search says {dfs:?}"),
                }
            }
        }
    }
    assert!(found > 0, "some fabric should have a credit loop");
}

#[test]
fn minhop_torus_has_credit_loops_and_updn_tree_has_none() {
    let torus = common::view(&common::generate(&GenSpec::torus(&[6, 6], 1)), 0);
    let routes = engine_by_name("minhop").unwrap().route(&torus).unwrap();
    let deps = ChannelDeps::new(&torus, &routes, CdgTraffic::DataPlane);
    let (loops, stats) = deps.credit_loops();
    assert!(matches!(loops, CreditLoops::Found(_)), "{stats:?}");
    assert!(stats.cyclic_components >= 1);

    let tree = common::view(&common::generate(&GenSpec::fat_tree(3, 8)), 0);
    let routes = engine_by_name("updn").unwrap().route(&tree).unwrap();
    // The cores (one root each) reach each other only down and up again: those routes, used by
    // the cores' own VL15 SMPs alone, close cycles that only the switch-to-switch graph holds.
    for (traffic, clean) in [(CdgTraffic::DataPlane, true), (CdgTraffic::CaToCa, true), (CdgTraffic::All, false)] {
        let (loops, stats) = ChannelDeps::new(&tree, &routes, traffic).credit_loops();
        assert_eq!(loops == CreditLoops::None, clean, "{traffic:?}");
        assert_eq!(
            stats.channels,
            tree.switches
                .iter()
                .flat_map(|s| &s.ports)
                .filter(|p| matches!(p.map(|p| p.node), Some(ibsm_routing::NodeId::Switch(_))))
                .count()
        );
    }
}

/// The verdict `routes check` exits on: loops between CAs fail it (minhop on a torus), loops
/// that need switch management traffic do not (ftree on a heavily degraded tree, where several
/// cuts meet), and the report says which.
#[test]
fn loops_that_need_switch_management_traffic_are_told_from_loops_between_cas() {
    use ibsm_routing::check::{CheckOptions, check_with};
    use ibsm_topology::generators::FatTree;
    let opts = CheckOptions { shifts: false, ..CheckOptions::default() };
    let torus = common::view(&common::generate(&GenSpec::torus(&[6, 6], 1)), 0);
    let routes = engine_by_name("minhop").unwrap().route(&torus).unwrap();
    let rep = check_with(&torus, &routes, &opts);
    assert!(
        matches!(rep.credit_loops, CreditLoops::Found(_))
            && matches!(rep.credit_loops_between_cas, CreditLoops::Found(_))
    );
    assert!(!rep.is_sound() && !rep.is_clean(), "{rep}");
    assert!(!rep.to_string().contains("management"), "{rep}");

    let mut shown = 0;
    for seed in 1..=6 {
        let tree = common::view(&common::generate(&GenSpec::FatTree(FatTree::new(3, 8).degraded(8, 0, seed))), 0);
        let routes = engine_by_name("ftree").unwrap().route(&tree).unwrap();
        let rep = check_with(&tree, &routes, &opts);
        assert_eq!(rep.reachable, rep.pairs, "seed {seed}: {rep}");
        assert_eq!(
            rep.credit_loops_between_cas == CreditLoops::None,
            matches!(rep.credit_loops, CreditLoops::Found(_)),
            "seed {seed}: searched between CAs only when the data plane has a loop"
        );
        if rep.loops_need_management_traffic() {
            shown += 1;
            assert!(rep.is_sound() && !rep.is_clean(), "seed {seed}: {rep}");
            assert!(rep.to_string().contains("none between CAs; in switch management traffic only"), "{rep}");
            // updn routes the same fabric without any.
            let updn = engine_by_name("updn").unwrap().route(&tree).unwrap();
            assert!(check_with(&tree, &updn, &opts).is_clean(), "seed {seed}: updn");
        } else {
            assert!(rep.is_clean(), "seed {seed}: {rep}");
        }
    }
    assert!(shown > 0, "eight cut cables give some fabric a management-only loop");
}
