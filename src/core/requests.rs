//! Requests that reach the SM: reading the common MAD header of every received MAD and saying
//! what it is ([`classify`], on class, method and attribute), who may be answered
//! ([`bad_source`]), and the shape of an answer ([`response_to`], [`reply_to`]). Pure functions:
//! the coordinator (`Sm::handle_mad`) dispatches on what they say to the handlers, each with
//! what it is about: SMInfo Get and Set in `mastership`, traps in [`super::traps`], SA requests
//! in the SA component (`sa`), sync messages in [`super::replication`], and the spec's
//! "method/attribute not supported" status (0x000c) for every request nobody serves.
//!
//! It never trusts a byte: a MAD too short for its header, of another base version, or of a
//! class whose header does not parse is malformed, and so is a LID-routed request from LID 0, a
//! GS request from QP0 or a LID-routed SMP from another QP. It must not touch the sweep's
//! transactions (responses to our own SMPs go back to `Sm::handle_mad`, which hands them to the
//! transaction table).

use ibsm_mad::MAD_LEN;
use ibsm_mad::header::{Mad, MadHeader, Method, MgmtClass};
use ibsm_mad::ids::attr;
use ibsm_mad::smp::{DrSmp, SMP_DATA_LEN};

use super::events::SmEvent;
use super::io::{Address, MadSource};

/// Offset of the SMP data area (and of the SA header's end is 56; the SMP data starts at 64).
pub(super) const SMP_DATA: usize = 64;
/// Where the SA header ends; the record data of an SA reply starts here.
const SA_DATA: usize = 56;
/// The RMPP header of a GS MAD (cleared in a single-MAD reply).
const RMPP_HEADER: std::ops::Range<usize> = 24..36;

/// What a received MAD is, from its common header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Inbound {
    /// A response: to one of our SMPs if the TID matches.
    Response,
    /// SubnGet(SMInfo).
    GetSmInfo,
    /// SubnSet(SMInfo): a control from another SM (HANDOVER, ...).
    SetSmInfo,
    /// A trap (SubnTrap(Notice)).
    Trap,
    /// A Subnet Administration request (class 0x03).
    Sa,
    /// A state sync message from another ibsm SM (SA class, vendor attribute).
    Sync,
    /// A TrapRepress, or a method that has no response (Send): nothing to answer.
    NoAnswer,
    /// A request nobody serves yet: answered with status 0x000c.
    Unsupported,
    /// Not a MAD we can even answer.
    Malformed,
}

/// Whether `bytes` is what [`classify`] calls a [`Inbound::Response`] of a SubnMgt class (an
/// answer to an SMP, LID-routed or directed-route), read from the four bytes that decide it:
/// at least a MAD's length, base version 1, class 0x01 or 0x81, the response bit. Nearly all a
/// sweep receives is such an answer (two million in a k = 48 bring-up), and reading the whole
/// header first cost about 130 instructions each.
pub(super) fn is_smp_answer(bytes: &[u8]) -> bool {
    bytes.len() >= MAD_LEN
        && bytes[0] == 1
        && matches!(bytes[1], ibsm_mad::ids::class::SUBN_LID | ibsm_mad::ids::class::SUBN_DR)
        && bytes[3] & ibsm_mad::ids::method::RESPONSE != 0
}

/// Reads the common header and says what the MAD is.
pub(super) fn classify(bytes: &[u8]) -> (Inbound, Option<MadHeader>) {
    let Ok(h) = MadHeader::from_bytes(bytes) else { return (Inbound::Malformed, None) };
    if h.base_version != 1 || bytes.len() < MAD_LEN {
        return (Inbound::Malformed, Some(h));
    }
    let kind = if h.method.is_response() {
        Inbound::Response
    } else {
        match (h.mgmt_class, h.method, h.attr_id) {
            (MgmtClass::SubnLid | MgmtClass::SubnDr, Method::Get, attr::SM_INFO) => Inbound::GetSmInfo,
            (MgmtClass::SubnLid | MgmtClass::SubnDr, Method::Set, attr::SM_INFO) => Inbound::SetSmInfo,
            (MgmtClass::SubnLid | MgmtClass::SubnDr, Method::Trap, _) => Inbound::Trap,
            (MgmtClass::SubnDr, _, _) if DrSmp::new_checked(bytes).is_err() => Inbound::Malformed,
            // Reports go from the SA to subscribers, never to the SA: one arriving here is our
            // own, returned by the transport (a send that timed out), or a stray.
            (MgmtClass::SubnAdm, Method::Report, _) => Inbound::NoAnswer,
            (MgmtClass::SubnAdm, Method::Get | Method::Set, crate::sync::wire::ATTR_SYNC) => Inbound::Sync,
            (MgmtClass::SubnAdm, m, _) if m.response().is_some() => Inbound::Sa,
            (_, m, _) if m.response().is_none() => Inbound::NoAnswer,
            _ => Inbound::Unsupported,
        }
    };
    (kind, Some(h))
}

