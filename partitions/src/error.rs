//! Error and warning types of the crate: [`ParseError`] (partitions.conf, `line:col: reason`),
//! [`ParseErrors`] (all of a file's errors), [`TomlError`], [`RenderError`], [`ResolveError`],
//! and [`PolicyWarning`] (what a valid file says that may surprise, e.g. a repeated P_Key).
//!
//! Messages say what was expected and what was found; the caller adds the file name.

use core::fmt;

use crate::model::ValueError;

/// One partitions.conf error at a 1-based line and column (columns count characters).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{line}:{col}: {kind}")]
pub struct ParseError {
    /// 1-based line.
    pub line: u32,
    /// 1-based column, in characters.
    pub col: u32,
    /// What went wrong.
    pub kind: ParseErrorKind,
}

/// What went wrong in a partitions.conf statement.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseErrorKind {
    /// The definition line has no `:` before the end of the line.
    #[error("expected ':' after the partition definition, found {found} (the definition must be on one line)")]
    ExpectedColon {
        /// What was there instead.
        found: String,
    },
    /// The statement starting here never reaches its `;`.
    #[error("partition definition is not closed with ';' before the end of the file")]
    Unterminated,
    /// A P_Key that is not a number in `1..=0xffff` (bit 15 is ignored) or is zero.
    #[error("bad P_Key {text:?}: {reason}")]
    BadPkey {
        /// The text written.
        text: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// A number written with a leading zero and no `0x`: OpenSM reads it as octal, which is
    /// almost never what was meant, so it is refused.
    #[error("ambiguous number {0:?}: a leading 0 means octal to OpenSM; write 0x... for hex or drop the 0")]
    Octal(String),
    /// Text where a number was expected.
    #[error("expected a number (decimal or 0x hex), found {0:?}")]
    NotANumber(String),
    /// A port specifier that is neither a keyword nor a non-zero GUID.
    #[error("bad port {text:?}: expected a port GUID or ALL, ALL_CAS, ALL_SWITCHES, ALL_ROUTERS, SELF")]
    BadPort {
        /// The text written.
        text: String,
    },
    /// A membership other than a prefix of full, limited or both.
    #[error("unknown membership {0:?} (expected full, limited or both)")]
    BadMembership(String),
    /// An unknown flag in the definition or on an `mgid=` line.
    #[error("unknown flag {name:?} (expected {expected})")]
    UnknownFlag {
        /// The flag written.
        name: String,
        /// The flags accepted there.
        expected: &'static str,
    },
    /// A flag that needs `=value` was written without one.
    #[error("flag {0} needs a value")]
    MissingValue(String),
    /// A flag that takes no value was given one.
    #[error("flag {0} takes no value")]
    UnexpectedValue(String),
    /// A flag value out of range.
    #[error(transparent)]
    Value(#[from] ValueError),
    /// An `mgid=` that is not IPv6 text.
    #[error("bad mgid {0:?}: expected an IPv6-style GID such as ff12:401b::1")]
    BadGid(String),
    /// An `mgid=` that is not a multicast GID.
    #[error("mgid {0} is not multicast (the first byte must be 0xff)")]
    NotMulticast(String),
    /// More partitions without a P_Key than the P_Key space has free bases.
    #[error(
        "no free P_Key left to generate one for partition {name:?}: the file names {explicit} P_Keys and asks for {generated} more, but 1..=0x7ffe holds 32766"
    )]
    PkeysExhausted {
        /// The first partition that does not fit.
        name: String,
        /// Distinct explicit P_Keys other than the default one.
        explicit: usize,
        /// Partitions without a P_Key.
        generated: usize,
    },
    /// Anything else out of place.
    #[error("unexpected {found} {context}")]
    Unexpected {
        /// What was found, quoted.
        found: String,
        /// Where, e.g. "after a port".
        context: &'static str,
    },
}

/// Every error of a partitions.conf text, in file order; Display prints one per line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseErrors(pub Vec<ParseError>);

impl fmt::Display for ParseErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ParseErrors {}

/// Where a definition is in a policy file: a partitions.conf line, or a TOML `[[partition]]`
/// table (0-based, counted as written).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// 1-based line of partitions.conf.
    Line(u32),
    /// 0-based index of a TOML `[[partition]]` table.
    Table(usize),
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::Line(l) => write!(f, "line {l}"),
            Place::Table(i) => write!(f, "[[partition]] {i}"),
        }
    }
}

/// Something a policy file says that is honoured, but maybe not as its author meant; the file
/// is still valid. The readers return these beside the policy; the caller shows or logs them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyWarning {
    /// A definition repeats the P_Key of an earlier one (or takes the default partition's,
    /// `0x7fff`, under another name): its members, groups and flags are merged into the first,
    /// whose name is kept, as OpenSM does.
    DuplicatePkey {
        /// The 15-bit base.
        pkey: u16,
        /// The name kept (the first definition's, or `Default`).
        kept: String,
        /// Where the kept definition is (`None`: the implicit default partition).
        kept_at: Option<Place>,
        /// The repeating definition's name.
        merged: String,
        /// Where it is.
        merged_at: Place,
    },
}

impl fmt::Display for PolicyWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PolicyWarning::DuplicatePkey { pkey, kept, kept_at: Some(at), merged, merged_at } => write!(
                f,
                "{merged_at}: partition {merged:?} repeats P_Key {pkey:#06x} of partition {kept:?} ({at}): merged into {kept:?}, whose name is kept"
            ),
            PolicyWarning::DuplicatePkey { pkey, kept, kept_at: None, merged, merged_at } => write!(
                f,
                "{merged_at}: partition {merged:?} has the default partition's P_Key {pkey:#06x}: merged into {kept:?}, whose name is kept"
            ),
        }
    }
}

/// A policy that partitions.conf syntax cannot express.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    /// A name with `= , : ; #`, a line break, surrounding blanks, or (without a P_Key) a leading digit.
    #[error("partition name {0:?} cannot be written in partitions.conf")]
    BadName(String),
    /// A P_Key base outside `1..=0x7fff`.
    #[error("partition {name:?}: P_Key base {pkey:#06x} is outside 1..=0x7fff")]
    BadPkey {
        /// The partition.
        name: String,
        /// The base.
        pkey: u16,
    },
}

/// Errors of the TOML form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TomlError {
    /// TOML syntax or schema error (unknown field, wrong type), as the toml crate reports it.
    #[error("{0}")]
    Syntax(String),
    /// A value the schema accepts but the policy does not.
    #[error("partition {index} ({name:?}): {reason}")]
    Invalid {
        /// 0-based index of the `[[partition]]` table.
        index: usize,
        /// Its name.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// Serialisation failed.
    #[error("cannot write TOML: {0}")]
    Write(String),
}

/// Errors that stop resolution.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// More partitions without a P_Key than free P_Key bases (`1..=0x7ffe` less those named
    /// explicitly).
    #[error(
        "no free P_Key left to generate one for partition {name:?}: every base of 1..=0x7ffe is taken by an explicit P_Key or an earlier generated one"
    )]
    PkeysExhausted {
        /// The first partition that does not fit.
        name: String,
        /// Its index in the policy's partitions.
        index: usize,
    },
    /// A port GUID appears twice in the fabric list.
    #[error("port {0} is listed twice in the fabric")]
    DuplicatePort(ibsm_mad::Guid),
    /// A partition with an explicit P_Key base of 0 or above 0x7fff.
    #[error("partition {name:?}: P_Key base {pkey:#06x} is outside 1..=0x7fff")]
    BadPkey {
        /// The partition.
        name: String,
        /// The base.
        pkey: u16,
    },
}
