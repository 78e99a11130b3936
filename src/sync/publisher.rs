//! The master's side of the state sync: the sections it publishes and each standby's progress.
//!
//! Owns the master's state version, the published sections (bytes, digest, the version each
//! took its content at), the standbys to keep in sync with what each is known to hold, and the
//! messages in flight (at most [`WINDOW`], each retried [`RETRIES`] times after
//! [`TIMEOUT_NS`]). A standby is asked what it holds whenever it is (re)found; the sections it
//! lacks are sent chunk by chunk, and it is asked again; when its table equals the master's it
//! is current. One that answers the query with an error status or not at all gets nothing
//! more until it is found again. A standby of an older build is sent only the sections it
//! takes: those up to the id its answers say it takes, or, from a build that does not say, all
//! but a section whose chunk it refused in two rounds (query answered, chunk refused, twice);
//! when it holds all of those it is too old ([`PeerState::TooOld`]), never current.

use std::collections::{BTreeMap, VecDeque};

use ibsm_mad::header::Method;
use ibsm_mad::ids::status;
use ibsm_mad::sa::SaHeader;
use ibsm_mad::{Guid, Lid, MAD_LEN};

use super::replica::Section;
use super::wire::{self, Message, PAYLOAD, SyncKey, TableEntry, decode_table, encode_table};

/// Most sync messages in flight.
pub const WINDOW: usize = 32;
/// Time to wait for an answer before sending a message again, ns.
pub const TIMEOUT_NS: u64 = 250_000_000;
/// Retries after the first try.
pub const RETRIES: u32 = 3;
/// Round trips of a standby's last answer a master holds its LFT Sets for it at most.
pub const HOLD_RTTS: u64 = 8;
/// The least a master holds its LFT Sets for a standby, ns.
pub const MIN_HOLD_NS: u64 = 1_000_000;
/// Low 32 bits of the first TID (sync TIDs are easy to spot in a trace).
const TID_BASE: u32 = 0x5359_0000;

/// Where a standby stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerState {
    /// Asked what it holds, no answer yet.
    Asking,
    /// Sections on their way.
    Sending,
    /// Holds the master's state as of this version.
    Current(u64),
    /// Answered the query with an error status, or never answered one: not an ibsm SM
    /// (OpenSM, for one: its standby answers no SA request).
    Foreign,
    /// Answered once, then stopped answering.
    Unreachable,
    /// An ibsm SM that refused the query (status 0x001C): it does not stand by for this master
    /// (it was master itself, say). Asked again when it polls this master as a standby.
    Refused,
    /// Holds every section it takes as of this version, but not every section: an ibsm SM of
    /// an older build. Never current; a handover to it does not wait for it.
    TooOld(u64),
}

impl PeerState {
    /// Its name in logs and the status.
    pub const fn name(self) -> &'static str {
        match self {
            PeerState::Asking => "asking",
            PeerState::Sending => "sending",
            PeerState::Current(_) => "current",
            PeerState::Foreign => "foreign",
            PeerState::Unreachable => "unreachable",
            PeerState::Refused => "refused",
            PeerState::TooOld(_) => "too old",
        }
    }
}

#[derive(Debug, Clone)]
struct Built {
    bytes: Vec<u8>,
    digest: u64,
    version: u64,
}

#[derive(Debug, Clone)]
struct Peer {
    lid: Lid,
    state: PeerState,
    ask: bool,
    queue: VecDeque<(Section, u32)>,
    /// It answered a sync message with our MAC once.
    answered: bool,
    /// The highest section id it takes, as its last answer said (0: not said).
    takes: u8,
    /// Per section, the rounds in which it refused a chunk of it (counted when its build does
    /// not say what it takes).
    refusals: BTreeMap<Section, u32>,
    /// It answered a query since the last refusal counted: the next refusal counts.
    count_refusal: bool,
    /// Per section, the highest version of which it acknowledged a chunk: it has begun to
    /// take that content, and no longer holds an older one whole without knowing it is older.
    acked: BTreeMap<Section, u64>,
    /// The round trip of its last answer to a message's first try, ns.
    rtt: Option<u64>,
}

