//! The SA snapshot a sweep takes is a patch of the last one (issue 28): the node records and
//! indexes that did not change are shared, not copied. Checked here on the 2-level k=4 fat
//! tree through a cable cut (a quick sweep), the cable back (a heavy sweep), a new partition
//! policy and a host crash: after each, the snapshot the SA answers from is the one a full
//! build gives (every record, every index), what did not change is shared with the snapshot
//! before, and a reader's snapshot is left as it was.

use std::sync::Arc;

use ibsm::core::{Guid2Lid, Sm, SmConfig, SmEvent};
use ibsm::sa::Snapshot;
use ibsm::sa::snapshot::SnapNode;
use ibsm::transport::sim::SimDriver;
use ibsm_mad::{Guid, Lid, PKey};
use ibsm_sim::fabric::Fault;

mod support;
use support::sa::{LIMIT, example};

/// Runs until the next sweep's report (the snapshot is taken before it).
fn next_sweep(drv: &mut SimDriver) {
    let limit = drv.now() + LIMIT;
    let up = drv.run_until(limit, |ev| matches!(ev, SmEvent::SubnetUp(_)));
    assert!(matches!(up, Some(SmEvent::SubnetUp(_))), "no sweep: {up:?}");
}

/// `patched` and `built` answer alike: the same records and the same indexes.
fn assert_same(patched: &Snapshot, built: &Snapshot) {
    assert!(patched.nodes == built.nodes, "the node records differ");
    assert_eq!(
        (patched.subnet_prefix, patched.lmc, patched.sm, patched.packet_life, patched.max_rate),
        (built.subnet_prefix, built.lmc, built.sm, built.packet_life, built.max_rate)
    );
    assert_eq!(patched.routing_engine, built.routing_engine);
    assert_eq!(patched.partitions, built.partitions);
    assert_eq!(patched.pkeys_revision, built.pkeys_revision);
    assert_eq!(patched.mcast_fdb_cap(), built.mcast_fdb_cap());
    for lid in 0..=u16::MAX {
        assert_eq!(patched.by_lid(Lid(lid)), built.by_lid(Lid(lid)), "LID {lid}");
    }
    for guid in built.nodes.iter().chain(patched.nodes.iter()).flat_map(|n| n.ports.iter().map(|p| p.guid)) {
        assert_eq!(patched.by_guid(guid), built.by_guid(guid), "GUID {guid:?}");
    }
    assert!(patched.end_ports().eq(built.end_ports()), "end ports in node order");
    assert!(patched.nodes_in_guid_order().eq(built.nodes_in_guid_order()));
    assert_eq!(patched.unrouted(), built.unrouted());
}

/// Node indexes whose record `a` and `b` share.
fn shared(a: &Snapshot, b: &Snapshot) -> Vec<usize> {
    (0..a.nodes.len().min(b.nodes.len()))
        .filter(|&i| matches!((a.nodes.shared(i), b.nodes.shared(i)), (Some(x), Some(y)) if Arc::ptr_eq(x, y)))
        .collect()
}

/// The snapshot the SA answers from, checked against a full build.
fn checked(drv: &SimDriver) -> Arc<Snapshot> {
    let snap = drv.sm.snapshot().expect("a snapshot");
    assert_same(&snap, &drv.sm.build_snapshot());
    snap
}

fn index_of(snap: &Snapshot, guid: Guid) -> usize {
    snap.nodes.iter().position(|n| n.info.node_guid == guid).expect("in the snapshot")
}

