//! What the operator surfaces (the control socket, module `control`, and the metrics endpoint,
//! module `metrics_http`, both above this one) share: their limits, the gate that caps their connections, their
//! counters, and the thread each runs its listener on.
//!
//! Each surface runs a tokio runtime of its own on one std thread ([`Runner`]), separate from the
//! SM's loop, so that it serves the simulated SM (whose sweeps are synchronous) and the umad SM
//! alike; every connection is a task, so a slow or idle client only ever holds its own task.
//! Connections never touch the SM: valid queries go to its loop as the control module's `Pending`
//! (this module knows nothing of them: it only moves bytes and enforces the limits).
//!
//! Guarantees, per surface ([`Limits`]): at most `max_connections` at once; a client has
//! `request_deadline` to send its whole request (however it is dripped); an answer has
//! `answer_deadline` plus its size at `answer_min_rate` to be read. When the cap is reached a
//! new connection takes the place of the oldest one still sending its request (an honest
//! client sends it at once, so only idle or dripping ones are evicted); when every connection
//! is past its request (waiting for or reading an answer), the new one is refused at once. The
//! listeners let each new connection's task read before they accept the next, so under a flood
//! of connections a client whose request has arrived is read, and past eviction, first.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::task::AbortHandle;

use super::metrics_scrape::{Labels, Scrape};

/// The limits of one surface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Connections served at once.
    pub max_connections: usize,
    /// Time from accepting a connection to the end of its request.
    pub request_deadline: Duration,
    /// Time to write an answer, beyond what its size takes at `answer_min_rate`.
    pub answer_deadline: Duration,
    /// The slowest reader served, bytes per second.
    pub answer_min_rate: u64,
}

impl Limits {
    /// The limits both surfaces use: 64 connections, 2 s for the request, 10 s plus 1 s per MiB
    /// for the answer.
    pub const DEFAULT: Limits = Limits {
        max_connections: 64,
        request_deadline: Duration::from_secs(2),
        answer_deadline: Duration::from_secs(10),
        answer_min_rate: 1 << 20,
    };

    /// How long an answer of `len` bytes may take to be read.
    pub fn answer_deadline_for(&self, len: usize) -> Duration {
        let rate = self.answer_min_rate.max(1);
        let extra_ms = (len as u64).saturating_mul(1000) / rate;
        self.answer_deadline.saturating_add(Duration::from_millis(extra_ms))
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}

/// How connections to one surface ended, counted (read by the metrics endpoint).
#[derive(Debug, Default)]
pub struct Counters {
    /// Answered (an error answer included).
    pub answered: AtomicU64,
    /// Refused at once: the cap was reached and no connection was still sending its request.
    pub refused: AtomicU64,
    /// Closed to make room for a newer one while still sending its request.
    pub evicted: AtomicU64,
    /// The request did not come whole within the request deadline.
    pub request_deadline: AtomicU64,
    /// The client did not read the answer within the answer deadline.
    pub answer_deadline: AtomicU64,
    /// Closed by the client, or broken, before the answer was written.
    pub broken: AtomicU64,
}

impl Counters {
    /// Adds one to `which`.
    pub fn bump(which: &AtomicU64) {
        which.fetch_add(1, Ordering::Relaxed);
    }

