//! Maintenance on the simulated fabric, in one process (`ibsm sweeping off|on`, `ibsm port
//! disable|enable` as the core carries them out): a master whose sweeping an operator holds
//! starts no sweep and sends no Set while a cable goes down (the traps counted, the SA still
//! answering), and sweeps when let go; a held standby still takes over from a dead master,
//! then holds; a disabled port is Disabled in the fabric (read back by a probe, not from the
//! SM), stays so across sweeps (written again when enabled behind the SM's back) and across a
//! failover (the list replicated), and trains again when enabled. The daemon's side (the
//! control socket, the state directory, a restart) is in `tests/controls.rs`.

mod support;

use ibsm::core::maintenance::NodeRef;
use ibsm::core::{Requested, SmEvent, SmState};
use ibsm::transport::sim::SimSms;
use ibsm_mad::attrs::{PhysPortState, PortInfo, PortState};
use ibsm_mad::smp::SmpRepr;
use ibsm_mad::{Attribute as _, DrPath, Lid, ids};
use ibsm_sim::fabric::{AgentId, Dest, Fault, SimTime};
use ibsm_topology::Topology;

use support::sa::example;
use support::sms::{SECOND, Sent, elect, run_counting, sa_answers};

fn index(topo: &Topology, name: &str) -> usize {
    topo.nodes.iter().position(|n| n.name == name).unwrap_or_else(|| panic!("no node {name}"))
}

/// Traps received by SM `i`, all numbers.
fn traps(h: &SimSms, i: usize) -> u64 {
    h.sms[i].sm.trap_book().counters.by_number.values().sum()
}

/// PortInfo of `port` of the node at the end of `path`, read by `probe` with a directed-route
/// Get (the fabric's own answer, not the SM's view).
fn read_port(h: &mut SimSms, probe: AgentId, path: &[u8], port: u8) -> PortInfo {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0x6100_0000);
    let tid = u64::from(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    let smp = SmpRepr::get_dr(&DrPath::new(path).expect("path"), ids::attr::PORT_INFO, u32::from(port), tid);
    h.fabric.send(probe, &smp.to_bytes(), Dest { dlid: Lid::PERMISSIVE, qpn: 0 });
    h.fabric.run_until_idle(SimTime(h.now() + SECOND / 10));
    let mut got = None;
    while let Some(r) = h.fabric.recv(probe) {
        if let Ok(resp) = SmpRepr::parse(&r.mad[..])
            && resp.tid & 0xffff_ffff == tid
        {
            got = PortInfo::parse(&resp.data).ok();
        }
    }
    got.expect("the port answers")
}

/// Sets `port` (at the end of `path`) to physical state `phys` from `probe`, as `ibportstate`
/// would behind the SM's back.
fn set_phys(h: &mut SimSms, probe: AgentId, path: &[u8], port: u8, phys: PhysPortState) {
    let mut info = read_port(h, probe, path, port);
    info.port_state = PortState::NoChange;
    info.port_physical_state = phys;
    info.link_down_default_state = ibsm_mad::attrs::LinkDownDefaultState::NoChange;
    let mut data = [0; 64];
    data.copy_from_slice(&info.to_vec()[..64]);
    let smp = SmpRepr::set_dr(&DrPath::new(path).expect("path"), ids::attr::PORT_INFO, u32::from(port), 0x6200, data);
    h.fabric.send(probe, &smp.to_bytes(), Dest { dlid: Lid::PERMISSIVE, qpn: 0 });
    h.fabric.run_until_idle(SimTime(h.now() + SECOND / 10));
    while h.fabric.recv(probe).is_some() {}
}

/// Runs the SMs and the fabric for `ns` of virtual time (the clock gets there even when
/// nothing happens).
fn run_for(h: &mut SimSms, ns: u64) {
    let until = h.now() + ns;
    h.run_until(until, |_, _| false);
    if h.now() < until {
        h.fabric.advance_to(SimTime(until));
    }
}

/// Runs the SMs until SM `i` reports a complete sweep (at most 30 s of virtual time).
fn until_up(h: &mut SimSms, i: usize) {
    h.run_until(h.now() + 30 * SECOND, |j, e| j == i && matches!(e, SmEvent::SubnetUp(r) if r.complete))
        .unwrap_or_else(|| panic!("SM {i} brings the subnet up"));
}

