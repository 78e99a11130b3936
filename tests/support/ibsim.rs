//! A harness for running ibsim and infiniband-diags tools from integration tests.
//!
//! Owns the life cycle of one ibsim process per [`Ibsim`] value: a private temporary directory
//! (umad2sim writes `./sys-<pid>/` into the client's working directory), a unique
//! `IBSIM_SOCKNAME` so tests can run in parallel with each other and with any other ibsim on the
//! machine, a console fed through a FIFO, and clean shutdown in `Drop`, including when the test
//! panics. Clients (`smpquery`, an SM under test, ...) run under `ibsim-run` with `SIM_HOST`
//! choosing the attach point; see [`Ibsim::run_at`] and [`Ibsim::spawn_at`].
//!
//! Process hygiene: ibsim is not started directly but under a small `sh` wrapper whose stdin is
//! a pipe from this process. The wrapper forwards console lines into ibsim's FIFO, and when that
//! pipe closes (the [`Ibsim`] is dropped, or the test process dies, even by `SIGKILL`) it kills
//! ibsim. ibsim therefore never sees EOF on its console (on which it spins at 100% CPU) and never
//! outlives the test. Only processes started here are ever signalled, and only by their pid.
//!
//! Limits to remember (see `/work/shared/ibsim.md`): ibsim accepts at most 10 clients at a time,
//! counting every running `ibsim-run` process; a CA client always sits on the CA's port 1 and a
//! switch client on port 0; without `SIM_HOST` a client attaches to the first node of the file.
//!
//! Typical use:
//! ```ignore
//! if !support::ibsim::require_ibsim() { return; }
//! let sim = Ibsim::start(Path::new("/usr/share/doc/ibsim-utils/net-examples/net"))?;
//! let out = sim.run_at(Some("Hca1"), "smpquery", &["-D", "nodeinfo", "0"])?;
//! assert!(out.success(), "{}", out.describe());
//! ```

use std::ffi::OsStr;
use std::fmt::Write as _;
use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

/// The command that installs everything the ibsim tests need (Debian/Ubuntu).
pub const INSTALL_HINT: &str = "apt-get install -y ibsim-utils infiniband-diags opensm";

/// Environment variable: when set to `1`, every ibsim-based test is skipped.
pub const SKIP_ENV: &str = "IBSM_SKIP_IBSIM";

/// Where Debian's ibsim-utils installs its example `.net` files.
pub const NET_EXAMPLES_DIR: &str = "/usr/share/doc/ibsim-utils/net-examples";

/// The programs [`require_ibsim`] checks for.
pub const IBSIM_TOOLS: &[&str] = &["ibsim", "ibsim-run", "smpquery", "ibnetdiscover"];

/// How long [`Ibsim::run_at`] lets a client run before killing it.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(20);

/// Directories searched after `PATH`: the diags live in `/usr/sbin`, which a non-root `PATH`
/// often lacks.
const EXTRA_BIN_DIRS: &[&str] = &["/usr/sbin", "/sbin", "/usr/bin", "/bin"];

/// Console prompt ibsim prints after start-up and after each command.
const PROMPT: &str = "sim> ";

/// Line ibsim prints once the fabric is parsed and its sockets are open.
const READY_LINE: &str = "Network simulator ready.";

/// Files inside the run directory.
const LOG_FILE: &str = "ibsim.out";
const PID_FILE: &str = "ibsim.pid";

/// The wrapper run as `sh -c WRAPPER ibsim-wrapper <ibsim argv...>` in the run directory.
/// It keeps the console FIFO open read-write itself (so no open ever blocks and ibsim never
/// reads EOF), copies its stdin into the FIFO line by line, and kills ibsim when its stdin ends.
const WRAPPER: &str = r#"
mkfifo ibsim.ctl || exit 97
exec 4<>ibsim.ctl
"$@" <ibsim.ctl >ibsim.out 2>&1 4>&- &
pid=$!
echo "$pid" >ibsim.pid
while IFS= read -r line; do printf '%s\n' "$line" >&4; done
kill "$pid" 2>/dev/null
wait "$pid"
"#;

