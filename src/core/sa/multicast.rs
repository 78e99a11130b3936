//! Multicast forwarding: the MulticastForwardingTable blocks the switches need for the SA's
//! groups, and their programming as an operation of its own beside sweeps.
//!
//! Owns the tree computation ([`tables`]: for each MLID with two member ports or more (the
//! groups sharing it together; OpenSM builds no tree for one either), a tree over the switches from a root switch central to the members ([`root_of`], OpenSM's
//! rule: the least hops to the farthest member), breadth-first over the links discovery found; a switch's mask for the group's MLID
//! holds the ports toward members that receive and the tree links that connect every member,
//! senders included) and what the SM believes each switch holds, so that only blocks that
//! change are written ([`Sa::multicast_sets`]: the Sets, as values for the coordinator to
//! queue). Programming runs between sweeps (node indexes are stable then: the coordinator's
//! call); its SMPs belong to [`Op::Multicast`], so a sweep starting meanwhile is not held up by
//! them.
//!
//! A switch reporting MulticastFDBCap 0 forwards no multicast: as in OpenSM it is in no tree
//! (the trees go around it; members behind it are not reached) and is sent no MFT block and no
//! MulticastFDBTop, so nothing is refused and no repair follows.
//!
//! SwitchInfo.MulticastFDBTop ([`mft_top`]) is programmed as OpenSM does, on the switches whose
//! port 0 advertises IsMulticastFDBTopSupported: the last MLID of the highest MFT block that
//! holds an entry, or 0xBFFF (below the multicast range: no entry) when none does; switches
//! that do not advertise it (ibsim's among them) keep what they report.

use std::collections::{BTreeMap, HashMap, VecDeque};

use ibsm_mad::attrs::{CapabilityMask, MulticastForwardingTable, SwitchInfo};
use ibsm_mad::records::JoinState;
use ibsm_mad::{Guid, Lid};

use super::Sa;
use crate::core::state::{Node, Subnet};
use crate::core::transactions::{Op, Req, Request};
use crate::sa::Snapshot;

/// Blocks of one switch's MFT: (block, position) to table.
pub(crate) type Blocks = BTreeMap<(u16, u8), MulticastForwardingTable>;

/// The MFT blocks every switch needs (by snapshot node index) for `groups`: each an MLID and
/// its members with their JoinState. Groups that share an MLID (consolidated solicited-node
/// groups) share one tree over all their members.
pub(crate) fn tables<'a>(
    snap: &Snapshot,
    groups: impl Iterator<Item = (Lid, &'a BTreeMap<Guid, JoinState>)>,
) -> HashMap<u32, Blocks> {
    let mut by_mlid: BTreeMap<Lid, BTreeMap<Guid, JoinState>> = BTreeMap::new();
    for (mlid, members) in groups {
        let all = by_mlid.entry(mlid).or_default();
        for (&guid, &state) in members {
            let s = all.entry(guid).or_default();
            *s = s.union(state);
        }
    }
    let mut out: HashMap<u32, Blocks> = HashMap::new();
    // An MLID with fewer than two member ports needs no tree (a member's own packets reach it
    // through its HCA, and nobody else has joined), as in OpenSM: its entries are cleared.
    for (mlid, members) in by_mlid.iter().filter(|(_, m)| m.len() >= 2) {
        let Some((block, entry)) = MulticastForwardingTable::locate(*mlid) else { continue };
        let attach = attachments(snap, members);
        let Some(root) = root_of(snap, &attach) else { continue };
        let parent = tree(snap, root);
        let mut ports: HashMap<u32, Vec<u8>> = HashMap::new();
        let set = |s: u32, p: u8, ports: &mut HashMap<u32, Vec<u8>>| {
            let v = ports.entry(s).or_default();
            if !v.contains(&p) {
                v.push(p);
            }
        };
        for &(s, p, receives) in &attach {
            if receives {
                set(s, p, &mut ports);
            }
            let mut c = s;
            while c != root {
                let Some(&(par, up, down)) = parent.get(&c) else { break };
                if ports.get(&c).is_some_and(|v| v.contains(&up)) {
                    break;
                }
                set(c, up, &mut ports);
                set(par, down, &mut ports);
                c = par;
            }
        }
        for (s, list) in ports {
            let blocks = out.entry(s).or_default();
            for p in list {
                let (position, bit) = (p / 16, p % 16);
                let t = blocks.entry((block, position)).or_default();
                t.masks[entry] = t.masks[entry].with(bit);
            }
        }
    }
    out
}

