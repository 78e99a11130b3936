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
