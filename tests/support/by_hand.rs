//! A simulated SM stepped by hand (the tests that watch the order of what it sends, between
//! the driver's own steps): its MADs out, then the fabric to its next event and the answers in.

use ibsm::core::MadSource;
use ibsm::transport::sim::SimDriver;
use ibsm_sim::fabric::{Dest, SimTime};

/// Every MAD the SM has to send now, handed to the fabric; `sent` sees each one's bytes.
pub fn send_all(drv: &mut SimDriver, mut sent: impl FnMut(&[u8])) {
    let now = drv.now();
    while let Some(t) = drv.sm.poll_transmit(now) {
        sent(&t.bytes);
        let mut mad = [0u8; ibsm_mad::MAD_LEN];
        let n = t.bytes.len().min(mad.len());
        mad[..n].copy_from_slice(&t.bytes[..n]);
        drv.fabric.send_pkey(drv.agent, &mad, Dest { dlid: t.to.lid, qpn: t.to.qpn }, t.to.pkey_index);
    }
}

/// The fabric to its next event or the SM's next timer, the MADs that reached the SM in, the
/// timer handled when due. False when nothing is left to happen.
pub fn to_next_event(drv: &mut SimDriver) -> bool {
    let next = match (drv.fabric.next_event().map(|t| t.0), drv.sm.poll_timeout()) {
        (Some(a), Some(b)) => a.min(b),
        (Some(a), None) => a,
        (None, Some(b)) => b,
        (None, None) => return false,
    };
    drv.fabric.advance_to(SimTime(next));
    while let Some(r) = drv.fabric.recv(drv.agent) {
        let src = MadSource { slid: r.slid, sqpn: r.sqpn, pkey_index: r.pkey_index, sl: 0, grh: None };
        drv.sm.handle_mad(r.at.0, &r.mad[..], src);
    }
    let now = drv.now();
    if drv.sm.poll_timeout().is_some_and(|t| t <= now) {
        drv.sm.handle_timeout(now);
    }
    true
}
