//! LinkRecord (Get, GetTable): every cable with both ends known and up, once per direction,
//! as (FromLID, FromPort) → (ToPort, ToLID), where a CA port's "LID" is its own and a switch
//! port's is the switch's.
//!
//! Partitions, as OpenSM filters LinkRecords: a cable is listed only when its two ends share a
//! partition and the requester shares one with each end ([`shares`]), so that a requester
//! learns nothing of the cables of ports outside its partitions. An unknown requester gets none.

use ibsm_mad::records::LinkRecord;
use ibsm_mad::{Lid, PortNum, bits};

use super::answer::Table;
use super::snapshot::{PortAt, Snapshot};
use super::{Answer, Limits, Query};

/// The LID that names port `p` of node `n` in a LinkRecord.
fn lid_of(snap: &Snapshot, n: u32, p: u8) -> Option<Lid> {
    let node = snap.node(n)?;
    let end = if node.is_switch() { 0 } else { p };
    snap.port((n, end)).map(|r| r.lid).filter(|&l| l != Lid::UNASSIGNED)
}

/// Whether ports `a` and `b` share a partition as OpenSM asks it of each pair in a LinkRecord:
/// the same port, a partition in common with one of the two a full member, or one of them a
/// switch port without a P_Key table (cabled to a switch: it enforces no partition).
fn shares(snap: &Snapshot, a: PortAt, b: PortAt) -> bool {
    snap.visible_to(Some(a), b) || snap.visible_to(Some(b), a)
}

/// Get/GetTable(LinkRecord).
pub(super) fn query(snap: &Snapshot, q: &Query<'_>, limits: &Limits) -> Answer {
    let mut t = Table::new::<LinkRecord>(q, limits);
    let requester = snap.by_lid(q.requester);
    // FromLID narrows the walk to one node.
    let from = (q.header.comp_mask & LinkRecord::COMP_FROM_LID != 0)
        .then(|| snap.by_lid(Lid(bits::u16_at(q.template, 0))).map(|(n, _)| n));
    let nodes: Box<dyn Iterator<Item = u32>> = match from {
        Some(n) => Box::new(n.into_iter()),
        None => Box::new(0..u32::try_from(snap.nodes.len()).unwrap_or(u32::MAX)),
    };
    'nodes: for n in nodes {
        let Some(node) = snap.node(n) else { continue };
        for (p, port) in node.ports.iter().enumerate().skip(1) {
            let Ok(p) = u8::try_from(p) else { break };
            let Some((rn, rp)) = port.remote else { continue };
            let (Some(from_lid), Some(to_lid)) = (lid_of(snap, n, p), lid_of(snap, rn, rp)) else { continue };
            let (here, there) = ((n, p), (rn, rp));
            let shared = |r| shares(snap, here, there) && shares(snap, r, here) && shares(snap, r, there);
            if !requester.is_some_and(shared) {
                continue;
            }
            let rec = LinkRecord { from_lid, from_port: PortNum(p), to_port: PortNum(rp), to_lid };
            if !t.offer(q, &rec) {
                break 'nodes;
            }
        }
    }
    t.answer(q, limits)
}
