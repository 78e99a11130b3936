//! Compute and I/O nodes for ftree (OpenSM's `cn_guid_file` and `io_guid_file`), and the ftree
//! engine that routes with them ([`Hinted`]).
//!
//! Owns the classing of CA ports ([`Hosts`]) and nothing of the algorithm. As in OpenSM, the
//! lists name end ports by port GUID; [`Hosts::resolve`] turns them into (CA NodeGUID, port
//! number) pairs, the names a [`FabricView`] has. A port is a *compute node* when the compute
//! list names it, or, without a compute list, when the I/O list does not. The leaves of the tree
//! are the switches with compute nodes; the tree is ranked from them, so CAs may hang from any
//! level (storage or service nodes on the spines). Every CA port is routed to and from: the
//! compute nodes first, exactly as if the others were not there (their balance is the tree's
//! without them), then the others, which count in no compute node's balance. As in OpenSM, a
//! port in neither list (with a compute list) is routed like an I/O node.
//!
//! Traffic between two non-compute ports on switches that share no ancestor (two I/O nodes on
//! two spines of a two-level tree) has no up-then-down path; it takes one down-then-up turn at a
//! valley switch, as ftree's degraded-tree rule does (OpenSM allows I/O nodes such reverse hops,
//! `max_reverse_hops`).

use std::sync::Arc;

use ibsm_mad::{Guid, PortNum};

use super::{FatTree, roots::check_roots, route_classed};
use crate::graph::Dest;
use crate::{Engine, FabricView, Routes, RoutingError};

/// The operator's lists, by port GUID, as read from the files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostLists {
    /// Compute-node port GUIDs (`cn_guid_file`); `None`: every port not in `io` is one.
    pub compute: Option<Vec<Guid>>,
    /// I/O-node port GUIDs (`io_guid_file`).
    pub io: Vec<Guid>,
}

/// CA ports classed as compute nodes, by (CA NodeGUID, port number).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hosts {
    compute: Option<Vec<(Guid, PortNum)>>,
    io: Vec<(Guid, PortNum)>,
}

impl Hosts {
    /// Compute nodes (`None`: every port not in `io`) and I/O nodes, by (NodeGUID, port).
    pub fn new(compute: Option<Vec<(Guid, PortNum)>>, mut io: Vec<(Guid, PortNum)>) -> Hosts {
        let compute = compute.map(|mut c| {
            c.sort_unstable();
            c.dedup();
            c
        });
        io.sort_unstable();
        io.dedup();
        Hosts { compute, io }
    }

    /// `lists` resolved against the fabric's end ports, `(port GUID, NodeGUID, port number)`
    /// each; a GUID that names no port of the fabric is left out.
    pub fn resolve(lists: &HostLists, ports: impl IntoIterator<Item = (Guid, Guid, PortNum)>) -> Hosts {
        let sorted = |l: &[Guid]| {
            let mut v = l.to_vec();
            v.sort_unstable();
            v
        };
        let (cn_list, io_list) = (lists.compute.as_deref().map(sorted), sorted(&lists.io));
        let mut cn = cn_list.as_ref().map(|_| Vec::new());
        let mut io = Vec::new();
        for (port_guid, node, num) in ports {
            if let (Some(list), Some(cn)) = (&cn_list, cn.as_mut())
                && list.binary_search(&port_guid).is_ok()
            {
                cn.push((node, num));
            }
            if io_list.binary_search(&port_guid).is_ok() {
                io.push((node, num));
            }
        }
        Hosts::new(cn, io)
    }

    /// Whether port `num` of CA `node` is a compute node.
    pub fn is_compute_port(&self, node: Guid, num: PortNum) -> bool {
        match &self.compute {
            Some(c) => c.binary_search(&(node, num)).is_ok(),
            None => self.io.binary_search(&(node, num)).is_err(),
        }
    }

