//! The body of the `partitions_conf` fuzz target, shared with its stable form
//! (`partitions/tests/fuzz_seeded.rs`): `parse_partitions_conf` on arbitrary text must never
//! panic, and whatever parses must render and parse back to the same policy when it is
//! representable.

use ibsm_partitions::{parse_partitions_conf, render_partitions_conf};

/// Parses `data` as a `partitions.conf` and checks the round trip; panics when a check fails.
pub fn check(data: &[u8]) {
    let Ok(text) = core::str::from_utf8(data) else { return };
    if let Ok(policy) = parse_partitions_conf(text)
        && let Ok(rendered) = render_partitions_conf(&policy)
    {
        assert_eq!(parse_partitions_conf(&rendered).as_ref(), Ok(&policy));
    }
}
