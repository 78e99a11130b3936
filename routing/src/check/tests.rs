//! Hand-built fabrics and hand-written tables, with expected figures worked out on paper.

use ibsm_mad::{Guid, Lid, PortNum};

use super::*;
use crate::{CaPortView, CaView, Lft, Neighbor, SwitchView};

#[allow(clippy::unnecessary_wraps)]
fn nb(node: NodeId, port: u8) -> Option<Neighbor> {
    Some(Neighbor { node, port: PortNum(port) })
}

/// Leaves L0 (LID 1), L1 (2); spines S2 (3), S3 (4); CA i (LID 5 + i) on leaf i/2 port 1 + i%2.
/// Leaf ports 3/4 go to S2/S3; spine port 1/2 go to L0/L1.
fn two_level() -> FabricView {
    let leaf = |l: usize| SwitchView {
        guid: Guid(0x100 + l as u64),
        lid: Lid(1 + l as u16),
        ports: vec![
            None,
            nb(NodeId::Ca(2 * l), 1),
            nb(NodeId::Ca(2 * l + 1), 1),
            nb(NodeId::Switch(2), l as u8 + 1),
            nb(NodeId::Switch(3), l as u8 + 1),
        ],
    };
    let spine = |s: usize| SwitchView {
        guid: Guid(0x100 + s as u64),
        lid: Lid(1 + s as u16),
        ports: vec![None, nb(NodeId::Switch(0), s as u8 + 1), nb(NodeId::Switch(1), s as u8 + 1)],
    };
    let ca = |i: usize| CaView {
        guid: Guid(0x300 + i as u64),
        ports: vec![CaPortView {
            num: PortNum(1),
            lid: Lid(5 + i as u16),
            neighbor: nb(NodeId::Switch(i / 2), 1 + (i % 2) as u8),
        }],
    };
    FabricView { switches: vec![leaf(0), leaf(1), spine(2), spine(3)], cas: (0..4).map(ca).collect(), lmc: 0 }
}

/// Tables given as `(switch, [port for LID 1..=8])`.
fn tables(rows: [[u8; 8]; 4]) -> Routes {
    Routes {
        tables: rows
            .iter()
            .map(|r| {
                let mut t = Lft::unrouted(8);
                for (i, &p) in r.iter().enumerate() {
                    t.set(i + 1, PortNum(p));
                }
                std::sync::Arc::new(t)
            })
            .collect(),
    }
}

/// CA 2 over S2, CA 3 over S3 from leaf 0 (and symmetric from leaf 1): the balanced routing.
fn balanced() -> Routes {
    tables([
        // LID: 1  2  3  4  5  6  7  8
        [0, 3, 3, 4, 1, 2, 3, 4],
        [3, 0, 3, 4, 3, 4, 1, 2],
        [1, 2, 0, 1, 1, 1, 2, 2],
        [1, 2, 1, 0, 1, 1, 2, 2],
    ])
}

#[test]
fn balanced_two_level_tree() {
    let v = two_level();
    let r = check(&v, &balanced());
    assert_eq!((r.switches, r.hosts), (4, 4));
    assert_eq!((r.pairs, r.reachable, r.black_holes, r.loops), (12, 12, 0, 0));
    assert_eq!((r.switch_pairs, r.switch_reachable), (4 * 7, 4 * 7));
    assert_eq!((r.ca_to_switch_pairs, r.ca_to_switch_reachable), (16, 16));
    assert!(r.failures.is_empty());
    // 4 same-leaf pairs of 2 hops, 8 cross pairs of 4 hops.
    assert_eq!(r.hops.max, 4);
    assert!((r.hops.mean - 40.0 / 12.0).abs() < 1e-9);
    assert!((r.hops.shortest_mean - r.hops.mean).abs() < 1e-9);
    assert_eq!(r.hops.non_minimal, 0);
    // Every directed leaf-spine link carries the routes of 2 sources to 1 destination.
    assert_eq!(r.forwarding_index.links, 8);
    assert_eq!(r.forwarding_index.max, 2);
    assert!((r.forwarding_index.mean - 2.0).abs() < 1e-9);
    let s = r.shifts.unwrap();
    assert_eq!((s.shifts, s.worst, s.contended_shifts), (3, 1, 0));
    assert_eq!(r.credit_loops, CreditLoops::None);
    assert!(r.is_clean());
    let text = r.to_string();
    assert!(text.contains("12 checked, 12 reachable"), "{text}");
}

