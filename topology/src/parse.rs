//! Reading `.net` fabric descriptions: the format ibsim loads and `ibnetdiscover` prints.
//!
//! Accepted lines (leading and trailing whitespace is ignored; `\n` or `\r\n` endings):
//!
//! * node headers `Switch|Hca|Ca|Rt <ports> "<id>"`, optionally followed by a `#` comment that
//!   holds the `NodeDescription` (`# "desc"`, or bare text) and ibnetdiscover's
//!   `base port 0 lid 1 lmc 0` (LIDs and LMC are run-time state and are ignored);
//! * `vendid=`, `devid=`, `sysimgguid=` (for the next node), and the GUID bases
//!   `switchguid=X(Y)`, `caguid=X`, `hcaguids=X`, `rtguid=X`, or `...+N` relative to the last
//!   absolute base. The next node of that kind takes the base as its `NodeGUID`; `(Y)` is the
//!   switch's port GUID;
//! * port lines `[p] "remote"[rp]`, with ibnetdiscover's `[p](portguid)`, `"remote"[rp](guid)`,
//!   `[ext N]` markings and trailing `# "desc" lid N 4xQDR` comments, and ibsim's `w=`, `s=`,
//!   `e=` options (`LinkWidthEnabled`, `LinkSpeedEnabled` and `LinkSpeedExtEnabled` masks). As in
//!   ibsim, an ibnetdiscover rate in the comment overrides the options; `[rp]` defaults to 1.
//!   A port line belongs to the closest node header above it in the same file;
//! * `width=`, `speed=`, `extspeed=`: default masks for the ports of nodes that follow;
//! * `include FILE` / `include "FILE"`, resolved relative to the including file by
//!   [`Topology::load`] or by the caller's resolver; cycles and nesting deeper than
//!   [`MAX_INCLUDE_DEPTH`] are errors;
//! * comments, blank lines, `pdebug=`, `ibnetdiscover -g`/`-s` decorations (`Chassis ...`,
//!   `Non-Chassis Nodes`, `Hostname: ...`, `DR path ...`);
//! * `do <command>` lines are **ignored**: they are ibsim console commands (fault injection
//!   while loading), and a [`Topology`] is a static description. Run such commands through the
//!   simulator's own fault API instead.
//!
//! Anything else is an error, unlike ibsim, which silently skips unknown lines (so a typo such
//! as `Swich` is reported instead of dropping a node). An error quotes the offending text only
//! when the file has shown a `.net` line (anything but a comment, a blank or a decoration)
//! before it; otherwise it names the file and the line only ([`TopoError::NotNet`]), so that
//! `include /etc/shadow` does not print the shadow file's first line. ibsim's `module=` prefixes and `@` port
//! aliases are reported as unsupported.
//!
//! Links may be listed from one end or from both; both ends must agree, and a port may not be
//! claimed by two cables. A node cabled to itself (on one port, or a loopback cable between two
//! of its ports) is an error. Width and speed of a link are the best values both ends enable (as
//! ibsim computes them); a link with no common width or speed is an error.
//!
//! GUIDs follow ibsim, so that this simulator and ibsim agree on the same file: without a
//! GUID base line, CAs are numbered from 0x100000, switches from 0x200000 and routers from 0;
//! each switch takes one GUID, each CA or router `ports + 1` (its `NodeGUID`, then one per
//! port). A switch's port GUID is its `NodeGUID`, a CA port's is `NodeGUID` + port number,
//! unless the file gives them. Duplicate node ids and `NodeGUIDs` are errors.

use std::collections::{HashMap, HashSet};
use std::path::{Component, Path, PathBuf};

use ibsm_mad::Guid;

use super::error::{Endpoint, LinkConflict, Pos, TopoError};
use super::lines::{self, Line, LineError, PortLine};
use super::{LinkAttrs, NodeKind, Peer, TopoNode, Topology};

/// How deep `include` may nest.
pub const MAX_INCLUDE_DEPTH: usize = 16;

/// An include resolver: given the file name as written and the origin of the including file,
/// returns the included file's origin (used in messages and for cycle detection) and its text,
/// or a reason why it cannot.
pub type Resolver<'r> = dyn FnMut(&str, &str) -> Result<(String, String), String> + 'r;

impl Topology {
    /// Parse `.net` text. `origin` names it in error messages (`origin:line: reason`).
    /// `include` lines are errors here; use [`Topology::load`] or
    /// [`Topology::parse_with_includes`].
    pub fn parse_str(text: &str, origin: &str) -> Result<Topology, TopoError> {
        Topology::parse_with_includes(text, origin, &mut |_, _| {
            Err("includes are resolved only by Topology::load or a resolver".to_owned())
        })
    }

