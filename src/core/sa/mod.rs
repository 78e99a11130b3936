//! The SA side of the core: everything the Subnet Administrator keeps between requests and
//! sweeps, as one component ([`Sa`]) that the coordinator (`Sm`) drives with values.
//!
//! Owns the snapshot the SA answers from (the fabric as the last completed sweep left it, an
//! `Arc` swapped in whole: readers never see a sweep half done), the SA's state (services,
//! subscriptions and the Reports in flight, multicast groups and what each switch's multicast
//! table holds, alias GUIDs and what each port was written, the VL tables), how large answers may be ([`crate::sa::Limits`]),
//! per-requester admission, the answers sent by attribute and status, the SA's share of the
//! requests seen, and the census of VL tables ([`census`]). [`crate::sa::serve`] turns a
//! request's bytes into an answer; this module decides whether it is answered at all (only by
//! a master with a sweep done, with the right SA key, within the requester's rate, within the
//! answer queue's bound, once the VL tables are read) and what follows from it.
//!
//! It never reaches into another component: the subnet comes in as an argument where it is
//! needed (multicast tables, the census), the SM's own SMInfo and mastership in the request
//! ([`Asked`]), and the answers go out as values: [`Answered`] (the reply, an event, whether
//! the census waits, whether groups changed and must reach the switches, which replicated
//! section changed), census reads and multicast Sets (`transactions::Request`s for the
//! coordinator to queue), Reports to subscribers ([`Sa::poll_transmit`]). When each happens
//! (master between sweeps, the end of a sweep) is the coordinator's call.
//!
//! Files: [`aliases`] (the GUIDInfo writes alias GUIDs need), [`census`] (when the VL tables
//! are read), [`multicast`] (the MFT blocks the groups
//! need and their programming), [`snapshot`] (the copy a sweep's end takes, and the notices
//! 64-67 for subscribers).

pub(super) mod aliases;
pub(super) mod census;
pub(super) mod multicast;
pub(super) mod snapshot;

use std::collections::HashMap;
use std::sync::Arc;

use ibsm_mad::header::{MadHeader, Method};
use ibsm_mad::ids::status;
use ibsm_mad::{Guid, Lid};

use super::events::{RequestCounters, SmEvent};
use super::io::{self, Address, MadSource, Transmit, TransmitKind};
use super::state::Subnet;
use super::transactions::Outcome;
use crate::sa::admission::{Admission, Admit};
use crate::sa::counts::SaCounts;
use crate::sa::vl_tables::VlRead;
use crate::sa::{Limits, Live, SaState, Snapshot};
use crate::sync::{Replica, Section};
use census::{Census, Hold, Pump};

/// Most answers waiting to be sent; SA requests past it are dropped.
const MAX_QUEUED_ANSWERS: usize = 16_384;

/// The SA as the core runs it (see the module doc).
#[derive(Debug)]
pub(super) struct Sa {
    /// What the SA answers from: the fabric as the last completed sweep left it.
    snapshot: Option<Arc<Snapshot>>,
    /// How large SA answers may be on this SM's transport.
    limits: Limits,
    /// Per-requester rate limits.
    admission: Admission,
    /// Answers by attribute and status.
    counts: SaCounts,
    /// What the SA keeps between requests (services, subscriptions, groups, MFTs, VL tables).
    state: SaState,
    /// The reading of SL-to-VL and VL arbitration tables for the SA.
    census: Census,
    /// SA requests seen, by kind (the `sa_*` fields, and the SA's malformed and unsupported).
    counters: RequestCounters,
    /// The last mark handed to a snapshot ([`Sa::next_mark`]).
    marks: u64,
}

/// An SA request as the coordinator hands it over.
#[derive(Debug)]
pub(super) struct Asked<'a> {
    /// Its common header (already read).
    pub header: &'a MadHeader,
    /// The whole MAD.
    pub bytes: &'a [u8],
    /// Who sent it (the answer goes back there).
    pub src: &'a MadSource,
    /// The SM's SMInfo, the SA key and the time.
    pub live: Live,
    /// This SM is master (only a master's SA answers).
    pub master: bool,
    /// Answers queued and not sent yet.
    pub queued: usize,
    /// A MAD buffer the answer may be written into (the coordinator's pool): see
    /// [`crate::sa::Query::spare`]. Handed back in [`Answered::spare`] when not taken.
    pub spare: Option<Vec<u8>>,
}

