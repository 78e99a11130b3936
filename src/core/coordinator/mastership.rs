//! The coordinator's side of the election: it asks the SMs a sweep finds for their SMInfo,
//! finds where a SubnSet(SMInfo) came from, and acts on [`Election`]'s answers (stand by, take
//! over, hand over, poll the master, nudge a worse master with a trap 144, hold the end of
//! discovery while it reads again the SM that handed over and still read as master), which
//! touch the SM's state, the sweep, the transaction window and the state sync; and it answers
//! SubnGet(SMInfo) and SubnSet(SMInfo) on the SM's own port (a Get that fails the port's M_Key
//! check at protect levels 2 and 3 gets no answer). The election's own state and rules are
//! [`crate::core::election`]'s; this file holds none.

use ibsm_mad::attrs::{
    CapabilityMask, Notice, NoticeDetails, NoticeType, PortInfo, ProducerType, SmInfo, SmState as WireSmState,
};
use ibsm_mad::header::{MadHeader, Method, MgmtClass};
use ibsm_mad::ids::status;
use ibsm_mad::smp::{SMP_DATA_LEN, SmpRepr};
use ibsm_mad::{Attribute, Guid, Lid, PortNum, ids};

use crate::core::Sm;
use crate::core::election::{
    AfterDiscovery, FoundSm, HANDED_OVER, HANDOVER_SYNC_WAIT_NS, HELD_HANDOVER_NS, PollRules, SenderAt, better, control,
};
use crate::core::events::SmEvent;
use crate::core::io::{Address, MadSource};
use crate::core::requests::{SMP_DATA, reply_to, response_to};
use crate::core::state::{NodeIdx, SmState, SweepPhase};
use crate::core::transactions::{Op, Outcome, Req, Request};

/// How a sweep's discovery ends ([`Sm::yield_after_discovery`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::core) enum DiscoveryEnd {
    /// This SM stood by: the sweep ends here, before it touches anything.
    Yielded,
    /// Not decided yet: the SM that handed this SM the subnet is read again first.
    Wait,
    /// The sweep goes on.
    Proceed,
}

impl Sm {
    /// The port GUID of the port a SubnSet(SMInfo) came from, as the fabric carried it. A
    /// directed-route SMP (`dr`) is walked back from this SM's port through the cables discovery
    /// found: out of each hop's ReturnPath port (written by the hop on the way in), last hop
    /// first, to the sender's port; through the subnet being swept, or, when that is still
    /// being discovered, the last sweep's snapshot. A route that starts LID-routed (DrSLID not
    /// permissive) is not followed. A LID-routed SMP names its sender by source LID: an SM this
    /// SM found or watches at that LID. `None` when the route or LID leads to no port this SM
    /// knows.
    pub(in crate::core) fn control_sender(&self, bytes: &[u8], dr: bool, slid: Lid) -> Option<Guid> {
        self.sender_of(&control_route(bytes, dr, slid)?)
    }

    /// The port GUID at `at` (see [`Sm::control_sender`]).
    fn sender_of(&self, at: &SenderAt) -> Option<Guid> {
        match at {
            SenderAt::Lid(lid) => self.election.sender_at(*lid),
            SenderAt::Exits(exits) if exits.is_empty() => Some(self.port_guid),
            SenderAt::Exits(exits) => self.walk_subnet(exits).or_else(|| self.walk_snapshot(exits)),
        }
    }

    /// The port at the end of `exits` (a port number to leave each node by, this SM's first)
    /// through the cables of the subnet being swept.
    fn walk_subnet(&self, exits: &[u8]) -> Option<Guid> {
        let (mut node, _) = self.subnet.local?;
        let mut at = None;
        for &exit in exits {
            let (next, port) = self.subnet.node(node)?.port(PortNum(exit))?.remote?;
            node = next;
            at = Some(port);
        }
        let n = self.subnet.node(node)?;
        if n.is_switch() { Some(n.info.port_guid) } else { n.port(at?)?.guid }
    }

