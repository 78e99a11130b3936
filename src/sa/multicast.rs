//! Multicast groups: MCMemberRecord Set (create, join), Delete (leave) and Get/GetTable.
//!
//! Owns the groups: MGID, MLID, the group-wide parameters (Q_Key, P_Key, MTU, rate, SL,
//! FlowLabel, HopLimit, TClass, scope, packet lifetime) and the members, each a port GUID with
//! its JoinState bits (full member, non-member, send-only non-member, send-only full member).
//! MLIDs come from 0xC000 up, lowest free first, within the pool the switches can hold: the
//! smallest MulticastFDBCap a switch of the subnet reports (a switch reporting 0 left out, as
//! OpenSM does; the whole multicast range when none reports one). A create past the pool is
//! NO_RESOURCES, counted ([`Groups::refused`]) and reported once until an MLID is free again
//! ([`Groups::take_exhausted`]). With `consolidate_ipv6_snm` (OpenSM's
//! `consolidate_ipv6_snm_req`, off by default as there), an IPv6 solicited-node group
//! (`ff1S:601b:PPPP::1:ffXX:XXXX`, any scope) takes the MLID of an existing group whose MGID
//! agrees on all but its last 24 bits: one MLID per partition and scope, however many hosts;
//! each group keeps its MGID and members. The partition policy's groups (the IPoIB
//! broadcast group of every `ipoib` partition, the default one's 0xC000 when it is so marked,
//! and the `mgid=` groups) are created when the SA starts answering and kept while the policy names
//! them ([`Groups::apply_policy`]). A group ends, and
//! its MLID is free again, when its last full member leaves (send-only memberships end with it;
//! OpenSM keeps such a group, and a join as 0x9 followed by a leave as 0x1 leaks its MLID), or,
//! for a group without full members, when its last member leaves. Every change marks the groups dirty so
//! that the core reprograms the switches' multicast tables ([`Groups::take_dirty`]).
//!
//! Rules (IBTA 15.2.5.17 and the o15-0.1 compliance statements, as OpenSM applies them):
//! - A Set or Delete must name MGID (zero asks the SA for one on a create), PortGID and
//!   JoinState, else INSUFFICIENT_COMPONENTS; a PortGID of another subnet prefix is INVALID_GID. Creating a group also needs Q_Key, P_Key, SL, FlowLabel and
//!   TClass, else INSUFFICIENT_COMPONENTS, and a full-member or send-only full-member JoinState.
//! - A requested MTU or rate with its selector must be one the requesting port's link can carry
//!   (not "greater than" its own, "less than" the smallest, an undefined code), else
//!   REQ_INVALID. A new group takes what the request selects among those, else the port's;
//!   its rate is reduced under `max-rate-enum` as OpenSM reduces it.
//! - A requested MGID must be a multicast GID (0xFF first byte) with no reserved flag bits; the
//!   SA's own signature (0xA01B) may not be requested with link-local scope; else REQ_INVALID.
//!   MGID 0 asks the SA for a fresh one: `ff1<scope>:a01b:<subnet prefix>:<counter>`.
//! - A new IP group (MGID signature 0x401B or 0x601B, not itself an IPv4 broadcast group) needs
//!   its partition's broadcast group of its scope (`ff1S:401b:PPPP::ffff:ffff`, `PPPP` from the
//!   MGID), whose Q_Key, P_Key, SL, FlowLabel, HopLimit and TClass the request must not
//!   contradict; else REQ_INVALID (OpenSM's default `ipoib_mcgroup_creation_validation`).
//! - Joining an existing group: the given Q_Key, P_Key, SL, FlowLabel, HopLimit and TClass must
//!   equal the group's, and the MTU and rate selectors must accept the group's; else REQ_INVALID.
//! - PortGID must be a port of the subnet (else REQ_INVALID). A port may join or leave on behalf
//!   of another (proxy join) when the two share a partition, as OpenSM allows; the member's P_Key
//!   table must hold the group's partition (else REQ_INVALID).
//! - Delete removes the JoinState bits given, which must all be held; a port that is not a
//!   member, a bit it does not hold, or a group that does not exist, is REQ_INVALID.
//! - An untrusted query gets one record per group of its own partitions, without PortGID,
//!   JoinState and ProxyJoin; a trusted one (the SA key) a record per member of every group.

