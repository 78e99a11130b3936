//! PathRecord (Get, GetTable): the path between two end ports as the forwarding tables route
//! it.
//!
//! Source and destination are named by GID or LID (or left open in a GetTable: every end
//! port). MTU and rate are the minimum along the path the switches' LFTs actually take, not the
//! shortest one; under `max-rate-enum` (OpenSM's `max_rate_enum`) a rate whose code is over the
//! limit is reduced as OpenSM reduces it ([`ibsm_mad::records::Rate::capped`]), after the
//! request's selectors judged the path. PacketLifeTime is the SubnetTimeout the SM programs, 0x12 by default, as
//! OpenSM gives it (an RC transport derives its retransmission timeout from it);
//! 0 for a port to itself. Every path is reversible (LID routing through the same tables both
//! ways) and on SL 0, unless a QoS policy is in force: then each pair's record carries the SL of
//! the QoS level its query matches (`ibsm_qos::QosPolicy::level_of`: service ID, P_Key and
//! QoS class as asked, the two ends' ports, `partition:` port groups by the partitions in force),
//! its MTU and rate capped by the level's limits, its PacketLifeTime set by the level and its
//! P_Key one of the level's when the level names some (a P_Key asked for outside them: no
//! record); with no level (QoS on without a policy), the SL of the path's partition (`sl=` in
//! partitions.conf), as OpenSM gives it. With QoS off and a layered route (`dfsssp` on more than one
//! layer) each record carries its pair's layer as the SL ([`Snapshot::path_layer`]: the layer of
//! the switch the path leaves from and the destination LID), as OpenSM's dfsssp answers it.
//! With QoS on and a layered engine in the chain on two layers or more
//! ([`Snapshot::qos_layering`]), the record carries the SL of its QoS level's class for the
//! pair's layer ([`ibsm_qos::Classes::sl`]), so that each class stays on its own VLs. A request for another SL gets no record for the pair, and
//! a request for an SL that the way back's level does not give gets a record not reversible. Partitions follow OpenSM's rule ([`Snapshot::shared_pkey`]): the
//! requester must share a partition with the source and, separately, with the destination (so
//! an admin host in the default partition gets the paths between two storage servers of a
//! partition it is not in); the record is under a P_Key the two ends share with one of them a
//! full member (two limited members cannot talk), the lowest such, as the source port's entry
//! (or the one asked for). With LMC > 0, GetTable returns every source LID × destination LID pair (at most
//! NumbPath per port pair when NumbPath is given). Requested FlowLabel, HopLimit, TClass and
//! ServiceID are echoed. An SGID or DGID may name a port by one of its alias GUIDs
//! ([`Aliases`]): the path is the port's, and the records carry the alias GID asked for.
//!
//! Statuses: a DGID and DLID (or SGID and SLID) naming different ports is REQ_INVALID; an
//! unknown GID is INVALID_GID; a Get that names no source or no destination is
//! INSUFFICIENT_COMPONENTS.

use ibsm_mad::ids::status;
use ibsm_mad::records::{Mtu as RecMtu, PathRecord, Selector};
use ibsm_mad::{Attribute, Gid, Lid, PKey};

use super::answer::Table;
use super::guid_info_record::Aliases;
use super::paths::Ahead;
use super::snapshot::{PortAt, Snapshot, Walk, rate_code};
use super::{Answer, Limits, Query};
use ibsm_mad::header::Method;

/// One end of the requested paths: a port, one of its LIDs or all of them, and the alias GID
/// that named it (echoed in the records).
#[derive(Debug, Clone, Copy)]
struct End {
    port: PortAt,
    lid: Option<Lid>,
    alias: Option<Gid>,
}

/// Why an end could not be resolved.
enum Bad {
    /// The answer is this status.
    Status(u16),
    /// Nothing can match (an unknown LID): no records.
    Nothing,
}

