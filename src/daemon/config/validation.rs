//! The range checks of a configuration that the types alone do not express: each value out of
//! range, each empty path, each word that names nothing, each pair of keys that cannot go
//! together, as (key, reason) with the reason naming what was found and what is allowed.
//! [`ConfigFile::check`] places each at its line or environment variable.

use super::{ConfigFile, allowed, parse_key, parse_mkey_mode, parse_subnet_prefix};

/// A problem with `key`: what was found, then what is allowed ([`allowed`]).
fn bad(key: &'static str, found: impl std::fmt::Display) -> (&'static str, String) {
    (key, format!("{found}; allowed: {}", allowed(key)))
}

impl ConfigFile {
    /// Range checks that the types alone do not express: (key, reason) for each, the reason
    /// naming what was found and what is allowed ([`allowed`]).
    pub(super) fn problems(&self) -> Vec<(&'static str, String)> {
        let mut out: Vec<(&'static str, String)> = Vec::new();
        let ranges: [(&'static str, Option<u64>, u64, u64); 27] = [
            ("max-smps-in-flight", self.max_smps_in_flight.map(|v| v as u64), 1, 65_536),
            ("smp-timeout-ms", self.smp_timeout_ms, 1, 60_000),
            ("smp-retries", self.smp_retries.map(u64::from), 0, 100),
            ("lmc", self.lmc.map(u64::from), 0, 7),
            ("subnet-timeout", self.subnet_timeout.map(u64::from), 0, 31),
            ("switch-life-time", self.switch_life_time.map(u64::from), 0, 31),
            ("head-of-queue-lifetime", self.head_of_queue_lifetime.map(u64::from), 0, 31),
            ("leaf-head-of-queue-lifetime", self.leaf_head_of_queue_lifetime.map(u64::from), 0, 31),
            ("vl-stall-count", self.vl_stall_count.map(u64::from), 0, 7),
            ("leaf-vl-stall-count", self.leaf_vl_stall_count.map(u64::from), 0, 7),
            ("max-op-vls", self.max_op_vls.map(u64::from), 1, 15),
            ("max-layers", self.max_layers.map(u64::from), 1, 15),
            ("local-phy-errors-threshold", self.local_phy_errors_threshold.map(u64::from), 0, 15),
            ("overrun-errors-threshold", self.overrun_errors_threshold.map(u64::from), 0, 15),
            ("babbling-port-traps", self.babbling_port_traps.map(u64::from), 1, 1_000_000),
            ("babbling-port-window-s", self.babbling_port_window_s, 1, 86_400),
            ("babbling-port-backoff-s", self.babbling_port_backoff_s, 1, 604_800),
            ("resweep-interval-s", self.resweep_interval_s, 0, 86_400),
            ("sweep-interval-s", self.sweep_interval_s, 0, 86_400),
            ("perf-interval-s", self.perf_interval_s, 0, 86_400),
            ("perf-history-s", self.perf_history_s, 1, 86_400),
            ("priority", self.priority.map(u64::from), 0, 15),
            ("elevated-priority", self.elevated_priority.map(u64::from), 0, 15),
            ("sm-poll-interval-ms", self.sm_poll_interval_ms, 1, 3_600_000),
            ("sm-poll-retries", self.sm_poll_retries.map(u64::from), 1, 100),
            ("sm-act-stall-s", self.sm_act_stall_s, 1, 86_400),
            ("m-key-protect", self.m_key_protect.map(u64::from), 0, 3),
        ];
        for (key, value, lo, hi) in ranges {
            if let Some(v) = value.filter(|v| !(lo..=hi).contains(v)) {
                out.push((key, format!("must be {lo}..={hi}, found {v}")));
            }
        }
        out.extend(self.forced_link_problems());
        if let Some(v) = self.max_rate_enum.filter(|&v| !(2..=24).contains(&v) && v != 63) {
            out.push(bad("max-rate-enum", format!("{v} is not a rate code")));
        }
        out.extend(self.empty_paths());
        if let Some(e) = &self.perf_metrics_ports
            && crate::core::perf::PortExport::parse(e).is_none()
        {
            out.push(bad("perf-metrics-ports", format!("{e:?} is not one of them")));
        }
        if let Some(e) = &self.part_enforce
            && crate::core::PartEnforce::parse(e).is_none()
        {
            out.push(bad("part-enforce", format!("{e:?} is not one of them")));
        }
        if let Some(m) = &self.m_key
            && let Err(r) = parse_mkey_mode(m)
        {
            out.push(bad("m-key", r));
        }
        let resweep = self.resweep_interval_s.unwrap_or(10);
        if let Some(l) = self.m_key_lease_s.filter(|&l| l != 0 && u64::from(l) <= resweep) {
            out.push((
                "m-key-lease-s",
                format!(
                    "{l} s is not longer than the re-sweep interval ({resweep} s); a port would drop its protection between sweeps"
                ),
            ));
        }
        if let Some(k) = &self.sa_key
            && let Err(r) = parse_key(k)
        {
            out.push(bad("sa-key", r));
        }
        if let Some(p) = &self.subnet_prefix
            && let Err(r) = parse_subnet_prefix(p)
        {
            out.push(bad("subnet-prefix", r));
        }
        out.extend(self.policy_problems());
        out
    }

    /// Path keys given as an empty string.
    fn empty_paths(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        for (key, path) in [
            ("state-dir", &self.state_dir),
            ("partitions", &self.partitions),
            ("sm-key-file", &self.sm_key_file),
            ("guid2mkey", &self.guid2mkey),
            ("expected-topology", &self.expected_topology),
            ("root-guid-file", &self.root_guid_file),
            ("lfts-file", &self.lfts_file),
            ("cn-guid-file", &self.cn_guid_file),
            ("io-guid-file", &self.io_guid_file),
            ("guid-routing-order-file", &self.guid_routing_order_file),
            ("node-name-map", &self.node_name_map),
            ("qos-policy-file", &self.qos_policy_file),
        ] {
            if path.as_ref().is_some_and(|p| p.as_os_str().is_empty()) {
                out.push(bad(key, "an empty path".to_owned()));
            }
        }
        out
    }

    /// The QoS options, a refusal that needs its plan, the routing engines named.
    fn policy_problems(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if let Some(Err(e)) = self.qos.as_ref().map(ibsm_qos::QosOptions::validate) {
            out.push(("qos", e.to_string()));
        }
        if self.refuse_miscabled == Some(true) && self.expected_topology.is_none() {
            out.push((
                "refuse-miscabled",
                "needs expected-topology (the plan the cables are checked against)".to_owned(),
            ));
        }
        if let Some(list) = &self.routing_engine {
            let names = list.names();
            if names.is_empty() {
                out.push(bad("routing-engine", "an empty list".to_owned()));
            }
            for e in names {
                if ibsm_routing::engine_by_name(&e).is_none() || e.contains(',') {
                    out.push(bad("routing-engine", format!("unknown engine {e:?}")));
                }
            }
        }
        out
    }

    /// `force-link-*` values OpenSM does not accept (ranges with holes).
    fn forced_link_problems(&self) -> Vec<(&'static str, String)> {
        use crate::core::PortConfig;
        let mut out = Vec::new();
        for (key, value, valid) in [
            ("force-link-speed", self.force_link_speed, PortConfig::valid_speed as fn(u8) -> bool),
            ("force-link-speed-ext", self.force_link_speed_ext, PortConfig::valid_speed_ext),
            ("force-link-width", self.force_link_width, PortConfig::valid_width),
        ] {
            if let Some(v) = value.filter(|&v| !valid(v)) {
                out.push((key, format!("{v} is not one of them; allowed: {}", allowed(key))));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ConfigFile, KEYS};
    use super::*;

    /// Issue 22: values that parsed but could not work are refused at `config check`, each with
    /// its key and what is allowed.
    #[test]
    fn every_value_is_checked_with_its_key_and_the_allowed_values() {
        let e = ConfigFile::parse("routing-engine = 5\n", "r.toml").expect_err("not a name");
        assert!(e.to_string().starts_with("r.toml:1:1: routing-engine: invalid type: integer `5`"), "{e}");
        assert!(!e.reason.contains("untagged") && e.reason.contains("ftree, updn, minhop"), "{e}");
        let e = ConfigFile::parse("routing-engine = [\"updn\", 3]\n", "r.toml").expect_err("not names");
        assert!(e.reason.starts_with("routing-engine: ") && e.reason.contains("allowed: an engine name"), "{e}");
        let e = ConfigFile::parse("smp-timeout-ms = 0\n", "t.toml").expect_err("every SMP would time out");
        assert_eq!(e.to_string(), "t.toml:1:1: smp-timeout-ms: must be 1..=60000, found 0");
        let e = ConfigFile::parse("lmc = 0\nstate-dir = \"\"\n", "s.toml").expect_err("empty path");
        assert_eq!(
            e.to_string(),
            "s.toml:2:1: state-dir: an empty path; allowed: a non-empty directory path (a string)"
        );
        for key in [
            "partitions",
            "sm-key-file",
            "guid2mkey",
            "expected-topology",
            "root-guid-file",
            "lfts-file",
            "cn-guid-file",
            "io-guid-file",
            "guid-routing-order-file",
            "qos-policy-file",
        ] {
            let e = ConfigFile::parse(&format!("{key} = \"\"\n"), "p.toml").expect_err("empty path");
            assert!(e.reason.starts_with(&format!("{key}: an empty path; allowed: a non-empty file path")), "{e}");
        }
        for (text, key) in [
            ("sm-poll-interval-ms = 0", "sm-poll-interval-ms"),
            ("sm-act-stall-s = 0", "sm-act-stall-s"),
            ("smp-retries = 1000", "smp-retries"),
            ("max-smps-in-flight = 0", "max-smps-in-flight"),
            ("sweep-interval-s = 100000000", "sweep-interval-s"),
        ] {
            let e = ConfigFile::parse(text, "n.toml").expect_err(text);
            assert!(e.reason.starts_with(&format!("{key}: must be ")), "{e}");
        }
        let e = ConfigFile::parse("part-enforce = \"yes\"\n", "e.toml").expect_err("word");
        assert!(e.reason.contains(r#"allowed: one of "both", "in", "out", "off""#), "{e}");
        // Every key has words for what it allows.
        assert!(KEYS.iter().all(|k| !allowed(k).is_empty()));
        // The boundaries themselves pass.
        let ok = "smp-timeout-ms = 1\nsm-act-stall-s = 1\nsmp-retries = 100\nsweep-interval-s = 0\n";
        assert!(ConfigFile::parse(ok, "ok.toml").is_ok());
    }

    #[test]
    fn qos_options_are_checked_with_the_option_named() {
        let e = ConfigFile::parse("[qos.swe]\nsl2vl = \"0,1\"\n", "q.toml").expect_err("15 VLs missing");
        assert!(e.reason.starts_with("qos: qos.swe.sl2vl: expected 16 VLs"), "{e}");
        let e = ConfigFile::parse("qos = { colour = 1 }\n", "q.toml").expect_err("unknown option");
        assert!(e.reason.contains("unknown field `colour`"), "{e}");
        let ok =
            ConfigFile::parse("qos-policy-file = \"/q\"\n[qos]\nmax-vls = 8\n[qos.ca]\nhigh-limit = 6\n", "q.toml")
                .expect("valid");
        let ca = ok.qos.expect("qos").config(ibsm_qos::PortClass::Ca).expect("valid");
        assert_eq!((ca.max_vls, ca.high_limit), (8, 6));
    }

    #[test]
    fn m_key_settings_parse_and_bad_ones_are_named() {
        use crate::core::mkeys::MKeyMode;
        let cfg = ConfigFile::parse("m-key = \"per-port\"\nm-key-protect = 2\nm-key-lease-s = 30\n", "m").expect("ok");
        let k = cfg.sm_config().m_key;
        assert_eq!((k.mode, k.protect, k.lease_s), (MKeyMode::PerPort, 2, 30));
        let cfg = ConfigFile::parse("m-key = \"0x00000000000000ab\"\n", "m").expect("ok");
        assert_eq!(cfg.sm_config().m_key.mode, MKeyMode::Fixed(0xab));
        let e = ConfigFile::parse("lmc = 0\nm-key = \"secret\"\n", "a.toml").expect_err("mode");
        assert!(e.to_string().starts_with("a.toml:2:1: m-key: "), "{e}");
        assert!(ConfigFile::parse("m-key = \"0x0\"\n", "z").expect_err("zero").reason.contains("off"));
        let e = ConfigFile::parse("m-key-protect = 4\n", "b.toml").expect_err("protect");
        assert_eq!(e.to_string(), "b.toml:1:1: m-key-protect: must be 0..=3, found 4");
        let e = ConfigFile::parse("resweep-interval-s = 30\nm-key-lease-s = 30\n", "c.toml").expect_err("lease");
        assert!(e.to_string().starts_with("c.toml:2:1: m-key-lease-s: 30 s is not longer"), "{e}");
        assert!(ConfigFile::parse("m-key-lease-s = 0\n", "d").is_ok(), "0: never expires");
    }
}
