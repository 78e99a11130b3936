//! `ibsm-routing`: routing engines, pure functions from a fabric view to forwarding tables.
//!
//! Owns: the routing input ([`FabricView`]: switches with their ports and neighbours, CAs with
//! their ports, LIDs and the LMC), the output ([`Routes`]: one linear forwarding table per
//! switch, [`Lft`], shared by 64-LID blocks between tables made from one another), the [`Engine`] trait every engine implements, and the name registry
//! ([`engine_by_name`], [`ENGINE_NAMES`]), in the spirit of OpenSM's routing-engine plug-ins.
//!
//! Guarantees: no MADs, no I/O, no clock; engines are deterministic (the same view gives the
//! same tables) and never panic on any view, however inconsistent: a view that cannot be routed
//! is a [`RoutingError`]. One file per engine ([`minhop`], [`updn`], [`ftree`], and the two that
//! also give each path a layer, [`dfsssp`] and [`nue`]), the engine
//! [`chain`] that tries several in order, the [`check`] analysis (`ibsm routes check`, also
//! the oracle of the tests) and the fabric's [`components`] and DOT rendering. petgraph serves
//! where a graph algorithm is the point (strongly connected components of the channel dependency
//! graph, connected components, DOT); the engines' hot loops stay on flat arrays. Shared internals: `graph` (validated, indexed view), `spread`
//! (the label-and-balance driver of minhop and updn), `par` (scoped-thread data parallelism) and,
//! for the unit tests, `testing` (the fabrics they share).

pub mod chain;
pub mod check;
pub mod components;
pub mod dfsssp;
pub mod file;
pub mod ftree;
mod graph;
mod lft;
pub mod minhop;
pub mod nue;
mod par;
mod spread;
#[cfg(test)]
mod testing;
pub mod updn;

use std::sync::Arc;

use ibsm_mad::{Guid, Lid, PortNum};

pub use lft::Lft;

/// A node of the view: index into [`FabricView::switches`] or [`FabricView::cas`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NodeId {
    /// A switch, by index into [`FabricView::switches`].
    Switch(usize),
    /// A channel adapter (or router), by index into [`FabricView::cas`].
    Ca(usize),
}

/// The far end of a cable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Neighbor {
    /// The node at the far end.
    pub node: NodeId,
    /// Its port number.
    pub port: PortNum,
}

/// A switch as the router sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwitchView {
    /// NodeGUID (used only to name the switch in errors and for deterministic order).
    pub guid: Guid,
    /// Base LID of the management port 0 ([`Lid::UNASSIGNED`] if none).
    pub lid: Lid,
    /// Neighbours by port number: index `p` is port `p`; index 0 (the management port) is
    /// always `None`. The length is `NumPorts + 1`.
    pub ports: Vec<Option<Neighbor>>,
}

/// One port of a CA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CaPortView {
    /// Port number on the CA.
    pub num: PortNum,
    /// Base LID of the port ([`Lid::UNASSIGNED`] if none).
    pub lid: Lid,
    /// What the port is cabled to, if anything.
    pub neighbor: Option<Neighbor>,
}

/// A channel adapter (or router) as the router sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaView {
    /// NodeGUID.
    pub guid: Guid,
    /// Its linked or addressed ports.
    pub ports: Vec<CaPortView>,
}

/// Everything an engine needs: the switch graph, the end ports and their LIDs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FabricView {
    /// All switches.
    pub switches: Vec<SwitchView>,
    /// All CAs.
    pub cas: Vec<CaView>,
    /// LID mask control: every end port owns `2^lmc` consecutive LIDs from its base LID
    /// (switch port 0 included, as OpenSM does with `lmc_esp0`-less fabrics; engines route every
    /// LID of the range).
    pub lmc: u8,
}

impl FabricView {
    /// Number of LIDs per end port, `2^lmc` (LMC is capped at 7).
    pub fn lids_per_port(&self) -> u16 {
        1u16 << self.lmc.min(7)
    }

    /// The highest LID any end port owns (base LID plus `2^lmc - 1`), or 0 if none.
    pub fn max_lid(&self) -> u16 {
        let span = self.lids_per_port() - 1;
        let sw = self.switches.iter().map(|s| s.lid.0);
        let ca = self.cas.iter().flat_map(|c| c.ports.iter().map(|p| p.lid.0));
        sw.chain(ca).filter(|&l| l != 0).map(|l| l.saturating_add(span)).max().unwrap_or(0)
    }
}

/// How a table differs from the one it was made from: the LIDs whose entries differ, and
/// nothing else. A repair gives one for each table it changed, so that a table known to be
/// held as `from` is compared only at `lids`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableDelta {
    /// The table this one was made from (the same length).
    pub from: Arc<Lft>,
    /// The LIDs whose entries differ from `from`'s, ascending; every other entry is the same.
    pub lids: Vec<u16>,
}

