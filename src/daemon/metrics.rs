//! Prometheus metrics: the SM's figures in the text exposition format (version 0.0.4), all
//! names prefixed `ibsm_` ([`render`], from the core's getters). The HTTP endpoint that serves
//! them is `metrics_http`; the performance manager's families (per-port counters) are
//! `metrics_ports`'s.
//!
//! The families are gathered into a [`Scrape`] (`metrics_scrape`, the model and the text).

use crate::core::{Sm, SmState};

use super::metrics_scrape::{Labels, Scrape};

/// One sample without labels.
fn one<V>(v: V) -> Vec<(Labels, V)> {
    vec![(Vec::new(), v)]
}

/// One sample per `(value of label, figure)`.
fn labeled(label: &'static str, values: &[(&str, u64)]) -> Vec<(Labels, u64)> {
    values.iter().map(|&(k, v)| (vec![(label, k.to_owned())], v)).collect()
}

/// The SM's figures in Prometheus text format.
pub fn render(sm: &Sm) -> String {
    let mut m = Scrape::new();
    let state = match sm.state() {
        SmState::NotActive => 0,
        SmState::Discovering => 1,
        SmState::Standby => 2,
        SmState::Master => 3,
    };
    m.gauge("sm_state", "SM state: 0 not active, 1 discovering, 2 standby, 3 master", one(state));
    m.gauge("sm_priority", "The priority this SM reports", one(u64::from(sm.priority())));
    let held = sm.sweeping_held_since().map(|t| sm.now().saturating_sub(t));
    m.gauge(
        "sweeping_held",
        "1 while an operator holds sweeping (ibsm sweeping off), else 0",
        one(u64::from(held.is_some())),
    );
    #[allow(clippy::cast_precision_loss)] // nanoseconds to seconds for display
    let held_s = held.map_or(0.0, |ns| ns as f64 / 1e9);
    m.seconds("sweeping_held_seconds", "How long sweeping has been held (0 when it is not)", one(held_s));
    m.gauge("disabled_ports", "Ports an operator disabled (ibsm port disable)", one(sm.disabled_ports().len() as u64));
    let (sent, retried, failed) = sm.smp_counters();
    m.counter("smps_sent", "SMPs sent", one(sent));
    m.counter("smps_retried", "SMPs sent again after a timeout or BUSY", one(retried));
    m.counter("smps_failed", "SMPs that failed after every retry", one(failed));
    sweeps(&mut m, sm);
    m.counter("pkey_blocks_sent", "P_KeyTable blocks written", one(sm.pkey_blocks_sent()));
    m.counter("mft_blocks_sent", "Multicast forwarding table blocks written", one(sm.mft_blocks_sent()));
    m.counter("mlid_refusals", "Multicast creates refused for want of an MLID (NO_RESOURCES)", one(sm.mlid_refusals()));
    let c = sm.request_counters();
    let samples = labeled(
        "outcome",
        &[
            ("answered", c.sa_answered),
            ("busy", c.sa_busy),
            ("dropped", c.sa_dropped),
            ("bad_key", c.sa_bad_key),
            ("not_ready", c.sa_not_ready),
        ],
    );
    m.counter("sa_requests", "SA requests by outcome", samples);
    let answers = sm
        .sa_counts()
        .iter()
        .map(|((attr, st), n)| (vec![("attribute", attr.to_owned()), ("status", st.to_owned())], n))
        .collect();
    m.counter("sa_answers", "SA answers sent, by attribute and status", answers);
    traps(&mut m, sm);
    cabling(&mut m, sm);
    m.counter("malformed_mads", "MADs dropped because their header could not be read", one(c.malformed));
    let violations = sm.mkey_violations().iter().map(|(l, v)| (vec![("lid", l.0.to_string())], v.count)).collect();
    m.counter("mkey_violations", "Bad-M_Key traps (256) by the LID that raised them", violations);
    if let Some(r) = sm.last_report() {
        let samples = labeled(
            "kind",
            &[
                ("switches", r.switches as u64),
                ("cas", r.cas as u64),
                ("end_ports", r.end_ports as u64),
                ("links", r.links as u64),
            ],
        );
        m.gauge("fabric_size", "What the last completed sweep found", samples);
        let samples = labeled("state", &[("active", r.ports_active as u64), ("not_active", r.ports_not_active as u64)]);
        m.gauge("ports", "Linked ports by state at the last sweep", samples);
        m.gauge(
            "last_sweep_complete",
            "1 when the last sweep brought every linked port up",
            one(u64::from(r.complete)),
        );
        m.seconds("last_sweep_seconds", "Duration of the last sweep", one(r.total_ns as f64 / 1e9));
        let phases = r.phases.iter().map(|p| (vec![("phase", p.phase.name().to_owned())], p.ns as f64 / 1e9)).collect();
        m.seconds("last_sweep_phase_seconds", "Duration of each phase of the last sweep", phases);
        m.gauge("last_sweep_lft_blocks_sent", "LFT blocks the last sweep wrote", one(r.lft_blocks_sent));
        m.gauge("last_sweep_smps", "SMPs the last sweep sent", one(r.smps_sent));
    }
    super::metrics_ports::perf(&mut m, sm);
    m.finish()
}

