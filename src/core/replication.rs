//! Replication: the component that owns both sides of the state sync ([`crate::sync`]) in the
//! core ([`Replication`]): as master, the state it publishes and where each standby stands
//! ([`crate::sync::Publisher`]); as standby, what its master sent it
//! ([`crate::sync::Receiver`]); and whether the next sweep as master sets ClientReregister on
//! every CA port.
//!
//! It takes what it needs as arguments (each section's bytes, which the coordinator reads from
//! the components that own that state; the standbys a sweep found; a received sync message; the
//! SM's state; the time) and answers with values: sync messages to send, [`PeerNews`] (events,
//! a standby too old reported once, and the standbys whose sync came to rest, for a handover
//! waiting on them), a reply to a sync
//! message or the reason to refuse it ([`SyncAnswer`]), the state to take over with
//! ([`Adoption`]) and whether clients must re-register ([`Replication::reregister_clients`]).
//! It reads no other component; the coordinator's side (which component each section comes
//! from and goes back to) is `sync_sections`.
//!
//! The rules: every section is published after each sweep, the SA's sections after a request
//! that changed them; the standbys synced are those the sweep found and a standby that polls
//! this master with our SM_Key; a standby takes sync messages only from the master it watches,
//! with a valid MAC; a new master adopts the replica (the master's entries win, its own fill
//! the gaps) and tells the CA ports to re-register when it may lack a join or a registration
//! the ports' SA clients hold: always after a lost master (a change answered just before the
//! death may never have reached it; OpenSM, which syncs nothing, re-registers every client at
//! every takeover), and after a handover when it holds nothing from its master, not every
//! section, or was not current at the master's last query.

use ibsm_mad::header::Method;
use ibsm_mad::ids::status;
use ibsm_mad::sa::SaHeader;
use ibsm_mad::{Guid, Lid};

use super::events::SmEvent;
use super::io::{Address, GSI_QKEY, Transmit, TransmitKind};
use crate::sync::wire::{Message, SyncKey, WireError};
use crate::sync::{BabblingPort, PeerState, Publisher, Receiver, Replica, Section};

/// What `ibsm status` shows of the state sync.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SyncStatus {
    /// As master: this SM's state version; as standby: the master's at its last query.
    pub version: u64,
    /// As standby: the master's version at which this SM held exactly the master's state.
    pub current_at: Option<u64>,
    /// As standby: the sections held.
    pub sections: Vec<&'static str>,
    /// As master: each standby (port GUID, LID, state, version it is current at).
    pub standbys: Vec<(Guid, Lid, &'static str, Option<u64>)>,
    /// Sync messages sent (master: retries included) or sections received (standby).
    pub messages: u64,
}

/// What became of the standbys: events to report, and the standbys whose sync came to rest
/// (current, foreign or unreachable), in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PeerNews {
    /// [`SmEvent::SyncPeer`] for each standby that moved on.
    pub events: Vec<SmEvent>,
    /// Standbys whose sync came to rest: a handover waiting for one goes now.
    pub settled: Vec<Guid>,
}

/// What to do with a sync message a standby received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SyncAnswer {
    /// Send this response; `received` reports a section that arrived whole.
    Reply {
        /// The response MAD.
        bytes: Vec<u8>,
        /// The section the message completed, and the master's version of it.
        received: Option<(Section, u64)>,
    },
    /// Answer with status 0x001C and report why.
    Refuse(&'static str),
}

/// The state a standby takes over with.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Adoption {
    /// The sections held (empty: nothing was received from the master).
    pub sections: Vec<Section>,
    /// Their content, service leases re-based onto this SM's clock.
    pub replica: Replica,
    /// The master's version this SM was last current at.
    pub current_at: Option<u64>,
}

impl Adoption {
    /// Its report.
    pub fn event(&self) -> SmEvent {
        SmEvent::SyncAdopted { sections: self.sections.len(), current_at: self.current_at }
    }
}

