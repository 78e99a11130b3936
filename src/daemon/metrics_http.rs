//! The metrics endpoint: HTTP/1.1, `GET /metrics` answered with [`crate::daemon::metrics::render`] and
//! the surfaces' own connection counters (`ibsm run --metrics [ADDR]`, loopback by default), and
//! the web page at `/` with the JSON answers it polls under `/api/` ([`crate::daemon::page`]).
//!
//! Owns the TCP listener and its connections, on a runtime thread of its own
//! ([`crate::daemon::surface::Runner`]). HTTP is parsed and written by `hyper` (server, http1 only, on
//! tokio through `hyper-util`'s `TokioIo` and `TokioTimer`): the leanest well-kept stack that
//! does the job (no router, no tower layers; `axum` would add both for one route). A scrape is
//! handed to the SM's loop through the control channel (as the control socket does), so the
//! numbers are read between two events and a connection never touches the SM.
//!
//! Limits ([`Limits`], as on the control socket): at most 64 connections at once (past that
//! the oldest one still sending its request is closed, or the new one gets 503 when all are
//! being answered); the whole request head within 2 s (hyper's header read timeout), however
//! it is dripped; the answer read within 10 s plus 1 s per MiB. One request per connection
//! (`Connection: close`). Read-only: any method but GET gets 405; a path that is not
//! [`page::route`]'s gets 404, a bad query 400; a request hyper cannot parse (a request line
//! that is not UTF-8, for one) gets 400. A page answer is asked of the SM's loop like a scrape.

use std::convert::Infallible;
use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;

