//! The `ibsm` binary: parses the command line and hands over to [`cli::run`].

mod cli;

fn main() -> std::process::ExitCode {
    cli::run()
}
