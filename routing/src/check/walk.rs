//! Walking the tables: reachability, hop counts and the edge forwarding index (one pass per
//! destination LID, memoised per switch), and the shift permutations (one walk per flow).

use std::collections::VecDeque;

use ibsm_mad::{Lid, PortNum};

use super::report::{Channel, ChannelLoad, Failure, FailureKind, HopStats, LinkLoad, ShiftStats};
use super::{CheckOptions, CheckReport, CreditLoops, Fabric, Next};
use crate::graph::{FAR, Owner};

/// What is known about the route from one switch to the current destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum St {
    Unknown,
    Visiting,
    /// Delivered after this many more links.
    Done(u32),
    /// Fails at this switch in this way.
    Fail(FailureKind, usize),
}

/// One step from switch `s` towards `lid`.
enum Step {
    Deliver(u32),
    Fail(FailureKind),
    Next(usize),
}

fn step(f: &Fabric<'_>, s: usize, lid: u16) -> Step {
    let Some(p) = f.port(s, lid) else { return Step::Fail(FailureKind::Unrouted) };
    let owner = f.owner(lid);
    if p.0 == 0 {
        return if owner == Owner::Switch(s) { Step::Deliver(0) } else { Step::Fail(FailureKind::Misdelivered(p)) };
    }
    match f.next(s, p) {
        Next::Dead => Step::Fail(FailureKind::DeadPort(p)),
        Next::Switch(n) => Step::Next(n),
        Next::Port(c, num) => {
            if owner == Owner::Port(c, num) {
                Step::Deliver(1)
            } else {
                Step::Fail(FailureKind::Misdelivered(p))
            }
        }
    }
}

/// Fills `st` (one entry per switch) for destination `lid`.
fn resolve_all(f: &Fabric<'_>, lid: u16, st: &mut [St], stack: &mut Vec<usize>) {
    st.fill(St::Unknown);
    for start in 0..st.len() {
        if st[start] != St::Unknown {
            continue;
        }
        stack.clear();
        let mut cur = start;
        // The state of the node after the top of the stack, or of the top itself on delivery.
        let end = loop {
            match st[cur] {
                St::Unknown => {}
                St::Visiting => break St::Fail(FailureKind::Loop, cur),
                known => break known,
            }
            st[cur] = St::Visiting;
            stack.push(cur);
            match step(f, cur, lid) {
                Step::Deliver(h) => {
                    stack.pop();
                    st[cur] = St::Done(h);
                    break St::Done(h);
                }
                Step::Fail(kind) => break St::Fail(kind, cur),
                Step::Next(n) => cur = n,
            }
        };
        let mut val = end;
        for &x in stack.iter().rev() {
            val = match val {
                St::Done(h) => St::Done(h + 1),
                other => other,
            };
            st[x] = val;
        }
    }
}

/// Accumulators of [`walk_all`].
struct Walker<'f, 'a> {
    f: &'f Fabric<'a>,
    max_examples: usize,
    r: CheckReport,
    hosts_at: Vec<u64>,
    first_host: Vec<usize>,
    st: Vec<St>,
    stack: Vec<usize>,
    dist: Vec<u32>,
    queue: VecDeque<usize>,
    bfs_for: usize,
    cnt: Vec<u64>,
    efi: Vec<u64>,
    by_hops: Vec<Vec<usize>>,
    switch_failures: Vec<Failure>,
    sum_hops: u64,
    sum_short: u64,
}

