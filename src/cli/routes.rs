//! `ibsm routes dump` and `ibsm routes check`: the routing the SM would program, computed
//! offline from a topology, or the tables a running SM holds (fetched through its control
//! socket), printed in OpenSM's format, as JSON or as figures; and the analysis of those tables
//! (or of tables dumped from a live fabric), optionally drawn as an SVG of the routed load.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand, ValueEnum};
use ibsm::core::lids::Guid2Lid;
use ibsm::daemon::control::{self, Query};
use ibsm::opensm::lfts_dump;
use ibsm::routes::dump::{self, Timings};
use ibsm::routes::live::LiveRoutes;
use ibsm::routes::svg::{self, SvgOptions};
use ibsm::routes::{Plan, plan};
use ibsm_routing::Routes;
use ibsm_routing::chain::Chain;
use ibsm_routing::check::{CdgTraffic, CheckOptions, check_with};
use ibsm_topology::{Topology, by_tier};

/// `ibsm routes ...`
#[derive(Debug, Subcommand)]
pub enum RoutesCommand {
    /// Compute the forwarding tables the SM would program for a topology and print them.
    Dump(DumpArgs),
    /// Analyse forwarding tables: reachability, loops, hop counts, link loads, credit loops.
    ///
    /// Exits 1 when a pair is unreachable or a credit loop needs no more than the traffic between
    /// CAs. Loops that need switch management traffic (on a degraded fat tree, to and from the
    /// switches cut off from part of the tree) are reported and do not fail the check.
    Check(CheckArgs),
}

/// What to route, or which running SM to ask.
#[derive(Debug, Args)]
pub struct Source {
    /// Topology (`.net`, ibsim or ibnetdiscover format) to route offline.
    #[arg(long, required_unless_present = "socket")]
    topology: Option<PathBuf>,
    /// Instead of routing a topology, fetch the tables a running SM holds (and the fabric it
    /// discovered) through its control socket (`ibsm run --control PATH`).
    #[arg(long, value_name = "PATH", conflicts_with_all = ["topology", "engine", "lmc", "guid2lid", "root_guid_file", "lfts_file", "cn_guid_file", "io_guid_file", "max_layers"])]
    socket: Option<PathBuf>,
    /// Routing engine, or a comma-separated chain tried in order (e.g. `ftree,updn,minhop`).
    #[arg(long, default_value = "ftree,updn,minhop")]
    engine: String,
    /// LID mask control 0..=7.
    #[arg(long, default_value_t = 0)]
    lmc: u8,
    /// Show nodes by the names this file gives their NodeGUIDs (infiniband-diags' node name map,
    /// `0x0002c90300001234 "rack3-leaf2"` per line), as `ibroute --node-name-map` does; also for
    /// `--switch`.
    #[arg(long, value_name = "FILE")]
    node_name_map: Option<PathBuf>,
    /// Root switches by NodeGUID, one per line (OpenSM's `root_guid_file`; the config key
    /// `root-guid-file`): updn routes from them, ftree only when they are its top level.
    #[arg(long, value_name = "FILE")]
    root_guid_file: Option<PathBuf>,
    /// Tables in OpenSM's `opensm-lfts.dump` format for the `file` engine (OpenSM's
    /// `lfts_file`; the config key `lfts-file`): checked against the fabric, used whole.
    #[arg(long, value_name = "FILE")]
    lfts_file: Option<PathBuf>,
    /// Compute-node port GUIDs, one per line (OpenSM's `cn_guid_file`; the config key
    /// `cn-guid-file`): ftree ranks the tree from their switches.
    #[arg(long, value_name = "FILE")]
    cn_guid_file: Option<PathBuf>,
    /// I/O-node port GUIDs, one per line (OpenSM's `io_guid_file`; the config key
    /// `io-guid-file`): routed by ftree outside the compute nodes' balance.
    #[arg(long, value_name = "FILE")]
    io_guid_file: Option<PathBuf>,
    /// Take LIDs from this guid2lid file (OpenSM format) instead of numbering as a fresh SM.
    #[arg(long)]
    guid2lid: Option<PathBuf>,
    /// The most layers (VLs) `dfsssp` may spread paths over, and the layers `nue` uses, 1..=15
    /// [default: 8].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(1..=15))]
    max_layers: Option<u8>,
}

