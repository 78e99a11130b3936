//! The qos-policy.conf parser: OpenSM's line-oriented format (one keyword or `key: value` per
//! line, `#` comments, sections opened by a keyword and closed by `end-` the same), read into a
//! [`QosPolicy`] and checked as a whole: names are unique, every group and level a rule names
//! exists, and there is a default level (a `DEFAULT` qos-level or a `default` qos-ulps line).
//!
//! Never panics; the first error is returned with its line and reason.

use crate::error::ParseError;
use crate::model::{
    DEFAULT_PKEY, GroupMember, ISER_DEFAULT_PORT, MatchRule, NodeTypeSel, PortGroup, PortSel, QosLevel, QosPolicy,
    RDS_DEFAULT_PORT, RDS_ISER_SERVICE_BASE, Range, SDP_SERVICE_BASE, Sl2VlScope, UlpMatch, UlpRule, VlArbScope,
};
use crate::values::{bounded, names, ranges, sl2vl_list, unquote, vlarb_list};

/// The level every unmatched query gets.
pub const DEFAULT_LEVEL: &str = "DEFAULT";

/// Where the parser is.
enum Ctx {
    Top,
    PortGroups,
    PortGroup(PortGroup),
    Setup,
    VlarbTables,
    VlarbScope(VlArbScope),
    Sl2vlTables,
    Sl2vlScope(Sl2VlScope),
    Levels,
    Level(QosLevel, bool),
    MatchRules,
    MatchRule(MatchRule),
    Ulps,
}

impl Ctx {
    /// The keyword that closes this context, and what it is called in messages.
    fn closer(&self) -> &'static str {
        match self {
            Ctx::Top => "",
            Ctx::PortGroups => "end-port-groups",
            Ctx::PortGroup(_) => "end-port-group",
            Ctx::Setup => "end-qos-setup",
            Ctx::VlarbTables => "end-vlarb-tables",
            Ctx::VlarbScope(_) => "end-vlarb-scope",
            Ctx::Sl2vlTables => "end-sl2vl-tables",
            Ctx::Sl2vlScope(_) => "end-sl2vl-scope",
            Ctx::Levels => "end-qos-levels",
            Ctx::Level(..) => "end-qos-level",
            Ctx::MatchRules => "end-qos-match-rules",
            Ctx::MatchRule(_) => "end-qos-match-rule",
            Ctx::Ulps => "end-qos-ulps",
        }
    }
}

/// A reference to a name that must exist once the whole file is read.
struct NameRef {
    line: u32,
    kind: &'static str,
    name: String,
}

struct Parser {
    policy: QosPolicy,
    stack: Vec<Ctx>,
    refs: Vec<NameRef>,
    /// (line, name) of each group and level, to report duplicates.
    group_lines: Vec<u32>,
    level_lines: Vec<u32>,
    rule_lines: Vec<u32>,
    /// Single-value keys seen in the current block.
    seen: Vec<&'static str>,
    block_line: u32,
}

/// `line` without its comment (a `#` outside double quotes) and surrounding blanks.
fn strip(line: &str) -> &str {
    let mut quoted = false;
    for (i, c) in line.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '#' if !quoted => return line[..i].trim(),
            _ => {}
        }
    }
    line.trim()
}

/// Parses a qos-policy.conf.
///
/// # Errors
/// The first line that cannot be read, or the first name a rule uses that is not defined.
pub fn parse_qos_policy(text: &str) -> Result<QosPolicy, ParseError> {
    let mut p = Parser {
        policy: QosPolicy::default(),
        stack: vec![Ctx::Top],
        refs: Vec::new(),
        group_lines: Vec::new(),
        level_lines: Vec::new(),
        rule_lines: Vec::new(),
        seen: Vec::new(),
        block_line: 0,
    };
    let mut last = 0u32;
    for (i, raw) in text.lines().enumerate() {
        let line = u32::try_from(i + 1).unwrap_or(u32::MAX);
        last = line;
        let l = strip(raw);
        if !l.is_empty() {
            p.line(line, l).map_err(|reason| ParseError::new(line, reason))?;
        }
    }
    if let Some(ctx) = p.stack.last()
        && !matches!(ctx, Ctx::Top)
    {
        let opened = p.block_line;
        return Err(ParseError::new(
            last.saturating_add(1),
            format!("end of file before {} (a section opened near line {opened} is not closed)", ctx.closer()),
        ));
    }
    p.finish()
}

