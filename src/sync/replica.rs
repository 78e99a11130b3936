//! The replicated state and its byte encoding, section by section.
//!
//! Owns [`Replica`] (what a standby needs to take over without changing anything a port or an
//! application sees) and the encoding of each [`Section`]: big-endian integers, a 32-bit count
//! before every list, records in their SA wire format. Decoding checks every length and count
//! against the bytes there are; it never panics and allocates no more than the input justifies.

use std::collections::BTreeMap;

use ibsm_mad::records::{InformInfo, JoinState, McMemberRecord, ServiceRecord};
use ibsm_mad::{Attribute, Gid, Guid, Lid, PKey};

use crate::sa::inform::Subscription;
use crate::sa::multicast::Group;

/// A part of the replicated state, sent and versioned on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Section {
    /// Port GUID to LID range.
    Guid2Lid = 1,
    /// The M_Key each port holds, and the cable map (which port is at the end of each cable).
    MKeys = 2,
    /// The P_Key table of every port the master wrote whole (which P_Key sits at which index):
    /// what the ports hold, so that a new master rewrites none of it.
    PKeys = 3,
    /// Multicast groups: parameters, MLID, members.
    Groups = 4,
    /// Registered services and their leases.
    Services = 5,
    /// Event subscriptions.
    Informs = 6,
    /// The ports an operator disabled (`ibsm port disable`).
    DisabledPorts = 7,
    /// Per switch, a digest of the forwarding table it holds whole (and its LinearFDBTop):
    /// a new master that computes the same table trusts the switch without reading it back.
    LftDigests = 8,
    /// The ports the babbling-port policy disabled, with their back-off deadlines: a new
    /// master enables each at the end of its back-off.
    BabblingPorts = 9,
    /// Alias GUIDs the SA assigned (GUIDInfoRecord Set), by port and index.
    Aliases = 10,
    /// Per node, digests of the SL2VL tables and of the VLArbitration blocks the master wrote
    /// (QoS): a new master that wants the same tables of a kind writes none of them.
    QosTables = 11,
}

impl Section {
    /// Every section, in id order.
    pub const ALL: [Section; 11] = [
        Section::Guid2Lid,
        Section::MKeys,
        Section::PKeys,
        Section::Groups,
        Section::Services,
        Section::Informs,
        Section::DisabledPorts,
        Section::LftDigests,
        Section::BabblingPorts,
        Section::Aliases,
        Section::QosTables,
    ];

    /// The highest section id this build takes (every lower one too): what a sync message
    /// says in its `takes` field ([`super::wire::Message::takes`]).
    pub const MAX_ID: u8 = {
        let (mut i, mut max) = (0, 0);
        while i < Section::ALL.len() {
            if Section::ALL[i] as u8 > max {
                max = Section::ALL[i] as u8;
            }
            i += 1;
        }
        max
    };

    /// The section with id `id`.
    pub fn from_id(id: u8) -> Option<Section> {
        Section::ALL.into_iter().find(|s| *s as u8 == id)
    }

    /// The id on the wire.
    pub const fn id(self) -> u8 {
        self as u8
    }

    /// A section of digests of tables the switches hold (LFTs, QoS tables): a standby that
    /// holds one whole takes those tables as held. It goes to a standby ahead of every other
    /// section queued, and one it has begun to receive in a newer content voids the one it
    /// holds (the receiver's `superseded`): the master may be writing those tables.
    pub const fn urgent(self) -> bool {
        matches!(self, Section::LftDigests | Section::QosTables)
    }

    /// Its name in logs and the status.
    pub const fn name(self) -> &'static str {
        match self {
            Section::Guid2Lid => "guid2lid",
            Section::MKeys => "m_keys",
            Section::PKeys => "pkeys",
            Section::Groups => "multicast",
            Section::Services => "services",
            Section::Informs => "informs",
            Section::DisabledPorts => "disabled_ports",
            Section::LftDigests => "lft_digests",
            Section::BabblingPorts => "babbling_ports",
            Section::Aliases => "aliases",
            Section::QosTables => "qos_tables",
        }
    }
}

