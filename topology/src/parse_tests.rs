//! Unit tests of the `.net` assembler: every syntax form and every error with its position.

use std::collections::HashMap;

use ibsm_mad::Guid;

use super::super::{LinkAttrs, NodeKind, Topology};
use super::TopoError;

fn parse(text: &str) -> Topology {
    match Topology::parse_str(text, "t.net") {
        Ok(t) => t,
        Err(e) => panic!("{e}"),
    }
}

fn err(text: &str) -> String {
    match Topology::parse_str(text, "fabric.net") {
        Ok(_) => panic!("parsed:\n{text}"),
        Err(e) => e.to_string(),
    }
}

fn peer(t: &Topology, name: &str, port: u8) -> Option<(String, u8)> {
    let n = &t.nodes[t.find(name)?];
    let p = n.peer(port)?;
    Some((t.nodes[p.node].name.clone(), p.port))
}

const IBSIM_STYLE: &str = "\
# two switches, three CAs
Switch\t8 \"Switch1\"
[1]\t\"Hca1\"[1]
[2]\t\"Hca2\"[2]
[3]\t\"Switch2\"[3]

Switch 8 \"Switch2\"
[3]\t\"Switch1\"[3]
[4]\t\"Hca3\"

Hca\t2 \"Hca1\"
[1]\t\"Switch1\"[1]

Ca\t2 \"Hca2\"
[2]\t\"Switch1\"[2]

Hca 1 \"Hca3\"
";

#[test]
fn ibsim_style_with_ibsim_guids() {
    let t = parse(IBSIM_STYLE);
    assert_eq!(t.nodes.len(), 5);
    assert_eq!(t.switch_count(), 2);
    assert_eq!(t.link_count(), 4);
    let g = |n: &str| t.nodes[t.find(n).unwrap()].node_guid;
    // ibsim: switches from 0x200000, one GUID each; CAs from 0x100000, ports + 1 each.
    assert_eq!(g("Switch1"), Guid(0x20_0000));
    assert_eq!(g("Switch2"), Guid(0x20_0001));
    assert_eq!(g("Hca1"), Guid(0x10_0000));
    assert_eq!(g("Hca2"), Guid(0x10_0003));
    assert_eq!(g("Hca3"), Guid(0x10_0006));
    let hca2 = &t.nodes[t.find("Hca2").unwrap()];
    assert_eq!(hca2.kind, NodeKind::Ca);
    assert_eq!(hca2.port_guid(2), Guid(0x10_0005));
    assert_eq!(hca2.sys_guid, Guid(0x10_0003));
    let sw = &t.nodes[t.find("Switch2").unwrap()];
    assert_eq!(sw.port_guid(0), Guid(0x20_0001));
    assert_eq!(sw.port_guid(5), Guid(0x20_0001));
    assert_eq!(sw.node_desc(), "Switch2");
    // Both-ends, one-end and default-remote-port forms.
    assert_eq!(peer(&t, "Switch1", 3), Some(("Switch2".into(), 3)));
    assert_eq!(peer(&t, "Switch2", 4), Some(("Hca3".into(), 1)));
    assert_eq!(peer(&t, "Hca3", 1), Some(("Switch2".into(), 4)));
    assert_eq!(peer(&t, "Hca2", 2), Some(("Switch1".into(), 2)));
    assert_eq!(peer(&t, "Hca2", 1), None);
    assert_eq!(t.nodes[0].links[0], None);
    assert_eq!(t.nodes[0].peer(1).unwrap().attrs, LinkAttrs::default());
}

const IBNETDISCOVER_STYLE: &str = "\
#
# Topology file: generated on Sat Nov 21 09:54:45 2026
#
# Initiated from node 0000000000200000 port 0000000000200000

Non-Chassis Nodes

vendid=0x2c9
devid=0xd2f0
sysimgguid=0x5000
switchguid=0x200001(200009)\t# 
Switch\t8 \"S-0000000000200001\"\t\t# \"spine one\" enhanced port 0 lid 7 lmc 0
[1]\t\"H-0000000000100003\"[1](100004) \t\t# \"host a\" lid 3 4xQDR
[3][ext 2]\t\"S-0000000000200000\"[3]\t\t# \"leaf\" lid 1 12xEDR

vendid=0x0
devid=0x0
switchguid=0x200000(200000)
Switch\t8 \"S-0000000000200000\"\t\t# \"leaf\" base port 0 lid 1 lmc 0
[3]\t\"S-0000000000200001\"[3]\t\t# \"spine one\" lid 7 12xEDR

