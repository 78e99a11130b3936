//! The route's hand-off: the routing job ([`Sm::route_job`]) and the early route, which a
//! sweep that assigned LIDs hands to the driver as a job at once (before its ports'
//! configuration is even built, where the chain is not layered), so that the route runs while
//! the ports are configured on the SM's thread, instead of after.
//!
//! Routing reads the nodes, the cables, the links that are up and the LIDs; the port
//! configuration (PortInfo, SwitchInfo, P_Key and QoS Sets) writes none of those on a fabric
//! that comes up as read. The route is made of the subnet as LID assignment leaves it, with
//! its routing digest ([`crate::core::state::Subnet::routing_digest`], the ports the PM has
//! the routing avoid, the LMC); at the configuration's end the digest is taken again. Equal,
//! the route is the one routing after the configuration would make, and the tables go to the
//! switches as soon as both are done: what the fabric sees (the SMPs, their order, the LFT
//! blocks) does not change, only when the route is made. Not equal (a port bounced down, a
//! link lost meanwhile, the configuration read again), the early route is kept as the base
//! only and the sweep routes again. Only where the driver takes routing jobs
//! ([`Sm::set_offload_routing`]); the core stays sans-IO: the driver decides where the job
//! runs ([`Sm::take_route_job`], [`Sm::finish_route`]).

use crate::core::lft;
use crate::core::lft::EarlyEnd;
use crate::core::state::{SmState, SweepPhase};
use crate::core::sweep::ComputeStep;
use crate::core::{Sm, programming};

impl Sm {
    /// The digest of what the route reads: the subnet's, the avoided ports and the LMC.
    fn early_digest(&self) -> u64 {
        let mix = crate::core::state::fold;
        let mut h = mix(self.subnet.routing_digest(), u64::from(self.cfg.lmc));
        for (guid, port) in self.perf.avoided() {
            h = mix(mix(h, guid.0), u64::from(port.0));
        }
        h
    }

    /// LIDs are assigned: the route may start now, as a job the driver takes
    /// ([`Sm::take_route_job`]), while the ports are configured. Whether it is offered.
    pub(in crate::core) fn offer_early_route(&mut self) -> bool {
        if self.routing.offloaded() && self.state != SmState::Standby {
            let digest = self.early_digest();
            self.routing.want_early(digest);
        }
        self.routing.early_wanted()
    }

    /// LIDs are assigned: the ports' configuration begins. Where the chain is not layered (a
    /// layered chain's layer budget reads the partitions' SLs, which the configuration
    /// resolves), the early route is offered before the configuration is built, and the
    /// configuration waits as a compute step ([`ComputeStep::Configure`]) for the driver to
    /// take the job first (true: the sweep waits); else the configuration is built and the
    /// early route offered after it.
    pub(in crate::core) fn configure_after_lids(&mut self) -> bool {
        self.enter(SweepPhase::ConfiguringPorts);
        if !self.chain_layered() && self.offer_early_route() {
            self.sweep.wait_for(ComputeStep::Configure);
            return true;
        }
        self.configure_ports();
        self.offer_early_route();
        false
    }

    /// The configuration step is due while the early route is offered and not taken yet: it
    /// waits (true) for the driver to take the job and call again, once a sweep (a driver
    /// that takes no job is not held up twice).
    pub(in crate::core) fn configure_waits_for_route(&mut self) -> bool {
        if self.routing.early_wanted() && self.sweep.defer_configure() {
            self.sweep.wait_for(ComputeStep::Configure);
            return true;
        }
        false
    }

    /// The early route's job, when one is wanted.
    pub(in crate::core) fn take_early_job(&mut self) -> Option<crate::core::lft::RouteJob> {
        if !self.routing.early_wanted() {
            return None;
        }
        self.routing.drop_prime();
        let job = self.route_job();
        self.routing.early_taken();
        Some(job)
    }

