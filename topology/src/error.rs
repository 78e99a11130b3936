//! The `.net` parser's error type. Every variant says where (`file:line`), what was expected and
//! what was found; `Display` starts with `file:line: ` so messages read like compiler errors.
//! Text of a line is quoted only from a file that has shown a `.net` line before it
//! ([`TopoError::NotNet`] otherwise), so an `include` of a file that is not `.net` text does not
//! print its contents.

use core::fmt;

use ibsm_mad::Guid;

/// A place in a `.net` file: its origin (path or name given to the parser) and 1-based line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pos {
    /// File name or origin string.
    pub origin: String,
    /// 1-based line number.
    pub line: usize,
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.origin, self.line)
    }
}

/// A port named the way `.net` files name it: `"node"[port]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Node id.
    pub node: String,
    /// Port number.
    pub port: u8,
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{}\"[{}]", self.node, self.port)
    }
}

/// Two port lines that disagree about a cable (boxed in [`TopoError::LinkConflict`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{at}: {port} is cabled to {peer} here, but {other} is cabled to {other_peer} at {other_at}")]
pub struct LinkConflict {
    /// Where.
    pub at: Pos,
    /// The port of this line.
    pub port: Endpoint,
    /// Its peer according to this line.
    pub peer: Endpoint,
    /// The port of the earlier line.
    pub other: Endpoint,
    /// Its peer according to the earlier line.
    pub other_peer: Endpoint,
    /// Where the earlier line is.
    pub other_at: Pos,
}