/// What a standby takes over with.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Replica {
    /// Port GUID to LID range (`min..=max`).
    pub guid2lid: Vec<(Guid, Lid, Lid)>,
    /// The M_Key each port holds.
    pub mkeys: Vec<(Guid, u64)>,
    /// (node GUID, port) at one end of a cable to the node GUID at the other.
    pub neighbors: Vec<((Guid, u8), Guid)>,
    /// P_Key table of every end port (and enforcing switch port), index by index.
    pub pkeys: Vec<(Guid, Vec<PKey>)>,
    /// Multicast groups.
    pub groups: Vec<Group>,
    /// The counter the SA's own MGIDs are made from.
    pub next_mgid: u32,
    /// Registered services and when their leases end (ns on the sender's clock).
    pub services: Vec<(ServiceRecord, Option<u64>)>,
    /// Event subscriptions.
    pub informs: Vec<Subscription>,
    /// Ports an operator disabled: (node GUID, port).
    pub disabled_ports: Vec<(Guid, u8)>,
    /// Switches holding a whole table: (node GUID, LinearFDBTop, digest of the table).
    pub lft_digests: Vec<(Guid, u16, u64)>,
    /// Ports the babbling-port policy disabled.
    pub babbling_ports: Vec<BabblingPort>,
    /// Alias GUIDs: (port GUID, [(index, alias GUID)]).
    pub aliases: Vec<(Guid, Vec<(u8, Guid)>)>,
    /// QoS tables written: (node GUID, digest of its SL2VL tables, of its VLArbitration blocks).
    pub qos_tables: Vec<(Guid, u64, u64)>,
}

/// A port the babbling-port policy disabled, as replicated (times in ns on the sender's clock
/// until [`crate::sync::Receiver::replica`] re-bases them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BabblingPort {
    /// The port disabled: (node GUID, port).
    pub port: (Guid, u8),
    /// The port whose traps passed the limit (the disabled port, or its peer).
    pub babbler: (Guid, u8),
    /// Traps counted from it in the window.
    pub traps: u32,
    /// When it was disabled.
    pub since: u64,
    /// When its back-off ends.
    pub until: u64,
}

/// A section's bytes do not decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeError;

struct Writer(Vec<u8>);

impl Writer {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    fn count(&mut self, n: usize) {
        self.u32(u32::try_from(n).unwrap_or(u32::MAX));
    }
    fn record<A: Attribute>(&mut self, a: &A) {
        self.0.extend_from_slice(&a.to_vec());
    }
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], DecodeError> {
        if self.0.len() < n {
            return Err(DecodeError);
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, DecodeError> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }
    fn u32(&mut self) -> Result<u32, DecodeError> {
        self.take(4)?.try_into().map(u32::from_be_bytes).map_err(|_| DecodeError)
    }
    fn u64(&mut self) -> Result<u64, DecodeError> {
        self.take(8)?.try_into().map(u64::from_be_bytes).map_err(|_| DecodeError)
    }
    /// A count of items of at least `min_item` bytes each: no larger than the bytes left allow.
    fn count(&mut self, min_item: usize) -> Result<usize, DecodeError> {
        let n = self.u32()? as usize;
        if n.saturating_mul(min_item.max(1)) > self.0.len() {
            return Err(DecodeError);
        }
        Ok(n)
    }
    fn record<A: Attribute>(&mut self) -> Result<A, DecodeError> {
        A::parse(self.take(A::LEN)?).map_err(|_| DecodeError)
    }
    fn gid(&mut self) -> Result<Gid, DecodeError> {
        Ok(Gid { prefix: self.u64()?, guid: Guid(self.u64()?) })
    }
    fn end(&self) -> Result<(), DecodeError> {
        if self.0.is_empty() { Ok(()) } else { Err(DecodeError) }
    }
}

/// "No lease end" on the wire.
const FOREVER: u64 = u64::MAX;

