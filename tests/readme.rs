//! Every command the README shows in a fenced `sh` block runs here, so the README cannot drift
//! from the program: a command that fails, or a path or option that no longer exists, fails
//! this test with the README line of its block.
//!
//! How a block runs: as one bash script (`set -euo pipefail`, so any failing command or
//! pipeline stops it), in a fresh directory laid out like a checkout (`examples/` of this
//! repository, `target/release/ibsm` and `ibsm` on `PATH` being the binary under test), so
//! commands read as an operator types them from the checkout. `cargo run --release -- ARGS`
//! runs `ibsm ARGS`, and `cargo build --release` is the build this test already has; any other
//! `cargo` command fails the block. A command the tests cannot run carries the comment
//! `# not run by the tests: REASON` on its line (hardware, a service's paths, a long run, a tool
//! not installed); exactly those lines (with their `\` continuations) are left out, and every
//! such comment must give its reason. Commands are not joined with `&&` or `||` (bash ignores a
//! failure before them under `set -e`). Blocks that use ibsim run in their own test, skipped
//! with `IBSM_SKIP_IBSIM=1` like the other ibsim tests. Each block is bounded by `timeout`, and
//! whatever it left running (an SM started with `&`) is killed with its process group.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The mark that leaves a command out.
const SKIP: &str = "# not run by the tests:";
/// The longest a block may run.
const BLOCK_LIMIT: Duration = Duration::from_secs(120);

/// A fenced `sh` block: the README line its fence is on, and its lines.
#[derive(Debug)]
struct Block {
    line: usize,
    lines: Vec<String>,
}

impl Block {
    /// Whether the block drives ibsim.
    fn uses_ibsim(&self) -> bool {
        self.lines.iter().any(|l| l.contains("ibsim"))
    }

    /// The script to run: the block less the marked commands, a blank line for each line left
    /// out so that the script's lines stay the block's. A command is a line with the lines its
    /// trailing `\\` joins to it; the mark may be on any of them (bash allows a comment only on
    /// the last).
    fn script(&self) -> Result<String, String> {
        let mut out = String::new();
        let mut i = 0;
        while i < self.lines.len() {
            let mut end = i;
            while end + 1 < self.lines.len() && self.lines[end].trim_end().ends_with('\\') {
                end += 1;
            }
            let command = &self.lines[i..=end];
            let at = self.line + 1 + i;
            let marked = command.iter().find_map(|l| l.find(SKIP).map(|pos| &l[pos + SKIP.len()..]));
            match marked {
                Some(reason) if reason.trim().is_empty() => {
                    return Err(format!("README.md:{at}: `{SKIP}` without a reason"));
                }
                Some(_) => out.push_str(&"\n".repeat(command.len())),
                None => {
                    for l in command {
                        let code = l.split(" #").next().unwrap_or_default();
                        if code.contains("&&") || code.contains("||") {
                            return Err(format!(
                                "README.md:{at}: `&&`/`||` would hide a failure: one command per line"
                            ));
                        }
                        out.push_str(l);
                        out.push('\n');
                    }
                }
            }
            i = end + 1;
        }
        Ok(out)
    }
}

/// The fenced `sh` blocks of `text`.
fn sh_blocks(text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut open: Option<Block> = None;
    for (i, l) in text.lines().enumerate() {
        match open.take() {
            None if l.trim_start().starts_with("```sh") => open = Some(Block { line: i + 1, lines: Vec::new() }),
            None => {}
            Some(b) if l.trim_start().starts_with("```") => blocks.push(b),
            Some(mut b) => {
                b.lines.push(l.to_owned());
                open = Some(b);
            }
        }
    }
    blocks
}

fn readme() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// What the script runs first: strict mode, the `cargo` stand-in, the failing command named.
const PRELUDE: &str = r#"set -euo pipefail
cargo() {
    if [ "$#" -ge 3 ] && [ "$1 $2 $3" = "run --release --" ]; then shift 3; ibsm "$@"; return; fi
    if [ "$*" = "build --release" ]; then return 0; fi
    echo "cargo $*: not run by the tests; mark it in the README" >&2
    return 97
}
trap 'echo "README.md:$((README_BLOCK + LINENO - 1)): failed (status $?): $BASH_COMMAND" >&2' ERR
"#;

/// A fresh directory laid out like a checkout, for one block.
fn checkout(tag: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let dir = std::env::temp_dir().join(format!("ibsm-readme-{}-{tag}-{nanos}", std::process::id()));
    let bin = Path::new(env!("CARGO_BIN_EXE_ibsm"));
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    for d in ["bin", "target/release"] {
        std::fs::create_dir_all(dir.join(d)).expect("create the block's directory");
    }
    std::os::unix::fs::symlink(bin, dir.join("bin/ibsm")).expect("link ibsm");
    std::os::unix::fs::symlink(bin, dir.join("target/release/ibsm")).expect("link target/release/ibsm");
    std::os::unix::fs::symlink(examples, dir.join("examples")).expect("link examples");
    dir
}