use hyper::body::Incoming;
use hyper::header::{ALLOW, CACHE_CONTROL, CONTENT_TYPE, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use crate::daemon::control::{ControlServer, Pending, Query};
use crate::daemon::page::{self, FabricCache, PageQuery, Refusal, Route};
use crate::daemon::surface::{Admission, Counters, Gate, Limits, Runner, Ticket};

/// Default address of `--metrics` without a value: loopback only.
pub const DEFAULT_ADDR: &str = "127.0.0.1:9464";

/// The Prometheus text format's content type.
const TEXT_FORMAT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The page's content type.
const PAGE_TYPE: &str = "text/html; charset=utf-8";

/// The page's JSON answers' content type.
const JSON_TYPE: &str = "application/json";

/// The metrics endpoint. Dropping it stops the listener and every connection.
#[derive(Debug)]
pub struct MetricsServer {
    addr: SocketAddr,
    counters: Arc<Counters>,
    _runner: Runner,
}

/// What every connection task needs.
#[derive(Debug)]
struct Shared {
    tx: mpsc::UnboundedSender<Pending>,
    limits: Limits,
    counters: Arc<Counters>,
    /// The control socket's counters, shown beside ours (none without a socket).
    control: Option<Arc<Counters>>,
    /// The page's last picture of the fabric.
    fabric_cache: Arc<FabricCache>,
}

impl MetricsServer {
    /// Listens on `addr` and answers scrapes through `control`'s channel (which the SM's loop
    /// serves), under the default [`Limits`].
    ///
    /// # Errors
    /// When the address cannot be bound or the thread not started.
    pub fn bind(addr: &str, control: &ControlServer) -> std::io::Result<MetricsServer> {
        MetricsServer::bind_with(addr, control, Limits::DEFAULT)
    }

    /// As [`MetricsServer::bind`], under `limits`.
    ///
    /// # Errors
    /// As [`MetricsServer::bind`].
    pub fn bind_with(addr: &str, control: &ControlServer, limits: Limits) -> std::io::Result<MetricsServer> {
        let listener = std::net::TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        let counters = Arc::new(Counters::default());
        let shared = Arc::new(Shared {
            tx: control.sender(),
            limits,
            counters: Arc::clone(&counters),
            control: control.path().map(|_| control.counters()),
            fabric_cache: Arc::default(),
        });
        let runner = Runner::start("ibsm-metrics", move || {
            listener.set_nonblocking(true)?;
            let listener = TcpListener::from_std(listener)?;
            Ok(accept_loop(listener, shared))
        })?;
        Ok(MetricsServer { addr, counters, _runner: runner })
    }

    /// The address it listens on (with the port chosen when `:0` was asked).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// How its connections ended.
    pub fn counters(&self) -> Arc<Counters> {
        Arc::clone(&self.counters)
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let gate = Gate::new(shared.limits.max_connections, Arc::clone(&shared.counters));
    loop {
        let stream = match listener.accept().await {
            Ok((s, _)) => s,
            Err(e) => {
                // Out of descriptors, typically: wait for connections to end.
                tracing::warn!(error_id = "metrics-accept", error = %e, "metrics endpoint: accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            }
        };
        match gate.admit() {
            Admission::Admitted(ticket) => {
                let id = ticket.id();
                let task = tokio::spawn(serve(stream, ticket, Arc::clone(&shared)));
                gate.track(id, task.abort_handle());
                // Let it read what has already arrived before accepting more: under a flood of
                // connections, a client whose request is in is then past eviction.
                tokio::task::yield_now().await;
            }
            Admission::Refused => {
                let body = "busy: too many scrapes at once; retry\n";
                let text = format!(
                    "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                // A new socket's buffer is empty: the answer fits without blocking.
                if let Ok(s) = stream.into_std() {
                    let _ = (&s).write_all(text.as_bytes());
                }
            }
        }
    }
}

/// Serves one connection (one request) under the limits.
async fn serve(stream: TcpStream, ticket: Ticket, shared: Arc<Shared>) {
    let ticket = Arc::new(ticket);
    // The answer's deadline, set once the answer is known (its size sets it).
    let (deadline_tx, mut deadline_rx) = watch::channel(None::<Instant>);
    let deadline_tx = Arc::new(deadline_tx);
    let service = {
        let shared = Arc::clone(&shared);
        service_fn(move |req: Request<Incoming>| {
            let (ticket, shared, deadline_tx) = (Arc::clone(&ticket), Arc::clone(&shared), Arc::clone(&deadline_tx));
            async move {
                let resp = respond(&req, &ticket, &shared).await;
                let at = Instant::now() + shared.limits.answer_deadline_for(resp.body().len());
                deadline_tx.send_replace(Some(at));
                Ok::<_, Infallible>(resp)
            }
        })
    };
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(shared.limits.request_deadline)
        .keep_alive(false)
        .serve_connection(TokioIo::new(stream), service);
    tokio::pin!(conn);
    let ended = loop {
        let at = *deadline_rx.borrow_and_update();
        let expired = async move {
            match at {
                Some(t) => tokio::time::sleep_until(t).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            r = conn.as_mut() => break Some(r),
            () = expired => break None,
            changed = deadline_rx.changed() => {
                if changed.is_err() {
                    // The service is gone with its sender: only the connection is left to wait for.
                    break Some(conn.as_mut().await);
                }
            }
        }
    };
    let c = &shared.counters;
    match ended {
        Some(Ok(())) => Counters::bump(&c.answered),
        Some(Err(e)) if e.is_timeout() => {
            Counters::bump(&c.request_deadline);
            tracing::debug!("metrics endpoint: a request head did not come whole in time");
        }
        // hyper answered 400 (or 431, 505).
        Some(Err(e)) if e.is_parse() || e.is_parse_too_large() => Counters::bump(&c.answered),
        Some(Err(_)) => Counters::bump(&c.broken),
        None => {
            Counters::bump(&c.answer_deadline);
            tracing::debug!("metrics endpoint: an answer was not read in time; connection dropped");
        }
    }
}

/// The answer to one request.
async fn respond(req: &Request<Incoming>, ticket: &Ticket, shared: &Shared) -> Response<String> {
    if !ticket.answering() {
        // Evicted: the task is being ended.
        return text(StatusCode::SERVICE_UNAVAILABLE, "busy\n".to_owned());
    }
    let route = match page::route(req.method().as_str(), req.uri().path(), req.uri().query()) {
        Ok(r) => r,
        Err(refusal) => {
            let status = match refusal {
                Refusal::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
                Refusal::NotFound => StatusCode::NOT_FOUND,
                Refusal::BadRequest(_) => StatusCode::BAD_REQUEST,
            };
            let mut resp = text(status, format!("{refusal}\n"));
            if status == StatusCode::METHOD_NOT_ALLOWED {
                resp.headers_mut().insert(ALLOW, HeaderValue::from_static("GET"));
            }
            return resp;
        }
    };
    let ask = match route {
        Route::Metrics => None,
        Route::Page => return typed(page::PAGE.to_owned(), PAGE_TYPE),
        Route::Api(ask) => Some(ask),
    };
    if let Some(ask) = ask {
        let (pending, wait) = Pending::new(Query::Page(PageQuery { ask, cache: Arc::clone(&shared.fabric_cache) }));
        return match shared.tx.send(pending) {
            Ok(()) => match wait.await {
                Ok(a) => typed(a.text, JSON_TYPE),
                Err(_) => text(StatusCode::SERVICE_UNAVAILABLE, "the SM is shutting down\n".to_owned()),
            },
            Err(_) => text(StatusCode::SERVICE_UNAVAILABLE, "the SM is shutting down\n".to_owned()),
        };
    }
    let (pending, wait) = Pending::new(Query::Metrics);
    let answer = match shared.tx.send(pending) {
        Ok(()) => wait.await.ok(),
        Err(_) => None,
    };
    let Some(mut body) = answer.map(|a| a.text) else {
        return text(StatusCode::SERVICE_UNAVAILABLE, "the SM is shutting down\n".to_owned());
    };
    let mut surfaces = Vec::with_capacity(2);
    if let Some(c) = &shared.control {
        surfaces.push(("control", &**c));
    }
    surfaces.push(("metrics", &*shared.counters));
    body.push_str(&crate::daemon::surface::render(&surfaces));
    text(StatusCode::OK, body)
}

/// A 200 answer of `content_type`, never cached (the page polls it).
fn typed(body: String, content_type: &'static str) -> Response<String> {
    let mut resp = Response::new(body);
    resp.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp.headers_mut().insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

fn text(status: StatusCode, body: String) -> Response<String> {
    let mut resp = Response::new(body);
    *resp.status_mut() = status;
    resp.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(TEXT_FORMAT));
    resp
}

#[cfg(test)]
mod tests {
    use std::io::{Read as _, Write as _};
    use std::net::TcpStream;
    use std::sync::atomic::Ordering;
    use std::time::{Duration, Instant};

    use super::*;

    /// The next query the endpoint handed to the (absent) SM's loop, within 5 s.
    fn next_query(control: &mut ControlServer) -> Pending {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if let Some(p) = control.try_next() {
                return p;
            }
            assert!(Instant::now() < deadline, "no query reached the SM's channel");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn get(addr: SocketAddr, path: &str) -> TcpStream {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes()).unwrap();
        s
    }

    fn read_to_end(s: &mut TcpStream) -> String {
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    #[test]
    fn a_scrape_gets_the_sms_text_and_the_surface_counters_and_other_paths_404() {
        let mut control = ControlServer::without_socket();
        let server = MetricsServer::bind("127.0.0.1:0", &control).unwrap();
        let mut c = get(server.addr(), "/metrics?x=1");
        let p = next_query(&mut control);
        assert_eq!(p.query, Query::Metrics);
        p.reply("ibsm_sm_state 3\n".to_owned());
        let said = read_to_end(&mut c);
        assert!(said.starts_with("HTTP/1.1 200 OK\r\n"), "{said}");
        assert!(said.contains("\r\n\r\nibsm_sm_state 3\n"), "{said}");
        assert!(
            said.contains("ibsm_surface_connections_total{surface=\"metrics\",outcome=\"answered\"} 0\n"),
            "{said}"
        );
        assert!(!said.contains("surface=\"control\""), "no control socket, no control counters: {said}");
        let said = read_to_end(&mut get(server.addr(), "/nope"));
        assert!(said.starts_with("HTTP/1.1 404 "), "{said}");
        let deadline = Instant::now() + Duration::from_secs(5);
        while server.counters().answered.load(Ordering::Relaxed) < 2 {
            assert!(Instant::now() < deadline, "both answers counted");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn send(addr: SocketAddr, method: &str, path: &str) -> TcpStream {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(format!("{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n").as_bytes()).unwrap();
        s
    }

    #[test]
    fn the_page_and_its_json_are_served_read_only() {
        let mut control = ControlServer::without_socket();
        let server = MetricsServer::bind("127.0.0.1:0", &control).unwrap();
        let said = read_to_end(&mut get(server.addr(), "/"));
        assert!(said.starts_with("HTTP/1.1 200 OK\r\n"), "{said}");
        assert!(said.contains("content-type: text/html; charset=utf-8\r\n"), "{said}");
        assert!(said.ends_with("</html>\n"), "the whole page");
        // A JSON answer is asked of the SM's loop.
        let mut c = get(server.addr(), "/api/port?guid=0x12&port=3&t=99");
        let p = next_query(&mut control);
        assert_eq!(p.query, Query::Page(PageQuery::new(crate::daemon::page::PageAsk::Port(ibsm_mad::Guid(0x12), 3))));
        p.reply("{\"version\":1}".to_owned());
        let said = read_to_end(&mut c);
        assert!(
            said.starts_with("HTTP/1.1 200 OK\r\n") && said.contains("content-type: application/json\r\n"),
            "{said}"
        );
        assert!(said.contains("cache-control: no-store\r\n") && said.ends_with("\r\n\r\n{\"version\":1}"), "{said}");
        for m in ["POST", "PUT", "DELETE", "PATCH"] {
            let said = read_to_end(&mut send(server.addr(), m, "/"));
            assert!(said.starts_with("HTTP/1.1 405 ") && said.contains("allow: GET\r\n"), "{m}: {said}");
            let said = read_to_end(&mut send(server.addr(), m, "/metrics"));
            assert!(said.starts_with("HTTP/1.1 405 "), "{m}: {said}");
        }
        let said = read_to_end(&mut get(server.addr(), "/api/port?guid=zz&port=1"));
        assert!(said.starts_with("HTTP/1.1 400 "), "{said}");
        let said = read_to_end(&mut get(server.addr(), &format!("/api/port?guid=0x1&port=1&x={}", "a".repeat(300))));
        assert!(said.starts_with("HTTP/1.1 400 "), "{said}");
        assert!(control.try_next().is_none(), "refused requests never reach the SM");
    }

    #[test]
    fn past_the_cap_an_idle_connection_makes_room_and_answering_ones_get_503() {
        let mut control = ControlServer::without_socket();
        let limits = Limits { max_connections: 1, ..Limits::DEFAULT };
        let server = MetricsServer::bind_with("127.0.0.1:0", &control, limits).unwrap();
        let mut idle = TcpStream::connect(server.addr()).unwrap();
        // Accepted and admitted before the next one arrives (the accept loop takes them in order).
        let mut c = get(server.addr(), "/metrics");
        assert_eq!(read_to_end(&mut idle), "", "the idle connection is closed");
        let p = next_query(&mut control);
        // `c` waits for its answer: the next connection is refused.
        let said = read_to_end(&mut get(server.addr(), "/metrics"));
        assert!(said.starts_with("HTTP/1.1 503 ") || said.is_empty(), "{said}");
        assert_eq!(server.counters().refused.load(Ordering::Relaxed), 1);
        assert_eq!(server.counters().evicted.load(Ordering::Relaxed), 1);
        p.reply("ibsm_sm_state 3\n".to_owned());
        assert!(read_to_end(&mut c).starts_with("HTTP/1.1 200 OK\r\n"));
    }

    #[test]
    fn an_answer_nobody_reads_is_dropped_at_its_deadline() {
        let mut control = ControlServer::without_socket();
        // 0.3 s whatever the size.
        let limits =
            Limits { answer_deadline: Duration::from_millis(300), answer_min_rate: 1 << 50, ..Limits::DEFAULT };
        let server = MetricsServer::bind_with("127.0.0.1:0", &control, limits).unwrap();
        let mut c = get(server.addr(), "/metrics");
        // 32 MiB: far more than the socket buffers hold.
        next_query(&mut control).reply("x".repeat(32 << 20));
        let deadline = Instant::now() + Duration::from_secs(30);
        while server.counters().answer_deadline.load(Ordering::Relaxed) == 0 {
            assert!(Instant::now() < deadline, "the unread answer was not dropped");
            std::thread::sleep(Duration::from_millis(20));
        }
        let got = read_to_end(&mut c);
        assert!(got.len() < 32 << 20, "{} bytes", got.len());
    }
}
