//! GUIDInfoRecord (Get, GetTable, Set, Delete): each end port's GUIDInfo table, keyed by its
//! LID and block, and the alias GUIDs the SA assigns in it ([`Aliases`]).
//!
//! A port's table holds its port GUID at index 0 (read-only) and the alias GUIDs set through
//! this SA at indices 1 up to its PortInfo.GUIDCap, zeros elsewhere, in as many blocks of 8 as
//! GUIDCap asks (at least one). Get and GetTable answer every port the requester can see (its
//! own and those it can talk to), as OpenSM does.
//!
//! Set and Delete follow the IBTA rules as OpenSM applies them: the mask must name the LID and
//! the block; the GUIDs the mask selects are set (or cleared); selecting index 0 is
//! REQ_INVALID; a block past GUIDCap is NO_RECORDS; entries past GUIDCap in the last block are
//! left alone. A Set entry of 0 (or all ones) asks the SA to assign a GUID: the one the index
//! holds already, else a new one laid out as OpenSM's (OUI 00:14:05 in bits 40..63, the
//! configured `sm-assigned-guid` byte in bits 32..39, a counter below). A GUID that is already
//! another port's GUID or alias, or this port's at another index, is refused: the entry keeps
//! what it held. The answer is the block as the SA now holds it. Only the port itself or a
//! trusted requester (one carrying the SA key) may change a port's aliases; others get
//! REQ_DENIED. The SA's table is the truth: the core writes each changed block to the port
//! with SubnSet(GUIDInfo) ([`Aliases::writes`]), and a port that leaves the subnet loses its
//! aliases (as OpenSM drops them with the port).

use std::collections::{BTreeMap, HashMap};

use ibsm_mad::attrs::GuidInfo;
use ibsm_mad::header::Method;
use ibsm_mad::ids::status;
use ibsm_mad::records::GuidInfoRecord;
use ibsm_mad::{Attribute, Guid};

use super::answer::Table;
use super::node_record::{candidates, end_ports};
use super::snapshot::{PortAt, Snapshot};
use super::{Answer, Limits, Query};

/// The OUI in SA-assigned GUIDs (bits 40..63): OpenSM's, the OpenIB vendor ID.
const ASSIGNED_OUI: u64 = 0x00_1405;

/// How many fresh GUIDs one assignment tries before giving up.
const ASSIGN_TRIES: u32 = 1000;

/// The alias GUIDs of every port, and what the ports were written.
#[derive(Debug, Clone, Default)]
pub struct Aliases {
    /// Per port GUID: its aliases by index (never index 0).
    tables: BTreeMap<Guid, BTreeMap<u8, Guid>>,
    /// Alias GUID to its port GUID and index.
    owners: HashMap<Guid, (Guid, u8)>,
    /// Bits 32..39 of SA-assigned GUIDs (OpenSM's `sm_assigned_guid`).
    assigned_byte: u8,
    /// The low 32 bits of the last SA-assigned GUID.
    counter: u32,
    /// The blocks this SM wrote (or is writing) to each port: (port GUID, block).
    written: HashMap<(Guid, u8), GuidInfo>,
}

impl Aliases {
    /// Ports with aliases.
    pub fn len(&self) -> usize {
        self.tables.len()
    }

    /// No port has an alias.
    pub fn is_empty(&self) -> bool {
        self.tables.is_empty()
    }

    /// Sets bits 32..39 of the GUIDs the SA assigns from now on.
    pub fn set_assigned_byte(&mut self, byte: u8) {
        self.assigned_byte = byte;
    }

    /// The port GUID that `guid` is an alias of, if it is one.
    pub fn port_of(&self, guid: Guid) -> Option<Guid> {
        self.owners.get(&guid).map(|&(port, _)| port)
    }

    /// The end port `guid` names in `snap`: a port GUID, or an alias of one.
    pub fn resolve(&self, snap: &Snapshot, guid: Guid) -> Option<PortAt> {
        snap.by_guid(guid).or_else(|| snap.by_guid(self.port_of(guid)?))
    }

