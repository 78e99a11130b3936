//! Fuzz target: the SA's request decoder and dispatcher (`ibsm::sa::serve`) on arbitrary bytes,
//! against the snapshot of a swept fabric (LMC 1, so LID ranges are exercised). It must never
//! panic; whatever it answers carries a response method and the request's TID, and stays within
//! one MAD in single-MAD mode.

#![no_main]

use std::sync::{Arc, OnceLock};

use ibsm::core::lids::Guid2Lid;
use ibsm::core::{Sm, SmConfig};
use ibsm::sa::{self, Limits, Live, SaState, Snapshot};
use ibsm::transport::sim::SimDriver;
use ibsm_mad::sa::SaHeader;
use ibsm_mad::{Lid, MAD_LEN};
use ibsm_topology::GenSpec;
use libfuzzer_sys::fuzz_target;

fn snapshot() -> &'static (Arc<Snapshot>, Live) {
    static SNAP: OnceLock<(Arc<Snapshot>, Live)> = OnceLock::new();
    SNAP.get_or_init(|| {
        let topo = GenSpec::fat_tree(2, 4).generate().expect("generates");
        let cfg = SmConfig { lmc: 1, ..SmConfig::default() };
        let mut drv = SimDriver::new(&topo, 1, Sm::new(cfg, Guid2Lid::default()), None).expect("attach");
        drv.sweep(600_000_000_000, |_| {}).expect("subnet up");
        let live = Live::new(drv.sm.sm_info(false));
        (drv.sm.snapshot().expect("snapshot"), live)
    })
}

fuzz_target!(|data: &[u8]| {
    let (snap, live) = snapshot();
    let mut state = SaState::default();
    for limits in [Limits::default(), Limits::UMAD2SIM] {
        if let Ok(answer) = sa::serve(snap, &mut state, live, data, Lid(2), &limits) {
            let h = SaHeader::from_bytes(&answer.bytes).expect("answers parse");
            assert!(h.method.is_response());
            assert_eq!(Some(h.tid), SaHeader::from_bytes(data).ok().map(|r| r.tid));
            if limits.single_mad_bytes.is_some() {
                assert!(answer.bytes.len() <= MAD_LEN);
            }
        }
    }
});