    /// Whether CA destination `d` of `view` is a compute node.
    pub(super) fn is_compute(&self, view: &FabricView, d: &Dest) -> bool {
        let Some(ca) = d.ca.and_then(|c| view.cas.get(c)) else { return false };
        ca.ports.iter().find(|p| p.lid.0 == d.base).is_some_and(|p| self.is_compute_port(ca.guid, p.num))
    }
}

/// ftree with compute and I/O nodes given (and, optionally, the roots).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hinted {
    hosts: Arc<Hosts>,
    roots: Vec<Guid>,
}

impl Hinted {
    /// ftree ranked from the switches with compute nodes of `hosts`; with `roots` not empty, it
    /// routes only when they are the tree's top level (as [`super::Rooted`]).
    pub fn new(hosts: Arc<Hosts>, mut roots: Vec<Guid>) -> Hinted {
        roots.sort_unstable();
        roots.dedup();
        Hinted { hosts, roots }
    }
}

impl Engine for Hinted {
    fn name(&self) -> &'static str {
        FatTree::NAME
    }

    fn route(&self, view: &FabricView) -> Result<Routes, RoutingError> {
        let (routes, tops) = route_classed(view, Some(&self.hosts)).map_err(RoutingError::from)?;
        if !self.roots.is_empty() {
            check_roots(&self.roots, &tops)?;
        }
        Ok(routes)
    }
}

#[cfg(test)]
mod tests {
    use ibsm_mad::Lid;

    use super::*;
    use crate::check::{CreditLoops, check};
    use crate::{CaPortView, CaView, Lft, Neighbor, NodeId, SwitchView};

    #[allow(clippy::unnecessary_wraps)] // builds `SwitchView::ports` entries, which are options
    fn nb(node: NodeId, port: u8) -> Option<Neighbor> {
        Some(Neighbor { node, port: PortNum(port) })
    }

    /// A complete two-level tree: `leaves` leaves of `hosts` compute nodes each, `spines`
    /// spines; leaf `l` port `hosts + 1 + j` to spine `j` port `l + 1`. Switch LIDs from 1, then
    /// the compute nodes' LIDs. With `storage`, spine 0 also holds that many CAs and spine 2 one
    /// (on their ports after the leaves), with LIDs after every compute node's.
    fn tree(leaves: usize, hosts: usize, spines: usize, storage: usize) -> FabricView {
        let mut switches = Vec::new();
        for l in 0..leaves {
            let mut ports = vec![None];
            ports.extend((0..hosts).map(|h| nb(NodeId::Ca(l * hosts + h), 1)));
            ports.extend((0..spines).map(|j| nb(NodeId::Switch(leaves + j), l as u8 + 1)));
            switches.push(SwitchView { guid: Guid(0x100 + l as u64), lid: Lid(1 + l as u16), ports });
        }
        let cns = leaves * hosts;
        let mut cas: Vec<CaView> = (0..cns)
            .map(|i| CaView {
                guid: Guid(0x300 + i as u64),
                ports: vec![CaPortView {
                    num: PortNum(1),
                    lid: Lid((leaves + spines + 1 + i) as u16),
                    neighbor: nb(NodeId::Switch(i / hosts), (1 + i % hosts) as u8),
                }],
            })
            .collect();
        for j in 0..spines {
            let mut ports = vec![None];
            ports.extend((0..leaves).map(|l| nb(NodeId::Switch(l), (hosts + 1 + j) as u8)));
            // Uneven on purpose: `storage` CAs on spine 0, one on spine 2, none on the others.
            let here = match j {
                0 => storage,
                2 => storage.min(1),
                _ => 0,
            };
            for k in 0..here {
                let c = cas.len();
                ports.push(nb(NodeId::Ca(c), 1));
                cas.push(CaView {
                    guid: Guid(0x900 + c as u64),
                    ports: vec![CaPortView {
                        num: PortNum(1),
                        lid: Lid((leaves + spines + 1 + c) as u16),
                        neighbor: nb(NodeId::Switch(leaves + j), (leaves + 1 + k) as u8),
                    }],
                });
            }
            switches.push(SwitchView { guid: Guid(0x200 + j as u64), lid: Lid((leaves + 1 + j) as u16), ports });
        }
        FabricView { switches, cas, lmc: 0 }
    }

