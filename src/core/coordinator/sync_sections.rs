//! The coordinator's side of replication ([`crate::core::replication::Replication`]): which
//! component each section of the replicated state comes from (guid2lid, the M_Keys and the
//! cable map, the P_Key tables as the ports hold them, the SA's groups, services, subscriptions and alias GUIDs,
//! the ports an operator disabled, the digests of the switches' forwarding tables, the ports the
//! babbling-port policy disabled, the digests of the QoS tables written) and goes back to at
//! a takeover (the babbling ports also as soon as a standby receives them), and where the component's answers go (events, the standbys whose sync came to
//! rest for a handover waiting on them, replies to sync messages).

use ibsm_mad::header::MadHeader;
use ibsm_mad::ids::status;
use ibsm_mad::{Guid, Lid};

use crate::core::Sm;
use crate::core::events::SmEvent;
use crate::core::io::{MadSource, Transmit};
use crate::core::programming::{LftPlan, table_digest};
use crate::core::qos::TableDigests;
use crate::core::replication::{PeerNews, SyncAnswer, SyncStatus};
use crate::core::state::SmState;
use crate::core::transactions::Op;
use crate::sync::wire::SyncKey;
use crate::sync::{Replica, Section};

impl Sm {
    fn sync_key(&self) -> SyncKey {
        SyncKey::from_sm_key(self.cfg.sm_key)
    }

    /// The bytes of each of `sections` of this SM's state, read from the components that own it.
    fn sections(&self, sections: &[Section]) -> Vec<(Section, Vec<u8>)> {
        sections
            .iter()
            .map(|&section| {
                let mut r = Replica::default();
                match section {
                    Section::Guid2Lid => r.guid2lid = self.guid2lid.iter().collect(),
                    Section::MKeys => (r.mkeys, r.neighbors) = self.mkeys.replica(),
                    Section::PKeys => r.pkeys = self.partitions.written_layouts(),
                    Section::DisabledPorts => r.disabled_ports = self.maintenance.disabled().iter().copied().collect(),
                    Section::LftDigests => r.lft_digests = self.programming.digests(),
                    Section::BabblingPorts => r.babbling_ports = self.babbling.replica(),
                    Section::QosTables => {
                        r.qos_tables =
                            self.qos.written_digests().into_iter().map(|(g, d)| (g, d.sl2vl, d.vlarb)).collect();
                    }
                    Section::Groups | Section::Services | Section::Informs | Section::Aliases => {
                        self.sa.export(section, &mut r);
                    }
                }
                (section, r.encode(section))
            })
            .collect()
    }

    /// Reports what became of the standbys; a handover waiting for one that settled goes now.
    fn take_news(&mut self, news: PeerNews) {
        self.events.extend(news.events);
        for standby in news.settled {
            self.sync_settled(standby);
        }
    }

    /// Master: publishes `sections` of its state (the unchanged ones cost a digest).
    /// While the last sweep found no standby, nothing is built or published (a repair's
    /// digests would hash every table): every section goes when a standby is found.
    pub(in crate::core) fn publish(&mut self, sections: &[Section]) {
        if self.replication.deferred() {
            return;
        }
        let bytes = self.sections(sections);
        let news = self.replication.publish(bytes, &self.sync_key());
        self.take_news(news);
    }

    /// Master: publishes the LFT digests again when a switch stopped being held whole (it is
    /// being written, was reset, or another SM wrote it), before a standby could take the old
    /// digest for what it holds.
    pub(in crate::core) fn publish_digests_if_changed(&mut self) {
        if self.programming.take_digests_changed() && self.state == SmState::Master {
            self.publish(&[Section::LftDigests]);
        }
    }

    /// Master: a plan's LFT Sets, after the digests they make stale are withdrawn (published
    /// again): queued, or held while a standby may still hold the older digests ([`Sm::release_lfts`]).
    /// A sweep with no standby, or whose standbys all saw the digests, does not wait.
    pub(in crate::core) fn queue_lft_plan(&mut self, plan: LftPlan) {
        self.publish_digests_if_changed();
        self.sweep.lfts(plan.sets.len() as u64, plan.unchanged);
        if plan.sets.len() > 0 && !self.lfts_may_go() {
            let bound = self.replication.hold_bound(Section::LftDigests);
            self.lft_gate.hold(plan.sets, self.now, bound);
        } else {
            self.tx.push_feed(plan.sets, Op::Sweep);
        }
    }

    /// Whether LFT Sets may go: this SM is not master (a takeover's sweep syncs no standby
    /// yet), or every standby has seen the LFT digests as published now.
    fn lfts_may_go(&self) -> bool {
        self.state != SmState::Master || self.replication.seen_everywhere(Section::LftDigests)
    }

