//! Shared helpers for the end-to-end tests in `tests/`.
//!
//! Each integration test that needs them declares `mod support;` and uses the submodules it
//! wants. Owns only test scaffolding: starting external programs (ibsim, infiniband-diags) in
//! private temporary directories and cleaning them up. It must not hold SM logic or wire-format
//! knowledge; those live in the crates under test.

// Every test binary compiles this module on its own and uses a different subset of it.
#![allow(dead_code)]

pub mod by_hand;
pub mod cmd;
pub mod daemon;
pub mod fabrics;
pub mod ibsim;
pub mod opensm;
pub mod order;
pub mod sa;
pub mod sms;
