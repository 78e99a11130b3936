//! `ibsm status` on the simulated fabric gives the last sweep's age in wall-clock time: the
//! virtual clock stands still while the fabric is idle, and the age used to stay at 0 forever.

mod support;

use std::time::{Duration, Instant};

use support::cmd::tmp_dir;
use support::daemon::{Daemon, status};

#[test]
fn the_last_sweeps_age_grows_with_the_wall_clock_on_the_simulator() {
    let dir = tmp_dir("status-age");
    let (mut sm, sock) = Daemon::start_sim(&dir, "examples/fabrics/fat-tree-2l-k4.net");
    let first = sm.wait_up(&sock, Duration::from_secs(60));
    let age = |v: &serde_json::Value| v["last_sweep"]["age_ms"].as_u64().expect("age_ms");
    let asked = Instant::now();
    let start = age(&first);
    // Poll until the age has grown by 300 ms of wall clock, within a deadline.
    let deadline = asked + Duration::from_secs(5);
    loop {
        let st = status(&sock).expect("status answers");
        let waited = u64::try_from(asked.elapsed().as_millis()).expect("ms");
        let now = age(&st);
        assert!(now <= start + waited + 50, "the age runs ahead of the wall clock: {start} + {waited} < {now}");
        if now >= start + 300 {
            break;
        }
        assert!(Instant::now() < deadline, "age stuck at {now} ms after {waited} ms of wall clock: {st}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let (code, out, err) = support::cmd::ibsm(&["status", "--socket", sock.to_str().expect("utf-8")]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains(" ms ago") || out.contains(" s ago"), "{out}");
    drop(sm);
    let _ = std::fs::remove_dir_all(&dir);
}
