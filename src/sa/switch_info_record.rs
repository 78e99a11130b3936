//! SwitchInfoRecord (Get, GetTable): every switch's SwitchInfo, keyed by its LID.

use ibsm_mad::records::SwitchInfoRecord;

use super::answer::Table;
use super::node_record::candidates;
use super::snapshot::Snapshot;
use super::{Answer, Limits, Query};

/// Get/GetTable(SwitchInfoRecord).
pub(super) fn query(snap: &Snapshot, q: &Query<'_>, limits: &Limits) -> Answer {
    let mut t = Table::new::<SwitchInfoRecord>(q, limits);
    for at in candidates(snap, q, SwitchInfoRecord::COMP_LID, 0) {
        let (Some(node), Some(port)) = (snap.node(at.0), snap.port(at)) else { continue };
        let Some(si) = node.switch_info else { continue };
        if !t.offer(q, &SwitchInfoRecord { lid: port.lid, switch_info: si }) {
            break;
        }
    }
    t.answer(q, limits)
}
