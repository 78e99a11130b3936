//! SMInfoRecord (Get, GetTable): the SMs this SA knows, keyed by LID. Today that is this SM
//! itself, with its live SMInfo (SM_Key shown only to a trusted requester, one that sent the SA
//! key). Standby SMs join the table with the failover work.

use ibsm_mad::records::SmInfoRecord;

use super::answer::Table;
use super::snapshot::Snapshot;
use super::{Answer, Limits, Live, Query};

/// Get/GetTable(SMInfoRecord).
pub(super) fn query(snap: &Snapshot, live: &Live, q: &Query<'_>, limits: &Limits) -> Answer {
    let mut t = Table::new::<SmInfoRecord>(q, limits);
    let mut sm_info = live.sm_info;
    sm_info.sm_key = if q.trusted { live.sm_key } else { 0 };
    t.offer(q, &SmInfoRecord { lid: snap.sm.lid, sm_info });
    t.answer(q, limits)
}