/// Reachability, hops, forwarding index and failures for every destination LID.
pub(super) fn walk_all(f: &Fabric<'_>, opts: &CheckOptions) -> CheckReport {
    let n_sw = f.switches();
    let mut hosts_at = vec![0u64; n_sw];
    let mut first_host = vec![usize::MAX; n_sw];
    let mut dest_attach = vec![usize::MAX; f.owner.len()];
    for (i, h) in f.hosts.iter().enumerate() {
        hosts_at[h.attach] += 1;
        if first_host[h.attach] == usize::MAX {
            first_host[h.attach] = i;
        }
        for k in 0..f.per_port {
            if let Some(a) = dest_attach.get_mut(usize::from(h.lid.0.saturating_add(k))) {
                *a = h.attach;
            }
        }
    }
    // CA destinations grouped by attach switch (one BFS per group), then switch LIDs.
    let mut order: Vec<(usize, u16)> = Vec::new();
    for (lid, o) in f.owner.iter().enumerate().skip(1) {
        let Ok(lid) = u16::try_from(lid) else { break };
        match o {
            Owner::None => {}
            Owner::Port(..) => order.push((dest_attach[usize::from(lid)], lid)),
            Owner::Switch(_) => order.push((usize::MAX, lid)),
        }
    }
    order.sort_unstable();
    let r = CheckReport {
        switches: n_sw,
        hosts: f.hosts.len(),
        lmc: f.view.lmc,
        pairs: 0,
        reachable: 0,
        black_holes: 0,
        loops: 0,
        switch_pairs: 0,
        switch_reachable: 0,
        ca_to_switch_pairs: 0,
        ca_to_switch_reachable: 0,
        failures: Vec::new(),
        hops: HopStats::default(),
        forwarding_index: LinkLoad::default(),
        link_loads: Vec::new(),
        shifts: None,
        credit_loops: CreditLoops::NotChecked,
        credit_loops_between_cas: CreditLoops::NotChecked,
        cdg: None,
        components: 0,
        component_sizes: Vec::new(),
    };
    let mut w = Walker {
        f,
        max_examples: opts.max_examples,
        r,
        hosts_at,
        first_host,
        st: vec![St::Unknown; n_sw],
        stack: Vec::new(),
        dist: Vec::new(),
        queue: VecDeque::new(),
        bfs_for: usize::MAX - 1,
        cnt: vec![0; n_sw],
        efi: vec![0; f.next.len()],
        by_hops: Vec::new(),
        switch_failures: Vec::new(),
        sum_hops: 0,
        sum_short: 0,
    };
    for &(attach, lid) in &order {
        resolve_all(f, lid, &mut w.st, &mut w.stack);
        w.switch_sources(lid);
        if attach != usize::MAX && matches!(f.owner(lid), Owner::Port(..)) {
            w.ca_sources(attach, lid);
            w.push_counts(lid);
        }
    }
    let mut r = w.r;
    r.failures.extend(w.switch_failures.into_iter().take(opts.max_examples.saturating_sub(r.failures.len())));
    if r.reachable > 0 {
        r.hops.mean = w.sum_hops as f64 / r.reachable as f64;
        r.hops.shortest_mean = w.sum_short as f64 / r.reachable as f64;
    }
    (r.forwarding_index, r.link_loads) = link_load(f, &w.efi);
    r
}

impl Walker<'_, '_> {
    /// Routes from every switch to `lid`, and from every CA to it if it is a switch LID.
    fn switch_sources(&mut self, lid: u16) {
        let f = self.f;
        let owner = f.owner(lid);
        for (s, &state) in self.st.iter().enumerate() {
            if owner == Owner::Switch(s) {
                continue;
            }
            self.r.switch_pairs += 1;
            match state {
                St::Done(_) => self.r.switch_reachable += 1,
                St::Fail(kind, at) if self.switch_failures.len() < self.max_examples => {
                    self.switch_failures.push(Failure {
                        source: f.switch_guid(s),
                        source_port: PortNum(0),
                        dlid: Lid(lid),
                        at: f.switch_guid(at),
                        kind,
                    });
                }
                _ => {}
            }
        }
        if let Owner::Switch(_) = owner {
            for (s, &state) in self.st.iter().enumerate() {
                self.r.ca_to_switch_pairs += self.hosts_at[s];
                if let St::Done(_) = state {
                    self.r.ca_to_switch_reachable += self.hosts_at[s];
                }
            }
        }
    }

    /// Routes from every CA port to the CA LID `lid`, whose port hangs off switch `attach`.
    fn ca_sources(&mut self, attach: usize, lid: u16) {
        let f = self.f;
        if self.bfs_for != attach {
            bfs(f, attach, &mut self.dist, &mut self.queue);
            self.bfs_for = attach;
        }
        for b in &mut self.by_hops {
            b.clear();
        }
        let r = &mut self.r;
        for (s, &state) in self.st.iter().enumerate() {
            let sources = self.hosts_at[s].saturating_sub(u64::from(s == attach));
            self.cnt[s] = 0;
            if sources == 0 {
                if let St::Done(h) = state {
                    push_bucket(&mut self.by_hops, h, s);
                }
                continue;
            }
            r.pairs += sources;
            match state {
                St::Done(h) => {
                    r.reachable += sources;
                    let routed = h + 1;
                    let short = self.dist.get(s).copied().filter(|&d| d != FAR).map_or(routed, |d| d + 2);
                    self.sum_hops += sources * u64::from(routed);
                    self.sum_short += sources * u64::from(short);
                    r.hops.max = r.hops.max.max(routed);
                    if routed > short {
                        r.hops.non_minimal += sources;
                        r.hops.max_extra = r.hops.max_extra.max(routed - short);
                    }
                    self.cnt[s] = sources;
                    push_bucket(&mut self.by_hops, h, s);
                }
                St::Fail(kind, at) => {
                    if kind == FailureKind::Loop {
                        r.loops += sources;
                    } else {
                        r.black_holes += sources;
                    }
                    if r.failures.len() < self.max_examples
                        && let Some(h) = f.hosts.get(self.first_host[s])
                    {
                        r.failures.push(Failure {
                            source: h.guid,
                            source_port: h.num,
                            dlid: Lid(lid),
                            at: f.switch_guid(at),
                            kind,
                        });
                    }
                }
                St::Unknown | St::Visiting => {}
            }
        }
    }

