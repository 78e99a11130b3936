//! A configuration reloaded while the SM runs ([`Sm::reconfigure`], what SIGHUP and `ibsm
//! reload` call): options that need no SMP are in force without a sweep, options the sweep
//! programs take one sweep that writes no LFT block, a new routing engine routes from scratch,
//! and options only a restart changes keep their running value. `tests/ibsim_sa.rs` sends the
//! real SIGHUP to `ibsm run` under ibsim.

use ibsm::core::lft::RouteMode;
use ibsm::core::{Guid2Lid, Sm, SmConfig, SmEvent};
use ibsm::transport::sim::SimDriver;

mod support;
use support::sa::{LIMIT, example};

fn up() -> SimDriver {
    let topo = example("fat-tree-2l-k4.net");
    let mut drv = SimDriver::new(&topo, 5, Sm::new(SmConfig::default(), Guid2Lid::default()), None).expect("attach");
    assert!(drv.sweep(LIMIT, |_| {}).expect("up").complete);
    drv
}

/// Runs the fabric for `ns` of virtual time; the report of a sweep if one ended.
fn run_for(drv: &mut SimDriver, ns: u64) -> Option<ibsm::core::SubnetReport> {
    let limit = drv.now() + ns;
    match drv.run_until(limit, |ev| matches!(ev, SmEvent::SubnetUp(_))) {
        Some(SmEvent::SubnetUp(r)) => Some(r),
        _ => None,
    }
}

#[test]
fn the_same_configuration_changes_nothing() {
    let mut drv = up();
    let before = drv.sm.smp_counters();
    let done = drv.sm.reconfigure(SmConfig::default());
    assert!(done.is_empty() && !done.sweep, "{done:?}");
    // Shorter than the light-sweep interval: nothing is sent.
    assert!(run_for(&mut drv, 1_000_000_000).is_none());
    assert_eq!(drv.sm.smp_counters(), before);
}

#[test]
fn priority_and_sa_options_apply_at_once_without_a_sweep() {
    let mut drv = up();
    let before = drv.sm.smp_counters();
    let cfg = SmConfig { priority: 11, sa_rate_limit: 10, sa_key: 7, smp_retries: 1, ..SmConfig::default() };
    let done = drv.sm.reconfigure(cfg);
    assert_eq!(done.applied, ["smp-retries", "priority", "sa-rate-limit", "sa-key"]);
    assert!(done.restart.is_empty() && !done.sweep && !done.reroute);
    assert_eq!(drv.sm.master().map(|m| m.2), Some(11), "SMInfo reports the new priority");
    assert_eq!(drv.sm.config().sa_key, 7);
    assert!(run_for(&mut drv, 1_000_000_000).is_none(), "no sweep");
    assert_eq!(drv.sm.smp_counters(), before, "not one SMP");
}

#[test]
fn what_the_sweep_programs_takes_one_sweep_that_writes_no_lft_block() {
    let mut drv = up();
    let cfg = SmConfig { subnet_timeout: 20, switch_life_time: 15, ..SmConfig::default() };
    let done = drv.sm.reconfigure(cfg);
    assert_eq!(done.applied, ["subnet-timeout", "switch-life-time"]);
    assert!(done.sweep && !done.reroute);
    let r = run_for(&mut drv, LIMIT).expect("a sweep");
    assert!(r.complete);
    assert_eq!(r.lft_blocks_sent, 0);
    assert_eq!(r.routing_mode, RouteMode::Reused);
    // What the switches and end ports answered to the sweep's Sets.
    let subnet = drv.sm.subnet();
    let mut end_ports = 0;
    for n in &subnet.nodes {
        if let Some(si) = n.switch_info {
            assert_eq!(si.life_time_value, 15);
        }
        for (p, rec) in n.ports.iter().enumerate() {
            let end = if n.is_switch() { p == 0 } else { p > 0 && rec.is_linked() };
            if let (true, Some(info)) = (end, rec.info) {
                assert_eq!(info.subnet_timeout, 20);
                end_ports += 1;
            }
        }
    }
    assert_eq!(end_ports, subnet.nodes.len(), "every switch's port 0 and every host's port");
}

#[test]
fn a_new_routing_engine_routes_from_scratch() {
    let mut drv = up();
    assert_eq!(drv.sm.last_report().map(|r| r.routing_engine.as_str()), Some("ftree"));
    let cfg = SmConfig { routing_engine: vec!["minhop".to_owned()], ..SmConfig::default() };
    let done = drv.sm.reconfigure(cfg);
    assert_eq!(done.applied, ["routing-engine"]);
    assert!(done.sweep && done.reroute);
    let r = run_for(&mut drv, LIMIT).expect("a sweep");
    assert!(r.complete);
    assert_eq!((r.routing_engine.as_str(), r.routing_mode), ("minhop", RouteMode::Full));
    assert!(drv.fabric.check_routes().ok(), "every pair routed on the new tables");
}

#[test]
fn new_root_switches_route_from_scratch() {
    let mut drv = up();
    // A leaf as the only root: ftree declines it and up/down routes from it.
    let leaf = drv.sm.subnet().nodes.iter().find(|n| {
        n.is_switch()
            && n.ports
                .iter()
                .any(|p| p.remote.is_some_and(|(r, _)| drv.sm.subnet().node(r).is_some_and(|n| !n.is_switch())))
    });
    let leaf = leaf.expect("a leaf").info.node_guid;
    let mut cfg = SmConfig::default();
    cfg.routing_options.roots = vec![leaf];
    let done = drv.sm.reconfigure(cfg);
    assert_eq!(done.applied, ["root-guid-file"]);
    assert!(done.sweep && done.reroute);
    let r = run_for(&mut drv, LIMIT).expect("a sweep");
    assert!(r.complete);
    assert_eq!((r.routing_engine.as_str(), r.routing_mode), ("updn", RouteMode::Full));
    assert!(drv.fabric.check_routes().ok(), "every pair routed on the new tables");
}

#[test]
fn restart_only_options_keep_their_running_value() {
    let mut drv = up();
    let mut cfg = SmConfig { lmc: 2, priority: 3, ..SmConfig::default() };
    cfg.m_key.protect = 2;
    let done = drv.sm.reconfigure(cfg);
    assert_eq!(done.restart, ["lmc", "m-key-protect"]);
    assert_eq!(done.applied, ["priority"], "the rest applies");
    assert_eq!((drv.sm.config().lmc, drv.sm.config().m_key.protect), (0, SmConfig::default().m_key.protect));
    assert!(run_for(&mut drv, 1_000_000_000).is_none(), "no sweep");
}

/// A reload names the routing option it changed, not `root-guid-file` for any of them.
#[test]
fn a_reload_names_the_routing_option_that_changed() {
    let mut drv = up();
    let mut cfg = SmConfig::default();
    cfg.routing_options.tuning.port_shifting = true;
    let done = drv.sm.reconfigure(cfg.clone());
    assert_eq!(done.applied, ["port-shifting"]);
    assert!(done.sweep && done.reroute);
    cfg.routing_options.tuning.scatter_ports = 7;
    cfg.routing_options.max_layers = Some(2);
    let done = drv.sm.reconfigure(cfg);
    assert_eq!(done.applied, ["scatter-ports", "max-layers"]);
}