    /// As [`Sm::walk_subnet`], through the cables of the last sweep's snapshot.
    fn walk_snapshot(&self, exits: &[u8]) -> Option<Guid> {
        let snap = self.sa.snapshot()?;
        let (mut node, _) = snap.by_guid(self.port_guid)?;
        let mut at = None;
        for &exit in exits {
            let (next, port) = snap.port((node, exit))?.remote?;
            node = next;
            at = Some(port);
        }
        let n = snap.node(node)?;
        if n.is_switch() { Some(n.info.port_guid) } else { Some(snap.port((node, at?))?.guid) }
    }

    fn me(&self) -> (u8, Guid) {
        (self.priority(), self.port_guid)
    }

    /// The priority this SM reports and elects with: the configured one, or the elevated one
    /// after it took the subnet over from a dead master (so that the old master, back, stands
    /// by instead of taking the subnet back).
    pub fn priority(&self) -> u8 {
        self.election.priority(self.cfg.priority, self.cfg.elevated_priority)
    }

    /// The master as this SM knows it: itself when master, the SM it watches when standby.
    /// (port GUID, LID, priority)
    pub fn master(&self) -> Option<(Guid, Lid, u8)> {
        match self.state {
            SmState::Master => Some((self.port_guid, self.subnet.local_lid(), self.priority())),
            SmState::Standby => self.election.master().map(|m| (m.info.guid, m.lid, m.info.priority & 0x0f)),
            _ => None,
        }
    }

    /// After a PortInfo answer in discovery: a port (not ours) with IsSM is asked for its
    /// SMInfo.
    pub(in crate::core) fn ask_if_sm(&mut self, node: NodeIdx, port: PortNum, pi: &PortInfo) {
        if !pi.capability_mask.contains(CapabilityMask::IS_SM) || self.subnet.local == Some((node, port)) {
            return;
        }
        let Some(n) = self.subnet.node(node) else { return };
        if n.is_switch() && port.0 != 0 {
            return;
        }
        // One retry only: a port may keep IsSM after its SM died (umad2sim does), and a dead
        // SM must not hold the sweep up for long.
        let req = Req::GetSmInfo { node, port, key: self.cfg.sm_key };
        self.tx.push_with_retries(Request::sweep(n.path_for(port), req), 1);
    }

    /// An SMInfo answer from an SM found in discovery (no answer: it is not counted; a port may
    /// keep IsSM after its SM died).
    pub(in crate::core) fn on_found_sm(&mut self, request: &Request, node: NodeIdx, port: PortNum, outcome: &Outcome) {
        let Outcome::Reply { status: 0, data } = outcome else { return };
        let Ok(info) = SmInfo::parse(data) else { return };
        let lid = self.subnet.node(node).and_then(|n| n.port(port)).and_then(|r| r.info).map_or(Lid(0), |i| i.lid);
        // An SM with another SM_Key (or one that hides its key from us) is not part of this
        // subnet's election, as the IBTA and OpenSM have it: no yielding to it, no handover.
        if !self.election.add_found(FoundSm { info, path: request.path, lid }, self.cfg.sm_key, self.port_guid) {
            self.events.push_back(SmEvent::ForeignSm { guid: info.guid, priority: info.priority & 0x0f });
        }
    }

    /// At the end of discovery: whether this SM yields to another (it is a standby then, and the
    /// sweep ends here), or first reads again the SM that handed it the subnet and still read as
    /// master. A master that finds a better standby hands over instead.
    pub(in crate::core) fn yield_after_discovery(&mut self) -> DiscoveryEnd {
        let decision = self.election.after_discovery(self.state, self.me(), self.now, self.cfg.sm_poll_interval_ns);
        let yield_to = match decision {
            AfterDiscovery::Yield(m) => Some(m),
            AfterDiscovery::HandOver(b) => {
                self.hand_over_when_synced(b);
                None
            }
            AfterDiscovery::Recheck(_) => {
                // The first read goes at once; the next ones when the election's timer says.
                self.election_timer();
                return DiscoveryEnd::Wait;
            }
            AfterDiscovery::Sweep => None,
        };
        let Some(target) = yield_to else { return DiscoveryEnd::Proceed };
        self.become_standby(target);
        DiscoveryEnd::Yielded
    }

    /// The SMInfo of the SM that handed this SM the subnet, read again at the end of
    /// discovery, came back (or did not: it is not counted, as in discovery).
    pub(in crate::core) fn on_sm_reread(&mut self, guid: Guid, outcome: &Outcome) {
        let info = match outcome {
            Outcome::Reply { status: 0, data } => SmInfo::parse(data).ok(),
            _ => None,
        };
        self.election.reread(guid, info, self.cfg.sm_key);
    }

