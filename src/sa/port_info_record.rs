//! PortInfoRecord (Get, GetTable): every port with a PortInfo, keyed by the LID of its end port
//! (a switch's port 0 LID for all its ports) and the port number (a CA port's own number, as
//! OpenSM gives it). M_Key is never shown.

use ibsm_mad::records::PortInfoRecord;
use ibsm_mad::{MKey, PortNum};

use super::answer::Table;
use super::node_record::candidates;
use super::snapshot::Snapshot;
use super::{Answer, Limits, Query};

/// Get/GetTable(PortInfoRecord).
pub(super) fn query(snap: &Snapshot, q: &Query<'_>, limits: &Limits) -> Answer {
    let mut t = Table::new::<PortInfoRecord>(q, limits);
    'ends: for (n, end) in candidates(snap, q, PortInfoRecord::COMP_ENDPORT_LID, 0) {
        let (Some(node), Some(end_port)) = (snap.node(n), snap.port((n, end))) else { continue };
        let ports: Vec<u8> = if node.is_switch() {
            (0..node.ports.len()).filter_map(|p| u8::try_from(p).ok()).collect()
        } else {
            vec![end]
        };
        for p in ports {
            let Some(mut info) = node.ports.get(usize::from(p)).and_then(|r| r.info) else { continue };
            info.m_key = MKey(0);
            let rec = PortInfoRecord { endport_lid: end_port.lid, port_num: PortNum(p), options: 0, port_info: info };
            if !t.offer(q, &rec) {
                break 'ends;
            }
        }
    }
    t.answer(q, limits)
}
