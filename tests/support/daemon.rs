//! A running `ibsm run` as a child process of a test: starting it (from the repository root, or
//! under `ibsim-run` through a prepared [`Command`]), asking its control socket for `status`,
//! waiting for its subnet to come up, signalling it, and killing it (only this process, by its
//! pid) when the test ends or fails half-way.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::cmd::root;

/// A child `ibsm run`, killed and reaped when dropped.
#[derive(Debug)]
pub struct Daemon(pub Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Daemon {
    /// Starts `ibsm args...` from the repository root, stdout discarded, stderr into the file
    /// `stderr` (discarded when `None`), with `env` added.
    pub fn start(args: &[&str], stderr: Option<&Path>, env: &[(&str, &str)]) -> Daemon {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ibsm"));
        cmd.args(args).current_dir(root()).envs(env.iter().copied());
        Daemon::spawn(&mut cmd, stderr)
    }

    /// Starts `ibsm run --sim FABRIC` with its state directory (`state`) and control socket
    /// (`sock`) in `dir`; the daemon and the socket's path.
    pub fn start_sim(dir: &Path, fabric: &str) -> (Daemon, PathBuf) {
        let sock = dir.join("sock");
        let state = dir.join("state");
        let (st, so) = (state.to_str().expect("utf-8"), sock.to_str().expect("utf-8"));
        let sm = Daemon::start(&["run", "--sim", fabric, "--state-dir", st, "--control", so], None, &[]);
        (sm, sock)
    }

    /// Starts a prepared command (e.g. `Ibsim::command` for an SM under ibsim), stdout
    /// discarded, stderr into the file `stderr` (discarded when `None`).
    pub fn spawn(cmd: &mut Command, stderr: Option<&Path>) -> Daemon {
        let err = match stderr {
            Some(p) => Stdio::from(std::fs::File::create(p).expect("stderr file")),
            None => Stdio::null(),
        };
        Daemon(cmd.stdout(Stdio::null()).stderr(err).spawn().expect("ibsm run starts"))
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.0.id()
    }

    /// Whether it is still running.
    pub fn alive(&mut self) -> bool {
        self.0.try_wait().ok().flatten().is_none()
    }

    /// Sends `signal` (`HUP`, `TERM`, ...) with `kill`.
    pub fn send(&self, signal: &str) {
        let st = Command::new("kill").arg(format!("-{signal}")).arg(self.pid().to_string()).status().expect("kill");
        assert!(st.success(), "kill -{signal}");
    }

    /// Polls its control socket until `status` says the subnet is up (the SM must stay alive),
    /// at most `limit`; returns that status.
    pub fn wait_up(&mut self, sock: &Path, limit: Duration) -> serde_json::Value {
        let deadline = Instant::now() + limit;
        loop {
            assert!(self.alive(), "the SM exited");
            assert!(Instant::now() < deadline, "the subnet did not come up within {limit:?}");
            if let Some(st) = status(sock).filter(|st| st["subnet_up"] == true) {
                return st;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The SM's answer to `status` over its control socket, if it answers.
pub fn status(sock: &Path) -> Option<serde_json::Value> {
    let mut s = UnixStream::connect(sock).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    s.write_all(b"{\"query\":\"status\"}\n").ok()?;
    let mut answer = String::new();
    s.read_to_string(&mut answer).ok()?;
    serde_json::from_str(answer.trim()).ok()
}
