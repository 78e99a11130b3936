//! SA answers counted by attribute and status, for the metrics (`ibsm_sa_answers_total`) and
//! `ibsm status`. The labels come from fixed tables (an attribute or status the SA does not
//! know is `other`), so the counts stay bounded whatever clients send.

use std::collections::BTreeMap;

use ibsm_mad::ids::{sa_attr, status};

/// The name of an SA attribute as operators know it from `saquery` and the spec.
pub fn attribute_name(id: u16) -> &'static str {
    match id {
        sa_attr::CLASS_PORT_INFO => "ClassPortInfo",
        sa_attr::NOTICE => "Notice",
        sa_attr::INFORM_INFO => "InformInfo",
        sa_attr::NODE_RECORD => "NodeRecord",
        sa_attr::PORT_INFO_RECORD => "PortInfoRecord",
        sa_attr::SL2VL_RECORD => "SL2VLTableRecord",
        sa_attr::SWITCH_INFO_RECORD => "SwitchInfoRecord",
        sa_attr::LFT_RECORD => "LinearForwardingTableRecord",
        sa_attr::RFT_RECORD => "RandomForwardingTableRecord",
        sa_attr::MFT_RECORD => "MulticastForwardingTableRecord",
        sa_attr::SM_INFO_RECORD => "SMInfoRecord",
        sa_attr::INFORM_INFO_RECORD => "InformInfoRecord",
        sa_attr::LINK_RECORD => "LinkRecord",
        sa_attr::GUID_INFO_RECORD => "GUIDInfoRecord",
        sa_attr::SERVICE_RECORD => "ServiceRecord",
        sa_attr::PKEY_TABLE_RECORD => "P_KeyTableRecord",
        sa_attr::PATH_RECORD => "PathRecord",
        sa_attr::VL_ARB_RECORD => "VLArbitrationTableRecord",
        sa_attr::MC_MEMBER_RECORD => "MCMemberRecord",
        sa_attr::TRACE_RECORD => "TraceRecord",
        sa_attr::MULTI_PATH_RECORD => "MultiPathRecord",
        _ => "other",
    }
}

/// The name of a MAD status (the SA's class-specific codes included).
pub fn status_name(code: u16) -> &'static str {
    match code {
        status::OK => "ok",
        status::BUSY => "busy",
        status::REDIRECT => "redirect",
        status::BAD_VERSION => "bad_version",
        status::BAD_METHOD => "bad_method",
        status::BAD_METHOD_ATTR => "bad_method_attr",
        status::BAD_FIELD => "bad_field",
        status::SA_NO_RESOURCES => "no_resources",
        status::SA_REQ_INVALID => "req_invalid",
        status::SA_NO_RECORDS => "no_records",
        status::SA_TOO_MANY_RECORDS => "too_many_records",
        status::SA_INVALID_GID => "invalid_gid",
        status::SA_INSUFFICIENT_COMPONENTS => "insufficient_components",
        status::SA_REQ_DENIED => "denied",
        _ => "other",
    }
}

/// Answers sent, by (attribute, status) name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SaCounts {
    by: BTreeMap<(&'static str, &'static str), u64>,
}

impl SaCounts {
    /// Counts one answer.
    pub fn count(&mut self, attr_id: u16, status_code: u16) {
        *self.by.entry((attribute_name(attr_id), status_name(status_code & 0x7fff))).or_default() += 1;
    }

    /// ((attribute, status), answers), in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&(&'static str, &'static str), &u64)> {
        self.by.iter()
    }

    /// Every answer counted.
    pub fn total(&self) -> u64 {
        self.by.values().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_stay_bounded_whatever_arrives() {
        let mut c = SaCounts::default();
        for attr in 0..=u16::MAX {
            c.count(attr, attr);
        }
        // 22 attribute names (with `other`) times 15 status names at most.
        assert!(c.iter().count() <= 22 * 15, "{}", c.iter().count());
        assert_eq!(c.total(), 65_536);
        let mut c = SaCounts::default();
        c.count(sa_attr::PATH_RECORD, status::OK);
        c.count(sa_attr::PATH_RECORD, status::OK);
        c.count(sa_attr::NODE_RECORD, status::SA_NO_RECORDS);
        let all: Vec<_> = c.iter().map(|(k, v)| (*k, *v)).collect();
        assert_eq!(all, [(("NodeRecord", "no_records"), 1), (("PathRecord", "ok"), 2)]);
    }
}
