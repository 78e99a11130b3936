//! The SM's events as log lines: every warning and error with its stable `error_id`, the
//! progress line on a terminal.
//!
//! Owns the mapping from [`SmEvent`] to `tracing` events for `ibsm run`, the daemon's own lines
//! (sweep summaries, "standby", "fabric stable": text on stdout, or info events under JSON
//! logging) and the setting up of the log format (human or JSON lines).

use ibsm::core::{SmEvent, SubnetReport};

/// Logs one event of the core (warnings and errors with their `error_id`).
pub(crate) fn log_event(ev: &SmEvent) {
    match ev {
        SmEvent::PhaseStarted { phase, at } => {
            tracing::debug!(phase = phase.name(), at_ns = at, "phase");
            progress(phase.name());
        }
        SmEvent::SmpFailed { attr_id, attr_mod, path, failure } => {
            tracing::warn!(error_id = "smp-failed", attr = format_args!("{attr_id:#06x}"), attr_mod, path = %path, failure = %failure, "SMP failed");
        }
        SmEvent::MlidPoolExhausted { pool } => {
            tracing::error!(
                error_id = "mlid-pool-exhausted",
                pool,
                "multicast join refused: every MLID the switches can hold is in use (logged once until one is free)"
            );
        }
        SmEvent::LidSpaceExhausted { ports } => {
            tracing::error!(error_id = "lid-space-exhausted", ports, "LID space exhausted");
        }
        SmEvent::PartitionWarning(what) => {
            tracing::warn!(error_id = "partition-warning", what, "partition policy not honoured in full");
        }
        SmEvent::QosWarning(what) => {
            tracing::warn!(error_id = "qos-warning", what, "QoS setting not applied");
        }
        SmEvent::RoutingFailed { engine, reason } => {
            tracing::error!(error_id = "routing-failed", engine, reason, "routing failed");
        }
        SmEvent::EngineDeclined { engine, reason } => {
            tracing::warn!(
                error_id = "engine-declined",
                engine,
                reason,
                "routing engine declined; trying the next one"
            );
        }
        SmEvent::LayersNotPaired { engine, layers } => {
            tracing::warn!(
                error_id = "layers-not-paired",
                engine,
                layers,
                "layered route not paired: a pair's two directions may be on different layers, so RC replies (sent on the requester's SL) may loop on the VLs"
            );
        }
        SmEvent::SubnetUp(_) => {}
        SmEvent::RequestUnsupported { class, method, attr_id, from } => tracing::debug!(
            class = format_args!("{class:#04x}"),
            method = format_args!("{method:#04x}"),
            attr = format_args!("{attr_id:#06x}"),
            from = from.0,
            "request not supported yet; answered with status 0x000c"
        ),
        SmEvent::SmInfoAnswered { from, phase } => {
            tracing::debug!(from = from.0, phase = phase.name(), "SMInfo answered");
        }
        SmEvent::TrapReceived { from, number, action } => {
            tracing::info!(from = from.0, trap = ?number, action = action.name(), "trap received and acknowledged");
        }
        SmEvent::PortUnhealthy { .. } | SmEvent::PortErrors { .. } => log_port_health(ev),
        SmEvent::PortAvoided { .. } | SmEvent::PortAvoidKept { .. } | SmEvent::PortUsedAgain { .. } => {
            log_avoid_event(ev);
        }
        SmEvent::BabblingPort { .. } | SmEvent::PortSettingNotKept { .. } | SmEvent::LinksBounced { .. } => {
            log_port_event(ev);
        }
        SmEvent::Cabling { .. } | SmEvent::DuplicateGuid { .. } => log_fabric_identity(ev),
        SmEvent::SaBadKey { from, key } => {
            tracing::warn!(
                error_id = "sa-bad-key",
                from = from.0,
                key = %format_args!("{key:#018x}"),
                "SA request with a wrong SA key dropped"
            );
        }
        SmEvent::MalformedMad { from, len } => {
            tracing::warn!(error_id = "malformed-mad", from = from.0, len, "malformed MAD dropped");
        }
        SmEvent::Standby { .. }
        | SmEvent::MasterLost { .. }
        | SmEvent::ForeignSm { .. }
        | SmEvent::HandedOver { .. }
        | SmEvent::SmControl { .. }
        | SmEvent::BadMKey { .. } => log_sm_event(ev),
        SmEvent::SyncPeer { .. }
        | SmEvent::SyncLftsHeld { .. }
        | SmEvent::SyncReceived { .. }
        | SmEvent::SyncRefused { .. }
        | SmEvent::SyncAdopted { .. } => {
            log_sync_event(ev);
        }
    }
}