/// What SA requests led to that waits until their answers are out (the coordinator's).
#[derive(Debug, Default)]
pub(super) struct AfterAnswers {
    /// Multicast groups changed: the switches' tables follow.
    pub multicast: bool,
    /// Alias GUIDs changed: the ports' GUIDInfo blocks follow.
    pub aliases: bool,
    /// Replicated sections that changed, to publish to the standbys.
    pub publish: std::collections::BTreeSet<Section>,
}

/// What one SA request led to, for the coordinator to carry out in this order.
#[derive(Debug, Default)]
pub(super) struct Answered {
    /// The answer to send (outside the SMP window).
    pub reply: Option<Transmit>,
    /// What to report.
    pub event: Option<SmEvent>,
    /// The request waits for the census (or was dropped waiting): pump it.
    pub census: bool,
    /// Multicast groups changed: the switches' tables follow.
    pub groups_changed: bool,
    /// Alias GUIDs changed: the ports' GUIDInfo blocks follow.
    pub aliases_changed: bool,
    /// The replicated section that changed, to publish to the standbys.
    pub publish: Option<Section>,
    /// [`Asked::spare`], when the answer did not take it.
    pub spare: Option<Vec<u8>>,
}

impl Sa {
    /// An SA with no snapshot yet, admitting `rate` requests per second per requester.
    pub fn new(rate: u32) -> Sa {
        Sa {
            snapshot: None,
            limits: Limits::default(),
            admission: Admission::new(rate),
            counts: SaCounts::default(),
            state: SaState::default(),
            census: Census::default(),
            counters: RequestCounters::default(),
            marks: 0,
        }
    }

    // ---- getters ----

    /// The snapshot of the last completed sweep (`None` before the first).
    pub fn snapshot(&self) -> Option<&Snapshot> {
        self.snapshot.as_deref()
    }

    /// The snapshot, to share with a reader (an `Arc` clone, never a copy).
    pub fn shared(&self) -> Option<Arc<Snapshot>> {
        self.snapshot.clone()
    }

    /// Answers sent, by attribute and status.
    pub fn counts(&self) -> &SaCounts {
        &self.counts
    }

    /// Counters of the Reports to subscribers.
    pub fn report_counters(&self) -> crate::sa::inform::ReportCounters {
        self.state.informs.counters
    }

    /// `seen` (the coordinator's request counters) with the SA's added.
    pub fn add_counters(&self, seen: RequestCounters) -> RequestCounters {
        let s = &self.counters;
        RequestCounters {
            unsupported: seen.unsupported + s.unsupported,
            malformed: seen.malformed + s.malformed,
            sa_answered: seen.sa_answered + s.sa_answered,
            sa_not_ready: seen.sa_not_ready + s.sa_not_ready,
            sa_truncated: seen.sa_truncated + s.sa_truncated,
            sa_busy: seen.sa_busy + s.sa_busy,
            sa_dropped: seen.sa_dropped + s.sa_dropped,
            sa_bad_key: seen.sa_bad_key + s.sa_bad_key,
            ..seen
        }
    }

