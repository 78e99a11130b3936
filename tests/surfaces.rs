//! The operator surfaces under an adversarial local user: `ibsm run --sim` as a child process
//! with its control socket and metrics endpoint, attacked the ways issue 22 lists (hundreds of
//! idle connections, a client dripping its request a byte at a time, a client that asks for
//! `routes` and never reads, slowloris headers, a request line that is not UTF-8), and a flood
//! of connections held open. After each attack, while the attackers are still connected,
//! `status` and a scrape must each answer within a second. Every wait is a deadline; the only
//! sleeps are the drip interval, which is the attack itself.

mod support;

use std::io::{BufRead as _, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use ibsm::daemon::control::{Query, Status};
use support::cmd::{ibsm, root, tmp_dir};

const FABRIC: &str = "examples/fabrics/fat-tree-2l-k4.net";
/// How long `status` and a scrape may take while the surfaces are under attack.
const ANSWER_LIMIT: Duration = Duration::from_secs(1);
/// What a scrape's connect may take beyond [`ANSWER_LIMIT`] under a flood of TCP connections:
/// a SYN that finds the listener's accept queue full is dropped by the kernel, however fast the
/// server drains it, and the client's TCP sends it again after its initial retransmission
/// timeout (1 s on Linux). One such retransmission is TCP's, not the SM's; a listener that stopped
/// accepting would still fail the connect.
const SYN_RETRANSMIT: Duration = Duration::from_secs(1);
/// The attacker's drip interval: under the old per-read timeout (2 s) it kept a request alive
/// for ever.
const DRIP: Duration = Duration::from_millis(1500);

/// A running `ibsm run --sim` with both surfaces; killed on drop.
struct Sm {
    child: Child,
    sock: PathBuf,
    addr: String,
    dir: PathBuf,
}

impl Drop for Sm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Starts the SM on `fabric` and waits (deadline) until `status` says the subnet is up.
fn start(tag: &str, fabric: &Path) -> Sm {
    let dir = tmp_dir(&format!("surfaces-{tag}"));
    let sock = dir.join("sock");
    let mut child = Command::new(env!("CARGO_BIN_EXE_ibsm"))
        .arg("run")
        .arg("--sim")
        .arg(fabric)
        .arg("--control")
        .arg(&sock)
        .args(["--metrics", "127.0.0.1:0"])
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("ibsm run starts");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = std::io::BufReader::new(stdout).lines();
    let first = lines.next().and_then(Result::ok).unwrap_or_default();
    // Keep reading what it prints, so that it never writes into a closed pipe.
    std::thread::spawn(move || lines.for_each(drop));
    let addr = first
        .strip_prefix("metrics: http://")
        .and_then(|r| r.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("the address line, not {first:?}"))
        .to_owned();
    let mut sm = Sm { child, sock, addr, dir };
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(sm.child.try_wait().ok().flatten().is_none(), "the SM exited before it came up");
        if let Ok(s) = ibsm::daemon::control::query::<Status>(&sm.sock, &Query::Status, Duration::from_secs(5))
            && s.subnet_up
        {
            return sm;
        }
        assert!(Instant::now() < deadline, "the SM did not come up within 60 s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `status` over the control socket and a scrape of the metrics endpoint, each answered in
/// full within [`ANSWER_LIMIT`].
fn assert_responsive(sm: &Sm, during: &str) {
    let t = Instant::now();
    let s = ibsm::daemon::control::query::<Status>(&sm.sock, &Query::Status, ANSWER_LIMIT)
        .unwrap_or_else(|e| panic!("{during}: status failed after {:?}: {e}", t.elapsed()));
    let took = t.elapsed();
    assert!(took < ANSWER_LIMIT, "{during}: status took {took:?}");
    assert_eq!(s.state, "master", "{during}");

    let t = Instant::now();
    let (status, body, took) = scrape_within(&sm.addr, ANSWER_LIMIT + SYN_RETRANSMIT, ANSWER_LIMIT)
        .unwrap_or_else(|e| panic!("{during}: scrape failed after {:?}: {e}", t.elapsed()));
    assert!(took < ANSWER_LIMIT, "{during}: the scrape took {took:?} once connected");
    assert!(status.contains(" 200 "), "{during}: {status}");
    assert!(body.contains("ibsm_sm_state 3\n"), "{during}: {body}");
}

/// `ibsm_surface_connections_total{surface, outcome}` from a fresh scrape.
fn connections(sm: &Sm, surface: &str, outcome: &str) -> u64 {
    let (_, body) = scrape(&sm.addr, Duration::from_secs(5)).expect("scrape");
    let key = format!("ibsm_surface_connections_total{{surface=\"{surface}\",outcome=\"{outcome}\"}} ");
    body.lines()
        .find_map(|l| l.strip_prefix(&key))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {key}in\n{body}"))
}

/// One `GET /metrics`, connected within `limit` and read to its end within `limit` of that:
/// (status line, body).
fn scrape(addr: &str, limit: Duration) -> std::io::Result<(String, String)> {
    let (status, body, _) = scrape_within(addr, limit, limit)?;
    Ok((status, body))
}

/// A scrape whose connect may take up to `connect`, and whose answer must come whole within
/// `answer` of the connection; also says how long the answer took once connected.
fn scrape_within(addr: &str, connect: Duration, answer: Duration) -> std::io::Result<(String, String, Duration)> {
    let mut s = TcpStream::connect_timeout(&addr.parse().expect("address"), connect)?;
    let connected = Instant::now();
    let deadline = connected + answer;
    s.set_write_timeout(Some(answer))?;
    s.write_all(format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes())?;
    let text = read_all_until(&mut s, deadline)?;
    let took = connected.elapsed();
    let text = String::from_utf8_lossy(&text).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    Ok((head.lines().next().unwrap_or("").to_owned(), body.to_owned(), took))
}

/// Reads `s` to its end, failing with `TimedOut` at `deadline`.
fn read_all_until<S: Read + ReadTimeout>(s: &mut S, deadline: Instant) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 65536];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("{} bytes by the deadline", out.len()),
            ));
        }
        s.timeout(left)?;
        match s.read(&mut buf) {
            Ok(0) => return Ok(out),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Both stream types set their read timeout alike.
trait ReadTimeout {
    fn timeout(&self, t: Duration) -> std::io::Result<()>;
}
impl ReadTimeout for TcpStream {
    fn timeout(&self, t: Duration) -> std::io::Result<()> {
        self.set_read_timeout(Some(t))
    }
}
impl ReadTimeout for UnixStream {
    fn timeout(&self, t: Duration) -> std::io::Result<()> {
        self.set_read_timeout(Some(t))
    }
}

/// Opens `n` connections with `open` on a thread of its own (a server that does not accept can
/// make `connect` block) and returns them, or fails at the deadline.
fn open_many<T: Send + 'static>(n: usize, open: impl Fn() -> std::io::Result<T> + Send + 'static) -> Vec<T> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for _ in 0..n {
            if tx.send(open()).is_err() {
                return;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(Ok(c)) => out.push(c),
            Ok(Err(e)) => panic!("connection {} failed: {e}", out.len()),
            Err(e) => panic!("only {} of {n} connections opened within 10 s ({e})", out.len()),
        }
    }
    out
}

