//! Master and standby: the SMs a sweep finds, the election, a standby's watch over the master,
//! and the SMInfo controls (HANDOVER, ACKNOWLEDGE, DISABLE, STANDBY, DISCOVER).
//!
//! [`Election`] owns: the other SMs this sweep found (every port with
//! PortInfo.CapabilityMask.IsSM is asked for its SMInfo), the master a standby watches (its port
//! GUID and the directed route to it), the poll schedule and the count of missed or stalled
//! polls, the standby this SM hands or handed the subnet to, the SM that handed the subnet to
//! this SM (until its discovery sees it step down), whether it is disabled and whether it took
//! over (elevated priority). It takes SMInfo records, this SM's state and priority and
//! the time, and answers with decisions ([`AfterDiscovery`], [`TimerWork`], a takeover's reason,
//! whether a control is obeyed); the coordinator (`mastership.rs`) sends the SMPs and changes
//! the SM's state. It reads no subnet and sends nothing. The rules:
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
//! - An SM that obeyed HANDOVER from X does not stand by for X's SMInfo saying MASTER in the
//!   discovery that follows: X steps down once it has handed over (OpenSM right after sending
//!   the HANDOVER, ibsm when its answer is back), and a read made before that is stale. The
//!   discovery ends by reading X again ([`AfterDiscovery::Recheck`]): at once, then every
//!   [`REREAD_SPACING_NS`], for at most [`STEP_DOWN_NS`]; X no longer master (or silent), the
//!   sweep goes on; X still master then, this SM stands by as before (and nudges X, which
//!   hands over again). Another master found beside X is obeyed as ever.
//! - A standby polls the master's SMInfo every `sm-poll-interval`, one try each; after
//!   `sm-poll-retries` polls in a row without an answer, when the master's ActCount stays the
//!   same for longer than `sm-act-stall` (OpenSM raises it once per sweep), or when the master
//!   says it is no longer master, it sweeps and becomes master. Its discovery reads the
//!   LIDs the ports hold, so nothing is renumbered; its LFT programming reads the switches'
//!   blocks back first and writes only those that differ.
//! - Controls are obeyed only with the right SM_Key: HANDOVER, DISABLE and STANDBY only from the
//!   master this SM knows (or, for STANDBY, when it knows none, from an SM its sweep found
//!   master: a standby that writes "master" in its payload is refused; and for HANDOVER, while
//!   this SM is still discovering, from an SM its sweep found master: a master that finds this
//!   SM better may hand over before this SM has stood by, as OpenSM does when it reads this
//!   SM's SMInfo in its own sweep), ACKNOWLEDGE only
//!   from the standby it handed over to, DISCOVER only from the master and while disabled. "From"
//!   is where the fabric carried the control from, not the GUID in its payload (the coordinator
//!   finds the sender's port and passes it in): it must be the port whose GUID the payload names.
//!   Anything else is answered with status 0x001C (invalid attribute value) and reported.
//!   A LID-routed control names its sender by its source LID ([`Election::sender_at`]): the
//!   LID the SM's port held when a sweep found it. An SM found before it had a LID (SMs started
//!   together) is named by no LID-routed control until a sweep finds it again: refused, not
//!   misattributed.

use ibsm_mad::attrs::{SmInfo, SmState as WireSmState};
use ibsm_mad::{DrPath, Guid, Lid};

use super::state::SmState;

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
    takeovers: u64,
    /// SMs found by the running (or last) sweep.
    found: Vec<FoundSm>,
    /// The master a standby watches.
    master: Option<FoundSm>,
    /// Polls in a row that went unanswered.
    misses: u32,
    /// The master's ActCount and since when it has shown it.
    last_act: Option<(u32, u64)>,
    /// When the next poll (or, waiting for a better SM to become master, the next sweep) is due.
    poll_at: Option<u64>,
    /// The standby this SM handed the subnet to (expects its ACKNOWLEDGE), as found when the
    /// HANDOVER went out: the sweep that follows may forget it from `found`.
    handed_to: Option<FoundSm>,
    /// DISABLE received: no sweeping, no polling until DISCOVER.
    disabled: bool,
    /// This SM took the subnet over from a dead master: it reports `elevated-priority`.
    elevated: bool,
    /// A master that found a better SM still discovering sweeps again then, to hand over.
    recheck_at: Option<u64>,
    /// The better standby this master hands over to once the state sync has made it current
    /// (or has found it cannot: an SM that is not ibsm, or silent), and when it hands over
    /// regardless.
    handover_when_synced: Option<(FoundSm, u64)>,
    /// A HANDOVER with the right SM_Key that came while this SM was still discovering, from an
    /// SM its sweep had not found yet: where it came from and until when it may be obeyed
    /// (once the sweep finds that SM master at that port, see [`Election::held_handover`]).
    held_handover: Option<(SmInfo, SenderAt, u64)>,
    /// The SM whose HANDOVER this SM obeyed, until the discovery that follows ends: its
    /// MASTER SMInfo is read again before this SM stands by for it.
    handed_by: Option<HandedBy>,
}

