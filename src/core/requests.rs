//! Requests that reach the SM: the dispatch of every received MAD on (class, method,
//! attribute), and the handlers of what the SM answers today.
//!
//! Owns: reading the common MAD header first ([`classify`]); answering SubnGet(SMInfo) on the
//! SM's own port, LID-routed and directed-route (a Get that fails the port's M_Key check at
//! protect levels 2 and 3 gets no answer); acknowledging traps with TrapRepress and
//! turning them into a sweep request; and the spec's "method/attribute not supported" status
//! (0x000c) for every request nobody serves yet. Answers are queued as responses outside the
//! SMP window (no timeout, no retry). SA requests go to the SA component (`sa`), through the
//! coordinator's `answer_sa`. It never trusts a byte: a MAD too short for
//! its header, of another base version, or of a class whose header does not parse is counted
//! as malformed and dropped, and so is a LID-routed request from LID 0, a GS request from
//! QP0 or a LID-routed SMP from another QP.
//!
//! Must not touch: the sweep's transactions (responses to our own SMPs go back to
//! `Sm::handle_mad`, which hands them to the transaction table).

use ibsm_mad::attrs::{SmInfo, SmState as WireSmState};
use ibsm_mad::header::{Mad, MadHeader, Method, MgmtClass};
use ibsm_mad::ids::{attr, status};
use ibsm_mad::smp::{DrSmp, SMP_DATA_LEN};
use ibsm_mad::{Attribute, MAD_LEN};

use super::Sm;
use super::events::SmEvent;
use super::io::{Address, MadSource, Transmit, TransmitKind};
use super::state::SmState;

/// Offset of the SMP data area (and of the SA header's end is 56; the SMP data starts at 64).
const SMP_DATA: usize = 64;
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
fn reply_to(h: &MadHeader, src: &MadSource) -> Address {
    if h.mgmt_class == MgmtClass::SubnDr { Address::DIRECTED_ROUTE } else { src.reply_address() }
}

impl Sm {
    /// Dispatches a request (anything that is not a response) to its handler.
    pub(super) fn handle_request(&mut self, kind: Inbound, h: &MadHeader, bytes: &[u8], src: &MadSource) {
        // A LID-routed request from LID 0 (a reserved source LID) has nobody to answer; QP0
        // carries SMPs only, so a GS request (SA, sync) from QP0 would be answered to QP0 and a
        // LID-routed SMP from another QP to that QP. All are dropped and counted as malformed.
        // (A directed-route answer goes back along its route to QP0 whatever the source.)
        let no_lid = src.slid == ibsm_mad::Lid::UNASSIGNED;
        let bad_source = match h.mgmt_class {
            MgmtClass::SubnDr => false,
            MgmtClass::SubnLid => no_lid || src.sqpn != 0,
            _ => no_lid || src.sqpn == 0,
        };
        if bad_source {
            self.counters.malformed += 1;
            return;
        }
        match kind {
            Inbound::GetSmInfo => self.answer_sm_info(h, bytes, src),
            Inbound::SetSmInfo => self.answer_sm_control(h, bytes, src),
            Inbound::Trap => self.on_trap(h, bytes, src),
            Inbound::Sa => self.answer_sa(h, bytes, src),
            Inbound::Sync => self.answer_sync(h, bytes, src),
            Inbound::Unsupported => {
                self.note_unsupported(h, src);
                if let Some(reply) = response_to(bytes, status::BAD_METHOD_ATTR, None) {
                    self.respond(reply, reply_to(h, src));
                }
            }
            Inbound::NoAnswer | Inbound::Response | Inbound::Malformed => {}
        }
    }

    /// The SMInfo this SM reports: its port GUID, priority, state and activity count. The SM_Key
    /// is returned only to a requester that sent the right one.
    pub fn sm_info(&self, proven_key: bool) -> SmInfo {
        let sm_state = match self.state {
            SmState::NotActive => WireSmState::NotActive,
            SmState::Discovering => WireSmState::Discovering,
            SmState::Standby => WireSmState::Standby,
            SmState::Master => WireSmState::Master,
        };
        SmInfo {
            guid: self.port_guid(),
            sm_key: if proven_key { self.cfg.sm_key } else { 0 },
            act_count: self.act_count(),
            priority: self.priority(),
            sm_state,
        }
    }

    /// ActCount: rises with every SMP this SM sends and every SMInfo query it answers.
    fn act_count(&self) -> u32 {
        (self.tx.counters.sent as u32).wrapping_add(self.counters.sm_info_answered as u32)
    }

    /// SubnSet(SMInfo): obeyed or refused (status 0x001C) by the election's rules; the answer
    /// carries this SM's SMInfo as it is after the control.
    fn answer_sm_control(&mut self, h: &MadHeader, bytes: &[u8], src: &MadSource) {
        let from = bytes.get(SMP_DATA..SMP_DATA + SMP_DATA_LEN).and_then(|d| SmInfo::parse(d).ok());
        let sender = self.control_sender(bytes, h.mgmt_class == MgmtClass::SubnDr, src.slid);
        let obeyed = from.is_some_and(|f| self.on_sm_control(h.attr_mod, &f, sender));
        let mut data = [0u8; SMP_DATA_LEN];
        self.sm_info(obeyed).emit(&mut data);
        let st = if obeyed { status::OK } else { status::BAD_FIELD };
        if let Some(reply) = response_to(bytes, st, Some(&data)) {
            self.respond(reply, reply_to(h, src));
        }
    }

