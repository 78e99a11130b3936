//! Routing and LFT programming: the routing engine call on the discovered subnet (described by
//! [`Subnet::describe`](super::state::Subnet::describe) and built into a routing view by
//! [`crate::fabric_view::build`], as the offline planner's is), and the LinearForwardingTable
//! blocks that must be written.
//!
//! Owns the Routing and ProgrammingLfts phases. The tables come from the `ibsm-routing` engine
//! named in the configuration; they are cut into blocks of 64 LIDs, and a block is written only
//! when it differs from what the switch is known to hold (read back during discovery, or written
//! by this SM in an earlier sweep). Nothing here knows a byte offset.

use ibsm_mad::Attribute;
use ibsm_mad::attrs::LinearForwardingTable;
use ibsm_routing::Lft;
use ibsm_routing::chain::Chain;

use super::Sm;
use super::events::SmEvent;
use super::state::NodeIdx;
use super::transactions::{Outcome, Req, Request};
use crate::fabric_view::{Built, build};

/// Block `block` of `table` as an attribute (entries past the table are unrouted).
pub fn block_of(table: &Lft, block: u32) -> LinearForwardingTable {
    let mut b = LinearForwardingTable::unrouted();
    let start = block as usize * LinearForwardingTable::ENTRIES;
    for (i, e) in b.ports.iter_mut().enumerate() {
        if let Some(&p) = table.ports.get(start + i) {
            *e = p;
        }
    }
    b
}

impl Sm {
    /// Runs the routing engine; on failure, reports it and leaves the tables alone.
    pub(super) fn route(&mut self) {
        let Built { view, switch_nodes, .. } = build(&self.subnet.describe(), self.cfg.lmc);
        let chain_name = self.cfg.routing_engine.join(",");
        let chain = match Chain::from_names(&self.cfg.routing_engine) {
            Ok(c) => c,
            Err(e) => {
                self.sweep.failures += 1;
                self.events.push_back(SmEvent::RoutingFailed { engine: chain_name, reason: e.to_string() });
                return;
            }
        };
        match chain.run(&view) {
            Ok(outcome) => {
                for d in outcome.declined {
                    self.events.push_back(SmEvent::EngineDeclined {
                        engine: d.engine.to_owned(),
                        reason: d.error.to_string(),
                    });
                }
                outcome.engine.clone_into(&mut self.engine_used);
                self.routes = Some((switch_nodes, outcome.routes));
            }
            Err(e) => {
                self.sweep.failures += 1;
                self.events.push_back(SmEvent::RoutingFailed { engine: chain_name, reason: e.to_string() });
            }
        }
    }

    /// Queues the LFT blocks that differ from what each switch holds.
    pub(super) fn program_lfts(&mut self) {
        let Some((switch_nodes, routes)) = self.routes.take() else { return };
        for (k, &node) in switch_nodes.iter().enumerate() {
            let (Some(n), Some(table)) = (self.subnet.node(node), routes.tables.get(k)) else { continue };
            if n.carried {
                continue; // did not answer: keeps what it holds
            }
            let held = self.lft_cache.get(&n.info.node_guid);
            let blocks = u32::from(table.top()) / 64 + 1;
            for block in 0..blocks {
                let want = block_of(table, block);
                if held.and_then(|h| h.get(block)) == Some(&want) {
                    self.sweep.lft_unchanged += 1;
                    continue;
                }
                self.sweep.lft_sent += 1;
                self.tx.push(Request::sweep(n.path, Req::SetLft { node, block, table: Box::new(want) }));
            }
        }
        self.routes = Some((switch_nodes, routes));
    }

    pub(super) fn on_set_lft(&mut self, request: &Request, node: NodeIdx, block: u32, outcome: &Outcome) {
        let Outcome::Reply { status: 0, data } = outcome else {
            self.fail(request, outcome);
            return;
        };
        let Some(n) = self.subnet.node(node) else { return };
        let guid = n.info.node_guid;
        let top = n.switch_info.map(|s| s.linear_fdb_top.0).unwrap_or_default();
        if let Ok(t) = LinearForwardingTable::parse(data) {
            let held = self.lft_cache.entry(guid).or_insert_with(|| super::HeldLft { top, blocks: Vec::new() });
            held.top = top;
            held.set(block, t);
        }
    }
}
