//! The compact tables a path lookup reads ([`Paths`]), so that a PathRecord touches as few
//! cache lines as it can.
//!
//! Owns: per node, where its ports start in the flat port table (also as a dense array of 4
//! bytes a node), whether it is a switch, and its forwarding table (the snapshot's `Arc`,
//! shared, not copied); per port, in one 32-byte record ([`Hop`]), the link a walk crosses
//! (the node and port at the other end and whether that node is a switch, the NeighborMTU,
//! MTUCap and link rate), whether the port's own node is a switch, and the port GUID and P_Key
//! table a record and the partition rule read (P_Key tables interned: ports with the same
//! table share one copy): a PathRecord's end port is one cache line, not a node's and a port's.
//! The walk through the forwarding tables over them ([`Paths::walk`]), whose part from each
//! switch it crosses on is kept per (switch, DLID) in a memo ([`Legs`]) that lives as long as
//! the tables: a PathRecord between two hosts whose source leaf has walked to that DLID before
//! reads one 8-byte slot instead of a forwarding table entry and a port per switch crossed, and
//! a walk that reaches a switch some earlier walk to that DLID crossed (on a fat tree, the
//! spine every pod's walks to the LID meet at) ends there ([`Trail`]).
//!
//! Why: the node records keep a port's PortInfo (over 100 bytes) next to its other fields, and
//! a node behind an `Arc` of its own; a walk through five switches of a k=48 fat tree read a
//! record's line for each egress port and each next node, besides the forwarding table entry,
//! all of them cache misses. Here a port is 32 bytes, the port table of the k = 48 tree (2,880
//! switches, 27,648 CAs) about 6 MiB. The tables are built from a snapshot's node records on first use
//! (`Snapshot::walk`, `Snapshot::shared_pkey`, `Snapshot::port_guid`) and say what the records
//! say: the walk over the records is kept in the tests as the judge of this one.

use std::collections::HashMap;
use std::sync::Arc;

use ibsm_mad::attrs::Mtu;
use ibsm_mad::{Guid, Lid, PKey};

use super::legs::{Leg, Legs};
use super::nodes::{MAX_HOPS, PortAt, SnapNodes, Walk, link_mbps, min_mtu};

/// No node at the other end of a port (no link, or a node the snapshot does not hold).
const NONE: u32 = u32::MAX;

/// What the tables hold of one node.
#[derive(Debug, Clone)]
struct NodeAt {
    /// Index of its port 0 in the port tables.
    first: u32,
    /// Its port count (the record's, `0..=NumPorts`).
    ports: u32,
    /// Whether it is a switch.
    switch: bool,
    /// A switch's forwarding table as the snapshot holds it.
    table: Option<Arc<ibsm_routing::Lft>>,
}

impl NodeAt {
    /// The egress port for `dlid` (`None`: beyond the table, or no table).
    fn egress(&self, dlid: Lid) -> Option<u8> {
        self.table.as_deref().and_then(|t| t.entry(usize::from(dlid.0))).map(|p| p.0)
    }
}

/// What a walk, a record and the partition rule read of a port: 32 bytes, aligned, so that
/// a PathRecord's end port is one cache line.
#[derive(Debug, Clone, Copy)]
#[repr(align(32))]
struct Hop {
    /// The port GUID.
    guid: Guid,
    /// Index of its P_Key table in [`Paths::pkeys`].
    pkeys: u32,
    /// The node at the other end ([`NONE`]: none).
    next: u32,
    /// The link's data rate in Mb/s ([`link_mbps`]; 0: unknown, or no PortInfo).
    rate: u32,
    /// NeighborMTU (egress ports, a CA port as a path's source).
    neighbor: Mtu,
    /// MTUCap (a switch as a path's source or destination).
    cap: Mtu,
    /// The port number at the other end.
    in_port: u8,
    /// Whether the port's PortInfo is known (else a walk cannot leave by it).
    info: bool,
    /// Whether the node at the other end is a switch.
    next_switch: bool,
    /// Whether the port's own node is a switch.
    switch: bool,
}

/// What two ports holding the same P_Key table share by OpenSM's partition rule, worked out
/// once per distinct table: on a fabric where most end ports hold one table (the default
/// partition alone, or one tenant's), a PathRecord's partition check is a comparison of two
/// table indexes and a read of this.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SelfShare {
    /// Whether two ports with this table can talk ([`talks`]).
    pub talk: bool,
    /// The path P_Key between two such ports by the default rule ([`lowest_shared`]).
    pub lowest: Option<PKey>,
}

/// Whether ports with P_Key tables `ka` and `kb` can talk: a partition in common where one of
/// the two is a full member.
pub fn talks(ka: &[PKey], kb: &[PKey]) -> bool {
    ka.iter()
        .filter(|k| k.0 != 0)
        .any(|k| kb.iter().filter(|m| m.0 != 0).any(|m| m.base() == k.base() && (m.is_full() || k.is_full())))
}

