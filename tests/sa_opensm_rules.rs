//! The SA rules where ibsm follows OpenSM (issue 21), on the simulated fabric with a
//! five-partition policy: an admin host (a full member of the default partition), two storage
//! servers and two compute nodes (limited members of the default partition, full members of
//! their own), a guest (a limited member of the default partition only), and the SM's host.
//!
//! Each rule here once answered otherwise: `saquery -s` (PortInfoRecord's enhanced
//! CapabilityMask match) found no SM, ClassPortInfo advertised nothing, a third party's
//! PathRecords followed a stricter and a looser rule than OpenSM's, untrusted P_KeyTableRecords
//! were answered, a wrong SA key was answered as untrusted, PacketLifeTime grew with the hops,
//! and the SM's port was a full member of every partition.

use std::path::Path;

use ibsm::core::{Guid2Lid, MadSource, Sm, SmConfig, SmEvent};
use ibsm::sa::{self, Limits, Live, SaState, Snapshot};
use ibsm::transport::sim::SimDriver;
use ibsm_mad::attrs::{CapabilityMask, PKeyTable};
use ibsm_mad::header::Method;
use ibsm_mad::ids::status;
use ibsm_mad::records::{ClassPortInfo, PKeyTableRecord, PathRecord, PortInfoRecord, stride};
use ibsm_mad::sa::{SA_HEADER_LEN, SaHeader, request};
use ibsm_mad::{Attribute, Guid, Lid, PKey};
use ibsm_topology::{NodeKind, Topology};

const LIMIT: u64 = 600_000_000_000;

/// The fabric, swept under the policy, and who is who.
struct Site {
    topo: Topology,
    drv: SimDriver,
    snap: std::sync::Arc<Snapshot>,
    sm: usize,
    admin: usize,
    storage: [usize; 2],
    compute: [usize; 2],
    guest: usize,
}

impl Site {
    fn up(cfg: SmConfig) -> Site {
        Site::up_on(cfg, ibsm_sim::fabric::SimConfig { seed: 5, ..ibsm_sim::fabric::SimConfig::default() })
    }

    fn up_on(cfg: SmConfig, sim: ibsm_sim::fabric::SimConfig) -> Site {
        let topo =
            Topology::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fabrics/fat-tree-2l-k4.net")).unwrap();
        let hosts: Vec<usize> = (0..topo.nodes.len()).filter(|&i| topo.nodes[i].kind == NodeKind::Ca).collect();
        let (sm, admin, storage, compute, guest) =
            (hosts[0], hosts[1], [hosts[2], hosts[3]], [hosts[4], hosts[5]], hosts[6]);
        let g = |i: usize| format!("0x{:016x}", topo.nodes[i].port_guid(1).0);
        let text = format!(
            "Default=0x7fff : ALL=limited, {}=full ;\nstorage=0x0010 : {}=full, {}=full ;\n\
             compute=0x0020 : {}=full, {}=full ;\nscratch=0x0030 : {}=limited, {}=limited ;\n\
             ops=0x0040 : {}=full ;\n",
            g(admin),
            g(storage[0]),
            g(storage[1]),
            g(compute[0]),
            g(compute[1]),
            g(compute[0]),
            g(guest),
            g(admin),
        );
        let policy = ibsm_partitions::parse_partitions_conf(&text).expect("policy");
        let cfg = SmConfig { partitions: policy, ..cfg };
        let mut drv = SimDriver::with_config(&topo, sim, Sm::new(cfg, Guid2Lid::default()), None).expect("attach");
        assert_eq!(drv.at.0, sm, "the SM sits on the first host");
        let report = drv.sweep(LIMIT, |_| {}).expect("up");
        assert!(report.complete, "{report:?}");
        let snap = drv.sm.snapshot().expect("snapshot");
        Site { topo, drv, snap, sm, admin, storage, compute, guest }
    }

    fn guid(&self, i: usize) -> Guid {
        self.topo.nodes[i].port_guid(1)
    }

