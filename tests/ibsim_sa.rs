//! The SA judged against OpenSM on the same fabric, with `saquery` as the client.
//!
//! One fabric (`examples/fabrics/fat-tree-2l-k4.net`), two runs on fresh ibsim instances: OpenSM
//! 3.3.23 as master on the first host, then ibsm on the same host. From the last host `saquery`
//! asks each SA the same questions: NodeRecord of every LID, PortInfoRecord of every HCA port,
//! SwitchInfoRecord of every switch, PathRecord (`--src-to-dst`) between every pair of HCAs,
//! SMInfoRecord, ClassPortInfo, the (empty) service and subscription tables, and the SL-to-VL
//! and VL arbitration table records of one switch and one HCA (the same records as OpenSM's;
//! their contents checked against `smpquery sl2vl` / `vlarb`, as OpenSM with QoS off reports
//! zeros it never read). Answers are compared field by field after mapping LIDs to
//! the port GUIDs they name (both SMs number the fabric their own way).
//!
//! A second test runs OpenSM's own client, `osmtest -f m` (its multicast flow: about 40 checks
//! of the IBTA's o15-0.1/0.2 rules on joins, leaves, creates and errors), against each SM and
//! compares the steps and their outcomes one by one, SA-assigned MGIDs aside; then, under ibsm,
//! it checks with `ibroute -M` that the leaf switch of every member of the groups osmtest left
//! behind forwards the group's MLID to that member, or nothing when the MLID has that one
//! member port (as OpenSM; `tests/ibsim_multicast.rs` compares this with OpenSM).
//!
//! Deliberate differences, also stated in docs/opensm-migration.md: ClassPortInfo's CapabilityMask2 lists only
//! what ibsm serves (see `src/sa/class_port_info.rs`), ActCount is each SM's own. Skipped with
//! `IBSM_SKIP_IBSIM=1` or without ibsim, OpenSM and saquery.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use ibsm_topology::{NodeKind, Topology};
use support::ibsim::{Ibsim, require_ibsim, require_tools, saquery_records};
use support::opensm::OpenSm;

type Rec = BTreeMap<String, String>;

/// What one SA answered.
#[derive(Debug, Default)]
struct Answers {
    /// NodeRecord by port GUID.
    nr: BTreeMap<String, Rec>,
    /// LID to port GUID, from the NodeRecords.
    guid_of: BTreeMap<u16, String>,
    /// PortInfoRecord by port GUID (HCA ports).
    pir: BTreeMap<String, Rec>,
    /// SwitchInfoRecord by port GUID.
    swir: BTreeMap<String, Rec>,
    /// PathRecord by (source, destination) port GUID.
    pr: BTreeMap<(String, String), Rec>,
    smir: Rec,
    cpi: Rec,
    /// The ports `saquery -s` lists (the SMs), by port GUID.
    sms: Vec<String>,
    /// GUIDInfoRecords by port GUID: each block's number and GUIDs.
    gir: BTreeMap<String, Vec<String>>,
    /// ServiceRecords and InformInfoRecords listed (`saquery -S`, `-I`).
    services: usize,
    informs: usize,
    /// SLtoVLMappingTableRecords and VLArbitrationTableRecords of one switch and one HCA port,
    /// by their keys with the LID as a GUID; `vl_lids`: (LID, is a switch) of the two.
    vl: BTreeMap<String, Rec>,
    vl_lids: Vec<(u16, bool)>,
}

fn saquery(sim: &Ibsim, client: &str, args: &[&str]) -> Vec<Rec> {
    let out = sim.run_at(Some(client), "saquery", args).expect("saquery runs");
    assert!(out.success(), "{}", out.describe());
    saquery_records(&out.stdout)
}

fn one(sim: &Ibsim, client: &str, args: &[&str]) -> Rec {
    let mut r = saquery(sim, client, args);
    assert_eq!(r.len(), 1, "saquery {args:?}: {r:?}");
    r.remove(0)
}

