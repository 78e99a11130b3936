//! The SMP transaction layer: a window of requests in flight, TIDs, timeouts and retries.
//!
//! Owns: the queue of requests not yet sent, the table of requests in flight keyed by the low
//! 32 bits of their TID (the kernel and simulators overwrite the upper 32), each request's
//! deadline and remaining tries, the SMP counters, and the pool of MAD buffers the drivers
//! hand back ([`super::mad_pool`]), which the SMPs are written into. It builds the SMP bytes
//! with the `mad` crate; it knows nothing about what a request means (that is the [`Req`] the
//! caller attached).
//!
//! A long run of requests (a bring-up's 1.38 million LFT Sets at k = 48) is queued as a [`Feed`]
//! that makes each request when the window takes it: queued whole, they held about 500 MB.
//!
//! Guarantees: at most `window` requests are in flight; a request is retried after its timeout
//! or a Busy status until its tries run out, then reported exactly once as failed.
//!
//! Books per operation: every request belongs to an [`Op`] (a sweep, and the work that runs
//! beside sweeps as later parts of the SM add it: a standby's SMInfo polls, key and table
//! updates, trap follow-ups). All operations share one window, but each keeps its own count of
//! requests queued or in flight, so a sweep's phase advances when *its* requests are done,
//! whatever else is in flight ([`Transactions::is_idle_for`]).

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use ibsm_mad::attrs::{
    CapabilityMask, CapabilityMask2, GuidInfo, LinearForwardingTable, MulticastForwardingTable, PKeyTable, PortInfo,
    SM_SUPPORTS_EXTENDED_SPEEDS, SlToVlTable, SmInfo, SwitchInfo, VlArbitrationTable,
};
use ibsm_mad::header::Method;
use ibsm_mad::ids::status;
use ibsm_mad::sm_smp::{DrRequest, SmpAnswer};
use ibsm_mad::smp::SMP_DATA_LEN;
use ibsm_mad::{Attribute, DrPath, Guid, MKey, PortNum, ids};
use ibsm_routing::Lft;

use super::events::SmpFailure;
use super::io::{Address, Transmit, TransmitKind};
use super::lft::block_of;
use super::mad_pool::MadPool;
use super::state::NodeIdx;

/// What a PortInfo Set is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PortStep {
    /// LID, LMC, MasterSMLID, SubnetTimeout, NeighborMTU, OperationalVLs.
    Configure,
    /// PortState = Armed.
    Arm,
    /// PortState = Active.
    Activate,
    /// PortPhysicalState Disabled or Polling, between sweeps: asked by an operator (`ibsm port`)
    /// or by the babbling-port policy. Its answer is not the sweep's: a heavy sweep follows it
    /// and reads the port (see `coordinator::maintenance`).
    Toggle,
}

