//! Dragonfly builder: `groups` groups of `a` switches, every two switches of a group cabled
//! once, every two groups cabled once (a global cable), `h` hosts per switch. Switch `i` of a
//! group has ports `1..a` to the other switches of its group (in group order, itself left
//! out), then its global ports, then its hosts. Group `g`'s cable to group `o` is the `j`-th of
//! its `groups - 1` global cables (`j = o` below `g`, `o - 1` above), on switch `j % a` and its
//! `(j / a)`-th global port, so the global cables are spread evenly over each group's switches.

use super::{Builder, Dragonfly, GenError, Topology, check_size, invalid};

pub(super) fn dragonfly(spec: &Dragonfly) -> Result<Topology, GenError> {
    let (groups, size, hosts) = (spec.groups, spec.group_size, spec.hosts_per_switch);
    if groups < 2 {
        return Err(invalid("groups", format!("must be at least 2, found {groups}")));
    }
    if size == 0 {
        return Err(invalid("group-size", "must be at least 1"));
    }
    let globals = (groups - 1).div_ceil(size);
    let ports = (size - 1) + globals + usize::from(hosts);
    let ports = u8::try_from(ports)
        .map_err(|_| invalid("groups", format!("switches would need {ports} ports (at most 255)")))?;
    let switches = groups.checked_mul(size).ok_or(GenError::TooLarge { nodes: u64::MAX, max: super::MAX_NODES })?;
    let nodes = check_size((switches as u64).saturating_mul(1 + u64::from(hosts)))?;
    let mut b = Builder::with_capacity(nodes);
    for g in 0..groups {
        for i in 0..size {
            b.switch(format!("sw-{g}-{i}"), ports);
        }
    }
    // Ports of switch `i` (0-based) of a group toward switch `k` of the same group.
    let local = |i: usize, k: usize| u8::try_from(if k < i { k + 1 } else { k }).unwrap_or(u8::MAX);
    for g in 0..groups {
        for i in 0..size {
            for k in i + 1..size {
                b.link(g * size + i, local(i, k), g * size + k, local(k, i));
            }
        }
    }
    // The switch and port of group `g`'s global cable number `j`.
    let global = |g: usize, j: usize| (g * size + j % size, u8::try_from(size + j / size).unwrap_or(u8::MAX));
    for g in 0..groups {
        for o in g + 1..groups {
            let (x, px) = global(g, o - 1);
            let (y, py) = global(o, g);
            b.link(x, px, y, py);
        }
    }
    let first_host = size + globals;
    let mut c = 0usize;
    for s in 0..switches {
        for p in 0..usize::from(hosts) {
            let ca = b.ca(format!("h{c}"), 1, None);
            b.link(s, u8::try_from(first_host + p).unwrap_or(u8::MAX), ca, 1);
            c += 1;
        }
    }
    Ok(b.finish())
}
