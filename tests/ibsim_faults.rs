//! A cable cut while the SM serves, under ibsim, judged with infiniband-diags, for ibsm and for
//! OpenSM on the same fabric in the same run: the console `Unlink`s the spine-leaf cable that a
//! traced route crosses; `ibtracert` shows the route around it; then every HCA pair traces
//! through the switches' tables (`ibtracert` by LIDs) and no switch routes anything over the
//! dead ports (`ibroute`); after `ReLink`, ibsm's tables are exactly those before the cut. The
//! time from the cut to the first good trace is printed for both SMs (BENCHMARKS.md records it;
//! no test asserts a time).

use std::path::Path;
use std::time::{Duration, Instant};

use ibsm_topology::{NodeKind, Topology};

mod support;
use support::ibsim::{Ibsim, require_ibsim, require_tools};

fn fabric() -> (std::path::PathBuf, Topology) {
    let net = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fabrics/fat-tree-2l-k4.net");
    let topo = Topology::load(&net).expect("fabric");
    (net, topo)
}

fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
    start.elapsed()
}

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

/// `ibtracert SRC DST` from `client`: the hops as (node it leaves, out port, node it enters),
/// or `None` when the trace fails.
fn trace(sim: &Ibsim, client: &str, src: u16, dst: u16) -> Option<Vec<(String, u8, String)>> {
    let out = sim.run_at(Some(client), "ibtracert", &[&src.to_string(), &dst.to_string()]).ok()?;
    if !out.success() {
        return None;
    }
    let name = |l: &str| l.rsplit('"').nth(1).map(str::to_owned);
    let mut hops = Vec::new();
    let mut at = None;
    for line in out.stdout.lines() {
        if line.starts_with("From ") {
            at = name(line);
        } else if let Some(rest) = line.strip_prefix('[') {
            let port: u8 = rest.split(']').next()?.parse().ok()?;
            let to = name(line)?;
            hops.push((at.clone()?, port, to.clone()));
            at = Some(to);
        }
    }
    (!hops.is_empty()).then_some(hops)
}

