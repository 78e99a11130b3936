//! The sans-IO subnet manager core.
//!
//! Owns the [`Sm`] state machine: one sweep runs the phases of [`SweepPhase`] in order
//! (discovery, LID assignment, port configuration, routing, LFT programming, arming,
//! activation) with directed-route SMPs, and ends with a [`SmEvent::SubnetUp`] report. It does
//! no I/O and reads no clock: time comes in as `now` (nanoseconds, any monotonic origin) with
//! every `handle_*` call, MADs go out through [`Sm::poll_transmit`], and the persistent
//! GUID-to-LID table goes in through [`Sm::new`] and out through [`Sm::guid2lid`] (the caller
//! writes the file).
//!
//! `Sm` is a coordinator over components, each a struct in its own module that owns its state,
//! takes what it needs as arguments (the subnet, a record, the time) and answers with values
//! (requests to queue, events, tables) that `Sm` moves between them, never reaching into
//! another's fields: `discovery` ([`discovery::Discovery`]: the last subnet, silent ports, port
//! reads), `programming` (held LFT blocks, read-backs), [`lft`] ([`lft::Routing`]: tables, the
//! route base, the job out), `partitions` (P_Key tables), [`mkeys`] ([`mkeys::MKeys`]),
//! [`checks`] (cabling, duplicate GUIDs), `sweep` (the sweep's books: its figures and failures,
//! the compute step it waits for, the last report), `schedule` (re-sweeps, repairs, sweeps done),
//! `light` (light sweeps), [`traps`] ([`traps::Traps`]: the trap policy and book, duplicates,
//! the budget of trap-driven sweeps, traps coalesced into a sweep, unhealthy ports; it answers
//! with the sweep it asks for, which `Sm` starts), `quick` (a quick sweep's reads and its verdict,
//! which updates the subnet it is given; `Sm` decides whether one may start and runs the
//! pipeline after it; `coordinator::scheduling` is the coordinator's side of these four: `Sm`'s
//! code that starts the sweeps they ask for, and the handling of a trap), `sa` (`sa::Sa`: the SA's
//! snapshot, its state, answer limits, admission, counts, the VL census and the multicast tables
//! its groups need; the SA requests and what follows from them meet the rest in
//! `coordinator::sa_answers`), [`election`]
//! ([`election::Election`]: the SMs found, the master watched, polls, handovers, controls; the
//! coordinator's side of it, which sends the SMPs and changes the SM's state, is
//! `coordinator::mastership`), [`port_settings`] ([`port_settings::PortSettings`]: the PortInfo
//! fields OpenSM writes beyond addressing, HOQ lifetimes, VL stall counts, `max-op-vls`, error
//! thresholds, forced speeds and widths, and the ports that do not keep them), [`babbling`]
//! ([`babbling::Babbling`]: the babbling-port policy's trap counts and the ports it disabled;
//! its coordinator side is `coordinator::babbling`), and [`replication`]
//! ([`replication::Replication`]: the state a master publishes and where
//! each standby stands, what a standby holds, whether clients must re-register; the
//! coordinator's side, which reads each section from the component that owns it and gives it
//! back at a takeover, is `coordinator::sync_sections`) and [`perf`] ([`perf::Perf`]: the
//! performance manager's reads of every port's counters, their totals, rates, history and error
//! thresholds, in a window of its own; the coordinator's side, which lets it send only as master
//! between sweeps and after the SMPs, is `coordinator::perf_sweeps`); [`maintenance`]
//! ([`maintenance::Maintenance`]: sweeping held by an operator, the ports disabled; its
//! coordinator's side, which decides which sweeps a hold stops, is `coordinator::maintenance`).
//! Not yet components (their state is still fields of `Sm`, their logic `impl Sm` blocks in
//! `coordinator`): bring-up (`coordinator::bringup`) and `coordinator::reconfig`. Requests are
//! read by `requests` (pure functions) and dispatched by [`Sm::handle_mad`] to their handlers:
//! SMInfo in `coordinator::mastership`, traps in `coordinator::scheduling`, the SA in `sa`, sync
//! messages in `coordinator::sync_sections`, PerfMgt answers in [`perf`].
//!
//! `impl Sm` lives only here and in `coordinator/` (the coordinator's code, a file per concept:
//! where the components' answers meet); no component file has one. This file holds `Sm`'s
//! fields, its construction and its inputs and outputs (`handle_*`, `poll_*`, the sweep's
//! phases); its getters are `coordinator::accessors`.
//!
//! Shared vocabulary: `config` ([`SmConfig`]), [`state`] (explicit states and the discovered
//! subnet), [`events`] (what the core reports), [`lids`] (LID assignment and `guid2lid`),
//! `transactions` (SMP window, TIDs, retries; the SMPs go out in the buffers the driver hands back,
//! `mad_pool`), [`io`] (addresses and transmits).

pub mod babbling;
pub mod checks;
mod config;
mod coordinator;
mod digest_gate;
mod discovery;
pub mod election;
pub mod events;
pub mod guid_hash;
pub mod io;
pub mod lft;
pub mod lids;
mod light;
mod mad_pool;
pub mod maintenance;
pub mod mkeys;
pub mod nodes;
mod partitions;
pub mod perf;
pub mod port_settings;
mod programming;
mod qos;
mod quick;
mod relink;
pub mod replication;
mod requests;
mod sa;
mod schedule;
pub mod state;
mod sweep;
#[cfg(test)]
mod testing;
mod transactions;
pub mod traps;

