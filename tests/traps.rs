//! The trap policy end to end on the simulated fabric: both ends of a pulled cable cost one
//! routing (a quick sweep, no rediscovery); a renamed host is read again without a sweep; traps 129–131 mark a port
//! unhealthy; identical traps past the threshold are dropped; a flapping link cannot keep the
//! SM sweeping, and the fabric still ends up routed right.

use ibsm::core::traps::{DUPLICATE_LIMIT, SWEEP_BURST, TrapAction};
use ibsm::core::{Guid2Lid, Sm, SmConfig, SmEvent};
use ibsm::transport::sim::SimDriver;
use ibsm_mad::attrs::{Notice, NoticeDetails, NoticeType, ProducerType};
use ibsm_mad::header::Method;
use ibsm_mad::{Attribute, Lid, PortNum, ids};
use ibsm_sim::fabric::{AgentId, Dest, Fault};
use ibsm_topology::{NodeKind, Topology};

fn k8() -> Topology {
    ibsm_topology::GenSpec::fat_tree(3, 8).generate().expect("fabric")
}

fn up(topo: &Topology) -> SimDriver {
    let mut drv = SimDriver::new(topo, 5, Sm::new(SmConfig::default(), Guid2Lid::default()), None).expect("sim");
    drv.sweep(600_000_000_000, |_| {}).expect("up");
    drv
}

/// Runs `ms` of virtual time; the heavy sweeps that completed and the trap actions seen.
fn run_ms(drv: &mut SimDriver, ms: u64) -> (usize, Vec<TrapAction>) {
    let (mut sweeps, mut actions) = (0, Vec::new());
    drv.run_until(drv.now() + ms * 1_000_000, |e| {
        match e {
            SmEvent::SubnetUp(_) => sweeps += 1,
            SmEvent::TrapReceived { action, .. } => actions.push(*action),
            _ => {}
        }
        false
    });
    (sweeps, actions)
}

fn node(topo: &Topology, name: &str) -> usize {
    topo.nodes.iter().position(|n| n.name == name).expect(name)
}

/// A second host on the fabric that sends traps to the SM, and the LIDs of both.
fn probe(topo: &Topology, drv: &mut SimDriver) -> (AgentId, Lid, Lid) {
    let sm_lid = drv.sm.last_report().expect("report").sm_lid;
    let host = topo.nodes.iter().rposition(|n| n.kind == NodeKind::Ca).expect("a host");
    let agent = drv.fabric.attach(host, 1).expect("attach");
    let snap = drv.sm.snapshot().expect("snapshot");
    let at = snap.by_guid(topo.nodes[host].port_guid(1)).expect("known");
    (agent, snap.port(at).expect("port").lid, sm_lid)
}

fn send_trap(drv: &mut SimDriver, (agent, lid, sm_lid): (AgentId, Lid, Lid), details: NoticeDetails, tid: u64) {
    let notice = Notice::generic(NoticeType::Urgent, ProducerType::Ca, lid, details).expect("generic");
    let mut full = [0u8; 80];
    notice.emit(&mut full);
    let mut data = [0u8; 64];
    data.copy_from_slice(&full[..64]);
    let smp = ibsm_mad::smp::SmpRepr::set_lid(ids::attr::NOTICE, 0, tid, data).with_method(Method::Trap);
    drv.fabric.send(agent, &smp.to_bytes(), Dest { dlid: sm_lid, qpn: 0 });
}

/// A cable between two switches neither of which routes the SM's LID through it (so that the
/// traps of both ends reach the SM).
fn cable_off_the_sm_routes(t: &Topology, drv: &SimDriver) -> (usize, u8) {
    let snap = drv.sm.snapshot().expect("snapshot");
    let sm = usize::from(drv.sm.last_report().expect("report").sm_lid.0);
    let out = |n: usize| -> Option<u8> {
        let at = snap.by_guid(t.nodes[n].port_guid(0))?;
        snap.node(at.0)?.lft().entry(sm).map(|p| p.0)
    };
    for (a, n) in t.nodes.iter().enumerate().filter(|(_, n)| n.kind == NodeKind::Switch) {
        for pa in 1..=n.num_ports {
            let Some(peer) = n.peer(pa) else { continue };
            if t.nodes[peer.node].kind == NodeKind::Switch && out(a) != Some(pa) && out(peer.node) != Some(peer.port) {
                return (a, pa);
            }
        }
    }
    panic!("no such cable");
}

