//! Delay levels on the simulated disk and clock: every default level delivers at store time
//! plus its delay and not before, DELAY clamps, a custom table, properties restored as
//! Apache's `messageTimeup`, progress surviving a clean restart and a crash, and the
//! per-level task waking on its queue's append event and sleeping until the head is due.

mod common;

use bytes::Bytes;
use common::{all, config, message};
use futures_lite::future::{block_on, or, yield_now, zip};
use ringmq_shards::record::{find_property, format_properties, java_string_hash, RecordView};
use ringmq_shards::schedule::{ScheduleError, SCHEDULE_TOPIC};
use ringmq_shards::{
    DelayLevels, DeliveryTurn, FlushMode, QueueReadRequest, Scheduled, Shard, SimClock, SimDisk,
};
use std::path::Path;

type SimShard = Shard<SimDisk, SimClock>;

const DIR: &str = "/shard";
const T0: i64 = 1_700_000_000_000;
const REAL: &str = "Real";
/// Apache's default delays, level 1 first.
const DEFAULT_DELAYS_MS: [i64; 18] = [
    1_000, 5_000, 10_000, 30_000, 60_000, 120_000, 180_000, 240_000, 300_000, 360_000, 420_000,
    480_000, 540_000, 600_000, 1_200_000, 1_800_000, 3_600_000, 7_200_000,
];

async fn open_with(disk: &SimDisk, clock: &SimClock, levels: Option<&str>) -> SimShard {
    let mut cfg = config(Path::new(DIR), FlushMode::SyncFlush, 64 << 10);
    if let Some(levels) = levels {
        cfg.delay_levels = DelayLevels::parse(levels).unwrap();
    }
    Shard::open(cfg, disk.clone(), clock.clone()).await.unwrap()
}

async fn open(disk: &SimDisk, clock: &SimClock) -> SimShard {
    open_with(disk, clock, None).await
}

/// A message for REAL queue `queue_id` asking for `delay` (a DELAY property as sent).
fn delayed(queue_id: i32, body: &str, delay: &str) -> ringmq_shards::record::Message {
    let mut m = message(REAL, queue_id, body.as_bytes(), Some("TagA"), Some("k1 k2"));
    let props = std::str::from_utf8(&m.properties).unwrap().to_owned();
    m.properties = Bytes::from(props + &format_properties([("DELAY", delay)]));
    m
}

/// Schedules and stores a message as the broker's send path does; returns its level.
async fn send(shard: &SimShard, queue_id: i32, body: &str, delay: &str) -> Option<usize> {
    let mut m = delayed(queue_id, body, delay);
    let level = shard.config().delay_levels.schedule(&mut m).unwrap();
    shard.append(&m).await.unwrap();
    level
}

async fn records(shard: &SimShard, topic: &str, queue_id: i32) -> Vec<RecordView> {
    let read = shard.read_queue(all(topic, queue_id)).await.unwrap();
    read.records
        .into_iter()
        .map(|r| RecordView::parse(r).unwrap())
        .collect()
}

/// Bodies delivered to REAL queues 0..4, sorted.
async fn delivered(shard: &SimShard) -> Vec<String> {
    let mut bodies = Vec::new();
    for queue_id in 0..4 {
        for r in records(shard, REAL, queue_id).await {
            bodies.push(String::from_utf8(r.body().to_vec()).unwrap());
        }
    }
    bodies.sort();
    bodies
}

fn set_clock(clock: &SimClock, at_ms: i64) {
    clock.advance(at_ms - ringmq_shards::Clock::now_ms(clock));
}

#[test]
fn every_default_level_delivers_at_store_time_plus_its_delay_and_not_before() {
    block_on(async {
        let (disk, clock) = (SimDisk::new(1, 64 << 20), SimClock::new(T0));
        let shard = open(&disk, &clock).await;
        for level in 1..=18 {
            let (body, delay) = (format!("L{level:02}"), level.to_string());
            assert_eq!(
                send(&shard, level as i32 % 4, &body, &delay).await,
                Some(level)
            );
            let stored = records(&shard, SCHEDULE_TOPIC, level as i32 - 1).await;
            assert_eq!(stored.len(), 1, "level {level} is queue {}", level - 1);
            assert_eq!(stored[0].property("DELAY"), Some(&*level.to_string()));
        }
        assert!(
            delivered(&shard).await.is_empty(),
            "nothing is delivered at once"
        );
        for (i, delay) in DEFAULT_DELAYS_MS.iter().enumerate() {
            let level = i + 1;
            let due = T0 + delay;
            set_clock(&clock, due - 1);
            for other in 1..=18 {
                let turn = shard.deliver_due(Scheduled::Level(other)).await.unwrap();
                let expected = if other < level {
                    DeliveryTurn::Drained(1)
                } else {
                    DeliveryTurn::DueAt(T0 + DEFAULT_DELAYS_MS[other - 1])
                };
                assert_eq!(turn, expected, "level {other} at {} ms", due - 1 - T0);
            }
            assert_eq!(
                delivered(&shard).await.len(),
                i,
                "1 ms before level {level}"
            );
            set_clock(&clock, due);
            assert_eq!(
                shard.deliver_due(Scheduled::Level(level)).await.unwrap(),
                DeliveryTurn::Delivered(1)
            );
            let got = records(&shard, REAL, level as i32 % 4).await;
            let got = got.last().unwrap();
            assert_eq!(got.body(), format!("L{level:02}").as_bytes());
            assert_eq!(got.store_timestamp_ms(), due, "level {level}");
            assert_eq!(shard.schedule_offset(level), 1);
        }
        assert_eq!(delivered(&shard).await.len(), 18);
    });
}

