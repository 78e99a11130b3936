//! The performance manager's numbers: which counters it keeps ([`Counter`]), one reading or
//! total of all of them ([`Counts`]), and the book of one port ([`PortBook`]): 64-bit totals,
//! every counter's delta and rate over the last interval, and a bounded history of compact
//! points ([`Point`], 32 bytes: data both ways, errors summed, PortXmitWait), so that a k=48
//! fabric's 166k ports keep theirs in about 5 MB an interval.
//!
//! A reading is turned into totals by differences: a counter that reads at least what it read
//! last time added the difference; one that reads less was cleared (by this PM's own clear, by
//! another tool such as `perfquery -R`, or by a node reset) and added what it reads now. A
//! counter that reads its maximum (the narrow forms saturate) is marked saturated: its delta is
//! a lower bound. The first reading of a port gives its totals as read (so totals equal what
//! `perfquery` prints as long as nobody clears the counter) and no rates. Plain values: no MADs,
//! no clock (times come in as arguments).

use std::collections::VecDeque;

use ibsm_mad::perf::{PortCounters, PortCountersExtended};

/// The counters the PM keeps for every port, in the order `perfquery` prints them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Counter {
    /// SymbolErrorCounter: minor link errors on any lane.
    SymbolErrors,
    /// LinkErrorRecoveryCounter: link retrains that succeeded.
    LinkErrorRecovery,
    /// LinkDownedCounter: retrains that failed, the link went down.
    LinkDowned,
    /// PortRcvErrors: received packets with errors.
    RcvErrors,
    /// PortRcvRemotePhysicalErrors.
    RcvRemotePhysicalErrors,
    /// PortRcvSwitchRelayErrors.
    RcvSwitchRelayErrors,
    /// PortXmitDiscards.
    XmitDiscards,
    /// PortXmitConstraintErrors.
    XmitConstraintErrors,
    /// PortRcvConstraintErrors.
    RcvConstraintErrors,
    /// LocalLinkIntegrityErrors.
    LocalLinkIntegrityErrors,
    /// ExcessiveBufferOverrunErrors.
    ExcessiveBufferOverrunErrors,
    /// VL15Dropped.
    Vl15Dropped,
    /// PortXmitWait: ticks a port had data to send and no credits (congestion).
    XmitWait,
    /// PortXmitData: octets sent divided by 4.
    XmitData,
    /// PortRcvData: octets received divided by 4.
    RcvData,
    /// PortXmitPkts.
    XmitPkts,
    /// PortRcvPkts.
    RcvPkts,
}

/// How many counters a [`Counts`] holds.
pub const COUNTERS: usize = 17;

impl Counter {
    /// Every counter, in [`Counts`] order.
    pub const ALL: [Counter; COUNTERS] = [
        Counter::SymbolErrors,
        Counter::LinkErrorRecovery,
        Counter::LinkDowned,
        Counter::RcvErrors,
        Counter::RcvRemotePhysicalErrors,
        Counter::RcvSwitchRelayErrors,
        Counter::XmitDiscards,
        Counter::XmitConstraintErrors,
        Counter::RcvConstraintErrors,
        Counter::LocalLinkIntegrityErrors,
        Counter::ExcessiveBufferOverrunErrors,
        Counter::Vl15Dropped,
        Counter::XmitWait,
        Counter::XmitData,
        Counter::RcvData,
        Counter::XmitPkts,
        Counter::RcvPkts,
    ];
    /// The error counters (what `ibqueryerrors` checks), PortXmitWait included: the first 13
    /// of [`Counter::ALL`].
    pub const ERRORS: &[Counter] = Counter::ALL.split_at(13).0;

    /// Its index in [`Counts`].
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The IBTA name, as `perfquery` and `ibqueryerrors` print it (and as the threshold file
    /// of `ibqueryerrors` names it).
    pub const fn name(self) -> &'static str {
        match self {
            Counter::SymbolErrors => "SymbolErrorCounter",
            Counter::LinkErrorRecovery => "LinkErrorRecoveryCounter",
            Counter::LinkDowned => "LinkDownedCounter",
            Counter::RcvErrors => "PortRcvErrors",
            Counter::RcvRemotePhysicalErrors => "PortRcvRemotePhysicalErrors",
            Counter::RcvSwitchRelayErrors => "PortRcvSwitchRelayErrors",
            Counter::XmitDiscards => "PortXmitDiscards",
            Counter::XmitConstraintErrors => "PortXmitConstraintErrors",
            Counter::RcvConstraintErrors => "PortRcvConstraintErrors",
            Counter::LocalLinkIntegrityErrors => "LocalLinkIntegrityErrors",
            Counter::ExcessiveBufferOverrunErrors => "ExcessiveBufferOverrunErrors",
            Counter::Vl15Dropped => "VL15Dropped",
            Counter::XmitWait => "PortXmitWait",
            Counter::XmitData => "PortXmitData",
            Counter::RcvData => "PortRcvData",
            Counter::XmitPkts => "PortXmitPkts",
            Counter::RcvPkts => "PortRcvPkts",
        }
    }