    /// How many entries the SA's growing tables hold: requesters tracked, services,
    /// subscriptions, nodes with VL tables, requests held for the census, ports with alias GUIDs.
    pub fn sizes(&self) -> [(&'static str, usize); 6] {
        [
            ("sa.requesters", self.admission.tracked()),
            ("sa.services", self.state.services.len()),
            ("sa.subscriptions", self.state.informs.len()),
            ("vl_tables", self.state.vl.len()),
            ("sa.held_for_tables", self.census.held()),
            ("sa.ports_with_aliases", self.state.aliases.len()),
        ]
    }

    /// Multicast group creates refused so far for want of an MLID.
    pub fn mlid_refusals(&self) -> u64 {
        self.state.mcast.refused()
    }

    /// Shares one MLID among the solicited-node groups of a partition and scope.
    pub fn set_consolidate_ipv6_snm(&mut self, on: bool) {
        self.state.mcast.set_consolidate_ipv6_snm(on);
    }

    /// The root switch of `mlid`'s tree (see [`multicast::root_of`]).
    pub fn multicast_root(&self, mlid: Lid) -> Option<Guid> {
        let snap = self.snapshot.as_deref()?;
        let mut members = std::collections::BTreeMap::new();
        for g in self.state.mcast.iter().filter(|g| g.params.mlid == mlid) {
            members.extend(g.members.iter().map(|(&k, &v)| (k, v)));
        }
        let attach = multicast::attachments(snap, &members);
        if attach.is_empty() {
            return None;
        }
        let root = multicast::root_of(snap, &attach)?;
        snap.node(root).map(|n| n.info.node_guid)
    }

    /// The MFT blocks this SM believes `switch` holds (what it wrote there).
    pub fn mft(&self, switch: Guid) -> Option<&multicast::Blocks> {
        self.state.mfts.get(&switch)
    }

    /// What this SM believes `switch`'s multicast table holds for `mlid`: the ports set, or
    /// `None` when it wrote nothing there.
    pub fn programmed_mft(&self, switch: Guid, mlid: Lid) -> Option<Vec<u8>> {
        let (block, entry) = ibsm_mad::attrs::MulticastForwardingTable::locate(mlid)?;
        let held = self.state.mfts.get(&switch)?;
        let mut ports: Vec<u8> = held
            .range((block, 0)..=(block, 15))
            .flat_map(|(&(_, pos), t)| t.masks[entry].ports(pos).map(|p| p.0))
            .collect();
        ports.sort_unstable();
        Some(ports)
    }

    // ---- inputs ----

    /// How large answers may be on the transport.
    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
    }

    /// A new rate limit per requester (a configuration reload).
    pub fn set_rate(&mut self, rate: u32) {
        self.admission.set_rate(rate);
    }

