//! Random irregular switch graph: a random spanning tree (connected by construction), then
//! random extra cables between distinct switches until the asked number is reached. Hosts sit
//! on the lowest switch ports; cables take the next free port in creation order.

use crate::rng::Rng;

use super::{Builder, GenError, RandomGraph, Topology, check_size, invalid};

pub(super) fn random(spec: &RandomGraph) -> Result<Topology, GenError> {
    let n = spec.switches;
    let k = usize::from(spec.radix);
    let h = usize::from(spec.hosts_per_switch);
    if n == 0 {
        return Err(invalid("switches", "must be at least 1"));
    }
    if k == 0 || h > k {
        return Err(invalid("radix", format!("must be at least 1 and hold the {h} hosts, found {k}")));
    }
    let free = k - h;
    if n > 2 && free < 2 {
        return Err(invalid("radix", format!("{n} switches need at least 2 switch ports each beyond the hosts")));
    }
    if n == 2 && free < 1 {
        return Err(invalid("radix", "2 switches need a free port each beyond the hosts"));
    }
    if spec.links + 1 < n {
        return Err(invalid("links", format!("{n} switches need at least {} cables to be connected", n - 1)));
    }
    if spec.links > n * free / 2 {
        return Err(invalid(
            "links",
            format!("at most {} cables fit on {n} switches with {free} free ports, asked {}", n * free / 2, spec.links),
        ));
    }
    check_size(n as u64 * (1 + h as u64))?;
    let mut rng = Rng::new(spec.seed);
    let mut b = Builder::with_capacity(n * (1 + h));
    for i in 0..n {
        b.switch(format!("sw-{i}"), spec.radix);
    }
    let mut next_port = vec![h as u8 + 1; n];
    let mut used = vec![0usize; n];
    let mut cable = |b: &mut Builder, used: &mut [usize], x: usize, y: usize| {
        b.link(x, next_port[x], y, next_port[y]);
        next_port[x] += 1;
        next_port[y] += 1;
        used[x] += 1;
        used[y] += 1;
    };
    // Spanning tree over a random order: each switch joins a random earlier one that still
    // has a free port. With at least 2 free ports per switch one always exists.
    let mut order: Vec<usize> = (0..n).collect();
    rng.shuffle(&mut order);
    let mut open: Vec<usize> = Vec::with_capacity(n);
    for (i, &s) in order.iter().enumerate() {
        if i > 0 {
            let at = rng.index(open.len());
            let t = open[at];
            cable(&mut b, &mut used, s, t);
            if used[t] == free {
                open.swap_remove(at);
            }
        }
        if used[s] < free {
            open.push(s);
        }
    }
    // Extra cables between free ports of distinct switches.
    let mut stubs: Vec<usize> =
        (0..n).flat_map(|s| std::iter::repeat_n(s, free - used[s])).collect();
    let mut added = n - 1;
    while added < spec.links {
        if stubs.len() < 2 {
            break;
        }
        let a = stubs.swap_remove(rng.index(stubs.len()));
        let mut pick = None;
        for _ in 0..32 {
            let j = rng.index(stubs.len());
            if stubs[j] != a {
                pick = Some(j);
                break;
            }
        }
        if pick.is_none() {
            pick = stubs.iter().position(|&s| s != a);
        }
        let Some(j) = pick else {
            break; // only one switch has free ports left
        };
        let c = stubs.swap_remove(j);
        cable(&mut b, &mut used, a, c);
        added += 1;
    }
    if added < spec.links {
        return Err(invalid(
            "links",
            format!("only {added} cables could be placed without cabling a switch to itself"),
        ));
    }
    let mut host = 0usize;
    for s in 0..n {
        for p in 1..=spec.hosts_per_switch {
            let ca = b.ca(format!("h{host}"), 1, None);
            b.link(s, p, ca, 1);
            host += 1;
        }
    }
    Ok(b.finish())
}
