//! Line-level syntax of `.net` files: turns one line into a [`Line`] without any context (no
//! node table, no GUID counters). The `parse` module assembles lines into a topology and adds the
//! `file:line` position to errors. Pure string slicing: no allocation on the success path
//! except nothing at all, and no panics on any input.

use super::NodeKind;

/// One classified line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Line<'a> {
    /// Blank line, `#` comment, ibnetdiscover decoration, `pdebug=` or an ignored `do` command.
    Skip,
    /// `Switch 8 "id" # "desc" ...`, `Hca`/`Ca`/`Rt` likewise.
    Node { kind: NodeKind, ports: u8, name: &'a str, desc: Option<&'a str> },
    /// `switchguid=X(Y)`, `caguid=X`, `hcaguids=X`, `rtguid=X`, or `...+N` (relative to the
    /// last absolute base).
    GuidBase { kind: NodeKind, value: u64, relative: bool, port_guid: Option<u64> },
    /// `vendid=`.
    VendId(u32),
    /// `devid=`.
    DevId(u16),
    /// `sysimgguid=`.
    SysImgGuid(u64),
    /// `width=` (default `LinkWidthEnabled` mask for nodes that follow).
    Width(u8),
    /// `speed=` (default `LinkSpeedEnabled` mask).
    Speed(u8),
    /// `extspeed=` (default `LinkSpeedExtEnabled` mask).
    ExtSpeed(u8),
    /// `include FILE` or `include "FILE"`.
    Include(&'a str),
    /// `[p](guid) "remote"[rp](rguid) w=.. s=.. e=.. # comment`.
    Port(PortLine<'a>),
}

/// A port line. Numbers are raw; the assembler checks them against the node's port count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct PortLine<'a> {
    pub port: u64,
    pub guid: Option<u64>,
    pub remote: &'a str,
    /// `None` when the line gives no `[rp]` (ibsim then assumes port 1).
    pub remote_port: Option<u64>,
    pub remote_guid: Option<u64>,
    /// Enabled masks, from `w=`/`s=`/`e=` or from an ibnetdiscover rate such as `4xQDR`.
    pub width: Option<u8>,
    pub speed: Option<u8>,
    pub ext_speed: Option<u8>,
}

/// A syntax problem in one line; the caller adds the position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum LineError {
    Unknown,
    Syntax { expected: &'static str, found: String },
    BadNumber { what: &'static str, text: String },
    BadOption { option: String, reason: &'static str },
    Unsupported(&'static str),
}

type LResult<T> = Result<T, LineError>;

/// At most this many characters of offending text go into an error message.
const SHOW: usize = 60;

/// A shortened copy of `s` for error messages.
pub(super) fn shorten(s: &str) -> String {
    match s.char_indices().nth(SHOW) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_owned(),
    }
}

fn syntax(expected: &'static str, found: &str) -> LineError {
    LineError::Syntax { expected, found: shorten(found) }
}

/// Classify one line (without its newline).
pub(super) fn parse_line(raw: &str) -> LResult<Line<'_>> {
    let line = raw.trim();
    if line.is_empty() || line.starts_with('#') {
        return Ok(Line::Skip);
    }
    if line.starts_with('[') {
        return parse_port(line).map(Line::Port);
    }
    if line.starts_with('@') {
        return Err(LineError::Unsupported("an ibsim port alias ('@')"));
    }
    let word_len = line.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(line.len());
    let (word, rest) = line.split_at(word_len);
    match word {
        "Switch" => parse_header(NodeKind::Switch, rest),
        "Hca" | "Ca" => parse_header(NodeKind::Ca, rest),
        "Rt" => parse_header(NodeKind::Router, rest),
        "switchguid" => parse_guid_base(NodeKind::Switch, rest, true),
        "caguid" | "hcaguids" => parse_guid_base(NodeKind::Ca, rest, false),
        "rtguid" => parse_guid_base(NodeKind::Router, rest, false),
        "vendid" => {
            let v = assignment(rest, "vendid")?;
            u32::try_from(v)
                .ok()
                .filter(|v| *v <= 0x00ff_ffff)
                .map(Line::VendId)
                .ok_or_else(|| bad_number("vendid (24 bits)", rest))
        }
        "devid" => {
            let v = assignment(rest, "devid")?;
            u16::try_from(v).map(Line::DevId).map_err(|_| bad_number("devid (16 bits)", rest))
        }
        "sysimgguid" => assignment(rest, "sysimgguid").map(Line::SysImgGuid),
        "width" => mask_assignment(rest, "width", width_mask).map(Line::Width),
        "speed" => mask_assignment(rest, "speed", speed_mask).map(Line::Speed),
        "extspeed" => mask_assignment(rest, "extspeed", ext_speed_mask).map(Line::ExtSpeed),
        "include" => parse_include(rest).map(Line::Include),
        "module" => Err(LineError::Unsupported("ibsim's 'module' name prefix")),
        // ibsim debugging switch, a console command run while loading (ignored: this parser
        // builds a description, not a running simulator; see the module docs), and the
        // decorations that `ibnetdiscover -g` / `-s` print.
        "pdebug" | "Chassis" | "Hostname" => Ok(Line::Skip),
        "do" if rest.is_empty() || rest.starts_with(char::is_whitespace) => Ok(Line::Skip),
        "Non" if line.starts_with("Non-Chassis Nodes") => Ok(Line::Skip),
        "DR" if line.starts_with("DR path ") => Ok(Line::Skip),
        _ => Err(LineError::Unknown),
    }
}

fn bad_number(what: &'static str, text: &str) -> LineError {
    LineError::BadNumber { what, text: shorten(text.trim()) }
}

/// `0x`-prefixed hex or decimal.
pub(super) fn parse_num(s: &str) -> Option<u64> {
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        if h.is_empty() || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        u64::from_str_radix(h, 16).ok()
    } else {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        s.parse().ok()
    }
}

