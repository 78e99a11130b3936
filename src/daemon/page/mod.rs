//! The web page at `/` of the metrics endpoint: one self-contained HTML file (inline CSS and
//! JS, no external asset, no build step: [`PAGE`], embedded from `page.html`) and the small JSON
//! answers it polls, all read-only.
//!
//! Owns the endpoint's request routing ([`route`]: which path and query is which answer; GET
//! only, anything else [`Refusal::MethodNotAllowed`]) and the page's JSON answers ([`answer`],
//! built on the SM's loop from what the SM already holds: its status, its last sweep's
//! snapshot and the performance manager's books). The answers:
//! - `/api/status`: the control socket's `status` answer, as it is;
//! - `/api/fabric`: the fabric by tier with each cable's severity over the PM's last interval,
//!   aggregated so that its size is bounded whatever the fabric ([`fabric`]), built once per
//!   snapshot and PM sweep ([`FabricCache`]);
//! - `/api/port?guid=0x..&port=N`: one port's counters, totals, history, and its peer's.
//!
//! It touches no socket and sends no MAD; [`route`] is pure and never panics on any input.

pub mod fabric;

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use ibsm_mad::Guid;
use serde::Serialize;

use crate::core::Sm;
use crate::daemon::control::counters::{PortCountersJson, port_line};
use crate::daemon::control::text::{error_line, parse_guid};
use crate::sa::Snapshot;

/// The page, served at `/`.
pub const PAGE: &str = include_str!("page.html");

/// Longest query string taken, bytes (the page sends at most a GUID and a port).
pub const MAX_QUERY: usize = 256;

/// What a request asks of the metrics endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `GET /metrics`: Prometheus text.
    Metrics,
    /// `GET /` (or `/index.html`): the page.
    Page,
    /// `GET /api/...`: a JSON answer from the SM.
    Api(PageAsk),
}

/// A JSON answer the page asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageAsk {
    /// The SM's status.
    Status,
    /// The fabric by tier, coloured.
    Fabric,
    /// One port (node GUID, port number).
    Port(Guid, u8),
}

/// A page answer asked of the SM's loop, with the endpoint's cache of the fabric's picture.
#[derive(Debug, Clone)]
pub struct PageQuery {
    /// What is asked.
    pub ask: PageAsk,
    /// Where the last picture is kept (shared by every connection of one endpoint).
    pub cache: Arc<FabricCache>,
}

impl PageQuery {
    /// `ask`, with a cache of its own.
    pub fn new(ask: PageAsk) -> PageQuery {
        PageQuery { ask, cache: Arc::default() }
    }
}

impl PartialEq for PageQuery {
    /// The same question (whatever the cache).
    fn eq(&self, other: &Self) -> bool {
        self.ask == other.ask
    }
}

impl Eq for PageQuery {}

/// The last `/api/fabric` answer and what it was built from: the snapshot (held, so it is
/// compared by identity) and the PM's sweeps and threshold events. The picture changes only
/// with those, so however many pages poll, it is built once per PM interval (at k=48, 0.25 s
/// of the SM's loop in a debug build), and the other answers are a copy of the text.
#[derive(Debug, Default)]
pub struct FabricCache(Mutex<Option<(FabricKey, String)>>);

/// What a picture was built from.
#[derive(Debug, Clone)]
struct FabricKey {
    snap: Arc<Snapshot>,
    pm: (u64, u64),
    /// The node name map in force (a reload may change it without a sweep).
    names: crate::core::NodeNames,
}

impl PartialEq for FabricKey {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.snap, &other.snap) && self.pm == other.pm && self.names == other.names
    }
}

impl FabricCache {
    /// The text for `key`: the kept one when it was built from the same, else `build`'s (kept).
    fn get<K: PartialEq + Clone>(slot: &Mutex<Option<(K, String)>>, key: K, build: impl FnOnce() -> String) -> String {
        let mut kept = slot.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((k, text)) = kept.as_ref()
            && *k == key
        {
            return text.clone();
        }
        let text = build();
        *kept = Some((key, text.clone()));
        text
    }
}

