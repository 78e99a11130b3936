//! `ibsm sweep`, `ibsm reroute`, `ibsm log-level`, `ibsm sweeping`, `ibsm port`, `ibsm lid` and
//! `ibsm guid`: an operator's controls and questions to the running SM over its control socket
//! (`ibsm::daemon::control`), printed for people or as JSON.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, ValueEnum};
use ibsm::core::Requested;
use ibsm::daemon::control::{self, PortKey, PortReport, PortToggledAnswer, Query, SweepAsked, SweepingAnswer};

/// How long a control waits for the SM's answer.
const TIMEOUT: Duration = Duration::from_secs(10);

/// `ibsm sweep`.
#[derive(Debug, Args)]
pub(super) struct SweepArgs {
    /// The SM's control socket (`--control` of `ibsm run`, or `<state-dir>/ibsm.sock`).
    #[arg(long, value_name = "PATH")]
    socket: PathBuf,
    /// A heavy sweep: every node and port read again, only what differs written (the default).
    #[arg(long, conflicts_with = "light")]
    heavy: bool,
    /// A light sweep: the switches asked whether a port changed (a quick sweep of those
    /// that say so).
    #[arg(long)]
    light: bool,
}

/// `ibsm log-level`.
#[derive(Debug, Args)]
pub(super) struct LogLevelArgs {
    /// The SM's control socket.
    #[arg(long, value_name = "PATH")]
    socket: PathBuf,
    /// `error`, `warn`, `info`, `debug`, `trace` or `off`.
    level: String,
    /// Only for this module path (`ibsm::core`, `ibsm::sa`); without it, the default level.
    target: Option<String>,
}

/// `off` or `on`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum OnOff {
    /// Hold sweeping.
    Off,
    /// Let it go.
    On,
}

/// `ibsm sweeping`.
#[derive(Debug, Args)]
pub(super) struct SweepingArgs {
    /// `off`: hold sweeping; `on`: let it go (a heavy sweep follows at once).
    state: OnOff,
    /// The SM's control socket.
    #[arg(long, value_name = "PATH")]
    socket: PathBuf,
}

/// `disable` or `enable`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum PortAction {
    /// PortPhysicalState Disabled, kept so.
    Disable,
    /// PortPhysicalState Polling: the link trains again.
    Enable,
}

/// `ibsm port`.
#[derive(Debug, Args)]
pub(super) struct PortAdminArgs {
    /// `disable` or `enable`.
    action: PortAction,
    /// The node: its GUID (`0x...`, node or port GUID), a LID of it, or its NodeDescription.
    node: String,
    /// The port number (1 to the node's port count).
    port: u8,
    /// Disable it even when it is the only link from the SM to some node (the SM cannot
    /// reach that node to enable it again).
    #[arg(long)]
    force: bool,
    /// The SM's control socket.
    #[arg(long, value_name = "PATH")]
    socket: PathBuf,
}

/// `ibsm lid` and `ibsm guid`.
#[derive(Debug, Args)]
pub(super) struct PortArgs {
    /// The SM's control socket.
    #[arg(long, value_name = "PATH")]
    socket: PathBuf,
    /// Print the answer as JSON (one line).
    #[arg(long)]
    json: bool,
}

/// `ibsm sweep [--heavy|--light]`.
pub(super) fn sweep(a: &SweepArgs) -> ExitCode {
    let what = if a.light { Requested::Light } else { Requested::Heavy };
    ask_sweep("sweep", &a.socket, what)
}

/// `ibsm reroute`: a heavy sweep that routes from scratch.
pub(super) fn reroute(socket: &Path) -> ExitCode {
    ask_sweep("reroute", socket, Requested::Reroute)
}

fn ask_sweep(cmd: &str, socket: &Path, what: Requested) -> ExitCode {
    match control::query::<SweepAsked>(socket, &Query::Sweep(what), TIMEOUT) {
        Ok(r) => {
            let says = match r.requested.as_str() {
                "light" => "a light sweep starts now",
                "reroute" => "a heavy sweep that routes from scratch starts now, or right after the running one",
                _ => "a heavy sweep starts now, or right after the running one",
            };
            println!("{says}; `ibsm status` shows its report");
            ExitCode::SUCCESS
        }
        Err(e) => fail(cmd, &e),
    }
}