/// Hex with or without `0x` (ibnetdiscover prints port GUIDs in parentheses without it).
fn parse_hex(s: &str) -> Option<u64> {
    let h = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")).unwrap_or(s);
    if h.is_empty() || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(h, 16).ok()
}

/// Split `s` into a leading value token (up to whitespace, `(` or `#`) and the rest.
fn value_token(s: &str) -> (&str, &str) {
    let end = s.find(|c: char| c.is_whitespace() || c == '(' || c == '#').unwrap_or(s.len());
    s.split_at(end)
}

/// Only whitespace or a `#` comment may follow.
fn expect_end(rest: &str) -> LResult<()> {
    let rest = rest.trim_start();
    if rest.is_empty() || rest.starts_with('#') { Ok(()) } else { Err(syntax("end of line or '#' comment", rest)) }
}

/// `= value [# comment]` after a keyword.
fn assignment(rest: &str, what: &'static str) -> LResult<u64> {
    let Some(v) = rest.trim_start().strip_prefix('=') else {
        return Err(syntax("'=' after the keyword", rest));
    };
    let (tok, tail) = value_token(v.trim_start());
    let value = parse_num(tok).ok_or_else(|| bad_number(what, tok))?;
    expect_end(tail)?;
    Ok(value)
}

fn mask_assignment(rest: &str, what: &'static str, check: fn(u64) -> Option<u8>) -> LResult<u8> {
    let v = assignment(rest, what)?;
    check(v).ok_or_else(|| bad_number(what, rest.trim_start().trim_start_matches('=')))
}

fn parse_guid_base(kind: NodeKind, rest: &str, port_guid_allowed: bool) -> LResult<Line<'_>> {
    let rest = rest.trim_start();
    let (relative, v) = if let Some(v) = rest.strip_prefix('=') {
        (false, v)
    } else if let Some(v) = rest.strip_prefix('+') {
        (true, v)
    } else {
        return Err(syntax("'=' or '+' after the keyword", rest));
    };
    let (tok, mut tail) = value_token(v.trim_start());
    let value = parse_num(tok).ok_or_else(|| bad_number("GUID", tok))?;
    let mut port_guid = None;
    if let Some(p) = tail.strip_prefix('(') {
        if !port_guid_allowed || relative {
            return Err(syntax("end of line or '#' comment", tail));
        }
        let Some(close) = p.find(')') else {
            return Err(syntax("')' closing the port GUID", tail));
        };
        port_guid = Some(parse_hex(&p[..close]).ok_or_else(|| bad_number("port GUID", &p[..close]))?);
        tail = &p[close + 1..];
    }
    expect_end(tail)?;
    Ok(Line::GuidBase { kind, value, relative, port_guid })
}

