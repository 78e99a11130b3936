//! The partition policy's multicast groups (IPoIB broadcast groups of `ipoib` partitions and
//! `mgid=` groups) as the SA serves them, across a policy reload; and the enforcing switch
//! ports' P_Key tables in P_KeyTableRecords.

use ibsm::core::{Guid2Lid, Sm, SmConfig};
use ibsm::transport::sim::SimDriver;
use ibsm_mad::header::Method;
use ibsm_mad::ids::status;
use ibsm_mad::records::{JoinState, McMemberRecord, PKeyTableRecord, stride};
use ibsm_mad::{Attribute, Gid, Guid, Lid, PKey};
use ibsm_topology::{NodeKind, Topology};

mod support;
use support::sa::{LIMIT, PREFIX, example, through_core};

fn mgid(text: &str) -> Gid {
    let bits = u128::from(text.parse::<std::net::Ipv6Addr>().expect("IPv6 text"));
    Gid { prefix: (bits >> 64) as u64, guid: Guid(bits as u64) }
}

struct Fabric {
    topo: Topology,
    drv: SimDriver,
    hosts: Vec<usize>,
}

impl Fabric {
    /// k=4 fat tree, the SM on the first host; `policy` names hosts as `{h1}`, `{h2}`, ... .
    fn up(policy: &str) -> Fabric {
        let topo = example("fat-tree-2l-k4.net");
        let hosts: Vec<usize> = (0..topo.nodes.len()).filter(|&i| topo.nodes[i].kind == NodeKind::Ca).collect();
        let text = Self::fill(&topo, &hosts, policy);
        let cfg = SmConfig {
            partitions: ibsm_partitions::parse_partitions_conf(&text).expect("policy"),
            ..SmConfig::default()
        };
        let mut drv = SimDriver::new(&topo, 3, Sm::new(cfg, Guid2Lid::default()), None).expect("attach");
        assert_eq!(drv.at.0, hosts[0], "the SM sits on the first host");
        assert!(drv.sweep(LIMIT, |_| {}).expect("up").complete);
        // Whole tables in one answer (the sim's transport allows one MAD's worth).
        drv.sm.set_sa_limits(ibsm::sa::Limits::default());
        Fabric { topo, drv, hosts }
    }

    fn fill(topo: &Topology, hosts: &[usize], policy: &str) -> String {
        let mut text = policy.to_owned();
        for (n, &h) in hosts.iter().enumerate().rev() {
            text = text.replace(&format!("{{h{n}}}"), &format!("0x{:016x}", topo.nodes[h].port_guid(1).0));
        }
        text
    }

    fn guid(&self, h: usize) -> Guid {
        self.topo.nodes[self.hosts[h]].port_guid(1)
    }

    fn lid(&self, h: usize) -> Lid {
        self.drv.sm.guid2lid().get(self.guid(h)).expect("LID").0
    }

    fn reload(&mut self, policy: &str) {
        let text = Self::fill(&self.topo, &self.hosts, policy);
        self.drv.sm.set_partitions(ibsm_partitions::parse_partitions_conf(&text).expect("policy"));
        assert!(self.drv.sweep(LIMIT, |_| {}).expect("swept again").complete);
    }

    /// GetTable(MCMemberRecord) from host `h`, trusted (SA key 1) or not: (MGID, record).
    fn groups(&mut self, h: usize, trusted: bool) -> Vec<McMemberRecord> {
        let (from, now) = (self.lid(h), self.drv.now());
        let ask = (Method::GetTable, 0, u64::from(trusted));
        let (st, data) = through_core(&mut self.drv, now, from, ask, &McMemberRecord::default());
        assert_eq!(st, status::OK);
        let mut out: Vec<McMemberRecord> = data
            .chunks_exact(stride::<McMemberRecord>())
            .map(|c| McMemberRecord::parse(c).expect("record"))
            .filter(|r| r.mgid != Gid::default())
            .collect();
        out.dedup_by_key(|r| r.mgid);
        out
    }

    /// Host `h` joins (or leaves, with `Method::Delete`) group `g` as a full member, naming
    /// only MGID, PortGID and JoinState.
    fn member(&mut self, h: usize, method: Method, g: Gid) -> u16 {
        let rec = McMemberRecord {
            mgid: g,
            port_gid: Gid { prefix: PREFIX, guid: self.guid(h) },
            join_state: JoinState::FULL_MEMBER,
            ..McMemberRecord::default()
        };
        let mask = McMemberRecord::COMP_MGID | McMemberRecord::COMP_PORT_GID | McMemberRecord::COMP_JOIN_STATE;
        let (from, now) = (self.lid(h), self.drv.now());
        through_core(&mut self.drv, now, from, (method, mask, 0), &rec).0
    }
}

const POLICY: &str = "Default=0x7fff,ipoib : ALL=full ;\n\
    storage=0x0a01,ipoib,mtu=5,rate=7,sl=1,scope=2,scope=5 : {h1}=full, {h2}=full ;\n\
    apps=0x0a03,scope=5 : mgid=ff12:1234::1,Q_Key=0x10\n, {h1}, {h3}=full ;\n";

