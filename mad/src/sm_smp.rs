//! Directed-route SMPs as an SM sends and reads them by the million: a request written
//! straight into its 256-byte buffer ([`DrRequest`]) and an answer read without its routes
//! ([`SmpAnswer`]).
//!
//! Owns nothing of the layout: it writes and reads the fields `smp` defines, with the checks
//! `smp` makes. What it guarantees is equality with `smp`'s repr: [`DrRequest::emit`] writes the
//! bytes `SmpRepr::set_dr(..).with_method(..).with_m_key(..).emit` does, and
//! [`SmpAnswer::parse`] accepts exactly what `SmpRepr::parse` accepts, giving the same TID,
//! attribute, modifier, status and data (the tests below hold both to that). It exists because
//! the repr carries both 64-byte routes and is copied on its way in and out: at k = 48 a
//! bring-up's 2.06 million SMPs spent ~1,000 instructions each there.

use crate::header::{Mad, Method};
use crate::ids::class;
use crate::smp::{SMP_DATA_LEN, SMP_LEN, check_common, check_hops, field};
use crate::{DrPath, Error, Lid, MKey, Result, bits, check_len};

/// A directed-route request in the form ibsim requires (hop pointer 0, D = 0, DrSLID = DrDLID
/// = 0xffff, ReturnPath zero), as `SmpRepr::set_dr` makes it, with its method and M_Key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DrRequest<'a> {
    /// The route, from the sender's port.
    pub path: &'a DrPath,
    /// Get or Set.
    pub method: Method,
    /// `AttributeID`.
    pub attr_id: u16,
    /// `AttributeModifier`.
    pub attr_mod: u32,
    /// `TransactionID`.
    pub tid: u64,
    /// `M_Key`.
    pub m_key: MKey,
    /// The 64-byte SMP data.
    pub data: &'a [u8; SMP_DATA_LEN],
}

impl DrRequest<'_> {
    /// Writes the whole 256-byte SMP into `buf` (reserved bytes and unused path bytes zero).
    pub fn emit(&self, buf: &mut [u8; SMP_LEN]) {
        buf.fill(0);
        let mut mad = Mad::new_unchecked(&mut buf[..]);
        mad.set_base_version(1);
        mad.set_mgmt_class(crate::header::MgmtClass::SubnDr);
        mad.set_class_version(1);
        mad.set_method(self.method);
        // Status 0 with D = 0; hop pointer 0.
        buf[field::HOP_COUNT] = self.path.hop_count();
        bits::put_u64(buf, 8, self.tid);
        bits::put_u16(buf, 16, self.attr_id);
        bits::put_u32(buf, 20, self.attr_mod);
        bits::put_u64(buf, field::M_KEY, self.m_key.0);
        bits::put_u16(buf, field::DR_SLID, Lid::PERMISSIVE.0);
        bits::put_u16(buf, field::DR_DLID, Lid::PERMISSIVE.0);
        buf[field::DATA].copy_from_slice(self.data);
        buf[field::INITIAL_PATH].copy_from_slice(self.path.wire());
    }
}

/// What an SM matches an answer to its request by, and what it reads from it: an SMP of either
/// routing, its routes checked but not kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmpAnswer {
    /// `TransactionID`.
    pub tid: u64,
    /// `AttributeID`.
    pub attr_id: u16,
    /// `AttributeModifier`.
    pub attr_mod: u32,
    /// Status: 16 bits for LID-routed SMPs, 15 for directed route (the D bit masked).
    pub status: u16,
    /// The 64-byte SMP data.
    pub data: [u8; SMP_DATA_LEN],
}

impl SmpAnswer {
    /// Reads an SMP of either class; the checks and errors are `SmpRepr::parse`'s.
    ///
    /// # Errors
    /// [`Error::Truncated`], [`Error::WrongClass`], [`Error::BadBaseVersion`],
    /// [`Error::BadClassVersion`], and for DR [`Error::HopCount`]/[`Error::HopPointer`].
    pub fn parse(buf: &[u8]) -> Result<SmpAnswer> {
        check_len("SMP", buf, SMP_LEN)?;
        let mad = Mad::new_unchecked(buf);
        let status = match buf[1] {
            class::SUBN_LID => {
                check_common(buf, "LID-routed SMP", class::SUBN_LID, "SubnLid (0x01)")?;
                mad.status()
            }
            class::SUBN_DR => {
                check_common(buf, "directed-route SMP", class::SUBN_DR, "SubnDr (0x81)")?;
                check_hops(buf[field::HOP_POINTER], buf[field::HOP_COUNT])?;
                mad.status() & !field::D_BIT
            }
            found => {
                return Err(Error::WrongClass { expected: "SubnLid or SubnDr (0x01, 0x81)", found });
            }
        };
        if mad.class_version() != 1 {
            return Err(Error::BadClassVersion { class: buf[1], expected: 1, found: mad.class_version() });
        }
        let mut data = [0u8; SMP_DATA_LEN];
        data.copy_from_slice(&buf[field::DATA]);
        Ok(SmpAnswer { tid: mad.tid(), attr_id: mad.attr_id(), attr_mod: mad.attr_mod(), status, data })
    }
}

