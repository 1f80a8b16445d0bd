//! The shard's API on the simulated disk: appends, reads, lookups, wakeups, persistence,
//! ENOSPC and fsync failures.

mod common;

use common::{all, config, message};
use futures_lite::future::{block_on, zip};
use ringmq_shards::record::RecordView;
use ringmq_shards::{FlushMode, KeyQuery, Shard, SimClock, SimDisk, StoreError};
use std::path::Path;

type SimShard = Shard<SimDisk, SimClock>;

const DIR: &str = "/shard";

async fn open(disk: &SimDisk, clock: &SimClock, mode: FlushMode, segment: u64) -> SimShard {
    let cfg = config(Path::new(DIR), mode, segment);
    Shard::open(cfg, disk.clone(), clock.clone()).await.unwrap()
}

fn key(key: &str, begin_ms: i64, end_ms: i64, max: usize) -> KeyQuery<'_> {
    KeyQuery {
        topic: "T",
        key,
        begin_ms,
        end_ms,
        max,
    }
}

#[test]
fn append_read_lookup_and_reopen() {
    block_on(async {
        let disk = SimDisk::new(1, 64 << 20);
        let clock = SimClock::new(1_000);
        let shard = open(&disk, &clock, FlushMode::SyncFlush, 8 << 10).await;
        let mut physical = Vec::new();
        for i in 0..100 {
            clock.advance(10);
            let tag = if i % 2 == 0 { "even" } else { "odd" };
            let keys = format!("k{i} all");
            let msg = message(
                "T",
                i % 2,
                format!("body-{i}").as_bytes(),
                Some(tag),
                Some(&keys),
            );
            let r = shard.append(&msg).await.unwrap();
            assert_eq!(r.queue_offset, i64::from(i / 2));
            assert_eq!(r.physical_offset >> 48, 1, "shard id in the high bits");
            physical.push(r.physical_offset);
        }
        assert!(
            shard.log_end() > 8 << 10,
            "the log rolled into later segments"
        );
        assert_eq!(shard.max_offset("T", 0), 50);
        let read = shard.read_queue(all("T", 1)).await.unwrap();
        assert_eq!(read.records.len(), 50);
        assert_eq!(read.next_offset, 50);
        let view = RecordView::parse(read.records[3].clone()).unwrap();
        assert_eq!(&view.body()[..], b"body-7");
        assert_eq!(view.queue_offset(), 3);
        // Byte budget: at least one record, then only what fits.
        let size = read.records[0].len();
        let mut req = all("T", 1);
        req.max_bytes = 2 * size + 1;
        assert_eq!(shard.read_queue(req).await.unwrap().records.len(), 2);
        // Tag filter on the hash code, skipping past filtered entries.
        let odd = ringmq_shards::record::java_string_hash("odd");
        let mut req = all("T", 0);
        req.tag_filter = Some(std::slice::from_ref(&odd));
        let filtered = shard.read_queue(req).await.unwrap();
        assert!(filtered.records.is_empty());
        assert_eq!(filtered.next_offset, 50);
        // A record filter: refused records count against neither the count nor the bytes,
        // and the read goes on past them (queue 1 holds bodies 1, 3, 5, ...).
        let every_fifth = |record: &bytes::Bytes| {
            let body = RecordView::parse(record.clone()).unwrap().body();
            let n: u32 = std::str::from_utf8(&body[5..]).unwrap().parse().unwrap();
            n % 10 == 1
        };
        let mut req = all("T", 1);
        req.max_count = 3;
        req.max_bytes = 4 * size;
        req.record_filter = Some(ringmq_shards::RecordFilter(&every_fifth));
        let picked = shard.read_queue(req).await.unwrap();
        let bodies: Vec<_> = picked
            .records
            .iter()
            .map(|r| RecordView::parse(r.clone()).unwrap().body())
            .collect();
        assert_eq!(bodies, [&b"body-1"[..], b"body-11", b"body-21"]);
        assert_eq!(picked.next_offset, 11, "past body-21, the 11th entry");
        req.offset = 45;
        let tail = shard.read_queue(req).await.unwrap();
        assert_eq!(tail.records.len(), 1, "body-91 of bodies 91..99");
        assert_eq!(tail.next_offset, 50, "past every entry scanned");
        // By physical offset, and a forged offset inside a record is refused.
        let at = shard.read_at(physical[10]).await.unwrap();
        assert_eq!(&RecordView::parse(at).unwrap().body()[..], b"body-10");
        assert!(matches!(
            shard.read_at(physical[10] + 1).await,
            Err(StoreError::NoSuchRecord(_))
        ));
        assert!(
            shard.read_at(physical[10] & ((1 << 48) - 1)).await.is_err(),
            "other shard"
        );
        // By time: message i was stored at 1000 + 10 * (i + 1).
        assert_eq!(
            shard
                .search_offset_by_time("T", 0, 1_000 + 10 * 21)
                .await
                .unwrap(),
            10
        );
        assert_eq!(shard.search_offset_by_time("T", 0, 0).await.unwrap(), 0);
        assert_eq!(
            shard.search_offset_by_time("T", 0, i64::MAX).await.unwrap(),
            50
        );
        // By key, with a time range and a max count.
        let hits = shard
            .query_by_key(key("k42", 0, i64::MAX, 10))
            .await
            .unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(
            &RecordView::parse(hits[0].clone()).unwrap().body()[..],
            b"body-42"
        );
        assert_eq!(
            shard
                .query_by_key(key("all", 0, i64::MAX, 5))
                .await
                .unwrap()
                .len(),
            5
        );
        assert!(shard
            .query_by_key(key("all", 0, 1_000, 5))
            .await
            .unwrap()
            .is_empty());
        shard.set_consumer_offset("g", "T", 0, 17).unwrap();
        shard.persist().await.unwrap();
        drop(shard);

        let shard = open(&disk, &clock, FlushMode::SyncFlush, 8 << 10).await;
        assert_eq!(shard.consumer_offset("g", "T", 0), Some(17));
        assert_eq!(shard.max_offset("T", 1), 50);
        let again = shard.read_queue(all("T", 1)).await.unwrap();
        assert_eq!(again.records, read.records, "byte-identical after reopen");
        assert_eq!(
            shard
                .query_by_key(key("k42", 0, i64::MAX, 10))
                .await
                .unwrap(),
            hits
        );
        let next = shard
            .append(&message("T", 1, b"after", None, None))
            .await
            .unwrap();
        assert_eq!(next.queue_offset, 50);
    });
}