/// A client that sends `text` one byte every [`DRIP`] on its own thread until the connection
/// fails or `stop` is set.
fn drip<S: Write + Send + 'static>(mut s: S, text: &'static [u8], stop: Arc<AtomicBool>) {
    std::thread::spawn(move || {
        for b in text.iter().cycle() {
            if stop.load(Ordering::Acquire) || s.write_all(std::slice::from_ref(b)).is_err() {
                return;
            }
            std::thread::sleep(DRIP);
        }
    });
}

/// Waits until the server ends the connection (EOF or an error answer and EOF) and returns
/// after how long and what it said; `None` if it still holds it at the deadline.
fn ended_by_server<S: Read + ReadTimeout>(s: &mut S, since: Instant, limit: Duration) -> Option<(Duration, String)> {
    match read_all_until(s, since + limit) {
        Ok(said) => Some((since.elapsed(), String::from_utf8_lossy(&said).into_owned())),
        Err(e) if e.kind() == std::io::ErrorKind::TimedOut || e.kind() == std::io::ErrorKind::WouldBlock => None,
        // A reset is the server ending it too.
        Err(e) => Some((since.elapsed(), e.to_string())),
    }
}

#[test]
fn two_hundred_idle_connections_on_each_surface_lock_nobody_out() {
    let sm = start("idle", &root().join(FABRIC));
    let sock = sm.sock.clone();
    let control = open_many(200, move || UnixStream::connect(&sock));
    let addr = sm.addr.clone();
    let http = open_many(200, move || TcpStream::connect(&addr));
    assert_responsive(&sm, "200 idle connections on each surface");
    // Past the cap of 64, each new connection took the place of the oldest idle one.
    assert!(connections(&sm, "control", "evicted") >= 200 - 64, "control");
    assert!(connections(&sm, "metrics", "evicted") >= 200 - 64, "metrics");
    drop((control, http));
}

