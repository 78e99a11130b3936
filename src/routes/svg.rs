//! The routed load drawn: the SVG of `ibsm routes check --svg FILE`.
//!
//! Owns the picture: one row of nodes per tier (switches without a tier on top, then the
//! highest tier down to tier 1, the CAs at the bottom), nodes evenly spaced in their row, one
//! path per cable, each switch-to-switch cable coloured from cool to hot (and drawn wider) by the
//! CA-to-CA routes over it in its busier direction, on a scale whose hot end is the busiest
//! drawn cable; a legend gives the scale and its maximum. Cables with no routed load are grey
//! and dashed; CA cables carry no load figure and are drawn thin in a neutral colour. Only cables
//! that exist are drawn: a dead or missing cable is not in the topology.
//!
//! Pure: a topology, its nodes grouped by tier ([`ibsm_topology::by_tier`]) and the per-link
//! figures of `routes check` ([`CheckReport::link_loads`], the edge forwarding index) in, text
//! out. It computes no load itself and does no I/O.
//!
//! Guarantees: well-formed XML whatever the node names (escaped; characters XML forbids are
//! replaced), and a bounded picture: above [`SvgOptions::max_cas`] CAs only the switches are
//! drawn (each tier-1 switch's tooltip counts its CAs and a caption says what was left out), and
//! above [`MAX_LINK_TITLES`] cables the per-cable tooltips are left out. A k = 48 three-level
//! fat tree (2,880 switches, 55,296 switch cables) gives about 8 MB.
//!
//! [`CheckReport::link_loads`]: ibsm_routing::check::CheckReport::link_loads

use std::cmp::Ordering;
use std::collections::HashMap;
use std::fmt::Write as _;

use ibsm_mad::Guid;
use ibsm_routing::check::ChannelLoad;
use ibsm_topology::{NodeKind, Topology};

/// The colour of the hottest cable (the top of the scale).
pub const HOT: &str = "#d7191c";
/// The colour of the coolest loaded cable (the bottom of the scale).
pub const COOL: &str = "#2c7bb6";
/// The colour of a switch cable with no routed load.
pub const IDLE: &str = "#b0b0b0";
/// The colour of a CA cable (no load figure).
pub const CA_LINK: &str = "#8da0b6";
/// [`SvgOptions::max_cas`] unless told otherwise.
pub const DEFAULT_MAX_CAS: usize = 1024;
/// Above this many drawn cables, cables get no tooltip (it would double the file).
pub const MAX_LINK_TITLES: usize = 150_000;

/// The scale, cool to hot: (fraction of the maximum, colour).
const STOPS: [(f64, [u8; 3]); 5] = [
    (0.0, [0x2c, 0x7b, 0xb6]),
    (0.25, [0x00, 0xa6, 0xca]),
    (0.5, [0x7f, 0xbf, 0x3f]),
    (0.75, [0xf4, 0xa5, 0x2a]),
    (1.0, [0xd7, 0x19, 0x1c]),
];

/// What to draw besides the fabric.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SvgOptions {
    /// Draw the CAs (and their cables) only when the fabric has at most this many.
    pub max_cas: usize,
    /// The first line of the legend (e.g. which tables were checked).
    pub title: String,
}

impl Default for SvgOptions {
    fn default() -> Self {
        SvgOptions { max_cas: DEFAULT_MAX_CAS, title: String::new() }
    }
}

/// The colour of a cable carrying `load` routes when the busiest carries `max`: [`IDLE`] for
/// none, [`HOT`] at `max`, interpolated over the scale in between.
pub fn load_colour(load: u64, max: u64) -> String {
    if load == 0 || max == 0 {
        return IDLE.to_owned();
    }
    if load >= max {
        return HOT.to_owned();
    }
    rgb(load as f64 / max as f64)
}

