//! The SM's configuration file (TOML, kebab-case keys, unknown keys rejected) and how it layers:
//! command-line flags over the file over built-in defaults.
//!
//! Every key is optional; see `examples/ibsm.toml` for the full list with the defaults.
//!
//! This file owns the file's shape ([`ConfigFile`]), reading it (bounded, UTF-8, every error
//! at its line and column) and layering the `IBSM_*` environment over it ([`ConfigFile::check`]).
//! Below it, by concept: [`keys`] (the list of keys, what each allows, the value parsers),
//! [`validation`] (the range checks the types do not express) and [`sm_config`] (the core
//! configuration the file gives, over the defaults). A new key touches all four: its field
//! here, its name and words in `keys`, its check in `validation`, its use in `sm_config`.

mod keys;
mod sm_config;
mod validation;

use std::path::{Path, PathBuf};

use serde::Deserialize;

pub use keys::{CONFIG_LIMIT, EngineList, KEYS, allowed, env_name, parse_key, parse_mkey_mode, parse_subnet_prefix};

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
    /// Routes avoid the link of a port the performance manager finds over an error threshold
    /// for 3 intervals in a row, until it is clean for 5; at most 2 such re-routes an hour;
    /// never one that would leave a LID unrouted (default false).
    pub perf_avoid_unhealthy: Option<bool>,
    /// Seconds of history kept per port, at the PM interval (default 300: 32 bytes a port an
    /// interval, about 160 MB for the 166k ports of a k=48 fat tree; BENCHMARKS.md).
    pub perf_history_s: Option<u64>,
    /// Directory for persisted state such as guid2lid (default: none, nothing persisted).
    pub state_dir: Option<PathBuf>,
    /// Subnet prefix for every port's GID: `"0xfe80000000000000"` or `"fe80::"` (default
    /// fe80::/64, as OpenSM). A string because TOML integers are signed 64-bit.
    pub subnet_prefix: Option<String>,
    /// SA requests per second each requesting port may send before it gets BUSY; 0 = no
    /// limit (default 50000).
    pub sa_rate_limit: Option<u32>,
    /// The highest rate code path records and new multicast groups carry (OpenSM's
    /// `max_rate_enum`): 2..=24, or 63 (the default) for any.
    pub max_rate_enum: Option<u8>,
    /// IPv6 solicited-node multicast groups share one MLID per partition and scope (OpenSM's
    /// `consolidate_ipv6_snm_req`; default false, as OpenSM).
    pub consolidate_ipv6_snm: Option<bool>,
    /// Bits 32..39 of the alias GUIDs the SA assigns when a GUIDInfoRecord Set asks it to
    /// (OpenSM's `sm_assigned_guid`; default 0, as OpenSM).
    pub sm_assigned_guid: Option<u8>,
    /// SA key: requests carrying it are trusted. A string (`"0x..."` or decimal), since TOML
    /// integers are signed (default 1, as OpenSM).
    pub sa_key: Option<String>,
    /// Partition policy file (partitions.conf grammar or TOML); default: the default partition
    /// with every port a full member.
    pub partitions: Option<PathBuf>,
    /// Partition enforcement on switch ports facing CAs: `both`, `in`, `out` or `off`
    /// (default `both`, as OpenSM).
    pub part_enforce: Option<String>,
    /// A port may be a full and a limited member of one partition, two entries in its P_Key
    /// table (OpenSM's `allow_both_pkeys`; default false, as OpenSM).
    pub allow_both_pkeys: Option<bool>,
    /// SL2VL in the one-Set form where a switch advertises it (OpenSM's `use_optimized_slvl`;
    /// default false, as OpenSM).
    pub use_optimized_slvl: Option<bool>,
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
    /// Compute-node port GUIDs, one per line (OpenSM's `cn_guid_file`): ftree ranks the tree
    /// from their switches (default: every CA port not in `io-guid-file`).
    pub cn_guid_file: Option<PathBuf>,
    /// I/O-node port GUIDs, one per line (OpenSM's `io_guid_file`): routed to and from by ftree,
    /// outside the compute nodes' balance (default: none).
    pub io_guid_file: Option<PathBuf>,
    /// Port GUIDs whose LIDs minhop and updn route first, in file order (OpenSM's
    /// `guid_routing_order_file`; default: none).
    pub guid_routing_order_file: Option<PathBuf>,
    /// infiniband-diags' node name map (`0x<NodeGUID> "name"` per line; OpenSM's
    /// `node_name_map_name`): the names status, the dumps, the page and the logs show nodes by
    /// (default: none, their NodeDescriptions).
    pub node_name_map: Option<PathBuf>,
    /// minhop and updn search each switch's least-loaded port from a rotating start (OpenSM's
    /// `port_shifting`; default false).
    pub port_shifting: Option<bool>,
    /// Non-zero: minhop and updn take a random one of the least-loaded ports, from this seed
    /// (OpenSM's `scatter_ports`; default 0, off).
    pub scatter_ports: Option<u32>,
    /// The most layers (VLs, each a path's SL) dfsssp and nue spread paths over, within the
    /// fabric's VLs (OpenSM's `nue_max_num_vls`; default: as many as the fabric's VLs hold).
    pub max_layers: Option<u8>,
    /// QoS policy in OpenSM's qos-policy.conf format; giving one turns QoS on (OpenSM's
    /// `-Q -Y FILE`). Default: none, QoS off unless `[qos]` is given.
    pub qos_policy_file: Option<PathBuf>,
    /// OpenSM's simple QoS options (max VLs, high limit, VL arbitration tables, SL2VL), subnet
    /// wide and per port class (`ca`, `sw0`, `swe`, `rtr`); unset values are OpenSM's defaults.
    /// The table alone (even empty) turns QoS on with no policy, as OpenSM's `qos TRUE`.
    pub qos: Option<ibsm_qos::QosOptions>,
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
        let defaults: toml::Table = toml::from_str(include_str!("../../../examples/ibsm.toml")).unwrap_or_default();
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
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let sample = include_str!("../../../examples/ibsm.toml");
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
}
