//! The SM's local control socket: a Unix stream socket through which operators' tools
//! (`ibsm routes dump --socket`, `ibsm routes check --socket`) ask the running SM what it holds.
//!
//! Protocol: the client connects, writes one line of JSON, `{"query":"routes"}`,
//! `{"query":"status"}` or `{"query":"reload"}`, and reads one line of JSON back; then the SM
//! closes the connection. `routes` answers [`LiveRoutes`]; `status` answers [`Status`]; `reload`
//! (which the transport carries out: it knows the files) answers [`Reloaded`]; anything else (malformed JSON,
//! an unknown query, a line over 4 KiB, a client too slow to send its line) gets
//! `{"error":"..."}`.
//!
//! Owns the socket file (created mode 0600 under its final name by an atomic rename, a stale
//! file from a dead SM replaced, removed when the [`ControlServer`] is dropped) and a std thread
//! that accepts connections and reads requests. That thread never touches the SM: a valid query
//! goes through a tokio channel to the transport's loop, which answers it from the sans-IO
//! core's getters and its last sweep's snapshot ([`Pending::answer`]) between two events, at
//! once even while a sweep runs, so a malformed request or a stuck
//! client can never disturb the SM. A std thread rather than a tokio listener because the
//! workspace's tokio has no `net` feature and the accept loop must also serve the simulated SM,
//! whose sweeps are synchronous.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot};

use crate::core::{Sm, SmState};
use crate::routes::live::LiveRoutes;

/// The socket's file name inside the state directory, when `--control` is not given.
pub const DEFAULT_NAME: &str = "ibsm.sock";

/// Longest request line accepted, bytes.
const MAX_REQUEST: u64 = 4096;
/// Distinguishes the temporary names of sockets bound by one process.
static BIND_SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
/// What is read and dropped after an over-long request before answering it.
const DRAIN_LIMIT: u64 = 1 << 20;
/// How long a client may take to send its request line.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a client may take to read the answer.
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// What a client may ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Query {
    /// The discovered fabric and every switch's forwarding table ([`LiveRoutes`]).
    Routes,
    /// The SM's state and its last sweep ([`Status`]).
    Status,
    /// Read the configuration and the partition policy again ([`Reloaded`]); answered by the
    /// transport, which knows the files.
    Reload,
    /// Prometheus text ([`crate::metrics::render`]); asked by the metrics endpoint only.
    Metrics,
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
    pub const fn name(self) -> &'static str {
        match self {
            Query::Routes => "routes",
            Query::Status => "status",
            Query::Reload => "reload",
            Query::Metrics => "metrics",
        }
    }

    /// The request line for this query (without the newline).
    pub fn request_line(self) -> String {
        format!("{{\"query\":\"{}\"}}", self.name())
    }
}

/// The request as sent on the wire.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RequestLine {
    query: String,
}

/// Parses one request line.
///
/// # Errors
/// A message saying what is wrong with the line.
pub fn parse_request(line: &str) -> Result<Query, String> {
    let req: RequestLine = serde_json::from_str(line.trim())
        .map_err(|e| format!("expected one line of JSON such as {{\"query\":\"status\"}}: {e}"))?;
    match req.query.as_str() {
        "routes" => Ok(Query::Routes),
        "status" => Ok(Query::Status),
        "reload" => Ok(Query::Reload),
        other => Err(format!("unknown query {other:?}; expected \"routes\", \"status\" or \"reload\"")),
    }
}

