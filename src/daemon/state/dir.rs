//! Holding the state directory: one SM at a time, and no state file kept as a symbolic link.
//!
//! [`StateDir::acquire`] is the first thing `ibsm run` does with the directory, before any file
//! in it is read or written: it takes an exclusive `flock(2)` on `ibsm.lock` there (holding the
//! owner's PID, for the message a second SM prints) and keeps it until the value is dropped or
//! the process ends; the kernel releases it when the SM dies, so a stale lock file never blocks
//! a restart. It then refuses any state file that is a symbolic link: the writers replace a
//! file by renaming a new one over it, which would replace the link and leave its target stale.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use super::{DISABLED_PORTS, GUID2LID, GUID2MKEY, MKEY_SECRET, NEIGHBORS, PKEYS, StateError};

/// File name of the lock inside the state directory.
pub const LOCK: &str = "ibsm.lock";

/// The state directory, held by this process (see the module doc).
#[derive(Debug)]
pub struct StateDir {
    path: PathBuf,
    /// Open for as long as the lock is held.
    _lock: File,
}

impl StateDir {
    /// Creates `dir` if needed, locks it, and checks that no state file in it is a symbolic
    /// link.
    ///
    /// # Errors
    /// [`StateError::InUse`] when another process holds the lock (with its PID when it wrote
    /// one); [`StateError::Symlink`] for a state file that is a link; [`StateError::Io`] when
    /// the directory or the lock file cannot be made.
    pub fn acquire(dir: &Path) -> Result<StateDir, StateError> {
        use std::os::unix::fs::OpenOptionsExt;
        let io = |path: &Path| {
            let path = path.to_owned();
            move |source| StateError::Io { path, source }
        };
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let path = dir.join(LOCK);
        refuse_symlink(&path)?;
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(io(&path))?;
        // std's flock(LOCK_EX | LOCK_NB) wrapper (Rust 1.89, the workspace's rust-version): no
        // `unsafe` outside the umad transport.
        let locked = file.try_lock();
        match locked {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut text = String::new();
                let _ = Read::by_ref(&mut file).take(64).read_to_string(&mut text);
                return Err(StateError::InUse { dir: dir.to_owned(), pid: text.trim().parse().ok() });
            }
            Err(std::fs::TryLockError::Error(source)) => return Err(StateError::Io { path, source }),
        }
        // Ours now: say who holds it.
        file.set_len(0).map_err(io(&path))?;
        file.rewind().map_err(io(&path))?;
        writeln!(file, "{}", std::process::id()).map_err(io(&path))?;
        for name in [GUID2LID, PKEYS, GUID2MKEY, NEIGHBORS, DISABLED_PORTS, MKEY_SECRET] {
            refuse_symlink(&dir.join(name))?;
        }
        Ok(StateDir { path: dir.to_owned(), _lock: file })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// [`StateError::Symlink`] when `path` is a symbolic link (a missing file is fine).
fn refuse_symlink(path: &Path) -> Result<(), StateError> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            let target = std::fs::read_link(path).unwrap_or_default();
            Err(StateError::Symlink { path: path.to_owned(), target })
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmpdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("ibsm-statedir-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn one_holder_at_a_time_and_the_second_hears_the_pid() {
        let d = tmpdir("lock");
        let held = StateDir::acquire(&d).expect("first");
        assert_eq!(held.path(), d);
        let pid = std::process::id();
        assert_eq!(std::fs::read_to_string(d.join(LOCK)).expect("lock file"), format!("{pid}\n"));
        // A second open file description conflicts, even in the same process (flock semantics).
        let e = StateDir::acquire(&d).expect_err("in use");
        assert_eq!(e.to_string(), format!("state directory {} is in use by PID {pid}", d.display()));
        drop(held);
        StateDir::acquire(&d).expect("free again once dropped");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_symlinked_state_file_is_refused() {
        let d = tmpdir("symlink");
        std::fs::create_dir_all(&d).expect("dir");
        let target = d.join("elsewhere");
        std::fs::write(&target, "").expect("target");
        std::os::unix::fs::symlink(&target, d.join(PKEYS)).expect("symlink");
        let e = StateDir::acquire(&d).expect_err("symlink");
        let msg = e.to_string();
        assert!(msg.starts_with(&format!("{}: a symbolic link", d.join(PKEYS).display())), "{msg}");
        let _ = std::fs::remove_dir_all(&d);
    }
}
