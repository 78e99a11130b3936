//! The page's picture of the fabric (`/api/fabric`): rows of nodes by tier (switch tiers from the
//! top, the hosts at the bottom) and the cables between them, each with a severity over the
//! performance manager's last interval ([`Severity`]).
//!
//! Bounded whatever the fabric: a row of more than [`Bounds::max_per_row`] switches is drawn as
//! that many groups of neighbouring switches (in name order); more than [`Bounds::max_hosts`]
//! hosts are drawn as one "N hosts" group under each leaf group. Cables are drawn as bundles, one
//! per pair of groups, coloured by their worst cable and counting the cables of each severity;
//! a bundle of one cable names its two ports (so a click opens them). The worst cables are listed
//! apart ([`Bounds::max_problems`]), by name, whatever the aggregation. So a k=48 fat tree
//! (2,880 switches, 27,648 hosts, 82,944 cables) gives at most a few hundred groups and a few
//! thousand bundles. Pure: snapshot and PM books in, values out.

use std::collections::{BTreeMap, HashMap};

use ibsm_mad::Guid;
use ibsm_mad::attrs::NodeType;
use ibsm_topology::{NodeKind, Peer, TopoNode, Topology, by_tier};
use serde::Serialize;

use crate::core::Sm;
use crate::core::perf::counters::{Counter, PortBook};
use crate::core::perf::{Flagged, PortKey};
use crate::sa::Snapshot;

/// How much the picture may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Switch groups per row (and host groups when hosts are grouped).
    pub max_per_row: usize,
    /// Hosts drawn one by one up to this many; past it, one group per leaf group.
    pub max_hosts: usize,
    /// Cables listed apart as problems.
    pub max_problems: usize,
}

impl Bounds {
    /// 32 groups a row, 128 hosts, 50 problems.
    pub const DEFAULT: Bounds = Bounds { max_per_row: 32, max_hosts: 128, max_problems: 50 };
}

/// A port's or cable's state over the PM's last interval, from least to most severe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Severity {
    /// No interval read yet (the PM is off, or has read the port once).
    Unknown,
    /// No error and no congestion over threshold.
    Ok,
    /// PortXmitWait over its threshold: congestion.
    Congested,
    /// Errors, under their thresholds.
    Errors,
    /// An error counter over its threshold (the port is flagged).
    OverThreshold,
}

impl Severity {
    const ALL: [Severity; 5] =
        [Severity::Unknown, Severity::Ok, Severity::Congested, Severity::Errors, Severity::OverThreshold];
}

/// One port's figures over the last interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct PortState {
    sev: Option<Severity>,
    errors: u64,
    xmit_wait: u64,
}

fn port_state(book: Option<&PortBook>, flagged: Option<&Flagged>, wait_threshold: Option<u64>) -> PortState {
    let Some(i) = book.and_then(PortBook::last_interval) else {
        return PortState { sev: Some(Severity::Unknown), ..PortState::default() };
    };
    let errors: u64 = Counter::ERRORS
        .iter()
        .filter(|&&c| c != Counter::XmitWait)
        .map(|&c| i.delta.get(c))
        .fold(0, u64::saturating_add);
    let xmit_wait = i.delta.get(Counter::XmitWait);
    let over_errors = flagged.is_some_and(|f| f.over.iter().any(|(c, _, _)| *c != Counter::XmitWait));
    let congested = flagged.is_some_and(|f| f.over.iter().any(|(c, _, _)| *c == Counter::XmitWait))
        || wait_threshold.is_some_and(|t| xmit_wait > t);
    let sev = if over_errors {
        Severity::OverThreshold
    } else if errors > 0 {
        Severity::Errors
    } else if congested {
        Severity::Congested
    } else {
        Severity::Ok
    };
    PortState { sev: Some(sev), errors, xmit_wait }
}

/// The answer (schema version 1).
#[derive(Debug, Clone, Serialize)]
pub struct FabricJson {
    /// Schema version (1).
    pub version: u32,
    /// `perf-interval-s` (0: the PM is off, every cable is `unknown`).
    pub interval_s: u64,
    /// PM sweeps completed.
    pub pm_sweeps: u64,
    /// Switches, hosts and cables in the fabric (not only those drawn one by one).
    pub switches: usize,
    /// Hosts (CAs and routers).
    pub hosts: usize,
    /// Cables.
    pub cables: usize,
    /// Cables by severity.
    pub by_severity: BTreeMap<Severity, usize>,
    /// Whether some row or the hosts are grouped.
    pub aggregated: bool,
    /// The rows, top first: switch tiers, untiered switches, then the hosts.
    pub rows: Vec<RowJson>,
    /// Cables between groups.
    pub bundles: Vec<BundleJson>,
    /// The worst cables (not `ok` or `unknown`), worst first.
    pub problems: Vec<CableJson>,
}

