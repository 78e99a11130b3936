//! Event subscriptions: InformInfo (Set: subscribe, unsubscribe), InformInfoRecord (Get,
//! GetTable), and the Reports the SA sends to subscribers.
//!
//! Owns the subscriptions (at most [`MAX_SUBSCRIPTIONS`], and at most [`MAX_SUBSCRIPTIONS_PER_PORT`]
//! from one requesting port, so that one port cannot fill the table: past either, a new
//! subscription gets NO_RESOURCES, as OpenSM answers when it cannot take one) and the Reports in
//! flight (at most [`MAX_PENDING`]), each retried until the subscriber's ReportResp arrives or its tries run
//! out. It builds Report MADs (SubnAdmReport(Notice)) and says where they go; the core puts them
//! on the wire, feeds back ReportResps and timeouts, and tells it what happened: notices to
//! forward (traps from the fabric, and the SA's own 64/65 when ports come and go between
//! sweeps) and the ports that are gone (their subscriptions end with them).
//!
//! Rules: a subscription belongs to the requesting port (the InformInfo's GID if it names a
//! port of the subnet, else the requester's); an untrusted request may not subscribe to the
//! security traps 256–259 by number (REQ_DENIED), and a catch-all subscription of an untrusted
//! requester never receives them. Unsubscribing what is not subscribed is REQ_INVALID.
//! InformInfoRecords show a trusted requester every subscription, others only their own.
//! A Report goes only to a subscriber allowed to know of its subject (IBTA o13-17.1.1, as
//! OpenSM applies it; see [`Audience`]): the port a 64/65 or a trap is about must share a
//! partition with the subscriber's port, and the subscriber's port must hold the P_Key of the
//! group a 66/67 is about; otherwise the Report is withheld.

use std::collections::{BTreeMap, VecDeque};

use ibsm_mad::attrs::{Notice, NoticeDetails, NoticeSource, NoticeType, ProducerType};
use ibsm_mad::header::Method;
use ibsm_mad::ids::{sa_attr, status};
use ibsm_mad::records::{InformInfo, InformInfoRecord};
use ibsm_mad::rmpp::RmppHeader;
use ibsm_mad::sa::{SA_HEADER_LEN, SaHeader};
use ibsm_mad::{Attribute, Gid, Lid, MAD_LEN, PKey};

use super::answer::Table;
use super::snapshot::{PortAt, Snapshot};
use super::{Answer, Limits, Query};

/// Most subscriptions held.
pub const MAX_SUBSCRIPTIONS: usize = 4096;
/// Most subscriptions made from one requesting port (its LIDs, under any LMC, count as one):
/// every generic trap number a port may care about, for a few QPs each.
pub const MAX_SUBSCRIPTIONS_PER_PORT: usize = 64;
/// Most Reports waiting for their ReportResp; more are dropped and counted.
pub const MAX_PENDING: usize = 4096;
/// Time to wait for a ReportResp before sending the Report again, ns.
pub const REPORT_TIMEOUT_NS: u64 = 500_000_000;
/// Retries after the first try.
pub const REPORT_RETRIES: u32 = 3;

/// Security traps (bad M_Key, bad P_Key, bad Q_Key, and on switch ports): trusted subscribers only.
const SECURITY_TRAPS: std::ops::RangeInclusive<u16> = 256..=259;

/// One subscription.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Subscription {
    /// The subscribing port's GID.
    pub subscriber: Gid,
    /// Where Reports go: the requester's LID and the InformInfo's QPN.
    pub lid: Lid,
    /// The InformInfo as subscribed.
    pub info: InformInfo,
    /// Enum of its InformInfoRecord.
    pub enum_: u16,
    /// The subscriber proved the SA key.
    pub trusted: bool,
}

/// Who may hear of a notice (IBTA o13-17.1.1, as OpenSM applies it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Audience {
    /// Subscribers whose port shares a partition with this port, the notice's subject (the
    /// port of a 64/65, the issuer of a trap): the same port, a common partition with one of
    /// the two a full member, or a switch port without a P_Key table. `None` (the port is not
    /// in the snapshot): nobody.
    Port(Option<PortAt>),
    /// Subscribers whose port holds this P_Key, any membership (the group of a 66/67).
    Partition(PKey),
}

