//! The files `ibsm run` reads, handled as an adversary would hand them over: devices and FIFOs
//! in place of files (refused at once, in bounded time), a second SM on a live SM's state
//! directory (refused with the first one's PID), state files that are malformed, truncated,
//! readable by others or symbolic links (refused with `FILE:LINE` and the reason, and left as
//! they were: the SM never rewrites what it did not load).

mod support;

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::cmd::{root, tmp_dir};

const FABRIC: &str = "examples/fabrics/fat-tree-2l-k4.net";

/// How long a refused start may take at most (it takes milliseconds; the bound is for a
/// loaded machine).
const BOUND: Duration = Duration::from_secs(20);

/// A child killed if the test fails half-way.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `ibsm args...` from the repository root, killed (and the test failed) when it runs longer
/// than [`BOUND`]: (exit code, stderr).
fn run_bounded(args: &[&std::ffi::OsStr]) -> (Option<i32>, String) {
    let child = Command::new(env!("CARGO_BIN_EXE_ibsm"))
        .args(args)
        .current_dir(root())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ibsm starts");
    let mut child = Reaped(child);
    let deadline = Instant::now() + BOUND;
    loop {
        if let Some(status) = child.0.try_wait().expect("wait") {
            let mut err = String::new();
            if let Some(mut e) = child.0.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut err);
            }
            return (status.code(), err);
        }
        assert!(Instant::now() < deadline, "ibsm {args:?} still running after {BOUND:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn os<S: AsRef<std::ffi::OsStr> + ?Sized>(s: &S) -> &std::ffi::OsStr {
    s.as_ref()
}

fn mkfifo(path: &Path) {
    let st = Command::new("mkfifo").arg(path).status().expect("mkfifo runs");
    assert!(st.success(), "mkfifo {}", path.display());
}

/// `ibsm run --sim FABRIC --once --no-control --state-dir DIR` and `extra`.
fn run_once(dir: &Path, extra: &[&std::ffi::OsStr]) -> (Option<i32>, String) {
    let mut args =
        vec![os("run"), os("--sim"), os(FABRIC), os("--once"), os("--no-control"), os("--state-dir"), os(dir)];
    args.extend_from_slice(extra);
    run_bounded(&args)
}

