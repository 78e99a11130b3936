//! State sync on the simulated fabric: a standby holds its master's multicast groups, services,
//! subscriptions and guid2lid, is current at the master's version, and takes over with them
//! (same MLIDs, same members, the service still registered); sync messages without the SM_Key,
//! or from an SM that is not the standby's master, are refused and change nothing. A master
//! that starts without synced state, or takes over from a lost master, sets ClientReregister on
//! every CA port, once; one handed the subnet by a synced master does not. Two SMs with one
//! partition policy: the new master holds every port's P_Key table as the old one did; a join
//! after the standby's last sync survives the takeover or its port is told to re-register. A
//! join sent while the master hands over gets BUSY, and its retry is served by the new master.
//! An alias GUID a host set through the master's SA (sync section 10) is served by the new
//! master (its GUIDInfoRecord, a PathRecord to the alias GID), and the port's GUIDInfo block
//! stays as it was (written once more, the same).

use ibsm::core::{SmEvent, SmState, SweepPhase};
use ibsm::sync::wire::{Message, SyncKey, request_header};
use ibsm::transport::sim::SimSms;
use ibsm_mad::attrs::GuidInfo;
use ibsm_mad::header::Method;
use ibsm_mad::ids::status;
use ibsm_mad::records::{GuidInfoRecord, InformInfoRecord, JoinState, McMemberRecord, PathRecord, ServiceRecord};
use ibsm_mad::sa::{SA_HEADER_LEN, SaHeader, request};
use ibsm_mad::{Attribute, Gid, Guid, Lid, MAD_LEN, PKey, ids};
use ibsm_sim::fabric::{AgentId, Dest, Fault, LinkRule, SimTime};

mod support;
use support::sa::{MC_CREATE, PREFIX, example, inform_all};
use support::sms::{SECOND, Sent, elect, hosts, lids, run_counting};

/// Sends `bytes` from `client` to `lid` (QP1), runs the SMs half a second, and returns the
/// answer with TID `tid`.
fn ask(h: &mut SimSms, client: AgentId, lid: Lid, bytes: &[u8; MAD_LEN], tid: u64) -> Option<Box<[u8; MAD_LEN]>> {
    h.fabric.send(client, bytes, Dest { dlid: lid, qpn: 1 });
    h.run_until(h.now() + SECOND / 2, |_, _| false);
    let mut found = None;
    while let Some(r) = h.fabric.recv(client) {
        if SaHeader::from_bytes(&r.mad[..]).is_ok_and(|a| a.tid & 0xffff_ffff == tid && a.method.is_response()) {
            found = Some(r.mad);
        }
    }
    found
}

/// Asks `lid`'s SA with `method` and `mask` for `rec`, with the SA key (trusted); the status
/// and the first record.
fn sa<A: Attribute>(
    h: &mut SimSms,
    client: AgentId,
    lid: Lid,
    (method, mask, tid): (Method, u64, u64),
    rec: &A,
) -> (u16, Vec<u8>) {
    let mut bytes = request(method, mask, tid, rec).expect("request");
    bytes[36..44].copy_from_slice(&ibsm::sa::DEFAULT_SA_KEY.to_be_bytes());
    let r = ask(h, client, lid, &bytes, tid).expect("an answer");
    let hd = SaHeader::from_bytes(&r[..]).expect("header");
    (hd.status, r[SA_HEADER_LEN..].to_vec())
}

/// A client at the fifth host of `topo`, its port's GID, and the group create it sends with
/// `qkey` (a full member of the default partition).
fn client_and_join(h: &mut SimSms, topo: &ibsm_topology::Topology, qkey: u32) -> (AgentId, Gid, McMemberRecord) {
    let at = hosts(topo)[4];
    let client = h.fabric.attach(at.0, at.1).expect("attach");
    let me = Gid { prefix: PREFIX, guid: topo.nodes[at.0].port_guid(1) };
    let join = McMemberRecord {
        port_gid: me,
        qkey,
        pkey: PKey(0xffff),
        join_state: JoinState::FULL_MEMBER,
        ..McMemberRecord::default()
    };
    (client, me, join)
}

/// Runs until SM `i` reports its standby current at the master's version.
fn until_current(h: &mut SimSms, master: usize) {
    let end = h.now() + 5 * SECOND;
    while h.now() < end {
        let st = h.sms[master].sm.sync_status();
        if !st.standbys.is_empty() && st.standbys.iter().all(|s| s.3 == Some(st.version)) {
            return;
        }
        h.run_until(h.now() + SECOND / 10, |_, _| false);
        h.fabric.advance_to(ibsm_sim::fabric::SimTime(h.now().max(end.min(h.now() + SECOND / 10))));
    }
    panic!("standbys not current: {:?}", h.sms[master].sm.sync_status());
}

