//! The SM's state directory: persisted tables (`guid2lid`, the P_Key table layouts `pkeys`,
//! the M_Keys ports hold `guid2mkey`, the neighbour map `neighbors`, the ports an operator
//! disabled `disabled-ports` ([`disabled_ports`])) and the M_Key secret `mkey-secret`, read at start and written atomically (temporary file, fsync, rename,
//! directory fsync) so that a crash never leaves a torn file behind. [`dir`] holds the
//! directory (one SM at a time, no state file kept as a symbolic link).
//!
//! Reading is strict, so that the SM never rewrites a file from a state it did not load: every
//! file is read only when it is a regular file within a size limit
//! ([`ibsm_topology::file`]), and checked whole; a malformed line, a GUID listed twice, two
//! GUIDs sharing a LID or a last line cut short refuses the file with `FILE:LINE: reason`, and
//! `ibsm run` then does not start. Files holding keys are created with mode 0600, and one
//! others may read (the SM_Key file, `mkey-secret`, `guid2mkey`) is refused.

use std::io::Write;
use std::path::{Path, PathBuf};

use std::collections::{BTreeMap, HashMap};

use ibsm_mad::{Guid, PKey};

use crate::core::Sm;
use crate::core::lids::Guid2Lid;
use crate::core::mkeys::MKeySecret;

pub mod dir;
pub mod disabled_ports;

pub use dir::{LOCK, StateDir};
pub use disabled_ports::{DISABLED_PORTS, load_disabled_ports, save_disabled_ports};