#[test]
fn both_ends_of_a_pulled_cable_cost_one_routing() {
    let t = k8();
    let mut drv = up(&t);
    let (sw, port) = cable_off_the_sm_routes(&t, &drv);
    drv.fabric.inject_fault(Fault::LinkDown { node: sw, port });
    let (sweeps, actions) = run_ms(&mut drv, 5_000);
    // The two ends' traps come together and are looked into together: one quick sweep reads
    // both switches' ports, drops the cable and reroutes.
    assert_eq!(actions, vec![TrapAction::Sweep, TrapAction::Sweep], "a trap from each end");
    assert_eq!(sweeps, 1);
    assert_eq!(drv.sm.trap_book().counters.coalesced, 1);
    assert!(drv.fabric.check_routes().ok());
    // Both switches' PortStateChange are clear: the light sweeps that follow find nothing.
    let light = drv.sm.light_sweeps();
    let (sweeps, _) = run_ms(&mut drv, 15_000);
    assert_eq!((sweeps, drv.sm.light_sweeps() > light), (0, true));
    // And back: a heavy sweep (a port come up needs discovery), again for both traps.
    drv.fabric.inject_fault(Fault::LinkUp { node: sw, port });
    let (sweeps, _) = run_ms(&mut drv, 5_000);
    assert_eq!(sweeps, 1);
    assert_eq!(drv.sm.trap_book().counters.coalesced, 2);
    assert!(drv.fabric.check_routes().ok());
}

#[test]
fn a_renamed_host_is_read_again_without_a_sweep() {
    let t = k8();
    let mut drv = up(&t);
    let host = t.nodes.iter().position(|n| n.kind == NodeKind::Ca && n.name != t.nodes[drv.at.0].name).expect("host");
    let before = drv.fabric.stats().sma_answered;
    drv.fabric.set_node_desc(host, "node042 mlx5_0");
    let (sweeps, actions) = run_ms(&mut drv, 3_000);
    assert_eq!((sweeps, actions), (0, vec![TrapAction::NodeDescription]));
    assert_eq!(drv.fabric.stats().sma_answered - before, 1, "one NodeDescription read");
    let snap = drv.sm.snapshot().expect("snapshot");
    let n = snap.nodes.iter().find(|n| n.info.node_guid == t.nodes[host].node_guid).expect("in the snapshot");
    assert_eq!(n.desc, "node042 mlx5_0", "the SA's NodeRecords show the new name");
}

#[test]
fn traps_129_to_131_mark_a_port_unhealthy_and_duplicates_past_the_threshold_are_dropped() {
    let t = k8();
    let mut drv = up(&t);
    let p = probe(&t, &mut drv);
    for i in 0..8 {
        send_trap(&mut drv, p, NoticeDetails::PortHealth { trap: 129, lid: p.1, port: PortNum(1) }, 100 + i);
        let (sweeps, _) = run_ms(&mut drv, 10);
        assert_eq!(sweeps, 0);
    }
    send_trap(&mut drv, p, NoticeDetails::PortHealth { trap: 131, lid: p.1, port: PortNum(1) }, 200);
    run_ms(&mut drv, 10);
    let book = drv.sm.trap_book();
    assert_eq!(book.counters.suppressed, 8 - u64::from(DUPLICATE_LIMIT));
    assert_eq!(book.unhealthy.len(), 1);
    let u = book.unhealthy.values().next().expect("one port");
    assert_eq!((u.trap, u.count), (131, u64::from(DUPLICATE_LIMIT) + 1));
    let status = ibsm::daemon::control::status(&drv.sm);
    assert_eq!(status.traps.unhealthy_ports.len(), 1);
    assert_eq!(status.traps.received.get("129"), Some(&8));
}

