//! Reading OpenSM's `opensm-lfts.dump` (and `ibsm routes dump --format opensm`) back into
//! per-switch tables, so tables from a live OpenSM or ibsm fabric can be checked and compared.

use std::collections::BTreeMap;

use ibsm_mad::{Guid, Lid, PortNum};

/// One switch's table from a dump.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpedSwitch {
    /// Switch LID from the header.
    pub lid: Lid,
    /// Switch GUID from the header.
    pub guid: Guid,
    /// Name from the header.
    pub name: String,
    /// Routed LIDs and their egress ports.
    pub routes: BTreeMap<u16, PortNum>,
    /// Port GUID named on each LID's line (what owns the LID).
    pub owners: BTreeMap<u16, Guid>,
}

/// A malformed dump: line and reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct DumpError {
    /// 1-based line.
    pub line: usize,
    /// What is wrong.
    pub reason: String,
}

/// The tables of a dump for the `file` engine, by switch GUID.
pub fn given_tables(dumped: &[DumpedSwitch]) -> ibsm_routing::file::GivenTables {
    ibsm_routing::file::GivenTables::new(
        dumped.iter().map(|d| (d.guid, d.routes.iter().map(|(&lid, &port)| (Lid(lid), port)).collect())),
    )
}

/// Reads the dump at `path` (a regular file of at most 4 GiB) into tables for the `file` engine.
///
/// # Errors
/// The file cannot be read, or `FILE:LINE: reason` for a malformed line.
pub fn load_tables(path: &std::path::Path) -> Result<ibsm_routing::file::GivenTables, String> {
    let text = ibsm_topology::file::read_text(path, 4 << 30).map_err(|e| format!("{}: {e}", path.display()))?;
    let dumped = parse(&text).map_err(|e| format!("{}:{}: {}", path.display(), e.line, e.reason))?;
    Ok(given_tables(&dumped))
}

/// Parses a whole dump.
///
/// # Errors
/// [`DumpError`] for a line that is neither a header, a LID line, a footer nor blank.
pub fn parse(text: &str) -> Result<Vec<DumpedSwitch>, DumpError> {
    let mut out: Vec<DumpedSwitch> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        let err = |reason: &str| DumpError { line: i + 1, reason: reason.to_owned() };
        if line.is_empty() || line.ends_with("lids dumped") {
            continue;
        }
        if let Some(rest) = line.strip_prefix("Unicast lids [") {
            out.push(header(rest).ok_or_else(|| err("malformed 'Unicast lids' header"))?);
            continue;
        }
        let sw = out.last_mut().ok_or_else(|| err("LID line before any switch header"))?;
        let (lid, port, owner) = lid_line(line).ok_or_else(|| err("expected '0xLLLL PPP # ...'"))?;
        sw.routes.insert(lid, PortNum(port));
        if let Some(g) = owner {
            sw.owners.insert(lid, g);
        }
    }
    Ok(out)
}

/// `0-27] of switch Lid 9 guid 0x0002000000000000 ('spine-0'):`
fn header(rest: &str) -> Option<DumpedSwitch> {
    let (_, rest) = rest.split_once("] of switch Lid ")?;
    let (lid, rest) = rest.split_once(" guid ")?;
    let (guid, rest) = rest.split_once(' ')?;
    let name = rest.strip_prefix("('")?.strip_suffix("'):")?;
    Some(DumpedSwitch {
        lid: Lid(lid.trim().parse().ok()?),
        guid: guid.parse().ok()?,
        name: name.to_owned(),
        routes: BTreeMap::new(),
        owners: BTreeMap::new(),
    })
}

/// `0x0008 001 # Channel Adapter portguid 0x0001000000000001: 'h0'`
fn lid_line(line: &str) -> Option<(u16, u8, Option<Guid>)> {
    let mut it = line.split_whitespace();
    let lid = u16::from_str_radix(it.next()?.strip_prefix("0x")?, 16).ok()?;
    let port: u8 = it.next()?.parse().ok()?;
    let owner =
        line.split_once("portguid ").and_then(|(_, r)| r.split(':').next()).and_then(|g| g.trim().parse::<Guid>().ok());
    Some((lid, port, owner))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_headers_lines_and_owners() {
        let text = "Unicast lids [0-27] of switch Lid 9 guid 0x0002000000000000 ('spine-0'):\n\
                    0x0008 001 # Channel Adapter portguid 0x0001000000000001: 'h0'\n\
                    0x0009 000 # Switch portguid 0x0002000000000000: 'spine-0'\n27 lids dumped\n";
        let d = parse(text).expect("parses");
        assert_eq!(d.len(), 1);
        assert_eq!((d[0].lid, d[0].guid, d[0].name.as_str()), (Lid(9), Guid(0x2_0000_0000_0000), "spine-0"));
        assert_eq!(d[0].routes.get(&8), Some(&PortNum(1)));
        assert_eq!(d[0].owners.get(&9), Some(&Guid(0x2_0000_0000_0000)));
    }

    #[test]
    fn malformed_lines_are_errors_with_line_numbers() {
        assert_eq!(parse("0x0001 001 # x\n").expect_err("no header").line, 1);
        let e = parse("Unicast lids [0-3] of switch Lid 1 guid 0x1 ('a'):\ngarbage\n").expect_err("bad line");
        assert_eq!(e.line, 2);
        assert!(parse("Unicast lids [0-3] of switch Lid x guid 0x1 ('a'):\n").is_err());
    }
}
