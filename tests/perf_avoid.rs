//! `perf-avoid-unhealthy` on the in-process simulator: a cable given an error rate is left out
//! of the routes after K flagged PM intervals (every pair still routed, read from the
//! switches' own tables), and carries routes again after M clean ones; with the option off the
//! routes do not move; a cable whose errors come and go every interval causes at most the
//! budget's re-routes; a host's only cable is kept, and the log says so.

use std::collections::BTreeMap;

use ibsm::core::perf::avoid::AvoidPolicy;
use ibsm::core::{Guid2Lid, Sm, SmConfig, SmEvent, SweepPhase};
use ibsm::transport::sim::SimDriver;
use ibsm_mad::{Guid, PortNum};
use ibsm_sim::fabric::{ErrorRate, Fault};
use ibsm_topology::{NodeKind, Topology};

mod support;
use support::sa::{LIMIT, example};
use support::sms::SECOND;

const INTERVAL: u64 = 10 * SECOND;
/// K and M of the tests: avoided after 2 flagged intervals, used again after 2 clean ones.
const K: u64 = 2;
const M: u64 = 2;

fn policy() -> AvoidPolicy {
    AvoidPolicy { flag_intervals: K as u32, clean_intervals: M as u32, max_reroutes: 2, window_ns: 3600 * SECOND }
}

fn up(avoid: Option<AvoidPolicy>) -> (SimDriver, Topology) {
    let topo = example("fat-tree-2l-k4.net");
    let mut cfg = SmConfig::default();
    cfg.perf.avoid = avoid;
    let mut drv = SimDriver::new(&topo, 3, Sm::new(cfg, Guid2Lid::default()), None).expect("attach");
    let report = drv.sweep(LIMIT, |_| {}).expect("a report");
    assert!(report.complete, "{report:?}");
    // The first PM sweep, right after the bring-up, reads every port once.
    let t = drv.now();
    drv.run_until(t + SECOND, |_| false);
    assert_eq!(drv.sm.perf().counts().sweeps, 1);
    (drv, topo)
}

/// 20 symbol errors a second at both ends of `node`'s cable on `port` (0: none).
fn errors(drv: &mut SimDriver, node: usize, port: u8, per_second: u32) {
    let rate = ErrorRate { symbol_errors: per_second, rcv_errors: 0, link_downed: 0, interval_ns: SECOND };
    drv.fabric.inject_fault(Fault::LinkErrors { node, port, rate });
}

/// Every switch's LFT as the simulated switch holds it, by switch name (LIDs 0..=63).
fn tables(drv: &SimDriver, topo: &Topology) -> BTreeMap<String, Vec<Option<u8>>> {
    topo.nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| n.kind == NodeKind::Switch)
        .map(|(i, n)| (n.name.clone(), (0..64).map(|lid| drv.fabric.lft_port(i, lid)).collect()))
        .collect()
}

/// LIDs that `switch` forwards through `port`.
fn lids_through(t: &BTreeMap<String, Vec<Option<u8>>>, switch: &str, port: u8) -> usize {
    t[switch].iter().filter(|&&p| p == Some(port)).count()
}

/// Runs PM sweeps until `done` holds with the SM between sweeps, collecting events; fails
/// past `intervals` PM intervals of virtual time.
fn run_until(drv: &mut SimDriver, intervals: u64, events: &mut Vec<SmEvent>, done: impl Fn(&SimDriver) -> bool) {
    let end = drv.now() + intervals * INTERVAL;
    loop {
        if done(drv) && drv.sm.phase() == SweepPhase::Up {
            return;
        }
        assert!(drv.now() < end, "not within {intervals} PM intervals");
        let t = drv.now() + SECOND / 10;
        drv.run_until(t, |ev| {
            events.push(ev.clone());
            false
        });
    }
}

/// Every pair of live HCA ports reaches the other through the switches' tables.
fn all_routed(drv: &SimDriver) {
    let check = drv.fabric.check_routes();
    assert!(check.ok() && check.pairs == 8 * 7, "{check:?}");
}

fn guid(topo: &Topology, name: &str) -> Guid {
    topo.nodes[topo.find(name).expect("node")].node_guid
}

