//! Master and standby: the SMs a sweep finds, the election, a standby's watch over the master,
//! and the SMInfo controls (HANDOVER, ACKNOWLEDGE, DISABLE, STANDBY, DISCOVER).
//!
//! Owns: the other SMs this sweep found (every port with PortInfo.CapabilityMask.IsSM is asked
//! for its SMInfo), the master a standby watches (its port GUID and the directed route to it),
//! the poll schedule and the count of missed or stalled polls, and the standby this SM handed
//! the subnet to. The rules:
//! - Better means a higher priority, then a lower port GUID. An SM whose SMInfo shows another
//!   SM_Key than this SM's (or hides it) takes no part: it is reported and ignored.
//! - At the end of discovery, a sweep that found a master other than itself (and is not master
//!   yet), or any better SM that is master, standby or discovering, makes this SM a standby: it
//!   stops the sweep there, before touching anything, and watches the master (or, when the
//!   better SM is not master yet, re-sweeps after the poll interval to find it master).
//! - A master that finds a better standby hands over (SubnSet(SMInfo) HANDOVER with its
//!   SM_Key) and becomes a standby when the standby accepts; the standby, master now,
//!   acknowledges (SubnSet(SMInfo) ACKNOWLEDGE) to the SM that handed over. A standby better than its master
//!   tells it with a trap 144 (SM priority changed), which makes the master sweep; a master
//!   that finds a better SM still discovering sweeps again a poll interval later.
//! - A standby polls the master's SMInfo every `sm-poll-interval`, one try each; after
//!   `sm-poll-retries` polls in a row without an answer, when the master's ActCount stays the
//!   same for longer than `sm-act-stall` (OpenSM raises it once per sweep), or when the master
//!   says it is no longer master, it sweeps and becomes master. Its discovery reads the
//!   LIDs the ports hold, so nothing is renumbered; its LFT programming reads the switches'
//!   blocks back first and writes only those that differ.
//! - Controls are obeyed only with the right SM_Key: HANDOVER, DISABLE and STANDBY only from the
//!   master this SM knows (or, for STANDBY, from a master when it knows none), ACKNOWLEDGE only
//!   from the standby it handed over to, DISCOVER only from the master and while disabled. "From"
//!   is where the fabric carried the control from, not the GUID in its payload: the port at the
//!   end of its directed route walked back through the cables discovery found, or the SM found
//!   at its source LID, must be the port whose GUID the payload names ([`Sm::control_sender`]).
//!   Anything else is answered with status 0x001C (invalid attribute value) and reported.

use ibsm_mad::attrs::{
    CapabilityMask, Notice, NoticeDetails, NoticeType, PortInfo, ProducerType, SmInfo, SmState as WireSmState,
};
use ibsm_mad::header::Method;
use ibsm_mad::smp::{SMP_DATA_LEN, SmpRepr};
use ibsm_mad::{Attribute, DrPath, Guid, Lid, PortNum, ids};

use super::io::Address;

use super::Sm;
use super::events::SmEvent;
use super::state::{NodeIdx, SmState, SweepPhase};
use super::transactions::{Op, Outcome, Req, Request};

/// SMInfo control codes (the AttributeModifier of SubnSet(SMInfo)).
pub mod control {
    /// The master gives the subnet to a standby.
    pub const HANDOVER: u32 = 1;
    /// The new master confirms a handover.
    pub const ACKNOWLEDGE: u32 = 2;
    /// Stop being an SM until DISCOVER.
    pub const DISABLE: u32 = 3;
    /// Become a standby.
    pub const STANDBY: u32 = 4;
    /// Leave NOTACTIVE and discover the subnet.
    pub const DISCOVER: u32 = 5;

    /// The control's name for logs.
    pub const fn name(c: u32) -> &'static str {
        match c {
            HANDOVER => "HANDOVER",
            ACKNOWLEDGE => "ACKNOWLEDGE",
            DISABLE => "DISABLE",
            STANDBY => "STANDBY",
            DISCOVER => "DISCOVER",
            _ => "unknown",
        }
    }
}

