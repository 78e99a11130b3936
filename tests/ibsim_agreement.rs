//! Agreement between ibsim and our simulator (`ibsm_sim::fabric::Fabric`) on the topology facts
//! an SM discovers with directed-route SMPs.
//!
//! For every example `.net` file shipped with ibsim (see `support::ibsim::net_examples`), and
//! from two attach points (the default one, the first node of the file, which is a switch's port
//! 0 in every example; and the first CA whose port 1 is cabled, a CA's port 1), the same
//! breadth-first discovery runs twice: once against ibsim through `ibsim-run smpquery -D ...`
//! (text output parsed here), once against our `Fabric` with the same DR Gets built by
//! `ibsm_mad`. Every answer is then compared, path by path:
//!
//! * NodeInfo at every path: NodeType, NumberOfPorts, NodeGUID, PortGUID, LocalPortNum (these
//!   give the neighbour, by GUID and port, behind each port of the node one hop back);
//! * PortInfo of every port of a switch (port 0 included), once per switch, and of each CA port
//!   through that port itself: PortState, PortPhysicalState, LocalPortNum (the port the SMP came
//!   in on, IBTA 14.2.5.6) and LinkWidthActive (both report it on every port, even down ones);
//! * SwitchInfo of each node, once per node: whether it is answered at all (only by switches),
//!   and the fields listed on [`SwitchFacts`];
//! * one probe per switch through its first port that is not LinkUp, which both must fail.
//!
//! Independently of our simulator, ibsim's neighbour table must also equal the cabling of the
//! `.net` file as `ibsm_topology` reads it, with GUIDs mapped through the parsed nodes; that
//! ties our GUID assignment to ibsim's.
//!
//! Discovery goes through a switch's ports whose PortPhysicalState is LinkUp, and through a CA
//! only at hop 0 (out of the port it is attached at), because a directed route may not cross a
//! CA. Nodes are expanded once (by NodeGUID), but the NodeInfo at every traversed path is kept,
//! so each link is seen from both of its ends.
//!
//! Not asked, on purpose: the PortInfo of a CA port other than the one the SMP arrives on.
//! ibsim answers it; our simulator refuses it by design (status 0x001c; `target_port` in
//! `sim/src/fabric/sma.rs`). An SM never needs it: it reads each CA port through that port,
//! which this discovery also does.
//!
//! No field is excluded as an ibsim peculiarity: every difference found while writing this test
//! was a fault of our simulator (DR replies to an agent on a switch's port 0, PortInfo's
//! LocalPortNum, SwitchInfo's PartitionEnforcementCap), and ibsim's answer matched the IBTA.

mod support;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use ibsm_mad::attrs::{NodeInfo, PortInfo, SwitchInfo};
use ibsm_mad::smp::SmpRepr;
use ibsm_mad::{Attribute, DrPath, Lid, ids};
use ibsm_sim::fabric::{AgentId, Dest, Fabric, SimConfig};
use ibsm_topology::{NodeKind, Topology};
use support::ibsim::{Ibsim, IbsimConfig, NET_EXAMPLES_DIR, dump_fields, net_examples, require_ibsim};

/// PortPhysicalState LinkUp: the only state a directed route may leave a switch through.
const PHYS_LINK_UP: u8 = 5;
/// NodeType Switch.
const SWITCH: u8 = 2;
/// Disagreements printed on failure: the first ones are the informative ones, later ones tend
/// to be their consequences.
const SHOWN: usize = 60;

/// A GUID that prints in hex in assertion messages.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct G(u64);

impl std::fmt::Debug for G {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

/// What NodeInfo says, as seen through one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct NodeFacts {
    node_type: u8,
    num_ports: u8,
    node_guid: G,
    port_guid: G,
    local_port: u8,
}

/// What PortInfo says about one port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PortFacts {
    port_state: u8,
    phys_state: u8,
    local_port: u8,
    width_active: u8,
}

