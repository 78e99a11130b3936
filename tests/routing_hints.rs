//! Root switches given by file (OpenSM's `root_guid_file`, ibsm's `root-guid-file` and
//! `routes dump --root-guid-file`), end to end: ftree routes only when the file names its top
//! level and otherwise declines with both lists; up/down then routes from the given roots, so
//! its tables differ from those of its own roots and stay free of credit loops; the running SM
//! (`ibsm run --sim --config`) does the same; a bad file is refused with its line.

mod support;

use std::fmt::Write as _;
use std::path::Path;

use support::cmd::{ibsm, tmp_dir};

const FABRIC: &str = "examples/fabrics/fat-tree-2l-k4.net";
/// The fabric's two spines and one of its leaves.
const SPINES: &str = "0x2000000000000\n0x2000000000100\n";
const LEAF: &str = "# a leaf, not a root of the tree\n0x2000000000200\n";
const TORUS: &str = "examples/fabrics/torus-3x3.net";

fn dump(engine: &str, roots: Option<&Path>, fabric: &str) -> (Option<i32>, String, String) {
    let mut args = vec!["routes", "dump", "--topology", fabric, "--engine", engine, "--format", "opensm"];
    if let Some(r) = roots {
        args.extend(["--root-guid-file", r.to_str().expect("utf-8")]);
    }
    ibsm(&args)
}

