//! Torus and mesh builder. Switch ports `2d+1` face `+` and `2d+2` face `-` along dimension
//! `d`; hosts use the ports after those. A torus dimension of size 1 has no cables (it would
//! cable a switch to itself); one of size 2 has two parallel cables between the pair.

use core::fmt::Write as _;

use super::{Builder, GenError, Topology, check_size, invalid};

pub(super) fn grid(dims: &[u16], wrap: bool, hosts: u8) -> Result<Topology, GenError> {
    if dims.is_empty() || dims.len() > 3 {
        return Err(invalid("dims", format!("need 1 to 3 dimensions, found {}", dims.len())));
    }
    if let Some(d) = dims.iter().find(|&&d| d == 0) {
        return Err(invalid("dims", format!("every size must be at least 1, found {d}")));
    }
    let nd = dims.len() as u8;
    let ports = u16::from(nd) * 2 + u16::from(hosts);
    let ports = u8::try_from(ports)
        .map_err(|_| invalid("hosts-per-switch", format!("switches would need {ports} ports (at most 255)")))?;
    let switches: u64 = dims.iter().map(|&d| u64::from(d)).product();
    check_size(switches * (1 + u64::from(hosts)))?;
    let n = usize::try_from(switches).unwrap_or(0);
    let mut b = Builder::with_capacity(n * (1 + usize::from(hosts)));
    // Strides of the row-major index: x fastest.
    let mut stride = [1usize; 3];
    for d in 1..dims.len() {
        stride[d] = stride[d - 1] * usize::from(dims[d - 1]);
    }
    let coords = |i: usize| -> Vec<usize> { (0..dims.len()).map(|d| i / stride[d] % usize::from(dims[d])).collect() };
    for i in 0..n {
        let mut name = String::from("sw");
        for c in coords(i) {
            // Writing to a String cannot fail.
            let _ = write!(name, "-{c}");
        }
        b.switch(name, ports);
    }
    for i in 0..n {
        let c = coords(i);
        for (d, &size) in dims.iter().enumerate() {
            let size = usize::from(size);
            let next = if c[d] + 1 < size {
                i + stride[d]
            } else if wrap && size > 1 {
                i - c[d] * stride[d]
            } else {
                continue;
            };
            let d8 = d as u8;
            b.link(i, 2 * d8 + 1, next, 2 * d8 + 2);
        }
    }
    let mut h = 0usize;
    for i in 0..n {
        for p in 0..hosts {
            let ca = b.ca(format!("h{h}"), 1, None);
            b.link(i, 2 * nd + 1 + p, ca, 1);
            h += 1;
        }
    }
    Ok(b.finish())
}
