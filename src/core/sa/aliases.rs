//! The alias GUIDs' way to the ports: the SubnSet(GUIDInfo) writes that make each port hold
//! the GUIDInfo blocks the SA's alias table gives it ([`crate::sa::guid_info_record::Aliases`]).
//!
//! Only blocks that differ from what this SM wrote are sent, as values (`Request`s) for the
//! coordinator to queue between sweeps and at a sweep's end; a write that times out is
//! forgotten and sent again at the next call, one the port refuses (a status) is not retried
//! until the block changes again (the coordinator reports it).

use ibsm_mad::{Guid, PortNum};

use super::Sa;
use crate::core::state::Subnet;
use crate::core::transactions::{Op, Outcome, Req, Request};

impl Sa {
    /// The GUIDInfo Sets that make the ports of `subnet` hold the alias GUIDs the SA assigned,
    /// where they differ from what this SM wrote there.
    pub(crate) fn alias_sets(&mut self, subnet: &Subnet) -> Vec<Request> {
        let Some(snap) = self.snapshot.as_deref() else { return Vec::new() };
        let mut sets = Vec::new();
        for ((n, p), guid, block, info) in self.state.aliases.writes(snap) {
            let node_guid = snap.node(n).map(|s| s.info.node_guid);
            let Some(node) = usize::try_from(n).ok().filter(|&i| subnet.node(i).map(|s| s.info.node_guid) == node_guid)
            else {
                self.state.aliases.write_failed(guid, block);
                continue;
            };
            let Some(sn) = subnet.node(node) else { continue };
            let port = PortNum(p);
            sets.push(Request {
                path: sn.path_for(port),
                req: Req::SetGuidInfo { node, port, guid, block, info: Box::new(info) },
                op: Op::Aliases,
            });
        }
        sets
    }

    /// A GUIDInfo Set of `block` to port `guid` ended: one that timed out is written again.
    pub(crate) fn alias_written(&mut self, guid: Guid, block: u8, outcome: &Outcome) {
        if matches!(outcome, Outcome::Timeout) {
            self.state.aliases.write_failed(guid, block);
        }
    }

    /// Bits 32..39 of the GUIDs the SA assigns (`sm-assigned-guid`).
    pub fn set_assigned_guid_byte(&mut self, byte: u8) {
        self.state.aliases.set_assigned_byte(byte);
    }
}
