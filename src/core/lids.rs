//! LID assignment and the persistent GUID-to-LID table.
//!
//! Owns: [`Guid2Lid`] (the table, with parse and format of OpenSM's `guid2lid` file format:
//! one `0x<portguid> 0x<minlid> 0x<maxlid>` line per port) and [`assign`], the pure function that
//! gives every end port a unique, LMC-aligned range of unicast LIDs.
//!
//! Guarantees: assigned ranges never overlap, are aligned to `2^lmc`, and lie in
//! `1..=0xbfff`. Preference order: the table entry for the port, then the LID the port already
//! holds (when valid, aligned and free), then the lowest free range. Parsing never panics;
//! malformed lines, and a range that shares a LID with an earlier line's, are rejected with
//! their line number and reason. Reading or writing the file
//! is the caller's business: nothing here touches the file system.

use std::collections::BTreeMap;
use std::fmt;

use ibsm_mad::{Guid, Lid};

/// Why a `guid2lid` line was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Guid2LidErrorKind {
    /// The line does not have the three fields `GUID MINLID MAXLID`.
    #[error("expected 3 fields `0x<portguid> 0x<minlid> 0x<maxlid>`, found {0}")]
    FieldCount(usize),
    /// A field is not a hexadecimal number of the right size.
    #[error("{field}: `{text}` is not a hexadecimal {bits}-bit number")]
    BadNumber {
        /// Which field.
        field: &'static str,
        /// The text found.
        text: String,
        /// Width of the field.
        bits: u8,
    },
    /// A LID is 0 or above the unicast range 0xbfff.
    #[error("LID range 0x{min:x}..0x{max:x} is outside the unicast range 0x1..0xbfff")]
    OutOfRange {
        /// Minimum LID.
        min: u16,
        /// Maximum LID.
        max: u16,
    },
    /// The range is not `2^n` LIDs (n <= 7) starting at a multiple of its size.
    #[error("LID range 0x{min:x}..0x{max:x} is not an aligned power-of-two range of at most 128 LIDs")]
    BadRange {
        /// Minimum LID.
        min: u16,
        /// Maximum LID.
        max: u16,
    },
    /// The GUID appeared on an earlier line.
    #[error("GUID {guid} already listed on line {first}")]
    DuplicateGuid {
        /// The GUID.
        guid: Guid,
        /// Line of the first occurrence.
        first: usize,
    },
    /// The range shares a LID with the range of another GUID on an earlier line.
    #[error(
        "LIDs 0x{min:x}..0x{max:x} of GUID {guid} overlap LIDs 0x{other_min:x}..0x{other_max:x} of GUID {other} on line {first}"
    )]
    Overlap {
        /// This line's GUID.
        guid: Guid,
        /// Its minimum LID.
        min: u16,
        /// Its maximum LID.
        max: u16,
        /// The GUID that has (some of) these LIDs already.
        other: Guid,
        /// Its minimum LID.
        other_min: u16,
        /// Its maximum LID.
        other_max: u16,
        /// Line of the other GUID.
        first: usize,
    },
}

/// A rejected `guid2lid` text: the 1-based line and the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("guid2lid line {line}: {kind}")]
pub struct Guid2LidError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong with it.
    pub kind: Guid2LidErrorKind,
}

/// The persistent map from port GUID to its LID range (`min..=max`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Guid2Lid {
    entries: BTreeMap<Guid, (Lid, Lid)>,
}

impl Guid2Lid {
    /// An empty table.
    pub fn new() -> Guid2Lid {
        Guid2Lid::default()
    }