    /// The held LFT Sets go when every standby has seen the digests (it acknowledged a chunk
    /// of them: a takeover then trusts none of the older ones) or at the bound; whether they went.
    pub(in crate::core) fn release_lfts(&mut self) -> bool {
        let seen = self.lfts_may_go();
        let Some(r) = self.lft_gate.release(seen, self.now) else { return false };
        self.events.push_back(SmEvent::SyncLftsHeld { held_ns: r.held_ns, seen });
        self.tx.push_feed(r.sets, Op::Sweep);
        true
    }

    /// Master: publishes the QoS table digests again when a node's tables stopped being held
    /// (reset, or about to be rewritten), as [`Sm::publish_digests_if_changed`] does for LFTs.
    pub(in crate::core) fn publish_qos_digests_if_changed(&mut self) {
        if self.qos.take_digests_changed() && self.state == SmState::Master {
            self.publish(&[Section::QosTables]);
        }
    }

    /// Master, after a sweep: publishes everything and syncs the standbys the sweep found.
    pub(in crate::core) fn sync_after_sweep(&mut self) {
        let snap = self.sa.snapshot();
        let standbys: Vec<(Guid, Lid)> = self
            .election
            .found()
            .iter()
            .filter(|f| f.info.sm_state == ibsm_mad::attrs::SmState::Standby)
            .map(|f| {
                let lid = snap.and_then(|s| s.by_guid(f.info.guid).and_then(|at| s.port(at))).map(|p| p.lid);
                (f.info.guid, lid.unwrap_or(f.lid))
            })
            .collect();
        // With no standby to sync, the sections (the LFT digests hash every table, the P_Key
        // layouts read every port: 60 ms at k = 48) are built when a standby is found.
        let bytes = (!standbys.is_empty()).then(|| self.sections(&Section::ALL));
        let news = self.replication.after_sweep(bytes, &standbys, &self.sync_key());
        self.take_news(news);
        // A route that moved path SLs is written whole: a follow-up sweep tells every CA port
        // to re-register, so that the hosts ask for their paths (and SLs) again.
        if self.routing.take_reregister() {
            self.replication.request_reregistration();
            self.schedule.request();
        }
        // A repair that moved some pairs' SLs: only the CA ports at those pairs' source
        // switches hold stale SLs (the SL of a path is its source switch's pair's).
        let at = self.routing.take_reregister_at();
        if !at.is_empty() {
            let ports = self.ca_ports_at(&at);
            if !ports.is_empty() {
                self.replication.request_reregistration_of(ports);
                self.schedule.request();
            }
        }
    }

    /// The CA ports (port GUIDs) cabled to the switches `switches` (NodeGUIDs, sorted): the
    /// ports whose paths leave from those switches.
    fn ca_ports_at(&self, switches: &[Guid]) -> Vec<Guid> {
        let nodes = &self.subnet.nodes;
        let at =
            |i: usize| nodes.get(i).is_some_and(|n| n.is_switch() && switches.binary_search(&n.info.node_guid).is_ok());
        nodes
            .iter()
            .filter(|n| !n.is_switch())
            .flat_map(|n| n.ports.iter().skip(1))
            .filter(|p| p.remote.is_some_and(|(r, _)| at(r)))
            .filter_map(|p| p.guid)
            .collect()
    }

    /// Master: a standby polled it with our SM_Key. One the last sweep did not find (it
    /// started since) is synced from now on.
    pub(in crate::core) fn standby_seen(&mut self, guid: Guid) {
        if self.state == SmState::Master && guid != self.port_guid {
            self.publish_deferred();
        }
        let lid = self.sa.snapshot().and_then(|s| s.by_guid(guid).and_then(|at| s.port(at))).map(|p| p.lid);
        self.replication.standby_polled(guid, lid, self.state == SmState::Master, self.port_guid);
    }

    /// Master: syncs the standby `guid` at `lid`, keeping the others.
    pub(in crate::core) fn sync_standby(&mut self, guid: Guid, lid: Lid) {
        self.publish_deferred();
        self.replication.sync_standby(guid, lid);
    }

    /// Master: the sections the last sweep left unpublished (it found no standby), published
    /// before a standby is synced: it gets them as they are now.
    fn publish_deferred(&mut self) {
        if self.replication.take_deferred() {
            self.publish(&Section::ALL);
        }
    }

    /// Master: whether a handover to `guid` need not wait for the state sync.
    pub(in crate::core) fn sync_needless(&self, guid: Guid) -> bool {
        self.replication.sync_needless(guid)
    }

