//! `ibsm run` on umad against ibsim, with infiniband-diags as the judge.
//!
//! Each test starts its own ibsim (private `IBSIM_SOCKNAME` and run directory, see
//! `support::ibsim`) on a fat tree, runs the real `ibsm` binary under `ibsim-run` attached at an
//! HCA, and then asks the diags, from another HCA, what the fabric looks like:
//!
//! * `ibnetdiscover`: every switch and every cabled CA port of the `.net` file is there (by
//!   GUID), each with a LID, and the LIDs are unique;
//! * `ibroute <lid>` on every switch: a port for every LID of the fabric (0 for its own);
//! * `ibtracert` between sampled HCA pairs: reaches the destination;
//! * `smpquery portinfo` on every linked port: Active, and the SM's LID as SMLid (on every CA
//!   port and every switch's port 0, where PortInfo holds it).
//!
//! The same with the SM on a switch's management port (port 0). The MAD counter of the bring-up
//! benchmark (`benches/madcount.c`) counts the SMPs the SM reports. More tests: a restart with the same state directory keeps every LID even when the SM sits
//! elsewhere (with a control run that shows the LIDs would differ without it), and an SM
//! running without `--once` answers SA queries (and "not supported" for what it does not serve), stops cleanly on SIGTERM
//! and clears IsSM on its port; a bad `--ca`, and a machine without umad devices, give a reason
//! and exit status 1. Every process is killed in `Drop` (the harness's and
//! [`support::ibsim::Client`]'s). Skipped with `IBSM_SKIP_IBSIM=1`.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use ibsm_topology::{GenSpec, NodeKind, Topology};
use support::ibsim::{Ibsim, IbsimConfig, ToolOutput, dump_fields, require_ibsim, saquery_records};

/// PortInfo.CapabilityMask.IsSM.
const CAP_IS_SM: u32 = 0x2;

fn ibsm() -> &'static str {
    env!("CARGO_BIN_EXE_ibsm")
}

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fabrics").join(name)
}