/// SwitchInfo fields compared. What a switch is built with, not what an SM programmed:
/// * PartitionEnforcementCap and EnhancedPort0 are properties of the switch model that an SM
///   acts on (the size of the P_Key table it programs on external ports; whether port 0 is a
///   full port with its own PortInfo semantics);
/// * LinearFDBTop and MulticastFDBTop are the power-on "nothing programmed" state an SM starts from;
/// * LinearFDBCap and MulticastFDBCap are configuration (ibsim `-L`/`-M`, our
///   `SimConfig::{linear_fdb_cap, multicast_fdb_cap}`), not topology. ibsim is started with the
///   values of `SimConfig::default()`, so comparing them checks that both honour the configured
///   value rather than a built-in constant.
///
/// Not compared: RandomFDBCap, LifeTimeValue, DefaultPort and the multicast default ports,
/// LidsPerPort, the filter and enforcement capability bits, and PortStateChange: they describe
/// features no SM configuration here depends on, and PortStateChange records link events since
/// power-on, which is history rather than topology.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SwitchFacts {
    linear_fdb_cap: u16,
    multicast_fdb_cap: u16,
    linear_fdb_top: u16,
    multicast_fdb_top: u16,
    partition_enforcement_cap: u16,
    enhanced_port0: bool,
}

/// One side of the comparison: answers DR Gets along `path` (exit ports after the start node).
/// `None` means no answer or an error status.
trait Prober {
    fn node_info(&mut self, path: &[u8]) -> Option<NodeFacts>;
    fn port_info(&mut self, path: &[u8], port: u8) -> Option<PortFacts>;
    fn switch_info(&mut self, path: &[u8]) -> Option<SwitchFacts>;
}

/// Everything one discovery learnt.
#[derive(Debug, Default, PartialEq, Eq)]
struct Discovery {
    /// NodeInfo at every path queried (including the failed probes, as `None`).
    paths: BTreeMap<Vec<u8>, Option<NodeFacts>>,
    /// PortInfo by (NodeGUID, port).
    ports: BTreeMap<(G, u8), Option<PortFacts>>,
    /// SwitchInfo by NodeGUID (`None` for nodes that refuse it).
    switches: BTreeMap<G, Option<SwitchFacts>>,
    /// (NodeGUID, port) -> (neighbour NodeGUID, neighbour port).
    links: BTreeMap<(G, u8), (G, u8)>,
}

fn discover(p: &mut impl Prober) -> Discovery {
    let mut d = Discovery::default();
    let mut expanded = BTreeSet::new();
    let mut queue = VecDeque::from([Vec::<u8>::new()]);
    while let Some(path) = queue.pop_front() {
        let ni = p.node_info(&path);
        d.paths.insert(path.clone(), ni);
        let Some(ni) = ni else { continue };
        if let Some((&port, parent)) = path.split_last()
            && let Some(Some(from)) = d.paths.get(parent)
        {
            d.links.insert((from.node_guid, port), (ni.node_guid, ni.local_port));
            d.links.insert((ni.node_guid, ni.local_port), (from.node_guid, port));
        }
        let is_switch = ni.node_type == SWITCH;
        if !is_switch && !d.ports.contains_key(&(ni.node_guid, ni.local_port)) {
            // A CA's PortInfo is read through the port it describes, as an SM does (see the
            // module doc for why other ports of a CA are not asked).
            let pi = p.port_info(&path, ni.local_port);
            d.ports.insert((ni.node_guid, ni.local_port), pi);
        }
        if !expanded.insert(ni.node_guid) {
            continue;
        }
        d.switches.insert(ni.node_guid, p.switch_info(&path));
        if is_switch {
            let mut up = Vec::new();
            for port in 0..=ni.num_ports {
                let pi = p.port_info(&path, port);
                d.ports.insert((ni.node_guid, port), pi);
                if port > 0 && pi.is_some_and(|pi| pi.phys_state == PHYS_LINK_UP) {
                    up.push(port);
                }
            }
            // A route out of a port that is not LinkUp must fail on both sides.
            if let Some(down) = (1..=ni.num_ports).find(|q| !up.contains(q)) {
                let probe = [path.as_slice(), &[down]].concat();
                let answer = p.node_info(&probe);
                d.paths.insert(probe, answer);
            }
            queue.extend(up.iter().map(|&q| [path.as_slice(), &[q]].concat()));
        } else if path.is_empty() {
            let up = d.ports.get(&(ni.node_guid, ni.local_port)).copied().flatten();
            if up.is_some_and(|pi| pi.phys_state == PHYS_LINK_UP) {
                queue.push_back(vec![ni.local_port]);
            }
        }
    }
    d
}

