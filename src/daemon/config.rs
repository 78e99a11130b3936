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
    /// PortInfo.VLStallCount of switch ports cabled to switches, 0..=7 (default 7, as OpenSM).
    pub vl_stall_count: Option<u8>,
    /// PortInfo.VLStallCount of switch ports cabled to CAs and routers (default 7, as OpenSM).
    pub leaf_vl_stall_count: Option<u8>,
    /// Cap on PortInfo.OperationalVLs, 1..=15 coded like VLCap (default 5 = VL0-14, as OpenSM).
    pub max_op_vls: Option<u8>,
    /// PortInfo.LocalPhyErrors threshold for trap 129, 0..=15 (default 8, as OpenSM).
    pub local_phy_errors_threshold: Option<u8>,
    /// PortInfo.OverrunErrors threshold for trap 130, 0..=15 (default 8, as OpenSM).
    pub overrun_errors_threshold: Option<u8>,
    /// PortInfo.LinkSpeedEnabled to write: 0 = leave, 1..=7, 15 = supported (default 15).
    pub force_link_speed: Option<u8>,
    /// PortInfo.LinkSpeedExtEnabled to write: 0 = leave, 1..=15, 30 = disable, 31 = supported
    /// (default 31).
    pub force_link_speed_ext: Option<u8>,
    /// PortInfo.LinkWidthEnabled to write: 0 = leave, 1..=31, 255 = supported (default 255).
    pub force_link_width: Option<u8>,
    /// Disable a port that sends more than `babbling-port-traps` traps within
    /// `babbling-port-window-s`, for `babbling-port-backoff-s` (default false, as OpenSM's
    /// `babbling_port_policy`).
    pub babbling_port_policy: Option<bool>,
    /// Traps a port may send within the window (default 250, OpenSM's threshold).
    pub babbling_port_traps: Option<u32>,
    /// The counting window, seconds (default 60).
    pub babbling_port_window_s: Option<u64>,
    /// How long a babbling port stays disabled, seconds (default 300).
    pub babbling_port_backoff_s: Option<u64>,
    /// Routing engine, or a list tried in order (default `["ftree", "updn", "minhop"]`).
    pub routing_engine: Option<EngineList>,
    /// Seconds between re-sweeps after an incomplete sweep; 0 = never (default 10).
    pub resweep_interval_s: Option<u64>,
    /// Seconds between light sweeps (every switch's SwitchInfo; a port that changed state
    /// brings a heavy sweep); 0 = none (default 10).
    pub sweep_interval_s: Option<u64>,
    /// Seconds between the performance manager's reads of every port's counters; 0 = no
    /// performance manager (default 10).
    pub perf_interval_s: Option<u64>,
    /// Which ports' counters the metrics export: `"all"` (default), `"errors"` (ports with
    /// errors in their last interval), or `"top-N"` (those and the N busiest).
    pub perf_metrics_ports: Option<String>,
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
    /// Root switches by NodeGUID, one per line (OpenSM's `root_guid_file`): up/down routes from
    /// them, ftree only when they are its top level (default: each engine finds its own).
    pub root_guid_file: Option<PathBuf>,
    /// Forwarding tables computed elsewhere, in OpenSM's `opensm-lfts.dump` format (OpenSM's
    /// `lfts_file`), for the `file` routing engine (default: none).
    pub lfts_file: Option<PathBuf>,
    /// QoS policy in OpenSM's qos-policy.conf format; giving one turns QoS on (OpenSM's
    /// `-Q -Y FILE`). Default: none, QoS off unless `[qos]` is given.
    pub qos_policy_file: Option<PathBuf>,
    /// OpenSM's simple QoS options (max VLs, high limit, VL arbitration tables, SL2VL), subnet
    /// wide and per port class (`ca`, `sw0`, `swe`, `rtr`); unset values are OpenSM's defaults.
    /// The table alone (even empty) turns QoS on with no policy, as OpenSM's `qos TRUE`.
    pub qos: Option<ibsm_qos::QosOptions>,
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

