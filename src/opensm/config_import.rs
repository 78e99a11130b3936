//! `ibsm config import-opensm`: an `opensm.conf` turned into the equivalent `ibsm.toml`.
//!
//! Owns the mapping from OpenSM's option names (as OpenSM 3.3.23 writes them with
//! `opensm -c FILE`: one `name value` per line, `#` comments) to ibsm's configuration keys and
//! the reason for every option that has no equivalent. Values are checked as they are mapped;
//! the output is TOML that `ibsm config check` accepts, with the options left out listed in
//! comments. Where OpenSM's default was chosen for a slower world (10 s SMInfo polls, 4 SMPs on
//! the wire) and the file still holds it, ibsm's own default is kept and the comment says why.

use std::fmt::Write as _;

use crate::core::PortConfig;

/// What became of one OpenSM option.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fate {
    /// `key = value` in the TOML.
    Mapped {
        /// The ibsm key.
        key: &'static str,
        /// The TOML value, written as TOML.
        value: String,
    },
    /// Not carried over, and why.
    Skipped(String),
}

/// One option of the OpenSM file and its fate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Imported {
    /// 1-based line in the OpenSM file.
    pub line: usize,
    /// OpenSM's option name.
    pub name: String,
    /// Its value as written.
    pub value: String,
    /// What became of it.
    pub fate: Fate,
}

fn int(v: &str) -> Option<u64> {
    let v = v.trim();
    match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => v.parse().ok(),
    }
}

