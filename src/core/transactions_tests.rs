//! Tests of [`super`]: the SMP window, its deadlines, retries and feeds.

use super::*;
use ibsm_mad::smp::SmpRepr;

fn node_info(path: &[u8]) -> Request {
    Request::sweep(DrPath::new(path).unwrap(), Req::NodeInfo { from: None })
}

/// A port configuration Set to (node, port).
fn set(node: NodeIdx, port: u8) -> Request {
    let info = PlannedInfo::one(PortInfo::default());
    Request::sweep(DrPath::default(), Req::SetPortInfo { node, port: PortNum(port), info, step: PortStep::Configure })
}

/// A port configuration Set's (node, port); (usize::MAX, 0) for any other request.
fn key(r: &Request) -> (NodeIdx, u8) {
    match r.req {
        Req::SetPortInfo { node, port, .. } => (node, port.0),
        _ => (usize::MAX, 0),
    }
}

#[test]
fn interleaved_takes_each_node_in_turn_and_keeps_each_nodes_order() {
    let sets = vec![set(0, 1), set(0, 2), set(0, 3), set(1, 1), set(2, 1), set(2, 2), node_info(&[1]), node_info(&[2])];
    let out: Vec<_> = interleaved(sets, spread(64)).map(|r| key(&r)).collect();
    let other = (usize::MAX, 0);
    assert_eq!(out, [(0, 1), (1, 1), (2, 1), other, other, (0, 2), (2, 2), (0, 3)]);
    assert_eq!(interleaved(Vec::new(), spread(64)).len(), 0);
    assert_eq!(spread(64), 256);
}

#[test]
fn interleaved_takes_spread_nodes_at_a_time_and_the_next_node_when_one_is_done() {
    // Node 0 has three Sets, node 1 one, node 2 two, node 3 two.
    let sets = || vec![set(0, 1), set(0, 2), set(0, 3), set(1, 1), set(2, 1), set(2, 2), set(3, 1), set(3, 2)];
    let order = |spread: usize| -> Vec<(NodeIdx, u8)> { interleaved(sets(), spread).map(|r| key(&r)).collect() };
    // Two at a time: node 2 comes in when node 1 is done, node 3 when node 0 is.
    assert_eq!(order(2), [(0, 1), (1, 1), (0, 2), (2, 1), (0, 3), (2, 2), (3, 1), (3, 2)]);
    // One at a time: node after node.
    assert_eq!(order(1), [(0, 1), (0, 2), (0, 3), (1, 1), (2, 1), (2, 2), (3, 1), (3, 2)]);
    // As many as there are nodes: every node in turn.
    let all = [(0, 1), (1, 1), (2, 1), (3, 1), (0, 2), (2, 2), (3, 2), (0, 3)];
    assert_eq!(order(4), all);
    assert_eq!(order(usize::MAX), all);
    assert_eq!(order(0), order(1));
}

#[test]
fn interleave_order_is_the_order_interleaved_takes_items_in() {
    let ports = [(0, 1), (0, 2), (0, 3), (1, 1), (2, 1), (2, 2), (3, 1), (3, 2), (3, 3), (4, 1)];
    for spread in [0, 1, 2, 3, 256] {
        let sets: Vec<Request> = ports.iter().map(|&(n, p)| set(n, p)).collect();
        let taken: Vec<(NodeIdx, u8)> = interleaved(sets, spread).map(|r| key(&r)).collect();
        let order = interleave_order(ports.len(), |k| Some(ports[k].0), spread);
        let built: Vec<(NodeIdx, u8)> = order.iter().map(|&k| ports[k as usize]).collect();
        assert_eq!(built, taken, "spread {spread}");
    }
}

/// The GetResp a node would send for `t`, with `status`.
fn answer(t: &Transmit, status: u16) -> SmpAnswer {
    let mut r = SmpAnswer::parse(&t.bytes).unwrap();
    r.status = status;
    // As the kernel does: the upper 32 TID bits are rewritten on the way.
    r.tid |= 0xabcd_0000_0000;
    r
}