/// The answer to `status` (schema version 1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    /// Schema version (1).
    pub version: u32,
    /// `not-active`, `discovering`, `standby` or `master`.
    pub state: String,
    /// Phase of the running sweep, `up` when none runs.
    pub phase: String,
    /// `true` when the last completed sweep brought every linked port up without a failure.
    pub subnet_up: bool,
    /// The last completed sweep, if any.
    pub last_sweep: Option<SweepStatus>,
    /// M_Keys: the mode and the bad-M_Key traps received.
    #[serde(default)]
    pub m_keys: MKeyStatus,
    /// This SM's priority (elevated after a takeover, when configured).
    #[serde(default)]
    pub priority: u8,
    /// The master: this SM when master, the one it watches when standby; none before either.
    #[serde(default)]
    pub master: Option<MasterStatus>,
    /// The state sync between this SM and the others.
    #[serde(default)]
    pub sync: SyncStatusJson,
    /// Traps: received by number, how they were handled, ports reported unhealthy.
    #[serde(default)]
    pub traps: TrapStatus,
    /// What an operator should look at: unrouted LIDs, unhealthy ports, nodes that blocked the
    /// last sweep, linked ports not active.
    #[serde(default)]
    pub problems: Problems,
}

/// The `problems` of the `status` answer (all empty or 0 on a healthy fabric).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Problems {
    /// End-port LIDs some switch has no route for, in all.
    pub unrouted_lids_total: usize,
    /// The first 64 of them.
    pub unrouted_lids: Vec<UnroutedLid>,
    /// Ports reported by traps 129-131 (as in `traps`).
    pub unhealthy_ports: Vec<UnhealthyPort>,
    /// Nodes that did not answer in the last sweep, or that a Set failed on (it was
    /// incomplete because of them).
    pub blocked_nodes: Vec<BlockedNodeJson>,
    /// Linked ports the last sweep could not bring to Active.
    pub ports_not_active: usize,
    /// Differences from the planned cabling (`expected-topology`), in all.
    #[serde(default)]
    pub cabling_total: usize,
    /// The first 64 of them, one line each (`missing link ...`, `miscabled ...`).
    #[serde(default)]
    pub cabling: Vec<String>,
    /// Ports left unarmed as ends of miscabled cables (`refuse-miscabled`).
    #[serde(default)]
    pub refused_ports: Vec<RefusedPort>,
    /// NodeGUIDs two nodes answered with, and the ports quarantined because of them.
    #[serde(default)]
    pub quarantined_guids: Vec<QuarantinedGuid>,
}

/// A duplicated GUID in `problems`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuarantinedGuid {
    /// The NodeGUID, `0x` and 16 hex digits.
    pub guid: String,
    /// The ports taken out (both instances' and their neighbours'), `0x<node GUID>[<port>]`.
    pub ports: Vec<String>,
}

/// A port refused as an end of a miscabled cable, in `problems`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefusedPort {
    /// Its node's GUID, `0x` and 16 hex digits.
    pub node: String,
    /// The port.
    pub port: u8,
}

impl Problems {
    /// How many problems it lists.
    pub fn count(&self) -> usize {
        self.unrouted_lids_total
            + self.unhealthy_ports.len()
            + self.blocked_nodes.len()
            + self.ports_not_active
            + self.cabling_total
            + self.quarantined_guids.len()
    }
}

/// An unrouted LID in `problems`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnroutedLid {
    /// The LID.
    pub lid: u16,
    /// Switches without a route for it.
    pub switches: usize,
}

/// A node that blocked the last sweep, in `problems`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockedNodeJson {
    /// Its node GUID, `0x` and 16 hex digits.
    pub guid: String,
    /// Its NodeDescription as last read.
    pub desc: String,
}

/// Traps in the `status` answer.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TrapStatus {
    /// Traps received by generic number (as a string key; `0`: vendor or unreadable).
    pub received: std::collections::BTreeMap<String, u64>,
    /// Identical traps from one source dropped past the threshold.
    pub suppressed: u64,
    /// Traps handled with others: gathered into a sweep about to start, or covered by a running
    /// sweep that read their source after them (no extra sweep).
    pub coalesced: u64,
    /// Heavy sweeps the rate limit deferred.
    pub deferred: u64,
    /// Light sweeps completed.
    pub light_sweeps: u64,
    /// Ports reported by traps 129-131.
    pub unhealthy_ports: Vec<UnhealthyPort>,
}

