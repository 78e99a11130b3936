//! `ibsm sim`: `sim gen` (a generated fabric written as `.net`), `sim info` (a fabric loaded
//! and measured), and `sim play FABRIC SCRIPT`, the fault script runner's command line (with
//! `sim soak`, its seeded random cousin).
//!
//! Owns reading the fabric, the script and the configuration, and printing one JSON line per
//! event on stdout (errors on stderr, `FILE:LINE: reason` for the script). The runner itself is
//! `ibsm::lab::play`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::{Args, ValueEnum};
use ibsm_sim::fabric::{Fabric, SimConfig};
use ibsm_topology::generators::{Degrade, FatTree, Grid, RailFatTree, RandomGraph};
use ibsm_topology::{GenSpec, Topology};

/// Arguments of `ibsm sim play`.
#[derive(Debug, Args)]
pub struct PlayArgs {
    /// The fabric (`.net`, ibnetdiscover or ibsim format).
    fabric: PathBuf,
    /// The fault script: one `TIME ACTION [ARG]` per line (times after the fabric is up).
    script: PathBuf,
    /// Seed of the simulated fabric (packet drops, delays).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Configuration file for the SM (routing engine, LMC, ...; see examples/ibsm.toml)
    /// [default: none: the built-in defaults].
    #[arg(long)]
    config: Option<PathBuf>,
    /// Standby SMs beside the master (on the next hosts), for `sm-kill` and `sm-restart`.
    #[arg(long, default_value_t = 0)]
    standbys: usize,
    /// Service time of every switch's and CA's SMA per SMP (SMPs to one node queue); `0`: none.
    #[arg(long, value_name = "TIME", default_value = "10us", value_parser = parse_sma_time)]
    sma_time: u64,
    /// How the SM's computing (routing, LFT diff, SA snapshot) moves the simulated clock:
    /// `wall`, by the wall time it takes (on a machine busy with other work that includes the
    /// time it waited for a core, so the SM may still compute when the next event is due);
    /// `cpu`, by the CPU time of the computing thread (the same on a busy machine as on a
    /// quiet one). `compute_ms` is then wall or CPU ms.
    #[arg(long, value_enum, default_value_t = ComputeClock::Wall)]
    compute_time: ComputeClock,
}

/// `--compute-time` of `sim play`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ComputeClock {
    /// The wall clock.
    Wall,
    /// The computing thread's CPU time.
    Cpu,
}

/// `--sma-time`: a time with a unit (`10us`, `2.5us`, `800ns`), or `0` for no service time.
pub(crate) fn parse_sma_time(t: &str) -> Result<u64, String> {
    if t == "0" { Ok(0) } else { ibsm::lab::play::parse_time(t) }
}

/// The simulator's configuration for `seed` and an SMA service time of `sma_ns` (switches and
/// CAs alike).
pub(crate) fn sim_config(seed: u64, sma_ns: u64) -> ibsm_sim::fabric::SimConfig {
    let d = ibsm_sim::fabric::SimConfig::default();
    ibsm_sim::fabric::SimConfig { seed, timing: d.timing.with_sma_ns(sma_ns), ..d }
}

/// Runs `ibsm sim play`: exit 0 when the invariants held at every quiescent point (each
/// `settle`, and the end of the script), 1 when they did not, 2 on bad input.
pub fn play(a: &PlayArgs) -> ExitCode {
    let topo = match Topology::load(&a.fabric) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("ibsm sim play: {e}");
            return ExitCode::from(2);
        }
    };
    let text = match std::fs::read_to_string(&a.script) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("ibsm sim play: {}: {e}", a.script.display());
            return ExitCode::from(2);
        }
    };
    let steps = match ibsm::lab::play::parse_script(&text, &topo) {
        Ok(s) => s,
        Err(errors) => {
            for e in errors {
                eprintln!("{}:{}: {}", a.script.display(), e.line, e.reason);
            }
            return ExitCode::from(2);
        }
    };
    let Some(cfg) = sm_config(a.config.as_deref(), "play") else { return ExitCode::from(2) };
    let mut all_ok = true;
    let sim = sim_config(a.seed, a.sma_time);
    let compute = match a.compute_time {
        ComputeClock::Wall => ibsm::transport::sim::ComputeTime::Wall,
        ComputeClock::Cpu => ibsm::transport::sim::ComputeTime::ThreadCpu,
    };
    let played = ibsm::lab::play::play(&topo, &steps, sim, (cfg, a.standbys), compute, |o| {
        all_ok &= !o.fails();
        match serde_json::to_string(o) {
            Ok(line) => println!("{line}"),
            Err(e) => eprintln!("ibsm sim play: {e}"),
        }
    });
    match played {
        Ok(_) if all_ok => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(1),
        Err(e) => {
            eprintln!("ibsm sim play: {e}");
            ExitCode::from(2)
        }
    }
}