/// A request and the context its answer is handled in.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Req {
    /// NodeInfo along `path`; `from` is the port the path leaves last (None for the local node).
    NodeInfo { from: Option<(NodeIdx, PortNum)> },
    /// NodeInfo along `path` again: the node there gave a GUID already found elsewhere.
    ConfirmNodeInfo { from: (NodeIdx, PortNum) },
    /// NodeDescription of a node.
    NodeDesc { node: NodeIdx },
    /// PortInfo of one port.
    GetPortInfo { node: NodeIdx, port: PortNum },
    /// PortInfo of one port again, with SMSupportExtendedSpeeds (AM bit 31): its first read
    /// said it has IBTA 1.7's extended speeds 2 (XDR), which it reports only to such a read.
    GetPortInfoExt { node: NodeIdx, port: PortNum },
    /// SwitchInfo of a switch.
    GetSwitchInfo { node: NodeIdx },
    /// A light sweep's SwitchInfo read (PortStateChange says a port changed state).
    LightSwitchInfo { node: NodeIdx },
    /// A quick sweep's PortInfo read of a switch port that may have changed.
    CheckPortInfo { node: NodeIdx, port: PortNum },
    /// NodeDescription of a node whose trap 144 says it changed (outside a sweep).
    ReadNodeDesc { guid: ibsm_mad::Guid, port: PortNum },
    /// One LFT block read back before programming.
    GetLft { node: NodeIdx, block: u32 },
    /// PortInfo Set.
    SetPortInfo { node: NodeIdx, port: PortNum, info: PlannedInfo, step: PortStep },
    /// SwitchInfo Set.
    SetSwitchInfo { node: NodeIdx, info: SwitchInfo },
    /// One LFT block write: block `block` of the plan's `table`.
    SetLft { node: NodeIdx, block: u32, table: PlannedLft },
    /// One P_KeyTable block write of an end port (`guid`: the port's GUID).
    SetPKeys { node: NodeIdx, port: PortNum, guid: Guid, block: u16, table: Box<PKeyTable> },
    /// One SL-to-VL table write (QoS): of end port `port` (input and output 0), or of a
    /// switch's pair of ports (the request goes to the switch, `port` is 0). `guid` is the
    /// node's GUID.
    SetSl2Vl {
        node: NodeIdx,
        port: PortNum,
        guid: Guid,
        input: u8,
        output: u8,
        /// The one-Set form: every input port of `output` at once (`use-optimized-slvl`).
        all_inputs: bool,
        table: SlToVlTable,
    },
    /// One VL arbitration block write (QoS): of end port `port`, or of switch port `output`.
    SetVlArb { node: NodeIdx, port: PortNum, guid: Guid, output: u8, block: u16, table: Box<VlArbitrationTable> },
    /// One GUIDInfo block write (alias GUIDs) of end port `port` of `node` (`guid`: the port's
    /// GUID), between sweeps.
    SetGuidInfo { node: NodeIdx, port: PortNum, guid: Guid, block: u8, info: Box<GuidInfo> },
    /// One MFT block write (multicast programming, between sweeps: the switch by GUID).
    SetMft { switch: Guid, block: u16, position: u8, table: Box<MulticastForwardingTable> },
    /// SMInfo of another SM found in discovery (its port has IsSM); `key`: this SM's SM_Key,
    /// presented in the request so that an SM with the same key shows it.
    GetSmInfo { node: NodeIdx, port: PortNum, key: u64 },
    /// A light sweep's SMInfo read of an SM the last heavy sweep found.
    LightSmInfo { guid: ibsm_mad::Guid, key: u64 },
    /// The end of discovery's SMInfo read, again, of the SM that handed this SM the subnet
    /// and read as master (see `election`).
    RereadSmInfo { guid: ibsm_mad::Guid, key: u64 },
    /// A standby's poll of the master's SMInfo (`master`: its port GUID), carrying the
    /// standby's own SMInfo with its SM_Key.
    PollMaster { master: Guid, info: SmInfo },
    /// A standby's read of the PortInfo of the master's port (`master`: its port GUID) by the
    /// route it polls it at, modifier 0 (the port the route enters a CA by, a switch's port
    /// 0): the LID the master sends its state sync from, when the standby found the master
    /// before it had one.
    MasterLid { master: Guid },
    /// SubnSet(SMInfo) with a control (AttributeModifier: 1 HANDOVER, 2 ACKNOWLEDGE, 3
    /// DISABLE, 4 STANDBY, 5 DISCOVER) to the SM at port `to`, carrying this SM's SMInfo.
    SetSmInfo { to: Guid, control: u32, info: SmInfo },
    /// One SL-to-VL or VL arbitration table of node `node` (a switch, or a CA at port `port`),
    /// for the census of pass `pass`.
    GetVlTable { node: Guid, port: PortNum, switch: bool, read: crate::sa::vl_tables::VlRead, pass: u32 },
}

