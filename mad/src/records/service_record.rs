//! ServiceRecord (IBTA vol. 1, 15.2.5.14): a service registered with the SA.
//!
//! Clients Set, Get and Delete these to advertise and find services by id, name and data.
//! 176 bytes. The name is kept as its 64 raw bytes so that any registration round-trips;
//! [`ServiceRecord::name_str`] and [`ServiceRecord::set_name`] give a text view.

use crate::records::{bytes_at, comp, gid_at, put_bytes, put_gid};
use crate::{Attribute, Gid, PKey, Result, bits, check_len, ids};

/// ServiceRecord.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServiceRecord {
    /// ServiceID.
    pub service_id: u64,
    /// ServiceGID: the port providing the service.
    pub service_gid: Gid,
    /// ServiceP_Key.
    pub service_pkey: PKey,
    /// ServiceLease in seconds; 0xFFFF_FFFF is infinite.
    pub service_lease: u32,
    /// ServiceKey.
    pub service_key: [u8; 16],
    /// ServiceName: UTF-8, NUL-padded.
    pub service_name: [u8; 64],
    /// ServiceData8.
    pub data8: [u8; 16],
    /// ServiceData16.
    pub data16: [u16; 8],
    /// ServiceData32.
    pub data32: [u32; 4],
    /// ServiceData64.
    pub data64: [u64; 2],
}

impl Default for ServiceRecord {
    fn default() -> Self {
        ServiceRecord {
            service_id: 0,
            service_gid: Gid::default(),
            service_pkey: PKey::default(),
            service_lease: 0,
            service_key: [0; 16],
            service_name: [0; 64],
            data8: [0; 16],
            data16: [0; 8],
            data32: [0; 4],
            data64: [0; 2],
        }
    }
}

impl ServiceRecord {
    /// ServiceLease value meaning "never expires".
    pub const INFINITE_LEASE: u32 = u32::MAX;

    /// ComponentMask: ServiceID.
    pub const COMP_SERVICE_ID: u64 = comp(0);
    /// ComponentMask: ServiceGID.
    pub const COMP_SERVICE_GID: u64 = comp(1);
    /// ComponentMask: ServiceP_Key.
    pub const COMP_SERVICE_PKEY: u64 = comp(2);
    /// ComponentMask: the reserved 16 bits after ServiceP_Key.
    pub const COMP_RESERVED1: u64 = comp(3);
    /// ComponentMask: ServiceLease.
    pub const COMP_SERVICE_LEASE: u64 = comp(4);
    /// ComponentMask: ServiceKey.
    pub const COMP_SERVICE_KEY: u64 = comp(5);
    /// ComponentMask: ServiceName.
    pub const COMP_SERVICE_NAME: u64 = comp(6);
    /// ComponentMask: ServiceData8.0; ServiceData8.n is `COMP_DATA8_0 << n` (n < 16).
    pub const COMP_DATA8_0: u64 = comp(7);
    /// ComponentMask: ServiceData16.0; ServiceData16.n is `COMP_DATA16_0 << n` (n < 8).
    pub const COMP_DATA16_0: u64 = comp(23);
    /// ComponentMask: ServiceData32.0; ServiceData32.n is `COMP_DATA32_0 << n` (n < 4).
    pub const COMP_DATA32_0: u64 = comp(31);
    /// ComponentMask: ServiceData64.0; ServiceData64.n is `COMP_DATA64_0 << n` (n < 2).
    pub const COMP_DATA64_0: u64 = comp(35);

    /// The name up to its first NUL, if it is valid UTF-8.
    pub fn name_str(&self) -> Option<&str> {
        let end = self.service_name.iter().position(|&b| b == 0).unwrap_or(64);
        core::str::from_utf8(&self.service_name[..end]).ok()
    }

    /// Sets the name, NUL-padded; a name longer than 64 bytes is cut at the last character
    /// boundary that fits.
    pub fn set_name(&mut self, name: &str) {
        self.service_name = [0; 64];
        let mut n = name.len().min(64);
        while !name.is_char_boundary(n) {
            n -= 1;
        }
        self.service_name[..n].copy_from_slice(&name.as_bytes()[..n]);
    }
}

impl Attribute for ServiceRecord {
    const ID: u16 = ids::sa_attr::SERVICE_RECORD;
    const LEN: usize = 176;

    fn parse(buf: &[u8]) -> Result<Self> {
        check_len("ServiceRecord", buf, Self::LEN)?;
        Ok(ServiceRecord {
            service_id: bits::u64_at(buf, 0),
            service_gid: gid_at(buf, 8),
            service_pkey: PKey(bits::u16_at(buf, 24)),
            service_lease: bits::u32_at(buf, 28),
            service_key: bytes_at(buf, 32),
            service_name: bytes_at(buf, 48),
            data8: bytes_at(buf, 112),
            data16: core::array::from_fn(|i| bits::u16_at(buf, 128 + 2 * i)),
            data32: core::array::from_fn(|i| bits::u32_at(buf, 144 + 4 * i)),
            data64: core::array::from_fn(|i| bits::u64_at(buf, 160 + 8 * i)),
        })
    }