#[test]
fn a_standby_takes_over_with_the_masters_groups_services_and_subscriptions() {
    let topo = example("fat-tree-2l-k4.net");
    for seed in 1..=3 {
        let (mut h, master) = elect(&topo, seed, &[9, 5]);
        let standby = 1 - master;
        let master_guid = h.sms[master].sm.port_guid();
        let lid_of = lids(&h, master);
        let sm_lid = lid_of[&master_guid];
        // A client on another host creates a group, registers a service and subscribes.
        let (client, me, join) = client_and_join(&mut h, &topo, 0x1234);
        let (st, data) = sa(&mut h, client, sm_lid, (Method::Set, MC_CREATE, 0x11), &join);
        assert_eq!(st, status::OK);
        let group = McMemberRecord::parse(&data).expect("group");
        let mut name = [0u8; 64];
        name[..7].copy_from_slice(b"storage");
        let service = ServiceRecord {
            service_id: 0x1000_0000_0000_0042,
            service_gid: me,
            service_pkey: PKey(0xffff),
            service_lease: 0xffff_ffff,
            service_name: name,
            ..ServiceRecord::default()
        };
        let mask = ServiceRecord::COMP_SERVICE_ID | ServiceRecord::COMP_SERVICE_GID | ServiceRecord::COMP_SERVICE_NAME;
        assert_eq!(sa(&mut h, client, sm_lid, (Method::Set, mask, 0x12), &service).0, status::OK);
        assert_eq!(sa(&mut h, client, sm_lid, (Method::Set, 0, 0x13), &inform_all()).0, status::OK);

        // The standby is current at the master's version and holds every section.
        until_current(&mut h, master);
        let version = h.sms[master].sm.sync_status().version;
        let held = h.sms[standby].sm.sync_status();
        assert_eq!(held.current_at, Some(version), "seed {seed}");
        assert_eq!(held.sections.len(), ibsm::sync::Section::ALL.len(), "{held:?}");

        // kill -9 the master: the standby takes over with the master's state.
        let reregistered = h.fabric.stats().client_reregisters;
        h.kill(master);
        let mut adopted = None;
        h.run_until(h.now() + 10 * SECOND, |i, e| {
            if let SmEvent::SyncAdopted { sections, current_at } = e {
                adopted = Some((i, *sections, *current_at));
            }
            matches!(e, SmEvent::SubnetUp(r) if r.complete)
        })
        .expect("the standby brings the subnet up");
        assert_eq!(adopted, Some((standby, ibsm::sync::Section::ALL.len(), Some(version))));
        assert_eq!(lids(&h, standby), lid_of, "no LID changed");
        // It cannot know it saw the master's last change: every CA port is told to re-register,
        // once (the re-joins find their groups, with the same MLIDs, below).
        let cas = hosts(&topo).len() as u64;
        assert_eq!(h.fabric.stats().client_reregisters, reregistered + cas, "seed {seed}: every CA port told once");
        let new_lid = lid_of[&h.sms[standby].sm.port_guid()];

        // The group is there with its MLID and its member, the service and the subscription too.
        let by_mgid = McMemberRecord { mgid: group.mgid, ..McMemberRecord::default() };
        let (st, data) = sa(&mut h, client, new_lid, (Method::GetTable, McMemberRecord::COMP_MGID, 0x21), &by_mgid);
        assert_eq!(st, status::OK, "seed {seed}: group kept");
        let kept = McMemberRecord::parse(&data).expect("record");
        assert_eq!((kept.mgid, kept.mlid, kept.qkey, kept.port_gid), (group.mgid, group.mlid, 0x1234, me));
        let (st, data) =
            sa(&mut h, client, new_lid, (Method::GetTable, ServiceRecord::COMP_SERVICE_ID, 0x22), &service);
        assert_eq!(st, status::OK, "seed {seed}: service kept");
        assert_eq!(ServiceRecord::parse(&data).expect("record").service_name, name);
        let any = InformInfoRecord::parse(&[0; 60]).expect("record");
        let (st, data) = sa(&mut h, client, new_lid, (Method::GetTable, 0, 0x23), &any);
        assert_eq!(st, status::OK);
        let rec = InformInfoRecord::parse(&data).expect("record");
        assert_eq!(rec.subscriber_gid, me, "seed {seed}: subscription kept");
    }
}