    fn io_of(v: &FabricView) -> Vec<(Guid, PortNum)> {
        v.cas.iter().filter(|c| c.guid.0 >= 0x900).map(|c| (c.guid, PortNum(1))).collect()
    }

    #[test]
    fn storage_on_the_spines_is_routed_and_the_compute_nodes_keep_their_balance() {
        let plain = tree(4, 4, 4, 0);
        let with = tree(4, 4, 4, 3);
        // Without hints, CAs on two levels are not a fat tree.
        assert!(FatTree.route(&with).is_err());
        let bare = FatTree.route(&plain).unwrap();
        for hosts in [
            Hosts::new(None, io_of(&with)),
            Hosts::new(Some(plain.cas.iter().map(|c| (c.guid, PortNum(1))).collect()), Vec::new()),
        ] {
            let r = Hinted::new(Arc::new(hosts), Vec::new()).route(&with).unwrap();
            let rep = check(&with, &r);
            assert_eq!(rep.reachable, rep.pairs, "{rep}");
            assert_eq!(rep.switch_reachable, rep.switch_pairs, "{rep}");
            assert_eq!(rep.credit_loops, CreditLoops::None, "{rep}");
            // Every LID of the tree without storage is routed as there, on every switch.
            for (s, (a, b)) in bare.tables.iter().zip(&r.tables).enumerate() {
                for lid in 1..=plain.max_lid() {
                    assert_eq!(a.port_for(Lid(lid)), b.port_for(Lid(lid)), "switch {s} LID {lid}");
                }
            }
            // A leaf sends the storage LIDs up to their spines (ports 5 and 7).
            let up: Vec<u8> = (plain.max_lid() + 1..=with.max_lid())
                .filter_map(|l| r.tables[0].port_for(Lid(l)))
                .map(|p| p.0)
                .collect();
            assert_eq!(up, [5, 5, 5, 7]);
            assert_ne!(r.tables[0].port_for(Lid(1)), Some(Lft::UNROUTED));
        }
    }

    #[test]
    fn lists_resolve_by_port_guid_and_roots_are_held() {
        let with = tree(2, 2, 2, 1);
        let ports: Vec<(Guid, Guid, PortNum)> =
            with.cas.iter().map(|c| (Guid(c.guid.0 + 0x10_0000), c.guid, PortNum(1))).collect();
        let io: Vec<Guid> = ports.iter().filter(|p| p.1.0 >= 0x900).map(|p| p.0).collect();
        let lists = HostLists { compute: None, io: io.clone() };
        let hosts = Hosts::resolve(&lists, ports.iter().copied());
        assert!(!hosts.is_compute_port(Guid(0x904), PortNum(1)));
        assert!(hosts.is_compute_port(Guid(0x300), PortNum(1)));
        // A compute list: only its ports are compute nodes.
        let cn = HostLists { compute: Some(vec![ports[0].0]), io };
        let h = Hosts::resolve(&cn, ports.iter().copied());
        assert!(h.is_compute_port(Guid(0x300), PortNum(1)) && !h.is_compute_port(Guid(0x301), PortNum(1)));
        let hosts = Arc::new(hosts);
        assert!(Hinted::new(Arc::clone(&hosts), vec![Guid(0x200), Guid(0x201)]).route(&with).is_ok());
        let err = Hinted::new(hosts, vec![Guid(0x100)]).route(&with).unwrap_err();
        assert!(err.to_string().contains("top level"), "{err}");
        // Through the registry, with the options resolved.
        let opts =
            crate::EngineOptions { host_lists: Some(Arc::new(lists)), ..Default::default() }.resolve_ports(ports);
        assert!(crate::engine_with("ftree", &opts).unwrap().route(&with).is_ok());
        assert!(crate::engine_by_name("ftree").unwrap().route(&with).is_err());
    }
}