/// The path P_Key between ports with tables `ka` and `kb` by the default rule: of the
/// partitions they share with one of them a full member, the lowest base, as `ka`'s entry (a
/// port holding both keys of a partition counts as a full member).
pub fn lowest_shared(ka: &[PKey], kb: &[PKey]) -> Option<PKey> {
    // A port's entry of a partition: the full key when it holds both.
    let find =
        |t: &[PKey], base: u16| t.iter().copied().filter(|k| k.0 != 0 && k.base() == base).max_by_key(|k| k.is_full());
    let pair = |k: PKey| find(kb, k.base()).is_some_and(|other| k.is_full() || other.is_full());
    ka.iter().copied().filter(|k| k.0 != 0 && pair(*k)).min_by_key(|k| k.base())
}

/// The compact tables of one snapshot's nodes (see the module doc).
#[derive(Debug)]
pub struct Paths {
    nodes: Vec<NodeAt>,
    /// Per node, where its ports start in `hops`, and the end (one more entry than nodes): 4
    /// bytes a node, so that finding a port reads a line that is mostly in cache.
    starts: Vec<u32>,
    hops: Vec<Hop>,
    /// The distinct P_Key tables; entry 0 is the empty one.
    pkeys: Vec<Box<[PKey]>>,
    /// What two ports with the same table share, by index into `pkeys`.
    shares: Vec<SelfShare>,
    /// By LID: the switch its owner (a CA port) is cabled to, and that switch's forwarding
    /// table entry for the LID, copied ([`NONE`]: a switch's LID, or no such switch). A walk
    /// that reaches that switch reads the entry here, not from the 30 KB table (a cache miss
    /// fewer per path).
    last_hop: Vec<(u32, u8)>,
    /// What walks from a switch on found, per (switch, DLID), filled as lookups walk.
    legs: Legs,
}

impl Paths {
    /// The tables of `nodes`, whose end ports own `1 << lmc` LIDs each.
    pub fn of(nodes: &SnapNodes, lmc: u8) -> Paths {
        let total: usize = nodes.iter().map(|n| n.ports.len()).sum();
        let mut out = Paths {
            nodes: Vec::with_capacity(nodes.len()),
            starts: Vec::with_capacity(nodes.len() + 1),
            hops: Vec::with_capacity(total),
            pkeys: vec![Box::default()],
            shares: Vec::new(),
            last_hop: Vec::new(),
            legs: Legs::new(0, []),
        };
        let mut interned: HashMap<Box<[PKey]>, u32> = HashMap::new();
        for node in nodes {
            let switch = node.is_switch();
            let first = u32::try_from(out.hops.len()).unwrap_or(NONE);
            out.starts.push(first);
            out.nodes.push(NodeAt {
                first,
                ports: u32::try_from(node.ports.len()).unwrap_or(0),
                switch,
                table: node.table.clone(),
            });
            for port in node.ports.iter() {
                let remote = port.remote.and_then(|(n, p)| nodes.get(n as usize).map(|r| (n, p, r.is_switch())));
                let (next, in_port, next_switch) = remote.unwrap_or((NONE, 0, false));
                let pkeys = if port.pkeys.is_empty() {
                    0
                } else if let Some(&k) = interned.get(port.pkeys.as_slice()) {
                    k
                } else {
                    let k = u32::try_from(out.pkeys.len()).unwrap_or(0);
                    out.pkeys.push(port.pkeys.as_slice().into());
                    interned.insert(port.pkeys.as_slice().into(), k);
                    k
                };
                out.hops.push(Hop {
                    guid: port.guid,
                    pkeys,
                    next,
                    rate: port.info.and_then(|i| link_mbps(&i)).unwrap_or(0),
                    neighbor: port.info.map_or(Mtu::M256, |i| i.neighbor_mtu),
                    cap: port.info.map_or(Mtu::M256, |i| i.mtu_cap),
                    in_port,
                    info: port.info.is_some(),
                    next_switch,
                    switch,
                });
            }
        }
        out.starts.push(u32::try_from(out.hops.len()).unwrap_or(NONE));
        out.shares = out.pkeys.iter().map(|t| SelfShare { talk: talks(t, t), lowest: lowest_shared(t, t) }).collect();
        out.last_hop = last_hops(&out, nodes, 1 << lmc.min(7));
        let switches = out.nodes.iter().filter(|n| n.switch).count();
        let rates = out.hops.iter().map(|h| h.rate).filter(|&r| r != 0);
        out.legs = Legs::new(switches.saturating_mul(out.last_hop.len()), rates);
        out
    }

    /// The flat index of port `at` (`None`: no such node or port).
    fn index(&self, at: PortAt) -> Option<usize> {
        let n = at.0 as usize;
        let (first, end) = (*self.starts.get(n)?, *self.starts.get(n.checked_add(1)?)?);
        let i = first.checked_add(u32::from(at.1)).filter(|&i| i < end)?;
        Some(i as usize)
    }