    /// The counter named `name` (its IBTA name, case-insensitive).
    pub fn from_name(name: &str) -> Option<Counter> {
        Counter::ALL.into_iter().find(|c| c.name().eq_ignore_ascii_case(name))
    }

    /// Its width in PortCounters, bits.
    pub const fn narrow_bits(self) -> u32 {
        match self {
            Counter::LinkErrorRecovery
            | Counter::LinkDowned
            | Counter::XmitConstraintErrors
            | Counter::RcvConstraintErrors => 8,
            Counter::LocalLinkIntegrityErrors | Counter::ExcessiveBufferOverrunErrors => 4,
            Counter::XmitWait | Counter::XmitData | Counter::RcvData | Counter::XmitPkts | Counter::RcvPkts => 32,
            _ => 16,
        }
    }

    /// The largest value its PortCounters form holds (where it saturates).
    pub const fn narrow_max(self) -> u64 {
        (1u64 << self.narrow_bits()) - 1
    }

    /// The threshold per interval `ibqueryerrors` ships (its `error_thresholds` file), for the
    /// error counters; `None` for traffic.
    pub const fn default_threshold(self) -> Option<u64> {
        match self {
            Counter::SymbolErrors
            | Counter::LinkErrorRecovery
            | Counter::LinkDowned
            | Counter::RcvErrors
            | Counter::LocalLinkIntegrityErrors
            | Counter::ExcessiveBufferOverrunErrors => Some(10),
            Counter::RcvRemotePhysicalErrors
            | Counter::RcvSwitchRelayErrors
            | Counter::XmitDiscards
            | Counter::XmitConstraintErrors
            | Counter::RcvConstraintErrors
            | Counter::Vl15Dropped => Some(100),
            Counter::XmitWait => Some(1000),
            Counter::XmitData | Counter::RcvData | Counter::XmitPkts | Counter::RcvPkts => None,
        }
    }

    /// A traffic counter (data or packets), not an error.
    pub const fn is_traffic(self) -> bool {
        matches!(self, Counter::XmitData | Counter::RcvData | Counter::XmitPkts | Counter::RcvPkts)
    }
}

/// One value per [`Counter`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Counts(pub [u64; COUNTERS]);

impl Counts {
    /// The value of `c`.
    pub const fn get(&self, c: Counter) -> u64 {
        self.0[c.index()]
    }
    /// Sets `c`.
    pub fn set(&mut self, c: Counter, v: u64) {
        self.0[c.index()] = v;
    }
    /// The counters of a PortCounters answer.
    pub fn from_port_counters(pc: &PortCounters) -> Counts {
        let mut out = Counts::default();
        let v = [
            u64::from(pc.symbol_errors),
            u64::from(pc.link_error_recovery),
            u64::from(pc.link_downed),
            u64::from(pc.rcv_errors),
            u64::from(pc.rcv_remote_physical_errors),
            u64::from(pc.rcv_switch_relay_errors),
            u64::from(pc.xmit_discards),
            u64::from(pc.xmit_constraint_errors),
            u64::from(pc.rcv_constraint_errors),
            u64::from(pc.local_link_integrity_errors),
            u64::from(pc.excessive_buffer_overrun_errors),
            u64::from(pc.vl15_dropped),
            u64::from(pc.xmit_wait),
            u64::from(pc.xmit_data),
            u64::from(pc.rcv_data),
            u64::from(pc.xmit_pkts),
            u64::from(pc.rcv_pkts),
        ];
        out.0.copy_from_slice(&v);
        out
    }
    /// Takes the data and packet counters (and, with `errors`, the error counters and
    /// PortXmitWait) from a PortCountersExtended answer.
    pub fn take_extended(&mut self, ext: &PortCountersExtended, errors: bool) {
        self.set(Counter::XmitData, ext.xmit_data);
        self.set(Counter::RcvData, ext.rcv_data);
        self.set(Counter::XmitPkts, ext.xmit_pkts);
        self.set(Counter::RcvPkts, ext.rcv_pkts);
        if errors {
            let v = [
                ext.symbol_errors,
                ext.link_error_recovery,
                ext.link_downed,
                ext.rcv_errors,
                ext.rcv_remote_physical_errors,
                ext.rcv_switch_relay_errors,
                ext.xmit_discards,
                ext.xmit_constraint_errors,
                ext.rcv_constraint_errors,
                ext.local_link_integrity_errors,
                ext.excessive_buffer_overrun_errors,
                ext.vl15_dropped,
                ext.xmit_wait,
            ];
            self.0[..v.len()].copy_from_slice(&v);
        }
    }
}