fn in_range(v: &str, min: u64, max: u64) -> Result<u64, String> {
    match int(v) {
        Some(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(format!("{v:?} is not a number in {min}..={max}")),
    }
}

fn boolean(v: &str) -> Option<bool> {
    match v.to_ascii_uppercase().as_str() {
        "TRUE" => Some(true),
        "FALSE" => Some(false),
        _ => None,
    }
}

fn quoted(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Prefix families of options that have no equivalent, and why.
const FAMILIES: &[(&str, &str)] = &[
    ("qos", "not a QoS option ibsm knows"),
    ("cc_", "congestion control is not implemented in ibsm"),
    ("congestion_control", "congestion control is not implemented in ibsm"),
    (
        "perfmgr",
        "ibsm's performance manager has its own keys (perf-interval-s, on by default every 10 s; its thresholds and history)",
    ),
    ("log", "ibsm logs through tracing to stderr/journald; see --log-format and RUST_LOG"),
    ("accum_log_file", "ibsm logs through tracing to stderr/journald"),
    ("per_module_logging_file", "ibsm logs through tracing to stderr/journald"),
    ("force_log_flush", "ibsm logs through tracing to stderr/journald"),
    ("event_", "ibsm has no event plugins; watch its logs and metrics (--metrics)"),
    (
        "nue_",
        "ibsm's nue (routing-engine = \"nue\") routes switch LIDs in its layers too; its one option is max-layers (nue_max_num_vls)",
    ),
    ("lash_", "the lash routing engine is not available in ibsm"),
    ("torus_config", "the torus-2QoS routing engine is not available in ibsm"),
    ("console", "ibsm has no telnet console; use `ibsm status` over the control socket"),
    ("m_key_lookup", "ibsm reads the keys ports hold from `guid2mkey` when that key is set"),
];

/// Single options that have no equivalent, and why.
const NO_EQUIVALENT: &[(&str, &str)] = &[
    ("guid", "the port is chosen on the command line: `ibsm run --ca NAME --port N`"),
    ("lmc_esp0", "ibsm gives switch port 0 one LID"),
    ("sm_sl", "the SM's SL is 0"),
    ("fdr10", "FDR10 is Mellanox's ExtendedPortInfo, which ibsm does not send: the ports keep their own FDR10 setting"),
    ("use_mfttop", "MFTs are programmed block by block, only the blocks that change"),
    ("keep_pkey_indexes", "ibsm always keeps P_Key indexes (state directory `pkeys`)"),
    ("reassign_lids", "ibsm never renumbers a port that has a LID"),
    ("force_heavy_sweep", "ibsm sweeps heavily only when a light or quick sweep finds a change it cannot handle"),
    ("sweep_on_trap", "ibsm always acts on traps (rate-limited)"),
    ("port_profile_switch_nodes", "not available in ibsm's engines"),
    ("port_prof_ignore_file", "not available in ibsm's engines"),
    ("hop_weights_file", "not available in ibsm's engines"),
    ("port_search_ordering_file", "not available in ibsm's engines"),
    ("avoid_throttled_links", "not available in ibsm's engines"),
    ("connect_roots", "ibsm's ftree routes switch-to-switch traffic along shortest paths"),
    ("use_ucast_cache", "ibsm repairs its last tables after a cable or switch is lost (always on)"),
    ("lid_matrix_dump_file", "see `ibsm routes dump`"),
    ("quasi_ftree_indexing", "ibsm's ftree handles degraded trees itself"),
    ("max_reverse_hops", "ibsm's ftree gives I/O nodes with no common ancestor one down-then-up turn, no more"),
    ("ids_guid_file", "not available in ibsm's engines"),
    ("guid_routing_order_no_scatter", "ibsm scatters the ports of guid-routing-order-file too (with scatter-ports)"),
    ("do_mesh_analysis", "not available in ibsm's engines"),
    ("sa_db_file", "the SA state (groups, services, subscriptions, alias GUIDs) is replicated to standbys instead"),
    ("sa_db_dump", "the SA state (groups, services, subscriptions, alias GUIDs) is replicated to standbys instead"),
    ("ignore_other_sm", "ibsm always takes part in the election"),
    ("honor_guid2lid_file", "ibsm always keeps the LIDs of `guid2lid` in its state directory"),
    ("max_wire_smps2", "one window of SMPs in flight: max-smps-in-flight"),
    ("max_smps_timeout", "one SMP timeout: smp-timeout-ms"),
    ("long_transaction_timeout", "one SMP timeout: smp-timeout-ms"),
    ("max_msg_fifo_timeout", "ibsm has no message FIFO"),
    ("single_thread", "ibsm's core is one event loop"),
    ("daemon", "run ibsm under systemd (dist/systemd/ibsm.service)"),
    ("sm_inactive", "not available; stop the service instead"),
    ("drop_event_subscriptions", "subscriptions are dropped when the subscriber's port goes away"),
    ("ipoib_mcgroup_creation_validation", "ibsm checks every MCMemberRecord against the partition policy"),
    ("mcgroup_join_validation", "ibsm checks every MCMemberRecord against the partition policy"),
    ("suppress_sl2vl_mad_status_errors", "a failed SL2VL Set is logged and written again at the next sweep"),
    ("fsync_high_avail_files", "ibsm always writes state files atomically (temp, fsync, rename)"),
    ("dump_files_dir", "see `ibsm routes dump` and the state directory"),
    ("enable_quirks", "not needed"),
    ("no_clients_rereg", "ibsm asks for client reregistration only when a port's SA state may be lost"),
    ("disable_multicast", "multicast is always on"),
    ("exit_on_fatal", "ibsm keeps running and reports (duplicate GUIDs, for one)"),
    ("prefix_routes_file", "routers are not supported"),
];

/// OpenSM's defaults that ibsm deliberately does not copy, and why.
const SLOW_DEFAULTS: &[(&str, &str, &str)] = &[
    (
        "sminfo_polling_timeout",
        "10000",
        "OpenSM's default; ibsm's sm-poll-interval-ms (200) is kept: a standby takes over in about 1 s instead of 40",
    ),
    ("polling_retry_number", "4", "OpenSM's default; ibsm's sm-poll-retries (3) is kept"),
    ("max_wire_smps", "4", "OpenSM's default; ibsm's max-smps-in-flight (64) is kept: bring-up is faster"),
];

fn skipped(reason: &str) -> Fate {
    Fate::Skipped(reason.to_owned())
}

fn mapped(key: &'static str, value: String) -> Fate {
    Fate::Mapped { key, value }
}

/// OpenSM's file options: (OpenSM name, ibsm key, why left out when unset, why left out when
/// the file is not there). OpenSM goes on without a missing file (the default partition, an
/// empty QoS policy, roots it finds itself); ibsm would refuse to start, so such a file is left
/// out.
const FILE_OPTIONS: &[(&str, &str, &str, &str)] = &[
    (
        "partition_config_file",
        "partitions",
        "no partition file",
        "the file does not exist here: OpenSM uses the default partition then, as ibsm does without this key",
    ),
    (
        "qos_policy_file",
        "qos-policy-file",
        "no QoS policy file",
        "the file does not exist here (ibsm would refuse to start); give it as qos-policy-file once it does",
    ),
    (
        "root_guid_file",
        "root-guid-file",
        "unset: each engine finds its own roots",
        "the file does not exist here: OpenSM finds the roots itself then, as ibsm does without this key",
    ),
    (
        "cn_guid_file",
        "cn-guid-file",
        "unset: every CA port not listed as an I/O node is a compute node",
        "the file does not exist here (ibsm would refuse to start); give the key once it does",
    ),
    (
        "io_guid_file",
        "io-guid-file",
        "unset: every CA port not listed as an I/O node is a compute node",
        "the file does not exist here (ibsm would refuse to start); give the key once it does",
    ),
    (
        "guid_routing_order_file",
        "guid-routing-order-file",
        "unset: minhop and updn route destinations switch by switch, in NodeGUID order",
        "the file does not exist here (ibsm would refuse to start); give the key once it does",
    ),
    (
        "node_name_map_name",
        "node-name-map",
        "unset: nodes are shown by their NodeDescriptions",
        "the file does not exist here (ibsm would refuse to start); give node-name-map once it does",
    ),
    (
        "lfts_file",
        "lfts-file",
        "unset: no tables file",
        "the file does not exist here (ibsm would refuse to start); give it as lfts-file once it does",
    ),
];

/// The fate of a file option of [`FILE_OPTIONS`] (`None` for another option): unset
/// (`(null)` or empty), not there, or its path.
fn file_fate(name: &str, value: &str) -> Option<Fate> {
    let &(_, key, unset, missing) = FILE_OPTIONS.iter().find(|(n, ..)| *n == name)?;
    Some(if value == "(null)" || value.is_empty() {
        skipped(unset)
    } else if !std::path::Path::new(value).exists() {
        skipped(missing)
    } else {
        mapped(key, quoted(value))
    })
}

/// The fate of a key option (M_Key, its lease, SA key, SM_Key) or the subnet prefix; `None`
/// for another option.
fn key_fate(name: &str, value: &str) -> Option<Fate> {
    Some(match name {
        // 0: the lease never ends; otherwise it must outlast ibsm's re-sweep interval (10 s).
        "m_key_lease_period" if int(value) == Some(0) => mapped("m-key-lease-s", "0".to_owned()),
        "m_key_lease_period" => match in_range(value, 11, 65_535) {
            Ok(n) => mapped("m-key-lease-s", n.to_string()),
            Err(e) => Fate::Skipped(format!(
                "not imported: {e} (a lease must outlast ibsm's 10 s re-sweep interval, or be 0: never)"
            )),
        },
        "subnet_prefix" | "sa_key" => match int(value) {
            Some(n) => mapped(if name == "sa_key" { "sa-key" } else { "subnet-prefix" }, quoted(&format!("{n:#018x}"))),
            None => skipped(&format!("not imported: {value:?} is not a 64-bit number")),
        },
        "m_key" => match int(value) {
            Some(0) => mapped("m-key", quoted("off")),
            Some(n) => mapped("m-key", quoted(&format!("{n:#018x}"))),
            None => skipped(&format!("not imported: {value:?} is not a 64-bit number")),
        },
        "sm_key" => skipped(&match int(value) {
            Some(1) => "OpenSM's default key 1, which is ibsm's too".to_owned(),
            Some(_) => "the SM_Key is never kept in the configuration: write it into a file of mode 0600 and set \
                    sm-key-file to it"
                .to_owned(),
            None => format!("not imported: {value:?} is not a 64-bit number"),
        }),
        _ => return None,
    })
}

/// `nue_max_num_vls`: ibsm's `max-layers` (which dfsssp takes too); 0, as many VLs as the
/// fabric holds, is ibsm's default.
fn nue_layers(value: &str) -> Fate {
    match int(value) {
        Some(0) => skipped("as many layers as the fabric's VLs hold: ibsm's default"),
        Some(n) => mapped("max-layers", n.min(15).to_string()),
        None => skipped(&format!("not imported: {value:?} is not an integer 0..=255")),
    }
}

/// The fate of OpenSM option `name` with `value`.
fn fate(name: &str, value: &str) -> Fate {
    if let Some((_, _, why)) = SLOW_DEFAULTS.iter().find(|(n, v, _)| *n == name && *v == value) {
        return skipped(why);
    }
    if let Some(f) = file_fate(name, value).or_else(|| key_fate(name, value)) {
        return f;
    }
    let num = |key: &'static str, min: u64, max: u64| match in_range(value, min, max) {
        Ok(n) => mapped(key, n.to_string()),
        Err(e) => Fate::Skipped(format!("not imported: {e}")),
    };
    let choice = |key: &'static str, valid: fn(u8) -> bool| match in_range(value, 0, 255) {
        Ok(n) if u8::try_from(n).is_ok_and(valid) => mapped(key, n.to_string()),
        Ok(n) => Fate::Skipped(format!("not imported: {n} is not a value OpenSM accepts for it")),
        Err(e) => Fate::Skipped(format!("not imported: {e}")),
    };
    match name {
        "sm_priority" => num("priority", 0, 15),
        "lmc" => num("lmc", 0, 7),
        "subnet_timeout" => num("subnet-timeout", 0, 31),
        // OpenSM writes packet_life_time into SwitchInfo.LifeTimeValue.
        "packet_life_time" => num("switch-life-time", 0, 31),
        "head_of_queue_lifetime" => num("head-of-queue-lifetime", 0, 31),
        "leaf_head_of_queue_lifetime" => num("leaf-head-of-queue-lifetime", 0, 31),
        "babbling_port_policy" => match boolean(value) {
            Some(b) => mapped("babbling-port-policy", b.to_string()),
            None => skipped(&format!("not imported: {value:?} is not TRUE or FALSE")),
        },
        "max_rate_enum" => match int(value) {
            Some(63) => skipped("OpenSM's default: any rate, as ibsm without max-rate-enum"),
            Some(n @ 2..=24) => mapped("max-rate-enum", n.to_string()),
            _ => skipped(&format!("not imported: {value:?} is not a rate code 2..=24 (OpenSM takes it as 63: any)")),
        },
        // Folded into max-rate-enum by `import` (OpenSM caps max_rate_enum at 18 with it).
        "use_original_extended_sa_rates_only" => match boolean(value) {
            Some(true) => mapped("max-rate-enum", "18".to_owned()),
            Some(false) => skipped("OpenSM's default: the rates max_rate_enum allows"),
            None => skipped(&format!("not imported: {value:?} is not TRUE or FALSE")),
        },
        "allow_both_pkeys" => match boolean(value) {
            Some(b) => mapped("allow-both-pkeys", b.to_string()),
            None => skipped(&format!("not imported: {value:?} is not TRUE or FALSE")),
        },
        "sm_assigned_guid" => num("sm-assigned-guid", 0, 255),
        "consolidate_ipv6_snm_req" => match boolean(value) {
            Some(b) => mapped("consolidate-ipv6-snm", b.to_string()),
            None => skipped(&format!("not imported: {value:?} is not TRUE or FALSE")),
        },
        "vl_stall_count" => num("vl-stall-count", 0, 7),
        "leaf_vl_stall_count" => num("leaf-vl-stall-count", 0, 7),
        "max_op_vls" => num("max-op-vls", 1, 15),
        "local_phy_errors_threshold" => num("local-phy-errors-threshold", 0, 15),
        "overrun_errors_threshold" => num("overrun-errors-threshold", 0, 15),
        "force_link_speed" => choice("force-link-speed", PortConfig::valid_speed),
        "force_link_speed_ext" => choice("force-link-speed-ext", PortConfig::valid_speed_ext),
        "force_link_width" => choice("force-link-width", PortConfig::valid_width),
        "sweep_interval" => num("sweep-interval-s", 0, 86_400),
        "sminfo_polling_timeout" => num("sm-poll-interval-ms", 1, 3_600_000),
        "polling_retry_number" => num("sm-poll-retries", 1, 100),
        "transaction_timeout" => num("smp-timeout-ms", 1, 60_000),
        "transaction_retries" => num("smp-retries", 0, 100),
        "max_wire_smps" => num("max-smps-in-flight", 1, 65_536),
        "m_key_protection_level" => num("m-key-protect", 0, 3),
        "part_enforce" => match value {
            "both" | "in" | "out" | "off" => mapped("part-enforce", quoted(value)),
            _ => skipped(&format!("not imported: {value:?} is not both, in, out or off")),
        },
        "no_partition_enforcement" => match boolean(value) {
            Some(true) => mapped("part-enforce", quoted("off")),
            Some(false) => skipped("enforcement on, as part_enforce says"),
            None => skipped(&format!("not imported: {value:?} is not TRUE or FALSE")),
        },
        "routing_engine" => routing(value),
        "qos" => match boolean(value) {
            // Made `qos = {}` below when no `qos_*` option is mapped: the `[qos]` table turns QoS on.
            Some(true) => skipped("QoS on: the [qos] options and qos-policy-file below turn it on"),
            Some(false) => skipped("QoS off, as ibsm without qos-policy-file and [qos]"),
            None => skipped(&format!("not imported: {value:?} is not TRUE or FALSE")),
        },
        _ if qos_key(name).is_some() => qos_option(name, value),
        "use_optimized_slvl" => match boolean(value) {
            Some(true) => mapped("use-optimized-slvl", "true".to_owned()),
            Some(false) => skipped("off: OpenSM's default, which is ibsm's"),
            None => skipped("not a boolean"),
        },
        "port_shifting" => match boolean(value) {
            Some(false) => skipped("OpenSM's default, and ibsm's"),
            Some(true) => mapped("port-shifting", "true".to_owned()),
            None => skipped(&format!("not imported: {value:?} is not TRUE or FALSE")),
        },
        "nue_max_num_vls" => nue_layers(value),
        "scatter_ports" if value == "0" => skipped("OpenSM's default, and ibsm's: off"),
        "scatter_ports" => num("scatter-ports", 0, u64::from(u32::MAX)),
        _ => {
            let why = NO_EQUIVALENT
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, w)| *w)
                .or_else(|| FAMILIES.iter().find(|(p, _)| name.starts_with(p)).map(|(_, w)| *w));
            skipped(why.unwrap_or("unknown to ibsm"))
        }
    }
}

