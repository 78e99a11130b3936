//! OpenSM beside ibsm under ibsim: one way to start it for every test that compares with it or
//! hands the subnet to and from it, and a process guard that kills what a test started when the
//! test ends or fails half-way.
//!
//! OpenSM runs under `ibsim-run` at a host, with its cache (`guid2lid`), its dumps
//! (`opensm-subnet.lst`) and its log in a directory of its own inside the ibsim run directory,
//! so that nothing from another run changes its numbering. It buffers its log; the subnet list it
//! writes after each sweep is what says the subnet is up ([`OpenSm::wait_subnet_up`]).

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use ibsm_topology::Topology;

use super::ibsim::{Ibsim, wait_for};

/// A process killed when dropped (also when a test fails while it runs); only this process, by
/// its pid.
#[derive(Debug)]
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One running OpenSM, killed when dropped.
#[derive(Debug)]
pub struct OpenSm {
    proc: KillOnDrop,
    dir: PathBuf,
}

impl OpenSm {
    /// Starts OpenSM at `host` with `args` (e.g. `-p 10`, `-P partitions.conf`), its files in
    /// `<ibsim dir>/<name>/`. Does not wait for anything.
    pub fn start(sim: &Ibsim, host: &str, name: &str, args: &[&str]) -> OpenSm {
        let dir = sim.dir().join(name);
        std::fs::create_dir_all(&dir).expect("OpenSM's directory");
        let child = sim
            .command(Some(host), "opensm")
            .args(["-f", &dir.join("opensm.log").to_string_lossy()])
            .args(args)
            .env("OSM_CACHE_DIR", &dir)
            .env("OSM_TMP_DIR", &dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("opensm starts");
        OpenSm { proc: KillOnDrop(child), dir }
    }

    /// Its directory: `guid2lid`, `opensm-subnet.lst`, `opensm.log`.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Its process id (for SIGSTOP and SIGCONT).
    pub fn pid(&self) -> u32 {
        self.proc.0.id()
    }

    /// Kills it (SIGKILL) and reaps it.
    pub fn kill(&mut self) {
        let _ = self.proc.0.kill();
        let _ = self.proc.0.wait();
    }

    /// Waits (up to `limit`) until OpenSM's subnet list shows every link end of `topo` ACT: the
    /// subnet is up under it.
    pub fn wait_subnet_up(&self, topo: &Topology, limit: Duration) -> Duration {
        let link_ends: usize =
            topo.nodes.iter().map(|n| (1..=n.num_ports).filter(|&p| n.peer(p).is_some()).count()).sum();
        let lst = self.dir.join("opensm-subnet.lst");
        wait_for("OpenSM's subnet up (every link end ACT in opensm-subnet.lst)", limit, || {
            std::fs::read_to_string(&lst).is_ok_and(|l| l.matches("LOG=ACT").count() == link_ends)
        })
    }
}
