//! P_KeyTableRecord (Get, GetTable): each end port's P_Key table as the SM programmed it, in
//! blocks of 32, keyed by the port's LID, the block and the port number (0 for a switch's port
//! 0), and the tables of the switch ports that enforce partitions (the switch's LID and the port
//! number). An untrusted requester sees only its own table and those of ports it can talk to (a
//! common partition where one of the two is a full member), and no switch port's table.

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
        let lid = port.lid;
        // A switch's enforcing ports follow its port 0, for trusted requesters only (they show
        // the partitions of the CA behind each port).
        let switch_ports =
            snap.node(at.0).filter(|n| q.trusted && n.is_switch()).and_then(|n| n.ports.get(1..)).unwrap_or(&[]);
        let tables = std::iter::once((at.1, &port.pkeys))
            .chain(switch_ports.iter().enumerate().map(|(i, p)| (u8::try_from(i + 1).unwrap_or(u8::MAX), &p.pkeys)));
        for (port_num, pkeys) in tables {
            for (b, chunk) in pkeys.chunks(PKeyTable::ENTRIES).enumerate() {
                let Ok(block_num) = u16::try_from(b) else { break };
                let mut table = PKeyTable::default();
                table.keys[..chunk.len()].copy_from_slice(chunk);
                let rec = PKeyTableRecord { lid, block_num, port_num: PortNum(port_num), pkey_table: table };
                if !t.offer(q, &rec) {
                    break 'ports;
                }
            }
        }
    }
    t.answer(q, limits)
}
