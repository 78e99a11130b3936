//! Subnet Administration: answers to SA queries (class 0x03) from a snapshot of the fabric.
//!
//! Owns: the dispatch of an SA request on (method, attribute) to one handler per attribute,
//! each in its own file; ComponentMask selection and the spec's statuses ([`answer`]); the
//! snapshot the answers come from ([`snapshot`]); per-requester admission ([`admission`]).
//! [`serve`] maps a request's bytes to the response bytes: it does no I/O, reads no clock and
//! never panics on what a client sends; what persists between requests (registered services,
//! subscriptions and the Reports in flight, multicast groups, alias GUIDs) is the [`SaState`] that the
//! core's SA component (`core::sa::Sa`) owns and passes in. That component decides whether the
//! SA answers at all (only as master, once a sweep is done) and where the answer goes.
//!
//! Answered today: ClassPortInfo (Get); NodeRecord, PortInfoRecord, SwitchInfoRecord,
//! LinkRecord, LinearForwardingTableRecord, SMInfoRecord, P_KeyTableRecord (Get, GetTable);
//! PathRecord (Get, GetTable); MultiPathRecord (GetMulti); GUIDInfoRecord (Get, GetTable, Set,
//! Delete: alias GUIDs); ServiceRecord (Set, Get, GetTable, Delete); InformInfo (Set) and InformInfoRecord (Get, GetTable); MCMemberRecord (Set, Delete,
//! Get, GetTable); SLtoVLMappingTableRecord and VLArbitrationTableRecord (Get, GetTable).
//! Everything else gets status 0x000c (method/attribute not supported).

pub mod admission;
pub mod answer;
mod class_port_info;
pub mod counts;
pub mod forwarding;
pub mod guid_info_record;
pub mod inform;
pub mod legs;
mod link_record;
pub mod multicast;
mod node_record;
pub mod nodes;
pub mod path_record;
pub mod paths;
mod pkey_table_record;
mod port_info_record;
pub mod service_record;
mod sm_info_record;
pub mod snapshot;
mod switch_info_record;
pub mod vl_tables;

use ibsm_mad::attrs::SmInfo;
use ibsm_mad::header::Method;
use ibsm_mad::ids::{sa_attr, status};
use ibsm_mad::sa::{SA_DATA_LEN, SA_HEADER_LEN, SaHeader};
use ibsm_mad::{Lid, MAD_LEN};

pub use answer::Answer;
pub use path_record::between as path_between;
pub use snapshot::Snapshot;

/// How large an answer may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `Some(n)`: the transport carries single MADs only (ibsim's umad2sim, the in-process
    /// simulator), and only its first `n` bytes intact; a GetTable answer keeps the records
    /// that end within them. `None`: answers go out as one RMPP payload of any length.
    pub single_mad_bytes: Option<usize>,
    /// Most bytes of records in one RMPP answer (default 16 MiB); more are cut and counted.
    pub max_payload: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { single_mad_bytes: None, max_payload: 16 << 20 }
    }
}

impl Limits {
    /// Bytes umad2sim copies intact from an answer (it over-reads its 256-byte buffer by the
    /// size of its own header, so the last 32 bytes of a libibumad client's MAD are garbage).
    pub const UMAD2SIM: Limits = Limits { single_mad_bytes: Some(224), max_payload: 16 << 20 };
    /// The in-process simulator: single 256-byte MADs, all intact.
    pub const SIM: Limits = Limits { single_mad_bytes: Some(MAD_LEN), max_payload: 16 << 20 };

    /// Most records of `stride` bytes one GetTable answer carries.
    pub fn max_records(&self, stride: usize) -> usize {
        let bytes = match self.single_mad_bytes {
            Some(n) => n.min(MAD_LEN).saturating_sub(SA_HEADER_LEN),
            None => self.max_payload,
        };
        bytes / stride.max(1)
    }
}

/// One SA request, parsed.
pub struct Query<'a> {
    /// The SA header.
    pub header: SaHeader,
    /// The record template: the request's data area (200 bytes).
    pub template: &'a [u8],
    /// LID of the requesting port.
    pub requester: Lid,
    /// The request carried the SA key.
    pub trusted: bool,
    /// A MAD buffer to write a one-MAD answer into instead of allocating one (the core's pool
    /// of buffers the driver handed back); its contents are unspecified. Whatever answer does
    /// not take it is handed back by [`serve_parsed`].
    pub spare: std::cell::Cell<Option<Vec<u8>>>,
}

impl std::fmt::Debug for Query<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Query")
            .field("header", &self.header)
            .field("template", &self.template)
            .field("requester", &self.requester)
            .field("trusted", &self.trusted)
            .finish_non_exhaustive()
    }
}

/// What the SA answers with besides the snapshot: the SM's live SMInfo (its ActCount moves),
/// the key that decides trust, and the time.
#[derive(Debug, Clone, Copy)]
pub struct Live {
    /// The SM's SMInfo (its SM_Key is never shown by the SA).
    pub sm_info: SmInfo,
    /// The SA key: a request carrying it in its SM_Key field is trusted (default 1, as OpenSM).
    pub sa_key: u64,
    /// Now, ns on the core's timeline (service leases).
    pub now: u64,
}

impl Live {
    /// A `Live` for `sm_info` with the default keys at time 0.
    pub fn new(sm_info: SmInfo) -> Live {
        Live { sm_info, sa_key: DEFAULT_SA_KEY, now: 0 }
    }
}

/// OpenSM's default SA key, which its clients (and `saquery`) send as trusted.
pub const DEFAULT_SA_KEY: u64 = 1;

