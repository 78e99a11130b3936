//! The order in which a repair writes LFT blocks, judged on the simulated fabric: a 4x4x4
//! torus routed by `dfsssp` on several layers loses one switch-to-switch cable; the test steps
//! the fabric 20 ns at a time through the repair's LFT writes and, whenever a switch's table
//! changed, reads every switch's table from the simulator (an intermediate state) and runs the
//! per-VL credit-loop check on it, each pair on the VL of its SL (SL n on VL n). The first
//! state is judged with the SLs from before the cut (what the hosts hold while the blocks are
//! written), the last with the SLs the SA answers after it: both are free of credit loops.
//! The repair is dfsssp's layered repair (only the paths that crossed the cable move). The rule
//! issue 25 asks for, no loop in any state under the SLs the hosts hold, is the ignored test:
//! it fails today (see its doc).

use std::collections::HashMap;

use ibsm::core::{Guid2Lid, Sm, SmConfig, SmEvent, SweepPhase};
use ibsm::routes::live::LiveRoutes;
use ibsm::transport::sim::SimDriver;
use ibsm_mad::PortNum;
use ibsm_routing::check::{CreditLoops, credit_loops_per_vl};
use ibsm_routing::{Lft, Routes};
use ibsm_sim::fabric::Fault;
use ibsm_topology::NodeKind;
use ibsm_topology::generators::GenSpec;

/// Every view switch's table as the simulator's switches hold it now.
fn held(drv: &SimDriver, nodes: &[usize], top: u16) -> Vec<Lft> {
    nodes
        .iter()
        .map(|&n| Lft {
            ports: (0..=top).map(|l| PortNum(drv.fabric.lft_entry(n, l).unwrap_or(Lft::UNROUTED.0))).collect(),
        })
        .collect()
}

/// What a repair's LFT writes went through: every state of the switches' tables from the
/// repair's first LFT write to its end, the fabric after the cut, and each pair's SL (by view
/// switch and destination LID) before and after.
struct Repair {
    states: Vec<Vec<Lft>>,
    view: ibsm_routing::FabricView,
    old_sl: Vec<Vec<u8>>,
    new_sl: Vec<Vec<u8>>,
}

impl Repair {
    /// The loops of each VL in state `k` with the pairs on the SLs `rows` give: (VL, channels).
    fn loops(&self, k: usize, rows: &[Vec<u8>]) -> Vec<(u8, usize)> {
        let routes = Routes::from_tables(self.states[k].clone());
        let sl = |s: usize, d: ibsm_mad::Lid| rows.get(s).and_then(|r| r.get(usize::from(d.0))).copied();
        credit_loops_per_vl(&self.view, &routes, &sl)
            .into_iter()
            .filter_map(|v| if let CreditLoops::Found(c) = v.loops { Some((v.vl, c.len())) } else { None })
            .collect()
    }
}

/// A 4x4x4 torus under dfsssp, swept, then one switch-to-switch cable cut and the repair run
/// with the fabric stepped 20 ns at a time through its LFT writes.
fn repair() -> Repair {
    let topo = GenSpec::torus(&[4, 4, 4], 1).generate().expect("torus");
    let cfg = SmConfig { routing_engine: vec!["dfsssp".into()], ..SmConfig::default() };
    let mut drv = SimDriver::new(&topo, 7, Sm::new(cfg, Guid2Lid::default()), None).expect("attach");
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
    // One switch-to-switch cable cut.
    let (sw, port) = topo
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| n.kind == NodeKind::Switch)
        .find_map(|(i, n)| {
            (1..=n.num_ports)
                .find(|&p| n.peer(p).is_some_and(|q| topo.nodes[q.node].kind == NodeKind::Switch))
                .map(|p| (i, p))
        })
        .expect("a switch-to-switch cable");
    drv.fabric.inject_fault(Fault::LinkDown { node: sw, port });
    let limit = drv.now() + 5_000_000_000;
    let ev = drv.run_until(limit, |ev| matches!(ev, SmEvent::PhaseStarted { phase: SweepPhase::ProgrammingLfts, .. }));
    assert!(ev.is_some(), "the repair reaches its LFT writes");
    // Step through the writes; a state is kept whenever a table changed.
    let mut states = vec![held(&drv, &nodes, top)];
    let mut up = None;
    while up.is_none() && drv.now() < limit {
        let next = drv.now() + 20;
        up = drv.run_until(next, |ev| matches!(ev, SmEvent::SubnetUp(_)));
        let now = held(&drv, &nodes, top);
        if states.last() != Some(&now) {
            states.push(now);
        }
    }
    let Some(SmEvent::SubnetUp(report)) = up else { panic!("the repair ends") };
    // dfsssp repairs its layered routes: only the paths that crossed the cable move.
    assert!(
        matches!(report.routing_mode, ibsm::core::lft::RouteMode::Repaired { entries, .. } if entries > 0),
        "{:?}",
        report.routing_mode
    );
    let after = LiveRoutes::from_sm(&drv.sm).expect("routes");
    let new_sl = after.layers().expect("layers");
    let (plan, _) = after.to_plan().expect("plan");
    assert!(states.len() > 2, "the repair wrote blocks one after another: {} states", states.len());
    Repair { states, view: plan.view, old_sl, new_sl }
}

#[test]
fn a_repair_starts_and_ends_without_a_credit_loop() {
    let r = repair();
    let changed =
        r.old_sl.iter().zip(&r.new_sl).map(|(a, b)| a.iter().zip(b).filter(|(x, y)| x != y).count()).sum::<usize>();
    let (first, last) = (&r.states[0], &r.states[r.states.len() - 1]);
    let moved = first
        .iter()
        .zip(last)
        .map(|(a, b)| a.ports.iter().zip(&b.ports).filter(|(x, y)| x != y).count())
        .sum::<usize>();
    eprintln!("{} states, {moved} LFT entries and {changed} (switch, LID) SLs changed", r.states.len());
    // Before the first write, with the SLs the hosts hold; at the end, with the SLs the SA
    // answers from then on.
    assert_eq!(r.loops(0, &r.old_sl), []);
    assert_eq!(r.loops(r.states.len() - 1, &r.new_sl), []);
}

/// The rule item 1 of issue 25 asks for. It does not hold yet. dfsssp now repairs instead of
/// routing again (8 states, 71 entries, where a full route gave 32 states). It keeps every
/// path that did not cross the cable, and most re-routed pairs keep their layer. On this cut
/// 12 (switch, LID) pairs fit no route through a forwarding tree that keeps their old layer
/// acyclic, and move to another. Under the old SL the hosts hold, their new route loops (VL 0
/// and 1) from the first write until the hosts ask for their paths again.
#[test]
#[ignore = "fails today: 12 re-routed pairs change layer, and their new routes loop under the old SLs (issue 25)"]
fn no_intermediate_state_of_a_repair_has_a_credit_loop() {
    let r = repair();
    let bad: Vec<_> = (0..r.states.len()).map(|k| (k, r.loops(k, &r.old_sl))).filter(|(_, l)| !l.is_empty()).collect();
    assert!(bad.is_empty(), "{} of {} states loop (state, [(VL, channels)]): {bad:?}", bad.len(), r.states.len());
}

