//! The engine on the real disk (glommio, O_DIRECT), and the real crash test: a child process
//! appending with SYNC_FLUSH and printing each acknowledged record is killed with SIGKILL at
//! random moments; after each restart every acknowledged record is there, byte-identical.

mod common;

use common::{config, message, STORE_HOST};
use glommio::LocalExecutorBuilder;
use ringmq_shards::real_io::Durability;
use ringmq_shards::record::{encode, Message, RecordView, StoreFields};
use ringmq_shards::{
    replace_file, tmp_path, FlushMode, QueueReadRequest, RealClock, RealDisk, Shard, SimRng,
};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::rc::Rc;
use std::time::{Duration, Instant};

/// io_uring registered memory per executor: tests run in parallel under the 8 MiB
/// `ulimit -l` of CI machines.
const IO_MEMORY_BYTES: usize = 1 << 20;
/// Kill/restart cycles of the crash test (at most, at least), and the time after which it
/// stops starting new ones.
const CRASH_CYCLES: u64 = 20;
const CRASH_CYCLES_MIN: u64 = 5;
const CRASH_TEST_TIME_MAX: Duration = Duration::from_secs(120);
/// The child stops by itself after this long if nobody kills it.
const CHILD_TIME_MAX: Duration = Duration::from_secs(30);
/// Concurrent appenders in the child (they share group commits).
const CHILD_APPENDERS: usize = 16;
const SEGMENT_BYTES: u64 = 256 << 10;
const QUEUES: i32 = 4;
const CHILD_DIR_ENV: &str = "RINGMQ_CRASH_CHILD_DIR";
const CHILD_SEQ_ENV: &str = "RINGMQ_CRASH_CHILD_SEQ";
/// "write-through" makes the child use O_DSYNC files, "rwf-dsync" RWF_DSYNC writes through
/// its own ring; cycles rotate through the three modes.
const CHILD_DURABILITY_ENV: &str = "RINGMQ_CRASH_CHILD_DURABILITY";

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ringmq-shards-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn run_async<T, F>(f: impl FnOnce() -> F + Send + 'static) -> T
where
    T: Send + 'static,
    F: std::future::Future<Output = T> + 'static,
{
    LocalExecutorBuilder::default()
        .io_memory(IO_MEMORY_BYTES)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap()
}

async fn open(dir: &Path) -> Shard<RealDisk, RealClock> {
    open_with(dir, Durability::default()).await
}

async fn open_with(dir: &Path, durability: Durability) -> Shard<RealDisk, RealClock> {
    let cfg = config(dir, FlushMode::SyncFlush, SEGMENT_BYTES);
    Shard::open(cfg, RealDisk { durability }, RealClock)
        .await
        .unwrap()
}

/// The message with sequence number `seq`: its body and queue derive from it.
fn numbered(seq: u64) -> Message {
    let mut body = format!("{seq};").into_bytes();
    body.extend((0..(seq % 900) as usize).map(|i| (i as u64 ^ seq) as u8));
    let keys = format!("k{seq}");
    message(
        "Crash",
        (seq % QUEUES as u64) as i32,
        &body,
        Some("t"),
        Some(&keys),
    )
}

#[test]
fn real_disk_appends_group_commit_and_reopen() {
    for durability in [
        Durability::Fdatasync,
        Durability::WriteThrough,
        Durability::RwfDsync,
    ] {
        appends_group_commit_and_reopen(durability);
    }
}

fn appends_group_commit_and_reopen(durability: Durability) {
    let dir = temp_dir(&format!("reopen-{durability:?}"));
    let dir2 = dir.clone();
    let acked = run_async(move || async move {
        let shard = Rc::new(open_with(&dir2, durability).await);
        let tasks: Vec<_> = (0..8u64)
            .map(|t| {
                let shard = shard.clone();
                glommio::spawn_local(async move {
                    let mut out = Vec::new();
                    for i in 0..50 {
                        let r = shard.append(&numbered(t * 1000 + i)).await.unwrap();
                        out.push((t * 1000 + i, r));
                    }
                    out
                })
            })
            .collect();
        let mut acked = Vec::new();
        for task in tasks {
            acked.extend(task.await);
        }
        let stats = shard.log_stats();
        assert!(
            stats.flush_count < 400,
            "400 appends must share flushes: {stats:?}"
        );
        shard.persist().await.unwrap();
        acked
    });
    let dir3 = dir.clone();
    run_async(move || async move {
        let shard = open_with(&dir3, durability).await;
        for (seq, r) in acked {
            let bytes = shard.read_at(r.physical_offset).await.unwrap();
            let view = RecordView::parse(bytes).unwrap();
            assert_eq!(view.body(), numbered(seq).body);
            assert_eq!(view.queue_offset(), r.queue_offset);
        }
        let total: i64 = (0..QUEUES).map(|q| shard.max_offset("Crash", q)).sum();
        assert_eq!(total, 400);
    });
    std::fs::remove_dir_all(&dir).unwrap();
}

/// What the child prints per acknowledged append: `ACK <seq> <record hex>`.
/// The one crash-safe file replace on the real disk: exact lengths (O_DIRECT writes whole
/// blocks), a longer leftover `.tmp` cut, the directory created, in every durability mode
/// (write-through files must still sync the length change).
#[test]
fn real_disk_replace_file_writes_exact_lengths() {
    for durability in [
        Durability::Fdatasync,
        Durability::WriteThrough,
        Durability::RwfDsync,
    ] {
        let dir = temp_dir(&format!("replace-{durability:?}"));
        let path = dir.join("config").join("t.json");
        let p = path.clone();
        run_async(move || async move {
            let disk = RealDisk { durability };
            let long: Vec<u8> = (0..9000u32).map(|i| i as u8).collect();
            replace_file(&disk, &p, &long).await.unwrap();
            assert_eq!(std::fs::read(&p).unwrap(), long);
            std::fs::write(tmp_path(&p), vec![7u8; 3 * 4096]).unwrap();
            replace_file(&disk, &p, b"{\"a\":1}").await.unwrap();
            assert_eq!(std::fs::read(&p).unwrap(), b"{\"a\":1}");
            replace_file(&disk, &p, &[]).await.unwrap();
            assert_eq!(std::fs::read(&p).unwrap(), b"");
        });
        assert!(!tmp_path(&path).exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

fn ack_line(seq: u64, record: &[u8]) -> String {
    let hex: String = record.iter().map(|b| format!("{b:02x}")).collect();
    format!("ACK {seq} {hex}")
}

fn parse_ack(line: &str) -> Option<(u64, Vec<u8>)> {
    let mut parts = line.strip_prefix("ACK ")?.split(' ');
    let seq = parts.next()?.parse().ok()?;
    let hex = parts.next()?;
    let bytes = (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok())
        .collect::<Option<Vec<u8>>>()?;
    (hex.len() % 2 == 0 && parts.next().is_none()).then_some((seq, bytes))
}

/// Child entry point: appends numbered messages with SYNC_FLUSH from many tasks until
/// killed, printing each acknowledged record in full.
#[test]
#[ignore = "child process of real_crash_test_sigkill_cycles"]
fn crash_child() {
    let Ok(dir) = std::env::var(CHILD_DIR_ENV) else {
        return;
    };
    let seq_start: u64 = std::env::var(CHILD_SEQ_ENV).unwrap().parse().unwrap();
    run_async(move || async move {
        let durability = match std::env::var(CHILD_DURABILITY_ENV).as_deref() {
            Ok("write-through") => Durability::WriteThrough,
            Ok("rwf-dsync") => Durability::RwfDsync,
            _ => Durability::Fdatasync,
        };
        let shard = Rc::new(open_with(Path::new(&dir), durability).await);
        let started = Instant::now();
        let next = Rc::new(std::cell::Cell::new(seq_start));
        let tasks: Vec<_> = (0..CHILD_APPENDERS)
            .map(|_| {
                let (shard, next) = (shard.clone(), next.clone());
                glommio::spawn_local(async move {
                    while started.elapsed() < CHILD_TIME_MAX {
                        let seq = next.get();
                        next.set(seq + 1);
                        let msg = numbered(seq);
                        let r = shard.append(&msg).await.unwrap();
                        let store = StoreFields {
                            queue_offset: r.queue_offset,
                            physical_offset: r.physical_offset,
                            store_timestamp_ms: r.store_timestamp_ms,
                            store_host: STORE_HOST.parse().unwrap(),
                        };
                        println!("{}", ack_line(seq, &encode(&msg, &store).unwrap()));
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await;
        }
    });
}

#[test]
fn real_crash_test_sigkill_cycles() {
    let dir = temp_dir("crash");
    let started = Instant::now();
    let mut rng = SimRng::new(std::process::id() as u64);
    let mut acked: Vec<(u64, Vec<u8>)> = Vec::new();
    for cycle in 0..CRASH_CYCLES {
        // Bounded in time without making speed a pass condition: a slow machine runs fewer
        // cycles, never fewer than the minimum.
        if cycle >= CRASH_CYCLES_MIN && started.elapsed() > CRASH_TEST_TIME_MAX {
            break;
        }
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "crash_child",
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_DIR_ENV, &dir)
            .env(CHILD_SEQ_ENV, (cycle * 10_000_000).to_string())
            .env(
                CHILD_DURABILITY_ENV,
                ["fdatasync", "write-through", "rwf-dsync"][cycle as usize % 3],
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Drain the child's output as it comes, so it never blocks on a full pipe and the
        // kill lands while it is appending.
        let mut stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut out = String::new();
            stdout.read_to_string(&mut out).map(|_| out)
        });
        std::thread::sleep(Duration::from_millis(50 + rng.below(300)));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let out = reader.join().unwrap().unwrap();
        // A line cut by the kill is not an acknowledgement.
        let complete = out.rfind('\n').map_or("", |end| &out[..end]);
        let new: Vec<_> = complete.lines().filter_map(parse_ack).collect();
        acked.extend(new);
        let expected = acked.clone();
        let dir2 = dir.clone();
        let counts = run_async(move || async move {
            let shard = open(&dir2).await;
            for (seq, bytes) in &expected {
                let view = RecordView::parse(bytes.clone().into()).unwrap();
                let stored = shard
                    .read_at(view.physical_offset())
                    .await
                    .unwrap_or_else(|e| {
                        panic!(
                            "acknowledged seq {seq} at {} lost: {e}",
                            view.physical_offset()
                        )
                    });
                assert_eq!(&stored[..], &bytes[..], "acknowledged seq {seq} changed");
            }
            let mut total = 0;
            for queue_id in 0..QUEUES {
                let max = shard.max_offset("Crash", queue_id);
                let mut offset = 0;
                while offset < max {
                    let request = QueueReadRequest {
                        topic: "Crash",
                        queue_id,
                        offset,
                        max_count: 512,
                        max_bytes: 1 << 20,
                        tag_filter: None,
                        record_filter: None,
                    };
                    for record in shard.read_queue(request).await.unwrap().records {
                        let view = RecordView::parse(record).expect("torn record served");
                        assert!(view.body_crc_ok());
                        assert_eq!(view.queue_offset(), offset, "queue offsets contiguous");
                        offset += 1;
                    }
                }
                total += max;
            }
            total
        });
        assert!(counts >= acked.len() as i64);
        println!(
            "cycle {cycle}: {} acknowledged so far, {counts} records stored",
            acked.len()
        );
    }
    assert!(
        !acked.is_empty(),
        "the child must have acknowledged appends"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
