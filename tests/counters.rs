//! `ibsm counters` against a running SM on the simulated fabric: every cabled port's counters
//! as the performance manager read them, printed as `perfquery` prints them, the ports with
//! errors as `ibqueryerrors` lists them (none on a healthy fabric, exit 0), the busiest ports,
//! and JSON; no MAD is sent for any of them.

mod support;

use std::time::{Duration, Instant};

use support::cmd::{ibsm, tmp_dir};
use support::daemon::Daemon;

#[test]
fn counters_of_a_running_sm_in_every_form() {
    let dir = tmp_dir("counters");
    let (mut sm, sock) = Daemon::start_sim(&dir, "examples/fabrics/fat-tree-2l-k4.net");
    sm.wait_up(&sock, Duration::from_secs(60));
    let s = sock.to_str().expect("utf-8");
    // The first PM sweep follows the bring-up: poll until it is in, within a deadline.
    let deadline = Instant::now() + Duration::from_secs(10);
    let answer = loop {
        let (code, out, err) = ibsm(&["counters", "--socket", s, "--json"]);
        assert_eq!(code, Some(0), "{err}");
        let v: serde_json::Value = serde_json::from_str(out.trim()).expect("one line of JSON");
        if v["sweeps"].as_u64().is_some_and(|n| n >= 1) {
            break v;
        }
        assert!(Instant::now() < deadline, "no PM sweep: {v}");
        std::thread::sleep(Duration::from_millis(20));
    };
    let ports = answer["ports"].as_array().expect("ports");
    assert_eq!(ports.len(), 32, "every cabled port of the 2-level k=4 tree");
    for p in ports {
        let t = &p["totals"];
        let (words, pkts) = (t["PortXmitData"].as_u64().expect("data"), t["PortXmitPkts"].as_u64().expect("pkts"));
        assert!(pkts > 0 && words == 72 * pkts, "{p}");
    }
    let (code, out, err) = ibsm(&["counters", "--socket", s]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out.matches("# Port counters: node 0x").count(), 32, "{out}");
    assert!(out.lines().any(|l| l.starts_with("PortXmitData:....................") && l.len() > 33), "{out}");
    let (code, out, err) = ibsm(&["counters", "--socket", s, "--errors"]);
    assert_eq!(code, Some(0), "a healthy fabric: {out}{err}");
    assert!(out.contains("## Summary: 0 ports with errors (32 without)"), "{out}");
    let (code, out, err) = ibsm(&["counters", "--socket", s, "--top", "3"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out.lines().count(), 4, "a header and three ports: {out}");
    drop(sm);
    let _ = std::fs::remove_dir_all(&dir);
}
