//! Tests of the umad transport: the ioctl numbers and structures, the `ib_user_mad` header
//! both ways, the port selection and the sysfs reads.

use super::*;

/// `_IOC(dir, type, nr, size)` as `<asm-generic/ioctl.h>` defines it, to check the constants
/// independently of how they were written down.
fn ioc(dir: u32, ty: u32, nr: u32, size: u32) -> u32 {
    (dir << 30) | (size << 16) | (ty << 8) | nr
}

#[test]
fn ioctl_numbers_follow_the_ioc_formula() {
    const WRITE: u32 = 1;
    const READ: u32 = 2;
    assert_eq!(ioctl_nr::REGISTER_AGENT, ioc(READ | WRITE, 0x1b, 1, 28));
    assert_eq!(ioctl_nr::ENABLE_PKEY, ioc(0, 0x1b, 3, 0));
    assert_eq!(ioctl_nr::REGISTER_AGENT2, ioc(READ | WRITE, 0x1b, 4, 40));
    assert_eq!(std::mem::size_of::<RegReq>(), 28);
    assert_eq!(std::mem::size_of::<RegReq2>(), 40);
}

#[test]
fn reg_req_layout_for_sa() {
    let r = reg_req(AgentClass::SubnAdm).0;
    assert_eq!(&r[20..24], &[1, 0x03, 2, 0], "qpn, class, version, oui[0]");
    assert_eq!(r[26], 1, "rmpp version");
    // GET (1), SET (2): byte 4 bits 1 and 2; GET_TABLE 0x12 = 18: byte 4+2 bit 2;
    // 0x13, 0x14, 0x15: byte 6 bits 3, 4, 5 (on a little-endian host).
    if cfg!(target_endian = "little") {
        assert_eq!(r[4], 0b0000_0110);
        assert_eq!(r[6], 0b0011_1100);
        assert!(r[7..20].iter().all(|&b| b == 0));
    }
}

#[test]
fn reg_req2_layout_for_perf_mgt() {
    let r = reg_req2(AgentClass::PerfMgt).0;
    assert_eq!(u32::from_ne_bytes([r[4], r[5], r[6], r[7]]), 1, "qpn 1");
    assert_eq!((r[8], r[9]), (0x04, 1), "class 0x04, version 1");
    assert_eq!(&r[16..32], &[0; 16], "no unsolicited methods");
    assert_eq!(r[36], 0, "no RMPP");
    assert_eq!(AgentClass::of_class(0x04), Some(AgentClass::PerfMgt));
}

#[test]
fn reg_req2_layout_for_dr_smp() {
    let r = reg_req2(AgentClass::SubnDr).0;
    assert_eq!(u32::from_ne_bytes([r[4], r[5], r[6], r[7]]), 0, "qpn 0");
    assert_eq!((r[8], r[9]), (0x81, 1));
    let lo = u64::from_ne_bytes(r[16..24].try_into().unwrap());
    assert_eq!(lo, (1 << 1) | (1 << 2) | (1 << 5));
    assert_eq!(&r[24..32], &[0; 8]);
    assert_eq!(r[36], 0);
}

#[test]
fn header_encodes_address_in_network_order() {
    let to = Address { lid: Lid(0x1234), qpn: 1, qkey: GSI_QKEY, pkey_index: 3, sl: 2, grh: None };
    let h = encode_header(HEADER_LEN_OLD, 7, &to, MAD_LEN, 200);
    assert_eq!(h.len(), 56);
    assert_eq!(&h[0..4], &7u32.to_ne_bytes());
    assert_eq!(&h[8..12], &200u32.to_ne_bytes());
    assert_eq!(&h[16..20], &(56u32 + 256).to_ne_bytes());
    assert_eq!(&h[20..24], &[0, 0, 0, 1]);
    assert_eq!(&h[24..28], &[0x80, 0x01, 0x00, 0x00]);
    assert_eq!(&h[28..30], &[0x12, 0x34]);
    assert_eq!(h[30], 2, "SL");
    assert_eq!(h[32], 0, "no GRH");
    let gid = Gid::from_bytes(&[0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 2, 0xc9, 3, 0, 1, 2, 3]);
    let grh = Grh { gid, gid_index: 0, hop_limit: 64, traffic_class: 5, flow_label: 0x1_2345 };
    let h = encode_header(HEADER_LEN_PKEY, 0, &Address { grh: Some(grh), ..to }, MAD_LEN, 0);
    assert_eq!(h.len(), 64);
    assert_eq!(&h[56..58], &3u16.to_ne_bytes(), "P_Key index in the new header");
    // What the kernel hands back for such a packet decodes to the same GRH, SL and index.
    let mut back = h.clone();
    back.extend_from_slice(&[0u8; MAD_LEN]);
    let r = decode_received(&back, HEADER_LEN_PKEY);
    assert_eq!((r.grh, r.sl, r.pkey_index), (Some(grh), 2, 3));
    let r = decode_received(&back[8..], HEADER_LEN_OLD);
    assert_eq!((r.grh, r.pkey_index), (None, 0), "the old header's GRH bytes are not trusted");
}