/// The end named by `gid` and/or `lid` (each `Some` when its component is in the mask);
/// `None` when neither is.
fn resolve(snap: &Snapshot, aliases: &Aliases, gid: Option<Gid>, lid: Option<Lid>) -> Result<Option<End>, Bad> {
    let by_gid = match gid {
        Some(g) => {
            if g.prefix != snap.subnet_prefix {
                return Err(Bad::Status(status::SA_INVALID_GID));
            }
            Some(aliases.resolve(snap, g.guid).ok_or(Bad::Status(status::SA_INVALID_GID))?)
        }
        None => None,
    };
    let alias = gid.filter(|g| snap.by_guid(g.guid).is_none());
    let by_lid = match lid {
        Some(l) => Some(snap.by_lid(l).ok_or(Bad::Nothing)?),
        None => None,
    };
    match (by_gid, by_lid) {
        (Some(a), Some(b)) if a != b => Err(Bad::Status(status::SA_REQ_INVALID)),
        (Some(p), _) | (None, Some(p)) => Ok(Some(End { port: p, lid, alias })),
        (None, None) => Ok(None),
    }
}

/// Whether `have` satisfies `want` under `sel` (for lifetimes, `Largest` means "smallest",
/// which any value satisfies as well).
fn selected(sel: Selector, have: u32, want: u32) -> bool {
    match sel {
        Selector::GreaterThan => have > want,
        Selector::LessThan => have < want,
        Selector::Exactly => have == want,
        Selector::Largest => true,
    }
}

/// PacketLifeTime for a walk: `base`, or 0 for a port to itself (IBTA table 205).
fn life_time(base: u8, w: &Walk) -> u8 {
    if w.switches == 0 { 0 } else { base.min(63) }
}

/// Get/GetTable(PathRecord).
pub(super) fn query(snap: &Snapshot, aliases: &Aliases, q: &Query<'_>, limits: &Limits) -> Answer {
    let header = &q.header;
    let Ok(req) = PathRecord::parse(q.template) else { return Answer::error(header, status::SA_REQ_INVALID) };
    let mask = header.comp_mask;
    let has = |c: u64| mask & c != 0;
    let src = resolve(
        snap,
        aliases,
        has(PathRecord::COMP_SGID).then_some(req.sgid),
        has(PathRecord::COMP_SLID).then_some(req.slid),
    );
    let dst = resolve(
        snap,
        aliases,
        has(PathRecord::COMP_DGID).then_some(req.dgid),
        has(PathRecord::COMP_DLID).then_some(req.dlid),
    );
    let mut table = Table::new::<PathRecord>(q, limits);
    let (src, dst) = match (src, dst) {
        (Err(Bad::Status(st)), _) | (_, Err(Bad::Status(st))) => return Answer::error(header, st),
        (Err(Bad::Nothing), _) | (_, Err(Bad::Nothing)) => return table.answer(q, limits),
        (Ok(from), Ok(to)) => (from, to),
    };
    if header.method == Method::Get && (src.is_none() || dst.is_none()) {
        return Answer::error(header, status::SA_INSUFFICIENT_COMPONENTS);
    }
    // Without QoS or layers only SL 0 is in use.
    if snap.qos.is_none() && snap.layers.is_none() && has(PathRecord::COMP_SL) && req.sl != 0 {
        return table.answer(q, limits);
    }
    let ask = Ask {
        template: template(&req, mask),
        req: &req,
        mask,
        sl: has(PathRecord::COMP_SL).then_some(req.sl),
        qos_class: has(PathRecord::COMP_QOS_CLASS).then_some(req.qos_class),
        want: has(PathRecord::COMP_PKEY).then_some(req.pkey),
        requester: snap.by_lid(q.requester),
        per_pair: if has(PathRecord::COMP_NUMB_PATH) && req.numb_path > 0 {
            usize::from(req.numb_path)
        } else {
            usize::MAX
        },
        aliases: (src.and_then(|e| e.alias), dst.and_then(|e| e.alias)),
    };
    let (src_port, dst_port) = (src.map(|e| e.port), dst.map(|e| e.port));
    let all: Vec<PortAt> =
        if src_port.is_none() || dst_port.is_none() { snap.end_ports().collect() } else { Vec::new() };
    let sources = src_port.as_ref().map_or(all.as_slice(), std::slice::from_ref);
    let dests = dst_port.as_ref().map_or(all.as_slice(), std::slice::from_ref);
    'pairs: for &sp in sources {
        let slids = src.and_then(|e| e.lid).map_or_else(|| Lids::of(snap, sp), Lids::one);
        for &dp in dests {
            let dlids = dst.and_then(|e| e.lid).map_or_else(|| Lids::of(snap, dp), Lids::one);
            if !push_pair(snap, &mut table, &ask, (sp, slids), (dp, dlids)) {
                break 'pairs;
            }
        }
    }
    table.answer(q, limits)
}

