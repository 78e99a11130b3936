//! Output formats of `ibsm routes dump`.
//!
//! - [`opensm`]: OpenSM's `opensm-lfts.dump` text, byte for byte: per switch a header
//!   `Unicast lids [0-MAX] of switch Lid L guid 0x... ('name'):`, one
//!   `0xLLLL PPP # <type> portguid 0x...: 'name'` line per routed LID, and `MAX lids dumped`
//!   (OpenSM prints the highest LID there, not the number of lines). Switches in GUID order.
//! - [`ibroute`]: what infiniband-diags' `ibroute <switch>` prints, switch after switch:
//!   `Unicast lids [0x0-0xMAX] of switch Lid L guid 0x... (name):`, two column-title lines,
//!   `0xLLLL PPP : (<type> portguid 0x...: 'name')` per routed LID, `N valid lids dumped `.
//! - [`json`]: a documented schema built from its own serde types (see [`JsonDump`]).
//! - [`stats`]: counts and timings only.
//!
//! OpenSM's `opensm.fdbs` and `opensm.mcfdbs` are the `fdbs` module's (it shares
//! `switch_order`).

use std::fmt::Write;

use ibsm_routing::Routes;
use serde::Serialize;

use super::plan::Plan;

/// The dump in OpenSM's `opensm-lfts.dump` format; `only` limits it to one switch (view index).
pub fn opensm(plan: &Plan, routes: &Routes, only: Option<usize>) -> String {
    let max = plan.view.max_lid();
    let mut out = String::new();
    for s in switch_order(plan, only) {
        let sw = &plan.view.switches[s];
        let name = plan.switch_names.get(s).map_or("", String::as_str);
        let _ =
            writeln!(out, "Unicast lids [0-{max}] of switch Lid {} guid 0x{:016x} ('{name}'):", sw.lid.0, sw.guid.0);
        if let Some(lft) = routes.tables.get(s) {
            for lid in 1..=max {
                let Some(port) = lft.port_for(ibsm_mad::Lid(lid)) else { continue };
                match plan.owners.get(usize::from(lid)).and_then(Option::as_ref) {
                    Some(o) => {
                        let _ = writeln!(
                            out,
                            "0x{lid:04x} {:03} # {} portguid 0x{:016x}: '{}'",
                            port.0,
                            o.kind.opensm_name(),
                            o.port_guid.0,
                            o.name
                        );
                    }
                    None => {
                        let _ = writeln!(out, "0x{lid:04x} {:03} # unknown", port.0);
                    }
                }
            }
        }
        let _ = writeln!(out, "{max} lids dumped");
    }
    out
}

/// The dump as `ibroute` prints it, one switch after the other in GUID order.
pub fn ibroute(plan: &Plan, routes: &Routes, only: Option<usize>) -> String {
    let max = plan.view.max_lid();
    let mut out = String::new();
    for s in switch_order(plan, only) {
        let sw = &plan.view.switches[s];
        let name = plan.switch_names.get(s).map_or("", String::as_str);
        let _ = writeln!(
            out,
            "Unicast lids [0x0-0x{max:x}] of switch Lid {} guid 0x{:016x} ({name}):",
            sw.lid.0, sw.guid.0
        );
        out.push_str("  Lid  Out   Destination\n       Port     Info \n");
        let mut n = 0usize;
        if let Some(lft) = routes.tables.get(s) {
            for lid in 1..=max {
                let Some(port) = lft.port_for(ibsm_mad::Lid(lid)) else { continue };
                n += 1;
                match plan.owners.get(usize::from(lid)).and_then(Option::as_ref) {
                    Some(o) => {
                        let _ = writeln!(
                            out,
                            "0x{lid:04x} {:03} : ({} portguid 0x{:016x}: '{}')",
                            port.0,
                            o.kind.opensm_name(),
                            o.port_guid.0,
                            o.name
                        );
                    }
                    None => {
                        let _ = writeln!(out, "0x{lid:04x} {:03} : (unknown)", port.0);
                    }
                }
            }
        }
        let _ = writeln!(out, "{n} valid lids dumped ");
    }
    out
}

