//! `ibsm routes` with a layered engine (`dfsssp`), offline: `routes check` judges the channel
//! dependency graph of each VL (a pair's VL is its layer's SL) and `routes dump --format sl`
//! gives every CA pair's SL.

use std::path::PathBuf;
use std::process::Command;

fn ibsm(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ibsm"))
        .args(args)
        .current_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")))
        .output()
        .expect("runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const MESH: &str = "examples/fabrics/mesh-2x2x2.net";
const TORUS: &str = "examples/fabrics/torus-3x3.net";

#[test]
fn check_judges_each_vl_and_passes_where_minhop_loops() {
    for net in [MESH, TORUS] {
        let (ok, out, err) = ibsm(&["routes", "check", "--topology", net, "--engine", "dfsssp", "--no-shifts"]);
        assert!(ok, "{net}: {out}{err}");
        assert!(out.contains("credit loops per VL"), "{out}");
        assert!(out.contains("VL  0: ") && !out.contains("LOOP"), "{out}");
        let (ok, out, _) = ibsm(&["routes", "check", "--topology", net, "--engine", "dfsssp", "--no-shifts", "--json"]);
        let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
        let vls = v["credit_loops_per_vl"].as_array().expect("per-VL verdicts");
        assert!(ok && !vls.is_empty(), "{out}");
        assert!(vls.iter().all(|x| x["credit_loops"] == "none" && x["pairs"].as_u64().is_some_and(|n| n > 0)), "{out}");
        // Paired layers: every pair's way back is on its own route's VL already.
        assert!(vls.iter().all(|x| x["ways_back"] == 0), "{out}");
    }
    // The same tables with every pair on one VL loop: minhop there fails the check.
    let (ok, out, _) = ibsm(&["routes", "check", "--topology", MESH, "--engine", "minhop", "--no-shifts"]);
    assert!(!ok && out.contains("credit loops        FOUND") && !out.contains("per VL"), "{out}");
}

#[test]
fn too_few_layers_is_refused_and_a_chain_falls_back() {
    let (ok, _, err) = ibsm(&["routes", "check", "--topology", MESH, "--engine", "dfsssp", "--max-layers", "1"]);
    assert!(!ok && err.contains("none of 1 layers"), "{err}");
    let (_, out, err) =
        ibsm(&["routes", "check", "--topology", MESH, "--engine", "dfsssp,updn", "--max-layers", "1", "--no-shifts"]);
    assert!(err.contains("trying the next engine") && out.contains("engine: updn"), "{out}{err}");
}

#[test]
fn dump_gives_every_pair_its_sl() {
    let (ok, out, err) = ibsm(&["routes", "dump", "--topology", MESH, "--engine", "dfsssp", "--format", "sl"]);
    assert!(ok, "{err}");
    let pairs: Vec<(u16, u16, u8)> = out
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (f[0].parse().unwrap(), f[1].parse().unwrap(), f[2].parse().unwrap())
        })
        .collect();
    let hosts: std::collections::BTreeSet<u16> = pairs.iter().map(|p| p.0).collect();
    assert_eq!(pairs.len(), hosts.len() * (hosts.len() - 1), "{out}");
    assert!(pairs.iter().any(|p| p.2 > 0), "a mesh routed minimally needs a second layer: {out}");
    assert!(pairs.iter().all(|p| p.2 < 8), "{out}");
    // Paired layers: each pair's two directions on one SL (an RC connection uses one).
    let sl: std::collections::BTreeMap<(u16, u16), u8> = pairs.iter().map(|p| ((p.0, p.1), p.2)).collect();
    assert!(pairs.iter().all(|p| sl.get(&(p.1, p.0)) == Some(&p.2)), "{out}");
    // Other engines: every pair on SL 0.
    let (ok, out, _) = ibsm(&["routes", "dump", "--topology", MESH, "--engine", "minhop", "--format", "sl"]);
    assert!(ok && out.lines().skip(1).all(|l| l.ends_with(" 0")), "{out}");
}

/// The running SM gives a layered engine as many layers as the ports' VLs hold: on the mesh
/// (8 VLs in the simulator) dfsssp routes on two; with `max-op-vls 1` it has one, declines, and
/// the chain's up/down routes (no credit loop on one VL); on a fat tree one layer is enough.
#[test]
fn the_running_sm_gives_dfsssp_the_layers_the_vls_hold() {
    use ibsm::core::{Guid2Lid, PortConfig, Sm, SmConfig};
    use ibsm::transport::sim::SimDriver;
    for (net, max_op_vls, used) in
        [(MESH, 5, "dfsssp"), (MESH, 1, "updn"), ("examples/fabrics/fat-tree-2l-k4.net", 1, "dfsssp")]
    {
        let topo =
            ibsm_topology::Topology::load(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(net)).expect("topology");
        let cfg = SmConfig {
            routing_engine: vec!["dfsssp".into(), "updn".into()],
            ports: PortConfig { max_op_vls, ..PortConfig::default() },
            ..SmConfig::default()
        };
        let mut drv = SimDriver::new(&topo, 7, Sm::new(cfg, Guid2Lid::default()), None).expect("attach");
        let report = drv.sweep(30_000_000_000, |_| {}).expect("a report");
        assert!(report.complete, "{net}: {report:?}");
        assert_eq!(drv.sm.routing_engine_used(), Some(used), "{net} max-op-vls {max_op_vls}");
    }
}

#[test]
fn the_ways_back_are_judged_and_their_loops_reported() {
    // nue's layers split destinations, so a pair's two directions are on two SLs: on the 3x3
    // torus the ways back are counted and loop on no VL; on a 4x4x4 torus they loop.
    let (ok, out, err) = ibsm(&["routes", "check", "--topology", TORUS, "--engine", "nue", "--no-shifts"]);
    assert!(ok, "{out}{err}");
    assert!(out.contains("its way back on the same SL") && !out.contains(" 0 ways back"), "{out}");
    let dir = std::env::temp_dir().join(format!("ibsm-ways-back-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let net = dir.join("torus444.net");
    let net = net.to_str().unwrap();
    let (ok, _, err) = ibsm(&["sim", "gen", "torus", "--dims", "4,4,4", "--hosts-per-switch", "2", "-o", net]);
    assert!(ok, "{err}");
    let (ok, out, _) = ibsm(&["routes", "check", "--topology", net, "--engine", "nue", "--no-shifts", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let vls = v["credit_loops_per_vl"].as_array().expect("per-VL verdicts");
    assert!(!ok, "a loop through a way back fails the check");
    let looping: Vec<&serde_json::Value> = vls.iter().filter(|x| x["credit_loops"] == "found").collect();
    assert!(!looping.is_empty(), "{out}");
    // The loop is given as its channels (switch GUID, egress port), at least two.
    assert!(looping.iter().all(|x| x["example"].as_array().is_some_and(|c| c.len() >= 2)), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}
