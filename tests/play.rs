//! `ibsm sim play`: a fault script against the SM on the simulator, one JSON line per event with
//! the documented keys; the route check on the switches' own tables sees a dead link until the
//! SM has routed around it.

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
    let dir = std::env::temp_dir().join(format!("ibsm-play-{}-{}", std::process::id(), script.len()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("faults.txt");
    std::fs::write(&path, script).expect("script");
    let out = Command::new(env!("CARGO_BIN_EXE_ibsm"))
        .args(["sim", "play"])
        .arg(fabric_path())
        .arg(&path)
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