#[test]
fn delay_above_the_last_level_clamps_and_non_positive_is_not_delayed() {
    block_on(async {
        let (disk, clock) = (SimDisk::new(2, 64 << 20), SimClock::new(T0));
        let shard = open(&disk, &clock).await;
        assert_eq!(send(&shard, 0, "d19", "19").await, Some(18));
        assert_eq!(send(&shard, 1, "d1000", "1000").await, Some(18));
        assert_eq!(send(&shard, 2, "d0", "0").await, None);
        assert_eq!(send(&shard, 3, "dneg", "-3").await, None);
        let clamped = records(&shard, SCHEDULE_TOPIC, 17).await;
        assert_eq!(clamped.len(), 2);
        assert!(clamped.iter().all(|r| r.property("DELAY") == Some("18")));
        assert_eq!(delivered(&shard).await, ["d0", "dneg"], "stored as sent");
        let mut bad = delayed(0, "x", "soon");
        let err = shard.config().delay_levels.schedule(&mut bad).unwrap_err();
        assert_eq!(err, ScheduleError::BadDelay("soon".into()));
        let two_hours = T0 + 7_200_000;
        assert_eq!(
            shard.deliver_due(Scheduled::Level(18)).await.unwrap(),
            DeliveryTurn::DueAt(two_hours)
        );
        set_clock(&clock, two_hours);
        assert_eq!(
            shard.deliver_due(Scheduled::Level(18)).await.unwrap(),
            DeliveryTurn::Delivered(2)
        );
        assert_eq!(delivered(&shard).await, ["d0", "d1000", "d19", "dneg"]);
    });
}

#[test]
fn a_custom_table_sets_queues_and_due_times() {
    block_on(async {
        let (disk, clock) = (SimDisk::new(3, 64 << 20), SimClock::new(T0));
        let shard = open_with(&disk, &clock, Some("2s 3m 1d")).await;
        assert_eq!(send(&shard, 0, "a", "2").await, Some(2));
        assert_eq!(send(&shard, 1, "b", "7").await, Some(3));
        assert_eq!(records(&shard, SCHEDULE_TOPIC, 1).await.len(), 1);
        assert_eq!(
            records(&shard, SCHEDULE_TOPIC, 2).await[0].property("DELAY"),
            Some("3")
        );
        // tagsCode is the delivery time: the turn reports it without reading the record.
        assert_eq!(
            shard.deliver_due(Scheduled::Level(2)).await.unwrap(),
            DeliveryTurn::DueAt(T0 + 180_000)
        );
        assert_eq!(
            shard.deliver_due(Scheduled::Level(3)).await.unwrap(),
            DeliveryTurn::DueAt(T0 + 86_400_000)
        );
        assert!(
            shard.deliver_due(Scheduled::Level(4)).await.is_err(),
            "no level 4"
        );
        set_clock(&clock, T0 + 180_000);
        assert_eq!(
            shard.deliver_due(Scheduled::Level(2)).await.unwrap(),
            DeliveryTurn::Delivered(1)
        );
        assert_eq!(
            shard.deliver_due(Scheduled::Level(3)).await.unwrap(),
            DeliveryTurn::DueAt(T0 + 86_400_000)
        );
        assert_eq!(delivered(&shard).await, ["a"]);
    });
}

