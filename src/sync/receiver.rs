//! The standby's side of the state sync: chunks in, whole sections out, and what it holds.
//!
//! Owns the sections received (their version and digest, decoded into a [`Replica`]), the
//! sections being assembled (at most one version per section; a newer one replaces an older
//! one half received), whether this standby is current with its master, and when the services
//! and babbling-ports sections were received (service leases and back-off deadlines are
//! re-based onto this SM's clock). A section is taken only
//! whole, with the digest its chunks announced, and only when it decodes; memory is bounded by
//! [`MAX_CHUNKS`] per section.

use std::collections::BTreeMap;

use ibsm_mad::Guid;

use super::replica::{BabblingPort, Replica, Section};
use super::wire::{Message, PAYLOAD, SyncKey, TableEntry, decode_table, encode_table};

/// Most chunks one section may have (about 15 MB).
pub const MAX_CHUNKS: u32 = 1 << 17;

/// A section held: the version it was made at and its digest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Held {
    /// The master's version when the section took this content.
    pub version: u64,
    /// Its digest.
    pub digest: u64,
}

#[derive(Debug, Clone)]
struct Partial {
    version: u64,
    digest: u64,
    parts: Vec<Option<Vec<u8>>>,
    missing: u32,
}

/// Why a chunk was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Unknown section, or a chunk index or count out of range.
    Malformed,
    /// The whole section did not match its digest or did not decode.
    BadSection,
}

/// Counters of the standby's side.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReceiverCounters {
    /// Chunks taken.
    pub chunks: u64,
    /// Sections completed.
    pub sections: u64,
    /// Chunks or sections refused.
    pub refused: u64,
}

/// What a standby holds of its master's state.
#[derive(Debug, Clone, Default)]
pub struct Receiver {
    held: BTreeMap<Section, Held>,
    partial: BTreeMap<Section, Partial>,
    replica: Replica,
    /// The master the state came from.
    pub master: Option<Guid>,
    /// The master's version at its last status query.
    pub master_version: u64,
    /// The master's version at which this standby held exactly the master's sections (at the
    /// last status query); `None` when it did not.
    pub current_at: Option<u64>,
    /// When the last message from the master arrived (this SM's clock).
    pub last_at: Option<u64>,
    /// The master's clock and ours when the services section arrived.
    services_clock: (u64, u64),
    /// The master's clock and ours when the babbling-ports section arrived.
    babbling_clock: (u64, u64),
    /// Counters.
    pub counters: ReceiverCounters,
}

impl Receiver {
    /// Whether anything was received from `master`.
    pub fn holds_from(&self, master: Guid) -> bool {
        self.master == Some(master) && !self.held.is_empty()
    }

    /// The sections held.
    pub fn held(&self) -> &BTreeMap<Section, Held> {
        &self.held
    }

    /// Forgets everything (a new master, or this SM became master).
    pub fn clear(&mut self) {
        *self = Receiver { counters: self.counters, ..Receiver::default() };
    }

    fn note_master(&mut self, msg: &Message, now: u64) {
        if self.master != Some(msg.from) {
            self.clear();
            self.master = Some(msg.from);
        }
        self.last_at = Some(now);
    }

    /// This standby's table, as a status answer's payload.
    pub fn table(&self) -> Vec<u8> {
        let t: Vec<TableEntry> = self.held.iter().map(|(s, h)| (s.id(), h.version, h.digest)).collect();
        encode_table(&t)
    }

    /// Whether a newer content of `section` than the one held has begun to arrive (a chunk of
    /// it was taken): the master published it, and may have begun what made the held one
    /// stale (for the digests of the tables the switches hold, writing those tables).
    pub fn superseded(&self, section: Section) -> bool {
        self.partial.get(&section).is_some_and(|p| self.held.get(&section).is_none_or(|h| h.version < p.version))
    }

    /// A status query from the master at `now`: notes whether this standby is current, and
    /// returns its own table for the answer.
    pub fn on_status(&mut self, msg: &Message, now: u64) -> Vec<u8> {
        self.note_master(msg, now);
        self.master_version = msg.version;
        let theirs = decode_table(&msg.payload);
        let same = theirs.len() == self.held.len()
            && theirs.iter().all(|(id, _, digest)| {
                Section::from_id(*id).and_then(|s| self.held.get(&s)).is_some_and(|h| h.digest == *digest)
            });
        self.current_at = same.then_some(msg.version);
        self.table()
    }

