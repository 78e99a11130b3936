//! `ibsm topology diff`: the fabric compared with its expected cabling, offline (`--net`, a
//! `.net` file such as `ibnetdiscover` writes) or live (`--socket`, a running SM's view).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::Subcommand;
use ibsm::control::{self, Query};
use ibsm::routes::live::LiveRoutes;
use ibsm_topology::Topology;

/// `ibsm topology ...`
#[derive(Debug, Subcommand)]
pub enum TopologyCommand {
    /// Compare a fabric with the expected cabling: missing, extra and miscabled nodes and links
    /// (and, between two `.net` files, link widths and speeds). Exit status 0 when they agree,
    /// 1 when they differ, 2 when an input cannot be read.
    Diff {
        /// The expected fabric (`.net`).
        expected: PathBuf,
        /// The fabric to check, as a `.net` file (e.g. `ibnetdiscover` output).
        #[arg(long, required_unless_present = "socket", conflicts_with = "socket")]
        net: Option<PathBuf>,
        /// The fabric a running SM discovered, through its control socket.
        #[arg(long, value_name = "PATH")]
        socket: Option<PathBuf>,
    },
}

/// Runs `ibsm topology ...`.
pub fn run(cmd: &TopologyCommand) -> ExitCode {
    match cmd {
        TopologyCommand::Diff { expected, net, socket } => diff(expected, net.as_ref(), socket.as_ref()),
    }
}

fn diff(expected: &Path, net: Option<&PathBuf>, socket: Option<&PathBuf>) -> ExitCode {
    let plan = match Topology::load(expected) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("ibsm topology diff: {e}");
            return ExitCode::from(2);
        }
    };
    let (found, attrs) = match (net, socket) {
        (Some(p), _) => match Topology::load(p) {
            Ok(t) => (t, true),
            Err(e) => {
                eprintln!("ibsm topology diff: {e}");
                return ExitCode::from(2);
            }
        },
        (None, Some(sock)) => {
            let live: Result<LiveRoutes, String> =
                control::query(sock, Query::Routes, Duration::from_secs(60)).map_err(|e| e.to_string());
            match live.and_then(|l| l.to_topology().map_err(|e| e.to_string())) {
                Ok(t) => (t, false),
                Err(e) => {
                    eprintln!("ibsm topology diff: {}: {e}", sock.display());
                    return ExitCode::from(2);
                }
            }
        }
        (None, None) => {
            eprintln!("ibsm topology diff: give --net FILE or --socket PATH");
            return ExitCode::from(2);
        }
    };
    let d = ibsm_topology::diff(&plan, &found, attrs);
    if d.is_empty() {
        println!("as expected: {} nodes, {} links", found.nodes.len(), found.link_count());
        return ExitCode::SUCCESS;
    }
    print!("{d}");
    println!("{} difference(s)", d.differences.len());
    ExitCode::from(1)
}
