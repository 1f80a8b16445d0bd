//! Retention and topic deletion: time retention on the simulated clock (no sleeping), forced
//! retention by disk usage on the simulated disk and on real files (the real partition's
//! statvfs), min offsets, what is no longer served, lagging groups, crash safety of a removal
//! and of a deletion, and a deleted topic starting again at offset 0.

mod common;

use common::{all, config, message};
use futures_lite::future::block_on;
use glommio::LocalExecutorBuilder;
use ringmq_shards::record::RecordView;
use ringmq_shards::{
    Clock, Disk, FlushMode, KeyQuery, QueueReadRequest, RealClock, RealDisk, RemovalReason, Shard,
    SimClock, SimDisk, StoreError,
};
use std::path::Path;
use std::time::Duration;

type SimShard = Shard<SimDisk, SimClock>;

const DIR: &str = "/shard";
const SEGMENT: u64 = 8 << 10;
const HOUR_MS: i64 = 3600 * 1000;
/// The default `fileReservedTime`.
const RESERVED_MS: i64 = 72 * HOUR_MS;

async fn open(disk: &SimDisk, clock: &SimClock) -> SimShard {
    let cfg = config(Path::new(DIR), FlushMode::SyncFlush, SEGMENT);
    Shard::open(cfg, disk.clone(), clock.clone()).await.unwrap()
}

/// Appends `n` messages of ~500 bytes round-robin over queues 0 and 1 of `topic`, `step_ms`
/// apart; returns their physical offsets.
async fn fill(shard: &SimShard, clock: &SimClock, topic: &str, n: usize, step_ms: i64) -> Vec<i64> {
    let mut physical = Vec::new();
    for i in 0..n {
        clock.advance(step_ms);
        let body = format!("{topic}-{i}-{}", "x".repeat(480));
        let keys = format!("k{i} all");
        let msg = message(
            topic,
            (i % 2) as i32,
            body.as_bytes(),
            Some("t"),
            Some(&keys),
        );
        physical.push(shard.append(&msg).await.unwrap().physical_offset);
    }
    physical
}

async fn exists(disk: &SimDisk, path: &str) -> bool {
    disk.exists(&Path::new(DIR).join(path)).await.unwrap()
}

fn local(physical: i64) -> u64 {
    (physical as u64) & ((1 << 48) - 1)
}

fn key_query(topic: &str) -> KeyQuery<'_> {
    KeyQuery {
        topic,
        key: "all",
        begin_ms: 0,
        end_ms: i64::MAX,
        max: 64,
    }
}