    fn lid(&self, i: usize) -> Lid {
        self.drv.sm.guid2lid().get(self.guid(i)).expect("LID").0
    }

    /// `rec` asked by host `from` with `attr_mod` and `sm_key` in the header.
    fn ask<A: Attribute>(
        &self,
        from: usize,
        (method, mask, attr_mod, sm_key): (Method, u64, u32, u64),
        rec: &A,
    ) -> sa::Answer {
        let mut bytes = request(method, mask, 9, rec).unwrap();
        bytes[20..24].copy_from_slice(&attr_mod.to_be_bytes());
        bytes[36..44].copy_from_slice(&sm_key.to_be_bytes());
        let live = Live::new(self.drv.sm.sm_info(false));
        sa::serve(&self.snap, &mut SaState::default(), &live, &bytes, self.lid(from), &Limits::default())
            .expect("answered")
    }

    /// The P_Key of the PathRecord `a` -> `b` asked by `from` (untrusted), or the status.
    fn path(&self, from: usize, a: usize, b: usize) -> Result<PKey, u16> {
        let q = PathRecord { slid: self.lid(a), dlid: self.lid(b), ..PathRecord::default() };
        let ans = self.ask(from, (Method::Get, PathRecord::COMP_SLID | PathRecord::COMP_DLID, 0, 0), &q);
        if ans.status != status::OK {
            return Err(ans.status);
        }
        Ok(PathRecord::parse(&ans.bytes[SA_HEADER_LEN..]).unwrap().pkey)
    }
}

fn records<A: Attribute>(a: &sa::Answer) -> Vec<A> {
    a.bytes[SA_HEADER_LEN..].chunks(stride::<A>()).take(a.records).map(|c| A::parse(c).unwrap()).collect()
}

#[test]
fn saquery_s_lists_the_sm_by_the_enhanced_capability_mask_match() {
    let s = Site::up(SmConfig::default());
    // `saquery -s`: PortInfoRecord, CapabilityMask = IsSM, AttributeModifier bit 31.
    let mut q = PortInfoRecord::parse(&[0; 72]).unwrap();
    q.port_info.capability_mask = CapabilityMask::IS_SM;
    let mask = PortInfoRecord::COMP_CAPABILITY_MASK;
    let enhanced = s.ask(s.admin, (Method::GetTable, mask, 1 << 31, 0), &q);
    assert_eq!(enhanced.status, status::OK);
    let found: Vec<Lid> = records::<PortInfoRecord>(&enhanced).iter().map(|r| r.endport_lid).collect();
    assert_eq!(found, vec![s.lid(s.sm)], "exactly the SM's port has IsSM");
    // Without bit 31 the component matches by equality (the IBTA's rule, and OpenSM's): no port
    // has a CapabilityMask of IsSM alone.
    let plain = s.ask(s.admin, (Method::GetTable, mask, 0, 0), &q);
    assert_eq!((plain.status, plain.records), (status::OK, 0));
    // CapabilityMask2 matches the same way: every port has the empty set of bits.
    let mask2 = PortInfoRecord::COMP_CAPABILITY_MASK2;
    let all = s.ask(s.admin, (Method::GetTable, mask2, 1 << 31, 1), &PortInfoRecord::parse(&[0; 72]).unwrap());
    let every = s.ask(s.admin, (Method::GetTable, 0, 0, 1), &PortInfoRecord::parse(&[0; 72]).unwrap());
    assert_eq!(all.records, every.records, "an empty CapabilityMask2 template matches every port");
    assert!(all.records > found.len());
}