#[test]
fn sync_messages_without_the_key_or_not_from_the_master_are_refused() {
    let topo = example("fat-tree-2l-k4.net");
    let (mut h, master) = elect(&topo, 6, &[9, 5]);
    let standby = 1 - master;
    until_current(&mut h, master);
    let before = h.sms[standby].sm.sync_status();
    let lid_of = lids(&h, master);
    let standby_lid = lid_of[&h.sms[standby].sm.port_guid()];
    let at = hosts(&topo)[5];
    let rogue = h.fabric.attach(at.0, at.1).expect("attach");
    // A guid2lid section that would move every port, as one chunk.
    let forged = ibsm::sync::Replica { guid2lid: vec![(Guid(1), Lid(1), Lid(1))], ..Default::default() };
    let bytes = forged.encode(ibsm::sync::Section::Guid2Lid);
    let chunk = |key: &SyncKey, from: Guid, tid: u64| {
        let m = Message {
            from,
            version: 1_000,
            sent_at: 0,
            digest: key.digest(&bytes),
            chunk: 0,
            chunks: 1,
            section: 1,
            takes: ibsm::sync::Section::MAX_ID,
            payload: bytes.clone(),
        };
        m.to_mad(&request_header(Method::Set, tid), key)
    };
    let master_guid = h.sms[master].sm.port_guid();
    let cases = [
        (SyncKey::from_sm_key(0x666), master_guid, "wrong key"),
        (SyncKey::from_sm_key(7), Guid(0xdead), "right key, not the master"),
        // The sender is the port the message came from, not the GUID it names: a host that
        // holds the SM_Key and writes the master's GUID feeds the standby nothing.
        (SyncKey::from_sm_key(7), master_guid, "right key and the master's GUID, from a third host"),
    ];
    for (i, (key, from, what)) in cases.iter().enumerate() {
        let tid = 0x40 + i as u64;
        let r = ask(&mut h, rogue, standby_lid, &chunk(key, *from, tid), tid).expect("an answer");
        assert_eq!(SaHeader::from_bytes(&r[..]).expect("hdr").status, status::BAD_FIELD, "{what}");
    }
    assert_eq!(h.sms[standby].sm.sync_status(), before, "nothing taken");
    // The master is not fed either: it is no standby.
    let r = ask(&mut h, rogue, lid_of[&master_guid], &chunk(&SyncKey::from_sm_key(7), Guid(0xdead), 0x50), 0x50);
    assert_eq!(SaHeader::from_bytes(&r.expect("answer")[..]).expect("hdr").status, status::BAD_FIELD);
}

#[test]
fn a_first_start_or_a_takeover_without_synced_state_makes_every_client_re_register() {
    let topo = example("fat-tree-2l-k4.net");
    let cas = hosts(&topo).len() as u64;
    let at = hosts(&topo);
    let sms = vec![
        (ibsm::core::Sm::new(support::sms::cfg(9, 7), ibsm::core::Guid2Lid::default()), at[0]),
        (ibsm::core::Sm::new(support::sms::cfg(5, 7), ibsm::core::Guid2Lid::default()), at[1]),
    ];
    let mut h = SimSms::new(&topo, 8, sms).expect("attach");
    h.start(0);
    h.run_until(h.now() + 60 * SECOND, |i, e| i == 0 && matches!(e, SmEvent::SubnetUp(r) if r.complete)).expect("up");
    // The first master does not know what the ports' clients had joined: each CA port is told.
    assert_eq!(h.fabric.stats().client_reregisters, cas);
    // The standby stands by; the master dies before it syncs anything.
    h.start(1);
    h.run_until(h.now() + 60 * SECOND, |i, e| i == 1 && matches!(e, SmEvent::Standby { .. })).expect("standby");
    assert!(h.sms[1].sm.sync_status().sections.is_empty());
    h.kill(0);
    let mut adopted = None;
    h.run_until(h.now() + 10 * SECOND, |i, e| {
        if let SmEvent::SyncAdopted { sections, .. } = e {
            adopted = Some(*sections);
        }
        i == 1 && matches!(e, SmEvent::SubnetUp(r) if r.complete)
    })
    .expect("the standby brings the subnet up");
    assert_eq!(adopted, Some(0));
    // The new master starts without groups or services: every CA port is told again (the dead
    // master's too: its HCA is up, only its process is gone).
    assert_eq!(h.fabric.stats().client_reregisters, 2 * cas);
    // The next sweep asks nobody again.
    h.start(1);
    h.run_until(h.now() + 10 * SECOND, |i, e| i == 1 && matches!(e, SmEvent::SubnetUp(_))).expect("swept");
    assert_eq!(h.fabric.stats().client_reregisters, 2 * cas);
}

/// The handover tests' fabric: two SMs (priorities 9 and 5) on the 2-level tree and a client
/// at the fifth host, with the join its port sends.
struct Handover {
    h: SimSms,
    /// The SM elected first (priority 9), and the other.
    master: usize,
    other: usize,
    /// The LIDs the first master gave.
    lid_of: std::collections::BTreeMap<Guid, Lid>,
    client: AgentId,
    /// The client's port GID and its join (a create, full member of the default partition).
    me: Gid,
    join: McMemberRecord,
}

impl Handover {
    fn new() -> Handover {
        let topo = example("fat-tree-2l-k4.net");
        let (mut h, master) = elect(&topo, 9, &[9, 5]);
        let lid_of = lids(&h, master);
        let (client, me, join) = client_and_join(&mut h, &topo, 0x77);
        Handover { h, master, other: 1 - master, lid_of, client, me, join }
    }

    /// The master dies and the standby takes over; then the old master comes back (a new
    /// process, empty, priority 9): it stands by and tells the master it is better (trap 144).
    fn take_over_and_return(&mut self) {
        let other = self.other;
        self.h.kill(self.master);
        self.h
            .run_until(self.h.now() + 10 * SECOND, |i, e| i == other && matches!(e, SmEvent::SubnetUp(r) if r.complete))
            .expect("takeover");
        restart_better(&mut self.h, self.master);
    }
}