/// A temporary directory removed on drop (kept when the test fails).
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let d = std::env::temp_dir().join(format!("ibsm-bringup-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// The cabled CA ports of `topo`, in topology order, with the node's name.
fn ca_ports(topo: &Topology) -> Vec<(String, u64, u8)> {
    topo.nodes
        .iter()
        .filter(|n| n.kind != NodeKind::Switch)
        .flat_map(|n| {
            (1..=n.num_ports).filter(|&p| n.peer(p).is_some()).map(move |p| (n.name.clone(), n.node_guid.0, p))
        })
        .collect()
}

/// What `ibnetdiscover` says: switch GUID -> LID, and (CA GUID, port) -> LID.
#[derive(Debug, Default)]
struct Discovered {
    switches: BTreeMap<u64, u16>,
    ca_ports: BTreeMap<(u64, u8), u16>,
}

impl Discovered {
    fn all_lids(&self) -> Vec<u16> {
        self.switches.values().chain(self.ca_ports.values()).copied().collect()
    }
}

/// The number after `key` in `line` (decimal).
fn number_after(line: &str, key: &str) -> Option<u16> {
    let rest = &line[line.find(key)? + key.len()..];
    rest.split_whitespace().next()?.parse().ok()
}

/// The GUID in a node id such as `"S-0002000000000500"` or `"H-0001000000000700"`.
fn guid_of_id(line: &str) -> Option<u64> {
    let start = line.find('"')? + 3;
    u64::from_str_radix(line.get(start..start + 16)?, 16).ok()
}

/// Parses ibnetdiscover's default output (the `.net` format with `# ... lid N` comments).
fn parse_ibnetdiscover(text: &str) -> Discovered {
    let mut d = Discovered::default();
    let mut current_ca = None;
    for line in text.lines() {
        if line.starts_with("Switch") {
            current_ca = None;
            let guid = guid_of_id(line).unwrap_or_else(|| panic!("no GUID in {line:?}"));
            let lid = number_after(line, "base port 0 lid ").unwrap_or_else(|| panic!("no LID in {line:?}"));
            d.switches.insert(guid, lid);
        } else if line.starts_with("Ca") {
            current_ca = Some(guid_of_id(line).unwrap_or_else(|| panic!("no GUID in {line:?}")));
        } else if line.trim().is_empty() {
            current_ca = None;
        } else if let (Some(guid), true) = (current_ca, line.starts_with('[')) {
            let port: u8 = line[1..line.find(']').unwrap()].parse().unwrap();
            let lid = number_after(line, "# lid ").unwrap_or_else(|| panic!("no LID in {line:?}"));
            d.ca_ports.insert((guid, port), lid);
        }
    }
    d
}

/// Runs a diag tool attached at `host` and insists that it succeeded.
fn diag(sim: &Ibsim, host: &str, tool: &str, args: &[&str]) -> ToolOutput {
    let out = sim.run_at(Some(host), tool, args).unwrap();
    assert!(out.success(), "{}", out.describe());
    out
}

/// Brings the fabric up with `ibsm run --once` at `sm_host` and returns its stdout.
fn run_once(sim: &Ibsim, sm_host: &str, state_dir: Option<&Path>) -> ToolOutput {
    let mut args = vec!["run", "--once"];
    let dir;
    if let Some(d) = state_dir {
        dir = d.display().to_string();
        args.extend(["--state-dir", dir.as_str()]);
    }
    let out = sim.run_timeout(Some(sm_host), ibsm(), &args, Duration::from_secs(120)).unwrap();
    assert!(out.success(), "{}", out.describe());
    assert!(out.stdout.starts_with("subnet up: "), "{}", out.describe());
    eprintln!("{}", out.stdout.trim_end());
    out
}

/// Everything the diags must agree on after a bring-up with the SM at `sm_host`; returns what
/// ibnetdiscover found.
fn judge(sim: &Ibsim, topo: &Topology, sm_host: &str) -> Discovered {
    let cas = ca_ports(topo);
    let diag_host = cas.iter().rev().find(|c| c.0 != sm_host).map(|c| c.0.clone()).unwrap();

    // ibnetdiscover: every node, every cabled CA port, each with a unique LID.
    let out = diag(sim, &diag_host, "ibnetdiscover", &[]);
    let found = parse_ibnetdiscover(&out.stdout);
    let want_switches: BTreeSet<u64> =
        topo.nodes.iter().filter(|n| n.kind == NodeKind::Switch).map(|n| n.node_guid.0).collect();
    let want_ca_ports: BTreeSet<(u64, u8)> = cas.iter().map(|c| (c.1, c.2)).collect();
    assert_eq!(found.switches.keys().copied().collect::<BTreeSet<_>>(), want_switches, "{}", out.stdout);
    assert_eq!(found.ca_ports.keys().copied().collect::<BTreeSet<_>>(), want_ca_ports, "{}", out.stdout);
    let lids = found.all_lids();
    let unique: BTreeSet<u16> = lids.iter().copied().collect();
    assert_eq!(unique.len(), lids.len(), "duplicate LIDs:\n{}", out.stdout);
    assert!(lids.iter().all(|&l| (1..=0xbfff).contains(&l)), "a port without a unicast LID:\n{}", out.stdout);
    eprintln!("ibnetdiscover: {} switches, {} CA ports, LIDs {:?}", found.switches.len(), found.ca_ports.len(), unique);

    // ibroute: a complete table on every switch.
    for (&guid, &lid) in &found.switches {
        let out = diag(sim, &diag_host, "ibroute", &[&lid.to_string()]);
        let mut table = BTreeMap::new();
        for line in out.stdout.lines() {
            let mut w = line.split_whitespace();
            let (Some(dest), Some(port), Some(":")) = (w.next(), w.next(), w.next()) else { continue };
            let Some(dest) = dest.strip_prefix("0x").and_then(|h| u16::from_str_radix(h, 16).ok()) else { continue };
            table.insert(dest, port.parse::<u8>().unwrap());
        }
        assert_eq!(table.keys().copied().collect::<BTreeSet<_>>(), unique, "switch {guid:#x}:\n{}", out.stdout);
        assert_eq!(table.get(&lid), Some(&0), "switch {guid:#x} routes its own LID to port 0:\n{}", out.stdout);
        assert!(table.values().all(|&p| p != 255), "{}", out.stdout);
        assert!(out.stdout.contains(&format!("{} valid lids dumped", unique.len())), "{}", out.stdout);
    }
    let first = diag(sim, &diag_host, "ibroute", &[&found.switches.values().next().unwrap().to_string()]);
    eprintln!("ibroute (first switch):\n{}", first.stdout.trim_end());

    // ibtracert between sampled HCA pairs (both directions, near and far).
    let lid_of = |i: usize| found.ca_ports[&(cas[i].1, cas[i].2)];
    let n = cas.len();
    for (a, b) in [(0, n - 1), (n - 1, 0), (0, 1), (1, n / 2), (n / 2, n - 2)] {
        if a == b {
            continue;
        }
        let (sa, sb) = (lid_of(a).to_string(), lid_of(b).to_string());
        let out = diag(sim, &diag_host, "ibtracert", &[&sa, &sb]);
        let to = out.stdout.lines().last().unwrap_or_default();
        assert!(to.starts_with("To ca") && to.contains(&format!("lid {sb}-{sb}")), "{}", out.describe());
        if (a, b) == (0, n - 1) {
            eprintln!("ibtracert {sa} {sb}:\n{}", out.stdout.trim_end());
        }
    }

    // smpquery portinfo: Active everywhere, SMLid = the SM's LID.
    let sm_node = &topo.nodes[topo.find(sm_host).unwrap()];
    let sm_lid = if sm_node.kind == NodeKind::Switch {
        found.switches[&sm_node.node_guid.0]
    } else {
        let (_, guid, port) = cas.iter().find(|c| c.0 == sm_host).unwrap();
        found.ca_ports[&(*guid, *port)]
    };
    let check = |lid: u16, port: u8, sm_lid_expected: bool| {
        let out = diag(sim, &diag_host, "smpquery", &["portinfo", &lid.to_string(), &port.to_string()]);
        let f: BTreeMap<String, String> = dump_fields(&out.stdout).into_iter().collect();
        assert_eq!(f.get("LinkState").map(String::as_str), Some("Active"), "{}", out.describe());
        if sm_lid_expected {
            assert_eq!(f.get("SMLid"), Some(&sm_lid.to_string()), "{}", out.describe());
        }
        out
    };
    for c in &cas {
        let out = check(found.ca_ports[&(c.1, c.2)], c.2, true);
        if c.0 == sm_host {
            eprintln!("smpquery portinfo (SM port):\n{}", out.stdout.trim_end());
        }
    }
    for node in topo.nodes.iter().filter(|n| n.kind == NodeKind::Switch) {
        let lid = found.switches[&node.node_guid.0];
        check(lid, 0, true);
        for p in (1..=node.num_ports).filter(|&p| node.peer(p).is_some()) {
            check(lid, p, false);
        }
    }
    found
}

fn bring_up_and_judge(sim: &Ibsim, topo: &Topology) {
    bring_up_at_and_judge(sim, topo, &ca_ports(topo)[0].0);
}

fn bring_up_at_and_judge(sim: &Ibsim, topo: &Topology, sm_host: &str) {
    let state = TempDir::new(&format!("judge-{}", sim.sockname()));
    run_once(sim, sm_host, Some(&state.0));
    judge(sim, topo, sm_host);
    let saved = std::fs::read_to_string(state.0.join("guid2lid")).unwrap();
    let expected = topo.switch_count() + ca_ports(topo).len();
    assert_eq!(saved.lines().filter(|l| !l.trim().is_empty()).count(), expected, "guid2lid:\n{saved}");
}

#[test]
fn two_level_fat_tree_comes_up() {
    if !require_ibsim() {
        return;
    }
    let net = example("fat-tree-2l-k4.net");
    let topo = Topology::load(&net).unwrap();
    let sim = Ibsim::start(&net).unwrap();
    bring_up_and_judge(&sim, &topo);
}

#[test]
fn three_level_fat_tree_comes_up() {
    if !require_ibsim() {
        return;
    }
    let net = example("fat-tree-3l-k4.net");
    let topo = Topology::load(&net).unwrap();
    let sim = Ibsim::start(&net).unwrap();
    bring_up_and_judge(&sim, &topo);
}

#[test]
fn generated_radix_8_fat_tree_comes_up() {
    if !require_ibsim() {
        return;
    }
    let topo = GenSpec::fat_tree(2, 8).generate().unwrap();
    let sim = Ibsim::start_text(&topo.to_net(), &IbsimConfig::default()).unwrap();
    bring_up_and_judge(&sim, &topo);
}

#[test]
fn sm_on_a_switch_management_port_brings_the_fabric_up() {
    if !require_ibsim() {
        return;
    }
    let net = example("fat-tree-3l-k4.net");
    let topo = Topology::load(&net).unwrap();
    let switch = topo.nodes.iter().find(|n| n.kind == NodeKind::Switch).unwrap().name.clone();
    let sim = Ibsim::start(&net).unwrap();
    bring_up_at_and_judge(&sim, &topo, &switch);
}

/// The number after the last space before `key` in `line` (`"32039 SMPs"` -> 32039).
fn count_before(line: &str, key: &str) -> Option<u64> {
    let head = &line[..line.find(key)?];
    head.trim_end().rsplit(' ').next()?.parse().ok()
}

/// `benches/madcount.c`, the counter of `benches/bringup-ratio.sh --count-mads`, preloaded
/// before umad2sim: the SMPs (Gets and Sets) it counts are the ones the SM reports sending,
/// plus the MAD thread's wake-up NodeInfo Gets (one when the route is done, one at the exit;
/// the bound allows 4), and its
/// LFT Sets are the report's LFT blocks. Its timeline (`--timeline`) holds the same requests in
/// time order between the process's start, the device's open and the exit, each answered
/// after it was sent, with one Active Set per port the report counts active; and
/// `benches/madtimeline.py` (with python3) reads it into the same stage counts.
#[test]
fn the_bench_mad_counter_counts_the_smps_the_sm_reports() {
    if !require_ibsim() || !support::ibsim::require_tools(&["cc", "timeout"]) {
        return;
    }
    let dir = TempDir::new("madcount");
    let lib = dir.0.join("madcount.so");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/madcount.c");
    let cc =
        Command::new("cc").args(["-O2", "-shared", "-fPIC", "-o"]).arg(&lib).arg(&src).arg("-ldl").output().unwrap();
    assert!(cc.status.success(), "cc: {}", String::from_utf8_lossy(&cc.stderr));
    // umad2sim's library, as ibsim-run names it (ibsim-run itself cannot add to LD_PRELOAD).
    let run = support::ibsim::find_tool("ibsim-run").unwrap();
    let umad2sim = std::fs::read_to_string(run)
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("sim_so=").map(str::to_owned))
        .unwrap();
    let net = example("fat-tree-2l-k4.net");
    let topo = Topology::load(&net).unwrap();
    let sim = Ibsim::start(&net).unwrap();
    let out = Command::new("timeout")
        .arg("120")
        .arg(ibsm())
        .args(["run", "--once"])
        .current_dir(sim.dir())
        .env("IBSIM_SOCKNAME", sim.sockname())
        .env("SIM_HOST", &ca_ports(&topo)[0].0)
        .env("LD_PRELOAD", format!("{} {umad2sim}", lib.display()))
        .env("MADCOUNT_OUT", dir.0.join("mads"))
        .env("MADCOUNT_TIMELINE", dir.0.join("timeline"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let summary = stdout.lines().find(|l| l.starts_with("subnet up: ")).unwrap();
    let smps = count_before(summary, " SMPs").unwrap();
    let lft_blocks = count_before(summary, " LFT blocks sent").unwrap();
    let (mut counted, mut lft_sets) = (0, 0);
    for entry in std::fs::read_dir(&dir.0).unwrap() {
        let path = entry.unwrap().path();
        if !path.file_name().unwrap().to_string_lossy().starts_with("mads.") {
            continue;
        }
        for line in std::fs::read_to_string(&path).unwrap().lines() {
            let field = |k: &str| line.split(' ').find_map(|f| f.strip_prefix(k)).unwrap().to_owned();
            let n: u64 = field("count=").parse().unwrap();
            let smp_request = matches!(field("class=").as_str(), "0x01" | "0x81")
                && matches!(field("method=").as_str(), "0x01" | "0x02");
            if smp_request {
                counted += n;
            }
            if smp_request && field("attr=") == "0x0019" && field("method=") == "0x02" {
                lft_sets += n;
            }
        }
    }
    assert!(smps > 0 && lft_blocks > 0, "{summary}");
    assert!((smps..=smps + 4).contains(&counted), "counted {counted} SMPs, the SM reports {smps}: {summary}");
    assert_eq!(lft_sets, lft_blocks, "{summary}");
    check_timeline(&dir.0, summary, counted);
}

/// One event of a `benches/madcount.c` timeline.
struct TimelineEvent {
    ns: u64,
    kind: String,
    fields: BTreeMap<String, u32>,
}

/// The timeline of the MADs an SM sent and read (see
/// `the_bench_mad_counter_counts_the_smps_the_sm_reports`): `counted` SMP requests, ordered,
/// each answered, one Active Set per active port of `summary`.
fn check_timeline(dir: &Path, summary: &str, counted: u64) {
    // `timeout` writes a timeline too (no MADs): take the one with MADs.
    let mut timelines: Vec<Vec<TimelineEvent>> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("timeline."))
        .map(|p| {
            std::fs::read_to_string(&p)
                .unwrap()
                .lines()
                .map(|l| {
                    let mut parts = l.split(' ');
                    let ns = parts.next().unwrap().parse().unwrap();
                    let kind = parts.next().unwrap().to_owned();
                    let fields = parts
                        .map(|kv| {
                            let (k, v) = kv.split_once('=').unwrap();
                            let v = v.strip_prefix("0x").map_or_else(|| v.parse(), |h| u32::from_str_radix(h, 16));
                            (k.to_owned(), v.unwrap())
                        })
                        .collect();
                    TimelineEvent { ns, kind, fields }
                })
                .collect()
        })
        .collect();
    timelines.sort_by_key(|t: &Vec<TimelineEvent>| t.iter().filter(|e| e.kind == "send").count());
    let events = timelines.pop().expect("a timeline");
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!((kinds.first(), kinds.get(1), kinds.last()), (Some(&"start"), Some(&"open"), Some(&"exit")));
    assert!(events.windows(2).all(|w| w[0].ns <= w[1].ns), "the timeline is in time order");
    let smp = |e: &TimelineEvent| matches!(e.fields["class"], 0x01 | 0x81);
    let requests: Vec<&TimelineEvent> =
        events.iter().filter(|e| e.kind == "send" && smp(e) && matches!(e.fields["method"], 1 | 2)).collect();
    assert_eq!(requests.len() as u64, counted, "the timeline's SMP requests are the counted ones");
    // Each request is answered after it was sent: the wake-ups (TID 0, the n-th answer with
    // that TID for the n-th of them) too, the exit's included, since the device is closed
    // only when every wake-up has come back.
    let mut answered: BTreeMap<u32, std::collections::VecDeque<u64>> = BTreeMap::new();
    for e in events.iter().filter(|e| e.kind == "recv" && smp(e) && e.fields["method"] == 0x81) {
        answered.entry(e.fields["tid"]).or_default().push_back(e.ns);
    }
    for r in &requests {
        let at = answered
            .get_mut(&r.fields["tid"])
            .and_then(|a| if r.fields["tid"] == 0 { a.pop_front() } else { a.front().copied() });
        assert!(
            at.is_some_and(|at| at >= r.ns),
            "request TID {:#x} answered at {at:?}, sent at {}",
            r.fields["tid"],
            r.ns
        );
    }
    // PortState 4 (Active) in a PortInfo Set: one per port the report counts active.
    let active_sets = requests
        .iter()
        .filter(|e| e.fields["method"] == 2 && e.fields["attr"] == 0x15 && e.fields["state"] == 4)
        .count();
    assert_eq!(Some(active_sets as u64), count_before(summary, " ports active"), "{summary}");
    if support::ibsim::find_tool("python3").is_none() {
        return;
    }
    let tool = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/madtimeline.py");
    let files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("timeline."))
        .collect();
    let out = Command::new("python3").arg(tool).args(&files).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    let stage = |name: &str| -> Option<u64> {
        let line = text.lines().find(|l| l.contains(&format!(": {name} ")))?;
        count_before(line, " requests")
    };
    assert_eq!(stage("activate"), Some(active_sets as u64), "{text}");
    assert_eq!(stage("lfts").map(|n| n > 0), Some(true), "{text}");
    // The exit's wake-up NodeInfo Gets (TID 0) are "other", with the PerfMgt reads.
    let wake_ups = requests.iter().filter(|e| e.fields["tid"] == 0).count() as u64;
    // One when the route is done (the routing thread's result waits for no answer), one at the exit.
    assert_eq!(wake_ups, 2, "wake-ups: {text}");
    let staged: u64 = ["discovery", "configure", "lfts", "activate"].iter().filter_map(|s| stage(s)).sum();
    assert_eq!(staged + wake_ups, counted, "{text}");
}

#[test]
fn an_unknown_ca_is_refused_with_the_ports_found() {
    if !require_ibsim() {
        return;
    }
    let net = example("fat-tree-2l-k4.net");
    let sim = Ibsim::start(&net).unwrap();
    let out = sim.run_at(Some("h1"), ibsm(), &["run", "--once", "--ca", "mlx9_9"]).unwrap();
    assert_eq!(out.status.and_then(|s| s.code()), Some(1), "{}", out.describe());
    assert!(out.stderr.contains("no umad device for CA mlx9_9; found: ibsim0 port 1"), "{}", out.describe());
}

#[test]
fn without_umad_devices_the_reason_names_sysfs() {
    if Path::new("/sys/class/infiniband_mad").exists() {
        eprintln!("skipped: this machine has umad devices");
        return;
    }
    let out = Command::new(ibsm()).args(["run", "--once"]).env_remove("LD_PRELOAD").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("/sys/class/infiniband_mad") && stderr.contains("os error 2"), "{stderr}");
}

