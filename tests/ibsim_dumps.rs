//! `ibsm routes dump --format fdbs|mcfdbs` against OpenSM's own `opensm.fdbs` and
//! `opensm.mcfdbs`, on the same fabric with the same LIDs, under ibsim.
//!
//! OpenSM 3.3.23 (its default engine, minhop; log flag 0x40 so that it writes its route dumps)
//! brings the 2-level fat tree of the examples up, then `osmtest -f m` runs its multicast flow
//! from two hosts, which leaves groups with two members behind. Then ibsm, on a fresh ibsim at the same host, with
//! OpenSM's `guid2lid` (every LID the same) and the `file` engine fed OpenSM's
//! `opensm-lfts.dump` (every route the same), and the same `osmtest` flow. Compared:
//! - `opensm.fdbs` with ibsm's, offline from the topology and OpenSM's tables, and from the
//!   running SM: every line equal (the port a `No N hop path` line names is each SM's own
//!   choice, and is left out). Offline with ibsm's own minhop, every line whose route is the
//!   same must be equal too.
//! - `opensm.mcfdbs` with ibsm's from the running SM: each file is what its SM's switches hold
//!   (`ibroute -M` of every switch, read under each SM), and where both SMs forward an MLID the
//!   same way at a switch the lines are equal.
//!
//! Skipped with `IBSM_SKIP_IBSIM=1` or without ibsim, OpenSM, osmtest and ibroute.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use ibsm_topology::{NodeKind, Topology};
use support::ibsim::{Ibsim, require_ibsim, require_tools, wait_for};
use support::opensm::{OpenSm, guid2lid_lids, start_ibsm_with_lids};

/// An fdbs text by switch GUID (`0x` + 16 digits): its lines after the header, with the port a
/// `No N hop path possible via port P!` line names left out.
fn fdbs_blocks(text: &str) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut at = None;
    for line in text.lines() {
        if let Some(g) = line.strip_prefix("dump_ucast_routes: Switch ") {
            at = Some(g.to_owned());
            out.entry(g.to_owned()).or_default();
        } else if let Some(g) = &at
            && line != "LID    : Port : Hops : Optimal"
        {
            let kept = match line.find("via port ") {
                Some(i) => format!("{}via port _!", &line[..i]),
                None => line.to_owned(),
            };
            out.entry(g.clone()).or_default().push(kept);
        }
    }
    out
}

/// Whether `text` is a whole fdbs of `switches` switches up to LID `max`.
fn fdbs_whole(text: &str, switches: usize, max: usize) -> bool {
    let b = fdbs_blocks(text);
    b.len() == switches && b.values().all(|l| l.len() == max)
}

/// The port of an fdbs line (`0x0004 : 003  : 02   : yes`), when it has one.
fn fdbs_port(line: &str) -> Option<&str> {
    let rest = line.split(" : ").nth(1)?;
    rest.chars().all(|c| c.is_ascii_digit() || c == ' ').then(|| rest.trim())
}

/// One switch's MFT entries: (switch GUID, MLID in lower case) to the ports, as printed, and
/// the line.
type McEntries = BTreeMap<(String, String), (Vec<u16>, String)>;

/// An mcfdbs text's entries, its layout checked strictly: a blank line, `Switch 0x...`, the
/// title, then `0xMLID :` lines (upper-case hex) of ` 0xPPP ` ports; the first fault otherwise.
fn mcfdbs_entries(text: &str) -> Result<McEntries, String> {
    let mut out = BTreeMap::new();
    let mut lines = text.lines().peekable();
    while let Some(blank) = lines.next() {
        let bad = |what: &str| format!("{what} in:\n{text}");
        if !blank.is_empty() {
            return Err(bad("no blank line before a switch"));
        }
        let sw = lines.next().and_then(|l| l.strip_prefix("Switch 0x")).ok_or_else(|| bad("no Switch line"))?;
        let sw = format!("0x{sw}");
        if lines.next() != Some("LID    : Out Port(s)") {
            return Err(bad("no title line"));
        }
        while let Some(line) = lines.next_if(|l| !l.is_empty()) {
            let (mlid, ports) = line.split_once(" :").ok_or_else(|| bad("an MLID line without \" :\""))?;
            let digits = mlid.strip_prefix("0x").unwrap_or_default();
            if digits.len() != 4 || !digits.chars().all(|c| c.is_ascii_digit() || ('A'..='F').contains(&c)) {
                return Err(bad(&format!("MLID {mlid:?}")));
            }
            if !ports.starts_with(" 0x") || !ports.ends_with(' ') {
                return Err(bad(&format!("ports {ports:?}")));
            }
            let mut list = Vec::new();
            for p in ports.split("  ").map(str::trim) {
                let hex = p.strip_prefix("0x").filter(|h| h.len() == 3).ok_or_else(|| bad(&format!("port {p:?}")))?;
                list.push(u16::from_str_radix(hex, 16).map_err(|_| bad(&format!("port {p:?}")))?);
            }
            out.insert((sw.clone(), mlid.to_lowercase()), (list, line.to_owned()));
        }
    }
    Ok(out)
}