/// The state sync: the master's side, the standby's side, and the ClientReregister decision.
#[derive(Debug, Clone)]
pub struct Replication {
    /// Master: the state it replicates to its standbys.
    publisher: Publisher,
    /// Standby: the state its master replicated to it.
    receiver: Receiver,
    /// The next sweep as master sets ClientReregister on every CA port: this SM starts without
    /// the groups, services and subscriptions the ports' SA clients hold (a first start, or a
    /// takeover without current synced state), so they re-join and re-register.
    reregister_clients: bool,
    /// The next sweep as master sets ClientReregister on these CA ports (port GUIDs, sorted)
    /// too: a repair moved the SLs of their paths.
    reregister_ports: Vec<Guid>,
    /// Master: the standbys reported too old ([`PeerState::TooOld`]; reported once).
    told_too_old: std::collections::BTreeSet<Guid>,
    /// Master: the last sweep found no standby and published nothing: every section is built
    /// and published before a standby is synced ([`Replication::take_deferred`]).
    deferred: bool,
}

impl Default for Replication {
    /// A first start: nothing held, every client told to re-register at the first sweep.
    fn default() -> Replication {
        Replication {
            publisher: Publisher::default(),
            receiver: Receiver::default(),
            reregister_clients: true,
            reregister_ports: Vec::new(),
            told_too_old: std::collections::BTreeSet::new(),
            deferred: false,
        }
    }
}

impl Replication {
    /// Master: publishes `sections` (the unchanged ones cost a digest).
    pub fn publish(&mut self, sections: Vec<(Section, Vec<u8>)>, key: &SyncKey) -> PeerNews {
        for (s, bytes) in sections {
            self.publisher.publish(s, bytes, key);
        }
        self.news()
    }

    /// Master, at the end of a sweep: publishes every section, syncs the `standbys` the sweep
    /// found (port GUID, LID), and clears the ClientReregister request (the sweep carried it).
    /// `None` for the sections when the sweep found no standby: none is synced after it, and
    /// the sections wait until one is ([`Replication::take_deferred`]).
    pub fn after_sweep(
        &mut self,
        sections: Option<Vec<(Section, Vec<u8>)>>,
        standbys: &[(Guid, Lid)],
        key: &SyncKey,
    ) -> PeerNews {
        self.deferred = sections.is_none();
        let mut news = self.publish(sections.unwrap_or_default(), key);
        self.publisher.set_peers(standbys);
        let publisher = &self.publisher;
        self.told_too_old.retain(|g| publisher.knows(*g));
        let more = self.news();
        news.events.extend(more.events);
        news.settled.extend(more.settled);
        self.reregister_clients = false;
        self.reregister_ports.clear();
        news
    }

    /// Master: whether the sections of the last sweep are still to be published (it found no
    /// standby); true once, the caller publishes them then.
    pub fn take_deferred(&mut self) -> bool {
        std::mem::take(&mut self.deferred)
    }

    /// Master: whether the last sweep found no standby and its sections wait for one
    /// ([`Replication::take_deferred`]).
    pub fn deferred(&self) -> bool {
        self.deferred
    }

    /// A standby polled this SM (`me`, master when `master`) with our SM_Key; `lid` is its
    /// port's LID in the last sweep. One the last sweep did not find (it started since) is
    /// synced from now on.
    pub fn standby_polled(&mut self, guid: Guid, lid: Option<Lid>, master: bool, me: Guid) {
        let known = self.publisher.knows(guid) && !self.publisher.refused(guid);
        if !master || known || guid == me {
            return;
        }
        if let Some(lid) = lid {
            self.sync_standby(guid, lid);
        }
    }

    /// Master: syncs the standby `guid` at `lid` (asks it what it holds), keeping the others.
    pub fn sync_standby(&mut self, guid: Guid, lid: Lid) {
        let mut peers: Vec<(Guid, Lid)> =
            self.publisher.peers().filter(|(g, ..)| *g != guid).map(|(g, l, _)| (g, l)).collect();
        peers.push((guid, lid));
        self.publisher.set_peers(&peers);
    }

