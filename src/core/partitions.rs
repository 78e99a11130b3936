//! Partitions: the component that owns the P_Key tables ([`Partitions`]): the partition policy
//! resolved for the discovered subnet, and the P_KeyTable blocks that bring every end port's
//! table to it.
//!
//! Owns the resolution (the `ibsm-partitions` resolver over the subnet's end ports, after LID
//! assignment: port GUID, node type, the SM's own port, the node's PartitionCap), the tables it
//! gave ([`Partitions::port_pkeys`]: what the SA's partition checks and P_KeyTableRecords read) and what
//! the SM wrote to each port, so that a later sweep writes only the blocks that change (a port
//! that shows no LID was reset since, and is written whole again). A standby taking over adopts
//! the tables its master wrote whole as written ([`Partitions::written_layouts`],
//! [`Partitions::adopt_written`]), so a takeover with the same policy writes no block; what it
//! wrote itself in an earlier mastership is forgotten at every takeover
//! ([`Partitions::forget_written`]). A port
//! whose write failed is dropped from the tables (it shares no partition as far as the SA is
//! concerned: fail closed) until a later sweep writes it. Unless `part-enforce` is off, each
//! switch port facing a CA gets that CA's table and PortInfo's PartitionEnforcement bits
//! (`configure_ports` sets them); where the switch's PartitionEnforcementCap is too small the
//! table is withheld, the bits stay off on that port only, and a warning says so.
//!
//! It takes the subnet (`&Subnet`), the policy and the enforcement setting as arguments and
//! answers with values (warnings, the Sets to queue, a port's enforcement bits); it sends
//! nothing and touches no other component's state. The SM's `set_partitions` replaces the
//! policy in the configuration; this component only resolves what it is given.

use std::collections::BTreeMap;
use std::collections::hash_map::Entry;

use ibsm_mad::attrs::{NodeType, PKeyTable};
use ibsm_mad::{Guid, Lid, PKey, PortNum};
use ibsm_partitions::{EndPort, FabricPorts, NodeKind, ResolveOptions, SwitchPeer, resolve};

use super::PartEnforce;
use super::events::SmEvent;
use super::guid_hash::{GuidMap, GuidState};
use super::state::{NodeIdx, Subnet};
use super::transactions::{Req, Request};

/// The P_Key tables: as resolved, as laid out, as written.
#[derive(Debug, Clone, Default)]
pub struct Partitions {
    /// Each end port's P_Key table as the policy resolves it (ports whose write failed absent).
    pkeys: BTreeMap<Guid, Vec<PKey>>,
    /// Enforcement tables of switch ports facing CAs, by (switch GUID, port).
    enforce: BTreeMap<(Guid, PortNum), Vec<PKey>>,
    /// Each P_Key table's layout as last written (indexes kept across sweeps and restarts).
    layout: BTreeMap<Guid, Vec<PKey>>,
    /// P_KeyTable blocks this SM wrote, by port GUID (never iterated: its order is the
    /// hash's).
    held: GuidMap<Vec<Option<PKeyTable>>>,
    /// P_KeyTable blocks written.
    blocks_sent: u64,
    /// The partitions in force, as last resolved (name, base, `sl=`).
    resolved: Vec<ibsm_partitions::ResolvedPartition>,
    /// Counts the changes to what the tables read from the books give
    /// ([`Partitions::revision`]).
    revision: u64,
}

