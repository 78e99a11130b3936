//! A cable cut while the SM serves, under ibsim, judged with infiniband-diags, for ibsm and for
//! OpenSM on the same fabric in the same run: the console `Unlink`s the inter-switch cable that
//! a traced route crosses at its highest switch; `ibtracert` shows the route around it; then HCA
//! pairs trace through the switches' tables (`ibtracert` by LIDs: every pair on the small tree,
//! every host to and from one client on the larger one) without crossing the dead cable, and
//! neither end's `ibroute` names the dead port; after `ReLink`, ibsm's tables on every switch
//! are exactly those before the cut. The time from the cut to the first good trace is printed
//! for both SMs (BENCHMARKS.md records it) and ibsm's must meet the 1 s goal with a margin for
//! noise ([`REROUTE_BOUND`]; 12–88 ms measured, each probe an `ibtracert` of 10–25 ms).

use std::time::Duration;

use ibsm_topology::{NodeKind, Topology};

mod support;
use support::ibsim::{Ibsim, IbsimConfig, require_ibsim, require_tools, wait_for};

/// The LID of every host's port 1, from `ibnetdiscover` at `client`: a `Ca ... # "name"` line,
/// then its port line `[1](guid) "peer"[p] # lid N ...`.
fn host_lids(sim: &Ibsim, client: &str, hosts: &[&str]) -> Vec<(String, u16)> {
    let out = sim.run_at(Some(client), "ibnetdiscover", &[]).expect("ibnetdiscover");
    let mut lids = Vec::new();
    let mut ca = None;
    for line in out.stdout.lines() {
        if line.starts_with("Ca") {
            ca = line.rsplit('"').nth(1).map(str::to_owned);
        } else if line.starts_with("[1]")
            && let Some(name) = ca.take().filter(|n| hosts.contains(&n.as_str()))
        {
            let lid =
                line.split("# lid ").nth(1).and_then(|r| r.split_whitespace().next()).and_then(|v| v.parse().ok());
            lids.push((name, lid.unwrap_or_else(|| panic!("no LID in {line:?}"))));
        }
    }
    lids.sort();
    assert_eq!(lids.len(), hosts.len(), "every host's LID:\n{}", out.describe());
    lids
}

/// One hop of a trace: the node it leaves (name, LID), the port, the node it enters.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Hop {
    from: String,
    from_lid: u16,
    port: u8,
    to: String,
}

/// `ibtracert SRC DST` from `client`: its hops, or `None` when the trace fails.
fn trace(sim: &Ibsim, client: &str, src: u16, dst: u16) -> Option<Vec<Hop>> {
    let out = sim.run_at(Some(client), "ibtracert", &[&src.to_string(), &dst.to_string()]).ok()?;
    if !out.success() {
        return None;
    }
    // "From ca {0x...} portnum 1 lid 8-8 "h7"", then "[3] -> switch port {0x...}[4] lid 1-1 "spine-0"".
    let name = |l: &str| l.rsplit('"').nth(1).map(str::to_owned);
    let lid = |l: &str| l.split(" lid ").nth(1)?.split('-').next()?.parse::<u16>().ok();
    let mut hops = Vec::new();
    let mut at: Option<(String, u16)> = None;
    for line in out.stdout.lines() {
        if line.starts_with("From ") {
            at = Some((name(line)?, lid(line)?));
        } else if let Some(rest) = line.strip_prefix('[') {
            let port: u8 = rest.split(']').next()?.parse().ok()?;
            let (from, from_lid) = at.take()?;
            let to = name(line)?;
            hops.push(Hop { from, from_lid, port, to: to.clone() });
            at = Some((to, lid(line)?));
        }
    }
    (!hops.is_empty()).then_some(hops)
}

