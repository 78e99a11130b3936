//! Comparing a fabric with its expected cabling: nodes missing or extra, links missing, extra
//! or miscabled (a port cabled to another port than the plan says), links whose width or
//! speed differ from the plan, and loopback cables (a node cabled to itself, which no plan
//! wants: reported whatever the plan says).
//!
//! A width or speed is compared only where both files state it for the cable: a `.net` file
//! that names no rate (no `w=`/`s=`/`e=`, no `width=`-style default, no ibnetdiscover `4xQDR`)
//! makes no claim about it, so a plan written without rates matches an `ibnetdiscover` dump
//! whatever rates that shows, and stated values are compared as values (`w=2`, i.e. 4x, is
//! ibnetdiscover's `4x`). Width and speed are taken apart: a plan that states only `w=1` has
//! its width checked and any speed accepted.
//!
//! Nodes are matched by NodeGUID, ports by number; names come from the expected fabric when it
//! has the node. Pure: [`diff`] takes two [`Topology`] values, however they were obtained (two
//! `.net` files, or a running SM's view of the fabric).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use ibsm_mad::Guid;

use crate::{LinkAttrs, Topology};

/// One end of a cable: a node's GUID and a port number.
pub type End = (Guid, u8);

/// A difference between the expected fabric and the found one.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Difference {
    /// A node the plan has and the fabric does not.
    MissingNode {
        /// Its NodeGUID.
        guid: Guid,
        /// Its name in the plan.
        name: String,
    },
    /// A node the fabric has and the plan does not.
    ExtraNode {
        /// Its NodeGUID.
        guid: Guid,
        /// Its name in the found fabric.
        name: String,
    },
    /// A cable the plan has, of which neither end is cabled elsewhere in the fabric.
    MissingLink {
        /// One end (the lower).
        a: End,
        /// The other.
        b: End,
    },
    /// A cable the fabric has and the plan does not, of which neither end the plan cables
    /// elsewhere.
    ExtraLink {
        /// One end (the lower).
        a: End,
        /// The other.
        b: End,
    },
    /// A port cabled to another port than the plan says.
    Miscabled {
        /// The port.
        at: End,
        /// Where the plan cables it.
        expected: End,
        /// Where it is cabled (`None`: nowhere).
        found: Option<End>,
    },
    /// A cable in the fabric between two ports of one node.
    Loopback {
        /// One end (the lower port).
        a: End,
        /// The other.
        b: End,
    },
    /// A cable as planned, at another width or speed.
    LinkAttrs {
        /// One end (the lower).
        a: End,
        /// The other.
        b: End,
        /// The plan's width and speed.
        expected: LinkAttrs,
        /// The fabric's.
        found: LinkAttrs,
    },
}

/// The differences, in a stable order, and the names to print them with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopoDiff {
    /// Every difference found.
    pub differences: Vec<Difference>,
    names: BTreeMap<Guid, String>,
}

impl TopoDiff {
    /// Whether the fabric is as planned.
    pub fn is_empty(&self) -> bool {
        self.differences.is_empty()
    }

    fn end(&self, (guid, port): End) -> String {
        match self.names.get(&guid) {
            Some(n) => format!("\"{n}\"[{port}]"),
            None => format!("0x{:016x}[{port}]", guid.0),
        }
    }

    /// One line per difference.
    pub fn lines(&self) -> Vec<String> {
        self.differences
            .iter()
            .map(|d| match d {
                Difference::MissingNode { guid, name } => format!("missing node \"{name}\" (0x{:016x})", guid.0),
                Difference::ExtraNode { guid, name } => format!("extra node \"{name}\" (0x{:016x})", guid.0),
                Difference::MissingLink { a, b } => format!("missing link {} - {}", self.end(*a), self.end(*b)),
                Difference::ExtraLink { a, b } => format!("extra link {} - {}", self.end(*a), self.end(*b)),
                Difference::Loopback { a, b } => {
                    format!("loopback cable {} - {}: a node cabled to itself", self.end(*a), self.end(*b))
                }
                Difference::Miscabled { at, expected, found } => format!(
                    "miscabled {}: expected to {}, found {}",
                    self.end(*at),
                    self.end(*expected),
                    found.map_or_else(|| "no cable".to_owned(), |f| format!("to {}", self.end(f)))
                ),
                Difference::LinkAttrs { a, b, expected, found } => format!(
                    "link {} - {}: expected {}, found {}",
                    self.end(*a),
                    self.end(*b),
                    expected.text(),
                    found.text()
                ),
            })
            .collect()
    }
}

