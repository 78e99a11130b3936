//! The hysteresis that turns the PM's flagged ports into ports the routing should avoid
//! (`perf-avoid-unhealthy`: [`super::Perf`] runs it at the end of every PM sweep, and the
//! routing view leaves the avoided links out, `crate::fabric_view::avoid_links`).
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

/// What the last routing made of the avoided ports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Routed {
    /// Ports whose link the routing view left out.
    pub cut: BTreeSet<PortKey>,
    /// Avoided ports whose link stayed in the view: leaving it out would cut a LID off.
    pub kept: BTreeSet<PortKey>,
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

    /// Whether nothing is avoided and no port is on its way to be.
    pub fn is_idle(&self) -> bool {
        self.avoided.is_empty() && self.wanted.is_empty() && self.runs.is_empty()
    }

    /// One finished PM interval at `now`: `flagged` are the ports over a threshold in it,
    /// `present` says whether a port is still in the fabric (one that is not is forgotten) and
    /// `read` whether it was read in this interval (one that was not keeps its run: no reading
    /// is no evidence). Only ports flagged at some time are kept, so a sweep of a large fabric
    /// with a few bad cables costs a few map entries.
    pub fn interval(
        &mut self,
        now: u64,
        present: impl Fn(&PortKey) -> bool,
        read: impl Fn(&PortKey) -> bool,
        flagged: &BTreeSet<PortKey>,
    ) -> AvoidChange {
        let p = self.policy;
        self.runs.retain(|k, _| present(k));
        self.wanted.retain(|k| present(k));
        for &k in flagged.iter().filter(|k| present(k) && read(k)) {
            let r = self.runs.entry(k).or_default();
            r.flagged = r.flagged.saturating_add(1);
            r.clean = 0;
            if r.flagged >= p.flag_intervals.max(1) {
                self.wanted.insert(k);
            }
        }
        let wanted = &mut self.wanted;
        self.runs.retain(|k, r| {
            if flagged.contains(k) || !read(k) {
                return true;
            }
            r.clean = r.clean.saturating_add(1);
            r.flagged = 0;
            if r.clean >= p.clean_intervals.max(1) {
                wanted.remove(k);
            }
            // A port neither avoided nor flagged is as good as one never seen.
            wanted.contains(k)
        });
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

    /// One interval where every port of `known` is present and read.
    fn step(a: &mut Avoid, now: u64, known: &BTreeSet<PortKey>, flagged: &BTreeSet<PortKey>) -> AvoidChange {
        a.interval(now, |k| known.contains(k), |k| known.contains(k), flagged)
    }

    fn policy() -> AvoidPolicy {
        AvoidPolicy { flag_intervals: 3, clean_intervals: 2, max_reroutes: 2, window_ns: 100 * S }
    }

    #[test]
    fn avoided_after_k_flagged_and_used_after_m_clean() {
        let mut a = Avoid::new(policy());
        let known = set(&[P, (Guid(0x11), 1)]);
        for i in 0..2 {
            assert!(!step(&mut a, i * S, &known, &set(&[P])).reroute, "interval {i}");
        }
        assert!(step(&mut a, 2 * S, &known, &set(&[P])).reroute);
        assert_eq!(a.avoided(), &set(&[P]));
        // One clean interval is not enough; a flagged one resets the clean run.
        assert!(!step(&mut a, 3 * S, &known, &set(&[])).reroute);
        assert!(!step(&mut a, 4 * S, &known, &set(&[P])).reroute);
        assert!(!step(&mut a, 5 * S, &known, &set(&[])).reroute);
        assert_eq!(a.avoided(), &set(&[P]));
        assert!(step(&mut a, 6 * S, &known, &set(&[])).reroute);
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
                step(&mut a, i * S, &known, &f).reroute
            })
            .count();
        assert_eq!(reroutes, 2, "50 s of flapping inside one 100 s window");
        // Every flagged interval after the budget wanted a change (24); the clean ones matched
        // the set already given.
        assert_eq!(a.deferred, 24);
        assert!(a.avoided().is_empty());
        // Past the window, the wanted state is taken.
        assert!(step(&mut a, 200 * S, &known, &set(&[P])).reroute);
        assert_eq!(a.avoided(), &set(&[P]));
    }

    #[test]
    fn a_port_not_read_keeps_its_run() {
        let mut a = Avoid::new(policy());
        let known = set(&[P]);
        step(&mut a, 0, &known, &set(&[P]));
        step(&mut a, S, &known, &set(&[P]));
        // Present but not read (its read failed): the run of two holds.
        assert!(!a.interval(2 * S, |_| true, |_| false, &set(&[P])).reroute);
        assert!(step(&mut a, 3 * S, &known, &set(&[P])).reroute, "the third flagged interval read");
    }

    #[test]
    fn a_port_no_longer_read_is_forgotten() {
        let p = AvoidPolicy { flag_intervals: 1, ..policy() };
        let mut a = Avoid::new(p);
        assert!(step(&mut a, 0, &set(&[P]), &set(&[P])).reroute);
        assert!(step(&mut a, S, &set(&[]), &set(&[])).reroute);
        assert!(a.avoided().is_empty());
    }
}
