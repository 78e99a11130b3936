//! Programming: the component that owns what this SM knows the switches' forwarding tables
//! hold, and turns a sweep's tables into the LFT blocks to write.
//!
//! Owns [`Programming`]: each switch's LFT blocks as read back during discovery or written by
//! this SM ([`HeldLft`], by node GUID), the read-backs discovery planned, and the count of MFT
//! blocks written. A block is written only when it differs from what the switch is known to
//! hold; what a switch holds is trusted only while its LinearFDBTop matches what this SM left
//! there and no other master wrote it, and is read back otherwise. A switch known to hold a
//! table whole is not compared with the same table again, and against a table a repair made
//! from it only in the blocks of the LIDs the repair moved.
//!
//! It takes the subnet (`&Subnet`), the tables and the answers as arguments and answers with
//! values (the Gets and Sets to queue, with counts); it sends nothing and touches no other
//! component's state. The multicast tables the switches hold are the SA's (`SaState::mfts`).

use std::sync::{Arc, OnceLock};

use ibsm_mad::attrs::LinearForwardingTable;
use ibsm_mad::{Attribute, DrPath, Guid, Lid};
use ibsm_routing::{Lft, Routes, TableDelta};

use super::guid_hash::GuidMap;
use super::lft::block_of;
use super::state::{Node, NodeIdx, Subnet};
use super::transactions::{PlannedLft, Req, Request};

/// What this SM knows a switch's LFT holds: by 64-LID block, or whole as a routing table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldLft {
    /// LinearFDBTop the blocks go with.
    top: u16,
    /// The blocks known, when not `whole` (a block in `via` is taken from there).
    blocks: Vec<Option<LinearForwardingTable>>,
    /// Blocks known to hold the same block of one table (a bit each): a plan's table as its
    /// Sets are answered, or a whole table once another is planned. Kept as the table and
    /// bits rather than as copies of its blocks (at k = 48 the copies took 96 MB while a
    /// bring-up's Sets were answered).
    via: Option<(Arc<Lft>, Vec<u64>)>,
    /// The routing table the switch holds, whole: every block of it was written and answered
    /// (or a plan found none differing), and nothing was written or read since. Kept instead
    /// of the blocks (one copy of the table, shared with the routing result and the SA's
    /// snapshot), and a later plan with the same table (the same `Arc`: a repair or a reuse
    /// shares the tables it did not change) skips the comparison.
    whole: Option<Arc<Lft>>,
    /// The digest of `whole` ([`table_digest`]), worked out when first asked (for the state
    /// sync).
    digest: OnceLock<u64>,
    /// What the master this SM took over from knew the switch holds: the digest of its whole
    /// table (the state sync's LFT digests). The first plan whose table has that digest takes
    /// the switch as holding it whole, without reading it back.
    vouched: Option<u64>,
}

impl HeldLft {
    fn new(top: u16, blocks: Vec<Option<LinearForwardingTable>>) -> HeldLft {
        HeldLft { top, blocks, via: None, whole: None, digest: OnceLock::new(), vouched: None }
    }

    /// The table block `block` is known to hold the same block of, if it is in `via`.
    fn via(&self, block: u32) -> Option<&Lft> {
        let (t, bits) = self.via.as_ref()?;
        let set = bits.get(block as usize / 64).is_some_and(|w| w & (1 << (block % 64)) != 0);
        set.then_some(&**t)
    }

    /// Block `block` holds block `block` of `table`.
    fn holds(&self, table: &Lft, block: u32) -> bool {
        match (self.whole.as_deref(), self.via(block)) {
            (Some(w), _) | (None, Some(w)) => w.same_block(table, block as usize),
            (None, None) => {
                self.blocks.get(block as usize).and_then(Option::as_ref).is_some_and(|h| holds(h, table, block))
            }
        }
    }

    /// Block `block` is `t` (written or read back).
    fn set(&mut self, block: u32, t: LinearForwardingTable) {
        self.unwhole();
        if let Some((_, bits)) = &mut self.via
            && let Some(w) = bits.get_mut(block as usize / 64)
        {
            *w &= !(1 << (block % 64));
        }
        let i = block as usize;
        if self.blocks.len() <= i {
            self.blocks.resize(i + 1, None);
        }
        self.blocks[i] = Some(t);
    }