use std::collections::{BTreeMap, BTreeSet};

use ibsm_mad::header::Method;
use ibsm_mad::ids::status;
use ibsm_mad::records::{JoinState, McMemberRecord, Mtu, Rate, Selector};
use ibsm_mad::{Attribute, Gid, Guid, Lid, PKey};

use super::answer::Table;
use super::snapshot::Snapshot;
use super::{Answer, Limits, Query};

/// The first multicast LID; the IPoIB broadcast group's.
pub const MLID_BASE: u16 = 0xc000;
/// Multicast LIDs the SA hands out at most (0xC000..=0xFFFE), when no switch reports a smaller
/// MulticastFDBCap.
pub const MLID_COUNT: u16 = 0xffff - MLID_BASE;

/// How many multicast LIDs (from 0xC000) the SA may hand out on `snap`'s subnet: the smallest
/// MulticastFDBCap of its switches, the whole multicast range ([`MLID_COUNT`]) when none
/// reports one.
pub fn mlid_pool(snap: &Snapshot) -> u16 {
    snap.mcast_fdb_cap().map_or(MLID_COUNT, |c| c.min(MLID_COUNT))
}
/// MGID of the IPv4-over-IB broadcast group of the default partition (link-local scope).
pub const IPOIB_BROADCAST: Gid = Gid { prefix: 0xff12_401b_ffff_0000, guid: Guid(0x0000_0000_ffff_ffff) };

/// A multicast group.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// Group-wide parameters as a record (MGID, MLID, Q_Key, P_Key, MTU, rate, lifetime, SL,
    /// FlowLabel, HopLimit, TClass, scope); PortGID, JoinState and ProxyJoin unused.
    pub params: McMemberRecord,
    /// Members: port GUID and JoinState bits.
    pub members: BTreeMap<Guid, JoinState>,
    /// Kept without members: the partition policy names it.
    pub persistent: bool,
}

/// The multicast groups.
#[derive(Debug, Clone, Default)]
pub struct Groups {
    by_mgid: BTreeMap<Gid, Group>,
    next_mgid: u32,
    dirty: bool,
    /// Groups created (`true`) and deleted since the last [`Groups::take_events`], with their
    /// P_Keys, for the notices 66 and 67.
    events: Vec<(bool, Gid, PKey)>,
    /// Solicited-node groups share an MLID per partition and scope.
    consolidate_snm: bool,
    /// Creates refused for want of an MLID.
    refused: u64,
    /// A refusal not yet reported, and whether one was since the pool last had room.
    exhausted: (bool, bool),
}

/// Whether `mgid` is an IPv6 solicited-node multicast address as OpenSM matches it:
/// `ff1S:601b:PPPP:0000` then `0000:0001:ffXX:XXXX` (bits 1 to 3 of the fourth byte ignored).
pub fn is_ipv6_snm(mgid: Gid) -> bool {
    mgid.prefix & 0xff10_ffff_0000_ffff == 0xff10_601b_0000_0000
        && mgid.guid.0 & 0xffff_fff1_ff00_0000 == 0x0000_0001_ff00_0000
}

/// The part of a solicited-node MGID's interface ID its partition and scope's groups share
/// (all but the last 24 bits: OpenSM compares the first 13 bytes of the MGID).
fn snm_key(mgid: Gid) -> u64 {
    mgid.guid.0 & !0x00ff_ffff
}

fn mtu_bytes(m: Mtu) -> Option<u32> {
    match m.raw() {
        1..=5 => Some(128 << m.raw()),
        _ => None,
    }
}

/// The value that meets `value` under `sel` among `all` (ascending, defined values the port can
/// carry): the largest that qualifies; `None` when none does (or the code is undefined).
fn pick(sel: Selector, value: Option<u32>, all: &[u32]) -> Option<u32> {
    match (sel, value) {
        (Selector::Largest, _) => all.last().copied(),
        (_, None) => None,
        (Selector::GreaterThan, Some(v)) => all.iter().rev().copied().find(|&x| x > v),
        (Selector::LessThan, Some(v)) => all.iter().rev().copied().find(|&x| x < v),
        (Selector::Exactly, Some(v)) => all.iter().copied().find(|&x| x == v),
    }
}