impl Partitions {
    /// Resolves `policy` for the subnet's end ports (and, unless `part_enforce` is off, the
    /// tables of the switch ports facing CAs); keeps the result for [`Partitions::pkey_sets`]
    /// and for [`Partitions::enforcement_bits`]. Returns the warnings to report.
    pub fn resolve(
        &mut self,
        subnet: &Subnet,
        policy: &ibsm_partitions::Policy,
        part_enforce: PartEnforce,
        allow_both_pkeys: bool,
    ) -> Vec<SmEvent> {
        let local = subnet.local;
        let mut ports = Vec::new();
        let mut seen: std::collections::HashSet<Guid, GuidState> = std::collections::HashSet::default();
        for (i, n) in subnet.nodes.iter().enumerate().filter(|(_, n)| !n.carried) {
            let kind = match n.info.node_type {
                NodeType::Switch => NodeKind::Switch,
                NodeType::Router => NodeKind::Router,
                _ => NodeKind::Ca,
            };
            for p in n.end_ports() {
                let Some(rec) = n.port(p) else { continue };
                let Some(guid) = rec.guid.or(n.is_switch().then_some(n.info.port_guid)) else { continue };
                if !seen.insert(guid) {
                    continue;
                }
                let is_sm = local.is_some_and(|(ln, lp)| ln == i && (lp == p || n.is_switch()));
                // The switch port this CA port is cabled to, for enforcement.
                let peer = (!n.is_switch()).then_some(rec.remote).flatten().and_then(|(sn, sp)| {
                    let sw = subnet.node(sn).filter(|s| s.is_switch())?;
                    let cap = sw.switch_info.map_or(0, |si| si.partition_enforcement_cap);
                    Some(SwitchPeer { switch: sw.info.node_guid, port: sp, enforce_cap: cap })
                });
                ports.push(EndPort { guid, kind, is_sm, pkey_capacity: n.info.partition_cap, peer });
            }
        }
        let opts = ResolveOptions { enforcement: part_enforce != PartEnforce::Off, allow_both_pkeys };
        match resolve(policy, &FabricPorts { ports }, opts) {
            Ok(r) => {
                if self.pkeys != r.ports || self.enforce != r.switch_ports || self.resolved != r.partitions {
                    self.revision += 1;
                }
                self.pkeys = r.ports;
                self.enforce = r.switch_ports;
                self.resolved = r.partitions;
                r.warnings.iter().map(|w| SmEvent::PartitionWarning(w.to_string())).collect()
            }
            Err(e) => {
                self.revision += 1;
                self.pkeys.clear();
                self.enforce.clear();
                self.resolved.clear();
                vec![SmEvent::PartitionWarning(e.to_string())]
            }
        }
    }

    /// Whether switch `switch`'s port `port` enforces partitions after this sweep, and its
    /// (inbound, outbound) bits: `None` for a port that faces no CA.
    pub fn enforcement_bits(
        &self,
        part_enforce: PartEnforce,
        switch: Guid,
        port: PortNum,
        faces_ca: bool,
    ) -> Option<(bool, bool)> {
        if !faces_ca {
            return None;
        }
        // A port whose table was withheld (over the switch's capacity) does not enforce.
        Some(if self.enforce.contains_key(&(switch, port)) { part_enforce.bits() } else { (false, false) })
    }

