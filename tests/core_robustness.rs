//! Arbitrary bytes handed to the SM core never panic it, even when they are taken for answers
//! to SMPs in flight, and the next sweep brings the fabric up again.

use ibsm::core::lids::Guid2Lid;
use ibsm::core::{MadSource, Sm, SmConfig, SmEvent};
use ibsm::transport::sim::SimDriver;
use ibsm_mad::Lid;
use ibsm_topology::GenSpec;
use proptest::prelude::*;

fn mad_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        // Short, long and 256-byte garbage.
        proptest::collection::vec(any::<u8>(), 0..300),
        // Responses that look like SMP GetResps with random TIDs and attributes.
        (proptest::collection::vec(any::<u8>(), 256), any::<bool>()).prop_map(|(mut v, dr)| {
            v[0] = 1;
            v[1] = if dr { 0x81 } else { 0x01 };
            v[2] = 1;
            v[3] = 0x81;
            v
        }),
        // GetResps that hit transactions in flight: small TIDs, the attributes the SM asks for,
        // garbage payloads.
        (
            proptest::collection::vec(any::<u8>(), 256),
            1u32..3000,
            prop::sample::select(vec![0x10u16, 0x11, 0x12, 0x15, 0x19])
        )
            .prop_map(|(mut v, tid, attr)| {
                v[..4].copy_from_slice(&[1, 0x81, 1, 0x81]);
                v[4] = 0x80; // D bit, status 0
                v[5] = 0;
                v[8..12].fill(0);
                v[12..16].copy_from_slice(&tid.to_be_bytes());
                v[16..18].copy_from_slice(&attr.to_be_bytes());
                v
            }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]
    #[test]
    fn garbage_mid_sweep_never_panics_and_the_subnet_still_comes_up(
        garbage in proptest::collection::vec((mad_bytes(), any::<u16>()), 1..32),
        after_events in 1usize..200,
    ) {
        let topo = GenSpec::fat_tree(2, 4).generate().expect("generates");
        let sm = Sm::new(SmConfig::default(), Guid2Lid::default());
        let mut drv = SimDriver::new(&topo, 1, sm, None).expect("attach");
        let now = drv.now();
        drv.sm.start_sweep(now);
        // Run part of the sweep, then feed the garbage straight into the core.
        let mut seen = 0;
        let stopped = drv.run_until(now + 60_000_000_000, |ev| {
            seen += 1;
            seen >= after_events || matches!(ev, SmEvent::SubnetUp(_))
        });
        let t = drv.now();
        for (bytes, slid) in &garbage {
            drv.sm.handle_mad(t, bytes, MadSource::lid(Lid(*slid), 0));
        }
        if matches!(stopped, Some(SmEvent::SubnetUp(_))) {
            // The sweep had already finished: the garbage lands between sweeps; sweep again.
            drv.sm.start_sweep(t);
        }
        // Garbage that was taken for an answer may spoil this sweep; the SM must not panic, and
        // the next full sweep must bring the fabric up again.
        let _ = drv.run_until(t + 600_000_000_000, |ev| matches!(ev, SmEvent::SubnetUp(_)));
        let t = drv.now();
        drv.sm.start_sweep(t);
        let up = drv.run_until(t + 600_000_000_000, |ev| matches!(ev, SmEvent::SubnetUp(_)));
        prop_assert!(
            matches!(&up, Some(SmEvent::SubnetUp(r)) if r.complete),
            "no complete sweep after garbage: {up:?}"
        );
    }
}