/// The TOML key (dotted, under `qos`) of OpenSM's simple QoS option `name`.
fn qos_key(name: &str) -> Option<&'static str> {
    const KEYS: &[(&str, &str)] = &[
        ("qos_max_vls", "qos.max-vls"),
        ("qos_high_limit", "qos.high-limit"),
        ("qos_vlarb_high", "qos.vlarb-high"),
        ("qos_vlarb_low", "qos.vlarb-low"),
        ("qos_sl2vl", "qos.sl2vl"),
        ("qos_ca_max_vls", "qos.ca.max-vls"),
        ("qos_ca_high_limit", "qos.ca.high-limit"),
        ("qos_ca_vlarb_high", "qos.ca.vlarb-high"),
        ("qos_ca_vlarb_low", "qos.ca.vlarb-low"),
        ("qos_ca_sl2vl", "qos.ca.sl2vl"),
        ("qos_sw0_max_vls", "qos.sw0.max-vls"),
        ("qos_sw0_high_limit", "qos.sw0.high-limit"),
        ("qos_sw0_vlarb_high", "qos.sw0.vlarb-high"),
        ("qos_sw0_vlarb_low", "qos.sw0.vlarb-low"),
        ("qos_sw0_sl2vl", "qos.sw0.sl2vl"),
        ("qos_swe_max_vls", "qos.swe.max-vls"),
        ("qos_swe_high_limit", "qos.swe.high-limit"),
        ("qos_swe_vlarb_high", "qos.swe.vlarb-high"),
        ("qos_swe_vlarb_low", "qos.swe.vlarb-low"),
        ("qos_swe_sl2vl", "qos.swe.sl2vl"),
        ("qos_rtr_max_vls", "qos.rtr.max-vls"),
        ("qos_rtr_high_limit", "qos.rtr.high-limit"),
        ("qos_rtr_vlarb_high", "qos.rtr.vlarb-high"),
        ("qos_rtr_vlarb_low", "qos.rtr.vlarb-low"),
        ("qos_rtr_sl2vl", "qos.rtr.sl2vl"),
    ];
    KEYS.iter().find(|(n, _)| *n == name).map(|(_, k)| *k)
}

