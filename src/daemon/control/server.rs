//! The control socket's listener ([`ControlServer`]): the socket file (created mode 0600, or
//! 0660 with a group for read-only access, under its final name by an atomic rename, a stale
//! file from a dead SM replaced, removed when the server is dropped), the connections to it,
//! and who may change things ([`may_change`]: root and the SM's own user, by the peer's
//! credentials).
//!
//! Connections are served concurrently, each a task on the socket's own runtime thread
//! ([`crate::daemon::surface::Runner`]), under the surface limits ([`Limits`]): at most 64 at once (past
//! that the oldest one still sending its request is closed, or the new one gets `{"error":"busy
//! ..."}` when all are past their requests), 2 s to send the whole request line however it is
//! dripped, and 10 s plus 1 s per MiB to read the answer. A task never touches the SM: a valid
//! query goes to the SM's loop as a [`Pending`] through the channel this server holds the
//! receiving end of ([`ControlServer::next`]), and the task writes whatever comes back.

use std::io::Write as _;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::UnixStream as StdUnixStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::mpsc;

use super::{Answer, ControlError, MAX_REQUEST, Pending, error_line, parse_request};
use crate::daemon::surface::{Admission, Counters, Gate, Limits, Runner, Ticket};

/// Distinguishes the temporary names of sockets bound by one process.
static BIND_SEQ: AtomicU32 = AtomicU32::new(0);
/// What is read and dropped after an over-long request before answering it.
const DRAIN_LIMIT: u64 = 1 << 20;
/// How long that drain may take.
const DRAIN_TIME: Duration = Duration::from_millis(100);

/// The listening control socket. Dropping it stops the listener and every connection, and
/// removes the file.
#[derive(Debug)]
pub struct ControlServer {
    /// The socket path (`None`: no socket, only other listeners such as the metrics endpoint).
    path: Option<PathBuf>,
    /// Device and inode of the socket file we created (removed only if still ours).
    id: (u64, u64),
    /// The listener's thread (none without a socket).
    runner: Option<Runner>,
    counters: Arc<Counters>,
    tx: mpsc::UnboundedSender<Pending>,
    rx: mpsc::UnboundedReceiver<Pending>,
}

impl ControlServer {
    /// Creates the socket at `path` (mode 0600; a stale socket left by a dead SM is replaced)
    /// and starts serving it under the default [`Limits`].
    ///
    /// # Errors
    /// [`ControlError::InUse`] when a live SM answers there, [`ControlError::NotSocket`] when
    /// `path` is some other file, [`ControlError::Io`] when binding fails.
    pub fn bind(path: &Path) -> Result<ControlServer, ControlError> {
        ControlServer::bind_with(path, Limits::DEFAULT, None)
    }