#[test]
fn long_poll_wakes_on_new_record() {
    block_on(async {
        let disk = SimDisk::new(2, 64 << 20);
        let clock = SimClock::new(0);
        let shard = open(&disk, &clock, FlushMode::SyncFlush, 64 << 10).await;
        let waiter = shard.wait_for_offset("T", 0, 0);
        let producer = async {
            shard
                .append(&message("T", 1, b"other queue", None, None))
                .await
                .unwrap();
            shard
                .append(&message("T", 0, b"x", None, None))
                .await
                .unwrap()
        };
        let (woken, appended) = zip(waiter, producer).await;
        woken.unwrap();
        assert_eq!(appended.queue_offset, 0);
        assert_eq!(shard.max_offset("T", 0), 1);
    });
}

#[test]
fn sync_appends_share_group_commits() {
    block_on(async {
        let disk = SimDisk::new(3, 64 << 20);
        let clock = SimClock::new(0);
        let shard = open(&disk, &clock, FlushMode::SyncFlush, 64 << 10).await;
        let before = shard.log_stats().flush_count;
        let m = message("T", 0, b"m", None, None);
        let (a, (b, c)) = zip(shard.append(&m), zip(shard.append(&m), shard.append(&m))).await;
        let offsets = [
            a.unwrap().queue_offset,
            b.unwrap().queue_offset,
            c.unwrap().queue_offset,
        ];
        assert_eq!(offsets, [0, 1, 2]);
        // The first append leads a flush of itself; the other two join the next one.
        assert_eq!(shard.log_stats().flush_count - before, 2);
    });
}

#[test]
fn disk_full_stores_nothing_and_recovers_when_space_returns() {
    block_on(async {
        let disk = SimDisk::new(4, 64 << 20);
        let clock = SimClock::new(0);
        let shard = open(&disk, &clock, FlushMode::SyncFlush, 8 << 10).await;
        disk.set_capacity(disk.used_bytes());
        let body = vec![7u8; 1000];
        let mut stored = 0;
        let err = loop {
            match shard.append(&message("T", 0, &body, None, None)).await {
                Ok(_) => stored += 1,
                Err(e) => break e,
            }
            assert!(stored < 100, "a full disk must refuse appends");
        };
        assert!(matches!(err, StoreError::DiskFull(_)), "{err}");
        assert_eq!(shard.max_offset("T", 0), stored);
        assert!(shard
            .append(&message("T", 0, &body, None, None))
            .await
            .is_err());
        disk.set_capacity(64 << 20);
        let r = shard
            .append(&message("T", 0, &body, None, None))
            .await
            .unwrap();
        assert_eq!(r.queue_offset, stored, "no gap left by the failed appends");
        drop(shard);
        let shard = open(&disk, &clock, FlushMode::SyncFlush, 8 << 10).await;
        assert_eq!(shard.max_offset("T", 0), stored + 1);
    });
}

