//! `ibsm sim play`: the SM brings a fabric up on the in-process simulator, then a script of
//! timed faults runs against it, and each fault is measured.
//!
//! Owns the fault script (its parser: one event per line, `TIME ACTION ARGS`, every error with
//! its line) and the measurement of each event: how long the SM took to notice, how long it
//! computed, how many LFT blocks it wrote and how many of them truly changed (counted by the
//! simulated switches themselves), when the last block landed, and whether the fabric's tables
//! then route every live HCA to every other without a loop or a dead link (checked on the
//! switches' own tables), and with a layered routing how many HCA pairs' SL changed
//! ([`sl_changes`]). Time is the simulator's virtual clock; the SM's computing takes the
//! wall time it really takes (so `compute_ms` is real), or the CPU time of its thread
//! ([`ComputeTime::ThreadCpu`]: on a machine busy with other work the wall time includes the
//! waits for a core, which push the SM's work past the next event's time). The invariants are measured at the end
//! of every event's window but judged only at quiescent points (a `settle`, the last event),
//! as `ibsm sim soak` judges them: between faults a route may be broken for as long as the SM
//! takes to notice (a trap lost to packet loss waits for the next light sweep).

use std::fmt;

use ibsm_sim::fabric::{ErrorRate, Fault, LinkRule, SimConfig, SimTime, Stats};
use ibsm_topology::Topology;
use serde::Serialize;

use crate::core::{Guid2Lid, Sm, SmConfig, SmEvent, SubnetReport, SweepPhase};
use crate::transport::sim::{ComputeTime, SimSms};

/// Virtual time a last event is followed for, at most (ns).
const TAIL_NS: u64 = 30_000_000_000;

/// What an event does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Action {
    /// Pull the cable at (node, port).
    LinkDown(usize, u8),
    /// Plug it back.
    LinkUp(usize, u8),
    /// The node stops; its links go down.
    NodeCrash(usize),
    /// The node comes back at power-on state.
    NodeRestart(usize),
    /// Drop this share of all packets from now on (0 ends it).
    Drop(f64),
    /// Delay every packet by this many ns from now on (0 ends it).
    Delay(u64),
    /// Force a full re-route (a sweep), to measure it.
    Reroute,
    /// End every packet rule; a quiescent point (the soak checks its invariants there).
    Settle,
    /// Kill the master SM as `kill -9` would (a standby should take over).
    SmKill,
    /// Start the killed SM again as a new process: fresh memory, the `guid2lid` it last wrote.
    SmRestart,
    /// Give the cable at (node, port) an error rate (a bad cable: its two ports count errors;
    /// packets still pass); a zero rate ends it.
    LinkErrors(usize, u8, ErrorRate),
}

/// One line of a script.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// When, ns after the fabric came up.
    pub at_ns: u64,
    /// What.
    pub action: Action,
    /// The line as written (trimmed), for the report.
    pub line: String,
}

/// A line the parser refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptError {
    /// 1-based line number.
    pub line: usize,
    /// Why.
    pub reason: String,
}

impl fmt::Display for ScriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.reason)
    }
}

/// `2s`, `1500ms`, `250us`, `800ns`, `0.5s` in ns.
///
/// # Errors
/// A message when `t` is not a non-negative number with a unit, or above 1,000,000 s.
pub fn parse_time(t: &str) -> Result<u64, String> {
    let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e6)
    } else if let Some(n) = t.strip_suffix("us") {
        (n, 1e3)
    } else if let Some(n) = t.strip_suffix("ns") {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1e9)
    } else {
        return Err(format!("time {t:?} needs a unit: s, ms, us or ns (e.g. 2s, 1500ms)"));
    };
    let v: f64 = num.parse().map_err(|_| format!("time {t:?} is not a number with a unit"))?;
    if !v.is_finite() || v < 0.0 || v * scale > 1e15 {
        return Err(format!("time {t:?} is out of range (0 to 1,000,000 s)"));
    }
    // In range and not negative (checked above): the cast keeps the value.
    #[allow(clippy::cast_sign_loss)]
    Ok((v * scale).round() as u64)
}

