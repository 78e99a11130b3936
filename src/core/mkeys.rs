//! M_Keys: which key each port should hold, which key every SMP must carry, and the bad-M_Key
//! traps (256) ports raise.
//!
//! The M_Keys component ([`MKeys`]). Owns the M_Key policy ([`MKeyMode`]: off, one key per port derived from a secret, or one key
//! for the whole subnet), the key derivation (SipHash-2-4 of the port GUID under the 128-bit
//! secret: every port's key differs and one leaked key says nothing about another), what the SM
//! believes each port holds ([`MKeys::held`]: keys it set, keys ports revealed in PortInfo, keys
//! imported from OpenSM's `guid2mkey`), the neighbour map that names the port at the end of a
//! directed route before its NodeInfo is read (a port at protect level 2 or 3 answers no Get
//! without its key), and the count of bad-M_Key traps per source. Files are the caller's: the
//! core is given the secret and the known keys, and hands the held keys back to be saved.
//!
//! [`MKeys`] takes what it needs as arguments (the [`MKeyConfig`], the subnet being swept, the
//! SM's own port GUID, the SA's snapshot, the time) and answers with values: the key an SMP
//! carries, the key Sets to queue, the event a trap raises. It touches no other component's
//! state; the coordinator queues what it returns.
//!
//! Guarantees: with M_Keys off, SMPs carry the key a port is known to hold (an imported key, or
//! 0) and PortInfo Sets write back the key fields as read; with them on, every PortInfo Set of a
//! CA port or a switch's port 0 carries the port's key, protect bits and lease, and every SMP
//! carries the key of the port that checks it (a switch's port 0, or the CA port the route
//! enters by).

use std::collections::{BTreeMap, HashMap};

use ibsm_mad::attrs::{NoticeDetails, PortInfo};
use ibsm_mad::{Guid, Lid, MKey, PortNum};

use crate::siphash::siphash24;

use super::events::SmEvent;
use super::state::{NodeIdx, Subnet};
use super::transactions::{PlannedInfo, PortStep, Req, Request};
use crate::sa::Snapshot;

/// How ports get their M_Keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MKeyMode {
    /// The SM sets no M_Key (OpenSM's default).
    #[default]
    Off,
    /// Each port its own key, derived from the secret in the state directory.
    PerPort,
    /// One key for every port (OpenSM's `m_key`).
    Fixed(u64),
}

/// The 128-bit secret per-port keys are derived from. Its `Debug` never shows it.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct MKeySecret(pub [u8; 16]);

impl std::fmt::Debug for MKeySecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MKeySecret(..)")
    }
}

/// M_Key settings of the SM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MKeyConfig {
    /// Which keys.
    pub mode: MKeyMode,
    /// M_KeyProtectBits, 0..=3 (1: Gets without the key see M_Key 0; 2 and 3: they fail).
    pub protect: u8,
    /// M_KeyLeasePeriod in seconds (0: never expires, so a lost key cannot be recovered).
    pub lease_s: u16,
    /// The secret of [`MKeyMode::PerPort`].
    pub secret: MKeySecret,
}

impl Default for MKeyConfig {
    fn default() -> MKeyConfig {
        MKeyConfig { mode: MKeyMode::Off, protect: 1, lease_s: 60, secret: MKeySecret::default() }
    }
}

impl MKeyConfig {
    /// Writes the port's M_Key, protect bits and lease into a PortInfo Set of a CA port or a
    /// switch's port 0 (`guid`), when M_Keys are on.
    pub fn apply(&self, guid: Option<Guid>, info: &mut PortInfo) {
        let Some(guid) = guid.filter(|_| self.mode != MKeyMode::Off) else { return };
        info.m_key = MKey(self.key_for(guid));
        info.m_key_protect_bits = self.protect & 3;
        info.m_key_lease_period = self.lease_s;
    }

    /// The key port `guid` should hold (0 with M_Keys off).
    pub fn key_for(&self, guid: Guid) -> u64 {
        match self.mode {
            MKeyMode::Off => 0,
            MKeyMode::Fixed(k) => k,
            MKeyMode::PerPort => {
                // 0 means "no key" to a port: never hand it out.
                let k = siphash24(&self.secret.0, &guid.0.to_be_bytes());
                if k == 0 { 1 } else { k }
            }
        }
    }
}

