//! The bench the fabric tests share: a two-switch, four-CA fabric with an SM agent at H1, raw
//! SMP helpers, and a bring-up by hand (LIDs, LFTs, Active) so that LID-routed MADs flow.
#![allow(dead_code)]

use ibsm_mad::attrs::{LinearForwardingTable, PhysPortState, PortInfo, PortState, SwitchInfo};
use ibsm_mad::header::Mad;
use ibsm_mad::smp::{DrSmp, SmpRepr};
use ibsm_mad::{Attribute, DrPath, Lid, PortNum, ids};
use ibsm_sim::fabric::{AgentId, Dest, Fabric, SimConfig};
use ibsm_sim::topology::Topology;

/// Two switches in a line, two CAs on each:
/// H1 - S1[1], H2 - S1[2], S1[3] - S2[3], H3 - S2[1], H4 - S2[2].
pub const NET: &str = r#"
Switch 4 "S1"
[1] "H1"[1]
[2] "H2"[1]
[3] "S2"[3]

Switch 4 "S2"
[1] "H3"[1]
[2] "H4"[1]
[3] "S1"[3]

Hca 1 "H1"
[1] "S1"[1]

Hca 1 "H2"
[1] "S1"[2]

Hca 1 "H3"
[1] "S2"[1]

Hca 1 "H4"
[1] "S2"[2]
"#;

pub struct Bench {
    pub f: Fabric,
    pub sm: AgentId,
    pub tid: u64,
    pub topo: Topology,
    /// MADs that reached the SM and were not the awaited response (traps, stray answers).
    pub unsolicited: Vec<ibsm_sim::fabric::Received>,
}

/// A reply: status and the 64 data bytes.
pub type Reply = (u16, [u8; 64]);

impl Bench {
    pub fn new(seed: u64) -> Bench {
        Bench::with_net(NET, seed)
    }

    /// A bench on the fabric `net` (in `.net` form), with the SM agent at H1 port 1.
    pub fn with_net(net: &str, seed: u64) -> Bench {
        let topo = Topology::parse_str(net, "test.net").expect("test topology parses");
        let mut f = Fabric::new(&topo, SimConfig { seed, ..SimConfig::default() });
        let h1 = topo.find("H1").expect("H1");
        let sm = f.attach(h1, 1).expect("attach at H1 port 1");
        f.set_is_sm(sm, true);
        Bench { f, sm, tid: 0, topo, unsolicited: Vec::new() }
    }

    pub fn node(&self, name: &str) -> usize {
        self.topo.find(name).expect("node exists")
    }

    pub fn run(&mut self) {
        let limit = self.f.now().plus(10_000_000_000);
        self.f.run_until_idle(limit);
    }

    /// Sends `smp`, runs the fabric, returns the matching response (by TID) if one came back.
    pub fn exchange(&mut self, smp: SmpRepr, dest: Dest) -> Option<Reply> {
        let tid = smp.tid;
        self.f.send(self.sm, &smp.to_bytes(), dest);
        self.run();
        let mut found = None;
        while let Some(r) = self.f.recv(self.sm) {
            let h = Mad::new_unchecked(&r.mad[..]);
            if h.method().is_response() && h.tid() & 0xffff_ffff == tid {
                let status = if h.mgmt_class().raw() == ids::class::SUBN_DR {
                    DrSmp::new_unchecked(&r.mad[..]).status()
                } else {
                    h.status()
                };
                let mut data = [0u8; 64];
                data.copy_from_slice(&r.mad[64..128]);
                found = Some((status, data));
            } else {
                self.unsolicited.push(r);
            }
        }
        found
    }

    pub fn next_tid(&mut self) -> u64 {
        self.tid += 1;
        self.tid
    }

    pub fn dr_get(&mut self, path: &[u8], attr: u16, attr_mod: u32) -> Option<Reply> {
        let tid = self.next_tid();
        let p = DrPath::new(path).expect("path");
        self.exchange(SmpRepr::get_dr(&p, attr, attr_mod, tid), Dest { dlid: Lid::PERMISSIVE, qpn: 0 })
    }