    /// Answers an SA request from the snapshot of the last completed sweep. Before this SM is
    /// master with a sweep done, the request gets no answer (clients retry), as the spec has it.
    pub fn answer(&mut self, asked: Asked<'_>) -> Answered {
        let (h, bytes, src) = (asked.header, asked.bytes, asked.src);
        let mut out = Answered { spare: asked.spare, ..Answered::default() };
        // Borrowed, not cloned: no reference count moves per request.
        let Some(snap) = self.snapshot.as_deref().filter(|_| asked.master) else {
            self.counters.sa_not_ready += 1;
            return out;
        };
        // The SA header, read once for the key check and the answer.
        let sa_header = ibsm_mad::sa::SaHeader::from_bytes(bytes).ok();
        // A wrong non-zero SA key: dropped, counted and reported, never answered (OpenSM's rule;
        // an answer would tell a guesser that its request arrived).
        if let Some(key) = sa_header.as_ref().and_then(|h| crate::sa::wrong_key(h, asked.live.sa_key)) {
            self.counters.sa_bad_key += 1;
            out.event = Some(SmEvent::SaBadKey { from: src.slid, key });
            return out;
        }
        // Answers wait in a bounded queue: past it, requests are dropped (clients retry) and
        // memory stays bounded whatever arrives.
        if asked.queued >= MAX_QUEUED_ANSWERS {
            self.counters.sa_dropped += 1;
            return out;
        }
        // The tables wait for their census (answered when it is done; dropped past its bound,
        // and the client retries).
        if census::wants_tables(h) {
            match self.census.hold(bytes, src) {
                Hold::Answer => {}
                Hold::Held => {
                    out.census = true;
                    return out;
                }
                Hold::Dropped => {
                    self.counters.sa_dropped += 1;
                    out.census = true;
                    return out;
                }
            }
        }
        let reply = |bytes: Vec<u8>| Transmit { bytes, to: src.reply_address(), kind: TransmitKind::Response };
        if self.admission.admit(src.slid, asked.live.now) == Admit::Busy {
            self.counters.sa_busy += 1;
            self.counts.count(h.attr_id, status::BUSY);
            out.reply = super::requests::response_to(bytes, status::BUSY, None).map(reply);
            return out;
        }
        let served = crate::sa::serve_parsed(
            snap,
            &mut self.state,
            &asked.live,
            bytes,
            sa_header,
            src.slid,
            &self.limits,
            &mut out.spare,
        );
        match served {
            Ok(answer) => {
                self.counters.sa_answered += 1;
                self.counts.count(h.attr_id, answer.status);
                if answer.truncated {
                    self.counters.sa_truncated += 1;
                }
                if answer.status == status::BAD_METHOD_ATTR {
                    self.counters.unsupported += 1;
                    out.event = Some(super::requests::unsupported(h, src));
                }
                out.reply = Some(reply(answer.bytes));
                // Group changes reach the switches now, or at the end of the running sweep, and
                // subscribers hear of created and deleted groups (66, 67).
                out.groups_changed = self.state.mcast.take_dirty();
                if self.state.mcast.take_exhausted() {
                    out.event =
                        out.event.or(Some(SmEvent::MlidPoolExhausted { pool: crate::sa::multicast::mlid_pool(snap) }));
                }
                Self::announce_groups(&mut self.state, snap, asked.live.now);
                // A change the standbys must hold too.
                if answer.status == status::OK && matches!(h.method, Method::Set | Method::Delete) {
                    out.publish = match h.attr_id {
                        ibsm_mad::ids::sa_attr::MC_MEMBER_RECORD => Some(Section::Groups),
                        ibsm_mad::ids::sa_attr::SERVICE_RECORD => Some(Section::Services),
                        ibsm_mad::ids::sa_attr::INFORM_INFO => Some(Section::Informs),
                        ibsm_mad::ids::sa_attr::GUID_INFO_RECORD => Some(Section::Aliases),
                        _ => None,
                    };
                    out.aliases_changed = h.attr_id == ibsm_mad::ids::sa_attr::GUID_INFO_RECORD;
                }
            }
            Err(crate::sa::Dropped::BadKey(key)) => {
                self.counters.sa_bad_key += 1;
                out.event = Some(SmEvent::SaBadKey { from: src.slid, key });
            }
            Err(crate::sa::Dropped::Malformed) => {
                self.counters.malformed += 1;
                out.event = Some(SmEvent::MalformedMad { from: src.slid, len: bytes.len() });
            }
        }
        out
    }