impl Req {
    /// Attribute id, modifier, method and payload of the SMP for this request.
    fn smp_fields(&self) -> (u16, u32, Method, [u8; SMP_DATA_LEN]) {
        let mut data = [0u8; SMP_DATA_LEN];
        match self {
            Req::NodeInfo { .. } | Req::ConfirmNodeInfo { .. } => (ids::attr::NODE_INFO, 0, Method::Get, data),
            Req::NodeDesc { .. } | Req::ReadNodeDesc { .. } => (ids::attr::NODE_DESC, 0, Method::Get, data),
            Req::GetPortInfo { port, .. } | Req::CheckPortInfo { port, .. } => {
                (ids::attr::PORT_INFO, u32::from(port.0), Method::Get, data)
            }
            Req::MasterLid { .. } => (ids::attr::PORT_INFO, 0, Method::Get, data),
            Req::GetPortInfoExt { port, .. } => {
                (ids::attr::PORT_INFO, u32::from(port.0) | SM_SUPPORTS_EXTENDED_SPEEDS, Method::Get, data)
            }
            Req::GetSwitchInfo { .. } | Req::LightSwitchInfo { .. } => (ids::attr::SWITCH_INFO, 0, Method::Get, data),
            Req::GetSmInfo { key, .. } | Req::LightSmInfo { key, .. } | Req::RereadSmInfo { key, .. } => {
                SmInfo { sm_key: *key, ..SmInfo::default() }.emit(&mut data);
                (ids::attr::SM_INFO, 0, Method::Get, data)
            }
            Req::PollMaster { info, .. } => {
                info.emit(&mut data);
                (ids::attr::SM_INFO, 0, Method::Get, data)
            }
            Req::SetSmInfo { control, info, .. } => {
                info.emit(&mut data);
                (ids::attr::SM_INFO, *control, Method::Set, data)
            }
            Req::GetLft { block, .. } => (ids::attr::LFT, *block, Method::Get, data),
            Req::GetVlTable { switch, read, .. } => {
                let (attr, modifier) = read.smp(*switch);
                (attr, modifier, Method::Get, data)
            }
            Req::SetPortInfo { port, info, .. } => {
                info.emit(&mut data);
                let ext = if has_extended_speeds2(info) { SM_SUPPORTS_EXTENDED_SPEEDS } else { 0 };
                (ids::attr::PORT_INFO, u32::from(port.0) | ext, Method::Set, data)
            }
            Req::SetSwitchInfo { info, .. } => {
                info.emit(&mut data);
                (ids::attr::SWITCH_INFO, 0, Method::Set, data)
            }
            Req::SetLft { block, table, .. } => {
                table.block(*block).emit(&mut data);
                (ids::attr::LFT, *block, Method::Set, data)
            }
            Req::SetPKeys { port, block, table, .. } => {
                table.emit(&mut data);
                (ids::attr::PKEY_TABLE, PKeyTable::attr_mod(*port, *block), Method::Set, data)
            }
            Req::SetSl2Vl { input, output, all_inputs, table, .. } => {
                table.emit(&mut data);
                let all = if *all_inputs { SlToVlTable::ALL_INPUTS } else { 0 };
                (
                    ids::attr::SL2VL_TABLE,
                    SlToVlTable::attr_mod(PortNum(*input), PortNum(*output)) | all,
                    Method::Set,
                    data,
                )
            }
            Req::SetVlArb { output, block, table, .. } => {
                table.emit(&mut data);
                (ids::attr::VL_ARB_TABLE, VlArbitrationTable::attr_mod(*block, PortNum(*output)), Method::Set, data)
            }
            Req::SetMft { block, position, table, .. } => {
                table.emit(&mut data);
                (ids::attr::MFT, MulticastForwardingTable::attr_mod(*block, *position), Method::Set, data)
            }
            Req::SetGuidInfo { block, info, .. } => {
                info.emit(&mut data);
                (ids::attr::GUID_INFO, u32::from(*block), Method::Set, data)
            }
        }
    }
}

/// The table an LFT Set writes a block of: the plan's table for the switch, shared, and the
/// block read from it when the SMP is written (and again for a retry). A Set carried a copy of
/// its block in a box of its own: a `malloc` and a `free` for each of the 1.38 million Sets of
/// a k = 48 bring-up. The plan's table does not change while its Sets are out (a new plan is
/// a new table).
#[derive(Clone)]
pub(crate) struct PlannedLft(pub Arc<Lft>);

impl PlannedLft {
    /// Block `block` as the attribute carries it.
    pub fn block(&self, block: u32) -> LinearForwardingTable {
        block_of(&self.0, block)
    }
}

impl std::fmt::Debug for PlannedLft {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlannedLft").field("lids", &self.0.len()).finish()
    }
}

impl PartialEq for PlannedLft {
    fn eq(&self, other: &PlannedLft) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || *self.0 == *other.0
    }
}

/// The PortInfo a PortInfo Set writes: one of a batch built together (a configuration's Sets,
/// a port-state walk's), shared by the batch's Sets, in the order they go. A Set carried its
/// PortInfo in a box of its own: a `malloc` and a `free` for each of the 360,000 PortInfo Sets
/// of a k = 48 bring-up, freed as the answers came, which kept glibc's `_int_free` at 9 % of the
/// activation. A batch does not change while its Sets are out.
#[derive(Clone)]
pub(crate) struct PlannedInfo {
    batch: Arc<Vec<PortInfo>>,
    at: u32,
}

impl PlannedInfo {
    /// A Set's PortInfo alone (a Set made on its own, between sweeps).
    pub fn one(info: PortInfo) -> PlannedInfo {
        PlannedInfo { batch: Arc::new(vec![info]), at: 0 }
    }

