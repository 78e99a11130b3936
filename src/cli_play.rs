//! `ibsm sim play FABRIC SCRIPT`: the fault script runner's command line.
//!
//! Owns reading the fabric, the script and the configuration, and printing one JSON line per
//! event on stdout (errors on stderr, `FILE:LINE: reason` for the script). The runner itself is
//! `ibsm::play`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use ibsm::config::ConfigFile;
use ibsm_topology::Topology;

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
    /// Configuration file for the SM (routing engine, LMC, ...; see examples/ibsm.toml).
    #[arg(long)]
    config: Option<PathBuf>,
}

/// Runs `ibsm sim play`: exit 0 when every event ended with the invariants holding, 1 when one
/// did not, 2 on bad input.
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
    let steps = match ibsm::play::parse_script(&text, &topo) {
        Ok(s) => s,
        Err(errors) => {
            for e in errors {
                eprintln!("{}:{}: {}", a.script.display(), e.line, e.reason);
            }
            return ExitCode::from(2);
        }
    };
    let cfg = match &a.config {
        Some(path) => match ConfigFile::load(path) {
            Ok(c) => c.sm_config(),
            Err(e) => {
                eprintln!("ibsm sim play: {e}");
                return ExitCode::from(2);
            }
        },
        None => ibsm::core::SmConfig::default(),
    };
    let mut all_ok = true;
    let played = ibsm::play::play(&topo, &steps, a.seed, cfg, |o| {
        all_ok &= o.invariants_ok;
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
