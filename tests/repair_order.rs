//! The order in which a repair writes LFT blocks, judged on the simulated fabric: a 4x4x4
//! torus and a random 64-switch fabric routed by `dfsssp` on several layers lose one
//! switch-to-switch cable (several cuts each); the test steps the fabric 20 ns at a time
//! through the repair's LFT writes (each Set applies at once) and, whenever a switch's table
//! changed, reads every switch's table from the simulator (an intermediate state) and runs the
//! per-VL credit-loop check on it, each pair on the VL of its SL (SL n on VL n). The rule of
//! issue 25: with the SLs the hosts hold, no state has a credit loop. Hosts hold the old SLs;
//! a pair the repair `stranded` (no route kept its layer: its SL changed) is judged on its new
//! SL once new entries are written, and the test checks that the stranded pairs the SM
//! reports are exactly the pairs whose SL changed. Every cut here strands a few pairs, so
//! every repair here is written in two passes (changed entries unrouted first); with one pass
//! the rule fails on both fabrics.

use std::collections::HashMap;

use ibsm::core::{Guid2Lid, Sm, SmConfig, SmEvent, SweepPhase};
use ibsm::routes::live::LiveRoutes;
use ibsm::transport::sim::SimDriver;
use ibsm_routing::Lft;
use ibsm_sim::fabric::Fault;
use ibsm_topology::generators::GenSpec;

mod support;
use support::order::{first_cable, held, loops, old_and_new, sl_changed, switch_cables, written_new as holds_new};

/// What a repair's LFT writes went through: every state of the switches' tables from the
/// repair's first LFT write to its end, the fabric after the cut, each pair's SL (by view
/// switch and destination LID) before and after, and the repair's figures.
struct Repair {
    states: Vec<Vec<Lft>>,
    view: ibsm_routing::FabricView,
    old_sl: Vec<Vec<u8>>,
    new_sl: Vec<Vec<u8>>,
    stranded: usize,
    passes: u8,
}

impl Repair {
    /// The loops of each VL in state `k` with the pairs on the SLs `rows` give: (VL, channels).
    fn loops(&self, k: usize, rows: &[Vec<u8>]) -> Vec<(u8, usize)> {
        loops(&self.view, &self.states[k], rows)
    }

    /// (switch, LID) pairs whose SL the repair changed.
    fn sl_changed(&self) -> usize {
        sl_changed(&self.old_sl, &self.new_sl)
    }
}

/// `topo` swept under dfsssp on the simulator: the driver, each (switch, LID) pair's SL, the
/// simulator's node of each routing view switch, and the view's top LID.
struct Swept {
    drv: SimDriver,
    old_sl: Vec<Vec<u8>>,
    nodes: Vec<usize>,
    top: u16,
}

fn swept(topo: &ibsm_topology::Topology) -> Swept {
    let cfg = SmConfig { routing_engine: vec!["dfsssp".into()], ..SmConfig::default() };
    let mut drv = SimDriver::new(topo, 7, Sm::new(cfg, Guid2Lid::default()), None).expect("attach");
    let report = drv.sweep(5_000_000_000, |_| {}).expect("a report");
    assert!(report.complete, "{report:?}");
    assert_eq!(drv.sm.routing_engine_used(), Some("dfsssp"));
    let before = LiveRoutes::from_sm(&drv.sm).expect("routes");
    let old_sl = before.layers().expect("layers");
    let (plan, _) = before.to_plan().expect("plan");
    // The simulator's node of each view switch.
    let by_guid: HashMap<_, _> =
        (0..topo.nodes.len()).filter_map(|i| drv.fabric.node_guid(i).map(|g| (g, i))).collect();
    let nodes: Vec<usize> = plan.view.switches.iter().map(|s| by_guid[&s.guid]).collect();
    let top = plan.view.max_lid();
    Swept { drv, old_sl, nodes, top }
}