/// File name of the GUID-to-LID table inside the state directory (OpenSM's name and format).
pub const GUID2LID: &str = "guid2lid";
/// File name of the P_Key table layouts inside the state directory: one line per table,
/// `0x<port GUID> 0x<P_Key at index 0> 0x<at index 1> ...` (0x0000 for an empty slot).
pub const PKEYS: &str = "pkeys";
/// File name of the M_Keys the ports hold (OpenSM's name and format: `0x<port GUID> 0x<M_Key>`
/// per line).
pub const GUID2MKEY: &str = "guid2mkey";
/// File name of the neighbour map: `0x<node GUID> <port> 0x<port GUID cabled there>` per line
/// (what OpenSM keeps as `neighbors`, for the same reason: to know a port's M_Key before its
/// NodeInfo can be read); node 0, port 0 names the SM's own port.
pub const NEIGHBORS: &str = "neighbors";
/// File name of the secret per-port M_Keys are derived from: 32 hex digits.
pub const MKEY_SECRET: &str = "mkey-secret";

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
    /// Another process holds the state directory.
    #[error("state directory {} is in use by {}", dir.display(), pid.map_or_else(|| "another process (no PID in its lock file)".to_owned(), |p| format!("PID {p}")))]
    InUse {
        /// The directory.
        dir: PathBuf,
        /// The holder's PID, as it wrote it in the lock file.
        pid: Option<u32>,
    },
    /// A state file is a symbolic link.
    #[error("{}: a symbolic link (to {}); ibsm replaces state files by renaming a new file over them, which would leave the target stale: keep the file itself in the state directory", path.display(), target.display())]
    Symlink {
        /// The link.
        path: PathBuf,
        /// Where it points.
        target: PathBuf,
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

/// Reads `guid2lid` from `path`; a missing file is an empty table. The whole file is checked:
/// a malformed line, a GUID listed twice, two GUIDs sharing a LID, or a last line cut short
/// (no newline) refuses it.
///
/// # Errors
/// [`StateError`] for an unreadable or malformed file, with the line and the reason.
pub fn load_guid2lid(path: &Path) -> Result<Guid2Lid, StateError> {
    let Some(text) = read_if_present(path, STATE_LIMIT)? else { return Ok(Guid2Lid::default()) };
    complete(path, &text)?;
    Guid2Lid::parse(&text).map_err(|e| StateError::Parse {
        path: path.to_owned(),
        line: e.line,
        reason: e.kind.to_string(),
    })
}

/// Refuses a file whose last line has no newline: every writer ends each line with one, so the
/// file was cut short (a copy interrupted, a disk full) and its last value may be a prefix of
/// the real one.
fn complete(path: &Path, text: &str) -> Result<(), StateError> {
    if text.is_empty() || text.ends_with('\n') {
        return Ok(());
    }
    Err(StateError::Parse {
        path: path.to_owned(),
        line: text.lines().count(),
        reason: "the last line has no newline: the file is truncated".to_owned(),
    })
}

/// `0x` and exactly `digits` hexadecimal digits, as the state files' writers put them.
fn exact_hex(word: &str, digits: usize) -> Option<u64> {
    let h = word.strip_prefix("0x")?;
    (h.len() == digits && h.bytes().all(|b| b.is_ascii_hexdigit())).then(|| u64::from_str_radix(h, 16).ok())?
}

/// Size limit of a state file: a `guid2lid` for all 49,151 unicast LIDs is about 1.5 MB, and
/// `pkeys` for as many ports with 32 P_Keys each about 12 MB.
pub const STATE_LIMIT: u64 = 64 << 20;
/// Size limit of a file holding a key (the SM_Key file, `mkey-secret`): one line.
pub const SECRET_LIMIT: u64 = 64 << 10;

/// The text of `path`, or `None` when there is no such file (a state file not written yet).
/// Only a regular file of at most `limit` bytes is read.
fn read_if_present(path: &Path, limit: u64) -> Result<Option<String>, StateError> {
    match ibsm_topology::file::read_text(path, limit) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
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
    let Some(text) = read_if_present(path, STATE_LIMIT)? else { return Ok(BTreeMap::new()) };
    complete(path, &text)?;
    let mut out = BTreeMap::new();
    let mut first_line: HashMap<Guid, usize> = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let mut words = line.split_whitespace();
        let Some(first) = words.next() else { continue };
        let bad = |reason: String| StateError::Parse { path: path.to_owned(), line: i + 1, reason };
        let guid = Guid(
            exact_hex(first, 16)
                .ok_or_else(|| bad(format!("expected a GUID as 0x<16 hex digits>, found {first:?}")))?,
        );
        let mut keys = Vec::new();
        for w in words {
            let k = exact_hex(w, 4).ok_or_else(|| bad(format!("expected a P_Key as 0x<4 hex digits>, found {w:?}")))?;
            keys.push(PKey(k as u16));
        }
        if let Some(first) = first_line.insert(guid, i + 1) {
            return Err(bad(format!("GUID {guid} already listed on line {first}")));
        }
        out.insert(guid, keys);
    }
    Ok(out)
}

/// Writes the P_Key layouts to `path` atomically.
///
/// # Errors
/// [`StateError::Io`] when any step fails; the old file is then left as it was.
pub fn save_pkeys(path: &Path, layouts: &BTreeMap<Guid, Vec<PKey>>) -> Result<(), StateError> {
    write_atomically(path, pkeys_text(layouts).as_bytes())
}

/// The `pkeys` file's text.
fn pkeys_text(layouts: &BTreeMap<Guid, Vec<PKey>>) -> String {
    use std::fmt::Write as _;
    let mut text = String::new();
    for (guid, keys) in layouts {
        let _ = write!(text, "0x{:016x}", guid.0);
        for k in keys {
            let _ = write!(text, " 0x{:04x}", k.0);
        }
        text.push('\n');
    }
    text
}

/// Reads a `guid2mkey` file (ibsm's, or OpenSM's to take its keys over): `0x<port GUID>
/// 0x<M_Key>` per line; blank lines and `#` comments are skipped. A missing file is none. The
/// keys are secrets: a file others may read is refused, as the SM_Key file and `mkey-secret`
/// are.
///
/// # Errors
/// [`StateError`] for an unreadable or readable-by-others file, or one with a malformed line,
/// a GUID listed twice or a last line cut short (named).
pub fn load_guid2mkey(path: &Path) -> Result<HashMap<Guid, u64>, StateError> {
    let Some(text) = read_private(path, "the M_Keys", STATE_LIMIT)? else { return Ok(HashMap::new()) };
    complete(path, &text)?;
    parse_guid2mkey(&text).map_err(|(line, reason)| StateError::Parse { path: path.to_owned(), line, reason })
}