#[test]
fn a_returning_better_sm_is_synced_before_the_handover_and_serves_the_same_groups() {
    let mut t = Handover::new();
    let (master, other, client) = (t.master, t.other, t.client);
    let sm_lid = t.lid_of[&t.h.sms[master].sm.port_guid()];
    let (st, data) = sa(&mut t.h, client, sm_lid, (Method::Set, MC_CREATE, 0x31), &t.join);
    assert_eq!(st, status::OK);
    let group = McMemberRecord::parse(&data).expect("group");
    until_current(&mut t.h, master);
    // The standby takes over with the master's state; the old master, back, is synced, then
    // handed the subnet.
    t.take_over_and_return();
    let h = &mut t.h;
    let reregistered = h.fabric.stats().client_reregisters;
    let mut order = Vec::new();
    h.run_until(h.now() + 20 * SECOND, |i, e| {
        match e {
            SmEvent::SyncPeer { state: "current", .. } if i == other => order.push("current"),
            SmEvent::HandedOver { .. } if i == other => order.push("handed over"),
            _ => {}
        }
        i == master && matches!(e, SmEvent::SubnetUp(r) if r.complete)
    })
    .expect("the returning SM is master again");
    assert_eq!(order.first(), Some(&"current"), "synced before the handover: {order:?}");
    assert!(order.contains(&"handed over"));
    assert_eq!(lids(h, master), t.lid_of, "no LID changed");
    assert_eq!(h.fabric.stats().client_reregisters, reregistered, "no client asked to re-register");
    let by_mgid = McMemberRecord { mgid: group.mgid, ..McMemberRecord::default() };
    let (st, data) = sa(h, client, sm_lid, (Method::GetTable, McMemberRecord::COMP_MGID, 0x32), &by_mgid);
    assert_eq!(st, status::OK);
    let kept = McMemberRecord::parse(&data).expect("record");
    assert_eq!((kept.mlid, kept.port_gid), (group.mlid, t.me));
}

/// SM `i`, killed, comes back as a new process, empty, with priority 9.
fn restart_better(h: &mut SimSms, i: usize) {
    h.sms[i].sm = ibsm::core::Sm::new(support::sms::cfg(9, 7), ibsm::core::Guid2Lid::default());
    h.sms[i].sm.set_sa_limits(ibsm::sa::Limits::SIM);
    h.sms[i].alive = true;
    h.fabric.set_is_sm(h.sms[i].agent, true);
    h.start(i);
}

#[test]
fn a_join_while_the_master_hands_over_gets_busy_and_the_retry_is_served_by_the_new_master() {
    // Between its HANDOVER and the answer the master would answer a join that no state sync
    // carries to the new master (which no longer takes them): the group would be lost and no
    // client told. The master answers BUSY instead, and the client's retry finds the new one.
    let mut t = Handover::new();
    let (master, other, client) = (t.master, t.other, t.client);
    let returning = t.h.sms[master].sm.port_guid();
    t.take_over_and_return();
    let h = &mut t.h;
    // Stop as soon as the master has sent its HANDOVER: it goes when the returning SM's sync
    // comes to rest, on the event that says so.
    let end = h.now() + 20 * SECOND;
    let mut handing = false;
    while !handing && h.now() < end {
        let ev = h.run_until(end, |i, e| {
            i == other && matches!(e, SmEvent::SyncPeer { standby, .. } if *standby == returning)
        });
        handing = h.sms[other].sm.handing_over_to() == Some(returning);
        if ev.is_none() {
            break;
        }
    }
    assert!(handing, "the master hands over to the returning SM");
    let old_lid = t.lid_of[&h.sms[other].sm.port_guid()];
    let (st, _) = sa(h, client, old_lid, (Method::Set, MC_CREATE, 0x41), &t.join);
    assert_eq!(st, status::BUSY, "a join during the handover round trip");
    h.run_until(h.now() + 10 * SECOND, |i, e| i == master && matches!(e, SmEvent::SubnetUp(r) if r.complete));
    assert_eq!(h.sms[master].sm.state(), ibsm::core::SmState::Master, "the returning SM is master");
    let new_lid = t.lid_of[&returning];
    let (st, data) = sa(h, client, new_lid, (Method::Set, MC_CREATE, 0x42), &t.join);
    assert_eq!(st, status::OK, "the retry, at the new master");
    let group = McMemberRecord::parse(&data).expect("group");
    let by_mgid = McMemberRecord { mgid: group.mgid, ..McMemberRecord::default() };
    let (st, data) = sa(h, client, new_lid, (Method::GetTable, McMemberRecord::COMP_MGID, 0x43), &by_mgid);
    assert_eq!(st, status::OK);
    assert_eq!(McMemberRecord::parse(&data).expect("record").port_gid, t.me);
}

#[test]
fn the_partition_policy_survives_a_takeover() {
    // FO3: both SMs run the same partition policy (as they read the same file): the new
    // master's P_Key tables, port by port, and its SA's answers are the old master's.
    takeover_with_policy(false);
}

