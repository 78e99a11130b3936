//! Command-line interface: argument parsing (clap) and one function per subcommand; the
//! bigger subcommands have a file each: [`routes`], [`topology`], [`partitions`], [`sim`]
//! (`sim play`, `sim soak`), [`man`]; [`log`] holds the daemon's log set-up and its own lines.
//!
//! Exit statuses: 0 success, 1 the operation failed, 2 bad input (arguments, config or
//! topology file), with the file, line and reason on stderr. A one-shot command whose standard
//! output is a pipe closed early (`| head`) ends quietly by SIGPIPE, as Unix tools do; `ibsm run`
//! keeps SIGPIPE ignored.

mod log;
mod man;
mod partitions;
mod routes;
mod sim;
mod topology;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};
use ibsm::core::lids::Guid2Lid;
use ibsm::core::{Sm, SmEvent};
use ibsm::daemon::config::ConfigFile;
use ibsm::daemon::control::ControlServer;
use ibsm::transport::sim::SimDriver;
use ibsm_sim::fabric::{Fabric, SimConfig};
use ibsm_topology::generators::{Degrade, FatTree, Grid, RailFatTree, RandomGraph};
use ibsm_topology::{GenSpec, Topology};

/// ibsm: an InfiniBand subnet manager.
#[derive(Debug, Parser)]
#[command(name = "ibsm", version, about)]
struct Cli {
    /// Log lines for people (`human`, the default) or one JSON object per line (`json`), on
    /// stderr; `RUST_LOG` picks the level (default: warnings and errors).
    #[arg(long, global = true, value_enum, default_value = "human")]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

/// `--log-format`.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum LogFormat {
    /// Human-readable lines.
    Human,
    /// One JSON object per line (`ts`, `level`, `target`, `message`, fields, `error_id`).
    Json,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the subnet manager.
    Run(RunArgs),
    /// Routing: dump the forwarding tables the SM would program, and check them.
    Routes {
        #[command(subcommand)]
        command: crate::cli::routes::RoutesCommand,
    },
    /// Ask the running SM to read its whole configuration again (the config file, partition
    /// policy, SM_Key file and expected topology; over its control socket), as SIGHUP does.
    Reload {
        /// The SM's control socket (`--control` of `ibsm run`, or `<state-dir>/ibsm.sock`).
        #[arg(long, value_name = "PATH")]
        socket: PathBuf,
    },
    /// The running SM's state, its last sweep and the M_Key violations (over its control socket).
    Status {
        /// The SM's control socket (`--control` of `ibsm run`, or `<state-dir>/ibsm.sock`).
        #[arg(long, value_name = "PATH")]
        socket: PathBuf,
        /// Print the answer as JSON (the control socket's `status` answer, one line).
        #[arg(long)]
        json: bool,
    },
    /// The configuration file: check one, or show the effective value of every option.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// The fabric's cabling: compare it with the expected one.
    Topology {
        #[command(subcommand)]
        command: crate::cli::topology::TopologyCommand,
    },
    /// Partition policies: print one as it resolves, convert between partitions.conf and TOML.
    Partitions {
        #[command(subcommand)]
        command: crate::cli::partitions::PartitionsCommand,
    },
    /// The simulated fabric: generate topologies, load and inspect them.
    Sim {
        #[command(subcommand)]
        command: SimCommand,
    },
    /// Write the man pages of ibsm and of every subcommand into DIR (`ibsm.1`, `ibsm-run.1`,
    /// `ibsm-routes-dump.1`, ...), e.g. `ibsm man /usr/local/share/man/man1`.
    Man {
        /// The directory (created if missing; pages of the same name are overwritten).
        #[arg(value_name = "DIR")]
        dir: PathBuf,
    },
}

