//! The web page at `/` of the metrics endpoint, in a real headless browser (Debian's
//! `chromium`): a simulated SM (`ibsm run --sim`) with one cable given an error rate
//! (`--sim-link-errors`) serves the page; Chromium loads it with the cable's port in the URL
//! fragment, runs its scripts, and dumps the DOM. The bad cable must be drawn in the error
//! colour, a clean cable must not, and the port's detail must show its counters. A screenshot
//! is kept under the target directory (its path printed).
//!
//! Without `chromium` the test fails when `CI` is set and is skipped otherwise (it says why).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

mod support;
use support::cmd::{root, tmp_dir};
use support::daemon::Daemon;
use support::sa::example;

const ERROR_COLOUR: &str = "#d7191c";
const CLEAN_COLOUR: &str = "#2e7d32";

/// The browser, or why the test cannot run.
fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join("chromium")).find(|p| p.is_file())
}

/// Runs `cmd` to its end within `limit` (killed past it); its stdout.
fn run_bounded(cmd: &mut Command, limit: Duration) -> String {
    let mut child: Child = cmd.stdout(Stdio::piped()).stderr(Stdio::null()).spawn().expect("chromium starts");
    let mut out = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + limit;
    loop {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    reader.join().expect("reader")
}

fn browser(chromium: &Path, profile: &Path, extra: &[String], url: &str) -> Command {
    let mut cmd = Command::new(chromium);
    cmd.args(["--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--disable-dev-shm-usage"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--virtual-time-budget=4000")
        .args(extra)
        .arg(url);
    cmd
}

/// One GET over plain TCP: (status line, body).
fn http_get(addr: &str, method: &str, path: &str) -> (String, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    write!(s, "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n").expect("write");
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    (head.to_owned(), body.to_owned())
}

/// The opening tag of the element whose attribute `attr` equals `value` in `dom`.
fn tag_with<'a>(dom: &'a str, attr: &str, value: &str) -> Option<&'a str> {
    let at = dom.find(&format!("{attr}=\"{value}\""))?;
    let start = dom[..at].rfind('<')?;
    let end = at + dom[at..].find('>')?;
    Some(&dom[start..=end])
}

/// The `data-link` value of an element's attributes.
fn data_link(attrs: &str) -> Option<&str> {
    let at = attrs.find("data-link=\"")? + "data-link=\"".len();
    Some(&attrs[at..at + attrs[at..].find('"')?])
}

/// The cells' text of the table row `<tr data-counter="name">`.
fn counter_row(dom: &str, name: &str) -> Vec<String> {
    let Some(at) = dom.find(&format!("<tr data-counter=\"{name}\">")) else { return Vec::new() };
    let row = &dom[at..at + dom[at..].find("</tr>").unwrap_or(0)];
    row.split("<td")
        .skip(1)
        .map(|c| c.split_once('>').map_or("", |x| x.1).split('<').next().unwrap_or("").to_owned())
        .collect()
}

#[test]
fn the_page_draws_the_bad_cable_in_the_error_colour_and_opens_its_counters() {
    let Some(chromium) = chromium() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "chromium is not installed (apt-get install -y chromium); CI must run this test"
        );
        eprintln!("skipped: chromium is not installed (apt-get install -y chromium)");
        return;
    };
    let dir = tmp_dir("page");
    let topo = example("fat-tree-2l-k4.net");
    let guid = |name: &str| format!("{:#018x}", topo.nodes[topo.find(name).expect("node")].node_guid.0);
    let (leaf, spine) = (guid("leaf-0"), guid("spine-0"));
    // leaf-0 port 3 is cabled to spine-0: 20 symbol errors a second there, over ibqueryerrors's
    // threshold of 10 an interval.
    let (state, sock) = (dir.join("state"), dir.join("sock"));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ibsm"));
    cmd.args(["run", "--sim", "examples/fabrics/fat-tree-2l-k4.net", "--metrics", "127.0.0.1:0"])
        .args(["--sim-link-errors", "leaf-0[3] symbol=20"])
        .arg("--state-dir")
        .arg(&state)
        .arg("--control")
        .arg(&sock)
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut sm = Daemon(cmd.spawn().expect("ibsm run starts"));
    let out = sm.0.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if let Some(a) = line.strip_prefix("metrics: http://").and_then(|l| l.strip_suffix("/metrics")) {
                let _ = tx.send(a.to_owned());
            }
        }
    });
    let addr = rx.recv_timeout(Duration::from_secs(30)).expect("the metrics address printed");
    sm.wait_up(&sock, Duration::from_secs(60));

    // The endpoint itself: the page, its JSON, read-only.
    let (head, body) = http_get(&addr, "GET", "/");
    assert!(head.starts_with("HTTP/1.1 200") && head.contains("text/html"), "{head}");
    assert!(body.contains("<svg id=\"picture\"") && !body.contains("src=\"http"), "self-contained page");
    let (head, _) = http_get(&addr, "POST", "/api/fabric");
    assert!(head.starts_with("HTTP/1.1 405") && head.to_ascii_lowercase().contains("allow: get"), "{head}");
    let (head, body) = http_get(&addr, "GET", "/api/fabric");
    assert!(head.starts_with("HTTP/1.1 200") && head.contains("application/json"), "{head}");
    let fabric: serde_json::Value = serde_json::from_str(&body).expect("fabric JSON");
    assert_eq!(fabric["cables"], 16, "{body}");
    assert_eq!(fabric["by_severity"]["over-threshold"], 1, "only the bad cable is over: {body}");

    // The browser: the bad cable's port opened through the URL fragment.
    let url = format!("http://{addr}/#port={leaf}:3");
    let dom = run_bounded(
        &mut browser(&chromium, &dir.join("profile"), &["--dump-dom".to_owned()], &url),
        Duration::from_secs(90),
    );
    assert!(dom.contains("id=\"picture\""), "no page in the DOM:\n{dom}");
    let lines: Vec<&str> = dom
        .split("<line ")
        .skip(1)
        .map(|l| &l[..l.find('>').unwrap_or(l.len())])
        .filter(|l| l.contains("class=\"link "))
        .collect();
    assert_eq!(lines.len(), 16, "one line per cable on a fabric this small:\n{dom}");
    // A cable's line names its two ports, upper end first: `GUID:PORT-GUID:PORT`.
    let cable = |ends: &[String]| {
        lines.iter().find(|l| data_link(l).is_some_and(|v| ends.iter().all(|e| v.split('-').any(|x| x == e)))).copied()
    };
    let bad = cable(&[format!("{leaf}:3")]).unwrap_or_else(|| panic!("no line for leaf-0 port 3:\n{dom}"));
    assert!(data_link(bad).is_some_and(|v| v.starts_with(&format!("{spine}:"))), "{bad}");
    assert!(bad.contains("sev-over-threshold") && bad.contains(&format!("stroke=\"{ERROR_COLOUR}\"")), "{bad}");
    assert_eq!(lines.iter().filter(|l| l.contains(ERROR_COLOUR)).count(), 1, "only the bad cable in the error colour");
    // A good cable: leaf-0 port 4, to spine-1.
    let good = cable(&[format!("{leaf}:4")]).expect("leaf-0 port 4's line");
    assert!(good.contains("sev-ok") && good.contains(&format!("stroke=\"{CLEAN_COLOUR}\"")), "{good}");
    // The detail of the port named in the fragment: its counters, the symbol errors over.
    let detail = tag_with(&dom, "id", "detail").expect("the detail panel");
    assert!(detail.contains(&format!("data-port=\"{leaf}:3\"")) && !detail.contains("hidden"), "{detail}");
    let row = counter_row(&dom, "SymbolErrorCounter");
    assert!(row.len() >= 3, "{row:?}");
    let last: u64 = row[1].parse().unwrap_or_else(|_| panic!("last interval {row:?}"));
    assert!(last >= 10, "the symbol errors of the last interval show: {row:?}");
    assert!(dom.contains("<td class=\"over\">"), "the counter over threshold is marked");

    // The screenshot, kept as an artefact.
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("page");
    std::fs::create_dir_all(&shots).expect("artefact directory");
    let shot = shots.join("page.png");
    let _ = std::fs::remove_file(&shot);
    let extra = [
        format!("--screenshot={}", shot.display()),
        "--window-size=1400,900".to_owned(),
        "--hide-scrollbars".to_owned(),
    ];
    run_bounded(&mut browser(&chromium, &dir.join("profile2"), &extra, &url), Duration::from_secs(90));
    let png = std::fs::read(&shot).expect("a screenshot");
    assert!(png.starts_with(b"\x89PNG"), "a PNG");
    println!("screenshot: {}", shot.display());
    drop(sm);
    let _ = std::fs::remove_dir_all(&dir);
}
