//! Command-line interface: argument parsing (clap) and one function per subcommand.
//!
//! Exit statuses: 0 success, 1 the operation failed, 2 bad input (arguments, config or
//! topology file), with the file, line and reason on stderr.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Args, Parser, Subcommand, ValueEnum};
use ibsm_sim::fabric::{Fabric, SimConfig};
use ibsm_sim::topology::generators::{Degrade, FatTree, Grid, RailFatTree, RandomGraph};
use ibsm_sim::topology::{GenSpec, Topology};

/// ibsm: an InfiniBand subnet manager.
#[derive(Debug, Parser)]
#[command(name = "ibsm", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The simulated fabric: generate topologies, load and inspect them.
    Sim {
        #[command(subcommand)]
        command: SimCommand,
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
    match cli.command {
        Command::Sim { command: SimCommand::Gen(args) } => sim_gen(&args),
        Command::Sim { command: SimCommand::Info { topology, json } } => sim_info(&topology, json),
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
    } else if let Err(e) = write_atomically(&PathBuf::from(&a.output), text.as_bytes()) {
        eprintln!("ibsm sim gen: {}: {e}", a.output);
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

fn sim_info(path: &PathBuf, json: bool) -> ExitCode {
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

/// Writes `bytes` to `path` atomically: a temporary file in the same directory, fsync, rename.
fn write_atomically(path: &PathBuf, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp.{}", std::process::id()));
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, path)?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Peak resident set size of this process in KiB (Linux `VmHWM`), if the kernel tells.
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
