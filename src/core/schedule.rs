//! Sweep scheduling: the component that owns when the next sweep is due and what the running
//! one is.
//!
//! Owns [`Schedule`]: the heavy re-sweep deadline (the `resweep-interval` after an incomplete
//! sweep, or at once when a sweep was asked for while one ran), the repair schedule (a sweep
//! whose only failures were Sets is redone without discovery half a second later, then one and
//! two seconds; after three attempts the heavy re-sweep takes over; which sweeps are repairable
//! is for the sweep's books, `sweep.rs`, to say), the [`SweepKind`] of the running sweep and the
//! count of sweeps done by kind. It takes the time and the facts of a sweep as arguments and
//! answers with deadlines and verdicts; starting a sweep is the coordinator's call. Light sweeps
//! (`light.rs`) and the trap budget (`traps.rs`) keep their own schedules.

/// The first repair this long after the sweep; each further one waits twice as long.
const FIRST_REPAIR_DELAY_NS: u64 = 500_000_000;
/// Repairs in a row before the heavy re-sweep takes over.
const REPAIR_ATTEMPTS: u32 = 3;

/// What a sweep is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum SweepKind {
    /// Discovery and everything after it.
    #[default]
    Heavy,
    /// Some cables gone: the model updated, routes repaired (`quick.rs`).
    Quick,
    /// Failed Sets redone, without discovery.
    Repair,
}

/// When the next sweeps are due, and what the running one is.
#[derive(Debug, Clone, Default)]
pub(super) struct Schedule {
    /// When the next heavy sweep starts (if no sweep runs then).
    resweep_at: Option<u64>,
    /// A sweep was asked for while one ran: sweep again when it ends.
    requested: bool,
    /// What the running (or last) sweep is.
    kind: SweepKind,
    /// Sweeps completed: (heavy, quick, repair).
    done: (u64, u64, u64),
    /// When the next repair sweep starts.
    repair_at: Option<u64>,
    /// Repairs since the last complete sweep.
    repair_attempts: u32,
    /// Repairs asked for by Sets that failed between sweeps, since the last heavy sweep (a
    /// complete repair does not reset it: the multicast writes that fail come after it).
    between_attempts: u32,
}

impl Schedule {
    /// A sweep of `kind` starts: no heavy re-sweep or repair due any more.
    pub fn begin(&mut self, kind: SweepKind) {
        if kind == SweepKind::Heavy {
            self.between_attempts = 0;
        }
        self.kind = kind;
        self.resweep_at = None;
        self.repair_at = None;
    }

    /// A sweep is asked for while one runs: another right after it.
    pub fn request(&mut self) {
        self.requested = true;
    }

    /// This SM stands by: nothing is due.
    pub fn stand_by(&mut self) {
        self.resweep_at = None;
        self.requested = false;
    }

    /// Whether the heavy re-sweep is due at `now`.
    pub fn resweep_due(&self, now: u64) -> bool {
        self.resweep_at.is_some_and(|t| t <= now)
    }

    /// The resweep interval changed to `interval`: a pending re-sweep is due that long from
    /// `now` instead.
    pub fn interval_changed(&mut self, now: u64, interval: Option<u64>) {
        if self.resweep_at.is_some() {
            self.resweep_at = interval.map(|d| now.saturating_add(d));
        }
    }

    /// Whether the repair sweep is due at `now` (it is then taken: due once).
    pub fn take_repair(&mut self, now: u64) -> bool {
        if self.repair_at.is_none_or(|t| t > now) {
            return false;
        }
        self.repair_at = None;
        true
    }

    /// The deadlines: the heavy re-sweep's, and the repair's (only a master repairs).
    pub fn poll_timeout(&self, master: bool) -> [Option<u64>; 2] {
        [self.resweep_at, self.repair_at.filter(|_| master)]
    }

    /// A sweep ended at `now`. Complete: the repairs start over. Otherwise a repair when
    /// `repairable` (only Sets failed) and attempts are left, else the heavy re-sweep after
    /// `interval` (none without one).
    pub fn sweep_ended(&mut self, now: u64, complete: bool, repairable: bool, interval: Option<u64>) {
        if complete {
            self.repair_attempts = 0;
        } else if repairable && self.repair_attempts < REPAIR_ATTEMPTS {
            let delay = FIRST_REPAIR_DELAY_NS << self.repair_attempts;
            self.repair_attempts += 1;
            self.repair_at = Some(now.saturating_add(delay));
        } else {
            self.resweep_at = interval.map(|d| now.saturating_add(d));
        }
    }

    /// A Set failed at `now` between sweeps (the multicast tables and their top are written
    /// then): a repair sweep is due with the same back-off, at most [`REPAIR_ATTEMPTS`] times
    /// until a heavy sweep, then the heavy re-sweep after `interval` (none without one). So a
    /// switch that keeps refusing costs three repairs per heavy sweep, not one every half second.
    pub fn set_failed_between_sweeps(&mut self, now: u64, interval: Option<u64>) {
        if self.between_attempts < REPAIR_ATTEMPTS {
            let at = now.saturating_add(FIRST_REPAIR_DELAY_NS << self.between_attempts);
            self.between_attempts += 1;
            self.repair_at = Some(self.repair_at.map_or(at, |t| t.min(at)));
        } else if self.resweep_at.is_none() {
            self.resweep_at = interval.map(|d| now.saturating_add(d));
        }
    }

