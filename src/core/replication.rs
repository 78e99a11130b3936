//! The core's side of the state sync ([`crate::sync`]): a master publishes its state and keeps
//! its standbys current; a standby answers the master's sync messages and takes over with
//! what it received.
//!
//! Owns: which state goes into each section (guid2lid, the M_Keys held and the cable map, the
//! P_Key layouts, the SA's groups, services and subscriptions) and when a section is published
//! (every section after each sweep, the SA's sections after a request that changed them); which
//! SMs are synced (the standbys the sweep found, and a standby that polls this master with our
//! SM_Key); who may feed a standby (only the master it watches, with a valid MAC); and how a new
//! master adopts the replica (the master's entries win, its own fill the gaps).

use ibsm_mad::Guid;
use ibsm_mad::header::MadHeader;
use ibsm_mad::ids::status;
use ibsm_mad::sa::SaHeader;

use super::Sm;
use super::events::SmEvent;
use super::io::{Address, GSI_QKEY, MadSource, Transmit, TransmitKind};
use super::state::SmState;
use crate::sync::wire::{Message, SyncKey, WireError};
use crate::sync::{PeerState, Replica, Section};

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
    pub standbys: Vec<(Guid, ibsm_mad::Lid, &'static str, Option<u64>)>,
    /// Sync messages sent (master: retries included) or sections received (standby).
    pub messages: u64,
}

impl Sm {
    fn sync_key(&self) -> SyncKey {
        SyncKey::from_sm_key(self.cfg.sm_key)
    }

    /// The bytes of `section` of this SM's state.
    fn section_bytes(&self, section: Section) -> Vec<u8> {
        let mut r = Replica::default();
        match section {
            Section::Guid2Lid => r.guid2lid = self.guid2lid.iter().collect(),
            Section::MKeys => {
                (r.mkeys, r.neighbors) = self.mkeys.replica();
            }
            Section::PKeys => r.pkeys = self.partitions.layout().iter().map(|(g, l)| (*g, l.clone())).collect(),
            Section::Groups | Section::Services | Section::Informs => self.sa.export(section, &mut r),
        }
        r.encode(section)
    }

    /// Master: publishes `sections` of its state (the unchanged ones cost a digest).
    pub(super) fn publish(&mut self, sections: &[Section]) {
        let key = self.sync_key();
        for &s in sections {
            let bytes = self.section_bytes(s);
            self.sync_out.publish(s, bytes, &key);
        }
        self.sync_events();
    }

    /// Master, after a sweep: publishes everything and syncs the standbys the sweep found.
    pub(super) fn sync_after_sweep(&mut self) {
        self.publish(&Section::ALL);
        let snap = self.sa.snapshot();
        let standbys: Vec<(Guid, ibsm_mad::Lid)> = self
            .election
            .found()
            .iter()
            .filter(|f| f.info.sm_state == ibsm_mad::attrs::SmState::Standby)
            .map(|f| {
                let lid = snap.as_ref().and_then(|s| s.by_guid(f.info.guid).and_then(|at| s.port(at))).map(|p| p.lid);
                (f.info.guid, lid.unwrap_or(f.lid))
            })
            .collect();
        self.sync_out.set_peers(&standbys);
        self.sync_events();
    }

    /// Master: a standby polled it with our SM_Key. One the last sweep did not find (it
    /// started since) is synced from now on.
    pub(super) fn standby_seen(&mut self, guid: Guid) {
        let known = self.sync_out.knows(guid) && !self.sync_out.refused(guid);
        if self.state != SmState::Master || known || guid == self.port_guid {
            return;
        }
        let Some(lid) = self.sa.snapshot().and_then(|s| s.by_guid(guid).and_then(|at| s.port(at))).map(|p| p.lid)
        else {
            return;
        };
        self.sync_standby(guid, lid);
    }

    /// Master: syncs the standby `guid` at `lid` (asks it what it holds), keeping the others.
    pub(super) fn sync_standby(&mut self, guid: Guid, lid: ibsm_mad::Lid) {
        let mut peers: Vec<(Guid, ibsm_mad::Lid)> =
            self.sync_out.peers().filter(|(g, ..)| *g != guid).map(|(g, l, _)| (g, l)).collect();
        peers.push((guid, lid));
        self.sync_out.set_peers(&peers);
    }

    /// Master: whether a handover to `guid` need not wait for the state sync: it holds this
    /// master's state as it is now, or it is an SM that takes none (OpenSM).
    pub(super) fn sync_needless(&self, guid: Guid) -> bool {
        let now = self.sync_out.version();
        self.sync_out.peers().any(|(g, _, st)| g == guid && (st == PeerState::Foreign || st == PeerState::Current(now)))
    }

    fn sync_events(&mut self) {
        for (standby, state) in self.sync_out.take_changes() {
            let version = match state {
                PeerState::Current(v) => Some(v),
                _ => None,
            };
            self.events.push_back(SmEvent::SyncPeer { standby, state: state.name(), version });
            if matches!(state, PeerState::Current(_) | PeerState::Foreign | PeerState::Unreachable) {
                self.sync_settled(standby);
            }
        }
    }

