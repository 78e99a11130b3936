//! The `sa_serve` fuzz target in its stable, bounded form (issue 23, RB1): the target's own body
//! (`fuzz/bodies/sa_serve.rs`) on inputs from a fixed seed, from requesters known and unknown,
//! trusted and not. Structured inputs are SA requests with a valid header, a random method,
//! attribute, modifier, component mask and key around a record taken from the captured SA
//! fixtures; the others are mutations of those fixtures. One registry is kept across all inputs
//! so that registrations accumulate: it must stay within its caps, grow by at most one entry a
//! request, and every answer must stay within the RMPP payload limit. It runs in `cargo test`,
//! where the fuzz target (nightly only) cannot.

#[path = "../fuzz/bodies/sa_serve.rs"]
mod body;
#[path = "../mad/tests/common/mod.rs"]
mod fixtures;
#[path = "../fuzz/seeded.rs"]
mod seeded;

use std::cell::Cell;

use ibsm::sa::inform::MAX_SUBSCRIPTIONS;
use ibsm::sa::service_record::MAX_SERVICES;
use ibsm::sa::{Limits, SaState};
use ibsm_mad::header::Method;
use ibsm_mad::records::{InformInfo, ServiceRecord};
use ibsm_mad::sa::{SA_HEADER_LEN, request};
use ibsm_mad::{Gid, Lid, PKey};
use seeded::Rng;

const ITERATIONS: usize = 100_000;

/// The request and record sections of the captured SA fixtures.
fn corpus() -> Vec<Vec<u8>> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/mad/tests/fixtures");
    let mut paths: Vec<_> = std::fs::read_dir(dir).expect("fixtures").map(|e| e.expect("entry").path()).collect();
    paths.sort();
    let mut out = Vec::new();
    for p in paths.iter().filter(|p| {
        p.file_name()
            .is_some_and(|n| n.to_string_lossy().ends_with("record.fix") || n.to_string_lossy().starts_with("sa_"))
    }) {
        let text = std::fs::read_to_string(p).expect("fixture text");
        let name: &'static str = Box::leak(p.display().to_string().into_boxed_str());
        let fix = fixtures::Fixture::parse(name, &text);
        out.extend(
            fix.sections.into_iter().filter(|(k, v)| k.starts_with("request") && v.len() >= 256).map(|(_, v)| v),
        );
    }
    assert!(out.len() >= 15, "{} SA requests in the fixtures", out.len());
    out
}

/// An SA request with a valid header around a record from the corpus.
fn structured(rng: &mut Rng, corpus: &[Vec<u8>]) -> Vec<u8> {
    const METHODS: [u8; 7] = [0x01, 0x02, 0x12, 0x13, 0x14, 0x15, 0x06];
    const ATTRS: [u16; 18] = [
        0x0001, 0x0002, 0x0003, 0x0011, 0x0012, 0x0013, 0x0015, 0x0018, 0x0019, 0x0020, 0x0030, 0x0031, 0x0033, 0x0035,
        0x0036, 0x0038, 0x00F3, 0x0014,
    ];
    let mut m = rng.pick(corpus).clone();
    m.resize(256, 0);
    m[0] = 1;
    m[1] = 0x03;
    m[2] = 2;
    m[3] = *rng.pick(&METHODS);
    m[4..8].fill(0);
    m[8..16].copy_from_slice(&rng.next_u64().to_be_bytes());
    let attr = if rng.one_in(10) { rng.next_u64() as u16 } else { *rng.pick(&ATTRS) };
    m[16..18].copy_from_slice(&attr.to_be_bytes());
    m[20..24].copy_from_slice(&(if rng.one_in(4) { rng.next_u64() as u32 } else { 0 }).to_be_bytes());
    if rng.one_in(3) {
        // RMPP: version 1, a random type and flags.
        m[24] = 1;
        m[25] = rng.below(5) as u8;
        m[26] = rng.byte();
        m[27] = rng.byte();
    }
    let key: u64 = *rng.pick(&[0, 0, 1, 2]);
    m[36..44].copy_from_slice(&key.to_be_bytes());
    m[44..46].copy_from_slice(&(rng.below(40) as u16).to_be_bytes());
    let mask = match rng.below(3) {
        0 => 0,
        1 => u64::MAX,
        _ => rng.next_u64(),
    };
    m[48..56].copy_from_slice(&mask.to_be_bytes());
    for _ in 0..rng.below(4) {
        let i = 56 + rng.below(200);
        m[i] = rng.byte();
    }
    m
}

