//! The SA's view of the fabric: an immutable snapshot of the last completed sweep, with the
//! indexes every lookup needs built once.
//!
//! Owns: [`Snapshot`] (nodes with the NodeInfo, NodeDescription, SwitchInfo and per-port
//! PortInfo the SM last read or wrote, cables, LIDs, the forwarding tables the switches hold),
//! the LID and port-GUID indexes, and the walk of a LID-routed path through the forwarding
//! tables ([`Snapshot::walk`], over the compact tables of [`super::paths`], which it holds),
//! and the layer (SL) of each path of a layered route
//! ([`Snapshot::path_layer`]). Built by the core when a sweep completes and shared behind an
//! `Arc`, so a query never waits for a sweep and never sees half of one. Knows nothing of MADs.
//!
//! Each node record and the indexes are behind an `Arc` of their own: the next snapshot is
//! made from this one by sharing what did not change ([`Snapshot::with_shared`]), so a sweep
//! that changed a few ports copies only their nodes, and a reader keeps the snapshot it holds
//! whole (a record is never changed in place while shared: [`SnapNodes`] copies it first).

use std::collections::HashMap;
use std::sync::Arc;

use ibsm_mad::records::Rate;
use ibsm_mad::{Guid, Lid, PKey, PortNum};

pub use super::nodes::{
    MAX_HOPS, NodesIter, NodesIterMut, PortAt, SnapNode, SnapNodes, SnapPort, Walk, link_mbps, min_mtu,
};
use super::paths::{LazyPaths, Paths, lowest_shared, talks};
use crate::fabric_view::{DescNode, DescPort, FabricDesc, PortRef};

impl FromIterator<Arc<SnapNode>> for SnapNodes {
    fn from_iter<I: IntoIterator<Item = Arc<SnapNode>>>(iter: I) -> SnapNodes {
        SnapNodes(iter.into_iter().collect())
    }
}

/// The SM's own identity, as SMInfo reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SmPort {
    /// The SM's port GUID.
    pub guid: Guid,
    /// The SM's base LID.
    pub lid: Lid,
}

/// An immutable view of the fabric for the SA.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Subnet prefix of every port GID.
    pub subnet_prefix: u64,
    /// LMC of every end port.
    pub lmc: u8,
    /// Nodes in discovery order, each shared with the snapshots before and after it where it
    /// did not change.
    pub nodes: SnapNodes,
    /// The SM's own port.
    pub sm: SmPort,
    /// The PacketLifeTime of every path between two ports and of every multicast group: the
    /// SubnetTimeout the SM programs (as OpenSM gives its `subnet_timeout`, 0x12 by default).
    pub packet_life: u8,
    /// The highest rate code path records and new multicast groups may carry (OpenSM's
    /// `max_rate_enum`; `None`: any): a faster rate is reduced with [`ibsm_mad::records::Rate::capped`].
    pub max_rate: Option<u8>,
    /// The routing engine that computed the forwarding tables (empty: none).
    pub routing_engine: String,
    /// The QoS policy path records follow (None: QoS off, every path on SL 0).
    pub qos: Option<std::sync::Arc<ibsm_qos::QosPolicy>>,
    /// The layer (SL) of every path when a layered engine (`dfsssp`) routed on more than one:
    /// the layers and each node's row in them (switches only). With QoS off a path's SL is
    /// its layer ([`Snapshot::path_layer`]).
    pub layers: Option<std::sync::Arc<SnapLayers>>,
    /// QoS classes times routing layers, when both are in force: the classes and the layers
    /// the SL2VL tables were written for. A path's SL is then its class's SL for its layer
    /// ([`ibsm_qos::Classes::sl`]; no layer: layer 0).
    pub qos_layering: Option<std::sync::Arc<(ibsm_qos::Classes, u8)>>,
    /// The partitions in force (name, P_Key base, `sl=`): QoS port groups by partition name,
    /// and the SL of a path under a partition's P_Key when QoS is on and no QoS level applies.
    pub partitions: Vec<ibsm_partitions::ResolvedPartition>,
    /// `allow-both-pkeys` is in force: a port may hold a partition's full and limited key, and
    /// a path's P_Key is chosen as OpenSM chooses it then ([`Snapshot::shared_pkey`]).
    pub allow_both_pkeys: bool,
    /// The revision of the SM's partition books the P_Key tables were copied from (`None`:
    /// not copied from them): the next snapshot shares a node record only from a snapshot of
    /// the same revision.
    pub pkeys_revision: Option<u64>,
    /// The mark the SM's subnet was settled with when this snapshot was taken of it (0: none):
    /// the next snapshot compares only the nodes the subnet marked changed since then.
    pub subnet_mark: u64,
    /// How many node records were compared with (or built from) the subnet's nodes when this
    /// snapshot was taken: all of them without the last snapshot's mark in the subnet's book,
    /// else those marked changed since.
    pub nodes_compared: usize,
    /// The indexes over the nodes, shared with the next snapshot when no node they read
    /// changed.
    index: Arc<Index>,
    /// LIDs some switch has no route for, worked out on first use.
    unrouted: std::sync::OnceLock<Unrouted>,
    /// The compact tables path lookups read, built on first use and shared with the next
    /// snapshot while no node record changes.
    paths: LazyPaths,
}

