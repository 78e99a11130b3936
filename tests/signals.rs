//! Signals sent to a running `ibsm run` as a child process, on the simulated fabric and on umad
//! under ibsim: SIGHUP from the first instant (while the first sweep runs) reloads instead of
//! killing, SIGUSR1 (what OpenSM's logrotate hooks send) and SIGUSR2 are logged and survived,
//! SIGTERM stops the SM with status 0. The SM is checked alive with `status` over its control
//! socket; every wait polls to a deadline.

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use support::cmd::{ibsm, root, tmp_dir};
use support::daemon::{Daemon, status};
use support::ibsim::{Ibsim, require_ibsim};

/// The signals `pid` catches (a handler installed), from `SigCgt` in `/proc/PID/status`.
fn caught(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .unwrap_or(0)
}

/// The bit of signal `n` in a `SigCgt` mask.
const fn bit(n: u32) -> u64 {
    1 << (n - 1)
}
const HUP: u32 = 1;
const USR1: u32 = 10;
const USR2: u32 = 12;

/// Polls `cond` until it holds or `what` times out (the SM must stay alive meanwhile).
fn wait_for(sm: &mut Daemon, what: &str, stderr: &Path, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !cond() {
        let log = std::fs::read_to_string(stderr).unwrap_or_default();
        assert!(sm.alive(), "the SM died waiting for {what}; stderr:\n{log}");
        assert!(Instant::now() < deadline, "timed out waiting for {what}; stderr:\n{log}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn sim_sm_survives_hup_at_start_usr1_and_usr2_and_stops_on_term() {
    let dir = tmp_dir("signals");
    let (sock, state, err_file) = (dir.join("sock"), dir.join("state"), dir.join("stderr"));
    // A fabric of 208 nodes, so that the first sweeps take a while; a policy file to reload.
    let net = dir.join("k8.net");
    let (code, _, err) =
        ibsm(&["sim", "gen", "fat-tree", "--levels", "3", "--radix", "8", "-o", net.to_str().expect("utf-8")]);
    assert_eq!(code, Some(0), "{err}");
    let policy = dir.join("partitions.conf");
    std::fs::write(&policy, "Default=0x7fff : ALL=full ;\n").expect("policy");
    let mut sm = Daemon::start(
        &[
            "--log-format",
            "json",
            "run",
            "--sim",
            net.to_str().expect("utf-8"),
            "--state-dir",
            state.to_str().expect("utf-8"),
            "--control",
            sock.to_str().expect("utf-8"),
            "--partitions",
            policy.to_str().expect("utf-8"),
        ],
        Some(&err_file),
        &[("RUST_LOG", "info")],
    );
    let pid = sm.pid();

    // SIGHUP as soon as the process catches it, before its configuration is read and its
    // first sweep done.
    let all = bit(HUP) | bit(USR1) | bit(USR2);
    wait_for(&mut sm, "SIGHUP, SIGUSR1 and SIGUSR2 caught", &err_file, || caught(pid) & all == all);
    sm.send("HUP");
    wait_for(&mut sm, "the subnet up on the control socket", &err_file, || {
        status(&sock).is_some_and(|s| s["subnet_up"] == true)
    });
    wait_for(&mut sm, "the reload after SIGHUP", &err_file, || {
        std::fs::read_to_string(&err_file).unwrap_or_default().contains("configuration reloaded")
    });

    // SIGUSR1 (logrotate) and SIGUSR2: a log line each, the SM goes on answering.
    sm.send("USR1");
    wait_for(&mut sm, "the SIGUSR1 log line", &err_file, || {
        std::fs::read_to_string(&err_file).unwrap_or_default().contains("no log file to reopen")
    });
    sm.send("USR2");
    wait_for(&mut sm, "the SIGUSR2 log line", &err_file, || {
        std::fs::read_to_string(&err_file).unwrap_or_default().contains("SIGUSR2 ignored")
    });
    assert!(status(&sock).is_some_and(|s| s["subnet_up"] == true), "the SM answers after SIGUSR1 and SIGUSR2");

    // A second SIGHUP while idle reloads too (the policy changed: a sweep follows).
    std::fs::write(&policy, "Default=0x7fff : ALL=full ;\nstorage=0x0010 : ALL_CAS=full ;\n").expect("policy");
    sm.send("HUP");
    wait_for(&mut sm, "the second reload, which applies the policy", &err_file, || {
        let log = std::fs::read_to_string(&err_file).unwrap_or_default();
        log.matches("configuration reloaded").count() >= 2 && log.contains("\"applied\":\"partitions\"")
    });
    assert!(status(&sock).is_some_and(|s| s["subnet_up"] == true), "the SM answers after the second reload");

    sm.send("TERM");
    let deadline = Instant::now() + Duration::from_secs(10);
    let exit = loop {
        if let Some(s) = sm.0.try_wait().expect("wait") {
            break s;
        }
        assert!(Instant::now() < deadline, "the SM did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(10));
    };
    let log = std::fs::read_to_string(&err_file).unwrap_or_default();
    assert!(exit.success(), "{exit}: {log}");
    assert!(log.contains("stopped by SIGTERM"), "{log}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn umad_sm_under_ibsim_survives_hup_at_start_usr1_and_usr2_and_stops_on_term() {
    if !require_ibsim() {
        return;
    }
    let net = root().join("examples/fabrics/fat-tree-2l-k4.net");
    let sim = Ibsim::start(&net).expect("ibsim");
    let (sock, err_file, policy) =
        (sim.dir().join("ibsm.sock"), sim.dir().join("ibsm.stderr"), sim.dir().join("partitions.conf"));
    std::fs::write(&policy, "Default=0x7fff : ALL=full ;\n").expect("policy");
    let mut sm = Daemon::spawn(
        sim.command(Some("h0"), env!("CARGO_BIN_EXE_ibsm"))
            .args(["--log-format", "json", "run", "--control"])
            .arg(&sock)
            .arg("--partitions")
            .arg(&policy)
            .env("RUST_LOG", "info"),
        Some(&err_file),
    );
    let pid = sm.pid();
    let all = bit(HUP) | bit(USR1) | bit(USR2);
    // Caught before the port is opened and the first sweep runs: SIGHUP at once.
    wait_for(&mut sm, "SIGHUP, SIGUSR1 and SIGUSR2 caught", &err_file, || caught(pid) & all == all);
    sm.send("HUP");
    wait_for(&mut sm, "the subnet up on the control socket", &err_file, || {
        status(&sock).is_some_and(|s| s["subnet_up"] == true)
    });
    wait_for(&mut sm, "the reload after SIGHUP", &err_file, || {
        std::fs::read_to_string(&err_file).unwrap_or_default().contains("configuration reloaded")
    });
    sm.send("USR1");
    sm.send("USR2");
    wait_for(&mut sm, "the SIGUSR1 and SIGUSR2 log lines", &err_file, || {
        let log = std::fs::read_to_string(&err_file).unwrap_or_default();
        log.contains("no log file to reopen") && log.contains("SIGUSR2 ignored")
    });
    assert!(status(&sock).is_some_and(|s| s["subnet_up"] == true), "the SM answers after SIGUSR1 and SIGUSR2");
    sm.send("TERM");
    let deadline = Instant::now() + Duration::from_secs(20);
    let exit = loop {
        if let Some(s) = sm.0.try_wait().expect("wait") {
            break s;
        }
        assert!(Instant::now() < deadline, "the SM did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(10));
    };
    let log = std::fs::read_to_string(&err_file).unwrap_or_default();
    assert!(exit.success(), "{exit}: {log}");
}