#[test]
fn a_flapping_link_is_rate_limited_and_still_converges() {
    let t = k8();
    let mut drv = up(&t);
    let agg = node(&t, "agg-3");
    // A cable that flaps every 300 ms for 6 s.
    let (mut sweeps, mut deferred) = (0, 0);
    for i in 0..20 {
        let f = if i % 2 == 0 { Fault::LinkDown { node: agg, port: 6 } } else { Fault::LinkUp { node: agg, port: 6 } };
        drv.fabric.inject_fault(f);
        let (s, a) = run_ms(&mut drv, 300);
        sweeps += s;
        deferred += a.iter().filter(|x| **x == TrapAction::Deferred).count();
    }
    // At most the burst, then one per refill interval (2 s) over the 6 s, plus the one the
    // last deferral brings.
    eprintln!("flapping: {sweeps} sweeps, {deferred} deferred");
    assert!(sweeps <= SWEEP_BURST as usize + 4, "{sweeps} heavy sweeps");
    assert!(deferred > 0);
    // The cable ends up; once quiet, the SM catches up and every pair routes.
    let (s, _) = run_ms(&mut drv, 15_000);
    assert!(s >= 1, "the deferred sweep ran");
    assert!(drv.fabric.check_routes().ok(), "{:?}", drv.fabric.check_routes());
}

/// The entries of switch `node`'s table (as the SM's snapshot holds it) that use `port`.
fn routed_over(drv: &SimDriver, t: &Topology, node: usize, port: u8) -> usize {
    let snap = drv.sm.snapshot().expect("snapshot");
    let at = snap.by_guid(t.nodes[node].port_guid(0)).expect("switch");
    let lft = snap.node(at.0).expect("node").lft();
    lft.iter().filter(|p| p.0 == port).count()
}

#[test]
fn a_cut_cable_is_handled_by_a_quick_sweep_without_rediscovery() {
    let t = k8();
    // Two cables: one away from the SM's routes, and the first uplink of the SM's own leaf
    // (the directed routes of half the fabric cross it, so they must be worked out again).
    let first = {
        let drv = up(&t);
        cable_off_the_sm_routes(&t, &drv)
    };
    let sm_leaf = t.nodes[t.first_cabled_ca_port().expect("host").0].peer(1).expect("cabled").node;
    let uplink = (1..=t.nodes[sm_leaf].num_ports)
        .find(|&p| t.nodes[sm_leaf].peer(p).is_some_and(|q| t.nodes[q.node].kind == NodeKind::Switch))
        .expect("an uplink");
    for (sw, port) in [first, (sm_leaf, uplink)] {
        let mut drv = up(&t);
        let full_sweep_smps = drv.sm.last_report().expect("report").smps_sent;
        drv.fabric.inject_fault(Fault::LinkDown { node: sw, port });
        let (sweeps, _) = run_ms(&mut drv, 5_000);
        let r = drv.sm.last_report().expect("report").clone();
        assert_eq!(sweeps, 1, "{}[{port}]", t.nodes[sw].name);
        assert!(r.complete, "{r:?}");
        assert!(matches!(r.routing_mode, ibsm::core::lft::RouteMode::Repaired { .. }), "{r:?}");
        // The switch's ports, the PortStateChange clear and the LFT blocks: no rediscovery.
        assert!(r.smps_sent < full_sweep_smps / 10, "{} SMPs (a heavy sweep: {full_sweep_smps})", r.smps_sent);
        assert_eq!(r.links, 383);
        let peer = t.nodes[sw].peer(port).expect("peer");
        assert_eq!(routed_over(&drv, &t, sw, port) + routed_over(&drv, &t, peer.node, peer.port), 0);
        assert!(drv.fabric.check_routes().ok());
        // The cable back: a port come up needs discovery, so a heavy sweep, and the tables of
        // before.
        drv.fabric.inject_fault(Fault::LinkUp { node: sw, port });
        run_ms(&mut drv, 5_000);
        let back = drv.sm.last_report().expect("report");
        assert_eq!((back.links, back.complete), (384, true));
        assert_eq!(back.routing_mode, ibsm::core::lft::RouteMode::Reused);
        assert!(drv.fabric.check_routes().ok());
    }
}

