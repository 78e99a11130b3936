//! The SM's configuration file (TOML, kebab-case keys, unknown keys rejected) and how it layers:
//! command-line flags over the file over built-in defaults.
//!
//! Every key is optional; see `examples/ibsm.toml` for the full list with the defaults.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::core::SmConfig;

/// The configuration file as written by the operator.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ConfigFile {
    /// SMPs in flight at once (default 64).
    pub max_smps_in_flight: Option<usize>,
    /// Time to wait for an SMP's answer before retrying, ms (default 200).
    pub smp_timeout_ms: Option<u64>,
    /// Retries after the first try (default 3).
    pub smp_retries: Option<u32>,
    /// LID mask control 0..=7 (default 0).
    pub lmc: Option<u8>,
    /// PortInfo.SubnetTimeout for end ports (default 18).
    pub subnet_timeout: Option<u8>,
    /// SwitchInfo.LifeTimeValue for switches (default 18).
    pub switch_life_time: Option<u8>,
    /// PortInfo.HOQLife of switch ports cabled to switches (default 0x12 = 18, as OpenSM).
    pub head_of_queue_lifetime: Option<u8>,
    /// PortInfo.HOQLife of switch ports cabled to CAs and routers (default 0x10 = 16, as
    /// OpenSM).
    pub leaf_head_of_queue_lifetime: Option<u8>,
    /// Routing engine, or a list tried in order (default `["ftree", "updn", "minhop"]`).
    pub routing_engine: Option<EngineList>,
    /// Seconds between re-sweeps after an incomplete sweep; 0 = never (default 10).
    pub resweep_interval_s: Option<u64>,
    /// Seconds between light sweeps (every switch's SwitchInfo; a port that changed state
    /// brings a heavy sweep); 0 = none (default 10).
    pub sweep_interval_s: Option<u64>,
    /// Directory for persisted state such as guid2lid (default: none, nothing persisted).
    pub state_dir: Option<PathBuf>,
    /// Subnet prefix for every port's GID: `"0xfe80000000000000"` or `"fe80::"` (default
    /// fe80::/64, as OpenSM). A string because TOML integers are signed 64-bit.
    pub subnet_prefix: Option<String>,
    /// SA requests per second each requesting port may send before it gets BUSY; 0 = no
    /// limit (default 50000).
    pub sa_rate_limit: Option<u32>,
    /// SA key: requests carrying it are trusted. A string (`"0x..."` or decimal), since TOML
    /// integers are signed (default 1, as OpenSM).
    pub sa_key: Option<String>,
    /// Partition policy file (partitions.conf grammar or TOML); default: the default partition
    /// with every port a full member.
    pub partitions: Option<PathBuf>,
    /// Partition enforcement on switch ports facing CAs: `both`, `in`, `out` or `off`
    /// (default `both`, as OpenSM).
    pub part_enforce: Option<String>,
    /// M_Keys: `off`, `per-port` (each port its own key, derived from a secret kept in the
    /// state directory, which is then required) or one key for every port (`"0x..."`,
    /// OpenSM's model). Default `off`, as OpenSM.
    pub m_key: Option<String>,
    /// M_KeyProtectBits 0..=3 set with the keys (default 1: Gets without the key see M_Key 0,
    /// Sets fail; 2 and 3: Gets fail too).
    pub m_key_protect: Option<u8>,
    /// M_KeyLeasePeriod in seconds: how long a port refuses a wrong key before its protection
    /// drops (default 60; 0 = never, so a lost key cannot be recovered). Must exceed
    /// `resweep-interval-s`.
    pub m_key_lease_s: Option<u16>,
    /// OpenSM's `guid2mkey` file: the keys ports hold now (for taking over from OpenSM).
    pub guid2mkey: Option<PathBuf>,
    /// SM priority 0..=15: the higher wins the election, ties go to the lower port GUID
    /// (default 0, as OpenSM).
    pub priority: Option<u8>,
    /// File holding the SM_Key (`0x` and up to 16 hex digits, or decimal; mode 0600): SMs with
    /// the same key obey each other's HANDOVER and friends. Default: no file, key 1 (OpenSM's
    /// default).
    pub sm_key_file: Option<PathBuf>,
    /// The priority a standby takes when it takes over from a dead master, so that the old
    /// master, back, stands by (0..=15; default: none, the better SM gets the subnet back).
    pub elevated_priority: Option<u8>,
    /// A standby polls the master this often, ms (default 200).
    pub sm_poll_interval_ms: Option<u64>,
    /// Unanswered polls in a row after which a standby takes over (default 3).
    pub sm_poll_retries: Option<u32>,
    /// A master whose ActCount does not move for this long is taken for dead, s (default 25).
    pub sm_act_stall_s: Option<u64>,
    /// The planned cabling (a `.net` file, ibnetdiscover format): every sweep compares the
    /// fabric with it and reports the differences (default: none).
    pub expected_topology: Option<PathBuf>,
    /// With `expected-topology`: leave both ends of a miscabled cable unarmed and unrouted
    /// (default false: report only).
    pub refuse_miscabled: Option<bool>,
}