/// The name a log line shows for the node `guid` (`name = "..."`): the node name map's
/// (`node-name-map`), else `desc`.
fn shown(guid: ibsm_mad::Guid, desc: &str) -> String {
    ibsm::daemon::node_names::name(guid).unwrap_or_else(|| desc.to_owned())
}

/// The lines of `perf-avoid-unhealthy`: a port's link left out of the routes, kept in them,
/// or used again.
fn log_avoid_event(ev: &SmEvent) {
    match ev {
        SmEvent::PortAvoided { node, port, desc } => {
            tracing::warn!(
                error_id = "port-avoided",
                node = %node,
                name = %shown(*node, desc),
                port = port.0,
                "routes avoid this port's link: over an error threshold for several intervals (perf-avoid-unhealthy)"
            );
        }
        SmEvent::PortAvoidKept { node, port, desc } => {
            tracing::warn!(
                error_id = "port-avoid-kept",
                node = %node,
                name = %shown(*node, desc),
                port = port.0,
                "port over its error thresholds kept in the routes: avoiding its link would leave a LID unrouted"
            );
        }
        SmEvent::PortUsedAgain { node, port, desc } => {
            tracing::info!(node = %node, name = %shown(*node, desc), port = port.0, "routes use this port's link again");
        }
        _ => {}
    }
}

/// A port's error counters past their thresholds (traps 129-131, or one PerfMgr interval).
fn log_port_health(ev: &SmEvent) {
    match ev {
        SmEvent::PortUnhealthy { node, port, trap } => {
            tracing::warn!(error_id = "port-unhealthy", node = %node, name = %shown(*node, ""), port = port.0, trap, "port past an error threshold (trap 129-131)");
        }
        SmEvent::PortErrors { node, port, desc, over } => {
            let counters: Vec<String> = over.iter().map(|(c, d, t)| format!("{c}={d} (threshold {t})")).collect();
            tracing::warn!(
                error_id = "port-errors",
                node = %node,
                name = %shown(*node, desc),
                port = port.0,
                desc,
                counters = counters.join(", "),
                "port error counters over their thresholds in one interval"
            );
        }
        _ => {}
    }
}

/// The fabric is not what it should be: cabling against expected-topology, a duplicate GUID.
fn log_fabric_identity(ev: &SmEvent) {
    match ev {
        SmEvent::Cabling { differences, refused } if differences.is_empty() => {
            tracing::warn!(error_id = "cabling-as-planned", refused, "the cabling is as planned again");
        }
        SmEvent::Cabling { differences, refused } => {
            // The first lines; `ibsm status` lists them all.
            let shown: Vec<&str> = differences.iter().take(20).map(String::as_str).collect();
            tracing::warn!(
                error_id = "cabling-differs",
                differences = differences.len(),
                refused,
                first = %shown.join("; "),
                "the cabling differs from expected-topology, or has a loopback cable"
            );
        }
        SmEvent::DuplicateGuid { guid, ports } => {
            let ends: Vec<String> = ports.iter().map(|(g, p)| format!("{:#018x}[{p}]", g.0)).collect();
            tracing::error!(
                error_id = "duplicate-guid",
                guid = %format_args!("{:#018x}", guid.0),
                quarantined = %ends.join(" "),
                "two nodes answer with one GUID; both quarantined, the SM goes on"
            );
        }
        _ => {}
    }
}

/// The port policies' events: the babbling-port policy, port settings not kept.
fn log_port_event(ev: &SmEvent) {
    match ev {
        SmEvent::BabblingPort { node, port, babbler, traps, disabled: true } => {
            tracing::error!(
                error_id = "babbling-port-disabled",
                node = %node,
                name = %shown(*node, ""),
                port = port.0,
                babbler_node = %babbler.0,
                babbler_port = babbler.1.0,
                traps,
                "a port sent too many traps (babbling-port-policy); the nearer end of its cable is disabled for the back-off"
            );
        }
        SmEvent::BabblingPort { node, port, .. } => {
            tracing::warn!(
                error_id = "babbling-port-enabled",
                node = %node,
                name = %shown(*node, ""),
                port = port.0,
                "a port disabled by the babbling-port policy is enabled again"
            );
        }
        SmEvent::LinksBounced { ports } => {
            let shown: Vec<String> = ports.iter().take(3).map(|(node, port)| format!("{node}[{}]", port.0)).collect();
            let more = if ports.len() > 3 { format!("; and {} more", ports.len() - 3) } else { String::new() };
            tracing::info!(
                ports = ports.len(),
                examples = %format_args!("{}{more}", shown.join("; ")),
                "links bounced (PortState Down) for a new NeighborMTU or OperationalVLs, as OpenSM does"
            );
        }
        SmEvent::PortSettingNotKept { ports } => {
            tracing::warn!(
                error_id = "port-setting-not-kept",
                ports = ports.len(),
                examples = %not_kept_examples(ports),
                "ports did not keep port settings they were sent; not sent to them again until the configuration changes"
            );
        }
        _ => {}
    }
}