#[test]
fn each_sweep_patches_the_last_snapshot_and_answers_as_a_full_build() {
    let topo = example("fat-tree-2l-k4.net");
    let mut drv = SimDriver::new(&topo, 7, Sm::new(SmConfig::default(), Guid2Lid::default()), None).expect("attach");
    assert!(drv.sweep(LIMIT, |_| {}).expect("up").complete);
    let s0 = checked(&drv);
    // What a reader holding s0 sees, copied out.
    let held: Vec<SnapNode> = s0.nodes.iter().cloned().collect();

    // A trunk cable cut: a quick sweep. The hosts and the index are shared; both ends of the
    // cable are new records.
    let (spine, leaf) = (topo.find("spine-0").expect("spine"), topo.find("leaf-0").expect("leaf"));
    drv.fabric.inject_fault(Fault::LinkDown { node: spine, port: 1 });
    next_sweep(&mut drv);
    let s1 = checked(&drv);
    let kept = shared(&s0, &s1);
    let cas: Vec<usize> = (0..s1.nodes.len()).filter(|&i| !s1.nodes[i].is_switch()).collect();
    assert!(cas.iter().all(|i| kept.contains(i)), "every host shared: {kept:?}");
    let mut ends = Vec::new();
    for end in [spine, leaf] {
        let i = index_of(&s1, topo.nodes[end].node_guid);
        assert!(!kept.contains(&i), "{} changed: a new record", topo.nodes[end].name);
        assert!(!Arc::ptr_eq(&s0.nodes[i].ports, &s1.nodes[i].ports), "{}'s ports are new", topo.nodes[end].name);
        ends.push(i);
    }
    // The other switches whose record is new changed their forwarding table only (the
    // repair): their ports are the last record's, shared, not copied.
    let table_only: Vec<usize> =
        (0..s1.nodes.len()).filter(|i| s1.nodes[*i].is_switch() && !kept.contains(i) && !ends.contains(i)).collect();
    assert!(!table_only.is_empty(), "the repair changed another switch's table");
    for &i in &table_only {
        assert!(s0.nodes[i].table != s1.nodes[i].table, "switch {i}: a new record for a new table");
        assert!(Arc::ptr_eq(&s0.nodes[i].ports, &s1.nodes[i].ports), "switch {i}: its ports shared");
    }
    assert!(s1.shares_index_with(&s0), "no end port changed");
    assert!(s0.nodes.iter().eq(held.iter()), "the reader's snapshot is as it was");

    // The cable back: a heavy sweep, still answering as a full build.
    drv.fabric.inject_fault(Fault::LinkUp { node: spine, port: 1 });
    next_sweep(&mut drv);
    let s2 = checked(&drv);
    assert!(!shared(&s1, &s2).is_empty(), "records shared across a heavy sweep");

    // A new partition: the P_Key tables change under records that did not.
    let (h0, h1) = (topo.find("h0").expect("h0"), topo.find("h1").expect("h1"));
    let policy = format!(
        "Default=0x7fff, ipoib : ALL=full ;\nblue=0x0b0b : 0x{:016x}=full, 0x{:016x}=full ;\n",
        topo.nodes[h0].port_guid(1).0,
        topo.nodes[h1].port_guid(1).0
    );
    drv.sm.set_partitions(ibsm_partitions::parse_partitions_conf(&policy).expect("policy"));
    next_sweep(&mut drv);
    let s3 = checked(&drv);
    let at = s3.by_guid(topo.nodes[h0].port_guid(1)).expect("h0's port");
    let keys = &s3.port(at).expect("port").pkeys;
    assert!(keys.contains(&PKey(0x8b0b)), "h0 holds the new partition: {keys:?}");

    // A host gone: its end port leaves the index, which is built anew.
    let h5 = topo.find("h5").expect("h5");
    drv.fabric.inject_fault(Fault::Crash(h5));
    next_sweep(&mut drv);
    let s4 = checked(&drv);
    assert!(s4.by_guid(topo.nodes[h5].port_guid(1)).is_none(), "h5 is gone");
    assert!(!s4.shares_index_with(&s3));
}

