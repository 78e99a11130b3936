//! M_Keys: which key each port should hold, which key every SMP must carry, and the bad-M_Key
//! traps (256) ports raise.
//!
//! Owns the M_Key policy ([`MKeyMode`]: off, one key per port derived from a secret, or one key
//! for the whole subnet), the key derivation (SipHash-2-4 of the port GUID under the 128-bit
//! secret: every port's key differs and one leaked key says nothing about another), what the SM
//! believes each port holds ([`MKeys::held`]: keys it set, keys ports revealed in PortInfo, keys
//! imported from OpenSM's `guid2mkey`), the neighbour map that names the port at the end of a
//! directed route before its NodeInfo is read (a port at protect level 2 or 3 answers no Get
//! without its key), and the count of bad-M_Key traps per source. Files are the caller's: the
//! core is given the secret and the known keys, and hands the held keys back to be saved.
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

use super::Sm;
use super::events::SmEvent;
use super::state::NodeIdx;
use super::transactions::{Req, Request};

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

/// What the SM knows about M_Keys on the fabric.
#[derive(Debug, Clone, Default)]
pub struct MKeys {
    /// The key each port (by port GUID) is believed to hold.
    pub held: HashMap<Guid, u64>,
    /// (node GUID, port) to the GUID of the port the cable there leads to (the arrival port of
    /// a CA, the port GUID of a switch); [`LOCAL`] names the SM's own port.
    pub neighbors: HashMap<(Guid, u8), Guid>,
    /// Bad-M_Key traps by the LID that raised them.
    pub violations: BTreeMap<Lid, Violations>,
    /// When a port that refused this SM's key drops its protection (its lease ends): a sweep
    /// is due then, whatever the re-sweep interval says.
    pub recovery_at: Option<u64>,
    /// Keys this SM has sent, with the port each was for (at most one entry per port).
    pub sent: HashMap<u64, Guid>,
    /// The key Sets of this sweep are in flight: the rest of the configuration waits.
    pub keying: bool,
    /// This sweep already sent its key Sets (they are sent once per sweep).
    pub keyed_this_sweep: bool,
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
}

impl Sm {
    /// The GUID of the port whose M_Key guards `r`'s SMP: a switch's port 0, or the CA port the
    /// route enters by; for a node not read yet, what the neighbour map predicts.
    fn key_port(&self, r: &Request) -> Option<Guid> {
        let at = |n: NodeIdx, p: Option<PortNum>| -> Option<Guid> {
            let node = self.subnet.node(n)?;
            if node.is_switch() {
                return Some(node.info.port_guid);
            }
            let p = p.unwrap_or(node.info.local_port_num);
            self.mkey_guid(n, p).or(Some(node.info.port_guid))
        };
        match &r.req {
            Req::NodeInfo { from: None } if self.port_guid == Guid(0) => self.mkeys.neighbors.get(&LOCAL).copied(),
            Req::NodeInfo { from: None } => Some(self.port_guid),
            Req::NodeInfo { from: Some((n, p)) } | Req::ConfirmNodeInfo { from: (n, p) } => {
                let g = self.subnet.node(*n)?.info.node_guid;
                self.mkeys.neighbors.get(&(g, p.0)).copied()
            }
            Req::NodeDesc { node }
            | Req::GetSwitchInfo { node }
            | Req::LightSwitchInfo { node }
            | Req::GetLft { node, .. }
            | Req::SetSwitchInfo { node, .. }
            | Req::SetLft { node, .. } => at(*node, None),
            Req::GetPortInfo { node, port }
            | Req::CheckPortInfo { node, port }
            | Req::SetPortInfo { node, port, .. }
            | Req::SetPKeys { node, port, .. }
            | Req::GetSmInfo { node, port, .. } => at(*node, Some(*port)),
            Req::PollMaster { master: g, .. } | Req::SetSmInfo { to: g, .. } | Req::LightSmInfo { guid: g, .. } => {
                Some(*g)
            }
            Req::ReadNodeDesc { guid, port } => self.subnet.by_guid.get(guid).and_then(|&i| at(i, Some(*port))),
            Req::GetVlTable { node, port, switch: false, .. } => {
                self.subnet.by_guid.get(node).and_then(|&i| at(i, Some(*port)))
            }
            Req::GetVlTable { node: switch, .. } | Req::SetMft { switch, .. } => {
                self.subnet.by_guid.get(switch).and_then(|&i| self.subnet.node(i)).map(|n| n.info.port_guid)
            }
        }
    }