impl Audience {
    /// Whether the subscriber at `lid` may hear of the notice.
    fn admits(self, snap: &Snapshot, lid: Lid) -> bool {
        let Some(dest) = snap.by_lid(lid) else { return false };
        match self {
            Audience::Port(None) => false,
            Audience::Port(Some(src)) => snap.visible_to(Some(dest), src) || snap.visible_to(Some(src), dest),
            Audience::Partition(pkey) => {
                snap.port(dest).is_some_and(|p| p.pkeys.iter().any(|k| k.0 != 0 && k.base() == pkey.base()))
            }
        }
    }
}

/// A Report waiting for its ReportResp.
#[derive(Debug, Clone)]
struct Pending {
    bytes: Vec<u8>,
    to: (Lid, u32),
    deadline: u64,
    tries_left: u32,
    sent: bool,
}

/// A Report to put on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutReport {
    /// The MAD.
    pub bytes: Vec<u8>,
    /// Destination LID.
    pub lid: Lid,
    /// Destination QP.
    pub qpn: u32,
}

/// Counters of the notice machinery.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReportCounters {
    /// Reports sent, retries included.
    pub sent: u64,
    /// Reports acknowledged with a ReportResp.
    pub acknowledged: u64,
    /// Reports given up after their retries.
    pub expired: u64,
    /// Reports not even queued because too many were in flight.
    pub dropped: u64,
}

/// Subscriptions and Reports in flight.
#[derive(Debug, Clone, Default)]
pub struct Informs {
    subs: Vec<Subscription>,
    next_enum: u16,
    pending: BTreeMap<u32, Pending>,
    /// TIDs of Reports to send (first tries and retries), in order.
    queue: VecDeque<u32>,
    next_tid: u32,
    /// Counters.
    pub counters: ReportCounters,
}

impl Informs {
    /// Subscriptions held.
    pub fn len(&self) -> usize {
        self.subs.len()
    }

    /// Whether nobody is subscribed.
    pub fn is_empty(&self) -> bool {
        self.subs.is_empty()
    }

    /// Set(InformInfo): subscribe or unsubscribe the requester.
    pub(super) fn set(&mut self, snap: &Snapshot, q: &Query<'_>) -> Answer {
        let h = &q.header;
        let Ok(info) = InformInfo::parse(q.template) else { return Answer::error(h, status::SA_REQ_INVALID) };
        let own = snap.by_lid(q.requester).and_then(|at| snap.port(at)).map(|p| p.guid);
        let named = (info.gid != Gid::default() && info.gid.prefix == snap.subnet_prefix)
            .then_some(info.gid.guid)
            .filter(|g| snap.by_guid(*g).is_some());
        let Some(guid) = named.or(own) else { return Answer::error(h, status::SA_INVALID_GID) };
        let subscriber = Gid { prefix: snap.subnet_prefix, guid };
        if !q.trusted && info.is_generic && SECURITY_TRAPS.contains(&info.trap_number_or_device_id) {
            return Answer::error(h, status::SA_REQ_DENIED);
        }
        let same = |s: &Subscription| {
            s.subscriber == subscriber
                && s.info.is_generic == info.is_generic
                && s.info.trap_number_or_device_id == info.trap_number_or_device_id
                && s.info.trap_type == info.trap_type
                && s.info.producer_type_or_vendor_id == info.producer_type_or_vendor_id
                && s.info.qpn == info.qpn
                && (s.info.lid_range_begin, s.info.lid_range_end) == (info.lid_range_begin, info.lid_range_end)
        };
        if info.subscribe {
            let sub = Subscription { subscriber, lid: q.requester, info, enum_: self.next_enum, trusted: q.trusted };
            if let Some(s) = self.subs.iter_mut().find(|s| same(s)) {
                *s = Subscription { enum_: s.enum_, ..sub };
            } else if self.subs.len() >= MAX_SUBSCRIPTIONS
                || self.subs.iter().filter(|s| same_port(snap, s.lid, q.requester)).count()
                    >= MAX_SUBSCRIPTIONS_PER_PORT
            {
                return Answer::error(h, status::SA_NO_RESOURCES);
            } else {
                self.subs.push(sub);
                self.next_enum = self.next_enum.wrapping_add(1);
            }
        } else {
            let before = self.subs.len();
            self.subs.retain(|s| !same(s));
            if self.subs.len() == before {
                return Answer::error(h, status::SA_REQ_INVALID);
            }
        }
        let offset = (ibsm_mad::records::stride::<InformInfo>() / 8) as u16;
        Answer::single(h.response(status::OK, offset), &info.to_vec(), 1)
    }

