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
    for end in [spine, leaf] {
        let i = index_of(&s1, topo.nodes[end].node_guid);
        assert!(!kept.contains(&i), "{} changed: a new record", topo.nodes[end].name);
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
