//! The 12-byte RMPP header that follows the common MAD header (MAD bytes 24..36).
//!
//! Owns: the layout of `RMPPVersion`, `RMPPType`, `RRespTime`, `RMPPFlags`, `RMPPStatus`, Data1
//! and Data2 (IBTA vol. 1, 13.6.2.1), the view [`Rmpp`] over a whole MAD buffer and the
//! [`RmppHeader`] repr. It does not segment or reassemble: that is the transport's job (the
//! kernel does it on hardware; ibsim has no RMPP at all).
//!
//! Guarantees: after [`Rmpp::new_checked`] no accessor panics; every byte value round-trips
//! (unknown RMPP types are `Unknown(raw)`; the 3 flag bits and 5 time bits cover their byte).

use crate::header::{byte, put_byte};
use crate::{Result, bits, check_len};

/// Offset of the RMPP header inside a MAD.
pub const RMPP_OFFSET: usize = 24;
/// Length of the RMPP header.
pub const RMPP_LEN: usize = 12;

/// Byte offsets (from the start of the MAD) and bit masks of the RMPP fields.
mod field {
    pub const VERSION: usize = 24;
    pub const TYPE: usize = 25;
    /// `RRespTime` in bits 7..3, `RMPPFlags` in bits 2..0.
    pub const TIME_FLAGS: usize = 26;
    pub const STATUS: usize = 27;
    pub const DATA1: usize = 28;
    pub const DATA2: usize = 32;
    pub const END: usize = 36;

    pub const RESP_TIME_SHIFT: u8 = 3;
    pub const FLAG_ACTIVE: u8 = 0x01;
    pub const FLAG_FIRST: u8 = 0x02;
    pub const FLAG_LAST: u8 = 0x04;
}

/// `RMPPType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RmppType {
    /// 0: not an RMPP packet (what a MAD without an active RMPP header carries).
    None,
    /// 1: DATA segment.
    Data,
    /// 2: ACK.
    Ack,
    /// 3: STOP.
    Stop,
    /// 4: ABORT.
    Abort,
    /// Any other value, kept as read.
    Unknown(u8),
}

impl RmppType {
    /// The typed value for a raw byte; never yields `Unknown` for a named value.
    pub const fn from_raw(raw: u8) -> RmppType {
        match raw {
            0 => RmppType::None,
            1 => RmppType::Data,
            2 => RmppType::Ack,
            3 => RmppType::Stop,
            4 => RmppType::Abort,
            other => RmppType::Unknown(other),
        }
    }

    /// The raw byte.
    pub const fn raw(self) -> u8 {
        match self {
            RmppType::None => 0,
            RmppType::Data => 1,
            RmppType::Ack => 2,
            RmppType::Stop => 3,
            RmppType::Abort => 4,
            RmppType::Unknown(v) => v,
        }
    }
}

/// `RMPPFlags`: the three low bits of MAD byte 26.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct RmppFlags {
    /// Active (0x1): the MAD is part of an RMPP transfer.
    pub active: bool,
    /// First (0x2): first segment of a transfer.
    pub first: bool,
    /// Last (0x4): last segment of a transfer.
    pub last: bool,
}

impl RmppFlags {
    /// Flags from the low three bits of `raw` (higher bits ignored).
    pub const fn from_raw(raw: u8) -> RmppFlags {
        RmppFlags {
            active: raw & field::FLAG_ACTIVE != 0,
            first: raw & field::FLAG_FIRST != 0,
            last: raw & field::FLAG_LAST != 0,
        }
    }

    /// The three-bit raw value.
    pub const fn raw(self) -> u8 {
        (if self.active { field::FLAG_ACTIVE } else { 0 })
            | (if self.first { field::FLAG_FIRST } else { 0 })
            | (if self.last { field::FLAG_LAST } else { 0 })
    }
}

