//! The metrics endpoint: plain HTTP, `GET /metrics` answered with [`crate::metrics::render`]
//! (`ibsm run --metrics [ADDR]`, loopback by default).
//!
//! Owns the listener: a std thread that answers a scrape by asking the SM's loop through the
//! control channel (as the control socket does), so the numbers are read between two events and
//! a scrape never touches the SM directly. Anything else gets 404; a request line must come
//! within 2 s.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::control::{Pending, Query};

/// Default address of `--metrics` without a value: loopback only.
pub const DEFAULT_ADDR: &str = "127.0.0.1:9464";

/// The metrics endpoint. Dropping it stops the listener thread.
#[derive(Debug)]
pub struct MetricsServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl MetricsServer {
    /// Listens on `addr` and answers scrapes through `tx` (the control channel the SM's loop
    /// serves).
    ///
    /// # Errors
    /// When the address cannot be bound or the thread not started.
    pub fn bind(addr: &str, tx: mpsc::UnboundedSender<Pending>) -> std::io::Result<MetricsServer> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new().name("ibsm-metrics".to_owned()).spawn(move || {
            for conn in listener.incoming() {
                if flag.load(Ordering::Acquire) {
                    return;
                }
                if let Ok(stream) = conn {
                    serve(&stream, &tx);
                }
            }
        })?;
        Ok(MetricsServer { addr, stop, thread: Some(thread) })
    }

    /// The address it listens on (with the port chosen when `:0` was asked).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        // Wake the accept loop with a connection of our own.
        if TcpStream::connect(self.addr).is_ok()
            && let Some(t) = self.thread.take()
        {
            let _ = t.join();
        }
    }
}

/// Answers one HTTP request.
fn serve(stream: &TcpStream, tx: &mpsc::UnboundedSender<Pending>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(10)));
    let mut line = String::new();
    let mut reader = BufReader::new(stream.take(8192));
    if reader.read_line(&mut line).is_err() {
        return;
    }
    // Skip the headers (bounded by the `take` above).
    let mut header = String::new();
    while reader.read_line(&mut header).is_ok_and(|n| n > 2) {
        header.clear();
    }
    let mut words = line.split_whitespace();
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let (status, body) = if method == "GET" && (target == "/metrics" || target.starts_with("/metrics?")) {
        let (pending, wait) = Pending::new(Query::Metrics);
        match tx.send(pending).ok().and_then(|()| wait.blocking_recv().ok()) {
            Some(text) => ("200 OK", text),
            None => ("503 Service Unavailable", "the SM is shutting down\n".to_owned()),
        }
    } else {
        ("404 Not Found", "only GET /metrics is served here\n".to_owned())
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let mut w = stream;
    let _ = w.write_all(head.as_bytes()).and_then(|()| w.write_all(body.as_bytes()));
}