    /// A light sweep's SMInfo read of another SM came back (or failed: it may be gone, which
    /// the next heavy sweep sees). Two masters: the worse one (this one) stands by, the better
    /// one nudges the other.
    pub(in crate::core) fn on_light_sm_info(&mut self, guid: Guid, outcome: &Outcome) {
        let info = match outcome {
            Outcome::Reply { status: 0, data } => SmInfo::parse(data).ok(),
            _ => None,
        };
        let found = self.election.found().iter().find(|f| f.info.guid == guid).copied();
        if let (Some(info), Some(f), SmState::Master) = (info, found, self.state)
            && info.sm_state == WireSmState::Master
            && info.sm_key == self.cfg.sm_key
        {
            // Its port's LID now (it may have had none when the heavy sweep found it).
            let lid =
                self.sa.snapshot().and_then(|s| s.by_guid(guid).and_then(|at| s.port(at))).map_or(f.lid, |p| p.lid);
            let other = FoundSm { info, lid, ..f };
            if better((info.priority & 0x0f, info.guid), (self.priority(), self.port_guid)) {
                // Two masters: the worse one (this one) stands by.
                self.light.stop();
                self.become_standby(other);
                return;
            }
            self.nudge(&other);
        }
        self.light_read_done();
    }

    /// Becomes a standby watching `master` (when it is not master yet, the first poll finds out
    /// and a sweep follows).
    pub(in crate::core) fn become_standby(&mut self, master: FoundSm) {
        self.state = SmState::Standby;
        self.replication.clear_peers();
        self.enter(SweepPhase::Up);
        self.schedule.stand_by();
        self.election.stand_by(master, self.now, self.cfg.sm_poll_interval_ns);
        self.events.push_back(SmEvent::Standby {
            master: master.info.guid,
            priority: master.info.priority,
            lid: master.lid,
        });
        // A HANDOVER from this master that came before this SM had found it: obeyed now that
        // the sweep found it master at the port the HANDOVER came from.
        if let Some((from, at)) = self.election.held_handover(master.info.guid, self.now)
            && self.sender_of(&at) == Some(from.guid)
        {
            self.on_sm_control(control::HANDOVER, &from, Some(from.guid));
            return;
        }
        if master.info.sm_state == WireSmState::Master {
            self.tell_master_if_better(&master);
        }
        self.prime_route();
    }

    /// A standby better than its master tells it with a trap 144 (SM priority changed), as
    /// OpenSM's standbys do: the master sweeps, finds this SM and hands the subnet over.
    pub(in crate::core) fn tell_master_if_better(&mut self, m: &FoundSm) {
        if better(self.me(), (m.info.priority & 0x0f, m.info.guid)) {
            self.nudge(m);
        }
    }

    /// Sends `m` a trap 144 (SM priority changed) from this SM's port: it sweeps and finds
    /// this SM. A standby tells its worse master so; a master tells a worse master that does
    /// not know of it (two masters).
    pub(in crate::core) fn nudge(&mut self, m: &FoundSm) {
        if m.lid == Lid(0) {
            return;
        }
        let Some((node, port)) = self.subnet.local else { return };
        let Some(info) = self.subnet.node(node).and_then(|n| n.port(port)).and_then(|r| r.info) else { return };
        let details = NoticeDetails::Trap144 {
            lid: info.lid,
            other_local_changes: false,
            capability_mask: info.capability_mask,
            capability_mask2_change: false,
            hierarchy_info_change: false,
            sm_priority_change: true,
            link_speed_enabled_change: false,
            link_width_enabled_change: false,
            node_description_change: false,
            capability_mask2: info.capability_mask2,
        };
        let Some(notice) = Notice::generic(NoticeType::Info, ProducerType::Ca, info.lid, details) else { return };
        // An SMP carries the Notice's first 64 bytes (no IssuerGID).
        let mut full = [0u8; 80];
        notice.emit(&mut full);
        let mut data = [0u8; SMP_DATA_LEN];
        data.copy_from_slice(&full[..SMP_DATA_LEN]);
        let smp = SmpRepr::set_lid(ids::attr::NOTICE, 0, 0x7e00_0000, data).with_method(Method::Trap);
        let to = Address { lid: m.lid, qpn: 0, qkey: 0, pkey_index: 0, sl: 0, grh: None };
        self.respond(smp.to_bytes().to_vec(), to);
    }

