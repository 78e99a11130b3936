//! `ibsm man DIR`: a man page for `ibsm` and for every subcommand `--help` lists, at every
//! level, each a roff page that names its command and documents its options.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

fn ibsm(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ibsm")).args(args).output().expect("run ibsm");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The subcommands `ibsm PATH... --help` lists under "Commands:" (without clap's `help`).
fn subcommands(path: &[String]) -> Vec<String> {
    let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
    args.push("--help");
    let (ok, help, err) = ibsm(&args);
    assert!(ok, "ibsm {args:?}: {err}");
    let Some(list) = help.split("Commands:\n").nth(1) else { return Vec::new() };
    list.lines()
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_owned)
        .collect()
}

/// Every command path under `path`, from `--help`, depth first.
fn command_paths(path: &[String], out: &mut Vec<Vec<String>>) {
    for sub in subcommands(path) {
        let mut p = path.to_vec();
        p.push(sub);
        out.push(p.clone());
        command_paths(&p, out);
    }
}

#[test]
fn each_subcommand_gets_its_man_page() {
    let dir = std::env::temp_dir().join(format!("ibsm-man-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let pages = dir.join("man1");
    let (ok, out, err) = ibsm(&["man", pages.to_str().expect("utf-8 path")]);
    assert!(ok, "ibsm man: {err}");

    let mut commands = Vec::new();
    command_paths(&[], &mut commands);
    assert!(commands.len() >= 15, "--help lists only {commands:?}");
    let mut expected: BTreeSet<String> = commands.iter().map(|p| format!("ibsm-{}.1", p.join("-"))).collect();
    expected.insert("ibsm.1".into());
    let written: BTreeSet<String> = std::fs::read_dir(&pages)
        .expect("the directory was made")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(written, expected, "one page per command, no other file");
    // Each path printed, one per line.
    assert_eq!(out.lines().count(), expected.len(), "{out}");

    for name in &expected {
        let text = std::fs::read_to_string(pages.join(name)).expect("read the page");
        let title = name.trim_end_matches(".1");
        assert!(text.starts_with(".ie \\n(.g .ds Aq") || text.contains(".TH"), "{name} is not roff:\n{text}");
        assert!(text.contains(&format!(".TH {title} 1")), "{name} has no title line for {title}:\n{text}");
        assert!(text.contains(".SH NAME") && text.contains(".SH SYNOPSIS"), "{name}:\n{text}");
    }
    // The pages carry the help text: options with their documentation.
    let run = std::fs::read_to_string(pages.join("ibsm-run.1")).expect("ibsm-run.1");
    for option in ["\\-\\-state\\-dir", "\\-\\-once", "\\-\\-sim", "\\-\\-routing\\-engine"] {
        assert!(run.contains(option), "ibsm-run.1 lacks {option}");
    }
    let diff = std::fs::read_to_string(pages.join("ibsm-topology-diff.1")).expect("ibsm-topology-diff.1");
    assert!(diff.contains("Exit status 0 when they agree"), "{diff}");
    let _ = std::fs::remove_dir_all(Path::new(&dir));
}

#[test]
fn an_unwritable_directory_is_an_error_not_a_crash() {
    let file = std::env::temp_dir().join(format!("ibsm-man-file-{}", std::process::id()));
    std::fs::write(&file, "not a directory").expect("write");
    let (ok, _, err) = ibsm(&["man", file.join("man1").to_str().expect("utf-8 path")]);
    assert!(!ok);
    assert!(err.starts_with("ibsm man: "), "{err}");
    let _ = std::fs::remove_file(&file);
}