use std::collections::VecDeque;

use ibsm_mad::Guid;
use ibsm_mad::sm_smp::SmpAnswer;

pub use config::{DEFAULT_SM_KEY, DEFAULT_SUBNET_PREFIX, NodeNames, PartEnforce, SmConfig};
pub use coordinator::reconfig::Reconfigured;
pub use discovery::BlockedNode;
pub use events::{PhaseTiming, RequestCounters, SmEvent, SmpFailure, SubnetReport};
pub use io::{Address, Grh, MadSource, Transmit, TransmitKind};
pub use lids::{Guid2Lid, Guid2LidError, Guid2LidErrorKind};
pub use port_settings::PortConfig;
pub use qos::QosSetting;
pub use state::{Node, NodeIdx, PortRecord, SmState, Subnet, SweepPhase};
pub use sweep::ComputeStep;

use crate::sa::vl_tables::VlRead;
use coordinator::mastership::DiscoveryEnd;
use requests::Inbound;
use transactions::{Op, Outcome, PortStep, Req, Request, Transactions};

/// A sweep an operator asks for ([`Sm::request_sweep`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requested {
    /// A heavy sweep: everything read again, only what differs written.
    Heavy,
    /// A heavy sweep that routes from scratch.
    Reroute,
    /// A light sweep: the switches' SwitchInfo read for a port change.
    Light,
}

/// The subnet manager state machine.
///
/// Calling order (as in quinn-proto): create with [`Sm::new`]; call [`Sm::start_sweep`]; then
/// loop: while [`Sm::poll_compute`] says a step is pending, call [`Sm::handle_compute`] with
/// the driver's clock; drain [`Sm::poll_transmit`] and hand each [`Transmit`] to the transport;
/// drain [`Sm::poll_event`]; wait until a MAD arrives ([`Sm::handle_mad`]) or the deadline of
/// [`Sm::poll_timeout`] passes ([`Sm::handle_timeout`]). Each `handle_*` and `poll_transmit`
/// takes the current time.
#[derive(Debug)]
pub struct Sm {
    cfg: SmConfig,
    state: SmState,
    phase: SweepPhase,
    now: u64,
    subnet: Subnet,
    tx: Transactions,
    events: VecDeque<SmEvent>,
    guid2lid: Guid2Lid,
    /// What the switches' forwarding tables hold, and the read-backs planned.
    programming: programming::Programming,
    /// A plan's LFT Sets held until the standbys have seen the digests they make stale.
    lft_gate: digest_gate::LftGate,
    /// Routing: the tables of the sweep, the last full route, the job out.
    routing: lft::Routing,
    /// The sweep's books: its figures, the compute step it waits for, the last report.
    sweep: sweep::Sweep,
    /// When the next heavy or repair sweep is due, what the running one is, sweeps done.
    schedule: schedule::Schedule,
    /// Answers to requests, sent outside the SMP window.
    responses: VecDeque<Transmit>,
    /// What SA changes lead to, done once the answers queued are out: a burst of joins costs
    /// one tree computation and one copy of the groups for the standbys, not one per join.
    after_answers: sa::AfterAnswers,
    /// Requests seen, by kind (the SA counts its own: [`Sm::request_counters`] adds them).
    counters: RequestCounters,
    /// The SM's own port GUID, once discovery has read it.
    port_guid: Guid,
    /// What discovery keeps between answers: the last subnet, silent ports, port reads.
    discovery: discovery::Discovery,
    /// The SA: its snapshot, state, limits, admission, counts and the VL census.
    sa: sa::Sa,
    /// Fabric checks: the planned cabling, duplicate GUIDs.
    checks: checks::Checks,
    /// What the SM knows of the ports' M_Keys.
    mkeys: mkeys::MKeys,
    /// Other SMs, the master a standby watches, handovers.
    election: election::Election,
    /// P_Key tables: resolved, laid out, written.
    partitions: partitions::Partitions,
    /// SL2VL and VL arbitration tables (QoS).
    qos: qos::Qos,
    /// The state sync: what a master replicates, what a standby holds, ClientReregister.
    replication: replication::Replication,
    /// Light sweeps between heavy ones.
    light: light::Light,
    /// What traps did and are waiting for.
    traps: traps::Traps,
    /// A quick sweep's reads, while one runs.
    quick: Option<quick::Quick>,
    /// The performance manager: port counters, their history and error thresholds.
    perf: perf::Perf,
    /// Port settings: what ports did not keep.
    port_settings: port_settings::PortSettings,
    /// The babbling-port policy: trap counts, ports disabled.
    babbling: babbling::Babbling,
    /// What an operator holds still: sweeping, disabled ports.
    maintenance: maintenance::Maintenance,
}

