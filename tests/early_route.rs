//! The early route: a bring-up hands its routing job to the driver as soon as LIDs are
//! assigned ([`Sm::take_route_job`] while the sweep is in ConfiguringPorts), the ports are
//! configured while the job is out, and the tables go out once both are done. What the fabric
//! sees must not change: the same SMPs, the same LFT blocks, the same tables, the same virtual
//! phase times as routing in place after the configuration. A configuration that changes what
//! routing reads (here a cable cut while the ports are configured) makes the early route stale:
//! it is dropped and the sweep routes again. Where the chain is not layered, the job is
//! offered before the configuration is even built (the core waits once in
//! [`ComputeStep::Configure`] for the driver to take it); a driver that takes no job then is not
//! held up.

mod support;

use ibsm::core::{ComputeStep, Guid2Lid, Sm, SmConfig, SmEvent, SubnetReport, SweepPhase};
use ibsm::transport::sim::SimDriver;
use ibsm_sim::fabric::Stats;
use ibsm_topology::{GenSpec, NodeKind, Topology};
use support::by_hand;

const LIMIT: u64 = 600_000_000_000;
const SEED: u64 = 5;

fn fabric() -> Topology {
    GenSpec::fat_tree(3, 8).generate().expect("generates")
}

fn driver(topo: &Topology) -> SimDriver {
    SimDriver::new(topo, SEED, Sm::new(SmConfig::default(), Guid2Lid::default()), None).expect("attach")
}

/// Every switch's egress port for every LID up to `top`, as the simulated switches hold them.
fn tables(topo: &Topology, drv: &SimDriver, top: u16) -> Vec<Vec<Option<u8>>> {
    (0..topo.nodes.len())
        .filter(|&i| topo.nodes[i].kind == NodeKind::Switch)
        .map(|i| (1..=top).map(|lid| drv.fabric.lft_port(i, lid)).collect())
        .collect()
}

/// Runs `drv` until the first event `stop` takes, or `limit`.
fn run_to(drv: &mut SimDriver, stop: impl Fn(&SmEvent) -> bool) -> Option<SmEvent> {
    let limit = drv.now() + LIMIT;
    drv.run_until(limit, |ev| stop(ev))
}

#[track_caller]
fn up(drv: &mut SimDriver) -> SubnetReport {
    match run_to(drv, |ev| matches!(ev, SmEvent::SubnetUp(_))) {
        Some(SmEvent::SubnetUp(r)) => r,
        other => panic!("no report: {other:?} in {:?}, compute {:?}", drv.sm.phase(), drv.sm.poll_compute()),
    }
}

fn phase_started(p: SweepPhase) -> impl Fn(&SmEvent) -> bool {
    move |ev| matches!(ev, SmEvent::PhaseStarted { phase, .. } if *phase == p)
}

/// What the fabric saw of a bring-up: SMPs answered, LFT blocks written and when the last was.
/// A bring-up with the route computed in place, after the configuration (the core runs it:
/// no job): the driver and its report.
fn routed_in_place(topo: &Topology) -> (SimDriver, SubnetReport) {
    let mut drv = driver(topo);
    drv.sm.set_offload_routing(false);
    let now = drv.now();
    drv.sm.start_sweep(now);
    let a = up(&mut drv);
    (drv, a)
}

fn seen(s: Stats) -> (u64, u64, u64, u64) {
    (s.sma_answered, s.lft_blocks_set, s.port_info_sets, s.last_lft_set_at.0)
}