/// What an engine produces: one table per switch, in [`FabricView::switches`] order.
///
/// Each table is shared (`Arc`): a repair of a large fabric copies only the tables it changes
/// and shares the others with the routes it started from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Routes {
    /// `tables[i]` belongs to `view.switches[i]`.
    pub tables: Vec<Arc<Lft>>,
}

impl Routes {
    /// Routes made of `tables`, in `view.switches` order.
    pub fn from_tables(tables: Vec<Lft>) -> Routes {
        Routes { tables: tables.into_iter().map(Arc::new).collect() }
    }
}

/// Why an engine could not route a view.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RoutingError {
    /// A neighbour reference points outside the view.
    #[error("switch {guid} port {port}: neighbour {node:?} is not in the fabric view")]
    DanglingNeighbor {
        /// The switch holding the reference.
        guid: Guid,
        /// Its port.
        port: PortNum,
        /// The missing node.
        node: NodeId,
    },
    /// Two end ports claim overlapping LID ranges.
    #[error("LID {lid} is owned by both {first} and {second}")]
    DuplicateLid {
        /// The contested LID.
        lid: Lid,
        /// GUID of the first owner found.
        first: Guid,
        /// GUID of the second owner.
        second: Guid,
    },
    /// The engine declines this topology (e.g. not a fat tree); the reason says why.
    #[error("engine {engine} declined: {reason}")]
    Declined {
        /// Engine name.
        engine: &'static str,
        /// Why.
        reason: String,
    },
}

/// A routing engine: a pure function from a fabric view to forwarding tables.
pub trait Engine {
    /// The registry name (`"minhop"`).
    fn name(&self) -> &'static str;
    /// Computes one LFT per switch of `view`.
    fn route(&self, view: &FabricView) -> Result<Routes, RoutingError>;
    /// As [`Engine::route`], with the layer (SL) of every path for engines that spread paths
    /// over layers to break credit loops (`dfsssp`); `None` for the others (every path on SL 0
    /// as far as routing goes).
    fn route_layered(&self, view: &FabricView) -> Result<(Routes, Option<dfsssp::PathLayers>), RoutingError> {
        self.route(view).map(|r| (r, None))
    }
}

/// Names of the engines that compute routes (the registry also knows `file`, which takes them
/// from a file: see [`KNOWN_NAMES`]).
pub const ENGINE_NAMES: &[&str] =
    &[ftree::FatTree::NAME, updn::UpDown::NAME, minhop::MinHop::NAME, dfsssp::Dfsssp::NAME, nue::Nue::NAME];

/// Every name [`engine_by_name`] and [`engine_with`] know: [`ENGINE_NAMES`] and `file`.
pub const KNOWN_NAMES: &[&str] = &[
    ftree::FatTree::NAME,
    updn::UpDown::NAME,
    minhop::MinHop::NAME,
    dfsssp::Dfsssp::NAME,
    nue::Nue::NAME,
    file::FromFile::NAME,
];

/// What an operator tells the engines beyond the fabric (OpenSM's routing hint files).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EngineOptions {
    /// Root switches by NodeGUID (`root_guid_file`): up/down routes from them; ftree routes
    /// only when they are its top level, else declines; min-hop has no roots. Empty: each
    /// engine finds its own.
    pub roots: Vec<Guid>,
    /// Tables given whole (`lfts_file`), for the `file` engine.
    pub tables: Option<Arc<file::GivenTables>>,
    /// Compute and I/O nodes by port GUID (`cn_guid_file`, `io_guid_file`), as read.
    pub host_lists: Option<Arc<ftree::hosts::HostLists>>,
    /// `host_lists` resolved against the fabric ([`ftree::Hosts::resolve`]): with it, ftree is
    /// ranked from the compute nodes' switches ([`ftree::Hinted`]). Without it, every CA port
    /// is a compute node.
    pub hosts: Option<Arc<ftree::Hosts>>,
    /// How minhop and updn balance: routing order, port shifting, port scattering.
    pub tuning: Tuning,
    /// Destinations routed first, by port GUID (`guid_routing_order_file`), as read; resolved
    /// into `tuning.order` by [`EngineOptions::resolve_ports`].
    pub routing_order: Option<Arc<Vec<Guid>>>,
    /// The most layers (virtual lanes) `dfsssp` may spread paths over, and the layers `nue`
    /// splits the destinations into; `None`: their default (8).
    pub max_layers: Option<u8>,
}

/// OpenSM's balancing options for the destination-based engines (minhop, updn).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tuning {
    /// Destinations routed first, in this order (`guid_routing_order_file`): end ports by
    /// (NodeGUID, port number), switches by (NodeGUID, port 0). The others follow as usual.
    pub order: Option<Arc<Vec<(Guid, PortNum)>>>,
    /// `port_shifting`: each switch searches its least-loaded port from a rotating start
    /// (the ports' total load divided by their number, modulo their number).
    pub port_shifting: bool,
    /// `scatter_ports`: non-zero, a random port among the least loaded, from this seed.
    pub scatter_ports: u64,
}