/// What the PathRecord Get in `bytes` from `requester` will walk, for
/// [`super::paths::Paths::walk_ahead`]: its source port, its destination LID and that LID's
/// owner, and the requester's port. `None` for anything else (not a Get of a PathRecord, an end
/// named neither by LID nor by port GUID, an end not in `snap`, bytes that do not parse): such a
/// request is answered without help. A hint only: what it names is walked as a lookup would.
pub fn ahead(snap: &Snapshot, bytes: &[u8], requester: Lid) -> Option<Ahead> {
    // The common header first: most MADs in a driver's batch are no PathRecord Get.
    let mad = ibsm_mad::header::Mad::new_checked(bytes).ok()?;
    if mad.mgmt_class() != ibsm_mad::header::MgmtClass::SubnAdm
        || mad.method() != Method::Get
        || mad.attr_id() != PathRecord::ID
    {
        return None;
    }
    let mask = ibsm_mad::sa::SaHeader::from_bytes(bytes).ok()?.comp_mask;
    let template = bytes.get(ibsm_mad::sa::SA_HEADER_LEN..ibsm_mad::sa::SA_HEADER_LEN + ibsm_mad::sa::SA_DATA_LEN)?;
    let req = PathRecord::parse(template).ok()?;
    let has = |c: u64| mask & c != 0;
    let end = |lid_c: u64, lid: Lid, gid_c: u64, gid: Gid| {
        if has(lid_c) {
            snap.by_lid(lid).map(|p| (p, Some(lid)))
        } else if has(gid_c) {
            snap.by_guid(gid.guid).map(|p| (p, None))
        } else {
            None
        }
    };
    let (src, _) = end(PathRecord::COMP_SLID, req.slid, PathRecord::COMP_SGID, req.sgid)?;
    let (dest, dlid) = end(PathRecord::COMP_DLID, req.dlid, PathRecord::COMP_DGID, req.dgid)?;
    let dlid = dlid.or_else(|| snap.lids_of(dest).next())?;
    Some(Ahead { src, dest, dlid, by: snap.by_lid(requester) })
}

/// The LIDs of one end of a path: one asked for, or the port's LMC range
/// ([`Snapshot::lids_of`]), as a range (no allocation per pair).
#[derive(Debug, Clone, Copy)]
struct Lids {
    first: u32,
    end: u32,
}

impl Lids {
    fn one(lid: Lid) -> Lids {
        Lids { first: u32::from(lid.0), end: u32::from(lid.0) + 1 }
    }

    fn of(snap: &Snapshot, at: PortAt) -> Lids {
        let mut all = snap.lids_of(at).map(|l| u32::from(l.0));
        match all.next() {
            Some(first) => Lids { first, end: all.last().unwrap_or(first) + 1 },
            None => Lids { first: 0, end: 0 },
        }
    }

    fn iter(self) -> impl Iterator<Item = Lid> + Clone {
        (self.first..self.end).filter_map(|l| u16::try_from(l).ok().map(Lid))
    }
}

/// How a set of port pairs is asked for: the fields every record shares, the request and mask
/// whose selectors filter them, the P_Key asked for, the requester, the paths per port pair.
struct Ask<'r> {
    template: PathRecord,
    req: &'r PathRecord,
    mask: u64,
    /// The SL asked for, if any.
    sl: Option<u8>,
    /// The QoS class asked for, if any.
    qos_class: Option<u16>,
    want: Option<PKey>,
    requester: Option<PortAt>,
    per_pair: usize,
    /// The alias GIDs that named the source and the destination, echoed in place of the ports'.
    aliases: (Option<Gid>, Option<Gid>),
}

