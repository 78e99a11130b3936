//! The Linux `ib_umad` transport: one port's `/dev/infiniband/umadN` device, the management
//! agents registered on it, and `/dev/infiniband/issmN`, which makes the port an SM port.
//!
//! Owns every `unsafe` block of the workspace (the kernel ABI through `libc`) and the sysfs walk
//! that finds a CA, a port and its umad device. It knows the `ib_user_mad` header and the ioctl
//! structures byte by byte, but nothing about what the MADs mean: that is `ibsm-mad`'s and the
//! core's business. The real-time loop that feeds the core lives in the daemon (`daemon::umad_loop`).
//!
//! Works on real hardware and under ibsim's `umad2sim` preload library alike, which imposes:
//! - devices and sysfs files are opened with `libc::open` and accessed with `libc::read`,
//!   `write`, `ioctl`, `poll` and `close` by those names (umad2sim intercepts exactly these; the
//!   fds it returns are fake and must never reach `std::fs::File`, epoll or `fcntl`);
//! - the header length is 56 bytes unless the 64-byte P_Key-index header was enabled: when
//!   libibumad is loaded (it is, as a dependency of umad2sim) its `umad_size()` says which one
//!   is in use; otherwise `ENABLE_PKEY` is tried right after `open` (64 on success);
//! - agents for classes 0x01, 0x81 and 0x03 are registered before anything else, since a MAD for a
//!   class without an agent crashes umad2sim; `REGISTER_AGENT2` falls back to `REGISTER_AGENT`;
//!   the performance manager's agent (class 0x04, no unsolicited methods: the node's own PMA
//!   answers requests) follows, and a port where it cannot be registered works without it (its
//!   sends fail, so no PerfMgt answer can reach umad2sim without an agent);
//! - `read` returning -11 means "queue empty" (umad2sim) just like `EAGAIN` (kernel);
//! - the issm fd is closed explicitly (umad2sim does not clear IsSM at exit otherwise).
//!
//! It also holds the two process-level calls that need `libc` ([`exit_now`], [`default_sigpipe`]),
//! so that no other module needs `unsafe`.
//!
//! Guarantees: errors name the device or sysfs file and the errno; no input from the device or
//! sysfs can make this module panic. Every `unsafe` block carries a `// SAFETY:` note.
#![allow(unsafe_code)]

use std::ffi::{CString, c_void};
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};

use ibsm_mad::ids::{class, method};
use ibsm_mad::{Gid, Lid, MAD_LEN};

pub use crate::core::io::{Address, GSI_QKEY, Grh};

/// The old `ib_user_mad` header length (no P_Key index): what umad2sim uses unless libibumad's
/// own `umad_open_port` enabled the new one.
pub const HEADER_LEN_OLD: usize = 56;
/// The `ib_user_mad` header length after `IB_USER_MAD_ENABLE_PKEY`.
pub const HEADER_LEN_PKEY: usize = 64;
/// `ib_user_mad.status` of a send that got no answer or could not be delivered (ETIMEDOUT).
pub const STATUS_TIMEOUT: u32 = 110;
/// Where umad devices are listed.
pub const SYSFS_UMAD: &str = "/sys/class/infiniband_mad";
/// Where CAs and their ports are listed.
pub const SYSFS_CA: &str = "/sys/class/infiniband";
/// Where the device files are.
pub const DEV_DIR: &str = "/dev/infiniband";

/// umad2sim's `read` returns this (−EWOULDBLOCK as a value, errno untouched) on an empty queue.
const UMAD2SIM_EMPTY: isize = -11;

/// ioctl request numbers (`_IOWR`/`_IOW`/`_IO` with type 0x1b, from `<rdma/ib_user_mad.h>`).
mod ioctl_nr {
    /// `_IOWR(0x1b, 1, struct ib_user_mad_reg_req)` (28 bytes).
    pub const REGISTER_AGENT: u32 = 0xC01C_1B01;
    /// `_IO(0x1b, 3)`.
    pub const ENABLE_PKEY: u32 = 0x0000_1B03;
    /// `_IOWR(0x1b, 4, struct ib_user_mad_reg_req2)` (40 bytes).
    pub const REGISTER_AGENT2: u32 = 0xC028_1B04;
}

/// Byte offsets in the `ib_user_mad` header (native endian unless noted).
mod hdr {
    pub const AGENT_ID: usize = 0;
    pub const STATUS: usize = 4;
    pub const TIMEOUT_MS: usize = 8;
    pub const RETRIES: usize = 12;
    pub const LENGTH: usize = 16;
    /// Big endian.
    pub const QPN: usize = 20;
    /// Big endian.
    pub const QKEY: usize = 24;
    /// Big endian.
    pub const LID: usize = 28;
    pub const SL: usize = 30;
    pub const GRH_PRESENT: usize = 32;
    pub const GID_INDEX: usize = 33;
    pub const HOP_LIMIT: usize = 34;
    pub const TRAFFIC_CLASS: usize = 35;
    /// 16 bytes, network order.
    pub const GID: usize = 36;
    /// Big endian.
    pub const FLOW_LABEL: usize = 52;
    /// Only in the 64-byte header.
    pub const PKEY_INDEX: usize = 56;
}