#[test]
fn devices_and_fifos_are_refused_at_once_wherever_a_file_is_read() {
    let dir = tmp_dir("files-devices");
    let state = dir.join("state");
    let fifo = dir.join("fifo");
    mkfifo(&fifo);
    let net_zero = dir.join("zero.net");
    std::fs::write(&net_zero, "include /dev/zero\n").expect("write");
    let net_fifo = dir.join("fifo.net");
    std::fs::write(&net_fifo, format!("include {}\n", fifo.display())).expect("write");
    let cases: Vec<(Vec<&std::ffi::OsStr>, String)> = vec![
        // (The config's errors read FILE:LINE:COL; an unreadable file is at 0:0.)
        (vec![os("--config"), os("/dev/zero")], "/dev/zero:0:0: not a regular file (a character device)".into()),
        (vec![os("--partitions"), os(&fifo)], format!("{}: not a regular file (a FIFO)", fifo.display())),
        (vec![os("--sm-key-file"), os("/dev/urandom")], "/dev/urandom: not a regular file (a character device)".into()),
    ];
    for (extra, want) in &cases {
        let (code, err) = run_once(&state, extra);
        assert_eq!(code, Some(2), "{extra:?}: {err}");
        assert!(err.contains(want), "{extra:?}: wanted {want:?} in {err}");
    }
    // A .net file and its includes.
    for (net, want) in [
        (os(&fifo), format!("{}: cannot read: not a regular file (a FIFO)", fifo.display())),
        (os(&net_zero), format!("{}:1: cannot include", net_zero.display())),
        (os(&net_fifo), format!("{}:1: cannot include", net_fifo.display())),
    ] {
        let (code, err) = run_bounded(&[os("run"), os("--sim"), net, os("--once"), os("--no-control")]);
        assert_eq!(code, Some(2), "{net:?}: {err}");
        assert!(err.contains(&want) && err.contains("not a regular file"), "{net:?}: wanted {want:?} in {err}");
    }
    // State files.
    for name in ["guid2lid", "pkeys", "guid2mkey", "neighbors"] {
        let _ = std::fs::remove_dir_all(&state);
        std::fs::create_dir_all(&state).expect("state dir");
        mkfifo(&state.join(name));
        let (code, err) = run_once(&state, &[]);
        assert_eq!(code, Some(2), "{name}: {err}");
        let want = format!("{}: not a regular file (a FIFO)", state.join(name).display());
        assert!(err.contains(&want), "{name}: wanted {want:?} in {err}");
    }
    // A file over the limit (sparse: nothing is written, 65 MiB of zeros are read back).
    let _ = std::fs::remove_dir_all(&state);
    std::fs::create_dir_all(&state).expect("state dir");
    std::fs::File::create(state.join("guid2lid")).and_then(|f| f.set_len(65 << 20)).expect("sparse file");
    let (code, err) = run_once(&state, &[]);
    assert_eq!(code, Some(2), "{err}");
    let want = format!("{}: larger than 64 MiB", state.join("guid2lid").display());
    assert!(err.contains(&want), "wanted {want:?} in {err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Starts `ibsm run --sim FABRIC --state-dir DIR --no-control` and waits until it idles.
fn start_live(dir: &Path) -> Reaped {
    let child = Command::new(env!("CARGO_BIN_EXE_ibsm"))
        .args(["run", "--sim", FABRIC, "--no-control", "--state-dir"])
        .arg(dir)
        .current_dir(root())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("ibsm run starts");
    let mut sm = Reaped(child);
    let out = sm.0.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) if line.starts_with("fabric stable") => return sm,
            Ok(_) => {}
            Err(e) => panic!("the first SM did not come up: {e}"),
        }
    }
}

fn sigterm(pid: u32) {
    let st = Command::new("kill").arg("-TERM").arg(pid.to_string()).status().expect("kill runs");
    assert!(st.success());
}