/// Why a request is not answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Not GET: 405.
    MethodNotAllowed,
    /// No such path: 404.
    NotFound,
    /// A query the answer cannot take: 400, with why.
    BadRequest(String),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::MethodNotAllowed => f.write_str("read-only: only GET is served here"),
            Refusal::NotFound => f.write_str("not found: / (the page), /metrics, /api/status, /api/fabric, /api/port"),
            Refusal::BadRequest(why) => f.write_str(why),
        }
    }
}

/// Which answer `method path?query` asks for. Pure: any input gives a route or a refusal.
///
/// # Errors
/// [`Refusal`] for another method, an unknown path, or a bad query.
pub fn route(method: &str, path: &str, query: Option<&str>) -> Result<Route, Refusal> {
    if method != "GET" {
        return Err(Refusal::MethodNotAllowed);
    }
    let query = query.unwrap_or("");
    if query.len() > MAX_QUERY {
        return Err(Refusal::BadRequest(format!("query string over {MAX_QUERY} bytes")));
    }
    match path {
        "/metrics" => Ok(Route::Metrics),
        "/" | "/index.html" => Ok(Route::Page),
        "/api/status" => Ok(Route::Api(PageAsk::Status)),
        "/api/fabric" => Ok(Route::Api(PageAsk::Fabric)),
        "/api/port" => port_query(query).map(|(g, p)| Route::Api(PageAsk::Port(g, p))),
        _ => Err(Refusal::NotFound),
    }
}

/// `guid=0x...&port=N` (in any order; other keys, such as a cache buster, are ignored).
fn port_query(query: &str) -> Result<(Guid, u8), Refusal> {
    let (mut guid, mut port) = (None, None);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        match k {
            "guid" => guid = Some(parse_guid(v).map_err(Refusal::BadRequest)?),
            "port" => {
                port = Some(v.parse::<u8>().map_err(|_| Refusal::BadRequest(format!("port {v:?}: expected 0..=255")))?);
            }
            _ => {}
        }
    }
    match (guid, port) {
        (Some(g), Some(p)) => Ok((g, p)),
        _ => Err(Refusal::BadRequest("/api/port needs guid=0x...&port=N".to_owned())),
    }
}

/// One port's answer (schema version 1).
#[derive(Debug, Clone, Serialize)]
pub struct PortAnswer {
    /// Schema version (1).
    pub version: u32,
    /// Its node's GUID.
    pub node: String,
    /// Its node's name in `node-name-map`, else its description (empty when the SM does not
    /// know the node).
    pub desc: String,
    /// The port number.
    pub port: u8,
    /// The node and port at the other end of its cable, when the last sweep saw one.
    pub peer: Option<PeerJson>,
    /// The PM's figures for it (none before its first reading).
    pub counters: Option<PortCountersJson>,
    /// The PM's figures for its peer.
    pub peer_counters: Option<PortCountersJson>,
    /// Its history, oldest first.
    pub history: Vec<PointJson>,
}

/// The other end of a cable.
#[derive(Debug, Clone, Serialize)]
pub struct PeerJson {
    /// NodeGUID.
    pub node: String,
    /// Its name in `node-name-map`, else its NodeDescription.
    pub desc: String,
    /// Port number.
    pub port: u8,
}

/// One interval of a port's history.
#[derive(Debug, Clone, Serialize)]
pub struct PointJson {
    /// How long before the SM's clock now the interval ended, s.
    pub age_s: f64,
    /// Bytes sent over it.
    pub xmit_bytes: u64,
    /// Bytes received over it.
    pub rcv_bytes: u64,
    /// Error counters' increase, summed (PortXmitWait apart).
    pub errors: u32,
    /// PortXmitWait's increase.
    pub xmit_wait: u32,
}

