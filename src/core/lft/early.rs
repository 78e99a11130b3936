//! The early route's state in [`Routing`]: a sweep that assigned LIDs hands its route out as
//! a job while its ports are configured, and at the configuration's end the route is used only
//! if what routing reads did not move meanwhile (the coordinator's `early_route` says when
//! each step happens). Owns [`Early`] and [`EarlyEnd`]; touches no other field of [`Routing`]
//! than `early` and `job_out`.

use super::{RouteDone, Routing};

/// Where the early route stands: a sweep that assigned LIDs routes while its ports are
/// configured (routing reads the cables and the LIDs, not the settings the ports are given),
/// with the digest of what routing read ([`super::state::Subnet::routing_digest`]) and the
/// epoch: at the configuration's end ([`Routing::early_end`]) a digest or an epoch that moved
/// means the route is of another fabric, and the sweep routes again.
#[derive(Debug, Default)]
pub(super) enum Early {
    #[default]
    Idle,
    /// To be taken by the driver, routing what has the digest.
    Wanted(u64),
    /// The job is out, made of what has the digest, at the epoch.
    Out(u64, u64),
    /// Its result came before the configuration ended.
    Ready(u64, u64, Box<RouteDone>),
    /// The configuration ended and moved what routing reads: the result that comes is kept as
    /// the base only, and the sweep routes again.
    Stale,
}

/// What the configuration's end finds of the early route ([`Routing::early_end`]).
#[derive(Debug)]
pub enum EarlyEnd {
    /// No early route: the sweep routes now.
    None,
    /// The early route is of this fabric: its result, to apply now.
    Ready(Box<RouteDone>),
    /// The early route is of this fabric and still out: the sweep waits for it.
    Waiting,
    /// The early route is of another fabric: this result (kept as the base only) and the
    /// sweep routes again; or still out, and then it does when its result comes.
    Stale(Option<Box<RouteDone>>),
}

impl Routing {
    /// The sweep may route early: the driver's next job ([`Routing::early_wanted`]) routes the
    /// subnet as it is, whose routing digest is `digest`, while its ports are configured. Only
    /// where the driver takes jobs and none is out.
    pub fn want_early(&mut self, digest: u64) {
        if self.offload && !self.job_out {
            self.early = Early::Wanted(digest);
        }
    }

    /// Whether the early route is wanted and no job is out: the caller makes the job
    /// ([`Routing::job`]) and marks it out with [`Routing::early_taken`].
    pub fn early_wanted(&self) -> bool {
        matches!(self.early, Early::Wanted(_)) && !self.job_out
    }

    /// The early route's job was made.
    pub fn early_taken(&mut self) {
        if let Early::Wanted(d) = self.early {
            self.early = Early::Out(d, self.epoch);
        }
    }

    /// The early route is out or its result is kept (the sweep's configuration goes on).
    pub fn early_pending(&self) -> bool {
        matches!(self.early, Early::Out(..) | Early::Ready(..))
    }

    /// A job's result: the early route's, while the sweep's ports are still being configured
    /// (`configuring`), is kept until the configuration ends ([`Routing::early_end`]); any
    /// other comes back to be applied (an early route's whose sweep went elsewhere, as any
    /// job's, then keeps only its base: [`Routing::apply`] without the tables).
    pub fn keep_early(&mut self, done: RouteDone, configuring: bool) -> Option<RouteDone> {
        match std::mem::take(&mut self.early) {
            Early::Out(d, epoch) if configuring => {
                self.job_out = false;
                self.early = Early::Ready(d, epoch, Box::new(done));
                None
            }
            Early::Out(..) => Some(done),
            other => {
                self.early = other;
                Some(done)
            }
        }
    }

    /// A sweep begins with the early route of another still out or kept: its result is kept as
    /// the base only (the result kept comes back for that).
    pub fn early_dropped(&mut self) -> Option<RouteDone> {
        match std::mem::take(&mut self.early) {
            Early::Out(..) | Early::Stale => {
                self.early = Early::Stale;
                None
            }
            Early::Ready(_, _, done) => Some(*done),
            Early::Idle | Early::Wanted(_) => None,
        }
    }