#[test]
fn a_held_master_sends_no_set_while_a_cable_goes_down_and_sweeps_when_let_go() {
    let topo = example("fat-tree-2l-k4.net");
    let (mut h, m) = elect(&topo, 3, &[1]);
    let probe = h.fabric.attach(index(&topo, "h7"), 1).expect("probe");
    let sm_lid = h.sms[m].sm.last_report().expect("report").sm_lid;
    assert!(h.fabric.check_routes().ok());

    assert!(h.sms[m].sm.hold_sweeping(true));
    assert!(!h.sms[m].sm.hold_sweeping(true), "held already");
    let since = h.sms[m].sm.sweeping_held_since().expect("held");
    let err = h.sms[m].sm.request_sweep(Requested::Heavy).unwrap_err();
    assert!(err.contains("sweeping is held"), "{err}");
    let (sweeps, light, before) = (h.sms[m].sm.sweeps_done(), h.sms[m].sm.light_sweeps(), traps(&h, m));

    // A cable goes down: the switches trap, the SM counts and represses, and writes nothing
    // for 20 s (no light sweep either: they are 10 s apart).
    h.fabric.inject_fault(Fault::LinkDown { node: index(&topo, "leaf-1"), port: 3 });
    let mut sent = vec![Sent::default()];
    let until = h.now() + 20 * SECOND;
    run_counting(&mut h, until, &mut sent);
    assert!(traps(&h, m) > before, "the traps are counted");
    assert_eq!(sent[0].sets, 0, "no Set while held: {sent:?}");
    assert_eq!((h.sms[m].sm.sweeps_done(), h.sms[m].sm.light_sweeps()), (sweeps, light));
    assert!(!h.fabric.check_routes().ok(), "the routes still cross the dead cable");
    assert!(sa_answers(&mut h, probe, sm_lid, &mut sent), "the SA answers while held");
    assert_eq!(h.sms[m].sm.sweeping_held_since(), Some(since));

    // Let go: a heavy sweep at once routes around the cable.
    assert!(h.sms[m].sm.hold_sweeping(false));
    until_up(&mut h, m);
    assert_eq!(h.sms[m].sm.sweeps_done().0, sweeps.0 + 1);
    assert!(h.fabric.check_routes().ok(), "{:?}", h.fabric.check_routes().first_failure);
    assert!(h.sms[m].sm.sweeping_held_since().is_none());
}

#[test]
fn a_held_standby_takes_over_from_a_dead_master_then_holds() {
    let topo = example("fat-tree-2l-k4.net");
    let (mut h, master) = elect(&topo, 5, &[2, 1]);
    let standby = 1 - master;
    assert!(h.sms[standby].sm.hold_sweeping(true));

    // The master dies: the held standby still takes over (its takeover sweep runs: a subnet
    // needs a master to answer the SA and the traps).
    h.kill(master);
    until_up(&mut h, standby);
    assert_eq!(h.sms[standby].sm.state(), SmState::Master);
    assert_eq!(h.sms[standby].sm.takeovers(), 1);
    let new_lid = h.sms[standby].sm.last_report().expect("report").sm_lid;

    // Then it holds: a cable down costs no sweep and no Set.
    let sweeps = h.sms[standby].sm.sweeps_done();
    let before = traps(&h, standby);
    h.fabric.inject_fault(Fault::LinkDown { node: index(&topo, "leaf-2"), port: 4 });
    let mut sent = vec![Sent::default(); 2];
    let until = h.now() + 20 * SECOND;
    run_counting(&mut h, until, &mut sent);
    assert!(traps(&h, standby) > before, "the traps reach the new master and are counted");
    assert_eq!(sent[standby].sets, 0, "{sent:?}");
    assert_eq!(h.sms[standby].sm.sweeps_done(), sweeps);
    assert!(!h.fabric.check_routes().ok());
    let probe = h.fabric.attach(index(&topo, "h7"), 1).expect("probe");
    assert!(sa_answers(&mut h, probe, new_lid, &mut sent), "the new master's SA answers");

    assert!(h.sms[standby].sm.hold_sweeping(false));
    until_up(&mut h, standby);
    assert!(h.fabric.check_routes().ok(), "{:?}", h.fabric.check_routes().first_failure);
}

