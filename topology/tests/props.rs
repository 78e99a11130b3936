//! Property tests of the `.net` reader and writer: generated topologies (with random link
//! attributes, descriptions and ids layered on top) survive `to_net` and `parse_str`
//! unchanged; whatever the parser accepts it writes back to an equivalent file; and no input
//! text, random or a mangled real file, makes the parser panic.

use core::fmt::Write as _;

use ibsm_mad::Guid;
use ibsm_topology::generators::{FatTree, GenSpec, RandomGraph};
use ibsm_topology::{LinkAttrs, Topology};
use proptest::prelude::*;

fn spec() -> impl Strategy<Value = GenSpec> {
    prop_oneof![
        (1u8..=6, 1u8..=3).prop_map(|(h, r)| GenSpec::FatTree(FatTree::new(2, h * 2).oversubscribed(r))),
        (2u8..=4, 0usize..4, 0usize..3, any::<u64>())
            .prop_map(|(h, l, s, seed)| GenSpec::FatTree(FatTree::new(3, h * 2).degraded(l, s, seed))),
        (1u8..=4, 1u8..=4).prop_map(|(h, r)| GenSpec::rail_fat_tree(h * 2, r)),
        (prop::collection::vec(1u16..=4, 1..=3), any::<bool>(), 0u8..=2)
            .prop_map(|(dims, wrap, h)| { if wrap { GenSpec::torus(&dims, h) } else { GenSpec::mesh(&dims, h) } }),
        (1usize..=12, 4u8..=8, 0u8..=2, 0usize..=10, any::<u64>()).prop_map(|(n, k, h, extra, seed)| {
            GenSpec::Random(RandomGraph { switches: n, radix: k, hosts_per_switch: h, links: n - 1 + extra, seed })
        }),
    ]
}

/// A generated topology (invalid specs skipped) with random single-bit link attributes,
/// descriptions, vendor and device ids layered on.
fn topology() -> impl Strategy<Value = Topology> {
    (spec(), any::<u64>()).prop_filter_map("spec not generable", |(spec, salt)| {
        let mut t = spec.generate().ok()?;
        let mut x = salt;
        let mut next = move || {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            x >> 33
        };
        for i in 0..t.nodes.len() {
            if next() % 3 == 0 {
                t.nodes[i].desc = Some(format!("node {i} # {}", next() % 100));
            }
            t.nodes[i].vendor_id = (next() & 0xff_ffff) as u32;
            t.nodes[i].device_id = next() as u16;
            t.nodes[i].sys_guid = Guid(next() | 1);
            for p in 1..t.nodes[i].links.len() {
                let Some(peer) = t.nodes[i].links[p] else { continue };
                if (peer.node, usize::from(peer.port)) < (i, p) {
                    continue; // set from the lower end only
                }
                let pick = |v: u64, set: &[u8]| (v % (set.len() as u64 + 1)).checked_sub(1).map(|j| set[j as usize]);
                let attrs = LinkAttrs {
                    width: pick(next(), &[1, 2, 4, 8, 16]),
                    speed: pick(next(), &[1, 2, 4]),
                    ext_speed: pick(next(), &[1, 2, 4, 8]),
                };
                for (n, q) in [(i, p), (peer.node, usize::from(peer.port))] {
                    if let Some(Some(e)) = t.nodes[n].links.get_mut(q) {
                        e.attrs = attrs;
                    }
                }
            }
        }
        Some(t)
    })
}