/// `ibroute LID` from `client`: (LID, port) of every routed entry.
fn table(sim: &Ibsim, client: &str, lid: u16) -> Vec<(u16, u8)> {
    let out = sim.run_at(Some(client), "ibroute", &[&lid.to_string()]).expect("ibroute");
    assert!(out.success(), "{}", out.describe());
    out.stdout
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let lid = u16::from_str_radix(w.next()?.strip_prefix("0x")?, 16).ok()?;
            Some((lid, w.next()?.parse().ok()?))
        })
        .collect()
}

/// The SM under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Which {
    Ibsm,
    OpenSm,
}

/// A host's name and LID.
type HostLid = (String, u16);

/// The HCA pairs checked after the cut: all of them, or each host to and from `client`.
fn pairs<'a>(lids: &'a [HostLid], client: &str, all: bool) -> Vec<(&'a HostLid, &'a HostLid)> {
    let mut out = Vec::new();
    for a in lids {
        for b in lids {
            if a != b && (all || a.0 == client || b.0 == client) {
                out.push((a, b));
            }
        }
    }
    out
}

/// Brings `topo` up under ibsim with `which` at the first host, cuts the cable the route from
/// the last host to the third crosses at its highest switch, checks the fabric routes around
/// it (and, for ibsm, that `ReLink` restores every table); how long the route around took.
fn cut_cable(topo: &Topology, which: Which, all_pairs: bool) -> Duration {
    let hosts: Vec<&str> = topo.nodes.iter().filter(|n| n.kind == NodeKind::Ca).map(|n| n.name.as_str()).collect();
    let (sm_host, client, dst) = (hosts[0], hosts[hosts.len() - 1], hosts[2]);
    let mut sim = Ibsim::start_text(&topo.to_net(), &IbsimConfig::default()).expect("ibsim");
    let dir = sim.dir().join("opensm");
    let mut sm = None;
    let mut osm = None;
    match which {
        Which::Ibsm => {
            let c = sim.spawn_at(Some(sm_host), env!("CARGO_BIN_EXE_ibsm"), &["run", "--no-control"]).expect("ibsm");
            sm = Some(c);
        }
        Which::OpenSm => {
            std::fs::create_dir_all(&dir).expect("dir");
            let c = sim
                .command(Some(sm_host), "opensm")
                .args(["-f", &dir.join("opensm.log").to_string_lossy()])
                .env("OSM_CACHE_DIR", &dir)
                .env("OSM_TMP_DIR", &dir)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("opensm");
            osm = Some(c);
        }
    }
    // Up: every host has a LID and the traced route works (OpenSM's log says little at its
    // default level, so both SMs are judged by what the diags see).
    let mut lids = Vec::new();
    wait_for("the subnet up", Duration::from_secs(120), || {
        let Ok(out) = sim.run_at(Some(client), "ibnetdiscover", &[]) else { return false };
        if !out.success() || out.stdout.matches("# lid ").count() < hosts.len() {
            return false;
        }
        let l = host_lids(&sim, client, &hosts);
        let lid_of = |n: &str| l.iter().find(|(h, _)| h == n).map_or(0, |x| x.1);
        let up = l.iter().all(|x| x.1 != 0) && trace(&sim, client, lid_of(client), lid_of(dst)).is_some();
        lids = l;
        up
    });
    if let Some(sm) = &sm {
        wait_for("ibsm's subnet up", Duration::from_secs(30), || sm.stdout().contains("subnet up: "));
    }
    let lid_of = |n: &str| lids.iter().find(|(h, _)| h == n).map(|x| x.1).expect("host LID");
    let (src, dlid) = (lid_of(client), lid_of(dst));
    // Every switch the client's traces cross, for the table comparison.
    let mut switches: Vec<u16> = Vec::new();
    for (_, l) in &lids {
        if *l != src {
            for h in trace(&sim, client, src, *l).expect("traces before the cut").iter().skip(1) {
                switches.push(h.from_lid);
            }
        }
    }
    switches.sort_unstable();
    switches.dedup();
    let before: Vec<Vec<(u16, u8)>> = switches.iter().map(|&l| table(&sim, client, l)).collect();
    // The cut: the hop leaving the route's highest switch (a spine, or a core).
    let route = trace(&sim, client, src, dlid).expect("traces");
    let top = route
        .iter()
        .find(|h| h.from.starts_with("core"))
        .or_else(|| route.iter().find(|h| h.from.starts_with("spine")));
    let cut = top.cloned().expect("the route crosses a spine or core");
    let peer = topo.nodes[topo.find(&cut.from).expect("switch")].peer(cut.port).expect("cabled");
    let peer_name = topo.nodes[peer.node].name.clone();
    let crosses = |h: &Hop| (h.from == cut.from && h.port == cut.port) || (h.from == peer_name && h.port == peer.port);
    sim.console(&format!("Unlink \"{}\"[{}]", cut.from, cut.port)).expect("console");
    let around = wait_for("a route around the cut", Duration::from_secs(60), || {
        trace(&sim, client, src, dlid).is_some_and(|h| !h.iter().any(crosses))
    });
    for ((a, la), (b, lb)) in pairs(&lids, client, all_pairs) {
        let hops = trace(&sim, client, *la, *lb)
            .unwrap_or_else(|| panic!("{which:?}: {a} -> {b} does not trace after the cut"));
        assert!(!hops.iter().any(crosses), "{which:?}: {a} -> {b} crosses the dead cable: {hops:?}");
    }
    assert!(
        !table(&sim, client, cut.from_lid).iter().any(|e| e.1 == cut.port),
        "{which:?}: {} still routes over the cut",
        cut.from
    );
    if which == Which::Ibsm {
        // Plugged back: every table returns to exactly what it was.
        sim.console(&format!("ReLink \"{}\"[{}]", cut.from, cut.port)).expect("console");
        wait_for("the tables as before the cut", Duration::from_secs(60), || {
            switches.iter().zip(&before).all(|(&l, t)| table(&sim, client, l) == *t)
        });
    }
    if let Some(mut sm) = sm {
        sm.terminate().expect("SIGTERM");
        let _ = sm.wait_timeout(Duration::from_secs(10));
    }
    if let Some(mut o) = osm {
        let _ = o.kill();
        let _ = o.wait();
    }
    around
}