/// Whether snapshot node `n` is a switch that forwards multicast: not one reporting
/// MulticastFDBCap 0 (OpenSM's `osm_switch_supports_mcast`). Such a switch is in no tree, is
/// sent no MFT and no MulticastFDBTop, and the members behind it are not reached.
fn forwards_multicast(snap: &Snapshot, n: u32) -> bool {
    snap.node(n).is_some_and(|node| node.is_switch() && node.switch_info.is_none_or(|si| si.multicast_fdb_cap != 0))
}

/// Where each member attaches: (switch, port on it, receives): port 0 of a member switch, the
/// switch port facing a member CA; only switches that forward multicast.
pub(crate) fn attachments(snap: &Snapshot, members: &BTreeMap<Guid, JoinState>) -> Vec<(u32, u8, bool)> {
    let mut attach = Vec::new();
    for (&guid, &state) in members {
        let receives = state.0 & (JoinState::FULL_MEMBER.0 | JoinState::NON_MEMBER.0) != 0;
        let Some((n, p)) = snap.by_guid(guid) else { continue };
        let Some(node) = snap.node(n) else { continue };
        if node.is_switch() {
            if forwards_multicast(snap, n) {
                attach.push((n, 0, receives));
            }
        } else if let Some((s, q)) = snap.port((n, p)).and_then(|r| r.remote)
            && forwards_multicast(snap, s)
        {
            attach.push((s, q, receives));
        }
    }
    attach
}

/// The root of a group's tree, as OpenSM chooses it: among the switches that support
/// multicast (MulticastFDBCap not 0), the one whose farthest member is nearest (hops to a
/// member switch, one more to a member CA), the lowest node GUID among equals. `None` without
/// members.
pub(crate) fn root_of(snap: &Snapshot, attach: &[(u32, u8, bool)]) -> Option<u32> {
    // Member switches, and whether a CA hangs from each (one more hop).
    let mut ends: BTreeMap<u32, bool> = BTreeMap::new();
    for &(s, p, _) in attach {
        *ends.entry(s).or_default() |= p != 0;
    }
    let dists: Vec<(HashMap<u32, u32>, bool)> = ends.iter().map(|(&s, &ca)| (hops_from(snap, s), ca)).collect();
    let mut best: Option<(u32, Guid, u32)> = None;
    for (n, node) in snap.nodes.iter().enumerate() {
        let Ok(n) = u32::try_from(n) else { break };
        if !forwards_multicast(snap, n) {
            continue;
        }
        let mut far = 0;
        let mut reached = true;
        for (d, ca) in &dists {
            let Some(&h) = d.get(&n) else {
                reached = false;
                break;
            };
            far = far.max(h + u32::from(*ca));
        }
        let key = (far, node.info.node_guid, n);
        if reached && best.is_none_or(|b| (key.0, key.1) < (b.0, b.1)) {
            best = Some(key);
        }
    }
    best.map(|b| b.2).or_else(|| ends.keys().next().copied())
}

/// Hops from switch `from` to every switch it reaches (over links between switches that
/// forward multicast).
fn hops_from(snap: &Snapshot, from: u32) -> HashMap<u32, u32> {
    let mut dist = HashMap::from([(from, 0)]);
    let mut q = VecDeque::from([from]);
    while let Some(s) = q.pop_front() {
        let Some(node) = snap.node(s) else { continue };
        let d = dist.get(&s).copied().unwrap_or(0);
        for port in node.ports.iter().skip(1) {
            let Some((n, _)) = port.remote else { continue };
            if forwards_multicast(snap, n) && !dist.contains_key(&n) {
                dist.insert(n, d + 1);
                q.push_back(n);
            }
        }
    }
    dist
}

/// SwitchInfo.MulticastFDBTop for a switch holding `held`: the last MLID of the highest block
/// with an entry, 0xBFFF when no block has one.
pub(crate) fn mft_top(held: Option<&Blocks>) -> Lid {
    let top_block = held
        .into_iter()
        .flatten()
        .filter(|(_, t)| t.masks.iter().any(|m| m.0 != 0))
        .map(|(&(block, _), _)| block)
        .max();
    match top_block {
        None => Lid(0xbfff),
        Some(b) => Lid(0xc000u16.saturating_add(b.saturating_add(1).saturating_mul(32)).saturating_sub(1)),
    }
}

