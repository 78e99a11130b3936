//! systemd's notify protocol, written directly (no libsystemd): `READY=1` once the SM knows its
//! role (first sweep done, or standing by), `STATUS=` with its state, `WATCHDOG=1` from the
//! event loop while it runs, `STOPPING=1` on the way out.
//!
//! Owns the datagram socket named by `NOTIFY_SOCKET` (a path, or `@name` for an abstract
//! socket) and the watchdog interval from `WATCHDOG_USEC` (pinged at half of it, when
//! `WATCHDOG_PID` is unset or names this process). Without `NOTIFY_SOCKET` every call does
//! nothing. A failed send is logged once and otherwise ignored: the SM never stops over it.

use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::time::Duration;

/// The notify channel to the service manager.
#[derive(Debug, Default)]
pub struct Notifier {
    socket: Option<(UnixDatagram, SocketAddr)>,
    watchdog: Option<Duration>,
    warned: std::cell::Cell<bool>,
}

impl Notifier {
    /// From the environment systemd sets (`NOTIFY_SOCKET`, `WATCHDOG_USEC`, `WATCHDOG_PID`).
    pub fn from_env() -> Notifier {
        let var = |k: &str| std::env::var(k).ok();
        Self::from_vars(
            var("NOTIFY_SOCKET").as_deref(),
            var("WATCHDOG_USEC").as_deref(),
            var("WATCHDOG_PID").as_deref(),
        )
    }

    fn from_vars(socket: Option<&str>, usec: Option<&str>, pid: Option<&str>) -> Notifier {
        let addr = socket.and_then(|s| {
            if let Some(name) = s.strip_prefix('@') {
                use std::os::linux::net::SocketAddrExt;
                SocketAddr::from_abstract_name(name.as_bytes()).ok()
            } else {
                SocketAddr::from_pathname(s).ok()
            }
        });
        let socket = addr.and_then(|a| UnixDatagram::unbound().ok().map(|s| (s, a)));
        let ours = pid.is_none_or(|p| p.trim() == std::process::id().to_string());
        let watchdog = usec
            .and_then(|u| u.trim().parse::<u64>().ok())
            .filter(|&u| u > 0 && ours)
            .map(|u| Duration::from_micros(u / 2));
        Notifier { socket, watchdog, warned: std::cell::Cell::new(false) }
    }

    /// Sends one notification (newline-separated `KEY=value` lines).
    pub fn send(&self, msg: &str) {
        let Some((sock, addr)) = &self.socket else { return };
        if let Err(e) = sock.send_to_addr(msg.as_bytes(), addr)
            && !self.warned.replace(true)
        {
            tracing::warn!(error_id = "notify-send-failed", error = %e, "systemd notify: send failed (further failures are not logged)");
        }
    }

    /// `READY=1` with a status line.
    pub fn ready(&self, status: &str) {
        self.send(&format!("READY=1\nSTATUS={status}"));
    }

    /// A new status line.
    pub fn status(&self, status: &str) {
        self.send(&format!("STATUS={status}"));
    }

    /// How often the event loop must ping (`None`: no watchdog).
    pub fn watchdog_interval(&self) -> Option<Duration> {
        self.watchdog.filter(|_| self.socket.is_some())
    }

    /// `WATCHDOG=1`.
    pub fn ping(&self) {
        self.send("WATCHDOG=1");
    }

    /// `STOPPING=1`.
    pub fn stopping(&self) {
        self.send("STOPPING=1");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_reach_the_socket_and_the_watchdog_is_half_the_interval() {
        let path = std::env::temp_dir().join(format!("ibsm-notify-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let Ok(listener) = UnixDatagram::bind(&path) else { panic!("bind") };
        let pid = std::process::id().to_string();
        let p = path.display().to_string();
        let n = Notifier::from_vars(Some(&p), Some("4000000"), Some(&pid));
        n.ready("master");
        n.ping();
        let mut buf = [0u8; 256];
        let got = |buf: &mut [u8]| listener.recv(buf).map(|len| String::from_utf8_lossy(&buf[..len]).into_owned());
        assert_eq!(got(&mut buf).ok().as_deref(), Some("READY=1\nSTATUS=master"));
        assert_eq!(got(&mut buf).ok().as_deref(), Some("WATCHDOG=1"));
        assert_eq!(n.watchdog_interval(), Some(Duration::from_secs(2)));
        // Another process's watchdog, or none at all: no pings.
        assert_eq!(Notifier::from_vars(Some(&p), Some("4000000"), Some("1")).watchdog_interval(), None);
        assert_eq!(Notifier::from_vars(None, Some("4000000"), None).watchdog_interval(), None);
        let _ = std::fs::remove_file(&path);
    }
}