/// What the requesting port can carry: the MTUs and rates (Mb/s) up to its link's, ascending.
fn port_caps(snap: &Snapshot, port: Guid) -> (Vec<u32>, Vec<u32>) {
    let info = snap.by_guid(port).and_then(|at| snap.port(at)).and_then(|p| p.info);
    let mtu = info.and_then(|i| mtu_bytes(Mtu::from_raw(i.mtu_cap.raw()))).unwrap_or(2048);
    let rate = info.and_then(|i| super::snapshot::link_mbps(&i)).unwrap_or(10_000);
    let mut rates: Vec<u32> = all_rates().into_iter().filter(|&r| r <= rate).collect();
    rates.sort_unstable();
    rates.dedup();
    (ALL_MTUS.iter().copied().filter(|&m| m <= mtu).collect(), rates)
}

fn mtu_code(bytes: u32) -> Mtu {
    Mtu::from_raw(match bytes {
        256 => 1,
        512 => 2,
        1024 => 3,
        2048 => 4,
        _ => 5,
    })
}

fn rate_code(mbps: u32) -> Rate {
    super::snapshot::rate_code(mbps)
}

/// Whether the group value `have` meets the request `want` under `sel`.
fn meets(sel: Selector, have: u32, want: u32) -> bool {
    match sel {
        Selector::GreaterThan => have > want,
        Selector::LessThan => have < want,
        Selector::Exactly => have == want,
        Selector::Largest => true,
    }
}

const ALL_MTUS: [u32; 5] = [256, 512, 1024, 2048, 4096];

fn all_rates() -> Vec<u32> {
    (2..=24).filter_map(|c| Rate::from_raw(c).mbps()).collect()
}

impl Groups {
    /// The groups, by MGID.
    pub fn iter(&self) -> impl Iterator<Item = &Group> {
        self.by_mgid.values()
    }

    /// Shares one MLID among the IPv6 solicited-node groups of a partition and scope (OpenSM's
    /// `consolidate_ipv6_snm_req`); groups that exist keep theirs.
    pub fn set_consolidate_ipv6_snm(&mut self, on: bool) {
        self.consolidate_snm = on;
    }

    /// Creates refused so far for want of an MLID (NO_RESOURCES).
    pub fn refused(&self) -> u64 {
        self.refused
    }

    /// Whether a create was refused for want of an MLID since the last call, the first since the
    /// pool last had room (to be logged once, not per request).
    pub fn take_exhausted(&mut self) -> bool {
        std::mem::take(&mut self.exhausted.0)
    }

    /// The counter the SA's own MGIDs are made from (for the state sync).
    pub fn next_mgid(&self) -> u32 {
        self.next_mgid
    }

    /// Replaces the groups with `groups` (from the state sync): a group whose MGID an earlier
    /// one has, whose MLID an earlier one has (but for solicited-node groups of one partition
    /// and scope, which share theirs), or whose MLID is outside the multicast range, is left
    /// out. The switches' tables follow at the next multicast programming.
    pub fn restore(&mut self, groups: Vec<Group>, next_mgid: u32) {
        self.by_mgid.clear();
        let mut mlids: BTreeMap<u16, Gid> = BTreeMap::new();
        for g in groups {
            let m = g.params.mlid.0;
            if !(MLID_BASE..MLID_BASE + MLID_COUNT).contains(&m) || self.by_mgid.contains_key(&g.params.mgid) {
                continue;
            }
            let shared = |first: &Gid| {
                is_ipv6_snm(*first) && is_ipv6_snm(g.params.mgid) && snm_key(*first) == snm_key(g.params.mgid)
            };
            if mlids.get(&m).is_none_or(shared) {
                mlids.entry(m).or_insert(g.params.mgid);
                self.by_mgid.insert(g.params.mgid, g);
            }
        }
        self.next_mgid = next_mgid;
        self.dirty = true;
    }

    /// Groups created (`true`) or deleted since the last call, with their P_Keys, in order.
    pub fn take_events(&mut self) -> Vec<(bool, Gid, PKey)> {
        std::mem::take(&mut self.events)
    }

    /// Whether the groups changed since the last call (the switches need new tables).
    pub fn take_dirty(&mut self) -> bool {
        std::mem::take(&mut self.dirty)
    }