impl Parser {
    fn line(&mut self, line: u32, text: &str) -> Result<(), String> {
        let top = self.stack.last().map_or("", Ctx::closer);
        if text == top && !top.is_empty() {
            return self.close();
        }
        let ctx = self.stack.last_mut().ok_or("parser lost its place")?;
        let opened = match (&*ctx, text) {
            (Ctx::Top, "port-groups") => Some(Ctx::PortGroups),
            (Ctx::Top, "qos-setup") => Some(Ctx::Setup),
            (Ctx::Top, "qos-levels") => Some(Ctx::Levels),
            (Ctx::Top, "qos-match-rules") => Some(Ctx::MatchRules),
            (Ctx::Top, "qos-ulps") => Some(Ctx::Ulps),
            (Ctx::PortGroups, "port-group") => Some(Ctx::PortGroup(PortGroup::default())),
            (Ctx::Setup, "vlarb-tables") => Some(Ctx::VlarbTables),
            (Ctx::Setup, "sl2vl-tables") => Some(Ctx::Sl2vlTables),
            (Ctx::VlarbTables, "vlarb-scope") => Some(Ctx::VlarbScope(VlArbScope::default())),
            (Ctx::Sl2vlTables, "sl2vl-scope") => Some(Ctx::Sl2vlScope(Sl2VlScope::default())),
            (Ctx::Levels, "qos-level") => Some(Ctx::Level(QosLevel::default(), false)),
            (Ctx::MatchRules, "qos-match-rule") => Some(Ctx::MatchRule(MatchRule::default())),
            _ => None,
        };
        if let Some(next) = opened {
            self.stack.push(next);
            self.seen.clear();
            self.block_line = line;
            return Ok(());
        }
        let found = format!("found {text:?}");
        let mut keys = Keys { seen: &mut self.seen, refs: &mut self.refs, line };
        match ctx {
            Ctx::Top => Err(format!(
                "expected a section (port-groups, qos-setup, qos-levels, qos-match-rules, qos-ulps), {found}"
            )),
            Ctx::PortGroups => Err(format!("expected port-group or end-port-groups, {found}")),
            Ctx::Setup => Err(format!("expected vlarb-tables, sl2vl-tables or end-qos-setup, {found}")),
            Ctx::VlarbTables => Err(format!("expected vlarb-scope or end-vlarb-tables, {found}")),
            Ctx::Sl2vlTables => Err(format!("expected sl2vl-scope or end-sl2vl-tables, {found}")),
            Ctx::Levels => Err(format!("expected qos-level or end-qos-levels, {found}")),
            Ctx::MatchRules => Err(format!("expected qos-match-rule or end-qos-match-rules, {found}")),
            Ctx::Ulps => {
                let rule = ulp(text, line)?;
                self.policy.ulps.push(rule);
                Ok(())
            }
            Ctx::PortGroup(group) => keys.group(group, key_value(text, top)?),
            Ctx::VlarbScope(scope) => keys.vlarb(scope, key_value(text, top)?),
            Ctx::Sl2vlScope(scope) => keys.sl2vl(scope, key_value(text, top)?),
            Ctx::Level(level, has_sl) => keys.level(level, has_sl, key_value(text, top)?),
            Ctx::MatchRule(rule) => keys.rule(rule, key_value(text, top)?),
        }
    }