    /// Parses OpenSM's `guid2lid` format: one `0x<portguid> 0x<minlid> 0x<maxlid>` line per
    /// port. Blank lines and lines starting with `#` are ignored.
    ///
    /// # Errors
    /// The first malformed line, with its number and reason ([`Guid2LidErrorKind`]).
    pub fn parse(text: &str) -> Result<Guid2Lid, Guid2LidError> {
        let mut entries = BTreeMap::new();
        let mut first_line: BTreeMap<Guid, usize> = BTreeMap::new();
        // Ranges read so far, by their first LID: (last LID, GUID, line).
        let mut ranges: BTreeMap<u16, (u16, Guid, usize)> = BTreeMap::new();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let err = |kind| Guid2LidError { line, kind };
            let t = raw.trim();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            let fields: Vec<&str> = t.split_whitespace().collect();
            let [g, lo, hi] = fields[..] else {
                return Err(err(Guid2LidErrorKind::FieldCount(fields.len())));
            };
            let guid = Guid(hex(g).ok_or_else(|| err(bad("port GUID", g, 64)))?);
            let min = hex(lo).and_then(|v| u16::try_from(v).ok()).ok_or_else(|| err(bad("min LID", lo, 16)))?;
            let max = hex(hi).and_then(|v| u16::try_from(v).ok()).ok_or_else(|| err(bad("max LID", hi, 16)))?;
            if min == 0 || max > Lid::MAX_UNICAST.0 || min > max {
                return Err(err(Guid2LidErrorKind::OutOfRange { min, max }));
            }
            let span = u32::from(max - min) + 1;
            if !span.is_power_of_two() || span > 128 || u32::from(min) % span != 0 {
                return Err(err(Guid2LidErrorKind::BadRange { min, max }));
            }
            if let Some(&first) = first_line.get(&guid) {
                return Err(err(Guid2LidErrorKind::DuplicateGuid { guid, first }));
            }
            // Ranges are disjoint, so the one starting last at or before `max` is the only
            // candidate for an overlap.
            if let Some((&other_min, &(other_max, other, first))) = ranges.range(..=max).next_back()
                && other_max >= min
            {
                return Err(err(Guid2LidErrorKind::Overlap { guid, min, max, other, other_min, other_max, first }));
            }
            ranges.insert(min, (max, guid, line));
            first_line.insert(guid, line);
            entries.insert(guid, (Lid(min), Lid(max)));
        }
        Ok(Guid2Lid { entries })
    }

    /// The LID range recorded for `guid`.
    pub fn get(&self, guid: Guid) -> Option<(Lid, Lid)> {
        self.entries.get(&guid).copied()
    }

    /// Records (or replaces) the range of `guid`.
    pub fn insert(&mut self, guid: Guid, min: Lid, max: Lid) {
        self.entries.insert(guid, (min, max));
    }

    /// Forgets `guid`.
    pub fn remove(&mut self, guid: Guid) -> Option<(Lid, Lid)> {
        self.entries.remove(&guid)
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Entries in GUID order.
    pub fn iter(&self) -> impl Iterator<Item = (Guid, Lid, Lid)> + '_ {
        self.entries.iter().map(|(&g, &(lo, hi))| (g, lo, hi))
    }

    /// Takes `theirs` (a master's table, from the state sync) over this one: their entries
    /// win; ours stay where they overlap none of theirs. Of theirs, an entry that overlaps an
    /// earlier one (or has min > max) is left out, so the result never gives one LID twice.
    pub fn adopt(&mut self, theirs: &[(Guid, Lid, Lid)]) {
        // Ranges taken so far, by first LID.
        let mut taken: BTreeMap<u16, u16> = BTreeMap::new();
        let free = |taken: &BTreeMap<u16, u16>, lo: u16, hi: u16| {
            lo <= hi && taken.range(..=hi).next_back().is_none_or(|(_, &end)| end < lo)
        };
        let mut next = BTreeMap::new();
        for &(g, lo, hi) in theirs {
            if !next.contains_key(&g) && free(&taken, lo.0, hi.0) {
                taken.insert(lo.0, hi.0);
                next.insert(g, (lo, hi));
            }
        }
        for (&g, &(lo, hi)) in &self.entries {
            if !next.contains_key(&g) && free(&taken, lo.0, hi.0) {
                taken.insert(lo.0, hi.0);
                next.insert(g, (lo, hi));
            }
        }
        self.entries = next;
    }
}