/// Per-process counter that makes run directories and socket names unique.
static NEXT_ID: AtomicUsize = AtomicUsize::new(0);

/// Polls `done` until it holds and returns how long that took; panics past `limit`, naming
/// `what`.
pub fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
    start.elapsed()
}

/// Returns `true` when the ibsim tests can run.
///
/// With `IBSM_SKIP_IBSIM=1` it prints that the test is skipped and returns `false`, whether or
/// not the tools are installed (an explicit request to skip). Otherwise it panics with the
/// install command when any of [`IBSIM_TOOLS`] is missing. Call it first:
/// `if !require_ibsim() { return; }`.
pub fn require_ibsim() -> bool {
    require_tools(IBSIM_TOOLS)
}

/// As [`require_ibsim`], for an explicit list of programs (e.g. add `"opensm"`).
pub fn require_tools(tools: &[&str]) -> bool {
    if std::env::var(SKIP_ENV).is_ok_and(|v| v == "1") {
        let test = thread::current().name().unwrap_or("this test").to_owned();
        eprintln!("skipped {test}: {SKIP_ENV}=1 (needs {})", tools.join(", "));
        return false;
    }
    let missing: Vec<&str> = tools.iter().copied().filter(|t| find_tool(t).is_none()).collect();
    assert!(
        missing.is_empty(),
        "ibsim test prerequisites missing: {} not found in PATH or {}.\n\
         Install them with: {INSTALL_HINT}\n\
         or set {SKIP_ENV}=1 to skip the ibsim tests.",
        missing.join(", "),
        EXTRA_BIN_DIRS.join(":"),
    );
    true
}

