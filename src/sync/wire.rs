//! The state sync message on the wire: one SA MAD, its fields, and its MAC.
//!
//! Owns the layout of the SA data area of a sync MAD and the MAC that authenticates it. The
//! fields sit in the first 172 bytes of the data area (MAD bytes 56..228), so that a message
//! arrives intact under ibsim's umad2sim, which garbles a MAD's last 24 bytes.
//!
//! | data bytes | field |
//! |---|---|
//! | 0..8 | sender's port GUID |
//! | 8..16 | version: the master's state version (status query, chunk); the standby's current version (status answer) |
//! | 16..24 | sender's clock when sent, ns (service leases are re-based with it) |
//! | 24..32 | digest of the whole section (chunk) |
//! | 32..36 | chunk index |
//! | 36..40 | chunk count |
//! | 40 | section id (0: status) |
//! | 41 | the highest section id the sender takes (0: not said, an ibsm built before this field) |
//! | 42..44 | payload bytes used |
//! | 44..164 | payload |
//! | 164..172 | MAC: SipHash-2-4 under the sync key of the direction (0 request, 1 response), the TID's low 32 bits, method, status, attribute modifier and data bytes 0..164 |

use ibsm_mad::header::Method;
use ibsm_mad::sa::{SA_HEADER_LEN, SaHeader};
use ibsm_mad::{Guid, MAD_LEN};

use crate::siphash::siphash24;

/// The vendor-specific SA attribute of the sync messages.
pub const ATTR_SYNC: u16 = 0xff10;
/// Payload bytes one message carries.
pub const PAYLOAD: usize = 120;
/// Data bytes the MAC covers (everything before it).
const SIGNED: usize = 164;
/// Data bytes a message uses.
const USED: usize = SIGNED + 8;
// umad2sim garbles MAD bytes 232.. of what it delivers.
const _: () = assert!(SA_HEADER_LEN + USED <= 232);

/// The key sync MACs are computed with, derived from the SM_Key.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct SyncKey([u8; 16]);

impl std::fmt::Debug for SyncKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SyncKey(..)")
    }
}

impl SyncKey {
    /// The key of the SMs sharing `sm_key`.
    pub fn from_sm_key(sm_key: u64) -> SyncKey {
        let mut k = [0u8; 16];
        k[..8].copy_from_slice(&sm_key.to_be_bytes());
        k[8..].copy_from_slice(b"ibsmsync");
        SyncKey(k)
    }

    /// A digest of `bytes` under this key (names a section's content).
    pub fn digest(&self, bytes: &[u8]) -> u64 {
        siphash24(&self.0, bytes)
    }
}

/// One sync message: the fields of the data area.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The sender's port GUID.
    pub from: Guid,
    /// A state version (see the table above).
    pub version: u64,
    /// The sender's clock, ns.
    pub sent_at: u64,
    /// The section's digest (chunks).
    pub digest: u64,
    /// Chunk index.
    pub chunk: u32,
    /// Chunk count of the section.
    pub chunks: u32,
    /// Section id; 0 for a status query or answer.
    pub section: u8,
    /// The highest section id the sender takes, every lower one too ([`super::Section::MAX_ID`]
    /// of its build); 0 when it does not say (an ibsm built before this field, which sent 0 in
    /// this reserved byte): a master sends a standby only the sections it takes.
    pub takes: u8,
    /// Payload (at most [`PAYLOAD`] bytes).
    pub payload: Vec<u8>,
}

/// Why a received sync MAD is not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireError {
    /// Too short, not an SA MAD, or a field out of range.
    Malformed,
    /// The MAC does not match: the sender does not hold our SM_Key (or the MAD was damaged).
    BadMac,
}

