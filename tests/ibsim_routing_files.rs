//! OpenSM's routing files in the running SM, compared under ibsim with OpenSM given the same
//! file on the same fabric with the same LIDs (both SMs start from one `guid2lid`, numbered as
//! ibsm's planner numbers the fabric), every switch's table read with `ibroute`:
//! - `lfts_file` with the `file` engine (`-R file -U`; ibsm's `lfts-file`): tables computed
//!   offline (by ibsm's updn, so not what either SM routes by default) are what both program,
//!   line for line.
//! - `root_guid_file` with updn (`-R updn -a`; `root-guid-file`), leaf-3 as the root (ibsm's
//!   updn picks leaf-0 on its own here): every route of both SMs goes up, then down, by the
//!   ranks from that root (a check OpenSM's tables pass too, and that tells leaf-0's routes
//!   from leaf-3's), and each switch reaches each LID in as many hops under both.
//! - ftree with `cn_guid_file` and `io_guid_file` (`-R ftree -u -G`; `cn-guid-file`,
//!   `io-guid-file`) on the fat tree with storage on the spines, the spines as roots (OpenSM's
//!   ftree ranks from every CA's switch without them, and refuses this tree): OpenSM logs that
//!   ftree routed, ibsm says so, and each switch reaches each LID in as many hops under both.
//!
//! How many routes take the same port is printed. Skipped with `IBSM_SKIP_IBSIM=1` or without
//! ibsim, OpenSM and ibroute.

mod support;

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use ibsm_topology::{NodeKind, Topology};
use support::ibsim::{Ibsim, require_ibsim, require_tools};
use support::opensm::{OpenSm, guid2lid_lids, start_ibsm_with_lids, switch_tables};

type Tables = BTreeMap<String, Vec<String>>;

