//! Fuzz target: `parse_partitions_conf` on arbitrary text must never panic, and whatever parses
//! must render and parse back to the same policy when it is representable. The checks are in
//! `bodies/partitions_conf.rs`, which the stable form (`partitions/tests/fuzz_seeded.rs`, run by
//! `cargo test`) calls too.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../bodies/partitions_conf.rs"]
mod body;

fuzz_target!(|data: &[u8]| body::check(data));