#[test]
fn expired_segments_go_oldest_first_one_per_step_and_the_min_offsets_move() {
    block_on(async {
        let disk = SimDisk::new(1, 64 << 20);
        let clock = SimClock::new(1_700_000_000_000);
        let shard = open(&disk, &clock).await;
        // ~8 segments of records one minute apart, then a group that consumed 3 of queue 0.
        let physical = fill(&shard, &clock, "T", 120, 60_000).await;
        shard.set_consumer_offset("g", "T", 0, 3).unwrap();
        shard.persist().await.unwrap();
        let segments = shard.log_segments();
        assert!(segments.len() >= 6, "{segments:?}");
        assert_eq!(
            shard.retention_step().await.unwrap(),
            None,
            "nothing expired yet"
        );

        // 72 h after the first record: the first segment's newest record is not 72 h old yet.
        let first_at = 1_700_000_000_000 + 60_000;
        clock.advance(first_at + RESERVED_MS - clock.now_ms() - 1);
        assert_eq!(shard.retention_step().await.unwrap(), None);
        // Once the newest record of segment 0 is 72 h old, that segment (and only it) goes.
        let in_first = physical.iter().filter(|p| local(**p) < SEGMENT).count() as i64;
        clock.advance(in_first * 60_000);
        let removal = shard
            .retention_step()
            .await
            .unwrap()
            .expect("segment 0 expired");
        assert_eq!((removal.segment, removal.segment_end), (0, SEGMENT));
        assert!(matches!(removal.reason, RemovalReason::Expired { .. }));
        assert_eq!(removal.entries, in_first as u64);
        assert_eq!(shard.log_segments(), segments[1..]);
        assert_eq!(shard.log_min(), SEGMENT);
        assert_eq!(
            shard.retention_step().await.unwrap(),
            None,
            "segment 1 not due yet"
        );

        // The queues start after it; what went is not served by any path.
        let min0 = shard.min_offset("T", 0);
        let min1 = shard.min_offset("T", 1);
        assert_eq!(min0 + min1, in_first);
        assert_eq!(shard.max_offset("T", 0), 60);
        let below = shard
            .read_queue(QueueReadRequest {
                offset: 0,
                ..all("T", 0)
            })
            .await
            .unwrap();
        assert!(below.records.is_empty());
        assert_eq!((below.min_offset, below.next_offset), (min0, 0));
        let from_min = shard
            .read_queue(QueueReadRequest {
                offset: min0,
                ..all("T", 0)
            })
            .await
            .unwrap();
        let first = RecordView::parse(from_min.records[0].clone()).unwrap();
        assert_eq!(first.queue_offset(), min0);
        assert!(local(first.physical_offset()) >= SEGMENT);
        assert!(matches!(
            shard.read_at(physical[0]).await,
            Err(StoreError::NoSuchRecord(_))
        ));
        let found = shard.query_by_key(key_query("T")).await.unwrap();
        assert!(found
            .iter()
            .all(|r| local(RecordView::parse(r.clone()).unwrap().physical_offset()) >= SEGMENT));
        assert!(!exists(&disk, "commitlog/00000000000000000000").await);
        assert!(!exists(&disk, "index/00000000000000000000.hits").await);
        assert!(!exists(&disk, "index/00000000000000000000.sealed").await);
        // The next segment's index: sealed once the log left it, else still appended to.
        assert!(
            exists(&disk, &format!("index/{SEGMENT:020}.hits")).await
                || exists(&disk, &format!("index/{SEGMENT:020}.sealed")).await
        );
        // Searching by time starts at the min for a time before everything retained.
        assert_eq!(shard.search_offset_by_time("T", 0, 0).await.unwrap(), min0);

        // The group that had consumed 3 of queue 0 lost the rest below the new min.
        assert_eq!(removal.lagging.len(), 1);
        let lag = &removal.lagging[0];
        assert_eq!(
            (lag.group.as_str(), lag.queue_id, lag.committed),
            ("g", 0, 3)
        );
        assert_eq!(lag.min_offset, min0);
        assert_eq!(removal.unconsumed, (min0 - 3) as u64);
        let stats = shard.retention_stats();
        assert_eq!((stats.segments_removed, stats.segments_forced), (1, 0));
        assert_eq!(stats.messages_unconsumed, (min0 - 3) as u64);

        // Far in the future every sealed segment expires, one per step; the active stays.
        clock.advance(10 * RESERVED_MS);
        let mut removed = 1;
        while shard.retention_step().await.unwrap().is_some() {
            removed += 1;
        }
        assert_eq!(removed, segments.len() - 1);
        assert_eq!(shard.log_segments(), [*segments.last().unwrap()]);
        // Queue offsets continue after a trim, also across a reopen.
        let (min0, max0) = (shard.min_offset("T", 0), shard.max_offset("T", 0));
        drop(shard);
        disk.crash();
        let shard = open(&disk, &clock).await;
        assert_eq!(
            (shard.min_offset("T", 0), shard.max_offset("T", 0)),
            (min0, max0)
        );
        let next = fill(&shard, &clock, "T", 2, 1).await;
        let read = shard
            .read_queue(QueueReadRequest {
                offset: max0,
                ..all("T", 0)
            })
            .await
            .unwrap();
        let view = RecordView::parse(read.records[0].clone()).unwrap();
        assert_eq!(
            (view.queue_offset(), view.physical_offset()),
            (max0, next[0])
        );
    });
}

#[test]
fn a_segment_stays_until_the_checkpoint_and_the_flush_are_past_it() {
    block_on(async {
        let disk = SimDisk::new(2, 64 << 20);
        let clock = SimClock::new(1_000);
        let mut cfg = config(Path::new(DIR), FlushMode::AsyncFlush, SEGMENT);
        cfg.retention.file_reserved = Duration::ZERO;
        let shard = Shard::open(cfg, disk.clone(), clock.clone()).await.unwrap();
        fill(&shard, &clock, "T", 40, 1).await;
        assert!(shard.log_segments().len() > 2);
        // Nothing flushed: the durable boundary (and any checkpoint) is still in segment 0.
        assert_eq!(shard.retention_step().await.unwrap(), None);
        shard.flush().await.unwrap();
        assert!(shard.retention_step().await.unwrap().is_some());
    });
}