/// One simple QoS option, checked as ibsm reads it; OpenSM's "unset" values are left out.
fn qos_option(name: &str, value: &str) -> Fate {
    let Some(key) = qos_key(name) else { return skipped("unknown to ibsm") };
    let v = value.trim();
    let unset = v.is_empty()
        || v == "(null)"
        || (key.ends_with("max-vls") && v == "0")
        || (key.ends_with("high-limit") && v == "-1");
    if unset {
        return skipped("unset: OpenSM's default, which is ibsm's");
    }
    if let Err(e) = ibsm_qos::QosOptions::default().set_opensm(name, v) {
        return skipped(&format!("not imported: {e}"));
    }
    if key.ends_with("max-vls") || key.ends_with("high-limit") {
        match int(v) {
            Some(n) => mapped(key, n.to_string()),
            None => skipped(&format!("not imported: {v:?} is not a number")),
        }
    } else {
        mapped(key, quoted(v))
    }
}

/// `routing_engine`: OpenSM's comma list, with the engines ibsm has.
fn routing(value: &str) -> Fate {
    if value == "(null)" || value.is_empty() {
        return skipped("OpenSM's default (minhop); ibsm's default chain ftree, updn, minhop is kept");
    }
    let names: Vec<&str> = value.split(',').map(str::trim).filter(|n| !n.is_empty()).collect();
    let (known, unknown): (Vec<&str>, Vec<&str>) = names.iter().partition(|n| ibsm_routing::KNOWN_NAMES.contains(n));
    if known.is_empty() {
        return skipped(&format!(
            "none of {value:?} is available in ibsm (it has {}); its default chain is kept",
            ibsm_routing::KNOWN_NAMES.join(", ")
        ));
    }
    let list: Vec<String> = known.iter().map(|n| quoted(n)).collect();
    let _ = unknown;
    mapped("routing-engine", format!("[{}]", list.join(", ")))
}