impl fmt::Display for TopoDiff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for l in self.lines() {
            writeln!(f, "{l}")?;
        }
        Ok(())
    }
}

/// Whether `found` contradicts `expected`: a width, or a speed (with its extended speed), that
/// both state and that differ; what one of them leaves unset is not compared.
fn attrs_differ(expected: LinkAttrs, found: LinkAttrs) -> bool {
    let width_differs = matches!((expected.width, found.width), (Some(a), Some(b)) if a != b);
    let stated = |a: LinkAttrs| a.speed.is_some() || a.ext_speed.is_some();
    // The effective speed: the extended one when given, else the base one (SDR by default).
    let speed = |a: LinkAttrs| (a.ext_speed, a.ext_speed.map_or(a.speed.unwrap_or(1), |_| 0));
    let speed_differs = stated(expected) && stated(found) && speed(expected) != speed(found);
    width_differs || speed_differs
}

/// Every cable of `t` by both of its ends, with its attributes.
fn cables(t: &Topology) -> BTreeMap<End, (End, LinkAttrs)> {
    let mut out = BTreeMap::new();
    for n in &t.nodes {
        for p in 1..=n.num_ports {
            let Some(peer) = n.peer(p) else { continue };
            let Some(other) = t.nodes.get(peer.node) else { continue };
            out.insert((n.node_guid, p), ((other.node_guid, peer.port), peer.attrs));
        }
    }
    out
}

