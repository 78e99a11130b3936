//! Issue 27's port settings on the simulated fabric: the HOQ lifetimes, VL stall counts,
//! `max-op-vls` and error thresholds the SM writes with its PortInfo Sets, to the ports OpenSM's
//! link manager writes them to; read back from the simulated ports (not from the SM's books);
//! written once, not at every sweep; and, on ports that do not keep a setting (ibsim's keep no
//! error thresholds), not sent again at every sweep either.

use std::path::Path;

use ibsm::core::{Guid2Lid, PortConfig, Sm, SmConfig, SmEvent};
use ibsm::transport::sim::SimDriver;
use ibsm_mad::attrs::{NodeType, PortInfo};
use ibsm_mad::{Attribute, Guid, PortNum, ids};
use ibsm_sim::fabric::SimConfig;
use ibsm_topology::Topology;

mod support;

const LIMIT: u64 = 600_000_000_000;

fn fabric() -> Topology {
    Topology::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fabrics/fat-tree-2l-k4.net")).expect("net")
}

/// The fabric brought up by an SM with `ports`, and the events of the first sweep.
fn up(ports: PortConfig, sim: SimConfig) -> (SimDriver, Vec<SmEvent>) {
    let cfg = SmConfig { ports, ..SmConfig::default() };
    let mut drv = SimDriver::with_config(&fabric(), sim, Sm::new(cfg, Guid2Lid::default()), None).expect("attach");
    let mut events = Vec::new();
    let report = drv.sweep(LIMIT, |e| events.push(e.clone())).expect("up");
    assert!(report.complete, "{report:?}");
    (drv, events)
}

/// Every linked port of the fabric as the simulated port answers SubnGet(PortInfo) now: (node
/// type, port, whether the peer is a switch, the PortInfo).
fn read_back(drv: &mut SimDriver) -> Vec<(NodeType, u8, bool, PortInfo)> {
    let subnet = drv.sm.subnet().clone();
    let mut out = Vec::new();
    for n in &subnet.nodes {
        for p in 1..n.ports.len() {
            let port = PortNum(u8::try_from(p).expect("port"));
            let Some((rn, _)) = n.ports[p].remote else { continue };
            let peer_is_switch = subnet.nodes[rn].is_switch();
            let attr_mod = if n.is_switch() { u32::from(port.0) } else { 0 };
            let data = support::sa::dr_get(drv, &n.path_for(port), ids::attr::PORT_INFO, attr_mod).expect("PortInfo");
            out.push((n.info.node_type, port.0, peer_is_switch, PortInfo::parse(&data).expect("parse")));
        }
    }
    out
}

#[test]
fn ports_hold_opensms_vl_stall_counts_thresholds_and_op_vls_and_are_written_once() {
    let ports = PortConfig {
        vl_stall_count: 3,
        leaf_vl_stall_count: 5,
        local_phy_errors: 4,
        overrun_errors: 6,
        max_op_vls: 2,
        ..PortConfig::default()
    };
    let (mut drv, _) = up(ports, SimConfig { seed: 3, ..SimConfig::default() });
    let seen = read_back(&mut drv);
    let (mut switch_ports, mut ca_ports) = (0, 0);
    for (kind, port, peer_is_switch, pi) in &seen {
        let at = format!("{kind:?} port {port}");
        assert_eq!((pi.local_phy_errors, pi.overrun_errors), (4, 6), "{at}");
        // The simulated ports have VLCap 4 (VL0-7): capped at 2 (VL0-1).
        assert_eq!(pi.operational_vls, 2, "{at}");
        if *kind == NodeType::Switch {
            switch_ports += 1;
            let want = if *peer_is_switch { (3, 0x12) } else { (5, 0x10) };
            assert_eq!((pi.vl_stall_count, pi.hoq_life), want, "{at}");
        } else {
            ca_ports += 1;
            // CA ports: as they powered on (VL stall 7, HOQ 0), as OpenSM leaves them.
            assert_eq!((pi.vl_stall_count, pi.hoq_life), (7, 0), "{at}");
        }
    }
    assert!(switch_ports >= 24 && ca_ports == 8, "{switch_ports} switch ports, {ca_ports} CA ports");
    // Kept: a second sweep sends no PortInfo Set.
    let before = drv.fabric.stats().port_info_sets;
    let again = drv.sweep(LIMIT, |_| {}).expect("again");
    assert!(again.complete);
    assert_eq!(drv.fabric.stats().port_info_sets, before, "the settings are written once, not at every sweep");
}