#[test]
fn a_join_after_the_last_sync_survives_a_takeover_or_its_port_is_told_to_re_register() {
    // FO3: a host joins a group after the standby's last sync and the master dies before the
    // next one: the join survives the takeover, or the host's port is told to re-register
    // (ClientReregister), so that its client joins again. Today it is lost, untold.
    takeover_with_policy(true);
}

/// Two SMs with one policy; with `late_join`, a host creates a group after the standby's last
/// sync (its cable loses the sync) and the master dies as soon as it answers.
#[allow(clippy::too_many_lines)] // one scenario, read from top to bottom
fn takeover_with_policy(late_join: bool) {
    let topo = example("fat-tree-2l-k4.net");
    let at = hosts(&topo);
    let guid = |i: usize| topo.nodes[at[i].0].port_guid(1);
    let text = format!(
        "Default=0x7fff : ALL=full ;\nalpha=0x0002 : ALL_CAS=limited, 0x{:016x}=full ;\nbeta=0x0003 : 0x{:016x}=full, 0x{:016x}=full ;\n",
        guid(4).0,
        guid(5).0,
        guid(6).0
    );
    let policy = ibsm_partitions::parse_partitions_conf(&text).expect("policy");
    for seed in [21, 22] {
        let cfg = |p: u8| ibsm::core::SmConfig { partitions: policy.clone(), ..support::sms::cfg(p, 7) };
        let sms = vec![
            (ibsm::core::Sm::new(cfg(9), ibsm::core::Guid2Lid::default()), at[0]),
            (ibsm::core::Sm::new(cfg(5), ibsm::core::Guid2Lid::default()), at[1]),
        ];
        let mut h = SimSms::new(&topo, seed, sms).expect("attach");
        h.start(0);
        h.run_until(h.now() + 60 * SECOND, |i, e| i == 0 && matches!(e, SmEvent::SubnetUp(r) if r.complete))
            .expect("up");
        h.start(1);
        h.run_until(h.now() + 60 * SECOND, |i, e| i == 1 && matches!(e, SmEvent::Standby { .. })).expect("standby");
        until_current(&mut h, 0);
        let lid_of = lids(&h, 0);
        let sm_lid = lid_of[&h.sms[0].sm.port_guid()];
        let tables = |h: &SimSms, i: usize| -> std::collections::BTreeMap<Guid, Vec<PKey>> {
            let snap = h.sms[i].sm.snapshot().expect("snapshot");
            snap.end_ports().filter_map(|p| snap.port(p)).map(|p| (p.guid, p.pkeys.clone())).collect()
        };
        let before = tables(&h, 0);
        assert!(before.values().filter(|k| k.contains(&PKey(0x0002))).count() >= 7, "alpha is programmed: {before:?}");
        // What the SA says of a host's table (trusted, as `saquery --smkey 1 PKTR`).
        let client = h.fabric.attach(at[7].0, at[7].1).expect("attach");
        let pktr = |h: &mut SimSms, lid: Lid, host: usize, tid: u64| {
            let mut rec = ibsm_mad::records::PKeyTableRecord::parse(&[0; 72]).expect("record");
            rec.lid = lid_of[&guid(host)];
            rec.port_num = ibsm_mad::PortNum(1);
            let mask = ibsm_mad::records::PKeyTableRecord::COMP_LID | ibsm_mad::records::PKeyTableRecord::COMP_PORT_NUM;
            sa(h, client, lid, (Method::GetTable, mask, tid), &rec)
        };
        let sa_before: Vec<_> = (4..7).map(|k| pktr(&mut h, sm_lid, k, 0x40 + k as u64)).collect();
        assert!(sa_before.iter().all(|(st, _)| *st == status::OK), "{sa_before:?}");

        let late = if late_join {
            // A host creates a group after the last sync (the standby's cable loses everything
            // from now on, so no sync reaches it); the master dies as soon as it answers.
            let version = h.sms[0].sm.sync_status().version;
            h.fabric.inject_fault(Fault::AddRule(LinkRule { link: Some(at[1]), drop: 1.0, delay_ns: 0, jitter_ns: 0 }));
            let joiner = h.fabric.attach(at[3].0, at[3].1).expect("attach");
            let me = Gid { prefix: PREFIX, guid: guid(3) };
            let join = McMemberRecord {
                port_gid: me,
                qkey: 0x4321,
                pkey: PKey(0xffff),
                join_state: JoinState::FULL_MEMBER,
                ..McMemberRecord::default()
            };
            let mut bytes = request(Method::Set, MC_CREATE, 0x51, &join).expect("request");
            bytes[36..44].copy_from_slice(&ibsm::sa::DEFAULT_SA_KEY.to_be_bytes());
            h.fabric.send(joiner, &bytes, Dest { dlid: sm_lid, qpn: 1 });
            let mut answer = None;
            let end = h.now() + SECOND;
            while answer.is_none() && h.now() < end {
                let step = h.now() + 10_000;
                h.run_until(step, |_, _| false);
                h.fabric.advance_to(ibsm_sim::fabric::SimTime(step.max(h.now())));
                while let Some(r) = h.fabric.recv(joiner) {
                    if SaHeader::from_bytes(&r.mad[..])
                        .is_ok_and(|a| a.tid & 0xffff_ffff == 0x51 && a.method.is_response())
                    {
                        answer = Some(r.mad);
                    }
                }
            }
            let answer = answer.expect("the join is answered");
            assert_eq!(SaHeader::from_bytes(&answer[..]).expect("header").status, status::OK);
            let group = McMemberRecord::parse(&answer[SA_HEADER_LEN..]).expect("group");
            let synced = h.sms[1].sm.sync_status().current_at;
            assert_eq!(synced, Some(version), "seed {seed}: the standby holds the state before the join");
            assert!(h.sms[0].sm.sync_status().version > version, "seed {seed}: the join is a change to sync");
            let reregistered = h.fabric.stats().client_reregisters;
            Some((group, me, synced, reregistered))
        } else {
            None
        };
        h.kill(0);
        h.fabric.inject_fault(Fault::ClearRules);
        h.run_until(h.now() + 10 * SECOND, |i, e| i == 1 && matches!(e, SmEvent::SubnetUp(r) if r.complete))
            .expect("the standby brings the subnet up");
        let new_lid = lid_of[&h.sms[1].sm.port_guid()];
        assert_eq!(lids(&h, 1), lid_of, "seed {seed}: no LID changed");

        // The policy survived: the same table at every port, and the same SA answers.
        assert_eq!(tables(&h, 1), before, "seed {seed}: every port's P_Key table as the old master had it");
        let sa_after: Vec<_> = (4..7).map(|k| pktr(&mut h, new_lid, k, 0x60 + k as u64)).collect();
        assert_eq!(sa_after, sa_before, "seed {seed}: the new master's SA shows the same tables");
        let Some((group, me, synced, reregistered)) = late else { continue };

        // The late join survived, or the port was told to re-register.
        let by_mgid = McMemberRecord { mgid: group.mgid, ..McMemberRecord::default() };
        let (st, data) = sa(&mut h, client, new_lid, (Method::GetTable, McMemberRecord::COMP_MGID, 0x71), &by_mgid);
        let kept =
            st == status::OK && McMemberRecord::parse(&data).is_ok_and(|r| r.port_gid == me && r.mlid == group.mlid);
        let told = h.fabric.stats().client_reregisters > reregistered;
        assert!(kept || told, "seed {seed}: the join after the last sync is lost and nobody was told (status {st:#x})");
        eprintln!(
            "seed {seed}: standby current at {synced:?} when the master died; the late join {}",
            if kept { "survived" } else { "was lost, and the ports were told to re-register" }
        );
    }
}