/// SMP timeouts, sweeps by kind, takeovers.
fn sweeps(m: &mut Scrape, sm: &Sm) {
    m.counter("smps_timed_out", "Waits for an SMP's answer that ran out (each try)", one(sm.smp_timeouts()));
    let (heavy, quick, repair) = sm.sweeps_done();
    let kinds =
        labeled("kind", &[("heavy", heavy), ("quick", quick), ("repair", repair), ("light", sm.light_sweeps())]);
    m.counter("sweeps", "Sweeps completed, by kind", kinds);
    m.counter("takeovers", "Times this SM took the subnet over from its master (failovers)", one(sm.takeovers()));
}

/// The cabling check's figures (`expected-topology`) and the duplicate GUIDs.
fn cabling(m: &mut Scrape, sm: &Sm) {
    let cabling = sm.cabling();
    m.gauge(
        "cabling_differences",
        "Differences from the planned cabling (expected-topology)",
        one(cabling.diff.differences.len() as u64),
    );
    m.gauge(
        "refused_ports",
        "Ports left unarmed as ends of miscabled cables (refuse-miscabled) or of loopback cables",
        one(cabling.refused.len() as u64),
    );
    m.gauge(
        "quarantined_guids",
        "NodeGUIDs two nodes answered with (both quarantined)",
        one(sm.quarantine().guids.len() as u64),
    );
}

/// Traps by number and how they were handled, unhealthy ports, light sweeps, the ports the
/// babbling-port policy disabled.
fn traps(m: &mut Scrape, sm: &Sm) {
    let t = &sm.trap_book().counters;
    let by_number = t.by_number.iter().map(|(n, v)| (vec![("number", n.to_string())], *v)).collect();
    m.counter("traps", "Traps received, by trap number (0: vendor or unreadable)", by_number);
    let samples =
        labeled("what", &[("suppressed", t.suppressed), ("coalesced", t.coalesced), ("deferred", t.deferred)]);
    m.counter(
        "trap_handling",
        "Traps dropped as duplicates, traps a running sweep already covered, heavy sweeps deferred by the rate limit",
        samples,
    );
    m.gauge("unhealthy_ports", "Ports reported by traps 129-131", one(sm.trap_book().unhealthy.len() as u64));
    m.counter("light_sweeps", "Light sweeps completed", one(sm.light_sweeps()));
    let b = sm.babbling();
    m.counter("babbling_ports_disabled", "Ports the babbling-port policy disabled", one(b.disabled_total));
    m.gauge("babbling_ports", "Ports the babbling-port policy holds disabled now", one(b.list().count() as u64));
}

