//! The control socket's `counters` answer: the performance manager's figures for every port it
//! reads, or only those with errors, or the busiest N ([`CountersAnswer`], schema version 1:
//! keys may be added, none renamed or removed), read from the core's PM ([`counters`]). Pure:
//! no I/O and no MAD; called on the SM's loop.
//!
//! `errors` selects as `ibqueryerrors` does: a port whose counter reads more than its
//! threshold (the counter's total since the PM first read it, which is what the PMA shows as
//! long as nobody clears it), and every port over a threshold in its last interval. `top`
//! selects the N ports with the most data (sent and received) in their last interval.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::core::Sm;
use crate::core::perf::PortKey;
use crate::core::perf::counters::{Counter, PortBook};

/// The answer to `counters` (schema version 1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CountersAnswer {
    /// Schema version (1).
    pub version: u32,
    /// `perf-interval-s` (0: the performance manager is off).
    pub interval_s: u64,
    /// PM sweeps completed; 0 on a standby, which reads nothing.
    pub sweeps: u64,
    /// The last PM sweep: how long ago it started and how long it took, ms.
    pub last_sweep: Option<PerfSweepJson>,
    /// Ports the answer leaves out (the selection's).
    pub ports_left_out: usize,
    /// The selected ports, by node GUID and port.
    pub ports: Vec<PortCountersJson>,
}

/// The last PM sweep in a [`CountersAnswer`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PerfSweepJson {
    /// How long ago it started, ms.
    pub age_ms: u64,
    /// How long it took, ms (fractions cut).
    pub took_ms: u64,
    /// Ports read.
    pub ports_read: usize,
    /// Reads that failed.
    pub failed: u64,
}

/// One port in a [`CountersAnswer`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PortCountersJson {
    /// Its node's GUID, `0x` and 16 hex digits.
    pub node: String,
    /// Its node's description.
    pub desc: String,
    /// The port.
    pub port: u8,
    /// The port's GUID, `0x` and 16 hex digits (a switch's ports share its port 0 GUID); the
    /// GUID `ibqueryerrors` prints on a port's line. The node GUID where the port is no longer
    /// in the subnet.
    #[serde(default)]
    pub port_guid: String,
    /// Totals since the PM first read the port, by IBTA counter name (PortXmitData and
    /// PortRcvData in 4-byte words, as the PMA counts them).
    pub totals: BTreeMap<String, u64>,
    /// What each counter added in the last interval (none before the second reading).
    pub last_interval: Option<BTreeMap<String, u64>>,
    /// The last interval's length, ms.
    pub interval_ms: Option<u64>,
    /// Bytes per second sent and received over the last interval.
    pub xmit_bytes_per_s: Option<f64>,
    /// Bytes per second received over the last interval.
    pub rcv_bytes_per_s: Option<f64>,
    /// Counters over their threshold in the last interval: `Name=increase/threshold`.
    pub over_threshold: Vec<String>,
    /// Counters whose total is over their threshold (as `ibqueryerrors` reads them).
    pub totals_over_threshold: Vec<String>,
    /// Counters found saturated at their last reading (their increase is a lower bound).
    pub saturated: Vec<String>,
}

/// Which ports `counters` answers for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Selection {
    /// Only ports with errors (see the module doc).
    pub errors: bool,
    /// Only the N busiest in their last interval.
    pub top: Option<usize>,
}

fn map(c: &crate::core::perf::counters::Counts) -> BTreeMap<String, u64> {
    Counter::ALL.iter().map(|&k| (k.name().to_owned(), c.get(k))).collect()
}

fn traffic(b: &PortBook) -> u64 {
    b.last_interval().map_or(0, |i| i.delta.get(Counter::XmitData).saturating_add(i.delta.get(Counter::RcvData)))
}

/// Counters whose total is over their threshold: `Name=total/threshold`.
fn totals_over_threshold(sm: &Sm, b: &PortBook) -> Vec<String> {
    let thresholds = sm.perf().config().thresholds;
    Counter::ALL
        .iter()
        .filter_map(|&c| {
            let t = thresholds.0[c.index()]?;
            (b.totals.get(c) > t).then(|| format!("{}={}/{t}", c.name(), b.totals.get(c)))
        })
        .collect()
}

/// One port's figures, as `counters` lists them (also the web page's port detail).
pub fn port_line(sm: &Sm, (g, p): PortKey, b: &PortBook) -> PortCountersJson {
    let pm = sm.perf();
    #[allow(clippy::cast_precision_loss)] // 4: exact
    let bytes = |c: Counter| b.rate(c).map(|r| r * ibsm_mad::perf::DATA_WORD_OCTETS as f64);
    let subnet = sm.subnet();
    let node = subnet.by_guid.get(&g).and_then(|&i| subnet.node(i));
    let port_guid = node.and_then(|n| n.port(ibsm_mad::PortNum(p))).and_then(|r| r.guid).unwrap_or(g);
    PortCountersJson {
        node: format!("{:#018x}", g.0),
        desc: pm.desc(g).to_owned(),
        port: p,
        port_guid: format!("{:#018x}", port_guid.0),
        totals: map(&b.totals),
        last_interval: b.last_interval().map(|i| map(&i.delta)),
        interval_ms: b.last_interval().map(|i| i.len_ns / 1_000_000),
        xmit_bytes_per_s: bytes(Counter::XmitData),
        rcv_bytes_per_s: bytes(Counter::RcvData),
        over_threshold: pm
            .flagged()
            .get(&(g, p))
            .map(|f| f.over.iter().map(|(c, d, t)| format!("{}={d}/{t}", c.name())).collect())
            .unwrap_or_default(),
        totals_over_threshold: totals_over_threshold(sm, b),
        saturated: Counter::ALL
            .iter()
            .filter(|c| b.saturated & (1 << c.index()) != 0)
            .map(|c| c.name().to_owned())
            .collect(),
    }
}

/// The `counters` answer from `sm`'s performance manager.
pub fn counters(sm: &Sm, sel: Selection) -> CountersAnswer {
    let pm = sm.perf();
    let totals_over = |b: &PortBook| totals_over_threshold(sm, b);
    let mut chosen: Vec<_> = pm
        .books()
        .iter()
        .filter(|(k, b)| !sel.errors || pm.flagged().contains_key(k) || !totals_over(b).is_empty())
        .collect();
    if let Some(n) = sel.top {
        chosen.sort_by(|a, b| traffic(b.1).cmp(&traffic(a.1)).then(a.0.cmp(b.0)));
        chosen.truncate(n);
    }
    let now = sm.now();
    let ports = chosen.iter().map(|&(&k, b)| port_line(sm, k, b)).collect::<Vec<_>>();
    CountersAnswer {
        version: 1,
        interval_s: pm.config().interval_ns / 1_000_000_000,
        sweeps: pm.counts().sweeps,
        last_sweep: pm.last_sweep().map(|s| PerfSweepJson {
            age_ms: now.saturating_sub(s.started_at) / 1_000_000,
            took_ms: s.ended_at.saturating_sub(s.started_at) / 1_000_000,
            ports_read: s.ports_read,
            failed: s.failed,
        }),
        ports_left_out: pm.books().len() - ports.len(),
        ports,
    }
}
