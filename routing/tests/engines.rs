//! Every engine on every generator topology, judged by the `check` analysis: all CA pairs
//! reachable, no loops, deterministic; up/down credit-loop free everywhere; fat-tree routing
//! contention-free for shift permutations on complete trees.

mod common;

use ibsm_routing::chain::Chain;
use ibsm_routing::check::{CdgTraffic, CheckOptions, CreditLoops, check, check_with};
use ibsm_routing::{ENGINE_NAMES, engine_by_name};
use ibsm_topology::Topology;
use ibsm_topology::generators::{FatTree, GenSpec};

fn is_tree(name: &str) -> bool {
    name.starts_with("fat-tree") || name.starts_with("rail")
}

#[test]
fn every_engine_reaches_every_pair_on_every_topology() {
    for (name, topo) in common::zoo() {
        for lmc in [0u8, 1] {
            let view = common::view(&topo, lmc);
            for engine in ENGINE_NAMES.iter().filter_map(|n| engine_by_name(n)) {
                let routes = match engine.route(&view) {
                    Ok(r) => r,
                    Err(e) => {
                        // ftree declines non-trees, and degraded trees without up-down paths.
                        let ok = engine.name() == "ftree"
                            && (!is_tree(&name)
                                || name.contains("degraded") && e.to_string().contains("no up-then-down path"));
                        assert!(ok, "{} failed on {name} (lmc {lmc}): {e}", engine.name());
                        continue;
                    }
                };
                let opts = CheckOptions { shifts: false, ..CheckOptions::default() };
                let rep = check_with(&view, &routes, &opts);
                let who = format!("{} on {name} (lmc {lmc})", engine.name());
                assert!(rep.pairs > 0, "{who}");
                assert_eq!(rep.reachable, rep.pairs, "{who}:\n{rep}");
                assert_eq!(rep.loops, 0, "{who}");
                if engine.name() == "ftree" {
                    let opts =
                        CheckOptions { shifts: false, cdg_traffic: CdgTraffic::CaToCa, ..CheckOptions::default() };
                    let data = check_with(&view, &routes, &opts);
                    assert_eq!(data.credit_loops, CreditLoops::None, "{who}:\n{data}");
                }
                if engine.name() == "updn" {
                    assert_eq!(rep.credit_loops, CreditLoops::None, "{who}:\n{rep}");
                }
                assert_eq!(rep.switch_reachable, rep.switch_pairs, "{who}:\n{rep}");
            }
        }
    }
}

#[test]
fn engines_are_deterministic() {
    for (name, topo) in common::zoo() {
        let view = common::view(&topo, 0);
        for n in ENGINE_NAMES {
            let Some(e) = engine_by_name(n) else { continue };
            let (a, b) = (e.route(&view), e.route(&view));
            assert_eq!(a, b, "{n} on {name}");
        }
    }
}

fn shift_worst(engine: &str, view: &ibsm_routing::FabricView) -> Option<u32> {
    let routes = engine_by_name(engine)?.route(view).ok()?;
    check(view, &routes).shifts.map(|s| s.worst)
}

#[test]
fn ftree_is_contention_free_for_shifts_on_complete_trees() {
    let complete = [
        GenSpec::fat_tree(2, 8),
        GenSpec::fat_tree(2, 12),
        GenSpec::fat_tree(3, 4),
        GenSpec::fat_tree(3, 8),
        GenSpec::rail_fat_tree(8, 2),
        GenSpec::rail_fat_tree(8, 4),
    ];
    for spec in &complete {
        let view = common::view(&common::generate(spec), 0);
        let routes = engine_by_name("ftree").unwrap().route(&view).unwrap();
        let rep = check(&view, &routes);
        assert!(rep.is_clean() || rep.reachable == rep.pairs, "{spec:?}:\n{rep}");
        let s = rep.shifts.unwrap();
        assert_eq!((s.worst, s.contended_shifts), (1, 0), "{spec:?}:\n{rep}");
        assert_eq!(rep.hops.non_minimal, 0, "{spec:?}");
        // min-hop, for contrast, is not contention-free on the same trees.
        assert!(shift_worst("minhop", &view).unwrap() > 1, "{spec:?}");
    }
    // Oversubscribed r:1 trees: r flows share an uplink, never more.
    for (spec, ratio) in [(FatTree::new(2, 12).oversubscribed(2), 2), (FatTree::new(3, 8).oversubscribed(3), 3)] {
        let view = common::view(&common::generate(&GenSpec::FatTree(spec)), 0);
        assert_eq!(shift_worst("ftree", &view), Some(ratio), "{spec:?}");
    }
}

