//! A one-shot command whose reader goes away (`ibsm routes dump ... | head -1`) ends quietly,
//! as Unix tools do: no panic, no backtrace on stderr.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};

fn ibsm() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ibsm"))
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ibsm-pipe-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

#[test]
fn routes_dump_into_a_pipe_closed_after_one_line_exits_quietly() {
    let dir = tmpdir("dump");
    // A 3-level fat tree of 8-port switches: about 1 MB of tables, far more than a pipe holds,
    // so the dump is still writing when the reader goes away.
    let net = dir.join("k8.net");
    let out = ibsm()
        .args(["sim", "gen", "fat-tree", "--levels", "3", "--radix", "8", "-o"])
        .arg(&net)
        .output()
        .expect("sim gen runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut child = ibsm()
        .args(["routes", "dump", "--topology"])
        .arg(&net)
        .env("RUST_BACKTRACE", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("routes dump starts");
    let mut first = String::new();
    {
        let stdout = child.stdout.take().expect("stdout piped");
        let mut reader = BufReader::new(stdout);
        reader.read_line(&mut first).expect("one line");
        // The reader goes away here, as `head -1` does.
    }
    assert!(first.starts_with("Unicast lids"), "{first:?}");
    let mut stderr = String::new();
    child.stderr.take().expect("stderr piped").read_to_string(&mut stderr).expect("stderr");
    let status = child.wait().expect("exits");
    assert!(!stderr.contains("panicked") && !stderr.contains("Broken pipe"), "stderr: {stderr}");
    // Ended by SIGPIPE, or by an exit status of its own: either way quietly.
    assert!(status.signal() == Some(13) || status.code().is_some(), "{status:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