#[test]
fn both_remote_cas_over_one_spine_contend_in_shift_2() {
    let v = two_level();
    let routes = tables([
        [0, 3, 3, 4, 1, 2, 3, 3],
        [3, 0, 3, 4, 3, 3, 1, 2],
        [1, 2, 0, 1, 1, 1, 2, 2],
        [1, 2, 1, 0, 1, 1, 2, 2],
    ]);
    let r = check(&v, &routes);
    assert_eq!(r.reachable, 12);
    let s = r.shifts.unwrap();
    // Shift 1: 1->2 and 3->0 only cross; shift 2: 0->2, 1->3 share L0->S2.
    assert_eq!((s.worst, s.worst_shift), (2, 2));
    // L0->S2 carries CA0, CA1 to CA2 and CA3: 4 routes.
    assert_eq!(r.forwarding_index.max, 4);
    assert_eq!(r.forwarding_index.worst.map(|c| (c.switch, c.port)), Some((Guid(0x100), PortNum(3))));
    // Each link's figure: one per directed switch link, in view order, summing to the mean.
    assert_eq!(r.link_loads.len(), r.forwarding_index.links);
    let first = r.link_loads.first().map(|l| (l.channel.switch, l.channel.port, l.routes));
    assert_eq!(first, Some((Guid(0x100), PortNum(3), 4)));
    assert_eq!(r.link_loads.iter().map(|l| l.routes).max(), Some(r.forwarding_index.max));
    let sum: u64 = r.link_loads.iter().map(|l| l.routes).sum();
    assert!((sum as f64 / r.link_loads.len() as f64 - r.forwarding_index.mean).abs() < 1e-9);
}

#[test]
fn loops_black_holes_and_dead_ports_are_counted() {
    let v = two_level();
    let routes = tables([
        // L0 sends CA 2 (LID 7) to S2, which sends it back: CA0 and CA1 loop.
        [0, 3, 3, 4, 1, 2, 3, 4],
        // L1 has no route to CA 0 (LID 5): CA2 and CA3 black-holed; CA 1 (LID 6) on port 9 (none).
        [3, 0, 3, 4, 0xff, 9, 1, 2],
        [1, 2, 0, 1, 1, 1, 1, 2],
        [1, 2, 1, 0, 1, 1, 2, 2],
    ]);
    let r = check(&v, &routes);
    assert_eq!(r.pairs, 12);
    assert_eq!(r.loops, 2);
    assert_eq!(r.black_holes, 4);
    assert_eq!(r.reachable, 6);
    assert!(!r.is_clean());
    assert!(r.failures.iter().any(|f| f.kind == FailureKind::Loop && f.dlid == Lid(7)));
    assert!(r.failures.iter().any(|f| f.kind == FailureKind::Unrouted && f.dlid == Lid(5) && f.at == Guid(0x101)));
    assert!(r.failures.iter().any(|f| f.kind == FailureKind::DeadPort(PortNum(9))));
    // Delivering to the wrong CA is a black hole too.
    let mut wrong = balanced();
    std::sync::Arc::make_mut(&mut wrong.tables[0]).set(5, PortNum(2));
    let r = check(&v, &wrong);
    assert!(r.failures.iter().any(|f| f.kind == FailureKind::Misdelivered(PortNum(2))));
    assert_eq!(r.black_holes, 3);
}

