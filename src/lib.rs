//! `ibsm`: an InfiniBand subnet manager.
//!
//! This library holds the parts of the root package that the `ibsm` binary (its command line
//! lives in `src/cli/`) and the integration tests share. The tree, from the bottom up:
//!
//! - [`core`]: the sans-IO subnet manager. It is driven by `handle_*` calls and drained with
//!   `poll_*` calls and never touches a device, a file or the clock.
//! - [`fabric_view`]: the one builder of the routing input, below the core and the commands:
//!   the core and the offline planner in [`routes`] both describe a fabric to it. Fabric
//!   descriptions (`.net` files, generators) come from the `ibsm-topology` crate.
//! - [`sa`]: Subnet Administration answered from an immutable snapshot of the last sweep,
//!   beside the fabric view, below the core, which builds the snapshot and decides when the SA
//!   may answer.
//! - [`sync`]: the state a master replicates to its standbys, and its wire format.
//! - [`routes`]: what the SM would program or holds, offline and live, in operators' formats.
//! - [`opensm`]: OpenSM's formats: `opensm.conf` imported, `opensm-lfts.dump` read back.
//! - [`transport`]: what carries the core's MADs: umad (a real or ibsim port) and the
//!   in-process simulated fabric.
//! - [`daemon`]: the running SM around the core, for operators: configuration and start-up,
//!   the state directory, signals, systemd's notify socket, JSON logs, the control socket,
//!   metrics and their HTTP endpoint, and the wall-clock loop on umad.
//! - [`lab`]: the simulator's tools, `ibsm sim play` (a scenario of faults) and `ibsm sim soak`
//!   (random faults for hours, checking invariants).

pub mod core;
pub mod daemon;
pub mod fabric_view;
pub mod lab;
pub mod opensm;
pub mod routes;
pub mod sa;
pub mod siphash;
pub mod sync;
pub mod transport;