    /// The counters as Prometheus samples of `ibsm_surface_connections_total` for `surface`.
    fn samples(&self, surface: &str) -> Vec<(Labels, u64)> {
        [
            ("answered", &self.answered),
            ("refused", &self.refused),
            ("evicted", &self.evicted),
            ("request_deadline", &self.request_deadline),
            ("answer_deadline", &self.answer_deadline),
            ("broken", &self.broken),
        ]
        .into_iter()
        .map(|(outcome, c)| {
            (vec![("surface", surface.to_owned()), ("outcome", outcome.to_owned())], c.load(Ordering::Relaxed))
        })
        .collect()
    }
}

/// The `ibsm_surface_connections_total` family for the given surfaces, in Prometheus text
/// format (written by [`Scrape`], as the SM's own figures are).
pub fn render(surfaces: &[(&str, &Counters)]) -> String {
    let mut m = Scrape::new();
    let samples = surfaces.iter().flat_map(|(name, c)| c.samples(name)).collect();
    m.counter(
        "surface_connections",
        "Connections to the control socket and the metrics endpoint, by how they ended",
        samples,
    );
    m.finish()
}

/// Caps the connections of one surface (see the module doc for the policy).
#[derive(Debug, Clone)]
pub struct Gate {
    inner: Arc<Mutex<GateState>>,
    max: usize,
    counters: Arc<Counters>,
}

#[derive(Debug, Default)]
struct GateState {
    next: u64,
    /// Connections still sending their request, oldest first, with the handle that ends their
    /// task (set as soon as the task is spawned).
    reading: BTreeMap<u64, Option<AbortHandle>>,
    /// Connections past their request.
    answering: BTreeSet<u64>,
}

/// What [`Gate::admit`] decided.
#[derive(Debug)]
pub enum Admission {
    /// Serve the connection; keep the ticket for as long as it lives.
    Admitted(Ticket),
    /// The cap is reached and nothing could be evicted: refuse the connection.
    Refused,
}

impl Gate {
    /// A gate for at most `max` connections, counting into `counters`.
    pub fn new(max: usize, counters: Arc<Counters>) -> Gate {
        Gate { inner: Arc::default(), max: max.max(1), counters }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, GateState> {
        // The state stays consistent at every step, so a panic elsewhere cannot spoil it.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Admits a new connection, evicting the oldest one still sending its request if the cap
    /// is reached; [`Admission::Refused`] when none can be evicted.
    pub fn admit(&self) -> Admission {
        let mut st = self.state();
        if st.reading.len() + st.answering.len() >= self.max {
            let Some((seq, handle)) = st.reading.pop_first() else {
                Counters::bump(&self.counters.refused);
                return Admission::Refused;
            };
            if let Some(h) = handle {
                h.abort();
            }
            Counters::bump(&self.counters.evicted);
            tracing::debug!(seq, "surface: cap reached; evicted the oldest connection still sending its request");
        }
        let seq = st.next;
        st.next += 1;
        st.reading.insert(seq, None);
        Admission::Admitted(Ticket { seq, inner: Arc::clone(&self.inner) })
    }

    /// Gives the gate the handle that ends the task serving `ticket`'s connection, so that it
    /// can be evicted (call it right after spawning the task).
    pub fn track(&self, ticket: TicketId, handle: AbortHandle) {
        if let Some(slot) = self.state().reading.get_mut(&ticket.0) {
            *slot = Some(handle);
        }
    }

    /// Connections held now.
    pub fn open(&self) -> usize {
        let st = self.state();
        st.reading.len() + st.answering.len()
    }
}

/// A connection's place under the [`Gate`]; dropping it frees the place.
#[derive(Debug)]
pub struct Ticket {
    seq: u64,
    inner: Arc<Mutex<GateState>>,
}

/// Names a [`Ticket`] for [`Gate::track`].
#[derive(Debug, Clone, Copy)]
pub struct TicketId(u64);

impl Ticket {
    fn state(&self) -> std::sync::MutexGuard<'_, GateState> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Names this ticket for [`Gate::track`].
    pub fn id(&self) -> TicketId {
        TicketId(self.seq)
    }

    /// The request is in: the connection can no longer be evicted. `false` when it already was
    /// (its task is being ended).
    pub fn answering(&self) -> bool {
        let mut st = self.state();
        if st.reading.remove(&self.seq).is_some() {
            st.answering.insert(self.seq);
            true
        } else {
            st.answering.contains(&self.seq)
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut st = self.state();
        st.reading.remove(&self.seq);
        st.answering.remove(&self.seq);
    }
}

/// A surface's listener running on a thread of its own, with a current-thread tokio runtime;
/// dropping it stops the listener and every connection, and joins the thread.
#[derive(Debug)]
pub struct Runner {
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Runner {
    /// Builds the listener's future with `make` inside a new runtime (tokio listeners must be
    /// registered with one), on this thread so that its errors are the caller's, then runs it
    /// on a thread named `name` until the runner is dropped.
    ///
    /// # Errors
    /// When the runtime or the thread cannot be started, or `make` fails.
    pub fn start<F, Fut>(name: &str, make: F) -> std::io::Result<Runner>
    where
        F: FnOnce() -> std::io::Result<Fut>,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let serve = {
            let _in_runtime = rt.enter();
            make()?
        };
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new().name(name.to_owned()).spawn(move || {
            rt.block_on(async move {
                tokio::select! {
                    () = serve => {}
                    _ = stopped => {}
                }
            });
            // Dropping the runtime here ends every connection task.
        })?;
        Ok(Runner { stop: Some(stop), thread: Some(thread) })
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_evicts_the_oldest_reader_and_refuses_when_all_are_answering() {
        let counters = Arc::new(Counters::default());
        let gate = Gate::new(2, Arc::clone(&counters));
        let Admission::Admitted(a) = gate.admit() else { panic!("a") };
        let Admission::Admitted(b) = gate.admit() else { panic!("b") };
        // Full: c takes a's place (a is the oldest still reading).
        let Admission::Admitted(c) = gate.admit() else { panic!("c") };
        assert_eq!(gate.open(), 2);
        assert!(!a.answering(), "a was evicted");
        assert_eq!(counters.evicted.load(Ordering::Relaxed), 1);
        // b and c past their requests: nothing to evict, the next is refused.
        assert!(b.answering() && c.answering());
        assert!(matches!(gate.admit(), Admission::Refused));
        assert_eq!(counters.refused.load(Ordering::Relaxed), 1);
        drop(b);
        assert_eq!(gate.open(), 1);
        assert!(matches!(gate.admit(), Admission::Admitted(_)));
        drop(a);
        assert_eq!(gate.open(), 1, "an evicted ticket frees nothing twice");
    }

    #[test]
    fn answer_deadlines_grow_with_the_answer() {
        let l = Limits::DEFAULT;
        assert_eq!(l.answer_deadline_for(0), Duration::from_secs(10));
        assert_eq!(l.answer_deadline_for(176 << 20), Duration::from_secs(186));
    }
}