impl fmt::Display for Guid2Lid {
    /// OpenSM's file format, entries in GUID order: `0x<guid:016x> 0x<min:04x> 0x<max:04x>` with
    /// a blank line between records, as OpenSM writes it; readable by [`Guid2Lid::parse`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (g, lo, hi)) in self.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            writeln!(f, "0x{:016x} 0x{:04x} 0x{:04x}", g.0, lo.0, hi.0)?;
        }
        Ok(())
    }
}

fn bad(field: &'static str, text: &str, bits: u8) -> Guid2LidErrorKind {
    Guid2LidErrorKind::BadNumber { field, text: text.to_owned(), bits }
}

fn hex(s: &str) -> Option<u64> {
    let h = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")).unwrap_or(s);
    if h.is_empty() || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(h, 16).ok()
}

/// One end port asking for a LID: its GUID and the base LID it currently holds (0 if none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LidRequest {
    /// Port GUID.
    pub guid: Guid,
    /// PortInfo.LID as read from the port.
    pub current: Lid,
}

/// A set of used LIDs over the whole 16-bit space.
struct Used(Vec<u64>);

impl Used {
    fn new() -> Used {
        Used(vec![0; 1024])
    }
    fn is_used(&self, l: u16) -> bool {
        self.0[usize::from(l >> 6)] & (1 << (l & 63)) != 0
    }
    fn mark(&mut self, l: u16) {
        self.0[usize::from(l >> 6)] |= 1 << (l & 63);
    }
    fn range_free(&self, base: u16, span: u16) -> bool {
        (base..base + span).all(|l| !self.is_used(l))
    }
    fn mark_range(&mut self, base: u16, span: u16) {
        for l in base..base + span {
            self.mark(l);
        }
    }
}

/// `base` can start a range of `span` unicast LIDs.
fn valid_base(base: u16, span: u16) -> bool {
    base != 0 && base.is_multiple_of(span) && u32::from(base) + u32::from(span) - 1 <= u32::from(Lid::MAX_UNICAST.0)
}