    /// Get/GetTable(InformInfoRecord).
    pub(super) fn records(&self, snap: &Snapshot, q: &Query<'_>, limits: &Limits) -> Answer {
        let own = snap.by_lid(q.requester).and_then(|at| snap.port(at)).map(|p| p.guid);
        let mut t = Table::new::<InformInfoRecord>(q, limits);
        for s in self.subs.iter().filter(|s| q.trusted || Some(s.subscriber.guid) == own) {
            let rec = InformInfoRecord { subscriber_gid: s.subscriber, enum_: s.enum_, inform_info: s.info };
            if !t.offer(q, &rec) {
                break;
            }
        }
        t.answer(q, limits)
    }

    /// The subscriptions, for the state sync.
    pub fn export(&self) -> Vec<Subscription> {
        self.subs.clone()
    }

    /// Replaces the subscriptions with `subs` (from the state sync; at most
    /// [`MAX_SUBSCRIPTIONS`], one per Enum). Reports in flight are kept.
    pub fn restore(&mut self, subs: Vec<Subscription>) {
        self.subs.clear();
        for s in subs {
            if self.subs.len() < MAX_SUBSCRIPTIONS && !self.subs.iter().any(|x| x.enum_ == s.enum_) {
                self.subs.push(s);
            }
        }
        self.next_enum = self.subs.iter().map(|s| s.enum_.wrapping_add(1)).max().unwrap_or(0);
    }

    /// Ends the subscriptions of ports no longer in `snap`.
    pub fn retain_present(&mut self, snap: &Snapshot) {
        self.subs.retain(|s| snap.by_guid(s.subscriber.guid).is_some());
    }

    /// Queues a Report of `notice` to every subscription it matches whose port is in its
    /// `audience` in `snap`, at `now`. `lid` is the LID the notice is about (for LID ranges):
    /// the port of a 64/65, the issuer otherwise.
    pub fn notify(&mut self, snap: &Snapshot, notice: &Notice, lid: Lid, audience: Audience, now: u64) {
        let NoticeSource::Generic { producer, trap_number } = notice.source else { return };
        let targets: Vec<(Lid, u32)> = self
            .subs
            .iter()
            .filter(|s| {
                let i = &s.info;
                let all_lids = i.lid_range_begin == InformInfo::ALL_LIDS;
                i.is_generic
                    && (i.trap_number_or_device_id == 0xffff || i.trap_number_or_device_id == trap_number)
                    && (i.trap_type == InformInfo::ALL_TYPES || i.trap_type == u16::from(notice.notice_type.raw()))
                    && (i.producer_type_or_vendor_id == InformInfo::ALL_PRODUCERS
                        || i.producer_type_or_vendor_id == producer.raw())
                    && (all_lids || (i.lid_range_begin.0..=i.lid_range_end.0.max(i.lid_range_begin.0)).contains(&lid.0))
                    && (s.trusted || !SECURITY_TRAPS.contains(&trap_number))
                    && audience.admits(snap, s.lid)
            })
            .map(|s| (s.lid, s.info.qpn))
            .collect();
        for to in targets {
            if self.pending.len() >= MAX_PENDING {
                self.counters.dropped += 1;
                continue;
            }
            let tid = self.next_tid;
            self.next_tid = self.next_tid.wrapping_add(1);
            let header = SaHeader {
                method: Method::Report,
                status: 0,
                tid: u64::from(tid),
                attr_id: sa_attr::NOTICE,
                attr_mod: 0,
                rmpp: RmppHeader::default(),
                sm_key: 0,
                attr_offset: (ibsm_mad::records::stride::<Notice>() / 8) as u16,
                comp_mask: 0,
            };
            let mut bytes = vec![0u8; MAD_LEN];
            header.emit(&mut bytes);
            notice.emit(&mut bytes[SA_HEADER_LEN..SA_HEADER_LEN + Notice::LEN]);
            let pending = Pending { bytes, to, deadline: now, tries_left: REPORT_RETRIES + 1, sent: false };
            self.pending.insert(tid, pending);
            self.queue.push_back(tid);
        }
    }