/// Adds the records of port pair `src` → `dst` over their LIDs (at most `ask.per_pair`), when
/// the two and the requester share a partition. Returns false once the table is full.
fn push_pair(snap: &Snapshot, table: &mut Table, ask: &Ask<'_>, src: (PortAt, Lids), dst: (PortAt, Lids)) -> bool {
    let ((sp, slids), (dp, dlids)) = (src, dst);
    let level = snap.qos.as_deref().and_then(|policy| qos_level(snap, policy, ask, (sp, dp)));
    let Some(pkey) = path_pkey(snap, ask, level.as_ref(), (sp, dp)) else { return true };
    // With QoS on, a path no level applies to is on its partition's SL (OpenSM's rule).
    let partition_sl = (snap.qos.is_some() && level.is_none()).then(|| snap.partition_sl(pkey.base()));
    // With an SL asked for, the way back is a path only if its own level allows that SL (as
    // OpenSM checks the reverse path with the same request).
    let back_refused = ask.sl.is_some_and(|sl| {
        snap.qos.as_deref().and_then(|policy| qos_level(snap, policy, ask, (dp, sp))).is_some_and(|l| {
            match snap.qos_layering.as_deref() {
                // Layered: any SL of the level's class (the way back's layer is its own).
                Some((classes, layers)) => !classes.sls(l.sl, *layers).contains(&sl),
                None => l.sl != sl,
            }
        })
    });
    let mut found = 0;
    for (slid, dlid) in slids.iter().flat_map(|s| dlids.iter().map(move |d| (s, d))) {
        if found >= ask.per_pair {
            break;
        }
        let Some(walk) = snap.walk(sp, dlid) else { continue };
        let Some(mut rec) = record(snap, &ask.template, (sp, slid), (dp, dlid), &walk) else { continue };
        rec.pkey = pkey;
        if let Some(level) = level {
            apply_level(&mut rec, level);
        }
        if let Some(sl) = partition_sl {
            rec.sl = sl;
        }
        // QoS classes times layers: the level's class, on the pair's layer.
        if let Some(ql) = snap.qos_layering.as_deref() {
            rec.sl = ql.0.sl(rec.sl, ql.1, snap.path_layer(sp, dlid).unwrap_or(0));
        }
        // Without QoS, a layered route's pair is on its layer's SL (no layer: SL 0).
        if snap.qos.is_none() && snap.layers.is_some() {
            rec.sl = snap.path_layer(sp, dlid).unwrap_or(0);
        }
        rec.reversible &= !back_refused;
        rec.sgid = ask.aliases.0.unwrap_or(rec.sgid);
        rec.dgid = ask.aliases.1.unwrap_or(rec.dgid);
        if ask.sl.is_some_and(|sl| sl != rec.sl) || !wanted(ask.req, ask.mask, &rec) {
            continue;
        }
        // As OpenSM: the selectors judge the path's rate, the record carries it capped.
        if let Some(limit) = snap.max_rate {
            rec.rate = rec.rate.capped(limit);
        }
        if !table.push(&rec) {
            return false;
        }
        found += 1;
    }
    true
}

/// One end of a path as QoS sees it: NodeDescription, port number, node type, port GUID,
/// P_Keys.
type EndFacts<'s> = (&'s str, u8, ibsm_qos::NodeTypeSel, ibsm_mad::Guid, Vec<u16>);

fn facts<'e>(e: &'e EndFacts<'_>, sm: ibsm_mad::Guid) -> ibsm_qos::PortFacts<'e> {
    ibsm_qos::PortFacts { guid: e.3, node_desc: e.0, port_num: e.1, node_type: e.2, is_sm: e.3 == sm, pkeys: &e.4 }
}

