//! `ringmq-bench` against a real broker: a `ringmq standalone` process on ephemeral loopback
//! ports, then bounded `produce`, `consume --mode catch-up` and `e2e` runs, checked through
//! their JSON results (every message produced is read back; nothing failed).

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// How long the broker may take to print its listening lines on a shared, busy machine.
const START_DEADLINE: Duration = Duration::from_secs(60);

/// Messages the produce run is bounded to; consume must read back exactly these.
const MESSAGES: u64 = 2000;

/// The `ringmq` binary beside this test's `ringmq-bench`, built (or brought up to date) first:
/// a stale broker binary would test old code.
fn ringmq_binary() -> PathBuf {
    let bench = PathBuf::from(env!("CARGO_BIN_EXE_ringmq-bench"));
    let profile_dir = bench.parent().expect("a target directory");
    let mut build = Command::new(env!("CARGO"));
    build.args(["build", "--quiet", "-p", "ringmq", "--bin", "ringmq"]);
    if profile_dir.ends_with("release") {
        build.arg("--release");
    }
    let status = build.status().expect("cargo runs");
    assert!(status.success(), "building ringmq failed");
    bench.with_file_name("ringmq")
}

/// A `ringmq standalone` process with its data in a fresh directory; stopped with SIGTERM (a
/// clean stop) and its directory removed when dropped.
struct Standalone {
    child: Child,
    namesrv: String,
    data: PathBuf,
}

impl Standalone {
    fn start() -> Self {
        let data = std::env::temp_dir().join(format!("ringmq-bench-it-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&data);
        let mut child = Command::new(ringmq_binary())
            .args(["standalone", "--listen", "127.0.0.1:0"])
            .args(["--namesrv-listen", "127.0.0.1:0"])
            .args(["--shards", "2", "--broker-ip", "127.0.0.1", "--data"])
            .arg(&data)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("ringmq starts");
        let stdout = child.stdout.take().expect("piped stdout");
        let (lines_tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if lines_tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut standalone = Self {
            child,
            namesrv: String::new(),
            data,
        };
        loop {
            let line = lines
                .recv_timeout(START_DEADLINE)
                .expect("ringmq prints its listening lines");
            if let Some(addr) = line.strip_prefix("ringmq namesrv listening on ") {
                standalone.namesrv = addr.trim().to_owned();
            }
            if line.starts_with("ringmq broker listening on ") {
                break;
            }
        }
        assert!(
            !standalone.namesrv.is_empty(),
            "no NameServer line before the broker's"
        );
        standalone
    }
}

impl Drop for Standalone {
    fn drop(&mut self) {
        // SAFETY: kill(2) on the pid of a child this test started and has not reaped.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.data);
    }
}

/// Runs `ringmq-bench ARGS --json FILE --quiet` and returns the JSON result.
fn bench(args: &[&str], json: &Path) -> Value {
    let output = Command::new(env!("CARGO_BIN_EXE_ringmq-bench"))
        .args(args)
        .arg("--json")
        .arg(json)
        .arg("--quiet")
        .output()
        .expect("ringmq-bench runs");
    assert!(
        output.status.success(),
        "ringmq-bench {args:?} failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(&std::fs::read_to_string(json).expect("a JSON result"))
        .expect("valid JSON")
}

#[test]
fn produce_then_catch_up_reads_back_every_message_and_e2e_consumes_what_it_sends() {
    let broker = Standalone::start();
    let ns = broker.namesrv.as_str();
    let json = broker.data.with_extension("json");
    let messages = MESSAGES.to_string();

    let produced = bench(
        &[
            "produce", "-n", ns, "-t", "it-bench", "-q", "4", "-p", "4", "-c", "2",
        ]
        .into_iter()
        .chain(["--in-flight", "2", "-s", "256", "-d", "30", "-m", &messages])
        .collect::<Vec<_>>(),
        &json,
    );
    let p = &produced["produce"];
    assert_eq!(p["messages"], MESSAGES, "the count bound ends the run: {p}");
    assert_eq!(p["error_count"], 0, "{p}");
    assert_eq!(p["bytes"], MESSAGES * 256);
    assert!(p["latency_us"]["count"].as_u64() == Some(MESSAGES));
    assert!(p["latency_us"]["p50"].as_u64() > Some(0));
    assert!(produced["host"]["cores"].as_u64() > Some(0));

    let consumed = bench(
        &[
            "consume", "-n", ns, "-t", "it-bench", "-q", "4", "--mode", "catch-up", "-d", "30",
        ],
        &json,
    );
    let c = &consumed["consume"];
    assert_eq!(
        c["messages"], MESSAGES,
        "catch-up reads the whole backlog: {c}"
    );
    assert_eq!(c["bytes"], MESSAGES * 256);
    assert_eq!(c["error_count"], 0, "{c}");
    assert_eq!(c["latency_kind"], "pull");

    let e2e = bench(
        &[
            "e2e", "-n", ns, "-t", "it-e2e", "-q", "2", "-p", "2", "-r", "400", "-d", "1",
        ],
        &json,
    );
    let (p, c) = (&e2e["produce"], &e2e["consume"]);
    assert!(p["messages"].as_u64() > Some(0), "{p}");
    assert_eq!(
        c["messages"], p["messages"],
        "every message sent is consumed: {c}"
    );
    assert_eq!(c["latency_kind"], "end_to_end");
    assert_eq!(c["latency_us"]["count"], p["messages"]);
    let _ = std::fs::remove_file(json);
}
