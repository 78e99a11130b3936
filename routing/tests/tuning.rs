//! OpenSM's balancing options for minhop and updn (`guid_routing_order_file`, `port_shifting`,
//! `scatter_ports`), through the engine registry: each changes the tables as its definition
//! says, and the tables stay complete, shortest (minhop) and free of credit loops (updn).

mod common;

use std::sync::Arc;

use common::{generate, view};
use ibsm_mad::{Guid, PortNum};
use ibsm_routing::check::{CreditLoops, check};
use ibsm_routing::{EngineOptions, FabricView, Routes, Tuning, engine_with};
use ibsm_topology::generators::GenSpec;

fn route(engine: &str, v: &FabricView, tuning: Tuning) -> Routes {
    let options = EngineOptions { tuning, ..Default::default() };
    engine_with(engine, &options).expect("registered").route(v).expect("routes")
}

/// Per switch, the number of LIDs routed out of each port (the load the engines balance).
fn loads(v: &FabricView, r: &Routes) -> Vec<Vec<u32>> {
    r.tables
        .iter()
        .zip(&v.switches)
        .map(|(t, s)| {
            let mut l = vec![0u32; s.ports.len()];
            for lid in 1..=v.max_lid() {
                if let Some(port) = t.port_for(ibsm_mad::Lid(lid)) {
                    l[usize::from(port.0)] += 1;
                }
            }
            l
        })
        .collect()
}

fn sound(v: &FabricView, r: &Routes, engine: &str) {
    let rep = check(v, r);
    assert_eq!(rep.reachable, rep.pairs, "{engine}: {rep}");
    assert_eq!(rep.switch_reachable, rep.switch_pairs, "{engine}: {rep}");
    if engine == "minhop" {
        assert_eq!(rep.hops.non_minimal, 0, "{rep}");
    } else {
        assert_eq!(rep.credit_loops, CreditLoops::None, "{rep}");
    }
}

#[test]
fn port_shifting_and_scattering_move_routes_and_keep_them_sound() {
    let v = view(&generate(&GenSpec::fat_tree(2, 8)), 0);
    for engine in ["minhop", "updn"] {
        let plain = route(engine, &v, Tuning::default());
        let shifted = route(engine, &v, Tuning { port_shifting: true, ..Default::default() });
        let scattered = route(engine, &v, Tuning { scatter_ports: 7, ..Default::default() });
        let again = route(engine, &v, Tuning { scatter_ports: 7, ..Default::default() });
        let other = route(engine, &v, Tuning { scatter_ports: 8, ..Default::default() });
        assert_ne!(plain, shifted, "{engine}: shifting changed nothing");
        assert_ne!(plain, scattered, "{engine}: scattering changed nothing");
        assert_eq!(scattered, again, "{engine}: one seed, one set of tables");
        assert_ne!(scattered, other, "{engine}: the seed decides");
        for r in [&shifted, &scattered] {
            sound(&v, r, engine);
            // Still the least-loaded port each time: the loads of a switch's up ports differ
            // by at most one, as without the options.
            for (a, b) in loads(&v, &plain).iter().zip(loads(&v, r)) {
                let spread = |l: &[u32]| {
                    let used: Vec<u32> = l.iter().copied().filter(|&x| x > 0).collect();
                    used.iter().max().unwrap_or(&0) - used.iter().min().unwrap_or(&0)
                };
                let (max_a, max_b) = (a.iter().max().unwrap_or(&0), b.iter().max().unwrap_or(&0));
                assert!(
                    max_b <= &(max_a + 1),
                    "{engine} {}: {a:?} vs {b:?} (spread {} vs {})",
                    r == &shifted,
                    spread(a),
                    spread(&b)
                );
            }
        }
    }
}

#[test]
fn the_routing_order_routes_its_ports_first() {
    let v = view(&generate(&GenSpec::fat_tree(2, 8)), 0);
    // The last CA first: on every switch it now takes the port the first CA took.
    let last = v.cas.last().expect("CAs");
    let first = &v.cas[0];
    let order = vec![(last.guid, last.ports[0].num)];
    for engine in ["minhop", "updn"] {
        let plain = route(engine, &v, Tuning::default());
        let ordered = route(engine, &v, Tuning { order: Some(Arc::new(order.clone())), ..Default::default() });
        sound(&v, &ordered, engine);
        assert_ne!(plain, ordered, "{engine}");
        // On a leaf without it, the listed CA was routed first: out of the lowest of its up
        // ports (every load still 0), which the plain order did not give it.
        let ll = last.ports[0].lid;
        let _ = first;
        let far = v.switches.iter().position(|s| {
            s.ports
                .iter()
                .flatten()
                .all(|n| !matches!(n.node, ibsm_routing::NodeId::Ca(c) if c == 0 || c == v.cas.len() - 1))
                && s.ports.iter().flatten().any(|n| matches!(n.node, ibsm_routing::NodeId::Ca(_)))
        });
        let far = far.expect("a leaf with neither CA");
        let lowest_up = v.switches[far]
            .ports
            .iter()
            .position(|n| matches!(n, Some(n) if matches!(n.node, ibsm_routing::NodeId::Switch(_))))
            .map(|p| PortNum(p as u8));
        assert_eq!(ordered.tables[far].port_for(ll), lowest_up, "{engine}");
        assert_ne!(plain.tables[far].port_for(ll), lowest_up, "{engine}");
        // An order naming nothing of the fabric changes nothing.
        let none = Tuning { order: Some(Arc::new(vec![(Guid(0xdead), PortNum(1))])), ..Default::default() };
        assert_eq!(route(engine, &v, none), plain, "{engine}");
    }
}
