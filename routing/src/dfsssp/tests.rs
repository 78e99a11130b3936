use ibsm_mad::{Guid, Lid, PortNum};

use super::*;
use crate::check::{CreditLoops, check, credit_loops_per_vl};
use crate::minhop::MinHop;
use crate::testing::ring;
use crate::{CaPortView, CaView, Neighbor, NodeId, SwitchView};

fn loops_per_layer(v: &FabricView, l: &Layered) -> Vec<(u8, bool)> {
    credit_loops_per_vl(v, &l.routes, &|s, d| l.layers.layer(s, d))
        .into_iter()
        .map(|x| (x.vl, matches!(x.loops, CreditLoops::Found(_))))
        .collect()
}

#[test]
fn a_ring_needs_two_layers_and_has_no_loop_in_either() {
    let v = ring(6);
    // Minimal routes on a ring have a credit loop on one VL.
    let mh = MinHop.route(&v).unwrap();
    assert!(matches!(check(&v, &mh).credit_loops, CreditLoops::Found(_)));
    let l = Dfsssp::with_layers(2).layered(&v).unwrap();
    assert_eq!(l.layers.used(), 2);
    assert_eq!(loops_per_layer(&v, &l), vec![(0, false), (1, false)]);
    // Every path minimal, every pair reachable.
    let r = check(&v, &l.routes);
    assert_eq!(r.reachable, r.pairs);
    assert_eq!(r.hops.non_minimal, 0);
    // All on one VL, the same tables have a loop: the layers are what breaks it.
    let one = credit_loops_per_vl(&v, &l.routes, &|_, _| Some(0));
    assert!(matches!(one[0].loops, CreditLoops::Found(_)));
}

#[test]
fn too_small_a_budget_is_refused_with_the_reason() {
    let v = ring(6);
    let e = Dfsssp::with_layers(1).layered(&v).unwrap_err();
    let RoutingError::Declined { engine, reason } = &e else { panic!("{e:?}") };
    assert_eq!(*engine, "dfsssp");
    assert!(reason.contains("none of 1 layers"), "{reason}");
    // The chain falls back to the next engine.
    let chain = crate::chain::Chain::new(vec![Box::new(Dfsssp::with_layers(1)), Box::new(MinHop)]);
    let out = chain.run(&v).unwrap();
    assert_eq!(out.engine, "minhop");
    assert_eq!(out.declined[0].engine, "dfsssp");
}

#[test]
fn layers_name_every_pair_and_nothing_else() {
    let v = ring(5);
    let l = Dfsssp::default().layered(&v).unwrap();
    for s in 0..5 {
        for c in &v.cas {
            assert!(l.layers.layer(s, c.ports[0].lid).is_some());
        }
        assert!(l.layers.layer(s, Lid(99)).is_none());
        assert!(l.layers.layer(s, Lid(60000)).is_none());
    }
    assert!(l.layers.layer(5, Lid(100)).is_none());
    assert_eq!(l.layers.per_layer().iter().sum::<u64>(), 5 * 10);
    assert_eq!(l, Dfsssp::default().layered(&v).unwrap(), "deterministic");
}

#[test]
fn broken_views_are_errors_not_panics() {
    let mut v = ring(4);
    v.cas[1].ports[0].lid = v.cas[0].ports[0].lid;
    assert!(matches!(Dfsssp::default().route(&v), Err(RoutingError::DuplicateLid { .. })));
    let mut v = ring(4);
    v.switches[2].ports[1] = Some(Neighbor { node: NodeId::Switch(42), port: PortNum(1) });
    assert!(matches!(Dfsssp::default().route(&v), Err(RoutingError::DanglingNeighbor { .. })));
    assert!(Dfsssp::default().route(&FabricView::default()).is_ok());
}