/// A `"..."` string at the start of `s`: its contents and the rest after the closing quote.
fn quoted(s: &str) -> Option<(&str, &str)> {
    let body = s.strip_prefix('"')?;
    let close = body.find('"')?;
    Some((&body[..close], &body[close + 1..]))
}

fn parse_header(kind: NodeKind, rest: &str) -> LResult<Line<'_>> {
    if !rest.starts_with(char::is_whitespace) {
        return Err(LineError::Unknown);
    }
    let rest = rest.trim_start();
    let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
    let (num, rest) = rest.split_at(digits);
    let ports = num
        .parse::<u64>()
        .ok()
        .and_then(|n| u8::try_from(n).ok())
        .filter(|n| *n >= 1)
        .ok_or_else(|| bad_number("port count (1..=255)", if num.is_empty() { rest } else { num }))?;
    let rest = rest.trim_start();
    let Some((name, rest)) = quoted(rest) else {
        return Err(syntax("a quoted node id after the port count", rest));
    };
    let rest = rest.trim_start();
    let desc = if rest.is_empty() {
        None
    } else if let Some(comment) = rest.strip_prefix('#') {
        header_desc(comment.trim_start())
    } else {
        return Err(syntax("end of line or '#' comment", rest));
    };
    Ok(Line::Node { kind, ports, name, desc })
}

/// The `NodeDescription` in a header comment: `"quoted"`, or bare text up to ibnetdiscover's
/// `base port` / `enhanced port` / `lid` / `lmc` fields (or a stray `"`). Empty means none.
fn header_desc(comment: &str) -> Option<&str> {
    let desc = if let Some(body) = comment.strip_prefix('"') {
        body.find('"').map_or(body, |close| &body[..close])
    } else {
        let end = [" enhanced port ", " base port ", " lid ", " lmc ", "\""]
            .iter()
            .filter_map(|m| comment.find(m))
            .min()
            .unwrap_or(comment.len());
        comment[..end].trim()
    };
    (!desc.is_empty()).then_some(desc)
}

fn parse_include(rest: &str) -> LResult<&str> {
    if !rest.is_empty() && !rest.starts_with(char::is_whitespace) {
        return Err(LineError::Unknown);
    }
    let rest = rest.trim();
    let (name, tail) = if rest.starts_with('"') {
        quoted(rest).ok_or_else(|| syntax("a closing '\"' after the file name", rest))?
    } else {
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        rest.split_at(end)
    };
    if name.is_empty() {
        return Err(syntax("a file name after 'include'", rest));
    }
    expect_end(tail)?;
    Ok(name)
}

/// `[N]` at the start of `s`: the number (raw) and the rest.
fn bracket_num<'a>(s: &'a str, what: &'static str) -> LResult<(u64, &'a str)> {
    let Some(body) = s.strip_prefix('[') else {
        return Err(syntax("'[' and a port number", s));
    };
    let body = body.trim_start();
    let end = body.find(|c: char| !c.is_ascii_digit()).unwrap_or(body.len());
    let (digits, rest) = body.split_at(end);
    if digits.is_empty() {
        let shown = body.split([']', ' ', '\t']).next().unwrap_or(body);
        return Err(bad_number(what, shown));
    }
    // Saturate absurdly long numbers: they are out of range either way.
    let n = digits.parse::<u64>().unwrap_or(u64::MAX);
    let Some(rest) = rest.trim_start().strip_prefix(']') else {
        return Err(syntax("']' after the port number", rest));
    };
    Ok((n, rest))
}

/// Skip ibnetdiscover's `[ext N]` external-port marking (printed with `-g`).
fn skip_ext(s: &str) -> &str {
    match s.strip_prefix("[ext").and_then(|body| body.find(']').map(|close| &body[close + 1..])) {
        Some(rest) => rest,
        None => s,
    }
}

