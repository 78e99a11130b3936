//! The roots of a fat tree as ftree ranks it (the switches on the top level of each connected
//! component), and ftree with roots given by the operator ([`Rooted`], OpenSM's
//! `root_guid_file`): it routes only when the given roots are exactly those, and otherwise
//! declines with both lists, so that the engine chain moves on (to up/down, which takes the
//! given roots as they are) rather than route a tree ranked differently from what the operator
//! wrote down.

use ibsm_mad::Guid;

use super::{FatTree, FtreeError, Tree};
use crate::graph::{FAR, Indexed};
use crate::{Engine, FabricView, Routes, RoutingError};

impl FatTree {
    /// The top-level switches of each component as ftree ranks `view` (levels count hops from
    /// the CA level), sorted by GUID.
    ///
    /// # Errors
    /// As [`FatTree::route_typed`]: an inconsistent view, or one that is not a fat tree.
    pub fn roots(&self, view: &FabricView) -> Result<Vec<Guid>, FtreeError> {
        let idx = Indexed::new(view)?;
        let tree = Tree::new(view, &idx)?;
        Ok(top_level(view, &tree))
    }
}

/// The switches on the top level of each component of `tree`, sorted by GUID.
pub(super) fn top_level(view: &FabricView, tree: &Tree) -> Vec<Guid> {
    let mut top = vec![0u32; tree.len()];
    for (s, &l) in tree.level.iter().enumerate().filter(|(_, l)| **l != FAR) {
        let c = tree.comp[s];
        top[c] = top[c].max(l);
    }
    let mut roots: Vec<Guid> = (0..tree.len())
        .filter(|&s| tree.level[s] != FAR && tree.level[s] == top[tree.comp[s]])
        .filter_map(|s| view.switches.get(s).map(|sw| sw.guid))
        .collect();
    roots.sort_unstable();
    roots
}

/// The declining error when the operator's roots are not the tree's top level.
pub(super) fn check_roots(given: &[Guid], found: &[Guid]) -> Result<(), RoutingError> {
    if found == given {
        return Ok(());
    }
    let list = |g: &[Guid]| g.iter().map(ToString::to_string).collect::<Vec<_>>().join(" ");
    Err(RoutingError::Declined {
        engine: FatTree::NAME,
        reason: format!("the root GUID file names {} but the tree's top level is {}", list(given), list(found)),
    })
}

/// ftree held to the roots an operator gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rooted {
    roots: Vec<Guid>,
}

impl Rooted {
    /// ftree that routes only when its top level is exactly `roots`.
    pub fn new(mut roots: Vec<Guid>) -> Rooted {
        roots.sort_unstable();
        roots.dedup();
        Rooted { roots }
    }
}

impl Engine for Rooted {
    fn name(&self) -> &'static str {
        FatTree::NAME
    }

    fn route(&self, view: &FabricView) -> Result<Routes, RoutingError> {
        let found = FatTree.roots(view).map_err(RoutingError::from)?;
        check_roots(&self.roots, &found)?;
        FatTree.route(view)
    }
}
