//! The offline planner (`ibsm routes dump --topology`) builds the routing input the SM core
//! builds after discovering the same fabric on the simulator: the same `FabricView` (switches and
//! CAs in the same order, the same cables, the same LIDs from a fresh `guid2lid`), the same LID
//! owners and names, the same `guid2lid` table, and so the same dump text, also when it goes
//! through the control socket's snapshot. In particular where the SM's HCA has more than one
//! cabled port: discovery crosses only the SM's own port.

use ibsm::core::lids::Guid2Lid;
use ibsm::core::{Sm, SmConfig};
use ibsm::fabric_view::build;
use ibsm::routes::live::LiveRoutes;
use ibsm::routes::{dump, plan};
use ibsm::transport::sim::SimDriver;
use ibsm_routing::chain::Chain;
use ibsm_topology::Topology;

/// The SM's HCA `sm` has port 1 on `leaf-1` and port 2 on `leaf-2`, both leaves go to both
/// spines, each leaf has a host. Crossing `sm`'s port 2 would meet `leaf-2` second; the core
/// meets it after `leaf-1`'s neighbours.
const TWO_PORTS: &str = "\
Hca 2 \"sm\"
[1] \"leaf-1\"[1]
[2] \"leaf-2\"[1]

Switch 4 \"leaf-1\"
[2] \"h1\"[1]
[3] \"spine-1\"[1]
[4] \"spine-2\"[1]

Switch 4 \"leaf-2\"
[2] \"h2\"[1]
[3] \"spine-1\"[2]
[4] \"spine-2\"[2]

Switch 2 \"spine-1\"

Switch 2 \"spine-2\"

Hca 1 \"h1\"

Hca 2 \"h2\"
";

/// The SM's HCA has port 2 on a switch that nothing else reaches (with a host behind it), and
/// a host's second port is cabled straight to another host: the SM sees neither.
const ISLAND: &str = "\
Hca 2 \"sm\"
[1] \"sw\"[1]
[2] \"island\"[1]

Switch 4 \"sw\"
[2] \"h1\"[1]
[3] \"h2\"[1]

Switch 2 \"island\"
[2] \"far\"[1]

Hca 1 \"far\"

Hca 2 \"h1\"
[2] \"h2\"[2]

Hca 2 \"h2\"
";

/// Sweeps `topo` with a fresh SM at `at` and checks the offline plan against what it built.
fn check(topo: &Topology, at: Option<(usize, u8)>, lmc: u8, what: &str) {
    let cfg = SmConfig { lmc, ..SmConfig::default() };
    let mut drv = SimDriver::new(topo, 7, Sm::new(cfg.clone(), Guid2Lid::default()), at).expect(what);
    let report = drv.sweep(60_000_000_000, |_| {}).unwrap_or_else(|| panic!("{what}: no sweep report"));
    assert!(report.complete, "{what}: sweep incomplete");
    let offline = plan(topo, lmc, Guid2Lid::default(), Some(drv.at));
    // The core's own routing input, built from what it discovered.
    let core = build(&drv.sm.subnet().describe(), lmc);
    assert_eq!(core.view, offline.view, "{what}: fabric views differ");
    assert_eq!(drv.sm.guid2lid(), &offline.guid2lid, "{what}: LIDs differ");
    // Through the control socket's snapshot, as `routes dump --socket` sees it.
    let (live, live_routes) = LiveRoutes::from_sm(&drv.sm).and_then(|l| l.to_plan()).expect(what);
    assert_eq!(live.view, offline.view, "{what}: snapshot view differs");
    assert_eq!(live.switch_names, offline.switch_names, "{what}");
    assert_eq!(live.owners, offline.owners, "{what}");
    let chain = Chain::from_names(&cfg.routing_engine).expect(what);
    let routes = chain.run(&offline.view).expect(what).routes;
    assert_eq!(live_routes, routes, "{what}: the tables the SM holds are not the offline ones");
    assert_eq!(dump::opensm(&live, &live_routes, None), dump::opensm(&offline, &routes, None), "{what}");
}