    /// Brings the pre-created groups to what the partition policy names (`specs`, from
    /// [`ibsm_partitions::policy_groups`], in policy order, the default partition's groups first,
    /// so that its IPoIB broadcast group, when it has one, takes MLID 0xC000). A group the policy names is kept while it does, even
    /// without members; one it names no longer ends like any other group (at once when it has
    /// no member). A named group that exists with other parameters keeps them while it has
    /// members (they joined with those) and takes the new ones once empty.
    pub fn apply_policy(&mut self, specs: &[ibsm_partitions::GroupSpec], snap: &Snapshot) {
        for g in self.by_mgid.values_mut() {
            g.persistent = false;
        }
        for spec in specs {
            let params = |mlid: Lid| McMemberRecord {
                mgid: spec.mgid,
                qkey: spec.qkey,
                mlid,
                mtu_selector: Selector::Exactly,
                mtu: Mtu::from_raw(spec.mtu),
                pkey: spec.pkey,
                rate_selector: Selector::Exactly,
                rate: Rate::from_raw(spec.rate),
                packet_life_time_selector: Selector::Exactly,
                packet_life_time: snap.packet_life,
                sl: spec.sl,
                flow_label: spec.flow_label,
                tclass: spec.tclass,
                scope: spec.scope,
                ..McMemberRecord::default()
            };
            if let Some(g) = self.by_mgid.get_mut(&spec.mgid) {
                g.persistent = true;
                let fresh = params(g.params.mlid);
                if g.members.is_empty() && g.params != fresh {
                    g.params = fresh;
                    self.dirty = true;
                }
                continue;
            }
            let Some(mlid) = self.free_mlid(snap) else { continue };
            self.by_mgid.insert(spec.mgid, Group { params: params(mlid), members: BTreeMap::new(), persistent: true });
            self.events.push((true, spec.mgid, spec.pkey));
            self.dirty = true;
        }
        let events = &mut self.events;
        let before = self.by_mgid.len();
        self.by_mgid.retain(|mgid, g| {
            let keep = g.persistent || !g.members.is_empty();
            if !keep {
                events.push((false, *mgid, g.params.pkey));
            }
            keep
        });
        self.dirty |= self.by_mgid.len() != before;
    }

    /// Drops members whose ports are no longer in `snap` (and groups left without members).
    pub fn retain_present(&mut self, snap: &Snapshot) {
        let mut changed = false;
        for g in self.by_mgid.values_mut() {
            let before = g.members.len();
            g.members.retain(|guid, _| snap.by_guid(*guid).is_some());
            changed |= g.members.len() != before;
        }
        let before = self.by_mgid.len();
        let events = &mut self.events;
        self.by_mgid.retain(|mgid, g| {
            let keep = g.persistent || !g.members.is_empty();
            if !keep {
                events.push((false, *mgid, g.params.pkey));
            }
            keep
        });
        self.dirty |= changed || self.by_mgid.len() != before;
    }

    fn free_mlid(&self, snap: &Snapshot) -> Option<Lid> {
        let used: BTreeSet<u16> = self.by_mgid.values().map(|g| g.params.mlid.0).collect();
        (MLID_BASE..MLID_BASE + mlid_pool(snap)).find(|m| !used.contains(m)).map(Lid)
    }

    /// The MLID a new group `mgid` takes: a solicited-node group's partition and scope share
    /// (when consolidating and one exists), else the lowest free one in the pool.
    fn mlid_for(&self, snap: &Snapshot, mgid: Gid) -> Option<Lid> {
        if self.consolidate_snm && is_ipv6_snm(mgid) {
            let key = snm_key(mgid);
            let from = Gid { prefix: mgid.prefix, guid: Guid(key) };
            let to = Gid { prefix: mgid.prefix, guid: Guid(key | 0x00ff_ffff) };
            if let Some(g) = self.by_mgid.range(from..=to).next() {
                return Some(g.1.params.mlid);
            }
        }
        self.free_mlid(snap)
    }

