//! The `ibsm` binary.
fn main() {}