#[test]
fn received_header_decodes_and_short_buffers_do_not_panic() {
    let mut buf = vec![0u8; 56 + 256];
    buf[0..4].copy_from_slice(&3u32.to_ne_bytes());
    buf[4..8].copy_from_slice(&110u32.to_ne_bytes());
    buf[20..24].copy_from_slice(&[0, 0, 0, 1]);
    buf[28..30].copy_from_slice(&[0xff, 0xff]);
    buf[56] = 1;
    buf[56 + 255] = 0xab;
    let r = decode_received(&buf, 56);
    assert_eq!((r.agent_id, r.status, r.slid, r.sqpn), (3, STATUS_TIMEOUT, Lid::PERMISSIVE, 1));
    assert_eq!((r.mad[0], r.mad[255]), (1, 0xab));
    for len in [0, 3, 30, 56, 57] {
        let r = decode_received(&buf[..len], 64);
        assert_eq!(r.mad, vec![0u8; MAD_LEN]);
    }
}

#[test]
fn a_reused_buffer_decodes_as_a_fresh_one() {
    // The MAD thread decodes each read into the buffers of the last batch: nothing of the
    // earlier MAD (a GRH, a longer RMPP body, its bytes past a short read) may survive.
    let grh = Grh { gid: Gid::from_bytes(&[7; 16]), gid_index: 2, hop_limit: 9, traffic_class: 1, flow_label: 5 };
    let to = Address { qpn: 1, qkey: GSI_QKEY, lid: Lid(4), sl: 3, pkey_index: 6, grh: Some(grh) };
    let mut long = encode_header(HEADER_LEN_PKEY, 2, &to, 600, 0);
    long.extend((0..600u32).map(|i| u8::try_from(i % 251 + 1).unwrap()));
    let mut short = vec![0u8; HEADER_LEN_PKEY + 100];
    short[HEADER_LEN_PKEY..].fill(0x5a);
    let earlier = decode_received(&long, HEADER_LEN_PKEY);
    assert_eq!((earlier.mad.len(), earlier.grh), (600, Some(grh)));
    for buf in [&short[..], &long[..], &short[..20]] {
        let reused = decode_received_into(buf, HEADER_LEN_PKEY, earlier.mad.clone());
        assert_eq!(reused, decode_received(buf, HEADER_LEN_PKEY));
    }
    let r = decode_received_into(&short, HEADER_LEN_PKEY, earlier.mad);
    assert_eq!((r.grh, r.mad.len(), r.mad[99], r.mad[100]), (None, MAD_LEN, 0x5a, 0));
}

fn loc(index: u32, ca: &str, port: u8, phys: Option<&str>, ll: Option<&str>) -> PortLocation {
    PortLocation {
        index,
        ca: ca.to_owned(),
        port,
        phys_state: phys.map(str::to_owned),
        link_layer: ll.map(str::to_owned),
    }
}

#[test]
fn port_selection() {
    let ports = [
        loc(0, "mlx5_0", 1, Some("3: Disabled"), Some("InfiniBand")),
        loc(1, "mlx5_1", 1, Some("5: LinkUp"), Some("Ethernet")),
        loc(2, "mlx5_2", 1, Some("5: LinkUp"), Some("InfiniBand")),
        loc(3, "mlx5_2", 2, Some("2: Polling"), None),
    ];
    assert_eq!(select_port(&ports, None, None).unwrap().index, 2, "first IB port with link up");
    assert_eq!(select_port(&ports, Some("mlx5_2"), Some(2)).unwrap().index, 3);
    assert_eq!(select_port(&ports, Some("mlx5_0"), None).unwrap().index, 0);
    let err = select_port(&ports, Some("mlx4_0"), None).unwrap_err().to_string();
    assert!(err.contains("mlx4_0") && err.contains("mlx5_2 port 2"), "{err}");
    assert_eq!(select_port(&ports[..1], None, None).unwrap().index, 0, "no link up: first IB port");
    assert!(select_port(&[], None, None).unwrap_err().to_string().contains(SYSFS_UMAD));
    let sim = [loc(0, "ibsim0", 0, Some("5: LinkUp"), None)];
    assert_eq!(select_port(&sim, None, None).unwrap().port, 0, "switch port 0 under ibsim");
    assert_eq!(sim[0].umad_path(), Path::new("/dev/infiniband/umad0"));
    assert_eq!(sim[0].issm_path(), Path::new("/dev/infiniband/issm0"));
}

#[test]
fn reading_a_missing_file_names_it_and_the_errno() {
    let e = read_text(Path::new("/nonexistent/ibsm-test/port")).unwrap_err().to_string();
    assert!(e.contains("/nonexistent/ibsm-test/port") && e.contains("open"), "{e}");
    assert!(e.contains("os error 2"), "{e}");
}

#[test]
fn reading_a_text_file() {
    assert!(!read_text(Path::new("/proc/self/stat")).unwrap().is_empty());
}
