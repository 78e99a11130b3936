//! The digest gate: a sweep's LFT Sets held until the standbys have seen the LFT digests
//! they make stale.
//!
//! Owns [`LftGate`]: the Sets of one plan ([`LftFeed`]), when they were held and until when
//! at most. A standby that takes over trusts a switch whose digest its master sent (the state
//! sync's `lft_digests`) without reading it back; a master that wrote to a switch before its
//! standbys saw that digest withdrawn would leave them vouching for a table the switch no
//! longer holds. So a plan that changes tables waits, when a standby may still hold an older
//! digest section, until every standby has acknowledged a chunk of the new one (it then holds
//! the new section, or the older one marked superseded, which a takeover does not trust), at
//! most a bound the replication gives (a few of the slowest standby's round trips: a standby
//! cut off from the master by the fault being repaired cannot answer before the repair lands). The gate itself only keeps the Sets and the times; the
//! coordinator (`sync_sections`) decides when they go, from the replication's answer.

use super::programming::LftFeed;

/// A plan's LFT Sets held.
#[derive(Debug)]
struct Held {
    sets: LftFeed,
    since: u64,
    until: u64,
}

/// LFT Sets held for the standbys, if any.
#[derive(Debug, Default)]
pub struct LftGate {
    held: Option<Held>,
}

/// Held Sets let go.
#[derive(Debug)]
pub struct Released {
    /// The Sets.
    pub sets: LftFeed,
    /// How long they were held, ns.
    pub held_ns: u64,
}

impl LftGate {
    /// Holds `sets` from `now` for at most `bound` ns (replacing any held: a sweep has one plan
    /// at a time).
    pub fn hold(&mut self, sets: LftFeed, now: u64, bound: u64) {
        self.held = Some(Held { sets, since: now, until: now.saturating_add(bound) });
    }

    /// Whether Sets are held.
    pub fn holds(&self) -> bool {
        self.held.is_some()
    }

    /// When the held Sets go whatever the standbys saw.
    pub fn poll_timeout(&self) -> Option<u64> {
        self.held.as_ref().map(|h| h.until)
    }

    /// The held Sets, when `seen` (every standby saw the digests) or the bound passed at `now`.
    pub fn release(&mut self, seen: bool, now: u64) -> Option<Released> {
        let h = self.held.as_ref()?;
        if !seen && now < h.until {
            return None;
        }
        let h = self.held.take()?;
        Some(Released { sets: h.sets, held_ns: now.saturating_sub(h.since) })
    }

    /// Drops the held Sets (a new sweep plans its own).
    pub fn clear(&mut self) {
        self.held = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_sets_go_when_seen_or_at_the_bound_and_not_before() {
        const HOLD_BOUND_NS: u64 = 1_000_000;
        let mut g = LftGate::default();
        assert!(!g.holds() && g.poll_timeout().is_none());
        assert!(g.release(true, 5).is_none(), "nothing held");
        g.hold(LftFeed::default(), 1_000, HOLD_BOUND_NS);
        assert_eq!(g.poll_timeout(), Some(1_000 + HOLD_BOUND_NS));
        assert!(g.release(false, 1_000 + HOLD_BOUND_NS - 1).is_none(), "not seen, within the bound");
        assert!(g.holds());
        let r = g.release(true, 1_500).expect("seen");
        assert_eq!(r.held_ns, 500);
        assert!(!g.holds() && g.poll_timeout().is_none());
        g.hold(LftFeed::default(), 2_000, HOLD_BOUND_NS);
        let r = g.release(false, 2_000 + HOLD_BOUND_NS).expect("the bound");
        assert_eq!(r.held_ns, HOLD_BOUND_NS);
        g.hold(LftFeed::default(), 3_000, HOLD_BOUND_NS);
        g.clear();
        assert!(!g.holds());
    }
}