    /// Block `block` of the table of port `port` (GUID `port`), as the SA holds it.
    pub fn block(&self, port: Guid, block: u8) -> GuidInfo {
        let mut info = GuidInfo::default();
        let first = usize::from(block) * GuidInfo::ENTRIES;
        if first == 0 {
            info.guids[0] = port;
        }
        if let Some(t) = self.tables.get(&port) {
            for (&i, &g) in t.range(u8::try_from(first).unwrap_or(u8::MAX)..) {
                match usize::from(i).checked_sub(first) {
                    Some(k) if k < GuidInfo::ENTRIES => info.guids[k] = g,
                    _ => break,
                }
            }
        }
        info
    }

    /// Every port's aliases, for the standbys: (port GUID, [(index, alias)]).
    pub fn export(&self) -> Vec<(Guid, Vec<(u8, Guid)>)> {
        self.tables.iter().map(|(&p, t)| (p, t.iter().map(|(&i, &g)| (i, g)).collect())).collect()
    }

    /// Takes a master's aliases (a takeover). What the ports hold is not known: every block
    /// with an alias is written again ([`Aliases::writes`]). A GUID named twice is kept once.
    pub fn restore(&mut self, tables: Vec<(Guid, Vec<(u8, Guid)>)>) {
        self.tables.clear();
        self.owners.clear();
        self.written.clear();
        for (port, entries) in tables {
            for (i, g) in entries {
                if i == 0 || g.0 == 0 || self.owners.contains_key(&g) {
                    continue;
                }
                self.owners.insert(g, (port, i));
                self.tables.entry(port).or_default().insert(i, g);
            }
        }
    }

    /// A sweep ended with `snap`: the ports no longer in it lose their aliases, and what they
    /// were written is forgotten (a port that comes back is written again when it gets some).
    pub fn retain_present(&mut self, snap: &Snapshot) {
        let gone: Vec<Guid> = self.tables.keys().copied().filter(|p| snap.by_guid(*p).is_none()).collect();
        for p in gone {
            if let Some(t) = self.tables.remove(&p) {
                for g in t.values() {
                    self.owners.remove(g);
                }
            }
        }
        self.written.retain(|(p, _), _| snap.by_guid(*p).is_some());
    }

    /// The blocks to write to the ports of `snap`: each block whose table differs from what
    /// this SM wrote there, as (port, port GUID, block, the block). They count as written from
    /// now on; [`Aliases::write_failed`] forgets one whose write timed out.
    pub fn writes(&mut self, snap: &Snapshot) -> Vec<(PortAt, Guid, u8, GuidInfo)> {
        let mut keys: Vec<(Guid, u8)> = self.written.keys().copied().collect();
        for (&p, t) in &self.tables {
            keys.extend(t.keys().map(|&i| (p, i / 8)));
        }
        keys.sort_unstable();
        keys.dedup();
        let mut out = Vec::new();
        for (port, block) in keys {
            let Some(at) = snap.by_guid(port) else { continue };
            let want = self.block(port, block);
            // A block never written is as the port powered on: its GUID, no alias.
            let mut held = GuidInfo::default();
            if block == 0 {
                held.guids[0] = port;
            }
            if self.written.get(&(port, block)).unwrap_or(&held) == &want {
                continue;
            }
            self.written.insert((port, block), want);
            out.push((at, port, block, want));
        }
        out
    }

    /// A SubnSet(GUIDInfo) of `block` to port `port` timed out: it is written again when next
    /// asked.
    pub fn write_failed(&mut self, port: Guid, block: u8) {
        self.written.remove(&(port, block));
    }

    /// Get, GetTable, Set or Delete(GUIDInfoRecord).
    pub(super) fn query(&mut self, snap: &Snapshot, q: &Query<'_>, limits: &Limits) -> Answer {
        match q.header.method {
            Method::Set => self.change(snap, q, false),
            Method::Delete => self.change(snap, q, true),
            _ => self.get(snap, q, limits),
        }
    }