/// ibsim through `ibsim-run smpquery -D`.
struct IbsimProber<'a> {
    sim: &'a Ibsim,
    host: Option<&'a str>,
}

impl IbsimProber<'_> {
    /// Runs `smpquery -D <op> <path> [port]`; `None` when smpquery reports a failure.
    fn query(&self, op: &str, path: &[u8], port: Option<u8>) -> Option<BTreeMap<String, String>> {
        let mut dr = String::from("0");
        for hop in path {
            let _ = write!(dr, ",{hop}");
        }
        let port = port.map(|p| p.to_string());
        let mut args = vec!["-D", op, dr.as_str()];
        args.extend(port.as_deref());
        // An answer takes milliseconds, and ibsim reports an unroutable SMP at once.
        let out = self.sim.run_timeout(self.host, "smpquery", &args, Duration::from_secs(5)).expect("smpquery runs");
        assert!(!out.timed_out(), "{}", out.describe());
        if out.success() {
            return Some(dump_fields(&out.stdout).into_iter().collect());
        }
        // smpquery's words (on stdout) for "no answer or an error status"; anything else (ibsim gone, no
        // client slot) is a problem of the test bench, not an answer to compare.
        assert!(
            [&out.stdout, &out.stderr].iter().any(|s| s.contains("query failed")),
            "smpquery failed unexpectedly: {}",
            out.describe()
        );
        None
    }
}

/// A field of smpquery's output, decoded by `parse`; panics with the whole dump if absent or
/// unparsable, since that means our reading of the format is wrong.
fn field<T>(f: &BTreeMap<String, String>, name: &str, parse: impl Fn(&str) -> Option<T>) -> T {
    f.get(name).and_then(|v| parse(v)).unwrap_or_else(|| panic!("smpquery field {name}: cannot read it from {f:#?}"))
}

fn dec<T: std::str::FromStr>(v: &str) -> Option<T> {
    v.parse().ok()
}

fn hex<T: TryFrom<u64>>(v: &str) -> Option<T> {
    let v = u64::from_str_radix(v.strip_prefix("0x")?, 16).ok()?;
    T::try_from(v).ok()
}

/// Undoes libibmad's `?(N)` / `undefined (N)` spelling of unknown values.
fn unknown(v: &str) -> Option<u8> {
    let inner = v.strip_prefix("?(").or_else(|| v.strip_prefix("undefined ("))?;
    inner.trim_end_matches(['?', ')']).parse().ok()
}

/// NodeType as libibmad prints it.
fn node_type(v: &str) -> Option<u8> {
    match v {
        "Channel Adapter" => Some(1),
        "Switch" => Some(2),
        "Router" => Some(3),
        _ => unknown(v),
    }
}

/// PortState (LinkState) as libibmad prints it.
fn port_state(v: &str) -> Option<u8> {
    ["NoChange", "Down", "Initialize", "Armed", "Active"]
        .iter()
        .position(|s| *s == v)
        .and_then(|i| u8::try_from(i).ok())
        .or_else(|| unknown(v))
}

/// PortPhysicalState as libibmad prints it.
fn phys_state(v: &str) -> Option<u8> {
    ["NoChange", "Sleep", "Polling", "Disabled", "PortConfigurationTraining", "LinkUp", "LinkErrorRecovery", "PhyTest"]
        .iter()
        .position(|s| *s == v)
        .and_then(|i| u8::try_from(i).ok())
        .or_else(|| unknown(v))
}

