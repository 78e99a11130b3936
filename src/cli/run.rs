//! `ibsm run`: the flags, layered over the config file, the state directory restored, the
//! control socket and the metrics endpoint opened, and the SM run on umad
//! (`ibsm::daemon::umad_loop`) or on the simulator (`ibsm::daemon::sim_loop`) until it stops.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use ibsm::core::lids::Guid2Lid;
use ibsm::core::{Sm, SmEvent};
use ibsm::daemon::control::ControlServer;
use ibsm::transport::sim::SimDriver;
use ibsm_topology::Topology;

/// Arguments of `ibsm run`.
#[derive(Debug, Args)]
pub(super) struct RunArgs {
    /// Configuration file (TOML; see examples/ibsm.toml). Flags override it [default: none:
    /// the environment and the built-in defaults].
    #[arg(long)]
    config: Option<PathBuf>,
    /// Run on the in-process simulated fabric described by this `.net` file instead of umad;
    /// `--sim` alone uses the built-in fabric (a 3-level fat tree of 4-port switches, 16 HCAs).
    #[arg(long, value_name = "TOPOLOGY", num_args = 0..=1, default_missing_value = BUILTIN_ARG)]
    sim: Option<PathBuf>,
    /// Simulator: the node (by `.net` name) the SM sits on [default: the first cabled CA].
    #[arg(long, requires = "sim")]
    sim_host: Option<String>,
    /// Simulator: seed for every random choice.
    #[arg(long, default_value_t = 1, requires = "sim")]
    seed: u64,
    /// Simulator: service time of every switch's and CA's SMA per SMP (SMPs to one node queue);
    /// `0`: none.
    #[arg(long, value_name = "TIME", default_value = "10us", value_parser = crate::cli::sim::parse_sma_time, requires = "sim")]
    sma_time: u64,
    /// umad: the CA to run on (e.g. `mlx5_0`) [default: found in sysfs, the first InfiniBand
    /// port whose link is up].
    #[arg(long, value_name = "NAME", conflicts_with = "sim")]
    ca: Option<String>,
    /// umad: the port number on the CA [default: found in sysfs, as for --ca].
    #[arg(long, value_name = "N", conflicts_with = "sim")]
    port: Option<u8>,
    /// Directory for persisted state (guid2lid, the P_Key layout, the M_Key holdings and
    /// secret, the state lock, the control socket) [default: from the config file, else none:
    /// nothing persists].
    #[arg(long)]
    state_dir: Option<PathBuf>,
    /// Local control socket (Unix stream, mode 0600) that `ibsm status`, `ibsm reload`, `ibsm
    /// sweep`, `ibsm lid` and `ibsm routes dump/check --socket` use [default: `<state-dir>/ibsm.sock` when a state
    /// directory is set, else none].
    #[arg(long, value_name = "PATH")]
    control: Option<PathBuf>,
    /// No control socket, even with a state directory.
    #[arg(long, conflicts_with = "control")]
    no_control: bool,
    /// Give the control socket to this group (a name in /etc/group, or a GID), mode 0660: its
    /// members may ask `status`, `routes`, `lid` and `guid`; changes (`reload`, `sweep`,
    /// `reroute`, `log-level`) stay with root and the SM's user [default: none, mode 0600].
    #[arg(long, value_name = "GROUP", conflicts_with = "no_control")]
    control_group: Option<String>,
    /// LID mask control 0..=7 [default: from the config file, else 0].
    #[arg(long)]
    lmc: Option<u8>,
    /// Routing engine, or a comma-separated chain tried in order [default: from the config
    /// file, else ftree,updn,minhop].
    #[arg(long)]
    routing_engine: Option<String>,
    /// Exit after the first sweep: status 0 when the subnet is up, 1 otherwise.
    #[arg(long)]
    once: bool,
    /// Partition policy: OpenSM's partitions.conf grammar or ibsm's TOML form [default: from
    /// the config file, else the default partition 0x7FFF with every port a full member].
    #[arg(long, value_name = "FILE")]
    partitions: Option<PathBuf>,
    /// QoS policy in OpenSM's qos-policy.conf format; giving one turns QoS on (OpenSM's
    /// `-Q -Y FILE`): SL2VL and VL arbitration tables on every port [default: from the config
    /// file's qos-policy-file, else QoS off].
    #[arg(long, value_name = "FILE")]
    qos_policy: Option<PathBuf>,
    /// infiniband-diags' node name map (`0x<NodeGUID> "name"` per line): the names status,
    /// the dumps, the page and the logs show nodes by [default: from the config file's
    /// node-name-map, else their NodeDescriptions].
    #[arg(long, value_name = "FILE")]
    node_name_map: Option<PathBuf>,
    /// SM priority 0..=15: the highest wins the election, ties go to the lower port GUID
    /// [default: from the config file, else 0].
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=15))]
    priority: Option<u8>,
    /// File holding the SM_Key (mode 0600; never give the key itself on a command line, where
    /// `ps` shows it) [default: from the config file, else key 1, OpenSM's default].
    #[arg(long, value_name = "FILE")]
    sm_key_file: Option<PathBuf>,
    /// Serve Prometheus metrics at http://ADDR/metrics [ADDR default: 127.0.0.1:9464, loopback
    /// only; give an address to listen elsewhere, `127.0.0.1:0` for any free port].
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = ibsm::daemon::metrics_http::DEFAULT_ADDR)]
    metrics: Option<String>,
    /// Simulator: give a cable an error rate, as `sim play`'s `link-errors` does: `NODE[PORT]
    /// symbol=N [rcv=N] [link-downed=N] [per=TIME]` (repeatable). The performance manager then
    /// reads two more intervals before the SM idles, so its last interval shows the errors.
    #[arg(long, value_name = "SPEC", requires = "sim")]
    sim_link_errors: Vec<String>,
    /// Simulator: the performance manager reads N more intervals (of virtual time) after the
    /// bring-up, before the SM idles or, with --once, exits: to measure its books and history
    /// (BENCHMARKS.md) [default: 0].
    #[arg(long, value_name = "N", requires = "sim", default_value_t = 0)]
    sim_pm_sweeps: u64,
}

