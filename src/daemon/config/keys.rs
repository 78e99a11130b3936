//! The configuration's vocabulary: every key ([`KEYS`], in the order `examples/ibsm.toml`
//! documents them), what each accepts in words ([`allowed`]), the environment variable that
//! sets it ([`env_name`]), and the parsers of values TOML gives as strings (keys, the subnet
//! prefix, the M_Key mode, the routing-engine list). No file is read here.

use serde::Deserialize;

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
    "perf-avoid-unhealthy",
    "perf-history-s",
    "subnet-prefix",
    "sa-rate-limit",
    "max-rate-enum",
    "consolidate-ipv6-snm",
    "sm-assigned-guid",
    "sa-key",
    "partitions",
    "part-enforce",
    "allow-both-pkeys",
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
    "cn-guid-file",
    "io-guid-file",
    "guid-routing-order-file",
    "node-name-map",
    "port-shifting",
    "use-optimized-slvl",
    "scatter-ports",
    "max-layers",
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
        "max-rate-enum" => {
            "a rate code 2..=24 (3 = 10 Gb/s, 7 = 40, 16 = 100, 17 = 200, 18 = 300, 21 = 400 ...) or 63 (any)"
        }
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
        "perf-history-s" => "an integer 1..=86400 (seconds of history per port, at the PM interval)",
        "perf-metrics-ports" => {
            "a string: \"all\", \"errors\" or \"top-N\" (N ports by traffic, and those with errors)"
        }
        "subnet-prefix" => "a string: \"0x\" and 16 hex digits, or an IPv6 prefix such as \"fe80::\"",
        "sa-rate-limit" => "an integer 0..=4294967295 (requests per second; 0 = no limit)",
        "sm-assigned-guid" => "an integer 0..=255 (bits 32..39 of SA-assigned alias GUIDs)",
        "sa-key" => "a string: \"0x\" and up to 16 hex digits, or a decimal number",
        "partitions"
        | "sm-key-file"
        | "guid2mkey"
        | "expected-topology"
        | "root-guid-file"
        | "lfts-file"
        | "cn-guid-file"
        | "io-guid-file"
        | "guid-routing-order-file"
        | "node-name-map"
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
        "refuse-miscabled"
        | "babbling-port-policy"
        | "consolidate-ipv6-snm"
        | "port-shifting"
        | "allow-both-pkeys"
        | "perf-avoid-unhealthy"
        | "use-optimized-slvl" => "true or false",
        "scatter-ports" => "an integer 0..=4294967295 (a seed; 0 = off)",
        "max-layers" => "an integer 1..=15 (the most layers, i.e. VLs, dfsssp and nue spread paths over)",
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

#[cfg(test)]
mod tests {
    use super::super::ConfigFile;
    use super::*;

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
