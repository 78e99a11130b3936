//! The coordinator's side of the performance manager ([`super::perf`]): when it may send (this
//! SM is master and no sweep runs: its reads never hold a sweep or a failover back), when a PM
//! sweep starts (due, and the subnet as the last sweep left it gives the targets), a sweep when
//! the ports the routing should avoid changed (`perf-avoid-unhealthy`), and stopping it when
//! this SM is no longer master. `Sm` code only; the PM's state is its own.

use crate::core::{Sm, SmState, SweepPhase, Transmit, perf};

impl Sm {
    /// The performance manager: books, flagged ports, figures.
    pub fn perf(&self) -> &perf::Perf {
        &self.perf
    }

    /// Whether the PM may send and start: master, between sweeps.
    fn perf_active(&self) -> bool {
        self.state == SmState::Master && self.phase == SweepPhase::Up
    }

    /// The PM's next read, when it may send.
    pub(in crate::core) fn poll_perf_transmit(&mut self) -> Option<Transmit> {
        if !self.perf_active() {
            return None;
        }
        self.perf.poll_transmit(self.now)
    }

    /// The PM's deadline: its reads' timeouts, and the next PM sweep when it may start one.
    pub(in crate::core) fn perf_timeout(&self) -> Option<u64> {
        if self.state != SmState::Master {
            return None;
        }
        self.perf.poll_timeout(self.phase == SweepPhase::Up)
    }

    /// Time passed: the PM's timeouts, a PM sweep if one is due, or the PM stopped on an SM
    /// that is no longer master.
    pub(in crate::core) fn perf_timer(&mut self) {
        if self.state != SmState::Master {
            self.perf.stop();
            return;
        }
        self.perf.handle_timeout(self.now);
        self.perf_reroute_if_asked();
        self.perf_start_if_due();
    }

    /// A PerfMgt answer arrived.
    pub(in crate::core) fn perf_answered(&mut self, bytes: &[u8]) {
        self.perf.handle_response(self.now, bytes);
        self.perf_reroute_if_asked();
    }

    /// The avoided ports changed at a PM sweep's end (or a reload): a heavy sweep routes the
    /// fabric without their links (or with them again), now or right after the running one.
    pub(in crate::core) fn perf_reroute_if_asked(&mut self) {
        if self.perf.take_reroute() && self.state == SmState::Master {
            self.sweep_soon();
        }
    }

    /// A sweep ended with this SM master: the PM's first sweep is due now (a new master starts
    /// one at once), or the one that waited for the sweep to end starts.
    pub(in crate::core) fn perf_after_sweep(&mut self) {
        if self.state != SmState::Master {
            return;
        }
        self.perf.master(self.now);
        self.perf_start_if_due();
    }

    fn perf_start_if_due(&mut self) {
        if self.perf_active() && self.perf.due(self.now) {
            let targets = perf::targets(&self.subnet);
            self.perf.start(self.now, targets);
        }
    }
}
