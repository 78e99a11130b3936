//! The OpenSM `partitions.conf` parser, built on nom.
//!
//! Grammar (in our words): a file is a sequence of statements `definition : properties ;`.
//! The definition, on one line, is `[name][=pkey][,flag[=value]]*`; a bare leading number is the
//! P_Key. Properties are port entries `port[=full|limited|both]` separated by `,` or line breaks,
//! and `mgid=<gid>[,flag=value]*` lines that end at the end of their line. `#` starts a comment
//! to the end of the line. Statements may span lines up to their `;`, and a line may hold
//! several statements.
//!
//! Semantics kept from OpenSM: a repeated P_Key merges into the first definition (first name
//! wins, see [`Partition::merge`]) with a [`PolicyWarning`] naming both, as OpenSM logs it (a
//! definition of `0x7fff` under another name merges into `Default`, with one too); a definition without a P_Key merges into an earlier one of the
//! same non-empty name; `Default` without a P_Key is the default partition `0x7fff`; bit 15 of a
//! written P_Key is ignored; `defmember=` sets the membership of this statement's ports written
//! without one; membership words may be abbreviated (`limi`); `NONE` is an empty port entry.
//!
//! Deliberate differences, each an OpenSM pitfall that silently misconfigured fabrics:
//! unknown flags and membership words are errors (OpenSM ignores them or assumes `limited`);
//! a number with a leading `0` and no `0x` is an error (OpenSM reads octal); `mtu=4096` and the
//! like are errors pointing at the IBA enum (`mtu=5` means 4096); keywords must be spelled out
//! (OpenSM also accepts prefixes such as `AL`); P_Key 0 is an error rather than "generate".
//!
//! Errors: every statement is parsed; the first error of a statement is recorded, the parser
//! skips past that statement's `;` and goes on, so one run reports every broken statement. A
//! broken statement contributes nothing to the policy. More partitions without a P_Key than the
//! P_Key space holds is an error at the first that does not fit. Parsing never panics and is
//! linear in the size of the text.

use nom::bytes::complete::{take_till, take_while, take_while1};
use nom::character::complete::char;
use nom::combinator::recognize;
use nom::sequence::preceded;
use nom::{IResult, Parser};

use crate::error::{ParseError, ParseErrorKind, ParseErrors, Place, PolicyWarning};
use crate::model::{
    DEFAULT_PARTITION_NAME, DEFAULT_PKEY_BASE, GroupFlag, McastFlags, McastGroup, Member, MemberSpec, Membership,
    Partition, Policy, is_multicast, parse_mgid, set_flag,
};
use ibsm_mad::Guid;

type Res<'a, T> = IResult<&'a str, T>;

/// Flags accepted in a definition, for error messages.
const HEADER_FLAGS: &str = "indx0, ipoib, defmember, rate, mtu, sl, scope, Q_Key, TClass, FlowLabel";
/// Flags accepted on an `mgid=` line, for error messages.
const GROUP_FLAGS: &str = "rate, mtu, sl, scope, Q_Key, TClass, FlowLabel";

/// Parses partitions.conf text into a [`Policy`], or returns every statement's first error.
/// The warnings of [`parse_partitions_conf_with_warnings`] are dropped.
pub fn parse_partitions_conf(text: &str) -> Result<Policy, ParseErrors> {
    parse_partitions_conf_with_warnings(text).map(|(p, _)| p)
}

/// Parses partitions.conf text into a [`Policy`] and the warnings for what it merged (a
/// repeated P_Key, see [`PolicyWarning::DuplicatePkey`]), or returns every statement's first
/// error. A file with more partitions without a P_Key than the P_Key space has room for is an
/// error at the first one that does not fit. Linear in the size of the file.
pub fn parse_partitions_conf_with_warnings(text: &str) -> Result<(Policy, Vec<PolicyWarning>), ParseErrors> {
    let cx = Cx { src: text };
    let mut book = Book::default();
    let mut errors = Vec::new();
    let mut rest = skip_space(text);
    while !rest.is_empty() {
        let at = book.position(text, rest);
        match cx.statement(rest) {
            Ok((r, part)) => {
                book.merge_into(part, at);
                rest = r;
            }
            Err((error, at)) => {
                errors.push(error);
                rest = at.find(';').map_or("", |k| &at[k + 1..]);
            }
        }
        rest = skip_space(rest);
    }
    if let Some(e) = book.exhausted() {
        errors.push(e);
        errors.sort_by_key(|e| (e.line, e.col));
    }
    if errors.is_empty() { Ok((book.policy, book.warnings)) } else { Err(ParseErrors(errors)) }
}

