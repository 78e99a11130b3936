//! The performance manager (PM): a component that reads every linked port's counters through
//! its node's performance management agent (PMA, class 0x04 on QP1) once per interval, and
//! keeps per port 64-bit totals, the deltas and rates of the last interval, a bounded history,
//! and which ports went over an error threshold.
//!
//! Owns: the PM's schedule (a PM sweep every `perf-interval-s`), its own window of reads with its
//! own TIDs, timeouts and retries ([`window`]), the capabilities each node's PMA advertises in its
//! ClassPortInfo (kept by node GUID), the books of the ports ([`counters::PortBook`]), the error
//! policy ([`Thresholds`]), and, with `perf-avoid-unhealthy`, the hysteresis that turns flagged
//! ports into ports the routing avoids ([`avoid`]: run at the end of each PM sweep; a change
//! asks the coordinator for a re-route, [`Perf::take_reroute`], and [`Perf::routed`] takes what
//! the routing view made of the set, for the log, status and metrics). It takes the targets from the
//! coordinator (built by [`targets`] from the subnet) and answers with values: MADs to send
//! ([`Perf::poll_transmit`]) and events ([`Perf::poll_event`]). It knows nothing of SMPs, sweeps or
//! mastership: the coordinator (`Sm`) lets it send only while this SM is master and no sweep runs,
//! after the SMPs (a PM read never takes a place in the SMP window, so it never delays a sweep or a
//! failover), and stops it on a standby.
//!
//! How a port is read: the node's ClassPortInfo first (once, kept across PM sweeps). Where it
//! advertises `IsExtendedWidthSupported` (or its NoIETF form), PortCountersExtended gives the
//! 64-bit data and packet counters; PortCounters gives the error counters and PortXmitWait,
//! unless `IsAdditionalPortCountersExtendedSupported` gives them 64-bit too. A port's reading
//! is taken into its book when all its reads are in.
//!
//! How no data is lost: 64-bit counters are never cleared (they would take centuries to wrap);
//! totals grow by differences between readings ([`counters`]). A counter that exists only in a
//! narrow form (PortCounters: 32-bit data and packets where the PMA has no extended counters,
//! 16/8/4-bit errors, 32-bit PortXmitWait) saturates instead of wrapping, so the PM clears it
//! with a Set right after the reading that finds it filling (the data and packet counters and
//! PortXmitWait whenever they are not zero, an error counter once past half its range) and
//! takes the Set's answer, the counters just after the clear, as the new starting point. What
//! the port counts between the Get's answer and the Set's arrival (one round trip,
//! microseconds) is the only count a clear can miss, and only counters being cleared can miss
//! it: an error counter that stays under half its range is never cleared and loses nothing. A
//! reading at a narrow counter's maximum is marked saturated (its delta is a lower bound).

pub mod avoid;
pub mod counters;
mod window;

use std::collections::{BTreeMap, HashMap, VecDeque};

use ibsm_mad::header::{MadHeader, Method, MgmtClass};
use ibsm_mad::perf::{
    COUNTER_SELECT2_XMIT_WAIT, CounterSelect, PERF_DATA_OFFSET, PmCapabilities, PortCounters, PortCountersExtended,
};
use ibsm_mad::records::ClassPortInfo;
use ibsm_mad::{Attribute, Guid, Lid, PortNum, ids};

use self::counters::{COUNTERS, Counter, Counts, PortBook, Wide};
use self::window::{Read, Window};
use super::events::SmEvent;
use super::io::Transmit;
use super::state::Subnet;

/// Per-counter error thresholds per interval: a port whose counter grows by more than its
/// threshold in one interval is over it. `None`: that counter is not checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thresholds(pub [Option<u64>; COUNTERS]);

impl Default for Thresholds {
    /// `ibqueryerrors`'s (its `error_thresholds` file): 10 for the link errors, 100 for the
    /// discards and relay errors, 1000 for PortXmitWait; traffic is not checked.
    fn default() -> Self {
        Thresholds(Counter::ALL.map(Counter::default_threshold))
    }
}

