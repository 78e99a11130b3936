//! The running SM's configuration and where it comes from: the config file, the `IBSM_*`
//! environment, the command-line flags over both, and the files they name (the partition
//! policy, the SM_Key file, the M_Key secret, the node name map). `ibsm run` builds it once at start, and the
//! transport builds it again on every reload (SIGHUP, `ibsm reload`: [`reload`], shared by the
//! umad and simulated transports), from the same sources, so a flag given at start still wins
//! after a reload.

use std::path::{Path, PathBuf};

use crate::core::{Sm, SmConfig};
use crate::daemon::config::ConfigFile;

/// What `ibsm run` was started with: the config file and the flags that override it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sources {
    /// `--config`.
    pub config: Option<PathBuf>,
    /// `--lmc`.
    pub lmc: Option<u8>,
    /// `--routing-engine` (comma-separated).
    pub routing_engine: Option<String>,
    /// `--partitions`.
    pub partitions: Option<PathBuf>,
    /// `--priority`.
    pub priority: Option<u8>,
    /// `--sm-key-file`.
    pub sm_key_file: Option<PathBuf>,
    /// `--state-dir`.
    pub state_dir: Option<PathBuf>,
    /// `--qos-policy`.
    pub qos_policy: Option<PathBuf>,
    /// `--node-name-map`.
    pub node_name_map: Option<PathBuf>,
}

/// A configuration built from [`Sources`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Built {
    /// The core's configuration.
    pub cfg: SmConfig,
    /// The file (with the environment over it) as read.
    pub file: ConfigFile,
    /// The partition policy file in force, if any.
    pub partitions: Option<PathBuf>,
    /// The QoS policy file in force, if any (QoS is on with one).
    pub qos_policy: Option<PathBuf>,
    /// The node name map in force, if any.
    pub node_name_map: Option<PathBuf>,
    /// The state directory in force, if any (created).
    pub state_dir: Option<PathBuf>,
}

impl Built {
    /// What it names that only a restart can change: (config key, the value in force).
    pub fn restart_only(&self) -> [(&'static str, Option<&Path>); 2] {
        [("state-dir", self.state_dir.as_deref()), ("guid2mkey", self.file.guid2mkey.as_deref())]
    }
}

impl Sources {
    /// The state directory these sources name (`--state-dir`, else the config file's
    /// `state-dir`), without building the rest: `ibsm run` locks it before anything in it is
    /// read. A config file that cannot be read names none here; [`Sources::build`] reports it.
    pub fn state_dir(&self) -> Option<PathBuf> {
        self.state_dir
            .clone()
            .or_else(|| ConfigFile::load_layered(self.config.as_deref()).ok().and_then(|(c, _)| c.state_dir))
    }

