//! A standby taking over a subnet whose QoS tables the old master wrote, on the simulated
//! fabric with two SMs: once with a QoS policy (a two-level fat tree) and once with dfsssp's
//! layers (a 3x3x3 torus, its SL2VL tables written through the default QoS setting). Synced,
//! the new master holds the old master's SL2VL and VLArbitration tables as written (the
//! `qos_tables` digests) and writes none of them; nor does it touch a switch port's PortInfo
//! (OperationalVLs and VLHighLimit are read from the ports, not rewritten). A switch restarted
//! just before the takeover holds its power-on tables: it gets all its tables again, and no
//! other node gets one. An SM that takes the subnet back with no sync from the master it
//! handed it to trusts none of its own old books: it writes every table again.

use ibsm::core::{Guid2Lid, QosSetting, Sm, SmConfig, SmEvent, SmState};
use ibsm::transport::sim::SimSms;
use ibsm_mad::ids::attr;
use ibsm_sim::fabric::Fault;
use ibsm_topology::{NodeKind, Topology};

mod support;
use support::sa::example;
use support::sms::{SECOND, Sent, cfg, hosts, qos_setting, run_takeover};

/// What the takeover did.
struct Takeover {
    /// QoS tables the old master wrote to bring the subnet up.
    full: u64,
    /// The new master's Sets from the kill until its subnet is up and a few seconds more.
    sent: Sent,
    /// Tables held on the restarted switch: by the old master, by the new one.
    held: (usize, usize),
    /// The routing engine the new master used.
    engine: Option<String>,
}

/// Brings `topo` up with an SM of config `config` (priority 9), starts a second (priority 5),
/// waits until it is synced, kills the master (and restarts switch `reset`, if any) and counts
/// what the new master sends until its subnet is up and 3 s more of virtual time.
fn takeover(topo: &Topology, config: &dyn Fn(u8) -> SmConfig, reset: Option<usize>) -> Takeover {
    let at = hosts(topo);
    let sms = vec![(Sm::new(config(9), Guid2Lid::default()), at[0]), (Sm::new(config(5), Guid2Lid::default()), at[1])];
    let mut h = SimSms::new(topo, 3, sms).expect("attach");
    let (master, standby) = (0, 1);
    h.start(master);
    h.run_until(60 * SECOND, |i, e| i == master && matches!(e, SmEvent::SubnetUp(r) if r.complete)).expect("up");
    h.start(standby);
    h.run_until(h.now() + 10 * SECOND, |i, e| i == standby && matches!(e, SmEvent::Standby { .. })).expect("standby");
    h.run_until(h.now() + 10 * SECOND, |i, e| i == master && matches!(e, SmEvent::SyncPeer { state: "current", .. }))
        .expect("the standby is current");
    assert!(h.sms[standby].sm.sync_status().current_at.is_some(), "the standby is current");
    let full = h.sms[master].sm.qos_tables_sent();
    assert_eq!(h.sms[standby].sm.qos_tables_sent(), 0, "a standby writes nothing");
    let guid = |n: usize| topo.nodes[n].node_guid;
    let held_before = reset.map_or(0, |n| h.sms[master].sm.qos_tables_held(guid(n)));
    let mut sent = vec![Sent::default(); 2];
    let died = h.now();
    h.kill(master);
    if let Some(n) = reset {
        h.fabric.inject_fault(Fault::Crash(n));
        h.fabric.inject_fault(Fault::Restart(n));
    }
    run_takeover(&mut h, standby, &mut sent, died);
    let held_after = reset.map_or(0, |n| h.sms[standby].sm.qos_tables_held(guid(n)));
    let engine = h.sms[standby].sm.routing_engine_used().map(str::to_owned);
    Takeover { full, sent: sent.swap_remove(standby), held: (held_before, held_after), engine }
}

fn sets(t: &Takeover, a: u16) -> u64 {
    t.sent.sets_by_attr.get(&a).copied().unwrap_or(0)
}

/// End ports of `topo`: every CA port cabled, and every switch's port 0.
fn end_ports(topo: &Topology) -> u64 {
    topo.nodes
        .iter()
        .map(|n| match n.kind {
            NodeKind::Switch => 1,
            _ => (1..=n.num_ports).filter(|&p| n.peer(p).is_some()).count() as u64,
        })
        .sum()
}