/// A bad-M_Key trap's source as counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Violations {
    /// Traps received from this LID.
    pub count: u64,
    /// Time of the last one that was reported (ns on the core's timeline).
    pub last_reported: Option<u64>,
}

/// An entry of the neighbour map: (node GUID, port) and the port GUID cabled there.
pub type Neighbor = ((Guid, u8), Guid);

/// What the SM knows about M_Keys on the fabric.
#[derive(Debug, Clone, Default)]
pub struct MKeys {
    /// The key each port (by port GUID) is believed to hold.
    held: HashMap<Guid, u64>,
    /// (node GUID, port) to the GUID of the port the cable there leads to (the arrival port of
    /// a CA, the port GUID of a switch); [`LOCAL`] names the SM's own port.
    neighbors: HashMap<(Guid, u8), Guid>,
    /// Bad-M_Key traps by the LID that raised them.
    violations: BTreeMap<Lid, Violations>,
    /// When a port that refused this SM's key drops its protection (its lease ends): a sweep
    /// is due then, whatever the re-sweep interval says.
    recovery_at: Option<u64>,
    /// Keys this SM has sent, with the port each was for (at most one entry per port).
    sent: HashMap<u64, Guid>,
    /// The key Sets of this sweep are in flight: the rest of the configuration waits.
    keying: bool,
    /// This sweep already sent its key Sets (they are sent once per sweep).
    keyed_this_sweep: bool,
}

impl MKeys {
    /// The key an SMP to the port `guid` carries: the one it holds when known, else the one it
    /// should hold.
    pub fn key_to_use(&self, cfg: &MKeyConfig, guid: Guid) -> MKey {
        MKey(self.held.get(&guid).copied().unwrap_or_else(|| cfg.key_for(guid)))
    }

    /// Counts a bad-M_Key trap from `lid` at `now`; true when it should be reported (the first
    /// from a source, then at most one per `every_ns`).
    pub fn count_violation(&mut self, lid: Lid, now: u64, every_ns: u64) -> bool {
        let v = self.violations.entry(lid).or_default();
        v.count += 1;
        let report = v.last_reported.is_none_or(|t| now.saturating_sub(t) >= every_ns);
        if report {
            v.last_reported = Some(now);
        }
        report
    }

    /// The key each port is believed to hold, by port GUID.
    pub fn held(&self) -> &HashMap<Guid, u64> {
        &self.held
    }

    /// Takes the keys ports are known to hold (an earlier run's `guid2mkey`, or OpenSM's).
    pub fn set_held(&mut self, keys: HashMap<Guid, u64>) {
        self.held = keys;
    }

    /// The neighbour map: (node GUID, port) to the port GUID cabled there.
    pub fn neighbors(&self) -> &HashMap<(Guid, u8), Guid> {
        &self.neighbors
    }

    /// Takes a neighbour map persisted by an earlier run.
    pub fn set_neighbors(&mut self, neighbors: HashMap<(Guid, u8), Guid>) {
        self.neighbors = neighbors;
    }

    /// Bad-M_Key traps received, by the LID that raised them.
    pub fn violations(&self) -> &BTreeMap<Lid, Violations> {
        &self.violations
    }

    /// What a master replicates: the held keys and the neighbour map, sorted, without the
    /// entry for this SM's own port (on another SM it would mean another port).
    pub fn replica(&self) -> (Vec<(Guid, u64)>, Vec<Neighbor>) {
        let mut held: Vec<_> = self.held.iter().map(|(g, k)| (*g, *k)).collect();
        held.sort_unstable();
        let mut neighbors: Vec<_> =
            self.neighbors.iter().filter(|(k, _)| **k != LOCAL).map(|(k, v)| (*k, *v)).collect();
        neighbors.sort_unstable();
        (held, neighbors)
    }

    /// Adopts what a master replicated ([`MKeys::replica`]) over what this SM knows.
    pub fn adopt(&mut self, held: &[(Guid, u64)], neighbors: &[Neighbor]) {
        self.held.extend(held.iter().copied());
        self.neighbors.extend(neighbors.iter().copied().filter(|(k, _)| *k != LOCAL));
    }