#[test]
fn an_sm_hca_with_two_cabled_ports_plans_as_the_core_discovers() {
    let topo = Topology::parse_str(TWO_PORTS, "two-ports.net").expect("parses");
    for lmc in [0, 1] {
        check(&topo, None, lmc, &format!("SM on port 1, lmc {lmc}"));
        check(&topo, Some((0, 2)), lmc, &format!("SM on port 2, lmc {lmc}"));
    }
    // The HCA's second port is an end port (entered from leaf-2), with the LID after port 1's.
    let p = plan(&topo, 0, Guid2Lid::default(), None);
    let sm = topo.nodes[0].node_guid.0;
    let lid = |g: u64| p.guid2lid.get(ibsm_mad::Guid(g)).map(|(lo, _)| lo.0);
    assert_eq!((lid(sm + 1), lid(sm + 2)), (Some(1), Some(2)));
    // Switches in NodeGUID order, wherever the SM sits.
    assert_eq!(p.switch_names, ["leaf-1", "leaf-2", "spine-1", "spine-2"]);
}

#[test]
fn what_the_sm_cannot_reach_is_not_planned() {
    let topo = Topology::parse_str(ISLAND, "island.net").expect("parses");
    check(&topo, None, 0, "island");
    let p = plan(&topo, 0, Guid2Lid::default(), None);
    assert_eq!(p.switch_names, ["sw"]);
    let cas: Vec<usize> = p.view.cas.iter().map(|c| c.ports.len()).collect();
    assert_eq!(cas, [1, 1, 1], "sm, h1 and h2 by one port each; far is not seen");
}

#[test]
fn every_example_fabric_plans_as_the_core_discovers() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fabrics");
    let mut n = 0;
    for f in std::fs::read_dir(dir).expect("examples").filter_map(Result::ok) {
        let path = f.path();
        if path.extension().is_none_or(|e| e != "net") {
            continue;
        }
        let topo = Topology::load(&path).expect("loads");
        check(&topo, None, 0, &path.display().to_string());
        n += 1;
    }
    assert!(n >= 8, "{n} example fabrics");
    let topo =
        Topology::load(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fabrics/rail-k4-r2.net"))
            .expect("loads");
    check(&topo, None, 2, "rail-k4-r2 lmc 2");
}

/// However fast the nodes' SMAs answer (no service time, the default 10 µs, slow switches and
/// fast CAs, random delays on every cable), the SM meets the nodes in another order but gives
/// every port the LID the offline plan gives it: fresh LIDs follow the canonical order.
#[test]
fn lids_do_not_depend_on_how_fast_smas_answer() {
    use ibsm_sim::fabric::{Fault, LinkRule, SimConfig, Timing};
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fabrics/fat-tree-3l-k4.net");
    let topo = Topology::load(&path).expect("loads");
    let offline = plan(&topo, 0, Guid2Lid::default(), None);
    let base = Timing::default();
    let runs: [(Timing, Option<LinkRule>); 4] = [
        (base.with_sma_ns(0), None),
        (base, None),
        (Timing { switch_sma_ns: 40_000, ca_sma_ns: 1_000, ..base }, None),
        (base, Some(LinkRule::global_delay(0, 50_000))),
    ];
    let mut orders = std::collections::BTreeSet::new();
    for (i, (timing, rule)) in runs.into_iter().enumerate() {
        let sim = SimConfig { seed: 3, timing, ..SimConfig::default() };
        let mut drv = SimDriver::with_config(&topo, sim, Sm::new(SmConfig::default(), Guid2Lid::default()), None)
            .expect("attach");
        if let Some(r) = rule {
            drv.fabric.inject_fault(Fault::AddRule(r));
        }
        let report = drv.sweep(60_000_000_000, |_| {}).unwrap_or_else(|| panic!("run {i}: no sweep report"));
        assert!(report.complete, "run {i}: sweep incomplete");
        assert_eq!(drv.sm.guid2lid(), &offline.guid2lid, "run {i}: LIDs differ from the plan");
        orders.insert(drv.sm.subnet().nodes.iter().map(|n| n.info.node_guid).collect::<Vec<_>>());
    }
    assert!(orders.len() > 1, "the runs met the nodes in one order only: the test shows nothing");
}