impl EngineOptions {
    /// These options with the lists that name ports by GUID (`host_lists`, `routing_order`)
    /// resolved against the fabric's end ports, given as `(port GUID, NodeGUID, port number)`;
    /// a routing-order GUID that is no end port's names a switch by NodeGUID.
    #[must_use]
    pub fn resolve_ports(&self, ports: impl IntoIterator<Item = (Guid, Guid, PortNum)>) -> EngineOptions {
        let mut o = self.clone();
        if self.host_lists.is_none() && self.routing_order.is_none() {
            return o;
        }
        let mut ports: Vec<(Guid, Guid, PortNum)> = ports.into_iter().collect();
        ports.sort_unstable();
        if let Some(lists) = &self.host_lists {
            o.hosts = Some(Arc::new(ftree::Hosts::resolve(lists, ports.iter().copied())));
        }
        if let Some(order) = &self.routing_order {
            let named = order.iter().map(|g| match ports.binary_search_by_key(g, |p| p.0) {
                Ok(i) => (ports[i].1, ports[i].2),
                Err(_) => (*g, PortNum(0)),
            });
            o.tuning.order = Some(Arc::new(named.collect()));
        }
        o
    }
}

/// The engine registered under `name`, if any. A comma-separated list (`"ftree,updn,minhop"`)
/// gives a [`chain::Chain`] of those engines (use [`chain::Chain::run`] directly to see why each
/// declined).
pub fn engine_by_name(name: &str) -> Option<Box<dyn Engine>> {
    engine_with(name, &EngineOptions::default())
}

/// As [`engine_by_name`], with `options`.
pub fn engine_with(name: &str, options: &EngineOptions) -> Option<Box<dyn Engine>> {
    if name.contains(',') {
        let names: Vec<&str> = name.split(',').map(str::trim).collect();
        return chain::Chain::from_names_with(&names, options).ok().map(|c| Box::new(c) as Box<dyn Engine>);
    }
    let rooted = !options.roots.is_empty();
    match name {
        minhop::MinHop::NAME if options.tuning != Tuning::default() => {
            Some(Box::new(minhop::Tuned(options.tuning.clone())))
        }
        minhop::MinHop::NAME => Some(Box::new(minhop::MinHop)),
        dfsssp::Dfsssp::NAME => {
            Some(Box::new(options.max_layers.map_or_else(dfsssp::Dfsssp::default, dfsssp::Dfsssp::with_layers)))
        }
        nue::Nue::NAME => Some(Box::new(options.max_layers.map_or_else(nue::Nue::default, nue::Nue::with_layers))),
        updn::UpDown::NAME if rooted => {
            Some(Box::new(updn::UpDown::with_roots(options.roots.clone()).tuned(options.tuning.clone())))
        }
        updn::UpDown::NAME => Some(Box::new(updn::UpDown::auto().tuned(options.tuning.clone()))),
        ftree::FatTree::NAME if options.hosts.is_some() => {
            Some(Box::new(ftree::Hinted::new(options.hosts.clone().unwrap_or_default(), options.roots.clone())))
        }
        ftree::FatTree::NAME if rooted => Some(Box::new(ftree::Rooted::new(options.roots.clone()))),
        ftree::FatTree::NAME => Some(Box::new(ftree::FatTree)),
        file::FromFile::NAME => Some(Box::new(file::FromFile::new(options.tables.clone().unwrap_or_default()))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_knows_every_engine() {
        for n in ENGINE_NAMES {
            assert_eq!(engine_by_name(n).map(|e| e.name()), Some(*n));
        }
        assert!(engine_by_name("ftree-that-does-not-exist").is_none());
        assert_eq!(engine_by_name("ftree, updn").map(|e| e.name()), Some("chain"));
        assert!(engine_by_name("ftree,nope").is_none());
    }

    #[test]
    fn lft_lookup_and_top() {
        let mut t = Lft::unrouted(5);
        t.set(3, PortNum(2));
        assert_eq!(t.top(), 5);
        assert_eq!(t.port_for(Lid(3)), Some(PortNum(2)));
        assert_eq!(t.port_for(Lid(4)), None);
        assert_eq!(t.port_for(Lid(900)), None);
        assert_eq!(Lft::default().top(), 0);
    }

    #[test]
    fn max_lid_covers_lmc_span() {
        let v = FabricView {
            switches: vec![SwitchView { guid: Guid(1), lid: Lid(8), ports: vec![None] }],
            cas: vec![CaView {
                guid: Guid(2),
                ports: vec![CaPortView { num: PortNum(1), lid: Lid(4), neighbor: None }],
            }],
            lmc: 2,
        };
        assert_eq!(v.lids_per_port(), 4);
        assert_eq!(v.max_lid(), 11);
    }
}