/// The policy being built, with indexes by P_Key and by name so that merging each statement
/// costs O(1), and where each partition was first defined.
#[derive(Default)]
struct Book {
    policy: Policy,
    warnings: Vec<PolicyWarning>,
    /// (line, column) of each partition's first definition, by index in the policy.
    at: Vec<(u32, u32)>,
    by_pkey: std::collections::HashMap<u16, usize>,
    by_name: std::collections::HashMap<String, usize>,
    /// The line count up to `counted` bytes of the text, for [`Book::position`].
    counted: usize,
    line: u32,
    line_start: usize,
}

impl Book {
    /// 1-based (line, column) of `rest`, a suffix of `text` further on than the last one asked.
    fn position(&mut self, text: &str, rest: &str) -> (u32, u32) {
        let offset = text.len().saturating_sub(rest.len());
        let chunk = text.get(self.counted..offset).unwrap_or("");
        for (i, b) in chunk.bytes().enumerate() {
            if b == b'\n' {
                self.line += 1;
                self.line_start = self.counted + i + 1;
            }
        }
        self.counted = offset.max(self.counted);
        let col = text.get(self.line_start..offset).map_or(0, |s| s.chars().count());
        (self.line + 1, u32::try_from(col + 1).unwrap_or(u32::MAX))
    }

    /// Adds a parsed statement, merging by P_Key or, without one, by name; a repeated P_Key is
    /// a warning naming both definitions.
    fn merge_into(&mut self, mut part: Partition, at: (u32, u32)) {
        if part.pkey.is_none() && part.name == DEFAULT_PARTITION_NAME && !self.by_name.contains_key(&part.name) {
            part.pkey = Some(DEFAULT_PKEY_BASE);
        }
        let target = match part.pkey {
            Some(k) => self.by_pkey.get(&k).copied(),
            None if !part.name.is_empty() => self.by_name.get(&part.name).copied(),
            None => None,
        };
        if let Some(k) = part.pkey {
            let first = target.and_then(|t| Some((self.policy.partitions.get(t)?, *self.at.get(t)?)));
            let warning = match first {
                _ if k == DEFAULT_PKEY_BASE => {
                    (part.name != DEFAULT_PARTITION_NAME).then(|| PolicyWarning::DuplicatePkey {
                        pkey: k,
                        kept: DEFAULT_PARTITION_NAME.to_owned(),
                        kept_at: None,
                        merged: part.name.clone(),
                        merged_at: Place::Line(at.0),
                    })
                }
                Some((p, (line, _))) => Some(PolicyWarning::DuplicatePkey {
                    pkey: k,
                    kept: p.name.clone(),
                    kept_at: Some(Place::Line(line)),
                    merged: part.name.clone(),
                    merged_at: Place::Line(at.0),
                }),
                None => None,
            };
            self.warnings.extend(warning);
        }
        if let Some(existing) = target.and_then(|t| self.policy.partitions.get_mut(t)) {
            existing.merge(part);
        } else {
            let i = self.policy.partitions.len();
            if let Some(k) = part.pkey {
                self.by_pkey.insert(k, i);
            }
            if !part.name.is_empty() {
                self.by_name.entry(part.name.clone()).or_insert(i);
            }
            self.policy.partitions.push(part);
            self.at.push(at);
        }
    }

    /// The error at the first partition without a P_Key for which none is left, if any.
    fn exhausted(&self) -> Option<ParseError> {
        let explicit = self.by_pkey.keys().filter(|&&k| k != DEFAULT_PKEY_BASE).count();
        let free = usize::from(DEFAULT_PKEY_BASE - 1).saturating_sub(explicit);
        let mut generated = self.policy.partitions.iter().enumerate().filter(|(_, p)| p.pkey.is_none());
        let (first, p) = generated.clone().nth(free)?;
        let (line, col) = self.at.get(first).copied().unwrap_or((0, 0));
        let kind =
            ParseErrorKind::PkeysExhausted { name: p.name.clone(), explicit, generated: generated.by_ref().count() };
        Some(ParseError { line, col, kind })
    }
}

