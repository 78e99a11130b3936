//! `ibsm status` and `ibsm reload`: clients of the running SM's control socket
//! (`ibsm::daemon::control`), printing its answers for people or as JSON.

use std::process::ExitCode;

/// `ibsm status`: what the running SM says about itself.
pub(super) fn status(socket: &std::path::Path, json: bool) -> ExitCode {
    let st = match ibsm::daemon::control::query::<ibsm::daemon::control::Status>(
        socket,
        &ibsm::daemon::control::Query::Status,
        std::time::Duration::from_secs(10),
    ) {
        Ok(st) => st,
        Err(e) => {
            eprintln!("ibsm status: {e}");
            return ExitCode::FAILURE;
        }
    };
    if json {
        return match serde_json::to_string(&st) {
            Ok(line) => {
                println!("{line}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("ibsm status: {e}");
                ExitCode::FAILURE
            }
        };
    }
    println!("state {} (phase {}), subnet {}", st.state, st.phase, if st.subnet_up { "up" } else { "not up" });
    if let Some(l) = &st.last_sweep {
        println!(
            "last sweep ({} ago, took {}): {} switches, {} CAs, {} end ports, {} links; routed by {}; {} SMPs ({} failed); {} ports active, {} not; {}",
            crate::cli::log::fmt_ns(l.age_ms.saturating_mul(1_000_000)),
            crate::cli::log::fmt_ns(l.total_ns),
            l.switches,
            l.cas,
            l.end_ports,
            l.links,
            l.routing_engine,
            l.smps_sent,
            l.smps_failed,
            l.ports_active,
            l.ports_not_active,
            if l.complete { "complete" } else { "incomplete" }
        );
    }
    if let Some(m) = &st.master {
        println!("master {} (LID {}, priority {}); this SM's priority {}", m.guid, m.lid, m.priority, st.priority);
    }
    let m = &st.m_keys;
    let bad: u64 = m.violations.iter().map(|v| v.traps).sum();
    println!("M_Keys {} (protect {}); bad M_Key traps: {bad}", m.mode, m.protect);
    for v in &m.violations {
        println!("  LID {}: {} trap(s) 256", v.lid, v.traps);
    }
    print_sync(&st.state, &st.sync);
    let t = &st.traps;
    let received: Vec<String> = t.received.iter().map(|(n, c)| format!("{c}x{n}")).collect();
    println!(
        "traps: {} ({}); {} suppressed, {} covered by a running sweep, {} sweeps deferred; {} light sweeps",
        t.received.values().sum::<u64>(),
        if received.is_empty() { "none".to_owned() } else { received.join(", ") },
        t.suppressed,
        t.coalesced,
        t.deferred,
        t.light_sweeps
    );
    for u in &t.unhealthy_ports {
        println!("  unhealthy: node {} port {}: {} trap(s), last {}", u.node, u.port, u.count, u.trap);
    }
    if let (true, Some(ms)) = (st.sweeping.held, st.sweeping.held_for_ms) {
        println!(
            "sweeping held for {} (`ibsm sweeping on` lets it go)",
            crate::cli::log::fmt_ns(ms.saturating_mul(1_000_000))
        );
    }
    for d in &st.disabled_ports {
        println!("  disabled: node {} \"{}\" port {} ({})", d.node, d.desc, d.port, d.phys);
    }
    print_problems(&st.problems);
    ExitCode::SUCCESS
}

/// The problems lines of `ibsm status`.
fn print_problems(p: &ibsm::daemon::control::Problems) {
    if p.count() == 0 {
        println!("problems: none");
        return;
    }
    println!("problems: {}", p.count());
    if p.unrouted_lids_total > 0 {
        let some: Vec<String> =
            p.unrouted_lids.iter().map(|u| format!("{} ({} switches)", u.lid, u.switches)).collect();
        let more = p.unrouted_lids_total.saturating_sub(p.unrouted_lids.len());
        let more = if more > 0 { format!(" and {more} more") } else { String::new() };
        println!("  unrouted LIDs: {}{more}", some.join(", "));
    }
    for u in &p.unhealthy_ports {
        println!("  unhealthy port: node {} port {} (trap {})", u.node, u.port, u.trap);
    }
    for b in &p.babbling_ports {
        println!(
            "  babbling port disabled: node {} port {} ({} traps from {}), enabled again in {} s",
            b.node, b.port, b.traps, b.babbler, b.enabled_in_s
        );
    }
    for b in &p.blocked_nodes {
        println!("  did not answer in the last sweep: {} {:?}", b.guid, b.desc);
    }
    if p.ports_not_active > 0 {
        println!("  linked ports not active: {}", p.ports_not_active);
    }
    for line in &p.cabling {
        println!("  cabling: {line}");
    }
    if p.cabling_total > p.cabling.len() {
        println!("  cabling: and {} more", p.cabling_total - p.cabling.len());
    }
    for q in &p.quarantined_guids {
        println!("  duplicate GUID {} (quarantined: {})", q.guid, q.ports.join(" "));
    }
    for r in &p.refused_ports {
        println!("  refused (miscabled, left unarmed): node {} port {}", r.node, r.port);
    }
    for e in &p.port_errors {
        println!("  port errors over threshold: {} {:?} port {}: {}", e.node, e.desc, e.port, e.counters.join(" "));
    }
    for a in &p.avoided_ports {
        let what = if a.kept { "kept in routes (avoiding it would leave a LID unrouted)" } else { "avoided by routes" };
        println!("  port over threshold {what}: {} {:?} port {}", a.node, a.desc, a.port);
    }
}

/// The state sync lines of `ibsm status`.
fn print_sync(state: &str, s: &ibsm::daemon::control::SyncStatusJson) {
    match state {
        "master" => {
            println!("state sync: version {}, {} standby(s)", s.version, s.standbys.len());
            for p in &s.standbys {
                let at = p.current_at.map(|v| format!(" at version {v}")).unwrap_or_default();
                let hint = if p.state == "too old" {
                    " (an older ibsm: it cannot take every section; upgrade it)"
                } else {
                    ""
                };
                println!("  standby {} (LID {}): {}{at}{hint}", p.guid, p.lid, p.state);
            }
        }
        "standby" => match s.current_at {
            Some(v) => println!("state sync: current at the master's version {v} ({} sections)", s.sections.len()),
            None if s.sections.is_empty() => println!("state sync: nothing received from the master"),
            None => println!("state sync: behind the master's version {} (holds {})", s.version, s.sections.join(", ")),
        },
        _ => {}
    }
}

/// `ibsm reload`: the running SM reads its configuration and partition policy again and says
/// what changed; a refused one (its errors printed) leaves the running one in force and exits
/// with status 1.
pub(super) fn reload(socket: &std::path::Path) -> ExitCode {
    match ibsm::daemon::control::query::<ibsm::daemon::control::Reloaded>(
        socket,
        &ibsm::daemon::control::Query::Reload,
        std::time::Duration::from_secs(10),
    ) {
        Ok(r) => {
            let what = match (r.applied.is_empty(), r.reroute, r.sweep) {
                (true, ..) => "nothing changed".to_owned(),
                (false, true, _) => format!("applied {}; the SM sweeps and routes from scratch", r.applied.join(", ")),
                (false, false, true) => {
                    format!("applied {}; the SM sweeps and rewrites only what differs", r.applied.join(", "))
                }
                (false, false, false) => format!("applied {} (no sweep needed)", r.applied.join(", ")),
            };
            println!("reloaded {}: {what}", r.reloaded);
            if !r.restart.is_empty() {
                println!("kept until a restart: {} (the running value stays)", r.restart.join(", "));
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ibsm reload: {e}");
            ExitCode::FAILURE
        }
    }
}
