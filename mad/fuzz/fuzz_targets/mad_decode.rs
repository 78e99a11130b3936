//! Fuzz target: `ibsm_mad::decode::decode` on arbitrary bytes must never panic, and the repr
//! round trips hold. The checks are in `bodies/mad_decode.rs`, which the stable form
//! (`mad/tests/fuzz_seeded.rs`, run by `cargo test`) calls too.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../bodies/mad_decode.rs"]
mod body;

fuzz_target!(|data: &[u8]| body::check(data));