/// `ibroute -D PATH` from `client`: (LID, port) of every routed entry.
fn table(sim: &Ibsim, client: &str, path: &str) -> Vec<(u16, u8)> {
    let out = sim.run_at(Some(client), "ibroute", &["-D", path]).expect("ibroute");
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

/// What one SM did with the cut.
struct Cut {
    /// From the Unlink to the first trace that avoids the cable.
    around: Duration,
}

/// Cuts, on a fabric some SM has brought up, the cable that the route from `client` to `dst`
/// crosses at a spine; checks the fabric routes around it; returns how long it took.
fn cut_and_check(
    sim: &mut Ibsim,
    topo: &Topology,
    client: &str,
    lids: &[(String, u16)],
    dst: &str,
) -> (Cut, String, u8) {
    let lid_of = |n: &str| lids.iter().find(|(h, _)| h == n).map(|x| x.1).expect("host LID");
    let (src, dlid) = (lid_of(client), lid_of(dst));
    let before = trace(sim, client, src, dlid).expect("traces before the cut");
    let (spine, port, leaf) =
        before.iter().find(|(from, ..)| from.starts_with("spine")).cloned().expect("crosses a spine");
    sim.console(&format!("Unlink \"{spine}\"[{port}]")).expect("console");
    let around = wait_for("a route around the cut", Duration::from_secs(30), || {
        trace(sim, client, src, dlid).is_some_and(|h| !h.iter().any(|(f, p, _)| *f == spine && *p == port))
    });
    // Every pair traces, and none crosses the dead cable.
    let leaf_port = topo.nodes[topo.find(&spine).expect("spine")].peer(port).expect("cabled").port;
    for (a, la) in lids {
        for (b, lb) in lids {
            if a == b {
                continue;
            }
            let hops =
                trace(sim, client, *la, *lb).unwrap_or_else(|| panic!("{a} -> {b} does not trace after the cut"));
            assert!(
                !hops.iter().any(|(f, p, _)| (*f == spine && *p == port) || (*f == leaf && *p == leaf_port)),
                "{a} -> {b} crosses the dead cable: {hops:?}"
            );
        }
    }
    (Cut { around }, spine, port)
}

/// Directed routes from `client` (on a leaf, port 1 of the host) to every switch of the 2-level
/// tree: its leaf, both spines through leaf ports 3 and 4, and the other leaves through spine 1
/// (leaf-k is spine port k+1).
fn switch_paths(topo: &Topology, client: &str) -> Vec<(String, String)> {
    let leaf = topo.nodes[topo.find(client).expect("client")].peer(1).expect("cabled").node;
    let leaf_name = topo.nodes[leaf].name.clone();
    let mut out = vec![(leaf_name.clone(), "0,1".to_owned())];
    for (spine_port, spine) in [(3u8, "spine-0"), (4, "spine-1")] {
        out.push((spine.to_owned(), format!("0,1,{spine_port}")));
    }
    for (i, n) in
        topo.nodes.iter().enumerate().filter(|(_, n)| n.kind == NodeKind::Switch && n.name.starts_with("leaf"))
    {
        if i != leaf {
            let k: u8 = n.name.trim_start_matches("leaf-").parse().expect("leaf-K");
            out.push((n.name.clone(), format!("0,1,4,{}", k + 1)));
        }
    }
    out
}

#[test]
fn a_cut_cable_is_routed_around_by_ibsm_and_by_opensm() {
    if !require_ibsim() || !require_tools(&["opensm", "ibtracert", "ibroute", "saquery"]) {
        return;
    }
    let (net, topo) = fabric();
    let hosts: Vec<&str> = topo.nodes.iter().filter(|n| n.kind == NodeKind::Ca).map(|n| n.name.as_str()).collect();
    let (sm_host, client, dst) = (hosts[0], hosts[hosts.len() - 1], hosts[2]);

    // ibsm.
    let mut sim = Ibsim::start(&net).expect("ibsim");
    let mut sm = sim.spawn_at(Some(sm_host), env!("CARGO_BIN_EXE_ibsm"), &["run", "--no-control"]).expect("ibsm");
    wait_for("ibsm's subnet up", Duration::from_secs(30), || sm.stdout().contains("subnet up: "));
    let lids = host_lids(&sim, client, &hosts);
    let paths = switch_paths(&topo, client);
    let tables_before: Vec<Vec<(u16, u8)>> = paths.iter().map(|(_, p)| table(&sim, client, p)).collect();
    let (ibsm_cut, spine, port) = cut_and_check(&mut sim, &topo, client, &lids, dst);
    // No switch routes over the dead ports.
    let spine_path = &paths.iter().find(|(n, _)| *n == spine).expect("spine path").1;
    assert!(!table(&sim, client, spine_path).iter().any(|e| e.1 == port), "{spine} still routes over port {port}");
    // Plugged back: the tables return to exactly what they were.
    sim.console(&format!("ReLink \"{spine}\"[{port}]")).expect("console");
    wait_for("the tables as before the cut", Duration::from_secs(30), || {
        paths.iter().zip(&tables_before).all(|((_, p), t)| table(&sim, client, p) == *t)
    });
    sm.terminate().expect("SIGTERM");
    let _ = sm.wait_timeout(Duration::from_secs(10));
    drop(sm);
    drop(sim);

    // OpenSM, same fabric, same cut.
    let mut sim = Ibsim::start(&net).expect("ibsim");
    let dir = sim.dir().join("opensm");
    std::fs::create_dir_all(&dir).expect("dir");
    let log = dir.join("opensm.log");
    let mut osm = sim
        .command(Some(sm_host), "opensm")
        .args(["-f", &log.to_string_lossy()])
        .env("OSM_CACHE_DIR", &dir)
        .env("OSM_TMP_DIR", &dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("opensm");
    // Its log says little at the default level: up is when the SA names every host's LID and
    // the traced route works.
    let lids = {
        let mut lids = None;
        wait_for("OpenSM's subnet up", Duration::from_secs(60), || {
            let out = sim.run_at(Some(client), "ibnetdiscover", &[]).ok();
            if out.is_some_and(|o| o.success() && o.stdout.matches("# lid ").count() >= hosts.len()) {
                let l = host_lids(&sim, client, &hosts);
                let lid_of = |n: &str| l.iter().find(|(h, _)| h == n).map(|x| x.1);
                if let (Some(a), Some(b)) = (lid_of(client), lid_of(dst))
                    && a != 0
                    && b != 0
                    && trace(&sim, client, a, b).is_some()
                {
                    lids = Some(l);
                    return true;
                }
            }
            false
        });
        lids.expect("LIDs")
    };
    let (osm_cut, ..) = cut_and_check(&mut sim, &topo, client, &lids, dst);
    let _ = osm.kill();
    let _ = osm.wait();
    eprintln!(
        "cut cable under ibsim: a route around it after {} ms with ibsm, {} ms with OpenSM",
        ibsm_cut.around.as_millis(),
        osm_cut.around.as_millis()
    );
}
