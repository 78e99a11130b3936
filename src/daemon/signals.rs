//! The signals a running SM takes besides SIGINT and SIGTERM, caught from the first instant of
//! `ibsm run`: SIGHUP (reload the configuration), SIGUSR1 (reopen the log files, as OpenSM's
//! logrotate hooks expect) and SIGUSR2 (ignored, with a log line).
//!
//! [`Signals::install`] is the first thing `ibsm run` does, before the configuration is read or
//! a device opened: from then on none of the three can kill the process. A thread of its own
//! (with a small tokio runtime, since the workspace's signal handling is tokio's) waits for them
//! and queues each one on a channel; the transport that runs the SM takes them from there
//! whenever it is ready, so a SIGHUP that arrives during the first sweep is acted on after it,
//! not lost. SIGINT and SIGTERM stay with the transports, which stop on them.
//!
//! Owns no policy: what a reload does is `startup`'s and the transports'. [`Signal::log`] is the
//! one place that says what SIGUSR1 and SIGUSR2 did.

use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

/// A signal the SM handles without stopping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// SIGHUP: read the configuration again.
    Hup,
    /// SIGUSR1: reopen the log files.
    Usr1,
    /// SIGUSR2: ignored.
    Usr2,
}

impl Signal {
    /// Its name, as `kill -l` spells it with the `SIG` prefix.
    pub const fn name(self) -> &'static str {
        match self {
            Signal::Hup => "SIGHUP",
            Signal::Usr1 => "SIGUSR1",
            Signal::Usr2 => "SIGUSR2",
        }
    }

    /// Does what SIGUSR1 and SIGUSR2 ask and logs it; SIGHUP (a reload) is the transport's.
    /// ibsm logs to stderr (to the journal under systemd), so SIGUSR1 has no file to reopen.
    pub fn log(self) {
        match self {
            Signal::Hup => tracing::info!(signal = self.name(), "reloading the configuration"),
            Signal::Usr1 => {
                tracing::info!(signal = self.name(), "SIGUSR1: logs go to stderr, no log file to reopen; going on");
            }
            Signal::Usr2 => tracing::warn!(error_id = "signal-ignored", signal = self.name(), "SIGUSR2 ignored"),
        }
    }
}

/// The queue of caught signals; see the module doc.
#[derive(Debug)]
pub struct Signals {
    rx: mpsc::UnboundedReceiver<Signal>,
}

impl Signals {
    /// Installs the handlers for SIGHUP, SIGUSR1 and SIGUSR2 and returns once they are in place.
    ///
    /// # Errors
    /// When the thread, its runtime or a handler cannot be set up.
    pub fn install() -> std::io::Result<Signals> {
        let (tx, rx) = mpsc::unbounded_channel();
        let (ready_tx, ready_rx) = std::sync::mpsc::sync_channel::<std::io::Result<()>>(1);
        std::thread::Builder::new().name("ibsm-signals".to_owned()).spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            rt.block_on(async move {
                let streams = (|| {
                    Ok::<_, std::io::Error>((
                        signal(SignalKind::hangup())?,
                        signal(SignalKind::user_defined1())?,
                        signal(SignalKind::user_defined2())?,
                    ))
                })();
                let (mut hup, mut usr1, mut usr2) = match streams {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let _ = ready_tx.send(Ok(()));
                loop {
                    let caught = tokio::select! {
                        _ = hup.recv() => Signal::Hup,
                        _ = usr1.recv() => Signal::Usr1,
                        _ = usr2.recv() => Signal::Usr2,
                    };
                    // The handlers stay installed when the receiver is gone (the SM is
                    // stopping): a late signal is then dropped, never fatal.
                    let _ = tx.send(caught);
                }
            });
        })?;
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(Signals { rx }),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(std::io::Error::other("the signal thread ended while starting")),
        }
    }

    /// The next caught signal; waits for ever if the signal thread is gone.
    pub async fn recv(&mut self) -> Signal {
        match self.rx.recv().await {
            Some(s) => s,
            None => std::future::pending().await,
        }
    }

    /// A caught signal not yet taken, if any.
    pub fn try_recv(&mut self) -> Option<Signal> {
        self.rx.try_recv().ok()
    }
}