    /// Reads every source and builds the configuration; nothing half-read is returned.
    ///
    /// # Errors
    /// Every problem found, one line each, naming the file, line and reason where there is one.
    pub fn build(&self) -> Result<Built, Vec<String>> {
        let file = ConfigFile::load_layered(self.config.as_deref())
            .map(|(c, _)| c)
            .map_err(|errors| errors.iter().map(ToString::to_string).collect::<Vec<_>>())?;
        let mut cfg = file.sm_config();
        let mut errors = Vec::new();
        if let Some(l) = self.lmc {
            if l > 7 {
                errors.push(format!("--lmc must be 0..=7, found {l}"));
            }
            cfg.lmc = l;
        }
        if let Some(e) = &self.routing_engine {
            let names: Vec<String> = e.split(',').map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect();
            if let Err(err) = ibsm_routing::chain::Chain::from_names(&names) {
                errors.push(format!("--routing-engine: {err}"));
            }
            cfg.routing_engine = names;
        }
        if let Some(p) = self.priority {
            cfg.priority = p;
        }
        let partitions = self.partitions.clone().or_else(|| file.partitions.clone());
        if let Some(path) = &partitions {
            match crate::daemon::partition_policy::load(path) {
                Ok((policy, _, warnings)) => {
                    for w in &warnings {
                        tracing::warn!(error_id = "partition-warning", "partition policy: {w}");
                    }
                    cfg.partitions = policy;
                }
                Err(e) => errors.push(format!("partition policy refused, nothing applied:\n{e}")),
            }
        }
        let qos_policy = self.qos_policy.clone().or_else(|| file.qos_policy_file.clone());
        if let Some(path) = &qos_policy {
            match load_qos_policy(path) {
                Ok(policy) => {
                    let options = file.qos.clone().unwrap_or_default();
                    cfg.qos = Some(crate::core::QosSetting { options, policy });
                }
                Err(e) => errors.push(format!("QoS policy refused, nothing applied: {e}")),
            }
        } else if let Some(options) = file.qos.clone() {
            // The `[qos]` options alone turn QoS on with no policy (OpenSM's `qos TRUE` without a
            // policy file): the tables from the options, paths on their partition's `sl=`.
            cfg.qos = Some(crate::core::QosSetting { options, policy: ibsm_qos::QosPolicy::default() });
        }
        if let Some(path) = &file.expected_topology {
            match ibsm_topology::Topology::load(path) {
                Ok(t) => cfg.expected_topology = Some(std::sync::Arc::new(t)),
                Err(e) => errors.push(format!("expected-topology: {e}")),
            }
        }
        routing_files(&file, &mut cfg.routing_options, &mut errors);
        let node_name_map = self.node_name_map.clone().or_else(|| file.node_name_map.clone());
        if let Some(path) = &node_name_map {
            match crate::opensm::node_name_map::NameMap::load(path) {
                Ok(map) => cfg.node_names = map.into_node_names(),
                Err(e) => errors.push(format!("node-name-map: {e}")),
            }
        }
        if let Some(path) = &file.lfts_file {
            match crate::opensm::lfts_dump::load_tables(path) {
                Ok(t) => cfg.routing_options.tables = Some(std::sync::Arc::new(t)),
                Err(e) => errors.push(format!("lfts-file: {e}")),
            }
        }
        for (flag, path) in
            [("--state-dir", &self.state_dir), ("--partitions", &self.partitions), ("--qos-policy", &self.qos_policy)]
                .into_iter()
                .chain([("--node-name-map", &self.node_name_map)])
        {
            if path.as_ref().is_some_and(|p| p.as_os_str().is_empty()) {
                errors.push(format!("{flag}: an empty path; give a non-empty one"));
            }
        }
        let state_dir = self.state_dir.clone().or_else(|| file.state_dir.clone());
        if let Some(d) = &state_dir
            && let Err(e) = std::fs::create_dir_all(d)
        {
            errors.push(format!("state directory {}: {e}", d.display()));
        }
        if let Some(path) = self.sm_key_file.as_ref().or(file.sm_key_file.as_ref()) {
            match crate::daemon::state::load_sm_key(path) {
                Ok(k) => cfg.sm_key = k,
                Err(e) => errors.push(e.to_string()),
            }
        }
        if errors.is_empty()
            && cfg.m_key.mode == crate::core::mkeys::MKeyMode::PerPort
            && let Err(e) = mkey_secret(&mut cfg, state_dir.as_deref())
        {
            errors.push(e);
        }
        if errors.is_empty() {
            Ok(Built { cfg, file, partitions, qos_policy, node_name_map, state_dir })
        } else {
            Err(errors)
        }
    }
}

/// The routing engines' options from the config file: the files they read (root switches,
/// compute and I/O nodes, the routing order) and the ftree tuning. A file that does not load is
/// an error in `errors`.
fn routing_files(file: &ConfigFile, opts: &mut ibsm_routing::EngineOptions, errors: &mut Vec<String>) {
    if let Some(path) = &file.root_guid_file {
        match crate::opensm::guid_file::load(path) {
            Ok(roots) => opts.roots = roots,
            Err(e) => errors.push(format!("root-guid-file: {e}")),
        }
    }
    if file.cn_guid_file.is_some() || file.io_guid_file.is_some() {
        let mut lists = ibsm_routing::ftree::hosts::HostLists::default();
        for (key, path) in [("cn-guid-file", &file.cn_guid_file), ("io-guid-file", &file.io_guid_file)] {
            let Some(path) = path else { continue };
            match crate::opensm::guid_file::load(path) {
                Ok(g) if key == "cn-guid-file" => lists.compute = Some(g),
                Ok(g) => lists.io = g,
                Err(e) => errors.push(format!("{key}: {e}")),
            }
        }
        opts.host_lists = Some(std::sync::Arc::new(lists));
    }
    if let Some(path) = &file.guid_routing_order_file {
        match crate::opensm::guid_file::load(path) {
            Ok(order) => opts.routing_order = Some(std::sync::Arc::new(order)),
            Err(e) => errors.push(format!("guid-routing-order-file: {e}")),
        }
    }
    opts.tuning.port_shifting = file.port_shifting.unwrap_or(false);
    opts.tuning.scatter_ports = file.scatter_ports.map_or(0, u64::from);
    opts.max_layers = file.max_layers;
}

/// Reads and parses a qos-policy.conf; the error is `FILE:LINE: reason`.
///
/// # Errors
/// The file cannot be read, or its first error.
pub fn load_qos_policy(path: &Path) -> Result<ibsm_qos::QosPolicy, String> {
    let text = ibsm_topology::file::read_text(path, crate::daemon::config::CONFIG_LIMIT)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    ibsm_qos::parse_qos_policy(&text).map_err(|e| format!("{}:{e}", path.display()))
}

/// SIGHUP or `reload` on the control socket, on any transport: reads the configuration and the
/// partition policy again from the sources the SM started with (`from`: the sources and what
/// they gave at start; flags still win). A valid one is put in force where it differs
/// ([`Sm::reconfigure`]: at once, with a sweep the core schedules, or with a full re-route;
/// options only a restart changes are kept and named); an invalid one is refused with every
/// error and the running configuration stays. Each outcome is logged.
///
/// # Errors
/// Why nothing was reloaded: no file to read again, or every error of the refused one.
pub fn reload(sm: &mut Sm, from: Option<&(Sources, Built)>) -> Result<crate::daemon::control::Reloaded, String> {
    let Some((sources, started)) = from else {
        let why = "no configuration to reload";
        tracing::warn!(error_id = "reload-no-file", "reload: {why}");
        return Err(why.to_owned());
    };
    if sources.config.is_none()
        && started.partitions.is_none()
        && started.qos_policy.is_none()
        && started.node_name_map.is_none()
    {
        let why = "no configuration file or policy file to reload (start with --config, --partitions, --qos-policy or \
                   --node-name-map)";
        tracing::warn!(error_id = "reload-no-file", "reload: {why}");
        return Err(why.to_owned());
    }
    let built = match sources.build() {
        Ok(b) => b,
        Err(errors) => {
            let errors = errors.join("\n");
            tracing::error!(error_id = "config-refused", errors = %errors, "configuration refused; the running one stays");
            return Err(format!("configuration refused; the running one stays:\n{errors}"));
        }
    };
    let mut done = sm.reconfigure(built.cfg.clone());
    crate::daemon::node_names::set(&built.cfg.node_names);
    for ((key, now), (_, then)) in built.restart_only().into_iter().zip(started.restart_only()) {
        if now != then {
            done.restart.push(key);
        }
    }
    let files = [sources.config.as_ref(), built.partitions.as_ref(), built.qos_policy.as_ref()];
    let reloaded = files
        .into_iter()
        .chain([built.node_name_map.as_ref()])
        .flatten()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    tracing::warn!(
        error_id = "config-reloaded",
        files = %reloaded,
        applied = %done.applied.join(","),
        restart = %done.restart.join(","),
        sweep = done.sweep,
        reroute = done.reroute,
        "configuration reloaded"
    );
    Ok(crate::daemon::control::Reloaded {
        reloaded,
        applied: done.applied.iter().map(|s| (*s).to_owned()).collect(),
        restart: done.restart.iter().map(|s| (*s).to_owned()).collect(),
        sweep: done.sweep,
        reroute: done.reroute,
    })
}

/// Per-port M_Keys derive from a secret kept in the state directory.
fn mkey_secret(cfg: &mut SmConfig, state_dir: Option<&Path>) -> Result<(), String> {
    let dir =
        state_dir.ok_or("m-key = \"per-port\" needs a state directory (state-dir or --state-dir) for its secret")?;
    cfg.m_key.secret = crate::daemon::state::load_or_create_mkey_secret(dir).map_err(|e| e.to_string())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).expect("write");
        p
    }

    #[test]
    fn a_node_name_map_names_nodes_and_a_bad_one_is_refused_at_its_line() {
        let dir = std::env::temp_dir().join(format!("ibsm-startup-nnm-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let map = write(&dir, "map", "0x2c90000000001 \"rack1 leaf\"\n");
        let b = Sources { node_name_map: Some(map.clone()), ..Sources::default() }.build().expect("valid");
        assert_eq!(b.cfg.node_names.get(ibsm_mad::Guid(0x2_c900_0000_0001)), Some("rack1 leaf"));
        assert_eq!(b.node_name_map.as_deref(), Some(map.as_path()));
        // From the file, and refused there with the map's file and line.
        let bad = write(&dir, "bad", "0x1 a\nspine\n");
        let conf = write(&dir, "c.toml", &format!("node-name-map = {:?}\n", bad.to_str().expect("utf-8")));
        let errors = Sources { config: Some(conf), ..Sources::default() }.build().expect_err("a bad line");
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].starts_with(&format!("node-name-map: {}:2: ", bad.display())), "{errors:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn flags_win_over_the_file_and_every_error_is_listed() {
        let dir = std::env::temp_dir().join(format!("ibsm-startup-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let conf = write(&dir, "a.toml", "priority = 3\nrouting-engine = \"minhop\"\nsa-rate-limit = 7\n");
        let src = Sources { config: Some(conf.clone()), priority: Some(9), ..Sources::default() };
        let b = src.build().expect("valid");
        assert_eq!(
            (b.cfg.priority, b.cfg.routing_engine.clone(), b.cfg.sa_rate_limit),
            (9, vec!["minhop".to_owned()], 7)
        );
        let bad_policy = write(&dir, "p.conf", "Default=0x7fff : ALL=full ;\nbroken line\n");
        let src = Sources {
            config: Some(conf),
            lmc: Some(9),
            routing_engine: Some("nope".into()),
            partitions: Some(bad_policy),
            ..Sources::default()
        };
        let errors = src.build().expect_err("three problems");
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert!(errors[0].contains("--lmc") && errors[1].contains("--routing-engine"), "{errors:?}");
        assert!(errors[2].contains("p.conf:2"), "{errors:?}");
        let bad_file = write(&dir, "b.toml", "priority = 3\nno-such-key = 1\n");
        let errors = Sources { config: Some(bad_file), ..Sources::default() }.build().expect_err("unknown key");
        assert!(errors[0].contains("b.toml:2"), "{errors:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn max_layers_reaches_the_engines_and_is_refused_out_of_range_at_its_line() {
        let dir = std::env::temp_dir().join(format!("ibsm-startup-layers-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let conf = write(&dir, "l.toml", "routing-engine = \"nue\"\nmax-layers = 1\n");
        let b = Sources { config: Some(conf), ..Sources::default() }.build().expect("valid");
        assert_eq!(b.cfg.routing_options.max_layers, Some(1));
        assert_eq!(Sources::default().build().expect("valid").cfg.routing_options.max_layers, None, "the fabric's VLs");
        let bad = write(&dir, "bad.toml", "priority = 3\nmax-layers = 16\n");
        let errors = Sources { config: Some(bad), ..Sources::default() }.build().expect_err("16 layers");
        assert!(errors[0].contains("bad.toml:2") && errors[0].contains("max-layers"), "{errors:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_qos_policy_turns_qos_on_and_a_bad_one_is_refused_with_file_and_line() {
        let dir = std::env::temp_dir().join(format!("ibsm-startup-qos-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let policy = write(&dir, "qos-policy.conf", "qos-ulps\n default : 0\n sdp : 3\nend-qos-ulps\n");
        let conf = write(&dir, "q.toml", &format!("qos-policy-file = {policy:?}\n[qos.ca]\nhigh-limit = 6\n"));
        let b = Sources { config: Some(conf), ..Sources::default() }.build().expect("valid");
        let q = b.cfg.qos.expect("QoS on");
        assert_eq!(q.policy.ulps.len(), 2);
        assert_eq!(q.options.ca.and_then(|c| c.high_limit), Some(6));
        assert_eq!(Sources::default().build().expect("valid").cfg.qos, None, "no policy, QoS off");
        // The [qos] table alone (OpenSM's `qos TRUE` without a policy file): on, no policy.
        let alone = write(
            &dir,
            "alone.toml",
            "[qos]
max-vls = 4
",
        );
        let q = Sources { config: Some(alone), ..Sources::default() }.build().expect("valid").cfg.qos;
        let q = q.expect("QoS on from the options alone");
        assert_eq!((q.options.max_vls, q.policy), (Some(4), ibsm_qos::QosPolicy::default()));
        let bad = write(&dir, "bad.conf", "qos-ulps\n default : 0\n nfs : 1\nend-qos-ulps\n");
        let errors = Sources { qos_policy: Some(bad), ..Sources::default() }.build().expect_err("unknown ULP");
        assert!(errors[0].contains("bad.conf:3: unknown ULP \"nfs\""), "{errors:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
