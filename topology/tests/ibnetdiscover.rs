//! Parsing what `ibnetdiscover` printed about an ibsim fabric gives back the fabric ibsim was
//! fed: same nodes (`NodeGUIDs`, kinds, port counts, `SystemImageGUIDs`, vendor and device ids,
//! `NodeDescriptions`), same port GUIDs and the same cables with the same width and speed.
//!
//! The `*.ibnetdiscover` files under `tests/data/` were captured with ibsim 0.10 and
//! infiniband-diags 44.0 (`IBSIM_SOCKNAME=x ibsim -s -n FILE`, then
//! `IBSIM_SOCKNAME=x ibsim-run ibnetdiscover`), from `tests/data/two-switch.net` (ibsim style,
//! GUIDs numbered by ibsim) and from generated fabrics written by `Topology::to_net`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use ibsm_topology::generators::{FatTree, GenSpec};
use ibsm_topology::{NodeKind, Topology};

fn data(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(file)
}

fn load(file: &str) -> Topology {
    Topology::load(&data(file)).unwrap_or_else(|e| panic!("{e}"))
}

/// Per port: (port GUID, remote `NodeGUID`, remote port, width, speed, extended speed), with
/// ibsim's defaults (4x, SDR, none) filled in for unspecified attributes.
type Ports = BTreeMap<u8, (u64, u64, u8, u8, u8, u8)>;

/// Per `NodeGUID`: (kind, ports, `SystemImageGUID`, vendor, device, `NodeDescription`, cabled ports).
type View = BTreeMap<u64, (NodeKind, u8, u64, u32, u16, String, Ports)>;

/// The topology keyed by GUIDs instead of names and file order.
fn view(t: &Topology) -> View {
    t.nodes
        .iter()
        .map(|n| {
            let ports = (1..=n.num_ports)
                .filter_map(|p| {
                    let peer = n.peer(p)?;
                    let a = peer.attrs;
                    let remote = t.nodes[peer.node].node_guid.0;
                    let attrs = (a.width.unwrap_or(2), a.speed.unwrap_or(1), a.ext_speed.unwrap_or(0));
                    Some((p, (n.port_guid(p).0, remote, peer.port, attrs.0, attrs.1, attrs.2)))
                })
                .collect();
            let info = (n.kind, n.num_ports, n.sys_guid.0, n.vendor_id, n.device_id, n.node_desc().to_owned(), ports);
            (n.node_guid.0, info)
        })
        .collect()
}

#[test]
fn ibsim_style_file_matches_its_discovery() {
    let fed = load("two-switch.net");
    let seen = load("two-switch.ibnetdiscover");
    assert_eq!(fed.nodes.len(), 6);
    assert_eq!(fed.link_count(), 6);
    // The discovery names nodes by GUID and carries the original ids as descriptions.
    assert_eq!(seen.nodes[0].name, "S-0000000000200001");
    assert_eq!(seen.nodes[0].node_desc(), "Switch2");
    assert_eq!(view(&fed), view(&seen));
}

#[test]
fn generated_fabrics_match_their_discovery() {
    let cases = [
        ("fat-tree-2l-k4.ibnetdiscover", GenSpec::fat_tree(2, 4)),
        ("rail-k4-r2.ibnetdiscover", GenSpec::rail_fat_tree(4, 2)),
        ("fat-tree-3l-k4-degraded.ibnetdiscover", GenSpec::FatTree(FatTree::new(3, 4).degraded(3, 2, 42))),
        ("fat-tree-3l-k8.ibnetdiscover", GenSpec::fat_tree(3, 8)),
    ];
    for (file, spec) in cases {
        let generated = spec.generate().unwrap();
        let seen = load(file);
        assert_eq!(seen.nodes.len(), generated.nodes.len(), "{file}");
        assert_eq!(view(&generated), view(&seen), "{file}");
    }
}

#[test]
fn discovery_survives_a_write_and_reparse() {
    let seen = load("two-switch.ibnetdiscover");
    let again = Topology::parse_str(&seen.to_net(), "rewritten").unwrap();
    assert_eq!(again, seen);
}
