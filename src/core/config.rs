//! The core's configuration: [`SmConfig`], every tunable of the SM with its documented
//! default, and the values those defaults come from (OpenSM's SM_Key, the link-local prefix).
//! It is plain data: where the values come from (flags, `ibsm.toml`, reloads) is the caller's.

use std::collections::HashMap;
use std::sync::Arc;

use ibsm_mad::Guid;

use super::mkeys;

/// Tunables of the core. `Default` gives the documented defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmConfig {
    /// SMPs in flight at once (default 64; OpenSM's default is 4).
    pub max_smps_in_flight: usize,
    /// Time to wait for an SMP's answer before retrying, ns (default 200 ms, as OpenSM).
    pub smp_timeout_ns: u64,
    /// Retries after the first try (default 3, as OpenSM).
    pub smp_retries: u32,
    /// LID mask control, 0..=7 (default 0): every end port gets `2^lmc` LIDs.
    pub lmc: u8,
    /// PortInfo.SubnetTimeout given to every end port (default 18, as OpenSM).
    pub subnet_timeout: u8,
    /// The highest rate code the SA gives in path records and new multicast groups (OpenSM's
    /// `max_rate_enum`, 2..=24; default `None`: any, as OpenSM's 63).
    pub max_rate_enum: Option<u8>,
    /// SwitchInfo.LifeTimeValue given to every switch (default 18, as OpenSM).
    pub switch_life_time: u8,
    /// Port settings written with PortInfo: HOQ lifetimes, VL stall counts, `max-op-vls`,
    /// error thresholds, forced speeds and widths (default OpenSM's).
    pub ports: super::port_settings::PortConfig,
    /// The babbling-port policy: a port sending too many traps is disabled for a while
    /// (default off, as OpenSM's `babbling_port_policy`).
    pub babbling: super::babbling::BabblingConfig,
    /// Routing engines in the `ibsm-routing` registry, tried in order until one routes the
    /// fabric (default `["ftree", "updn", "minhop"]`: fat-tree routing where the fabric is a fat
    /// tree, deadlock-free up/down elsewhere, min-hop as the last resort).
    pub routing_engine: Vec<String>,
    /// What the engines are told beyond the fabric: root switches (`root-guid-file`).
    pub routing_options: ibsm_routing::EngineOptions,
    /// After an incomplete sweep, start another one this much later, ns (default 10 s);
    /// `None` never re-sweeps.
    pub resweep_interval_ns: Option<u64>,
    /// Interval of light sweeps (every switch's SwitchInfo; a change brings a heavy sweep), ns;
    /// `None`: none.
    pub sweep_interval_ns: Option<u64>,
    /// Subnet prefix programmed into every port's PortInfo.GidPrefix (default
    /// 0xfe80000000000000, the link-local prefix, as OpenSM).
    pub subnet_prefix: u64,
    /// SM priority, 0..=15, reported in SMInfo (default 0, as OpenSM).
    pub priority: u8,
    /// SM_Key, shown in SMInfo to requesters that present it or pass this SM's port's M_Key
    /// check; SMs obey each other's controls, and take part in each other's elections, only
    /// when their keys match (default 1, OpenSM's default, so that the two cooperate out of the
    /// box; set your own with `sm-key-file`).
    pub sm_key: u64,
    /// SA requests per second each requesting port may send before it gets BUSY (default
    /// 50,000; 0: no limit).
    pub sa_rate_limit: u32,
    /// IPv6 solicited-node multicast groups share one MLID per partition and scope (OpenSM's
    /// `consolidate_ipv6_snm_req`; default off, as OpenSM).
    pub consolidate_ipv6_snm: bool,
    /// Bits 32..39 of the alias GUIDs the SA assigns (OpenSM's `sm_assigned_guid`; default 0).
    pub sm_assigned_guid: u8,
    /// SA key: SA requests that carry it are trusted (default 1, OpenSM's default, which
    /// `saquery` and OpenSM's clients send).
    pub sa_key: u64,
    /// M_Keys: mode, protect bits, lease and the per-port secret (default off, as OpenSM).
    pub m_key: mkeys::MKeyConfig,
    /// The priority a standby takes when it takes the subnet over from a dead master, so that
    /// the old master, when it comes back, stands by instead of taking the subnet back (as
    /// OPA-FM offers); `None` (the default) keeps the configured priority, and the better SM
    /// gets the subnet back by handover.
    pub elevated_priority: Option<u8>,
    /// A standby polls the master's SMInfo this often, ns (default 200 ms).
    pub sm_poll_interval_ns: u64,
    /// Polls in a row without an answer after which a standby takes over (default 3: with the
    /// SMP timeout, a dead master is noticed within about 1.2 s).
    pub sm_poll_retries: u32,
    /// A master whose ActCount stays the same this long is taken for dead, ns (default 25 s:
    /// OpenSM raises its count once per 10 s sweep).
    pub sm_act_stall_ns: u64,
    /// Partition policy (default: OpenSM's policy without a file, the default partition 0x7FFF
    /// with every port a full member).
    pub partitions: ibsm_partitions::Policy,
    /// Partition enforcement on the switch ports facing CAs and routers (default both
    /// directions, as OpenSM's `part_enforce`).
    pub part_enforce: PartEnforce,
    /// A port may hold both the full and the limited key of one partition (OpenSM's
    /// `allow_both_pkeys`; default off: a port's last entry in a partition wins, as OpenSM).
    pub allow_both_pkeys: bool,
    /// QoS: SL2VL and VL arbitration tables, OperationalVLs and VLHighLimit on every port
    /// (`qos-policy-file` or `--qos-policy`; default `None`: off, the ports' tables untouched).
    pub qos: Option<super::qos::QosSetting>,
    /// SL2VL in the one-Set form (all input ports of an output port at once) on switches that
    /// advertise OptimizedSLtoVLMappingProgramming (`use-optimized-slvl`; default off, as OpenSM).
    pub use_optimized_slvl: bool,
    /// The planned cabling every sweep is compared with (`expected-topology`; default none).
    pub expected_topology: Option<Arc<ibsm_topology::Topology>>,
    /// Leave both ends of a cable the plan says goes elsewhere unarmed and unrouted (default
    /// false: report only).
    pub refuse_miscabled: bool,
    /// The key of the SMPs' TID permutation (`core::transactions::tid_of`): `ibsm run` draws
    /// one at random at start; the default, 0, keeps simulations repeatable.
    pub tid_key: u64,
    /// The performance manager: its interval (`perf-interval-s`, default 10 s; 0: off), window
    /// and error thresholds.
    pub perf: super::perf::PerfConfig,
    /// Names to show nodes by (`node-name-map`, infiniband-diags' node name map; default none):
    /// for the operator's views only (status, the dumps, the page, logs); the SA still answers
    /// each node's own NodeDescription.
    pub node_names: NodeNames,
}