/// The response to the SMP or GS request `request`: the request with the response method and
/// `status`, the D bit for directed route, `data` in the SMP data area (or, for GS classes, no
/// data and no RMPP). `None` when the request is not a well-formed SMP/GS MAD.
pub(super) fn response_to(request: &[u8], status: u16, data: Option<&[u8; SMP_DATA_LEN]>) -> Option<Vec<u8>> {
    let mut out = request.get(..MAD_LEN)?.to_vec();
    let h = MadHeader::from_bytes(&out).ok()?;
    let resp = h.method.response()?;
    match h.mgmt_class {
        MgmtClass::SubnDr => {
            let mut smp = DrSmp::new_checked(&mut out[..]).ok()?;
            smp.make_response(status);
            // `make_response` answers with GetResp, which is right for Get and Set.
        }
        MgmtClass::SubnLid => {
            let mut m = Mad::new_unchecked(&mut out[..]);
            m.set_method(resp);
            m.set_status(status);
        }
        _ => {
            out[SA_DATA..].fill(0);
            out[RMPP_HEADER].fill(0);
            let mut m = Mad::new_unchecked(&mut out[..]);
            m.set_method(resp);
            m.set_status(status);
            return Some(out);
        }
    }
    if let Some(d) = data {
        out[SMP_DATA..SMP_DATA + SMP_DATA_LEN].copy_from_slice(d);
    }
    Some(out)
}

/// Where the answer to a request from `src` goes: directed-route SMPs back along their path
/// (permissive LID, QP0), everything else to the requester's LID and QP.
pub(super) fn reply_to(h: &MadHeader, src: &MadSource) -> Address {
    if h.mgmt_class == MgmtClass::SubnDr { Address::DIRECTED_ROUTE } else { src.reply_address() }
}

/// Whether a request from `src` has nobody to answer: a LID-routed request from LID 0 (a
/// reserved source LID); a GS request (SA, sync) from QP0, which carries SMPs only, or a
/// LID-routed SMP from another QP (the answer would go to the wrong QP). Such requests are
/// dropped and counted as malformed. A directed-route answer goes back along its route to QP0
/// whatever the source.
pub(super) fn bad_source(h: &MadHeader, src: &MadSource) -> bool {
    let no_lid = src.slid == ibsm_mad::Lid::UNASSIGNED;
    match h.mgmt_class {
        MgmtClass::SubnDr => false,
        MgmtClass::SubnLid => no_lid || src.sqpn != 0,
        _ => no_lid || src.sqpn == 0,
    }
}