    /// The P_KeyTable Sets whose block differs from what this SM last wrote there: every end
    /// port's table and every enforcing switch port's.
    pub(crate) fn pkey_sets(&mut self, subnet: &Subnet) -> Vec<Request> {
        // (port GUID or switch GUID, the node, the port the table is on) for every table.
        let mut targets: Vec<(Guid, NodeIdx, PortNum, &[PKey])> = Vec::new();
        // Tables on a port that shows no LID (reset since: power cycle, driver reload) hold the
        // power-on table, whatever was written before.
        let mut reset = Vec::new();
        for (i, n) in subnet.nodes.iter().enumerate().filter(|(_, n)| !n.carried) {
            let no_lid = |p: PortNum| n.port(p).and_then(|r| r.info).is_some_and(|pi| pi.lid == Lid::UNASSIGNED);
            for p in n.end_ports() {
                let Some(guid) = n.port(p).and_then(|r| r.guid.or(n.is_switch().then_some(n.info.port_guid))) else {
                    continue;
                };
                if let Some(keys) = self.pkeys.get(&guid) {
                    targets.push((guid, i, p, keys));
                }
                if no_lid(p) {
                    reset.push(guid);
                }
            }
            if n.is_switch() {
                for (&(_, port), keys) in
                    self.enforce.range((n.info.node_guid, PortNum(0))..=(n.info.node_guid, PortNum(u8::MAX)))
                {
                    let key = switch_port_key(n.info.node_guid, port);
                    targets.push((key, i, port, keys));
                    if no_lid(PortNum(0)) {
                        reset.push(key);
                    }
                }
            }
        }
        for key in reset {
            if self.held.remove(&key).is_some() {
                self.revision += 1;
            }
        }
        let mut sets = Vec::new();
        for (key, node, port, keys) in targets {
            let Some(n) = subnet.node(node) else { continue };
            // Keys keep the index they had (applications hold P_Key indexes).
            let capacity = if n.is_switch() && port.0 != 0 {
                n.switch_info.map_or(usize::MAX, |si| usize::from(si.partition_enforcement_cap))
            } else {
                usize::from(n.info.partition_cap)
            };
            let prev = self.layout.get(&key);
            let keys = stable_layout(prev.map_or(&[][..], Vec::as_slice), keys, capacity);
            let laid_out = prev == Some(&keys);
            let held = match self.held.entry(key) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(e) => {
                    // An empty entry reads as written whole ([`Partitions::enforcing_tables`]).
                    self.revision += 1;
                    e.insert(Vec::new())
                }
            };
            let blocks = keys.len().div_ceil(PKeyTable::ENTRIES).max(held.len()).max(1);
            for b in 0..blocks {
                let mut t = PKeyTable::default();
                for (slot, k) in t.keys.iter_mut().zip(keys.iter().skip(b * PKeyTable::ENTRIES)) {
                    *slot = *k;
                }
                if held.get(b).copied().flatten() == Some(t) {
                    continue;
                }
                let Ok(block) = u16::try_from(b) else { break };
                let req = Req::SetPKeys { node, port, guid: key, block, table: Box::new(t) };
                sets.push(Request::sweep(n.path_for(port), req));
            }
            if !laid_out {
                self.revision += 1;
                self.layout.insert(key, keys);
            }
        }
        sets
    }

    /// A P_KeyTable Set ended: remember the block (`done`), or forget the port's table (fail
    /// closed).
    pub fn on_set(&mut self, guid: Guid, block: u16, table: &PKeyTable, done: bool) {
        if !done {
            self.held.remove(&guid);
            self.pkeys.remove(&guid);
            self.revision += 1;
            return;
        }
        self.blocks_sent += 1;
        let held = match self.held.entry(guid) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => {
                self.revision += 1;
                e.insert(Vec::new())
            }
        };
        let b = usize::from(block);
        if held.len() <= b {
            // Exactly the blocks needed: a vector's first allocation is four slots, and most
            // ports hold one block (11 MB more at k = 48).
            held.reserve_exact(b + 1 - held.len());
            held.resize(b + 1, None);
        }
        if held[b] != Some(*table) {
            self.revision += 1;
            held[b] = Some(*table);
        }
    }

    /// Each table's layout as last written (by port GUID; switch ports by a key of their own),
    /// to persist in the state directory so that indexes survive a restart.
    pub fn layout(&self) -> &BTreeMap<Guid, Vec<PKey>> {
        &self.layout
    }

    /// Takes the layouts persisted by an earlier run.
    pub fn set_layout(&mut self, layout: BTreeMap<Guid, Vec<PKey>>) {
        self.revision += 1;
        self.layout = layout;
    }

    /// The layouts of the tables written whole (every block acknowledged as this SM laid it
    /// out), by the keys of [`Partitions::layout`]: what the ports hold, for the standbys.
    pub fn written_layouts(&self) -> Vec<(Guid, Vec<PKey>)> {
        self.layout
            .iter()
            .filter(|(key, layout)| {
                let Some(held) = self.held.get(key) else { return false };
                let slots = held.len() * PKeyTable::ENTRIES;
                layout.len() <= slots
                    && held.iter().enumerate().all(|(b, t)| {
                        t.is_some_and(|t| {
                            t.keys
                                .iter()
                                .enumerate()
                                .all(|(i, k)| layout.get(b * PKeyTable::ENTRIES + i).copied().unwrap_or(PKey(0)) == *k)
                        })
                    })
            })
            .map(|(g, l)| (*g, l.clone()))
            .collect()
    }

    /// A takeover: the blocks this SM wrote in an earlier mastership may have been overwritten
    /// by the master since; none is held (every block is written) but those
    /// [`Partitions::adopt_written`] then brings. The layouts stay, for their indexes.
    pub fn forget_written(&mut self) {
        self.held.clear();
    }

    /// Takes the tables a master wrote whole (its [`Partitions::written_layouts`], replicated)
    /// as what the ports hold: their layouts over those this SM knows, and their blocks as
    /// written, so that a sweep writes only the blocks the policy changes (none after a
    /// takeover with the same policy). A port found reset (no LID) is written again.
    pub fn adopt_written(&mut self, layouts: impl IntoIterator<Item = (Guid, Vec<PKey>)>) {
        for (key, layout) in layouts {
            let blocks = layout.len().div_ceil(PKeyTable::ENTRIES).max(1);
            let held = (0..blocks)
                .map(|b| {
                    let mut t = PKeyTable::default();
                    for (slot, k) in t.keys.iter_mut().zip(layout.iter().skip(b * PKeyTable::ENTRIES)) {
                        *slot = *k;
                    }
                    Some(t)
                })
                .collect();
            self.held.insert(key, held);
            self.layout.insert(key, layout);
        }
        self.revision += 1;
    }

    /// A count that changes whenever a table [`Partitions::written_table`] or
    /// [`Partitions::enforcing_tables`] gives may have changed: the SA snapshot copies the
    /// tables again only then.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// P_KeyTable blocks written so far.
    pub fn blocks_sent(&self) -> u64 {
        self.blocks_sent
    }

    /// The ports of switch `switch` that enforce partitions, each with its table as written
    /// (holes included; a port whose table is not written whole is left out). One range of the
    /// books per switch, where a lookup per port took a third of the SA snapshot's time at
    /// k = 48.
    pub fn enforcing_tables(&self, switch: Guid) -> Vec<(usize, Vec<PKey>)> {
        self.enforce
            .range((switch, PortNum(0))..=(switch, PortNum(u8::MAX)))
            .filter_map(|(&(_, port), _)| self.written_whole(switch_port_key(switch, port)).map(|t| (port, t)))
            .filter(|(_, t)| !t.is_empty())
            .map(|(port, t)| (usize::from(port.0), t.clone()))
            .collect()
    }

    /// The layout of table `key` when every block of it is written as laid out (an empty
    /// entry in the books reads as written whole).
    fn written_whole(&self, key: Guid) -> Option<&Vec<PKey>> {
        let written = self.held.get(&key).is_some_and(|held| held.iter().all(Option::is_some));
        written.then(|| self.layout.get(&key)).flatten()
    }

    /// Switch `switch`'s enforcing port `port`'s P_Key table as written (holes included); empty
    /// when the port does not enforce or a block of its table could not be written.
    #[cfg(test)]
    pub fn enforcing_table(&self, switch: Guid, port: usize) -> Vec<PKey> {
        let Ok(port) = u8::try_from(port).map(PortNum) else { return Vec::new() };
        if !self.enforce.contains_key(&(switch, port)) {
            return Vec::new();
        }
        self.written_whole(switch_port_key(switch, port)).cloned().unwrap_or_default()
    }

    /// End port `guid`'s table as written, for the SA: its layout, while the policy gives it one
    /// (a port whose write failed has none).
    pub fn written_table(&self, guid: Guid) -> Option<Vec<PKey>> {
        self.pkeys.get(&guid).and(self.layout.get(&guid)).cloned()
    }

    /// The P_Key table the policy gives each end port (by port GUID), as last resolved and
    /// written; ports whose write failed are absent.
    pub fn port_pkeys(&self) -> &BTreeMap<Guid, Vec<PKey>> {
        &self.pkeys
    }

    /// The partitions in force as last resolved: name, P_Key base and `sl=`.
    pub fn resolved(&self) -> &[ibsm_partitions::ResolvedPartition] {
        &self.resolved
    }

    /// Entries of each growing table, by name (for the soak's footprint).
    pub fn sizes(&self) -> [(&'static str, usize); 4] {
        [
            ("pkeys", self.pkeys.len()),
            ("enforce", self.enforce.len()),
            ("pkey_layout", self.layout.len()),
            ("pkey_held", self.held.len()),
        ]
    }
}