/// `ibsm args...`: its stdout, which must be a success.
fn ibsm(args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ibsm")).args(args).output().expect("ibsm");
    assert!(out.status.success(), "ibsm {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The `guid2lid` a dump in OpenSM's format implies: each port GUID with the LID its line names.
fn guid2lid_of_dump(dump: &str) -> String {
    let mut seen = BTreeMap::new();
    for line in dump.lines().filter(|l| l.starts_with("0x")) {
        let lid = &line[2..6];
        if let Some(g) = line.split("portguid 0x").nth(1).and_then(|r| r.split(':').next()) {
            seen.entry(g.to_owned()).or_insert_with(|| lid.to_owned());
        }
    }
    seen.iter().fold(String::new(), |mut out, (g, l)| {
        let _ = write!(out, "0x{g} 0x{l} 0x{l}\n\n");
        out
    })
}

/// (LID, port) of an `ibroute` line.
fn entry(line: &str) -> Option<(u16, u8)> {
    let mut w = line.split_whitespace();
    Some((u16::from_str_radix(w.next()?.strip_prefix("0x")?, 16).ok()?, w.next()?.parse().ok()?))
}

/// The links crossed from every switch to every LID of `lids` by the tables, with the switches
/// entered on the way; `None` for a black hole or a loop.
fn walks(topo: &Topology, tables: &Tables, lids: &BTreeMap<u64, u16>) -> BTreeMap<(String, u16), Option<Vec<usize>>> {
    let owner: BTreeMap<u16, u64> = lids.iter().map(|(&g, &l)| (l, g)).collect();
    let port: BTreeMap<(usize, u16), u8> = tables
        .iter()
        .flat_map(|(name, lines)| {
            let at = topo.find(name).expect("switch");
            lines.iter().filter_map(move |l| entry(l).map(|(lid, p)| ((at, lid), p)))
        })
        .collect();
    let mut out = BTreeMap::new();
    for name in tables.keys() {
        let start = topo.find(name).expect("switch");
        for (&lid, &guid) in &owner {
            let mut at = start;
            let mut path = vec![at];
            let end = loop {
                let Some(&p) = port.get(&(at, lid)) else { break None };
                if p == 0 {
                    break (topo.nodes[at].port_guid(0).0 == guid).then_some(());
                }
                let Some(peer) = topo.nodes[at].peer(p) else { break None };
                let n = &topo.nodes[peer.node];
                if n.kind != NodeKind::Switch {
                    break (n.port_guid(peer.port).0 == guid).then_some(());
                }
                if path.len() > 64 {
                    break None;
                }
                at = peer.node;
                path.push(at);
            };
            out.insert((name.clone(), lid), end.map(|()| path));
        }
    }
    out
}

/// Compares the walks of both SMs' tables: every route OpenSM's tables deliver, ibsm's deliver
/// in as many links; how many routes take the same first port, and how many (switch, LID)
/// pairs OpenSM leaves undelivered (returned) and how many of those ibsm delivers.
fn same_lengths(what: &str, topo: &Topology, ours: &Tables, theirs: &Tables, lids: &BTreeMap<u64, u16>) -> usize {
    let (o, t) = (walks(topo, ours, lids), walks(topo, theirs, lids));
    let mut unrouted = Vec::new();
    for (k, w) in &t {
        let Some(w) = w else {
            unrouted.push(k);
            continue;
        };
        let ow = o[k].as_ref().unwrap_or_else(|| panic!("{what}: ibsm's {k:?} does not deliver: {:#?}", ours[&k.0]));
        assert_eq!(ow.len(), w.len(), "{what}: {k:?} crosses as many switches");
    }
    let equal = ours.iter().map(|(s, l)| l.iter().filter(|x| theirs[s].contains(x)).count()).sum::<usize>();
    let all = theirs.values().map(Vec::len).sum::<usize>();
    let ours_too = unrouted.iter().filter(|k| o[**k].is_some()).count();
    eprintln!(
        "{what}: {} routes deliver in as many hops under both SMs; {equal} of {all} table lines equal; OpenSM leaves \
         {} undelivered ({unrouted:?}), ibsm delivers {ours_too} of them",
        t.len() - unrouted.len(),
        unrouted.len()
    );
    unrouted.len()
}

/// Starts OpenSM at `host` with `g2l` as its cache's `guid2lid` and `args`; waits for the
/// subnet up; every switch's table.
fn opensm_tables(net: &Path, topo: &Topology, host: &str, client: &str, g2l: &str, args: &[&str]) -> (Tables, String) {
    let sim = Ibsim::start(net).expect("ibsim");
    let dir = sim.dir().join("opensm");
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(dir.join("guid2lid"), g2l).expect("guid2lid");
    let all: Vec<&str> = ["-d", "2"].into_iter().chain(args.iter().copied()).collect();
    let osm = OpenSm::start(&sim, host, "opensm", &all);
    osm.wait_subnet_up(topo, Duration::from_secs(60));
    let log = osm.wait_file("opensm.log", Duration::from_secs(30), |t| t.contains("tables configured on all switches"));
    let tables = switch_tables(&sim, client, topo, &guid2lid_lids(g2l));
    (tables, log)
}

/// Starts ibsm at `host` with `g2l` and the configuration `toml`; every switch's table and what
/// it printed.
fn ibsm_tables(net: &Path, topo: &Topology, host: &str, client: &str, g2l: &str, toml: &str) -> (Tables, String) {
    let mut sim = Ibsim::start(net).expect("ibsim");
    let conf = sim.dir().join("ibsm.toml");
    std::fs::write(&conf, toml).expect("config");
    let (mut sm, _) = start_ibsm_with_lids(&mut sim, host, g2l, &["--config", &conf.to_string_lossy()]);
    let tables = switch_tables(&sim, client, topo, &guid2lid_lids(g2l));
    let said = sm.stdout();
    let _ = sm.terminate();
    let _ = sm.wait_timeout(Duration::from_secs(10));
    (tables, said)
}

struct Fabric {
    net: std::path::PathBuf,
    topo: Topology,
    host: String,
    client: String,
}

fn fabric(net: &Path) -> Fabric {
    let topo = Topology::load(net).expect("fabric");
    let hosts: Vec<String> = topo
        .nodes
        .iter()
        .filter(|n| n.kind == NodeKind::Ca && n.name.starts_with('h'))
        .map(|n| n.name.clone())
        .collect();
    let (host, client) = (hosts[0].clone(), hosts[hosts.len() - 1].clone());
    Fabric { net: net.to_path_buf(), topo, host, client }
}

fn tools() -> bool {
    require_ibsim() && require_tools(&["opensm", "ibroute"])
}

fn example() -> Fabric {
    fabric(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fabrics/fat-tree-2l-k4.net"))
}

#[test]
fn the_file_engine_programs_the_lfts_file_as_opensm_does() {
    if !tools() {
        return;
    }
    let f = example();
    let work = support::cmd::tmp_dir("ibsim-lfts-file");
    let net = f.net.to_string_lossy().into_owned();
    let dump = ibsm(&["routes", "dump", "--topology", &net, "--engine", "updn", "--format", "opensm"]);
    let file = work.join("opensm-lfts.dump");
    std::fs::write(&file, &dump).expect("write");
    let g2l = guid2lid_of_dump(&dump);
    let path = file.to_string_lossy().into_owned();
    let (theirs, log) = opensm_tables(&f.net, &f.topo, &f.host, &f.client, &g2l, &["-R", "file", "-U", &path]);
    assert!(log.contains("file tables configured"), "OpenSM routed with the file");
    let toml = format!("routing-engine = \"file\"\nlfts-file = {path:?}\n");
    let (ours, said) = ibsm_tables(&f.net, &f.topo, &f.host, &f.client, &g2l, &toml);
    assert!(said.contains("routing file"), "{said}");
    assert_eq!(ours, theirs, "both SMs program the file");
    // And what they program is the file: each switch's (LID, port) pairs.
    for (name, lines) in &ours {
        let guid = format!("guid 0x{:016x} ", f.topo.nodes[f.topo.find(name).expect("switch")].node_guid.0);
        let block = dump.split("Unicast lids").find(|b| b.contains(&guid)).expect("the switch's block");
        let want: Vec<(u16, u8)> = block.lines().filter_map(entry).collect();
        assert_eq!(lines.iter().filter_map(|l| entry(l)).collect::<Vec<_>>(), want, "{name}");
    }
    eprintln!("lfts_file: {} switches program the file alike", ours.len());
    let _ = std::fs::remove_dir_all(&work);
}

/// The rank of every switch: hops from the nearest root.
fn ranks(topo: &Topology, roots: &[usize]) -> BTreeMap<usize, u32> {
    let mut rank = BTreeMap::new();
    let mut q = VecDeque::new();
    for &r in roots {
        rank.insert(r, 0);
        q.push_back(r);
    }
    while let Some(u) = q.pop_front() {
        let next = rank[&u] + 1;
        for p in 1..=topo.nodes[u].num_ports {
            let Some(peer) = topo.nodes[u].peer(p) else { continue };
            if topo.nodes[peer.node].kind == NodeKind::Switch && !rank.contains_key(&peer.node) {
                rank.insert(peer.node, next);
                q.push_back(peer.node);
            }
        }
    }
    rank
}

/// Whether every walk goes up (towards the roots), then only down: no step up after a step down.
fn up_then_down(topo: &Topology, tables: &Tables, lids: &BTreeMap<u64, u16>, rank: &BTreeMap<usize, u32>) -> bool {
    walks(topo, tables, lids).values().flatten().all(|path| {
        let mut down = false;
        path.windows(2).all(|w| {
            let (a, b) = (rank[&w[0]], rank[&w[1]]);
            if b > a {
                down = true;
            }
            !(down && b < a)
        })
    })
}

#[test]
fn updn_routes_from_the_root_guid_file_as_opensm_does() {
    if !tools() {
        return;
    }
    let f = example();
    let work = support::cmd::tmp_dir("ibsim-root-guid-file");
    let net = f.net.to_string_lossy().into_owned();
    let g2l =
        guid2lid_of_dump(&ibsm(&["routes", "dump", "--topology", &net, "--engine", "updn", "--format", "opensm"]));
    let leaf = f.topo.find("leaf-3").expect("leaf-3");
    let roots = work.join("roots");
    std::fs::write(&roots, format!("0x{:016x}\n", f.topo.nodes[leaf].node_guid.0)).expect("write");
    let path = roots.to_string_lossy().into_owned();
    let (theirs, log) = opensm_tables(&f.net, &f.topo, &f.host, &f.client, &g2l, &["-R", "updn", "-a", &path]);
    assert!(log.contains("updn tables configured"), "OpenSM routed with updn");
    let toml = format!("routing-engine = \"updn\"\nroot-guid-file = {path:?}\n");
    let (ours, said) = ibsm_tables(&f.net, &f.topo, &f.host, &f.client, &g2l, &toml);
    assert!(said.contains("routing updn"), "{said}");
    let lids = guid2lid_lids(&g2l);
    let rank = ranks(&f.topo, &[leaf]);
    assert!(up_then_down(&f.topo, &theirs, &lids, &rank), "OpenSM's routes are up/down from leaf-3");
    assert!(up_then_down(&f.topo, &ours, &lids, &rank), "ibsm's routes are up/down from leaf-3");
    // The check tells roots apart: ibsm's own choice without the file here, leaf-0, breaks
    // leaf-3's order, and leaf-3's routes break leaf-0's.
    let leaf0 = [f.topo.find("leaf-0").expect("leaf-0")];
    assert!(!up_then_down(&f.topo, &theirs, &lids, &ranks(&f.topo, &leaf0)), "leaf-3's routes break leaf-0's order");
    assert_eq!(same_lengths("root_guid_file (updn from leaf-3)", &f.topo, &ours, &theirs, &lids), 0);
    let _ = std::fs::remove_dir_all(&work);
}

#[test]
fn ftree_routes_storage_on_the_spines_with_cn_and_io_files_as_opensm_does() {
    if !tools() {
        return;
    }
    let work = support::cmd::tmp_dir("ibsim-cn-io");
    let net = work.join("storage.net");
    std::fs::write(&net, support::fabrics::with_storage()).expect("write");
    let f = fabric(&net);
    let net_arg = net.to_string_lossy().into_owned();
    let io = work.join("io");
    std::fs::write(&io, "0x30000000000001\n0x30000000000101\n").expect("write");
    let cn = work.join("cn");
    let hosts: String = f.topo.nodes.iter().filter(|n| n.kind == NodeKind::Ca && n.name.starts_with('h')).fold(
        String::new(),
        |mut out, n| {
            let _ = writeln!(out, "0x{:016x}", n.port_guid(1).0);
            out
        },
    );
    std::fs::write(&cn, hosts).expect("write");
    // OpenSM's ftree ranks a tree from every CA's switch unless roots are given, so with
    // storage on the spines it needs the spines as roots too (else ERR AB2B): both SMs get them.
    let roots = work.join("roots");
    let spines: String = ["spine-0", "spine-1"].iter().fold(String::new(), |mut out, s| {
        let _ = writeln!(out, "0x{:016x}", f.topo.nodes[f.topo.find(s).expect("spine")].node_guid.0);
        out
    });
    std::fs::write(&roots, spines).expect("write");
    let roots_arg = roots.to_string_lossy().into_owned();
    let (io_arg, cn_arg) = (io.to_string_lossy().into_owned(), cn.to_string_lossy().into_owned());
    let g2l = guid2lid_of_dump(&ibsm(&[
        "routes",
        "dump",
        "--topology",
        &net_arg,
        "--engine",
        "ftree",
        "--io-guid-file",
        &io_arg,
        "--cn-guid-file",
        &cn_arg,
        "--root-guid-file",
        &roots_arg,
        "--format",
        "opensm",
    ]));
    let osm_args = ["-R", "ftree", "-a", &roots_arg, "-u", &cn_arg, "-G", &io_arg];
    let (theirs, log) = opensm_tables(&f.net, &f.topo, &f.host, &f.client, &g2l, &osm_args);
    let said: Vec<&str> = log.lines().filter(|l| l.contains("ftree") || l.contains("ERR")).collect();
    assert!(log.contains("ftree tables configured"), "OpenSM routed with ftree: {said:#?}");
    let toml = format!(
        "routing-engine = \"ftree\"\nroot-guid-file = {roots_arg:?}\ncn-guid-file = {cn_arg:?}\nio-guid-file = {io_arg:?}\n"
    );
    let (ours, said) = ibsm_tables(&f.net, &f.topo, &f.host, &f.client, &g2l, &toml);
    assert!(said.contains("routing ftree"), "{said}");
    // OpenSM's ftree leaves a spine's routes to the other spine and to its storage unset (no
    // down-then-up turn); ibsm routes them.
    let lids = guid2lid_lids(&g2l);
    let left =
        same_lengths("cn_guid_file, io_guid_file (ftree, storage on the spines)", &f.topo, &ours, &theirs, &lids);
    assert!(left <= 4, "only the spines' routes to each other's side: {left}");
    let _ = std::fs::remove_dir_all(&work);
}