#[test]
fn ftree_is_at_least_as_balanced_as_minhop_on_degraded_trees() {
    let mut routed = 0;
    for (name, topo) in common::zoo().into_iter().filter(|(n, _)| is_tree(n) && n.contains("degraded")) {
        let view = common::view(&topo, 0);
        let Some(ft) = shift_worst("ftree", &view) else { continue };
        let mh = shift_worst("minhop", &view).unwrap();
        assert!(ft <= mh, "{name}: ftree shift worst {ft}, minhop {mh}");
        routed += 1;
    }
    assert!(routed >= 3, "too few degraded trees routed by ftree: {routed}");
}

#[test]
fn ftree_declines_non_trees_with_a_reason() {
    for (name, topo) in common::zoo().into_iter().filter(|(n, _)| !is_tree(n)) {
        let view = common::view(&topo, 0);
        let err = engine_by_name("ftree").unwrap().route(&view).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("not a fat tree") && text.contains("0x"), "{name}: {text}");
    }
}

#[test]
fn chain_picks_ftree_for_trees_and_updn_for_the_rest() {
    let chain = Chain::from_names(Chain::DEFAULT).unwrap();
    for (name, topo) in common::zoo() {
        let view = common::view(&topo, 0);
        let out = chain.run(&view).unwrap();
        let ftree_ok = engine_by_name("ftree").unwrap().route(&view).is_ok();
        if ftree_ok {
            assert_eq!((out.engine, out.declined.len()), ("ftree", 0), "{name}");
        } else {
            assert_eq!(out.engine, "updn", "{name}");
            assert_eq!(out.declined[0].engine, "ftree", "{name}");
            assert!(!is_tree(&name) || name.contains("degraded"), "{name}");
        }
        let rep = check_with(&view, &out.routes, &CheckOptions { shifts: false, ..CheckOptions::default() });
        assert_eq!(rep.reachable, rep.pairs, "{name}");
    }
}

#[test]
fn example_fabrics_route_through_the_chain() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/fabrics");
    let Ok(entries) = std::fs::read_dir(&dir) else { return };
    let mut seen = 0;
    let mut files: Vec<_> =
        entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "net")).collect();
    files.sort();
    for path in files {
        let topo = Topology::load(&path).unwrap();
        let view = common::view(&topo, 0);
        let out = Chain::from_names(Chain::DEFAULT).unwrap().run(&view).unwrap();
        let rep = check(&view, &out.routes);
        assert_eq!(rep.reachable, rep.pairs, "{}: {}\n{rep}", path.display(), out.engine);
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("fat-tree") && !name.contains("degraded") || name.starts_with("rail") {
            assert_eq!(out.engine, "ftree", "{name}: {:?}", out.declined);
        }
        seen += 1;
    }
    assert!(seen > 0);
}

/// The credit-loop search counts the right traffic: on a 3-level fat tree the only cycles of
/// shortest-path routing run through switch-to-switch routes (VL15 only), which the default
/// data-plane graph leaves out and `All` keeps; on a mesh min-hop has a real data-plane cycle.
#[test]
fn credit_loop_traffic_selection() {
    let found = |spec: GenSpec, engine: &str, traffic: CdgTraffic| {
        let v = common::view(&common::generate(&spec), 0);
        let r = engine_by_name(engine).expect("engine").route(&v).expect("routes");
        let opts = CheckOptions { shifts: false, cdg_traffic: traffic, ..CheckOptions::default() };
        matches!(check_with(&v, &r, &opts).credit_loops, CreditLoops::Found(_))
    };
    assert_eq!(CheckOptions::default().cdg_traffic, CdgTraffic::DataPlane);
    for engine in ["ftree", "minhop"] {
        assert!(found(GenSpec::fat_tree(3, 4), engine, CdgTraffic::All), "{engine}: switch-to-switch cycle");
        assert!(!found(GenSpec::fat_tree(3, 4), engine, CdgTraffic::DataPlane), "{engine}: data plane clean");
        assert!(!found(GenSpec::fat_tree(3, 4), engine, CdgTraffic::CaToCa), "{engine}: CA to CA clean");
    }
    assert!(found(GenSpec::mesh(&[2, 2, 2], 1), "minhop", CdgTraffic::DataPlane));
    assert!(!found(GenSpec::mesh(&[2, 2, 2], 1), "updn", CdgTraffic::All));
}
