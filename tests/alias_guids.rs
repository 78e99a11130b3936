//! Alias GUIDs on the simulated fabric (issue 27): GUIDInfoRecord Set and Delete through the
//! SA, the SubnSet(GUIDInfo) that reaches the port (read back from the simulated port), Get,
//! who may change a port's aliases, GUIDCap, duplicates, path records to and from an alias
//! GID, and the aliases kept across a sweep.

use ibsm::core::{Guid2Lid, Sm, SmConfig};
use ibsm::transport::sim::SimDriver;
use ibsm_mad::attrs::GuidInfo;
use ibsm_mad::header::Method;
use ibsm_mad::ids::status;
use ibsm_mad::records::{GuidInfoRecord, PathRecord, stride};
use ibsm_mad::{Attribute, Gid, Guid, Lid};
use ibsm_topology::NodeKind;

mod support;
use support::sa::{LIMIT, PREFIX, example, path_query, through_core};

/// GUIDInfoRecord's mask bit for GUID `n` of the block.
fn guid_bit(n: u32) -> u64 {
    GuidInfoRecord::COMP_GUID0 << n
}

const KEY: u64 = GuidInfoRecord::COMP_LID | GuidInfoRecord::COMP_BLOCK_NUM;

struct Fabric {
    drv: SimDriver,
    /// Two hosts (topology node, port GUID, LID), not the SM's: the first with GUIDCap 16.
    hosts: [(usize, Guid, Lid); 2],
}

fn swept() -> Fabric {
    let topo = example("fat-tree-2l-k4.net");
    let mut drv = SimDriver::new(&topo, 11, Sm::new(SmConfig::default(), Guid2Lid::default()), None).expect("attach");
    let cas: Vec<usize> =
        (0..topo.nodes.len()).filter(|&i| topo.nodes[i].kind == NodeKind::Ca && i != drv.at.0).take(2).collect();
    drv.fabric.set_guid_cap(cas[0], 1, 16);
    drv.fabric.set_guid_cap(cas[1], 1, 8);
    assert!(drv.sweep(LIMIT, |_| {}).expect("up").complete);
    let host = |i: usize| {
        let g = topo.nodes[i].port_guid(1);
        (i, g, drv.sm.guid2lid().get(g).expect("LID").0)
    };
    let hosts = [host(cas[0]), host(cas[1])];
    Fabric { drv, hosts }
}

impl Fabric {
    /// A GUIDInfoRecord request from `from` with `sm_key`; the answer's status and record.
    fn gir(
        &mut self,
        from: Lid,
        method: Method,
        mask: u64,
        sm_key: u64,
        rec: &GuidInfoRecord,
    ) -> (u16, GuidInfoRecord) {
        let now = self.drv.now();
        let (st, data) = through_core(&mut self.drv, now, from, (method, mask, sm_key), rec);
        (st, GuidInfoRecord::parse(&data).unwrap_or_default())
    }

    /// Every GUIDInfoRecord of the port at `lid` (GetTable by LID).
    fn table(&mut self, lid: Lid) -> Vec<GuidInfoRecord> {
        let now = self.drv.now();
        let rec = GuidInfoRecord { lid, ..GuidInfoRecord::default() };
        let (st, data) = through_core(&mut self.drv, now, lid, (Method::GetTable, GuidInfoRecord::COMP_LID, 0), &rec);
        assert_eq!(st, status::OK);
        let s = stride::<GuidInfoRecord>();
        data.chunks(s)
            .filter(|c| c.len() >= GuidInfoRecord::LEN)
            .filter_map(|c| GuidInfoRecord::parse(c).ok())
            .filter(|r| r.lid == lid)
            .collect()
    }

    /// Runs the SM and fabric until host `h`'s port holds `want` (its GUIDInfo table as the
    /// simulated port keeps it), or a deadline of 10 s virtual time.
    fn port_holds(&mut self, h: usize, want: &[Guid]) -> Vec<Guid> {
        let node = self.hosts[h].0;
        let end = self.drv.now() + 10_000_000_000;
        loop {
            let held = self.drv.fabric.port_guids(node, 1).expect("port");
            if held == want || self.drv.now() >= end {
                return held;
            }
            let step = self.drv.now() + 1_000_000;
            self.drv.run_until(step, |_| false);
            if self.drv.now() < step {
                self.drv.fabric.advance_to(ibsm_sim::fabric::SimTime(step));
            }
        }
    }

