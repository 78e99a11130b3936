//! Prometheus metrics: the text exposition format at `/metrics` over plain HTTP
//! (`ibsm run --metrics [ADDR]`, loopback by default), all names prefixed `ibsm_`.
//!
//! Owns the rendering ([`render`], from the core's getters) and the HTTP listener
//! ([`MetricsServer`]): a std thread that answers `GET /metrics` by asking the SM's loop through
//! the control channel (as the control socket does), so the numbers are read between two events
//! and a scrape never touches the SM directly. Anything else gets 404; a request line must come
//! within 2 s.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::control::{Pending, Query};
use crate::core::{Sm, SmState};

/// Default address of `--metrics` without a value: loopback only.
pub const DEFAULT_ADDR: &str = "127.0.0.1:9464";

fn metric(out: &mut String, name: &str, kind: &str, help: &str, samples: &[(String, f64)]) {
    let _ = writeln!(out, "# HELP ibsm_{name} {help}");
    let _ = writeln!(out, "# TYPE ibsm_{name} {kind}");
    for (labels, v) in samples {
        let _ = writeln!(out, "ibsm_{name}{labels} {v}");
    }
}

fn one(v: u64) -> Vec<(String, f64)> {
    vec![(String::new(), v as f64)]
}

/// The SM's figures in Prometheus text format.
pub fn render(sm: &Sm) -> String {
    let mut out = String::new();
    let state = match sm.state() {
        SmState::NotActive => 0,
        SmState::Discovering => 1,
        SmState::Standby => 2,
        SmState::Master => 3,
    };
    metric(&mut out, "sm_state", "gauge", "SM state: 0 not active, 1 discovering, 2 standby, 3 master.", &one(state));
    metric(&mut out, "sm_priority", "gauge", "The priority this SM reports.", &one(u64::from(sm.priority())));
    let (sent, retried, failed) = sm.smp_counters();
    metric(&mut out, "smps_sent_total", "counter", "SMPs sent.", &one(sent));
    metric(&mut out, "smps_retried_total", "counter", "SMPs sent again after a timeout or BUSY.", &one(retried));
    metric(&mut out, "smps_failed_total", "counter", "SMPs that failed after every retry.", &one(failed));
    metric(&mut out, "pkey_blocks_sent_total", "counter", "P_KeyTable blocks written.", &one(sm.pkey_blocks_sent()));
    metric(
        &mut out,
        "mft_blocks_sent_total",
        "counter",
        "Multicast forwarding table blocks written.",
        &one(sm.mft_blocks_sent()),
    );
    let c = sm.request_counters();
    let sa =
        [("answered", c.sa_answered), ("busy", c.sa_busy), ("dropped", c.sa_dropped), ("not_ready", c.sa_not_ready)];
    let samples: Vec<(String, f64)> = sa.iter().map(|(k, v)| (format!("{{outcome=\"{k}\"}}"), *v as f64)).collect();
    metric(&mut out, "sa_requests_total", "counter", "SA requests by outcome.", &samples);
    metric(&mut out, "traps_total", "counter", "Traps received.", &one(c.traps));
    metric(
        &mut out,
        "malformed_mads_total",
        "counter",
        "MADs dropped because their header could not be read.",
        &one(c.malformed),
    );
    let violations: Vec<(String, f64)> =
        sm.mkey_violations().iter().map(|(l, v)| (format!("{{lid=\"{}\"}}", l.0), v.count as f64)).collect();
    metric(
        &mut out,
        "mkey_violations_total",
        "counter",
        "Bad-M_Key traps (256) by the LID that raised them.",
        &violations,
    );
    if let Some(r) = sm.last_report() {
        let fabric = [("switches", r.switches), ("cas", r.cas), ("end_ports", r.end_ports), ("links", r.links)];
        let samples: Vec<(String, f64)> =
            fabric.iter().map(|(k, v)| (format!("{{kind=\"{k}\"}}"), *v as f64)).collect();
        metric(&mut out, "fabric_size", "gauge", "What the last completed sweep found.", &samples);
        let ports = [("active", r.ports_active), ("not_active", r.ports_not_active)];
        let samples: Vec<(String, f64)> =
            ports.iter().map(|(k, v)| (format!("{{state=\"{k}\"}}"), *v as f64)).collect();
        metric(&mut out, "ports", "gauge", "Linked ports by state at the last sweep.", &samples);
        metric(
            &mut out,
            "last_sweep_complete",
            "gauge",
            "1 when the last sweep brought every linked port up.",
            &one(u64::from(r.complete)),
        );
        metric(
            &mut out,
            "last_sweep_seconds",
            "gauge",
            "Duration of the last sweep.",
            &[(String::new(), r.total_ns as f64 / 1e9)],
        );
        let phases: Vec<(String, f64)> =
            r.phases.iter().map(|p| (format!("{{phase=\"{}\"}}", p.phase.name()), p.ns as f64 / 1e9)).collect();
        metric(&mut out, "last_sweep_phase_seconds", "gauge", "Duration of each phase of the last sweep.", &phases);
        metric(
            &mut out,
            "last_sweep_lft_blocks_sent",
            "gauge",
            "LFT blocks the last sweep wrote.",
            &one(r.lft_blocks_sent),
        );
        metric(&mut out, "last_sweep_smps", "gauge", "SMPs the last sweep sent.", &one(r.smps_sent));
    }
    out
}

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
