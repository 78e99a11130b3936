//! Routing and LFT programming: the routing engine call on the discovered subnet (described by
//! [`Subnet::describe`](super::state::Subnet::describe) and built into a routing view by
//! [`crate::fabric_view::build`], as the offline planner's is), and the LinearForwardingTable
//! blocks that must be written.
//!
//! Owns the Routing and ProgrammingLfts phases. The tables come from the `ibsm-routing` engine
//! named in the configuration; they are cut into blocks of 64 LIDs, and a block is written only
//! when it differs from what the switch is known to hold (read back during discovery, or written
//! by this SM in an earlier sweep). Nothing here knows a byte offset.
//!
//! The last full route is kept as the base: a fabric equal to it gets its tables again without
//! routing (a cable back, a sweep that found nothing new), and a fat tree that is the base less
//! some cables gets the base's tables repaired ([`ibsm_routing::ftree::FatTree::repair`]: only
//! the LIDs that crossed a lost cable move). Anything else is routed in full and becomes the base.

use ibsm_mad::Attribute;
use ibsm_mad::attrs::LinearForwardingTable;
use ibsm_routing::chain::Chain;
use ibsm_routing::ftree::FatTree;
use ibsm_routing::{FabricView, Lft, Routes};
use std::sync::Arc;

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

/// The last full route: the fabric, its tables, the engine that made them and the chain asked;
/// and the last repair of it, while the fabric stays degraded (a second sweep over the same
/// fabric, as the traps of both ends of a cable bring, takes it again).
#[derive(Debug, Clone)]
pub struct RouteBase {
    view: FabricView,
    routes: Arc<Routes>,
    engine: String,
    chain: String,
    repaired: Option<(FabricView, Arc<Routes>, RouteMode)>,
}

/// How the last sweep's tables were made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RouteMode {
    /// Routed from scratch by the engine chain.
    #[default]
    Full,
    /// The fabric equals the last full route's: its tables again.
    Reused,
    /// The last full route's fabric less some cables: its tables repaired.
    Repaired {
        /// LIDs that got new routes.
        lids: usize,
        /// Table entries changed.
        entries: usize,
    },
}

impl RouteMode {
    /// Its name in reports: `full`, `reused` or `repaired`.
    pub const fn name(self) -> &'static str {
        match self {
            RouteMode::Full => "full",
            RouteMode::Reused => "reused",
            RouteMode::Repaired { .. } => "repaired",
        }
    }
}

impl Sm {
    /// The next sweep routes from scratch (to measure a full route, or after a configuration
    /// change that routing depends on).
    pub fn force_full_route(&mut self) {
        self.route_base = None;
    }

    /// Tables without a full route, from the base, when the fabric allows it.
    fn route_from_base(&mut self, view: &FabricView, chain: &str) -> Option<(Arc<Routes>, RouteMode, String)> {
        let b = self.route_base.as_mut().filter(|b| b.chain == chain)?;
        if b.view == *view {
            b.repaired = None;
            return Some((Arc::clone(&b.routes), RouteMode::Reused, b.engine.clone()));
        }
        if let Some((_, routes, _)) = b.repaired.as_ref().filter(|(v, ..)| v == view) {
            return Some((Arc::clone(routes), RouteMode::Reused, b.engine.clone()));
        }
        if b.engine != FatTree::NAME {
            return None;
        }
        let r = FatTree.repair(&b.view, &b.routes, view)?.ok()?;
        let mode = RouteMode::Repaired { lids: r.lids, entries: r.entries };
        let routes = Arc::new(r.routes);
        b.repaired = Some((view.clone(), Arc::clone(&routes), mode));
        Some((routes, mode, b.engine.clone()))
    }

    /// Runs the routing engine; on failure, reports it and leaves the tables alone.
    pub(super) fn route(&mut self) {
        let Built { view, switch_nodes, .. } = build(&self.subnet.describe(), self.cfg.lmc);
        let chain_name = self.cfg.routing_engine.join(",");
        if let Some((routes, mode, engine)) = self.route_from_base(&view, &chain_name) {
            self.engine_used = engine;
            self.route_mode = mode;
            self.routes = Some((switch_nodes, routes));
            return;
        }
        self.route_mode = RouteMode::Full;
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
                let routes = Arc::new(outcome.routes);
                self.route_base = Some(RouteBase {
                    view,
                    routes: Arc::clone(&routes),
                    engine: outcome.engine.to_owned(),
                    chain: chain_name,
                    repaired: None,
                });
                self.routes = Some((switch_nodes, routes));
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