impl Sm {
    /// A new SM with `cfg` and the persisted GUID-to-LID table (empty for a first start).
    pub fn new(cfg: SmConfig, guid2lid: Guid2Lid) -> Sm {
        let tx = Transactions::keyed(cfg.max_smps_in_flight, cfg.smp_timeout_ns, cfg.smp_retries, cfg.tid_key);
        let programming = programming::Programming::spread(transactions::spread(cfg.max_smps_in_flight));
        let mut sa = sa::Sa::new(cfg.sa_rate_limit);
        sa.set_consolidate_ipv6_snm(cfg.consolidate_ipv6_snm);
        sa.set_assigned_guid_byte(cfg.sm_assigned_guid);
        let perf = perf::Perf::new(cfg.perf.clone());
        Sm {
            cfg,
            state: SmState::NotActive,
            phase: SweepPhase::Up,
            now: 0,
            subnet: Subnet::default(),
            tx,
            events: VecDeque::new(),
            guid2lid,
            programming,
            lft_gate: digest_gate::LftGate::default(),
            routing: lft::Routing::default(),
            sweep: sweep::Sweep::default(),
            schedule: schedule::Schedule::default(),
            responses: VecDeque::new(),
            after_answers: sa::AfterAnswers::default(),
            counters: RequestCounters::default(),
            port_guid: Guid(0),
            discovery: discovery::Discovery::default(),
            sa,
            checks: checks::Checks::default(),
            mkeys: mkeys::MKeys::default(),
            election: election::Election::default(),
            partitions: partitions::Partitions::default(),
            qos: qos::Qos::default(),
            replication: replication::Replication::default(),
            light: light::Light::default(),
            traps: traps::Traps::default(),
            quick: None,
            perf,
            port_settings: port_settings::PortSettings::default(),
            babbling: babbling::Babbling::default(),
            maintenance: maintenance::Maintenance::default(),
        }
    }

    /// Replaces the partition policy (a reload) and sweeps, now or right after the running
    /// sweep: the sweep writes only the P_Key blocks that change, keeping every key's index.
    pub fn set_partitions(&mut self, policy: ibsm_partitions::Policy) {
        self.cfg.partitions = policy;
        if self.state != SmState::NotActive {
            self.sweep_soon();
        }
    }

    /// A sweep now, or right after the running one.
    pub(super) fn sweep_soon(&mut self) {
        if self.phase == SweepPhase::Up {
            self.start_sweep(self.now);
        } else {
            self.schedule.request();
        }
    }

