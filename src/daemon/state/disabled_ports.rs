//! The state directory's `disabled-ports`: the ports an operator disabled (`ibsm port
//! disable`), so that they stay disabled across restarts. One port a line, `0x<node GUID>
//! <port>`, in order; `#` starts a comment. Written atomically (temp, fsync, rename) when the
//! list changes and after every sweep; a missing file is an empty list.

use std::collections::BTreeSet;
use std::path::Path;

use ibsm_mad::Guid;

use super::{STATE_LIMIT, StateError, complete, read_if_present, write_atomically};

/// File name of the disabled ports inside the state directory.
pub const DISABLED_PORTS: &str = "disabled-ports";

/// Reads the disabled ports; a missing file is none.
///
/// # Errors
/// [`StateError`] for an unreadable file, a malformed line or a last line cut short (named).
pub fn load_disabled_ports(path: &Path) -> Result<BTreeSet<(Guid, u8)>, StateError> {
    let Some(text) = read_if_present(path, STATE_LIMIT)? else { return Ok(BTreeSet::new()) };
    complete(path, &text)?;
    parse(&text).map_err(|(line, reason)| StateError::Parse { path: path.to_owned(), line, reason })
}

/// Writes the disabled ports atomically.
///
/// # Errors
/// [`StateError::Io`] when any step fails; the old file is then left as it was.
pub fn save_disabled_ports(path: &Path, ports: &BTreeSet<(Guid, u8)>) -> Result<(), StateError> {
    write_atomically(path, text(ports).as_bytes())
}

/// The file's text.
pub(super) fn text(ports: &BTreeSet<(Guid, u8)>) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    for (g, p) in ports {
        let _ = writeln!(out, "0x{:016x} {p}", g.0);
    }
    out
}

/// The ports in `text`, or the first bad line (1-based) and why.
fn parse(text: &str) -> Result<BTreeSet<(Guid, u8)>, (usize, String)> {
    let mut out = BTreeSet::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("");
        match line.split_whitespace().collect::<Vec<_>>()[..] {
            [] => {}
            [g, p] => {
                let guid = g.strip_prefix("0x").and_then(|h| u64::from_str_radix(h, 16).ok());
                let port = p.parse::<u8>().ok().filter(|&p| p > 0);
                let (Some(g), Some(p)) = (guid, port) else {
                    return Err((i + 1, "expected 0x<node GUID> <port 1-255>".to_owned()));
                };
                out.insert((Guid(g), p));
            }
            _ => return Err((i + 1, "expected 2 fields: 0x<node GUID> <port>".to_owned())),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_round_trips_and_bad_lines_are_named() {
        let ports: BTreeSet<(Guid, u8)> = [(Guid(0x20), 3), (Guid(0x2_c903_0000_1234), 1)].into();
        let t = text(&ports);
        assert_eq!(t, "0x0000000000000020 3\n0x0002c90300001234 1\n");
        assert_eq!(parse(&t), Ok(ports));
        assert_eq!(parse("# maintenance\n\n0x20 3 # leaf-0\n"), Ok([(Guid(0x20), 3)].into()));
        assert_eq!(parse("0x20 3\n0x20\n").unwrap_err().0, 2);
        assert_eq!(parse("0x20 0\n").unwrap_err().0, 1, "port 0 has no link");
        assert_eq!(parse("20 3\n").unwrap_err().0, 1, "a GUID is written 0x...");
    }

    #[test]
    fn a_missing_file_is_none_and_a_saved_one_reads_back() {
        let dir = std::env::temp_dir().join(format!("ibsm-disabled-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join(DISABLED_PORTS);
        assert!(load_disabled_ports(&path).expect("missing is empty").is_empty());
        let ports: BTreeSet<(Guid, u8)> = [(Guid(0x20), 3)].into();
        save_disabled_ports(&path, &ports).expect("saved");
        assert_eq!(load_disabled_ports(&path).expect("read"), ports);
        std::fs::write(&path, "0x20 3").expect("cut short");
        assert!(load_disabled_ports(&path).is_err(), "a last line cut short is refused");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
