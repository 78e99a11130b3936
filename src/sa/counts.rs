//! SA answers counted by attribute and status, for the metrics (`ibsm_sa_answers_total`) and
//! `ibsm status`. The labels come from fixed tables (an attribute or status the SA does not
//! know is `other`), so the counts stay bounded whatever clients send.

use ibsm_mad::ids::{sa_attr, status};

/// The SA attributes counted by name, as operators know them from `saquery` and the spec
/// (anything else is `other`, the last slot).
const ATTRIBUTES: [(u16, &str); 21] = [
    (sa_attr::CLASS_PORT_INFO, "ClassPortInfo"),
    (sa_attr::NOTICE, "Notice"),
    (sa_attr::INFORM_INFO, "InformInfo"),
    (sa_attr::NODE_RECORD, "NodeRecord"),
    (sa_attr::PORT_INFO_RECORD, "PortInfoRecord"),
    (sa_attr::SL2VL_RECORD, "SL2VLTableRecord"),
    (sa_attr::SWITCH_INFO_RECORD, "SwitchInfoRecord"),
    (sa_attr::LFT_RECORD, "LinearForwardingTableRecord"),
    (sa_attr::RFT_RECORD, "RandomForwardingTableRecord"),
    (sa_attr::MFT_RECORD, "MulticastForwardingTableRecord"),
    (sa_attr::SM_INFO_RECORD, "SMInfoRecord"),
    (sa_attr::INFORM_INFO_RECORD, "InformInfoRecord"),
    (sa_attr::LINK_RECORD, "LinkRecord"),
    (sa_attr::GUID_INFO_RECORD, "GUIDInfoRecord"),
    (sa_attr::SERVICE_RECORD, "ServiceRecord"),
    (sa_attr::PKEY_TABLE_RECORD, "P_KeyTableRecord"),
    (sa_attr::PATH_RECORD, "PathRecord"),
    (sa_attr::VL_ARB_RECORD, "VLArbitrationTableRecord"),
    (sa_attr::MC_MEMBER_RECORD, "MCMemberRecord"),
    (sa_attr::TRACE_RECORD, "TraceRecord"),
    (sa_attr::MULTI_PATH_RECORD, "MultiPathRecord"),
];

/// The MAD statuses counted by name (the SA's class-specific codes included; anything else is
/// `other`, the last slot).
const STATUSES: [(u16, &str); 14] = [
    (status::OK, "ok"),
    (status::BUSY, "busy"),
    (status::REDIRECT, "redirect"),
    (status::BAD_VERSION, "bad_version"),
    (status::BAD_METHOD, "bad_method"),
    (status::BAD_METHOD_ATTR, "bad_method_attr"),
    (status::BAD_FIELD, "bad_field"),
    (status::SA_NO_RESOURCES, "no_resources"),
    (status::SA_REQ_INVALID, "req_invalid"),
    (status::SA_NO_RECORDS, "no_records"),
    (status::SA_TOO_MANY_RECORDS, "too_many_records"),
    (status::SA_INVALID_GID, "invalid_gid"),
    (status::SA_INSUFFICIENT_COMPONENTS, "insufficient_components"),
    (status::SA_REQ_DENIED, "denied"),
];

/// Slots per attribute: the named statuses and `other`.
const STATUS_SLOTS: usize = STATUSES.len() + 1;

/// The slot of `code` in `table` (`table.len()`: other).
fn slot(table: &[(u16, &str)], code: u16) -> usize {
    table.iter().position(|&(c, _)| c == code).unwrap_or(table.len())
}

/// The name in slot `i` of `table`.
fn name(table: &[(u16, &'static str)], i: usize) -> &'static str {
    table.get(i).map_or("other", |&(_, n)| n)
}

/// The name of an SA attribute as operators know it from `saquery` and the spec.
pub fn attribute_name(id: u16) -> &'static str {
    name(&ATTRIBUTES, slot(&ATTRIBUTES, id))
}

/// The name of a MAD status (the SA's class-specific codes included).
pub fn status_name(code: u16) -> &'static str {
    name(&STATUSES, slot(&STATUSES, code))
}

/// Answers sent, by (attribute, status) name: a counter per pair of slots, so that counting
/// an answer is an index and an add (no map, no string compare: it runs for every answer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaCounts {
    by: Box<[u64]>,
}

impl Default for SaCounts {
    fn default() -> Self {
        SaCounts { by: vec![0; (ATTRIBUTES.len() + 1) * STATUS_SLOTS].into_boxed_slice() }
    }
}

impl SaCounts {
    /// Counts one answer.
    pub fn count(&mut self, attr_id: u16, status_code: u16) {
        let at = slot(&ATTRIBUTES, attr_id) * STATUS_SLOTS + slot(&STATUSES, status_code & 0x7fff);
        if let Some(n) = self.by.get_mut(at) {
            *n += 1;
        }
    }

    /// ((attribute, status), answers) of every pair counted at least once, in name order.
    pub fn iter(&self) -> impl Iterator<Item = ((&'static str, &'static str), u64)> + use<> {
        let mut all: Vec<_> = self
            .by
            .iter()
            .enumerate()
            .filter(|&(_, &n)| n > 0)
            .map(|(i, &n)| ((name(&ATTRIBUTES, i / STATUS_SLOTS), name(&STATUSES, i % STATUS_SLOTS)), n))
            .collect();
        all.sort_unstable();
        all.into_iter()
    }

    /// Every answer counted.
    pub fn total(&self) -> u64 {
        self.by.iter().sum()
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
        let all: Vec<_> = c.iter().collect();
        assert_eq!(all, [(("NodeRecord", "no_records"), 1), (("PathRecord", "ok"), 2)]);
    }
}