/// A statement-level failure: the error and the input where it was found.
type Fail<'a> = (ParseError, &'a str);

/// The whole input, to turn a remaining suffix into a line and column.
struct Cx<'s> {
    src: &'s str,
}

impl Cx<'_> {
    fn err<'a>(&self, at: &'a str, kind: impl Into<ParseErrorKind>) -> Fail<'a> {
        let offset = self.src.len().saturating_sub(at.len());
        let before = self.src.get(..offset).unwrap_or("");
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |k| k + 1);
        let col = before.get(line_start..).map_or(0, |s| s.chars().count()) + 1;
        let error = ParseError {
            line: u32::try_from(line).unwrap_or(u32::MAX),
            col: u32::try_from(col).unwrap_or(u32::MAX),
            kind: kind.into(),
        };
        (error, at)
    }

    /// One statement, from its definition to its `;`.
    fn statement<'a>(&self, start: &'a str) -> Result<(&'a str, Partition), Fail<'a>> {
        let mut part = Partition::default();
        let (mut i, raw_name) = header_name(start).map_err(|_| self.err(start, unexpected(start, "here")))?;
        let name = raw_name.trim();
        let name_at = start.trim_start_matches([' ', '\t', '\r']);
        if let Ok((r, _)) = char::<_, ()>('=').parse(i) {
            let at = blanks(r);
            let (r, tok) = word(at).map_err(|_| self.err(at, ParseErrorKind::MissingValue("P_Key".into())))?;
            part.pkey = Some(pkey(tok).map_err(|k| self.err(at, k))?);
            name.clone_into(&mut part.name);
            i = r;
        } else if name.starts_with(|c: char| c.is_ascii_digit()) {
            part.pkey = Some(pkey(name).map_err(|k| self.err(name_at, k))?);
        } else {
            name.clone_into(&mut part.name);
        }
        i = blanks(i);
        while let Ok((r, _)) = char::<_, ()>(',').parse(i) {
            i = self.header_flag(blanks(r), &mut part)?;
            i = blanks(i);
        }
        let Ok((i, _)) = char::<_, ()>(':').parse(i) else {
            return Err(self.err(i, ParseErrorKind::ExpectedColon { found: describe(i) }));
        };
        self.properties(start, i, &mut part)
    }

    /// One `flag[=value]` of a definition; returns the input after it.
    fn header_flag<'a>(&self, i: &'a str, part: &mut Partition) -> Result<&'a str, Fail<'a>> {
        let (r, flag) = word(i).map_err(|_| self.err(i, unexpected(i, "where a flag was expected after ','")))?;
        let (r, value) = self.flag_value(r, flag)?;
        let lower = flag.to_ascii_lowercase();
        let no_value = |value: Option<(&'a str, &str)>| match value {
            Some((at, _)) => Err(self.err(at, ParseErrorKind::UnexpectedValue(flag.to_owned()))),
            None => Ok(()),
        };
        match lower.as_str() {
            "ipoib" => {
                no_value(value)?;
                part.ipoib = true;
            }
            "indx0" => {
                no_value(value)?;
                part.indx0 = true;
            }
            "defmember" => {
                let (at, v) = value.ok_or_else(|| self.err(r, ParseErrorKind::MissingValue(flag.to_owned())))?;
                part.defmember = membership(v).map_err(|k| self.err(at, k))?;
            }
            _ => {
                let Some(g) = GroupFlag::from_name(flag) else {
                    return Err(
                        self.err(i, ParseErrorKind::UnknownFlag { name: flag.to_owned(), expected: HEADER_FLAGS })
                    );
                };
                self.group_flag(r, g, flag, value, &mut part.flags)?;
            }
        }
        Ok(r)
    }

    /// `[= value]` after a flag name: the input after it and the value with its position.
    #[allow(clippy::type_complexity)]
    fn flag_value<'a>(&self, i: &'a str, flag: &str) -> Result<(&'a str, Option<(&'a str, &'a str)>), Fail<'a>> {
        let r = blanks(i);
        let Ok((r, _)) = char::<_, ()>('=').parse(r) else { return Ok((i, None)) };
        let r = blanks(r);
        let (after, v) = word(r).map_err(|_| self.err(r, ParseErrorKind::MissingValue(flag.to_owned())))?;
        Ok((after, Some((r, v))))
    }

    /// Checks and stores a multicast-group flag.
    fn group_flag<'a>(
        &self,
        end: &'a str,
        g: GroupFlag,
        flag: &str,
        value: Option<(&'a str, &str)>,
        flags: &mut McastFlags,
    ) -> Result<(), Fail<'a>> {
        let (at, v) = value.ok_or_else(|| self.err(end, ParseErrorKind::MissingValue(flag.to_owned())))?;
        let n = number(v).map_err(|k| self.err(at, k))?;
        set_flag(flags, g, n).map_err(|e| self.err(at, e))
    }

    /// The properties after `:`, through the closing `;`.
    fn properties<'a>(
        &self,
        start: &'a str,
        mut i: &'a str,
        part: &mut Partition,
    ) -> Result<(&'a str, Partition), Fail<'a>> {
        loop {
            i = skip_space_and_commas(i);
            if i.is_empty() {
                return Err(self.err(start.trim_start_matches([' ', '\t', '\r']), ParseErrorKind::Unterminated));
            }
            if let Ok((r, _)) = char::<_, ()>(';').parse(i) {
                return Ok((r, core::mem::take(part)));
            }
            let item = i;
            let (r, tok) =
                word(i).map_err(|_| self.err(i, unexpected(i, "where a port or an mgid= line was expected")))?;
            let after_tok = blanks(r);
            if tok == "mgid" && after_tok.starts_with('=') {
                i = self.mgid_line(blanks(&after_tok[1..]), part)?;
                continue;
            }
            let (r, value) = self.flag_value(r, tok)?;
            let membership = match value {
                Some((at, v)) => membership(v).map_err(|k| self.err(at, k))?,
                None => part.defmember,
            };
            if let Some(who) = port(tok).map_err(|k| self.err(item, k))? {
                part.members.push(Member { who, membership });
            }
            let r = blanks(r);
            if !(r.is_empty() || r.starts_with([',', ';', '\n'])) {
                return Err(self.err(r, unexpected(r, "after a port (expected ',', ';' or a new line)")));
            }
            i = r;
        }
    }

    /// The rest of an `mgid=` line, from the GID to the end of the line.
    fn mgid_line<'a>(&self, i: &'a str, part: &mut Partition) -> Result<&'a str, Fail<'a>> {
        let (mut r, text) =
            take_while1::<_, _, ()>(|c: char| c.is_ascii_hexdigit() || c == ':' || c == '.').parse(i).map_err(
                |_| self.err(i, ParseErrorKind::BadGid(word(i).map_or_else(|_| describe(i), |(_, w)| w.to_owned()))),
            )?;
        let mgid = parse_mgid(text).ok_or_else(|| self.err(i, ParseErrorKind::BadGid(text.to_owned())))?;
        if !is_multicast(mgid) {
            return Err(self.err(i, ParseErrorKind::NotMulticast(text.to_owned())));
        }
        let mut flags = McastFlags::default();
        loop {
            r = blanks(r);
            let Ok((after, _)) = char::<_, ()>(',').parse(r) else { break };
            let at = blanks(after);
            let (after, flag) =
                word(at).map_err(|_| self.err(at, unexpected(at, "where an mgid= flag was expected after ','")))?;
            let Some(g) = GroupFlag::from_name(flag) else {
                return Err(self.err(at, ParseErrorKind::UnknownFlag { name: flag.to_owned(), expected: GROUP_FLAGS }));
            };
            let (after, value) = self.flag_value(after, flag)?;
            self.group_flag(after, g, flag, value, &mut flags)?;
            r = after;
        }
        if !(r.is_empty() || r.starts_with([';', '\n'])) {
            return Err(self.err(r, unexpected(r, "after an mgid= line (it ends at the end of its line)")));
        }
        part.mcast_groups.push(McastGroup { mgid, flags });
        Ok(r)
    }
}