    /// Master: whether a handover to `guid` need not wait for the state sync: it holds this
    /// master's state as it is now (all of it, or all its older build takes), or it is an SM
    /// that takes none (OpenSM).
    pub fn sync_needless(&self, guid: Guid) -> bool {
        let now = self.publisher.version();
        self.publisher.peers().any(|(g, _, st)| {
            g == guid && (st == PeerState::Foreign || st == PeerState::Current(now) || st == PeerState::TooOld(now))
        })
    }

    /// Master: whether every standby that may take over with `section` has seen its content
    /// as published now ([`Publisher::seen_everywhere`]; true with no standby).
    pub fn seen_everywhere(&self, section: Section) -> bool {
        self.publisher.seen_everywhere(section)
    }

    /// Master: how long to hold writes for the standbys that have not seen `section`
    /// ([`Publisher::hold_bound`]).
    pub fn hold_bound(&self, section: Section) -> u64 {
        self.publisher.hold_bound(section)
    }

    /// Forgets every standby (this SM is no longer master).
    pub fn clear_peers(&mut self) {
        self.publisher.clear_peers();
        self.told_too_old.clear();
    }

    /// What became of the standbys since the last call. A standby found too old is reported
    /// once, not at every version it holds all it can of (until it is current or forgotten).
    fn news(&mut self) -> PeerNews {
        let mut news = PeerNews::default();
        for (standby, state) in self.publisher.take_changes() {
            let version = match state {
                PeerState::Current(v) => Some(v),
                _ => None,
            };
            let told = match state {
                PeerState::TooOld(_) => !self.told_too_old.insert(standby),
                PeerState::Current(_) => {
                    self.told_too_old.remove(&standby);
                    false
                }
                _ => false,
            };
            if !told {
                news.events.push(SmEvent::SyncPeer { standby, state: state.name(), version });
            }
            if matches!(
                state,
                PeerState::Current(_) | PeerState::TooOld(_) | PeerState::Foreign | PeerState::Unreachable
            ) {
                news.settled.push(standby);
            }
        }
        news
    }

    /// Master (`master`): the next sync message to send at `now` from `me`, if any.
    pub fn poll_transmit(&mut self, master: bool, now: u64, me: Guid, key: &SyncKey) -> Option<Transmit> {
        if !master {
            return None;
        }
        let out = self.publisher.poll_transmit(now, me, key)?;
        let to = Address { lid: out.lid, qpn: 1, qkey: GSI_QKEY, pkey_index: 0, sl: 0, grh: None };
        let timeout_ns = crate::sync::publisher::TIMEOUT_NS;
        Some(Transmit { bytes: out.bytes, to, kind: TransmitKind::Request { timeout_ns } })
    }

    /// Master: an answer to a sync message, from the port at `from` (only the port the message
    /// went to answers it).
    pub fn on_response(&mut self, bytes: &[u8], from: Lid, key: &SyncKey) -> PeerNews {
        self.publisher.on_response(bytes, from, key);
        self.news()
    }

    /// [`Replication::on_response`] at `now` (the standby's round trip is kept).
    pub fn on_response_at(&mut self, bytes: &[u8], from: Lid, key: &SyncKey, now: u64) -> PeerNews {
        self.publisher.on_response_at(bytes, from, key, now);
        self.news()
    }

    /// Master: sync messages whose deadline passed at `now`.
    pub fn on_timeout(&mut self, now: u64) -> PeerNews {
        self.publisher.on_timeout(now);
        self.news()
    }

    /// When [`Replication::on_timeout`] is next due.
    pub fn poll_timeout(&self) -> Option<u64> {
        self.publisher.poll_timeout()
    }