    /// Entries of each growing table, by name (for the soak's footprint).
    pub fn sizes(&self) -> [(&'static str, usize); 4] {
        [
            ("mkeys.held", self.held.len()),
            ("mkeys.neighbors", self.neighbors.len()),
            ("mkeys.violations", self.violations.len()),
            ("mkeys.sent", self.sent.len()),
        ]
    }

    /// A sweep starts: its key Sets are yet to be sent.
    pub fn sweep_started(&mut self) {
        self.keying = false;
        self.keyed_this_sweep = false;
    }

    /// Whether the sweep's key Sets are in flight (the rest of the configuration waits).
    pub fn keying(&self) -> bool {
        self.keying
    }

    /// The sweep's key Sets are done.
    pub fn keyed(&mut self) {
        self.keying = false;
    }

    /// When a sweep is due for a port whose lease should have ended.
    pub fn poll_timeout(&self) -> Option<u64> {
        self.recovery_at
    }

    /// Whether the recovery sweep is due at `now` (it is then taken: due once).
    pub fn take_recovery(&mut self, now: u64) -> bool {
        let due = self.recovery_at.is_some_and(|t| t <= now);
        if due {
            self.recovery_at = None;
        }
        due
    }

    /// The GUID of the port whose M_Key guards `r`'s SMP: a switch's port 0, or the CA port the
    /// route enters by; for a node not read yet, what the neighbour map predicts.
    fn key_port(&self, subnet: &Subnet, own: Guid, r: &Request) -> Option<Guid> {
        let at = |n: NodeIdx, p: Option<PortNum>| -> Option<Guid> {
            let node = subnet.node(n)?;
            if node.is_switch() {
                return Some(node.info.port_guid);
            }
            let p = p.unwrap_or(node.info.local_port_num);
            mkey_guid(subnet, n, p).or(Some(node.info.port_guid))
        };
        match &r.req {
            Req::NodeInfo { from: None } if own == Guid(0) => self.neighbors.get(&LOCAL).copied(),
            Req::NodeInfo { from: None } => Some(own),
            Req::NodeInfo { from: Some((n, p)) } | Req::ConfirmNodeInfo { from: (n, p) } => {
                let g = subnet.node(*n)?.info.node_guid;
                self.neighbors.get(&(g, p.0)).copied()
            }
            Req::NodeDesc { node }
            | Req::GetSwitchInfo { node }
            | Req::LightSwitchInfo { node }
            | Req::GetLft { node, .. }
            | Req::SetSwitchInfo { node, .. }
            | Req::SetLft { node, .. } => at(*node, None),
            Req::GetPortInfo { node, port }
            | Req::GetPortInfoExt { node, port }
            | Req::CheckPortInfo { node, port }
            | Req::SetPortInfo { node, port, .. }
            | Req::SetPKeys { node, port, .. }
            | Req::SetSl2Vl { node, port, .. }
            | Req::SetVlArb { node, port, .. }
            | Req::SetGuidInfo { node, port, .. }
            | Req::GetSmInfo { node, port, .. } => at(*node, Some(*port)),
            Req::PollMaster { master: g, .. }
            | Req::MasterLid { master: g }
            | Req::SetSmInfo { to: g, .. }
            | Req::LightSmInfo { guid: g, .. }
            | Req::RereadSmInfo { guid: g, .. } => Some(*g),
            Req::ReadNodeDesc { guid, port } => subnet.by_guid.get(guid).and_then(|&i| at(i, Some(*port))),
            Req::GetVlTable { node, port, switch: false, .. } => {
                subnet.by_guid.get(node).and_then(|&i| at(i, Some(*port)))
            }
            Req::GetVlTable { node: switch, .. } | Req::SetMft { switch, .. } => {
                subnet.by_guid.get(switch).and_then(|&i| subnet.node(i)).map(|n| n.info.port_guid)
            }
        }
    }

    /// Whether an SMP carrying `key` passes this SM's own port's (`own`) M_Key check (no key,
    /// or protect bits 0, let every SMP pass).
    pub fn passes_own(&self, cfg: &MKeyConfig, own: Guid, key: MKey) -> bool {
        if cfg.mode == MKeyMode::Off || cfg.protect == 0 {
            return true;
        }
        let mine = self.key_to_use(cfg, own);
        mine.0 == 0 || mine == key
    }

    /// Whether any SMP carries an M_Key other than 0: the policy sets keys, or ports hold
    /// some. When not, [`MKeys::next_smp_key`] is 0 whatever the SMP.
    pub(crate) fn in_use(&self, cfg: &MKeyConfig) -> bool {
        cfg.mode != MKeyMode::Off || !self.held.is_empty()
    }

    /// The M_Key a TrapRepress to the port at `lid` carries (the key it holds, when known).
    pub fn issuer_key(&self, cfg: &MKeyConfig, ports: Ports<'_>, lid: Lid) -> MKey {
        if !self.in_use(cfg) {
            return MKey(0);
        }
        ports.by_lid(lid).map_or(MKey(0), |(g, _)| self.key_to_use(cfg, g))
    }

    /// The M_Key the next SMP (`next`, from [`super::transactions::Transactions::peek`])
    /// carries; a key other than 0 is remembered with its port, so that a bad-M_Key trap about
    /// it is known as this SM's own.
    pub(crate) fn next_smp_key(
        &mut self,
        cfg: &MKeyConfig,
        subnet: &Subnet,
        own: Guid,
        next: Option<&Request>,
    ) -> MKey {
        if !self.in_use(cfg) {
            return MKey(0);
        }
        let Some(guid) = next.and_then(|r| self.key_port(subnet, own, r)) else { return MKey(0) };
        let key = self.key_to_use(cfg, guid);
        if key.0 != 0 {
            self.sent.insert(key.0, guid);
        }
        key
    }

    /// The key Sets of this sweep, once: PortInfo Sets that give each CA port and switch port 0
    /// whose M_Key, protect bits or lease differ from the policy its new ones, and nothing
    /// else. They go before any other Set of the sweep: an SMP sent to a port with its old key
    /// while the key changes would be refused (and start the port's lease), and a switch's key
    /// guards all its ports. Empty when they were sent already or none is needed; when there
    /// are some, [`MKeys::keying`] holds until [`MKeys::keyed`].
    pub(crate) fn key_sets(&mut self, cfg: &MKeyConfig, subnet: &Subnet) -> Vec<Request> {
        if std::mem::replace(&mut self.keyed_this_sweep, true) || cfg.mode == MKeyMode::Off {
            return Vec::new();
        }
        let mut sets = Vec::new();
        for (i, n) in subnet.nodes.iter().enumerate().filter(|(_, n)| !n.carried) {
            for p in n.end_ports() {
                let (Some(info), Some(guid)) = (n.port(p).and_then(|r| r.info), mkey_guid(subnet, i, p)) else {
                    continue;
                };
                let want = cfg.key_for(guid);
                if info.m_key.0 == want
                    && info.m_key_protect_bits == cfg.protect & 3
                    && info.m_key_lease_period == cfg.lease_s
                {
                    continue;
                }
                let mut set = super::state::port_info_set(&info);
                cfg.apply(Some(guid), &mut set);
                let req = Req::SetPortInfo { node: i, port: p, info: PlannedInfo::one(set), step: PortStep::Configure };
                sets.push(Request::sweep(n.path_for(p), req));
            }
        }
        self.keying = !sets.is_empty();
        sets
    }

    /// A PortInfo answer from `node`'s `port`: a key it shows is the key it holds; no key and
    /// no protection means none. Of a switch only port 0's fields count (the switch's key; the
    /// external ports' copies may read as zero).
    pub fn learn_key(&mut self, subnet: &Subnet, node: NodeIdx, port: PortNum, info: &PortInfo) {
        let is_switch = subnet.node(node).is_some_and(super::state::Node::is_switch);
        let Some(guid) = mkey_guid(subnet, node, port).filter(|_| !is_switch || port.0 == 0) else { return };
        if info.m_key.0 != 0 {
            self.held.insert(guid, info.m_key.0);
        } else if info.m_key_protect_bits == 0 {
            self.held.remove(&guid);
        }
    }

    /// NodeInfo read through `from` (node, port): the port at the other end is `guid`; read
    /// with no `from`, it is the SM's own port.
    pub fn learn_neighbor(&mut self, subnet: &Subnet, from: Option<(NodeIdx, PortNum)>, guid: Guid) {
        let key = match from {
            None => LOCAL,
            Some((n, p)) => {
                let Some(node) = subnet.node(n) else { return };
                (node.info.node_guid, p.0)
            }
        };
        self.neighbors.insert(key, guid);
    }

    /// A trap 256 (bad M_Key) from `src` at `now`: counted per source; the event to report (at
    /// most every 10 s per source) with the port, the offending SMP and its route. When the key
    /// was one this SM sent, the port holds a key the SM does not know: it recovers after the
    /// port's lease (protect bits drop to 0 and the port shows its key), so a sweep is
    /// scheduled then ([`MKeys::poll_timeout`]): the port's lease as read, or the configured one.
    pub fn on_bad_mkey(
        &mut self,
        cfg: &MKeyConfig,
        ports: Ports<'_>,
        now: u64,
        src: Lid,
        details: &NoticeDetails,
    ) -> Option<SmEvent> {
        let NoticeDetails::Trap256 {
            lid,
            dr_slid,
            method,
            attribute_id,
            m_key,
            dr_notice,
            dr_hop_count,
            dr_notice_return_path,
            ..
        } = *details
        else {
            return None;
        };
        if !self.count_violation(src, now, REPORT_EVERY_NS) {
            return None;
        }
        // The port behind the LID, and whether the refused key is the one this SM sends it.
        // The refused key is one this SM sent (the port holds another), or someone else's.
        let ours = self.sent.contains_key(&m_key.0) && m_key.0 != 0;
        let port = ports.by_lid(lid);
        let hops = usize::from(dr_hop_count).min(dr_notice_return_path.len());
        let path = if dr_notice { dr_notice_return_path[..hops].to_vec() } else { Vec::new() };
        let lease = port.and_then(|(_, info)| info).map(|i| i.m_key_lease_period);
        let count = self.violations.get(&src).map_or(0, |v| v.count);
        // The port's lease started with this refusal. Unread (a Get needs the key at protect 2
        // and 3), it is taken to be the configured one: the key came from this SM's policy.
        if ours && let Some(l) = lease.or(Some(cfg.lease_s)).filter(|&l| l > 0) {
            let at = now.saturating_add(u64::from(l) * 1_000_000_000 + LEASE_MARGIN_NS);
            self.recovery_at = Some(self.recovery_at.map_or(at, |t| t.min(at)));
        }
        Some(SmEvent::BadMKey {
            lid,
            from: dr_slid,
            method,
            attr_id: attribute_id,
            m_key,
            return_path: path,
            count,
            ours,
            lease_s: lease,
        })
    }
}

/// Where the end ports are found by LID: the SA's snapshot, or the subnet being swept before
/// the first one.
#[derive(Debug, Clone, Copy)]
pub struct Ports<'a> {
    /// The SA's snapshot, once a sweep has completed.
    pub snapshot: Option<&'a Snapshot>,
    /// The subnet being swept.
    pub subnet: &'a Subnet,
}