/// Characters of a flag, value or port token.
fn is_word_char(c: char) -> bool {
    !matches!(c, '=' | ',' | ':' | ';' | '#' | '\n' | '\r' | ' ' | '\t')
}

fn word(i: &str) -> Res<'_, &str> {
    take_while1(is_word_char).parse(i)
}

/// The name part of a definition: anything up to `=`, `,`, `:`, `;`, `#` or a line break.
fn header_name(i: &str) -> Res<'_, &str> {
    take_while(|c: char| !matches!(c, '=' | ',' | ':' | ';' | '#' | '\n')).parse(i)
}

fn comment(i: &str) -> Res<'_, &str> {
    recognize(preceded(char('#'), take_till(|c| c == '\n'))).parse(i)
}

/// Skips blanks and a comment on the current line (never the line break).
fn blanks(i: &str) -> &str {
    let r = i.trim_start_matches([' ', '\t', '\r']);
    comment(r).map_or(r, |(r, _)| r)
}

/// Skips blanks, comments and line breaks.
fn skip_space(mut i: &str) -> &str {
    loop {
        let r = blanks(i);
        match r.strip_prefix('\n') {
            Some(next) => i = next,
            None => return r,
        }
    }
}

fn skip_space_and_commas(mut i: &str) -> &str {
    loop {
        let r = skip_space(i);
        match r.strip_prefix(',') {
            Some(next) => i = next,
            None => return r,
        }
    }
}

