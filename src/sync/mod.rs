//! State sync: what a master replicates to its standbys so that a takeover changes nothing an
//! application or a port can see.
//!
//! Owns the protocol between ibsm SMs: the replicated state in sections ([`replica`]), the
//! message on the wire and its authentication ([`wire`]), the master's side that pushes the
//! sections to every standby ([`publisher`]) and the standby's side that assembles and checks
//! them ([`receiver`]). Sans-IO like the core: the core feeds in received messages and the
//! clock, and puts what these types produce on the wire.
//!
//! The protocol, in short (docs/operator-guide.md has it for operators):
//! - Messages are Subnet Administration MADs (class 0x03) with the vendor-specific attribute
//!   [`wire::ATTR_SYNC`], sent LID-routed to QP1 of the standby's port. Get carries a status
//!   query (the master's table of sections: id, version, digest) and its response the
//!   standby's table; Set carries one chunk of one section and its response acknowledges it.
//! - Every message and every response ends in a SipHash-2-4 MAC under a key derived from the
//!   SM_Key, over the TID, method, status, attribute modifier and the message: an SM without
//!   the SM_Key can neither feed a standby nor fake its answers, and the key itself never goes
//!   on the wire. A standby takes chunks only from the master it watches.
//! - The master numbers its state: every change of a section's content raises the version.
//!   After each sweep it asks every standby (that shares its SM_Key) what it holds, sends the
//!   sections whose digest differs, chunk by chunk, and asks again; a standby whose table
//!   equals the master's is current at that version. An SM that answers the query with an
//!   error status (OpenSM does) or not at all is not an ibsm SM and gets nothing more. Every
//!   message says the highest section id its sender takes: a standby of an older build is sent
//!   only the sections it takes, and is too old, never current (one from before that field is
//!   known by the section it refuses).
//! - A standby that takes over starts from what it holds: the master's guid2lid, M_Keys and
//!   cable map, P_Key tables as the ports hold them, multicast groups (with their MLIDs and members), service
//!   registrations (with what is left of their leases), event subscriptions, the ports an
//!   operator disabled, and per switch a digest of the forwarding table it holds (a switch
//!   routed to a table of that digest, its LinearFDBTop unchanged, is not read back), and the
//!   ports the babbling-port policy disabled with their back-off deadlines (re-based onto its
//!   clock: it enables each when its back-off ends), and per node a digest of the SL2VL tables
//!   and one of the VLArbitration blocks written (QoS: a node whose tables of a kind are those
//!   the new master wants, and that shows no reset, gets none of them again).

pub mod publisher;
pub mod receiver;
pub mod replica;
pub mod wire;

pub use publisher::{PeerState, Publisher};
pub use receiver::Receiver;
pub use replica::{BabblingPort, Replica, Section};