/// The M_Key mode a `m-key` value names.
pub fn parse_mkey_mode(text: &str) -> Result<crate::core::mkeys::MKeyMode, String> {
    use crate::core::mkeys::MKeyMode;
    match text.trim() {
        "off" => Ok(MKeyMode::Off),
        "per-port" => Ok(MKeyMode::PerPort),
        k => match parse_key(k) {
            Ok(0) => Err("0 is no key; use \"off\"".to_owned()),
            Ok(v) => Ok(MKeyMode::Fixed(v)),
            Err(_) => Err(format!("{text:?} is not one of off, per-port, or a 64-bit key")),
        },
    }
}

/// Parses a 64-bit key: `0x` and up to 16 hex digits, or a decimal number.
pub fn parse_key(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let parsed = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => t.parse::<u64>(),
    };
    parsed.map_err(|_| format!("{text:?} is not a 64-bit key (\"0x\" and up to 16 hex digits, or decimal)"))
}

/// Parses a subnet prefix: `0x` and 16 hex digits, or an IPv6 address whose low 64 bits are 0
/// (`fe80::`, `fec0:0:0:1::`).
///
/// # Errors
/// A message saying which forms are accepted.
pub fn parse_subnet_prefix(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let bad = || format!("expected 0x followed by 16 hex digits, or an IPv6 prefix such as fe80::, found {t:?}");
    if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        if hex.is_empty() || hex.len() > 16 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad());
        }
        return u64::from_str_radix(hex, 16).map_err(|_| bad());
    }
    let addr: std::net::Ipv6Addr = t.parse().map_err(|_| bad())?;
    let v = u128::from(addr);
    if v as u64 != 0 {
        return Err(format!("{t:?}: the low 64 bits (the interface id) must be zero in a subnet prefix"));
    }
    Ok((v >> 64) as u64)
}

/// `routing-engine = "updn"` or `routing-engine = ["ftree", "updn", "minhop"]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(untagged)]
pub enum EngineList {
    /// One engine.
    One(String),
    /// A chain, tried in order.
    Chain(Vec<String>),
}

impl EngineList {
    /// The engine names in order.
    pub fn names(&self) -> Vec<String> {
        match self {
            EngineList::One(s) => vec![s.clone()],
            EngineList::Chain(v) => v.clone(),
        }
    }
}

/// A configuration file that could not be used: the file, the line, the column and the reason.
#[derive(Debug, thiserror::Error)]
#[error("{path}:{line}:{col}: {reason}")]
pub struct ConfigError {
    /// The file (or `environment` for an `IBSM_*` variable).
    pub path: String,
    /// 1-based line (0 when the file could not be read at all).
    pub line: usize,
    /// 1-based column.
    pub col: usize,
    /// What is wrong, starting with the key when there is one.
    pub reason: String,
}

/// Every key of the configuration file, in the order `examples/ibsm.toml` documents them.
pub const KEYS: &[&str] = &[
    "max-smps-in-flight",
    "smp-timeout-ms",
    "smp-retries",
    "lmc",
    "subnet-timeout",
    "switch-life-time",
    "head-of-queue-lifetime",
    "leaf-head-of-queue-lifetime",
    "routing-engine",
    "resweep-interval-s",
    "sweep-interval-s",
    "subnet-prefix",
    "sa-rate-limit",
    "sa-key",
    "partitions",
    "part-enforce",
    "priority",
    "sm-key-file",
    "elevated-priority",
    "sm-poll-interval-ms",
    "sm-poll-retries",
    "sm-act-stall-s",
    "m-key",
    "m-key-protect",
    "m-key-lease-s",
    "guid2mkey",
    "state-dir",
    "expected-topology",
    "refuse-miscabled",
];

