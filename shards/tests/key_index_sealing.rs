//! The key index of segments the log has left is sealed to disk: lookups still find every
//! hit (from the sealed files and from memory, newest first, in log order), memory keeps only
//! the unsealed segments' hits, and a crash at any point of a sealing loses or duplicates no
//! hit, on the simulated disk.

mod common;

use common::{config, message};
use futures_lite::future::block_on;
use ringmq_shards::record::RecordView;
use ringmq_shards::{Disk, FlushMode, KeyQuery, Shard, SimClock, SimDisk};
use std::path::Path;

type SimShard = Shard<SimDisk, SimClock>;

const DIR: &str = "/shard";
const SEGMENT: u64 = 8 << 10;
/// ~1 KiB records: 8 per segment, so 60 span 8 segments (and fit one lookup's
/// `QUERY_RESULTS_MAX`).
const MESSAGES: usize = 60;
/// Index hits of those: `k<i>` and `all` of each, `even` of every second.
const HITS: usize = 2 * MESSAGES + MESSAGES / 2;

async fn open(disk: &SimDisk, clock: &SimClock) -> SimShard {
    let cfg = config(Path::new(DIR), FlushMode::SyncFlush, SEGMENT);
    Shard::open(cfg, disk.clone(), clock.clone()).await.unwrap()
}

/// Appends messages keyed `k<i>`, `all`, and `even` for even `i`, 10 ms apart from t=1010;
/// returns their physical offsets.
async fn fill(shard: &SimShard, clock: &SimClock) -> Vec<i64> {
    let mut physical = Vec::new();
    for i in 0..MESSAGES {
        clock.advance(10);
        let body = format!("{i}-{}", "x".repeat(980));
        let keys = if i % 2 == 0 {
            format!("k{i} all even")
        } else {
            format!("k{i} all")
        };
        let msg = message("T", (i % 2) as i32, body.as_bytes(), None, Some(&keys));
        physical.push(shard.append(&msg).await.unwrap().physical_offset);
    }
    physical
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

async fn found(shard: &SimShard, query: KeyQuery<'_>) -> Vec<i64> {
    let records = shard.query_by_key(query).await.unwrap();
    records
        .into_iter()
        .map(|r| RecordView::parse(r).unwrap().physical_offset())
        .collect()
}

async fn sealed_files(disk: &SimDisk) -> usize {
    let names = disk.list_dir(&Path::new(DIR).join("index")).await.unwrap();
    names.iter().filter(|n| n.ends_with(".sealed")).count()
}

/// Every lookup the tests make, against what was appended.
async fn check_lookups(shard: &SimShard, physical: &[i64], context: &str) {
    assert_eq!(
        found(shard, key("all", 0, i64::MAX, 64)).await,
        physical[..],
        "{context}"
    );
    let evens: Vec<i64> = physical.iter().copied().step_by(2).collect();
    assert_eq!(
        found(shard, key("even", 0, i64::MAX, 64)).await,
        evens,
        "{context}"
    );
    // The newest `max`, across the sealed/unsealed border.
    assert_eq!(
        found(shard, key("all", 0, i64::MAX, 30)).await,
        physical[MESSAGES - 30..],
        "{context}"
    );
    // A time range inside sealed segments: messages 5..=9 were stored at 1060..=1100.
    assert_eq!(
        found(shard, key("all", 1060, 1100, 64)).await,
        physical[5..10],
        "{context}"
    );
    for i in [0, 17, MESSAGES - 1] {
        let one = format!("k{i}");
        assert_eq!(
            found(shard, key(&one, 0, i64::MAX, 64)).await,
            [physical[i]],
            "{context}"
        );
    }
    assert!(
        found(shard, key("none", 0, i64::MAX, 64)).await.is_empty(),
        "{context}"
    );
}

#[test]
fn sealed_segments_answer_lookups_from_disk_and_leave_memory() {
    block_on(async {
        let disk = SimDisk::new(1, 64 << 20);
        let clock = SimClock::new(1_000);
        let shard = open(&disk, &clock).await;
        let physical = fill(&shard, &clock).await;
        let in_memory_before = shard.index_hits();
        shard.persist().await.unwrap();
        let segments = shard.log_segments().len();
        assert!(segments >= 7, "{segments} segments");
        assert_eq!(
            sealed_files(&disk).await,
            segments - 1,
            "all but the active"
        );
        let (memory, sealed) = (shard.index_hits(), shard.index_hits_sealed() as usize);
        assert_eq!(in_memory_before, HITS);
        assert_eq!(memory + sealed, HITS, "every hit is somewhere, once");
        assert!(
            memory * (segments - 1) < in_memory_before,
            "memory holds about one segment's hits: {memory} of {in_memory_before}"
        );
        check_lookups(&shard, &physical, "before a restart").await;
        drop(shard);
        let shard = open(&disk, &clock).await;
        assert_eq!(
            shard.index_hits(),
            memory,
            "start-up loads only the unsealed hits"
        );
        check_lookups(&shard, &physical, "after a restart").await;
    });
}

#[test]
fn a_crash_at_any_point_of_a_sealing_loses_and_duplicates_no_hit() {
    let mut crashed = 0;
    for crash_at in 0..60 {
        block_on(async {
            let disk = SimDisk::new(crash_at, 64 << 20);
            let clock = SimClock::new(1_000);
            let shard = open(&disk, &clock).await;
            let physical = fill(&shard, &clock).await;
            disk.set_crash_after_ops(Some(crash_at));
            let outcome = shard.persist().await;
            disk.set_crash_after_ops(None);
            crashed += u64::from(outcome.is_err());
            drop(shard);
            disk.crash();
            let shard = open(&disk, &clock).await;
            // SYNC_FLUSH: every append was durable before the persist began.
            check_lookups(&shard, &physical, &format!("crash point {crash_at}")).await;
            shard.persist().await.unwrap();
            check_lookups(
                &shard,
                &physical,
                &format!("crash point {crash_at}, resealed"),
            )
            .await;
            // Each hit once, in memory or sealed: none re-added to memory by recovery.
            let held = shard.index_hits() + shard.index_hits_sealed() as usize;
            assert_eq!(held, HITS, "crash point {crash_at}");
        });
    }
    assert!(
        crashed > 20,
        "the crash points must fall inside the sealing: {crashed}"
    );
}