/// The P_Key of the path `sp` → `dp` as `ask` asks for it ([`Snapshot::shared_pkey`]), within
/// the QoS level's P_Keys when it names some, as OpenSM chooses: a P_Key asked for must be one
/// of them, else there is no path; without one, the lowest base of the level's that the two
/// ends share (one of them a full member) and the requester shares with each, given as the
/// base (no membership bit, as OpenSM answers).
fn path_pkey(
    snap: &Snapshot,
    ask: &Ask<'_>,
    level: Option<&ibsm_qos::Level<'_>>,
    (sp, dp): (PortAt, PortAt),
) -> Option<PKey> {
    let ranges = level.map_or(&[][..], |l| l.pkeys);
    if ranges.is_empty() {
        return snap.shared_pkey(sp, dp, ask.requester, ask.want);
    }
    let allowed = |k: PKey| ranges.iter().any(|r| r.contains(u64::from(k.base())));
    if let Some(want) = ask.want {
        return snap.shared_pkey(sp, dp, ask.requester, Some(want)).filter(|&k| allowed(k));
    }
    let table = &snap.port(sp)?.pkeys;
    table
        .iter()
        .filter(|k| k.0 != 0 && allowed(**k))
        .filter(|k| snap.shared_pkey(sp, dp, ask.requester, Some(**k)).is_some())
        .map(|k| PKey(k.base()))
        .min_by_key(|k| k.0)
}

/// The QoS level the policy gives the path `src` → `dst` as `ask` asks for it, if any applies.
fn qos_level<'p>(
    snap: &Snapshot,
    policy: &'p ibsm_qos::QosPolicy,
    ask: &Ask<'_>,
    (sp, dp): (PortAt, PortAt),
) -> Option<ibsm_qos::Level<'p>> {
    let end = |at: PortAt| {
        let node = snap.nodes.get(at.0 as usize)?;
        let port = node.ports.get(usize::from(at.1))?;
        let node_type = match node.info.node_type {
            ibsm_mad::attrs::NodeType::Switch => ibsm_qos::NodeTypeSel::Switch,
            ibsm_mad::attrs::NodeType::Router => ibsm_qos::NodeTypeSel::Router,
            _ => ibsm_qos::NodeTypeSel::Ca,
        };
        let pkeys: Vec<u16> = port.pkeys.iter().map(|k| k.0).filter(|&k| k & 0x7fff != 0).collect();
        Some((node.desc.as_str(), at.1, node_type, port.guid, pkeys))
    };
    let (s, d) = (end(sp)?, end(dp)?);
    let sm = snap.sm.guid;
    let q = ibsm_qos::PathQuery {
        src: facts(&s, sm),
        dst: facts(&d, sm),
        service_id: (ask.mask & PathRecord::COMP_SERVICE_ID == PathRecord::COMP_SERVICE_ID)
            .then_some(ask.req.service_id),
        pkey: ask.want.map(|k| k.0),
        qos_class: ask.qos_class,
        partition_pkey: &|name| snap.partition_base(name),
    };
    policy.level_of(&q)
}

/// What a QoS level imposes on a record: its SL, and its MTU, rate and lifetime limits.
fn apply_level(rec: &mut PathRecord, level: ibsm_qos::Level<'_>) {
    rec.sl = level.sl;
    if let Some(limit) = level.mtu_limit
        && rec.mtu.raw() > limit
    {
        rec.mtu = RecMtu::from_raw(limit);
    }
    if let Some(limit) = level.rate_limit {
        let cap = ibsm_mad::records::Rate::from_raw(limit);
        if let (Some(have), Some(max)) = (rec.rate.mbps(), cap.mbps())
            && have > max
        {
            rec.rate = cap;
        }
    }
    if let Some(life) = level.packet_life {
        rec.packet_life_time = life;
    }
}

/// The fields every answer to `req` shares: the echoed ones and the fixed ones.
fn template(req: &PathRecord, mask: u64) -> PathRecord {
    let has = |c: u64| mask & c != 0;
    PathRecord {
        service_id: if has(PathRecord::COMP_SERVICE_ID) { req.service_id } else { 0 },
        flow_label: if has(PathRecord::COMP_FLOW_LABEL) { req.flow_label } else { 0 },
        hop_limit: if has(PathRecord::COMP_HOP_LIMIT) { req.hop_limit } else { 0 },
        tclass: if has(PathRecord::COMP_TCLASS) { req.tclass } else { 0 },
        reversible: true,
        pkey: if has(PathRecord::COMP_PKEY) { req.pkey } else { PKey(0xffff) },
        mtu_selector: Selector::Exactly,
        rate_selector: Selector::Exactly,
        packet_life_time_selector: Selector::Exactly,
        ..PathRecord::default()
    }
}