    /// The ports are configured and the sweep is in its Routing phase: the early route's
    /// tables applied (true: the sweep goes on), or the sweep waits for them (false), or it
    /// routes now (true, with the compute step set).
    pub(in crate::core) fn route_after_configuration(&mut self) -> bool {
        let digest = if self.routing.early_pending() { self.early_digest() } else { 0 };
        match self.routing.early_end(digest) {
            EarlyEnd::None => {
                self.sweep.wait_for(ComputeStep::Route);
                true
            }
            EarlyEnd::Ready(done) => {
                self.apply_route(*done, true);
                true
            }
            EarlyEnd::Waiting | EarlyEnd::Stale(None) => false,
            EarlyEnd::Stale(Some(done)) => {
                self.apply_route(*done, false);
                self.sweep.wait_for(ComputeStep::Route);
                true
            }
        }
    }

    /// A sweep begins: an early route of the sweep before that is still kept becomes its base
    /// only (one still out does when it comes).
    pub(in crate::core) fn drop_early_route(&mut self) {
        if let Some(done) = self.routing.early_dropped() {
            self.apply_route(done, false);
        }
    }
}

impl Sm {
    /// The job's result, at `now`: the tables go to the switches (or the failure is reported
    /// and the tables left alone) and the sweep goes on. A result whose sweep has ended (this
    /// SM stood by meanwhile) is dropped.
    pub fn finish_route(&mut self, done: crate::core::lft::RouteDone, now: u64) {
        self.now = self.now.max(now);
        // The early route's result is kept until the ports are configured.
        let Some(done) = self.routing.keep_early(done, self.phase == crate::core::state::SweepPhase::ConfiguringPorts)
        else {
            return self.advance();
        };
        // A standby's advance route, or an early route the configuration made stale, becomes
        // the base only, whatever the sweep is doing (the second then routes again).
        let stale = self.routing.take_stale();
        let use_tables =
            !self.routing.take_prime_out() && self.phase == crate::core::state::SweepPhase::Routing && !stale;
        self.apply_route(done, use_tables);
        if stale && self.phase == crate::core::state::SweepPhase::Routing {
            self.sweep.wait_for(ComputeStep::Route);
        }
        self.advance();
    }

    /// As [`Sm::finish_route`], with the driver's clock (on the same timeline as `now`) read
    /// before and after: the LFT diff that follows the route is the route's work, and its time
    /// goes to the Routing phase, as [`Sm::handle_compute`] does for a route in place.
    pub fn finish_route_clocked(&mut self, done: crate::core::lft::RouteDone, clock: &mut dyn FnMut() -> u64) {
        let now = clock();
        self.finish_route(done, now);
        if self.phase == crate::core::state::SweepPhase::ProgrammingLfts && self.sweep.phase_started_at() == now {
            self.restamp(clock());
        }
    }
}

impl Sm {
    /// The routing job of the subnet, its view without the links the performance manager has
    /// the routing avoid (`perf-avoid-unhealthy`); the PM hears what was left out and kept.
    pub(in crate::core) fn route_job(&mut self) -> lft::RouteJob {
        let avoid = self.perf.avoided();
        let budget = self.route_budget();
        // A layered chain on an SM that has written no LFT yet (started, or took over): every
        // switch's table as read back, or as its base's where the last master vouched for it.
        let fresh = (self.chain_layered() && self.routing.fresh()).then(|| {
            let switches: Vec<_> =
                self.subnet.nodes.iter().filter(|n| n.is_switch()).map(|n| n.info.node_guid).collect();
            (switches, self.routing.base_tables().unwrap_or_default())
        });
        let programming = &self.programming;
        let base = fresh.as_ref().map(|f| &f.1);
        self.routing.hold_actual(fresh.as_ref().map(|f| f.0.as_slice()), |guid| match programming.vouched(guid) {
            Some(digest) => base?.get(&guid).filter(|t| programming::table_digest(t) == digest).cloned(),
            None => programming.programmed_lft(guid),
        });
        let (job, avoided) = self.routing.job(
            &self.subnet,
            self.cfg.lmc,
            (&self.cfg.routing_engine, &self.cfg.routing_options),
            budget,
            &avoid,
        );
        self.perf.set_routed(&avoided.cut, &avoided.kept);
        job
    }

    /// The layer budget a routing job gets. Only a layered engine (dfsssp, nue) uses it, and
    /// it reads the VLs of every link (7–9 ms of CPU at k = 48): another chain gets 1 for free.
    pub(in crate::core) fn route_budget(&self) -> u8 {
        if self.chain_layered() { self.vl_budget() } else { 1 }
    }
}