/// A port reported by trap 129, 130 or 131.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnhealthyPort {
    /// The node's GUID, `0x` and 16 hex digits.
    pub node: String,
    /// The port.
    pub port: u8,
    /// The last trap number reported for it.
    pub trap: u16,
    /// Traps received for it.
    pub count: u64,
}

/// The state sync in the `status` answer.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SyncStatusJson {
    /// Master: its state version. Standby: the master's, as of its last query.
    pub version: u64,
    /// Standby: the master's version at which this SM held exactly the master's state (none:
    /// not current, or never synced).
    pub current_at: Option<u64>,
    /// Standby: the sections it holds.
    pub sections: Vec<String>,
    /// Master: the standbys it syncs.
    pub standbys: Vec<SyncPeerStatus>,
}

/// One standby in the master's `sync.standbys`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncPeerStatus {
    /// Its port GUID.
    pub guid: String,
    /// Its LID.
    pub lid: u16,
    /// `asking`, `sending`, `current`, `foreign` (not ibsm: no sync), `unreachable` or
    /// `refused` (an ibsm SM that was not standing by for this master when asked).
    pub state: String,
    /// The version it is current at.
    pub current_at: Option<u64>,
}

/// The master in the `status` answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MasterStatus {
    /// Its port GUID, `0x` and 16 hex digits.
    pub guid: String,
    /// Its port's LID.
    pub lid: u16,
    /// Its priority.
    pub priority: u8,
}

/// M_Keys in the `status` answer.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct MKeyStatus {
    /// `off`, `per-port` or `subnet` (one key).
    pub mode: String,
    /// M_KeyProtectBits the SM sets.
    pub protect: u8,
    /// Bad-M_Key traps (256) by source, in LID order.
    pub violations: Vec<MKeyViolation>,
}

/// Bad-M_Key traps from one source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MKeyViolation {
    /// The LID that raised them.
    pub lid: u16,
    /// How many.
    pub traps: u64,
}

/// The figures of the last completed sweep.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepStatus {
    /// Every linked port active and no SMP failed.
    pub complete: bool,
    /// Switches found.
    pub switches: usize,
    /// CAs (and routers) found.
    pub cas: usize,
    /// End ports with a LID.
    pub end_ports: usize,
    /// Links.
    pub links: usize,
    /// LID mask control.
    pub lmc: u8,
    /// The SM's own LID.
    pub sm_lid: u16,
    /// Routing engine that routed it.
    pub routing_engine: String,
    /// SMPs sent.
    pub smps_sent: u64,
    /// SMPs that failed after every retry.
    pub smps_failed: u64,
    /// Linked ports active.
    pub ports_active: usize,
    /// Linked ports not active.
    pub ports_not_active: usize,
    /// Duration of the sweep, ns.
    pub total_ns: u64,
    /// How long ago it ended, ms, as of this answer.
    #[serde(default)]
    pub age_ms: u64,
}