    /// Block `block` is block `block` of `table` (a planned Set answered).
    fn set_from(&mut self, block: u32, table: &Arc<Lft>) {
        self.unwhole();
        if self.via.as_ref().is_some_and(|(t, _)| !Arc::ptr_eq(t, table)) {
            // Another table's blocks: copied out, to make room for this one's.
            if let Some((t, bits)) = self.via.take() {
                for b in 0..bits.len() as u32 * 64 {
                    if bits[b as usize / 64] & (1 << (b % 64)) != 0 {
                        self.set(b, block_of(&t, b));
                    }
                }
            }
        }
        let (_, bits) = self.via.get_or_insert_with(|| (Arc::clone(table), Vec::new()));
        let w = block as usize / 64;
        if bits.len() <= w {
            bits.resize(w + 1, 0);
        }
        bits[w] |= 1 << (block % 64);
        if let Some(b) = self.blocks.get_mut(block as usize) {
            *b = None;
        }
    }

    /// A plan writes `table`, whose blocks `differ` (in order) differ from what the switch
    /// holds: the blocks known from another table that `table` has the same are known from
    /// `table` now, and only the others are copied out (after a repair, a few blocks of
    /// each switch it changed, not the whole table).
    fn rebase(&mut self, table: &Arc<Lft>, differ: impl Iterator<Item = u32>) {
        let Some((old, mut bits)) = self.via.take() else { return };
        if Arc::ptr_eq(&old, table) {
            self.via = Some((old, bits));
            return;
        }
        let blocks = u32::from(table.top()) / 64 + 1;
        let keep = |b: u32, bits: &mut Vec<u64>, this: &mut HeldLft| {
            if let Some(w) = bits.get_mut(b as usize / 64)
                && *w & (1 << (b % 64)) != 0
            {
                *w &= !(1 << (b % 64));
                this.set(b, block_of(&old, b));
            }
        };
        for b in differ {
            keep(b, &mut bits, self);
        }
        for b in blocks..bits.len() as u32 * 64 {
            keep(b, &mut bits, self);
        }
        self.via = Some((Arc::clone(table), bits));
    }

    /// The table is no longer known whole (a block is written or planned): its blocks known
    /// from it. Whether it was whole.
    fn unwhole(&mut self) -> bool {
        self.vouched = None;
        self.digest = OnceLock::new();
        let Some(w) = self.whole.take() else { return false };
        let n = usize::from(w.top()) / LinearForwardingTable::ENTRIES + 1;
        let mut bits = vec![u64::MAX; n.div_ceil(64)];
        if let Some(last) = bits.last_mut()
            && !n.is_multiple_of(64)
        {
            *last = (1 << (n % 64)) - 1;
        }
        self.via = Some((w, bits));
        self.blocks = Vec::new();
        true
    }

    /// The switch holds `table` whole: the blocks go.
    fn set_whole(&mut self, table: &Arc<Lft>) {
        if !self.whole.as_ref().is_some_and(|w| Arc::ptr_eq(w, table)) {
            self.digest = OnceLock::new();
        }
        self.whole = Some(Arc::clone(table));
        self.blocks = Vec::new();
        self.via = None;
        self.vouched = None;
    }
}

/// The blocks of a plan still to be answered for one switch: its table, which blocks (a bit
/// each) and how many.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pending {
    table: Arc<Lft>,
    bits: Vec<u64>,
    left: u32,
}

/// The LFT Sets of a sweep, and how many blocks were already right.
#[derive(Debug, Default)]
pub(crate) struct LftPlan {
    /// The Sets to queue, block 0 of every switch first, then block 1, ...
    pub sets: LftFeed,
    /// Blocks the switches hold already.
    pub unchanged: u64,
}

/// A plan's LFT Sets, each made when it is taken (a [`super::transactions::Feed`]): the
/// switches' routes and tables, and the (block, switch) of each Set in sending order, 8 bytes
/// a Set where a Set made ahead is a whole [`Request`] (its table shared, [`PlannedLft`]).
#[derive(Debug, Default)]
pub(crate) struct LftFeed {
    switches: Vec<(NodeIdx, DrPath, Arc<Lft>)>,
    order: Vec<(u32, u32)>,
    next: usize,
}

impl Iterator for LftFeed {
    type Item = Request;