/// A `w` x `h` torus of switches, one CA each: ports 1/2 to the next/previous in x, 3/4 in y,
/// 5 to the CA.
fn torus2(w: usize, h: usize) -> FabricView {
    let nb = |node, port| Some(Neighbor { node, port: PortNum(port) });
    let at = |x: usize, y: usize| NodeId::Switch((y % h) * w + x % w);
    let switches = (0..w * h)
        .map(|i| {
            let (x, y) = (i % w, i / w);
            SwitchView {
                guid: Guid(0x10 + i as u64),
                lid: Lid(1 + i as u16),
                ports: vec![
                    None,
                    nb(at(x + 1, y), 2),
                    nb(at(x + w - 1, y), 1),
                    nb(at(x, y + 1), 4),
                    nb(at(x, y + h - 1), 3),
                    nb(NodeId::Ca(i), 1),
                ],
            }
        })
        .collect();
    let cas = (0..w * h)
        .map(|i| CaView {
            guid: Guid(0x1000 + i as u64),
            ports: vec![CaPortView { num: PortNum(1), lid: Lid(200 + i as u16), neighbor: nb(NodeId::Switch(i), 5) }],
        })
        .collect();
    FabricView { switches, cas, lmc: 0 }
}

#[test]
fn the_pipeline_gives_the_sequential_result() {
    for v in [ring(7), torus2(5, 4), torus2(6, 6)] {
        let e = Dfsssp::default();
        let seq = e.layered_on(&v, false).unwrap();
        let par = e.layered_on(&v, true).unwrap();
        assert_eq!(seq, par);
        assert!(seq.layers.used() >= 2);
        // A budget too small fails the same way on both.
        let e = Dfsssp::with_layers(1);
        assert_eq!(e.layered_on(&v, false).unwrap_err(), e.layered_on(&v, true).unwrap_err());
    }
}

#[test]
fn refining_never_adds_a_layer_and_keeps_every_layer_acyclic() {
    for v in [ring(9), torus2(5, 5), torus2(6, 4), torus2(7, 7)] {
        let idx = Indexed::new(&v).unwrap();
        let mut placer = layers::Placer::new(&v, &idx, 15);
        let routes = balanced(&v, &idx, |d, next| placer.place(d, next)).unwrap();
        let first = placer.used();
        placer.refine(&routes);
        let l = Layered { routes, layers: placer.finish().unwrap() };
        assert!(l.layers.used() <= first, "{} after {first}", l.layers.used());
        assert!(loops_per_layer(&v, &l).iter().all(|&(_, found)| !found));
        // The engine pairs its layers where that fits (below); the routes are the same.
        let d = Dfsssp::with_layers(15).layered(&v).unwrap();
        if d.layers.paired() {
            assert_eq!(l.routes, d.routes);
        } else {
            assert_eq!(l, d);
        }
    }
}

#[test]
fn paired_layers_hold_every_pairs_way_back() {
    use crate::check::credit_loops_per_vl_with_replies;
    let mut paired = 0;
    for v in [ring(6), ring(9), torus2(5, 5), torus2(6, 4), torus2(7, 7)] {
        let l = Dfsssp::with_layers(15).layered(&v).unwrap();
        let replies = credit_loops_per_vl_with_replies(&v, &l.routes, &|s, d| l.layers.layer(s, d));
        if !l.layers.paired() {
            continue;
        }
        paired += 1;
        assert!(l.layers.used() >= 2);
        for x in &replies {
            assert_eq!(x.loops, CreditLoops::None, "VL {}", x.vl);
            assert_eq!(x.replies, 0, "VL {}", x.vl);
        }
        // Per path (the placement before pairing), the same tables loop with the ways back.
        let idx = Indexed::new(&v).unwrap();
        let mut placer = layers::Placer::new(&v, &idx, 15);
        let routes = balanced(&v, &idx, |d, next| placer.place(d, next)).unwrap();
        placer.refine(&routes);
        let per_path = placer.finish().unwrap();
        assert!(!per_path.paired());
        let back = credit_loops_per_vl_with_replies(&v, &routes, &|s, d| per_path.layer(s, d));
        assert!(back.iter().any(|x| x.replies > 0));
    }
    assert!(paired >= 3, "{paired} of 5 fabrics paired");
}