/// The SM that handed this SM the subnet, while the discovery that follows waits for it to
/// step down ([`Election::after_discovery`]).
#[derive(Debug, Clone, Copy)]
struct HandedBy {
    /// Its port GUID.
    guid: Guid,
    /// Until when its MASTER SMInfo is taken as stale: set by the first re-read.
    until: Option<u64>,
    /// When it is read again (`None` while a read is on its way, or before the first).
    reread_at: Option<u64>,
}

/// Where a control came from, to be named once discovery knows the fabric: its source LID, or
/// the exits of its directed route's return path (this SM's first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SenderAt {
    /// LID-routed: the SM at this LID.
    Lid(Lid),
    /// Directed route: out of each port, this SM's node first (empty: this SM's own port).
    Exits(Vec<u8>),
}

/// How long a HANDOVER that came while this SM discovered stays valid, ns: about one sweep.
pub(super) const HELD_HANDOVER_NS: u64 = 2_000_000_000;

/// Longest a master waits for a better standby's state sync before it hands over anyway, ns.
pub(super) const HANDOVER_SYNC_WAIT_NS: u64 = 2_000_000_000;

/// The reason a standby takes over after a HANDOVER.
pub(super) const HANDED_OVER: &str = "it handed the subnet over";

/// Longest an SM that handed this SM the subnet may still read as master, ns, from the first
/// read again: OpenSM steps down as it sends the HANDOVER, ibsm once the answer is back (its
/// retries of a HANDOVER whose answer was lost take 800 ms with the default SMP timeout).
pub const STEP_DOWN_NS: u64 = 1_000_000_000;

/// Between two reads of an SM that handed over and still reads as master, ns.
pub const REREAD_SPACING_NS: u64 = 10_000_000;

/// Whether `a` is a better SM than `b`: higher priority, then lower GUID.
pub fn better(a: (u8, Guid), b: (u8, Guid)) -> bool {
    a.0 > b.0 || (a.0 == b.0 && a.1 < b.1)
}

/// What a sweep's end of discovery means for this SM ([`Election::after_discovery`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterDiscovery {
    /// Go on sweeping.
    Sweep,
    /// Stand by, watching this SM (the sweep ends here).
    Yield(FoundSm),
    /// Master: hand the subnet to this better standby (once its state sync settles).
    HandOver(FoundSm),
    /// Not yet: this SM obeyed a HANDOVER from this SM, which the sweep read as master before
    /// it stepped down; it is read again ([`TimerWork::reread`]), and the discovery's end is
    /// decided once the answer is in.
    Recheck(FoundSm),
}

/// What the election's timer asks of the coordinator ([`Election::timer`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TimerWork {
    /// Master: send HANDOVER to this standby now (its state sync took too long).
    pub hand_over: Option<FoundSm>,
    /// Master: sweep again (a better SM was still discovering).
    pub sweep: bool,
    /// Standby: poll this master's SMInfo now.
    pub poll: Option<FoundSm>,
    /// Discovering: read again the SMInfo of this SM, which handed over and read as master.
    pub reread: Option<FoundSm>,
}

/// The times a standby's poll follows (from the configuration).
#[derive(Debug, Clone, Copy)]
pub struct PollRules {
    /// Between polls, ns.
    pub interval_ns: u64,
    /// Polls in a row without an answer before taking over.
    pub retries: u32,
    /// Longest the master's ActCount may stay the same, ns.
    pub act_stall_ns: u64,
}

fn key(f: &FoundSm) -> (u8, Guid) {
    (f.info.priority & 0x0f, f.info.guid)
}

impl Election {
    /// Times this SM took the subnet over (its master died, or handed over).
    pub fn takeovers(&self) -> u64 {
        self.takeovers
    }

    /// DISABLE received and no DISCOVER since: no sweeping, no polling.
    pub fn disabled(&self) -> bool {
        self.disabled
    }

    /// SMs found by the running (or last) sweep.
    pub fn found(&self) -> &[FoundSm] {
        &self.found
    }

    /// The master a standby watches.
    pub fn master(&self) -> Option<FoundSm> {
        self.master
    }

    /// A heavy sweep starts: it finds the SMs anew.
    pub fn sweep_started(&mut self) {
        self.found.clear();
    }

    /// The priority this SM reports and elects with, from the configured `base` and
    /// `elevated` ones: the elevated one after it took the subnet over from a dead master (so
    /// that the old master, back, stands by instead of taking the subnet back).
    pub fn priority(&self, base: u8, elevated: Option<u8>) -> u8 {
        let base = base & 0x0f;
        match elevated {
            Some(e) if self.elevated => base.max(e & 0x0f),
            _ => base,
        }
    }

    /// The LID of the watched master's port, read by its route: a master found before it had
    /// a LID (SMs started together) is then named by the messages it sends (its state sync).
    pub fn learn_master_lid(&mut self, guid: Guid, lid: Lid) {
        if let Some(m) = self.master.as_mut().filter(|m| m.info.guid == guid && lid != Lid::UNASSIGNED) {
            m.lid = lid;
        }
    }