fn mac(key: &SyncKey, h: &SaHeader, data: &[u8]) -> u64 {
    let mut m = Vec::with_capacity(16 + SIGNED);
    m.push(u8::from(h.method.is_response()));
    // The low 32 bits only: umad and ibsim put their agent and client ids in the high ones.
    m.extend_from_slice(&(h.tid as u32).to_be_bytes());
    m.push(h.method.raw());
    m.extend_from_slice(&h.status.to_be_bytes());
    m.extend_from_slice(&h.attr_mod.to_be_bytes());
    m.extend_from_slice(data.get(..SIGNED).unwrap_or_default());
    siphash24(&key.0, &m)
}

impl Message {
    /// The MAD carrying this message under `header` (its attribute is set to [`ATTR_SYNC`]),
    /// signed with `key`. A payload longer than [`PAYLOAD`] is cut.
    pub fn to_mad(&self, header: &SaHeader, key: &SyncKey) -> [u8; MAD_LEN] {
        let h = SaHeader { attr_id: ATTR_SYNC, ..*header };
        let mut buf = [0u8; MAD_LEN];
        h.emit(&mut buf);
        let d = &mut buf[SA_HEADER_LEN..];
        d[0..8].copy_from_slice(&self.from.0.to_be_bytes());
        d[8..16].copy_from_slice(&self.version.to_be_bytes());
        d[16..24].copy_from_slice(&self.sent_at.to_be_bytes());
        d[24..32].copy_from_slice(&self.digest.to_be_bytes());
        d[32..36].copy_from_slice(&self.chunk.to_be_bytes());
        d[36..40].copy_from_slice(&self.chunks.to_be_bytes());
        d[40] = self.section;
        d[41] = self.takes;
        let n = self.payload.len().min(PAYLOAD);
        d[42..44].copy_from_slice(&(n as u16).to_be_bytes());
        d[44..44 + n].copy_from_slice(&self.payload[..n]);
        let m = mac(key, &h, d);
        d[SIGNED..USED].copy_from_slice(&m.to_be_bytes());
        buf
    }

    /// Reads and authenticates a sync MAD: its SA header and message.
    ///
    /// # Errors
    /// [`WireError::Malformed`] for a MAD that is not a well-formed sync message,
    /// [`WireError::BadMac`] when its MAC is not ours.
    pub fn from_mad(bytes: &[u8], key: &SyncKey) -> Result<(SaHeader, Message), WireError> {
        let h = SaHeader::from_bytes(bytes).map_err(|_| WireError::Malformed)?;
        let d = bytes.get(SA_HEADER_LEN..SA_HEADER_LEN + USED).ok_or(WireError::Malformed)?;
        if h.attr_id != ATTR_SYNC || bytes.len() < MAD_LEN {
            return Err(WireError::Malformed);
        }
        let u64_at = |o: usize| d.get(o..o + 8).and_then(|b| b.try_into().ok()).map_or(0, u64::from_be_bytes);
        let u32_at = |o: usize| d.get(o..o + 4).and_then(|b| b.try_into().ok()).map_or(0, u32::from_be_bytes);
        if u64_at(SIGNED) != mac(key, &h, d) {
            return Err(WireError::BadMac);
        }
        let n = usize::from(u16::from_be_bytes([d[42], d[43]]));
        if n > PAYLOAD {
            return Err(WireError::Malformed);
        }
        let msg = Message {
            from: Guid(u64_at(0)),
            version: u64_at(8),
            sent_at: u64_at(16),
            digest: u64_at(24),
            chunk: u32_at(32),
            chunks: u32_at(36),
            section: d[40],
            takes: d[41],
            payload: d[44..44 + n].to_vec(),
        };
        Ok((h, msg))
    }
}

/// One line of a status table: a section, the version it was made at (not carried on the
/// wire: 0 when decoded), its digest.
pub type TableEntry = (u8, u64, u64);

/// Bytes of one status table line on the wire: the section id and the digest (whether a
/// standby holds a section is decided by digest alone, so the table fits 13 sections).
const TABLE_ENTRY: usize = 9;

