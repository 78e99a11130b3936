//! The `partitions_conf` fuzz target in its stable, bounded form (issue 23, RB1): the target's
//! own body (`partitions/fuzz/bodies/partitions_conf.rs`) on inputs from a fixed seed, files
//! written from the grammar with random names, P_Keys, flags and members, and mutations of a
//! corpus of real files. It runs in `cargo test`, where the fuzz target (nightly only) cannot.

#[path = "../fuzz/bodies/partitions_conf.rs"]
mod body;
#[path = "../../fuzz/seeded.rs"]
mod seeded;

use std::fmt::Write as _;

use seeded::Rng;

const ITERATIONS: usize = 200_000;

const CORPUS: [&str; 6] = [
    "Default=0x7fff, ipoib : ALL=full ;\n",
    "# the OpenSM example\nDefault=0x7fff, ipoib, defmember=full : ALL, ALL_SWITCHES=full, SELF=full ;\n\
     storage=0x8001, ipoib, mtu=5, rate=7, sl=1 : 0x0002c9030000aa01=full, 0x0002c9030000aa02 ;\n\
     compute=0x0002, defmember=limited : ALL_CAS ;\n",
    "a=0x10 : ALL_CAS=limited, 0x101=full ;\nb=0x20 : ALL_SWITCHES=full ;\nc=0x30 : ALL_ROUTERS=both ;\na=0x10 : 0x102=limited ;",
    "Default=0x7fff : ALL=full ;\nipoib_group=0x0004, ipoib :\n  mgid=ff12:401b::1, mtu=4, rate=3\n  mgid=ff12:601b::fb\n  ALL=full ;\n",
    "p1=0x1001,ipoib,scope=2,Q_Key=0x0b1b,TClass=0 : NONE ; p2 : SELF=limi ; Default : ALL_CAS=both ;",
    "",
];

/// A file of one to five statements written from the grammar with random parts.
fn structured(rng: &mut Rng) -> Vec<u8> {
    const FLAGS: [&str; 10] = [
        "ipoib",
        "mtu=4",
        "mtu=5",
        "rate=7",
        "sl=1",
        "scope=2",
        "defmember=full",
        "defmember=limited",
        "indx0",
        "Q_Key=0x0b1b",
    ];
    const MEMBERS: [&str; 8] =
        ["ALL", "ALL_CAS", "ALL_SWITCHES", "ALL_ROUTERS", "SELF", "NONE", "0x0002c9030000aa01", "0x101"];
    const KINDS: [&str; 5] = ["", "=full", "=limited", "=both", "=limi"];
    let mut s = String::new();
    for _ in 0..=rng.below(5) {
        if rng.one_in(6) {
            s.push_str("# a comment\n");
        }
        if !rng.one_in(5) {
            s.push_str(rng.pick::<&str>(&["Default", "storage", "p", "x_1", ""]));
        }
        if !rng.one_in(4) {
            let _ = write!(s, "=0x{:04x}", rng.next_u64() as u16);
        }
        for _ in 0..rng.below(3) {
            s.push(',');
            s.push_str(rng.pick::<&str>(&FLAGS));
        }
        s.push_str(" :");
        if rng.one_in(5) {
            s.push_str("\n  mgid=ff12:401b::1, mtu=4\n");
        }
        for k in 0..=rng.below(3) {
            if k > 0 {
                s.push_str(rng.pick::<&str>(&[",", ",\n  "]));
            }
            s.push(' ');
            s.push_str(rng.pick::<&str>(&MEMBERS));
            s.push_str(rng.pick::<&str>(&KINDS));
        }
        s.push_str(rng.pick::<&str>(&[" ;\n", ";", " ; "]));
    }
    s.into_bytes()
}

#[test]
fn partitions_conf_never_panics_and_round_trips_on_seeded_inputs() {
    let corpus: Vec<Vec<u8>> = CORPUS.iter().map(|s| s.as_bytes().to_vec()).collect();
    let mut parsed = 0usize;
    seeded::run("partitions_conf", 0x1b5a_0003, ITERATIONS, &corpus, 8 << 10, structured, |data| {
        body::check(data);
        if std::str::from_utf8(data).is_ok_and(|t| ibsm_partitions::parse_partitions_conf(t).is_ok()) {
            parsed += 1;
        }
    });
    eprintln!("{ITERATIONS} inputs, {parsed} parsed and round-tripped");
    // Both sides of the parser are reached: many inputs parse (and so round-trip), many do not.
    assert!(parsed > ITERATIONS / 10 && parsed < ITERATIONS, "{parsed} of {ITERATIONS} inputs parsed");
}