/// `desired` laid out so that every key `prev` (the table as last written) already held stays at
/// its index: index 0 takes `desired[0]` (the policy pins it); a key whose partition `prev` held
/// at index `i > 0` goes back to `i` (its membership bit as `desired` says); the others fill the
/// free slots from index 1, then go at the end; slots of keys no longer wanted become 0. When
/// that would not fit `capacity` entries, the compact `desired` is used instead.
pub(crate) fn stable_layout(prev: &[PKey], desired: &[PKey], capacity: usize) -> Vec<PKey> {
    let Some((&first, rest)) = desired.split_first() else { return Vec::new() };
    let mut out = vec![PKey(0); prev.len().max(1)];
    out[0] = first;
    let mut placed = vec![false; rest.len()];
    // The same key first, then the same partition (a membership that changed): with
    // `allow-both-pkeys` a port holds both keys of one partition and each keeps its index.
    for exact in [true, false] {
        for (k, done) in rest.iter().zip(placed.iter_mut()).filter(|(_, d)| !**d) {
            let slot = prev
                .iter()
                .enumerate()
                .skip(1)
                .find(|(i, p)| p.0 != 0 && out[*i].0 == 0 && if exact { **p == *k } else { p.base() == k.base() });
            if let Some((i, _)) = slot {
                out[i] = *k;
                *done = true;
            }
        }
    }
    for (k, done) in rest.iter().zip(&placed) {
        if *done {
            continue;
        }
        match out.iter().skip(1).position(|p| p.0 == 0) {
            Some(i) => out[i + 1] = *k,
            None => out.push(*k),
        }
    }
    while out.len() > 1 && out.last().is_some_and(|p| p.0 == 0) {
        out.pop();
    }
    if out.len() > capacity.max(1) { desired.to_vec() } else { out }
}