/// One row of the picture.
#[derive(Debug, Clone, Serialize)]
pub struct RowJson {
    /// `tier 2`, `no tier`, `hosts`.
    pub label: String,
    /// Its groups, left to right.
    pub groups: Vec<GroupJson>,
}

/// A node, or neighbouring nodes drawn as one.
#[derive(Debug, Clone, Serialize)]
pub struct GroupJson {
    /// Its index, as bundles name it.
    pub id: usize,
    /// A node's name (`node-name-map`, else its description); for a group, its first and last
    /// (`a … b`).
    pub name: String,
    /// NodeGUID of a single node (none for a group).
    pub guid: Option<String>,
    /// Nodes in it.
    pub nodes: usize,
}

/// The cables between two groups.
#[derive(Debug, Clone, Serialize)]
pub struct BundleJson {
    /// One group (the upper one).
    pub a: usize,
    /// The other.
    pub b: usize,
    /// Cables in it.
    pub cables: usize,
    /// Its worst cable's severity.
    pub severity: Severity,
    /// Its cables by severity.
    pub by_severity: BTreeMap<Severity, usize>,
    /// Error counters' increase over the last interval, both ends of every cable.
    pub errors: u64,
    /// PortXmitWait's increase, both ends of every cable.
    pub xmit_wait: u64,
    /// The cable, when the bundle holds one.
    pub cable: Option<CableJson>,
}

/// One cable: its two ports.
#[derive(Debug, Clone, Serialize)]
pub struct CableJson {
    /// One end (on the upper or first node).
    pub a: EndJson,
    /// The other.
    pub b: EndJson,
    /// Its severity (the worse of its ends).
    pub severity: Severity,
    /// Error counters' increase over the last interval, both ends.
    pub errors: u64,
    /// PortXmitWait's increase, both ends.
    pub xmit_wait: u64,
}

/// One end of a cable.
#[derive(Debug, Clone, Serialize)]
pub struct EndJson {
    /// NodeGUID.
    pub node: String,
    /// Its name in `node-name-map`, else its NodeDescription.
    pub desc: String,
    /// Port number.
    pub port: u8,
}

/// The topology of a snapshot (nodes in the snapshot's order), for its tiers. A peer that names
/// no node of the snapshot is no cable (so every peer index is in range).
/// Nodes are named by `names` (`node-name-map`) where it names them, else by NodeDescription.
fn topology(snap: &Snapshot, names: &crate::core::NodeNames) -> Topology {
    let desc = snap.describe();
    let count = desc.nodes.len();
    let mut t = Topology::default();
    for n in &desc.nodes {
        let kind = match n.kind {
            NodeType::Switch => NodeKind::Switch,
            NodeType::Router => NodeKind::Router,
            _ => NodeKind::Ca,
        };
        let mut node = TopoNode::new(kind, names.show(n.guid, n.name).to_owned(), n.num_ports, n.guid);
        for p in &n.ports {
            if let (Some(peer), Some(slot)) =
                (p.peer.filter(|q| q.node < count), node.links.get_mut(usize::from(p.num.0)))
            {
                *slot = Some(Peer { node: peer.node, port: peer.port.0, attrs: ibsm_topology::LinkAttrs::default() });
            }
        }
        t.nodes.push(node);
    }
    t
}

/// `members` cut into at most `max` groups of neighbours: (first, one past the last).
fn chunks(n: usize, max: usize) -> Vec<(usize, usize)> {
    let max = max.max(1);
    let per = n.div_ceil(max).max(1);
    (0..n).step_by(per).map(|s| (s, (s + per).min(n))).collect()
}

fn guid_text(g: Guid) -> String {
    format!("{:#018x}", g.0)
}

/// The rows of groups, and each node's group.
struct Layout {
    group_of: Vec<Option<usize>>,
    rows: Vec<RowJson>,
    hosts: usize,
    aggregated: bool,
}

