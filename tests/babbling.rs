//! The babbling-port policy (issue 27, OpenSM's `babbling_port_policy`) on the simulated fabric:
//! a host made to send trap 129 about its port over and over has the leaf switch port facing it
//! (the end of its cable nearer to the SM) disabled once it passes the limit, read back from the
//! simulated switch as PortPhysicalState Disabled; the event, `ibsm status` and the metrics say
//! so; at the end of the back-off the port is enabled and the host comes back to Active. Off by
//! default, and a port under the limit is left alone. With two SMs, the port disabled and its
//! deadline reach the standby; after the master's death the new master keeps it disabled and
//! enables it when the back-off ends. A standby holds the list its master syncs (an empty one
//! empties it), and an SM that handed the subnet over and takes it back with nothing newer
//! enables no port at a deadline from before its handover.

use std::path::Path;

use ibsm::core::babbling::BabblingConfig;
use ibsm::core::{Guid2Lid, Sm, SmConfig, SmEvent};
use ibsm::transport::sim::{SimDriver, SimSms};
use ibsm_mad::DrPath;
use ibsm_mad::attrs::{PhysPortState, PortInfo, PortState};
use ibsm_mad::{Attribute, Guid, Lid, PortNum, ids};
use ibsm_sim::fabric::{AgentId, Dest, SimTime};
use ibsm_topology::{NodeKind, Topology};

mod support;

use support::sms::{elect, trap_129};

const SEC: u64 = 1_000_000_000;

fn fabric() -> Topology {
    Topology::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fabrics/fat-tree-2l-k4.net")).expect("net")
}

fn up(topo: &Topology, babbling: BabblingConfig) -> SimDriver {
    let cfg = SmConfig { babbling, ..SmConfig::default() };
    let mut drv = SimDriver::new(topo, 8, Sm::new(cfg, Guid2Lid::default()), None).expect("sim");
    assert!(drv.sweep(600 * SEC, |_| {}).expect("up").complete);
    drv
}

/// The last host of the fabric (not the SM's), with an agent attached to its port 1: the agent,
/// the host's LID, the SM's LID, the host's port GUID.
fn babbler(topo: &Topology, drv: &mut SimDriver) -> (AgentId, Lid, Lid, Guid) {
    let sm_lid = drv.sm.last_report().expect("report").sm_lid;
    let host = topo.nodes.iter().rposition(|n| n.kind == NodeKind::Ca).expect("a host");
    let agent = drv.fabric.attach(host, 1).expect("attach");
    let guid = topo.nodes[host].port_guid(1);
    let snap = drv.sm.snapshot().expect("snapshot");
    let lid = snap.port(snap.by_guid(guid).expect("known")).expect("port").lid;
    (agent, lid, sm_lid, guid)
}

/// The host sends `n` traps 129 about its own port, one a millisecond; the SM's events meanwhile.
fn babble(drv: &mut SimDriver, (agent, lid, sm_lid, _): (AgentId, Lid, Lid, Guid), n: u64) -> Vec<SmEvent> {
    let mut events = Vec::new();
    for i in 0..n {
        drv.fabric.send(agent, &trap_129(lid, 0x100 + i), Dest { dlid: sm_lid, qpn: 0 });
        drv.run_until(drv.now() + SEC / 1000, |e| {
            events.push(e.clone());
            false
        });
    }
    events
}

/// The leaf switch port cabled to the host `guid`: (switch node index in the SM's subnet, port).
fn leaf_port(drv: &SimDriver, guid: Guid) -> (usize, PortNum) {
    let s = drv.sm.subnet();
    let host = s.nodes.iter().position(|n| n.ports.get(1).and_then(|p| p.guid) == Some(guid)).expect("host");
    let (leaf, port) = s.nodes[host].ports[1].remote.expect("cabled");
    (leaf, port)
}

/// The leaf port's PortInfo as the simulated switch answers now.
fn read(drv: &mut SimDriver, (leaf, port): (usize, PortNum)) -> PortInfo {
    let path = drv.sm.subnet().nodes[leaf].path;
    let data = support::sa::dr_get(drv, &path, ids::attr::PORT_INFO, u32::from(port.0)).expect("PortInfo");
    PortInfo::parse(&data).expect("parse")
}