/// The JSON answer to `q` from `sm` (an `{"error":...}` line when it has none).
pub fn answer(sm: &Sm, q: &PageQuery) -> String {
    let out = match q.ask {
        PageAsk::Status => serde_json::to_string(&crate::daemon::control::status::status(sm)),
        PageAsk::Fabric => match sm.snapshot() {
            Some(snap) => {
                let c = sm.perf().counts();
                let names = sm.config().node_names.clone();
                let key = FabricKey { snap: Arc::clone(&snap), pm: (c.sweeps, c.threshold_events), names };
                return FabricCache::get(&q.cache.0, key, || {
                    serde_json::to_string(&fabric::fabric(sm, &snap, &fabric::Bounds::DEFAULT))
                        .unwrap_or_else(|e| error_line(&format!("encoding the answer: {e}")))
                });
            }
            None => return error_line("the SM has not completed a sweep yet"),
        },
        PageAsk::Port(g, p) => serde_json::to_string(&port(sm, g, p)),
    };
    out.unwrap_or_else(|e| error_line(&format!("encoding the answer: {e}")))
}

/// One port's answer.
pub fn port(sm: &Sm, g: Guid, p: u8) -> PortAnswer {
    let snap = sm.snapshot();
    let node = snap.as_ref().and_then(|s| s.nodes.iter().find(|n| n.info.node_guid == g));
    let peer = snap.as_ref().zip(node).and_then(|(s, n)| {
        let (i, pp) = n.ports.get(usize::from(p))?.remote?;
        let other = s.nodes.get(usize::try_from(i).ok()?)?;
        let desc = sm.config().node_names.show(other.info.node_guid, &other.desc).to_owned();
        Some((other.info.node_guid, desc, pp))
    });
    let books = sm.perf().books();
    let line = |k: (Guid, u8)| books.get(&k).map(|b| port_line(sm, k, b));
    let now = sm.now();
    #[allow(clippy::cast_precision_loss)] // seconds for people
    let history = books
        .get(&(g, p))
        .map(|b| {
            b.history
                .iter()
                .map(|pt| PointJson {
                    age_s: now.saturating_sub(pt.at) as f64 / 1e9,
                    xmit_bytes: pt.xmit_words.saturating_mul(ibsm_mad::perf::DATA_WORD_OCTETS),
                    rcv_bytes: pt.rcv_words.saturating_mul(ibsm_mad::perf::DATA_WORD_OCTETS),
                    errors: pt.errors,
                    xmit_wait: pt.xmit_wait,
                })
                .collect()
        })
        .unwrap_or_default();
    PortAnswer {
        version: 1,
        node: format!("{:#018x}", g.0),
        desc: sm.config().node_names.show(g, node.map_or("", |n| n.desc.as_str())).to_owned(),
        port: p,
        counters: line((g, p)),
        peer_counters: peer.as_ref().and_then(|(pg, _, pp)| line((*pg, *pp))),
        peer: peer.map(|(pg, desc, pp)| PeerJson { node: format!("{:#018x}", pg.0), desc, port: pp }),
        history,
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn paths_and_methods_route_as_documented() {
        assert_eq!(route("GET", "/", None), Ok(Route::Page));
        assert_eq!(route("GET", "/index.html", Some("x=1")), Ok(Route::Page));
        assert_eq!(route("GET", "/metrics", Some("x=1")), Ok(Route::Metrics));
        assert_eq!(route("GET", "/api/status", None), Ok(Route::Api(PageAsk::Status)));
        assert_eq!(route("GET", "/api/fabric", Some("t=12")), Ok(Route::Api(PageAsk::Fabric)));
        assert_eq!(
            route("GET", "/api/port", Some("port=3&guid=0x0002c90300001234&t=1")),
            Ok(Route::Api(PageAsk::Port(Guid(0x0002_c903_0000_1234), 3)))
        );
        for m in ["POST", "PUT", "DELETE", "HEAD", "OPTIONS", "get", ""] {
            assert_eq!(route(m, "/", None), Err(Refusal::MethodNotAllowed), "{m}");
            assert_eq!(route(m, "/metrics", None), Err(Refusal::MethodNotAllowed), "{m}");
        }
        for p in ["", "/api", "/api/", "/api/ports", "/metrics/", "//", "/../metrics"] {
            assert_eq!(route("GET", p, None), Err(Refusal::NotFound), "{p}");
        }
    }

    #[test]
    fn bad_port_queries_are_refused_with_a_reason() {
        for q in [None, Some(""), Some("guid=0x1"), Some("port=1"), Some("guid=zz&port=1"), Some("guid=0x1&port=256")] {
            assert!(
                matches!(route("GET", "/api/port", q), Err(Refusal::BadRequest(ref why)) if !why.is_empty()),
                "{q:?}"
            );
        }
        let long = format!("guid=0x1&port=1&pad={}", "a".repeat(MAX_QUERY));
        assert!(matches!(route("GET", "/api/port", Some(&long)), Err(Refusal::BadRequest(_))));
    }

    #[test]
    fn the_node_name_map_names_nodes_in_the_fabric_and_port_answers() {
        use crate::core::{Guid2Lid, NodeNames, Sm, SmConfig};
        let text = include_str!("../../../examples/fabrics/fat-tree-2l-k4.net");
        let topo = ibsm_topology::Topology::parse_str(text, "fat-tree-2l-k4.net").unwrap();
        let sm = Sm::new(SmConfig::default(), Guid2Lid::default());
        let mut drv = crate::transport::sim::SimDriver::new(&topo, 1, sm, None).unwrap();
        assert!(drv.sweep(60_000_000_000, |_| {}).is_some_and(|r| r.complete));
        let g = |n: &str| topo.nodes[topo.find(n).unwrap()].node_guid;
        let map = [(g("leaf-0"), "rack1 leaf".to_owned()), (g("spine-0"), "rack0 spine".to_owned())];
        let names = NodeNames::new(std::collections::HashMap::from(map));
        // A reload that changes only the names: in force at once, nothing to sweep.
        let done = drv.sm.reconfigure(SmConfig { node_names: names, ..SmConfig::default() });
        assert_eq!((done.applied, done.sweep), (vec!["node-name-map"], false));
        let p = port(&drv.sm, g("leaf-0"), 3);
        assert_eq!((p.desc.as_str(), p.peer.map(|q| q.desc)), ("rack1 leaf", Some("rack0 spine".to_owned())));
        let snap = drv.sm.snapshot().unwrap();
        let json = serde_json::to_string(&fabric::fabric(&drv.sm, &snap, &fabric::Bounds::DEFAULT)).unwrap();
        assert!(json.contains("rack1 leaf") && json.contains("rack0 spine") && json.contains("leaf-1"), "{json}");
    }

    #[test]
    fn the_cache_builds_once_per_key() {
        let slot = Mutex::new(None);
        let mut built = 0;
        let mut get = |k: u32| {
            FabricCache::get(&slot, k, || {
                built += 1;
                format!("{k}")
            })
        };
        assert_eq!(get(1), "1");
        assert_eq!(get(1), "1");
        assert_eq!(get(2), "2");
        assert_eq!(get(1), "1");
        assert_eq!(built, 3, "built for 1, 2, then 1 again; the second 1 was kept");
    }

    proptest! {
        /// Any method, path and query: a route or a refusal, never a panic; and only GET is
        /// ever routed.
        #[test]
        fn any_request_routes_or_is_refused(method in ".{0,8}", path in "/?[a-z/.?=&%0-9x]{0,40}", query in proptest::option::of(".{0,300}")) {
            let r = route(&method, &path, query.as_deref());
            if method != "GET" {
                prop_assert_eq!(r, Err(Refusal::MethodNotAllowed));
            } else if let Ok(Route::Api(PageAsk::Port(..))) = r {
                prop_assert_eq!(path, "/api/port");
            }
        }

        /// A port query built from any GUID and port routes back to them.
        #[test]
        fn port_queries_round_trip(g in any::<u64>(), p in any::<u8>(), order in any::<bool>()) {
            let q = if order { format!("guid={g:#x}&port={p}") } else { format!("port={p}&guid={g:#018x}") };
            prop_assert_eq!(route("GET", "/api/port", Some(&q)), Ok(Route::Api(PageAsk::Port(Guid(g), p))));
        }
    }
}