#[test]
fn restart_with_the_same_state_dir_keeps_every_lid() {
    if !require_ibsim() {
        return;
    }
    let net = example("fat-tree-2l-k4.net");
    let topo = Topology::load(&net).unwrap();
    let cas = ca_ports(&topo);
    let (first, last) = (cas[0].0.clone(), cas[cas.len() - 1].0.clone());
    let state = TempDir::new("restart");

    let lids = |sm_host: &str, state: Option<&Path>| {
        // A fresh ibsim each time: every port starts without a LID.
        let sim = Ibsim::start(&net).unwrap();
        run_once(&sim, sm_host, state);
        let diag_host = if sm_host == first { &last } else { &first };
        parse_ibnetdiscover(&diag(&sim, diag_host, "ibnetdiscover", &[]).stdout)
    };
    let before = lids(&first, Some(&state.0));
    let control = lids(&last, None);
    assert_ne!(
        (&before.switches, &before.ca_ports),
        (&control.switches, &control.ca_ports),
        "control: without guid2lid an SM elsewhere should number differently, or this test proves nothing"
    );
    let after = lids(&last, Some(&state.0));
    assert_eq!(after.switches, before.switches);
    assert_eq!(after.ca_ports, before.ca_ports);
}

/// PortInfo.CapabilityMask of `lid`'s port `port`, read from `host`.
fn cap_mask(sim: &Ibsim, host: &str, lid: u16, port: u8) -> u32 {
    let out = diag(sim, host, "smpquery", &["portinfo", &lid.to_string(), &port.to_string()]);
    let f: BTreeMap<String, String> = dump_fields(&out.stdout).into_iter().collect();
    let v = f.get("CapMask").unwrap_or_else(|| panic!("{}", out.describe()));
    u32::from_str_radix(v.trim_start_matches("0x"), 16).unwrap()
}

