//! The babbling-port policy (OpenSM's `babbling_port_policy`; off by default): a port that sends
//! more than `babbling-port-traps` traps within `babbling-port-window-s` is disabled, and enabled
//! again after `babbling-port-backoff-s`.
//!
//! Owns [`BabblingConfig`] and [`Babbling`], the per-port trap counts and the ports it disabled
//! with their deadlines. A trap counts for a port when the port can be named: a trap 129, 130 or
//! 131 names its port (as OpenSM's policy, which covers those three); any other trap from a CA or
//! router counts for the port the issuing LID is on (a switch's other traps name no port). When
//! a port passes the limit, the coordinator disables the end of its cable nearer to the SM (as
//! OpenSM does: the far end may be the one that does not answer), with a PortInfo Set of
//! PortState Down and PortPhysicalState Disabled, and at the deadline sets PortPhysicalState
//! Polling so the link trains again (OpenSM leaves it disabled until an operator acts). It reads
//! no clock and sends nothing: it answers with the ports to disable and enable; the SMPs, the log
//! (`error_id` `babbling-port-disabled`, `babbling-port-enabled`), the metrics and `ibsm status`
//! are the coordinator's. The ports disabled are replicated to the standbys
//! ([`Babbling::replica`], [`Babbling::adopt`]): a new master keeps them disabled until their
//! back-off ends, then enables them; the trap counts are not replicated. A standby's list is
//! the one its master last synced (an empty one empties it), and an SM that hands the subnet
//! over empties its own: neither holds entries the master may have changed since.

use std::collections::{BTreeMap, HashMap};

use ibsm_mad::Guid;

use crate::sync::BabblingPort;

/// Counted ports remembered (memory stays bounded whatever arrives): past it, counts whose
/// window ended are dropped first.
const MAX_COUNTED: usize = 4096;

/// The policy's settings; `Default` is off, with 250 traps (OpenSM's threshold) in 60 s (OpenSM's
/// unhealthy-port timeout) and a 300 s back-off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BabblingConfig {
    /// Whether the policy runs (default false, as OpenSM's).
    pub enabled: bool,
    /// A port that sends more than this many traps within `window_ns` is disabled.
    pub max_traps: u32,
    /// The counting window, ns (it starts at a port's first trap).
    pub window_ns: u64,
    /// How long a babbling port stays disabled, ns.
    pub backoff_ns: u64,
}

impl Default for BabblingConfig {
    fn default() -> Self {
        BabblingConfig { enabled: false, max_traps: 250, window_ns: 60_000_000_000, backoff_ns: 300_000_000_000 }
    }
}

/// A port (node GUID, port number).
pub type PortKey = (Guid, u8);

/// A port the policy disabled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Disabled {
    /// The port whose traps passed the limit (the disabled port, or its peer).
    pub babbler: PortKey,
    /// Traps counted from it in the window.
    pub traps: u32,
    /// When it was disabled, ns.
    pub since: u64,
    /// When it is to be enabled again, ns.
    pub until: u64,
}

/// The policy's book.
#[derive(Debug, Clone, Default)]
pub struct Babbling {
    /// Per port: (window start, traps in the window).
    counts: HashMap<PortKey, (u64, u32)>,
    /// The ports disabled (the end the SM set Disabled), with their deadlines.
    disabled: BTreeMap<PortKey, Disabled>,
    /// Ports disabled since start.
    pub disabled_total: u64,
    /// Ports enabled again since start.
    pub enabled_total: u64,
}

impl Babbling {
    /// Counts a trap from `port` at `now`; `Some(count)` when it makes the port pass the limit
    /// (once per window: the count starts again after it).
    pub fn on_trap(&mut self, cfg: &BabblingConfig, port: PortKey, now: u64) -> Option<u32> {
        if !cfg.enabled {
            return None;
        }
        if self.counts.len() >= MAX_COUNTED && !self.counts.contains_key(&port) {
            self.counts.retain(|_, (start, _)| now.saturating_sub(*start) < cfg.window_ns);
            if self.counts.len() >= MAX_COUNTED {
                return None;
            }
        }
        let (start, count) = self.counts.entry(port).or_insert((now, 0));
        if now.saturating_sub(*start) >= cfg.window_ns {
            (*start, *count) = (now, 0);
        }
        *count += 1;
        if *count <= cfg.max_traps {
            return None;
        }
        let n = *count;
        self.counts.remove(&port);
        Some(n)
    }

    /// Whether `port` is disabled by the policy now.
    pub fn is_disabled(&self, port: PortKey) -> bool {
        self.disabled.contains_key(&port)
    }

    /// Books `target` as disabled at `now` for `babbler`'s `traps`, until the back-off ends.
    pub fn disabled(&mut self, cfg: &BabblingConfig, target: PortKey, babbler: PortKey, traps: u32, now: u64) {
        let until = now.saturating_add(cfg.backoff_ns);
        self.disabled.insert(target, Disabled { babbler, traps, since: now, until });
        self.disabled_total += 1;
    }

