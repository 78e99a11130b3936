//! The simulated-fabric transport: drives an [`Sm`] against an `ibsm_sim` [`Fabric`] in virtual
//! time. The SM sits on one port (a CA port or a switch's port 0); its MADs go through the
//! fabric exactly as they would through umad, and the clock jumps from one event to the next.
//! Keeping a simulated SM alive on the wall clock once its fabric is stable (`ibsm run --sim`)
//! is the daemon's (`daemon::sim_loop`).

use ibsm_sim::fabric::{AgentId, Dest, Fabric, SimConfig, SimTime};
use ibsm_topology::Topology;

use crate::core::lft::{RouteDone, RouteJob};
use crate::core::{MadSource, Sm, SmEvent, SubnetReport, Transmit};

/// How the time the core spends computing (LID assignment, routing) enters virtual time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ComputeTime {
    /// Computing takes no virtual time: runs are exactly reproducible from the seed (tests).
    #[default]
    Virtual,
    /// Computing takes the wall-clock time it really took: the fabric's clock moves on by that
    /// much, as a real fabric would while the SM computes, and the phase timings of the report
    /// are true (`ibsm run --sim`).
    Wall,
    /// Computing takes the CPU time the computing thread really used (`CLOCK_THREAD_CPUTIME_ID`):
    /// as [`ComputeTime::Wall`] on a quiet machine, but time the thread spends waiting for a
    /// core (a machine loaded by other work) does not move the fabric's clock, so a loaded run
    /// keeps the timeline of a quiet one (`ibsm sim play --compute-time cpu`). The routing
    /// engines' worker threads count through the computing thread's share of their work (it
    /// works alongside them); where the clock cannot be read, the wall clock is used.
    ThreadCpu,
}

/// Measures one stretch of computing on the clock a [`ComputeTime`] charges it with.
#[derive(Debug, Clone, Copy)]
enum Stopwatch {
    Wall(std::time::Instant),
    ThreadCpu(u64),
}

impl Stopwatch {
    /// Started now, on `compute_time`'s clock (the wall clock for [`ComputeTime::Virtual`],
    /// whose callers do not read it).
    fn start(compute_time: ComputeTime) -> Stopwatch {
        match (compute_time, super::cpu_clock::thread_cpu_ns()) {
            (ComputeTime::ThreadCpu, Some(t)) => Stopwatch::ThreadCpu(t),
            _ => Stopwatch::Wall(std::time::Instant::now()),
        }
    }

    /// ns since the start, on the calling thread (the one that started it).
    fn elapsed_ns(&self) -> u64 {
        match self {
            Stopwatch::Wall(t) => u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX),
            Stopwatch::ThreadCpu(t) => super::cpu_clock::thread_cpu_ns().map_or(0, |now| now.saturating_sub(*t)),
        }
    }
}

/// The SM and the simulated fabric it manages.
#[derive(Debug)]
pub struct SimDriver {
    /// The SM core.
    pub sm: Sm,
    /// The simulated fabric.
    pub fabric: Fabric,
    /// The SM's agent in the fabric.
    pub agent: AgentId,
    /// Where the SM sits: node index and port.
    pub at: (usize, u8),
    /// Whether compute steps take virtual time.
    pub compute_time: ComputeTime,
    /// The driver takes the SM's routing jobs ([`Sm::take_route_job`]; the SM is made to hand
    /// them out): each runs at once with [`ComputeTime::Virtual`], or on a thread of its own
    /// with [`ComputeTime::Wall`], its result coming back when it would on a real fabric (the
    /// route's wall-clock time after it started). A sweep's route then runs while its ports
    /// are configured, as under umad. `false`: the caller takes them.
    pub take_route_jobs: bool,
    /// The routing job out, or its result not yet due.
    jobs: Jobs,
}

impl SimDriver {
    /// Powers `topo` on with `seed` and attaches `sm` at `at`, or at the first cabled CA port
    /// when `at` is `None`.
    ///
    /// # Errors
    /// A message when the fabric has no cabled CA port or `at` is not a valid attach point.
    pub fn new(topo: &Topology, seed: u64, sm: Sm, at: Option<(usize, u8)>) -> Result<SimDriver, String> {
        SimDriver::with_config(topo, SimConfig { seed, ..SimConfig::default() }, sm, at)
    }