#[test]
fn a_client_dripping_its_request_is_cut_off_and_locks_nobody_out() {
    let sm = start("drip", &root().join(FABRIC));
    let stop = Arc::new(AtomicBool::new(false));
    let mut c = UnixStream::connect(&sm.sock).expect("connects");
    let since = Instant::now();
    drip(c.try_clone().expect("clone"), b"{\"query\":\"status\"}\n", Arc::clone(&stop));
    assert_responsive(&sm, "a client dripping its control request");
    // The whole request has a deadline (2 s), however it is dripped.
    let ended = ended_by_server(&mut c, since, Duration::from_secs(5));
    stop.store(true, Ordering::Release);
    let (after, said) = ended.expect("the dripping client still connected after 5 s");
    assert!(after >= Duration::from_millis(1900), "cut off after {after:?} only: {said}");
    assert!(said.contains("error"), "{said}");
    assert_eq!(connections(&sm, "control", "request_deadline"), 1);
}

#[test]
fn slowloris_headers_on_the_metrics_endpoint_lock_nobody_out() {
    let sm = start("slowloris", &root().join(FABRIC));
    let stop = Arc::new(AtomicBool::new(false));
    let mut c = TcpStream::connect(&sm.addr).expect("connects");
    c.write_all(b"GET /metrics HTTP/1.1\r\nHost: ibsm\r\n").expect("writes");
    let since = Instant::now();
    drip(c.try_clone().expect("clone"), b"X-Slow: yes\r\n", Arc::clone(&stop));
    assert_responsive(&sm, "a slowloris client on the metrics endpoint");
    let ended = ended_by_server(&mut c, since, Duration::from_secs(5));
    stop.store(true, Ordering::Release);
    let (after, said) = ended.expect("the slowloris client still connected after 5 s");
    assert!(!said.contains(" 200 "), "{said}");
    assert!(after < Duration::from_secs(5), "{after:?}");
    assert_eq!(connections(&sm, "metrics", "request_deadline"), 1);
}