#[test]
fn every_trap_a_node_sends_is_repressed_at_that_node_with_its_tid() {
    // FT1: the SM answers each trap with a TrapRepress to the issuer carrying the trap's TID
    // (and, on a keyed fabric, the issuer's M_Key, so that the repress is not refused). The
    // simulator logs the traps its nodes send and the represses that pass their M_Key check.
    // Traps here: 128 from a leaf whose host cable goes down and up, 144 from a renamed host
    // and from a renamed switch. (A trap whose repress is routed over the cable that just went
    // down is lost with it; hardware repeats an unrepressed trap, the simulator does not.)
    use ibsm::core::mkeys::{MKeyConfig, MKeyMode, MKeySecret};
    let topo = ibsm_topology::GenSpec::fat_tree(2, 4).generate().expect("fabric");
    for protect in [None, Some(0u8), Some(2)] {
        let m_key = protect.map_or_else(MKeyConfig::default, |protect| MKeyConfig {
            mode: MKeyMode::PerPort,
            protect,
            lease_s: 60,
            secret: MKeySecret([9; 16]),
        });
        let cfg = SmConfig { m_key, ..SmConfig::default() };
        let mut drv = SimDriver::new(&topo, 5, Sm::new(cfg, Guid2Lid::default()), None).expect("sim");
        drv.sweep(600_000_000_000, |_| {}).expect("up");
        let before = drv.fabric.stats();
        let logged = drv.fabric.traps().count();
        // The last host (not the SM's) loses its cable and gets it back: trap 128 from its leaf.
        let host = topo.nodes.iter().rposition(|n| n.kind == NodeKind::Ca).expect("a host");
        let leaf = topo.nodes[host].peer(1).expect("cabled").node;
        drv.fabric.inject_fault(Fault::LinkDown { node: host, port: 1 });
        run_ms(&mut drv, 500);
        drv.fabric.inject_fault(Fault::LinkUp { node: host, port: 1 });
        run_ms(&mut drv, 500);
        // Renamed: a host (trap 144 from its port) and the leaf (from its port 0).
        drv.fabric.set_node_desc(host - 1, "renamed-host");
        drv.fabric.set_node_desc(leaf, "renamed-leaf");
        run_ms(&mut drv, 500);
        let after = drv.fabric.stats();
        let traps: Vec<_> = drv.fabric.traps().skip(logged).copied().collect();
        let what = format!("protect {protect:?}");
        let count = |n: u16| traps.iter().filter(|t| t.number == n).count();
        assert!(count(128) >= 2 && count(144) >= 2, "{what}: {traps:?}");
        for t in &traps {
            let at =
                t.repressed_at.unwrap_or_else(|| panic!("{what}: trap {} of node {} not repressed", t.number, t.node));
            assert!(at.0 - t.sent_at.0 < 100_000_000, "{what}: repressed {} ns after it was sent", at.0 - t.sent_at.0);
        }
        assert_eq!(after.trap_represses - before.trap_represses, traps.len() as u64, "{what}: one repress each");
        assert_eq!(after.trap_represses_unmatched, before.trap_represses_unmatched, "{what}: none for a trap not sent");
        assert_eq!(after.dropped_mkey, before.dropped_mkey, "{what}: no repress refused for its M_Key");
        eprintln!(
            "{what}: {} traps ({} of 128, {} of 144), each repressed at its issuer with its TID",
            traps.len(),
            count(128),
            count(144)
        );
    }
}