impl Peer {
    /// Whether it takes `section`: up to the id it says, else all but a section it refused in
    /// two rounds.
    fn takes(&self, section: Section) -> bool {
        if self.takes != 0 { section.id() <= self.takes } else { self.refusals.get(&section).copied().unwrap_or(0) < 2 }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum What {
    Ask,
    Chunk,
}

#[derive(Debug, Clone)]
struct InFlight {
    peer: Guid,
    what: What,
    /// The section of a chunk.
    section: Option<Section>,
    /// The version of a chunk's content.
    version: u64,
    mad: [u8; MAD_LEN],
    deadline: u64,
    tries_left: u32,
    sent: bool,
}

/// A message to put on the wire: LID-routed to QP1 of `lid`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutSync {
    /// The MAD.
    pub bytes: Vec<u8>,
    /// The standby's LID.
    pub lid: Lid,
}

/// Counters of the master's side.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PublisherCounters {
    /// Messages sent, retries included.
    pub sent: u64,
    /// Retries.
    pub retried: u64,
    /// Chunks acknowledged.
    pub chunks_acked: u64,
    /// Answers with the TID of a message in flight from a port it was not sent to, ignored.
    pub misdirected: u64,
}

/// The master's sync state.
#[derive(Debug, Clone, Default)]
pub struct Publisher {
    version: u64,
    sections: BTreeMap<Section, Built>,
    peers: BTreeMap<Guid, Peer>,
    inflight: BTreeMap<u32, InFlight>,
    next_tid: u32,
    /// Standbys whose state changed since the last [`Publisher::take_changes`].
    changes: Vec<(Guid, PeerState)>,
    /// Counters.
    pub counters: PublisherCounters,
}