/// Output format of `routes dump`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Format {
    /// OpenSM's `opensm-lfts.dump` (what `opensm -R file` reads).
    Opensm,
    /// What infiniband-diags' `ibroute` prints for each switch.
    Ibroute,
    /// JSON, schema `ibsm::routes::dump::JsonDump` (version 1).
    Json,
    /// Fabric counts and timings only.
    Stats,
    /// Each CA port pair's SL from a layered routing (`dfsssp`, `nue`): `SRC-LID DST-LID SL` per line
    /// (every pair on SL 0 for the other engines); with `--socket`, the SLs the running SM's SA
    /// gives (an error when its routing has no layers).
    Sl,
    /// OpenSM's `opensm-subnet.lst`: a line per direction of every cable, with the ends' node
    /// and port and the link's width, state and speed (a running SM's, so `--socket` only).
    SubnetLst,
    /// OpenSM's `opensm.fdbs`: every switch's route to every LID with its hop count and whether
    /// it is a shortest one.
    Fdbs,
    /// OpenSM's `opensm.mcfdbs`: every switch's multicast forwarding table (the groups a running
    /// SM has, so `--socket` only).
    Mcfdbs,
}

/// `ibsm routes dump`.
#[derive(Debug, Args)]
pub struct DumpArgs {
    #[command(flatten)]
    source: Source,
    /// Output format.
    #[arg(long, value_enum, default_value = "opensm")]
    format: Format,
    /// Only this switch (GUID or name) [default: every switch].
    #[arg(long)]
    switch: Option<String>,
}

/// `ibsm routes check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    source: Source,
    /// Check the tables in this `opensm-lfts.dump` file (from OpenSM, or `routes dump`) instead
    /// of routing the topology; LIDs are taken from the dump.
    #[arg(long, conflicts_with = "socket")]
    lfts: Option<PathBuf>,
    /// Skip the shift-permutation analysis (hosts² path walks).
    #[arg(long)]
    no_shifts: bool,
    /// Whose routes build the channel dependency graph for the credit-loop search:
    /// `data-plane` (routes towards CA ports, and from CA-attached switches towards switch LIDs:
    /// the flow-controlled traffic), `all` (also switch-to-switch routes, which carry only VL15
    /// SMPs) or `ca-to-ca`.
    #[arg(long, value_enum, default_value = "data-plane")]
    cdg: Cdg,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Also draw the fabric by tier, each switch cable coloured (cool to hot) and widened by the
    /// CA-to-CA routes it carries (the forwarding index), and write it to FILE as SVG. Above
    /// 1,024 CAs only the switches are drawn.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
}

/// `--cdg` values.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Cdg {
    /// Routes towards CA ports, and from CA-attached switches towards switch LIDs.
    DataPlane,
    /// Every switch's route to every LID.
    All,
    /// Only routes between CA ports.
    CaToCa,
}

/// Runs a `routes` subcommand.
pub fn run(cmd: &RoutesCommand) -> ExitCode {
    match cmd {
        RoutesCommand::Dump(a) => dump_cmd(a),
        RoutesCommand::Check(a) => check_cmd(a),
    }
}

struct Routed {
    /// The fabric routed (offline) or discovered (live), for drawing.
    topo: Topology,
    plan: Plan,
    routes: Routes,
    engine: String,
    timings: Timings,
    /// The SL of every path, from a layered engine (offline) or a running SM's SA (live).
    layers: Option<ibsm::routes::layers::Layers>,
}

/// How long to wait for a running SM's answer.
const SOCKET_TIMEOUT: Duration = Duration::from_secs(60);