/// `NAME[PORT]` (port given) or `NAME`: the node index and the port.
fn parse_target(topo: &Topology, t: &str, want_port: bool) -> Result<(usize, u8), String> {
    let (name, port) = match t.strip_suffix(']').and_then(|r| r.rsplit_once('[')) {
        Some((n, p)) => (n, Some(p.parse::<u8>().map_err(|_| format!("port {p:?} in {t:?} is not 1..=254"))?)),
        None => (t, None),
    };
    let node = topo.find(name).ok_or_else(|| format!("no node named {name:?} in the fabric"))?;
    match (want_port, port) {
        (true, None) => Err(format!("{t:?} names no port: write NAME[PORT]")),
        (false, Some(_)) => Err(format!("{t:?}: this action takes a node, not a port")),
        (true, Some(p)) => {
            if topo.nodes[node].peer(p).is_none() {
                return Err(format!("{name}[{p}] has no cable in the fabric"));
            }
            Ok((node, p))
        }
        (false, None) => Ok((node, 0)),
    }
}

fn parse_action(topo: &Topology, words: &[&str]) -> Result<Action, String> {
    let arg = |i: usize| words.get(i).copied().ok_or_else(|| format!("{} needs an argument", words[0]));
    let one = |n: usize| if words.len() > n + 1 { Err(format!("{}: too many arguments", words[0])) } else { Ok(()) };
    let action = match words.first().copied().unwrap_or_default() {
        "link-down" => parse_target(topo, arg(1)?, true).map(|(n, p)| Action::LinkDown(n, p))?,
        "link-up" => parse_target(topo, arg(1)?, true).map(|(n, p)| Action::LinkUp(n, p))?,
        "node-crash" => Action::NodeCrash(parse_target(topo, arg(1)?, false)?.0),
        "node-restart" => Action::NodeRestart(parse_target(topo, arg(1)?, false)?.0),
        "drop" => {
            let p: f64 = arg(1)?.parse().map_err(|_| "drop takes a share 0..=1 (e.g. drop 0.1)".to_owned())?;
            if !(0.0..=1.0).contains(&p) {
                return Err(format!("drop {p}: the share must be 0..=1"));
            }
            Action::Drop(p)
        }
        "delay" => Action::Delay(parse_time(arg(1)?)?),
        "reroute" => {
            one(0)?;
            return Ok(Action::Reroute);
        }
        "settle" => {
            one(0)?;
            return Ok(Action::Settle);
        }
        "sm-kill" => {
            one(0)?;
            return Ok(Action::SmKill);
        }
        "sm-restart" => {
            one(0)?;
            return Ok(Action::SmRestart);
        }
        "link-errors" => {
            let (n, p) = parse_target(topo, arg(1)?, true)?;
            return Ok(Action::LinkErrors(n, p, parse_error_rate(&words[2..])?));
        }
        other => {
            return Err(format!(
                "unknown action {other:?}; expected link-down, link-up, link-errors, node-crash, node-restart, drop, delay, reroute, settle, sm-kill or sm-restart"
            ));
        }
    };
    one(1)?;
    Ok(action)
}

/// One `link-errors` action without its time, `NODE[PORT] symbol=N ...` (as a script line
/// gives it after the time; `ibsm run --sim --sim-link-errors` takes it): the node's index in
/// `topo`, the port, and the rate.
///
/// # Errors
/// What is wrong with it.
pub fn parse_link_errors(topo: &Topology, spec: &str) -> Result<(usize, u8, ErrorRate), String> {
    let words: Vec<&str> = spec.split_whitespace().collect();
    let target = words.first().ok_or_else(|| "link-errors needs NODE[PORT] and counts".to_owned())?;
    let (n, p) = parse_target(topo, target, true)?;
    Ok((n, p, parse_error_rate(&words[1..])?))
}

/// The arguments of `link-errors` after the port: `symbol=N`, `rcv=N`, `link-downed=N` (counts
/// per interval, default 0) and `per=TIME` (the interval, default `1s`), in any order, or `off`.
fn parse_error_rate(words: &[&str]) -> Result<ErrorRate, String> {
    let mut rate = ErrorRate { interval_ns: 1_000_000_000, ..ErrorRate::default() };
    if words == ["off"] {
        return Ok(rate);
    }
    if words.is_empty() {
        return Err("link-errors needs counts: symbol=N, rcv=N, link-downed=N [per=TIME], or off".to_owned());
    }
    for w in words {
        let (key, value) = w.split_once('=').ok_or_else(|| format!("link-errors: {w:?} is not KEY=VALUE"))?;
        let count = || value.parse::<u32>().map_err(|_| format!("link-errors: {key}={value:?} is not a count"));
        match key {
            "symbol" => rate.symbol_errors = count()?,
            "rcv" => rate.rcv_errors = count()?,
            "link-downed" => rate.link_downed = count()?,
            "per" => {
                rate.interval_ns = parse_time(value)?;
                if rate.interval_ns == 0 {
                    return Err("link-errors: per=0 is no interval".to_owned());
                }
            }
            other => {
                return Err(format!("link-errors: unknown key {other:?}; expected symbol, rcv, link-downed or per"));
            }
        }
    }
    Ok(rate)
}