/// An error of the umad transport. Every variant names the file involved.
#[derive(Debug, thiserror::Error)]
pub enum UmadError {
    /// A system call on a device or sysfs file failed.
    #[error("{path}: {call} failed: {err}")]
    Sys {
        /// The device or sysfs file.
        path: PathBuf,
        /// The call (`open`, `read`, `ioctl REGISTER_AGENT`, ...).
        call: &'static str,
        /// The errno, as an `io::Error`.
        err: io::Error,
    },
    /// A sysfs file did not hold what the kernel ABI promises.
    #[error("{path}: expected {expected}, found {found:?}")]
    BadSysfs {
        /// The sysfs file.
        path: PathBuf,
        /// What was expected.
        expected: &'static str,
        /// What was found.
        found: String,
    },
    /// No umad port matches the request.
    #[error("{0}")]
    NoPort(String),
}

impl UmadError {
    fn sys(path: &Path, call: &'static str, errno: i32) -> UmadError {
        UmadError::Sys { path: path.to_owned(), call, err: io::Error::from_raw_os_error(errno) }
    }
}

/// The calling thread's errno.
fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn c_path(path: &Path) -> Result<CString, UmadError> {
    CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| UmadError::BadSysfs {
        path: path.to_owned(),
        expected: "a path without NUL bytes",
        found: path.display().to_string(),
    })
}

/// `libc::open` (the name umad2sim intercepts).
fn sys_open(path: &Path, flags: i32) -> Result<i32, UmadError> {
    let c = c_path(path)?;
    // SAFETY: `c` is a valid NUL-terminated string that lives across the call; `open` does not
    // keep the pointer.
    let fd = unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 { Err(UmadError::sys(path, "open", errno())) } else { Ok(fd) }
}

/// `libc::close`; errors are reported, the fd is gone either way.
fn sys_close(fd: i32, path: &Path) -> Result<(), UmadError> {
    // SAFETY: `fd` was returned by `open` and is closed exactly once (callers swap it out of an
    // atomic before closing).
    let r = unsafe { libc::close(fd) };
    if r < 0 { Err(UmadError::sys(path, "close", errno())) } else { Ok(()) }
}

/// Reads a small text file (sysfs) with `libc::open`/`read`/`close`, trimmed.
pub fn read_text(path: &Path) -> Result<String, UmadError> {
    let fd = sys_open(path, libc::O_RDONLY)?;
    let mut out = Vec::new();
    let mut buf = [0u8; 512];
    let result = loop {
        // SAFETY: `buf` is a live, writable buffer of `buf.len()` bytes for the whole call.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast::<c_void>(), buf.len()) };
        match usize::try_from(n) {
            Ok(0) => break Ok(()),
            Ok(n) => {
                out.extend_from_slice(&buf[..n.min(buf.len())]);
                if out.len() > 64 * 1024 {
                    break Ok(());
                }
            }
            Err(_) if errno() == libc::EINTR => {}
            Err(_) => break Err(UmadError::sys(path, "read", errno())),
        }
    };
    let closed = sys_close(fd, path);
    result?;
    closed?;
    Ok(String::from_utf8_lossy(&out).trim().to_owned())
}

/// One umad port as sysfs describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortLocation {
    /// N of `umadN`/`issmN`.
    pub index: u32,
    /// CA name (`mlx5_0`, `ibsim0`).
    pub ca: String,
    /// Port number on the CA (0 for a switch's management port).
    pub port: u8,
    /// `phys_state` from sysfs (`5: LinkUp`), if readable.
    pub phys_state: Option<String>,
    /// `link_layer` from sysfs (`InfiniBand`, `Ethernet`), if present.
    pub link_layer: Option<String>,
}

impl PortLocation {
    /// `/dev/infiniband/umadN`.
    pub fn umad_path(&self) -> PathBuf {
        Path::new(DEV_DIR).join(format!("umad{}", self.index))
    }
    /// `/dev/infiniband/issmN`.
    pub fn issm_path(&self) -> PathBuf {
        Path::new(DEV_DIR).join(format!("issm{}", self.index))
    }
    fn is_link_up(&self) -> bool {
        self.phys_state.as_deref().is_some_and(|s| s.starts_with('5') || s.contains("LinkUp"))
    }
    fn is_infiniband(&self) -> bool {
        self.link_layer.as_deref().is_none_or(|l| l.eq_ignore_ascii_case("infiniband"))
    }
}