vendid=0x2c9
devid=0x101b
sysimgguid=0x100003
caguid=0x100003
Ca\t2 \"H-0000000000100003\"\t\t# \"host a\"
[1](100004) \t\"S-0000000000200001\"[1]\t\t# lid 3 lmc 0 \"spine one\" lid 7 4xQDR
";

#[test]
fn ibnetdiscover_style() {
    let t = parse(IBNETDISCOVER_STYLE);
    assert_eq!(t.nodes.len(), 3);
    let spine = &t.nodes[0];
    assert_eq!(spine.name, "S-0000000000200001");
    assert_eq!(spine.desc.as_deref(), Some("spine one"));
    assert_eq!(spine.node_desc(), "spine one");
    assert_eq!(spine.node_guid, Guid(0x20_0001));
    assert_eq!(spine.port_guid(0), Guid(0x20_0009));
    assert_eq!(spine.sys_guid, Guid(0x5000));
    assert_eq!((spine.vendor_id, spine.device_id), (0x2c9, 0xd2f0));
    let leaf = &t.nodes[1];
    assert_eq!(leaf.sys_guid, leaf.node_guid);
    assert_eq!(leaf.vendor_id, 0);
    let ca = &t.nodes[2];
    assert_eq!(ca.node_guid, Guid(0x10_0003));
    assert_eq!(ca.port_guid(1), Guid(0x10_0004));
    assert_eq!((ca.vendor_id, ca.device_id), (0x2c9, 0x101b));
    assert_eq!(t.link_count(), 2);
    let qdr = LinkAttrs { width: Some(2), speed: Some(4), ext_speed: None };
    let edr12 = LinkAttrs { width: Some(8), speed: Some(4), ext_speed: Some(2) };
    assert_eq!(spine.peer(1).unwrap().attrs, qdr);
    assert_eq!(ca.peer(1).unwrap().attrs, qdr);
    assert_eq!(spine.peer(3).unwrap().attrs, edr12);
    assert_eq!(leaf.peer(3).unwrap().attrs, edr12);
}

#[test]
fn one_shot_and_sticky_node_values() {
    let t = parse("vendid=0x2c9\ndevid=0x1234\nsysimgguid=0x77\nHca 1 \"a\"\nHca 1 \"b\"\nvendid=5\nHca 1 \"c\"\n");
    let v: Vec<_> = t.nodes.iter().map(|n| (n.vendor_id, n.device_id, n.sys_guid)).collect();
    // ibsim: vendid and sysimgguid apply to the next node only; devid sticks.
    assert_eq!(v, [(0x2c9, 0x1234, Guid(0x77)), (0, 0x1234, Guid(0x10_0002)), (5, 0x1234, Guid(0x10_0004)),]);
}

#[test]
fn guid_bases_absolute_and_relative() {
    let t = parse(
        "caguid=0x1000\nCa 2 \"a\"\nCa 1 \"b\"\nhcaguids+0x100\nCa 1 \"c\"\nswitchguid=0x50\nSwitch 4 \"s\"\n\
         Switch 4 \"s2\"\nRt 2 \"r\"\nrtguid=0x900\nRt 1 \"r2\"\n",
    );
    let g: Vec<u64> = t.nodes.iter().map(|n| n.node_guid.0).collect();
    assert_eq!(g, [0x1000, 0x1003, 0x1100, 0x50, 0x51, 0, 0x900]);
    assert_eq!(t.nodes[5].kind, NodeKind::Router);
    assert_eq!(t.nodes[6].port_guid(1), Guid(0x901));
}

#[test]
fn link_options_and_defaults() {
    let t = parse(
        "Switch 4 \"s\"\n[1] \"a\"[1] w=8 s=2\n[2] \"b\"[1] w=3\n[3] \"c\"[1]\n[4] \"d\"[1] s=7 e=3\n\
         Ca 1 \"a\"\nCa 1 \"b\"\n[1] \"s\"[2] w=2\nwidth=1\nspeed=2\nCa 1 \"c\"\nCa 1 \"d\"\n[1] \"s\"[4] e=2\n",
    );
    let a = |p| t.nodes[0].peer(p).unwrap().attrs;
    assert_eq!(a(1), LinkAttrs { width: Some(8), speed: Some(2), ext_speed: None });
    // Both ends give a width mask: the widest common one.
    assert_eq!(a(2), LinkAttrs { width: Some(2), speed: None, ext_speed: None });
    // Node defaults from width=/speed= apply to the CA end.
    assert_eq!(a(3), LinkAttrs { width: Some(1), speed: Some(2), ext_speed: None });
    assert_eq!(a(4), LinkAttrs { width: Some(1), speed: Some(2), ext_speed: Some(2) });
    // Attributes are the same from both ends.
    assert_eq!(t.nodes[2].peer(1).unwrap().attrs, a(2));
}

