//! `ibsm routes check --svg FILE`: the fabric drawn by tier with each cable coloured by its
//! routed load, from a topology (`--topology`), from dumped tables (`--lfts`) and from a running
//! SM (`--socket`). The file must be well-formed XML (checked by hand here, and by `xmllint` when
//! it is installed), draw one path per cable, give the busiest cable the hot colour, and show a
//! removed cable's load moving onto the cable left beside it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use ibsm::routes::svg::{CA_LINK, HOT, IDLE};
use ibsm_topology::{NodeKind, Topology};

mod support;
use support::cmd::{ibsm, root, tmp_dir};
use support::daemon::Daemon;

const FABRIC: &str = "examples/fabrics/fat-tree-2l-k4.net";

/// `routes check ARGS --svg FILE`: the check's JSON and the SVG text.
fn check_svg(args: &[&str], svg: &Path) -> (serde_json::Value, String) {
    let mut all = vec!["routes", "check", "--json", "--svg", svg.to_str().expect("utf-8")];
    all.extend_from_slice(args);
    let (code, out, err) = ibsm(&all);
    assert!(matches!(code, Some(0 | 1)), "{all:?}: {code:?} {out}{err}");
    let json = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{all:?}: not JSON ({e}): {out}{err}"));
    let text = std::fs::read_to_string(svg).expect("the SVG was written");
    well_formed(&text).unwrap_or_else(|e| panic!("{all:?}: not well-formed XML: {e}"));
    xmllint(svg);
    (json, text)
}

/// A minimal XML well-formedness check: one root element, every tag closed in order, attributes
/// quoted, no raw `<` or stray `&` in text or attribute values.
fn well_formed(s: &str) -> Result<(), String> {
    let refs_ok = |text: &str| -> Result<(), String> {
        let mut rest = text;
        while let Some(i) = rest.find('&') {
            let tail = &rest[i + 1..];
            let end = tail.find(';').ok_or_else(|| format!("unterminated reference near {:?}", &rest[i..]))?;
            let name = &tail[..end];
            let ok = matches!(name, "amp" | "lt" | "gt" | "quot" | "apos")
                || name.strip_prefix("#x").is_some_and(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit()))
                || name.strip_prefix('#').is_some_and(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()));
            if !ok {
                return Err(format!("bad reference &{name};"));
            }
            rest = &tail[end + 1..];
        }
        if text.contains('<') { Err(format!("raw '<' in {text:?}")) } else { Ok(()) }
    };
    let mut stack: Vec<&str> = Vec::new();
    let mut roots = 0;
    let mut rest = s;
    if let Some(decl) = rest.strip_prefix("<?xml") {
        let end = decl.find("?>").ok_or("unterminated XML declaration")?;
        rest = &decl[end + 2..];
    }
    while let Some(i) = rest.find('<') {
        let text = &rest[..i];
        if stack.is_empty() && !text.trim().is_empty() {
            return Err(format!("text outside the root: {text:?}"));
        }
        refs_ok(text)?;
        rest = &rest[i..];
        if let Some(c) = rest.strip_prefix("<!--") {
            let end = c.find("-->").ok_or("unterminated comment")?;
            rest = &c[end + 3..];
            continue;
        }
        let end = rest.find('>').ok_or("unterminated tag")?;
        let tag = &rest[1..end];
        rest = &rest[end + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            match stack.pop() {
                Some(open) if open == name.trim() => {}
                other => return Err(format!("</{name}> closes {other:?}")),
            }
            continue;
        }
        let empty = tag.ends_with('/');
        let body = tag.trim_end_matches('/');
        let name_end = body.find(char::is_whitespace).unwrap_or(body.len());
        let name = &body[..name_end];
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == ':' || c == '-' || c == '_') {
            return Err(format!("bad element name in <{tag}>"));
        }
        // Attributes: name="value" pairs, each value free of '<' and stray '&'.
        let mut attrs = body[name_end..].trim();
        let mut seen = BTreeSet::new();
        while !attrs.is_empty() {
            let eq = attrs.find('=').ok_or_else(|| format!("attribute without value in <{tag}>"))?;
            let aname = attrs[..eq].trim();
            if !seen.insert(aname) {
                return Err(format!("attribute {aname} twice in <{tag}>"));
            }
            let after = &attrs[eq + 1..];
            let q = after.chars().next().filter(|&c| c == '"' || c == '\'').ok_or("unquoted attribute")?;
            let close = after[1..].find(q).ok_or("unterminated attribute")?;
            refs_ok(&after[1..=close])?;
            attrs = after[close + 2..].trim_start();
        }
        if stack.is_empty() {
            roots += 1;
        }
        if !empty {
            stack.push(name);
        }
    }
    if !rest.trim().is_empty() {
        return Err(format!("trailing text {rest:?}"));
    }
    match (stack.last(), roots) {
        (None, 1) => Ok(()),
        (Some(open), _) => Err(format!("<{open}> never closed")),
        (None, n) => Err(format!("{n} root elements")),
    }
}