/// Every option of `text` (an `opensm.conf`) and its fate, in file order.
pub fn import(text: &str) -> Vec<Imported> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (name, value) = line.split_once(char::is_whitespace).map_or((line, ""), |(n, v)| (n, v.trim()));
        out.push(Imported { line: i + 1, name: name.to_owned(), value: value.to_owned(), fate: fate(name, value) });
    }
    // OpenSM reads its policy file and its `qos_*` options only with `qos TRUE`; in ibsm the file
    // or the `[qos]` table alone turns QoS on, so with QoS off neither is carried over.
    let qos_on = out.iter().any(|i| i.name == "qos" && boolean(&i.value) == Some(true));
    for i in out.iter_mut().filter(|i| (i.name == "qos_policy_file" || qos_key(&i.name).is_some()) && !qos_on) {
        if matches!(i.fate, Fate::Mapped { .. }) {
            i.fate = skipped("QoS is off in this file (no `qos TRUE`), so it is not used");
        }
    }
    // use_original_extended_sa_rates_only lowers max_rate_enum to 18 when it is higher (as
    // OpenSM's option check does): the lower of the two is kept, whatever their order.
    let rates = |i: &Imported| matches!(&i.fate, Fate::Mapped { key: "max-rate-enum", .. });
    let limits: Vec<u64> = out.iter().filter(|i| rates(i)).filter_map(|i| int(&i.value).or(Some(18))).collect();
    if limits.len() > 1
        && let Some(&low) = limits.iter().min()
    {
        for i in out.iter_mut().filter(|i| rates(i)) {
            i.fate = mapped("max-rate-enum", low.to_string());
        }
    }
    // OpenSM's nue routes on one VL unless `nue_max_num_vls` says otherwise (so that hosts
    // that ignore PathRecord SLs stay free of credit loops); ibsm's takes the fabric's VLs.
    // A file that names nue without the option keeps OpenSM's one layer.
    let nue = out.iter().find(|i| {
        matches!(&i.fate, Fate::Mapped { key: "routing-engine", value } if value.contains(&quoted(ibsm_routing::nue::Nue::NAME)))
    });
    if let Some(line) = nue.map(|i| i.line)
        && !out.iter().any(|i| i.name == "nue_max_num_vls")
    {
        out.push(Imported {
            line,
            name: "nue_max_num_vls".to_owned(),
            value: "1 (OpenSM's default with nue; not in the file)".to_owned(),
            fate: mapped("max-layers", "1".to_owned()),
        });
    }
    // `qos TRUE` with no option mapped: an empty `[qos]` table (OpenSM's defaults), QoS on.
    let qos_table = out.iter().any(|i| matches!(&i.fate, Fate::Mapped { key, .. } if key.starts_with("qos.")));
    if let Some(i) = out.iter_mut().find(|i| i.name == "qos" && boolean(&i.value) == Some(true))
        && !qos_table
    {
        i.fate = mapped("qos", "{}".to_owned());
    }
    out
}

