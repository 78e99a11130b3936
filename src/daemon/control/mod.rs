//! The SM's local control socket: a Unix stream socket through which operators' tools
//! (`ibsm status`, `ibsm reload`, `ibsm routes dump --socket`, `ibsm routes check --socket`) ask
//! the running SM what it holds.
//!
//! Protocol: the client connects, writes one line of JSON, `{"query":"routes"}`,
//! `{"query":"status"}` or `{"query":"reload"}`, and reads one line of JSON back; then the SM
//! closes the connection. `routes` answers [`LiveRoutes`]; `status` answers [`Status`]; `reload`
//! (which the transport carries out: it knows the files) answers [`Reloaded`]. Controls:
//! `{"query":"sweep","kind":"heavy"|"light"}` and `{"query":"reroute"}` answer [`SweepAsked`]
//! (the transport asks the core, [`crate::core::Sm::request_sweep`]);
//! `{"query":"log-level","level":"debug","target":"ibsm::core"}` answers
//! `{"filter":"..."}` ([`crate::daemon::log_level`]); `{"query":"lid","lid":N}` and
//! `{"query":"guid","guid":"0x..."}` answer a [`PortReport`]; `{"query":"subnet-lst"}` answers
//! `{"subnet_lst":"..."}`, OpenSM's `opensm-subnet.lst` of the last sweep (built on a thread,
//! counted among the `routes` answers' places); `{"query":"mcfdbs"}` answers `{"mcfdbs":"..."}`,
//! OpenSM's `opensm.mcfdbs` of the multicast tables the SM wrote; `{"query":"counters"}` (with `"errors":true`
//! and/or `"top":N`) answers a [`CountersAnswer`], the performance manager's figures, without
//! sending a MAD. Maintenance, applied to the core by the
//! transport ([`maintenance`]): `{"query":"sweeping","on":false}` holds sweeping and
//! `"on":true` lets it go, answered with [`SweepingAnswer`];
//! `{"query":"port","action":"disable"|"enable","node":"0x...|LID|description","port":N}`
//! (`"force":true` to disable the only link to a node) answers [`PortToggledAnswer`]. Anything else (malformed JSON, an
//! unknown query or field, a line over 4 KiB, a client too slow to send its line) gets
//! `{"error":"..."}`.
//!
//! Who may ask what: the queries that change something (`reload`, `sweep`, `reroute`,
//! `log-level`, `sweeping`, `port`: [`Query::changes`]) are taken only from root or the SM's own user (the
//! peer's credentials, `SO_PEERCRED`); the others from anyone who can open the socket, which
//! is the SM's user alone (mode 0600), or also the group given by `--control-group` (mode
//! 0660): read-only access for an operators' group.
//!
//! This module owns the protocol (queries, [`parse_request`], [`respond`]), the hand-over of a
//! query to the SM's loop ([`Pending`]: the loop answers it from the sans-IO core's getters and
//! its last sweep's snapshot between two events, at once even while a sweep runs) and the
//! client side ([`request`], [`query`]). Below it: [`status`] (the `status` answer),
//! [`counters`] (the `counters` answer) and
//! `server` ([`ControlServer`]: the socket file and the connections, under the limits of
//! [`crate::daemon::surface`]). Nothing here but [`Pending::answer`] touches the SM, and that runs on
//! the SM's loop.

pub(crate) mod counters;
pub mod maintenance;
mod port_report;
mod server;
pub(crate) mod status;
pub(crate) mod text;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;

use crate::core::{Requested, Sm};
use crate::daemon::side_queries::Asks;
use crate::routes::live::LiveRoutes;

pub use counters::{CountersAnswer, PerfSweepJson, PortCountersJson, Selection, counters, port_line};
pub use maintenance::{PortToggledAnswer, SweepingAnswer};
pub use port_report::{Neighbor, NodeLine, PortKey, PortLine, PortReport};
pub use server::{ControlServer, group_id, may_change};
pub use status::{
    AvoidedPortJson, BlockedNodeJson, DisabledPortStatus, MKeyStatus, MKeyViolation, MasterStatus, PortErrorsJson,
    Problems, QuarantinedGuid, RefusedPort, Status, SweepStatus, SweepingStatus, SyncPeerStatus, SyncStatusJson,
    TrapStatus, UnhealthyPort, UnroutedLid, status, status_after_idle,
};
pub use text::{error_line, parse_guid};