    /// Entry `at` of `batch`; None past its end.
    pub fn of(batch: &Arc<Vec<PortInfo>>, at: usize) -> Option<PlannedInfo> {
        let at32 = u32::try_from(at).ok()?;
        (at < batch.len()).then(|| PlannedInfo { batch: Arc::clone(batch), at: at32 })
    }
}

impl std::ops::Deref for PlannedInfo {
    type Target = PortInfo;

    fn deref(&self) -> &PortInfo {
        // `at` is within the batch: [`PlannedInfo::of`] checks it, and a batch never shrinks.
        &self.batch[self.at as usize]
    }
}

impl std::fmt::Debug for PlannedInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

impl PartialEq for PlannedInfo {
    fn eq(&self, other: &PlannedInfo) -> bool {
        **self == **other
    }
}

/// The operation a request belongs to: its own book of outstanding requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Op {
    /// The running sweep (discovery, configuration, LFTs, port states).
    Sweep,
    /// Multicast table programming after the SA's groups changed.
    Multicast,
    /// GUIDInfo writes after the SA's alias GUIDs changed.
    Aliases,
    /// A standby's polls of the master, and SMInfo controls (HANDOVER ...) to other SMs.
    Election,
    /// A light sweep between heavy ones (every switch's SwitchInfo).
    Light,
    /// The census of SL-to-VL and VL arbitration tables (between sweeps).
    Census,
    /// Stands for other work beside a sweep in the tests of this layer.
    #[cfg(test)]
    Aside,
}

impl Op {
    const COUNT: usize = if cfg!(test) { 7 } else { 6 };

    fn index(self) -> usize {
        match self {
            Op::Sweep => 0,
            Op::Multicast => 1,
            Op::Election => 2,
            Op::Light => 3,
            Op::Census => 4,
            Op::Aliases => 5,
            #[cfg(test)]
            Op::Aside => 6,
        }
    }
}

/// A request with its directed route.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Request {
    /// The route to the node (and, for CA ports, through the port) the SMP is about.
    pub path: DrPath,
    /// What it asks and why.
    pub req: Req,
    /// The operation whose book it is counted in.
    pub op: Op,
}

impl Request {
    /// A request of the running sweep.
    pub fn sweep(path: DrPath, req: Req) -> Request {
        Request { path, req, op: Op::Sweep }
    }

    /// The node a configuration request is about, if it names one by index.
    fn node(&self) -> Option<NodeIdx> {
        match &self.req {
            Req::SetPortInfo { node, .. }
            | Req::SetSwitchInfo { node, .. }
            | Req::SetPKeys { node, .. }
            | Req::SetSl2Vl { node, .. }
            | Req::SetVlArb { node, .. }
            | Req::SetLft { node, .. } => Some(*node),
            _ => None,
        }
    }
}

/// How many nodes a sweep's Sets are spread over at a time ([`interleaved`], the LFT plans)
/// for a window of `window` SMPs in flight: four windows.
pub(crate) fn spread(window: usize) -> usize {
    window.saturating_mul(4).max(1)
}

/// `sets` reordered round-robin over their nodes, `spread` nodes at a time: the first request
/// of each of the first `spread` nodes in turn, then the second, and so on, a node that has
/// none left making room for the next node in the list; a node's own requests keep their
/// order. A node's agent serves one SMP at a time, so requests queued node after node would
/// keep the window waiting on one agent; with `spread` a few windows' worth ([`spread`]) a
/// node's next request goes out after its last
/// was answered, and the nodes being written are few enough for their records (here and, in
/// the simulator, at the far end) to stay in cache from one request to the next (all 30,528
/// nodes of the k = 48 tree in turn were not). Requests are grouped by runs of the same node,
/// as callers list them node by node. Lazy: the requests stay where they are and are moved
/// out in the new order as they are taken (queued as a [`Feed`], a bring-up's 200,000
/// PortInfo Sets are not copied twice more).
pub(crate) fn interleaved(sets: Vec<Request>, spread: usize) -> Interleaved {
    let order = interleave_order(sets.len(), |i| sets[i].node(), spread);
    Interleaved { items: sets.into_iter().map(Some).collect(), order, next: 0 }
}