/// `topo` under dfsssp, swept, then its `nth` switch-to-switch cable (modulo their count) cut
/// and the repair run with the fabric stepped 20 ns at a time through its LFT writes (each
/// Set applies at once in the simulator: a state per Set at most).
fn repair(topo: &ibsm_topology::Topology, nth: usize) -> Repair {
    let Swept { mut drv, old_sl, nodes, top } = swept(topo);
    // One switch-to-switch cable cut (each counted from its lower node).
    let cables = switch_cables(topo);
    let (sw, port) = cables[nth % cables.len()];
    drv.fabric.inject_fault(Fault::LinkDown { node: sw, port });
    let limit = drv.now() + 5_000_000_000;
    let ev = drv.run_until(limit, |ev| matches!(ev, SmEvent::PhaseStarted { phase: SweepPhase::ProgrammingLfts, .. }));
    assert!(ev.is_some(), "the repair reaches its LFT writes");
    // Step through the writes; a state is kept whenever a table changed.
    let mut states = vec![held(&drv.fabric, &nodes, top)];
    let mut up = None;
    while up.is_none() && drv.now() < limit {
        let next = drv.now() + 20;
        up = drv.run_until(next, |ev| matches!(ev, SmEvent::SubnetUp(_)));
        let now = held(&drv.fabric, &nodes, top);
        if states.last() != Some(&now) {
            states.push(now);
        }
    }
    let Some(SmEvent::SubnetUp(report)) = up else { panic!("the repair ends") };
    // dfsssp repairs its layered routes: only the paths that crossed the cable move.
    let ibsm::core::lft::RouteMode::Repaired { entries, stranded, passes, .. } = report.routing_mode else {
        panic!("not repaired: {:?}", report.routing_mode)
    };
    assert!(entries > 0, "{:?}", report.routing_mode);
    let after = LiveRoutes::from_sm(&drv.sm).expect("routes");
    let new_sl = after.layers().expect("layers");
    let (plan, _) = after.to_plan().expect("plan");
    assert!(states.len() > 2, "the repair wrote blocks one after another: {} states", states.len());
    Repair { states, view: plan.view, old_sl, new_sl, stranded, passes }
}

/// A state that loops: its index and its loops as [(VL, channels)].
type Looping = (usize, Vec<(u8, usize)>);

/// Whether state `k` holds a new entry of the repair (the second pass has begun, or the one).
fn written_new(r: &Repair, k: usize) -> bool {
    holds_new(&r.states[k], &r.states[0], &r.states[r.states.len() - 1])
}

/// Every cut of `topo` in `cuts`, judged: the states that loop with the SLs the hosts hold,
/// as (state, [(VL, channels)]). Until the first new entry is written the hosts hold the old
/// SLs; from then on each pair is judged on its old SL where it kept it, and a stranded pair
/// (its SL changed) on its new one (the rule cannot hold for it before its host asks again).
fn judge(what: &str, topo: &ibsm_topology::Topology, cuts: &[usize]) -> Vec<(usize, Repair, Vec<Looping>)> {
    cuts.iter()
        .map(|&nth| {
            let r = repair(topo, nth);
            let bad: Vec<_> = (0..r.states.len())
                .map(|k| (k, r.loops(k, if written_new(&r, k) { &r.new_sl } else { &r.old_sl })))
                .filter(|(_, l)| !l.is_empty())
                .collect();
            eprintln!(
                "{what} cut {nth}: {} states, {} passes, {} stranded, {} SLs changed, {} states loop: {bad:?}",
                r.states.len(),
                r.passes,
                r.stranded,
                r.sl_changed(),
                bad.len()
            );
            (nth, r, bad)
        })
        .collect()
}

/// The rule of issue 25 on `cuts` of `topo`: no state of a repair's writes has a credit loop
/// with the SLs the hosts hold ([`judge`]); the stranded pairs the repair reports are the pairs
/// whose SL changed; returns how many cuts stranded no pair (there the rule holds with every
/// host on its old SL throughout).
fn rule(what: &str, topo: &ibsm_topology::Topology, cuts: &[usize]) -> usize {
    let mut whole = 0;
    for (nth, r, bad) in judge(what, topo, cuts) {
        assert!(bad.is_empty(), "{what} cut {nth}: {} of {} states loop: {bad:?}", bad.len(), r.states.len());
        assert_eq!(r.stranded, r.sl_changed(), "{what} cut {nth}");
        whole += usize::from(r.stranded == 0);
    }
    whole
}

#[test]
fn no_intermediate_state_of_a_repair_has_a_credit_loop_on_a_torus() {
    let topo = GenSpec::torus(&[4, 4, 4], 1).generate().expect("torus");
    rule("torus", &topo, &[0, 7, 50]);
}

#[test]
fn no_intermediate_state_of_a_repair_has_a_credit_loop_on_a_random_fabric() {
    let topo = GenSpec::random(64, 16, 2, 200, 7).generate().expect("random");
    rule("random", &topo, &[0, 40, 90, 130]);
}