impl fmt::Display for PortLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} port {} (umad{}", self.ca, self.port, self.index)?;
        if let Some(s) = &self.phys_state {
            write!(f, ", {s}")?;
        }
        write!(f, ")")
    }
}

/// Lists every umad port under [`SYSFS_UMAD`], sorted by index.
pub fn list_ports() -> Result<Vec<PortLocation>, UmadError> {
    let root = Path::new(SYSFS_UMAD);
    // `read_dir` goes through `opendir`, which umad2sim redirects to its emulated sysfs.
    let entries = std::fs::read_dir(root).map_err(|err| UmadError::Sys {
        path: root.to_owned(),
        call: "opendir",
        err: io::Error::new(
            err.kind(),
            format!("{err} (is the ib_umad module loaded? under ibsim, run through ibsim-run)"),
        ),
    })?;
    let mut ports = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|err| UmadError::Sys { path: root.to_owned(), call: "readdir", err })?;
        let name = entry.file_name();
        let Some(index) = name.to_str().and_then(|n| n.strip_prefix("umad")).and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let dir = root.join(&name);
        let ca = read_text(&dir.join("ibdev"))?;
        let port_path = dir.join("port");
        let port_text = read_text(&port_path)?;
        let port = port_text.parse::<u8>().map_err(|_| UmadError::BadSysfs {
            path: port_path,
            expected: "a port number 0..=255",
            found: port_text.clone(),
        })?;
        let port_dir = Path::new(SYSFS_CA).join(&ca).join("ports").join(port.to_string());
        ports.push(PortLocation {
            index,
            phys_state: read_text(&port_dir.join("phys_state")).ok(),
            link_layer: read_text(&port_dir.join("link_layer")).ok(),
            ca,
            port,
        });
    }
    ports.sort_by_key(|p| p.index);
    Ok(ports)
}

/// Chooses the SM's port among `ports`: the one named by `ca`/`port` when given, otherwise the
/// first InfiniBand port whose link is up, otherwise the first InfiniBand port.
pub fn select_port(ports: &[PortLocation], ca: Option<&str>, port: Option<u8>) -> Result<PortLocation, UmadError> {
    let matching: Vec<&PortLocation> =
        ports.iter().filter(|p| ca.is_none_or(|c| p.ca == c) && port.is_none_or(|n| p.port == n)).collect();
    let chosen = if ca.is_some() || port.is_some() {
        matching.first().copied()
    } else {
        let ib: Vec<&PortLocation> = matching.into_iter().filter(|p| p.is_infiniband()).collect();
        ib.iter().copied().find(|p| p.is_link_up()).or_else(|| ib.first().copied())
    };
    chosen.cloned().ok_or_else(|| {
        let wanted = match (ca, port) {
            (Some(c), Some(n)) => format!("CA {c} port {n}"),
            (Some(c), None) => format!("CA {c}"),
            (None, Some(n)) => format!("port {n}"),
            (None, None) => "an InfiniBand port".to_owned(),
        };
        let known = if ports.is_empty() {
            format!("no umad devices in {SYSFS_UMAD}")
        } else {
            ports.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
        };
        UmadError::NoPort(format!("no umad device for {wanted}; found: {known}"))
    })
}

/// Finds the SM's port in sysfs; see [`select_port`].
pub fn find_port(ca: Option<&str>, port: Option<u8>) -> Result<PortLocation, UmadError> {
    select_port(&list_ports()?, ca, port)
}

/// The header length libibumad reports through `umad_size()`, if libibumad is loaded in this
/// process (it is under umad2sim, which depends on it).
fn libibumad_header_len() -> Option<usize> {
    // SAFETY: `dlsym` with RTLD_DEFAULT and a NUL-terminated name only looks a symbol up.
    let sym = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"umad_size".as_ptr()) };
    if sym.is_null() {
        return None;
    }
    // SAFETY: the symbol `umad_size` of libibumad has the C signature `size_t umad_size(void)`
    // in every released version; the pointer is non-null and stays valid (libraries found
    // through RTLD_DEFAULT are never unloaded while the process runs).
    let f = unsafe { std::mem::transmute::<*mut c_void, extern "C" fn() -> libc::size_t>(sym) };
    Some(f())
}

/// Whether this process runs under ibsim's umad2sim shim (`ibsim-run`, `LD_PRELOAD`), which
/// carries single MADs without RMPP.
pub fn under_umad2sim() -> bool {
    std::env::var_os("LD_PRELOAD").is_some_and(|v| v.to_string_lossy().contains("umad2sim"))
}

/// Ends the process with `code` at once, without running exit handlers (see the caller in
/// `ibsm run`: umad2sim's exit handler can deadlock). Flush what must be flushed first.
pub fn exit_now(code: u8) -> ! {
    // SAFETY: `_exit` takes no pointers and never returns; skipping exit handlers is the point.
    unsafe { libc::_exit(i32::from(code)) }
}

