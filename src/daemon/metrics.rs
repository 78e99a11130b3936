//! Prometheus metrics: the SM's figures in the text exposition format, all names prefixed
//! `ibsm_` ([`render`], from the core's getters). The HTTP endpoint that serves them is
//! `metrics_http`.

use std::fmt::Write as _;

use crate::core::{Sm, SmState};

fn metric(out: &mut String, name: &str, kind: &str, help: &str, samples: &[(String, f64)]) {
    let _ = writeln!(out, "# HELP ibsm_{name} {help}");
    let _ = writeln!(out, "# TYPE ibsm_{name} {kind}");
    for (labels, v) in samples {
        let _ = writeln!(out, "ibsm_{name}{labels} {v}");
    }
}

fn one(v: u64) -> Vec<(String, f64)> {
    vec![(String::new(), v as f64)]
}

/// One sample per `(value of label, figure)`.
fn labeled(label: &str, values: &[(&str, f64)]) -> Vec<(String, f64)> {
    values.iter().map(|&(k, v)| (format!("{{{label}=\"{k}\"}}"), v)).collect()
}

/// The SM's figures in Prometheus text format.
pub fn render(sm: &Sm) -> String {
    let mut out = String::new();
    let state = match sm.state() {
        SmState::NotActive => 0,
        SmState::Discovering => 1,
        SmState::Standby => 2,
        SmState::Master => 3,
    };
    metric(&mut out, "sm_state", "gauge", "SM state: 0 not active, 1 discovering, 2 standby, 3 master.", &one(state));
    metric(&mut out, "sm_priority", "gauge", "The priority this SM reports.", &one(u64::from(sm.priority())));
    let (sent, retried, failed) = sm.smp_counters();
    metric(&mut out, "smps_sent_total", "counter", "SMPs sent.", &one(sent));
    metric(&mut out, "smps_retried_total", "counter", "SMPs sent again after a timeout or BUSY.", &one(retried));
    metric(&mut out, "smps_failed_total", "counter", "SMPs that failed after every retry.", &one(failed));
    sweeps(&mut out, sm);
    metric(&mut out, "pkey_blocks_sent_total", "counter", "P_KeyTable blocks written.", &one(sm.pkey_blocks_sent()));
    metric(
        &mut out,
        "mft_blocks_sent_total",
        "counter",
        "Multicast forwarding table blocks written.",
        &one(sm.mft_blocks_sent()),
    );
    let c = sm.request_counters();
    let samples = labeled(
        "outcome",
        &[
            ("answered", c.sa_answered as f64),
            ("busy", c.sa_busy as f64),
            ("dropped", c.sa_dropped as f64),
            ("bad_key", c.sa_bad_key as f64),
            ("not_ready", c.sa_not_ready as f64),
        ],
    );
    metric(&mut out, "sa_requests_total", "counter", "SA requests by outcome.", &samples);
    let answers: Vec<(String, f64)> = sm
        .sa_counts()
        .iter()
        .map(|((attr, st), n)| (format!("{{attribute=\"{attr}\",status=\"{st}\"}}"), *n as f64))
        .collect();
    metric(&mut out, "sa_answers_total", "counter", "SA answers sent, by attribute and status.", &answers);
    traps(&mut out, sm);
    cabling(&mut out, sm);
    metric(
        &mut out,
        "malformed_mads_total",
        "counter",
        "MADs dropped because their header could not be read.",
        &one(c.malformed),
    );
    let violations: Vec<(String, f64)> =
        sm.mkey_violations().iter().map(|(l, v)| (format!("{{lid=\"{}\"}}", l.0), v.count as f64)).collect();
    metric(
        &mut out,
        "mkey_violations_total",
        "counter",
        "Bad-M_Key traps (256) by the LID that raised them.",
        &violations,
    );
    if let Some(r) = sm.last_report() {
        let samples = labeled(
            "kind",
            &[
                ("switches", r.switches as f64),
                ("cas", r.cas as f64),
                ("end_ports", r.end_ports as f64),
                ("links", r.links as f64),
            ],
        );
        metric(&mut out, "fabric_size", "gauge", "What the last completed sweep found.", &samples);
        let samples = labeled("state", &[("active", r.ports_active as f64), ("not_active", r.ports_not_active as f64)]);
        metric(&mut out, "ports", "gauge", "Linked ports by state at the last sweep.", &samples);
        metric(
            &mut out,
            "last_sweep_complete",
            "gauge",
            "1 when the last sweep brought every linked port up.",
            &one(u64::from(r.complete)),
        );
        metric(
            &mut out,
            "last_sweep_seconds",
            "gauge",
            "Duration of the last sweep.",
            &[(String::new(), r.total_ns as f64 / 1e9)],
        );
        let phases: Vec<(String, f64)> =
            r.phases.iter().map(|p| (format!("{{phase=\"{}\"}}", p.phase.name()), p.ns as f64 / 1e9)).collect();
        metric(&mut out, "last_sweep_phase_seconds", "gauge", "Duration of each phase of the last sweep.", &phases);
        metric(
            &mut out,
            "last_sweep_lft_blocks_sent",
            "gauge",
            "LFT blocks the last sweep wrote.",
            &one(r.lft_blocks_sent),
        );
        metric(&mut out, "last_sweep_smps", "gauge", "SMPs the last sweep sent.", &one(r.smps_sent));
    }
    out
}