    fn next(&mut self) -> Option<Request> {
        let &(block, at) = self.order.get(self.next)?;
        self.next += 1;
        let (node, path, table) = self.switches.get(at as usize)?;
        Some(Request::sweep(*path, Req::SetLft { node: *node, block, table: PlannedLft(Arc::clone(table)) }))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.order.len().saturating_sub(self.next);
        (n, Some(n))
    }
}

impl ExactSizeIterator for LftFeed {}

/// One switch's entry in [`Programming`]: what it is known to hold and the plan being
/// written to it, side by side so that an answered Set finds both with one lookup (1.38 M
/// lookups in the k = 48 bring-up, each a likely cache miss).
#[derive(Debug, Clone, Default)]
struct SwitchLft {
    /// The switch's LFT blocks as known.
    held: Option<HeldLft>,
    /// The Sets of the last plan not answered yet: when the last is, the switch holds the
    /// plan's table whole.
    pending: Option<Pending>,
}

/// The switches' tables as this SM knows them.
#[derive(Debug, Clone, Default)]
pub struct Programming {
    /// Per switch, by node GUID: its LFT blocks as known, and the plan not answered yet.
    lfts: GuidMap<SwitchLft>,
    /// Taken over from a master: per switch, the LinearFDBTop and the digest of the whole
    /// table it held ([`Programming::adopt_digests`]), until the switch's SwitchInfo is read.
    vouched: GuidMap<(u16, u64)>,
    /// A switch left the set of those held whole since [`Programming::take_digests_changed`]:
    /// the standbys' LFT digests must be published again before they could vouch for it.
    digests_changed: bool,
    /// The LID of the master the digests came from: a switch naming it as its master SM was
    /// written by it, which is what the digest vouches for (not a reason to read it back).
    vouched_by: Option<Lid>,
    /// LFT read-backs discovery planned: (switch, route, blocks), queued when it is done.
    read_backs: Vec<(NodeIdx, DrPath, u32)>,
    /// MFT blocks written.
    mft_blocks_sent: u64,
    /// How many switches a plan's Sets go to at a time ([`Programming::lft_sets_ranked`]); 0:
    /// all of them.
    spread: usize,
}

impl Programming {
    /// Nothing known of any switch; plans spread over `spread` switches at a time.
    pub fn spread(spread: usize) -> Programming {
        Programming { spread, ..Programming::default() }
    }

    /// Plans from now on spread over `spread` switches at a time (the SMP window changed).
    pub fn set_spread(&mut self, spread: usize) {
        self.spread = spread;
    }

    /// A heavy sweep starts: no read-backs planned.
    pub fn sweep_started(&mut self) {
        self.read_backs.clear();
    }

    /// Switch `node`'s SwitchInfo was read (it is in `subnet`): what it holds is only known
    /// when it says it holds something, and it is the table this SM left there last time (same
    /// top) or must be read back.
    pub fn switch_info_read(&mut self, subnet: &Subnet, node: NodeIdx) {
        let Some(n) = subnet.node(node) else { return };
        let Some(si) = n.switch_info else { return };
        let top = si.linear_fdb_top.0;
        let guid = n.info.node_guid;
        let cached = self.held(guid).is_some_and(|c| c.top == top);
        if top == 0 || !cached {
            let gone = self.lfts.remove(&guid).and_then(|e| e.held);
            self.digests_changed |= gone.is_some_and(|h| h.whole.is_some());
        }
        // A switch the last master vouched for (same LinearFDBTop: not reset since) is
        // checked against the digest when routed, instead of read back.
        let vouched = self.vouched.remove(&guid).filter(|&(t, _)| t == top && top > 0);
        // The master's digest is newer than anything this SM read of the switch as a standby.
        if let Some((_, digest)) = vouched {
            let mut held = HeldLft::new(top, Vec::new());
            held.vouched = Some(digest);
            self.lfts.entry(guid).or_default().held = Some(held);
        } else if top > 0 && !cached {
            self.read_back(n, node);
        }
    }

