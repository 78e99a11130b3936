//! ClassPortInfo (Get): what this SA supports and where it answers.
//!
//! Capability bits are set only for what is served: none of the optional SA features
//! (multicast, MultiPathRecord, InformInfo notices) yet, so CapabilityMask is 0; OpenSM, which
//! has them, reports 0x2602. No redirection: the SA answers on QP1 with the GSI Q_Key.

use ibsm_mad::Attribute;
use ibsm_mad::ids::status;
use ibsm_mad::records::ClassPortInfo;

use super::{Answer, Query};

/// GSI well-known Q_Key.
const GSI_QKEY: u32 = 0x8001_0000;

/// RespTimeValue: 4.096 µs × 2^16 ≈ 268 ms, an upper bound on the time to answer (as OpenSM).
const RESP_TIME_VALUE: u8 = 16;

/// The SA's ClassPortInfo.
pub(super) fn class_port_info() -> ClassPortInfo {
    ClassPortInfo {
        base_version: 1,
        class_version: 2,
        resp_time_value: RESP_TIME_VALUE,
        redirect_qp: 1,
        redirect_qkey: GSI_QKEY,
        trap_qkey: GSI_QKEY,
        ..ClassPortInfo::default()
    }
}

/// Get(ClassPortInfo).
pub(super) fn get(q: &Query<'_>) -> Answer {
    let rec = class_port_info().to_vec();
    let offset = (ibsm_mad::records::stride::<ClassPortInfo>() / 8) as u16;
    Answer::single(q.header.response(status::OK, offset), &rec, 1)
}
