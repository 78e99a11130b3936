//! The engine chain: `routing-engine = ["ftree", "updn", "minhop"]` tries each engine in order
//! and keeps the first tables produced, with the reason every earlier engine gave for declining.
//!
//! The layers of an engine that gives them (`dfsssp`) come with its tables.
//!
//! Owns only the ordering and the record of refusals ([`ChainOutcome::declined`]); the SM logs
//! them. Guarantees: an engine is never skipped silently; every refusal is kept with the engine's
//! own error, and the outcome names the engine whose tables were kept.

use core::fmt;

use crate::dfsssp::PathLayers;
use crate::{Engine, EngineOptions, FabricView, Routes, RoutingError, engine_with};

/// An ordered list of engines.
pub struct Chain {
    engines: Vec<Box<dyn Engine>>,
}

impl fmt::Debug for Chain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.engines.iter().map(|e| e.name())).finish()
    }
}

/// One engine's refusal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declined {
    /// Engine name.
    pub engine: &'static str,
    /// What it said.
    pub error: RoutingError,
}

impl fmt::Display for Declined {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.error {
            // The error already names the engine.
            RoutingError::Declined { .. } => write!(f, "{}", self.error),
            e => write!(f, "engine {} failed: {e}", self.engine),
        }
    }
}

/// The tables the chain kept, from which engine, and who declined before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainOutcome {
    /// The engine that produced `routes`.
    pub engine: &'static str,
    /// Its tables.
    pub routes: Routes,
    /// The layer (SL) of every path, from an engine that layers paths (`dfsssp`).
    pub layers: Option<PathLayers>,
    /// The engines tried before it, in order, with their reasons.
    pub declined: Vec<Declined>,
}

/// Why the chain produced nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChainError {
    /// A name that is not in the registry ([`crate::KNOWN_NAMES`]).
    #[error("unknown routing engine {name:?} (known: {known})")]
    UnknownEngine {
        /// The name given.
        name: String,
        /// The registry's names, comma-separated.
        known: String,
    },
    /// No engine names at all.
    #[error("the routing engine list is empty")]
    Empty,
    /// Every engine declined or failed.
    #[error("every routing engine declined: {}", list(.0))]
    AllDeclined(Vec<Declined>),
}

fn list(d: &[Declined]) -> String {
    let v: Vec<String> = d.iter().map(ToString::to_string).collect();
    v.join("; ")
}

impl Chain {
    /// The default order: fat-tree, then up/down, then min-hop.
    pub const DEFAULT: &'static [&'static str] = &["ftree", "updn", "minhop"];

    /// A chain of registered engines, by name, in order.
    pub fn from_names<S: AsRef<str>>(names: &[S]) -> Result<Chain, ChainError> {
        Chain::from_names_with(names, &EngineOptions::default())
    }

    /// As [`Chain::from_names`], each engine built with `options`.
    pub fn from_names_with<S: AsRef<str>>(names: &[S], options: &EngineOptions) -> Result<Chain, ChainError> {
        if names.is_empty() {
            return Err(ChainError::Empty);
        }
        let mut engines = Vec::with_capacity(names.len());
        for name in names {
            let name = name.as_ref().trim();
            let Some(e) = engine_with(name, options).filter(|_| !name.contains(',')) else {
                return Err(ChainError::UnknownEngine { name: name.to_owned(), known: crate::KNOWN_NAMES.join(", ") });
            };
            engines.push(e);
        }
        Ok(Chain { engines })
    }

    /// A chain of the given engines, in order.
    pub fn new(engines: Vec<Box<dyn Engine>>) -> Chain {
        Chain { engines }
    }

    /// The engines' names, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.engines.iter().map(|e| e.name()).collect()
    }

    /// Tries each engine in order; the first that routes wins.
    pub fn run(&self, view: &FabricView) -> Result<ChainOutcome, ChainError> {
        if self.engines.is_empty() {
            return Err(ChainError::Empty);
        }
        let mut declined = Vec::new();
        for e in &self.engines {
            match e.route_layered(view) {
                Ok((routes, layers)) => return Ok(ChainOutcome { engine: e.name(), routes, layers, declined }),
                Err(error) => declined.push(Declined { engine: e.name(), error }),
            }
        }
        Err(ChainError::AllDeclined(declined))
    }
}