/// Every switch's multicast table as `ibroute -M` reads it from `client`: (switch GUID, MLID)
/// to the ports marked. The columns of the `Ports:` header line name the ports (one digit each
/// on these 4-port switches).
fn held_mfts(
    sim: &Ibsim,
    client: &str,
    topo: &Topology,
    lids: &BTreeMap<u64, u16>,
) -> BTreeMap<(String, String), Vec<u16>> {
    let mut out = BTreeMap::new();
    for n in topo.nodes.iter().filter(|n| n.kind == NodeKind::Switch) {
        let lid = lids[&n.port_guid(0).0];
        let t = sim.run_at(Some(client), "ibroute", &["-M", &lid.to_string()]).expect("ibroute -M");
        assert!(t.success(), "{}", t.describe());
        let Some(header) = t.stdout.lines().find(|l| l.trim_start().starts_with("Ports:")) else { continue };
        let columns: Vec<(usize, u16)> =
            header.char_indices().filter_map(|(i, c)| Some((i, u16::try_from(c.to_digit(10)?).ok()?))).collect();
        let guid = format!("0x{:016x}", n.node_guid.0);
        for row in t.stdout.lines().filter(|l| l.starts_with("0x")) {
            let mlid = row.split_whitespace().next().unwrap_or_default().to_lowercase();
            let ports: Vec<u16> =
                columns.iter().filter(|&&(i, _)| row.as_bytes().get(i) == Some(&b'x')).map(|&(_, p)| p).collect();
            out.insert((guid.clone(), mlid), ports);
        }
    }
    out
}

/// The entries' port lists alone.
fn ports_of(e: &McEntries) -> BTreeMap<(String, String), Vec<u16>> {
    e.iter().map(|(k, (p, _))| (k.clone(), p.clone())).collect()
}

/// `osmtest -f m` from each of `clients`, each of which must run the flow: the groups it leaves
/// behind have a member at each (OpenSM builds no tree for a group of one member).
fn osmtest(sim: &Ibsim, clients: &[&str]) {
    for client in clients {
        let out = sim.run_timeout(Some(client), "osmtest", &["-f", "m"], Duration::from_secs(120)).expect("osmtest");
        assert!(format!("{}{}", out.stdout, out.stderr).contains("TEST \"Multicast\""), "{}", out.describe());
    }
}

