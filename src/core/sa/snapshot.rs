//! The SA snapshot of a completed sweep: the discovered subnet, the PortInfo and SwitchInfo as
//! last read or written, the P_Key tables in force and the forwarding tables the switches hold,
//! copied into the SA's immutable [`Snapshot`] (which builds its own indexes).
//!
//! Owns the copy ([`build`], from the parts named in [`Sources`]), made as a patch of the last
//! snapshot when there is one: a node whose record would come out as the last snapshot's
//! (the same NodeInfo, NodeDescription, SwitchInfo, ports, forwarding table `Arc`, and P_Key
//! tables when the partition books have not changed since: [`Partitions::revision`]) is
//! shared with it, not copied (a switch whose table alone changed gets the last record's
//! ports), and the indexes too when no node they read changed; and what
//! changed between two snapshots for the SA's subscribers (ports in and out of service:
//! notices 64 and 65; groups created and deleted: 66 and 67). When to take it (at the end of
//! every sweep) is the coordinator's call.

use std::sync::Arc;

use ibsm_mad::{Gid, Guid, PortNum};

use super::Sa;
use crate::core::partitions::Partitions;
use crate::core::programming::Programming;
use crate::core::state::{Node, PortRecord, Subnet};
use crate::sa::SaState;
use crate::sa::snapshot::{PortAt, SmPort, SnapLayers, SnapNode, SnapPort, Snapshot};

/// What a snapshot is copied from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sources<'a> {
    /// The subnet as the sweep left it.
    pub subnet: &'a Subnet,
    /// The P_Key tables in force.
    pub partitions: &'a Partitions,
    /// The forwarding tables the switches hold.
    pub programming: &'a Programming,
    /// The routing engine that routed the sweep.
    pub engine: &'a str,
    /// The SM's own port.
    pub port_guid: Guid,
    /// Configuration: subnet prefix, LMC, subnet timeout.
    pub subnet_prefix: u64,
    /// LID mask control.
    pub lmc: u8,
    /// The subnet timeout (PacketLifeTime of path records).
    pub subnet_timeout: u8,
    /// The QoS policy in force (None: QoS off).
    pub qos: Option<&'a ibsm_qos::QosPolicy>,
    /// `allow-both-pkeys` (the path P_Key choice follows it).
    pub allow_both_pkeys: bool,
    /// The layers of a layered route and its switch nodes in their order.
    pub layers: Option<&'a (Vec<crate::core::state::NodeIdx>, std::sync::Arc<ibsm_routing::dfsssp::PathLayers>)>,
}