#[test]
fn delivery_restores_the_message_as_apache() {
    block_on(async {
        let (disk, clock) = (SimDisk::new(4, 64 << 20), SimClock::new(T0));
        let shard = open(&disk, &clock).await;
        let mut sent = delayed(3, "payload", "2");
        sent.flag = 7;
        sent.reconsume_times = 2;
        sent.born_timestamp_ms = T0 - 55;
        let original = sent.clone();
        shard.config().delay_levels.schedule(&mut sent).unwrap();
        assert_eq!((sent.topic.as_str(), sent.queue_id), (SCHEDULE_TOPIC, 1));
        shard.append(&sent).await.unwrap();
        set_clock(&clock, T0 + 5_000);
        shard.deliver_due(Scheduled::Level(2)).await.unwrap();
        let got = records(&shard, REAL, 3).await;
        assert_eq!(got.len(), 1);
        let got = &got[0];
        assert_eq!((got.topic(), got.queue_id(), got.flag()), (REAL, 3, 7));
        assert_eq!(got.body(), original.body);
        assert_eq!(got.reconsume_times(), 2);
        assert_eq!(got.born_timestamp_ms(), T0 - 55);
        assert_eq!(got.born_host(), original.born_host);
        assert_eq!(got.sys_flag(), original.sys_flag);
        // DELAY removed; REAL_TOPIC and REAL_QID stay, as Apache's messageTimeup leaves them.
        let props = std::str::from_utf8(&original.properties).unwrap();
        let expected = props.replace(&format_properties([("DELAY", "2")]), "")
            + &format_properties([("REAL_TOPIC", REAL), ("REAL_QID", "3")]);
        assert_eq!(got.properties(), expected);
        assert_eq!(find_property(got.properties(), "DELAY"), None);
        // tagsCode is the hash of TAGS again: a tag-filtered read finds it.
        let tag = [java_string_hash("TagA")];
        let filtered = shard
            .read_queue(QueueReadRequest {
                topic: REAL,
                queue_id: 3,
                offset: 0,
                max_count: 10,
                max_bytes: usize::MAX,
                tag_filter: Some(&tag),
                record_filter: None,
            })
            .await
            .unwrap();
        assert_eq!(filtered.records.len(), 1);
        let keys = shard
            .query_by_key(ringmq_shards::KeyQuery {
                topic: REAL,
                key: "k2",
                begin_ms: 0,
                end_ms: i64::MAX,
                max: 10,
            })
            .await
            .unwrap();
        assert_eq!(
            keys.len(),
            1,
            "the delivered copy is indexed under its real topic"
        );
    });
}

/// Levels 1, 3 and 18; level 1 delivered and persisted, level 3 delivered after.
async fn mid_schedule(disk: &SimDisk, clock: &SimClock) -> SimShard {
    let shard = open(disk, clock).await;
    for (body, delay) in [
        ("one-a", "1"),
        ("one-b", "1"),
        ("three", "3"),
        ("late", "18"),
    ] {
        send(&shard, 0, body, delay).await;
    }
    set_clock(clock, T0 + 1_000);
    assert_eq!(
        shard.deliver_due(Scheduled::Level(1)).await.unwrap(),
        DeliveryTurn::Delivered(2)
    );
    shard.persist().await.unwrap();
    set_clock(clock, T0 + 10_000);
    assert_eq!(
        shard.deliver_due(Scheduled::Level(3)).await.unwrap(),
        DeliveryTurn::Delivered(1)
    );
    shard
}

/// Delivers everything due by 2 h and returns what the real queue holds.
async fn finish(shard: &SimShard, clock: &SimClock) -> Vec<String> {
    set_clock(clock, T0 + 7_200_000);
    for level in 1..=18 {
        while let DeliveryTurn::Delivered(_) =
            shard.deliver_due(Scheduled::Level(level)).await.unwrap()
        {}
    }
    delivered(shard).await
}

#[test]
fn a_clean_restart_resumes_from_the_persisted_progress() {
    block_on(async {
        let (disk, clock) = (SimDisk::new(5, 64 << 20), SimClock::new(T0));
        // A clean stop persists (runtime's stop_shard): nothing repeats, nothing is lost.
        let shard = mid_schedule(&disk, &clock).await;
        shard.persist().await.unwrap();
        drop(shard);
        let shard = open(&disk, &clock).await;
        assert_eq!((shard.schedule_offset(1), shard.schedule_offset(3)), (2, 1));
        assert_eq!(
            shard.deliver_due(Scheduled::Level(18)).await.unwrap(),
            DeliveryTurn::DueAt(T0 + 7_200_000)
        );
        assert_eq!(
            finish(&shard, &clock).await,
            ["late", "one-a", "one-b", "three"]
        );
    });
}