/// The SM configuration of `--config FILE` (the defaults without one); `None` after printing
/// why the file was refused.
fn sm_config(path: Option<&std::path::Path>, cmd: &str) -> Option<ibsm::core::SmConfig> {
    // As `ibsm run` reads it: the files it names (partition policy, expected topology) too.
    let sources =
        ibsm::daemon::startup::Sources { config: path.map(std::path::Path::to_path_buf), ..Default::default() };
    match sources.build() {
        Ok(b) => Some(b.cfg),
        Err(errors) => {
            for e in errors {
                eprintln!("ibsm sim {cmd}: {e}");
            }
            None
        }
    }
}

/// Arguments of `ibsm sim soak`.
#[derive(Debug, Args)]
pub struct SoakArgs {
    /// The fabric [default: a 3-level fat tree of 8-port switches, 128 HCAs]. It should survive
    /// three faults at a time (the soak checks every live HCA pair).
    fabric: Option<PathBuf>,
    /// Number of seeds.
    #[arg(long, default_value_t = 100)]
    seeds: u64,
    /// First seed.
    #[arg(long, default_value_t = 1)]
    first: u64,
    /// Rounds of faults per seed (each ends at a quiescent point).
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// Configuration file for the SMs [default: none: the built-in defaults].
    #[arg(long)]
    config: Option<PathBuf>,
    /// Standby SMs beside the master; with one or more, the soak also kills and restarts the
    /// master.
    #[arg(long, default_value_t = 1)]
    standbys: usize,
    /// Print the fault script of this seed (for `ibsm sim play`) and exit.
    #[arg(long, value_name = "SEED")]
    show: Option<u64>,
}

/// Runs `ibsm sim soak`: exit 0 when every seed passed, 1 when one failed (its seed, the
/// failure and a minimal script that `ibsm sim play` replays are printed), 2 on bad input.
pub fn soak(a: &SoakArgs) -> ExitCode {
    let topo = match &a.fabric {
        Some(path) => Topology::load(path).map_err(|e| e.to_string()),
        None => ibsm_topology::GenSpec::fat_tree(3, 8).generate().map_err(|e| e.to_string()),
    };
    let topo = match topo {
        Ok(t) => t,
        Err(e) => {
            eprintln!("ibsm sim soak: {e}");
            return ExitCode::from(2);
        }
    };
    let Some(cfg) = sm_config(a.config.as_deref(), "soak") else { return ExitCode::from(2) };
    let soak_cfg = ibsm::lab::soak::SoakConfig {
        rounds: a.rounds,
        standbys: a.standbys,
        ..ibsm::lab::soak::SoakConfig::default()
    };
    if let Some(seed) = a.show {
        print!("{}", ibsm::lab::soak::script(&topo, seed, &soak_cfg));
        return ExitCode::SUCCESS;
    }
    let start = std::time::Instant::now();
    let (mut events, mut failed) = (0usize, 0u64);
    for seed in a.first..a.first.saturating_add(a.seeds) {
        let steps = match ibsm::lab::soak::steps(&topo, seed, &soak_cfg) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("ibsm sim soak: seed {seed}: {e}");
                return ExitCode::from(2);
            }
        };
        events += steps.len();
        match ibsm::lab::soak::run(&topo, &steps, seed, (&cfg, a.standbys)) {
            Ok(None) => {}
            Ok(Some(f)) => {
                failed += 1;
                let (min, why) = ibsm::lab::soak::minimize(&topo, &steps, seed, (&cfg, a.standbys));
                println!("seed {seed} FAILED at `{}`: {}", steps[f.step].line, f.what);
                if let Some(w) = why {
                    println!(
                        "minimal script ({} lines; replay with `ibsm sim play FABRIC SCRIPT --seed {seed} --standbys {}`): {}",
                        min.len(),
                        a.standbys,
                        w.what
                    );
                }
                for s in &min {
                    println!("  {}", s.line);
                }
            }
            Err(e) => {
                eprintln!("ibsm sim soak: seed {seed}: {e}");
                return ExitCode::from(2);
            }
        }
    }
    println!(
        "soak: {} seeds ({}..={}), {events} events, {failed} failed, {:.1} s",
        a.seeds,
        a.first,
        a.first.saturating_add(a.seeds).saturating_sub(1),
        start.elapsed().as_secs_f64()
    );
    if failed == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) }
}

/// The shapes `ibsm sim gen` makes.
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
    /// Dragonfly: groups of all-to-all switches, one cable between every two groups.
    Dragonfly,
}

/// Arguments of `ibsm sim gen`.
#[derive(Debug, Args)]
pub(super) struct GenArgs {
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
    /// Dragonfly: number of groups.
    #[arg(long, default_value_t = 9)]
    groups: usize,
    /// Dragonfly: switches per group.
    #[arg(long, default_value_t = 4)]
    group_size: usize,
    /// Torus, mesh, random graphs and dragonflies: hosts per switch.
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
        Shape::Dragonfly => GenSpec::dragonfly(a.groups, a.group_size, a.hosts_per_switch),
        Shape::Random => GenSpec::Random(RandomGraph {
            switches: a.switches,
            radix: a.radix,
            hosts_per_switch: a.hosts_per_switch,
            links: a.links,
            seed: a.seed,
        }),
    }
}

pub(super) fn sim_gen(a: &GenArgs) -> ExitCode {
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

pub(super) fn sim_info(path: &Path, json: bool) -> ExitCode {
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
