//! The SM's state directory: persisted tables (`guid2lid`, the P_Key table layouts `pkeys`),
//! read at start and written
//! atomically (temporary file, fsync, rename, directory fsync) so that a crash never leaves a
//! torn file behind.

use std::io::Write;
use std::path::{Path, PathBuf};

use std::collections::BTreeMap;

use ibsm_mad::{Guid, PKey};

use crate::core::lids::Guid2Lid;

/// File name of the GUID-to-LID table inside the state directory (OpenSM's name and format).
pub const GUID2LID: &str = "guid2lid";
/// File name of the P_Key table layouts inside the state directory: one line per table,
/// `0x<port GUID> 0x<P_Key at index 0> 0x<at index 1> ...` (0x0000 for an empty slot).
pub const PKEYS: &str = "pkeys";

/// Why the state directory could not be used.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A persisted table is malformed.
    #[error("{path}:{line}: {reason}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        reason: String,
    },
}

/// Wraps an I/O error with the file it concerns.
fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StateError + '_ {
    move |source| StateError::Io { path: path.to_owned(), source }
}

/// Reads `guid2lid` from `path`; a missing file is an empty table.
///
/// # Errors
/// [`StateError`] for an unreadable or malformed file.
pub fn load_guid2lid(path: &Path) -> Result<Guid2Lid, StateError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Guid2Lid::parse(&text).map_err(|e| StateError::Parse {
            path: path.to_owned(),
            line: e.line,
            reason: e.kind.to_string(),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Guid2Lid::default()),
        Err(source) => Err(StateError::Io { path: path.to_owned(), source }),
    }
}

/// Writes `table` to `path` atomically.
///
/// # Errors
/// [`StateError::Io`] when any step fails; the old file is then left as it was.
pub fn save_guid2lid(path: &Path, table: &Guid2Lid) -> Result<(), StateError> {
    write_atomically(path, table.to_string().as_bytes())
}

/// Reads the P_Key layouts from `path`; a missing file is none.
///
/// # Errors
/// [`StateError`] for an unreadable or malformed file.
pub fn load_pkeys(path: &Path) -> Result<BTreeMap<Guid, Vec<PKey>>, StateError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(source) => return Err(StateError::Io { path: path.to_owned(), source }),
    };
    let hex = |w: &str| w.strip_prefix("0x").and_then(|h| u64::from_str_radix(h, 16).ok());
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let mut words = line.split_whitespace();
        let Some(first) = words.next() else { continue };
        let bad = |reason: &str| StateError::Parse { path: path.to_owned(), line: i + 1, reason: reason.to_owned() };
        let guid = hex(first).ok_or_else(|| bad("expected a GUID as 0x<hex>"))?;
        let keys = words
            .map(|w| hex(w).and_then(|k| u16::try_from(k).ok()).map(PKey))
            .collect::<Option<Vec<PKey>>>()
            .ok_or_else(|| bad("expected P_Keys as 0x<hex>"))?;
        out.insert(Guid(guid), keys);
    }
    Ok(out)
}

/// Writes the P_Key layouts to `path` atomically.
///
/// # Errors
/// [`StateError::Io`] when any step fails; the old file is then left as it was.
pub fn save_pkeys(path: &Path, layouts: &BTreeMap<Guid, Vec<PKey>>) -> Result<(), StateError> {
    use std::fmt::Write as _;
    let mut text = String::new();
    for (guid, keys) in layouts {
        let _ = write!(text, "0x{:016x}", guid.0);
        for k in keys {
            let _ = write!(text, " 0x{:04x}", k.0);
        }
        text.push('\n');
    }
    write_atomically(path, text.as_bytes())
}

/// Writes `bytes` to `path` atomically: a temporary file in the same directory, fsync, rename,
/// then fsync of the directory.
///
/// # Errors
/// [`StateError::Io`] naming the file that failed.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), StateError> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp.{}", std::process::id()));
    let mut f = std::fs::File::create(&tmp).map_err(io(&tmp))?;
    f.write_all(bytes).map_err(io(&tmp))?;
    f.sync_all().map_err(io(&tmp))?;
    drop(f);
    std::fs::rename(&tmp, path).map_err(io(path))?;
    // Make the rename itself durable.
    if let Ok(d) = std::fs::File::open(dir) {
        d.sync_all().map_err(io(dir))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibsm_mad::Lid;

    fn tmpdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("ibsm-state-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("temp dir");
        d
    }

    #[test]
    fn round_trip_and_missing_file() {
        let d = tmpdir("rt");
        let p = d.join(GUID2LID);
        assert_eq!(load_guid2lid(&p).expect("missing is empty").iter().count(), 0);
        let mut t = Guid2Lid::default();
        t.insert(Guid(0x10_0001), Lid(4), Lid(7));
        save_guid2lid(&p, &t).expect("save");
        let back = load_guid2lid(&p).expect("load");
        assert_eq!(back.get(Guid(0x10_0001)), Some((Lid(4), Lid(7))));
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(&d).expect("dir").filter_map(Result::ok).map(|e| e.file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from(GUID2LID)]);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn pkey_layouts_round_trip_and_bad_lines_are_named() {
        let d = tmpdir("pkeys");
        let p = d.join(PKEYS);
        assert!(load_pkeys(&p).expect("missing is none").is_empty());
        let mut m = BTreeMap::new();
        m.insert(Guid(0x10_0001), vec![PKey(0x7fff), PKey(0), PKey(0x8001)]);
        save_pkeys(&p, &m).expect("save");
        assert_eq!(load_pkeys(&p).expect("load"), m);
        std::fs::write(&p, "0x0000000000100001 0x7fff\n0x12 zz\n").expect("write");
        assert!(load_pkeys(&p).expect_err("bad").to_string().starts_with(&format!("{}:2: ", p.display())));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn malformed_file_names_file_and_line() {
        let d = tmpdir("bad");
        let p = d.join(GUID2LID);
        std::fs::write(&p, "0x0000000000100001 0x0004 0x0004\n\nnot a record\n").expect("write");
        let e = load_guid2lid(&p).expect_err("malformed");
        let msg = e.to_string();
        assert!(msg.starts_with(&format!("{}:3: ", p.display())), "{msg}");
        let _ = std::fs::remove_dir_all(&d);
    }
}
