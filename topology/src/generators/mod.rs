//! Fabric generators: pure functions from a [`GenSpec`] to a [`Topology`], deterministic for
//! given inputs and seed (all randomness comes from [`crate::rng::Rng`]).
//!
//! Shapes (switch radix `k`, every switch has exactly `k` ports unless noted):
//!
//! * [`FatTree`] with 2 levels: a folded Clos. `k` leaves and `u` spines; each leaf has `h`
//!   host ports and `u` uplinks, one to every spine. With oversubscription `r:1`,
//!   `u = k / (r + 1)` and `h = k - u`, so the full-bisection default (`r = 1`) has `k/2`
//!   spines and `k²/2` hosts (k = 24: 288 hosts, 36 switches).
//! * [`FatTree`] with 3 levels: the k-ary fat tree of `k` pods. Each pod has `k/2` edge
//!   switches and `u` aggregation switches; each edge has `h` hosts and one uplink to every
//!   aggregation switch of its pod; each aggregation switch has `k/2` links down and `k/2` up;
//!   there are `u·k/2` core switches, and core `c` links to aggregation switch `c / (k/2)` of
//!   every pod. At `r = 1`: `k³/4` hosts, `k²/2` edge, `k²/2` aggregation and `k²/4` core
//!   switches (k = 24: 3456 hosts, 720 switches; k = 48: 27648 hosts, 2880 switches).
//! * [`RailFatTree`]: a 2-level full-bisection tree where every host has `R` single-port HCAs
//!   and HCA `i` of every host goes to a leaf of rail `i`. Hosts form groups of `k/2`; each
//!   group has one leaf per rail; `k/2` spines link to every leaf, so `groups · R ≤ k`.
//! * Degraded trees: [`Degrade`] removes a given number of switch-to-switch links and of
//!   switches that have no CA attached (spines, aggregation and core switches), chosen by seed.
//!   Removing many may disconnect the fabric; that is the point of the exercise.
//! * [`Grid`]: a 1-, 2- or 3-dimensional torus (`wrap`) or mesh of switches with `h` hosts
//!   each. Switch ports `2d+1` / `2d+2` face `+` / `-` along dimension `d`; host ports follow.
//! * [`RandomGraph`]: `n` switches, `h` hosts each, and exactly `links` switch-to-switch
//!   cables placed by seed: first a random spanning tree (so the fabric is connected), then
//!   random extra cables (parallel cables allowed, self-loops never).
//! * [`Dragonfly`]: `g` groups of `a` switches, all-to-all inside a group, one global cable
//!   between every two groups spread evenly over each group's switches, `h` hosts per switch
//!   (ports: `a - 1` local, `ceil((g - 1) / a)` global, then the hosts).
//!
//! Names: switches `spine-J`, `leaf-I`, `core-C`, `agg-A`, `edge-E`, `leaf-rR-G`, `sw-X-Y[-Z]`,
//! `sw-N`, `sw-G-I` (dragonfly group G, switch I); hosts `hN` (rail HCAs `hN-rR`). GUIDs: switch number `i` (in creation order) has
//! `NodeGUID` `0x0002_0000_0000_0000 + i·0x100`, CA number `j` has
//! `0x0001_0000_0000_0000 + j·0x100`, and CA port `p` is `NodeGUID` + `p` (ibsim's layout). A rail
//! host's HCAs share the `SystemImageGUID` of its first HCA. Links carry default attributes.
//!
//! Build a spec with the constructors and plain field updates, then call
//! [`GenSpec::generate`]:
//!
//! ```
//! use ibsm_topology::generators::{FatTree, GenSpec};
//! let spec = GenSpec::FatTree(FatTree::new(3, 4).oversubscribed(1).degraded(2, 1, 7));
//! let topo = spec.generate().unwrap();
//! assert_eq!(topo.ca_count(), 16);
//! assert_eq!(topo.switch_count(), 20 - 1);
//! ```

mod degrade;
mod dragonfly;
mod fat_tree;
mod grid;
mod random;

pub use degrade::{remove_random_links, remove_random_switches};

use ibsm_mad::Guid;

use super::{LinkAttrs, NodeKind, Peer, TopoNode, Topology};

/// The largest fabric a generator builds (nodes in total).
pub const MAX_NODES: usize = 1_000_000;

/// First switch `NodeGUID`.
pub const SWITCH_GUID_BASE: u64 = 0x0002_0000_0000_0000;
/// First CA `NodeGUID`.
pub const CA_GUID_BASE: u64 = 0x0001_0000_0000_0000;
/// Distance between consecutive generated `NodeGUIDs` (room for the port GUIDs).
pub const GUID_STRIDE: u64 = 0x100;
/// Vendor id given to generated nodes (Mellanox/NVIDIA).
pub const VENDOR_ID: u32 = 0x02c9;
/// Device id given to generated switches.
pub const SWITCH_DEVICE_ID: u16 = 0xd2f0;
/// Device id given to generated CAs.
pub const CA_DEVICE_ID: u16 = 0x101b;

