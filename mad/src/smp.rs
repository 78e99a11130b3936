//! Subnet management packets: LID-routed ([`Smp`], class 0x01) and directed-route ([`DrSmp`],
//! class 0x81), and the one repr for both, [`SmpRepr`].
//!
//! Owns: the SMP layout after the common header (`M_Key`, DR hop pointer and count, DrSLID/DrDLID,
//! the 64-byte SMP data, `InitialPath` and `ReturnPath`; IBTA vol. 1, 14.2.1), the constructors an
//! SM sends, and [`make_response`], which a responder (the simulator) uses to answer in place.
//! The attribute inside the 64-byte data is the attribute modules' business, not this module's
//! (neither imports the other; the decode module, above both, joins them).
//!
//! Guarantees: after `new_checked` no accessor panics and path indices are checked (they return
//! `Option`/`Result`); parsing never panics on any input.

use crate::header::{Mad, Method, MgmtClass, byte, put_byte, put_slice, zero};
use crate::ids::class;
use crate::{DrPath, Error, Lid, MAD_LEN, MKey, Result, bits, check_len};

/// Length of an SMP: every SMP is a full 256-byte MAD.
pub const SMP_LEN: usize = MAD_LEN;
/// Length of the SMP data area.
pub const SMP_DATA_LEN: usize = 64;

/// Byte offsets of the SMP fields (from the start of the MAD).
pub(crate) mod field {
    use core::ops::Range;

    pub const STATUS: usize = 4;
    pub const HOP_POINTER: usize = 6;
    pub const HOP_COUNT: usize = 7;
    pub const M_KEY: usize = 24;
    // LID-routed SMPs reserve 32..64 and 128..256; DR SMPs reserve 36..64. Emit zeroes them.
    pub const DR_SLID: usize = 32;
    pub const DR_DLID: usize = 34;
    pub const DATA: Range<usize> = 64..128;
    pub const INITIAL_PATH: Range<usize> = 128..192;
    pub const RETURN_PATH: Range<usize> = 192..256;

    /// The D (direction) bit inside the 16-bit status word of a DR SMP.
    pub const D_BIT: u16 = 0x8000;
}

/// Checks length, class and base version shared by both SMP views.
pub(crate) fn check_common(buf: &[u8], what: &'static str, want: u8, expected: &'static str) -> Result<()> {
    check_len(what, buf, SMP_LEN)?;
    let mad = Mad::new_unchecked(buf);
    let found = mad.mgmt_class().raw();
    if found != want {
        return Err(Error::WrongClass { expected, found });
    }
    if mad.base_version() != 1 {
        return Err(Error::BadBaseVersion(mad.base_version()));
    }
    Ok(())
}

/// Checks hop count (at most 63) and hop pointer (at most hop count + 1).
pub(crate) fn check_hops(pointer: u8, count: u8) -> Result<()> {
    if usize::from(count) > DrPath::MAX_HOPS {
        return Err(Error::HopCount(count));
    }
    if u16::from(pointer) > u16::from(count) + 1 {
        return Err(Error::HopPointer { pointer, count });
    }
    Ok(())
}

/// A zero-copy view of a LID-routed SMP (class 0x01).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Smp<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Smp<T> {
    /// Wraps a buffer without any check (accessors read zero or empty past the end).
    pub const fn new_unchecked(buffer: T) -> Smp<T> {
        Smp { buffer }
    }

    /// Wraps a buffer after checking length (256), class (0x01) and base version (1).
    ///
    /// # Errors
    /// [`Error::Truncated`], [`Error::WrongClass`], [`Error::BadBaseVersion`].
    pub fn new_checked(buffer: T) -> Result<Smp<T>> {
        check_common(buffer.as_ref(), "LID-routed SMP", class::SUBN_LID, "SubnLid (0x01)")?;
        Ok(Smp { buffer })
    }

    /// Gives the buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The common MAD header (method, status, TID, attribute id and modifier).
    pub fn header(&self) -> Mad<&[u8]> {
        Mad::new_unchecked(self.buffer.as_ref())
    }
    /// `M_Key`.
    pub fn m_key(&self) -> MKey {
        MKey(bits::u64_at(self.buffer.as_ref(), field::M_KEY))
    }
    /// The 64-byte SMP data (the attribute).
    pub fn data(&self) -> &[u8] {
        self.buffer.as_ref().get(field::DATA).unwrap_or(&[])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Smp<T> {
    /// The common MAD header, mutable.
    pub fn header_mut(&mut self) -> Mad<&mut [u8]> {
        Mad::new_unchecked(self.buffer.as_mut())
    }
    /// Sets `M_Key`.
    pub fn set_m_key(&mut self, v: MKey) {
        bits::put_u64(self.buffer.as_mut(), field::M_KEY, v.0);
    }
    /// The 64-byte SMP data, mutable.
    pub fn data_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut().get_mut(field::DATA).unwrap_or(&mut [])
    }
    /// Turns a request into its response in place: Method `GetResp` (0x81), Status `status`.
    /// Everything else (TID, attribute, `M_Key`, data) is kept; the caller then writes the
    /// attribute it answers with into [`Smp::data_mut`].
    pub fn make_response(&mut self, status: u16) {
        let mut mad = self.header_mut();
        mad.set_method(Method::GetResp);
        mad.set_status(status);
    }
}