impl Replica {
    /// The bytes of `section`.
    pub fn encode(&self, section: Section) -> Vec<u8> {
        let mut w = Writer(Vec::new());
        match section {
            Section::Guid2Lid => {
                w.count(self.guid2lid.len());
                for (g, min, max) in &self.guid2lid {
                    w.u64(g.0);
                    w.u16(min.0);
                    w.u16(max.0);
                }
            }
            Section::MKeys => {
                w.count(self.mkeys.len());
                for (g, k) in &self.mkeys {
                    w.u64(g.0);
                    w.u64(*k);
                }
                w.count(self.neighbors.len());
                for ((g, p), peer) in &self.neighbors {
                    w.u64(g.0);
                    w.u8(*p);
                    w.u64(peer.0);
                }
            }
            Section::PKeys => {
                w.count(self.pkeys.len());
                for (g, keys) in &self.pkeys {
                    w.u64(g.0);
                    w.u16(u16::try_from(keys.len()).unwrap_or(u16::MAX));
                    for k in keys.iter().take(usize::from(u16::MAX)) {
                        w.u16(k.0);
                    }
                }
            }
            Section::Groups => {
                w.u32(self.next_mgid);
                w.count(self.groups.len());
                for g in &self.groups {
                    w.record(&g.params);
                    w.u8(u8::from(g.persistent));
                    w.count(g.members.len());
                    for (m, js) in &g.members {
                        w.u64(m.0);
                        w.u8(js.0);
                    }
                }
            }
            Section::Services => {
                w.count(self.services.len());
                for (rec, expires) in &self.services {
                    w.record(rec);
                    w.u64(expires.unwrap_or(FOREVER));
                }
            }
            Section::Informs => {
                w.count(self.informs.len());
                for s in &self.informs {
                    w.u64(s.subscriber.prefix);
                    w.u64(s.subscriber.guid.0);
                    w.u16(s.lid.0);
                    w.record(&s.info);
                    w.u16(s.enum_);
                    w.u8(u8::from(s.trusted));
                }
            }
            Section::DisabledPorts => {
                w.count(self.disabled_ports.len());
                for (g, p) in &self.disabled_ports {
                    w.u64(g.0);
                    w.u8(*p);
                }
            }
            Section::LftDigests => {
                w.count(self.lft_digests.len());
                for (g, top, digest) in &self.lft_digests {
                    w.u64(g.0);
                    w.u16(*top);
                    w.u64(*digest);
                }
            }
            Section::Aliases => write_aliases(&mut w, &self.aliases),
            Section::QosTables => write_qos_tables(&mut w, &self.qos_tables),
            Section::BabblingPorts => {
                w.count(self.babbling_ports.len());
                for b in &self.babbling_ports {
                    w.u64(b.port.0.0);
                    w.u8(b.port.1);
                    w.u64(b.babbler.0.0);
                    w.u8(b.babbler.1);
                    w.u32(b.traps);
                    w.u64(b.since);
                    w.u64(b.until);
                }
            }
        }
        w.0
    }