/// The re-route goal (1 s from the cut to a route around it) plus half a second for a loaded
/// machine, where each `ibtracert` probe waits for a core.
const REROUTE_BOUND: Duration = Duration::from_millis(1_500);

fn both(topo: &Topology, what: &str, all_pairs: bool) {
    let ibsm = cut_cable(topo, Which::Ibsm, all_pairs);
    let osm = cut_cable(topo, Which::OpenSm, all_pairs);
    eprintln!(
        "cut cable under ibsim ({what}): a route around it after {} ms with ibsm, {} ms with OpenSM",
        ibsm.as_millis(),
        osm.as_millis()
    );
    assert!(ibsm < REROUTE_BOUND, "{what}: ibsm routed around the cut after {ibsm:?} (OpenSM: {osm:?})");
}

fn tools() -> bool {
    require_ibsim() && require_tools(&["opensm", "ibtracert", "ibroute", "ibnetdiscover"])
}

#[test]
fn a_cut_spine_cable_is_routed_around_by_ibsm_and_by_opensm() {
    if !tools() {
        return;
    }
    let net = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fabrics/fat-tree-2l-k4.net");
    both(&Topology::load(&net).expect("fabric"), "2-level k = 4, 8 hosts", true);
}

#[test]
fn a_cut_core_cable_is_routed_around_by_ibsm_and_by_opensm_on_128_hosts() {
    if !tools() {
        return;
    }
    let topo = ibsm_topology::GenSpec::fat_tree(3, 8).generate().expect("fabric");
    both(&topo, "3-level k = 8, 128 hosts", false);
}