    /// Pushes the route counts down the forwarding tree of `lid`, farthest switches first, onto
    /// the links they cross.
    fn push_counts(&mut self, lid: u16) {
        let f = self.f;
        for bucket in self.by_hops.iter().rev() {
            for &s in bucket {
                let routes = self.cnt[s];
                if routes == 0 {
                    continue;
                }
                let Some(p) = f.port(s, lid) else { continue };
                let Some(c) = f.chan(s, p) else { continue };
                if let Next::Switch(n) = f.next[c] {
                    self.efi[c] += routes;
                    self.cnt[n] += routes;
                }
            }
        }
    }
}

fn push_bucket(by_hops: &mut Vec<Vec<usize>>, h: u32, s: usize) {
    let h = h as usize;
    if by_hops.len() <= h {
        by_hops.resize_with(h + 1, Vec::new);
    }
    by_hops[h].push(s);
}

/// Hop distances over the cabled switch graph from `from`.
fn bfs(f: &Fabric<'_>, from: usize, dist: &mut Vec<u32>, queue: &mut VecDeque<usize>) {
    dist.clear();
    dist.resize(f.switches(), FAR);
    queue.clear();
    if from < dist.len() {
        dist[from] = 0;
        queue.push_back(from);
    }
    while let Some(s) = queue.pop_front() {
        let (a, b) = (f.chan_start[s], f.chan_start[s + 1]);
        for &n in &f.next[a..b] {
            if let Next::Switch(n) = n
                && dist[n] == FAR
            {
                dist[n] = dist[s] + 1;
                queue.push_back(n);
            }
        }
    }
}

fn channel(f: &Fabric<'_>, chan: usize) -> Option<Channel> {
    let (switch, port) = f.chan_parts(chan)?;
    let to = match f.next.get(chan)? {
        Next::Switch(n) => f.switch_guid(*n),
        Next::Port(ca, _) => f.view.cas.get(*ca)?.guid,
        Next::Dead => return None,
    };
    Some(Channel { switch: f.switch_guid(switch), port, to })
}

/// The forwarding index's summary, and each directed switch-to-switch link's figure.
fn link_load(f: &Fabric<'_>, efi: &[u64]) -> (LinkLoad, Vec<ChannelLoad>) {
    let mut l = LinkLoad::default();
    let mut each = Vec::new();
    let mut sum = 0u64;
    let mut worst = None;
    for (c, n) in f.next.iter().enumerate() {
        if !matches!(n, Next::Switch(_)) {
            continue;
        }
        l.links += 1;
        let v = efi.get(c).copied().unwrap_or(0);
        if let Some(channel) = channel(f, c) {
            each.push(ChannelLoad { channel, routes: v });
        }
        sum += v;
        if v > l.max || worst.is_none() {
            l.max = v;
            worst = Some(c);
        }
    }
    if l.links > 0 {
        l.mean = sum as f64 / l.links as f64;
        l.worst = worst.and_then(|c| channel(f, c));
    }
    (l, each)
}

/// Every shift permutation over the hosts, base LIDs only.
pub(super) fn shifts(f: &Fabric<'_>) -> ShiftStats {
    let hosts = f.hosts.len();
    let mut out = ShiftStats { shifts: hosts.saturating_sub(1), ..ShiftStats::default() };
    let mut load = vec![0u32; f.next.len()];
    let mut touched = Vec::new();
    let mut sum_worst = 0u64;
    for shift in 1..hosts {
        let mut worst = 0u32;
        for (i, src) in f.hosts.iter().enumerate() {
            let dst = f.hosts[(i + shift) % hosts].lid.0;
            let mut cur = src.attach;
            for _ in 0..=f.switches() {
                let Some(port) = f.port(cur, dst) else { break };
                let Some(ch) = f.chan(cur, port) else { break };
                load[ch] += 1;
                if load[ch] == 1 {
                    touched.push(ch);
                }
                worst = worst.max(load[ch]);
                match f.next[ch] {
                    Next::Switch(nx) => cur = nx,
                    _ => break,
                }
            }
        }
        for &ch in &touched {
            load[ch] = 0;
        }
        touched.clear();
        sum_worst += u64::from(worst);
        if worst > 1 {
            out.contended_shifts += 1;
        }
        if worst > out.worst {
            out.worst = worst;
            out.worst_shift = shift;
        }
    }
    if out.shifts > 0 {
        out.mean_worst = sum_worst as f64 / out.shifts as f64;
    }
    out
}
