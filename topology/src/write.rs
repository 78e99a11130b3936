//! Writing a [`Topology`] as `.net` text that both [`Topology::parse_str`] and ibsim load.
//!
//! Every node is written with explicit `vendid=`, `devid=`, `sysimgguid=` and GUID lines
//! (`switchguid=X(Y)`, `caguid=`, `rtguid=`), so nothing depends on ibsim's GUID counters, and
//! every cable is written from both ends, which ibsim requires. CA port lines carry the port
//! GUID as ibnetdiscover prints it (`[1](100001)`); ibsim ignores it and uses `NodeGUID` + port,
//! so topologies meant for ibsim should keep that layout (the generators and the parser do).
//! Link attributes become ibsim options `w=`, `s=`, `e=`. Each record ends with a blank line:
//! ibsim swallows the line that ends a record.
//!
//! `parse_str(t.to_net()) == t` holds for every topology whose links are symmetric, whose node
//! ids are non-empty and hold no `"`, `#`, `@` or line break, whose descriptions are non-empty
//! and hold no `"` or line break, whose vendor ids fit 24 bits, whose `SystemImageGUIDs` are
//! non-zero, whose link attributes are single-bit encodings, whose unlinked CA ports have the
//! default GUID and whose revision is 0 (the format has no revision field). Generated
//! topologies satisfy all of that.
//!
//! ibsim refuses fabrics above its table sizes (`-N` nodes, default 2048; `-S` switches, 256;
//! `-P` ports, 13312): [`Topology::ibsim_limits`] gives the values a fabric needs, e.g.
//! `-N 30528 -S 2880 -P 168768` for the k = 48 3-level fat tree.

use core::fmt::Write as _;

use super::{NodeKind, Topology};

/// The ibsim table sizes a topology needs (`ibsim -N nodes -S switches -P ports`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IbsimLimits {
    /// Nodes (`-N`, ibsim default 2048).
    pub nodes: usize,
    /// Switches (`-S`, default 256).
    pub switches: usize,
    /// Ports, counting switch port 0 (`-P`, default 13312).
    pub ports: usize,
}

impl IbsimLimits {
    /// The ibsim command-line flags, raised only where ibsim's defaults are too small.
    pub fn args(&self) -> Vec<String> {
        let mut v = Vec::new();
        for (flag, need, default) in [("-N", self.nodes, 2048), ("-S", self.switches, 256), ("-P", self.ports, 13312)] {
            if need > default {
                v.push(flag.to_owned());
                v.push(need.to_string());
            }
        }
        v
    }
}

impl Topology {
    /// The ibsim table sizes this topology needs.
    pub fn ibsim_limits(&self) -> IbsimLimits {
        let ports = self.nodes.iter().map(|n| usize::from(n.num_ports) + usize::from(n.kind == NodeKind::Switch)).sum();
        IbsimLimits { nodes: self.nodes.len(), switches: self.switch_count(), ports }
    }

    /// The topology as `.net` text (see the module docs for what round-trips).
    pub fn to_net(&self) -> String {
        let mut out = String::with_capacity(64 + self.nodes.len() * 160);
        // `write!` into a String cannot fail; the results are ignored on purpose.
        let _ = writeln!(
            out,
            "# ibsm fabric: {} switches, {} CAs, {} links\n",
            self.switch_count(),
            self.ca_count(),
            self.link_count()
        );
        for node in &self.nodes {
            let _ = writeln!(out, "vendid={:#x}", node.vendor_id);
            let _ = writeln!(out, "devid={:#x}", node.device_id);
            let _ = writeln!(out, "sysimgguid={:#x}", node.sys_guid.0);
            let keyword = match node.kind {
                NodeKind::Switch => {
                    let _ = writeln!(out, "switchguid={:#x}({:x})", node.node_guid.0, node.port_guid(0).0);
                    "Switch"
                }
                NodeKind::Ca => {
                    let _ = writeln!(out, "caguid={:#x}", node.node_guid.0);
                    "Ca"
                }
                NodeKind::Router => {
                    let _ = writeln!(out, "rtguid={:#x}", node.node_guid.0);
                    "Rt"
                }
            };
            let _ = write!(out, "{keyword}\t{} \"{}\"", node.num_ports, node.name);
            if let Some(desc) = node.desc.as_deref().filter(|d| !d.is_empty()) {
                let _ = write!(out, "\t\t# \"{desc}\"");
            }
            out.push('\n');
            for (port, peer) in node.links.iter().enumerate().skip(1) {
                let Some(peer) = peer else { continue };
                let Some(remote) = self.nodes.get(peer.node) else { continue };
                let _ = write!(out, "[{port}]");
                if node.kind != NodeKind::Switch {
                    let p = u8::try_from(port).unwrap_or(u8::MAX);
                    let _ = write!(out, "({:x})", node.port_guid(p).0);
                }
                let _ = write!(out, "\t\"{}\"[{}]", remote.name, peer.port);
                let mut sep = '\t';
                for (key, value) in [('w', peer.attrs.width), ('s', peer.attrs.speed), ('e', peer.attrs.ext_speed)] {
                    if let Some(v) = value {
                        let _ = write!(out, "{sep}{key}={v}");
                        sep = ' ';
                    }
                }
                out.push('\n');
            }
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use ibsm_mad::Guid;

    use super::super::{LinkAttrs, NodeKind, Peer, TopoNode, Topology};

    fn pair() -> Topology {
        let mut sw = TopoNode::new(NodeKind::Switch, "sw", 4, Guid(0x20));
        let mut ca = TopoNode::new(NodeKind::Ca, "ca", 2, Guid(0x10));
        ca.desc = Some("host one".into());
        ca.vendor_id = 0x2c9;
        ca.device_id = 0x101b;
        let attrs = LinkAttrs { width: Some(8), speed: Some(2), ext_speed: None };
        sw.links[3] = Some(Peer { node: 1, port: 2, attrs });
        ca.links[2] = Some(Peer { node: 0, port: 3, attrs });
        Topology { nodes: vec![sw, ca] }
    }

    #[test]
    fn writes_ibsim_and_ibnetdiscover_forms() {
        let text = pair().to_net();
        let expected = "# ibsm fabric: 1 switches, 1 CAs, 1 links\n\n\
            vendid=0x0\ndevid=0x0\nsysimgguid=0x20\nswitchguid=0x20(20)\nSwitch\t4 \"sw\"\n\
            [3]\t\"ca\"[2]\tw=8 s=2\n\n\
            vendid=0x2c9\ndevid=0x101b\nsysimgguid=0x10\ncaguid=0x10\nCa\t2 \"ca\"\t\t# \"host one\"\n\
            [2](12)\t\"sw\"[3]\tw=8 s=2\n\n";
        assert_eq!(text, expected);
    }

    #[test]
    fn ibsim_limits_count_switch_port_zero() {
        let t = pair();
        let l = t.ibsim_limits();
        assert_eq!((l.nodes, l.switches, l.ports), (2, 1, 5 + 2));
        assert!(l.args().is_empty());
        let big = super::super::IbsimLimits { nodes: 30528, switches: 2880, ports: 168_768 };
        assert_eq!(big.args(), ["-N", "30528", "-S", "2880", "-P", "168768"]);
    }

    #[test]
    fn round_trips() {
        let t = pair();
        assert_eq!(Topology::parse_str(&t.to_net(), "t").as_ref(), Ok(&t));
    }
}