    /// Switch `node` names another master SM: what this SM believed it holds is not trusted;
    /// it is read back (if it holds anything).
    pub fn distrust(&mut self, subnet: &Subnet, node: NodeIdx, named: Lid) {
        let Some(n) = subnet.node(node) else { return };
        let vouched = self.held(n.info.node_guid).is_some_and(|h| h.vouched.is_some());
        if vouched && self.vouched_by == Some(named) {
            return;
        }
        let Some(held) = self.lfts.remove(&n.info.node_guid).and_then(|e| e.held) else { return };
        self.digests_changed |= held.whole.is_some();
        if n.switch_info.is_some_and(|s| s.linear_fdb_top.0 > 0) {
            self.read_back(n, node);
        }
    }

    /// Plans the reads of every LFT block a switch holds (up to LinearFDBTop), forgetting what
    /// this SM believed it holds.
    fn read_back(&mut self, n: &Node, node: NodeIdx) {
        let Some(si) = n.switch_info else { return };
        let top = si.linear_fdb_top.0;
        let cap_blocks = u32::from(si.linear_fdb_cap).div_ceil(64).max(1);
        let blocks = (u32::from(top) / 64 + 1).min(cap_blocks);
        self.lfts.entry(n.info.node_guid).or_default().held = Some(HeldLft::new(top, vec![None; blocks as usize]));
        self.read_backs.push((node, n.path, blocks));
    }

    /// The planned LFT read-backs, block 0 of every switch, then block 1, ...: a switch's agent
    /// serves one SMP at a time, so reading switch after switch would keep the window waiting
    /// on one (a taking-over SM reads 1.38 M blocks on the 27,648-HCA tree). Empty when none.
    pub(crate) fn take_read_backs(&mut self) -> Vec<Request> {
        let plans = std::mem::take(&mut self.read_backs);
        let last = plans.iter().map(|p| p.2).max().unwrap_or(0);
        let mut gets = Vec::new();
        for block in 0..last {
            for &(node, path, _) in plans.iter().filter(|p| block < p.2) {
                gets.push(Request::sweep(path, Req::GetLft { node, block }));
            }
        }
        gets
    }

    /// A block read back from switch `guid`.
    pub fn lft_read(&mut self, guid: Guid, block: u32, t: LinearForwardingTable) {
        let Some(e) = self.lfts.get_mut(&guid) else { return };
        e.pending = None;
        match e.held.as_mut() {
            Some(held) => {
                self.digests_changed |= held.whole.is_some();
                held.set(block, t);
            }
            None => {
                self.lfts.remove(&guid);
            }
        }
    }

    /// A block written to switch `n` (the Set's answer `data`).
    pub fn lft_written(&mut self, n: &Node, block: u32, data: &[u8; 64]) {
        let top = n.switch_info.map(|s| s.linear_fdb_top.0).unwrap_or_default();
        let guid = n.info.node_guid;
        if let Ok(t) = LinearForwardingTable::parse(data) {
            let SwitchLft { held, pending } = self.lfts.entry(guid).or_default();
            // The plan's block, answered: the last one makes the table whole. Anything else
            // written to the switch ends the plan's count. (The plan's table is borrowed, not
            // its `Arc` cloned: two atomic counts on a cold line for each of a bring-up's
            // 1.4 million blocks.)
            let planned = match pending {
                Some(p) if holds(&t, &p.table, block) => {
                    let (w, bit) = (block as usize / 64, 1u64 << (block % 64));
                    if p.bits.get(w).is_some_and(|b| b & bit != 0) {
                        p.bits[w] &= !bit;
                        p.left -= 1;
                    }
                    true
                }
                Some(_) => {
                    *pending = None;
                    false
                }
                None => false,
            };
            let held = held.get_or_insert_with(|| HeldLft::new(top, Vec::new()));
            held.top = top;
            self.digests_changed |= held.whole.is_some();
            match pending.as_ref().filter(|_| planned) {
                // The plan's block, as the plan's table: no copy of it kept.
                Some(p) => held.set_from(block, &p.table),
                None => held.set(block, t),
            }
            if planned
                && pending.as_ref().is_some_and(|p| p.left == 0)
                && let Some(p) = pending.take()
                && p.table.top() == held.top
            {
                held.set_whole(&p.table);
            }
        }
    }

