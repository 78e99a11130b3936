//! Fuzz target: `parse_partitions_conf` on arbitrary text must never panic, and whatever parses
//! must render and parse back to the same policy when it is representable.

#![no_main]

use ibsm_partitions::{parse_partitions_conf, render_partitions_conf};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = core::str::from_utf8(data) else { return };
    if let Ok(policy) = parse_partitions_conf(text) {
        if let Ok(rendered) = render_partitions_conf(&policy) {
            assert_eq!(parse_partitions_conf(&rendered).as_ref(), Ok(&policy));
        }
    }
});