    /// As [`ControlServer::bind`], under `limits`; with `group` (a GID), the socket belongs to
    /// that group and has mode 0660, so its members may ask what does not change anything.
    ///
    /// # Errors
    /// As [`ControlServer::bind`].
    pub fn bind_with(path: &Path, limits: Limits, group: Option<u32>) -> Result<ControlServer, ControlError> {
        let io = |what: &'static str| move |err| ControlError::Io { path: path.to_owned(), what, err };
        if let Ok(meta) = std::fs::symlink_metadata(path) {
            if !meta.file_type().is_socket() {
                return Err(ControlError::NotSocket(path.to_owned()));
            }
            if StdUnixStream::connect(path).is_ok() {
                return Err(ControlError::InUse(path.to_owned()));
            }
            std::fs::remove_file(path).map_err(io("removing the stale socket"))?;
        }
        // Bind under a temporary name, restrict it, then rename: the final name never exists
        // with looser permissions.
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let seq = BIND_SEQ.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!(".ibsm-{}-{seq}.sock.tmp", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        let listener = std::os::unix::net::UnixListener::bind(&tmp).map_err(io("binding"))?;
        let mode = if group.is_some() { 0o660 } else { 0o600 };
        let placed = std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600))
            .map_err(io("setting mode 0600"))
            .and_then(|()| std::os::unix::fs::chown(&tmp, None, group).map_err(io("giving it to the group")))
            .and_then(|()| {
                std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode)).map_err(io("setting its mode"))
            })
            .and_then(|()| std::fs::rename(&tmp, path).map_err(io("renaming into place")))
            .and_then(|()| std::fs::symlink_metadata(path).map_err(io("reading back")));
        let meta = match placed {
            Ok(m) => m,
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                return Err(e);
            }
        };
        let (tx, rx) = mpsc::unbounded_channel();
        let counters = Arc::new(Counters::default());
        let owner = meta.uid();
        let serving = {
            let (tx, counters) = (tx.clone(), Arc::clone(&counters));
            Runner::start("ibsm-control", move || {
                listener.set_nonblocking(true)?;
                let listener = UnixListener::from_std(listener)?;
                Ok(accept_loop(listener, tx, (limits, owner), counters))
            })
            .map_err(io("starting the listener thread"))
        };
        let runner = match serving {
            Ok(r) => r,
            Err(e) => {
                let _ = std::fs::remove_file(path);
                return Err(e);
            }
        };
        tracing::info!(path = %path.display(), "control socket listening");
        Ok(ControlServer {
            path: Some(path.to_owned()),
            id: (meta.dev(), meta.ino()),
            runner: Some(runner),
            counters,
            tx,
            rx,
        })
    }

    /// A server without a socket: only other listeners (the metrics endpoint) send it queries.
    pub fn without_socket() -> ControlServer {
        let (tx, rx) = mpsc::unbounded_channel();
        ControlServer { path: None, id: (0, 0), runner: None, counters: Arc::default(), tx, rx }
    }

    /// The socket path, if there is a socket.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// How its connections ended (all zero without a socket).
    pub fn counters(&self) -> Arc<Counters> {
        Arc::clone(&self.counters)
    }

    /// Where other listeners hand their queries to the SM's loop.
    pub fn sender(&self) -> mpsc::UnboundedSender<Pending> {
        self.tx.clone()
    }

    /// The next valid request; never returns if the listener has ended.
    pub async fn next(&mut self) -> Pending {
        match self.rx.recv().await {
            Some(p) => p,
            None => std::future::pending().await,
        }
    }

    /// A valid request already waiting, if any.
    pub fn try_next(&mut self) -> Option<Pending> {
        self.rx.try_recv().ok()
    }
}