impl Ports<'_> {
    /// The end port with base LID `lid`: its GUID and PortInfo as last read.
    pub fn by_lid(&self, lid: Lid) -> Option<(Guid, Option<PortInfo>)> {
        if let Some(s) = self.snapshot {
            return s.by_lid(lid).and_then(|at| s.port(at)).map(|p| (p.guid, p.info));
        }
        self.subnet.nodes.iter().find_map(|n| {
            n.end_ports().find_map(|p| {
                let rec = n.port(p).filter(|r| r.lid == lid)?;
                let guid = if n.is_switch() { n.info.port_guid } else { rec.guid? };
                Some((guid, rec.info))
            })
        })
    }
}

/// The GUID whose key guards `node`'s `port`: the switch's port GUID for any switch port,
/// the port's own for a CA.
pub fn mkey_guid(subnet: &Subnet, node: NodeIdx, port: PortNum) -> Option<Guid> {
    let n = subnet.node(node)?;
    if n.is_switch() { Some(n.info.port_guid) } else { n.port(port).and_then(|r| r.guid) }
}

/// A sweep to recover a port is scheduled this long after its lease should have ended.
const LEASE_MARGIN_NS: u64 = 100_000_000;

/// The neighbour map's entry for the SM's own port (known before its NodeInfo is read).
pub const LOCAL: (Guid, u8) = (Guid(0), 0);

