//! The control socket's `status` answer: its schema ([`Status`] and the types it holds, schema
//! version 1: keys may be added, none renamed or removed) and how it is read from the SM's
//! getters and its last sweep's snapshot ([`status`]). Pure: no I/O, called on the SM's loop.

use serde::{Deserialize, Serialize};

use crate::core::{Sm, SmState};

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
    /// Whether an operator holds sweeping (`ibsm sweeping off`), and since when.
    #[serde(default)]
    pub sweeping: SweepingStatus,
    /// The ports an operator disabled (`ibsm port disable`).
    #[serde(default)]
    pub disabled_ports: Vec<DisabledPortStatus>,
    /// What an operator should look at: unrouted LIDs, unhealthy ports, nodes that blocked the
    /// last sweep, linked ports not active.
    #[serde(default)]
    pub problems: Problems,
}

/// Sweeping in the `status` answer.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SweepingStatus {
    /// An operator holds sweeping: this SM, as master, starts no sweep.
    pub held: bool,
    /// For how long, ms, as of this answer.
    pub held_for_ms: Option<u64>,
    /// Since when, seconds since the Unix epoch (the answer's time less `held_for_ms`).
    pub held_since_unix_s: Option<u64>,
}

/// A port an operator disabled, in the `status` answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DisabledPortStatus {
    /// Its node's GUID, `0x` and 16 hex digits.
    pub node: String,
    /// Its node's name in `node-name-map`, else its NodeDescription (empty when the SM does
    /// not see the node).
    pub desc: String,
    /// The port.
    pub port: u8,
    /// Its physical state as last read (`Disabled` once the Set took; `unknown` when the SM
    /// does not see the node).
    pub phys: String,
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
    /// Ports whose error counters went over a threshold in the performance manager's last
    /// interval (`ibsm counters --errors` shows their counters).
    #[serde(default)]
    pub port_errors: Vec<PortErrorsJson>,
    /// Ports whose link the routing avoids (`perf-avoid-unhealthy`), or was asked to avoid
    /// and kept because leaving it out would leave a LID unrouted.
    #[serde(default)]
    pub avoided_ports: Vec<AvoidedPortJson>,
    /// Ports the babbling-port policy holds disabled (as in `traps`).
    #[serde(default)]
    pub babbling_ports: Vec<BabblingPort>,
}

/// A port over an error threshold, in `problems`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortErrorsJson {
    /// Its node's GUID, `0x` and 16 hex digits.
    pub node: String,
    /// Its node's name in `node-name-map`, else its description.
    pub desc: String,
    /// The port.
    pub port: u8,
    /// Each counter over its threshold: `Name=increase/threshold` per interval.
    pub counters: Vec<String>,
}

/// A port the routing avoids (or keeps), in `problems`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AvoidedPortJson {
    /// Its node's GUID, `0x` and 16 hex digits.
    pub node: String,
    /// Its node's name in `node-name-map`, else its description.
    pub desc: String,
    /// The port.
    pub port: u8,
    /// The link stays in the routes: leaving it out would leave a LID unrouted.
    pub kept: bool,
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
            + self.port_errors.len()
            + self.avoided_ports.len()
            + self.babbling_ports.len()
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
    /// Its name in `node-name-map`, else its NodeDescription as last read.
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
    /// Ports the babbling-port policy holds disabled now.
    #[serde(default)]
    pub babbling_ports: Vec<BabblingPort>,
}

/// A port the babbling-port policy disabled, in `traps` and `problems`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BabblingPort {
    /// The node GUID of the port disabled, `0x` and 16 hex digits.
    pub node: String,
    /// The port disabled (the end of the cable nearer to the SM).
    pub port: u8,
    /// The port whose traps passed the limit, `0x<node GUID>[<port>]`.
    pub babbler: String,
    /// Traps counted from it in the window.
    pub traps: u32,
    /// Seconds until it is enabled again (on the SM's clock).
    pub enabled_in_s: u64,
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
    /// How its tables were made: `full` (routed from scratch), `reused` or `repaired`.
    #[serde(default)]
    pub routing_mode: String,
    /// Sweeps completed since the SM started (this one included): heavy, quick, repair.
    #[serde(default)]
    pub sweeps_done: [u64; 3],
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
    status_after_idle(sm, 0)
}

