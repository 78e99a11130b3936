//! The daemon: `ibsm run`, the running SM around the sans-IO core, and what operators reach it
//! by. Nothing here decides what the SM does to the fabric; that is the core's.
//!
//! Start-up and configuration, bottom up:
//! - [`config`]: the configuration file (TOML) and its layering under the command-line flags.
//! - [`partition_policy`]: partition policy files (OpenSM's `partitions.conf` or TOML) by path.
//! - [`state`]: the state directory (persisted tables, the M_Key secret), written atomically.
//! - [`startup`]: the running configuration built from its sources, and rebuilt on a reload.
//! - [`signals`]: SIGHUP, SIGUSR1 and SIGUSR2, caught from the first instant.
//! - [`notify`]: systemd's notify socket (`READY=1`, `WATCHDOG=1`).
//! - [`logfmt`]: JSON log lines (`--log-format json`).
//!
//! Running: [`umad_loop`], the wall-clock loop that runs the core on a umad port, with the
//! signals, the reloads, the state files and the side queries ([`side_queries`]) between two
//! MADs; [`sim_loop`], the simulated SM (`ibsm run --sim`) kept alive once its fabric is up.
//!
//! What operators reach it by:
//! - [`control`]: the local control socket (`ibsm status`, `ibsm reload`, live routes, the
//!   controls `ibsm sweep`, `reroute`, `log-level`, `lid`, `guid`).
//! - [`log_level`]: the running log filter, changed by `ibsm log-level`.
//! - [`node_names`]: the node name map in force, for the log lines that name a node.
//! - [`metrics`]: the Prometheus text of the SM's figures (the per-port counters in
//!   `metrics_ports`, both gathered in a `metrics_scrape`); [`metrics_http`] serves it, and
//!   at `/` the web page of [`page`] (state, problems, the fabric coloured by errors).
//! - [`surface`]: the limits, connection cap and listener thread those two share.

pub mod config;
pub mod control;
pub mod log_level;
pub mod logfmt;
pub mod metrics;
pub mod metrics_http;
mod metrics_ports;
mod metrics_scrape;
pub mod node_names;
pub mod notify;
pub mod page;
pub mod partition_policy;
pub mod side_queries;
pub mod signals;
pub mod sim_loop;
pub mod startup;
pub mod state;
pub mod surface;
pub mod umad_loop;