/// SMP timeouts, sweeps by kind, takeovers.
fn sweeps(out: &mut String, sm: &Sm) {
    metric(
        out,
        "smps_timed_out_total",
        "counter",
        "Waits for an SMP's answer that ran out (each try).",
        &one(sm.smp_timeouts()),
    );
    let (heavy, quick, repair) = sm.sweeps_done();
    let kinds = labeled(
        "kind",
        &[
            ("heavy", heavy as f64),
            ("quick", quick as f64),
            ("repair", repair as f64),
            ("light", sm.light_sweeps() as f64),
        ],
    );
    metric(out, "sweeps_total", "counter", "Sweeps completed, by kind.", &kinds);
    metric(
        out,
        "takeovers_total",
        "counter",
        "Times this SM took the subnet over from its master (failovers).",
        &one(sm.takeovers()),
    );
}

/// The cabling check's figures (`expected-topology`) and the duplicate GUIDs.
fn cabling(out: &mut String, sm: &Sm) {
    let cabling = sm.cabling();
    metric(
        out,
        "cabling_differences",
        "gauge",
        "Differences from the planned cabling (expected-topology).",
        &one(cabling.diff.differences.len() as u64),
    );
    metric(
        out,
        "refused_ports",
        "gauge",
        "Ports left unarmed as ends of miscabled cables (refuse-miscabled) or of loopback cables.",
        &one(cabling.refused.len() as u64),
    );
    metric(
        out,
        "quarantined_guids",
        "gauge",
        "NodeGUIDs two nodes answered with (both quarantined).",
        &one(sm.quarantine().guids.len() as u64),
    );
}

/// Traps by number and how they were handled, unhealthy ports, light sweeps.
fn traps(out: &mut String, sm: &Sm) {
    let t = &sm.trap_book().counters;
    let by_number: Vec<(String, f64)> =
        t.by_number.iter().map(|(n, v)| (format!("{{number=\"{n}\"}}"), *v as f64)).collect();
    metric(out, "traps_total", "counter", "Traps received, by trap number (0: vendor or unreadable).", &by_number);
    let samples = labeled(
        "what",
        &[("suppressed", t.suppressed as f64), ("coalesced", t.coalesced as f64), ("deferred", t.deferred as f64)],
    );
    metric(
        out,
        "trap_handling_total",
        "counter",
        "Traps dropped as duplicates, traps a running sweep already covered, heavy sweeps deferred by the rate limit.",
        &samples,
    );
    metric(
        out,
        "unhealthy_ports",
        "gauge",
        "Ports reported by traps 129-131.",
        &one(sm.trap_book().unhealthy.len() as u64),
    );
    metric(out, "light_sweeps_total", "counter", "Light sweeps completed.", &one(sm.light_sweeps()));
}
