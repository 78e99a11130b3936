//! No engine and no check panics on any view, however inconsistent: random neighbours (some
//! outside the view, some one-sided), random and overlapping LIDs, random LMC.

use ibsm_mad::{Guid, Lid, PortNum};
use ibsm_routing::chain::Chain;
use ibsm_routing::check::check;
use ibsm_routing::{CaPortView, CaView, ENGINE_NAMES, FabricView, Neighbor, NodeId, SwitchView, engine_by_name};
use proptest::prelude::*;

fn node() -> impl Strategy<Value = Option<Neighbor>> {
    prop_oneof![
        Just(None),
        (0usize..8, 0u8..6).prop_map(|(i, p)| Some(Neighbor { node: NodeId::Switch(i), port: PortNum(p) })),
        (0usize..8, 0u8..3).prop_map(|(i, p)| Some(Neighbor { node: NodeId::Ca(i), port: PortNum(p) })),
    ]
}

fn view() -> impl Strategy<Value = FabricView> {
    let switch = (0u16..40, proptest::collection::vec(node(), 0..6)).prop_map(|(lid, mut ports)| {
        ports.insert(0, None);
        SwitchView { guid: Guid(u64::from(lid) << 8), lid: Lid(lid), ports }
    });
    let ca = (0u16..40, node()).prop_map(|(lid, neighbor)| CaView {
        guid: Guid(0x1000 + u64::from(lid)),
        ports: vec![CaPortView { num: PortNum(1), lid: Lid(lid), neighbor }],
    });
    (proptest::collection::vec(switch, 0..7), proptest::collection::vec(ca, 0..7), 0u8..3)
        .prop_map(|(switches, cas, lmc)| FabricView { switches, cas, lmc })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn engines_and_check_never_panic(v in view()) {
        for n in ENGINE_NAMES {
            let e = engine_by_name(n).unwrap();
            if let Ok(r) = e.route(&v) {
                prop_assert_eq!(r.tables.len(), v.switches.len());
                let _ = check(&v, &r).to_string();
            }
        }
        let _ = Chain::from_names(Chain::DEFAULT).unwrap().run(&v);
        let _ = check(&v, &ibsm_routing::Routes::default());
    }
}
