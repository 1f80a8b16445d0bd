//! Paged consume queues on the simulated disk: a queue longer than one file is read back from
//! its files through the page cache, the cache stays under its bound while it evicts, start-up
//! reads no queue file, a crash at every step of a persist (between a page write and the
//! checkpoint) loses no entry, and retention removes the whole files below a queue's new min
//! offset.

mod common;

use common::{config, message};
use futures_lite::future::block_on;
use ringmq_shards::record::{Message, RecordView};
use ringmq_shards::{
    Disk, FlushMode, QueueReadRequest, Shard, ShardConfig, SimClock, SimDisk, FILE_ENTRIES,
    PAGE_BYTES, PAGE_ENTRIES,
};
use std::path::Path;

type SimShard = Shard<SimDisk, SimClock>;

const DIR: &str = "/shard";
const SEGMENT: u64 = 1 << 20;
const BATCH: usize = 4096;
const HOUR_MS: i64 = 3600 * 1000;
/// The second file of queue T/0: named by its first entry's byte offset (20 bytes an entry).
const SECOND_FILE: &str = "consumequeue/T/0/00000000000001310720";
const FIRST_FILE: &str = "consumequeue/T/0/00000000000000000000";

fn shard_config() -> ShardConfig {
    let mut config = config(Path::new(DIR), FlushMode::SyncFlush, SEGMENT);
    // Room for a batch of BATCH small messages.
    config.log.hot_tail_bytes_max = 4 << 20;
    config.log.group_commit_bytes_max = 1 << 20;
    config
}

async fn open_with(disk: &SimDisk, clock: &SimClock, config: ShardConfig) -> SimShard {
    Shard::open(config, disk.clone(), clock.clone())
        .await
        .unwrap()
}

fn numbered(queue_id: i32, i: u64) -> Message {
    message("T", queue_id, format!("m{i}").as_bytes(), None, None)
}

/// Appends messages `from..to` to queue T/0 in batches, the clock one second further each
/// batch.
async fn fill(shard: &SimShard, clock: &SimClock, from: u64, to: u64) {
    let mut at = from;
    while at < to {
        let end = to.min(at + BATCH as u64);
        let batch: Vec<Message> = (at..end).map(|i| numbered(0, i)).collect();
        clock.advance(1000);
        shard.append_batch(&batch).await.unwrap();
        at = end;
    }
}

fn read(offset: u64, max_count: usize) -> QueueReadRequest<'static> {
    QueueReadRequest {
        topic: "T",
        queue_id: 0,
        offset: offset as i64,
        max_count,
        max_bytes: usize::MAX,
        tag_filter: None,
        record_filter: None,
    }
}

/// Reads `count` records of T/0 from `offset` and checks each is message `offset + i`.
async fn check_records(shard: &SimShard, offset: u64, count: usize) {
    let got = shard.read_queue(read(offset, count)).await.unwrap();
    assert_eq!(got.records.len(), count, "records from {offset}");
    for (i, record) in got.records.into_iter().enumerate() {
        let view = RecordView::parse(record).unwrap();
        let expected = offset + i as u64;
        assert_eq!(view.queue_offset() as u64, expected);
        assert_eq!(&view.body()[..], format!("m{expected}").as_bytes());
    }
}

async fn exists(disk: &SimDisk, path: &str) -> bool {
    disk.exists(&Path::new(DIR).join(path)).await.unwrap()
}