fn on() -> BabblingConfig {
    BabblingConfig { enabled: true, max_traps: 20, window_ns: 10 * SEC, backoff_ns: 5 * SEC }
}

#[test]
fn a_babbling_port_is_disabled_for_the_back_off_then_enabled_and_comes_back() {
    let topo = fabric();
    let mut drv = up(&topo, on());
    let b = babbler(&topo, &mut drv);
    let at = leaf_port(&drv, b.3);
    let leaf_guid = drv.sm.subnet().nodes[at.0].info.node_guid;
    let events = babble(&mut drv, b, 30);
    let disabled: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            SmEvent::BabblingPort { node, port, babbler, traps, disabled: true } => {
                Some((*node, *port, *babbler, *traps))
            }
            _ => None,
        })
        .collect();
    // Once, at the 21st trap, the leaf's end of the host's cable (nearer to the SM).
    assert_eq!(disabled.len(), 1, "{disabled:?}");
    let (node, port, (bn, bp), traps) = disabled[0];
    assert_eq!((node, port, bp, traps), (leaf_guid, at.1, PortNum(1), 21));
    assert_ne!(bn, leaf_guid, "the babbler is the host");
    let pi = read(&mut drv, at);
    assert_eq!((pi.port_physical_state, pi.port_state), (PhysPortState::Disabled, PortState::Down));
    // Status and metrics list it.
    let st = ibsm::daemon::control::status(&drv.sm);
    assert_eq!(st.traps.babbling_ports.len(), 1, "{:?}", st.traps);
    assert_eq!(st.problems.babbling_ports[0].port, at.1.0);
    assert!(st.problems.count() >= 1);
    let text = ibsm::daemon::metrics::render(&drv.sm);
    assert!(
        text.contains("ibsm_babbling_ports 1\n") && text.contains("ibsm_babbling_ports_disabled_total 1\n"),
        "{text}"
    );
    // After the back-off: enabled, the link trains, the sweep its trap brings makes it Active.
    let mut enabled = false;
    drv.run_until(drv.now() + 8 * SEC, |e| {
        enabled |= matches!(e, SmEvent::BabblingPort { disabled: false, .. });
        false
    });
    assert!(enabled, "enabled again at the end of the back-off");
    let pi = read(&mut drv, at);
    assert_eq!((pi.port_physical_state, pi.port_state), (PhysPortState::LinkUp, PortState::Active));
    assert!(ibsm::daemon::control::status(&drv.sm).traps.babbling_ports.is_empty());
}

#[test]
fn off_by_default_and_under_the_limit_nothing_is_disabled() {
    let topo = fabric();
    for (cfg, n) in [(BabblingConfig::default(), 300), (on(), 20)] {
        let mut drv = up(&topo, cfg);
        let b = babbler(&topo, &mut drv);
        let at = leaf_port(&drv, b.3);
        let events = babble(&mut drv, b, n);
        assert!(!events.iter().any(|e| matches!(e, SmEvent::BabblingPort { .. })), "{cfg:?}");
        assert_eq!(read(&mut drv, at).port_physical_state, PhysPortState::LinkUp, "{cfg:?}");
    }
}

/// PortInfo of `port` of the node at the end of `path` from `probe`, as the fabric answers.
fn read_sms(h: &mut SimSms, probe: AgentId, path: &[u8], port: u8, tid: u64) -> PortInfo {
    let smp =
        ibsm_mad::smp::SmpRepr::get_dr(&DrPath::new(path).expect("path"), ids::attr::PORT_INFO, u32::from(port), tid);
    h.fabric.send(probe, &smp.to_bytes(), Dest { dlid: Lid::PERMISSIVE, qpn: 0 });
    h.fabric.run_until_idle(SimTime(h.now() + SEC / 10));
    let mut got = None;
    while let Some(r) = h.fabric.recv(probe) {
        if let Ok(smp) = ibsm_mad::smp::SmpRepr::parse(&r.mad[..])
            && smp.tid & 0xffff_ffff == tid
        {
            got = PortInfo::parse(&smp.data).ok();
        }
    }
    got.expect("the probe's PortInfo answered")
}

