//! Nue's destination subsets: one per layer.
//!
//! The switches are taken in view order (the SM's node order) and cut into as many runs as
//! there are layers, of about equal LIDs; a switch's LIDs all go to the run holding their
//! middle. The split depends on the switches and their LIDs only, not on the cabling, so a
//! cable that fails or returns moves no destination to another layer, and no pair's SL
//! changes with it (Nue's known weakness is that a fault makes applications query their
//! paths again). Generated and discovered fabrics list neighbouring switches near each other
//! (row by row in a torus, group by group in a dragonfly, breadth-first from the SM when
//! discovered), so a run is a region of the fabric more often than not. Owns only the split;
//! deterministic, never panics.

/// The layer of each switch's destinations, `0..layers`, from the LIDs each switch holds.
pub(super) fn split(lids_at: &[u64], layers: u8) -> Vec<u8> {
    let total: u64 = lids_at.iter().sum();
    let k = u64::from(layers.max(1));
    let mut before = 0u64;
    lids_at
        .iter()
        .map(|&w| {
            // The run holding the middle of this switch's LIDs.
            let mid = before.saturating_mul(2).saturating_add(w);
            before = before.saturating_add(w);
            let l = if total == 0 { 0 } else { (mid.saturating_mul(k) / total.saturating_mul(2)).min(k - 1) };
            u8::try_from(l).unwrap_or(0)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn runs_of_about_equal_lids_in_view_order() {
        assert_eq!(split(&[1; 8], 4), vec![0, 0, 1, 1, 2, 2, 3, 3]);
        // A switch without LIDs takes the run it falls in; the others balance by LIDs.
        assert_eq!(split(&[4, 0, 1, 1, 1, 1], 2), vec![0, 1, 1, 1, 1, 1]);
        assert_eq!(split(&[3, 3, 3], 8), vec![1, 4, 6]);
        assert_eq!(split(&[], 8), Vec::<u8>::new());
        assert_eq!(split(&[0, 0], 3), vec![0, 0]);
        assert!(split(&[1; 100], 15).iter().all(|&l| l < 15));
    }
}