    /// A sync message `bytes` (of `method`) arrived at `now` at this SM (`me`; a standby when
    /// `standby`, watching the master `watched`) from the port of the SM `sender` (the SM this
    /// SM found or watches at the message's source LID; `None` when none is known there).
    /// Taken only with our SM_Key's MAC, from the master this SM watches as a standby, and from
    /// that master's port: the GUID a message names is the sender's word, the port it came
    /// from is the fabric's, so a host that holds the SM_Key and writes the master's GUID is
    /// refused. Anything else is refused.
    #[allow(clippy::too_many_arguments)] // each is one fact the answer depends on
    pub fn answer(
        &mut self,
        method: Method,
        bytes: &[u8],
        me: Guid,
        standby: bool,
        (watched, sender): (Option<Guid>, Option<Guid>),
        now: u64,
        key: &SyncKey,
    ) -> SyncAnswer {
        let (sa, msg) = match Message::from_mad(bytes, key) {
            Ok(x) => x,
            Err(WireError::BadMac) => return SyncAnswer::Refuse("bad MAC: the sender does not hold this SM's SM_Key"),
            Err(WireError::Malformed) => return SyncAnswer::Refuse("malformed sync message"),
        };
        if !standby || watched != Some(msg.from) {
            return SyncAnswer::Refuse("not from the master this SM watches as a standby");
        }
        if sender != Some(msg.from) {
            return SyncAnswer::Refuse("not from the port the watched master was found at");
        }
        let mut received = None;
        let payload = if method == Method::Get {
            self.receiver.on_status(&msg, now)
        } else {
            match self.receiver.on_chunk(&msg, now, key) {
                Ok(Some(section)) => {
                    received = Some((section, msg.version));
                    Vec::new()
                }
                Ok(None) => Vec::new(),
                Err(_) => {
                    return SyncAnswer::Refuse("chunk out of range, or a section that does not match its digest");
                }
            }
        };
        let version = self.receiver.current_at.unwrap_or(0);
        let reply = Message { from: me, version, sent_at: now, payload, takes: Section::MAX_ID, ..msg };
        let header = SaHeader { attr_offset: 0, ..sa.response(status::OK, 0) };
        SyncAnswer::Reply { bytes: reply.to_mad(&header, key).to_vec(), received }
    }

    /// A standby taking over from `master` (which `handed_over` the subnet, or was lost): the
    /// state it holds from it (then forgotten), and whether the next sweep tells every CA port
    /// to re-register.
    ///
    /// After a lost master the clients always re-register: the standby cannot know that it saw
    /// the master's last change (a join answered just before the death, whose sync was lost or
    /// never sent, is in no replica), and only the clients know what they joined. It costs no
    /// SMP (the sweep sets MasterSMLID in every end port's PortInfo anyway) and changes nothing
    /// in the data plane: the groups adopted keep their MLIDs, so a re-join finds its group. A
    /// master that handed over did so only once this standby was current, and stopped being
    /// master after: clients are told only if that state is not whole.
    pub fn take_over(&mut self, master: Guid, handed_over: bool) -> Adoption {
        if !self.receiver.holds_from(master) {
            self.reregister_clients = true;
            return Adoption::default();
        }
        let sections: Vec<Section> = self.receiver.held().keys().copied().collect();
        let current_at = self.receiver.current_at;
        self.reregister_clients = !handed_over || current_at.is_none() || sections.len() < Section::ALL.len();
        let mut replica = self.receiver.replica();
        // A newer content of a digests section had begun to arrive: the master publishes it
        // before it writes the tables it changes, so the one held may name tables some
        // switches no longer hold. None is taken as held (they are read back or written).
        if self.receiver.superseded(Section::LftDigests) {
            replica.lft_digests.clear();
        }
        if self.receiver.superseded(Section::QosTables) {
            replica.qos_tables.clear();
        }
        let adoption = Adoption { sections, replica, current_at };
        self.receiver.clear();
        adoption
    }