/// Parses `guid2mkey` text; `Err((line, reason))` for the first bad line (a GUID listed twice
/// included).
pub fn parse_guid2mkey(text: &str) -> Result<HashMap<Guid, u64>, (usize, String)> {
    let hex =
        |w: &str| w.strip_prefix("0x").or_else(|| w.strip_prefix("0X")).and_then(|h| u64::from_str_radix(h, 16).ok());
    let mut out = HashMap::new();
    let mut first_line: HashMap<Guid, usize> = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("");
        let words: Vec<&str> = line.split_whitespace().collect();
        match words[..] {
            [] => {}
            [g, k] => {
                let (Some(g), Some(k)) = (hex(g), hex(k)) else {
                    return Err((i + 1, "expected 0x<port GUID> 0x<M_Key>".to_owned()));
                };
                if let Some(first) = first_line.insert(Guid(g), i + 1) {
                    return Err((i + 1, format!("GUID {} already listed on line {first}", Guid(g))));
                }
                out.insert(Guid(g), k);
            }
            _ => return Err((i + 1, format!("expected 2 fields, found {}", words.len()))),
        }
    }
    Ok(out)
}

/// Writes the M_Keys ports hold to `path` atomically, mode 0600.
///
/// # Errors
/// [`StateError::Io`] when any step fails; the old file is then left as it was.
pub fn save_guid2mkey<S: std::hash::BuildHasher>(path: &Path, keys: &HashMap<Guid, u64, S>) -> Result<(), StateError> {
    write_file(path, guid2mkey_text(keys).as_bytes(), 0o600)
}

/// The `guid2mkey` file's text.
fn guid2mkey_text<S: std::hash::BuildHasher>(keys: &HashMap<Guid, u64, S>) -> String {
    use std::fmt::Write as _;
    let sorted: BTreeMap<&Guid, &u64> = keys.iter().collect();
    let mut text = String::new();
    for (g, k) in sorted {
        let _ = writeln!(text, "0x{:016x} 0x{k:016x}", g.0);
    }
    text
}

/// Reads the neighbour map; a missing file is none.
///
/// # Errors
/// [`StateError`] for an unreadable file, a malformed line, a port listed twice or a last line
/// cut short (named).
pub fn load_neighbors(path: &Path) -> Result<HashMap<(Guid, u8), Guid>, StateError> {
    let Some(text) = read_if_present(path, STATE_LIMIT)? else { return Ok(HashMap::new()) };
    complete(path, &text)?;
    let hex = |w: &str| w.strip_prefix("0x").and_then(|h| u64::from_str_radix(h, 16).ok());
    let mut out = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        match line.split_whitespace().collect::<Vec<_>>()[..] {
            [] => {}
            [n, p, g] => {
                let (Some(n), Ok(p), Some(g)) = (hex(n), p.parse::<u8>(), hex(g)) else {
                    let reason = "expected 0x<node GUID> <port> 0x<port GUID>".to_owned();
                    return Err(StateError::Parse { path: path.to_owned(), line: i + 1, reason });
                };
                if out.insert((Guid(n), p), Guid(g)).is_some() {
                    let reason = format!("port {p} of node {} listed twice", Guid(n));
                    return Err(StateError::Parse { path: path.to_owned(), line: i + 1, reason });
                }
            }
            _ => {
                let reason = "expected 3 fields".to_owned();
                return Err(StateError::Parse { path: path.to_owned(), line: i + 1, reason });
            }
        }
    }
    Ok(out)
}

/// Writes the neighbour map atomically.
///
/// # Errors
/// [`StateError::Io`] when any step fails; the old file is then left as it was.
pub fn save_neighbors<S: std::hash::BuildHasher>(
    path: &Path,
    map: &HashMap<(Guid, u8), Guid, S>,
) -> Result<(), StateError> {
    write_atomically(path, neighbors_text(map).as_bytes())
}