/// What differs between the `expected` fabric and the `found` one; link widths and speeds are
/// compared only with `compare_attrs` (a running SM's view of the fabric does not carry them),
/// and only where both files state them (see the module doc).
pub fn diff(expected: &Topology, found: &Topology, compare_attrs: bool) -> TopoDiff {
    let mut names: BTreeMap<Guid, String> = found.nodes.iter().map(|n| (n.node_guid, n.name.clone())).collect();
    names.extend(expected.nodes.iter().map(|n| (n.node_guid, n.name.clone())));
    let want: BTreeSet<Guid> = expected.nodes.iter().map(|n| n.node_guid).collect();
    let have: BTreeSet<Guid> = found.nodes.iter().map(|n| n.node_guid).collect();
    let mut out = Vec::new();
    for n in expected.nodes.iter().filter(|n| !have.contains(&n.node_guid)) {
        out.push(Difference::MissingNode { guid: n.node_guid, name: n.name.clone() });
    }
    for n in found.nodes.iter().filter(|n| !want.contains(&n.node_guid)) {
        out.push(Difference::ExtraNode { guid: n.node_guid, name: n.name.clone() });
    }
    let (planned, cabled) = (cables(expected), cables(found));
    for (&at, &(peer, planned_attrs)) in &planned {
        // Each cable once, from its lower end; the ends of missing nodes are not reported again.
        if !have.contains(&at.0) || !have.contains(&peer.0) {
            continue;
        }
        match cabled.get(&at) {
            Some(&(f, found_attrs))
                if f == peer && compare_attrs && at < peer && attrs_differ(planned_attrs, found_attrs) =>
            {
                out.push(Difference::LinkAttrs { a: at, b: peer, expected: planned_attrs, found: found_attrs });
            }
            Some(&(f, _)) if f == peer => {}
            Some(&(f, _)) => out.push(Difference::Miscabled { at, expected: peer, found: Some(f) }),
            None if cabled.contains_key(&peer) => {
                out.push(Difference::Miscabled { at, expected: peer, found: None });
            }
            None if at < peer => out.push(Difference::MissingLink { a: at, b: peer }),
            None => {}
        }
    }
    for (&at, &(peer, _)) in &cabled {
        if at.0 == peer.0 {
            if at < peer {
                out.push(Difference::Loopback { a: at, b: peer });
            }
            continue;
        }
        if at < peer
            && want.contains(&at.0)
            && want.contains(&peer.0)
            && !planned.contains_key(&at)
            && !planned.contains_key(&peer)
        {
            out.push(Difference::ExtraLink { a: at, b: peer });
        }
    }
    out.sort();
    out.dedup();
    TopoDiff { differences: out, names }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: &str = "Switch 4 \"sw\"\n[1] \"h1\"[1]\n[2] \"h2\"[1]\n[3] \"h3\"[1]\n\n\
        Hca 1 \"h1\"\n[1] \"sw\"[1]\n\nHca 1 \"h2\"\n[1] \"sw\"[2]\n\nHca 1 \"h3\"\n[1] \"sw\"[3]\n";

    fn parse(text: &str) -> Topology {
        Topology::parse_str(text, "t.net").unwrap_or_default()
    }

    #[test]
    fn the_same_fabric_has_no_difference() {
        assert!(diff(&parse(PLAN), &parse(PLAN), true).is_empty());
    }

    #[test]
    fn swapped_cables_a_missing_one_and_a_missing_node_are_named() {
        // h1 and h2 swapped, h3 gone.
        let found = "Switch 4 \"sw\"\n[1] \"h2\"[1]\n[2] \"h1\"[1]\n\n\
            Hca 1 \"h1\"\n[1] \"sw\"[2]\n\nHca 1 \"h2\"\n[1] \"sw\"[1]\n";
        let plan = parse(PLAN);
        let d = diff(&plan, &parse(found), true);
        let text = d.to_string();
        assert!(text.contains("missing node \"h3\""), "{text}");
        assert!(text.contains("miscabled \"sw\"[1]: expected to \"h1\"[1], found to \"h2\"[1]"), "{text}");
        assert!(text.contains("miscabled \"h1\"[1]: expected to \"sw\"[1], found to \"sw\"[2]"), "{text}");
        assert!(!text.contains("missing link"), "the missing node's cable is not reported again: {text}");
        // And the other way round: the extra node.
        assert!(diff(&parse(found), &plan, true).to_string().contains("extra node \"h3\""));
    }

    #[test]
    fn a_loopback_cable_is_named_with_or_without_a_plan() {
        let plan = parse(&PLAN.replace("Switch 4 \"sw\"", "Switch 6 \"sw\""));
        let mut found = plan.clone();
        let sw = found.find("sw").expect("sw");
        for (p, q) in [(5, 4), (4, 5)] {
            found.nodes[sw].links[p] = Some(crate::Peer { node: sw, port: q, attrs: LinkAttrs::default() });
        }
        let line = "loopback cable \"sw\"[4] - \"sw\"[5]: a node cabled to itself";
        assert_eq!(diff(&plan, &found, true).lines(), [line]);
        // Against itself: the loopback is all there is to say.
        assert_eq!(diff(&found, &found, true).lines(), [line]);
    }

    #[test]
    fn an_unplanned_cable_and_a_slow_link_are_named() {
        // The plan states the width (w=2: 4x) of the cable that comes up at 1x.
        let plan = PLAN.replace("Hca 1 \"h3\"", "Hca 2 \"h3\"").replace("[3] \"h3\"[1]\n", "[3] \"h3\"[1] w=2\n");
        let found = plan
            .replace("[3] \"h3\"[1] w=2\n\nHca", "[3] \"h3\"[1] w=1\n[4] \"h3\"[2]\n\nHca")
            .replace("Hca 2 \"h3\"\n[1] \"sw\"[3]\n", "Hca 2 \"h3\"\n[1] \"sw\"[3]\n[2] \"sw\"[4]\n");
        let d = diff(&parse(&plan), &parse(&found), true);
        assert_eq!(diff(&parse(&plan), &parse(&found), false).differences.len(), 1, "widths not compared");
        let text = d.to_string();
        assert!(
            text.contains("extra link \"sw\"[4] - \"h3\"[2]") || text.contains("extra link \"h3\"[2] - \"sw\"[4]"),
            "{text}"
        );
        assert!(
            text.contains("link \"sw\"[3] - \"h3\"[1]: expected 4xSDR, found 1xSDR")
                || text.contains("link \"h3\"[1] - \"sw\"[3]: expected 4xSDR, found 1xSDR"),
            "{text}"
        );
        assert_eq!(d.differences.len(), 2, "{text}");
    }

    #[test]
    fn a_rate_one_file_leaves_unset_is_not_a_difference() {
        // An ibnetdiscover dump states every rate; a plan without rates makes no claim.
        let dump = PLAN
            .replace("[1] \"h1\"[1]\n", "[1] \"h1\"[1] # \"h1\" lid 2 4xSDR\n")
            .replace("[2] \"h2\"[1]\n", "[2] \"h2\"[1] # \"h2\" lid 3 4xQDR\n")
            .replace("[3] \"h3\"[1]\n", "[3] \"h3\"[1] # \"h3\" lid 4 1xEDR\n");
        let (plan, dump) = (parse(PLAN), parse(&dump));
        assert!(diff(&plan, &dump, true).is_empty(), "{}", diff(&plan, &dump, true));
        assert!(diff(&dump, &plan, true).is_empty(), "{}", diff(&dump, &plan, true));
        // Stated on both sides, values are compared as values: `w=2 s=1` is ibnetdiscover's 4xSDR.
        let stated = PLAN.replace("[1] \"h1\"[1]\n", "[1] \"h1\"[1] w=2 s=1\n");
        assert!(diff(&parse(&stated), &dump, true).is_empty());
        // A plan that states only a speed has that speed checked, and no width.
        let qdr =
            PLAN.replace("[2] \"h2\"[1]\n", "[2] \"h2\"[1] s=4\n").replace("[3] \"h3\"[1]\n", "[3] \"h3\"[1] s=4\n");
        let d = diff(&parse(&qdr), &dump, true);
        assert_eq!(d.differences.len(), 1, "{d}");
        let line = d.to_string();
        assert!(line.contains("\"h3\"[1]") && line.contains(": expected 4xQDR, found 1xEDR"), "{d}");
    }

    #[test]
    fn a_generated_fat_tree_with_one_cable_moved() {
        let Ok(plan) = crate::GenSpec::fat_tree(3, 8).generate() else { panic!("generates") };
        assert!(diff(&plan, &plan, true).is_empty());
        // Unplug one cable between two switches.
        let mut found = plan.clone();
        let (leaf, port) = found
            .nodes
            .iter()
            .enumerate()
            .find_map(|(i, n)| {
                (n.kind == crate::NodeKind::Switch)
                    .then(|| {
                        (1..=n.num_ports)
                            .find(|&p| n.peer(p).is_some_and(|x| plan.nodes[x.node].kind == crate::NodeKind::Switch))
                            .map(|p| (i, p))
                    })
                    .flatten()
            })
            .unwrap_or((0, 1));
        let Some(peer) = found.nodes[leaf].peer(port) else { panic!("cabled") };
        found.nodes[leaf].links[usize::from(port)] = None;
        found.nodes[peer.node].links[usize::from(peer.port)] = None;
        let d = diff(&plan, &found, true);
        assert_eq!(d.differences.len(), 1, "{d}");
        assert!(matches!(d.differences[0], Difference::MissingLink { .. }), "{d}");
    }
}
