//! The running SM's control socket, end to end: `ibsm run` (on the simulated fabric, and on
//! ibsim through umad) as a child process, queried with `ibsm routes dump/check --socket` and with
//! raw requests. The live tables must be exactly what the offline `routes dump` computes with
//! the SM's own `guid2lid` and engine chain; garbage must get an error and leave the SM
//! answering; SIGTERM must end the SM with status 0 and remove the socket.

mod support;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::cmd::{ibsm, root, tmp_dir};
use support::ibsim::{Ibsim, require_ibsim};

const FABRIC: &str = "examples/fabrics/fat-tree-2l-k4.net";
/// The SM's default chain, given to the offline dump so both route alike.
const CHAIN: &str = "ftree,updn,minhop";

fn ibsm_bin() -> &'static str {
    env!("CARGO_BIN_EXE_ibsm")
}

/// One request line, the raw answer line.
fn raw(sock: &Path, request: &[u8]) -> String {
    let mut s = UnixStream::connect(sock).expect("connects");
    s.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    s.write_all(request).expect("writes");
    let mut answer = String::new();
    s.read_to_string(&mut answer).expect("reads");
    answer
}

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// Waits until `sock` accepts connections and the SM says the subnet is up.
fn wait_up(sock: &Path, alive: &mut dyn FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(alive(), "the SM exited before its control socket came up");
        assert!(Instant::now() < deadline, "no control socket at {}", sock.display());
        if sock.exists() && json(raw(sock, b"{\"query\":\"status\"}\n").trim())["subnet_up"] == true {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every check that does not depend on where the SM runs.
fn check_live_sm(sock: &Path, state: &Path) {
    let s = sock.to_str().expect("utf-8 path");
    let g2l = state.join("guid2lid");
    let g2l = g2l.to_str().expect("utf-8 path");

    // The live dump equals the offline one with the SM's LIDs and engine chain, in every format
    // that has no timings, and for one switch.
    for extra in
        [&["--format", "opensm"][..], &["--format", "ibroute"], &["--format", "json"], &["--switch", "spine-1"]]
    {
        let mut live_args = vec!["routes", "dump", "--socket", s];
        live_args.extend_from_slice(extra);
        let (code, live, err) = ibsm(&live_args);
        assert_eq!(code, Some(0), "{live_args:?}: {err}");
        let mut off_args = vec!["routes", "dump", "--topology", FABRIC, "--engine", CHAIN, "--guid2lid", g2l];
        off_args.extend_from_slice(extra);
        let (code, offline, err) = ibsm(&off_args);
        assert_eq!(code, Some(0), "{off_args:?}: {err}");
        assert!(live.contains("Unicast lids") || live.contains("\"switches\""), "{live}");
        assert_eq!(live, offline, "live and offline dumps differ for {extra:?}");
    }
    let (code, stats, err) = ibsm(&["routes", "dump", "--socket", s, "--format", "stats"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(stats.contains("switches 6\n") && stats.contains("ca ports 8\n"), "{stats}");

    // The live tables pass the analysis.
    let (code, out, err) = ibsm(&["routes", "check", "--socket", s, "--json"]);
    assert_eq!(code, Some(0), "{out}{err}");
    let v = json(&out);
    assert_eq!(v["clean"], true, "{out}");
    assert_eq!(v["ca_pairs"]["checked"], 56, "{out}");
    assert_eq!(v["ca_pairs"]["reachable"], 56, "{out}");
    assert_eq!(v["credit_loops"], "none", "{out}");

    // Status.
    let st = json(raw(sock, b"{\"query\":\"status\"}\n").trim());
    assert_eq!((st["state"].as_str(), st["subnet_up"].as_bool()), (Some("master"), Some(true)), "{st}");
    assert_eq!(st["last_sweep"]["switches"], 6, "{st}");
    assert_eq!(
        (st["m_keys"]["mode"].as_str(), st["m_keys"]["violations"].as_array().map(Vec::len)),
        (Some("off"), Some(0))
    );
    // `ibsm status` prints the same, for people and as JSON.
    let (code, out, err) = ibsm(&["status", "--socket", s]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.starts_with("state master (phase up), subnet up\n"), "{out}");
    assert!(out.contains("6 switches, 8 CAs") && out.contains("M_Keys off (protect 1); bad M_Key traps: 0"), "{out}");
    assert!(out.contains("(LID 1, priority 0); this SM's priority 0"), "the master is this SM: {out}");
    assert_eq!(st["master"]["lid"], 1, "{st}");
    // A healthy fabric: no problems, and the human form says so.
    assert_eq!(st["problems"]["unrouted_lids_total"], 0, "{st}");
    assert_eq!(st["problems"]["ports_not_active"], 0, "{st}");
    assert!(st["last_sweep"]["age_ms"].is_u64(), "{st}");
    assert!(out.contains("routed by ftree") && out.contains("problems: none\n"), "{out}");
    let (code, out, err) = ibsm(&["status", "--socket", s, "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let later = json(out.trim());
    let age = |v: &serde_json::Value| v["last_sweep"]["age_ms"].as_u64().expect("age_ms");
    assert!(age(&later) >= age(&st), "the sweep only gets older: {out}");
    let without_age = |v: &serde_json::Value| {
        let mut l = v["last_sweep"].clone();
        l["age_ms"] = serde_json::Value::Null;
        l
    };
    assert_eq!(without_age(&later), without_age(&st), "{out}");

    // Garbage gets an error, and the SM keeps answering.
    for bad in [&b"garbage\n"[..], b"{\"query\":\"reboot\"}\n", b"\xff\xfe\n", &[b'x'; 10_000], b""] {
        let a = raw(sock, bad);
        assert!(json(a.trim())["error"].is_string(), "{a}");
    }
    let st = json(raw(sock, b"{\"query\":\"status\"}\n").trim());
    assert_eq!(st["subnet_up"], true, "{st}");
}

/// A child `ibsm run` killed if the test fails half-way.
struct Sm(Child);

impl Drop for Sm {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn sigterm(pid: u32) {
    let st = Command::new("kill").arg("-TERM").arg(pid.to_string()).status().expect("kill runs");
    assert!(st.success());
}

#[test]
fn sim_sm_serves_live_routes_and_status_until_sigterm() {
    let dir = tmp_dir("sim");
    let (sock, state) = (dir.join("sock"), dir.join("state"));
    let child = Command::new(ibsm_bin())
        .args(["run", "--sim", FABRIC, "--state-dir"])
        .arg(&state)
        .arg("--control")
        .arg(&sock)
        .current_dir(root())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("stderr")).expect("stderr file"))
        .spawn()
        .expect("ibsm run starts");
    let mut sm = Sm(child);
    wait_up(&sock, &mut || sm.0.try_wait().ok().flatten().is_none());
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&sock).expect("socket").permissions());
    assert_eq!(mode & 0o777, 0o600);

    check_live_sm(&sock, &state);

    // The discovered fabric against the expected cabling: as planned; against another plan,
    // the differences and exit status 1.
    let s = sock.to_str().expect("utf-8");
    let (code, out, err) = ibsm(&["topology", "diff", FABRIC, "--socket", s]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(out, "as expected: 14 nodes, 16 links\n");
    let other = dir.join("other.net");
    let text = std::fs::read_to_string(root().join(FABRIC)).expect("fabric");
    // The plan cables h0 and h1 the other way round on leaf-0.
    let swapped = text
        .replace("[1]\t\"h0\"[1]", "@A")
        .replace("[2]\t\"h1\"[1]", "[2]\t\"h0\"[1]")
        .replace("@A", "[1]\t\"h1\"[1]")
        .replace("(1000000000001)\t\"leaf-0\"[1]", "(1000000000001)\t\"leaf-0\"[2]")
        .replace("(1000000000101)\t\"leaf-0\"[2]", "(1000000000101)\t\"leaf-0\"[1]");
    assert_ne!(swapped, text, "the plan was changed");
    std::fs::write(&other, swapped).expect("write");
    let (code, out, err) = ibsm(&["topology", "diff", other.to_str().expect("utf-8"), "--socket", s]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(out.contains("miscabled") && out.ends_with("difference(s)\n"), "{out}");
    // The live view by tier, with the LIDs the SM gave, and as DOT.
    let (code, out, err) = ibsm(&["topology", "show", "--socket", s]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.starts_with("tier 2: 2 switches\n") && out.contains("CAs: 8\n"), "{out}");
    assert!(out.lines().filter(|l| l.starts_with("  ")).all(|l| l.contains(" LID ")), "every node has its LID: {out}");
    let (code, out, err) = ibsm(&["topology", "dot", "--socket", s]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out.matches(" -- ").count(), 16, "{out}");

    // A second SM cannot take the socket while the first answers there.
    let (code, _, err) = ibsm(&["run", "--sim", FABRIC, "--once", "--control", sock.to_str().expect("utf-8")]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("another SM is listening"), "{err}");

    sigterm(sm.0.id());
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = sm.0.try_wait().expect("wait") {
            break s;
        }
        assert!(Instant::now() < deadline, "the SM did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    let stderr = std::fs::read_to_string(dir.join("stderr")).unwrap_or_default();
    assert!(status.success(), "{status}: {stderr}");
    assert!(stderr.contains("stopped by SIGTERM"), "{stderr}");
    assert!(!sock.exists(), "socket removed on exit");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn socket_and_topology_are_exclusive_and_one_is_required() {
    let (code, _, err) = ibsm(&["routes", "dump", "--socket", "/nonexistent", "--topology", FABRIC]);
    assert_eq!(code, Some(2), "{err}");
    let (code, _, err) = ibsm(&["routes", "check", "--json"]);
    assert_eq!(code, Some(2), "{err}");
    let (code, _, err) = ibsm(&["routes", "check", "--socket", "/nonexistent/sock", "--engine", "updn"]);
    assert_eq!(code, Some(2), "{err}");
    // Nobody there: a clear failure, not a panic.
    let (code, _, err) = ibsm(&["routes", "dump", "--socket", "/nonexistent/sock"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("/nonexistent/sock") && err.contains("connecting"), "{err}");
}

#[test]
fn umad_sm_under_ibsim_serves_live_routes_until_sigterm() {
    if !require_ibsim() {
        return;
    }
    let net = root().join(FABRIC);
    let mut sim = Ibsim::start(&net).expect("ibsim starts");
    let dir = tmp_dir("ibsim");
    let (sock, state) = (dir.join("sock"), dir.join("state"));
    let args = ["run", "--state-dir", state.to_str().expect("utf-8"), "--control", sock.to_str().expect("utf-8")];
    let mut sm = sim.spawn_at(Some("h0"), ibsm_bin(), &args).expect("ibsm starts under ibsim");
    wait_up(&sock, &mut || sm.try_wait().ok().flatten().is_none());

    check_live_sm(&sock, &state);
    names_as_ibroute_gives_them(&sim, &sock, &dir);

    sm.terminate().expect("SIGTERM");
    let exit = sm.wait_timeout(Duration::from_secs(10)).expect("wait");
    assert!(exit.is_some_and(|s| s.success()), "exit {exit:?}:\n{}", sm.stderr());
    assert!(!sock.exists(), "socket removed on exit");
    drop(sm);
    drop(sim);
    let _ = std::fs::remove_dir_all(&dir);
}

/// With a node name map, the live `routes dump --format ibroute` is what infiniband-diags'
/// `ibroute --node-name-map` prints for every switch, byte for byte (the mapped names in the
/// headers and in the destinations, the others as NodeDescriptions).
fn names_as_ibroute_gives_them(sim: &Ibsim, sock: &Path, dir: &Path) {
    let map = dir.join("node-name-map");
    // spine-0, a leaf and one host; the rest keep their NodeDescriptions.
    let text = "# names\n0x0002000000000000 \"SPINE ZERO\"\n0x0002000000000300 \"rack1-leaf1\"\n0x0001000000000000 host-zero\n";
    std::fs::write(&map, text).expect("map");
    let m = map.to_str().expect("utf-8");
    let s = sock.to_str().expect("utf-8");
    let (code, ours, err) = ibsm(&["routes", "dump", "--socket", s, "--format", "ibroute", "--node-name-map", m]);
    assert_eq!(code, Some(0), "{err}");
    assert!(ours.contains("(SPINE ZERO):") && ours.contains("'host-zero'") && ours.contains("'rack1-leaf1'"), "{ours}");
    let mut theirs = String::new();
    for header in ours.lines().filter(|l| l.starts_with("Unicast lids")) {
        let lid = header.split("switch Lid ").nth(1).and_then(|r| r.split(' ').next()).expect("a LID");
        let out = sim.run_at(Some("h3"), "ibroute", &["--node-name-map", m, lid]).expect("ibroute runs");
        assert!(out.success(), "{}", out.describe());
        theirs.push_str(&out.stdout);
    }
    assert_eq!(ours, theirs, "ibsm's dump and ibroute's differ");
    // `--switch` takes the mapped name.
    let (code, one, err) =
        ibsm(&["routes", "dump", "--socket", s, "--format", "ibroute", "--node-name-map", m, "--switch", "SPINE ZERO"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(one.starts_with("Unicast lids [0x0-0xe] of switch Lid 4 guid 0x0002000000000000 (SPINE ZERO):"), "{one}");
}

/// One HTTP GET of `path` from `addr`: (status line, body).
fn http_get(addr: &str, path: &str) -> (String, String) {
    let mut s = std::net::TcpStream::connect(addr).expect("connects");
    s.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes()).expect("writes");
    let mut text = String::new();
    s.read_to_string(&mut text).expect("reads");
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (head.lines().next().unwrap_or("").to_owned(), body.to_owned())
}

#[test]
fn metrics_endpoint_serves_the_prometheus_text_format() {
    use std::io::BufRead as _;
    let child = Command::new(ibsm_bin())
        .args(["run", "--sim", FABRIC, "--no-control", "--metrics", "127.0.0.1:0"])
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("ibsm run starts");
    let mut sm = Sm(child);
    let stdout = sm.0.stdout.take().expect("stdout");
    let mut lines = std::io::BufReader::new(stdout).lines();
    let first = lines.next().and_then(Result::ok).unwrap_or_default();
    // Keep reading what it prints, so that it never writes into a closed pipe.
    std::thread::spawn(move || lines.for_each(drop));
    let addr = first
        .strip_prefix("metrics: http://")
        .and_then(|r| r.strip_suffix("/metrics"))
        .expect("the address line")
        .to_owned();
    // Scrapes are answered once the SM is past its sweeps; wait for master.
    let deadline = Instant::now() + Duration::from_secs(60);
    let body = loop {
        let (status, body) = http_get(&addr, "/metrics");
        if status.contains("200") && body.contains("ibsm_sm_state 3\n") {
            break body;
        }
        assert!(Instant::now() < deadline, "{status}\n{body}");
        std::thread::sleep(Duration::from_millis(50));
    };
    // The text format: HELP and TYPE before each family, samples `name{labels} value`.
    let mut families = std::collections::BTreeSet::new();
    for line in body.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut w = rest.split(' ');
            families.insert(w.next().unwrap_or("").to_owned());
            assert!(matches!(w.next(), Some("gauge" | "counter")), "{line}");
        } else if !line.starts_with("# HELP ibsm_") {
            let (name, value) = line.rsplit_once(' ').expect("name value");
            let family = name.split('{').next().unwrap_or("");
            assert!(family.starts_with("ibsm_") && families.contains(family), "{line}");
            assert!(value.parse::<f64>().is_ok(), "{line}");
            assert!(!name.contains('{') || name.ends_with("\"}"), "{line}");
        }
    }
    for want in [
        "ibsm_smps_sent_total",
        "ibsm_fabric_size",
        "ibsm_ports",
        "ibsm_last_sweep_phase_seconds",
        "ibsm_sa_requests_total",
        "ibsm_sa_answers_total",
        "ibsm_smps_timed_out_total",
        "ibsm_sweeps_total",
        "ibsm_takeovers_total",
        "ibsm_cabling_differences",
        "ibsm_quarantined_guids",
    ] {
        assert!(families.contains(want), "{want} missing:\n{body}");
    }
    assert!(body.contains("ibsm_fabric_size{kind=\"switches\"} 6\n"), "{body}");
    // `run --sim` sweeps twice; nothing failed over.
    assert!(body.contains("ibsm_sweeps_total{kind=\"heavy\"} 2\n"), "{body}");
    assert!(body.contains("ibsm_takeovers_total 0\n"), "{body}");
    assert!(http_get(&addr, "/other").0.contains("404"));
    sigterm(sm.0.id());
    let _ = sm.0.wait();
}
