//! The crate's errors: [`ParseError`] (a qos-policy.conf line and why it was refused) and
//! [`OptionError`] (a simple QoS option value and why it was refused).
//!
//! Messages say what was expected and what was found; the caller adds the file name.

/// A qos-policy.conf that cannot be used: the 1-based line and the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{line}: {reason}")]
pub struct ParseError {
    /// 1-based line (the last line + 1 for a section never closed).
    pub line: u32,
    /// What was expected and what was found.
    pub reason: String,
}

impl ParseError {
    pub(crate) fn new(line: u32, reason: impl Into<String>) -> Self {
        Self { line, reason: reason.into() }
    }
}

/// A simple QoS option (`qos_ca_sl2vl` and friends, or their TOML keys) that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{option}: {reason}")]
pub struct OptionError {
    /// The option, as the operator wrote its name.
    pub option: String,
    /// What was expected and what was found.
    pub reason: String,
}
