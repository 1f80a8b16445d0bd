//! The broker's disk I/O goes through io_uring's registered buffers, as the kernel itself
//! records it. glommio takes a write's or read's buffer from the memory registered with the
//! ring when it can and silently falls back to plain memory when that arena is full (or was
//! never registered, RLIMIT_MEMLOCK being too low): the request then goes as WRITE / READ
//! instead of WRITE_FIXED / READ_FIXED. Only the kernel's tracepoints tell them apart, so
//! this test reads them, in a tracefs instance of its own, while a real broker process writes
//! and reads more than its hot tail holds. It fails if any request on one of the broker's
//! files used a plain buffer (the arena sized too small for the I/O in flight), and if it saw
//! no fixed request at all (the tracing not working). `perf-scripts/fixed-io.sh` counts the
//! same under ringmq-bench load.
//!
//! Needs root and tracefs; without them it says so and checks nothing (CI runs as root).

mod broker_support;

use broker_support::requests::{call, pull, send};
use broker_support::Standalone;
use ringmq::client::{block_on, RemotingClient};
use ringmq::protocol::codes::response;
use ringmq::protocol::message::split_records;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

const TRACEFS: &str = "/sys/kernel/tracing";
const EVENTS: [&str; 2] = ["io_uring_submit_req", "io_uring_file_get"];
/// Per-CPU trace buffer: room for every request of the run (~100 bytes an event).
const TRACE_BUFFER_KIB: u32 = 65536;
/// 64 KiB bodies, 3 000 of them: 96 MiB per shard, more than the 64 MiB hot tail, so the
/// oldest are read back from disk (cold reads) while the log is written through group commit.
const BODY_BYTES: usize = 64 << 10;
const MESSAGES: usize = 3000;
const QUEUES: i32 = 4;
/// Keys per message, each ~60 bytes, so that a second's key-index entries (a persist's
/// append) are megabytes: more than the arena holds if written in one piece.
const KEYS_PER_MESSAGE: usize = 300;
const KEY_PAD: &str = "pppppppppppppppppppppppppppppppppppppppp";

/// A tracefs instance (its own buffer and event switches), removed on drop.
struct Trace {
    dir: PathBuf,
}

impl Trace {
    fn start() -> Option<Self> {
        let instances = Path::new(TRACEFS).join("instances");
        if !instances.is_dir() {
            return None;
        }
        let dir = instances.join(format!("ringmq-fixed-io-{}", std::process::id()));
        std::fs::create_dir(&dir).ok()?;
        let trace = Trace { dir };
        trace.write("buffer_size_kb", &TRACE_BUFFER_KIB.to_string());
        for event in EVENTS {
            trace.write(&format!("events/io_uring/{event}/enable"), "1");
        }
        trace.write("tracing_on", "1");
        Some(trace)
    }

    fn write(&self, file: &str, value: &str) {
        std::fs::write(self.dir.join(file), value).unwrap_or_else(|e| panic!("{file}: {e}"));
    }

    fn stop_and_read(&self) -> String {
        self.write("tracing_on", "0");
        std::fs::read_to_string(self.dir.join("trace")).unwrap()
    }
}