    /// Hands the subnet to the better standby `to` once it holds this master's state, so that
    /// it takes over with the groups, services and subscriptions: now if the state sync says it
    /// is current, else when it is (see [`Sm::sync_settled`]).
    fn hand_over_when_synced(&mut self, to: FoundSm) {
        if self.sync_needless(to.info.guid) {
            self.hand_over(to);
        } else {
            let deadline = self.now.saturating_add(HANDOVER_SYNC_WAIT_NS);
            self.election.hand_over_when_synced(to, deadline);
            self.sync_standby(to.info.guid, to.lid);
        }
    }

    /// The state sync of `guid` came to rest (current, or not possible): a handover waiting
    /// for it goes now.
    pub(in crate::core) fn sync_settled(&mut self, guid: Guid) {
        if self.state != SmState::Master {
            return;
        }
        if let Some(to) = self.election.sync_settled(guid) {
            self.hand_over(to);
        }
    }

    /// Sends HANDOVER to the better standby `to`. A change the SA answered but has not
    /// published yet (the answers of one batch of requests go out first) would reach no state
    /// sync once the standby has the HANDOVER: it is published now, and the handover waits for
    /// the standby to be current again.
    fn hand_over(&mut self, to: FoundSm) {
        if !self.after_answers.publish.is_empty() {
            self.flush_after_answers();
            if !self.sync_needless(to.info.guid) {
                let deadline = self.now.saturating_add(HANDOVER_SYNC_WAIT_NS);
                self.election.hand_over_when_synced(to, deadline);
                self.sync_standby(to.info.guid, to.lid);
                return;
            }
        }
        let info = self.sm_info(true);
        let req = Req::SetSmInfo { to: to.info.guid, control: control::HANDOVER, info };
        self.tx.push(Request { path: to.path, req, op: Op::Election });
        self.election.handing_over(to);
    }

    /// Timer work of the election: a standby's poll, or its re-sweep when the SM it yielded to
    /// was not master yet; a master's handover or re-check sweep; discovery's read again of
    /// the SM that handed over.
    pub(in crate::core) fn election_timer(&mut self) {
        let work = self.election.timer(self.state, self.now, self.cfg.sm_poll_interval_ns);
        // A handover waits for the state sync this long at most.
        if let Some(to) = work.hand_over {
            self.hand_over(to);
        }
        if work.sweep {
            self.sweep_soon();
        }
        // Discovery's end waits for it: the sweep's own request.
        if let Some(x) = work.reread {
            let req = Req::RereadSmInfo { guid: x.info.guid, key: self.cfg.sm_key };
            self.tx.push_with_retries(Request::sweep(x.path, req), 1);
        }
        let Some(m) = work.poll else { return };
        // The poll carries this SM's SMInfo (key included): the master learns of its standby.
        let req = Req::PollMaster { master: m.info.guid, info: self.sm_info(true) };
        self.tx.push_with_retries(Request { path: m.path, req, op: Op::Election }, 0);
        // Its state sync is taken only from its LID: found before it had one, it is read.
        if m.lid == Lid::UNASSIGNED {
            let req = Req::MasterLid { master: m.info.guid };
            self.tx.push_with_retries(Request { path: m.path, req, op: Op::Election }, 0);
        }
    }

    /// The PortInfo of the watched master's port: its LID, for the state sync's sender check.
    pub(in crate::core) fn on_master_lid(&mut self, master: Guid, outcome: &Outcome) {
        if let Outcome::Reply { status: 0, data } = outcome
            && let Ok(pi) = PortInfo::parse(data)
            && self.state == SmState::Standby
        {
            self.election.learn_master_lid(master, pi.lid);
        }
    }