    /// The next sync message to send, if any.
    pub(in crate::core) fn poll_sync_transmit(&mut self) -> Option<Transmit> {
        let key = self.sync_key();
        self.replication.poll_transmit(self.state == SmState::Master, self.now, self.port_guid, &key)
    }

    /// Master: an answer to a sync message from `src`.
    pub(in crate::core) fn on_sync_response(&mut self, bytes: &[u8], src: &MadSource) {
        let news = self.replication.on_response_at(bytes, src.slid, &self.sync_key(), self.now);
        self.take_news(news);
    }

    /// Master: sync messages whose deadline passed.
    pub(in crate::core) fn sync_timeout(&mut self) {
        let news = self.replication.on_timeout(self.now);
        self.take_news(news);
    }

    /// Standby: a sync message, answered (or refused with status 0x001C, and reported).
    pub(in crate::core) fn answer_sync(&mut self, h: &MadHeader, bytes: &[u8], src: &MadSource) {
        let key = self.sync_key();
        let watched = self.election.master().map(|m| m.info.guid);
        // Who sent it is the SM found at its source LID, not the GUID it names.
        let sender = self.election.sender_at(src.slid);
        let standby = self.state == SmState::Standby;
        match self.replication.answer(h.method, bytes, self.port_guid, standby, (watched, sender), self.now, &key) {
            SyncAnswer::Reply { bytes, received } => {
                if let Some((section, version)) = received {
                    self.events.push_back(SmEvent::SyncReceived { section: section.name(), version });
                    // A standby's babbling list is its master's: an old one of its own would
                    // have it enable ports at old deadlines should it take over.
                    if section == Section::BabblingPorts {
                        self.babbling.adopt(&self.replication.synced_babbling_ports());
                    }
                }
                self.respond(bytes, src.reply_address());
            }
            SyncAnswer::Refuse(reason) => {
                self.events.push_back(SmEvent::SyncRefused { from: src.slid, reason });
                if let Some(reply) = crate::core::requests::response_to(bytes, status::BAD_FIELD, None) {
                    self.respond(reply, src.reply_address());
                }
            }
        }
    }

    /// A standby taking over from `master` (which `handed_over` the subnet, or was lost): gives
    /// each component its section of what the master sent (the master's entries win where both
    /// have one).
    pub(in crate::core) fn adopt_replica(&mut self, master: Guid, handed_over: bool) {
        let a = self.replication.take_over(master, handed_over);
        let r = &a.replica;
        // What this SM wrote as master before may have been overwritten since.
        self.qos.forget_written();
        self.partitions.forget_written();
        for s in &a.sections {
            match s {
                Section::Guid2Lid => self.guid2lid.adopt(&r.guid2lid),
                Section::MKeys => self.mkeys.adopt(&r.mkeys, &r.neighbors),
                Section::PKeys => self.partitions.adopt_written(r.pkeys.iter().cloned()),
                Section::DisabledPorts => self.maintenance.set_disabled(r.disabled_ports.iter().copied()),
                // Only from a master this SM was current with at its last query: an older
                // digest may name a table a switch no longer holds. With a layered chain, the
                // next tables are written from what the switches hold: a digest is taken only
                // where it names this SM's base table for that switch (the table it then takes
                // the switch to hold); any other switch is read back.
                Section::LftDigests if a.current_at.is_some() => {
                    let by = self.guid2lid.get(master).map(|(lid, _)| lid);
                    let base = self.chain_layered().then(|| self.routing.base_tables().unwrap_or_default());
                    let known = |&(g, _, d): &(Guid, u16, u64)| {
                        base.as_ref().is_none_or(|b| b.get(&g).is_some_and(|t| table_digest(t) == d))
                    };
                    self.programming.adopt_digests(r.lft_digests.iter().copied().filter(known), by);
                }
                // The same rule: an older digest may name tables a node no longer holds.
                Section::QosTables if a.current_at.is_some() => {
                    let digests = r.qos_tables.iter().map(|&(g, sl2vl, vlarb)| (g, TableDigests { sl2vl, vlarb }));
                    self.qos.adopt_written(digests);
                }
                Section::LftDigests | Section::QosTables => {}
                Section::BabblingPorts => self.babbling.adopt(&r.babbling_ports),
                Section::Groups | Section::Services | Section::Informs | Section::Aliases => self.sa.adopt(*s, r),
            }
        }
        self.events.push_back(a.event());
    }

    /// The state sync as `ibsm status` shows it.
    pub fn sync_status(&self) -> SyncStatus {
        self.replication.status(self.state == SmState::Master)
    }
}
