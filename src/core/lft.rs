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
pub use super::events::RouteMode;
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

/// The routing of one sweep, detached from the SM: a pure computation (the routing view, the
/// engine chain and the last full route) that a driver may run on another thread while the SM
/// goes on answering ([`Sm::take_route_job`], [`RouteJob::run`], [`Sm::finish_route`]).
#[derive(Debug)]
pub struct RouteJob {
    view: FabricView,
    switch_nodes: Vec<NodeIdx>,
    chain: Vec<String>,
    base: Option<RouteBase>,
    epoch: u64,
}

/// What a [`RouteJob`] produced.
#[derive(Debug)]
pub struct RouteDone {
    switch_nodes: Vec<NodeIdx>,
    outcome: Result<(Arc<Routes>, RouteMode, String), String>,
    declined: Vec<(String, String)>,
    base: Option<RouteBase>,
    epoch: u64,
}

impl RouteJob {
    /// Tables without a full route, from the base, when the fabric allows it.
    fn reuse_base(&mut self, chain: &str) -> Option<(Arc<Routes>, RouteMode, String)> {
        let view = &self.view;
        let b = self.base.as_mut().filter(|b| b.chain == chain)?;
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

    /// Routes: from the base when it can, else with the engine chain (a full route becomes the
    /// new base).
    pub fn run(mut self) -> RouteDone {
        let chain_name = self.chain.join(",");
        let mut declined = Vec::new();
        let outcome = if let Some(found) = self.reuse_base(&chain_name) {
            Ok(found)
        } else {
            match Chain::from_names(&self.chain)
                .map_err(|e| e.to_string())
                .and_then(|c| c.run(&self.view).map_err(|e| e.to_string()))
            {
                Ok(out) => {
                    declined = out.declined.into_iter().map(|d| (d.engine.to_owned(), d.error.to_string())).collect();
                    let routes = Arc::new(out.routes);
                    self.base = Some(RouteBase {
                        view: self.view,
                        routes: Arc::clone(&routes),
                        engine: out.engine.to_owned(),
                        chain: chain_name,
                        repaired: None,
                    });
                    Ok((routes, RouteMode::Full, out.engine.to_owned()))
                }
                Err(e) => Err(e),
            }
        };
        RouteDone { switch_nodes: self.switch_nodes, outcome, declined, base: self.base, epoch: self.epoch }
    }
}

impl Sm {
    /// The next sweep routes from scratch (to measure a full route, or after a configuration
    /// change that routing depends on).
    pub fn force_full_route(&mut self) {
        self.route_base = None;
        // A job out now must not bring its base back.
        self.route_epoch += 1;
    }

    /// The routing step the sweep waits for, as a job to run anywhere; `None` unless
    /// [`Sm::poll_compute`] says [`super::ComputeStep::Route`]. Until [`Sm::finish_route`]
    /// the sweep waits in the Routing phase, and the SM answers everything else meanwhile.
    pub fn take_route_job(&mut self) -> Option<RouteJob> {
        if self.compute != Some(super::ComputeStep::Route) {
            return None;
        }
        self.compute = None;
        Some(self.route_job())
    }

    /// The routing job of the discovered subnet; the sweep waits for it until
    /// [`Sm::apply_route`].
    fn route_job(&mut self) -> RouteJob {
        let Built { view, switch_nodes, .. } = build(&self.subnet.describe(), self.cfg.lmc);
        self.route_job_out = true;
        RouteJob {
            view,
            switch_nodes,
            chain: self.cfg.routing_engine.clone(),
            base: self.route_base.take(),
            epoch: self.route_epoch,
        }
    }

    /// The job's result, at `now`: the tables go to the switches (or the failure is reported
    /// and the tables left alone) and the sweep goes on. A result whose sweep has ended (this
    /// SM stood by meanwhile) is dropped.
    pub fn finish_route(&mut self, done: RouteDone, now: u64) {
        self.now = self.now.max(now);
        let phase = self.phase;
        self.apply_route(done, phase == super::SweepPhase::Routing);
        self.advance();
    }

    /// Keeps the job's base, and with `use_tables` its tables or its failure.
    fn apply_route(&mut self, done: RouteDone, use_tables: bool) {
        self.route_job_out = false;
        if done.epoch == self.route_epoch {
            self.route_base = done.base;
        }
        if !use_tables {
            return;
        }
        for (engine, reason) in done.declined {
            self.events.push_back(SmEvent::EngineDeclined { engine, reason });
        }
        match done.outcome {
            Ok((routes, mode, engine)) => {
                self.engine_used = engine;
                self.route_mode = mode;
                self.routes = Some((done.switch_nodes, routes));
            }
            Err(reason) => {
                self.route_mode = RouteMode::Full;
                self.sweep.failures += 1;
                self.events.push_back(SmEvent::RoutingFailed { engine: self.cfg.routing_engine.join(","), reason });
            }
        }
    }

    /// Routing in place (`handle_compute`, as the simulator's drivers run it): the job at once.
    pub(super) fn route(&mut self) {
        let job = self.route_job();
        self.apply_route(job.run(), true);
    }

    /// Queues the LFT blocks that differ from what each switch holds, block by block across the
    /// switches (block 0 of every switch, then block 1, ...): a switch's agent serves one SMP at
    /// a time, so the window is spread over many switches instead of waiting on one.
    pub(super) fn program_lfts(&mut self) {
        let Some((switch_nodes, routes)) = self.routes.take() else { return };
        let last = routes.tables.iter().map(|t| u32::from(t.top()) / 64).max().unwrap_or(0);
        // Each switch's node, what it holds and its table, looked up once.
        let switches: Vec<_> = (switch_nodes.iter().zip(&routes.tables))
            .filter_map(|(&node, table)| {
                let n = self.subnet.node(node).filter(|n| !n.carried)?; // a carried one did not answer: keeps what it holds
                Some((node, n.path, self.lft_cache.get(&n.info.node_guid), table))
            })
            .collect();
        for block in 0..=last {
            for &(node, path, held, table) in &switches {
                if block > u32::from(table.top()) / 64 {
                    continue;
                }
                let want = block_of(table, block);
                if held.and_then(|h| h.get(block)) == Some(&want) {
                    self.sweep.lft_unchanged += 1;
                    continue;
                }
                self.sweep.lft_sent += 1;
                self.tx.push(Request::sweep(path, Req::SetLft { node, block, table: Box::new(want) }));
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
