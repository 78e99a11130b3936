//! Generator tests: node and cable counts per shape, structural properties (every leaf sees
//! every spine, rails, torus neighbours, connectivity, diameter), port ranges, symmetric
//! links, disjoint GUID ranges, determinism per seed, exact degradation, and parameter errors.

use std::collections::{HashMap, HashSet, VecDeque};

use ibsm_mad::Guid;
use ibsm_topology::generators::{
    CA_GUID_BASE, Degrade, FatTree, GenError, GenSpec, Grid, RailFatTree, RandomGraph, SWITCH_GUID_BASE,
    remove_random_links,
};
use ibsm_topology::{NodeKind, Topology};

/// Invariants every generated topology must hold.
fn check(t: &Topology) {
    let mut names = HashSet::new();
    let mut guids = HashSet::new();
    for (i, n) in t.nodes.iter().enumerate() {
        assert!(names.insert(n.name.as_str()), "duplicate name {}", n.name);
        assert!(guids.insert(n.node_guid), "duplicate GUID {}", n.node_guid);
        assert_eq!(n.links.len(), usize::from(n.num_ports) + 1, "{}", n.name);
        assert_eq!(n.port_guids.len(), usize::from(n.num_ports) + 1, "{}", n.name);
        assert!(n.links[0].is_none(), "{} port 0 cabled", n.name);
        if n.kind == NodeKind::Switch {
            assert_eq!(n.node_guid.0 & !0xffff_ffff_ffff, SWITCH_GUID_BASE, "{}", n.name);
            assert!(n.port_guids.iter().all(|g| *g == n.node_guid));
        } else {
            assert_eq!(n.node_guid.0 & !0xffff_ffff_ffff, CA_GUID_BASE, "{}", n.name);
            for p in 1..=n.num_ports {
                assert_eq!(n.port_guid(p), Guid(n.node_guid.0 + u64::from(p)));
            }
        }
        for (p, peer) in n.links.iter().enumerate() {
            let Some(peer) = peer else { continue };
            let r = &t.nodes[peer.node];
            assert!(peer.port >= 1 && peer.port <= r.num_ports, "{}[{p}] -> bad port", n.name);
            let back = r.links[usize::from(peer.port)].expect("asymmetric link");
            assert_eq!((back.node, usize::from(back.port)), (i, p), "asymmetric link at {}[{p}]", n.name);
            assert_eq!(back.attrs, peer.attrs);
            assert!((peer.node, usize::from(peer.port)) != (i, p));
        }
    }
}

fn counts(t: &Topology) -> (usize, usize, usize) {
    (t.switch_count(), t.ca_count(), t.link_count())
}

fn node<'a>(t: &'a Topology, name: &str) -> &'a ibsm_topology::TopoNode {
    &t.nodes[t.find(name).unwrap_or_else(|| panic!("no node {name}"))]
}

/// Names of the nodes cabled to `name`, in port order.
fn neighbours(t: &Topology, name: &str) -> Vec<String> {
    node(t, name).links.iter().flatten().map(|p| t.nodes[p.node].name.clone()).collect()
}

/// Largest number of switches on a shortest CA-to-CA path (`None` if some pair is apart).
fn switch_diameter(t: &Topology) -> Option<usize> {
    let cas: Vec<usize> = (0..t.nodes.len()).filter(|&i| t.nodes[i].kind != NodeKind::Switch).collect();
    let mut worst = 0;
    // From every CA attached to a distinct switch is enough; sample the first 64 CAs.
    for &s in cas.iter().take(64) {
        let mut dist = vec![usize::MAX; t.nodes.len()];
        dist[s] = 0;
        let mut q = VecDeque::from([s]);
        while let Some(x) = q.pop_front() {
            if x != s && t.nodes[x].kind != NodeKind::Switch {
                continue; // paths do not go through CAs
            }
            for p in t.nodes[x].links.iter().flatten() {
                if dist[p.node] == usize::MAX {
                    dist[p.node] = dist[x] + 1;
                    q.push_back(p.node);
                }
            }
        }
        for &c in &cas {
            if dist[c] == usize::MAX {
                return None;
            }
            worst = worst.max(dist[c].saturating_sub(1));
        }
    }
    Some(worst)
}