#[test]
fn a_crash_mid_schedule_loses_nothing_and_repeats_only_the_unpersisted() {
    for seed in 0..20 {
        block_on(async {
            let (disk, clock) = (SimDisk::new(seed, 64 << 20), SimClock::new(T0));
            drop(mid_schedule(&disk, &clock).await);
            disk.crash();
            let shard = open(&disk, &clock).await;
            let before = delivered(&shard).await;
            assert!(
                before.starts_with(&["one-a".into(), "one-b".into()]),
                "{seed}: {before:?}"
            );
            let after = finish(&shard, &clock).await;
            // Level 1's progress was persisted after its deliveries were made durable, so
            // they are there once; level 3's was not: delivered again, perhaps twice in all.
            let count = |b: &str| after.iter().filter(|a| *a == b).count();
            assert_eq!(
                (count("one-a"), count("one-b"), count("late")),
                (1, 1, 1),
                "{seed}"
            );
            assert!((1..=2).contains(&count("three")), "{seed}: {after:?}");
        });
    }
}

#[test]
fn the_level_task_waits_for_appends_and_sleeps_until_due() {
    block_on(async {
        let (disk, clock) = (SimDisk::new(6, 64 << 20), SimClock::new(T0));
        let shard = open(&disk, &clock).await;
        // The queue is empty: the task waits on its append event; the send comes after.
        let sender = async {
            yield_now().await;
            send(&shard, 1, "later", "2").await;
        };
        let waiter = async { shard.wait_for_offset(REAL, 1, 0).await.unwrap() };
        zip(or(waiter, shard.run_scheduled(Scheduled::Level(2))), sender).await;
        // SimClock's sleep jumps to the deadline: the task slept exactly until due.
        assert_eq!(ringmq_shards::Clock::now_ms(&clock), T0 + 5_000);
        let got = records(&shard, REAL, 1).await;
        assert_eq!(got[0].store_timestamp_ms(), T0 + 5_000);
        assert_eq!(shard.schedule_offset(2), 1);
    });
}

#[test]
fn recovery_rebuilds_the_schedule_queue_with_due_times() {
    block_on(async {
        let (disk, clock) = (SimDisk::new(7, 64 << 20), SimClock::new(T0));
        let shard = open(&disk, &clock).await;
        send(&shard, 0, "ten", "3").await;
        drop(shard); // Durable (SYNC_FLUSH) but never checkpointed: recovery re-reads the log.
        clock.advance(1);
        let shard = open(&disk, &clock).await;
        assert_eq!(
            shard.deliver_due(Scheduled::Level(3)).await.unwrap(),
            DeliveryTurn::DueAt(T0 + 10_000)
        );
    });
}

#[test]
fn a_turn_delivers_a_bounded_batch() {
    block_on(async {
        let (disk, clock) = (SimDisk::new(8, 64 << 20), SimClock::new(T0));
        let shard = open(&disk, &clock).await;
        for i in 0..100 {
            send(&shard, 0, &format!("m{i:03}"), "1").await;
        }
        set_clock(&clock, T0 + 1_000);
        let mut got = Vec::new();
        for _ in 0..3 {
            got.push(shard.deliver_due(Scheduled::Level(1)).await.unwrap());
        }
        let expected = [
            DeliveryTurn::Delivered(64), // DELIVERY_BATCH_MAX
            DeliveryTurn::Delivered(36),
            DeliveryTurn::Drained(100),
        ];
        assert_eq!(got, expected);
        // Bytes bound too: this config's largest entry is 32 KiB, so two 12 KiB bodies a turn.
        let big = "x".repeat(12 << 10);
        for _ in 0..3 {
            send(&shard, 1, &big, "1").await;
        }
        set_clock(&clock, T0 + 2_000);
        assert_eq!(
            shard.deliver_due(Scheduled::Level(1)).await.unwrap(),
            DeliveryTurn::Delivered(2)
        );
        assert_eq!(
            shard.deliver_due(Scheduled::Level(1)).await.unwrap(),
            DeliveryTurn::Delivered(1)
        );
        assert_eq!(records(&shard, REAL, 1).await.len(), 3);
    });
}

#[test]
fn a_clock_set_back_makes_far_future_records_due_now() {
    block_on(async {
        let (disk, clock) = (SimDisk::new(9, 64 << 20), SimClock::new(T0));
        let shard = open(&disk, &clock).await;
        send(&shard, 0, "two-hours", "18").await;
        // Three hours back: the record's due time is further ahead than its level's whole
        // delay, so it cannot be trusted (Apache's correctDeliverTimestamp): due now.
        clock.advance(-3 * 3_600_000);
        assert_eq!(
            shard.deliver_due(Scheduled::Level(18)).await.unwrap(),
            DeliveryTurn::Delivered(1)
        );
        // Back by less than the time since it was stored leaves it within its delay: it
        // waits for its own time.
        send(&shard, 1, "still-two-hours", "18").await;
        clock.advance(3_600_000);
        clock.advance(-1_800_000);
        let due = T0 - 3 * 3_600_000 + 7_200_000;
        assert_eq!(
            shard.deliver_due(Scheduled::Level(18)).await.unwrap(),
            DeliveryTurn::DueAt(due)
        );
    });
}
