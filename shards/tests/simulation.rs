//! Deterministic simulation: seeded random workloads of appends, reads, flushes, persists,
//! full disks, failing fsyncs, retention steps (the clock jumping ahead; crashes armed inside
//! them), topic deletions and crashes on the simulated disk. After every crash: every append
//! reported durable and not removed by retention reads back byte-identical (by physical offset
//! and by queue offset), every record served is whole, one we submitted, not of a deleted
//! topic and not below what retention reported removed, and queue offsets are contiguous
//! from each queue's min offset. A removal for expiry only ever takes records stored
//! `fileReservedTime` ago or more.
//!
//! A failure prints its seed; replay it with
//! `SIM_SEED=<seed> cargo test -p ringmq-shards --test simulation -- --nocapture`.
//! `SIM_SEEDS=<n>` changes how many seeds run (default below).

mod common;

use bytes::Bytes;
use common::{config, message};
use futures_lite::future::{block_on, zip};
use ringmq_shards::record::{Message, RecordView};
use ringmq_shards::{Clock, FlushMode, QueueReadRequest, Shard, SimClock, SimDisk, SimRng};
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// Seeds per `cargo test` run: enough to hit every fault path, a few seconds in debug.
const SEEDS_DEFAULT: u64 = 200;
/// Operations per seed.
const OPS_PER_SEED: usize = 250;
const TOPICS: [&str; 2] = ["TopicA", "%RETRY%group"];
const QUEUES: i32 = 3;
const DISK_BYTES: u64 = 256 << 20;
/// `fileReservedTime` of the simulated shards: the clock jumps by up to twice this.
const RESERVED_MS: i64 = 2_000;

type SimShard = Shard<SimDisk, SimClock>;

/// Prints the seed if the test panics while it is alive.
struct SeedGuard(u64);

impl Drop for SeedGuard {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "simulation failed for seed {0}; replay: SIM_SEED={0} cargo test -p ringmq-shards --test simulation -- --nocapture",
                self.0
            );
        }
    }
}

#[derive(Clone)]
struct Stored {
    physical: i64,
    store_ms: i64,
    topic: String,
    queue_id: i32,
    queue_offset: i64,
    bytes: Bytes,
}

struct World {
    rng: SimRng,
    disk: SimDisk,
    clock: SimClock,
    mode: FlushMode,
    segment_bytes: u64,
    fsync_fail_per_mille: u32,
    /// Every message ever submitted, by the sequence number at the start of its body.
    submitted: HashMap<u64, Message>,
    seq_next: u64,
    /// Appends known durable: reported so under SYNC_FLUSH, or flushed since.
    durable: Vec<Stored>,
    /// ASYNC_FLUSH appends acknowledged but not yet known durable.
    unflushed: Vec<Stored>,
    /// Consumer offset values a crash may leave for group "g" on TopicA/0.
    offset_candidates: Vec<Option<i64>>,
    crashes: u32,
    clean_forcibly: bool,
    /// Local offset below which retention reported everything removed: never served again.
    removed_below: u64,
    /// Local offset below which a failed retention step may have removed records.
    at_risk_below: u64,
    /// Sequence numbers of messages of deleted topics: never served again.
    deleted: HashSet<u64>,
    removals: u32,
    deletions: u32,
}

impl World {
    fn new_message(&mut self) -> Message {
        let topic = TOPICS[self.rng.below(2) as usize];
        let queue_id = self.rng.below(QUEUES as u64) as i32;
        let seq = self.seq_next;
        self.seq_next += 1;
        let len = self.rng.below(700) as usize;
        let mut body = format!("{seq};").into_bytes();
        body.extend((0..len).map(|i| (seq as usize * 31 + i) as u8));
        let tag = format!("tag{}", seq % 3);
        let keys = format!("key{seq} common");
        let message = message(topic, queue_id, &body, Some(&tag), Some(&keys));
        self.submitted.insert(seq, message.clone());
        message
    }

    async fn open(&self) -> SimShard {
        // Recovery runs on a healthy disk; faults come back for the workload.
        self.disk.set_fsync_fail_per_mille(0);
        self.disk.set_capacity(DISK_BYTES);
        let mut cfg = config(Path::new("/shard"), self.mode, self.segment_bytes);
        cfg.retention.file_reserved = std::time::Duration::from_millis(RESERVED_MS as u64);
        cfg.retention.clean_forcibly_enable = self.clean_forcibly;
        let shard = Shard::open(cfg, self.disk.clone(), self.clock.clone())
            .await
            .expect("recovery must succeed on a healthy disk");
        self.disk
            .set_fsync_fail_per_mille(self.fsync_fail_per_mille);
        shard
    }