#[test]
fn class_port_info_advertises_what_the_sa_serves() {
    let s = Site::up(SmConfig::default());
    let ans = s.ask(s.admin, (Method::Get, 0, 0, 0), &ClassPortInfo::default());
    let cpi = ClassPortInfo::parse(&ans.bytes[SA_HEADER_LEN..]).unwrap();
    // OpenSM 3.3.23 on the same fabric: 0x2602 (notices, UD multicast, MultiPathRecord,
    // PortInfo CapabilityMask match).
    assert_eq!(cpi.capability_mask, 0x2602);
    // MulticastFDBTop, alias GUIDs, extended speeds, CapMask2 match, send-only full member, 2x,
    // HDR, NDR; not the full PortInfoRecord or multicast ServiceRecords that ibsm lacks.
    assert_eq!(
        cpi.capability_mask2,
        (1 << 3) | (1 << 5) | (1 << 7) | (1 << 10) | (1 << 12) | (1 << 13) | (1 << 15) | (1 << 17)
    );
}

#[test]
fn a_third_partys_path_records_follow_opensms_partition_rule() {
    let s = Site::up(SmConfig::default());
    let [s1, s2] = s.storage;
    let [c1, c2] = s.compute;
    // The admin host shares the default partition with each storage server (it is a full
    // member there): it gets their path, under the partition the two share as full members.
    assert_eq!(s.path(s.admin, s1, s2), Ok(PKey(0x8010)), "admin asks storage -> storage");
    assert_eq!(s.path(s.admin, c1, c2), Ok(PKey(0x8020)), "admin asks compute -> compute");
    assert_eq!(s.path(s.admin, s1, c1), Err(status::SA_NO_RECORDS), "storage and compute share nothing");
    // A guest, a limited member of the default partition only, shares a partition with the admin
    // host but not with a storage server (both limited): no path to it, even from the admin.
    assert_eq!(s.path(s.guest, s.guest, s.admin), Ok(PKey(0x7fff)), "guest -> admin, its own");
    assert_eq!(s.path(s.guest, s.admin, s1), Err(status::SA_NO_RECORDS), "the guest cannot reach s1");
    assert_eq!(s.path(s.guest, s.guest, s1), Err(status::SA_NO_RECORDS));
    // Scratch: a compute node and the guest, both limited: no path between them.
    assert_eq!(s.path(s.admin, c1, s.guest), Err(status::SA_NO_RECORDS), "two limited members");
    // The record is under the lowest shared P_Key base: admin and the SM share only Default.
    assert_eq!(s.path(s.sm, s.sm, s.admin), Ok(PKey(0xffff)));
    // A storage server asking for the other's path: both are its peers.
    assert_eq!(s.path(s1, s1, s2), Ok(PKey(0x8010)));
    assert_eq!(s.path(s1, s2, s1), Ok(PKey(0x8010)));
}

#[test]
fn p_key_table_records_go_to_trusted_requesters_a_record_per_block() {
    let s = Site::up(SmConfig::default());
    let q = PKeyTableRecord::parse(&[0; 72]).unwrap();
    let untrusted = s.ask(s.admin, (Method::GetTable, 0, 0, 0), &q);
    assert_eq!((untrusted.status, untrusted.records), (status::SA_REQ_INVALID, 0), "refused, as OpenSM");
    let trusted = s.ask(s.admin, (Method::GetTable, 0, 0, 1), &q);
    assert_eq!(trusted.status, status::OK);
    let recs = records::<PKeyTableRecord>(&trusted);
    // Every CA port: one record per block of its PartitionCap, the first holding its table.
    let cap = s.snap.node(s.snap.by_lid(s.lid(s.admin)).unwrap().0).unwrap().info.partition_cap;
    let blocks = usize::from(cap).div_ceil(PKeyTable::ENTRIES);
    assert!(blocks > 1, "the simulated HCAs' PartitionCap spans blocks: {cap}");
    for host in [s.sm, s.admin, s.storage[0], s.guest] {
        let mine: Vec<&PKeyTableRecord> = recs.iter().filter(|r| r.lid == s.lid(host) && r.port_num.0 == 1).collect();
        assert_eq!(mine.len(), blocks, "{}: a record per block", s.topo.nodes[host].name);
        let first: Vec<u16> = mine[0].pkey_table.keys.iter().map(|k| k.0).filter(|&k| k != 0).collect();
        let held: Vec<u16> = s.drv.sm.port_pkeys()[&s.guid(host)].iter().map(|k| k.0).collect();
        assert_eq!(first, held, "block 0 is the table the SM programmed");
        assert!(mine[1..].iter().all(|r| r.pkey_table.keys.iter().all(|k| k.0 == 0)), "the other blocks are empty");
    }
    // Block selected by component: only that block.
    let b1 = PKeyTableRecord { lid: s.lid(s.admin), block_num: 1, ..q };
    let one = s.ask(s.admin, (Method::Get, PKeyTableRecord::COMP_LID | PKeyTableRecord::COMP_BLOCK_NUM, 0, 1), &b1);
    assert_eq!((one.status, records::<PKeyTableRecord>(&one)[0].block_num), (status::OK, 1));
}

