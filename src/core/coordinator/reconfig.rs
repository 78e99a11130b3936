//! A configuration read again while the SM runs (SIGHUP, `ibsm reload`): each option's change
//! applied the way it needs, and nothing more.
//!
//! - **now**: SMP window, timeout and retries; sweep intervals; SM priority, SM_Key,
//!   elevated priority and the standby's polling; SA rate limit and SA key; the performance
//!   manager's interval and exported ports, the node name map. No SMP is sent
//!   for them (a standby raised above its master tells it, as at start).
//! - **sweep**: what the sweep programs into ports and switches (SubnetTimeout, LifeTimeValue,
//!   the subnet prefix, partition enforcement, the partition policy). One heavy sweep writes
//!   only what differs; the routes stay.
//! - **reroute**: the routing engine and its hints (the root switches). The sweep routes from
//!   scratch.
//! - **restart**: the LMC (every LID would change) and the M_Key settings (keys on a live
//!   fabric change in one careful step, at start). The running value stays, and the answer
//!   says so.

use crate::core::Sm;
use crate::core::{SmConfig, SmState, SweepPhase};

/// What a reload changed, and what it took.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reconfigured {
    /// Options changed and in force now (config-file key names).
    pub applied: Vec<&'static str>,
    /// Options changed but kept at their running value until a restart.
    pub restart: Vec<&'static str>,
    /// A heavy sweep follows (now, or when the running one ends).
    pub sweep: bool,
    /// That sweep routes from scratch.
    pub reroute: bool,
}

impl Reconfigured {
    /// Nothing changed.
    pub fn is_empty(&self) -> bool {
        self.applied.is_empty() && self.restart.is_empty()
    }
}

impl Sm {
    /// Puts `new` in force where it differs from the running configuration (see the module
    /// doc for what each option takes).
    pub fn reconfigure(&mut self, new: SmConfig) -> Reconfigured {
        let mut out = Reconfigured::default();
        let old = self.cfg.clone();
        let mut cfg = new;
        out.restart = keep_restart_only(&mut cfg, &old);
        let now = [
            ("max-smps-in-flight", cfg.max_smps_in_flight != old.max_smps_in_flight),
            ("smp-timeout-ms", cfg.smp_timeout_ns != old.smp_timeout_ns),
            ("smp-retries", cfg.smp_retries != old.smp_retries),
            ("resweep-interval-s", cfg.resweep_interval_ns != old.resweep_interval_ns),
            ("sweep-interval-s", cfg.sweep_interval_ns != old.sweep_interval_ns),
            ("priority", cfg.priority != old.priority),
            ("sm-key-file", cfg.sm_key != old.sm_key),
            ("elevated-priority", cfg.elevated_priority != old.elevated_priority),
            ("sm-poll-interval-ms", cfg.sm_poll_interval_ns != old.sm_poll_interval_ns),
            ("sm-poll-retries", cfg.sm_poll_retries != old.sm_poll_retries),
            ("sm-act-stall-s", cfg.sm_act_stall_ns != old.sm_act_stall_ns),
            ("sa-rate-limit", cfg.sa_rate_limit != old.sa_rate_limit),
            ("sa-key", cfg.sa_key != old.sa_key),
            ("consolidate-ipv6-snm", cfg.consolidate_ipv6_snm != old.consolidate_ipv6_snm),
            ("sm-assigned-guid", cfg.sm_assigned_guid != old.sm_assigned_guid),
            ("perf-interval-s", cfg.perf.interval_ns != old.perf.interval_ns),
            ("perf-metrics-ports", cfg.perf.export != old.perf.export),
            ("perf-avoid-unhealthy", cfg.perf.avoid != old.perf.avoid),
            ("perf-history-s", cfg.perf.history != old.perf.history),
            ("babbling-port-policy", cfg.babbling.enabled != old.babbling.enabled),
            ("babbling-port-traps", cfg.babbling.max_traps != old.babbling.max_traps),
            ("babbling-port-window-s", cfg.babbling.window_ns != old.babbling.window_ns),
            ("babbling-port-backoff-s", cfg.babbling.backoff_ns != old.babbling.backoff_ns),
            ("node-name-map", cfg.node_names != old.node_names),
        ];
        let sweep = [
            ("subnet-timeout", cfg.subnet_timeout != old.subnet_timeout),
            ("max-rate-enum", cfg.max_rate_enum != old.max_rate_enum),
            ("switch-life-time", cfg.switch_life_time != old.switch_life_time),
            ("head-of-queue-lifetime", cfg.ports.hoq_life != old.ports.hoq_life),
            ("leaf-head-of-queue-lifetime", cfg.ports.leaf_hoq_life != old.ports.leaf_hoq_life),
            ("vl-stall-count", cfg.ports.vl_stall_count != old.ports.vl_stall_count),
            ("leaf-vl-stall-count", cfg.ports.leaf_vl_stall_count != old.ports.leaf_vl_stall_count),
            ("max-op-vls", cfg.ports.max_op_vls != old.ports.max_op_vls),
            ("local-phy-errors-threshold", cfg.ports.local_phy_errors != old.ports.local_phy_errors),
            ("overrun-errors-threshold", cfg.ports.overrun_errors != old.ports.overrun_errors),
            ("force-link-speed", cfg.ports.force_link_speed != old.ports.force_link_speed),
            ("force-link-speed-ext", cfg.ports.force_link_speed_ext != old.ports.force_link_speed_ext),
            ("force-link-width", cfg.ports.force_link_width != old.ports.force_link_width),
            ("subnet-prefix", cfg.subnet_prefix != old.subnet_prefix),
            ("part-enforce", cfg.part_enforce != old.part_enforce),
            ("allow-both-pkeys", cfg.allow_both_pkeys != old.allow_both_pkeys),
            ("partitions", cfg.partitions != old.partitions),
            ("qos-policy-file", cfg.qos != old.qos),
            ("use-optimized-slvl", cfg.use_optimized_slvl != old.use_optimized_slvl),
            ("expected-topology", cfg.expected_topology != old.expected_topology),
            ("refuse-miscabled", cfg.refuse_miscabled != old.refuse_miscabled),
        ];
        let (ro, oo) = (&cfg.routing_options, &old.routing_options);
        let cn = |o: &ibsm_routing::EngineOptions| o.host_lists.as_ref().and_then(|l| l.compute.clone());
        let io = |o: &ibsm_routing::EngineOptions| o.host_lists.as_ref().map(|l| l.io.clone()).unwrap_or_default();
        // Every routing option by its key, so that a reload logs what it changed.
        let reroute = [
            ("routing-engine", cfg.routing_engine != old.routing_engine),
            ("root-guid-file", ro.roots != oo.roots),
            ("lfts-file", ro.tables != oo.tables),
            ("cn-guid-file", cn(ro) != cn(oo)),
            ("io-guid-file", io(ro) != io(oo)),
            ("guid-routing-order-file", ro.routing_order != oo.routing_order || ro.tuning.order != oo.tuning.order),
            ("port-shifting", ro.tuning.port_shifting != oo.tuning.port_shifting),
            ("scatter-ports", ro.tuning.scatter_ports != oo.tuning.scatter_ports),
            ("max-layers", ro.max_layers != oo.max_layers),
            // Resolved from the lists above against the fabric; a change shows there first.
            ("routing options", ro.hosts != oo.hosts),
        ];
        for (key, changed) in now.iter().chain(&sweep).chain(&reroute) {
            if *changed {
                out.applied.push(key);
            }
        }
        out.reroute = reroute.iter().any(|(_, c)| *c);
        out.sweep = out.reroute || sweep.iter().any(|(_, c)| *c);
        self.cfg = cfg;
        self.apply_now(&old);
        if out.reroute {
            self.force_full_route();
        }
        // A master sweeps now or after the running sweep; the first sweep, running, sweeps again.
        if out.sweep && matches!(self.state, SmState::Master | SmState::Discovering) {
            self.sweep_soon();
        }
        out
    }