    /// As [`SimDriver::new`], with every simulator setting (seed, timing, table sizes) from
    /// `cfg`.
    ///
    /// # Errors
    /// As [`SimDriver::new`].
    pub fn with_config(topo: &Topology, cfg: SimConfig, sm: Sm, at: Option<(usize, u8)>) -> Result<SimDriver, String> {
        let at = match at {
            Some(a) => a,
            None => {
                topo.first_cabled_ca_port().ok_or("the topology has no CA port with a cable to attach the SM to")?
            }
        };
        let mut fabric = Fabric::new(topo, cfg);
        let agent =
            fabric.attach(at.0, at.1).ok_or_else(|| format!("cannot attach the SM at node {} port {}", at.0, at.1))?;
        fabric.set_is_sm(agent, true);
        let mut sm = sm;
        // The simulated fabric carries single MADs, as ibsim does.
        sm.set_sa_limits(crate::sa::Limits::SIM);
        sm.set_offload_routing(true);
        Ok(SimDriver {
            sm,
            fabric,
            agent,
            at,
            compute_time: ComputeTime::Virtual,
            take_route_jobs: true,
            jobs: Jobs::default(),
        })
    }

    /// Current virtual time, ns.
    pub fn now(&self) -> u64 {
        self.fabric.now().0
    }

    /// Runs until `stop` says so for an event, or until `limit_ns` of virtual time (the clock is
    /// then at `limit_ns`, even when nothing was left to do before it; a limit of `u64::MAX`
    /// ends when nothing is left). Every event the SM emits is passed to `stop`. Returns the
    /// event that stopped it.
    pub fn run_until(&mut self, limit_ns: u64, mut stop: impl FnMut(&SmEvent) -> bool) -> Option<SmEvent> {
        self.run_until_at(limit_ns, |_, ev| stop(ev))
    }

    /// As [`SimDriver::run_until`], with the virtual time at which the SM emitted each event.
    pub fn run_until_at(&mut self, limit_ns: u64, mut stop: impl FnMut(u64, &SmEvent) -> bool) -> Option<SmEvent> {
        let jobs = self.take_route_jobs.then_some(&mut self.jobs);
        let mut slots = [Slot { sm: &mut self.sm, agent: self.agent, jobs }];
        run_slots(&mut self.fabric, &mut slots, self.compute_time, limit_ns, &mut |_, at, ev| stop(at, ev))
            .map(|(_, ev)| ev)
    }

    /// Starts a sweep and runs to its report (or `limit_ns` of virtual time from now).
    pub fn sweep(&mut self, limit_ns: u64, mut on_event: impl FnMut(&SmEvent)) -> Option<SubnetReport> {
        let now = self.now();
        self.sm.start_sweep(now);
        let ev = self.run_until(now.saturating_add(limit_ns), |ev| {
            on_event(ev);
            matches!(ev, SmEvent::SubnetUp(_))
        });
        match ev {
            Some(SmEvent::SubnetUp(r)) => Some(r),
            _ => None,
        }
    }
}

/// One SM on the fabric, for [`run_slots`], and its routing jobs where the driver takes them.
struct Slot<'a> {
    sm: &'a mut Sm,
    agent: AgentId,
    jobs: Option<&'a mut Jobs>,
}

/// The routing job a driver took from its SM: out on a thread (wall clock), or done and due
/// at a virtual time.
#[derive(Debug, Default)]
struct Jobs {
    out: Option<Running>,
    due: Option<(u64, RouteDone)>,
}

/// A routing job on its thread: started at virtual time `at`; the thread gives its result
/// and its time (ns) on `compute_time`'s clock.
#[derive(Debug)]
struct Running {
    at: u64,
    started: std::time::Instant,
    compute_time: ComputeTime,
    thread: std::thread::JoinHandle<Option<(RouteDone, u64)>>,
}

impl Jobs {
    /// Takes the SM's routing jobs while none is out: each run at once on the virtual clock
    /// (its result handed back then), or started on a thread on the wall clock (in place if no
    /// thread can be started). True when a job was taken: the SM may have more to do (an early
    /// route is taken before the ports' configuration is built, [`crate::core::ComputeStep::Configure`]).
    fn take(&mut self, sm: &mut Sm, now: u64, compute_time: ComputeTime) -> bool {
        if self.out.is_some() || self.due.is_some() {
            return false;
        }
        let Some(job) = sm.take_route_job() else { return false };
        match compute_time {
            ComputeTime::Virtual => sm.finish_route(job.run(), now),
            ComputeTime::Wall | ComputeTime::ThreadCpu => match Running::start(job, now, compute_time) {
                Ok(r) => self.out = Some(r),
                Err(job) => {
                    let started = Stopwatch::start(compute_time);
                    let done = RouteJob::run(*job);
                    self.due = Some((now.saturating_add(started.elapsed_ns()), done));
                }
            },
        }
        true
    }