/// Runs the takeover with and without a restarted `switch`, and checks both.
fn judge(name: &str, topo: &Topology, config: &dyn Fn(u8) -> SmConfig, engine: Option<&str>) {
    let switch = far_switch(topo);
    let t = takeover(topo, config, None);
    if engine.is_some() {
        assert_eq!(t.engine.as_deref(), engine, "{name}: the engine that routed");
    }
    eprintln!(
        "{name}: full set {} QoS tables; at the takeover {} SL2VL and {} VLArb Sets, {} PortInfo Sets",
        t.full,
        sets(&t, attr::SL2VL_TABLE),
        sets(&t, attr::VL_ARB_TABLE),
        sets(&t, attr::PORT_INFO)
    );
    assert!(t.full > 0, "{name}: the old master wrote QoS tables");
    assert_eq!(sets(&t, attr::SL2VL_TABLE), 0, "{name}: SL2VL tables written at the takeover");
    assert_eq!(sets(&t, attr::VL_ARB_TABLE), 0, "{name}: VLArb blocks written at the takeover");
    // MasterSMLID changes on end ports only: no switch external port's PortInfo (its
    // OperationalVLs, VLHighLimit) is written.
    assert!(sets(&t, attr::PORT_INFO) <= end_ports(topo), "{name}: {:?}", t.sent.sets_by_attr);

    let t = takeover(topo, config, Some(switch));
    let (before, after) = t.held;
    let written = sets(&t, attr::SL2VL_TABLE) + sets(&t, attr::VL_ARB_TABLE);
    eprintln!("{name}, a switch restarted: {written} QoS Sets at the takeover, {before} tables held on it before");
    assert!(before > 0, "{name}: the old master wrote tables to the switch");
    assert_eq!(after, before, "{name}: the restarted switch holds its tables again");
    assert_eq!(written, before as u64, "{name}: its tables, all of them, once");
    let routes: std::collections::BTreeSet<&String> =
        [attr::SL2VL_TABLE, attr::VL_ARB_TABLE].iter().filter_map(|a| t.sent.set_routes.get(a)).flatten().collect();
    assert_eq!(routes.len(), 1, "{name}: QoS Sets to one switch only: {routes:?}");
}

/// A switch none of whose ports leads to the SMs' hosts.
fn far_switch(topo: &Topology) -> usize {
    let sm_hosts: Vec<usize> = hosts(topo).iter().take(2).map(|h| h.0).collect();
    (0..topo.nodes.len())
        .find(|&n| {
            topo.nodes[n].kind == NodeKind::Switch
                && (1..=topo.nodes[n].num_ports)
                    .all(|p| topo.nodes[n].peer(p).is_none_or(|q| !sm_hosts.contains(&q.node)))
        })
        .expect("a switch away from the SMs")
}

#[test]
fn a_standby_adopts_the_qos_policy_tables_and_rewrites_only_a_restarted_switch() {
    let topo = example("fat-tree-2l-k4.net");
    let config = |priority| SmConfig { qos: Some(qos_setting()), ..cfg(priority, 7) };
    judge("qos policy", &topo, &config, None);
}

#[test]
fn a_standby_adopts_dfsssp_layer_tables_and_rewrites_only_a_restarted_switch() {
    let topo = ibsm_topology::GenSpec::torus(&[3, 3, 3], 1).generate().expect("torus");
    let config = |priority| SmConfig { routing_engine: vec!["dfsssp".into(), "updn".into()], ..cfg(priority, 7) };
    judge("dfsssp torus", &topo, &config, Some("dfsssp"));
}

/// An SM that wrote the tables, handed the subnet over and takes it back without a sync from
/// the master in between knows nothing of what that master wrote: it writes every table again
/// (what it wrote itself may have been overwritten since), rather than trusting its own old
/// books.
#[test]
fn an_sm_taking_the_subnet_back_unsynced_writes_its_tables_again() {
    let topo = example("fat-tree-2l-k4.net");
    let mut options = qos_setting().options;
    options.set_opensm("qos_ca_vlarb_low", "0:16,1:16").expect("valid");
    let other = QosSetting { options, ..qos_setting() };
    let at = hosts(&topo);
    let sms = vec![
        (Sm::new(SmConfig { qos: Some(qos_setting()), ..cfg(5, 7) }, Guid2Lid::default()), at[0]),
        (Sm::new(SmConfig { qos: Some(other), ..cfg(9, 7) }, Guid2Lid::default()), at[1]),
    ];
    let mut h = SimSms::new(&topo, 3, sms).expect("attach");
    h.start(0);
    h.run_until(60 * SECOND, |i, e| i == 0 && matches!(e, SmEvent::SubnetUp(r) if r.complete)).expect("up");
    let full = h.sms[0].sm.qos_tables_sent();
    // SM 1 is better: SM 0 hands it the subnet; SM 1 writes its own arbitration blocks and
    // dies at the end of that sweep, before it has synced SM 0.
    h.start(1);
    h.run_until(h.now() + 30 * SECOND, |i, e| i == 1 && matches!(e, SmEvent::SubnetUp(r) if r.complete))
        .expect("SM 1 master");
    assert!(h.sms[1].sm.qos_tables_sent() > 0, "SM 1 wrote its arbitration blocks");
    assert_eq!(h.sms[0].sm.state(), SmState::Standby);
    let died = h.now();
    h.kill(1);
    let mut sent = vec![Sent::default(); 2];
    run_takeover(&mut h, 0, &mut sent, died);
    assert_eq!(h.sms[0].sm.sync_status().current_at, None, "SM 0 took over unsynced");
    let written = h.sms[0].sm.qos_tables_sent() - full;
    assert_eq!(written, full, "every table written again ({:?})", sent[0].sets_by_attr);
}