/// Names by NodeGUID for display (`node-name-map`); cheap to clone, compared by content.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeNames(Option<Arc<HashMap<Guid, String>>>);

impl NodeNames {
    /// The names of `map` (none when it is empty).
    pub fn new(map: HashMap<Guid, String>) -> NodeNames {
        NodeNames((!map.is_empty()).then(|| Arc::new(map)))
    }

    /// The name the map gives `guid`, if any.
    pub fn get(&self, guid: Guid) -> Option<&str> {
        self.0.as_ref()?.get(&guid).map(String::as_str)
    }

    /// The name to show for the node `guid` whose NodeDescription is `desc`: the map's, else
    /// `desc`.
    pub fn show<'a>(&'a self, guid: Guid, desc: &'a str) -> &'a str {
        self.get(guid).unwrap_or(desc)
    }

    /// The nodes it gives `name`, in GUID order.
    pub fn named(&self, name: &str) -> Vec<Guid> {
        let mut found: Vec<Guid> =
            self.0.iter().flat_map(|m| m.iter()).filter(|(_, n)| n.as_str() == name).map(|(g, _)| *g).collect();
        found.sort_unstable();
        found
    }

    /// How many nodes it names.
    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |m| m.len())
    }

    /// Whether it names none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Which directions a switch port facing a CA enforces partitions in (OpenSM's `part_enforce`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PartEnforce {
    /// Inbound and outbound.
    #[default]
    Both,
    /// Packets entering the switch only.
    In,
    /// Packets leaving the switch only.
    Out,
    /// No enforcement: the switch ports get no P_Key tables and the enforcement bits are off.
    Off,
}

impl PartEnforce {
    /// Parses `both`, `in`, `out` or `off`.
    pub fn parse(text: &str) -> Option<PartEnforce> {
        match text {
            "both" => Some(PartEnforce::Both),
            "in" => Some(PartEnforce::In),
            "out" => Some(PartEnforce::Out),
            "off" => Some(PartEnforce::Off),
            _ => None,
        }
    }

    /// (inbound, outbound) enforcement bits.
    pub const fn bits(self) -> (bool, bool) {
        match self {
            PartEnforce::Both => (true, true),
            PartEnforce::In => (true, false),
            PartEnforce::Out => (false, true),
            PartEnforce::Off => (false, false),
        }
    }
}

impl Default for SmConfig {
    fn default() -> Self {
        SmConfig {
            max_smps_in_flight: 64,
            smp_timeout_ns: 200_000_000,
            smp_retries: 3,
            lmc: 0,
            subnet_timeout: 18,
            max_rate_enum: None,
            switch_life_time: 18,
            ports: super::port_settings::PortConfig::default(),
            babbling: super::babbling::BabblingConfig::default(),
            routing_engine: ibsm_routing::chain::Chain::DEFAULT.iter().map(|s| (*s).to_owned()).collect(),
            routing_options: ibsm_routing::EngineOptions::default(),
            resweep_interval_ns: Some(10_000_000_000),
            sweep_interval_ns: Some(10_000_000_000),
            subnet_prefix: DEFAULT_SUBNET_PREFIX,
            priority: 0,
            sm_key: DEFAULT_SM_KEY,
            sa_rate_limit: 50_000,
            consolidate_ipv6_snm: false,
            sm_assigned_guid: 0,
            sa_key: crate::sa::DEFAULT_SA_KEY,
            partitions: ibsm_partitions::Policy::no_file(),
            part_enforce: PartEnforce::Both,
            allow_both_pkeys: false,
            use_optimized_slvl: false,
            qos: None,
            m_key: mkeys::MKeyConfig::default(),
            elevated_priority: None,
            sm_poll_interval_ns: 200_000_000,
            sm_poll_retries: 3,
            sm_act_stall_ns: 25_000_000_000,
            expected_topology: None,
            refuse_miscabled: false,
            tid_key: 0,
            perf: super::perf::PerfConfig::default(),
            node_names: NodeNames::default(),
        }
    }
}

/// OpenSM's default SM_Key.
pub const DEFAULT_SM_KEY: u64 = 1;

/// The link-local subnet prefix, fe80::/64.
pub const DEFAULT_SUBNET_PREFIX: u64 = 0xfe80_0000_0000_0000;