#[test]
fn ftree_keeps_its_top_level_as_roots_and_declines_other_roots_for_updn() {
    let dir = tmp_dir("roots");
    let spines = dir.join("spines");
    let leaf = dir.join("leaf");
    std::fs::write(&spines, SPINES).expect("write");
    std::fs::write(&leaf, LEAF).expect("write");

    // The spines: ftree routes as without the file.
    let (code, with, e) = dump("ftree,updn", Some(&spines), FABRIC);
    assert_eq!(code, Some(0), "{e}");
    assert_eq!(with, dump("ftree,updn", None, FABRIC).1, "the same tables as ftree's own roots");
    assert!(!e.contains("declined"), "{e}");

    // A leaf: ftree declines, saying both lists; updn routes from the leaf.
    let (code, from_leaf, e) = dump("ftree,updn", Some(&leaf), FABRIC);
    assert_eq!(code, Some(0), "{e}");
    assert!(e.contains("root GUID file names 0x0002000000000200") && e.contains("top level is"), "{e}");
    let (_, updn_leaf, _) = dump("updn", Some(&leaf), FABRIC);
    assert_eq!(from_leaf, updn_leaf, "the chain's tables are updn's from the leaf");

    // On a torus (no tiers), a given root moves updn's tables too, and they stay loop-free.
    let corner = dir.join("corner");
    let text = std::fs::read_to_string(support::cmd::root().join(TORUS)).expect("torus");
    // The last switch: updn's own root is the centre with the lowest GUID (all are centres here).
    let last = text.lines().filter_map(|l| l.strip_prefix("switchguid=")).next_back().expect("a switch");
    let guid = last.split('(').next().expect("guid");
    std::fs::write(&corner, format!("{guid}\n")).expect("write");
    let (code, rooted, e) = dump("updn", Some(&corner), TORUS);
    assert_eq!(code, Some(0), "{e}");
    assert!(rooted != dump("updn", None, TORUS).1, "{guid} is not the root updn picks itself");
    let (code, out, e) = ibsm(&[
        "routes",
        "check",
        "--topology",
        TORUS,
        "--engine",
        "updn",
        "--root-guid-file",
        corner.to_str().expect("utf-8"),
        "--cdg",
        "all",
        "--no-shifts",
    ]);
    assert_eq!(code, Some(0), "{out}{e}");
    assert!(out.contains("credit loops        none"), "{out}");

    // Not a switch of the fabric: updn declines too, and a lone updn fails.
    let stranger = dir.join("stranger");
    std::fs::write(&stranger, "0xdeadbeef\n").expect("write");
    let (code, _, e) = dump("updn", Some(&stranger), FABRIC);
    assert_eq!(code, Some(1));
    assert!(e.contains("is not a switch of the fabric"), "{e}");
    // A bad line: refused with the file and line, before any routing.
    let bad = dir.join("bad");
    std::fs::write(&bad, "0x2000000000000\nspine-1\n").expect("write");
    let (code, _, e) = dump("updn", Some(&bad), FABRIC);
    assert_eq!(code, Some(2));
    assert!(e.contains(&format!("{}:2:", bad.display())), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_running_sm_takes_its_roots_from_the_configuration() {
    let dir = tmp_dir("roots-run");
    let leaf = dir.join("leaf");
    std::fs::write(&leaf, LEAF).expect("write");
    let conf = dir.join("ibsm.toml");
    std::fs::write(&conf, format!("root-guid-file = {:?}\n", leaf.to_str().expect("utf-8"))).expect("write");
    let (code, out, e) =
        ibsm(&["run", "--sim", FABRIC, "--once", "--no-control", "--config", conf.to_str().expect("utf-8")]);
    assert_eq!(code, Some(0), "{out}{e}");
    assert!(out.contains("routing updn"), "ftree declined the leaf root: {out}");
    assert!(e.contains("root GUID file names"), "the refusal is logged: {e}");
    // Without the file: ftree.
    let (_, out, _) = ibsm(&["run", "--sim", FABRIC, "--once", "--no-control"]);
    assert!(out.contains("routing ftree"), "{out}");
    // A file that is not there: the configuration is refused.
    std::fs::write(&conf, "root-guid-file = \"/nonexistent/roots\"\n").expect("write");
    let (code, _, e) =
        ibsm(&["run", "--sim", FABRIC, "--once", "--no-control", "--config", conf.to_str().expect("utf-8")]);
    assert_eq!(code, Some(2), "{e}");
    assert!(e.contains("root-guid-file"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The `file` engine (OpenSM's `-R file` with `lfts_file`): tables computed offline are
/// programmed as they are, by the running SM too; a file that leaves a LID unrouted is refused
/// with what is missing, and the chain moves on.
#[test]
fn tables_from_a_file_are_programmed_whole_and_incomplete_ones_refused() {
    let dir = tmp_dir("lfts-file");
    let state = dir.join("state");
    let s = state.to_str().expect("utf-8");
    // A first run numbers the fabric; its guid2lid gives the offline tables the same LIDs.
    let (code, out, e) = ibsm(&["run", "--sim", FABRIC, "--once", "--no-control", "--state-dir", s]);
    assert_eq!(code, Some(0), "{out}{e}");
    let g2l = state.join("guid2lid");
    let g = g2l.to_str().expect("utf-8");
    let (code, tables, e) =
        ibsm(&["routes", "dump", "--topology", FABRIC, "--engine", "updn", "--guid2lid", g, "--format", "opensm"]);
    assert_eq!(code, Some(0), "{e}");
    assert_ne!(tables, ibsm(&["routes", "dump", "--topology", FABRIC, "--guid2lid", g]).1, "updn's, not ftree's");
    let file = dir.join("opensm-lfts.dump");
    std::fs::write(&file, &tables).expect("write");
    let f = file.to_str().expect("utf-8");

    // Offline: the file engine gives the file back.
    let (code, back, e) =
        ibsm(&["routes", "dump", "--topology", FABRIC, "--engine", "file", "--lfts-file", f, "--guid2lid", g]);
    assert_eq!(code, Some(0), "{e}");
    assert_eq!(back, tables);

    // The running SM programs them: its live tables are the file's.
    let conf = dir.join("ibsm.toml");
    std::fs::write(&conf, format!("routing-engine = \"file\"\nlfts-file = {f:?}\n")).expect("write");
    let sock = dir.join("sock");
    let mut sm = support::daemon::Daemon::start(
        &[
            "run",
            "--sim",
            FABRIC,
            "--state-dir",
            s,
            "--config",
            conf.to_str().expect("utf-8"),
            "--control",
            sock.to_str().expect("utf-8"),
        ],
        None,
        &[],
    );
    let st = sm.wait_up(&sock, std::time::Duration::from_secs(60));
    assert_eq!(st["last_sweep"]["routing_engine"], "file", "{st}");
    let (code, live, e) = ibsm(&["routes", "dump", "--socket", sock.to_str().expect("utf-8")]);
    assert_eq!(code, Some(0), "{e}");
    assert_eq!(live, tables, "the switches hold the file's tables");
    drop(sm);

    // A LID line taken out: refused, and the chain's next engine routes.
    let cut: String = tables.lines().filter(|l| !l.starts_with("0x0003 ")).flat_map(|l| [l, "\n"]).collect();
    assert_ne!(cut, tables);
    std::fs::write(&file, cut).expect("write");
    let (code, _, e) =
        ibsm(&["routes", "dump", "--topology", FABRIC, "--engine", "file", "--lfts-file", f, "--guid2lid", g]);
    assert_eq!(code, Some(1));
    assert!(e.contains("has no route for LID 3"), "{e}");
    let (code, _, e) =
        ibsm(&["routes", "dump", "--topology", FABRIC, "--engine", "file,ftree", "--lfts-file", f, "--guid2lid", g]);
    assert_eq!(code, Some(0), "{e}");
    assert!(e.contains("engine file declined"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Compute and I/O nodes (OpenSM's `cn_guid_file`, `io_guid_file`): a tree with storage on the
/// spines is declined by ftree alone; with the storage ports as I/O nodes (or the hosts as
/// compute nodes) ftree routes it, every pair reachable, no credit loop, and the hosts' routes
/// are those of the tree without the storage; the running SM does the same from its config.
#[test]
fn storage_on_the_spines_is_routed_by_ftree_with_compute_and_io_node_files() {
    let dir = tmp_dir("cn-io");
    let fabric = dir.join("storage.net");
    std::fs::write(&fabric, support::fabrics::with_storage()).expect("write");
    let io = dir.join("io");
    std::fs::write(&io, "0x30000000000001\n0x30000000000101\n").expect("write");
    let cn = dir.join("cn");
    let hosts = (0..8).fold(String::new(), |mut s, h| {
        let _ = writeln!(s, "0x1000000000{h}01");
        s
    });
    std::fs::write(&cn, hosts).expect("write");
    let f = fabric.to_str().expect("utf-8");
    let dump = |extra: &[&str]| {
        let mut args = vec!["routes", "dump", "--topology", f, "--engine", "ftree", "--format", "opensm"];
        args.extend(extra);
        ibsm(&args)
    };
    let (code, _, e) = dump(&[]);
    assert_eq!(code, Some(1), "{e}");
    assert!(e.contains("not a fat tree"), "{e}");
    for (flag, file) in [("--io-guid-file", &io), ("--cn-guid-file", &cn)] {
        let file = file.to_str().expect("utf-8");
        let (code, out, e) =
            ibsm(&["routes", "check", "--topology", f, "--engine", "ftree", flag, file, "--cdg", "all", "--no-shifts"]);
        assert_eq!(code, Some(0), "{flag}: {out}{e}");
        assert!(out.contains("credit loops        none") || out.contains("between CAs none"), "{flag}: {out}");
        let (code, tables, e) = dump(&[flag, file]);
        assert_eq!(code, Some(0), "{e}");
        assert!(tables.contains("stor-0") || tables.contains("0x0003000000000001"), "{tables}");
    }
    let conf = dir.join("ibsm.toml");
    std::fs::write(&conf, format!("routing-engine = \"ftree\"\nio-guid-file = {:?}\n", io.to_str().expect("utf-8")))
        .expect("write");
    let (code, out, e) =
        ibsm(&["run", "--sim", f, "--once", "--no-control", "--config", conf.to_str().expect("utf-8")]);
    assert_eq!(code, Some(0), "{out}{e}");
    assert!(out.contains("routing ftree"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// OpenSM's balancing options in the running SM's configuration: minhop routes with them (the
/// fabric comes up, every port active), and a routing-order file that is not there is refused.
#[test]
fn the_running_sm_balances_with_the_routing_order_and_port_options() {
    let dir = tmp_dir("tuning-run");
    let order = dir.join("order");
    std::fs::write(&order, "0x1000000000701\n0x1000000000001\n").expect("write");
    let conf = dir.join("ibsm.toml");
    std::fs::write(
        &conf,
        format!(
            "routing-engine = \"minhop\"\nguid-routing-order-file = {:?}\nport-shifting = true\nscatter-ports = 9\n",
            order.to_str().expect("utf-8")
        ),
    )
    .expect("write");
    let (code, out, e) =
        ibsm(&["run", "--sim", FABRIC, "--once", "--no-control", "--config", conf.to_str().expect("utf-8")]);
    assert_eq!(code, Some(0), "{out}{e}");
    assert!(out.contains("routing minhop"), "{out}");
    std::fs::write(&conf, "guid-routing-order-file = \"/nonexistent/order\"\n").expect("write");
    let (code, _, e) =
        ibsm(&["run", "--sim", FABRIC, "--once", "--no-control", "--config", conf.to_str().expect("utf-8")]);
    assert_eq!(code, Some(2), "{e}");
    assert!(e.contains("guid-routing-order-file"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}
