//! `ibsm counters`: the running SM's performance manager figures over its control socket
//! (`ibsm::daemon::control`'s `counters` query; no MAD is sent), printed as `perfquery` prints a
//! port's counters, as `ibqueryerrors` lists ports with errors (`--errors`), as the busiest
//! ports with their rates (`--top N`), or as JSON.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use ibsm::daemon::control::{self, CountersAnswer, PortCountersJson, Query, Selection};

/// `ibsm counters`.
#[derive(Debug, Args)]
pub(super) struct CountersArgs {
    /// The SM's control socket (`--control` of `ibsm run`, or `<state-dir>/ibsm.sock`).
    #[arg(long, value_name = "PATH")]
    socket: PathBuf,
    /// Only ports with errors, as `ibqueryerrors` lists them: a counter over its threshold
    /// (`ibqueryerrors`'s defaults), in total or in the last interval.
    #[arg(long)]
    errors: bool,
    /// Only the N ports with the most data sent and received in the last interval, with
    /// their rates.
    #[arg(long, value_name = "N")]
    top: Option<usize>,
    /// Print the answer as JSON (the control socket's `counters` answer, one line).
    #[arg(long)]
    json: bool,
}

/// The order `perfquery` prints PortCounters in (IBTA names).
const PERFQUERY_ORDER: [&str; 17] = [
    "SymbolErrorCounter",
    "LinkErrorRecoveryCounter",
    "LinkDownedCounter",
    "PortRcvErrors",
    "PortRcvRemotePhysicalErrors",
    "PortRcvSwitchRelayErrors",
    "PortXmitDiscards",
    "PortXmitConstraintErrors",
    "PortRcvConstraintErrors",
    "LocalLinkIntegrityErrors",
    "ExcessiveBufferOverrunErrors",
    "VL15Dropped",
    "PortXmitData",
    "PortRcvData",
    "PortXmitPkts",
    "PortRcvPkts",
    "PortXmitWait",
];

/// `ibsm counters`.
pub(super) fn counters(a: &CountersArgs) -> ExitCode {
    let sel = Selection { errors: a.errors, top: a.top };
    let answer = match control::query::<CountersAnswer>(&a.socket, &Query::Counters(sel), Duration::from_secs(30)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("ibsm counters: {e}");
            return ExitCode::FAILURE;
        }
    };
    if a.json {
        return match serde_json::to_string(&answer) {
            Ok(line) => {
                println!("{line}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("ibsm counters: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if answer.interval_s == 0 {
        println!("the performance manager is off (perf-interval-s = 0)");
    } else if answer.sweeps == 0 {
        println!(
            "no counters yet: the performance manager reads them only on the master, every {} s",
            answer.interval_s
        );
    }
    if a.errors {
        print_errors(&answer);
        // As ibqueryerrors: 1 when a port is over a threshold.
        return if answer.ports.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) };
    }
    if a.top.is_some() {
        print_top(&answer);
        return ExitCode::SUCCESS;
    }
    for p in &answer.ports {
        print_port(p);
    }
    ExitCode::SUCCESS
}

/// One port as `perfquery` prints it (`Name:....value`, the value at column 33).
fn print_port(p: &PortCountersJson) {
    println!("# Port counters: node {} {:?} port {}", p.node, p.desc, p.port);
    println!("{}", dotted("PortSelect", &p.port.to_string()));
    for name in PERFQUERY_ORDER {
        let v = p.totals.get(name).copied().unwrap_or(0);
        println!("{}", dotted(name, &v.to_string()));
    }
}

/// `Name:` padded with dots to 33 columns, then the value, as infiniband-diags print fields.
fn dotted(name: &str, value: &str) -> String {
    let mut s = format!("{name}:");
    while s.len() < 33 {
        s.push('.');
    }
    s.push_str(value);
    s
}

/// Ports with errors, as `ibqueryerrors` lists them.
fn print_errors(a: &CountersAnswer) {
    let mut node = "";
    for p in &a.ports {
        if p.node != node {
            println!("Errors for {} {:?}", p.node, p.desc);
            node = &p.node;
        }
        let fields: Vec<String> = p
            .totals_over_threshold
            .iter()
            .filter_map(|f| f.split_once('='))
            .map(|(name, v)| format!("[{name} == {}]", v.split('/').next().unwrap_or(v)))
            .collect();
        let recent = if p.over_threshold.is_empty() {
            String::new()
        } else {
            format!(" (last interval: {})", p.over_threshold.join(" "))
        };
        // The port's GUID, as ibqueryerrors prints it (a CA port's differs from its node's).
        let guid = if p.port_guid.is_empty() { &p.node } else { &p.port_guid };
        println!("   GUID {guid} port {}: {}{recent}", p.port, fields.join(" "));
    }
    println!("## Summary: {} ports with errors ({} without)", a.ports.len(), a.ports_left_out);
}

/// The busiest ports, with their rates over the last interval.
fn print_top(a: &CountersAnswer) {
    println!("{:<20} {:>4}  {:>14} {:>14}  desc", "node", "port", "xmit MB/s", "rcv MB/s");
    for p in &a.ports {
        let mb = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |b| format!("{:.3}", b / 1e6));
        println!(
            "{:<20} {:>4}  {:>14} {:>14}  {}",
            p.node,
            p.port,
            mb(p.xmit_bytes_per_s),
            mb(p.rcv_bytes_per_s),
            p.desc
        );
    }
}