/// Which counters of a reading came in a 64-bit form (they never saturate and are never
/// cleared), one bit per [`Counter`] index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Wide(pub u32);

impl Wide {
    /// Whether `c` is 64-bit in this reading.
    pub const fn has(self, c: Counter) -> bool {
        self.0 & (1 << c.index()) != 0
    }
    /// The traffic counters.
    pub const TRAFFIC: Wide = Wide(0b1111 << 13);
    /// Every counter.
    pub const ALL: Wide = Wide((1 << COUNTERS) - 1);
}

/// One interval's deltas, kept in the history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interval {
    /// When the reading that closed it was taken (core clock, ns).
    pub at: u64,
    /// Its length, ns.
    pub len_ns: u64,
    /// What each counter added over it.
    pub delta: Counts,
}

/// One interval of a port's history: what a chart of it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Point {
    /// When the reading that closed it was taken (core clock, ns).
    pub at: u64,
    /// PortXmitData added (4-byte words).
    pub xmit_words: u64,
    /// PortRcvData added (4-byte words).
    pub rcv_words: u64,
    /// Every error counter's increase, summed (PortXmitWait apart; saturating).
    pub errors: u32,
    /// PortXmitWait added (saturating).
    pub xmit_wait: u32,
}

impl Point {
    fn of(i: &Interval) -> Point {
        let errors: u64 = Counter::ERRORS.iter().filter(|&&c| c != Counter::XmitWait).map(|&c| i.delta.get(c)).sum();
        Point {
            at: i.at,
            xmit_words: i.delta.get(Counter::XmitData),
            rcv_words: i.delta.get(Counter::RcvData),
            errors: u32::try_from(errors).unwrap_or(u32::MAX),
            xmit_wait: u32::try_from(i.delta.get(Counter::XmitWait)).unwrap_or(u32::MAX),
        }
    }
}

/// The PM's book of one port.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PortBook {
    /// Totals since the PM first read the port (64-bit; the first reading counts whole).
    pub totals: Counts,
    /// What the PMA's counters read last (or read after this PM's clear).
    last: Counts,
    /// When the last reading was taken (`None` before the first).
    pub read_at: Option<u64>,
    /// Counters found at their saturated maximum in the last reading, one bit per index.
    pub saturated: u32,
    /// The last interval, every counter.
    interval: Option<Interval>,
    /// The last intervals in brief, newest last, at most the history length.
    pub history: VecDeque<Point>,
}

impl PortBook {
    /// Takes a reading `now`: updates the totals, and (after the first) pushes the interval it
    /// closes, keeping at most `keep` of them. Returns that interval.
    pub fn absorb(&mut self, now: u64, reading: &Counts, wide: Wide, keep: usize) -> Option<Interval> {
        let first = self.read_at.is_none();
        let mut delta = Counts::default();
        self.saturated = 0;
        for c in Counter::ALL {
            let (raw, last) = (reading.get(c), self.last.get(c));
            let d = if first || raw < last { raw } else { raw - last };
            delta.set(c, d);
            self.totals.set(c, self.totals.get(c).saturating_add(d));
            if !wide.has(c) && raw >= c.narrow_max() {
                self.saturated |= 1 << c.index();
            }
        }
        self.last = *reading;
        let since = self.read_at.replace(now);
        let len_ns = now.saturating_sub(since?);
        let interval = Interval { at: now, len_ns, delta };
        self.interval = Some(interval);
        if keep > 0 {
            while self.history.len() >= keep {
                self.history.pop_front();
            }
            self.history.push_back(Point::of(&interval));
        }
        Some(interval)
    }

    /// The PMA answered a clear of `cleared` with `after`: those counters start from there.
    pub fn cleared(&mut self, cleared: &[Counter], after: &Counts) {
        for &c in cleared {
            self.last.set(c, after.get(c));
        }
    }

    /// The deltas of the last interval (`None` before the second reading).
    pub fn last_interval(&self) -> Option<&Interval> {
        self.interval.as_ref()
    }

