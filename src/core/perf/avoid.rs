//! The hysteresis that turns the PM's flagged ports into ports the routing should avoid
//! (issue 26, `perf-avoid-unhealthy`; not yet wired to the routing view).
//!
//! Owns: per port, how many PM intervals in a row it was flagged over a threshold or clean;
//! the set of ports avoided; and the budget of re-routes the avoided set may cause. It is a
//! pure value: [`Avoid::interval`] takes the ports flagged in one finished PM sweep and the
//! sweep's time, and answers whether the avoided set changed in a way the routing should act
//! on now. A port is avoided after `flag_intervals` flagged intervals in a row and used again
//! after `clean_intervals` clean intervals in a row. A change of the set costs one re-route;
//! at most `max_reroutes` are spent in any `window_ns`, so a counter that flaps cannot keep the
//! SM re-routing: a change past the budget is kept pending and reported once the window allows.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::PortKey;

/// The policy's knobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AvoidPolicy {
    /// Consecutive flagged intervals before a port is avoided (at least 1).
    pub flag_intervals: u32,
    /// Consecutive clean intervals before an avoided port is used again (at least 1).
    pub clean_intervals: u32,
    /// Re-routes the avoided set may cause in any `window_ns`.
    pub max_reroutes: u32,
    /// The budget's window (core clock, ns).
    pub window_ns: u64,
}

impl Default for AvoidPolicy {
    /// 3 flagged intervals to avoid, 5 clean ones to use again, 2 re-routes an hour.
    fn default() -> Self {
        AvoidPolicy { flag_intervals: 3, clean_intervals: 5, max_reroutes: 2, window_ns: 3_600_000_000_000 }
    }
}

/// A port's run of equal intervals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Run {
    flagged: u32,
    clean: u32,
}

/// What one interval changed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AvoidChange {
    /// The routing should take [`Avoid::avoided`] now (one re-route spent).
    pub reroute: bool,
    /// A change was wanted but the budget is spent; it stays pending.
    pub deferred: bool,
}

/// The hysteresis state.
#[derive(Debug, Clone, Default)]
pub struct Avoid {
    policy: AvoidPolicy,
    runs: BTreeMap<PortKey, Run>,
    /// The set the policy wants avoided.
    wanted: BTreeSet<PortKey>,
    /// The set last given to the routing.
    avoided: BTreeSet<PortKey>,
    /// When re-routes were spent, within the window.
    spent: VecDeque<u64>,
    /// Re-routes spent, in all.
    pub reroutes: u64,
    /// Interval ends whose wanted change the budget deferred, in all.
    pub deferred: u64,
}

impl Avoid {
    /// Nothing avoided, no interval seen.
    pub fn new(policy: AvoidPolicy) -> Avoid {
        Avoid { policy, ..Avoid::default() }
    }

    /// The ports the routing was last told to avoid.
    pub fn avoided(&self) -> &BTreeSet<PortKey> {
        &self.avoided
    }

    /// One finished PM interval at `now` with the ports `flagged` in it; `known` are the ports
    /// read in it (a port not read keeps its run: no reading is no evidence).
    pub fn interval(&mut self, now: u64, known: &BTreeSet<PortKey>, flagged: &BTreeSet<PortKey>) -> AvoidChange {
        let p = self.policy;
        self.runs.retain(|k, _| known.contains(k));
        self.wanted.retain(|k| known.contains(k));
        for &k in known {
            let r = self.runs.entry(k).or_default();
            if flagged.contains(&k) {
                r.flagged = r.flagged.saturating_add(1);
                r.clean = 0;
                if r.flagged >= p.flag_intervals.max(1) {
                    self.wanted.insert(k);
                }
            } else {
                r.clean = r.clean.saturating_add(1);
                r.flagged = 0;
                if r.clean >= p.clean_intervals.max(1) {
                    self.wanted.remove(&k);
                }
            }
        }
        if self.wanted == self.avoided {
            return AvoidChange::default();
        }
        while self.spent.front().is_some_and(|&t| now.saturating_sub(t) >= p.window_ns) {
            self.spent.pop_front();
        }
        if self.spent.len() >= p.max_reroutes as usize {
            self.deferred += 1;
            return AvoidChange { reroute: false, deferred: true };
        }
        self.spent.push_back(now);
        self.reroutes += 1;
        self.avoided.clone_from(&self.wanted);
        AvoidChange { reroute: true, deferred: false }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibsm_mad::Guid;

    const S: u64 = 1_000_000_000;
    const P: PortKey = (Guid(0x10), 3);

    fn set(ks: &[PortKey]) -> BTreeSet<PortKey> {
        ks.iter().copied().collect()
    }

    fn policy() -> AvoidPolicy {
        AvoidPolicy { flag_intervals: 3, clean_intervals: 2, max_reroutes: 2, window_ns: 100 * S }
    }

    #[test]
    fn avoided_after_k_flagged_and_used_after_m_clean() {
        let mut a = Avoid::new(policy());
        let known = set(&[P, (Guid(0x11), 1)]);
        for i in 0..2 {
            assert!(!a.interval(i * S, &known, &set(&[P])).reroute, "interval {i}");
        }
        assert!(a.interval(2 * S, &known, &set(&[P])).reroute);
        assert_eq!(a.avoided(), &set(&[P]));
        // One clean interval is not enough; a flagged one resets the clean run.
        assert!(!a.interval(3 * S, &known, &set(&[])).reroute);
        assert!(!a.interval(4 * S, &known, &set(&[P])).reroute);
        assert!(!a.interval(5 * S, &known, &set(&[])).reroute);
        assert_eq!(a.avoided(), &set(&[P]));
        assert!(a.interval(6 * S, &known, &set(&[])).reroute);
        assert!(a.avoided().is_empty());
        assert_eq!(a.reroutes, 2);
    }

    #[test]
    fn a_flapping_port_spends_at_most_the_budget() {
        let p = AvoidPolicy { flag_intervals: 1, clean_intervals: 1, ..policy() };
        let mut a = Avoid::new(p);
        let known = set(&[P]);
        let reroutes = (0..50u64)
            .filter(|&i| {
                let f = if i % 2 == 0 { set(&[P]) } else { set(&[]) };
                a.interval(i * S, &known, &f).reroute
            })
            .count();
        assert_eq!(reroutes, 2, "50 s of flapping inside one 100 s window");
        // Every flagged interval after the budget wanted a change (24); the clean ones matched
        // the set already given.
        assert_eq!(a.deferred, 24);
        assert!(a.avoided().is_empty());
        // Past the window, the wanted state is taken.
        assert!(a.interval(200 * S, &known, &set(&[P])).reroute);
        assert_eq!(a.avoided(), &set(&[P]));
    }

    #[test]
    fn a_port_no_longer_read_is_forgotten() {
        let p = AvoidPolicy { flag_intervals: 1, ..policy() };
        let mut a = Avoid::new(p);
        assert!(a.interval(0, &set(&[P]), &set(&[P])).reroute);
        assert!(a.interval(S, &set(&[]), &set(&[])).reroute);
        assert!(a.avoided().is_empty());
    }
}