/// Switch view indices in GUID order (as OpenSM dumps them), or just `only`.
pub(super) fn switch_order(plan: &Plan, only: Option<usize>) -> Vec<usize> {
    if let Some(s) = only {
        return vec![s];
    }
    let mut v: Vec<usize> = (0..plan.view.switches.len()).collect();
    v.sort_by_key(|&s| plan.view.switches[s].guid);
    v
}

/// JSON schema of `ibsm routes dump --format json` (version 1).
#[derive(Debug, Serialize)]
pub struct JsonDump {
    /// Schema version (1).
    pub version: u32,
    /// Routing engine that produced the tables.
    pub engine: String,
    /// LID mask control.
    pub lmc: u8,
    /// Highest LID in use.
    pub max_lid: u16,
    /// One entry per switch, in GUID order.
    pub switches: Vec<JsonSwitch>,
}

/// One switch's table.
#[derive(Debug, Serialize)]
pub struct JsonSwitch {
    /// NodeGUID as `0x` + 16 hex digits.
    pub guid: String,
    /// Name (NodeDescription).
    pub name: String,
    /// LID of the switch.
    pub lid: u16,
    /// Routed LIDs: `[lid, egress port]` pairs in LID order (port 0 = the switch itself).
    pub routes: Vec<[u16; 2]>,
}

/// The dump as JSON ([`JsonDump`]).
pub fn json(plan: &Plan, routes: &Routes, engine: &str, only: Option<usize>) -> String {
    let max = plan.view.max_lid();
    let switches = switch_order(plan, only)
        .into_iter()
        .map(|s| {
            let sw = &plan.view.switches[s];
            let routes = routes.tables.get(s).map_or_else(Vec::new, |lft| {
                (1..=max).filter_map(|l| lft.port_for(ibsm_mad::Lid(l)).map(|p| [l, u16::from(p.0)])).collect()
            });
            JsonSwitch {
                guid: format!("0x{:016x}", sw.guid.0),
                name: plan.switch_names.get(s).cloned().unwrap_or_default(),
                lid: sw.lid.0,
                routes,
            }
        })
        .collect();
    let doc = JsonDump { version: 1, engine: engine.to_owned(), lmc: plan.view.lmc, max_lid: max, switches };
    serde_json::to_string_pretty(&doc).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}

/// Wall-clock timings of the offline pipeline, ns.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Timings {
    /// Reading and parsing the topology.
    pub read_ns: u64,
    /// Assigning LIDs and building the routing input.
    pub lids_ns: u64,
    /// The routing engine.
    pub routing_ns: u64,
}

/// Fabric counts and timings, no tables.
pub fn stats(plan: &Plan, routes: &Routes, engine: &str, t: Timings) -> String {
    let cas: usize = plan.view.cas.iter().map(|c| c.ports.len()).sum();
    let entries: usize = routes.tables.iter().map(|l| l.iter().filter(|p| p.0 != 0xff).count()).sum();
    format!(
        "switches {}\nca ports {}\nmax lid {}\nlmc {}\nengine {engine}\nlft entries {entries}\n\
         read topology {:.1} ms\nassign lids {:.1} ms\nrouting {:.1} ms\n",
        plan.view.switches.len(),
        cas,
        plan.view.max_lid(),
        plan.view.lmc,
        t.read_ns as f64 / 1e6,
        t.lids_ns as f64 / 1e6,
        t.routing_ns as f64 / 1e6,
    )
}

