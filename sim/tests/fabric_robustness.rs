//! Arbitrary bytes from an agent never panic the simulated fabric and never wedge it: after any
//! garbage, a well-formed directed-route Get still gets its answer.

use ibsm_mad::smp::SmpRepr;
use ibsm_mad::{DrPath, Lid, ids};
use ibsm_sim::fabric::{Dest, Fabric, SimConfig, SimTime};
use ibsm_sim::topology::GenSpec;
use proptest::prelude::*;

fn mad_bytes() -> impl Strategy<Value = [u8; 256]> {
    // Mostly SMP-shaped garbage (valid base version and class) so the SMA paths are reached.
    (proptest::collection::vec(any::<u8>(), 256), prop_oneof![Just(0x01u8), Just(0x81u8), Just(0x03u8), any::<u8>()])
        .prop_map(|(v, class)| {
            let mut b = [0u8; 256];
            b.copy_from_slice(&v);
            if class != 0xff {
                b[0] = 1;
                b[1] = class;
                b[2] = if class == 0x03 { 2 } else { 1 };
            }
            b
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
    #[test]
    fn garbage_never_panics_and_the_fabric_still_answers(
        mads in proptest::collection::vec((mad_bytes(), any::<u16>(), any::<bool>()), 1..16),
        seed in any::<u64>(),
    ) {
        let topo = GenSpec::fat_tree(2, 4).generate().expect("generates");
        let mut f = Fabric::new(&topo, SimConfig { seed, ..SimConfig::default() });
        let host = topo.nodes.iter().position(|n| n.name == "h0").expect("h0");
        let agent = f.attach(host, 1).expect("attach");
        for (m, dlid, dr) in &mads {
            let dest = Dest { dlid: if *dr { Lid::PERMISSIVE } else { Lid(*dlid) }, qpn: u32::from(m[1] == 0x03) };
            f.send(agent, m, dest);
        }
        f.run_until_idle(SimTime(10_000_000_000));
        while f.recv(agent).is_some() {}
        let p = DrPath::new(&[1, 3]).expect("path");
        f.send(agent, &SmpRepr::get_dr(&p, ids::attr::NODE_INFO, 0, 0x77).to_bytes(), Dest { dlid: Lid::PERMISSIVE, qpn: 0 });
        f.run_until_idle(SimTime(u64::MAX));
        let mut answered = false;
        while let Some(r) = f.recv(agent) {
            answered |= ibsm_mad::bits::u64_at(&r.mad[..], 8) & 0xffff_ffff == 0x77 && r.mad[3] == 0x81;
        }
        prop_assert!(answered, "seed {seed}: no answer after garbage");
    }
}

/// The records a directed-route SMP's modifier names are touched when its walk ends (the
/// fabric's `warm` module), before the SMA checks the modifier: a PortInfo naming a port past
/// the switch's last, or an LFT block past its table, at the edges of the modifier's range, is
/// still answered with BAD_FIELD, the walk's other SMPs as before.
#[test]
fn modifiers_out_of_range_are_answered_bad_field_after_the_walk() {
    use ibsm_mad::smp::DrSmp;
    let topo = GenSpec::fat_tree(2, 4).generate().expect("generates");
    let mut f = Fabric::new(&topo, SimConfig::default());
    let host = topo.nodes.iter().position(|n| n.name == "h0").expect("h0");
    let agent = f.attach(host, 1).expect("attach");
    let to_switch = DrPath::new(&[1]).expect("path");
    let to_far_switch = DrPath::new(&[1, 3]).expect("path");
    let ext = ibsm_mad::attrs::SM_SUPPORTS_EXTENDED_SPEEDS;
    let cases: [(&DrPath, u16, u32, u16); 9] = [
        (&to_switch, ids::attr::PORT_INFO, 5, ids::status::BAD_FIELD),
        (&to_switch, ids::attr::PORT_INFO, 255, ids::status::BAD_FIELD),
        (&to_switch, ids::attr::PORT_INFO, u32::MAX, ids::status::BAD_FIELD),
        (&to_far_switch, ids::attr::PORT_INFO, ext | 0x7fff_ffff, ids::status::BAD_FIELD),
        (&to_far_switch, ids::attr::LFT, u32::MAX, ids::status::BAD_FIELD),
        (&to_far_switch, ids::attr::LFT, 768, ids::status::BAD_FIELD),
        (&to_switch, ids::attr::PORT_INFO, ext | 4, ids::status::OK),
        (&to_far_switch, ids::attr::LFT, 767, ids::status::OK),
        (&to_far_switch, ids::attr::NODE_INFO, u32::MAX, ids::status::OK),
    ];
    for (i, (path, attr, attr_mod, _)) in cases.iter().enumerate() {
        let smp = SmpRepr::get_dr(path, *attr, *attr_mod, 0x100 + i as u64);
        f.send(agent, &smp.to_bytes(), Dest { dlid: Lid::PERMISSIVE, qpn: 0 });
    }
    f.run_until_idle(SimTime(u64::MAX));
    let mut status = [None; 9];
    while let Some(r) = f.recv(agent) {
        let tid = ibsm_mad::bits::u64_at(&r.mad[..], 8) & 0xffff_ffff;
        let smp = DrSmp::new_checked(&r.mad[..]).expect("a DR answer");
        if let Some(s) = tid.checked_sub(0x100).and_then(|i| status.get_mut(i as usize)) {
            *s = Some(smp.status());
        }
    }
    for (i, (_, attr, attr_mod, want)) in cases.iter().enumerate() {
        assert_eq!(status[i], Some(*want), "attribute {attr:#06x}, modifier {attr_mod:#x}");
    }
}