    /// Whether port `at` exists.
    pub fn has_port(&self, at: PortAt) -> bool {
        self.index(at).is_some()
    }

    /// The port GUID of `at`.
    pub fn guid(&self, at: PortAt) -> Option<Guid> {
        Some(self.hops.get(self.index(at)?)?.guid)
    }

    /// The P_Key table of `at`, index by index (0: an empty slot).
    pub fn pkeys(&self, at: PortAt) -> Option<&[PKey]> {
        self.table(self.table_of(at)?)
    }

    /// Which of the distinct P_Key tables port `at` holds (ports with equal tables get the
    /// same index).
    pub fn table_of(&self, at: PortAt) -> Option<u32> {
        Some(self.hops.get(self.index(at)?)?.pkeys)
    }

    /// The distinct P_Key table `t` ([`Paths::table_of`]).
    pub fn table(&self, t: u32) -> Option<&[PKey]> {
        self.pkeys.get(t as usize).map(|t| &**t)
    }

    /// What two ports holding table `t` share ([`SelfShare`]).
    pub fn self_share(&self, t: u32) -> Option<SelfShare> {
        self.shares.get(t as usize).copied()
    }

    /// Follows the forwarding tables from end port `src` to `dlid`, owned by `dest`, as
    /// `Snapshot::walk` (which finds `dest`) documents it. `dest` must be `dlid`'s owner: the
    /// part of the walk from the first switch on is kept per (switch, DLID) ([`Legs`]).
    pub fn walk(&self, src: PortAt, dest: PortAt, dlid: Lid) -> Option<Walk> {
        let from = *self.hops.get(self.index(src)?)?;
        let mtu = match (from.info, from.switch) {
            (false, _) => Mtu::M256,
            (true, true) => from.cap,
            (true, false) => from.neighbor,
        };
        let rate = if from.rate == 0 { 2_500 } else { from.rate };
        if dest == src {
            return Some(Walk { switches: 0, mtu, rate_mbps: rate, dest });
        }
        let at = first_switch(src, &from)?;
        let leg = self.legs.get(at, dlid).unwrap_or_else(|| self.leg(at, dest, dlid))?;
        // Both parts' smallest MTU (an MTU of unknown size changes nothing) and lowest rate.
        let mtu = leg.mtu.map_or(mtu, |m| min_mtu(mtu, m));
        Some(Walk { switches: leg.switches, mtu, rate_mbps: rate.min(leg.rate), dest })
    }

    /// The walk from switch `first` on to `dlid`, owned by `dest` (whose leg the memo does not
    /// hold): the switches crossed and the smallest MTU and lowest rate met (`None`: no path).
    /// It ends early at a switch whose leg the memo holds, and keeps the leg of each switch it
    /// crossed ([`Trail`]).
    fn leg(&self, first: u32, dest: PortAt, dlid: Lid) -> Option<Leg> {
        let mut w = Stepping { first, at: first, dest, dlid, out: 0, trail: Trail::EMPTY };
        loop {
            if w.at != first
                && let Some(found) = self.legs.get(w.at, dlid)
            {
                return self.ended(&w, found, true);
            }
            match self.leave(w.at, dest, dlid) {
                Ok(out) => w.out = out,
                Err(found) => return self.ended(&w, found, false),
            }
            match self.cross(w.at, w.out, dest) {
                Ok((next, mtu, rate)) => {
                    if !w.trail.push(w.at, mtu, rate) {
                        return self.ended(&w, None, false);
                    }
                    w.at = next;
                }
                Err(found) => return self.ended(&w, found, false),
            }
        }
    }

    /// The walk from switch `at` on to `dlid`, owned by `dest`, step by step and without the
    /// memo: what a walk whose trail overflows falls back to, and the tests' judge.
    fn leg_unkept(&self, mut at: u32, dest: PortAt, dlid: Lid) -> Option<Leg> {
        // The switches left before `at`, and what their links met.
        let mut leg = Leg { switches: 0, ..Leg::START };
        loop {
            let out = match self.leave(at, dest, dlid) {
                Ok(out) => out,
                Err(found) => return found.and_then(|end| leg.then(end)),
            };
            match self.cross(at, out, dest) {
                Ok((next, mtu, rate)) => {
                    leg.meet(mtu);
                    if rate != 0 {
                        leg.rate = leg.rate.min(rate);
                    }
                    leg.switches += 1;
                    if leg.switches >= MAX_HOPS {
                        return None;
                    }
                    at = next;
                }
                Err(found) => return found.and_then(|end| leg.then(end)),
            }
        }
    }