    /// The SM this SM found or watches at `slid` (how a LID-routed control names its sender).
    pub fn sender_at(&self, slid: Lid) -> Option<Guid> {
        if slid == Lid::UNASSIGNED {
            return None;
        }
        self.master.iter().chain(&self.found).find(|f| f.lid == slid).map(|f| f.info.guid)
    }

    /// An SM found in discovery (its SMInfo, the route and LID of its port), with this SM's
    /// SM_Key (0: none) and port GUID. `false` when it takes no part: another SM_Key (or a
    /// hidden one); the coordinator reports it.
    pub fn add_found(&mut self, found: FoundSm, my_key: u64, me: Guid) -> bool {
        if found.info.guid == me {
            return true;
        }
        if my_key != 0 && found.info.sm_key != my_key {
            return false;
        }
        self.found.retain(|f| f.info.guid != found.info.guid);
        self.found.push(found);
        true
    }

    /// At the end of discovery: whether this SM (in `state`, with `me` = (priority, port
    /// GUID)) yields to another, hands over to a better standby, or sweeps on. A master that
    /// finds a better SM still discovering re-checks a poll interval from `now`.
    pub fn after_discovery(
        &mut self,
        state: SmState,
        me: (u8, Guid),
        now: u64,
        poll_interval_ns: u64,
    ) -> AfterDiscovery {
        let not_master_yet = matches!(state, SmState::NotActive | SmState::Discovering | SmState::Standby);
        if not_master_yet && let Some(x) = self.stale_master(now) {
            return AfterDiscovery::Recheck(x);
        }
        // The HANDOVER's sender stepped down, is gone, or had its time: the rules as ever (of
        // two masters, the other one first).
        let handed_by = self.handed_by.take().map(|h| h.guid);
        let active = |f: &&FoundSm| {
            matches!(f.info.sm_state, WireSmState::Master | WireSmState::Standby | WireSmState::Discovering)
        };
        let other_master = self
            .found
            .iter()
            .filter(|f| f.info.sm_state == WireSmState::Master)
            .min_by_key(|f| Some(f.info.guid) == handed_by)
            .copied();
        let better_one =
            self.found.iter().filter(active).filter(|f| better(key(f), me)).copied().min_by(|a, b| {
                if better(key(a), key(b)) { std::cmp::Ordering::Less } else { std::cmp::Ordering::Greater }
            });
        match (state, other_master, better_one) {
            // Not master yet: an existing master keeps the subnet (it hands over if we are
            // better); else the best SM that is better than us.
            (SmState::NotActive | SmState::Discovering | SmState::Standby, Some(m), _) => AfterDiscovery::Yield(m),
            (SmState::NotActive | SmState::Discovering | SmState::Standby, None, Some(b)) => AfterDiscovery::Yield(b),
            // Master: only to a better master (two masters: the worse steps down).
            (SmState::Master, Some(m), _) if better(key(&m), me) => AfterDiscovery::Yield(m),
            (SmState::Master, _, Some(b)) if b.info.sm_state == WireSmState::Standby => AfterDiscovery::HandOver(b),
            // A better SM still discovering: it will stand by when it finds this master; sweep
            // again soon to hand over to it then.
            (SmState::Master, _, Some(_)) => {
                self.recheck_at = Some(now.saturating_add(poll_interval_ns.max(1)));
                AfterDiscovery::Sweep
            }
            _ => AfterDiscovery::Sweep,
        }
    }

    /// The SM that handed this SM the subnet, found master by this discovery with no other
    /// master beside it, while it may still be stepping down at `now`: it is to be read again
    /// (at once the first time, then [`REREAD_SPACING_NS`] after the last answer).
    fn stale_master(&mut self, now: u64) -> Option<FoundSm> {
        let h = self.handed_by.as_mut()?;
        let is_master = |f: &&FoundSm| f.info.sm_state == WireSmState::Master;
        let x = self.found.iter().filter(is_master).find(|f| f.info.guid == h.guid).copied()?;
        if self.found.iter().filter(is_master).any(|f| f.info.guid != h.guid) {
            return None;
        }
        let first = h.until.is_none();
        let until = *h.until.get_or_insert(now.saturating_add(STEP_DOWN_NS));
        if now > until {
            return None;
        }
        if h.reread_at.is_none() {
            h.reread_at = Some(if first { now } else { now.saturating_add(REREAD_SPACING_NS) });
        }
        Some(x)
    }

    /// The SMInfo of `guid` read again at the end of discovery (`None`: no answer, it is not
    /// counted, as in discovery), with this SM's SM_Key: it replaces what discovery found.
    pub fn reread(&mut self, guid: Guid, info: Option<SmInfo>, my_key: u64) {
        let Some(at) = self.found.iter().position(|f| f.info.guid == guid) else { return };
        match info.filter(|i| i.guid == guid && (my_key == 0 || i.sm_key == my_key)) {
            Some(info) => self.found[at].info = info,
            None => {
                self.found.remove(at);
            }
        }
    }