/// Full path of an executable, searched in `PATH` and then in the usual system directories.
/// A name containing `/` is returned as is if it exists.
pub fn find_tool(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        let p = PathBuf::from(name);
        return p.is_file().then_some(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(EXTRA_BIN_DIRS.iter().map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// The example `.net` files shipped with ibsim (every file in [`NET_EXAMPLES_DIR`] whose name
/// starts with `net`), sorted by name.
pub fn net_examples() -> io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in fs::read_dir(NET_EXAMPLES_DIR)? {
        let path = entry?.path();
        let is_net = path.file_name().and_then(OsStr::to_str).is_some_and(|n| n.starts_with("net"));
        if is_net && path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// Parses the `Name:.......value` dump format of infiniband-diags (`smpquery`, `perfquery`,
/// `sminfo -v`...) into `(name, value)` pairs, in output order. Header lines (`# ...`) and the
/// tab-indented continuation lines that spell out bit names (under `CapMask:`) are skipped.
pub fn dump_fields(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with(char::is_whitespace))
        .filter_map(|l| {
            let (name, rest) = l.split_once(':')?;
            let value = rest.trim_start_matches('.').trim();
            Some((name.trim().to_owned(), value.to_owned()))
        })
        .collect()
}

/// Parses `saquery`'s record dumps (`NodeRecord dump:` ... with tab-indented `name....value`
/// or `Name:....value` lines) into one map per record; nested dumps (`PortInfo dump:`) are
/// folded into their record. A field that repeats keeps its first value.
pub fn saquery_records(text: &str) -> Vec<std::collections::BTreeMap<String, String>> {
    let mut out: Vec<std::collections::BTreeMap<String, String>> = Vec::new();
    for line in text.lines() {
        if !line.starts_with(char::is_whitespace) {
            if line.trim_end().ends_with("dump:") || line.starts_with("SA ClassPortInfo") {
                out.push(std::collections::BTreeMap::new());
            }
            continue;
        }
        let l = line.trim();
        let cut = match (l.find(".."), l.find(':')) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => continue,
        };
        let name = l[..cut].trim();
        let value = l[cut..].trim_start_matches(['.', ':']).trim();
        if let Some(rec) = out.last_mut()
            && !name.is_empty()
        {
            rec.entry(name.to_owned()).or_insert_with(|| value.to_owned());
        }
    }
    out
}

/// How to start ibsim.
#[derive(Debug, Clone)]
pub struct IbsimConfig {
    /// `-L`: SwitchInfo.LinearFDBCap of every switch and the size of its LFT. `None` keeps
    /// ibsim's default (30720 in 0.10; note that ibsim 0.10 accepts LFT blocks up to 767
    /// whatever this says, so an SM that writes high blocks needs 49152).
    pub linear_fdb_cap: Option<u32>,
    /// `-M`: SwitchInfo.MulticastFDBCap; `None` keeps ibsim's default (1024).
    pub multicast_fdb_cap: Option<u32>,
    /// More arguments placed before the net file (e.g. `-N`, `-S`, `-P` for large fabrics).
    pub extra_args: Vec<String>,
    /// How long to wait for "Network simulator ready.".
    pub ready_timeout: Duration,
}

impl Default for IbsimConfig {
    fn default() -> Self {
        IbsimConfig {
            linear_fdb_cap: None,
            multicast_fdb_cap: None,
            extra_args: Vec::new(),
            ready_timeout: Duration::from_secs(10),
        }
    }
}

/// What a client program did.
#[derive(Debug, Clone)]
pub struct ToolOutput {
    /// The command line, for messages.
    pub command: String,
    /// Exit status; `None` when it was killed for running past its timeout.
    pub status: Option<ExitStatus>,
    /// Everything it wrote to stdout (lossy UTF-8).
    pub stdout: String,
    /// Everything it wrote to stderr (lossy UTF-8; umad2sim logs its attach point here).
    pub stderr: String,
}

impl ToolOutput {
    /// True when the program exited by itself with status 0.
    pub fn success(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }

    /// True when the program was killed for running past its timeout.
    pub fn timed_out(&self) -> bool {
        self.status.is_none()
    }

    /// A multi-line description for assertion messages: command, status, stdout, stderr.
    pub fn describe(&self) -> String {
        let status = self.status.map_or_else(|| "timed out (killed)".to_owned(), |s| s.to_string());
        format!("`{}`: {status}\n--- stdout\n{}--- stderr\n{}", self.command, self.stdout, self.stderr)
    }
}

/// A long-running client started with [`Ibsim::spawn_at`] (an SM under test, a second SM...).
/// Dropping it kills the process (by its pid) and reaps it.
#[derive(Debug)]
pub struct Client {
    child: Child,
    stdout_path: PathBuf,
    stderr_path: PathBuf,
}

impl Client {
    /// Process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The exit status, if the process has ended.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        self.child.try_wait()
    }

    /// Waits up to `timeout` for the process to end by itself; `Ok(None)` if it is still running.
    pub fn wait_timeout(&mut self, timeout: Duration) -> io::Result<Option<ExitStatus>> {
        let deadline = Instant::now() + timeout;
        let mut nap = Duration::from_micros(200);
        loop {
            if let Some(s) = self.child.try_wait()? {
                return Ok(Some(s));
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            thread::sleep(nap);
            nap = (nap * 2).min(Duration::from_millis(20));
        }
    }

    /// Asks the process to stop with SIGTERM (through `kill -TERM <pid>`); does not wait. Use
    /// [`Client::wait_timeout`] to see it exit.
    pub fn terminate(&mut self) -> io::Result<()> {
        if self.child.try_wait()?.is_some() {
            return Ok(());
        }
        let status = Command::new("kill").arg("-TERM").arg(self.pid().to_string()).status()?;
        if status.success() { Ok(()) } else { Err(io::Error::other(format!("kill -TERM {}: {status}", self.pid()))) }
    }

    /// Kills the process (if still running) and returns its exit status.
    pub fn kill(&mut self) -> io::Result<ExitStatus> {
        if let Some(s) = self.child.try_wait()? {
            return Ok(s);
        }
        // It may exit between the check and the signal; the error then is harmless.
        let _ = self.child.kill();
        self.child.wait()
    }

    /// What it has written to stdout so far.
    pub fn stdout(&self) -> String {
        read_lossy(&self.stdout_path)
    }

    /// What it has written to stderr so far.
    pub fn stderr(&self) -> String {
        read_lossy(&self.stderr_path)
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.kill();
    }
}

/// One running ibsim, private to its owner. See the module documentation.
#[derive(Debug)]
pub struct Ibsim {
    dir: PathBuf,
    sockname: String,
    wrapper: Child,
    console: Option<ChildStdin>,
    pid: u32,
    clients_started: usize,
}

impl Ibsim {
    /// Starts ibsim with default options on the `.net` file at `net`.
    pub fn start(net: &Path) -> io::Result<Ibsim> {
        Ibsim::start_with(net, &IbsimConfig::default())
    }

    /// Starts ibsim on a topology given as text (written to `fabric.net` in the run directory),
    /// e.g. the output of `Topology::to_net`.
    pub fn start_text(net_text: &str, cfg: &IbsimConfig) -> io::Result<Ibsim> {
        let (dir, sockname) = make_run_dir()?;
        let net = dir.join("fabric.net");
        if let Err(e) = fs::write(&net, net_text) {
            let _ = fs::remove_dir_all(&dir);
            return Err(e);
        }
        Ibsim::launch(dir, sockname, &net, cfg)
    }

    /// Starts ibsim on the `.net` file at `net` (read in place; relative `include`s resolve
    /// against the run directory). Waits until ibsim says it is ready.
    pub fn start_with(net: &Path, cfg: &IbsimConfig) -> io::Result<Ibsim> {
        let net =
            fs::canonicalize(net).map_err(|e| io::Error::new(e.kind(), format!("net file {}: {e}", net.display())))?;
        let (dir, sockname) = make_run_dir()?;
        Ibsim::launch(dir, sockname, &net, cfg)
    }

    fn launch(dir: PathBuf, sockname: String, net: &Path, cfg: &IbsimConfig) -> io::Result<Ibsim> {
        let ibsim = find_tool("ibsim").ok_or_else(|| missing("ibsim"))?;
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(WRAPPER).arg("ibsim-wrapper").arg(&ibsim).arg("-s");
        if let Some(l) = cfg.linear_fdb_cap {
            cmd.arg("-L").arg(l.to_string());
        }
        if let Some(m) = cfg.multicast_fdb_cap {
            cmd.arg("-M").arg(m.to_string());
        }
        cmd.args(&cfg.extra_args).arg(net);
        cmd.current_dir(&dir)
            .env("IBSIM_SOCKNAME", &sockname)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let wrapper = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                let _ = fs::remove_dir_all(&dir);
                return Err(e);
            }
        };
        // From here on, Drop cleans up whatever happens.
        let mut sim = Ibsim { dir, sockname, console: None, wrapper, pid: 0, clients_started: 0 };
        sim.console = sim.wrapper.stdin.take();
        sim.wait_ready(cfg.ready_timeout)?;
        Ok(sim)
    }

    /// Waits for the ready line and the first prompt, and reads ibsim's pid.
    fn wait_ready(&mut self, timeout: Duration) -> io::Result<()> {
        let deadline = Instant::now() + timeout;
        let mut nap = Duration::from_micros(500);
        loop {
            let log = self.log();
            if log.contains(READY_LINE) && log.contains(PROMPT) {
                let pid = fs::read_to_string(self.dir.join(PID_FILE)).unwrap_or_default();
                if let Ok(pid) = pid.trim().parse::<u32>() {
                    self.pid = pid;
                    return Ok(());
                }
            }
            if let Some(status) = self.wrapper.try_wait()? {
                return Err(io::Error::other(format!("ibsim exited ({status}) before it was ready:\n{log}")));
            }
            if Instant::now() >= deadline {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("ibsim not ready after {timeout:?}:\n{log}"),
                ));
            }
            thread::sleep(nap);
            nap = (nap * 2).min(Duration::from_millis(20));
        }
    }

    /// The run directory (ibsim's and every client's working directory).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The `IBSIM_SOCKNAME` of this instance.
    pub fn sockname(&self) -> &str {
        &self.sockname
    }

    /// Process id of ibsim itself.
    pub fn ibsim_pid(&self) -> u32 {
        self.pid
    }

    /// Everything ibsim has printed so far (start-up messages, console replies, warnings).
    pub fn log(&self) -> String {
        read_lossy(&self.dir.join(LOG_FILE))
    }

    /// A `Command` running `program` under `ibsim-run` against this ibsim, attached at `host`
    /// (a node id or NodeDescription; `None` = the first node of the net file), with the run
    /// directory as working directory and stray simulator variables of the caller removed.
    /// The caller adds arguments and chooses stdio.
    pub fn command(&self, host: Option<&str>, program: &str) -> Command {
        let run = find_tool("ibsim-run").unwrap_or_else(|| PathBuf::from("ibsim-run"));
        let program = find_tool(program).unwrap_or_else(|| PathBuf::from(program));
        let mut cmd = Command::new(run);
        cmd.arg(program)
            .current_dir(&self.dir)
            .env("IBSIM_SOCKNAME", &self.sockname)
            // ibsim-run appends to a pre-set LD_PRELOAD incorrectly; start from a clean one.
            .env_remove("LD_PRELOAD")
            .env_remove("SIM_SET_ISSM")
            .env_remove("IBSIM_SERVER_NAME")
            .env_remove("IBSIM_SERVER_PORT")
            .stdin(Stdio::null());
        match host {
            Some(h) => cmd.env("SIM_HOST", h),
            None => cmd.env_remove("SIM_HOST"),
        };
        cmd
    }

    /// Runs `tool args...` attached at the default node (the first in the net file).
    pub fn run(&self, tool: &str, args: &[&str]) -> io::Result<ToolOutput> {
        self.run_at(None, tool, args)
    }

    /// Runs `tool args...` attached at `host` and collects its output, killing it after
    /// [`DEFAULT_TOOL_TIMEOUT`].
    pub fn run_at(&self, host: Option<&str>, tool: &str, args: &[&str]) -> io::Result<ToolOutput> {
        self.run_timeout(host, tool, args, DEFAULT_TOOL_TIMEOUT)
    }

    /// As [`Ibsim::run_at`] with an explicit timeout.
    pub fn run_timeout(
        &self,
        host: Option<&str>,
        tool: &str,
        args: &[&str],
        timeout: Duration,
    ) -> io::Result<ToolOutput> {
        let mut command = String::new();
        if let Some(h) = host {
            let _ = write!(command, "SIM_HOST={h} ");
        }
        let _ = write!(command, "ibsim-run {tool}");
        for a in args {
            let _ = write!(command, " {a}");
        }
        let child = self.command(host, tool).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
        collect(child, command, timeout)
    }

    /// Starts `program args...` attached at `host` and leaves it running; its stdout and stderr
    /// go to files in the run directory (see [`Client::stdout`]). Counts against ibsim's limit
    /// of 10 clients while it runs.
    pub fn spawn_at(&mut self, host: Option<&str>, program: &str, args: &[&str]) -> io::Result<Client> {
        self.spawn_at_with_env(host, program, args, &[])
    }

    /// As [`Ibsim::spawn_at`], with `env` added to the program's environment (e.g.
    /// `RUST_LOG=info` for an `ibsm` whose info lines a test reads).
    pub fn spawn_at_with_env(
        &mut self,
        host: Option<&str>,
        program: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> io::Result<Client> {
        self.clients_started += 1;
        let n = self.clients_started;
        let stdout_path = self.dir.join(format!("client-{n}.stdout"));
        let stderr_path = self.dir.join(format!("client-{n}.stderr"));
        let child = self
            .command(host, program)
            .args(args)
            .envs(env.iter().copied())
            .stdout(fs::File::create(&stdout_path)?)
            .stderr(fs::File::create(&stderr_path)?)
            .spawn()?;
        Ok(Client { child, stdout_path, stderr_path })
    }

    /// Sends one console command (e.g. `Unlink "Switch1"[3]`, `Dump "Switch1"`) and returns
    /// what ibsim printed in reply, up to its next prompt. Commands are case-insensitive and
    /// node ids are quoted; a command that prints nothing returns an empty string.
    pub fn console(&mut self, command: &str) -> io::Result<String> {
        if command.contains('\n') {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "one console command per call"));
        }
        let log_path = self.dir.join(LOG_FILE);
        let before = fs::metadata(&log_path).map_or(0, |m| m.len());
        let console = self.console.as_mut().ok_or_else(|| io::Error::other("console already closed"))?;
        console.write_all(command.as_bytes())?;
        console.write_all(b"\n")?;
        console.flush()?;
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut nap = Duration::from_micros(200);
        loop {
            let bytes = fs::read(&log_path)?;
            let start = usize::try_from(before).unwrap_or(usize::MAX).min(bytes.len());
            let new = String::from_utf8_lossy(&bytes[start..]);
            // ibsim also prints warnings of its own at any time (e.g. "got trap repress -
            // dropping" after the prompt): the reply is what precedes the first prompt.
            if let Some(at) = new.find(PROMPT) {
                return Ok(new[..at].to_owned());
            }
            if Instant::now() >= deadline {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("no prompt after console command {command:?}; output so far:\n{new}"),
                ));
            }
            thread::sleep(nap);
            nap = (nap * 2).min(Duration::from_millis(20));
        }
    }
}

