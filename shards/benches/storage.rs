//! Storage benchmark: the disk's physical limits (fio, raw syscalls) and the engine, measured
//! in one run on the same file system.
//!
//! `cargo bench -p ringmq-shards --bench storage -- [--dir DIR] [--seconds N]`
//! (DIR defaults to ./target/storage-bench; N, the length of each phase, to 5).
//!
//! Phases: fio O_DIRECT sequential write bandwidth (1 MiB blocks, io_uring, depth 8); fio
//! 4 KiB O_DIRECT write + fdatasync latency; the same by raw syscalls for three durability
//! methods (pwrite + fdatasync, pwritev2 RWF_DSYNC, O_DSYNC); glommio DMA write + fdatasync;
//! the engine's ASYNC_FLUSH append throughput with 1 KiB records; SYNC_FLUSH with 64
//! concurrent appenders (throughput and ack latency).

use glommio::LocalExecutorBuilder;
use hdrhistogram::Histogram;
use ringmq_shards::real_io::Durability;
use ringmq_shards::record::Message;
use ringmq_shards::{FlushMode, QueueReadRequest, RealClock, RealDisk, Shard, ShardConfig};
use std::cell::RefCell;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Record size the targets are stated for.
const RECORD_BYTES: usize = 1024;
/// Fixed record bytes with IPv4 hosts, topic "Bench" and no properties: 84 + 4 + 1 + 5 + 2.
const RECORD_OVERHEAD_BYTES: usize = 96;
const SYNC_APPENDERS: usize = 64;
/// Messages per call in the batched ASYNC phase.
const BATCH_MESSAGES: usize = 32;
/// The ASYNC appender yields after this many messages (about one socket read's worth).
const YIELD_EVERY_APPENDS: u64 = 32;
const BLOCK: usize = 4096;
/// io_uring registered memory: under the 8 MiB `ulimit -l` of this machine.
const IO_MEMORY_BYTES: usize = 6 << 20;
/// Every measuring loop also stops after this many operations.
const OPS_MAX: u64 = 50_000_000;

struct Args {
    dir: PathBuf,
    phase: Duration,
    /// Skip fio and the raw syscall phases (quicker iterations on the engine alone).
    engine_only: bool,
}

fn args() -> Args {
    let mut args = Args {
        dir: PathBuf::from("target/storage-bench"),
        phase: Duration::from_secs(5),
        engine_only: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--dir" => args.dir = it.next().expect("--dir DIR").into(),
            "--engine-only" => args.engine_only = true,
            "--seconds" => {
                let secs = it.next().expect("--seconds N").parse().expect("a number");
                args.phase = Duration::from_secs(secs);
            }
            _ => {} // cargo bench passes --bench
        }
    }
    args
}

struct Latency {
    p50_us: f64,
    p99_us: f64,
    p999_us: f64,
    count: u64,
}

impl Latency {
    fn of(h: &Histogram<u64>) -> Self {
        let us = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
        Self {
            p50_us: us(0.5),
            p99_us: us(0.99),
            p999_us: us(0.999),
            count: h.len(),
        }
    }

    fn row(&self, name: &str) -> String {
        format!(
            "| {name} | {:.0} | {:.0} | {:.0} | {} |",
            self.p50_us, self.p99_us, self.p999_us, self.count
        )
    }
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("valid bounds")
}