    /// The LFT blocks of `routes` (the tables of `switch_nodes`) that differ from what each
    /// switch holds, block by block across a group of switches (block 0 of every switch of the
    /// group, then block 1, ...; then the next group): a switch's agent serves one SMP at a
    /// time, so the window is spread over many switches instead of waiting on one. A group is
    /// [`Programming::spread`] switches in their order (the SM's: four windows' worth,
    /// [`super::transactions::spread`], so that a switch's next Set goes out long after its
    /// last was answered; 0: every switch), not every switch: each
    /// Set touches its switch's records on both ends of the wire (here the plan and what the
    /// switch holds; in the simulator its node, table and route), and over 2,880 switches those
    /// were out of cache again by the switch's next Set. A switch carried from the last sweep
    /// (it did not answer) keeps what it holds.
    ///
    /// The comparison runs switch by switch, each table against what its switch holds in
    /// memory order (going block by block across 2,880 tables of 48 K LIDs each touched another
    /// table at every step), and builds a block only where it differs; the blocks that differ
    /// are then put in (group, block) order (a counting sort, switches in their order within a
    /// block). A switch whose table is the one it holds whole ([`HeldLft`]) is not compared
    /// again: after a repair that is every switch but the few it changed. The blocks planned
    /// for a switch are counted until answered ([`Programming::lft_written`]); a switch found
    /// to hold its whole table is remembered so.
    #[cfg(test)]
    pub(crate) fn lft_sets(&mut self, subnet: &Subnet, switch_nodes: &[NodeIdx], routes: &Routes) -> LftPlan {
        self.lft_sets_ranked(subnet, switch_nodes, routes, None, None)
    }

