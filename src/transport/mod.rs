//! Transports: what carries the SM core's MADs to a fabric and back. Each one owns its clock
//! and its I/O; the core never sees either.
//!
//! - [`sim`]: the in-process simulated fabric of `ibsm-sim`, in virtual time.
//! - [`umad`]: a real (or ibsim-emulated) port through the kernel's `ib_umad` ABI; the
//!   wall-clock loop that runs the core on it is the daemon's (`daemon::umad_loop`).
//!
//! Drivers also answer side queries (the control socket's) between two MADs. They know them
//! only through [`SideQueries`] and [`SideQuery`], defined here, so that the transports import
//! nothing from the layers above them (the control socket implements the traits).

use crate::core::Sm;

pub mod sim;
pub mod umad;

/// A source of queries a driver answers from the core between two MADs (the control socket).
pub trait SideQueries {
    /// One query waiting for its answer.
    type Query: SideQuery;
    /// Waits for the next query.
    fn next_query(&mut self) -> impl Future<Output = Self::Query>;
}

/// One query from [`SideQueries`].
pub trait SideQuery {
    /// Whether it asks to reload the configuration (the driver does that itself, and
    /// answers with [`SideQuery::reply`]).
    fn is_reload(&self) -> bool;
    /// Answers it with a prepared JSON line.
    fn reply(self, answer: String);
    /// Answers it from the core's getters.
    fn answer(self, sm: &Sm);
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
    fn is_reload(&self) -> bool {
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
