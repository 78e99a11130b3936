//! Transports: what carries the SM core's MADs to a fabric and back. Each one owns its clock
//! and its I/O; the core never sees either.
//!
//! - [`sim`]: the in-process simulated fabric of `ibsm-sim`, in virtual time.

pub mod sim;
