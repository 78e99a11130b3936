//! The real-time loop that runs the sans-IO [`Sm`] on a [`UmadPort`]: the wall-clock twin of
//! the simulator's `SimDriver::run_until`.
//!
//! Owns the process-level plumbing of a running SM: issm (opened at start, closed on every way
//! out), the MAD thread, the monotonic clock the core's `now` comes from (also handed to the
//! core's compute steps, so their phase timings are measured), the periodic re-sweep,
//! SIGINT/SIGTERM (SIGHUP, SIGUSR1 and SIGUSR2 come from [`crate::daemon::signals`]: a reload,
//! a log line), writing `guid2lid` after every sweep, and side queries (the control socket's,
//! through [`SideQueries`]) answered between two MADs.
//!
//! **One thread reads, feeds the core and writes.** The thread that calls [`run`] blocks in
//! `poll()` on the umad fd (umad2sim's fake fds cannot go into epoll, so no tokio `AsyncFd`),
//! reads every MAD already queued, hands each to the core, and writes what the core queued:
//! no hand-over to another thread per burst of answers, which cost a futex or eventfd wake-up
//! and a context switch each (about 12,000 per bring-up of 32,000 SMPs). Everything else
//! reaches that thread through a channel followed by a wake-up SMP: the side thread
//! (`ibsm-side`, a tokio runtime that waits for SIGINT, SIGTERM, the caught signals and the
//! control socket's queries) and the routing thread. The wake-up is a directed-route
//! SubnGet(NodeInfo) addressed to the port itself (TID 0, which the core never uses): the local
//! SMA (real, or ibsim's) answers at once and the answer ends the `poll()`. That works under
//! umad2sim, whose `poll()` watches only the first umad fd of its array, where an eventfd
//! would not. Before the device is closed the thread reads until every wake-up sent has come
//! back: a MAD that reaches umad2sim after the close crashes its receiver thread.
//!
//! The heavy work stays off the loop, so that SMPs in flight, a standby's SMInfo polls, traps
//! and the SA are answered while it runs: routing runs as a job on a thread of its own
//! ([`Sm::take_route_job`]), the state files are written (fsync and all) by a writer thread
//! after the first sweep, the SA's path tables of a new snapshot are built on a thread of their
//! own as soon as the sweep is up (not by the first PathRecord query, which would wait for them
//! on the loop: [`warm_paths`]), and the control socket's `routes` answer is built on a thread from
//! the last snapshot. It carries bytes and addresses only: every received MAD, request or response, goes to
//! the core, which decides what to answer (SMInfo, TrapRepress, "not supported" for the SA).
//!
//! No fixed waits: `poll()` waits until the earliest real deadline (the core's timeout, the
//! next sweep, the watchdog, the `--once` limit), an arrival or a wake-up.

use std::path::PathBuf;
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ibsm_mad::header::{Mad, Method};
use ibsm_mad::smp::SmpRepr;
use ibsm_mad::{DrPath, ids};
use tokio::signal::unix::{SignalKind, signal};

use super::side_queries::{Asks, SideQueries, SideQuery, next_query, sweep_answer};
use crate::core::lft::{RouteDone, RouteJob};
use crate::core::{MadSource, Requested, Sm, SmEvent, SubnetReport, SweepPhase, TransmitKind};
use crate::daemon::signals::{Signal, Signals};
use crate::transport::umad::{Address, AgentClass, Received, UmadError, UmadPort};

/// The TID of the wake-up SMP (the core numbers its SMPs from 1).
const WAKE_TID: u64 = 0;
/// How long the wake-up SMP may take before the kernel returns it unanswered.
const WAKE_TIMEOUT_MS: u32 = 100;
/// How long the MAD thread waits, before the device closes, for the wake-ups to come back.
const WAKE_DRAIN: Duration = Duration::from_secs(1);
/// At most this many MADs already queued are read in one go.
const BATCH: usize = 256;