/// A new snapshot of the subnet as it stands in `src`, sharing with `prev` (the last snapshot,
/// built from the same books) every node record and index that would come out the same, and
/// taken with `mark` (0: none; the coordinator settles the subnet with it). A node the subnet
/// has not marked changed since `prev`'s mark is as `prev` shows it (its forwarding table
/// aside, looked up for every switch) and is not compared; without `prev`'s mark in the
/// subnet's book every node is compared.
pub(crate) fn build(src: &Sources<'_>, prev: Option<&Snapshot>, mark: u64) -> Snapshot {
    // The P_Key tables of a shared record are the last snapshot's: only while the books are
    // as they were then.
    let same_books = prev.filter(|p| p.pkeys_revision == Some(src.partitions.revision()));
    let changed = same_books
        .filter(|p| p.nodes.len() <= src.subnet.nodes.len())
        .and_then(|p| src.subnet.nodes.changed_since(p.subnet_mark));
    // Records built afresh (not the last snapshot's, nor the last one's with a new table): the
    // only ones the indexes must compare with the last snapshot's.
    let mut fresh: Vec<usize> = Vec::new();
    let nodes = src
        .subnet
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let old = same_books.and_then(|p| p.nodes.shared(i));
            // Unmarked: not read at all (the record says what it is); marked: compared.
            let same = old.filter(|old| match changed {
                Some(c) if !c.contains(i) => {
                    debug_assert!(unchanged(old, n), "node {i} changed without a mark");
                    true
                }
                _ => unchanged(old, n),
            });
            let switch = same.map_or_else(|| n.is_switch(), |old| old.is_switch());
            // The table this SM holds for the switch, shared (not copied).
            let table = if switch {
                let guid = same.map_or(n.info.node_guid, |old| old.info.node_guid);
                src.programming.programmed_lft(guid)
            } else {
                None
            };
            match same {
                Some(old) if same_table(old.table.as_ref(), table.as_ref()) => Arc::clone(old),
                Some(old) => {
                    // Only the forwarding table changed (a repair or a re-route): the ports
                    // are the last record's, shared (not copied, not worked out again).
                    let SnapNode { info, desc, switch_info, ports, .. } = &**old;
                    Arc::new(SnapNode {
                        info: *info,
                        desc: desc.clone(),
                        switch_info: *switch_info,
                        ports: Arc::clone(ports),
                        table,
                    })
                }
                None => {
                    fresh.push(i);
                    Arc::new(node_record(src, n, table))
                }
            }
        })
        .collect();
    let sm = SmPort { guid: src.port_guid, lid: src.subnet.local_lid() };
    // A record shared, or the last one's with its table alone changed, has the last one's
    // index keys (node, SwitchInfo, ports): the indexes compare the fresh ones only. Records
    // are taken from `same_books` only: from another `prev`, every one is fresh.
    let fresh = same_books.is_some().then_some(fresh.as_slice());
    let mut snap = Snapshot::with_shared(src.subnet_prefix, src.lmc, src.subnet_timeout, nodes, sm, prev, fresh);
    snap.pkeys_revision = Some(src.partitions.revision());
    snap.subnet_mark = mark;
    snap.nodes_compared = changed.map_or(src.subnet.nodes.len(), |c| c.count());
    src.engine.clone_into(&mut snap.routing_engine);
    snap.qos = src.qos.map(|p| std::sync::Arc::new(p.clone()));
    src.partitions.resolved().clone_into(&mut snap.partitions);
    snap.allow_both_pkeys = src.allow_both_pkeys;
    snap.layers = src.layers.map(|(switches, layers)| {
        let mut row = vec![u32::MAX; src.subnet.nodes.len()];
        for (r, &n) in switches.iter().enumerate() {
            if let (Some(slot), Ok(r)) = (row.get_mut(n), u32::try_from(r)) {
                *slot = r;
            }
        }
        std::sync::Arc::new(SnapLayers { layers: std::sync::Arc::clone(layers), row })
    });
    snap
}

/// The snapshot record of subnet node `n`, with `table` (the forwarding table the SM holds
/// for a switch).
fn node_record(src: &Sources<'_>, n: &Node, table: Option<Arc<ibsm_routing::Lft>>) -> SnapNode {
    let switch = n.is_switch();
    let mut enforcing =
        if switch { src.partitions.enforcing_tables(n.info.node_guid) } else { Vec::new() }.into_iter().peekable();
    let ports: Vec<SnapPort> = n
        .ports
        .iter()
        .enumerate()
        .map(|(i, r)| SnapPort {
            pkeys: if switch && i > 0 {
                enforcing.next_if(|(p, _)| *p == i).map(|(_, t)| t).unwrap_or_default()
            } else {
                r.guid
                    .or(switch.then_some(n.info.port_guid))
                    .filter(|_| r.lid != ibsm_mad::Lid::UNASSIGNED)
                    // The table as laid out on the port (holes included), for ports
                    // whose table is in force (fail closed otherwise).
                    .and_then(|g| src.partitions.written_table(g))
                    .unwrap_or_default()
            },
            info: r.info,
            guid: port_guid(n, r),
            lid: r.lid,
            remote: remote(r),
        })
        .collect();
    SnapNode { info: n.info, desc: n.desc.clone(), switch_info: n.switch_info, ports: Arc::new(ports), table }
}

