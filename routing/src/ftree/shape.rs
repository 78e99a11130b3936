//! A fat tree's shape kept between faults, so that a repair does not work it out again.
//!
//! Owns [`Shape`]: the indexed fabric of a full route (switch links, destinations, LID owners),
//! its ranked tree and the top switches each switch reaches going up. A repair of that route
//! after some switch-to-switch cables were lost takes the lost links out of copies of them
//! ([`Shape::without`]) instead of indexing and ranking the whole new fabric: at k = 48 that is
//! the adjacency copied less a few links, where a fresh set-up reads every port of the view,
//! claims every LID, ranks every switch breadth-first and ORs every switch's tops.
//!
//! Guarantees: what [`Shape::without`] gives is exactly what [`Prepared::fresh`]
//! gives on the new fabric; where that cannot be shown cheaply it gives `None` and the repair
//! sets up afresh. The ranks are shown unchanged link by link: taking out a link between levels
//! `l` and `l + 1` changes no switch's breadth-first distance from the leaves when its upper
//! end keeps another link down to level `l` (by induction on the level, every switch keeps a
//! shortest way down). The components are counted again and compared; the top switches stay
//! those of the shape when every lower end keeps an up link, and only the lower ends and the
//! switches below them have their sets of tops worked out again. It must not touch tables.

use std::borrow::Cow;
use std::sync::Arc;

use ibsm_mad::PortNum;

use super::FtreeError;
use super::valley::Tops;
use super::{Csr, Tree};
use crate::graph::{FAR, Indexed};
use crate::{FabricView, NodeId};

/// A full route's fabric indexed, ranked and its tops worked out, kept with the route so that
/// a repair of it takes out the lost links instead of setting the new fabric up again
/// ([`super::FatTree::repair_shaped`]). Made with [`Shape::of`] between faults.
pub struct Shape {
    /// The fabric this is the shape of (a repair uses it only for this very view).
    view: Arc<FabricView>,
    idx: Indexed,
    tree: Tree,
    tops: Tops,
    /// Per LID, its destination's index in `idx.dests`.
    owner: Vec<Option<usize>>,
}

impl std::fmt::Debug for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shape")
            .field("switches", &self.tree.len())
            .field("dests", &self.idx.dests.len())
            .field("top", &self.idx.top)
            .finish_non_exhaustive()
    }
}

impl Shape {
    /// The shape of `view`; `None` when it is not a fat tree (a repair of it then fails too).
    pub fn of(view: &Arc<FabricView>) -> Option<Shape> {
        let Prepared { idx, tree, tops, owner } = Prepared::fresh(view).ok()?;
        Some(Shape { view: Arc::clone(view), idx, tree, tops, owner: owner.into_owned() })
    }

    /// Whether this is the shape of `base` (that very view, not an equal one).
    pub(super) fn is_of(&self, base: &FabricView) -> bool {
        std::ptr::eq(Arc::as_ptr(&self.view), base)
    }

    /// The set-up of this shape's fabric less the switch ports `lost` (every other port, node
    /// and LID the same, in the same order): `None` when a lost port led to a CA, a cable is
    /// lost at one end only, a rank or a component would change, or a switch loses its last
    /// up link (then set up afresh).
    pub(super) fn without(&self, lost: &[(usize, PortNum)]) -> Option<Prepared<'_>> {
        let n = self.tree.len();
        let mut gone: Vec<(usize, PortNum)> = lost.to_vec();
        gone.sort_unstable();
        gone.dedup();
        let is_gone = |s: usize, p: PortNum| gone.binary_search(&(s, p)).is_ok();
        let mut marked = vec![false; n];
        let mut lower = Vec::new();
        let level = &self.tree.level;
        for &(s, p) in &gone {
            let far = self.view.switches.get(s)?.ports.get(usize::from(p.0)).copied().flatten()?;
            let NodeId::Switch(j) = far.node else { return None };
            if !is_gone(j, far.port) {
                return None;
            }
            let (ls, lj) = (*level.get(s)?, *level.get(j)?);
            if ls == FAR || lj == FAR || ls == lj {
                return None;
            }
            marked[s] = true;
            if ls < lj {
                lower.push(s);
                continue;
            }
            // The upper end keeps a link down to the level below it.
            let keeps = self.idx.graph.links(s).iter().any(|l| !is_gone(s, l.0) && level.get(l.1) == Some(&(ls - 1)));
            if !keeps {
                return None;
            }
        }
        let graph = self.idx.graph.without(&marked, is_gone);
        let (comp, _) = graph.components();
        if comp != self.tree.comp {
            return None;
        }
        let csr = |c: &Csr| {
            let mut out = Csr { start: Vec::with_capacity(c.start.len()), links: Vec::with_capacity(c.links.len()) };
            for (s, &m) in marked.iter().enumerate() {
                out.start.push(out.links.len() as u32);
                let links = c.of(s);
                if m {
                    out.links.extend(links.iter().filter(|l| !is_gone(s, l.port)));
                } else {
                    out.links.extend_from_slice(links);
                }
            }
            out.start.push(out.links.len() as u32);
            out
        };
        let up = csr(&self.tree.up);
        let tree = Tree {
            level: self.tree.level.clone(),
            up_ports: up.links.iter().map(|l| l.port).collect(),
            up,
            down: csr(&self.tree.down),
            all: csr(&self.tree.all),
            by_level: self.tree.by_level.clone(),
            comp,
        };
        let tops = self.tops.without(&tree, &lower)?;
        let idx = Indexed {
            graph,
            dests: self.idx.dests.clone(),
            hosts_at: self.idx.hosts_at.clone(),
            per_port: self.idx.per_port,
            top: self.idx.top,
        };
        Some(Prepared { idx, tree, tops, owner: Cow::Borrowed(&self.owner) })
    }
}

/// What a repair reads of the new fabric besides the tables: its index, its ranked tree, the
/// top switches each reaches and the owner of each LID (its index in `idx.dests`). Set up
/// afresh ([`Prepared::fresh`]) or taken from the base's [`Shape`].
pub(super) struct Prepared<'a> {
    pub(super) idx: Indexed,
    pub(super) tree: Tree,
    pub(super) tops: Tops,
    pub(super) owner: Cow<'a, [Option<usize>]>,
}

impl Prepared<'_> {
    /// `view` indexed, ranked, its tops and LID owners worked out.
    pub(super) fn fresh(view: &FabricView) -> Result<Prepared<'static>, FtreeError> {
        let idx = Indexed::new(view)?;
        let tree = Tree::new(view, &idx)?;
        let tops = Tops::new(&tree);
        let owner = Cow::Owned(owners(&idx));
        Ok(Prepared { idx, tree, tops, owner })
    }
}

/// Per LID (to `idx.top`), the index in `idx.dests` of the destination that owns it.
fn owners(idx: &Indexed) -> Vec<Option<usize>> {
    let mut owner: Vec<Option<usize>> = vec![None; usize::from(idx.top) + 1];
    for (k, d) in idx.dests.iter().enumerate() {
        for j in 0..idx.per_port {
            if let Some(o) = owner.get_mut(usize::from(d.base.saturating_add(j))) {
                *o = Some(k);
            }
        }
    }
    owner
}