/// The `neighbors` file's text.
fn neighbors_text<S: std::hash::BuildHasher>(map: &HashMap<(Guid, u8), Guid, S>) -> String {
    use std::fmt::Write as _;
    let sorted: BTreeMap<&(Guid, u8), &Guid> = map.iter().collect();
    let mut text = String::new();
    for ((n, p), g) in sorted {
        let _ = writeln!(text, "0x{:016x} {p} 0x{:016x}", n.0, g.0);
    }
    text
}

/// Reads the SM_Key from `path`: `0x` and up to 16 hex digits, or decimal, on the first line.
/// A file others may read is refused (the key lets an SM take the subnet over).
///
/// # Errors
/// [`StateError`] for an unreadable, malformed or readable-by-others file.
pub fn load_sm_key(path: &Path) -> Result<u64, StateError> {
    let text = read_private(path, "the SM_Key", SECRET_LIMIT)?
        .ok_or_else(|| StateError::Io { path: path.to_owned(), source: std::io::ErrorKind::NotFound.into() })?;
    let bad = |reason: String| StateError::Parse { path: path.to_owned(), line: 1, reason };
    crate::daemon::config::parse_key(text.lines().next().unwrap_or("")).map_err(bad)
}

/// The text of a file holding a secret (`what`), `None` when there is no such file; refused when
/// others than its owner may read it (any of the bits 077 set). One rule for every secret file:
/// the SM_Key file, `mkey-secret` and `guid2mkey`.
fn read_private(path: &Path, what: &str, limit: u64) -> Result<Option<String>, StateError> {
    use std::os::unix::fs::PermissionsExt;
    let (bytes, meta) = match ibsm_topology::file::read_with_metadata(path, limit) {
        Ok(read) => read,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(StateError::Io { path: path.to_owned(), source }),
    };
    let mode = meta.permissions().mode();
    if mode & 0o077 != 0 {
        let reason = format!("mode {:o} lets others read {what}; chmod 600 it", mode & 0o777);
        return Err(StateError::Parse { path: path.to_owned(), line: 1, reason });
    }
    let text = String::from_utf8(bytes).map_err(|_| StateError::Io {
        path: path.to_owned(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text"),
    })?;
    Ok(Some(text))
}

/// The M_Key secret in `dir`, created (16 bytes from the OS's random source, mode 0600) when
/// there is none.
///
/// # Errors
/// [`StateError`] when it cannot be read or created, is malformed, or is readable by others.
pub fn load_or_create_mkey_secret(dir: &Path) -> Result<MKeySecret, StateError> {
    use std::io::Read;
    let path = dir.join(MKEY_SECRET);
    if let Some(text) = read_private(&path, "the secret", SECRET_LIMIT)? {
        let t = text.trim();
        let bytes: Option<Vec<u8>> = (t.len() == 32 && t.is_ascii())
            .then(|| (0..16).map(|i| u8::from_str_radix(&t[2 * i..2 * i + 2], 16).ok()).collect())
            .flatten();
        let b = bytes.ok_or_else(|| StateError::Parse {
            path: path.clone(),
            line: 1,
            reason: "expected 32 hex digits".to_owned(),
        })?;
        let mut secret = [0u8; 16];
        secret.copy_from_slice(&b);
        return Ok(MKeySecret(secret));
    }
    let mut secret = [0u8; 16];
    let random = Path::new("/dev/urandom");
    std::fs::File::open(random).and_then(|mut f| f.read_exact(&mut secret)).map_err(io(random))?;
    let mut text = String::with_capacity(33);
    for b in secret {
        use std::fmt::Write as _;
        let _ = write!(text, "{b:02x}");
    }
    text.push('\n');
    write_file(&path, text.as_bytes(), 0o600)?;
    Ok(MKeySecret(secret))
}

/// Writes what the state directory keeps after a sweep: `guid2lid` at `guid2lid`, and beside it
/// the P_Key layouts and the M_Keys the ports hold.
///
/// # Errors
/// [`StateError::Io`] naming the file that failed.
pub fn save_after_sweep(guid2lid: &Path, sm: &Sm) -> Result<(), StateError> {
    after_sweep_files(guid2lid, sm).write()
}

/// The state files after a sweep, rendered (`guid2lid` and the files beside it: `pkeys`,
/// `guid2mkey`, `neighbors`, `disabled-ports`), to be written now ([`StateFiles::write`]) or by a
/// [`StateWriter`].
pub fn after_sweep_files(guid2lid: &Path, sm: &Sm) -> StateFiles {
    StateFiles {
        files: vec![
            (guid2lid.to_owned(), sm.guid2lid().to_string(), 0o644),
            (guid2lid.with_file_name(PKEYS), pkeys_text(sm.pkey_layout()), 0o644),
            (guid2lid.with_file_name(GUID2MKEY), guid2mkey_text(sm.mkeys_held()), 0o600),
            (guid2lid.with_file_name(NEIGHBORS), neighbors_text(sm.mkey_neighbors()), 0o644),
            (guid2lid.with_file_name(DISABLED_PORTS), disabled_ports::text(sm.disabled_ports()), 0o644),
        ],
    }
}

/// Writes `disabled-ports` beside `guid2lid` now (the list changed between sweeps); a failure
/// is logged (`state-write-failed`) and the SM goes on: the next sweep writes it again.
pub fn record_disabled_ports(guid2lid: &Path, sm: &Sm) {
    let path = guid2lid.with_file_name(DISABLED_PORTS);
    if let Err(e) = save_disabled_ports(&path, sm.disabled_ports()) {
        tracing::error!(error_id = "state-write-failed", err = %e, "could not record the disabled ports");
    }
}

/// Rendered state files: (path, text, mode).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StateFiles {
    files: Vec<(PathBuf, String, u32)>,
}

