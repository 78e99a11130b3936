//! Fuzz target: the SA's request decoder and dispatcher (`ibsm::sa::serve`) on arbitrary bytes,
//! against the snapshot of a swept fabric. It must never panic, and its answers must keep the
//! wire rules. The checks are in `bodies/sa_serve.rs`, which the stable form
//! (`tests/fuzz_seeded_sa.rs`, run by `cargo test`) calls too.

#![no_main]

use ibsm::sa::SaState;
use ibsm_mad::Lid;
use libfuzzer_sys::fuzz_target;

#[path = "../bodies/sa_serve.rs"]
mod body;

fuzz_target!(|data: &[u8]| {
    // A fresh registry for each input, so that a crash reproduces from its input alone.
    body::check(&mut SaState::default(), data, Lid(2));
});