#[cfg(test)]
mod tests {
    use ibsm_topology::Topology;

    use super::*;
    use crate::core::{Guid2Lid, SmConfig};
    use crate::transport::sim::SimDriver;

    /// An SM that has brought the 2-level k=4 fat tree up.
    fn brought_up() -> SimDriver {
        let text = include_str!("../../examples/fabrics/fat-tree-2l-k4.net");
        let topo = Topology::parse_str(text, "fat-tree-2l-k4.net").expect("fabric");
        let sm = Sm::new(SmConfig::default(), Guid2Lid::default());
        let mut drv = SimDriver::new(&topo, 7, sm, None).expect("driver");
        drv.sweep(60_000_000_000, |_| {}).expect("the fabric comes up");
        // The performance manager's first sweep, which starts at the end of the bring-up.
        let t = drv.now();
        drv.run_until(t + 1_000_000_000, |_| false);
        drv
    }

    /// The scrape of an SM that has brought the 2-level k=4 fat tree up.
    fn scrape_after_bring_up() -> String {
        render(&brought_up().sm)
    }

    #[test]
    fn a_hold_and_the_disabled_ports_show() {
        let mut drv = brought_up();
        assert!(drv.sm.hold_sweeping(true));
        drv.sm.set_disabled_ports([(ibsm_mad::Guid(0x20), 3), (ibsm_mad::Guid(0x21), 1)]);
        drv.sm.set_clock(drv.sm.now() + 2_500_000_000);
        let text = render(&drv.sm);
        for line in ["ibsm_sweeping_held 1\n", "ibsm_sweeping_held_seconds 2.5\n", "ibsm_disabled_ports 2\n"] {
            assert!(text.contains(line), "{line:?} missing:\n{text}");
        }
    }

    #[test]
    fn every_family_keeps_its_name_type_and_help() {
        let text = scrape_after_bring_up();
        let families: Vec<(&str, &str)> =
            text.lines().filter_map(|l| l.strip_prefix("# TYPE ")).filter_map(|l| l.split_once(' ')).collect();
        let want = [
            ("ibsm_sm_state", "gauge"),
            ("ibsm_sm_priority", "gauge"),
            ("ibsm_sweeping_held", "gauge"),
            ("ibsm_sweeping_held_seconds", "gauge"),
            ("ibsm_disabled_ports", "gauge"),
            ("ibsm_smps_sent_total", "counter"),
            ("ibsm_smps_retried_total", "counter"),
            ("ibsm_smps_failed_total", "counter"),
            ("ibsm_smps_timed_out_total", "counter"),
            ("ibsm_sweeps_total", "counter"),
            ("ibsm_takeovers_total", "counter"),
            ("ibsm_pkey_blocks_sent_total", "counter"),
            ("ibsm_mft_blocks_sent_total", "counter"),
            ("ibsm_mlid_refusals_total", "counter"),
            ("ibsm_sa_requests_total", "counter"),
            ("ibsm_sa_answers_total", "counter"),
            ("ibsm_traps_total", "counter"),
            ("ibsm_trap_handling_total", "counter"),
            ("ibsm_unhealthy_ports", "gauge"),
            ("ibsm_light_sweeps_total", "counter"),
            ("ibsm_babbling_ports_disabled_total", "counter"),
            ("ibsm_babbling_ports", "gauge"),
            ("ibsm_cabling_differences", "gauge"),
            ("ibsm_refused_ports", "gauge"),
            ("ibsm_quarantined_guids", "gauge"),
            ("ibsm_malformed_mads_total", "counter"),
            ("ibsm_mkey_violations_total", "counter"),
            ("ibsm_fabric_size", "gauge"),
            ("ibsm_ports", "gauge"),
            ("ibsm_last_sweep_complete", "gauge"),
            ("ibsm_last_sweep_seconds", "gauge"),
            ("ibsm_last_sweep_phase_seconds", "gauge"),
            ("ibsm_last_sweep_lft_blocks_sent", "gauge"),
            ("ibsm_last_sweep_smps", "gauge"),
            ("ibsm_perf_sweeps_total", "counter"),
            ("ibsm_perf_mads_total", "counter"),
            ("ibsm_perf_threshold_events_total", "counter"),
            ("ibsm_perf_ports_over_threshold", "gauge"),
            ("ibsm_perf_avoided_ports", "gauge"),
            ("ibsm_perf_avoid_kept_ports", "gauge"),
            ("ibsm_perf_avoid_reroutes_total", "counter"),
            ("ibsm_perf_avoid_deferred_total", "counter"),
            ("ibsm_perf_last_sweep_seconds", "gauge"),
            ("ibsm_perf_last_sweep_ports", "gauge"),
            ("ibsm_port_transmit_bytes_total", "counter"),
            ("ibsm_port_receive_bytes_total", "counter"),
            ("ibsm_port_transmit_packets_total", "counter"),
            ("ibsm_port_receive_packets_total", "counter"),
            ("ibsm_port_transmit_wait_total", "counter"),
            ("ibsm_port_errors_total", "counter"),
        ];
        assert_eq!(families, want, "{text}");
        assert!(text.contains("# HELP ibsm_smps_sent_total SMPs sent.\n"), "{text}");
        assert!(!text.contains(".."), "a help line ends in two full stops:\n{text}");
        assert!(!text.contains("# EOF"), "Prometheus text, not OpenMetrics:\n{text}");
    }