fn fio(dir: &Path, extra: &[&str]) -> serde_json::Value {
    let file = dir.join("fio.dat");
    let out = Command::new("fio")
        .arg(format!("--filename={}", file.display()))
        .args([
            "--name=bench",
            "--direct=1",
            "--output-format=json",
            "--size=1G",
        ])
        .args(extra)
        .output()
        .expect("fio is installed (apt-get install -y fio)");
    assert!(
        out.status.success(),
        "fio failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_file(file);
    serde_json::from_slice(&out.stdout).expect("fio JSON")
}

fn fio_percentile_us(lat: &serde_json::Value, key: &str) -> f64 {
    lat["percentile"][key].as_f64().unwrap_or(f64::NAN) / 1000.0
}

/// Writes one 4 KiB block durably per operation, the way `method` makes it durable.
fn syscall_durability(dir: &Path, method: &str, phase: Duration) -> Latency {
    let path = dir.join(format!("sync-{method}.dat"));
    let mut flags = libc::O_DIRECT;
    if method == "O_DSYNC" {
        flags |= libc::O_DSYNC;
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .custom_flags(flags)
        .open(&path)
        .unwrap();
    let fd = file.as_raw_fd();
    let layout = std::alloc::Layout::from_size_align(BLOCK, BLOCK).unwrap();
    // SAFETY: a fresh aligned allocation, freed below, written only through this pointer.
    let buf = unsafe { std::alloc::alloc_zeroed(layout) };
    let blocks = 64 << 20 >> 12; // cycle over 64 MiB, preallocated
                                 // SAFETY: plain syscalls on a file descriptor we own and a buffer of BLOCK bytes.
    unsafe { libc::fallocate(fd, 0, 0, (blocks * BLOCK) as i64) };
    let mut h = histogram();
    let started = Instant::now();
    let mut i: u64 = 0;
    while started.elapsed() < phase && i < OPS_MAX {
        let pos = ((i as usize % blocks) * BLOCK) as i64;
        let t = Instant::now();
        // SAFETY: as above.
        let ok = unsafe {
            match method {
                "RWF_DSYNC" => {
                    let iov = libc::iovec {
                        iov_base: buf.cast(),
                        iov_len: BLOCK,
                    };
                    libc::pwritev2(fd, &iov, 1, pos, libc::RWF_DSYNC) == BLOCK as isize
                }
                "fdatasync" => {
                    libc::pwrite(fd, buf.cast(), BLOCK, pos) == BLOCK as isize
                        && libc::fdatasync(fd) == 0
                }
                _ => libc::pwrite(fd, buf.cast(), BLOCK, pos) == BLOCK as isize,
            }
        };
        assert!(
            ok,
            "{method} write failed: {}",
            std::io::Error::last_os_error()
        );
        h.record(t.elapsed().as_nanos() as u64).unwrap();
        i += 1;
    }
    // SAFETY: allocated above with the same layout.
    unsafe { std::alloc::dealloc(buf, layout) };
    let _ = std::fs::remove_file(path);
    Latency::of(&h)
}

fn executor<T: Send + 'static, F: std::future::Future<Output = T> + 'static>(
    f: impl FnOnce() -> F + Send + 'static,
) -> T {
    let mut builder = LocalExecutorBuilder::default().io_memory(IO_MEMORY_BYTES);
    if let Ok(us) = std::env::var("BENCH_SPIN_US") {
        // Spin before parking: a dedicated broker core would rather burn idle cycles than
        // pay the wakeup latency of a parked reactor.
        builder = builder.spin_before_park(Duration::from_micros(us.parse().expect("µs")));
    }
    if let Ok(us) = std::env::var("BENCH_PREEMPT_US") {
        // glommio submits and reaps I/O only between task-queue runs, so a busy appender
        // holds the flusher's writes for up to this long (default 100 ms). Short values
        // speed ASYNC up a lot but hang glommio 0.9.0 now and then (docs/BENCHMARKS.md).
        builder = builder.preempt_timer(Duration::from_micros(us.parse().expect("µs")));
    }
    builder.spawn(f).unwrap().join().unwrap()
}

fn glommio_write_fdatasync(dir: PathBuf, phase: Duration) -> Latency {
    executor(move || async move {
        let path = dir.join("glommio.dat");
        let file = glommio::io::DmaFile::create(&path).await.unwrap();
        file.pre_allocate(64 << 20, false).await.unwrap();
        let mut h = histogram();
        let started = Instant::now();
        let mut i: u64 = 0;
        while started.elapsed() < phase && i < OPS_MAX {
            let mut buf = file.alloc_dma_buffer(BLOCK);
            buf.as_bytes_mut().fill(1);
            let t = Instant::now();
            file.write_at(buf, (i % 16384) * BLOCK as u64)
                .await
                .unwrap();
            file.fdatasync().await.unwrap();
            h.record(t.elapsed().as_nanos() as u64).unwrap();
            i += 1;
        }
        file.close().await.unwrap();
        let _ = std::fs::remove_file(path);
        Latency::of(&h)
    })
}

fn bench_message() -> Message {
    Message {
        topic: "Bench".into(),
        queue_id: 0,
        flag: 0,
        sys_flag: 0,
        born_timestamp_ms: 1_700_000_000_000,
        born_host: "127.0.0.1:50000".parse().unwrap(),
        reconsume_times: 0,
        prepared_transaction_offset: 0,
        body: vec![b'x'; RECORD_BYTES - RECORD_OVERHEAD_BYTES].into(),
        properties: Default::default(),
    }
}

fn shard_config(dir: &Path, mode: FlushMode) -> ShardConfig {
    let _ = std::fs::remove_dir_all(dir);
    let mut config = ShardConfig::new(dir, 0, "127.0.0.1:10911".parse().unwrap());
    config.log.flush_mode = mode;
    if let Ok(bytes) = std::env::var("BENCH_ZERO_AHEAD_BYTES") {
        config.log.zero_ahead_bytes = bytes.parse().expect("a byte count");
    }
    if let Ok(group) = std::env::var("BENCH_GROUP_BYTES") {
        config.log.group_commit_bytes_max = group.parse().expect("a byte count");
    }
    config
}

/// CPU time this thread has used: tells whether a phase was CPU-bound on the shared host.
fn thread_cpu() -> Duration {
    // SAFETY: getrusage fills the struct we pass; RUSAGE_THREAD is Linux-specific.
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_THREAD, &mut usage);
        usage
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

struct EngineRun {
    /// Share of one core the shard's thread used during the phase.
    cpu_share: f64,
    bytes_per_s: f64,
    records: u64,
    flushes: u64,
    latency: Option<Latency>,
    /// Pull-style reads of 32 records from offset 0, bytes per second.
    read_bytes_per_s: Option<f64>,
}

/// ASYNC_FLUSH: one appender calling with `batch` messages at a time (1: single sends), the
/// flusher in its own task; the clock stops after the final flush, so the throughput counts
/// durable bytes. Batched runs then read the queue back from offset 0 (mostly cold).
fn engine_async(dir: PathBuf, phase: Duration, durability: Durability, batch: usize) -> EngineRun {
    executor(move || async move {
        let config = shard_config(&dir, FlushMode::AsyncFlush);
        let shard = Rc::new(
            Shard::open(config, RealDisk { durability }, RealClock)
                .await
                .unwrap(),
        );
        let flusher = glommio::spawn_local({
            let shard = shard.clone();
            async move { shard.run_flusher().await }
        })
        .detach();
        let messages = vec![bench_message(); batch];
        let started = Instant::now();
        let cpu_started = thread_cpu();
        let mut records = 0;
        let mut since_yield = 0;
        while started.elapsed() < phase && records < OPS_MAX {
            let results = shard.append_batch(&messages).await.unwrap();
            assert_eq!(results[0].wrote_bytes, RECORD_BYTES);
            records += batch as u64;
            since_yield += batch as u64;
            // A broker's appends arrive between socket reads, which yield; so does this loop,
            // letting the flusher submit its writes while appends continue.
            if since_yield >= YIELD_EVERY_APPENDS {
                since_yield = 0;
                futures_lite::future::yield_now().await;
            }
        }
        shard.flush().await.unwrap();
        let elapsed = started.elapsed().as_secs_f64();
        flusher.cancel();
        let run = EngineRun {
            cpu_share: (thread_cpu() - cpu_started).as_secs_f64() / elapsed,
            bytes_per_s: (records * RECORD_BYTES as u64) as f64 / elapsed,
            records,
            flushes: shard.log_stats().flush_count,
            latency: None,
            read_bytes_per_s: if batch > 1 {
                Some(read_back(&shard, phase).await)
            } else {
                None
            },
        };
        drop(shard);
        let _ = std::fs::remove_dir_all(&dir);
        run
    })
}

/// Reads the bench queue from offset 0 in pulls of [`BATCH_MESSAGES`] records until its end
/// or the phase time; returns bytes per second.
async fn read_back(shard: &Shard<RealDisk, RealClock>, phase: Duration) -> f64 {
    let started = Instant::now();
    let (mut offset, mut bytes) = (0, 0);
    while started.elapsed() < phase && offset < shard.max_offset("Bench", 0) {
        let request = QueueReadRequest {
            topic: "Bench",
            queue_id: 0,
            offset,
            max_count: BATCH_MESSAGES,
            max_bytes: 256 << 10,
            tag_filter: None,
            record_filter: None,
        };
        let read = shard.read_queue(request).await.unwrap();
        assert!(!read.records.is_empty());
        bytes += read.records.iter().map(|r| r.len()).sum::<usize>();
        offset = read.next_offset;
    }
    bytes as f64 / started.elapsed().as_secs_f64()
}

/// SYNC_FLUSH: 64 appenders, each waiting for its ack before the next append.
fn engine_sync(dir: PathBuf, phase: Duration, durability: Durability) -> EngineRun {
    executor(move || async move {
        let config = shard_config(&dir, FlushMode::SyncFlush);
        let shard = Rc::new(
            Shard::open(config, RealDisk { durability }, RealClock)
                .await
                .unwrap(),
        );
        let latencies = Rc::new(RefCell::new(histogram()));
        let started = Instant::now();
        let cpu_started = thread_cpu();
        let tasks: Vec<_> = (0..SYNC_APPENDERS)
            .map(|_| {
                let (shard, latencies) = (shard.clone(), latencies.clone());
                glommio::spawn_local(async move {
                    let message = bench_message();
                    let mut records = 0u64;
                    while started.elapsed() < phase && records < OPS_MAX {
                        let t = Instant::now();
                        shard.append(&message).await.unwrap();
                        let ns = t.elapsed().as_nanos() as u64;
                        latencies.borrow_mut().record(ns).unwrap();
                        records += 1;
                    }
                    records
                })
            })
            .collect();
        let mut records = 0;
        for task in tasks {
            records += task.await;
        }
        let elapsed = started.elapsed().as_secs_f64();
        let run = EngineRun {
            cpu_share: (thread_cpu() - cpu_started).as_secs_f64() / elapsed,
            bytes_per_s: (records * RECORD_BYTES as u64) as f64 / elapsed,
            records,
            flushes: shard.log_stats().flush_count,
            latency: Some(Latency::of(&latencies.borrow())),
            read_bytes_per_s: None,
        };
        drop(shard);
        let _ = std::fs::remove_dir_all(&dir);
        run
    })
}

fn mib(bytes_per_s: f64) -> f64 {
    bytes_per_s / (1 << 20) as f64
}

/// fio and the raw durable-write methods: prints them, returns fio's sequential write
/// bandwidth (bytes/s) and the raw pwrite + fdatasync p99 (µs).
fn physical_limits(args: &Args) -> (f64, f64) {
    let secs = args.phase.as_secs().max(1).to_string();
    let runtime = format!("--runtime={secs}");
    let bw = fio(
        &args.dir,
        &[
            "--rw=write",
            "--bs=1M",
            "--ioengine=io_uring",
            "--iodepth=8",
            "--time_based",
            &runtime,
        ],
    );
    let fio_bw = bw["jobs"][0]["write"]["bw_bytes"].as_f64().unwrap();
    let lat = fio(
        &args.dir,
        &[
            "--rw=write",
            "--bs=4k",
            "--ioengine=sync",
            "--fdatasync=1",
            "--time_based",
            &runtime,
        ],
    );
    let sync_lat = &lat["jobs"][0]["sync"]["lat_ns"];
    let write_lat = &lat["jobs"][0]["write"]["clat_ns"];

    let methods: Vec<(&str, Latency)> = ["fdatasync", "RWF_DSYNC", "O_DSYNC"]
        .into_iter()
        .map(|m| (m, syscall_durability(&args.dir, m, args.phase)))
        .collect();
    let glommio = glommio_write_fdatasync(args.dir.clone(), args.phase);
    let raw_p99 = methods[0].1.p99_us;

    println!("\n## Physical limits");
    println!("| measure | value |\n|---|---|");
    println!(
        "| fio O_DIRECT seq write, 1 MiB, io_uring depth 8 | {:.0} MiB/s |",
        mib(fio_bw)
    );
    println!(
        "| fio 4 KiB write clat p50 / p99 | {:.0} / {:.0} µs |",
        fio_percentile_us(write_lat, "50.000000"),
        fio_percentile_us(write_lat, "99.000000")
    );
    println!(
        "| fio fdatasync lat p50 / p99 / p99.9 | {:.0} / {:.0} / {:.0} µs |",
        fio_percentile_us(sync_lat, "50.000000"),
        fio_percentile_us(sync_lat, "99.000000"),
        fio_percentile_us(sync_lat, "99.900000")
    );
    println!("\n## Durable 4 KiB O_DIRECT write, per method (µs)");
    println!("| method | p50 | p99 | p99.9 | ops |\n|---|---|---|---|---|");
    for (name, latency) in &methods {
        println!("{}", latency.row(&format!("syscalls: pwrite + {name}")));
    }
    println!("{}", glommio.row("glommio DMA write + fdatasync"));

    (fio_bw, raw_p99)
}

fn main() {
    let args = args();
    std::fs::create_dir_all(&args.dir).unwrap();
    let secs = args.phase.as_secs().max(1).to_string();
    println!(
        "# storage benchmark ({}s per phase, dir {})",
        secs,
        args.dir.display()
    );

    let (fio_bw, raw_p99) = if args.engine_only {
        (f64::NAN, f64::NAN)
    } else {
        physical_limits(&args)
    };
    println!("\n## Engine (1 KiB records)");
    println!("| durability | ASYNC_FLUSH append | SYNC_FLUSH, {SYNC_APPENDERS} appenders | SYNC/ASYNC | SYNC ack p50 / p99 / p99.9 (µs) | shard CPU async / sync |");
    println!("|---|---|---|---|---|---|");
    for durability in [
        Durability::Fdatasync,
        Durability::WriteThrough,
        Durability::RwfDsync,
    ] {
        let a = engine_async(args.dir.join("async"), args.phase, durability, 1);
        let s = engine_sync(args.dir.join("sync"), args.phase, durability);
        let l = s.latency.as_ref().expect("measured");
        println!(
            "| {durability:?} | {:.0} MiB/s = {:.0} % of fio ({} flushes) | {:.0} MiB/s ({:.1} rec/flush) | {:.2}× | {:.0} / {:.0} / {:.0} | {:.0} % / {:.0} % |",
            mib(a.bytes_per_s),
            100.0 * a.bytes_per_s / fio_bw,
            a.flushes,
            mib(s.bytes_per_s),
            s.records as f64 / s.flushes.max(1) as f64,
            s.bytes_per_s / a.bytes_per_s,
            l.p50_us,
            l.p99_us,
            l.p999_us,
            100.0 * a.cpu_share,
            100.0 * s.cpu_share,
        );
    }
    let batched = engine_async(
        args.dir.join("async"),
        args.phase,
        Durability::Fdatasync,
        BATCH_MESSAGES,
    );
    println!(
        "\nASYNC_FLUSH, Fdatasync, batches of {BATCH_MESSAGES} (SEND_BATCH_MESSAGE): {:.0} MiB/s = {:.0} % of fio, shard CPU {:.0} %",
        mib(batched.bytes_per_s),
        100.0 * batched.bytes_per_s / fio_bw,
        100.0 * batched.cpu_share
    );
    println!(
        "Reading that queue back from offset 0, {BATCH_MESSAGES} records per pull (mostly cold, DMA reads): {:.0} MiB/s",
        mib(batched.read_bytes_per_s.expect("measured"))
    );
    println!("\nTargets: ASYNC ≥ 70 % of fio; SYNC ≥ 0.7× ASYNC; SYNC ack p99 ≤ 3 × raw fdatasync p99 = {:.0} µs.", 3.0 * raw_p99);
    let _ = std::fs::remove_dir_all(&args.dir);
}
