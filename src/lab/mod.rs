//! The simulator's tools: an SM run against `ibsm-sim` in virtual time under scripted or
//! random faults, for people and for tests.
//!
//! - [`play`]: `ibsm sim play`, a scenario file of timed faults replayed against the SM, with
//!   each step's effect checked.
//! - [`soak`]: `ibsm sim soak`, random faults from a seed for a long stretch of virtual time,
//!   with the invariants checked after every settle.

pub mod play;
pub mod soak;