/// Runs one block; `Err` with the README line, the script's output and its status. The
/// block's directory is removed, unless it failed and `keep` asks to keep it for a look.
fn run_block(b: &Block, tag: &str, keep: bool) -> Result<Duration, String> {
    let script = b.script()?;
    let dir = checkout(tag);
    std::fs::write(dir.join("prelude.sh"), PRELUDE).expect("write the prelude");
    // The prelude on line 1, so that line N + 1 of the script is line N of the block.
    std::fs::write(dir.join("block.sh"), format!(". ./prelude.sh\n{script}")).expect("write the script");
    let path = format!("{}:{}", dir.join("bin").display(), std::env::var("PATH").unwrap_or_default());
    let start = std::time::Instant::now();
    // `timeout` puts itself and all it starts in a process group of its own (its pid), and
    // kills that group when time is up; `mktemp -d` in a block makes its directory in ours.
    let out = Command::new("timeout")
        .args(["-k", "5", &BLOCK_LIMIT.as_secs().to_string(), "bash", "block.sh"])
        .current_dir(&dir)
        .env("PATH", path)
        .env("TMPDIR", &dir)
        .env("README_BLOCK", b.line.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|child| {
            let group = child.id();
            let out = child.wait_with_output();
            // Whatever the block left running in the background (an SM, ibsim) goes with it.
            let _ = Command::new("kill").args(["-KILL", "--", &format!("-{group}")]).stderr(Stdio::null()).status();
            out
        });
    let took = start.elapsed();
    let out = out.map_err(|e| format!("README.md:{}: cannot run bash under timeout: {e}", b.line))?;
    if out.status.success() || !keep {
        let _ = std::fs::remove_dir_all(&dir);
    }
    if out.status.success() {
        return Ok(took);
    }
    Err(format!(
        "README.md:{}: the sh block failed ({}, after {:.1} s; in {}):\n--- script\n{script}--- stdout\n{}--- stderr\n{}",
        b.line,
        out.status,
        took.as_secs_f64(),
        dir.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    ))
}

/// Runs `blocks` side by side and panics with every failure.
fn run_all(blocks: &[&Block]) {
    let results: Vec<(usize, Result<Duration, String>)> = std::thread::scope(|s| {
        let handles: Vec<_> = blocks
            .iter()
            .enumerate()
            .map(|(i, b)| s.spawn(move || (b.line, run_block(b, &i.to_string(), true))))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or((0, Err("a block's thread panicked".into())))).collect()
    });
    let mut failures = Vec::new();
    for (line, r) in results {
        match r {
            Ok(took) => eprintln!("README.md:{line}: ok in {:.1} s", took.as_secs_f64()),
            Err(e) => failures.push(e),
        }
    }
    assert!(failures.is_empty(), "{} README block(s) failed:\n{}", failures.len(), failures.join("\n\n"));
}

#[test]
fn the_readme_has_its_blocks_and_marks_each_command_left_out_with_a_reason() {
    let blocks = sh_blocks(&readme());
    assert!(blocks.len() >= 10, "found only {} sh blocks", blocks.len());
    for b in &blocks {
        if let Err(e) = b.script() {
            panic!("{e}");
        }
    }
    // The harness itself: a marked command goes whole, with the lines its `\\` joins to it.
    let lines = ["a", "b \\", "  c   # not run by the tests: why", "d \\", "  e"];
    let b = Block { line: 1, lines: lines.iter().map(|l| (*l).to_owned()).collect() };
    assert_eq!(b.script(), Ok("a\n\n\nd \\\n  e\n".to_owned()));
    let unmarked = Block { line: 1, lines: vec!["a   # not run by the tests:".into()] };
    assert!(unmarked.script().is_err(), "a mark without a reason");
}

#[test]
fn every_readme_command_runs() {
    let text = readme();
    let blocks = sh_blocks(&text);
    let plain: Vec<&Block> = blocks.iter().filter(|b| !b.uses_ibsim()).collect();
    run_all(&plain);
}

#[test]
fn every_readme_command_under_ibsim_runs() {
    if !support::ibsim::require_tools(&["ibsim", "ibsim-run", "ibnetdiscover", "ibtracert"]) {
        return;
    }
    let text = readme();
    let blocks = sh_blocks(&text);
    let ibsim: Vec<&Block> = blocks.iter().filter(|b| b.uses_ibsim()).collect();
    assert!(!ibsim.is_empty(), "the README shows how to run under ibsim");
    run_all(&ibsim);
}

#[test]
fn a_failing_command_fails_its_block() {
    // The harness must not pass a README whose command fails, wherever in the block it is.
    for lines in [
        vec!["ibsm --version", "ibsm no-such-command", "ibsm --version"],
        vec!["ibsm topology show --net no-such.net | cat"],
        vec!["cargo test --workspace"],
    ] {
        let b = Block { line: 1, lines: lines.iter().map(|l| (*l).to_owned()).collect() };
        assert!(run_block(&b, "neg", false).is_err(), "{lines:?} passed");
    }
    let ok =
        Block { line: 1, lines: vec!["cargo run --release -- --version".into(), "ibsm --help > /dev/null".into()] };
    assert!(run_block(&ok, "pos", false).is_ok());
}
