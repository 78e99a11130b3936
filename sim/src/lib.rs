//! `ibsm-sim`: an in-process simulated InfiniBand fabric.
//!
//! Owns: the fabric description ([`topology`]: `.net` parsing and writing, generators) and the
//! simulated fabric ([`fabric`]: switches and CAs that answer MAD bytes from their own state,
//! as hardware does). Depends on `ibsm-mad` only, never on SM internals. Time is virtual and all
//! randomness comes from a seed, so every run is reproducible.

pub mod fabric;
pub mod rng;
pub mod topology;