    /// The next Report to send at `now`.
    pub fn poll_transmit(&mut self, now: u64) -> Option<OutReport> {
        while let Some(tid) = self.queue.pop_front() {
            let Some(p) = self.pending.get_mut(&tid) else { continue };
            p.tries_left = p.tries_left.saturating_sub(1);
            p.deadline = now.saturating_add(REPORT_TIMEOUT_NS);
            p.sent = true;
            self.counters.sent += 1;
            return Some(OutReport { bytes: p.bytes.clone(), lid: p.to.0, qpn: p.to.1 });
        }
        None
    }

    /// A ReportResp with `tid` arrived; true if it answered a Report of ours.
    pub fn on_report_resp(&mut self, tid: u64) -> bool {
        let hit = self.pending.remove(&((tid & 0xffff_ffff) as u32)).is_some();
        if hit {
            self.counters.acknowledged += 1;
        }
        hit
    }

    /// The earliest deadline of a Report sent and not acknowledged.
    pub fn poll_timeout(&self) -> Option<u64> {
        self.pending.values().filter(|p| p.sent).map(|p| p.deadline).min()
    }

    /// Queues Reports whose deadline passed for another try, or gives them up.
    pub fn on_timeout(&mut self, now: u64) {
        let due: Vec<u32> = self.pending.iter().filter(|(_, p)| p.sent && p.deadline <= now).map(|(&t, _)| t).collect();
        for tid in due {
            let Some(p) = self.pending.get_mut(&tid) else { continue };
            if p.tries_left == 0 {
                self.pending.remove(&tid);
                self.counters.expired += 1;
            } else {
                p.sent = false;
                self.queue.push_back(tid);
            }
        }
    }
}

/// Whether LIDs `a` and `b` belong to the same port of `snap` (the same LID when either is
/// not in it).
fn same_port(snap: &Snapshot, a: Lid, b: Lid) -> bool {
    match (snap.by_lid(a), snap.by_lid(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// The SA's own notice that `gid` (at `lid`) came into (64) or went out of (65) service,
/// issued by the SM at `sm_lid`/`sm_gid`.
pub fn gid_notice(in_service: bool, gid: Gid, sm_lid: Lid, sm_gid: Gid) -> Option<Notice> {
    let details = if in_service { NoticeDetails::Trap64 { gid } } else { NoticeDetails::Trap65 { gid } };
    sa_notice(details, sm_lid, sm_gid)
}

/// The SA's own notice that the multicast group `mgid` was created (66) or deleted (67).
pub fn group_notice(created: bool, mgid: Gid, sm_lid: Lid, sm_gid: Gid) -> Option<Notice> {
    let details = if created { NoticeDetails::Trap66 { mgid } } else { NoticeDetails::Trap67 { mgid } };
    sa_notice(details, sm_lid, sm_gid)
}

fn sa_notice(details: NoticeDetails, sm_lid: Lid, sm_gid: Gid) -> Option<Notice> {
    let mut n = Notice::generic(NoticeType::SubnetManagement, ProducerType::ClassManager, sm_lid, details)?;
    n.issuer_gid = sm_gid;
    Some(n)
}