/// Bad-M_Key traps from one source are reported at most this often (ns).
const REPORT_EVERY_NS: u64 = 10_000_000_000;

#[cfg(test)]
mod tests {
    use super::*;

    fn reference_key() -> [u8; 16] {
        std::array::from_fn(|i| u8::try_from(i).unwrap_or(0))
    }

    #[test]
    fn per_port_keys_differ_and_depend_on_the_secret() {
        let cfg = MKeyConfig { mode: MKeyMode::PerPort, secret: MKeySecret(reference_key()), ..MKeyConfig::default() };
        let keys: std::collections::HashSet<u64> =
            (1..=1000).map(|g| cfg.key_for(Guid(0x0002_c903_0000_0000 + g))).collect();
        assert_eq!(keys.len(), 1000);
        assert!(!keys.contains(&0));
        let other = MKeyConfig { secret: MKeySecret([7; 16]), ..cfg };
        assert_ne!(cfg.key_for(Guid(5)), other.key_for(Guid(5)));
        assert_eq!(MKeyConfig::default().key_for(Guid(5)), 0, "off");
        assert_eq!(MKeyConfig { mode: MKeyMode::Fixed(9), ..cfg }.key_for(Guid(5)), 9);
        assert_eq!(format!("{:?}", cfg.secret), "MKeySecret(..)");
    }