#[test]
fn defaults_are_opensms_and_a_fabric_that_has_them_gets_no_set() {
    let (mut drv, _) = up(PortConfig::default(), SimConfig { seed: 4, ..SimConfig::default() });
    for (kind, port, _, pi) in read_back(&mut drv) {
        assert_eq!((pi.local_phy_errors, pi.overrun_errors, pi.vl_stall_count), (8, 8, 7), "{kind:?} {port}");
        // OpenSM's max-op-vls 5 does not cap VLCap 4.
        assert_eq!(pi.operational_vls, 4);
    }
    // A second SM, started on the fabric the first configured (a restart): the only PortInfo
    // Sets are the CA ports' ClientReregister of a new master (as OpenSM's); none for settings.
    let before = drv.fabric.stats();
    drv.sm = Sm::new(SmConfig::default(), drv.sm.guid2lid().clone());
    let report = drv.sweep(LIMIT, |_| {}).expect("restart");
    assert!(report.complete, "{report:?}");
    let after = drv.fabric.stats();
    let sets = after.port_info_sets - before.port_info_sets;
    let reregisters = after.client_reregisters - before.client_reregisters;
    assert_eq!((sets, reregisters), (8, 8), "a fabric that has the settings gets no PortInfo Set for them");
}

#[test]
fn a_reloaded_max_op_vls_bounces_each_ca_link_once_and_the_links_come_back_active_with_it() {
    let (mut drv, _) = up(PortConfig::default(), SimConfig { seed: 8, ..SimConfig::default() });
    // The simulated ports power on as ibsim's (OperationalVLs at VLCap 4, NeighborMTU at
    // MTUCap): OpenSM's defaults change neither, so the first bring-up bounces nothing.
    assert_eq!(drv.fabric.stats().link_retrains, 0);
    let cfg = SmConfig { ports: PortConfig { max_op_vls: 2, ..PortConfig::default() }, ..SmConfig::default() };
    assert!(drv.sm.reconfigure(cfg).sweep, "max-op-vls takes a sweep");
    let before = drv.fabric.stats();
    let mut events = Vec::new();
    let report = drv.sweep(LIMIT, |e| events.push(e.clone())).expect("the reload's sweep");
    assert!(report.complete, "{report:?}");
    // One Set with PortState Down on each CA port (8), none on a switch port: OpenSM bounces
    // CA ports only.
    assert_eq!(drv.fabric.stats().link_retrains - before.link_retrains, 8, "one bounce per CA port");
    let mut bounced: Vec<(Guid, PortNum)> = events
        .iter()
        .filter_map(|e| match e {
            SmEvent::LinksBounced { ports } => Some(ports.clone()),
            _ => None,
        })
        .flatten()
        .collect();
    bounced.sort_unstable();
    let subnet = drv.sm.subnet();
    let mut ca_ports: Vec<(Guid, PortNum)> = subnet
        .nodes
        .iter()
        .filter(|n| !n.is_switch())
        .flat_map(|n| {
            (1..n.ports.len())
                .filter(|&p| n.ports[p].remote.is_some())
                .map(|p| (n.info.node_guid, PortNum(u8::try_from(p).expect("port"))))
        })
        .collect();
    ca_ports.sort_unstable();
    assert_eq!(bounced, ca_ports, "one event naming the CA ports, each once");
    // The bounces mark the leaf switches' PortStateChange (as ibsim's do); the sweep that brings
    // ends, and bounces nothing more.
    drv.run_until(drv.now() + 5_000_000_000, |_| false);
    assert_eq!(drv.fabric.stats().link_retrains - before.link_retrains, 8, "not bounced again");
    let seen = read_back(&mut drv);
    for (kind, port, _, pi) in &seen {
        let at = format!("{kind:?} port {port}");
        assert_eq!(pi.port_state, ibsm_mad::attrs::PortState::Active, "{at}: the link is back up");
        assert_eq!(pi.operational_vls, 2, "{at}");
        assert_eq!(pi.neighbor_mtu, pi.mtu_cap, "{at}");
    }
    assert_eq!(seen.iter().filter(|(k, ..)| *k != NodeType::Switch).count(), 8);
    // Settled: the next sweep sends no PortInfo Set and bounces nothing.
    let before = drv.fabric.stats();
    assert!(drv.sweep(LIMIT, |_| {}).expect("again").complete);
    let after = drv.fabric.stats();
    assert_eq!((after.port_info_sets, after.link_retrains), (before.port_info_sets, before.link_retrains));
}

#[test]
fn ports_that_do_not_keep_the_thresholds_are_reported_once_and_not_sent_them_at_every_sweep() {
    let sim = SimConfig { seed: 6, keeps_error_thresholds: false, ..SimConfig::default() };
    let (mut drv, events) = up(PortConfig::default(), sim);
    let summaries: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            SmEvent::PortSettingNotKept { ports } => Some(ports.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(summaries.len(), 1, "one summary for the sweep, not one event per port: {summaries:?}");
    let not_kept = &summaries[0];
    assert!(not_kept.len() >= 32, "every linked port reported: {not_kept:?}");
    let mut distinct: Vec<_> = not_kept.iter().map(|(n, p, _)| (*n, *p)).collect();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), not_kept.len(), "each port once: {not_kept:?}");
    assert!(not_kept.iter().all(|(_, _, s)| s == &["error thresholds"]), "{not_kept:?}");
    for (_, _, _, pi) in read_back(&mut drv) {
        assert_eq!((pi.local_phy_errors, pi.overrun_errors), (0, 0), "the simulated ports kept none");
    }
    let before = drv.fabric.stats().port_info_sets;
    let mut again_events = Vec::new();
    let again = drv.sweep(LIMIT, |e| again_events.push(e.clone())).expect("again");
    assert!(again.complete);
    assert_eq!(drv.fabric.stats().port_info_sets, before, "not sent again at the next sweep");
    assert!(!again_events.iter().any(|e| matches!(e, SmEvent::PortSettingNotKept { .. })), "reported once");
}

