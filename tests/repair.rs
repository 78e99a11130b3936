//! A Set that fails (here: every MAD on one host's cable lost while the sweep configures the
//! ports) leaves the sweep incomplete with the node named; half a second later a repair sweep
//! without discovery sends only what that node misses, and the subnet is complete again.

use ibsm::core::{Guid2Lid, Sm, SmConfig, SmEvent, SubnetReport, SweepPhase};
use ibsm::transport::sim::SimDriver;
use ibsm_sim::fabric::{Fault, LinkRule};

mod support;
use support::sa::{LIMIT, example};

fn next_report(drv: &mut SimDriver, phases: &mut Vec<SweepPhase>) -> SubnetReport {
    let limit = drv.now() + LIMIT;
    match drv.run_until(limit, |ev| {
        if let SmEvent::PhaseStarted { phase, .. } = ev {
            phases.push(*phase);
        }
        matches!(ev, SmEvent::SubnetUp(_))
    }) {
        Some(SmEvent::SubnetUp(r)) => r,
        other => panic!("no report: {other:?}"),
    }
}

#[test]
fn a_failed_set_is_redone_by_a_repair_sweep_that_touches_only_that_node() {
    let topo = example("fat-tree-2l-k4.net");
    let mut drv = SimDriver::new(&topo, 31, Sm::new(SmConfig::default(), Guid2Lid::default()), None).expect("attach");
    assert!(drv.sweep(LIMIT, |_| {}).expect("up").complete);
    let h4 = topo.find("h4").expect("h4");

    // A new SubnetTimeout: the sweep writes every end port's PortInfo. h4's cable loses every
    // MAD from the moment the ports are configured.
    let done = drv.sm.reconfigure(SmConfig { subnet_timeout: 20, ..SmConfig::default() });
    assert!(done.sweep);
    let limit = drv.now() + LIMIT;
    let at = drv.run_until(limit, |ev| matches!(ev, SmEvent::PhaseStarted { phase: SweepPhase::ConfiguringPorts, .. }));
    assert!(at.is_some(), "the sweep configures ports");
    drv.fabric.inject_fault(Fault::AddRule(LinkRule { link: Some((h4, 1)), drop: 1.0, delay_ns: 0, jitter_ns: 0 }));
    let mut phases = Vec::new();
    let failed = next_report(&mut drv, &mut phases);
    assert!(!failed.complete && failed.smps_failed > 0, "{failed:?}");
    let names: Vec<&str> = failed.failed_nodes.iter().map(|b| b.desc.as_str()).collect();
    assert_eq!(names, ["h4"], "the report names the node");
    let failed_at = drv.now();

    // The cable heals; the repair sweep follows within a second, without discovery.
    drv.fabric.inject_fault(Fault::ClearRules);
    let mut phases = Vec::new();
    let repaired = next_report(&mut drv, &mut phases);
    let after = drv.now() - failed_at;
    assert!(repaired.complete && repaired.failed_nodes.is_empty(), "{repaired:?}");
    assert!(after < 1_000_000_000, "repaired {} ms after the failed sweep", after / 1_000_000);
    assert!(!phases.contains(&SweepPhase::Discovering), "{phases:?}");
    assert!(repaired.smps_sent <= 4, "only h4's PortInfo again: {} SMPs", repaired.smps_sent);
    assert_eq!(repaired.lft_blocks_sent, 0);
    assert_eq!(drv.sm.sweeps_done(), (2, 0, 1), "two heavy sweeps, one repair");
    let h4_port = drv
        .sm
        .subnet()
        .nodes
        .iter()
        .find(|n| n.info.node_guid == topo.nodes[h4].node_guid)
        .and_then(|n| n.port(ibsm_mad::PortNum(1)))
        .and_then(|r| r.info)
        .map(|i| i.subnet_timeout);
    assert_eq!(h4_port, Some(20), "h4 holds the new SubnetTimeout");
    assert!(drv.fabric.check_routes().ok());
}

#[test]
fn a_node_that_keeps_failing_gets_three_repairs_then_the_heavy_resweep() {
    let topo = example("fat-tree-2l-k4.net");
    let mut drv = SimDriver::new(&topo, 32, Sm::new(SmConfig::default(), Guid2Lid::default()), None).expect("attach");
    assert!(drv.sweep(LIMIT, |_| {}).expect("up").complete);
    let h4 = topo.find("h4").expect("h4");
    drv.sm.reconfigure(SmConfig { subnet_timeout: 20, ..SmConfig::default() });
    let limit = drv.now() + LIMIT;
    drv.run_until(limit, |ev| matches!(ev, SmEvent::PhaseStarted { phase: SweepPhase::ConfiguringPorts, .. }));
    drv.fabric.inject_fault(Fault::AddRule(LinkRule { link: Some((h4, 1)), drop: 1.0, delay_ns: 0, jitter_ns: 0 }));
    let mut phases = Vec::new();
    for _ in 0..4 {
        assert!(!next_report(&mut drv, &mut phases).complete);
    }
    assert_eq!(drv.sm.sweeps_done(), (2, 0, 3), "three repairs after the failed heavy sweep");
    // Then the heavy re-sweep (rediscovery: h4 does not answer there either).
    phases.clear();
    let r = next_report(&mut drv, &mut phases);
    assert!(phases.contains(&SweepPhase::Discovering) && !r.complete, "{phases:?}");
}
