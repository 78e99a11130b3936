//! The planned cabling checked at every sweep (`expected-topology`, `refuse-miscabled`) on the
//! simulated fabric: two uplinks swapped between leaves are reported as miscabled; refused,
//! their four ends stay unarmed, no table routes over them and every host pair still
//! reaches through the other spine; a cable pulled later shows as missing after the quick
//! sweep, without a rediscovery.

use std::sync::Arc;

use ibsm::core::{Guid2Lid, Sm, SmConfig, SmEvent};
use ibsm::transport::sim::SimDriver;
use ibsm_mad::attrs::PortState;
use ibsm_mad::{Guid, PortNum};
use ibsm_sim::fabric::Fault;
use ibsm_topology::Topology;

mod support;
use support::fabrics::spine0_uplinks_swapped;
use support::sa::{LIMIT, example};

/// The plan (the 2-level k=4 fat tree) and the fabric as cabled: leaf-0 and leaf-1's cables
/// to spine-0 swapped at the spine.
fn swapped() -> (Topology, Topology) {
    let plan = example("fat-tree-2l-k4.net");
    let t = spine0_uplinks_swapped(&plan);
    (plan, t)
}

fn up(plan: &Topology, fabric: &Topology, refuse: bool) -> (SimDriver, Vec<SmEvent>, ibsm::core::SubnetReport) {
    let cfg =
        SmConfig { expected_topology: Some(Arc::new(plan.clone())), refuse_miscabled: refuse, ..SmConfig::default() };
    let mut drv = SimDriver::new(fabric, 7, Sm::new(cfg, Guid2Lid::default()), None).expect("attach");
    let mut events = Vec::new();
    let report = drv.sweep(LIMIT, |ev| events.push(ev.clone())).expect("a report");
    (drv, events, report)
}

fn cabling_events(events: &[SmEvent]) -> Vec<(Vec<String>, usize)> {
    events
        .iter()
        .filter_map(|e| match e {
            SmEvent::Cabling { differences, refused } => Some((differences.clone(), *refused)),
            _ => None,
        })
        .collect()
}

#[test]
fn the_planned_fabric_has_no_differences_and_no_report() {
    let plan = example("fat-tree-2l-k4.net");
    let (drv, events, report) = up(&plan, &plan, true);
    assert!(report.complete);
    assert!(drv.sm.cabling().diff.is_empty() && drv.sm.cabling().refused.is_empty());
    assert!(cabling_events(&events).is_empty(), "nothing to report");
}

#[test]
fn swapped_cables_are_reported_and_by_default_still_used() {
    let (plan, fabric) = swapped();
    let (drv, events, report) = up(&plan, &fabric, false);
    assert!(report.complete && report.ports_not_active == 0, "{report:?}");
    let reported = cabling_events(&events);
    assert_eq!(reported.len(), 1, "{reported:?}");
    let (lines, refused) = &reported[0];
    assert_eq!(*refused, 0);
    assert_eq!(lines.len(), 4, "each end of both cables: {lines:?}");
    assert!(
        lines.iter().any(|l| l == "miscabled \"leaf-0\"[3]: expected to \"spine-0\"[1], found to \"spine-0\"[2]"),
        "{lines:?}"
    );
    assert!(drv.fabric.check_routes().ok());
}

#[test]
fn refused_miscabled_ports_stay_unarmed_and_unrouted_and_every_pair_still_reaches() {
    let (plan, fabric) = swapped();
    let (drv, events, report) = up(&plan, &fabric, true);
    // The refused ports are not active on purpose: the sweep is complete without them.
    assert!(report.complete && report.ports_not_active == 0, "{report:?}");
    let guid = |name: &str| fabric.nodes[fabric.find(name).expect("node")].node_guid;
    let want: Vec<(Guid, u8)> = {
        let mut w = vec![(guid("leaf-0"), 3), (guid("leaf-1"), 3), (guid("spine-0"), 1), (guid("spine-0"), 2)];
        w.sort();
        w
    };
    assert_eq!(drv.sm.cabling().refused.iter().copied().collect::<Vec<_>>(), want);
    assert_eq!(cabling_events(&events).last().map(|e| e.1), Some(4));
    // Never armed: as discovery read them, in Init.
    let subnet = drv.sm.subnet();
    for &(g, p) in &want {
        let node = subnet.nodes.iter().find(|n| n.info.node_guid == g).expect("found");
        let state = node.port(PortNum(p)).and_then(|r| r.info).map(|i| i.port_state);
        assert_eq!(state, Some(PortState::Init), "{g:?}[{p}]");
    }
    // No table the SM programmed sends anything out of a refused port.
    let snap = drv.sm.snapshot().expect("snapshot");
    for n in snap.nodes.iter().filter(|n| n.is_switch()) {
        for &(g, p) in want.iter().filter(|(g, _)| *g == n.info.node_guid) {
            assert!(!n.lft().iter().any(|q| q == ibsm_mad::PortNum(p)), "{g:?} routes over its refused port {p}");
        }
    }
    // And every host pair reaches, through spine-1, on the switches' own tables.
    assert!(drv.fabric.check_routes().ok(), "{:?}", drv.fabric.check_routes());
}

#[test]
fn a_planned_cable_pulled_shows_as_missing_after_the_quick_sweep() {
    let plan = example("fat-tree-2l-k4.net");
    let (mut drv, _, report) = up(&plan, &plan, false);
    assert!(report.complete);
    let s1 = plan.find("spine-1").expect("spine");
    drv.fabric.inject_fault(Fault::LinkDown { node: s1, port: 4 });
    let mut events = Vec::new();
    let limit = drv.now() + 5_000_000_000;
    drv.run_until(limit, |ev| {
        events.push(ev.clone());
        matches!(ev, SmEvent::SubnetUp(_))
    });
    let reported = cabling_events(&events);
    assert_eq!(reported, [(vec!["missing link \"spine-1\"[4] - \"leaf-3\"[4]".to_owned()], 0)], "{events:?}");
    let up = events.iter().find_map(|e| if let SmEvent::SubnetUp(r) = e { Some(r) } else { None }).expect("routed");
    assert_eq!(up.routing_mode.name(), "repaired", "a quick sweep, no rediscovery");
}