#[test]
fn a_repair_starts_and_ends_without_a_credit_loop() {
    let r = repair(&GenSpec::torus(&[4, 4, 4], 1).generate().expect("torus"), 0);
    // Before the first write, with the SLs the hosts hold; at the end, with the SLs the SA
    // answers from then on.
    assert_eq!(r.loops(0, &r.old_sl), []);
    assert_eq!(r.loops(r.states.len() - 1, &r.new_sl), []);
}

/// Steps `drv` 20 ns at a time until `until` (an event) or `limit`, keeping each state of the
/// switches' tables that differs from the last in `states`.
fn step_through(
    drv: &mut SimDriver,
    nodes: &[usize],
    top: u16,
    states: &mut Vec<Vec<Lft>>,
    limit: u64,
    until: impl Fn(&SmEvent) -> bool,
) -> Option<SmEvent> {
    let mut got = None;
    while got.is_none() && drv.now() < limit {
        let next = drv.now() + 20;
        got = drv.run_until(next, &until);
        let now = held(&drv.fabric, nodes, top);
        if states.last() != Some(&now) {
            states.push(now);
        }
    }
    got
}

/// The two write-order gaps of a repair written in two passes: a first-pass Set that fails
/// (the switch at the near end of the cut cable refuses LFT Sets) holds the second pass back,
/// and the sweep after it (the switch answers again) starts from what the switches hold, not
/// from the tables the failed sweep meant to write. Throughout, no state holds an entry the
/// repair drops beside one it adds, and none has a credit loop with the SLs the hosts hold.
#[test]
fn a_failed_first_pass_holds_the_second_back_and_the_next_sweep_starts_from_what_switches_hold() {
    use ibsm_mad::ids;
    use ibsm_sim::fabric::SetFault;
    let topo = GenSpec::torus(&[4, 4, 4], 1).generate().expect("torus");
    let Swept { mut drv, old_sl, nodes, top } = swept(&topo);
    let (sw, port) = first_cable(&topo);
    let status = Some(0x001c);
    drv.fabric.inject_fault(Fault::FailSets(SetFault { node: Some(sw), attr: ids::attr::LFT, status }));
    drv.fabric.inject_fault(Fault::LinkDown { node: sw, port });
    let limit = drv.now() + 5_000_000_000;
    let starts = |ev: &SmEvent| matches!(ev, SmEvent::PhaseStarted { phase: SweepPhase::ProgrammingLfts, .. });
    assert!(drv.run_until(limit, starts).is_some(), "the repair reaches its LFT writes");
    let mut states = vec![held(&drv.fabric, &nodes, top)];
    let up = step_through(&mut drv, &nodes, top, &mut states, limit, |ev| matches!(ev, SmEvent::SubnetUp(_)));
    let Some(SmEvent::SubnetUp(first)) = up else { panic!("the failed repair ends") };
    assert!(!first.complete, "a refused Set leaves the sweep incomplete: {first:?}");
    let failed_at = states.len();
    // The switch answers again; the sweep that redoes what it misses writes the rest.
    drv.fabric.inject_fault(Fault::ClearSetFaults);
    let limit = drv.now() + 30_000_000_000;
    assert!(drv.run_until(limit, starts).is_some(), "a later sweep writes again");
    let up = step_through(&mut drv, &nodes, top, &mut states, limit, |ev| matches!(ev, SmEvent::SubnetUp(_)));
    let Some(SmEvent::SubnetUp(second)) = up else { panic!("the next sweep ends") };
    assert!(second.complete, "{second:?}");
    let after = LiveRoutes::from_sm(&drv.sm).expect("routes");
    let new_sl = after.layers().expect("layers");
    let (plan, _) = after.to_plan().expect("plan");
    let (old, new) = (&states[0], &states[states.len() - 1]);
    assert_ne!(old, new, "the repair changed tables");
    let r = Repair { states: states.clone(), view: plan.view, old_sl, new_sl, stranded: 0, passes: 2 };
    for (k, state) in states.iter().enumerate() {
        let (o, n) = old_and_new(state, old, new);
        assert!(
            o == 0 || n == 0,
            "state {k} of {} (failed sweep ends at {failed_at}): {o} dropped entries beside {n} new ones",
            states.len()
        );
        if k < failed_at {
            assert_eq!(n, 0, "state {k}: a new entry written after a first-pass Set failed");
        }
        let rows = if written_new(&r, k) { &r.new_sl } else { &r.old_sl };
        assert_eq!(r.loops(k, rows), [], "state {k}");
    }
    // The end: every switch holds the repair's tables.
    assert_eq!(old_and_new(new, old, new).0, 0);
}

