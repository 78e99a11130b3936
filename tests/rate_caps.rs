//! `max-rate-enum` (OpenSM's `max_rate_enum`) on the simulated fabric: with every port at 4x XDR
//! (800 Gb/s, rate code 23), the SA's PathRecords, MultiPathRecords and the groups a join
//! creates carry the rate OpenSM reduces 23 to under each limit, and 23 without one. The
//! reduction itself is checked code by code in `mad/src/records/params.rs`; the comparison with
//! OpenSM under ibsim is `tests/ibsim_rate_caps.rs`.

use std::path::Path;

use ibsm::core::{Guid2Lid, Sm, SmConfig};
use ibsm::transport::sim::SimDriver;
use ibsm_mad::header::Method;
use ibsm_mad::ids::status;
use ibsm_mad::records::{JoinState, McMemberRecord, MultiPathRecord, PathRecord};
use ibsm_mad::{Attribute, Gid, Guid, Lid, PKey};
use ibsm_sim::fabric::SimConfig;
use ibsm_topology::{NodeKind, Topology};

mod support;
use support::sa::{MC_CREATE, PREFIX, path_query, through_core};

const LIMIT: u64 = 600_000_000_000;

/// The fabric at 4x XDR brought up by an SM with `max_rate_enum`; the LIDs of two hosts and
/// the first one's port GUID.
fn up(max_rate_enum: Option<u8>) -> (SimDriver, Lid, Lid, Guid) {
    let topo = Topology::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fabrics/fat-tree-2l-k4.net"))
        .expect("net");
    let cfg = SmConfig { max_rate_enum, ..SmConfig::default() };
    let sim = SimConfig { seed: 4, xdr: true, ..SimConfig::default() };
    let mut drv = SimDriver::with_config(&topo, sim, Sm::new(cfg, Guid2Lid::default()), None).expect("attach");
    assert!(drv.sweep(LIMIT, |_| {}).expect("up").complete);
    let hosts: Vec<Guid> = topo.nodes.iter().filter(|n| n.kind == NodeKind::Ca).map(|n| n.port_guid(1)).collect();
    let lid = |g: Guid| drv.sm.guid2lid().get(g).expect("LID").0;
    let (a, b) = (lid(hosts[2]), lid(hosts[5]));
    (drv, a, b, hosts[2])
}

/// The rates the SA gives: a PathRecord, a MultiPathRecord's first path, a group created.
fn rates(max_rate_enum: Option<u8>) -> [u8; 3] {
    let (mut drv, a, b, guid) = up(max_rate_enum);
    let (mask, rec) = path_query(Some(a), Some(b), None, None);
    let now = drv.now();
    let (st, data) = through_core(&mut drv, now, a, (Method::Get, mask, 0), &rec);
    assert_eq!(st, status::OK);
    let pr = PathRecord::parse(&data).expect("PathRecord");
    let gid = |lid: Lid| {
        let snap = drv.sm.snapshot().expect("snapshot");
        Gid { prefix: PREFIX, guid: snap.port(snap.by_lid(lid).expect("port")).expect("port").guid }
    };
    let mpr = MultiPathRecord { sgids: vec![gid(a)], dgids: vec![gid(b)], ..MultiPathRecord::default() };
    let mask = MultiPathRecord::COMP_SGID_COUNT | MultiPathRecord::COMP_DGID_COUNT;
    let (st, data) = through_core(&mut drv, now, a, (Method::GetMulti, mask, 0), &mpr);
    assert_eq!(st, status::OK);
    let multi = PathRecord::parse(&data).expect("a PathRecord in the answer");
    let join = McMemberRecord {
        mgid: Gid { prefix: 0xff12_a01c_0000_0000, guid: Guid(7) },
        port_gid: Gid { prefix: PREFIX, guid },
        qkey: 0x0b1b,
        pkey: PKey(0xffff),
        join_state: JoinState::FULL_MEMBER,
        ..McMemberRecord::default()
    };
    let (st, data) = through_core(&mut drv, now, a, (Method::Set, MC_CREATE, 0), &join);
    assert_eq!(st, status::OK);
    let group = McMemberRecord::parse(&data).expect("McMemberRecord");
    [pr.rate.raw(), multi.rate.raw(), group.rate.raw()]
}

#[test]
fn path_records_and_new_groups_carry_the_rate_opensm_reduces_to_under_max_rate_enum() {
    assert_eq!(rates(None), [23; 3], "no limit: 800 Gb/s");
    // 23 under 18: 600 and 400 Gb/s have codes over 18, 300 Gb/s (18) does not.
    assert_eq!(rates(Some(18)), [18; 3]);
    assert_eq!(rates(Some(21)), [21; 3], "400 Gb/s");
    // Under 12 (56 Gb/s): 120 and 80 Gb/s have codes within it but rank above 56 Gb/s.
    assert_eq!(rates(Some(12)), [12; 3]);
    assert_eq!(rates(Some(23)), [23; 3], "a limit at the path's own code");
}