/// `.net` text over up to five nodes `n0..n4` of four ports: headers with optional
/// descriptions and preceding id lines, port lines in every syntax form aimed at those nodes
/// (so many inputs parse and get cables, and many hit conflicts), and occasional junk.
fn netish() -> impl Strategy<Value = String> {
    let port_no = prop_oneof![12 => 1u8..=4, 1 => Just(5u8)];
    let guid = prop::option::weighted(0.15, 1u64..0x40);
    let port_line = (
        port_no,
        0u8..5,
        prop::option::weighted(0.9, 1u8..=4),
        guid,
        prop::sample::select(vec![
            "",
            " w=3",
            " s=7 e=1",
            " w=8 s=2",
            "\t# lid 1 lmc 0 \"x\" lid 2 4xQDR",
            "\t# \"y\" lid 9 12xNDR",
            " w=1",
        ]),
    )
        .prop_map(|(p, i, q, g, tail)| {
            let q = q.map(|q| format!("[{q}]")).unwrap_or_default();
            match g {
                Some(g) => format!("[{p}]({g:x}) \"n{i}\"{q}{tail}\n"),
                None => format!("[{p}] \"n{i}\"{q}{tail}\n"),
            }
        });
    let pre = prop::sample::select(vec![
        "",
        "",
        "",
        "switchguid=0x200000(200009)\n",
        "caguid=0x100000\n",
        "hcaguids+8\n",
        "rtguid=0x5\n",
        "vendid=0x2c9\ndevid=7\nsysimgguid=0x0\n",
        "width=3\n",
        "speed=7\nextspeed=3\n",
        "do Unlink \"n0\"\n",
        "# comment\n\n",
        "include \"x\"\n",
        "[1] \"n0\"[1]\n",
        "[\"",
        "é\n",
    ]);
    let node = (
        pre,
        prop::sample::select(vec!["Switch", "Ca", "Hca", "Rt"]),
        prop::option::of("[a-z ]{0,6}"),
        prop::collection::vec(port_line, 0..4),
    );
    prop::collection::vec(node, 0..5).prop_map(|nodes| {
        let mut text = String::new();
        for (i, (pre, kind, desc, ports)) in nodes.into_iter().enumerate() {
            text.push_str(pre);
            // Writing to a String cannot fail.
            let _ = match desc {
                Some(d) => writeln!(text, "{kind} 4 \"n{i}\"\t# \"{d}\" base port 0 lid 3 lmc 0"),
                None => writeln!(text, "{kind} 4 \"n{i}\""),
            };
            text.push_str(&ports.concat());
            text.push('\n');
        }
        text
    })
}

fn example() -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/two-switch.ibnetdiscover");
    std::fs::read_to_string(path).unwrap()
}

proptest! {
    #[test]
    fn generated_topologies_round_trip(t in topology()) {
        let text = t.to_net();
        let back = Topology::parse_str(&text, "gen.net");
        prop_assert_eq!(back.as_ref(), Ok(&t), "{}", text);
    }

    #[test]
    fn arbitrary_text_never_panics(s in any::<String>()) {
        let _ = Topology::parse_str(&s, "any.net");
    }

    #[test]
    fn accepted_text_rewrites_to_the_same_topology(s in netish()) {
        if let Ok(t) = Topology::parse_str(&s, "frag.net") {
            let back = Topology::parse_str(&t.to_net(), "again.net");
            prop_assert_eq!(back.as_ref(), Ok(&t), "{}", s);
        }
    }

    #[test]
    fn mangled_real_files_never_panic(edits in prop::collection::vec((any::<prop::sample::Index>(), 0u8..4, any::<char>()), 1..8)) {
        let mut text: Vec<char> = example().chars().collect();
        for (at, op, c) in edits {
            if text.is_empty() { break; }
            let i = at.index(text.len());
            match op {
                0 => { text.remove(i); }
                1 => text.insert(i, c),
                2 => text[i] = c,
                _ => { let line: Vec<char> = text[i..].iter().take_while(|&&x| x != '\n').copied().collect(); text.splice(i..i, line); }
            }
        }
        let s: String = text.into_iter().collect();
        if let Ok(t) = Topology::parse_str(&s, "mangled.net") {
            let back = Topology::parse_str(&t.to_net(), "again.net");
            prop_assert_eq!(back.as_ref(), Ok(&t));
        }
    }
}