/// `ibsm args...`: its stdout, which must be a success.
fn ibsm(args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ibsm")).args(args).output().expect("ibsm");
    assert!(out.status.success(), "ibsm {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `opensm.fdbs` lines compared where both chose the same port: (lines equal, routes that
/// differ); a line of the same route written otherwise fails the test.
fn same_fdbs_routes(own: &BTreeMap<String, Vec<String>>, theirs: &BTreeMap<String, Vec<String>>) -> (usize, usize) {
    let (mut same, mut other) = (0, 0);
    for (sw, lines) in theirs {
        for (o, t) in own[sw].iter().zip(lines) {
            if fdbs_port(o) == fdbs_port(t) {
                assert_eq!(o, t, "switch {sw}: the same route, another line");
                same += 1;
            } else {
                other += 1;
            }
        }
    }
    (same, other)
}

/// `opensm.mcfdbs` entries compared where both forward to the same ports: (lines equal, entries
/// forwarded otherwise); an entry of the same ports written otherwise fails the test.
fn same_mcfdbs_forwarding(ours: &McEntries, theirs: &McEntries) -> (usize, usize) {
    let (mut same, mut other) = (0, 0);
    for (k, (ports, line)) in ours {
        match theirs.get(k) {
            Some((p, l)) if p == ports => {
                assert_eq!(line, l, "{k:?}");
                same += 1;
            }
            _ => other += 1,
        }
    }
    (same, other)
}

#[test]
fn fdbs_and_mcfdbs_equal_opensms_files_where_the_routes_are_the_same() {
    if !require_ibsim() || !require_tools(&["opensm", "osmtest", "ibroute"]) {
        return;
    }
    let net = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fabrics/fat-tree-2l-k4.net");
    let topo = Topology::load(&net).expect("fabric");
    let hosts: Vec<&str> = topo.nodes.iter().filter(|n| n.kind == NodeKind::Ca).map(|n| n.name.as_str()).collect();
    let (sm_host, client) = (hosts[0], hosts[hosts.len() - 1]);
    let switches = topo.nodes.iter().filter(|n| n.kind == NodeKind::Switch).count();
    let ports = topo.nodes.len(); // one end port per node: every CA here has one port
    let work = support::cmd::tmp_dir("ibsim-dumps");

    // OpenSM: its LIDs, its tables and its dumps, before and after osmtest's groups.
    let (g2l, theirs_fdbs, theirs_mc) = {
        let sim = Ibsim::start(&net).expect("ibsim");
        let osm = OpenSm::start(&sim, sm_host, "opensm", &["-D", "0x43"]);
        osm.wait_subnet_up(&topo, Duration::from_secs(60));
        let g2l = osm.guid2lid(ports, Duration::from_secs(30));
        let max = usize::from(guid2lid_lids(&g2l).values().copied().max().unwrap_or(0));
        let fdbs = osm.wait_file("opensm.fdbs", Duration::from_secs(30), |t| fdbs_whole(t, switches, max));
        let lfts = osm
            .wait_file("opensm-lfts.dump", Duration::from_secs(30), |t| t.matches(" lids dumped").count() == switches);
        std::fs::write(work.join("opensm-lfts.dump"), lfts).expect("write");
        osmtest(&sim, &[client, hosts[2]]);
        let lids = guid2lid_lids(&g2l);
        // What the switches hold and OpenSM's file agree once it has programmed the last change.
        let mc = osm.wait_file("opensm.mcfdbs", Duration::from_secs(30), |t| {
            mcfdbs_entries(t).is_ok_and(|e| ports_of(&e) == held_mfts(&sim, client, &topo, &lids))
        });
        let mc = mcfdbs_entries(&mc).expect("OpenSM's layout");
        assert!(!mc.is_empty(), "osmtest leaves groups behind under OpenSM");
        (g2l, fdbs, mc)
    };
    let g2l_path = work.join("guid2lid");
    std::fs::write(&g2l_path, &g2l).expect("write");
    let (g2l_arg, lfts_arg) = (g2l_path.to_string_lossy().into_owned(), work.join("opensm-lfts.dump"));
    let lfts_arg = lfts_arg.to_string_lossy().into_owned();
    let net_arg = net.to_string_lossy().into_owned();
    let theirs = fdbs_blocks(&theirs_fdbs);

    // Offline, OpenSM's tables on the topology: every line.
    let offline = ibsm(&[
        "routes",
        "dump",
        "--topology",
        &net_arg,
        "--guid2lid",
        &g2l_arg,
        "--engine",
        "file",
        "--lfts-file",
        &lfts_arg,
        "--format",
        "fdbs",
    ]);
    assert_eq!(fdbs_blocks(&offline), theirs, "offline, OpenSM's tables");
    // Offline, ibsm's own minhop: the lines of the routes both chose.
    let own = fdbs_blocks(&ibsm(&[
        "routes",
        "dump",
        "--topology",
        &net_arg,
        "--guid2lid",
        &g2l_arg,
        "--engine",
        "minhop",
        "--format",
        "fdbs",
    ]));
    let (same, other) = same_fdbs_routes(&own, &theirs);
    eprintln!("fdbs with ibsm's minhop: {same} lines of the same routes equal, {other} routes differ");
    assert!(same > other, "most of minhop's routes are OpenSM's");

    // ibsm running OpenSM's tables with OpenSM's LIDs.
    let conf = work.join("ibsm.toml");
    std::fs::write(&conf, format!("routing-engine = \"file\"\nlfts-file = {lfts_arg:?}\n")).expect("write");
    let mut sim = Ibsim::start(&net).expect("ibsim");
    let (mut sm, sock) = start_ibsm_with_lids(&mut sim, sm_host, &g2l, &["--config", &conf.to_string_lossy()]);
    let s = sock.to_string_lossy().into_owned();
    let live = ibsm(&["routes", "dump", "--socket", &s, "--format", "fdbs"]);
    assert_eq!(fdbs_blocks(&live), theirs, "the running SM's tables");
    osmtest(&sim, &[client, hosts[2]]);
    let lids = guid2lid_lids(&g2l);
    let mut ours = BTreeMap::new();
    wait_for("ibsm's mcfdbs as its switches hold them", Duration::from_secs(30), || {
        ours = mcfdbs_entries(&ibsm(&["routes", "dump", "--socket", &s, "--format", "mcfdbs"])).expect("layout");
        ports_of(&ours) == held_mfts(&sim, client, &topo, &lids)
    });
    let (same, other) = same_mcfdbs_forwarding(&ours, &theirs_mc);
    eprintln!("mcfdbs: {same} lines as OpenSM's, {other} forwarded otherwise; OpenSM has {}", theirs_mc.len());
    assert!(same > 0, "some MLID forwarded alike: ours {ours:?}, OpenSM's {theirs_mc:?}");
    let _ = sm.terminate();
    let _ = sm.wait_timeout(Duration::from_secs(10));
    let _ = std::fs::remove_dir_all(&work);
}