#[test]
fn a_second_sm_on_a_live_state_directory_is_refused_with_the_first_ones_pid() {
    let dir = tmp_dir("files-lock");
    let state = dir.join("state");
    let mut first = start_live(&state);
    let pid = first.0.id();
    let before = std::fs::read(state.join("guid2lid")).expect("the first SM wrote guid2lid");
    let (code, err) = run_once(&state, &[]);
    assert_eq!(code, Some(2), "{err}");
    let want = format!("state directory {} is in use by PID {pid}", state.display());
    assert!(err.contains(&want), "wanted {want:?} in {err}");
    assert_eq!(std::fs::read(state.join("guid2lid")).expect("guid2lid"), before, "the second SM wrote nothing");
    // Once the first SM is gone, the directory is free again.
    sigterm(pid);
    let deadline = Instant::now() + BOUND;
    while first.0.try_wait().expect("wait").is_none() {
        assert!(Instant::now() < deadline, "the first SM did not stop");
        std::thread::sleep(Duration::from_millis(20));
    }
    let (code, err) = run_once(&state, &[]);
    assert_eq!(code, Some(0), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A state directory made by one good run, for a test to spoil.
fn good_state(tag: &str) -> (PathBuf, PathBuf) {
    let dir = tmp_dir(tag);
    let state = dir.join("state");
    let (code, err) = run_once(&state, &[]);
    assert_eq!(code, Some(0), "{err}");
    (dir, state)
}

/// Writes `text` at `state/name`, runs the SM, and checks it refused to start with `want`
/// and left the file as it was.
fn refused(state: &Path, name: &str, text: &str, want: &str) {
    let path = state.join(name);
    std::fs::write(&path, text).expect("write");
    let (code, err) = run_once(state, &[]);
    assert_eq!(code, Some(2), "{name}: {err}");
    let want = format!("{}:{want}", path.display());
    assert!(err.contains(&want), "{name}: wanted {want:?} in {err}");
    assert_eq!(std::fs::read_to_string(&path).expect("read"), text, "{name} was rewritten");
}

#[test]
fn malformed_state_files_stop_the_start_and_are_left_as_they_were() {
    let (dir, state) = good_state("files-malformed");
    let g2l = std::fs::read_to_string(state.join("guid2lid")).expect("guid2lid");
    let mut records = g2l.lines().filter(|l| !l.is_empty());
    let (a, b) = (records.next().expect("a record"), records.next().expect("another"));
    let (guid_a, lid_a) = (&a[..18], &a[19..]);
    let guid_b = &b[..18];
    // Two GUIDs on one LID: refused, naming both.
    let lid = |w: &str| u16::from_str_radix(w.trim_start_matches("0x"), 16).expect("hex LID");
    let (min, max) = (lid(&a[19..25]), lid(&a[26..32]));
    let spoiled = format!("{a}\n\n{guid_b} {lid_a}\n");
    refused(
        &state,
        "guid2lid",
        &spoiled,
        &format!(
            "3: LIDs 0x{min:x}..0x{max:x} of GUID {guid_b} overlap LIDs 0x{min:x}..0x{max:x} of GUID {guid_a} on line 1"
        ),
    );
    std::fs::write(state.join("guid2lid"), &g2l).expect("restore");

    let pkeys = std::fs::read_to_string(state.join("pkeys")).expect("pkeys");
    let lines = pkeys.lines().count();
    // Truncated in the middle of a P_Key: the last line has no newline.
    let cut = &pkeys[..pkeys.len() - 3];
    refused(&state, "pkeys", cut, &format!("{lines}: the last line has no newline: the file is truncated"));
    // A bogus line: a short GUID, a short P_Key, a GUID twice.
    refused(&state, "pkeys", &format!("{pkeys}0x12 0xffff\n"), &format!("{}: expected a GUID", lines + 1));
    let first = pkeys.lines().next().expect("a line");
    refused(&state, "pkeys", &format!("0x0000000000100001 0xff\n{pkeys}"), "1: expected a P_Key");
    refused(&state, "pkeys", &format!("{pkeys}{first}\n"), &format!("{}: GUID", lines + 1));
    std::fs::write(state.join("pkeys"), &pkeys).expect("restore");
    let (code, err) = run_once(&state, &[]);
    assert_eq!(code, Some(0), "restored: {err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn guid2mkey_readable_by_others_is_refused_as_mkey_secret_is() {
    let (dir, state) = good_state("files-mkey");
    let path = state.join("guid2mkey");
    let text = "0x0002c90300000001 0x0000000000000abc\n";
    std::fs::write(&path, text).expect("write");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let (code, err) = run_once(&state, &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(&format!("{}:1: mode 644 lets others read the M_Keys; chmod 600 it", path.display())),
        "{err}"
    );
    let meta = std::fs::metadata(&path).expect("still there");
    assert_eq!(meta.permissions().mode() & 0o777, 0o644, "not rewritten");
    assert_eq!(std::fs::read_to_string(&path).expect("read"), text);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let (code, err) = run_once(&state, &[]);
    assert_eq!(code, Some(0), "private: {err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_symlinked_state_file_is_refused_at_start_and_stays_a_link() {
    let (dir, state) = good_state("files-symlink");
    let target = dir.join("guid2lid.real");
    std::fs::rename(state.join("guid2lid"), &target).expect("move");
    std::os::unix::fs::symlink(&target, state.join("guid2lid")).expect("symlink");
    let before = std::fs::read(&target).expect("target");
    let (code, err) = run_once(&state, &[]);
    assert_eq!(code, Some(2), "{err}");
    let want = format!("{}: a symbolic link (to {})", state.join("guid2lid").display(), target.display());
    assert!(err.contains(&want), "wanted {want:?} in {err}");
    let link = std::fs::symlink_metadata(state.join("guid2lid")).expect("still there");
    assert!(link.file_type().is_symlink(), "still a link");
    assert_eq!(std::fs::read(&target).expect("target"), before);
    let _ = std::fs::remove_dir_all(&dir);
}