/// The order in which [`interleaved`] takes `len` items whose nodes `node(i)` gives: a caller
/// that knows its items' nodes before it builds them builds them in this order (and
/// queues them as they are), instead of moving them about afterwards.
pub(crate) fn interleave_order<K: PartialEq>(len: usize, node: impl Fn(usize) -> Option<K>, spread: usize) -> Vec<u32> {
    // Where each run starts and ends, then the order: the runs in turn, `spread` at a time.
    let mut starts: Vec<usize> = Vec::new();
    let mut last = None;
    for i in 0..len {
        let k = node(i);
        if i == 0 || k.is_none() || k != last {
            starts.push(i);
        }
        last = k;
    }
    let ends: Vec<usize> = starts.iter().skip(1).copied().chain(std::iter::once(len)).collect();
    let mut runs = starts.iter().zip(&ends).map(|(&a, &b)| (a, b));
    let mut turn: VecDeque<(usize, usize)> = runs.by_ref().take(spread.max(1)).collect();
    let mut order = Vec::with_capacity(len);
    while let Some((a, b)) = turn.pop_front() {
        order.extend(u32::try_from(a).ok());
        if a + 1 < b {
            turn.push_back((a + 1, b));
        } else {
            turn.extend(runs.next());
        }
    }
    order
}

/// Requests in [`interleaved`] order, each moved out as it is taken.
#[derive(Debug)]
pub(crate) struct Interleaved {
    items: Vec<Option<Request>>,
    order: Vec<u32>,
    next: usize,
}

impl Iterator for Interleaved {
    type Item = Request;

    fn next(&mut self) -> Option<Request> {
        while let Some(&i) = self.order.get(self.next) {
            self.next += 1;
            if let Some(r) = self.items.get_mut(i as usize).and_then(Option::take) {
                return Some(r);
            }
        }
        None
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.order.len().saturating_sub(self.next);
        (n, Some(n))
    }
}

impl ExactSizeIterator for Interleaved {}

/// How a request ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Outcome {
    /// A GetResp arrived: its status and data area.
    Reply { status: u16, data: [u8; SMP_DATA_LEN] },
    /// Every try timed out.
    Timeout,
}

#[derive(Debug)]
struct InFlight {
    request: Request,
    attr_id: u16,
    attr_mod: u32,
    deadline: u64,
    tries_left: u32,
}

/// Counters of SMP traffic.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counters {
    pub sent: u64,
    pub retried: u64,
    pub failed: u64,
    /// Waits for an answer that ran out (retried or not).
    pub timed_out: u64,
}

/// The low 32 bits of the TID of the `n`th SMP sent under `key`: a bijection of the count on
/// 32 bits (xor with the key, then multiply by odd constants and xor-shift, each step
/// invertible), so TIDs do not repeat for 2^32 SMPs, yet neither start at 1 nor follow one
/// another: another host cannot guess the TID of an SMP in flight and forge its answer without
/// the key, which the daemon draws at random at start (tests use a fixed one). An answer must
/// also carry the request's attribute and modifier to be taken ([`Transactions::on_response`]).
pub(crate) fn tid_of(n: u32, key: u64) -> u32 {
    let mut x = n ^ (key as u32);
    x = x.wrapping_mul(0x9e37_79b1);
    x ^= x >> 15;
    x = x.wrapping_mul(0x85eb_ca77 | 1);
    x ^= x >> 13;
    x ^ ((key >> 32) as u32)
}

/// The hash of a TID in the table of requests in flight: one multiplication. The TIDs it
/// holds are [`tid_of`]'s, spread over 32 bits already and chosen by this SM (an answer's TID,
/// which anyone can send, is only looked up), so the keyed SipHash of `std` bought nothing
/// here but its cost, paid about five times an SMP.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct TidHasher(u64);