/// The `status` answer from `sm`'s getters.
pub fn status(sm: &Sm) -> Status {
    let state = match sm.state() {
        SmState::NotActive => "not-active",
        SmState::Discovering => "discovering",
        SmState::Standby => "standby",
        SmState::Master => "master",
    };
    let last = sm.last_report().map(|r| SweepStatus {
        complete: r.complete,
        switches: r.switches,
        cas: r.cas,
        end_ports: r.end_ports,
        links: r.links,
        lmc: r.lmc,
        sm_lid: r.sm_lid.0,
        routing_engine: r.routing_engine.clone(),
        smps_sent: r.smps_sent,
        smps_failed: r.smps_failed,
        ports_active: r.ports_active,
        ports_not_active: r.ports_not_active,
        total_ns: r.total_ns,
        age_ms: sm.now().saturating_sub(sm.last_report_at().unwrap_or(0)) / 1_000_000,
    });
    let mut st = Status {
        version: 1,
        state: state.to_owned(),
        phase: sm.phase().name().to_owned(),
        subnet_up: sm.state() == SmState::Master && last.as_ref().is_some_and(|l| l.complete),
        last_sweep: last,
        m_keys: MKeyStatus {
            mode: match sm.config().m_key.mode {
                crate::core::mkeys::MKeyMode::Off => "off",
                crate::core::mkeys::MKeyMode::PerPort => "per-port",
                crate::core::mkeys::MKeyMode::Fixed(_) => "subnet",
            }
            .to_owned(),
            protect: sm.config().m_key.protect,
            violations: sm.mkey_violations().iter().map(|(l, v)| MKeyViolation { lid: l.0, traps: v.count }).collect(),
        },
        priority: sm.priority(),
        master: sm.master().map(|(g, l, p)| MasterStatus { guid: format!("{:#018x}", g.0), lid: l.0, priority: p }),
        sync: {
            let s = sm.sync_status();
            SyncStatusJson {
                version: s.version,
                current_at: s.current_at,
                sections: s.sections.iter().map(|x| (*x).to_owned()).collect(),
                standbys: s
                    .standbys
                    .iter()
                    .map(|(g, lid, state, v)| SyncPeerStatus {
                        guid: format!("{:#018x}", g.0),
                        lid: lid.0,
                        state: (*state).to_owned(),
                        current_at: *v,
                    })
                    .collect(),
            }
        },
        traps: {
            let t = sm.trap_book();
            TrapStatus {
                received: t.counters.by_number.iter().map(|(n, c)| (n.to_string(), *c)).collect(),
                suppressed: t.counters.suppressed,
                coalesced: t.counters.coalesced,
                deferred: t.counters.deferred,
                light_sweeps: sm.light_sweeps(),
                unhealthy_ports: t
                    .unhealthy
                    .iter()
                    .map(|((g, p), u)| UnhealthyPort {
                        node: format!("{:#018x}", g.0),
                        port: *p,
                        trap: u.trap,
                        count: u.count,
                    })
                    .collect(),
            }
        },
        problems: Problems::default(),
    };
    st.problems = problems(sm, &st);
    st
}

/// The `problems` of a status: from the last snapshot, the traps and the last report.
fn problems(sm: &Sm, st: &Status) -> Problems {
    let unrouted = sm.snapshot().map(|s| s.unrouted().clone()).unwrap_or_default();
    let report = sm.last_report();
    Problems {
        unrouted_lids_total: unrouted.total,
        unrouted_lids: unrouted.lids.iter().map(|&(lid, switches)| UnroutedLid { lid: lid.0, switches }).collect(),
        unhealthy_ports: st.traps.unhealthy_ports.clone(),
        blocked_nodes: report
            .map(|r| {
                r.blocked
                    .iter()
                    .chain(&r.failed_nodes)
                    .map(|b| BlockedNodeJson { guid: format!("{:#018x}", b.guid.0), desc: b.desc.clone() })
                    .collect()
            })
            .unwrap_or_default(),
        ports_not_active: report.map_or(0, |r| r.ports_not_active),
        cabling_total: sm.cabling().diff.differences.len(),
        cabling: sm.cabling().diff.lines().into_iter().take(64).collect(),
        refused_ports: sm
            .cabling()
            .refused
            .iter()
            .map(|(g, p)| RefusedPort { node: format!("{:#018x}", g.0), port: *p })
            .collect(),
        quarantined_guids: sm
            .quarantine()
            .guids
            .iter()
            .map(|(g, ends)| QuarantinedGuid {
                guid: format!("{:#018x}", g.0),
                ports: ends.iter().map(|(n, p)| format!("{:#018x}[{p}]", n.0)).collect(),
            })
            .collect(),
    }
}

/// The response line (without the newline) to `query`, answered from `sm`'s getters.
pub fn respond(sm: &Sm, query: Query) -> String {
    let out = match query {
        Query::Status => serde_json::to_string(&status(sm)),
        Query::Routes => match LiveRoutes::from_sm(sm) {
            Ok(r) => serde_json::to_string(&r),
            Err(e) => return error_line(&e.to_string()),
        },
        Query::Reload => return error_line("reload is answered by the transport, not from the SM's getters"),
        Query::Metrics => return crate::metrics::render(sm),
    };
    out.unwrap_or_else(|e| error_line(&format!("encoding the answer: {e}")))
}

