//! The performance manager judged against infiniband-diags under ibsim: what `ibsm counters`
//! reports for every cabled port of `net.2sw2path4hca` (the eight switch ports and the four
//! HCA ports) against what `perfquery` (PortCounters) and `perfquery -x`
//! (PortCountersExtended) read from the same ports, and `ibsm counters --errors` against
//! `ibqueryerrors`.
//!
//! ibsim counts every MAD it carries: 1 packet and 72 words (288 bytes) on the port it leaves
//! and on the port it enters, in both the 32-bit and the 64-bit data counters. So the counters
//! split in two:
//! - The error counters and PortXmitWait do not move on their own (ibsim changes them only on
//!   a console `PerformanceSet` or an `Error` drop rate): ibsm's totals must equal what
//!   `perfquery` reads, exactly.
//! - The data and packet counters move with every MAD (the SM's SMPs, the PM's own reads,
//!   perfquery's request): what `perfquery` and `perfquery -x` read must lie between ibsm's
//!   totals of the PM sweep finished before the tools ran and those of a PM sweep begun after
//!   them (a counter only grows while nobody clears it), and be 72 words a packet, as
//!   ibsm's are. That bracket catches a unit slip (a total in bytes is 4 times the words
//!   `perfquery` prints), a wrong width (the 64-bit and 32-bit forms agree here, far from 2^32)
//!   and a counter taken from the wrong field.
//!
//! Errors are given with ibsim's console (`PerformanceSet "Switch1"[3]
//! PortCounters.SymbolErrorCounter=20` and so on). ibsim's `Error "node"[port] RATE` drop rate
//! also raises PortRcvErrors, but it drops perfquery's own MADs at random too, so it is not
//! used here. `ibqueryerrors` runs with a threshold file holding ibsm's thresholds (the
//! installed `error_thresholds` has them all commented out: every non-zero counter listed);
//! the port lines of both must be the same (`ibqueryerrors` adds a summed `port ALL` line per
//! switch, which ibsm has no counterpart for and which is left out).
//!
//! Last, a counter past half its range: ibsm clears it after reading it (as OpenSM's PM does),
//! so `perfquery` and `ibqueryerrors` then show what came after the clear while ibsm's total
//! keeps the count. Skipped with `IBSM_SKIP_IBSIM=1`.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use ibsm::core::perf::counters::Counter;
use support::ibsim::{Ibsim, NET_EXAMPLES_DIR, require_ibsim, require_tools, wait_for};

/// Where the SM runs and where the tools run.
const SM_HOST: &str = "Hca1";
const TOOL_HOST: &str = "Hca3";

/// The counters that do not move on their own (and PortXmitWait): the error counters, by their
/// IBTA names.
fn still() -> impl Iterator<Item = &'static str> {
    Counter::ERRORS.iter().map(|c| c.name())
}

/// The counters that move with the MADs ibsim carries: the others (data and packets).
fn moving() -> impl Iterator<Item = &'static str> {
    Counter::ALL[Counter::ERRORS.len()..].iter().map(|c| c.name())
}

/// ibsm's thresholds (ibqueryerrors's commented-out defaults), as an ibqueryerrors threshold file.
const THRESHOLDS: &str = "SymbolErrorCounter=10\nLinkErrorRecoveryCounter=10\nLinkDownedCounter=10\n\
PortRcvErrors=10\nPortRcvRemotePhysicalErrors=100\nPortRcvSwitchRelayErrors=100\nPortXmitDiscards=100\n\
PortXmitConstraintErrors=100\nPortRcvConstraintErrors=100\nLocalLinkIntegrityErrors=10\n\
ExcessiveBufferOverrunErrors=10\nVL15Dropped=100\nPortXmitWait=1000\n";

/// The errors given, (node, port, counter, value): over and under their thresholds.
const GIVEN: [(&str, u8, &str, u64); 6] = [
    ("Switch1", 3, "SymbolErrorCounter", 20),
    ("Switch1", 5, "PortRcvErrors", 4),
    ("Switch2", 1, "PortXmitDiscards", 150),
    ("Switch2", 3, "LinkDownedCounter", 11),
    ("Hca2", 1, "LinkErrorRecoveryCounter", 12),
    ("Hca4", 1, "VL15Dropped", 7),
];

/// A port by node description and number.
type PortId = (String, u8);

/// Counters by name: an answer's totals, or the fields of a tool's output.
type Counters = BTreeMap<String, u64>;

/// Runs `ibsm counters --json [--errors]` and returns the answer.
fn counters(sock: &Path, errors: bool) -> serde_json::Value {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_ibsm"));
    cmd.args(["counters", "--json", "--socket"]).arg(sock);
    if errors {
        cmd.arg("--errors");
    }
    let out = cmd.output().expect("ibsm counters");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    })
}

