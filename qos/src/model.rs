//! The typed model of a QoS policy file, as OpenSM's `qos-policy.conf` describes it: port
//! groups, the qos-setup tables, QoS levels, full match rules and the simplified `qos-ulps`
//! rules. Plain data: no parsing, no fabric.

/// An inclusive range of numbers (`0x10-0x1f`, or a single number as a range of one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    /// First value.
    pub lo: u64,
    /// Last value (`>= lo`).
    pub hi: u64,
}

impl Range {
    /// The range of one value.
    pub const fn one(v: u64) -> Self {
        Self { lo: v, hi: v }
    }

    /// Whether `v` lies in the range.
    pub const fn contains(&self, v: u64) -> bool {
        self.lo <= v && v <= self.hi
    }
}

/// Whether any range of `ranges` holds `v`.
pub fn any_contains(ranges: &[Range], v: u64) -> bool {
    ranges.iter().any(|r| r.contains(v))
}

/// The node types a `node-type:` line may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeTypeSel {
    /// Channel adapters.
    Ca,
    /// Switches.
    Switch,
    /// Routers.
    Router,
    /// Every port.
    All,
    /// The SM's own port.
    SelfPort,
}

/// One way a port group names its ports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupMember {
    /// `port-guid:` GUIDs or GUID ranges.
    PortGuids(Vec<Range>),
    /// `port-name:` `NodeDescription/P<num>` entries.
    PortName {
        /// The node description.
        node_desc: String,
        /// The port number.
        port: u8,
    },
    /// `pkey:` ports that are members of partitions with these P_Keys (low 15 bits).
    Pkeys(Vec<Range>),
    /// `partition:` ports that are members of the partition of that name.
    Partition(String),
    /// `node-type:` entries.
    NodeTypes(Vec<NodeTypeSel>),
}

/// A `port-group` block.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PortGroup {
    /// `name:` (required, unique).
    pub name: String,
    /// `use:` free text.
    pub use_text: Option<String>,
    /// The members, in file order.
    pub members: Vec<GroupMember>,
}

/// `to:` or `from:` of an sl2vl-scope: every port (`*`) or these port numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PortSel {
    /// `*`.
    All,
    /// Port numbers.
    Ports(Vec<u8>),
}

/// A `vlarb-scope` block of `qos-setup`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct VlArbScope {
    /// `group:` names: the ports of these groups.
    pub groups: Vec<String>,
    /// `across:` names: the switch ports linked to these groups' ports.
    pub across: Vec<String>,
    /// `vl-high-limit:`.
    pub vl_high_limit: Option<u8>,
    /// `vlarb-high:` `vl:weight` pairs.
    pub vlarb_high: Vec<ibsm_mad::attrs::VlArbEntry>,
    /// `vlarb-low:` `vl:weight` pairs.
    pub vlarb_low: Vec<ibsm_mad::attrs::VlArbEntry>,
}

/// An `sl2vl-scope` block of `qos-setup`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Sl2VlScope {
    /// `group:` names.
    pub groups: Vec<String>,
    /// `across:` names.
    pub across: Vec<String>,
    /// `across-to:` names.
    pub across_to: Vec<String>,
    /// `across-from:` names.
    pub across_from: Vec<String>,
    /// `from:` input ports (default: all).
    pub from: Option<PortSel>,
    /// `to:` output ports (default: all).
    pub to: Option<PortSel>,
    /// `sl2vl-table:` 16 VLs (0..=15), SL 0 first.
    pub table: Option<[u8; 16]>,
}

/// The `qos-setup` section.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct QosSetup {
    /// `vlarb-scope` blocks, in file order.
    pub vlarb: Vec<VlArbScope>,
    /// `sl2vl-scope` blocks, in file order.
    pub sl2vl: Vec<Sl2VlScope>,
}