    /// The closing keyword of the innermost block: check the block and file it.
    fn close(&mut self) -> Result<(), String> {
        let ctx = self.stack.pop().ok_or("parser lost its place")?;
        let opened = self.block_line;
        match ctx {
            Ctx::PortGroup(g) => {
                if g.name.is_empty() {
                    return Err(format!("port-group opened on line {opened} has no name"));
                }
                if let Some(i) = self.policy.port_groups.iter().position(|o| o.name.eq_ignore_ascii_case(&g.name)) {
                    let first = self.group_lines.get(i).copied().unwrap_or(0);
                    return Err(format!("port-group {:?} is already defined on line {first}", g.name));
                }
                self.group_lines.push(opened);
                self.policy.port_groups.push(g);
            }
            Ctx::VlarbScope(s) => {
                if s.groups.is_empty() && s.across.is_empty() {
                    return Err(format!("vlarb-scope opened on line {opened} names no group or across"));
                }
                self.policy.setup.vlarb.push(s);
            }
            Ctx::Sl2vlScope(s) => {
                if s.groups.is_empty() && s.across.is_empty() && s.across_to.is_empty() && s.across_from.is_empty() {
                    return Err(format!(
                        "sl2vl-scope opened on line {opened} names no group, across, across-to or across-from"
                    ));
                }
                if s.table.is_none() {
                    return Err(format!("sl2vl-scope opened on line {opened} has no sl2vl-table"));
                }
                self.policy.setup.sl2vl.push(s);
            }
            Ctx::Level(level, has_sl) => {
                if level.name.is_empty() {
                    return Err(format!("qos-level opened on line {opened} has no name"));
                }
                if !has_sl {
                    return Err(format!("qos-level {:?} has no sl", level.name));
                }
                if let Some(i) = self.policy.levels.iter().position(|o| o.name.eq_ignore_ascii_case(&level.name)) {
                    let first = self.level_lines.get(i).copied().unwrap_or(0);
                    return Err(format!("qos-level {:?} is already defined on line {first}", level.name));
                }
                self.level_lines.push(opened);
                self.policy.levels.push(level);
            }
            Ctx::MatchRule(rule) => {
                if rule.level.is_empty() {
                    return Err(format!("qos-match-rule opened on line {opened} has no qos-level-name"));
                }
                self.rule_lines.push(opened);
                self.policy.match_rules.push(rule);
            }
            _ => {}
        }
        Ok(())
    }

    /// Whole-file checks: every referenced group and level exists, and a default level does.
    fn finish(self) -> Result<QosPolicy, ParseError> {
        let p = self.policy;
        for r in &self.refs {
            if p.group(&r.name).is_none() {
                return Err(ParseError::new(
                    r.line,
                    format!("{} {:?} is not a port-group of this file", r.kind, r.name),
                ));
            }
        }
        for (rule, line) in p.match_rules.iter().zip(&self.rule_lines) {
            if p.level(&rule.level).is_none() {
                return Err(ParseError::new(*line, format!("qos-level {:?} is not defined in qos-levels", rule.level)));
            }
        }
        let ulp_default = p.ulps.iter().any(|u| u.matcher == UlpMatch::Default);
        if p.level(DEFAULT_LEVEL).is_none() && !ulp_default {
            return Err(ParseError::new(
                1,
                "no default level: define a qos-level named DEFAULT or a `default : <sl>` line in qos-ulps",
            ));
        }
        Ok(p)
    }
}

/// The `key: value` lines of a block: what was set already, and names to check at the end.
struct Keys<'a> {
    seen: &'a mut Vec<&'static str>,
    refs: &'a mut Vec<NameRef>,
    line: u32,
}