#[test]
fn a_crash_at_any_point_of_a_removal_keeps_every_retained_record() {
    let mut crashed = 0;
    for crash_at in 0..40 {
        block_on(async {
            let disk = SimDisk::new(crash_at, 64 << 20);
            let clock = SimClock::new(1_000);
            let shard = open(&disk, &clock).await;
            let physical = fill(&shard, &clock, "T", 60, 1).await;
            shard.persist().await.unwrap();
            clock.advance(RESERVED_MS + 1);
            disk.set_crash_after_ops(Some(crash_at));
            let outcome = shard.retention_step().await;
            disk.set_crash_after_ops(None);
            crashed += u64::from(outcome.is_err());
            drop(shard);
            disk.crash();
            let shard = open(&disk, &clock).await;
            for queue_id in 0..2 {
                let queue: Vec<i64> = physical
                    .iter()
                    .copied()
                    .skip(queue_id as usize)
                    .step_by(2)
                    .collect();
                let in_first = queue.iter().filter(|p| local(**p) < SEGMENT).count() as i64;
                let min = shard.min_offset("T", queue_id);
                // Trimmed or not, never half-way; a reported removal stays done.
                assert!(
                    min == 0 || min == in_first,
                    "crash point {crash_at}: min {min}"
                );
                assert!(
                    outcome.is_err() || min == in_first,
                    "crash point {crash_at}"
                );
                let read = shard.read_queue(QueueReadRequest {
                    offset: min,
                    ..all("T", queue_id)
                });
                let served: Vec<i64> = read
                    .await
                    .unwrap()
                    .records
                    .iter()
                    .map(|r| RecordView::parse(r.clone()).unwrap().physical_offset())
                    .collect();
                assert_eq!(served, queue[min as usize..], "crash point {crash_at}");
            }
            // A later step finishes what the crash interrupted.
            clock.advance(1);
            while shard.retention_step().await.unwrap().is_some() {}
            assert!(shard.log_min() >= SEGMENT);
            assert!(!exists(&disk, "commitlog/00000000000000000000").await);
        });
    }
    assert!(
        crashed > 10,
        "the crash points must fall inside the removal: {crashed}"
    );
}

