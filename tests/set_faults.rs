//! FT2 for the Sets besides PortInfo: a switch whose SMA refuses its SwitchInfo or
//! MulticastForwardingTable Sets, or an HCA that refuses its P_Key table Set (the simulator's
//! [`SetFault`]: an error status, or no answer at all). The SM retries what got no answer and
//! reports the failure. For the sweep's Sets (SwitchInfo, P_Key table) the sweep is reported
//! incomplete with the node named, each repair sweep sends the Set again while the fault lasts
//! (the refused table is not taken as written), and once the node takes Sets again a repair
//! writes it: read back from the node, it holds what the SM wanted. MFT blocks are written
//! between sweeps: a refused one is reported (SmpFailed) and forgotten, not taken as written;
//! that it is written again once the switch takes Sets is asserted by an ignored test, as the
//! core schedules nothing after such a failure today (issue 23).

use ibsm::core::{Guid2Lid, Sm, SmConfig, SmEvent, SubnetReport};
use ibsm::transport::sim::SimDriver;
use ibsm_mad::attrs::{MulticastForwardingTable, PKeyTable, SwitchInfo};
use ibsm_mad::header::Method;
use ibsm_mad::records::{JoinState, McMemberRecord};
use ibsm_mad::{Attribute, DrPath, Gid, ids};
use ibsm_sim::fabric::{Fault, SetFault};

mod support;
use support::sa::{LIMIT, PREFIX, dr_get, example, through_core};

fn next_report(drv: &mut SimDriver) -> SubnetReport {
    let limit = drv.now() + LIMIT;
    match drv.run_until(limit, |ev| matches!(ev, SmEvent::SubnetUp(_))) {
        Some(SmEvent::SubnetUp(r)) => r,
        other => panic!("no report: {other:?}"),
    }
}

/// Runs one case on the 2-level k = 4 fat tree: `victim` refuses Sets of `attr` (with
/// `status`, or silently) from the first sweep on; `written` reads the node back and says
/// whether it holds what the SM wanted. Returns how many Sets the node refused.
fn refused_then_written(
    attr: u16,
    victim: &str,
    status: Option<u16>,
    cfg: SmConfig,
    written: impl Fn(&mut SimDriver, &DrPath) -> bool,
) -> u64 {
    let topo = example("fat-tree-2l-k4.net");
    let node = topo.find(victim).expect("victim");
    let mut drv = SimDriver::new(&topo, 41, Sm::new(cfg, Guid2Lid::default()), None).expect("attach");
    drv.fabric.inject_fault(Fault::FailSets(SetFault { node: Some(node), attr, status }));
    let what = format!("attr {attr:#06x} at {victim}, status {status:?}");

    let first = drv.sweep(LIMIT, |_| {}).expect("a report");
    let refused = drv.fabric.stats().sets_refused_by_fault;
    assert!(refused > 0, "{what}: the sweep sends the Set");
    if status.is_none() {
        assert!(refused >= 2, "{what}: a Set without an answer is retried ({refused} sent)");
    }
    assert!(!first.complete && first.smps_failed > 0, "{what}: reported: {first:?}");
    let names: Vec<&str> = first.failed_nodes.iter().map(|b| b.desc.as_str()).collect();
    assert_eq!(names, [victim], "{what}: the report names the node");

    // While the fault lasts each repair sweep sends the Set again: not taken as written.
    let again = next_report(&mut drv);
    assert!(!again.complete, "{what}: {again:?}");
    assert!(drv.fabric.stats().sets_refused_by_fault > refused, "{what}: the repair sends the Set again");
    let path =
        drv.sm.subnet().nodes.iter().find(|n| n.info.node_guid == topo.nodes[node].node_guid).expect("found").path;
    assert!(!written(&mut drv, &path), "{what}: the node does not hold it yet");

    // The node takes Sets again: the next repair writes it.
    drv.fabric.inject_fault(Fault::ClearSetFaults);
    let mut report = next_report(&mut drv);
    for _ in 0..3 {
        if report.complete {
            break;
        }
        report = next_report(&mut drv);
    }
    assert!(report.complete && report.failed_nodes.is_empty(), "{what}: {report:?}");
    assert!(written(&mut drv, &path), "{what}: the node holds what the SM wanted");
    drv.fabric.stats().sets_refused_by_fault
}

/// The ports in the broadcast group's (MLID 0xC000) MFT entry at the node at `path`.
fn broadcast_ports(drv: &mut SimDriver, path: &DrPath) -> u16 {
    let data = dr_get(drv, path, ids::attr::MFT, 0).expect("MFT block 0 answered");
    MulticastForwardingTable::parse(&data).expect("MFT").masks[0].0
}