/// Runs the SMs for `ns` of virtual time.
fn run_for(h: &mut SimSms, ns: u64) {
    let until = h.now() + ns;
    h.run_until(until, |_, _| false);
    if h.now() < until {
        h.fabric.advance_to(SimTime(until));
    }
}

#[test]
fn a_new_master_keeps_a_babbling_port_disabled_until_its_back_off_ends_then_enables_it() {
    let topo = fabric();
    let (mut h, master) = elect(&topo, 5, &[2, 1]);
    let standby = 1 - master;
    let cfg = BabblingConfig { backoff_ns: 10 * SEC, ..on() };
    for s in &mut h.sms {
        let c = SmConfig { babbling: cfg, ..s.sm.config().clone() };
        s.sm.reconfigure(c);
    }
    // h6 babbles (leaf-3 port 1 faces it); a probe on h7 reads leaf-3 by the route [1].
    let at = |name: &str| topo.nodes.iter().position(|n| n.name == name).expect("node");
    let agent = h.fabric.attach(at("h6"), 1).expect("attach h6");
    let probe = h.fabric.attach(at("h7"), 1).expect("attach h7");
    let leaf3 = [1u8];
    let snap = h.sms[master].sm.snapshot().expect("snapshot");
    let h6 = snap.port(snap.by_guid(topo.nodes[at("h6")].port_guid(1)).expect("h6 known")).expect("port").lid;
    let sm_lid = h.sms[master].sm.last_report().expect("report").sm_lid;
    for i in 0..30 {
        h.fabric.send(agent, &trap_129(h6, 0x100 + i), Dest { dlid: sm_lid, qpn: 0 });
        run_for(&mut h, SEC / 1000);
    }
    let list: Vec<_> = h.sms[master].sm.babbling().list().map(|(k, d)| (k, *d)).collect();
    assert_eq!(list.len(), 1, "the master disabled one port: {list:?}");
    let (port, d) = list[0];
    let leaf3_guid =
        h.sms[master].sm.subnet().nodes.iter().find(|n| n.desc == "leaf-3").expect("leaf-3").info.node_guid;
    assert_eq!(port, (leaf3_guid, 1));
    assert_eq!(read_sms(&mut h, probe, &leaf3, 1, 0x7100).port_physical_state, PhysPortState::Disabled);

    // The standby becomes current with the master's state (the port disabled in it).
    let end = h.now() + 5 * SEC;
    loop {
        let st = h.sms[master].sm.sync_status();
        if st.standbys.iter().any(|s| s.3 == Some(st.version)) {
            break;
        }
        assert!(h.now() < end, "the standby never became current: {st:?}");
        run_for(&mut h, SEC / 10);
    }
    assert!(h.now() + 3 * SEC < d.until, "the back-off outlasts the takeover");

    // kill -9 the master: the standby takes over with the port and its deadline.
    h.kill(master);
    h.run_until(h.now() + 30 * SEC, |i, e| i == standby && matches!(e, SmEvent::SubnetUp(r) if r.complete))
        .expect("the standby brings the subnet up");
    let got: Vec<_> = h.sms[standby].sm.babbling().list().map(|(k, d)| (k, *d)).collect();
    assert_eq!(got.len(), 1, "{got:?}");
    let (k, nd) = got[0];
    assert_eq!((k, nd.babbler, nd.traps), (port, d.babbler, d.traps));
    assert!(nd.until >= d.until && nd.until < d.until + SEC / 10, "re-based: {} vs {}", nd.until, d.until);
    assert_eq!(ibsm::daemon::control::status(&h.sms[standby].sm).traps.babbling_ports.len(), 1);
    assert_eq!(read_sms(&mut h, probe, &leaf3, 1, 0x7101).port_physical_state, PhysPortState::Disabled);

    // Not before the back-off ends; then enabled, the link trains and comes back to Active.
    let mut enabled_at = None;
    h.run_until_at(nd.until + 2 * SEC, |i, t, e| {
        if i == standby && matches!(e, SmEvent::BabblingPort { disabled: false, .. }) {
            enabled_at = Some(t);
            return true;
        }
        false
    });
    let t = enabled_at.expect("the new master enables the port at the end of its back-off");
    assert!(t >= nd.until, "enabled at {t}, back-off ends at {}", nd.until);
    let end = h.now() + 20 * SEC;
    let mut tid = 0x7200;
    loop {
        tid += 1;
        let pi = read_sms(&mut h, probe, &leaf3, 1, tid);
        if pi.port_state == PortState::Active {
            break;
        }
        assert!(h.now() < end, "the port never came back: {:?}", (pi.port_physical_state, pi.port_state));
        run_for(&mut h, SEC / 2);
    }
    assert!(h.sms[standby].sm.babbling().list().next().is_none());
}