impl crate::daemon::side_queries::SideQueries for ControlServer {
    type Query = Pending;
    async fn next_query(&mut self) -> Pending {
        self.next().await
    }
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        // Requests still queued get "shutting down" (their reply senders are dropped).
        self.rx.close();
        while self.rx.try_recv().is_ok() {}
        // Stops the listener and ends every connection.
        drop(self.runner.take());
        let Some(path) = &self.path else { return };
        let ours = std::fs::symlink_metadata(path).is_ok_and(|m| (m.dev(), m.ino()) == self.id);
        if ours {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Whether a peer with user ID `peer` (none: unknown) may ask for changes on a socket owned
/// by `owner` (the SM's user): root and that user only.
pub fn may_change(peer: Option<u32>, owner: u32) -> bool {
    peer.is_some_and(|uid| uid == 0 || uid == owner)
}

/// The GID of `group`: a number, or a name looked up in `/etc/group` (groups only a directory
/// service knows need their number).
///
/// # Errors
/// No such group, or `/etc/group` unreadable.
pub fn group_id(group: &str) -> Result<u32, String> {
    if let Ok(gid) = group.parse::<u32>() {
        return Ok(gid);
    }
    let text = read_group_file(Path::new("/etc/group"))?;
    gid_in(&text, group).ok_or_else(|| format!("no group {group:?} in /etc/group (give its number instead)"))
}

/// `/etc/group`, a regular file of at most 4 MiB.
fn read_group_file(path: &Path) -> Result<String, String> {
    use std::io::Read as _;
    let f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if !f.metadata().is_ok_and(|m| m.is_file()) {
        return Err(format!("{}: not a regular file", path.display()));
    }
    let mut text = String::new();
    f.take(4 << 20).read_to_string(&mut text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(text)
}

/// The GID of `name` in group-file text (`name:x:gid:members`).
fn gid_in(text: &str, name: &str) -> Option<u32> {
    text.lines().find_map(|line| {
        let mut f = line.split(':');
        (f.next()? == name).then_some(())?;
        f.nth(1)?.trim().parse().ok()
    })
}

async fn accept_loop(
    listener: UnixListener,
    tx: mpsc::UnboundedSender<Pending>,
    (limits, owner): (Limits, u32),
    counters: Arc<Counters>,
) {
    let gate = Gate::new(limits.max_connections, Arc::clone(&counters));
    loop {
        let stream = match listener.accept().await {
            Ok((s, _)) => s,
            Err(e) => {
                // Out of descriptors, typically: wait for connections to end.
                tracing::warn!(error_id = "control-accept", error = %e, "control socket: accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        match gate.admit() {
            Admission::Admitted(ticket) => {
                let id = ticket.id();
                let task = tokio::spawn(serve(stream, ticket, tx.clone(), (limits, owner), Arc::clone(&counters)));
                gate.track(id, task.abort_handle());
                // Let it read what has already arrived before accepting more: under a flood of
                // connections, a client whose request is in is then past eviction.
                tokio::task::yield_now().await;
            }
            Admission::Refused => {
                let busy =
                    error_line(&format!("busy: {} connections are being answered; retry", limits.max_connections));
                // A new socket's buffer is empty: the line fits without blocking.
                if let Ok(s) = stream.into_std() {
                    let _ = (&s).write_all(format!("{busy}\n").as_bytes());
                }
            }
        }
    }
}

/// What a client sent.
enum Request {
    /// One line (the newline excluded), or what came before the client closed its end.
    Line(Vec<u8>),
    /// More than [`MAX_REQUEST`] bytes without a newline.
    TooLong,
}

/// Reads one request, has the SM answer it, writes the answer, under `limits`.
async fn serve(
    mut stream: UnixStream,
    ticket: Ticket,
    tx: mpsc::UnboundedSender<Pending>,
    (limits, owner): (Limits, u32),
    counters: Arc<Counters>,
) {
    let read = tokio::time::timeout(limits.request_deadline, read_request(&mut stream)).await;
    if !ticket.answering() {
        return; // evicted
    }
    let answer = match read {
        Err(_) => {
            Counters::bump(&counters.request_deadline);
            tracing::debug!("control socket: a request did not come whole in time");
            Answer::plain(error_line(&format!(
                "no whole request line within {} ms; send one line of JSON such as {{\"query\":\"status\"}}",
                limits.request_deadline.as_millis()
            )))
        }
        Ok(Err(_)) => {
            Counters::bump(&counters.broken);
            return;
        }
        Ok(Ok(Request::TooLong)) => {
            // Read (a bounded amount of) what follows, so that closing does not reset the
            // connection before the client has read the error.
            let mut sink = tokio::io::sink();
            let _ = tokio::time::timeout(DRAIN_TIME, tokio::io::copy(&mut (&mut stream).take(DRAIN_LIMIT), &mut sink))
                .await;
            Answer::plain(error_line(&format!("request longer than {MAX_REQUEST} bytes")))
        }
        Ok(Ok(Request::Line(line))) => {
            match std::str::from_utf8(&line).map_err(|_| "the request is not UTF-8".to_owned()).and_then(parse_request)
            {
                Err(msg) => Answer::plain(error_line(&msg)),
                Ok(query) if query.changes() && !may_change(stream.peer_cred().ok().map(|c| c.uid()), owner) => {
                    tracing::warn!(
                        error_id = "control-refused",
                        query = query.name(),
                        "control socket: a change asked by a user that is neither root nor the SM's"
                    );
                    Answer::plain(error_line(&format!(
                        "permission denied: {} changes the SM; only root and the SM's user may ask it",
                        query.name()
                    )))
                }
                Ok(query) => {
                    let (pending, wait) = Pending::new(query);
                    let answer = match tx.send(pending) {
                        Ok(()) => wait.await.ok(),
                        Err(_) => None,
                    };
                    answer.unwrap_or_else(|| Answer::plain(error_line("the SM is shutting down")))
                }
            }
        }
    };
    // `answer` (and the place a `routes` answer holds) lives until the write is over.
    let deadline = limits.answer_deadline_for(answer.text.len() + 1);
    let write = async {
        stream.write_all(answer.text.as_bytes()).await?;
        stream.write_all(b"\n").await?;
        stream.shutdown().await
    };
    match tokio::time::timeout(deadline, write).await {
        Ok(Ok(())) => Counters::bump(&counters.answered),
        Ok(Err(_)) => Counters::bump(&counters.broken),
        Err(_) => {
            Counters::bump(&counters.answer_deadline);
            tracing::debug!(
                bytes = answer.text.len(),
                "control socket: an answer was not read in time; connection dropped"
            );
        }
    }
}

/// One line of at most [`MAX_REQUEST`] bytes.
async fn read_request(stream: &mut UnixStream) -> std::io::Result<Request> {
    let mut line = Vec::new();
    let mut reader = tokio::io::BufReader::new(stream.take(MAX_REQUEST + 1));
    reader.read_until(b'\n', &mut line).await?;
    if line.len() as u64 > MAX_REQUEST {
        return Ok(Request::TooLong);
    }
    if line.last() == Some(&b'\n') {
        line.pop();
    }
    Ok(Request::Line(line))
}

#[cfg(test)]
mod tests {
    use std::io::{Read as _, Write as _};
    use std::os::unix::net::UnixStream;
    use std::time::Instant;

    use super::*;
    use crate::daemon::control::request;

    fn tmp_dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("ibsm-control-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn socket_is_0600_answers_garbage_with_an_error_and_is_removed_on_drop() {
        let dir = tmp_dir("life");
        let path = dir.join("s.sock");
        let server = ControlServer::bind(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let a = request(&path, "not json", Duration::from_secs(5)).unwrap();
        assert!(serde_json::from_str::<serde_json::Value>(&a).unwrap()["error"].is_string(), "{a}");
        assert!(matches!(ControlServer::bind(&path), Err(ControlError::InUse(_))));
        drop(server);
        assert!(!path.exists(), "socket removed");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn with_a_group_the_socket_is_0660_and_that_groups_and_changes_need_root_or_the_owner() {
        let dir = tmp_dir("group");
        let path = dir.join("s.sock");
        // The group the directory has: one this process may give a file to.
        let gid = std::fs::metadata(&dir).unwrap().gid();
        let server = ControlServer::bind_with(&path, Limits::DEFAULT, Some(gid)).unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!((meta.permissions().mode() & 0o777, meta.gid()), (0o660, gid));
        drop(server);
        assert!(may_change(Some(0), 1000) && may_change(Some(1000), 1000));
        assert!(!may_change(Some(1001), 1000) && !may_change(None, 1000) && !may_change(None, 0));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn groups_are_found_by_number_or_by_name() {
        let text = "root:x:0:\n# odd line\nibops:x:1234:alice,bob\nbroken:x:\nwheel:x:10:\n";
        assert_eq!(gid_in(text, "ibops"), Some(1234));
        assert_eq!(gid_in(text, "wheel"), Some(10));
        assert_eq!((gid_in(text, "broken"), gid_in(text, "ib"), gid_in(text, "x")), (None, None, None));
        assert_eq!(group_id("4321"), Ok(4321));
        assert_eq!(group_id("root"), Ok(0), "every system has root in /etc/group");
        assert!(group_id("no-such-group-ibsm").unwrap_err().contains("no group"));
    }

    #[test]
    fn a_stale_socket_is_replaced_and_a_regular_file_is_not() {
        let dir = tmp_dir("stale");
        let path = dir.join("s.sock");
        drop(std::os::unix::net::UnixListener::bind(&path).unwrap()); // leaves the file, nobody listening
        assert!(path.exists());
        let server = ControlServer::bind(&path).unwrap();
        drop(server);
        std::fs::write(&path, b"keep me").unwrap();
        assert!(matches!(ControlServer::bind(&path), Err(ControlError::NotSocket(_))));
        assert_eq!(std::fs::read(&path).unwrap(), b"keep me");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Reads what the server says until it closes, within 5 s.
    fn read_to_end(s: &mut UnixStream) -> String {
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).expect("the server closes within 5 s");
        out
    }

    #[test]
    fn past_the_cap_the_oldest_idle_connection_makes_room_and_answering_ones_refuse_the_next() {
        let dir = tmp_dir("cap");
        let path = dir.join("s.sock");
        let limits = Limits { max_connections: 2, request_deadline: Duration::from_secs(30), ..Limits::DEFAULT };
        let mut server = ControlServer::bind_with(&path, limits, None).unwrap();
        // Two idle clients fill the cap; a third evicts the first, which sees its connection end.
        let mut first = UnixStream::connect(&path).unwrap();
        let mut second = UnixStream::connect(&path).unwrap();
        let mut third = UnixStream::connect(&path).unwrap();
        assert_eq!(read_to_end(&mut first), "", "the oldest idle connection is closed");
        assert_eq!(server.counters().evicted.load(Ordering::Relaxed), 1);
        // The third is served: nobody answers for the SM here, so answer by hand.
        third.write_all(b"{\"query\":\"status\"}\n").unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        let pending = loop {
            if let Some(p) = server.try_next() {
                break p;
            }
            assert!(Instant::now() < deadline, "the third request reached the SM's channel");
            std::thread::sleep(Duration::from_millis(5));
        };
        // While it waits for its answer it cannot be evicted; the second neither, once it has
        // asked: a fourth is refused at once.
        second.write_all(b"{\"query\":\"status\"}\n").unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        let pending2 = loop {
            if let Some(p) = server.try_next() {
                break p;
            }
            assert!(Instant::now() < deadline, "the second request reached the SM's channel");
            std::thread::sleep(Duration::from_millis(5));
        };
        let mut fourth = UnixStream::connect(&path).unwrap();
        assert!(read_to_end(&mut fourth).contains("busy"));
        assert_eq!(server.counters().refused.load(Ordering::Relaxed), 1);
        pending.reply("{\"ok\":3}".to_owned());
        pending2.reply("{\"ok\":2}".to_owned());
        assert_eq!(read_to_end(&mut third), "{\"ok\":3}\n");
        assert_eq!(read_to_end(&mut second), "{\"ok\":2}\n");
        drop(server);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_answer_nobody_reads_is_dropped_at_its_deadline() {
        let dir = tmp_dir("unread");
        let path = dir.join("s.sock");
        // 0.3 s whatever the size.
        let limits =
            Limits { answer_deadline: Duration::from_millis(300), answer_min_rate: 1 << 50, ..Limits::DEFAULT };
        let mut server = ControlServer::bind_with(&path, limits, None).unwrap();
        let mut c = UnixStream::connect(&path).unwrap();
        c.write_all(b"{\"query\":\"routes\"}\n").unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        let pending = loop {
            if let Some(p) = server.try_next() {
                break p;
            }
            assert!(Instant::now() < deadline, "the request reached the SM's channel");
            std::thread::sleep(Duration::from_millis(5));
        };
        // 8 MiB: far more than the socket buffers hold.
        pending.reply("x".repeat(8 << 20));
        let deadline = Instant::now() + Duration::from_secs(30);
        while server.counters().answer_deadline.load(Ordering::Relaxed) == 0 {
            assert!(Instant::now() < deadline, "the unread answer was not dropped");
            std::thread::sleep(Duration::from_millis(20));
        }
        // The reader finds a cut answer, then the end.
        let got = read_to_end(&mut c);
        assert!(got.len() < 8 << 20, "{} bytes", got.len());
        drop(server);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