#[test]
fn running_sm_answers_sa_and_stops_on_sigterm() {
    if !require_ibsim() {
        return;
    }
    let net = example("fat-tree-2l-k4.net");
    let topo = Topology::load(&net).unwrap();
    let cas = ca_ports(&topo);
    let (sm_host, other) = (cas[0].0.clone(), cas[cas.len() - 1].0.clone());
    let mut sim = Ibsim::start(&net).unwrap();
    let mut sm = sim.spawn_at(Some(&sm_host), ibsm(), &["run"]).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !sm.stdout().contains("subnet up: ") {
        assert!(sm.try_wait().unwrap().is_none(), "ibsm exited:\n{}\n{}", sm.stdout(), sm.stderr());
        assert!(Instant::now() < deadline, "no subnet-up line:\n{}\n{}", sm.stdout(), sm.stderr());
        std::thread::sleep(Duration::from_millis(20));
    }
    let found = parse_ibnetdiscover(&diag(&sim, &other, "ibnetdiscover", &[]).stdout);
    let sm_lid = found.ca_ports[&(cas[0].1, cas[0].2)];
    assert_ne!(cap_mask(&sim, &other, sm_lid, cas[0].2) & CAP_IS_SM, 0, "IsSM while the SM runs");

    // saquery reaches the SM (MasterSMLID is set): the SA answers what it serves (the SM's own
    // NodeRecord here; tests/ibsim_sa.rs checks the SA against OpenSM; tests/core_requests.rs
    // the "not supported" status of what it does not serve).
    let out = sim.run_at(Some(&other), "saquery", &["NR", &sm_lid.to_string()]).unwrap();
    assert!(out.success(), "{}", out.describe());
    let records = saquery_records(&out.stdout);
    let port_guid = records.first().and_then(|r| r.get("port_guid").cloned());
    assert_eq!(port_guid, Some(format!("0x{:016x}", cas[0].1 + u64::from(cas[0].2))), "{}", out.describe());
    // The IPoIB broadcast group of the default partition exists from the first sweep.
    let out = sim.run_at(Some(&other), "saquery", &["-g"]).unwrap();
    let groups = saquery_records(&out.stdout);
    let ipoib = groups.iter().find(|g| g.get("MGID").is_some_and(|m| m == "ff12:401b:ffff::ffff:ffff"));
    assert_eq!(ipoib.and_then(|g| g.get("Mlid")).map(String::as_str), Some("0xC000"), "{}", out.describe());
    // The SL-to-VL maps are read from the ports when first asked for, and answered then.
    let out = sim.run_at(Some(&other), "saquery", &["SL2VL"]).unwrap();
    assert!(out.success(), "{}", out.describe());
    assert!(!saquery_records(&out.stdout).is_empty(), "{}", out.describe());

    // sminfo from another HCA sees the master: our port GUID, state 3, a rising activity count.
    let sm_port_guid = cas[0].1 + u64::from(cas[0].2);
    let counts: Vec<u64> = (0..2)
        .map(|_| {
            let out = diag(&sim, &other, "sminfo", &[]);
            let line = out.stdout.trim().to_owned();
            assert!(line.contains(&format!("sm lid {sm_lid} ")), "{}", out.describe());
            assert!(line.contains(&format!("sm guid {sm_port_guid:#x}")), "{}", out.describe());
            assert!(line.contains("state 3 SMINFO_MASTER"), "{}", out.describe());
            let count = line.split("activity count ").nth(1).and_then(|r| r.split_whitespace().next());
            count.and_then(|c| c.parse().ok()).unwrap_or_else(|| panic!("{}", out.describe()))
        })
        .collect();
    assert!(counts[1] > counts[0], "activity count rises: {counts:?}");

    // Every end port carries the subnet prefix (fe80::/64 by default), as OpenSM programs it.
    for lid in found.all_lids() {
        let port = found.ca_ports.iter().find(|(_, l)| **l == lid).map_or(0, |((_, p), _)| *p);
        let out = diag(&sim, &other, "smpquery", &["portinfo", &lid.to_string(), &port.to_string()]);
        let f: BTreeMap<String, String> = dump_fields(&out.stdout).into_iter().collect();
        assert_eq!(f.get("GidPrefix").map(String::as_str), Some("0xfe80000000000000"), "LID {lid}: {}", out.describe());
    }

    // A trap reaches the core through umad like any request: a cable pulled at a leaf makes
    // ibsim send trap 128, the SM acknowledges it and sweeps again without that host.
    let pulled = &cas[1].0;
    let leaf_port = topo.nodes.iter().find(|n| &n.name == pulled).and_then(|n| n.peer(1)).expect("cabled host");
    let leaf = topo.nodes[leaf_port.node].name.clone();
    sim.console(&format!("Unlink \"{leaf}\"[{}]", leaf_port.port)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while sm.stdout().matches("subnet up: ").count() < 2 {
        assert!(Instant::now() < deadline, "no sweep after the trap:\n{}\n{}", sm.stdout(), sm.stderr());
        std::thread::sleep(Duration::from_millis(20));
    }
    let second = sm.stdout().lines().filter(|l| l.starts_with("subnet up: ")).nth(1).unwrap_or_default().to_owned();
    assert!(
        second.contains(&format!("{} CAs", topo.nodes.iter().filter(|n| n.kind != NodeKind::Switch).count() - 1)),
        "{second}"
    );

    let status = Command::new("kill").arg("-TERM").arg(sm.pid().to_string()).status().unwrap();
    assert!(status.success());
    let exit = sm.wait_timeout(Duration::from_secs(10)).unwrap();
    assert!(exit.is_some_and(|s| s.success()), "exit {exit:?}:\n{}", sm.stderr());
    assert!(sm.stderr().contains("stopped by SIGTERM"), "{}", sm.stderr());
    assert_eq!(cap_mask(&sim, &other, sm_lid, cas[0].2) & CAP_IS_SM, 0, "IsSM cleared after exit");
    drop(sm);
    drop(sim);
}
