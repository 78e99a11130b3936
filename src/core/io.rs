//! What crosses the boundary between the sans-IO core and a transport: where a received MAD
//! came from ([`MadSource`]), where an outgoing one goes ([`Address`]), and the outgoing MAD
//! itself ([`Transmit`]).
//!
//! Owns the transport-neutral addressing vocabulary: LID, QP, Q_Key, P_Key index, SL and the
//! GRH, which every request handler needs to answer on the path the request came in on, and
//! the distinction between a request (the transport may ask for a response timeout) and a
//! response (sent once, never retried, never timed out). Holds values only; knows no device.

use ibsm_mad::{Gid, Lid};

/// The well-known Q_Key of QP1 (GSI): every SA request and response carries it.
pub const GSI_QKEY: u32 = 0x8001_0000;

/// A Global Route Header, as far as a MAD's addressing needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Grh {
    /// The other end's GID (the source of a received MAD, the destination of a sent one).
    pub gid: Gid,
    /// GID index of the local port to send from (0 for the port GID).
    pub gid_index: u8,
    /// Hop limit.
    pub hop_limit: u8,
    /// Traffic class.
    pub traffic_class: u8,
    /// Flow label (20 bits).
    pub flow_label: u32,
}

/// Where a received MAD came from, as the transport reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MadSource {
    /// Source LID ([`Lid::PERMISSIVE`] for directed-route SMPs).
    pub slid: Lid,
    /// Source QP.
    pub sqpn: u32,
    /// Index in the local port's P_Key table of the P_Key the packet carried (0 for SMPs and
    /// where the transport cannot tell).
    pub pkey_index: u16,
    /// Service level the packet arrived on.
    pub sl: u8,
    /// The packet's GRH, when it had one.
    pub grh: Option<Grh>,
}

impl MadSource {
    /// A source with only LID and QP known (no GRH, P_Key index 0, SL 0).
    pub const fn lid(slid: Lid, sqpn: u32) -> MadSource {
        MadSource { slid, sqpn, pkey_index: 0, sl: 0, grh: None }
    }

    /// The address that answers this source: same LID, QP, P_Key index, SL and GRH; Q_Key
    /// [`GSI_QKEY`] for QP1 and above, 0 for QP0.
    pub fn reply_address(&self) -> Address {
        Address {
            lid: self.slid,
            qpn: self.sqpn,
            qkey: if self.sqpn == 0 { 0 } else { GSI_QKEY },
            pkey_index: self.pkey_index,
            sl: self.sl,
            grh: self.grh,
        }
    }
}

/// Where an outgoing MAD goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Address {
    /// Destination LID ([`Lid::PERMISSIVE`] for directed-route SMPs).
    pub lid: Lid,
    /// Destination QP (0 for SMPs, 1 for GSI).
    pub qpn: u32,
    /// Q_Key (0 for QP0, [`GSI_QKEY`] for QP1).
    pub qkey: u32,
    /// Index of the P_Key to send with in the local port's table.
    pub pkey_index: u16,
    /// Service level.
    pub sl: u8,
    /// GRH to send with, if any.
    pub grh: Option<Grh>,
}

impl Address {
    /// The address of a directed-route SMP: permissive LID, QP0.
    pub const DIRECTED_ROUTE: Address =
        Address { lid: Lid::PERMISSIVE, qpn: 0, qkey: 0, pkey_index: 0, sl: 0, grh: None };
}

/// What an outgoing MAD is, for the transport's bookkeeping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransmitKind {
    /// A request the core waits for an answer to, at most `timeout_ns` (the core retries it
    /// itself; a transport that can report undelivered sends may use the timeout for that).
    Request {
        /// The core's own response timeout, ns.
        timeout_ns: u64,
    },
    /// A response (or a TrapRepress): sent once, no timeout, no retry.
    Response,
}

/// A MAD for the transport to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    /// The MAD: 256 bytes, or more for a multi-segment (RMPP) SA response.
    pub bytes: Vec<u8>,
    /// Where it goes.
    pub to: Address,
    /// Request or response.
    pub kind: TransmitKind,
}

impl Transmit {
    /// Destination LID.
    pub fn dest_lid(&self) -> Lid {
        self.to.lid
    }
    /// Destination QP.
    pub fn qpn(&self) -> u32 {
        self.to.qpn
    }
    /// Whether this is a response (sent once, never waited on).
    pub fn is_response(&self) -> bool {
        self.kind == TransmitKind::Response
    }
}