    /// Walk `w` ended at its switch `w.at`, whose own leg is `found` (`None`: no path from
    /// there; `kept`: read from the memo): keeps that leg and the leg of each switch on the
    /// walk's trail, the last first, and answers the first switch's. A walk whose trail
    /// overflowed (a loop, or a walk through more switches than a trail holds) is walked again
    /// from its first switch without the memo, and only that leg is kept.
    fn ended(&self, w: &Stepping, found: Option<Leg>, kept: bool) -> Option<Leg> {
        let Some(steps) = w.trail.steps() else {
            let leg = self.leg_unkept(w.first, w.dest, w.dlid);
            self.legs.put(w.first, w.dlid, leg);
            return leg;
        };
        if !kept {
            self.legs.put(w.at, w.dlid, found);
        }
        let mut leg = found;
        for (at, mtu, rate) in steps.rev() {
            leg = leg.and_then(|l| Leg::step(mtu, rate).then(l));
            self.legs.put(at, w.dlid, leg);
        }
        leg
    }

    /// A walk's step at switch `at` toward `dlid` (owned by `dest`): the port it leaves by
    /// (the forwarding table's entry), or, as `Err`, what the walk found (it ends at `at`, the
    /// destination switch: the leg of `at`; or there is no path).
    #[inline]
    fn leave(&self, at: u32, dest: PortAt, dlid: Lid) -> Result<u8, Option<Leg>> {
        let Some(sw) = self.nodes.get(at as usize) else { return Err(None) };
        if (at, 0) == dest {
            let mut leg = Leg::START;
            if let Some(h) = self.hops.get(sw.first as usize).filter(|h| sw.ports > 0 && h.info) {
                leg.meet(h.cap);
            }
            return Err(Some(leg));
        }
        let out = match self.last_hop.get(usize::from(dlid.0)) {
            Some(&(leaf, out)) if leaf == at => out,
            _ => sw.egress(dlid).ok_or(None)?,
        };
        if out == 0 || out == 0xff {
            return Err(None);
        }
        Ok(out)
    }

    /// A walk's crossing of the link on port `out` of switch `at`: the switch at the other
    /// end with the link's NeighborMTU and rate (0: unknown), or, as `Err`, what the walk
    /// found (it reached the CA port `dest`: the leg of `at`; another port, or no link: no
    /// path).
    #[inline]
    fn cross(&self, at: u32, out: u8, dest: PortAt) -> Result<(u32, Mtu, u32), Option<Leg>> {
        let hop = *self.index((at, out)).and_then(|i| self.hops.get(i)).ok_or(None)?;
        if !hop.info || hop.next == NONE {
            return Err(None);
        }
        if !hop.next_switch {
            return Err(((hop.next, hop.in_port) == dest).then(|| Leg::step(hop.neighbor, hop.rate)));
        }
        Ok((hop.next, hop.neighbor, hop.rate))
    }

    /// Walks ahead for a burst of lookups about to be made (a driver's batch of PathRecord
    /// Gets): each `(src, dest, dlid)` as [`Paths::walk`] takes it, whose leg is not in the memo
    /// yet, is walked and its leg kept ([`Legs`]), so that the lookups that follow find it
    /// there. The walks go in lock-step, one switch each per round: a round reads every
    /// walk's memo slot for the switch it is at (a walk that meets a kept leg ends there),
    /// then every walk's forwarding-table entry, then every walk's egress port, and no read in
    /// a round waits on another walk's, so the processor has them all in flight at once (a
    /// fresh walk's reads are cache misses, about 100 ns each, which one walk alone can only
    /// take one after another). The end ports' and the requester's port lines of the lookups
    /// that walked are read too (`by`, the third of each). Nothing here changes what a lookup
    /// finds: the memo holds what the walk computes, by the same steps.
    pub fn walk_ahead(&self, asks: &[Ahead]) {
        let mut steps: Vec<Stepping> = Vec::with_capacity(asks.len());
        for a in asks {
            let Some(from) = self.index(a.src).and_then(|i| self.hops.get(i)) else { continue };
            if let Some(at) = first_switch(a.src, from).filter(|_| a.dest != a.src)
                && self.legs.get(at, a.dlid).is_none()
            {
                steps.push(Stepping { first: at, at, dest: a.dest, dlid: a.dlid, out: 0, trail: Trail::EMPTY });
            }
        }
        if steps.is_empty() {
            return;
        }
        // The lines the lookups read besides the walk's: the destination's and the requester's
        // ports (their GUIDs and P_Key tables), for the lookups that walk.
        let mut seen = 0u32;
        for a in asks {
            for at in [Some(a.dest), a.by].into_iter().flatten() {
                seen ^= self.index(at).and_then(|i| self.hops.get(i)).map_or(0, |h| h.pkeys);
            }
        }
        std::hint::black_box(seen);
        // A walk that ended keeps what it found in the memo and leaves the rounds.
        while !steps.is_empty() {
            steps.retain(|s| match self.legs.get(s.at, s.dlid).filter(|_| s.at != s.first) {
                Some(found) => {
                    self.ended(s, found, true);
                    false
                }
                None => true,
            });
            steps.retain_mut(|s| match self.leave(s.at, s.dest, s.dlid) {
                Ok(out) => {
                    s.out = out;
                    true
                }
                Err(found) => {
                    self.ended(s, found, false);
                    false
                }
            });
            steps.retain_mut(|s| match self.cross(s.at, s.out, s.dest) {
                Ok((next, mtu, rate)) if s.trail.push(s.at, mtu, rate) => {
                    s.at = next;
                    true
                }
                Ok(_) => {
                    self.ended(s, None, false);
                    false
                }
                Err(found) => {
                    self.ended(s, found, false);
                    false
                }
            });
        }
    }
}