/// A full layered route over tables the switches hold (issue 25's second gap): a reload that
/// changes the layered engine (dfsssp to nue: other layers), and a re-route of a fabric whose tables a repair made, route in
/// full and move many paths to other layers. Written in one pass, their states would mix
/// entries of both routes, which nothing judged; they are written in two passes from what the
/// switches hold (the changed entries unrouted first). Every state is judged as a repair's
/// are: no credit loop with the SLs the hosts hold, and no entry the route drops beside one
/// it adds.
#[test]
fn a_full_layered_route_over_running_tables_is_written_in_two_passes_without_a_credit_loop() {
    let topo = GenSpec::torus(&[4, 4, 4], 1).generate().expect("torus");
    for change in ["reload from dfsssp to nue", "re-route after a repair"] {
        let Swept { mut drv, mut old_sl, nodes, top } = swept(&topo);
        if change.starts_with("reload") {
            let mut cfg = drv.sm.config().clone();
            cfg.routing_engine = vec!["nue".into()];
            assert!(drv.sm.reconfigure(cfg).reroute, "{change}");
        } else {
            let (sw, port) = first_cable(&topo);
            drv.fabric.inject_fault(Fault::LinkDown { node: sw, port });
            let limit = drv.now() + 5_000_000_000;
            let up = drv.run_until(limit, |ev| matches!(ev, SmEvent::SubnetUp(r) if r.complete));
            let Some(SmEvent::SubnetUp(report)) = up else { panic!("{change}: the repair ends") };
            assert!(matches!(report.routing_mode, ibsm::core::lft::RouteMode::Repaired { .. }), "{report:?}");
            old_sl = LiveRoutes::from_sm(&drv.sm).expect("routes").layers().expect("layers");
            drv.sm.force_full_route();
            let now = drv.now();
            drv.sm.start_sweep(now);
        }
        let limit = drv.now() + 5_000_000_000;
        let starts = |ev: &SmEvent| matches!(ev, SmEvent::PhaseStarted { phase: SweepPhase::ProgrammingLfts, .. });
        assert!(drv.run_until(limit, starts).is_some(), "{change}: the route reaches its LFT writes");
        let mut states = vec![held(&drv.fabric, &nodes, top)];
        let up = step_through(&mut drv, &nodes, top, &mut states, limit, |ev| matches!(ev, SmEvent::SubnetUp(_)));
        let Some(SmEvent::SubnetUp(report)) = up else { panic!("{change}: the sweep ends") };
        assert!(report.complete, "{change}: {report:?}");
        assert_eq!(report.routing_mode, ibsm::core::lft::RouteMode::Full, "{change}");
        let after = LiveRoutes::from_sm(&drv.sm).expect("routes");
        let new_sl = after.layers().expect("layers");
        let (plan, _) = after.to_plan().expect("plan");
        let (old, new) = (&states[0], &states[states.len() - 1]);
        let (o0, _) = old_and_new(old, old, new);
        let both: Vec<_> = (0..states.len())
            .map(|k| (k, old_and_new(&states[k], old, new)))
            .filter(|(_, (o, n))| *o > 0 && *n > 0)
            .collect();
        let bad = support::order::looping(&plan.view, &states, &old_sl, &new_sl);
        // Not asserted: the new tables under the SLs the hosts held before (until they ask
        // again), which no write order changes.
        let stale = loops(&plan.view, new, &old_sl);
        eprintln!(
            "{change}: {o0} entries changed, {} SLs changed, {} states, {} with dropped entries beside new ones, {} loop; \
             the new tables under the old SLs: loops on {} VLs",
            sl_changed(&old_sl, &new_sl),
            states.len(),
            both.len(),
            bad.len(),
            stale.len()
        );
        assert!(o0 > 0 && sl_changed(&old_sl, &new_sl) > 0, "{change}: the route moved paths and SLs");
        assert!(bad.is_empty(), "{change}: {} of {} states loop: {bad:?}", bad.len(), states.len());
        assert!(both.is_empty(), "{change}: states with (dropped, new) entries: {both:?}");
        // The first pass ran: a state holds neither the dropped entries nor the new ones.
        assert!(states.iter().any(|s| old_and_new(s, old, new) == (0, 0)), "{change}: no first pass");
    }
}