#[test]
fn comments_blank_lines_crlf_and_do_lines() {
    let t = parse(
        "# c\r\n\r\n  Switch 2 \"s\"  \r\n  [1] \"s2\"[1]\r\n# inner\r\ndo Unlink \"s\"\r\n\r\nSwitch 2 \"s2\"\r\n",
    );
    assert_eq!(t.link_count(), 1);
    assert_eq!(peer(&t, "s2", 1), Some(("s".into(), 1)));
}

#[test]
fn includes_through_a_resolver() {
    let files: HashMap<&str, &str> = [
        ("dir/main.net", "include \"part.net\"\nSwitch 2 \"s\"\n[1] \"h\"[1]\n"),
        ("dir/part.net", "Ca 1 \"h\"\n[1] \"s\"[1]\n"),
    ]
    .into_iter()
    .collect();
    let mut resolver = |file: &str, from: &str| {
        let dir = from.rsplit_once('/').map_or("", |(d, _)| d);
        let path = format!("{dir}/{file}");
        files.get(path.as_str()).map(|t| (path.clone(), (*t).to_owned())).ok_or(format!("no {path}"))
    };
    let t = Topology::parse_with_includes(files["dir/main.net"], "dir/main.net", &mut resolver).unwrap();
    assert_eq!(t.nodes.len(), 2);
    assert_eq!(t.nodes[0].name, "h");
    assert_eq!(t.link_count(), 1);
    let e = Topology::parse_with_includes("\n\ninclude nope.net\n", "dir/main.net", &mut resolver).unwrap_err();
    assert_eq!(e.to_string(), "dir/main.net:3: cannot include \"nope.net\": no dir/nope.net");
}

#[test]
fn include_cycles_and_depth() {
    let mut cyc = |file: &str, _: &str| Ok((file.to_owned(), format!("Switch 1 \"{file}-x\"\ninclude b\n")));
    let e = Topology::parse_with_includes("include a\n", "top", &mut cyc).unwrap_err();
    assert_eq!(e.to_string(), "b:2: include cycle: \"b\" is already being parsed");
    let mut deep = |file: &str, _: &str| Ok((format!("{file}x"), format!("include {file}x\n")));
    let e = Topology::parse_with_includes("include a\n", "top", &mut deep).unwrap_err();
    assert!(matches!(e, TopoError::IncludeDepth { .. }), "{e}");
    assert_eq!(e.pos().map(|p| p.line), Some(1));
    let e = Topology::parse_str("Switch 1 \"s\"\ninclude \"x.net\"\n", "f.net").unwrap_err();
    assert!(e.to_string().starts_with("f.net:2: cannot include \"x.net\": "), "{e}");
}

#[test]
fn load_reads_files_and_includes_relative_to_the_includer() {
    let dir = std::env::temp_dir().join(format!("ibsm-topo-load-{}", std::process::id()));
    let sub = dir.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(dir.join("main.net"), "include sub/a.net\nSwitch 2 \"s\"\n[1] \"h\"[1]\n").unwrap();
    std::fs::write(sub.join("a.net"), "include \"../b.net\"\n").unwrap();
    std::fs::write(dir.join("b.net"), "Ca 1 \"h\"\n").unwrap();
    let t = Topology::load(&dir.join("main.net")).unwrap();
    assert_eq!(t.nodes.len(), 2);
    assert_eq!(t.link_count(), 1);
    std::fs::write(dir.join("b.net"), "Ca 1 \"h\"\n[2] \"s\"\n").unwrap();
    let e = Topology::load(&dir.join("main.net")).unwrap_err().to_string();
    assert_eq!(e, format!("{}:2: port 2 out of range for \"h\" (1 ports)", dir.join("b.net").display()));
    std::fs::write(dir.join("b.net"), "include sub/a.net\n").unwrap();
    let e = Topology::load(&dir.join("main.net")).unwrap_err();
    assert!(matches!(e, TopoError::IncludeCycle { .. }), "{e}");
    let e = Topology::load(&dir.join("missing.net")).unwrap_err();
    assert!(matches!(e, TopoError::Read { .. }), "{e}");
    assert!(e.to_string().starts_with(&format!("{}: cannot read: ", dir.join("missing.net").display())));
    std::fs::remove_dir_all(&dir).unwrap();
}

