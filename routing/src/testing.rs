//! Fabrics the engines' and the check's unit tests share (test builds only): hand-built views
//! whose GUIDs, LIDs and ports the tests reason about.

use ibsm_mad::{Guid, Lid, PortNum};

use crate::{CaPortView, CaView, FabricView, Neighbor, NodeId, SwitchView};

/// A ring of `n` switches with one CA each: switch `i` (GUID 0x500 + i, LID i + 1) has port 1
/// cabled to the next switch's port 2, port 2 to the previous one's port 1, and port 3 to CA
/// `i` (GUID 0x600 + i, port 1, LID n + i + 1).
pub(crate) fn ring(n: usize) -> FabricView {
    let nb = |node, port| Some(Neighbor { node, port: PortNum(port) });
    let switches = (0..n)
        .map(|i| SwitchView {
            guid: Guid(0x500 + i as u64),
            lid: Lid(1 + i as u16),
            ports: vec![
                None,
                nb(NodeId::Switch((i + 1) % n), 2),
                nb(NodeId::Switch((i + n - 1) % n), 1),
                nb(NodeId::Ca(i), 1),
            ],
        })
        .collect();
    let cas = (0..n)
        .map(|i| CaView {
            guid: Guid(0x600 + i as u64),
            ports: vec![CaPortView {
                num: PortNum(1),
                lid: Lid((n + i + 1) as u16),
                neighbor: nb(NodeId::Switch(i), 3),
            }],
        })
        .collect();
    FabricView { switches, cas, lmc: 0 }
}