    fn emit(&self, buf: &mut [u8]) {
        let end = Self::LEN.min(buf.len());
        buf[..end].fill(0);
        bits::put_u64(buf, 0, self.service_id);
        put_gid(buf, 8, self.service_gid);
        bits::put_u16(buf, 24, self.service_pkey.0);
        bits::put_u32(buf, 28, self.service_lease);
        put_bytes(buf, 32, &self.service_key);
        put_bytes(buf, 48, &self.service_name);
        put_bytes(buf, 112, &self.data8);
        for (i, v) in self.data16.iter().enumerate() {
            bits::put_u16(buf, 128 + 2 * i, *v);
        }
        for (i, v) in self.data32.iter().enumerate() {
            bits::put_u32(buf, 144 + 4 * i, *v);
        }
        for (i, v) in self.data64.iter().enumerate() {
            bits::put_u64(buf, 160 + 8 * i, *v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Guid;
    use crate::records::testutil::{emit_short_is_safe, hex, rejects_short, round_trip};
    use proptest::prelude::*;

    /// libibmad 44.0 `mad_set_field64`/`mad_set_field`/`mad_set_array` with IB_SA_SR_*_F:
    /// ServiceID=0x1000000000000001 ServiceGID=fe80::2:c903:0:1234 ServiceP_Key=0x8001
    /// ServiceLease=0xffffffff ServiceKey=a0..af ServiceName="ibsm test service"
    /// ServiceData (all 64 bytes through IB_SA_SR_DATA_F) = 01, 02, .., 40.
    const LIBIBMAD: &str = "
        10 00 00 00 00 00 00 01 fe 80 00 00 00 00 00 00
        00 02 c9 03 00 00 12 34 80 01 00 00 ff ff ff ff
        a0 a1 a2 a3 a4 a5 a6 a7 a8 a9 aa ab ac ad ae af
        69 62 73 6d 20 74 65 73 74 20 73 65 72 76 69 63
        65 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
        00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
        00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
        01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f 10
        11 12 13 14 15 16 17 18 19 1a 1b 1c 1d 1e 1f 20
        21 22 23 24 25 26 27 28 29 2a 2b 2c 2d 2e 2f 30
        31 32 33 34 35 36 37 38 39 3a 3b 3c 3d 3e 3f 40";

    fn expected() -> ServiceRecord {
        let mut r = ServiceRecord {
            service_id: 0x1000_0000_0000_0001,
            service_gid: Gid { prefix: 0xfe80_0000_0000_0000, guid: Guid(0x0002_c903_0000_1234) },
            service_pkey: PKey(0x8001),
            service_lease: ServiceRecord::INFINITE_LEASE,
            service_key: core::array::from_fn(|i| 0xa0 + i as u8),
            data8: core::array::from_fn(|i| 1 + i as u8),
            data16: [0x1112, 0x1314, 0x1516, 0x1718, 0x191a, 0x1b1c, 0x1d1e, 0x1f20],
            data32: [0x2122_2324, 0x2526_2728, 0x292a_2b2c, 0x2d2e_2f30],
            data64: [0x3132_3334_3536_3738, 0x393a_3b3c_3d3e_3f40],
            ..ServiceRecord::default()
        };
        r.set_name("ibsm test service");
        r
    }

    #[test]
    fn parse_libibmad_fixture() {
        let r = ServiceRecord::parse(&hex(LIBIBMAD)).unwrap();
        assert_eq!(r, expected());
        assert_eq!(r.name_str(), Some("ibsm test service"));
    }

    #[test]
    fn emit_matches_libibmad_fixture() {
        assert_eq!(expected().to_vec(), hex(LIBIBMAD));
    }

    #[test]
    fn short_input_is_truncated() {
        rejects_short::<ServiceRecord>(&hex(LIBIBMAD));
        emit_short_is_safe(&expected());
    }

    #[test]
    fn names() {
        let mut r = ServiceRecord::default();
        r.set_name(&"x".repeat(70));
        assert_eq!(r.name_str().map(str::len), Some(64));
        r.set_name(&format!("{}é", "x".repeat(63)));
        assert_eq!(r.name_str(), Some("x".repeat(63).as_str()), "no half character");
        r.service_name[0] = 0xff;
        assert_eq!(r.name_str(), None);
        assert_eq!(ServiceRecord::COMP_DATA64_0 << 1, 1 << 36, "last component, as in OpenSM");
    }

    proptest! {
        #[test]
        fn round_trips(b in proptest::collection::vec(any::<u8>(), ServiceRecord::LEN)) {
            round_trip(&ServiceRecord::parse(&b).unwrap());
        }

        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..260)) {
            let _ = ServiceRecord::parse(&b);
        }
    }
}
