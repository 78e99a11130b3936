//! The real-time loop that runs the sans-IO [`Sm`] on a [`UmadPort`]: the wall-clock twin of
//! the simulator's `SimDriver::run_until`.
//!
//! Owns the process-level plumbing of a running SM: issm (opened at start, closed on every way
//! out), a dedicated thread blocked in `poll()` on the umad fd that forwards each MAD into a
//! tokio channel (umad2sim's fake fds cannot go into epoll, so no `AsyncFd`), the monotonic
//! clock the core's `now` comes from, the periodic re-sweep, SIGINT/SIGTERM, and writing
//! `guid2lid` after every sweep, and the control socket's queries (answered in the loop from the
//! core's getters, between two MADs). It answers what the core does not serve yet: SA requests get
//! status 0x000c (method/attribute not supported) so SA clients see a clean error, and a trap
//! starts a sweep. It does not interpret SMP contents; that is the core's job.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ibsm_mad::MAD_LEN;
use ibsm_mad::header::{Mad, Method};
use ibsm_mad::ids::{class, method, status};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

use super::umad::{Address, AgentClass, GSI_QKEY, Received, UmadError, UmadPort};
use crate::control::{ControlServer, Pending, next_request};
use crate::core::{MadSource, Sm, SmEvent, SubnetReport, SweepPhase};

/// How long the poll thread blocks in one `poll()` before checking whether it must stop.
const POLL_SLICE_MS: i32 = 150;

/// Where the SA header ends and the record data begins (bytes 56.. of an SA MAD are zeroed in
/// an error reply).
const SA_DATA_START: usize = 56;
/// The RMPP header of an SA MAD (cleared in a single-MAD reply).
const RMPP_HEADER: std::ops::Range<usize> = 24..36;

/// How the driver runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriverOptions {
    /// Stop after the first sweep's report.
    pub once: bool,
    /// Where to write `guid2lid` after each sweep (`None`: not persisted).
    pub guid2lid: Option<PathBuf>,
    /// Start a new sweep this long after the last one ended (`None`: only traps and the core's
    /// own retry of an incomplete sweep start one).
    pub sweep_interval: Option<Duration>,
    /// With `once`: give up when no report came within this long.
    pub once_limit: Duration,
}

