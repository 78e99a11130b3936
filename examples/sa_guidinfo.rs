//! A test client for alias GUIDs, run under `ibsim-run` by `tests/ibsim_alias_guids.rs`: sends
//! one SubnAdmSet or SubnAdmDelete(GUIDInfoRecord) for block 0 of a port, from this host's
//! port through the umad device, to the SA at a LID, and prints the answer's status and the
//! block's GUIDs as the SA answered them. `saquery` sends no Set, so the comparison of ibsm
//! with OpenSM needs this.
//!
//! Usage: `sa_guidinfo set|delete SA_LID PORT_LID GUID1 [GUID2 ...]` (GUIDs for indexes 1, 2,
//! ... of block 0, in hex). Exit 0 when an answer came, 2 on bad arguments, 1 otherwise.

use std::process::ExitCode;

use ibsm::core::io::{Address, GSI_QKEY};
use ibsm::transport::umad::{AgentClass, UmadPort, find_port};
use ibsm_mad::attrs::GuidInfo;
use ibsm_mad::header::Method;
use ibsm_mad::records::GuidInfoRecord;
use ibsm_mad::sa::{SA_HEADER_LEN, SaHeader, request};
use ibsm_mad::{Attribute, Guid, Lid};

fn parse_hex(s: &str) -> Option<u64> {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).ok()
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let method = match args.first().map(String::as_str) {
        Some("set") => Method::Set,
        Some("delete") => Method::Delete,
        _ => {
            eprintln!("usage: sa_guidinfo set|delete SA_LID PORT_LID GUID1 [GUID2 ...]");
            return ExitCode::from(2);
        }
    };
    let lids: Option<Vec<u16>> = args.get(1..3).map(|l| l.iter().filter_map(|s| s.parse().ok()).collect());
    let guids: Option<Vec<u64>> = args.get(3..).map(|g| g.iter().filter_map(|s| parse_hex(s)).collect());
    let (Some([sa_lid, port_lid]), Some(guids)) = (lids.as_deref().and_then(|l| <[u16; 2]>::try_from(l).ok()), guids)
    else {
        eprintln!("sa_guidinfo: bad arguments");
        return ExitCode::from(2);
    };
    if guids.is_empty() || guids.len() > 7 || guids.len() + 3 != args.len() {
        eprintln!("sa_guidinfo: one to seven GUIDs, for indexes 1..=7");
        return ExitCode::from(2);
    }
    let mut rec = GuidInfoRecord { lid: Lid(port_lid), block_num: 0, guid_info: GuidInfo::default() };
    let mut mask = GuidInfoRecord::COMP_LID | GuidInfoRecord::COMP_BLOCK_NUM;
    for (i, &g) in guids.iter().enumerate() {
        rec.guid_info.guids[i + 1] = Guid(g);
        mask |= GuidInfoRecord::COMP_GUID0 << (i + 1);
    }
    let tid = 0x5a_0001_u64;
    let Ok(bytes) = request(method, mask, tid, &rec) else {
        eprintln!("sa_guidinfo: cannot build the request");
        return ExitCode::FAILURE;
    };
    let port = match find_port(None, None).and_then(|loc| UmadPort::open(&loc)) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("sa_guidinfo: {e}");
            return ExitCode::FAILURE;
        }
    };
    let to = Address { lid: Lid(sa_lid), qpn: 1, qkey: GSI_QKEY, pkey_index: 0, sl: 0, grh: None };
    if let Err(e) = port.send(AgentClass::SubnAdm, &bytes, &to, 1000) {
        eprintln!("sa_guidinfo: send: {e}");
        return ExitCode::FAILURE;
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while std::time::Instant::now() < deadline {
        let got = match port.recv(200) {
            Ok(Some(r)) => r,
            Ok(None) => continue,
            Err(e) => {
                eprintln!("sa_guidinfo: recv: {e}");
                return ExitCode::FAILURE;
            }
        };
        let Ok(h) = SaHeader::from_bytes(&got.mad) else { continue };
        if h.tid & 0xffff_ffff != tid & 0xffff_ffff {
            continue;
        }
        println!("status 0x{:04x}", h.status);
        if let Some(r) = got.mad.get(SA_HEADER_LEN..).and_then(|d| GuidInfoRecord::parse(d).ok()) {
            for (i, g) in r.guid_info.guids.iter().enumerate() {
                println!("guid{i} 0x{:016x}", g.0);
            }
        }
        return ExitCode::SUCCESS;
    }
    eprintln!("sa_guidinfo: no answer within 5 s");
    ExitCode::FAILURE
}