/// What the SA keeps between requests.
#[derive(Debug, Clone, Default)]
pub struct SaState {
    /// Registered services.
    pub services: service_record::Services,
    /// Event subscriptions and the Reports in flight.
    pub informs: inform::Informs,
    /// Multicast groups.
    pub mcast: multicast::Groups,
    /// What each switch's multicast table holds (kept by the core's multicast programming).
    pub mfts: forwarding::Mfts,
    /// Every port's SL-to-VL and VL arbitration tables (read by the core's census).
    pub vl: vl_tables::VlTables,
    /// Alias GUIDs (GUIDInfoRecord Set and Delete) and the blocks written to the ports.
    pub aliases: guid_info_record::Aliases,
}

/// Why a request got no answer at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dropped {
    /// Not an SA request we can answer: short, wrong class version, or a response.
    Malformed,
    /// It carried this non-zero SM_Key, which is not the SA key (OpenSM drops such requests).
    BadKey(u64),
}

/// The SM_Key of the SA request with `header` when it is neither zero (untrusted) nor
/// `sa_key` (trusted): such a request is dropped unanswered.
pub fn wrong_key(header: &SaHeader, sa_key: u64) -> Option<u64> {
    let key = header.sm_key;
    (key != 0 && key != sa_key).then_some(key)
}

/// Answers the SA request in `bytes` from `requester` with `snap` and `state`.
pub fn serve(
    snap: &Snapshot,
    state: &mut SaState,
    live: &Live,
    bytes: &[u8],
    requester: Lid,
    limits: &Limits,
) -> Result<Answer, Dropped> {
    serve_parsed(snap, state, live, bytes, SaHeader::from_bytes(bytes).ok(), requester, limits, &mut None)
}

/// [`serve`] for a caller that has read the request's SA header already
/// (`SaHeader::from_bytes(bytes).ok()`: `None` when it does not parse), so that it is read
/// once per request. `spare` is a MAD buffer the answer may be written into (see
/// [`Query::spare`]); it is left there when the answer did not take it.
#[allow(clippy::too_many_arguments)]
pub fn serve_parsed(
    snap: &Snapshot,
    state: &mut SaState,
    live: &Live,
    bytes: &[u8],
    header: Option<SaHeader>,
    requester: Lid,
    limits: &Limits,
    spare: &mut Option<Vec<u8>>,
) -> Result<Answer, Dropped> {
    if bytes.len() < MAD_LEN {
        return Err(Dropped::Malformed);
    }
    let header = header.ok_or(Dropped::Malformed)?;
    if header.method.is_response() {
        return Err(Dropped::Malformed);
    }
    let template = bytes.get(SA_HEADER_LEN..SA_HEADER_LEN + SA_DATA_LEN).ok_or(Dropped::Malformed)?;
    if header.sm_key != 0 && header.sm_key != live.sa_key {
        return Err(Dropped::BadKey(header.sm_key));
    }
    let trusted = header.sm_key == live.sa_key;
    let q = Query { header, template, requester, trusted, spare: std::cell::Cell::new(spare.take()) };
    let h = &q.header;
    let answer = match (h.method, h.attr_id) {
        (Method::Get, sa_attr::CLASS_PORT_INFO) => class_port_info::get(&q),
        (Method::Get | Method::GetTable, sa_attr::NODE_RECORD) => node_record::query(snap, &q, limits),
        (Method::Get | Method::GetTable, sa_attr::PORT_INFO_RECORD) => port_info_record::query(snap, &q, limits),
        (Method::Get | Method::GetTable, sa_attr::SWITCH_INFO_RECORD) => switch_info_record::query(snap, &q, limits),
        (Method::Get | Method::GetTable, sa_attr::LINK_RECORD) => link_record::query(snap, &q, limits),
        (Method::Get | Method::GetTable, sa_attr::LFT_RECORD) => forwarding::lft_query(snap, &q, limits),
        (Method::Get | Method::GetTable, sa_attr::MFT_RECORD) => forwarding::mft_query(snap, &state.mfts, &q, limits),
        (Method::Get | Method::GetTable, sa_attr::SM_INFO_RECORD) => sm_info_record::query(snap, live, &q, limits),
        (Method::Get | Method::GetTable, sa_attr::PATH_RECORD) => path_record::query(snap, &state.aliases, &q, limits),
        (Method::GetMulti, sa_attr::MULTI_PATH_RECORD) => path_record::multi(snap, &state.aliases, &q, limits),
        (Method::Get | Method::GetTable, sa_attr::PKEY_TABLE_RECORD) => pkey_table_record::query(snap, &q, limits),
        (Method::Get | Method::GetTable | Method::Set | Method::Delete, sa_attr::GUID_INFO_RECORD) => {
            state.aliases.query(snap, &q, limits)
        }
        (Method::Get | Method::GetTable | Method::Set | Method::Delete, sa_attr::SERVICE_RECORD) => {
            state.services.query(snap, &q, limits, live.now)
        }
        (Method::Set, sa_attr::INFORM_INFO) => state.informs.set(snap, &q),
        (Method::Get | Method::GetTable | Method::Set | Method::Delete, sa_attr::MC_MEMBER_RECORD) => {
            state.mcast.query(snap, &q, limits)
        }
        (Method::Get | Method::GetTable, sa_attr::INFORM_INFO_RECORD) => state.informs.records(snap, &q, limits),
        (Method::Get | Method::GetTable, sa_attr::SL2VL_RECORD) => vl_tables::sl2vl_query(snap, &state.vl, &q, limits),
        (Method::Get | Method::GetTable, sa_attr::VL_ARB_RECORD) => vl_tables::vlarb_query(snap, &state.vl, &q, limits),
        _ => Answer::error(h, status::BAD_METHOD_ATTR),
    };
    *spare = q.spare.take();
    Ok(answer)
}