    /// When the result is due, once known. A finished thread gives it. While the SM waits for
    /// it (`waiting`: in its Routing phase) and `next` (the fabric's next event) is past the
    /// job's wall-clock time so far, the result may be due first: its thread is waited for.
    /// Otherwise the fabric goes on: the SM only keeps a result that comes while it configures
    /// the ports, so when it comes before the configuration's end changes nothing.
    fn due_by(&mut self, next: u64, waiting: bool) -> Option<u64> {
        if let Some(r) = self.out.take() {
            let so_far = || u64::try_from(r.started.elapsed().as_nanos()).unwrap_or(u64::MAX);
            // On the thread's CPU clock the job's time so far is not known here (at most its
            // wall time so far): while the SM waits, the job is waited for.
            let cpu = r.compute_time == ComputeTime::ThreadCpu;
            let must = next == u64::MAX || (waiting && (cpu || r.at.saturating_add(so_far()) < next));
            if must || r.thread.is_finished() {
                match r.thread.join() {
                    Ok(Some((done, took))) => {
                        self.due = Some((r.at.saturating_add(took), done));
                    }
                    // The job never reached the thread, which ran in place ([`Running::start`]).
                    Ok(None) => {}
                    // Routing panicked: as it would have in place.
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            } else {
                self.out = Some(r);
            }
        }
        self.due.as_ref().map(|d| d.0)
    }

    /// Whether the result is due at `now`.
    fn is_due(&self, now: u64) -> bool {
        self.due.as_ref().is_some_and(|d| d.0 <= now)
    }

    /// The result, once due at `now`.
    fn take_due(&mut self, now: u64) -> Option<RouteDone> {
        if self.is_due(now) { self.due.take().map(|d| d.1) } else { None }
    }
}

impl Running {
    /// `job` on a thread of its own, from virtual time `at`, timed on `compute_time`'s clock
    /// (the wall clock from now, or the thread's CPU time); the job back if none can start.
    fn start(job: RouteJob, at: u64, compute_time: ComputeTime) -> Result<Running, Box<RouteJob>> {
        let (tx, rx) = std::sync::mpsc::channel::<RouteJob>();
        let started = std::time::Instant::now();
        let run = move || {
            let job = rx.recv().ok()?;
            let clock = Stopwatch::start(compute_time);
            let done = job.run();
            let took = match clock {
                Stopwatch::Wall(_) => u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX),
                Stopwatch::ThreadCpu(_) => clock.elapsed_ns(),
            };
            Some((done, took))
        };
        let Ok(thread) = std::thread::Builder::new().name("ibsm-route".to_owned()).spawn(run) else {
            return Err(Box::new(job));
        };
        match tx.send(job) {
            Ok(()) => Ok(Running { at, started, compute_time, thread }),
            Err(back) => Err(Box::new(back.0)),
        }
    }
}