    /// [`Programming::lft_sets`], with a write order where a repair gives one: `rank[i]` for
    /// the switch of `switch_nodes[i]` (lowest first; a layered repair's rank is the fewest
    /// hops to the destination among the entries it changed there), so the switches nearest
    /// the destinations of the re-routed LIDs are written first and each switch's new entries
    /// lead to switches already written (destination-outwards). Within a rank, group by group
    /// and block by block as above.
    ///
    /// `deltas[i]`, where a repair gives it, says where the table of `switch_nodes[i]` differs
    /// from the table it was made from ([`TableDelta`]): a switch known to hold that table
    /// whole is compared only in the blocks of those LIDs (after a cable cut at k = 48, a few
    /// blocks of its 751).
    pub(crate) fn lft_sets_ranked(
        &mut self,
        subnet: &Subnet,
        switch_nodes: &[NodeIdx],
        routes: &Routes,
        rank: Option<&[u32]>,
        deltas: Option<&[Option<TableDelta>]>,
    ) -> LftPlan {
        let last = routes.tables.iter().map(|t| u32::from(t.top()) / 64).max().unwrap_or(0);
        // Each switch's node, route and table, and which of its blocks differ: (block, switch).
        let mut switches = Vec::with_capacity(switch_nodes.len());
        // The rank of each entry of `switches`.
        let mut ranks = Vec::new();
        let mut differ: Vec<(u32, u32)> = Vec::new();
        let mut plan = LftPlan::default();
        for (i, (&node, table)) in switch_nodes.iter().zip(&routes.tables).enumerate() {
            let Some(n) = subnet.node(node).filter(|n| !n.carried) else { continue };
            let guid = n.info.node_guid;
            let SwitchLft { held, pending } = self.lfts.entry(guid).or_default();
            let mut held = held.as_mut();
            let blocks = u32::from(table.top()) / 64 + 1;
            if held.as_ref().and_then(|h| h.whole.as_ref()).is_some_and(|w| Arc::ptr_eq(w, table)) {
                plan.unchanged += u64::from(blocks);
                continue;
            }
            if let Some(h) = held.as_mut().filter(|h| h.vouched.is_some()) {
                let vouched = h.vouched.take();
                if h.top == table.top() && vouched == Some(table_digest(table)) {
                    h.set_whole(table);
                    plan.unchanged += u64::from(blocks);
                    continue;
                }
            }
            let Ok(at) = u32::try_from(switches.len()) else { continue };
            switches.push((node, n.path, Arc::clone(table)));
            ranks.push(rank.and_then(|r| r.get(i).copied()).unwrap_or(u32::MAX));
            let before = differ.len();
            // Held whole as the table this one was made from: only the blocks of the LIDs that
            // moved can differ, the others are the same.
            let moved = deltas.and_then(|d| d.get(i)?.as_ref()).filter(|d| {
                d.from.top() == table.top()
                    && held.as_ref().and_then(|h| h.whole.as_ref()).is_some_and(|w| Arc::ptr_eq(w, &d.from))
            });
            let mut compare = |block: u32| {
                if held.as_ref().is_some_and(|h| h.holds(table, block)) {
                    plan.unchanged += 1;
                } else {
                    differ.push((block, at));
                }
            };
            if let Some(d) = moved {
                let mut last = None;
                let mut compared = 0;
                for block in d.lids.iter().map(|&lid| u32::from(lid) / 64).filter(|&b| b < blocks) {
                    if last != Some(block) {
                        last = Some(block);
                        compared += 1;
                        compare(block);
                    }
                }
                plan.unchanged += u64::from(blocks - compared);
            } else if let Some(w) = held.as_ref().and_then(|h| h.whole.as_ref()) {
                // Held whole: the two tables compared in one pass (a full route's, every block).
                table.differing_blocks(w, |b| differ.push((b as u32, at)));
                plan.unchanged += u64::from(blocks) - (differ.len() - before) as u64;
            } else {
                (0..blocks).for_each(&mut compare);
            }
            if differ.len() == before {
                *pending = None;
                if let Some(h) = held
                    && h.top == table.top()
                {
                    h.set_whole(table);
                }
            } else {
                // Blocks go to it: no longer vouched for as whole (a standby must not take
                // the old digest for what it holds while they are written).
                if let Some(h) = held {
                    self.digests_changed |= h.unwhole();
                    h.rebase(table, differ[before..].iter().map(|&(b, _)| b));
                }
                let mut bits = vec![0u64; (blocks as usize).div_ceil(64)];
                for &(block, _) in &differ[before..] {
                    bits[block as usize / 64] |= 1 << (block % 64);
                }
                let left = (differ.len() - before) as u32;
                *pending = Some(Pending { table: Arc::clone(table), bits, left });
            }
        }
        // Group by group, block by block within a group: where each (group, block)'s Sets
        // start, then each in its place.
        let spread = if self.spread == 0 { u32::MAX } else { u32::try_from(self.spread).unwrap_or(u32::MAX) };
        let blocks = last as usize + 1;
        let bucket = |block: u32, at: u32| (at / spread) as usize * blocks + block as usize;
        let groups = (switches.len() as u32).div_ceil(spread) as usize;
        let mut next = vec![0usize; groups.max(1) * blocks];
        for &(block, at) in &differ {
            next[bucket(block, at)] += 1;
        }
        let mut sum = 0;
        for slot in &mut next {
            (*slot, sum) = (sum, sum + *slot);
        }
        let mut order = vec![(0u32, 0u32); differ.len()];
        for &(block, at) in &differ {
            let b = bucket(block, at);
            order[next[b]] = (block, at);
            next[b] += 1;
        }
        if rank.is_some() {
            order.sort_by_key(|&(_, at)| ranks.get(at as usize).copied().unwrap_or(u32::MAX));
        }
        plan.sets = LftFeed { switches, order, next: 0 };
        plan
    }

    /// For the state sync: each switch known to hold a whole table, its LinearFDBTop and the
    /// table's digest (worked out once per table), by node GUID.
    pub fn digests(&self) -> Vec<(Guid, u16, u64)> {
        let mut out: Vec<(Guid, u16, u64)> = self
            .lfts
            .iter()
            .filter_map(|(g, e)| {
                let h = e.held.as_ref()?;
                let w = h.whole.as_ref()?;
                Some((*g, h.top, *h.digest.get_or_init(|| table_digest(w))))
            })
            .collect();
        out.sort_unstable();
        out
    }

    /// A sweep ended: digests a takeover brought that no switch's SwitchInfo used are
    /// dropped (a switch out of reach then is read back or written when it is found again).
    pub fn sweep_finished(&mut self) {
        self.vouched.clear();
    }

    /// Whether a switch left the set of those held whole since the last call (the coordinator
    /// publishes the LFT digests again).
    pub fn take_digests_changed(&mut self) -> bool {
        std::mem::take(&mut self.digests_changed)
    }