/// `(hex)` at the start of `s`, if present.
fn paren_guid(s: &str) -> LResult<(Option<u64>, &str)> {
    let Some(body) = s.strip_prefix('(') else {
        return Ok((None, s));
    };
    let Some(close) = body.find(')') else {
        return Err(syntax("')' after the port GUID", s));
    };
    let g = parse_hex(body[..close].trim()).ok_or_else(|| bad_number("port GUID", &body[..close]))?;
    Ok((Some(g), &body[close + 1..]))
}

fn parse_port(line: &str) -> LResult<PortLine<'_>> {
    let (port, mut s) = bracket_num(line, "port number")?;
    let mut guid = None;
    loop {
        s = s.trim_start();
        if s.starts_with("[ext") {
            s = skip_ext(s);
        } else if s.starts_with('(') && guid.is_none() {
            let (g, rest) = paren_guid(s)?;
            guid = g;
            s = rest;
        } else {
            break;
        }
    }
    let Some((remote, mut s)) = quoted(s) else {
        return Err(syntax("a quoted remote node id", s));
    };
    let mut remote_port = None;
    if s.starts_with('[') && !s.starts_with("[ext") {
        let (rp, rest) = bracket_num(s, "remote port number")?;
        remote_port = Some(rp);
        s = rest;
    }
    s = skip_ext(s).trim_start();
    let (remote_guid, s) = paren_guid(s)?;
    let (opts, comment) = match s.find('#') {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let mut out = PortLine { port, guid, remote, remote_port, remote_guid, width: None, speed: None, ext_speed: None };
    for tok in opts.split_whitespace() {
        let Some((key, val)) = tok.split_once('=') else {
            return Err(syntax("a link option (w=, s=, e=) or a '#' comment", tok));
        };
        let bad = |reason| LineError::BadOption { option: shorten(tok), reason };
        let v = parse_num(val).ok_or_else(|| bad("value is not a number"))?;
        match key {
            "w" => out.width = Some(width_mask(v).ok_or_else(|| bad("width mask must be 1..=31"))?),
            "s" => out.speed = Some(speed_mask(v).ok_or_else(|| bad("speed mask must be 0..=7"))?),
            "e" => {
                out.ext_speed = Some(ext_speed_mask(v).ok_or_else(|| bad("extended speed mask must be 0..=15"))?);
            }
            _ => return Err(bad("unknown option (expected w=, s= or e=)")),
        }
    }
    if let Some(comment) = comment {
        // ibnetdiscover's rate (`lid 3 4xQDR`) follows the last quoted description; as ibsim
        // does, it overrides w=/s=/e=.
        let tail = comment.rfind('"').map_or(comment, |i| &comment[i + 1..]);
        if let Some((w, sp, e)) = tail.split_whitespace().find_map(rate) {
            out.width = Some(w);
            out.speed = Some(sp);
            out.ext_speed = e;
        }
    }
    Ok(out)
}

/// ibsim's `w=` value: a `LinkWidthEnabled` mask, 1..=31.
fn width_mask(v: u64) -> Option<u8> {
    u8::try_from(v).ok().filter(|v| (1..=31).contains(v))
}

/// ibsim's `s=` value: a `LinkSpeedEnabled` mask 1..=7; 0 means QDR (ibsim 0.12).
fn speed_mask(v: u64) -> Option<u8> {
    match v {
        0 => Some(4),
        1..=7 => u8::try_from(v).ok(),
        _ => None,
    }
}

/// ibsim's `e=` value: a `LinkSpeedExtEnabled` mask 0..=15.
fn ext_speed_mask(v: u64) -> Option<u8> {
    u8::try_from(v).ok().filter(|v| *v <= 15)
}

