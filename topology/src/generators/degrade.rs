//! Seeded removal of cables and switches from a topology (degraded fabrics). Remaining nodes
//! keep their names and GUIDs; node indices are renumbered densely in the original order.

use crate::rng::Rng;

use super::{Degrade, GenError, Topology, invalid};
use crate::NodeKind;

/// Apply a [`Degrade`]: switches first, then links, both from one generator seeded once.
pub(super) fn apply(mut t: Topology, d: Degrade) -> Result<Topology, GenError> {
    if d.switches == 0 && d.links == 0 {
        return Ok(t);
    }
    let mut rng = Rng::new(d.seed);
    t = remove_switches_with(t, d.switches, &mut rng)?;
    remove_links_with(&mut t, d.links, &mut rng)?;
    Ok(t)
}

/// Remove `count` switch-to-switch cables chosen by `seed`.
pub fn remove_random_links(t: &mut Topology, count: usize, seed: u64) -> Result<(), GenError> {
    remove_links_with(t, count, &mut Rng::new(seed))
}

/// Remove `count` switches that have no CA attached (with their cables), chosen by `seed`.
pub fn remove_random_switches(t: Topology, count: usize, seed: u64) -> Result<Topology, GenError> {
    remove_switches_with(t, count, &mut Rng::new(seed))
}

fn remove_links_with(t: &mut Topology, count: usize, rng: &mut Rng) -> Result<(), GenError> {
    if count == 0 {
        return Ok(());
    }
    let is_switch = |t: &Topology, i: usize| t.nodes.get(i).is_some_and(|n| n.kind == NodeKind::Switch);
    // Each cable once, from its lower (node, port) end.
    let mut cables: Vec<(usize, u8)> = Vec::new();
    for (i, n) in t.nodes.iter().enumerate() {
        if n.kind != NodeKind::Switch {
            continue;
        }
        for (p, peer) in n.links.iter().enumerate() {
            if let Some(peer) = peer {
                let here = (i, p as u8);
                if is_switch(t, peer.node) && here < (peer.node, peer.port) {
                    cables.push(here);
                }
            }
        }
    }
    if count > cables.len() {
        return Err(invalid(
            "remove-links",
            format!("asked to remove {count} cables but only {} switch-to-switch cables exist", cables.len()),
        ));
    }
    rng.shuffle(&mut cables);
    for &(i, p) in &cables[..count] {
        let peer = t.nodes[i].links[usize::from(p)].take();
        if let Some(slot) = peer.and_then(|peer| t.nodes.get_mut(peer.node)?.links.get_mut(usize::from(peer.port))) {
            *slot = None;
        }
    }
    Ok(())
}

fn remove_switches_with(t: Topology, count: usize, rng: &mut Rng) -> Result<Topology, GenError> {
    if count == 0 {
        return Ok(t);
    }
    let mut candidates: Vec<usize> = t
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| {
            n.kind == NodeKind::Switch
                && n.links.iter().flatten().all(|p| t.nodes.get(p.node).is_some_and(|r| r.kind == NodeKind::Switch))
        })
        .map(|(i, _)| i)
        .collect();
    if count > candidates.len() {
        return Err(invalid(
            "remove-switches",
            format!("asked to remove {count} switches but only {} have no CA attached", candidates.len()),
        ));
    }
    rng.shuffle(&mut candidates);
    let mut gone = vec![false; t.nodes.len()];
    for &i in &candidates[..count] {
        gone[i] = true;
    }
    // Old index -> new index.
    let mut map = vec![usize::MAX; t.nodes.len()];
    let mut next = 0;
    for (i, g) in gone.iter().enumerate() {
        if !g {
            map[i] = next;
            next += 1;
        }
    }
    let nodes = t
        .nodes
        .into_iter()
        .zip(gone)
        .filter(|(_, g)| !g)
        .map(|(mut n, _)| {
            for slot in &mut n.links {
                *slot = slot.and_then(|mut p| {
                    let m = map[p.node];
                    (m != usize::MAX).then(|| {
                        p.node = m;
                        p
                    })
                });
            }
            n
        })
        .collect();
    Ok(Topology { nodes })
}