/// The indexes of a snapshot: what they read of each node is [`IndexKey`].
#[derive(Debug, Clone, Default)]
struct Index {
    /// For each LID, the end port owning it (index = LID).
    by_lid: Vec<Option<PortAt>>,
    /// Port GUID to end port.
    by_guid: HashMap<Guid, PortAt>,
    /// Node indexes in OpenSM's node order: the order of GetTable answers, as OpenSM lists
    /// records from its GUID-keyed node table, whose key is the GUID as it travels (big-endian)
    /// compared as a little-endian integer (so by the GUID's last byte first), so that an
    /// answer cut to one MAD holds the same records from both SMs.
    guid_order: Vec<u32>,
    /// The smallest MulticastFDBCap of the switches ([`Snapshot::mcast_fdb_cap`]).
    mcast_fdb_cap: Option<u16>,
    /// The LMC the LID index spans.
    lmc: u8,
}

impl Index {
    /// The indexes of `nodes` with LMC `lmc`.
    fn of(nodes: &SnapNodes, lmc: u8) -> Index {
        let span = 1usize << lmc.min(7);
        let mut by_lid: Vec<Option<PortAt>> = Vec::new();
        let mut by_guid = HashMap::with_capacity(nodes.len());
        for (n, node) in nodes.iter().enumerate() {
            let Ok(n) = u32::try_from(n) else { break };
            for p in node.end_ports() {
                let Some(port) = node.ports.get(usize::from(p)) else { continue };
                by_guid.insert(port.guid, (n, p));
                let base = usize::from(port.lid.0);
                if base == 0 {
                    continue;
                }
                let top = (base + span).min(usize::from(u16::MAX));
                if by_lid.len() < top {
                    by_lid.resize(top, None);
                }
                for slot in &mut by_lid[base..top] {
                    *slot = Some((n, p));
                }
            }
        }
        let mut guid_order: Vec<u32> = (0..u32::try_from(nodes.len()).unwrap_or(u32::MAX)).collect();
        guid_order.sort_by_key(|&n| nodes.get(n as usize).map(|x| x.info.node_guid.0.swap_bytes()));
        let mcast_fdb_cap = nodes
            .iter()
            .filter(|n| n.is_switch())
            .filter_map(|n| n.switch_info.map(|s| s.multicast_fdb_cap))
            .filter(|&c| c != 0)
            .min();
        Index { by_lid, by_guid, guid_order, mcast_fdb_cap, lmc }
    }
}