/// The running SM's fabric and tables, from its control socket.
fn fetch(path: &Path) -> Result<Routed, ExitCode> {
    let t0 = Instant::now();
    let live: LiveRoutes = control::query(path, &Query::Routes, SOCKET_TIMEOUT).map_err(|e| {
        eprintln!("ibsm routes: {e}");
        ExitCode::FAILURE
    })?;
    let t1 = Instant::now();
    let (plan, routes) = live.to_plan().map_err(|e| {
        eprintln!("ibsm routes: {}: {e}", path.display());
        ExitCode::FAILURE
    })?;
    let topo = live.to_topology().map_err(|e| {
        eprintln!("ibsm routes: {}: {e}", path.display());
        ExitCode::FAILURE
    })?;
    let ns = |a: Instant, b: Instant| b.duration_since(a).as_nanos() as u64;
    let layers = live.layers().map(ibsm::routes::layers::Layers::Live);
    Ok(Routed {
        topo,
        plan,
        routes,
        engine: live.engine,
        timings: Timings { read_ns: ns(t0, t1), lids_ns: ns(t1, Instant::now()), routing_ns: 0 },
        layers,
    })
}

/// Routes the source's topology, or fetches a running SM's tables.
fn source(src: &Source) -> Result<Routed, ExitCode> {
    let mut r = match &src.socket {
        Some(path) => fetch(path),
        None => route(src, None),
    }?;
    rename(src, &mut r)?;
    Ok(r)
}

/// `--node-name-map`: the names it gives, in the plan and the topology.
fn rename(src: &Source, r: &mut Routed) -> Result<(), ExitCode> {
    let Some(path) = &src.node_name_map else { return Ok(()) };
    let map = ibsm::opensm::node_name_map::NameMap::load(path).map_err(|e| {
        eprintln!("ibsm routes: --node-name-map: {e}");
        ExitCode::from(2)
    })?;
    r.plan.rename(&map);
    for n in &mut r.topo.nodes {
        if let Some(name) = map.get(n.node_guid) {
            name.clone_into(&mut n.name);
        }
    }
    Ok(())
}

/// Loads, numbers and routes; errors are printed and become the exit status.
fn route(src: &Source, table: Option<Guid2Lid>) -> Result<Routed, ExitCode> {
    let Some(topology) = &src.topology else {
        eprintln!("ibsm routes: --topology or --socket is required");
        return Err(ExitCode::from(2));
    };
    if src.lmc > 7 {
        eprintln!("ibsm routes: --lmc must be 0..=7, found {}", src.lmc);
        return Err(ExitCode::from(2));
    }
    let t0 = Instant::now();
    let topo = Topology::load(topology).map_err(|e| {
        eprintln!("ibsm routes: {e}");
        ExitCode::from(2)
    })?;
    let table = match (table, &src.guid2lid) {
        (Some(t), _) => t,
        (None, Some(p)) => ibsm::daemon::state::load_guid2lid(p).map_err(|e| {
            eprintln!("ibsm routes: {e}");
            ExitCode::from(2)
        })?,
        (None, None) => Guid2Lid::default(),
    };
    let t1 = Instant::now();
    let plan = plan(&topo, src.lmc, table, None);
    let t2 = Instant::now();
    let names: Vec<&str> = src.engine.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
    let mut options = ibsm_routing::EngineOptions { max_layers: src.max_layers, ..Default::default() };
    if let Some(path) = &src.root_guid_file {
        options.roots = ibsm::opensm::guid_file::load(path).map_err(|e| {
            eprintln!("ibsm routes: --root-guid-file: {e}");
            ExitCode::from(2)
        })?;
    }
    if let Some(path) = &src.lfts_file {
        let tables = ibsm::opensm::lfts_dump::load_tables(path).map_err(|e| {
            eprintln!("ibsm routes: --lfts-file: {e}");
            ExitCode::from(2)
        })?;
        options.tables = Some(std::sync::Arc::new(tables));
    }
    if src.cn_guid_file.is_some() || src.io_guid_file.is_some() {
        let mut lists = ibsm_routing::ftree::hosts::HostLists::default();
        for (flag, path) in [("--cn-guid-file", &src.cn_guid_file), ("--io-guid-file", &src.io_guid_file)] {
            let Some(path) = path else { continue };
            let guids = ibsm::opensm::guid_file::load(path).map_err(|e| {
                eprintln!("ibsm routes: {flag}: {e}");
                ExitCode::from(2)
            })?;
            if flag == "--cn-guid-file" {
                lists.compute = Some(guids);
            } else {
                lists.io = guids;
            }
        }
        options.host_lists = Some(std::sync::Arc::new(lists));
        let ports = topo
            .nodes
            .iter()
            .filter(|n| n.kind != ibsm_topology::NodeKind::Switch)
            .flat_map(|n| (1..=n.num_ports).map(move |p| (n.port_guid(p), n.node_guid, ibsm_mad::PortNum(p))));
        options = options.resolve_ports(ports);
    }
    let chain = Chain::from_names_with(&names, &options).map_err(|e| {
        eprintln!("ibsm routes: {e}");
        ExitCode::from(2)
    })?;
    let outcome = chain.run(&plan.view).map_err(|e| {
        eprintln!("ibsm routes: {e}");
        ExitCode::FAILURE
    })?;
    let t3 = Instant::now();
    for d in &outcome.declined {
        eprintln!("ibsm routes: {d}; trying the next engine");
    }
    let ns = |a: Instant, b: Instant| b.duration_since(a).as_nanos() as u64;
    Ok(Routed {
        topo,
        plan,
        routes: outcome.routes,
        engine: outcome.engine.to_owned(),
        timings: Timings { read_ns: ns(t0, t1), lids_ns: ns(t1, t2), routing_ns: ns(t2, t3) },
        layers: outcome.layers.map(ibsm::routes::layers::Layers::Engine),
    })
}