/// The `status` answer from `sm`'s getters, when the driver's clock has stood still for
/// `idle_ns` of wall-clock time since the core last saw its time (the simulator's virtual
/// clock does not move while the fabric is idle): the last sweep's age adds it, so it is the
/// wall-clock age an operator expects.
pub fn status_after_idle(sm: &Sm, idle_ns: u64) -> Status {
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
        routing_mode: r.routing_mode.name().to_owned(),
        sweeps_done: <[u64; 3]>::from(sm.sweeps_done()),
        smps_sent: r.smps_sent,
        smps_failed: r.smps_failed,
        ports_active: r.ports_active,
        ports_not_active: r.ports_not_active,
        total_ns: r.total_ns,
        age_ms: sm.now().saturating_sub(sm.last_report_at().unwrap_or(0)).saturating_add(idle_ns) / 1_000_000,
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
                babbling_ports: sm
                    .babbling()
                    .list()
                    .map(|((g, p), d)| BabblingPort {
                        node: format!("{:#018x}", g.0),
                        port: p,
                        babbler: format!("{:#018x}[{}]", d.babbler.0.0, d.babbler.1),
                        traps: d.traps,
                        enabled_in_s: d.until.saturating_sub(sm.now()) / 1_000_000_000,
                    })
                    .collect(),
            }
        },
        sweeping: sweeping(sm, idle_ns),
        disabled_ports: disabled_ports(sm),
        problems: Problems::default(),
    };
    st.problems = problems(sm, &st);
    st
}

/// Sweeping held or not, and since when.
fn sweeping(sm: &Sm, idle_ns: u64) -> SweepingStatus {
    let Some(since) = sm.sweeping_held_since() else { return SweepingStatus::default() };
    let held_for_ms = sm.now().saturating_sub(since).saturating_add(idle_ns) / 1_000_000;
    let now_s = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    SweepingStatus {
        held: true,
        held_for_ms: Some(held_for_ms),
        held_since_unix_s: Some(now_s.saturating_sub(held_for_ms / 1000)),
    }
}

/// The disabled ports, with what the SM last read of each.
fn disabled_ports(sm: &Sm) -> Vec<DisabledPortStatus> {
    let subnet = sm.subnet();
    sm.disabled_ports()
        .iter()
        .map(|&(g, p)| {
            let node = subnet.by_guid.get(&g).and_then(|&i| subnet.node(i));
            let phys = node
                .and_then(|n| n.port(ibsm_mad::PortNum(p)))
                .and_then(|r| r.info)
                .map_or_else(|| "unknown".to_owned(), |i| format!("{:?}", i.port_physical_state));
            DisabledPortStatus {
                node: format!("{:#018x}", g.0),
                desc: sm.config().node_names.show(g, node.map_or("", |n| n.desc.as_str())).to_owned(),
                port: p,
                phys,
            }
        })
        .collect()
}

/// The `problems` of a status: from the last snapshot, the traps and the last report.
fn problems(sm: &Sm, st: &Status) -> Problems {
    let unrouted = sm.snapshot().map(|s| s.unrouted().clone()).unwrap_or_default();
    let report = sm.last_report();
    Problems {
        unrouted_lids_total: unrouted.total,
        unrouted_lids: unrouted.lids.iter().map(|&(lid, switches)| UnroutedLid { lid: lid.0, switches }).collect(),
        unhealthy_ports: st.traps.unhealthy_ports.clone(),
        babbling_ports: st.traps.babbling_ports.clone(),
        blocked_nodes: report
            .map(|r| {
                r.blocked
                    .iter()
                    .chain(&r.failed_nodes)
                    .map(|b| BlockedNodeJson {
                        guid: format!("{:#018x}", b.guid.0),
                        desc: sm.config().node_names.show(b.guid, &b.desc).to_owned(),
                    })
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
        port_errors: sm
            .perf()
            .flagged()
            .iter()
            .map(|((g, p), f)| PortErrorsJson {
                node: format!("{:#018x}", g.0),
                desc: sm.config().node_names.show(*g, sm.perf().desc(*g)).to_owned(),
                port: *p,
                counters: f.over.iter().map(|(c, d, t)| format!("{}={d}/{t}", c.name())).collect(),
            })
            .collect(),
        avoided_ports: {
            let routed = sm.perf().routed();
            let entry = |&(g, p): &(ibsm_mad::Guid, u8), kept| AvoidedPortJson {
                node: format!("{:#018x}", g.0),
                desc: sm.config().node_names.show(g, sm.perf().desc(g)).to_owned(),
                port: p,
                kept,
            };
            routed.cut.iter().map(|k| entry(k, false)).chain(routed.kept.iter().map(|k| entry(k, true))).collect()
        },
    }
}