#[derive(Debug, Subcommand)]
enum ConfigCommand {
    /// Check a configuration file (with the IBSM_* environment over it): exit 0 when valid,
    /// else 1 with `FILE:LINE:COL: reason` for every error.
    Check {
        /// The file.
        file: PathBuf,
    },
    /// The effective value of every option and where it came from (file, env, default).
    Show {
        /// The configuration file [default: none, only the environment and the defaults].
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Print the ibsm.toml equivalent of an OpenSM configuration file, and every OpenSM
    /// option that has no equivalent with the reason (as comments).
    ImportOpensm {
        /// The OpenSM file (`opensm.conf`, as `opensm -c FILE` writes it).
        file: PathBuf,
    },
}

#[derive(Debug, Subcommand)]
enum SimCommand {
    /// Generate a topology and write it as an ibnetdiscover/ibsim `.net` file.
    Gen(GenArgs),
    /// Load a `.net` file into the simulator and print its size and load time.
    Info {
        /// Topology file (`.net`, ibnetdiscover or ibsim format).
        topology: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Bring FABRIC up with the SM on the simulator, then run SCRIPT's timed faults and print
    /// one JSON line per event (see the README, "Fault scripts").
    Play(crate::cli::sim::PlayArgs),
    /// Seeded random fault sequences against the SM on the simulator, with the invariants
    /// checked at every quiescent point; a failure prints its seed and a minimal script.
    Soak(crate::cli::sim::SoakArgs),
}

#[derive(Debug, Args)]
struct RunArgs {
    /// Configuration file (TOML; see examples/ibsm.toml). Flags override it.
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
    /// Directory for persisted state (guid2lid) [default: from the config file, else none].
    #[arg(long)]
    state_dir: Option<PathBuf>,
    /// Local control socket (Unix stream, mode 0600) that `ibsm routes dump/check --socket`
    /// query [default: `<state-dir>/ibsm.sock` when a state directory is set, else none].
    #[arg(long, value_name = "PATH")]
    control: Option<PathBuf>,
    /// No control socket, even with a state directory.
    #[arg(long, conflicts_with = "control")]
    no_control: bool,
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
    /// SM priority 0..=15: the highest wins the election, ties go to the lower port GUID
    /// [default: from the config file, else 0].
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=15))]
    priority: Option<u8>,
    /// File holding the SM_Key (mode 0600; never give the key itself on a command line, where
    /// `ps` shows it) [default: from the config file, else key 1, OpenSM's default].
    #[arg(long, value_name = "FILE")]
    sm_key_file: Option<PathBuf>,
    /// Serve Prometheus metrics at http://ADDR/metrics [ADDR default: 127.0.0.1:9464, loopback
    /// only; give an address to listen elsewhere, `:0` for any free port].
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = ibsm::daemon::metrics_http::DEFAULT_ADDR)]
    metrics: Option<String>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Shape {
    /// k-ary fat tree (2 or 3 levels).
    FatTree,
    /// Rail-optimized 2-level fat tree (hosts with several HCAs, HCA i on rail i).
    RailFatTree,
    /// Torus of switches (wrap-around cables).
    Torus,
    /// Mesh of switches.
    Mesh,
    /// Random connected switch graph.
    Random,
}