impl Hasher for TidHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_u32(&mut self, n: u32) {
        // Fibonacci hashing: the multiplication moves the TID's bits into the high ones the
        // table's control bytes are taken from.
        self.0 = (u64::from(n) ^ self.0).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// Requests made one at a time, as the window takes them, in the order they are to be sent.
/// Its length is how many it will still make.
pub(crate) trait Feed: ExactSizeIterator<Item = Request> + std::fmt::Debug + Send {}

impl<T: ExactSizeIterator<Item = Request> + std::fmt::Debug + Send> Feed for T {}

/// One entry of the queue: a request and its tries left, or a feed of requests of one
/// operation, each with `tries` left, of which `left` are still to come.
#[derive(Debug)]
enum Queued {
    One(Request, u32),
    Feed { feed: Box<dyn Feed>, op: Op, tries: u32, left: usize },
}

/// The window of SMPs.
#[derive(Debug)]
pub(crate) struct Transactions {
    queue: VecDeque<Queued>,
    /// Requests queued, those feeds will still make included.
    queued: usize,
    in_flight: HashMap<u32, InFlight, BuildHasherDefault<TidHasher>>,
    /// The deadlines of the requests in flight with their TIDs, earliest first, so that the
    /// next deadline is read off the front rather than found among all in flight (the driver
    /// asks after every event). SMPs go out with nondecreasing deadlines while the timeout
    /// stays, so a new one goes at the back (after a reload that shortened the timeout, in its
    /// place). An answered request's entry stays until it reaches the front; the front entry
    /// is always one still in flight ([`Transactions::prune`]).
    deadlines: VecDeque<(u64, u32)>,
    /// Requests queued or in flight, per operation.
    outstanding: [usize; Op::COUNT],
    /// SMPs given a TID so far; the TID is this count through [`tid_of`].
    tids_given: u32,
    /// The key of the TID permutation ([`tid_of`]).
    tid_key: u64,
    window: usize,
    timeout_ns: u64,
    retries: u32,
    /// Buffers the drivers handed back, for the SMPs sent next.
    pool: MadPool,
    pub counters: Counters,
}

impl Transactions {
    /// New window, timeout and retries (a reload): SMPs in flight keep the deadline they were
    /// sent with; the window takes effect as they complete.
    pub fn set_limits(&mut self, window: usize, timeout_ns: u64, retries: u32) {
        self.window = window.max(1);
        self.timeout_ns = timeout_ns.max(1);
        self.retries = retries;
    }

    /// Most requests in flight at once.
    pub fn window(&self) -> usize {
        self.window
    }

    /// Requests queued (those a feed will still make included) and in flight.
    pub fn sizes(&self) -> (usize, usize) {
        (self.queued, self.in_flight.len())
    }

    #[cfg(test)]
    pub fn new(window: usize, timeout_ns: u64, retries: u32) -> Transactions {
        Transactions::keyed(window, timeout_ns, retries, 0)
    }

    /// As [`Transactions::new`], the TIDs permuted under `tid_key` ([`tid_of`]).
    pub fn keyed(window: usize, timeout_ns: u64, retries: u32, tid_key: u64) -> Transactions {
        Transactions {
            queue: VecDeque::new(),
            queued: 0,
            in_flight: HashMap::default(),
            deadlines: VecDeque::new(),
            outstanding: [0; Op::COUNT],
            tids_given: 0,
            tid_key,
            window: window.max(1),
            timeout_ns: timeout_ns.max(1),
            retries,
            pool: MadPool::default(),
            counters: Counters::default(),
        }
    }

    /// Queues a request (sent in FIFO order as the window allows).
    pub fn push(&mut self, request: Request) {
        self.push_with_retries(request, self.retries);
    }

    /// Queues a request that is retried at most `retries` times (a standby's poll: a missed
    /// answer is the news, not something to wait out).
    pub fn push_with_retries(&mut self, request: Request, retries: u32) {
        self.outstanding[request.op.index()] += 1;
        self.queued += 1;
        self.queue.push_back(Queued::One(request, retries));
    }

    /// Queues the requests `feed` makes, each of operation `op`, made one at a time as the
    /// window takes them (after what is queued now, before what is queued later).
    pub fn push_feed(&mut self, feed: impl Feed + 'static, op: Op) {
        let left = feed.len();
        if left == 0 {
            return;
        }
        self.outstanding[op.index()] += left;
        self.queued += left;
        self.queue.push_back(Queued::Feed { feed: Box::new(feed), op, tries: self.retries, left });
    }

    /// The request at the head of the queue, taken off it with its tries left (a feed makes
    /// its next one; a feed that ends short of what it promised gives the rest back to its
    /// operation's book).
    fn pop_next(&mut self) -> Option<(Request, u32)> {
        loop {
            match self.queue.front_mut()? {
                Queued::One(..) => {
                    let Some(Queued::One(request, tries)) = self.queue.pop_front() else { return None };
                    self.queued -= 1;
                    return Some((request, tries));
                }
                Queued::Feed { feed, op, tries, left } => {
                    let (op, tries) = (*op, *tries);
                    if let Some(request) = feed.next() {
                        *left -= 1;
                        self.queued -= 1;
                        if *left == 0 {
                            self.queue.pop_front();
                        }
                        if request.op != op {
                            // Counted in its own book, not the feed's.
                            self.outstanding[request.op.index()] += 1;
                            self.settle_op(op);
                        }
                        return Some((request, tries));
                    }
                    let n = *left;
                    self.queue.pop_front();
                    self.queued -= n;
                    let count = &mut self.outstanding[op.index()];
                    *count = count.saturating_sub(n);
                }
            }
        }
    }

