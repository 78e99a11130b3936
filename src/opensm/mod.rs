//! OpenSM's formats, for sites moving from OpenSM: read here, mapped onto ibsm's own types.
//!
//! - [`config_import`]: `ibsm config import-opensm`, an `opensm.conf` turned into `ibsm.toml`.
//! - [`guid_file`]: GUID list files (`root_guid_file`), one GUID per line.
//! - [`node_name_map`]: infiniband-diags' node name map (NodeGUID to the name shown).
//! - [`lfts_dump`]: `opensm-lfts.dump` (OpenSM's or `ibsm routes dump --format opensm`) read
//!   back into per-switch tables.
//!
//! OpenSM's `partitions.conf` grammar is parsed by the `ibsm-partitions` crate; writing the
//! dump is the `routes` module's (`routes::dump`).

pub mod config_import;
pub mod guid_file;
pub mod lfts_dump;
pub mod node_name_map;

/// Texts of the characters of `alphabet`, from a fixed seed, for the parsers' never-panic tests.
#[cfg(test)]
fn random_texts(alphabet: &'static [u8], count: usize) -> impl Iterator<Item = String> {
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    (0..count).map(move |_| {
        let len = next() % 80;
        let bytes: Vec<u8> = (0..len).map(|_| alphabet[(next() % alphabet.len() as u64) as usize]).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    })
}