/// The environment variable that sets `key`: `IBSM_` and the key in capitals with `_`.
pub fn env_name(key: &str) -> String {
    format!("IBSM_{}", key.to_ascii_uppercase().replace('-', "_"))
}

/// 1-based (line, column) of byte offset `at` in `text`.
fn position(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rfind('\n').map_or(before.len(), |nl| before.len() - nl - 1) + 1;
    (line, col)
}

/// 1-based (line, column) where `key` is set in `text` ((1, 1) if not found).
fn key_position(text: &str, key: &str) -> (usize, usize) {
    for (i, l) in text.lines().enumerate() {
        let trimmed = l.trim_start();
        if let Some(rest) = trimmed.strip_prefix(key)
            && rest.trim_start().starts_with('=')
        {
            return (i + 1, l.len() - trimmed.len() + 1);
        }
    }
    (1, 1)
}

/// A checked configuration and where each key's value came from, or every error.
pub type Checked = Result<(ConfigFile, Vec<(&'static str, Source)>), Vec<ConfigError>>;

/// Where each key's value came from, for `ibsm config show`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Its default.
    Default,
    /// The configuration file.
    File,
    /// An `IBSM_*` environment variable.
    Env,
}

impl Source {
    /// The word `config show` prints.
    pub const fn name(self) -> &'static str {
        match self {
            Source::Default => "default",
            Source::File => "file",
            Source::Env => "env",
        }
    }
}

impl ConfigFile {
    /// Parses configuration text; `origin` names it in errors.
    ///
    /// # Errors
    /// [`ConfigError`] with the line of the offending key and the reason.
    pub fn parse(text: &str, origin: &str) -> Result<ConfigFile, ConfigError> {
        Self::check(text, origin, &[]).map(|(c, _)| c).map_err(|mut v| v.remove(0))
    }

    /// Parses configuration text with `env` (`IBSM_*` variables as (name, value)) layered over
    /// it, and finds every error, each with its file, line, column and key. Returns the
    /// configuration and where each key's value came from.
    ///
    /// # Errors
    /// Every error found (never an empty list): a TOML syntax error alone, else each unknown
    /// key (with the valid ones), each value of the wrong type, each value out of range.
    pub fn check(text: &str, origin: &str, env: &[(String, String)]) -> Checked {
        let at =
            |(line, col): (usize, usize), reason: String| ConfigError { path: origin.to_owned(), line, col, reason };
        let mut table: toml::Table = toml::from_str(text).map_err(|e| {
            let pos = e.span().map_or((1, 1), |s| position(text, s.start));
            vec![at(pos, e.message().trim().to_owned())]
        })?;
        let mut errors = Vec::new();
        let mut from_env = Vec::new();
        for (name, value) in env {
            let Some(key) = KEYS.iter().find(|k| env_name(k) == *name) else { continue };
            // A TOML value (`3`, `"x"`, `["a", "b"]`), or else the text as a string.
            let v = toml::from_str::<toml::Table>(&format!("v = {value}"))
                .ok()
                .and_then(|mut t| t.remove("v"))
                .unwrap_or_else(|| toml::Value::String(value.clone()));
            table.insert((*key).to_owned(), v);
            from_env.push(*key);
        }
        let mut bad_keys = Vec::new();
        for (k, v) in &table {
            let mut one = toml::Table::new();
            one.insert(k.clone(), v.clone());
            if let Err(e) = toml::Value::Table(one).try_into::<ConfigFile>() {
                bad_keys.push(k.clone());
                let reason = format!("{k}: {}", e.message().trim());
                if from_env.contains(&k.as_str()) {
                    errors.push(ConfigError {
                        path: "environment".to_owned(),
                        line: 0,
                        col: 0,
                        reason: format!("{}: {reason}", env_name(k)),
                    });
                } else {
                    errors.push(at(key_position(text, k), reason));
                }
            }
        }
        // The range checks run over the keys that parsed, so that one pass reports everything.
        let mut good = table.clone();
        for k in &bad_keys {
            good.remove(k);
        }
        let cfg: ConfigFile = toml::Value::Table(good)
            .try_into()
            .map_err(|e: toml::de::Error| vec![at((1, 1), e.message().trim().to_owned())])?;
        for (k, reason) in cfg.problems() {
            if from_env.contains(&k) {
                let reason = format!("{}: {k}: {reason}", env_name(k));
                errors.push(ConfigError { path: "environment".to_owned(), line: 0, col: 0, reason });
            } else {
                errors.push(at(key_position(text, k), format!("{k}: {reason}")));
            }
        }
        if !errors.is_empty() {
            errors.sort_by(|a, b| (&a.path, a.line, a.col).cmp(&(&b.path, b.line, b.col)));
            return Err(errors);
        }
        let sources = KEYS
            .iter()
            .map(|&k| {
                let src = if from_env.contains(&k) {
                    Source::Env
                } else if table.contains_key(k) {
                    Source::File
                } else {
                    Source::Default
                };
                (k, src)
            })
            .collect();
        Ok((cfg, sources))
    }