fn layout(t: &Topology, bounds: &Bounds) -> Layout {
    let tiers = by_tier(t);
    // Node index -> group id; rows of groups.
    let mut group_of: Vec<Option<usize>> = vec![None; t.nodes.len()];
    let mut rows: Vec<RowJson> = Vec::new();
    let mut next_id = 0;
    let mut aggregated = false;
    let name_of = |members: &[usize]| -> (String, Option<String>) {
        match members {
            [one] => (t.nodes[*one].name.clone(), Some(guid_text(t.nodes[*one].node_guid))),
            [first, .., last] => (format!("{} … {}", t.nodes[*first].name, t.nodes[*last].name), None),
            [] => (String::new(), None),
        }
    };
    let switch_rows = tiers.iter().filter(|(l, _)| *l != Some(0));
    // Rows top down: the highest tier first, switches without a tier at the very top.
    let mut ordered: Vec<&(Option<u8>, Vec<usize>)> = switch_rows.collect();
    ordered.sort_by_key(|(l, _)| std::cmp::Reverse(l.map_or(u16::MAX, u16::from)));
    for (level, members) in ordered {
        let mut groups = Vec::new();
        let cut = chunks(members.len(), bounds.max_per_row);
        aggregated |= cut.len() < members.len();
        for (s, e) in cut {
            let (name, guid) = name_of(&members[s..e]);
            for &m in &members[s..e] {
                group_of[m] = Some(next_id);
            }
            groups.push(GroupJson { id: next_id, name, guid, nodes: e - s });
            next_id += 1;
        }
        let label = level.map_or_else(|| "no tier".to_owned(), |l| format!("tier {l}"));
        rows.push(RowJson { label, groups });
    }
    let hosts: Vec<usize> = tiers.iter().filter(|(l, _)| *l == Some(0)).flat_map(|(_, m)| m.iter().copied()).collect();
    let mut host_groups = Vec::new();
    if hosts.len() <= bounds.max_hosts {
        for &h in &hosts {
            let (name, guid) = name_of(&[h]);
            group_of[h] = Some(next_id);
            host_groups.push(GroupJson { id: next_id, name, guid, nodes: 1 });
            next_id += 1;
        }
    } else {
        aggregated = true;
        // One group per leaf group, for the hosts cabled (first) to it, in the leaves' order.
        let mut by_leaf: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for &h in &hosts {
            let leaf = (1..=t.nodes[h].num_ports).find_map(|p| t.nodes[h].peer(p)).and_then(|p| group_of[p.node]);
            by_leaf.entry(leaf.unwrap_or(usize::MAX)).or_default().push(h);
        }
        for (leaf, members) in by_leaf {
            let id = next_id;
            next_id += 1;
            for &m in &members {
                group_of[m] = Some(id);
            }
            let under = if leaf == usize::MAX { "no switch".to_owned() } else { format!("group {leaf}") };
            let name = format!("{} hosts ({under})", members.len());
            host_groups.push(GroupJson { id, name, guid: None, nodes: members.len() });
        }
    }
    if !host_groups.is_empty() {
        rows.push(RowJson { label: "hosts".to_owned(), groups: host_groups });
    }
    Layout { group_of, rows, hosts: hosts.len(), aggregated }
}

