//! `ibsm partitions show` at the edges of the P_Key space and with repeated P_Keys: a file
//! that asks for more generated P_Keys than there are is an error with its file and line (not
//! "0 partition(s)" and exit 0), in linear time; a repeated P_Key is merged into the first
//! definition, whose name is kept, with a warning naming both.

mod support;

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use support::cmd::{ibsm, tmp_dir};

/// `Default` and `n` partitions without a P_Key, one per line.
fn generated(n: usize) -> String {
    let mut text = String::from("Default=0x7fff : ALL=full ;\n");
    for i in 0..n {
        let _ = writeln!(text, "p{i} : ALL=limited ;");
    }
    text
}

#[test]
fn the_whole_pkey_space_shows_in_linear_time_and_one_more_is_an_error_at_its_line() {
    let dir = tmp_dir("pkey-space");
    let full = dir.join("full.conf");
    std::fs::write(&full, generated(32_766)).expect("write");
    let start = Instant::now();
    let (code, out, err) = ibsm(&["partitions", "show", full.to_str().expect("utf-8")]);
    // Quadratic, this took 18 s in release and 34 s in debug; linear, well under a second.
    assert!(start.elapsed() < Duration::from_secs(10), "{:?}", start.elapsed());
    assert_eq!(code, Some(0), "{err}");
    assert!(out.starts_with("32767 partition(s)\n0x7fff \"Default\"\n"), "{}", &out[..out.len().min(200)]);
    assert!(out.contains("\n0x7ffe \"p32765\"\n"), "the last generated key is 0x7ffe");

    let over = dir.join("over.conf");
    std::fs::write(&over, generated(32_767)).expect("write");
    let start = Instant::now();
    let (code, out, err) = ibsm(&["partitions", "show", over.to_str().expect("utf-8")]);
    assert!(start.elapsed() < Duration::from_secs(10), "{:?}", start.elapsed());
    assert_eq!(code, Some(2), "{out}");
    assert!(out.is_empty(), "nothing shown: {}", &out[..out.len().min(200)]);
    assert!(
        err.starts_with(&format!(
            "{}:32768:1: no free P_Key left to generate one for partition \"p32766\"",
            over.display()
        )),
        "{err}"
    );
    // The SM refuses it the same way.
    let (code, _, err) =
        ibsm(&["run", "--sim", "--once", "--no-control", "--partitions", over.to_str().expect("utf-8")]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("over.conf:32768:1: no free P_Key"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_repeated_pkey_keeps_the_first_name_and_warns_naming_both() {
    let dir = tmp_dir("pkey-dup");
    let conf = dir.join("dup.conf");
    std::fs::write(&conf, "a=0x10 : ALL=full ;\nb=0x10 : 0x0002000000000001=full ;\nc=0x7fff : SELF ;\n")
        .expect("write");
    let (code, out, err) = ibsm(&["partitions", "show", conf.to_str().expect("utf-8")]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("0x0010 \"a\"\n") && out.contains("  0x0002000000000001=full\n"), "merged into a: {out}");
    assert!(out.contains("0x7fff \"Default\"\n") && !out.contains("\"b\"") && !out.contains("\"c\""), "{out}");
    let c = conf.display();
    assert_eq!(
        err,
        format!(
            "warning: {c}: line 2: partition \"b\" repeats P_Key 0x0010 of partition \"a\" (line 1): merged into \"a\", whose name is kept\n\
             warning: {c}: line 3: partition \"c\" has the default partition's P_Key 0x7fff: merged into \"Default\", whose name is kept\n"
        )
    );
    // The TOML form: the same merge, the same warning by table, and both definitions' members shown.
    let toml = dir.join("dup.toml");
    std::fs::write(
        &toml,
        "[[partition]]\nname = \"a\"\npkey = 16\nmembers = [{ port = \"all\", membership = \"full\" }]\n\
         [[partition]]\nname = \"b\"\npkey = 16\nmembers = [{ port = \"0x0002000000000001\", membership = \"full\" }]\n",
    )
    .expect("write");
    let (code, out, err) = ibsm(&["partitions", "show", toml.to_str().expect("utf-8")]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("0x0010 \"a\"\n") && out.contains("  ALL=full\n  0x0002000000000001=full\n"), "{out}");
    assert!(
        err.contains("[[partition]] 1: partition \"b\" repeats P_Key 0x0010 of partition \"a\" ([[partition]] 0)"),
        "{err}"
    );
    // The SM logs it when it reads the policy.
    let (code, _, err) =
        ibsm(&["run", "--sim", "--once", "--no-control", "--partitions", conf.to_str().expect("utf-8")]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("partition \"b\" repeats P_Key 0x0010 of partition \"a\""), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