    /// Replaces `section` of this replica with the one in `bytes`.
    ///
    /// # Errors
    /// [`DecodeError`] when the bytes are not a whole, well-formed section; the replica is
    /// unchanged then.
    pub fn decode(&mut self, section: Section, bytes: &[u8]) -> Result<(), DecodeError> {
        let mut r = Reader(bytes);
        let mut next = self.clone();
        match section {
            Section::Guid2Lid => {
                let n = r.count(12)?;
                next.guid2lid =
                    (0..n)
                        .map(|_| Ok((Guid(r.u64()?), Lid(r.u16()?), Lid(r.u16()?))))
                        .collect::<Result<_, DecodeError>>()?;
            }
            Section::MKeys => {
                let n = r.count(16)?;
                next.mkeys = (0..n).map(|_| Ok((Guid(r.u64()?), r.u64()?))).collect::<Result<_, DecodeError>>()?;
                let n = r.count(17)?;
                next.neighbors = (0..n)
                    .map(|_| Ok(((Guid(r.u64()?), r.u8()?), Guid(r.u64()?))))
                    .collect::<Result<_, DecodeError>>()?;
            }
            Section::PKeys => {
                let n = r.count(10)?;
                next.pkeys = (0..n)
                    .map(|_| {
                        let g = Guid(r.u64()?);
                        let k = usize::from(r.u16()?);
                        let keys = (0..k).map(|_| r.u16().map(PKey)).collect::<Result<_, DecodeError>>()?;
                        Ok((g, keys))
                    })
                    .collect::<Result<_, DecodeError>>()?;
            }
            Section::Groups => {
                next.next_mgid = r.u32()?;
                let n = r.count(McMemberRecord::LEN + 5)?;
                next.groups = (0..n).map(|_| read_group(&mut r)).collect::<Result<_, DecodeError>>()?;
            }
            Section::Services => {
                let n = r.count(ServiceRecord::LEN + 8)?;
                next.services = (0..n)
                    .map(|_| {
                        let rec = r.record::<ServiceRecord>()?;
                        let e = r.u64()?;
                        Ok((rec, (e != FOREVER).then_some(e)))
                    })
                    .collect::<Result<_, DecodeError>>()?;
            }
            Section::Informs => {
                let n = r.count(16 + 2 + InformInfo::LEN + 3)?;
                next.informs = (0..n)
                    .map(|_| {
                        Ok(Subscription {
                            subscriber: r.gid()?,
                            lid: Lid(r.u16()?),
                            info: r.record()?,
                            enum_: r.u16()?,
                            trusted: r.u8()? != 0,
                        })
                    })
                    .collect::<Result<_, DecodeError>>()?;
            }
            Section::DisabledPorts => {
                let n = r.count(9)?;
                next.disabled_ports =
                    (0..n).map(|_| Ok((Guid(r.u64()?), r.u8()?))).collect::<Result<_, DecodeError>>()?;
            }
            Section::LftDigests => {
                let n = r.count(18)?;
                next.lft_digests =
                    (0..n).map(|_| Ok((Guid(r.u64()?), r.u16()?, r.u64()?))).collect::<Result<_, DecodeError>>()?;
            }
            Section::Aliases => {
                let n = r.count(12)?;
                next.aliases = (0..n)
                    .map(|_| {
                        let port = Guid(r.u64()?);
                        let k = r.count(9)?;
                        let entries =
                            (0..k).map(|_| Ok((r.u8()?, Guid(r.u64()?)))).collect::<Result<_, DecodeError>>()?;
                        Ok((port, entries))
                    })
                    .collect::<Result<_, DecodeError>>()?;
            }
            Section::QosTables => next.qos_tables = read_qos_tables(&mut r)?,
            Section::BabblingPorts => {
                let n = r.count(38)?;
                next.babbling_ports = (0..n)
                    .map(|_| {
                        Ok(BabblingPort {
                            port: (Guid(r.u64()?), r.u8()?),
                            babbler: (Guid(r.u64()?), r.u8()?),
                            traps: r.u32()?,
                            since: r.u64()?,
                            until: r.u64()?,
                        })
                    })
                    .collect::<Result<_, DecodeError>>()?;
            }
        }
        r.end()?;
        *self = next;
        Ok(())
    }
}

/// The aliases section: a count of ports, each its GUID and a count of (index, alias GUID).
fn write_aliases(w: &mut Writer, aliases: &[(Guid, Vec<(u8, Guid)>)]) {
    w.count(aliases.len());
    for (port, entries) in aliases {
        w.u64(port.0);
        w.count(entries.len());
        for (i, g) in entries {
            w.u8(*i);
            w.u64(g.0);
        }
    }
}

/// The QoS tables section: a count of nodes, each its GUID and its two digests.
fn write_qos_tables(w: &mut Writer, tables: &[(Guid, u64, u64)]) {
    w.count(tables.len());
    for (g, sl2vl, vlarb) in tables {
        w.u64(g.0);
        w.u64(*sl2vl);
        w.u64(*vlarb);
    }
}

fn read_qos_tables(r: &mut Reader<'_>) -> Result<Vec<(Guid, u64, u64)>, DecodeError> {
    let n = r.count(24)?;
    (0..n).map(|_| Ok((Guid(r.u64()?), r.u64()?, r.u64()?))).collect()
}