fn sweeps(v: &serde_json::Value) -> u64 {
    v["sweeps"].as_u64().unwrap_or(0)
}

/// Waits for a PM sweep that starts after this call and returns the answer after it: one
/// sweep more may be under way, so two more must end.
fn after_next_sweep(sock: &Path) -> serde_json::Value {
    let first = sweeps(&counters(sock, false));
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let v = counters(sock, false);
        if sweeps(&v) >= first + 2 {
            return v;
        }
        assert!(Instant::now() < deadline, "no PM sweep within 15 s: {v}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every port's totals in an answer, by (node description, port).
fn totals(v: &serde_json::Value) -> BTreeMap<PortId, Counters> {
    v["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .map(|p| {
            let id = (
                p["desc"].as_str().expect("desc").to_owned(),
                u8::try_from(p["port"].as_u64().expect("port")).expect("port"),
            );
            let t = p["totals"]
                .as_object()
                .expect("totals")
                .iter()
                .map(|(k, v)| (k.clone(), v.as_u64().expect("u64")))
                .collect();
            (id, t)
        })
        .collect()
}

/// `Name:.....value` lines of an infiniband-diags tool, as numbers where they are.
fn fields(text: &str) -> Counters {
    text.lines()
        .filter_map(|l| {
            let (name, rest) = l.split_once(':')?;
            let v = rest.trim_start_matches('.').trim();
            let v = v.strip_prefix("0x").map_or_else(|| v.parse().ok(), |h| u64::from_str_radix(h, 16).ok())?;
            Some((name.trim().to_owned(), v))
        })
        .collect()
}

/// The LID of the node at the end of a directed route from the tool host.
fn lid_at(sim: &Ibsim, path: &str) -> u16 {
    let out = sim.run_at(Some(TOOL_HOST), "smpquery", &["-D", "portinfo", path, "0"]).expect("smpquery");
    assert!(out.success(), "{}", out.describe());
    u16::try_from(fields(&out.stdout)["Lid"]).expect("a LID")
}

/// `GUID 0x… port N: [Name == v] …` lines, the GUID as a number, `port ALL` left out, ibsm's
/// `(last interval: …)` cut.
fn error_lines(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|l| {
            let rest = l.trim().strip_prefix("GUID 0x")?;
            let (guid, rest) = rest.split_once(' ')?;
            let guid = u64::from_str_radix(guid, 16).ok()?;
            let rest = rest.split(" (last interval").next().unwrap_or(rest).trim();
            (!rest.starts_with("port ALL")).then(|| format!("GUID {guid:#x} {rest}"))
        })
        .collect()
}