/// Another SM found by a sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FoundSm {
    /// Its SMInfo (GUID, priority, state, ActCount).
    pub info: SmInfo,
    /// The directed route to its port.
    pub path: DrPath,
    /// Its port's LID as the port holds it.
    pub lid: Lid,
}

/// The election state.
#[derive(Debug, Clone, Default)]
pub struct Election {
    /// Times this SM took the subnet over (its master died, or handed over).
    pub takeovers: u64,
    /// SMs found by the running (or last) sweep.
    pub found: Vec<FoundSm>,
    /// The master a standby watches.
    pub master: Option<FoundSm>,
    /// Polls in a row that went unanswered.
    pub misses: u32,
    /// The master's ActCount and since when it has shown it.
    pub last_act: Option<(u32, u64)>,
    /// When the next poll (or, waiting for a better SM to become master, the next sweep) is due.
    pub poll_at: Option<u64>,
    /// The standby this SM handed the subnet to (expects its ACKNOWLEDGE), as found when the
    /// HANDOVER went out: the sweep that follows may forget it from `found`.
    pub handed_to: Option<FoundSm>,
    /// DISABLE received: no sweeping, no polling until DISCOVER.
    pub disabled: bool,
    /// This SM took the subnet over from a dead master: it reports `elevated-priority`.
    pub elevated: bool,
    /// A master that found a better SM still discovering sweeps again then, to hand over.
    pub recheck_at: Option<u64>,
    /// The better standby this master hands over to once the state sync has made it current
    /// (or has found it cannot: an SM that is not ibsm, or silent), and when it hands over
    /// regardless.
    pub handover_when_synced: Option<(FoundSm, u64)>,
}

/// Longest a master waits for a better standby's state sync before it hands over anyway, ns.
const HANDOVER_SYNC_WAIT_NS: u64 = 2_000_000_000;

/// The reason a standby takes over after a HANDOVER.
const HANDED_OVER: &str = "it handed the subnet over";

