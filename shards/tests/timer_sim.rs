//! 5.x timer messages on the simulated disk and clock: each delivered at the end of its
//! precision slot and not 1 ms before, after hopping through its stages; a far one kept; the
//! waits surviving a crash (SYNC_FLUSH, 20 seeds) with nothing lost or early (the unpersisted
//! deliveries and hops done again); and the stage task of
//! `run_scheduled` sleeping until its head is due.

mod common;

use bytes::Bytes;
use common::{all, config, message};
use futures_lite::future::{block_on, or, yield_now, zip};
use ringmq_shards::record::{find_property, format_properties, RecordView};
use ringmq_shards::timer::Stage;
use ringmq_shards::{DeliveryTurn, FlushMode, Scheduled, Shard, SimClock, SimDisk};
use std::path::Path;

type SimShard = Shard<SimDisk, SimClock>;

const DIR: &str = "/shard";
/// Half a second into a precision slot, so every due time is rounded.
const T0: i64 = 1_700_000_000_500;
const REAL: &str = "Real";

async fn open(disk: &SimDisk, clock: &SimClock) -> SimShard {
    let cfg = config(Path::new(DIR), FlushMode::SyncFlush, 64 << 10);
    Shard::open(cfg, disk.clone(), clock.clone()).await.unwrap()
}

/// Places and stores a message asking for `property=value` as the broker's send path does.
async fn send(
    shard: &SimShard,
    clock: &SimClock,
    body: &str,
    property: &str,
    value: &str,
) -> Stage {
    let mut m = message(REAL, 0, body.as_bytes(), Some("TagA"), Some("k1"));
    let props = std::str::from_utf8(&m.properties).unwrap().to_owned();
    m.properties = Bytes::from(props + &format_properties([(property, value)]));
    let now = ringmq_shards::Clock::now_ms(clock);
    let stage = shard.config().timers.place(&mut m, now).unwrap().unwrap();
    shard.append(&m).await.unwrap();
    stage
}

/// What REAL queue 0 holds: (body, store time).
async fn delivered(shard: &SimShard) -> Vec<(String, i64)> {
    let read = shard.read_queue(all(REAL, 0)).await.unwrap();
    read.records
        .into_iter()
        .map(|r| RecordView::parse(r).unwrap())
        .map(|r| {
            (
                String::from_utf8(r.body().to_vec()).unwrap(),
                r.store_timestamp_ms(),
            )
        })
        .collect()
}

/// One turn of every stage the shard delivers.
async fn turn_all(shard: &SimShard) {
    for stage in 0..shard.timer_stages() {
        while let DeliveryTurn::Delivered(_) = shard
            .deliver_due(Scheduled::TimerStage(stage))
            .await
            .unwrap()
        {}
    }
}

fn set_clock(clock: &SimClock, at_ms: i64) {
    clock.advance(at_ms - ringmq_shards::Clock::now_ms(clock));
}

/// 1 s, 5 s, 40 s (an upper hop first) and 2 days; (body, due time).
async fn send_four(shard: &SimShard, clock: &SimClock) -> Vec<(&'static str, i64)> {
    assert_eq!(
        send(shard, clock, "one", "TIMER_DELAY_SEC", "1").await,
        Stage(1)
    );
    assert_eq!(
        send(shard, clock, "five", "TIMER_DELAY_MS", "5000").await,
        Stage(5)
    );
    let at = (T0 + 40_000).to_string();
    assert_eq!(
        send(shard, clock, "forty", "TIMER_DELIVER_MS", &at).await,
        Stage(17)
    );
    send(shard, clock, "two-days", "TIMER_DELAY_SEC", "172800").await;
    // due at the end of the slot holding the asked time
    vec![
        ("one", T0 + 1_500),
        ("five", T0 + 5_500),
        ("forty", T0 + 40_500),
        ("two-days", T0 + 172_800_500),
    ]
}

