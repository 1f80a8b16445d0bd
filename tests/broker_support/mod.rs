//! A real `ringmq standalone` process (NameServer and broker in one) for tests: free loopback
//! ports, the shard count the test asks for, a temporary data directory, started when its readiness lines are
//! printed; stopped cleanly (SIGTERM) or crashed (SIGKILL), then started again on the same
//! ports and data. Killed on drop, even when the test fails.
#![allow(dead_code)] // each test binary uses its own subset of these helpers

pub mod inbox;
pub mod requests;

#[path = "../process_support/mod.rs"]
pub mod process_support;

use process_support::{ServerProcess, TempDir};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, ExitStatus};
use std::time::Duration;

/// How many random ports to try for a broker port whose VIP port (port - 2) is free too.
const PORT_ATTEMPTS: usize = 100;

/// How long the broker may take to print its readiness line: as long as it gives its shards
/// to open their stores (src/broker/runtime.rs START_TIMEOUT). Usually well under a second;
/// once, at load average 15 on the shared 2 cores, more than 30 s.
const BROKER_START_DEADLINE: Duration = Duration::from_secs(120);

/// The readiness lines `ringmq standalone` prints on stdout, in this order.
const NAMESRV_READY: &str = "ringmq namesrv listening on ";
const BROKER_READY: &str = "ringmq broker listening on ";

/// A `ringmq standalone` process and what it needs to be started again.
pub struct Standalone {
    /// None while stopped.
    process: Option<ServerProcess>,
    /// The broker's address (its VIP channel is on the port two below).
    pub broker_addr: String,
    pub namesrv_addr: String,
    shards: usize,
    /// Further command-line arguments, given again at each start.
    args: Vec<String>,
    data: TempDir,
}

impl Standalone {
    /// `ringmq standalone --shards <shards>` on fresh ports and a fresh data directory.
    pub fn start(shards: usize) -> Self {
        Self::start_with(shards, &[])
    }

    /// As [`Self::start`], with further arguments (e.g. `--flush-disk-type SYNC_FLUSH`).
    pub fn start_with(shards: usize, args: &[&str]) -> Self {
        Self::start_in(shards, TempDir::new("standalone-data"), args)
    }

    /// As [`Self::start_with`], with its data in `data` (e.g. on a file system the test made).
    pub fn start_in(shards: usize, data: TempDir, args: &[&str]) -> Self {
        let (broker_port, namesrv_port) = free_ports();
        let mut broker = Standalone {
            process: None,
            broker_addr: format!("127.0.0.1:{broker_port}"),
            namesrv_addr: format!("127.0.0.1:{namesrv_port}"),
            shards,
            args: args.iter().map(|arg| arg.to_string()).collect(),
            data,
        };
        broker.start_again();
        broker
    }

    /// Starts the process (again) on the same ports, data directory and arguments; returns
    /// once both its NameServer and its broker serve.
    pub fn start_again(&mut self) {
        assert!(self.process.is_none(), "broker already running");
        let mut command = Command::new(env!("CARGO_BIN_EXE_ringmq"));
        command
            .arg("standalone")
            .args(["--listen", &self.broker_addr])
            .args(["--namesrv-listen", &self.namesrv_addr])
            .args(["--shards", &self.shards.to_string()])
            .arg("--data")
            .arg(self.data.path())
            .args(["--broker-ip", "127.0.0.1"])
            .args(&self.args);
        let process = ServerProcess::spawn(command, "standalone");
        let namesrv = process.wait_for_stdout(NAMESRV_READY);
        let broker = process.wait_for_stdout_within(BROKER_READY, BROKER_START_DEADLINE);
        assert_eq!(
            (namesrv.as_str(), broker.as_str()),
            (self.namesrv_addr.as_str(), self.broker_addr.as_str()),
            "standalone listens where it was told"
        );
        self.process = Some(process);
    }

    /// A clean stop: SIGTERM, then the process flushes, persists and exits on its own.
    pub fn stop(&mut self) -> ExitStatus {
        self.process.take().expect("broker running").terminate()
    }

    /// A crash: SIGKILL.
    pub fn kill(&mut self) {
        self.process.take().expect("broker running").kill();
    }

    pub fn pid(&self) -> u32 {
        self.process.as_ref().expect("broker running").pid()
    }

    pub fn data_dir(&self) -> &Path {
        self.data.path()
    }

    /// Waits for a log line of the running process containing any of `needles`.
    pub fn wait_for_any_log(&self, needles: &[&str]) -> String {
        self.process
            .as_ref()
            .expect("broker running")
            .wait_for_any_log(needles)
    }
}

/// Free loopback ports (P, Q) for the broker and the NameServer, with P - 2 (the broker's VIP
/// port: a RocketMQ broker listens on both) free as well. All three are held while the next is
/// picked, so Q is neither P nor P - 2 (the listeners use SO_REUSEPORT, so a clash would not
/// fail: the NameServer and the VIP channel would split one port's connections).
fn free_ports() -> (u16, u16) {
    let bind = |port: u16| TcpListener::bind(("127.0.0.1", port));
    for _ in 0..PORT_ATTEMPTS {
        let broker = bind(0).expect("bind an ephemeral port");
        let port = broker.local_addr().expect("local addr").port();
        let Some(vip) = port.checked_sub(2).and_then(|vip| bind(vip).ok()) else {
            continue;
        };
        let namesrv = bind(0).expect("bind an ephemeral port");
        let namesrv_port = namesrv.local_addr().expect("local addr").port();
        drop((broker, vip, namesrv));
        return (port, namesrv_port);
    }
    panic!("no free port P with P - 2 free in {PORT_ATTEMPTS} attempts");
}
