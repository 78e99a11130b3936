//! `ibsm-sim`: an in-process simulated InfiniBand fabric.
//!
//! Owns: the simulated fabric ([`fabric`]: switches and CAs that answer MAD bytes from their own
//! state, as hardware does), powered on from a fabric description of the `ibsm-topology` crate,
//! re-exported here as [`topology`] (with its seeded generator as [`rng`]) for the simulator's
//! users. Depends on `ibsm-mad` and `ibsm-topology` only, never on SM internals. Time is virtual
//! and all randomness comes from a seed, so every run is reproducible.

pub mod fabric;

pub use ibsm_topology as topology;
pub use ibsm_topology::rng;