    fn answer_sm_info(&mut self, h: &MadHeader, bytes: &[u8], src: &MadSource) {
        let asked = bytes.get(SMP_DATA..SMP_DATA + SMP_DATA_LEN).and_then(|d| SmInfo::parse(d).ok());
        let asked_key = asked.map(|i| i.sm_key);
        // The SM_Key goes to a requester that presents it, or (as the IBTA and OpenSM have it)
        // one that passes this port's M_Key check: anyone while the port has no M_Key
        // protection, only holders of the port's M_Key once it has. OpenSM ignores an SM whose
        // SMInfo shows another key than its own, so a pair with the same key needs this.
        let smp_mkey = (bytes.len() >= 32).then(|| ibsm_mad::smp::Smp::new_unchecked(bytes).m_key());
        let mkey_ok = smp_mkey.is_some_and(|k| self.mkeys.passes_own(&self.cfg.m_key, self.port_guid, k));
        // At protect levels 2 and 3 a Get that fails the port's M_Key check gets no answer at
        // all, as an SMA drops it (an answer, even with the key hidden, tells a prober that an
        // SM is there and which one).
        if !mkey_ok && self.cfg.m_key.protect >= 2 {
            return;
        }
        let proven = asked_key == Some(self.cfg.sm_key) || mkey_ok;
        // A master counts the query as activity (a standby's poll sees the count rise).
        if self.state == SmState::Master {
            self.counters.sm_info_answered += 1;
        }
        // A standby that polls with our SM_Key (ibsm's standbys send their own SMInfo) is
        // kept in sync from now on, found by a sweep or not.
        if let Some(standby) = asked.filter(|i| i.sm_key == self.cfg.sm_key && i.sm_state == WireSmState::Standby) {
            self.standby_seen(standby.guid);
        }
        let mut data = [0u8; SMP_DATA_LEN];
        self.sm_info(proven).emit(&mut data);
        if let Some(reply) = response_to(bytes, status::OK, Some(&data)) {
            self.respond(reply, reply_to(h, src));
        }
        self.events.push_back(SmEvent::SmInfoAnswered { from: src.slid, phase: self.phase });
    }

    fn on_trap(&mut self, h: &MadHeader, bytes: &[u8], src: &MadSource) {
        self.counters.traps += 1;
        let notice = bytes.get(SMP_DATA..).and_then(|d| ibsm_mad::attrs::Notice::parse(d).ok());
        let number = notice.as_ref().and_then(|n| match n.source {
            ibsm_mad::attrs::NoticeSource::Generic { trap_number, .. } => Some(trap_number),
            ibsm_mad::attrs::NoticeSource::Vendor { .. } => None,
        });
        // TrapRepress: the trap itself, method 0x07, back to the issuer (not a response: no R bit,
        // but sent once like one), with the issuer's M_Key (a wrong one would be refused). Not
        // for a bad-M_Key trap about a refused TrapRepress: the port does not know this SM's key,
        // and repressing again would only raise the next such trap, for ever.
        let repress_refused = notice.as_ref().is_some_and(|n| {
            matches!(n.details, ibsm_mad::attrs::NoticeDetails::Trap256 { method, .. } if method == Method::TrapRepress.raw())
        });
        if let Some(mut repress) = bytes.get(..MAD_LEN).map(<[u8]>::to_vec).filter(|_| !repress_refused) {
            let key = self.mkeys.issuer_key(&self.cfg.m_key, self.ports(), src.slid);
            let mut m = Mad::new_unchecked(&mut repress[..]);
            m.set_method(Method::TrapRepress);
            m.set_status(status::OK);
            ibsm_mad::smp::Smp::new_unchecked(&mut repress[..]).set_m_key(key);
            self.respond(repress, reply_to(h, src));
        }
        // Subscribers hear of it (as OpenSM forwards traps to InformInfo subscribers); a bad
        // M_Key is a security event, reported per source.
        if let Some(n) = notice.as_ref() {
            if number == Some(256) {
                let ports = super::mkeys::Ports { snapshot: self.sa.snapshot(), subnet: &self.subnet };
                let event = self.mkeys.on_bad_mkey(&self.cfg.m_key, ports, self.now, src.slid, &n.details);
                self.events.extend(event);
            }
            // Only to subscribers who share a partition with the issuer (o13-17.1.1).
            self.sa.notify_trap(n, self.now);
        }
        let action = self.act_on_trap(src.slid, notice.as_ref());
        self.events.push_back(SmEvent::TrapReceived { from: src.slid, number, action });
    }

    /// Counts and reports a request answered with "method/attribute not supported".
    fn note_unsupported(&mut self, h: &MadHeader, src: &MadSource) {
        self.counters.unsupported += 1;
        self.events.push_back(SmEvent::RequestUnsupported {
            class: h.mgmt_class.raw(),
            method: h.method.raw(),
            attr_id: h.attr_id,
            from: src.slid,
        });
    }

    /// Queues a response (outside the SMP window: no timeout, no retry).
    pub(super) fn respond(&mut self, bytes: Vec<u8>, to: Address) {
        self.responses.push_back(Transmit { bytes, to, kind: TransmitKind::Response });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
