//! Side queries: what the daemon's loops (`umad_loop`, `sim_loop`) answer from the core
//! between two MADs, known to them only through [`SideQueries`] and [`SideQuery`], so that a
//! loop runs with a control socket (module `control` implements the traits) or without one
//! ([`NoQueries`]). It sits below both and imports neither.

use crate::core::Sm;

/// A source of queries a driver answers from the core between two MADs (the control socket).
pub trait SideQueries {
    /// One query waiting for its answer.
    type Query: SideQuery;
    /// Waits for the next query.
    fn next_query(&mut self) -> impl Future<Output = Self::Query>;
}

/// What a query needs of the driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asks {
    /// An answer from the core's getters ([`SideQuery::answer`]).
    Answer,
    /// The configuration read again: the driver does that itself (it knows the files) and
    /// answers with [`SideQuery::reply`].
    Reload,
    /// A sweep ([`Sm::request_sweep`]): the driver asks the core (and, on the simulator, runs
    /// the fabric until it is done) and answers with [`SideQuery::reply`].
    Sweep(crate::core::Requested),
    /// A change to the core ([`SideQuery::change`]: sweeping held or let go, a port disabled
    /// or enabled): the driver applies it, records the disabled ports in the state directory
    /// when they changed, (on the simulator) runs the fabric through what follows, and
    /// answers with [`SideQuery::reply`].
    Change,
}

/// What [`SideQuery::change`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changed {
    /// The answer line.
    pub answer: String,
    /// The list of disabled ports changed: the state directory's copy is to be written.
    pub disabled_ports: bool,
    /// SMPs or a sweep follow (a Set queued, sweeping let go): a simulated fabric runs on.
    pub follows: bool,
}

/// One query from [`SideQueries`].
pub trait SideQuery {
    /// What it needs of the driver.
    fn asks(&self) -> Asks;
    /// Answers it with a prepared JSON line.
    fn reply(self, answer: String);
    /// Answers it from the core's getters.
    fn answer(self, sm: &Sm);
    /// Applies it to the core (for [`Asks::Change`]); the driver then answers with
    /// [`SideQuery::reply`] and `Changed::answer`.
    fn change(&self, sm: &mut Sm) -> Changed {
        let _ = sm;
        Changed {
            answer: serde_json::json!({ "error": "not a change" }).to_string(),
            disabled_ports: false,
            follows: false,
        }
    }
    /// Answers it from the core's getters when the driver's clock has stood still for
    /// `idle_ns` of wall-clock time (the simulator between events): ages in the answer
    /// (`status`'s last sweep) add it.
    fn answer_after_idle(self, sm: &Sm, idle_ns: u64)
    where
        Self: Sized,
    {
        let _ = idle_ns;
        self.answer(sm);
    }
}

/// No side queries at all (a driver without a control socket).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoQueries;

/// The query type of [`NoQueries`]: never produced.
#[derive(Debug, Clone, Copy)]
pub enum Never {}

impl SideQuery for Never {
    fn asks(&self) -> Asks {
        match *self {}
    }
    fn reply(self, _: String) {
        match self {}
    }
    fn answer(self, _: &Sm) {
        match self {}
    }
}

impl SideQueries for NoQueries {
    type Query = Never;
    async fn next_query(&mut self) -> Never {
        std::future::pending().await
    }
}

/// Waits for the next query of `q`, or forever when there is none.
pub async fn next_query<Q: SideQueries>(q: Option<&mut Q>) -> Q::Query {
    match q {
        Some(q) => q.next_query().await,
        None => std::future::pending().await,
    }
}

/// The answer line to a sweep asked for: [`crate::core::Sm::request_sweep`]'s verdict.
pub fn sweep_answer(what: crate::core::Requested, done: Result<(), &str>) -> String {
    use crate::core::Requested;
    match done {
        Ok(()) => {
            let name = match what {
                Requested::Heavy => "heavy",
                Requested::Reroute => "reroute",
                Requested::Light => "light",
            };
            serde_json::json!({ "requested": name }).to_string()
        }
        Err(why) => serde_json::json!({ "error": why }).to_string(),
    }
}
