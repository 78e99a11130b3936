//! P_Key tables: the partition policy resolved for the discovered subnet, and the P_KeyTable
//! blocks that bring every end port's table to it.
//!
//! Owns the resolution (the `ibsm-partitions` resolver over the subnet's end ports, after LID
//! assignment: port GUID, node type, the SM's own port, the node's PartitionCap), the tables it
//! gave ([`Sm::port_pkeys`]: what the SA's partition checks and P_KeyTableRecords read) and what
//! the SM wrote to each port, so that a later sweep writes only the blocks that change. A port
//! whose write failed is dropped from the tables (it shares no partition as far as the SA is
//! concerned: fail closed) until a later sweep writes it. Switch-port enforcement comes later.

use std::collections::BTreeMap;

use ibsm_mad::attrs::{NodeType, PKeyTable};
use ibsm_mad::{Guid, PKey, PortNum};
use ibsm_partitions::{EndPort, FabricPorts, NodeKind, ResolveOptions, resolve};

use super::Sm;
use super::events::SmEvent;
use super::state::NodeIdx;
use super::transactions::{Outcome, Req, Request};

impl Sm {
    /// Resolves the policy for the subnet's end ports and returns the P_KeyTable Sets whose
    /// block differs from what this SM last wrote there.
    pub(super) fn pkey_sets(&mut self) -> Vec<Request> {
        let local = self.subnet.local;
        let mut ports = Vec::new();
        let mut at: BTreeMap<Guid, (NodeIdx, PortNum)> = BTreeMap::new();
        for (i, n) in self.subnet.nodes.iter().enumerate().filter(|(_, n)| !n.carried) {
            let kind = match n.info.node_type {
                NodeType::Switch => NodeKind::Switch,
                NodeType::Router => NodeKind::Router,
                _ => NodeKind::Ca,
            };
            for p in n.end_ports() {
                let Some(guid) = n.port(p).and_then(|r| r.guid.or(n.is_switch().then_some(n.info.port_guid))) else {
                    continue;
                };
                if at.insert(guid, (i, p)).is_some() {
                    continue;
                }
                let is_sm = local.is_some_and(|(ln, lp)| ln == i && (lp == p || n.is_switch()));
                ports.push(EndPort { guid, kind, is_sm, pkey_capacity: n.info.partition_cap, peer: None });
            }
        }
        let resolved = match resolve(&self.cfg.partitions, &FabricPorts { ports }, ResolveOptions::default()) {
            Ok(r) => r,
            Err(e) => {
                self.events.push_back(SmEvent::PartitionWarning(e.to_string()));
                return Vec::new();
            }
        };
        for w in &resolved.warnings {
            self.events.push_back(SmEvent::PartitionWarning(format!("{w:?}")));
        }
        let mut sets = Vec::new();
        for (guid, keys) in &resolved.ports {
            let Some(&(node, port)) = at.get(guid) else { continue };
            let Some(n) = self.subnet.node(node) else { continue };
            let held = self.pkey_held.entry(*guid).or_default();
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
                sets.push(Request::sweep(n.path_for(port), Req::SetPKeys { node, port, guid: *guid, block, table: Box::new(t) }));
            }
        }
        self.pkeys = resolved.ports;
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