    /// Answers an MCMemberRecord request.
    pub(super) fn query(&mut self, snap: &Snapshot, q: &Query<'_>, limits: &Limits) -> Answer {
        let Ok(req) = McMemberRecord::parse(q.template) else {
            return Answer::error(&q.header, status::SA_REQ_INVALID);
        };
        match q.header.method {
            Method::Set => self.join(snap, q, &req),
            Method::Delete => self.leave(snap, q, &req),
            _ => self.records(snap, q, limits),
        }
    }

    /// The checks Set and Delete share: components, MTU and rate sanity, PortGID.
    fn check_request(snap: &Snapshot, q: &Query<'_>, req: &McMemberRecord) -> Result<Guid, u16> {
        let mask = q.header.comp_mask;
        let need = McMemberRecord::COMP_MGID | McMemberRecord::COMP_PORT_GID | McMemberRecord::COMP_JOIN_STATE;
        if mask & need != need {
            return Err(status::SA_INSUFFICIENT_COMPONENTS);
        }
        let port = req.port_gid;
        if port.prefix != snap.subnet_prefix {
            return Err(status::SA_INVALID_GID);
        }
        let Some(target) = snap.by_guid(port.guid) else { return Err(status::SA_REQ_INVALID) };
        // Joining or leaving for another port (proxy) needs a partition in common with it.
        let requester = snap.by_lid(q.requester);
        if requester != Some(target) {
            let keys =
                |at: Option<super::snapshot::PortAt>| at.and_then(|a| snap.port(a)).map_or(&[][..], |p| &p.pkeys[..]);
            let (mine, theirs) = (keys(requester), keys(Some(target)));
            if !mine.iter().any(|m| m.0 != 0 && theirs.iter().any(|t| t.0 != 0 && t.base() == m.base())) {
                return Err(status::SA_REQ_INVALID);
            }
        }
        if mask & McMemberRecord::COMP_PKEY != 0 && req.pkey.base() == 0 {
            return Err(status::SA_REQ_INVALID);
        }
        // A requested MTU or rate must be one the port can carry under its selector.
        let (mtus, rates) = port_caps(snap, port.guid);
        let both = |a: u64, b: u64| mask & a != 0 && mask & b != 0;
        if both(McMemberRecord::COMP_RATE, McMemberRecord::COMP_RATE_SELECTOR)
            && pick(req.rate_selector, req.rate.mbps(), &rates).is_none()
        {
            return Err(status::SA_REQ_INVALID);
        }
        if both(McMemberRecord::COMP_MTU, McMemberRecord::COMP_MTU_SELECTOR)
            && pick(req.mtu_selector, mtu_bytes(req.mtu), &mtus).is_none()
        {
            return Err(status::SA_REQ_INVALID);
        }
        Ok(port.guid)
    }

    /// Whether a requested MGID is acceptable for a new group.
    fn valid_mgid(mgid: Gid) -> bool {
        let b = mgid.prefix.to_be_bytes();
        if b[0] != 0xff {
            return false;
        }
        let signature = u16::from_be_bytes([b[2], b[3]]);
        if signature == 0x401b || signature == 0x601b {
            return true;
        }
        if b[1] & 0xe0 != 0 {
            return false;
        }
        !(signature == 0xa01b && b[1] & 0x0f == 2)
    }