    /// This SM stands by, watching `master`, from `now`: the first poll is an interval away.
    pub fn stand_by(&mut self, master: FoundSm, now: u64, poll_interval_ns: u64) {
        self.handover_when_synced = None;
        self.master = Some(master);
        self.misses = 0;
        self.last_act = None;
        self.poll_at = Some(now.saturating_add(poll_interval_ns));
    }

    /// Master: hand over to `to` once its state sync settles, or at `deadline` regardless.
    pub fn hand_over_when_synced(&mut self, to: FoundSm, deadline: u64) {
        self.handover_when_synced = Some((to, deadline));
    }

    /// The state sync of `guid` settled: the standby a handover waited for, if it is that one.
    pub fn sync_settled(&mut self, guid: Guid) -> Option<FoundSm> {
        self.handover_when_synced.take_if(|t| t.0.info.guid == guid).map(|(to, _)| to)
    }

    /// HANDOVER went out to `to`: its ACKNOWLEDGE is expected.
    pub fn handing_over(&mut self, to: FoundSm) {
        self.handed_to = Some(to);
    }

    /// The answer to HANDOVER to `to`: when accepted, the master this SM now stands by (as
    /// found when the HANDOVER went out, or else as the sweep found it); when refused, none.
    pub fn handover_answered(&mut self, to: Guid, accepted: bool) -> Option<FoundSm> {
        if !accepted {
            self.handed_to = None;
            return None;
        }
        // The standby as found when the HANDOVER went out: a sweep started since (a trap, the
        // state sync) may have emptied `found`, and the standby is master now all the same.
        let target = self.handed_to.filter(|t| t.info.guid == to);
        let target = target.or_else(|| self.found.iter().find(|f| f.info.guid == to).copied())?;
        Some(FoundSm { info: SmInfo { sm_state: WireSmState::Master, ..target.info }, ..target })
    }

    /// The next time [`Election::timer`] has work for an SM in `state`.
    pub fn poll_timeout(&self, state: SmState) -> Option<u64> {
        match state {
            SmState::Standby => self.poll_at,
            SmState::Master => {
                let handover = self.handover_when_synced.map(|(_, t)| t);
                [self.recheck_at, handover].into_iter().flatten().min()
            }
            SmState::Discovering => self.handed_by.and_then(|h| h.reread_at),
            SmState::NotActive => None,
        }
    }

    /// Timer work at `now` for an SM in `state`: a handover that waited long enough, a
    /// master's re-check sweep, a standby's poll. Polls go out every `poll_interval_ns`,
    /// answered or not: an unanswered one counts as a miss when it times out, while the next
    /// is already on its way, so `sm-poll-retries` misses in a row are found within (retries +
    /// 1) intervals and an SMP timeout of the first unanswered poll.
    pub fn timer(&mut self, state: SmState, now: u64, poll_interval_ns: u64) -> TimerWork {
        let mut work = TimerWork::default();
        if state == SmState::Master {
            work.hand_over = self.handover_when_synced.take_if(|(_, t)| *t <= now).map(|(to, _)| to);
            if self.recheck_at.is_some_and(|t| t <= now) {
                self.recheck_at = None;
                work.sweep = true;
            }
        }
        if state == SmState::Discovering
            && let Some(h) = self.handed_by.as_mut()
            && h.reread_at.is_some_and(|t| t <= now)
        {
            h.reread_at = None;
            work.reread = self.found.iter().find(|f| f.info.guid == h.guid).copied();
        }
        if state != SmState::Standby || self.disabled || self.poll_at.is_none_or(|t| t > now) {
            return work;
        }
        self.poll_at = Some(now.saturating_add(poll_interval_ns.max(1)));
        work.poll = self.master;
        work
    }

    /// A standby's poll answered (`answer`; `None`: no answer) at `now`: the master and the
    /// reason to take over from it, or `None` while it is well (the next poll is scheduled).
    pub fn on_poll(&mut self, answer: Option<&SmInfo>, now: u64, rules: PollRules) -> Option<(Guid, &'static str)> {
        let m = self.master?;
        match answer {
            Some(info) if info.sm_state != WireSmState::Master => {
                return Some((m.info.guid, "the SM watched is not master"));
            }
            Some(info) => {
                self.misses = 0;
                match self.last_act {
                    // The same count for too long: alive but not working (OpenSM raises it
                    // once per sweep, so the bound is longer than its sweep interval).
                    Some((act, since)) if act == info.act_count => {
                        if now.saturating_sub(since) > rules.act_stall_ns {
                            return Some((m.info.guid, "its ActCount stalled"));
                        }
                    }
                    _ => self.last_act = Some((info.act_count, now)),
                }
            }
            None => {
                self.misses += 1;
                if self.misses >= rules.retries.max(1) {
                    return Some((m.info.guid, "it stopped answering"));
                }
            }
        }
        // The next poll is already scheduled from when this one went out.
        if self.poll_at.is_none() {
            self.poll_at = Some(now.saturating_add(rules.interval_ns));
        }
        None
    }

