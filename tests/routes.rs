//! `ibsm routes`: the OpenSM dump format checked byte for byte against a real
//! `opensm-lfts.dump` (OpenSM 3.3.23 on ibsim, fabric `examples/fabrics/fat-tree-2l-k4.net`,
//! captured with `opensm -o -D 0x43 --dump_files_dir DIR`), and the CLI's dump/check commands.

use std::path::PathBuf;
use std::process::Command;

use ibsm::opensm::lfts_dump;
use ibsm::routes::{dump, guid2lid_from_dump, plan, routes_from_dump};
use ibsm_topology::Topology;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

const OPENSM_DUMP: &str = include_str!("data/opensm-lfts.fat-tree-2l-k4.dump");
/// `ibroute <lid>` for each switch of the same fabric, same OpenSM routing, in GUID order
/// (infiniband-diags 44 under ibsim).
const IBROUTE: &str = include_str!("data/ibroute.fat-tree-2l-k4.txt");

#[test]
fn our_opensm_format_reproduces_a_real_opensm_dump_byte_for_byte() {
    let topo = Topology::load(&root().join("examples/fabrics/fat-tree-2l-k4.net")).expect("topology");
    let dumped = lfts_dump::parse(OPENSM_DUMP).expect("OpenSM's dump parses");
    assert_eq!(dumped.len(), 6);
    // Number the fabric as OpenSM did and take its tables; our printer must give its text back.
    let p = plan(&topo, 0, guid2lid_from_dump(&dumped, 0), None);
    let routes = routes_from_dump(&p, &dumped);
    let ours = dump::opensm(&p, &routes, None);
    if ours != OPENSM_DUMP {
        for (i, (a, b)) in ours.lines().zip(OPENSM_DUMP.lines()).enumerate() {
            assert_eq!(a, b, "first difference at line {}", i + 1);
        }
        panic!("same lines, different lengths: {} vs {}", ours.len(), OPENSM_DUMP.len());
    }
}

#[test]
fn our_ibroute_format_reproduces_real_ibroute_output_byte_for_byte() {
    let topo = Topology::load(&root().join("examples/fabrics/fat-tree-2l-k4.net")).expect("topology");
    let dumped = lfts_dump::parse(OPENSM_DUMP).expect("OpenSM's dump parses");
    let p = plan(&topo, 0, guid2lid_from_dump(&dumped, 0), None);
    let ours = dump::ibroute(&p, &routes_from_dump(&p, &dumped), None);
    for (i, (a, b)) in ours.lines().zip(IBROUTE.lines()).enumerate() {
        assert_eq!(a, b, "first difference at line {}", i + 1);
    }
    assert_eq!(ours, IBROUTE);
}

