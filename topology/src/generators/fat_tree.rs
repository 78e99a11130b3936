//! Fat-tree builders: 2-level folded Clos, 3-level k-ary fat tree, rail-optimized 2-level tree.
//! Shapes, names and port layouts are documented in the parent module.

use super::{Builder, GenError, Topology, check_size, invalid};

/// Check the radix and oversubscription; returns (uplinks, hosts) per leaf/edge switch.
fn split_radix(radix: u8, ratio: u8, min_radix: u8) -> Result<(u8, u8), GenError> {
    if radix < min_radix || !radix.is_multiple_of(2) {
        return Err(invalid("radix", format!("must be even and at least {min_radix}, found {radix}")));
    }
    if ratio == 0 {
        return Err(invalid("oversubscription", "must be at least 1 (1 = full bisection)"));
    }
    let group = u16::from(ratio) + 1;
    if u16::from(radix) % group != 0 {
        return Err(invalid(
            "oversubscription",
            format!("{ratio}:1 needs a radix that is a multiple of {group}, found {radix}"),
        ));
    }
    let up = (u16::from(radix) / group) as u8;
    Ok((up, radix - up))
}

/// 2-level folded Clos: `k` leaves, `k/(r+1)` spines.
pub(super) fn two_level(k: u8, ratio: u8) -> Result<Topology, GenError> {
    let (up, hosts) = split_radix(k, ratio, 2)?;
    let leaves = usize::from(k);
    let total = check_size(u64::from(k) * (u64::from(hosts) + 1) + u64::from(up))?;
    let mut b = Builder::with_capacity(total);
    let spines: Vec<usize> = (0..up).map(|j| b.switch(format!("spine-{j}"), k)).collect();
    let leaf_ids: Vec<usize> = (0..leaves).map(|i| b.switch(format!("leaf-{i}"), k)).collect();
    for (i, &leaf) in leaf_ids.iter().enumerate() {
        for (j, &spine) in spines.iter().enumerate() {
            b.link(leaf, hosts + 1 + j as u8, spine, i as u8 + 1);
        }
    }
    let mut h = 0usize;
    for &leaf in &leaf_ids {
        for p in 1..=hosts {
            let ca = b.ca(format!("h{h}"), 1, None);
            b.link(leaf, p, ca, 1);
            h += 1;
        }
    }
    Ok(b.finish())
}

/// 3-level k-ary fat tree with `k` pods.
pub(super) fn three_level(k: u8, ratio: u8) -> Result<Topology, GenError> {
    let (up, hosts) = split_radix(k, ratio, 4)?;
    let half = k / 2;
    let (k64, half64, up64) = (u64::from(k), u64::from(half), u64::from(up));
    let edges = k64 * half64;
    let aggs = k64 * up64;
    let cores = up64 * half64;
    let total = check_size(edges * (1 + u64::from(hosts)) + aggs + cores)?;
    let mut b = Builder::with_capacity(total);
    let core: Vec<usize> = (0..cores).map(|c| b.switch(format!("core-{c}"), k)).collect();
    // agg[pod * up + a], edge[pod * half + e]
    let agg: Vec<usize> = (0..aggs).map(|a| b.switch(format!("agg-{a}"), k)).collect();
    let edge: Vec<usize> = (0..edges).map(|e| b.switch(format!("edge-{e}"), k)).collect();
    let (half_us, up_us) = (usize::from(half), usize::from(up));
    for pod in 0..usize::from(k) {
        for a in 0..up_us {
            let ag = agg[pod * up_us + a];
            for e in 0..half_us {
                b.link(edge[pod * half_us + e], hosts + 1 + a as u8, ag, e as u8 + 1);
            }
            for j in 0..half_us {
                b.link(ag, half + 1 + j as u8, core[a * half_us + j], pod as u8 + 1);
            }
        }
    }
    let mut h = 0usize;
    for &e in &edge {
        for p in 1..=hosts {
            let ca = b.ca(format!("h{h}"), 1, None);
            b.link(e, p, ca, 1);
            h += 1;
        }
    }
    Ok(b.finish())
}

/// Rail-optimized 2-level tree: `groups` host groups of `k/2` hosts with `rails` HCAs each.
pub(super) fn rail(k: u8, rails: u8, groups: u8) -> Result<Topology, GenError> {
    let (up, per_leaf) = split_radix(k, 1, 2)?;
    if rails == 0 {
        return Err(invalid("rails", "must be at least 1"));
    }
    if rails > k {
        return Err(invalid("rails", format!("at most the radix ({k}) rails fit, found {rails}")));
    }
    let groups = if groups == 0 { k / rails } else { groups };
    if u16::from(groups) * u16::from(rails) > u16::from(k) {
        return Err(invalid(
            "groups",
            format!("groups x rails must be at most the radix {k}, found {groups} x {rails}"),
        ));
    }
    let leaves = u64::from(groups) * u64::from(rails);
    let hosts = u64::from(groups) * u64::from(per_leaf);
    let total = check_size(u64::from(up) + leaves + hosts * u64::from(rails))?;
    let mut b = Builder::with_capacity(total);
    let spines: Vec<usize> = (0..up).map(|j| b.switch(format!("spine-{j}"), k)).collect();
    // leaf[g * rails + r]
    let mut leaf = Vec::with_capacity(usize::try_from(leaves).unwrap_or(0));
    for g in 0..groups {
        for r in 0..rails {
            leaf.push(b.switch(format!("leaf-r{r}-{g}"), k));
        }
    }
    for (i, &l) in leaf.iter().enumerate() {
        for (j, &s) in spines.iter().enumerate() {
            b.link(l, per_leaf + 1 + j as u8, s, i as u8 + 1);
        }
    }
    for g in 0..usize::from(groups) {
        for slot in 0..per_leaf {
            let host = g * usize::from(per_leaf) + usize::from(slot);
            let mut sys = None;
            for r in 0..usize::from(rails) {
                let ca = b.ca(format!("h{host}-r{r}"), 1, sys);
                if sys.is_none() {
                    sys = Some(b.nodes[ca].node_guid);
                }
                b.link(leaf[g * usize::from(rails) + r], slot + 1, ca, 1);
            }
        }
    }
    Ok(b.finish())
}