/// What a request answered with "method/attribute not supported" is reported as.
pub(super) fn unsupported(h: &MadHeader, src: &MadSource) -> SmEvent {
    SmEvent::RequestUnsupported {
        class: h.mgmt_class.raw(),
        method: h.method.raw(),
        attr_id: h.attr_id,
        from: src.slid,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibsm_mad::ids::status;
    use ibsm_mad::smp::SmpRepr;
    use ibsm_mad::{DrPath, Lid};

    fn sa_request(method: u8) -> Vec<u8> {
        let mut m = vec![0u8; MAD_LEN];
        m[0] = 1;
        m[1] = 0x03;
        m[2] = 2;
        m[3] = method;
        m[8..16].copy_from_slice(&0x0102_0304_0506_0708u64.to_be_bytes());
        m[16..18].copy_from_slice(&0x0035u16.to_be_bytes());
        m[24] = 1; // RMPP version
        m[48..56].copy_from_slice(&[0xff; 8]);
        m[60] = 0x42;
        m
    }

    #[test]
    fn sa_requests_go_to_the_sa_and_a_0x000c_keeps_tid_attribute_and_mask() {
        let req = sa_request(0x12);
        assert_eq!(classify(&req).0, Inbound::Sa, "SA requests go to the SA");
        let r = response_to(&req, status::BAD_METHOD_ATTR, None).unwrap();
        assert_eq!(&r[..4], &[1, 0x03, 2, 0x92]);
        assert_eq!(&r[4..6], &[0x00, 0x0c]);
        assert_eq!(&r[8..16], &0x0102_0304_0506_0708u64.to_be_bytes(), "TID unchanged");
        assert_eq!(&r[16..18], &[0x00, 0x35], "attribute unchanged");
        assert_eq!(&r[24..36], &[0; 12], "no RMPP");
        assert_eq!(&r[48..56], &[0xff; 8], "component mask echoed");
        assert!(r[56..].iter().all(|&b| b == 0), "no data");
        assert_eq!(response_to(&sa_request(0x01), 0, None).unwrap()[3], 0x81);
        assert_eq!(response_to(&sa_request(0x15), 0, None).unwrap()[3], 0x95);
    }

    #[test]
    fn responses_traps_and_garbage_are_classified() {
        assert_eq!(classify(&sa_request(0x92)).0, Inbound::Response);
        assert_eq!(classify(&sa_request(0x03)).0, Inbound::NoAnswer, "Send has no response");
        assert_eq!(classify(&[1, 2, 3]).0, Inbound::Malformed);
        let mut v2 = sa_request(0x01);
        v2[0] = 2;
        assert_eq!(classify(&v2).0, Inbound::Malformed, "base version 2");
        let trap = SmpRepr::get_lid(attr::NOTICE, 0, 0).with_method(Method::Trap).to_bytes();
        assert_eq!(classify(&trap).0, Inbound::Trap);
        let smi = SmpRepr::get_dr(&DrPath::new(&[1, 3]).unwrap(), attr::SM_INFO, 0, 7).to_bytes();
        assert_eq!(classify(&smi).0, Inbound::GetSmInfo);
        let pi = SmpRepr::get_lid(attr::PORT_INFO, 0, 7).to_bytes();
        assert_eq!(classify(&pi).0, Inbound::Unsupported);
    }

    proptest::proptest! {
        /// The shortcut agrees with `classify` on any bytes: a MAD of base version 1 or not,
        /// any class and method, short or long.
        #[test]
        fn is_smp_answer_is_classify_s_smp_response(
            len in 0usize..300,
            version in 0u8..3,
            class in proptest::sample::select(vec![0x01u8, 0x81, 0x03, 0x04, 0x02, 0x00, 0xff]),
            method in proptest::prelude::any::<u8>(),
            rest in proptest::collection::vec(proptest::prelude::any::<u8>(), 300),
        ) {
            let mut b = rest;
            b.truncate(len);
            for (i, v) in [(0, version), (1, class), (3, method)] {
                if let Some(x) = b.get_mut(i) {
                    *x = v;
                }
            }
            let (kind, h) = classify(&b);
            let smp_class = h.is_some_and(|h| {
                matches!(h.mgmt_class, MgmtClass::SubnLid | MgmtClass::SubnDr)
            });
            proptest::prop_assert_eq!(is_smp_answer(&b), kind == Inbound::Response && smp_class);
        }
    }

    #[test]
    fn is_smp_answer_takes_answers_of_both_routings_only() {
        let dr = SmpRepr::get_dr(&DrPath::new(&[1, 3]).unwrap(), attr::SM_INFO, 0, 7).to_bytes();
        let lid = SmpRepr::get_lid(attr::PORT_INFO, 0, 7).to_bytes();
        let answer = |b: &[u8]| response_to(b, 0, None).unwrap();
        assert!(is_smp_answer(&answer(&dr)) && is_smp_answer(&answer(&lid)));
        assert!(!is_smp_answer(&dr) && !is_smp_answer(&lid), "requests");
        assert!(!is_smp_answer(&answer(&sa_request(0x01))), "an SA answer");
        assert!(!is_smp_answer(&answer(&dr)[..255]), "short");
    }

    #[test]
    fn dr_smp_answer_keeps_the_route_and_sets_d() {
        let req = SmpRepr::get_dr(&DrPath::new(&[1, 3]).unwrap(), attr::SM_INFO, 0, 0x55).to_bytes();
        let data = [0xab; SMP_DATA_LEN];
        let r = response_to(&req, 0, Some(&data)).unwrap();
        let smp = SmpRepr::parse(&r).unwrap();
        assert_eq!(smp.method, Method::GetResp);
        assert_eq!(smp.tid, 0x55);
        assert_eq!(smp.data, data);
        let dr = DrSmp::new_checked(&r[..]).unwrap();
        assert!(dr.d_bit());
        assert_eq!(dr.hop_count(), 2);
        assert_eq!(dr.initial_path(), DrSmp::new_checked(&req[..]).unwrap().initial_path());
        assert_eq!(reply_to(&MadHeader::from_bytes(&r).unwrap(), &MadSource::lid(Lid(9), 0)), Address::DIRECTED_ROUTE);
    }
}
