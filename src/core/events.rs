//! What the SM core reports to the outside: events for logs, metrics and the CLI summary.
//!
//! Owns [`SmEvent`], [`SubnetReport`] and the vocabulary they use: [`SmpFailure`], [`RouteMode`]
//! (how a sweep's tables were made) and [`TrapAction`] (what the master did with a trap). It
//! imports no other file of the core but `state`, so every part can report through it. Events are
//! plain values queued by the core and drained with `Sm::poll_event`; the core never logs.

use ibsm_mad::{DrPath, Lid};

use super::state::SweepPhase;

/// Why an SMP did not produce a usable answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SmpFailure {
    /// The node answered with this non-zero MAD status (D bit removed).
    Status(u16),
    /// No answer after every retry.
    Timeout,
}

impl std::fmt::Display for SmpFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SmpFailure::Status(s) => write!(f, "status {s:#06x}"),
            SmpFailure::Timeout => f.write_str("no answer after every retry"),
        }
    }
}

/// How long one phase of a sweep took, in virtual nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PhaseTiming {
    /// The phase.
    pub phase: SweepPhase,
    /// Time from its start to the start of the next phase.
    pub ns: u64,
}

/// How the last sweep's tables were made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RouteMode {
    /// Routed from scratch by the engine chain.
    #[default]
    Full,
    /// The fabric equals the last full route's: its tables again.
    Reused,
    /// The last full route's fabric less some cables: its tables repaired.
    Repaired {
        /// LIDs that got new routes.
        lids: usize,
        /// Table entries changed.
        entries: usize,
        /// Re-routed pairs (switch, LID) of a layered repair whose new route fits no layer
        /// but another: their SL changed, and until their hosts ask again they send on the
        /// old one.
        stranded: usize,
        /// The passes of LFT writes: 1, or 2 where every changed entry was written unrouted
        /// first (the states between the old and new tables could loop).
        passes: u8,
    },
}

impl RouteMode {
    /// Its name in reports: `full`, `reused` or `repaired`.
    pub const fn name(self) -> &'static str {
        match self {
            RouteMode::Full => "full",
            RouteMode::Reused => "reused",
            RouteMode::Repaired { .. } => "repaired",
        }
    }
}

/// What the master did with a trap (logged and counted by name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrapAction {
    /// A heavy sweep started.
    Sweep,
    /// A sweep is running: decided at its end (another sweep only if it missed the change).
    AfterSweep,
    /// Rate-limited: a heavy sweep is scheduled when the limit allows.
    Deferred,
    /// The same trap from the same source too often: acknowledged, nothing else.
    Suppressed,
    /// 129–131: the port is marked unhealthy; no sweep.
    Unhealthy,
    /// 144 about a NodeDescription: only that is read again.
    NodeDescription,
    /// A security trap (256–259) or one this SM does not act on: reported, no sweep.
    Reported,
    /// Not the master: the master acts on it.
    Ignored,
}

impl TrapAction {
    /// Name in logs and counters.
    pub const fn name(self) -> &'static str {
        match self {
            TrapAction::Sweep => "sweep",
            TrapAction::AfterSweep => "after-sweep",
            TrapAction::Deferred => "deferred",
            TrapAction::Suppressed => "suppressed",
            TrapAction::Unhealthy => "unhealthy",
            TrapAction::NodeDescription => "node-description",
            TrapAction::Reported => "reported",
            TrapAction::Ignored => "ignored",
        }
    }
}

