//! The body of the `sa_serve` fuzz target, shared with its stable form
//! (`tests/fuzz_seeded_sa.rs`): the SA's request decoder and dispatcher (`ibsm::sa::serve`) on
//! arbitrary bytes, against the snapshot of a swept fabric (LMC 1, so LID ranges are exercised).
//! It must never panic; whatever it answers carries a response method and the request's TID, and
//! stays within one MAD in single-MAD mode.

use std::sync::{Arc, OnceLock};

use ibsm::core::lids::Guid2Lid;
use ibsm::core::{Sm, SmConfig};
use ibsm::sa::{self, Limits, Live, SaState, Snapshot};
use ibsm::transport::sim::SimDriver;
use ibsm_mad::sa::SaHeader;
use ibsm_mad::{Lid, MAD_LEN};
use ibsm_topology::GenSpec;

/// The snapshot of a 2-level k = 4 fat tree swept with LMC 1, built once.
pub fn snapshot() -> &'static (Arc<Snapshot>, Live) {
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

/// Serves `data` from `requester` under both the RMPP and the single-MAD limits, keeping the
/// registrations in `state`; panics when an answer breaks a rule. Returns each answer's length
/// and status.
pub fn check(state: &mut SaState, data: &[u8], requester: Lid) -> Vec<(usize, u16)> {
    let (snap, live) = snapshot();
    let mut lens = Vec::new();
    for limits in [Limits::default(), Limits::UMAD2SIM] {
        if let Ok(answer) = sa::serve(snap, state, live, data, requester, &limits) {
            let h = SaHeader::from_bytes(&answer.bytes).expect("answers parse");
            assert!(h.method.is_response());
            assert_eq!(Some(h.tid), SaHeader::from_bytes(data).ok().map(|r| r.tid));
            if limits.single_mad_bytes.is_some() {
                assert!(answer.bytes.len() <= MAD_LEN);
            }
            lens.push((answer.bytes.len(), h.status));
        }
    }
    lens
}