impl StateFiles {
    /// Writes every file atomically, in order.
    ///
    /// # Errors
    /// [`StateError::Io`] for the first file that failed (the files before it are written).
    pub fn write(&self) -> Result<(), StateError> {
        for (path, text, mode) in &self.files {
            write_file(path, text.as_bytes(), *mode)?;
        }
        Ok(())
    }
}

/// Writes state files on a thread of its own, in the order they were handed over, skipping a
/// file whose text is what it last wrote there (a sweep that changed nothing costs no fsync).
/// Dropping it waits for the files handed over: nothing is lost at exit.
#[derive(Debug)]
pub struct StateWriter {
    tx: Option<std::sync::mpsc::Sender<StateFiles>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl StateWriter {
    /// Starts the thread; `on_error` hears each failed write (the SM goes on).
    ///
    /// # Errors
    /// The thread could not be started.
    pub fn start(on_error: impl Fn(&StateError) + Send + 'static) -> std::io::Result<StateWriter> {
        let (tx, rx) = std::sync::mpsc::channel::<StateFiles>();
        let thread = std::thread::Builder::new().name("ibsm-state".to_owned()).spawn(move || {
            let mut written: HashMap<PathBuf, String> = HashMap::new();
            while let Ok(mut set) = rx.recv() {
                // Only the newest of what waits matters.
                while let Ok(newer) = rx.try_recv() {
                    set = newer;
                }
                for (path, text, mode) in set.files {
                    if written.get(&path) == Some(&text) {
                        continue;
                    }
                    match write_file(&path, text.as_bytes(), mode) {
                        Ok(()) => {
                            written.insert(path, text);
                        }
                        Err(e) => on_error(&e),
                    }
                }
            }
        })?;
        Ok(StateWriter { tx: Some(tx), thread: Some(thread) })
    }

    /// Hands `files` over to be written.
    pub fn write(&self, files: StateFiles) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(files);
        }
    }
}