fn switches_connected(t: &Topology) -> bool {
    let sw: Vec<usize> = (0..t.nodes.len()).filter(|&i| t.nodes[i].kind == NodeKind::Switch).collect();
    let Some(&start) = sw.first() else { return true };
    let mut seen = vec![false; t.nodes.len()];
    seen[start] = true;
    let mut q = VecDeque::from([start]);
    while let Some(x) = q.pop_front() {
        for p in t.nodes[x].links.iter().flatten() {
            if t.nodes[p.node].kind == NodeKind::Switch && !seen[p.node] {
                seen[p.node] = true;
                q.push_back(p.node);
            }
        }
    }
    sw.iter().all(|&i| seen[i])
}

#[test]
fn two_level_fat_tree_shapes() {
    for k in [2u8, 4, 8, 24, 36] {
        let t = GenSpec::fat_tree(2, k).generate().unwrap();
        check(&t);
        let k = usize::from(k);
        // k leaves + k/2 spines, k/2 hosts per leaf, every switch port used.
        assert_eq!(counts(&t), (k + k / 2, k * k / 2, k * k / 2 + k * k / 2), "k={k}");
        assert!(t.nodes.iter().filter(|n| n.kind == NodeKind::Switch).all(|n| n.links.iter().flatten().count() == k));
        for i in 0..k {
            let up: HashSet<String> =
                neighbours(&t, &format!("leaf-{i}")).into_iter().filter(|n| n.starts_with("spine-")).collect();
            assert_eq!(up.len(), k / 2, "leaf-{i} must reach every spine once");
        }
        assert_eq!(switch_diameter(&t), Some(3));
    }
}

#[test]
fn oversubscribed_two_level() {
    // 2:1 at k = 6: 2 uplinks and 4 hosts per leaf, 6 leaves, 2 spines.
    let t = GenSpec::FatTree(FatTree::new(2, 6).oversubscribed(2)).generate().unwrap();
    check(&t);
    assert_eq!(counts(&t), (8, 24, 24 + 12));
    let leaf = neighbours(&t, "leaf-0");
    assert_eq!(leaf.iter().filter(|n| n.starts_with('h')).count(), 4);
    assert_eq!(leaf.iter().filter(|n| n.starts_with("spine-")).count(), 2);
    // 3:1 at k = 8: 2 uplinks, 6 hosts.
    let t = GenSpec::FatTree(FatTree::new(2, 8).oversubscribed(3)).generate().unwrap();
    check(&t);
    assert_eq!(counts(&t), (10, 48, 48 + 16));
}

#[test]
fn three_level_fat_tree_shapes() {
    for (k, switches, hosts) in [(4usize, 20, 16), (8, 80, 128), (24, 720, 3456), (48, 2880, 27648)] {
        let t = GenSpec::fat_tree(3, k as u8).generate().unwrap();
        check(&t);
        // k^3/4 hosts; k^2/2 edge + k^2/2 aggregation + k^2/4 core switches.
        assert_eq!((t.switch_count(), t.ca_count()), (switches, hosts), "k={k}");
        assert_eq!(t.link_count(), hosts + k * k / 2 * (k / 2) * 2, "k={k}");
        let kind_count = |p: &str| t.nodes.iter().filter(|n| n.name.starts_with(p)).count();
        assert_eq!((kind_count("edge-"), kind_count("agg-"), kind_count("core-")), (k * k / 2, k * k / 2, k * k / 4));
        assert!(t.nodes.iter().filter(|n| n.kind == NodeKind::Switch).all(|n| n.links.iter().flatten().count() == k));
        if k <= 8 {
            assert_eq!(switch_diameter(&t), Some(5), "k={k}");
        }
        if k == 48 {
            let l = t.ibsim_limits();
            assert_eq!((l.nodes, l.switches, l.ports), (30528, 2880, 2880 * 49 + 27648));
        }
    }
}