impl Keys<'_> {
    fn once(&mut self, key: &'static str, set: impl FnOnce()) -> Result<(), String> {
        set_once(self.seen, key, set)
    }

    fn names(&mut self, into: &mut Vec<String>, value: &str) -> Result<(), String> {
        for n in names(value, "port-group name")? {
            self.refs.push(NameRef { line: self.line, kind: "port-group", name: n.clone() });
            into.push(n);
        }
        Ok(())
    }

    fn group(&mut self, group: &mut PortGroup, (key, value): (&str, &str)) -> Result<(), String> {
        match key {
            "name" => self.once("name", || unquote(value).clone_into(&mut group.name))?,
            "use" => self.once("use", || group.use_text = Some(value.to_owned()))?,
            "port-guid" => group.members.push(GroupMember::PortGuids(ranges(value, u64::MAX, "port GUID")?)),
            "port-name" => {
                for n in names(value, "port name")? {
                    group.members.push(port_name(&n)?);
                }
            }
            "partition" => {
                group.members.extend(names(value, "partition name")?.into_iter().map(GroupMember::Partition));
            }
            "pkey" => group.members.push(GroupMember::Pkeys(ranges(value, 0xffff, "P_Key")?)),
            "node-type" => {
                let kinds = names(value, "node type")?.iter().map(|n| node_type(n)).collect::<Result<_, _>>()?;
                group.members.push(GroupMember::NodeTypes(kinds));
            }
            _ => {
                return Err(unknown(
                    key,
                    "name, use, port-guid, port-name, partition, pkey, node-type",
                    "end-port-group",
                ));
            }
        }
        Ok(())
    }

    fn vlarb(&mut self, scope: &mut VlArbScope, (key, value): (&str, &str)) -> Result<(), String> {
        match key {
            "group" => self.names(&mut scope.groups, value),
            "across" => self.names(&mut scope.across, value),
            "vl-high-limit" => {
                let n = bounded(value, 0, 255, "vl-high-limit")? as u8;
                self.once("vl-high-limit", || scope.vl_high_limit = Some(n))
            }
            "vlarb-high" => {
                let t = vlarb_list(value)?;
                self.once("vlarb-high", || scope.vlarb_high = t)
            }
            "vlarb-low" => {
                let t = vlarb_list(value)?;
                self.once("vlarb-low", || scope.vlarb_low = t)
            }
            _ => Err(unknown(key, "group, across, vl-high-limit, vlarb-high, vlarb-low", "end-vlarb-scope")),
        }
    }

    fn sl2vl(&mut self, scope: &mut Sl2VlScope, (key, value): (&str, &str)) -> Result<(), String> {
        match key {
            "group" => self.names(&mut scope.groups, value),
            "across" => self.names(&mut scope.across, value),
            "across-to" => self.names(&mut scope.across_to, value),
            "across-from" => self.names(&mut scope.across_from, value),
            "from" => {
                let sel = port_sel(value)?;
                self.once("from", || scope.from = Some(sel))
            }
            "to" => {
                let sel = port_sel(value)?;
                self.once("to", || scope.to = Some(sel))
            }
            "sl2vl-table" => {
                let t = sl2vl_list(value)?;
                self.once("sl2vl-table", || scope.table = Some(t))
            }
            _ => Err(unknown(key, "group, across, across-to, across-from, from, to, sl2vl-table", "end-sl2vl-scope")),
        }
    }

    fn level(&mut self, level: &mut QosLevel, has_sl: &mut bool, (key, value): (&str, &str)) -> Result<(), String> {
        match key {
            "name" => self.once("name", || unquote(value).clone_into(&mut level.name)),
            "use" => self.once("use", || level.use_text = Some(value.to_owned())),
            "sl" => {
                let n = bounded(value, 0, 15, "SL")? as u8;
                *has_sl = true;
                self.once("sl", || level.sl = n)
            }
            "mtu-limit" => {
                let n = bounded(value, 1, 5, "mtu-limit (1=256 .. 5=4096)")? as u8;
                self.once("mtu-limit", || level.mtu_limit = Some(n))
            }
            "rate-limit" => {
                let n = bounded(value, 2, 63, "rate-limit (IBA rate code)")? as u8;
                self.once("rate-limit", || level.rate_limit = Some(n))
            }
            "packet-life" => {
                let n = bounded(value, 0, 31, "packet-life")? as u8;
                self.once("packet-life", || level.packet_life = Some(n))
            }
            "pkey" => {
                // Bases: the membership bit of each end is dropped (as OpenSM reads them).
                let base = |r: Range| {
                    let (a, b) = (r.lo & 0x7fff, r.hi & 0x7fff);
                    Range { lo: a.min(b), hi: a.max(b) }
                };
                level.pkeys.extend(ranges(value, 0xffff, "P_Key")?.into_iter().map(base));
                Ok(())
            }
            "path-bits" => {
                level.path_bits.extend(ranges(value, 0x7f, "path bits")?);
                Ok(())
            }
            _ => {
                Err(unknown(key, "name, use, sl, mtu-limit, rate-limit, packet-life, pkey, path-bits", "end-qos-level"))
            }
        }
    }

    fn rule(&mut self, rule: &mut MatchRule, (key, value): (&str, &str)) -> Result<(), String> {
        match key {
            "use" => self.once("use", || rule.use_text = Some(value.to_owned())),
            "qos-class" => {
                rule.qos_class.extend(ranges(value, 0xfff, "QoS class")?);
                Ok(())
            }
            "source" => self.names(&mut rule.source, value),
            "destination" => self.names(&mut rule.destination, value),
            "service-id" => {
                rule.service_id.extend(ranges(value, u64::MAX, "service ID")?);
                Ok(())
            }
            "pkey" => {
                rule.pkey.extend(ranges(value, 0xffff, "P_Key")?);
                Ok(())
            }
            "qos-level-name" => {
                let name = unquote(value).to_owned();
                self.once("qos-level-name", || rule.level = name)
            }
            _ => Err(unknown(
                key,
                "use, qos-class, source, destination, service-id, pkey, qos-level-name",
                "end-qos-match-rule",
            )),
        }
    }
}