    fn get(&self, snap: &Snapshot, q: &Query<'_>, limits: &Limits) -> Answer {
        let mut t = Table::new::<GuidInfoRecord>(q, limits);
        'ports: for at in candidates(snap, q, GuidInfoRecord::COMP_LID, 0) {
            let Some(port) = snap.port(at) else { continue };
            for block in 0..blocks(port.info.map_or(1, |i| i.guid_cap)) {
                let rec = GuidInfoRecord { lid: port.lid, block_num: block, guid_info: self.block(port.guid, block) };
                if !t.offer(q, &rec) {
                    break 'ports;
                }
            }
        }
        t.answer(q, limits)
    }

    /// Set (`delete` false) or Delete the entries the mask selects in one block.
    fn change(&mut self, snap: &Snapshot, q: &Query<'_>, delete: bool) -> Answer {
        let h = &q.header;
        let need = GuidInfoRecord::COMP_LID | GuidInfoRecord::COMP_BLOCK_NUM;
        if h.comp_mask & need != need {
            return Answer::error(h, status::SA_INSUFFICIENT_COMPONENTS);
        }
        let Ok(rec) = GuidInfoRecord::parse(q.template) else { return Answer::error(h, status::SA_REQ_INVALID) };
        let Some(at) = end_ports(snap, q, GuidInfoRecord::COMP_LID, 0).next() else {
            return Answer::error(h, status::SA_NO_RECORDS);
        };
        let Some(port) = snap.port(at) else { return Answer::error(h, status::SA_NO_RECORDS) };
        if !q.trusted && snap.by_lid(q.requester) != Some(at) {
            return Answer::error(h, status::SA_REQ_DENIED);
        }
        let cap = usize::from(port.info.map_or(1, |i| i.guid_cap).max(1));
        if rec.block_num >= blocks(port.info.map_or(1, |i| i.guid_cap)) {
            return Answer::error(h, status::SA_NO_RECORDS);
        }
        let selected = (h.comp_mask / GuidInfoRecord::COMP_GUID0) & 0xff;
        if rec.block_num == 0 && selected & 1 != 0 {
            return Answer::error(h, status::SA_REQ_INVALID);
        }
        let first = usize::from(rec.block_num) * GuidInfo::ENTRIES;
        for k in (0..GuidInfo::ENTRIES).filter(|k| selected & (1 << k) != 0) {
            let Some(index) = u8::try_from(first + k).ok().filter(|&i| usize::from(i) < cap) else { break };
            if delete {
                self.remove(port.guid, index);
                continue;
            }
            let asked = rec.guid_info.guids[k];
            let guid = if asked.0 == 0 || asked.0 == u64::MAX {
                match self.tables.get(&port.guid).and_then(|t| t.get(&index)) {
                    Some(&held) => held,
                    None => match self.assign(snap) {
                        Some(g) => g,
                        None => return Answer::error(h, status::SA_NO_RESOURCES),
                    },
                }
            } else {
                asked
            };
            match self.owners.get(&guid) {
                Some(&owner) if owner == (port.guid, index) => {}
                // Another port's alias, or this port's at another index: refused.
                Some(_) => {}
                // Some port's own GUID: refused.
                None if snap.by_guid(guid).is_some() => {}
                None => {
                    self.remove(port.guid, index);
                    self.owners.insert(guid, (port.guid, index));
                    self.tables.entry(port.guid).or_default().insert(index, guid);
                }
            }
        }
        let answer =
            GuidInfoRecord { lid: port.lid, block_num: rec.block_num, guid_info: self.block(port.guid, rec.block_num) };
        let offset = (ibsm_mad::records::stride::<GuidInfoRecord>() / 8) as u16;
        Answer::single(h.response(status::OK, offset), &answer.to_vec(), 1)
    }

    /// Removes the alias at `index` of `port`, if any.
    fn remove(&mut self, port: Guid, index: u8) {
        let Some(t) = self.tables.get_mut(&port) else { return };
        if let Some(g) = t.remove(&index) {
            self.owners.remove(&g);
        }
        if t.is_empty() {
            self.tables.remove(&port);
        }
    }

    /// A GUID no port and no alias has, from the SA's own range; `None` when none is left.
    fn assign(&mut self, snap: &Snapshot) -> Option<Guid> {
        for _ in 0..ASSIGN_TRIES {
            self.counter = self.counter.checked_add(1)?;
            let g = Guid(ASSIGNED_OUI << 40 | u64::from(self.assigned_byte) << 32 | u64::from(self.counter));
            if !self.owners.contains_key(&g) && snap.by_guid(g).is_none() {
                return Some(g);
            }
        }
        None
    }
}

/// Blocks of a GUIDInfo table of `cap` entries (at least one).
fn blocks(cap: u8) -> u8 {
    cap.max(1).div_ceil(8)
}