/// Size limit of a configuration file or a partition policy (a policy listing every port
/// GUID of a large fabric by name runs to a few MB).
pub const CONFIG_LIMIT: u64 = 64 << 20;

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
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(untagged)]
pub enum EngineList {
    /// One engine.
    One(String),
    /// A chain, tried in order.
    Chain(Vec<String>),
}

impl<'de> Deserialize<'de> for EngineList {
    /// A string or a list of strings; anything else is refused with what was expected (the
    /// derived untagged form could only say that no variant matched).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Names;
        impl<'de> serde::de::Visitor<'de> for Names {
            type Value = EngineList;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an engine name or a list of engine names")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<EngineList, E> {
                Ok(EngineList::One(v.to_owned()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<EngineList, A::Error> {
                let mut names = Vec::new();
                while let Some(n) = seq.next_element::<String>()? {
                    names.push(n);
                }
                Ok(EngineList::Chain(names))
            }
        }
        d.deserialize_any(Names)
    }
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
    "vl-stall-count",
    "leaf-vl-stall-count",
    "max-op-vls",
    "local-phy-errors-threshold",
    "overrun-errors-threshold",
    "force-link-speed",
    "force-link-speed-ext",
    "force-link-width",
    "babbling-port-policy",
    "babbling-port-traps",
    "babbling-port-window-s",
    "babbling-port-backoff-s",
    "routing-engine",
    "resweep-interval-s",
    "sweep-interval-s",
    "perf-interval-s",
    "perf-metrics-ports",
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
    "root-guid-file",
    "lfts-file",
    "qos-policy-file",
    "qos",
];

/// What `key` accepts, in words, for error messages (empty for an unknown key).
pub fn allowed(key: &str) -> String {
    let s = match key {
        "max-smps-in-flight" => "an integer 1..=65536",
        "smp-timeout-ms" => "an integer 1..=60000 (milliseconds)",
        "smp-retries" => "an integer 0..=100",
        "lmc" | "vl-stall-count" | "leaf-vl-stall-count" => "an integer 0..=7",
        "subnet-timeout" | "switch-life-time" => "an integer 0..=31",
        "head-of-queue-lifetime" | "leaf-head-of-queue-lifetime" => "an integer 0..=31 (20 and above: infinite)",
        "max-op-vls" => "an integer 1..=15 (coded like VLCap: 1 = VL0, 2 = VL0-1, 3 = VL0-3, 4 = VL0-7, 5 = VL0-14)",
        "force-link-speed" => "0 (leave as is), 1..=7 (a set of 1 = SDR, 2 = DDR, 4 = QDR) or 15 (as supported)",
        "force-link-speed-ext" => {
            "0 (leave as is), 1..=15 (a set of 1 = FDR, 2 = EDR, 4 = HDR, 8 = NDR), 30 (disable) or 31 (as supported)"
        }
        "force-link-width" => {
            "0 (leave as is), 1..=31 (a set of 1 = 1X, 2 = 4X, 4 = 8X, 8 = 12X, 16 = 2X) or 255 (as supported)"
        }
        "routing-engine" => {
            return format!(
                "an engine name or a list of engine names, each one of {}",
                ibsm_routing::KNOWN_NAMES.join(", ")
            );
        }
        "resweep-interval-s" | "sweep-interval-s" | "perf-interval-s" => "an integer 0..=86400 (seconds; 0 = never)",
        "perf-metrics-ports" => {
            "a string: \"all\", \"errors\" or \"top-N\" (N ports by traffic, and those with errors)"
        }
        "subnet-prefix" => "a string: \"0x\" and 16 hex digits, or an IPv6 prefix such as \"fe80::\"",
        "sa-rate-limit" => "an integer 0..=4294967295 (requests per second; 0 = no limit)",
        "sa-key" => "a string: \"0x\" and up to 16 hex digits, or a decimal number",
        "partitions" | "sm-key-file" | "guid2mkey" | "expected-topology" | "root-guid-file" | "lfts-file"
        | "qos-policy-file" => "a non-empty file path (a string)",
        "qos" => {
            "a table of max-vls (1..=15), high-limit (0..=255), vlarb-high and vlarb-low (\"vl:weight,...\", VL \
             0..=14), sl2vl (16 VLs \"0,1,...\"), and the same in sub-tables ca, sw0, swe, rtr"
        }
        "state-dir" => "a non-empty directory path (a string)",
        "part-enforce" => "one of \"both\", \"in\", \"out\", \"off\"",
        "priority" | "elevated-priority" | "local-phy-errors-threshold" | "overrun-errors-threshold" => {
            "an integer 0..=15"
        }
        "sm-poll-interval-ms" => "an integer 1..=3600000 (milliseconds)",
        "sm-poll-retries" => "an integer 1..=100",
        "sm-act-stall-s" | "babbling-port-window-s" => "an integer 1..=86400 (seconds)",
        "m-key" => "\"off\", \"per-port\", or a 64-bit key as a string (\"0x\" and up to 16 hex digits)",
        "m-key-protect" => "an integer 0..=3",
        "m-key-lease-s" => "an integer 0..=65535 (seconds; 0 = never expires)",
        "refuse-miscabled" | "babbling-port-policy" => "true or false",
        "babbling-port-traps" => "an integer 1..=1000000",
        "babbling-port-backoff-s" => "an integer 1..=604800 (seconds)",
        _ => "",
    };
    s.to_owned()
}

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

/// Reads a configuration file as UTF-8 text. A file that is not UTF-8 is reported at the line
/// and column of its first invalid byte (columns count bytes there); a file that cannot be read
/// at all at line 0.
fn read_text(path: &Path) -> Result<String, ConfigError> {
    let origin = path.display().to_string();
    // Bounded: a regular file of at most CONFIG_LIMIT bytes (never /dev/zero or a FIFO).
    let bytes = ibsm_topology::file::read_bytes(path, CONFIG_LIMIT).map_err(|e| ConfigError {
        path: origin.clone(),
        line: 0,
        col: 0,
        reason: e.to_string(),
    })?;
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let before = e.as_bytes().get(..at).unwrap_or_default();
        let line = before.split(|&b| b == b'\n').count();
        let col = before.iter().rposition(|&b| b == b'\n').map_or(at, |nl| at - nl - 1) + 1;
        let byte = e.as_bytes().get(at).copied().unwrap_or(0);
        ConfigError {
            path: origin,
            line,
            col,
            reason: format!("not UTF-8 text: byte {byte:#04x} at offset {at} (a TOML file must be UTF-8)"),
        }
    })
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
                let allowed = allowed(k);
                let reason = if allowed.is_empty() {
                    format!("{k}: {}", e.message().trim())
                } else {
                    format!("{k}: {} (allowed: {allowed})", e.message().trim())
                };
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
        let text = read_text(path).map_err(|e| vec![e])?;
        ConfigFile::check(&text, &origin, &env)
    }

    /// The value of each key as `ibsm config show` prints it: what the file or environment set,
    /// else the default `examples/ibsm.toml` documents (`None`: unset by default).
    pub fn shown_values(&self) -> Vec<(&'static str, Option<String>)> {
        let set = toml::Value::try_from(self).ok().and_then(|v| v.as_table().cloned()).unwrap_or_default();
        let defaults: toml::Table = toml::from_str(include_str!("../../examples/ibsm.toml")).unwrap_or_default();
        KEYS.iter().map(|&k| (k, set.get(k).or_else(|| defaults.get(k)).map(ToString::to_string))).collect()
    }

    /// Reads and parses a configuration file.
    ///
    /// # Errors
    /// [`ConfigError`] for an unreadable or invalid file.
    pub fn load(path: &Path) -> Result<ConfigFile, ConfigError> {
        let text = read_text(path)?;
        ConfigFile::parse(&text, &path.display().to_string())
    }

    /// Range checks that the types alone do not express: (key, reason) for each, the reason
    /// naming what was found and what is allowed ([`allowed`]).
    fn problems(&self) -> Vec<(&'static str, String)> {
        let mut out: Vec<(&'static str, String)> = Vec::new();
        let bad = |key: &'static str, found: String| (key, format!("{found}; allowed: {}", allowed(key)));
        let ranges: [(&'static str, Option<u64>, u64, u64); 25] = [
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
            ("local-phy-errors-threshold", self.local_phy_errors_threshold.map(u64::from), 0, 15),
            ("overrun-errors-threshold", self.overrun_errors_threshold.map(u64::from), 0, 15),
            ("babbling-port-traps", self.babbling_port_traps.map(u64::from), 1, 1_000_000),
            ("babbling-port-window-s", self.babbling_port_window_s, 1, 86_400),
            ("babbling-port-backoff-s", self.babbling_port_backoff_s, 1, 604_800),
            ("resweep-interval-s", self.resweep_interval_s, 0, 86_400),
            ("sweep-interval-s", self.sweep_interval_s, 0, 86_400),
            ("perf-interval-s", self.perf_interval_s, 0, 86_400),
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
        for (key, path) in [
            ("state-dir", &self.state_dir),
            ("partitions", &self.partitions),
            ("sm-key-file", &self.sm_key_file),
            ("guid2mkey", &self.guid2mkey),
            ("expected-topology", &self.expected_topology),
            ("root-guid-file", &self.root_guid_file),
            ("lfts-file", &self.lfts_file),
            ("qos-policy-file", &self.qos_policy_file),
        ] {
            if path.as_ref().is_some_and(|p| p.as_os_str().is_empty()) {
                out.push(bad(key, "an empty path".to_owned()));
            }
        }
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
        if let Some(m) = &self.m_key {
            if let Err(r) = parse_mkey_mode(m) {
                out.push(bad("m-key", r));
            }
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
        if let Some(k) = &self.sa_key {
            if let Err(r) = parse_key(k) {
                out.push(bad("sa-key", r));
            }
        }
        if let Some(p) = &self.subnet_prefix {
            if let Err(r) = parse_subnet_prefix(p) {
                out.push(bad("subnet-prefix", r));
            }
        }
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
            sa_key: self.sa_key.as_deref().and_then(|k| parse_key(k).ok()).unwrap_or(d.sa_key),
            partitions: d.partitions,
            // Read by `startup`, which reads the policy file the configuration names.
            qos: d.qos,
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
            routing_options: d.routing_options,
            tid_key: d.tid_key,
            refuse_miscabled: self.refuse_miscabled.unwrap_or(d.refuse_miscabled),
            perf: crate::core::perf::PerfConfig {
                interval_ns: self.perf_interval_s.map_or(d.perf.interval_ns, |s| s.saturating_mul(1_000_000_000)),
                export: self
                    .perf_metrics_ports
                    .as_deref()
                    .and_then(crate::core::perf::PortExport::parse)
                    .unwrap_or(d.perf.export),
                ..d.perf
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_config_parses_and_matches_the_defaults() {
        let text = include_str!("../../examples/ibsm.toml");
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
        assert_eq!(
            lines[3],
            "c.toml:4:1: priority: invalid type: string \"x\", expected u8 (allowed: an integer 0..=15)"
        );
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
        let sample = include_str!("../../examples/ibsm.toml");
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
    fn a_file_that_is_not_utf8_is_reported_at_the_line_of_its_first_bad_byte() {
        let dir = std::env::temp_dir().join(format!("ibsm-config-utf8-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("latin1.toml");
        std::fs::write(&path, b"lmc = 1\n# caf\xe9\npriority = 2\n").expect("write");
        let origin = path.display().to_string();
        let e = ConfigFile::load(&path).expect_err("not UTF-8");
        assert_eq!((e.line, e.col), (2, 6), "{e}");
        assert!(e.to_string().starts_with(&format!("{origin}:2:6: not UTF-8 text: byte 0xe9 at offset 13")), "{e}");
        let e = ConfigFile::load_layered(Some(&path)).expect_err("not UTF-8");
        assert_eq!((e[0].line, e[0].col), (2, 6), "{e:?}");
        let _ = std::fs::remove_dir_all(&dir);
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