/// Which ports' counters the metrics export (`perf-metrics-ports`): for a fabric too large
/// for one series per port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PortExport {
    /// Every port the PM reads (`all`, the default).
    #[default]
    All,
    /// Ports with errors in their last interval or over a threshold (`errors`).
    Errors,
    /// Those, and the N with the most traffic over their last interval (`top-N`).
    Top(usize),
}

impl PortExport {
    /// `all`, `errors` or `top-N`.
    pub fn parse(s: &str) -> Option<PortExport> {
        match s {
            "all" => Some(PortExport::All),
            "errors" => Some(PortExport::Errors),
            _ => s.strip_prefix("top-").and_then(|n| n.parse().ok()).map(PortExport::Top),
        }
    }
}

/// The PM's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PerfConfig {
    /// A PM sweep every this many ns (`perf-interval-s`, default 10 s); 0: no PM.
    pub interval_ns: u64,
    /// PM reads in flight at once (default 16), apart from the SMP window.
    pub max_in_flight: usize,
    /// How long a read waits for its answer before it is sent again, ns (default 200 ms).
    pub timeout_ns: u64,
    /// Sends again after a timeout (default 2).
    pub retries: u32,
    /// Intervals of history kept per port (default 30: five minutes at 10 s; 32 bytes a
    /// port an interval, 160 MB for the 166k ports of a k=48 fat tree).
    pub history: usize,
    /// The error thresholds.
    pub thresholds: Thresholds,
    /// Which ports the metrics export.
    pub export: PortExport,
    /// Ports the PM flags are avoided by the routing (`perf-avoid-unhealthy`, off: `None`).
    pub avoid: Option<avoid::AvoidPolicy>,
}

impl Default for PerfConfig {
    fn default() -> Self {
        PerfConfig {
            interval_ns: 10_000_000_000,
            max_in_flight: 16,
            timeout_ns: 200_000_000,
            retries: 2,
            history: 30,
            thresholds: Thresholds::default(),
            export: PortExport::All,
            avoid: None,
        }
    }
}

/// A port, by its node's GUID and number.
pub type PortKey = (Guid, u8);

/// A node to read: where its PMA answers and which ports to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// NodeGUID.
    pub node: Guid,
    /// NodeDescription.
    pub desc: String,
    /// A switch (ports share the LID of port 0).
    pub switch: bool,
    /// The ports to read, each with the LID its PMA answers at.
    pub ports: Vec<(u8, Lid)>,
}

/// Every node of `subnet` with a linked, cabled port and a LID to reach it by: switches at
/// their port 0's LID, CA ports at their own.
pub fn targets(subnet: &Subnet) -> Vec<Target> {
    subnet
        .nodes
        .iter()
        .filter(|n| !n.carried)
        .filter_map(|n| {
            let switch = n.is_switch();
            let base = n.port(PortNum(0)).map_or(Lid::UNASSIGNED, |p| p.lid);
            let ports: Vec<(u8, Lid)> = n
                .ports
                .iter()
                .enumerate()
                .skip(1)
                .filter(|(_, r)| r.is_linked() && r.remote.is_some())
                .filter_map(|(i, r)| {
                    let lid = if switch { base } else { r.lid };
                    Some((u8::try_from(i).ok()?, lid)).filter(|_| lid != Lid::UNASSIGNED)
                })
                .collect();
            (!ports.is_empty()).then(|| Target { node: n.info.node_guid, desc: n.desc.clone(), switch, ports })
        })
        .collect()
}

/// A port over a threshold in its last interval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flagged {
    /// When it was first found over (core clock, ns).
    pub since: u64,
    /// The counters over their threshold in the last interval: (counter, delta, threshold).
    pub over: Vec<(Counter, u64, u64)>,
}

/// A PM sweep's figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PerfSweep {
    /// When it started and ended (core clock, ns).
    pub started_at: u64,
    /// When its last answer came (or its last read failed).
    pub ended_at: u64,
    /// Ports whose reading was taken.
    pub ports_read: usize,
    /// Reads that failed (no answer after the retries, or an error status).
    pub failed: u64,
}