/// LinkWidthActive as libibmad prints it (a single width code).
fn width(v: &str) -> Option<u8> {
    match v {
        "1X" => Some(1),
        "4X" => Some(2),
        "8X" => Some(4),
        "12X" => Some(8),
        "2X" => Some(16),
        _ => unknown(v),
    }
}

impl Prober for IbsimProber<'_> {
    fn node_info(&mut self, path: &[u8]) -> Option<NodeFacts> {
        let f = self.query("nodeinfo", path, None)?;
        Some(NodeFacts {
            node_type: field(&f, "NodeType", node_type),
            num_ports: field(&f, "NumPorts", dec),
            node_guid: G(field(&f, "Guid", hex)),
            port_guid: G(field(&f, "PortGuid", hex)),
            local_port: field(&f, "LocalPort", dec),
        })
    }

    fn port_info(&mut self, path: &[u8], port: u8) -> Option<PortFacts> {
        let f = self.query("portinfo", path, Some(port))?;
        Some(PortFacts {
            port_state: field(&f, "LinkState", port_state),
            phys_state: field(&f, "PhysLinkState", phys_state),
            local_port: field(&f, "LocalPort", dec),
            width_active: field(&f, "LinkWidthActive", width),
        })
    }

    fn switch_info(&mut self, path: &[u8]) -> Option<SwitchFacts> {
        let f = self.query("switchinfo", path, None)?;
        Some(SwitchFacts {
            linear_fdb_cap: field(&f, "LinearFdbCap", dec),
            multicast_fdb_cap: field(&f, "McastFdbCap", dec),
            linear_fdb_top: field(&f, "LinearFdbTop", dec),
            multicast_fdb_top: field(&f, "MulticastFDBTop", hex),
            partition_enforcement_cap: field(&f, "PartEnforceCap", dec),
            enhanced_port0: field(&f, "EnhancedPort0", dec::<u8>) != 0,
        })
    }
}

/// Our simulator, driven with the same DR Gets.
struct OurProber {
    fabric: Fabric,
    agent: AgentId,
    tid: u64,
}

impl OurProber {
    fn get(&mut self, path: &[u8], attr: u16, attr_mod: u32) -> Option<[u8; 64]> {
        self.tid += 1;
        let route = DrPath::new(path).expect("discovery paths are short");
        let smp = SmpRepr::get_dr(&route, attr, attr_mod, self.tid);
        self.fabric.send(self.agent, &smp.to_bytes(), Dest { dlid: Lid::PERMISSIVE, qpn: 0 });
        let limit = self.fabric.now().plus(1_000_000_000);
        self.fabric.run_until_idle(limit);
        let mut answer = None;
        while let Some(r) = self.fabric.recv(self.agent) {
            let reply = SmpRepr::parse(&r.mad[..]).expect("the fabric returns well-formed SMPs");
            if reply.method.is_response() && reply.tid & 0xffff_ffff == self.tid && reply.status == 0 {
                answer = Some(reply.data);
            }
        }
        answer
    }
}

impl Prober for OurProber {
    fn node_info(&mut self, path: &[u8]) -> Option<NodeFacts> {
        let ni = NodeInfo::parse(&self.get(path, ids::attr::NODE_INFO, 0)?).expect("NodeInfo parses");
        Some(NodeFacts {
            node_type: ni.node_type.raw(),
            num_ports: ni.num_ports,
            node_guid: G(ni.node_guid.0),
            port_guid: G(ni.port_guid.0),
            local_port: ni.local_port_num.0,
        })
    }

    fn port_info(&mut self, path: &[u8], port: u8) -> Option<PortFacts> {
        let pi = PortInfo::parse(&self.get(path, ids::attr::PORT_INFO, u32::from(port))?).expect("PortInfo parses");
        Some(PortFacts {
            port_state: pi.port_state.raw(),
            phys_state: pi.port_physical_state.raw(),
            local_port: pi.local_port_num.0,
            width_active: pi.link_width_active.raw(),
        })
    }