/// Parses a fault script against `topo`: one event per line, `TIME ACTION [ARG]`, times not
/// decreasing; blank lines and `#` comments skipped.
///
/// # Errors
/// Every refused line, with its number and the reason.
pub fn parse_script(text: &str, topo: &Topology) -> Result<Vec<Step>, Vec<ScriptError>> {
    let mut steps: Vec<Step> = Vec::new();
    let mut errors = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let parsed = parse_time(words[0]).and_then(|at| {
            if steps.last().is_some_and(|s| s.at_ns > at) {
                return Err("times must not decrease from one line to the next".to_owned());
            }
            Ok(Step { at_ns: at, action: parse_action(topo, &words[1..])?, line: line.to_owned() })
        });
        match parsed {
            Ok(s) => steps.push(s),
            Err(reason) => errors.push(ScriptError { line: i + 1, reason }),
        }
    }
    if errors.is_empty() { Ok(steps) } else { Err(errors) }
}

/// The measurement of one event: one JSON line of `ibsm sim play`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcome {
    /// The script line.
    pub event: String,
    /// Virtual ms from the fault to the SM noticing it (a trap, or a sweep starting); 0 for
    /// `reroute`; `null` for packet rules, or when the SM did not notice.
    pub detect_ms: Option<f64>,
    /// Wall ms (or CPU ms, [`ComputeTime::ThreadCpu`]) the SM computed for it, over the sweeps of its window: the routing engine (or the
    /// repair), the LFT diff that picks the blocks to write, and the SA's snapshot.
    pub compute_ms: f64,
    /// Of `compute_ms`, the SA's snapshot (so that the routing and the LFT diff are
    /// `compute_ms - snapshot_ms`).
    pub snapshot_ms: f64,
    /// LFT blocks the switches were sent.
    pub blocks_sent: u64,
    /// Of those, blocks whose content differed from what the switch held.
    pub blocks_changed: u64,
    /// Virtual ms from the fault to the last LFT block written (to the end of the SM's sweep
    /// when none was); `null` when the SM did not react. The SM's computing takes virtual time
    /// as it took wall time, so this includes the routing and the LFT diff before the blocks go
    /// (and the snapshot too when no block was written: it comes after the last block).
    pub converge_ms: Option<f64>,
    /// Every live HCA reaches every other through the switches' tables, without a loop or a
    /// dead link, at the end of the event's window.
    pub invariants_ok: bool,
    /// When the event happened, virtual ms after the fabric came up.
    pub at_ms: f64,
    /// Sweeps the SM completed in the window.
    pub sweeps: u32,
    /// How the last of them made its tables: `full`, `reused` or `repaired` (`null`: none).
    pub routing: Option<&'static str>,
    /// LIDs that got new routes, and table entries changed, by the repairs in the window.
    pub repaired_lids: usize,
    /// Table entries the repairs changed.
    pub repaired_entries: usize,
    /// Re-routed (switch, LID) pairs of the layered repairs in the window that could keep no
    /// route on their layer: their SL changed (see `RouteMode::Repaired`).
    pub stranded: usize,
    /// (HCA, HCA) pairs checked.
    pub pairs: u64,
    /// One pair that failed the check, if any.
    pub failure: Option<String>,
    /// Live SMs that are master at the end of the window (1 when all is well).
    pub masters: usize,
    /// HCA port pairs whose PathRecord SL (the layer of a layered routing, `dfsssp`) differs
    /// between the master's SA snapshot before the event and at the end of its window, among
    /// the pairs in both (0 without layers on either side): the paths applications would have
    /// to query again.
    pub sl_changed: u64,
    /// The window ends at a quiescent point: a `settle` (packet rules ended, the fabric left
    /// alone until the next event) or the last event (followed until the SMs are idle). Only
    /// there must the invariants hold, as `ibsm sim soak` judges; elsewhere `invariants_ok` is
    /// the state the fault left, which may be a transient (a trap lost to packet loss waits
    /// for the next light sweep).
    pub quiescent: bool,
}