/// `n` switches in a ring (port 1 clockwise, port 2 counter-clockwise), a CA on port 3 of each;
/// switch `i` has LID `i + 1`, its CA LID `n + i + 1`. Every route goes clockwise.
fn clockwise_ring(n: usize) -> (FabricView, Routes) {
    let v = crate::testing::ring(n);
    let top = (2 * n) as u16;
    let tables = (0..n)
        .map(|i| {
            let mut t = Lft::unrouted(top);
            for lid in 1..=top {
                let owner = (usize::from(lid) - 1) % n;
                let local = owner == i;
                t.entries_mut()[usize::from(lid)] = match (local, usize::from(lid) <= n) {
                    (true, true) => PortNum(0),
                    (true, false) => PortNum(3),
                    _ => PortNum(1),
                };
            }
            t
        })
        .collect();
    (v, Routes::from_tables(tables))
}

#[test]
fn clockwise_ring_has_a_credit_loop() {
    let (v, routes) = clockwise_ring(4);
    let r = check(&v, &routes);
    assert_eq!(r.reachable, r.pairs);
    assert_eq!(r.pairs, 12);
    let CreditLoops::Found(cycle) = &r.credit_loops else { panic!("no cycle: {r}") };
    assert_eq!(cycle.len(), 4);
    for w in cycle.windows(2) {
        assert_eq!(w[0].to, w[1].switch, "cycle is not a chain: {cycle:?}");
    }
    assert!(r.to_string().contains("FOUND"));
    // Only 3 of 4 switches: a line, no cycle possible.
    let (mut v, mut routes) = clockwise_ring(4);
    v.switches[3].ports[1] = None;
    v.switches[0].ports[2] = None;
    routes.tables[3] = Lft::unrouted(8).into();
    let r = check(&v, &routes);
    assert_eq!(r.credit_loops, CreditLoops::None);
}

/// Node numbers of `cycle`'s channels in `deps`, asserting each consecutive pair (and the last
/// with the first) is a dependency.
fn assert_real_cycle(deps: &ChannelDeps, cycle: &[Channel]) {
    assert!(!cycle.is_empty());
    let nodes: Vec<usize> = cycle
        .iter()
        .map(|c| deps.channels().iter().position(|d| d == c).unwrap_or_else(|| panic!("{c} is no channel")))
        .collect();
    for (i, &a) in nodes.iter().enumerate() {
        let b = nodes[(i + 1) % nodes.len()];
        assert!(deps.depends(a, b), "{} does not depend on {}: {cycle:?}", cycle[i], cycle[(i + 1) % cycle.len()]);
    }
}

#[test]
fn clockwise_ring_cycle_is_a_real_cycle_and_the_only_component() {
    let (v, routes) = clockwise_ring(4);
    let r = check(&v, &routes);
    let CreditLoops::Found(cycle) = &r.credit_loops else { panic!("no cycle: {r}") };
    let deps = ChannelDeps::new(&v, &routes, CdgTraffic::DataPlane);
    assert_real_cycle(&deps, cycle);
    // 4 clockwise and 4 counter-clockwise channels; each clockwise one depends on the next.
    let stats = r.cdg.unwrap();
    assert_eq!((stats.channels, stats.dependencies, stats.cyclic_components, stats.cyclic_channels), (8, 4, 1, 4));
    assert_eq!(r.cdg, Some(deps.credit_loops().1));
    assert!(r.to_string().contains("FOUND in 1 cyclic component(s) holding 4 of 8 channels"), "{r}");
    let dfs = deps.first_cycle_dfs().unwrap();
    assert_eq!(dfs.len(), 4);
}

/// A ring of `n` switches wired as [`clockwise_ring`], routed by engine `name`.
fn ring_routed_by(n: usize, name: &str) -> (FabricView, Routes) {
    let (v, _) = clockwise_ring(n);
    let routes = crate::engine_by_name(name).unwrap().route(&v).unwrap();
    (v, routes)
}