#[test]
fn the_policy_creates_its_groups_and_members_join_them() {
    let mut f = Fabric::up(POLICY);
    let trusted = f.groups(0, true);
    let mgids: Vec<Gid> = trusted.iter().map(|r| r.mgid).collect();
    let (bcast, storage2, apps) =
        (mgid("ff12:401b:ffff::ffff:ffff"), mgid("ff12:401b:8a01::ffff:ffff"), mgid("ff15:1234::1"));
    for want in [bcast, storage2, apps] {
        assert!(mgids.contains(&want), "{want} missing from {mgids:?}");
    }
    // The broadcast group stays link-local whatever the partition's scopes (as OpenSM 3.3.23).
    assert_eq!(mgids.len(), 3, "{mgids:?}");
    let by = |g: Gid| trusted.iter().find(|r| r.mgid == g).copied().expect("group");
    let d = by(bcast);
    assert_eq!((d.mlid, d.pkey, d.qkey, d.mtu.raw(), d.rate.raw()), (Lid(0xc000), PKey(0xffff), 0x0b1b, 4, 3));
    let s = by(storage2);
    // The partition's sl=1 is a QoS setting: without QoS, as OpenSM, the group is on SL 0.
    assert_eq!((s.pkey, s.qkey, s.mtu.raw(), s.rate.raw(), s.sl, s.scope), (PKey(0x8a01), 0x0b1b, 5, 7, 0, 2));
    let a = by(apps);
    assert_eq!((a.pkey, a.qkey, a.scope), (PKey(0x8a03), 0x10, 5));

    // An untrusted requester sees the groups of its own partitions only.
    let seen = |f: &mut Fabric, h: usize| -> Vec<Gid> { f.groups(h, false).iter().map(|r| r.mgid).collect() };
    assert_eq!(seen(&mut f, 4), [bcast], "h4 is in the default partition only");
    assert_eq!(seen(&mut f, 3), [bcast, apps], "h3 is in apps (groups in MGID order)");

    // A member joins a pre-created group naming just MGID, PortGID and JoinState; a port outside
    // the partition cannot.
    assert_eq!(f.member(1, Method::Set, storage2), status::OK);
    assert_eq!(f.member(4, Method::Set, storage2), status::SA_REQ_INVALID);
    // The last member leaving does not end a group the policy names.
    assert_eq!(f.member(1, Method::Delete, storage2), status::OK);
    assert!(f.groups(0, true).iter().any(|r| r.mgid == storage2));
}

#[test]
fn a_reload_ends_the_groups_the_policy_no_longer_names() {
    let mut f = Fabric::up(POLICY);
    let (storage2, apps) = (mgid("ff12:401b:8a01::ffff:ffff"), mgid("ff15:1234::1"));
    assert_eq!(f.member(1, Method::Set, storage2), status::OK);
    let mlid = f.groups(0, true).iter().find(|r| r.mgid == storage2).map(|r| r.mlid);

    // apps goes: its empty group ends; storage loses `ipoib`: its broadcast group lives on with
    // its member, as an ordinary group, until that member leaves.
    f.reload("Default=0x7fff,ipoib : ALL=full ;\nstorage=0x0a01 : {h1}=full, {h2}=full ;\n");
    let now: Vec<Gid> = f.groups(0, true).iter().map(|r| r.mgid).collect();
    assert!(!now.contains(&apps), "{now:?}");
    assert!(now.contains(&storage2), "{now:?}");
    assert_eq!(f.groups(0, true).iter().find(|r| r.mgid == storage2).map(|r| r.mlid), mlid, "same MLID");
    assert_eq!(f.member(1, Method::Delete, storage2), status::OK);
    assert!(!f.groups(0, true).iter().any(|r| r.mgid == storage2), "ended with its last member");
}

#[test]
fn trusted_p_key_table_records_include_the_enforcing_switch_ports() {
    let mut f = Fabric::up(POLICY);
    let h1 = f.hosts[1];
    let leaf = f.topo.nodes[h1].peer(1).expect("cabled");
    let leaf_lid = f.drv.sm.guid2lid().get(f.topo.nodes[leaf.node].port_guid(0)).expect("switch LID").0;
    let rec = PKeyTableRecord { lid: leaf_lid, ..PKeyTableRecord::parse(&[0; 72]).expect("record") };
    let ask = |f: &mut Fabric, key: u64| -> (u16, Vec<(u8, Vec<u16>)>) {
        let (from, now) = (f.lid(0), f.drv.now());
        let (st, data) = through_core(&mut f.drv, now, from, (Method::GetTable, PKeyTableRecord::COMP_LID, key), &rec);
        let recs = data
            .chunks_exact(stride::<PKeyTableRecord>())
            .map(|c| PKeyTableRecord::parse(c).expect("record"))
            .filter(|r| r.lid.0 == leaf_lid.0)
            .map(|r| (r.port_num.0, r.pkey_table.keys.iter().map(|k| k.0).filter(|&k| k != 0).collect()))
            .collect();
        (st, recs)
    };
    let (st, trusted) = ask(&mut f, 1);
    assert_eq!(st, status::OK);
    assert!(trusted.iter().any(|(p, _)| *p == 0), "the switch's port 0: {trusted:?}");
    // A record per block of the port's PartitionEnforcementCap: the first holds h1's table.
    let facing: Vec<&Vec<u16>> = trusted.iter().filter(|(p, _)| *p == leaf.port).map(|(_, k)| k).collect();
    assert_eq!(facing.first(), Some(&&vec![0xffff, 0x8a01, 0x0a03]), "h1's table on the port facing it");
    assert!(facing[1..].iter().all(|k| k.is_empty()), "{facing:?}");
    let (st, untrusted) = ask(&mut f, 0);
    assert_eq!((st, untrusted.len()), (status::SA_REQ_INVALID, 0), "untrusted: refused");
}