/// The socket's file name inside the state directory, when `--control` is not given.
pub const DEFAULT_NAME: &str = "ibsm.sock";

/// Longest request line accepted, bytes.
const MAX_REQUEST: u64 = 4096;

/// What a client may ask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Query {
    /// The discovered fabric and every switch's forwarding table ([`LiveRoutes`]).
    Routes,
    /// The SM's state and its last sweep ([`Status`]).
    Status,
    /// Read the configuration and the partition policy again ([`Reloaded`]); answered by the
    /// transport, which knows the files.
    Reload,
    /// Prometheus text ([`crate::daemon::metrics::render`]); asked by the metrics endpoint only.
    Metrics,
    /// A sweep now ([`SweepAsked`]); carried out by the transport, which runs the core.
    Sweep(Requested),
    /// Change the running log filter (`{"filter":"..."}`).
    LogLevel {
        /// `error`, `warn`, `info`, `debug`, `trace` or `off`.
        level: String,
        /// A module path (`ibsm::core`); none: the default level.
        target: Option<String>,
    },
    /// What the SM knows of one port or node ([`PortReport`]).
    Port(PortKey),
    /// OpenSM's `opensm-subnet.lst` of the last sweep, as `{"subnet_lst":"..."}`.
    SubnetLst,
    /// OpenSM's `opensm.mcfdbs` of the multicast tables written, as `{"mcfdbs":"..."}`.
    Mcfdbs,
    /// The performance manager's port counters ([`CountersAnswer`]).
    Counters(Selection),
    /// Sweeping on (`true`: let go) or off (held) ([`SweepingAnswer`]); carried out by the
    /// transport, which runs the core.
    Sweeping(bool),
    /// A port disabled or enabled ([`PortToggledAnswer`]); carried out by the transport.
    PortAdmin {
        /// `true`: enable; `false`: disable.
        enable: bool,
        /// The node: a GUID (`0x...`), a LID, or its NodeDescription.
        node: String,
        /// The port number.
        port: u8,
        /// Disable even the only link to a node.
        force: bool,
    },
    /// A JSON answer for the web page of the metrics endpoint ([`crate::daemon::page`]); asked
    /// by that endpoint only, never parsed from the socket.
    Page(crate::daemon::page::PageQuery),
}

/// The answer to `sweep` and `reroute`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepAsked {
    /// `heavy`, `reroute` or `light`.
    pub requested: String,
}

/// The answer to `reload`: the files read and what changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reloaded {
    /// The files read again (the config file, the partition policy), comma-separated.
    pub reloaded: String,
    /// Options changed and in force now (config-file key names).
    #[serde(default)]
    pub applied: Vec<String>,
    /// Options changed in the file but kept at their running value until a restart.
    #[serde(default)]
    pub restart: Vec<String>,
    /// A heavy sweep follows, writing only what differs.
    #[serde(default)]
    pub sweep: bool,
    /// That sweep routes from scratch (the routing engine changed).
    #[serde(default)]
    pub reroute: bool,
}