/// Why a `.net` file could not be turned into a [`Topology`](super::Topology).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopoError {
    /// The top-level file could not be read.
    #[error("{path}: cannot read: {reason}")]
    Read {
        /// Path as given.
        path: String,
        /// OS error text.
        reason: String,
    },
    /// A line that is none of the known forms.
    #[error("{at}: unrecognised line {text:?}")]
    UnknownLine {
        /// Where.
        at: Pos,
        /// The line (shortened).
        text: String,
    },
    /// A bad line in a file that holds no `.net` line before it: the file may not be `.net`
    /// text at all (`include /etc/shadow`), so the line is not quoted.
    #[error("{at}: not a .net line, and no .net line before it in this file (its text is not quoted)")]
    NotNet {
        /// Where.
        at: Pos,
    },
    /// A known line form with bad syntax.
    #[error("{at}: expected {expected}, found {found:?}")]
    Syntax {
        /// Where.
        at: Pos,
        /// What the parser wanted.
        expected: &'static str,
        /// What it saw (rest of the line, shortened).
        found: String,
    },
    /// A number that does not parse or does not fit.
    #[error("{at}: invalid {what} {text:?}")]
    BadNumber {
        /// Where.
        at: Pos,
        /// Which value (`"port count"`, `"vendid"`, ...).
        what: &'static str,
        /// The text.
        text: String,
    },
    /// A port line before any node header.
    #[error("{at}: port line before any node header")]
    PortBeforeNode {
        /// Where.
        at: Pos,
    },
    /// A port number outside `1..=num_ports` of its node.
    #[error("{at}: port {port} out of range for \"{node}\" ({num_ports} ports)")]
    PortOutOfRange {
        /// Where.
        at: Pos,
        /// Node id.
        node: String,
        /// The port number found.
        port: u64,
        /// The node's port count.
        num_ports: u8,
    },
    /// The same local port listed twice.
    #[error("{at}: port {port} of \"{node}\" already listed at {first}")]
    DuplicatePort {
        /// Where.
        at: Pos,
        /// Node id.
        node: String,
        /// Port.
        port: u8,
        /// The first listing.
        first: Pos,
    },
    /// Two nodes with the same id.
    #[error("{at}: node \"{name}\" already defined at {first}")]
    DuplicateName {
        /// Where.
        at: Pos,
        /// Node id.
        name: String,
        /// The first definition.
        first: Pos,
    },
    /// Two nodes with the same `NodeGUID`.
    #[error("{at}: NodeGUID {guid} of \"{name}\" is already used by \"{other}\"")]
    DuplicateGuid {
        /// Where.
        at: Pos,
        /// The GUID.
        guid: Guid,
        /// The new node.
        name: String,
        /// The node that has it already.
        other: String,
    },
    /// A node id that is empty or holds a character ibsim reserves.
    #[error("{at}: bad node id \"{name}\": must be non-empty, without '#' or '@'")]
    BadName {
        /// Where.
        at: Pos,
        /// The id.
        name: String,
    },
    /// A link to a node id that no header defines.
    #[error("{at}: link to unknown node \"{name}\"")]
    UnknownNode {
        /// Where.
        at: Pos,
        /// The id.
        name: String,
    },
    /// A port cabled to itself.
    #[error("{at}: {port} is cabled to itself")]
    SelfLink {
        /// Where.
        at: Pos,
        /// The port.
        port: Endpoint,
    },
    /// Two ports of one node cabled together (a loopback cable).
    #[error("{at}: {port} is cabled to {peer} of the same node (a loopback cable)")]
    Loopback {
        /// Where.
        at: Pos,
        /// The port of this line.
        port: Endpoint,
        /// The other port.
        peer: Endpoint,
    },
    /// Two port lines disagree about a cable.
    #[error("{0}")]
    LinkConflict(Box<LinkConflict>),
    /// A `w=`/`s=`/`e=` option with a bad value, or an unknown option.
    #[error("{at}: invalid link option {option:?}: {reason}")]
    BadOption {
        /// Where.
        at: Pos,
        /// The option text.
        option: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// The two ends of a cable allow no common width or speed.
    #[error("{at}: {port} and {peer} have no common link {what} (masks {mine:#x} and {theirs:#x})")]
    AttrConflict {
        /// Where.
        at: Pos,
        /// This end.
        port: Endpoint,
        /// The other end.
        peer: Endpoint,
        /// `"width"`, `"speed"` or `"extended speed"`.
        what: &'static str,
        /// This end's enabled mask.
        mine: u8,
        /// The other end's enabled mask.
        theirs: u8,
    },
    /// A port GUID given in two places with two values.
    #[error("{at}: port GUID of {port} given as {given} here but {other} elsewhere")]
    GuidMismatch {
        /// Where.
        at: Pos,
        /// The port.
        port: Endpoint,
        /// The GUID on this line.
        given: Guid,
        /// The GUID known already.
        other: Guid,
    },
    /// An `include` that could not be read.
    #[error("{at}: cannot include \"{file}\": {reason}")]
    Include {
        /// Where.
        at: Pos,
        /// File name as written.
        file: String,
        /// Why.
        reason: String,
    },
    /// An `include` of a file that is already being parsed.
    #[error("{at}: include cycle: \"{file}\" is already being parsed")]
    IncludeCycle {
        /// Where.
        at: Pos,
        /// File name as written.
        file: String,
    },
    /// Includes nested too deep.
    #[error("{at}: includes nested deeper than {max}")]
    IncludeDepth {
        /// Where.
        at: Pos,
        /// The limit.
        max: usize,
    },
    /// An ibsim feature this parser does not implement.
    #[error("{at}: {what} is not supported")]
    Unsupported {
        /// Where.
        at: Pos,
        /// The feature.
        what: &'static str,
    },
}

impl TopoError {
    /// The position of the error, when it has one (all but [`TopoError::Read`]).
    pub fn pos(&self) -> Option<&Pos> {
        match self {
            TopoError::Read { .. } => None,
            TopoError::UnknownLine { at, .. }
            | TopoError::NotNet { at }
            | TopoError::Syntax { at, .. }
            | TopoError::BadNumber { at, .. }
            | TopoError::PortBeforeNode { at }
            | TopoError::PortOutOfRange { at, .. }
            | TopoError::DuplicatePort { at, .. }
            | TopoError::DuplicateName { at, .. }
            | TopoError::DuplicateGuid { at, .. }
            | TopoError::BadName { at, .. }
            | TopoError::UnknownNode { at, .. }
            | TopoError::SelfLink { at, .. }
            | TopoError::Loopback { at, .. }
            | TopoError::BadOption { at, .. }
            | TopoError::AttrConflict { at, .. }
            | TopoError::GuidMismatch { at, .. }
            | TopoError::Include { at, .. }
            | TopoError::IncludeCycle { at, .. }
            | TopoError::IncludeDepth { at, .. }
            | TopoError::Unsupported { at, .. } => Some(at),
            TopoError::LinkConflict(c) => Some(&c.at),
        }
    }
}