/// Gives SIGPIPE back its default action (end the process quietly), as a one-shot command
/// that prints to a pipe needs: Rust ignores SIGPIPE, so a write to a pipe whose reader has
/// gone (`ibsm routes dump ... | head`) fails with EPIPE and `println!` panics. Never for the
/// daemon (`ibsm run`), whose control socket and metrics writes must get EPIPE, not kill the SM.
pub fn default_sigpipe() {
    // SAFETY: `signal` with a valid signal number and `SIG_DFL` takes no pointers; it only
    // changes this process's disposition of SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Which management classes the SM registers an agent for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AgentClass {
    /// Subnet management, LID-routed (0x01), QP0.
    SubnLid,
    /// Subnet management, directed route (0x81), QP0.
    SubnDr,
    /// Subnet administration (0x03), QP1.
    SubnAdm,
    /// Performance management (0x04), QP1: the performance manager's reads and their answers
    /// only (registered without unsolicited methods).
    PerfMgt,
}

impl AgentClass {
    /// All three, in registration order.
    pub const ALL: [AgentClass; 3] = [AgentClass::SubnLid, AgentClass::SubnDr, AgentClass::SubnAdm];

    /// The management class.
    pub const fn mgmt_class(self) -> u8 {
        match self {
            AgentClass::SubnLid => class::SUBN_LID,
            AgentClass::SubnDr => class::SUBN_DR,
            AgentClass::SubnAdm => class::SUBN_ADM,
            AgentClass::PerfMgt => class::PERF,
        }
    }
    const fn qpn(self) -> u8 {
        match self {
            AgentClass::SubnLid | AgentClass::SubnDr => 0,
            AgentClass::SubnAdm | AgentClass::PerfMgt => 1,
        }
    }
    const fn class_version(self) -> u8 {
        match self {
            AgentClass::SubnLid | AgentClass::SubnDr | AgentClass::PerfMgt => 1,
            AgentClass::SubnAdm => 2,
        }
    }
    const fn rmpp_version(self) -> u8 {
        match self {
            AgentClass::SubnLid | AgentClass::SubnDr | AgentClass::PerfMgt => 0,
            AgentClass::SubnAdm => 1,
        }
    }
    /// Unsolicited methods this agent receives (responses are routed by TID whatever the mask).
    fn methods(self) -> &'static [u8] {
        match self {
            AgentClass::SubnLid | AgentClass::SubnDr => &[method::GET, method::SET, method::TRAP],
            AgentClass::SubnAdm => &[
                method::GET,
                method::SET,
                method::GET_TABLE,
                method::GET_TRACE_TABLE,
                method::GET_MULTI,
                method::DELETE,
            ],
            AgentClass::PerfMgt => &[],
        }
    }
    /// The agent for a received MAD's class.
    pub fn of_class(mgmt_class: u8) -> Option<AgentClass> {
        AgentClass::ALL.into_iter().chain([AgentClass::PerfMgt]).find(|a| a.mgmt_class() == mgmt_class)
    }
}

/// The 128-bit method mask as four native-endian 32-bit words (the v1 layout).
fn method_mask_words(methods: &[u8]) -> [u32; 4] {
    let mut w = [0u32; 4];
    for &m in methods {
        w[usize::from(m / 32)] |= 1 << (m % 32);
    }
    w
}

/// `struct ib_user_mad_reg_req` (28 bytes), with the alignment the kernel struct has.
#[repr(C, align(4))]
struct RegReq([u8; 28]);

/// `struct ib_user_mad_reg_req2` (40 bytes), with the alignment the kernel struct has.
#[repr(C, align(8))]
struct RegReq2([u8; 40]);

fn reg_req(agent: AgentClass) -> RegReq {
    let mut b = [0u8; 28];
    for (i, w) in method_mask_words(agent.methods()).iter().enumerate() {
        b[4 + 4 * i..8 + 4 * i].copy_from_slice(&w.to_ne_bytes());
    }
    b[20] = agent.qpn();
    b[21] = agent.mgmt_class();
    b[22] = agent.class_version();
    b[26] = agent.rmpp_version();
    RegReq(b)
}

fn reg_req2(agent: AgentClass) -> RegReq2 {
    let mut b = [0u8; 40];
    b[4..8].copy_from_slice(&u32::from(agent.qpn()).to_ne_bytes());
    b[8] = agent.mgmt_class();
    b[9] = agent.class_version();
    let w = method_mask_words(agent.methods());
    let lo = u64::from(w[0]) | (u64::from(w[1]) << 32);
    let hi = u64::from(w[2]) | (u64::from(w[3]) << 32);
    b[16..24].copy_from_slice(&lo.to_ne_bytes());
    b[24..32].copy_from_slice(&hi.to_ne_bytes());
    b[36] = agent.rmpp_version();
    RegReq2(b)
}