/// A zero-copy view of a directed-route SMP (class 0x81).
///
/// # Directed-route forwarding (IBTA vol. 1, 14.2.2; as the Linux kernel's `smi.c` restates it)
///
/// An SMP travels a directed route of `hop_count` hops (0 = the local port). `InitialPath[i]`
/// (i in `1..=hop_count`) is the port the node at hop `i - 1` sends it out of; `ReturnPath[i]`
/// is filled on the way out with the port it arrived on at hop `i`, and read on the way back.
/// Byte 0 of both paths is unused. DrSLID/DrDLID are the LID-routed parts before and after the
/// directed part; both are the permissive LID 0xffff for a purely directed SMP (the only form
/// ibsim accepts). Below, "discard" means drop silently.
///
/// **Outgoing (D = 0).** The sender (hop 0) sends with hop pointer 0.
/// - *Sending* at a node, with hop pointer `p`, count `n`, through port `out`:
///   - `n > 0 && p == 0` (the originator): `p += 1`; the send is valid only if
///     `InitialPath[p] == out`.
///   - `0 < p < n` (an intermediate switch; a CA here discards): `p += 1`; valid only if
///     `InitialPath[p] == out`.
///   - `p == n` (end of the directed part): `p += 1`; valid if the node is a switch or `DrDLID` is
///     permissive (then the SMP is for this node's SMA).
///   - `p == n + 1`: deliver locally; any other `p` discards.
/// - *Receiving* at a node on port `in`:
///   - `n > 0 && p == 0`: discard (the sender should have advanced `p`).
///   - `0 < p < n`: only a switch may forward: write `ReturnPath[p] = in`, then send out of
///     `InitialPath[p + 1]` (which must be a valid port).
///   - `p == n`: if `n > 0`, write `ReturnPath[p] = in`; the SMP is for this node if it is a
///     switch or `DrDLID` is permissive (the send step above then advances `p` to `n + 1`).
///   - `p == n + 1`: the SMP is for this node's SMA; any other `p` discards.
///
/// **Returning (D = 1).** The responder ([`DrSmp::make_response`]) sets D = 1, keeps the hop
/// pointer (it is `n + 1` when the outgoing rules delivered the SMP) and both paths.
/// - *Sending* with hop pointer `p` through port `out`:
///   - `n > 0 && p == n + 1` (the responder): `p -= 1`; valid only if `ReturnPath[p] == out`.
///   - `2 <= p <= n` (an intermediate switch; a CA discards): `p -= 1`; valid only if
///     `ReturnPath[p] == out`.
///   - `p == 1` (end of the directed part): `p -= 1`; valid if the node is a switch or `DrSLID` is
///     permissive.
///   - `p == 0`: deliver to the local SM; any other `p` discards.
/// - *Receiving*:
///   - `n > 0 && p == n + 1`: discard.
///   - `2 <= p <= n`: only a switch forwards, out of `ReturnPath[p - 1]`.
///   - `p == 1`: if `DrSLID` is permissive, `p -= 1` and hand the SMP to the local SM; otherwise
///     only a switch continues (LID-routing towards `DrSLID`).
///   - `p == 0`: hand the SMP to the local SM; any other `p` discards.
///
/// **ibsim** does not walk the hop pointer at all: it wants requests with hop pointer 0, D = R
/// and `DrSLID` = `DrDLID` = 0xffff, routes them internally, fills `ReturnPath[1..=n]` and returns
/// the response with hop pointer still 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DrSmp<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> DrSmp<T> {
    /// Wraps a buffer without any check (accessors read zero or empty past the end).
    pub const fn new_unchecked(buffer: T) -> DrSmp<T> {
        DrSmp { buffer }
    }

    /// Wraps a buffer after checking length (256), class (0x81), base version (1), hop count
    /// (at most 63) and hop pointer (at most hop count + 1).
    ///
    /// # Errors
    /// [`Error::Truncated`], [`Error::WrongClass`], [`Error::BadBaseVersion`],
    /// [`Error::HopCount`], [`Error::HopPointer`].
    pub fn new_checked(buffer: T) -> Result<DrSmp<T>> {
        check_common(buffer.as_ref(), "directed-route SMP", class::SUBN_DR, "SubnDr (0x81)")?;
        let view = DrSmp { buffer };
        check_hops(view.hop_pointer(), view.hop_count())?;
        Ok(view)
    }

    /// Gives the buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The common MAD header (method, TID, attribute id and modifier). Its `status()` is the
    /// raw 16-bit word; use [`DrSmp::status`] and [`DrSmp::d_bit`] instead.
    pub fn header(&self) -> Mad<&[u8]> {
        Mad::new_unchecked(self.buffer.as_ref())
    }
    /// The D (direction) bit: `true` for an SMP returning to its originator.
    pub fn d_bit(&self) -> bool {
        bits::u16_at(self.buffer.as_ref(), field::STATUS) & field::D_BIT != 0
    }
    /// The 15-bit status (without the D bit).
    pub fn status(&self) -> u16 {
        bits::u16_at(self.buffer.as_ref(), field::STATUS) & !field::D_BIT
    }
    /// `HopPointer`.
    pub fn hop_pointer(&self) -> u8 {
        byte(self.buffer.as_ref(), field::HOP_POINTER)
    }
    /// `HopCount`.
    pub fn hop_count(&self) -> u8 {
        byte(self.buffer.as_ref(), field::HOP_COUNT)
    }
    /// `M_Key`.
    pub fn m_key(&self) -> MKey {
        MKey(bits::u64_at(self.buffer.as_ref(), field::M_KEY))
    }
    /// `DrSLID`.
    pub fn dr_slid(&self) -> Lid {
        Lid(bits::u16_at(self.buffer.as_ref(), field::DR_SLID))
    }
    /// `DrDLID`.
    pub fn dr_dlid(&self) -> Lid {
        Lid(bits::u16_at(self.buffer.as_ref(), field::DR_DLID))
    }
    /// The 64-byte SMP data (the attribute).
    pub fn data(&self) -> &[u8] {
        self.buffer.as_ref().get(field::DATA).unwrap_or(&[])
    }
    /// The raw 64-byte `InitialPath` (byte 0 unused).
    pub fn initial_path(&self) -> &[u8] {
        self.buffer.as_ref().get(field::INITIAL_PATH).unwrap_or(&[])
    }
    /// The raw 64-byte `ReturnPath` (byte 0 unused).
    pub fn return_path(&self) -> &[u8] {
        self.buffer.as_ref().get(field::RETURN_PATH).unwrap_or(&[])
    }
    /// `InitialPath[i]` for `i` in `1..=hop_count`, otherwise `None`.
    pub fn initial_path_port(&self, i: u8) -> Option<u8> {
        self.path_index(i).and_then(|i| self.initial_path().get(i).copied())
    }
    /// `ReturnPath[i]` for `i` in `1..=hop_count`, otherwise `None`.
    pub fn return_path_port(&self, i: u8) -> Option<u8> {
        self.path_index(i).and_then(|i| self.return_path().get(i).copied())
    }
    /// The first `hop_count` hops of `InitialPath`.
    ///
    /// # Errors
    /// [`Error::HopCount`] or [`Error::Truncated`], only on an unchecked view.
    pub fn initial_route(&self) -> Result<DrPath> {
        DrPath::from_wire(self.initial_path(), self.hop_count())
    }
    /// The first `hop_count` hops of `ReturnPath`.
    ///
    /// # Errors
    /// [`Error::HopCount`] or [`Error::Truncated`], only on an unchecked view.
    pub fn return_route(&self) -> Result<DrPath> {
        DrPath::from_wire(self.return_path(), self.hop_count())
    }

    fn path_index(&self, i: u8) -> Option<usize> {
        (1..=self.hop_count().min(DrPath::MAX_HOPS as u8)).contains(&i).then_some(usize::from(i))
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> DrSmp<T> {
    /// The common MAD header, mutable (prefer [`DrSmp::set_status`] for the status word).
    pub fn header_mut(&mut self) -> Mad<&mut [u8]> {
        Mad::new_unchecked(self.buffer.as_mut())
    }
    /// Sets the D bit, keeping the status.
    pub fn set_d_bit(&mut self, d: bool) {
        let s = self.status() | if d { field::D_BIT } else { 0 };
        bits::put_u16(self.buffer.as_mut(), field::STATUS, s);
    }
    /// Sets the 15-bit status (bit 15 of `v` is ignored), keeping the D bit.
    pub fn set_status(&mut self, v: u16) {
        let d = if self.d_bit() { field::D_BIT } else { 0 };
        bits::put_u16(self.buffer.as_mut(), field::STATUS, (v & !field::D_BIT) | d);
    }
    /// Sets `HopPointer`.
    ///
    /// # Errors
    /// [`Error::HopPointer`] when `v > hop_count + 1` (the buffer is left unchanged).
    pub fn set_hop_pointer(&mut self, v: u8) -> Result<()> {
        check_hops(v, self.hop_count())?;
        put_byte(self.buffer.as_mut(), field::HOP_POINTER, v);
        Ok(())
    }
    /// Sets `HopCount`.
    ///
    /// # Errors
    /// [`Error::HopCount`] above 63, [`Error::HopPointer`] when the current hop pointer would
    /// exceed `v + 1` (the buffer is left unchanged).
    pub fn set_hop_count(&mut self, v: u8) -> Result<()> {
        check_hops(self.hop_pointer(), v)?;
        put_byte(self.buffer.as_mut(), field::HOP_COUNT, v);
        Ok(())
    }
    /// Sets `M_Key`.
    pub fn set_m_key(&mut self, v: MKey) {
        bits::put_u64(self.buffer.as_mut(), field::M_KEY, v.0);
    }
    /// Sets `DrSLID`.
    pub fn set_dr_slid(&mut self, v: Lid) {
        bits::put_u16(self.buffer.as_mut(), field::DR_SLID, v.0);
    }
    /// Sets `DrDLID`.
    pub fn set_dr_dlid(&mut self, v: Lid) {
        bits::put_u16(self.buffer.as_mut(), field::DR_DLID, v.0);
    }
    /// The 64-byte SMP data, mutable.
    pub fn data_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut().get_mut(field::DATA).unwrap_or(&mut [])
    }
    /// Sets `InitialPath[i]` for `i` in `1..=hop_count`.
    ///
    /// # Errors
    /// [`Error::Invalid`] for an index outside `1..=hop_count` (or past a short buffer).
    pub fn set_initial_path_port(&mut self, i: u8, port: u8) -> Result<()> {
        self.set_path_port(field::INITIAL_PATH.start, "DrSmp.InitialPath index", i, port)
    }
    /// Sets `ReturnPath[i]` for `i` in `1..=hop_count`: what a switch does with its arrival
    /// port on an outgoing SMP.
    ///
    /// # Errors
    /// [`Error::Invalid`] for an index outside `1..=hop_count` (or past a short buffer).
    pub fn set_return_path_port(&mut self, i: u8, port: u8) -> Result<()> {
        self.set_path_port(field::RETURN_PATH.start, "DrSmp.ReturnPath index", i, port)
    }
    /// Turns a request into its response in place, as an SMA does: Method `GetResp` (0x81), the
    /// 15-bit status, D = 1. Hop pointer, hop count, DrSLID/DrDLID and both paths are kept (see
    /// the type's documentation for why the hop pointer stays where it is).
    pub fn make_response(&mut self, status: u16) {
        self.header_mut().set_method(Method::GetResp);
        self.set_status(status);
        self.set_d_bit(true);
    }

    fn set_path_port(&mut self, base: usize, what: &'static str, i: u8, port: u8) -> Result<()> {
        let slot = self.path_index(i).and_then(|i| self.buffer.as_mut().get_mut(base + i));
        match slot {
            Some(b) => {
                *b = port;
                Ok(())
            }
            None => Err(Error::Invalid { what, value: u64::from(i) }),
        }
    }
}