/// What the indexes read of a node: two nodes with equal keys at the same place give the same
/// indexes.
fn index_key(node: &SnapNode) -> (Guid, bool, Option<u16>, impl Iterator<Item = (u8, Guid, Lid)> + '_) {
    let cap = node.switch_info.map(|s| s.multicast_fdb_cap).filter(|_| node.is_switch());
    let ends = node.end_ports().filter_map(|p| node.ports.get(usize::from(p)).map(|r| (p, r.guid, r.lid)));
    (node.info.node_guid, node.is_switch(), cap, ends)
}

/// Whether `a` and `b` give the indexes the same entries (at the same node index).
fn same_index_key(a: &SnapNode, b: &SnapNode) -> bool {
    let (ga, sa, ca, ea) = index_key(a);
    let (gb, sb, cb, eb) = index_key(b);
    ga == gb && sa == sb && ca == cb && ea.eq(eb)
}

/// The layers of a layered route, as the snapshot keeps them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SnapLayers {
    /// The layer of each (switch row, destination LID).
    pub layers: std::sync::Arc<ibsm_routing::dfsssp::PathLayers>,
    /// Each node's switch row (`u32::MAX`: not a routed switch), by node index.
    pub row: Vec<u32>,
}

/// End-port LIDs that some switch's table leaves unrouted (a black hole: every node in a
/// snapshot was reached from the SM, so every switch should reach every LID).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Unrouted {
    /// Unrouted LIDs in all.
    pub total: usize,
    /// The first [`Unrouted::LISTED`] of them: (LID, switches without a route for it).
    pub lids: Vec<(Lid, usize)>,
}

impl Unrouted {
    /// How many LIDs are listed.
    pub const LISTED: usize = 64;

    /// One pass over every switch's table of `snap`, for every end-port LID.
    pub fn of(snap: &Snapshot) -> Unrouted {
        // One pass per switch over its table, with no branch on who owns a LID (a k=48 fabric
        // is 2,880 tables of 30,000 entries: this runs when `ibsm status` is first asked after
        // a sweep, on the SM's loop); the switch's own LIDs (routed to port 0) are taken back
        // after.
        let owned: Vec<bool> = snap.index.by_lid.iter().map(Option::is_some).collect();
        let mut missing = vec![0usize; owned.len()];
        for (n, node) in snap.nodes.iter().enumerate() {
            if !node.is_switch() {
                continue;
            }
            let lft = node.lft();
            let routed = lft.len().min(owned.len());
            // Block by block (a table a repair made shares the blocks it did not change).
            for (k, block) in lft.blocks().enumerate() {
                let start = k * ibsm_routing::Lft::BLOCK;
                let end = (start + block.len()).min(routed);
                let (Some(m), Some(o)) = (missing.get_mut(start..end), owned.get(start..end)) else { break };
                for ((m, &o), &p) in m.iter_mut().zip(o).zip(block) {
                    *m += usize::from(o && (p.0 == 0 || p.0 == 0xff));
                }
            }
            for (m, &o) in missing[routed..].iter_mut().zip(&owned[routed..]) {
                *m += usize::from(o);
            }
            let Ok(n) = u32::try_from(n) else { continue };
            for p in node.end_ports() {
                let Some(port) = node.ports.get(usize::from(p)) else { continue };
                let span = 1usize << snap.lmc.min(7);
                let base = usize::from(port.lid.0);
                let top = (base + span).min(owned.len());
                for (lid, m) in missing.iter_mut().enumerate().take(top).skip(base) {
                    // Its own LID goes to port 0: not a missing route.
                    if snap.index.by_lid[lid].is_some_and(|(on, _)| on == n) && lid != 0 {
                        let p = lft.entry(lid);
                        *m -= usize::from(p.is_none_or(|p| p.0 == 0 || p.0 == 0xff));
                    }
                }
            }
        }
        let mut out = Unrouted::default();
        for (lid, &count) in missing.iter().enumerate().filter(|(_, c)| **c > 0) {
            out.total += 1;
            if out.lids.len() < Unrouted::LISTED {
                out.lids.push((Lid(u16::try_from(lid).unwrap_or(u16::MAX)), count));
            }
        }
        out
    }
}