    /// A chunk from the master at `now`. Returns the section it completed, if it did.
    ///
    /// # Errors
    /// [`Refused`] when the chunk or the section it completed cannot be taken.
    pub fn on_chunk(&mut self, msg: &Message, now: u64, key: &SyncKey) -> Result<Option<Section>, Refused> {
        let section = Section::from_id(msg.section).ok_or(Refused::Malformed)?;
        if msg.chunks == 0 || msg.chunks > MAX_CHUNKS || msg.chunk >= msg.chunks {
            self.counters.refused += 1;
            return Err(Refused::Malformed);
        }
        self.note_master(msg, now);
        if self.held.get(&section).is_some_and(|h| h.digest == msg.digest) {
            return Ok(None);
        }
        let p = self.partial.entry(section).or_insert_with(|| Partial {
            version: msg.version,
            digest: msg.digest,
            parts: Vec::new(),
            missing: 0,
        });
        if (p.version, p.digest) != (msg.version, msg.digest) || p.parts.len() != msg.chunks as usize {
            if msg.version < p.version {
                // A late chunk of content the master has replaced.
                return Ok(None);
            }
            *p = Partial {
                version: msg.version,
                digest: msg.digest,
                parts: vec![None; msg.chunks as usize],
                missing: msg.chunks,
            };
        }
        let slot = &mut p.parts[msg.chunk as usize];
        if slot.is_none() {
            *slot = Some(msg.payload.clone());
            p.missing -= 1;
            self.counters.chunks += 1;
        }
        if p.missing > 0 {
            return Ok(None);
        }
        let Some(done) = self.partial.remove(&section) else { return Ok(None) };
        let mut bytes = Vec::with_capacity(done.parts.len() * PAYLOAD);
        for part in done.parts.into_iter().flatten() {
            bytes.extend_from_slice(&part);
        }
        if key.digest(&bytes) != done.digest || self.replica.decode(section, &bytes).is_err() {
            self.counters.refused += 1;
            return Err(Refused::BadSection);
        }
        match section {
            Section::Services => self.services_clock = (msg.sent_at, now),
            Section::BabblingPorts => self.babbling_clock = (msg.sent_at, now),
            _ => {}
        }
        self.held.insert(section, Held { version: done.version, digest: done.digest });
        self.counters.sections += 1;
        Ok(Some(section))
    }

    /// The state to take over with, service leases and babbling back-offs re-based onto this
    /// SM's clock.
    pub fn replica(&self) -> Replica {
        let mut r = self.replica.clone();
        for (_, expires) in &mut r.services {
            *expires = expires.map(|t| rebase(self.services_clock, t));
        }
        r.babbling_ports = self.babbling_ports();
        r
    }

    /// The babbling-ports section as held (empty when none was received), its back-offs
    /// re-based onto this SM's clock.
    pub fn babbling_ports(&self) -> Vec<BabblingPort> {
        let mut ports = self.replica.babbling_ports.clone();
        for b in &mut ports {
            (b.since, b.until) = (rebase(self.babbling_clock, b.since), rebase(self.babbling_clock, b.until));
        }
        ports
    }
}

