//! Duplicate GUIDs on the simulated fabric: two HCAs answering with one NodeGUID are found,
//! confirmed and quarantined (neither gets a LID or an armed port), reported once, and the SM
//! brings up the rest of the fabric; when the GUID is fixed the next sweep brings both in. A
//! node that copies the SM's own GUID never cuts the SM off.

use ibsm::core::{Guid2Lid, Sm, SmConfig, SmEvent};
use ibsm::transport::sim::SimDriver;
use ibsm_mad::attrs::PortState;
use ibsm_mad::{Guid, Lid, PortNum};
use ibsm_sim::fabric::Fault;
use ibsm_topology::Topology;

mod support;
use support::sa::{LIMIT, example};

fn sweep(drv: &mut SimDriver) -> (ibsm::core::SubnetReport, Vec<SmEvent>) {
    let mut events = Vec::new();
    let r = drv.sweep(LIMIT, |ev| events.push(ev.clone())).expect("a report");
    (r, events)
}

fn duplicates(events: &[SmEvent]) -> Vec<(Guid, Vec<(Guid, u8)>)> {
    events
        .iter()
        .filter_map(|e| match e {
            SmEvent::DuplicateGuid { guid, ports } => Some((*guid, ports.clone())),
            _ => None,
        })
        .collect()
}

/// The node's port 1 as the SM's model has it: (LID, state).
fn host_port(drv: &SimDriver, topo: &Topology, name: &str) -> Vec<(Lid, Option<PortState>)> {
    let path_guid = topo.nodes[topo.find(name).expect("host")].node_guid;
    drv.sm
        .subnet()
        .nodes
        .iter()
        .filter(|n| n.info.node_guid == path_guid)
        .filter_map(|n| n.port(PortNum(1)).map(|r| (r.lid, r.info.map(|i| i.port_state))))
        .collect()
}

fn leaf_end(topo: &Topology, host: &str) -> (Guid, u8) {
    let p = topo.nodes[topo.find(host).expect("host")].peer(1).expect("cabled");
    (topo.nodes[p.node].node_guid, p.port)
}

#[test]
fn two_hcas_with_one_guid_are_quarantined_and_the_rest_comes_up() {
    let topo = example("fat-tree-2l-k4.net");
    let mut drv = SimDriver::new(&topo, 11, Sm::new(SmConfig::default(), Guid2Lid::default()), None).expect("attach");
    let (h1, h4) = (topo.find("h1").expect("h1"), topo.find("h4").expect("h4"));
    let g = topo.nodes[h1].node_guid;
    drv.fabric.inject_fault(Fault::SetGuid { node: h4, guid: g });
    let (report, events) = sweep(&mut drv);
    // Complete without the quarantined ports: they are left out on purpose.
    assert!(report.complete && report.ports_not_active == 0, "{report:?}");
    let found = duplicates(&events);
    assert_eq!(found.len(), 1, "{events:?}");
    let (guid, ports) = &found[0];
    assert_eq!(*guid, g);
    let mut want = vec![(g, 1), leaf_end(&topo, "h1"), leaf_end(&topo, "h4")];
    want.sort();
    assert_eq!(*ports, want, "both instances' ports and the leaf ports facing them");
    assert_eq!(drv.sm.quarantine().guids.keys().copied().collect::<Vec<_>>(), [g]);
    // One instance in the model, without a LID, never armed.
    assert_eq!(host_port(&drv, &topo, "h1"), [(Lid::UNASSIGNED, Some(PortState::Init))]);
    // The six other hosts reach each other on the switches' own tables.
    let check = drv.fabric.check_routes();
    assert!(check.ok() && check.end_ports == 6, "{check:?}");

    // The next sweep finds it again, quietly.
    let (report, events) = sweep(&mut drv);
    assert!(report.complete);
    assert!(duplicates(&events).is_empty(), "reported once: {events:?}");
    assert_eq!(drv.sm.quarantine().guids.len(), 1);

    // Fixed: both come in.
    drv.fabric.inject_fault(Fault::SetGuid { node: h4, guid: topo.nodes[h4].node_guid });
    let (report, _) = sweep(&mut drv);
    assert!(report.complete);
    assert!(drv.sm.quarantine().guids.is_empty());
    for h in ["h1", "h4"] {
        let p = host_port(&drv, &topo, h);
        assert!(p.len() == 1 && p[0].0 != Lid::UNASSIGNED && p[0].1 == Some(PortState::Active), "{h}: {p:?}");
    }
    let check = drv.fabric.check_routes();
    assert!(check.ok() && check.end_ports == 8, "{check:?}");
}

#[test]
fn a_node_copying_the_sms_guid_never_cuts_the_sm_off() {
    let topo = example("fat-tree-2l-k4.net");
    let mut drv = SimDriver::new(&topo, 12, Sm::new(SmConfig::default(), Guid2Lid::default()), None).expect("attach");
    let me = drv.at.0;
    let other = topo.find("h5").expect("h5");
    assert_ne!(me, other);
    let g = topo.nodes[me].node_guid;
    drv.fabric.inject_fault(Fault::SetGuid { node: other, guid: g });
    let (report, events) = sweep(&mut drv);
    assert!(report.complete, "{report:?}");
    assert_ne!(drv.sm.subnet().local_lid(), Lid::UNASSIGNED, "the SM keeps its LID");
    let found = duplicates(&events);
    assert_eq!(found.len(), 1, "{events:?}");
    let mut want = vec![(g, 1), leaf_end(&topo, "h5")];
    want.sort();
    assert_eq!(found[0].1, want, "only the copy's side is left out");
    let check = drv.fabric.check_routes();
    assert!(check.ok() && check.end_ports == 7, "{check:?}");
}

#[test]
fn two_ports_with_one_port_guid_get_no_lid_and_the_rest_comes_up() {
    let mut topo = example("fat-tree-2l-k4.net");
    let (h2, h6) = (topo.find("h2").expect("h2"), topo.find("h6").expect("h6"));
    let g = topo.nodes[h2].port_guid(1);
    topo.nodes[h6].port_guids[1] = g;
    let mut drv = SimDriver::new(&topo, 13, Sm::new(SmConfig::default(), Guid2Lid::default()), None).expect("attach");
    let (report, events) = sweep(&mut drv);
    assert!(report.complete && report.ports_not_active == 0, "{report:?}");
    let found = duplicates(&events);
    assert_eq!(found.len(), 1, "{events:?}");
    let mut want = vec![
        (topo.nodes[h2].node_guid, 1),
        (topo.nodes[h6].node_guid, 1),
        leaf_end(&topo, "h2"),
        leaf_end(&topo, "h6"),
    ];
    want.sort();
    assert_eq!(found[0], (g, want));
    for h in ["h2", "h6"] {
        assert_eq!(host_port(&drv, &topo, h), [(Lid::UNASSIGNED, Some(PortState::Init))], "{h}");
    }
    assert!(drv.sm.guid2lid().get(g).is_none(), "no LID was given to the shared port GUID");
    let check = drv.fabric.check_routes();
    assert!(check.ok() && check.end_ports == 6, "{check:?}");
}