    /// Whether an SMP carrying `key` passes this SM's own port's M_Key check (no key, or
    /// protect bits 0, let every SMP pass).
    pub(super) fn passes_own_mkey(&self, key: MKey) -> bool {
        let cfg = &self.cfg.m_key;
        if cfg.mode == MKeyMode::Off || cfg.protect == 0 {
            return true;
        }
        let own = self.mkeys.key_to_use(cfg, self.port_guid);
        own.0 == 0 || own == key
    }

    /// The M_Key a TrapRepress to the port at `lid` carries (the key it holds, when known).
    pub(super) fn issuer_mkey(&self, lid: Lid) -> MKey {
        if self.cfg.m_key.mode == MKeyMode::Off && self.mkeys.held.is_empty() {
            return MKey(0);
        }
        self.port_by_lid(lid).map_or(MKey(0), |(g, _)| self.mkeys.key_to_use(&self.cfg.m_key, g))
    }

    /// The end port with base LID `lid`: its GUID and PortInfo as last read. From the SA's
    /// snapshot, or the subnet being swept before the first one.
    fn port_by_lid(&self, lid: Lid) -> Option<(Guid, Option<PortInfo>)> {
        if let Some(s) = &self.snapshot {
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

    /// The M_Key each port is believed to hold (by port GUID), to persist in the state
    /// directory as `guid2mkey`.
    pub fn mkeys_held(&self) -> &HashMap<Guid, u64> {
        &self.mkeys.held
    }

    /// Takes the keys ports are known to hold: an earlier run's `guid2mkey`, or OpenSM's.
    pub fn set_mkeys_held(&mut self, keys: HashMap<Guid, u64>) {
        self.mkeys.held = keys;
    }

    /// The neighbour map (node GUID, port) to the port GUID cabled there, to persist: after a
    /// restart it names the ports at protect level 2 or 3 before their NodeInfo can be read.
    pub fn mkey_neighbors(&self) -> &HashMap<(Guid, u8), Guid> {
        &self.mkeys.neighbors
    }

    /// Takes a neighbour map persisted by an earlier run ([`Sm::mkey_neighbors`]).
    pub fn set_mkey_neighbors(&mut self, neighbors: HashMap<(Guid, u8), Guid>) {
        self.mkeys.neighbors = neighbors;
    }

    /// Bad-M_Key traps (256) received, by the LID that raised them.
    pub fn mkey_violations(&self) -> &BTreeMap<Lid, Violations> {
        &self.mkeys.violations
    }

    /// The GUID whose key guards `node`'s `port`: the switch's port GUID for any switch port,
    /// the port's own for a CA.
    pub(super) fn mkey_guid(&self, node: NodeIdx, port: PortNum) -> Option<Guid> {
        let n = self.subnet.node(node)?;
        if n.is_switch() { Some(n.info.port_guid) } else { n.port(port).and_then(|r| r.guid) }
    }

    /// The M_Key the next SMP ([`super::transactions::Transactions::peek`]) carries; a key
    /// other than 0 is remembered with its port, so that a bad-M_Key trap about it is known as
    /// this SM's own.
    pub(super) fn next_smp_key(&mut self) -> MKey {
        if self.cfg.m_key.mode == MKeyMode::Off && self.mkeys.held.is_empty() {
            return MKey(0);
        }
        let Some(guid) = self.tx.peek().and_then(|r| self.key_port(r)) else { return MKey(0) };
        let key = self.mkeys.key_to_use(&self.cfg.m_key, guid);
        if key.0 != 0 {
            self.mkeys.sent.insert(key.0, guid);
        }
        key
    }

    /// PortInfo Sets that give each CA port and switch port 0 whose M_Key, protect bits or lease
    /// differ from the policy its new ones, and nothing else. They go before any other Set of
    /// the sweep: an SMP sent to a port with its old key while the key changes would be refused
    /// (and start the port's lease), and a switch's key guards all its ports.
    pub(super) fn key_sets(&self) -> Vec<Request> {
        use super::transactions::PortStep;
        let cfg = &self.cfg.m_key;
        if cfg.mode == MKeyMode::Off {
            return Vec::new();
        }
        let mut sets = Vec::new();
        for (i, n) in self.subnet.nodes.iter().enumerate().filter(|(_, n)| !n.carried) {
            for p in n.end_ports() {
                let (Some(info), Some(guid)) = (n.port(p).and_then(|r| r.info), self.mkey_guid(i, p)) else { continue };
                let want = cfg.key_for(guid);
                if info.m_key.0 == want
                    && info.m_key_protect_bits == cfg.protect & 3
                    && info.m_key_lease_period == cfg.lease_s
                {
                    continue;
                }
                let mut set = super::bringup::as_set(&info);
                self.apply_mkey(Some(guid), &mut set);
                let req = Req::SetPortInfo { node: i, port: p, info: Box::new(set), step: PortStep::Configure };
                sets.push(Request::sweep(n.path_for(p), req));
            }
        }
        sets
    }

    /// Writes the port's M_Key, protect bits and lease into a PortInfo Set of a CA port or a
    /// switch's port 0 (`guid`), when M_Keys are on.
    pub(super) fn apply_mkey(&self, guid: Option<Guid>, info: &mut PortInfo) {
        let cfg = &self.cfg.m_key;
        let Some(guid) = guid.filter(|_| cfg.mode != MKeyMode::Off) else { return };
        info.m_key = MKey(cfg.key_for(guid));
        info.m_key_protect_bits = cfg.protect & 3;
        info.m_key_lease_period = cfg.lease_s;
    }

    /// A PortInfo answer from `node`'s `port`: a key it shows is the key it holds; no key and
    /// no protection means none. Of a switch only port 0's fields count (the switch's key; the
    /// external ports' copies may read as zero).
    pub(super) fn learn_mkey(&mut self, node: NodeIdx, port: PortNum, info: &PortInfo) {
        let is_switch = self.subnet.node(node).is_some_and(super::state::Node::is_switch);
        let Some(guid) = self.mkey_guid(node, port).filter(|_| !is_switch || port.0 == 0) else { return };
        if info.m_key.0 != 0 {
            self.mkeys.held.insert(guid, info.m_key.0);
        } else if info.m_key_protect_bits == 0 {
            self.mkeys.held.remove(&guid);
        }
    }

    /// NodeInfo read through `from` (node, port): the port at the other end is `guid`; read
    /// with no `from`, it is the SM's own port.
    pub(super) fn learn_neighbor(&mut self, from: Option<(NodeIdx, PortNum)>, guid: Guid) {
        let key = match from {
            None => LOCAL,
            Some((n, p)) => {
                let Some(node) = self.subnet.node(n) else { return };
                (node.info.node_guid, p.0)
            }
        };
        self.mkeys.neighbors.insert(key, guid);
    }

    /// A trap 256 (bad M_Key) from `src`: counted per source, reported (at most every 10 s per
    /// source) with the port, the offending SMP and its route. When the key was one this SM
    /// sent, the port holds a key the SM does not know: it recovers after the port's lease
    /// (protect bits drop to 0 and the port shows its key), so a sweep is scheduled then: the
    /// port's lease as read, or the configured one.
    pub(super) fn on_bad_mkey(&mut self, src: Lid, details: &NoticeDetails) {
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
            return;
        };
        if !self.mkeys.count_violation(src, self.now, REPORT_EVERY_NS) {
            return;
        }
        // The port behind the LID, and whether the refused key is the one this SM sends it.
        // The refused key is one this SM sent (the port holds another), or someone else's.
        let ours = self.mkeys.sent.contains_key(&m_key.0) && m_key.0 != 0;
        let port = self.port_by_lid(lid);
        let hops = usize::from(dr_hop_count).min(dr_notice_return_path.len());
        let path = if dr_notice { dr_notice_return_path[..hops].to_vec() } else { Vec::new() };
        let lease = port.and_then(|(_, info)| info).map(|i| i.m_key_lease_period);
        let count = self.mkeys.violations.get(&src).map_or(0, |v| v.count);
        self.events.push_back(SmEvent::BadMKey {
            lid,
            from: dr_slid,
            method,
            attr_id: attribute_id,
            m_key,
            return_path: path,
            count,
            ours,
            lease_s: lease,
        });
        // The port's lease started with this refusal. Unread (a Get needs the key at protect 2
        // and 3), it is taken to be the configured one: the key came from this SM's policy.
        if ours && let Some(l) = lease.or(Some(self.cfg.m_key.lease_s)).filter(|&l| l > 0) {
            let at = self.now.saturating_add(u64::from(l) * 1_000_000_000 + LEASE_MARGIN_NS);
            self.mkeys.recovery_at = Some(self.mkeys.recovery_at.map_or(at, |t| t.min(at)));
        }
    }
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
}