#[test]
fn a_bad_cable_is_avoided_after_k_intervals_and_used_again_after_m_clean_ones() {
    let (mut drv, topo) = up(Some(policy()));
    let before = tables(&drv, &topo);
    // leaf-0[3] is cabled to spine-0[1].
    assert!(lids_through(&before, "leaf-0", 3) > 0 && lids_through(&before, "spine-0", 1) > 0);
    let (leaf, spine) = (guid(&topo, "leaf-0"), guid(&topo, "spine-0"));
    let mut ends = vec![(leaf, 3), (spine, 1)];
    ends.sort();
    let mut events = Vec::new();
    errors(&mut drv, topo.find("leaf-0").expect("leaf-0"), 3, 20);
    let at = drv.now();
    run_until(&mut drv, K + 2, &mut events, |d| !d.sm.perf().routed().cut.is_empty());
    let pm = drv.sm.perf();
    assert!(drv.now() - at <= (K + 1) * INTERVAL, "avoided {} s after the errors began", (drv.now() - at) / SECOND);
    assert_eq!(pm.routed().cut.iter().copied().collect::<Vec<_>>(), ends);
    assert!(pm.routed().kept.is_empty());
    assert_eq!(pm.avoid_counts(), (1, 0));
    let avoided = tables(&drv, &topo);
    assert_eq!(lids_through(&avoided, "leaf-0", 3), 0, "{:?}", avoided["leaf-0"]);
    assert_eq!(lids_through(&avoided, "spine-0", 1), 0, "{:?}", avoided["spine-0"]);
    all_routed(&drv);
    let mut logged: Vec<(Guid, u8)> = events
        .iter()
        .filter_map(|e| match e {
            SmEvent::PortAvoided { node, port, .. } => Some((*node, port.0)),
            _ => None,
        })
        .collect();
    logged.sort();
    assert_eq!(logged, ends, "logged once per port");
    // Listed in `ibsm status` problems, counted in metrics.
    let st = ibsm::daemon::control::status(&drv.sm);
    let listed: Vec<(String, u8, bool)> =
        st.problems.avoided_ports.iter().map(|p| (p.node.clone(), p.port, p.kept)).collect();
    let hex = |g: Guid| format!("{:#018x}", g.0);
    assert_eq!(listed, ends.iter().map(|&(g, p)| (hex(g), p, false)).collect::<Vec<_>>());
    let text = ibsm::daemon::metrics::render(&drv.sm);
    assert!(text.contains("ibsm_perf_avoided_ports 2\n") && text.contains("ibsm_perf_avoid_reroutes_total 1\n"));

    // The errors stop: after M clean intervals the cable carries routes again, the same as
    // before (the last full route is taken again).
    errors(&mut drv, topo.find("leaf-0").expect("leaf-0"), 3, 0);
    let at = drv.now();
    run_until(&mut drv, M + 3, &mut events, |d| d.sm.perf().routed().cut.is_empty());
    assert!(drv.now() - at > M * INTERVAL - INTERVAL, "used again too soon: {} s", (drv.now() - at) / SECOND);
    assert_eq!(tables(&drv, &topo), before);
    all_routed(&drv);
    assert_eq!(drv.sm.perf().avoid_counts(), (2, 0));
    let again = events.iter().filter(|e| matches!(e, SmEvent::PortUsedAgain { .. })).count();
    assert_eq!(again, 2);
}

