//! `ibsm run --sim` once its fabric is stable: the simulated SM kept alive on the wall clock,
//! answering the control socket and reloading on SIGHUP or `ibsm reload`, until SIGINT or
//! SIGTERM. Meanwhile the virtual clock stands still, so ages in its answers add the
//! wall-clock time since the fabric went idle. The fabric and its virtual-time driver are the
//! transport's ([`SimDriver`]); this loop only adds the process around them.

use super::control::Reloaded;
use super::side_queries::{Asks, SideQueries, SideQuery, next_query, sweep_answer};
use super::signals::{Signal, Signals};
use super::startup;
use crate::core::{Requested, SmEvent};
use crate::transport::sim::SimDriver;

/// Answers the control socket's queries (if there is one) from the SM until SIGINT or
/// SIGTERM, and returns the signal's name. The simulated fabric does not move meanwhile,
/// except for a reload: SIGHUP (from `signals`, caught since the start, so one that came
/// during the first sweeps is taken now) and `reload` on the control socket read the
/// configuration again ([`startup::reload`] from `reload`) and, when it asks for a
/// sweep, run the fabric to that sweep's report; every event goes to `on_event`. SIGUSR1 and
/// SIGUSR2 are logged ([`Signal::log`]).
///
/// # Errors
/// When the runtime or the signal handlers cannot be set up.
pub fn serve_until_signal<Q: SideQueries>(
    drv: &mut SimDriver,
    mut control: Option<&mut Q>,
    signals: &mut Signals,
    reload: Option<&(startup::Sources, startup::Built)>,
    mut on_event: impl FnMut(&SmEvent),
) -> std::io::Result<&'static str> {
    use tokio::signal::unix::{SignalKind, signal};
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    rt.block_on(async {
        let mut sigint = signal(SignalKind::interrupt())?;
        let mut sigterm = signal(SignalKind::terminate())?;
        // The virtual clock stands still from here: the wall clock measures how long.
        let mut idle_since = std::time::Instant::now();
        loop {
            tokio::select! {
                _ = sigint.recv() => return Ok("SIGINT"),
                _ = sigterm.recv() => return Ok("SIGTERM"),
                sig = signals.recv() => {
                    sig.log();
                    if sig == Signal::Hup {
                        // As OpenSM's: the configuration read again, and a heavy sweep.
                        let swept = reload_now(drv, reload, &mut on_event).is_ok_and(|r| r.sweep);
                        if !swept
                            && let Err(why) = sweep_now(drv, Requested::Heavy, &mut on_event)
                        {
                            tracing::info!(why, "SIGHUP: no sweep");
                        }
                        idle_since = std::time::Instant::now();
                    }
                }
                req = next_query(control.as_deref_mut()) => match req.asks() {
                    Asks::Reload => {
                        let answer = match reload_now(drv, reload, &mut on_event) {
                            Ok(r) => serde_json::to_string(&r).unwrap_or_default(),
                            Err(e) => serde_json::json!({ "error": e }).to_string(),
                        };
                        req.reply(answer);
                        idle_since = std::time::Instant::now();
                    }
                    Asks::Sweep(what) => {
                        let done = sweep_now(drv, what, &mut on_event);
                        req.reply(sweep_answer(what, done));
                        idle_since = std::time::Instant::now();
                    }
                    Asks::Change => {
                        let changed = change_now(drv, &req, &mut on_event);
                        if changed.disabled_ports
                            && let Some(d) = reload.and_then(|(s, _)| s.state_dir.as_deref())
                        {
                            crate::daemon::state::record_disabled_ports(&d.join(crate::daemon::state::GUID2LID), &drv.sm);
                        }
                        req.reply(changed.answer);
                        idle_since = std::time::Instant::now();
                    }
                    Asks::Answer => {
                        let idle = u64::try_from(idle_since.elapsed().as_nanos()).unwrap_or(u64::MAX);
                        req.answer_after_idle(&drv.sm, idle);
                    }
                },
            }
        }
    })
}

/// A reload on the simulated fabric: the configuration read again and, if it asks for one,
/// the sweep it brings run to its report (at most [`RELOAD_SWEEP_LIMIT_NS`] of virtual time).
fn reload_now(
    drv: &mut SimDriver,
    from: Option<&(startup::Sources, startup::Built)>,
    on_event: &mut dyn FnMut(&SmEvent),
) -> Result<Reloaded, String> {
    let done = startup::reload(&mut drv.sm, from)?;
    if done.sweep {
        let limit = drv.now().saturating_add(RELOAD_SWEEP_LIMIT_NS);
        drv.run_until(limit, |ev| {
            on_event(ev);
            matches!(ev, SmEvent::SubnetUp(_))
        });
    }
    Ok(done)
}

/// A sweep an operator asked for, run on the simulated fabric: a heavy one to its report (at
/// most [`RELOAD_SWEEP_LIMIT_NS`] of virtual time), a light one for [`LIGHT_SWEEP_LIMIT_NS`]
/// (with the quick or heavy sweep it may start).
fn sweep_now(drv: &mut SimDriver, what: Requested, on_event: &mut dyn FnMut(&SmEvent)) -> Result<(), &'static str> {
    drv.sm.request_sweep(what)?;
    let light = what == Requested::Light;
    let limit = drv.now().saturating_add(if light { LIGHT_SWEEP_LIMIT_NS } else { RELOAD_SWEEP_LIMIT_NS });
    drv.run_until(limit, |ev| {
        on_event(ev);
        !light && matches!(ev, SmEvent::SubnetUp(_))
    });
    Ok(())
}

/// A maintenance control ([`SideQuery::change`]) applied on the simulated fabric, which then
/// runs through what follows, if anything does: the sweep it brings (sweeping let go, or a
/// port's Set answered), to its report (at most [`RELOAD_SWEEP_LIMIT_NS`] of virtual time);
/// with sweeping held there is none, and the Set it queued gets [`LIGHT_SWEEP_LIMIT_NS`].
fn change_now<Q: SideQuery>(
    drv: &mut SimDriver,
    req: &Q,
    on_event: &mut dyn FnMut(&SmEvent),
) -> crate::daemon::side_queries::Changed {
    let changed = req.change(&mut drv.sm);
    if !changed.follows {
        return changed;
    }
    let held = drv.sm.sweeping_held_since().is_some();
    let limit = drv.now().saturating_add(if held { LIGHT_SWEEP_LIMIT_NS } else { RELOAD_SWEEP_LIMIT_NS });
    drv.run_until(limit, |ev| {
        on_event(ev);
        matches!(ev, SmEvent::SubnetUp(_))
    });
    changed
}

/// How much virtual time a light sweep asked for is given on the simulated fabric (its reads
/// take microseconds each; a quick sweep it starts, milliseconds).
const LIGHT_SWEEP_LIMIT_NS: u64 = 2_000_000_000;

/// How much virtual time the sweep a reload brings may take on the simulated fabric.
const RELOAD_SWEEP_LIMIT_NS: u64 = 600_000_000_000;
