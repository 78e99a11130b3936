//! A standby that takes over between the two passes of a layered repair (issue 25): a 4x4x4
//! torus under `dfsssp`, a master and a synced standby, one switch-to-switch cable cut. The
//! master's repair strands pairs, so it writes in two passes (the changed entries unrouted
//! first); the test kills it partway through its first pass, at the end of it, and early in
//! its second, and steps the fabric 20 ns at a time through everything the switches' tables
//! go through until the standby, now master, has brought the subnet up. The standby has no
//! record of the dead master's passes: the rule it follows is that an SM that has written no
//! LFT since it took over writes a layered engine's tables in two passes from what the
//! switches hold (read back, or vouched for by the last master's LFT digest where that names
//! its own base table). Judged on every state: no credit loop per VL with the SLs the hosts
//! hold, and no state holds an entry the repair drops beside one it adds.

use std::collections::HashMap;

use ibsm::core::{Guid2Lid, Sm, SmConfig, SmEvent, SweepPhase};
use ibsm::routes::live::LiveRoutes;
use ibsm::transport::sim::SimSms;
use ibsm_routing::Lft;
use ibsm_sim::fabric::{Fault, SimTime};
use ibsm_topology::Topology;
use ibsm_topology::generators::GenSpec;

mod support;
use support::order::{first_cable, held, looping, old_and_new, sl_changed};
use support::sms::{SECOND, hosts};

/// dfsssp, with two SMPs in flight: a kill stops a pass partway (with the default window
/// every Set of a pass is on its way at once, and lands).
fn cfg(priority: u8) -> SmConfig {
    SmConfig {
        priority,
        sm_key: 7,
        routing_engine: vec!["dfsssp".into()],
        max_smps_in_flight: 2,
        ..SmConfig::default()
    }
}

/// The fabric with its master (0, up) and a synced standby (1), the cable cut, and the master's
/// repair about to write: the harness, each pair's SL before the cut, the simulator's node of
/// each routing view switch, and the view's top LID.
struct Cut {
    h: SimSms,
    old_sl: Vec<Vec<u8>>,
    nodes: Vec<usize>,
    top: u16,
}

fn cut(topo: &Topology) -> Cut {
    let at = hosts(topo);
    let sms = vec![(Sm::new(cfg(9), Guid2Lid::default()), at[0]), (Sm::new(cfg(5), Guid2Lid::default()), at[1])];
    let mut h = SimSms::new(topo, 3, sms).expect("attach");
    h.start(0);
    h.run_until(60 * SECOND, |i, e| i == 0 && matches!(e, SmEvent::SubnetUp(r) if r.complete)).expect("up");
    assert_eq!(h.sms[0].sm.routing_engine_used(), Some("dfsssp"));
    h.start(1);
    h.run_until(h.now() + 10 * SECOND, |i, e| i == 1 && matches!(e, SmEvent::Standby { .. })).expect("standby");
    h.run_until(h.now() + 10 * SECOND, |i, e| i == 0 && matches!(e, SmEvent::SyncPeer { state: "current", .. }))
        .expect("the standby is current");
    let before = LiveRoutes::from_sm(&h.sms[0].sm).expect("routes");
    let old_sl = before.layers().expect("layers");
    let (plan, _) = before.to_plan().expect("plan");
    let by_guid: HashMap<_, _> = (0..topo.nodes.len()).filter_map(|i| h.fabric.node_guid(i).map(|g| (g, i))).collect();
    let nodes: Vec<usize> = plan.view.switches.iter().map(|s| by_guid[&s.guid]).collect();
    let top = plan.view.max_lid();
    let (sw, port) = first_cable(topo);
    h.fabric.inject_fault(Fault::LinkDown { node: sw, port });
    let writes =
        |i: usize, e: &SmEvent| i == 0 && matches!(e, SmEvent::PhaseStarted { phase: SweepPhase::ProgrammingLfts, .. });
    h.run_until(h.now() + 5 * SECOND, writes).expect("the master's repair reaches its LFT writes");
    Cut { h, old_sl, nodes, top }
}

/// Steps `h` 20 ns at a time until `until` (an SM and its event), `enough` says so of the
/// states, or `limit`; keeps each state of the switches' tables that differs from the last.
fn step(
    c: &mut Cut,
    states: &mut Vec<Vec<Lft>>,
    limit: u64,
    until: impl Fn(usize, &SmEvent) -> bool,
    enough: impl Fn(&[Vec<Lft>]) -> bool,
) -> Option<(usize, SmEvent)> {
    while c.h.now() < limit && !enough(states) {
        let next = c.h.now() + 20;
        let got = c.h.run_until(next, &until);
        if c.h.now() < next {
            c.h.fabric.advance_to(SimTime(next));
        }
        let now = held(&c.h.fabric, &c.nodes, c.top);
        if states.last() != Some(&now) {
            states.push(now);
        }
        if got.is_some() {
            return got;
        }
    }
    None
}

/// The master's repair with no takeover: every state of its writes.
fn reference(topo: &Topology) -> Vec<Vec<Lft>> {
    let mut c = cut(topo);
    let mut states = vec![held(&c.h.fabric, &c.nodes, c.top)];
    let limit = c.h.now() + 5 * SECOND;
    let up = step(&mut c, &mut states, limit, |i, e| i == 0 && matches!(e, SmEvent::SubnetUp(_)), |_| false);
    let Some((_, SmEvent::SubnetUp(report))) = up else { panic!("the repair ends") };
    let ibsm::core::lft::RouteMode::Repaired { passes: 2, stranded, .. } = report.routing_mode else {
        panic!("a repair in two passes: {:?}", report.routing_mode)
    };
    assert!(stranded > 0);
    states
}