/// A zero-copy view of the RMPP header of a MAD (the buffer starts at MAD byte 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rmpp<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Rmpp<T> {
    /// Wraps a MAD buffer without any check (accessors read zero past the end).
    pub const fn new_unchecked(buffer: T) -> Rmpp<T> {
        Rmpp { buffer }
    }

    /// Wraps a MAD buffer after checking it reaches the end of the RMPP header (byte 36).
    ///
    /// # Errors
    /// [`crate::Error::Truncated`] for a shorter buffer.
    pub fn new_checked(buffer: T) -> Result<Rmpp<T>> {
        check_len("RMPP header", buffer.as_ref(), field::END)?;
        Ok(Rmpp { buffer })
    }

    /// Gives the buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// `RMPPVersion` (1 when active).
    pub fn version(&self) -> u8 {
        byte(self.buffer.as_ref(), field::VERSION)
    }
    /// `RMPPType`.
    pub fn rmpp_type(&self) -> RmppType {
        RmppType::from_raw(byte(self.buffer.as_ref(), field::TYPE))
    }
    /// `RRespTime` (5 bits).
    pub fn resp_time(&self) -> u8 {
        byte(self.buffer.as_ref(), field::TIME_FLAGS) >> field::RESP_TIME_SHIFT
    }
    /// `RMPPFlags`.
    pub fn flags(&self) -> RmppFlags {
        RmppFlags::from_raw(byte(self.buffer.as_ref(), field::TIME_FLAGS))
    }
    /// `RMPPStatus`.
    pub fn status(&self) -> u8 {
        byte(self.buffer.as_ref(), field::STATUS)
    }
    /// Data1: `SegmentNumber` for DATA and ACK.
    pub fn data1(&self) -> u32 {
        bits::u32_at(self.buffer.as_ref(), field::DATA1)
    }
    /// Data2: `PayloadLength` for DATA, `NewWindowLast` for ACK.
    pub fn data2(&self) -> u32 {
        bits::u32_at(self.buffer.as_ref(), field::DATA2)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Rmpp<T> {
    /// Sets `RMPPVersion`.
    pub fn set_version(&mut self, v: u8) {
        put_byte(self.buffer.as_mut(), field::VERSION, v);
    }
    /// Sets `RMPPType`.
    pub fn set_rmpp_type(&mut self, v: RmppType) {
        put_byte(self.buffer.as_mut(), field::TYPE, v.raw());
    }
    /// Sets `RRespTime` (truncated to 5 bits), keeping the flags.
    pub fn set_resp_time(&mut self, v: u8) {
        bits::set(self.buffer.as_mut(), field::TIME_FLAGS * 8, 5, u64::from(v));
    }
    /// Sets `RMPPFlags`, keeping `RRespTime`.
    pub fn set_flags(&mut self, v: RmppFlags) {
        bits::set(self.buffer.as_mut(), field::TIME_FLAGS * 8 + 5, 3, u64::from(v.raw()));
    }
    /// Sets `RMPPStatus`.
    pub fn set_status(&mut self, v: u8) {
        put_byte(self.buffer.as_mut(), field::STATUS, v);
    }
    /// Sets Data1.
    pub fn set_data1(&mut self, v: u32) {
        bits::put_u32(self.buffer.as_mut(), field::DATA1, v);
    }
    /// Sets Data2.
    pub fn set_data2(&mut self, v: u32) {
        bits::put_u32(self.buffer.as_mut(), field::DATA2, v);
    }
}

/// The RMPP header as plain values. `Default` is the all-zero, inactive header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RmppHeader {
    /// `RMPPVersion`.
    pub version: u8,
    /// `RMPPType`.
    pub rmpp_type: RmppType,
    /// `RRespTime` (5 bits; emit truncates).
    pub resp_time: u8,
    /// `RMPPFlags`.
    pub flags: RmppFlags,
    /// `RMPPStatus`.
    pub status: u8,
    /// Data1 (`SegmentNumber`).
    pub data1: u32,
    /// Data2 (`PayloadLength` or `NewWindowLast`).
    pub data2: u32,
}

impl Default for RmppHeader {
    fn default() -> Self {
        RmppHeader {
            version: 0,
            rmpp_type: RmppType::None,
            resp_time: 0,
            flags: RmppFlags::default(),
            status: 0,
            data1: 0,
            data2: 0,
        }
    }
}

impl RmppHeader {
    /// Reads the header from a view.
    ///
    /// # Errors
    /// [`crate::Error::Truncated`] when the buffer ends before MAD byte 36.
    pub fn parse<T: AsRef<[u8]>>(rmpp: &Rmpp<T>) -> Result<RmppHeader> {
        check_len("RMPP header", rmpp.buffer.as_ref(), field::END)?;
        Ok(RmppHeader {
            version: rmpp.version(),
            rmpp_type: rmpp.rmpp_type(),
            resp_time: rmpp.resp_time(),
            flags: rmpp.flags(),
            status: rmpp.status(),
            data1: rmpp.data1(),
            data2: rmpp.data2(),
        })
    }

    /// Reads the header from a MAD buffer (bytes 24..36).
    ///
    /// # Errors
    /// [`crate::Error::Truncated`] when `mad` is shorter than 36 bytes.
    pub fn from_bytes(mad: &[u8]) -> Result<RmppHeader> {
        RmppHeader::parse(&Rmpp::new_unchecked(mad))
    }