    /// A poll's outcome.
    pub(in crate::core) fn on_poll(&mut self, outcome: &Outcome) {
        if self.state != SmState::Standby {
            return;
        }
        let answer = match outcome {
            Outcome::Reply { status: 0, data } => SmInfo::parse(data).ok(),
            _ => None,
        };
        let rules = PollRules {
            interval_ns: self.cfg.sm_poll_interval_ns,
            retries: self.cfg.sm_poll_retries,
            act_stall_ns: self.cfg.sm_act_stall_ns,
        };
        if let Some((master, reason)) = self.election.on_poll(answer.as_ref(), self.now, rules) {
            self.take_over(master, reason);
        }
    }

    /// The master is gone (or gave up): sweep and become master (the sweep's discovery finds
    /// a better SM first if there is one).
    fn take_over(&mut self, old: Guid, reason: &'static str) {
        self.events.push_back(SmEvent::MasterLost { master: old, reason });
        self.election.took_over(old, reason);
        self.routing.took_over();
        self.programming.forget_read();
        self.adopt_replica(old, reason == HANDED_OVER);
        self.state = SmState::Discovering;
        self.start_sweep(self.now);
    }

    /// The answer to our HANDOVER: accepted, this SM is a standby of the new master.
    pub(in crate::core) fn on_handover_sent(&mut self, to: Guid, outcome: &Outcome) {
        let accepted = matches!(outcome, Outcome::Reply { status: 0, .. });
        if let Some(master) = self.election.handover_answered(to, accepted) {
            self.events.push_back(SmEvent::HandedOver { to });
            // The ports the babbling-port policy disabled are the new master's to enable (it
            // synced them before the handover); this SM holds what it syncs from it.
            self.babbling.adopt(&[]);
            self.become_standby(master);
        }
    }

    /// SubnSet(SMInfo) from another SM: whether the control is obeyed (the caller answers with
    /// this SM's SMInfo, or status 0x001C).
    pub(in crate::core) fn on_sm_control(&mut self, control: u32, from: &SmInfo, sender: Option<Guid>) -> bool {
        let ok = self.election.admits(control, from, sender, self.state, self.cfg.sm_key);
        self.events.push_back(SmEvent::SmControl { control, from: from.guid, accepted: ok });
        if !ok {
            return false;
        }
        match control {
            control::HANDOVER => {
                // The master stood by, or (still discovering) the one the sweep found.
                let old = self
                    .election
                    .master()
                    .or_else(|| self.election.found().iter().find(|f| f.info.guid == from.guid).copied());
                self.take_over(from.guid, HANDED_OVER);
                // Acknowledged to the SM that handed over, along the route it was polled at.
                if let Some(old) = old {
                    let req =
                        Req::SetSmInfo { to: old.info.guid, control: control::ACKNOWLEDGE, info: self.sm_info(true) };
                    self.tx.push(Request { path: old.path, req, op: Op::Election });
                }
            }
            control::ACKNOWLEDGE => self.election.acknowledged(),
            control::DISABLE => {
                self.election.disable();
                self.state = SmState::NotActive;
            }
            control::STANDBY if self.state != SmState::Standby => {
                if let Some(master) = self.election.found().iter().find(|f| f.info.guid == from.guid).copied() {
                    self.become_standby(FoundSm { info: *from, ..master });
                }
            }
            control::DISCOVER => {
                self.election.enable();
                self.state = SmState::Discovering;
                self.start_sweep(self.now);
            }
            _ => {}
        }
        true
    }

    /// The SMInfo this SM reports: its port GUID, priority, state and activity count. The SM_Key
    /// is returned only to a requester that sent the right one.
    pub fn sm_info(&self, proven_key: bool) -> SmInfo {
        let sm_state = match self.state {
            SmState::NotActive => WireSmState::NotActive,
            SmState::Discovering => WireSmState::Discovering,
            SmState::Standby => WireSmState::Standby,
            SmState::Master => WireSmState::Master,
        };
        SmInfo {
            guid: self.port_guid(),
            sm_key: if proven_key { self.cfg.sm_key } else { 0 },
            act_count: self.act_count(),
            priority: self.priority(),
            sm_state,
        }
    }

    /// ActCount: rises with every SMP this SM sends and every SMInfo query it answers.
    fn act_count(&self) -> u32 {
        (self.tx.counters.sent as u32).wrapping_add(self.counters.sm_info_answered as u32)
    }

