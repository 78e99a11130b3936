//! The `mad_decode` fuzz target in its stable, bounded form (issue 23, RB1): the target's own
//! body (`mad/fuzz/bodies/mad_decode.rs`) on inputs from a fixed seed, well-formed MAD headers
//! with random fields and mutations of every captured byte fixture. It runs in `cargo test`,
//! where the fuzz target (nightly only) cannot.

mod common;

#[path = "../fuzz/bodies/mad_decode.rs"]
mod body;
#[path = "../../fuzz/seeded.rs"]
mod seeded;

use seeded::Rng;

const ITERATIONS: usize = 1_000_000;

/// Every section (request, response, record, trap) of every captured fixture.
fn corpus() -> Vec<Vec<u8>> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
    let mut out = Vec::new();
    let mut names: Vec<_> = std::fs::read_dir(dir).expect("fixtures").map(|e| e.expect("entry").path()).collect();
    names.sort();
    for path in names.iter().filter(|p| p.extension().is_some_and(|e| e == "fix")) {
        let text = std::fs::read_to_string(path).expect("fixture text");
        let name: &'static str = Box::leak(path.display().to_string().into_boxed_str());
        out.extend(common::Fixture::parse(name, &text).sections.into_values());
    }
    assert!(out.len() >= 40, "{} fixture sections", out.len());
    out
}

/// A MAD with a well-formed common header and random fields: a known class (SMP LID-routed or
/// directed, SA, PerfMgt) or any, a method, an attribute the decoder knows or any, a modifier,
/// directed-route hop fields and paths, and a random payload; 256 bytes, sometimes not.
fn structured(rng: &mut Rng) -> Vec<u8> {
    const CLASSES: [u8; 5] = [0x01, 0x81, 0x03, 0x04, 0x06];
    const METHODS: [u8; 9] = [0x01, 0x02, 0x03, 0x05, 0x06, 0x07, 0x12, 0x13, 0x15];
    const ATTRS: [u16; 24] = [
        0x0001, 0x0002, 0x0010, 0x0011, 0x0012, 0x0014, 0x0015, 0x0016, 0x0017, 0x0018, 0x0019, 0x001A, 0x001B, 0x0020,
        0x0030, 0x0031, 0x0035, 0x0038, 0x0011, 0x0013, 0x0020, 0x00B0, 0xF000, 0xFF00,
    ];
    let mut m = rng.bytes(256);
    m[0] = if rng.one_in(8) { rng.byte() } else { 1 };
    m[1] = if rng.one_in(8) { rng.byte() } else { *rng.pick(&CLASSES) };
    m[2] = if m[1] == 0x03 { 2 } else { 1 };
    m[3] = if rng.one_in(8) { rng.byte() } else { *rng.pick(&METHODS) | if rng.one_in(3) { 0x80 } else { 0 } };
    let attr = if rng.one_in(8) { rng.next_u64() as u16 } else { *rng.pick(&ATTRS) };
    m[16..18].copy_from_slice(&attr.to_be_bytes());
    if rng.one_in(2) {
        // A small modifier: a block number, a port, a record count.
        let modifier = rng.below(300) as u32;
        m[20..24].copy_from_slice(&modifier.to_be_bytes());
    }
    if m[1] == 0x81 {
        // Directed route: hop pointer and count mostly in range, the LIDs mostly permissive.
        m[6] = rng.below(66) as u8;
        m[7] = rng.below(66) as u8;
        if rng.one_in(2) {
            m[56..60].fill(0xFF);
        }
    }
    if rng.one_in(8) {
        m.truncate(rng.below(256));
    } else if rng.one_in(16) {
        let n = rng.below(300);
        m.extend(rng.bytes(n));
    }
    m
}

#[test]
fn mad_decode_never_panics_and_round_trips_on_seeded_inputs() {
    let corpus = corpus();
    let mut decoded_smp_or_sa = 0usize;
    seeded::run("mad_decode", 0x1b5a_0001, ITERATIONS, &corpus, 1024, structured, |data| {
        body::check(data);
        if matches!(
            ibsm_mad::decode::decode(data),
            Ok(ibsm_mad::decode::Decoded::Smp { .. } | ibsm_mad::decode::Decoded::Sa { .. })
        ) {
            decoded_smp_or_sa += 1;
        }
    });
    eprintln!("mad_decode: {ITERATIONS} inputs, {decoded_smp_or_sa} decoded as SMP or SA");
    // The generator reaches the decoder's deep paths, not only its first length check.
    assert!(
        decoded_smp_or_sa > ITERATIONS / 10,
        "only {decoded_smp_or_sa} of {ITERATIONS} inputs decoded as SMP or SA"
    );
}