    /// The configuration `ibsm run` uses: the file at `path` (if any) with the `IBSM_*`
    /// environment variables over it, and where each key's value came from.
    ///
    /// # Errors
    /// Every error of the file and the environment ([`ConfigFile::check`]).
    pub fn load_layered(path: Option<&Path>) -> Checked {
        let env: Vec<(String, String)> = std::env::vars().filter(|(k, _)| k.starts_with("IBSM_")).collect();
        let Some(path) = path else { return ConfigFile::check("", "environment", &env) };
        let origin = path.display().to_string();
        let text = ibsm_topology::file::read_text(path, crate::state::CONFIG_LIMIT)
            .map_err(|e| vec![ConfigError { path: origin.clone(), line: 0, col: 0, reason: e.to_string() }])?;
        ConfigFile::check(&text, &origin, &env)
    }

    /// The value of each key as `ibsm config show` prints it: what the file or environment set,
    /// else the default `examples/ibsm.toml` documents (`None`: unset by default).
    pub fn shown_values(&self) -> Vec<(&'static str, Option<String>)> {
        let set = toml::Value::try_from(self).ok().and_then(|v| v.as_table().cloned()).unwrap_or_default();
        let defaults: toml::Table = toml::from_str(include_str!("../examples/ibsm.toml")).unwrap_or_default();
        KEYS.iter().map(|&k| (k, set.get(k).or_else(|| defaults.get(k)).map(ToString::to_string))).collect()
    }

    /// Reads and parses a configuration file.
    ///
    /// # Errors
    /// [`ConfigError`] for an unreadable or invalid file.
    pub fn load(path: &Path) -> Result<ConfigFile, ConfigError> {
        let origin = path.display().to_string();
        let text = ibsm_topology::file::read_text(path, crate::state::CONFIG_LIMIT).map_err(|e| ConfigError {
            path: origin.clone(),
            line: 0,
            col: 0,
            reason: e.to_string(),
        })?;
        ConfigFile::parse(&text, &origin)
    }

