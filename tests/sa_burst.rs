//! A batch of MADs handed to the core at once (`Sm::handle_mads`, as the daemon's MAD thread
//! hands over what it read in one go) gets exactly what the same MADs get one by one through
//! `Sm::handle_mad`: the same answers in the same order, to the same addresses, the same events
//! and the same counts. The batch entry walks the PathRecord Gets' paths ahead, together; these
//! tests hold that this changes no answer, with requests of every kind mixed in, one LID or two
//! per port, and before any sweep. (That the walks ahead find what a walk alone finds, on
//! damaged tables too, is the lib test in `sa::paths`.)

use ibsm::core::{Guid2Lid, MadSource, Sm, SmConfig, Transmit};
use ibsm_mad::header::Method;
use ibsm_mad::ids::status;
use ibsm_mad::records::{NodeRecord, PathRecord};
use ibsm_mad::sa::{SaHeader, request};
use ibsm_mad::{Attribute, Gid, Lid};
use ibsm_topology::GenSpec;

const PREFIX: u64 = 0xfe80_0000_0000_0000;
const LIMIT: u64 = 600_000_000_000;

/// Everything the core has to say after a batch: its transmits, its events (as text), the
/// request counters and the SA's answers by status.
#[derive(Debug, PartialEq)]
struct Said {
    sent: Vec<Transmit>,
    events: Vec<String>,
    counters: String,
    counts: String,
}

fn drain(sm: &mut Sm, now: u64) -> Said {
    let mut sent = Vec::new();
    while let Some(t) = sm.poll_transmit(now) {
        sent.push(t);
    }
    let mut events = Vec::new();
    while let Some(e) = sm.poll_event() {
        events.push(format!("{e:?}"));
    }
    Said { sent, events, counters: format!("{:?}", sm.request_counters()), counts: format!("{:?}", sm.sa_counts()) }
}

/// A 3-level fat tree of 8-port switches (128 hosts) swept by an SM whose requesters may send
/// `rate` SA requests a second each.
fn swept(rate: u32) -> Sm {
    let topo = GenSpec::fat_tree(3, 8).generate().unwrap();
    let cfg = SmConfig { sa_rate_limit: rate, ..SmConfig::default() };
    let mut drv = ibsm::transport::sim::SimDriver::new(&topo, 5, Sm::new(cfg, Guid2Lid::default()), None).unwrap();
    assert!(drv.sweep(LIMIT, |_| {}).is_some_and(|r| r.complete));
    let mut sm = drv.sm;
    let now = sm.now();
    drain(&mut sm, now);
    sm
}

fn path_get(tid: u64, mask: u64, q: &PathRecord) -> Vec<u8> {
    request(Method::Get, mask, tid, q).unwrap().to_vec()
}

/// A mixed batch: PathRecord Gets by LID between spread pairs (some repeated, one a port to
/// itself, one to a LID nobody owns), by GID, a GetTable of PathRecords, a Get naming no
/// destination, a NodeRecord Get, one with a wrong SA key, a short MAD; from requesters spread
/// over the fabric and one that sends many (past a small rate limit it gets BUSY).
fn batch(lids: &[Lid], guid_of: impl Fn(Lid) -> ibsm_mad::Guid) -> Vec<(Vec<u8>, MadSource)> {
    let by_lid = PathRecord::COMP_SLID | PathRecord::COMP_DLID;
    let mut out = Vec::new();
    let n = lids.len();
    for i in 0..200 {
        let (s, d) = (lids[(i * 37) % n], lids[(i * 101 + 7) % n]);
        let from = if i % 9 == 0 { lids[0] } else { lids[(i * 13) % n] };
        let q = PathRecord { slid: s, dlid: d, ..PathRecord::default() };
        out.push((path_get(i as u64, by_lid, &q), MadSource::lid(from, 1)));
        match i % 25 {
            3 => out.push((path_get(1000 + i as u64, by_lid, &q), MadSource::lid(s, 1))),
            5 => {
                let me = PathRecord { slid: s, dlid: s, ..PathRecord::default() };
                out.push((path_get(2000 + i as u64, by_lid, &me), MadSource::lid(s, 1)));
            }
            7 => {
                let nobody = PathRecord { slid: s, dlid: Lid(0xbff0), ..PathRecord::default() };
                out.push((path_get(3000 + i as u64, by_lid, &nobody), MadSource::lid(s, 1)));
            }
            9 => {
                let gids = PathRecord {
                    sgid: Gid { prefix: PREFIX, guid: guid_of(s) },
                    dgid: Gid { prefix: PREFIX, guid: guid_of(d) },
                    ..PathRecord::default()
                };
                let mask = PathRecord::COMP_SGID | PathRecord::COMP_DGID;
                out.push((path_get(4000 + i as u64, mask, &gids), MadSource::lid(d, 1)));
            }
            11 => {
                let q = PathRecord { slid: s, ..PathRecord::default() };
                out.push((path_get(5000 + i as u64, PathRecord::COMP_SLID, &q), MadSource::lid(s, 1)));
                let table = request(Method::GetTable, PathRecord::COMP_SLID, 6000 + i as u64, &q).unwrap().to_vec();
                out.push((table, MadSource::lid(s, 1)));
            }
            13 => {
                let node = NodeRecord { lid: d, ..NodeRecord::parse(&[0; 108]).unwrap() };
                let nr = request(Method::Get, NodeRecord::COMP_LID, 7000 + i as u64, &node).unwrap().to_vec();
                out.push((nr, MadSource::lid(s, 1)));
                let mut bytes = path_get(8000 + i as u64, by_lid, &q);
                let mut keyed = SaHeader::from_bytes(&bytes).unwrap();
                keyed.sm_key = 0x77;
                keyed.emit(&mut bytes);
                out.push((bytes, MadSource::lid(s, 1)));
                out.push((vec![1, 3, 2], MadSource::lid(s, 1)));
            }
            _ => {}
        }
    }
    out
}