    /// Nothing queued and nothing in flight, of any operation.
    #[cfg(test)]
    pub fn is_idle(&self) -> bool {
        self.queue.is_empty() && self.in_flight.is_empty()
    }

    /// Nothing of `op` queued or in flight.
    pub fn is_idle_for(&self, op: Op) -> bool {
        self.outstanding[op.index()] == 0
    }

    /// Requests of `op` queued or in flight.
    pub fn outstanding_for(&self, op: Op) -> usize {
        self.outstanding[op.index()]
    }

    /// Puts `request` back at the head of the queue (a retry, or a feed's request peeked at).
    fn requeue(&mut self, request: Request, tries: u32) {
        self.queued += 1;
        self.queue.push_front(Queued::One(request, tries));
    }

    /// Closes `request`'s entry in its operation's book.
    fn settle(&mut self, request: &Request) {
        self.settle_op(request.op);
    }

    /// Closes one entry in `op`'s book.
    fn settle_op(&mut self, op: Op) {
        let n = &mut self.outstanding[op.index()];
        *n = n.saturating_sub(1);
    }

    /// The request [`Transactions::poll_transmit`] would send next, if the window has room
    /// (made now if a feed is next).
    pub fn peek(&mut self) -> Option<&Request> {
        if self.in_flight.len() >= self.window {
            return None;
        }
        if matches!(self.queue.front(), Some(Queued::Feed { .. })) {
            let (request, tries) = self.pop_next()?;
            self.requeue(request, tries);
        }
        match self.queue.front() {
            Some(Queued::One(r, _)) => Some(r),
            _ => None,
        }
    }

    /// The next SMP to send, if the window has room, with M_Key 0.
    #[cfg(test)]
    pub fn poll_transmit(&mut self, now: u64) -> Option<Transmit> {
        self.poll_transmit_keyed(now, MKey(0))
    }

    /// The next SMP to send, if the window has room, carrying `m_key` (the key of the port
    /// that checks it: the caller looked it up for [`Transactions::peek`]'s request).
    pub fn poll_transmit_keyed(&mut self, now: u64, m_key: MKey) -> Option<Transmit> {
        if self.in_flight.len() >= self.window {
            return None;
        }
        let (request, tries_left) = self.pop_next()?;
        let tid = self.fresh_tid();
        let (attr_id, attr_mod, method, data) = request.req.smp_fields();
        // Written where it goes, with nothing built between (a repr with both routes was
        // copied three times on its way to the heap: ~600 instructions an SMP), into a buffer
        // a driver handed back when there is one.
        let mut bytes = self.pool.take();
        DrRequest { path: &request.path, method, attr_id, attr_mod, tid: u64::from(tid), m_key, data: &data }
            .emit(&mut bytes);
        self.counters.sent += 1;
        let deadline = now.saturating_add(self.timeout_ns);
        if self.deadlines.back().is_none_or(|&(d, _)| d <= deadline) {
            self.deadlines.push_back((deadline, tid));
        } else {
            let at = self.deadlines.partition_point(|&(d, _)| d <= deadline);
            self.deadlines.insert(at, (deadline, tid));
        }
        self.in_flight.insert(tid, InFlight { request, attr_id, attr_mod, deadline, tries_left });
        Some(Transmit {
            bytes: Vec::from(bytes as Box<[u8]>),
            to: Address::DIRECTED_ROUTE,
            kind: TransmitKind::Request { timeout_ns: self.timeout_ns },
        })
    }

    /// Takes back a MAD buffer a driver is done with, for a later SMP (kept if it is one MAD
    /// long and the pool has room).
    pub fn recycle(&mut self, bytes: Vec<u8>) {
        self.pool.give(bytes);
    }

    /// A MAD buffer a driver handed back, if one is kept (none is allocated here), for an SA
    /// answer to be written into; its contents are unspecified.
    pub fn spare_buffer(&mut self) -> Option<Vec<u8>> {
        self.pool.take_kept()
    }