/// The summary of a completed sweep.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SubnetReport {
    /// How the tables were made: routed in full, reused, or repaired from the last full route.
    pub routing_mode: RouteMode,
    /// Switches discovered.
    pub switches: usize,
    /// CAs (and routers) discovered.
    pub cas: usize,
    /// End ports that received a LID.
    pub end_ports: usize,
    /// Links seen from both ends.
    pub links: usize,
    /// LMC used.
    pub lmc: u8,
    /// The SM's own LID (MasterSMLID given to every port).
    pub sm_lid: Lid,
    /// Routing engine used.
    pub routing_engine: String,
    /// SMPs sent, retries included.
    pub smps_sent: u64,
    /// Retransmissions after a timeout or a busy status.
    pub smps_retried: u64,
    /// SMPs that failed for good.
    pub smps_failed: u64,
    /// LinearForwardingTable blocks written.
    pub lft_blocks_sent: u64,
    /// LinearForwardingTable blocks that already held the right routes and were not written.
    pub lft_blocks_unchanged: u64,
    /// Ports moved to Armed.
    pub ports_armed: usize,
    /// Ports moved to Active.
    pub ports_activated: usize,
    /// Ports that are Active at the end of the sweep.
    pub ports_active: usize,
    /// Linked ports that did not reach Active.
    pub ports_not_active: usize,
    /// `true` when nothing failed: every reachable port is Active, every switch holds its LFT,
    /// and no node was left out for not answering.
    pub complete: bool,
    /// Nodes that did not answer although the port facing them was up: kept as they were in the
    /// last sweep (LIDs and routes to them stay), not configured; a re-sweep follows.
    pub blocked: Vec<super::discovery::BlockedNode>,
    /// Nodes a Set failed on in this sweep (a repair sweep follows; empty when none failed).
    pub failed_nodes: Vec<super::discovery::BlockedNode>,
    /// Duration of each phase, in order.
    pub phases: Vec<PhaseTiming>,
    /// Start to end of the sweep, virtual nanoseconds.
    pub total_ns: u64,
    /// Building the SA's snapshot at the sweep's end, on the driver's clock (inside the
    /// Activating phase's time; 0 when the driver's clock stood still, as in the simulator's
    /// tests).
    pub snapshot_ns: u64,
}