    /// Parse `.net` text, resolving `include` lines through `resolver`.
    pub fn parse_with_includes(text: &str, origin: &str, resolver: &mut Resolver<'_>) -> Result<Topology, TopoError> {
        let mut asm = Assembler::default();
        asm.origins.push(origin.to_owned());
        asm.stack.push(origin.to_owned());
        asm.feed(text, 0, resolver)?;
        asm.finish()
    }

    /// Read and parse a `.net` file, resolving includes relative to the including file. Each
    /// file must be a regular file of at most [`NET_LIMIT`](crate::file::NET_LIMIT) bytes.
    pub fn load(path: &Path) -> Result<Topology, TopoError> {
        let text = crate::file::read_text(path, crate::file::NET_LIMIT)
            .map_err(|e| TopoError::Read { path: path.display().to_string(), reason: e.to_string() })?;
        let origin = path.display().to_string();
        Topology::parse_with_includes(&text, &origin, &mut |file, from| {
            let base = Path::new(from).parent().unwrap_or_else(|| Path::new(""));
            let p = normalize(&base.join(file));
            crate::file::read_text(&p, crate::file::NET_LIMIT)
                .map(|t| (p.display().to_string(), t))
                .map_err(|e| e.to_string())
        })
    }
}

/// Lexically remove `.` and `a/..` so that the same file reached two ways has one origin.
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if matches!(out.components().next_back(), Some(Component::Normal(_))) {
                    out.pop();
                } else {
                    out.push(c);
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// A compact position: origin index and line.
#[derive(Debug, Clone, Copy)]
struct Loc {
    origin: usize,
    line: usize,
}

/// One port line, kept until every node is known.
#[derive(Debug)]
struct Decl {
    node: usize,
    port: u8,
    remote: String,
    remote_port: u64,
    remote_guid: Option<u64>,
    masks: Masks,
    at: Loc,
}

/// Enabled masks: width, speed, extended speed.
type Masks = [Option<u8>; 3];

/// Index into the per-kind GUID counters.
fn kind_slot(kind: NodeKind) -> usize {
    match kind {
        NodeKind::Ca => 0,
        NodeKind::Switch => 1,
        NodeKind::Router => 2,
    }
}

/// ibsim's initial GUID bases: CA, switch, router.
const GUID_BASES: [u64; 3] = [0x10_0000, 0x20_0000, 0];

#[derive(Debug)]
struct Assembler {
    origins: Vec<String>,
    stack: Vec<String>,
    nodes: Vec<TopoNode>,
    node_at: Vec<Loc>,
    node_masks: Vec<Masks>,
    by_name: HashMap<String, usize>,
    by_guid: HashMap<u64, usize>,
    abs_guid: [u64; 3],
    next_guid: [u64; 3],
    vendid: Option<u32>,
    devid: u16,
    sysimg: Option<u64>,
    switch_port_guid: Option<u64>,
    default_masks: Masks,
    current: Option<usize>,
    decls: Vec<Decl>,
    /// Where node `n`'s ports start in the per-port tables (`decl_of`, and `finish`'s
    /// `link_src`): port `p` of node `n` is slot `port_base[n] + p`.
    port_base: Vec<usize>,
    /// Per port slot: the index of its port line in `decls` (`NONE` before one is read).
    decl_of: Vec<usize>,
    explicit_guid: HashSet<(usize, u8)>,
}

impl Default for Assembler {
    fn default() -> Self {
        Assembler {
            origins: Vec::new(),
            stack: Vec::new(),
            nodes: Vec::new(),
            node_at: Vec::new(),
            node_masks: Vec::new(),
            by_name: HashMap::new(),
            by_guid: HashMap::new(),
            abs_guid: GUID_BASES,
            next_guid: GUID_BASES,
            vendid: None,
            devid: 0,
            sysimg: None,
            switch_port_guid: None,
            default_masks: [None; 3],
            current: None,
            decls: Vec::new(),
            port_base: Vec::new(),
            decl_of: Vec::new(),
            explicit_guid: HashSet::new(),
        }
    }
}

/// An empty slot of a per-port table.
const NONE: usize = usize::MAX;

impl Assembler {
    /// The slot of port `port` of node `node` in the per-port tables (`None` past its ports).
    fn slot(&self, node: usize, port: u8) -> Option<usize> {
        let n = self.nodes.get(node)?;
        (port <= n.num_ports).then(|| self.port_base[node] + usize::from(port))
    }

    /// The port line of port `port` of node `node`, if one was read.
    fn decl_at(&self, node: usize, port: u8) -> Option<usize> {
        let i = *self.decl_of.get(self.slot(node, port)?)?;
        (i != NONE).then_some(i)
    }

    fn pos(&self, at: Loc) -> Pos {
        Pos { origin: self.origins.get(at.origin).cloned().unwrap_or_default(), line: at.line }
    }

    fn endpoint(&self, node: usize, port: u8) -> Endpoint {
        Endpoint { node: self.nodes.get(node).map(|n| n.name.clone()).unwrap_or_default(), port }
    }

    fn line_error(&self, e: LineError, at: Loc, raw: &str) -> TopoError {
        let at = self.pos(at);
        match e {
            LineError::Unknown => TopoError::UnknownLine { at, text: lines::shorten(raw.trim()) },
            LineError::Syntax { expected, found } => TopoError::Syntax { at, expected, found },
            LineError::BadNumber { what, text } => TopoError::BadNumber { at, what, text },
            LineError::BadOption { option, reason } => TopoError::BadOption { at, option, reason },
            LineError::Unsupported(what) => TopoError::Unsupported { at, what },
        }
    }

    fn feed(&mut self, text: &str, origin: usize, resolver: &mut Resolver<'_>) -> Result<(), TopoError> {
        self.current = None;
        // Whether this file has shown a .net line yet: until then an error quotes nothing of it.
        let mut net_text = false;
        for (i, raw) in text.lines().enumerate() {
            let at = Loc { origin, line: i + 1 };
            let line = match lines::parse_line(raw) {
                Ok(line) => line,
                Err(e) if net_text => return Err(self.line_error(e, at, raw)),
                Err(_) => return Err(TopoError::NotNet { at: self.pos(at) }),
            };
            net_text |= !matches!(line, Line::Skip);
            match line {
                Line::Skip => {}
                Line::Node { kind, ports, name, desc } => self.node(kind, ports, name, desc, at)?,
                Line::GuidBase { kind, value, relative, port_guid } => {
                    let k = kind_slot(kind);
                    if relative {
                        self.next_guid[k] = self.abs_guid[k].wrapping_add(value);
                    } else {
                        self.abs_guid[k] = value;
                        self.next_guid[k] = value;
                    }
                    if kind == NodeKind::Switch {
                        self.switch_port_guid = port_guid;
                    }
                }
                Line::VendId(v) => self.vendid = Some(v),
                Line::DevId(v) => self.devid = v,
                Line::SysImgGuid(v) => self.sysimg = Some(v),
                Line::Width(m) => self.default_masks[0] = Some(m),
                Line::Speed(m) => self.default_masks[1] = Some(m),
                Line::ExtSpeed(m) => self.default_masks[2] = Some(m),
                Line::Include(file) => self.include(file, at, resolver)?,
                Line::Port(p) => self.port(&p, at)?,
            }
        }
        self.current = None;
        Ok(())
    }

    fn include(&mut self, file: &str, at: Loc, resolver: &mut Resolver<'_>) -> Result<(), TopoError> {
        if self.stack.len() > MAX_INCLUDE_DEPTH {
            return Err(TopoError::IncludeDepth { at: self.pos(at), max: MAX_INCLUDE_DEPTH });
        }
        let from = self.origins.get(at.origin).cloned().unwrap_or_default();
        let (origin, text) = resolver(file, &from).map_err(|reason| TopoError::Include {
            at: self.pos(at),
            file: file.to_owned(),
            reason,
        })?;
        if self.stack.contains(&origin) {
            return Err(TopoError::IncludeCycle { at: self.pos(at), file: file.to_owned() });
        }
        self.origins.push(origin.clone());
        self.stack.push(origin);
        let idx = self.origins.len() - 1;
        self.feed(&text, idx, resolver)?;
        self.stack.pop();
        Ok(())
    }

    fn node(&mut self, kind: NodeKind, ports: u8, name: &str, desc: Option<&str>, at: Loc) -> Result<(), TopoError> {
        if name.is_empty() || name.contains(['#', '@']) {
            return Err(TopoError::BadName { at: self.pos(at), name: name.to_owned() });
        }
        if let Some(&first) = self.by_name.get(name) {
            return Err(TopoError::DuplicateName {
                at: self.pos(at),
                name: name.to_owned(),
                first: self.pos(self.node_at[first]),
            });
        }
        let k = kind_slot(kind);
        let guid = self.next_guid[k];
        if let Some(&other) = self.by_guid.get(&guid) {
            return Err(TopoError::DuplicateGuid {
                at: self.pos(at),
                guid: Guid(guid),
                name: name.to_owned(),
                other: self.nodes[other].name.clone(),
            });
        }
        self.next_guid[k] = match kind {
            NodeKind::Switch => guid.wrapping_add(1),
            NodeKind::Ca | NodeKind::Router => guid.wrapping_add(u64::from(ports) + 1),
        };
        let mut node = TopoNode::new(kind, name, ports, Guid(guid));
        node.desc = desc.map(str::to_owned);
        node.vendor_id = self.vendid.take().unwrap_or(0);
        node.device_id = self.devid;
        node.sys_guid = Guid(self.sysimg.take().filter(|g| *g != 0).unwrap_or(guid));
        if let Some(pg) = self.switch_port_guid.take().filter(|_| kind == NodeKind::Switch) {
            node.port_guids.fill(Guid(pg));
        }
        let idx = self.nodes.len();
        self.by_name.insert(name.to_owned(), idx);
        self.by_guid.insert(guid, idx);
        self.port_base.push(self.decl_of.len());
        self.decl_of.resize(self.decl_of.len() + usize::from(ports) + 1, NONE);
        self.nodes.push(node);
        self.node_at.push(at);
        self.node_masks.push(self.default_masks);
        self.current = Some(idx);
        Ok(())
    }

    fn port(&mut self, p: &PortLine<'_>, at: Loc) -> Result<(), TopoError> {
        let Some(idx) = self.current else {
            return Err(TopoError::PortBeforeNode { at: self.pos(at) });
        };
        let node = &self.nodes[idx];
        let port = u8::try_from(p.port).ok().filter(|&q| q >= 1 && q <= node.num_ports).ok_or_else(|| {
            TopoError::PortOutOfRange {
                at: self.pos(at),
                node: node.name.clone(),
                port: p.port,
                num_ports: node.num_ports,
            }
        })?;
        if let Some(first) = self.decl_at(idx, port) {
            return Err(TopoError::DuplicatePort {
                at: self.pos(at),
                node: node.name.clone(),
                port,
                first: self.pos(self.decls[first].at),
            });
        }
        if let Some(g) = p.guid {
            if node.kind == NodeKind::Switch {
                let known = node.port_guid(port);
                if known != Guid(g) {
                    return Err(TopoError::GuidMismatch {
                        at: self.pos(at),
                        port: self.endpoint(idx, port),
                        given: Guid(g),
                        other: known,
                    });
                }
            } else if let Some(slot) = self.nodes[idx].port_guids.get_mut(usize::from(port)) {
                *slot = Guid(g);
                self.explicit_guid.insert((idx, port));
            }
        }
        if let Some(slot) = self.slot(idx, port) {
            self.decl_of[slot] = self.decls.len();
        }
        self.decls.push(Decl {
            node: idx,
            port,
            remote: p.remote.to_owned(),
            remote_port: p.remote_port.unwrap_or(1),
            remote_guid: p.remote_guid,
            masks: [p.width, p.speed, p.ext_speed],
            at,
        });
        Ok(())
    }

    /// Resolve every port line into links, check both ends agree, and compute link attributes.
    fn finish(mut self) -> Result<Topology, TopoError> {
        let mut targets: Vec<(usize, u8)> = Vec::with_capacity(self.decls.len());
        // Which port line created the link at a port, by port slot (`NONE`: none yet).
        let mut link_src: Vec<usize> = vec![NONE; self.decl_of.len()];
        for i in 0..self.decls.len() {
            let d = &self.decls[i];
            let (node, port, at) = (d.node, d.port, d.at);
            let Some(&r) = self.by_name.get(&d.remote) else {
                return Err(TopoError::UnknownNode { at: self.pos(at), name: d.remote.clone() });
            };
            let rnode = &self.nodes[r];
            let rp = u8::try_from(d.remote_port).ok().filter(|&q| q >= 1 && q <= rnode.num_ports).ok_or_else(|| {
                TopoError::PortOutOfRange {
                    at: self.pos(at),
                    node: rnode.name.clone(),
                    port: d.remote_port,
                    num_ports: rnode.num_ports,
                }
            })?;
            targets.push((r, rp));
            if (r, rp) == (node, port) {
                return Err(TopoError::SelfLink { at: self.pos(at), port: self.endpoint(r, rp) });
            }
            if r == node {
                let (port, peer) = (self.endpoint(node, port), self.endpoint(r, rp));
                return Err(TopoError::Loopback { at: self.pos(at), port, peer });
            }
            let here = self.nodes[node].links[usize::from(port)];
            let there = self.nodes[r].links[usize::from(rp)];
            let clash = match (here, there) {
                (Some(peer), _) if (peer.node, peer.port) == (r, rp) => None,
                (Some(_), _) => self.link_src_of(&link_src, node, port),
                (None, Some(_)) => self.link_src_of(&link_src, r, rp),
                (None, None) => {
                    let attrs = LinkAttrs::default();
                    self.nodes[node].links[usize::from(port)] = Some(Peer { node: r, port: rp, attrs });
                    self.nodes[r].links[usize::from(rp)] = Some(Peer { node, port, attrs });
                    for s in [self.slot(node, port), self.slot(r, rp)].into_iter().flatten() {
                        link_src[s] = i;
                    }
                    None
                }
            };
            if let Some(j) = clash {
                let other = &self.decls[j];
                let (or, orp) = targets[j];
                return Err(TopoError::LinkConflict(Box::new(LinkConflict {
                    at: self.pos(at),
                    port: self.endpoint(node, port),
                    peer: self.endpoint(r, rp),
                    other: self.endpoint(other.node, other.port),
                    other_peer: self.endpoint(or, orp),
                    other_at: self.pos(other.at),
                })));
            }
        }
        self.link_attrs(&targets, &link_src)?;
        self.guid_hints(&targets)?;
        Ok(Topology { nodes: self.nodes })
    }

    /// The port line that made the link at port `port` of node `node` (`finish`'s table).
    fn link_src_of(&self, link_src: &[usize], node: usize, port: u8) -> Option<usize> {
        let i = *link_src.get(self.slot(node, port)?)?;
        (i != NONE).then_some(i)
    }

    /// The enabled masks of a port: its own line's, else its node's defaults.
    fn masks_of(&self, node: usize, port: u8) -> Masks {
        let defaults = self.node_masks[node];
        match self.decl_at(node, port) {
            Some(i) => {
                let m = self.decls[i].masks;
                [m[0].or(defaults[0]), m[1].or(defaults[1]), m[2].or(defaults[2])]
            }
            None => defaults,
        }
    }

    fn link_attrs(&mut self, targets: &[(usize, u8)], link_src: &[usize]) -> Result<(), TopoError> {
        for (i, &(r, rp)) in targets.iter().enumerate() {
            let d = &self.decls[i];
            let (node, port, at) = (d.node, d.port, d.at);
            if self.link_src_of(link_src, node, port) != Some(i) {
                continue; // the link was made by the other end's line
            }
            let mine = self.masks_of(node, port);
            let theirs = self.masks_of(r, rp);
            let mut common = [None; 3];
            for (k, what) in ["width", "speed", "extended speed"].into_iter().enumerate() {
                common[k] = match (mine[k], theirs[k]) {
                    (Some(a), Some(b)) => {
                        if a & b == 0 && k < 2 {
                            return Err(TopoError::AttrConflict {
                                at: self.pos(at),
                                port: self.endpoint(node, port),
                                peer: self.endpoint(r, rp),
                                what,
                                mine: a,
                                theirs: b,
                            });
                        }
                        Some(a & b)
                    }
                    (a, b) => a.or(b),
                };
            }
            let attrs = LinkAttrs {
                width: common[0].map(lines::best_width),
                speed: common[1].map(lines::best_speed),
                ext_speed: common[2].map(lines::best_speed).filter(|s| *s != 0),
            };
            for (n, p) in [(node, port), (r, rp)] {
                if let Some(Some(peer)) = self.nodes[n].links.get_mut(usize::from(p)) {
                    peer.attrs = attrs;
                }
            }
        }
        Ok(())
    }

    /// Apply `"remote"[rp](guid)` port GUIDs to ports whose own line gives none, and check
    /// them against the ones that do.
    fn guid_hints(&mut self, targets: &[(usize, u8)]) -> Result<(), TopoError> {
        let mut hinted: HashSet<(usize, u8)> = HashSet::new();
        for (i, &(r, rp)) in targets.iter().enumerate() {
            let Some(g) = self.decls[i].remote_guid else { continue };
            let at = self.decls[i].at;
            let known = self.nodes[r].port_guid(rp);
            let settable = self.nodes[r].kind != NodeKind::Switch
                && !self.explicit_guid.contains(&(r, rp))
                && !hinted.contains(&(r, rp));
            if settable {
                if let Some(slot) = self.nodes[r].port_guids.get_mut(usize::from(rp)) {
                    *slot = Guid(g);
                }
                hinted.insert((r, rp));
            } else if known != Guid(g) {
                return Err(TopoError::GuidMismatch {
                    at: self.pos(at),
                    port: self.endpoint(r, rp),
                    given: Guid(g),
                    other: known,
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