    /// After a sweep's own follow-ups: a sweep asked for meanwhile is due at `now`.
    pub fn requested_now(&mut self, now: u64) {
        if std::mem::take(&mut self.requested) {
            self.resweep_at = Some(now);
        }
    }

    /// Counts the sweep of the current kind as done.
    pub fn count_done(&mut self) {
        match self.kind {
            SweepKind::Heavy => self.done.0 += 1,
            SweepKind::Quick => self.done.1 += 1,
            SweepKind::Repair => self.done.2 += 1,
        }
    }

    /// Sweeps completed: (heavy, quick, repair).
    pub fn done(&self) -> (u64, u64, u64) {
        self.done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn failed_sets_are_repaired_three_times_then_the_heavy_resweep_takes_over() {
        let mut s = Schedule::default();
        s.begin(SweepKind::Heavy);
        s.sweep_ended(10 * S, false, true, Some(60 * S));
        assert_eq!(s.poll_timeout(true), [None, Some(10 * S + S / 2)]);
        assert_eq!(s.poll_timeout(false), [None, None], "only a master repairs");
        assert!(!s.take_repair(10 * S));
        assert!(s.take_repair(11 * S));
        assert!(!s.take_repair(11 * S), "due once");
        s.begin(SweepKind::Repair);
        s.sweep_ended(20 * S, false, true, Some(60 * S));
        assert_eq!(s.poll_timeout(true)[1], Some(21 * S));
        s.begin(SweepKind::Repair);
        s.sweep_ended(30 * S, false, true, Some(60 * S));
        assert_eq!(s.poll_timeout(true)[1], Some(32 * S));
        s.begin(SweepKind::Repair);
        s.sweep_ended(40 * S, false, true, Some(60 * S));
        assert_eq!(s.poll_timeout(true), [Some(100 * S), None], "three attempts: a heavy sweep");
        assert!(!s.resweep_due(99 * S) && s.resweep_due(100 * S));
        // A complete sweep: the repairs start over.
        s.begin(SweepKind::Heavy);
        s.sweep_ended(200 * S, true, false, Some(60 * S));
        assert_eq!(s.poll_timeout(true), [None, None]);
        s.sweep_ended(300 * S, false, true, None);
        assert_eq!(s.poll_timeout(true)[1], Some(300 * S + S / 2));
    }

    #[test]
    fn a_read_failure_waits_for_the_interval_and_a_request_comes_first() {
        let mut s = Schedule::default();
        s.sweep_ended(0, false, false, Some(60 * S));
        assert_eq!(s.poll_timeout(true), [Some(60 * S), None]);
        s.interval_changed(5 * S, Some(10 * S));
        assert_eq!(s.poll_timeout(true)[0], Some(15 * S));
        s.interval_changed(5 * S, None);
        assert_eq!(s.poll_timeout(true)[0], None);
        s.interval_changed(6 * S, Some(10 * S));
        assert_eq!(s.poll_timeout(true)[0], None, "nothing was pending");
        s.request();
        s.requested_now(7 * S);
        assert!(s.resweep_due(7 * S));
        s.requested_now(8 * S);
        assert_eq!(s.poll_timeout(true)[0], Some(7 * S), "taken once");
        s.request();
        s.stand_by();
        s.requested_now(9 * S);
        assert_eq!(s.poll_timeout(true)[0], None, "a standby forgets both");
    }

    #[test]
    fn sets_failing_between_sweeps_get_three_repairs_per_heavy_sweep() {
        let mut s = Schedule::default();
        s.begin(SweepKind::Heavy);
        s.sweep_ended(0, true, false, Some(60 * S));
        for (at, due) in [(10, 10 * S + S / 2), (20, 21 * S), (30, 32 * S)] {
            s.set_failed_between_sweeps(at * S, Some(60 * S));
            assert_eq!(s.poll_timeout(true)[1], Some(due));
            assert!(s.take_repair(due));
            // The repair is complete (the failing write comes after it): no reset.
            s.begin(SweepKind::Repair);
            s.sweep_ended(due, true, false, Some(60 * S));
        }
        s.set_failed_between_sweeps(40 * S, Some(60 * S));
        assert_eq!(s.poll_timeout(true), [Some(100 * S), None], "then the heavy re-sweep");
        s.set_failed_between_sweeps(41 * S, None);
        assert_eq!(s.poll_timeout(true)[0], Some(100 * S), "kept");
        s.begin(SweepKind::Heavy);
        s.set_failed_between_sweeps(200 * S, Some(60 * S));
        assert_eq!(s.poll_timeout(true)[1], Some(200 * S + S / 2), "a heavy sweep starts them over");
    }

    #[test]
    fn sweeps_are_counted_by_kind() {
        let mut s = Schedule::default();
        for k in [SweepKind::Heavy, SweepKind::Quick, SweepKind::Quick, SweepKind::Repair] {
            s.begin(k);
            s.count_done();
        }
        assert_eq!(s.done(), (1, 2, 1));
    }
}