    /// Records the results of a successful append.
    async fn appended(&mut self, shard: &SimShard, results: Vec<ringmq_shards::AppendResult>) {
        for r in results {
            let bytes = match shard.read_at(r.physical_offset).await {
                Ok(bytes) => bytes,
                Err(e) => panic!(
                    "acknowledged record readable: {e} (log min {}, segments {:?}, end {})",
                    shard.log_min(),
                    shard.log_segments(),
                    shard.log_end()
                ),
            };
            let view = RecordView::parse(bytes.clone()).unwrap();
            assert_eq!(view.queue_offset(), r.queue_offset);
            assert_eq!(view.store_timestamp_ms(), r.store_timestamp_ms);
            assert_eq!(bytes.len(), r.wrote_bytes);
            self.check_submitted(&view);
            let stored = Stored {
                physical: r.physical_offset,
                store_ms: r.store_timestamp_ms,
                topic: view.topic().to_owned(),
                queue_id: view.queue_id(),
                queue_offset: r.queue_offset,
                bytes,
            };
            match self.mode {
                FlushMode::SyncFlush => self.durable.push(stored),
                FlushMode::AsyncFlush => self.unflushed.push(stored),
            }
        }
    }

    /// A served record must be one we submitted, whole and unchanged.
    fn check_submitted(&self, view: &RecordView) -> u64 {
        assert!(view.body_crc_ok(), "BODYCRC mismatch");
        let body = view.body();
        let end = body
            .iter()
            .position(|b| *b == b';')
            .expect("sequence prefix");
        let seq: u64 = std::str::from_utf8(&body[..end]).unwrap().parse().unwrap();
        assert!(
            !self.deleted.contains(&seq),
            "served a message of a deleted topic"
        );
        assert!(
            local(view.physical_offset()) >= self.removed_below,
            "served a record retention removed"
        );
        let sent = &self.submitted[&seq];
        assert_eq!(view.topic(), sent.topic);
        assert_eq!(view.queue_id(), sent.queue_id);
        assert_eq!(view.body(), sent.body);
        assert_eq!(view.properties().as_bytes(), &sent.properties[..]);
        seq
    }

    /// Reads every queue in full and checks it against the model; returns all records.
    async fn verify(&mut self, shard: &SimShard) -> Vec<Stored> {
        let mut all = Vec::new();
        let mut seen = HashSet::new();
        for topic in TOPICS {
            for queue_id in 0..QUEUES {
                let max = shard.max_offset(topic, queue_id);
                let mut offset = shard.min_offset(topic, queue_id);
                while offset < max {
                    let request = QueueReadRequest {
                        topic,
                        queue_id,
                        offset,
                        max_count: 1 + self.rng.below(50) as usize,
                        max_bytes: 1 + self.rng.below(20_000) as usize,
                        tag_filter: None,
                        record_filter: None,
                    };
                    let read = shard.read_queue(request).await.unwrap();
                    assert_eq!(read.max_offset, max);
                    assert!(!read.records.is_empty(), "no progress at {offset} of {max}");
                    for bytes in read.records {
                        let view = RecordView::parse(bytes.clone()).expect("served a torn record");
                        assert_eq!(view.queue_offset(), offset, "queue offsets not contiguous");
                        assert_eq!((view.topic(), view.queue_id()), (topic, queue_id));
                        assert!(seen.insert(self.check_submitted(&view)), "a message twice");
                        all.push(Stored {
                            physical: view.physical_offset(),
                            store_ms: view.store_timestamp_ms(),
                            topic: topic.to_owned(),
                            queue_id,
                            queue_offset: offset,
                            bytes,
                        });
                        offset += 1;
                    }
                    assert_eq!(read.next_offset, offset);
                }
            }
        }
        let by_physical: HashMap<i64, &Stored> = all.iter().map(|s| (s.physical, s)).collect();
        for durable in &self.durable {
            if local(durable.physical) < self.at_risk_below {
                continue;
            }
            let found = by_physical
                .get(&durable.physical)
                .unwrap_or_else(|| panic!("durable record at {} lost", durable.physical));
            assert_eq!(found.bytes, durable.bytes, "durable record changed");
            assert_eq!(
                (&found.topic, found.queue_id, found.queue_offset),
                (&durable.topic, durable.queue_id, durable.queue_offset)
            );
            assert_eq!(
                shard.read_at(durable.physical).await.unwrap(),
                durable.bytes
            );
        }
        all
    }
}