/// `xmllint --noout FILE` when xmllint is installed; nothing otherwise.
fn xmllint(path: &Path) {
    match Command::new("xmllint").arg("--noout").arg(path).output() {
        Ok(out) => assert!(out.status.success(), "xmllint: {}", String::from_utf8_lossy(&out.stderr)),
        Err(e) => eprintln!("xmllint not run ({e}); the hand check stands alone"),
    }
}

/// One drawn cable: its `<path>` line, stroke and the figures of its title.
#[derive(Debug, Clone)]
struct Cable {
    line: String,
    stroke: String,
    /// Routes in the two directions (switch cables only).
    loads: Option<(u64, u64)>,
}

impl Cable {
    fn load(&self) -> u64 {
        self.loads.map_or(0, |(a, b)| a.max(b))
    }
}

/// The cables of the `links` group, by their title's `a[p] -&gt; b[q]` part.
fn cables(svg: &str) -> BTreeMap<String, Cable> {
    let start = svg.find("<g id=\"links\"").expect("links group");
    let end = svg[start..].find("</g>").expect("links group closed") + start;
    let mut out = BTreeMap::new();
    for line in svg[start..end].lines().filter(|l| l.starts_with("<path ")) {
        let attr = |name: &str| {
            let from = line.find(&format!(" {name}=\"")).expect("attribute") + name.len() + 3;
            line[from..from + line[from..].find('"').expect("quoted")].to_owned()
        };
        let title = line.split("<title>").nth(1).and_then(|t| t.split("</title>").next()).expect("title");
        let (ends, figures) = title.split_once(": ").unwrap_or((title, ""));
        let loads = figures.split_once("; back: ").map(|(a, b)| {
            (a.parse().unwrap_or_else(|_| panic!("{line}")), b.parse().unwrap_or_else(|_| panic!("{line}")))
        });
        let c = Cable { line: line.to_owned(), stroke: attr("stroke"), loads };
        assert!(out.insert(ends.to_owned(), c).is_none(), "{ends} drawn twice");
    }
    out
}

/// Cables between two switches, and between a switch and a CA, of a `.net` file.
fn count_cables(path: &Path) -> (usize, usize) {
    let t = Topology::load(path).expect("topology");
    let mut sw = 0;
    let mut ca = 0;
    for n in &t.nodes {
        for p in n.links.iter().flatten() {
            match (n.kind, t.nodes[p.node].kind) {
                (NodeKind::Switch, NodeKind::Switch) => sw += 1,
                (NodeKind::Switch, _) | (_, NodeKind::Switch) => ca += 1,
                _ => {}
            }
        }
    }
    (sw / 2, ca / 2)
}

/// Checks the drawing against the fabric and the check's figures; returns the cables.
fn assert_drawing(svg: &str, json: &serde_json::Value, net: &Path) -> BTreeMap<String, Cable> {
    let cables = cables(svg);
    let (sw, ca) = count_cables(net);
    assert_eq!(cables.len(), sw + ca, "one path per cable");
    assert_eq!(cables.values().filter(|c| c.stroke == CA_LINK).count(), ca, "CA cables in the CA colour");
    assert_eq!(cables.values().filter(|c| c.loads.is_some()).count(), sw, "a figure on every switch cable");
    let max = json["forwarding_index"]["max"].as_u64().expect("forwarding index max");
    assert!(max > 0);
    assert!(svg.contains(&format!("max {max} routes")), "the legend gives the forwarding index's max");
    let hottest = cables.values().map(Cable::load).max();
    assert_eq!(hottest, Some(max), "the busiest cable is the forwarding index's worst link");
    for c in cables.values().filter(|c| c.loads.is_some()) {
        if c.load() == max {
            assert_eq!(c.stroke, HOT, "the busiest cable is hot: {}", c.line);
        } else if c.load() == 0 {
            assert_eq!(c.stroke, IDLE, "{}", c.line);
        } else {
            assert_ne!(c.stroke, IDLE, "{}", c.line);
        }
    }
    cables
}