/// `{"error":"..."}`.
pub fn error_line(message: &str) -> String {
    serde_json::json!({ "error": message }).to_string()
}

/// A valid request waiting for the SM's answer.
#[derive(Debug)]
pub struct Pending {
    /// What was asked.
    pub query: Query,
    reply: oneshot::Sender<String>,
}

impl Pending {
    /// A query for the SM's loop, and where its answer will arrive.
    pub fn new(query: Query) -> (Pending, oneshot::Receiver<String>) {
        let (reply, wait) = oneshot::channel();
        (Pending { query, reply }, wait)
    }

    /// Answers from `sm`'s getters (the client may have gone; that is not an error). The
    /// `routes` answer (about 176 MB of JSON at k=48) is built on a thread of its own from the
    /// last snapshot, so the SM's loop is not held up; at most [`ROUTE_BUILDERS`] at a time,
    /// past that the client is told to retry.
    pub fn answer(self, sm: &Sm) {
        if self.query != Query::Routes {
            let _ = self.reply.send(respond(sm, self.query));
            return;
        }
        let Some(snap) = sm.snapshot() else {
            let _ = self.reply.send(respond(sm, self.query));
            return;
        };
        if BUILDERS.fetch_add(1, Ordering::AcqRel) >= ROUTE_BUILDERS {
            BUILDERS.fetch_sub(1, Ordering::AcqRel);
            let _ = self.reply.send(error_line("busy: other routes answers are being built; retry"));
            return;
        }
        let reply = self.reply;
        let build = move || {
            let json = serde_json::to_string(&LiveRoutes::from_snapshot(&snap))
                .unwrap_or_else(|e| error_line(&format!("encoding the answer: {e}")));
            let _ = reply.send(json);
            BUILDERS.fetch_sub(1, Ordering::AcqRel);
        };
        if let Err(e) = std::thread::Builder::new().name("ibsm-routes-answer".to_owned()).spawn(build) {
            BUILDERS.fetch_sub(1, Ordering::AcqRel);
            tracing::warn!(error_id = "control-thread", err = %e, "could not start a thread for a routes answer");
        }
    }
}

/// `routes` answers built at once, at most.
pub const ROUTE_BUILDERS: usize = 2;

/// `routes` answers being built now.
static BUILDERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

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

/// The listening control socket. Dropping it stops the accept thread and removes the file.
#[derive(Debug)]
pub struct ControlServer {
    /// The socket path (`None`: no socket, only other listeners such as the metrics endpoint).
    path: Option<PathBuf>,
    /// Device and inode of the socket file we created (removed only if still ours).
    id: (u64, u64),
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    tx: mpsc::UnboundedSender<Pending>,
    rx: mpsc::UnboundedReceiver<Pending>,
}

