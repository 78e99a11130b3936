//! The link bounce for a new OperationalVLs against OpenSM under ibsim, with stock
//! infiniband-diags as the judge.
//!
//! One fabric, `tests/data/ring-mixed.net` (three switches in a ring, eight CA ports), brought up
//! with OpenSM's default `max_op_vls` (5: ibsim's ports power on at VLCap VL0-7 and keep it);
//! then the setting is changed to 2 while the SM runs, the way each SM re-reads it: OpenSM 3.3.23
//! on SIGHUP re-reads `opensm.conf` (`max_op_vls` is one of the options it updates), ibsm on
//! SIGHUP re-reads its configuration. Each SM must bounce every CA link (OpenSM's log says so
//! with "Sending Link Down ... due to op_vls or mtu change", one line per CA port; ibsm's with
//! its `links bounced` line), and once both settle, `smpquery portinfo` of every CA port and of
//! the switch port facing it (NeighborMTU, OperVLs, LinkState, PhysLinkState) must be equal
//! under the two SMs: Active, VL0-1. ibsm runs on OpenSM's `guid2lid`, so that the LIDs queried
//! are the same ports.
//!
//! What ibsim shows of a bounce: a PortInfo Set with PortState Down on a CA port puts both ends
//! back in Init at once and marks the switch's PortStateChange (no trap); it keeps OperationalVLs
//! but no NeighborMTU (its ports all have MTUCap 2048), so the MTU lines compare reads.
//!
//! Skipped with `IBSM_SKIP_IBSIM=1`; fails with the install command when ibsim, OpenSM or
//! infiniband-diags are missing.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ibsm_topology::{NodeKind, Topology};
use support::ibsim::{Ibsim, require_ibsim, require_tools, wait_for};
use support::opensm::{OpenSm, guid2lid_lids};

const SM_HOST: &str = "h0";
const CLIENT: &str = "h6";
/// OpenSM's log line for each port it bounces (osm_lid_mgr.c), at its debug level.
const OPENSM_BOUNCE: &str = "due to op_vls or mtu change";

fn net() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/ring-mixed.net")
}

/// `smpquery portinfo` of every linked CA port and of the switch port at its other end, as
/// (label, arguments).
fn commands(topo: &Topology, lids: &BTreeMap<u64, u16>) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for n in topo.nodes.iter().filter(|n| n.kind != NodeKind::Switch) {
        for p in 1..=n.num_ports {
            let Some(peer) = n.peer(p) else { continue };
            let peer_port = peer.port;
            let lid = lids[&n.port_guid(p).0].to_string();
            out.push((format!("{}[{p}]", n.name), vec!["portinfo".to_owned(), lid]));
            let sw = &topo.nodes[peer.node];
            let sw_lid = lids[&sw.port_guid(0).0].to_string();
            out.push((
                format!("{}[{peer_port}] facing {}[{p}]", sw.name, n.name),
                vec!["portinfo".to_owned(), sw_lid, peer_port.to_string()],
            ));
        }
    }
    out
}

/// The PortInfo lines compared, by port label.
type Answers = BTreeMap<String, Vec<String>>;

const FIELDS: [&str; 4] = ["NeighborMTU", "OperVLs", "LinkState", "PhysLinkState"];

fn answers(sim: &Ibsim, topo: &Topology, lids: &BTreeMap<u64, u16>) -> Answers {
    commands(topo, lids)
        .into_iter()
        .map(|(label, args)| {
            let a: Vec<&str> = args.iter().map(String::as_str).collect();
            let o = sim.run_at(Some(CLIENT), "smpquery", &a).expect("smpquery runs");
            let mut lines: Vec<String> = o
                .stdout
                .lines()
                .filter(|l| FIELDS.iter().any(|f| l.starts_with(&format!("{f}:"))))
                .map(|l| l.trim_end().to_owned())
                .collect();
            lines.push(format!("exit {}", o.success()));
            (label, lines)
        })
        .collect()
}

/// Every port answered Active with VL0-1: the change took and the links are back up.
fn settled(a: &Answers) -> bool {
    !a.is_empty()
        && a.values().all(|l| {
            l.iter().any(|x| x.starts_with("LinkState:") && x.ends_with("Active"))
                && l.iter().any(|x| x.starts_with("OperVLs:") && x.ends_with("VL0-1"))
        })
}

fn ca_ports(topo: &Topology) -> usize {
    topo.nodes
        .iter()
        .filter(|n| n.kind != NodeKind::Switch)
        .map(|n| (1..=n.num_ports).filter(|&p| n.peer(p).is_some()).count())
        .sum()
}

fn end_ports(topo: &Topology) -> usize {
    topo.nodes
        .iter()
        .map(
            |n| if n.kind == NodeKind::Switch { 1 } else { (1..=n.num_ports).filter(|&p| n.peer(p).is_some()).count() },
        )
        .sum()
}