impl Query {
    /// The name on the wire.
    pub const fn name(&self) -> &'static str {
        match self {
            Query::Routes => "routes",
            Query::Status => "status",
            Query::Reload => "reload",
            Query::Metrics => "metrics",
            Query::Sweep(Requested::Reroute) => "reroute",
            Query::Sweep(_) => "sweep",
            Query::LogLevel { .. } => "log-level",
            Query::Port(PortKey::Lid(_)) => "lid",
            Query::Port(PortKey::Guid(_)) => "guid",
            Query::SubnetLst => "subnet-lst",
            Query::Mcfdbs => "mcfdbs",
            Query::Counters(_) => "counters",
            Query::Sweeping(_) => "sweeping",
            Query::PortAdmin { .. } => "port",
            Query::Page(_) => "page",
        }
    }

    /// Whether it changes something (only root and the SM's own user may ask it).
    pub const fn changes(&self) -> bool {
        matches!(
            self,
            Query::Reload | Query::Sweep(_) | Query::LogLevel { .. } | Query::Sweeping(_) | Query::PortAdmin { .. }
        )
    }

    /// The request line for this query (without the newline).
    pub fn request_line(&self) -> String {
        let mut v = serde_json::json!({ "query": self.name() });
        match self {
            Query::Sweep(Requested::Heavy) => v["kind"] = "heavy".into(),
            Query::Sweep(Requested::Light) => v["kind"] = "light".into(),
            Query::LogLevel { level, target } => {
                v["level"] = level.as_str().into();
                if let Some(t) = target {
                    v["target"] = t.as_str().into();
                }
            }
            Query::Port(PortKey::Lid(l)) => v["lid"] = l.0.into(),
            Query::Port(PortKey::Guid(g)) => v["guid"] = format!("{:#018x}", g.0).into(),
            Query::Counters(sel) => {
                if sel.errors {
                    v["errors"] = true.into();
                }
                if let Some(n) = sel.top {
                    v["top"] = n.into();
                }
            }
            Query::Sweeping(on) => v["on"] = (*on).into(),
            Query::PortAdmin { enable, node, port, force } => {
                v["action"] = if *enable { "enable" } else { "disable" }.into();
                v["node"] = node.as_str().into();
                v["port"] = (*port).into();
                if *force {
                    v["force"] = true.into();
                }
            }
            _ => {}
        }
        v.to_string()
    }
}

/// The request as sent on the wire.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RequestLine {
    query: String,
    kind: Option<String>,
    level: Option<String>,
    target: Option<String>,
    lid: Option<u16>,
    guid: Option<String>,
    errors: Option<bool>,
    top: Option<usize>,
    on: Option<bool>,
    action: Option<String>,
    node: Option<String>,
    port: Option<u8>,
    force: Option<bool>,
}

/// The queries, for the error that names them.
const QUERIES: &str =
    "routes, status, reload, sweep, reroute, log-level, lid, guid, subnet-lst, mcfdbs, counters, sweeping, port";

/// Parses one request line.
///
/// # Errors
/// A message saying what is wrong with the line.
pub fn parse_request(line: &str) -> Result<Query, String> {
    let req: RequestLine = serde_json::from_str(line.trim())
        .map_err(|e| format!("expected one line of JSON such as {{\"query\":\"status\"}}: {e}"))?;
    let RequestLine { query, kind, level, target, lid, guid, errors, top, on, action, node, port, force } = req;
    // Each query takes its own fields and no other.
    let given = [("kind", kind.is_some()), ("level", level.is_some()), ("target", target.is_some())]
        .into_iter()
        .chain([("lid", lid.is_some()), ("guid", guid.is_some()), ("on", on.is_some())])
        .chain([("errors", errors.is_some()), ("top", top.is_some())])
        .chain([("action", action.is_some()), ("node", node.is_some()), ("port", port.is_some())])
        .chain([("force", force.is_some())]);
    let allowed: &[&str] = match query.as_str() {
        "sweep" => &["kind"],
        "log-level" => &["level", "target"],
        "lid" => &["lid"],
        "guid" => &["guid"],
        "counters" => &["errors", "top"],
        "sweeping" => &["on"],
        "port" => &["action", "node", "port", "force"],
        _ => &[],
    };
    if let Some((field, _)) = given.clone().find(|(f, set)| *set && !allowed.contains(f)) {
        return Err(format!("query {query:?} takes no field {field:?}"));
    }
    match query.as_str() {
        "routes" => Ok(Query::Routes),
        "status" => Ok(Query::Status),
        "reload" => Ok(Query::Reload),
        "reroute" => Ok(Query::Sweep(Requested::Reroute)),
        "subnet-lst" => Ok(Query::SubnetLst),
        "mcfdbs" => Ok(Query::Mcfdbs),
        "counters" => Ok(Query::Counters(Selection { errors: errors.unwrap_or(false), top })),
        "sweep" => match kind.as_deref() {
            None | Some("heavy") => Ok(Query::Sweep(Requested::Heavy)),
            Some("light") => Ok(Query::Sweep(Requested::Light)),
            Some(k) => Err(format!("unknown sweep kind {k:?}; expected \"heavy\" or \"light\"")),
        },
        "log-level" => {
            let level = level.ok_or("log-level needs a \"level\"")?;
            Ok(Query::LogLevel { level, target })
        }
        "lid" => match lid {
            Some(l) if l != 0 && l < 0xc000 => Ok(Query::Port(PortKey::Lid(ibsm_mad::Lid(l)))),
            Some(l) => Err(format!("LID {l} is not a unicast LID (1 to 49151)")),
            None => Err("lid needs a \"lid\"".to_owned()),
        },
        "guid" => {
            let text = guid.ok_or("guid needs a \"guid\"")?;
            parse_guid(&text).map(|g| Query::Port(PortKey::Guid(g)))
        }
        "sweeping" => on.map(Query::Sweeping).ok_or_else(|| "sweeping needs \"on\": true or false".to_owned()),
        "port" => {
            let enable = match action.as_deref() {
                Some("enable") => true,
                Some("disable") => false,
                Some(a) => return Err(format!("unknown port action {a:?}; expected \"disable\" or \"enable\"")),
                None => return Err("port needs an \"action\"".to_owned()),
            };
            let node = node.filter(|n| !n.trim().is_empty()).ok_or("port needs a \"node\"")?;
            let port = port.ok_or("port needs a \"port\"")?;
            Ok(Query::PortAdmin { enable, node, port, force: force.unwrap_or(false) })
        }
        other => Err(format!("unknown query {other:?}; expected one of {QUERIES}")),
    }
}