/// `s` fit for a TOML comment: control characters (which TOML does not allow there) as `?`.
fn comment_text(s: &str) -> String {
    s.chars().map(|c| if c.is_control() && c != '\t' { '?' } else { c }).collect()
}

/// The TOML for `imported` (from file `source`): the mapped keys (the last of two OpenSM options
/// naming one ibsm key wins, as in OpenSM), then every option left out, with why, as comments.
pub fn to_toml(imported: &[Imported], source: &str) -> String {
    let mut out = format!("# ibsm.toml from {} (ibsm config import-opensm)\n\n", comment_text(source));
    let mut keys: Vec<(&'static str, &str, &Imported)> = Vec::new();
    for i in imported {
        if let Fate::Mapped { key, value } = &i.fate {
            keys.retain(|(k, ..)| k != key);
            keys.push((key, value.as_str(), i));
        }
    }
    for (key, value, i) in &keys {
        let _ =
            writeln!(out, "{key} = {value}  # {} {} (line {})", comment_text(&i.name), comment_text(&i.value), i.line);
    }
    let left: Vec<&Imported> = imported.iter().filter(|i| matches!(i.fate, Fate::Skipped(_))).collect();
    if !left.is_empty() {
        let _ = writeln!(out, "\n# Not imported ({}):", left.len());
        for i in left {
            if let Fate::Skipped(why) = &i.fate {
                let _ = writeln!(
                    out,
                    "#   {} {} (line {}): {}",
                    comment_text(&i.name),
                    comment_text(&i.value),
                    i.line,
                    comment_text(why)
                );
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "# site settings\n\
        sm_priority 12\n\
        lmc 1\n\
        sm_key 0x00000000DEADBEEF\n\
        sa_key 0x1\n\
        subnet_prefix 0xfe80000000000000\n\
        m_key 0x0000000000001234\n\
        m_key_protection_level 1\n\
        m_key_lease_period 120\n\
        packet_life_time 0x12\n\
        partition_config_file /etc/opensm/partitions.conf\n\
        part_enforce in\n\
        sweep_interval 15\n\
        routing_engine ftree,lash,minhop\n\
        sminfo_polling_timeout 10000\n\
        polling_retry_number 2\n\
        max_wire_smps 8\n\
        vl_stall_count 0x05\n\
        leaf_vl_stall_count 3\n\
        max_op_vls 2\n\
        local_phy_errors_threshold 0x0a\n\
        overrun_errors_threshold 0x04\n\
        force_link_speed 5\n\
        force_link_speed_ext 30\n\
        force_link_width 255\n\
        babbling_port_policy TRUE\n\
        qos TRUE\n\
        daemon FALSE\n\
        some_future_option 7\n\
        allow_both_pkeys TRUE\n";

    #[test]
    fn a_sample_file_maps_what_it_can_and_says_why_for_the_rest() {
        let imported = import(SAMPLE);
        let toml = to_toml(&imported, "opensm.conf");
        let cfg = crate::daemon::config::ConfigFile::parse(&toml, "imported.toml").expect("valid TOML for ibsm");
        let sm = cfg.sm_config();
        assert_eq!((sm.priority, sm.lmc, sm.switch_life_time, sm.sweep_interval_ns), (12, 1, 18, Some(15_000_000_000)));
        assert_eq!(sm.routing_engine, vec!["ftree".to_owned(), "minhop".to_owned()]);
        assert_eq!((sm.sm_poll_retries, sm.max_smps_in_flight), (2, 8));
        let p = sm.ports;
        assert_eq!(
            (p.vl_stall_count, p.leaf_vl_stall_count, p.max_op_vls, p.local_phy_errors, p.overrun_errors),
            (5, 3, 2, 10, 4)
        );
        assert_eq!((p.force_link_speed, p.force_link_speed_ext, p.force_link_width), (5, 30, 255));
        assert!(sm.babbling.enabled, "babbling_port_policy TRUE");
        assert!(sm.allow_both_pkeys, "allow_both_pkeys TRUE");
        // OpenSM's 10 s polling is not copied; ibsm's 200 ms stays.
        assert_eq!(sm.sm_poll_interval_ns, crate::core::SmConfig::default().sm_poll_interval_ns);
        assert!(toml.contains("m-key = \"0x0000000000001234\""), "{toml}");
        assert!(toml.contains("part-enforce = \"in\""), "{toml}");
        assert!(toml.contains("#   sm_key 0x00000000DEADBEEF (line 4): the SM_Key is never kept"), "{toml}");
        assert!(toml.contains("qos = {}  # qos TRUE (line 27)"), "QoS on, OpenSM's defaults: {toml}");
        assert!(toml.contains("#   some_future_option 7 (line 29): unknown to ibsm"), "{toml}");
        assert!(!toml.contains("DEADBEEF\""), "the SM_Key never reaches the TOML as a value");
    }

    #[test]
    fn the_rate_limit_is_the_lower_of_max_rate_enum_and_the_original_rates_only() {
        let limit = |text: &str| {
            let toml = to_toml(&import(text), "opensm.conf");
            crate::daemon::config::ConfigFile::parse(&toml, "imported.toml").expect("valid").sm_config().max_rate_enum
        };
        assert_eq!(limit("max_rate_enum 4\n"), Some(4));
        assert_eq!(limit("max_rate_enum 63\n"), None, "OpenSM's default: any");
        assert_eq!(limit("max_rate_enum 40\n"), None, "not a rate code: OpenSM takes 63");
        assert_eq!(limit("use_original_extended_sa_rates_only TRUE\n"), Some(18));
        assert_eq!(limit("use_original_extended_sa_rates_only FALSE\nmax_rate_enum 21\n"), Some(21));
        for text in [
            "use_original_extended_sa_rates_only TRUE\nmax_rate_enum 21\n",
            "max_rate_enum 21\nuse_original_extended_sa_rates_only TRUE\n",
        ] {
            assert_eq!(limit(text), Some(18), "{text}");
        }
        assert_eq!(limit("max_rate_enum 12\nuse_original_extended_sa_rates_only TRUE\n"), Some(12));
    }

    #[test]
    fn qos_options_map_into_the_qos_table_and_the_policy_file_only_with_qos_on() {
        let path = std::env::temp_dir().join(format!("ibsm-import-qos-{}", std::process::id()));
        std::fs::write(&path, "qos-ulps\n default : 0\nend-qos-ulps\n").unwrap();
        let text = format!(
            "qos TRUE\nqos_policy_file {}\nqos_max_vls 0\nqos_high_limit -1\nqos_vlarb_high (null)\n\
             qos_ca_max_vls 8\nqos_ca_sl2vl 0,1,2,3,4,5,6,7,0,1,2,3,4,5,6,15\nqos_swe_high_limit 6\n\
             qos_swe_vlarb_low 0:0,1:64,2:128\nqos_rtr_sl2vl 0,1\n",
            path.display()
        );
        let toml = to_toml(&import(&text), "opensm.conf");
        let cfg = crate::daemon::config::ConfigFile::parse(&toml, "imported.toml").expect("valid TOML for ibsm");
        assert_eq!(cfg.qos_policy_file.as_deref(), Some(path.as_path()), "{toml}");
        let q = cfg.qos.expect("a qos table");
        let ca = q.config(ibsm_qos::PortClass::Ca).unwrap();
        assert_eq!((ca.max_vls, ca.sl2vl[15]), (8, 15));
        let swe = q.config(ibsm_qos::PortClass::SwitchExternal).unwrap();
        assert_eq!((swe.high_limit, swe.vlarb_low[2].weight), (6, 128));
        assert_eq!(q.max_vls, None, "OpenSM's 0 is unset");
        assert!(toml.contains("#   qos_rtr_sl2vl 0,1 (line 10): not imported: expected 16 VLs"), "{toml}");
        assert!(toml.contains("#   qos_high_limit -1 (line 4): unset"), "{toml}");
        // The same file with QoS off keeps neither the options nor the policy file (either would
        // turn QoS on in ibsm).
        let off = to_toml(&import(&text.replace("qos TRUE", "qos FALSE")), "opensm.conf");
        let cfg = crate::daemon::config::ConfigFile::parse(&off, "off.toml").expect("valid");
        assert_eq!((cfg.qos_policy_file, cfg.qos), (None, None), "{off}");
        assert!(off.contains("QoS is off in this file"), "{off}");
        // `qos TRUE` alone: an empty [qos] table, QoS on with OpenSM's defaults.
        let alone = to_toml(
            &import(
                "qos TRUE
qos_max_vls 0
",
            ),
            "opensm.conf",
        );
        let cfg = crate::daemon::config::ConfigFile::parse(&alone, "alone.toml").expect("valid");
        assert_eq!(cfg.qos, Some(ibsm_qos::QosOptions::default()), "{alone}");
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn a_root_guid_file_is_kept_when_it_exists() {
        let path = std::env::temp_dir().join(format!("ibsm-import-roots-{}", std::process::id()));
        std::fs::write(&path, "0x2000000000000\n").unwrap();
        let imported = import(&format!("root_guid_file {}\n", path.display()));
        let toml = to_toml(&imported, "opensm.conf");
        assert!(toml.contains(&format!("root-guid-file = \"{}\"", path.display())), "{toml}");
        let gone = import("root_guid_file /nonexistent/roots\n");
        assert!(matches!(&gone[0].fate, Fate::Skipped(why) if why.contains("does not exist")), "{gone:?}");
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn nue_keeps_opensms_one_vl_unless_nue_max_num_vls_says_otherwise() {
        // OpenSM's nue routes on one VL by default: the import says so.
        let toml = to_toml(&import("routing_engine nue,minhop\n"), "opensm.conf");
        assert!(toml.contains("max-layers = 1  # nue_max_num_vls 1 (OpenSM's default"), "{toml}");
        let cfg = crate::daemon::config::ConfigFile::parse(&toml, "nue.toml").expect("valid");
        assert_eq!(cfg.max_layers, Some(1));
        let toml = to_toml(&import("routing_engine nue\nnue_max_num_vls 4\n"), "opensm.conf");
        assert!(toml.contains("max-layers = 4  # nue_max_num_vls 4 (line 2)"), "{toml}");
        // 0: as many as the fabric holds, ibsm's default; other engines get no key.
        let auto = import("routing_engine nue\nnue_max_num_vls 0\n");
        assert!(!to_toml(&auto, "opensm.conf").contains("max-layers"), "{auto:?}");
        assert!(!to_toml(&import("routing_engine dfsssp\n"), "opensm.conf").contains("max-layers"));
        let bad = import("nue_max_num_vls lots\n");
        assert!(matches!(&bad[0].fate, Fate::Skipped(why) if why.contains("not an integer")), "{bad:?}");
    }

    #[test]
    fn use_optimized_slvl_is_mapped_when_on() {
        let toml = to_toml(&import("use_optimized_slvl TRUE\n"), "opensm.conf");
        assert!(toml.contains("use-optimized-slvl = true"), "{toml}");
        let cfg = crate::daemon::config::ConfigFile::parse(&toml, "slvl.toml").expect("valid");
        assert_eq!(cfg.use_optimized_slvl, Some(true));
        let off = import("use_optimized_slvl FALSE\n");
        assert!(off.iter().all(|o| matches!(o.fate, Fate::Skipped(_))), "{off:?}");
    }

    #[test]
    fn routing_order_and_port_options_are_mapped() {
        let path = std::env::temp_dir().join(format!("ibsm-import-order-{}", std::process::id()));
        std::fs::write(&path, "0x2000000000000\n").unwrap();
        let imported =
            import(&format!("guid_routing_order_file {}\nport_shifting TRUE\nscatter_ports 42\n", path.display()));
        let toml = to_toml(&imported, "opensm.conf");
        for want in [
            format!("guid-routing-order-file = \"{}\"", path.display()),
            "port-shifting = true".into(),
            "scatter-ports = 42".into(),
        ] {
            assert!(toml.contains(&want), "{want}: {toml}");
        }
        let cfg = crate::daemon::config::ConfigFile::parse(&toml, "order.toml").expect("valid");
        assert_eq!((cfg.port_shifting, cfg.scatter_ports), (Some(true), Some(42)));
        let defaults = import("port_shifting FALSE\nscatter_ports 0\nguid_routing_order_file (null)\n");
        assert!(defaults.iter().all(|o| matches!(o.fate, Fate::Skipped(_))), "{defaults:?}");
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn compute_and_io_node_files_are_kept_when_they_exist() {
        let path = std::env::temp_dir().join(format!("ibsm-import-cn-{}", std::process::id()));
        std::fs::write(&path, "0x2000000000000\n").unwrap();
        let p = path.display();
        let imported = import(&format!("cn_guid_file {p}\nio_guid_file {p}\n"));
        let toml = to_toml(&imported, "opensm.conf");
        assert!(toml.contains(&format!("cn-guid-file = \"{p}\"")), "{toml}");
        assert!(toml.contains(&format!("io-guid-file = \"{p}\"")), "{toml}");
        crate::daemon::config::ConfigFile::parse(&toml, "cn.toml").expect("valid");
        let gone = import("io_guid_file /nonexistent/io\ncn_guid_file (null)\n");
        assert!(matches!(&gone[0].fate, Fate::Skipped(why) if why.contains("does not exist")), "{gone:?}");
        assert!(matches!(&gone[1].fate, Fate::Skipped(why) if why.contains("unset")), "{gone:?}");
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn a_node_name_map_is_kept_when_it_exists() {
        let path = std::env::temp_dir().join(format!("ibsm-import-nnm-{}", std::process::id()));
        std::fs::write(&path, "0x2000000000000 \"spine-a\"\n").unwrap();
        let p = path.display();
        let toml = to_toml(&import(&format!("node_name_map_name {p}\n")), "opensm.conf");
        assert!(toml.contains(&format!("node-name-map = \"{p}\"")), "{toml}");
        let cfg = crate::daemon::config::ConfigFile::parse(&toml, "nnm.toml").expect("valid");
        assert_eq!(cfg.node_name_map.as_deref(), Some(path.as_path()));
        let gone = import("node_name_map_name /nonexistent/map\nnode_name_map_name (null)\n");
        assert!(matches!(&gone[0].fate, Fate::Skipped(why) if why.contains("does not exist")), "{gone:?}");
        assert!(matches!(&gone[1].fate, Fate::Skipped(why) if why.contains("unset")), "{gone:?}");
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn bad_values_are_left_out_with_the_reason() {
        let imported = import(
            "sm_priority 99\nlmc x\nrouting_engine dor\nm_key zz\npart_enforce maybe\nforce_link_speed 8\n\
             force_link_width 300\nforce_link_speed_ext 29\nvl_stall_count 8\n",
        );
        assert!(imported.iter().all(|i| matches!(i.fate, Fate::Skipped(_))), "{imported:?}");
        let toml = to_toml(&imported, "f");
        assert!(crate::daemon::config::ConfigFile::parse(&toml, "f").is_ok(), "{toml}");
        assert!(toml.contains("\"99\" is not a number in 0..=15"), "{toml}");
    }

    proptest::proptest! {
        #[test]
        fn any_text_imports_into_valid_toml(text in "(?s).{0,300}") {
            let toml = to_toml(&import(&text), "f");
            proptest::prop_assert!(crate::daemon::config::ConfigFile::parse(&toml, "f").is_ok(), "{}", toml);
        }
    }
}
