//! Light sweeps: between heavy sweeps, the master reads every switch's SwitchInfo every
//! `sweep-interval`; switches whose PortStateChange is set get a quick sweep (their ports read;
//! see `quick.rs`, which falls back to a heavy sweep), one that does not answer brings a heavy
//! sweep, and otherwise nothing happens until the next light sweep. It also reads the
//! SMInfo of the other SMs the last heavy sweep found: a second master (a standby that took
//! over when it lost the master's answers, say) is resolved there: this SM stands by if the
//! other is better, else tells it with a trap 144 to sweep, find this master and stand by.
//!
//! Owns [`Light`]: the light sweep's schedule and its book of outstanding reads. It takes the
//! subnet, the SMs found and the time as arguments and answers with the reads to queue and,
//! at the last answer, a [`Verdict`]; what follows (a heavy or quick sweep, standing by for a
//! better master) is the coordinator's call (`scheduling.rs`; the second master: `mastership.rs`). Traps are MADs like any
//! other and can be lost (or a switch may never repeat one); this is how a change is noticed
//! anyway, at the cost of one SMP per switch per interval (2,880 every 10 s on the 27,648-HCA
//! tree). The heavy or quick sweep's SwitchInfo Set clears PortStateChange, so one change
//! brings one sweep.

use ibsm_mad::attrs::SwitchInfo;
use ibsm_mad::{Attribute, Guid};

use super::election::FoundSm;
use super::state::{NodeIdx, Subnet};
use super::transactions::{Op, Outcome, Req, Request};

/// A light sweep's schedule and reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Light {
    /// When the next light sweep is due.
    at: Option<u64>,
    /// Reads not answered yet.
    pending: usize,
    /// A read showed a change (or failed).
    changed: bool,
    /// Switches whose PortStateChange was set.
    psc: Vec<NodeIdx>,
    /// A read failed (a switch gone or not answering: a heavy sweep).
    failed: bool,
    /// Light sweeps completed.
    done: u64,
}

/// What a light sweep found, at its last answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// A read failed: a heavy sweep.
    Failed,
    /// These switches saw a port change: a quick sweep of them.
    Changed(Vec<NodeIdx>),
    /// Nothing: the next light sweep one interval on.
    Quiet,
}

impl Light {
    /// The next light sweep one `interval` from `now` (none without one).
    pub fn schedule(&mut self, now: u64, interval: Option<u64>) {
        self.at = interval.filter(|&d| d > 0).map(|d| now.saturating_add(d));
    }

    /// When the next light sweep is due (none while one runs).
    pub fn poll_timeout(&self) -> Option<u64> {
        self.at.filter(|_| self.pending == 0)
    }

    /// Whether a light sweep is due at `now` (it is then taken: due once).
    pub fn take_due(&mut self, now: u64) -> bool {
        if self.at.is_none_or(|t| t > now) || self.pending > 0 {
            return false;
        }
        self.at = None;
        true
    }

    /// Stops: no read is waited for and none is due (this SM stands by).
    pub fn stop(&mut self) {
        self.pending = 0;
        self.at = None;
    }

    /// Light sweeps completed.
    pub fn done(&self) -> u64 {
        self.done
    }

    /// The reads of a light sweep: every switch's SwitchInfo (but those carried from the last
    /// sweep) and the SMInfo of each other SM `found` (this SM is `me`), with `sm_key`.
    pub(crate) fn start(&mut self, subnet: &Subnet, found: &[FoundSm], me: Guid, sm_key: u64) -> Vec<Request> {
        let mut reads = Vec::new();
        for (i, n) in subnet.nodes.iter().enumerate().filter(|(_, n)| n.is_switch() && !n.carried) {
            reads.push(Request { path: n.path, req: Req::LightSwitchInfo { node: i }, op: Op::Light });
        }
        for f in found.iter().filter(|f| f.info.guid != me) {
            reads.push(Request {
                path: f.path,
                req: Req::LightSmInfo { guid: f.info.guid, key: sm_key },
                op: Op::Light,
            });
        }
        self.pending = reads.len();
        self.changed = false;
        self.psc.clear();
        self.failed = false;
        reads
    }

    /// A SwitchInfo read of switch `node` came back (or failed).
    pub(crate) fn on_switch_info(&mut self, node: NodeIdx, outcome: &Outcome) {
        match outcome {
            Outcome::Reply { status: 0, data } => match SwitchInfo::parse(data) {
                Ok(si) if si.port_state_change => {
                    self.changed = true;
                    self.psc.push(node);
                }
                Ok(_) => {}
                Err(_) => self.failed = true,
            },
            _ => self.failed = true,
        }
    }

    /// One read less to wait for; at the last, the verdict.
    pub fn read_done(&mut self) -> Option<Verdict> {
        self.pending = self.pending.saturating_sub(1);
        if self.pending > 0 {
            return None;
        }
        self.done += 1;
        Some(if self.failed {
            Verdict::Failed
        } else if self.changed {
            Verdict::Changed(std::mem::take(&mut self.psc))
        } else {
            Verdict::Quiet
        })
    }
}

#[cfg(test)]
mod tests {
    use ibsm_mad::attrs::SwitchInfo;

    use super::*;
    use crate::core::testing::star;

    fn answer(psc: bool) -> Outcome {
        let mut data = [0u8; 64];
        SwitchInfo { port_state_change: psc, ..SwitchInfo::default() }.emit(&mut data);
        Outcome::Reply { status: 0, data }
    }

    #[test]
    fn a_light_sweep_reads_each_switch_once_and_judges_at_the_last_answer() {
        let mut s = star(0x102, 0x103);
        let mut l = Light::default();
        l.schedule(0, Some(10));
        assert_eq!(l.poll_timeout(), Some(10));
        assert!(!l.take_due(9) && l.take_due(10));
        assert!(!l.take_due(10), "due once");
        let reads = l.start(&s, &[], Guid(0x10), 1);
        assert_eq!(reads.len(), 1, "one switch, no other SM");
        l.schedule(10, Some(10));
        assert_eq!(l.poll_timeout(), None, "not while one runs");
        l.on_switch_info(1, &answer(false));
        assert_eq!(l.read_done(), Some(Verdict::Quiet));
        assert_eq!(l.done(), 1);
        l.start(&s, &[], Guid(0x10), 1);
        l.on_switch_info(1, &answer(true));
        assert_eq!(l.read_done(), Some(Verdict::Changed(vec![1])));
        l.start(&s, &[], Guid(0x10), 1);
        l.on_switch_info(1, &Outcome::Timeout);
        assert_eq!(l.read_done(), Some(Verdict::Failed));
        s.nodes[1].carried = true;
        assert!(l.start(&s, &[], Guid(0x10), 1).is_empty(), "a carried switch is not read");
        l.schedule(0, Some(0));
        assert_eq!(l.poll_timeout(), None, "interval 0: no light sweeps");
        l.schedule(0, Some(5));
        l.stop();
        assert_eq!(l.poll_timeout(), None);
    }
}