/// GUIDInfoRecord's mask bits for a Set or Get of one block of a port (LID and block named).
const GIR_KEY: u64 = GuidInfoRecord::COMP_LID | GuidInfoRecord::COMP_BLOCK_NUM;

/// Steps the SMs with [`run_counting`] in 100 ms slices until `done` or `ns` of virtual time.
fn counting_until(h: &mut SimSms, ns: u64, sent: &mut [Sent], mut done: impl FnMut(&SimSms) -> bool) -> bool {
    let end = h.now() + ns;
    while !done(h) {
        if h.now() >= end {
            return false;
        }
        let step = (h.now() + SECOND / 10).min(end);
        run_counting(h, step, sent);
        if h.now() < step {
            h.fabric.advance_to(SimTime(step));
        }
    }
    true
}

#[test]
fn a_new_master_serves_the_alias_guids_it_synced_and_leaves_the_ports_alias_block_as_it_is() {
    // Sync section 10 (aliases) at a takeover: a host sets an alias GUID through the master's
    // SA, the standby syncs it, the master dies; the new master answers the GUIDInfoRecord and
    // a PathRecord to the alias GID, and the port's GUIDInfo block is never written otherwise.
    let topo = example("fat-tree-2l-k4.net");
    let at = hosts(&topo);
    let sms = vec![
        (ibsm::core::Sm::new(support::sms::cfg(9, 7), ibsm::core::Guid2Lid::default()), at[0]),
        (ibsm::core::Sm::new(support::sms::cfg(5, 7), ibsm::core::Guid2Lid::default()), at[1]),
    ];
    let mut h = SimSms::new(&topo, 12, sms).expect("attach");
    // The host with the alias (GUIDCap 8: one block) and another host that asks for paths.
    let (host, other) = (at[4], at[6]);
    h.fabric.set_guid_cap(host.0, host.1, 8);
    h.start(0);
    h.run_until(h.now() + 60 * SECOND, |i, e| i == 0 && matches!(e, SmEvent::SubnetUp(r) if r.complete)).expect("up");
    h.start(1);
    h.run_until(h.now() + 60 * SECOND, |i, e| i == 1 && matches!(e, SmEvent::Standby { .. })).expect("standby");
    let (master, standby) = (0, 1);
    let lid_of = lids(&h, master);
    let guid = |p: (usize, u8)| topo.nodes[p.0].port_guid(p.1);
    let (host_guid, other_guid) = (guid(host), guid(other));
    let (host_lid, other_lid) = (lid_of[&host_guid], lid_of[&other_guid]);
    let client = h.fabric.attach(host.0, host.1).expect("attach host");
    let asker = h.fabric.attach(other.0, other.1).expect("attach other");

    // The host sets alias index 3 of its port through the master's SA.
    let alias = Guid(0x0002_c903_00ee_0003);
    let mut rec = GuidInfoRecord { lid: host_lid, block_num: 0, guid_info: GuidInfo::default() };
    rec.guid_info.guids[3] = alias;
    let master_lid = lid_of[&h.sms[master].sm.port_guid()];
    let (st, data) =
        sa(&mut h, client, master_lid, (Method::Set, GIR_KEY | GuidInfoRecord::COMP_GUID0 << 3, 0x81), &rec);
    assert_eq!(st, status::OK);
    assert_eq!(GuidInfoRecord::parse(&data).expect("record").guid_info.guids[3], alias);
    let mut block = vec![Guid(0); 8];
    (block[0], block[3]) = (host_guid, alias);
    let end = h.now() + 5 * SECOND;
    while h.fabric.port_guids(host.0, host.1).as_deref() != Some(&block[..]) {
        assert!(h.now() < end, "the master never wrote the block: {:?}", h.fabric.port_guids(host.0, host.1));
        h.run_until(h.now() + SECOND / 10, |_, _| false);
        h.fabric.advance_to(SimTime(h.now().max(end.min(h.now() + SECOND / 10))));
    }
    until_current(&mut h, master);
    assert!(h.sms[standby].sm.sync_status().sections.contains(&"aliases"), "{:?}", h.sms[standby].sm.sync_status());

    // kill -9 the master; the standby takes over. Every MAD it sends from now on is counted.
    let mut sent = vec![Sent::default(); 2];
    let died = h.now();
    h.kill(master);
    let new_master_up = |h: &SimSms| {
        let sm = &h.sms[standby].sm;
        sm.state() == SmState::Master
            && sm.phase() == SweepPhase::Up
            && sm.last_report_at().is_some_and(|t| t > died)
            && sm.last_report().is_some_and(|r| r.complete)
    };
    assert!(counting_until(&mut h, 30 * SECOND, &mut sent, new_master_up), "the standby brings the subnet up");
    // A few more seconds: the writes between sweeps, and a light sweep or two.
    counting_until(&mut h, 3 * SECOND, &mut sent, |_| false);
    let new_lid = lid_of[&h.sms[standby].sm.port_guid()];
    assert_eq!(lids(&h, standby), lid_of, "no LID changed");
    assert_eq!(h.fabric.port_guids(host.0, host.1).as_deref(), Some(&block[..]), "the port's alias block is kept");
    // What the ports hold is not replicated, so each block with an alias is written once more,
    // as it was: one GUIDInfo Set, the block the port held. None drops it, none more follow.
    let guid_info_sets = sent[standby].sets_by_attr.get(&ids::attr::GUID_INFO).copied().unwrap_or(0);
    assert_eq!(guid_info_sets, 1, "{:?}", sent[standby]);

    // The new master's SA answers the GUIDInfoRecord ...
    let get = GuidInfoRecord { lid: host_lid, block_num: 0, guid_info: GuidInfo::default() };
    let (st, data) = sa(&mut h, asker, new_lid, (Method::GetTable, GIR_KEY, 0x82), &get);
    assert_eq!(st, status::OK, "the GUIDInfoRecord after the takeover");
    let got = GuidInfoRecord::parse(&data).expect("record");
    assert_eq!((got.lid, got.guid_info.guids.to_vec()), (host_lid, block.clone()));
    // ... and a PathRecord to the alias GID: the host's path, the alias echoed.
    let (mask, pr) = support::sa::path_query(None, None, Some(other_guid), Some(alias));
    let (st, data) = sa(&mut h, asker, new_lid, (Method::Get, mask, 0x83), &pr);
    assert_eq!(st, status::OK, "the PathRecord to the alias GID after the takeover");
    let path = PathRecord::parse(&data).expect("record");
    assert_eq!((path.dgid, path.dlid, path.slid), (Gid { prefix: PREFIX, guid: alias }, host_lid, other_lid));
    assert_eq!(h.fabric.port_guids(host.0, host.1).as_deref(), Some(&block[..]), "the port's alias block is kept");
}