    /// A PathRecord Get from `from` naming SGID and DGID by GUID.
    fn path(&mut self, from: Lid, sgid: Guid, dgid: Guid) -> (u16, PathRecord) {
        let (mask, rec) = path_query(None, None, Some(sgid), Some(dgid));
        let now = self.drv.now();
        let (st, data) = through_core(&mut self.drv, now, from, (Method::Get, mask, 0), &rec);
        (st, PathRecord::parse(&data).unwrap_or_default())
    }
}

#[test]
fn a_port_sets_and_deletes_its_alias_guids_and_the_sm_writes_them_to_the_port() {
    let mut f = swept();
    let [(_, g0, lid0), (_, g1, lid1)] = f.hosts;
    let alias = Guid(0x0002_c903_00ab_0001);
    // The port itself, untrusted: index 1 given, index 2 assigned by the SA (0 asks for one).
    let mut rec = GuidInfoRecord { lid: lid0, block_num: 0, guid_info: GuidInfo::default() };
    rec.guid_info.guids[1] = alias;
    let (st, got) = f.gir(lid0, Method::Set, KEY | guid_bit(1) | guid_bit(2), 0, &rec);
    assert_eq!(st, status::OK);
    assert_eq!((got.lid, got.block_num, got.guid_info.guids[0], got.guid_info.guids[1]), (lid0, 0, g0, alias));
    let assigned = got.guid_info.guids[2];
    assert_eq!(assigned.0 >> 40, 0x00_1405, "an SA-assigned GUID carries OpenSM's OUI: {assigned:?}");
    // Block 1 (entries 8..15): one more.
    let mut rec1 = GuidInfoRecord { lid: lid0, block_num: 1, guid_info: GuidInfo::default() };
    rec1.guid_info.guids[7] = Guid(0x0002_c903_00ab_000f);
    assert_eq!(f.gir(lid0, Method::Set, KEY | guid_bit(7), 0, &rec1).0, status::OK);

    // The SM writes both blocks to the port.
    let mut want = vec![Guid(0); 16];
    (want[0], want[1], want[2], want[15]) = (g0, alias, assigned, Guid(0x0002_c903_00ab_000f));
    assert_eq!(f.port_holds(0, &want), want);

    // Get answers them, block by block.
    let t = f.table(lid0);
    assert_eq!(t.len(), 2, "GUIDCap 16: two blocks");
    assert_eq!(t[0].guid_info.guids[..3], [g0, alias, assigned]);
    assert_eq!(t[1].guid_info.guids[7], Guid(0x0002_c903_00ab_000f));

    // Path records to and from the alias GID: the port's path, the alias echoed.
    let (st, by_port) = f.path(lid1, g1, g0);
    assert_eq!(st, status::OK);
    let (st, to_alias) = f.path(lid1, g1, alias);
    assert_eq!(st, status::OK);
    assert_eq!(to_alias.dgid, Gid { prefix: PREFIX, guid: alias });
    assert_eq!(
        (to_alias.dlid, to_alias.slid, to_alias.mtu, to_alias.rate),
        (by_port.dlid, by_port.slid, by_port.mtu, by_port.rate)
    );
    assert_eq!(to_alias.dlid, lid0);
    let (st, from_alias) = f.path(lid0, assigned, g1);
    assert_eq!(st, status::OK);
    assert_eq!((from_alias.sgid.guid, from_alias.slid, from_alias.dlid), (assigned, lid0, lid1));

    // A sweep keeps them.
    assert!(f.drv.sweep(LIMIT, |_| {}).expect("up").complete);
    assert_eq!(f.table(lid0)[0].guid_info.guids[..3], [g0, alias, assigned]);
    assert_eq!(f.path(lid1, g1, alias).0, status::OK);

    // Delete index 1: the port's entry is cleared, and the alias names no port any more.
    let (st, got) = f.gir(lid0, Method::Delete, KEY | guid_bit(1), 0, &rec);
    assert_eq!(st, status::OK);
    assert_eq!(got.guid_info.guids[..3], [g0, Guid(0), assigned]);
    want[1] = Guid(0);
    assert_eq!(f.port_holds(0, &want), want);
    assert_eq!(f.path(lid1, g1, alias).0, status::SA_INVALID_GID);
}