/// `ibsm run`: layers flags over the config file, loads the state, and runs on the chosen
/// transport.
pub(super) fn run_sm(a: &RunArgs) -> ExitCode {
    // First of all: from here on SIGHUP, SIGUSR1 and SIGUSR2 are caught, never fatal; each is
    // taken by the transport once it runs (a SIGHUP during the first sweep reloads after it).
    let signals = match ibsm::daemon::signals::Signals::install() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("ibsm run: installing the handlers of SIGHUP, SIGUSR1, SIGUSR2: {e}");
            return ExitCode::FAILURE;
        }
    };
    let sources = ibsm::daemon::startup::Sources {
        config: a.config.clone(),
        lmc: a.lmc,
        routing_engine: a.routing_engine.clone(),
        partitions: a.partitions.clone(),
        priority: a.priority,
        sm_key_file: a.sm_key_file.clone(),
        state_dir: a.state_dir.clone(),
        qos_policy: a.qos_policy.clone(),
        node_name_map: a.node_name_map.clone(),
    };
    // Held until the SM exits: one SM per state directory, locked before anything in it is read.
    let _held = match sources.state_dir().as_deref().map(ibsm::daemon::state::StateDir::acquire).transpose() {
        Ok(held) => held,
        Err(e) => {
            eprintln!("ibsm run: {e}");
            return ExitCode::from(2);
        }
    };
    let built = match sources.build() {
        Ok(b) => b,
        Err(errors) => {
            for e in errors {
                eprintln!("ibsm run: {e}");
            }
            return ExitCode::from(2);
        }
    };
    let (mut cfg, file, state_dir) = (built.cfg.clone(), &built.file, built.state_dir.clone());
    cfg.tid_key = random_key();
    ibsm::daemon::node_names::set(&cfg.node_names);
    let guid2lid_path = state_dir.as_ref().map(|d| d.join(ibsm::daemon::state::GUID2LID));
    let table = match &guid2lid_path {
        Some(p) => match ibsm::daemon::state::load_guid2lid(p) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("ibsm run: {e}");
                return ExitCode::from(2);
            }
        },
        None => Guid2Lid::default(),
    };
    let mut sm = Sm::new(cfg, table);
    if let Err(e) = restore_state(&mut sm, file.guid2mkey.as_deref(), state_dir.as_deref()) {
        eprintln!("ibsm run: {e}");
        return ExitCode::from(2);
    }
    let (control, _metrics) = match listeners(a, state_dir.as_deref()) {
        Ok(l) => l,
        Err(code) => return code,
    };
    let Some(topology) = &a.sim else {
        return run_on_umad(a, sm, guid2lid_path, (sources, built), control, signals);
    };
    run_on_sim(a, topology, sm, guid2lid_path.as_deref(), control, (signals, &(sources, built)))
}