impl Outcome {
    /// Whether this outcome fails the script: the invariants do not hold at a quiescent point.
    pub fn fails(&self) -> bool {
        self.quiescent && !self.invariants_ok
    }
}

/// ns as ms, to the microsecond.
fn ms(ns: u64) -> f64 {
    (ns as f64 / 1e3).round() / 1e3
}

/// Where the SMs sit: the first cabled CA port, then one on each following CA (`count` in all).
pub fn sm_hosts(topo: &Topology, count: usize) -> Vec<(usize, u8)> {
    topo.nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| n.kind == ibsm_topology::NodeKind::Ca)
        .filter_map(|(i, n)| (1..=n.num_ports).find(|&p| n.peer(p).is_some()).map(|p| (i, p)))
        .take(count)
        .collect()
}

/// `topo` on the simulator (configured by `sim`: seed, timing) with one SM configured by `cfg`
/// and `standbys` more, run until one is master with its subnet up and the others stand by.
///
/// # Errors
/// When an SM cannot be attached or the fabric does not come up (within 600 s virtual).
pub fn up(
    topo: &Topology,
    sim: SimConfig,
    cfg: &SmConfig,
    standbys: usize,
    compute: ComputeTime,
) -> Result<SimSms, String> {
    let at = sm_hosts(topo, standbys + 1);
    if at.len() != standbys + 1 {
        return Err(format!("the fabric has no {} cabled hosts for the SMs", standbys + 1));
    }
    let sms = at.into_iter().map(|a| (Sm::new(cfg.clone(), Guid2Lid::default()), a)).collect();
    let mut h = SimSms::with_config(topo, sim, sms)?;
    h.compute_time = compute;
    for i in 0..=standbys {
        h.start(i);
    }
    let deadline = h.now().saturating_add(600_000_000_000);
    let mut report: Option<SubnetReport> = None;
    loop {
        let settled = h.master().is_some()
            && report.is_some()
            && h.sms.iter().filter(|s| s.sm.state() == crate::core::SmState::Standby).count() == standbys;
        if settled {
            break;
        }
        if h.now() >= deadline {
            return Err("the fabric did not come up".to_owned());
        }
        let stopped = h.run_until(deadline, |_, ev| {
            if let SmEvent::SubnetUp(r) = ev {
                report = Some(r.clone());
            }
            matches!(ev, SmEvent::SubnetUp(_) | SmEvent::Standby { .. })
        });
        if stopped.is_none() {
            // Nothing more happens before the deadline.
            h.fabric.advance_to(SimTime(deadline.max(h.now())));
        }
    }
    match report {
        Some(r) if !r.complete => {
            Err(format!("the fabric came up incomplete: {} ports not active", r.ports_not_active))
        }
        _ => Ok(h),
    }
}

/// Brings `topo` up with an SM configured by `cfg` (and `standbys` standby SMs) on the
/// simulator (configured by `sim`: seed, timing), its computing on the `compute` clock
/// ([`ComputeTime::Wall`] or [`ComputeTime::ThreadCpu`]), then plays `steps`, calling `emit` with each event's outcome when
/// its window closes (at the next event, or for the last one when the SMs are idle or 30 s of
/// virtual time later).
///
/// # Errors
/// When an SM cannot be attached or the fabric does not come up.
pub fn play(
    topo: &Topology,
    steps: &[Step],
    sim: SimConfig,
    (cfg, standbys): (SmConfig, usize),
    compute: ComputeTime,
    mut emit: impl FnMut(&Outcome),
) -> Result<SimSms, String> {
    let mut h = up(topo, sim, &cfg, standbys, compute)?;
    let t0 = h.now();
    for (i, step) in steps.iter().enumerate() {
        let at = t0 + step.at_ns;
        run_to(&mut h, at, &mut |_, _| {});
        let end = steps.get(i + 1).map(|s| t0 + s.at_ns);
        let outcome = measure(&mut h, &cfg, step, at, end);
        let quiescent = step.action == Action::Settle || end.is_none();
        emit(&Outcome { at_ms: ms(step.at_ns), quiescent, ..outcome });
    }
    Ok(h)
}