/// Steps every SM in `slots` and the fabric together in virtual time until `stop` says so for
/// an event (given the SM's index), or until `limit_ns` (the clock then at it; with no limit,
/// until nothing is left to do). Returns the SM's index and the event that stopped it.
fn run_slots(
    fabric: &mut Fabric,
    slots: &mut [Slot<'_>],
    compute_time: ComputeTime,
    limit_ns: u64,
    stop: &mut dyn FnMut(usize, u64, &SmEvent) -> bool,
) -> Option<(usize, SmEvent)> {
    loop {
        for (i, slot) in slots.iter_mut().enumerate() {
            loop {
                if slot.sm.poll_compute().is_some() {
                    compute(fabric, slot.sm, compute_time);
                }
                let now = fabric.now().0;
                if !slot.jobs.as_deref_mut().is_some_and(|j| j.take(slot.sm, now, compute_time)) {
                    break;
                }
            }
            // The configuration waited for an early route this driver did not take: it is
            // built now (the core holds it up once).
            if slot.sm.poll_compute() == Some(crate::core::ComputeStep::Configure) {
                compute(fabric, slot.sm, compute_time);
            }
            while let Some(t) = slot.sm.poll_transmit(fabric.now().0) {
                send(fabric, slot.agent, t);
            }
            while let Some(ev) = slot.sm.poll_event() {
                if stop(i, slot.sm.now(), &ev) {
                    return Some((i, ev));
                }
            }
        }
        let timers = slots.iter().filter_map(|s| s.sm.poll_timeout()).min();
        // The fabric moves from event to event until a MAD reaches an SM or an SM's timer is
        // due: until then no SM is called, so none has anything new to send or report, and
        // its deadline stays (a core changes only when called). Many steps are the fabric's
        // own (SMPs reaching an SMA, an SMA done with them): 375,000 of the 707,000 of a
        // k = 48 bring-up.
        let now = loop {
            let mut next = match (fabric.next_event(), timers) {
                (Some(a), Some(b)) => a.0.min(b),
                (Some(a), None) => a.0,
                (None, Some(b)) => b,
                (None, None) => u64::MAX,
            };
            // A routing job's result is an event too, once its time is known.
            for slot in slots.iter_mut() {
                let waiting = slot.sm.phase() == crate::core::SweepPhase::Routing;
                if let Some(at) = slot.jobs.as_deref_mut().and_then(|j| j.due_by(next, waiting)) {
                    next = next.min(at.max(fabric.now().0));
                }
            }
            if next > limit_ns || next == u64::MAX {
                // Nothing happens before the limit: the clock moves to it (a run "for a while"
                // ends then, whether or not anything was left to do).
                if limit_ns != u64::MAX && limit_ns > fabric.now().0 {
                    fabric.advance_to(SimTime(limit_ns));
                }
                return None;
            }
            fabric.advance_to(SimTime(next));
            let now = fabric.now().0;
            let routed = slots.iter().any(|s| s.jobs.as_deref().is_some_and(|j| j.is_due(now)));
            if routed || timers.is_some_and(|t| t <= now) || slots.iter().any(|s| fabric.has_mail(s.agent)) {
                break now;
            }
        };
        for slot in slots.iter_mut() {
            if let Some(done) = slot.jobs.as_deref_mut().and_then(|j| j.take_due(now)) {
                // The LFT diff that follows the route is the SM's work, on the wall clock too.
                match compute_time {
                    ComputeTime::Virtual => slot.sm.finish_route(done, now),
                    ComputeTime::Wall | ComputeTime::ThreadCpu => {
                        let started = Stopwatch::start(compute_time);
                        slot.sm.finish_route_clocked(done, &mut || now.saturating_add(started.elapsed_ns()));
                        fabric.advance_to(SimTime(slot.sm.now()));
                    }
                }
            }
            while let Some(r) = fabric.recv(slot.agent) {
                let src = MadSource { slid: r.slid, sqpn: r.sqpn, pkey_index: r.pkey_index, sl: 0, grh: None };
                slot.sm.handle_mad(r.at.0, &r.mad[..], src);
                slot.sm.recycle(Vec::from(r.mad as Box<[u8]>));
            }
            if slot.sm.poll_timeout().is_some_and(|t| t <= now) {
                slot.sm.handle_timeout(now);
            }
        }
    }
}

/// Runs an SM's pending compute steps, on the virtual clock or on the wall clock or the
/// thread's CPU clock (see [`ComputeTime`]); in the last two the fabric's clock follows the
/// core's.
fn compute(fabric: &mut Fabric, sm: &mut Sm, compute_time: ComputeTime) {
    let base = fabric.now().0;
    match compute_time {
        ComputeTime::Virtual => sm.handle_compute(&mut || base),
        ComputeTime::Wall | ComputeTime::ThreadCpu => {
            let start = Stopwatch::start(compute_time);
            sm.handle_compute(&mut || base.saturating_add(start.elapsed_ns()));
            fabric.advance_to(SimTime(sm.now()));
        }
    }
}

/// Hands one MAD to the fabric. The simulated fabric carries single 256-byte MADs (no RMPP): a
/// longer one is cut to its first MAD, as ibsim does. A MAD of exactly 256 bytes (every SMP)
/// goes in the allocation the core made for it, not copied into another.
fn send(fabric: &mut Fabric, agent: AgentId, t: Transmit) {
    let dest = Dest { dlid: t.to.lid, qpn: t.to.qpn };
    let pkey_index = t.to.pkey_index;
    let mad: Box<[u8; ibsm_mad::MAD_LEN]> = match t.bytes.into_boxed_slice().try_into() {
        Ok(mad) => mad,
        Err(bytes) => {
            let mut mad = Box::new([0u8; ibsm_mad::MAD_LEN]);
            let n = bytes.len().min(mad.len());
            mad[..n].copy_from_slice(&bytes[..n]);
            mad
        }
    };
    fabric.send_boxed(agent, mad, dest, pkey_index);
}

/// Several SMs on one simulated fabric (master, standbys), stepped together in virtual time.
#[derive(Debug)]
pub struct SimSms {
    /// The simulated fabric.
    pub fabric: Fabric,
    /// The SMs, each with its agent and where it sits.
    pub sms: Vec<SimSm>,
    /// Whether the SMs' computing takes virtual time (see [`ComputeTime`]).
    pub compute_time: ComputeTime,
}

/// One SM of a [`SimSms`].
#[derive(Debug)]
pub struct SimSm {
    /// The SM core.
    pub sm: Sm,
    /// Its agent in the fabric.
    pub agent: AgentId,
    /// Where it sits: node index and port.
    pub at: (usize, u8),
    /// Stepped: a killed SM is not (its process is gone).
    pub alive: bool,
    /// What a killed SM left on disk: its `guid2lid` as of its death (what `ibsm run
    /// --state-dir` writes after every sweep), for its restart.
    pub saved: crate::core::Guid2Lid,
}

impl SimSms {
    /// Powers `topo` on with `seed` and attaches each SM at its port.
    ///
    /// # Errors
    /// A message when an attach point is not valid.
    pub fn new(topo: &Topology, seed: u64, sms: Vec<(Sm, (usize, u8))>) -> Result<SimSms, String> {
        SimSms::with_config(topo, SimConfig { seed, ..SimConfig::default() }, sms)
    }

    /// As [`SimSms::new`], with every simulator setting (seed, timing, table sizes) from `cfg`.
    ///
    /// # Errors
    /// As [`SimSms::new`].
    pub fn with_config(topo: &Topology, cfg: SimConfig, sms: Vec<(Sm, (usize, u8))>) -> Result<SimSms, String> {
        let mut fabric = Fabric::new(topo, cfg);
        let mut out = Vec::new();
        for (mut sm, at) in sms {
            let agent = fabric
                .attach(at.0, at.1)
                .ok_or_else(|| format!("cannot attach an SM at node {} port {}", at.0, at.1))?;
            fabric.set_is_sm(agent, true);
            sm.set_sa_limits(crate::sa::Limits::SIM);
            out.push(SimSm { sm, agent, at, alive: true, saved: crate::core::Guid2Lid::default() });
        }
        Ok(SimSms { fabric, sms: out, compute_time: ComputeTime::Virtual })
    }

    /// Current virtual time, ns.
    pub fn now(&self) -> u64 {
        self.fabric.now().0
    }

    /// Starts SM `i`'s first sweep (or a sweep).
    pub fn start(&mut self, i: usize) {
        let now = self.now();
        if let Some(s) = self.sms.get_mut(i) {
            s.sm.start_sweep(now);
        }
    }

    /// Kills SM `i` as `kill -9` would: it is no longer stepped, and its port drops IsSM (the
    /// kernel closes the SM's device).
    pub fn kill(&mut self, i: usize) {
        if let Some(s) = self.sms.get_mut(i) {
            s.alive = false;
            s.saved = s.sm.guid2lid().clone();
            self.fabric.set_is_sm(s.agent, false);
        }
    }

    /// Restarts SM `i` as a new process would start: `sm` (fresh state) takes its port, which
    /// sets IsSM again, and starts its first sweep.
    pub fn restart(&mut self, i: usize, mut sm: Sm) {
        let now = self.now();
        if let Some(s) = self.sms.get_mut(i) {
            sm.set_sa_limits(crate::sa::Limits::SIM);
            s.sm = sm;
            s.alive = true;
            self.fabric.set_is_sm(s.agent, true);
            s.sm.start_sweep(now);
        }
    }

    /// The live SM that is master (the first, should there be several).
    pub fn master(&self) -> Option<usize> {
        self.sms.iter().position(|s| s.alive && s.sm.state() == crate::core::SmState::Master)
    }

    /// Runs the live SMs until `stop` says so for an event (with the SM's index), nothing is
    /// left to do, or `limit_ns`. Returns what stopped it.
    pub fn run_until(
        &mut self,
        limit_ns: u64,
        mut stop: impl FnMut(usize, &SmEvent) -> bool,
    ) -> Option<(usize, SmEvent)> {
        self.run_until_at(limit_ns, |i, _, ev| stop(i, ev))
    }

    /// As [`SimSms::run_until`], with the virtual time of each event.
    pub fn run_until_at(
        &mut self,
        limit_ns: u64,
        mut stop: impl FnMut(usize, u64, &SmEvent) -> bool,
    ) -> Option<(usize, SmEvent)> {
        let index: Vec<usize> = (0..self.sms.len()).filter(|&i| self.sms[i].alive).collect();
        let mut slots: Vec<Slot<'_>> = self
            .sms
            .iter_mut()
            .filter(|s| s.alive)
            .map(|s| Slot { sm: &mut s.sm, agent: s.agent, jobs: None })
            .collect();
        run_slots(&mut self.fabric, &mut slots, self.compute_time, limit_ns, &mut |i, t, ev| stop(index[i], t, ev))
            .map(|(i, ev)| (index[i], ev))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{Guid2Lid, SmConfig, SweepPhase};

    /// A routing job of a small tree: the early route its sweep offers as the ports are
    /// configured.
    fn route_job() -> RouteJob {
        let topo = ibsm_topology::GenSpec::fat_tree(2, 4).generate().expect("tree");
        let mut drv =
            SimDriver::new(&topo, 1, Sm::new(SmConfig::default(), Guid2Lid::default()), None).expect("driver");
        drv.take_route_jobs = false;
        let now = drv.now();
        drv.sm.start_sweep(now);
        let configuring =
            |ev: &SmEvent| matches!(ev, SmEvent::PhaseStarted { phase, .. } if *phase == SweepPhase::ConfiguringPorts);
        assert!(drv.run_until(now + 1_000_000_000, configuring).is_some(), "the ports are configured");
        drv.sm.take_route_job().expect("the sweep's job")
    }

    /// A stopwatch on the thread's CPU clock does not run while its thread waits for another
    /// that works; one on the wall clock does (the wall time of the wait is at least the
    /// worker's CPU time).
    #[test]
    fn a_cpu_stopwatch_stops_while_its_thread_waits_and_a_wall_one_does_not() {
        let cpu = Stopwatch::start(ComputeTime::ThreadCpu);
        assert!(matches!(cpu, Stopwatch::ThreadCpu(_)), "the thread's clock reads here");
        let wall = Stopwatch::start(ComputeTime::Wall);
        let worked = std::thread::spawn(|| {
            let start = crate::transport::cpu_clock::thread_cpu_ns().expect("the clock reads");
            let mut x = 0u64;
            for i in 0..20_000_000u64 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
            }
            crate::transport::cpu_clock::thread_cpu_ns().expect("the clock reads") - start
        })
        .join()
        .expect("the worker ends");
        let (on_cpu, on_wall) = (cpu.elapsed_ns(), wall.elapsed_ns());
        assert!(on_cpu < worked, "the waiting thread's stopwatch ran {on_cpu} ns, the worker worked {worked} ns");
        assert!(on_wall >= worked, "the wall stopwatch ran {on_wall} ns, the worker worked {worked} ns");
    }

    /// On the wall clock, while the SM waits for its route and the fabric's next event is later
    /// than the route has run so far, the route may be due first: the driver waits for it
    /// instead of moving the fabric (and the SM's clock) past the time the route was done.
    #[test]
    fn a_route_that_may_be_due_before_the_next_event_is_waited_for() {
        let far = 10_000_000_000;
        let mut jobs =
            Jobs { out: Some(Running::start(route_job(), 0, ComputeTime::Wall).expect("thread")), due: None };
        let due = jobs.due_by(far, true);
        assert!(due.is_some_and(|d| d < far), "due at {due:?}");
        assert!(jobs.out.is_none() && jobs.take_due(far).is_some());
        // A finished thread gives its result whatever the fabric's next event (one the route
        // has already run past comes first, and the fabric goes on to it without waiting).
        let mut jobs =
            Jobs { out: Some(Running::start(route_job(), 0, ComputeTime::Wall).expect("thread")), due: None };
        while !jobs.out.as_ref().is_some_and(|r| r.thread.is_finished()) {
            std::thread::yield_now();
        }
        assert!(jobs.due_by(1, true).is_some(), "a finished thread gives its result");
    }
}