#[test]
fn the_route_starts_with_the_port_configuration_and_the_fabric_sees_what_routing_after_it_gives() {
    let topo = fabric();

    // Routing in place, after the configuration (the core runs it: no job).
    let (inplace, a) = routed_in_place(&topo);
    assert!(a.complete, "{a:?}");

    // The early route, its job taken by hand to see when it is offered.
    let mut early = driver(&topo);
    early.take_route_jobs = false;
    let now = early.now();
    early.sm.start_sweep(now);
    run_to(&mut early, phase_started(SweepPhase::ConfiguringPorts)).expect("configuring");
    assert_eq!(early.sm.poll_compute(), None, "no compute step: the route is a job");
    let job = early.sm.take_route_job().expect("the route offered as the configuration starts");
    assert_eq!(early.sm.phase(), SweepPhase::ConfiguringPorts);
    assert!(early.sm.take_route_job().is_none(), "one job");
    let worker = std::thread::spawn(move || job.run());
    // The ports are configured while the job is out; then the sweep waits for it.
    run_to(&mut early, phase_started(SweepPhase::Routing)).expect("the configuration went on without the route");
    let configured = early.fabric.stats().port_info_sets;
    assert!(configured > 0);
    let now = early.now();
    assert!(early.run_until(now, |_| false).is_none());
    assert_eq!((early.sm.phase(), early.sm.poll_compute()), (SweepPhase::Routing, None), "waiting for the job");
    assert!(early.sm.take_route_job().is_none(), "no second job while the first is out");
    early.sm.finish_route(worker.join().expect("the job ran"), now);
    let b = up(&mut early);

    assert!(b.complete, "{b:?}");
    assert_eq!(
        (a.smps_sent, a.lft_blocks_sent, a.routing_mode, &a.routing_engine),
        (b.smps_sent, b.lft_blocks_sent, b.routing_mode, &b.routing_engine)
    );
    assert_eq!(a.phases, b.phases, "the same virtual phase times");
    assert_eq!(a.total_ns, b.total_ns);
    assert_eq!(seen(inplace.fabric.stats()), seen(early.fabric.stats()), "the fabric saw the same SMPs");
    let top = u16::try_from(topo.nodes.len() * 2).expect("few LIDs");
    assert_eq!(tables(&topo, &inplace, top), tables(&topo, &early, top), "the same tables");
    assert!(early.fabric.check_routes().ok());

    // The driver's own way (jobs taken and run at once on the virtual clock): the same again.
    let mut driven = driver(&topo);
    let now = driven.now();
    driven.sm.start_sweep(now);
    let c = up(&mut driven);
    assert_eq!(
        (c.smps_sent, c.lft_blocks_sent, &c.phases, c.total_ns),
        (a.smps_sent, a.lft_blocks_sent, &a.phases, a.total_ns)
    );
    assert_eq!(seen(inplace.fabric.stats()), seen(driven.fabric.stats()));
    assert_eq!(tables(&topo, &inplace, top), tables(&topo, &driven, top));
}

#[test]
fn a_full_route_asked_while_the_ports_are_configured_makes_the_early_route_stale_and_the_sweep_routes_again() {
    let topo = fabric();
    let mut drv = driver(&topo);
    drv.take_route_jobs = false;
    let now = drv.now();
    drv.sm.start_sweep(now);
    run_to(&mut drv, phase_started(SweepPhase::ConfiguringPorts)).expect("configuring");
    let job = drv.sm.take_route_job().expect("the early route");
    assert_eq!(drv.sm.phase(), SweepPhase::ConfiguringPorts);
    let early = std::thread::spawn(move || job.run());
    // An operator asks for a full route meanwhile (`ibsm reroute`, a reload that changes
    // routing): the route out may not be what is asked for.
    drv.sm.force_full_route();
    run_to(&mut drv, phase_started(SweepPhase::Routing)).expect("configured");
    let now = drv.now();
    drv.sm.finish_route(early.join().expect("the early job ran"), now);
    assert_eq!(drv.sm.phase(), SweepPhase::Routing, "the early route is not used");
    assert_eq!(drv.sm.poll_compute(), Some(ComputeStep::Route), "routed again");
    let again = drv.sm.take_route_job().expect("a second job");
    drv.sm.finish_route(again.run(), now);
    let r = up(&mut drv);
    assert!(r.complete, "{r:?}");
    assert!(drv.fabric.check_routes().ok());
}

