//! `ibsm status` on the simulated fabric gives the last sweep's age in wall-clock time: the
//! virtual clock stands still while the fabric is idle, and the age used to stay at 0 forever.

mod support;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::cmd::{root, tmp_dir};

fn status(sock: &Path) -> Option<serde_json::Value> {
    let mut s = UnixStream::connect(sock).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    s.write_all(b"{\"query\":\"status\"}\n").ok()?;
    let mut answer = String::new();
    s.read_to_string(&mut answer).ok()?;
    serde_json::from_str(answer.trim()).ok()
}

/// A child `ibsm run` killed when the test ends.
struct Sm(Child);

impl Drop for Sm {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_last_sweeps_age_grows_with_the_wall_clock_on_the_simulator() {
    let dir = tmp_dir("status-age");
    let sock = dir.join("sock");
    let child = Command::new(env!("CARGO_BIN_EXE_ibsm"))
        .args(["run", "--sim", "examples/fabrics/fat-tree-2l-k4.net", "--state-dir"])
        .arg(dir.join("state"))
        .arg("--control")
        .arg(&sock)
        .current_dir(root())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("ibsm run starts");
    let mut sm = Sm(child);
    let deadline = Instant::now() + Duration::from_secs(60);
    let first = loop {
        assert!(sm.0.try_wait().ok().flatten().is_none(), "the SM exited");
        assert!(Instant::now() < deadline, "the subnet did not come up");
        if let Some(st) = status(&sock).filter(|st| st["subnet_up"] == true) {
            break st;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
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
