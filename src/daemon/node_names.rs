//! The node names the log lines use (`node-name-map`): the running SM's map, for the binary's
//! logger, which sees the core's events but not the SM.
//!
//! Owns one process-wide copy of the [`NodeNames`] in force, set when `ibsm run` starts and
//! after every reload that is put in force (the `startup` module's `reload`); everything
//! else (status, the dumps, the page) reads the SM's own configuration.

use std::sync::{PoisonError, RwLock};

use ibsm_mad::Guid;

use crate::core::NodeNames;

static IN_FORCE: RwLock<Option<NodeNames>> = RwLock::new(None);

/// Puts `names` in force for the log lines.
pub fn set(names: &NodeNames) {
    *IN_FORCE.write().unwrap_or_else(PoisonError::into_inner) = Some(names.clone());
}

/// The name the map in force gives `guid`, if any.
pub fn name(guid: Guid) -> Option<String> {
    IN_FORCE.read().unwrap_or_else(PoisonError::into_inner).as_ref()?.get(guid).map(str::to_owned)
}