    fn switch_info(&mut self, path: &[u8]) -> Option<SwitchFacts> {
        let si = SwitchInfo::parse(&self.get(path, ids::attr::SWITCH_INFO, 0)?).expect("SwitchInfo parses");
        Some(SwitchFacts {
            linear_fdb_cap: si.linear_fdb_cap,
            multicast_fdb_cap: si.multicast_fdb_cap,
            linear_fdb_top: si.linear_fdb_top.0,
            multicast_fdb_top: si.multicast_fdb_top.0,
            partition_enforcement_cap: si.partition_enforcement_cap,
            enhanced_port0: si.enhanced_port0,
        })
    }
}

/// Lists every difference between two maps, keyed for the reader.
fn diff_maps<K: Ord + std::fmt::Debug, V: PartialEq + std::fmt::Debug>(
    what: &str,
    (left, a): (&str, &BTreeMap<K, V>),
    (right, b): (&str, &BTreeMap<K, V>),
    out: &mut Vec<String>,
) {
    let keys: BTreeSet<&K> = a.keys().chain(b.keys()).collect();
    for k in keys {
        let (x, y) = (a.get(k), b.get(k));
        if x != y {
            out.push(format!("{what} {k:?}:\n      {left:<6} {x:?}\n      {right:<6} {y:?}"));
        }
    }
}

/// The cabling of the `.net` file, in the shape of [`Discovery::links`].
fn file_links(topo: &Topology) -> BTreeMap<(G, u8), (G, u8)> {
    let mut links = BTreeMap::new();
    for node in &topo.nodes {
        for port in 1..=node.num_ports {
            if let Some(peer) = node.peer(port) {
                let remote = &topo.nodes[peer.node];
                links.insert((G(node.node_guid.0), port), (G(remote.node_guid.0), peer.port));
            }
        }
    }
    links
}

/// Runs both discoveries of `net` from one attach point and returns the disagreements.
fn compare(net: &Path, sim: &Ibsim, topo: &Topology, attach: (usize, u8), host: Option<&str>) -> Vec<String> {
    let ibsim = discover(&mut IbsimProber { sim, host });

    let mut fabric = Fabric::new(topo, SimConfig::default());
    let agent = fabric.attach(attach.0, attach.1).expect("attach point exists");
    let ours = discover(&mut OurProber { fabric, agent, tid: 0 });

    let mut diffs = Vec::new();
    let (i, o) = (("ibsim:", &ibsim), ("ours:", &ours));
    diff_maps("NodeInfo at path", (i.0, &i.1.paths), (o.0, &o.1.paths), &mut diffs);
    diff_maps("PortInfo of (node, port)", (i.0, &i.1.ports), (o.0, &o.1.ports), &mut diffs);
    diff_maps("SwitchInfo of node", (i.0, &i.1.switches), (o.0, &o.1.switches), &mut diffs);
    diff_maps("neighbour of (node, port)", (i.0, &i.1.links), (o.0, &o.1.links), &mut diffs);
    diff_maps("cabling at (node, port)", (i.0, &i.1.links), (".net:", &file_links(topo)), &mut diffs);

    let nodes: BTreeSet<G> = ibsim.switches.keys().copied().collect();
    let expected: BTreeSet<G> = topo.nodes.iter().map(|n| G(n.node_guid.0)).collect();
    if nodes != expected {
        diffs.push(format!("ibsim discovered nodes {nodes:?}, the file has {expected:?}"));
    }
    let name = net.file_name().map_or_else(|| net.display().to_string(), |n| n.to_string_lossy().into_owned());
    let at = host.unwrap_or("the default attach point");
    diffs.into_iter().map(|d| format!("{name}, from {at}: {d}")).collect()
}