#[derive(Debug, Args)]
struct GenArgs {
    /// Shape of the fabric.
    shape: Shape,
    /// Output file; `-` (the default) writes to stdout.
    #[arg(short, long, default_value = "-")]
    output: String,
    /// Fat tree: number of switch levels (2 or 3).
    #[arg(long, default_value_t = 2)]
    levels: u8,
    /// Ports per switch.
    #[arg(long, default_value_t = 8)]
    radix: u8,
    /// Fat tree: hosts per uplink on each leaf (1 = full bisection, 2 = 2:1, ...).
    #[arg(long, default_value_t = 1)]
    oversubscription: u8,
    /// Rail-optimized tree: HCAs per host.
    #[arg(long, default_value_t = 2)]
    rails: u8,
    /// Fat trees: inter-switch cables to remove at random (seeded).
    #[arg(long, default_value_t = 0)]
    remove_links: usize,
    /// Fat trees: upper-level switches to remove at random (seeded).
    #[arg(long, default_value_t = 0)]
    remove_switches: usize,
    /// Torus/mesh: sizes per dimension, comma-separated (e.g. `4,4` or `3,3,3`).
    #[arg(long, value_delimiter = ',', default_value = "4,4")]
    dims: Vec<u16>,
    /// Torus, mesh and random graphs: hosts per switch.
    #[arg(long, default_value_t = 1)]
    hosts_per_switch: u8,
    /// Random graph: number of switches.
    #[arg(long, default_value_t = 16)]
    switches: usize,
    /// Random graph: switch-to-switch cables.
    #[arg(long, default_value_t = 24)]
    links: usize,
    /// Seed for every random choice.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// Parses the command line and runs the subcommand.
pub fn run() -> ExitCode {
    let cli = Cli::parse();
    crate::cli::log::init_logging(matches!(cli.log_format, LogFormat::Json));
    if !matches!(cli.command, Command::Run(_)) {
        // A one-shot command whose reader goes away (`| head`) ends quietly, as Unix tools do.
        ibsm::transport::umad::default_sigpipe();
    }
    match cli.command {
        Command::Run(args) => run_sm(&args),
        Command::Routes { command } => crate::cli::routes::run(&command),
        Command::Partitions { command } => crate::cli::partitions::run(&command),
        Command::Topology { command } => crate::cli::topology::run(&command),
        Command::Config { command: ConfigCommand::Check { file } } => config_check(&file),
        Command::Config { command: ConfigCommand::Show { config } } => config_show(config.as_deref()),
        Command::Config { command: ConfigCommand::ImportOpensm { file } } => import_opensm(&file),
        Command::Reload { socket } => reload(&socket),
        Command::Status { socket, json } => status(&socket, json),
        Command::Sim { command: SimCommand::Gen(args) } => sim_gen(&args),
        Command::Sim { command: SimCommand::Info { topology, json } } => sim_info(&topology, json),
        Command::Sim { command: SimCommand::Play(args) } => crate::cli::sim::play(&args),
        Command::Sim { command: SimCommand::Soak(args) } => crate::cli::sim::soak(&args),
        Command::Man { dir } => crate::cli::man::run(Cli::command(), &dir),
    }
}

fn spec(a: &GenArgs) -> GenSpec {
    let degrade = Degrade { links: a.remove_links, switches: a.remove_switches, seed: a.seed };
    match a.shape {
        Shape::FatTree => GenSpec::FatTree(FatTree {
            levels: a.levels,
            radix: a.radix,
            oversubscription: a.oversubscription,
            degrade,
        }),
        Shape::RailFatTree => GenSpec::RailFatTree(RailFatTree { degrade, ..RailFatTree::new(a.radix, a.rails) }),
        Shape::Torus | Shape::Mesh => GenSpec::Grid(Grid {
            dims: a.dims.clone(),
            wrap: matches!(a.shape, Shape::Torus),
            hosts_per_switch: a.hosts_per_switch,
        }),
        Shape::Random => GenSpec::Random(RandomGraph {
            switches: a.switches,
            radix: a.radix,
            hosts_per_switch: a.hosts_per_switch,
            links: a.links,
            seed: a.seed,
        }),
    }
}

fn sim_gen(a: &GenArgs) -> ExitCode {
    let topo = match spec(a).generate() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("ibsm sim gen: {e}");
            return ExitCode::from(2);
        }
    };
    let text = topo.to_net();
    if a.output == "-" {
        print!("{text}");
    } else if let Err(e) = ibsm::daemon::state::write_atomically(Path::new(&a.output), text.as_bytes()) {
        eprintln!("ibsm sim gen: {e}");
        return ExitCode::FAILURE;
    } else {
        eprintln!(
            "wrote {}: {} switches, {} CAs, {} links",
            a.output,
            topo.switch_count(),
            topo.ca_count(),
            topo.link_count()
        );
    }
    ExitCode::SUCCESS
}

fn sim_info(path: &Path, json: bool) -> ExitCode {
    let t0 = Instant::now();
    let topo = match Topology::load(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("ibsm sim info: {e}");
            return ExitCode::from(2);
        }
    };
    let parsed = t0.elapsed();
    let t1 = Instant::now();
    let fabric = Fabric::new(&topo, SimConfig::default());
    let built = t1.elapsed();
    let (sw, ca, links) = (topo.switch_count(), topo.ca_count(), topo.link_count());
    let peak = peak_rss_kib();
    if json {
        println!(
            "{{\"switches\":{sw},\"cas\":{ca},\"links\":{links},\"nodes\":{},\"parse_ms\":{:.3},\"build_ms\":{:.3},\"peak_rss_kib\":{}}}",
            fabric.node_count(),
            parsed.as_secs_f64() * 1e3,
            built.as_secs_f64() * 1e3,
            peak.map_or_else(|| "null".to_owned(), |k| k.to_string())
        );
    } else {
        println!(
            "{}: {sw} switches, {ca} CAs, {links} links; parsed in {:.1} ms, simulated fabric built in {:.1} ms, peak RSS {}",
            path.display(),
            parsed.as_secs_f64() * 1e3,
            built.as_secs_f64() * 1e3,
            peak.map_or_else(|| "unknown".to_owned(), |k| format!("{:.1} MiB", k as f64 / 1024.0))
        );
    }
    ExitCode::SUCCESS
}