    fn join(&mut self, snap: &Snapshot, q: &Query<'_>, req: &McMemberRecord) -> Answer {
        let h = &q.header;
        let guid = match Self::check_request(snap, q, req) {
            Ok(g) => g,
            Err(s) => return Answer::error(h, s),
        };
        let mask = h.comp_mask;
        let has = |c: u64| mask & c != 0;
        if req.join_state.is_empty() {
            return Answer::error(h, status::SA_REQ_INVALID);
        }
        let mgid_given = has(McMemberRecord::COMP_MGID) && req.mgid != Gid::default();
        if let Some(g) = mgid_given.then(|| self.by_mgid.get_mut(&req.mgid)).flatten() {
            if Self::mismatch(&g.params, req, mask) {
                return Answer::error(h, status::SA_REQ_INVALID);
            }
            if !Self::holds(snap, guid, g.params.pkey) {
                return Answer::error(h, status::SA_REQ_INVALID);
            }
            let state = g.members.entry(guid).or_default();
            let joined = state.union(req.join_state);
            *state = joined;
            let rec =
                McMemberRecord { port_gid: req.port_gid, join_state: joined, proxy_join: req.proxy_join, ..g.params };
            self.dirty = true;
            return Self::single(h, &rec);
        }
        // A new group.
        let create = McMemberRecord::COMP_QKEY
            | McMemberRecord::COMP_PKEY
            | McMemberRecord::COMP_SL
            | McMemberRecord::COMP_FLOW_LABEL
            | McMemberRecord::COMP_TCLASS;
        if mask & create != create {
            return Answer::error(h, status::SA_INSUFFICIENT_COMPONENTS);
        }
        // A full member, or a send-only full member (IBTA 1.3, as OpenSM), may create a group.
        if req.join_state.0 & (JoinState::FULL_MEMBER.0 | JoinState::SEND_ONLY_FULL_MEMBER.0) == 0 {
            return Answer::error(h, status::SA_REQ_INVALID);
        }
        let mgid = if mgid_given {
            if !Self::valid_mgid(req.mgid) || !self.ip_group_fits(req, mask) {
                return Answer::error(h, status::SA_REQ_INVALID);
            }
            req.mgid
        } else {
            self.fresh_mgid(snap, req.scope)
        };
        let Some(mlid) = self.mlid_for(snap, mgid) else {
            self.refused += 1;
            if !self.exhausted.1 {
                self.exhausted = (true, true);
            }
            return Answer::error(h, status::SA_NO_RESOURCES);
        };
        self.exhausted.1 = false;
        // MTU and rate: what the request selects among what the creator's port carries, else
        // the port's own.
        let (mtus, rates) = port_caps(snap, guid);
        let both = |a: u64, b: u64| has(a) && has(b);
        let mtu = both(McMemberRecord::COMP_MTU, McMemberRecord::COMP_MTU_SELECTOR)
            .then(|| pick(req.mtu_selector, mtu_bytes(req.mtu), &mtus))
            .flatten()
            .or(mtus.last().copied())
            .map_or(Mtu::from_raw(4), mtu_code);
        let rate = both(McMemberRecord::COMP_RATE, McMemberRecord::COMP_RATE_SELECTOR)
            .then(|| pick(req.rate_selector, req.rate.mbps(), &rates))
            .flatten()
            .or(rates.last().copied())
            .map_or(Rate::from_raw(3), rate_code);
        let rate = snap.max_rate.map_or(rate, |limit| rate.capped(limit));
        let params = McMemberRecord {
            mgid,
            port_gid: Gid::default(),
            mlid,
            mtu_selector: Selector::Exactly,
            mtu,
            rate_selector: Selector::Exactly,
            rate,
            packet_life_time_selector: Selector::Exactly,
            packet_life_time: if has(McMemberRecord::COMP_PACKET_LIFE_TIME) {
                req.packet_life_time
            } else {
                snap.packet_life
            },
            hop_limit: if has(McMemberRecord::COMP_HOP_LIMIT) { req.hop_limit } else { 0 },
            scope: if mgid_given { (mgid.prefix >> 48) as u8 & 0x0f } else { req.scope },
            join_state: JoinState::default(),
            proxy_join: false,
            ..*req
        };
        if !Self::holds(snap, guid, params.pkey) {
            return Answer::error(h, status::SA_REQ_INVALID);
        }
        let mut members = BTreeMap::new();
        members.insert(guid, req.join_state);
        self.by_mgid.insert(mgid, Group { params, members, persistent: false });
        self.events.push((true, mgid, params.pkey));
        self.dirty = true;
        let rec =
            McMemberRecord { port_gid: req.port_gid, join_state: req.join_state, proxy_join: req.proxy_join, ..params };
        Self::single(h, &rec)
    }

