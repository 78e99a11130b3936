//! Link MTU, OperationalVLs and the SA's rate cap against OpenSM under ibsim, with stock
//! infiniband-diags as the judge.
//!
//! One fabric, `tests/data/ring-mixed.net` (three switches in a ring, two with an enhanced port
//! 0, links from 1xSDR to 12xDDR), and one `opensm.conf`: `max_op_vls 2` and
//! `use_original_extended_sa_rates_only TRUE`. First a fresh ibsim with OpenSM 3.3.23 as master
//! (`-F opensm.conf`), then a fresh ibsim with ibsm on the same host, configured by `ibsm config
//! import-opensm` of that file (`max-op-vls = 2`, `max-rate-enum = 18`) and started with the
//! `guid2lid` OpenSM wrote. Under each SM, from a client host: `smpquery portinfo` of every
//! linked port and of each switch's port 0 (NeighborMTU, OperVLs, link state, speed, width), and
//! `saquery PR` between every two CA ports (every line but the ServiceID, which ibsm echoes on
//! purpose). Every line must be equal.
//!
//! What ibsim can show: it keeps OperationalVLs (powered on at VLCap, so `max_op_vls` shows, on
//! enhanced port 0 too) but no NeighborMTU (its ports all have MTUCap 2048 and answer
//! NeighborMTU as powered on), so the MTU lines compare the SMs' reads, not their writes. Its
//! rates stay at or under 60 Gb/s (code 8), which the 300 Gb/s cap leaves alone: the rates show
//! the cap changes nothing it should not. OpenSM 3.3.23 has no `max_rate_enum` (3.3.24 added
//! it), so a cap that bites is compared with OpenSM's rule in `mad/src/records/params.rs` and
//! on the simulator in `tests/rate_caps.rs`, not here.
//!
//! Skipped with `IBSM_SKIP_IBSIM=1`; fails with the install command when ibsim, OpenSM or
//! infiniband-diags are missing.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ibsm_topology::{NodeKind, Topology};
use support::ibsim::{Ibsim, require_ibsim, require_tools, wait_for};
use support::opensm::OpenSm;

const OPENSM_CONF: &str = "use_original_extended_sa_rates_only TRUE\nmax_op_vls 2\n";
const SM_HOST: &str = "h0";
const CLIENT: &str = "h6";

fn net() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/ring-mixed.net")
}

/// LIDs by port GUID from a `guid2lid` file.
fn guid2lid(text: &str) -> BTreeMap<u64, u16> {
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let g = u64::from_str_radix(w.next()?.trim_start_matches("0x"), 16).ok()?;
            let lid = u16::from_str_radix(w.next()?.trim_start_matches("0x"), 16).ok()?;
            Some((g, lid))
        })
        .collect()
}

/// The commands, as (tool, arguments), all run from [`CLIENT`].
fn commands(topo: &Topology, lids: &BTreeMap<u64, u16>) -> Vec<(&'static str, Vec<String>)> {
    let mut out = Vec::new();
    let mut cas = Vec::new();
    for n in &topo.nodes {
        let linked = (1..=n.num_ports).filter(|&p| n.peer(p).is_some());
        if n.kind == NodeKind::Switch {
            let l = lids[&n.port_guid(0).0].to_string();
            out.push(("smpquery", vec!["portinfo".to_owned(), l.clone(), "0".to_owned()]));
            for p in linked {
                out.push(("smpquery", vec!["portinfo".to_owned(), l.clone(), p.to_string()]));
            }
        } else {
            for p in linked {
                let l = lids[&n.port_guid(p).0].to_string();
                out.push(("smpquery", vec!["portinfo".to_owned(), l.clone()]));
                cas.push(l);
            }
        }
    }
    for s in &cas {
        for d in &cas {
            out.push(("saquery", vec!["PR".to_owned(), "--src-to-dst".to_owned(), format!("{s}:{d}")]));
        }
    }
    out
}

/// What every command printed, by command line.
type Answers = BTreeMap<String, Vec<String>>;

/// PortInfo's lines compared: what the caps decide, and the link's state.
const PORTINFO_FIELDS: [&str; 6] =
    ["NeighborMTU", "OperVLs", "LinkState", "PhysLinkState", "LinkSpeedActive", "LinkWidthActive"];

fn answers(sim: &Ibsim, topo: &Topology, lids: &BTreeMap<u64, u16>) -> Answers {
    let cmds = commands(topo, lids);
    let run = |(tool, args): &(&'static str, Vec<String>)| {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = sim.run_at(Some(CLIENT), tool, &a).expect("tool runs");
        let keep = |l: &&str| {
            if *tool == "smpquery" {
                PORTINFO_FIELDS.iter().any(|f| l.starts_with(&format!("{f}:")))
            } else {
                !l.contains("service_id") && !l.starts_with('#')
            }
        };
        let mut lines: Vec<String> = o.stdout.lines().filter(keep).map(|l| l.trim_end().to_owned()).collect();
        lines.push(format!("exit {}", o.success()));
        (format!("{tool} {}", args.join(" ")), lines)
    };
    let chunk = cmds.len().div_ceil(4);
    std::thread::scope(|scope| {
        let workers: Vec<_> = cmds
            .chunks(chunk.max(1))
            .map(|part| scope.spawn(move || part.iter().map(run).collect::<Vec<_>>()))
            .collect();
        workers.into_iter().flat_map(|w| w.join().expect("worker")).collect()
    })
}