/// Turns the SMP request in `buf` into its `GetResp` in place ([`Smp::make_response`] or
/// [`DrSmp::make_response`], chosen by the class byte).
///
/// # Errors
/// The checked-constructor errors of the matching view; [`Error::WrongClass`] for a class other
/// than 0x01 and 0x81. The buffer is left unchanged on error.
pub fn make_response(buf: &mut [u8; SMP_LEN], status: u16) -> Result<()> {
    match buf[1] {
        class::SUBN_LID => Smp::new_checked(&mut buf[..])?.make_response(status),
        class::SUBN_DR => DrSmp::new_checked(&mut buf[..])?.make_response(status),
        found => {
            return Err(Error::WrongClass { expected: "SubnLid or SubnDr (0x01, 0x81)", found });
        }
    }
    Ok(())
}

/// How an SMP is routed, with the directed-route fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SmpRoute {
    /// LID-routed (class 0x01).
    Lid,
    /// Directed route (class 0x81).
    Directed {
        /// D bit: `true` on the way back.
        d_bit: bool,
        /// `HopPointer`.
        hop_pointer: u8,
        /// `HopCount` (must equal both paths' hop counts for [`SmpRepr::emit`] to be faithful).
        hop_count: u8,
        /// `DrSLID`.
        dr_slid: Lid,
        /// `DrDLID`.
        dr_dlid: Lid,
        /// `InitialPath`, `hop_count` hops.
        initial_path: DrPath,
        /// `ReturnPath`, `hop_count` hops (zeros in a fresh request).
        return_path: DrPath,
    },
}