/// Asks the SA of the running SM everything this test compares.
fn collect(sim: &Ibsim, client: &str, topo: &Topology) -> Answers {
    let end_ports = topo
        .nodes
        .iter()
        .map(
            |n| if n.kind == NodeKind::Switch { 1 } else { (1..=n.num_ports).filter(|&p| n.peer(p).is_some()).count() },
        )
        .sum::<usize>();
    let mut a = Answers::default();
    for lid in 1..=u16::try_from(end_ports + 8).unwrap() {
        let recs = saquery(sim, client, &["NR", &lid.to_string()]);
        assert!(recs.len() <= 1, "NR {lid}: {recs:?}");
        if let Some(r) = recs.into_iter().next() {
            let guid = r["port_guid"].clone();
            a.guid_of.insert(lid, guid.clone());
            a.nr.insert(guid, r);
        }
    }
    assert_eq!(a.nr.len(), end_ports, "every end port has a NodeRecord: {:?}", a.guid_of);
    let mut cas = Vec::new();
    for (&lid, guid) in &a.guid_of {
        if a.nr[guid]["node_type"] == "Switch" {
            a.swir.insert(guid.clone(), one(sim, client, &["SWIR", &lid.to_string()]));
        } else {
            a.pir.insert(guid.clone(), one(sim, client, &["PIR", &lid.to_string()]));
            cas.push((lid, guid.clone()));
        }
    }
    for (&lid, guid) in &a.guid_of {
        let blocks = saquery(sim, client, &["GIR", &lid.to_string()])
            .iter()
            .map(|r| {
                let guids = (0..8).map(|i| r.get(&format!("GUID {i}")).cloned().unwrap_or_default());
                std::iter::once(r.get("Block").cloned().unwrap_or_default()).chain(guids).collect::<Vec<_>>().join(" ")
            })
            .collect();
        a.gir.insert(guid.clone(), blocks);
    }
    for (sl, sg) in &cas {
        for (dl, dg) in &cas {
            let r = one(sim, client, &["PR", "--src-to-dst", &format!("{sl}:{dl}")]);
            a.pr.insert((sg.clone(), dg.clone()), r);
        }
    }
    // The VL tables of the first switch (every output port's maps, every port's blocks) and of
    // the last HCA port: one record per saquery (one MAD holds only 12 maps or 2 blocks here).
    // The same two for both SMs: the switch with the smallest GUID, the HCA port with the largest.
    let by_guid = |switch: bool| {
        let mut v: Vec<(String, u16)> = (a.guid_of.iter())
            .filter(|(_, g)| (a.nr[*g]["node_type"] == "Switch") == switch)
            .map(|(&l, g)| (g.clone(), l))
            .collect();
        v.sort();
        v
    };
    let (sw_guid, sw_lid) = by_guid(true).first().cloned().expect("a switch");
    let last = a.nr[&sw_guid]["num_ports"].parse::<u8>().expect("num_ports");
    let (_, ca_lid) = by_guid(false).last().cloned().expect("an HCA");
    let mut vl_queries: Vec<Vec<String>> =
        (0..=last).map(|out| vec!["SL2VL".into(), format!("{sw_lid}//{out}")]).collect();
    for p in 0..=last {
        vl_queries.extend((1..=4).map(|b| vec!["VLAR".into(), format!("{sw_lid}/{p}/{b}")]));
    }
    vl_queries.push(vec!["SL2VL".into(), ca_lid.to_string()]);
    vl_queries.extend((1..=4).map(|b| vec!["VLAR".into(), format!("{ca_lid}//{b}")]));
    for q in &vl_queries {
        let args: Vec<&str> = q.iter().map(String::as_str).collect();
        for r in saquery(sim, client, &args) {
            let key = if q[0] == "SL2VL" {
                format!("SL2VL {} in {} out {}", guid(&a, &r["LID"]), r["InPort"], r["OutPort"])
            } else {
                format!("VLAR {} port {} block {}", guid(&a, &r["LID"]), r["Port"], r["Block"])
            };
            a.vl.insert(key, r);
        }
    }
    a.vl_lids = vec![(sw_lid, true), (ca_lid, false)];
    a.smir = one(sim, client, &["SMIR"]);
    a.cpi = one(sim, client, &["-c"]);
    a.sms = saquery(sim, client, &["-s"]).iter().map(|r| guid(&a, &r["EndPortLid"])).collect();
    a.services = saquery(sim, client, &["-S"]).len();
    a.informs = saquery(sim, client, &["-I"]).len();
    a
}

/// The GUID a LID field names in `a`.
fn guid(a: &Answers, lid: &str) -> String {
    lid.parse::<u16>().ok().and_then(|l| a.guid_of.get(&l).cloned()).unwrap_or_else(|| format!("LID {lid}?"))
}

fn same(what: &str, fields: &[&str], ours: &Rec, theirs: &Rec) {
    for f in fields {
        assert_eq!(ours.get(*f), theirs.get(*f), "{what}: field {f}\n ibsm:   {ours:?}\n OpenSM: {theirs:?}");
    }
}