/// GetMulti(MultiPathRecord): PathRecords between every source GID and every destination GID
/// of the request (both counts at least one, else REQ_INVALID; an unknown GID is INVALID_GID),
/// NumbPath per pair (one when zero), filtered by P_Key, SL and the MTU, rate and lifetime
/// selectors as PathRecord requests are. The answer carries PathRecords.
pub(super) fn multi(snap: &Snapshot, aliases: &Aliases, q: &Query<'_>, limits: &Limits) -> Answer {
    use ibsm_mad::records::MultiPathRecord as Mpr;
    let header = &q.header;
    let Ok(req) = Mpr::parse(q.template) else { return Answer::error(header, status::SA_REQ_INVALID) };
    if req.sgids.is_empty() || req.dgids.is_empty() {
        return Answer::error(header, status::SA_REQ_INVALID);
    }
    // Each GID's port, and the GID itself when it is an alias (echoed in the records).
    let resolve_all = |gids: &[Gid]| -> Result<Vec<(PortAt, Option<Gid>)>, u16> {
        gids.iter()
            .map(|g| {
                let at = (g.prefix == snap.subnet_prefix).then(|| aliases.resolve(snap, g.guid)).flatten();
                let at = at.ok_or(status::SA_INVALID_GID)?;
                Ok((at, snap.by_guid(g.guid).is_none().then_some(*g)))
            })
            .collect()
    };
    let (sources, dests) = match (resolve_all(&req.sgids), resolve_all(&req.dgids)) {
        (Ok(s), Ok(d)) => (s, d),
        (Err(st), _) | (_, Err(st)) => return Answer::error(header, st),
    };
    let mask = header.comp_mask;
    let has = |c: u64| mask & c != 0;
    let mut table = Table::new::<PathRecord>(q, limits);
    if snap.qos.is_none() && snap.layers.is_none() && has(Mpr::COMP_SL) && req.sl != 0 {
        return table.answer(q, limits);
    }
    // The same request as a PathRecord's template and selectors.
    let as_pr = PathRecord {
        service_id: req.service_id,
        flow_label: req.flow_label,
        hop_limit: req.hop_limit,
        tclass: req.tclass,
        pkey: req.pkey,
        mtu_selector: req.mtu_selector,
        mtu: req.mtu,
        rate_selector: req.rate_selector,
        rate: req.rate,
        packet_life_time_selector: req.packet_life_time_selector,
        packet_life_time: req.packet_life_time,
        ..PathRecord::default()
    };
    let map = [
        (Mpr::COMP_SERVICE_ID, PathRecord::COMP_SERVICE_ID),
        (Mpr::COMP_FLOW_LABEL, PathRecord::COMP_FLOW_LABEL),
        (Mpr::COMP_HOP_LIMIT, PathRecord::COMP_HOP_LIMIT),
        (Mpr::COMP_TCLASS, PathRecord::COMP_TCLASS),
        (Mpr::COMP_PKEY, PathRecord::COMP_PKEY),
        (Mpr::COMP_MTU_SELECTOR, PathRecord::COMP_MTU_SELECTOR),
        (Mpr::COMP_MTU, PathRecord::COMP_MTU),
        (Mpr::COMP_RATE_SELECTOR, PathRecord::COMP_RATE_SELECTOR),
        (Mpr::COMP_RATE, PathRecord::COMP_RATE),
        (Mpr::COMP_PACKET_LIFE_TIME_SELECTOR, PathRecord::COMP_PACKET_LIFE_TIME_SELECTOR),
        (Mpr::COMP_PACKET_LIFE_TIME, PathRecord::COMP_PACKET_LIFE_TIME),
    ];
    let pr_mask = map.iter().filter(|(m, _)| mask & m == *m).fold(0, |acc, (_, p)| acc | p);
    let mut ask = Ask {
        template: template(&as_pr, pr_mask),
        req: &as_pr,
        mask: pr_mask,
        sl: has(Mpr::COMP_SL).then_some(req.sl),
        qos_class: has(Mpr::COMP_QOS_CLASS).then_some(req.qos_class),
        want: has(Mpr::COMP_PKEY).then_some(req.pkey),
        requester: snap.by_lid(q.requester),
        per_pair: usize::from(req.numb_path.max(1)),
        aliases: (None, None),
    };
    'pairs: for &(sp, salias) in &sources {
        let slids = Lids::of(snap, sp);
        for &(dp, dalias) in &dests {
            ask.aliases = (salias, dalias);
            if !push_pair(snap, &mut table, &ask, (sp, slids), (dp, Lids::of(snap, dp))) {
                break 'pairs;
            }
        }
    }
    table.answer(q, limits)
}