#[test]
fn a_full_partition_removes_unexpired_segments_unless_forcible_cleaning_is_off() {
    block_on(async {
        let disk = SimDisk::new(3, 64 << 20);
        let clock = SimClock::new(1_000);
        let shard = open(&disk, &clock).await;
        fill(&shard, &clock, "T", 60, 1).await;
        shard.persist().await.unwrap();
        // 90 % full: above diskSpaceCleanForciblyRatio (85 %).
        disk.set_capacity(disk.used_bytes() * 10 / 9);
        let removal = shard.retention_step().await.unwrap().expect("forced");
        match removal.reason {
            RemovalReason::Forced { used_ratio } => assert!(used_ratio > 0.85, "{used_ratio}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(shard.retention_stats().segments_forced, 1);
        drop(shard);

        let mut cfg = config(Path::new(DIR), FlushMode::SyncFlush, SEGMENT);
        cfg.retention.clean_forcibly_enable = false;
        let shard = Shard::open(cfg, disk.clone(), clock.clone()).await.unwrap();
        assert_eq!(shard.retention_step().await.unwrap(), None);
        // Below the ratio, only expiry removes.
        disk.set_capacity(64 << 20);
        let shard = open(&disk, &clock).await;
        assert_eq!(shard.retention_step().await.unwrap(), None);
    });
}

/// Reads every record of queues 0 and 1 from `offset` on; returns how many.
async fn read_all(shard: &SimShard, offset: i64) -> usize {
    let mut read = 0;
    for queue_id in 0..2 {
        let got = shard
            .read_queue(QueueReadRequest {
                topic: "T",
                queue_id,
                offset,
                max_count: 1024,
                max_bytes: usize::MAX,
                tag_filter: None,
                record_filter: None,
            })
            .await
            .unwrap();
        read += got.records.len();
    }
    read
}

#[test]
fn appends_are_refused_above_the_warning_level_and_resume_once_retention_frees_space() {
    block_on(async {
        let disk = SimDisk::new(4, 64 << 20);
        let clock = SimClock::new(1_000);
        let shard = open(&disk, &clock).await;
        // ~300 KB, so the 5 % left below holds a removal's checkpoint and queue-file writes
        // (the headroom the warning level keeps).
        let stored = fill(&shard, &clock, "T", 600, 1).await;
        shard.persist().await.unwrap();
        assert!(shard.check_disk_usage().await.unwrap() < 0.9);
        // 95 % full: above diskSpaceWarningLevelRatio (90 %).
        disk.set_capacity(disk.used_bytes() * 20 / 19);
        let used = shard.check_disk_usage().await.unwrap();
        assert!(used > 0.9, "{used}");
        let refused = shard.append(&message("T", 0, b"late", None, None)).await;
        match refused {
            Err(StoreError::DiskFull(ringmq_shards::DiskFull::AboveWarningLevel {
                used_ratio,
                ..
            })) => assert_eq!(used_ratio, used),
            other => panic!("appended on a full disk: {other:?}"),
        }
        let err = refused.unwrap_err().to_string();
        assert!(err.contains("disk is full"), "{err}");
        // Reads keep working while it is full.
        assert_eq!(read_all(&shard, 0).await, stored.len());
        // Forced retention frees segments until the partition is below the warning level.
        let mut removed = 0;
        while shard.check_disk_usage().await.unwrap() > 0.9 {
            shard
                .retention_step()
                .await
                .unwrap()
                .expect("a forced removal");
            removed += 1;
            assert!(removed < 20, "retention freed no space");
        }
        shard
            .append(&message("T", 0, b"after", None, None))
            .await
            .expect("appends resume once the disk is below the warning level");
    });
}

#[test]
fn a_removed_segment_takes_its_cached_cold_spans_with_it() {
    block_on(async {
        let disk = SimDisk::new(6, 64 << 20);
        let clock = SimClock::new(1_000);
        let shard = open(&disk, &clock).await;
        // ~200 KB: most of it past the 64 KiB hot tail, so read from the disk.
        let stored = fill(&shard, &clock, "T", 400, 1).await;
        shard.persist().await.unwrap();
        assert_eq!(read_all(&shard, 0).await, stored.len());
        let before = shard.log_stats();
        assert!(before.cold_span_reads > 0, "the reads went to the disk");
        // One span per sealed segment (spans lie within a segment, which is smaller here).
        assert!(before.cold_cache_bytes as u64 >= SEGMENT, "{before:?}");

        clock.advance(RESERVED_MS + 1);
        let removal = shard
            .retention_step()
            .await
            .unwrap()
            .expect("segment 0 expired");
        assert_eq!(removal.segment, 0);
        let after = shard.log_stats();
        assert_eq!(
            after.cold_cache_bytes as u64,
            before.cold_cache_bytes as u64 - SEGMENT,
            "segment 0's span dropped, the others kept"
        );
        // What is retained is served from the spans still cached, without a disk read.
        let min = shard.min_offset("T", 0).max(shard.min_offset("T", 1));
        assert!(read_all(&shard, min).await > 0);
        let again = shard.log_stats();
        assert_eq!(again.cold_span_reads, after.cold_span_reads);
        assert!(again.cold_cache_hits > after.cold_cache_hits);
    });
}

#[test]
fn a_group_with_no_offset_starts_at_zero_only_while_the_first_message_is_in_memory() {
    block_on(async {
        let disk = SimDisk::new(4, 64 << 20);
        let clock = SimClock::new(1_000);
        let shard = open(&disk, &clock).await;
        assert!(!shard.in_memory("T", 0, 0), "no message yet");
        fill(&shard, &clock, "T", 20, 1).await;
        assert!(shard.in_memory("T", 0, 0));
        // After a restart the hot tail holds only the partial last block (the first message
        // lies in an earlier one).
        drop(shard);
        let shard = open(&disk, &clock).await;
        assert!(!shard.in_memory("T", 0, 0));
    });
}

#[test]
fn a_deleted_topic_is_gone_even_after_a_crash_and_starts_again_at_zero() {
    block_on(async {
        let disk = SimDisk::new(5, 64 << 20);
        let clock = SimClock::new(1_000);
        let shard = open(&disk, &clock).await;
        let old = fill(&shard, &clock, "Gone", 30, 1).await;
        fill(&shard, &clock, "Kept", 10, 1).await;
        shard.persist().await.unwrap();
        // More records past the checkpoint: recovery scans them, and must skip them.
        fill(&shard, &clock, "Gone", 10, 1).await;
        shard.set_consumer_offset("g", "Gone", 0, 5).unwrap();
        assert_eq!(shard.delete_topic("Gone").await.unwrap(), 2);
        assert_eq!(shard.consumer_offset("g", "Gone", 0), None);
        assert_eq!(shard.max_offset("Gone", 0), 0);
        assert!(shard
            .query_by_key(key_query("Gone"))
            .await
            .unwrap()
            .is_empty());
        assert!(shard.read_at(old[0]).await.is_err());
        assert!(!exists(&disk, "consumequeue/Gone/0/00000000000000000000").await);
        drop(shard);
        disk.crash();
        let shard = open(&disk, &clock).await;
        assert_eq!(
            shard.max_offset("Gone", 0),
            0,
            "not resurrected by recovery"
        );
        assert!(shard
            .query_by_key(key_query("Gone"))
            .await
            .unwrap()
            .is_empty());
        assert_eq!(shard.max_offset("Kept", 0), 5);
        // Created again, it starts at 0 and serves only its new records.
        let new = fill(&shard, &clock, "Gone", 4, 1).await;
        let read = shard.read_queue(all("Gone", 0)).await.unwrap();
        let offsets: Vec<(i64, i64)> = read
            .records
            .iter()
            .map(|r| {
                let v = RecordView::parse(r.clone()).unwrap();
                (v.queue_offset(), v.physical_offset())
            })
            .collect();
        assert_eq!(offsets, [(0, new[0]), (1, new[2])]);
        assert_eq!(
            shard.query_by_key(key_query("Gone")).await.unwrap().len(),
            4
        );
        drop(shard);
        disk.crash();
        let shard = open(&disk, &clock).await;
        assert_eq!(shard.max_offset("Gone", 0), 2);
        assert!(shard.delete_topic("SCHEDULE_TOPIC_XXXX").await.is_err());
    });
}

/// Forced retention on real files: the real partition's usage (statvfs) against a forcible
/// ratio set just below it removes the oldest segment file; a ratio above it removes none.
#[test]
fn real_files_the_partition_ratio_removes_unexpired_segments() {
    LocalExecutorBuilder::default()
        .io_memory(1 << 20)
        .spawn(|| async {
            let dir = std::env::temp_dir().join(format!("ringmq-retention-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            let used = ringmq_shards::real_io::disk_space(&dir)
                .unwrap()
                .used_ratio();
            assert!(used > 0.02, "the test partition is {used} used");
            let mut cfg = config(&dir, FlushMode::SyncFlush, 64 << 10);
            cfg.retention.clean_forcibly_ratio = (used + 0.05).min(1.0);
            cfg.retention.warning_ratio = 1.0;
            let shard = Shard::open(cfg.clone(), RealDisk::default(), RealClock)
                .await
                .unwrap();
            for i in 0..400 {
                let body = format!("{i}-{}", "y".repeat(900));
                let msg = message("R", i % 4, body.as_bytes(), None, Some("all"));
                shard.append(&msg).await.unwrap();
            }
            shard.persist().await.unwrap();
            let segments = shard.log_segments();
            assert!(segments.len() >= 4, "{segments:?}");
            assert_eq!(
                shard.retention_step().await.unwrap(),
                None,
                "below the ratio"
            );
            drop(shard);

            cfg.retention.clean_forcibly_ratio = (used - 0.02).max(0.0);
            let shard = Shard::open(cfg, RealDisk::default(), RealClock)
                .await
                .unwrap();
            let removal = shard
                .retention_step()
                .await
                .unwrap()
                .expect("above the ratio");
            assert!(matches!(removal.reason, RemovalReason::Forced { .. }));
            assert_eq!(removal.segment, segments[0]);
            let commitlog = dir.join("commitlog");
            assert!(!commitlog.join("00000000000000000000").exists());
            assert!(commitlog.join(format!("{:020}", segments[1])).exists());
            assert!(shard.min_offset("R", 0) > 0);
            let read = shard
                .read_queue(QueueReadRequest {
                    offset: shard.min_offset("R", 0),
                    ..all("R", 0)
                })
                .await
                .unwrap();
            assert_eq!(
                read.records.len() as i64,
                shard.max_offset("R", 0) - shard.min_offset("R", 0)
            );
            drop(shard);
            std::fs::remove_dir_all(&dir).unwrap();
        })
        .unwrap()
        .join()
        .unwrap();
}
