//! Running the `ibsm` binary from a test: the repository root, one call with its exit code and
//! output, and a private temporary directory.

use std::path::PathBuf;
use std::process::Command;

/// The repository root (where `examples/` is).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `ibsm args...` from the repository root: (exit code, stdout, stderr).
pub fn ibsm(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ibsm")).args(args).current_dir(root()).output().expect("ibsm runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// An empty directory of this test process's own, named by `tag`.
pub fn tmp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ibsm-test-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}
