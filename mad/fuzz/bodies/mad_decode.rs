//! The body of the `mad_decode` fuzz target, shared with its stable form
//! (`mad/tests/fuzz_seeded.rs`): `ibsm_mad::decode::decode` on arbitrary bytes must never panic,
//! and the repr round trips the decoder relies on hold: an SMP or SA header that parsed once
//! parses again, unchanged, from its own emitted bytes. The same bytes taken as a PerfMgt MAD
//! must give PortCounters and PortCountersExtended that round-trip through emit/parse.

use ibsm_mad::Attribute;
use ibsm_mad::decode::{Decoded, decode};
use ibsm_mad::perf::{PerfMad, PortCounters, PortCountersExtended};
use ibsm_mad::sa::SaHeader;
use ibsm_mad::smp::SmpRepr;

/// Decodes `data` and checks the round trips; panics when a check fails.
pub fn check(data: &[u8]) {
    match decode(data) {
        Ok(Decoded::Smp { smp, .. }) => {
            assert_eq!(SmpRepr::parse(&smp.to_bytes()).as_ref(), Ok(&*smp));
        }
        Ok(Decoded::Sa { header, .. }) => {
            let mad = header.to_mad(&[]).expect("an empty record always fits");
            assert_eq!(SaHeader::from_bytes(&mad), Ok(header));
        }
        Ok(Decoded::Unsupported { header, .. }) => {
            // The header it kept is the one at the start of the bytes.
            assert_eq!(ibsm_mad::header::MadHeader::from_bytes(data).ok(), Some(header));
        }
        Ok(Decoded::Other(_)) | Err(_) => {}
    }
    if let Ok(perf) = PerfMad::new_checked(data) {
        if let Ok(pc) = PortCounters::parse(perf.data()) {
            assert_eq!(PortCounters::parse(&pc.to_vec()), Ok(pc));
        }
        if let Ok(pc) = PortCountersExtended::parse(perf.data()) {
            assert_eq!(PortCountersExtended::parse(&pc.to_vec()), Ok(pc));
        }
    }
}