impl ControlServer {
    /// Creates the socket at `path` (mode 0600; a stale socket left by a dead SM is replaced)
    /// and starts accepting connections.
    ///
    /// # Errors
    /// [`ControlError::InUse`] when a live SM answers there, [`ControlError::NotSocket`] when
    /// `path` is some other file, [`ControlError::Io`] when binding fails.
    pub fn bind(path: &Path) -> Result<ControlServer, ControlError> {
        let io = |what: &'static str| move |err| ControlError::Io { path: path.to_owned(), what, err };
        if let Ok(meta) = std::fs::symlink_metadata(path) {
            if !meta.file_type().is_socket() {
                return Err(ControlError::NotSocket(path.to_owned()));
            }
            if UnixStream::connect(path).is_ok() {
                return Err(ControlError::InUse(path.to_owned()));
            }
            std::fs::remove_file(path).map_err(io("removing the stale socket"))?;
        }
        // Bind under a temporary name, restrict it, then rename: the final name never exists
        // with looser permissions.
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let seq = BIND_SEQ.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!(".ibsm-{}-{seq}.sock.tmp", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        let listener = UnixListener::bind(&tmp).map_err(io("binding"))?;
        let placed = std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600))
            .map_err(io("setting mode 0600"))
            .and_then(|()| std::fs::rename(&tmp, path).map_err(io("renaming into place")))
            .and_then(|()| std::fs::symlink_metadata(path).map_err(io("reading back")));
        let meta = match placed {
            Ok(m) => m,
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                return Err(e);
            }
        };
        let (tx, rx) = mpsc::unbounded_channel();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let sender = tx.clone();
        let spawned = std::thread::Builder::new()
            .name("ibsm-control".to_owned())
            .spawn(move || accept_loop(&listener, &flag, &sender))
            .map_err(io("spawning the accept thread"));
        let thread = match spawned {
            Ok(t) => t,
            Err(e) => {
                let _ = std::fs::remove_file(path);
                return Err(e);
            }
        };
        tracing::info!(path = %path.display(), "control socket listening");
        Ok(ControlServer {
            path: Some(path.to_owned()),
            id: (meta.dev(), meta.ino()),
            stop,
            thread: Some(thread),
            tx,
            rx,
        })
    }

    /// A server without a socket: only other listeners (the metrics endpoint) send it queries.
    pub fn without_socket() -> ControlServer {
        let (tx, rx) = mpsc::unbounded_channel();
        ControlServer { path: None, id: (0, 0), stop: Arc::new(AtomicBool::new(true)), thread: None, tx, rx }
    }

    /// The socket path, if there is a socket.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Where other listeners hand their queries to the SM's loop.
    pub fn sender(&self) -> mpsc::UnboundedSender<Pending> {
        self.tx.clone()
    }

    /// The next valid request; never returns if the accept thread has ended.
    pub async fn next(&mut self) -> Pending {
        match self.rx.recv().await {
            Some(p) => p,
            None => std::future::pending().await,
        }
    }

    /// A valid request already waiting, if any.
    pub fn try_next(&mut self) -> Option<Pending> {
        self.rx.try_recv().ok()
    }
}

impl crate::transport::SideQueries for ControlServer {
    type Query = Pending;
    async fn next_query(&mut self) -> Pending {
        self.next().await
    }
}

impl crate::transport::SideQuery for Pending {
    fn is_reload(&self) -> bool {
        self.query == Query::Reload
    }
    fn reply(self, answer: String) {
        let _ = self.reply.send(answer);
    }
    fn answer(self, sm: &Sm) {
        Pending::answer(self, sm);
    }
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        // Requests still queued get "shutting down" (their reply senders are dropped).
        self.rx.close();
        while self.rx.try_recv().is_ok() {}
        let Some(path) = &self.path else { return };
        // Wake the accept thread with a connection of our own; join it only if that worked.
        if UnixStream::connect(path).is_ok() {
            if let Some(t) = self.thread.take() {
                let _ = t.join();
            }
        }
        let ours = std::fs::symlink_metadata(path).is_ok_and(|m| (m.dev(), m.ino()) == self.id);
        if ours {
            let _ = std::fs::remove_file(path);
        }
    }
}

