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
use ibsm_mad::Lid;
use ibsm_routing::Lft;
use ibsm_sim::fabric::{Fault, SimTime};
use ibsm_topology::generators::GenSpec;
use ibsm_topology::{NodeKind, Topology};

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

/// The switches' tables as `sm` routes them, and as the simulator's switches hold them (by
/// the routing view's switch, for its LIDs).
fn route_and_held(h: &SimSms, sm: usize, topo: &Topology) -> (Vec<Lft>, Vec<Lft>) {
    let (plan, routes) = LiveRoutes::from_sm(&h.sms[sm].sm).expect("routes").to_plan().expect("plan");
    let by_guid: HashMap<_, _> = (0..topo.nodes.len()).filter_map(|i| h.fabric.node_guid(i).map(|g| (g, i))).collect();
    let nodes: Vec<usize> = plan.view.switches.iter().map(|s| by_guid[&s.guid]).collect();
    let top = plan.view.max_lid();
    let route = routes.tables.iter().map(|t| Lft::from(t.iter().take(usize::from(top) + 1).collect::<Vec<_>>()));
    (route.collect(), held(&h.fabric, &nodes, top))
}

/// The stale-digest window (issue 28): a synced standby takes over on the LFT digests its
/// master sent, trusting a switch whose table it routes to the same digest. A master that
/// writes a repair before its standby has seen the repaired switches' digests withdrawn, and
/// dies then, leaves the standby vouching for old tables some switches no longer hold; a
/// takeover that routes the old tables again (the cable came back meanwhile) would leave the
/// repair's entries there. 256 switches (a 16 x 16 mesh): the digests are 39 sync chunks,
/// more than the sync's window of 32, so a master killed as its first Set lands cannot have
/// sent them all. The master is killed as soon as a switch holds an entry of its repair, the
/// cable is plugged back, and the standby, now master, must leave every switch holding the
/// table it routes. The master holds its Sets until the standby acknowledged a chunk of the
/// new digests, and a standby that had begun to receive newer digests trusts none of the
/// older ones (the master logs how long it held its Sets).
#[test]
fn a_master_killed_as_its_repair_lands_leaves_no_table_the_new_master_trusts_wrongly() {
    let topo = GenSpec::mesh(&[16, 16], 1).generate().expect("mesh");
    let at = hosts(&topo);
    let cfg = |priority| SmConfig { priority, sm_key: 7, ..SmConfig::default() };
    let far = at[at.len() - 1];
    let sms = vec![(Sm::new(cfg(9), Guid2Lid::default()), at[0]), (Sm::new(cfg(5), Guid2Lid::default()), far)];
    let mut h = SimSms::new(&topo, 5, sms).expect("attach");
    h.start(0);
    h.run_until(60 * SECOND, |i, e| i == 0 && matches!(e, SmEvent::SubnetUp(r) if r.complete)).expect("up");
    h.start(1);
    h.run_until(h.now() + 10 * SECOND, |i, e| i == 1 && matches!(e, SmEvent::Standby { .. })).expect("standby");
    h.run_until(h.now() + 10 * SECOND, |i, e| i == 0 && matches!(e, SmEvent::SyncPeer { state: "current", .. }))
        .expect("the standby is current");
    let (route, old) = route_and_held(&h, 0, &topo);
    assert_eq!(route, old, "the master's tables are written");
    // A cable next to the master, off the routes between it and the standby (at the mesh's
    // far corner): the repair's first Sets land a hop or two away, while the sync's messages
    // travel across the mesh and back.
    let lid = |i: usize| h.sms[0].sm.guid2lid().get(h.sms[i].sm.port_guid()).expect("a LID").0;
    let route = |from: (usize, u8), to: Lid| {
        let mut cables = Vec::new();
        let mut at = topo.nodes[from.0].peer(from.1).map(|q| q.node);
        while let Some(n) = at.filter(|&n| topo.nodes[n].kind == NodeKind::Switch && cables.len() < 100) {
            let p = h.fabric.lft_entry(n, to.0).expect("routed");
            cables.push((n, p));
            at = topo.nodes[n].peer(p).map(|q| q.node);
        }
        cables
    };
    let paths = [route(at[0], lid(1)), route(far, lid(0))];
    let on_path = |n: usize, p: u8| {
        paths.iter().flatten().any(|&c| c == (n, p) || topo.nodes[n].peer(p).is_some_and(|q| c == (q.node, q.port)))
    };
    let sw = topo.nodes[at[0].0].peer(1).expect("the master's switch").node;
    let near = std::iter::once(sw)
        .chain((1..=topo.nodes[sw].num_ports).filter_map(|p| topo.nodes[sw].peer(p).map(|q| q.node)));
    let (sw, port) = near
        .filter(|&n| topo.nodes[n].kind == NodeKind::Switch)
        .find_map(|n| {
            (1..=topo.nodes[n].num_ports)
                .find(|&p| {
                    topo.nodes[n].peer(p).is_some_and(|q| topo.nodes[q.node].kind == NodeKind::Switch) && !on_path(n, p)
                })
                .map(|p| (n, p))
        })
        .expect("a cable near the master off the routes to and from the standby");
    h.fabric.inject_fault(Fault::LinkDown { node: sw, port });
    // Step until a switch holds an entry of the repair.
    let (plan, _) = LiveRoutes::from_sm(&h.sms[0].sm).expect("routes").to_plan().expect("plan");
    let by_guid: HashMap<_, _> = (0..topo.nodes.len()).filter_map(|i| h.fabric.node_guid(i).map(|g| (g, i))).collect();
    let nodes: Vec<usize> = plan.view.switches.iter().map(|s| by_guid[&s.guid]).collect();
    let top = plan.view.max_lid();
    let writes =
        |i: usize, e: &SmEvent| i == 0 && matches!(e, SmEvent::PhaseStarted { phase: SweepPhase::ProgrammingLfts, .. });
    h.run_until(h.now() + 5 * SECOND, writes).expect("the master's repair reaches its LFT writes");
    let limit = h.now() + SECOND;
    let mut released = None;
    let sets = h.fabric.stats().lft_blocks_set;
    while h.fabric.stats().lft_blocks_set == sets {
        assert!(h.now() < limit, "the master's repair writes");
        let next = h.now() + 1_000;
        if let Some((_, e)) = h.run_until(next, |i, e| i == 0 && matches!(e, SmEvent::SyncLftsHeld { .. })) {
            released = Some(e);
        }
        if h.now() < next {
            h.fabric.advance_to(SimTime(next));
        }
    }
    assert_ne!(held(&h.fabric, &nodes, top), old, "a switch holds an entry of the repair");
    eprintln!("the first block of the repair landed; the master's release: {released:?}");
    h.kill(0);
    h.fabric.inject_fault(Fault::LinkUp { node: sw, port });
    let up = h.run_until(h.now() + 30 * SECOND, |i, e| i == 1 && matches!(e, SmEvent::SubnetUp(r) if r.complete));
    let Some((_, SmEvent::SubnetUp(report))) = up else { panic!("the standby brings the subnet up") };
    eprintln!(
        "takeover: {:?}, {} LFT blocks written, {} unchanged",
        report.routing_mode, report.lft_blocks_sent, report.lft_blocks_unchanged
    );
    let (route, now) = route_and_held(&h, 1, &topo);
    assert_eq!(route, old, "the cable is back: the new master routes the old tables");
    let wrong: Vec<usize> = (0..route.len()).filter(|&s| route[s] != now[s]).collect();
    assert!(wrong.is_empty(), "{} switches hold a table other than the new master's route: {wrong:?}", wrong.len());
    // The standby saw the new digests before the first Set went.
    assert!(matches!(released, Some(SmEvent::SyncLftsHeld { seen: true, .. })), "{released:?}");
}