/// `ibsm run` on a umad port (real hardware, or ibsim through `ibsim-run`).
fn run_on_umad(
    a: &RunArgs,
    sm: Sm,
    guid2lid: Option<PathBuf>,
    reload: (ibsm::daemon::startup::Sources, ibsm::daemon::startup::Built),
    control: Option<ControlServer>,
    signals: ibsm::daemon::signals::Signals,
) -> ExitCode {
    use ibsm::daemon::umad_loop::{self, DriverOptions, Finish};
    use ibsm::transport::umad::{UmadPort, find_port};

    let wall = Instant::now();
    let location = match find_port(a.ca.as_deref(), a.port) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("ibsm run: {e}");
            return ExitCode::FAILURE;
        }
    };
    let port = match UmadPort::open(&location) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("ibsm run: {e}");
            return ExitCode::FAILURE;
        }
    };
    tracing::info!(port = %location, "starting on umad");
    let opts = DriverOptions {
        once: a.once,
        guid2lid,
        // The core's light sweeps (sweep-interval-s) notice changes; no periodic heavy sweep.
        sweep_interval: None,
        reload: Some(reload),
        ..DriverOptions::default()
    };
    let result = umad_loop::run_with_control(port, sm, &opts, control, Some(signals), |ev| {
        crate::cli::log::log_event(ev);
        match ev {
            SmEvent::SubnetUp(r) => crate::cli::log::say_report(r, wall.elapsed()),
            SmEvent::Standby { master, priority, lid } => {
                crate::cli::log::say(&format!(
                    "standby: the master is {:#018x} (priority {priority}, LID {}); watching it",
                    master.0, lid.0
                ));
            }
            _ => {}
        }
    });
    let code: u8 = match result {
        Ok(Finish::Swept(r)) if r.complete => 0,
        Ok(Finish::Swept(r)) => {
            eprintln!(
                "ibsm run: the subnet is not fully up: {} SMPs failed, {} linked ports not active",
                r.smps_failed, r.ports_not_active
            );
            1
        }
        Ok(Finish::Standby { master }) => {
            crate::cli::log::say(&format!("standby: the master is {:#018x}", master.0));
            0
        }
        Ok(Finish::NoReport { waited }) => {
            eprintln!("ibsm run: no sweep report within {} s", waited.as_secs());
            1
        }
        Ok(Finish::Stopped { signal, sweeps }) => {
            eprintln!("ibsm run: stopped by {signal} after {sweeps} sweeps");
            // With --once the sweep did not finish: the subnet is not known to be up.
            u8::from(a.once)
        }
        Err(e) => {
            eprintln!("ibsm run: {e}");
            1
        }
    };
    // Under umad2sim, the shim's exit handler joins its receiver thread while holding a lock
    // that thread may be waiting for, when a MAD arrives during the exit (for instance the trap
    // 144 that closing issm makes ibsim send to the master, which is us): the process never
    // exits then. The port and issm are closed and everything of ours is done by now, so leave
    // without running exit handlers.
    if ibsm::transport::umad::under_umad2sim() {
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        ibsm::transport::umad::exit_now(code);
    }
    ExitCode::from(code)
}