#[test]
fn a_wrong_sa_key_is_dropped_and_counted_not_answered() {
    let mut s = Site::up(SmConfig::default());
    let q = PortInfoRecord::parse(&[0; 72]).unwrap();
    // Straight to the SA: dropped.
    let live = Live::new(s.drv.sm.sm_info(false));
    let mut bytes = request(Method::GetTable, 0, 3, &q).unwrap();
    bytes[36..44].copy_from_slice(&0xdead_beefu64.to_be_bytes());
    let served = sa::serve(&s.snap, &mut SaState::default(), &live, &bytes, s.lid(s.guest), &Limits::default());
    assert_eq!(served, Err(sa::Dropped::BadKey(0xdead_beef)));
    // Through the core: no answer, a count and an event naming the source.
    while s.drv.sm.poll_event().is_some() {}
    let now = s.drv.now();
    let before = s.drv.sm.request_counters();
    s.drv.sm.handle_mad(now, &bytes, MadSource::lid(s.lid(s.guest), 1));
    assert!(s.drv.sm.poll_transmit(now).is_none(), "no answer to a wrong key");
    let after = s.drv.sm.request_counters();
    assert_eq!(after.sa_bad_key, before.sa_bad_key + 1);
    assert_eq!(after.sa_answered, before.sa_answered);
    let events: Vec<SmEvent> = std::iter::from_fn(|| s.drv.sm.poll_event()).collect();
    assert!(
        events.iter().any(|e| matches!(e, SmEvent::SaBadKey { from, key: 0xdead_beef } if *from == s.lid(s.guest))),
        "{events:?}"
    );
    // The right key and no key are both answered.
    for key in [0u64, 1] {
        bytes[36..44].copy_from_slice(&key.to_be_bytes());
        s.drv.sm.handle_mad(now, &bytes, MadSource::lid(s.lid(s.guest), 1));
        let t = s.drv.sm.poll_transmit(now).expect("answered");
        assert_eq!(SaHeader::from_bytes(&t.bytes).unwrap().status, status::OK, "key {key}");
    }
}

#[test]
fn packet_life_time_is_the_subnet_timeout_on_every_path() {
    for (cfg, want) in [(SmConfig::default(), 0x12), (SmConfig { subnet_timeout: 0x10, ..SmConfig::default() }, 0x10)] {
        let s = Site::up(cfg);
        let [s1, s2] = s.storage;
        let paths = [(s1, s2), (s.admin, s.guest), (s.sm, s.admin), (s.compute[0], s.compute[1])];
        for (a, b) in paths {
            let q = PathRecord { slid: s.lid(a), dlid: s.lid(b), ..PathRecord::default() };
            let ans = s.ask(s.admin, (Method::Get, PathRecord::COMP_SLID | PathRecord::COMP_DLID, 0, 0), &q);
            let r = PathRecord::parse(&ans.bytes[SA_HEADER_LEN..]).unwrap();
            assert_eq!(r.packet_life_time, want, "{} -> {}", s.topo.nodes[a].name, s.topo.nodes[b].name);
        }
        // To itself: 0 (IBTA table 205).
        let q = PathRecord { slid: s.lid(s.admin), dlid: s.lid(s.admin), ..PathRecord::default() };
        let ans = s.ask(s.admin, (Method::Get, PathRecord::COMP_SLID | PathRecord::COMP_DLID, 0, 0), &q);
        assert_eq!(PathRecord::parse(&ans.bytes[SA_HEADER_LEN..]).unwrap().packet_life_time, 0);
    }
}