/// A lookup [`Paths::walk_ahead`] prepares: from end port `src` to `dlid`, owned by `dest`,
/// asked by the port `by` (when known).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ahead {
    /// The path's source port.
    pub src: PortAt,
    /// The owner of `dlid`.
    pub dest: PortAt,
    /// The destination LID.
    pub dlid: Lid,
    /// The requester's port.
    pub by: Option<PortAt>,
}

/// A walk from a switch on ([`Paths::leg`], [`Paths::walk_ahead`]).
#[derive(Debug, Clone, Copy)]
struct Stepping {
    /// The switch it started from.
    first: u32,
    /// The switch it is at.
    at: u32,
    dest: PortAt,
    dlid: Lid,
    /// The port it leaves `at` by (this round's).
    out: u8,
    /// The switches it left for another switch, and what it met on each link.
    trail: Trail,
}

/// Most switches a [`Trail`] holds: a 3-level fat tree's longest walk leaves four for another.
const TRAIL: usize = 8;

/// The switches a walk left for another switch, in order, and the NeighborMTU and rate of the
/// link it crossed from each: once the walk ends, the leg from each of them on is known (the
/// end's leg with the links after it), and the memo keeps them all, so that a later walk to
/// the same LID through any of them ends there. Under destination routing the walks to a LID
/// from all over the fabric meet (a fat tree's from every pod at one spine), so most of a
/// fresh pair's walk is then read from the memo. A walk through more switches than `TRAIL`
/// overflows it (`len` past `TRAIL`).
#[derive(Debug, Clone, Copy)]
struct Trail {
    len: u8,
    at: [u32; TRAIL],
    mtu: [Mtu; TRAIL],
    rate: [u32; TRAIL],
}

impl Trail {
    const EMPTY: Trail = Trail { len: 0, at: [0; TRAIL], mtu: [Mtu::M256; TRAIL], rate: [0; TRAIL] };

    /// Adds a step; false once the trail overflows.
    #[inline]
    fn push(&mut self, at: u32, mtu: Mtu, rate: u32) -> bool {
        let i = usize::from(self.len);
        if let (Some(a), Some(m), Some(r)) = (self.at.get_mut(i), self.mtu.get_mut(i), self.rate.get_mut(i)) {
            (*a, *m, *r) = (at, mtu, rate);
            self.len += 1;
            true
        } else {
            self.len = u8::try_from(TRAIL + 1).unwrap_or(u8::MAX);
            false
        }
    }

    /// The steps in order, `None` when the trail overflowed.
    fn steps(&self) -> Option<impl DoubleEndedIterator<Item = (u32, Mtu, u32)> + '_> {
        let n = usize::from(self.len);
        (n <= TRAIL).then(|| (0..n).map(|i| (self.at[i], self.mtu[i], self.rate[i])))
    }
}

/// The switch a packet from end port `src` (whose port record is `from`) is in first: its own
/// node for a switch port, else the switch at the other end of its link (`None`: no switch).
#[inline]
fn first_switch(src: PortAt, from: &Hop) -> Option<u32> {
    if from.switch {
        Some(src.0)
    } else if from.next != NONE && from.next_switch {
        Some(from.next)
    } else {
        None
    }
}

/// For each LID a CA port owns, the switch that port is cabled to and that switch's table
/// entry for the LID (see [`Paths::last_hop`]).
fn last_hops(paths: &Paths, nodes: &SnapNodes, span: u32) -> Vec<(u32, u8)> {
    let mut out: Vec<(u32, u8)> = Vec::new();
    for (n, node) in nodes.iter().enumerate() {
        let Ok(n) = u32::try_from(n) else { break };
        if node.is_switch() {
            continue;
        }
        for p in node.end_ports() {
            let Some(hop) = paths.index((n, p)).and_then(|i| paths.hops.get(i)) else { continue };
            let Some(leaf) = paths.nodes.get(hop.next as usize).filter(|l| hop.next != NONE && l.switch) else {
                continue;
            };
            let Some(base) = node.ports.get(usize::from(p)).map(|r| u32::from(r.lid.0)).filter(|&b| b != 0) else {
                continue;
            };
            // The port's LMC range. (Whoever owns a LID, the pair is the leaf's own entry.)
            for lid in (base..base + span).filter_map(|l| u16::try_from(l).ok()) {
                let Some(entry) = leaf.egress(Lid(lid)) else { continue };
                let at = usize::from(lid);
                if out.len() <= at {
                    out.resize(at + 1, (NONE, 0));
                }
                out[at] = (hop.next, entry);
            }
        }
    }
    out
}

