//! `node-name-map` in the running SM, end to end: `ibsm run --sim` with a configuration naming
//! infiniband-diags' node name map shows the nodes it names by those names in `ibsm topology
//! show`, `ibsm routes dump` (OpenSM's dump, `subnet-lst`), `ibsm status` and the log line of a
//! disabled port, and keeps the NodeDescriptions of the others; a reload puts a changed map in
//! force without a sweep, and a map with a bad line is refused with its file and line while the
//! running names stay (and `ibsm run` refuses to start with it). The log lines of the core's events
//! that name a node carry the name too.

mod support;

use std::path::Path;
use std::time::Duration;

use ibsm_topology::Topology;
use support::cmd::{ibsm, tmp_dir};
use support::daemon::{Daemon, status};

const FABRIC: &str = "examples/fabrics/fat-tree-2l-k4.net";

/// `ibsm routes dump --socket` in `format`; its stdout.
fn dump(sock: &str, format: &str) -> String {
    let (code, out, e) = ibsm(&["routes", "dump", "--socket", sock, "--format", format]);
    assert_eq!(code, Some(0), "{e}");
    out
}

#[test]
fn the_map_names_nodes_everywhere_and_reloads() {
    let topo = Topology::load(&support::cmd::root().join(FABRIC)).expect("fabric");
    let guid = |name: &str| format!("{:#018x}", topo.nodes[topo.find(name).expect(name)].node_guid.0);
    let dir = tmp_dir("node-names");
    let map = dir.join("node-name-map");
    std::fs::write(&map, format!("# rack 1\n{} \"rack1 leaf-a\"\n{} node-001\n", guid("leaf-0"), guid("h0")))
        .expect("map");
    let conf = dir.join("ibsm.toml");
    std::fs::write(&conf, format!("node-name-map = {:?}\n", map.to_str().expect("utf-8"))).expect("config");
    let sock = dir.join("sock");
    let err = dir.join("stderr");
    let s = sock.to_str().expect("utf-8");
    let mut sm = Daemon::start(
        &["--log-format", "json", "run", "--sim", FABRIC, "--config", conf.to_str().expect("utf-8"), "--control", s],
        Some(&err),
        &[("RUST_LOG", "warn")],
    );
    sm.wait_up(&sock, Duration::from_secs(60));

    // The dumps: the named nodes by their names, the others by their NodeDescriptions.
    let lfts = dump(s, "opensm");
    assert!(lfts.contains(&format!("guid {} ('rack1 leaf-a'):", guid("leaf-0"))), "{lfts}");
    assert!(lfts.contains(": 'node-001'") && lfts.contains(": 'h1'"), "{lfts}");
    assert!(!lfts.contains("'leaf-0'") && !lfts.contains("'h0'"), "{lfts}");
    let lst = dump(s, "subnet-lst");
    assert!(lst.contains("{rack1 leaf-a}") && lst.contains("{node-001}") && lst.contains("{spine-0}"), "{lst}");
    let (code, topo_out, e) = ibsm(&["topology", "show", "--socket", s]);
    assert_eq!(code, Some(0), "{e}");
    assert!(topo_out.contains("rack1 leaf-a") && topo_out.contains("node-001"), "{topo_out}");

    // A changed map is in force after a reload, with no sweep.
    let sweeps = |st: &serde_json::Value| st["last_sweep"]["sweeps_done"].clone();
    let before = sweeps(&status(&sock).expect("status"));
    std::fs::write(&map, format!("{} rack9-leaf-z\n", guid("leaf-0"))).expect("map");
    let (code, out, e) = ibsm(&["reload", "--socket", s]);
    assert_eq!(code, Some(0), "{out}{e}");
    assert!(out.contains("applied node-name-map (no sweep needed)"), "{out}");
    let lfts = dump(s, "opensm");
    assert!(lfts.contains("('rack9-leaf-z'):") && lfts.contains(": 'h0'"), "{lfts}");
    assert_eq!(sweeps(&status(&sock).expect("status")), before, "no sweep for new names");

    // A bad line: refused with the file and line; the names in force stay.
    std::fs::write(&map, format!("{} ok\nspine-9\n", guid("leaf-0"))).expect("map");
    let (code, out, e) = ibsm(&["reload", "--socket", s]);
    assert_ne!(code, Some(0), "{out}");
    let at = format!("{}:2: ", map.display());
    assert!(e.contains(&at) || out.contains(&at), "refused at its line: {out}{e}");
    assert!(dump(s, "opensm").contains("('rack9-leaf-z'):"));

    // A port disabled by the node's name in the map; status and the log name it so.
    let (code, _, e) = ibsm(&["port", "disable", "rack9-leaf-z", "3", "--socket", s]);
    assert_eq!(code, Some(0), "{e}");
    let st = status(&sock).expect("status");
    assert_eq!(st["disabled_ports"][0]["desc"], "rack9-leaf-z", "{st}");
    let logged = |what: &str| std::fs::read_to_string(&err).unwrap_or_default().lines().any(|l| l.contains(what));
    support::ibsim::wait_for("the port-disabled line", Duration::from_secs(10), || logged("\"name\":\"rack9-leaf-z\""));

    // And at start: the daemon refuses to start with it.
    let (code, _, e) = ibsm(&["run", "--sim", FABRIC, "--node-name-map", map.to_str().expect("utf-8"), "--once"]);
    assert_eq!(code, Some(2), "{e}");
    assert!(e.contains(&at), "{e}");
    drop(sm);
    let _ = std::fs::remove_dir_all(Path::new(&dir));
}

/// The binary's log lines that name a node (here the performance manager's `port-errors`, for
/// both ends of a cable given an error rate) carry the map's name, beside the NodeDescription.
#[test]
fn log_lines_name_the_node_by_the_map() {
    let topo = Topology::load(&support::cmd::root().join(FABRIC)).expect("fabric");
    let leaf = topo.nodes[topo.find("leaf-0").expect("leaf-0")].node_guid.0;
    let dir = tmp_dir("node-names-log");
    let map = dir.join("node-name-map");
    std::fs::write(&map, format!("{leaf:#018x} \"rack1 leaf\"\n")).expect("map");
    let err = dir.join("stderr");
    let args = ["--log-format", "json", "run", "--sim", FABRIC, "--node-name-map", map.to_str().expect("utf-8")];
    let args: Vec<&str> = args.into_iter().chain(["--sim-link-errors", "leaf-0[3] symbol=50"]).collect();
    let sm = Daemon::start(&args, Some(&err), &[("RUST_LOG", "warn")]);
    let line =
        |l: &str| l.contains("\"error_id\":\"port-errors\"") && l.contains(&format!("\"node\":\"{leaf:#018x}\""));
    let mut found = String::new();
    support::ibsim::wait_for("leaf-0's port-errors line", Duration::from_secs(30), || {
        let text = std::fs::read_to_string(&err).unwrap_or_default();
        found = text.lines().find(|l| line(l)).unwrap_or_default().to_owned();
        !found.is_empty()
    });
    assert!(found.contains("\"name\":\"rack1 leaf\"") && found.contains("\"desc\":\"leaf-0\""), "{found}");
    drop(sm);
    let _ = std::fs::remove_dir_all(&dir);
}