    /// This SM takes the subnet over from `from` for `reason`: a master that died is not given
    /// the subnet back when it returns (elevated priority); one that handed over is (it asked
    /// for it), and the discovery that follows reads it again before standing by for it.
    pub fn took_over(&mut self, from: Guid, reason: &str) {
        self.held_handover = None;
        self.takeovers += 1;
        self.elevated = reason != HANDED_OVER;
        self.handed_by = (reason == HANDED_OVER).then_some(HandedBy { guid: from, until: None, reread_at: None });
        self.master = None;
        self.poll_at = None;
    }

    /// Whether SubnSet(SMInfo) `control` from `from` (carried from the port of `sender`) is
    /// obeyed by an SM in `state` with SM_Key `my_key`.
    pub fn admits(&self, control: u32, from: &SmInfo, sender: Option<Guid>, state: SmState, my_key: u64) -> bool {
        // The right key, from the port the payload names (a third host that knows the key and
        // writes the master's GUID is refused).
        let key_ok = from.sm_key == my_key && sender == Some(from.guid);
        let from_master = self.master.is_some_and(|m| m.info.guid == from.guid);
        // Knowing no master yet, an SM this SM's sweep found master.
        let found_master = || {
            self.master.is_none()
                && self.found.iter().any(|f| f.info.guid == from.guid && f.info.sm_state == WireSmState::Master)
        };
        key_ok
            && match control {
                control::HANDOVER => {
                    (state == SmState::Standby && from_master) || (state == SmState::Discovering && found_master())
                }
                control::ACKNOWLEDGE => self.handed_to.is_some_and(|t| t.info.guid == from.guid),
                control::DISABLE => from_master,
                // From a master this SM's sweep found as master, not one that says so now.
                control::STANDBY => from_master || (from.sm_state == WireSmState::Master && found_master()),
                control::DISCOVER => self.disabled && from_master,
                _ => false,
            }
    }

    /// Holds a HANDOVER with the right key from an SM this SM's discovery has not found yet
    /// (a master hands over as soon as its own sweep reads a better SM, which may be before this
    /// SM has stood by): it is obeyed if the sweep finds that SM master at `at` before `until`.
    pub fn hold_handover(&mut self, from: SmInfo, at: SenderAt, until: u64) {
        self.held_handover = Some((from, at, until));
    }

    /// The held HANDOVER, taken, if it came from `master` and has not expired by `now`.
    pub fn held_handover(&mut self, master: Guid, now: u64) -> Option<(SmInfo, SenderAt)> {
        let (from, at, until) = self.held_handover.take()?;
        (from.guid == master && now <= until).then_some((from, at))
    }

    /// The SM a HANDOVER went out to, until it is answered (then, when accepted, until its
    /// ACKNOWLEDGE).
    pub fn handing_over_to(&self) -> Option<Guid> {
        self.handed_to.map(|t| t.info.guid)
    }

    /// ACKNOWLEDGE obeyed: the handover is complete.
    pub fn acknowledged(&mut self) {
        self.handed_to = None;
    }

    /// DISABLE obeyed: no polling until DISCOVER.
    pub fn disable(&mut self) {
        self.disabled = true;
        self.poll_at = None;
    }