#[test]
fn the_sms_port_is_in_the_default_partition_and_where_the_policy_puts_it() {
    let mut s = Site::up(SmConfig::default());
    // As programmed in the simulated port, not only as the SM records it.
    let held: Vec<u16> = s.drv.sm.port_pkeys()[&s.guid(s.sm)].iter().map(|k| k.0).collect();
    assert_eq!(held, vec![0xffff], "full in Default; in no partition the policy does not give it");
    let path = ibsm_mad::DrPath::new(&[]).unwrap();
    let data = support::sa::dr_get(&mut s.drv, &path, ibsm_mad::ids::attr::PKEY_TABLE, 0).expect("P_KeyTable");
    let table = PKeyTable::parse(&data).unwrap();
    let keys: Vec<u16> = table.keys.iter().map(|k| k.0).filter(|&k| k != 0).collect();
    assert_eq!(keys, vec![0xffff]);
    // Every host still reaches the SA's port through the default partition.
    for h in [s.admin, s.storage[0], s.compute[1], s.guest] {
        // The source's own entry: the admin host's is full, the others' limited.
        let want = if h == s.admin { 0xffff } else { 0x7fff };
        assert_eq!(s.path(h, h, s.sm), Ok(PKey(want)), "{}", s.topo.nodes[h].name);
    }
}

#[test]
fn a_send_only_full_member_may_create_a_group_that_ends_with_it() {
    use ibsm_mad::Gid;
    use ibsm_mad::records::{JoinState, McMemberRecord};
    let mut s = Site::up(SmConfig::default());
    let (host, now) = (s.admin, s.drv.now());
    let from = s.lid(host);
    let gid = Gid { prefix: 0xfe80_0000_0000_0000, guid: s.guid(host) };
    let mgid = Gid { prefix: 0xff12_4001_0000_0000, guid: Guid(0x5150) };
    let req = McMemberRecord {
        mgid,
        port_gid: gid,
        qkey: 0x1234,
        pkey: PKey(0xffff),
        join_state: JoinState::SEND_ONLY_FULL_MEMBER,
        ..McMemberRecord::default()
    };
    let (st, data) = support::sa::through_core(&mut s.drv, now, from, (Method::Set, support::sa::MC_CREATE, 0), &req);
    assert_eq!(st, status::OK, "created by a send-only full member (IBTA 1.3, as OpenSM)");
    assert_eq!(McMemberRecord::parse(&data).unwrap().join_state, JoinState::SEND_ONLY_FULL_MEMBER);
    // A send-only non-member still cannot create one.
    let other =
        McMemberRecord { mgid: Gid { guid: Guid(0x5151), ..mgid }, join_state: JoinState::SEND_ONLY_NON_MEMBER, ..req };
    let (st, _) = support::sa::through_core(&mut s.drv, now, from, (Method::Set, support::sa::MC_CREATE, 0), &other);
    assert_eq!(st, status::SA_REQ_INVALID);
    // Its leave ends the group.
    let mask = McMemberRecord::COMP_MGID | McMemberRecord::COMP_PORT_GID | McMemberRecord::COMP_JOIN_STATE;
    let (st, _) = support::sa::through_core(&mut s.drv, now, from, (Method::Delete, mask, 0), &req);
    assert_eq!(st, status::OK);
    let (st, _) = support::sa::through_core(&mut s.drv, now, from, (Method::Get, McMemberRecord::COMP_MGID, 1), &req);
    assert_eq!(st, status::SA_NO_RECORDS, "the group ended with its only member");
}

