//! The performance manager's Prometheus families: its own figures (PM sweeps, MADs, ports over
//! a threshold) and the counters of each port, in true units (`PortXmitData`/`PortRcvData`
//! count 4-byte words: exported ×4 as bytes), labelled by node GUID, port and node description
//! only (no LID: a LID can change at a sweep, the series must not). Which ports are exported is
//! the `perf-metrics-ports` setting ([`PortExport`]): all, only those with errors, or those and
//! the top N by traffic over the last interval, for fabrics too large for a series per port.

use crate::core::Sm;
use crate::core::perf::counters::{Counter, PortBook};
use crate::core::perf::{PortExport, PortKey};

use super::metrics_scrape::{Labels, Scrape};

/// The PM's families, added to `m`.
pub(crate) fn perf(m: &mut Scrape, sm: &Sm) {
    let pm = sm.perf();
    let c = pm.counts();
    m.counter("perf_sweeps", "Performance manager sweeps completed (every port's counters read)", one(c.sweeps));
    let mads = [
        ("sent", c.sent),
        ("answered", c.answers),
        ("timed_out", c.timeouts),
        ("failed", c.failed),
        ("clears", c.clears),
    ];
    let mads = mads.iter().map(|(k, v)| (vec![("what", (*k).to_owned())], *v)).collect();
    m.counter("perf_mads", "Performance manager MADs: sent, answered, timed out, given up, counter clears", mads);
    m.counter(
        "perf_threshold_events",
        "Times a port's error counters went over their thresholds in one interval",
        one(c.threshold_events),
    );
    m.gauge(
        "perf_ports_over_threshold",
        "Ports over an error threshold in their last interval",
        one(pm.flagged().len() as u64),
    );
    let (reroutes, deferred) = pm.avoid_counts();
    m.gauge(
        "perf_avoided_ports",
        "Ports whose link the routing leaves out (perf-avoid-unhealthy)",
        one(pm.routed().cut.len() as u64),
    );
    m.gauge(
        "perf_avoid_kept_ports",
        "Ports to avoid whose link stays in the routes: leaving it out would leave a LID unrouted",
        one(pm.routed().kept.len() as u64),
    );
    m.counter("perf_avoid_reroutes", "Re-routes a change of the avoided ports caused", one(reroutes));
    m.counter(
        "perf_avoid_deferred",
        "PM intervals whose change of the avoided ports waited for the re-route budget",
        one(deferred),
    );
    if let Some(s) = pm.last_sweep() {
        #[allow(clippy::cast_precision_loss)] // seconds for people
        let secs = s.ended_at.saturating_sub(s.started_at) as f64 / 1e9;
        m.seconds("perf_last_sweep_seconds", "Duration of the last performance manager sweep", one(secs));
        m.gauge("perf_last_sweep_ports", "Ports the last performance manager sweep read", one(s.ports_read as u64));
    }
    ports(m, sm);
}

fn one<V>(v: V) -> Vec<(Labels, V)> {
    vec![(Vec::new(), v)]
}

/// The ports `export` selects: all; those with errors in their last interval (or over a
/// threshold); or those and the `n` with the most traffic over their last interval.
pub(crate) fn selected(sm: &Sm, export: PortExport) -> Vec<(&PortKey, &PortBook)> {
    let pm = sm.perf();
    let errors = |k: &PortKey, b: &PortBook| {
        pm.flagged().contains_key(k)
            || b.last_interval()
                .is_some_and(|i| Counter::ERRORS.iter().any(|&c| c != Counter::XmitWait && i.delta.get(c) > 0))
    };
    match export {
        PortExport::All => pm.books().iter().collect(),
        PortExport::Errors => pm.books().iter().filter(|(k, b)| errors(k, b)).collect(),
        PortExport::Top(n) => {
            let traffic = |b: &PortBook| {
                b.last_interval().map_or(0, |i| i.delta.get(Counter::XmitData) + i.delta.get(Counter::RcvData))
            };
            let mut by_traffic: Vec<(&PortKey, &PortBook)> = pm.books().iter().collect();
            by_traffic.sort_by(|a, b| traffic(b.1).cmp(&traffic(a.1)).then(a.0.cmp(b.0)));
            let top: std::collections::BTreeSet<&PortKey> = by_traffic.iter().take(n).map(|(k, _)| *k).collect();
            pm.books().iter().filter(|(k, b)| top.contains(k) || errors(k, b)).collect()
        }
    }
}

/// One series per selected port and counter.
fn ports(m: &mut Scrape, sm: &Sm) {
    let pm = sm.perf();
    let chosen = selected(sm, pm.config().export);
    let labels = |k: &PortKey| -> Labels {
        vec![
            ("node_guid", format!("{:#018x}", k.0.0)),
            ("port", k.1.to_string()),
            ("node_desc", pm.desc(k.0).to_owned()),
        ]
    };
    let family = |f: &dyn Fn(&PortBook) -> u64| -> Vec<(Labels, u64)> {
        chosen.iter().map(|(k, b)| (labels(k), f(b))).collect()
    };
    let words = ibsm_mad::perf::DATA_WORD_OCTETS;
    m.counter(
        "port_transmit_bytes",
        "Bytes a port sent (PortXmitData x 4: the PMA counts 4-byte words)",
        family(&|b| b.totals.get(Counter::XmitData).saturating_mul(words)),
    );
    m.counter(
        "port_receive_bytes",
        "Bytes a port received (PortRcvData x 4)",
        family(&|b| b.totals.get(Counter::RcvData).saturating_mul(words)),
    );
    m.counter(
        "port_transmit_packets",
        "Packets a port sent (PortXmitPkts)",
        family(&|b| b.totals.get(Counter::XmitPkts)),
    );
    m.counter(
        "port_receive_packets",
        "Packets a port received (PortRcvPkts)",
        family(&|b| b.totals.get(Counter::RcvPkts)),
    );
    m.counter(
        "port_transmit_wait",
        "Ticks a port had data to send and no credits (PortXmitWait): congestion",
        family(&|b| b.totals.get(Counter::XmitWait)),
    );
    // Error counters: one series per counter that has counted anything (a quiet port adds none).
    let errors = chosen
        .iter()
        .flat_map(|(k, b)| {
            Counter::ERRORS.iter().copied().filter(|&c| c != Counter::XmitWait && b.totals.get(c) > 0).map(move |c| {
                let mut l = labels(k);
                l.push(("counter", c.name().to_owned()));
                (l, b.totals.get(c))
            })
        })
        .collect();
    m.counter("port_errors", "Errors a port counted, by IBTA counter name (only counters above 0)", errors);
}