/// The P_Key of a path from a port holding `a` to one holding `b` under `allow-both-pkeys`,
/// chosen as OpenSM 3.3.23 chooses it (`osm_physp_find_common_pkey`), where a table is keyed
/// by the whole 16-bit key: the two sets of keys in ascending order (limited keys before full
/// ones), walked side by side, the first pair of the same partition with one of them full
/// gives `a`'s key (after an unequal pair the smaller side moves on, after an equal one both);
/// failing that, the same walk over `a`'s full keys against `b`'s limited ones, then `a`'s
/// limited against `b`'s full. So a partition both hold fully wins over one shared
/// full-to-limited only when its keys come first in that order.
pub fn common_pkey_both(a: &[PKey], b: &[PKey]) -> Option<PKey> {
    let sorted = |t: &[PKey], keep: &dyn Fn(PKey) -> bool| {
        let mut v: Vec<PKey> = t.iter().copied().filter(|k| k.0 & 0x7fff != 0 && keep(*k)).collect();
        v.sort_by_key(|k| k.0);
        v.dedup();
        v
    };
    let walk = |x: &[PKey], y: &[PKey]| {
        let (mut i, mut j) = (0, 0);
        while let (Some(&p), Some(&q)) = (x.get(i), y.get(j)) {
            if p.base() == q.base() && (p.is_full() || q.is_full()) {
                return Some(p);
            }
            match p.0.cmp(&q.0) {
                std::cmp::Ordering::Equal => (i, j) = (i + 1, j + 1),
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
            }
        }
        None
    };
    let (full, limited): (&dyn Fn(PKey) -> bool, &dyn Fn(PKey) -> bool) = (&|k| k.is_full(), &|k| !k.is_full());
    walk(&sorted(a, &|_| true), &sorted(b, &|_| true))
        .or_else(|| walk(&sorted(a, full), &sorted(b, limited)))
        .or_else(|| walk(&sorted(a, limited), &sorted(b, full)))
}

impl Snapshot {
    /// A snapshot of `nodes`, indexes built. `packet_life` is the PacketLifeTime of paths (the SubnetTimeout).
    pub fn new(subnet_prefix: u64, lmc: u8, packet_life: u8, nodes: Vec<SnapNode>, sm: SmPort) -> Snapshot {
        Snapshot::with_shared(subnet_prefix, lmc, packet_life, nodes.into_iter().collect(), sm, None, None)
    }

    /// A snapshot of `nodes` (records that may be shared with `prev`, the snapshot before it).
    /// The indexes are `prev`'s, shared, when no node they read differs from `prev`'s at the
    /// same place (a node shared with `prev` is not looked at), and built anew otherwise.
    /// `fresh`, when given, lists every record of `nodes`
    /// that may read differently from `prev`'s at the same place for the indexes: each other
    /// record is `prev`'s own (the same `Arc`) or reads as it does there (the same node GUID
    /// and type, SwitchInfo and end ports: a record whose forwarding table alone changed), so
    /// only the listed ones are compared to share `prev`'s indexes (after an edge cable cut at
    /// k = 48, the cable's two ends instead of the 1,155 switches whose tables changed). The
    /// caller vouches for the list; with `None` every record not `prev`'s own is compared.
    pub fn with_shared(
        subnet_prefix: u64,
        lmc: u8,
        packet_life: u8,
        nodes: SnapNodes,
        sm: SmPort,
        prev: Option<&Snapshot>,
        fresh: Option<&[usize]>,
    ) -> Snapshot {
        // The path tables read the node records only: shared while every record is.
        let same_nodes = prev.is_some_and(|prev| {
            prev.nodes.len() == nodes.len() && prev.nodes.0.iter().zip(&nodes.0).all(|(a, b)| Arc::ptr_eq(a, b))
        });
        let paths = match prev {
            Some(prev) if same_nodes => LazyPaths(Arc::clone(&prev.paths.0)),
            _ => LazyPaths::default(),
        };
        let index = match prev {
            Some(prev)
                if prev.index.lmc == lmc
                    && prev.nodes.len() == nodes.len()
                    && match fresh {
                        Some(fresh) => fresh.iter().all(|&i| match (prev.nodes.0.get(i), nodes.0.get(i)) {
                            (Some(a), Some(b)) => Arc::ptr_eq(a, b) || same_index_key(a, b),
                            _ => false,
                        }),
                        None => {
                            prev.nodes.0.iter().zip(&nodes.0).all(|(a, b)| Arc::ptr_eq(a, b) || same_index_key(a, b))
                        }
                    } =>
            {
                Arc::clone(&prev.index)
            }
            _ => Arc::new(Index::of(&nodes, lmc)),
        };
        Snapshot {
            subnet_prefix,
            lmc,
            nodes,
            sm,
            packet_life,
            max_rate: None,
            routing_engine: String::new(),
            qos: None,
            layers: None,
            qos_layering: None,
            partitions: Vec::new(),
            allow_both_pkeys: false,
            pkeys_revision: None,
            subnet_mark: 0,
            nodes_compared: 0,
            index,
            unrouted: std::sync::OnceLock::new(),
            paths,
        }
    }