/// A `qos-level` block: the SL and limits a matched path query gets.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct QosLevel {
    /// `name:` (required, unique; `DEFAULT` is the level of unmatched queries).
    pub name: String,
    /// `use:` free text.
    pub use_text: Option<String>,
    /// `sl:` 0..=15 (required).
    pub sl: u8,
    /// `mtu-limit:` the largest MTU, IBA encoding 1..=5 (256..4096 bytes).
    pub mtu_limit: Option<u8>,
    /// `rate-limit:` the largest rate, IBA encoding 2..=63.
    pub rate_limit: Option<u8>,
    /// `packet-life:` 0..=31.
    pub packet_life: Option<u8>,
    /// `pkey:` P_Keys (low 15 bits) paths of this level must use.
    pub pkeys: Vec<Range>,
    /// `path-bits:` LID path bits.
    pub path_bits: Vec<Range>,
}

/// A `qos-match-rule` block: every criterion given must hold for a query to match.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MatchRule {
    /// `use:` free text.
    pub use_text: Option<String>,
    /// `qos-class:` ranges.
    pub qos_class: Vec<Range>,
    /// `source:` port group names.
    pub source: Vec<String>,
    /// `destination:` port group names.
    pub destination: Vec<String>,
    /// `service-id:` ranges.
    pub service_id: Vec<Range>,
    /// `pkey:` ranges (low 15 bits).
    pub pkey: Vec<Range>,
    /// `qos-level-name:` (required, must name a level).
    pub level: String,
}

/// What one `qos-ulps` line matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UlpMatch {
    /// `default`: queries no other rule matched.
    Default,
    /// `any, service-id`.
    AnyServiceId(Vec<Range>),
    /// `any, pkey`.
    AnyPkey(Vec<Range>),
    /// `any, target-port-guid`.
    AnyTargetPortGuid(Vec<Range>),
    /// `any, source-port-guid`.
    AnySourcePortGuid(Vec<Range>),
    /// `any, source-target-port-guid`: either end.
    AnySourceTargetPortGuid(Vec<Range>),
    /// `sdp` (no ports: every SDP port) or `sdp, port-num`.
    Sdp(Vec<Range>),
    /// `rds` or `rds, port-num`.
    Rds(Vec<Range>),
    /// `iser` or `iser, port-num`.
    Iser(Vec<Range>),
    /// `srp, target-port-guid`.
    Srp(Vec<Range>),
    /// `ipoib` (the default partition) or `ipoib, pkey`.
    Ipoib(Vec<Range>),
}

/// Service IDs of SDP: `0x000000000001PPPP` (PPPP the TCP port).
pub const SDP_SERVICE_BASE: u64 = 0x1_0000;
/// Service IDs of RDS and iSER: `0x000000000106PPPP`.
pub const RDS_ISER_SERVICE_BASE: u64 = 0x106_0000;
/// RDS's default TCP port.
pub const RDS_DEFAULT_PORT: u64 = 0x48ca;
/// iSER's default TCP port.
pub const ISER_DEFAULT_PORT: u64 = 0x0cbc;
/// The default partition's P_Key (low 15 bits), IPoIB's default.
pub const DEFAULT_PKEY: u64 = 0x7fff;

/// One `qos-ulps` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UlpRule {
    /// What it matches.
    pub matcher: UlpMatch,
    /// The SL it gives.
    pub sl: u8,
    /// 1-based line in the file (for messages).
    pub line: u32,
}

/// A parsed qos-policy.conf.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct QosPolicy {
    /// `port-groups`.
    pub port_groups: Vec<PortGroup>,
    /// `qos-setup`.
    pub setup: QosSetup,
    /// `qos-levels`.
    pub levels: Vec<QosLevel>,
    /// `qos-match-rules`, in file order.
    pub match_rules: Vec<MatchRule>,
    /// `qos-ulps`, in file order.
    pub ulps: Vec<UlpRule>,
}

impl QosPolicy {
    /// The level called `name` (names compare without regard to case, as in OpenSM).
    pub fn level(&self, name: &str) -> Option<&QosLevel> {
        self.levels.iter().find(|l| l.name.eq_ignore_ascii_case(name))
    }

    /// The port group called `name` (without regard to case, as in OpenSM).
    pub fn group(&self, name: &str) -> Option<&PortGroup> {
        self.port_groups.iter().find(|g| g.name.eq_ignore_ascii_case(name))
    }
}