/// SM 0 (priority 5) alone brings the fabric up and disables the leaf port facing h6, which
/// babbles; SM 1 (priority 9) starts, and SM 0 hands the subnet over to it. Returns the
/// harness, the port disabled (leaf-3 port 1) and the probe that reads it; it stops at SM 0's
/// HandedOver.
fn disabled_then_handed_over() -> (SimSms, (Guid, u8), AgentId) {
    let topo = fabric();
    let at = support::sms::hosts(&topo);
    let cfg = |p: u8| SmConfig { babbling: BabblingConfig { backoff_ns: 15 * SEC, ..on() }, ..support::sms::cfg(p, 7) };
    let sms = vec![(Sm::new(cfg(5), Guid2Lid::default()), at[0]), (Sm::new(cfg(9), Guid2Lid::default()), at[1])];
    let mut h = SimSms::new(&topo, 14, sms).expect("attach");
    h.start(0);
    h.run_until(60 * SEC, |i, e| i == 0 && matches!(e, SmEvent::SubnetUp(r) if r.complete)).expect("up");
    let node = |name: &str| topo.nodes.iter().position(|n| n.name == name).expect("node");
    let agent = h.fabric.attach(node("h6"), 1).expect("attach h6");
    let probe = h.fabric.attach(node("h7"), 1).expect("attach h7");
    let snap = h.sms[0].sm.snapshot().expect("snapshot");
    let h6 = snap.port(snap.by_guid(topo.nodes[node("h6")].port_guid(1)).expect("h6 known")).expect("port").lid;
    let sm_lid = h.sms[0].sm.last_report().expect("report").sm_lid;
    for i in 0..30 {
        h.fabric.send(agent, &trap_129(h6, 0x100 + i), Dest { dlid: sm_lid, qpn: 0 });
        run_for(&mut h, SEC / 1000);
    }
    let list: Vec<_> = h.sms[0].sm.babbling().list().map(|(k, _)| k).collect();
    let leaf3 = h.sms[0].sm.subnet().nodes.iter().find(|n| n.desc == "leaf-3").expect("leaf-3").info.node_guid;
    assert_eq!(list, [(leaf3, 1)], "SM 0 disabled the leaf port facing h6");
    let until = h.sms[0].sm.babbling().list().next().map(|(_, d)| d.until).expect("a deadline");
    h.start(1);
    h.run_until(h.now() + 10 * SEC, |i, e| i == 0 && matches!(e, SmEvent::HandedOver { .. }))
        .expect("SM 0 hands the subnet over to the better SM 1");
    assert!(h.now() + 3 * SEC < until, "the handover comes well before the back-off ends");
    (h, (leaf3, 1), probe)
}

/// Runs until SM `i` reports `want` (a BabblingPort event with `disabled: false`), or `ns`.
fn until_enabled_by(h: &mut SimSms, i: usize, ns: u64) -> bool {
    h.run_until(h.now() + ns, |j, e| j == i && matches!(e, SmEvent::BabblingPort { disabled: false, .. })).is_some()
}