/// Records that `key` was set in this block; a second time is an error.
fn set_once(seen: &mut Vec<&'static str>, key: &'static str, set: impl FnOnce()) -> Result<(), String> {
    if seen.contains(&key) {
        return Err(format!("{key} is given twice in this block"));
    }
    seen.push(key);
    set();
    Ok(())
}

fn key_value<'a>(l: &'a str, closer: &str) -> Result<(&'a str, &'a str), String> {
    match l.split_once(':') {
        Some((k, v)) if !v.trim().is_empty() => Ok((k.trim(), v.trim())),
        Some((k, _)) => Err(format!("{} has no value", k.trim())),
        None => Err(format!("expected `key: value` or {closer}, found {l:?}")),
    }
}

fn unknown(k: &str, expected: &str, closer: &str) -> String {
    format!("unknown key {k:?} (expected {expected} or {closer})")
}

fn port_name(n: &str) -> Result<GroupMember, String> {
    let bad = || format!("bad port-name {n:?}: expected NodeDescription/P<port number>, e.g. \"node1 HCA-1/P1\"");
    let slash = n.rfind('/').ok_or_else(bad)?;
    let (desc, rest) = (&n[..slash], &n[slash + 1..]);
    let num = rest.strip_prefix('P').or_else(|| rest.strip_prefix('p')).ok_or_else(bad)?;
    let port = bounded(num, 0, 254, "port number")? as u8;
    if desc.trim().is_empty() {
        return Err(bad());
    }
    Ok(GroupMember::PortName { node_desc: desc.trim().to_owned(), port })
}

fn node_type(n: &str) -> Result<NodeTypeSel, String> {
    match n.to_ascii_uppercase().as_str() {
        "CA" => Ok(NodeTypeSel::Ca),
        "SWITCH" => Ok(NodeTypeSel::Switch),
        "ROUTER" => Ok(NodeTypeSel::Router),
        "ALL" => Ok(NodeTypeSel::All),
        "SELF" => Ok(NodeTypeSel::SelfPort),
        _ => Err(format!("unknown node-type {n:?} (expected CA, SWITCH, ROUTER, ALL or SELF)")),
    }
}

fn port_sel(v: &str) -> Result<PortSel, String> {
    if v.trim() == "*" {
        return Ok(PortSel::All);
    }
    let mut ports = Vec::new();
    for r in ranges(v, 254, "port number")? {
        ports.extend((r.lo..=r.hi).map(|p| p as u8));
    }
    Ok(PortSel::Ports(ports))
}