    #[test]
    fn violations_are_reported_once_per_interval_per_source() {
        let mut k = MKeys::default();
        assert!(k.count_violation(Lid(4), 0, 10));
        assert!(!k.count_violation(Lid(4), 5, 10));
        assert!(k.count_violation(Lid(9), 5, 10));
        assert!(k.count_violation(Lid(4), 10, 10));
        assert_eq!(k.violations[&Lid(4)].count, 3);
    }

    fn per_port() -> MKeyConfig {
        MKeyConfig { mode: MKeyMode::PerPort, secret: MKeySecret([3; 16]), lease_s: 60, ..MKeyConfig::default() }
    }

    #[test]
    fn key_sets_go_once_per_sweep_and_hold_the_rest_of_the_configuration() {
        let cfg = per_port();
        let mut s = crate::core::testing::star(0x102, 0x103);
        let mut k = MKeys::default();
        k.sweep_started();
        let sets = k.key_sets(&cfg, &s);
        // The SM's CA port, the switch's port 0 and the two CAs' ports.
        let mut to: Vec<(NodeIdx, u8)> = sets
            .iter()
            .map(|r| match &r.req {
                Req::SetPortInfo { node, port, info, .. } => {
                    let guid = mkey_guid(&s, *node, *port).unwrap_or_default();
                    assert_eq!(info.m_key.0, cfg.key_for(guid));
                    assert_eq!((info.m_key_protect_bits, info.m_key_lease_period), (1, 60));
                    (*node, port.0)
                }
                other => panic!("{other:?}"),
            })
            .collect();
        to.sort_unstable();
        assert_eq!(to, [(0, 1), (1, 0), (2, 1), (3, 1)]);
        assert!(k.keying());
        assert!(k.key_sets(&cfg, &s).is_empty(), "once per sweep");
        k.keyed();
        assert!(!k.keying());
        // A port that holds its key already gets no Set.
        let key = cfg.key_for(Guid(0x102));
        if let Some(i) = s.nodes[2].ports[1].info.as_mut() {
            (i.m_key, i.m_key_protect_bits, i.m_key_lease_period) = (MKey(key), 1, 60);
        }
        k.sweep_started();
        assert_eq!(k.key_sets(&cfg, &s).len(), 3);
        k.sweep_started();
        assert!(k.key_sets(&MKeyConfig::default(), &s).is_empty(), "off");
        assert!(!k.keying());
    }

    #[test]
    fn an_smp_carries_the_key_its_port_holds_and_the_key_is_remembered() {
        let s = crate::core::testing::star(0x102, 0x103);
        let mut k = MKeys::default();
        let get = Request::sweep(ibsm_mad::DrPath::local(), Req::GetPortInfo { node: 2, port: PortNum(1) });
        assert_eq!(k.next_smp_key(&MKeyConfig::default(), &s, Guid(0x10), Some(&get)), MKey(0), "off, none held");
        k.set_held(HashMap::from([(Guid(0x102), 77)]));
        assert_eq!(k.next_smp_key(&MKeyConfig::default(), &s, Guid(0x10), Some(&get)), MKey(77));
        assert_eq!(k.sent.get(&77), Some(&Guid(0x102)));
        let cfg = per_port();
        // A switch's key guards every port of it.
        let sw = Request::sweep(ibsm_mad::DrPath::local(), Req::GetPortInfo { node: 1, port: PortNum(4) });
        assert_eq!(k.next_smp_key(&cfg, &s, Guid(0x10), Some(&sw)), MKey(cfg.key_for(Guid(0x20))));
        assert!(k.passes_own(&cfg, Guid(0x10), MKey(cfg.key_for(Guid(0x10)))));
        assert!(!k.passes_own(&cfg, Guid(0x10), MKey(1)));
        assert!(k.passes_own(&MKeyConfig::default(), Guid(0x10), MKey(1)), "off: everything passes");
    }