/// The GUID a snapshot port shows: its own, a switch's port GUID on every port, 0 if unknown.
fn port_guid(n: &Node, r: &PortRecord) -> Guid {
    r.guid.unwrap_or(if n.is_switch() { n.info.port_guid } else { Guid(0) })
}

/// The far end a snapshot port shows: the port cabled to it while the link is up.
fn remote(r: &PortRecord) -> Option<PortAt> {
    r.remote.filter(|_| r.is_linked()).and_then(|(node, PortNum(p))| u32::try_from(node).ok().map(|node| (node, p)))
}

/// Whether the forwarding tables are the same `Arc` (or both absent).
fn same_table(a: Option<&Arc<ibsm_routing::Lft>>, b: Option<&Arc<ibsm_routing::Lft>>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        _ => false,
    }
}

/// Whether [`node_record`] of `n` would come out as `old`, the forwarding table and the
/// P_Key tables aside (the latter are the same while the partition books are: the caller's
/// check). The P_Key tables of a port depend on the books and on what is compared here: the
/// node's GUID and type, the port's GUID and whether it has a LID.
fn unchanged(old: &SnapNode, n: &Node) -> bool {
    old.info == n.info
        && old.switch_info == n.switch_info
        && old.desc == n.desc
        && old.ports.len() == n.ports.len()
        && old
            .ports
            .iter()
            .zip(&n.ports)
            .all(|(o, r)| o.lid == r.lid && o.remote == remote(r) && o.guid == port_guid(n, r) && o.info == r.info)
}

impl Sa {
    /// Tells subscribers which ports came into service (64) or went out of it (65) between the
    /// `old` snapshot and the `new` one, and ends the subscriptions of ports that are gone.
    pub(super) fn announce_changes(&mut self, old: Option<&Snapshot>, new: &Snapshot, now: u64) {
        let Some(old) = old else { return };
        if new.shares_index_with(old) {
            // The same end ports with the same GUIDs: none came or went.
            self.state.informs.retain_present(new);
            return;
        }
        let sm_gid = Gid { prefix: new.subnet_prefix, guid: new.sm.guid };
        let lid_of = |s: &Snapshot, g: Guid| s.by_guid(g).and_then(|at| s.port(at)).map_or(ibsm_mad::Lid(0), |p| p.lid);
        // The end ports of one and not the other, from the GUID indexes (no sets built).
        let mut changes: Vec<(bool, Guid, ibsm_mad::Lid)> = new
            .end_port_guids()
            .filter(|&g| old.by_guid(g).is_none())
            .map(|g| (true, g, lid_of(new, g)))
            .chain(old.end_port_guids().filter(|&g| new.by_guid(g).is_none()).map(|g| (false, g, lid_of(old, g))))
            .collect();
        changes.sort_unstable();
        for (in_service, guid, lid) in changes {
            let gid = Gid { prefix: new.subnet_prefix, guid };
            if let Some(n) = crate::sa::inform::gid_notice(in_service, gid, new.sm.lid, sm_gid) {
                // Heard by those who share a partition with the port, as it is (64) or was (65).
                let s = if in_service { new } else { old };
                let about = crate::sa::inform::Audience::Port(s.by_guid(guid));
                self.state.informs.notify(s, &n, lid, about, now);
            }
        }
        self.state.informs.retain_present(new);
    }

    /// Tells subscribers which multicast groups were created (66) or deleted (67) since the last
    /// call, at `now`.
    /// (An associated function on the SA's state alone, so that a caller may hold the
    /// snapshot borrowed from the `Sa` meanwhile.)
    pub(super) fn announce_groups(state: &mut SaState, snap: &Snapshot, now: u64) {
        let sm_gid = Gid { prefix: snap.subnet_prefix, guid: snap.sm.guid };
        for (created, mgid, pkey) in state.mcast.take_events() {
            if let Some(n) = crate::sa::inform::group_notice(created, mgid, snap.sm.lid, sm_gid) {
                let about = crate::sa::inform::Audience::Partition(pkey);
                state.informs.notify(snap, &n, snap.sm.lid, about, now);
            }
        }
    }
}