    /// Prepares the answers to a burst of requests about to be answered one by one (a
    /// driver's batch, `mads` with each sender's LID), when this SM answers at all (`master`,
    /// a snapshot): the walks of the PathRecord Gets among them are done together, in
    /// lock-step ([`crate::sa::paths::Paths::walk_ahead`]), and each sender's admission bucket
    /// read, so that their cache misses overlap instead of following each other. Changes
    /// nothing any answer says, nor any count.
    pub fn look_ahead<'a>(&self, master: bool, mads: impl Iterator<Item = (&'a [u8], Lid)>) {
        let Some(snap) = self.snapshot.as_deref().filter(|_| master) else { return };
        let mut buckets = 0u64;
        let asks: Vec<crate::sa::paths::Ahead> = mads
            .filter_map(|(bytes, from)| {
                let ask = crate::sa::path_record::ahead(snap, bytes, from)?;
                buckets ^= self.admission.touch(from);
                Some(ask)
            })
            .collect();
        std::hint::black_box(buckets);
        if asks.len() > 1 {
            snap.paths().walk_ahead(&asks);
        }
    }

    /// A sweep ended with `snap` (built from `subnet`) and the partition policy's `groups`:
    /// the SA answers from it now, subscribers hear which ports came and went (64, 65) and
    /// which groups the policy created or deleted (66, 67), and the census forgets the nodes
    /// that left. The coordinator then programs the groups and pumps the census.
    pub fn sweep_done(
        &mut self,
        snap: Arc<Snapshot>,
        groups: &[ibsm_partitions::GroupSpec],
        subnet: &Subnet,
        now: u64,
    ) {
        let old = self.snapshot.take();
        self.announce_changes(old.as_deref(), &snap, now);
        self.state.mcast.apply_policy(groups, &snap);
        self.state.mcast.retain_present(&snap);
        self.state.mcast.take_dirty();
        self.state.aliases.retain_present(&snap);
        Self::announce_groups(&mut self.state, &snap, now);
        self.census.after_sweep(subnet, &mut self.state.vl);
        self.snapshot = Some(snap);
    }

    /// A mark for the next snapshot, never given before by this SA (nonzero): the subnet is
    /// settled with it once the snapshot is taken ([`crate::core::nodes::Nodes::settle`]).
    pub fn next_mark(&mut self) -> u64 {
        self.marks += 1;
        self.marks
    }

    /// A trap's notice: subscribers who share a partition with its issuer hear of it
    /// (o13-17.1.1), once a sweep is done.
    pub fn notify_trap(&mut self, notice: &ibsm_mad::attrs::Notice, now: u64) {
        if let Some(snap) = &self.snapshot {
            let about = crate::sa::inform::Audience::Port(snap.by_lid(notice.issuer_lid));
            self.state.informs.notify(snap, notice, notice.issuer_lid, about, now);
        }
    }

    /// NodeDescriptions read since the snapshot was taken (trap 144): the SA's records show
    /// them. The snapshot is copied only while a reader still holds the old one.
    /// Answers the GUIDs of the nodes whose records changed (the subnet marks them: their
    /// records are no longer as the snapshot was taken).
    pub fn set_node_descs(&mut self, descs: &HashMap<Guid, String>) -> Vec<Guid> {
        let Some(snap) = self.snapshot.as_mut() else { return Vec::new() };
        // Only the nodes whose text changed are copied (and the snapshot, while a reader holds it).
        let changed: Vec<(usize, &String)> = snap
            .nodes
            .iter()
            .enumerate()
            .filter_map(|(n, node)| descs.get(&node.info.node_guid).filter(|d| **d != node.desc).map(|d| (n, d)))
            .collect();
        if changed.is_empty() {
            return Vec::new();
        }
        let snap = Arc::make_mut(snap);
        let mut guids = Vec::with_capacity(changed.len());
        for (n, d) in changed {
            snap.nodes[n].desc.clone_from(d);
            guids.push(snap.nodes[n].info.node_guid);
        }
        guids
    }

    /// The census' next reads (`outstanding` of its SMPs are queued or in flight), and the
    /// held requests to answer now that it is done.
    pub fn census_pump(&mut self, subnet: &Subnet, outstanding: usize) -> Pump {
        self.census.pump(subnet, &mut self.state.vl, outstanding)
    }

    /// A VL table read of the census ended.
    pub fn on_table_read(&mut self, node: Guid, read: VlRead, pass: u32, outcome: &Outcome) {
        self.census.on_read(&mut self.state.vl, node, read, pass, outcome);
    }

    /// A QoS Set of `read`'s table on `node` ended: its answer (the table as the port now holds
    /// it) replaces what the census read, so the records follow what the SM wrote. Nodes the
    /// census has not started are left to it.
    pub fn vl_written(&mut self, node: Guid, read: VlRead, outcome: &Outcome) {
        if let Outcome::Reply { status: 0, data } = outcome
            && self.state.vl.has(node)
        {
            self.state.vl.store(node, read, data);
        }
    }

    /// A MulticastForwardingTable Set to `switch` failed: the block is not held there.
    pub fn mft_failed(&mut self, switch: Guid, key: (u16, u8)) {
        if let Some(held) = self.state.mfts.get_mut(&switch) {
            held.remove(&key);
        }
    }

    /// A subscriber's ReportResp.
    pub fn on_report_resp(&mut self, tid: u64) {
        self.state.informs.on_report_resp(tid);
    }

    /// Reports whose deadline passed are resent or given up.
    pub fn on_timeout(&mut self, now: u64) {
        self.state.informs.on_timeout(now);
    }

    /// The replicated `section` of the SA's state into `r` (groups, services, subscriptions,
    /// alias GUIDs; other sections are not the SA's and are left alone).
    pub fn export(&self, section: Section, r: &mut Replica) {
        match section {
            Section::Groups => {
                r.groups = self.state.mcast.iter().cloned().collect();
                r.next_mgid = self.state.mcast.next_mgid();
            }
            Section::Services => r.services = self.state.services.export(),
            Section::Informs => r.informs = self.state.informs.export(),
            Section::Aliases => r.aliases = self.state.aliases.export(),
            Section::Guid2Lid
            | Section::MKeys
            | Section::PKeys
            | Section::DisabledPorts
            | Section::LftDigests
            | Section::BabblingPorts
            | Section::QosTables => {}
        }
    }

    /// Takes the SA's `section` of a master's replica (a takeover).
    pub fn adopt(&mut self, section: Section, r: &Replica) {
        match section {
            Section::Groups => self.state.mcast.restore(r.groups.clone(), r.next_mgid),
            Section::Services => self.state.services.restore(r.services.clone()),
            Section::Informs => self.state.informs.restore(r.informs.clone()),
            Section::Aliases => self.state.aliases.restore(r.aliases.clone()),
            Section::Guid2Lid
            | Section::MKeys
            | Section::PKeys
            | Section::DisabledPorts
            | Section::LftDigests
            | Section::BabblingPorts
            | Section::QosTables => {}
        }
    }

    // ---- outputs ----

    /// The next Report to a subscriber at `now`.
    pub fn poll_transmit(&mut self, now: u64) -> Option<Transmit> {
        let r = self.state.informs.poll_transmit(now)?;
        let to = Address { lid: r.lid, qpn: r.qpn, qkey: io::GSI_QKEY, pkey_index: 0, sl: 0, grh: None };
        let timeout_ns = crate::sa::inform::REPORT_TIMEOUT_NS;
        Some(Transmit { bytes: r.bytes, to, kind: TransmitKind::Request { timeout_ns } })
    }

    /// When a Report's answer is due next.
    pub fn poll_timeout(&self) -> Option<u64> {
        self.state.informs.poll_timeout()
    }
}