/// Runs the SMs until `t` (virtual), then brings the clock to exactly `t`.
pub(crate) fn run_to(h: &mut SimSms, t: u64, on_event: &mut dyn FnMut(u64, &SmEvent)) {
    h.run_until_at(t, |_, at, ev| {
        on_event(at, ev);
        false
    });
    if h.now() < t {
        h.fabric.advance_to(SimTime(t));
    }
}

/// Applies `action` now; `cfg` configures an SM that is started again.
pub(crate) fn apply(h: &mut SimSms, cfg: &SmConfig, action: Action) {
    let f = &mut h.fabric;
    match action {
        Action::LinkDown(node, port) => f.inject_fault(Fault::LinkDown { node, port }),
        Action::LinkUp(node, port) => f.inject_fault(Fault::LinkUp { node, port }),
        Action::NodeCrash(n) => f.inject_fault(Fault::Crash(n)),
        Action::NodeRestart(n) => f.inject_fault(Fault::Restart(n)),
        Action::LinkErrors(node, port, rate) => f.inject_fault(Fault::LinkErrors { node, port, rate }),
        Action::Drop(_) | Action::Delay(_) => {
            // One packet rule at a time: the new one replaces the last.
            f.inject_fault(Fault::ClearRules);
            let rule = match action {
                Action::Drop(p) => LinkRule::global_drop(p),
                Action::Delay(ns) => LinkRule::global_delay(ns, 0),
                _ => return,
            };
            if rule.drop > 0.0 || rule.delay_ns > 0 {
                f.inject_fault(Fault::AddRule(rule));
            }
        }
        Action::Reroute => {
            let now = h.now();
            if let Some(m) = h.master() {
                h.sms[m].sm.force_full_route();
                h.sms[m].sm.start_sweep(now);
            }
        }
        Action::Settle => f.inject_fault(Fault::ClearRules),
        Action::SmKill => {
            if let Some(m) = h.master() {
                h.kill(m);
            }
        }
        Action::SmRestart => {
            // As `ibsm run --state-dir` restarts: with the guid2lid it last wrote.
            if let Some(i) = h.sms.iter().position(|s| !s.alive) {
                let saved = h.sms[i].saved.clone();
                h.restart(i, Sm::new(cfg.clone(), saved));
            }
        }
    }
}

/// Applies `step` at `at` and follows the SMs until `end` (or until they are idle).
fn measure(h: &mut SimSms, cfg: &SmConfig, step: &Step, at: u64, end: Option<u64>) -> Outcome {
    let before: Stats = h.fabric.stats();
    let snap_before = h.master().and_then(|m| h.sms[m].sm.snapshot());
    apply(h, cfg, step.action);
    let mut detect = None;
    let mut compute_ns = 0u64;
    let mut snapshot_ns = 0u64;
    let mut sweeps = 0u32;
    let mut swept_at = None;
    let mut routing = None;
    let (mut repaired_lids, mut repaired_entries, mut stranded) = (0, 0, 0);
    let mut seen = |t: u64, ev: &SmEvent| match ev {
        SmEvent::TrapReceived { .. }
        | SmEvent::MasterLost { .. }
        | SmEvent::PhaseStarted { phase: SweepPhase::Discovering, .. } => {
            detect.get_or_insert(t);
        }
        SmEvent::SubnetUp(r) => {
            sweeps += 1;
            swept_at = Some(t);
            routing = Some(r.routing_mode.name());
            if let crate::core::lft::RouteMode::Repaired { lids, entries, stranded: st, .. } = r.routing_mode {
                repaired_lids += lids;
                repaired_entries += entries;
                stranded += st;
            }
            // The routing phase (the engine, the LFT diff after it) and the SA's snapshot.
            compute_ns += r.phases.iter().filter(|p| p.phase == SweepPhase::Routing).map(|p| p.ns).sum::<u64>();
            compute_ns += r.snapshot_ns;
            snapshot_ns += r.snapshot_ns;
        }
        _ => {}
    };
    match end {
        Some(t) => run_to(h, t, &mut seen),
        None => {
            h.run_until_at(at + TAIL_NS, |_, t, ev| {
                seen(t, ev);
                false
            });
        }
    }
    let after = h.fabric.stats();
    let check = h.fabric.check_routes();
    let blocks_sent = after.lft_blocks_set - before.lft_blocks_set;
    let converged = if blocks_sent > 0 { Some(after.last_lft_set_at.0) } else { swept_at };
    let detect_ms = match step.action {
        Action::Reroute => Some(0.0),
        Action::Drop(_) | Action::Delay(_) | Action::Settle | Action::SmRestart | Action::LinkErrors(..) => None,
        _ => detect.map(|t| ms(t.saturating_sub(at))),
    };
    let masters = h.sms.iter().filter(|s| s.alive && s.sm.state() == crate::core::SmState::Master).count();
    let snap_after = h.master().and_then(|m| h.sms[m].sm.snapshot());
    let sl_changed = match (&snap_before, &snap_after) {
        (Some(a), Some(b)) => sl_changes(a, b),
        _ => 0,
    };
    Outcome {
        event: step.line.clone(),
        detect_ms,
        compute_ms: ms(compute_ns),
        snapshot_ms: ms(snapshot_ns),
        blocks_sent,
        blocks_changed: after.lft_blocks_changed - before.lft_blocks_changed,
        converge_ms: converged.map(|t| ms(t.saturating_sub(at))),
        invariants_ok: check.ok() && masters == 1,
        at_ms: 0.0,
        sweeps,
        routing,
        repaired_lids,
        repaired_entries,
        stranded,
        pairs: check.pairs,
        failure: check.first_failure,
        masters,
        sl_changed,
        quiescent: false,
    }
}