    #[test]
    fn keys_and_neighbours_are_learned_from_answers_and_replicated() {
        let s = crate::core::testing::star(0x102, 0x103);
        let mut k = MKeys::default();
        let shown = PortInfo { m_key: MKey(5), ..PortInfo::default() };
        k.learn_key(&s, 1, PortNum(3), &shown);
        assert!(k.held().is_empty(), "a switch's external port does not tell its key");
        k.learn_key(&s, 1, PortNum(0), &shown);
        k.learn_key(&s, 2, PortNum(1), &shown);
        assert_eq!(k.held().get(&Guid(0x20)), Some(&5));
        k.learn_key(&s, 2, PortNum(1), &PortInfo::default());
        assert_eq!(k.held().get(&Guid(0x102)), None, "no key and no protection: none");
        k.learn_neighbor(&s, None, Guid(0x10));
        k.learn_neighbor(&s, Some((1, PortNum(2))), Guid(0x102));
        assert_eq!(k.neighbors().get(&LOCAL), Some(&Guid(0x10)));
        let (held, neighbors) = k.replica();
        assert_eq!(held, [(Guid(0x20), 5)]);
        assert_eq!(neighbors, [((Guid(0x20), 2), Guid(0x102))], "not the SM's own port");
        let mut other = MKeys::default();
        other.learn_neighbor(&s, None, Guid(0x99));
        other.adopt(&held, &neighbors);
        assert_eq!(other.neighbors().get(&LOCAL), Some(&Guid(0x99)), "its own port stays its own");
        assert_eq!(other.held(), k.held());
    }

    #[test]
    fn a_refusal_of_our_key_schedules_a_sweep_after_the_lease() {
        let cfg = per_port();
        let mut s = crate::core::testing::star(0x102, 0x103);
        s.nodes[2].ports[1].lid = Lid(5);
        if let Some(i) = s.nodes[2].ports[1].info.as_mut() {
            i.m_key_lease_period = 7;
        }
        let mut k = MKeys::default();
        let get = Request::sweep(ibsm_mad::DrPath::local(), Req::GetPortInfo { node: 2, port: PortNum(1) });
        let key = k.next_smp_key(&cfg, &s, Guid(0x10), Some(&get));
        let trap = |m_key| NoticeDetails::Trap256 {
            lid: Lid(5),
            dr_slid: Lid(1),
            method: 1,
            attribute_id: 0x15,
            attribute_modifier: 1,
            m_key,
            dr_notice: true,
            dr_path_truncated: false,
            dr_hop_count: 2,
            dr_notice_return_path: [4; 30],
        };
        let ports = Ports { snapshot: None, subnet: &s };
        let ev = k.on_bad_mkey(&cfg, ports, 1_000, Lid(5), &trap(key));
        let Some(SmEvent::BadMKey { ours, count, lease_s, return_path, .. }) = ev else { panic!("{ev:?}") };
        assert!(ours);
        assert_eq!((count, lease_s, return_path), (1, Some(7), vec![4, 4]));
        let at = 1_000 + 7_000_000_000 + LEASE_MARGIN_NS;
        assert_eq!(k.poll_timeout(), Some(at));
        // Another within 10 s: counted, not reported, not rescheduled.
        assert_eq!(k.on_bad_mkey(&cfg, ports, 2_000, Lid(5), &trap(key)), None);
        assert_eq!(k.violations()[&Lid(5)].count, 2);
        assert!(!k.take_recovery(at - 1));
        assert!(k.take_recovery(at));
        assert_eq!(k.poll_timeout(), None);
        // Somebody else's key: reported, no recovery.
        let ev = k.on_bad_mkey(&cfg, ports, 20_000_000_000, Lid(5), &trap(MKey(0x1234)));
        assert!(matches!(ev, Some(SmEvent::BadMKey { ours: false, .. })), "{ev:?}");
        assert_eq!(k.poll_timeout(), None);
        assert_eq!(k.issuer_key(&cfg, ports, Lid(5)), MKey(key.0), "a TrapRepress carries the port's key");
        assert_eq!(k.issuer_key(&cfg, ports, Lid(9)), MKey(0), "unknown LID");
    }
}