    /// Standby: the ports the master's babbling-port policy disabled, as last synced (empty
    /// when it synced none), back-offs on this SM's clock.
    pub fn synced_babbling_ports(&self) -> Vec<BabblingPort> {
        self.receiver.babbling_ports()
    }

    /// Master: the next sweep sets ClientReregister on every CA port, for another reason than
    /// state it lacks (a route that moved path SLs: the hosts ask for their paths again).
    pub fn request_reregistration(&mut self) {
        self.reregister_clients = true;
    }

    /// Whether the next sweep as master sets ClientReregister on every CA port.
    pub fn reregister_clients(&self) -> bool {
        self.reregister_clients
    }

    /// Master: the next sweep sets ClientReregister on the CA ports `ports` (port GUIDs; a
    /// repair moved their paths' SLs), beside any request for every port.
    pub fn request_reregistration_of(&mut self, ports: impl IntoIterator<Item = Guid>) {
        self.reregister_ports.extend(ports);
        self.reregister_ports.sort_unstable();
        self.reregister_ports.dedup();
    }

    /// Whether the next sweep as master sets ClientReregister on the CA port `port` (every
    /// port, or this one by name).
    pub fn reregisters(&self, port: Option<Guid>) -> bool {
        self.reregister_clients || port.is_some_and(|g| self.reregister_ports.binary_search(&g).is_ok())
    }

