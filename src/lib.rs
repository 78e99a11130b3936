//! `ibsm`: an InfiniBand subnet manager.
//!
//! This library holds the parts of the root package that the `ibsm` binary and the integration
//! tests share. [`core`] is the sans-IO subnet manager: it is driven by `handle_*` calls and
//! drained with `poll_*` calls and never touches a device, a file or the clock.

pub mod config;
pub mod control;
pub mod core;
pub mod routes;
pub mod state;
pub mod transport;