#[cfg(test)]
mod tests {
    use ibsm_mad::attrs::SmInfo;
    use ibsm_mad::ids::sa_attr;
    use ibsm_mad::records::{JoinState, McMemberRecord};
    use ibsm_mad::sa::SaHeader;
    use ibsm_mad::{Gid, PKey};

    use super::*;
    use crate::core::partitions::Partitions;
    use crate::core::programming::Programming;
    use crate::core::testing::star;
    use crate::core::transactions::Req;

    const PREFIX: u64 = 0xfe80_0000_0000_0000;

    /// The star of `testing` with LIDs (the SM 1, the switch 2, the CAs 3 and 4), and its
    /// snapshot with every end port in the default partition.
    fn fabric() -> (Subnet, Arc<Snapshot>) {
        let mut s = star(0x102, 0x103);
        for (n, p, lid) in [(0, 1, 1), (1, 0, 2), (2, 1, 3), (3, 1, 4)] {
            s.nodes[n].ports[p].lid = Lid(lid);
        }
        let (partitions, programming) = (Partitions::default(), Programming::default());
        let mut snap = snapshot::build(
            &snapshot::Sources {
                subnet: &s,
                partitions: &partitions,
                programming: &programming,
                engine: "minhop",
                port_guid: Guid(0x10),
                subnet_prefix: PREFIX,
                lmc: 0,
                subnet_timeout: 18,
                qos: None,
                allow_both_pkeys: false,
                layers: None,
            },
            None,
            0,
        );
        for node in &mut snap.nodes {
            for port in node.ports_mut() {
                port.pkeys = vec![PKey(0xffff)];
            }
        }
        (s, Arc::new(snap))
    }

    /// An SA with `rate` requests per second per requester, after a sweep of [`fabric`] with
    /// the default policy's groups (the IPoIB broadcast group).
    fn swept(rate: u32) -> (Sa, Subnet) {
        let (subnet, snap) = fabric();
        let mut sa = Sa::new(rate);
        let groups = ibsm_partitions::policy_groups(&ibsm_partitions::Policy::no_file(), false).unwrap();
        sa.sweep_done(snap, &groups, &subnet, 0);
        (sa, subnet)
    }