#[test]
fn failed_fsync_is_not_acknowledged_and_is_retried() {
    block_on(async {
        let disk = SimDisk::new(5, 64 << 20);
        let clock = SimClock::new(0);
        let shard = open(&disk, &clock, FlushMode::SyncFlush, 64 << 10).await;
        disk.set_fsync_fail_per_mille(1000);
        let err = shard
            .append(&message("T", 0, b"a", None, None))
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::Io(_)), "{err}");
        assert_eq!(shard.max_offset("T", 0), 0, "not visible until durable");
        disk.set_fsync_fail_per_mille(0);
        let r = shard
            .append(&message("T", 0, b"b", None, None))
            .await
            .unwrap();
        // The unacknowledged record was retried with the next group and is now durable.
        assert_eq!(r.queue_offset, 1);
        assert_eq!(shard.max_offset("T", 0), 2);
    });
}

#[test]
fn async_flush_acks_at_once_and_flusher_follows() {
    block_on(async {
        let disk = SimDisk::new(6, 64 << 20);
        let clock = SimClock::new(0);
        let shard = open(&disk, &clock, FlushMode::AsyncFlush, 64 << 10).await;
        shard
            .append(&message("T", 0, b"a", None, None))
            .await
            .unwrap();
        assert_eq!(shard.max_offset("T", 0), 1, "visible before durable");
        assert_eq!(shard.log_stats().flush_count, 0);
        // The flusher runs forever; race it against a bounded wait for one flush.
        let flushed = futures_lite::future::or(
            async {
                shard.run_flusher().await;
                false
            },
            async {
                while shard.log_stats().flush_count == 0 {
                    futures_lite::future::yield_now().await;
                }
                true
            },
        )
        .await;
        assert!(flushed);
        disk.crash();
        let shard = open(&disk, &clock, FlushMode::AsyncFlush, 64 << 10).await;
        assert_eq!(shard.max_offset("T", 0), 1);
    });
}

/// An ASYNC appender over the hot-tail budget waits for room, not for the whole tail: it
/// used to flush everything appended (tens of MiB at the default budget) on every overrun.
#[test]
fn hot_tail_overrun_flushes_only_what_makes_room() {
    block_on(async {
        let disk = SimDisk::new(7, 64 << 20);
        let clock = SimClock::new(0);
        let shard = open(&disk, &clock, FlushMode::AsyncFlush, 1 << 20).await;
        let budget = shard.config().log.hot_tail_bytes_max as u64;
        let body = [b'x'; 1000];
        let mut overruns = 0;
        while overruns < 50 {
            shard
                .append(&message("T", 0, &body, None, None))
                .await
                .unwrap();
            let unflushed = shard.log_end() - shard.log_durable_end();
            assert!(unflushed <= budget, "{unflushed} bytes over the budget");
            if shard.log_durable_end() > 0 {
                overruns += 1;
                // Room for the next record was made by flushing at most one group more.
                let group = shard.config().log.group_commit_bytes_max as u64;
                assert!(
                    unflushed >= budget - group - 2048,
                    "flushed down to {unflushed}"
                );
            }
        }
    });
}