/// A snapshot's [`Paths`], built on first use. Snapshots whose node records are all the same
/// share one (`Snapshot::with_shared`); a clone of a snapshot starts without it, so that a
/// clone whose records are then changed builds its own.
#[derive(Debug, Default)]
pub(super) struct LazyPaths(pub(super) Arc<std::sync::OnceLock<Paths>>);

impl Clone for LazyPaths {
    fn clone(&self) -> Self {
        LazyPaths::default()
    }
}

#[cfg(test)]
mod tests {
    use super::super::snapshot::{PortAt, Snapshot, Walk, link_mbps, min_mtu};
    use super::{MAX_HOPS, Mtu};
    use crate::core::lids::Guid2Lid;
    use crate::core::{Sm, SmConfig};
    use crate::transport::sim::SimDriver;
    use ibsm_mad::{Lid, PortNum};
    use std::sync::Arc;

    /// The walk over the node records, as the snapshot did it before the compact tables: the
    /// judge of [`super::Paths::walk`].
    fn walk_by_records(snap: &Snapshot, src: PortAt, dlid: Lid) -> Option<Walk> {
        let dest = snap.by_lid(dlid)?;
        let src_node = snap.node(src.0)?;
        let src_port = snap.port(src)?;
        let mut mtu =
            src_port.info.map_or(Mtu::M256, |i| if src_node.is_switch() { i.mtu_cap } else { i.neighbor_mtu });
        let mut rate = src_port.info.and_then(|i| link_mbps(&i)).unwrap_or(2_500);
        if dest == src {
            return Some(Walk { switches: 0, mtu, rate_mbps: rate, dest });
        }
        let mut at = if src_node.is_switch() {
            src.0
        } else {
            let (s, _) = src_port.remote?;
            if !snap.node(s)?.is_switch() {
                return None;
            }
            s
        };
        let mut switches = 1;
        loop {
            let sw = snap.node(at)?;
            if (at, 0) == dest {
                let cap = sw.ports.first().and_then(|p| p.info).map_or(mtu, |i| i.mtu_cap);
                return Some(Walk { switches, mtu: min_mtu(mtu, cap), rate_mbps: rate, dest });
            }
            let out = sw.lft().entry(usize::from(dlid.0))?.0;
            if out == 0 || out == 0xff {
                return None;
            }
            let port = sw.ports.get(usize::from(out))?;
            let info = port.info?;
            mtu = min_mtu(mtu, info.neighbor_mtu);
            rate = rate.min(link_mbps(&info).unwrap_or(rate));
            let (next, in_port) = port.remote?;
            let node = snap.node(next)?;
            if !node.is_switch() {
                return ((next, in_port) == dest).then_some(Walk { switches, mtu, rate_mbps: rate, dest });
            }
            switches += 1;
            if switches > MAX_HOPS {
                return None;
            }
            at = next;
        }
    }

    /// Every walk, GUID and P_Key table of `snap` from the compact tables against the records:
    /// how many walks found a path.
    fn judge(snap: &Snapshot) -> usize {
        let top = snap.end_ports().filter_map(|p| snap.port(p).map(|r| r.lid.0)).max().unwrap_or(0);
        let mut found = 0;
        // Past the last node, and at the largest node index: no port.
        for n in [u32::try_from(snap.nodes.len()).unwrap(), u32::MAX] {
            assert_eq!(snap.port_guid((n, 0)), None);
            assert_eq!(snap.paths().table_of((n, 1)), None);
            assert!(!snap.paths().has_port((n, 0)));
        }
        for (n, node) in snap.nodes.iter().enumerate() {
            let n = u32::try_from(n).unwrap();
            for p in 0..=u8::try_from(node.ports.len()).unwrap() {
                let at = (n, p);
                assert_eq!(snap.port_guid(at), snap.port(at).map(|r| r.guid), "{at:?}");
                assert_eq!(snap.paths().pkeys(at), snap.port(at).map(|r| r.pkeys.as_slice()), "{at:?}");
                for dlid in 0..=top + 2 {
                    let want = walk_by_records(snap, at, Lid(dlid));
                    assert_eq!(snap.walk(at, Lid(dlid)), want, "{at:?} to LID {dlid}");
                    // Again: now (for a walk that reached a switch) from the memo of legs.
                    assert_eq!(snap.walk(at, Lid(dlid)), want, "{at:?} to LID {dlid}, twice");
                    found += usize::from(want.is_some());
                }
            }
        }
        found
    }