/// `t` on the clock of the SM that sent a section, on this SM's clock: `clock` is the sender's
/// clock when the section was sent and ours when it arrived.
fn rebase((theirs, ours): (u64, u64), t: u64) -> u64 {
    if t >= theirs { ours.saturating_add(t - theirs) } else { ours.saturating_sub(theirs - t) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunks_of(key: &SyncKey, section: Section, bytes: &[u8], version: u64) -> Vec<Message> {
        let digest = key.digest(bytes);
        let parts: Vec<&[u8]> = if bytes.is_empty() { vec![&[]] } else { bytes.chunks(PAYLOAD).collect() };
        let n = parts.len() as u32;
        parts
            .into_iter()
            .enumerate()
            .map(|(i, p)| Message {
                from: Guid(7),
                version,
                sent_at: 1_000,
                digest,
                chunk: i as u32,
                chunks: n,
                section: section.id(),
                takes: Section::MAX_ID,
                payload: p.to_vec(),
            })
            .collect()
    }

    fn big_replica() -> Replica {
        let guid2lid = (1..=500u64).map(|i| (Guid(i), ibsm_mad::Lid(i as u16), ibsm_mad::Lid(i as u16))).collect();
        Replica { guid2lid, ..Replica::default() }
    }

    #[test]
    fn chunks_in_any_order_and_repeated_make_the_section_once() {
        let key = SyncKey::from_sm_key(1);
        let full = big_replica();
        let mut msgs = chunks_of(&key, Section::Guid2Lid, &full.encode(Section::Guid2Lid), 3);
        assert!(msgs.len() > 40);
        msgs.reverse();
        let dup = msgs[5].clone();
        msgs.insert(9, dup);
        let mut r = Receiver::default();
        let done: Vec<Option<Section>> = msgs.iter().map(|m| r.on_chunk(m, 50, &key).unwrap()).collect();
        assert_eq!(done.iter().flatten().count(), 1);
        assert_eq!(done.last(), Some(&Some(Section::Guid2Lid)));
        assert_eq!(r.replica().guid2lid, full.guid2lid);
        assert!(r.holds_from(Guid(7)));
        // The master's status query with the same table finds this standby current.
        let table = encode_table(&[(Section::Guid2Lid.id(), 3, key.digest(&full.encode(Section::Guid2Lid)))]);
        let q = Message { section: 0, version: 3, payload: table.clone(), ..msgs[0].clone() };
        assert_eq!(r.on_status(&q, 60), table);
        assert_eq!(r.current_at, Some(3));
        let newer = encode_table(&[(Section::Guid2Lid.id(), 4, 99)]);
        r.on_status(&Message { version: 4, payload: newer, ..q }, 70);
        assert_eq!(r.current_at, None);
    }

    #[test]
    fn a_newer_version_replaces_a_half_received_one_and_a_bad_digest_is_refused() {
        let key = SyncKey::from_sm_key(1);
        let full = big_replica();
        let bytes = full.encode(Section::Guid2Lid);
        let old = chunks_of(&key, Section::Guid2Lid, &bytes, 1);
        let new = chunks_of(&key, Section::Guid2Lid, &Replica::default().encode(Section::Guid2Lid), 2);
        let mut r = Receiver::default();
        r.on_chunk(&old[0], 1, &key).unwrap();
        assert_eq!(r.on_chunk(&new[0], 2, &key), Ok(Some(Section::Guid2Lid)));
        assert_eq!(r.on_chunk(&old[1], 3, &key), Ok(None), "late chunk of the replaced content");
        assert!(r.replica().guid2lid.is_empty());

        let mut forged = chunks_of(&key, Section::Guid2Lid, &bytes, 5);
        for m in &mut forged {
            m.digest ^= 1;
        }
        let last = forged.pop().unwrap();
        for m in &forged {
            r.on_chunk(m, 4, &key).unwrap();
        }
        assert_eq!(r.on_chunk(&last, 4, &key), Err(Refused::BadSection));
        assert!(r.replica().guid2lid.is_empty(), "nothing taken");
        let bad = Message { chunks: MAX_CHUNKS + 1, ..last.clone() };
        assert_eq!(r.on_chunk(&bad, 4, &key), Err(Refused::Malformed));
        assert_eq!(r.on_chunk(&Message { section: 200, ..last }, 4, &key), Err(Refused::Malformed), "no such section");
    }

    #[test]
    fn leases_are_rebased_onto_the_standbys_clock() {
        let key = SyncKey::from_sm_key(1);
        let rec = ibsm_mad::records::ServiceRecord::default();
        let full = Replica { services: vec![(rec, Some(61_000)), (rec, None)], ..Replica::default() };
        let mut r = Receiver::default();
        for m in chunks_of(&key, Section::Services, &full.encode(Section::Services), 1) {
            r.on_chunk(&m, 500_000, &key).unwrap();
        }
        // Sent at 1,000 on the master's clock, with 60,000 ns of lease left.
        assert_eq!(r.replica().services, vec![(rec, Some(560_000)), (rec, None)]);
    }

    #[test]
    fn babbling_back_offs_are_rebased_onto_the_standbys_clock() {
        let key = SyncKey::from_sm_key(1);
        let b = BabblingPort { port: (Guid(1), 2), babbler: (Guid(3), 1), traps: 9, since: 400, until: 61_000 };
        let full = Replica { babbling_ports: vec![b], ..Replica::default() };
        let mut r = Receiver::default();
        for m in chunks_of(&key, Section::BabblingPorts, &full.encode(Section::BabblingPorts), 1) {
            r.on_chunk(&m, 500_000, &key).unwrap();
        }
        // Sent at 1,000 on the master's clock: disabled 600 ns before, 60,000 ns of back-off left.
        assert_eq!(r.replica().babbling_ports, vec![BabblingPort { since: 499_400, until: 560_000, ..b }]);
        assert_eq!(r.babbling_ports(), r.replica().babbling_ports);
    }
}
