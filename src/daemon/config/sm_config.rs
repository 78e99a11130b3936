//! The core configuration a file gives: each key over the built-in default ([`SmConfig`]),
//! including the port settings (PortInfo fields beyond addressing) and the babbling-port policy.
//! The files a configuration names (partitions, keys, topology, QoS policy) are read by
//! `startup`, not here.

use super::{ConfigFile, EngineList, parse_key, parse_mkey_mode, parse_subnet_prefix};
use crate::core::SmConfig;

impl ConfigFile {
    /// The port settings: this file over `d`.
    fn port_config(&self, d: crate::core::PortConfig) -> crate::core::PortConfig {
        crate::core::PortConfig {
            hoq_life: self.head_of_queue_lifetime.unwrap_or(d.hoq_life),
            leaf_hoq_life: self.leaf_head_of_queue_lifetime.unwrap_or(d.leaf_hoq_life),
            vl_stall_count: self.vl_stall_count.unwrap_or(d.vl_stall_count),
            leaf_vl_stall_count: self.leaf_vl_stall_count.unwrap_or(d.leaf_vl_stall_count),
            max_op_vls: self.max_op_vls.unwrap_or(d.max_op_vls),
            local_phy_errors: self.local_phy_errors_threshold.unwrap_or(d.local_phy_errors),
            overrun_errors: self.overrun_errors_threshold.unwrap_or(d.overrun_errors),
            force_link_speed: self.force_link_speed.unwrap_or(d.force_link_speed),
            force_link_speed_ext: self.force_link_speed_ext.unwrap_or(d.force_link_speed_ext),
            force_link_width: self.force_link_width.unwrap_or(d.force_link_width),
        }
    }