fn describe(i: &str) -> String {
    match i.chars().next() {
        None => "end of file".to_owned(),
        Some('\n') => "end of line".to_owned(),
        Some(c) => format!("{c:?}"),
    }
}

fn unexpected(i: &str, context: &'static str) -> ParseErrorKind {
    ParseErrorKind::Unexpected { found: describe(i), context }
}

/// A number as OpenSM writes them: `0x` hex or decimal; a leading `0` without `0x` is refused.
pub(crate) fn number(tok: &str) -> Result<u64, ParseErrorKind> {
    let nan = || ParseErrorKind::NotANumber(tok.to_owned());
    if let Some(h) = tok.strip_prefix("0x").or_else(|| tok.strip_prefix("0X")) {
        if h.is_empty() || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(nan());
        }
        return u64::from_str_radix(h, 16).map_err(|_| nan());
    }
    if tok.is_empty() || !tok.bytes().all(|b| b.is_ascii_digit()) {
        return Err(nan());
    }
    if tok.len() > 1 && tok.starts_with('0') {
        return Err(ParseErrorKind::Octal(tok.to_owned()));
    }
    tok.parse().map_err(|_| nan())
}

/// A written P_Key: at most 16 bits, bit 15 ignored, base not zero.
fn pkey(tok: &str) -> Result<u16, ParseErrorKind> {
    let bad = |reason| ParseErrorKind::BadPkey { text: tok.to_owned(), reason };
    let v = number(tok)?;
    let v = u16::try_from(v).map_err(|_| bad("larger than 0xffff"))?;
    match v & DEFAULT_PKEY_BASE {
        0 => Err(bad("base 0 is the invalid P_Key (omit the P_Key to have one generated)")),
        base => Ok(base),
    }
}

/// `full`, `limited`, `both`, or a non-empty prefix of one, any case.
fn membership(v: &str) -> Result<Membership, ParseErrorKind> {
    let lower = v.to_ascii_lowercase();
    [Membership::Full, Membership::Limited, Membership::Both]
        .into_iter()
        .find(|m| !lower.is_empty() && m.as_str().starts_with(&lower))
        .ok_or_else(|| ParseErrorKind::BadMembership(v.to_owned()))
}

/// A port entry: a keyword, `NONE` (no port), or a non-zero GUID.
fn port(tok: &str) -> Result<Option<MemberSpec>, ParseErrorKind> {
    Ok(Some(match tok {
        "ALL" => MemberSpec::All,
        "ALL_CAS" => MemberSpec::AllCas,
        "ALL_SWITCHES" => MemberSpec::AllSwitches,
        "ALL_ROUTERS" => MemberSpec::AllRouters,
        "SELF" => MemberSpec::SelfPort,
        "NONE" => return Ok(None),
        _ => match number(tok) {
            Ok(0) | Err(ParseErrorKind::NotANumber(_)) => {
                return Err(ParseErrorKind::BadPort { text: tok.to_owned() });
            }
            Ok(g) => MemberSpec::PortGuid(Guid(g)),
            Err(e) => return Err(e),
        },
    }))
}