impl Engine for Chain {
    fn name(&self) -> &'static str {
        "chain"
    }

    fn route_layered(&self, view: &FabricView) -> Result<(Routes, Option<PathLayers>), RoutingError> {
        self.run(view)
            .map(|o| (o.routes, o.layers))
            .map_err(|e| RoutingError::Declined { engine: "chain", reason: e.to_string() })
    }

    /// [`Chain::run`] without the record of refusals (use `run` to log them).
    fn route(&self, view: &FabricView) -> Result<Routes, RoutingError> {
        self.run(view).map(|o| o.routes).map_err(|e| RoutingError::Declined { engine: "chain", reason: e.to_string() })
    }
}

#[cfg(test)]
mod tests {
    use ibsm_mad::{Guid, Lid, PortNum};

    use super::*;
    use crate::{CaPortView, CaView, Neighbor, NodeId, SwitchView, engine_by_name};

    /// A triangle of switches, one CA each: not a fat tree (leaves linked to leaves).
    fn triangle() -> FabricView {
        let nb = |node, port| Some(Neighbor { node, port: PortNum(port) });
        let switches = (0..3)
            .map(|i| SwitchView {
                guid: Guid(0x10 + i as u64),
                lid: Lid(1 + i as u16),
                ports: vec![
                    None,
                    nb(NodeId::Switch((i + 1) % 3), 2),
                    nb(NodeId::Switch((i + 2) % 3), 1),
                    nb(NodeId::Ca(i), 1),
                ],
            })
            .collect();
        let cas = (0..3)
            .map(|i| CaView {
                guid: Guid(0x20 + i as u64),
                ports: vec![CaPortView { num: PortNum(1), lid: Lid(4 + i as u16), neighbor: nb(NodeId::Switch(i), 3) }],
            })
            .collect();
        FabricView { switches, cas, lmc: 0 }
    }

    #[test]
    fn falls_through_to_the_next_engine_and_says_why() {
        let chain = Chain::from_names(Chain::DEFAULT).unwrap();
        assert_eq!(chain.names(), vec!["ftree", "updn", "minhop"]);
        let v = triangle();
        let out = chain.run(&v).unwrap();
        assert_eq!(out.engine, "updn");
        assert_eq!(out.declined.len(), 1);
        assert_eq!(out.declined[0].engine, "ftree");
        let why = out.declined[0].to_string();
        assert!(why.contains("not a fat tree") && why.contains("level 0"), "{why}");
        assert_eq!(out.routes, engine_by_name("updn").unwrap().route(&v).unwrap());
        assert_eq!(chain.route(&v).unwrap(), out.routes);
    }

    #[test]
    fn every_refusal_is_kept() {
        let mut v = triangle();
        v.cas[1].ports[0].lid = Lid(4); // duplicate LID: every engine refuses
        let chain = Chain::from_names(&["ftree", "minhop"]).unwrap();
        let Err(ChainError::AllDeclined(d)) = chain.run(&v) else { panic!("routed a broken view") };
        assert_eq!(d.iter().map(|d| d.engine).collect::<Vec<_>>(), vec!["ftree", "minhop"]);
        assert!(matches!(d[1].error, RoutingError::DuplicateLid { .. }));
        assert!(chain.route(&v).is_err());
    }

    #[test]
    fn bad_lists_are_rejected() {
        assert_eq!(Chain::from_names::<&str>(&[]).unwrap_err(), ChainError::Empty);
        let e = Chain::from_names(&["ftree", "lash"]).unwrap_err();
        assert!(e.to_string().contains("\"lash\""), "{e}");
        assert_eq!(Chain::new(Vec::new()).run(&triangle()), Err(ChainError::Empty));
    }
}