/// Hands `mads` to one SM one by one and to another (swept the same way) as one batch, and
/// compares all they say.
fn same_one_by_one_and_batched(mut one: Sm, mut all: Sm, mads: &[(Vec<u8>, MadSource)]) -> Said {
    let now = one.now().max(all.now()) + 1_000_000;
    for (bytes, src) in mads {
        one.handle_mad(now, bytes, *src);
    }
    all.handle_mads(now, mads.iter().map(|(b, s)| (&b[..], *s)));
    let (a, b) = (drain(&mut one, now), drain(&mut all, now));
    assert_eq!(a.sent.len(), b.sent.len());
    for (i, (x, y)) in a.sent.iter().zip(&b.sent).enumerate() {
        assert_eq!(x, y, "transmit {i}");
    }
    assert_eq!(a, b);
    a
}

fn end_lids(sm: &Sm) -> (Vec<Lid>, std::sync::Arc<ibsm::sa::Snapshot>) {
    let snap = sm.snapshot().unwrap();
    let lids = snap.end_ports().filter_map(|p| snap.port(p).map(|r| r.lid)).collect();
    (lids, snap)
}

#[test]
fn a_batch_is_answered_as_its_mads_one_by_one_busy_and_refusals_included() {
    let (one, all) = (swept(10), swept(10));
    let (lids, snap) = end_lids(&one);
    assert!(lids.len() > 100, "{} end ports", lids.len());
    let guid_of = |l: Lid| snap.by_lid(l).and_then(|p| snap.port_guid(p)).unwrap();
    let mads = batch(&lids, guid_of);
    let said = same_one_by_one_and_batched(one, all, &mads);
    // What was said is what those requests get: answers of several statuses, BUSY for the
    // requester over its rate, silence and an event for the wrong key and the short MAD.
    let statuses: Vec<u16> = said.sent.iter().map(|t| SaHeader::from_bytes(&t.bytes).unwrap().status).collect();
    let count = |s: u16| statuses.iter().filter(|&&x| x == s).count();
    assert!(count(status::OK) > 150, "{statuses:?}");
    assert!(count(status::BUSY) > 0, "the busy requester");
    assert!(count(status::SA_NO_RECORDS) > 0, "the LID nobody owns");
    assert!(count(status::SA_INSUFFICIENT_COMPONENTS) > 0, "no destination");
    assert!(said.sent.len() < mads.len(), "the wrong key and the short MAD get no answer");
    assert!(said.events.iter().any(|e| e.contains("SaBadKey")), "{:?}", said.events);
}

#[test]
fn a_batch_with_two_lids_a_port_and_before_any_sweep_is_answered_as_one_by_one() {
    // LMC 1: each end port owns two LIDs; a GID names the port, its walk is to the base LID.
    let swept_lmc = || {
        let topo = GenSpec::fat_tree(3, 4).generate().unwrap();
        let cfg = SmConfig { lmc: 1, sa_rate_limit: 0, ..SmConfig::default() };
        let mut drv = ibsm::transport::sim::SimDriver::new(&topo, 5, Sm::new(cfg, Guid2Lid::default()), None).unwrap();
        assert!(drv.sweep(LIMIT, |_| {}).is_some_and(|r| r.complete));
        let mut sm = drv.sm;
        let now = sm.now();
        drain(&mut sm, now);
        sm
    };
    let (one, all) = (swept_lmc(), swept_lmc());
    let (base, snap) = end_lids(&one);
    let lids: Vec<Lid> = base.iter().flat_map(|&l| [l, Lid(l.0 + 1)]).collect();
    let guid_of = |l: Lid| snap.by_lid(l).and_then(|p| snap.port_guid(p)).unwrap();
    let mads = batch(&lids, guid_of);
    let said = same_one_by_one_and_batched(one, all, &mads);
    assert!(said.sent.iter().filter(|t| SaHeader::from_bytes(&t.bytes).unwrap().status == status::OK).count() > 150);

    // No sweep yet: silence either way.
    let cfg = SmConfig::default;
    let said =
        same_one_by_one_and_batched(Sm::new(cfg(), Guid2Lid::default()), Sm::new(cfg(), Guid2Lid::default()), &mads);
    assert!(said.sent.iter().all(|t| !t.is_response()), "no SA answer before a sweep");
}