#[test]
fn forced_link_speed_and_width_are_written_to_every_linked_port_once() {
    // The simulated ports support SDR/DDR/QDR (7) and 1X/4X (3), all enabled.
    let ports = PortConfig { force_link_speed: 1, force_link_width: 2, ..PortConfig::default() };
    let (mut drv, _) = up(ports, SimConfig { seed: 7, ..SimConfig::default() });
    // The trap 144s the changed masks raise bring a sweep; let it end.
    drv.run_until(drv.now() + 3_000_000_000, |_| false);
    let seen = read_back(&mut drv);
    assert!(seen.len() >= 32, "{}", seen.len());
    for (kind, port, _, pi) in &seen {
        assert_eq!((pi.link_speed_enabled.0, pi.link_width_enabled.0), (1, 2), "{kind:?} port {port}");
    }
    // No PortInfo Set at the next sweep.
    let before = drv.fabric.stats().port_info_sets;
    assert!(drv.sweep(LIMIT, |_| {}).expect("again").complete);
    assert_eq!(drv.fabric.stats().port_info_sets, before, "forced once, not at every sweep");
    // 0 leaves the ports' own masks; the default (15, 255 without 2X support) writes nothing to
    // ports whose enabled sets are their supported ones.
    for ports in
        [PortConfig { force_link_speed: 0, force_link_width: 0, ..PortConfig::default() }, PortConfig::default()]
    {
        let (mut drv, _) = up(ports, SimConfig { seed: 7, ..SimConfig::default() });
        for (kind, port, _, pi) in read_back(&mut drv) {
            assert_eq!((pi.link_speed_enabled.0, pi.link_width_enabled.0), (7, 3), "{kind:?} port {port}");
        }
    }
}

/// The PathRecord the SA gives between the first two hosts, and the SM's subnet after the sweep.
/// With `restart`, a second SM sweeps the fabric the first configured: no switch port gets a
/// Set then, so what it knows of them comes from its reads alone.
fn xdr_path(xdr: bool, restart: bool) -> (ibsm_mad::records::PathRecord, SimDriver) {
    use ibsm_mad::header::Method;
    use ibsm_mad::records::PathRecord;
    let (mut drv, _) = up(PortConfig::default(), SimConfig { seed: 9, xdr, ..SimConfig::default() });
    if restart {
        drv.sm = Sm::new(SmConfig::default(), drv.sm.guid2lid().clone());
        assert!(drv.sweep(LIMIT, |_| {}).expect("restart").complete);
    }
    let snap = drv.sm.snapshot().expect("snapshot");
    let topo = fabric();
    let hosts: Vec<usize> =
        (0..topo.nodes.len()).filter(|&i| topo.nodes[i].kind == ibsm_topology::NodeKind::Ca).take(2).collect();
    let lid = |h: usize| snap.port(snap.by_guid(topo.nodes[h].port_guid(1)).expect("known")).expect("port").lid;
    let (a, b) = (lid(hosts[0]), lid(hosts[1]));
    let (mask, rec) = support::sa::path_query(Some(a), Some(b), None, None);
    let now = drv.now();
    let (status, data) = support::sa::through_core(&mut drv, now, a, (Method::Get, mask, 1), &rec);
    assert_eq!(status, 0, "PathRecord answered");
    (PathRecord::parse(&data).expect("PathRecord"), drv)
}

#[test]
fn xdr_links_are_read_with_sm_supports_extended_speeds_and_path_records_give_800_gbps() {
    // Ports that report XDR only to a read with AM bit 31: the SM reads them so, and a 4x XDR
    // path is 800 Gb/s (rate 23).
    for restart in [false, true] {
        let (pr, drv) = xdr_path(true, restart);
        assert_eq!(pr.rate.raw(), 23, "restart {restart}: {pr:?}");
        let s = drv.sm.subnet();
        let linked: Vec<_> =
            s.nodes.iter().flat_map(|n| n.ports.iter().skip(1)).filter(|p| p.remote.is_some()).collect();
        assert!(!linked.is_empty() && linked.iter().all(|p| p.info.is_some_and(|i| i.link_speed_ext_active2 == 1)));
    }
    // The same fabric without extended speeds 2: 4x SDR as before (10 Gb/s, rate 3).
    let (plain, _) = xdr_path(false, false);
    assert_eq!(plain.rate.raw(), 3, "{plain:?}");
}
