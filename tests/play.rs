//! `ibsm sim play`: a fault script against the SM on the simulator, one JSON line per event with
//! the documented keys; the route check on the switches' own tables sees a dead link until the
//! SM has routed around it; cuts that land in the sweep before them end with every pair routed.

use std::process::Command;

use ibsm::core::{Guid2Lid, Sm, SmConfig};
use ibsm::transport::sim::SimDriver;
use ibsm_sim::fabric::Fault;

mod support;
use support::sa::example;

const KEYS: [&str; 7] =
    ["event", "detect_ms", "compute_ms", "blocks_sent", "blocks_changed", "converge_ms", "invariants_ok"];

fn fabric_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fabrics/fat-tree-2l-k4.net")
}

fn play(script: &str) -> (Option<i32>, String, String) {
    play_on(&fabric_path(), script)
}

fn play_on(fabric: &std::path::Path, script: &str) -> (Option<i32>, String, String) {
    play_with(fabric, script, &[])
}

/// `ibsm sim play FABRIC SCRIPT EXTRA...`: exit code, stdout, stderr.
fn play_with(fabric: &std::path::Path, script: &str, extra: &[&str]) -> (Option<i32>, String, String) {
    let dir = std::env::temp_dir().join(format!("ibsm-play-{}-{}", std::process::id(), script.len()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("faults.txt");
    std::fs::write(&path, script).expect("script");
    let out = Command::new(env!("CARGO_BIN_EXE_ibsm"))
        .args(["sim", "play"])
        .arg(fabric)
        .arg(&path)
        .args(extra)
        .output()
        .expect("ibsm sim play");
    let _ = std::fs::remove_dir_all(&dir);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn every_event_gets_one_json_line_with_the_documented_keys() {
    let script = "1s link-down spine-0[1]\n2s link-up spine-0[1]\n2500ms reroute\n3s node-crash leaf-3\n4s node-restart leaf-3\n5s drop 0.05\n6s drop 0\n";
    let (code, out, err) = play(script);
    assert_eq!(code, Some(0), "{err}");
    let lines: Vec<serde_json::Value> = out.lines().map(|l| serde_json::from_str(l).expect("JSON")).collect();
    assert_eq!(lines.len(), 7, "{out}");
    for (line, text) in lines.iter().zip(out.lines()) {
        // The documented keys come first, in order (read from the text: a parsed object
        // does not keep the order).
        let mut at = 0;
        for k in KEYS {
            let pos = text.find(&format!("\"{k}\":")).unwrap_or_else(|| panic!("{k} missing: {text}"));
            assert!(pos >= at, "{k} out of order: {text}");
            at = pos;
        }
        assert_eq!(line["invariants_ok"], true, "{text}");
    }
    let down = &lines[0];
    assert_eq!(down["event"], "1s link-down spine-0[1]");
    let (sent, changed) = (down["blocks_sent"].as_u64().expect("n"), down["blocks_changed"].as_u64().expect("n"));
    assert!(changed > 0 && sent >= changed, "{down}");
    assert!(down["detect_ms"].as_f64().is_some_and(|d| d < 1000.0), "{down}");
    assert!(down["converge_ms"].as_f64().is_some(), "{down}");
    // The lost cable's routes are repaired, not routed again; when it is back, the tables are
    // the ones from before the failure: the same blocks change back, nothing else.
    assert_eq!(down["routing"], "repaired", "{down}");
    assert_eq!(lines[1]["routing"], "reused", "{}", lines[1]);
    assert_eq!(lines[1]["blocks_changed"], down["blocks_changed"], "{}", lines[1]);
    // A forced full re-route of the unchanged fabric changes no table.
    assert_eq!((lines[2]["detect_ms"].as_f64(), lines[2]["blocks_changed"].as_u64()), (Some(0.0), Some(0)));
    assert_eq!(lines[2]["routing"], "full");
    // A crashed leaf takes its two HCAs with it: 6 live HCAs, 30 pairs; back, 56 again.
    assert_eq!((lines[3]["pairs"].as_u64(), lines[4]["pairs"].as_u64()), (Some(30), Some(56)));
    assert!(lines[5]["detect_ms"].is_null(), "packet rules are not detected: {}", lines[5]);
}

/// `--compute-time cpu` charges the SM's computing with its thread's CPU time: the same script
/// plays the same way (each fault noticed, repaired or re-used, every pair routed); a clock
/// other than `wall` or `cpu` is refused.
#[test]
fn the_compute_can_be_charged_with_cpu_time() {
    let script = "1s link-down spine-0[1]\n2s link-up spine-0[1]\n3s reroute\n";
    let (code, out, err) = play_with(&fabric_path(), script, &["--compute-time", "cpu"]);
    assert_eq!(code, Some(0), "{err}");
    let lines: Vec<serde_json::Value> = out.lines().map(|l| serde_json::from_str(l).expect("JSON")).collect();
    assert_eq!(lines.len(), 3, "{out}");
    let routing: Vec<&str> = lines.iter().map(|l| l["routing"].as_str().unwrap_or("none")).collect();
    assert_eq!(routing, ["repaired", "reused", "full"], "{out}");
    for l in &lines {
        assert_eq!((l["invariants_ok"].as_bool(), l["sweeps"].as_u64()), (Some(true), Some(1)), "{l}");
        assert!(l["compute_ms"].as_f64().is_some_and(|c| c >= 0.0), "{l}");
    }
    let (code, _, err) = play_with(&fabric_path(), script, &["--compute-time", "sundial"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--compute-time"), "{err}");
}

#[test]
fn a_bad_script_is_refused_with_file_and_line() {
    let (code, out, err) = play("1s link-down spine-0[1]\n2s link-down nowhere[3]\n3s unplug\n");
    assert_eq!(code, Some(2));
    assert!(out.is_empty());
    assert!(err.contains("faults.txt:2: no node named \"nowhere\""), "{err}");
    assert!(err.contains("faults.txt:3: unknown action \"unplug\""), "{err}");
}

#[test]
fn the_route_check_sees_a_dead_link_until_the_sm_routes_around_it() {
    let topo = example("fat-tree-2l-k4.net");
    let mut drv = SimDriver::new(&topo, 3, Sm::new(SmConfig::default(), Guid2Lid::default()), None).expect("attach");
    drv.sweep(60_000_000_000, |_| {}).expect("up");
    let ok = drv.fabric.check_routes();
    assert!(ok.ok() && ok.pairs == 56, "{ok:?}");
    // A spine cable pulled behind the SM's back: routes through it now end at a dead port.
    let spine = topo.find("spine-0").expect("spine");
    drv.fabric.inject_fault(Fault::LinkDown { node: spine, port: 1 });
    let broken = drv.fabric.check_routes();
    assert!(broken.dead_link > 0 && !broken.ok(), "{broken:?}");
    assert!(broken.first_failure.is_some());
    // The SM hears the trap, sweeps and routes around it.
    let now = drv.now();
    drv.run_until(now + 5_000_000_000, |e| matches!(e, ibsm::core::SmEvent::SubnetUp(_)));
    let fixed = drv.fabric.check_routes();
    assert!(fixed.ok(), "{fixed:?}");
}

/// Cables cut in a burst 0.1–2 ms apart, so that each lands before or during the SM's sweep for
/// the one before (a Set may go to a port whose link has just gone down): the SM ends with every
/// pair routed. A 3-level k = 8 tree, where the four cuts leave every pair a path.
#[test]
fn cuts_that_land_in_the_sweep_before_them_end_with_every_pair_routed() {
    let dir = std::env::temp_dir().join(format!("ibsm-play-burst-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let fabric = dir.join("k8.net");
    let made = Command::new(env!("CARGO_BIN_EXE_ibsm"))
        .args(["sim", "gen", "fat-tree", "--levels", "3", "--radix", "8", "-o"])
        .arg(&fabric)
        .output()
        .expect("ibsm sim gen");
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    for gap_us in [100u32, 500, 1_000, 2_000] {
        let at = |i: u32| format!("{}us", 1_000_000 + i * gap_us);
        let script = format!(
            "{} link-down agg-0[5]\n{} link-down edge-3[5]\n{} link-down agg-6[6]\n{} link-down edge-9[6]\n",
            at(0),
            at(1),
            at(2),
            at(3)
        );
        let (code, out, err) = play_on(&fabric, &script);
        assert_eq!(code, Some(0), "gap {gap_us} us: {err}");
        let lines: Vec<serde_json::Value> = out.lines().map(|l| serde_json::from_str(l).expect("JSON")).collect();
        assert_eq!(lines.len(), 4, "gap {gap_us} us: {out}");
        // Each event is judged when the next one comes, so only the last is judged settled.
        let last = &lines[3];
        assert_eq!(last["invariants_ok"], true, "gap {gap_us} us: {out}");
        assert!(last["sweeps"].as_u64().is_some_and(|n| n >= 1), "gap {gap_us} us: {out}");
        assert_eq!(last["routing"], "repaired", "gap {gap_us} us: {out}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