/// The response line (without the newline) to `query`, answered from `sm`'s getters.
pub fn respond(sm: &Sm, query: &Query) -> String {
    let out = match query {
        Query::Status => serde_json::to_string(&status(sm)),
        Query::Routes => match LiveRoutes::from_sm(sm) {
            Ok(r) => serde_json::to_string(&r),
            Err(e) => return error_line(&e.to_string()),
        },
        Query::SubnetLst => match sm.snapshot() {
            Some(snap) => Ok(subnet_lst_line(&snap, &sm.config().node_names)),
            None => return error_line("the SM has not completed a sweep yet"),
        },
        Query::Mcfdbs => match sm.snapshot() {
            Some(snap) => Ok(mcfdbs_line(sm, &snap)),
            None => return error_line("the SM has not completed a sweep yet"),
        },
        Query::Reload | Query::Sweep(_) | Query::Sweeping(_) | Query::PortAdmin { .. } => {
            return error_line("this is carried out by the transport, not answered from the SM's getters");
        }
        Query::Metrics => return crate::daemon::metrics::render(sm),
        Query::Page(q) => return crate::daemon::page::answer(sm, q),
        Query::Counters(sel) => serde_json::to_string(&counters(sm, *sel)),
        Query::LogLevel { level, target } => match crate::daemon::log_level::set(level, target.as_deref()) {
            Ok(filter) => Ok(serde_json::json!({ "filter": filter }).to_string()),
            Err(e) => return error_line(&e),
        },
        Query::Port(key) => match sm.snapshot() {
            None => return error_line("the SM has not completed a sweep yet"),
            Some(snap) => match port_report::report(&snap, *key, &sm.config().node_names) {
                Ok(r) => serde_json::to_string(&r),
                Err(e) => return error_line(&e),
            },
        },
    };
    out.unwrap_or_else(|e| error_line(&format!("encoding the answer: {e}")))
}

/// `{"subnet_lst":"..."}`: the snapshot's `opensm-subnet.lst`.
fn subnet_lst_line(snap: &crate::sa::Snapshot, names: &crate::core::NodeNames) -> String {
    serde_json::json!({ "subnet_lst": crate::routes::subnet_lst::render(snap, names) }).to_string()
}

/// `{"mcfdbs":"..."}`: the multicast tables `sm` wrote to the snapshot's switches, in GUID
/// order, as OpenSM's `opensm.mcfdbs`.
fn mcfdbs_line(sm: &Sm, snap: &crate::sa::Snapshot) -> String {
    let mut switches: Vec<ibsm_mad::Guid> =
        snap.nodes.iter().filter(|n| n.is_switch()).map(|n| n.info.node_guid).collect();
    switches.sort_unstable();
    let text = crate::routes::fdbs::mcfdbs(switches.into_iter().filter_map(|g| Some((g, sm.mft(g)?))));
    serde_json::json!({ "mcfdbs": text }).to_string()
}