/// Sends `signal` to process `pid` (one that this test started).
fn signal(pid: u32, signal: &str) {
    let st =
        std::process::Command::new("kill").arg(format!("-{signal}")).arg(pid.to_string()).status().expect("kill runs");
    assert!(st.success(), "kill -{signal} {pid}");
}

fn under_opensm(topo: &Topology) -> (Answers, String) {
    let sim = Ibsim::start(&net()).expect("ibsim");
    let conf = sim.dir().join("opensm.conf");
    // The debug level carries the bounce lines; flushed, so that they can be waited for.
    std::fs::write(&conf, "max_op_vls 5\nforce_log_flush TRUE\n").expect("write conf");
    let osm = OpenSm::start(&sim, SM_HOST, "opensm", &["-F", &conf.to_string_lossy(), "-D", "0x0b"]);
    osm.wait_subnet_up(topo, Duration::from_secs(60));
    let g2l = osm.guid2lid(end_ports(topo), Duration::from_secs(30));
    let lids = guid2lid_lids(&g2l);
    let log = || std::fs::read_to_string(osm.dir().join("opensm.log")).unwrap_or_default();
    assert_eq!(log().matches(OPENSM_BOUNCE).count(), 0, "ibsim's ports power on at VLCap: nothing to bounce at 5");
    std::fs::write(&conf, "max_op_vls 2\nforce_log_flush TRUE\n").expect("rewrite conf");
    signal(osm.pid(), "HUP");
    wait_for("OpenSM's bounce of every CA port", Duration::from_secs(30), || {
        log().matches(OPENSM_BOUNCE).count() >= ca_ports(topo)
    });
    let mut out = Answers::new();
    wait_for("the links back up under OpenSM with VL0-1", Duration::from_secs(30), || {
        out = answers(&sim, topo, &lids);
        settled(&out)
    });
    assert_eq!(log().matches(OPENSM_BOUNCE).count(), ca_ports(topo), "each CA port bounced once");
    (out, g2l)
}

fn under_ibsm(topo: &Topology, g2l: &str) -> (Answers, String) {
    let mut sim = Ibsim::start(&net()).expect("ibsim");
    let config = sim.dir().join("ibsm.toml");
    std::fs::write(&config, "max-op-vls = 5\n").expect("write config");
    let state = sim.dir().join("state");
    std::fs::create_dir_all(&state).expect("state directory");
    std::fs::write(state.join("guid2lid"), g2l).expect("guid2lid");
    let (config_arg, state_arg) = (config.to_string_lossy().into_owned(), state.to_string_lossy().into_owned());
    let args = ["run", "--config", &config_arg, "--state-dir", &state_arg];
    // At the info level: the bounce's line is an info line.
    let sm = sim
        .spawn_at_with_env(Some(SM_HOST), env!("CARGO_BIN_EXE_ibsm"), &args, &[("RUST_LOG", "info")])
        .expect("ibsm starts");
    wait_for("ibsm's subnet up", Duration::from_secs(60), || sm.stdout().contains("subnet up: "));
    assert!(!sm.stderr().contains("links bounced"), "nothing to bounce at 5:\n{}", sm.stderr());
    std::fs::write(&config, "max-op-vls = 2\n").expect("rewrite config");
    signal(sm.pid(), "HUP");
    wait_for("ibsm's bounce of the CA ports", Duration::from_secs(30), || sm.stderr().contains("links bounced"));
    let lids = guid2lid_lids(g2l);
    let mut out = Answers::new();
    wait_for("the links back up under ibsm with VL0-1", Duration::from_secs(30), || {
        out = answers(&sim, topo, &lids);
        settled(&out)
    });
    (out, sm.stderr())
}

#[test]
fn a_reloaded_max_op_vls_bounces_the_ca_links_and_leaves_the_ports_as_opensm_does() {
    if !require_ibsim() || !require_tools(&["opensm", "smpquery"]) {
        return;
    }
    let topo = Topology::load(&net()).expect("fabric");
    let (theirs, g2l) = under_opensm(&topo);
    let (ours, log) = under_ibsm(&topo, &g2l);
    // ibsm's line names how many ports it bounced: every CA port, in one line.
    let line = log.lines().find(|l| l.contains("links bounced")).expect("the bounce line");
    assert!(line.contains(&format!("ports={}", ca_ports(&topo))), "{line}");
    assert_eq!(log.matches("links bounced").count(), 1, "bounced once, not at every sweep:\n{log}");
    assert_eq!(ours.len(), 2 * ca_ports(&topo));
    let mut diffs = Vec::new();
    for (port, o) in &ours {
        let t = &theirs[port];
        if o != t {
            diffs.push(format!("{port}\n    ibsm:   {o:?}\n    OpenSM: {t:?}"));
        }
    }
    eprintln!("{} ports compared; {} differ", ours.len(), diffs.len());
    assert!(diffs.is_empty(), "{} ports answer otherwise than under OpenSM:\n{}", diffs.len(), diffs.join("\n"));
}