impl Default for DriverOptions {
    fn default() -> Self {
        DriverOptions {
            once: false,
            guid2lid: None,
            sweep_interval: Some(Duration::from_secs(10)),
            once_limit: Duration::from_secs(600),
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finish {
    /// `once`: the first sweep's report (see [`SubnetReport::complete`]).
    Swept(SubnetReport),
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
    /// `guid2lid` could not be written.
    #[error(transparent)]
    State(#[from] crate::state::StateError),
    /// The async runtime or the signal handlers could not be set up.
    #[error("{what}: {err}")]
    Runtime {
        /// What was being set up.
        what: &'static str,
        /// The error.
        err: std::io::Error,
    },
    /// The poll thread ended without saying why.
    #[error("the umad poll thread ended unexpectedly")]
    PollThreadGone,
}

/// The poll thread and its stop flag.
struct Poller {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Poller {
    fn spawn(
        port: Arc<UmadPort>,
        tx: mpsc::UnboundedSender<Result<Received, UmadError>>,
    ) -> Result<Poller, DriverError> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let handle = std::thread::Builder::new()
            .name("umad-poll".to_owned())
            .spawn(move || {
                while !flag.load(Ordering::Acquire) {
                    match port.recv(POLL_SLICE_MS) {
                        Ok(Some(r)) => {
                            if tx.send(Ok(r)).is_err() {
                                return;
                            }
                        }
                        Ok(None) => {}
                        Err(e) => {
                            let _ = tx.send(Err(e));
                            return;
                        }
                    }
                }
            })
            .map_err(|err| DriverError::Runtime { what: "spawning the umad poll thread", err })?;
        Ok(Poller { stop, handle: Some(handle) })
    }

    fn stop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Poller {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Runs `sm` on `port` until the first report (`once`) or a signal. Opens issm first and
/// closes it (and the device) before returning, whatever happens. `on_event` sees every event
/// of the core, including each [`SmEvent::SubnetUp`] (after `guid2lid` was written).
pub fn run(
    port: UmadPort,
    sm: Sm,
    opts: &DriverOptions,
    on_event: impl FnMut(&SmEvent),
) -> Result<Finish, DriverError> {
    run_with_control(port, sm, opts, None, on_event)
}

/// [`run`], also answering the queries of `control` from the loop. The control socket is
/// removed (the server dropped) before this returns.
pub fn run_with_control(
    port: UmadPort,
    sm: Sm,
    opts: &DriverOptions,
    control: Option<ControlServer>,
    on_event: impl FnMut(&SmEvent),
) -> Result<Finish, DriverError> {
    let port = Arc::new(port);
    let result =
        port.open_issm().map_err(DriverError::from).and_then(|()| run_with_issm(&port, sm, opts, control, on_event));
    // The poll thread has been joined by now, so this is the last reference unless a panic
    // unwound through it; close explicitly so issm is cleared before the process exits.
    let closed = port.close();
    let finish = result?;
    closed?;
    Ok(finish)
}

fn run_with_issm(
    port: &Arc<UmadPort>,
    sm: Sm,
    opts: &DriverOptions,
    control: Option<ControlServer>,
    on_event: impl FnMut(&SmEvent),
) -> Result<Finish, DriverError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| DriverError::Runtime { what: "starting the tokio runtime", err })?;
    let (tx, rx) = mpsc::unbounded_channel();
    let mut poller = Poller::spawn(Arc::clone(port), tx)?;
    let result = rt.block_on(async {
        let mut lp = Loop { port, sm, opts, on_event, start: Instant::now(), sweeps: 0, next_sweep: None };
        lp.run(rx, control).await
    });
    poller.stop();
    result
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
}

impl<F: FnMut(&SmEvent)> Loop<'_, F> {
    fn now(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    async fn run(
        &mut self,
        mut rx: mpsc::UnboundedReceiver<Result<Received, UmadError>>,
        mut control: Option<ControlServer>,
    ) -> Result<Finish, DriverError> {
        let mut sigint =
            signal(SignalKind::interrupt()).map_err(|err| DriverError::Runtime { what: "installing SIGINT", err })?;
        let mut sigterm =
            signal(SignalKind::terminate()).map_err(|err| DriverError::Runtime { what: "installing SIGTERM", err })?;
        let once_deadline = self.opts.once.then(|| self.start + self.opts.once_limit);
        tracing::info!(port = %self.port.location(), header = self.port.header_len(), "SM started on umad");
        self.sm.start_sweep(self.now());
        // `routes` queries that arrived during a sweep, answered when it reports.
        let mut deferred: Vec<Pending> = Vec::new();
        loop {
            self.flush()?;
            if let Some(finish) = self.drain_events()? {
                return Ok(finish);
            }
            if self.sm.phase() == SweepPhase::Up {
                for p in deferred.drain(..) {
                    p.answer(&self.sm);
                }
            }
            let deadline_ns = [self.sm.poll_timeout(), self.next_sweep].into_iter().flatten().min();
            let mut wake = deadline_ns.map(|ns| self.start + Duration::from_nanos(ns));
            if let Some(d) = once_deadline {
                wake = Some(wake.map_or(d, |w| w.min(d)));
            }
            // No deadline at all: wake up now and then anyway (cheap, and keeps the loop simple).
            let wake = wake.unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
            tokio::select! {
                _ = sigint.recv() => return Ok(self.stopped("SIGINT")),
                _ = sigterm.recv() => return Ok(self.stopped("SIGTERM")),
                msg = rx.recv() => match msg {
                    Some(Ok(r)) => {
                        self.on_received(&r)?;
                        // Take whatever else is already queued before sending again.
                        while let Ok(m) = rx.try_recv() {
                            self.on_received(&m?)?;
                        }
                    }
                    Some(Err(e)) => return Err(e.into()),
                    None => return Err(DriverError::PollThreadGone),
                },
                req = next_request(control.as_mut()) => {
                    if req.must_wait(&self.sm) {
                        deferred.push(req);
                    } else {
                        req.answer(&self.sm);
                    }
                }
                () = tokio::time::sleep_until(wake.into()) => {
                    if once_deadline.is_some_and(|d| Instant::now() >= d) {
                        return Ok(Finish::NoReport { waited: self.opts.once_limit });
                    }
                    self.on_timer();
                }
            }
        }
    }

    fn stopped(&self, signal: &'static str) -> Finish {
        tracing::info!(signal, sweeps = self.sweeps, "stopping the SM");
        Finish::Stopped { signal, sweeps: self.sweeps }
    }

    /// Sends everything the core has queued.
    fn flush(&mut self) -> Result<(), DriverError> {
        let timeout_ms = u32::try_from(self.sm.config().smp_timeout_ns / 1_000_000).unwrap_or(u32::MAX).max(1);
        while let Some(t) = self.sm.poll_transmit() {
            let Some(agent) = AgentClass::of_class(t.bytes[1]) else {
                tracing::warn!(class = t.bytes[1], "the core produced a MAD of a class without an agent; dropped");
                continue;
            };
            let qkey = if t.qpn == 0 { 0 } else { GSI_QKEY };
            self.port.send(agent, &t.bytes, Address { lid: t.dest_lid, qpn: t.qpn, qkey }, timeout_ms)?;
        }
        Ok(())
    }

    /// Hands the core's events to the caller; persists `guid2lid` and decides what follows a
    /// report.
    fn drain_events(&mut self) -> Result<Option<Finish>, DriverError> {
        while let Some(ev) = self.sm.poll_event() {
            if let SmEvent::SubnetUp(report) = &ev {
                self.sweeps += 1;
                if let Some(p) = &self.opts.guid2lid {
                    crate::state::save_guid2lid(p, self.sm.guid2lid())?;
                }
                (self.on_event)(&ev);
                if self.opts.once {
                    return Ok(Some(Finish::Swept(report.clone())));
                }
                self.schedule_periodic();
            } else {
                (self.on_event)(&ev);
            }
        }
        Ok(None)
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

    fn on_received(&mut self, r: &Received) -> Result<(), DriverError> {
        let now = self.now();
        let (mgmt_class, raw_method) = (r.mad[1], r.mad[3]);
        if r.status != 0 {
            // One of our own sends, undelivered (no route, dropped) or unanswered: the core's
            // timer retries it.
            tracing::debug!(
                status = r.status,
                class = mgmt_class,
                tid = Mad::new_unchecked(&r.mad[..]).tid(),
                "send came back undelivered"
            );
            return Ok(());
        }
        if raw_method & method::RESPONSE != 0 {
            self.sm.handle_mad(now, &r.mad, MadSource { slid: r.slid, sqpn: r.sqpn });
            return Ok(());
        }
        match (mgmt_class, raw_method) {
            (class::SUBN_ADM, _) => self.reply_unsupported(r)?,
            (class::SUBN_LID | class::SUBN_DR, method::TRAP) => {
                let mad = Mad::new_unchecked(&r.mad[..]);
                tracing::info!(
                    from = r.slid.0,
                    attr = format_args!("{:#06x}", mad.attr_id()),
                    "trap received; scheduling a sweep"
                );
                self.next_sweep = Some(now);
                if self.sm.phase() == SweepPhase::Up {
                    self.next_sweep = None;
                    self.sm.start_sweep(now);
                }
            }
            _ => {
                let mad = Mad::new_unchecked(&r.mad[..]);
                tracing::debug!(
                    class = format_args!("{mgmt_class:#04x}"),
                    method = format_args!("{raw_method:#04x}"),
                    attr = format_args!("{:#06x}", mad.attr_id()),
                    from = r.slid.0,
                    "request not served yet; ignored"
                );
            }
        }
        Ok(())
    }

    /// Answers an SA request with status 0x000c (method/attribute not supported).
    fn reply_unsupported(&self, r: &Received) -> Result<(), DriverError> {
        let Some(reply) = unsupported_sa_reply(&r.mad) else { return Ok(()) };
        let attr = Mad::new_unchecked(&r.mad[..]).attr_id();
        tracing::debug!(
            from = r.slid.0,
            qpn = r.sqpn,
            attr = format_args!("{attr:#06x}"),
            "SA request answered: not supported"
        );
        let to = Address { lid: r.slid, qpn: r.sqpn, qkey: GSI_QKEY };
        self.port.send(AgentClass::SubnAdm, &reply, to, 0)?;
        Ok(())
    }
}

/// The reply to an SA request that the SM does not serve: the request's header with the
/// response method, status 0x000c, no RMPP and no data. `None` for methods that have no
/// response (or that are responses).
pub fn unsupported_sa_reply(request: &[u8; MAD_LEN]) -> Option<[u8; MAD_LEN]> {
    let req = Mad::new_unchecked(&request[..]);
    let resp = Method::from_raw(req.method().raw()).response()?;
    let mut out = [0u8; MAD_LEN];
    out[..SA_DATA_START].copy_from_slice(&request[..SA_DATA_START]);
    out[RMPP_HEADER].fill(0);
    let mut m = Mad::new_unchecked(&mut out[..]);
    m.set_method(resp);
    m.set_status(status::BAD_METHOD_ATTR);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sa_request(method: u8) -> [u8; MAD_LEN] {
        let mut m = [0u8; MAD_LEN];
        m[0] = 1;
        m[1] = 0x03;
        m[2] = 2;
        m[3] = method;
        m[8..16].copy_from_slice(&0x0102_0304_0506_0708u64.to_be_bytes());
        m[16..18].copy_from_slice(&0x0035u16.to_be_bytes());
        m[24] = 1; // RMPP version
        m[48..56].copy_from_slice(&[0xff; 8]);
        m[60] = 0x42;
        m
    }

    #[test]
    fn sa_get_table_gets_get_table_resp_with_status_0x000c() {
        let r = unsupported_sa_reply(&sa_request(0x12)).unwrap();
        assert_eq!(&r[..4], &[1, 0x03, 2, 0x92]);
        assert_eq!(&r[4..6], &[0x00, 0x0c]);
        assert_eq!(&r[8..16], &0x0102_0304_0506_0708u64.to_be_bytes(), "TID unchanged");
        assert_eq!(&r[16..18], &[0x00, 0x35], "attribute unchanged");
        assert_eq!(&r[24..36], &[0; 12], "no RMPP");
        assert_eq!(&r[48..56], &[0xff; 8], "component mask echoed");
        assert!(r[56..].iter().all(|&b| b == 0), "no data");
    }

    #[test]
    fn sa_get_gets_get_resp_and_responses_get_nothing() {
        assert_eq!(unsupported_sa_reply(&sa_request(0x01)).unwrap()[3], 0x81);
        assert_eq!(unsupported_sa_reply(&sa_request(0x02)).unwrap()[3], 0x81);
        assert_eq!(unsupported_sa_reply(&sa_request(0x15)).unwrap()[3], 0x95);
        assert!(unsupported_sa_reply(&sa_request(0x81)).is_none());
        assert!(unsupported_sa_reply(&sa_request(0x92)).is_none());
        assert!(unsupported_sa_reply(&sa_request(0x05)).is_none(), "a trap is not answered with a response");
    }
}