#[test]
fn minhop_on_a_ring_has_a_credit_loop_and_updn_does_not() {
    let (v, routes) = ring_routed_by(6, "minhop");
    let r = check(&v, &routes);
    assert_eq!(r.reachable, r.pairs);
    let CreditLoops::Found(cycle) = &r.credit_loops else { panic!("minhop ring without a loop: {r}") };
    assert_real_cycle(&ChannelDeps::new(&v, &routes, CdgTraffic::DataPlane), cycle);
    assert!(!r.is_clean());

    let (v, routes) = ring_routed_by(6, "updn");
    let r = check(&v, &routes);
    assert_eq!(r.reachable, r.pairs);
    assert_eq!(r.credit_loops, CreditLoops::None, "{r}");
    let stats = r.cdg.unwrap();
    assert_eq!((stats.channels, stats.cyclic_components, stats.cyclic_channels), (12, 0, 0));
    assert!(stats.dependencies > 0);
    assert!(r.is_clean(), "{r}");
    let deps = ChannelDeps::new(&v, &routes, CdgTraffic::All);
    assert_eq!(deps.first_cycle_dfs(), None);
}

#[test]
fn two_level_tree_is_loop_free_and_connected() {
    let v = two_level();
    for engine in ["updn", "minhop", "ftree"] {
        let routes = crate::engine_by_name(engine).unwrap().route(&v).unwrap();
        let r = check(&v, &routes);
        assert_eq!(r.credit_loops, CreditLoops::None, "{engine}: {r}");
        assert_eq!(r.components, 1);
    }
    let r = check(&v, &balanced());
    assert_eq!(r.component_sizes, vec![crate::components::ComponentSize { switches: 4, cas: 4 }]);
    assert!(r.to_string().contains("components          1\n"), "{r}");
}

#[test]
fn components_are_reported_even_without_routes() {
    let mut v = two_level();
    // Unplug CA 3 at both ends: a second component of one CA.
    v.cas[3].ports[0].neighbor = None;
    v.switches[1].ports[2] = None;
    let opts = CheckOptions { credit_loops: false, shifts: false, ..CheckOptions::default() };
    let r = check_with(&v, &Routes::default(), &opts);
    assert_eq!(r.components, 2);
    assert_eq!(r.cdg, None);
    assert!(r.to_string().contains("components          2 (4 switches + 3 CAs, 0 switches + 1 CAs)"), "{r}");
}

#[test]
fn credit_loops_from_switch_traffic_only_are_told_apart() {
    // The clockwise 4-ring with CAs on switches 0 and 1 only: CA-to-CA packets use the links
    // 0 -> 1 and 1 -> 2 -> 3 -> 0, never a full turn, but switch 3's own packets to switch 1 go
    // 3 -> 0 -> 1 and close the loop.
    let (mut v, routes) = clockwise_ring(4);
    for i in 2..4 {
        v.cas[i].ports.clear();
        v.switches[i].ports[3] = None;
    }
    let all = check(&v, &routes);
    assert!(matches!(all.credit_loops, CreditLoops::Found(_)), "{all}");
    let opts = CheckOptions { cdg_traffic: CdgTraffic::CaToCa, ..CheckOptions::default() };
    let cas = check_with(&v, &routes, &opts);
    assert_eq!(cas.credit_loops, CreditLoops::None, "{cas}");
    // With every CA back, CA traffic alone closes the loop.
    let (v, routes) = clockwise_ring(4);
    assert!(matches!(check_with(&v, &routes, &opts).credit_loops, CreditLoops::Found(_)));
}

#[test]
fn garbage_input_does_not_panic() {
    let v = two_level();
    for routes in [Routes::default(), Routes::from_tables(vec![Lft::unrouted(2); 9])] {
        let r = check(&v, &routes);
        assert_eq!(r.reachable, 0);
        assert_eq!(r.black_holes, 12);
    }
    let mut v = two_level();
    v.switches[0].ports[3] = nb(NodeId::Switch(77), 1);
    v.cas[3].ports[0].neighbor = nb(NodeId::Switch(99), 1);
    let r = check(&v, &balanced());
    assert!(r.reachable < r.pairs);
    let empty = check(&FabricView::default(), &Routes::default());
    assert_eq!(empty.pairs, 0);
    assert!(empty.is_clean());
}