/// HCA port pairs (by port GUID, base LIDs) in both snapshots whose path SL differs
/// ([`crate::sa::Snapshot::path_layer`], SL 0 without one); 0 when neither has layers.
pub fn sl_changes(before: &crate::sa::Snapshot, after: &crate::sa::Snapshot) -> u64 {
    if before.layers.is_none() && after.layers.is_none() {
        return 0;
    }
    // Each HCA port: (port GUID, where it is, its base LID) in a snapshot.
    let hcas = |s: &crate::sa::Snapshot| -> Vec<(ibsm_mad::Guid, crate::sa::snapshot::PortAt, ibsm_mad::Lid)> {
        s.end_ports()
            .filter(|at| s.node(at.0).is_some_and(|n| !n.is_switch()))
            .filter_map(|at| s.port(at).map(|p| (p.guid, at, p.lid)))
            .collect()
    };
    let (a, b) = (hcas(before), hcas(after));
    let in_b: std::collections::HashMap<ibsm_mad::Guid, (crate::sa::snapshot::PortAt, ibsm_mad::Lid)> =
        b.iter().map(|&(g, at, lid)| (g, (at, lid))).collect();
    let mut changed = 0;
    for &(sg, sa, _) in &a {
        let Some(&(sb, _)) = in_b.get(&sg) else { continue };
        for &(dg, _, dla) in &a {
            let Some(&(_, dlb)) = in_b.get(&dg) else { continue };
            if dg == sg {
                continue;
            }
            let (x, y) = (before.path_layer(sa, dla).unwrap_or(0), after.path_layer(sb, dlb).unwrap_or(0));
            changed += u64::from(x != y);
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topo() -> Topology {
        let text = include_str!("../../examples/fabrics/fat-tree-2l-k4.net");
        Topology::parse_str(text, "fat-tree-2l-k4.net").expect("fabric")
    }

    #[test]
    fn a_script_parses_and_every_bad_line_is_named() {
        let t = topo();
        let leaf = &t.nodes[t.nodes.iter().position(|n| n.kind == ibsm_topology::NodeKind::Switch).expect("switch")];
        let port = (1..=leaf.num_ports).find(|&p| leaf.peer(p).is_some()).expect("cabled port");
        let text = format!(
            "# a comment\n\n2s link-down {n}[{port}]\n2500ms reroute\n3s link-up {n}[{port}]  # back\n4s drop 0.1\n5s delay 20us\n6s node-crash {n}\n7s node-restart {n}\n",
            n = leaf.name
        );
        let steps = parse_script(&text, &t).expect("parses");
        assert_eq!(steps.len(), 7);
        assert_eq!(steps[1], Step { at_ns: 2_500_000_000, action: Action::Reroute, line: "2500ms reroute".into() });
        assert_eq!(steps[2].line, format!("3s link-up {}[{port}]", leaf.name));
        assert_eq!(steps[4].action, Action::Delay(20_000));
        let bad = "1s link-down nowhere[1]\n2s link-down NAME\n2s reroute\nx reroute\n3s jump\n4s drop 2\n5s reroute now\n1s reroute\n";
        let errors = parse_script(&bad.replace("NAME", &leaf.name), &t).expect_err("refused");
        let lines: Vec<usize> = errors.iter().map(|e| e.line).collect();
        assert_eq!(lines, vec![1, 2, 4, 5, 6, 7, 8], "{errors:?}");
        assert!(errors[6].reason.contains("must not decrease"));
        assert!(errors[0].to_string().starts_with("line 1: no node named"), "{}", errors[0]);
    }

    #[test]
    fn link_errors_take_counts_an_interval_or_off() {
        let t = topo();
        let leaf = &t.nodes[t.nodes.iter().position(|n| n.kind == ibsm_topology::NodeKind::Switch).expect("switch")];
        let port = (1..=leaf.num_ports).find(|&p| leaf.peer(p).is_some()).expect("cabled port");
        let n = &leaf.name;
        let text = format!(
            "1s link-errors {n}[{port}] symbol=100 rcv=5 link-downed=1 per=10s\n2s link-errors {n}[{port}] off\n"
        );
        let steps = parse_script(&text, &t).expect("parses");
        let node = t.find(n).expect("node");
        let want = ErrorRate { symbol_errors: 100, rcv_errors: 5, link_downed: 1, interval_ns: 10_000_000_000 };
        assert_eq!(steps[0].action, Action::LinkErrors(node, port, want));
        let off = ErrorRate { interval_ns: 1_000_000_000, ..ErrorRate::default() };
        assert_eq!(steps[1].action, Action::LinkErrors(node, port, off));
        let bad = format!(
            "1s link-errors {n}[{port}]\n2s link-errors {n}[{port}] symbol=x\n3s link-errors {n}[{port}] bits=3\n4s link-errors {n} symbol=1\n5s link-errors {n}[{port}] rcv=1 per=0s\n"
        );
        let errors = parse_script(&bad, &t).expect_err("refused");
        assert_eq!(errors.iter().map(|e| e.line).collect::<Vec<_>>(), vec![1, 2, 3, 4, 5], "{errors:?}");
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_scripts_never_panic(text in "[ -~\\n]{0,200}") {
            let _ = parse_script(&text, &topo());
        }
    }

    #[test]
    fn sl_changed_counts_the_hca_pairs_whose_layer_moved() {
        let text = include_str!("../../examples/fabrics/torus-3x3.net");
        let t = Topology::parse_str(text, "torus-3x3.net").expect("fabric");
        let cfg = SmConfig { routing_engine: vec!["dfsssp".into(), "updn".into()], ..SmConfig::default() };
        // A full route of the same fabric gives every pair its layer again.
        let steps = parse_script("1s reroute\n", &t).expect("script");
        let mut out = Vec::new();
        let h = play(&t, &steps, SimConfig::default(), (cfg, 0), ComputeTime::Wall, |o| out.push(o.clone()))
            .expect("plays");
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].routing, out[0].sl_changed), (Some("full"), 0), "{:?}", out[0]);
        // Against the same routing without layers: every HCA pair whose PathRecord SL is not 0.
        let snap = h.master().and_then(|m| h.sms[m].sm.snapshot()).expect("snapshot");
        assert_eq!(h.sms[h.master().expect("master")].sm.routing_engine_used(), Some("dfsssp"));
        let mut flat = (*snap).clone();
        flat.layers = None;
        let hcas: Vec<ibsm_mad::Lid> = snap
            .end_ports()
            .filter(|at| snap.node(at.0).is_some_and(|n| !n.is_switch()))
            .filter_map(|at| snap.port(at).map(|p| p.lid))
            .collect();
        let mut on_other_sl = 0;
        for &s in &hcas {
            for &d in hcas.iter().filter(|&&d| d != s) {
                on_other_sl += u64::from(crate::sa::path_between(&snap, s, d).expect("a path").sl != 0);
            }
        }
        assert!(on_other_sl > 0, "the torus needs a second layer");
        assert_eq!(sl_changes(&snap, &flat), on_other_sl);
        assert_eq!(sl_changes(&flat, &flat), 0, "no layers: nothing to count");
    }
}
