//! P_Key tables: the partition policy resolved for the discovered subnet, and the P_KeyTable
//! blocks that bring every end port's table to it.
//!
//! Owns the resolution (the `ibsm-partitions` resolver over the subnet's end ports, after LID
//! assignment: port GUID, node type, the SM's own port, the node's PartitionCap), the tables it
//! gave ([`Sm::port_pkeys`]: what the SA's partition checks and P_KeyTableRecords read) and what
//! the SM wrote to each port, so that a later sweep writes only the blocks that change. A port
//! whose write failed is dropped from the tables (it shares no partition as far as the SA is
//! concerned: fail closed) until a later sweep writes it. Unless `part-enforce` is off, each
//! switch port facing a CA gets that CA's table and PortInfo's PartitionEnforcement bits
//! (`configure_ports` sets them); where the switch's PartitionEnforcementCap is too small the
//! table is withheld, the bits stay off on that port only, and a warning says so.

use std::collections::BTreeMap;

use ibsm_mad::attrs::{NodeType, PKeyTable};
use ibsm_mad::{Guid, PKey, PortNum};
use ibsm_partitions::{EndPort, FabricPorts, NodeKind, ResolveOptions, SwitchPeer, resolve};

use super::{PartEnforce, Sm};
use super::events::SmEvent;
use super::state::NodeIdx;
use super::transactions::{Outcome, Req, Request};

impl Sm {
    /// Resolves the policy for the subnet's end ports (and, unless enforcement is off, the
    /// tables of the switch ports facing CAs); keeps the result for [`Sm::pkey_sets`] and for
    /// the PortInfo enforcement bits of `configure_ports`.
    pub(super) fn resolve_partitions(&mut self) {
        let local = self.subnet.local;
        let mut ports = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        for (i, n) in self.subnet.nodes.iter().enumerate().filter(|(_, n)| !n.carried) {
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
                    let sw = self.subnet.node(sn).filter(|s| s.is_switch())?;
                    let cap = sw.switch_info.map_or(0, |si| si.partition_enforcement_cap);
                    Some(SwitchPeer { switch: sw.info.node_guid, port: sp, enforce_cap: cap })
                });
                ports.push(EndPort { guid, kind, is_sm, pkey_capacity: n.info.partition_cap, peer });
            }
        }
        let opts = ResolveOptions { enforcement: self.cfg.part_enforce != PartEnforce::Off, ..ResolveOptions::default() };
        match resolve(&self.cfg.partitions, &FabricPorts { ports }, opts) {
            Ok(r) => {
                for w in &r.warnings {
                    self.events.push_back(SmEvent::PartitionWarning(format!("{w:?}")));
                }
                self.pkeys = r.ports;
                self.enforce = r.switch_ports;
            }
            Err(e) => {
                self.events.push_back(SmEvent::PartitionWarning(e.to_string()));
                self.pkeys.clear();
                self.enforce.clear();
            }
        }
    }

    /// Whether switch `switch`'s port `port` enforces partitions after this sweep, and its
    /// (inbound, outbound) bits: `None` for a port that faces no CA.
    pub(super) fn enforcement_bits(&self, switch: Guid, port: PortNum, faces_ca: bool) -> Option<(bool, bool)> {
        if !faces_ca {
            return None;
        }
        // A port whose table was withheld (over the switch's capacity) does not enforce.
        Some(if self.enforce.contains_key(&(switch, port)) { self.cfg.part_enforce.bits() } else { (false, false) })
    }

    /// The P_KeyTable Sets whose block differs from what this SM last wrote there: every end
    /// port's table and every enforcing switch port's.
    pub(super) fn pkey_sets(&mut self) -> Vec<Request> {
        // (port GUID or switch GUID, the node, the port the table is on) for every table.
        let mut targets: Vec<(Guid, NodeIdx, PortNum, Vec<PKey>)> = Vec::new();
        for (i, n) in self.subnet.nodes.iter().enumerate().filter(|(_, n)| !n.carried) {
            for p in n.end_ports() {
                let Some(guid) = n.port(p).and_then(|r| r.guid.or(n.is_switch().then_some(n.info.port_guid))) else {
                    continue;
                };
                if let Some(keys) = self.pkeys.get(&guid) {
                    targets.push((guid, i, p, keys.clone()));
                }
            }
            if n.is_switch() {
                for (&(_, port), keys) in self.enforce.range((n.info.node_guid, PortNum(0))..=(n.info.node_guid, PortNum(u8::MAX))) {
                    // Keyed apart from end ports: the switch GUID with the port in the top byte.
                    let key = Guid(n.info.node_guid.0 ^ (u64::from(port.0) << 56));
                    targets.push((key, i, port, keys.clone()));
                }
            }
        }
        let mut sets = Vec::new();
        for (key, node, port, keys) in targets {
            let Some(n) = self.subnet.node(node) else { continue };
            let held = self.pkey_held.entry(key).or_default();
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
        }
        sets
    }

    /// A P_KeyTable Set ended: remember the block, or forget the port's table (fail closed).
    pub(super) fn on_set_pkeys(&mut self, request: &Request, guid: Guid, block: u16, table: &PKeyTable, outcome: &Outcome) {
        if outcome.failure().is_some() {
            self.pkey_held.remove(&guid);
            self.pkeys.remove(&guid);
            self.fail(request, outcome);
            return;
        }
        self.pkey_blocks_sent += 1;
        let held = self.pkey_held.entry(guid).or_default();
        let b = usize::from(block);
        if held.len() <= b {
            held.resize(b + 1, None);
        }
        held[b] = Some(*table);
    }

    /// P_KeyTable blocks written so far.
    pub fn pkey_blocks_sent(&self) -> u64 {
        self.pkey_blocks_sent
    }

    /// The P_Key table the policy gives each end port (by port GUID), as last resolved and
    /// written; ports whose write failed are absent.
    pub fn port_pkeys(&self) -> &BTreeMap<Guid, Vec<PKey>> {
        &self.pkeys
    }
}