/// The first few ports of a `port-setting-not-kept` summary: `GUID[port] (settings); ...`,
/// with "and N more" when there are more.
fn not_kept_examples(ports: &[ibsm::core::port_settings::NotKept]) -> String {
    const SHOWN: usize = 3;
    let mut out: Vec<String> =
        ports.iter().take(SHOWN).map(|(node, port, s)| format!("{node}[{}] ({})", port.0, s.join(", "))).collect();
    if ports.len() > SHOWN {
        out.push(format!("and {} more", ports.len() - SHOWN));
    }
    out.join("; ")
}

/// The state sync's events (see [`log_event`]).
fn log_sync_event(ev: &SmEvent) {
    match ev {
        SmEvent::SyncPeer { standby, state, version } => {
            let standby = format!("{:#018x}", standby.0);
            match *state {
                "foreign" => tracing::info!(standby, "standby is not an ibsm SM (OpenSM?): no state sync"),
                "too old" => tracing::warn!(
                    error_id = "sync-standby-too-old",
                    standby,
                    "standby runs an older ibsm that cannot take every state sync section: it gets the ones it \
                     takes and is never current, and a takeover by it loses the rest; upgrade it"
                ),
                "unreachable" => tracing::warn!(
                    error_id = "sync-unreachable",
                    standby,
                    "standby does not answer the state sync; it will be asked again after the next sweep"
                ),
                _ => tracing::debug!(standby, state, version, "state sync"),
            }
        }
        SmEvent::SyncLftsHeld { held_ns, seen: true } => {
            tracing::debug!(
                held_us = held_ns / 1_000,
                "LFT writes held until every standby saw the digests they change"
            );
        }
        SmEvent::SyncLftsHeld { held_ns, seen: false } => tracing::warn!(
            error_id = "sync-digests-unseen",
            held_ms = held_ns / 1_000_000,
            "LFT writes went on before every standby had seen the digests they change: a standby that takes over \
             before it is synced again may trust a switch's older table"
        ),
        SmEvent::SyncReceived { section, version } => {
            tracing::debug!(section, version, "state sync: section received");
        }
        SmEvent::SyncRefused { from, reason } => {
            tracing::warn!(error_id = "sync-refused", from = from.0, reason, "state sync message refused");
        }
        SmEvent::SyncAdopted { sections, current_at } => match (sections, current_at) {
            (0, _) => {
                tracing::info!("taking over without synced state: LIDs from the ports, groups and services rebuilt");
            }
            (_, Some(v)) => tracing::info!(sections, version = v, "taking over with the master's state"),
            (_, None) => tracing::warn!(
                error_id = "sync-stale",
                sections,
                "taking over with the master's state as last received, which was not current"
            ),
        },
        _ => {}
    }
}