/// The subnet prefix of the swept fabric's GIDs.
const PREFIX: u64 = 0xfe80_0000_0000_0000;

/// A registration that the SA keeps, from a port of the fabric for itself: a ServiceRecord Set
/// (service IDs from a range wide enough that most are new) or an InformInfo subscription. Its
/// requester is left in `from`.
fn registration(rng: &mut Rng, from: &Cell<Option<Lid>>) -> Vec<u8> {
    let (snap, _) = body::snapshot();
    let ports: Vec<(ibsm_mad::Guid, Lid)> =
        snap.end_ports().filter_map(|at| snap.port(at)).map(|p| (p.guid, p.lid)).collect();
    let (guid, lid) = *rng.pick(&ports);
    from.set(Some(lid));
    let tid = rng.next_u64();
    let bytes = if rng.one_in(2) {
        let rec = ServiceRecord {
            service_id: rng.next_u64() % 1_000_000,
            service_gid: Gid { prefix: PREFIX, guid },
            service_pkey: PKey(0xffff),
            service_lease: *rng.pick(&[60, ServiceRecord::INFINITE_LEASE]),
            ..ServiceRecord::default()
        };
        let mask = ServiceRecord::COMP_SERVICE_ID | ServiceRecord::COMP_SERVICE_GID | ServiceRecord::COMP_SERVICE_PKEY;
        request(*rng.pick(&[Method::Set, Method::Set, Method::Delete]), mask, tid, &rec)
    } else {
        let rec = InformInfo {
            gid: Gid::default(),
            lid_range_begin: InformInfo::ALL_LIDS,
            lid_range_end: Lid(0),
            is_generic: true,
            subscribe: !rng.one_in(4),
            trap_type: InformInfo::ALL_TYPES,
            trap_number_or_device_id: *rng.pick(&[0xffff, 64, 65, 128, 144, 145, 256, 259, 300]),
            qpn: 1,
            resp_time_value: 18,
            producer_type_or_vendor_id: InformInfo::ALL_PRODUCERS,
        };
        request(Method::Set, 0, tid, &rec)
    };
    bytes.expect("a record fits").to_vec()
}

#[test]
fn sa_serve_never_panics_and_stays_bounded_on_seeded_inputs() {
    let corpus = corpus();
    let mut state = SaState::default();
    let mut rng = Rng::new(0x1b5a_0004);
    let max_answer = Limits::default().max_payload + SA_HEADER_LEN;
    let (mut answered, mut ok, mut services_seen, mut informs_seen) = (0usize, 0usize, 0usize, 0usize);
    let corpus_for_gen = corpus.clone();
    let from = Cell::new(None);
    let generate = |r: &mut Rng| if r.one_in(3) { registration(r, &from) } else { structured(r, &corpus_for_gen) };
    seeded::run("sa_serve", 0x1b5a_0004, ITERATIONS, &corpus, 512, generate, |data| {
        // Requesters: the registering port, else the fabric's LIDs (1 to about 30 with LMC 1),
        // LID 0, and LIDs it lacks.
        let requester =
            from.take().unwrap_or_else(|| Lid(*rng.pick(&[0, 1, 2, 3, 5, 8, 13, 21, 29, 40, 0xBFFF, 0xC000, 0xFFFF])));
        let (services, informs) = (state.services.len(), state.informs.len());
        let lens = body::check(&mut state, data, requester);
        answered += usize::from(!lens.is_empty());
        ok += usize::from(lens.iter().any(|(_, status)| *status == 0));
        for (len, _) in lens {
            assert!(len <= max_answer, "an answer of {len} bytes");
        }
        // Two serves (RMPP and single-MAD limits) of one request register at most one entry each.
        assert!(state.services.len() <= services + 2 && state.services.len() <= MAX_SERVICES);
        assert!(state.informs.len() <= informs + 2 && state.informs.len() <= MAX_SUBSCRIPTIONS);
        services_seen = services_seen.max(state.services.len());
        informs_seen = informs_seen.max(state.informs.len());
    });
    let groups = state.mcast.iter().count();
    assert!(groups <= 0x4000, "{groups} multicast groups");
    // The inputs reach the handlers, not only the header checks.
    assert!(answered > ITERATIONS / 4, "only {answered} of {ITERATIONS} requests answered");
    eprintln!(
        "sa_serve: {ITERATIONS} requests, {answered} answered, {ok} with status 0; at most {services_seen} services, {informs_seen} subscriptions; {groups} groups"
    );
}
