//! P_KeyTableRecord (Get, GetTable): each end port's P_Key table as the SM programmed it, in
//! blocks of 32, keyed by the port's LID, the block and the port number (0 for a switch's port
//! 0). An untrusted requester sees only its own table and those of ports it can talk to (a common
//! partition where one of the two is a full member).

use ibsm_mad::PortNum;
use ibsm_mad::attrs::PKeyTable;
use ibsm_mad::records::PKeyTableRecord;

use super::answer::Table;
use super::node_record::candidates;
use super::snapshot::Snapshot;
use super::{Answer, Limits, Query};

/// Get/GetTable(P_KeyTableRecord).
pub(super) fn query(snap: &Snapshot, q: &Query<'_>, limits: &Limits) -> Answer {
    let mut t = Table::new::<PKeyTableRecord>(q, limits);
    // `candidates` leaves out, for an untrusted requester, the ports it cannot talk to.
    'ports: for at in candidates(snap, q, PKeyTableRecord::COMP_LID, 0) {
        let Some(port) = snap.port(at) else { continue };
        for (b, chunk) in port.pkeys.chunks(PKeyTable::ENTRIES).enumerate() {
            let Ok(block_num) = u16::try_from(b) else { break };
            let mut table = PKeyTable::default();
            table.keys[..chunk.len()].copy_from_slice(chunk);
            let rec = PKeyTableRecord { lid: port.lid, block_num, port_num: PortNum(at.1), pkey_table: table };
            if !t.offer(q, &rec) {
                break 'ports;
            }
        }
    }
    t.answer(q, limits)
}