/// The election's and the M_Keys' events (see [`log_event`]).
fn log_sm_event(ev: &SmEvent) {
    match ev {
        SmEvent::Standby { master, priority, lid } => tracing::info!(
            master = format_args!("{:#018x}", master.0),
            priority,
            lid = lid.0,
            "standby: another SM is master (or better); watching it"
        ),
        SmEvent::MasterLost { master, reason } => {
            tracing::warn!(
                error_id = "master-lost",
                master = format_args!("{:#018x}", master.0),
                reason,
                "master gone; taking over"
            );
        }
        SmEvent::ForeignSm { guid, priority } => tracing::warn!(
            error_id = "foreign-sm",
            sm = format_args!("{:#018x}", guid.0),
            priority,
            "an SM with another SM_Key is on the subnet; ignored (give both the same sm-key-file)"
        ),
        SmEvent::HandedOver { to } => {
            tracing::info!(to = format_args!("{:#018x}", to.0), "handed the subnet to a better standby");
        }
        SmEvent::SmControl { control, from, accepted } => {
            let name = ibsm::core::election::control::name(*control);
            let from = format!("{:#018x}", from.0);
            if *accepted {
                tracing::info!(control = name, from, "SMInfo control obeyed");
            } else {
                tracing::warn!(
                    error_id = "sm-control-refused",
                    control = name,
                    from,
                    "SMInfo control refused (wrong SM_Key, or not from the SM entitled to it)"
                );
            }
        }
        SmEvent::BadMKey { lid, from, method, attr_id, m_key, return_path, count, ours, lease_s } => {
            let path: Vec<String> = return_path.iter().map(u8::to_string).collect();
            if *ours {
                let recovery = match lease_s {
                    Some(0) | None => {
                        "its lease never expires: clear the key on the port, or give ibsm the key (guid2mkey)"
                            .to_owned()
                    }
                    Some(s) => format!("recovery when its lease expires, in {s} s; a sweep is scheduled then"),
                };
                tracing::warn!(
                    error_id = "mkey-unknown",
                    lid = lid.0,
                    traps = count,
                    recovery,
                    "port refuses this SM's M_Key (it holds a key ibsm does not know)"
                );
            } else {
                tracing::warn!(
                    error_id = "bad-mkey",
                    lid = lid.0,
                    from = from.0,
                    method = format_args!("{method:#04x}"),
                    attr = format_args!("{attr_id:#06x}"),
                    m_key = format_args!("{:#018x}", m_key.0),
                    path = path.join(","),
                    traps = count,
                    "bad M_Key: an SMP with a wrong key reached the port (another SM, or an attack)"
                );
            }
        }
        _ => {}
    }
}

/// On a terminal, a progress line per sweep phase (overwritten in place), so that a large fabric
/// that takes a while shows where the SM is; nothing when stderr is a file or a pipe.
fn progress(phase: &str) {
    use std::io::{IsTerminal, Write};
    let mut err = std::io::stderr();
    if err.is_terminal() {
        let end = if phase == "up" { "\r\x1b[K" } else { "" };
        let _ = write!(err, "\r\x1b[Ksweep: {phase}...{end}");
        let _ = err.flush();
    }
}

/// Set by `--log-format json`: the daemon's own lines (sweep summaries, "standby", "fabric
/// stable") go out as info events of target `ibsm::summary` in the log's format, not as text on
/// stdout. One-shot commands print to stdout whatever the format.
static JSON_LOGS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Says one of the daemon's own lines: on stdout, or as an info event under JSON logging.
pub(crate) fn say(line: &str) {
    if JSON_LOGS.load(std::sync::atomic::Ordering::Relaxed) {
        tracing::info!(target: "ibsm::summary", "{line}");
    } else {
        println!("{line}");
    }
}

/// Says a sweep's summary: the line [`summary`] makes, or under JSON logging an info event
/// with its figures as fields.
pub(crate) fn say_report(r: &SubnetReport, wall: std::time::Duration) {
    if !JSON_LOGS.load(std::sync::atomic::Ordering::Relaxed) {
        println!("{}", summary(r, wall));
        return;
    }
    let phases: Vec<String> = r.phases.iter().map(|p| format!("{}={}", p.phase.name(), p.ns)).collect();
    let blocked: Vec<String> = r.blocked.iter().map(|b| b.guid.to_string()).collect();
    tracing::info!(
        target: "ibsm::summary",
        complete = r.complete,
        switches = r.switches,
        cas = r.cas,
        end_ports = r.end_ports,
        links = r.links,
        lmc = r.lmc,
        sm_lid = r.sm_lid.0,
        routing = %r.routing_engine,
        smps = r.smps_sent,
        smps_retried = r.smps_retried,
        smps_failed = r.smps_failed,
        lft_blocks_sent = r.lft_blocks_sent,
        lft_blocks_unchanged = r.lft_blocks_unchanged,
        ports_active = r.ports_active,
        ports_not_active = r.ports_not_active,
        fabric_ns = r.total_ns,
        wall_ns = u64::try_from(wall.as_nanos()).unwrap_or(u64::MAX),
        phases_ns = %phases.join(" "),
        blocked = %blocked.join(" "),
        "{}",
        if r.complete { "subnet up" } else { "subnet NOT up" }
    );
}