    /// The ports whose back-off has ended at `now`: to enable again (taken off the list).
    pub fn take_due(&mut self, now: u64) -> Vec<PortKey> {
        let due: Vec<PortKey> = self.disabled.iter().filter(|(_, d)| d.until <= now).map(|(k, _)| *k).collect();
        for k in &due {
            self.disabled.remove(k);
        }
        self.enabled_total += due.len() as u64;
        due
    }

    /// The earliest back-off end, if a port is disabled.
    pub fn poll_timeout(&self) -> Option<u64> {
        self.disabled.values().map(|d| d.until).min()
    }

    /// The ports disabled now, in order.
    pub fn list(&self) -> impl Iterator<Item = (PortKey, &Disabled)> {
        self.disabled.iter().map(|(k, d)| (*k, d))
    }

    /// The ports disabled, as replicated to the standbys.
    pub fn replica(&self) -> Vec<BabblingPort> {
        self.disabled
            .iter()
            .map(|(k, d)| BabblingPort { port: *k, babbler: d.babbler, traps: d.traps, since: d.since, until: d.until })
            .collect()
    }

    /// Takes over the ports a master disabled (deadlines on this SM's clock), in place of the
    /// ones held: they are enabled when their back-off ends.
    pub fn adopt(&mut self, ports: &[BabblingPort]) {
        self.disabled = ports
            .iter()
            .map(|b| (b.port, Disabled { babbler: b.babbler, traps: b.traps, since: b.since, until: b.until }))
            .collect();
    }

    /// Entries each of its tables holds (for `Sm::footprint`).
    pub(super) fn sizes(&self) -> [(&'static str, usize); 2] {
        [("babbling.counts", self.counts.len()), ("babbling.disabled", self.disabled.len())]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on() -> BabblingConfig {
        BabblingConfig { enabled: true, max_traps: 3, window_ns: 1_000, backoff_ns: 5_000 }
    }

    #[test]
    fn more_than_n_traps_in_the_window_pass_the_limit_fewer_or_slower_do_not() {
        let cfg = on();
        let mut b = Babbling::default();
        let p = (Guid(7), 2);
        assert_eq!((1..=3).map(|t| b.on_trap(&cfg, p, t)).collect::<Vec<_>>(), [None, None, None]);
        assert_eq!(b.on_trap(&cfg, p, 4), Some(4), "the fourth within 1 us");
        // Slower: three per window, for ever, never pass.
        let q = (Guid(8), 1);
        for w in 0..10u64 {
            for t in 0..3 {
                assert_eq!(b.on_trap(&cfg, q, 10_000 + w * 1_000 + t), None);
            }
        }
        // Off: nothing counts.
        let mut off = Babbling::default();
        let cfg_off = BabblingConfig { enabled: false, ..cfg };
        assert!((0..100).all(|t| off.on_trap(&cfg_off, p, t).is_none()));
    }

    #[test]
    fn a_disabled_port_is_due_at_the_end_of_its_back_off() {
        let cfg = on();
        let mut b = Babbling::default();
        b.disabled(&cfg, (Guid(1), 3), (Guid(2), 1), 4, 100);
        assert!(b.is_disabled((Guid(1), 3)));
        assert_eq!(b.poll_timeout(), Some(5_100));
        assert!(b.take_due(5_099).is_empty());
        assert_eq!(b.take_due(5_100), vec![(Guid(1), 3)]);
        assert!(!b.is_disabled((Guid(1), 3)) && b.poll_timeout().is_none());
        assert_eq!((b.disabled_total, b.enabled_total), (1, 1));
    }

    #[test]
    fn the_ports_disabled_round_trip_through_the_replica_and_replace_the_ones_held() {
        let cfg = on();
        let mut master = Babbling::default();
        master.disabled(&cfg, (Guid(1), 3), (Guid(2), 1), 4, 100);
        let mut standby = Babbling::default();
        standby.disabled(&cfg, (Guid(9), 9), (Guid(9), 9), 4, 0);
        standby.adopt(&master.replica());
        assert_eq!(standby.list().collect::<Vec<_>>(), master.list().collect::<Vec<_>>());
        assert!(!standby.is_disabled((Guid(9), 9)), "the master's list wins");
        assert_eq!(standby.take_due(5_100), vec![(Guid(1), 3)]);
    }

    #[test]
    fn memory_stays_bounded_whatever_arrives() {
        let cfg = BabblingConfig { max_traps: 1_000_000, ..on() };
        let mut b = Babbling::default();
        for i in 0..20_000u64 {
            let _ = b.on_trap(&cfg, (Guid(i), 1), 10);
        }
        assert!(b.counts.len() <= MAX_COUNTED);
    }
}