    fn from(lid: u16) -> MadSource {
        MadSource { slid: Lid(lid), sqpn: 1, pkey_index: 0, sl: 0, grh: None }
    }

    /// Hands `bytes` from `src` to `sa` as the coordinator does, as master with nothing queued.
    fn ask(sa: &mut Sa, bytes: &[u8], src: &MadSource, master: bool, queued: usize) -> Answered {
        let header = MadHeader::from_bytes(bytes).unwrap();
        let live = Live::new(SmInfo { guid: Guid(0x10), ..SmInfo::default() });
        sa.answer(Asked { header: &header, bytes, src, live, master, queued, spare: None })
    }

    /// The status of an answer.
    fn status_of(a: &Answered) -> u16 {
        SaHeader::from_bytes(&a.reply.as_ref().expect("an answer").bytes).unwrap().status
    }

    #[test]
    fn only_a_master_with_a_snapshot_answers_and_the_answer_goes_back_to_the_requester() {
        let nodes = SaHeader::request(Method::GetTable, sa_attr::NODE_RECORD, 0, 7).to_mad(&[]).unwrap();
        let mut fresh = Sa::new(0);
        let a = ask(&mut fresh, &nodes, &from(3), true, 0);
        assert!(a.reply.is_none() && a.event.is_none(), "no snapshot yet: silence");
        let (mut sa, _) = swept(0);
        assert!(ask(&mut sa, &nodes, &from(3), false, 0).reply.is_none(), "not master: silence");
        let a = ask(&mut sa, &nodes, &from(3), true, 0);
        let reply = a.reply.as_ref().unwrap();
        assert_eq!((reply.to.lid, reply.to.qpn, reply.kind), (Lid(3), 1, TransmitKind::Response));
        assert_eq!(status_of(&a), status::OK);
        let h = SaHeader::from_bytes(&reply.bytes).unwrap();
        assert_eq!((h.method, h.tid, h.attr_id), (Method::GetTableResp, 7, sa_attr::NODE_RECORD));
        assert!(!a.census && !a.groups_changed && a.publish.is_none() && a.event.is_none());
        let seen = sa.add_counters(RequestCounters { traps: 5, ..RequestCounters::default() });
        assert_eq!((seen.sa_answered, seen.sa_not_ready, seen.traps), (1, 1, 5));
        assert_eq!(fresh.add_counters(RequestCounters::default()).sa_not_ready, 1);
        assert_eq!(sa.counts().total(), 1);
    }

    #[test]
    fn a_wrong_key_a_full_queue_a_flood_and_an_unknown_attribute_are_each_handled_and_counted() {
        let (mut sa, _) = swept(2);
        let mut keyed = SaHeader::request(Method::Get, sa_attr::NODE_RECORD, 0, 1);
        keyed.sm_key = 0x99;
        let keyed = keyed.to_mad(&[0; 108]).unwrap();
        let a = ask(&mut sa, &keyed, &from(3), true, 0);
        assert!(a.reply.is_none());
        assert!(matches!(a.event, Some(SmEvent::SaBadKey { from: Lid(3), key: 0x99 })), "{:?}", a.event);
        let nodes = SaHeader::request(Method::GetTable, sa_attr::NODE_RECORD, 0, 2).to_mad(&[]).unwrap();
        assert!(ask(&mut sa, &nodes, &from(3), true, MAX_QUEUED_ANSWERS).reply.is_none(), "queue full");
        // Two per second: the third at the same time is BUSY; another requester is served.
        assert_eq!(status_of(&ask(&mut sa, &nodes, &from(3), true, 0)), status::OK);
        assert_eq!(status_of(&ask(&mut sa, &nodes, &from(3), true, 0)), status::OK);
        assert_eq!(status_of(&ask(&mut sa, &nodes, &from(3), true, 0)), status::BUSY);
        assert_eq!(status_of(&ask(&mut sa, &nodes, &from(4), true, 0)), status::OK);
        let unknown = SaHeader::request(Method::Get, 0x00ff, 0, 3).to_mad(&[]).unwrap();
        let a = ask(&mut sa, &unknown, &from(4), true, 0);
        assert_eq!(status_of(&a), status::BAD_METHOD_ATTR);
        assert!(matches!(a.event, Some(SmEvent::RequestUnsupported { attr_id: 0x00ff, .. })), "{:?}", a.event);
        let c = sa.add_counters(RequestCounters::default());
        assert_eq!((c.sa_bad_key, c.sa_dropped, c.sa_busy, c.sa_answered, c.unsupported), (1, 1, 1, 4, 1));
        assert_eq!(sa.sizes()[0], ("sa.requesters", 2));
    }