/// Whether `a` is a better SM than `b`: higher priority, then lower GUID.
pub fn better(a: (u8, Guid), b: (u8, Guid)) -> bool {
    a.0 > b.0 || (a.0 == b.0 && a.1 < b.1)
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
    pub(super) fn control_sender(&self, bytes: &[u8], dr: bool, slid: Lid) -> Option<Guid> {
        if !dr {
            return self
                .election
                .master
                .iter()
                .chain(&self.election.found)
                .find(|f| f.lid == slid && slid != Lid::UNASSIGNED)
                .map(|f| f.info.guid);
        }
        let smp = ibsm_mad::smp::DrSmp::new_checked(bytes).ok()?;
        if smp.dr_slid() != Lid::PERMISSIVE {
            return None;
        }
        let hops = smp.hop_count();
        if hops == 0 {
            return Some(self.port_guid);
        }
        let exits: Vec<u8> = (1..=hops).rev().map(|i| smp.return_path_port(i)).collect::<Option<_>>()?;
        self.walk_subnet(&exits).or_else(|| self.walk_snapshot(&exits))
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
        let snap = self.snapshot.as_ref()?;
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
        let base = self.cfg.priority & 0x0f;
        match self.cfg.elevated_priority {
            Some(e) if self.election.elevated => base.max(e & 0x0f),
            _ => base,
        }
    }

    /// The master as this SM knows it: itself when master, the SM it watches when standby.
    /// (port GUID, LID, priority)
    pub fn master(&self) -> Option<(Guid, Lid, u8)> {
        match self.state {
            SmState::Master => Some((self.port_guid, self.subnet.local_lid(), self.priority())),
            SmState::Standby => self.election.master.map(|m| (m.info.guid, m.lid, m.info.priority & 0x0f)),
            _ => None,
        }
    }

    /// After a PortInfo answer in discovery: a port (not ours) with IsSM is asked for its
    /// SMInfo.
    pub(super) fn ask_if_sm(&mut self, node: NodeIdx, port: PortNum, pi: &PortInfo) {
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
    pub(super) fn on_found_sm(&mut self, request: &Request, node: NodeIdx, port: PortNum, outcome: &Outcome) {
        let Outcome::Reply { status: 0, data } = outcome else { return };
        let Ok(info) = SmInfo::parse(data) else { return };
        if info.guid == self.port_guid {
            return;
        }
        // An SM with another SM_Key (or one that hides its key from us) is not part of this
        // subnet's election, as the IBTA and OpenSM have it: no yielding to it, no handover.
        if self.cfg.sm_key != 0 && info.sm_key != self.cfg.sm_key {
            self.events.push_back(SmEvent::ForeignSm { guid: info.guid, priority: info.priority & 0x0f });
            return;
        }
        let lid = self.subnet.node(node).and_then(|n| n.port(port)).and_then(|r| r.info).map_or(Lid(0), |i| i.lid);
        self.election.found.retain(|f| f.info.guid != info.guid);
        self.election.found.push(FoundSm { info, path: request.path, lid });
    }

    /// At the end of discovery: whether this SM yields to another (it is a standby then, and the
    /// sweep ends here). A master that finds a better standby hands over instead.
    pub(super) fn yield_after_discovery(&mut self) -> bool {
        let me = self.me();
        let active = |f: &&FoundSm| {
            matches!(f.info.sm_state, WireSmState::Master | WireSmState::Standby | WireSmState::Discovering)
        };
        let key = |f: &FoundSm| (f.info.priority & 0x0f, f.info.guid);
        let other_master = self.election.found.iter().find(|f| f.info.sm_state == WireSmState::Master).copied();
        let better_one =
            self.election.found.iter().filter(active).filter(|f| better(key(f), me)).copied().min_by(|a, b| {
                if better(key(a), key(b)) { std::cmp::Ordering::Less } else { std::cmp::Ordering::Greater }
            });
        let yield_to = match (self.state, other_master, better_one) {
            // Not master yet: an existing master keeps the subnet (it hands over if we are
            // better); else the best SM that is better than us.
            (SmState::NotActive | SmState::Discovering | SmState::Standby, Some(m), _) => Some(m),
            (SmState::NotActive | SmState::Discovering | SmState::Standby, None, b) => b,
            // Master: only to a better master (two masters: the worse steps down).
            (SmState::Master, Some(m), _) if better(key(&m), me) => Some(m),
            (SmState::Master, _, Some(b)) if b.info.sm_state == WireSmState::Standby => {
                self.hand_over_when_synced(b);
                None
            }
            // A better SM still discovering: it will stand by when it finds this master; sweep
            // again soon to hand over to it then.
            (SmState::Master, _, Some(_)) => {
                self.election.recheck_at = Some(self.now.saturating_add(self.cfg.sm_poll_interval_ns.max(1)));
                None
            }
            _ => None,
        };
        let Some(target) = yield_to else { return false };
        self.become_standby(target);
        true
    }

    /// A light sweep's SMInfo read of another SM came back (or failed: it may be gone, which
    /// the next heavy sweep sees). Two masters: the worse one (this one) stands by, the better
    /// one nudges the other.
    pub(super) fn on_light_sm_info(&mut self, guid: Guid, outcome: &Outcome) {
        let info = match outcome {
            Outcome::Reply { status: 0, data } => SmInfo::parse(data).ok(),
            _ => None,
        };
        let found = self.election.found.iter().find(|f| f.info.guid == guid).copied();
        if let (Some(info), Some(f), SmState::Master) = (info, found, self.state)
            && info.sm_state == WireSmState::Master
            && info.sm_key == self.cfg.sm_key
        {
            // Its port's LID now (it may have had none when the heavy sweep found it).
            let lid =
                self.snapshot.as_ref().and_then(|s| s.by_guid(guid).and_then(|at| s.port(at))).map_or(f.lid, |p| p.lid);
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
    pub(super) fn become_standby(&mut self, master: FoundSm) {
        self.state = SmState::Standby;
        self.sync_out.clear_peers();
        self.election.handover_when_synced = None;
        self.enter(SweepPhase::Up);
        self.schedule.stand_by();
        self.election.master = Some(master);
        self.election.misses = 0;
        self.election.last_act = None;
        self.election.poll_at = Some(self.now.saturating_add(self.cfg.sm_poll_interval_ns));
        self.events.push_back(SmEvent::Standby {
            master: master.info.guid,
            priority: master.info.priority,
            lid: master.lid,
        });
        if master.info.sm_state == WireSmState::Master {
            self.tell_master_if_better(&master);
        }
    }

    /// A standby better than its master tells it with a trap 144 (SM priority changed), as
    /// OpenSM's standbys do: the master sweeps, finds this SM and hands the subnet over.
    pub(super) fn tell_master_if_better(&mut self, m: &FoundSm) {
        if better(self.me(), (m.info.priority & 0x0f, m.info.guid)) {
            self.nudge(m);
        }
    }

    /// Sends `m` a trap 144 (SM priority changed) from this SM's port: it sweeps and finds
    /// this SM. A standby tells its worse master so; a master tells a worse master that does
    /// not know of it (two masters).
    pub(super) fn nudge(&mut self, m: &FoundSm) {
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
            self.election.handover_when_synced = Some((to, deadline));
            self.sync_standby(to.info.guid, to.lid);
        }
    }

    /// The state sync of `guid` came to rest (current, or not possible): a handover waiting
    /// for it goes now.
    pub(super) fn sync_settled(&mut self, guid: Guid) {
        if self.state != SmState::Master {
            return;
        }
        if let Some((to, _)) = self.election.handover_when_synced.take_if(|t| t.0.info.guid == guid) {
            self.hand_over(to);
        }
    }

    /// Sends HANDOVER to the better standby `to`.
    fn hand_over(&mut self, to: FoundSm) {
        let info = self.sm_info(true);
        let req = Req::SetSmInfo { to: to.info.guid, control: control::HANDOVER, info };
        self.tx.push(Request { path: to.path, req, op: Op::Election });
        self.election.handed_to = Some(to);
    }

    /// Timer work of the election: a standby's poll, or its re-sweep when the SM it yielded to
    /// was not master yet.
    pub(super) fn election_timer(&mut self) {
        // A handover waits for the state sync this long at most.
        if self.state == SmState::Master
            && let Some((to, _)) = self.election.handover_when_synced.take_if(|(_, t)| *t <= self.now)
        {
            self.hand_over(to);
        }
        if self.state == SmState::Master && self.election.recheck_at.is_some_and(|t| t <= self.now) {
            self.election.recheck_at = None;
            self.sweep_soon();
        }
        if self.state != SmState::Standby || self.election.disabled {
            return;
        }
        if self.election.poll_at.is_none_or(|t| t > self.now) {
            return;
        }
        self.election.poll_at = None;
        let Some(m) = self.election.master else { return };
        // The poll carries this SM's SMInfo (key included): the master learns of its standby.
        let req = Req::PollMaster { master: m.info.guid, info: self.sm_info(true) };
        self.tx.push_with_retries(Request { path: m.path, req, op: Op::Election }, 0);
    }

    /// A poll's outcome.
    pub(super) fn on_poll(&mut self, outcome: &Outcome) {
        if self.state != SmState::Standby {
            return;
        }
        let Some(m) = self.election.master else { return };
        let answer = match outcome {
            Outcome::Reply { status: 0, data } => SmInfo::parse(data).ok(),
            _ => None,
        };
        match answer {
            Some(info) if info.sm_state != WireSmState::Master => {
                return self.take_over(m.info.guid, "the SM watched is not master");
            }
            Some(info) => {
                self.election.misses = 0;
                match self.election.last_act {
                    // The same count for too long: alive but not working (OpenSM raises it
                    // once per sweep, so the bound is longer than its sweep interval).
                    Some((act, since)) if act == info.act_count => {
                        if self.now.saturating_sub(since) > self.cfg.sm_act_stall_ns {
                            return self.take_over(m.info.guid, "its ActCount stalled");
                        }
                    }
                    _ => self.election.last_act = Some((info.act_count, self.now)),
                }
            }
            None => {
                self.election.misses += 1;
                if self.election.misses >= self.cfg.sm_poll_retries.max(1) {
                    return self.take_over(m.info.guid, "it stopped answering");
                }
            }
        }
        self.election.poll_at = Some(self.now.saturating_add(self.cfg.sm_poll_interval_ns));
    }

    /// The master is gone (or gave up): sweep and become master (the sweep's discovery finds
    /// a better SM first if there is one).
    fn take_over(&mut self, old: Guid, reason: &'static str) {
        self.events.push_back(SmEvent::MasterLost { master: old, reason });
        self.election.takeovers += 1;
        // A master that died is not given the subnet back when it returns (elevated-priority);
        // one that handed over is (it asked for it).
        self.election.elevated = reason != HANDED_OVER;
        self.election.master = None;
        self.election.poll_at = None;
        self.adopt_replica(old);
        self.state = SmState::Discovering;
        self.start_sweep(self.now);
    }

    /// The answer to our HANDOVER: accepted, this SM is a standby of the new master.
    pub(super) fn on_handover_sent(&mut self, to: Guid, outcome: &Outcome) {
        let Outcome::Reply { status: 0, .. } = outcome else {
            self.election.handed_to = None;
            return;
        };
        // The standby as found when the HANDOVER went out: a sweep started since (a trap, the
        // state sync) may have emptied `found`, and the standby is master now all the same.
        let target = self.election.handed_to.filter(|t| t.info.guid == to);
        if let Some(target) = target.or_else(|| self.election.found.iter().find(|f| f.info.guid == to).copied()) {
            self.events.push_back(SmEvent::HandedOver { to });
            self.become_standby(FoundSm { info: SmInfo { sm_state: WireSmState::Master, ..target.info }, ..target });
        }
    }

    /// SubnSet(SMInfo) from another SM: whether the control is obeyed (the caller answers with
    /// this SM's SMInfo, or status 0x001C).
    pub(super) fn on_sm_control(&mut self, control: u32, from: &SmInfo, sender: Option<Guid>) -> bool {
        // The right key, from the port the payload names (a third host that knows the key and
        // writes the master's GUID is refused).
        let key_ok = from.sm_key == self.cfg.sm_key && sender == Some(from.guid);
        let from_master = self.election.master.is_some_and(|m| m.info.guid == from.guid);
        let ok = key_ok
            && match control {
                control::HANDOVER => self.state == SmState::Standby && from_master,
                control::ACKNOWLEDGE => self.election.handed_to.is_some_and(|t| t.info.guid == from.guid),
                control::DISABLE => from_master,
                control::STANDBY => {
                    from_master
                        || (self.election.master.is_none()
                            && from.sm_state == WireSmState::Master
                            && self.election.found.iter().any(|f| f.info.guid == from.guid))
                }
                control::DISCOVER => self.election.disabled && from_master,
                _ => false,
            };
        self.events.push_back(SmEvent::SmControl { control, from: from.guid, accepted: ok });
        if !ok {
            return false;
        }
        match control {
            control::HANDOVER => {
                let old = self.election.master;
                self.take_over(from.guid, HANDED_OVER);
                // Acknowledged to the SM that handed over, along the route it was polled at.
                if let Some(old) = old {
                    let req =
                        Req::SetSmInfo { to: old.info.guid, control: control::ACKNOWLEDGE, info: self.sm_info(true) };
                    self.tx.push(Request { path: old.path, req, op: Op::Election });
                }
            }
            control::ACKNOWLEDGE => self.election.handed_to = None,
            control::DISABLE => {
                self.election.disabled = true;
                self.election.poll_at = None;
                self.state = SmState::NotActive;
            }
            control::STANDBY if self.state != SmState::Standby => {
                if let Some(master) = self.election.found.iter().find(|f| f.info.guid == from.guid).copied() {
                    self.become_standby(FoundSm { info: *from, ..master });
                }
            }
            control::DISCOVER => {
                self.election.disabled = false;
                self.state = SmState::Discovering;
                self.start_sweep(self.now);
            }
            _ => {}
        }
        true
    }
}