fn ibsm(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ibsm")).args(args).current_dir(root()).output().expect("runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn check_accepts_opensm_tables_and_every_engine_on_every_example() {
    let (ok, out, err) = ibsm(&[
        "routes",
        "check",
        "--topology",
        "examples/fabrics/fat-tree-2l-k4.net",
        "--lfts",
        "tests/data/opensm-lfts.fat-tree-2l-k4.dump",
    ]);
    assert!(ok, "{out}{err}");
    assert!(out.contains("56 checked, 56 reachable"), "{out}");
    for f in std::fs::read_dir(root().join("examples/fabrics")).expect("dir").filter_map(Result::ok) {
        let path = f.path();
        if path.extension().is_none_or(|e| e != "net") {
            continue;
        }
        let p = path.to_string_lossy().into_owned();
        // The CLI plumbing: every engine's JSON report parses and every CA pair is reachable.
        // (Engine quality, switch-LID routes and credit loops are the routing crate's tests.)
        for engine in ["minhop", "updn", "ftree,updn,minhop"] {
            let (_, out, err) = ibsm(&["routes", "check", "--topology", &p, "--engine", engine, "--json"]);
            let v: serde_json::Value =
                serde_json::from_str(&out).unwrap_or_else(|e| panic!("{p} {engine}: {e}: {out}{err}"));
            assert_eq!(v["version"], 1);
            assert_eq!(v["ca_pairs"]["checked"], v["ca_pairs"]["reachable"], "{p} {engine}: {out}");
            assert!(v["ca_pairs"]["checked"].as_u64().is_some_and(|n| n > 0), "{p} {engine}");
        }
    }
}

#[test]
fn a_broken_table_fails_the_check() {
    // Drop one LID line from OpenSM's dump: some pair must become unreachable, exit status 1.
    let dir = std::env::temp_dir().join(format!("ibsm-routes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let broken: String = OPENSM_DUMP.lines().filter(|l| !l.starts_with("0x0016 002")).flat_map(|l| [l, "\n"]).collect();
    assert_ne!(broken.len(), OPENSM_DUMP.len());
    let f = dir.join("broken.dump");
    std::fs::write(&f, broken).expect("write");
    let (ok, out, _) =
        ibsm(&["routes", "check", "--topology", "examples/fabrics/fat-tree-2l-k4.net", "--lfts", &f.to_string_lossy()]);
    assert!(!ok, "{out}");
    assert!(out.contains("black hole"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn credit_loops_between_cas_fail_the_check_and_management_only_loops_are_reported() {
    // The shipped degraded tree: ftree's loops there need switch management traffic only.
    let net = "examples/fabrics/fat-tree-3l-k4-degraded.net";
    let (ok, out, err) = ibsm(&["routes", "check", "--topology", net, "--no-shifts"]);
    assert!(ok, "exit 0: {out}{err}");
    assert!(out.contains("none between CAs; in switch management traffic only: FOUND"), "{out}");
    let (ok, out, _) = ibsm(&["routes", "check", "--topology", net, "--no-shifts", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert!(ok && v["sound"] == true && v["clean"] == false, "{out}");
    assert_eq!((v["credit_loops"].as_str(), v["credit_loops_between_cas"].as_str()), (Some("found"), Some("none")));
    // updn has none at all.
    let (ok, out, _) = ibsm(&["routes", "check", "--topology", net, "--no-shifts", "--engine", "updn", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert!(ok && v["clean"] == true && v["credit_loops"] == "none", "{out}");
    // minhop on a mesh: loops between CAs, exit 1.
    let (ok, out, _) = ibsm(&[
        "routes",
        "check",
        "--topology",
        "examples/fabrics/mesh-2x2x2.net",
        "--engine",
        "minhop",
        "--no-shifts",
    ]);
    assert!(!ok && out.contains("credit loops        FOUND"), "{out}");
}

#[test]
fn dump_formats_and_switch_filter() {
    let t = "examples/fabrics/fat-tree-3l-k4.net";
    let (ok, all, _) = ibsm(&["routes", "dump", "--topology", t]);
    assert!(ok);
    assert_eq!(all.matches("Unicast lids").count(), 20);
    let (ok, one, _) = ibsm(&["routes", "dump", "--topology", t, "--switch", "core-0"]);
    assert!(ok);
    assert_eq!(one.matches("Unicast lids").count(), 1);
    assert!(one.contains("('core-0')"), "{one}");
    // Every dumped table names all 36 LIDs of the fabric (16 CAs + 20 switches).
    assert!(one.lines().filter(|l| l.starts_with("0x")).count() == 36, "{one}");
    let (ok, js, _) = ibsm(&["routes", "dump", "--topology", t, "--format", "json", "--engine", "updn"]);
    assert!(ok);
    let v: serde_json::Value = serde_json::from_str(&js).expect("json");
    assert_eq!((v["version"].as_u64(), v["engine"].as_str()), (Some(1), Some("updn")));
    assert_eq!(v["switches"].as_array().map(Vec::len), Some(20));
    let (ok, st, _) = ibsm(&["routes", "dump", "--topology", t, "--format", "stats"]);
    assert!(ok && st.contains("switches 20") && st.contains("routing "), "{st}");
    let (ok, _, err) = ibsm(&["routes", "dump", "--topology", t, "--engine", "nosuch"]);
    assert!(!ok && err.contains("nosuch"), "{err}");
}