/// A valid request waiting for the SM's answer.
#[derive(Debug)]
pub struct Pending {
    /// What was asked.
    pub query: Query,
    reply: oneshot::Sender<Answer>,
}

/// The SM's answer to a [`Pending`] query, as the connection that asked receives it.
#[derive(Debug)]
pub struct Answer {
    /// The answer line (without the newline), or the Prometheus text.
    pub text: String,
    /// A `routes` answer holds one of the [`ROUTE_ANSWERS`] places until the connection is
    /// done with it (written, or dropped at its deadline).
    _place: Option<RoutePlace>,
}

impl Answer {
    fn plain(text: String) -> Answer {
        Answer { text, _place: None }
    }
}

impl Pending {
    /// A query for the SM's loop, and where its answer will arrive.
    pub fn new(query: Query) -> (Pending, oneshot::Receiver<Answer>) {
        let (reply, wait) = oneshot::channel();
        (Pending { query, reply }, wait)
    }

    /// Answers with `text` (the client may have gone; that is not an error).
    pub fn reply(self, text: String) {
        let _ = self.reply.send(Answer::plain(text));
    }

    /// Answers from `sm`'s getters (the client may have gone; that is not an error). The
    /// `routes` answer (about 176 MB of JSON at k=48) is built on a thread of its own from the
    /// last snapshot, so the SM's loop is not held up; at most [`ROUTE_ANSWERS`] are built or
    /// being written at a time (so that clients that do not read cannot pile them up in
    /// memory), past that the client is told to retry.
    pub fn answer(self, sm: &Sm) {
        if !matches!(self.query, Query::Routes | Query::SubnetLst) {
            let text = respond(sm, &self.query);
            self.reply(text);
            return;
        }
        let Some(snap) = sm.snapshot() else {
            let text = respond(sm, &self.query);
            self.reply(text);
            return;
        };
        let Some(place) = RoutePlace::take() else {
            self.reply(error_line("busy: other routes answers are being built or read; retry"));
            return;
        };
        let reply = self.reply;
        let lst = self.query == Query::SubnetLst;
        let names = sm.config().node_names.clone();
        // The place goes with the answer, or is given back when the thread cannot start.
        let build = move || {
            let text = if lst {
                subnet_lst_line(&snap, &names)
            } else {
                serde_json::to_string(&LiveRoutes::from_snapshot(&snap, &names))
                    .unwrap_or_else(|e| error_line(&format!("encoding the answer: {e}")))
            };
            let _ = reply.send(Answer { text, _place: Some(place) });
        };
        if let Err(e) = std::thread::Builder::new().name("ibsm-routes-answer".to_owned()).spawn(build) {
            tracing::warn!(error_id = "control-thread", err = %e, "could not start a thread for a routes answer");
        }
    }
}

/// `routes` answers built or being written at once, at most.
pub const ROUTE_ANSWERS: usize = 2;

/// `routes` answers being built or written now.
static ROUTE_PLACES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// One of the [`ROUTE_ANSWERS`] places; given back when dropped.
#[derive(Debug)]
struct RoutePlace(());