fn dump_cmd(a: &DumpArgs) -> ExitCode {
    if matches!(a.format, Format::SubnetLst | Format::Mcfdbs) {
        return text_query(&a.source, a.format);
    }
    let r = match source(&a.source) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let only = match &a.switch {
        None => None,
        Some(s) => {
            let by_name = r.plan.switch_names.iter().position(|n| n == s);
            let by_guid =
                s.parse::<ibsm_mad::Guid>().ok().and_then(|g| r.plan.view.switches.iter().position(|w| w.guid == g));
            let Some(i) = by_name.or(by_guid) else {
                eprintln!("ibsm routes dump: no switch named or with GUID {s:?}");
                return ExitCode::from(2);
            };
            Some(i)
        }
    };
    let text = match a.format {
        Format::Opensm => dump::opensm(&r.plan, &r.routes, only),
        Format::Ibroute => dump::ibroute(&r.plan, &r.routes, only),
        Format::Json => dump::json(&r.plan, &r.routes, &r.engine, only) + "\n",
        Format::Stats => dump::stats(&r.plan, &r.routes, &r.engine, r.timings),
        Format::Fdbs => ibsm::routes::fdbs::fdbs(&r.plan, &r.routes, only),
        Format::SubnetLst | Format::Mcfdbs => return text_query(&a.source, a.format),
        Format::Sl => match &r.layers {
            Some(l) => ibsm::routes::layers::pair_sls(&r.plan.view, l),
            None if a.source.socket.is_some() => {
                eprintln!(
                    "ibsm routes dump: --format sl: the running SM's routing has no layers (with QoS, the SA's PathRecords give each pair's SL)"
                );
                return ExitCode::from(2);
            }
            None => ibsm::routes::layers::pair_sls(
                &r.plan.view,
                &ibsm::routes::layers::Layers::Engine(ibsm_routing::dfsssp::PathLayers::default()),
            ),
        },
    };
    print!("{text}");
    ExitCode::SUCCESS
}