    #[test]
    fn the_compact_walk_finds_what_the_records_give_on_a_damaged_fabric() {
        let topo = ibsm_topology::GenSpec::fat_tree(3, 4).generate().unwrap();
        let mut drv = SimDriver::new(&topo, 1, Sm::new(SmConfig::default(), Guid2Lid::default()), None).unwrap();
        assert!(drv.sweep(60_000_000_000, |_| {}).is_some_and(|r| r.complete));
        let clean = drv.sm.snapshot().unwrap();
        let ends = clean.end_ports().count();
        let whole = judge(&clean);
        assert!(whole >= ends * ends, "every end port reaches every other");

        // Damage a copy (a clone builds its own tables): a switch's table with an unrouted
        // entry, a loop between two switches, a table cut short, a missing table, a port
        // without PortInfo, a link without its far end, a slower and smaller link.
        let mut snap = (*clean).clone();
        let switches: Vec<usize> = (0..snap.nodes.len()).filter(|&i| snap.nodes[i].is_switch()).collect();
        let lid = |i: usize| snap.end_ports().filter_map(|p| snap.port(p).map(|r| r.lid)).nth(i).unwrap();
        let (l1, l2) = (lid(1), lid(5));
        let mut table = (**snap.nodes[switches[0]].table.as_ref().unwrap()).clone();
        table.set(usize::from(l1.0), PortNum(0xff));
        snap.nodes[switches[0]].table = Some(Arc::new(table));
        // A loop: two neighbouring switches send LID l2 to each other.
        let (a, b) = (
            switches[1],
            snap.nodes[switches[1]].ports.iter().enumerate().find_map(|(p, r)| {
                r.remote.filter(|&(n, _)| snap.nodes[n as usize].is_switch()).map(|(n, q)| (p, n as usize, q))
            }),
        );
        let (pa, b, pb) = b.unwrap();
        for (s, out) in [(a, pa), (b, usize::from(pb))] {
            let mut t = (**snap.nodes[s].table.as_ref().unwrap()).clone();
            t.set(usize::from(l2.0), PortNum(u8::try_from(out).unwrap()));
            snap.nodes[s].table = Some(Arc::new(t));
        }
        let mut short = (**snap.nodes[switches[2]].table.as_ref().unwrap()).clone();
        short.entries_mut().truncate(3);
        snap.nodes[switches[2]].table = Some(Arc::new(short));
        snap.nodes[switches[3]].table = None;
        snap.nodes[switches[4]].ports_mut()[1].info = None;
        snap.nodes[switches[5]].ports_mut()[2].remote = None;
        snap.nodes[switches[6]].ports_mut()[3].remote = Some((u32::MAX - 1, 1));
        if let Some(info) = snap.nodes[switches[7]].ports_mut()[1].info.as_mut() {
            info.neighbor_mtu = Mtu::M512;
            info.link_width_active = ibsm_mad::attrs::LinkWidth::X1;
        }
        if let Some(info) = snap.nodes[switches[8]].ports_mut()[0].info.as_mut() {
            info.mtu_cap = Mtu::M1024;
        }
        snap.nodes[switches[9]].ports_mut()[0].info = None;
        let hca = (0..snap.nodes.len()).find(|&i| !snap.nodes[i].is_switch()).unwrap();
        snap.nodes[hca].ports_mut()[1].pkeys.clear();
        assert!(!snap.paths_ready(), "a clone builds its own tables");
        let damaged = judge(&snap);
        assert!(snap.paths_ready());
        assert!(damaged < whole, "the damage cost paths: {damaged} of {whole}");
        assert!(damaged > whole / 2, "most paths remain: {damaged} of {whole}");

        // The same pairs walked ahead, all at once in lock-step, on a copy with an empty memo
        // (requesters among them): each leg kept is what the walk finds alone, and the
        // lookups after it find what the records give.
        let copy = snap.clone();
        let top = copy.end_ports().filter_map(|p| copy.port(p).map(|r| r.lid.0)).max().unwrap();
        let mut asks = Vec::new();
        for (n, node) in copy.nodes.iter().enumerate() {
            for p in 0..=u8::try_from(node.ports.len()).unwrap() {
                for dlid in 0..=top + 2 {
                    let by = copy.end_ports().nth(usize::from(dlid) % ends);
                    let src = (u32::try_from(n).unwrap(), p);
                    asks.extend(copy.by_lid(Lid(dlid)).map(|dest| super::Ahead { src, dest, dlid: Lid(dlid), by }));
                }
            }
        }
        let paths = copy.paths();
        paths.walk_ahead(&asks);
        let (mut kept, mut walks) = (0, 0);
        for a in &asks {
            let Some(from) = paths.index(a.src).map(|i| paths.hops[i]) else { continue };
            let Some(at) = super::first_switch(a.src, &from).filter(|_| a.src != a.dest) else { continue };
            walks += 1;
            if let Some(leg) = paths.legs.get(at, a.dlid) {
                assert_eq!(leg, paths.leg_unkept(at, a.dest, a.dlid), "{a:?}");
                kept += 1;
            }
        }
        assert!(walks > 0 && kept * 10 >= walks * 9, "{kept} of {walks} walks kept");
        assert_eq!(judge(&copy), damaged);

        // Walks from the CAs' ports only, on another copy: the memo then holds legs of switches
        // no walk started from (those the walks' trails crossed), and every leg it holds, with
        // loops and dead ends among them, is what the walk from that switch finds alone.
        let copy = snap.clone();
        let hosts: Vec<PortAt> = copy.end_ports().filter(|&(n, _)| !copy.nodes[n as usize].is_switch()).collect();
        let asks: Vec<super::Ahead> = hosts
            .iter()
            .flat_map(|&src| (0..=top + 2).map(move |dlid| (src, Lid(dlid))))
            .filter_map(|(src, dlid)| copy.by_lid(dlid).map(|dest| super::Ahead { src, dest, dlid, by: None }))
            .collect();
        let paths = copy.paths();
        paths.walk_ahead(&asks);
        let firsts: std::collections::HashSet<u32> =
            hosts.iter().filter_map(|&h| paths.index(h).and_then(|i| super::first_switch(h, &paths.hops[i]))).collect();
        let (mut held, mut crossed) = (0, 0);
        for (n, _) in copy.nodes.iter().enumerate().filter(|(_, n)| n.is_switch()) {
            let at = u32::try_from(n).unwrap();
            for dlid in (0..=top + 2).map(Lid) {
                let (Some(leg), Some(dest)) = (paths.legs.get(at, dlid), copy.by_lid(dlid)) else { continue };
                assert_eq!(leg, paths.leg_unkept(at, dest, dlid), "switch {at} to {dlid:?}");
                held += 1;
                crossed += usize::from(!firsts.contains(&at));
            }
        }
        assert!(crossed > 0 && held > crossed, "{held} legs held, {crossed} of switches no walk started from");
        assert_eq!(judge(&copy), damaged);
    }

