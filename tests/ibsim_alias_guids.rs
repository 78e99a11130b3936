//! Alias GUIDs judged against OpenSM under ibsim, with both SMs numbering the fabric alike.
//!
//! One fabric (`examples/fabrics/fat-tree-2l-k4.net`), two runs on fresh ibsim instances:
//! OpenSM 3.3.23 as master on the first host, then ibsm on the same host with OpenSM's
//! `guid2lid`. Under each, the last host sets an alias GUID at index 1 of its own port's
//! block 0 (`SubnAdmSet(GUIDInfoRecord)`, sent by `examples/sa_guidinfo.rs` through the umad
//! device, as `saquery` sends no Set), then from another host: `saquery GIR LID` (the port's
//! blocks as the SA holds them) and `saquery PR --sgid-to-dgid` to the alias GID (the path to
//! the port, the alias echoed); then the same host deletes the alias, and `saquery GIR` again.
//! The Set's and Delete's answers (status and block) and every record must be equal.
//!
//! ibsim's own agents answer a GUIDInfo Set with status 0x0008 (unsupported attribute), so the
//! ports never hold the aliases here; both SMs answer from their own tables, which is what is
//! compared.
//!
//! Skipped with `IBSM_SKIP_IBSIM=1`; fails with the install command when ibsim, OpenSM or
//! infiniband-diags are missing.

mod support;

use std::collections::BTreeMap;
use std::net::Ipv6Addr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ibsm_topology::{NodeKind, Topology};
use support::ibsim::{Ibsim, require_ibsim, require_tools, saquery_records};
use support::opensm::{OpenSm, guid2lid_lids, start_ibsm_with_lids};

type Rec = BTreeMap<String, String>;

/// The alias the last host gives its port.
const ALIAS: u64 = 0x0002_c9ff_fe5a_0001;

/// The client, `examples/sa_guidinfo.rs`. A full `cargo test` builds it beside the test
/// binaries (`target/*/examples/`); when it is not there (this test run alone, `cargo test
/// --test ibsim_alias_guids`, builds no example) it is built now with the same cargo and the
/// same profile as this test, so that the next full run finds it fresh and builds nothing.
fn client_path() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe.parent().and_then(Path::parent).expect("target directory");
    let path = dir.join("examples").join("sa_guidinfo");
    if !path.exists() {
        build_client(&path);
    }
    path
}