/// The built-in simulated fabric of `ibsm run --sim`.
const BUILTIN_FABRIC: &str = include_str!("../../examples/fabrics/fat-tree-3l-k4.net");
/// The value `--sim` takes when given without a file.
const BUILTIN_ARG: &str = "@builtin";
/// How the built-in fabric is named in messages.
const BUILTIN_NAME: &str = "<built-in fat-tree-3l-k4>";

/// Where `--sim-host NAME` puts the SM: the node and its port (0 on a switch, else its first
/// cabled port, port 1 if none is); `None` if the topology has no such node.
fn sim_host_at(topo: &Topology, name: &str) -> Option<(usize, u8)> {
    let i = topo.find(name)?;
    let n = topo.nodes.get(i)?;
    let port = if n.kind == ibsm_topology::NodeKind::Switch {
        0
    } else {
        (1..=n.num_ports).find(|&p| n.peer(p).is_some()).unwrap_or(1)
    };
    Some((i, port))
}

fn run_on_sim(
    a: &RunArgs,
    topology: &Path,
    sm: Sm,
    guid2lid: Option<&Path>,
    mut control: Option<ControlServer>,
    (mut signals, reload): (
        ibsm::daemon::signals::Signals,
        &(ibsm::daemon::startup::Sources, ibsm::daemon::startup::Built),
    ),
) -> ExitCode {
    let wall = Instant::now();
    let builtin = topology.as_os_str() == BUILTIN_ARG;
    let topology = if builtin { Path::new(BUILTIN_NAME) } else { topology };
    let loaded = if builtin { Topology::parse_str(BUILTIN_FABRIC, BUILTIN_NAME) } else { Topology::load(topology) };
    let topo = match loaded {
        Ok(t) => t,
        Err(e) => {
            eprintln!("ibsm run: {e}");
            return ExitCode::from(2);
        }
    };
    let at = match &a.sim_host {
        None => None,
        Some(name) => {
            let Some(at) = sim_host_at(&topo, name) else {
                eprintln!("ibsm run: --sim-host {name:?}: no such node in {}", topology.display());
                return ExitCode::from(2);
            };
            Some(at)
        }
    };
    let mut drv = match SimDriver::with_config(&topo, crate::cli::sim::sim_config(a.seed, a.sma_time), sm, at) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("ibsm run: {e}");
            return ExitCode::from(2);
        }
    };
    let Ok(()) = inject_link_errors(&a.sim_link_errors, &topo, &mut drv) else { return ExitCode::from(2) };
    // Routing and LID assignment take the time they really take, so the phase line is true.
    drv.compute_time = ibsm::transport::sim::ComputeTime::Wall;
    let host = topo.nodes.get(drv.at.0).map(|n| n.name.clone()).unwrap_or_default();
    // The simulated fabric has what it needs of the topology: its parse (16 MB at k = 48) goes.
    drop(topo);
    tracing::info!(topology = %topology.display(), sm_at = %host, port = drv.at.1, "starting on the simulated fabric");
    let notify = ibsm::daemon::notify::Notifier::from_env();
    let mut sweeps = 0u32;
    loop {
        sweeps += 1;
        let report = drv.sweep(600_000_000_000, crate::cli::log::log_event);
        if let Some(p) = guid2lid {
            let saved = ibsm::daemon::state::save_after_sweep(p, &drv.sm);
            if let Err(e) = saved {
                eprintln!("ibsm run: {e}");
                return ExitCode::FAILURE;
            }
        }
        if let Some(r) = report {
            crate::cli::log::say_report(&r, wall.elapsed());
            if sweeps == 1 {
                // systemd (Type=notify): the simulated SM is ready once its first sweep is done.
                let up = if r.complete { "up" } else { "not fully up" };
                notify.ready(&format!("master (simulated fabric): subnet {up}"));
            }
            if a.once {
                let code = once_done(&mut drv, a, r.complete);
                // The process ends here: what the run built (the simulated fabric, the SM's
                // subnet, tables and snapshot: hundreds of MB in millions of allocations at
                // k = 48) is left to the OS instead of being freed piece by piece, which took
                // a tenth of a second or more after the report (the Sm and the fabric write
                // nothing when dropped).
                std::mem::forget(drv);
                return code;
            }
        } else {
            println!("sweep {sweeps}: no subnet-up report within the time limit");
            if a.once {
                return ExitCode::FAILURE;
            }
        }
        // A simulated fabric changes only through faults, and none are scripted from the CLI
        // yet: one more sweep confirms the fabric is stable, then the SM idles, answering the
        // control socket, until a signal.
        if sweeps >= 2 {
            finish_perf_sweep(&mut drv, a.sim_pm_sweeps.max(if a.sim_link_errors.is_empty() { 0 } else { 2 }));
            match control.as_ref().and_then(ControlServer::path) {
                Some(p) => crate::cli::log::say(&format!(
                    "fabric stable after {sweeps} sweeps; simulated SM idle, control socket {} (Ctrl-C to stop)",
                    p.display()
                )),
                None => crate::cli::log::say(&format!(
                    "fabric stable after {sweeps} sweeps; simulated SM idle (Ctrl-C to stop)"
                )),
            }
            let _ = std::io::Write::flush(&mut std::io::stdout());
            return match ibsm::daemon::sim_loop::serve_until_signal(
                &mut drv,
                control.as_mut(),
                &mut signals,
                Some(reload),
                |ev| {
                    crate::cli::log::log_event(ev);
                    if let SmEvent::SubnetUp(r) = ev {
                        crate::cli::log::say_report(r, wall.elapsed());
                    }
                },
            ) {
                Ok(signal) => {
                    eprintln!("ibsm run: stopped by {signal} after {sweeps} sweeps");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("ibsm run: {e}");
                    ExitCode::FAILURE
                }
            };
        }
    }
}