fn read_group(r: &mut Reader<'_>) -> Result<Group, DecodeError> {
    let params = r.record::<McMemberRecord>()?;
    let persistent = r.u8()? != 0;
    let n = r.count(9)?;
    let mut members = BTreeMap::new();
    for _ in 0..n {
        members.insert(Guid(r.u64()?), JoinState(r.u8()? & 0x0f));
    }
    Ok(Group { params, members, persistent })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    pub(crate) fn sample() -> Replica {
        let mgid = Gid { prefix: 0xff12_401b_ffff_0000, guid: Guid(0xffff_ffff) };
        let params = McMemberRecord { mgid, mlid: Lid(0xc000), qkey: 0x0b1b, ..McMemberRecord::default() };
        let service =
            ServiceRecord { service_id: 0x1000_0000_0000_0001, service_lease: 60, ..ServiceRecord::default() };
        let info = InformInfo { subscribe: true, qpn: 1, trap_number_or_device_id: 64, ..InformInfo::default() };
        Replica {
            guid2lid: vec![(Guid(1), Lid(1), Lid(1)), (Guid(2), Lid(4), Lid(7))],
            mkeys: vec![(Guid(1), 0xabcd)],
            neighbors: vec![((Guid(9), 3), Guid(1))],
            pkeys: vec![(Guid(1), vec![PKey(0xffff), PKey(0x8001)]), (Guid(2), vec![])],
            groups: vec![Group { params, members: [(Guid(1), JoinState(1))].into(), persistent: true }],
            next_mgid: 5,
            services: vec![(service, Some(61_000_000_000)), (service, None)],
            informs: vec![Subscription {
                subscriber: Gid { prefix: 0xfe80_0000_0000_0000, guid: Guid(1) },
                lid: Lid(1),
                info,
                enum_: 3,
                trusted: true,
            }],
            disabled_ports: vec![(Guid(0x20), 3), (Guid(0x21), 1)],
            lft_digests: vec![(Guid(0x20), 191, 0x0123_4567_89ab_cdef), (Guid(0x21), 63, 7)],
            aliases: vec![(Guid(0x102), vec![(1, Guid(0x14_0500_0000_0001)), (9, Guid(0xa9))]), (Guid(0x103), vec![])],
            qos_tables: vec![(Guid(0x20), 0x0123_4567_89ab_cdef, 3), (Guid(0x102), 0, u64::MAX)],
            babbling_ports: vec![BabblingPort {
                port: (Guid(0x20), 5),
                babbler: (Guid(0x30), 1),
                traps: 251,
                since: 7_000,
                until: 300_000_007_000,
            }],
        }
    }

    #[test]
    fn every_section_round_trips() {
        let full = sample();
        let mut got = Replica::default();
        for s in Section::ALL {
            got.decode(s, &full.encode(s)).unwrap();
            assert_eq!(Section::from_id(s.id()), Some(s));
        }
        assert_eq!(got, full);
        assert_eq!(Section::from_id(0), None);
    }

    #[test]
    fn short_long_or_overcounted_bytes_are_refused_and_change_nothing() {
        let full = sample();
        for s in Section::ALL {
            let bytes = full.encode(s);
            let mut r = full.clone();
            assert_eq!(r.decode(s, &bytes[..bytes.len() - 1]), Err(DecodeError), "{s:?} short");
            let mut long = bytes.clone();
            long.push(0);
            assert_eq!(r.decode(s, &long), Err(DecodeError), "{s:?} long");
            assert_eq!(r, full);
        }
        // A count of four billion entries in 8 bytes allocates nothing.
        assert_eq!(
            Replica::default().decode(Section::Guid2Lid, &[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]),
            Err(DecodeError)
        );
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(id in 1u8..=11, bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            let mut r = Replica::default();
            if let Some(s) = Section::from_id(id) {
                // Sections of plain integers encode back to the bytes they decoded from.
                let exact = matches!(
                    s,
                    Section::Guid2Lid
                        | Section::MKeys
                        | Section::PKeys
                        | Section::DisabledPorts
                        | Section::LftDigests
                        | Section::BabblingPorts
                        | Section::Aliases
                        | Section::QosTables
                );
                if r.decode(s, &bytes).is_ok() && exact {
                    prop_assert_eq!(r.encode(s), bytes);
                }
            }
        }
    }
}