/// A record left behind after a truncation, whole and with a valid BODYCRC and a fitting
/// queue offset, must not come back: the crc32c chain trailer ties it to the record that
/// preceded it when it was written.
#[test]
fn stale_record_after_truncation_is_not_resurrected() {
    use ringmq_shards::commit_log::TRAILER_BYTES;
    use ringmq_shards::io::{Disk, DiskFile, BLOCK_BYTES};
    use ringmq_shards::record::encoded_len;
    block_on(async {
        let disk = SimDisk::new(9, 64 << 20);
        let clock = SimClock::new(0);
        let store_host = common::STORE_HOST.parse().unwrap();
        let first = message("T", 0, b"first", None, None);
        let first_len = encoded_len(&first, &store_host).unwrap() + TRAILER_BYTES;
        // Size the second record so the third starts exactly on a block boundary, out of
        // reach of the zero padding of later writes.
        let second_len = 2 * BLOCK_BYTES - first_len;
        let overhead = encoded_len(&message("T", 0, b"", None, None), &store_host).unwrap();
        let body = vec![b's'; second_len - TRAILER_BYTES - overhead];
        let shard = open(&disk, &clock, FlushMode::SyncFlush, 64 << 10).await;
        shard.append(&first).await.unwrap();
        let second = shard
            .append(&message("T", 0, &body, None, None))
            .await
            .unwrap();
        shard
            .append(&message("T", 0, b"third", None, None))
            .await
            .unwrap();
        drop(shard);

        // Tear the second record's body: recovery must cut the log there.
        let segment = disk
            .open(Path::new("/shard/commitlog/00000000000000000000"), false)
            .await
            .unwrap();
        let local = (second.physical_offset & ((1 << 48) - 1)) as u64;
        let block = local + 200 - (local + 200) % BLOCK_BYTES as u64;
        let mut bytes = segment.read_at(block, BLOCK_BYTES).await.unwrap().to_vec();
        bytes[(local + 200 - block) as usize] ^= 0xFF;
        segment.write_at(block, bytes).await.unwrap();
        segment.sync().await.unwrap();
        drop(segment);
        let shard = open(&disk, &clock, FlushMode::SyncFlush, 64 << 10).await;
        assert_eq!(
            shard.max_offset("T", 0),
            1,
            "torn record and all after it dropped"
        );
        // A different record of the same size takes the second one's place and offset.
        let other = vec![b'o'; body.len()];
        let replaced = shard
            .append(&message("T", 0, &other, None, None))
            .await
            .unwrap();
        assert_eq!(replaced.physical_offset, second.physical_offset);
        assert_eq!(replaced.queue_offset, 1);
        drop(shard);

        // The old third record still sits on disk, intact, with queue offset 2 — but it was
        // chained to the old second record, so it stays dropped.
        let shard = open(&disk, &clock, FlushMode::SyncFlush, 64 << 10).await;
        assert_eq!(shard.max_offset("T", 0), 2);
        let next = shard
            .append(&message("T", 0, b"new third", None, None))
            .await
            .unwrap();
        let read = shard.read_at(next.physical_offset).await.unwrap();
        assert_eq!(&RecordView::parse(read).unwrap().body()[..], b"new third");
    });
}

/// Opening a directory with another shard id or segment size is refused, not "recovered"
/// by truncating records that look foreign.
#[test]
fn refuses_a_directory_of_another_shard_or_segment_size() {
    block_on(async {
        let disk = SimDisk::new(10, 64 << 20);
        let clock = SimClock::new(0);
        let shard = open(&disk, &clock, FlushMode::SyncFlush, 8 << 10).await;
        shard
            .append(&message("T", 0, b"kept", None, None))
            .await
            .unwrap();
        drop(shard);
        let mut other_id = config(Path::new(DIR), FlushMode::SyncFlush, 8 << 10);
        other_id.shard_id = 2;
        let err = Shard::open(other_id, disk.clone(), clock.clone())
            .await
            .err();
        assert!(matches!(err, Some(StoreError::Config(_))), "{err:?}");
        let other_size = config(Path::new(DIR), FlushMode::SyncFlush, 16 << 10);
        let err = Shard::open(other_size, disk.clone(), clock.clone())
            .await
            .err();
        assert!(matches!(err, Some(StoreError::Config(_))), "{err:?}");
        let shard = open(&disk, &clock, FlushMode::SyncFlush, 8 << 10).await;
        assert_eq!(shard.max_offset("T", 0), 1, "nothing was truncated");
    });
}