/// The control socket (`--control`, or in the state directory) and the metrics endpoint
/// (`--metrics`), which hands its scrapes to the SM's loop through the control channel.
fn listeners(
    a: &RunArgs,
    state_dir: Option<&std::path::Path>,
) -> Result<(Option<ControlServer>, Option<ibsm::daemon::metrics_http::MetricsServer>), ExitCode> {
    let control_path = if a.no_control {
        None
    } else {
        a.control.clone().or_else(|| state_dir.map(|d| d.join(ibsm::daemon::control::DEFAULT_NAME)))
    };
    let group = match a.control_group.as_deref().map(ibsm::daemon::control::group_id).transpose() {
        Ok(g) => g,
        Err(e) => {
            eprintln!("ibsm run: --control-group: {e}");
            return Err(ExitCode::from(2));
        }
    };
    let control = control_path
        .as_deref()
        .map(|p| ControlServer::bind_with(p, ibsm::daemon::surface::Limits::DEFAULT, group))
        .transpose()
        .map_err(|e| {
            eprintln!("ibsm run: {e}");
            ExitCode::FAILURE
        })?;
    let Some(addr) = &a.metrics else { return Ok((control, None)) };
    let control = control.unwrap_or_else(ControlServer::without_socket);
    let metrics = ibsm::daemon::metrics_http::MetricsServer::bind(addr, &control).map_err(|e| {
        eprintln!("ibsm run: --metrics {addr}: {e}");
        ExitCode::FAILURE
    })?;
    println!("metrics: http://{}/metrics", metrics.addr());
    Ok((Some(control), Some(metrics)))
}