const NOT_NET: &str = "not a .net line, and no .net line before it in this file (its text is not quoted)";

#[test]
fn a_file_that_is_not_net_text_is_named_but_never_quoted() {
    let dir = std::env::temp_dir().join(format!("ibsm-topo-notnet-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let secret = "root:$6$salt$hash:19000:0:99999:7:::";
    std::fs::write(dir.join("shadow"), format!("{secret}\n")).unwrap();
    std::fs::write(dir.join("main.net"), "Switch 8 \"a\"\ninclude shadow\n").unwrap();
    let e = Topology::load(&dir.join("main.net")).unwrap_err().to_string();
    assert_eq!(e, format!("{}:1: {NOT_NET}", dir.join("shadow").display()));
    assert!(!e.contains("root"), "{e}");
    // The top-level file alike, and a bracketed first line (parsed as a port line) too.
    std::fs::write(dir.join("main.net"), "[credentials]\npassword = hunter2\n").unwrap();
    let e = Topology::load(&dir.join("main.net")).unwrap_err().to_string();
    assert_eq!(e, format!("{}:1: {NOT_NET}", dir.join("main.net").display()));
    // Devices and FIFOs are not read at all.
    std::fs::write(dir.join("main.net"), "Switch 8 \"a\"\ninclude /dev/zero\n").unwrap();
    let e = Topology::load(&dir.join("main.net")).unwrap_err().to_string();
    assert!(e.ends_with("cannot include \"/dev/zero\": not a regular file (a character device)"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn line_errors_carry_file_and_line() {
    let cases: &[(&str, &str)] = &[
        ("Ca 1 \"z\"\n\nSwich 8 \"a\"\n", "fabric.net:3: unrecognised line \"Swich 8 \\\"a\\\"\""),
        ("Ca 1 \"z\"\nSwitch 8 a\n", "fabric.net:2: expected a quoted node id after the port count, found \"a\""),
        ("Ca 1 \"z\"\nSwitch 300 \"a\"\n", "fabric.net:2: invalid port count (1..=255) \"300\""),
        ("Ca 1 \"z\"\nvendid=0xq\n", "fabric.net:2: invalid vendid \"0xq\""),
        // Before any .net line of the file, the text is not quoted.
        ("# fabric\n\nSwich 8 \"a\"\n", &format!("fabric.net:3: {NOT_NET}")),
        ("vendid=0xq\n", &format!("fabric.net:1: {NOT_NET}")),
        ("[1] \"a\"[1]\n", "fabric.net:1: port line before any node header"),
        (
            "Switch 2 \"a\"\n[1] \"b\"[1] w=99\n",
            "fabric.net:2: invalid link option \"w=99\": width mask must be 1..=31",
        ),
        ("Ca 1 \"z\"\nmodule=\"x\"\n", "fabric.net:2: ibsim's 'module' name prefix is not supported"),
        ("Switch 2 \"a\"\n@[1] \"x\"\n", "fabric.net:2: an ibsim port alias ('@') is not supported"),
    ];
    for (text, want) in cases {
        assert_eq!(&err(text), want);
    }
}

#[test]
fn node_errors() {
    let text = format!("{}Switch 8 \"sw1\"\n[9] \"x\"[1]\n", "\n".repeat(15));
    assert_eq!(err(&text), "fabric.net:17: port 9 out of range for \"sw1\" (8 ports)");
    assert_eq!(err("Ca 2 \"c\"\n[0] \"x\"[1]\n"), "fabric.net:2: port 0 out of range for \"c\" (2 ports)");
    assert_eq!(
        err("Switch 8 \"a\"\n[1] \"b\"[1]\n[1] \"c\"[1]\n"),
        "fabric.net:3: port 1 of \"a\" already listed at fabric.net:2"
    );
    assert_eq!(err("Switch 8 \"a\"\n\nCa 1 \"a\"\n"), "fabric.net:3: node \"a\" already defined at fabric.net:1");
    assert_eq!(
        err("Switch 8 \"a\"\nswitchguid=0x200000\nSwitch 8 \"b\"\n"),
        "fabric.net:3: NodeGUID 0x0000000000200000 of \"b\" is already used by \"a\""
    );
    assert_eq!(err("Switch 8 \"a#1\"\n"), "fabric.net:1: bad node id \"a#1\": must be non-empty, without '#' or '@'");
    assert_eq!(err("Switch 8 \"\"\n"), "fabric.net:1: bad node id \"\": must be non-empty, without '#' or '@'");
}

#[test]
fn link_errors() {
    assert_eq!(err("Switch 8 \"a\"\n[1] \"zz\"[1]\n"), "fabric.net:2: link to unknown node \"zz\"");
    assert_eq!(
        err("Switch 8 \"a\"\n[1] \"b\"[3]\nCa 2 \"b\"\n"),
        "fabric.net:2: port 3 out of range for \"b\" (2 ports)"
    );
    assert_eq!(err("Switch 8 \"a\"\n[1] \"a\"[1]\n"), "fabric.net:2: \"a\"[1] is cabled to itself");
    assert_eq!(
        err("Switch 8 \"sw0\"\n[2] \"sw0\"[3]\n"),
        "fabric.net:2: \"sw0\"[2] is cabled to \"sw0\"[3] of the same node (a loopback cable)"
    );
    assert_eq!(
        err("Switch 8 \"sw0\"\n[3] \"sw0\"[2]\n[2] \"sw0\"[3]\n"),
        "fabric.net:2: \"sw0\"[3] is cabled to \"sw0\"[2] of the same node (a loopback cable)"
    );
    // Both ends listed, disagreeing.
    assert_eq!(
        err("Switch 8 \"a\"\n[1] \"b\"[2]\nSwitch 8 \"b\"\n[2] \"a\"[3]\n"),
        "fabric.net:4: \"b\"[2] is cabled to \"a\"[3] here, but \"a\"[1] is cabled to \"b\"[2] at fabric.net:2"
    );
    // Two one-sided lines claiming the same remote port.
    assert_eq!(
        err("Switch 8 \"a\"\n[1] \"c\"[1]\n[2] \"c\"[1]\nCa 1 \"c\"\n"),
        "fabric.net:3: \"a\"[2] is cabled to \"c\"[1] here, but \"a\"[1] is cabled to \"c\"[1] at fabric.net:2"
    );
    assert_eq!(
        err("Switch 8 \"a\"\n[1] \"b\"[1] w=1\nSwitch 8 \"b\"\n[1] \"a\"[1] w=2\n"),
        "fabric.net:2: \"a\"[1] and \"b\"[1] have no common link width (masks 0x1 and 0x2)"
    );
    assert_eq!(
        err("Switch 8 \"a\"\n[1] \"b\"[1] s=1\nspeed=4\nSwitch 8 \"b\"\n"),
        "fabric.net:2: \"a\"[1] and \"b\"[1] have no common link speed (masks 0x1 and 0x4)"
    );
}

#[test]
fn port_guid_errors() {
    assert_eq!(
        err("Switch 8 \"a\"\n[1] \"c\"[1](99)\nCa 1 \"c\"\n[1](98) \"a\"[1]\n"),
        "fabric.net:2: port GUID of \"c\"[1] given as 0x0000000000000099 here but 0x0000000000000098 elsewhere"
    );
    assert_eq!(
        err("Ca 1 \"c\"\n[1] \"a\"[1](1234)\nswitchguid=0x77\nSwitch 8 \"a\"\n"),
        "fabric.net:2: port GUID of \"a\"[1] given as 0x0000000000001234 here but 0x0000000000000077 elsewhere"
    );
    assert_eq!(
        err("Switch 8 \"a\"\n[1](55) \"c\"[1]\nCa 1 \"c\"\n"),
        "fabric.net:2: port GUID of \"a\"[1] given as 0x0000000000000055 here but 0x0000000000200000 elsewhere"
    );
    // A remote GUID hint sets the port GUID of a CA whose own line does not give it.
    let t = parse("Switch 8 \"a\"\n[1] \"c\"[1](abc)\nCa 1 \"c\"\n");
    assert_eq!(t.nodes[1].port_guid(1), Guid(0xabc));
}

#[test]
fn errors_expose_their_position() {
    let e = Topology::parse_str("Switch 8 \"a\"\n\n[1] \"b\"[1]\n", "x.net").unwrap_err();
    let pos = e.pos().unwrap();
    assert_eq!((pos.origin.as_str(), pos.line), ("x.net", 3));
}