    /// Whether this snapshot's indexes are `other`'s, shared: then both have the same end
    /// ports, with the same GUIDs and LIDs, at the same places.
    pub fn shares_index_with(&self, other: &Snapshot) -> bool {
        Arc::ptr_eq(&self.index, &other.index)
    }

    /// The smallest MulticastFDBCap of the switches (a switch reporting 0 left out, as
    /// OpenSM), `None` when none reports one: what bounds the SA's pool of multicast LIDs.
    pub fn mcast_fdb_cap(&self) -> Option<u16> {
        self.index.mcast_fdb_cap
    }

    /// The P_Key base of the partition named `name` (a QoS `partition:` port group).
    pub fn partition_base(&self, name: &str) -> Option<u16> {
        self.partitions.iter().find(|p| p.name == name).map(|p| p.base)
    }

    /// The `sl=` of the partition whose base is `base`'s (0 when it has none).
    pub fn partition_sl(&self, base: u16) -> u8 {
        self.partitions.iter().find(|p| p.base == base & 0x7fff).and_then(|p| p.sl).unwrap_or(0)
    }

    /// End-port LIDs that some switch leaves unrouted ([`Unrouted::of`]), worked out once per
    /// snapshot, on the first call.
    pub fn unrouted(&self) -> &Unrouted {
        self.unrouted.get_or_init(|| Unrouted::of(self))
    }

    /// The compact tables path lookups read ([`Paths`]), built on the first call.
    pub fn paths(&self) -> &Paths {
        self.paths.0.get_or_init(|| Paths::of(&self.nodes, self.lmc))
    }

    /// Whether [`Snapshot::paths`] are built (by a call, or shared with the snapshot before).
    pub fn paths_ready(&self) -> bool {
        self.paths.0.get().is_some()
    }

    /// The port GUID of `at` (read from [`Snapshot::paths`]).
    pub fn port_guid(&self, at: PortAt) -> Option<Guid> {
        self.paths().guid(at)
    }

    /// The node at `n`.
    pub fn node(&self, n: u32) -> Option<&SnapNode> {
        self.nodes.get(n as usize)
    }

    /// The port at `at`.
    pub fn port(&self, at: PortAt) -> Option<&SnapPort> {
        self.node(at.0)?.ports.get(usize::from(at.1))
    }

    /// The end port owning `lid` (any LID of its LMC range).
    pub fn by_lid(&self, lid: Lid) -> Option<PortAt> {
        self.index.by_lid.get(usize::from(lid.0)).copied().flatten()
    }

