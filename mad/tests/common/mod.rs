//! Loader for the captured byte fixtures in `mad/tests/fixtures/*.fix`.
//!
//! The format (see `fixtures/README.md`) is line based: `#` comments, `garbage: <section>
//! <start>..<end> <reason>` lines naming bytes a test must ignore, `tool: <text>` lines holding
//! what the capturing tool printed, and `<section>:` headers followed by hex lines (16 bytes a
//! line). This module only reads that text; it encodes nothing, so every expectation a test takes
//! from here comes from the capture, not from ibsm's encoder.
#![allow(dead_code)]

use std::collections::BTreeMap;

use ibsm_mad::Attribute;
use ibsm_mad::header::MadHeader;
use ibsm_mad::smp::{SmpRepr, SmpRoute};
use std::ops::Range;

// One parsed fixture file.
pub struct Fixture {
    // File name, for messages.
    pub name: &'static str,
    // Hex sections by name (`request`, `response`, `record`, `trap`, ...).
    pub sections: BTreeMap<String, Vec<u8>>,
    // Lines the tool printed, in order.
    pub tool: Vec<String>,
    // Byte ranges to ignore, by section, with the reason.
    pub garbage: Vec<(String, Range<usize>, String)>,
}

impl Fixture {
    // Parses the text of a fixture file; panics (test failure) on malformed text.
    pub fn parse(name: &'static str, text: &str) -> Fixture {
        let mut f = Fixture { name, sections: BTreeMap::new(), tool: Vec::new(), garbage: Vec::new() };
        let mut current: Option<String> = None;
        for line in text.lines() {
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            if let Some(rest) = line.strip_prefix("tool: ") {
                f.tool.push(rest.to_string());
                current = None;
            } else if line == "tool:" {
                f.tool.push(String::new());
                current = None;
            } else if let Some(rest) = line.strip_prefix("garbage: ") {
                let mut it = rest.splitn(3, ' ');
                let sec = it.next().unwrap_or_default().to_string();
                let range = it.next().unwrap_or_default();
                let (a, b) = range.split_once("..").unwrap_or_else(|| panic!("{name}: bad range {range}"));
                let r = a.parse().unwrap()..b.parse().unwrap();
                f.garbage.push((sec, r, it.next().unwrap_or_default().to_string()));
            } else if let Some(sec) = line.strip_suffix(':').filter(|s| !s.contains(' ')) {
                current = Some(sec.to_string());
                f.sections.entry(sec.to_string()).or_default();
            } else {
                let sec = current.as_ref().unwrap_or_else(|| panic!("{name}: hex outside a section: {line}"));
                let bytes = f.sections.get_mut(sec).unwrap();
                for w in line.split_whitespace() {
                    bytes.push(u8::from_str_radix(w, 16).unwrap_or_else(|_| panic!("{name}: bad hex {w}")));
                }
            }
        }
        f
    }

    // The bytes of a section; panics if the fixture has none.
    pub fn bytes(&self, section: &str) -> &[u8] {
        self.sections.get(section).unwrap_or_else(|| panic!("{}: no section {section}", self.name))
    }

    // True when byte `i` of `section` is declared garbage.
    pub fn is_garbage(&self, section: &str, i: usize) -> bool {
        self.garbage.iter().any(|(s, r, _)| s == section && r.contains(&i))
    }

    // The value the tool printed for `key`, in either smpquery style (`Key:.....value`) or
    // saquery style (`\t\tkey.....value`). The first match wins; panics if absent.
    pub fn tool_value(&self, key: &str) -> &str {
        self.tool_values(key).into_iter().next().unwrap_or_else(|| panic!("{}: tool printed no {key}", self.name))
    }

    // Every value the tool printed for `key`, in order.
    pub fn tool_values(&self, key: &str) -> Vec<&str> {
        let mut out = Vec::new();
        for line in &self.tool {
            let t = line.trim_start();
            let Some(rest) = t.strip_prefix(key) else { continue };
            if !(rest.starts_with(':') || rest.starts_with('.')) {
                continue;
            }
            out.push(rest.trim_start_matches(':').trim_start_matches('.').trim());
        }
        out
    }

    // `tool_value` read as a number (`0x` hex or decimal, trailing text ignored).
    pub fn tool_num(&self, key: &str) -> u64 {
        num(self.tool_value(key))
    }

    // Compares `ours` with `section[range]`, skipping declared garbage bytes. Returns the number
    // of bytes compared so a caller can assert that the comparison was not vacuous.
    pub fn assert_bytes_eq(&self, section: &str, start: usize, ours: &[u8], what: &str) -> usize {
        let theirs = self.bytes(section);
        let mut compared = 0;
        for (k, b) in ours.iter().enumerate() {
            let i = start + k;
            if self.is_garbage(section, i) {
                continue;
            }
            assert_eq!(
                *b, theirs[i],
                "{}: {what}: byte {i} of {section} differs: ours {b:#04x}, captured {:#04x}",
                self.name, theirs[i]
            );
            compared += 1;
        }
        compared
    }
}