    #[test]
    fn samples_carry_their_labels_and_values() {
        let text = scrape_after_bring_up();
        // 2-level k=4 fat tree: 4 leaves and 2 spines (6 switches), 8 hosts.
        for line in [
            "ibsm_sm_state 3\n",
            "ibsm_sweeping_held 0\n",
            "ibsm_disabled_ports 0\n",
            "ibsm_fabric_size{kind=\"switches\"} 6\n",
            "ibsm_fabric_size{kind=\"cas\"} 8\n",
            "ibsm_sweeps_total{kind=\"heavy\"} 1\n",
            "ibsm_sweeps_total{kind=\"light\"} 0\n",
            "ibsm_takeovers_total 0\n",
            "ibsm_last_sweep_complete 1\n",
            "ibsm_sa_requests_total{outcome=\"answered\"} 0\n",
        ] {
            assert!(text.contains(line), "{line:?} missing:\n{text}");
        }
        // Per port, in bytes: PortXmitData (4-byte words) x 4. Every MAD is 72 words, so a
        // port's bytes are 288 times its packets.
        let value = |prefix: &str| -> u64 {
            let line =
                text.lines().find(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("{prefix} missing:\n{text}"));
            line.rsplit_once(' ').and_then(|(_, v)| v.parse().ok()).expect("a number")
        };
        let port = "{node_guid=\"";
        let bytes = value(&format!("ibsm_port_transmit_bytes_total{port}"));
        let pkts = value(&format!("ibsm_port_transmit_packets_total{port}"));
        assert!(pkts > 0 && bytes == 288 * pkts, "{bytes} bytes, {pkts} packets");
        assert_eq!(value("ibsm_perf_sweeps_total "), 1);
        assert_eq!(value("ibsm_perf_last_sweep_ports "), 32, "every cabled port of the 2-level k=4 tree");
        let sent = text.lines().find_map(|l| l.strip_prefix("ibsm_smps_sent_total ")).expect("smps sent");
        assert!(sent.parse::<u64>().is_ok_and(|n| n > 0), "{sent}");
        let phase = text.lines().find(|l| l.starts_with("ibsm_last_sweep_phase_seconds{phase=\"")).expect("a phase");
        assert!(phase.rsplit_once(' ').is_some_and(|(_, v)| v.parse::<f64>().is_ok()), "{phase}");
    }
}