    /// The next sync message to send, if any.
    pub(super) fn poll_sync_transmit(&mut self) -> Option<Transmit> {
        if self.state != SmState::Master {
            return None;
        }
        let key = self.sync_key();
        let out = self.sync_out.poll_transmit(self.now, self.port_guid, &key)?;
        let to = Address { lid: out.lid, qpn: 1, qkey: GSI_QKEY, pkey_index: 0, sl: 0, grh: None };
        let timeout_ns = crate::sync::publisher::TIMEOUT_NS;
        Some(Transmit { bytes: out.bytes, to, kind: TransmitKind::Request { timeout_ns } })
    }

    /// Master: an answer to a sync message.
    pub(super) fn on_sync_response(&mut self, bytes: &[u8]) {
        let key = self.sync_key();
        self.sync_out.on_response(bytes, &key);
        self.sync_events();
    }

    /// Master: sync messages whose deadline passed.
    pub(super) fn sync_timeout(&mut self) {
        self.sync_out.on_timeout(self.now);
        self.sync_events();
    }

    /// Standby: a sync message. Taken only with our SM_Key's MAC and from the master this SM
    /// watches; anything else is answered with status 0x001C and reported.
    pub(super) fn answer_sync(&mut self, h: &MadHeader, bytes: &[u8], src: &MadSource) {
        let key = self.sync_key();
        let refuse = |sm: &mut Sm, reason: &'static str| {
            sm.events.push_back(SmEvent::SyncRefused { from: src.slid, reason });
            if let Some(reply) = super::requests::response_to(bytes, status::BAD_FIELD, None) {
                sm.respond(reply, src.reply_address());
            }
        };
        let (sa, msg) = match Message::from_mad(bytes, &key) {
            Ok(x) => x,
            Err(WireError::BadMac) => return refuse(self, "bad MAC: the sender does not hold this SM's SM_Key"),
            Err(WireError::Malformed) => return refuse(self, "malformed sync message"),
        };
        let watched = self.election.master().map(|m| m.info.guid);
        if self.state != SmState::Standby || watched != Some(msg.from) {
            return refuse(self, "not from the master this SM watches as a standby");
        }
        let payload = if h.method == ibsm_mad::header::Method::Get {
            self.sync_in.on_status(&msg, self.now)
        } else {
            match self.sync_in.on_chunk(&msg, self.now, &key) {
                Ok(Some(section)) => {
                    self.events.push_back(SmEvent::SyncReceived { section: section.name(), version: msg.version });
                    Vec::new()
                }
                Ok(None) => Vec::new(),
                Err(_) => return refuse(self, "chunk out of range, or a section that does not match its digest"),
            }
        };
        let version = self.sync_in.current_at.unwrap_or(0);
        let reply = Message { from: self.port_guid, version, sent_at: self.now, payload, ..msg };
        let header = SaHeader { attr_offset: 0, ..sa.response(status::OK, 0) };
        self.respond(reply.to_mad(&header, &key).to_vec(), src.reply_address());
    }

    /// A standby taking over: adopts what its master sent (the master's entries win where
    /// both have one), then forgets it.
    pub(super) fn adopt_replica(&mut self, master: Guid) {
        if !self.sync_in.holds_from(master) {
            self.events.push_back(SmEvent::SyncAdopted { sections: 0, current_at: None });
            self.reregister_clients = true;
            return;
        }
        let r = self.sync_in.replica();
        let held: Vec<Section> = self.sync_in.held().keys().copied().collect();
        for s in &held {
            match s {
                Section::Guid2Lid => self.guid2lid.adopt(&r.guid2lid),
                Section::MKeys => {
                    self.mkeys.adopt(&r.mkeys, &r.neighbors);
                }
                Section::PKeys => self.partitions.adopt_layout(r.pkeys.iter().cloned()),
                Section::Groups | Section::Services | Section::Informs => self.sa.adopt(*s, &r),
            }
        }
        // Clients whose joins or registrations may be missing re-join and re-register.
        self.reregister_clients = self.sync_in.current_at.is_none() || held.len() < Section::ALL.len();
        self.events.push_back(SmEvent::SyncAdopted { sections: held.len(), current_at: self.sync_in.current_at });
        self.sync_in.clear();
    }

    /// The state sync as `ibsm status` shows it.
    pub fn sync_status(&self) -> SyncStatus {
        match self.state {
            SmState::Master => SyncStatus {
                version: self.sync_out.version(),
                standbys: self
                    .sync_out
                    .peers()
                    .map(|(g, lid, st)| {
                        let v = match st {
                            PeerState::Current(v) => Some(v),
                            _ => None,
                        };
                        (g, lid, st.name(), v)
                    })
                    .collect(),
                messages: self.sync_out.counters.sent,
                ..SyncStatus::default()
            },
            _ => SyncStatus {
                version: self.sync_in.master_version,
                current_at: self.sync_in.current_at,
                sections: self.sync_in.held().keys().map(|s| s.name()).collect(),
                standbys: Vec::new(),
                messages: self.sync_in.counters.sections,
            },
        }
    }
}
