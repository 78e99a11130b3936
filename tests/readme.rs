//! Every command the README and the documents under `docs/` show in a fenced `sh` block runs
//! here, so the docs cannot drift from the program: a command that fails, or a path or option
//! that no longer exists, fails this test with the file and line of its block. Every relative
//! link of those files must name a file that exists and, for `#anchor`, a heading of it.
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
//! whatever it left running (an SM started with `&`) is killed with its process group. The
//! blocks of all documents run side by side.
//!
//! Links: `[text](target)` outside fenced blocks and code spans; a target with a scheme
//! (`https:`) is not checked. An anchor is compared with the heading ids GitHub derives (lower
//! case; letters, digits, `-` and `_` kept, spaces turned into `-`, everything else dropped;
//! `-1`, `-2` added to repeats).

mod support;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The mark that leaves a command out.
const SKIP: &str = "# not run by the tests:";
/// The longest a block may run.
const BLOCK_LIMIT: Duration = Duration::from_secs(120);

/// A fenced `sh` block: its document (relative to the checkout), the line its fence is on, and
/// its lines.
#[derive(Debug)]
struct Block {
    file: String,
    line: usize,
    lines: Vec<String>,
}

impl Block {
    /// A block of `lines` at line 1 of a test document, for the harness's own tests.
    fn of(lines: &[&str]) -> Block {
        Block { file: "test.md".to_owned(), line: 1, lines: lines.iter().map(|l| (*l).to_owned()).collect() }
    }

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
                    return Err(format!("{}:{at}: `{SKIP}` without a reason", self.file));
                }
                Some(_) => out.push_str(&"\n".repeat(command.len())),
                None => {
                    for l in command {
                        let code = l.split(" #").next().unwrap_or_default();
                        if code.contains("&&") || code.contains("||") {
                            return Err(format!(
                                "{}:{at}: `&&`/`||` would hide a failure: one command per line",
                                self.file
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

/// The fenced `sh` blocks of `text`, the document `file`.
fn sh_blocks(file: &str, text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut open: Option<Block> = None;
    for (i, l) in text.lines().enumerate() {
        match open.take() {
            None if l.trim_start().starts_with("```sh") => {
                open = Some(Block { file: file.to_owned(), line: i + 1, lines: Vec::new() });
            }
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

/// The checkout.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The documents whose blocks run and whose links are checked: `README.md`, then every
/// `docs/*.md` by name; each as (its path relative to the checkout, its text).
fn documents() -> Vec<(String, String)> {
    let mut docs: Vec<String> = std::fs::read_dir(root().join("docs"))
        .expect("docs/ exists")
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .filter(|n| Path::new(n).extension().is_some_and(|e| e == "md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    docs.sort();
    std::iter::once("README.md".to_owned())
        .chain(docs)
        .map(|n| {
            let text = std::fs::read_to_string(root().join(&n)).unwrap_or_else(|e| panic!("{n}: {e}"));
            (n, text)
        })
        .collect()
}

/// Every `sh` block of every document.
fn all_blocks() -> Vec<Block> {
    documents().iter().flat_map(|(name, text)| sh_blocks(name, text)).collect()
}

/// What the script runs first: strict mode, the `cargo` stand-in, the failing command named.
const PRELUDE: &str = r#"set -euo pipefail
cargo() {
    if [ "$#" -ge 3 ] && [ "$1 $2 $3" = "run --release --" ]; then shift 3; ibsm "$@"; return; fi
    if [ "$*" = "build --release" ]; then return 0; fi
    echo "cargo $*: not run by the tests; mark it in the document" >&2
    return 97
}
trap 'echo "$DOC_FILE:$((DOC_BLOCK + LINENO - 1)): failed (status $?): $BASH_COMMAND" >&2' ERR
"#;

/// A fresh directory laid out like a checkout, for one block.
fn checkout(tag: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let dir = std::env::temp_dir().join(format!("ibsm-readme-{}-{tag}-{nanos}", std::process::id()));
    let bin = Path::new(env!("CARGO_BIN_EXE_ibsm"));
    for d in ["bin", "target/release"] {
        std::fs::create_dir_all(dir.join(d)).expect("create the block's directory");
    }
    std::os::unix::fs::symlink(bin, dir.join("bin/ibsm")).expect("link ibsm");
    std::os::unix::fs::symlink(bin, dir.join("target/release/ibsm")).expect("link target/release/ibsm");
    std::os::unix::fs::symlink(root().join("examples"), dir.join("examples")).expect("link examples");
    dir
}

/// Runs one block; `Err` with the document's line, the script's output and its status. The
/// block's directory is removed, unless it failed and `keep` asks to keep it for a look.
fn run_block(b: &Block, tag: &str, keep: bool) -> Result<Duration, String> {
    let script = b.script()?;
    let dir = checkout(tag);
    std::fs::write(dir.join("prelude.sh"), PRELUDE).expect("write the prelude");
    // The prelude on line 1, so that line N + 1 of the script is line N of the block.
    std::fs::write(dir.join("block.sh"), format!(". ./prelude.sh\n{script}")).expect("write the script");
    let path = format!("{}:{}", dir.join("bin").display(), std::env::var("PATH").unwrap_or_default());
    let start = Instant::now();
    // `timeout` puts itself and all it starts in a process group of its own (its pid), and
    // kills that group when time is up; `mktemp -d` in a block makes its directory in ours.
    let out = Command::new("timeout")
        .args(["-k", "5", &BLOCK_LIMIT.as_secs().to_string(), "bash", "block.sh"])
        .current_dir(&dir)
        .env("PATH", path)
        .env("TMPDIR", &dir)
        .env("DOC_FILE", &b.file)
        .env("DOC_BLOCK", b.line.to_string())
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
    let out = out.map_err(|e| format!("{}:{}: cannot run bash under timeout: {e}", b.file, b.line))?;
    if out.status.success() || !keep {
        let _ = std::fs::remove_dir_all(&dir);
    }
    if out.status.success() {
        return Ok(took);
    }
    Err(format!(
        "{}:{}: the sh block failed ({}, after {:.1} s; in {}):\n--- script\n{script}--- stdout\n{}--- stderr\n{}",
        b.file,
        b.line,
        out.status,
        took.as_secs_f64(),
        dir.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    ))
}

/// Runs `blocks` side by side, prints each one's time and the total, and panics with every
/// failure.
fn run_all(blocks: &[&Block]) {
    let start = Instant::now();
    let results: Vec<(String, Result<Duration, String>)> = std::thread::scope(|s| {
        let handles: Vec<_> = blocks
            .iter()
            .enumerate()
            .map(|(i, b)| s.spawn(move || (format!("{}:{}", b.file, b.line), run_block(b, &i.to_string(), true))))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| (String::new(), Err("a block's thread panicked".into()))))
            .collect()
    });
    let mut failures = Vec::new();
    for (at, r) in results {
        match r {
            Ok(took) => eprintln!("{at}: ok in {:.1} s", took.as_secs_f64()),
            Err(e) => failures.push(e),
        }
    }
    eprintln!("{} block(s) in {:.1} s", blocks.len(), start.elapsed().as_secs_f64());
    assert!(failures.is_empty(), "{} block(s) failed:\n{}", failures.len(), failures.join("\n\n"));
}

/// The id GitHub gives a heading: lower case, letters, digits, `-` and `_` kept, each space a
/// `-`, the rest dropped.
fn slug(heading: &str) -> String {
    heading
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() => Some(c),
            _ => None,
        })
        .flat_map(char::to_lowercase)
        .collect()
}

/// The lines of `text` outside fenced blocks, with their line numbers (1-based).
fn prose(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (i, l) in text.lines().enumerate() {
        if l.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            out.push((i + 1, l));
        }
    }
    out
}

/// The heading ids of a document, repeats numbered as GitHub numbers them.
fn anchors(text: &str) -> HashSet<String> {
    let mut seen = HashSet::new();
    for (_, l) in prose(text) {
        let level = l.chars().take_while(|&c| c == '#').count();
        if level == 0 || level > 6 || !l[level..].starts_with(' ') {
            continue;
        }
        let base = slug(l[level..].trim());
        let mut id = base.clone();
        let mut n = 0;
        while seen.contains(&id) {
            n += 1;
            id = format!("{base}-{n}");
        }
        seen.insert(id);
    }
    seen
}

/// The link targets of a line: `[text](target)`, code spans left out. A code span may go on
/// over lines: `in_code` carries whether the line starts in one (a blank line ends it).
fn link_targets(line: &str, in_code: &mut bool) -> Vec<String> {
    if line.trim().is_empty() {
        *in_code = false;
    }
    let mut plain = String::new();
    for (i, part) in line.split('`').enumerate() {
        if i > 0 {
            *in_code = !*in_code;
        }
        if !*in_code {
            plain.push_str(part);
        }
    }
    let mut out = Vec::new();
    let mut rest = plain.as_str();
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        match after.find(')') {
            Some(end) => {
                out.push(after[..end].trim().to_owned());
                rest = &after[end + 1..];
            }
            None => break,
        }
    }
    out
}

/// Every broken relative link of the documents `docs` (path relative to `base`, text), as
/// `FILE:LINE: target: reason`.
fn broken_links(base: &Path, docs: &[(String, String)]) -> Vec<String> {
    let mut broken = Vec::new();
    for (name, text) in docs {
        let dir = Path::new(name).parent().unwrap_or(Path::new(""));
        let mut in_code = false;
        for (n, line) in prose(text) {
            for target in link_targets(line, &mut in_code) {
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                let (file, anchor) = target.split_once('#').map_or((target.as_str(), None), |(f, a)| (f, Some(a)));
                let path = if file.is_empty() { PathBuf::from(name) } else { dir.join(file) };
                let full = base.join(&path);
                if !full.exists() {
                    broken.push(format!("{name}:{n}: {target}: no file {}", path.display()));
                    continue;
                }
                let Some(anchor) = anchor else { continue };
                let Ok(linked) = std::fs::read_to_string(&full) else {
                    broken.push(format!("{name}:{n}: {target}: #{anchor} in a file that is not text"));
                    continue;
                };
                if !anchors(&linked).contains(anchor) {
                    broken.push(format!("{name}:{n}: {target}: no heading #{anchor} in {}", path.display()));
                }
            }
        }
    }
    broken
}

#[test]
fn the_docs_have_their_blocks_and_mark_each_command_left_out_with_a_reason() {
    let docs = documents();
    assert!(docs.len() >= 7, "README.md and the docs: {:?}", docs.iter().map(|d| &d.0).collect::<Vec<_>>());
    let readme = sh_blocks("README.md", &docs[0].1);
    assert!(readme.len() >= 4, "the README's set-up and walkthrough: only {} sh blocks", readme.len());
    let blocks = all_blocks();
    assert!(blocks.len() >= 15, "found only {} sh blocks", blocks.len());
    for b in &blocks {
        if let Err(e) = b.script() {
            panic!("{e}");
        }
    }
    // The harness itself: a marked command goes whole, with the lines its `\\` joins to it.
    let b = Block::of(&["a", "b \\", "  c   # not run by the tests: why", "d \\", "  e"]);
    assert_eq!(b.script(), Ok("a\n\n\nd \\\n  e\n".to_owned()));
    assert!(Block::of(&["a   # not run by the tests:"]).script().is_err(), "a mark without a reason");
}

#[test]
fn every_doc_command_runs() {
    let blocks = all_blocks();
    let plain: Vec<&Block> = blocks.iter().filter(|b| !b.uses_ibsim()).collect();
    run_all(&plain);
}

#[test]
fn every_doc_command_under_ibsim_runs() {
    if !support::ibsim::require_tools(&["ibsim", "ibsim-run", "ibnetdiscover", "ibtracert"]) {
        return;
    }
    let blocks = all_blocks();
    let ibsim: Vec<&Block> = blocks.iter().filter(|b| b.uses_ibsim()).collect();
    assert!(!ibsim.is_empty(), "the docs show how to run under ibsim");
    run_all(&ibsim);
}

#[test]
fn a_failing_command_fails_its_block() {
    // The harness must not pass a document whose command fails, wherever in the block it is.
    for lines in [
        vec!["ibsm --version", "ibsm no-such-command", "ibsm --version"],
        vec!["ibsm topology show --net no-such.net | cat"],
        vec!["cargo test --workspace"],
    ] {
        assert!(run_block(&Block::of(&lines), "neg", false).is_err(), "{lines:?} passed");
    }
    let ok = Block::of(&["cargo run --release -- --version", "ibsm --help > /dev/null"]);
    assert!(run_block(&ok, "pos", false).is_ok());
}

#[test]
fn every_relative_link_names_a_file_and_heading_that_exist() {
    let docs = documents();
    let broken = broken_links(root(), &docs);
    assert!(broken.is_empty(), "{} broken link(s):\n{}", broken.len(), broken.join("\n"));
    let links: usize = docs
        .iter()
        .map(|(_, t)| {
            let mut in_code = false;
            prose(t).iter().map(|(_, l)| link_targets(l, &mut in_code).len()).sum::<usize>()
        })
        .sum();
    assert!(links >= 50, "only {links} links found: the README's table of contents alone has 9");
}

#[test]
fn the_link_check_finds_a_missing_file_and_a_missing_heading() {
    assert_eq!(slug("The cabling: `ibsm topology show | dot | diff`"), "the-cabling-ibsm-topology-show--dot--diff");
    assert_eq!(slug("From install to 3 a.m."), "from-install-to-3-am");
    assert_eq!(slug("M_Keys"), "m_keys");
    let dir = std::env::temp_dir().join(format!("ibsm-links-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("docs")).expect("a directory");
    let a = "# A\n\n## Same\n\n## Same\n\n```sh\n# Not a heading\n```\n";
    std::fs::write(dir.join("docs/a.md"), a).expect("write a.md");
    let text = "[ok](docs/a.md) [ok](docs/a.md#same-1) [ok](#b) `[code](nowhere.md)` [web](https://example.com/x)\n\
                `a code span [over](nowhere.md)\nlines [code](nowhere.md)` [ok](#a-heading)\n\
                ```sh\n[fenced](nowhere.md)\n```\n\
                # B\n[gone](docs/b.md) [no heading](docs/a.md#not-a-heading) [third](docs/a.md#same-2)\n\
                ## A heading\n";
    std::fs::write(dir.join("README.md"), text).expect("write README.md");
    let broken = broken_links(&dir, &[("README.md".to_owned(), text.to_owned())]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(broken.len(), 3, "{broken:#?}");
    assert!(broken[0].starts_with("README.md:8: docs/b.md: no file"), "{}", broken[0]);
    assert!(broken[1].contains("no heading #not-a-heading"), "{}", broken[1]);
    assert!(broken[2].contains("no heading #same-2"), "{}", broken[2]);
}