#[test]
fn three_level_pods_and_cores() {
    let k = 6usize;
    let t = GenSpec::fat_tree(3, k as u8).generate().unwrap();
    check(&t);
    // Every core reaches exactly one aggregation switch of each of the k pods.
    let pod_of_agg = |name: &str| name.strip_prefix("agg-").unwrap().parse::<usize>().unwrap() / (k / 2);
    for c in 0..k * k / 4 {
        let pods: Vec<usize> = neighbours(&t, &format!("core-{c}")).iter().map(|a| pod_of_agg(a)).collect();
        assert_eq!(pods, (0..k).collect::<Vec<_>>(), "core-{c}");
    }
    // Every edge reaches all aggregation switches of its own pod.
    for e in 0..k * k / 2 {
        let pod = e / (k / 2);
        let aggs: HashSet<usize> = neighbours(&t, &format!("edge-{e}"))
            .iter()
            .filter(|n| n.starts_with("agg-"))
            .map(|a| a.strip_prefix("agg-").unwrap().parse().unwrap())
            .collect();
        assert_eq!(aggs, (pod * k / 2..(pod + 1) * k / 2).collect(), "edge-{e}");
    }
}

#[test]
fn oversubscribed_three_level() {
    // k = 6, 2:1: 2 uplinks / 4 hosts per edge; per pod 3 edges and 2 aggs; 2*3 cores.
    let t = GenSpec::FatTree(FatTree::new(3, 6).oversubscribed(2)).generate().unwrap();
    check(&t);
    assert_eq!((t.switch_count(), t.ca_count()), (18 + 12 + 6, 72));
    assert_eq!(t.link_count(), 72 + 18 * 2 + 12 * 3);
    assert_eq!(switch_diameter(&t), Some(5));
}

#[test]
fn rail_optimized() {
    let t = GenSpec::rail_fat_tree(8, 4).generate().unwrap();
    check(&t);
    // 2 groups of 4 hosts, 4 rails: 8 leaves, 4 spines, 32 HCAs.
    assert_eq!(counts(&t), (12, 32, 32 + 8 * 4));
    let mut sys_of_host: HashMap<usize, Guid> = HashMap::new();
    for n in t.nodes.iter().filter(|n| n.kind == NodeKind::Ca) {
        let (host, rail) = n.name.strip_prefix('h').unwrap().split_once("-r").unwrap();
        let leaf = neighbours(&t, &n.name).pop().unwrap();
        assert!(leaf.starts_with(&format!("leaf-r{rail}-")), "{} on {leaf}", n.name);
        let host: usize = host.parse().unwrap();
        assert_eq!(*sys_of_host.entry(host).or_insert(n.sys_guid), n.sys_guid, "{}", n.name);
    }
    assert_eq!(sys_of_host.len(), 8);
    assert_eq!(sys_of_host.values().collect::<HashSet<_>>().len(), 8);
    let t = GenSpec::RailFatTree(RailFatTree { radix: 8, rails: 2, groups: 1, degrade: Degrade::default() })
        .generate()
        .unwrap();
    assert_eq!(counts(&t), (6, 8, 8 + 2 * 4));
    assert_eq!(switch_diameter(&t), Some(3));
}

#[test]
fn degraded_trees_remove_exactly_what_was_asked() {
    let base = GenSpec::fat_tree(3, 8).generate().unwrap();
    for (links, switches) in [(0, 0), (1, 0), (17, 0), (0, 1), (0, 9), (5, 3)] {
        let spec = GenSpec::FatTree(FatTree::new(3, 8).degraded(links, switches, 99));
        let t = spec.generate().unwrap();
        check(&t);
        assert_eq!(t.switch_count(), base.switch_count() - switches);
        assert_eq!(t.ca_count(), base.ca_count());
        // The removed switches (all aggregation or core) take their cables with them.
        let removed: HashSet<usize> =
            (0..base.nodes.len()).filter(|&i| t.find(&base.nodes[i].name).is_none()).collect();
        assert_eq!(removed.len(), switches);
        assert!(removed.iter().all(|&i| !base.nodes[i].name.starts_with("edge-")));
        let lost = base.nodes.iter().enumerate().map(|(i, n)| {
            n.links.iter().flatten().filter(|p| removed.contains(&i) || removed.contains(&p.node)).count()
        });
        let lost_cables = lost.sum::<usize>() / 2;
        assert_eq!(t.link_count(), base.link_count() - links - lost_cables, "{links} {switches}");
        assert!(t.nodes.iter().all(|n| !n.name.starts_with("edge-") || base.find(&n.name).is_some()));
        assert_eq!(t.nodes.iter().filter(|n| n.name.starts_with("edge-")).count(), 32);
        // Deterministic for a seed, different for another.
        assert_eq!(spec.generate().unwrap(), t);
        if links + switches > 0 {
            let other = GenSpec::FatTree(FatTree::new(3, 8).degraded(links, switches, 100)).generate().unwrap();
            assert_ne!(other, t, "{links} {switches}");
        }
    }
    let too_many = GenSpec::FatTree(FatTree::new(2, 4).degraded(9, 0, 1)).generate();
    assert!(matches!(too_many, Err(GenError::Invalid { what: "remove-links", .. })), "{too_many:?}");
    let too_many = GenSpec::FatTree(FatTree::new(2, 4).degraded(0, 3, 1)).generate();
    assert!(matches!(too_many, Err(GenError::Invalid { what: "remove-switches", .. })), "{too_many:?}");
    let mut t = GenSpec::fat_tree(2, 4).generate().unwrap();
    remove_random_links(&mut t, 8, 3).unwrap();
    assert_eq!(t.link_count(), 8, "only the host cables remain");
    check(&t);
}

