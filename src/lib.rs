//! `ibsm`: an InfiniBand subnet manager.
//!
//! This library holds the parts of the root package that the `ibsm` binary and the integration
//! tests share. [`core`] is the sans-IO subnet manager: it is driven by `handle_*` calls and
//! drained with `poll_*` calls and never touches a device, a file or the clock.
//!
//! [`fabric_view`] is the one builder of the routing input, below the core and the commands: the
//! core and the offline planner in [`routes`] both describe a fabric to it. Fabric descriptions
//! (`.net` files, generators) come from the `ibsm-topology` crate, not from the simulator.
//!
//! [`sa`] answers Subnet Administration queries from an immutable snapshot of the last sweep;
//! it sits beside the fabric view, below the core, which builds the snapshot and decides when
//! the SA may answer.
//!
//! Around the core, for operators: [`config`] (the file, the environment, the checks),
//! [`state`] (the state directory), [`control`] (the local control socket), [`metrics`] and
//! [`metrics_http`] (Prometheus), [`surface`] (the limits, connection cap and listener thread
//! the control socket and the metrics endpoint share), [`logfmt`] (JSON log lines), [`policy`]
//! (partition policy files), [`signals`] (SIGHUP, SIGUSR1, SIGUSR2 caught from the start of
//! `ibsm run`), and [`transport`] (umad, the simulator, systemd's notify socket).

pub mod config;
pub mod control;
pub mod core;
pub mod fabric_view;
pub mod import_opensm;
pub mod logfmt;
pub mod metrics;
pub mod metrics_http;
pub mod play;
pub mod policy;
pub mod routes;
pub mod sa;
pub mod signals;
pub mod siphash;
pub mod soak;
pub mod startup;
pub mod state;
pub mod surface;
pub mod sync;
pub mod transport;