fn rgb(frac: f64) -> String {
    let frac = frac.clamp(0.0, 1.0);
    let mut lo = STOPS[0];
    let mut hi = STOPS[STOPS.len() - 1];
    for w in STOPS.windows(2) {
        if frac >= w[0].0 && frac <= w[1].0 {
            (lo, hi) = (w[0], w[1]);
            break;
        }
    }
    let t = if hi.0 > lo.0 { (frac - lo.0) / (hi.0 - lo.0) } else { 0.0 };
    let mix = |from: u8, to: u8| {
        let v = (f64::from(from) + (f64::from(to) - f64::from(from)) * t).round().clamp(0.0, 255.0);
        u8::try_from(v as i64).unwrap_or(u8::MAX)
    };
    format!("#{:02x}{:02x}{:02x}", mix(lo.1[0], hi.1[0]), mix(lo.1[1], hi.1[1]), mix(lo.1[2], hi.1[2]))
}

/// `s` as XML text or attribute value: `& < > " '` escaped, characters XML 1.0 forbids (C0
/// controls other than tab, newline and carriage return) replaced by U+FFFD.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if u32::from(c) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// Names compared with their digit runs as numbers (`leaf-2` before `leaf-10`), so that
/// generated fabrics lie in their cabling order.
fn natural_cmp(left: &str, right: &str) -> Ordering {
    let (mut lhs, mut rhs) = (left.as_bytes(), right.as_bytes());
    loop {
        match (lhs.first(), rhs.first()) {
            (None, None) => return left.cmp(right),
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(l), Some(r)) if l.is_ascii_digit() && r.is_ascii_digit() => {
                let digits = |s: &[u8]| s.iter().take_while(|c| c.is_ascii_digit()).count();
                let (l_len, r_len) = (digits(lhs), digits(rhs));
                let zeros = |s: &[u8]| s.iter().take_while(|&&c| c == b'0').count();
                let (l_num, r_num) = (&lhs[zeros(&lhs[..l_len])..l_len], &rhs[zeros(&rhs[..r_len])..r_len]);
                let by_value = l_num.len().cmp(&r_num.len()).then_with(|| l_num.cmp(r_num));
                if by_value != Ordering::Equal {
                    return by_value;
                }
                (lhs, rhs) = (&lhs[l_len..], &rhs[r_len..]);
            }
            (Some(l), Some(r)) => {
                if l != r {
                    return l.cmp(r);
                }
                (lhs, rhs) = (&lhs[1..], &rhs[1..]);
            }
        }
    }
}

/// One cable to draw.
struct Cable {
    a: usize,
    pa: u8,
    b: usize,
    pb: u8,
    /// Routes a -> b and b -> a, when the check has a figure for that direction.
    ab: Option<u64>,
    ba: Option<u64>,
    /// Between two switches (load-coloured), or to a CA.
    switches: bool,
}

impl Cable {
    fn load(&self) -> u64 {
        self.ab.unwrap_or(0).max(self.ba.unwrap_or(0))
    }
}

/// Geometry shared by the writers.
struct Layout {
    /// Node centres, by node index (`None`: not drawn).
    pos: Vec<Option<(f64, f64)>>,
    /// Row of each drawn node.
    row_of: Vec<usize>,
    width: f64,
    height: f64,
    /// Horizontal distance between nodes in the widest row.
    pitch: f64,
    row_gap: f64,
    /// Legend and text scale.
    scale: f64,
    /// Names are written on the nodes.
    labelled: bool,
}