/// A master that brings the subnet up with no standby publishes nothing at the sweep's end
/// (building the sections hashes every LFT and reads every port); a standby that starts later
/// still gets every section as the master holds it then: it is current at the master's
/// version, and takes over with the master's LIDs, its group (joined after the sweep), and
/// its LFT digests (no LFT block read back or written), after a repair and its undoing that
/// published nothing either.
#[test]
fn a_standby_that_starts_after_a_lone_masters_sweep_gets_every_section_as_the_master_holds_it() {
    let topo = example("fat-tree-2l-k4.net");
    for seed in 1..=2 {
        let at = hosts(&topo);
        let sms = vec![
            (ibsm::core::Sm::new(support::sms::cfg(9, 7), ibsm::core::Guid2Lid::default()), at[0]),
            (ibsm::core::Sm::new(support::sms::cfg(5, 7), ibsm::core::Guid2Lid::default()), at[1]),
        ];
        let mut h = SimSms::new(&topo, seed, sms).expect("attach");
        let (master, standby) = (0, 1);
        h.kill(standby);
        h.start(master);
        h.run_until(60 * SECOND, |i, e| i == master && matches!(e, SmEvent::SubnetUp(r) if r.complete)).expect("up");
        let alone = h.sms[master].sm.sync_status();
        assert!(alone.standbys.is_empty(), "seed {seed}: {alone:?}");
        assert_eq!(alone.version, 0, "seed {seed}: no section published with no standby");
        // A change after the sweep: a group joined through the master's SA.
        let lid_of = lids(&h, master);
        let sm_lid = lid_of[&h.sms[master].sm.port_guid()];
        let (client, me, join) = client_and_join(&mut h, &topo, 0x4321);
        let (st, data) = sa(&mut h, client, sm_lid, (Method::Set, MC_CREATE, 0x31), &join);
        assert_eq!(st, status::OK);
        let group = McMemberRecord::parse(&data).expect("group");
        // A cable cut and back: two sweeps that rewrite tables, and publish nothing either
        // (the digests of every table are not hashed for a standby that is not there).
        let (sw, port) = support::order::switch_cables(&topo)[0];
        for fault in [Fault::LinkDown { node: sw, port }, Fault::LinkUp { node: sw, port }] {
            let set = h.fabric.stats().lft_blocks_set;
            h.fabric.inject_fault(fault);
            let up = h.run_until(h.now() + 10 * SECOND, |i, e| i == master && matches!(e, SmEvent::SubnetUp(_)));
            assert!(up.is_some(), "seed {seed}: {fault:?}: a sweep");
            assert!(h.fabric.stats().lft_blocks_set > set, "seed {seed}: {fault:?}: tables rewritten");
            assert_eq!(h.sms[master].sm.sync_status().version, 0, "seed {seed}: {fault:?}: nothing published");
        }

        // The standby starts now, stands by, and is synced.
        restart_with(&mut h, standby, 5);
        h.run_until(h.now() + 10 * SECOND, |i, e| i == standby && matches!(e, SmEvent::Standby { .. }))
            .expect("standby");
        until_current(&mut h, master);
        let version = h.sms[master].sm.sync_status().version;
        assert!(version > 0, "seed {seed}: the sections published for the standby");
        let held = h.sms[standby].sm.sync_status();
        assert_eq!(held.current_at, Some(version), "seed {seed}");
        assert_eq!(held.sections.len(), ibsm::sync::Section::ALL.len(), "seed {seed}: {held:?}");

        // kill -9 the master: the standby takes over with what it was sent.
        let before = h.fabric.stats();
        h.kill(master);
        let mut adopted = None;
        let up = h.run_until(h.now() + 30 * SECOND, |i, e| {
            if let SmEvent::SyncAdopted { sections, current_at } = e {
                adopted = Some((i, *sections, *current_at));
            }
            i == standby && matches!(e, SmEvent::SubnetUp(r) if r.complete)
        });
        let Some((_, SmEvent::SubnetUp(report))) = up else { panic!("seed {seed}: the standby brings the subnet up") };
        assert_eq!(adopted, Some((standby, ibsm::sync::Section::ALL.len(), Some(version))), "seed {seed}");
        assert_eq!(lids(&h, standby), lid_of, "seed {seed}: no LID changed");
        let after = h.fabric.stats();
        assert_eq!(after.lft_blocks_read - before.lft_blocks_read, 0, "seed {seed}: the digests trusted");
        assert_eq!((report.lft_blocks_sent, after.lft_blocks_set - before.lft_blocks_set), (0, 0), "seed {seed}");
        let new_lid = lid_of[&h.sms[standby].sm.port_guid()];
        let by_mgid = McMemberRecord { mgid: group.mgid, ..McMemberRecord::default() };
        let (st, data) = sa(&mut h, client, new_lid, (Method::GetTable, McMemberRecord::COMP_MGID, 0x32), &by_mgid);
        assert_eq!(st, status::OK, "seed {seed}: group kept");
        let kept = McMemberRecord::parse(&data).expect("record");
        assert_eq!((kept.mgid, kept.mlid, kept.port_gid), (group.mgid, group.mlid, me), "seed {seed}");
    }
}

/// Starts SM `i` again as a new process with `priority`.
fn restart_with(h: &mut SimSms, i: usize, priority: u8) {
    h.restart(i, ibsm::core::Sm::new(support::sms::cfg(priority, 7), ibsm::core::Guid2Lid::default()));
}