#[test]
fn counters_equal_perfquery_and_errors_equal_ibqueryerrors() {
    if !require_ibsim() || !require_tools(&["perfquery", "ibqueryerrors", "smpquery"]) {
        return;
    }
    let net = Path::new(NET_EXAMPLES_DIR).join("net.2sw2path4hca");
    let mut sim = Ibsim::start(&net).expect("ibsim");
    let conf = sim.dir().join("ibsm.toml");
    std::fs::write(&conf, "perf-interval-s = 1\n").expect("write");
    let sock = sim.dir().join("ibsm.sock");
    let args = ["run", "--config", &conf.to_string_lossy(), "--control", &sock.to_string_lossy()];
    let sm = sim.spawn_at(Some(SM_HOST), env!("CARGO_BIN_EXE_ibsm"), &args).expect("ibsm starts");
    wait_for("ibsm's subnet up", Duration::from_secs(60), || sm.stdout().contains("subnet up: "));
    wait_for("a PM sweep", Duration::from_secs(15), || sock.exists() && sweeps(&counters(&sock, false)) >= 1);

    // The ports, with the LIDs the tools address them by (directed routes from Hca3, which
    // hangs on Switch1[2]).
    let (sw1, sw2) = (lid_at(&sim, "0,1"), lid_at(&sim, "0,1,3"));
    let mut ports: Vec<(PortId, u16)> = Vec::new();
    for p in [1, 2, 3, 5] {
        ports.push((("Switch1".to_owned(), p), sw1));
        ports.push((("Switch2".to_owned(), p), sw2));
    }
    for (host, path) in [("Hca1", "0,1,1"), ("Hca2", "0,1,3,1"), ("Hca3", "0"), ("Hca4", "0,1,3,2")] {
        ports.push(((host.to_owned(), 1), lid_at(&sim, path)));
    }

    for (node, port, counter, value) in GIVEN {
        let said =
            sim.console(&format!("PerformanceSet \"{node}\"[{port}] PortCounters.{counter}={value}")).expect("console");
        assert!(said.contains("has been set"), "{said}");
    }

    let before = totals(&after_next_sweep(&sock));
    let mut read: BTreeMap<PortId, (Counters, Counters)> = BTreeMap::new();
    for (id, lid) in &ports {
        let (lid, port) = (lid.to_string(), id.1.to_string());
        let pq = sim.run_at(Some(TOOL_HOST), "perfquery", &[&lid, &port]).expect("perfquery");
        assert!(pq.success(), "{}", pq.describe());
        let pqx = sim.run_at(Some(TOOL_HOST), "perfquery", &["-x", &lid, &port]).expect("perfquery -x");
        assert!(pqx.success(), "{}", pqx.describe());
        read.insert(id.clone(), (fields(&pq.stdout), fields(&pqx.stdout)));
    }
    let after = totals(&after_next_sweep(&sock));

    let mut checked = 0;
    for (id, _) in &ports {
        let (pq, pqx) = &read[id];
        let (b, a) = (&before[id], &after[id]);
        for name in still() {
            assert_eq!(b[name], pq[name], "{id:?} {name}: ibsm before, perfquery");
            assert_eq!(a[name], pq[name], "{id:?} {name}: ibsm after, perfquery");
            checked += 1;
        }
        for name in moving() {
            for (tool, v) in [("perfquery", pq[name]), ("perfquery -x", pqx[name])] {
                assert!(
                    b[name] <= v && v <= a[name],
                    "{id:?} {name}: ibsm before {} <= {tool} {v} <= ibsm after {}",
                    b[name],
                    a[name]
                );
                checked += 1;
            }
        }
        for (t, form) in [(b, "ibsm before"), (a, "ibsm after"), (pq, "perfquery"), (pqx, "perfquery -x")] {
            assert!(t["PortXmitPkts"] > 0, "{id:?}: {form} saw no traffic");
            assert_eq!(t["PortXmitData"], 72 * t["PortXmitPkts"], "{id:?}: {form} counts 72 words a MAD");
            assert_eq!(t["PortRcvData"], 72 * t["PortRcvPkts"], "{id:?}: {form} counts 72 words a MAD");
        }
    }
    for (node, port, counter, value) in GIVEN {
        assert_eq!(after[&(node.to_owned(), port)][counter], value, "{node}[{port}] {counter} as given");
    }
    eprintln!("{} ports, {checked} counter comparisons with perfquery and perfquery -x", ports.len());

    // ibqueryerrors with ibsm's thresholds, and ibsm counters --errors.
    let thresholds = sim.dir().join("error_thresholds");
    std::fs::write(&thresholds, THRESHOLDS).expect("write");
    let theirs = sim
        .run_at(Some(TOOL_HOST), "ibqueryerrors", &["--threshold-file", &thresholds.to_string_lossy()])
        .expect("ibqueryerrors");
    // Both exit 1 when a port is over a threshold.
    assert_eq!(theirs.status.and_then(|s| s.code()), Some(1), "{}", theirs.describe());
    let ours = std::process::Command::new(env!("CARGO_BIN_EXE_ibsm"))
        .args(["counters", "--errors", "--socket"])
        .arg(&sock)
        .output()
        .expect("ibsm counters --errors");
    assert_eq!(ours.status.code(), Some(1), "ports over a threshold: exit 1");
    let ours = String::from_utf8_lossy(&ours.stdout).into_owned();
    let (t, o) = (error_lines(&theirs.stdout), error_lines(&ours));
    assert_eq!(t.len(), 4, "the four errors over their thresholds: {}", theirs.stdout);
    assert_eq!(o, t, "ibsm counters --errors:\n{ours}\nibqueryerrors:\n{}", theirs.stdout);

    // Past half its range, a 16-bit counter is cleared by ibsm once read: perfquery then
    // shows the count since the clear, ibsm's total all of it.
    let said = sim.console("PerformanceSet \"Switch1\"[1] PortCounters.SymbolErrorCounter=40000").expect("console");
    assert!(said.contains("has been set"), "{said}");
    let cleared = totals(&after_next_sweep(&sock));
    let id = ("Switch1".to_owned(), 1);
    assert_eq!(cleared[&id]["SymbolErrorCounter"], 40_000, "ibsm's total keeps the count");
    let pq = sim.run_at(Some(TOOL_HOST), "perfquery", &[&sw1.to_string(), "1"]).expect("perfquery");
    assert_eq!(fields(&pq.stdout)["SymbolErrorCounter"], 0, "the PMA's counter was cleared: {}", pq.stdout);
    drop(sm);
}
