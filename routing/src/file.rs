//! The file engine (OpenSM's `-R file` with `lfts_file`): forwarding tables computed elsewhere
//! (offline, by another tool) and given whole, by switch NodeGUID, for sites that route offline.
//!
//! The engine routes nothing itself; it checks that the tables route the fabric it is given,
//! and declines otherwise, naming the first fault, so that the chain moves on (or the sweep
//! fails) rather than program a fabric that drops traffic: every switch of the view must be in
//! the tables; for every LID an end port owns, every switch must send it out of a cabled port
//! (its own LIDs to port 0), a CA port reached must be the one that owns it, and following the
//! tables from any switch must reach it without a loop. Entries for LIDs no port owns, and for
//! switches not in the view, are ignored. Cost: one pass per owned LID over the switches.

use std::collections::HashMap;
use std::sync::Arc;

use ibsm_mad::{Guid, Lid, PortNum};

use crate::{Engine, FabricView, Lft, NodeId, Routes, RoutingError};

/// Tables by switch NodeGUID: (LID, egress port) pairs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GivenTables {
    by_switch: HashMap<Guid, Vec<(Lid, PortNum)>>,
}

impl GivenTables {
    /// The tables of `switches` (NodeGUID, its entries).
    pub fn new(switches: impl IntoIterator<Item = (Guid, Vec<(Lid, PortNum)>)>) -> GivenTables {
        GivenTables { by_switch: switches.into_iter().collect() }
    }

    /// How many switches they cover.
    pub fn len(&self) -> usize {
        self.by_switch.len()
    }

    /// Whether they cover none.
    pub fn is_empty(&self) -> bool {
        self.by_switch.is_empty()
    }
}

/// The file engine over `tables`.
#[derive(Debug, Clone)]
pub struct FromFile {
    tables: Arc<GivenTables>,
}

impl FromFile {
    /// Registry name.
    pub const NAME: &'static str = "file";

    /// The engine that programs `tables`.
    pub fn new(tables: Arc<GivenTables>) -> FromFile {
        FromFile { tables }
    }

    fn declined(reason: String) -> RoutingError {
        RoutingError::Declined { engine: Self::NAME, reason }
    }
}

impl Engine for FromFile {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn route(&self, view: &FabricView) -> Result<Routes, RoutingError> {
        if self.tables.is_empty() {
            return Err(Self::declined("no tables file was given (lfts-file)".to_owned()));
        }
        let top = view.max_lid();
        let mut tables = Vec::with_capacity(view.switches.len());
        for sw in &view.switches {
            let Some(entries) = self.tables.by_switch.get(&sw.guid) else {
                return Err(Self::declined(format!("switch {} (LID {}) is not in the tables file", sw.guid, sw.lid.0)));
            };
            let mut lft = Lft::unrouted(top);
            for &(lid, port) in entries {
                if let Some(slot) = lft.entries_mut().get_mut(usize::from(lid.0)) {
                    *slot = port;
                }
            }
            tables.push(lft);
        }
        for (lid, owner) in owned_lids(view) {
            check_lid(view, &tables, lid, owner).map_err(Self::declined)?;
        }
        Ok(Routes::from_tables(tables))
    }
}

/// Every LID an end port owns, with its owner (a switch, or a CA and port number).
fn owned_lids(view: &FabricView) -> Vec<(Lid, (NodeId, PortNum))> {
    let span = view.lids_per_port();
    let mut out = Vec::new();
    let mut add = |base: Lid, owner| {
        if base != Lid::UNASSIGNED {
            out.extend((0..span).filter_map(|i| base.0.checked_add(i)).map(|l| (Lid(l), owner)));
        }
    };
    for (s, sw) in view.switches.iter().enumerate() {
        add(sw.lid, (NodeId::Switch(s), PortNum(0)));
    }
    for (c, ca) in view.cas.iter().enumerate() {
        for p in &ca.ports {
            add(p.lid, (NodeId::Ca(c), p.num));
        }
    }
    out
}

