//! The `ibsm` binary as an operator uses it: exit statuses, the summary line, state files,
//! error messages that name file and line.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;

fn ibsm() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ibsm"))
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ibsm-cli-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples")
}

#[test]
fn run_once_on_the_builtin_fabric_reports_the_subnet_up() {
    let out = ibsm().args(["run", "--sim", "--once"]).output().expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "status {:?}, stdout {stdout}, stderr {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.starts_with("subnet up: 20 switches, 16 CAs, 36 end ports, 48 links;"), "{stdout}");
    assert!(stdout.contains("96 ports active, 0 not"), "{stdout}");
}

#[test]
fn state_dir_keeps_lids_across_runs_in_opensm_format() {
    let d = tmpdir("state");
    let net = examples().join("fabrics/torus-3x3.net");
    let run = |seed: &str| {
        let out = ibsm()
            .args(["run", "--once", "--seed", seed, "--sim"])
            .arg(&net)
            .arg("--state-dir")
            .arg(&d)
            .output()
            .expect("runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        std::fs::read_to_string(d.join("guid2lid")).expect("guid2lid written")
    };
    let first = run("1");
    // 9 switches + 9 CAs, one record each, OpenSM's layout.
    let records: Vec<&str> = first.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(records.len(), 18, "{first}");
    for r in &records {
        let f: Vec<&str> = r.split(' ').collect();
        assert!(f.len() == 3 && f[0].len() == 18 && f[1].len() == 6 && f[2].len() == 6, "record {r:?}");
    }
    // A second run (another seed, so another order of answers) keeps every LID.
    assert_eq!(run("99"), first);
    // The P_Key table layouts are kept too: one line per end port table (18) and per switch
    // port facing a CA (9), the default partition's full key at index 0.
    let pkeys = std::fs::read_to_string(d.join("pkeys")).expect("pkeys written");
    let lines: Vec<&str> = pkeys.lines().collect();
    assert_eq!(lines.len(), 27, "{pkeys}");
    assert!(lines.iter().all(|l| l.split(' ').nth(1) == Some("0xffff")), "{pkeys}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn imported_opensm_guid2lid_is_honoured() {
    let d = tmpdir("import");
    let net = examples().join("fabrics/fat-tree-2l-k4.net");
    // Let ibsm number the fabric once, then shift every LID by 100 as if OpenSM had chosen them.
    let out = ibsm().args(["run", "--once", "--sim"]).arg(&net).arg("--state-dir").arg(&d).output().expect("runs");
    assert!(out.status.success());
    let mine = std::fs::read_to_string(d.join("guid2lid")).expect("written");
    let mut shifted = String::new();
    for l in mine.lines() {
        let f: Vec<&str> = l.split(' ').collect();
        if f.len() != 3 {
            shifted.push('\n');
            continue;
        }
        let lo = u16::from_str_radix(&f[1][2..], 16).expect("hex") + 100;
        let hi = u16::from_str_radix(&f[2][2..], 16).expect("hex") + 100;
        writeln!(shifted, "{} 0x{lo:04x} 0x{hi:04x}", f[0]).expect("write to String");
    }
    std::fs::write(d.join("guid2lid"), &shifted).expect("write");
    let out = ibsm().args(["run", "--once", "--sim"]).arg(&net).arg("--state-dir").arg(&d).output().expect("runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(std::fs::read_to_string(d.join("guid2lid")).expect("read"), shifted);
    assert!(stdout.contains("SM LID 101"), "the SM's own port kept its imported LID: {stdout}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn bad_inputs_exit_2_with_file_line_and_reason() {
    let d = tmpdir("bad");
    let cfg = d.join("ibsm.toml");
    std::fs::write(&cfg, "lmc = 1\nrouting-engine = \"nope\"\n").expect("write");
    let out = ibsm().args(["run", "--sim", "--once", "--config"]).arg(&cfg).output().expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("{}:2:1: routing-engine: unknown engine", cfg.display())), "{err}");

    let net = d.join("bad.net");
    std::fs::write(&net, "Switch 4 \"s1\"\n[9] \"h1\"[1]\n").expect("write");
    let out = ibsm().args(["run", "--once", "--sim"]).arg(&net).output().expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("{}:2:", net.display())), "{err}");

    std::fs::write(d.join("guid2lid"), "0x0000000000000001 0x0001\n").expect("write");
    let out = ibsm().args(["run", "--once", "--sim", "--state-dir"]).arg(&d).output().expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("guid2lid:1:"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn sim_gen_writes_a_fabric_that_sim_info_and_run_accept() {
    let d = tmpdir("gen");
    let net = d.join("rails.net");
    let out = ibsm()
        .args(["sim", "gen", "rail-fat-tree", "--radix", "8", "--rails", "2", "-o"])
        .arg(&net)
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = ibsm().args(["sim", "info", "--json"]).arg(&net).output().expect("runs");
    assert!(out.status.success());
    let info = String::from_utf8_lossy(&out.stdout);
    assert!(info.contains("\"switches\":"), "{info}");
    let out = ibsm().args(["run", "--once", "--sim"]).arg(&net).output().expect("runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn partitions_show_convert_and_reject_with_file_line_and_column() {
    let d = tmpdir("partitions");
    let conf = d.join("partitions.conf");
    std::fs::write(
        &conf,
        "Default=0x7fff, ipoib, mtu=4, rate=7 : ALL=full ;\nstorage : 0x0002000000000001=full, ALL=limited ;\n",
    )
    .expect("write");
    let out = ibsm().args(["partitions", "show"]).arg(&conf).output().expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("0x7fff \"Default\" ipoib mtu=4 (2048 bytes) rate=7 (40 Gb/s)"), "{text}");
    assert!(text.contains("0x0001 \"storage\""), "the generated P_Key is shown: {text}");
    // partitions.conf -> TOML -> partitions.conf gives the same policy.
    let toml = ibsm().args(["partitions", "convert"]).arg(&conf).output().expect("runs");
    assert!(toml.status.success());
    let toml_path = d.join("policy.toml");
    std::fs::write(&toml_path, &toml.stdout).expect("write");
    let back = ibsm().args(["partitions", "convert"]).arg(&toml_path).output().expect("runs");
    assert!(back.status.success(), "{}", String::from_utf8_lossy(&back.stderr));
    let again = ibsm().args(["partitions", "show"]).arg(&toml_path).output().expect("runs");
    assert_eq!(String::from_utf8_lossy(&again.stdout), text, "the TOML form shows the same policy");
    let conf2 = d.join("back.conf");
    std::fs::write(&conf2, &back.stdout).expect("write");
    let shown = ibsm().args(["partitions", "show"]).arg(&conf2).output().expect("runs");
    assert_eq!(String::from_utf8_lossy(&shown.stdout), text);
    // Every error of a bad file, each as FILE:LINE:COL: reason, and exit status 2.
    let bad = d.join("bad.conf");
    std::fs::write(&bad, "Default=0x7fff : ALL=full ;\nbad=0x12 mtu=4096 : ALL ;\nx : 0xzz ;\n").expect("write");
    let out = ibsm().args(["partitions", "show"]).arg(&bad).output().expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(lines[0].starts_with(&format!("{}:2:10: ", bad.display())), "{err}");
    assert!(lines[1].starts_with(&format!("{}:3:5: ", bad.display())), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn topology_show_and_dot_describe_a_fabric_by_tier() {
    let net = examples().join("fabrics/fat-tree-3l-k4.net");
    let out = ibsm().args(["topology", "show", "--net"]).arg(&net).output().expect("runs");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let heads: Vec<&str> = text.lines().filter(|l| !l.starts_with(' ')).collect();
    assert_eq!(heads, ["tier 3: 4 switches", "tier 2: 8 switches", "tier 1: 8 switches", "CAs: 16"], "{text}");
    assert!(text.contains("  core-0 (0x0002000000000000): [1] agg-0[3] 4xSDR,"), "{text}");
    // infiniband-diags' node name map: core-0 and its peer agg-0 shown by their mapped names.
    let map = std::env::temp_dir().join(format!("ibsm-cli-nnm-{}", std::process::id()));
    std::fs::write(&map, "0x0002000000000000 \"row1 core\"\n# agg-0\n0x0002000000000400 agg-zero\n").expect("map");
    let out =
        ibsm().args(["topology", "show", "--net"]).arg(&net).arg("--node-name-map").arg(&map).output().expect("runs");
    let named = String::from_utf8_lossy(&out.stdout);
    assert!(named.contains("  row1 core (0x0002000000000000): [1] agg-zero[3] 4xSDR,"), "{named}");
    let _ = std::fs::remove_file(&map);
    let out = ibsm().args(["topology", "show", "--json", "--net"]).arg(&net).output().expect("runs");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["tiers"].as_array().map(Vec::len), Some(3));
    assert_eq!(v["cas"].as_array().map(Vec::len), Some(16));
    let out = ibsm().args(["topology", "dot", "--net"]).arg(&net).output().expect("runs");
    let dot = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(dot.starts_with("graph fabric {") && dot.matches(" -- ").count() == 48, "{dot}");
    // Rendered by Graphviz when it is installed.
    if let Ok(mut child) = Command::new("dot")
        .arg("-Tsvg")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
    {
        use std::io::Write as _;
        if let Some(mut stdin) = child.stdin.take() {
            stdin.write_all(dot.as_bytes()).expect("writes");
        }
        let svg = child.wait_with_output().expect("dot runs");
        assert!(svg.status.success() && String::from_utf8_lossy(&svg.stdout).contains("<svg"));
    } else {
        eprintln!("Graphviz not installed: the DOT text was checked, not rendered");
    }
}

#[test]
fn config_check_lists_every_error_and_show_names_each_source() {
    let dir = tmpdir("config");
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "lmc = 9\nmax-smps = 4\n").expect("write");
    let out = ibsm().args(["config", "check"]).arg(&bad).output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    let b = bad.display();
    assert!(
        text.starts_with(&format!("{b}:1:1: lmc: must be 0..=7, found 9\n{b}:2:1: max-smps: unknown field")),
        "{text}"
    );
    let out = ibsm().args(["config", "check"]).arg(examples().join("ibsm.toml")).output().expect("runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    let out = ibsm()
        .args(["config", "show", "--config"])
        .arg(examples().join("ibsm.toml"))
        .env("IBSM_LMC", "1")
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("lmc = 1  # env\n") && text.contains("smp-retries = 3  # file\n"), "{text}");
    assert!(text.contains("# state-dir: unset  # default\n"), "{text}");
    // The environment reaches `ibsm run` too.
    let out = ibsm().args(["run", "--sim", "--once", "--no-control"]).env("IBSM_LMC", "1").output().expect("runs");
    assert!(String::from_utf8_lossy(&out.stdout).contains("LMC 1,"), "{}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn systemd_units_verify_and_the_sm_says_ready_on_the_notify_socket() {
    // The units, with ExecStart pointing at this build, pass `systemd-analyze verify`.
    let dist = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("dist/systemd");
    let dir = tmpdir("units");
    // Not installed is a failure, not a skip: `.ci/run` installs Debian's `systemd` for it.
    assert!(
        Command::new("systemd-analyze").arg("--version").output().is_ok_and(|o| o.status.success()),
        "systemd-analyze is needed to verify the units (Debian: apt-get install systemd)"
    );
    for (src, name) in [("ibsm.service", "ibsm.service"), ("ibsm@.service", "ibsm@mlx5_0-1.service")] {
        let text = std::fs::read_to_string(dist.join(src)).expect("unit");
        assert!(text.contains("Type=notify") && text.contains("WatchdogSec="), "{src}");
        std::fs::write(dir.join(name), text.replace("/usr/bin/ibsm", env!("CARGO_BIN_EXE_ibsm"))).expect("write");
        let out = Command::new("systemd-analyze").arg("verify").arg(dir.join(name)).output().expect("runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && !err.contains(name), "{name}: {err}");
    }
    // READY=1 with the state once the first sweep is done (here on the simulated fabric).
    let path = dir.join("notify");
    let listener = std::os::unix::net::UnixDatagram::bind(&path).expect("bind");
    listener.set_read_timeout(Some(std::time::Duration::from_secs(30))).expect("timeout");
    let out =
        ibsm().args(["run", "--sim", "--once", "--no-control"]).env("NOTIFY_SOCKET", &path).output().expect("runs");
    assert!(out.status.success());
    let mut buf = [0u8; 512];
    let n = listener.recv(&mut buf).expect("a notification");
    assert_eq!(String::from_utf8_lossy(&buf[..n]), "READY=1\nSTATUS=master (simulated fabric): subnet up");
}

#[test]
fn under_json_logging_the_daemon_writes_only_json_events_and_human_logs_have_no_colour_in_a_pipe() {
    let out = ibsm().args(["--log-format", "json", "run", "--once", "--no-control", "--sim"]).output().expect("runs");
    assert!(out.status.success());
    assert!(out.stdout.is_empty(), "nothing on stdout: {}", String::from_utf8_lossy(&out.stdout));
    let err = String::from_utf8_lossy(&out.stderr);
    let events: Vec<serde_json::Value> =
        err.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"))).collect();
    let up = events.iter().find(|v| v["message"] == "subnet up").unwrap_or_else(|| panic!("a subnet-up event: {err}"));
    assert_eq!((up["level"].as_str(), up["target"].as_str()), (Some("INFO"), Some("ibsm::summary")));
    assert_eq!(
        (up["switches"].as_u64(), up["cas"].as_u64(), up["complete"].as_bool()),
        (Some(20), Some(16), Some(true))
    );
    assert!(up["smps"].as_u64().is_some_and(|n| n > 0) && up["fabric_ns"].as_u64().is_some());

    // Human format into a pipe: a warning (ftree declines a random graph), without ANSI codes.
    let net = examples().join("fabrics/random-8sw.net");
    let out = ibsm().args(["run", "--once", "--no-control", "--sim"]).arg(&net).output().expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("WARN"), "{err}");
    assert!(!err.contains('\u{1b}'), "no colour codes in a pipe: {err:?}");
}

#[test]
fn json_logs_carry_an_error_id_on_every_warning_and_the_readme_lists_each() {
    // ftree declines a random graph: a warning.
    let net = examples().join("fabrics/random-8sw.net");
    let out = ibsm()
        .args(["--log-format", "json", "run", "--once", "--no-control", "--sim"])
        .arg(&net)
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err.lines().next().expect("a warning: ftree declines the random graph");
    let v: serde_json::Value = serde_json::from_str(line).expect("one JSON object per line");
    assert_eq!((v["level"].as_str(), v["error_id"].as_str()), (Some("WARN"), Some("engine-declined")), "{line}");
    assert!(v["ts"].as_str().is_some_and(|t| t.ends_with('Z')) && v["message"].is_string(), "{line}");

    // Every warning and error the code emits names its error_id, and the operator guide's Logs
    // table (once the README's) lists it.
    let readme = std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/operator-guide.md"))
        .expect("docs/operator-guide.md");
    let mut ids = 0;
    let mut stack = vec![PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            for (at, _) in text.match_indices("tracing::warn!(").chain(text.match_indices("tracing::error!(")) {
                let call = &text[at..text.len().min(at + 200)];
                let id = call.split("error_id = \"").nth(1).and_then(|r| r.split('"').next());
                let Some(id) = id else { panic!("{}: a warning without error_id: {call}", p.display()) };
                assert!(readme.contains(&format!("`{id}`")), "docs/operator-guide.md lists error_id {id}");
                ids += 1;
            }
        }
    }
    assert!(ids >= 20, "{ids}");
}

/// OpenSM's own default configuration (`opensm -c FILE` writes every option it has) imports
/// into a file `ibsm config check` accepts, with every option either mapped or listed with a
/// reason, and none unknown.
#[test]
fn opensms_own_configuration_imports_cleanly() {
    let Some(opensm) =
        ["/usr/sbin/opensm", "/usr/bin/opensm", "/sbin/opensm"].into_iter().find(|p| std::path::Path::new(p).exists())
    else {
        eprintln!("opensm not installed: skipped");
        return;
    };
    let dir = std::env::temp_dir().join(format!("ibsm-import-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let conf = dir.join("opensm.conf");
    let made = std::process::Command::new(opensm).arg("-c").arg(&conf).output().expect("opensm -c");
    assert!(conf.exists(), "opensm -c wrote nothing: {made:?}");
    let options = std::fs::read_to_string(&conf)
        .expect("read")
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .count();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ibsm"))
        .args(["config", "import-opensm"])
        .arg(&conf)
        .output()
        .expect("import");
    assert_eq!(out.status.code(), Some(0));
    let toml = String::from_utf8_lossy(&out.stdout).into_owned();
    let mapped = toml.lines().filter(|l| !l.starts_with('#') && l.contains(" = ")).count();
    let left = toml.lines().filter(|l| l.starts_with("#   ")).count();
    assert_eq!(mapped + left, options, "every OpenSM option is accounted for:\n{toml}");
    assert!(options > 100, "{options} options");
    assert!(!toml.contains("unknown to ibsm"), "{toml}");
    let file = dir.join("ibsm.toml");
    std::fs::write(&file, &toml).expect("write");
    let check = std::process::Command::new(env!("CARGO_BIN_EXE_ibsm"))
        .args(["config", "check"])
        .arg(&file)
        .output()
        .expect("check");
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(check.status.code(), Some(0), "{}", String::from_utf8_lossy(&check.stdout));
}

#[test]
fn offline_commands_refuse_devices_instead_of_reading_them_forever() {
    use std::time::{Duration, Instant};
    let start = Instant::now();
    let out = ibsm().args(["config", "import-opensm", "/dev/zero"]).output().expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a regular file"), "{out:?}");
    let net = examples().join("fabrics/fat-tree-2l-k4.net");
    let out = ibsm()
        .args(["routes", "check", "--topology"])
        .arg(&net)
        .args(["--lfts", "/dev/urandom"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a regular file"), "{out:?}");
    assert!(start.elapsed() < Duration::from_secs(10), "refused at once");
}