    /// The port GUIDs of the end ports, each once, in no order.
    pub fn end_port_guids(&self) -> impl Iterator<Item = Guid> + '_ {
        self.index.by_guid.keys().copied()
    }

    /// The end port with port GUID `guid`.
    pub fn by_guid(&self, guid: Guid) -> Option<PortAt> {
        self.index.by_guid.get(&guid).copied()
    }

    /// The LIDs `at` owns (its LMC range), empty for a port without a LID.
    pub fn lids_of(&self, at: PortAt) -> impl Iterator<Item = Lid> + use<> {
        let base = self.port(at).map_or(0, |p| p.lid.0);
        let span = if base == 0 { 0 } else { 1u32 << self.lmc.min(7) };
        (0..span).filter_map(move |i| u16::try_from(u32::from(base) + i).ok().map(Lid))
    }

    /// Node indexes in OpenSM's node order (see `guid_order`).
    pub fn nodes_in_guid_order(&self) -> impl Iterator<Item = u32> + '_ {
        self.index.guid_order.iter().copied()
    }

    /// The end ports in OpenSM's node order (see `guid_order`), then port number (every LID
    /// owner once), as OpenSM lists them.
    pub fn end_ports(&self) -> impl Iterator<Item = PortAt> + '_ {
        self.index
            .guid_order
            .iter()
            .filter_map(|&n| self.node(n).map(|node| (n, node)))
            .flat_map(|(n, node)| node.end_ports().map(move |p| (n, p)))
    }

    /// The fabric as the fabric-view builder's description (as `core::Subnet::describe` gives
    /// it for the live subnet): node `i` is [`Snapshot::nodes`]`[i]`; a switch lists port 0 and
    /// its external ports, a CA the ports whose GUID is known; a port has a peer where its link
    /// was up.
    pub fn describe(&self) -> FabricDesc<'_> {
        let nodes = self
            .nodes
            .iter()
            .map(|n| {
                let switch = n.is_switch();
                let ports = n
                    .ports
                    .iter()
                    .enumerate()
                    .filter(|&(p, r)| if switch { true } else { p > 0 && r.guid != Guid(0) && r.info.is_some() })
                    .filter_map(|(p, r)| {
                        let num = PortNum(u8::try_from(p).ok()?);
                        let peer = r.remote.filter(|_| p > 0).and_then(|(node, port)| {
                            Some(PortRef { node: usize::try_from(node).ok()?, port: PortNum(port) })
                        });
                        Some(DescPort { num, guid: r.guid, lid: r.lid, peer })
                    })
                    .collect();
                DescNode {
                    kind: n.info.node_type,
                    guid: n.info.node_guid,
                    name: &n.desc,
                    num_ports: n.info.num_ports,
                    ports,
                }
            })
            .collect();
        FabricDesc { nodes }
    }

    /// Whether end port `a` (`None`: unknown, never) and end port `b` can talk: a partition in
    /// common where one of the two is a full member.
    pub fn can_talk(&self, a: Option<PortAt>, b: PortAt) -> bool {
        let paths = self.paths();
        let (Some(ta), Some(tb)) = (a.and_then(|a| paths.table_of(a)), paths.table_of(b)) else { return false };
        if ta == tb {
            // The same table: worked out once for it.
            return paths.self_share(ta).is_some_and(|s| s.talk);
        }
        let (Some(ka), Some(kb)) = (paths.table(ta), paths.table(tb)) else { return false };
        talks(ka, kb)
    }

    /// Whether a requester at `requester` may see the records of port `at` (any port: an end
    /// port, or a switch's external port), as OpenSM filters every record: its own port, a port
    /// it can talk to ([`Snapshot::can_talk`]), or a switch's external port that holds no
    /// P_Key table (one cabled to another switch: it enforces no partition, so nothing hides
    /// it). An end port whose table is empty is seen by nobody else (fail closed).
    pub fn visible_to(&self, requester: Option<PortAt>, at: PortAt) -> bool {
        if requester == Some(at) {
            return true;
        }
        let switch_port = at.1 > 0 && self.node(at.0).is_some_and(SnapNode::is_switch);
        if switch_port && self.port(at).is_some_and(|p| p.pkeys.is_empty()) {
            return true;
        }
        self.can_talk(requester, at)
    }

    /// Whether end ports `a` and `b` share a partition as OpenSM's path rule asks it of each
    /// pair: the same port, or [`Snapshot::can_talk`].
    fn shares(&self, a: PortAt, b: PortAt) -> bool {
        a == b || self.can_talk(Some(a), b)
    }

    /// The P_Key of a path between end ports `a` and `b` asked by the port at `by`, by
    /// OpenSM's rule: the requester shares a partition with `a` and, separately, with `b`
    /// ([`Snapshot::can_talk`]: a common partition with one of the two a full member); the
    /// record is under a partition that `a` and `b` share with one of them a full member, or
    /// `want` when that partition is shared so (a port holding both keys of it counts as a
    /// full member). Without `want`: the one with the lowest P_Key base (`a`'s table entry);
    /// with `allow-both-pkeys`, the first match in OpenSM's order ([`common_pkey_both`]).
    /// `None` when any of this fails, or the requester is unknown. A port whose table is empty
    /// shares nothing (fail closed; OpenSM lets such a port pass).
    pub fn shared_pkey(&self, a: PortAt, b: PortAt, by: Option<PortAt>, want: Option<PKey>) -> Option<PKey> {
        let by = by?;
        let paths = self.paths();
        if want.is_none() && !self.allow_both_pkeys {
            // The two ends and the requester hold one same table (the common case): the
            // requester shares with each end exactly when two ports of that table can talk, and
            // the answer is the table's own, worked out once ([`super::paths::SelfShare`]). (When they cannot
            // talk, the table has no full member key and its `lowest` is `None` too.)
            let t = paths.table_of(a);
            if t.is_some() && t == paths.table_of(b) && t == paths.table_of(by) {
                return t.and_then(|t| paths.self_share(t)).and_then(|s| s.lowest);
            }
        }
        if !(self.shares(by, a) && self.shares(by, b)) {
            return None;
        }
        let (ka, kb) = (paths.pkeys(a)?, paths.pkeys(b)?);
        // A port's entry of a partition: the full key when it holds both.
        let find = |t: &[PKey], base: u16| {
            t.iter().copied().filter(|k| k.0 != 0 && k.base() == base).max_by_key(|k| k.is_full())
        };
        let pair = |k: PKey| find(kb, k.base()).is_some_and(|other| k.is_full() || other.is_full());
        match want {
            Some(w) => find(ka, w.base()).filter(|&k| pair(k)).map(|_| w),
            None if self.allow_both_pkeys => common_pkey_both(ka, kb),
            None => lowest_shared(ka, kb),
        }
    }

    /// The layer (SL) of the path from end port `src` to `dlid` in a layered route: that of
    /// the pair (the switch the path leaves from, `dlid`); `None` without layers.
    pub fn path_layer(&self, src: PortAt, dlid: Lid) -> Option<u8> {
        let l = self.layers.as_deref()?;
        let node = self.node(src.0)?;
        // A path leaves from the switch itself, or from the switch a CA port hangs off.
        let at = if node.is_switch() { src.0 } else { self.port(src)?.remote?.0 };
        let row = *l.row.get(at as usize)?;
        if row == u32::MAX {
            return None;
        }
        l.layers.layer(row as usize, dlid)
    }

    /// Follows the forwarding tables from end port `src` to `dlid`: the switches crossed, the
    /// smallest MTU and lowest rate on the way. `None` when a table has no route, a link is
    /// missing, or the walk loops.
    pub fn walk(&self, src: PortAt, dlid: Lid) -> Option<Walk> {
        let dest = self.by_lid(dlid)?;
        self.paths().walk(src, dest, dlid)
    }
}