#[test]
fn window_limits_smps_in_flight() {
    let mut tx = Transactions::new(4, 100, 0);
    for i in 0..10 {
        tx.push(node_info(&[i + 1]));
    }
    let sent: Vec<Transmit> = std::iter::from_fn(|| tx.poll_transmit(0)).collect();
    assert_eq!(sent.len(), 4);
    assert!(sent.iter().all(|t| t.to == Address::DIRECTED_ROUTE && !t.is_response()));
    let (req, out) = tx.on_response(&answer(&sent[2], 0)).unwrap();
    assert_eq!(req, node_info(&[3]));
    assert!(out.failure().is_none());
    assert!(tx.poll_transmit(0).is_some(), "an answer frees a slot");
    assert!(tx.poll_transmit(0).is_none());
}

#[test]
fn next_deadline_follows_answers_out_of_order_and_a_shorter_timeout() {
    let mut tx = Transactions::new(64, 100, 1);
    for i in 0..4 {
        tx.push(node_info(&[i + 1]));
    }
    let sent: Vec<Transmit> = [0, 10, 20].iter().map(|&t| tx.poll_transmit(t).unwrap()).collect();
    assert_eq!(tx.poll_timeout(), Some(100));
    // The latest answered first: the earliest deadline stays.
    assert!(tx.on_response(&answer(&sent[2], 0)).is_some());
    assert_eq!(tx.poll_timeout(), Some(100));
    assert!(tx.on_response(&answer(&sent[0], 0)).is_some());
    assert_eq!(tx.poll_timeout(), Some(110), "the first one's deadline went with its answer");
    // A reload shortens the timeout: the next SMP's deadline comes before the one in flight.
    tx.set_limits(64, 5, 1);
    tx.poll_transmit(30).unwrap();
    assert_eq!(tx.poll_timeout(), Some(35));
    assert!(tx.on_timeout(34).is_empty());
    assert!(tx.on_timeout(35).is_empty(), "retried, not failed");
    assert_eq!(tx.counters.retried, 1);
    assert_eq!(tx.poll_timeout(), Some(110), "only the expired one went");
    let again = tx.poll_transmit(40).unwrap();
    assert_eq!(tx.poll_timeout(), Some(45));
    assert!(tx.on_response(&answer(&again, 0)).is_some());
    assert!(tx.on_response(&answer(&sent[1], 0)).is_some());
    assert_eq!(tx.poll_timeout(), None);
    assert!(tx.is_idle());
}

#[test]
fn silence_is_retried_then_reported_once() {
    let mut tx = Transactions::new(64, 100, 2);
    tx.push(node_info(&[1]));
    let mut tries = 0;
    let mut now = 0;
    let mut failed = Vec::new();
    while failed.is_empty() {
        assert!(tx.poll_transmit(now).is_some());
        tries += 1;
        assert_eq!(tx.poll_timeout(), Some(now + 100));
        assert!(tx.on_timeout(now + 99).is_empty(), "expired early");
        now += 100;
        failed = tx.on_timeout(now);
    }
    assert_eq!(tries, 3, "first try plus two retries");
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].1, Outcome::Timeout);
    assert!(tx.is_idle());
    assert_eq!(tx.counters, Counters { sent: 3, retried: 2, failed: 1, timed_out: 3 });
}

#[test]
fn error_status_fails_at_once_and_busy_is_retried() {
    let mut tx = Transactions::new(64, 100, 3);
    tx.push(node_info(&[1]));
    let t = tx.poll_transmit(0).unwrap();
    assert!(tx.on_response(&answer(&t, status::BUSY)).is_none());
    let t = tx.poll_transmit(0).expect("busy is resent");
    let (_, out) = tx.on_response(&answer(&t, status::BAD_FIELD)).unwrap();
    assert_eq!(out.failure(), Some(SmpFailure::Status(status::BAD_FIELD)));
    assert!(tx.is_idle());
}

