//! Reading a file named by an operator or kept in the state directory, bounded: only a regular
//! file, and at most a given number of bytes. `/dev/zero` or `/dev/urandom` would otherwise be
//! read until memory runs out, and a FIFO would block the open (and the SM's start) forever.
//!
//! This is the one reader behind every file the SM reads (its config, the partition policy, the
//! SM_Key and M_Key secrets, the state files) and behind `.net` files and their `include`s. It
//! lives in this crate, the lowest one that reads files, so that the `.net` reader and the SM
//! (which depends on this crate) share it. It touches nothing but the file it is given.

use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Size limit for `.net` files and each of their includes: a 3-level fat tree of 48-port
/// switches (27,648 CAs) is 6.3 MB as `ibsm sim gen` writes it, and `ibnetdiscover`'s
/// decorated form of it about three times that.
pub const NET_LIMIT: u64 = 256 << 20;

/// The bytes of `path`, a regular file of at most `limit` bytes.
///
/// The file is opened with `O_NONBLOCK` (a FIFO does not block the open), its type is taken
/// from the opened descriptor (no race with a rename), and at most `limit + 1` bytes are read.
///
/// # Errors
/// The OS error of the open or the read (a missing file keeps [`io::ErrorKind::NotFound`]);
/// [`io::ErrorKind::InvalidInput`] with "not a regular file (a FIFO)" and the like; and
/// [`io::ErrorKind::FileTooLarge`] with "larger than N MiB".
pub fn read_bytes(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    read_with_metadata(path, limit).map(|(bytes, _)| bytes)
}

/// [`read_bytes`], with the metadata of the file read (its mode, owner), taken from the same
/// open descriptor.
///
/// # Errors
/// As [`read_bytes`].
pub fn read_with_metadata(path: &Path, limit: u64) -> io::Result<(Vec<u8>, std::fs::Metadata)> {
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
    let meta = file.metadata()?;
    let kind = meta.file_type();
    if !kind.is_file() {
        let what = if kind.is_dir() {
            "a directory"
        } else if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_char_device() {
            "a character device"
        } else if kind.is_block_device() {
            "a block device"
        } else if kind.is_socket() {
            "a socket"
        } else {
            "not a file"
        };
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("not a regular file ({what})")));
    }
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(io::Error::new(io::ErrorKind::FileTooLarge, format!("larger than {}", size(limit))));
    }
    Ok((bytes, meta))
}

/// The text of `path`, a regular file of at most `limit` bytes holding UTF-8.
///
/// # Errors
/// As [`read_bytes`], and [`io::ErrorKind::InvalidData`] "not UTF-8 text".
pub fn read_text(path: &Path, limit: u64) -> io::Result<String> {
    String::from_utf8(read_bytes(path, limit)?)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8 text"))
}

/// `limit` for people: `64 MiB`, `64 KiB`, or bytes.
fn size(limit: u64) -> String {
    if limit >= 1 << 20 && limit.is_multiple_of(1 << 20) {
        format!("{} MiB", limit >> 20)
    } else if limit >= 1 << 10 && limit.is_multiple_of(1 << 10) {
        format!("{} KiB", limit >> 10)
    } else {
        format!("{limit} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("ibsm-file-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("temp dir");
        d
    }

    #[test]
    fn regular_files_up_to_the_limit_are_read() {
        let d = tmp("regular");
        let p = d.join("f");
        std::fs::write(&p, "0123456789").expect("write");
        assert_eq!(read_text(&p, 10).expect("at the limit"), "0123456789");
        let e = read_text(&p, 9).expect_err("over");
        assert_eq!(e.to_string(), "larger than 9 bytes");
        assert_eq!(read_text(&d.join("none"), 10).expect_err("missing").kind(), io::ErrorKind::NotFound);
        std::fs::write(&p, [0xff, 0xfe]).expect("write");
        assert_eq!(read_text(&p, 10).expect_err("binary").to_string(), "not UTF-8 text");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn devices_fifos_and_directories_are_refused_at_once() {
        for (path, what) in [("/dev/zero", "a character device"), ("/dev/urandom", "a character device")] {
            let e = read_bytes(Path::new(path), 1 << 20).expect_err(path);
            assert_eq!(e.to_string(), format!("not a regular file ({what})"));
        }
        let d = tmp("fifo");
        assert_eq!(read_bytes(&d, 10).expect_err("dir").to_string(), "not a regular file (a directory)");
        let fifo = d.join("fifo");
        let status = std::process::Command::new("mkfifo").arg(&fifo).status().expect("mkfifo runs");
        assert!(status.success());
        // Without a writer a blocking open would never return.
        let e = read_bytes(&fifo, 10).expect_err("fifo");
        assert_eq!(e.to_string(), "not a regular file (a FIFO)");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn sizes_read_well() {
        assert_eq!(size(64 << 20), "64 MiB");
        assert_eq!(size(64 << 10), "64 KiB");
        assert_eq!(size(1000), "1000 bytes");
    }
}
