//! The SA is silent unless its SM is master with a sweep behind it (safety rule SM7,
//! `docs/safety-rules.md`), on the simulated fabric: a host sends `saquery`'s NodeRecord
//! GetTable to an SM's LID. An SM whose first sweep is still running (a restarted process on a
//! port that kept its LID) and a master that handed the subnet over get the request, count it as
//! not ready, and answer nothing; the master answers. The standbys of an election are probed in
//! `tests/failover.rs` (`the_best_sm_is_master_and_the_others_stand_by`).

use ibsm::core::{Guid2Lid, Sm, SmConfig, SmEvent, SmState};
use ibsm::transport::sim::{SimDriver, SimSm};
use ibsm_mad::header::Method;
use ibsm_mad::records::NodeRecord;
use ibsm_mad::sa::{SaHeader, request};
use ibsm_mad::{Attribute as _, Lid};
use ibsm_sim::fabric::{AgentId, Dest};
use ibsm_topology::NodeKind;

mod support;
use support::sa::{LIMIT, example};
use support::sms::{SECOND, Sent, cfg, elect, hosts, run_counting, sa_answers};

/// Whether the answers `probe` has received include one with `tid`.
fn heard(drv: &mut SimDriver, probe: AgentId, tid: u64) -> bool {
    let mut seen = false;
    while let Some(r) = drv.fabric.recv(probe) {
        seen |= SaHeader::from_bytes(&r.mad[..]).is_ok_and(|h| h.tid & 0xffff_ffff == tid);
    }
    seen
}

fn node_records(tid: u64) -> [u8; ibsm_mad::MAD_LEN] {
    request(Method::GetTable, 0, tid, &NodeRecord::parse(&[0; 108]).expect("record")).expect("request")
}

#[test]
fn an_sm_whose_first_sweep_runs_answers_no_sa_request() {
    let topo = example("fat-tree-2l-k4.net");
    let mut drv = SimDriver::new(&topo, 9, Sm::new(SmConfig::default(), Guid2Lid::default()), None).expect("attach");
    let up = drv.sweep(LIMIT, |_| {}).expect("up");
    assert!(up.complete, "{up:?}");
    let host = (0..topo.nodes.len()).rfind(|&i| topo.nodes[i].kind == NodeKind::Ca).expect("host");
    let probe = drv.fabric.attach(host, 1).expect("probe");
    let ask =
        |drv: &mut SimDriver, tid: u64| drv.fabric.send(probe, &node_records(tid), Dest { dlid: up.sm_lid, qpn: 1 });
    // The master answers.
    ask(&mut drv, 1);
    drv.run_until(drv.now() + SECOND, |_| false);
    assert!(heard(&mut drv, probe, 1), "the master's SA answers");

    // The SM restarts: a new process on the same port, which keeps its LID. While its first
    // sweep runs the request reaches it and goes unanswered.
    drv.sm = Sm::new(SmConfig::default(), Guid2Lid::default());
    drv.sm.set_sa_limits(ibsm::sa::Limits::SIM);
    drv.sm.start_sweep(drv.now());
    ask(&mut drv, 2);
    let mut not_ready_at_up = None;
    let again = drv.run_until(drv.now() + LIMIT, |ev| matches!(ev, SmEvent::SubnetUp(_)));
    if let Some(SmEvent::SubnetUp(r)) = &again {
        assert!(r.complete, "{r:?}");
        not_ready_at_up = Some(drv.sm.request_counters().sa_not_ready);
    }
    assert_eq!(not_ready_at_up, Some(1), "the request reached the SM during its first sweep");
    assert!(!heard(&mut drv, probe, 2), "answered before the first sweep ended");
    assert_eq!(drv.sm.request_counters().sa_answered, 0);
    // Once the sweep is done the same request is answered.
    ask(&mut drv, 3);
    drv.run_until(drv.now() + SECOND, |_| false);
    assert!(heard(&mut drv, probe, 3), "the SA answers after the first sweep");
}

#[test]
fn a_master_that_handed_over_answers_no_sa_request() {
    let topo = example("fat-tree-2l-k4.net");
    let (mut h, master) = elect(&topo, 2, &[5]);
    assert_eq!(master, 0);
    // A better SM arrives; it stands by, and the master's next sweep hands it the subnet.
    let at = hosts(&topo)[3];
    let agent = h.fabric.attach(at.0, at.1).expect("attach");
    h.fabric.set_is_sm(agent, true);
    let mut better = Sm::new(cfg(12, 7), Guid2Lid::default());
    better.set_sa_limits(ibsm::sa::Limits::SIM);
    h.sms.push(SimSm { sm: better, agent, at, alive: true, saved: Guid2Lid::default() });
    h.start(1);
    h.run_until(h.now() + 5 * SECOND, |i, e| i == 1 && matches!(e, SmEvent::Standby { .. }));
    h.start(0);
    let up = h.run_until(h.now() + 30 * SECOND, |i, e| i == 1 && matches!(e, SmEvent::SubnetUp(r) if r.complete));
    assert!(up.is_some(), "the better SM is master with the subnet up");
    assert_eq!((h.sms[0].sm.state(), h.sms[1].sm.state()), (SmState::Standby, SmState::Master));
    // The old master still holds the snapshot of its last sweep; its SA must not serve it.
    assert!(h.sms[0].sm.snapshot().is_some(), "the old master kept its last snapshot");
    let lid = |h: &ibsm::transport::sim::SimSms, i: usize| -> Lid {
        h.sms[1].sm.guid2lid().get(h.sms[i].sm.port_guid()).expect("LID").0
    };
    let (old, new) = (lid(&h, 0), lid(&h, 1));
    let probe_at = hosts(&topo)[6];
    let probe = h.fabric.attach(probe_at.0, probe_at.1).expect("probe");
    let mut sent = vec![Sent::default(); 2];
    let settle = h.now() + SECOND;
    run_counting(&mut h, settle, &mut sent);
    let not_ready = h.sms[0].sm.request_counters().sa_not_ready;
    assert!(!sa_answers(&mut h, probe, old, &mut sent), "the SM that handed over answered an SA request");
    assert_eq!(h.sms[0].sm.request_counters().sa_not_ready, not_ready + 1, "the request reached it");
    assert!(sa_answers(&mut h, probe, new, &mut sent), "the new master's SA answers");
}
