//! The SA snapshot of a completed sweep: the discovered subnet, the PortInfo and SwitchInfo as
//! last read or written, and the forwarding tables the switches hold, copied into the SA's
//! immutable [`Snapshot`] (which builds its own indexes).
//!
//! Owns only the copy; when to take it (at the end of every sweep) is `Sm::finish_sweep`'s call.

use ibsm_mad::{Guid, PortNum};

use super::Sm;
use crate::sa::snapshot::{SmPort, SnapNode, SnapPort, Snapshot};

impl Sm {
    /// A new snapshot of the subnet as it stands: what the end of every sweep takes (public for
    /// benchmarks and tools; the SA answers from [`Sm::snapshot`]).
    pub fn build_snapshot(&self) -> Snapshot {
        let nodes = self
            .subnet
            .nodes
            .iter()
            .map(|n| {
                let switch = n.is_switch();
                let ports = n
                    .ports
                    .iter()
                    .map(|r| SnapPort {
                        info: r.info,
                        guid: r.guid.unwrap_or(if switch { n.info.port_guid } else { Guid(0) }),
                        lid: r.lid,
                        remote: r
                            .remote
                            .filter(|_| r.is_linked())
                            .and_then(|(node, PortNum(p))| u32::try_from(node).ok().map(|node| (node, p))),
                    })
                    .collect();
                let lft = if switch {
                    self.programmed_lft(n.info.node_guid).map(|l| l.ports.iter().map(|p| p.0).collect()).unwrap_or_default()
                } else {
                    Vec::new()
                };
                SnapNode { info: n.info, desc: n.desc.clone(), switch_info: n.switch_info, ports, lft }
            })
            .collect();
        let sm = SmPort { guid: self.port_guid, lid: self.subnet.local_lid() };
        Snapshot::new(self.cfg.subnet_prefix, self.cfg.lmc, self.cfg.switch_life_time, nodes, sm)
    }
}
