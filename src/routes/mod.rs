//! `ibsm routes`: what the SM would program, computed offline from a topology, or what a
//! running SM holds, in the formats operators use (OpenSM's `opensm-lfts.dump`, which is also
//! what `ibroute` scripts read; JSON; counts and timings), and OpenSM's dump format read back so
//! real tables can be checked.
//!
//! - [`mod@plan`]: a `.net` topology to a routing [`ibsm_routing::FabricView`] as the SM would
//!   discover it, with LIDs assigned as a fresh SM would (or from a `guid2lid` table), plus the
//!   names and GUIDs the dumps print; built by the core's own builder ([`crate::fabric_view`]).
//! - [`dump`]: the output formats (OpenSM's dump is read back by [`crate::opensm::lfts_dump`]).
//! - [`fdbs`]: OpenSM's `opensm.fdbs` (each route with its hop count and whether it is a
//!   shortest one) and `opensm.mcfdbs` (the multicast tables).
//! - [`layers`]: a layered routing's SL per pair and credit-loop verdict per VL.
//! - [`live`]: a running SM's fabric and tables as its control socket ships them, and back to a
//!   [`Plan`].
//! - [`subnet_lst`]: OpenSM's `opensm-subnet.lst` from the SA's snapshot (`routes dump
//!   --format subnet-lst --socket`).
//! - [`svg`]: the fabric drawn by tier with each cable coloured by its routed load
//!   (`routes check --svg`).

pub mod dump;
pub mod fdbs;
pub mod layers;
pub mod live;
pub mod plan;
pub mod subnet_lst;
pub mod svg;

pub use plan::{LidOwner, OwnerKind, Plan, plan};

use ibsm_mad::{Lid, PortNum};
use ibsm_routing::{Lft, Routes};

use crate::core::lids::Guid2Lid;
use crate::opensm::lfts_dump::DumpedSwitch;

/// The GUID-to-LID table a dump implies: every LID line names the port GUID that owns it, so each
/// GUID's base LID is the lowest LID it owns (with `2^lmc` LIDs from there).
pub fn guid2lid_from_dump(dumped: &[DumpedSwitch], lmc: u8) -> Guid2Lid {
    let mut base: std::collections::BTreeMap<ibsm_mad::Guid, u16> = std::collections::BTreeMap::new();
    for sw in dumped {
        for (&lid, &g) in &sw.owners {
            base.entry(g).and_modify(|l| *l = (*l).min(lid)).or_insert(lid);
        }
    }
    let span = (1u16 << lmc.min(7)) - 1;
    let mut t = Guid2Lid::default();
    for (g, lid) in base {
        t.insert(g, Lid(lid), Lid(lid.saturating_add(span)));
    }
    t
}

/// The dumped tables as [`Routes`] for `plan`'s switches (matched by GUID; a switch missing from
/// the dump gets an empty table).
pub fn routes_from_dump(plan: &Plan, dumped: &[DumpedSwitch]) -> Routes {
    let top = plan.view.max_lid();
    let tables = plan
        .view
        .switches
        .iter()
        .map(|sw| {
            let mut lft = Lft::unrouted(top);
            if let Some(d) = dumped.iter().find(|d| d.guid == sw.guid) {
                for (&lid, &port) in &d.routes {
                    if let Some(slot) = lft.entries_mut().get_mut(usize::from(lid)) {
                        *slot = PortNum(port.0);
                    }
                }
            }
            lft
        })
        .collect();
    Routes::from_tables(tables)
}