/// Why a spec cannot be generated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GenError {
    /// A parameter is out of its range.
    #[error("invalid {what}: {reason}")]
    Invalid {
        /// Parameter name as the CLI spells it (`radix`, `levels`, ...).
        what: &'static str,
        /// What is wrong and what is allowed.
        reason: String,
    },
    /// The fabric would exceed [`MAX_NODES`].
    #[error("fabric too large: {nodes} nodes (at most {max})")]
    TooLarge {
        /// Nodes the spec asks for.
        nodes: u64,
        /// The limit.
        max: usize,
    },
}

fn invalid(what: &'static str, reason: impl Into<String>) -> GenError {
    GenError::Invalid { what, reason: reason.into() }
}

/// Random removals applied after building a tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Degrade {
    /// Switch-to-switch cables to remove (after the switch removals).
    pub links: usize,
    /// Switches without CAs (spine, aggregation, core) to remove with their cables.
    pub switches: usize,
    /// Seed for choosing them.
    pub seed: u64,
}

/// A 2- or 3-level fat tree (see the module docs for the shapes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FatTree {
    /// 2 or 3.
    pub levels: u8,
    /// Switch radix `k` (ports per switch), even, at least 2 (4 for 3 levels).
    pub radix: u8,
    /// Hosts per uplink at the leaf/edge level: 1 = full bisection, 2 = 2:1, 3 = 3:1...
    /// `radix` must be a multiple of `oversubscription + 1`.
    pub oversubscription: u8,
    /// Random removals.
    pub degrade: Degrade,
}

impl FatTree {
    /// A full-bisection tree.
    pub fn new(levels: u8, radix: u8) -> FatTree {
        FatTree { levels, radix, oversubscription: 1, degrade: Degrade::default() }
    }
    /// With `ratio` hosts per uplink on each leaf/edge switch.
    #[must_use]
    pub fn oversubscribed(self, ratio: u8) -> FatTree {
        FatTree { oversubscription: ratio, ..self }
    }
    /// With `links` inter-switch cables and `switches` upper-level switches removed by `seed`.
    #[must_use]
    pub fn degraded(self, links: usize, switches: usize, seed: u64) -> FatTree {
        FatTree { degrade: Degrade { links, switches, seed }, ..self }
    }
}

/// A rail-optimized 2-level tree (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RailFatTree {
    /// Switch radix `k`, even.
    pub radix: u8,
    /// HCAs per host, one rail each; at least 1.
    pub rails: u8,
    /// Host groups of `k/2` hosts; `groups · rails ≤ radix`. 0 means as many as fit.
    pub groups: u8,
    /// Random removals.
    pub degrade: Degrade,
}

impl RailFatTree {
    /// As many groups as the spines can take.
    pub fn new(radix: u8, rails: u8) -> RailFatTree {
        RailFatTree { radix, rails, groups: 0, degrade: Degrade::default() }
    }
}

/// A torus or mesh of switches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grid {
    /// Size along each dimension (1 to 3 dimensions, each at least 1).
    pub dims: Vec<u16>,
    /// `true` for a torus (wrap-around cables), `false` for a mesh.
    pub wrap: bool,
    /// Hosts per switch.
    pub hosts_per_switch: u8,
}

/// A random connected switch graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RandomGraph {
    /// Number of switches, at least 1.
    pub switches: usize,
    /// Ports per switch.
    pub radix: u8,
    /// Hosts per switch (on the lowest ports).
    pub hosts_per_switch: u8,
    /// Switch-to-switch cables, at least `switches - 1`.
    pub links: usize,
    /// Seed.
    pub seed: u64,
}

/// A dragonfly (see the module docs for the layout).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dragonfly {
    /// Groups, at least 2.
    pub groups: usize,
    /// Switches per group, at least 1.
    pub group_size: usize,
    /// Hosts per switch.
    pub hosts_per_switch: u8,
}

/// What to generate. Built by the CLI from arguments (no `FromStr`): use the constructors
/// below or fill the variant's struct directly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GenSpec {
    /// 2- or 3-level fat tree, optionally oversubscribed and degraded.
    FatTree(FatTree),
    /// Rail-optimized 2-level fat tree.
    RailFatTree(RailFatTree),
    /// Torus or mesh.
    Grid(Grid),
    /// Random irregular switch graph.
    Random(RandomGraph),
    /// Dragonfly: all-to-all groups joined all-to-all.
    Dragonfly(Dragonfly),
}