    /// Whether the result that comes is the early route's, made stale by the configuration:
    /// kept as the base only, and the sweep routes again. Clears it.
    pub fn take_stale(&mut self) -> bool {
        let stale = matches!(self.early, Early::Stale);
        if stale {
            self.early = Early::Idle;
        }
        stale
    }

    /// The configuration ended with the subnet's routing digest at `digest`: what of the early
    /// route.
    pub fn early_end(&mut self, digest: u64) -> EarlyEnd {
        let fresh = |d: u64, epoch: u64| d == digest && epoch == self.epoch;
        match std::mem::take(&mut self.early) {
            // None, or never taken (the driver took no job): the sweep routes now.
            Early::Idle | Early::Stale | Early::Wanted(_) => EarlyEnd::None,
            Early::Out(d, epoch) if fresh(d, epoch) => EarlyEnd::Waiting,
            Early::Out(..) => {
                self.early = Early::Stale;
                EarlyEnd::Stale(None)
            }
            Early::Ready(d, epoch, done) if fresh(d, epoch) => EarlyEnd::Ready(done),
            Early::Ready(_, _, done) => EarlyEnd::Stale(Some(done)),
        }
    }
}

#[cfg(test)]
mod tests {
    use ibsm_routing::EngineOptions;

    use super::super::tests::{chain, fabric};
    use super::*;

    #[test]
    fn an_early_route_is_kept_until_the_configuration_ends_and_used_only_if_the_digest_held() {
        let s = fabric();
        let minhop = chain(&["minhop"]);
        let opts = EngineOptions::default();
        let mut r = Routing::default();
        r.want_early(7);
        assert!(!r.early_wanted(), "only where the driver takes jobs");
        r.set_offload(true);
        // Same digest at the end: the result kept is the sweep's.
        r.want_early(7);
        assert!(r.early_wanted());
        let job = r.job(&s, 0, (&minhop, &opts), 1, &[]).0;
        r.early_taken();
        assert!(!r.early_wanted() && r.early_pending() && r.job_out());
        assert!(r.keep_early(job.run(), true).is_none(), "kept while configuring");
        assert!(!r.job_out() && r.early_pending());
        let EarlyEnd::Ready(done) = r.early_end(7) else { panic!("ready") };
        assert!(!r.apply(*done, true, &minhop).failed);
        assert!(r.routes().is_some());
        // Another digest at the end: stale, kept as the base only.
        r.sweep_started();
        r.want_early(7);
        let job = r.job(&s, 0, (&minhop, &opts), 1, &[]).0;
        r.early_taken();
        assert!(r.keep_early(job.run(), true).is_none());
        assert!(matches!(r.early_end(8), EarlyEnd::Stale(Some(_))));
        // Still out at a stale end: its result, when it comes, is marked stale.
        r.want_early(7);
        let job = r.job(&s, 0, (&minhop, &opts), 1, &[]).0;
        r.early_taken();
        assert!(matches!(r.early_end(8), EarlyEnd::Stale(None)));
        let back = r.keep_early(job.run(), false).expect("not kept after the configuration");
        assert!(r.take_stale() && !r.take_stale());
        r.apply(back, false, &minhop);
        // Out and fresh at the end: the sweep waits; a result after the configuration is not kept.
        r.want_early(9);
        let job = r.job(&s, 0, (&minhop, &opts), 1, &[]).0;
        r.early_taken();
        assert!(matches!(r.early_end(9), EarlyEnd::Waiting));
        assert!(r.keep_early(job.run(), false).is_some() && !r.take_stale());
        // Wanted but never taken: the sweep routes as before.
        r.want_early(9);
        assert!(matches!(r.early_end(9), EarlyEnd::None));
        assert!(!r.early_wanted());
    }
}
