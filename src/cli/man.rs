//! `ibsm man DIR`: the manual pages of `ibsm` and of each of its subcommands, generated from
//! the clap definitions (the same text as `--help`), as system daemons ship them.
//!
//! One section-1 page per command, named as `man` looks them up: `ibsm.1`, `ibsm-run.1`,
//! `ibsm-routes-dump.1`, and so on for every subcommand at every level. Writes into DIR
//! (created if missing), overwriting pages of the same name, and prints each page's path.
//! Owns nothing else: the text comes from the definitions in `cli.rs` and its `cli_*` modules.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Every command of `cmd` that gets a page: `cmd` itself, then its subcommands depth first
/// (hidden ones left out). `cmd` must be built, so that each has its `ibsm-...` display name.
fn pages(cmd: &clap::Command, out: &mut Vec<clap::Command>) {
    out.push(cmd.clone());
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        pages(sub, out);
    }
}

/// Renders one page and writes it into `dir`; returns its path.
fn write_page(cmd: clap::Command, dir: &Path) -> Result<PathBuf, String> {
    let man = clap_mangen::Man::new(cmd);
    let path = dir.join(man.get_filename());
    let mut text = Vec::new();
    man.render(&mut text).map_err(|e| format!("{}: {e}", path.display()))?;
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

/// Runs `ibsm man DIR` for the command line `cmd`: exit 0 when every page is written, 1 at
/// the first that cannot be.
pub fn run(cmd: clap::Command, dir: &Path) -> ExitCode {
    if let Err(e) = std::fs::create_dir_all(dir) {
        eprintln!("ibsm man: {}: {e}", dir.display());
        return ExitCode::FAILURE;
    }
    // `ibsm help` is clap's, not a command of ours: no page for it.
    let mut cmd = cmd.disable_help_subcommand(true);
    cmd.build();
    let mut all = Vec::new();
    pages(&cmd, &mut all);
    for page in all {
        match write_page(page, dir) {
            Ok(path) => println!("{}", path.display()),
            Err(e) => {
                eprintln!("ibsm man: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