fn local(physical: i64) -> u64 {
    (physical as u64) & ((1 << 48) - 1)
}

impl World {
    /// One retention step, after the clock jumped (sometimes past the reserved time) and
    /// sometimes with a crash armed inside it. Returns whether the disk crashed.
    async fn retention(&mut self, shard: &SimShard) -> bool {
        self.clock
            .advance(self.rng.below(2 * RESERVED_MS as u64) as i64);
        let crashes = self.disk.crashes();
        if self.rng.chance(200) {
            self.disk.set_crash_after_ops(Some(self.rng.below(12)));
        }
        let first_end = shard.log_min() + self.segment_bytes;
        let outcome = shard.retention_step().await;
        self.disk.set_crash_after_ops(None);
        match outcome {
            Ok(Some(removal)) => {
                assert_eq!(removal.segment_end, first_end);
                let now = self.clock.now_ms();
                let gone = |s: &Stored| local(s.physical) < removal.segment_end;
                if let ringmq_shards::RemovalReason::Expired { .. } = removal.reason {
                    for s in self
                        .durable
                        .iter()
                        .chain(&self.unflushed)
                        .filter(|s| gone(s))
                    {
                        assert!(
                            s.store_ms + RESERVED_MS <= now,
                            "an unexpired record was removed for expiry"
                        );
                    }
                }
                self.durable.retain(|s| !gone(s));
                self.unflushed.retain(|s| !gone(s));
                self.removed_below = self.removed_below.max(removal.segment_end);
                self.removals += 1;
            }
            Ok(None) => {}
            Err(_) => self.at_risk_below = self.at_risk_below.max(first_end),
        }
        self.disk.crashes() != crashes
    }

    /// Deletes the retry topic, on a healthy disk (a deletion that fails half-way leaves
    /// memory and disk apart until the next persist, which this model does not follow).
    async fn delete_topic(&mut self, shard: &SimShard) {
        let topic = TOPICS[1];
        self.disk.set_fsync_fail_per_mille(0);
        self.disk.set_capacity(DISK_BYTES);
        shard
            .delete_topic(topic)
            .await
            .expect("deletion on a healthy disk");
        self.disk
            .set_fsync_fail_per_mille(self.fsync_fail_per_mille);
        for (seq, message) in &self.submitted {
            if message.topic == topic {
                self.deleted.insert(*seq);
            }
        }
        self.durable.retain(|s| s.topic != topic);
        self.unflushed.retain(|s| s.topic != topic);
        self.deletions += 1;
    }

    /// Reopens after a crash and checks everything; returns the new shard.
    async fn recover(&mut self, coverage: &mut Coverage) -> SimShard {
        self.crashes += 1;
        let shard = self.open().await;
        let all = self.verify(&shard).await;
        coverage.durable_checked += self.durable.len();
        let offset = shard.consumer_offset("g", TOPICS[0], 0);
        assert!(
            self.offset_candidates.contains(&offset),
            "consumer offset {offset:?}"
        );
        self.offset_candidates = vec![offset];
        // Recovery made everything that survived durable.
        self.durable = all;
        self.unflushed.clear();
        self.at_risk_below = 0;
        shard
    }
}

/// Totals over a seed, to show the workload did what it claims.
#[derive(Default, Debug)]
struct Coverage {
    crashes: u32,
    durable_checked: usize,
    removals: u32,
    deletions: u32,
}