impl Drop for StateWriter {
    fn drop(&mut self) {
        drop(self.tx.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Writes `bytes` to `path` atomically: a temporary file in the same directory, fsync, rename,
/// then fsync of the directory.
///
/// # Errors
/// [`StateError::Io`] naming the file that failed.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), StateError> {
    write_file(path, bytes, 0o644)
}

/// [`write_atomically`] with the file created with `mode` (before the umask).
fn write_file(path: &Path, bytes: &[u8], mode: u32) -> Result<(), StateError> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp.{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(mode).open(&tmp).map_err(io(&tmp))?;
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
    fn guid2mkey_round_trips_private_and_bad_lines_are_named() {
        use std::os::unix::fs::PermissionsExt;
        let d = tmpdir("mkeys");
        let p = d.join(GUID2MKEY);
        assert!(load_guid2mkey(&p).expect("missing is none").is_empty());
        let keys: HashMap<Guid, u64> = [(Guid(0x10), 0xdead_beef), (Guid(0x2), u64::MAX)].into_iter().collect();
        save_guid2mkey(&p, &keys).expect("save");
        assert_eq!(load_guid2mkey(&p).expect("load"), keys);
        assert_eq!(std::fs::metadata(&p).expect("meta").permissions().mode() & 0o077, 0, "private");
        // OpenSM's layout, with blank lines and comments.
        let opensm = "0x0002c90300000001 0x0000000000000abc\n\n# note\n0x0002c90300000002 0x1\n";
        assert_eq!(parse_guid2mkey(opensm).expect("parses").len(), 2);
        assert_eq!(parse_guid2mkey("0x1 0x2\n0x3\n").expect_err("bad").0, 2);
        assert_eq!(parse_guid2mkey("0x1 zz\n").expect_err("bad").0, 1);
    }

    #[test]
    fn neighbors_round_trip_and_bad_lines_are_named() {
        let d = tmpdir("neighbors");
        let p = d.join(NEIGHBORS);
        assert!(load_neighbors(&p).expect("missing is none").is_empty());
        let m: HashMap<(Guid, u8), Guid> = [((Guid(1), 3), Guid(9)), ((Guid(2), 36), Guid(0x10))].into_iter().collect();
        save_neighbors(&p, &m).expect("save");
        assert_eq!(load_neighbors(&p).expect("load"), m);
        std::fs::write(&p, "0x1 3 0x9\n0x1 x 0x9\n").expect("write");
        assert!(load_neighbors(&p).expect_err("bad").to_string().starts_with(&format!("{}:2: ", p.display())));
    }

    #[test]
    fn the_sm_key_file_is_read_and_refused_when_readable_or_malformed() {
        use std::os::unix::fs::PermissionsExt;
        let d = tmpdir("smkey");
        let p = d.join("sm_key");
        std::fs::write(&p, "0x00000000000000ab\n").expect("write");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        assert_eq!(load_sm_key(&p).expect("read"), 0xab);
        std::fs::write(&p, "sesame\n").expect("write");
        assert!(load_sm_key(&p).expect_err("bad").to_string().starts_with(&format!("{}:1: ", p.display())));
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).expect("chmod");
        assert!(load_sm_key(&p).expect_err("readable").to_string().contains("chmod 600"));
    }

    #[test]
    fn the_mkey_secret_is_created_once_private_and_refused_when_readable() {
        use std::os::unix::fs::PermissionsExt;
        let d = tmpdir("secret");
        let a = load_or_create_mkey_secret(&d).expect("created");
        let b = load_or_create_mkey_secret(&d).expect("read back");
        assert_eq!(a, b, "the same secret on the next start");
        assert_ne!(a.0, [0; 16]);
        let p = d.join(MKEY_SECRET);
        assert_eq!(std::fs::metadata(&p).expect("meta").permissions().mode() & 0o777, 0o600);
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        assert!(load_or_create_mkey_secret(&d).expect_err("readable").to_string().contains("chmod 600"));
        std::fs::write(&p, "nothex\n").expect("write");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        assert!(load_or_create_mkey_secret(&d).is_err());
    }

    proptest::proptest! {
        /// Any text parses or is refused with a line number inside it; never a panic.
        #[test]
        fn guid2mkey_parser_never_panics(text in "[0-9a-fA-Fx# \n]{0,200}") {
            if let Err((line, _)) = parse_guid2mkey(&text) {
                proptest::prop_assert!(line >= 1 && line <= text.lines().count());
            }
        }
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
