//! P_KeyTableRecord (Get, GetTable): each end port's P_Key table as the SM programmed it, in
//! blocks of 32, keyed by the port's LID, the block and the port number (0 for a switch's port
//! 0), and the tables of the switch ports that enforce partitions (the switch's LID and the port
//! number).
//!
//! Trusted requesters only (the request carries the SA key), as the IBTA (p. 922) and OpenSM
//! have it: the tables name every partition of every peer, so an untrusted request is refused
//! with REQ_INVALID. A port gets a record for every block its capacity spans (NodeInfo's
//! PartitionCap for a CA port and a switch's port 0, SwitchInfo's PartitionEnforcementCap for a
//! switch's external ports), the blocks past what the SM programmed all zeros, as OpenSM lists
//! them.

use ibsm_mad::PortNum;
use ibsm_mad::attrs::PKeyTable;
use ibsm_mad::ids::status;
use ibsm_mad::records::PKeyTableRecord;

use super::answer::Table;
use super::node_record::end_ports;
use super::snapshot::Snapshot;
use super::{Answer, Limits, Query};

/// Blocks of a table of `cap` entries holding `programmed` of them (none when nothing was
/// programmed: the table is unknown).
fn blocks(cap: u16, programmed: usize) -> usize {
    if programmed == 0 {
        return 0;
    }
    usize::from(cap).div_ceil(PKeyTable::ENTRIES).max(programmed.div_ceil(PKeyTable::ENTRIES))
}

/// Get/GetTable(P_KeyTableRecord).
pub(super) fn query(snap: &Snapshot, q: &Query<'_>, limits: &Limits) -> Answer {
    if !q.trusted {
        return Answer::error(&q.header, status::SA_REQ_INVALID);
    }
    let mut t = Table::new::<PKeyTableRecord>(q, limits);
    let requester = snap.by_lid(q.requester);
    'ports: for at in end_ports(snap, q, PKeyTableRecord::COMP_LID, 0) {
        let (Some(node), Some(port)) = (snap.node(at.0), snap.port(at)) else { continue };
        let lid = port.lid;
        // A switch's enforcing ports follow its port 0.
        let enforce_cap = node.switch_info.map_or(0, |s| s.partition_enforcement_cap);
        let switch_ports = if node.is_switch() { node.ports.get(1..).unwrap_or(&[]) } else { &[] };
        let tables = std::iter::once((at.1, node.info.partition_cap, &port.pkeys)).chain(
            switch_ports
                .iter()
                .enumerate()
                .map(|(i, p)| (u8::try_from(i + 1).unwrap_or(u8::MAX), enforce_cap, &p.pkeys)),
        );
        // Each port as OpenSM filters it (see `Snapshot::visible_to`).
        for (port_num, cap, pkeys) in tables.filter(|(p, ..)| snap.visible_to(requester, (at.0, *p))) {
            for b in 0..blocks(cap, pkeys.len()) {
                let Ok(block_num) = u16::try_from(b) else { break };
                let mut table = PKeyTable::default();
                let chunk = pkeys.get(b * PKeyTable::ENTRIES..).unwrap_or(&[]);
                let n = chunk.len().min(PKeyTable::ENTRIES);
                table.keys[..n].copy_from_slice(&chunk[..n]);
                let rec = PKeyTableRecord { lid, block_num, port_num: PortNum(port_num), pkey_table: table };
                if !t.offer(q, &rec) {
                    break 'ports;
                }
            }
        }
    }
    t.answer(q, limits)
}

#[cfg(test)]
mod tests {
    use super::blocks;

    #[test]
    fn a_record_per_block_of_the_capacity() {
        assert_eq!(blocks(64, 3), 2, "a CA with PartitionCap 64");
        assert_eq!(blocks(8, 1), 1, "a switch's port 0");
        assert_eq!(blocks(32, 40), 2, "more programmed than the capacity says: all of it");
        assert_eq!(blocks(64, 0), 0, "nothing programmed: unknown");
        assert_eq!(blocks(0, 5), 1);
    }
}