async fn run_seed(seed: u64) -> Coverage {
    let mut rng = SimRng::new(seed);
    let mode = if rng.chance(500) {
        FlushMode::SyncFlush
    } else {
        FlushMode::AsyncFlush
    };
    let segment_bytes = [8u64 << 10, 16 << 10, 64 << 10][rng.below(3) as usize];
    let fsync_fail_per_mille = [0, 0, 30, 150][rng.below(4) as usize] as u32;
    let clean_forcibly = rng.chance(500);
    let mut world = World {
        disk: SimDisk::new(rng.next_u64(), DISK_BYTES),
        clock: SimClock::new(1_700_000_000_000),
        rng,
        mode,
        segment_bytes,
        fsync_fail_per_mille,
        submitted: HashMap::new(),
        seq_next: 0,
        durable: Vec::new(),
        unflushed: Vec::new(),
        offset_candidates: vec![None],
        crashes: 0,
        clean_forcibly,
        removed_below: 0,
        at_risk_below: 0,
        deleted: HashSet::new(),
        removals: 0,
        deletions: 0,
    };
    let mut shard = world.open().await;
    let mut coverage = Coverage::default();
    for _ in 0..OPS_PER_SEED {
        world.clock.advance(world.rng.below(5) as i64);
        match world.rng.below(100) {
            0..=34 => {
                let message = world.new_message();
                if let Ok(r) = shard.append(&message).await {
                    world.appended(&shard, vec![r]).await;
                }
            }
            35..=44 => {
                let batch: Vec<Message> = (0..1 + world.rng.below(4))
                    .map(|_| world.new_message())
                    .collect();
                if let Ok(results) = shard.append_batch(&batch).await {
                    world.appended(&shard, results).await;
                }
            }
            45..=54 => {
                // Concurrent appends: under SYNC_FLUSH they share group commits.
                let (a, b) = (world.new_message(), world.new_message());
                let (ra, rb) = zip(shard.append(&a), shard.append(&b)).await;
                for r in [ra, rb].into_iter().flatten() {
                    world.appended(&shard, vec![r]).await;
                }
            }
            55..=62 => {
                let flushed = shard.flush().await.is_ok();
                if flushed {
                    world.durable.append(&mut world.unflushed);
                }
            }
            63..=72 => {
                let topic = TOPICS[world.rng.below(2) as usize];
                let queue_id = world.rng.below(QUEUES as u64) as i32;
                let max = shard.max_offset(topic, queue_id);
                let offset = world.rng.below(max as u64 + 2) as i64;
                let request = QueueReadRequest {
                    topic,
                    queue_id,
                    offset,
                    max_count: 16,
                    max_bytes: 8192,
                    tag_filter: None,
                    record_filter: None,
                };
                let read = shard.read_queue(request).await.unwrap();
                for (i, bytes) in read.records.into_iter().enumerate() {
                    let view = RecordView::parse(bytes).expect("served a torn record");
                    assert_eq!(view.queue_offset(), offset + i as i64);
                    world.check_submitted(&view);
                }
            }
            73..=77 => {
                let persisted = shard.persist().await.is_ok();
                if persisted {
                    let current = shard.consumer_offset("g", TOPICS[0], 0);
                    world.offset_candidates = vec![current];
                }
            }
            78..=80 => {
                let value = world.rng.below(1000) as i64;
                shard.set_consumer_offset("g", TOPICS[0], 0, value).unwrap();
                world.offset_candidates.push(Some(value));
            }
            81..=84 => {
                // Fill the disk (a little headroom or none), or give the space back.
                let capacity = if world.rng.chance(500) {
                    world.disk.used_bytes() + world.rng.below(3 * world.segment_bytes)
                } else {
                    DISK_BYTES
                };
                world.disk.set_capacity(capacity);
            }
            85..=90 => {
                drop(shard);
                world.disk.crash();
                shard = world.recover(&mut coverage).await;
            }
            91..=96 => {
                let crashed = world.retention(&shard).await;
                if crashed {
                    drop(shard);
                    shard = world.recover(&mut coverage).await;
                }
            }
            97 => world.delete_topic(&shard).await,
            _ => {}
        }
    }
    drop(shard);
    world.disk.crash();
    let shard = world.open().await;
    coverage.durable_checked += world.durable.len();
    world.verify(&shard).await;
    coverage.crashes = world.crashes + 1;
    coverage.removals = world.removals;
    coverage.deletions = world.deletions;
    coverage
}

fn seeds() -> Vec<u64> {
    if let Ok(seed) = std::env::var("SIM_SEED") {
        return vec![seed.parse().expect("SIM_SEED is a number")];
    }
    let count = std::env::var("SIM_SEEDS")
        .map_or(SEEDS_DEFAULT, |n| n.parse().expect("SIM_SEEDS is a number"));
    (0..count).collect()
}

#[test]
fn seeded_workloads_survive_crashes() {
    let mut total = Coverage::default();
    for seed in seeds() {
        let _guard = SeedGuard(seed);
        let coverage = block_on(run_seed(seed));
        total.crashes += coverage.crashes;
        total.durable_checked += coverage.durable_checked;
        total.removals += coverage.removals;
        total.deletions += coverage.deletions;
    }
    println!("simulation coverage: {total:?}");
    assert!(
        total.crashes > 0 && total.durable_checked > 0,
        "the workload must crash and check"
    );
    if seeds().len() >= 50 {
        assert!(
            total.removals > 0 && total.deletions > 0,
            "the workload must remove segments and delete topics"
        );
    }
}
