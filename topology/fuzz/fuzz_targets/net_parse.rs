//! Fuzz target: `Topology::parse_str` on arbitrary text must never panic, and whatever parses
//! must write and parse back to the same topology. The checks are in `bodies/net_parse.rs`,
//! which the stable form (`topology/tests/fuzz_seeded.rs`, run by `cargo test`) calls too.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../bodies/net_parse.rs"]
mod body;

fuzz_target!(|data: &[u8]| body::check(data));
