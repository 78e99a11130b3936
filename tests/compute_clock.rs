//! What the driver's clock measures in a sweep (`handle_compute`): the routing step and the LFT
//! diff after it (the blocks to write are chosen before the programming phase starts), and the
//! SA's snapshot at the sweep's end, its own compute step. `ibsm sim play` sums these as
//! `compute_ms`. The clock here ticks 1 ms at each read, so the reads themselves are visible.

use ibsm::core::{Guid2Lid, MadSource, Sm, SmConfig, SmEvent, SubnetReport, SweepPhase};
use ibsm::transport::sim::SimDriver;
use ibsm_sim::fabric::{Dest, SimTime};

mod support;
use support::sa::example;

const TICK: u64 = 1_000_000;

/// One sweep, stepped by hand: each compute step with a clock that moves one tick per read.
/// Returns the report, the PhaseStarted events (phase, at) and, per compute call, the clock's
/// reads.
fn sweep(drv: &mut SimDriver) -> (SubnetReport, Vec<(SweepPhase, u64)>, Vec<Vec<u64>>) {
    let (mut phases, mut calls) = (Vec::new(), Vec::new());
    let start = drv.now();
    drv.sm.start_sweep(start);
    let limit = start + 10_000_000_000;
    loop {
        if drv.sm.poll_compute().is_some() {
            let base = drv.sm.now();
            let mut reads = Vec::new();
            drv.sm.handle_compute(&mut || {
                let t = base + (reads.len() as u64 + 1) * TICK;
                reads.push(t);
                t
            });
            drv.fabric.advance_to(SimTime(drv.sm.now()));
            calls.push(reads);
        }
        while let Some(t) = drv.sm.poll_transmit(drv.fabric.now().0) {
            let mut mad = [0u8; ibsm_mad::MAD_LEN];
            let n = t.bytes.len().min(mad.len());
            mad[..n].copy_from_slice(&t.bytes[..n]);
            drv.fabric.send_pkey(drv.agent, &mad, Dest { dlid: t.to.lid, qpn: t.to.qpn }, t.to.pkey_index);
        }
        while let Some(ev) = drv.sm.poll_event() {
            match ev {
                SmEvent::PhaseStarted { phase, at } => phases.push((phase, at)),
                SmEvent::SubnetUp(r) => return (r, phases, calls),
                _ => {}
            }
        }
        let next = match (drv.fabric.next_event().map(|t| t.0), drv.sm.poll_timeout()) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (None, None) => panic!("the sweep stopped without a report"),
        };
        assert!(next <= limit, "no report within 10 s");
        drv.fabric.advance_to(SimTime(next));
        while let Some(r) = drv.fabric.recv(drv.agent) {
            let src = MadSource { slid: r.slid, sqpn: r.sqpn, pkey_index: r.pkey_index, sl: 0, grh: None };
            drv.sm.handle_mad(r.at.0, &r.mad[..], src);
        }
        let now = drv.fabric.now().0;
        if drv.sm.poll_timeout().is_some_and(|t| t <= now) {
            drv.sm.handle_timeout(now);
        }
    }
}

#[test]
fn the_lft_diff_and_the_snapshot_are_inside_the_time_the_drivers_clock_measures() {
    let topo = example("fat-tree-2l-k4.net");
    let mut drv = SimDriver::new(&topo, 5, Sm::new(SmConfig::default(), Guid2Lid::default()), None).expect("attach");
    // Stepped by hand with `handle_compute` only: the core routes in place (no job handed out).
    drv.sm.set_offload_routing(false);
    let (report, phases, calls) = sweep(&mut drv);
    assert!(report.complete, "{report:?}");
    assert!(report.lft_blocks_sent > 0, "the first sweep writes the tables");
    // The snapshot is a compute step of its own: read before and after, one tick apart.
    assert_eq!(report.snapshot_ns, TICK, "{calls:?}");
    // The routing step: the clock is read again after `advance` chose the LFT blocks (the
    // diff), and the programming phase starts there, so the routing phase holds the diff.
    let programming = phases.iter().find(|p| p.0 == SweepPhase::ProgrammingLfts).expect("programmed").1;
    let route_call = calls.iter().find(|r| r.contains(&programming)).expect("started in a compute call");
    assert_eq!(route_call.len(), 3, "before the route, after it, after the diff: {route_call:?}");
    assert_eq!(programming, route_call[2], "{phases:?} {calls:?}");
    let routing = report.phases.iter().find(|p| p.phase == SweepPhase::Routing).expect("routed").ns;
    let routing_at = phases.iter().find(|p| p.0 == SweepPhase::Routing).expect("routing").1;
    assert_eq!(routing, programming - routing_at);
}

/// A run to a limit ends with the clock at the limit, even when nothing happened before it (a
/// test that runs the fabric "for a second" and then acts relies on it).
#[test]
fn a_run_to_a_limit_leaves_the_clock_at_the_limit() {
    let topo = example("fat-tree-2l-k4.net");
    let mut drv = SimDriver::new(&topo, 5, Sm::new(SmConfig::default(), Guid2Lid::default()), None).expect("attach");
    assert!(drv.sweep(10_000_000_000, |_| {}).expect("up").complete);
    let limit = drv.now() + 1_000_000;
    assert!(drv.run_until(limit, |_| false).is_none());
    assert_eq!(drv.now(), limit);
}
