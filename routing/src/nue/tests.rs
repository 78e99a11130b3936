use ibsm_mad::{Lid, PortNum};

use super::*;
use crate::check::{CreditLoops, check, credit_loops_per_vl};
use crate::minhop::MinHop;
use crate::testing::ring;
use crate::{Neighbor, NodeId};

/// Whether no VL's channel dependency graph (the check's, built from the tables) has a cycle.
fn loop_free(v: &FabricView, l: &Layered) -> bool {
    credit_loops_per_vl(v, &l.routes, &|s, d| l.layers.layer(s, d)).iter().all(|x| x.loops == CreditLoops::None)
}

#[test]
fn a_ring_on_one_layer_is_routed_without_a_credit_loop() {
    for n in [3, 4, 6, 9] {
        let v = ring(n);
        // Minimal routes on a ring have a credit loop on one VL (from 4 switches on).
        if n >= 4 {
            assert!(matches!(check(&v, &MinHop.route(&v).unwrap()).credit_loops, CreditLoops::Found(_)));
        }
        let (l, stats) = Nue::with_layers(1).layered_with_stats(&v).unwrap();
        assert_eq!(l.layers.used(), 1);
        let r = check(&v, &l.routes);
        assert_eq!(r.reachable, r.pairs, "ring {n}");
        assert_eq!(r.switch_reachable, r.switch_pairs, "ring {n}");
        assert!(loop_free(&v, &l), "ring {n}");
        assert_eq!(r.credit_loops, CreditLoops::None, "ring {n}: one VL, so the tables alone are loop-free");
        assert_eq!(stats.destinations, 2 * n);
    }
}

#[test]
fn two_layers_let_a_ring_route_minimally() {
    let v = ring(6);
    let l = Nue::with_layers(2).layered(&v).unwrap();
    assert_eq!(l.layers.used(), 2);
    assert!(loop_free(&v, &l));
    let r = check(&v, &l.routes);
    assert_eq!(r.reachable, r.pairs);
    // Every destination is on one layer, from every source.
    for c in &v.cas {
        let lid = c.ports[0].lid;
        let first = l.layers.layer(0, lid);
        assert!(first.is_some());
        assert!((1..6).all(|s| l.layers.layer(s, lid) == first));
    }
}

#[test]
fn layers_name_every_destination_and_nothing_else_and_are_deterministic() {
    let v = ring(5);
    let l = Nue::default().layered(&v).unwrap();
    for s in 0..5 {
        for c in &v.cas {
            assert!(l.layers.layer(s, c.ports[0].lid).is_some());
        }
        assert!(l.layers.layer(s, Lid(99)).is_none());
    }
    assert!(l.layers.layer(5, Lid(6)).is_none());
    assert_eq!(l.layers.per_layer().iter().sum::<u64>(), 5 * 10);
    assert!(l.layers.used() <= 8);
    assert_eq!(l, Nue::default().layered(&v).unwrap(), "deterministic");
}

#[test]
fn broken_views_are_errors_and_empty_ones_route() {
    let mut v = ring(4);
    v.cas[1].ports[0].lid = v.cas[0].ports[0].lid;
    assert!(matches!(Nue::default().route(&v), Err(RoutingError::DuplicateLid { .. })));
    let mut v = ring(4);
    v.switches[2].ports[1] = Some(Neighbor { node: NodeId::Switch(42), port: PortNum(1) });
    assert!(matches!(Nue::default().route(&v), Err(RoutingError::DanglingNeighbor { .. })));
    assert!(Nue::default().route(&FabricView::default()).is_ok());
}

#[test]
fn two_rings_apart_are_each_routed() {
    // Two components: each routed inside, nothing across.
    let a = ring(4);
    let mut v = ring(8);
    // Cut the ring of 8 into two rings of 4: 3 -> 0 and 7 -> 4.
    v.switches[3].ports[1] = Some(Neighbor { node: NodeId::Switch(0), port: PortNum(2) });
    v.switches[0].ports[2] = Some(Neighbor { node: NodeId::Switch(3), port: PortNum(1) });
    v.switches[7].ports[1] = Some(Neighbor { node: NodeId::Switch(4), port: PortNum(2) });
    v.switches[4].ports[2] = Some(Neighbor { node: NodeId::Switch(7), port: PortNum(1) });
    let l = Nue::with_layers(1).layered(&v).unwrap();
    assert!(loop_free(&v, &l));
    let r = check(&v, &l.routes);
    // Within each half: 4 CAs x 3 others, twice.
    assert_eq!(r.reachable, 2 * 4 * 3);
    assert_eq!(check(&a, &Nue::with_layers(1).route(&a).unwrap()).reachable, 12);
}

#[test]
fn the_result_does_not_depend_on_threads() {
    // 400 destinations: several rounds of 64 on each of two or three layers (over 2 threads
    // where the machine has them).
    let v = crate::testing::ring(200);
    for budget in [2, 3, 8] {
        let one = Nue::with_layers(budget).run_on(&v, false).unwrap();
        let many = Nue::with_layers(budget).run_on(&v, true).unwrap();
        assert_eq!(one, many, "budget {budget}");
        assert!(loop_free(&v, &one.0));
    }
}