/// One line an operator can read: what came up, how, and where the time went.
fn summary(r: &SubnetReport, wall: std::time::Duration) -> String {
    use std::fmt::Write;
    let mut s = format!(
        "subnet {}: {} switches, {} CAs, {} end ports, {} links; LMC {}, SM LID {}; routing {}{}; \
         {} SMPs ({} retried, {} failed), {} LFT blocks sent ({} unchanged); {} ports active, {} not; phases",
        if r.complete { "up" } else { "NOT up" },
        r.switches,
        r.cas,
        r.end_ports,
        r.links,
        r.lmc,
        r.sm_lid,
        r.routing_engine,
        match r.routing_mode {
            ibsm::core::lft::RouteMode::Full => String::new(),
            ibsm::core::lft::RouteMode::Reused => " (tables of the last full route)".to_owned(),
            ibsm::core::lft::RouteMode::Repaired { lids, stranded, passes, .. } => format!(
                " (repaired: {lids} LIDs rerouted{}{})",
                if stranded > 0 { format!(", {stranded} pairs stranded on a new SL") } else { String::new() },
                if passes > 1 { ", changed entries dropped first" } else { "" }
            ),
        },
        r.smps_sent,
        r.smps_retried,
        r.smps_failed,
        r.lft_blocks_sent,
        r.lft_blocks_unchanged,
        r.ports_active,
        r.ports_not_active,
    );
    for p in &r.phases {
        let _ = write!(s, " {} {},", p.phase.name(), fmt_ns(p.ns));
    }
    let _ = write!(s, " total {} fabric time, {} wall", fmt_ns(r.total_ns), fmt_ns(wall.as_nanos() as u64));
    if !r.blocked.is_empty() {
        let names: Vec<String> = r.blocked.iter().map(|b| format!("{} ({})", b.desc, b.guid)).collect();
        let _ = write!(
            s,
            "; {} node(s) did not answer, kept from the last sweep with their LIDs and routes: {}",
            r.blocked.len(),
            names.join(", ")
        );
    }
    if !r.failed_nodes.is_empty() {
        let names: Vec<String> = r.failed_nodes.iter().map(|b| format!("{} ({})", b.desc, b.guid)).collect();
        let _ = write!(
            s,
            "; Sets failed on {} node(s), a repair sweep follows: {}",
            r.failed_nodes.len(),
            names.join(", ")
        );
    }
    s
}

/// A duration in the unit that reads best: `850 us`, `12.3 ms`, `4.56 s`.
pub(crate) fn fmt_ns(ns: u64) -> String {
    let f = ns as f64;
    if ns < 1_000_000 {
        format!("{:.0} us", f / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{:.1} ms", f / 1e6)
    } else {
        format!("{:.2} s", f / 1e9)
    }
}

/// Logs to stderr; `RUST_LOG` selects the level (default: warnings and errors, and under JSON
/// logging the daemon's own summaries). Colour only when stderr is a terminal (not a file, a
/// pipe or journald).
pub(crate) fn init_logging(json: bool) {
    use std::io::IsTerminal;
    JSON_LOGS.store(json, std::sync::atomic::Ordering::Relaxed);
    let default = if json { "warn,ibsm::summary=info" } else { "warn" };
    let base = std::env::var(tracing_subscriber::EnvFilter::DEFAULT_ENV)
        .ok()
        .filter(|v| tracing_subscriber::EnvFilter::try_new(v).is_ok())
        .unwrap_or_else(|| default.to_owned());
    let fmt = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(&base))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    // `ibsm log-level` changes the filter of a running SM through the reload handle.
    let installed = if json {
        let fmt = fmt.event_format(ibsm::daemon::logfmt::JsonLines).with_filter_reloading();
        let apply = filter_setter(fmt.reload_handle());
        fmt.try_init().map(|()| apply)
    } else {
        let fmt = fmt.with_filter_reloading();
        let apply = filter_setter(fmt.reload_handle());
        fmt.try_init().map(|()| apply)
    };
    if let Ok(apply) = installed {
        ibsm::daemon::log_level::install(&base, apply);
    }
}

/// Puts a new filter in force through `handle`.
fn filter_setter<S: 'static>(
    handle: tracing_subscriber::reload::Handle<tracing_subscriber::EnvFilter, S>,
) -> ibsm::daemon::log_level::Apply
where
    tracing_subscriber::reload::Handle<tracing_subscriber::EnvFilter, S>: Send + Sync,
{
    Box::new(move |directives: &str| {
        let next = tracing_subscriber::EnvFilter::try_new(directives).map_err(|e| e.to_string())?;
        handle.reload(next).map_err(|e| e.to_string())
    })
}
