//! Prometheus metrics: the SM's figures in the text exposition format (version 0.0.4), all
//! names prefixed `ibsm_` ([`render`], from the core's getters). The HTTP endpoint that serves
//! them is `metrics_http`.
//!
//! The model and the text are the official `prometheus-client` crate's (a [`Registry`] and its
//! Prometheus text encoder: names, `_total` on counters, HELP and TYPE lines, label escaping).
//! The figures live in the core and are read at each scrape, so each family here is a list of
//! samples taken then ([`Samples`], in the core's order), not a live counter that the SM would
//! have to update as it runs.

use std::fmt;

use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet, prometheus_text};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use crate::core::{Sm, SmState};

/// A sample's labels: `(name, value)` pairs, in order.
pub(crate) type Labels = Vec<(&'static str, String)>;

/// One family's samples as read at a scrape, in the order they were read.
#[derive(Debug)]
enum Samples {
    /// A counter's samples.
    Counter(Vec<(Labels, u64)>),
    /// A gauge's samples, whole numbers.
    Gauge(Vec<(Labels, u64)>),
    /// A gauge's samples in seconds.
    Seconds(Vec<(Labels, f64)>),
}

impl EncodeMetric for Samples {
    fn encode(&self, mut encoder: MetricEncoder<'_>) -> fmt::Result {
        match self {
            Samples::Counter(samples) => {
                for (labels, v) in samples {
                    encoder.encode_family(labels)?.encode_counter::<NoLabelSet, _, u64>(v, None)?;
                }
            }
            Samples::Gauge(samples) => {
                for (labels, v) in samples {
                    encoder.encode_family(labels)?.encode_gauge(v)?;
                }
            }
            Samples::Seconds(samples) => {
                for (labels, v) in samples {
                    encoder.encode_family(labels)?.encode_gauge(v)?;
                }
            }
        }
        Ok(())
    }

    fn metric_type(&self) -> MetricType {
        match self {
            Samples::Counter(_) => MetricType::Counter,
            Samples::Gauge(_) | Samples::Seconds(_) => MetricType::Gauge,
        }
    }
}

/// The families of one scrape. Names are given without the `ibsm_` prefix and, for counters,
/// without `_total` (the encoder adds both); help without its final full stop (the registry
/// adds it).
pub(crate) struct Scrape(Registry);

impl Scrape {
    /// An empty scrape.
    pub(crate) fn new() -> Scrape {
        Scrape(Registry::with_prefix("ibsm"))
    }

    /// The families in Prometheus text format, in the order they were added.
    pub(crate) fn finish(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_text::encode(&mut out, &self.0);
        out
    }

    pub(crate) fn counter(&mut self, name: &str, help: &str, samples: Vec<(Labels, u64)>) {
        self.0.register(name, help, Samples::Counter(samples));
    }
    fn gauge(&mut self, name: &str, help: &str, samples: Vec<(Labels, u64)>) {
        self.0.register(name, help, Samples::Gauge(samples));
    }
    fn seconds(&mut self, name: &str, help: &str, samples: Vec<(Labels, f64)>) {
        self.0.register(name, help, Samples::Seconds(samples));
    }
}

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
    let (sent, retried, failed) = sm.smp_counters();
    m.counter("smps_sent", "SMPs sent", one(sent));
    m.counter("smps_retried", "SMPs sent again after a timeout or BUSY", one(retried));
    m.counter("smps_failed", "SMPs that failed after every retry", one(failed));
    sweeps(&mut m, sm);
    m.counter("pkey_blocks_sent", "P_KeyTable blocks written", one(sm.pkey_blocks_sent()));
    m.counter("mft_blocks_sent", "Multicast forwarding table blocks written", one(sm.mft_blocks_sent()));
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
        .map(|((attr, st), n)| (vec![("attribute", (*attr).to_owned()), ("status", (*st).to_owned())], *n))
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

    /// The scrape of an SM that has brought the 2-level k=4 fat tree up.
    fn scrape_after_bring_up() -> String {
        let text = include_str!("../../examples/fabrics/fat-tree-2l-k4.net");
        let topo = Topology::parse_str(text, "fat-tree-2l-k4.net").expect("fabric");
        let sm = Sm::new(SmConfig::default(), Guid2Lid::default());
        let mut drv = SimDriver::new(&topo, 7, sm, None).expect("driver");
        drv.sweep(60_000_000_000, |_| {}).expect("the fabric comes up");
        render(&drv.sm)
    }

    #[test]
    fn every_family_keeps_its_name_type_and_help() {
        let text = scrape_after_bring_up();
        let families: Vec<(&str, &str)> =
            text.lines().filter_map(|l| l.strip_prefix("# TYPE ")).filter_map(|l| l.split_once(' ')).collect();
        let want = [
            ("ibsm_sm_state", "gauge"),
            ("ibsm_sm_priority", "gauge"),
            ("ibsm_smps_sent_total", "counter"),
            ("ibsm_smps_retried_total", "counter"),
            ("ibsm_smps_failed_total", "counter"),
            ("ibsm_smps_timed_out_total", "counter"),
            ("ibsm_sweeps_total", "counter"),
            ("ibsm_takeovers_total", "counter"),
            ("ibsm_pkey_blocks_sent_total", "counter"),
            ("ibsm_mft_blocks_sent_total", "counter"),
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
        let sent = text.lines().find_map(|l| l.strip_prefix("ibsm_smps_sent_total ")).expect("smps sent");
        assert!(sent.parse::<u64>().is_ok_and(|n| n > 0), "{sent}");
        let phase = text.lines().find(|l| l.starts_with("ibsm_last_sweep_phase_seconds{phase=\"")).expect("a phase");
        assert!(phase.rsplit_once(' ').is_some_and(|(_, v)| v.parse::<f64>().is_ok()), "{phase}");
    }
}