    #[test]
    fn a_request_for_vl_tables_waits_for_the_census_and_is_answered_when_it_is_done() {
        let (mut sa, subnet) = swept(0);
        let req = SaHeader::request(Method::GetTable, sa_attr::SL2VL_RECORD, 0, 4).to_mad(&[]).unwrap();
        let a = ask(&mut sa, &req, &from(3), true, 0);
        assert!(a.census && a.reply.is_none(), "held for the census");
        assert_eq!(sa.sizes()[4], ("sa.held_for_tables", 1));
        let mut answered = Vec::new();
        for _ in 0..100 {
            let pump = sa.census_pump(&subnet, 0);
            if !pump.answer.is_empty() {
                answered = pump.answer;
                break;
            }
            assert!(!pump.reads.is_empty(), "the census stalled");
            for r in pump.reads {
                let Req::GetVlTable { node, read, pass, .. } = r.req else { panic!("{r:?}") };
                sa.on_table_read(node, read, pass, &Outcome::Reply { status: 0, data: [0; 64] });
            }
        }
        assert_eq!(answered.len(), 1);
        let (bytes, src) = &answered[0];
        assert_eq!(bytes.as_slice(), &req[..]);
        let a = ask(&mut sa, bytes, src, true, 0);
        assert!(!a.census);
        assert_eq!(status_of(&a), status::OK);
        assert_eq!(sa.sizes()[3], ("vl_tables", 4), "every node's tables");
    }

    #[test]
    fn a_join_changes_the_groups_the_switch_gets_its_block_once_and_again_after_a_failed_write() {
        let (mut sa, subnet) = swept(0);
        assert!(sa.multicast_sets(&subnet).is_empty(), "the broadcast group has no member yet");
        let join = McMemberRecord {
            mgid: crate::sa::multicast::IPOIB_BROADCAST,
            port_gid: Gid { prefix: PREFIX, guid: Guid(0x102) },
            join_state: JoinState::FULL_MEMBER,
            ..McMemberRecord::default()
        };
        let mask = McMemberRecord::COMP_MGID | McMemberRecord::COMP_PORT_GID | McMemberRecord::COMP_JOIN_STATE;
        let req = ibsm_mad::sa::request(Method::Set, mask, 5, &join).unwrap();
        let a = ask(&mut sa, &req, &from(3), true, 0);
        assert_eq!(status_of(&a), status::OK);
        assert!(a.groups_changed);
        assert_eq!(a.publish, Some(Section::Groups));
        assert!(sa.multicast_sets(&subnet).is_empty(), "one member port: no tree, as OpenSM");
        let second = McMemberRecord { port_gid: Gid { prefix: PREFIX, guid: Guid(0x103) }, ..join };
        let req = ibsm_mad::sa::request(Method::Set, mask, 6, &second).unwrap();
        assert_eq!(status_of(&ask(&mut sa, &req, &from(4), true, 0)), status::OK);
        let sets = sa.multicast_sets(&subnet);
        let blocks: Vec<_> = sets
            .iter()
            .map(|r| match &r.req {
                Req::SetMft { switch, block, position, .. } => (*switch, *block, *position),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(blocks, [(Guid(0x20), 0, 0)]);
        assert_eq!(sa.programmed_mft(Guid(0x20), Lid(0xc000)), Some(vec![2, 3]), "toward the members on ports 2 and 3");
        assert!(sa.multicast_sets(&subnet).is_empty(), "held: nothing to write again");
        sa.mft_failed(Guid(0x20), (0, 0));
        assert_eq!(sa.multicast_sets(&subnet).len(), 1, "a failed write is written again");
    }
}