/// Every switch, as (topology node, directed route from the SM's port), breadth first.
fn switch_routes(s: &Site) -> Vec<(usize, ibsm_mad::DrPath)> {
    let (start, port) = s.drv.at;
    let topo = &s.topo;
    let mut out = Vec::new();
    let mut seen = vec![false; topo.nodes.len()];
    let mut q = std::collections::VecDeque::new();
    let first = topo.nodes[start].peer(port).expect("cabled");
    q.push_back((first.node, vec![port]));
    seen[first.node] = true;
    while let Some((i, route)) = q.pop_front() {
        out.push((i, ibsm_mad::DrPath::new(&route).expect("route")));
        for p in 1..=topo.nodes[i].num_ports {
            let Some(peer) = topo.nodes[i].peer(p) else { continue };
            if topo.nodes[peer.node].kind == NodeKind::Switch && !seen[peer.node] {
                seen[peer.node] = true;
                let mut r = route.clone();
                r.push(p);
                q.push_back((peer.node, r));
            }
        }
    }
    out
}

/// The MulticastFDBTop every switch reports, read with SubnGet(SwitchInfo) along a directed
/// route from the SM's port.
fn mft_tops(s: &mut Site) -> Vec<u16> {
    let mut tops = Vec::new();
    for (_, path) in switch_routes(s) {
        let data = support::sa::dr_get(&mut s.drv, &path, ibsm_mad::ids::attr::SWITCH_INFO, 0).expect("SwitchInfo");
        tops.push(ibsm_mad::attrs::SwitchInfo::parse(&data).unwrap().multicast_fdb_top.0);
    }
    tops
}

#[test]
fn switch_ports_get_opensms_head_of_queue_lifetimes() {
    for (cfg, (inner, leaf)) in [
        (SmConfig::default(), (0x12, 0x10)),
        (
            SmConfig {
                ports: ibsm::core::PortConfig { hoq_life: 0x14, leaf_hoq_life: 0x0c, ..Default::default() },
                ..SmConfig::default()
            },
            (0x14, 0x0c),
        ),
    ] {
        let mut s = Site::up(cfg);
        let mut seen = 0;
        for (sw, path) in switch_routes(&s) {
            for p in 1..=s.topo.nodes[sw].num_ports {
                let Some(peer) = s.topo.nodes[sw].peer(p) else { continue };
                let data = support::sa::dr_get(&mut s.drv, &path, ibsm_mad::ids::attr::PORT_INFO, u32::from(p))
                    .expect("PortInfo");
                let hoq = ibsm_mad::attrs::PortInfo::parse(&data).unwrap().hoq_life;
                let want = if s.topo.nodes[peer.node].kind == NodeKind::Switch { inner } else { leaf };
                assert_eq!(hoq, want, "{}[{p}]", s.topo.nodes[sw].name);
                seen += 1;
            }
        }
        assert!(seen > 10);
        // Kept: a second sweep sends as many SMPs as one of an SM that leaves HOQLife as the
        // simulated ports power on (0), i.e. no PortInfo Set.
        let second = s.drv.sweep(LIMIT, |_| {}).expect("again");
        let ports = ibsm::core::PortConfig { hoq_life: 0, leaf_hoq_life: 0, ..Default::default() };
        let mut plain = Site::up(SmConfig { ports, ..SmConfig::default() });
        let plain_second = plain.drv.sweep(LIMIT, |_| {}).expect("again");
        assert!(second.complete && plain_second.complete);
        assert_eq!(second.smps_sent, plain_second.smps_sent, "HOQLife is written once, not at every sweep");
    }
}