#[test]
fn a_queue_longer_than_a_file_is_read_back_from_its_files_and_start_up_reads_none() {
    block_on(async {
        let disk = SimDisk::new(11, 256 << 20);
        let clock = SimClock::new(1_700_000_000_000);
        let shard = open_with(&disk, &clock, shard_config()).await;
        let n = FILE_ENTRIES + 3 * PAGE_ENTRIES + 17;
        fill(&shard, &clock, 0, n).await;
        assert_eq!(
            shard.queue_entries_in_memory() as u64,
            n,
            "none persisted yet"
        );
        shard.persist().await.unwrap();
        assert_eq!(
            shard.queue_entries_in_memory(),
            0,
            "the files hold them all"
        );
        assert!(exists(&disk, FIRST_FILE).await && exists(&disk, SECOND_FILE).await);
        for offset in [0, PAGE_ENTRIES - 1, FILE_ENTRIES - 2, n - 3] {
            check_records(&shard, offset, 3).await;
        }
        // The batch stored at second 5 starts at entry 4 × BATCH.
        let t5 = 1_700_000_005_000;
        assert_eq!(
            shard.search_offset_by_time("T", 0, t5).await.unwrap(),
            4 * BATCH as i64
        );
        drop(shard);

        let shard = open_with(&disk, &clock, shard_config()).await;
        assert_eq!(shard.queue_page_cache().reads, 0, "start-up read no page");
        assert_eq!(
            (shard.min_offset("T", 0), shard.max_offset("T", 0)),
            (0, n as i64)
        );
        check_records(&shard, FILE_ENTRIES - 1, 2).await;
        assert!(shard.queue_page_cache().reads > 0);
        // Appends continue after the persisted entries, in the second file.
        fill(&shard, &clock, n, n + 5).await;
        shard.persist().await.unwrap();
        check_records(&shard, n - 2, 7).await;
        drop(shard);

        // No queue file is read at start: with the first file gone the shard still opens
        // with its offsets, and only a read of the file's entries fails.
        disk.remove(&Path::new(DIR).join(FIRST_FILE)).await.unwrap();
        let shard = open_with(&disk, &clock, shard_config()).await;
        assert_eq!(shard.max_offset("T", 0), (n + 5) as i64);
        assert!(shard.read_queue(read(0, 1)).await.is_err());
        check_records(&shard, FILE_ENTRIES, 1).await;
    });
}

#[test]
fn the_page_cache_stays_under_its_bound_while_it_evicts() {
    block_on(async {
        let disk = SimDisk::new(12, 256 << 20);
        let clock = SimClock::new(1_700_000_000_000);
        let mut config = shard_config();
        config.cq_page_cache_bytes = 3 * PAGE_BYTES;
        let shard = open_with(&disk, &clock, config.clone()).await;
        let n = 12 * PAGE_ENTRIES;
        fill(&shard, &clock, 0, n).await;
        shard.persist().await.unwrap();
        drop(shard);
        let shard = open_with(&disk, &clock, config).await;
        let mut offset = 0;
        while offset < n {
            check_records(&shard, offset, 256).await;
            assert!(shard.queue_page_cache().bytes <= 3 * PAGE_BYTES);
            offset += 256;
        }
        let stats = shard.queue_page_cache();
        assert_eq!(stats.reads, 12, "each page read once, in order");
        assert_eq!((stats.pages, stats.evictions), (3, 9));
        check_records(&shard, 0, 1).await;
        assert_eq!(
            shard.queue_page_cache().reads,
            13,
            "the first page was evicted"
        );
        check_records(&shard, n - 1, 1).await;
        assert_eq!(shard.queue_page_cache().reads, 13, "the last page is held");
    });
}

#[test]
fn a_crash_at_any_step_of_a_persist_loses_no_entry() {
    let mut crashed = 0;
    for step in 0.. {
        let done = block_on(async {
            let disk = SimDisk::new(100 + step, 256 << 20);
            let clock = SimClock::new(1_700_000_000_000);
            let shard = open_with(&disk, &clock, shard_config()).await;
            // The next persist writes the end of the first file and the start of the second.
            let (persisted, n) = (FILE_ENTRIES - 100, FILE_ENTRIES + 200);
            fill(&shard, &clock, 0, persisted).await;
            shard.persist().await.unwrap();
            fill(&shard, &clock, persisted, n).await;
            disk.set_crash_after_ops(Some(step));
            let result = shard.persist().await;
            disk.set_crash_after_ops(None);
            drop(shard);
            if disk.crashes() == 0 {
                result.unwrap();
                return true;
            }
            let shard = open_with(&disk, &clock, shard_config()).await;
            assert_eq!(shard.max_offset("T", 0), n as i64, "step {step}");
            check_records(&shard, persisted - 5, 305).await;
            fill(&shard, &clock, n, n + 10).await;
            shard.persist().await.unwrap();
            drop(shard);
            disk.crash();
            let shard = open_with(&disk, &clock, shard_config()).await;
            check_records(&shard, persisted - 5, 315).await;
            false
        });
        if done {
            break;
        }
        crashed += 1;
    }
    assert!(
        crashed > 5,
        "the persist was crashed at {crashed} steps only"
    );
}