/// The fabric `t` drawn by tier with each cable coloured by its routed load; `groups` are
/// `t`'s nodes by tier as [`ibsm_topology::by_tier`] gives them, `loads` the per-link figures
/// of `routes check` (matched to cables by switch NodeGUID, egress port and far-end NodeGUID).
pub fn render(t: &Topology, groups: &[(Option<u8>, Vec<usize>)], loads: &[ChannelLoad], opts: &SvgOptions) -> String {
    let ca_total: usize = groups.iter().filter(|g| g.0 == Some(0)).map(|g| g.1.len()).sum();
    let draw_cas = ca_total <= opts.max_cas;
    // Rows top to bottom: no tier, the highest tier .. tier 1, the CAs.
    let mut rows: Vec<(Option<u8>, Vec<usize>)> = Vec::new();
    rows.extend(groups.iter().filter(|g| g.0.is_none()).cloned());
    let mut tiered: Vec<&(Option<u8>, Vec<usize>)> = groups.iter().filter(|g| g.0.is_some_and(|l| l > 0)).collect();
    tiered.sort_by_key(|g| std::cmp::Reverse(g.0));
    rows.extend(tiered.into_iter().cloned());
    if draw_cas {
        rows.extend(groups.iter().filter(|g| g.0 == Some(0)).cloned());
    }
    rows.retain(|r| !r.1.is_empty());
    for r in &mut rows {
        r.1.retain(|&i| i < t.nodes.len());
        r.1.sort_by(|&a, &b| natural_cmp(&t.nodes[a].name, &t.nodes[b].name));
    }
    order_cas(t, &mut rows);
    let lay = layout(t, &rows);
    let cables = cables(t, &lay, loads);
    let max = cables.iter().filter(|c| c.switches).map(Cable::load).max().unwrap_or(0);

    let mut out = String::with_capacity(4096 + cables.len() * 140 + t.nodes.len() * 120);
    let _ = writeln!(out, r#"<?xml version="1.0" encoding="UTF-8"?>"#);
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w:.0}" height="{h:.0}" viewBox="0 0 {w:.0} {h:.0}" font-family="sans-serif">"#,
        w = lay.width,
        h = lay.height
    );
    let _ = writeln!(out, "<title>{}</title>", escape(&opts.title));
    let _ = writeln!(out, r#"<rect x="0" y="0" width="{:.0}" height="{:.0}" fill="white"/>"#, lay.width, lay.height);
    write_cables(&mut out, t, &lay, &cables, max);
    write_nodes(&mut out, t, &lay, &rows, draw_cas);
    write_row_labels(&mut out, &lay, &rows);
    let omitted = (!draw_cas).then(|| {
        let ca_cables = t
            .nodes
            .iter()
            .filter(|n| n.kind != NodeKind::Switch)
            .flat_map(|n| n.links.iter().flatten())
            .filter(|p| t.nodes.get(p.node).is_some_and(|m| m.kind == NodeKind::Switch))
            .count();
        (ca_total, ca_cables)
    });
    write_legend(&mut out, &lay, opts, max, &cables, omitted);
    out.push_str("</svg>\n");
    out
}

/// Puts each CA under its switches: the CA row ordered by the mean position of the switches
/// each CA is cabled to (by name among equals, and CAs cabled to no drawn switch last).
fn order_cas(t: &Topology, rows: &mut [(Option<u8>, Vec<usize>)]) {
    let mut at = vec![f64::NAN; t.nodes.len()];
    for (_, members) in rows.iter() {
        for (k, &i) in members.iter().enumerate() {
            at[i] = (k as f64 + 0.5) / members.len() as f64;
        }
    }
    for (level, members) in rows.iter_mut() {
        if *level != Some(0) {
            continue;
        }
        let mut keyed: Vec<(f64, usize)> = members
            .iter()
            .map(|&i| {
                let n = &t.nodes[i];
                let xs: Vec<f64> = (1..=n.num_ports)
                    .filter_map(|p| n.peer(p))
                    .filter(|p| t.nodes.get(p.node).is_some_and(|m| m.kind == NodeKind::Switch))
                    .filter_map(|p| at.get(p.node).copied().filter(|x| x.is_finite()))
                    .collect();
                let key = if xs.is_empty() { 2.0 } else { xs.iter().sum::<f64>() / xs.len() as f64 };
                (key, i)
            })
            .collect();
        keyed.sort_by(|a, b| a.0.total_cmp(&b.0));
        *members = keyed.into_iter().map(|(_, i)| i).collect();
    }
}