#[test]
fn torus_and_mesh() {
    let t = GenSpec::torus(&[3, 3], 2).generate().unwrap();
    check(&t);
    assert_eq!(counts(&t), (9, 18, 18 + 18));
    for n in t.nodes.iter().filter(|n| n.kind == NodeKind::Switch) {
        let sw: HashSet<String> = neighbours(&t, &n.name).into_iter().filter(|x| x.starts_with("sw-")).collect();
        assert_eq!(sw.len(), 4, "{}", n.name);
    }
    assert_eq!(neighbours(&t, "sw-0-0")[..4], ["sw-1-0", "sw-2-0", "sw-0-1", "sw-0-2"]);
    let m = GenSpec::mesh(&[3, 3], 1).generate().unwrap();
    check(&m);
    assert_eq!(counts(&m), (9, 9, 9 + 12));
    let deg = |name: &str| neighbours(&m, name).iter().filter(|x| x.starts_with("sw-")).count();
    assert_eq!((deg("sw-0-0"), deg("sw-1-0"), deg("sw-1-1")), (2, 3, 4));
    let t3 = GenSpec::torus(&[4, 3, 2], 1).generate().unwrap();
    check(&t3);
    // Sizes >= 2 wrap: 3 cables per switch; the size-2 dimension gives parallel pairs.
    assert_eq!(counts(&t3), (24, 24, 24 + 24 * 3));
    assert_eq!(switch_diameter(&t3), Some(1 + 2 + 1 + 1));
    let ring = GenSpec::torus(&[5, 1], 0).generate().unwrap();
    check(&ring);
    assert_eq!(counts(&ring), (5, 0, 5));
}

#[test]
fn dragonfly_groups_all_to_all_inside_and_between() {
    let t = GenSpec::dragonfly(9, 4, 2).generate().unwrap();
    check(&t);
    // 9 groups of 4: 6 local cables per group, 36 global ones, 2 hosts per switch.
    assert_eq!(counts(&t), (36, 72, 9 * 6 + 36 + 72));
    let group = |name: &str| name.split('-').nth(1).map(str::to_owned);
    let mut between: HashMap<(String, String), usize> = HashMap::new();
    for n in t.nodes.iter().filter(|n| n.kind == NodeKind::Switch) {
        let sw: Vec<String> = neighbours(&t, &n.name).into_iter().filter(|x| x.starts_with("sw-")).collect();
        let (inside, outside): (Vec<_>, Vec<_>) = sw.iter().partition(|x| group(x) == group(&n.name));
        assert_eq!(inside.len(), 3, "{}: all-to-all inside the group", n.name);
        // 8 global cables over 4 switches: 2 each.
        assert_eq!(outside.len(), 2, "{}", n.name);
        for o in outside {
            *between.entry((group(&n.name).unwrap(), group(o).unwrap())).or_default() += 1;
        }
    }
    assert_eq!(between.len(), 9 * 8, "every ordered pair of groups");
    assert!(between.values().all(|&c| c == 1), "one cable between every two groups");
    assert_eq!(switch_diameter(&t), Some(4), "local, global, local");
    // Groups of one: a full graph of switches.
    let k = GenSpec::dragonfly(5, 1, 1).generate().unwrap();
    check(&k);
    assert_eq!(counts(&k), (5, 5, 10 + 5));
    for bad in [GenSpec::dragonfly(1, 4, 1), GenSpec::dragonfly(4, 0, 1), GenSpec::dragonfly(300, 1, 1)] {
        assert!(matches!(bad.generate(), Err(GenError::Invalid { .. })), "{bad:?}");
    }
}