/// An SMP of either routing as plain values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SmpRepr {
    /// Method.
    pub method: Method,
    /// Status: 16 bits for LID-routed SMPs, 15 bits for DR SMPs (the D bit is in the route).
    pub status: u16,
    /// `TransactionID`.
    pub tid: u64,
    /// `AttributeID`.
    pub attr_id: u16,
    /// `AttributeModifier`.
    pub attr_mod: u32,
    /// `M_Key`.
    pub m_key: MKey,
    /// The 64-byte SMP data.
    pub data: [u8; SMP_DATA_LEN],
    /// Routing and, for directed route, the DR fields.
    pub route: SmpRoute,
}

impl SmpRepr {
    /// Reads an SMP of either class. The class version must be 1.
    ///
    /// # Errors
    /// [`Error::Truncated`], [`Error::WrongClass`], [`Error::BadBaseVersion`],
    /// [`Error::BadClassVersion`], and for DR [`Error::HopCount`]/[`Error::HopPointer`].
    pub fn parse(buf: &[u8]) -> Result<SmpRepr> {
        check_len("SMP", buf, SMP_LEN)?;
        let route = match buf[1] {
            class::SUBN_LID => {
                Smp::new_checked(buf)?;
                SmpRoute::Lid
            }
            class::SUBN_DR => {
                let dr = DrSmp::new_checked(buf)?;
                SmpRoute::Directed {
                    d_bit: dr.d_bit(),
                    hop_pointer: dr.hop_pointer(),
                    hop_count: dr.hop_count(),
                    dr_slid: dr.dr_slid(),
                    dr_dlid: dr.dr_dlid(),
                    initial_path: dr.initial_route()?,
                    return_path: dr.return_route()?,
                }
            }
            found => {
                return Err(Error::WrongClass { expected: "SubnLid or SubnDr (0x01, 0x81)", found });
            }
        };
        let mad = Mad::new_unchecked(buf);
        if mad.class_version() != 1 {
            return Err(Error::BadClassVersion { class: buf[1], expected: 1, found: mad.class_version() });
        }
        let mut data = [0u8; SMP_DATA_LEN];
        data.copy_from_slice(&buf[field::DATA]);
        let status = match route {
            SmpRoute::Lid => mad.status(),
            SmpRoute::Directed { .. } => mad.status() & !field::D_BIT,
        };
        Ok(SmpRepr {
            method: mad.method(),
            status,
            tid: mad.tid(),
            attr_id: mad.attr_id(),
            attr_mod: mad.attr_mod(),
            m_key: MKey(bits::u64_at(buf, field::M_KEY)),
            data,
            route,
        })
    }