/// A catch-up of queues interleaved in the log, as the bench's consumers read a backlog: each
/// aligned span of the cold log is read from the disk once for the pulls of every queue in
/// it, and every record comes back byte for byte.
#[test]
fn catch_up_pulls_of_interleaved_queues_read_each_cold_span_once() {
    block_on(async {
        const QUEUES: i32 = 8;
        const PER_QUEUE: i64 = 200;
        let disk = SimDisk::new(5, 256 << 20);
        let clock = SimClock::new(1_000);
        let shard = open(&disk, &clock, FlushMode::SyncFlush, 64 << 20).await;
        for i in 0..PER_QUEUE {
            let batch: Vec<_> = (0..QUEUES)
                .map(|q| {
                    message(
                        "T",
                        q,
                        format!("{q}-{i:04}-{}", "x".repeat(1000)).as_bytes(),
                        None,
                        None,
                    )
                })
                .collect();
            shard.append_batch(&batch).await.unwrap();
        }
        let log_bytes = shard.log_end();
        let mut offsets = [0i64; QUEUES as usize];
        while offsets.iter().any(|&o| o < PER_QUEUE) {
            for q in 0..QUEUES {
                let read = shard
                    .read_queue(ringmq_shards::QueueReadRequest {
                        topic: "T",
                        queue_id: q,
                        offset: offsets[q as usize],
                        max_count: 32,
                        max_bytes: usize::MAX,
                        tag_filter: None,
                        record_filter: None,
                    })
                    .await
                    .unwrap();
                for (k, record) in read.records.iter().enumerate() {
                    let view = RecordView::parse(record.clone()).unwrap();
                    let i = offsets[q as usize] + k as i64;
                    assert!(view.body().starts_with(format!("{q}-{i:04}-").as_bytes()));
                }
                offsets[q as usize] = read.next_offset;
            }
        }
        let stats = shard.log_stats();
        let spans = log_bytes.div_ceil(256 << 10);
        assert!(
            stats.cold_span_reads <= 2 * spans,
            "{} span reads for {spans} spans of log",
            stats.cold_span_reads
        );
        assert!(
            stats.cold_cache_hits > stats.cold_span_reads * 4,
            "{stats:?}"
        );
    });
}

/// The half and op queues carry the transaction's origin as tagsCode
/// (`ringmq_shards::transaction`), made at append and made again, equal, when recovery
/// rebuilds the entries from the log (past the checkpoint) or loads them (before it).
#[test]
fn transaction_queues_carry_origins_that_recovery_rebuilds() {
    use ringmq_shards::transaction::{
        op_body, PREPARED_QUEUE_OFFSET, TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC,
    };
    block_on(async {
        let disk = SimDisk::new(7, 64 << 20);
        let clock = SimClock::new(1_000);
        let shard = open(&disk, &clock, FlushMode::SyncFlush, 1 << 20).await;
        let half = |copy_of: Option<i64>| {
            let mut m = message(TRANS_HALF_TOPIC, 0, b"h", Some("TagA"), None);
            if let Some(origin) = copy_of {
                let origin = origin.to_string();
                let props = [("TAGS", "TagA"), (PREPARED_QUEUE_OFFSET, origin.as_str())];
                m.properties = ringmq_shards::record::format_properties(props).into();
            }
            m
        };
        let op = |origin: i64| message(TRANS_OP_HALF_TOPIC, 0, &op_body(origin), Some("d"), None);
        shard.append(&half(None)).await.unwrap(); // origin 0
        shard.append(&half(None)).await.unwrap(); // origin 1
        shard.persist().await.unwrap(); // those two come back from the queue file
        shard.append(&half(Some(0))).await.unwrap(); // a copy of 0
        shard.append(&op(1)).await.unwrap();
        let entries = |s: &SimShard, topic: &str| -> Vec<(i64, i64)> {
            s.queue_entries(topic, 0, 0, 100)
                .iter()
                .map(|e| (e.queue_offset, e.tags_code))
                .collect()
        };
        let halves = entries(&shard, TRANS_HALF_TOPIC);
        assert_eq!(halves, [(0, 0), (1, 1), (2, 0)]);
        assert_eq!(entries(&shard, TRANS_OP_HALF_TOPIC), [(0, 1)]);
        let physical = shard.queue_entries(TRANS_HALF_TOPIC, 0, 1, 1)[0].physical_offset;
        assert!(physical < shard.queue_entries(TRANS_OP_HALF_TOPIC, 0, 0, 1)[0].physical_offset);
        drop(shard);
        disk.crash();
        let shard = open(&disk, &clock, FlushMode::SyncFlush, 1 << 20).await;
        assert_eq!(entries(&shard, TRANS_HALF_TOPIC), halves);
        assert_eq!(entries(&shard, TRANS_OP_HALF_TOPIC), [(0, 1)]);
        assert_eq!(shard.queue_entries(TRANS_HALF_TOPIC, 0, 2, 100).len(), 1);
        assert!(shard.queue_entries(TRANS_HALF_TOPIC, 0, 3, 100).is_empty());
    });
}