/// Both attach points of one example file; returns the disagreements.
fn check_example(net: &Path) -> Vec<String> {
    let topo = Topology::load(net).unwrap_or_else(|e| panic!("{}: {e}", net.display()));
    let cfg = SimConfig::default();
    let sim = Ibsim::start_with(
        net,
        &IbsimConfig {
            linear_fdb_cap: Some(u32::from(cfg.linear_fdb_cap)),
            multicast_fdb_cap: Some(u32::from(cfg.multicast_fdb_cap)),
            ..IbsimConfig::default()
        },
    )
    .unwrap_or_else(|e| panic!("{}: ibsim start: {e}", net.display()));

    // ibsim's default client goes to the first node's first port: port 0 of a switch, port 1 of a CA.
    let first = topo.nodes.first().expect("example files are not empty");
    let default_port = u8::from(first.kind != NodeKind::Switch);
    let mut diffs = compare(net, &sim, &topo, (0, default_port), None);

    // A CA client always sits on port 1 under ibsim, so pick a CA whose port 1 is cabled.
    let ca = topo.nodes.iter().position(|n| n.kind == NodeKind::Ca && n.peer(1).is_some());
    let ca = ca.unwrap_or_else(|| panic!("{}: no CA with port 1 cabled", net.display()));
    diffs.extend(compare(net, &sim, &topo, (ca, 1), Some(&topo.nodes[ca].name)));
    diffs
}

#[test]
fn ibsim_and_our_sim_agree_on_discovered_topology() {
    if !require_ibsim() {
        return;
    }
    let examples = net_examples().expect("ibsim example directory is readable");
    assert!(!examples.is_empty(), "no example .net files found");
    // One ibsim per file, all at once: each has its own socket and run directory.
    let diffs: Vec<String> = std::thread::scope(|s| {
        let runs: Vec<_> = examples.iter().map(|net| s.spawn(|| check_example(net))).collect();
        runs.into_iter().flat_map(|r| r.join().expect("example check panicked")).collect()
    });
    assert!(
        diffs.is_empty(),
        "ibsim and our simulator disagree ({} differences, first {} shown):\n  {}",
        diffs.len(),
        SHOWN.min(diffs.len()),
        diffs[..SHOWN.min(diffs.len())].join("\n  ")
    );
}

/// The harness this test stands on: console commands take effect and return their output,
/// long-running clients write to their files, and dropping the `Ibsim` ends ibsim and removes
/// its run directory.
#[test]
fn harness_console_clients_and_cleanup() {
    if !require_ibsim() {
        return;
    }
    // net.1: Switch1 [1] - Hca1 [1], Switch1 [4] - Hca2 [1].
    let mut sim = Ibsim::start(&Path::new(NET_EXAMPLES_DIR).join("net.1")).expect("ibsim starts");
    let (pid, dir) = (sim.ibsim_pid(), sim.dir().to_owned());
    assert!(Path::new(&format!("/proc/{pid}")).exists(), "ibsim runs as pid {pid}");

    let port4 = |sim: &Ibsim| {
        let out = sim.run("smpquery", &["-D", "portinfo", "0", "4"]).expect("smpquery runs");
        assert!(out.success(), "{}", out.describe());
        let f: BTreeMap<String, String> = dump_fields(&out.stdout).into_iter().collect();
        (f["LinkState"].clone(), f["PhysLinkState"].clone())
    };
    assert_eq!(port4(&sim), ("Initialize".to_owned(), "LinkUp".to_owned()));
    let dump = sim.console(r#"Dump "Switch1""#).expect("console answers");
    assert!(dump.contains(r#"[4]	"Hca2"[1]"#), "Dump lists the Hca2 link:\n{dump}");
    sim.console(r#"Unlink "Hca2""#).expect("console answers");
    assert_eq!(port4(&sim), ("Down".to_owned(), "Polling".to_owned()));

    let mut client = sim.spawn_at(Some("Hca1"), "smpquery", &["-D", "nodeinfo", "0"]).expect("client starts");
    let status = client.wait_timeout(Duration::from_secs(20)).expect("wait works");
    assert!(status.is_some_and(|s| s.success()), "client: {status:?}\n{}", client.stderr());
    assert!(client.stdout().contains("Channel Adapter"), "client output:\n{}", client.stdout());
    drop(client);

    drop(sim);
    assert!(!Path::new(&format!("/proc/{pid}")).exists(), "ibsim (pid {pid}) is gone after drop");
    assert!(!dir.exists(), "run directory {} is removed after drop", dir.display());
}