    /// Buffers [`Transactions::poll_transmit_keyed`] allocated, not taken from those recycled.
    pub fn buffers_made(&self) -> u64 {
        self.pool.made()
    }

    /// The next TID: never 0, never one in flight.
    fn fresh_tid(&mut self) -> u32 {
        loop {
            self.tids_given = self.tids_given.wrapping_add(1);
            let tid = tid_of(self.tids_given, self.tid_key);
            if tid != 0 && !self.in_flight.contains_key(&tid) {
                return tid;
            }
        }
    }

    /// Earliest deadline of the requests in flight.
    pub fn poll_timeout(&self) -> Option<u64> {
        self.deadlines.front().map(|&(d, _)| d)
    }

    /// The entry `(deadline, tid)` is a request still in flight with that deadline.
    fn live(&self, (deadline, tid): (u64, u32)) -> bool {
        self.in_flight.get(&tid).is_some_and(|f| f.deadline == deadline)
    }

    /// Drops the entries of answered requests off the front of the deadlines, so that the
    /// front is the earliest deadline in flight.
    fn prune(&mut self) {
        while let Some(&e) = self.deadlines.front() {
            if self.live(e) {
                break;
            }
            self.deadlines.pop_front();
        }
    }

    /// Matches a response. Returns the finished request, or `None` for an unknown TID, a
    /// mismatched attribute, or a Busy status that was queued for retry.
    pub fn on_response(&mut self, smp: &SmpAnswer) -> Option<(Request, Outcome)> {
        let tid = (smp.tid & 0xffff_ffff) as u32;
        // Taken out at once (one lookup, not two): an answer that is not the request's (another
        // attribute or modifier) puts it back as it was.
        let f = self.in_flight.remove(&tid)?;
        if f.attr_id != smp.attr_id || f.attr_mod != smp.attr_mod {
            self.in_flight.insert(tid, f);
            return None;
        }
        self.prune();
        if smp.status & 0x7fff == status::BUSY && f.tries_left > 0 {
            self.counters.retried += 1;
            self.requeue(f.request, f.tries_left - 1);
            return None;
        }
        if smp.status != status::OK {
            self.counters.failed += 1;
        }
        self.settle(&f.request);
        Some((f.request, Outcome::Reply { status: smp.status, data: smp.data }))
    }

    /// Retries or fails every request whose deadline is at or before `now`; returns the failed.
    pub fn on_timeout(&mut self, now: u64) -> Vec<(Request, Outcome)> {
        let mut expired = Vec::new();
        while let Some(&(d, tid)) = self.deadlines.front() {
            if d > now {
                break;
            }
            self.deadlines.pop_front();
            if self.live((d, tid)) {
                expired.push(tid);
            }
        }
        expired.sort_unstable();
        let mut failed = Vec::new();
        for tid in expired {
            let Some(f) = self.in_flight.remove(&tid) else { continue };
            self.counters.timed_out += 1;
            if f.tries_left > 0 {
                self.counters.retried += 1;
                self.requeue(f.request, f.tries_left - 1);
            } else {
                self.counters.failed += 1;
                self.settle(&f.request);
                failed.push((f.request, Outcome::Timeout));
            }
        }
        self.prune();
        failed
    }
}

impl Outcome {
    /// The failure this outcome represents, if it is not a success.
    pub fn failure(&self) -> Option<SmpFailure> {
        match self {
            Outcome::Reply { status, .. } if *status == status::OK => None,
            Outcome::Reply { status, .. } => Some(SmpFailure::Status(*status)),
            Outcome::Timeout => Some(SmpFailure::Timeout),
        }
    }
}

/// Attribute id and modifier of a request, for failure events.
/// Whether a port's PortInfo says it has IBTA 1.7's extended speeds 2 (XDR): then the SM reads
/// and writes its PortInfo with SMSupportExtendedSpeeds, as OpenSM does for ports with extended
/// speeds (ibsm only for those whose answer the bit changes).
pub(crate) fn has_extended_speeds2(info: &PortInfo) -> bool {
    info.capability_mask.contains(CapabilityMask::IS_CAPABILITY_MASK2_SUPPORTED)
        && info.capability_mask2.contains(CapabilityMask2::IS_EXTENDED_SPEEDS2_SUPPORTED)
}

pub(crate) fn describe(req: &Req) -> (u16, u32) {
    let (a, m, _, _) = req.smp_fields();
    (a, m)
}

#[cfg(test)]
#[path = "transactions_tests.rs"]
mod tests;