    /// Puts in force the options that take effect now (see the module doc), `old` being the
    /// configuration they replace: the SMP window, the SA, the sweep intervals, the performance
    /// manager, the port settings, a standby's priority.
    fn apply_now(&mut self, old: &SmConfig) {
        self.tx.set_limits(self.cfg.max_smps_in_flight, self.cfg.smp_timeout_ns, self.cfg.smp_retries);
        self.programming.set_spread(crate::core::transactions::spread(self.cfg.max_smps_in_flight));
        if self.cfg.sa_rate_limit != old.sa_rate_limit {
            self.sa.set_rate(self.cfg.sa_rate_limit);
        }
        self.sa.set_consolidate_ipv6_snm(self.cfg.consolidate_ipv6_snm);
        self.sa.set_assigned_guid_byte(self.cfg.sm_assigned_guid);
        if self.cfg.sweep_interval_ns != old.sweep_interval_ns && self.phase == SweepPhase::Up {
            self.schedule_light();
        }
        if self.cfg.perf != old.perf {
            self.perf.reconfigure(&self.cfg.perf, self.now, self.state == SmState::Master);
            self.perf_reroute_if_asked();
        }
        if self.cfg.ports != old.ports {
            self.port_settings.forget();
        }
        if self.cfg.resweep_interval_ns != old.resweep_interval_ns {
            self.schedule.interval_changed(self.now, self.cfg.resweep_interval_ns);
        }
        if self.state == SmState::Standby
            && (self.cfg.priority != old.priority || self.cfg.elevated_priority != old.elevated_priority)
            && let Some(m) = self.election.master()
        {
            self.tell_master_if_better(&m);
        }
    }
}

/// Keeps the restart-only options of `cfg` at their running values in `old`; returns the keys
/// of those that differed.
fn keep_restart_only(cfg: &mut SmConfig, old: &SmConfig) -> Vec<&'static str> {
    let mut restart = Vec::new();
    if cfg.lmc != old.lmc {
        restart.push("lmc");
        cfg.lmc = old.lmc;
    }
    if cfg.m_key != old.m_key {
        for (key, differs) in [
            ("m-key", cfg.m_key.mode != old.m_key.mode || cfg.m_key.secret != old.m_key.secret),
            ("m-key-protect", cfg.m_key.protect != old.m_key.protect),
            ("m-key-lease-s", cfg.m_key.lease_s != old.m_key.lease_s),
        ] {
            if differs {
                restart.push(key);
            }
        }
        cfg.m_key = old.m_key;
    }
    restart
}
