//! The babbling-port policy (issue 27, OpenSM's `babbling_port_policy`) on the simulated fabric:
//! a host made to send trap 129 about its port over and over has the leaf switch port facing it
//! (the end of its cable nearer to the SM) disabled once it passes the limit, read back from the
//! simulated switch as PortPhysicalState Disabled; the event, `ibsm status` and the metrics say
//! so; at the end of the back-off the port is enabled and the host comes back to Active. Off by
//! default, and a port under the limit is left alone.

use std::path::Path;

use ibsm::core::babbling::BabblingConfig;
use ibsm::core::{Guid2Lid, Sm, SmConfig, SmEvent};
use ibsm::transport::sim::SimDriver;
use ibsm_mad::attrs::{Notice, NoticeDetails, NoticeType, PhysPortState, PortInfo, PortState, ProducerType};
use ibsm_mad::header::Method;
use ibsm_mad::{Attribute, Guid, Lid, PortNum, ids};
use ibsm_sim::fabric::{AgentId, Dest};
use ibsm_topology::{NodeKind, Topology};

mod support;

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
        let details = NoticeDetails::PortHealth { trap: 129, lid, port: PortNum(1) };
        let notice = Notice::generic(NoticeType::Urgent, ProducerType::Ca, lid, details).expect("generic");
        let mut full = [0u8; 80];
        notice.emit(&mut full);
        let mut data = [0u8; 64];
        data.copy_from_slice(&full[..64]);
        let smp = ibsm_mad::smp::SmpRepr::set_lid(ids::attr::NOTICE, 0, 0x100 + i, data).with_method(Method::Trap);
        drv.fabric.send(agent, &smp.to_bytes(), Dest { dlid: sm_lid, qpn: 0 });
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
