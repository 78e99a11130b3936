//! LinearForwardingTableRecord (Get, GetTable): the blocks of each switch's LFT up to its
//! LinearFDBTop, as the switch holds them, keyed by the switch's LID and the block number.

use ibsm_mad::attrs::LinearForwardingTable;
use ibsm_mad::records::LftRecord;
use ibsm_mad::{PortNum, bits};

use super::answer::Table;
use super::node_record::candidates;
use super::snapshot::Snapshot;
use super::{Answer, Limits, Query};

/// Get/GetTable(LinearForwardingTableRecord).
pub(super) fn lft_query(snap: &Snapshot, q: &Query<'_>, limits: &Limits) -> Answer {
    let mut t = Table::new::<LftRecord>(q, limits);
    let only_block = (q.header.comp_mask & LftRecord::COMP_BLOCK_NUM != 0).then(|| bits::u16_at(q.template, 2));
    'switches: for at in candidates(snap, q, LftRecord::COMP_LID, 0) {
        let (Some(node), Some(port)) = (snap.node(at.0), snap.port(at)) else { continue };
        if !node.is_switch() || node.lft.is_empty() {
            continue;
        }
        let blocks = node.lft.len().div_ceil(LinearForwardingTable::ENTRIES);
        for b in 0..blocks {
            let Ok(block) = u16::try_from(b) else { break };
            if only_block.is_some_and(|o| o != block) {
                continue;
            }
            let mut lft = LinearForwardingTable::default();
            let from = b * LinearForwardingTable::ENTRIES;
            for (slot, &p) in lft.ports.iter_mut().zip(&node.lft[from..]) {
                *slot = PortNum(p);
            }
            if !t.offer(q, &LftRecord { lid: port.lid, block_num: block, lft }) {
                break 'switches;
            }
        }
    }
    t.answer(q, limits)
}