#[test]
fn unknown_tids_and_mismatched_attributes_are_ignored() {
    let mut tx = Transactions::new(64, 100, 0);
    tx.push(node_info(&[1]));
    let t = tx.poll_transmit(0).unwrap();
    let mut wrong_attr = answer(&t, 0);
    wrong_attr.attr_id = ids::attr::PORT_INFO;
    assert!(tx.on_response(&wrong_attr).is_none());
    let mut wrong_tid = answer(&t, 0);
    wrong_tid.tid += 1;
    assert!(tx.on_response(&wrong_tid).is_none());
    assert!(!tx.is_idle());
    assert!(tx.on_response(&answer(&t, 0)).is_some());
}

#[test]
fn each_operation_keeps_its_own_book() {
    let mut tx = Transactions::new(2, 100, 1);
    let aside = Request { op: Op::Aside, ..node_info(&[9]) };
    tx.push(aside.clone());
    tx.push(node_info(&[1]));
    tx.push(node_info(&[2]));
    assert!(!tx.is_idle_for(Op::Sweep) && !tx.is_idle_for(Op::Aside));
    let a = tx.poll_transmit(0).unwrap();
    let s1 = tx.poll_transmit(0).unwrap();
    assert!(tx.poll_transmit(0).is_none(), "one window for all operations");
    tx.on_response(&answer(&s1, 0)).unwrap();
    let s2 = tx.poll_transmit(0).unwrap();
    tx.on_response(&answer(&s2, 0)).unwrap();
    assert!(tx.is_idle_for(Op::Sweep), "the sweep's requests are done while another op's is in flight");
    assert!(!tx.is_idle_for(Op::Aside) && !tx.is_idle());
    // A timeout retries without closing the book; the final failure closes it.
    assert!(tx.on_timeout(100).is_empty());
    assert!(!tx.is_idle_for(Op::Aside));
    let retry = tx.poll_transmit(100).unwrap();
    assert_eq!(SmpRepr::parse(&retry.bytes).unwrap().attr_id, SmpRepr::parse(&a.bytes).unwrap().attr_id);
    let failed = tx.on_timeout(200);
    assert_eq!(failed, vec![(aside, Outcome::Timeout)]);
    assert!(tx.is_idle_for(Op::Aside) && tx.is_idle());
}

/// A feed of `n` NodeInfo requests along paths `[first]`, `[first + 1]`, ..., counting
/// how many it made; it may end `short` of what it promised.
#[derive(Debug)]
struct Counted {
    first: u8,
    n: usize,
    made: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    short: usize,
}

impl Iterator for Counted {
    type Item = Request;
    fn next(&mut self) -> Option<Request> {
        let i = self.made.load(std::sync::atomic::Ordering::Relaxed);
        if i + self.short >= self.n {
            return None;
        }
        self.made.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Some(node_info(&[self.first + u8::try_from(i).unwrap()]))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.n.saturating_sub(self.made.load(std::sync::atomic::Ordering::Relaxed));
        (n, Some(n))
    }
}

impl ExactSizeIterator for Counted {}

fn path_of(t: &Transmit) -> Vec<u8> {
    match SmpRepr::parse(&t.bytes).unwrap().route {
        ibsm_mad::smp::SmpRoute::Directed { initial_path, .. } => initial_path.ports().to_vec(),
        ibsm_mad::smp::SmpRoute::Lid => Vec::new(),
    }
}