/// One step of a driver run by hand, with no compute step run and no job taken: the SM's MADs
/// out, the fabric to its next event or the SM's next timer, the MADs in, the timers. False
/// when nothing is left to happen.
fn step_by_hand(drv: &mut SimDriver) -> bool {
    by_hand::send_all(drv, |_| {});
    by_hand::to_next_event(drv)
}

/// Starts a sweep on `drv` and steps it by hand, running its compute steps on the virtual
/// clock, until the configuration waits for the early route's job to be taken.
#[track_caller]
fn until_configure(drv: &mut SimDriver) {
    let now = drv.now();
    drv.sm.start_sweep(now);
    loop {
        match drv.sm.poll_compute() {
            Some(ComputeStep::Configure) => return,
            Some(step) => {
                assert_ne!(step, ComputeStep::Route, "routing before the configuration");
                let now = drv.now();
                drv.sm.handle_compute(&mut || now);
            }
            None => assert!(step_by_hand(drv), "stopped in {:?} before the configuration", drv.sm.phase()),
        }
    }
}

#[test]
fn the_route_is_offered_before_the_configuration_is_built_and_a_driver_that_takes_no_job_is_not_held_up() {
    let topo = fabric();
    let (inplace, a) = routed_in_place(&topo);
    assert!(a.complete, "{a:?}");
    let top = u16::try_from(topo.nodes.len() * 2).expect("few LIDs");

    // LIDs assigned: the job is offered while nothing of the configuration exists yet.
    let mut early = driver(&topo);
    early.take_route_jobs = false;
    until_configure(&mut early);
    assert_eq!(early.sm.phase(), SweepPhase::ConfiguringPorts);
    assert_eq!(early.fabric.stats().port_info_sets, 0, "no PortInfo Set sent yet");
    let now = early.now();
    assert!(early.sm.poll_transmit(now).is_none(), "no configuration queued before the job is taken");
    let job = early.sm.take_route_job().expect("the route offered before the configuration");
    assert_eq!(early.sm.poll_compute(), Some(ComputeStep::Configure), "the configuration is still to build");
    let worker = std::thread::spawn(move || job.run());
    // The configuration is built (and sent) while the job is out.
    early.sm.handle_compute(&mut || now);
    assert_eq!(early.sm.poll_compute(), None);
    run_to(&mut early, phase_started(SweepPhase::Routing)).expect("configured without the route");
    assert!(early.fabric.stats().port_info_sets > 0);
    let now = early.now();
    early.sm.finish_route(worker.join().expect("the job ran"), now);
    let b = up(&mut early);
    assert!(b.complete, "{b:?}");
    assert_eq!((b.smps_sent, b.lft_blocks_sent, b.routing_mode), (a.smps_sent, a.lft_blocks_sent, a.routing_mode));
    assert_eq!(seen(inplace.fabric.stats()), seen(early.fabric.stats()), "the fabric saw the same SMPs");
    assert_eq!(tables(&topo, &inplace, top), tables(&topo, &early, top), "the same tables");

    // A driver that does not take the job: the next compute call builds the configuration
    // anyway (the core waits once), and the sweep routes after it.
    let mut lazy = driver(&topo);
    lazy.take_route_jobs = false;
    until_configure(&mut lazy);
    let now = lazy.now();
    lazy.sm.handle_compute(&mut || now);
    assert_eq!(lazy.sm.poll_compute(), None, "the configuration built with the job not taken");
    lazy.take_route_jobs = true;
    let c = up(&mut lazy);
    assert!(c.complete, "{c:?}");
    assert_eq!((c.smps_sent, c.lft_blocks_sent), (a.smps_sent, a.lft_blocks_sent));
    assert_eq!(seen(inplace.fabric.stats()), seen(lazy.fabric.stats()));
    assert_eq!(tables(&topo, &inplace, top), tables(&topo, &lazy, top));
}