/// Shifts TCP port ranges into a ULP's service-ID space.
fn service_ids(ports: &str, base: u64) -> Result<Vec<Range>, String> {
    Ok(ranges(ports, 0xffff, "TCP port number")?
        .into_iter()
        .map(|r| Range { lo: base + r.lo, hi: base + r.hi })
        .collect())
}

/// One `qos-ulps` line: `<ulp>[, <criterion> <values>] : <sl>`.
fn ulp(l: &str, line: u32) -> Result<UlpRule, String> {
    let Some((head, sl)) = l.rsplit_once(':') else {
        return Err(format!("expected `<ulp>[, <criterion> <values>] : <sl>` or end-qos-ulps, found {l:?}"));
    };
    let sl = bounded(sl, 0, 15, "SL")? as u8;
    let (name, crit) = match head.split_once(',') {
        Some((n, c)) => (n.trim(), Some(c.trim())),
        None => (head.trim(), None),
    };
    let (ckey, cval) = match crit {
        Some(c) => {
            let (k, v) = c.split_once(char::is_whitespace).ok_or_else(|| format!("{c:?} has no values"))?;
            (Some(k), v.trim())
        }
        None => (None, ""),
    };
    let name_lc = name.to_ascii_lowercase();
    let bad_crit = |expected: &str| format!("{name} takes {expected}, found {:?}", crit.unwrap_or(""));
    let matcher = match (name_lc.as_str(), ckey) {
        ("default", None) => UlpMatch::Default,
        ("any", Some("service-id")) => UlpMatch::AnyServiceId(ranges(cval, u64::MAX, "service ID")?),
        ("any", Some("pkey")) => UlpMatch::AnyPkey(ranges(cval, 0xffff, "P_Key")?),
        ("any", Some("target-port-guid")) => UlpMatch::AnyTargetPortGuid(ranges(cval, u64::MAX, "port GUID")?),
        ("any", Some("source-port-guid")) => UlpMatch::AnySourcePortGuid(ranges(cval, u64::MAX, "port GUID")?),
        ("any", Some("source-target-port-guid")) => {
            UlpMatch::AnySourceTargetPortGuid(ranges(cval, u64::MAX, "port GUID")?)
        }
        ("any", _) => {
            return Err(bad_crit("service-id, pkey, target-port-guid, source-port-guid or source-target-port-guid"));
        }
        ("sdp", None) => UlpMatch::Sdp(vec![Range { lo: SDP_SERVICE_BASE, hi: SDP_SERVICE_BASE + 0xffff }]),
        ("sdp", Some("port-num")) => UlpMatch::Sdp(service_ids(cval, SDP_SERVICE_BASE)?),
        ("rds", None) => UlpMatch::Rds(vec![Range::one(RDS_ISER_SERVICE_BASE + RDS_DEFAULT_PORT)]),
        ("rds", Some("port-num")) => UlpMatch::Rds(service_ids(cval, RDS_ISER_SERVICE_BASE)?),
        ("iser", None) => UlpMatch::Iser(vec![Range::one(RDS_ISER_SERVICE_BASE + ISER_DEFAULT_PORT)]),
        ("iser", Some("port-num")) => UlpMatch::Iser(service_ids(cval, RDS_ISER_SERVICE_BASE)?),
        ("sdp" | "rds" | "iser", _) => return Err(bad_crit("no criterion or port-num")),
        ("srp", Some("target-port-guid")) => UlpMatch::Srp(ranges(cval, u64::MAX, "port GUID")?),
        ("srp", _) => return Err(bad_crit("target-port-guid")),
        ("ipoib", None) => UlpMatch::Ipoib(vec![Range::one(DEFAULT_PKEY)]),
        ("ipoib", Some("pkey")) => UlpMatch::Ipoib(ranges(cval, 0xffff, "P_Key")?),
        ("ipoib", _) => return Err(bad_crit("no criterion or pkey")),
        ("default", Some(_)) => return Err(bad_crit("no criterion")),
        _ => return Err(format!("unknown ULP {name:?} (expected default, any, sdp, rds, iser, srp or ipoib)")),
    };
    Ok(UlpRule { matcher, sl, line })
}
