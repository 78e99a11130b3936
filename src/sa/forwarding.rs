//! LinearForwardingTableRecord (Get, GetTable): the blocks of each switch's LFT up to its
//! LinearFDBTop, as the switch holds them, keyed by the switch's LID and the block number; and
//! MulticastForwardingTableRecord (Get, GetTable): the blocks of each switch's MFT that hold a
//! port, keyed by the switch's LID, the block and the position (16 ports per position).

use std::collections::{BTreeMap, HashMap};

use ibsm_mad::attrs::{LinearForwardingTable, MulticastForwardingTable};
use ibsm_mad::records::{LftRecord, MftRecord};
use ibsm_mad::{Guid, bits};

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
        let table = node.lft();
        if !node.is_switch() || table.is_empty() {
            continue;
        }
        let blocks = table.len().div_ceil(LinearForwardingTable::ENTRIES);
        for b in 0..blocks {
            let Ok(block) = u16::try_from(b) else { break };
            if only_block.is_some_and(|o| o != block) {
                continue;
            }
            let mut lft = LinearForwardingTable::default();
            for (slot, &p) in lft.ports.iter_mut().zip(table.block(b)) {
                *slot = p;
            }
            if !t.offer(q, &LftRecord { lid: port.lid, block_num: block, lft }) {
                break 'switches;
            }
        }
    }
    t.answer(q, limits)
}

/// Each switch's multicast table as written (by switch node GUID): (block, position) to block.
pub type Mfts = HashMap<Guid, BTreeMap<(u16, u8), MulticastForwardingTable>>;

/// Get/GetTable(MulticastForwardingTableRecord).
pub(super) fn mft_query(snap: &Snapshot, mfts: &Mfts, q: &Query<'_>, limits: &Limits) -> Answer {
    let mut t = Table::new::<MftRecord>(q, limits);
    'switches: for at in candidates(snap, q, MftRecord::COMP_LID, 0) {
        let (Some(node), Some(port)) = (snap.node(at.0), snap.port(at)) else { continue };
        let Some(blocks) = mfts.get(&node.info.node_guid).filter(|_| node.is_switch()) else { continue };
        for (&(block_num, position), mft) in blocks {
            if mft.masks.iter().all(|m| m.0 == 0) {
                continue;
            }
            if !t.offer(q, &MftRecord { lid: port.lid, position, block_num, mft: *mft }) {
                break 'switches;
            }
        }
    }
    t.answer(q, limits)
}