fn layout(t: &Topology, rows: &[(Option<u8>, Vec<usize>)]) -> Layout {
    let nodes = t.nodes.len();
    let widest = rows.iter().map(|r| r.1.len()).max().unwrap_or(1).max(1);
    let pitch = if widest <= 24 { 100.0 } else { (2400.0 / widest as f64).clamp(10.0, 100.0) };
    let inner = widest as f64 * pitch;
    let scale = (inner / 1600.0).max(1.0);
    let left = 120.0 * scale;
    let row_gap = (inner * 0.1).max(140.0);
    let mut row_of = vec![usize::MAX; nodes];
    for (r, (_, members)) in rows.iter().enumerate() {
        for &i in members {
            row_of[i] = r;
        }
    }
    // Cables within the top row arc above it: room for them under the legend.
    let top_arcs = rows.first().is_some_and(|(_, members)| {
        members.iter().any(|&i| {
            (1..=t.nodes[i].num_ports).any(|p| t.nodes[i].peer(p).is_some_and(|q| row_of.get(q.node) == Some(&0)))
        })
    });
    let top = 150.0 * scale + if top_arcs { row_gap * 0.45 } else { 0.0 };
    let mut pos = vec![None; nodes];
    for (r, (_, members)) in rows.iter().enumerate() {
        let y = top + r as f64 * row_gap;
        let step = inner / members.len().max(1) as f64;
        for (k, &i) in members.iter().enumerate() {
            if let Some(p) = pos.get_mut(i) {
                *p = Some((left + (k as f64 + 0.5) * step, y));
            }
        }
    }
    let height = top + rows.len().saturating_sub(1) as f64 * row_gap + 60.0 * scale;
    let width = (left + inner + 40.0 * scale).max(960.0 * scale);
    Layout { pos, row_of, width, height, pitch, row_gap, scale, labelled: pitch >= 48.0 }
}

/// Every cable with both ends drawn, once, with the check's figures for its two directions.
fn cables(t: &Topology, lay: &Layout, loads: &[ChannelLoad]) -> Vec<Cable> {
    let by_port: HashMap<(Guid, u8), (Guid, u64)> =
        loads.iter().map(|l| ((l.channel.switch, l.channel.port.0), (l.channel.to, l.routes))).collect();
    let figure = |from: usize, port: u8, to: usize| {
        let (far, routes) = by_port.get(&(t.nodes[from].node_guid, port))?;
        (*far == t.nodes[to].node_guid).then_some(*routes)
    };
    let mut out = Vec::new();
    for (a, n) in t.nodes.iter().enumerate() {
        for pa in 1..=n.num_ports {
            let Some(peer) = n.peer(pa) else { continue };
            let b = peer.node;
            // Each cable once, from the lower (node, port) end; both ends must be drawn.
            if (a, pa) >= (b, peer.port) || b >= t.nodes.len() {
                continue;
            }
            if lay.pos[a].is_none() || lay.pos[b].is_none() {
                continue;
            }
            // Named from the lower end up (the higher row index is lower on the page).
            let ((a, pa), (b, pb)) =
                if lay.row_of[a] < lay.row_of[b] { ((b, peer.port), (a, pa)) } else { ((a, pa), (b, peer.port)) };
            let switches = t.nodes[a].kind == NodeKind::Switch && t.nodes[b].kind == NodeKind::Switch;
            let (ab, ba) = if switches { (figure(a, pa, b), figure(b, pb, a)) } else { (None, None) };
            out.push(Cable { a, pa, b, pb, ab, ba, switches });
        }
    }
    // Coolest first, so that hot cables are drawn over them.
    out.sort_by_key(|c| (c.switches, c.load()));
    out
}