fn wait_for(what: &str, deadline: Duration, mut done: impl FnMut() -> bool) {
    let end = Instant::now() + deadline;
    while !done() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The fabric both tests use, its hosts, and where the SMs and the client sit.
struct Fabric {
    net: std::path::PathBuf,
    topo: Topology,
    sm_host: String,
    client: String,
}

fn fabric() -> Fabric {
    let net = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fabrics/fat-tree-2l-k4.net");
    let topo = Topology::load(&net).expect("fabric");
    let hosts: Vec<String> = topo.nodes.iter().filter(|n| n.kind == NodeKind::Ca).map(|n| n.name.clone()).collect();
    let (sm_host, client) = (hosts[0].clone(), hosts[hosts.len() - 1].clone());
    Fabric { net, topo, sm_host, client }
}

/// Starts OpenSM at `host` (its own cache and dump directories: a guid2lid from other runs
/// would change its numbering) and waits until the subnet is up.
fn start_opensm(sim: &Ibsim, host: &str, topo: &Topology, extra: &[&str]) -> OpenSm {
    let osm = OpenSm::start(sim, host, "opensm", extra);
    osm.wait_subnet_up(topo, Duration::from_secs(60));
    osm
}

/// Starts ibsm at `host` and waits for its subnet-up line.
fn start_ibsm(sim: &mut Ibsim, host: &str, extra: &[&str]) -> support::ibsim::Client {
    let args: Vec<&str> = std::iter::once("run").chain(extra.iter().copied()).collect();
    let sm = sim.spawn_at(Some(host), env!("CARGO_BIN_EXE_ibsm"), &args).expect("ibsm starts");
    wait_for("ibsm's subnet up", Duration::from_secs(60), || sm.stdout().contains("subnet up: "));
    sm
}

#[test]
fn saquery_gets_the_answers_opensm_gives_on_the_same_fabric() {
    if !require_ibsim() || !require_tools(&["opensm", "saquery"]) {
        return;
    }
    let f = fabric();
    let (topo, client) = (&f.topo, f.client.as_str());
    let hosts = topo.nodes.iter().filter(|n| n.kind == NodeKind::Ca).count();
    let theirs = {
        let sim = Ibsim::start(&f.net).expect("ibsim");
        let _osm = start_opensm(&sim, &f.sm_host, topo, &[]);
        collect(&sim, client, topo)
    };
    let ours = {
        let mut sim = Ibsim::start(&f.net).expect("ibsim");
        let _sm = start_ibsm(&mut sim, &f.sm_host, &[]);
        let a = collect(&sim, client, topo);
        vl_tables_are_what_the_ports_hold(&sim, client, &a);
        a
    };
    eprintln!(
        "compared with OpenSM: {} NodeRecords, {} PortInfoRecords, {} SwitchInfoRecords, {} PathRecords, {} GUIDInfoRecords, SMInfoRecord, ClassPortInfo",
        ours.nr.len(),
        ours.pir.len(),
        ours.swir.len(),
        ours.pr.len(),
        ours.gir.values().map(Vec::len).sum::<usize>()
    );
    compare(&ours, &theirs, hosts);
    compare_vl(&ours, &theirs);
}

/// The steps of an `osmtest -f m` log and their outcomes: its "Checking ..." and other flow
/// lines, the remote errors it saw, its own ERR lines (the generic per-query error lines
/// dropped), with SA-assigned MGIDs (`ff12:a01b:...`, numbered by each SM its own way) and
/// times removed.
fn osmtest_steps(log: &str) -> Vec<String> {
    log.lines()
        .filter_map(|l| l.split_once(" -> ").map(|(_, rest)| rest))
        .filter(|l| {
            (l.starts_with("osmt_run_mcast_flow:") || l.contains("Remote error =") || l.contains("ERR 0"))
                && !l.contains("Expecting Errors")
                && !["ERR 5501", "ERR 0003", "ERR 0224"].iter().any(|e| l.contains(e))
        })
        .map(|l| {
            l.split_whitespace()
                .map(|w| if w.contains("ff12:a01b:") { "<sa-mgid>" } else { w })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// Runs `osmtest -f m` from `client`: its steps, and whether it said PASS.
fn osmtest_multicast(sim: &Ibsim, client: &str) -> (Vec<String>, bool) {
    let out = sim.run_timeout(Some(client), "osmtest", &["-f", "m"], Duration::from_secs(120)).expect("osmtest runs");
    let text = format!("{}{}", out.stdout, out.stderr);
    let steps = osmtest_steps(&text);
    assert!(steps.len() > 40, "osmtest ran its flow:\n{}", out.describe());
    (steps, text.contains("TEST \"Multicast\" PASS"))
}

/// The ports `ibroute -M` shows switch `lid` forwarding `mlid` (e.g. "0xc002") to: the columns
/// of the row's `x` marks under the header's port numbers.
fn mft_ports(sim: &Ibsim, client: &str, lid: u16, mlid: &str) -> Vec<u8> {
    let out = sim.run_at(Some(client), "ibroute", &["-M", &lid.to_string()]).expect("ibroute");
    let Some(header) = out.stdout.lines().find(|l| l.trim_start().starts_with("Ports:")) else { return Vec::new() };
    let columns: Vec<(usize, u8)> = header
        .char_indices()
        .filter(|&(i, c)| c.is_ascii_digit() && !header[..i].ends_with(|p: char| p.is_ascii_digit()))
        .filter_map(|(i, _)| {
            let n: String = header[i..].chars().take_while(char::is_ascii_digit).collect();
            Some((i, n.parse().ok()?))
        })
        .collect();
    let Some(row) = out.stdout.lines().find(|l| l.to_lowercase().starts_with(&mlid.to_lowercase())) else {
        return Vec::new();
    };
    columns.iter().filter(|&&(i, _)| row.as_bytes().get(i) == Some(&b'x')).map(|&(_, p)| p).collect()
}

#[test]
fn osmtest_multicast_flow_reaches_the_same_outcomes_as_with_opensm() {
    if !require_ibsim() || !require_tools(&["opensm", "osmtest", "ibroute"]) {
        return;
    }
    let f = fabric();
    let (topo, client) = (&f.topo, f.client.as_str());
    let theirs = {
        let sim = Ibsim::start(&f.net).expect("ibsim");
        let _osm = start_opensm(&sim, &f.sm_host, topo, &[]);
        osmtest_multicast(&sim, client)
    };
    let ours = {
        let mut sim = Ibsim::start(&f.net).expect("ibsim");
        let _sm = start_ibsm(&mut sim, &f.sm_host, &[]);
        let r = osmtest_multicast(&sim, client);
        // The groups osmtest leaves behind, with their members (as a trusted client sees them):
        // each member's leaf switch forwards the group's MLID to the member's port, unless the
        // MLID has one member port: then no switch forwards it (OpenSM builds no tree for it).
        let members: Vec<(String, String)> = saquery(&sim, client, &["--smkey", "1", "-m"])
            .into_iter()
            .filter_map(|m| Some((m.get("Mlid")?.clone(), m.get("PortGid")?.clone())))
            .filter(|(_, gid)| gid != "::")
            .collect();
        assert!(!members.is_empty(), "osmtest leaves groups with members behind");
        let count = |mlid: &String| members.iter().filter(|(m, _)| m == mlid).count();
        for (mlid, gid) in &members {
            let guid = gid.parse::<std::net::Ipv6Addr>().map(|a| u128::from(a) as u64).expect("a GID");
            let host = topo
                .nodes
                .iter()
                .position(|n| n.kind == NodeKind::Ca && n.port_guid(1).0 == guid)
                .expect("a member host");
            let peer = topo.nodes[host].peer(1).expect("cabled");
            let leaf_guid = format!("0x{:016x}", topo.nodes[peer.node].node_guid.0);
            let leaf_lid = (1..=40u16)
                .find(|l| {
                    saquery(&sim, client, &["NR", &l.to_string()]).first().is_some_and(|r| r["node_guid"] == leaf_guid)
                })
                .expect("the leaf's LID");
            let ports = mft_ports(&sim, client, leaf_lid, mlid);
            if count(mlid) < 2 {
                assert!(ports.is_empty(), "{mlid}, one member: leaf {leaf_guid} forwards to {ports:?}");
                continue;
            }
            assert!(
                ports.contains(&peer.port),
                "{mlid}: leaf {leaf_guid} forwards to {ports:?}, member {gid} is on port {}",
                peer.port
            );
        }
        let alone = members.iter().filter(|(m, _)| count(m) < 2).count();
        eprintln!(
            "ibroute -M: {} memberships forwarded by their leaves, {alone} alone in their MLID forwarded by none",
            members.len() - alone
        );
        r
    };
    eprintln!("osmtest -f m: {} steps; OpenSM passed: {}, ibsm passed: {}", ours.0.len(), theirs.1, ours.1);
    for (i, (o, t)) in ours.0.iter().zip(&theirs.0).enumerate() {
        assert_eq!(o, t, "step {i} differs (ibsm, OpenSM)");
    }
    assert_eq!(ours.0.len(), theirs.0.len(), "same number of steps");
    assert_eq!(ours.1, theirs.1, "same verdict");
}

/// Every end port's P_Key table as `smpquery pkeys` reads it (non-zero entries in order), by
/// port GUID (from each LID's NodeInfo); and the port GUIDs whose NodeRecord the (untrusted)
/// client gets from the SA.
/// The multicast groups `client` sees (`saquery -g`, untrusted): MGID, MLID, MTU, P_Key, rate
/// and SL of each.
fn groups(sim: &Ibsim, client: &str) -> Vec<String> {
    let mut out: Vec<String> = saquery(sim, client, &["-g"])
        .iter()
        .map(|r| ["MGID", "Mlid", "Mtu", "pkey", "Rate", "SL"].map(|k| r.get(k).cloned().unwrap_or_default()).join(" "))
        .collect();
    out.sort();
    out
}

/// The P_Keys of block 0 of `lid`'s port `port` in a trusted P_KeyTableRecord (SA key 1), or
/// `None` when the SA gives none.
fn pktr(sim: &Ibsim, client: &str, lid: &str, port: u8) -> Option<Vec<String>> {
    let out = sim.run_at(Some(client), "saquery", &["--smkey", "1", "PKTR", &format!("{lid}/{port}/0")]).ok()?;
    if !out.success() || !out.stdout.contains("LID") {
        return None;
    }
    let first = out.stdout.split("PKeyTableRecord dump:").nth(1).unwrap_or(&out.stdout);
    Some(
        first
            .lines()
            .filter(|l| !l.contains(".."))
            .flat_map(|l| l.split_whitespace().filter(|w| w.starts_with("0x") && *w != "0x0000").map(str::to_owned))
            .collect(),
    )
}

/// Trusted P_KeyTableRecords of every end port and of the switch ports that have one, keyed
/// like [`pkey_tables`]' tables.
fn pktrs(
    sim: &Ibsim,
    client: &str,
    tables: &BTreeMap<String, Vec<String>>,
    lids: &BTreeMap<String, (String, u8)>,
) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for key in tables.keys() {
        let Some((lid, port)) = lids.get(key) else { continue };
        if let Some(keys) = pktr(sim, client, lid, *port) {
            out.insert(key.clone(), keys);
        }
    }
    out
}

type Tables = (BTreeMap<String, Vec<String>>, Vec<String>, BTreeMap<String, (String, u8)>);

/// What the partition comparison reads from the running SM, whichever it is.
struct PartitionView {
    /// `smpquery pkeys` of every end port and switch port.
    tables: BTreeMap<String, Vec<String>>,
    /// The NodeRecords the client sees (port GUIDs).
    visible: Vec<String>,
    /// The multicast groups the client sees.
    groups: Vec<String>,
    /// Trusted P_KeyTableRecords, asked from the SM's host.
    pktr: BTreeMap<String, Vec<String>>,
    /// `saquery PKTR` from the client, untrusted.
    untrusted: support::ibsim::ToolOutput,
}

fn partition_view(sim: &Ibsim, sm_host: &str, client: &str, end_ports: u16) -> PartitionView {
    let (tables, visible, lids) = pkey_tables(sim, client, end_ports);
    // From the SM's own host: a full member of the default partition under both SMs, so
    // OpenSM hides no port from it.
    let pktr = pktrs(sim, sm_host, &tables, &lids);
    let untrusted = sim.run_at(Some(client), "saquery", &["PKTR"]).expect("saquery");
    PartitionView { tables, visible, groups: groups(sim, client), pktr, untrusted }
}

fn pkey_tables(sim: &Ibsim, client: &str, end_ports: u16) -> Tables {
    let mut out = BTreeMap::new();
    let mut lids = BTreeMap::new();
    let mut visible = Vec::new();
    for lid in 1..=end_ports + 8 {
        if let Some(nr) = saquery(sim, client, &["NR", &lid.to_string()]).into_iter().next() {
            visible.push(nr["port_guid"].clone());
        }
        // The port behind the LID from its own NodeInfo (an SMP, not the SA: OpenSM's SA hides
        // ports outside the client's partitions).
        let ni = sim.run_at(Some(client), "smpquery", &["nodeinfo", &lid.to_string()]).expect("smpquery");
        if !ni.success() {
            continue;
        }
        let Some(port_guid) =
            support::ibsim::dump_fields(&ni.stdout).into_iter().find(|(k, _)| k == "PortGuid").map(|(_, v)| v)
        else {
            continue;
        };
        let read = |args: &[&str]| -> Vec<String> {
            let q = sim.run_at(Some(client), "smpquery", args).expect("smpquery");
            assert!(q.success(), "{}", q.describe());
            q.stdout
                .lines()
                .filter(|l| !l.contains("capacity"))
                .flat_map(|l| l.split_whitespace().filter(|w| w.starts_with("0x") && *w != "0x0000").map(str::to_owned))
                .collect()
        };
        let fields = support::ibsim::dump_fields(&ni.stdout);
        let field = |k: &str| fields.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()).unwrap_or_default();
        let lid_text = lid.to_string();
        if field("NodeType").contains("Switch") {
            // Every external port of a switch too: the CA-facing ones carry the enforcement table.
            let ports: u8 = field("NumPorts").parse().unwrap_or(0);
            for p in 1..=ports {
                let p_text = p.to_string();
                out.insert(format!("{port_guid}[{p}]"), read(&["pkeys", &lid_text, &p_text]));
                lids.insert(format!("{port_guid}[{p}]"), (lid_text.clone(), p));
            }
        }
        let own: u8 = field("LocalPort").parse().unwrap_or(0);
        lids.insert(port_guid.clone(), (lid_text.clone(), if field("NodeType").contains("Switch") { 0 } else { own }));
        out.insert(port_guid, read(&["pkeys", &lid_text]));
    }
    visible.sort();
    (out, visible, lids)
}

#[test]
fn p_key_tables_match_what_opensm_programs_for_the_same_partitions_conf() {
    if !require_ibsim() || !require_tools(&["opensm", "saquery", "smpquery"]) {
        return;
    }
    let f = fabric();
    let (topo, client) = (&f.topo, f.client.as_str());
    let port = |name: &str| format!("0x{:016x}", topo.nodes[topo.find(name).expect("host")].port_guid(1).0);
    // Full and limited members, a member without a membership (defmember), ipoib, ALL_SWITCHES.
    let conf = format!(
        "Default=0x7fff, ipoib, mtu=5, rate=7 : mgid=ff12:1234::1,mtu=3\n, ALL=limited, SELF=full ;\n\
         alpha=0x0001, ipoib : {}=full, {}=full ;\n\
         beta=0x0002, defmember=limited : {}=full, {}, {}=limited ;\n\
         switches=0x0003 : ALL_SWITCHES=full ;\n",
        port("h1"),
        port("h2"),
        port("h3"),
        port("h4"),
        port("h5")
    );
    let end_ports = u16::try_from(topo.nodes.len()).expect("small fabric");
    let theirs = {
        let sim = Ibsim::start(&f.net).expect("ibsim");
        let file = sim.dir().join("partitions.conf");
        std::fs::write(&file, &conf).expect("write");
        let _osm = start_opensm(&sim, &f.sm_host, topo, &["-P", &file.to_string_lossy()]);
        partition_view(&sim, &f.sm_host, client, end_ports)
    };
    let ours = {
        let mut sim = Ibsim::start(&f.net).expect("ibsim");
        let file = sim.dir().join("partitions.conf");
        std::fs::write(&file, &conf).expect("write");
        let _sm = start_ibsm(&mut sim, &f.sm_host, &["--partitions", &file.to_string_lossy()]);
        partition_view(&sim, &f.sm_host, client, end_ports)
    };
    let PartitionView {
        tables: ours,
        visible: ours_visible,
        groups: our_groups,
        pktr: our_pktr,
        untrusted: our_untrusted,
    } = ours;
    let PartitionView {
        tables: theirs,
        visible: theirs_visible,
        groups: their_groups,
        pktr: their_pktr,
        untrusted: their_untrusted,
    } = theirs;
    // Untrusted P_KeyTableRecords: both SMs refuse them outright (REQ_INVALID): the tables name
    // every partition of every peer.
    assert!(!their_untrusted.success() && their_untrusted.stderr.contains("0x0200"), "{}", their_untrusted.describe());
    assert!(!our_untrusted.success() && our_untrusted.stderr.contains("0x0200"), "{}", our_untrusted.describe());
    // The policy's groups: the default partition's IPoIB broadcast group with its flags and the
    // `mgid=` group; alpha's broadcast group is hidden from the client (not in alpha).
    assert_eq!(our_groups, their_groups, "the policy's multicast groups, as {client} sees them");
    assert_eq!(our_groups.len(), 2, "{our_groups:?}");
    eprintln!("multicast groups equal to OpenSM's: {our_groups:?}");
    assert_eq!(ours.keys().collect::<Vec<_>>(), theirs.keys().collect::<Vec<_>>(), "the same end ports");
    // An untrusted client sees the NodeRecords of the ports it can talk to, under both SMs.
    assert_eq!(ours_visible, theirs_visible, "NodeRecords visible to {client}");
    assert!(
        ours_visible.len() < ours.keys().filter(|k| !k.contains('[')).count(),
        "some ports are hidden from {client}"
    );
    // Every table equal, the SM's own port and the switch port facing it included (the policy
    // puts the SM's port in the default partition only, as a full member, under both SMs).
    let sm_port = port(&f.sm_host);
    assert_eq!(ours[&sm_port], ["0xffff"], "ibsm's SM port");
    let mut compared = 0;
    for (guid, keys) in &ours {
        assert_eq!(keys, &theirs[guid], "P_Key table of {guid} (ibsm, OpenSM)");
        compared += 1;
    }
    // Trusted P_KeyTableRecords, asked from the SM's host (OpenSM hides the ports a requester
    // cannot talk to even from a trusted query; its SM port is a full member of the default
    // partition): ibsm gives one for every end port and every enforcing switch port, each what
    // the port holds, and OpenSM gives the same.
    for (key, keys) in &our_pktr {
        assert_eq!(Some(keys), ours.get(key), "ibsm's record of {key} is what the port holds");
    }
    let mut same = 0;
    for (key, keys) in &their_pktr {
        // A port between switches enforces nothing, so ibsm lists no table for it (OpenSM lists
        // the default table the port came up with).
        if key.contains('[') && !our_pktr.contains_key(key) {
            continue;
        }
        assert_eq!(our_pktr.get(key), Some(keys), "P_KeyTableRecord of {key} (ibsm, OpenSM)");
        same += 1;
    }
    assert_eq!(same, our_pktr.len(), "every record of ibsm's is one OpenSM gives too");
    let end_ports_seen = ours.keys().filter(|k| !k.contains('[')).count();
    assert!(our_pktr.len() > end_ports_seen, "end ports and enforcing switch ports: {}", our_pktr.len());
    assert!(same > 0);
    eprintln!(
        "trusted P_KeyTableRecords: ibsm {} (each the port's table), OpenSM {}; the {same} both give are equal",
        our_pktr.len(),
        their_pktr.len()
    );
    eprintln!(
        "P_Key tables equal to OpenSM's on {compared} end ports and switch ports; {} of {} NodeRecords visible to {client} under both",
        ours_visible.len(),
        ours.keys().filter(|k| !k.contains('[')).count()
    );
}

/// The numbers of a `| 0| 1| ...|` row (decimal, or hex with `0x`).
fn row(text: &str) -> Vec<u8> {
    text.split('|')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .filter_map(|c| c.strip_prefix("0x").map_or_else(|| c.parse().ok(), |h| u8::from_str_radix(h, 16).ok()))
        .collect()
}

/// Checks ibsm's VL table records in `a` against what `smpquery sl2vl` and `smpquery vlarb` read
/// from the ports themselves (OpenSM, with QoS off, reports tables it never read: all zero).
fn vl_tables_are_what_the_ports_hold(sim: &Ibsim, client: &str, a: &Answers) {
    let mut checked = 0;
    for &(lid, switch) in &a.vl_lids {
        let g = guid(a, &lid.to_string());
        // smpquery sl2vl LID [OUT]: one line per input port, `ports: in  I, out  O: | vl| ...|`.
        let mut maps: BTreeMap<(String, String), Vec<u8>> = BTreeMap::new();
        let outs: Vec<String> = if switch {
            a.vl.iter()
                .filter(|(k, _)| k.starts_with(&format!("SL2VL {g} ")))
                .map(|(_, r)| r["OutPort"].clone())
                .collect()
        } else {
            vec![String::new()]
        };
        for out in outs.into_iter().collect::<std::collections::BTreeSet<_>>() {
            let mut args = vec!["sl2vl".to_owned(), lid.to_string()];
            if !out.is_empty() {
                args.push(out);
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let text = sim.run_at(Some(client), "smpquery", &args).expect("smpquery").stdout;
            for l in text.lines().filter(|l| l.starts_with("ports:")) {
                let Some((ports, vls)) = l.split_once(": |") else { continue };
                let nums: Vec<String> =
                    ports.split(|c: char| !c.is_ascii_digit()).filter(|w| !w.is_empty()).map(str::to_owned).collect();
                if let [i, o] = &nums[..] {
                    maps.insert((i.clone(), o.clone()), row(vls));
                }
            }
        }
        for (k, r) in a.vl.iter().filter(|(k, _)| k.starts_with(&format!("SL2VL {g} "))) {
            // A CA's record carries ports 0/0, as smpquery's line does.
            let held = &maps[&(r["InPort"].clone(), r["OutPort"].clone())];
            assert_eq!(&row(&r["VL"]), held, "{k}: ibsm's record against smpquery sl2vl");
            checked += 1;
        }
        // smpquery vlarb LID [PORT]: the low-priority table (block 1) then the high (block 3),
        // VLArbLowCap/HighCap entries each as `VL    : |0x0 |...` and `WEIGHT: |0x0 |...`.
        for (k, r) in a.vl.iter().filter(|(k, _)| k.starts_with(&format!("VLAR {g} "))) {
            let block = &r["Block"];
            if block != "1" && block != "3" {
                continue;
            }
            let mut args = vec!["vlarb".to_owned(), lid.to_string()];
            if switch {
                args.push(r["Port"].clone());
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let text = sim.run_at(Some(client), "smpquery", &args).expect("smpquery").stdout;
            let rows: Vec<Vec<u8>> = text
                .lines()
                .filter_map(|l| {
                    l.split_once(": |").filter(|(n, _)| matches!(n.trim(), "VL" | "WEIGHT")).map(|(_, v)| row(v))
                })
                .collect();
            let at = if block == "1" { 0 } else { 2 };
            // A base switch's port 0 has no data VLs: smpquery prints no table for it.
            let (Some(vls), Some(weights)) = (rows.get(at), rows.get(at + 1)) else {
                assert!(text.contains("No VLArbitration tables (BSP0)"), "{k}: no table:\n{text}");
                continue;
            };
            let n = vls.len();
            assert_eq!(&row(&r["VL"])[..n], &vls[..], "{k}: VLs against smpquery vlarb");
            assert_eq!(&row(&r["Weight"])[..n], &weights[..], "{k}: weights against smpquery vlarb");
            checked += 1;
        }
    }
    assert!(checked > 20, "{checked} VL table records checked against smpquery");
    eprintln!("{checked} VL table records agree with smpquery");
}

/// Asserts that ibsm's VL table records are OpenSM's, key for key.
fn compare_vl(ours: &Answers, theirs: &Answers) {
    // SLtoVLMappingTableRecords and VLArbitrationTableRecords: the same records (their tables
    // are not compared: OpenSM with QoS off reports zeros it never read; ibsm reports what the
    // ports hold, checked against smpquery above).
    // OpenSM also lists blocks 2 and 4 (entries 32..63), which ibsim's ports refuse (their caps
    // are 8): ibsm lists only the blocks a port holds.
    let held = |k: &&String| !(k.starts_with("VLAR ") && (k.ends_with(" block 2") || k.ends_with(" block 4")));
    assert_eq!(ours.vl.keys().collect::<Vec<_>>(), theirs.vl.keys().filter(held).collect::<Vec<_>>());
    assert!(ours.vl.len() > 35, "{:?}", ours.vl.keys());
}

/// Asserts that ibsm's ClassPortInfo is OpenSM's but for CapabilityMask2.
fn compare_class_port_info(ours: &Answers, theirs: &Answers) {
    // ClassPortInfo: versions, response time and where to send (QP1, the GSI Q_Key).
    let cpi_fields = [
        "Base version",
        "Class version",
        "Response time value",
        "Redirect LID",
        "Redirect QP",
        "Redirect QKey",
        "Trap QKey",
    ];
    same("ClassPortInfo", &cpi_fields, &ours.cpi, &theirs.cpi);
    // The capability masks: CapabilityMask as OpenSM's; CapabilityMask2 differs on purpose (see
    // src/sa/class_port_info.rs: ibsm leaves clear what it does not serve).
    let caps: Vec<(&String, &String)> = theirs.cpi.iter().filter(|(k, _)| k.contains("apability")).collect();
    assert_eq!(caps.len(), 2, "saquery -c prints both capability masks: {:?}", theirs.cpi);
    for (k, v) in caps {
        if k.contains('2') {
            assert_eq!(v.trim_start_matches("0x").to_lowercase().trim_start_matches('0'), "b5e8", "OpenSM's {k}");
            let ours_v = ours.cpi.get(k).map(|v| v.trim_start_matches("0x").to_lowercase());
            assert_eq!(ours_v.as_deref().map(|v| v.trim_start_matches('0')), Some("2b4a8"), "ibsm's {k}");
        } else {
            assert_eq!(ours.cpi.get(k), Some(v), "{k}: ibsm as OpenSM");
        }
    }
}

/// Asserts that ibsm's answers (`ours`) agree with OpenSM's, field by field after mapping LIDs to
/// port GUIDs, with `hosts` HCAs in the fabric.
fn compare(ours: &Answers, theirs: &Answers, hosts: usize) {
    // NodeRecords: the same ports with the same NodeInfo and NodeDescription.
    assert_eq!(ours.nr.keys().collect::<Vec<_>>(), theirs.nr.keys().collect::<Vec<_>>());
    let nr_fields = [
        "base_version",
        "class_version",
        "node_type",
        "num_ports",
        "sys_guid",
        "node_guid",
        "port_guid",
        "partition_cap",
        "device_id",
        "revision",
        "port_num",
        "vendor_id",
        "NodeDescription",
    ];
    for (g, r) in &ours.nr {
        same(&format!("NodeRecord of {g}"), &nr_fields, r, &theirs.nr[g]);
    }
    // PortInfoRecords of the HCA ports: the state both SMs left them in.
    let pir_fields = [
        "PortNum",
        "GidPrefix",
        "CapMask",
        "LocalPort",
        "LinkWidthEnabled",
        "LinkWidthActive",
        "LinkSpeedActive",
        "LinkState",
        "PhysLinkState",
        "LMC",
        "NeighborMTU",
        "MtuCap",
        "VLCap",
        "OperVLs",
        "GuidCap",
    ];
    for (g, r) in &ours.pir {
        let t = &theirs.pir[g];
        same(&format!("PortInfoRecord of {g}"), &pir_fields, r, t);
        assert_eq!(guid(ours, &r["EndPortLid"]), *g);
        assert_eq!(guid(theirs, &t["EndPortLid"]), *g);
        assert_eq!(guid(ours, &r["SMLid"]), guid(theirs, &t["SMLid"]), "MasterSMLID names the same port");
    }
    // SwitchInfoRecords.
    let swir_fields = [
        "LinearFDBCap",
        "RandomFDBCap",
        "MulticastFDBCap",
        "LinearFDBTop",
        "DefaultPort",
        "LifeTimeValue/PortStateChange/OpSL2VL",
        "LIDsPerPort",
        "PartitionEnforcementCap",
        "flags",
        "MulticastFDBTop",
    ];
    assert_eq!(ours.swir.len(), theirs.swir.len());
    for (g, r) in &ours.swir {
        same(&format!("SwitchInfoRecord of {g}"), &swir_fields, r, &theirs.swir[g]);
    }
    // PathRecords between every pair of HCAs.
    let pr_fields = [
        "service_id",
        "dgid",
        "sgid",
        "hop_flow_raw",
        "tclass",
        "num_path_revers",
        "pkey",
        "qos_class",
        "sl",
        "mtu",
        "rate",
        "pkt_life",
        "preference",
    ];
    assert_eq!(ours.pr.len(), hosts * hosts);
    for ((s, d), r) in &ours.pr {
        let t = &theirs.pr[&(s.clone(), d.clone())];
        same(&format!("PathRecord {s} -> {d}"), &pr_fields, r, t);
        assert_eq!((guid(ours, &r["slid"]), guid(ours, &r["dlid"])), (s.clone(), d.clone()));
    }
    // GUIDInfoRecords: the same blocks with the same GUIDs (port GUID first, no aliases).
    assert_eq!(ours.gir, theirs.gir, "GUIDInfoRecords");
    assert!(ours.gir.values().all(|b| !b.is_empty()));
    // SMInfoRecord: the same SM port, master, priority 0.
    same("SMInfoRecord", &["GUID", "SM_Key", "Priority", "SMState"], &ours.smir, &theirs.smir);
    assert_eq!(ours.smir["SMState"], "3");
    assert_ne!(ours.smir["ActCount"], "0");
    compare_class_port_info(ours, theirs);
    // `saquery -s` (PortInfoRecords with IsSM, the enhanced CapabilityMask match): the SM's port,
    // under both.
    assert_eq!(ours.sms.len(), 1, "saquery -s under ibsm: {:?}", ours.sms);
    assert_eq!(ours.sms, theirs.sms, "saquery -s");
    // No services registered and no subscriptions on a fresh fabric, as OpenSM says too.
    assert_eq!((ours.services, ours.informs), (theirs.services, theirs.informs));
}

#[test]
fn sighup_and_ibsm_reload_reload_the_partition_policy_and_a_bad_one_is_refused() {
    if !require_ibsim() || !require_tools(&["smpquery", "saquery"]) {
        return;
    }
    let f = fabric();
    let (topo, client) = (&f.topo, f.client.as_str());
    let h3 = topo.find("h3").expect("h3");
    let h3_guid = format!("0x{:016x}", topo.nodes[h3].port_guid(1).0);
    let mut sim = Ibsim::start(&f.net).expect("ibsim");
    let file = sim.dir().join("partitions.conf");
    std::fs::write(&file, "Default=0x7fff : ALL=full ;\n").expect("write");
    let sock = sim.dir().join("ibsm.sock");
    let sm = start_ibsm(
        &mut sim,
        &f.sm_host,
        &["--partitions", &file.to_string_lossy(), "--control", &sock.to_string_lossy()],
    );
    let h3_lid = (1..=40u16)
        .find(|l| saquery(&sim, client, &["NR", &l.to_string()]).first().is_some_and(|r| r["port_guid"] == h3_guid))
        .expect("h3's LID");
    let pkeys = |sim: &Ibsim| -> Vec<String> {
        let q = sim.run_at(Some(client), "smpquery", &["pkeys", &h3_lid.to_string()]).expect("smpquery");
        q.stdout
            .lines()
            .filter(|l| !l.contains("capacity"))
            .flat_map(|l| l.split_whitespace().filter(|w| w.starts_with("0x") && *w != "0x0000").map(str::to_owned))
            .collect()
    };
    assert_eq!(pkeys(&sim), ["0xffff"]);
    let hup = || {
        let st = std::process::Command::new("kill").args(["-HUP", &sm.pid().to_string()]).status().expect("kill");
        assert!(st.success());
    };
    // A new partition for h3: after SIGHUP the SM sweeps and h3's table gains its key.
    std::fs::write(&file, format!("Default=0x7fff : ALL=full ;\nalpha=0x0001 : {h3_guid}=full ;\n")).expect("write");
    hup();
    wait_for("h3's new P_Key", Duration::from_secs(20), || pkeys(&sim) == ["0xffff", "0x8001"]);
    // The same over the control socket: `ibsm reload`.
    std::fs::write(
        &file,
        format!("Default=0x7fff : ALL=full ;\nalpha=0x0001 : {h3_guid}=full ;\nbeta=0x0002 : {h3_guid}=full ;\n"),
    )
    .expect("write");
    let reload = || {
        std::process::Command::new(env!("CARGO_BIN_EXE_ibsm"))
            .args(["reload", "--socket"])
            .arg(&sock)
            .output()
            .expect("ibsm reload")
    };
    let out = reload();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    wait_for("h3's third P_Key", Duration::from_secs(20), || pkeys(&sim) == ["0xffff", "0x8001", "0x8002"]);
    // A bad file through `ibsm reload`: refused with its errors, exit status 1.
    std::fs::write(&file, "Default=0x7fff : ALL=full ;\nbroken=0x12 mtu=4096 : ALL ;\n").expect("write");
    let out = reload();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("{}:2:", file.display())), "{out:?}");
    assert_eq!(pkeys(&sim), ["0xffff", "0x8001", "0x8002"], "the running policy stays");
    // A bad file is refused on SIGHUP too, with its errors in the log, and the running policy stays.
    hup();
    wait_for("the refusal in the log", Duration::from_secs(20), || sm.stderr().matches("refused").count() >= 2);
    assert!(sm.stderr().contains(&format!("{}:2:", file.display())), "{}", sm.stderr());
    assert_eq!(pkeys(&sim), ["0xffff", "0x8001", "0x8002"], "the running policy stays");
    assert!(saquery(&sim, client, &["SMIR"]).first().is_some_and(|r| r["SMState"] == "3"), "still master");
}

#[test]
fn sighup_rereads_the_whole_configuration_and_keeps_the_running_one_when_it_is_invalid() {
    if !require_ibsim() || !require_tools(&["sminfo", "saquery"]) {
        return;
    }
    let f = fabric();
    let client = f.client.as_str();
    let mut sim = Ibsim::start(&f.net).expect("ibsim");
    let conf = sim.dir().join("ibsm.toml");
    std::fs::write(&conf, "priority = 2\n").expect("write");
    let sock = sim.dir().join("ibsm.sock");
    let sm =
        start_ibsm(&mut sim, &f.sm_host, &["--config", &conf.to_string_lossy(), "--control", &sock.to_string_lossy()]);
    // "sminfo: sm lid 1 sm guid 0x..., activity count 5 priority 2 state 3 SMINFO_MASTER"
    let priority = |sim: &Ibsim| -> Option<u8> {
        let out = sim.run_at(Some(client), "sminfo", &[]).ok()?;
        out.stdout.split(" priority ").nth(1)?.split_whitespace().next()?.parse().ok()
    };
    assert_eq!(priority(&sim), Some(2));
    let ibsm = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_ibsm")).args(args).arg(&sock).output().expect("ibsm")
    };
    let status = || String::from_utf8_lossy(&ibsm(&["status", "--json", "--socket"]).stdout).into_owned();
    assert!(status().contains("\"routing_engine\":\"ftree\""), "{}", status());
    // A new priority (at once, no sweep), a new engine (a full re-route) and an LMC (kept until
    // a restart) through `ibsm reload`, which says which is which.
    std::fs::write(&conf, "priority = 7\nrouting-engine = \"minhop\"\nlmc = 1\n").expect("write");
    let out = ibsm(&["reload", "--socket"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(said.contains("applied priority, routing-engine; the SM sweeps and routes from scratch"), "{said}");
    assert!(said.contains("kept until a restart: lmc"), "{said}");
    assert_eq!(priority(&sim), Some(7));
    wait_for("minhop's sweep", Duration::from_secs(20), || status().contains("\"routing_engine\":\"minhop\""));
    assert!(status().contains("\"lmc\":0"), "{}", status());
    // An invalid file on SIGHUP: refused with file and line in the log, nothing changes.
    std::fs::write(&conf, "priority = 3\nrouting-engine = \"updn\"\nno-such-option = 1\n").expect("write");
    let st = std::process::Command::new("kill").args(["-HUP", &sm.pid().to_string()]).status().expect("kill");
    assert!(st.success());
    wait_for("the refusal in the log", Duration::from_secs(20), || sm.stderr().contains("configuration refused"));
    assert!(sm.stderr().contains(&format!("{}:3:", conf.display())), "{}", sm.stderr());
    assert_eq!(priority(&sim), Some(7), "the running priority stays");
    assert!(status().contains("\"routing_engine\":\"minhop\""), "the running engine stays");
    // Fixed: SIGHUP applies it.
    std::fs::write(&conf, "priority = 3\nrouting-engine = \"minhop\"\nlmc = 1\n").expect("write");
    let st = std::process::Command::new("kill").args(["-HUP", &sm.pid().to_string()]).status().expect("kill");
    assert!(st.success());
    wait_for("priority 3", Duration::from_secs(20), || priority(&sim) == Some(3));
}