    /// Writes the whole 256-byte SMP (reserved bytes and unused path bytes as zero) into `buf`;
    /// a shorter buffer gets what fits.
    pub fn emit(&self, buf: &mut [u8]) {
        zero(buf, 0..SMP_LEN);
        let (class_specific, status) = match self.route {
            SmpRoute::Lid => (0, self.status),
            SmpRoute::Directed { d_bit, hop_pointer, hop_count, .. } => (
                u16::from_be_bytes([hop_pointer, hop_count]),
                (self.status & !field::D_BIT) | if d_bit { field::D_BIT } else { 0 },
            ),
        };
        crate::header::MadHeader {
            base_version: 1,
            mgmt_class: self.class(),
            class_version: 1,
            method: self.method,
            status,
            class_specific,
            tid: self.tid,
            attr_id: self.attr_id,
            attr_mod: self.attr_mod,
        }
        .emit(buf);
        bits::put_u64(buf, field::M_KEY, self.m_key.0);
        put_slice(buf, field::DATA.start, &self.data);
        if let SmpRoute::Directed { dr_slid, dr_dlid, initial_path, return_path, .. } = self.route {
            bits::put_u16(buf, field::DR_SLID, dr_slid.0);
            bits::put_u16(buf, field::DR_DLID, dr_dlid.0);
            put_slice(buf, field::INITIAL_PATH.start, initial_path.wire());
            put_slice(buf, field::RETURN_PATH.start, return_path.wire());
        }
    }

    /// Bytes [`SmpRepr::emit`] writes: always 256.
    pub const fn buffer_len(&self) -> usize {
        SMP_LEN
    }

    /// The SMP as a fresh 256-byte MAD.
    pub fn to_bytes(&self) -> [u8; SMP_LEN] {
        let mut buf = [0u8; SMP_LEN];
        self.emit(&mut buf);
        buf
    }

    /// `SubnLid` (0x01) or `SubnDr` (0x81), from the route.
    pub const fn class(&self) -> MgmtClass {
        match self.route {
            SmpRoute::Lid => MgmtClass::SubnLid,
            SmpRoute::Directed { .. } => MgmtClass::SubnDr,
        }
    }

    /// A directed-route `SubnGet` along `path`, in the form ibsim requires: hop pointer 0,
    /// D = 0, `DrSLID` = `DrDLID` = 0xffff, `ReturnPath` zero, `M_Key` 0
    /// (see [`SmpRepr::with_m_key`]).
    pub fn get_dr(path: &DrPath, attr_id: u16, attr_mod: u32, tid: u64) -> SmpRepr {
        SmpRepr::set_dr(path, attr_id, attr_mod, tid, [0; SMP_DATA_LEN]).with_method(Method::Get)
    }

    /// A directed-route `SubnSet` along `path` carrying `data` (same form as [`SmpRepr::get_dr`]).
    pub fn set_dr(path: &DrPath, attr_id: u16, attr_mod: u32, tid: u64, data: [u8; SMP_DATA_LEN]) -> SmpRepr {
        // A zero path of the same length; `from_wire` cannot fail for a valid DrPath's count.
        let return_path = DrPath::from_wire(&[0; 64], path.hop_count()).unwrap_or_default();
        SmpRepr {
            method: Method::Set,
            status: 0,
            tid,
            attr_id,
            attr_mod,
            m_key: MKey(0),
            data,
            route: SmpRoute::Directed {
                d_bit: false,
                hop_pointer: 0,
                hop_count: path.hop_count(),
                dr_slid: Lid::PERMISSIVE,
                dr_dlid: Lid::PERMISSIVE,
                initial_path: *path,
                return_path,
            },
        }
    }