#[test]
fn only_the_port_or_a_trusted_requester_changes_aliases_within_guidcap_and_without_duplicates() {
    let mut f = swept();
    let [(_, g0, lid0), (_, g1, lid1)] = f.hosts;
    let alias = Guid(0x0002_c903_00cd_0001);
    let mut rec = GuidInfoRecord { lid: lid0, block_num: 0, guid_info: GuidInfo::default() };
    rec.guid_info.guids[1] = alias;
    // Another port, untrusted: denied, and nothing changes.
    assert_eq!(f.gir(lid1, Method::Set, KEY | guid_bit(1), 0, &rec).0, status::SA_REQ_DENIED);
    assert_eq!(f.gir(lid1, Method::Delete, KEY | guid_bit(1), 0, &rec).0, status::SA_REQ_DENIED);
    assert_eq!(f.table(lid0)[0].guid_info.guids[1], Guid(0));
    // The same with the SA key (trusted): done.
    let (st, got) = f.gir(lid1, Method::Set, KEY | guid_bit(1), 1, &rec);
    assert_eq!((st, got.guid_info.guids[1]), (status::OK, alias));

    // Index 0 is the port GUID: read-only. The LID and block must be named.
    assert_eq!(f.gir(lid0, Method::Set, KEY | guid_bit(0), 0, &rec).0, status::SA_REQ_INVALID);
    assert_eq!(
        f.gir(lid0, Method::Set, GuidInfoRecord::COMP_LID | guid_bit(1), 0, &rec).0,
        status::SA_INSUFFICIENT_COMPONENTS
    );

    // GUIDCap 8 on the second host: block 1 does not exist.
    let mut past = GuidInfoRecord { lid: lid1, block_num: 1, guid_info: GuidInfo::default() };
    past.guid_info.guids[0] = Guid(0x0002_c903_00cd_0100);
    assert_eq!(f.gir(lid1, Method::Set, KEY | guid_bit(0), 0, &past).0, status::SA_NO_RECORDS);
    assert_eq!(f.table(lid1).len(), 1);

    // Duplicates: the first host's alias, or the first host's port GUID, on the second host are
    // refused (the entry keeps what it held: 0); its own alias at two indices is kept once.
    let mut dup = GuidInfoRecord { lid: lid1, block_num: 0, guid_info: GuidInfo::default() };
    dup.guid_info.guids[1] = alias;
    dup.guid_info.guids[2] = g0;
    dup.guid_info.guids[3] = Guid(0x0002_c903_00cd_0003);
    let (st, got) = f.gir(lid1, Method::Set, KEY | guid_bit(1) | guid_bit(2) | guid_bit(3), 0, &dup);
    assert_eq!(st, status::OK);
    assert_eq!(got.guid_info.guids[..4], [g1, Guid(0), Guid(0), Guid(0x0002_c903_00cd_0003)]);
    dup.guid_info.guids[4] = Guid(0x0002_c903_00cd_0003);
    let (_, got) = f.gir(lid1, Method::Set, KEY | guid_bit(4), 0, &dup);
    assert_eq!(got.guid_info.guids[4], Guid(0));
    // The port holds exactly what the SA answered.
    let mut want = vec![Guid(0); 8];
    (want[0], want[3]) = (g1, Guid(0x0002_c903_00cd_0003));
    assert_eq!(f.port_holds(1, &want), want);
    // The alias still names the first host.
    let (st, p) = f.path(lid1, g1, alias);
    assert_eq!((st, p.dlid), (status::OK, lid0));
}