    /// A standby taking over (or an SM taking the subnet back): what it read of the switches'
    /// tables as a standby, or wrote as master before, may have been overwritten since (a
    /// master that died partway through a repair leaves tables no read of this SM saw). Only
    /// the digests the last master vouches for ([`Programming::adopt_digests`]) are trusted;
    /// every other switch is read back.
    pub fn forget_read(&mut self) {
        self.digests_changed |= self.lfts.values().any(|e| e.held.as_ref().is_some_and(|h| h.whole.is_some()));
        self.lfts.clear();
    }

    /// A standby taking over: the switches its master held whole, to be trusted without a
    /// read-back when their LinearFDBTop is unchanged and the table routed for them has the
    /// same digest (anything else is read back or rewritten as usual).
    pub fn adopt_digests(&mut self, digests: impl IntoIterator<Item = (Guid, u16, u64)>, master: Option<Lid>) {
        self.vouched = digests.into_iter().map(|(g, top, d)| (g, (top, d))).collect();
        self.vouched_by = master;
    }

    /// What this SM knows `switch`'s linear forwarding table holds: the blocks it wrote, or read
    /// back during discovery, as a table for LIDs `0..=LinearFDBTop`; LIDs of a block it knows
    /// nothing about are unrouted. `None` when it knows nothing of that switch's table.
    pub fn programmed_lft(&self, switch: Guid) -> Option<Arc<Lft>> {
        let held = self.held(switch)?;
        if let Some(w) = &held.whole {
            return Some(Arc::clone(w));
        }
        let mut lft = ibsm_routing::Lft::unrouted(held.top);
        for (i, slot) in lft.entries_mut().iter_mut().enumerate() {
            let (block, entry) = (i / LinearForwardingTable::ENTRIES, i % LinearForwardingTable::ENTRIES);
            let known = match held.via(block as u32) {
                Some(t) => t.entry(i).or(Some(LinearForwardingTable::UNROUTED)),
                None => held.blocks.get(block).and_then(Option::as_ref).and_then(|b| b.ports.get(entry)).copied(),
            };
            if let Some(p) = known {
                *slot = p;
            }
        }
        Some(Arc::new(lft))
    }

    /// The digest of the table the last master vouched for switch `guid` holding, while this
    /// SM knows nothing else of its table (until a plan checks a table against it).
    pub fn vouched(&self, guid: Guid) -> Option<u64> {
        self.held(guid)?.vouched
    }

    /// Switches whose tables this SM knows.
    pub fn held_lfts(&self) -> usize {
        self.lfts.values().filter(|e| e.held.is_some()).count()
    }

    /// What this SM knows switch `guid` holds, if anything.
    fn held(&self, guid: Guid) -> Option<&HeldLft> {
        self.lfts.get(&guid)?.held.as_ref()
    }

    /// An MFT block was written.
    pub fn mft_written(&mut self) {
        self.mft_blocks_sent += 1;
    }

    /// MFT blocks written so far.
    pub fn mft_blocks_sent(&self) -> u64 {
        self.mft_blocks_sent
    }
}

/// A digest of `table` (its LinearFDBTop and every entry) for the state sync: SipHash-2-4
/// under a fixed key, compared only for equality (the sync's messages carry their own MAC).
pub(crate) fn table_digest(table: &Lft) -> u64 {
    let mut bytes = Vec::with_capacity(table.len() + 2);
    bytes.extend_from_slice(&table.top().to_be_bytes());
    for b in table.runs() {
        bytes.extend(b.iter().map(|p| p.0));
    }
    crate::siphash::siphash24(&[0; 16], &bytes)
}

/// `held` is block `block` of `table` (entries past the table unrouted), as
/// [`block_of`] would build it.
fn holds(held: &LinearForwardingTable, table: &Lft, block: u32) -> bool {
    let want = table.block(block as usize);
    // Folded without an early exit, so that the 64 entries are compared as a vector: the
    // slice `==` of a newtype goes entry by entry (~320 instructions a block; 1.4 million
    // blocks answered in a k = 48 bring-up).
    let differ = held.ports.iter().zip(want).fold(0u8, |d, (a, b)| d | (a.0 ^ b.0));
    differ == 0
        && held.ports.get(want.len()..).is_some_and(|rest| rest.iter().all(|&p| p == LinearForwardingTable::UNROUTED))
}

#[cfg(test)]
#[path = "programming_tests.rs"]
mod tests;