fn write_cables(out: &mut String, t: &Topology, lay: &Layout, cables: &[Cable], max: u64) {
    let base = if lay.labelled { 4.0 } else { 1.2 };
    let titles = cables.len() <= MAX_LINK_TITLES;
    out.push_str("<g id=\"links\" fill=\"none\" stroke-linecap=\"round\">\n");
    for c in cables {
        let (Some((x1, y1)), Some((x2, y2))) = (lay.pos[c.a], lay.pos[c.b]) else { continue };
        let d = if lay.row_of[c.a] == lay.row_of[c.b] {
            // Same row: an arc above it, clear of the nodes in between.
            let lift = ((x2 - x1).abs() * 0.3).min(lay.row_gap * 0.45).max(lay.pitch * 0.5);
            format!("M{x1:.1} {y1:.1}Q{:.1} {:.1} {x2:.1} {y2:.1}", f64::midpoint(x1, x2), y1.min(y2) - lift)
        } else {
            format!("M{x1:.1} {y1:.1}L{x2:.1} {y2:.1}")
        };
        let load = c.load();
        let style = if !c.switches {
            format!(r#"stroke="{CA_LINK}" stroke-width="{:.2}""#, base * 0.3)
        } else if load == 0 {
            format!(
                r#"stroke="{IDLE}" stroke-width="{:.2}" stroke-dasharray="{:.1} {:.1}""#,
                base * 0.3,
                base * 2.0,
                base * 1.5
            )
        } else {
            let frac = load as f64 / max.max(1) as f64;
            format!(r#"stroke="{}" stroke-width="{:.2}""#, load_colour(load, max), base * (0.35 + 0.65 * frac))
        };
        if titles {
            let (na, nb) = (escape(&t.nodes[c.a].name), escape(&t.nodes[c.b].name));
            let figures = if c.switches {
                let f = |v: Option<u64>| v.map_or_else(|| "no figure".to_owned(), |v| v.to_string());
                format!(": {}; back: {}", f(c.ab), f(c.ba))
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                r#"<path d="{d}" {style}><title>{na}[{}] -&gt; {nb}[{}]{figures}</title></path>"#,
                c.pa, c.pb
            );
        } else {
            let _ = writeln!(out, r#"<path d="{d}" {style}/>"#);
        }
    }
    out.push_str("</g>\n");
}

fn write_nodes(out: &mut String, t: &Topology, lay: &Layout, rows: &[(Option<u8>, Vec<usize>)], draw_cas: bool) {
    let (box_w, box_h) = if lay.labelled { ((lay.pitch * 0.85).min(90.0), 20.0) } else { (lay.pitch * 0.7, 8.0) };
    let max_chars = usize::try_from((box_w / 6.2) as i64).unwrap_or(0).max(3);
    out.push_str("<g id=\"nodes\" stroke=\"#37474f\" stroke-width=\"1\" font-size=\"10\" text-anchor=\"middle\">\n");
    for (level, members) in rows {
        for &i in members {
            let Some((cx, cy)) = lay.pos[i] else { continue };
            let node = &t.nodes[i];
            let mut tip = escape(&node.name);
            if node.kind == NodeKind::Switch && !draw_cas {
                let cas = (1..=node.num_ports)
                    .filter_map(|p| node.peer(p))
                    .filter(|p| t.nodes.get(p.node).is_some_and(|m| m.kind != NodeKind::Switch))
                    .count();
                if cas > 0 {
                    let _ = write!(tip, " ({cas} CA cables, not drawn)");
                }
            }
            if node.kind == NodeKind::Switch {
                let dash = if level.is_none() { r#" stroke-dasharray="3 2""# } else { "" };
                let _ = write!(
                    out,
                    r##"<g><title>{tip}</title><rect x="{:.1}" y="{:.1}" width="{box_w:.1}" height="{box_h:.1}" rx="2" fill="#eceff1"{dash}/>"##,
                    cx - box_w / 2.0,
                    cy - box_h / 2.0
                );
            } else {
                let radius = (box_h / 2.0).min(box_w / 2.0);
                let _ = write!(
                    out,
                    r##"<g><title>{tip}</title><circle cx="{cx:.1}" cy="{cy:.1}" r="{radius:.1}" fill="#fff8e1"/>"##
                );
            }
            if lay.labelled {
                let label: String = node.name.chars().take(max_chars).collect();
                let more = if node.name.chars().count() > max_chars { "\u{2026}" } else { "" };
                let ty = if node.kind == NodeKind::Switch { cy + 3.5 } else { cy + box_h / 2.0 + 11.0 };
                let _ = write!(out, r#"<text x="{cx:.1}" y="{ty:.1}" stroke="none">{}{more}</text>"#, escape(&label));
            }
            out.push_str("</g>\n");
        }
    }
    out.push_str("</g>\n");
}

fn write_row_labels(out: &mut String, lay: &Layout, rows: &[(Option<u8>, Vec<usize>)]) {
    let s = lay.scale;
    let _ = writeln!(out, r##"<g id="tiers" font-size="{:.1}" fill="#37474f">"##, 12.0 * s);
    for (level, members) in rows {
        let Some((_, y)) = members.iter().find_map(|&i| lay.pos.get(i).copied().flatten()) else { continue };
        let label = match level {
            Some(0) => format!("CAs ({})", members.len()),
            Some(l) => format!("tier {l} ({})", members.len()),
            None => format!("no tier ({})", members.len()),
        };
        let _ = writeln!(out, r#"<text x="{:.1}" y="{:.1}">{label}</text>"#, 8.0 * s, y + 4.0 * s);
    }
    out.push_str("</g>\n");
}

fn write_legend(
    out: &mut String,
    lay: &Layout,
    opts: &SvgOptions,
    max: u64,
    cables: &[Cable],
    omitted: Option<(usize, usize)>,
) {
    let _ = writeln!(out, r##"<g id="legend" transform="scale({:.3})" font-size="12" fill="#263238">"##, lay.scale);
    out.push_str("<defs><linearGradient id=\"scale\" x1=\"0\" x2=\"1\" y1=\"0\" y2=\"0\">");
    for (at, c) in STOPS {
        let _ = write!(out, r##"<stop offset="{at:.2}" stop-color="#{:02x}{:02x}{:02x}"/>"##, c[0], c[1], c[2]);
    }
    out.push_str("</linearGradient></defs>\n");
    if !opts.title.is_empty() {
        let _ = writeln!(out, r#"<text x="8" y="18" font-size="14" font-weight="bold">{}</text>"#, escape(&opts.title));
    }
    let switch_cables = cables.iter().filter(|c| c.switches).count();
    let ca_cables = cables.len() - switch_cables;
    let total: u64 = cables.iter().filter(|c| c.switches).map(Cable::load).sum();
    let mean = if switch_cables == 0 { 0.0 } else { total as f64 / switch_cables as f64 };
    let _ = writeln!(
        out,
        r#"<text x="8" y="36">Cable colour and width: CA-to-CA routes over the cable in its busier direction (the forwarding index of routes check). {switch_cables} switch cables, {ca_cables} CA cables drawn.</text>"#
    );
    let _ = writeln!(out, r##"<rect x="8" y="56" width="240" height="14" fill="url(#scale)" stroke="#555"/>"##);
    let at = 8.0 + 240.0 * if max == 0 { 0.0 } else { mean / max as f64 };
    let _ = writeln!(out, r##"<line x1="{at:.1}" y1="52" x2="{at:.1}" y2="74" stroke="#000" stroke-width="2"/>"##);
    let _ = writeln!(out, r#"<text x="{at:.1}" y="49" text-anchor="middle">mean {mean:.0}</text>"#);
    let _ = writeln!(out, r#"<text x="8" y="86">0</text>"#);
    let _ = writeln!(out, r#"<text x="128" y="86" text-anchor="middle">{}</text>"#, max / 2);
    let _ = writeln!(out, r#"<text x="248" y="86" text-anchor="middle">max {max} routes</text>"#);
    let _ = writeln!(
        out,
        r#"<line x1="300" y1="63" x2="340" y2="63" stroke="{IDLE}" stroke-width="2" stroke-dasharray="5 3"/>"#
    );
    let _ = writeln!(out, r#"<text x="346" y="67">no routed load</text>"#);
    let _ = writeln!(out, r#"<line x1="460" y1="63" x2="500" y2="63" stroke="{CA_LINK}" stroke-width="2"/>"#);
    let _ = writeln!(out, r#"<text x="506" y="67">CA cable (no load figure)</text>"#);
    let mut y = 106.0;
    if let Some((cas, ca_cables)) = omitted {
        let _ = writeln!(
            out,
            r#"<text x="8" y="{y:.0}">{cas} CAs and their {ca_cables} cables not drawn (more than {} CAs); a tier-1 switch's tooltip counts its CA cables.</text>"#,
            opts.max_cas
        );
        y += 18.0;
    }
    if cables.len() > MAX_LINK_TITLES {
        let _ = writeln!(
            out,
            r#"<text x="8" y="{y:.0}">More than {MAX_LINK_TITLES} cables: no per-cable tooltips.</text>"#
        );
    }
    out.push_str("</g>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibsm_mad::PortNum;
    use ibsm_routing::check::Channel;
    use ibsm_topology::{GenSpec, by_tier};

    fn fat_tree(levels: u8, k: u8) -> Topology {
        let Ok(t) = GenSpec::fat_tree(levels, k).generate() else { panic!("generates") };
        t
    }

    /// A figure for every directed switch cable of `t`: `f(from, to)` routes.
    fn figures(t: &Topology, f: impl Fn(&str, &str) -> u64) -> Vec<ChannelLoad> {
        let mut v = Vec::new();
        for n in &t.nodes {
            for p in 1..=n.num_ports {
                let Some(peer) = n.peer(p) else { continue };
                let m = &t.nodes[peer.node];
                if n.kind == NodeKind::Switch && m.kind == NodeKind::Switch {
                    let channel = Channel { switch: n.node_guid, port: PortNum(p), to: m.node_guid };
                    v.push(ChannelLoad { channel, routes: f(&n.name, &m.name) });
                }
            }
        }
        v
    }

    fn links_group(svg: &str) -> &str {
        let start = svg.find("<g id=\"links\"").expect("links group");
        let end = svg[start..].find("</g>").expect("closed") + start;
        &svg[start..end]
    }

    fn switch_cables(t: &Topology) -> usize {
        t.nodes
            .iter()
            .filter(|n| n.kind == NodeKind::Switch)
            .flat_map(|n| n.links.iter().flatten())
            .filter(|p| t.nodes[p.node].kind == NodeKind::Switch)
            .count()
            / 2
    }

    #[test]
    fn scale_runs_from_cool_to_hot_and_idle_is_grey() {
        assert_eq!(load_colour(0, 10), IDLE);
        assert_eq!(load_colour(5, 0), IDLE);
        assert_eq!(load_colour(10, 10), HOT);
        assert_eq!(rgb(0.0), COOL);
        assert_eq!(rgb(1.0), HOT);
        assert_ne!(load_colour(1, 10), HOT);
        assert_eq!(rgb(0.5), "#7fbf3f");
    }

    #[test]
    fn names_are_escaped() {
        assert_eq!(escape(r#"a&b<c>"d'"#), "a&amp;b&lt;c&gt;&quot;d&apos;");
        assert_eq!(escape("x\u{1}y\tz"), "x\u{fffd}y\tz");
        let mut t = fat_tree(2, 4);
        t.nodes[0].name = r#"sp<ine> & "0's""#.to_owned();
        let svg = render(&t, &by_tier(&t), &[], &SvgOptions::default());
        assert!(svg.contains("sp&lt;ine&gt; &amp; &quot;0&apos;s&quot;"), "{svg}");
        assert!(!svg.contains("sp<ine>"));
    }

    #[test]
    fn natural_order_puts_10_after_2() {
        let mut v = vec!["leaf-10", "leaf-2", "leaf-1", "agg-0", "leaf-02", "h"];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(v, ["agg-0", "h", "leaf-1", "leaf-02", "leaf-2", "leaf-10"]);
    }

    #[test]
    fn every_cable_once_and_the_hottest_in_the_hot_colour() {
        let t = fat_tree(2, 4);
        // Spine-0's cables carry 1 route per direction, spine-1's 3 out of leaf-0 and 2 otherwise.
        let loads = figures(&t, |a, b| match (a, b) {
            ("leaf-0", "spine-1") => 3,
            (_, "spine-1") | ("spine-1", _) => 2,
            _ => 1,
        });
        let svg = render(&t, &by_tier(&t), &loads, &SvgOptions { title: "t".into(), ..SvgOptions::default() });
        let links = links_group(&svg);
        assert_eq!(links.matches("<path ").count(), t.link_count(), "8 switch + 8 CA cables");
        assert_eq!(links.matches(&format!("stroke=\"{CA_LINK}\"")).count(), t.ca_count());
        let hot: Vec<&str> = links.lines().filter(|l| l.contains(&format!("stroke=\"{HOT}\""))).collect();
        assert_eq!(hot.len(), 1, "{links}");
        assert!(hot[0].contains("leaf-0[4] -&gt; spine-1[1]: 3; back: 2"), "{}", hot[0]);
        assert!(svg.contains("max 3 routes"));
        // Ends of the file and balanced groups.
        assert!(svg.starts_with("<?xml") && svg.ends_with("</svg>\n"));
        assert_eq!(svg.matches("<g").count(), svg.matches("</g>").count());
    }

    #[test]
    fn no_figures_means_grey_and_dead_cables_are_not_drawn() {
        let mut t = fat_tree(2, 4);
        // Cut leaf-0 -- spine-0 at both ends.
        let (leaf, spine) = (t.find("leaf-0").expect("leaf"), t.find("spine-0").expect("spine"));
        let p = (1..=t.nodes[leaf].num_ports).find(|&p| t.nodes[leaf].peer(p).is_some_and(|x| x.node == spine));
        let p = p.expect("cabled");
        let q = t.nodes[leaf].peer(p).expect("peer").port;
        t.nodes[leaf].links[usize::from(p)] = None;
        t.nodes[spine].links[usize::from(q)] = None;
        let svg = render(&t, &by_tier(&t), &[], &SvgOptions::default());
        let links = links_group(&svg);
        assert_eq!(links.matches("<path ").count(), t.link_count());
        assert_eq!(links.matches(&format!("stroke=\"{IDLE}\"")).count(), switch_cables(&t));
        assert!(!links.contains("leaf-0[3]"), "the cut cable is gone");
        assert!(links.contains("no figure"));
    }

    #[test]
    fn above_the_ca_limit_only_switches_are_drawn_with_a_caption() {
        let t = fat_tree(3, 4);
        let loads = figures(&t, |_, _| 4);
        let opts = SvgOptions { max_cas: 8, title: String::new() };
        let svg = render(&t, &by_tier(&t), &loads, &opts);
        let links = links_group(&svg);
        assert_eq!(links.matches("<path ").count(), switch_cables(&t));
        assert_eq!(svg.matches("<circle").count(), 0);
        assert!(svg.contains("16 CAs and their 16 cables not drawn (more than 8 CAs)"), "{svg}");
        assert!(svg.contains("(2 CA cables, not drawn)"));
        // Every loaded cable is at the max: all hot.
        assert_eq!(links.matches(&format!("stroke=\"{HOT}\"")).count(), switch_cables(&t));
    }

    #[test]
    fn a_k48_fat_tree_stays_small_and_quick() {
        let t = fat_tree(3, 48);
        let loads = figures(&t, |a, b| (a.len() * 31 + b.len() * 7) as u64);
        let t0 = std::time::Instant::now();
        let svg = render(&t, &by_tier(&t), &loads, &SvgOptions::default());
        let took = t0.elapsed();
        assert_eq!(links_group(&svg).matches("<path ").count(), 55_296);
        assert!(svg.len() < 20_000_000, "{} bytes", svg.len());
        // Generous for debug builds on a loaded machine; release takes a fraction of this.
        assert!(took < std::time::Duration::from_secs(20), "{took:?}");
    }
}