fn ne_u32(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4).and_then(|s| s.try_into().ok()).map_or(0, u32::from_ne_bytes)
}
fn be_u32(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4).and_then(|s| s.try_into().ok()).map_or(0, u32::from_be_bytes)
}
fn be_u16(b: &[u8], at: usize) -> u16 {
    b.get(at..at + 2).and_then(|s| s.try_into().ok()).map_or(0, u16::from_be_bytes)
}

/// Encodes an `ib_user_mad` header of `len` bytes (56 or 64) for a send by `agent_id`.
/// `timeout_ms` > 0 asks the kernel to wait that long for a response (and to report a timeout
/// with status 110); 0 is for responses. The P_Key index goes only into the 64-byte header.
pub fn encode_header(len: usize, agent_id: u32, addr: &Address, mad_len: usize, timeout_ms: u32) -> Vec<u8> {
    let mut h = vec![0u8; len];
    encode_header_into(&mut h, agent_id, addr, mad_len, timeout_ms);
    h
}

/// [`encode_header`] into `h` (its length is the header's: 56 or 64 bytes), which must be
/// zeroed: the bytes no field covers are left as they are.
fn encode_header_into(h: &mut [u8], agent_id: u32, addr: &Address, mad_len: usize, timeout_ms: u32) {
    let len = h.len();
    h[hdr::AGENT_ID..hdr::AGENT_ID + 4].copy_from_slice(&agent_id.to_ne_bytes());
    h[hdr::TIMEOUT_MS..hdr::TIMEOUT_MS + 4].copy_from_slice(&timeout_ms.to_ne_bytes());
    h[hdr::RETRIES..hdr::RETRIES + 4].copy_from_slice(&0u32.to_ne_bytes());
    let total = u32::try_from(len + mad_len).unwrap_or(u32::MAX);
    h[hdr::LENGTH..hdr::LENGTH + 4].copy_from_slice(&total.to_ne_bytes());
    h[hdr::QPN..hdr::QPN + 4].copy_from_slice(&addr.qpn.to_be_bytes());
    h[hdr::QKEY..hdr::QKEY + 4].copy_from_slice(&addr.qkey.to_be_bytes());
    h[hdr::LID..hdr::LID + 2].copy_from_slice(&addr.lid.0.to_be_bytes());
    h[hdr::SL] = addr.sl & 0x0f;
    if let Some(g) = addr.grh {
        h[hdr::GRH_PRESENT] = 1;
        h[hdr::GID_INDEX] = g.gid_index;
        h[hdr::HOP_LIMIT] = g.hop_limit;
        h[hdr::TRAFFIC_CLASS] = g.traffic_class;
        g.gid.write(&mut h[hdr::GID..hdr::GID + 16]);
        h[hdr::FLOW_LABEL..hdr::FLOW_LABEL + 4].copy_from_slice(&(g.flow_label & 0xf_ffff).to_be_bytes());
    }
    if len >= hdr::PKEY_INDEX + 2 {
        h[hdr::PKEY_INDEX..hdr::PKEY_INDEX + 2].copy_from_slice(&addr.pkey_index.to_ne_bytes());
    }
}

/// A MAD read from the device.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Received {
    /// The agent it was delivered to.
    pub agent_id: u32,
    /// 0, or [`STATUS_TIMEOUT`] when it is one of our own sends coming back undelivered.
    pub status: u32,
    /// Source LID ([`Lid::PERMISSIVE`] for directed-route SMPs).
    pub slid: Lid,
    /// Source QP.
    pub sqpn: u32,
    /// Service level.
    pub sl: u8,
    /// The GRH, when one came with the packet (only trusted from the 64-byte header: umad2sim
    /// leaves these fields uninitialised in the 56-byte one).
    pub grh: Option<Grh>,
    /// P_Key index (64-byte header only; 0 otherwise).
    pub pkey_index: u16,
    /// The MAD: 256 bytes (zero-padded if shorter), or a whole reassembled RMPP message.
    pub mad: Vec<u8>,
}

/// Decodes a buffer read from the device: an `hdr_len`-byte header and the MAD after it.
pub fn decode_received(buf: &[u8], hdr_len: usize) -> Received {
    decode_received_into(buf, hdr_len, Vec::new())
}