/// What the state directory (and OpenSM's `guid2mkey`) tell a starting SM: P_Key indexes, the
/// keys ports hold (OpenSM's first when taking over from it, then this SM's own), the neighbour
/// map.
fn restore_state(
    sm: &mut Sm,
    opensm_guid2mkey: Option<&std::path::Path>,
    state_dir: Option<&std::path::Path>,
) -> Result<(), String> {
    let mut held = match opensm_guid2mkey.map(ibsm::daemon::state::load_guid2mkey).transpose() {
        Ok(keys) => keys.unwrap_or_default(),
        Err(e) => return Err(format!("guid2mkey: {e}")),
    };
    if let Some(d) = state_dir {
        let err = |e: ibsm::daemon::state::StateError| e.to_string();
        sm.set_pkey_layout(ibsm::daemon::state::load_pkeys(&d.join(ibsm::daemon::state::PKEYS)).map_err(err)?);
        sm.set_mkey_neighbors(
            ibsm::daemon::state::load_neighbors(&d.join(ibsm::daemon::state::NEIGHBORS)).map_err(err)?,
        );
        held.extend(ibsm::daemon::state::load_guid2mkey(&d.join(ibsm::daemon::state::GUID2MKEY)).map_err(err)?);
        sm.set_disabled_ports(
            ibsm::daemon::state::load_disabled_ports(&d.join(ibsm::daemon::state::DISABLED_PORTS)).map_err(err)?,
        );
    }
    sm.set_mkeys_held(held);
    Ok(())
}

/// A key no other host can guess, for the SMPs' TIDs: std's per-process random hasher keys
/// (from the OS's random source) over the PID and the time.
fn random_key() -> u64 {
    use std::hash::BuildHasher;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    std::hash::RandomState::new().hash_one((std::process::id(), now))
}

/// The performance manager's sweep that waited for the bring-up's sweeps reads every port
/// before the simulated fabric stands still, so that `ibsm counters` has figures.
/// `--sim-link-errors`: each cable's error rate set on the simulated fabric (what is wrong
/// with a spec is printed).
fn inject_link_errors(specs: &[String], topo: &Topology, drv: &mut SimDriver) -> Result<(), ()> {
    for spec in specs {
        let (node, port, rate) = ibsm::lab::play::parse_link_errors(topo, spec)
            .map_err(|e| eprintln!("ibsm run: --sim-link-errors {spec:?}: {e}"))?;
        drv.fabric.inject_fault(ibsm_sim::fabric::Fault::LinkErrors { node, port, rate });
    }
    Ok(())
}

/// Runs the simulated fabric until the performance manager has completed `n` more sweeps (at
/// most `n + 1` intervals and a minute more of virtual time).
fn run_perf_sweeps(drv: &mut SimDriver, n: u64) {
    let interval = drv.sm.perf().config().interval_ns;
    if interval == 0 || n == 0 {
        return;
    }
    let target = drv.sm.perf().counts().sweeps.saturating_add(n);
    let limit = drv.now().saturating_add(interval.saturating_mul(n + 1)).saturating_add(60_000_000_000);
    while drv.sm.perf().counts().sweeps < target && drv.now() < limit {
        let until = drv.now().saturating_add(100_000_000);
        drv.run_until(until, |ev| {
            crate::cli::log::log_event(ev);
            false
        });
        if drv.now() < until {
            drv.fabric.advance_to(ibsm_sim::fabric::SimTime(until));
        }
    }
}

/// `--once` on the simulator after the first sweep: `--sim-pm-sweeps` PM sweeps, if asked, then
/// the exit status (0 when the subnet is up).
fn once_done(drv: &mut SimDriver, a: &RunArgs, complete: bool) -> ExitCode {
    if a.sim_pm_sweeps > 0 {
        finish_perf_sweep(drv, a.sim_pm_sweeps);
    }
    if complete { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

/// Runs the simulated fabric until the running PM sweep (if any) is done, then `then` more.
fn finish_perf_sweep(drv: &mut SimDriver, then: u64) {
    let limit = drv.now().saturating_add(60_000_000_000);
    while drv.sm.perf().sweeping() && drv.now() < limit {
        let until = drv.now().saturating_add(10_000_000);
        drv.run_until(until, |ev| {
            crate::cli::log::log_event(ev);
            false
        });
        // The driver stops at its last event before `until`; the clock goes on to it.
        if drv.now() < until {
            drv.fabric.advance_to(ibsm_sim::fabric::SimTime(until));
        }
    }
    run_perf_sweeps(drv, then);
}
