//! OpenSM's GUID list files (`root_guid_file`, and the same form for `cn_guid_file`,
//! `io_guid_file`): one GUID per line, `0x` and hex digits (the prefix optional), blank lines
//! and `#` comments ignored, a `#` after the GUID too.
//!
//! Owns [`parse`] and [`load`]: a bad line is refused with the file, line and reason, and the
//! whole file with it; a file is read only if it is a regular file of at most 1 MiB.

use std::path::Path;

use ibsm_mad::Guid;

/// The largest file read (about 50,000 GUIDs).
const LIMIT: u64 = 1 << 20;

/// The GUIDs of `text` in file order, duplicates dropped; `origin` names the file in errors.
///
/// # Errors
/// `ORIGIN:LINE: reason` for the first bad line.
pub fn parse(text: &str, origin: &str) -> Result<Vec<Guid>, String> {
    let mut out: Vec<Guid> = Vec::new();
    // Repeats are dropped in linear time: a 1 MiB file holds about 50,000 lines.
    let mut seen = std::collections::HashSet::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        let hex = line.strip_prefix("0x").or_else(|| line.strip_prefix("0X")).unwrap_or(line);
        let guid = (!hex.is_empty() && hex.len() <= 16)
            .then(|| u64::from_str_radix(hex, 16).ok())
            .flatten()
            .filter(|&g| g != 0)
            .ok_or_else(|| format!("{origin}:{}: {line:?} is not a GUID (0x and up to 16 hex digits, not 0)", i + 1))?;
        if seen.insert(guid) {
            out.push(Guid(guid));
        }
    }
    Ok(out)
}

/// Reads and parses the file at `path`.
///
/// # Errors
/// The file cannot be read (not a regular file, over 1 MiB, not UTF-8), or a bad line.
pub fn load(path: &Path) -> Result<Vec<Guid>, String> {
    let origin = path.display().to_string();
    let bytes = ibsm_topology::file::read_bytes(path, LIMIT).map_err(|e| format!("{origin}: {e}"))?;
    let text = String::from_utf8(bytes).map_err(|_| format!("{origin}: not UTF-8 text"))?;
    parse(&text, &origin)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guids_comments_and_blank_lines() {
        let text = "# spines\n0x0002c90300000001\n\n  2C90300000002  # no prefix, upper case\n0x0002c90300000001\n";
        assert_eq!(parse(text, "r").unwrap(), [Guid(0x0002_c903_0000_0001), Guid(0x2_c903_0000_0002)]);
        assert_eq!(parse("", "r").unwrap(), []);
    }

    #[test]
    fn bad_lines_name_the_file_and_line() {
        for (text, line) in [("0x1\nspine-1\n", 2), ("0x\n", 1), ("0x0\n", 1), ("0x1234567890abcdef0\n", 1)] {
            let e = parse(text, "roots.txt").unwrap_err();
            assert!(e.starts_with(&format!("roots.txt:{line}: ")), "{e}");
        }
    }

    #[test]
    fn any_text_is_parsed_or_refused_without_panic() {
        for text in super::super::random_texts(b"0x1aF# \n\tgz9", 2000) {
            if let Ok(g) = parse(&text, "f") {
                assert!(g.iter().all(|g| g.0 != 0));
            }
        }
    }
}