#[test]
fn retention_removes_the_whole_files_below_a_queue_s_new_min_offset() {
    block_on(async {
        let disk = SimDisk::new(13, 256 << 20);
        let clock = SimClock::new(1_700_000_000_000);
        let shard = open_with(&disk, &clock, shard_config()).await;
        // Two segments' worth past the first file, so the first segment kept lies past it.
        let old = FILE_ENTRIES + 20_000;
        fill(&shard, &clock, 0, old).await;
        // Stored a day later: kept while the old ones expire.
        clock.advance(24 * HOUR_MS);
        fill(&shard, &clock, old, old + 2 * BATCH as u64).await;
        shard.persist().await.unwrap();
        clock.advance(72 * HOUR_MS - 10 * 60 * 1000);
        while shard.retention_step().await.unwrap().is_some() {}
        let min = shard.min_offset("T", 0) as u64;
        assert!(min > FILE_ENTRIES && min <= old, "min offset {min}");
        assert!(
            !exists(&disk, FIRST_FILE).await,
            "wholly below the min offset"
        );
        assert!(exists(&disk, SECOND_FILE).await);
        // The min offset is the queue's first entry in the first segment kept.
        let first = shard.read_queue(read(min, 1)).await.unwrap();
        let view = RecordView::parse(first.records[0].clone()).unwrap();
        let local = view.physical_offset() as u64 & ((1 << 48) - 1);
        assert_eq!(local, shard.log_min());
        let below = shard.read_queue(read(min - 1, 1)).await.unwrap();
        assert!(below.records.is_empty() && below.min_offset == min as i64);
        check_records(&shard, min, 100).await;
        drop(shard);
        let shard = open_with(&disk, &clock, shard_config()).await;
        assert_eq!(shard.min_offset("T", 0) as u64, min);
        check_records(&shard, min, 1).await;
    });
}

async fn file_len(disk: &SimDisk, name: &str) -> Option<u64> {
    let path = Path::new(DIR).join(name);
    let file = disk.open(&path, false).await.ok()?;
    Some(ringmq_shards::DiskFile::len(&file).await.unwrap())
}

/// Appends one message to each of queues `0..queues` of T (in batches).
async fn touch(shard: &SimShard, queues: i32, round: u64) {
    let all: Vec<Message> = (0..queues).map(|q| numbered(q, round)).collect();
    for batch in all.chunks(BATCH) {
        shard.append_batch(batch).await.unwrap();
    }
}

#[test]
fn a_persist_journals_only_the_queues_that_changed() {
    block_on(async {
        let disk = SimDisk::new(14, 1 << 30);
        let clock = SimClock::new(1_700_000_000_000);
        let shard = open_with(&disk, &clock, shard_config()).await;
        let queues = 400;
        // `T`, queue id, min, end, first local.
        let record = 2 + 1 + 4 + 3 * 8;
        touch(&shard, queues, 0).await;
        shard.persist().await.unwrap();
        assert_eq!(shard.queue_ranges_journal(), (0, queues as u64 * record));
        let checkpoint = file_len(&disk, "checkpoint").await.unwrap();
        assert!(
            checkpoint < 512,
            "the checkpoint holds no queue: {checkpoint} bytes"
        );
        shard.append(&numbered(5, 1)).await.unwrap();
        shard.persist().await.unwrap();
        assert_eq!(
            shard.queue_ranges_journal(),
            (0, (queues as u64 + 1) * record)
        );
        shard.persist().await.unwrap();
        assert_eq!(
            shard.queue_ranges_journal(),
            (0, (queues as u64 + 1) * record)
        );
        assert_eq!(file_len(&disk, "checkpoint").await.unwrap(), checkpoint);
        // Grown to 4 times the live ranges plus the slack, it is rewritten with the live ones.
        let mut round = 1;
        while shard.queue_ranges_journal().0 == 0 {
            round += 1;
            assert!(round < 60, "never rewritten");
            touch(&shard, queues, round).await;
            shard.persist().await.unwrap();
        }
        assert_eq!(shard.queue_ranges_journal(), (1, queues as u64 * record));
        assert_eq!(
            file_len(&disk, "queue_ranges.00000000000000000000").await,
            None
        );
        drop(shard);
        disk.crash();
        let shard = open_with(&disk, &clock, shard_config()).await;
        assert_eq!(shard.max_offset("T", 5), round as i64 + 1);
        assert_eq!(shard.max_offset("T", 399), round as i64);
        assert_eq!(shard.queue_page_cache().reads, 0);
        let read = shard
            .read_queue(QueueReadRequest {
                queue_id: 5,
                ..read(1, 1)
            })
            .await
            .unwrap();
        let view = RecordView::parse(read.records[0].clone()).unwrap();
        assert_eq!(&view.body()[..], b"m1");
        // A deleted topic's ranges go from the journal with it.
        assert_eq!(shard.delete_topic("T").await.unwrap(), 400);
        drop(shard);
        disk.crash();
        let shard = open_with(&disk, &clock, shard_config()).await;
        assert_eq!(shard.max_offset("T", 5), 0);
    });
}