    /// The state sync as `ibsm status` shows it, as master (`master`) or not.
    pub fn status(&self, master: bool) -> SyncStatus {
        if master {
            SyncStatus {
                version: self.publisher.version(),
                standbys: self
                    .publisher
                    .peers()
                    .map(|(g, lid, st)| {
                        let v = match st {
                            PeerState::Current(v) => Some(v),
                            _ => None,
                        };
                        (g, lid, st.name(), v)
                    })
                    .collect(),
                messages: self.publisher.counters.sent,
                ..SyncStatus::default()
            }
        } else {
            SyncStatus {
                version: self.receiver.master_version,
                current_at: self.receiver.current_at,
                sections: self.receiver.held().keys().map(|s| s.name()).collect(),
                standbys: Vec::new(),
                messages: self.receiver.counters.sections,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::publisher::MIN_HOLD_NS;

    const MASTER: Guid = Guid(0x10);
    const STANDBY: Guid = Guid(0x20);

    fn key() -> SyncKey {
        SyncKey::from_sm_key(7)
    }

    fn sections(r: &Replica) -> Vec<(Section, Vec<u8>)> {
        Section::ALL.iter().map(|s| (*s, r.encode(*s))).collect()
    }

    fn replica(lids: u16) -> Replica {
        Replica {
            guid2lid: (1..=lids).map(|i| (Guid(u64::from(i)), Lid(i), Lid(i))).collect(),
            next_mgid: 3,
            ..Replica::default()
        }
    }

    /// Runs the master's messages through the standby until neither has anything to say;
    /// the news of the master's side.
    fn exchange(m: &mut Replication, s: &mut Replication, now: u64) -> PeerNews {
        let mut all = PeerNews::default();
        while let Some(t) = m.poll_transmit(true, now, MASTER, &key()) {
            assert_eq!(t.to.lid, Lid(2));
            let method = SaHeader::from_bytes(&t.bytes).expect("header").method;
            let SyncAnswer::Reply { bytes, .. } =
                s.answer(method, &t.bytes, STANDBY, true, (Some(MASTER), Some(MASTER)), now, &key())
            else {
                panic!("refused");
            };
            let news = m.on_response_at(&bytes, t.to.lid, &key(), now);
            all.events.extend(news.events);
            all.settled.extend(news.settled);
        }
        all
    }

    #[test]
    fn a_synced_standby_takes_over_with_every_section_and_tells_clients_only_after_a_lost_master() {
        let (mut m, mut s) = (Replication::default(), Replication::default());
        assert!(m.reregister_clients(), "a first start tells every client");
        let r = replica(300);
        let news = m.after_sweep(Some(sections(&r)), &[(STANDBY, Lid(2))], &key());
        assert!(!m.reregister_clients(), "the sweep carried it");
        assert_eq!(news.settled, []);
        let news = exchange(&mut m, &mut s, 1_000);
        assert_eq!(news.settled, [STANDBY]);
        let version = m.status(true).version;
        assert!(m.sync_needless(STANDBY));
        assert_eq!(m.status(true).standbys, [(STANDBY, Lid(2), "current", Some(version))]);
        assert_eq!((s.status(false).current_at, s.status(false).sections.len()), (Some(version), Section::ALL.len()));

        let mut after_loss = s.clone();
        let lost = after_loss.take_over(MASTER, false);
        assert!(after_loss.reregister_clients(), "a lost master: it may have answered a change never synced");
        let a = s.take_over(MASTER, true);
        assert_eq!(lost, a);
        assert_eq!(a.sections, Section::ALL);
        assert_eq!(a.replica, r);
        assert_eq!(a.event(), SmEvent::SyncAdopted { sections: Section::ALL.len(), current_at: Some(version) });
        assert!(!s.reregister_clients(), "handed over: current at the master's last query, every section held");
        assert!(s.status(false).sections.is_empty(), "forgotten once adopted");
    }

    #[test]
    fn a_standby_not_current_at_the_masters_last_query_tells_every_client_at_its_takeover() {
        let (mut m, mut s) = (Replication::default(), Replication::default());
        m.after_sweep(Some(sections(&replica(3))), &[(STANDBY, Lid(2))], &key());
        exchange(&mut m, &mut s, 1);
        // The master moved on (a join): its next query shows a table the standby does not hold,
        // and the sections that would bring it up to date never arrive.
        let mut later = Replication::default();
        let changed = Replica { next_mgid: 9, ..replica(3) };
        later.after_sweep(Some(sections(&changed)), &[(STANDBY, Lid(2))], &key());
        let ask = later.poll_transmit(true, 2, MASTER, &key()).expect("a query");
        assert!(matches!(
            s.answer(Method::Get, &ask.bytes, STANDBY, true, (Some(MASTER), Some(MASTER)), 2, &key()),
            SyncAnswer::Reply { .. }
        ));
        let a = s.take_over(MASTER, true);
        assert_eq!((a.sections.len(), a.current_at), (Section::ALL.len(), None), "every section, of an older version");
        assert!(s.reregister_clients(), "even handed over");
    }

    #[test]
    fn new_lft_digests_are_seen_once_the_standby_acknowledged_a_chunk_and_void_the_older_ones() {
        let (mut master, mut standby) = (Replication::default(), Replication::default());
        assert!(master.seen_everywhere(Section::LftDigests), "no standby: nothing to wait for");
        let digests =
            |n: u64| Replica { lft_digests: (0..n).map(|i| (Guid(0x100 + i), 63, i)).collect(), ..replica(3) };
        master.after_sweep(Some(sections(&digests(300))), &[(STANDBY, Lid(2))], &key());
        assert!(!master.seen_everywhere(Section::LftDigests), "a standby found, not synced yet");
        exchange(&mut master, &mut standby, 1);
        assert!(master.seen_everywhere(Section::LftDigests));
        // A sweep withdraws a switch's digest: 299 entries are 46 chunks, more than the window.
        let newer = digests(299);
        let news = master.publish(vec![(Section::LftDigests, newer.encode(Section::LftDigests))], &key());
        assert!(news.settled.is_empty());
        assert!(!master.seen_everywhere(Section::LftDigests), "the standby holds the older digests");
        assert_eq!(master.hold_bound(Section::LftDigests), MIN_HOLD_NS, "its round trip (0 here) is short");
        // The first chunk goes ahead of anything else queued, and its answer is enough.
        let t = master.poll_transmit(true, 2, MASTER, &key()).expect("a chunk");
        let (h, msg) = Message::from_mad(&t.bytes, &key()).expect("ours");
        assert_eq!((h.method, msg.section, msg.chunk), (Method::Set, Section::LftDigests.id(), 0));
        let SyncAnswer::Reply { bytes, .. } =
            standby.answer(h.method, &t.bytes, STANDBY, true, (Some(MASTER), Some(MASTER)), 2, &key())
        else {
            panic!("refused");
        };
        master.on_response_at(&bytes, Lid(2), &key(), 2);
        assert!(master.seen_everywhere(Section::LftDigests));
        assert_eq!(master.hold_bound(Section::LftDigests), 0, "no standby to wait for");
        // The master dies now: the standby, current at the older version, trusts no digest.
        let mut early = standby.clone();
        let a = early.take_over(MASTER, false);
        assert!(a.current_at.is_some() && a.replica.lft_digests.is_empty(), "{:?}", a.current_at);
        assert_eq!(a.replica.guid2lid, newer.guid2lid, "the rest is taken");
        // Once the sync is done the new digests are taken.
        exchange(&mut master, &mut standby, 3);
        assert_eq!(standby.take_over(MASTER, false).replica.lft_digests, newer.lft_digests);
    }

    #[test]
    fn nothing_held_from_the_master_adopts_nothing_and_tells_every_client() {
        let mut s = Replication::default();
        s.after_sweep(Some(Vec::new()), &[], &key());
        assert!(!s.reregister_clients());
        let a = s.take_over(MASTER, true);
        assert_eq!(a, Adoption::default());
        assert_eq!(a.event(), SmEvent::SyncAdopted { sections: 0, current_at: None });
        assert!(s.reregister_clients());
    }

    #[test]
    fn ports_named_for_reregistration_are_told_at_the_next_sweep_only() {
        let mut s = Replication::default();
        s.after_sweep(Some(Vec::new()), &[], &key());
        assert!(!s.reregisters(Some(Guid(7))) && !s.reregisters(None));
        s.request_reregistration_of([Guid(9), Guid(7), Guid(9)]);
        assert!(s.reregisters(Some(Guid(7))) && s.reregisters(Some(Guid(9))));
        assert!(!s.reregisters(Some(Guid(8))) && !s.reregisters(None), "only the ports named");
        assert!(!s.reregister_clients());
        s.after_sweep(Some(Vec::new()), &[], &key());
        assert!(!s.reregisters(Some(Guid(7))), "the sweep carried it");
        s.request_reregistration();
        assert!(s.reregisters(Some(Guid(8))) && s.reregisters(None), "every port");
    }

    #[test]
    fn sync_messages_are_taken_only_by_a_standby_from_its_master_with_the_key() {
        let (mut m, mut s) = (Replication::default(), Replication::default());
        m.after_sweep(Some(sections(&replica(3))), &[(STANDBY, Lid(2))], &key());
        let t = m.poll_transmit(true, 1, MASTER, &key()).expect("a query");
        let refused = |a: SyncAnswer| matches!(a, SyncAnswer::Refuse(_));
        assert!(
            refused(s.answer(Method::Get, &t.bytes, STANDBY, false, (Some(MASTER), Some(MASTER)), 1, &key())),
            "not standby"
        );
        assert!(
            refused(s.answer(Method::Get, &t.bytes, STANDBY, true, (Some(Guid(0x99)), Some(MASTER)), 1, &key())),
            "another master"
        );
        // The master's GUID from another port, or from a LID no SM was found at.
        for sender in [Some(Guid(0x99)), None] {
            assert!(
                refused(s.answer(Method::Get, &t.bytes, STANDBY, true, (Some(MASTER), sender), 1, &key())),
                "{sender:?}"
            );
        }
        let other = SyncKey::from_sm_key(8);
        assert!(
            refused(s.answer(Method::Get, &t.bytes, STANDBY, true, (Some(MASTER), Some(MASTER)), 1, &other)),
            "another key"
        );
        assert!(
            refused(s.answer(Method::Get, &t.bytes[..100], STANDBY, true, (Some(MASTER), Some(MASTER)), 1, &key())),
            "short"
        );
        assert!(s.status(false).sections.is_empty() && s.status(false).version == 0, "nothing taken");
        assert!(matches!(
            s.answer(Method::Get, &t.bytes, STANDBY, true, (Some(MASTER), Some(MASTER)), 1, &key()),
            SyncAnswer::Reply { received: None, .. }
        ));
    }

    #[test]
    fn a_standby_of_an_older_build_is_reported_too_old_once_and_does_not_hold_up_a_handover() {
        // A build from before section 9: it says nothing of what it takes (byte 41 is 0) and
        // refuses a chunk of a section it does not know (status 0x001C).
        let (mut m, mut s) = (Replication::default(), Replication::default());
        let mut old = |m: &mut Replication, now: u64| {
            let mut news = PeerNews::default();
            while let Some(t) = m.poll_transmit(true, now, MASTER, &key()) {
                let (h, msg) = Message::from_mad(&t.bytes, &key()).expect("ours");
                let reply = if h.method == Method::Set && msg.section > 8 {
                    crate::core::requests::response_to(&t.bytes, status::BAD_FIELD, None).expect("a response")
                } else {
                    let SyncAnswer::Reply { bytes, .. } =
                        s.answer(h.method, &t.bytes, STANDBY, true, (Some(MASTER), Some(MASTER)), now, &key())
                    else {
                        panic!("refused");
                    };
                    let (rh, rm) = Message::from_mad(&bytes, &key()).expect("its answer");
                    Message { takes: 0, ..rm }.to_mad(&rh, &key()).to_vec()
                };
                let n = m.on_response(&reply, t.to.lid, &key());
                news.events.extend(n.events);
                news.settled.extend(n.settled);
            }
            news
        };
        let too_old =
            |n: &PeerNews| n.events.iter().filter(|e| matches!(e, SmEvent::SyncPeer { state: "too old", .. })).count();
        m.after_sweep(Some(sections(&replica(3))), &[(STANDBY, Lid(2))], &key());
        let news = old(&mut m, 1);
        assert_eq!((too_old(&news), news.settled.as_slice()), (1, &[STANDBY][..]), "{news:?}");
        assert!(m.sync_needless(STANDBY), "a handover to it does not wait");
        assert_eq!(m.status(true).standbys, [(STANDBY, Lid(2), "too old", None)]);
        // The master's state changes: it is synced again, settles again, and is not reported again.
        let news = m.after_sweep(Some(sections(&replica(4))), &[(STANDBY, Lid(2))], &key());
        let more = old(&mut m, 2);
        assert_eq!(too_old(&news) + too_old(&more), 0, "{news:?} {more:?}");
        assert_eq!(more.settled, [STANDBY]);
        assert!(m.sync_needless(STANDBY));
    }

    #[test]
    fn a_polling_standby_is_synced_by_a_master_only() {
        let mut r = Replication::default();
        r.standby_polled(STANDBY, Some(Lid(2)), false, MASTER);
        assert!(r.status(true).standbys.is_empty(), "not master");
        r.standby_polled(MASTER, Some(Lid(1)), true, MASTER);
        r.standby_polled(STANDBY, None, true, MASTER);
        assert!(r.status(true).standbys.is_empty(), "itself, or a standby the sweep did not see");
        r.standby_polled(STANDBY, Some(Lid(2)), true, MASTER);
        assert_eq!(r.status(true).standbys, [(STANDBY, Lid(2), "asking", None)]);
        assert!(r.poll_transmit(false, 0, MASTER, &key()).is_none(), "a standby sends none");
        assert!(r.poll_transmit(true, 0, MASTER, &key()).is_some());
        r.clear_peers();
        assert!(r.status(true).standbys.is_empty());
    }
}