fn end_ports(topo: &Topology) -> usize {
    topo.nodes
        .iter()
        .map(
            |n| if n.kind == NodeKind::Switch { 1 } else { (1..=n.num_ports).filter(|&p| n.peer(p).is_some()).count() },
        )
        .sum()
}

fn under_opensm(topo: &Topology) -> (Answers, String) {
    let sim = Ibsim::start(&net()).expect("ibsim");
    let conf = sim.dir().join("opensm.conf");
    std::fs::write(&conf, OPENSM_CONF).expect("write conf");
    let osm = OpenSm::start(&sim, SM_HOST, "opensm", &["-F", &conf.to_string_lossy()]);
    osm.wait_subnet_up(topo, Duration::from_secs(60));
    let g2l_path = osm.dir().join("guid2lid");
    wait_for("OpenSM's guid2lid", Duration::from_secs(30), || {
        std::fs::read_to_string(&g2l_path).is_ok_and(|t| guid2lid(&t).len() >= end_ports(topo))
    });
    let g2l = std::fs::read_to_string(&g2l_path).expect("guid2lid");
    (answers(&sim, topo, &guid2lid(&g2l)), g2l)
}

fn under_ibsm(topo: &Topology, g2l: &str) -> Answers {
    let mut sim = Ibsim::start(&net()).expect("ibsim");
    let conf = sim.dir().join("opensm.conf");
    std::fs::write(&conf, OPENSM_CONF).expect("write conf");
    let import = std::process::Command::new(env!("CARGO_BIN_EXE_ibsm"))
        .args(["config", "import-opensm"])
        .arg(&conf)
        .output()
        .expect("ibsm config import-opensm");
    assert!(import.status.success(), "{}", String::from_utf8_lossy(&import.stderr));
    let toml = String::from_utf8_lossy(&import.stdout).into_owned();
    assert!(toml.contains("max-rate-enum = 18") && toml.contains("max-op-vls = 2"), "imported:\n{toml}");
    let config = sim.dir().join("ibsm.toml");
    std::fs::write(&config, &toml).expect("write config");
    let state = sim.dir().join("state");
    std::fs::create_dir_all(&state).expect("dir");
    std::fs::write(state.join("guid2lid"), g2l).expect("guid2lid");
    let (config, state) = (config.to_string_lossy().into_owned(), state.to_string_lossy().into_owned());
    let args = ["run", "--config", &config, "--state-dir", &state];
    let sm = sim.spawn_at(Some(SM_HOST), env!("CARGO_BIN_EXE_ibsm"), &args).expect("ibsm starts");
    wait_for("ibsm's subnet up", Duration::from_secs(60), || sm.stdout().contains("subnet up: "));
    answers(&sim, topo, &guid2lid(g2l))
}

#[test]
fn path_rates_under_max_rate_enum_and_port_mtus_and_vls_are_those_opensm_gives() {
    if !require_ibsim() || !require_tools(&["opensm", "saquery", "smpquery"]) {
        return;
    }
    let topo = Topology::load(&net()).expect("fabric");
    let (theirs, g2l) = under_opensm(&topo);
    let ours = under_ibsm(&topo, &g2l);
    assert_eq!(ours.keys().collect::<Vec<_>>(), theirs.keys().collect::<Vec<_>>(), "the same commands");
    if let Some(dir) = std::env::var_os("IBSM_RATE_DUMP") {
        for (name, answers) in [("opensm.txt", &theirs), ("ibsm.txt", &ours)] {
            let text: String = answers
                .iter()
                .flat_map(|(cmd, lines)| std::iter::once(format!("== {cmd}")).chain(lines.iter().cloned()))
                .map(|l| l + "\n")
                .collect();
            std::fs::write(Path::new(&dir).join(name), text).expect("IBSM_RATE_DUMP writable");
        }
    }
    // The comparison means something only if the caps show under OpenSM: OperVLs VL0-1 on the
    // switches' enhanced port 0 and on links, paths of several rates.
    let all: Vec<&String> = theirs.values().flatten().collect();
    let rates: std::collections::BTreeSet<&str> =
        all.iter().filter(|l| l.trim_start().starts_with("rate.")).filter_map(|l| l.split('.').next_back()).collect();
    assert!(rates.len() >= 3, "{rates:?}");
    let vl0_1 = |l: &String| l.starts_with("OperVLs:") && l.ends_with("VL0-1");
    let port0 = theirs.iter().filter(|(c, _)| c.starts_with("smpquery") && c.ends_with(" 0"));
    assert!(port0.clone().any(|(_, l)| l.iter().any(vl0_1)), "max_op_vls did not apply to an enhanced port 0");
    assert!(theirs.iter().filter(|(c, _)| !c.ends_with(" 0")).any(|(_, l)| l.iter().any(vl0_1)), "nor to links");
    let mut diffs = Vec::new();
    for (cmd, o) in &ours {
        let t = &theirs[cmd];
        if o != t {
            diffs.push(format!("{cmd}\n    ibsm:   {o:?}\n    OpenSM: {t:?}"));
        }
    }
    let lines: usize = theirs.values().map(Vec::len).sum();
    eprintln!("{} commands, {lines} lines compared; {} differ", ours.len(), diffs.len());
    assert!(diffs.is_empty(), "{} commands answer otherwise than under OpenSM:\n{}", diffs.len(), diffs.join("\n"));
}
