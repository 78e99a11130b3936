//! GUIDInfoRecord (Get, GetTable): each end port's GUIDInfo table, keyed by its LID and block.
//!
//! The SM assigns no alias GUIDs, so a port's table holds its port GUID at index 0 and zeros
//! elsewhere, in as many blocks of 8 as its PortInfo GUIDCap asks (at least one), as OpenSM
//! answers for ports without alias GUIDs. An untrusted requester sees its own port and the
//! ports it can talk to.

use ibsm_mad::attrs::GuidInfo;
use ibsm_mad::records::GuidInfoRecord;

use super::answer::Table;
use super::node_record::candidates;
use super::snapshot::Snapshot;
use super::{Answer, Limits, Query};

/// Get/GetTable(GUIDInfoRecord).
pub(super) fn query(snap: &Snapshot, q: &Query<'_>, limits: &Limits) -> Answer {
    let mut t = Table::new::<GuidInfoRecord>(q, limits);
    'ports: for at in candidates(snap, q, GuidInfoRecord::COMP_LID, 0) {
        let Some(port) = snap.port(at) else { continue };
        let cap = port.info.map_or(1, |i| i.guid_cap.max(1));
        for block in 0..cap.div_ceil(8) {
            let mut guid_info = GuidInfo::default();
            if block == 0 {
                guid_info.guids[0] = port.guid;
            }
            if !t.offer(q, &GuidInfoRecord { lid: port.lid, block_num: block, guid_info }) {
                break 'ports;
            }
        }
    }
    t.answer(q, limits)
}