fn accept_loop(listener: &UnixListener, stop: &AtomicBool, tx: &mpsc::UnboundedSender<Pending>) {
    for conn in listener.incoming() {
        if stop.load(Ordering::Acquire) {
            return;
        }
        match conn {
            Ok(stream) => serve_one(&stream, tx),
            Err(e) => {
                tracing::warn!(error_id = "control-accept", error = %e, "control socket: accept failed");
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
}

/// Reads one request, has the SM answer it, writes the answer; errors end the connection.
fn serve_one(stream: &UnixStream, tx: &mpsc::UnboundedSender<Pending>) {
    let _ = stream.set_read_timeout(Some(REQUEST_TIMEOUT));
    let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
    let mut line = Vec::new();
    let read = BufReader::new(stream.take(MAX_REQUEST + 1)).read_until(b'\n', &mut line);
    let answer = match read {
        Err(e) => error_line(&format!("reading the request: {e}")),
        Ok(_) if line.len() as u64 > MAX_REQUEST => {
            // Read (a bounded amount of) what follows, so that closing does not reset the
            // connection before the client has read the error.
            let _ = stream.set_read_timeout(Some(Duration::from_millis(100)));
            let _ = std::io::copy(&mut stream.take(DRAIN_LIMIT), &mut std::io::sink());
            error_line(&format!("request longer than {MAX_REQUEST} bytes"))
        }
        Ok(_) => {
            match std::str::from_utf8(&line).map_err(|_| "the request is not UTF-8".to_owned()).and_then(parse_request)
            {
                Err(msg) => error_line(&msg),
                Ok(query) => {
                    let (reply, wait) = oneshot::channel();
                    if tx.send(Pending { query, reply }).is_err() {
                        error_line("the SM is shutting down")
                    } else {
                        wait.blocking_recv().unwrap_or_else(|_| error_line("the SM is shutting down"))
                    }
                }
            }
        }
    };
    let mut w = stream;
    let _ = w.write_all(answer.as_bytes()).and_then(|()| w.write_all(b"\n")).and_then(|()| w.flush());
    let _ = stream.shutdown(std::net::Shutdown::Both);
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
pub fn query<T: serde::de::DeserializeOwned>(path: &Path, query: Query, timeout: Duration) -> Result<T, ControlError> {
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
    fn requests_parse_and_bad_ones_say_why() {
        assert_eq!(parse_request("{\"query\":\"routes\"}\n"), Ok(Query::Routes));
        assert_eq!(parse_request(&Query::Status.request_line()), Ok(Query::Status));
        assert_eq!(parse_request(&Query::Reload.request_line()), Ok(Query::Reload));
        assert!(parse_request("{\"query\":\"reboot\"}").unwrap_err().contains("unknown query"));
        assert!(parse_request("garbage").unwrap_err().contains("one line of JSON"));
        assert!(parse_request("{\"query\":\"status\",\"x\":1}").is_err(), "unknown fields are refused");
        assert!(parse_request("").is_err());
    }

    #[test]
    fn an_sm_before_its_first_sweep_reports_not_up_and_refuses_routes() {
        let sm = Sm::new(crate::core::SmConfig::default(), crate::core::Guid2Lid::default());
        let s = status(&sm);
        assert_eq!((s.state.as_str(), s.subnet_up, s.last_sweep.is_none()), ("not-active", false, true));
        let v: serde_json::Value = serde_json::from_str(&respond(&sm, Query::Routes)).unwrap();
        assert!(v["error"].as_str().unwrap().contains("not completed a sweep"), "{v}");
    }

    fn tmp_dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("ibsm-control-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn socket_is_0600_answers_garbage_with_an_error_and_is_removed_on_drop() {
        let dir = tmp_dir("life");
        let path = dir.join("s.sock");
        let server = ControlServer::bind(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let a = request(&path, "not json", Duration::from_secs(5)).unwrap();
        assert!(serde_json::from_str::<serde_json::Value>(&a).unwrap()["error"].is_string(), "{a}");
        assert!(matches!(ControlServer::bind(&path), Err(ControlError::InUse(_))));
        drop(server);
        assert!(!path.exists(), "socket removed");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_stale_socket_is_replaced_and_a_regular_file_is_not() {
        let dir = tmp_dir("stale");
        let path = dir.join("s.sock");
        drop(UnixListener::bind(&path).unwrap()); // leaves the file, nobody listening
        assert!(path.exists());
        let server = ControlServer::bind(&path).unwrap();
        drop(server);
        std::fs::write(&path, b"keep me").unwrap();
        assert!(matches!(ControlServer::bind(&path), Err(ControlError::NotSocket(_))));
        assert_eq!(std::fs::read(&path).unwrap(), b"keep me");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