#[test]
fn multicast_fdb_top_follows_the_blocks_in_use_where_the_switches_honour_it() {
    use ibsm_mad::Gid;
    use ibsm_mad::records::{JoinState, McMemberRecord};
    // As ibsim's: no switch advertises IsMulticastFDBTopSupported, so the top is left as the
    // switch reports it (0), as OpenSM leaves it.
    let mut plain = Site::up(SmConfig::default());
    assert!(mft_tops(&mut plain).iter().all(|&t| t == 0));
    // Switches that honour it: 0xBFFF while no block is in use (the policy's IPoIB group has no
    // member yet), the end of block 0 once a group has members, 0xBFFF again when they leave.
    let sim =
        ibsm_sim::fabric::SimConfig { seed: 5, mft_top_supported: true, ..ibsm_sim::fabric::SimConfig::default() };
    let mut s = Site::up_on(SmConfig::default(), sim);
    let tops = mft_tops(&mut s);
    assert!(!tops.is_empty() && tops.iter().all(|&t| t == 0xbfff), "{tops:x?}");
    let now = s.drv.now();
    let join = |s: &mut Site, host: usize, method: Method, mgid: Gid| {
        let gid = Gid { prefix: 0xfe80_0000_0000_0000, guid: s.guid(host) };
        let req = McMemberRecord {
            mgid,
            port_gid: gid,
            qkey: 0x1234,
            pkey: PKey(0xffff),
            join_state: JoinState::FULL_MEMBER,
            ..McMemberRecord::default()
        };
        let mask = if method == Method::Set {
            support::sa::MC_CREATE
        } else {
            McMemberRecord::COMP_MGID | McMemberRecord::COMP_PORT_GID | McMemberRecord::COMP_JOIN_STATE
        };
        let from = s.lid(host);
        let (st, _) = support::sa::through_core(&mut s.drv, now, from, (method, mask, 0), &req);
        assert_eq!(st, status::OK);
        let until = s.drv.now() + 1_000_000_000;
        s.drv.run_until(until, |_| false);
    };
    let mgid = Gid { prefix: 0xff12_4001_0000_0000, guid: Guid(0x7070) };
    let (admin, guest) = (s.admin, s.guest);
    join(&mut s, admin, Method::Set, mgid);
    join(&mut s, guest, Method::Set, mgid);
    let tops = mft_tops(&mut s);
    assert!(tops.contains(&0xc01f), "the switches of the group's tree: block 0 in use: {tops:x?}");
    assert!(tops.iter().all(|&t| t == 0xc01f || t == 0xbfff), "{tops:x?}");
    join(&mut s, admin, Method::Delete, mgid);
    join(&mut s, guest, Method::Delete, mgid);
    let tops = mft_tops(&mut s);
    assert!(tops.iter().all(|&t| t == 0xbfff), "no block in use again: {tops:x?}");
}

mod support;

/// SA4: a LinkRecord is listed only when its two ends share a partition and the requester
/// shares one with each (OpenSM's rule): the guest (a limited member of the default partition)
/// learns nothing of the cable of a storage server (also limited there), while the admin host
/// (a full member) sees it; both see the admin host's cable.
#[test]
fn link_records_of_ports_outside_the_requesters_partitions_are_withheld() {
    use ibsm_mad::records::LinkRecord;
    let s = Site::up(SmConfig::default());
    let links = |from: usize| -> Vec<LinkRecord> {
        let a = s.ask(from, (Method::GetTable, 0, 0, 0), &LinkRecord::parse(&[0; 8]).unwrap());
        assert_eq!(a.status, status::OK);
        records(&a)
    };
    let touches = |recs: &[LinkRecord], host: usize| {
        recs.iter().filter(|r| r.from_lid == s.lid(host) || r.to_lid == s.lid(host)).count()
    };
    let (guest, admin) = (links(s.guest), links(s.admin));
    assert_eq!(touches(&guest, s.storage[0]), 0, "the guest sees no cable of a storage server: {guest:?}");
    assert_eq!(touches(&admin, s.storage[0]), 2, "the admin host sees it, both ways");
    assert_eq!(touches(&guest, s.admin), 2, "the guest sees the admin host's cable, both ways");
    // As OpenSM: the guest's leaf port holds the guest's P_Keys as they are (limited), so the
    // two ends of the guest's own cable share no partition with a full member.
    assert_eq!(touches(&guest, s.guest), 0, "nor its own");
    assert!(guest.len() < admin.len(), "{} < {}", guest.len(), admin.len());
}