#[test]
fn a_standby_holds_the_babbling_list_its_master_syncs_and_an_empty_one_empties_it() {
    let (mut h, port, probe) = disabled_then_handed_over();
    // SM 1 is master with the port; SM 0 holds the list SM 1 syncs to it.
    let synced = |h: &SimSms| {
        let (m, s) = (h.sms[1].sm.sync_status(), h.sms[0].sm.sync_status());
        m.standbys.iter().any(|p| p.3 == Some(m.version)) && s.current_at == Some(m.version)
    };
    let end = h.now() + 5 * SEC;
    while !synced(&h) {
        assert!(h.now() < end, "SM 0 never current: {:?}", h.sms[1].sm.sync_status());
        run_for(&mut h, SEC / 10);
    }
    let theirs: Vec<_> = h.sms[1].sm.babbling().list().map(|(k, d)| (k, d.babbler, d.traps)).collect();
    let ours: Vec<_> = h.sms[0].sm.babbling().list().map(|(k, d)| (k, d.babbler, d.traps)).collect();
    assert_eq!((theirs.len(), &ours), (1, &theirs), "the standby's list is its master's");
    // At the end of the back-off SM 1 enables the port and syncs an empty list: SM 0's list is
    // empty too (an SM that kept its own would enable the port again at its old deadline).
    assert!(until_enabled_by(&mut h, 1, 20 * SEC), "SM 1 enables the port");
    let end = h.now() + 5 * SEC;
    while !synced(&h) {
        assert!(h.now() < end, "SM 0 never current again");
        run_for(&mut h, SEC / 10);
    }
    assert_eq!(h.sms[0].sm.babbling().list().count(), 0, "the standby synced an empty list: {port:?}");
    assert!(ibsm::daemon::control::status(&h.sms[0].sm).traps.babbling_ports.is_empty());
    // SM 1 dies: SM 0 takes over and enables nothing.
    h.kill(1);
    let mut enabled = false;
    h.run_until(h.now() + 30 * SEC, |i, e| {
        enabled |= i == 0 && matches!(e, SmEvent::BabblingPort { .. });
        i == 0 && matches!(e, SmEvent::SubnetUp(r) if r.complete)
    })
    .expect("SM 0 takes over");
    h.run_until(h.now() + 2 * SEC, |i, e| {
        enabled |= i == 0 && matches!(e, SmEvent::BabblingPort { .. });
        false
    });
    assert!(!enabled, "no port toggled by the new master");
    assert_eq!(read_sms(&mut h, probe, &[1], 1, 0x7300).port_state, PortState::Active);
}

#[test]
fn an_sm_that_handed_over_enables_no_port_at_an_old_deadline_when_it_takes_over_without_newer_state() {
    let (mut h, port, probe) = disabled_then_handed_over();
    // SM 0 stalls at once (its process stopped: nothing from SM 1 reaches it), SM 1 enables
    // the port at the end of the back-off, and an operator then disables it on SM 1.
    h.sms[0].alive = false;
    assert!(until_enabled_by(&mut h, 1, 20 * SEC), "SM 1 enables the port");
    let end = h.now() + 10 * SEC;
    for tid in 0x7400.. {
        let pi = read_sms(&mut h, probe, &[1], 1, tid);
        if pi.port_state == PortState::Active {
            break;
        }
        assert!(h.now() < end, "the port never came back");
        run_for(&mut h, SEC / 2);
    }
    let end = h.now() + 10 * SEC;
    while let Err(e) = h.sms[1].sm.disable_port(&ibsm::core::maintenance::NodeRef::Guid(port.0), port.1, true) {
        assert!(h.now() < end, "ibsm port disable: {e}");
        run_for(&mut h, SEC / 10);
    }
    run_for(&mut h, SEC);
    assert_eq!(read_sms(&mut h, probe, &[1], 1, 0x7500).port_physical_state, PhysPortState::Disabled);
    // SM 1 dies; SM 0 comes back to life and takes over with nothing from SM 1. The port the
    // operator disabled stays disabled: SM 0 holds no old entry to enable it with.
    h.kill(1);
    h.sms[0].alive = true;
    let mut toggled = false;
    h.run_until(h.now() + 30 * SEC, |i, e| {
        toggled |= i == 0 && matches!(e, SmEvent::BabblingPort { .. });
        i == 0 && matches!(e, SmEvent::SubnetUp(r) if r.complete)
    })
    .expect("SM 0 takes over");
    h.run_until(h.now() + 2 * SEC, |i, e| {
        toggled |= i == 0 && matches!(e, SmEvent::BabblingPort { .. });
        false
    });
    assert!(!toggled, "SM 0 enabled a port at a deadline from before its handover");
    assert_eq!(h.sms[0].sm.babbling().list().count(), 0);
    assert_eq!(read_sms(&mut h, probe, &[1], 1, 0x7600).port_physical_state, PhysPortState::Disabled);
}
