//! Which paths' SLs a new route moved: the comparison of two routes' layers (the SL of each
//! (source switch, destination LID) pair, as the SA gives it in PathRecords), by switch GUID.
//!
//! Owns [`sls_moved`] (whether any pair moved: a full route then tells every CA port to
//! re-register) and [`sources_moved`] (the source switches of the pairs that moved: a repair
//! or its undoing tells only the CA ports that hang off them). Reads layers only; no subnet,
//! no SMP.

use ibsm_mad::{Guid, Lid};
use ibsm_routing::dfsssp::PathLayers;

/// Whether a (source switch, LID) pair routed both by the `old` layers and the `new` ones
/// (switch GUIDs of their rows, layers; no layers: every path on layer 0) is on another layer,
/// so its hosts' PathRecord SL changed ([`sources_moved`] not empty). Pairs only one side
/// routes are not counted.
pub fn sls_moved(old: (&[Guid], Option<&PathLayers>), new: (&[Guid], Option<&PathLayers>)) -> bool {
    !sources_moved(old, new).is_empty()
}

/// The GUIDs of the source switches (of `new_guids`) with a pair routed by both the `old` and
/// the `new` layers on another layer (no layers: every path on layer 0), sorted: the PathRecord
/// SL of a CA port at such a switch to some LID changed, and its host should ask again. A
/// pair only one side routes is not counted (a LID that came or went: its paths are new).
///
/// The work: where both sides have their switches in one order (a repair's view keeps the
/// base's), a slice compare per LID; else a lookup per pair.
pub fn sources_moved(
    (old_guids, old): (&[Guid], Option<&PathLayers>),
    (new_guids, new): (&[Guid], Option<&PathLayers>),
) -> Vec<Guid> {
    if old.is_none() && new.is_none() {
        return Vec::new();
    }
    let lids = old.map_or(0, PathLayers::lids).max(new.map_or(0, PathLayers::lids));
    let lid = |l: usize| Lid(u16::try_from(l).unwrap_or(u16::MAX));
    let mut moved = vec![false; new_guids.len()];
    if old_guids == new_guids {
        let zeros = vec![0u8; new_guids.len()];
        // No layers: every routed pair on layer 0. A LID the other side has no row for is
        // routed there only where it has layers at all (else it is not known to be routed).
        for d in (1..lids).map(lid) {
            let (Some(a), Some(b)) = (row(old, d, &zeros), row(new, d, &zeros)) else { continue };
            if a == b {
                continue;
            }
            for ((m, x), y) in moved.iter_mut().zip(a).zip(b) {
                *m |= x != y;
            }
        }
    } else {
        let at: std::collections::HashMap<Guid, usize> = old_guids.iter().enumerate().map(|(i, &g)| (g, i)).collect();
        let layer = |l: Option<&PathLayers>, s: usize, d: Lid| match l {
            Some(l) => l.layer(s, d),
            None => Some(0),
        };
        for (s, g) in new_guids.iter().enumerate() {
            let Some(&o) = at.get(g) else { continue };
            moved[s] = (1..lids)
                .map(lid)
                .any(|d| matches!((layer(old, o, d), layer(new, s, d)), (Some(a), Some(b)) if a != b));
        }
    }
    let mut out: Vec<Guid> = new_guids.iter().zip(&moved).filter(|(_, m)| **m).map(|(g, _)| *g).collect();
    out.sort_unstable();
    out
}

/// The layers of every source switch's path to `d` in `l` (no layers: `zeros`, every path on
/// layer 0); `None` where `l` routes no such LID or its rows are of another length.
fn row<'a>(l: Option<&'a PathLayers>, d: Lid, zeros: &'a [u8]) -> Option<&'a [u8]> {
    match l {
        Some(l) => l.lid_row(d).filter(|r| r.len() == zeros.len()),
        None => Some(zeros),
    }
}
