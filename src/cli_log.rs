//! The SM's events as log lines: every warning and error with its stable `error_id`, the
//! progress line on a terminal.
//!
//! Owns the mapping from [`SmEvent`] to `tracing` events for `ibsm run`; the log format itself
//! (human or JSON lines) is set up in `cli`.

use ibsm::core::SmEvent;

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
        SmEvent::LidSpaceExhausted { ports } => {
            tracing::error!(error_id = "lid-space-exhausted", ports, "LID space exhausted");
        }
        SmEvent::PartitionWarning(what) => {
            tracing::warn!(error_id = "partition-warning", what, "partition policy not honoured in full");
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
        SmEvent::PortUnhealthy { node, port, trap } => {
            tracing::warn!(error_id = "port-unhealthy", node = %node, port = port.0, trap, "port past an error threshold (trap 129-131)");
        }
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
        | SmEvent::SyncReceived { .. }
        | SmEvent::SyncRefused { .. }
        | SmEvent::SyncAdopted { .. } => {
            log_sync_event(ev);
        }
    }
}

/// The state sync's events (see [`log_event`]).
fn log_sync_event(ev: &SmEvent) {
    match ev {
        SmEvent::SyncPeer { standby, state, version } => {
            let standby = format!("{:#018x}", standby.0);
            match *state {
                "foreign" => tracing::info!(standby, "standby is not an ibsm SM (OpenSM?): no state sync"),
                "unreachable" => tracing::warn!(
                    error_id = "sync-unreachable",
                    standby,
                    "standby does not answer the state sync; it will be asked again after the next sweep"
                ),
                _ => tracing::debug!(standby, state, version, "state sync"),
            }
        }
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