    /// OpenSM's path P_Key rule over the records' tables, as `Snapshot::shared_pkey` worked it
    /// out before the tables shared by many ports were worked out once: the judge of it.
    fn shared_pkey_by_records(snap: &Snapshot, a: PortAt, b: PortAt, by: PortAt) -> Option<ibsm_mad::PKey> {
        let table = |at: PortAt| snap.port(at).map(|r| r.pkeys.as_slice());
        let talk = |x: PortAt, y: PortAt| match (table(x), table(y)) {
            (Some(kx), Some(ky)) => super::talks(kx, ky),
            _ => false,
        };
        let shares = |x: PortAt, y: PortAt| x == y || talk(x, y);
        if !(shares(by, a) && shares(by, b)) {
            return None;
        }
        super::lowest_shared(table(a)?, table(b)?)
    }

    #[test]
    fn the_path_p_key_of_ports_with_one_table_is_the_rule_s_answer() {
        let topo = ibsm_topology::GenSpec::fat_tree(2, 4).generate().unwrap();
        let mut drv = SimDriver::new(&topo, 1, Sm::new(SmConfig::default(), Guid2Lid::default()), None).unwrap();
        assert!(drv.sweep(60_000_000_000, |_| {}).is_some_and(|r| r.complete));
        let mut snap = (*drv.sm.snapshot().unwrap()).clone();
        let ends: Vec<PortAt> = snap.end_ports().filter(|&(n, _)| !snap.nodes[n as usize].is_switch()).collect();
        assert!(ends.len() >= 8, "{} end ports", ends.len());
        // Tables held by several ports each (so that the ends and the requester often hold the
        // same one) and by one port: the default partition in full; a limited member only; a
        // second partition besides (full, then limited); an empty table; both keys of one.
        let k = |v: &[u16]| v.iter().map(|&x| ibsm_mad::PKey(x)).collect::<Vec<_>>();
        let tables = [
            k(&[0xffff]),
            k(&[0x7fff]),
            k(&[0xffff, 0x8002]),
            k(&[0x7fff, 0x0002]),
            k(&[]),
            k(&[0x7fff, 0xffff, 0, 0x8002]),
        ];
        for (i, &(n, p)) in ends.iter().enumerate() {
            let t = if i < 3 { 0 } else { 1 + (i - 3) % (tables.len() - 1) };
            snap.nodes[n as usize].ports_mut()[usize::from(p)].pkeys = tables[t].clone();
        }
        let (mut same, mut found) = (0, 0);
        for &a in &ends {
            for &b in &ends {
                for &by in &ends {
                    let want = shared_pkey_by_records(&snap, a, b, by);
                    assert_eq!(snap.shared_pkey(a, b, Some(by), None), want, "{a:?} to {b:?} asked by {by:?}");
                    let t = |x| snap.paths().table_of(x);
                    same += usize::from(t(a) == t(b) && t(b) == t(by));
                    found += usize::from(want.is_some());
                }
            }
        }
        assert!(same > 0 && found > 0, "the shared table's answer was judged: {same} triples, {found} with a P_Key");
        assert!(found < ends.len().pow(3), "and refusals too");
    }
}