/// [`decode_received`], the MAD copied into `mad` (cleared first): a buffer kept from an
/// earlier read takes the next one without an allocation.
fn decode_received_into(buf: &[u8], hdr_len: usize, mut mad: Vec<u8>) -> Received {
    let body = buf.get(hdr_len..).unwrap_or(&[]);
    mad.clear();
    mad.extend_from_slice(body);
    if mad.len() < MAD_LEN {
        mad.resize(MAD_LEN, 0);
    }
    let full = hdr_len >= hdr::PKEY_INDEX + 2 && buf.len() >= hdr_len;
    let grh = (full && buf.get(hdr::GRH_PRESENT).is_some_and(|&b| b != 0)).then(|| Grh {
        gid: Gid::from_bytes(buf.get(hdr::GID..hdr::GID + 16).unwrap_or(&[])),
        gid_index: buf.get(hdr::GID_INDEX).copied().unwrap_or(0),
        hop_limit: buf.get(hdr::HOP_LIMIT).copied().unwrap_or(0),
        traffic_class: buf.get(hdr::TRAFFIC_CLASS).copied().unwrap_or(0),
        flow_label: be_u32(buf, hdr::FLOW_LABEL) & 0xf_ffff,
    });
    let pkey_index = if full {
        buf.get(hdr::PKEY_INDEX..hdr::PKEY_INDEX + 2).map_or(0, |b| u16::from_ne_bytes([b[0], b[1]]))
    } else {
        0
    };
    Received {
        agent_id: ne_u32(buf, hdr::AGENT_ID),
        status: ne_u32(buf, hdr::STATUS),
        slid: Lid(be_u16(buf, hdr::LID)),
        sqpn: be_u32(buf, hdr::QPN),
        sl: if full { buf.get(hdr::SL).map_or(0, |b| b & 0x0f) } else { 0 },
        grh,
        pkey_index,
        mad,
    }
}

/// One open umad port with the SM's three agents registered, and optionally issm held.
///
/// All methods take `&self`: one thread may sit in [`UmadPort::recv`] while others send (the
/// kernel and umad2sim both serialise writes). Dropping it closes issm and then the device.
#[derive(Debug)]
pub struct UmadPort {
    location: PortLocation,
    umad_path: PathBuf,
    issm_path: PathBuf,
    fd: AtomicI32,
    issm_fd: AtomicI32,
    hdr_len: usize,
    agents: [u32; 3],
    /// The performance manager's agent, when it could be registered.
    perf_agent: Option<u32>,
}

impl UmadPort {
    /// Opens the port's umad device, settles the header length, and registers the agents for
    /// classes 0x01, 0x81 and 0x03 before anything else can arrive. Does not open issm.
    pub fn open(location: &PortLocation) -> Result<UmadPort, UmadError> {
        let umad_path = location.umad_path();
        let fd = sys_open(&umad_path, libc::O_RDWR | libc::O_NONBLOCK)?;
        let mut port = UmadPort {
            location: location.clone(),
            issm_path: location.issm_path(),
            umad_path,
            fd: AtomicI32::new(fd),
            issm_fd: AtomicI32::new(-1),
            hdr_len: HEADER_LEN_OLD,
            agents: [0; 3],
            perf_agent: None,
        };
        port.hdr_len = match libibumad_header_len() {
            Some(n) if n == HEADER_LEN_OLD || n == HEADER_LEN_PKEY => n,
            Some(n) => {
                return Err(UmadError::BadSysfs {
                    path: port.umad_path.clone(),
                    expected: "libibumad umad_size() of 56 or 64",
                    found: n.to_string(),
                });
            }
            // Real hardware without libibumad: ask for the P_Key-index header first thing.
            None => match port.ioctl_none(ioctl_nr::ENABLE_PKEY) {
                Ok(()) => HEADER_LEN_PKEY,
                Err(e) => {
                    tracing::debug!(error = %e, "ENABLE_PKEY refused; using the 56-byte header");
                    HEADER_LEN_OLD
                }
            },
        };
        for (i, agent) in AgentClass::ALL.into_iter().enumerate() {
            port.agents[i] = port.register(agent)?;
        }
        port.perf_agent = match port.register(AgentClass::PerfMgt) {
            Ok(id) => Some(id),
            Err(e) => {
                tracing::warn!(error_id = "perf-agent-refused", error = %e, "no PerfMgt agent: the performance manager cannot read counters on this port");
                None
            }
        };
        tracing::debug!(port = %port.location, header = port.hdr_len, agents = ?port.agents, "umad port open");
        Ok(port)
    }

    fn fd(&self) -> i32 {
        self.fd.load(Ordering::Acquire)
    }

    // `as _`: ioctl's request parameter is `c_ulong` in glibc and `c_int` in musl; the bit
    // pattern is what counts.
    #[allow(clippy::cast_lossless, clippy::cast_possible_wrap)]
    fn ioctl_none(&self, request: u32) -> Result<(), UmadError> {
        // SAFETY: ENABLE_PKEY takes no argument; the fd is ours (a real or umad2sim fd).
        let r = unsafe { libc::ioctl(self.fd(), request as _) };
        if r < 0 { Err(UmadError::sys(&self.umad_path, "ioctl ENABLE_PKEY", errno())) } else { Ok(()) }
    }

