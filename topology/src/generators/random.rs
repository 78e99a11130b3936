//! Random irregular switch graph: a random spanning tree (connected by construction), then
//! random extra cables between distinct switches until the asked number is reached. Hosts sit
//! on the lowest switch ports; cables take the next free port in creation order.

use crate::rng::Rng;

use super::{Builder, GenError, RandomGraph, Topology, check_size, invalid};

pub(super) fn random(spec: &RandomGraph) -> Result<Topology, GenError> {
    let n = spec.switches;
    let radix = usize::from(spec.radix);
    let hosts = usize::from(spec.hosts_per_switch);
    if n == 0 {
        return Err(invalid("switches", "must be at least 1"));
    }
    if radix == 0 || hosts > radix {
        return Err(invalid("radix", format!("must be at least 1 and hold the {hosts} hosts, found {radix}")));
    }
    let free = radix - hosts;
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
    check_size(n as u64 * (1 + hosts as u64))?;
    let mut rng = Rng::new(spec.seed);
    let mut b = Builder::with_capacity(n * (1 + hosts));
    for i in 0..n {
        b.switch(format!("sw-{i}"), spec.radix);
    }
    let mut next_port = vec![spec.hosts_per_switch.saturating_add(1); n];
    let mut used = vec![0usize; n];
    let mut cable = |builder: &mut Builder, used: &mut [usize], x: usize, y: usize| {
        builder.link(x, next_port[x], y, next_port[y]);
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
    for (rank, &joining) in order.iter().enumerate() {
        if rank > 0 {
            let at = rng.index(open.len());
            let Some(&target) = open.get(at) else {
                return Err(invalid("radix", "no free switch port left for the spanning tree"));
            };
            cable(&mut b, &mut used, joining, target);
            if used[target] == free {
                open.swap_remove(at);
            }
        }
        if used[joining] < free {
            open.push(joining);
        }
    }
    let mut rem: Vec<usize> = (0..n).map(|s| free - used[s]).collect();
    for (first, second) in extra_cables(&mut rem, spec.links + 1 - n, &mut rng)? {
        cable(&mut b, &mut used, first, second);
    }
    let mut host = 0usize;
    for sw in 0..n {
        for port in 1..=spec.hosts_per_switch {
            let ca = b.ca(format!("h{host}"), 1, None);
            b.link(sw, port, ca, 1);
            host += 1;
        }
    }
    Ok(b.finish())
}

/// Choose `need` extra cables between the free ports `rem[s]` of distinct switches.
fn extra_cables(rem: &mut [usize], mut need: usize, rng: &mut Rng) -> Result<Vec<(usize, usize)>, GenError> {
    // Extra cables between free ports of distinct switches. With T free ports left, m of them
    // on the fullest switch, `need` more cables fit without self-loops iff need <= T/2 and
    // need <= T - m; when the second bound is tight, the fullest switch must take the next
    // cable, otherwise a random pair keeps both bounds.
    let mut stubs: Vec<usize> = rem.iter().enumerate().flat_map(|(s, &r)| std::iter::repeat_n(s, r)).collect();
    let asked = need;
    let mut out = Vec::with_capacity(need);
    while need > 0 {
        let total = stubs.len();
        let (fullest, most) =
            rem.iter().copied().enumerate().max_by_key(|&(i, r)| (r, usize::MAX - i)).unwrap_or((0, 0));
        if need > total / 2 || need > total - most {
            return Err(invalid(
                "links",
                format!("only {} more cables fit without cabling a switch to itself", asked - need),
            ));
        }
        let first = if need == total - most { fullest } else { stubs[rng.index(total)] };
        let Some(ia) = stubs.iter().position(|&x| x == first) else { break };
        stubs.swap_remove(ia);
        // A random stub of another switch: a few random draws, then a scan from a random start.
        let mut pick = (0..16).map(|_| rng.index(stubs.len())).find(|&j| stubs[j] != first);
        if pick.is_none() {
            let start = rng.index(stubs.len());
            pick = (0..stubs.len()).map(|d| (start + d) % stubs.len()).find(|&j| stubs[j] != first);
        }
        let Some(j) = pick else { break };
        let second = stubs.swap_remove(j);
        rem[first] -= 1;
        rem[second] -= 1;
        out.push((first, second));
        need -= 1;
    }
    if need > 0 {
        return Err(invalid("links", "could not place every cable without cabling a switch to itself"));
    }
    Ok(out)
}