#[test]
fn a_client_that_does_not_read_its_routes_answer_locks_nobody_out() {
    // A 3-level fat tree of radix 16 (320 switches, 1,024 CAs): its `routes` answer (over
    // 1 MB) is far more than the socket buffers hold.
    let dir = tmp_dir("surfaces-unread-fabric");
    let net = dir.join("ft3-16.net");
    let (code, _, err) =
        ibsm(&["sim", "gen", "fat-tree", "--levels", "3", "--radix", "16", "-o", net.to_str().expect("utf-8")]);
    assert_eq!(code, Some(0), "{err}");
    let sm = start("unread", &net);
    let mut c = UnixStream::connect(&sm.sock).expect("connects");
    c.write_all(Query::Routes.request_line().as_bytes()).and_then(|()| c.write_all(b"\n")).expect("asks");
    // The answer has begun to arrive: the server is writing it now, into full buffers.
    let mut first = [0u8; 1];
    c.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    c.read_exact(&mut first).expect("the routes answer begins within 20 s");
    assert_responsive(&sm, "a client not reading its routes answer");
    // Answers nobody reads cannot pile up in memory: with a second one held as well, a third
    // `routes` is told to retry at once; once a holder goes, `routes` is answered again.
    let mut c2 = UnixStream::connect(&sm.sock).expect("connects");
    c2.write_all(Query::Routes.request_line().as_bytes()).and_then(|()| c2.write_all(b"\n")).expect("asks");
    c2.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    c2.read_exact(&mut [0u8; 1]).expect("the second routes answer begins within 20 s");
    let t = Instant::now();
    let third =
        ibsm::daemon::control::request(&sm.sock, &Query::Routes.request_line(), Duration::from_secs(5)).expect("third");
    assert!(third.contains("busy") && t.elapsed() < ANSWER_LIMIT, "{:.200} after {:?}", third, t.elapsed());
    drop(c2);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let again = ibsm::daemon::control::request(&sm.sock, &Query::Routes.request_line(), Duration::from_secs(10))
            .expect("again");
        if !again.contains("busy") {
            assert!(again.len() > 1 << 20, "{again:.200}");
            break;
        }
        assert!(Instant::now() < deadline, "routes still busy 10 s after a holder left");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The reader comes back before the answer's deadline: the answer is whole.
    let rest = read_all_until(&mut c, Instant::now() + Duration::from_secs(10)).expect("the rest of the answer");
    let mut answer = first.to_vec();
    answer.extend_from_slice(&rest);
    assert!(answer.len() > 1 << 20, "{} bytes is too small to fill the socket buffers", answer.len());
    let v: serde_json::Value = serde_json::from_slice(&answer).expect("the answer is JSON");
    assert!(v.get("switches").is_some(), "{:.200}", String::from_utf8_lossy(&answer));
    drop(sm);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_request_line_that_is_not_utf8_gets_400() {
    let sm = start("utf8", &root().join(FABRIC));
    for request in [&b"GET /metrics\xff\xfe HTTP/1.1\r\nHost: x\r\n\r\n"[..], b"G\xc3\x28T /metrics HTTP/1.1\r\n\r\n"] {
        let mut c = TcpStream::connect(&sm.addr).expect("connects");
        c.write_all(request).expect("writes");
        let said = read_all_until(&mut c, Instant::now() + Duration::from_secs(5))
            .unwrap_or_else(|e| panic!("no answer to {:?} within 5 s: {e}", String::from_utf8_lossy(request)));
        let said = String::from_utf8_lossy(&said);
        assert!(said.starts_with("HTTP/1.1 400 "), "{:?}: {said:?}", String::from_utf8_lossy(request));
    }
    assert_responsive(&sm, "after requests that are not UTF-8");
}

#[test]
fn a_flood_of_connections_held_open_locks_nobody_out() {
    let sm = start("flood", &root().join(FABRIC));
    let stop = Arc::new(AtomicBool::new(false));
    let made = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let flood = |open: Box<dyn Fn() -> Option<Box<dyn Send>> + Send>| {
        let (stop, made) = (Arc::clone(&stop), Arc::clone(&made));
        std::thread::spawn(move || {
            // Holds the newest 2,000, so that the server keeps having to make room.
            let mut held = std::collections::VecDeque::new();
            while !stop.load(Ordering::Acquire) {
                if let Some(c) = open() {
                    held.push_back(c);
                    made.fetch_add(1, Ordering::Relaxed);
                }
                if held.len() > 2000 {
                    held.pop_front();
                }
            }
        })
    };
    let sock = sm.sock.clone();
    let a = flood(Box::new(move || UnixStream::connect(&sock).ok().map(|c| Box::new(c) as Box<dyn Send>)));
    let addr = sm.addr.clone();
    let b = flood(Box::new(move || TcpStream::connect(&addr).ok().map(|c| Box::new(c) as Box<dyn Send>)));
    let deadline = Instant::now() + Duration::from_secs(10);
    while made.load(Ordering::Relaxed) < 1000 {
        assert!(Instant::now() < deadline, "the flood did not get going");
        std::thread::sleep(Duration::from_millis(5));
    }
    let result = std::panic::catch_unwind(|| {
        for round in 0..3 {
            assert_responsive(&sm, &format!("a flood of connections, round {round}"));
        }
    });
    stop.store(true, Ordering::Release);
    let _ = (a.join(), b.join());
    eprintln!("flood: {} connections opened", made.load(Ordering::Relaxed));
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}