/// Whether switch `n` honours SwitchInfo.MulticastFDBTop (its port 0 says so).
pub(crate) fn honours_mft_top(n: &Node) -> bool {
    n.ports
        .first()
        .and_then(|p| p.info)
        .is_some_and(|i| i.capability_mask.contains(CapabilityMask::IS_MULTICAST_FDB_TOP_SUPPORTED))
}

/// Breadth-first tree over the switches that forward multicast from `root`: for each other
/// switch reached, its parent, the port toward the parent, and the parent's port toward it.
fn tree(snap: &Snapshot, root: u32) -> HashMap<u32, (u32, u8, u8)> {
    let mut parent = HashMap::new();
    let mut seen = std::collections::HashSet::from([root]);
    let mut q = VecDeque::from([root]);
    while let Some(s) = q.pop_front() {
        let Some(node) = snap.node(s) else { continue };
        for (p, port) in node.ports.iter().enumerate().skip(1) {
            let Some((n, np)) = port.remote else { continue };
            if !forwards_multicast(snap, n) || !seen.insert(n) {
                continue;
            }
            let Ok(p) = u8::try_from(p) else { continue };
            parent.insert(n, (s, np, p));
            q.push_back(n);
        }
    }
    parent
}

impl Sa {
    /// The Sets that make the switches of `subnet` hold the MFT blocks the SA's groups need,
    /// where they differ from what this SM believes they hold (and the MulticastFDBTop that
    /// follows). Only between sweeps (the coordinator's call); a sweep's end asks again. The
    /// blocks count as held from now on: a failed write forgets them ([`Sa::mft_failed`]).
    pub(crate) fn multicast_sets(&mut self, subnet: &Subnet) -> Vec<Request> {
        let mut sets = Vec::new();
        let Some(snap) = self.snapshot.as_deref() else { return sets };
        let want = tables(snap, self.state.mcast.iter().map(|g| (g.params.mlid, &g.members)));
        let empty = Blocks::new();
        for (n, node) in snap.nodes.iter().enumerate() {
            let Ok(idx) = u32::try_from(n) else { break };
            if !forwards_multicast(snap, idx) {
                continue;
            }
            let guid = node.info.node_guid;
            let Some(path) = subnet.nodes.get(n).filter(|s| s.info.node_guid == guid).map(|s| s.path) else {
                continue;
            };
            let wanted = want.get(&idx).unwrap_or(&empty);
            let held = self.state.mfts.entry(guid).or_default();
            let keys: Vec<(u16, u8)> = wanted.keys().chain(held.keys()).copied().collect();
            for key in keys {
                let w = wanted.get(&key).copied().unwrap_or_default();
                if held.get(&key) == Some(&w) {
                    continue;
                }
                // Optimistic: a failed write forgets the block again.
                held.insert(key, w);
                sets.push(Request {
                    path,
                    req: Req::SetMft { switch: guid, block: key.0, position: key.1, table: Box::new(w) },
                    op: Op::Multicast,
                });
            }
            // The top follows the blocks in use, on switches that honour it; PortStateChange
            // is left alone (writing 1 would clear it).
            let top = mft_top(Some(held));
            if let Some(sn) = subnet.nodes.get(n)
                && honours_mft_top(sn)
                && let Some(si) = sn.switch_info
                && si.multicast_fdb_top != top
            {
                let info = SwitchInfo { multicast_fdb_top: top, port_state_change: false, ..si };
                sets.push(Request { path, req: Req::SetSwitchInfo { node: n, info }, op: Op::Multicast });
            }
        }
        sets
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibsm_mad::attrs::PortMask;

    #[test]
    fn the_top_is_the_end_of_the_highest_block_with_an_entry() {
        assert_eq!(mft_top(None), Lid(0xbfff));
        let mut held = Blocks::new();
        held.insert((3, 0), MulticastForwardingTable::default());
        assert_eq!(mft_top(Some(&held)), Lid(0xbfff), "an empty block is not in use");
        let mut t = MulticastForwardingTable::default();
        t.masks[5] = PortMask(0).with(2);
        held.insert((1, 1), t);
        assert_eq!(mft_top(Some(&held)), Lid(0xc03f), "block 1 ends at 0xc03f");
        held.insert((0, 0), t);
        assert_eq!(mft_top(Some(&held)), Lid(0xc03f));
    }
}
