//! SMInfoRecord (Get, GetTable): the SMs this SA knows, keyed by LID. Today that is this SM
//! itself, with its live SMInfo. The SM_Key is never shown, trusted requester or not, as
//! OpenSM never shows it: the SA key is widely known (OpenSM's default, 1, is what `saquery
//! --smkey 1` sends), and the SM_Key guards handover and the SMs' other controls. An SM proves
//! its key to another with SMInfo itself (see `core::election`), not through the SA.

use ibsm_mad::records::SmInfoRecord;

use super::answer::Table;
use super::snapshot::Snapshot;
use super::{Answer, Limits, Live, Query};

/// Get/GetTable(SMInfoRecord).
pub(super) fn query(snap: &Snapshot, live: &Live, q: &Query<'_>, limits: &Limits) -> Answer {
    let mut t = Table::new::<SmInfoRecord>(q, limits);
    let sm_info = ibsm_mad::attrs::SmInfo { sm_key: 0, ..live.sm_info };
    t.offer(q, &SmInfoRecord { lid: snap.sm.lid, sm_info });
    t.answer(q, limits)
}