#[test]
fn offline_drawing_has_every_cable_and_the_hot_spot_of_a_removed_cable() {
    let dir = tmp_dir("offline");
    let net = root().join(FABRIC);
    let (json, svg) = check_svg(&["--topology", FABRIC], &dir.join("healthy.svg"));
    let healthy = assert_drawing(&svg, &json, &net);
    // A healthy 2-level tree: every switch cable carries the same routes, all hot.
    assert!(healthy.values().filter(|c| c.loads.is_some()).all(|c| c.stroke == HOT), "{svg}");
    assert!(svg.contains("tier 2 (2)") && svg.contains("tier 1 (4)") && svg.contains("CAs (8)"), "rows by tier");

    // Pull the cable leaf-0[3] -- spine-0[1]: leaf-0's traffic all goes over spine-1.
    let text = std::fs::read_to_string(&net).expect("fabric");
    let (at_spine, at_leaf) = ("[1]\t\"leaf-0\"[3]\n", "[3]\t\"spine-0\"[1]\n");
    let cut = text.replace(at_spine, "").replace(at_leaf, "");
    assert_eq!(cut.len() + at_spine.len() + at_leaf.len(), text.len(), "both ends of the cable removed");
    let degraded_net = dir.join("degraded.net");
    std::fs::write(&degraded_net, cut).expect("write");
    let degraded_path = degraded_net.to_str().expect("utf-8");
    let (json, svg) = check_svg(&["--topology", degraded_path], &dir.join("degraded.svg"));
    let degraded = assert_drawing(&svg, &json, &degraded_net);
    assert_eq!(degraded.len(), healthy.len() - 1);
    assert!(!degraded.contains_key("leaf-0[3] -&gt; spine-0[1]"), "the pulled cable is not drawn");
    let key = "leaf-0[4] -&gt; spine-1[1]";
    let (before, after) = (healthy[key].load(), degraded[key].load());
    assert!(after > before, "the surviving uplink of leaf-0 takes its load: {before} -> {after}");
    assert_eq!(degraded[key].stroke, HOT, "and is the hot spot: {}", degraded[key].line);
    assert!(degraded.values().any(|c| c.loads.is_some() && c.stroke != HOT), "the rest are cooler");

    // Tables dumped by OpenSM, drawn the same way.
    let (json, svg) = check_svg(
        &["--topology", FABRIC, "--lfts", "tests/data/opensm-lfts.fat-tree-2l-k4.dump"],
        &dir.join("opensm.svg"),
    );
    assert_drawing(&svg, &json, &net);
    assert!(svg.contains("tables from tests/data/opensm-lfts.fat-tree-2l-k4.dump"));

    // A file that cannot be written: exit status 2 after the report.
    let (code, out, err) = ibsm(&["routes", "check", "--topology", FABRIC, "--svg", "/nonexistent/dir/x.svg"]);
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(err.contains("/nonexistent/dir/x.svg"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_three_level_tree_with_names_to_escape() {
    let dir = tmp_dir("escape");
    let text = std::fs::read_to_string(root().join("examples/fabrics/fat-tree-3l-k4.net")).expect("fabric");
    let odd = text.replace("\"core-0\"", "\"core<0> & 'A'\"").replace("\"h3\"", "\"h&3\"");
    assert_ne!(odd, text);
    let net = dir.join("odd.net");
    std::fs::write(&net, odd).expect("write");
    let (json, svg) = check_svg(&["--topology", net.to_str().expect("utf-8")], &dir.join("odd.svg"));
    assert_drawing(&svg, &json, &net);
    assert!(svg.contains("core&lt;0&gt; &amp; &apos;A&apos;"), "escaped name in the drawing");
    assert!(svg.contains("tier 3 (4)") && svg.contains("tier 2 (8)") && svg.contains("tier 1 (8)"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn live_drawing_equals_the_offline_one_with_the_sms_lids() {
    let dir = tmp_dir("live");
    let (sock, state) = (dir.join("sock"), dir.join("state"));
    let mut sm = Daemon::start(
        &[
            "run",
            "--sim",
            FABRIC,
            "--state-dir",
            state.to_str().expect("utf-8"),
            "--control",
            sock.to_str().expect("utf-8"),
        ],
        None,
        &[],
    );
    let s = sock.to_str().expect("utf-8");
    sm.wait_up(&sock, Duration::from_secs(60));
    let (json, live) = check_svg(&["--socket", s], &dir.join("live.svg"));
    let net = root().join(FABRIC);
    let live_cables = assert_drawing(&live, &json, &net);
    assert!(live.contains("(live tables)"), "the legend says whose tables");
    let g2l = state.join("guid2lid");
    let (_, offline) = check_svg(
        &["--topology", FABRIC, "--engine", "ftree,updn,minhop", "--guid2lid", g2l.to_str().expect("utf-8")],
        &dir.join("offline.svg"),
    );
    let offline_cables = cables(&offline);
    let lines = |m: &BTreeMap<String, Cable>| m.values().map(|c| c.line.clone()).collect::<BTreeSet<_>>();
    assert_eq!(lines(&live_cables), lines(&offline_cables), "the same cables, places, colours and figures");
    drop(sm);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_hand_check_rejects_what_is_not_xml() {
    assert_eq!(well_formed("<?xml version=\"1.0\"?>\n<a x=\"1\"><b/><c>t &amp; &#x41;</c></a>\n"), Ok(()));
    for bad in [
        "<a><b></a></b>",
        "<a>x & y</a>",
        "<a>1 < 2</a>",
        "<a x=1/>",
        "<a x=\"<\"/>",
        "<a x=\"1\" x=\"2\"/>",
        "<a/><b/>",
        "<a>",
        "text<a/>",
        "<a>&bogus;</a>",
    ] {
        assert!(well_formed(bad).is_err(), "{bad} passed");
    }
}