/// Peak resident set size of this process in KiB (Linux `VmHWM`), if the kernel tells.
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// `ibsm config check FILE`.
fn config_check(file: &std::path::Path) -> ExitCode {
    match ConfigFile::load_layered(Some(file)) {
        Ok(_) => {
            println!("{}: valid", file.display());
            ExitCode::SUCCESS
        }
        Err(errors) => {
            for e in &errors {
                println!("{e}");
            }
            ExitCode::FAILURE
        }
    }
}

/// `ibsm config show [--config FILE]`.
/// `ibsm config import-opensm FILE`: the TOML on stdout, exit 0; 2 when the file cannot be
/// read.
fn import_opensm(file: &std::path::Path) -> ExitCode {
    match ibsm_topology::file::read_bytes(file, ibsm::daemon::config::CONFIG_LIMIT) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let imported = ibsm::opensm::config_import::import(&text);
            print!("{}", ibsm::opensm::config_import::to_toml(&imported, &file.display().to_string()));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ibsm config import-opensm: {}: {e}", file.display());
            ExitCode::from(2)
        }
    }
}

fn config_show(file: Option<&std::path::Path>) -> ExitCode {
    match ConfigFile::load_layered(file) {
        Ok((cfg, sources)) => {
            for ((key, value), (_, source)) in cfg.shown_values().into_iter().zip(sources) {
                match value {
                    Some(v) => println!("{key} = {v}  # {}", source.name()),
                    None => println!("# {key}: unset  # {}", source.name()),
                }
            }
            ExitCode::SUCCESS
        }
        Err(errors) => {
            for e in &errors {
                eprintln!("ibsm config show: {e}");
            }
            ExitCode::from(2)
        }
    }
}

