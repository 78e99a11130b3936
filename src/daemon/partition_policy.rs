//! Partition policy files: reading OpenSM's `partitions.conf` grammar or ibsm's TOML form from a
//! path, the form chosen by extension (`.toml`, `.conf`), else by content (a `[[partition]]`
//! table means TOML), every error as `FILE:LINE:COL: reason` (all errors of a file at once), and
//! its warnings (a repeated P_Key merged into the first definition) as lines naming the file.
//! Parsing is the `ibsm-partitions` crate's; this module adds the file and the error text, for
//! `ibsm run --partitions`, a reload on SIGHUP, and `ibsm partitions`.

use std::path::Path;

use ibsm_partitions::{Policy, parse_partitions_conf_with_warnings, policy_from_toml_with_warnings};

/// The two forms of a policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Form {
    /// OpenSM's partitions.conf grammar.
    Conf,
    /// ibsm's TOML form.
    Toml,
}

/// Which form `path` holds: its extension, else its content (a `[[partition]]` table is TOML).
pub fn form_of(path: &Path, text: &str) -> Form {
    match path.extension().and_then(|e| e.to_str()) {
        Some("toml") => Form::Toml,
        Some("conf") => Form::Conf,
        _ if text.lines().any(|l| l.trim_start().starts_with("[[")) => Form::Toml,
        _ => Form::Conf,
    }
}

/// Reads and parses a policy file: the policy, its form, and its warnings as lines that name
/// the file (`FILE: line 3: partition "b" repeats P_Key 0x0010 of ...`, see
/// [`ibsm_partitions::PolicyWarning`]). The error names the file, and for partitions.conf the
/// line and column of every error.
pub fn load(path: &Path) -> Result<(Policy, Form, Vec<String>), String> {
    let text = ibsm_topology::file::read_text(path, crate::daemon::config::CONFIG_LIMIT)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let form = form_of(path, &text);
    let (policy, warnings) = match form {
        Form::Conf => parse_partitions_conf_with_warnings(&text)
            .map_err(|errs| errs.0.iter().map(|e| format!("{}:{e}", path.display())).collect::<Vec<_>>().join("\n"))?,
        Form::Toml => policy_from_toml_with_warnings(&text).map_err(|e| format!("{}: {e}", path.display()))?,
    };
    let warnings = warnings.iter().map(|w| format!("{}: {w}", path.display())).collect();
    Ok((policy, form, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_by_extension_then_content() {
        assert_eq!(form_of(Path::new("p.toml"), ""), Form::Toml);
        assert_eq!(form_of(Path::new("p.conf"), "[[partition]]"), Form::Conf);
        assert_eq!(form_of(Path::new("policy"), "[[partition]]\nname = \"x\""), Form::Toml);
        assert_eq!(form_of(Path::new("policy"), "Default=0x7fff : ALL=full ;"), Form::Conf);
    }
}