    /// A LID-routed `SubnGet` (the destination LID is the transport's business), `M_Key` 0.
    pub fn get_lid(attr_id: u16, attr_mod: u32, tid: u64) -> SmpRepr {
        SmpRepr::set_lid(attr_id, attr_mod, tid, [0; SMP_DATA_LEN]).with_method(Method::Get)
    }

    /// A LID-routed `SubnSet` carrying `data`, `M_Key` 0.
    pub fn set_lid(attr_id: u16, attr_mod: u32, tid: u64, data: [u8; SMP_DATA_LEN]) -> SmpRepr {
        SmpRepr { method: Method::Set, status: 0, tid, attr_id, attr_mod, m_key: MKey(0), data, route: SmpRoute::Lid }
    }

    /// The same SMP with another `M_Key`.
    #[must_use]
    pub const fn with_m_key(mut self, m_key: MKey) -> SmpRepr {
        self.m_key = m_key;
        self
    }

    /// The same SMP with another method.
    #[must_use]
    pub const fn with_method(mut self, method: Method) -> SmpRepr {
        self.method = method;
        self
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::header::hex_dump;
    use crate::ids::{attr, status};
    use proptest::collection::vec;
    use proptest::prelude::*;

    // Fixtures: libibmad `-d -d` dumps (MAD bytes only, umad header removed) captured under
    // ibsim 0.10 on net.2sw2path4hca with infiniband-diags 44.0 attached at Hca1 / Hca3.

    /// `smpquery -D nodeinfo 0,1`: DR SubnGet(NodeInfo) from Hca1 out of its port 1.
    const DR_REQ: &str = "
        0181 0101 0000 0001 0000 0000 0525 bc92 0011 0000 0000 0000 0000 0000 0000 0000
        ffff ffff 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000
        0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000
        0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000
        0001 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000
        0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000
        0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000
        0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000";

    /// ibsim's answer to `DR_REQ` (Switch1's `NodeInfo`). Bytes 224.. are umad2sim heap garbage.
    pub(crate) const DR_RESP: &str = "
        0181 0181 8000 0001 0000 0001 0525 bc92 0011 0000 0000 0000 0000 0000 0000 0000
        ffff ffff 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000
        0101 0208 0000 0000 0020 0000 0000 0000 0020 0000 0000 0000 0020 0000 0008 0000
        0000 00a1 0100 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000
        0001 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000
        0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000
        0101 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000
        0000 0000 0000 0000 2500 0000 0000 0000 0040 ddf8 0700 0000 0000 0000 0000 0000";

    /// `smpquery nodeinfo 1` from Hca3 after `OpenSM` configured the fabric: the LID-routed
    /// request is all zero after the header; this is the response. Bytes 224.. are garbage.
    pub(crate) const LID_RESP: &str = "
        0101 0181 0000 0000 0001 0000 3095 f605 0011 0000 0000 0000 0000 0000 0000 0000
        0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000
        0101 0208 0000 0000 0020 0000 0000 0000 0020 0000 0000 0000 0020 0000 0008 0000
        0000 00a1 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000
        0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000
        0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000
        0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000
        0000 0000 0000 0000 2500 0000 0000 0000 0000 a6ff 0700 0000 0000 0000 0000 0000";

    fn bytes(dump: &str) -> [u8; 256] {
        let v = hex_dump(dump);
        let mut b = [0u8; 256];
        b.copy_from_slice(&v);
        b
    }

    /// The first 20 bytes of Switch1's `NodeInfo` as smpquery decoded them: base/class version 1,
    /// switch, 8 ports, system/node/port GUID 0x200000.
    const SWITCH1_NODE_INFO_HEAD: [u8; 20] = [1, 1, 2, 8, 0, 0, 0, 0, 0, 0x20, 0, 0, 0, 0, 0, 0, 0, 0x20, 0, 0];

    #[test]
    fn deconstruct_dr_request() {
        let buf = bytes(DR_REQ);
        let smp = DrSmp::new_checked(&buf[..]).unwrap();
        assert_eq!(smp.header().method(), Method::Get);
        assert_eq!(smp.header().tid(), 0x0525_bc92);
        assert_eq!(smp.header().attr_id(), attr::NODE_INFO);
        assert!(!smp.d_bit());
        assert_eq!((smp.status(), smp.hop_pointer(), smp.hop_count()), (0, 0, 1));
        assert_eq!((smp.dr_slid(), smp.dr_dlid()), (Lid::PERMISSIVE, Lid::PERMISSIVE));
        assert_eq!(smp.m_key(), MKey(0));
        assert_eq!(smp.initial_path_port(1), Some(1));
        assert_eq!(smp.initial_path_port(0), None);
        assert_eq!(smp.initial_path_port(2), None);
        assert_eq!(smp.return_path_port(1), Some(0));
        assert_eq!(smp.initial_route().unwrap(), DrPath::new(&[1]).unwrap());
    }

    #[test]
    fn deconstruct_dr_response() {
        let buf = bytes(DR_RESP);
        let smp = DrSmp::new_checked(&buf[..]).unwrap();
        assert_eq!(smp.header().method(), Method::GetResp);
        assert!(smp.d_bit());
        assert_eq!(smp.status(), status::OK);
        assert_eq!(smp.header().status(), 0x8000, "raw word carries the D bit");
        assert_eq!((smp.hop_pointer(), smp.hop_count()), (0, 1), "ibsim keeps hop pointer 0");
        assert_eq!(smp.return_path_port(1), Some(1), "entered Switch1 on port 1");
        assert_eq!(&smp.data()[..20], &SWITCH1_NODE_INFO_HEAD);
    }

    #[test]
    fn deconstruct_lid_response() {
        let buf = bytes(LID_RESP);
        assert!(DrSmp::new_checked(&buf[..]).is_err());
        let smp = Smp::new_checked(&buf[..]).unwrap();
        assert_eq!(smp.header().method(), Method::GetResp);
        assert_eq!(smp.header().status(), 0);
        assert_eq!(smp.header().tid(), 0x0001_0000_3095_f605);
        assert_eq!(&smp.data()[..20], &SWITCH1_NODE_INFO_HEAD);
        assert_eq!(smp.data()[36], 0, "LocalPort 0: the switch answered on its port 0");
    }

    #[test]
    fn construct_dr_request() {
        let mut buf = [0u8; 256];
        buf[..4].copy_from_slice(&[1, 0x81, 1, 1]);
        let mut smp = DrSmp::new_unchecked(&mut buf[..]);
        smp.set_hop_count(1).unwrap();
        smp.set_hop_pointer(0).unwrap();
        smp.header_mut().set_tid(0x0525_bc92);
        smp.header_mut().set_attr_id(attr::NODE_INFO);
        smp.set_dr_slid(Lid::PERMISSIVE);
        smp.set_dr_dlid(Lid::PERMISSIVE);
        smp.set_initial_path_port(1, 1).unwrap();
        assert_eq!(buf, bytes(DR_REQ));
    }

    #[test]
    fn parse_and_emit_dr_request() {
        let repr = SmpRepr::get_dr(&DrPath::new(&[1]).unwrap(), attr::NODE_INFO, 0, 0x0525_bc92);
        assert_eq!(SmpRepr::parse(&bytes(DR_REQ)), Ok(repr));
        assert_eq!(repr.to_bytes(), bytes(DR_REQ));
        assert_eq!(repr.buffer_len(), 256);
    }

    #[test]
    fn parse_and_emit_lid_response() {
        let repr = SmpRepr::parse(&bytes(LID_RESP)).unwrap();
        assert_eq!(repr.route, SmpRoute::Lid);
        assert_eq!((repr.method, repr.status, repr.attr_id), (Method::GetResp, 0, attr::NODE_INFO));
        let mut want = bytes(LID_RESP);
        want[128..].fill(0); // reserved bytes (umad2sim garbage here) are emitted as zero
        let mut out = [0xaau8; 256];
        repr.emit(&mut out);
        assert_eq!(out, want);
    }

    #[test]
    fn make_response_like_ibsim() {
        // Answering the captured request the way ibsim did gives ibsim's header and paths.
        let mut buf = bytes(DR_REQ);
        make_response(&mut buf, status::OK).unwrap();
        let mut smp = DrSmp::new_checked(&mut buf[..]).unwrap();
        smp.set_return_path_port(1, 1).unwrap();
        smp.data_mut().copy_from_slice(&bytes(DR_RESP)[64..128]);
        let resp = bytes(DR_RESP);
        assert_eq!(&buf[..8], &resp[..8]);
        assert_eq!(&buf[16..192], &resp[16..192]);
        assert_eq!(buf[193], resp[193]);

        let mut lid = [0u8; 256];
        lid[..4].copy_from_slice(&[1, 1, 1, 2]);
        make_response(&mut lid, status::BAD_FIELD).unwrap();
        assert_eq!(&lid[..6], &[1, 1, 1, 0x81, 0, 0x1c]);
        let mut sa = lid;
        sa[1] = 3;
        assert!(matches!(make_response(&mut sa, 0), Err(Error::WrongClass { found: 3, .. })));
        assert_eq!(
            sa,
            {
                let mut s = lid;
                s[1] = 3;
                s
            },
            "unchanged on error"
        );
    }

    #[test]
    fn dr_status_keeps_d_bit() {
        let mut buf = bytes(DR_RESP);
        let mut smp = DrSmp::new_checked(&mut buf[..]).unwrap();
        smp.set_status(0xffff);
        assert!(smp.d_bit());
        assert_eq!(smp.status(), 0x7fff);
        smp.set_d_bit(false);
        assert_eq!(smp.status(), 0x7fff);
        assert_eq!(&buf[4..6], &[0x7f, 0xff]);
    }

    #[test]
    fn checked_constructors_reject() {
        let good = bytes(DR_REQ);
        assert!(matches!(DrSmp::new_checked(&good[..255]), Err(Error::Truncated { need: 256, .. })));
        let with = |i: usize, v: u8| {
            let mut b = good;
            b[i] = v;
            DrSmp::new_checked(b).map(|_| ())
        };
        assert!(matches!(with(1, 0x01), Err(Error::WrongClass { found: 1, .. })));
        assert_eq!(with(0, 2), Err(Error::BadBaseVersion(2)));
        assert_eq!(with(7, 64), Err(Error::HopCount(64)));
        assert_eq!(with(6, 3), Err(Error::HopPointer { pointer: 3, count: 1 }));
        assert_eq!(with(6, 2), Ok(()));
        let mut v = DrSmp::new_checked(good).unwrap();
        assert_eq!(v.set_hop_pointer(3), Err(Error::HopPointer { pointer: 3, count: 1 }));
        assert_eq!(v.set_return_path_port(2, 1), Err(Error::Invalid { what: "DrSmp.ReturnPath index", value: 2 }));
        v.set_hop_pointer(2).unwrap();
        assert_eq!(v.set_hop_count(0), Err(Error::HopPointer { pointer: 2, count: 0 }));
        assert_eq!(v.hop_count(), 1, "unchanged after a rejected set");
        let mut cv = good;
        cv[2] = 2;
        assert_eq!(SmpRepr::parse(&cv), Err(Error::BadClassVersion { class: 0x81, expected: 1, found: 2 }));
        assert!(Smp::new_checked(&bytes(LID_RESP)[..100]).is_err());
    }

    #[test]
    fn unchecked_short_views_do_not_panic() {
        let short = [1u8, 0x81, 1, 1, 0, 0, 0, 5];
        let v = DrSmp::new_unchecked(&short[..]);
        assert_eq!((v.data(), v.initial_path_port(1), v.return_path_port(5)), (&[][..], None, None));
        assert!(v.initial_route().is_err());
        let mut m = short;
        let mut w = DrSmp::new_unchecked(&mut m[..]);
        assert!(w.set_initial_path_port(1, 3).is_err());
        assert!(w.data_mut().is_empty());
        let mut out = [0u8; 10];
        SmpRepr::get_lid(1, 2, 3).emit(&mut out);
        assert_eq!(out[1], 1);
    }

    fn arb_path(n: u8) -> impl Strategy<Value = DrPath> {
        vec(any::<u8>(), usize::from(n)).prop_map(|p| DrPath::new(&p).unwrap())
    }

    fn arb_route() -> impl Strategy<Value = SmpRoute> {
        let dr = (0u8..=63).prop_flat_map(|n| {
            (any::<bool>(), 0..=n + 1, any::<[u16; 2]>(), arb_path(n), arb_path(n)).prop_map(
                move |(d_bit, hop_pointer, lids, initial_path, return_path)| SmpRoute::Directed {
                    d_bit,
                    hop_pointer,
                    hop_count: n,
                    dr_slid: Lid(lids[0]),
                    dr_dlid: Lid(lids[1]),
                    initial_path,
                    return_path,
                },
            )
        });
        prop_oneof![Just(SmpRoute::Lid), dr]
    }

    fn arb_smp() -> impl Strategy<Value = SmpRepr> {
        let data = vec(any::<u8>(), SMP_DATA_LEN);
        (any::<(u8, u16, u64, u16, u32, u64)>(), data, arb_route()).prop_map(
            |((m, status, tid, attr_id, attr_mod, key), data, route)| {
                let mut d = [0u8; SMP_DATA_LEN];
                d.copy_from_slice(&data);
                let status = if route == SmpRoute::Lid { status } else { status & 0x7fff };
                SmpRepr {
                    method: Method::from_raw(m),
                    status,
                    tid,
                    attr_id,
                    attr_mod,
                    m_key: MKey(key),
                    data: d,
                    route,
                }
            },
        )
    }

    proptest! {
        #[test]
        fn repr_round_trip(repr in arb_smp()) {
            let bytes = repr.to_bytes();
            prop_assert_eq!(SmpRepr::parse(&bytes), Ok(repr));
        }

        #[test]
        fn arbitrary_bytes_never_panic(mut buf in vec(any::<u8>(), 256), dr: bool) {
            // Make most inputs get past the class and version checks.
            buf[0] = 1;
            buf[1] = if dr { 0x81 } else { 0x01 };
            buf[2] = 1;
            if let Ok(repr) = SmpRepr::parse(&buf) {
                let again = SmpRepr::parse(&repr.to_bytes());
                prop_assert_eq!(again, Ok(repr));
            }
            if let Ok(v) = DrSmp::new_checked(&buf[..]) {
                for i in 0..=255u8 {
                    let _ = (v.initial_path_port(i), v.return_path_port(i));
                }
                prop_assert!(v.initial_route().is_ok() && v.return_route().is_ok());
            }
            let mut fixed = [0u8; 256];
            fixed.copy_from_slice(&buf);
            let _ = make_response(&mut fixed, 0);
        }

        #[test]
        fn raw_bytes_never_panic(buf in vec(any::<u8>(), 0..300)) {
            let _ = SmpRepr::parse(&buf);
            let _ = Smp::new_checked(&buf[..]);
            let _ = DrSmp::new_checked(&buf[..]);
        }
    }
}