/// An ibnetdiscover rate token (`4xQDR`, `12xEDR`, `2xNDR`) as the enabled masks ibsim derives
/// from it: (width, speed, extended speed). `None` for anything else.
fn rate(tok: &str) -> Option<(u8, u8, Option<u8>)> {
    let (w, sp) = tok.split_once('x')?;
    let width = match w {
        "1" => 1,
        "2" => 16,
        "4" => 3,
        "8" => 4,
        "12" => 11,
        _ => return None,
    };
    let (speed, ext) = match sp {
        "SDR" => (1, None),
        "DDR" => (3, None),
        "QDR" | "FDR10" => (7, None),
        "FDR" => (7, Some(1)),
        "EDR" => (7, Some(3)),
        "HDR" => (7, Some(7)),
        "NDR" => (7, Some(15)),
        _ => return None,
    };
    Some((width, speed, ext))
}

/// The active width for an enabled mask, preferring the widest (12x, 8x, 4x, 2x, 1x), in
/// `LinkWidthActive` encoding. 0 for an empty mask.
pub(super) fn best_width(mask: u8) -> u8 {
    [8, 4, 2, 16, 1].into_iter().find(|b| mask & b != 0).unwrap_or(0)
}

/// The fastest speed in a `LinkSpeedEnabled` (or `LinkSpeedExtEnabled`) mask; 0 for an empty mask.
pub(super) fn best_speed(mask: u8) -> u8 {
    [8, 4, 2, 1].into_iter().find(|b| mask & b != 0).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_comments_decorations_and_do() {
        for l in [
            "",
            "   ",
            "# a comment",
            "Non-Chassis Nodes",
            "Chassis 1 (guid 0x5442ba00003000)",
            "Hostname: node7",
            "DR path slid 0; dlid 0; 0,1 -> new Channel Adapter",
            "do Unlink \"Hca1\"",
            "pdebug=1",
        ] {
            assert_eq!(parse_line(l), Ok(Line::Skip), "{l:?}");
        }
        assert_eq!(parse_line("dodo"), Err(LineError::Unknown));
        assert_eq!(parse_line("Swich 8 \"a\""), Err(LineError::Unknown));
        assert_eq!(parse_line("hello"), Err(LineError::Unknown));
    }

    #[test]
    fn ibsim_headers() {
        assert_eq!(
            parse_line("Switch\t8 \"Switch1\""),
            Ok(Line::Node { kind: NodeKind::Switch, ports: 8, name: "Switch1", desc: None })
        );
        assert_eq!(
            parse_line("Hca \t2 \"Hca4\""),
            Ok(Line::Node { kind: NodeKind::Ca, ports: 2, name: "Hca4", desc: None })
        );
        assert_eq!(
            parse_line("Rt 3 \"r\""),
            Ok(Line::Node { kind: NodeKind::Router, ports: 3, name: "r", desc: None })
        );
    }

    #[test]
    fn ibnetdiscover_headers() {
        assert_eq!(
            parse_line("Switch\t8 \"S-0000000000200001\"\t\t# \"Switch2\" base port 0 lid 3 lmc 0"),
            Ok(Line::Node { kind: NodeKind::Switch, ports: 8, name: "S-0000000000200001", desc: Some("Switch2") })
        );
        assert_eq!(
            parse_line("Ca\t2 \"H-0002c9\"\t\t# \"MT23108 InfiniHost\" (scp)"),
            Ok(Line::Node { kind: NodeKind::Ca, ports: 2, name: "H-0002c9", desc: Some("MT23108 InfiniHost") })
        );
        assert_eq!(
            parse_line("Switch 24 \"s\" # ISR9024 Voltaire enhanced port 0 lid 6 lmc 0"),
            Ok(Line::Node { kind: NodeKind::Switch, ports: 24, name: "s", desc: Some("ISR9024 Voltaire") })
        );
        assert_eq!(
            parse_line("Switch 24 \"s\" # \"\" base port 0 lid 6 lmc 0"),
            Ok(Line::Node { kind: NodeKind::Switch, ports: 24, name: "s", desc: None })
        );
    }

    #[test]
    fn header_errors() {
        assert!(matches!(parse_line("Switch 0 \"a\""), Err(LineError::BadNumber { .. })));
        assert!(matches!(parse_line("Switch 256 \"a\""), Err(LineError::BadNumber { .. })));
        assert!(matches!(parse_line("Switch \"a\""), Err(LineError::BadNumber { .. })));
        assert!(matches!(parse_line("Switch 8 a"), Err(LineError::Syntax { .. })));
        assert!(matches!(parse_line("Switch 8 \"a"), Err(LineError::Syntax { .. })));
        assert!(matches!(parse_line("Switch 8 \"a\" junk"), Err(LineError::Syntax { .. })));
    }

    #[test]
    fn assignments() {
        assert_eq!(parse_line("vendid=0x2c9"), Ok(Line::VendId(0x2c9)));
        assert_eq!(parse_line("devid = 0x5a44"), Ok(Line::DevId(0x5a44)));
        assert_eq!(parse_line("devid=23"), Ok(Line::DevId(23)));
        assert_eq!(
            parse_line("sysimgguid=0x5442ba00003000\t\t# Chassis 1"),
            Ok(Line::SysImgGuid(0x0054_42ba_0000_3000))
        );
        assert_eq!(
            parse_line("switchguid=0x200001(200001)\t# "),
            Ok(Line::GuidBase {
                kind: NodeKind::Switch,
                value: 0x20_0001,
                relative: false,
                port_guid: Some(0x20_0001)
            })
        );
        assert_eq!(
            parse_line("caguid=0x100009"),
            Ok(Line::GuidBase { kind: NodeKind::Ca, value: 0x10_0009, relative: false, port_guid: None })
        );
        assert_eq!(
            parse_line("hcaguids+16"),
            Ok(Line::GuidBase { kind: NodeKind::Ca, value: 16, relative: true, port_guid: None })
        );
        assert_eq!(
            parse_line("rtguid=0x30"),
            Ok(Line::GuidBase { kind: NodeKind::Router, value: 0x30, relative: false, port_guid: None })
        );
        assert_eq!(parse_line("width=3"), Ok(Line::Width(3)));
        assert_eq!(parse_line("speed=7"), Ok(Line::Speed(7)));
        assert_eq!(parse_line("extspeed=0"), Ok(Line::ExtSpeed(0)));
        assert!(matches!(parse_line("vendid=0x1000000"), Err(LineError::BadNumber { .. })));
        assert!(matches!(parse_line("devid=0x10000"), Err(LineError::BadNumber { .. })));
        assert!(matches!(parse_line("vendid 3"), Err(LineError::Syntax { .. })));
        assert!(matches!(parse_line("vendid=zz"), Err(LineError::BadNumber { .. })));
        assert!(matches!(parse_line("width=32"), Err(LineError::BadNumber { .. })));
        assert!(matches!(parse_line("caguid=0x10(11)"), Err(LineError::Syntax { .. })));
        assert!(matches!(parse_line("switchguid=0x10(zz)"), Err(LineError::BadNumber { .. })));
        assert!(matches!(parse_line("module=\"m\""), Err(LineError::Unsupported(_))));
    }

    #[test]
    fn includes() {
        assert_eq!(parse_line("include \"sub dir/a.net\""), Ok(Line::Include("sub dir/a.net")));
        assert_eq!(parse_line("include a.net # comment"), Ok(Line::Include("a.net")));
        assert!(matches!(parse_line("include"), Err(LineError::Syntax { .. })));
        assert!(matches!(parse_line("include \"a"), Err(LineError::Syntax { .. })));
        assert!(matches!(parse_line("include a b"), Err(LineError::Syntax { .. })));
    }

    fn port(p: u64, remote: &str, rp: Option<u64>) -> PortLine<'_> {
        PortLine {
            port: p,
            guid: None,
            remote,
            remote_port: rp,
            remote_guid: None,
            width: None,
            speed: None,
            ext_speed: None,
        }
    }

    #[test]
    fn ibsim_port_lines() {
        assert_eq!(parse_line("[1]\t\"Hca1\"[1]"), Ok(Line::Port(port(1, "Hca1", Some(1)))));
        assert_eq!(parse_line("[3] \"S\""), Ok(Line::Port(port(3, "S", None))));
        let mut p = port(2, "x", Some(4));
        p.width = Some(8);
        p.speed = Some(4);
        p.ext_speed = Some(2);
        assert_eq!(parse_line("[2]\t\"x\"[4]\tw=8 s=0x4 e=2"), Ok(Line::Port(p)));
        let mut p = port(2, "x", Some(4));
        p.speed = Some(4);
        assert_eq!(parse_line("[2] \"x\"[4] s=0"), Ok(Line::Port(p)));
    }

    #[test]
    fn ibnetdiscover_port_lines() {
        let mut p = port(1, "H-0000000000100003", Some(1));
        p.remote_guid = Some(0x10_0004);
        p.width = Some(3);
        p.speed = Some(1);
        assert_eq!(parse_line("[1]\t\"H-0000000000100003\"[1](100004) \t\t# \"Hca2\" lid 0 4xSDR"), Ok(Line::Port(p)));
        let mut p = port(1, "S-0000000000200000", Some(2));
        p.guid = Some(0x10_0007);
        p.width = Some(11);
        p.speed = Some(7);
        p.ext_speed = Some(3);
        assert_eq!(
            parse_line("[1](100007) \t\"S-0000000000200000\"[2]\t\t# lid 0 lmc 0 \"Switch1\" lid 0 12xEDR"),
            Ok(Line::Port(p))
        );
        // -g external port markings, -f trailing fields, a CA peer's GUID after a space.
        let mut p = port(3, "S-1", Some(6));
        p.width = Some(3);
        p.speed = Some(7);
        assert_eq!(parse_line("[3][ext 5]\t\"S-1\"[6][ext 2]\t\t# \"sw\" lid 6 4xQDR s=4 w=2 v=4"), Ok(Line::Port(p)));
        let mut p = port(2, "H-2", Some(1));
        p.guid = Some(0x11);
        p.remote_guid = Some(0x21);
        assert_eq!(parse_line("[2](11) \t\"H-2\"[1] (21) \t\t# lid 1 lmc 0 \"h\" lid 2 undefined"), Ok(Line::Port(p)));
    }

    #[test]
    fn port_line_errors() {
        assert!(matches!(parse_line("[x] \"a\"[1]"), Err(LineError::BadNumber { .. })));
        assert!(matches!(parse_line("[1 \"a\"[1]"), Err(LineError::Syntax { .. })));
        assert!(matches!(parse_line("[1] a[1]"), Err(LineError::Syntax { .. })));
        assert!(matches!(parse_line("[1] \"a[1]"), Err(LineError::Syntax { .. })));
        assert!(matches!(parse_line("[1] \"a\"[z]"), Err(LineError::BadNumber { .. })));
        assert!(matches!(parse_line("[1](zz) \"a\"[1]"), Err(LineError::BadNumber { .. })));
        assert!(matches!(parse_line("[1] \"a\"[1] w=0"), Err(LineError::BadOption { .. })));
        assert!(matches!(parse_line("[1] \"a\"[1] s=8"), Err(LineError::BadOption { .. })));
        assert!(matches!(parse_line("[1] \"a\"[1] e=16"), Err(LineError::BadOption { .. })));
        assert!(matches!(parse_line("[1] \"a\"[1] q=1"), Err(LineError::BadOption { .. })));
        assert!(matches!(parse_line("[1] \"a\"[1] w=x"), Err(LineError::BadOption { .. })));
        assert!(matches!(parse_line("[1] \"a\"[1] junk"), Err(LineError::Syntax { .. })));
        assert!(matches!(parse_line("@[1] \"a\""), Err(LineError::Unsupported(_))));
    }

    #[test]
    fn best_bits() {
        assert_eq!(best_width(11), 8);
        assert_eq!(best_width(3), 2);
        assert_eq!(best_width(17), 16);
        assert_eq!(best_width(0), 0);
        assert_eq!(best_speed(7), 4);
        assert_eq!(best_speed(15), 8);
        assert_eq!(best_speed(0), 0);
    }

    #[test]
    fn shorten_is_char_safe() {
        let s = "é".repeat(100);
        assert!(shorten(&s).ends_with("..."));
        assert_eq!(shorten("abc"), "abc");
    }
}