    /// Whether a new group's MGID, if an IP one (signature 0x401B or 0x601B) other than a
    /// broadcast group, has its partition's IPv4 broadcast group of the same scope
    /// (`ff1S:401b:PPPP::ffff:ffff`), with the Q_Key, P_Key, SL, FlowLabel, HopLimit and TClass
    /// the request gives (as OpenSM with its default `ipoib_mcgroup_creation_validation`).
    fn ip_group_fits(&self, req: &McMemberRecord, mask: u64) -> bool {
        let signature = (req.mgid.prefix >> 32) as u16;
        if signature != 0x401b && signature != 0x601b {
            return true;
        }
        let prefix = 0xff10_401b_0000_0000 | req.mgid.prefix & 0x000f_0000_ffff_0000;
        let broadcast = Gid { prefix, guid: Guid(0xffff_ffff) };
        if req.mgid == broadcast {
            return true;
        }
        let same = !(McMemberRecord::COMP_MTU
            | McMemberRecord::COMP_MTU_SELECTOR
            | McMemberRecord::COMP_RATE
            | McMemberRecord::COMP_RATE_SELECTOR);
        self.by_mgid.get(&broadcast).is_some_and(|b| !Self::mismatch(&b.params, req, mask & same))
    }

    /// Whether a join names a parameter the group `p` does not have (or a selector its MTU or
    /// rate does not meet).
    fn mismatch(p: &McMemberRecord, req: &McMemberRecord, mask: u64) -> bool {
        let has = |c: u64| mask & c != 0;
        (has(McMemberRecord::COMP_QKEY) && req.qkey != p.qkey)
            || (has(McMemberRecord::COMP_PKEY) && req.pkey.0 & 0x7fff != p.pkey.0 & 0x7fff)
            || (has(McMemberRecord::COMP_SL) && req.sl != p.sl)
            || (has(McMemberRecord::COMP_FLOW_LABEL) && req.flow_label != p.flow_label)
            || (has(McMemberRecord::COMP_HOP_LIMIT) && req.hop_limit != p.hop_limit)
            || (has(McMemberRecord::COMP_TCLASS) && req.tclass != p.tclass)
            || (has(McMemberRecord::COMP_MTU)
                && has(McMemberRecord::COMP_MTU_SELECTOR)
                && !meets(req.mtu_selector, mtu_bytes(p.mtu).unwrap_or(0), mtu_bytes(req.mtu).unwrap_or(0)))
            || (has(McMemberRecord::COMP_RATE)
                && has(McMemberRecord::COMP_RATE_SELECTOR)
                && !meets(req.rate_selector, p.rate.mbps().unwrap_or(0), req.rate.mbps().unwrap_or(0)))
    }

    /// Whether port `guid`'s P_Key table holds the partition of `pkey` (a member must be in the
    /// group's partition).
    fn holds(snap: &Snapshot, guid: Guid, pkey: PKey) -> bool {
        snap.by_guid(guid)
            .and_then(|at| snap.port(at))
            .is_some_and(|p| p.pkeys.iter().any(|k| k.0 != 0 && k.base() == pkey.base()))
    }

    /// A fresh SA-assigned MGID: ff1<scope>:a01b, the subnet prefix's upper 32 bits, a counter.
    fn fresh_mgid(&mut self, snap: &Snapshot, scope: u8) -> Gid {
        loop {
            self.next_mgid = self.next_mgid.wrapping_add(1);
            let scope = if scope == 0 { 2 } else { scope & 0x0f };
            let prefix = (0xff10_a01b_u64 | u64::from(scope) << 16) << 32 | (snap.subnet_prefix >> 32);
            let mgid = Gid { prefix, guid: Guid(u64::from(self.next_mgid) << 32) };
            if !self.by_mgid.contains_key(&mgid) {
                return mgid;
            }
        }
    }

    fn leave(&mut self, snap: &Snapshot, q: &Query<'_>, req: &McMemberRecord) -> Answer {
        let h = &q.header;
        let guid = match Self::check_request(snap, q, req) {
            Ok(g) => g,
            Err(s) => return Answer::error(h, s),
        };
        let Some(g) = self.by_mgid.get_mut(&req.mgid) else { return Answer::error(h, status::SA_REQ_INVALID) };
        let Some(state) = g.members.get_mut(&guid) else { return Answer::error(h, status::SA_REQ_INVALID) };
        // Only bits the member holds can be left (o15-0.1.14).
        if req.join_state.0 & !state.0 & 0x0f != 0 || req.join_state.is_empty() {
            return Answer::error(h, status::SA_REQ_INVALID);
        }
        let was_full = state.contains(JoinState::FULL_MEMBER);
        let left = state.without(req.join_state);
        // The answer shows what the port still holds.
        let rec = McMemberRecord { port_gid: req.port_gid, join_state: left, ..g.params };
        if left.is_empty() {
            g.members.remove(&guid);
        } else {
            *state = left;
        }
        // The group ends with its last full member (send-only memberships end with it), or,
        // for a group that has no full member, with its last member.
        let full_left = g.members.values().any(|s| s.contains(JoinState::FULL_MEMBER));
        let gone = !g.persistent && (g.members.is_empty() || (was_full && !full_left));
        if gone {
            let pkey = g.params.pkey;
            self.by_mgid.remove(&req.mgid);
            self.events.push((false, req.mgid, pkey));
        }
        self.dirty = true;
        Self::single(h, &rec)
    }