    /// Registers one agent: `REGISTER_AGENT2`, or `REGISTER_AGENT` when that is refused.
    #[allow(clippy::cast_lossless, clippy::cast_possible_wrap)] // `as _`: see `ioctl_none`
    fn register(&self, agent: AgentClass) -> Result<u32, UmadError> {
        let mut req2 = reg_req2(agent);
        // SAFETY: the argument points to a live, writable 40-byte buffer laid out as
        // `struct ib_user_mad_reg_req2` and aligned like it; the kernel writes the agent id back.
        let r = unsafe { libc::ioctl(self.fd(), ioctl_nr::REGISTER_AGENT2 as _, req2.0.as_mut_ptr()) };
        if r == 0 {
            return Ok(ne_u32(&req2.0, 0));
        }
        let e = errno();
        tracing::debug!(class = agent.mgmt_class(), errno = e, "REGISTER_AGENT2 refused; trying REGISTER_AGENT");
        let mut req = reg_req(agent);
        // SAFETY: as above, with the 28-byte `struct ib_user_mad_reg_req`.
        let r = unsafe { libc::ioctl(self.fd(), ioctl_nr::REGISTER_AGENT as _, req.0.as_mut_ptr()) };
        if r < 0 {
            return Err(UmadError::sys(&self.umad_path, "ioctl REGISTER_AGENT", errno()));
        }
        Ok(ne_u32(&req.0, 0))
    }

    /// Where this port is.
    pub fn location(&self) -> &PortLocation {
        &self.location
    }

    /// The header length in use (56 or 64).
    pub fn header_len(&self) -> usize {
        self.hdr_len
    }

    /// The agent id registered for `agent` (`None`: the PerfMgt agent was refused).
    pub fn agent_id(&self, agent: AgentClass) -> Option<u32> {
        match agent {
            AgentClass::SubnLid => Some(self.agents[0]),
            AgentClass::SubnDr => Some(self.agents[1]),
            AgentClass::SubnAdm => Some(self.agents[2]),
            AgentClass::PerfMgt => self.perf_agent,
        }
    }

    /// Opens `issmN`, which sets PortInfo.CapabilityMask.IsSM on this port (and, under ibsim,
    /// makes this process the SM that SA requests and traps are delivered to).
    pub fn open_issm(&self) -> Result<(), UmadError> {
        if self.issm_fd.load(Ordering::Acquire) >= 0 {
            return Ok(());
        }
        let fd = sys_open(&self.issm_path, libc::O_RDWR)?;
        if self.issm_fd.compare_exchange(-1, fd, Ordering::AcqRel, Ordering::Acquire).is_err() {
            sys_close(fd, &self.issm_path)?;
        }
        Ok(())
    }

    /// Closes `issmN` (clears IsSM). Idempotent.
    pub fn close_issm(&self) -> Result<(), UmadError> {
        let fd = self.issm_fd.swap(-1, Ordering::AcqRel);
        if fd >= 0 { sys_close(fd, &self.issm_path) } else { Ok(()) }
    }

    /// Sends one MAD through `agent`'s agent: 256 bytes, or a longer RMPP message that the
    /// kernel segments (SA agent). `timeout_ms` > 0 for requests that expect a response, 0 for
    /// responses.
    pub fn send(&self, agent: AgentClass, mad: &[u8], addr: &Address, timeout_ms: u32) -> Result<(), UmadError> {
        let Some(id) = self.agent_id(agent) else {
            return Err(UmadError::sys(&self.umad_path, "write (no agent registered for the class)", libc::ENOTCONN));
        };
        // A single MAD (every SMP) goes from the stack; only a longer RMPP message is built
        // on the heap. One SMP is sent per `write()`, tens of thousands per sweep.
        let mut small = [0u8; HEADER_LEN_PKEY + MAD_LEN];
        let mut large = Vec::new();
        let total = self.hdr_len + mad.len();
        let buf: &mut [u8] = if total <= small.len() {
            &mut small[..total]
        } else {
            large.resize(total, 0);
            &mut large
        };
        let (h, body) = buf.split_at_mut(self.hdr_len);
        encode_header_into(h, id, addr, mad.len(), timeout_ms);
        body.copy_from_slice(mad);
        loop {
            // SAFETY: `buf` is live and readable for `buf.len()` bytes during the call.
            let n = unsafe { libc::write(self.fd(), buf.as_ptr().cast::<c_void>(), buf.len()) };
            if n >= 0 {
                return Ok(());
            }
            let e = errno();
            if e != libc::EINTR {
                return Err(UmadError::sys(&self.umad_path, "write", e));
            }
        }
    }

    /// Waits up to `timeout_ms` for a MAD and reads it. `Ok(None)` on timeout, on a spurious
    /// wake-up and on an empty queue.
    pub fn recv(&self, timeout_ms: i32) -> Result<Option<Received>, UmadError> {
        if !self.wait_readable(timeout_ms)? {
            return Ok(None);
        }
        self.read_one()
    }