/// `--format subnet-lst` and `--format mcfdbs`: the running SM's `opensm-subnet.lst` or
/// `opensm.mcfdbs`, which only a running SM has (its links; its multicast groups).
fn text_query(src: &Source, format: Format) -> ExitCode {
    let (query, key, what) = match format {
        Format::Mcfdbs => (Query::Mcfdbs, "mcfdbs", "--format mcfdbs shows a running SM's multicast tables"),
        _ => (Query::SubnetLst, "subnet_lst", "--format subnet-lst shows a running SM's links"),
    };
    let Some(sock) = &src.socket else {
        eprintln!("ibsm routes dump: {what}: give --socket PATH");
        return ExitCode::from(2);
    };
    match control::query::<serde_json::Value>(sock, &query, SOCKET_TIMEOUT) {
        Ok(v) => {
            print!("{}", v[key].as_str().unwrap_or_default());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ibsm routes dump: {e}");
            ExitCode::FAILURE
        }
    }
}

fn check_cmd(a: &CheckArgs) -> ExitCode {
    let (r, engine) = if let Some(path) = &a.lfts {
        match tables_from_dump(&a.source, path) {
            Ok(x) => x,
            Err(code) => return code,
        }
    } else {
        match source(&a.source) {
            Ok(r) if a.source.socket.is_some() => {
                let engine = format!("{} (live tables)", r.engine);
                (r, engine)
            }
            Ok(r) => {
                let engine = r.engine.clone();
                (r, engine)
            }
            Err(code) => return code,
        }
    };
    let cdg_traffic = match a.cdg {
        Cdg::DataPlane => CdgTraffic::DataPlane,
        Cdg::All => CdgTraffic::All,
        Cdg::CaToCa => CdgTraffic::CaToCa,
    };
    let opts = CheckOptions { shifts: !a.no_shifts, cdg_traffic, ..CheckOptions::default() };
    let report = check_with(&r.plan.view, &r.routes, &opts);
    let per_vl = r.layers.as_ref().map(|l| ibsm::routes::layers::per_vl(&r.plan.view, &r.routes, l));
    if a.json {
        let doc = ibsm::routes::dump::check_json(&report, &engine);
        match (&per_vl, serde_json::from_str::<serde_json::Value>(&doc)) {
            (Some(v), Ok(mut j)) => {
                j["credit_loops_per_vl"] = serde_json::json!(ibsm::routes::layers::json(v));
                println!("{j}");
            }
            _ => println!("{doc}"),
        }
    } else {
        println!("engine: {engine}");
        print!("{report}");
        if let Some(v) = &per_vl {
            print!("{}", ibsm::routes::layers::text(v));
        }
    }
    if let Some(path) = &a.svg {
        let opts = SvgOptions { title: format!("ibsm routes check: {engine}"), ..SvgOptions::default() };
        let text = svg::render(&r.topo, &by_tier(&r.topo), &report.link_loads, &opts);
        if let Err(e) = std::fs::write(path, text) {
            eprintln!("ibsm routes check: {}: {e}", path.display());
            return ExitCode::from(2);
        }
    }
    // A layered routing is judged VL by VL: its single-VL graph may loop, the layers do not.
    let sound = match &per_vl {
        Some(v) => {
            report.reachable == report.pairs
                && report.switch_reachable == report.switch_pairs
                && ibsm::routes::layers::all_clear(v)
        }
        None => report.is_sound(),
    };
    if sound { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

/// The topology numbered with the LIDs of a dump, with the dump's tables.
fn tables_from_dump(src: &Source, path: &Path) -> Result<(Routed, String), ExitCode> {
    // Bounded (a regular file, at most 4 GiB): an opensm-lfts.dump lists every LID of every
    // switch, about 2 GB for a 3-level tree of 48-port switches.
    let text = ibsm_topology::file::read_text(path, 4 << 30).map_err(|e| {
        eprintln!("ibsm routes check: {}: {e}", path.display());
        ExitCode::from(2)
    })?;
    let dumped = lfts_dump::parse(&text).map_err(|e| {
        eprintln!("ibsm routes check: {}:{}: {}", path.display(), e.line, e.reason);
        ExitCode::from(2)
    })?;
    let mut r = route(src, Some(ibsm::routes::guid2lid_from_dump(&dumped, src.lmc)))?;
    r.routes = ibsm::routes::routes_from_dump(&r.plan, &dumped);
    rename(src, &mut r)?;
    Ok((r, format!("tables from {}", path.display())))
}