impl Drop for Ibsim {
    fn drop(&mut self) {
        // EOF on the wrapper's stdin: it kills ibsim and waits for it.
        drop(self.console.take());
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            match self.wrapper.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(2)),
                _ => {
                    // The wrapper is stuck: end ibsim and the wrapper by their pids.
                    if self.pid != 0 {
                        let _ =
                            Command::new("kill").arg("-KILL").arg(self.pid.to_string()).stderr(Stdio::null()).status();
                    }
                    let _ = self.wrapper.kill();
                    let _ = self.wrapper.wait();
                    break;
                }
            }
        }
        if thread::panicking() || std::env::var_os("IBSM_KEEP_IBSIM_DIR").is_some() {
            eprintln!("ibsim run directory kept for inspection: {}", self.dir.display());
        } else {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

/// Creates a fresh run directory under the system temp dir and picks a matching socket name.
fn make_run_dir() -> io::Result<(PathBuf, String)> {
    let pid = std::process::id();
    loop {
        let n = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let name = format!("ibsm-ibsim-{pid}-{n}");
        let dir = std::env::temp_dir().join(&name);
        match fs::create_dir(&dir) {
            Ok(()) => return Ok((dir, name)),
            // Left over by an earlier process with the same pid: take the next number.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
}

/// Waits for `child` (with piped stdout/stderr) up to `timeout`, killing it past that.
fn collect(mut child: Child, command: String, timeout: Duration) -> io::Result<ToolOutput> {
    let out = child.stdout.take();
    let err = child.stderr.take();
    let out = thread::spawn(move || read_pipe(out));
    let err = thread::spawn(move || read_pipe(err));
    let deadline = Instant::now() + timeout;
    let mut nap = Duration::from_micros(100);
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break Some(s);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        thread::sleep(nap);
        nap = (nap * 2).min(Duration::from_millis(5));
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    Ok(ToolOutput { command, status, stdout, stderr })
}

fn read_pipe(pipe: Option<impl Read>) -> String {
    let mut buf = Vec::new();
    if let Some(mut p) = pipe {
        let _ = p.read_to_end(&mut buf);
    }
    String::from_utf8_lossy(&buf).into_owned()
}

fn read_lossy(path: &Path) -> String {
    fs::read(path).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default()
}

fn missing(tool: &str) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("{tool} not found; install with: {INSTALL_HINT}"))
}