/// Builds the client with `cargo build --profile test --example sa_guidinfo` (the profile a
/// full `cargo test` builds examples with) and checks it landed at `path`.
fn build_client(path: &Path) {
    let out = std::process::Command::new(env!("CARGO"))
        .args(["build", "--profile", "test", "-p", "ibsm", "--example", "sa_guidinfo"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    assert!(out.status.success(), "building the client failed:\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(path.exists(), "cargo built the client, but not at {}", path.display());
}

/// A port GID in the IPv6 form saquery takes (default subnet prefix).
fn gid(guid: u64) -> String {
    Ipv6Addr::from((0xfe80_u128 << 112) | u128::from(guid)).to_string()
}

/// What one SM answered: the Set's and Delete's answers (`status` line and GUIDs as the client
/// prints them), and the GUIDInfoRecords and PathRecord after each.
#[derive(Debug, PartialEq)]
struct Seen {
    set: Vec<String>,
    gir_after_set: Vec<Rec>,
    path_to_alias: Vec<Rec>,
    delete: Vec<String>,
    gir_after_delete: Vec<Rec>,
}

fn run_client(sim: &Ibsim, host: &str, args: &[&str]) -> Vec<String> {
    let client = client_path();
    let client = client.to_string_lossy();
    let out = sim.run_timeout(Some(host), &client, args, Duration::from_secs(20)).expect("client runs");
    assert!(out.success(), "{}", out.describe());
    out.stdout.lines().map(str::to_owned).collect()
}

fn saquery(sim: &Ibsim, host: &str, args: &[&str]) -> Vec<Rec> {
    let out = sim.run_at(Some(host), "saquery", args).expect("saquery runs");
    assert!(out.success(), "{}", out.describe());
    saquery_records(&out.stdout)
}

/// The Set, the queries, the Delete and the query again, under whichever SM runs on `sim`
/// at `sm_lid`.
fn exercise(sim: &Ibsim, (owner, owner_lid): (&str, u16), (asker, asker_guid): (&str, u64), sm_lid: u16) -> Seen {
    let (sm, lid, alias) = (sm_lid.to_string(), owner_lid.to_string(), format!("0x{ALIAS:016x}"));
    let set = run_client(sim, owner, &["set", &sm, &lid, &alias]);
    let gir_after_set = saquery(sim, asker, &["GIR", &lid]);
    let route = format!("{}-{}", gid(asker_guid), gid(ALIAS));
    let path_to_alias = saquery(sim, asker, &["PR", "--sgid-to-dgid", &route]);
    let delete = run_client(sim, owner, &["delete", &sm, &lid, &alias]);
    let gir_after_delete = saquery(sim, asker, &["GIR", &lid]);
    Seen { set, gir_after_set, path_to_alias, delete, gir_after_delete }
}

#[test]
fn an_alias_guid_set_queried_routed_to_and_deleted_is_answered_as_opensm_answers_it() {
    if !require_ibsim() || !require_tools(&["opensm", "saquery"]) {
        return;
    }
    assert!(client_path().exists(), "{} is built", client_path().display());
    let net = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fabrics/fat-tree-2l-k4.net");
    let topo = Topology::load(&net).expect("fabric");
    let cas: Vec<(String, u64)> =
        topo.nodes.iter().filter(|n| n.kind == NodeKind::Ca).map(|n| (n.name.clone(), n.port_guid(1).0)).collect();
    let ports = topo.nodes.len();
    let (sm_host, owner, asker) = (&cas[0], &cas[cas.len() - 1], &cas[1]);
    let (g2l, theirs) = {
        let sim = Ibsim::start(&net).expect("ibsim");
        let osm = OpenSm::start(&sim, &sm_host.0, "opensm", &[]);
        osm.wait_subnet_up(&topo, Duration::from_secs(60));
        let g2l = osm.guid2lid(ports, Duration::from_secs(30));
        let lids = guid2lid_lids(&g2l);
        let seen = exercise(&sim, (&owner.0, lids[&owner.1]), (&asker.0, asker.1), lids[&sm_host.1]);
        (g2l, seen)
    };
    let lids = guid2lid_lids(&g2l);
    let ours = {
        let mut sim = Ibsim::start(&net).expect("ibsim");
        let _sm = start_ibsm_with_lids(&mut sim, &sm_host.0, &g2l, &[]);
        exercise(&sim, (&owner.0, lids[&owner.1]), (&asker.0, asker.1), lids[&sm_host.1])
    };
    // Not vacuous: the Set was taken, the alias listed at index 1 and routed to, then gone.
    let alias = format!("0x{ALIAS:016x}");
    assert_eq!(ours.set.first().map(String::as_str), Some("status 0x0000"), "{:?}", ours.set);
    assert!(ours.set.contains(&format!("guid1 {alias}")), "{:?}", ours.set);
    assert!(ours.gir_after_set.iter().any(|r| r.values().any(|v| v == &alias)), "{:?}", ours.gir_after_set);
    assert_eq!(ours.path_to_alias.len(), 1, "one PathRecord: {:?}", ours.path_to_alias);
    assert!(!ours.gir_after_delete.iter().any(|r| r.values().any(|v| v == &alias)), "{:?}", ours.gir_after_delete);
    assert_eq!(ours.set, theirs.set, "the Set's answer: ibsm (left), OpenSM (right)");
    assert_eq!(ours.gir_after_set, theirs.gir_after_set, "saquery GIR after the Set");
    assert_eq!(ours.path_to_alias, theirs.path_to_alias, "saquery PR to the alias GID");
    assert_eq!(ours.delete, theirs.delete, "the Delete's answer");
    assert_eq!(ours.gir_after_delete, theirs.gir_after_delete, "saquery GIR after the Delete");
    eprintln!(
        "alias {alias} on {}: Set, GIR ({} records), PR to the alias GID, Delete, GIR: equal to OpenSM's",
        owner.0,
        ours.gir_after_set.len()
    );
}