/// Gives each requested port a base LID, aligned to `2^lmc`, unique across the result and not
/// overlapping any range `table` keeps for GUIDs absent from `ports`. Updates `table` with every
/// assignment. The result is in `ports` order; [`Lid::UNASSIGNED`] marks a port left without a
/// LID because the unicast space is full. When two ports hold the same LID, the first in `ports`
/// keeps it.
pub fn assign(ports: &[LidRequest], lmc: u8, table: &mut Guid2Lid) -> Vec<Lid> {
    let span = 1u16 << lmc.min(7);
    let mut used = Used::new();
    let mut out = vec![Lid::UNASSIGNED; ports.len()];
    // 1. The table's entry for present ports.
    for (i, p) in ports.iter().enumerate() {
        if let Some((lo, _)) = table.get(p.guid)
            && valid_base(lo.0, span)
            && used.range_free(lo.0, span)
        {
            used.mark_range(lo.0, span);
            out[i] = lo;
        }
    }
    // 2. Ranges the table keeps for ports not present now stay reserved.
    let present: std::collections::HashSet<Guid> = ports.iter().map(|p| p.guid).collect();
    for (g, lo, hi) in table.iter() {
        if !present.contains(&g) && lo.is_unicast() && hi.is_unicast() && lo <= hi {
            used.mark_range(lo.0, hi.0 - lo.0 + 1);
        }
    }
    // 3. The LID the port holds, when valid, aligned and free.
    for (i, p) in ports.iter().enumerate() {
        if out[i] == Lid::UNASSIGNED && valid_base(p.current.0, span) && used.range_free(p.current.0, span) {
            used.mark_range(p.current.0, span);
            out[i] = p.current;
        }
    }
    // 4. The lowest free range for the rest.
    let mut cursor = span;
    for slot in &mut out {
        if *slot != Lid::UNASSIGNED {
            continue;
        }
        while valid_base(cursor, span) && !used.range_free(cursor, span) {
            cursor += span;
        }
        if !valid_base(cursor, span) {
            break;
        }
        used.mark_range(cursor, span);
        *slot = Lid(cursor);
    }
    for (p, &lid) in ports.iter().zip(&out) {
        if lid != Lid::UNASSIGNED {
            table.insert(p.guid, lid, Lid(lid.0 + span - 1));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(guid: u64, current: u16) -> LidRequest {
        LidRequest { guid: Guid(guid), current: Lid(current) }
    }

    fn check_unique_aligned(lids: &[Lid], lmc: u8) {
        let span = 1u16 << lmc;
        let mut seen = std::collections::HashSet::new();
        for l in lids {
            assert!(l.is_unicast(), "{l} not unicast");
            assert_eq!(l.0 % span, 0, "{l} not aligned to {span}");
            for k in 0..span {
                assert!(seen.insert(l.0 + k), "LID {} given twice", l.0 + k);
            }
        }
    }

    #[test]
    fn fresh_ports_get_lowest_aligned_ranges() {
        let mut t = Guid2Lid::new();
        let lids = assign(&[req(1, 0), req(2, 0), req(3, 0)], 2, &mut t);
        assert_eq!(lids, vec![Lid(4), Lid(8), Lid(12)]);
        check_unique_aligned(&lids, 2);
        assert_eq!(t.get(Guid(2)), Some((Lid(8), Lid(11))));
        let lids0 = assign(&[req(1, 0), req(2, 0)], 0, &mut Guid2Lid::new());
        assert_eq!(lids0, vec![Lid(1), Lid(2)]);
    }

    #[test]
    fn existing_valid_lids_are_kept() {
        let lids = assign(&[req(1, 0), req(2, 7), req(3, 1)], 0, &mut Guid2Lid::new());
        assert_eq!(lids, vec![Lid(2), Lid(7), Lid(1)]);
    }

    #[test]
    fn misaligned_out_of_range_and_duplicate_lids_are_corrected() {
        // LMC 1: 5 is misaligned, 0xc000 is multicast, 0xbfff would overflow the range,
        // and two ports both claim 8.
        let ports = [req(1, 5), req(2, 0xc000), req(3, 0xbfff), req(4, 8), req(5, 8)];
        let lids = assign(&ports, 1, &mut Guid2Lid::new());
        check_unique_aligned(&lids, 1);
        assert_eq!(lids[3], Lid(8), "first claimant keeps its LID");
        assert_ne!(lids[4], Lid(8));
        assert_ne!(lids[0], Lid(5));
    }

    #[test]
    fn table_wins_and_absent_entries_stay_reserved() {
        let mut t = Guid2Lid::parse("0x1 0x10 0x10\n0x99 0x2 0x2\n").unwrap();
        // Port 2 currently holds LID 2, reserved for absent GUID 0x99: it must move.
        let lids = assign(&[req(1, 3), req(2, 2), req(3, 0x10)], 0, &mut t);
        assert_eq!(lids[0], Lid(0x10), "table entry beats the port's current LID");
        assert_ne!(lids[1], Lid(2));
        assert_ne!(lids[2], Lid(0x10));
        check_unique_aligned(&lids, 0);
        assert_eq!(t.get(Guid(0x99)), Some((Lid(2), Lid(2))), "absent entries are kept");
    }

    #[test]
    fn exhausted_space_leaves_ports_unassigned() {
        let mut t = Guid2Lid::new();
        // LMC 7: 0xbfff / 128 = 383 ranges (base 128 .. 0xbf80).
        let ports: Vec<LidRequest> = (0..400).map(|g| req(g + 1, 0)).collect();
        let lids = assign(&ports, 7, &mut t);
        let given: Vec<Lid> = lids.iter().copied().filter(|l| *l != Lid::UNASSIGNED).collect();
        assert_eq!(given.len(), 383);
        check_unique_aligned(&given, 7);
    }

    #[test]
    fn guid2lid_round_trip() {
        let text = "# comment\n\n0x0002c90300001234 0x1 0x1\n0x0002c90300005678 0x4 0x7\n";
        let t = Guid2Lid::parse(text).unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t.get(Guid(0x0002_c903_0000_5678)), Some((Lid(4), Lid(7))));
        let out = t.to_string();
        assert_eq!(out, "0x0002c90300001234 0x0001 0x0001\n\n0x0002c90300005678 0x0004 0x0007\n");
        assert_eq!(Guid2Lid::parse(&out).unwrap(), t);
    }

    #[test]
    fn guid2lid_rejects_malformed_lines_with_line_numbers() {
        type Case = (&'static str, usize, fn(&Guid2LidErrorKind) -> bool);
        let cases: &[Case] = &[
            ("0x1 0x1\n", 1, |k| matches!(k, Guid2LidErrorKind::FieldCount(2))),
            ("0x1 0x1 0x1\n0x2 0x2 0x2 0x2\n", 2, |k| matches!(k, Guid2LidErrorKind::FieldCount(4))),
            ("0xzz 0x1 0x1\n", 1, |k| matches!(k, Guid2LidErrorKind::BadNumber { field: "port GUID", .. })),
            ("0x1 0x10000 0x10000\n", 1, |k| matches!(k, Guid2LidErrorKind::BadNumber { field: "min LID", .. })),
            ("0x1 0x1 -1\n", 1, |k| matches!(k, Guid2LidErrorKind::BadNumber { field: "max LID", .. })),
            ("\n0x1 0x0 0x0\n", 2, |k| matches!(k, Guid2LidErrorKind::OutOfRange { .. })),
            ("0x1 0xc000 0xc000\n", 1, |k| matches!(k, Guid2LidErrorKind::OutOfRange { .. })),
            ("0x1 0x5 0x4\n", 1, |k| matches!(k, Guid2LidErrorKind::OutOfRange { .. })),
            ("0x1 0x4 0x6\n", 1, |k| matches!(k, Guid2LidErrorKind::BadRange { .. })),
            ("0x1 0x2 0x5\n", 1, |k| matches!(k, Guid2LidErrorKind::BadRange { .. })),
            ("0x1 0x1 0x1\n0x1 0x2 0x2\n", 2, |k| matches!(k, Guid2LidErrorKind::DuplicateGuid { first: 1, .. })),
            ("0x 0x1 0x1\n", 1, |k| matches!(k, Guid2LidErrorKind::BadNumber { .. })),
            ("0x1 0x4 0x4\n0x2 0x4 0x4\n", 2, |k| matches!(k, Guid2LidErrorKind::Overlap { first: 1, .. })),
            ("0x1 0x8 0xf\n0x2 0x1 0x1\n0x3 0xc 0xc\n", 3, |k| {
                matches!(k, Guid2LidErrorKind::Overlap { first: 1, .. })
            }),
            ("0x1 0x9 0x9\n0x2 0x8 0xb\n", 2, |k| matches!(k, Guid2LidErrorKind::Overlap { first: 1, .. })),
        ];
        for (text, line, pred) in cases {
            let e = Guid2Lid::parse(text).expect_err(text);
            assert_eq!(e.line, *line, "{text:?}: {e}");
            assert!(pred(&e.kind), "{text:?}: {e}");
            assert!(e.to_string().starts_with(&format!("guid2lid line {line}: ")));
        }
    }

    #[test]
    fn an_adopted_table_wins_and_never_gives_a_lid_twice() {
        let mut ours = Guid2Lid::new();
        ours.insert(Guid(1), Lid(1), Lid(1));
        ours.insert(Guid(2), Lid(2), Lid(2));
        ours.insert(Guid(3), Lid(9), Lid(9));
        // Theirs moves GUID 1, gives LID 2 to GUID 4, and has a range overlapping its own.
        let theirs = [(Guid(1), Lid(5), Lid(5)), (Guid(4), Lid(2), Lid(3)), (Guid(5), Lid(3), Lid(3))];
        ours.adopt(&theirs);
        let got: Vec<_> = ours.iter().collect();
        assert_eq!(got, vec![(Guid(1), Lid(5), Lid(5)), (Guid(3), Lid(9), Lid(9)), (Guid(4), Lid(2), Lid(3))]);
    }

    #[test]
    fn guid2lid_never_panics_on_junk() {
        for text in ["\u{0}", "0x1 0x1 0x1 \u{ff}", "0xffffffffffffffffff 1 1", "\t\t\n   ", "# only"] {
            let _ = Guid2Lid::parse(text);
        }
    }
}