/// The defined rate codes 2..=24 with their speeds, fastest first (made at compile time from
/// [`Rate::mbps`], so each speed is still written once, in `ibsm_mad`).
const RATES_FASTEST_FIRST: [(u32, u8); 23] = {
    let mut out = [(0u32, 0u8); 23];
    let mut code = 2u8;
    while code <= 24 {
        let mbps = match Rate::from_raw(code).mbps() {
            Some(m) => m,
            None => 0,
        };
        // Insertion: shift the slower ones right.
        let mut i = (code - 2) as usize;
        while i > 0 && out[i - 1].0 < mbps {
            out[i] = out[i - 1];
            i -= 1;
        }
        out[i] = (mbps, code);
        code += 1;
    }
    out
};

/// The rate code for `mbps`: the fastest defined rate not above it (2.5 Gb/s at least). Runs
/// for every PathRecord: a scan of a constant table, fastest first (a few steps for today's
/// links), not a search of every code.
pub fn rate_code(mbps: u32) -> Rate {
    let mut i = 0;
    while i < RATES_FASTEST_FIRST.len() {
        let (m, code) = RATES_FASTEST_FIRST[i];
        if m <= mbps {
            return Rate::from_raw(code);
        }
        i += 1;
    }
    Rate::from_raw(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_map_to_their_codes() {
        assert_eq!(rate_code(10_000).raw(), 3, "4x SDR");
        assert_eq!(rate_code(40_000).raw(), 7, "4x QDR");
        assert_eq!(rate_code(56_000).raw(), 12, "4x FDR");
        assert_eq!(rate_code(100_000).raw(), 16, "4x EDR");
        assert_eq!(rate_code(200_000).raw(), 17, "4x HDR");
        assert_eq!(rate_code(400_000).raw(), 21, "4x NDR");
        assert_eq!(rate_code(800_000).raw(), 23, "4x XDR");
        assert_eq!(rate_code(2_400_000).raw(), 24, "12x XDR: the fastest rate defined, 1200 Gb/s");
        assert_eq!(rate_code(1).raw(), 2, "floor");
        // Against a search of every code (the rule as first written), at each speed and
        // either side of it.
        let search = |mbps: u32| {
            (2..=24)
                .map(Rate::from_raw)
                .filter_map(|r| r.mbps().map(|m| (m, r)))
                .filter(|&(m, _)| m <= mbps)
                .max_by_key(|&(m, _)| m)
                .map_or(Rate::from_raw(2), |(_, r)| r)
        };
        for code in 0..=63u8 {
            let Some(m) = Rate::from_raw(code).mbps() else { continue };
            for mbps in [m - 1, m, m + 1, 0, u32::MAX] {
                assert_eq!(rate_code(mbps), search(mbps), "{mbps} Mb/s");
            }
        }
    }

    #[test]
    fn both_keys_allowed_the_path_p_key_is_opensms_first_match() {
        let k = |v: &[u16]| v.iter().map(|&x| PKey(x)).collect::<Vec<_>>();
        // Both keys of two partitions against the limited key of the first and both of the
        // second (the ring's hosts): the full pair of the second, not the full-to-limited first.
        let host = k(&[0xffff, 0x0a01, 0x8a01, 0x0a02, 0x8a02]);
        let h2 = k(&[0xffff, 0x0a01, 0x0a02, 0x8a02]);
        assert_eq!(common_pkey_both(&host, &h2), Some(PKey(0x8a02)));
        // A full-to-limited pair met first in the walk wins over a later full pair.
        assert_eq!(common_pkey_both(&k(&[0x8a01, 0x8a02]), &k(&[0x0a01, 0x8a02])), Some(PKey(0x8a01)));
        // Found only by the second walk (a's full keys against b's limited ones), then the third.
        assert_eq!(common_pkey_both(&k(&[0x0a01, 0x8a01]), &k(&[0x0a01])), Some(PKey(0x8a01)));
        assert_eq!(common_pkey_both(&k(&[0x0a01]), &k(&[0x0a01, 0x8a01])), Some(PKey(0x0a01)));
        // Limited to limited is no path; holes (0 and the invalid 0x8000) are skipped.
        assert_eq!(common_pkey_both(&k(&[0x0a01, 0, 0x8000]), &k(&[0x0a01, 0x8000])), None);
    }
}