#[test]
fn a_disabled_port_stays_disabled_across_sweeps_and_a_failover_and_trains_again_when_enabled() {
    let topo = example("fat-tree-2l-k4.net");
    let (mut h, master) = elect(&topo, 9, &[2, 1]);
    let standby = 1 - master;
    // The probe on h7 (leaf-3 port 2) reaches leaf-1 through spine-1, and spine-0 directly.
    let probe = h.fabric.attach(index(&topo, "h7"), 1).expect("probe");
    let (leaf1, spine0) = ([1, 4, 2], [1, 3]);
    let links = h.sms[master].sm.last_report().expect("report").links;

    // Refused: the SM's own port, a host's only link; an unknown node.
    let own = h.sms[master].sm.port_guid();
    let e = h.sms[master].sm.disable_port(&NodeRef::Guid(own), 1, false).unwrap_err();
    assert!(e.contains("the SM's own port"), "{e}");
    let e = h.sms[master].sm.disable_port(&NodeRef::Desc("leaf-3".into()), 2, false).unwrap_err();
    assert!(e.contains("only link from the SM to 1 node(s)"), "{e}");
    assert!(h.sms[master].sm.disable_port(&NodeRef::Desc("leaf-9".into()), 3, false).is_err());
    let e = h.sms[standby].sm.disable_port(&NodeRef::Desc("leaf-1".into()), 3, false).unwrap_err();
    assert!(e.contains("standby"), "{e}");

    // leaf-1 port 3 (to spine-0 port 2) disabled: the fabric holds it Disabled, its peer polls,
    // the sweep that follows routes around it.
    let t = h.sms[master].sm.disable_port(&NodeRef::Desc("leaf-1".into()), 3, false).expect("disabled");
    assert!(t.changed && t.sent());
    until_up(&mut h, master);
    assert_eq!(read_port(&mut h, probe, &leaf1, 3).port_physical_state, PhysPortState::Disabled);
    let peer = read_port(&mut h, probe, &spine0, 2);
    assert_eq!((peer.port_state, peer.port_physical_state), (PortState::Down, PhysPortState::Polling));
    assert_eq!(h.sms[master].sm.last_report().expect("report").links, links - 1);
    assert!(h.fabric.check_routes().ok(), "{:?}", h.fabric.check_routes().first_failure);
    let leaf1_guid =
        h.sms[master].sm.subnet().nodes.iter().find(|n| n.desc == "leaf-1").expect("leaf-1").info.node_guid;
    assert_eq!(h.sms[master].sm.disabled_ports().iter().copied().collect::<Vec<_>>(), [(leaf1_guid, 3)]);

    // The standby holds the list; the master dies; the new master keeps the port disabled.
    let end = h.now() + 5 * SECOND;
    while h.sms[standby].sm.sync_status().sections.iter().all(|s| *s != "disabled_ports") {
        assert!(h.now() < end, "the standby never got the disabled ports");
        run_for(&mut h, SECOND / 10);
    }
    h.kill(master);
    until_up(&mut h, standby);
    assert_eq!(h.sms[standby].sm.disabled_ports().iter().copied().collect::<Vec<_>>(), [(leaf1_guid, 3)]);
    assert_eq!(read_port(&mut h, probe, &leaf1, 3).port_physical_state, PhysPortState::Disabled);
    assert!(h.fabric.check_routes().ok(), "{:?}", h.fabric.check_routes().first_failure);

    // Enabled behind the SM's back (as ibportstate would): the next sweep disables it again.
    set_phys(&mut h, probe, &leaf1, 3, PhysPortState::Polling);
    run_for(&mut h, SECOND);
    h.sms[standby].sm.request_sweep(Requested::Heavy).expect("a sweep");
    until_up(&mut h, standby);
    run_for(&mut h, SECOND);
    assert_eq!(read_port(&mut h, probe, &leaf1, 3).port_physical_state, PhysPortState::Disabled);
    assert!(h.fabric.check_routes().ok(), "{:?}", h.fabric.check_routes().first_failure);

    // Enabled by the operator: Polling, the link trains, the sweep brings it up and uses it.
    let t = h.sms[standby].sm.enable_port(&NodeRef::Guid(leaf1_guid), 3).expect("enabled");
    assert!(t.changed && t.sent());
    until_up(&mut h, standby);
    // The link trains and the traps bring a sweep that brings it to Active.
    let end = h.now() + 20 * SECOND;
    while read_port(&mut h, probe, &leaf1, 3).port_state != PortState::Active {
        assert!(h.now() < end, "the enabled port never came back to Active");
        run_for(&mut h, SECOND / 2);
    }
    assert!(h.sms[standby].sm.disabled_ports().is_empty());
    assert!(h.fabric.check_routes().ok());
}
