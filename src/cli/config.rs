//! `ibsm config check`, `config show` and `config import-opensm`: the configuration file
//! checked, shown with where each value came from, or imported from OpenSM's.

use std::process::ExitCode;

use ibsm::daemon::config::ConfigFile;

/// `ibsm config check FILE`.
pub(super) fn config_check(file: &std::path::Path) -> ExitCode {
    match ConfigFile::load_layered(Some(file)) {
        Ok(_) => {
            println!("{}: valid", file.display());
            ExitCode::SUCCESS
        }
        Err(errors) => {
            for e in &errors {
                println!("{e}");
            }
            ExitCode::FAILURE
        }
    }
}

/// `ibsm config import-opensm FILE`: the TOML on stdout, exit 0; 2 when the file cannot be
/// read.
pub(super) fn import_opensm(file: &std::path::Path) -> ExitCode {
    match ibsm_topology::file::read_bytes(file, ibsm::daemon::config::CONFIG_LIMIT) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let imported = ibsm::opensm::config_import::import(&text);
            print!("{}", ibsm::opensm::config_import::to_toml(&imported, &file.display().to_string()));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ibsm config import-opensm: {}: {e}", file.display());
            ExitCode::from(2)
        }
    }
}

/// `ibsm config show [--config FILE]`.
pub(super) fn config_show(file: Option<&std::path::Path>) -> ExitCode {
    match ConfigFile::load_layered(file) {
        Ok((cfg, sources)) => {
            for ((key, value), (_, source)) in cfg.shown_values().into_iter().zip(sources) {
                match value {
                    Some(v) => println!("{key} = {v}  # {}", source.name()),
                    None => println!("# {key}: unset  # {}", source.name()),
                }
            }
            ExitCode::SUCCESS
        }
        Err(errors) => {
            for e in &errors {
                eprintln!("ibsm config show: {e}");
            }
            ExitCode::from(2)
        }
    }
}