/// What a takeover went through: every state of the switches' tables from the dead master's
/// first write to the end of the takeover sweep, the state the dead master left them in (its
/// Sets on their way landed), the SLs before and after, and the routing view after.
struct TakenOver {
    states: Vec<Vec<Lft>>,
    left: usize,
    old_sl: Vec<Vec<u8>>,
    new_sl: Vec<Vec<u8>>,
    view: ibsm_routing::FabricView,
}

/// The master killed once its writes have made `kill_at` states after the first; the states
/// until the standby has brought the subnet up, the new master's SLs and its routing view.
fn taken_over(topo: &Topology, kill_at: usize) -> TakenOver {
    let mut c = cut(topo);
    let mut states = vec![held(&c.h.fabric, &c.nodes, c.top)];
    let limit = c.h.now() + 5 * SECOND;
    let ended =
        step(&mut c, &mut states, limit, |i, e| i == 0 && matches!(e, SmEvent::SubnetUp(_)), |s| s.len() > kill_at);
    assert!(ended.is_none(), "the master was killed before its repair ended");
    c.h.kill(0);
    // Sets already on their way still land.
    let settle = c.h.now() + 100_000;
    step(&mut c, &mut states, settle, |_, _| false, |_| false);
    let left = states.len() - 1;
    let reads = c.h.fabric.stats().lft_blocks_read;
    let writes =
        |i: usize, e: &SmEvent| i == 1 && matches!(e, SmEvent::PhaseStarted { phase: SweepPhase::ProgrammingLfts, .. });
    c.h.run_until(c.h.now() + 30 * SECOND, writes).expect("the standby takes over and reaches its LFT writes");
    assert_eq!(states.last(), Some(&held(&c.h.fabric, &c.nodes, c.top)), "no table changed unobserved");
    let limit = c.h.now() + 10 * SECOND;
    let up = step(&mut c, &mut states, limit, |i, e| i == 1 && matches!(e, SmEvent::SubnetUp(_)), |_| false);
    let Some((_, SmEvent::SubnetUp(report))) = up else { panic!("the takeover sweep ends") };
    assert!(report.complete, "{report:?}");
    eprintln!(
        "takeover: {:?}, {} LFT blocks written, {} read",
        report.routing_mode,
        report.lft_blocks_sent,
        c.h.fabric.stats().lft_blocks_read - reads
    );
    let after = LiveRoutes::from_sm(&c.h.sms[1].sm).expect("routes");
    let new_sl = after.layers().expect("layers");
    let (plan, _) = after.to_plan().expect("plan");
    TakenOver { states, left, old_sl: c.old_sl, new_sl, view: plan.view }
}

#[test]
fn a_standby_taking_over_between_the_passes_of_a_repair_never_opens_a_credit_loop() {
    let topo = GenSpec::torus(&[4, 4, 4], 1).generate().expect("torus");
    let plain = reference(&topo);
    let (old, new) = (&plain[0], &plain[plain.len() - 1]);
    // The first pass: the states that hold no new entry; it ends where the second begins.
    let first = plain.iter().take_while(|s| old_and_new(s, old, new).1 == 0).count();
    assert!(first > 3 && first < plain.len(), "{first} of {} states in the first pass", plain.len());
    let (o0, _) = old_and_new(old, old, new);
    // Some kill leaves the old entries partly dropped: the mix no one judged.
    let mut mixed = false;
    for kill_at in [1, first / 2, first - 1, first + 1] {
        let TakenOver { states, left, old_sl, new_sl, view } = taken_over(&topo, kill_at);
        // Where the dead master left the switches: a mix of its first pass and the old tables
        // (or the second pass begun).
        let (o, n) = old_and_new(&states[left], old, new);
        eprintln!(
            "kill at state {kill_at} of {} (first pass {first}), left at {left}: {o} of {o0} dropped entries and \
             {n} new ones held; takeover: {} states in all, {} SLs changed",
            plain.len(),
            states.len(),
            sl_changed(&old_sl, &new_sl)
        );
        assert!(o < o0 || n > 0, "the dead master wrote part of its repair");
        mixed |= o > 0 && o < o0;
        // The standby finishes the repair the dead master began: the same tables.
        assert_eq!(states.last(), Some(new), "kill at {kill_at}: the takeover ends on the repair's tables");
        let both: Vec<_> = (0..states.len())
            .map(|k| (k, old_and_new(&states[k], old, new)))
            .filter(|(_, (o, n))| *o > 0 && *n > 0)
            .collect();
        let bad = looping(&view, &states, &old_sl, &new_sl);
        eprintln!("  {} states hold dropped entries beside new ones, {} states loop", both.len(), bad.len());
        assert!(bad.is_empty(), "kill at {kill_at}: {} of {} states loop: {bad:?}", bad.len(), states.len());
        assert!(both.is_empty(), "kill at {kill_at}: states with (dropped, new) entries: {both:?}");
    }
    assert!(mixed, "a kill left the first pass half written");
}
