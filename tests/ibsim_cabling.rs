//! `expected-topology` and `refuse-miscabled` under ibsim, judged with infiniband-diags: the
//! plan says leaf-0 and leaf-1's cables to spine-0 go into each other's spine port. ibsm
//! reports the four miscabled ends (`ibsm status`), `smpquery` shows them left in Initialize
//! while the rest of spine-0 is Active, and `ibtracert` from the far leaf reaches the SM's host
//! on leaf-0 through spine-1. OpenSM has no such check to compare with.

use std::path::Path;
use std::time::Duration;

use ibsm_topology::{NodeKind, Topology};

mod support;
use support::fabrics::spine0_uplinks_swapped;
use support::ibsim::{Ibsim, require_ibsim, require_tools, wait_for};

/// `smpquery -D portinfo PATH PORT`'s LinkState (the PortState) from `client`.
fn port_state(sim: &Ibsim, client: &str, path: &str, port: u8) -> Option<String> {
    let out = sim.run_at(Some(client), "smpquery", &["-D", "portinfo", path, &port.to_string()]).ok()?;
    let line = out.stdout.lines().find(|l| l.starts_with("LinkState:"))?;
    Some(line.trim_start_matches("LinkState:").trim_start_matches('.').trim().to_owned())
}

#[test]
fn miscabled_ports_are_reported_left_in_initialize_and_routed_around() {
    if !require_ibsim() || !require_tools(&["smpquery", "ibtracert", "sminfo"]) {
        return;
    }
    let net = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fabrics/fat-tree-2l-k4.net");
    let fabric = Topology::load(&net).expect("fabric");
    // The plan: spine-0[1] to leaf-1[3] and spine-0[2] to leaf-0[3] (the fabric has them the
    // other way round).
    let plan = spine0_uplinks_swapped(&fabric);
    let hosts: Vec<&str> = fabric.nodes.iter().filter(|n| n.kind == NodeKind::Ca).map(|n| n.name.as_str()).collect();
    let (sm_host, client) = (hosts[0], hosts[hosts.len() - 1]);
    assert_eq!(
        fabric.nodes[fabric.find(client).expect("client")].peer(1).map(|p| fabric.nodes[p.node].name.as_str()),
        Some("leaf-3")
    );

    let mut sim = Ibsim::start(&net).expect("ibsim");
    let plan_file = sim.dir().join("plan.net");
    std::fs::write(&plan_file, plan.to_net()).expect("write");
    let conf = sim.dir().join("ibsm.toml");
    std::fs::write(
        &conf,
        format!("expected-topology = {:?}\nrefuse-miscabled = true\n", plan_file.display().to_string()),
    )
    .expect("write");
    let sock = sim.dir().join("ibsm.sock");
    let args = ["run", "--config", &conf.to_string_lossy(), "--control", &sock.to_string_lossy()];
    let sm = sim.spawn_at(Some(sm_host), env!("CARGO_BIN_EXE_ibsm"), &args).expect("ibsm starts");
    wait_for("ibsm's subnet up", Duration::from_secs(60), || sm.stdout().contains("subnet up: "));
    assert!(sm.stderr().contains("cabling-differs"), "{}", sm.stderr());

    let status = std::process::Command::new(env!("CARGO_BIN_EXE_ibsm"))
        .args(["status", "--json", "--socket"])
        .arg(&sock)
        .output()
        .expect("ibsm status");
    let st: serde_json::Value = serde_json::from_slice(&status.stdout).expect("JSON");
    assert_eq!(st["problems"]["cabling_total"], 4, "{st}");
    assert_eq!(st["problems"]["refused_ports"].as_array().map(Vec::len), Some(4), "{st}");
    assert_eq!(st["problems"]["ports_not_active"], 0, "{st}");
    assert_eq!(st["subnet_up"], true, "{st}");

    // From the client (on leaf-3): 0,1 is leaf-3, 0,1,3 spine-0.
    assert_eq!(port_state(&sim, client, "0,1,3", 1).as_deref(), Some("Initialize"), "spine-0[1] refused");
    assert_eq!(port_state(&sim, client, "0,1,3", 2).as_deref(), Some("Initialize"), "spine-0[2] refused");
    assert_eq!(port_state(&sim, client, "0,1,3", 3).as_deref(), Some("Active"), "spine-0[3] as planned");
    // The SM's host on leaf-0 is reached through spine-1.
    let info = sim.run_at(Some(client), "sminfo", &[]).expect("sminfo");
    let sm_lid =
        info.stdout.split("sm lid ").nth(1).and_then(|r| r.split_whitespace().next()).expect("sm lid").to_owned();
    let me = sim.run_at(Some(client), "smpquery", &["-D", "portinfo", "0", "1"]).expect("own port");
    let my_lid = me
        .stdout
        .lines()
        .find(|l| l.starts_with("Lid:"))
        .map(|l| l.trim_start_matches("Lid:").trim_start_matches('.').trim().to_owned())
        .expect("own LID");
    let trace = sim.run_at(Some(client), "ibtracert", &[&my_lid, &sm_lid]).expect("ibtracert");
    assert!(trace.success(), "{}", trace.describe());
    assert!(trace.stdout.contains("spine-1") && !trace.stdout.contains("spine-0"), "{}", trace.stdout);
}