/// JSON schema of `ibsm routes check --json` (version 1): our own types, so the routing
/// crate's internal report can change without breaking scripts.
#[derive(Debug, Serialize)]
pub struct JsonCheck {
    /// Schema version (1).
    pub version: u32,
    /// Engine (or dump file) the tables came from.
    pub engine: String,
    /// `true` when every pair is reachable and no credit loop was found.
    pub clean: bool,
    /// Switches.
    pub switches: usize,
    /// CA ports cabled to a switch with a LID.
    pub hosts: usize,
    /// CA-to-CA pairs: checked, reachable, black holes, loops.
    pub ca_pairs: JsonPairs,
    /// Switch-to-LID routes: checked, reachable.
    pub switch_routes: [u64; 2],
    /// Hop counts of reachable CA pairs.
    pub hops: JsonHops,
    /// Edge forwarding index over directed switch-to-switch links.
    pub forwarding_index: JsonLoad,
    /// Worst link load over all shift permutations, when computed.
    pub shifts: Option<JsonShifts>,
    /// `"not-checked"`, `"none"`, or `"found"` with one example cycle.
    pub credit_loops: String,
    /// When `credit_loops` is `"found"` in the data-plane graph: the verdict for the traffic
    /// between CAs alone (`"none"`: every loop needs switch management traffic); else
    /// `"not-checked"`.
    pub credit_loops_between_cas: String,
    /// `true` when every pair is reachable and no credit loop needs traffic between CAs alone
    /// (the exit status of `routes check`).
    pub sound: bool,
    /// One example cycle: `[switch GUID, egress port]` per channel.
    pub credit_loop_example: Vec<(String, u8)>,
    /// The first failing pairs, as text.
    pub failures: Vec<String>,
}

/// Pair counts.
#[derive(Debug, Serialize)]
pub struct JsonPairs {
    /// Checked.
    pub checked: u64,
    /// Reachable.
    pub reachable: u64,
    /// Ending in a black hole.
    pub black_holes: u64,
    /// Caught in a loop.
    pub loops: u64,
}

/// Hop statistics.
#[derive(Debug, Serialize)]
pub struct JsonHops {
    /// Longest path.
    pub max: u32,
    /// Mean path length.
    pub mean: f64,
    /// Mean shortest possible length.
    pub shortest_mean: f64,
    /// Pairs routed longer than the shortest path.
    pub non_minimal: u64,
}

/// Link load statistics.
#[derive(Debug, Serialize)]
pub struct JsonLoad {
    /// Directed links counted.
    pub links: usize,
    /// Most routes on one link.
    pub max: u64,
    /// Mean routes per link.
    pub mean: f64,
}

/// Shift permutation statistics.
#[derive(Debug, Serialize)]
pub struct JsonShifts {
    /// Shifts evaluated.
    pub shifts: usize,
    /// Worst link load of any shift.
    pub worst: u32,
    /// Shifts with a link carrying more than one flow.
    pub contended: usize,
}

/// The check report as JSON ([`JsonCheck`]).
pub fn check_json(r: &ibsm_routing::check::CheckReport, engine: &str) -> String {
    use ibsm_routing::check::CreditLoops;
    let name = |l: &CreditLoops| match l {
        CreditLoops::NotChecked => "not-checked",
        CreditLoops::None => "none",
        CreditLoops::Found(_) => "found",
    };
    let example = match &r.credit_loops {
        CreditLoops::Found(c) => c.iter().map(|ch| (ch.switch.to_string(), ch.port.0)).collect(),
        _ => Vec::new(),
    };
    let doc = JsonCheck {
        version: 1,
        engine: engine.to_owned(),
        clean: r.is_clean(),
        switches: r.switches,
        hosts: r.hosts,
        ca_pairs: JsonPairs { checked: r.pairs, reachable: r.reachable, black_holes: r.black_holes, loops: r.loops },
        switch_routes: [r.switch_pairs, r.switch_reachable],
        hops: JsonHops {
            max: r.hops.max,
            mean: r.hops.mean,
            shortest_mean: r.hops.shortest_mean,
            non_minimal: r.hops.non_minimal,
        },
        forwarding_index: JsonLoad {
            links: r.forwarding_index.links,
            max: r.forwarding_index.max,
            mean: r.forwarding_index.mean,
        },
        shifts: r.shifts.as_ref().map(|s| JsonShifts {
            shifts: s.shifts,
            worst: s.worst,
            contended: s.contended_shifts,
        }),
        credit_loops: name(&r.credit_loops).to_owned(),
        credit_loops_between_cas: name(&r.credit_loops_between_cas).to_owned(),
        sound: r.is_sound(),
        credit_loop_example: example,
        failures: r.failures.iter().map(|f| format!("{f:?}")).collect(),
    };
    serde_json::to_string_pretty(&doc).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}