/// A status table as a message payload ([`TABLE_ENTRY`] bytes per section).
pub fn encode_table(entries: &[TableEntry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(entries.len() * TABLE_ENTRY);
    for (id, _, digest) in entries.iter().take(PAYLOAD / TABLE_ENTRY) {
        out.push(*id);
        out.extend_from_slice(&digest.to_be_bytes());
    }
    out
}

/// The status table in a payload (a trailing partial entry is ignored).
pub fn decode_table(payload: &[u8]) -> Vec<TableEntry> {
    payload
        .chunks_exact(TABLE_ENTRY)
        .filter_map(|e| {
            let digest = u64::from_be_bytes(e.get(1..TABLE_ENTRY)?.try_into().ok()?);
            Some((e[0], 0, digest))
        })
        .collect()
}

/// The header of a sync request with `method` (Get: status query, Set: chunk) and `tid`.
pub fn request_header(method: Method, tid: u64) -> SaHeader {
    SaHeader::request(method, ATTR_SYNC, 0, tid)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg() -> Message {
        Message {
            from: Guid(0x0002_c903_0000_0001),
            version: 7,
            sent_at: 123_456,
            digest: 0xdead_beef,
            chunk: 3,
            chunks: 9,
            section: 2,
            takes: 10,
            payload: (0..PAYLOAD as u8).collect(),
        }
    }

    #[test]
    fn a_message_round_trips_and_ends_before_the_bytes_umad2sim_garbles() {
        let key = SyncKey::from_sm_key(1);
        let mut mad = msg().to_mad(&request_header(Method::Set, 42), &key);
        assert!(mad[SA_HEADER_LEN + USED..].iter().all(|&b| b == 0), "nothing past the MAC");
        // What the sender takes sits in byte 41, reserved (0) in builds before it.
        assert_eq!(mad[SA_HEADER_LEN + 41], 10);
        // What umad2sim does to the tail must not matter.
        mad[232..].fill(0x5a);
        let (h, m) = Message::from_mad(&mad, &key).unwrap();
        assert_eq!(m, msg());
        assert_eq!((h.method, h.tid, h.attr_id), (Method::Set, 42, ATTR_SYNC));
    }

    #[test]
    fn another_key_a_changed_byte_or_a_replayed_response_is_refused() {
        let key = SyncKey::from_sm_key(1);
        let mad = msg().to_mad(&request_header(Method::Set, 42), &key);
        assert_eq!(Message::from_mad(&mad, &SyncKey::from_sm_key(2)), Err(WireError::BadMac));
        for at in [3, 15, 20, SA_HEADER_LEN, SA_HEADER_LEN + 44, SA_HEADER_LEN + 163] {
            let mut bad = mad;
            bad[at] ^= 1;
            assert!(Message::from_mad(&bad, &key).is_err(), "byte {at}");
        }
        // The transport's agent and client ids in the TID's high bits do not matter.
        let mut rewritten = mad;
        rewritten[8..12].copy_from_slice(&[0x12, 0x34, 0x56, 0x78]);
        assert!(Message::from_mad(&rewritten, &key).is_ok());
        let mut as_response = mad;
        as_response[3] = 0x81;
        assert_eq!(Message::from_mad(&as_response, &key), Err(WireError::BadMac), "a request is not its answer");
        assert_eq!(Message::from_mad(&mad[..100], &key), Err(WireError::Malformed));
    }

    #[test]
    fn a_table_of_every_section_fits_one_message() {
        // Every section there is (the table once held 17-byte lines: 7 fit, and an eighth
        // section was never found current), and room for more (13 fit: 11 sections today; a
        // 14th needs the table over two messages).
        let t: Vec<TableEntry> =
            crate::sync::Section::ALL.iter().map(|s| (s.id(), 0, u64::MAX - u64::from(s.id()))).collect();
        let p = encode_table(&t);
        assert!(p.len() <= PAYLOAD);
        assert_eq!(decode_table(&p), t);
        assert!(PAYLOAD / TABLE_ENTRY >= t.len() + 2);
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300)) {
            let _ = Message::from_mad(&bytes, &SyncKey::from_sm_key(1));
        }
    }
}