#[test]
fn a_feed_makes_its_requests_only_as_the_window_takes_them_in_queue_order() {
    let mut tx = Transactions::new(2, 100, 1);
    let made = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    tx.push(node_info(&[1]));
    tx.push_feed(Counted { first: 10, n: 5, made: made.clone(), short: 0 }, Op::Sweep);
    tx.push(node_info(&[2]));
    tx.push_feed(Counted { first: 30, n: 0, made: made.clone(), short: 0 }, Op::Sweep);
    assert_eq!(tx.sizes(), (7, 0), "the feed's requests are counted queued");
    assert_eq!(tx.outstanding_for(Op::Sweep), 7);
    assert_eq!(made.load(std::sync::atomic::Ordering::Relaxed), 0, "nothing made before it is sent");
    let mut paths = Vec::new();
    let mut now = 0;
    loop {
        let sent: Vec<Transmit> = std::iter::from_fn(|| tx.poll_transmit(now)).collect();
        if sent.is_empty() {
            break;
        }
        assert!(made.load(std::sync::atomic::Ordering::Relaxed) <= paths.len() + 2, "made no sooner than sent");
        for t in &sent {
            paths.push(path_of(t));
        }
        // The first of each window times out once and is sent again; the rest are answered.
        now += 100;
        let retried = tx.on_timeout(now).is_empty();
        assert!(retried);
        let again: Vec<Transmit> = std::iter::from_fn(|| tx.poll_transmit(now)).collect();
        for t in &again {
            tx.on_response(&answer(t, 0)).unwrap();
        }
    }
    let firsts: Vec<u8> = paths.iter().map(|p| p[0]).collect();
    assert_eq!(firsts, [1, 10, 11, 12, 13, 14, 2], "FIFO, the feed in its place");
    assert!(tx.is_idle() && tx.is_idle_for(Op::Sweep));
    assert_eq!(tx.sizes(), (0, 0));
    assert_eq!(tx.counters.retried, 7);
    // A feed that ends short of what it promised closes its book all the same.
    made.store(0, std::sync::atomic::Ordering::Relaxed);
    tx.push_feed(Counted { first: 40, n: 3, made, short: 2 }, Op::Sweep);
    assert_eq!(tx.outstanding_for(Op::Sweep), 3);
    let t = tx.poll_transmit(now).unwrap();
    assert!(tx.poll_transmit(now).is_none());
    tx.on_response(&answer(&t, 0)).unwrap();
    assert!(tx.is_idle_for(Op::Sweep) && tx.is_idle());
    // Peeking makes the next request and keeps it at the head.
    let made = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    tx.push_feed(Counted { first: 50, n: 2, made: made.clone(), short: 0 }, Op::Sweep);
    assert_eq!(tx.peek(), Some(&node_info(&[50])));
    assert_eq!(tx.peek(), Some(&node_info(&[50])));
    assert_eq!(made.load(std::sync::atomic::Ordering::Relaxed), 1);
    assert_eq!(tx.sizes(), (2, 0));
    assert_eq!(path_of(&tx.poll_transmit(now).unwrap()), [50]);
    assert_eq!(path_of(&tx.poll_transmit(now).unwrap()), [51]);
}

#[test]
fn tids_are_unique_and_neither_start_at_one_nor_follow_each_other() {
    for key in [0u64, 0x1234_5678_9abc_def0, u64::MAX] {
        let tids: Vec<u32> = (1..=100_000).map(|n| tid_of(n, key)).collect();
        let unique: std::collections::HashSet<u32> = tids.iter().copied().collect();
        assert_eq!(unique.len(), tids.len(), "a bijection: no TID repeats");
        assert!(tids[0] > 1, "key {key:#x}: the first TID is not 1");
        let steps = tids.windows(2).filter(|w| w[1] == w[0].wrapping_add(1)).count();
        assert!(steps < 10, "key {key:#x}: {steps} TIDs follow their predecessor");
    }
    assert_ne!(tid_of(7, 1), tid_of(7, 2), "the key changes the sequence");
}

#[test]
fn an_answer_must_carry_the_requests_tid_attribute_and_modifier() {
    let mut tx = Transactions::keyed(64, 100, 0, 0xfeed);
    tx.push(Request::sweep(DrPath::new(&[1]).unwrap(), Req::GetPortInfo { node: 0, port: PortNum(3) }));
    let t = tx.poll_transmit(0).unwrap();
    let sent = SmpRepr::parse(&t.bytes).unwrap();
    assert_ne!(sent.tid & 0xffff_ffff, 1);
    let mut other_port = answer(&t, 0);
    other_port.attr_mod = 4;
    assert!(tx.on_response(&other_port).is_none(), "PortInfo of another port: not this answer");
    let mut other_attr = answer(&t, 0);
    other_attr.attr_id = ibsm_mad::ids::attr::NODE_INFO;
    assert!(tx.on_response(&other_attr).is_none());
    assert!(tx.on_response(&answer(&t, 0)).is_some(), "the right one is taken");
}