/// Counts of the PM's MADs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PerfCounts {
    /// PM sweeps completed.
    pub sweeps: u64,
    /// Requests sent (retries included).
    pub sent: u64,
    /// Answers taken.
    pub answers: u64,
    /// Waits for an answer that ran out.
    pub timeouts: u64,
    /// Reads given up (retries exhausted, or an error status).
    pub failed: u64,
    /// Counter clears sent.
    pub clears: u64,
    /// Times a port went over a threshold.
    pub threshold_events: u64,
}

/// A port's reads of the running PM sweep, until all are in.
#[derive(Debug, Clone, Default)]
struct Pending {
    counters: Option<PortCounters>,
    extended: Option<PortCountersExtended>,
}

/// The performance manager (see the module doc).
#[derive(Debug, Default)]
pub struct Perf {
    cfg: PerfConfig,
    /// When the next PM sweep is due (`None`: not scheduled, as on a standby).
    next_at: Option<u64>,
    /// The running PM sweep's figures, while one runs.
    running: Option<PerfSweep>,
    last: Option<PerfSweep>,
    /// The targets of the running PM sweep, by node GUID.
    targets: HashMap<Guid, Target>,
    caps: HashMap<Guid, PmCapabilities>,
    pending: HashMap<PortKey, Pending>,
    window: Window,
    books: BTreeMap<PortKey, PortBook>,
    /// Node descriptions of the ports in `books`, by node GUID.
    descs: HashMap<Guid, String>,
    flagged: BTreeMap<PortKey, Flagged>,
    events: VecDeque<SmEvent>,
    counts: PerfCounts,
    /// The avoided-ports hysteresis, while `perf-avoid-unhealthy` is on.
    avoid: Option<avoid::Avoid>,
    /// The avoided set changed: the coordinator should route again.
    reroute: bool,
    /// What the last routing made of the avoided ports.
    routed: avoid::Routed,
}

impl Perf {
    /// A PM with `cfg`.
    pub fn new(cfg: PerfConfig) -> Perf {
        let window = Window::new(cfg.max_in_flight, cfg.timeout_ns, cfg.retries);
        let avoid = cfg.avoid.map(avoid::Avoid::new);
        Perf { cfg, window, avoid, ..Perf::default() }
    }

    // ---- getters ----