/// `ibsm log-level LEVEL [TARGET]`.
pub(super) fn log_level(a: &LogLevelArgs) -> ExitCode {
    let q = Query::LogLevel { level: a.level.clone(), target: a.target.clone() };
    match control::query::<serde_json::Value>(&a.socket, &q, TIMEOUT) {
        Ok(v) => {
            println!("log filter now {}", v["filter"].as_str().unwrap_or("?"));
            ExitCode::SUCCESS
        }
        Err(e) => fail("log-level", &e),
    }
}

/// `ibsm sweeping off|on`.
pub(super) fn sweeping(a: &SweepingArgs) -> ExitCode {
    let on = a.state == OnOff::On;
    match control::query::<SweepingAnswer>(&a.socket, &Query::Sweeping(on), TIMEOUT) {
        Ok(r) => {
            let says = match (r.held, r.changed) {
                (true, true) => "sweeping held: no sweep starts until `ibsm sweeping on`",
                (true, false) => "sweeping was held already",
                (false, true) => "sweeping on: a heavy sweep starts now",
                (false, false) => "sweeping was not held",
            };
            println!("{says}");
            ExitCode::SUCCESS
        }
        Err(e) => fail("sweeping", &e),
    }
}

/// `ibsm port disable|enable NODE PORT`.
pub(super) fn port_admin(a: &PortAdminArgs) -> ExitCode {
    let enable = a.action == PortAction::Enable;
    let q = Query::PortAdmin { enable, node: a.node.clone(), port: a.port, force: a.force };
    match control::query::<PortToggledAnswer>(&a.socket, &q, TIMEOUT) {
        Ok(r) => {
            let what = if r.disabled { "disabled" } else { "enabled" };
            let name = if r.desc.is_empty() { r.node.clone() } else { format!("{} \"{}\"", r.node, r.desc) };
            let mut line = format!("port {} of {name} {what}", r.port);
            if !r.changed {
                line.push_str(" (it already was)");
            }
            if !r.sent {
                line.push_str("; the SM does not reach the node, so no Set was sent");
            }
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => fail("port", &e),
    }
}

/// `ibsm lid LID` and `ibsm guid GUID`.
pub(super) fn port(cmd: &str, a: &PortArgs, key: PortKey) -> ExitCode {
    let r = match control::query::<PortReport>(&a.socket, &Query::Port(key), TIMEOUT) {
        Ok(r) => r,
        Err(e) => return fail(cmd, &e),
    };
    if a.json {
        return match serde_json::to_string(&r) {
            Ok(line) => {
                println!("{line}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("ibsm {cmd}: {e}");
                ExitCode::FAILURE
            }
        };
    }
    print!("{}", render(&r));
    ExitCode::SUCCESS
}

/// The text form: a node line, then a line per port.
pub(super) fn render(r: &PortReport) -> String {
    use std::fmt::Write as _;
    let n = &r.node;
    let mut s = format!("{} {} \"{}\" ({} ports)\n", n.kind, n.guid, n.desc, n.num_ports);
    for p in &r.ports {
        let lids = match p.lids.as_slice() {
            [] => String::new(),
            [one] => format!(" LID {one}"),
            [first, .., last] => format!(" LIDs {first}-{last}"),
        };
        let rate = p.rate_mbps.map(|m| format!(" {} Gb/s", f64::from(m) / 1000.0)).unwrap_or_default();
        let _ = write!(s, "  port {}{lids}: {}/{}{rate}", p.port, p.state, p.phys);
        if let Some(nb) = &p.neighbor {
            let _ = write!(s, " -> {} \"{}\" port {}", nb.guid, nb.desc, nb.port);
            if let Some(k) = nb.routed_out {
                let _ = write!(s, " (it routes {k} LID(s) here)");
            }
        }
        if let Some(k) = p.routed_out {
            let _ = write!(s, "; routes {k} LID(s) out");
        }
        if !p.pkeys.is_empty() {
            let _ = write!(s, "; P_Keys {}", p.pkeys.join(" "));
        }
        s.push('\n');
    }
    s
}

fn fail(cmd: &str, e: &control::ControlError) -> ExitCode {
    eprintln!("ibsm {cmd}: {e}");
    ExitCode::FAILURE
}
