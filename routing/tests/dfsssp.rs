//! The DFSSSP engine on a 3D torus, a random fabric and a dragonfly: every pair routed over a
//! shortest path, no credit loop within any layer (the check's per-VL graph, independent of the
//! engine's own bookkeeping), and shift permutations at least as balanced as min-hop's. Where
//! the layers are paired (both directions of a pair on one layer), every pair's two SLs are equal
//! and no VL loops with each pair's way back on its SL too (an RC responder's replies); where
//! not (the torus), the check finds that loop.

mod common;

use ibsm_routing::check::{CreditLoops, check, credit_loops_per_vl, credit_loops_per_vl_with_replies};
use ibsm_routing::dfsssp::Dfsssp;
use ibsm_routing::minhop::MinHop;
use ibsm_routing::{Engine, FabricView};
use ibsm_topology::generators::GenSpec;

/// Routes `v` with DFSSSP and min-hop and checks the DFSSSP result; returns (dfsssp, minhop)
/// shift worst and the layers used.
fn judge(name: &str, v: &FabricView) -> (u32, u32, u8) {
    let l = Dfsssp::default().layered(v).unwrap_or_else(|e| panic!("{name}: {e}"));
    let r = check(v, &l.routes);
    assert_eq!(r.reachable, r.pairs, "{name}: every CA pair routed");
    assert_eq!(r.switch_reachable, r.switch_pairs, "{name}: every switch route");
    assert_eq!(r.hops.non_minimal, 0, "{name}: minimal routes");
    let per_vl = credit_loops_per_vl(v, &l.routes, &|s, d| l.layers.layer(s, d));
    assert_eq!(per_vl.len(), usize::from(l.layers.used()), "{name}");
    for x in &per_vl {
        assert_eq!(x.loops, CreditLoops::None, "{name}: VL {} has a credit loop", x.vl);
    }
    let replies = credit_loops_per_vl_with_replies(v, &l.routes, &|s, d| l.layers.layer(s, d));
    if l.layers.paired() {
        for x in &replies {
            assert_eq!(x.loops, CreditLoops::None, "{name}: VL {} loops with the ways back", x.vl);
            assert_eq!(x.replies, 0, "{name}: VL {}: a pair's two directions on two layers", x.vl);
        }
        for a in v.cas.iter().flat_map(|c| &c.ports) {
            for b in v.cas.iter().flat_map(|c| &c.ports) {
                let (Some(na), Some(nb)) = (a.neighbor, b.neighbor) else { continue };
                let (ibsm_routing::NodeId::Switch(sa), ibsm_routing::NodeId::Switch(sb)) = (na.node, nb.node) else {
                    continue;
                };
                if sa != sb {
                    assert_eq!(l.layers.layer(sa, b.lid), l.layers.layer(sb, a.lid), "{name}: {} <-> {}", a.lid, b.lid);
                }
            }
        }
    } else {
        assert!(
            replies.iter().any(|x| matches!(x.loops, CreditLoops::Found(_))),
            "{name}: unpaired layers, expected the ways back to loop somewhere"
        );
    }
    let mh = MinHop.route(v).unwrap();
    let mh_report = check(v, &mh);
    assert!(matches!(check(v, &l.routes).credit_loops, CreditLoops::Found(_)) || l.layers.used() == 1, "{name}");
    let dfsssp_worst = r.shifts.map(|s| s.worst).unwrap_or_default();
    let minhop_worst = mh_report.shifts.map(|s| s.worst).unwrap_or_default();
    eprintln!(
        "{name}: dfsssp shift worst {dfsssp_worst} on {} layers (paired: {}), minhop {minhop_worst}",
        l.layers.used(),
        l.layers.paired()
    );
    (dfsssp_worst, minhop_worst, l.layers.used())
}

#[test]
fn torus_3d() {
    let v = common::view(&common::generate(&GenSpec::torus(&[4, 4, 4], 2)), 0);
    let (d, m, layers) = judge("torus 4x4x4", &v);
    assert!(d <= m, "dfsssp {d} vs minhop {m}");
    assert!(layers >= 2, "a torus needs more than one layer");
    assert!(layers <= 4, "{layers} layers: more than ports with 4 VLs have");
}

#[test]
fn random_fabric() {
    let v = common::view(&common::generate(&GenSpec::random(64, 16, 4, 200, 7)), 0);
    let (d, m, layers) = judge("random 64", &v);
    assert!(d <= m, "dfsssp {d} vs minhop {m}");
    // Both directions of every pair on one layer: 6 layers where single paths need 3.
    assert!(layers <= 6, "{layers} layers");
    let l = Dfsssp::default().layered(&v).unwrap();
    assert!(l.layers.paired());
}

#[test]
fn dragonfly_fabric() {
    let v = common::dragonfly(9, 4, 2);
    let (d, m, _) = judge("dragonfly 9x4", &v);
    assert!(d <= m, "dfsssp {d} vs minhop {m}");
    assert!(Dfsssp::default().layered(&v).unwrap().layers.paired());
}

#[test]
fn fat_tree_needs_one_layer() {
    let v = common::view(&common::generate(&GenSpec::fat_tree(3, 4)), 0);
    let l = Dfsssp::default().layered(&v).unwrap();
    assert_eq!(l.layers.used(), 1);
    assert_eq!(check(&v, &l.routes).credit_loops, CreditLoops::None);
    assert_eq!(Dfsssp::default().route(&v).unwrap(), l.routes);
}