impl RoutePlace {
    fn take() -> Option<RoutePlace> {
        if ROUTE_PLACES.fetch_add(1, Ordering::AcqRel) >= ROUTE_ANSWERS {
            ROUTE_PLACES.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        Some(RoutePlace(()))
    }
}

impl Drop for RoutePlace {
    fn drop(&mut self) {
        ROUTE_PLACES.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Why the control socket could not be set up or queried.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// A system call on the socket failed.
    #[error("control socket {path}: {what}: {err}")]
    Io {
        /// The socket path.
        path: PathBuf,
        /// What was being done.
        what: &'static str,
        /// The error.
        err: std::io::Error,
    },
    /// Another SM answers on the socket.
    #[error("control socket {0}: another SM is listening there")]
    InUse(PathBuf),
    /// The path exists and is not a socket (never removed).
    #[error("control socket {0}: exists and is not a socket; not replacing it")]
    NotSocket(PathBuf),
    /// The SM answered with an error.
    #[error("the SM says: {0}")]
    Refused(String),
    /// The SM's answer could not be read.
    #[error("unexpected answer from the SM: {0}")]
    BadReply(String),
}

impl crate::daemon::side_queries::SideQuery for Pending {
    fn asks(&self) -> Asks {
        match self.query {
            Query::Reload => Asks::Reload,
            Query::Sweep(what) => Asks::Sweep(what),
            Query::Sweeping(_) | Query::PortAdmin { .. } => Asks::Change,
            _ => Asks::Answer,
        }
    }
    fn change(&self, sm: &mut Sm) -> crate::daemon::side_queries::Changed {
        maintenance::change(sm, &self.query)
    }
    fn reply(self, answer: String) {
        Pending::reply(self, answer);
    }
    fn answer(self, sm: &Sm) {
        Pending::answer(self, sm);
    }
    fn answer_after_idle(self, sm: &Sm, idle_ns: u64) {
        if self.query == Query::Status {
            let text = serde_json::to_string(&status_after_idle(sm, idle_ns))
                .unwrap_or_else(|e| error_line(&format!("encoding the answer: {e}")));
            self.reply(text);
        } else {
            Pending::answer(self, sm);
        }
    }
}

/// Sends `line` to the SM at `path` and returns its one-line answer (without the newline).
///
/// # Errors
/// [`ControlError::Io`] when the socket cannot be reached or the answer cannot be read.
pub fn request(path: &Path, line: &str, timeout: Duration) -> Result<String, ControlError> {
    let io = |what: &'static str| move |err| ControlError::Io { path: path.to_owned(), what, err };
    let mut s = UnixStream::connect(path).map_err(io("connecting"))?;
    s.set_read_timeout(Some(timeout)).map_err(io("setting a timeout"))?;
    s.write_all(line.as_bytes()).and_then(|()| s.write_all(b"\n")).map_err(io("sending the request"))?;
    let mut answer = String::new();
    s.read_to_string(&mut answer).map_err(io("reading the answer"))?;
    Ok(answer.trim_end().to_owned())
}

/// Asks `query` and decodes the answer as `T`, turning `{"error":...}` into
/// [`ControlError::Refused`].
///
/// # Errors
/// As [`request`]; [`ControlError::Refused`] when the SM answers with an error, and
/// [`ControlError::BadReply`] when the answer is not a `T`.
pub fn query<T: serde::de::DeserializeOwned>(path: &Path, query: &Query, timeout: Duration) -> Result<T, ControlError> {
    let answer = request(path, &query.request_line(), timeout)?;
    let value: serde_json::Value =
        serde_json::from_str(&answer).map_err(|e| ControlError::BadReply(format!("{e}: {answer:.80}")))?;
    if let Some(msg) = value.get("error") {
        return Err(ControlError::Refused(msg.as_str().map_or_else(|| msg.to_string(), str::to_owned)));
    }
    serde_json::from_value(value).map_err(|e| ControlError::BadReply(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_round_trip_through_their_request_lines() {
        let queries = [
            Query::Sweep(Requested::Heavy),
            Query::Sweep(Requested::Light),
            Query::Sweep(Requested::Reroute),
            Query::LogLevel { level: "debug".into(), target: None },
            Query::LogLevel { level: "trace".into(), target: Some("ibsm::core".into()) },
            Query::Port(PortKey::Lid(ibsm_mad::Lid(12))),
            Query::Port(PortKey::Guid(ibsm_mad::Guid(0x0002_c903_0000_1234))),
            Query::Sweeping(false),
            Query::Sweeping(true),
            Query::PortAdmin { enable: false, node: "leaf-0".into(), port: 3, force: false },
            Query::PortAdmin { enable: true, node: "0x2000000000000".into(), port: 1, force: false },
            Query::PortAdmin { enable: false, node: "7".into(), port: 2, force: true },
        ];
        for q in queries {
            assert_eq!(parse_request(&q.request_line()), Ok(q.clone()), "{}", q.request_line());
        }
        assert_eq!(parse_request("{\"query\":\"sweep\"}"), Ok(Query::Sweep(Requested::Heavy)));
        assert_eq!(
            parse_request("{\"query\":\"guid\",\"guid\":\"2c90300001234\"}"),
            Ok(Query::Port(PortKey::Guid(ibsm_mad::Guid(0x2_c903_0000_1234))))
        );
        for (bad, why) in [
            ("{\"query\":\"sweep\",\"kind\":\"medium\"}", "unknown sweep kind"),
            ("{\"query\":\"reroute\",\"kind\":\"light\"}", "takes no field"),
            ("{\"query\":\"log-level\"}", "needs a"),
            ("{\"query\":\"lid\",\"lid\":0}", "not a unicast LID"),
            ("{\"query\":\"lid\",\"lid\":49152}", "not a unicast LID"),
            ("{\"query\":\"lid\",\"lid\":70000}", "one line of JSON"),
            ("{\"query\":\"guid\",\"guid\":\"0x1234567890abcdef0\"}", "up to 16 hex digits"),
            ("{\"query\":\"guid\",\"guid\":\"0xzz\"}", "GUID"),
            ("{\"query\":\"sweeping\"}", "needs \"on\""),
            ("{\"query\":\"sweeping\",\"on\":true,\"port\":1}", "takes no field \"port\""),
            ("{\"query\":\"port\",\"action\":\"bounce\",\"node\":\"x\",\"port\":1}", "unknown port action"),
            ("{\"query\":\"port\",\"action\":\"disable\",\"port\":1}", "needs a \"node\""),
            ("{\"query\":\"port\",\"action\":\"disable\",\"node\":\"x\"}", "needs a \"port\""),
            ("{\"query\":\"port\",\"action\":\"disable\",\"node\":\"x\",\"port\":256}", "one line of JSON"),
        ] {
            assert!(parse_request(bad).unwrap_err().contains(why), "{bad}");
        }
        assert!(Query::Reload.changes() && Query::Sweep(Requested::Light).changes());
        assert!(Query::Sweeping(true).changes());
        assert!(Query::PortAdmin { enable: true, node: "x".into(), port: 1, force: false }.changes());
        assert!(!Query::Status.changes() && !Query::Port(PortKey::Lid(ibsm_mad::Lid(1))).changes());
    }

    #[test]
    fn requests_parse_and_bad_ones_say_why() {
        assert_eq!(parse_request("{\"query\":\"routes\"}\n"), Ok(Query::Routes));
        assert_eq!(parse_request(&Query::Status.request_line()), Ok(Query::Status));
        assert_eq!(parse_request(&Query::Reload.request_line()), Ok(Query::Reload));
        assert_eq!(parse_request(&Query::Mcfdbs.request_line()), Ok(Query::Mcfdbs));
        assert!(!Query::Mcfdbs.changes(), "read-only");
        assert!(parse_request("{\"query\":\"reboot\"}").unwrap_err().contains("unknown query"));
        assert!(parse_request("{\"query\":\"status\",\"lid\":1}").unwrap_err().contains("takes no field \"lid\""));
        assert!(parse_request("garbage").unwrap_err().contains("one line of JSON"));
        assert!(parse_request("{\"query\":\"status\",\"x\":1}").is_err(), "unknown fields are refused");
        assert!(parse_request("").is_err());
    }

    #[test]
    fn an_sm_before_its_first_sweep_reports_not_up_and_refuses_routes() {
        let mut sm = Sm::new(crate::core::SmConfig::default(), crate::core::Guid2Lid::default());
        assert!(sm.request_sweep(Requested::Heavy).unwrap_err().contains("not active"), "nothing to sweep yet");
        let s = status(&sm);
        assert_eq!((s.state.as_str(), s.subnet_up, s.last_sweep.is_none()), ("not-active", false, true));
        let v: serde_json::Value = serde_json::from_str(&respond(&sm, &Query::Routes)).unwrap();
        assert!(v["error"].as_str().unwrap().contains("not completed a sweep"), "{v}");
        let v: serde_json::Value = serde_json::from_str(&respond(&sm, &Query::Mcfdbs)).unwrap();
        assert!(v["error"].as_str().unwrap().contains("not completed a sweep"), "{v}");
    }
}