#[test]
fn random_graphs() {
    let spec = RandomGraph { switches: 40, radix: 12, hosts_per_switch: 3, links: 120, seed: 5 };
    let t = GenSpec::Random(spec).generate().unwrap();
    check(&t);
    assert_eq!(counts(&t), (40, 120, 120 + 120));
    assert!(switches_connected(&t));
    assert_eq!(GenSpec::Random(spec).generate().unwrap(), t);
    assert_ne!(GenSpec::Random(RandomGraph { seed: 6, ..spec }).generate().unwrap(), t);
    // Minimum cables: a tree, still connected, for many seeds.
    for seed in 0..50 {
        let s = RandomGraph { switches: 30, radix: 4, hosts_per_switch: 2, links: 29, seed };
        let t = GenSpec::Random(s).generate().unwrap();
        check(&t);
        assert!(switches_connected(&t), "seed {seed}");
        assert_eq!(t.link_count(), 29 + 60);
    }
    // Every switch port filled.
    let full = GenSpec::random(10, 5, 1, 20, 3).generate().unwrap();
    check(&full);
    assert!(full.nodes.iter().all(|n| n.links.iter().flatten().count() == usize::from(n.num_ports)));
    let single = GenSpec::random(1, 4, 4, 0, 0).generate().unwrap();
    assert_eq!(counts(&single), (1, 4, 4));
}

#[test]
fn generation_is_deterministic_and_ordered() {
    let a = GenSpec::fat_tree(3, 6).generate().unwrap();
    assert_eq!(a, GenSpec::fat_tree(3, 6).generate().unwrap());
    assert_eq!(a.nodes[0].name, "core-0");
    assert_eq!(a.nodes[0].node_guid, Guid(SWITCH_GUID_BASE));
    let h0 = node(&a, "h0");
    assert_eq!(h0.node_guid, Guid(CA_GUID_BASE));
    assert_eq!(node(&a, "h1").node_guid, Guid(CA_GUID_BASE + 0x100));
}

#[test]
fn invalid_specs_are_errors() {
    let bad = [
        GenSpec::fat_tree(2, 5),
        GenSpec::fat_tree(2, 0),
        GenSpec::fat_tree(3, 2),
        GenSpec::fat_tree(4, 8),
        GenSpec::FatTree(FatTree::new(2, 8).oversubscribed(0)),
        GenSpec::FatTree(FatTree::new(2, 8).oversubscribed(2)),
        GenSpec::rail_fat_tree(8, 0),
        GenSpec::rail_fat_tree(8, 9),
        GenSpec::RailFatTree(RailFatTree { radix: 8, rails: 4, groups: 3, degrade: Degrade::default() }),
        GenSpec::torus(&[], 1),
        GenSpec::torus(&[2, 2, 2, 2], 1),
        GenSpec::mesh(&[3, 0], 1),
        GenSpec::Grid(Grid { dims: vec![2, 2], wrap: true, hosts_per_switch: 252 }),
        GenSpec::random(0, 8, 1, 0, 0),
        GenSpec::random(10, 8, 7, 9, 0),
        GenSpec::random(10, 8, 1, 8, 0),
        GenSpec::random(10, 8, 1, 36, 0),
        GenSpec::random(3, 8, 9, 2, 0),
    ];
    for spec in bad {
        assert!(matches!(spec.generate(), Err(GenError::Invalid { .. })), "{spec:?}");
    }
    assert!(matches!(GenSpec::fat_tree(3, 254).generate(), Err(GenError::TooLarge { .. })));
    assert!(matches!(GenSpec::torus(&[1000, 1000, 1000], 0).generate(), Err(GenError::TooLarge { .. })));
    let e = GenSpec::fat_tree(2, 5).generate().unwrap_err();
    assert_eq!(e.to_string(), "invalid radix: must be even and at least 2, found 5");
}