    pub fn dr_set(&mut self, path: &[u8], attr: u16, attr_mod: u32, data: [u8; 64]) -> Option<Reply> {
        let tid = self.next_tid();
        let p = DrPath::new(path).expect("path");
        self.exchange(SmpRepr::set_dr(&p, attr, attr_mod, tid, data), Dest { dlid: Lid::PERMISSIVE, qpn: 0 })
    }

    pub fn lid_get(&mut self, dlid: u16, attr: u16, attr_mod: u32) -> Option<Reply> {
        let tid = self.next_tid();
        self.exchange(SmpRepr::get_lid(attr, attr_mod, tid), Dest { dlid: Lid(dlid), qpn: 0 })
    }

    pub fn port_info(&mut self, path: &[u8], port: u32) -> PortInfo {
        let (st, d) = self.dr_get(path, ids::attr::PORT_INFO, port).expect("PortInfo answered");
        assert_eq!(st, 0);
        PortInfo::parse(&d).expect("PortInfo parses")
    }

    /// Read-modify-write of PortInfo with `edit`; returns the status.
    pub fn set_port(&mut self, path: &[u8], port: u32, edit: impl FnOnce(&mut PortInfo)) -> u16 {
        let mut pi = self.port_info(path, port);
        pi.port_state = PortState::NoChange;
        pi.port_physical_state = PhysPortState::NoChange;
        edit(&mut pi);
        let mut data = [0u8; 64];
        pi.emit(&mut data);
        self.dr_set(path, ids::attr::PORT_INFO, port, data).expect("PortInfo Set answered").0
    }

    /// Brings the fabric up by hand: LIDs H1=1 S1=2 S2=3 H2=4 H3=5 H4=6, SM LID 1, LFTs, Active.
    pub fn bring_up(&mut self) {
        // (path, port, lid) for every management port.
        let mgmt: [(&[u8], u32, u16); 6] =
            [(&[], 1, 1), (&[1], 0, 2), (&[1, 3], 0, 3), (&[1, 2], 1, 4), (&[1, 3, 1], 1, 5), (&[1, 3, 2], 1, 6)];
        for (path, port, lid) in mgmt {
            let st = self.set_port(path, port, |pi| {
                pi.lid = Lid(lid);
                pi.master_sm_lid = Lid(1);
            });
            assert_eq!(st, 0, "set LID {lid}");
        }
        // LFTs: S1 reaches 1 via 1, 4 via 2, 3/5/6 via 3; S2 reaches 5 via 1, 6 via 2, 1/2/4 via 3.
        let s1 = [(1u16, 1u8), (2, 0), (3, 3), (4, 2), (5, 3), (6, 3)];
        let s2 = [(1u16, 3u8), (2, 3), (3, 0), (4, 3), (5, 1), (6, 2)];
        for (path, table) in [(&[1u8][..], s1), (&[1u8, 3][..], s2)] {
            let mut lft = LinearForwardingTable::unrouted();
            for (lid, port) in table {
                lft.ports[usize::from(lid)] = PortNum(port);
            }
            assert_eq!(self.dr_set(path, ids::attr::LFT, 0, to64(&lft)).expect("LFT").0, 0);
            let (st, d) = self.dr_get(path, ids::attr::SWITCH_INFO, 0).expect("SwitchInfo");
            assert_eq!(st, 0);
            let mut si = SwitchInfo::parse(&d).expect("SwitchInfo parses");
            si.linear_fdb_top = Lid(6);
            assert_eq!(self.dr_set(path, ids::attr::SWITCH_INFO, 0, to64(&si)).expect("SwitchInfo Set").0, 0);
        }
        // Every linked port (both ends): Armed, then Active.
        let links: [(&[u8], u32); 10] = [
            (&[], 1),
            (&[1], 1),
            (&[1], 2),
            (&[1], 3),
            (&[1, 3], 3),
            (&[1, 3], 1),
            (&[1, 3], 2),
            (&[1, 2], 1),
            (&[1, 3, 1], 1),
            (&[1, 3, 2], 1),
        ];
        for target in [PortState::Armed, PortState::Active] {
            for (path, port) in links {
                let st = self.set_port(path, port, |pi| pi.port_state = target);
                assert_eq!(st, 0, "{target:?} at {path:?} port {port}");
            }
        }
    }
}

pub fn to64<A: Attribute>(a: &A) -> [u8; 64] {
    let mut d = [0u8; 64];
    a.emit(&mut d);
    d
}