impl Publisher {
    /// The master's state version: raised by every change of a section's content.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The standbys and where each stands.
    pub fn peers(&self) -> impl Iterator<Item = (Guid, Lid, PeerState)> + '_ {
        self.peers.iter().map(|(g, p)| (*g, p.lid, p.state))
    }

    /// Standbys whose state changed since the last call, in order.
    pub fn take_changes(&mut self) -> Vec<(Guid, PeerState)> {
        std::mem::take(&mut self.changes)
    }

    fn set_state(&mut self, guid: Guid, state: PeerState) {
        if let Some(p) = self.peers.get_mut(&guid)
            && p.state != state
        {
            p.state = state;
            self.changes.push((guid, state));
        }
    }

    fn table(&self) -> Vec<TableEntry> {
        self.sections.iter().map(|(s, b)| (s.id(), b.version, b.digest)).collect()
    }

    fn chunk_count(b: &Built) -> u32 {
        b.bytes.len().div_ceil(PAYLOAD).max(1) as u32
    }

    /// Publishes `section` with the content `bytes`: a change raises the version and goes to
    /// every standby in sync or being synced.
    pub fn publish(&mut self, section: Section, bytes: Vec<u8>, key: &SyncKey) {
        let digest = key.digest(&bytes);
        if self.sections.get(&section).is_some_and(|b| b.digest == digest) {
            return;
        }
        self.version += 1;
        let built = Built { bytes, digest, version: self.version };
        let n = Self::chunk_count(&built);
        self.sections.insert(section, built);
        let guids: Vec<Guid> = self.peers.keys().copied().collect();
        let version = self.version;
        for g in guids {
            let Some(p) = self.peers.get_mut(&g) else { continue };
            if matches!(p.state, PeerState::Foreign | PeerState::Unreachable | PeerState::Refused) {
                continue;
            }
            p.queue.retain(|(s, _)| *s != section);
            if !p.takes(section) {
                // Nothing to send it: still all it can hold.
                if matches!(p.state, PeerState::TooOld(_)) {
                    self.set_state(g, PeerState::TooOld(version));
                }
                continue;
            }
            if section.urgent() {
                // Ahead of the rest: a master holding Sets until the standby has seen it
                // waits one round trip, not for the sections queued before.
                for i in (0..n).rev() {
                    p.queue.push_front((section, i));
                }
            } else {
                p.queue.extend((0..n).map(|i| (section, i)));
            }
            if !matches!(p.state, PeerState::Asking) {
                self.set_state(g, PeerState::Sending);
            }
        }
    }

    /// Whether every standby that may take over with `section` has seen its content as
    /// published now: it holds it (current, or too old at this version or later), or it
    /// acknowledged a chunk of it (a standby that began to take a content holds no older one
    /// whole: [`super::Receiver::superseded`]). A standby that is foreign, unreachable or
    /// refused, or does not take the section, is not waited for; with no standby this is true.
    pub fn seen_everywhere(&self, section: Section) -> bool {
        self.peers.values().all(|p| self.seen_by(p, section))
    }

    fn seen_by(&self, p: &Peer, section: Section) -> bool {
        let Some(v) = self.sections.get(&section).map(|b| b.version) else { return true };
        match p.state {
            PeerState::Foreign | PeerState::Unreachable | PeerState::Refused => true,
            _ if !p.takes(section) => true,
            PeerState::Current(w) | PeerState::TooOld(w) if w >= v => true,
            _ => p.acked.get(&section).is_some_and(|&a| a >= v),
        }
    }

    /// How long to wait for the standbys that have not seen `section` yet: [`HOLD_RTTS`] of
    /// the slowest one's last round trip, within [`MIN_HOLD_NS`] and every try of a message
    /// (a standby whose round trip is not known yet).
    pub fn hold_bound(&self, section: Section) -> u64 {
        let most = TIMEOUT_NS * (u64::from(RETRIES) + 1);
        let bound = |p: &Peer| p.rtt.map_or(most, |r| r.saturating_mul(HOLD_RTTS).clamp(MIN_HOLD_NS, most));
        self.peers.values().filter(|p| !self.seen_by(p, section)).map(bound).max().unwrap_or(0)
    }

    /// [`Publisher::on_response`] at `now`: the round trip of an answer to a first try is
    /// kept ([`Publisher::hold_bound`]).
    pub fn on_response_at(&mut self, bytes: &[u8], from: Lid, key: &SyncKey, now: u64) -> bool {
        let tid = SaHeader::from_bytes(bytes).map(|h| h.tid as u32);
        let first = tid.ok().and_then(|t| self.inflight.get(&t)).filter(|f| f.tries_left == RETRIES);
        let rtt = first.map(|f| (f.peer, now.saturating_sub(f.deadline.saturating_sub(TIMEOUT_NS))));
        let ours = self.on_response(bytes, from, key);
        if let Some((peer, rtt)) = rtt.filter(|_| ours)
            && let Some(p) = self.peers.get_mut(&peer)
        {
            p.rtt = Some(rtt);
        }
        ours
    }

    /// The standbys found by the last sweep (port GUID, LID): new ones are asked what they
    /// hold, known ones asked again, the others forgotten.
    pub fn set_peers(&mut self, found: &[(Guid, Lid)]) {
        self.peers.retain(|g, _| found.iter().any(|(f, _)| f == g));
        self.inflight.retain(|_, f| found.iter().any(|(g, _)| *g == f.peer));
        for &(guid, lid) in found {
            let p = self.peers.entry(guid).or_insert_with(|| Peer {
                lid,
                state: PeerState::Asking,
                ask: true,
                queue: VecDeque::new(),
                answered: false,
                takes: 0,
                refusals: BTreeMap::new(),
                count_refusal: false,
                acked: BTreeMap::new(),
                rtt: None,
            });
            p.lid = lid;
            p.ask = true;
        }
    }

    /// Whether `guid` is a standby this master syncs (or tried to).
    pub fn knows(&self, guid: Guid) -> bool {
        self.peers.contains_key(&guid)
    }

    /// Whether `guid` refused the last query (an ibsm SM that was not standing by then).
    pub fn refused(&self, guid: Guid) -> bool {
        self.peers.get(&guid).is_some_and(|p| p.state == PeerState::Refused)
    }

    /// Forgets every standby (this SM is no longer master).
    pub fn clear_peers(&mut self) {
        self.peers.clear();
        self.inflight.clear();
    }

    fn busy(&self, guid: Guid) -> bool {
        self.inflight.values().any(|f| f.peer == guid)
    }

    /// The next message to send at `now` from `me`, signed with `key`.
    pub fn poll_transmit(&mut self, now: u64, me: Guid, key: &SyncKey) -> Option<OutSync> {
        if let Some((tid, f)) = self.inflight.iter_mut().find(|(_, f)| !f.sent) {
            f.sent = true;
            f.deadline = now.saturating_add(TIMEOUT_NS);
            self.counters.sent += 1;
            let lid = self.peers.get(&f.peer).map_or(Lid(0), |p| p.lid);
            let _ = tid;
            return Some(OutSync { bytes: f.mad.to_vec(), lid });
        }
        if self.inflight.len() >= WINDOW {
            return None;
        }
        let table = encode_table(&self.table());
        let guids: Vec<Guid> = self.peers.keys().copied().collect();
        for g in guids {
            let busy = self.busy(g);
            let Some(p) = self.peers.get_mut(&g) else { continue };
            let mut chunk_of = None;
            let mut version = 0;
            let base = Message {
                from: me,
                version: self.version,
                sent_at: now,
                digest: 0,
                chunk: 0,
                chunks: 0,
                section: 0,
                takes: Section::MAX_ID,
                payload: Vec::new(),
            };
            let (what, msg, method) = if let Some((section, i)) = p.queue.pop_front() {
                chunk_of = Some(section);
                let Some(b) = self.sections.get(&section) else { continue };
                version = b.version;
                let start = i as usize * PAYLOAD;
                let payload = b.bytes.get(start..(start + PAYLOAD).min(b.bytes.len())).unwrap_or_default().to_vec();
                let chunks = Self::chunk_count(b);
                let msg = Message {
                    version: b.version,
                    digest: b.digest,
                    chunk: i,
                    chunks,
                    section: section.id(),
                    payload,
                    ..base
                };
                (What::Chunk, msg, Method::Set)
            } else if p.ask && !busy {
                p.ask = false;
                (What::Ask, Message { payload: table.clone(), ..base }, Method::Get)
            } else {
                continue;
            };
            let lid = p.lid;
            let tid = TID_BASE.wrapping_add(self.next_tid);
            self.next_tid = self.next_tid.wrapping_add(1);
            let mad = msg.to_mad(&wire::request_header(method, u64::from(tid)), key);
            let deadline = now.saturating_add(TIMEOUT_NS);
            let f =
                InFlight { peer: g, what, section: chunk_of, version, mad, deadline, tries_left: RETRIES, sent: true };
            self.inflight.insert(tid, f);
            self.counters.sent += 1;
            return Some(OutSync { bytes: mad.to_vec(), lid });
        }
        None
    }

    /// An answer to one of our messages, from the port at `from`; true if it was one. Only the
    /// port the message went to answers it: an answer with the right TID from any other LID is
    /// not ours and leaves the message in flight (a host holding the SM_Key cannot answer for a
    /// standby, making the master think it current and a handover go before it is), and is
    /// counted in [`PublisherCounters::misdirected`].
    pub fn on_response(&mut self, bytes: &[u8], from: Lid, key: &SyncKey) -> bool {
        let Ok(h) = SaHeader::from_bytes(bytes) else { return false };
        let tid = h.tid as u32;
        let Some(peer) = self.inflight.get(&tid).map(|f| f.peer) else { return false };
        if self.peers.get(&peer).map(|p| p.lid) != Some(from) {
            self.counters.misdirected += 1;
            return false;
        }
        let Some(f) = self.inflight.remove(&tid) else { return false };
        let answer = (h.status == status::OK).then(|| Message::from_mad(bytes, key).ok()).flatten();
        match (f.what, answer) {
            // An error status, or an answer without our MAC: not an ibsm SM of this subnet.
            (What::Ask, None) => {
                if let Some(p) = self.peers.get_mut(&f.peer) {
                    p.queue.clear();
                }
                // 0x001C is an ibsm SM that does not watch this master (yet); anything else
                // is not an ibsm SM.
                let state = if h.status == status::BAD_FIELD { PeerState::Refused } else { PeerState::Foreign };
                self.set_state(f.peer, state);
            }
            (What::Ask, Some((_, m))) => {
                if let Some(p) = self.peers.get_mut(&f.peer) {
                    p.answered = true;
                    p.count_refusal = true;
                    // What its build takes, from its own answer (a restarted standby may be
                    // of another build).
                    p.takes = m.takes;
                    if m.takes != 0 {
                        p.refusals.clear();
                    }
                }
                self.on_table(f.peer, &decode_table(&m.payload));
            }
            (What::Chunk, Some(_)) => {
                self.counters.chunks_acked += 1;
                if let (Some(p), Some(section)) = (self.peers.get_mut(&f.peer), f.section) {
                    let acked = p.acked.entry(section).or_default();
                    *acked = (*acked).max(f.version);
                }
                self.after_chunk(f.peer);
            }
            // A refused chunk: start over with a query. A standby that answers it and refuses
            // the section again cannot take it (an older build).
            (What::Chunk, None) => {
                if let Some(p) = self.peers.get_mut(&f.peer) {
                    if let Some(section) = f.section
                        && std::mem::take(&mut p.count_refusal)
                    {
                        *p.refusals.entry(section).or_default() += 1;
                    }
                    p.queue.clear();
                    p.ask = true;
                }
                self.set_state(f.peer, PeerState::Asking);
            }
        }
        true
    }

    fn after_chunk(&mut self, guid: Guid) {
        let busy = self.busy(guid);
        if let Some(p) = self.peers.get_mut(&guid)
            && p.queue.is_empty()
            && !busy
        {
            // Everything sent: ask again to confirm.
            p.ask = true;
        }
    }

    /// The standby's table: queue what differs and it takes, or note it current (too old when
    /// it cannot take some section).
    fn on_table(&mut self, guid: Guid, theirs: &[TableEntry]) {
        let version = self.version;
        let Some(p) = self.peers.get_mut(&guid) else { return };
        let differs = |(s, b): &(&Section, &Built)| !theirs.iter().any(|(id, _, d)| *id == s.id() && *d == b.digest);
        let lacking: Vec<(Section, u32)> = self
            .sections
            .iter()
            .filter(differs)
            .filter(|(s, _)| p.takes(**s))
            .flat_map(|(s, b)| (0..Self::chunk_count(b)).map(move |i| (*s, i)))
            .collect();
        let whole = self.sections.keys().all(|s| p.takes(*s));
        if lacking.is_empty() && p.queue.is_empty() {
            self.set_state(guid, if whole { PeerState::Current(version) } else { PeerState::TooOld(version) });
        } else {
            p.queue.retain(|q| !lacking.contains(q));
            p.queue.extend(lacking);
            self.set_state(guid, PeerState::Sending);
        }
    }

    /// The earliest deadline of a message in flight.
    pub fn poll_timeout(&self) -> Option<u64> {
        self.inflight.values().filter(|f| f.sent).map(|f| f.deadline).min()
    }

    /// Messages whose deadline passed at `now` go again, or their standby is unreachable.
    pub fn on_timeout(&mut self, now: u64) {
        let expired: Vec<u32> =
            self.inflight.iter().filter(|(_, f)| f.sent && f.deadline <= now).map(|(t, _)| *t).collect();
        for tid in expired {
            let Some(f) = self.inflight.get_mut(&tid) else { continue };
            if f.tries_left > 0 {
                f.tries_left -= 1;
                f.sent = false;
                self.counters.retried += 1;
                continue;
            }
            let peer = f.peer;
            self.inflight.retain(|_, f| f.peer != peer);
            let mut answered = false;
            if let Some(p) = self.peers.get_mut(&peer) {
                p.queue.clear();
                p.ask = false;
                answered = p.answered;
            }
            self.set_state(peer, if answered { PeerState::Unreachable } else { PeerState::Foreign });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::receiver::Receiver;
    use crate::sync::replica::Replica;

    const ME: Guid = Guid(0x10);
    const STANDBY: Guid = Guid(0x20);

    /// Plays the standby: answers every message the publisher sends, as the core would.
    fn answer(rx: &mut Receiver, out: &OutSync, key: &SyncKey, now: u64) -> Vec<u8> {
        let (h, m) = Message::from_mad(&out.bytes, key).unwrap();
        let payload = if h.method == Method::Get {
            rx.on_status(&m, now)
        } else {
            rx.on_chunk(&m, now, key).unwrap();
            Vec::new()
        };
        let reply = Message { from: STANDBY, payload, ..m };
        reply.to_mad(&h.response(status::OK, 0), key).to_vec()
    }

    fn replica() -> Replica {
        let guid2lid = (1..=300u64).map(|i| (Guid(i), Lid(i as u16), Lid(i as u16))).collect();
        Replica { guid2lid, mkeys: vec![(Guid(1), 5)], ..Replica::default() }
    }

    fn run(p: &mut Publisher, rx: &mut Receiver, key: &SyncKey) -> usize {
        let mut n = 0;
        while let Some(out) = p.poll_transmit(n as u64, ME, key) {
            assert_eq!(out.lid, Lid(7));
            let resp = answer(rx, &out, key, n as u64);
            assert!(p.on_response(&resp, Lid(7), key));
            n += 1;
        }
        n
    }

    #[test]
    fn a_standby_gets_what_it_lacks_and_then_only_what_changed() {
        let key = SyncKey::from_sm_key(1);
        let mut p = Publisher::default();
        let mut full = replica();
        for s in Section::ALL {
            p.publish(s, full.encode(s), &key);
        }
        assert_eq!(p.version(), Section::ALL.len() as u64);
        p.set_peers(&[(STANDBY, Lid(7))]);
        let mut rx = Receiver::default();
        let first = run(&mut p, &mut rx, &key);
        let n = Section::ALL.len() as u64;
        assert_eq!(p.peers().next(), Some((STANDBY, Lid(7), PeerState::Current(n))));
        assert_eq!(rx.current_at, Some(n));
        assert_eq!(rx.replica(), full);
        // 300 guid2lid entries are 3,604 bytes: 31 chunks, plus one per other section and two queries.
        assert_eq!(first, 31 + (Section::ALL.len() - 1) + 2);

        // Re-publishing the same content changes nothing; a new M_Key sends one section.
        for s in Section::ALL {
            p.publish(s, full.encode(s), &key);
        }
        assert_eq!(p.version(), n);
        full.mkeys.push((Guid(2), 9));
        p.publish(Section::MKeys, full.encode(Section::MKeys), &key);
        assert_eq!(run(&mut p, &mut rx, &key), 2, "one chunk and the confirming query");
        assert_eq!(rx.replica(), full);
        assert_eq!(p.take_changes().last(), Some(&(STANDBY, PeerState::Current(n + 1))));
        // Found again after a sweep: one query, nothing to send.
        p.set_peers(&[(STANDBY, Lid(7))]);
        assert_eq!(run(&mut p, &mut rx, &key), 1);
    }

    #[test]
    fn an_error_status_or_silence_makes_a_foreign_sm_and_a_silent_ibsm_an_unreachable_one() {
        let key = SyncKey::from_sm_key(1);
        let mut p = Publisher::default();
        p.publish(Section::Guid2Lid, replica().encode(Section::Guid2Lid), &key);
        p.set_peers(&[(STANDBY, Lid(7))]);
        let out = p.poll_transmit(0, ME, &key).unwrap();
        // OpenSM: "method/attribute not supported".
        let (h, _) = Message::from_mad(&out.bytes, &key).unwrap();
        let refusal = h.response(status::BAD_METHOD_ATTR, 0).to_mad(&[]).unwrap();
        assert!(p.on_response(&refusal, Lid(7), &key));
        assert_eq!(p.peers().next().map(|x| x.2), Some(PeerState::Foreign));
        assert_eq!(p.poll_transmit(1, ME, &key), None);

        // Another SM_Key answers with a MAC we cannot check: the same.
        p.set_peers(&[(STANDBY, Lid(7))]);
        let out = p.poll_transmit(2, ME, &key).unwrap();
        let (h, m) = Message::from_mad(&out.bytes, &key).unwrap();
        let forged = m.to_mad(&h.response(status::OK, 0), &SyncKey::from_sm_key(2));
        assert!(p.on_response(&forged, Lid(7), &key));
        assert_eq!(p.peers().next().map(|x| x.2), Some(PeerState::Foreign));

        // Silence from one that never answered: the same (OpenSM's standby answers no SA request).
        p.set_peers(&[(STANDBY, Lid(7))]);
        assert!(p.poll_transmit(3, ME, &key).is_some());
        let mut now = 3;
        for _ in 0..=RETRIES {
            now = p.poll_timeout().unwrap();
            p.on_timeout(now);
            let _ = p.poll_transmit(now, ME, &key);
        }
        assert_eq!(p.peers().next().map(|x| x.2), Some(PeerState::Foreign));

        // One that answered and then went silent is unreachable.
        p.set_peers(&[(STANDBY, Lid(7))]);
        let mut rx = Receiver::default();
        let q = p.poll_transmit(now, ME, &key).unwrap();
        assert!(p.on_response(&answer(&mut rx, &q, &key, now), Lid(7), &key));
        p.set_peers(&[(STANDBY, Lid(7))]);
        assert!(p.poll_transmit(now, ME, &key).is_some());
        let retried = p.counters.retried;
        for _ in 0..RETRIES {
            now = p.poll_timeout().unwrap();
            p.on_timeout(now);
            assert!(p.poll_transmit(now, ME, &key).is_some(), "retry");
        }
        p.on_timeout(p.poll_timeout().unwrap());
        assert_eq!(p.peers().next().map(|x| x.2), Some(PeerState::Unreachable));
        assert_eq!(p.poll_timeout(), None);
        assert!(now > 3);
        assert_eq!(p.counters.retried - retried, u64::from(RETRIES));
        // Gone from the sweep: forgotten.
        p.set_peers(&[]);
        assert_eq!(p.peers().count(), 0);
    }

    #[test]
    fn only_the_port_a_message_went_to_answers_it() {
        let key = SyncKey::from_sm_key(1);
        let mut p = Publisher::default();
        p.publish(Section::Guid2Lid, replica().encode(Section::Guid2Lid), &key);
        p.set_peers(&[(STANDBY, Lid(7))]);
        let mut rx = Receiver::default();
        let q = p.poll_transmit(0, ME, &key).unwrap();
        let resp = answer(&mut rx, &q, &key, 0);
        // Another host with the SM_Key and the TID answers for the standby: not taken.
        assert!(!p.on_response(&resp, Lid(9), &key));
        assert_eq!(p.counters.misdirected, 1);
        assert_eq!(p.peers().next().map(|x| x.2), Some(PeerState::Asking));
        // The standby's own answer still counts.
        assert!(p.on_response(&resp, Lid(7), &key));
        assert_ne!(p.peers().next().map(|x| x.2), Some(PeerState::Asking));
    }

    /// Plays a standby of an older build that takes sections up to id 8: it says `says` of
    /// what it takes (0: nothing, as a build from before the field) and refuses a chunk of a
    /// section it does not know with status 0x001C, as such a build does. Runs until the
    /// publisher has nothing to send or `cap` messages; returns the messages sent and the
    /// section ids of the chunks among them.
    fn run_old(p: &mut Publisher, rx: &mut Receiver, key: &SyncKey, says: u8, cap: usize) -> (usize, Vec<u8>) {
        let mut chunks = Vec::new();
        let mut n = 0;
        while n < cap
            && let Some(out) = p.poll_transmit(n as u64, ME, key)
        {
            let (h, m) = Message::from_mad(&out.bytes, key).unwrap();
            let resp = if h.method == Method::Set && m.section > 8 {
                h.response(status::BAD_FIELD, 0).to_mad(&[]).unwrap().to_vec()
            } else {
                let payload = if h.method == Method::Get {
                    rx.on_status(&m, n as u64)
                } else {
                    rx.on_chunk(&m, n as u64, key).unwrap();
                    Vec::new()
                };
                let reply = Message { from: STANDBY, payload, takes: says, ..m.clone() };
                reply.to_mad(&h.response(status::OK, 0), key).to_vec()
            };
            if h.method == Method::Set {
                chunks.push(m.section);
            }
            assert!(p.on_response(&resp, Lid(7), key));
            n += 1;
        }
        (n, chunks)
    }

    #[test]
    fn a_standby_of_an_older_build_gets_the_sections_it_takes_and_is_too_old_not_flooded() {
        let key = SyncKey::from_sm_key(1);
        let mut full = replica();
        full.aliases = vec![(Guid(3), vec![(1, Guid(0x33))])];
        let mut p = Publisher::default();
        for s in Section::ALL {
            p.publish(s, full.encode(s), &key);
        }
        let v = p.version();
        // A build from before the field: the sections past 8 (9, 10, 11) are refused in two
        // rounds, then never sent again; it holds the other eight and is too old, not current.
        p.set_peers(&[(STANDBY, Lid(7))]);
        let mut rx = Receiver::default();
        let (n, chunks) = run_old(&mut p, &mut rx, &key, 0, 1_000);
        assert!(n < 100, "the sync comes to rest ({n} messages)");
        let past_8 = Section::ALL.iter().filter(|s| s.id() > 8).count();
        assert_eq!(chunks.iter().filter(|&&s| s > 8).count(), 2 * past_8, "each past 8, twice: {chunks:?}");
        assert_eq!(p.peers().next().map(|x| x.2), Some(PeerState::TooOld(v)));
        assert_eq!(rx.held().len(), 8);
        assert_eq!(p.take_changes().last(), Some(&(STANDBY, PeerState::TooOld(v))));
        // A change it cannot take sends nothing (still all it can hold); one it takes is sent.
        full.aliases.clear();
        p.publish(Section::Aliases, full.encode(Section::Aliases), &key);
        assert_eq!(p.peers().next().map(|x| x.2), Some(PeerState::TooOld(v + 1)));
        assert_eq!(run_old(&mut p, &mut rx, &key, 0, 1_000).0, 0);
        full.mkeys.push((Guid(2), 9));
        p.publish(Section::MKeys, full.encode(Section::MKeys), &key);
        assert_eq!(run_old(&mut p, &mut rx, &key, 0, 1_000), (2, vec![Section::MKeys.id()]));
        assert_eq!(p.peers().next().map(|x| x.2), Some(PeerState::TooOld(v + 2)));
        // Found again after a sweep: one query, nothing refused again.
        p.set_peers(&[(STANDBY, Lid(7))]);
        assert_eq!(run_old(&mut p, &mut rx, &key, 0, 1_000).0, 1);

        // A build that says it takes up to 8 is sent nothing past 8, and is too old at once.
        let mut q = Publisher::default();
        for s in Section::ALL {
            q.publish(s, full.encode(s), &key);
        }
        q.set_peers(&[(STANDBY, Lid(7))]);
        let mut rx8 = Receiver::default();
        let (_, chunks) = run_old(&mut q, &mut rx8, &key, 8, 1_000);
        assert!(chunks.iter().all(|&s| s <= 8), "{chunks:?}");
        assert_eq!(q.peers().next().map(|x| x.2), Some(PeerState::TooOld(q.version())));

        // The first standby restarts upgraded (it says it takes every section): it gets the
        // sections past 8 and is current.
        p.set_peers(&[(STANDBY, Lid(7))]);
        assert!(run(&mut p, &mut rx, &key) > 2);
        assert_eq!(p.peers().next().map(|x| x.2), Some(PeerState::Current(p.version())));
        assert_eq!(rx.replica(), full);
    }

    #[test]
    fn the_window_bounds_the_messages_in_flight() {
        let key = SyncKey::from_sm_key(1);
        let mut p = Publisher::default();
        let big =
            Replica { guid2lid: (1..=5000u64).map(|i| (Guid(i), Lid(1), Lid(1))).collect(), ..Replica::default() };
        p.set_peers(&[(STANDBY, Lid(7))]);
        // The standby said it holds nothing.
        let q = p.poll_transmit(0, ME, &key).unwrap();
        let mut rx = Receiver::default();
        let resp = answer(&mut rx, &q, &key, 0);
        p.publish(Section::Guid2Lid, big.encode(Section::Guid2Lid), &key);
        assert!(p.on_response(&resp, Lid(7), &key));
        let sent = std::iter::from_fn(|| p.poll_transmit(1, ME, &key)).count();
        assert_eq!(sent, WINDOW);
    }
}