    /// DISCOVER obeyed.
    pub fn enable(&mut self) {
        self.disabled = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: u64 = 0x1234;
    const ME: Guid = Guid(0x20);

    fn sm(guid: u64, priority: u8, sm_state: WireSmState, lid: u16) -> FoundSm {
        let info = SmInfo { guid: Guid(guid), sm_key: KEY, act_count: 0, priority, sm_state };
        FoundSm { info, path: DrPath::default(), lid: Lid(lid) }
    }

    const RULES: PollRules = PollRules { interval_ns: 100, retries: 2, act_stall_ns: 1_000 };

    #[test]
    fn the_sweep_yields_to_a_master_or_a_better_sm_and_hands_over_to_a_better_standby() {
        let mut e = Election::default();
        // Another SM_Key takes no part; this SM itself is not an other SM.
        assert!(!e.add_found(
            FoundSm {
                info: SmInfo { sm_key: 9, ..sm(0x10, 15, WireSmState::Master, 1).info },
                ..sm(0x10, 15, WireSmState::Master, 1)
            },
            KEY,
            ME
        ));
        assert!(e.add_found(sm(ME.0, 1, WireSmState::Master, 1), KEY, ME));
        assert!(e.found().is_empty());
        assert_eq!(e.after_discovery(SmState::Discovering, (5, ME), 0, 100), AfterDiscovery::Sweep);

        // A worse master keeps the subnet from an SM that is not master yet.
        let worse_master = sm(0x30, 1, WireSmState::Master, 3);
        e.add_found(worse_master, KEY, ME);
        assert_eq!(e.after_discovery(SmState::Discovering, (5, ME), 0, 100), AfterDiscovery::Yield(worse_master));
        // Found again: replaced, not counted twice.
        e.add_found(worse_master, KEY, ME);
        assert_eq!(e.found().len(), 1);
        // A master yields only to a better master.
        assert_eq!(e.after_discovery(SmState::Master, (5, ME), 0, 100), AfterDiscovery::Sweep);

        // A better standby: a master hands over to it; the best of two is chosen.
        e.sweep_started();
        let good = sm(0x40, 7, WireSmState::Standby, 4);
        let best = sm(0x50, 9, WireSmState::Standby, 5);
        e.add_found(good, KEY, ME);
        e.add_found(best, KEY, ME);
        assert_eq!(e.after_discovery(SmState::Master, (5, ME), 0, 100), AfterDiscovery::HandOver(best));
        // A better SM still discovering: the master re-checks a poll interval later.
        e.sweep_started();
        e.add_found(sm(0x60, 9, WireSmState::Discovering, 6), KEY, ME);
        assert_eq!(e.after_discovery(SmState::Master, (5, ME), 1_000, 100), AfterDiscovery::Sweep);
        assert_eq!(e.poll_timeout(SmState::Master), Some(1_100));
        assert_eq!(e.timer(SmState::Master, 1_099, 100), TimerWork::default());
        assert_eq!(e.timer(SmState::Master, 1_100, 100), TimerWork { sweep: true, ..TimerWork::default() });
        assert_eq!(e.poll_timeout(SmState::Master), None);
    }

    #[test]
    fn a_master_found_without_a_lid_is_named_by_its_lid_once_read() {
        let mut e = Election::default();
        e.stand_by(sm(0x60, 9, WireSmState::Master, 0), 0, 100);
        assert_eq!(e.sender_at(Lid(7)), None);
        e.learn_master_lid(Guid(0x61), Lid(7));
        e.learn_master_lid(Guid(0x60), Lid::UNASSIGNED);
        assert_eq!(e.sender_at(Lid(7)), None, "another SM's, or no LID: nothing learnt");
        e.learn_master_lid(Guid(0x60), Lid(7));
        assert_eq!(e.sender_at(Lid(7)), Some(Guid(0x60)));
        assert_eq!(e.master().map(|m| m.lid), Some(Lid(7)));
    }

    #[test]
    fn a_standby_polls_and_takes_over_when_the_master_is_silent_stalled_or_not_master() {
        let master = sm(0x30, 1, WireSmState::Master, 3);
        let alive = |act| SmInfo { act_count: act, ..master.info };

        let mut e = Election::default();
        e.stand_by(master, 0, 100);
        assert_eq!(e.master(), Some(master));
        assert_eq!(e.timer(SmState::Standby, 99, 100).poll, None);
        assert_eq!(e.timer(SmState::Standby, 100, 100).poll, Some(master));
        // The next poll an interval after this one went out, answered or not.
        assert_eq!(e.timer(SmState::Standby, 150, 100).poll, None);
        assert_eq!(e.poll_timeout(SmState::Standby), Some(200));
        assert_eq!(e.timer(SmState::Standby, 200, 100).poll, Some(master), "the first one still unanswered");
        // Answers with a rising count keep it standing by; they do not move the schedule.
        assert_eq!(e.on_poll(Some(&alive(1)), 100, RULES), None);
        assert_eq!(e.poll_timeout(SmState::Standby), Some(300));
        assert_eq!(e.on_poll(Some(&alive(2)), 200, RULES), None);
        // One miss is tolerated at two retries; the second in a row is not.
        assert_eq!(e.on_poll(None, 300, RULES), None);
        assert_eq!(e.on_poll(None, 400, RULES), Some((master.info.guid, "it stopped answering")));

        // The same count for longer than the stall bound.
        let mut e = Election::default();
        e.stand_by(master, 0, 100);
        assert_eq!(e.on_poll(Some(&alive(7)), 100, RULES), None);
        assert_eq!(e.on_poll(Some(&alive(7)), 1_100, RULES), None);
        assert_eq!(e.on_poll(Some(&alive(7)), 1_101, RULES), Some((master.info.guid, "its ActCount stalled")));

        // The master says it is not master.
        let mut e = Election::default();
        e.stand_by(master, 0, 100);
        let gone = SmInfo { sm_state: WireSmState::Standby, ..master.info };
        assert_eq!(e.on_poll(Some(&gone), 100, RULES), Some((master.info.guid, "the SM watched is not master")));

        // Taking over from a dead master elevates the priority; after a handover it does not.
        e.took_over(master.info.guid, "it stopped answering");
        assert_eq!((e.takeovers(), e.master(), e.priority(3, Some(12))), (1, None, 12));
        assert_eq!(e.priority(3, None), 3);
        e.took_over(master.info.guid, HANDED_OVER);
        assert_eq!((e.takeovers(), e.priority(3, Some(12))), (2, 3));

        // Disabled: no polls.
        let mut e = Election::default();
        e.stand_by(master, 0, 100);
        e.disable();
        assert!(e.disabled());
        assert_eq!(e.timer(SmState::Standby, 1_000, 100), TimerWork::default());
    }

    #[test]
    fn controls_are_obeyed_only_with_the_key_from_the_port_they_name() {
        let master = sm(0x30, 1, WireSmState::Master, 3);
        let mut e = Election::default();
        e.add_found(master, KEY, ME);
        let from = master.info;
        let sender = Some(from.guid);
        // No master watched yet: STANDBY from a master found, nothing else.
        assert!(e.admits(control::STANDBY, &from, sender, SmState::Master, KEY));
        assert!(!e.admits(control::HANDOVER, &from, sender, SmState::Standby, KEY));
        // HANDOVER from a master found while this SM still discovers (OpenSM hands over as soon
        // as its sweep reads a better SM), from its own port only; not to a master.
        assert!(e.admits(control::HANDOVER, &from, sender, SmState::Discovering, KEY));
        assert!(!e.admits(control::HANDOVER, &from, Some(Guid(0x99)), SmState::Discovering, KEY));
        assert!(!e.admits(control::HANDOVER, &from, sender, SmState::Discovering, KEY + 1));
        assert!(!e.admits(control::HANDOVER, &from, sender, SmState::Master, KEY));
        let standby_found = sm(0x41, 9, WireSmState::Standby, 5);
        e.add_found(standby_found, KEY, ME);
        let h = standby_found.info;
        assert!(!e.admits(control::HANDOVER, &h, Some(h.guid), SmState::Discovering, KEY), "found, not master");
        e.stand_by(master, 0, 100);
        assert!(e.admits(control::HANDOVER, &from, sender, SmState::Standby, KEY));
        assert!(!e.admits(control::HANDOVER, &from, sender, SmState::Master, KEY));
        // Wrong key, or carried from another port than the payload names.
        assert!(!e.admits(control::HANDOVER, &from, sender, SmState::Standby, KEY + 1));
        assert!(!e.admits(control::HANDOVER, &from, Some(Guid(0x99)), SmState::Standby, KEY));
        assert!(!e.admits(control::HANDOVER, &from, None, SmState::Standby, KEY));
        // DISCOVER only while disabled.
        assert!(!e.admits(control::DISCOVER, &from, sender, SmState::NotActive, KEY));
        e.disable();
        assert!(e.admits(control::DISCOVER, &from, sender, SmState::NotActive, KEY));
        e.enable();
        assert!(!e.disabled());
        // ACKNOWLEDGE only from the standby handed to; unknown controls never.
        let standby = sm(0x40, 9, WireSmState::Standby, 4);
        assert!(!e.admits(control::ACKNOWLEDGE, &standby.info, Some(standby.info.guid), SmState::Master, KEY));
        e.handing_over(standby);
        assert!(e.admits(control::ACKNOWLEDGE, &standby.info, Some(standby.info.guid), SmState::Master, KEY));
        assert!(!e.admits(9, &from, sender, SmState::Standby, KEY));
        // LID-routed controls name their sender by LID.
        assert_eq!(e.sender_at(Lid(3)), Some(master.info.guid));
        assert_eq!(e.sender_at(Lid(0)), None);
        // STANDBY from an SM found as a standby that claims in its payload to be master.
        let mut e = Election::default();
        e.add_found(standby, KEY, ME);
        let claims = SmInfo { sm_state: WireSmState::Master, ..standby.info };
        assert!(!e.admits(control::STANDBY, &claims, Some(standby.info.guid), SmState::Master, KEY));
    }

    #[test]
    fn a_handover_held_while_discovering_is_given_only_for_its_master_before_it_expires() {
        let master = sm(0x30, 1, WireSmState::Master, 3);
        let at = SenderAt::Lid(Lid(3));
        let mut e = Election::default();
        // Another SM found master, or too late: not given, and gone.
        e.hold_handover(master.info, at.clone(), 1_000);
        assert_eq!(e.held_handover(Guid(0x31), 10), None);
        assert_eq!(e.held_handover(master.info.guid, 10), None, "taken by the first ask");
        e.hold_handover(master.info, at.clone(), 1_000);
        assert_eq!(e.held_handover(master.info.guid, 1_001), None);
        // In time, for the SM it came from: given once, with where it came from.
        e.hold_handover(master.info, at.clone(), 1_000);
        assert_eq!(e.held_handover(master.info.guid, 1_000), Some((master.info, at.clone())));
        assert_eq!(e.held_handover(master.info.guid, 1_000), None);
        // A takeover forgets it.
        e.hold_handover(master.info, at, 1_000);
        e.took_over(master.info.guid, "it stopped answering");
        assert_eq!(e.held_handover(master.info.guid, 10), None);
    }

    #[test]
    fn the_sm_that_handed_over_is_read_again_while_it_reads_as_master_within_a_bound() {
        let x = sm(0x30, 1, WireSmState::Master, 3);
        let standby = SmInfo { sm_state: WireSmState::Standby, ..x.info };
        let d = SmState::Discovering;
        // Handed over by x, whose SMInfo the discovery read as MASTER: read again at once,
        // then a spacing after each answer, while the discovery's end waits.
        let mut e = Election::default();
        e.took_over(x.info.guid, HANDED_OVER);
        e.add_found(x, KEY, ME);
        assert_eq!(e.after_discovery(d, (5, ME), 1_000, 100), AfterDiscovery::Recheck(x));
        assert_eq!(e.poll_timeout(d), Some(1_000));
        assert_eq!(e.timer(d, 1_000, 100).reread, Some(x));
        assert_eq!(e.poll_timeout(d), None, "on its way");
        e.reread(x.info.guid, Some(x.info), KEY);
        assert_eq!(e.after_discovery(d, (5, ME), 1_200, 100), AfterDiscovery::Recheck(x));
        assert_eq!(e.poll_timeout(d), Some(1_200 + REREAD_SPACING_NS));
        // Asked again before it is due (another MAD woke the sweep): the schedule holds.
        assert_eq!(e.after_discovery(d, (5, ME), 1_300, 100), AfterDiscovery::Recheck(x));
        assert_eq!(e.poll_timeout(d), Some(1_200 + REREAD_SPACING_NS));
        assert_eq!(e.timer(d, 1_200 + REREAD_SPACING_NS - 1, 100).reread, None);
        assert_eq!(e.timer(d, 1_200 + REREAD_SPACING_NS, 100).reread, Some(x));
        // It stood by: the sweep goes on (x is worse), and the rule is spent: a later sweep
        // that finds x master yields to it as to any master.
        e.reread(x.info.guid, Some(standby), KEY);
        assert_eq!(e.after_discovery(d, (5, ME), 2_000, 100), AfterDiscovery::Sweep);
        e.add_found(x, KEY, ME);
        assert_eq!(e.after_discovery(d, (5, ME), 2_100, 100), AfterDiscovery::Yield(x));

        // Still master when the bound is over (from the first read again): stood by for.
        let mut e = Election::default();
        e.took_over(x.info.guid, HANDED_OVER);
        e.add_found(x, KEY, ME);
        assert_eq!(e.after_discovery(d, (5, ME), 0, 100), AfterDiscovery::Recheck(x));
        e.timer(d, 0, 100);
        e.reread(x.info.guid, Some(x.info), KEY);
        assert_eq!(e.after_discovery(d, (5, ME), STEP_DOWN_NS, 100), AfterDiscovery::Recheck(x));
        assert_eq!(e.after_discovery(d, (5, ME), STEP_DOWN_NS + 1, 100), AfterDiscovery::Yield(x));
        assert_eq!(e.poll_timeout(d), None);

        // No answer to the read again (or another key): not counted, the sweep goes on.
        for answer in [None, Some(SmInfo { sm_key: KEY + 1, ..x.info })] {
            let mut e = Election::default();
            e.took_over(x.info.guid, HANDED_OVER);
            e.add_found(x, KEY, ME);
            assert_eq!(e.after_discovery(d, (5, ME), 0, 100), AfterDiscovery::Recheck(x));
            e.reread(x.info.guid, answer, KEY);
            assert!(e.found().is_empty());
            assert_eq!(e.after_discovery(d, (5, ME), 10, 100), AfterDiscovery::Sweep);
        }

        // Another master beside x, better or worse: obeyed as ever, no read again.
        for other in [sm(0x40, 9, WireSmState::Master, 4), sm(0x41, 0, WireSmState::Master, 5)] {
            let mut e = Election::default();
            e.took_over(x.info.guid, HANDED_OVER);
            e.add_found(x, KEY, ME);
            e.add_found(other, KEY, ME);
            assert_eq!(e.after_discovery(d, (5, ME), 0, 100), AfterDiscovery::Yield(other));
        }
        // A master that died and is found master again (it came back): stood by for, no read
        // again.
        let mut e = Election::default();
        e.took_over(x.info.guid, "it stopped answering");
        e.add_found(x, KEY, ME);
        assert_eq!(e.after_discovery(d, (5, ME), 0, 100), AfterDiscovery::Yield(x));
        assert_eq!(e.timer(d, 0, 100), TimerWork::default());
    }

    #[test]
    fn a_handover_waits_for_the_sync_and_its_answer_makes_the_standby_master() {
        let standby = sm(0x40, 9, WireSmState::Standby, 4);
        let mut e = Election::default();
        e.hand_over_when_synced(standby, 500);
        assert_eq!(e.poll_timeout(SmState::Master), Some(500));
        // Another SM's sync settling does not release it; this one's does, once.
        assert_eq!(e.sync_settled(Guid(0x41)), None);
        assert_eq!(e.sync_settled(standby.info.guid), Some(standby));
        assert_eq!(e.sync_settled(standby.info.guid), None);
        // Or the deadline does.
        e.hand_over_when_synced(standby, 500);
        assert_eq!(e.timer(SmState::Master, 499, 100).hand_over, None);
        assert_eq!(e.timer(SmState::Master, 500, 100).hand_over, Some(standby));

        // Refused: forgotten. Accepted: the standby, master now, even after `found` was emptied.
        e.handing_over(standby);
        assert_eq!(e.handover_answered(standby.info.guid, false), None);
        e.handing_over(standby);
        e.sweep_started();
        let m = e.handover_answered(standby.info.guid, true).expect("accepted");
        assert_eq!((m.info.guid, m.info.sm_state, m.lid), (standby.info.guid, WireSmState::Master, Lid(4)));
        assert_eq!(e.handover_answered(Guid(0x77), true), None);
    }
}
