//! A switch cabled to itself on two different ports (`sw0[2]-sw0[3]`, a loopback cable) on the
//! simulated fabric: the SM leaves both ports unarmed and unrouted and reports the cable, with
//! or without a planned cabling; the `.net` reader refuses such a cable outright.

use std::sync::Arc;

use ibsm::core::{Guid2Lid, Sm, SmConfig, SmEvent};
use ibsm::transport::sim::SimDriver;
use ibsm_mad::PortNum;
use ibsm_mad::attrs::PortState;
use ibsm_topology::{LinkAttrs, Peer, Topology};

mod support;
use support::sa::LIMIT;

/// Two switches, a host on each, and the plan: no loopback.
const PLAN: &str = "Switch 8 \"sw0\"\n[1] \"h0\"[1]\n[5] \"sw1\"[5]\n\n\
    Switch 8 \"sw1\"\n[1] \"h1\"[1]\n\nCa 1 \"h0\"\n[1] \"sw0\"[1]\n\nCa 1 \"h1\"\n[1] \"sw1\"[1]\n";

/// The plan with sw0's ports 2 and 3 cabled together (built by hand: the `.net` reader
/// refuses it).
fn looped() -> (Topology, Topology) {
    let plan = Topology::parse_str(PLAN, "plan.net").expect("plan");
    let mut t = plan.clone();
    let sw = t.find("sw0").expect("sw0");
    for (p, q) in [(2u8, 3u8), (3, 2)] {
        t.nodes[sw].links[usize::from(p)] = Some(Peer { node: sw, port: q, attrs: LinkAttrs::default() });
    }
    (plan, t)
}

fn check(plan: Option<Topology>) {
    let (_, fabric) = looped();
    let cfg = SmConfig { expected_topology: plan.map(Arc::new), ..SmConfig::default() };
    let mut drv = SimDriver::new(&fabric, 3, Sm::new(cfg, Guid2Lid::default()), None).expect("attach");
    let mut events = Vec::new();
    let report = drv.sweep(LIMIT, |ev| events.push(ev.clone())).expect("a report");
    // The loopback's ends are left out on purpose: the sweep is complete without them.
    assert!(report.complete && report.ports_not_active == 0, "{report:?}");
    let sw0 = fabric.nodes[fabric.find("sw0").expect("sw0")].node_guid;
    let refused: Vec<_> = drv.sm.cabling().refused.iter().copied().collect();
    assert_eq!(refused, [(sw0, 2), (sw0, 3)]);
    let lines = drv.sm.cabling().diff.lines();
    assert_eq!(lines, ["loopback cable \"sw0\"[2] - \"sw0\"[3]: a node cabled to itself"], "{lines:?}");
    let reported: Vec<_> = events
        .iter()
        .filter_map(|e| {
            if let SmEvent::Cabling { differences, refused } = e { Some((differences, *refused)) } else { None }
        })
        .collect();
    assert_eq!(reported.len(), 1, "{events:?}");
    assert_eq!((reported[0].0, reported[0].1), (&lines, 2));
    // Never armed: as discovery read them, in Init.
    let node = drv.sm.subnet().nodes.iter().find(|n| n.info.node_guid == sw0).expect("sw0 found");
    for p in [2, 3] {
        let state = node.port(PortNum(p)).and_then(|r| r.info).map(|i| i.port_state);
        assert_eq!(state, Some(PortState::Init), "sw0[{p}]");
    }
    // No table sends anything out of them, and the hosts reach each other.
    let snap = drv.sm.snapshot().expect("snapshot");
    for n in snap.nodes.iter().filter(|n| n.info.node_guid == sw0) {
        assert!(
            !n.lft().iter().any(|q| q == ibsm_mad::PortNum(2) || q == ibsm_mad::PortNum(3)),
            "sw0 routes over its loopback"
        );
    }
    assert!(drv.fabric.check_routes().ok(), "{:?}", drv.fabric.check_routes());
}

#[test]
fn a_loopback_cable_is_left_down_and_reported_without_a_plan() {
    check(None);
}

#[test]
fn a_loopback_cable_is_left_down_and_reported_against_a_plan() {
    let (plan, _) = looped();
    check(Some(plan));
}

#[test]
fn the_net_reader_refuses_a_loopback_cable() {
    let text = PLAN.replace("[5] \"sw1\"[5]\n", "[5] \"sw1\"[5]\n[2] \"sw0\"[3]\n");
    let e = Topology::parse_str(&text, "looped.net").expect_err("refused");
    assert_eq!(e.to_string(), "looped.net:4: \"sw0\"[2] is cabled to \"sw0\"[3] of the same node (a loopback cable)");
}