    /// Range checks that the types alone do not express: (key, reason) for each.
    fn problems(&self) -> Vec<(&'static str, String)> {
        let mut out: Vec<(&'static str, String)> = Vec::new();
        let mut err = |key: &'static str, reason: String| out.push((key, reason));
        if let Some(l) = self.lmc.filter(|&l| l > 7) {
            err("lmc", format!("must be 0..=7, found {l}"));
        }
        if self.max_smps_in_flight == Some(0) {
            err("max-smps-in-flight", "must be at least 1".to_owned());
        }
        if let Some(t) = self.subnet_timeout.filter(|&t| t > 31) {
            err("subnet-timeout", format!("must be 0..=31, found {t}"));
        }
        if let Some(t) = self.switch_life_time.filter(|&t| t > 31) {
            err("switch-life-time", format!("must be 0..=31, found {t}"));
        }
        for (key, v) in [
            ("head-of-queue-lifetime", self.head_of_queue_lifetime),
            ("leaf-head-of-queue-lifetime", self.leaf_head_of_queue_lifetime),
        ] {
            if let Some(t) = v.filter(|&t| t > 31) {
                err(key, format!("must be 0..=31 (20 and above: infinite), found {t}"));
            }
        }
        if let Some(e) = &self.part_enforce
            && crate::core::PartEnforce::parse(e).is_none()
        {
            err("part-enforce", format!("{e:?} is not one of both, in, out, off"));
        }
        if let Some(p) = self.priority.filter(|&p| p > 15) {
            err("priority", format!("must be 0..=15, found {p}"));
        }
        if let Some(p) = self.elevated_priority.filter(|&p| p > 15) {
            err("elevated-priority", format!("must be 0..=15, found {p}"));
        }
        if self.sm_poll_interval_ms == Some(0) {
            err("sm-poll-interval-ms", "must be at least 1".to_owned());
        }
        if self.sm_poll_retries == Some(0) {
            err("sm-poll-retries", "must be at least 1".to_owned());
        }
        if let Some(m) = &self.m_key {
            if let Err(r) = parse_mkey_mode(m) {
                err("m-key", r);
            }
        }
        if let Some(p) = self.m_key_protect.filter(|&p| p > 3) {
            err("m-key-protect", format!("must be 0..=3, found {p}"));
        }
        let resweep = self.resweep_interval_s.unwrap_or(10);
        if let Some(l) = self.m_key_lease_s.filter(|&l| l != 0 && u64::from(l) <= resweep) {
            err(
                "m-key-lease-s",
                format!(
                    "{l} s is not longer than the re-sweep interval ({resweep} s); a port would drop its protection between sweeps"
                ),
            );
        }
        if let Some(k) = &self.sa_key {
            if let Err(r) = parse_key(k) {
                err("sa-key", r);
            }
        }
        if let Some(p) = &self.subnet_prefix {
            if let Err(r) = parse_subnet_prefix(p) {
                err("subnet-prefix", r);
            }
        }
        if self.refuse_miscabled == Some(true) && self.expected_topology.is_none() {
            err("refuse-miscabled", "needs expected-topology (the plan the cables are checked against)".to_owned());
        }
        if let Some(list) = &self.routing_engine {
            let names = list.names();
            if names.is_empty() {
                err("routing-engine", "names no engine".to_owned());
            }
            for e in names {
                if ibsm_routing::engine_by_name(&e).is_none() || e.contains(',') {
                    let known = ibsm_routing::ENGINE_NAMES.join(", ");
                    err("routing-engine", format!("unknown engine {e:?} (known: {known})"));
                }
            }
        }
        out
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
            switch_life_time: self.switch_life_time.unwrap_or(d.switch_life_time),
            hoq_life: self.head_of_queue_lifetime.unwrap_or(d.hoq_life),
            leaf_hoq_life: self.leaf_head_of_queue_lifetime.unwrap_or(d.leaf_hoq_life),
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
            sa_key: self.sa_key.as_deref().and_then(|k| parse_key(k).ok()).unwrap_or(d.sa_key),
            partitions: d.partitions,
            part_enforce: self
                .part_enforce
                .as_deref()
                .and_then(crate::core::PartEnforce::parse)
                .unwrap_or(d.part_enforce),
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
            refuse_miscabled: self.refuse_miscabled.unwrap_or(d.refuse_miscabled),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_config_parses_and_matches_the_defaults() {
        let text = include_str!("../examples/ibsm.toml");
        let cfg = ConfigFile::parse(text, "examples/ibsm.toml").expect("sample parses");
        assert_eq!(cfg.sm_config(), SmConfig::default(), "the sample documents the defaults");
    }

    #[test]
    fn errors_name_file_line_and_reason() {
        let e = ConfigFile::parse("lmc = 1\nmax-smps = 4\n", "a.toml").expect_err("unknown key");
        assert_eq!((e.path.as_str(), e.line), ("a.toml", 2));
        assert!(e.reason.contains("max-smps"), "{e}");
        let e = ConfigFile::parse("\n\nlmc = 9\n", "b.toml").expect_err("range");
        assert_eq!(e.to_string(), "b.toml:3:1: lmc: must be 0..=7, found 9");
        let e = ConfigFile::parse("lmc = \"two\"\n", "c.toml").expect_err("type");
        assert_eq!(e.line, 1);
        let e = ConfigFile::parse("routing-engine = \"nope\"\n", "d.toml").expect_err("engine");
        assert!(e.reason.contains("unknown engine"), "{e}");
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

    #[test]
    fn check_reports_every_error_with_line_column_and_key_and_the_environment_layers_over() {
        let text = "lmc = 9\n  max-smps = 4\nsa-key = \"zz\"\npriority = \"x\"\n";
        let errors = ConfigFile::check(text, "c.toml", &[]).expect_err("bad");
        let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(lines.len(), 4, "{lines:?}");
        assert_eq!(lines[0], "c.toml:1:1: lmc: must be 0..=7, found 9");
        assert!(
            lines[1]
                .starts_with("c.toml:2:3: max-smps: unknown field `max-smps`, expected one of `max-smps-in-flight`"),
            "{lines:?}"
        );
        assert!(lines[2].starts_with("c.toml:3:1: sa-key: "), "{lines:?}");
        assert_eq!(lines[3], "c.toml:4:1: priority: invalid type: string \"x\", expected u8");
        // A syntax error: its own position.
        let e = ConfigFile::check("lmc = 1\nlmc = = 2\n", "s.toml", &[]).expect_err("syntax");
        assert_eq!((e.len(), e[0].line), (1, 2), "{e:?}");
        // The environment over the file, and each source named.
        let env = vec![("IBSM_LMC".to_owned(), "3".to_owned()), ("IBSM_ROUTING_ENGINE".to_owned(), "updn".to_owned())];
        let (cfg, sources) = ConfigFile::check("lmc = 1\nsmp-retries = 5\n", "e.toml", &env).expect("valid");
        assert_eq!((cfg.lmc, cfg.smp_retries), (Some(3), Some(5)));
        assert_eq!(cfg.sm_config().routing_engine, ["updn"]);
        let src = |k: &str| sources.iter().find(|(key, _)| *key == k).map(|(_, s)| *s);
        assert_eq!(
            (src("lmc"), src("smp-retries"), src("priority")),
            (Some(Source::Env), Some(Source::File), Some(Source::Default))
        );
        let e = ConfigFile::check("", "environment", &[("IBSM_LMC".to_owned(), "12".to_owned())]).expect_err("range");
        assert_eq!(e[0].to_string(), "environment:0:0: IBSM_LMC: lmc: must be 0..=7, found 12");
    }

    #[test]
    fn every_key_is_known_and_documented() {
        // Each listed key is a field (no unknown-field error) and the sample documents it.
        let sample = include_str!("../examples/ibsm.toml");
        for k in KEYS {
            let err = ConfigFile::check(&format!("{k} = 0\n"), "k", &[]).err().unwrap_or_default();
            assert!(err.iter().all(|e| !e.reason.contains("unknown field")), "{k}: {err:?}");
            assert!(sample.contains(&format!("{k} =")), "examples/ibsm.toml documents {k}");
        }
        // And every field is listed: an unknown key's error names exactly the listed ones.
        let err = ConfigFile::check("nope = 1\n", "k", &[]).err().unwrap_or_default();
        let named = err.first().map_or(0, |e| e.reason.matches('`').count() / 2);
        assert_eq!(named, KEYS.len() + 1, "{err:?}");
    }

    #[test]
    fn overrides_apply() {
        let cfg = ConfigFile::parse("lmc = 2\nsmp-timeout-ms = 50\nresweep-interval-s = 0\n", "x").expect("ok");
        let sm = cfg.sm_config();
        assert_eq!((sm.lmc, sm.smp_timeout_ns, sm.resweep_interval_ns), (2, 50_000_000, None));
    }

    #[test]
    fn subnet_prefix_forms() {
        assert_eq!(parse_subnet_prefix("0xfe80000000000000"), Ok(0xfe80_0000_0000_0000));
        assert_eq!(parse_subnet_prefix("fe80::"), Ok(0xfe80_0000_0000_0000));
        assert_eq!(parse_subnet_prefix("fec0:0:0:1::"), Ok(0xfec0_0000_0000_0001));
        assert!(parse_subnet_prefix("fe80::1").unwrap_err().contains("low 64 bits"));
        assert!(parse_subnet_prefix("0x1fe80000000000000").is_err(), "17 digits");
        assert!(parse_subnet_prefix("0x").is_err());
        assert!(parse_subnet_prefix("link-local").is_err());
        let cfg = ConfigFile::parse("subnet-prefix = \"fec0::\"\n", "p.toml").expect("ok");
        assert_eq!(cfg.sm_config().subnet_prefix, 0xfec0_0000_0000_0000);
        let e = ConfigFile::parse("lmc = 0\nsubnet-prefix = \"0xzz\"\n", "q.toml").expect_err("bad prefix");
        assert!(e.to_string().starts_with("q.toml:2:1: subnet-prefix: expected 0x"), "{e}");
    }
}