// Parses `0x1f`, `31`, `0x1F (...)`: the leading number of a tool value.
pub fn num(s: &str) -> u64 {
    let s = s.trim();
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        let end = h.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(h.len());
        u64::from_str_radix(&h[..end], 16).unwrap_or_else(|_| panic!("not a hex number: {s}"))
    } else {
        let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        s[..end].parse().unwrap_or_else(|_| panic!("not a number: {s}"))
    }
}

// SMP data area: byte 64..128 in both LID-routed and directed-route SMPs (IBTA 14.2.1.1/2).
pub const SMP_DATA: core::ops::Range<usize> = 64..128;

// Decodes the attribute in the response's SMP data area, re-emits it, and compares the bytes.
pub fn attr_round_trip<A: Attribute + core::fmt::Debug>(f: &Fixture) -> A {
    let rsp = f.bytes("response");
    let a = A::parse(&rsp[SMP_DATA]).unwrap_or_else(|e| panic!("{}: parse: {e}", f.name));
    let mut out = vec![0u8; A::LEN];
    a.emit(&mut out);
    let n = f.assert_bytes_eq("response", SMP_DATA.start, &out, "attribute re-emitted");
    assert_eq!(n, A::LEN.min(64), "{}: compared fewer bytes than the attribute", f.name);
    a
}

// Decodes the MAD header of `section`, re-emits it, and compares the 24 bytes.
pub fn header_round_trip(f: &Fixture, section: &str) -> MadHeader {
    let b = f.bytes(section);
    let h = MadHeader::from_bytes(b).unwrap_or_else(|e| panic!("{}: header: {e}", f.name));
    let mut out = [0u8; 24];
    h.emit(&mut out);
    f.assert_bytes_eq(section, 0, &out, "MAD header re-emitted");
    h
}

// Checks the SMP request/response headers against the captured bytes and each other.
pub fn check_smp_headers(f: &Fixture, attr_id: u16) {
    let req = header_round_trip(f, "request");
    let rsp = header_round_trip(f, "response");
    for h in [&req, &rsp] {
        h.validate().unwrap_or_else(|e| panic!("{}: validate: {e}", f.name));
        assert_eq!(h.base_version, 1, "{}", f.name);
        assert_eq!(h.class_version, 1, "{}", f.name);
        assert_eq!(h.attr_id, attr_id, "{}", f.name);
    }
    assert_eq!(req.method.raw(), 0x01, "{}: request is a Get", f.name);
    assert_eq!(rsp.method.raw(), 0x81, "{}: response is a GetResp", f.name);
    assert_eq!(rsp.mgmt_class.raw(), req.mgmt_class.raw());
    assert_eq!(rsp.attr_mod, req.attr_mod);
    // ibsim rewrites the upper 32 TID bits of responses (README): compare the lower 32.
    assert_eq!(rsp.tid & 0xffff_ffff, req.tid & 0xffff_ffff, "{}: TID", f.name);
    let (q, r) = (smp_round_trip(f, "request"), smp_round_trip(f, "response"));
    assert_eq!((q.attr_id, r.attr_id), (attr_id, attr_id), "{}", f.name);
    assert_eq!(r.status, 0, "{}: status", f.name);
    assert_eq!(&r.data[..], &f.bytes("response")[SMP_DATA], "{}: SMP data", f.name);
}

// Parses a whole captured SMP with [`SmpRepr`], re-emits it and compares all 256 bytes except
// the declared garbage. Returns the parsed SMP.
pub fn smp_round_trip(f: &Fixture, section: &str) -> SmpRepr {
    let b = f.bytes(section);
    let smp = SmpRepr::parse(b).unwrap_or_else(|e| panic!("{}: {section}: SmpRepr::parse: {e}", f.name));
    let mut out = smp.to_bytes();
    if matches!(smp.route, SmpRoute::Directed { .. }) {
        // InitialPath[0] and ReturnPath[0] (bytes 128 and 192) are unused by the spec (paths
        // are indexed from 1), and ibsim writes its exit port into ReturnPath[0]: not data.
        out[128] = b[128];
        out[192] = b[192];
    }
    let n = f.assert_bytes_eq(section, 0, &out, "SMP re-emitted by SmpRepr");
    assert!(n >= 224, "{}: only {n} bytes compared", f.name);
    if let SmpRoute::Directed { hop_count, dr_slid, dr_dlid, .. } = smp.route {
        assert_eq!(hop_count, b[7], "{}: HopCount", f.name);
        // ibsim accepts only DR SMPs without a LID-routed part (ibsim.md §7).
        assert_eq!((dr_slid.get(), dr_dlid.get()), (0xffff, 0xffff), "{}", f.name);
    }
    smp
}