/// `ibsm status`: what the running SM says about itself.
fn status(socket: &std::path::Path, json: bool) -> ExitCode {
    let st = match ibsm::daemon::control::query::<ibsm::daemon::control::Status>(
        socket,
        ibsm::daemon::control::Query::Status,
        std::time::Duration::from_secs(10),
    ) {
        Ok(st) => st,
        Err(e) => {
            eprintln!("ibsm status: {e}");
            return ExitCode::FAILURE;
        }
    };
    if json {
        return match serde_json::to_string(&st) {
            Ok(line) => {
                println!("{line}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("ibsm status: {e}");
                ExitCode::FAILURE
            }
        };
    }
    println!("state {} (phase {}), subnet {}", st.state, st.phase, if st.subnet_up { "up" } else { "not up" });
    if let Some(l) = &st.last_sweep {
        println!(
            "last sweep ({} ago, took {}): {} switches, {} CAs, {} end ports, {} links; routed by {}; {} SMPs ({} failed); {} ports active, {} not; {}",
            crate::cli::log::fmt_ns(l.age_ms.saturating_mul(1_000_000)),
            crate::cli::log::fmt_ns(l.total_ns),
            l.switches,
            l.cas,
            l.end_ports,
            l.links,
            l.routing_engine,
            l.smps_sent,
            l.smps_failed,
            l.ports_active,
            l.ports_not_active,
            if l.complete { "complete" } else { "incomplete" }
        );
    }
    if let Some(m) = &st.master {
        println!("master {} (LID {}, priority {}); this SM's priority {}", m.guid, m.lid, m.priority, st.priority);
    }
    let m = &st.m_keys;
    let bad: u64 = m.violations.iter().map(|v| v.traps).sum();
    println!("M_Keys {} (protect {}); bad M_Key traps: {bad}", m.mode, m.protect);
    for v in &m.violations {
        println!("  LID {}: {} trap(s) 256", v.lid, v.traps);
    }
    print_sync(&st.state, &st.sync);
    let t = &st.traps;
    let received: Vec<String> = t.received.iter().map(|(n, c)| format!("{c}x{n}")).collect();
    println!(
        "traps: {} ({}); {} suppressed, {} covered by a running sweep, {} sweeps deferred; {} light sweeps",
        t.received.values().sum::<u64>(),
        if received.is_empty() { "none".to_owned() } else { received.join(", ") },
        t.suppressed,
        t.coalesced,
        t.deferred,
        t.light_sweeps
    );
    for u in &t.unhealthy_ports {
        println!("  unhealthy: node {} port {}: {} trap(s), last {}", u.node, u.port, u.count, u.trap);
    }
    print_problems(&st.problems);
    ExitCode::SUCCESS
}

/// The problems lines of `ibsm status`.
fn print_problems(p: &ibsm::daemon::control::Problems) {
    if p.count() == 0 {
        println!("problems: none");
        return;
    }
    println!("problems: {}", p.count());
    if p.unrouted_lids_total > 0 {
        let some: Vec<String> =
            p.unrouted_lids.iter().map(|u| format!("{} ({} switches)", u.lid, u.switches)).collect();
        let more = p.unrouted_lids_total.saturating_sub(p.unrouted_lids.len());
        let more = if more > 0 { format!(" and {more} more") } else { String::new() };
        println!("  unrouted LIDs: {}{more}", some.join(", "));
    }
    for u in &p.unhealthy_ports {
        println!("  unhealthy port: node {} port {} (trap {})", u.node, u.port, u.trap);
    }
    for b in &p.blocked_nodes {
        println!("  did not answer in the last sweep: {} {:?}", b.guid, b.desc);
    }
    if p.ports_not_active > 0 {
        println!("  linked ports not active: {}", p.ports_not_active);
    }
    for line in &p.cabling {
        println!("  cabling: {line}");
    }
    if p.cabling_total > p.cabling.len() {
        println!("  cabling: and {} more", p.cabling_total - p.cabling.len());
    }
    for q in &p.quarantined_guids {
        println!("  duplicate GUID {} (quarantined: {})", q.guid, q.ports.join(" "));
    }
    for r in &p.refused_ports {
        println!("  refused (miscabled, left unarmed): node {} port {}", r.node, r.port);
    }
}

/// The state sync lines of `ibsm status`.
fn print_sync(state: &str, s: &ibsm::daemon::control::SyncStatusJson) {
    match state {
        "master" => {
            println!("state sync: version {}, {} standby(s)", s.version, s.standbys.len());
            for p in &s.standbys {
                let at = p.current_at.map(|v| format!(" at version {v}")).unwrap_or_default();
                println!("  standby {} (LID {}): {}{at}", p.guid, p.lid, p.state);
            }
        }
        "standby" => match s.current_at {
            Some(v) => println!("state sync: current at the master's version {v} ({} sections)", s.sections.len()),
            None if s.sections.is_empty() => println!("state sync: nothing received from the master"),
            None => println!("state sync: behind the master's version {} (holds {})", s.version, s.sections.join(", ")),
        },
        _ => {}
    }
}

/// `ibsm reload`: the running SM reads its configuration and partition policy again and says
/// what changed; a refused one (its errors printed) leaves the running one in force and exits
/// with status 1.
fn reload(socket: &std::path::Path) -> ExitCode {
    match ibsm::daemon::control::query::<ibsm::daemon::control::Reloaded>(
        socket,
        ibsm::daemon::control::Query::Reload,
        std::time::Duration::from_secs(10),
    ) {
        Ok(r) => {
            let what = match (r.applied.is_empty(), r.reroute, r.sweep) {
                (true, ..) => "nothing changed".to_owned(),
                (false, true, _) => format!("applied {}; the SM sweeps and routes from scratch", r.applied.join(", ")),
                (false, false, true) => {
                    format!("applied {}; the SM sweeps and rewrites only what differs", r.applied.join(", "))
                }
                (false, false, false) => format!("applied {} (no sweep needed)", r.applied.join(", ")),
            };
            println!("reloaded {}: {what}", r.reloaded);
            if !r.restart.is_empty() {
                println!("kept until a restart: {} (the running value stays)", r.restart.join(", "));
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ibsm reload: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `ibsm run`: layers flags over the config file, loads the state, and runs on the chosen
/// transport.
fn run_sm(a: &RunArgs) -> ExitCode {
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
            let Some(i) = topo.find(name) else {
                eprintln!("ibsm run: --sim-host {name:?}: no such node in {}", topology.display());
                return ExitCode::from(2);
            };
            let n = &topo.nodes[i];
            let port = if n.kind == ibsm_topology::NodeKind::Switch {
                0
            } else {
                (1..=n.num_ports).find(|&p| n.peer(p).is_some()).unwrap_or(1)
            };
            Some((i, port))
        }
    };
    let mut drv = match SimDriver::with_config(&topo, crate::cli::sim::sim_config(a.seed, a.sma_time), sm, at) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("ibsm run: {e}");
            return ExitCode::from(2);
        }
    };
    // Routing and LID assignment take the time they really take, so the phase line is true.
    drv.compute_time = ibsm::transport::sim::ComputeTime::Wall;
    let host = &topo.nodes[drv.at.0].name;
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
                return if r.complete { ExitCode::SUCCESS } else { ExitCode::FAILURE };
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
    let control = control_path.as_deref().map(ControlServer::bind).transpose().map_err(|e| {
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
