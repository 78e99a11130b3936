//! OpenSM beside ibsm under ibsim: one way to start it for every test that compares with it or
//! hands the subnet to and from it, and a process guard that kills what a test started when the
//! test ends or fails half-way.
//!
//! OpenSM runs under `ibsim-run` at a host, with its cache (`guid2lid`), its dumps
//! (`opensm-subnet.lst`) and its log in a directory of its own inside the ibsim run directory,
//! so that nothing from another run changes its numbering. It buffers its log; the subnet list it
//! writes after each sweep is what says the subnet is up ([`OpenSm::wait_subnet_up`]).
//!
//! For the comparisons that need both SMs to number the fabric alike: OpenSM's `guid2lid`
//! ([`OpenSm::guid2lid`]), ibsm started at the same host with it ([`start_ibsm_with_lids`]),
//! and every switch's table as `ibroute` reads it ([`switch_tables`]).

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use ibsm_topology::Topology;

use std::collections::BTreeMap;

use super::ibsim::{Client, Ibsim, wait_for};

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

impl OpenSm {
    /// Waits (up to `limit`) until OpenSM's `guid2lid` holds a LID for each of `ports` end ports;
    /// its text.
    pub fn guid2lid(&self, ports: usize, limit: Duration) -> String {
        let path = self.dir.join("guid2lid");
        let mut text = String::new();
        wait_for("OpenSM's guid2lid", limit, || {
            text = std::fs::read_to_string(&path).unwrap_or_default();
            guid2lid_lids(&text).len() >= ports
        });
        text
    }

    /// Waits (up to `limit`) until the file `name` in its directory is `done`; its text.
    pub fn wait_file(&self, name: &str, limit: Duration, done: impl Fn(&str) -> bool) -> String {
        let path = self.dir.join(name);
        let mut text = String::new();
        wait_for(&format!("OpenSM's {name}"), limit, || {
            text = std::fs::read_to_string(&path).unwrap_or_default();
            done(&text)
        });
        text
    }
}

/// The base LIDs of a `guid2lid` text, by port GUID.
pub fn guid2lid_lids(text: &str) -> BTreeMap<u64, u16> {
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let g = u64::from_str_radix(w.next()?.strip_prefix("0x")?, 16).ok()?;
            let lid = u16::from_str_radix(w.next()?.strip_prefix("0x")?, 16).ok()?;
            Some((g, lid))
        })
        .collect()
}

/// Starts `ibsm run --state-dir <ibsim dir>/state ARGS` at `host`, its state directory holding
/// `g2l` (OpenSM's, so that both number the fabric alike), and waits for its subnet-up line;
/// the running SM and its control socket.
pub fn start_ibsm_with_lids(sim: &mut Ibsim, host: &str, g2l: &str, args: &[&str]) -> (Client, PathBuf) {
    let state = sim.dir().join("state");
    std::fs::create_dir_all(&state).expect("state directory");
    std::fs::write(state.join("guid2lid"), g2l).expect("guid2lid");
    let state_arg = state.to_string_lossy().into_owned();
    let all: Vec<&str> = ["run", "--state-dir", &state_arg].into_iter().chain(args.iter().copied()).collect();
    let sm = sim.spawn_at(Some(host), env!("CARGO_BIN_EXE_ibsm"), &all).expect("ibsm starts");
    wait_for("ibsm's subnet up", Duration::from_secs(60), || sm.stdout().contains("subnet up: "));
    (sm, state.join("ibsm.sock"))
}

/// Every switch's unicast table as `ibroute LID` prints it from `client` (its `0x...` lines),
/// by switch name; the switches' LIDs from `lids` (a `guid2lid`'s, by port GUID).
pub fn switch_tables(
    sim: &Ibsim,
    client: &str,
    topo: &Topology,
    lids: &BTreeMap<u64, u16>,
) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for n in topo.nodes.iter().filter(|n| n.kind == ibsm_topology::NodeKind::Switch) {
        let lid = lids.get(&n.port_guid(0).0).unwrap_or_else(|| panic!("no LID for {}", n.name));
        let t = sim.run_at(Some(client), "ibroute", &[&lid.to_string()]).expect("ibroute");
        assert!(t.success(), "{}", t.describe());
        out.insert(n.name.clone(), t.stdout.lines().filter(|l| l.starts_with("0x")).map(str::to_owned).collect());
    }
    out
}
