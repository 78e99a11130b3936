//! The `ibsm` binary: parses the command line and hands over to [`cli::run`].

mod cli;
mod cli_log;
mod cli_man;
mod cli_partitions;
mod cli_play;
mod cli_routes;
mod cli_topology;

fn main() -> std::process::ExitCode {
    cli::run()
}