    /// An operator's sweep ([`Requested`], `ibsm sweep` and `ibsm reroute`): a heavy sweep now
    /// or right after the running one, the same routing from scratch, or a light sweep at once.
    ///
    /// # Errors
    /// Why it is not done: only a master (or an SM in its first sweep, for a heavy sweep)
    /// sweeps the fabric.
    pub fn request_sweep(&mut self, what: Requested) -> Result<(), &'static str> {
        if self.sweeping_held() {
            return Err("sweeping is held (`ibsm sweeping on` lets it go)");
        }
        match self.state {
            SmState::Master => {}
            SmState::Discovering if what != Requested::Light => {}
            SmState::Discovering => return Err("the first sweep is still running; a light sweep follows it"),
            SmState::Standby => return Err("this SM is a standby: the master sweeps the fabric"),
            SmState::NotActive => return Err("this SM is not active (disabled, or not started)"),
        }
        match what {
            Requested::Heavy => self.sweep_soon(),
            Requested::Reroute => {
                self.force_full_route();
                self.sweep_soon();
            }
            // Due one nanosecond from now: the next timeout starts it unless a sweep runs.
            Requested::Light => self.light.schedule(self.now, Some(1)),
        }
        Ok(())
    }

    /// Tells the core how large SA answers may be on its transport (the driver knows whether
    /// it carries RMPP; the default assumes it does).
    pub fn set_sa_limits(&mut self, limits: crate::sa::Limits) {
        self.sa.set_limits(limits);
    }

    // ---- inputs ----

    /// Starts a sweep at `now` (ignored while one is running).
    pub fn start_sweep(&mut self, now: u64) {
        self.now = self.now.max(now);
        // A standby leaves the fabric to the master: it sweeps again only to take over.
        if (self.phase != SweepPhase::Up && self.state != SmState::NotActive)
            || self.election.disabled()
            || self.state == SmState::Standby
        {
            return;
        }
        // A master whose sweeping an operator holds starts none (a takeover's sweep still runs:
        // this SM is not master yet then).
        if self.sweeping_held() {
            self.schedule.stand_by();
            return;
        }
        self.election.sweep_started();
        self.programming.sweep_started();
        self.discovery.sweep_started();
        if self.state == SmState::NotActive {
            self.state = SmState::Discovering;
        }
        self.begin_sweep(schedule::SweepKind::Heavy);
        self.enter(SweepPhase::Discovering);
        self.start_discovery();
        self.advance();
    }

    /// What every sweep, heavy or quick, starts from: no retry due, no routes yet, fresh
    /// figures (a heavy sweep also drops a quick one left half done).
    fn begin_sweep(&mut self, kind: schedule::SweepKind) {
        self.schedule.begin(kind);
        self.quick = None;
        // A repair sweep reads nothing: the traps waiting for a sweep still wait.
        if kind != schedule::SweepKind::Repair {
            self.traps.sweep_started(kind == schedule::SweepKind::Heavy);
        }
        self.drop_early_route();
        self.lft_gate.clear();
        self.routing.sweep_started();
        // A heavy sweep reads the subnet again: its view is relinked over every port.
        if kind == schedule::SweepKind::Heavy {
            self.routing.unsettle_view();
        }
        self.mkeys.sweep_started();
        self.sweep.begin(self.now, self.tx.counters);
    }

    /// A MAD arrived at `now` from `src`. The common header decides: answers to our SMPs go to
    /// the transactions, requests to their handlers (SMInfo, traps; everything not served yet
    /// gets status 0x000c), and a MAD whose header cannot be read is counted and dropped.
    pub fn handle_mad(&mut self, now: u64, bytes: &[u8], src: MadSource) {
        self.now = self.now.max(now);
        // An answer to an SMP, nearly all a sweep receives, goes to the transactions without
        // its header read whole first (`classify` says Response for exactly these).
        if requests::is_smp_answer(bytes) {
            if self.on_smp_answer(bytes) {
                self.advance();
            }
            return;
        }
        let (kind, header) = requests::classify(bytes);
        match (kind, header) {
            (Inbound::Response, Some(h)) if h.mgmt_class == ibsm_mad::header::MgmtClass::SubnAdm => {
                // A standby's answer to a sync message, or a ReportResp from a subscriber.
                if h.attr_id == crate::sync::wire::ATTR_SYNC {
                    self.on_sync_response(bytes, &src);
                } else {
                    self.sa.on_report_resp(h.tid);
                }
            }
            (Inbound::Response, Some(h)) if h.mgmt_class == ibsm_mad::header::MgmtClass::Perf => {
                self.perf_answered(bytes);
            }
            (Inbound::Response, _) => {
                if !self.on_smp_answer(bytes) {
                    return;
                }
            }
            (Inbound::Malformed, _) | (_, None) => {
                self.counters.malformed += 1;
                self.events.push_back(SmEvent::MalformedMad { from: src.slid, len: bytes.len() });
                return;
            }
            (kind, Some(h)) => self.handle_request(kind, &h, bytes, &src),
        }
        self.advance();
    }

    /// An answer to an SMP: matched to its request and handled. False, counted as malformed,
    /// when it does not parse.
    fn on_smp_answer(&mut self, bytes: &[u8]) -> bool {
        let Ok(smp) = SmpAnswer::parse(bytes) else {
            self.counters.malformed += 1;
            return false;
        };
        if let Some((request, outcome)) = self.tx.on_response(&smp) {
            self.dispatch(&request, &outcome);
        }
        true
    }

    /// Dispatches a request (anything that is not a response) to its handler; one from a source
    /// nobody can answer ([`requests::bad_source`]) is counted as malformed and dropped.
    fn handle_request(&mut self, kind: Inbound, h: &ibsm_mad::header::MadHeader, bytes: &[u8], src: &MadSource) {
        if requests::bad_source(h, src) {
            self.counters.malformed += 1;
            return;
        }
        match kind {
            Inbound::GetSmInfo => self.answer_sm_info(h, bytes, src),
            Inbound::SetSmInfo => self.answer_sm_control(h, bytes, src),
            Inbound::Trap => self.on_trap(h, bytes, src),
            Inbound::Sa => self.answer_sa(h, bytes, src),
            Inbound::Sync => self.answer_sync(h, bytes, src),
            Inbound::Unsupported => {
                self.counters.unsupported += 1;
                self.events.push_back(requests::unsupported(h, src));
                if let Some(reply) = requests::response_to(bytes, ibsm_mad::ids::status::BAD_METHOD_ATTR, None) {
                    self.respond(reply, requests::reply_to(h, src));
                }
            }
            Inbound::NoAnswer | Inbound::Response | Inbound::Malformed => {}
        }
    }

    /// Queues a response (outside the SMP window: no timeout, no retry).
    fn respond(&mut self, bytes: Vec<u8>, to: Address) {
        self.responses.push_back(Transmit { bytes, to, kind: TransmitKind::Response });
    }

    /// The driver runs routing as a job off its event loop ([`Sm::take_route_job`]):
    /// [`Sm::handle_compute`] leaves that step to it.
    pub fn set_offload_routing(&mut self, on: bool) {
        self.routing.set_offload(on);
    }

    /// The compute step the sweep waits for, if any: call [`Sm::handle_compute`].
    pub fn poll_compute(&self) -> Option<ComputeStep> {
        self.sweep.compute()
    }

    /// Runs the pending compute steps (LID assignment, routing, the SA's snapshot). `clock`
    /// gives the driver's current time on the same timeline as `now`; it is read around each
    /// step (and after the LFT diff that follows routing), so the phase durations in the report
    /// and its `snapshot_ns` are measured where the work happens.
    pub fn handle_compute(&mut self, clock: &mut dyn FnMut() -> u64) {
        while let Some(step) = self.sweep.take_compute() {
            if step == ComputeStep::Configure && self.configure_waits_for_route() {
                return;
            }
            if step == ComputeStep::Route && self.routing.offloaded() {
                // The driver runs it as a job ([`Sm::take_route_job`]).
                self.sweep.wait_for(step);
                return;
            }
            let start = clock();
            self.now = self.now.max(start);
            match step {
                ComputeStep::AssignLids => self.assign_lids(),
                ComputeStep::Configure => self.configure_ports(),
                ComputeStep::Route => self.route(),
                ComputeStep::Snapshot => self.install_snapshot(),
            }
            let end = clock();
            self.now = self.now.max(end);
            if step == ComputeStep::Snapshot {
                self.sweep.snapshot_built(end.saturating_sub(start));
            }
            let stamped = self.now;
            self.advance();
            // After routing, `advance` compares the new tables with what the switches hold
            // (the LFT diff) before the first block goes: that is the route's work too.
            if (self.sweep.compute().is_some() || step == ComputeStep::Route)
                && self.sweep.phase_started_at() == stamped
            {
                self.restamp(clock());
            }
        }
    }

    /// The phase the next compute step waits in was entered by [`Sm::advance`] right after a
    /// step, at the time read before it: the work done on the way (a phase that had nothing to
    /// send, such as configuring ports that are all set already) took until `now`. That time
    /// goes to the phase before, where the work was, and the current one starts at `now`.
    fn restamp(&mut self, now: u64) {
        if !self.sweep.restamp(now) {
            return;
        }
        let phase = self.phase;
        if let Some(SmEvent::PhaseStarted { at, .. }) =
            self.events.iter_mut().rev().find(|e| matches!(e, SmEvent::PhaseStarted { phase: p, .. } if *p == phase))
        {
            *at = now;
        }
        self.now = self.now.max(now);
    }

    /// The next sweep routes from scratch (to measure a full route, or after a configuration
    /// change that routing depends on).
    pub fn force_full_route(&mut self) {
        self.routing.force_full();
    }

    /// The routing step the sweep waits for, as a job to run anywhere; `None` unless
    /// [`Sm::poll_compute`] says [`ComputeStep::Route`]. Until [`Sm::finish_route`] the sweep
    /// waits in the Routing phase, and the SM answers everything else meanwhile.
    pub fn take_route_job(&mut self) -> Option<lft::RouteJob> {
        if self.sweep.compute() != Some(ComputeStep::Route) {
            if let Some(job) = self.take_early_job() {
                return Some(job);
            }
            // A standby's advance route ([`Sm::prime_route`]), when it wants one.
            if self.state == SmState::Standby && self.routing.prime_wanted() {
                return Some(self.prime_job());
            }
            return None;
        }
        self.routing.drop_prime();
        self.sweep.take_compute();
        Some(self.route_job())
    }

    /// A standby routes the fabric its discovery found, ahead of any takeover, and keeps the
    /// result as the base only: a takeover sweep that finds the same fabric (the same view,
    /// LIDs included) reuses it instead of routing (`RouteMode::Reused`). Run in place, or by
    /// the driver as a job ([`Sm::take_route_job`]) when routing is offloaded.
    pub(in crate::core) fn prime_route(&mut self) {
        if self.subnet.nodes.is_empty() {
            return;
        }
        self.routing.want_prime();
        if self.routing.offloaded() || !self.routing.prime_wanted() {
            return;
        }
        let job = self.prime_job();
        let done = job.run();
        let _ = self.routing.take_prime_out();
        self.apply_route(done, false);
    }

    /// The standby's advance route as a job: its subnet with each end port at the LID it was
    /// read with (the master's; a standby assigns none), routed as a takeover would.
    fn prime_job(&mut self) -> lft::RouteJob {
        let mut seen = self.subnet.clone();
        for n in &mut seen.nodes {
            for p in &mut n.ports {
                if let Some(info) = p.info.filter(|_| p.lid == ibsm_mad::Lid::UNASSIGNED) {
                    p.lid = info.lid;
                }
            }
        }
        let budget = self.route_budget();
        // Another subnet than the one the view was settled on (the LIDs as read).
        self.routing.unsettle_view();
        let (job, _) =
            self.routing.job(&seen, self.cfg.lmc, (&self.cfg.routing_engine, &self.cfg.routing_options), budget, &[]);
        self.routing.prime_taken();
        job
    }

    /// The layers a layered engine may use on the subnet ([`lft::vl_budget`]; with QoS on, the
    /// VLs shared among its classes).
    pub(in crate::core) fn vl_budget(&self) -> u8 {
        lft::vl_budget(&self.subnet, self.cfg.ports.max_op_vls, self.qos_classes().as_ref())
    }

    /// The QoS classes of the setting in force ([`ibsm_qos::Classes`]): the policy's SLs and the
    /// partitions' `sl=`, grouped by VL. `None` with QoS off.
    fn qos_classes(&self) -> Option<ibsm_qos::Classes> {
        let q = self.cfg.qos.as_ref()?;
        let sls: Vec<u8> = self.partitions.resolved().iter().filter_map(|p| p.sl).collect();
        // Options were checked when the configuration was read; one that cannot be read leaves
        // QoS's own tables (one class).
        ibsm_qos::Classes::of(&q.policy, &q.options, &sls).ok()
    }

    /// QoS classes times routing layers, when both are in force: QoS on, the chain names a
    /// layered engine and its budget is two layers or more. The classes and the layers; every
    /// port's SL2VL and VLArbitration tables are then the layered ones
    /// ([`ibsm_qos::Classes::layered_options`]) and each PathRecord's SL is its class's SL for
    /// the pair's layer.
    pub(in crate::core) fn qos_layering(&self) -> Option<(ibsm_qos::Classes, u8)> {
        if !self.chain_layered() {
            return None;
        }
        let classes = self.qos_classes()?;
        let layers = self.vl_budget();
        (layers > 1).then_some((classes, layers))
    }

    /// Whether the routing chain names a layered engine (dfsssp, nue).
    pub(in crate::core) fn chain_layered(&self) -> bool {
        self.cfg
            .routing_engine
            .iter()
            .any(|e| e == ibsm_routing::dfsssp::Dfsssp::NAME || e == ibsm_routing::nue::Nue::NAME)
    }

    /// Routing in place (`handle_compute`, as the simulator's drivers run it): the job at once.
    fn route(&mut self) {
        let job = self.route_job();
        self.apply_route(job.run(), true);
    }

    pub(in crate::core) fn apply_route(&mut self, done: lft::RouteDone, use_tables: bool) {
        let applied = self.routing.apply(done, use_tables, &self.cfg.routing_engine);
        if applied.failed {
            self.sweep.failed(1);
        }
        self.events.extend(applied.events);
    }

    /// A deadline from [`Sm::poll_timeout`] passed: retries or fails the expired SMPs, or
    /// starts a scheduled re-sweep.
    pub fn handle_timeout(&mut self, now: u64) {
        self.now = self.now.max(now);
        self.flush_after_answers();
        for (request, outcome) in self.tx.on_timeout(self.now) {
            self.dispatch(&request, &outcome);
        }
        self.sa.on_timeout(self.now);
        self.sync_timeout();
        self.light_timer();
        self.traps_timer();
        self.babbling_timer();
        if self.mkeys.take_recovery(self.now) {
            // A port's M_Key lease ended: sweep to give it this SM's key.
            self.sweep_soon();
        }
        if self.schedule.resweep_due(self.now) && self.phase == SweepPhase::Up {
            self.start_sweep(self.now);
        }
        self.repair_timer();
        self.election_timer();
        self.perf_timer();
        self.advance();
    }

    // ---- outputs ----

    /// The next MAD to send at `now`: answers to requests first (they are outside the SMP
    /// window), then SMPs as the window allows.
    pub fn poll_transmit(&mut self, now: u64) -> Option<Transmit> {
        self.now = self.now.max(now);
        if let Some(r) = self.responses.pop_front() {
            return Some(r);
        }
        if let Some(r) = self.sa.poll_transmit(self.now) {
            return Some(r);
        }
        self.flush_after_answers();
        if let Some(t) = self.poll_sync_transmit() {
            return Some(t);
        }
        // The next SMP is looked at (a feed's made ahead) only when its port's key matters.
        let key = if self.mkeys.in_use(&self.cfg.m_key) {
            self.mkeys.next_smp_key(&self.cfg.m_key, &self.subnet, self.port_guid, self.tx.peek())
        } else {
            ibsm_mad::MKey(0)
        };
        if let Some(t) = self.tx.poll_transmit_keyed(self.now, key) {
            return Some(t);
        }
        // The window is full (or the port Sets all sent): the configuration's tables now.
        if self.build_due_table_sets() {
            return self.poll_transmit(now);
        }
        // PM reads last, in a window of their own, and only while no sweep runs.
        self.poll_perf_transmit()
    }

    /// The next time [`Sm::handle_timeout`] must be called, if any.
    pub fn poll_timeout(&self) -> Option<u64> {
        let poll = match self.state {
            SmState::Master => {
                [self.election.poll_timeout(self.state), self.light.poll_timeout()].into_iter().flatten().min()
            }
            _ => self.election.poll_timeout(self.state),
        };
        let [resweep, repair] = self.schedule.poll_timeout(self.state == SmState::Master);
        [
            self.tx.poll_timeout(),
            resweep,
            repair,
            self.sa.poll_timeout(),
            self.mkeys.poll_timeout(),
            poll,
            self.replication.poll_timeout(),
            self.lft_gate.poll_timeout(),
            self.traps.poll_timeout(),
            self.perf_timeout(),
            self.babbling.poll_timeout().filter(|_| self.state == SmState::Master),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// The next event for logs and metrics.
    pub fn poll_event(&mut self) -> Option<SmEvent> {
        self.events.pop_front().or_else(|| self.perf.poll_event())
    }

    // ---- internals ----

    fn dispatch(&mut self, request: &Request, outcome: &Outcome) {
        match &request.req {
            Req::SetMft { switch, block, position, .. } => {
                if outcome.failure().is_some() {
                    self.sa.mft_failed(*switch, (*block, *position));
                    self.fail(request, outcome);
                } else {
                    self.programming.mft_written();
                }
            }
            Req::SetGuidInfo { guid, block, .. } => {
                self.sa.alias_written(*guid, *block, outcome);
                // Not a sweep's failure, and no repair sweep: reported, written again after a
                // timeout when next asked.
                if let Some(failure) = outcome.failure() {
                    let (attr_id, attr_mod) = transactions::describe(&request.req);
                    self.events.push_back(SmEvent::SmpFailed { attr_id, attr_mod, path: request.path, failure });
                }
            }
            Req::SetPKeys { guid, block, table, .. } => {
                let done = outcome.failure().is_none();
                self.partitions.on_set(*guid, *block, table, done);
                if !done {
                    self.fail(request, outcome);
                }
            }
            Req::SetSl2Vl { guid, port, input, output, all_inputs, table, .. } => {
                let done = outcome.failure().is_none();
                let inputs = if *all_inputs { self.qos.sl2vl_inputs(*guid, *output) } else { vec![*input] };
                self.qos.on_sl2vl(*guid, *port, (&inputs, *output), table, done);
                for input in inputs {
                    // A switch's map is set through port 0, a CA's through its own port.
                    let read = if port.0 == 0 {
                        VlRead::Sl2Vl { input, output: *output }
                    } else {
                        VlRead::Sl2Vl { input: 0, output: port.0 }
                    };
                    self.sa.vl_written(*guid, read, outcome);
                }
                if !done {
                    self.fail(request, outcome);
                }
            }
            Req::SetVlArb { guid, port, output, block, table, .. } => {
                let done = outcome.failure().is_none();
                self.qos.on_vlarb(*guid, *port, (*output, *block), table, done);
                let at = if port.0 == 0 { *output } else { port.0 };
                if let Ok(block) = u8::try_from(*block) {
                    self.sa.vl_written(*guid, VlRead::VlArb { port: at, block }, outcome);
                }
                if !done {
                    self.fail(request, outcome);
                }
            }
            Req::NodeInfo { from } => self.on_node_info(request, *from, outcome),
            Req::ConfirmNodeInfo { from } => self.on_confirm_node_info(request, *from, outcome),
            Req::NodeDesc { node } => self.on_node_desc(request, *node, outcome),
            Req::GetPortInfo { node, port } | Req::GetPortInfoExt { node, port } => {
                self.on_port_info(request, *node, *port, outcome);
            }
            Req::GetSwitchInfo { node } => self.on_switch_info(request, *node, outcome),
            Req::LightSwitchInfo { node } => {
                self.light.on_switch_info(*node, outcome);
                self.light_read_done();
            }
            Req::LightSmInfo { guid, .. } => self.on_light_sm_info(*guid, outcome),
            Req::ReadNodeDesc { guid, .. } => {
                let sweeping = self.phase != SweepPhase::Up;
                self.traps.on_node_desc(*guid, outcome, &mut self.subnet, self.now, sweeping);
            }
            Req::CheckPortInfo { node, port } => {
                if let Some(q) = self.quick.as_mut() {
                    q.on_read(*node, *port, outcome);
                }
            }
            Req::GetLft { node, block } => self.on_get_lft(request, *node, *block, outcome),
            Req::SetPortInfo { node, port, step, .. } => {
                self.on_set_port_info(request, (*node, *port, *step), outcome);
            }
            Req::SetSwitchInfo { node, .. } => self.on_set_switch_info(request, *node, outcome),
            Req::SetLft { node, block, .. } => match (outcome, self.subnet.node(*node)) {
                (Outcome::Reply { status: 0, data }, Some(n)) => {
                    self.programming.lft_written(n, *block, data);
                    self.publish_digests_if_changed();
                }
                (Outcome::Reply { status: 0, .. }, None) => {}
                _ => self.fail(request, outcome),
            },
            Req::GetSmInfo { node, port, .. } => self.on_found_sm(request, *node, *port, outcome),
            Req::RereadSmInfo { guid, .. } => self.on_sm_reread(*guid, outcome),
            Req::PollMaster { .. } => self.on_poll(outcome),
            Req::MasterLid { master } => self.on_master_lid(*master, outcome),
            Req::SetSmInfo { to, control, .. } if *control == election::control::HANDOVER => {
                self.on_handover_sent(*to, outcome);
            }
            Req::SetSmInfo { .. } => {}
            Req::GetVlTable { node, read, pass, .. } => {
                self.sa.on_table_read(*node, *read, *pass, outcome);
                self.census_pump();
            }
        }
    }

    /// Records a failed SMP.
    fn fail(&mut self, request: &Request, outcome: &Outcome) {
        let failure = outcome.failure().unwrap_or(SmpFailure::Status(ibsm_mad::ids::status::BAD_FIELD));
        let (attr_id, attr_mod) = transactions::describe(&request.req);
        self.sweep.note_failure(&request.req, self.phase == SweepPhase::Discovering);
        self.events.push_back(SmEvent::SmpFailed { attr_id, attr_mod, path: request.path, failure });
        // A Set that fails between sweeps (the multicast tables and their top are written
        // then) has no sweep end to repair it: a repair sweep is due, with the same back-off,
        // three times per heavy sweep, then the heavy re-sweep. The repair's end writes again
        // what the switch does not hold.
        let set = matches!(
            request.req,
            Req::SetMft { .. }
                | Req::SetSwitchInfo { .. }
                | Req::SetPKeys { .. }
                | Req::SetSl2Vl { .. }
                | Req::SetVlArb { .. }
                | Req::SetLft { .. }
                | Req::SetPortInfo { .. }
        );
        if set && self.phase == SweepPhase::Up && self.state == SmState::Master {
            self.schedule.set_failed_between_sweeps(self.now, self.cfg.resweep_interval_ns);
        }
    }

    fn enter(&mut self, phase: SweepPhase) {
        self.sweep.enter(self.phase, phase, self.now);
        self.phase = phase;
        self.events.push_back(SmEvent::PhaseStarted { phase, at: self.now });
    }

    /// Moves to the next phase whenever the sweep has none of its own requests left queued or
    /// in flight (other operations' SMPs do not hold it back) and no compute step is pending.
    fn advance(&mut self) {
        self.feed_port_reads();
        // The routing job's result comes first, except an early route's while the ports are
        // configured.
        if self.routing.job_out() && !(self.phase == SweepPhase::ConfiguringPorts && self.routing.early_pending()) {
            return;
        }
        // (The configuration's tables, if its port Sets were all answered before they were built.)
        while self.tx.is_idle_for(Op::Sweep) && !self.build_due_table_sets() && self.sweep.compute().is_none() {
            // Discovery's port reads are all queued before it ends; then the LFT read-backs it
            // planned go.
            if self.phase == SweepPhase::Discovering && self.discovery.reads_pending() {
                self.feed_port_reads();
                continue;
            }
            if self.phase == SweepPhase::Discovering {
                let gets = self.programming.take_read_backs();
                if !gets.is_empty() {
                    for g in gets {
                        self.tx.push(g);
                    }
                    continue;
                }
            }
            match self.phase {
                SweepPhase::Discovering if self.quick.is_some() => {
                    if !self.after_quick_reads() {
                        return;
                    }
                }
                SweepPhase::Discovering => {
                    match self.yield_after_discovery() {
                        // A standby now: the sweep ends before it touches anything.
                        DiscoveryEnd::Yielded => continue,
                        // An SM that handed over is read again first.
                        DiscoveryEnd::Wait => return,
                        DiscoveryEnd::Proceed => {}
                    }
                    let blocked = self.discovery.carry_over_silent(&mut self.subnet);
                    self.sweep.set_blocked(blocked);
                    let plan = self.cfg.expected_topology.as_deref();
                    let event = self.checks.check_cabling(&mut self.subnet, plan, self.cfg.refuse_miscabled);
                    self.events.extend(event);
                    self.maintenance.cut_links(&mut self.subnet);
                    self.enter(SweepPhase::AssigningLids);
                    self.sweep.wait_for(ComputeStep::AssignLids);
                }
                SweepPhase::AssigningLids => {
                    if self.configure_after_lids() {
                        return;
                    }
                }
                SweepPhase::ConfiguringPorts if self.mkeys.keying() => {
                    // The ports hold their new M_Keys now: the rest of the configuration.
                    self.mkeys.keyed();
                    self.configure_ports();
                }
                SweepPhase::ConfiguringPorts => {
                    self.enter(SweepPhase::Routing);
                    if !self.route_after_configuration() {
                        return;
                    }
                }
                SweepPhase::Routing => {
                    self.enter(SweepPhase::ProgrammingLfts);
                    self.routing.writing();
                    if let Some((switches, routes)) = self.routing.routes() {
                        // A repair written in two passes: its changed entries unrouted first.
                        // A repair's deltas say how `routes` differ, not the first pass's tables.
                        let (first, rank, deltas) = match self.routing.interim() {
                            Some(t) => (t, None, None),
                            None => (routes, self.routing.write_rank(), self.routing.deltas()),
                        };
                        let plan = self.programming.lft_sets_ranked(&self.subnet, switches, first, rank, deltas);
                        self.queue_lft_plan(plan);
                    }
                }
                // A plan's Sets held for the standbys to see the digests ([`Sm::release_lfts`]).
                SweepPhase::ProgrammingLfts if self.lft_gate.holds() => {
                    if !self.release_lfts() {
                        return;
                    }
                }
                // The first pass answered (every Set of it): the new entries, unless a Set of
                // it failed (that switch may hold old entries the new ones would loop with):
                // the next sweep writes from what the switches hold ([`Routing::hold_actual`]).
                SweepPhase::ProgrammingLfts if self.routing.take_interim().is_some() => {
                    if self.sweep.lft_failures() > 0 {
                        continue;
                    }
                    if let Some((switches, routes)) = self.routing.routes() {
                        let plan = self.programming.lft_sets_ranked(&self.subnet, switches, routes, None, None);
                        self.queue_lft_plan(plan);
                    }
                }
                SweepPhase::ProgrammingLfts => {
                    self.routing.written(self.sweep.lft_failures() == 0);
                    self.enter(SweepPhase::Arming);
                    self.walk_port_states(PortStep::Arm);
                }
                SweepPhase::Arming => {
                    self.enter(SweepPhase::Activating);
                    self.walk_port_states(PortStep::Activate);
                }
                SweepPhase::Activating if !self.sweep.has_snapshot() => {
                    // The SA's snapshot, as a compute step the driver's clock measures.
                    self.sweep.wait_for(ComputeStep::Snapshot);
                }
                SweepPhase::Activating => {
                    self.enter(SweepPhase::Up);
                    self.finish_sweep();
                    return;
                }
                SweepPhase::Up => return,
            }
        }
    }

    fn finish_sweep(&mut self) {
        self.programming.sweep_finished();
        // Between faults: the routing view brought up to the subnet as the sweep leaves it, so
        // that a quick sweep's relink sets only the ports it changes.
        self.routing.settle_view(&self.subnet, self.cfg.lmc);
        let facts = sweep::Facts {
            subnet: &self.subnet,
            smps: self.tx.counters,
            routing: (self.routing.engine_used(), self.routing.mode()),
            lmc: self.cfg.lmc,
            now: self.now,
        };
        let report = self.sweep.report(facts, |end| self.checks.left_out(end) || self.maintenance.cut(end));
        self.state = SmState::Master;
        self.program_multicast();
        self.program_aliases();
        self.census_pump();
        self.sync_after_sweep();
        self.schedule_light();
        let repairable = self.sweep.repairable();
        self.schedule.sweep_ended(self.now, report.complete, repairable, self.cfg.resweep_interval_ns);
        let by_guid = &self.subnet.by_guid;
        self.traps.after_sweep(self.now, |g| by_guid.contains_key(&g));
        self.schedule.requested_now(self.now);
        self.checks.settle();
        self.sweep.completed(report.clone(), self.now);
        self.schedule.count_done();
        let not_kept = self.port_settings.take_found();
        if !not_kept.is_empty() {
            self.events.push_back(SmEvent::PortSettingNotKept { ports: not_kept });
        }
        let bounced = self.port_settings.take_bounced();
        if !bounced.is_empty() {
            self.events.push_back(SmEvent::LinksBounced { ports: bounced });
        }
        self.events.push_back(SmEvent::SubnetUp(report));
        self.perf_after_sweep();
    }
}