#[test]
fn with_the_option_off_routes_do_not_change() {
    let (mut drv, topo) = up(None);
    let before = tables(&drv, &topo);
    let heavy = drv.sm.sweeps_done();
    let mut events = Vec::new();
    errors(&mut drv, topo.find("leaf-0").expect("leaf-0"), 3, 20);
    let end = drv.now() + (K + 2) * INTERVAL;
    run_until(&mut drv, K + 3, &mut events, |d| d.now() >= end);
    assert_eq!(drv.sm.perf().flagged().len(), 2, "the cable is flagged");
    assert_eq!(tables(&drv, &topo), before);
    assert_eq!(drv.sm.sweeps_done(), heavy, "no re-route");
    assert!(drv.sm.perf().routed().cut.is_empty());
    assert!(!events.iter().any(|e| matches!(e, SmEvent::PortAvoided { .. } | SmEvent::PortAvoidKept { .. })));

    // Turned on by a reload: the cable is avoided within K intervals.
    let mut cfg = drv.sm.config().clone();
    cfg.perf.avoid = Some(policy());
    drv.sm.reconfigure(cfg);
    run_until(&mut drv, K + 2, &mut events, |d| !d.sm.perf().routed().cut.is_empty());
    assert_eq!(lids_through(&tables(&drv, &topo), "leaf-0", 3), 0);
    all_routed(&drv);
    // And off again: the routes are as before at once.
    let mut cfg = drv.sm.config().clone();
    cfg.perf.avoid = None;
    drv.sm.reconfigure(cfg);
    run_until(&mut drv, 1, &mut events, |d| d.sm.perf().routed().cut.is_empty());
    assert_eq!(tables(&drv, &topo), before);
}

#[test]
fn errors_that_come_and_go_every_interval_spend_at_most_the_budget() {
    // Avoided after one flagged interval, used again after one clean one: every interval
    // would change the set.
    let flappy = AvoidPolicy { flag_intervals: 1, clean_intervals: 1, ..policy() };
    let (mut drv, topo) = up(Some(flappy));
    let leaf = topo.find("leaf-0").expect("leaf-0");
    let heavy = drv.sm.sweeps_done().0;
    let mut events = Vec::new();
    for i in 0..10u64 {
        // Toggled right after a PM sweep: the next interval of that cable has errors, or none.
        errors(&mut drv, leaf, 3, if i % 2 == 0 { 20 } else { 0 });
        let sweeps = drv.sm.perf().counts().sweeps;
        run_until(&mut drv, 2, &mut events, |d| d.sm.perf().counts().sweeps > sweeps && !d.sm.perf().sweeping());
    }
    let (reroutes, deferred) = drv.sm.perf().avoid_counts();
    assert_eq!(reroutes, 2, "the budget: 2 an hour");
    assert!(deferred >= 3, "the changes past the budget wait: {deferred}");
    assert_eq!(drv.sm.sweeps_done().0 - heavy, 2, "one heavy sweep per re-route");
    all_routed(&drv);
}

#[test]
fn a_hosts_only_cable_is_kept_and_the_log_says_so() {
    let (mut drv, topo) = up(Some(policy()));
    let before = tables(&drv, &topo);
    // leaf-0[1] is h0's only cable.
    assert_eq!(topo.nodes[topo.find("h0").expect("h0")].links.iter().flatten().count(), 1);
    let (leaf, h0) = (guid(&topo, "leaf-0"), guid(&topo, "h0"));
    let mut events = Vec::new();
    errors(&mut drv, topo.find("leaf-0").expect("leaf-0"), 1, 20);
    run_until(&mut drv, K + 2, &mut events, |d| !d.sm.perf().routed().kept.is_empty());
    let pm = drv.sm.perf();
    assert!(pm.routed().cut.is_empty());
    let kept: Vec<(Guid, u8)> = pm.routed().kept.iter().copied().collect();
    let mut want = vec![(leaf, 1), (h0, 1)];
    want.sort();
    assert_eq!(kept, want);
    let logged: Vec<(Guid, PortNum)> = events
        .iter()
        .filter_map(|e| match e {
            SmEvent::PortAvoidKept { node, port, .. } => Some((*node, *port)),
            _ => None,
        })
        .collect();
    assert_eq!(logged.len(), 2, "once per port: {logged:?}");
    assert_eq!(tables(&drv, &topo), before, "nothing moved");
    all_routed(&drv);
    let st = ibsm::daemon::control::status(&drv.sm);
    assert!(st.problems.avoided_ports.iter().all(|p| p.kept) && st.problems.avoided_ports.len() == 2);
    // A later PM interval, still flagged, logs nothing more.
    let n = events.len();
    let t = drv.now();
    drv.run_until(t + 2 * INTERVAL, |ev| {
        events.push(ev.clone());
        false
    });
    assert!(!events[n..].iter().any(|e| matches!(e, SmEvent::PortAvoidKept { .. })));
}