    /// Waits up to `timeout_ms` in `poll()` for a MAD to read: `false` on timeout and on a
    /// spurious wake-up.
    fn wait_readable(&self, timeout_ms: i32) -> Result<bool, UmadError> {
        let mut pfd = libc::pollfd { fd: self.fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid `pollfd` for the duration of the call (umad2sim looks only at the
        // first umad fd of the array, which is why there is exactly one).
        let r = unsafe { libc::poll(&raw mut pfd, 1, timeout_ms) };
        if r == 0 {
            return Ok(false);
        }
        if r < 0 {
            // umad2sim returns -1 on a spurious wake-up without setting errno; the kernel only
            // for EINTR and resource errors. Either way: nothing to read now.
            let e = errno();
            if e == libc::ENOMEM || e == libc::EINVAL {
                return Err(UmadError::sys(&self.umad_path, "poll", e));
            }
            return Ok(false);
        }
        if pfd.revents & (libc::POLLNVAL | libc::POLLERR) != 0 && pfd.revents & libc::POLLIN == 0 {
            return Err(UmadError::sys(&self.umad_path, "poll", libc::EBADF));
        }
        Ok(true)
    }

    /// [`UmadPort::recv`], then every further MAD already queued, up to `max` in all: one
    /// wake-up of the caller per burst instead of one per MAD.
    pub fn recv_batch(&self, timeout_ms: i32, max: usize) -> Result<Vec<Received>, UmadError> {
        let mut batch = Vec::new();
        let n = self.recv_batch_into(timeout_ms, max, &mut batch)?;
        batch.truncate(n);
        Ok(batch)
    }

    /// [`UmadPort::recv_batch`] into `batch`, whose first elements are overwritten and their
    /// MAD buffers reused (it grows when a batch is longer than any before): returns how many
    /// were read, `batch[..n]`. The MAD thread keeps one `batch` for its whole run, so reading
    /// allocates nothing per MAD.
    pub fn recv_batch_into(&self, timeout_ms: i32, max: usize, batch: &mut Vec<Received>) -> Result<usize, UmadError> {
        if !self.wait_readable(timeout_ms)? {
            return Ok(0);
        }
        let mut n = 0;
        while n < max.max(1) {
            if batch.len() == n {
                batch.push(Received::default());
            }
            if !self.read_one_into(&mut batch[n])? {
                break;
            }
            n += 1;
        }
        Ok(n)
    }

    fn read_one(&self) -> Result<Option<Received>, UmadError> {
        let mut r = Received::default();
        Ok(self.read_one_into(&mut r)?.then_some(r))
    }

    /// Reads one queued MAD into `out` (its MAD buffer reused); `false` when none is queued
    /// (`out` untouched then).
    fn read_one_into(&self, out: &mut Received) -> Result<bool, UmadError> {
        // A single MAD is read onto the stack; a longer reassembled RMPP message into `large`.
        let mut small = [0u8; HEADER_LEN_PKEY + MAD_LEN];
        let small_len = self.hdr_len.min(HEADER_LEN_PKEY) + MAD_LEN;
        let mut large: Vec<u8> = Vec::new();
        loop {
            let buf: &mut [u8] = if large.is_empty() { &mut small[..small_len] } else { &mut large };
            // SAFETY: `buf` is live and writable for `buf.len()` bytes during the call.
            let n = unsafe { libc::read(self.fd(), buf.as_mut_ptr().cast::<c_void>(), buf.len()) };
            if n == UMAD2SIM_EMPTY {
                return Ok(false);
            }
            if let Ok(n) = usize::try_from(n) {
                let mad = std::mem::take(&mut out.mad);
                *out = decode_received_into(&buf[..n.min(buf.len())], self.hdr_len, mad);
                return Ok(true);
            }
            let e = errno();
            match e {
                libc::EAGAIN | libc::EINTR => return Ok(false),
                // A reassembled RMPP message longer than the buffer: the kernel keeps it
                // queued and reports the length it needs in the header.
                libc::ENOSPC => {
                    // The header's length counts the header itself and the whole MAD.
                    let need = usize::try_from(ne_u32(buf, hdr::LENGTH)).unwrap_or(0).min(1 << 20);
                    if need <= buf.len() {
                        return Err(UmadError::sys(&self.umad_path, "read", e));
                    }
                    large.resize(need, 0);
                }
                _ => return Err(UmadError::sys(&self.umad_path, "read", e)),
            }
        }
    }

    /// Closes issm, then the device. Errors of both are reported; both are closed regardless.
    pub fn close(&self) -> Result<(), UmadError> {
        let issm = self.close_issm();
        let fd = self.fd.swap(-1, Ordering::AcqRel);
        let dev = if fd >= 0 { sys_close(fd, &self.umad_path) } else { Ok(()) };
        issm.and(dev)
    }
}

impl Drop for UmadPort {
    fn drop(&mut self) {
        if let Err(e) = self.close() {
            tracing::warn!(error_id = "umad-close", error = %e, "closing the umad port");
        }
    }
}

#[cfg(test)]
#[path = "umad_tests.rs"]
mod tests;
