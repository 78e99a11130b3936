//! Who gets an answer now: a token bucket per requesting LID, so that one client flooding the
//! SA gets BUSY past its rate while the others are served.
//!
//! Owns the buckets, indexed by LID (a slot per LID up to the highest that asked: bounded by
//! the LID space, 16 bytes a slot; a request finds its bucket without hashing). Time comes in
//! as `now` nanoseconds; nothing here reads a clock.

use ibsm_mad::Lid;

/// What to do with a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// Serve it.
    Serve,
    /// Answer BUSY: the requester is over its rate.
    Busy,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    /// Tokens, in thousandths of a request.
    milli: u64,
    last: u64,
}

/// Per-requester token buckets.
#[derive(Debug, Clone)]
pub struct Admission {
    /// Requests per second each requester may send (0: no limit).
    rate: u32,
    /// By LID; `last == NEVER`: no bucket yet.
    buckets: Vec<Bucket>,
    /// Buckets in use.
    tracked: usize,
}

/// The `last` of a slot without a bucket.
const NEVER: u64 = u64::MAX;

impl Admission {
    /// Buckets refilled at `rate` requests per second, each holding one second's worth.
    pub fn new(rate: u32) -> Admission {
        Admission { rate, buckets: Vec::new(), tracked: 0 }
    }

    /// Requesters it keeps a bucket for.
    pub fn tracked(&self) -> usize {
        self.tracked
    }

    /// A new rate (a reload); the buckets start full again.
    pub fn set_rate(&mut self, rate: u32) {
        self.rate = rate;
        self.buckets.clear();
        self.tracked = 0;
    }

    /// Reads `lid`'s bucket and nothing else, ahead of its [`Admission::admit`] in a burst (so
    /// that the read is in flight with the others of the burst, not waited on alone).
    pub fn touch(&self, lid: Lid) -> u64 {
        self.buckets.get(usize::from(lid.0)).map_or(0, |b| b.milli)
    }

    /// Takes a token for a request from `lid` at `now`.
    pub fn admit(&mut self, lid: Lid, now: u64) -> Admit {
        if self.rate == 0 {
            return Admit::Serve;
        }
        let cap = u64::from(self.rate) * 1000;
        let at = usize::from(lid.0);
        if at >= self.buckets.len() {
            self.buckets.resize(at + 1, Bucket { milli: 0, last: NEVER });
        }
        let b = &mut self.buckets[at];
        if b.last == NEVER {
            *b = Bucket { milli: cap, last: now };
            self.tracked += 1;
        }
        let elapsed = now.saturating_sub(b.last);
        // rate requests per 1e9 ns, in thousandths: rate * elapsed / 1e6.
        let refill = u64::from(self.rate).checked_mul(elapsed).map_or_else(
            || u64::try_from(u128::from(self.rate) * u128::from(elapsed) / 1_000_000).unwrap_or(u64::MAX),
            |x| x / 1_000_000,
        );
        b.milli = b.milli.saturating_add(refill).min(cap);
        b.last = now;
        if b.milli >= 1000 {
            b.milli -= 1000;
            Admit::Serve
        } else {
            Admit::Busy
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flooding_requester_gets_busy_and_recovers_others_are_served() {
        let mut a = Admission::new(100);
        let flood: Vec<Admit> = (0..150).map(|_| a.admit(Lid(5), 0)).collect();
        assert_eq!(flood.iter().filter(|&&x| x == Admit::Serve).count(), 100, "one second's worth");
        assert_eq!(a.admit(Lid(6), 0), Admit::Serve, "another requester is not affected");
        assert_eq!(a.admit(Lid(5), 10_000_000), Admit::Serve, "10 ms later: one token back");
        assert_eq!(a.admit(Lid(5), 10_000_000), Admit::Busy);
        assert_eq!(a.admit(Lid(5), 2_000_000_000), Admit::Serve);
        let mut free = Admission::new(0);
        assert!((0..10_000).all(|_| free.admit(Lid(1), 0) == Admit::Serve));
    }
}
