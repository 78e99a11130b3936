//! NodeRecord (Get, GetTable): one record per end port (a switch's port 0, every CA port with
//! a LID), NodeInfo with that port's PortGUID and LocalPortNum, and the NodeDescription.

use ibsm_mad::attrs::NodeDescription;
use ibsm_mad::records::NodeRecord;
use ibsm_mad::{Lid, bits};

use super::answer::Table;
use super::snapshot::{PortAt, Snapshot};
use super::{Answer, Limits, Query};

/// The NodeRecord of end port `at`.
pub(super) fn record(snap: &Snapshot, at: PortAt) -> Option<NodeRecord> {
    let node = snap.node(at.0)?;
    let port = snap.port(at)?;
    Some(NodeRecord {
        lid: port.lid,
        node_info: node.info_for(at.1),
        node_description: NodeDescription::new(&node.desc),
    })
}

/// Get/GetTable(NodeRecord).
pub(super) fn query(snap: &Snapshot, q: &Query<'_>, limits: &Limits) -> Answer {
    let mut t = Table::new::<NodeRecord>(q, limits);
    for at in candidates(snap, q, NodeRecord::COMP_LID, 0) {
        if let Some(rec) = record(snap, at)
            && !t.offer(q, &rec)
        {
            break;
        }
    }
    t.answer(q, limits)
}

/// The end ports a query can match: the one owning the template's LID (read at byte
/// `lid_at`) when `lid_comp` is in the mask, otherwise all; of those only the requester itself
/// and the ports it can talk to (a partition in common where one of the two is a full
/// member), as OpenSM hides the others from every requester, trusted or not.
pub(super) fn candidates<'a>(
    snap: &'a Snapshot,
    q: &Query<'_>,
    lid_comp: u64,
    lid_at: usize,
) -> Box<dyn Iterator<Item = PortAt> + 'a> {
    let requester = snap.by_lid(q.requester);
    Box::new(end_ports(snap, q, lid_comp, lid_at).filter(move |at| snap.visible_to(requester, *at)))
}

/// The end ports a query can match, whoever asks: the one owning the template's LID when
/// `lid_comp` is in the mask, otherwise all.
pub(super) fn end_ports<'a>(
    snap: &'a Snapshot,
    q: &Query<'_>,
    lid_comp: u64,
    lid_at: usize,
) -> Box<dyn Iterator<Item = PortAt> + 'a> {
    if q.header.comp_mask & lid_comp != 0 {
        let lid = Lid(bits::u16_at(q.template, lid_at));
        // Only the base LID names a port in a record.
        let at = snap.by_lid(lid).filter(|&at| snap.port(at).is_some_and(|p| p.lid == lid));
        return Box::new(at.into_iter());
    }
    Box::new(snap.end_ports())
}