/// SA4: a Report about a port goes only to subscribers who share a partition with it (IBTA
/// o13-17.1.1, as OpenSM): when a storage server's cable is pulled, the admin host hears that
/// its port went out of service (65) and the leaf's trap 128; the guest hears neither (the
/// storage port and the leaf's management port, `ALL=limited`, are limited members of the
/// default partition, as the guest is). A group created in the ops partition, where the guest
/// is not, is reported (66) to the admin host only; one created in the default partition to both.
#[test]
fn reports_about_ports_and_groups_outside_the_subscribers_partitions_are_withheld() {
    use ibsm_mad::Gid;
    use ibsm_mad::attrs::{Notice, NoticeDetails};
    use ibsm_mad::records::{JoinState, McMemberRecord};
    let mut s = Site::up(SmConfig::default());
    // Each subscribes (straight into the core, as the other tests here ask the SA) and listens
    // on its port.
    let mut probes = Vec::new();
    for host in [s.guest, s.admin] {
        let probe = s.drv.fabric.attach(host, 1).expect("probe");
        let (now, from) = (s.drv.now(), s.lid(host));
        let all = support::sa::inform_all();
        let (st, _) = support::sa::through_core(&mut s.drv, now, from, (Method::Set, 0, 0), &all);
        assert_eq!(st, status::OK);
        probes.push(probe);
    }
    let heard = |s: &mut Site, probe, ns| -> Vec<Notice> {
        support::sa::hear_for(&mut s.drv, probe, ns)
            .iter()
            .filter_map(|r| {
                let h = SaHeader::from_bytes(&r.mad[..]).ok()?;
                (h.method == Method::Report).then(|| Notice::parse(&r.mad[SA_HEADER_LEN..]).expect("notice"))
            })
            .collect()
    };
    // Two groups created by the admin host: in the ops partition (0x0040) and in the default one.
    let gid = Gid { prefix: 0xfe80_0000_0000_0000, guid: s.guid(s.admin) };
    let ops = Gid { prefix: 0xff12_4001_0000_0000, guid: Guid(0x4040) };
    let default = Gid { prefix: 0xff12_4001_0000_0000, guid: Guid(0x7fff) };
    for (mgid, pkey) in [(ops, 0x8040), (default, 0xffff)] {
        let join = McMemberRecord {
            mgid,
            port_gid: gid,
            qkey: 0x1234,
            pkey: PKey(pkey),
            join_state: JoinState::FULL_MEMBER,
            ..McMemberRecord::default()
        };
        let (now, from) = (s.drv.now(), s.lid(s.admin));
        let (st, _) = support::sa::through_core(&mut s.drv, now, from, (Method::Set, support::sa::MC_CREATE, 0), &join);
        assert_eq!(st, status::OK);
    }
    // The storage server's cable is pulled at its leaf.
    let leaf = s.topo.nodes[s.storage[0]].peer(1).expect("cabled");
    s.drv.fabric.inject_fault(ibsm_sim::fabric::Fault::LinkDown { node: leaf.node, port: leaf.port });
    let (guest, admin) = (heard(&mut s, probes[0], 3_000_000_000), heard(&mut s, probes[1], 3_000_000_000));
    let of = |ns: &[Notice], n: u16| ns.iter().filter(|x| x.trap_number() == Some(n)).count();
    let created = |ns: &[Notice], mgid| ns.iter().any(|x| x.details == NoticeDetails::Trap66 { mgid });
    assert!(of(&admin, 65) >= 1 && of(&admin, 128) >= 1, "the admin host hears of the storage port: {admin:?}");
    assert!(created(&admin, ops) && created(&admin, default), "and of both groups: {admin:?}");
    assert!(created(&guest, default), "the guest hears of the default partition's group: {guest:?}");
    assert!(!created(&guest, ops), "not of the ops partition's: {guest:?}");
    assert_eq!((of(&guest, 65), of(&guest, 128)), (0, 0), "nor of the storage port or its leaf: {guest:?}");
}