/// Something the core wants the outside world to know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SmEvent {
    /// Two nodes answer with one NodeGUID (confirmed by asking again): both instances are
    /// quarantined at the contradicting port (their cables left out, a CA instance without a
    /// LID). Reported once, when first found.
    DuplicateGuid {
        /// The duplicated NodeGUID.
        guid: ibsm_mad::Guid,
        /// The port ends (node GUID, port) taken out.
        ports: Vec<(ibsm_mad::Guid, u8)>,
    },
    /// The fabric's differences from the planned cabling (`expected-topology`) changed: one
    /// line per difference (none: as planned again), and the ports refused as miscabled.
    Cabling {
        /// `missing link "a"[1] - "b"[2]`, `miscabled "a"[3]: expected to ..., found ...`, ...
        differences: Vec<String>,
        /// Ports left unarmed and unrouted (`refuse-miscabled`).
        refused: usize,
    },
    /// The partition policy could not be honoured in full for this fabric (a table overflow,
    /// a member not in the fabric, ...), or not at all.
    PartitionWarning(String),
    /// The QoS setting could not be applied (no SL2VL or VL arbitration table was written).
    QosWarning(String),
    /// A sweep phase began at virtual time `at`.
    PhaseStarted {
        /// The phase.
        phase: SweepPhase,
        /// Virtual time, ns.
        at: u64,
    },
    /// An SMP failed for good (after retries).
    SmpFailed {
        /// Attribute id.
        attr_id: u16,
        /// Attribute modifier.
        attr_mod: u32,
        /// The directed route it took.
        path: DrPath,
        /// What happened.
        failure: SmpFailure,
    },
    /// A multicast group create was refused (NO_RESOURCES): every MLID of the pool the
    /// switches can hold is in use. Reported once until an MLID is handed out again.
    MlidPoolExhausted {
        /// MLIDs in the pool (the smallest MulticastFDBCap of the switches).
        pool: u16,
    },
    /// No LID could be given to a port (LID space exhausted).
    LidSpaceExhausted {
        /// Ports left without a LID.
        ports: usize,
    },
    /// An engine of the routing chain declined the fabric; the next one is tried.
    EngineDeclined {
        /// Engine name.
        engine: String,
        /// Why (e.g. "not a fat tree: ...").
        reason: String,
    },
    /// A layered engine routed in full on layers that do not hold every pair's way back
    /// ([`ibsm_routing::dfsssp::PathLayers::paired`]): a pair's two directions may be on
    /// different SLs, and an RC responder's replies (on the requester's SL) may close a credit
    /// loop on a VL. Reported with each full route that is so.
    LayersNotPaired {
        /// Engine name.
        engine: String,
        /// Layers (SLs) the route uses.
        layers: u8,
    },
    /// The routing engine refused the fabric; LFTs were not programmed.
    RoutingFailed {
        /// Engine name.
        engine: String,
        /// Its error.
        reason: String,
    },
    /// The sweep finished; the subnet is up (see [`SubnetReport::complete`]).
    SubnetUp(SubnetReport),
    /// A request nobody serves yet was answered with status 0x000c.
    RequestUnsupported {
        /// Management class.
        class: u8,
        /// Method.
        method: u8,
        /// Attribute id.
        attr_id: u16,
        /// Requester's LID ([`Lid::PERMISSIVE`] for directed route).
        from: Lid,
    },
    /// SubnGet(SMInfo) was answered.
    SmInfoAnswered {
        /// Requester's LID ([`Lid::PERMISSIVE`] for directed route).
        from: Lid,
        /// The sweep phase at the time (unchanged by the answer).
        phase: SweepPhase,
    },
    /// A trap 256 (bad M_Key): an SMP with a wrong key reached a port (reported at most every
    /// 10 s per source; the count keeps every one).
    BadMKey {
        /// The port whose M_Key check failed (its LID).
        lid: Lid,
        /// Source of the offending SMP (DrSLID for a directed-route one).
        from: Lid,
        /// Its method.
        method: u8,
        /// Its attribute.
        attr_id: u16,
        /// The key it carried.
        m_key: ibsm_mad::MKey,
        /// Its directed route back (the port numbers), when it was directed-route.
        return_path: Vec<u8>,
        /// Traps from this source so far.
        count: u64,
        /// The key was the one this SM sends: the port holds a key the SM does not know.
        ours: bool,
        /// The port's M_KeyLeasePeriod (s) as last read: when it can be recovered.
        lease_s: Option<u16>,
    },
    /// This SM became a standby: another SM is master (or better).
    Standby {
        /// The SM it watches (port GUID).
        master: ibsm_mad::Guid,
        /// That SM's priority.
        priority: u8,
        /// Its port's LID.
        lid: Lid,
    },
    /// A standby found its master gone and takes over (a sweep follows).
    MasterLost {
        /// The master it watched.
        master: ibsm_mad::Guid,
        /// Why it is taken for gone.
        reason: &'static str,
    },
    /// Another SM shows an SM_Key other than this SM's (or hides it): it takes no part in the
    /// election.
    ForeignSm {
        /// Its port GUID.
        guid: ibsm_mad::Guid,
        /// Its priority.
        priority: u8,
    },
    /// This master handed the subnet to a better standby.
    HandedOver {
        /// The new master.
        to: ibsm_mad::Guid,
    },
    /// A SubnSet(SMInfo) control arrived from another SM.
    SmControl {
        /// The control (1 HANDOVER, 2 ACKNOWLEDGE, 3 DISABLE, 4 STANDBY, 5 DISCOVER).
        control: u32,
        /// The sender's port GUID as it says.
        from: ibsm_mad::Guid,
        /// Obeyed (right SM_Key, from the right SM), or refused.
        accepted: bool,
    },
    /// A trap arrived (and was acknowledged with TrapRepress).
    TrapReceived {
        /// Issuer's LID.
        from: Lid,
        /// Generic trap number (`None` for a vendor notice or an unparsable one).
        number: Option<u16>,
        /// What the SM did about it.
        action: TrapAction,
    },
    /// Trap 129, 130 or 131: a port's link integrity, buffer overruns or flow control went
    /// past its threshold. The port is listed as unhealthy in `ibsm status`; nothing else.
    PortUnhealthy {
        /// The node's GUID.
        node: ibsm_mad::Guid,
        /// The port.
        port: ibsm_mad::PortNum,
        /// 129, 130 or 131.
        trap: u16,
    },
    /// The performance manager found a port's error counters over their thresholds in one
    /// interval (reported once, when the port goes over; `ibsm status` lists it while it is).
    PortErrors {
        /// The node's GUID.
        node: ibsm_mad::Guid,
        /// The port.
        port: ibsm_mad::PortNum,
        /// The node's description.
        desc: String,
        /// The counters over: (IBTA name, increase in the interval, threshold).
        over: Vec<(&'static str, u64, u64)>,
    },
    /// `perf-avoid-unhealthy`: the routing now leaves out the link of a port the performance
    /// manager flagged for `flag_intervals` intervals in a row (reported once, when the link
    /// is first left out; `ibsm status` lists it while it is).
    PortAvoided {
        /// The node's GUID.
        node: ibsm_mad::Guid,
        /// The port.
        port: ibsm_mad::PortNum,
        /// The node's description.
        desc: String,
    },
    /// `perf-avoid-unhealthy`: a flagged port's link stays in the routing, because leaving it
    /// out would cut some LID off (a host's only cable). Reported once, while it stays so.
    PortAvoidKept {
        /// The node's GUID.
        node: ibsm_mad::Guid,
        /// The port.
        port: ibsm_mad::PortNum,
        /// The node's description.
        desc: String,
    },
    /// `perf-avoid-unhealthy`: a link the routing left out carries routes again (its port was
    /// clean for `clean_intervals` intervals in a row, or the option was turned off).
    PortUsedAgain {
        /// The node's GUID.
        node: ibsm_mad::Guid,
        /// The port.
        port: ibsm_mad::PortNum,
        /// The node's description.
        desc: String,
    },
    /// Ports answered a PortInfo Set without keeping some of the port settings it carried
    /// (their firmware ignores them: ibsim keeps no error thresholds). They are not sent to
    /// them again until the configuration changes. One event at the end of a sweep for all the
    /// ports found in it, each reported once.
    PortSettingNotKept {
        /// Each port: (node GUID, port, the settings not kept by name: "error thresholds", ...).
        ports: Vec<super::port_settings::NotKept>,
    },
    /// Links the sweep bounced: CA or router ports whose NeighborMTU or OperationalVLs changed
    /// were sent PortState Down in the same Set, as OpenSM does, so that the link retrains with
    /// them. One event at the end of a sweep for all of them.
    LinksBounced {
        /// Each port bounced: (node GUID, port).
        ports: Vec<(ibsm_mad::Guid, ibsm_mad::PortNum)>,
    },
    /// The babbling-port policy disabled a port (`disabled`), or enabled it again at the end of
    /// its back-off.
    BabblingPort {
        /// The node GUID of the port set Disabled (or Polling).
        node: ibsm_mad::Guid,
        /// That port (the end of the cable nearer to the SM).
        port: ibsm_mad::PortNum,
        /// The port whose traps passed the limit (itself or its peer; the port itself when
        /// enabled again).
        babbler: (ibsm_mad::Guid, ibsm_mad::PortNum),
        /// Traps counted from it in the window (0 when enabled again).
        traps: u32,
        /// Disabled (true) or enabled again (false).
        disabled: bool,
    },
    /// Master: a standby's state sync moved on (`asking`, `sending`, `current` at `version`,
    /// `foreign`: not an ibsm SM, `unreachable`).
    SyncPeer {
        /// The standby's port GUID.
        standby: ibsm_mad::Guid,
        /// Where it stands.
        state: &'static str,
        /// The version it is current at.
        version: Option<u64>,
    },
    /// Master: a plan's LFT Sets were held until every standby had seen the LFT digests they
    /// make stale (`seen`), or went on at the bound without (`seen` false: a standby that did
    /// not answer may take over trusting a switch's older table until it is synced again).
    SyncLftsHeld {
        /// How long the Sets were held, ns.
        held_ns: u64,
        /// Every standby saw the digests.
        seen: bool,
    },
    /// Standby: a section of the master's state arrived whole.
    SyncReceived {
        /// The section.
        section: &'static str,
        /// The master's version of it.
        version: u64,
    },
    /// Standby: a sync message was refused (and answered with status 0x001C).
    SyncRefused {
        /// Sender's LID.
        from: Lid,
        /// Why.
        reason: &'static str,
    },
    /// A standby taking over adopted the state its master sent.
    SyncAdopted {
        /// Sections adopted (0: none was received; the state is rebuilt from the fabric).
        sections: usize,
        /// The master's version this SM was last current at.
        current_at: Option<u64>,
    },
    /// An SA request carrying a non-zero SM_Key other than the SA key was dropped unanswered
    /// (as OpenSM drops it): a client that guesses keys learns nothing.
    SaBadKey {
        /// Sender's LID as the transport reported it.
        from: Lid,
        /// The key it carried.
        key: u64,
    },
    /// A MAD whose header could not be read was dropped.
    MalformedMad {
        /// Sender's LID as the transport reported it.
        from: Lid,
        /// Its length in bytes.
        len: usize,
    },
}

/// Counts of the requests the SM received.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RequestCounters {
    /// Requests answered with "method/attribute not supported".
    pub unsupported: u64,
    /// Traps received.
    pub traps: u64,
    /// SMInfo queries answered while master.
    pub sm_info_answered: u64,
    /// MADs dropped because their header could not be read.
    pub malformed: u64,
    /// SA requests answered (any status).
    pub sa_answered: u64,
    /// SA requests left unanswered because no sweep had completed as master yet.
    pub sa_not_ready: u64,
    /// SA GetTable answers that had to leave matching records out (single-MAD transports).
    pub sa_truncated: u64,
    /// SA requests answered BUSY: their requester was over its rate.
    pub sa_busy: u64,
    /// SA requests dropped unanswered because too many answers were waiting to be sent.
    pub sa_dropped: u64,
    /// SA requests dropped unanswered because they carried a wrong non-zero SA key.
    pub sa_bad_key: u64,
}