/// Whether following the tables from every switch delivers `lid` to `owner`.
fn check_lid(view: &FabricView, tables: &[Lft], lid: Lid, owner: (NodeId, PortNum)) -> Result<(), String> {
    // 0: not yet known, 1: on the walk being followed, 2: reaches the owner.
    let mut state = vec![0u8; view.switches.len()];
    let mut walk = Vec::new();
    for start in 0..view.switches.len() {
        let mut s = start;
        loop {
            match state[s] {
                2 => break,
                1 => {
                    let g = view.switches[s].guid;
                    return Err(format!("the tables loop LID {} through switch {g}", lid.0));
                }
                _ => {}
            }
            state[s] = 1;
            walk.push(s);
            let sw = &view.switches[s];
            let port =
                tables[s].port_for(lid).ok_or_else(|| format!("switch {} has no route for LID {}", sw.guid, lid.0))?;
            if port == PortNum(0) {
                if owner.0 == NodeId::Switch(s) {
                    break;
                }
                return Err(format!("switch {} keeps LID {} (port 0), which is not its own", sw.guid, lid.0));
            }
            let hop = sw.ports.get(usize::from(port.0)).copied().flatten();
            match hop {
                Some(n) if n.node == owner.0 && (matches!(n.node, NodeId::Switch(_)) || n.port == owner.1) => {
                    if let NodeId::Switch(t) = n.node {
                        s = t;
                        continue;
                    }
                    break;
                }
                Some(n) if matches!(n.node, NodeId::Switch(_)) => {
                    let NodeId::Switch(t) = n.node else { break };
                    s = t;
                }
                Some(_) => {
                    return Err(format!(
                        "switch {} sends LID {} out of port {} to an end port that does not own it",
                        sw.guid, lid.0, port.0
                    ));
                }
                None => {
                    return Err(format!(
                        "switch {} sends LID {} out of port {}, which has no cable",
                        sw.guid, lid.0, port.0
                    ));
                }
            }
        }
        for &w in &walk {
            state[w] = 2;
        }
        walk.clear();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CaPortView, CaView, Neighbor, SwitchView};

    /// Two switches (LIDs 1, 2) linked port 2 to port 2, a CA on port 1 of each (LIDs 3, 4).
    fn pair() -> FabricView {
        let nb = |node, port| Some(Neighbor { node, port: PortNum(port) });
        FabricView {
            switches: vec![
                SwitchView {
                    guid: Guid(0x10),
                    lid: Lid(1),
                    ports: vec![None, nb(NodeId::Ca(0), 1), nb(NodeId::Switch(1), 2)],
                },
                SwitchView {
                    guid: Guid(0x20),
                    lid: Lid(2),
                    ports: vec![None, nb(NodeId::Ca(1), 1), nb(NodeId::Switch(0), 2)],
                },
            ],
            cas: vec![
                CaView {
                    guid: Guid(0x30),
                    ports: vec![CaPortView { num: PortNum(1), lid: Lid(3), neighbor: nb(NodeId::Switch(0), 1) }],
                },
                CaView {
                    guid: Guid(0x40),
                    ports: vec![CaPortView { num: PortNum(1), lid: Lid(4), neighbor: nb(NodeId::Switch(1), 1) }],
                },
            ],
            lmc: 0,
        }
    }

    fn entries(ports: [u8; 4]) -> Vec<(Lid, PortNum)> {
        ports.iter().enumerate().map(|(i, &p)| (Lid(i as u16 + 1), PortNum(p))).collect()
    }

    fn engine(a: [u8; 4], b: [u8; 4]) -> FromFile {
        FromFile::new(Arc::new(GivenTables::new([(Guid(0x10), entries(a)), (Guid(0x20), entries(b))])))
    }

    #[test]
    fn complete_tables_are_programmed_as_given() {
        let r = engine([0, 2, 1, 2], [2, 0, 2, 1]).route(&pair()).unwrap();
        assert_eq!(r.tables[0].port_for(Lid(4)), Some(PortNum(2)));
        assert_eq!(r.tables[1].port_for(Lid(3)), Some(PortNum(2)));
        assert_eq!(r.tables[1].port_for(Lid(2)), Some(PortNum(0)));
    }

    #[test]
    fn every_fault_is_declined_with_what_it_is() {
        let v = pair();
        for (a, b, why) in [
            ([0, 2, 1, 0xff], [2, 0, 2, 1], "has no route for LID 4"),
            ([0, 2, 1, 2], [2, 0, 1, 1], "does not own it"),
            ([0, 2, 2, 2], [2, 0, 2, 1], "loop LID 3"),
            ([0, 3, 1, 2], [2, 0, 2, 1], "which has no cable"),
            ([0, 0, 1, 2], [2, 0, 2, 1], "not its own"),
        ] {
            let err = engine(a, b).route(&v).unwrap_err().to_string();
            assert!(err.contains(why), "{why}: {err}");
        }
        let missing = FromFile::new(Arc::new(GivenTables::new([(Guid(0x10), entries([0, 2, 1, 2]))])));
        assert!(
            missing.route(&v).unwrap_err().to_string().contains("0x0000000000000020 (LID 2) is not in the tables file")
        );
        let none = FromFile::new(Arc::new(GivenTables::default()));
        assert!(none.route(&v).unwrap_err().to_string().contains("no tables file"));
    }
}