    /// SubnSet(SMInfo): obeyed or refused (status 0x001C) by the election's rules; the answer
    /// carries this SM's SMInfo as it is after the control.
    pub(in crate::core) fn answer_sm_control(&mut self, h: &MadHeader, bytes: &[u8], src: &MadSource) {
        let from = bytes.get(SMP_DATA..SMP_DATA + SMP_DATA_LEN).and_then(|d| SmInfo::parse(d).ok());
        let sender = self.control_sender(bytes, h.mgmt_class == MgmtClass::SubnDr, src.slid);
        let obeyed = from.is_some_and(|f| self.on_sm_control(h.attr_mod, &f, sender));
        let dr = h.mgmt_class == MgmtClass::SubnDr;
        if !obeyed
            && h.attr_mod == control::HANDOVER
            && self.state == SmState::Discovering
            && let Some(f) = from.filter(|f| f.sm_key == self.cfg.sm_key)
            && let Some(at) = control_route(bytes, dr, src.slid)
        {
            self.election.hold_handover(f, at, self.now.saturating_add(HELD_HANDOVER_NS));
        }
        let mut data = [0u8; SMP_DATA_LEN];
        self.sm_info(obeyed).emit(&mut data);
        let st = if obeyed { status::OK } else { status::BAD_FIELD };
        if let Some(reply) = response_to(bytes, st, Some(&data)) {
            self.respond(reply, reply_to(h, src));
        }
    }

    pub(in crate::core) fn answer_sm_info(&mut self, h: &MadHeader, bytes: &[u8], src: &MadSource) {
        let asked = bytes.get(SMP_DATA..SMP_DATA + SMP_DATA_LEN).and_then(|d| SmInfo::parse(d).ok());
        let asked_key = asked.map(|i| i.sm_key);
        // The SM_Key goes to a requester that presents it, or (as the IBTA and OpenSM have it)
        // one that passes this port's M_Key check: anyone while the port has no M_Key
        // protection, only holders of the port's M_Key once it has. OpenSM ignores an SM whose
        // SMInfo shows another key than its own, so a pair with the same key needs this.
        let smp_mkey = (bytes.len() >= 32).then(|| ibsm_mad::smp::Smp::new_unchecked(bytes).m_key());
        let mkey_ok = smp_mkey.is_some_and(|k| self.mkeys.passes_own(&self.cfg.m_key, self.port_guid, k));
        // At protect levels 2 and 3 a Get that fails the port's M_Key check gets no answer at
        // all, as an SMA drops it (an answer, even with the key hidden, tells a prober that an
        // SM is there and which one).
        if !mkey_ok && self.cfg.m_key.protect >= 2 {
            return;
        }
        let proven = asked_key == Some(self.cfg.sm_key) || mkey_ok;
        // A master counts the query as activity (a standby's poll sees the count rise).
        if self.state == SmState::Master {
            self.counters.sm_info_answered += 1;
        }
        // A standby that polls with our SM_Key (ibsm's standbys send their own SMInfo) is
        // kept in sync from now on, found by a sweep or not.
        if let Some(standby) = asked.filter(|i| i.sm_key == self.cfg.sm_key && i.sm_state == WireSmState::Standby) {
            self.standby_seen(standby.guid);
        }
        let mut data = [0u8; SMP_DATA_LEN];
        self.sm_info(proven).emit(&mut data);
        if let Some(reply) = response_to(bytes, status::OK, Some(&data)) {
            self.respond(reply, reply_to(h, src));
        }
        self.events.push_back(SmEvent::SmInfoAnswered { from: src.slid, phase: self.phase });
    }
}

/// Where a SubnSet(SMInfo) came from (see [`Sm::control_sender`]): its source LID, or its
/// directed route's return path. `None` for a route that starts LID-routed.
fn control_route(bytes: &[u8], dr: bool, slid: Lid) -> Option<SenderAt> {
    if !dr {
        return Some(SenderAt::Lid(slid));
    }
    let smp = ibsm_mad::smp::DrSmp::new_checked(bytes).ok()?;
    if smp.dr_slid() != Lid::PERMISSIVE {
        return None;
    }
    let hops = smp.hop_count();
    (1..=hops).rev().map(|i| smp.return_path_port(i)).collect::<Option<_>>().map(SenderAt::Exits)
}