    /// The rate of `c` over the last interval, per second.
    pub fn rate(&self, c: Counter) -> Option<f64> {
        let i = self.last_interval()?;
        if i.len_ns == 0 {
            return None;
        }
        #[allow(clippy::cast_precision_loss)] // rates are for people
        Some(i.delta.get(c) as f64 * 1e9 / i.len_ns as f64)
    }
}

/// The counters of a narrow (PortCounters) reading that must be cleared now so that they
/// cannot saturate before the next read: the 32-bit traffic counters and PortXmitWait at every
/// read that finds them non-zero (at today's link rates, or a congested port's ticks, they fill
/// in seconds), an error counter once it passes half its range.
/// Counters read in a 64-bit form are never cleared.
pub fn to_clear(reading: &Counts, wide: Wide) -> Vec<Counter> {
    Counter::ALL
        .into_iter()
        .filter(|&c| !wide.has(c))
        .filter(|&c| match c {
            _ if c.is_traffic() => reading.get(c) > 0,
            Counter::XmitWait => reading.get(c) > 0,
            _ => reading.get(c) > c.narrow_max() / 2,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(pairs: &[(Counter, u64)]) -> Counts {
        let mut c = Counts::default();
        for &(k, v) in pairs {
            c.set(k, v);
        }
        c
    }

    #[test]
    fn totals_add_differences_and_restart_after_a_clear() {
        let mut b = PortBook::default();
        assert_eq!(
            b.absorb(10, &reading(&[(Counter::SymbolErrors, 5), (Counter::XmitData, 100)]), Wide::TRAFFIC, 4),
            None
        );
        assert_eq!(b.totals.get(Counter::SymbolErrors), 5);
        let i =
            b.absorb(20, &reading(&[(Counter::SymbolErrors, 8), (Counter::XmitData, 150)]), Wide::TRAFFIC, 4).unwrap();
        assert_eq!((i.delta.get(Counter::SymbolErrors), i.delta.get(Counter::XmitData), i.len_ns), (3, 50, 10));
        // Someone cleared the symbol errors: what it reads now is what it added.
        b.absorb(30, &reading(&[(Counter::SymbolErrors, 2), (Counter::XmitData, 150)]), Wide::TRAFFIC, 4);
        assert_eq!(b.totals.get(Counter::SymbolErrors), 10);
        assert_eq!(b.totals.get(Counter::XmitData), 150);
        // Our own clear: the answer to the Set is the new start.
        b.cleared(&[Counter::SymbolErrors], &Counts::default());
        b.absorb(40, &reading(&[(Counter::SymbolErrors, 4), (Counter::XmitData, 150)]), Wide::TRAFFIC, 4);
        assert_eq!(b.totals.get(Counter::SymbolErrors), 14);
        assert_eq!(b.rate(Counter::SymbolErrors), Some(4e8));
    }

    #[test]
    fn history_is_bounded_and_saturation_marked() {
        let mut b = PortBook::default();
        for t in 0..10u64 {
            b.absorb(t, &reading(&[(Counter::LinkDowned, 255)]), Wide::TRAFFIC, 3);
        }
        assert_eq!(b.history.len(), 3);
        assert_eq!(b.history.back().map(|p| (p.errors, p.xmit_words)), Some((0, 0)));
        assert_eq!(b.history.front().map(|i| i.at), Some(7));
        assert_ne!(b.saturated & (1 << Counter::LinkDowned.index()), 0);
        b.absorb(11, &reading(&[(Counter::LinkDowned, 255)]), Wide::ALL, 3);
        assert_eq!(b.saturated, 0);
    }

    #[test]
    fn narrow_counters_are_cleared_before_they_saturate() {
        let r = reading(&[(Counter::SymbolErrors, 40_000), (Counter::LinkDowned, 100), (Counter::RcvErrors, 10)]);
        let c = to_clear(&r, Wide::TRAFFIC);
        assert_eq!(c, vec![Counter::SymbolErrors]);
        let mut r2 = r;
        r2.set(Counter::XmitWait, 1);
        assert_eq!(to_clear(&r2, Wide::TRAFFIC), vec![Counter::SymbolErrors, Counter::XmitWait]);
        r2.set(Counter::XmitData, 1);
        r2.set(Counter::RcvPkts, 1);
        let c = to_clear(&r2, Wide::default());
        assert_eq!(c, vec![Counter::SymbolErrors, Counter::XmitWait, Counter::XmitData, Counter::RcvPkts]);
        assert!(to_clear(&r, Wide::ALL).is_empty());
        assert_eq!(Counter::from_name("portxmitwait"), Some(Counter::XmitWait));
        assert_eq!(Counter::ALL.iter().enumerate().filter(|(i, c)| c.index() != *i).count(), 0);
    }
}