#[test]
fn each_timer_is_delivered_at_its_slot_end_and_not_1_ms_before() {
    block_on(async {
        let (disk, clock) = (SimDisk::new(1, 64 << 20), SimClock::new(T0));
        let shard = open(&disk, &clock).await;
        let due = send_four(&shard, &clock).await;
        assert_eq!(shard.timer_stages(), 16 + 4 * 15);
        for (i, (body, at)) in due.iter().enumerate() {
            // walk up to 1 ms before, through every hop on the way
            for step in [at - 20_000, at - 10_000, at - 2_000, at - 1] {
                if step > ringmq_shards::Clock::now_ms(&clock) {
                    set_clock(&clock, step);
                    turn_all(&shard).await;
                }
            }
            assert_eq!(delivered(&shard).await.len(), i, "1 ms before {body}");
            set_clock(&clock, *at);
            turn_all(&shard).await;
            let got = delivered(&shard).await;
            assert_eq!(got.len(), i + 1, "{body} at its time");
            assert_eq!(got[i], (body.to_string(), *at));
        }
        let read = shard.read_queue(all(REAL, 0)).await.unwrap();
        let last = RecordView::parse(read.records[3].clone()).unwrap();
        assert_eq!(last.property("TIMER_ENQUEUE_MS"), Some(&*T0.to_string()));
        assert_eq!(last.property("REAL_TOPIC"), None);
        assert!(find_property(last.properties(), "KEYS").is_some());
    });
}

#[test]
fn pending_timers_survive_a_crash_and_none_is_lost() {
    for seed in 0..20 {
        block_on(async {
            let (disk, clock) = (SimDisk::new(seed, 64 << 20), SimClock::new(T0));
            let shard = open(&disk, &clock).await;
            let due = send_four(&shard, &clock).await;
            // "forty" makes its upper hop (persisted), "one" is delivered (not persisted)
            set_clock(&clock, T0 + 1_500);
            turn_all(&shard).await;
            set_clock(&clock, T0 + 32_600);
            shard.persist().await.unwrap();
            turn_all(&shard).await;
            drop(shard);
            disk.crash();
            let shard = open(&disk, &clock).await;
            set_clock(&clock, due[3].1 - 1);
            turn_all(&shard).await;
            let got = delivered(&shard).await;
            let count = |b: &str| got.iter().filter(|(body, _)| body == b).count();
            // "one"'s delivery was persisted, so it is there once; "five"'s delivery and
            // "forty"'s hop were not: done again, perhaps twice in all (at least once, as the
            // delay levels and Apache), never lost.
            assert_eq!(count("one"), 1, "{seed}");
            assert!((1..=2).contains(&count("five")), "{seed}: {got:?}");
            assert!((1..=2).contains(&count("forty")), "{seed}: {got:?}");
            assert_eq!(count("two-days"), 0, "{seed}: not before its time");
            let late = got.iter().find(|(b, _)| b == "forty").unwrap().1;
            assert!(late >= due[2].1, "{seed}: forty at {late}");
            set_clock(&clock, due[3].1);
            turn_all(&shard).await;
            let got = delivered(&shard).await;
            assert_eq!(
                got.iter().filter(|(b, _)| b == "two-days").count(),
                1,
                "{seed}"
            );
            assert!(disk.crashes() > 0);
        });
    }
}

#[test]
fn a_stage_task_sleeps_until_its_head_is_due() {
    block_on(async {
        let (disk, clock) = (SimDisk::new(6, 64 << 20), SimClock::new(T0));
        let shard = open(&disk, &clock).await;
        // The stage is empty: the task waits on its append event; the send comes after.
        let sender = async {
            yield_now().await;
            send(&shard, &clock, "one", "TIMER_DELAY_SEC", "1").await;
        };
        let waiter = async { shard.wait_for_offset(REAL, 0, 0).await.unwrap() };
        zip(
            or(waiter, shard.run_scheduled(Scheduled::TimerStage(1))),
            sender,
        )
        .await;
        // SimClock's sleep jumps to the deadline: the task slept exactly until due.
        assert_eq!(ringmq_shards::Clock::now_ms(&clock), T0 + 1_500);
        assert_eq!(delivered(&shard).await, [("one".to_string(), T0 + 1_500)]);
        assert_eq!(shard.timer_offset(1), 1);
    });
}