impl Drop for Trace {
    fn drop(&mut self) {
        let _ = std::fs::write(self.dir.join("tracing_on"), "0");
        for event in EVENTS {
            let _ = std::fs::write(
                self.dir.join(format!("events/io_uring/{event}/enable")),
                "0",
            );
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// One submitted request of the broker's: its opcode and the descriptor looked up for it
/// (none for a registered file, as glommio's eventfd is).
struct Request {
    opcode: String,
    fd: Option<i32>,
}

/// The broker's threads' requests, from the trace text: `comm-tid [cpu] … event: … req 0x…,
/// … opcode OP, …` and `… io_uring_file_get: … req 0x…, … fd N`.
fn requests(trace: &str, tids: &BTreeSet<u32>) -> Vec<Request> {
    let mut out: Vec<Request> = Vec::new();
    let mut by_req: HashMap<String, usize> = HashMap::new();
    for line in trace.lines().filter(|l| !l.starts_with('#')) {
        let Some(task) = line.split_whitespace().next() else {
            continue;
        };
        let tid = task.rsplit('-').next().and_then(|t| t.parse::<u32>().ok());
        if !tid.is_some_and(|t| tids.contains(&t)) {
            continue;
        }
        let req = field(line, "req ");
        if line.contains("io_uring_submit_req:") {
            let (Some(req), Some(opcode)) = (req, field(line, "opcode ")) else {
                continue;
            };
            by_req.insert(req.to_owned(), out.len());
            out.push(Request {
                opcode: opcode.to_owned(),
                fd: None,
            });
        } else if line.contains("io_uring_file_get:") {
            let at = req.and_then(|r| by_req.get(r));
            if let (Some(&at), Some(fd)) = (at, field(line, "fd ").and_then(|f| f.parse().ok())) {
                out[at].fd = Some(fd);
            }
        }
    }
    out
}

/// The value after `name` up to the next comma or space.
fn field<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let rest = &line[line.find(name)? + name.len()..];
    rest.split([',', ' ']).next()
}

fn tids(pid: u32) -> BTreeSet<u32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
        .filter_map(|t| t.file_name().to_str()?.parse().ok())
        .collect()
}

/// The broker's open descriptors that name files under its data directory.
fn data_files(pid: u32, data: &Path) -> BTreeMap<i32, PathBuf> {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let fd = entry.file_name().to_str()?.parse().ok()?;
            let target = std::fs::read_link(entry.path()).ok()?;
            target.starts_with(data).then_some((fd, target))
        })
        .collect()
}

/// Writes then reads back (from the first offset, so the oldest from disk) every message.
fn write_then_read_back(addr: &str) {
    block_on(async {
        let client = RemotingClient::connect(addr).await.unwrap();
        let body = vec![b'f'; BODY_BYTES];
        for i in 0..MESSAGES {
            let keys: Vec<String> = (0..KEYS_PER_MESSAGE)
                .map(|k| format!("key-{i:06}-{k:04}-{KEY_PAD}"))
                .collect();
            let props = [("KEYS", keys.join(" "))];
            let props: Vec<(&str, &str)> = props.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let resp = call(&client, send("FixedIo", i as i32 % QUEUES, &body, &props)).await;
            assert_eq!(resp.code, response::SUCCESS, "{:?}", resp.remark);
        }
        for queue in 0..QUEUES {
            let mut offset = 0;
            while offset < (MESSAGES as i32 / QUEUES) as i64 {
                let got = call(&client, pull("FG", "FixedIo", queue, offset, Some("*"), 0)).await;
                assert_eq!(got.code, response::SUCCESS, "{:?}", got.remark);
                let read = split_records(got.body.clone()).count() as i64;
                assert!(read > 0, "queue {queue} stops at {offset}");
                offset += read;
            }
        }
    })
    .unwrap();
}

#[test]
fn disk_writes_and_reads_use_registered_buffers() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("not root: tracefs is not writable, nothing checked");
        return;
    }
    let broker = Standalone::start(2);
    let Some(trace) = Trace::start() else {
        eprintln!("no tracefs instances under {TRACEFS}: nothing checked");
        return;
    };
    write_then_read_back(&broker.broker_addr);
    let text = trace.stop_and_read();
    let pid = broker.pid();
    let requests = requests(&text, &tids(pid));
    let files = data_files(pid, broker.data_dir());
    let mut counts: BTreeMap<(String, &str), usize> = BTreeMap::new();
    for request in &requests {
        let Some(kind) = ["READ", "WRITE", "READ_FIXED", "WRITE_FIXED"]
            .into_iter()
            .find(|k| *k == request.opcode)
        else {
            continue;
        };
        let target = match request.fd {
            None => "no descriptor looked up (a registered file)",
            Some(fd) if files.contains_key(&fd) => "a file of the data directory",
            Some(_) => "a descriptor closed since, or not a data file",
        };
        *counts.entry((kind.to_owned(), target)).or_default() += 1;
    }
    let of =
        |kind: &str, target: &str| counts.get(&(kind.to_owned(), target)).copied().unwrap_or(0);
    let data = "a file of the data directory";
    let report = format!("{counts:#?}");
    assert!(of("WRITE_FIXED", data) > 0, "no fixed write seen: {report}");
    assert!(of("READ_FIXED", data) > 0, "no cold read seen: {report}");
    assert_eq!(of("WRITE", data), 0, "writes from plain memory: {report}");
    assert_eq!(of("READ", data), 0, "reads into plain memory: {report}");
    eprintln!("{report}");
}
