//! Routing as a job off the event loop ([`Sm::take_route_job`], what `ibsm run` on umad does
//! with a thread): while the job is out the sweep waits in its Routing phase and the SM goes
//! on serving: SA queries are answered from the last snapshot and a trap from a switch whose
//! cable was pulled meanwhile is acknowledged and brings a sweep after this one. The job's
//! result, run on another thread, finishes the sweep as routing in place would.

use ibsm::core::{ComputeStep, Guid2Lid, Sm, SmConfig, SmEvent, SweepPhase};
use ibsm::transport::sim::SimDriver;
use ibsm_mad::Attribute;
use ibsm_mad::header::Method;
use ibsm_mad::ids::status;
use ibsm_mad::records::NodeRecord;
use ibsm_sim::fabric::Fault;

mod support;
use support::sa::{LIMIT, example, through_core};

#[test]
fn the_sm_serves_while_the_routing_job_is_out_and_its_result_finishes_the_sweep() {
    let topo = example("fat-tree-2l-k4.net");
    let mut drv = SimDriver::new(&topo, 21, Sm::new(SmConfig::default(), Guid2Lid::default()), None).expect("attach");
    assert!(drv.sweep(LIMIT, |_| {}).expect("up").complete);

    // A full route as a job, which this test takes itself.
    drv.take_route_jobs = false;
    drv.sm.set_offload_routing(true);
    drv.sm.force_full_route();
    let now = drv.now();
    drv.sm.start_sweep(now);
    let limit = now + 1_000_000_000;
    assert!(drv.run_until(limit, |_| false).is_none(), "nothing happens without the job's result");
    assert_eq!((drv.sm.phase(), drv.sm.poll_compute()), (SweepPhase::Routing, Some(ComputeStep::Route)));
    let job = drv.sm.take_route_job().expect("the routing job");
    assert_eq!(drv.sm.poll_compute(), None);
    let worker = std::thread::spawn(move || job.run());

    // Meanwhile: the SA answers from the last sweep's snapshot ...
    let me = drv.sm.subnet().local_lid();
    let now = drv.now();
    let (st, data) =
        through_core(&mut drv, now, me, (Method::GetTable, 0, 1), &NodeRecord::parse(&[0; 108]).expect("rec"));
    assert_eq!(st, status::OK);
    assert!(!data.is_empty());
    // ... and a cable pulled now brings a trap that is acknowledged at once.
    let leaf = topo.find("leaf-3").expect("leaf");
    drv.fabric.inject_fault(Fault::LinkDown { node: leaf, port: 4 });
    let mut seen = Vec::new();
    let limit = drv.now() + 100_000_000;
    drv.run_until(limit, |ev| {
        seen.push(ev.clone());
        false
    });
    assert!(seen.iter().any(|e| matches!(e, SmEvent::TrapReceived { .. })), "{seen:?}");
    assert_eq!(drv.sm.phase(), SweepPhase::Routing, "still waiting for the job");

    // The result finishes this sweep; the trap's sweep follows and routes around the cable.
    let done = worker.join().expect("the job ran");
    let now = drv.now();
    drv.sm.finish_route(done, now);
    drv.sm.set_offload_routing(false);
    let mut reports = Vec::new();
    let limit = drv.now() + LIMIT;
    drv.run_until(limit, |ev| {
        if let SmEvent::SubnetUp(r) = ev {
            reports.push(r.clone());
        }
        reports.len() == 2
    });
    assert_eq!(reports.len(), 2, "the job's sweep, then the trap's");
    assert_eq!(reports[0].routing_mode.name(), "full");
    assert!(reports.iter().all(|r| r.complete), "{reports:?}");
    assert!(drv.fabric.check_routes().ok(), "every pair routed without the pulled cable");
}