/// The picture of `snap` coloured by `sm`'s PM, within `bounds`.
pub fn fabric(sm: &Sm, snap: &Snapshot, bounds: &Bounds) -> FabricJson {
    let pm = sm.perf();
    let t = topology(snap, &sm.config().node_names);
    let wait_threshold = pm.config().thresholds.0[Counter::XmitWait.index()];
    let Layout { group_of, rows, hosts, aggregated } = layout(&t, bounds);

    // Every cable once, from its lower (node, port) end.
    let state = |i: usize, p: u8| -> PortState {
        let k: PortKey = (t.nodes[i].node_guid, p);
        port_state(pm.books().get(&k), pm.flagged().get(&k), wait_threshold)
    };
    let end =
        |i: usize, p: u8| EndJson { node: guid_text(t.nodes[i].node_guid), desc: t.nodes[i].name.clone(), port: p };
    let mut bundles: HashMap<(usize, usize), BundleJson> = HashMap::new();
    let mut problems: Vec<CableJson> = Vec::new();
    let mut by_severity: BTreeMap<Severity, usize> = Severity::ALL.iter().map(|&s| (s, 0)).collect();
    let mut cables = 0;
    for (i, n) in t.nodes.iter().enumerate() {
        for p in 1..=n.num_ports {
            let Some(peer) = n.peer(p) else { continue };
            if (peer.node, peer.port) < (i, p) {
                continue;
            }
            cables += 1;
            let (x, y) = (state(i, p), state(peer.node, peer.port));
            let severity = x.sev.max(y.sev).unwrap_or(Severity::Unknown);
            let errors = x.errors.saturating_add(y.errors);
            let xmit_wait = x.xmit_wait.saturating_add(y.xmit_wait);
            *by_severity.entry(severity).or_default() += 1;
            let (Some(ga), Some(gb)) = (group_of[i], group_of[peer.node]) else { continue };
            // The upper group first (rows are numbered top down).
            let ((ga, ea), (gb, eb)) = if ga <= gb {
                ((ga, (i, p)), (gb, (peer.node, peer.port)))
            } else {
                ((gb, (peer.node, peer.port)), (ga, (i, p)))
            };
            let cable = || CableJson { a: end(ea.0, ea.1), b: end(eb.0, eb.1), severity, errors, xmit_wait };
            if severity > Severity::Ok {
                problems.push(cable());
            }
            let b = bundles.entry((ga, gb)).or_insert_with(|| BundleJson {
                a: ga,
                b: gb,
                cables: 0,
                severity: Severity::Unknown,
                by_severity: BTreeMap::new(),
                errors: 0,
                xmit_wait: 0,
                cable: Some(cable()),
            });
            b.cables += 1;
            if b.cables > 1 {
                b.cable = None;
            }
            b.severity = b.severity.max(severity);
            *b.by_severity.entry(severity).or_default() += 1;
            b.errors = b.errors.saturating_add(errors);
            b.xmit_wait = b.xmit_wait.saturating_add(xmit_wait);
        }
    }
    problems
        .sort_by(|a, b| b.severity.cmp(&a.severity).then(b.errors.cmp(&a.errors)).then(b.xmit_wait.cmp(&a.xmit_wait)));
    problems.truncate(bounds.max_problems);
    let mut bundles: Vec<BundleJson> = bundles.into_values().collect();
    bundles.sort_by_key(|b| (b.severity, b.a, b.b));
    FabricJson {
        version: 1,
        interval_s: pm.config().interval_ns / 1_000_000_000,
        pm_sweeps: pm.counts().sweeps,
        switches: t.switch_count(),
        hosts,
        cables,
        by_severity,
        aggregated,
        rows,
        bundles,
        problems,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_every_member_once_within_the_bound() {
        for n in 0..200 {
            for max in [1, 2, 7, 32] {
                let c = chunks(n, max);
                assert!(c.len() <= max, "{n} {max}");
                let covered: Vec<usize> = c.iter().flat_map(|&(s, e)| s..e).collect();
                assert_eq!(covered, (0..n).collect::<Vec<_>>());
            }
        }
    }

    #[test]
    fn severity_follows_the_interval_and_the_flags() {
        use crate::core::perf::counters::{Counts, Wide};
        assert_eq!(port_state(None, None, Some(1000)).sev, Some(Severity::Unknown));
        let mut b = PortBook::default();
        b.absorb(0, &Counts::default(), Wide::ALL, 4);
        assert_eq!(port_state(Some(&b), None, Some(1000)).sev, Some(Severity::Unknown), "one reading: no interval");
        let mut r = Counts::default();
        b.absorb(10, &r, Wide::ALL, 4);
        assert_eq!(port_state(Some(&b), None, Some(1000)).sev, Some(Severity::Ok));
        r.set(Counter::XmitWait, 5000);
        b.absorb(20, &r, Wide::ALL, 4);
        assert_eq!(port_state(Some(&b), None, Some(1000)).sev, Some(Severity::Congested));
        r.set(Counter::SymbolErrors, 3);
        b.absorb(30, &r, Wide::ALL, 4);
        let s = port_state(Some(&b), None, Some(1000));
        assert_eq!((s.sev, s.errors), (Some(Severity::Errors), 3));
        let f = Flagged { since: 30, over: vec![(Counter::SymbolErrors, 30, 10)] };
        assert_eq!(port_state(Some(&b), Some(&f), Some(1000)).sev, Some(Severity::OverThreshold));
    }
}
