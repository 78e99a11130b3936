//! Fuzz target: `ibsm_mad::decode::decode` on arbitrary bytes must never panic.
//!
//! Besides decoding, it checks the repr round trips the decoder relies on: an SMP or SA header
//! that parsed once must parse again, unchanged, from its own emitted bytes.

#![no_main]

use ibsm_mad::decode::{Decoded, decode};
use ibsm_mad::sa::SaHeader;
use ibsm_mad::smp::SmpRepr;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
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
});