    /// The core configuration: this file over the defaults.
    pub fn sm_config(&self) -> SmConfig {
        let d = SmConfig::default();
        SmConfig {
            max_smps_in_flight: self.max_smps_in_flight.unwrap_or(d.max_smps_in_flight),
            smp_timeout_ns: self.smp_timeout_ms.map_or(d.smp_timeout_ns, |ms| ms.saturating_mul(1_000_000)),
            smp_retries: self.smp_retries.unwrap_or(d.smp_retries),
            lmc: self.lmc.unwrap_or(d.lmc),
            subnet_timeout: self.subnet_timeout.unwrap_or(d.subnet_timeout),
            max_rate_enum: self.max_rate_enum.filter(|&v| v != 63).or(d.max_rate_enum),
            switch_life_time: self.switch_life_time.unwrap_or(d.switch_life_time),
            ports: self.port_config(d.ports),
            babbling: crate::core::babbling::BabblingConfig {
                enabled: self.babbling_port_policy.unwrap_or(d.babbling.enabled),
                max_traps: self.babbling_port_traps.unwrap_or(d.babbling.max_traps),
                window_ns: self
                    .babbling_port_window_s
                    .map_or(d.babbling.window_ns, |s| s.saturating_mul(1_000_000_000)),
                backoff_ns: self
                    .babbling_port_backoff_s
                    .map_or(d.babbling.backoff_ns, |s| s.saturating_mul(1_000_000_000)),
            },
            routing_engine: self.routing_engine.as_ref().map_or(d.routing_engine, EngineList::names),
            resweep_interval_ns: match self.resweep_interval_s {
                None => d.resweep_interval_ns,
                Some(0) => None,
                Some(s) => Some(s.saturating_mul(1_000_000_000)),
            },
            sweep_interval_ns: match self.sweep_interval_s {
                None => d.sweep_interval_ns,
                Some(0) => None,
                Some(s) => Some(s.saturating_mul(1_000_000_000)),
            },
            subnet_prefix: self
                .subnet_prefix
                .as_deref()
                .and_then(|p| parse_subnet_prefix(p).ok())
                .unwrap_or(d.subnet_prefix),
            priority: self.priority.unwrap_or(d.priority),
            sm_key: d.sm_key,
            sa_rate_limit: self.sa_rate_limit.unwrap_or(d.sa_rate_limit),
            consolidate_ipv6_snm: self.consolidate_ipv6_snm.unwrap_or(d.consolidate_ipv6_snm),
            sm_assigned_guid: self.sm_assigned_guid.unwrap_or(d.sm_assigned_guid),
            sa_key: self.sa_key.as_deref().and_then(|k| parse_key(k).ok()).unwrap_or(d.sa_key),
            partitions: d.partitions,
            // Read by `startup`, which reads the policy file the configuration names.
            qos: d.qos,
            part_enforce: self
                .part_enforce
                .as_deref()
                .and_then(crate::core::PartEnforce::parse)
                .unwrap_or(d.part_enforce),
            allow_both_pkeys: self.allow_both_pkeys.unwrap_or(d.allow_both_pkeys),
            use_optimized_slvl: self.use_optimized_slvl.unwrap_or(d.use_optimized_slvl),
            m_key: crate::core::mkeys::MKeyConfig {
                mode: self.m_key.as_deref().and_then(|m| parse_mkey_mode(m).ok()).unwrap_or(d.m_key.mode),
                protect: self.m_key_protect.unwrap_or(d.m_key.protect),
                lease_s: self.m_key_lease_s.unwrap_or(d.m_key.lease_s),
                secret: d.m_key.secret,
            },
            elevated_priority: self.elevated_priority.or(d.elevated_priority),
            sm_poll_interval_ns: self
                .sm_poll_interval_ms
                .map_or(d.sm_poll_interval_ns, |ms| ms.saturating_mul(1_000_000)),
            sm_poll_retries: self.sm_poll_retries.unwrap_or(d.sm_poll_retries),
            sm_act_stall_ns: self.sm_act_stall_s.map_or(d.sm_act_stall_ns, |s| s.saturating_mul(1_000_000_000)),
            // Read by `startup`, which reads the files the configuration names.
            expected_topology: d.expected_topology,
            routing_options: d.routing_options,
            node_names: d.node_names,
            tid_key: d.tid_key,
            refuse_miscabled: self.refuse_miscabled.unwrap_or(d.refuse_miscabled),
            perf: crate::core::perf::PerfConfig {
                interval_ns: self.perf_interval_s.map_or(d.perf.interval_ns, |s| s.saturating_mul(1_000_000_000)),
                export: self
                    .perf_metrics_ports
                    .as_deref()
                    .and_then(crate::core::perf::PortExport::parse)
                    .unwrap_or(d.perf.export),
                history: self.perf_history_s.map_or(d.perf.history, |s| {
                    let interval_s = self.perf_interval_s.unwrap_or(d.perf.interval_ns / 1_000_000_000).max(1);
                    usize::try_from(s.div_ceil(interval_s)).unwrap_or(usize::MAX).max(1)
                }),
                avoid: self
                    .perf_avoid_unhealthy
                    .map_or(d.perf.avoid, |on| on.then(crate::core::perf::avoid::AvoidPolicy::default)),
                ..d.perf
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::ConfigFile;
    use super::*;

    #[test]
    fn sample_config_parses_and_matches_the_defaults() {
        let text = include_str!("../../../examples/ibsm.toml");
        let cfg = ConfigFile::parse(text, "examples/ibsm.toml").expect("sample parses");
        assert_eq!(cfg.sm_config(), SmConfig::default(), "the sample documents the defaults");
    }

    #[test]
    fn port_settings_layer_over_opensms_defaults_and_refuse_what_opensm_refuses() {
        let d = ConfigFile::default().sm_config().ports;
        assert_eq!(d, crate::core::PortConfig::default());
        assert_eq!(
            (d.hoq_life, d.leaf_hoq_life, d.vl_stall_count, d.leaf_vl_stall_count, d.max_op_vls),
            (0x12, 0x10, 7, 7, 5)
        );
        assert_eq!((d.local_phy_errors, d.overrun_errors), (8, 8));
        assert_eq!((d.force_link_speed, d.force_link_speed_ext, d.force_link_width), (15, 31, 255));
        let text = "vl-stall-count = 3\nleaf-vl-stall-count = 5\nmax-op-vls = 2\nlocal-phy-errors-threshold = 4\n\
                    overrun-errors-threshold = 6\nforce-link-speed = 5\nforce-link-speed-ext = 30\nforce-link-width = 2\n";
        let p = ConfigFile::parse(text, "p.toml").expect("valid").sm_config().ports;
        assert_eq!(
            (p.vl_stall_count, p.leaf_vl_stall_count, p.max_op_vls, p.local_phy_errors, p.overrun_errors),
            (3, 5, 2, 4, 6)
        );
        assert_eq!((p.force_link_speed, p.force_link_speed_ext, p.force_link_width, p.hoq_life), (5, 30, 2, 0x12));
        for (text, key) in [
            ("force-link-speed = 8", "force-link-speed"),
            ("force-link-speed-ext = 16", "force-link-speed-ext"),
            ("force-link-width = 32", "force-link-width"),
            ("vl-stall-count = 8", "vl-stall-count"),
            ("max-op-vls = 0", "max-op-vls"),
            ("overrun-errors-threshold = 16", "overrun-errors-threshold"),
        ] {
            let e = ConfigFile::parse(text, "n.toml").expect_err(text);
            assert!(e.reason.starts_with(&format!("{key}: ")), "{e}");
        }
        let b = ConfigFile::parse(
            "babbling-port-policy = true\nbabbling-port-traps = 10\nbabbling-port-window-s = 2\nbabbling-port-backoff-s = 30\n",
            "b.toml",
        )
        .expect("valid")
        .sm_config()
        .babbling;
        assert_eq!((b.enabled, b.max_traps, b.window_ns, b.backoff_ns), (true, 10, 2_000_000_000, 30_000_000_000));
        assert!(!ConfigFile::default().sm_config().babbling.enabled, "off by default");
        assert!(ConfigFile::parse("babbling-port-traps = 0", "b.toml").is_err());
        for ok in
            ["force-link-speed = 15", "force-link-speed-ext = 31", "force-link-width = 255", "force-link-width = 0"]
        {
            assert!(ConfigFile::parse(ok, "ok.toml").is_ok(), "{ok}");
        }
    }

    #[test]
    fn overrides_apply() {
        let cfg = ConfigFile::parse("lmc = 2\nsmp-timeout-ms = 50\nresweep-interval-s = 0\n", "x").expect("ok");
        let sm = cfg.sm_config();
        assert_eq!((sm.lmc, sm.smp_timeout_ns, sm.resweep_interval_ns), (2, 50_000_000, None));
    }
}
