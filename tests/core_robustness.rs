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

/// Every MAD the SM hands to the transport now, as (class, method, destination).
fn drain(sm: &mut Sm, now: u64) -> Vec<(u8, u8, ibsm::core::Address)> {
    std::iter::from_fn(|| sm.poll_transmit(now)).map(|t| (t.bytes[1], t.bytes[3], t.to)).collect()
}

#[test]
fn misaddressed_and_malformed_mads_get_no_answer_that_breaks_the_wire_rules() {
    // RB1, targeted: a trap from SLID 0, an SA request from QP0, an SMP from QP1, RMPP
    // segments nobody asked for. None panics the SM; nothing goes to LID 0, no GS answer to QP0
    // and no LID-routed SMP answer to a QP other than 0; and the SM answers a good request after.
    use ibsm_mad::attrs::{Notice, NoticeDetails, NoticeType, ProducerType};
    use ibsm_mad::header::Method;
    use ibsm_mad::records::NodeRecord;
    use ibsm_mad::{Attribute, ids};
    let topo = GenSpec::fat_tree(2, 4).generate().expect("generates");
    let mut drv = SimDriver::new(&topo, 2, Sm::new(SmConfig::default(), Guid2Lid::default()), None).expect("attach");
    let up = drv.sweep(600_000_000_000, |_| {}).expect("up");
    assert!(up.complete);
    let now = drv.now();
    drain(&mut drv.sm, now);
    let host = ibsm_mad::Lid(up.sm_lid.0 + 1);
    // A LID-routed trap 128 whose packet says it came from LID 0.
    let notice =
        Notice::generic(NoticeType::Urgent, ProducerType::Switch, Lid(0), NoticeDetails::Trap128 { lid: Lid(0) })
            .expect("generic");
    let mut trap = [0u8; 256];
    trap[..4].copy_from_slice(&[1, ids::class::SUBN_LID, 1, ids::method::TRAP]);
    trap[12..16].copy_from_slice(&0x0101_u32.to_be_bytes());
    trap[16..18].copy_from_slice(&ids::attr::NOTICE.to_be_bytes());
    let mut data = [0u8; 80];
    notice.emit(&mut data);
    trap[64..128].copy_from_slice(&data[..64]);
    // An SA request (NodeRecord GetTable) from QP0.
    let sa = ibsm_mad::sa::request(Method::GetTable, 0, 0x0202, &NodeRecord::parse(&[0; 108]).expect("record"))
        .expect("request");
    // A LID-routed SubnGet(SMInfo) from QP1.
    let mut smp = [0u8; 256];
    smp[..4].copy_from_slice(&[1, ids::class::SUBN_LID, 1, ids::method::GET]);
    smp[12..16].copy_from_slice(&0x0303_u32.to_be_bytes());
    smp[16..18].copy_from_slice(&ids::attr::SM_INFO.to_be_bytes());
    let inputs: Vec<(&str, Vec<u8>, MadSource)> = vec![
        ("trap from LID 0", trap.to_vec(), MadSource::lid(Lid(0), 0)),
        ("SA request from QP0", sa.to_vec(), MadSource::lid(host, 0)),
        ("SMP from QP1", smp.to_vec(), MadSource::lid(host, 1)),
        ("SA request from LID 0", sa.to_vec(), MadSource::lid(Lid(0), 1)),
    ];
    let mut rmpp = Vec::new();
    // RMPP: each type (DATA, ACK, STOP, ABORT), active, with odd segment numbers, unasked.
    for (kind, seg) in [(1u8, 0u32), (2, 7), (3, 1), (4, 0xffff_ffff)] {
        let mut m = sa;
        m[12..16].copy_from_slice(&(0x0400 + u32::from(kind)).to_be_bytes());
        m[24..28].copy_from_slice(&[1, kind, 0x31, 0]);
        m[28..32].copy_from_slice(&seg.to_be_bytes());
        rmpp.push((format!("RMPP type {kind}"), m.to_vec()));
    }
    let mut sent = Vec::new();
    for (what, bytes, src) in &inputs {
        drv.sm.handle_mad(now, bytes, *src);
        sent.extend(drain(&mut drv.sm, now).into_iter().map(|s| (what.to_string(), s)));
    }
    for (what, bytes) in &rmpp {
        drv.sm.handle_mad(now, bytes, MadSource::lid(host, 1));
        sent.extend(drain(&mut drv.sm, now).into_iter().map(|s| (what.clone(), s)));
    }
    for (what, (class, method, to)) in &sent {
        assert_ne!(to.lid, Lid(0), "{what}: sent to LID 0 (class {class:#x}, method {method:#x})");
        let smp = matches!(*class, ids::class::SUBN_LID | ids::class::SUBN_DR);
        assert!(smp || to.qpn != 0, "{what}: a GS MAD (class {class:#x}) to QP0");
        assert!(!smp || to.qpn == 0, "{what}: an SMP (method {method:#x}) to QP{}", to.qpn);
    }
    // The SM still serves: SMInfo from QP0 and the SA from QP1 are answered.
    drv.sm.handle_mad(now, &smp, MadSource::lid(host, 0));
    drv.sm.handle_mad(now, &sa, MadSource::lid(host, 1));
    let answers = drain(&mut drv.sm, now);
    assert!(answers.iter().any(|(c, m, _)| *c == ids::class::SUBN_LID && *m == ids::method::GET_RESP), "{answers:?}");
    assert!(answers.iter().any(|(c, _, _)| *c == ids::class::SUBN_ADM), "{answers:?}");
}