/// One step of xorshift64: the test's choices, from its seed.
fn next(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// The snapshot the SA answers from, checked against a full build, and the subnet's book
/// counting from it (so the next snapshot compares only the nodes marked changed since).
fn checked_and_booked(drv: &SimDriver) -> Arc<Snapshot> {
    let snap = checked(drv);
    assert!(snap.subnet_mark != 0, "taken with a mark");
    assert!(
        drv.sm.subnet().nodes.changed_since(snap.subnet_mark).is_some(),
        "the subnet's book counts from the snapshot's mark"
    );
    snap
}

/// The fabric's parts the changes pick from, and what is cut or crashed.
struct Changes {
    topo: ibsm_topology::Topology,
    switches: Vec<usize>,
    hosts: Vec<usize>,
    /// Switch-to-switch cables by one end.
    trunks: Vec<(usize, u8)>,
    cut: Vec<(usize, u8)>,
    crashed: Vec<usize>,
}

impl Changes {
    fn new(topo: ibsm_topology::Topology) -> Changes {
        let is_switch = |i: usize| topo.nodes[i].kind == ibsm_topology::NodeKind::Switch;
        let switches: Vec<usize> = (0..topo.nodes.len()).filter(|&i| is_switch(i)).collect();
        let hosts: Vec<usize> = (0..topo.nodes.len()).filter(|&i| !is_switch(i)).collect();
        let trunks: Vec<(usize, u8)> = switches
            .iter()
            .flat_map(|&s| (1..=topo.nodes[s].num_ports).map(move |p| (s, p)))
            .filter(|&(s, p)| topo.nodes[s].peer(p).is_some_and(|peer| is_switch(peer.node) && peer.node > s))
            .collect();
        assert!(!trunks.is_empty());
        Changes { topo, switches, hosts, trunks, cut: Vec::new(), crashed: Vec::new() }
    }

    /// One change picked by `x`, carried out until the SA's snapshot shows it; `None` when
    /// the pick was not possible (nothing to restore, a cable already cut).
    fn apply(&mut self, drv: &mut SimDriver, x: &mut u64, tag: &str) -> Option<&'static str> {
        let pick = |x: &mut u64, n: usize| (next(x) % n as u64) as usize;
        let topo = &self.topo;
        Some(match pick(x, 7) {
            0 | 1 => {
                let t = self.trunks[pick(x, self.trunks.len())];
                if self.cut.contains(&t) {
                    return None;
                }
                self.cut.push(t);
                drv.fabric.inject_fault(Fault::LinkDown { node: t.0, port: t.1 });
                next_sweep(drv);
                "a cable cut"
            }
            2 => {
                if self.cut.is_empty() {
                    return None;
                }
                let t = self.cut.swap_remove(pick(x, self.cut.len()));
                drv.fabric.inject_fault(Fault::LinkUp { node: t.0, port: t.1 });
                next_sweep(drv);
                "a cable back"
            }
            3 => {
                // A new NodeDescription: trap 144, the read, the snapshot patched after the
                // quiet second, no sweep.
                let n = if pick(x, 2) == 0 {
                    self.switches[pick(x, self.switches.len())]
                } else {
                    self.hosts[pick(x, self.hosts.len())]
                };
                // Not reached (crashed, or cut off by the cables cut): nothing to show.
                let guid = topo.nodes[n].node_guid;
                if !drv.sm.snapshot().is_some_and(|s| s.nodes.iter().any(|r| r.info.node_guid == guid)) {
                    return None;
                }
                let text = format!("renamed {tag}");
                drv.fabric.set_node_desc(n, &text);
                let until = drv.now() + 3_000_000_000;
                drv.run_until(until, |_| false);
                let s = checked(drv);
                assert_eq!(s.nodes[index_of(&s, guid)].desc, text, "the SA shows it");
                "a NodeDescription"
            }
            4 => {
                let (a, b) = (self.hosts[pick(x, self.hosts.len())], self.hosts[pick(x, self.hosts.len())]);
                let policy = format!(
                    "Default=0x7fff, ipoib : ALL=full ;\np=0x{:04x} : 0x{:016x}=full, 0x{:016x}=limited ;\n",
                    0x100 + pick(x, 0x100),
                    topo.nodes[a].port_guid(1).0,
                    topo.nodes[b].port_guid(1).0
                );
                drv.sm.set_partitions(ibsm_partitions::parse_partitions_conf(&policy).expect("policy"));
                next_sweep(drv);
                "a partition policy"
            }
            5 => {
                let h = self.hosts[pick(x, self.hosts.len())];
                if let Some(i) = self.crashed.iter().position(|&c| c == h) {
                    self.crashed.swap_remove(i);
                    drv.fabric.inject_fault(Fault::Restart(h));
                } else {
                    self.crashed.push(h);
                    drv.fabric.inject_fault(Fault::Crash(h));
                }
                next_sweep(drv);
                "a host crash or restart"
            }
            _ => {
                if pick(x, 2) == 0 {
                    let mut cfg = SmConfig::default();
                    cfg.ports.hoq_life = 10 + u8::try_from(pick(x, 8)).expect("small");
                    let _ = drv.sm.reconfigure(cfg);
                } else {
                    drv.sm.request_sweep(ibsm::core::Requested::Reroute).expect("a master");
                }
                next_sweep(drv);
                "new port settings or a re-route"
            }
        })
    }
}

/// Issue 28: a snapshot after a sweep compares only the nodes the subnet marked changed since
/// the last one. Every change the snapshot shows must be marked, or the snapshot keeps the old
/// record: so after every change of each kind (a cable cut: a quick sweep; a cable back and a
/// host crash or restart: a heavy sweep; a NodeDescription read for trap 144, patched into the
/// snapshot between sweeps; a new partition policy; PortInfo Sets of new port settings; a
/// forced re-route) the snapshot the SA answers from must be the one a full build gives, on a
/// 3-level k=4 tree over seeded sequences of such changes. (Debug builds also assert, in the
/// build itself, that every node not marked is as the last snapshot shows it.)
#[test]
fn every_change_is_marked_and_the_marked_patch_answers_as_a_full_build() {
    let mut changes = Changes::new(example("fat-tree-3l-k4.net"));
    let (mut quick_compared, mut quick_sweeps, mut partial) = (0usize, 0usize, 0usize);
    for seed in 1..=5u64 {
        let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut drv = SimDriver::new(&changes.topo, seed, Sm::new(SmConfig::default(), Guid2Lid::default()), None)
            .expect("attach");
        assert!(drv.sweep(LIMIT, |_| {}).expect("up").complete);
        checked_and_booked(&drv);
        changes.cut.clear();
        changes.crashed.clear();
        for step in 0..10 {
            let quick_before = drv.sm.sweeps_done().1;
            let Some(why) = changes.apply(&mut drv, &mut x, &format!("{seed}.{step}")) else { continue };
            let s = checked_and_booked(&drv);
            if s.nodes_compared < s.nodes.len() {
                partial += 1;
            }
            if drv.sm.sweeps_done().1 > quick_before {
                quick_sweeps += 1;
                quick_compared += s.nodes_compared;
                assert!(
                    s.nodes_compared < s.nodes.len() / 2,
                    "seed {seed} step {step} ({why}): a quick sweep compared {} of {} nodes",
                    s.nodes_compared,
                    s.nodes.len()
                );
            }
        }
    }
    assert!(quick_sweeps > 0 && partial > 0, "the book was used: {quick_sweeps} quick sweeps, {partial} partial");
    eprintln!("{quick_sweeps} quick sweeps compared {quick_compared} nodes in all; {partial} snapshots partial");
}