/// The key of a switch port's table among the end ports' (which are keyed by port GUID): the
/// switch GUID with the port number in the top byte.
fn switch_port_key(switch: Guid, port: PortNum) -> Guid {
    Guid(switch.0 ^ (u64::from(port.0) << 56))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(v: &[u16]) -> Vec<PKey> {
        v.iter().map(|&k| PKey(k)).collect()
    }

    #[test]
    fn keys_keep_their_index_new_ones_fill_holes_gone_ones_leave_holes() {
        // A new partition (0x8001) sorts before 0x8002: 0x8002 stays at index 1.
        let prev = keys(&[0x7fff, 0x8002]);
        assert_eq!(stable_layout(&prev, &keys(&[0x7fff, 0x8001, 0x8002]), 64), keys(&[0x7fff, 0x8002, 0x8001]));
        // 0x8002 leaves: its slot becomes a hole, which the next new key fills.
        let prev = keys(&[0x7fff, 0x8002, 0x8001]);
        assert_eq!(stable_layout(&prev, &keys(&[0x7fff, 0x8001]), 64), keys(&[0x7fff, 0, 0x8001]));
        assert_eq!(
            stable_layout(&keys(&[0x7fff, 0, 0x8001]), &keys(&[0x7fff, 0x8001, 0x8003]), 64),
            keys(&[0x7fff, 0x8003, 0x8001])
        );
        // A membership change keeps the index; index 0 follows the policy.
        assert_eq!(stable_layout(&keys(&[0xffff, 0x8002]), &keys(&[0x7fff, 0x0002]), 64), keys(&[0x7fff, 0x0002]));
        // Nothing before: the policy's order. Over capacity: the compact order.
        assert_eq!(stable_layout(&[], &keys(&[0x7fff, 0x8001]), 64), keys(&[0x7fff, 0x8001]));
        assert_eq!(
            stable_layout(&keys(&[0x7fff, 0, 0, 0x8002]), &keys(&[0x7fff, 0x8001, 0x8002]), 3),
            keys(&[0x7fff, 0x8001, 0x8002])
        );
        assert!(stable_layout(&prev, &[], 64).is_empty());
        // Both keys of one partition (allow-both-pkeys): each keeps its own index.
        assert_eq!(
            stable_layout(&keys(&[0x7fff, 0x0002, 0x8002]), &keys(&[0x7fff, 0x8002, 0x0002]), 64),
            keys(&[0x7fff, 0x0002, 0x8002])
        );
    }

    #[test]
    fn allow_both_pkeys_gives_a_port_the_full_and_the_limited_key() {
        let s = star_with_lids();
        let policy =
            ibsm_partitions::parse_partitions_conf("Default=0x7fff : ALL=full ;\nalpha=0x0002 : ALL_CAS=both ;\n")
                .expect("policy");
        let mut p = Partitions::default();
        assert!(p.resolve(&s, &policy, PartEnforce::Off, false).is_empty());
        assert_eq!(p.port_pkeys()[&Guid(0x102)], keys(&[0xffff, 0x8002]), "off: both is full");
        assert!(p.resolve(&s, &policy, PartEnforce::Off, true).is_empty());
        assert_eq!(p.port_pkeys()[&Guid(0x102)], keys(&[0xffff, 0x0002, 0x8002]), "limited first, as OpenSM");
    }

    fn written(p: &mut Partitions, sets: &[Request]) {
        for r in sets {
            if let Req::SetPKeys { guid, block, table, .. } = &r.req {
                p.on_set(*guid, *block, table, true);
            }
        }
    }

    /// The star with a LID on every port (ports the SM configured, not reset since).
    fn star_with_lids() -> Subnet {
        let mut s = crate::core::testing::star(0x102, 0x103);
        for (i, n) in s.nodes.iter_mut().enumerate() {
            for (p, r) in n.ports.iter_mut().enumerate() {
                if let Some(info) = &mut r.info {
                    info.lid = Lid(u16::try_from(10 * i + p + 1).unwrap_or(1));
                }
            }
        }
        s
    }

    #[test]
    fn only_blocks_that_differ_are_written_and_a_failed_write_fails_closed() {
        let s = star_with_lids();
        let mut p = Partitions::default();
        assert!(p.resolve(&s, &ibsm_partitions::Policy::no_file(), PartEnforce::Off, false).is_empty());
        // One block for each end port: the SM's CA, the switch's port 0, the two CAs.
        let sets = p.pkey_sets(&s);
        assert_eq!(sets.len(), 4, "{sets:?}");
        assert_eq!(p.port_pkeys()[&Guid(0x102)], [PKey(0xffff)]);
        written(&mut p, &sets);
        assert_eq!(p.blocks_sent(), 4);
        assert!(p.pkey_sets(&s).is_empty(), "nothing changed, nothing written");
        assert_eq!(p.written_table(Guid(0x102)), Some(vec![PKey(0xffff)]));
        let t = PKeyTable::default();
        p.on_set(Guid(0x102), 0, &t, false);
        assert_eq!(p.written_table(Guid(0x102)), None, "the SA sees no partition for it");
        assert!(!p.port_pkeys().contains_key(&Guid(0x102)));
        assert_eq!(p.blocks_sent(), 4);
        // The next sweep writes it again.
        p.resolve(&s, &ibsm_partitions::Policy::no_file(), PartEnforce::Off, false);
        assert_eq!(p.pkey_sets(&s).len(), 1);
    }

    #[test]
    fn a_standby_adopts_the_tables_written_whole_and_writes_none_of_them_again() {
        let mut s = star_with_lids();
        s.nodes[1].switch_info =
            Some(ibsm_mad::attrs::SwitchInfo { partition_enforcement_cap: 32, ..Default::default() });
        let policy =
            ibsm_partitions::parse_partitions_conf("Default=0x7fff : ALL=full ;\nalpha=0x0002 : ALL_CAS=full ;\n")
                .expect("policy");
        let mut master = Partitions::default();
        master.resolve(&s, &policy, PartEnforce::Both, false);
        let sets = master.pkey_sets(&s);
        assert_eq!(sets.len(), 7, "four end ports, three enforcing switch ports");
        // Every table written but 0x103's.
        written(&mut master, &sets);
        master.on_set(Guid(0x103), 0, &PKeyTable::default(), false);
        let whole = master.written_layouts();
        assert_eq!(whole.len(), 6, "{whole:?}");
        assert!(whole.iter().all(|(g, _)| *g != Guid(0x103)), "a failed write is not what the port holds");
        assert_eq!(master.layout().len(), 7, "its layout is still kept for its indexes");

        // The standby takes over with the same policy: it writes only the table never written.
        let mut standby = Partitions::default();
        standby.adopt_written(whole.clone());
        standby.resolve(&s, &policy, PartEnforce::Both, false);
        let again = standby.pkey_sets(&s);
        let guids: Vec<Guid> = again
            .iter()
            .filter_map(|r| if let Req::SetPKeys { guid, .. } = &r.req { Some(*guid) } else { None })
            .collect();
        assert_eq!(guids, [Guid(0x103)]);
        written(&mut standby, &again);
        assert_eq!(standby.written_layouts().len(), 7);

        // A port reset since (no LID: the power-on table) is written whole again; so are a
        // reset switch's enforcing ports.
        s.nodes[2].ports[1].info.as_mut().expect("info").lid = Lid(0);
        s.nodes[1].ports[0].info.as_mut().expect("info").lid = Lid(0);
        let after_reset = standby.pkey_sets(&s);
        assert_eq!(after_reset.len(), 5, "0x102, the switch's port 0 and its three enforcing ports: {after_reset:?}");
    }

    #[test]
    fn a_switch_port_facing_a_ca_enforces_only_within_its_capacity() {
        let mut s = crate::core::testing::star(0x102, 0x103);
        let policy = ibsm_partitions::Policy::no_file();
        let mut p = Partitions::default();
        // No SwitchInfo read: a capacity of 0, so the tables are withheld and a warning says so.
        let warnings = p.resolve(&s, &policy, PartEnforce::Both, false);
        assert!(!warnings.is_empty());
        assert_eq!(p.enforcement_bits(PartEnforce::Both, Guid(0x20), PortNum(2), true), Some((false, false)));
        assert_eq!(p.enforcement_bits(PartEnforce::Both, Guid(0x20), PortNum(2), false), None);
        s.nodes[1].switch_info =
            Some(ibsm_mad::attrs::SwitchInfo { partition_enforcement_cap: 32, ..Default::default() });
        assert!(p.resolve(&s, &policy, PartEnforce::In, false).is_empty());
        assert_eq!(p.enforcement_bits(PartEnforce::In, Guid(0x20), PortNum(2), true), Some((true, false)));
        assert!(p.enforcing_table(Guid(0x20), 2).is_empty(), "not written yet");
        let sets = p.pkey_sets(&s);
        // The end ports' four tables and the three switch ports facing CAs.
        assert_eq!(sets.len(), 7, "{sets:?}");
        written(&mut p, &sets);
        assert_eq!(p.enforcing_table(Guid(0x20), 2), [PKey(0xffff)]);
        assert_eq!(p.sizes().map(|(_, n)| n), [4, 3, 7, 7]);
    }
}