impl GenSpec {
    /// Full-bisection fat tree of `levels` (2 or 3) and switch radix `radix`.
    pub fn fat_tree(levels: u8, radix: u8) -> GenSpec {
        GenSpec::FatTree(FatTree::new(levels, radix))
    }
    /// Rail-optimized tree with `rails` HCAs per host and as many host groups as fit.
    pub fn rail_fat_tree(radix: u8, rails: u8) -> GenSpec {
        GenSpec::RailFatTree(RailFatTree::new(radix, rails))
    }
    /// Torus with the given sizes (e.g. `&[4, 4]`) and hosts per switch.
    pub fn torus(dims: &[u16], hosts_per_switch: u8) -> GenSpec {
        GenSpec::Grid(Grid { dims: dims.to_vec(), wrap: true, hosts_per_switch })
    }
    /// Mesh with the given sizes and hosts per switch.
    pub fn mesh(dims: &[u16], hosts_per_switch: u8) -> GenSpec {
        GenSpec::Grid(Grid { dims: dims.to_vec(), wrap: false, hosts_per_switch })
    }
    /// Random connected graph of `switches` switches with `links` inter-switch cables.
    pub fn random(switches: usize, radix: u8, hosts_per_switch: u8, links: usize, seed: u64) -> GenSpec {
        GenSpec::Random(RandomGraph { switches, radix, hosts_per_switch, links, seed })
    }

    /// Dragonfly of `groups` groups of `group_size` switches with `hosts_per_switch` hosts each.
    pub fn dragonfly(groups: usize, group_size: usize, hosts_per_switch: u8) -> GenSpec {
        GenSpec::Dragonfly(Dragonfly { groups, group_size, hosts_per_switch })
    }

    /// Build the topology.
    pub fn generate(&self) -> Result<Topology, GenError> {
        match self {
            GenSpec::FatTree(s) => {
                let t = match s.levels {
                    2 => fat_tree::two_level(s.radix, s.oversubscription)?,
                    3 => fat_tree::three_level(s.radix, s.oversubscription)?,
                    n => return Err(invalid("levels", format!("must be 2 or 3, found {n}"))),
                };
                degrade::apply(t, s.degrade)
            }
            GenSpec::RailFatTree(s) => degrade::apply(fat_tree::rail(s.radix, s.rails, s.groups)?, s.degrade),
            GenSpec::Grid(s) => grid::grid(&s.dims, s.wrap, s.hosts_per_switch),
            GenSpec::Random(s) => random::random(s),
            GenSpec::Dragonfly(s) => dragonfly::dragonfly(s),
        }
    }
}

/// Check a node count against [`MAX_NODES`].
fn check_size(nodes: u64) -> Result<usize, GenError> {
    usize::try_from(nodes).ok().filter(|n| *n <= MAX_NODES).ok_or(GenError::TooLarge { nodes, max: MAX_NODES })
}

/// Accumulates nodes with the naming and GUID conventions of this module.
#[derive(Debug)]
struct Builder {
    nodes: Vec<TopoNode>,
    switches: u64,
    cas: u64,
}

impl Builder {
    fn with_capacity(n: usize) -> Builder {
        Builder { nodes: Vec::with_capacity(n), switches: 0, cas: 0 }
    }

    fn switch(&mut self, name: String, ports: u8) -> usize {
        let guid = Guid(SWITCH_GUID_BASE + self.switches * GUID_STRIDE);
        self.switches += 1;
        let mut n = TopoNode::new(NodeKind::Switch, name, ports, guid);
        n.vendor_id = VENDOR_ID;
        n.device_id = SWITCH_DEVICE_ID;
        self.nodes.push(n);
        self.nodes.len() - 1
    }

    /// A CA; `sys` overrides the `SystemImageGUID` (rail HCAs of one host share it).
    fn ca(&mut self, name: String, ports: u8, sys: Option<Guid>) -> usize {
        let guid = Guid(CA_GUID_BASE + self.cas * GUID_STRIDE);
        self.cas += 1;
        let mut n = TopoNode::new(NodeKind::Ca, name, ports, guid);
        n.vendor_id = VENDOR_ID;
        n.device_id = CA_DEVICE_ID;
        n.sys_guid = sys.unwrap_or(guid);
        self.nodes.push(n);
        self.nodes.len() - 1
    }

    /// Cable `a[pa]` to `b[pb]`. Callers compute ports within range and never reuse one.
    fn link(&mut self, a: usize, pa: u8, b: usize, pb: u8) {
        let attrs = LinkAttrs::default();
        self.nodes[a].links[usize::from(pa)] = Some(Peer { node: b, port: pb, attrs });
        self.nodes[b].links[usize::from(pb)] = Some(Peer { node: a, port: pa, attrs });
    }

    fn finish(self) -> Topology {
        Topology { nodes: self.nodes }
    }
}