/// How the driver runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriverOptions {
    /// Stop after the first sweep's report.
    pub once: bool,
    /// Where to write `guid2lid` after each sweep (`None`: not persisted).
    pub guid2lid: Option<PathBuf>,
    /// Start a new heavy sweep this long after the last one ended (`None`, the default: only
    /// traps and the core start one: its light sweeps, its retry of an incomplete sweep).
    pub sweep_interval: Option<Duration>,
    /// With `once`: give up when no report came within this long.
    pub once_limit: Duration,
    /// Where the configuration came from and what it was at start: read again on SIGHUP
    /// and `reload` (`None`: a reload only logs).
    pub reload: Option<(crate::daemon::startup::Sources, crate::daemon::startup::Built)>,
}

impl Default for DriverOptions {
    fn default() -> Self {
        DriverOptions {
            once: false,
            guid2lid: None,
            sweep_interval: None,
            once_limit: Duration::from_secs(600),
            reload: None,
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finish {
    /// `once`: the first sweep's report (see [`SubnetReport::complete`]).
    Swept(Box<SubnetReport>),
    /// `once`: the first sweep found a better SM or a master; this SM is a standby.
    Standby {
        /// The master it watches.
        master: ibsm_mad::Guid,
    },
    /// `once`: no report within [`DriverOptions::once_limit`].
    NoReport {
        /// How long it waited.
        waited: Duration,
    },
    /// Stopped by a signal.
    Stopped {
        /// `SIGINT` or `SIGTERM`.
        signal: &'static str,
        /// Sweeps that reported before it.
        sweeps: u32,
    },
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    /// The device failed.
    #[error(transparent)]
    Umad(#[from] UmadError),
    /// The async runtime or the signal handlers could not be set up.
    #[error("{what}: {err}")]
    Runtime {
        /// What was being set up.
        what: &'static str,
        /// The error.
        err: std::io::Error,
    },
    /// The routing thread ended without a result.
    #[error("the routing thread ended without a result")]
    RouteThreadGone,
}

/// A state file could not be written: logged, and the SM goes on (the next sweep writes again).
fn state_write_failed(e: &crate::daemon::state::StateError) {
    tracing::error!(error_id = "state-write-failed", err = %e, "a state file could not be written; the old one stays");
}

/// Builds the path tables of the snapshot the SA answers from, if they are not built yet, on
/// a thread of its own: a PathRecord query that comes first waits only for the rest of the
/// build. No thread (or no snapshot): the first query builds them, as without this.
fn warm_paths(sm: &Sm) {
    let Some(snap) = sm.snapshot().filter(|s| !s.paths_ready()) else { return };
    let _ = std::thread::Builder::new().name("ibsm-sa-paths".to_owned()).spawn(move || {
        let _ = snap.paths();
    });
}

/// What reaches the MAD thread from the other threads, each message followed by a wake-up SMP.
enum Side<P> {
    /// SIGINT or SIGTERM: the run ends.
    Stop(&'static str),
    /// SIGHUP, SIGUSR1 or SIGUSR2.
    Caught(Signal),
    /// A query of the control socket (or the metrics endpoint).
    Query(P),
    /// The routing thread's result (`None`: the job panicked).
    Route(Option<Box<RouteDone>>),
}

/// Whether `r` is a wake-up SMP come back: the port's answer to it (a NodeInfo GetResp with
/// [`WAKE_TID`]), or the request itself returned undelivered (a status, the R bit clear).
fn is_wake(r: &Received) -> bool {
    let mad = Mad::new_unchecked(&r.mad[..]);
    mad.tid() & 0xffff_ffff == WAKE_TID
        && mad.attr_id() == ids::attr::NODE_INFO
        && ((mad.method() == Method::GetResp && r.status == 0) || (mad.method() == Method::Get && r.status != 0))
}

/// Ends the MAD thread's wait in `poll()` from any other thread, and counts the wake-ups sent,
/// so that the MAD thread can read each one's answer before the device closes.
struct Waker {
    port: Arc<UmadPort>,
    /// Wake-ups sent, and whether the device is about to close (none is sent after that).
    sent: Mutex<(u64, bool)>,
}

impl Waker {
    fn new(port: Arc<UmadPort>) -> Waker {
        Waker { port, sent: Mutex::new((0, false)) }
    }

    fn send(&self, sent: &mut (u64, bool)) {
        if sent.1 {
            return;
        }
        let wake = SmpRepr::get_dr(&DrPath::local(), ids::attr::NODE_INFO, 0, WAKE_TID).to_bytes();
        match self.port.send(AgentClass::SubnDr, &wake, &Address::DIRECTED_ROUTE, WAKE_TIMEOUT_MS) {
            Ok(()) => sent.0 += 1,
            Err(e) => tracing::debug!(error = %e, "could not send a wake-up SMP"),
        }
    }

    /// Sends a wake-up SMP (nothing once [`Waker::last`] was called).
    fn wake(&self) {
        let mut sent = self.sent.lock().unwrap_or_else(PoisonError::into_inner);
        self.send(&mut sent);
    }

    /// Sends the last wake-up and refuses any later one; returns how many were sent in all.
    fn last(&self) -> u64 {
        let mut sent = self.sent.lock().unwrap_or_else(PoisonError::into_inner);
        self.send(&mut sent);
        sent.1 = true;
        sent.0
    }
}

/// Runs `job` on a thread of its own (in place if no thread can be started), at a lower CPU
/// priority than the MAD thread's ([`crate::transport::priority`]): the SA keeps its core while
/// the route is computed. Its result reaches the MAD thread through `inbox` and a wake-up;
/// in place, it is returned.
fn spawn_route<P: Send + 'static>(
    job: RouteJob,
    inbox: &Sender<Side<P>>,
    waker: &Arc<Waker>,
) -> Option<Box<RouteDone>> {
    let slot = Arc::new(Mutex::new(Some(job)));
    let theirs = Arc::clone(&slot);
    let (inbox, waker) = (inbox.clone(), Arc::clone(waker));
    let run = move || {
        crate::transport::priority::lower_this_thread(crate::transport::priority::ROUTE_THREAD_NICE);
        let taken = theirs.lock().ok().and_then(|mut s| s.take());
        if let Some(job) = taken {
            let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job.run())).ok().map(Box::new);
            if inbox.send(Side::Route(done)).is_ok() {
                waker.wake();
            }
        }
    };
    if std::thread::Builder::new().name("ibsm-route".to_owned()).spawn(run).is_err() {
        tracing::warn!(error_id = "route-thread", "could not start the routing thread; routing on the event loop");
        let taken = slot.lock().ok().and_then(|mut s| s.take());
        return taken.map(|job| Box::new(job.run()));
    }
    None
}

/// The side thread: a tokio runtime of its own that waits for SIGINT, SIGTERM, the caught
/// signals and the control socket's queries, and hands each to the MAD thread. The control
/// server lives (and is dropped, its socket removed) on it.
struct SideThread {
    quit: Option<tokio::sync::oneshot::Sender<()>>,
    handle: Option<JoinHandle<()>>,
}

impl SideThread {
    /// Starts it; returns once SIGINT and SIGTERM are caught by it.
    fn spawn<Q>(
        control: Option<Q>,
        mut signals: Signals,
        inbox: Sender<Side<Q::Query>>,
        waker: Arc<Waker>,
    ) -> Result<SideThread, DriverError>
    where
        Q: SideQueries + Send + 'static,
        Q::Query: Send + 'static,
    {
        let (quit, mut quitting) = tokio::sync::oneshot::channel::<()>();
        let (ready_tx, ready_rx) = std::sync::mpsc::sync_channel::<Result<(), DriverError>>(1);
        let body = move || {
            let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(rt) => rt,
                Err(err) => {
                    let _ = ready_tx.send(Err(DriverError::Runtime { what: "starting the tokio runtime", err }));
                    return;
                }
            };
            rt.block_on(async move {
                let mut control = control;
                let installed = signal(SignalKind::interrupt())
                    .map_err(|err| DriverError::Runtime { what: "installing SIGINT", err })
                    .and_then(|i| {
                        let t = signal(SignalKind::terminate())
                            .map_err(|err| DriverError::Runtime { what: "installing SIGTERM", err })?;
                        Ok((i, t))
                    });
                let (mut sigint, mut sigterm) = match installed {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let _ = ready_tx.send(Ok(()));
                loop {
                    let msg = tokio::select! {
                        _ = &mut quitting => break,
                        _ = sigint.recv() => Side::Stop("SIGINT"),
                        _ = sigterm.recv() => Side::Stop("SIGTERM"),
                        sig = signals.recv() => Side::Caught(sig),
                        q = next_query(control.as_mut()) => Side::Query(q),
                    };
                    if inbox.send(msg).is_err() {
                        break;
                    }
                    waker.wake();
                }
                drop(control);
            });
        };
        let handle = std::thread::Builder::new()
            .name("ibsm-side".to_owned())
            .spawn(body)
            .map_err(|err| DriverError::Runtime { what: "spawning the signal and control thread", err })?;
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(SideThread { quit: Some(quit), handle: Some(handle) }),
            Ok(Err(e)) => {
                let _ = handle.join();
                Err(e)
            }
            Err(_) => {
                let _ = handle.join();
                Err(DriverError::Runtime {
                    what: "starting the signal and control thread",
                    err: std::io::Error::other("it ended while starting"),
                })
            }
        }
    }

    /// Ends it and waits for it: the control socket is gone when this returns.
    fn stop(&mut self) {
        if let Some(quit) = self.quit.take() {
            let _ = quit.send(());
        }
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}

impl Drop for SideThread {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Runs `sm` on `port` until the first report (`once`) or a signal. Opens issm first and
/// closes it (and the device) before returning, whatever happens. `on_event` sees every event
/// of the core, including each [`SmEvent::SubnetUp`] (after the first, `guid2lid` is written
/// then; later ones are handed to the writer thread). With `once`, a run that reports leaves
/// the core's memory to the process's exit rather than freeing it.
pub fn run(
    port: UmadPort,
    sm: Sm,
    opts: &DriverOptions,
    on_event: impl FnMut(&SmEvent),
) -> Result<Finish, DriverError> {
    run_with_control(port, sm, opts, None::<super::side_queries::NoQueries>, None, on_event)
}

/// [`run`], also answering the queries of `control` from the loop, and taking SIGHUP, SIGUSR1
/// and SIGUSR2 from `signals` (installed by the caller at its start, so that one caught before
/// the loop runs is acted on; `None`: installed here). The control socket is removed (the
/// server dropped) before this returns.
pub fn run_with_control<Q>(
    port: UmadPort,
    sm: Sm,
    opts: &DriverOptions,
    control: Option<Q>,
    signals: Option<Signals>,
    on_event: impl FnMut(&SmEvent),
) -> Result<Finish, DriverError>
where
    Q: SideQueries + Send + 'static,
    Q::Query: Send + 'static,
{
    let signals = match signals {
        Some(s) => s,
        None => Signals::install()
            .map_err(|err| DriverError::Runtime { what: "installing SIGHUP, SIGUSR1, SIGUSR2", err })?,
    };
    let port = Arc::new(port);
    let result = port
        .open_issm()
        .map_err(DriverError::from)
        .and_then(|()| run_with_issm(&port, sm, opts, control, signals, on_event));
    // Every wake-up has come back and the other threads no longer send (see `run_with_issm`);
    // close explicitly so issm is cleared before the process exits.
    let closed = port.close();
    let finish = result?;
    closed?;
    Ok(finish)
}

fn run_with_issm<Q>(
    port: &Arc<UmadPort>,
    sm: Sm,
    opts: &DriverOptions,
    control: Option<Q>,
    signals: Signals,
    on_event: impl FnMut(&SmEvent),
) -> Result<Finish, DriverError>
where
    Q: SideQueries + Send + 'static,
    Q::Query: Send + 'static,
{
    let waker = Arc::new(Waker::new(Arc::clone(port)));
    let (tx, inbox) = std::sync::mpsc::channel();
    let mut side = SideThread::spawn(control, signals, tx.clone(), Arc::clone(&waker))?;
    let notify = super::notify::Notifier::from_env();
    let watchdog_at = notify.watchdog_interval().map(|d| Instant::now() + d);
    let mut lp = Loop {
        port,
        sm,
        opts,
        on_event,
        start: Instant::now(),
        sweeps: 0,
        next_sweep: None,
        answers_failed: 0,
        notify,
        watchdog_at,
        ready: false,
        state_writer: opts.guid2lid.as_ref().and_then(|_| {
            crate::daemon::state::StateWriter::start(state_write_failed)
                .inspect_err(|e| {
                    tracing::warn!(error_id = "state-thread", err = %e, "no state-writer thread; state files written on the loop");
                })
                .ok()
        }),
        wakes_seen: 0,
        routing: false,
    };
    let finish = lp.run(&inbox, &tx, &waker);
    // No query or signal is taken from here on, and the control socket is gone.
    side.stop();
    // The state writer is dropped (and so flushed) either way. After a `--once` report the
    // process ends at once: freeing the core's tables (the fabric, the SA's snapshot, the
    // partitions; about 1 ms on a fabric of 1,240 nodes) would only delay the exit.
    let Loop { sm, state_writer, wakes_seen, .. } = lp;
    drop(state_writer);
    if matches!(finish, Ok(Finish::Swept(_) | Finish::Standby { .. })) {
        std::mem::forget(sm);
    }
    drain_before_close(port, &waker, wakes_seen);
    finish
}

/// Before the device closes: the last wake-up sent (and no other after it, from any thread),
/// then every MAD read and dropped until each wake-up sent has come back. The port answers in
/// order, so the answers to the requests sent before it (the PerfMgt reads a `--once` report
/// leaves in flight) have come too, and none is left to reach umad2sim after the close, which
/// crashes its receiver thread (it looks up the closed fd's queue without a check).
fn drain_before_close(port: &UmadPort, waker: &Waker, mut seen: u64) {
    let sent = waker.last();
    let deadline = Instant::now() + WAKE_DRAIN;
    while seen < sent {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            tracing::warn!(
                error_id = "wake-unanswered",
                sent,
                seen,
                "the port did not answer every wake-up SMP before the exit; closing it anyway"
            );
            return;
        }
        match port.recv_batch(wait_ms(Some(Instant::now() + left)), BATCH) {
            Ok(batch) => seen += batch.iter().filter(|r| is_wake(r)).count() as u64,
            Err(e) => {
                tracing::debug!(error = %e, "reading the port before its close");
                return;
            }
        }
    }
}

/// `poll()`'s timeout until `wake`: whole milliseconds, rounded up (so that the wait never
/// ends just before the deadline), -1 for none.
fn wait_ms(wake: Option<Instant>) -> i32 {
    match wake {
        None => -1,
        Some(w) => {
            let left = w.saturating_duration_since(Instant::now());
            i32::try_from(left.as_micros().div_ceil(1000)).unwrap_or(i32::MAX)
        }
    }
}

/// The state of one run.
struct Loop<'a, F> {
    port: &'a UmadPort,
    sm: Sm,
    opts: &'a DriverOptions,
    on_event: F,
    start: Instant,
    sweeps: u32,
    /// When the next periodic (or trap-triggered) sweep starts, as `now` nanoseconds.
    next_sweep: Option<u64>,
    /// Answers the port refused to send.
    answers_failed: u64,
    /// systemd's notify socket (nothing without `NOTIFY_SOCKET`).
    notify: super::notify::Notifier,
    /// When the loop pings the watchdog next.
    watchdog_at: Option<Instant>,
    /// `READY=1` was sent.
    ready: bool,
    /// Writes the state files after each sweep (dropped, and so flushed, with the loop).
    state_writer: Option<crate::daemon::state::StateWriter>,
    /// Wake-up SMPs come back (see [`Waker`]).
    wakes_seen: u64,
    /// A route job runs on its thread.
    routing: bool,
}

impl<F: FnMut(&SmEvent)> Loop<'_, F> {
    fn now(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn run<P: SideQuery + Send + 'static>(
        &mut self,
        inbox: &Receiver<Side<P>>,
        to_inbox: &Sender<Side<P>>,
        waker: &Arc<Waker>,
    ) -> Result<Finish, DriverError> {
        let once_deadline = self.opts.once.then(|| self.start + self.opts.once_limit);
        tracing::info!(port = %self.port.location(), header = self.port.header_len(), "SM started on umad");
        // umad2sim carries single MADs only (no RMPP) and copies the last bytes of an answer
        // from past its buffer: answer GetTable within what it carries intact.
        if crate::transport::umad::under_umad2sim() {
            self.sm.set_sa_limits(crate::sa::Limits::UMAD2SIM);
        }
        // Routing runs on its own thread: the loop goes on answering SMInfo polls, traps, the
        // SA and the control socket while a large fabric is routed.
        self.sm.set_offload_routing(true);
        self.sm.start_sweep(self.now());
        let mut batch = Vec::with_capacity(BATCH);
        loop {
            if self.sm.poll_compute().is_some() {
                let start = self.start;
                self.sm.handle_compute(&mut || u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX));
            }
            if !self.routing
                && let Some(job) = self.sm.take_route_job()
            {
                match spawn_route(job, to_inbox, waker) {
                    Some(done) => self.finish_route(*done),
                    None => self.routing = true,
                }
                continue;
            }
            self.flush()?;
            if let Some(finish) = self.drain_events() {
                return Ok(finish);
            }
            // The loop is alive: the watchdog hears it.
            if let (Some(at), Some(every)) = (self.watchdog_at, self.notify.watchdog_interval())
                && Instant::now() >= at
            {
                self.notify.ping();
                self.watchdog_at = Some(Instant::now() + every);
            }
            if let Ok(msg) = inbox.try_recv() {
                if let Some(finish) = self.on_side(msg)? {
                    return Ok(finish);
                }
                continue;
            }
            let wake = self.next_wake(once_deadline);
            if wake.is_some_and(|w| Instant::now() >= w) {
                if once_deadline.is_some_and(|d| Instant::now() >= d) {
                    return Ok(Finish::NoReport { waited: self.opts.once_limit });
                }
                self.on_timer();
                continue;
            }
            // Every MAD already queued, or the first to come (a wake-up among them), read into
            // the buffers of the last batch.
            let n = self.port.recv_batch_into(wait_ms(wake), BATCH, &mut batch)?;
            self.on_received(&batch[..n]);
        }
    }

    /// A message from the side thread or the routing thread.
    fn on_side<P: SideQuery>(&mut self, msg: Side<P>) -> Result<Option<Finish>, DriverError> {
        match msg {
            Side::Stop(signal) => return Ok(Some(self.stopped(signal))),
            Side::Caught(sig) => {
                sig.log();
                if sig == Signal::Hup {
                    self.on_hup();
                }
            }
            Side::Query(q) => self.on_query(q),
            Side::Route(Some(done)) => {
                self.routing = false;
                self.finish_route(*done);
            }
            Side::Route(None) => return Err(DriverError::RouteThreadGone),
        }
        Ok(None)
    }

    fn finish_route(&mut self, done: RouteDone) {
        let now = self.now();
        self.sm.finish_route(done, now);
    }

    /// The earliest real deadline: the core's, the next sweep, the watchdog, the `--once` limit.
    fn next_wake(&self, once_deadline: Option<Instant>) -> Option<Instant> {
        let deadline_ns = [self.sm.poll_timeout(), self.next_sweep].into_iter().flatten().min();
        let mut wake = deadline_ns.map(|ns| self.start + Duration::from_nanos(ns));
        if let Some(w) = self.watchdog_at {
            wake = Some(wake.map_or(w, |x| x.min(w)));
        }
        if let Some(d) = once_deadline {
            wake = Some(wake.map_or(d, |w| w.min(d)));
        }
        wake
    }

    /// SIGHUP, as OpenSM's: the configuration read again, and a heavy sweep (unless the
    /// reload brought one).
    fn on_hup(&mut self) {
        let swept = self.reload().is_ok_and(|r| r.sweep);
        if !swept {
            self.sm.set_clock(self.now());
            if let Err(why) = self.sm.request_sweep(Requested::Heavy) {
                tracing::info!(why, "SIGHUP: no sweep");
            }
        }
    }

    /// A query from the control socket (or the metrics endpoint), answered at once, also
    /// during a sweep: `routes` comes from the last sweep's snapshot.
    fn on_query<Q: SideQuery>(&mut self, req: Q) {
        match req.asks() {
            Asks::Reload => {
                let answer = match self.reload() {
                    Ok(r) => serde_json::to_string(&r).unwrap_or_default(),
                    Err(e) => serde_json::json!({ "error": e }).to_string(),
                };
                req.reply(answer);
            }
            Asks::Sweep(what) => {
                self.sm.set_clock(self.now());
                let done = self.sm.request_sweep(what);
                req.reply(sweep_answer(what, done));
            }
            Asks::Change => {
                self.sm.set_clock(self.now());
                let changed = req.change(&mut self.sm);
                if changed.disabled_ports
                    && let Some(p) = &self.opts.guid2lid
                {
                    crate::daemon::state::record_disabled_ports(p, &self.sm);
                }
                req.reply(changed.answer);
            }
            Asks::Answer => {
                self.sm.set_clock(self.now());
                req.answer(&self.sm);
            }
        }
    }

    /// SIGHUP or `reload` on the control socket ([`crate::daemon::startup::reload`]).
    fn reload(&mut self) -> Result<crate::daemon::control::Reloaded, String> {
        crate::daemon::startup::reload(&mut self.sm, self.opts.reload.as_ref())
    }

    /// `READY=1` once this SM knows its role, `STATUS=` on every change of it.
    fn tell_systemd(&mut self, ev: &SmEvent) {
        let status = match ev {
            SmEvent::SubnetUp(r) => format!(
                "master: subnet {} ({} switches, {} CAs, {} ports active, {} not)",
                if r.complete { "up" } else { "not fully up" },
                r.switches,
                r.cas,
                r.ports_active,
                r.ports_not_active
            ),
            SmEvent::Standby { master, lid, .. } => format!("standby: master {:#018x} at LID {}", master.0, lid.0),
            SmEvent::MasterLost { master, .. } => format!("taking over from master {:#018x}", master.0),
            _ => return,
        };
        if self.ready {
            self.notify.status(&status);
        } else {
            self.ready = true;
            self.notify.ready(&status);
        }
    }

    fn stopped(&self, signal: &'static str) -> Finish {
        self.notify.stopping();
        let c = self.sm.request_counters();
        tracing::info!(
            signal,
            sweeps = self.sweeps,
            sa_answered = c.sa_answered,
            sa_busy = c.sa_busy,
            sa_dropped = c.sa_dropped,
            answers_not_sent = self.answers_failed,
            "stopping the SM"
        );
        Finish::Stopped { signal, sweeps: self.sweeps }
    }

    /// Sends everything the core has queued: responses once, without a timeout; requests with
    /// the core's timeout, so that the kernel reports an undelivered one.
    fn flush(&mut self) -> Result<(), DriverError> {
        // One clock read for the burst: its MADs go out within microseconds of it, and each
        // read was one call per MAD (64,000 in a bring-up).
        let now = self.now();
        while let Some(t) = self.sm.poll_transmit(now) {
            let Some(&class) = t.bytes.get(1) else { continue };
            let Some(agent) = AgentClass::of_class(class) else {
                tracing::warn!(
                    error_id = "mad-class-no-agent",
                    class,
                    "the core produced a MAD of a class without an agent; dropped"
                );
                continue;
            };
            let timeout_ms = match t.kind {
                TransmitKind::Response => 0,
                TransmitKind::Request { timeout_ns } => {
                    u32::try_from(timeout_ns / 1_000_000).unwrap_or(u32::MAX).max(1)
                }
            };
            match self.port.send(agent, &t.bytes, &t.to, timeout_ms) {
                Ok(()) => {}
                // An answer that cannot be sent is the requester's loss, not the SM's: it
                // retries. Only failing to send our own SMPs stops the SM.
                // A PM read that cannot be sent times out in the core and is counted there.
                Err(e) if agent == AgentClass::PerfMgt => {
                    tracing::debug!(error = %e, to = t.to.lid.0, "could not send a PerfMgt read");
                }
                Err(e) if t.kind == TransmitKind::Response => {
                    self.answers_failed += 1;
                    tracing::warn!(error_id = "answer-send-failed", error = %e, to = t.to.lid.0, class, "could not send an answer; dropped");
                }
                Err(e) => return Err(e.into()),
            }
            // The write copied it: the buffer goes back for the core's next SMP.
            self.sm.recycle(t.bytes);
        }
        Ok(())
    }

    /// Hands the core's events to the caller; persists `guid2lid` and decides what follows a
    /// report.
    fn drain_events(&mut self) -> Option<Finish> {
        while let Some(ev) = self.sm.poll_event() {
            self.tell_systemd(&ev);
            if let SmEvent::SubnetUp(report) = &ev {
                self.sweeps += 1;
                if let Some(p) = &self.opts.guid2lid {
                    let files = crate::daemon::state::after_sweep_files(p, &self.sm);
                    match &self.state_writer {
                        // After the first sweep, on the writer's thread: the fsyncs never hold
                        // the loop up. The first is written before it is reported, so that what
                        // follows `subnet up` finds the files.
                        Some(w) if self.sweeps > 1 => w.write(files),
                        _ => {
                            if let Err(e) = files.write() {
                                state_write_failed(&e);
                            }
                        }
                    }
                }
                (self.on_event)(&ev);
                if self.opts.once {
                    return Some(Finish::Swept(Box::new(report.clone())));
                }
                warm_paths(&self.sm);
                self.schedule_periodic();
            } else if let SmEvent::Standby { master, .. } = &ev {
                (self.on_event)(&ev);
                if self.opts.once {
                    return Some(Finish::Standby { master: *master });
                }
            } else {
                (self.on_event)(&ev);
            }
        }
        None
    }

    fn schedule_periodic(&mut self) {
        let periodic = self
            .opts
            .sweep_interval
            .map(|d| self.now().saturating_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)));
        self.next_sweep = match (self.next_sweep, periodic) {
            // A trap during the sweep asked for another one: keep the earlier time.
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }

    fn on_timer(&mut self) {
        let now = self.now();
        if self.sm.poll_timeout().is_some_and(|t| t <= now) {
            self.sm.handle_timeout(now);
        }
        if self.next_sweep.is_some_and(|t| t <= now) && self.sm.phase() == SweepPhase::Up {
            self.next_sweep = None;
            tracing::debug!("starting a sweep");
            self.sm.start_sweep(now);
        }
    }

    /// A batch read in one go: the wake-ups counted, our own sends come back undelivered
    /// logged (the core's timer retries them), and the rest handed to the core together
    /// (`Sm::handle_mads`: answered one by one, in order, after the SA has looked at the
    /// batch's PathRecord Gets together).
    fn on_received(&mut self, batch: &[Received]) {
        for r in batch {
            if is_wake(r) {
                self.wakes_seen += 1; // a wake-up SMP come back: it carries nothing for the core
            } else if r.status != 0 {
                tracing::debug!(
                    status = r.status,
                    class = r.mad[1],
                    tid = Mad::new_unchecked(&r.mad[..]).tid(),
                    "send came back undelivered"
                );
            }
        }
        let now = self.now();
        let mads = batch.iter().filter(|r| r.status == 0 && !is_wake(r)).map(|r| {
            (&r.mad[..], MadSource { slid: r.slid, sqpn: r.sqpn, pkey_index: r.pkey_index, sl: r.sl, grh: r.grh })
        });
        self.sm.handle_mads(now, mads);
    }
}
