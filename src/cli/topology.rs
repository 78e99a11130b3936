//! `ibsm topology show | dot | diff`: the fabric listed by switch tier, drawn as Graphviz DOT,
//! or compared with its expected cabling; offline (`--net`, a `.net` file such as
//! `ibnetdiscover` writes) or live (`--socket`, a running SM's view, with LIDs but no link
//! widths or speeds).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::Subcommand;
use ibsm::daemon::control::{self, Query};
use ibsm::routes::live::LiveRoutes;
use ibsm_mad::Guid;
use ibsm_topology::{NodeKind, Topology, by_tier};

/// Where the fabric comes from.
#[derive(Debug, clap::Args)]
pub struct Source {
    /// A `.net` file (ibsim or ibnetdiscover format).
    #[arg(long, required_unless_present = "socket", conflicts_with = "socket")]
    net: Option<PathBuf>,
    /// A running SM's control socket: the fabric it discovered.
    #[arg(long, value_name = "PATH")]
    socket: Option<PathBuf>,
    /// Show nodes by the names this file gives their NodeGUIDs (infiniband-diags' node name
    /// map, `0x0002c90300001234 "rack3-leaf2"` per line).
    #[arg(long, value_name = "FILE")]
    node_name_map: Option<PathBuf>,
}

/// `ibsm topology ...`
#[derive(Debug, Subcommand)]
pub enum TopologyCommand {
    /// List the switches by tier (tier 1 has the CAs cabled), then the CAs, each with its
    /// cables (and LID when live, widths and speeds from a `.net` file).
    Show {
        #[command(flatten)]
        source: Source,
        /// JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Write the fabric as Graphviz DOT, ranked by tier (`| dot -Tsvg > fabric.svg`).
    Dot {
        #[command(flatten)]
        source: Source,
    },
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
        TopologyCommand::Show { source, json } => match load(source) {
            Ok((t, lids, attrs)) => {
                print!("{}", if *json { show_json(&t, &lids, attrs) } else { show_text(&t, &lids, attrs) });
                ExitCode::SUCCESS
            }
            Err(code) => code,
        },
        TopologyCommand::Dot { source } => match load(source) {
            Ok((t, _, _)) => {
                print!("{}", ibsm_topology::to_dot(&t));
                ExitCode::SUCCESS
            }
            Err(code) => code,
        },
    }
}

/// The fabric (its nodes named by `--node-name-map` where it names them), the LIDs by port GUID
/// (live only), and whether widths and speeds are known.
fn load(source: &Source) -> Result<(Topology, HashMap<Guid, u16>, bool), ExitCode> {
    let (mut t, lids, attrs) = load_fabric(source)?;
    if let Some(path) = &source.node_name_map {
        let map = ibsm::opensm::node_name_map::NameMap::load(path).map_err(|e| {
            eprintln!("ibsm topology: --node-name-map: {e}");
            ExitCode::from(2)
        })?;
        for n in &mut t.nodes {
            if let Some(name) = map.get(n.node_guid) {
                name.clone_into(&mut n.name);
                n.desc = None;
            }
        }
    }
    Ok((t, lids, attrs))
}

fn load_fabric(source: &Source) -> Result<(Topology, HashMap<Guid, u16>, bool), ExitCode> {
    if let Some(p) = &source.net {
        return Topology::load(p).map(|t| (t, HashMap::new(), true)).map_err(|e| {
            eprintln!("ibsm topology: {e}");
            ExitCode::from(2)
        });
    }
    let Some(sock) = &source.socket else {
        eprintln!("ibsm topology: give --net FILE or --socket PATH");
        return Err(ExitCode::from(2));
    };
    let live: LiveRoutes = control::query(sock, &Query::Routes, Duration::from_secs(60)).map_err(|e| {
        eprintln!("ibsm topology: {e}");
        ExitCode::from(2)
    })?;
    let t = live.to_topology().map_err(|e| {
        eprintln!("ibsm topology: {}: {e}", sock.display());
        ExitCode::from(2)
    })?;
    let mut lids = HashMap::new();
    for s in &live.switches {
        if let Ok(g) = s.port_guid.parse::<Guid>() {
            lids.insert(g, s.lid);
        }
    }
    for p in live.cas.iter().flat_map(|c| &c.ports) {
        if let Ok(g) = p.guid.parse::<Guid>() {
            lids.insert(g, p.lid);
        }
    }
    Ok((t, lids, false))
}

fn port_lid(t: &Topology, i: usize, lids: &HashMap<Guid, u16>) -> Option<u16> {
    let n = &t.nodes[i];
    let p = if n.kind == NodeKind::Switch { 0 } else { (1..=n.num_ports).find(|&p| n.peer(p).is_some()).unwrap_or(1) };
    lids.get(&n.port_guid(p)).copied()
}

fn show_text(t: &Topology, lids: &HashMap<Guid, u16>, attrs: bool) -> String {
    let mut out = String::new();
    for (level, members) in by_tier(t) {
        let head = match level {
            Some(0) => format!("CAs: {}", members.len()),
            Some(l) => format!("tier {l}: {} switches", members.len()),
            None => format!("no tier (no CA behind them): {} switches", members.len()),
        };
        let _ = writeln!(out, "{head}");
        for i in members {
            let n = &t.nodes[i];
            let lid = port_lid(t, i, lids).map(|l| format!(" LID {l}")).unwrap_or_default();
            let links: Vec<String> = (1..=n.num_ports)
                .filter_map(|p| {
                    let peer = n.peer(p)?;
                    let rate = if attrs { format!(" {}", peer.attrs.text()) } else { String::new() };
                    Some(format!("[{p}] {}[{}]{rate}", t.nodes.get(peer.node)?.name, peer.port))
                })
                .collect();
            let _ = writeln!(out, "  {} (0x{:016x}){lid}: {}", n.name, n.node_guid.0, links.join(", "));
        }
    }
    out
}

fn show_json(t: &Topology, lids: &HashMap<Guid, u16>, attrs: bool) -> String {
    let node = |i: usize| {
        let n = &t.nodes[i];
        let links: Vec<serde_json::Value> = (1..=n.num_ports)
            .filter_map(|p| {
                let peer = n.peer(p)?;
                let mut v =
                    serde_json::json!({ "port": p, "peer": t.nodes.get(peer.node)?.name, "peer_port": peer.port });
                if attrs {
                    v["rate"] = serde_json::Value::String(peer.attrs.text());
                }
                Some(v)
            })
            .collect();
        serde_json::json!({
            "name": n.name,
            "guid": format!("0x{:016x}", n.node_guid.0),
            "lid": port_lid(t, i, lids),
            "links": links,
        })
    };
    let mut tiers = Vec::new();
    let mut cas = Vec::new();
    let mut untiered = Vec::new();
    for (level, members) in by_tier(t) {
        let nodes: Vec<serde_json::Value> = members.into_iter().map(node).collect();
        match level {
            Some(0) => cas = nodes,
            Some(l) => tiers.push(serde_json::json!({ "tier": l, "switches": nodes })),
            None => untiered = nodes,
        }
    }
    let v = serde_json::json!({ "version": 1, "tiers": tiers, "cas": cas, "untiered": untiered });
    format!("{v}\n")
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
                control::query(sock, &Query::Routes, Duration::from_secs(60)).map_err(|e| e.to_string());
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