    /// The configuration.
    pub fn config(&self) -> &PerfConfig {
        &self.cfg
    }
    /// Every port's book, by (node GUID, port).
    pub fn books(&self) -> &BTreeMap<PortKey, PortBook> {
        &self.books
    }
    /// The NodeDescription of `node` as last given.
    pub fn desc(&self, node: Guid) -> &str {
        self.descs.get(&node).map_or("", String::as_str)
    }
    /// Ports over a threshold in their last interval.
    pub fn flagged(&self) -> &BTreeMap<PortKey, Flagged> {
        &self.flagged
    }
    /// The last completed PM sweep.
    pub fn last_sweep(&self) -> Option<&PerfSweep> {
        self.last.as_ref()
    }
    /// Counts of the PM's MADs and sweeps.
    pub fn counts(&self) -> PerfCounts {
        self.counts
    }
    /// The capabilities `node`'s PMA advertised.
    pub fn capabilities(&self, node: Guid) -> Option<PmCapabilities> {
        self.caps.get(&node).copied()
    }
    /// The ports the routing should leave out (empty while `perf-avoid-unhealthy` is off).
    pub fn avoided(&self) -> Vec<(Guid, PortNum)> {
        self.avoid.as_ref().map_or_else(Vec::new, |a| a.avoided().iter().map(|&(g, p)| (g, PortNum(p))).collect())
    }
    /// What the last routing made of the avoided ports: links left out, and links kept.
    pub fn routed(&self) -> &avoid::Routed {
        &self.routed
    }
    /// The re-routes the avoided set caused, and the interval ends whose change the budget
    /// deferred.
    pub fn avoid_counts(&self) -> (u64, u64) {
        self.avoid.as_ref().map_or((0, 0), |a| (a.reroutes, a.deferred))
    }
    /// Whether a PM sweep runs.
    pub fn sweeping(&self) -> bool {
        self.running.is_some()
    }
    /// Entries of its growing tables, for the soak's footprint check.
    pub fn sizes(&self) -> [(&'static str, usize); 3] {
        [("perf_ports", self.books.len()), ("perf_caps", self.caps.len()), ("perf_in_flight", self.window.len())]
    }

    // ---- inputs ----

    /// This SM is master: the first PM sweep is due now, unless one is scheduled already.
    pub fn master(&mut self, now: u64) {
        if self.cfg.interval_ns > 0 && self.next_at.is_none() {
            self.next_at = Some(now);
        }
    }

    /// This SM is no longer master: no PM sweep, nothing queued or waited for (the books stay,
    /// as last read).
    pub fn stop(&mut self) {
        self.next_at = None;
        self.running = None;
        self.pending.clear();
        self.targets.clear();
        self.window.clear();
    }

    /// A configuration read again at `now` (a reload), in force at once: a new interval (0
    /// stops the PM sweeps, the running one ends; on a `master` the next is due within the new
    /// interval), what the metrics export, the thresholds, the history's length and the
    /// avoided-ports policy. The window's size and timeouts stay.
    pub fn reconfigure(&mut self, cfg: &PerfConfig, now: u64, master: bool) {
        let interval_ns = cfg.interval_ns;
        self.cfg.interval_ns = interval_ns;
        self.cfg.export = cfg.export;
        self.cfg.thresholds = cfg.thresholds;
        // A shorter history is cut at each port's next reading.
        self.cfg.history = cfg.history;
        if self.cfg.avoid != cfg.avoid {
            // A new policy starts from nothing avoided; tables that avoided something are
            // routed again.
            self.cfg.avoid = cfg.avoid;
            self.reroute |= self.avoid.as_ref().is_some_and(|a| !a.avoided().is_empty());
            self.avoid = cfg.avoid.map(avoid::Avoid::new);
        }
        let next = now.saturating_add(interval_ns);
        self.next_at = match self.next_at {
            _ if interval_ns == 0 => None,
            Some(t) => Some(t.min(next)),
            None if master => Some(now),
            None => None,
        };
    }

    /// Whether a PM sweep is due at `now`.
    pub fn due(&self, now: u64) -> bool {
        self.running.is_none() && self.next_at.is_some_and(|t| t <= now)
    }

    /// Starts a PM sweep of `targets` at `now` (the next one is due an interval later); nodes
    /// and ports no longer in the fabric are forgotten.
    pub fn start(&mut self, now: u64, targets: Vec<Target>) {
        if self.cfg.interval_ns == 0 {
            return;
        }
        self.next_at = Some(now.saturating_add(self.cfg.interval_ns));
        let present: HashMap<Guid, &Target> = targets.iter().map(|t| (t.node, t)).collect();
        self.books.retain(|(g, p), _| present.get(g).is_some_and(|t| t.ports.iter().any(|(q, _)| q == p)));
        self.flagged.retain(|k, _| self.books.contains_key(k));
        self.caps.retain(|g, _| present.contains_key(g));
        self.descs = targets.iter().map(|t| (t.node, t.desc.clone())).collect();
        self.pending.clear();
        self.window.clear();
        // Spread over the nodes: the first read of every node, then the second of every node...
        let mut per_node: Vec<VecDeque<Read>> = targets.iter().map(|t| self.reads_of(t).into()).collect();
        loop {
            let mut any = false;
            for q in &mut per_node {
                if let Some(r) = q.pop_front() {
                    self.window.push(r);
                    any = true;
                }
            }
            if !any {
                break;
            }
        }
        self.targets = targets.into_iter().map(|t| (t.node, t)).collect();
        self.running = Some(PerfSweep { started_at: now, ended_at: now, ..PerfSweep::default() });
        self.finish_if_done(now);
    }

    /// A PerfMgt response arrived at `now`: taken if it answers a read in flight.
    pub fn handle_response(&mut self, now: u64, bytes: &[u8]) {
        let Ok(h) = MadHeader::from_bytes(bytes) else { return };
        if h.mgmt_class != MgmtClass::Perf || bytes.len() < ibsm_mad::MAD_LEN {
            return;
        }
        let Some(read) = self.window.answered(h.tid) else { return };
        self.counts.answers += 1;
        let data = &bytes[PERF_DATA_OFFSET..];
        if h.status != ids::status::OK {
            self.failed(now, &read);
            return;
        }
        match read {
            Read::ClassPortInfo { node, .. } => match ClassPortInfo::parse(data) {
                Ok(cpi) => {
                    self.caps.insert(node, PmCapabilities::from_class_port_info(&cpi));
                    if let Some(t) = self.targets.get(&node) {
                        for r in Self::port_reads(t, PmCapabilities::from_class_port_info(&cpi)) {
                            self.window.push(r);
                        }
                    }
                }
                Err(_) => self.failed(now, &read),
            },
            Read::Counters { node, port, .. } => match PortCounters::parse(data) {
                Ok(pc) if pc.port_select == port => {
                    self.pending.entry((node, port)).or_default().counters = Some(pc);
                    self.complete(now, (node, port));
                }
                _ => self.failed(now, &read),
            },
            Read::Extended { node, port, .. } => match PortCountersExtended::parse(data) {
                Ok(ext) if ext.port_select == port => {
                    self.pending.entry((node, port)).or_default().extended = Some(ext);
                    self.complete(now, (node, port));
                }
                _ => self.failed(now, &read),
            },
            Read::Clear { node, port, select, .. } => {
                if let (Ok(pc), Some(book)) = (PortCounters::parse(data), self.books.get_mut(&(node, port))) {
                    let cleared: Vec<Counter> =
                        Counter::ALL.into_iter().filter(|c| select & (1 << c.index()) != 0).collect();
                    book.cleared(&cleared, &Counts::from_port_counters(&pc));
                }
            }
        }
        self.finish_if_done(now);
    }

    /// Time passed: reads whose answer is overdue are sent again or given up.
    pub fn handle_timeout(&mut self, now: u64) {
        let (timeouts, failed) = self.window.expire(now);
        self.counts.timeouts += timeouts;
        for read in failed {
            self.failed(now, &read);
        }
        self.finish_if_done(now);
    }

    // ---- outputs ----

    /// The next PM read to send at `now`, while the window has room.
    pub fn poll_transmit(&mut self, now: u64) -> Option<Transmit> {
        let t = self.window.poll_transmit(now)?;
        self.counts.sent += 1;
        Some(t)
    }

    /// When [`Perf::handle_timeout`] is next due: an overdue read, or (with `may_start`) the
    /// next PM sweep.
    pub fn poll_timeout(&self, may_start: bool) -> Option<u64> {
        let sweep = self.next_at.filter(|_| may_start && self.running.is_none());
        [self.window.poll_timeout(), sweep].into_iter().flatten().min()
    }

    /// The next event for logs and metrics.
    pub fn poll_event(&mut self) -> Option<SmEvent> {
        self.events.pop_front()
    }

    /// Whether the avoided set changed since the last call: the coordinator routes again.
    pub fn take_reroute(&mut self) -> bool {
        std::mem::take(&mut self.reroute)
    }

    /// What a routing made of [`Perf::avoided`]: links it left out and links it kept because
    /// leaving them out would cut a LID off. Each port is reported once when it starts being
    /// avoided, when it is kept, and when it is used again.
    pub fn set_routed(&mut self, cut: &[(Guid, PortNum)], kept: &[(Guid, PortNum)]) {
        let key = |&(g, p): &(Guid, PortNum)| (g, p.0);
        let new = avoid::Routed { cut: cut.iter().map(key).collect(), kept: kept.iter().map(key).collect() };
        let desc = |g: Guid| self.descs.get(&g).cloned().unwrap_or_default();
        for &(node, port) in new.cut.difference(&self.routed.cut) {
            self.events.push_back(SmEvent::PortAvoided { node, port: PortNum(port), desc: desc(node) });
        }
        for &(node, port) in new.kept.difference(&self.routed.kept) {
            self.events.push_back(SmEvent::PortAvoidKept { node, port: PortNum(port), desc: desc(node) });
        }
        for &(node, port) in self.routed.cut.difference(&new.cut) {
            self.events.push_back(SmEvent::PortUsedAgain { node, port: PortNum(port), desc: desc(node) });
        }
        self.routed = new;
    }

    // ---- internals ----

    fn reads_of(&self, t: &Target) -> Vec<Read> {
        match self.caps.get(&t.node) {
            Some(&caps) => Self::port_reads(t, caps),
            None => t.ports.first().map(|&(_, lid)| Read::ClassPortInfo { node: t.node, lid }).into_iter().collect(),
        }
    }

    fn port_reads(t: &Target, caps: PmCapabilities) -> Vec<Read> {
        let mut out = Vec::new();
        for &(port, lid) in &t.ports {
            out.push(Read::Counters { node: t.node, port, lid });
            if caps.extended_counters() {
                out.push(Read::Extended { node: t.node, port, lid });
            }
        }
        out
    }

    /// A read failed: the port's reading of this PM sweep is dropped (the next one takes up
    /// the difference).
    fn failed(&mut self, now: u64, read: &Read) {
        self.counts.failed += 1;
        if let Some(r) = self.running.as_mut() {
            r.failed += 1;
            r.ended_at = now;
        }
        if let Some(key) = read.port() {
            self.pending.remove(&key);
        }
    }

    /// Takes a port's reading into its book once all its reads are in.
    fn complete(&mut self, now: u64, key: PortKey) {
        let caps = self.caps.get(&key.0).copied().unwrap_or_default();
        let Some(p) = self.pending.get(&key) else { return };
        let Some(pc) = p.counters else { return };
        if caps.extended_counters() && p.extended.is_none() {
            return;
        }
        let ext = p.extended;
        self.pending.remove(&key);
        let mut reading = Counts::from_port_counters(&pc);
        let mut wide = Wide::default();
        if let Some(ext) = ext {
            let errors = caps.extended_error_counters();
            reading.take_extended(&ext, errors);
            wide = if errors { Wide::ALL } else { Wide::TRAFFIC };
        }
        let book = self.books.entry(key).or_default();
        let interval = book.absorb(now, &reading, wide, self.cfg.history);
        let clear = counters::to_clear(&reading, wide);
        if let Some(r) = self.running.as_mut() {
            r.ports_read += 1;
            r.ended_at = now;
        }
        if !clear.is_empty()
            && let Some(lid) = self.targets.get(&key.0).and_then(|t| t.ports.iter().find(|(q, _)| *q == key.1))
        {
            let select = clear.iter().fold(0u32, |m, c| m | (1 << c.index()));
            self.window.push_front(Read::Clear { node: key.0, port: key.1, lid: lid.1, select });
            self.counts.clears += 1;
        }
        if let Some(i) = interval {
            self.check(now, key, &i.delta);
        }
    }

    /// The error policy: a port whose counter grew past its threshold in the interval is
    /// flagged (an event the first time), and unflagged by an interval under every threshold.
    fn check(&mut self, now: u64, key: PortKey, delta: &Counts) {
        let over: Vec<(Counter, u64, u64)> = Counter::ALL
            .into_iter()
            .filter_map(|c| {
                let t = self.cfg.thresholds.0[c.index()]?;
                (delta.get(c) > t).then_some((c, delta.get(c), t))
            })
            .collect();
        if over.is_empty() {
            self.flagged.remove(&key);
            return;
        }
        if let Some(f) = self.flagged.get_mut(&key) {
            f.over = over;
            return;
        }
        self.counts.threshold_events += 1;
        self.events.push_back(SmEvent::PortErrors {
            node: key.0,
            port: PortNum(key.1),
            desc: self.descs.get(&key.0).cloned().unwrap_or_default(),
            over: over.iter().map(|&(c, d, t)| (c.name(), d, t)).collect(),
        });
        self.flagged.insert(key, Flagged { since: now, over });
    }

    fn finish_if_done(&mut self, now: u64) {
        if self.running.is_some() && self.window.is_idle() {
            let Some(mut done) = self.running.take() else { return };
            done.ended_at = done.ended_at.max(now).max(done.started_at);
            self.pending.clear();
            self.counts.sweeps += 1;
            self.last = Some(done);
            self.avoid_interval(now, done.started_at);
        }
    }

    /// The end of a PM sweep that started at `started`, for the avoided-ports hysteresis: the
    /// ports read in it are those whose reading is that recent.
    fn avoid_interval(&mut self, now: u64, started: u64) {
        let Some(a) = self.avoid.as_mut() else { return };
        let flagged: std::collections::BTreeSet<PortKey> = self.flagged.keys().copied().collect();
        let books = &self.books;
        let read = |k: &PortKey| books.get(k).and_then(|b| b.read_at).is_some_and(|t| t >= started);
        let change = a.interval(now, |k| books.contains_key(k), read, &flagged);
        self.reroute |= change.reroute;
    }
}

/// The request of a read: Get (or, for a clear, Set) of its attribute at `tid`.
fn request(read: &Read, tid: u64) -> [u8; ibsm_mad::MAD_LEN] {
    use ibsm_mad::perf::PerfMad;
    match *read {
        Read::ClassPortInfo { .. } => PerfMad::request(Method::Get, tid, 0, &ClassPortInfo::default()),
        Read::Counters { port, .. } => {
            PerfMad::request(Method::Get, tid, 0, &PortCounters { port_select: port, ..PortCounters::default() })
        }
        Read::Extended { port, .. } => PerfMad::request(
            Method::Get,
            tid,
            0,
            &PortCountersExtended { port_select: port, ..PortCountersExtended::default() },
        ),
        Read::Clear { port, select, .. } => {
            let mut mask = 0u16;
            let mut select2 = 0u8;
            for c in Counter::ALL.into_iter().filter(|c| select & (1 << c.index()) != 0) {
                match clear_bit(c) {
                    Some(b) => mask |= b.0,
                    None => select2 |= COUNTER_SELECT2_XMIT_WAIT,
                }
            }
            let pc = PortCounters {
                port_select: port,
                counter_select: CounterSelect(mask),
                counter_select2: select2,
                ..PortCounters::default()
            };
            PerfMad::request(Method::Set, tid, 0, &pc)
        }
    }
}

/// The `CounterSelect` bit that clears `c` (`None` for PortXmitWait, cleared by
/// `CounterSelect2`).
fn clear_bit(c: Counter) -> Option<CounterSelect> {
    Some(match c {
        Counter::SymbolErrors => CounterSelect::SYMBOL_ERRORS,
        Counter::LinkErrorRecovery => CounterSelect::LINK_ERROR_RECOVERY,
        Counter::LinkDowned => CounterSelect::LINK_DOWNED,
        Counter::RcvErrors => CounterSelect::RCV_ERRORS,
        Counter::RcvRemotePhysicalErrors => CounterSelect::RCV_REMOTE_PHYSICAL_ERRORS,
        Counter::RcvSwitchRelayErrors => CounterSelect::RCV_SWITCH_RELAY_ERRORS,
        Counter::XmitDiscards => CounterSelect::XMIT_DISCARDS,
        Counter::XmitConstraintErrors => CounterSelect::XMIT_CONSTRAINT_ERRORS,
        Counter::RcvConstraintErrors => CounterSelect::RCV_CONSTRAINT_ERRORS,
        Counter::LocalLinkIntegrityErrors => CounterSelect::LOCAL_LINK_INTEGRITY_ERRORS,
        Counter::ExcessiveBufferOverrunErrors => CounterSelect::EXCESSIVE_BUFFER_OVERRUN_ERRORS,
        Counter::Vl15Dropped => CounterSelect::VL15_DROPPED,
        Counter::XmitWait => return None,
        Counter::XmitData => CounterSelect::XMIT_DATA,
        Counter::RcvData => CounterSelect::RCV_DATA,
        Counter::XmitPkts => CounterSelect::XMIT_PKTS,
        Counter::RcvPkts => CounterSelect::RCV_PKTS,
    })
}

#[cfg(test)]
mod tests;