#[test]
fn a_recycled_buffer_carries_the_next_smp_byte_for_byte_as_a_fresh_one() {
    let requests = || [node_info(&[1, 3]), set(2, 4), node_info(&[])];
    let mut fresh = Transactions::new(8, 1_000, 0);
    let mut pooled = Transactions::new(8, 1_000, 0);
    for (a, b) in requests().into_iter().zip(requests()) {
        fresh.push(a);
        pooled.push(b);
    }
    for _ in 0..3 {
        // A buffer as a driver hands it back: an answer's bytes, none of them zero.
        let used = vec![0xa5u8; ibsm_mad::MAD_LEN];
        let at = used.as_ptr();
        pooled.recycle(used);
        let want = fresh.poll_transmit(5).expect("a request").bytes;
        let got = pooled.poll_transmit(5).expect("a request").bytes;
        assert_eq!(got.as_ptr(), at, "the buffer handed back is the one used");
        assert_eq!(got, want, "the same SMP");
    }
    assert_eq!((fresh.buffers_made(), pooled.buffers_made()), (3, 0));
    // A buffer of another length is not kept: the next SMP gets a new one.
    pooled.push(node_info(&[2]));
    pooled.recycle(vec![0u8; 300]);
    assert_eq!(pooled.poll_transmit(5).expect("a request").bytes.len(), ibsm_mad::MAD_LEN);
    assert_eq!(pooled.buffers_made(), 1);
}

#[test]
fn a_set_from_a_shared_batch_writes_the_smp_a_set_of_its_own_does_and_is_retried_the_same() {
    // Three PortInfos that differ where a Set carries them (LID, state, M_Key).
    let infos: Vec<PortInfo> = (1..=3u16)
        .map(|i| PortInfo {
            lid: ibsm_mad::Lid(i),
            port_state: ibsm_mad::attrs::PortState::Armed,
            m_key: MKey(u64::from(i) << 8),
            ..PortInfo::default()
        })
        .collect();
    let batch = Arc::new(infos.clone());
    assert!(PlannedInfo::of(&batch, 3).is_none(), "no entry past the batch's end");
    let req = |info: PlannedInfo, port: u8| {
        Request::sweep(
            DrPath::new(&[port]).unwrap(),
            Req::SetPortInfo { node: 1, port: PortNum(port), info, step: PortStep::Arm },
        )
    };
    let mut shared = Transactions::new(8, 1_000, 1);
    let mut alone = Transactions::new(8, 1_000, 1);
    for (at, info) in infos.iter().enumerate() {
        let port = u8::try_from(at + 1).unwrap();
        shared.push(req(PlannedInfo::of(&batch, at).unwrap(), port));
        alone.push(req(PlannedInfo::one(*info), port));
    }
    for (at, info) in infos.iter().enumerate() {
        let (a, b) = (shared.poll_transmit(0).unwrap(), alone.poll_transmit(0).unwrap());
        assert_eq!(a.bytes, b.bytes, "Set {at}");
        let sent = SmpAnswer::parse(&a.bytes).unwrap();
        assert_eq!(PortInfo::parse(&sent.data).unwrap(), *info);
    }
    // Silence: each is sent again from the batch, byte for byte as the Set of its own.
    assert!(shared.on_timeout(1_000).is_empty() && alone.on_timeout(1_000).is_empty(), "retried, not failed");
    for _ in &infos {
        let (a, b) = (shared.poll_transmit(1_000).unwrap(), alone.poll_transmit(1_000).unwrap());
        assert_eq!(a.bytes, b.bytes);
    }
    assert_eq!(shared.counters.retried, 3);
    drop(shared);
    assert_eq!(Arc::strong_count(&batch), 1, "the Sets' shares end with them");
}
