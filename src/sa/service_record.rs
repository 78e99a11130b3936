//! ServiceRecord (Set, Get, GetTable, Delete): services registered with the SA, with leases.
//!
//! Owns the registry: records keyed by (ServiceID, ServiceGID, ServiceP_Key), each with the time
//! its lease ends (ServiceLease seconds after the Set; 0xFFFFFFFF never). Expired records are
//! dropped before every access. A Set must name ServiceID and ServiceGID and the GID must be a
//! port of the subnet; it replaces a record with the same key. The registry holds at most
//! [`MAX_SERVICES`] records, and at most [`MAX_SERVICES_PER_PORT`] registered by one requesting
//! port (so that one port cannot fill it; records restored from the state sync count for the
//! port of their ServiceGID); a Set past either gets NO_RESOURCES, as OpenSM answers when it
//! cannot take a record. Get, GetTable and Delete select
//! by ComponentMask; Delete answers with the record it removed (NO_RECORDS when none matched).

use ibsm_mad::header::Method;
use ibsm_mad::ids::status;
use ibsm_mad::records::ServiceRecord;
use ibsm_mad::{Attribute, Guid};

use super::answer::Table;
use super::snapshot::Snapshot;
use super::{Answer, Limits, Query};

/// Most services the registry holds.
pub const MAX_SERVICES: usize = 65_536;
/// Most services one requesting port may register (its LIDs, under any LMC, count as one).
pub const MAX_SERVICES_PER_PORT: usize = 1024;

#[derive(Debug, Clone)]
struct Entry {
    rec: ServiceRecord,
    /// When the lease ends, ns (`None`: never).
    expires: Option<u64>,
    /// The port GUID of the requester that registered it (`None`: not a port of the snapshot).
    owner: Option<Guid>,
}

/// The registered services.
#[derive(Debug, Clone, Default)]
pub struct Services {
    entries: Vec<Entry>,
}

impl Services {
    /// Services registered and not expired at the last access.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no service is registered.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The registered services and when their leases end (ns, `None`: never), for the state
    /// sync.
    pub fn export(&self) -> Vec<(ServiceRecord, Option<u64>)> {
        self.entries.iter().map(|e| (e.rec, e.expires)).collect()
    }

    /// Replaces the registry with `services` (from the state sync; at most [`MAX_SERVICES`]).
    pub fn restore(&mut self, services: Vec<(ServiceRecord, Option<u64>)>) {
        self.entries = services
            .into_iter()
            .take(MAX_SERVICES)
            .map(|(rec, expires)| Entry { rec, expires, owner: Some(rec.service_gid.guid) })
            .collect();
    }

    fn expire(&mut self, now: u64) {
        self.entries.retain(|e| e.expires.is_none_or(|t| t > now));
    }

    /// Answers a ServiceRecord request at `now`.
    pub(super) fn query(&mut self, snap: &Snapshot, q: &Query<'_>, limits: &Limits, now: u64) -> Answer {
        self.expire(now);
        let h = &q.header;
        match h.method {
            Method::Set => self.set(snap, q, now),
            Method::Delete => self.delete(q),
            _ => {
                let mut t = Table::new::<ServiceRecord>(q, limits);
                for e in &self.entries {
                    if !t.offer(q, &e.rec) {
                        break;
                    }
                }
                t.answer(q, limits)
            }
        }
    }

    fn set(&mut self, snap: &Snapshot, q: &Query<'_>, now: u64) -> Answer {
        let h = &q.header;
        let need = ServiceRecord::COMP_SERVICE_ID | ServiceRecord::COMP_SERVICE_GID;
        if h.comp_mask & need != need {
            return Answer::error(h, status::SA_INSUFFICIENT_COMPONENTS);
        }
        let Ok(rec) = ServiceRecord::parse(q.template) else { return Answer::error(h, status::SA_REQ_INVALID) };
        let gid = rec.service_gid;
        if gid.prefix != snap.subnet_prefix || snap.by_guid(gid.guid).is_none() {
            return Answer::error(h, status::SA_INVALID_GID);
        }
        let expires = (rec.service_lease != ServiceRecord::INFINITE_LEASE)
            .then(|| now.saturating_add(u64::from(rec.service_lease).saturating_mul(1_000_000_000)));
        let owner = snap.by_lid(q.requester).and_then(|at| snap.port(at)).map(|p| p.guid);
        let key = |r: &ServiceRecord| (r.service_id, r.service_gid, r.service_pkey);
        if let Some(e) = self.entries.iter_mut().find(|e| key(&e.rec) == key(&rec)) {
            *e = Entry { rec, expires, owner };
        } else if self.entries.len() >= MAX_SERVICES
            || self.entries.iter().filter(|e| e.owner == owner).count() >= MAX_SERVICES_PER_PORT
        {
            return Answer::error(h, status::SA_NO_RESOURCES);
        } else {
            self.entries.push(Entry { rec, expires, owner });
        }
        let offset = (ibsm_mad::records::stride::<ServiceRecord>() / 8) as u16;
        Answer::single(h.response(status::OK, offset), &rec.to_vec(), 1)
    }

    /// Deletes the one record whose ServiceID, ServiceGID and ServiceP_Key (its record ID) are
    /// the template's, as OpenSM does, whatever the component mask says: a Delete with a mask
    /// of 0 would otherwise match, and remove, every service of every port.
    fn delete(&mut self, q: &Query<'_>) -> Answer {
        let h = &q.header;
        let Ok(want) = ServiceRecord::parse(q.template) else { return Answer::error(h, status::SA_REQ_INVALID) };
        let key = |r: &ServiceRecord| (r.service_id, r.service_gid, r.service_pkey);
        let removed = self.entries.iter().position(|e| key(&e.rec) == key(&want)).map(|i| self.entries.remove(i).rec);
        match removed {
            Some(rec) => {
                let offset = (ibsm_mad::records::stride::<ServiceRecord>() / 8) as u16;
                Answer::single(h.response(status::OK, offset), &rec.to_vec(), 1)
            }
            None => Answer::error(h, status::SA_NO_RECORDS),
        }
    }
}
