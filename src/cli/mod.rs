//! Command-line interface: the clap definitions of the command line and its dispatch (here),
//! and a file per subcommand: [`run`] (`ibsm run`, the daemon), [`status`] (`status`,
//! `reload`: clients of the control socket), [`controls`] (`sweep`, `reroute`, `log-level`,
//! `lid`, `guid`: the operator's controls and questions over the same socket), [`counters`]
//! (`counters`: the performance manager's figures over the same socket), [`config`],
//! [`routes`], [`topology`],
//! [`partitions`], [`sim`] (`sim gen`, `sim info`, `sim play`, `sim soak`), [`man`]; [`log`]
//! holds the daemon's log set-up and its own lines.
//!
//! Exit statuses: 0 success, 1 the operation failed, 2 bad input (arguments, config or
//! topology file), with the file, line and reason on stderr. A one-shot command whose standard
//! output is a pipe closed early (`| head`) ends quietly by SIGPIPE, as Unix tools do; `ibsm run`
//! keeps SIGPIPE ignored.

mod config;
mod controls;
mod counters;
mod log;
mod man;
mod partitions;
mod routes;
mod run;
mod sim;
mod status;
mod topology;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand, ValueEnum};

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
    Run(run::RunArgs),
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
    /// The running SM's port counters, as its performance manager last read them (no MAD is
    /// sent): every port as `perfquery` prints it, the ports with errors as `ibqueryerrors`
    /// lists them (`--errors`, exit 1 when there are any), or the busiest (`--top N`).
    Counters(counters::CountersArgs),
    /// Ask the running SM for a sweep now (heavy unless --light), as OpenSM's console `resweep`.
    Sweep(controls::SweepArgs),
    /// Ask the running SM for a heavy sweep that routes from scratch.
    Reroute {
        /// The SM's control socket (`--control` of `ibsm run`, or `<state-dir>/ibsm.sock`).
        #[arg(long, value_name = "PATH")]
        socket: PathBuf,
    },
    /// Change the running SM's log level, for all of it or one module, without a restart.
    LogLevel(controls::LogLevelArgs),
    /// Hold the fabric still during maintenance (`off`: no sweep of any kind, so no routes,
    /// LFT, P_Key or PortInfo written; traps counted, the SA answering) or let it go (`on`:
    /// a heavy sweep at once), as OpenSM's console `sweep off|on`.
    Sweeping(controls::SweepingArgs),
    /// Disable a port of the fabric (PortPhysicalState Disabled; kept so across sweeps,
    /// restarts and a failover) or enable it again (Polling), then sweep.
    Port(controls::PortAdminArgs),
    /// What the running SM knows of the port (or switch) with this LID: node, state, link,
    /// neighbour, partitions, routes through it.
    Lid {
        /// The LID (1 to 49151).
        #[arg(value_parser = clap::value_parser!(u16).range(1..0xc000))]
        lid: u16,
        #[command(flatten)]
        args: controls::PortArgs,
    },
    /// As `ibsm lid`, by port GUID or node GUID (a node GUID shows every port of the node).
    Guid {
        /// The GUID (`0x0002c90300001234`).
        #[arg(value_parser = ibsm::daemon::control::parse_guid)]
        guid: ibsm_mad::Guid,
        #[command(flatten)]
        args: controls::PortArgs,
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
    Gen(sim::GenArgs),
    /// Load a `.net` file into the simulator and print its size and load time.
    Info {
        /// Topology file (`.net`, ibnetdiscover or ibsim format).
        topology: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Bring FABRIC up with the SM on the simulator, then run SCRIPT's timed faults and print
    /// one JSON line per event (see docs/fabric-tools.md, "Fault scripts").
    Play(crate::cli::sim::PlayArgs),
    /// Seeded random fault sequences against the SM on the simulator, with the invariants
    /// checked at every quiescent point; a failure prints its seed and a minimal script.
    Soak(crate::cli::sim::SoakArgs),
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
        Command::Run(args) => run::run_sm(&args),
        Command::Routes { command } => crate::cli::routes::run(&command),
        Command::Partitions { command } => crate::cli::partitions::run(&command),
        Command::Topology { command } => crate::cli::topology::run(&command),
        Command::Config { command: ConfigCommand::Check { file } } => config::config_check(&file),
        Command::Config { command: ConfigCommand::Show { config } } => config::config_show(config.as_deref()),
        Command::Config { command: ConfigCommand::ImportOpensm { file } } => config::import_opensm(&file),
        Command::Reload { socket } => status::reload(&socket),
        Command::Status { socket, json } => status::status(&socket, json),
        Command::Sweep(args) => controls::sweep(&args),
        Command::Counters(args) => counters::counters(&args),
        Command::Reroute { socket } => controls::reroute(&socket),
        Command::LogLevel(args) => controls::log_level(&args),
        Command::Sweeping(args) => controls::sweeping(&args),
        Command::Port(args) => controls::port_admin(&args),
        Command::Lid { lid, args } => {
            controls::port("lid", &args, ibsm::daemon::control::PortKey::Lid(ibsm_mad::Lid(lid)))
        }
        Command::Guid { guid, args } => controls::port("guid", &args, ibsm::daemon::control::PortKey::Guid(guid)),
        Command::Sim { command: SimCommand::Gen(args) } => sim::sim_gen(&args),
        Command::Sim { command: SimCommand::Info { topology, json } } => sim::sim_info(&topology, json),
        Command::Sim { command: SimCommand::Play(args) } => crate::cli::sim::play(&args),
        Command::Sim { command: SimCommand::Soak(args) } => crate::cli::sim::soak(&args),
        Command::Man { dir } => crate::cli::man::run(Cli::command(), &dir),
    }
}