    fn records(&self, snap: &Snapshot, q: &Query<'_>, limits: &Limits) -> Answer {
        let mut t = Table::new::<McMemberRecord>(q, limits);
        let requester = snap.by_lid(q.requester).and_then(|at| snap.port(at)).map(|p| p.guid);
        'groups: for g in self.by_mgid.values() {
            // An untrusted requester sees only the groups of its own partitions.
            if !q.trusted && !requester.is_some_and(|r| Self::holds(snap, r, g.params.pkey)) {
                continue;
            }
            // An untrusted requester gets one record per group, without PortGID, JoinState and
            // ProxyJoin (as OpenSM answers); a trusted one a record per member.
            let members: Vec<(Guid, JoinState)> = if !q.trusted || g.members.is_empty() {
                vec![(Guid(0), JoinState::default())]
            } else {
                g.members.iter().map(|(&k, &v)| (k, v)).collect()
            };
            for (guid, state) in members {
                let rec = McMemberRecord {
                    port_gid: if guid == Guid(0) { Gid::default() } else { Gid { prefix: snap.subnet_prefix, guid } },
                    join_state: state,
                    proxy_join: false,
                    ..g.params
                };
                if !t.offer(q, &rec) {
                    break 'groups;
                }
            }
        }
        t.answer(q, limits)
    }

    fn single(h: &ibsm_mad::sa::SaHeader, rec: &McMemberRecord) -> Answer {
        let offset = (ibsm_mad::records::stride::<McMemberRecord>() / 8) as u16;
        Answer::single(h.response(status::OK, offset), &rec.to_vec(), 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solicited_node_mgids_are_matched_as_opensm_matches_them() {
        let g = |prefix: u64, guid: u64| Gid { prefix, guid: Guid(guid) };
        // Every scope, every partition, any last 24 bits.
        assert!(is_ipv6_snm(g(0xff12_601b_ffff_0000, 0x0000_0001_ff12_3456)));
        assert!(is_ipv6_snm(g(0xff15_601b_8001_0000, 0x0000_0001_ff00_0000)));
        assert!(is_ipv6_snm(g(0xff1e_601b_0000_0000, 0x0000_0001_ffff_ffff)));
        // OpenSM's interface-ID mask leaves bits 1 to 3 of the fourth byte out.
        assert!(is_ipv6_snm(g(0xff12_601b_ffff_0000, 0x0000_000f_ff12_3456)));
        // Not solicited-node: IPv4, another signature, other bytes, flags not 1.
        assert!(!is_ipv6_snm(g(0xff12_401b_ffff_0000, 0x0000_0001_ff12_3456)));
        assert!(!is_ipv6_snm(g(0xff12_601b_ffff_0001, 0x0000_0001_ff12_3456)));
        assert!(!is_ipv6_snm(g(0xff12_601b_ffff_0000, 0x0000_0002_ff12_3456)));
        assert!(!is_ipv6_snm(g(0xff12_601b_ffff_0000, 0x0000_0001_fe12_3456)));
        assert!(!is_ipv6_snm(g(0xff02_601b_ffff_0000, 0x0000_0001_ff12_3456)));
        assert!(!is_ipv6_snm(g(0xff12_601b_ffff_0000, 0x0000_0000_0000_0001)));
        // Hosts of one partition and scope share a key; another partition or scope does not.
        let a = g(0xff12_601b_ffff_0000, 0x0000_0001_ff12_3456);
        let b = g(0xff12_601b_ffff_0000, 0x0000_0001_ffab_cdef);
        assert_eq!(snm_key(a), snm_key(b));
    }
}