/// The PathRecord from `slid` to `dlid` as a GetTable by LIDs answers it (default partition,
/// nothing echoed): the SA's hot path. Allocates nothing.
pub fn between(snap: &Snapshot, slid: Lid, dlid: Lid) -> Option<PathRecord> {
    let src = snap.by_lid(slid)?;
    let walk = snap.walk(src, dlid)?;
    let pkey = snap.shared_pkey(src, walk.dest, Some(src), None)?;
    let mut rec = record(snap, &template(&PathRecord::default(), 0), (src, slid), (walk.dest, dlid), &walk)?;
    rec.pkey = pkey;
    if snap.qos.is_none() && snap.layers.is_some() {
        rec.sl = snap.path_layer(src, dlid).unwrap_or(0);
    }
    if let Some(limit) = snap.max_rate {
        rec.rate = rec.rate.capped(limit);
    }
    Some(rec)
}

/// The record for the path `src` → `dst` (each a port and the LID used) found by `w`.
fn record(
    snap: &Snapshot,
    template: &PathRecord,
    src: (PortAt, Lid),
    dst: (PortAt, Lid),
    w: &Walk,
) -> Option<PathRecord> {
    let sguid = snap.port_guid(src.0)?;
    let dguid = snap.port_guid(dst.0)?;
    Some(PathRecord {
        sgid: Gid { prefix: snap.subnet_prefix, guid: sguid },
        dgid: Gid { prefix: snap.subnet_prefix, guid: dguid },
        slid: src.1,
        dlid: dst.1,
        mtu: RecMtu::from_raw(w.mtu.raw()),
        rate: rate_code(w.rate_mbps),
        packet_life_time: life_time(snap.packet_life, w),
        ..*template
    })
}

/// Whether `rec` meets the request's MTU, rate and lifetime selectors.
fn wanted(req: &PathRecord, mask: u64, rec: &PathRecord) -> bool {
    let has = |c: u64| mask & c != 0;
    if has(PathRecord::COMP_MTU) && has(PathRecord::COMP_MTU_SELECTOR) {
        let (have, want) = (rec.mtu.raw(), req.mtu.raw());
        if !selected(req.mtu_selector, u32::from(have), u32::from(want)) {
            return false;
        }
    }
    if has(PathRecord::COMP_RATE) && has(PathRecord::COMP_RATE_SELECTOR) {
        let have = rec.rate.mbps().unwrap_or(0);
        let want = req.rate.mbps().unwrap_or(0);
        if !selected(req.rate_selector, have, want) {
            return false;
        }
    }
    if has(PathRecord::COMP_PACKET_LIFE_TIME) && has(PathRecord::COMP_PACKET_LIFE_TIME_SELECTOR) {
        let sel = req.packet_life_time_selector;
        if !selected(sel, u32::from(rec.packet_life_time), u32::from(req.packet_life_time)) {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn life_time_is_the_configured_value_whatever_the_hops() {
        let w = |switches| Walk { switches, mtu: ibsm_mad::attrs::Mtu::M2048, rate_mbps: 10_000, dest: (0, 0) };
        assert_eq!(life_time(18, &w(0)), 0, "loopback");
        assert_eq!(life_time(18, &w(1)), 18);
        assert_eq!(life_time(18, &w(5)), 18);
        assert_eq!(life_time(0x13, &w(9)), 0x13);
    }
}