impl From<&crate::smp::SmpRepr> for SmpAnswer {
    fn from(r: &crate::smp::SmpRepr) -> SmpAnswer {
        SmpAnswer { tid: r.tid, attr_id: r.attr_id, attr_mod: r.attr_mod, status: r.status, data: r.data }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::smp::SmpRepr;
    use proptest::collection::vec;
    use proptest::prelude::*;

    fn path(ports: &[u8]) -> DrPath {
        ports.iter().fold(DrPath::local(), |p, &port| p.push(port).unwrap())
    }

    #[test]
    fn a_request_is_the_reprs_bytes() {
        let p = path(&[1, 7, 36]);
        let data: [u8; SMP_DATA_LEN] = std::array::from_fn(|i| i as u8 ^ 0x5a);
        let req = DrRequest {
            path: &p,
            method: Method::Set,
            attr_id: 0x0019,
            attr_mod: 477,
            tid: 0x1234_5678_9abc,
            m_key: MKey(0xfeed),
            data: &data,
        };
        let mut buf = [0xffu8; SMP_LEN];
        req.emit(&mut buf);
        let repr = SmpRepr::set_dr(&p, 0x0019, 477, 0x1234_5678_9abc, data).with_m_key(MKey(0xfeed));
        assert_eq!(buf, repr.to_bytes());
        // And what the repr reads back is the request.
        let back = SmpRepr::parse(&buf).unwrap();
        assert_eq!(back, repr);
        assert_eq!(buf[7], 3, "hop count");
        assert_eq!(&buf[32..36], &[0xff; 4], "DrSLID and DrDLID permissive");
    }

    #[test]
    fn an_answer_reads_what_the_repr_reads() {
        let p = path(&[1, 2]);
        let mut buf = SmpRepr::get_dr(&p, 0x0015, 3, 0xabcd_0000_0042).to_bytes();
        crate::smp::make_response(&mut buf, 0x0004).unwrap();
        let a = SmpAnswer::parse(&buf).unwrap();
        assert_eq!(a, SmpAnswer::from(&SmpRepr::parse(&buf).unwrap()));
        assert_eq!((a.tid, a.attr_id, a.attr_mod, a.status), (0xabcd_0000_0042, 0x0015, 3, 0x0004));
        // The D bit is not status.
        assert_eq!(buf[4] & 0x80, 0x80);
    }

    #[test]
    fn a_bad_answer_fails_as_the_repr_fails() {
        let p = path(&[1]);
        let good = SmpRepr::get_dr(&p, 0x0011, 0, 9).to_bytes();
        let mut short = good.to_vec();
        short.truncate(200);
        let mut class = good;
        class[1] = 0x81 ^ 0x02;
        let mut hops = good;
        hops[7] = 64;
        let mut pointer = good;
        pointer[6] = 3;
        let mut version = good;
        version[2] = 2;
        let mut base = good;
        base[0] = 2;
        for bad in [&short[..], &class[..], &hops[..], &pointer[..], &version[..], &base[..]] {
            let ours = SmpAnswer::parse(bad).unwrap_err();
            assert_eq!(ours, SmpRepr::parse(bad).unwrap_err());
        }
    }

    proptest! {
        #[test]
        fn requests_equal_the_repr(
            ports in vec(1u8..=255, 0..=63),
            set in any::<bool>(),
            attr_id in any::<u16>(),
            attr_mod in any::<u32>(),
            tid in any::<u64>(),
            m_key in any::<u64>(),
            data in vec(any::<u8>(), SMP_DATA_LEN),
        ) {
            let p = path(&ports);
            let data: [u8; SMP_DATA_LEN] = data.try_into().unwrap();
            let method = if set { Method::Set } else { Method::Get };
            let mut buf = [0xa5u8; SMP_LEN];
            DrRequest { path: &p, method, attr_id, attr_mod, tid, m_key: MKey(m_key), data: &data }.emit(&mut buf);
            let repr = SmpRepr::set_dr(&p, attr_id, attr_mod, tid, data).with_method(method).with_m_key(MKey(m_key));
            prop_assert_eq!(buf, repr.to_bytes());
        }

        #[test]
        fn answers_equal_the_repr(
            mut bytes in vec(any::<u8>(), 250..=260),
            class in prop_oneof![Just(0x01u8), Just(0x81u8), any::<u8>()],
            base in prop_oneof![Just(1u8), any::<u8>()],
            version in prop_oneof![Just(1u8), any::<u8>()],
            hops in prop_oneof![0u8..8, any::<u8>()],
            pointer in prop_oneof![0u8..8, any::<u8>()],
        ) {
            if let Some(b) = bytes.get_mut(..8) {
                b[0] = base;
                b[1] = class;
                b[2] = version;
                b[6] = pointer;
                b[7] = hops;
            }
            match (SmpAnswer::parse(&bytes), SmpRepr::parse(&bytes)) {
                (Ok(a), Ok(r)) => prop_assert_eq!(a, SmpAnswer::from(&r)),
                (Err(a), Err(r)) => prop_assert_eq!(a, r),
                (a, r) => prop_assert!(false, "ours {:?}, the repr's {:?}", a, r),
            }
        }
    }
}