    /// Writes the header into MAD bytes 24..36 of `mad` (what fits of a shorter buffer).
    pub fn emit(&self, mad: &mut [u8]) {
        let mut v = Rmpp::new_unchecked(mad);
        v.set_version(self.version);
        v.set_rmpp_type(self.rmpp_type);
        v.set_resp_time(self.resp_time);
        v.set_flags(self.flags);
        v.set_status(self.status);
        v.set_data1(self.data1);
        v.set_data2(self.data2);
    }

    /// Bytes the header occupies (it is written at [`RMPP_OFFSET`]).
    pub const fn buffer_len(&self) -> usize {
        RMPP_LEN
    }

    /// `SegmentNumber` (Data1) of a DATA or ACK packet.
    pub const fn segment_number(&self) -> u32 {
        self.data1
    }

    /// `PayloadLength` (Data2) of a DATA packet; `NewWindowLast` for an ACK.
    pub const fn payload_length(&self) -> u32 {
        self.data2
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// MAD bytes 0..36 of `OpenSM` 3.3.23's GetTableResp(NodeRecord) under ibsim (`saquery -d -d
    /// NR` dump). `OpenSM` sets only the Active flag; the kernel's RMPP layer, absent under ibsim,
    /// would fill in version and type.
    const OSM_RESP: [u8; 36] = [
        0x01, 0x03, 0x02, 0x92, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x77, 0x53, 0x6c, 0xdf, 0x00, 0x11,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    ];

    fn active_only() -> RmppHeader {
        RmppHeader { flags: RmppFlags { active: true, first: false, last: false }, ..RmppHeader::default() }
    }

    #[test]
    fn deconstruct() {
        let v = Rmpp::new_checked(&OSM_RESP[..]).unwrap();
        assert_eq!(v.version(), 0);
        assert_eq!(v.rmpp_type(), RmppType::None);
        assert_eq!(v.resp_time(), 0);
        assert_eq!(v.flags(), RmppFlags { active: true, first: false, last: false });
        assert_eq!((v.status(), v.data1(), v.data2()), (0, 0, 0));
    }

    #[test]
    fn construct_parse_emit() {
        let mut buf = OSM_RESP;
        buf[24..].fill(0xee);
        let mut v = Rmpp::new_unchecked(&mut buf[..]);
        v.set_version(0);
        v.set_rmpp_type(RmppType::None);
        v.set_resp_time(0);
        v.set_flags(RmppFlags::from_raw(1));
        v.set_status(0);
        v.set_data1(0);
        v.set_data2(0);
        assert_eq!(buf, OSM_RESP);
        assert_eq!(RmppHeader::from_bytes(&OSM_RESP), Ok(active_only()));
        let mut out = OSM_RESP;
        out[24..].fill(0x55);
        active_only().emit(&mut out);
        assert_eq!(out, OSM_RESP);
    }

    #[test]
    fn sub_byte_fields() {
        // IBTA: RRespTime is the upper five bits of byte 26 and the flags the lower three.
        let mut buf = [0u8; 36];
        buf[26] = 0b1011_0110;
        let v = Rmpp::new_checked(&buf[..]).unwrap();
        assert_eq!(v.resp_time(), 0b10110);
        assert_eq!(v.flags(), RmppFlags { active: false, first: true, last: true });
        let mut w = Rmpp::new_unchecked(&mut buf[..]);
        w.set_flags(RmppFlags { active: true, first: false, last: false });
        assert_eq!(buf[26], 0b1011_0001);
        assert!(Rmpp::new_checked(&buf[..35]).is_err());
    }

    fn arb_rmpp() -> impl Strategy<Value = RmppHeader> {
        (any::<[u8; 5]>(), any::<u32>(), any::<u32>()).prop_map(|(b, data1, data2)| RmppHeader {
            version: b[0],
            rmpp_type: RmppType::from_raw(b[1]),
            resp_time: b[2] & 0x1f,
            flags: RmppFlags::from_raw(b[3]),
            status: b[4],
            data1,
            data2,
        })
    }

    proptest! {
        #[test]
        fn repr_round_trip(h in arb_rmpp()) {
            let mut buf = [0u8; 36];
            h.emit(&mut buf);
            prop_assert_eq!(RmppHeader::from_bytes(&buf), Ok(h));
        }

        #[test]
        fn bytes_round_trip(buf in any::<[u8; 36]>()) {
            let h = RmppHeader::from_bytes(&buf).unwrap();
            let mut out = buf;
            out[24..].fill(0);
            h.emit(&mut out);
            prop_assert_eq!(out, buf);
        }

        #[test]
        fn arbitrary_bytes_never_panic(buf in proptest::collection::vec(any::<u8>(), 0..=256)) {
            let _ = RmppHeader::from_bytes(&buf);
            let v = Rmpp::new_unchecked(&buf[..]);
            let _ = (v.flags(), v.data2());
        }
    }
}