/// The MFT case up to the refusal, on the 2-level k = 4 tree: the sweep (which sends no MFT
/// block), two hosts under leaf-0 and leaf-1 joining the IPoIB broadcast group (MLID 0xC000),
/// and leaf-0 refusing the MFT Sets that follow (with `status`, or silently). Checks that the
/// refusal is retried when unanswered, reported (SmpFailed), and not taken as written, while
/// leaf-1 is written. Returns the driver, leaf-0's GUID and route, and the Sets refused.
fn mft_refused(status: Option<u16>) -> (SimDriver, ibsm_mad::Guid, DrPath, u64) {
    let what = format!("MFT at leaf-0, status {status:?}");
    let topo = example("fat-tree-2l-k4.net");
    let victim = topo.find("leaf-0").expect("leaf-0");
    let guid = topo.nodes[victim].node_guid;
    let mut drv = SimDriver::new(&topo, 41, Sm::new(SmConfig::default(), Guid2Lid::default()), None).expect("attach");
    drv.fabric.inject_fault(Fault::FailSets(SetFault { node: Some(victim), attr: ids::attr::MFT, status }));
    assert!(drv.sweep(LIMIT, |_| {}).expect("a report").complete, "{what}: the sweep sends no MFT block");
    let join = McMemberRecord::COMP_MGID | McMemberRecord::COMP_PORT_GID | McMemberRecord::COMP_JOIN_STATE;
    let now = drv.now();
    for h in ["h0", "h2"] {
        let port = topo.nodes[topo.find(h).expect("host")].port_guid(1);
        let lid = drv.sm.guid2lid().get(port).expect("LID").0;
        let r = McMemberRecord {
            mgid: ibsm::sa::multicast::IPOIB_BROADCAST,
            port_gid: Gid { prefix: PREFIX, guid: port },
            join_state: JoinState::FULL_MEMBER,
            ..McMemberRecord::default()
        };
        assert_eq!(
            through_core(&mut drv, now, lid, (Method::Set, join, 0), &r).0,
            ids::status::OK,
            "{what}: {h} joins"
        );
    }
    let path = drv.sm.subnet().nodes.iter().find(|n| n.info.node_guid == guid).expect("found").path;
    let limit = drv.now() + LIMIT;
    let failed = drv
        .run_until(limit, |ev| matches!(ev, SmEvent::SmpFailed { attr_id: ids::attr::MFT, path: p, .. } if *p == path));
    assert!(failed.is_some(), "{what}: the failure is reported");
    let refused = drv.fabric.stats().sets_refused_by_fault;
    if status.is_none() {
        assert!(refused >= 2, "{what}: a Set without an answer is retried ({refused} sent)");
    }
    let believed = drv.sm.programmed_mft(guid, ibsm_mad::Lid(0xc000));
    assert!(believed.as_ref().is_none_or(Vec::is_empty), "{what}: not taken as written: {believed:?}");
    assert_eq!(broadcast_ports(&mut drv, &path), 0, "{what}: the switch holds nothing");
    let leaf1 = topo.nodes[topo.find("leaf-1").expect("leaf-1")].node_guid;
    assert!(drv.sm.programmed_mft(leaf1, ibsm_mad::Lid(0xc000)).is_some_and(|p| !p.is_empty()), "{what}: leaf-1");
    (drv, guid, path, refused)
}

#[test]
fn a_refused_mft_set_is_retried_reported_and_not_taken_as_written() {
    // Multicast programming runs between sweeps, for the SA's groups with members; its
    // failures are reported as they happen (SmpFailed) and the block is forgotten.
    for status in [None, Some(ids::status::BAD_FIELD)] {
        let (_, _, _, refused) = mft_refused(status);
        eprintln!("MFT at leaf-0, status {status:?}: {refused} Sets refused, reported, not taken as written");
    }
}

#[test]
fn a_refused_mft_block_is_written_once_the_switch_takes_sets_again() {
    for status in [None, Some(ids::status::BAD_FIELD)] {
        let what = format!("MFT at leaf-0, status {status:?}");
        let (mut drv, guid, path, _) = mft_refused(status);
        drv.fabric.inject_fault(Fault::ClearSetFaults);
        let limit = drv.now() + LIMIT;
        drv.run_until(limit, |_| false);
        let held = drv.sm.programmed_mft(guid, ibsm_mad::Lid(0xc000));
        assert!(held.as_ref().is_some_and(|p| !p.is_empty()), "{what}: written once the switch takes Sets: {held:?}");
        let want: u16 = held.iter().flatten().fold(0, |m, &p| m | (1 << p));
        assert_eq!(broadcast_ports(&mut drv, &path), want, "{what}: the switch holds what the SM wrote");
    }
}

#[test]
fn a_refused_switch_info_set_is_reported_and_written_once_the_switch_takes_it() {
    for status in [None, Some(ids::status::BAD_FIELD)] {
        let n = refused_then_written(ids::attr::SWITCH_INFO, "spine-1", status, SmConfig::default(), |drv, path| {
            let data = dr_get(drv, path, ids::attr::SWITCH_INFO, 0).expect("SwitchInfo answered");
            SwitchInfo::parse(&data).expect("SwitchInfo").linear_fdb_top.0 != 0
        });
        eprintln!("SwitchInfo at spine-1, status {status:?}: {n} Sets refused before it was written");
    }
}

#[test]
fn a_refused_p_key_table_set_is_reported_and_written_once_the_port_takes_it() {
    let policy = ibsm_partitions::parse_partitions_conf("Default=0x7fff : ALL=full ;\nalpha=0x0001 : ALL_CAS=full ;\n")
        .expect("policy");
    for status in [None, Some(ids::status::BAD_FIELD)] {
        let cfg = SmConfig { partitions: policy.clone(), ..SmConfig::default() };
        let n = refused_then_written(ids::attr::PKEY_TABLE, "h5", status, cfg, |drv, path| {
            let data = dr_get(drv, path, ids::attr::PKEY_TABLE, 0).expect("P_Key table answered");
            PKeyTable::parse(&data).expect("P_Key table").keys.iter().any(|k| k.0 == 0x8001)
        });
        eprintln!("P_Key table at h5, status {status:?}: {n} Sets refused before it was written");
    }
}
