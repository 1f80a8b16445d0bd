//! Tests of timer placement, stages and hops (pure functions).

use super::*;
use crate::record::{encode, StoreFields};
use crate::transaction::TRANS_HALF_TOPIC;
use bytes::Bytes;

const NOW: i64 = 1_700_000_000_500;

fn message(properties: &[(&str, &str)]) -> Message {
    Message {
        topic: "Real".into(),
        queue_id: 3,
        flag: 7,
        sys_flag: 0,
        born_timestamp_ms: NOW - 10,
        born_host: "127.0.0.1:50000".parse().unwrap(),
        reconsume_times: 0,
        prepared_transaction_offset: 0,
        body: Bytes::from_static(b"body"),
        properties: format_properties(properties.iter().copied()).into(),
    }
}

fn property<'a>(message: &'a Message, name: &str) -> Option<&'a str> {
    find_property(std::str::from_utf8(&message.properties).unwrap(), name)
}

/// `message` stored at `store_ms`, as the delivery reads it back.
fn stored(message: &Message, store_ms: i64) -> RecordView {
    let store = StoreFields {
        queue_offset: 0,
        physical_offset: 0,
        store_timestamp_ms: store_ms,
        store_host: "127.0.0.1:10911".parse().unwrap(),
    };
    RecordView::parse(encode(message, &store).unwrap()).unwrap()
}

#[test]
fn precision_rounds_down_as_apaches_setter() {
    let mut config = TimerConfig::default();
    for (asked, got) in [
        (1, 100),
        (199, 100),
        (200, 200),
        (499, 200),
        (999, 500),
        (5000, 1000),
    ] {
        config.set_precision_ms(asked);
        assert_eq!(config.precision_ms(), got, "asked {asked}");
    }
}

#[test]
fn stages_cover_the_max_delay_with_few_hops() {
    let config = TimerConfig::default();
    // 3 days = 259 200 s: final stages and 4 upper digits (16^4 s ≤ 3 days < 16^5 s).
    assert_eq!(config.stages_used(), 16 + 4 * 15);
    assert_eq!(config.stage_delay_ms(0), Some(1000));
    assert_eq!(config.stage_delay_ms(15), Some(16_000));
    assert_eq!(config.stage_delay_ms(16), Some(16_000));
    assert_eq!(config.stage_delay_ms(30), Some(15 * 16_000));
    assert_eq!(config.stage_delay_ms(31), Some(256_000));
    assert_eq!(
        config.stage_delay_ms(TIMER_STAGES_MAX - 1),
        Some(15 * 16u64.pow(8) * 1000)
    );
    assert_eq!(config.stage_delay_ms(TIMER_STAGES_MAX), None);
    assert_eq!(config.stage_for(1), Stage(0));
    assert_eq!(config.stage_for(1000), Stage(0));
    assert_eq!(config.stage_for(1001), Stage(1));
    assert_eq!(config.stage_for(16_000), Stage(15));
    assert_eq!(config.stage_for(30_000), Stage(16));
    // Hops of any wait up to 3 days: an upper stage never passes the due time, and at most
    // one hop per base-16 digit ends in a final stage.
    let max_ms = TIMER_MAX_DELAY_SEC_DEFAULT * 1000;
    for wait in [
        1,
        999,
        16_001,
        30_000,
        65_536_000,
        1_234_567_891 % max_ms,
        max_ms,
    ] {
        let (mut left, mut hops) = (wait, 0);
        loop {
            hops += 1;
            let Stage(stage) = config.stage_for(left);
            let delay = config.stage_delay_ms(stage).unwrap();
            if stage < 16 {
                assert!(left <= delay, "final stage holds {left} within {delay}");
                break;
            }
            assert!(delay <= left, "an upper hop of {delay} passes {left}");
            left -= delay;
        }
        assert!(hops <= 6, "{wait} ms took {hops} hops");
    }
}

#[test]
fn a_timer_waits_in_its_stage_with_apaches_properties() {
    let config = TimerConfig::default();
    let mut m = message(&[("TIMER_DELAY_SEC", "5"), ("UNIQ_KEY", "u1")]);
    // 5 s after NOW (…000 500) is …005 500: slot …005 000, delivered at …006 000.
    assert_eq!(config.place(&mut m, NOW), Ok(Some(Stage(5))));
    assert_eq!((m.topic.as_str(), m.queue_id), (TIMER_TOPIC, 5));
    assert_eq!(property(&m, TIMER_OUT_MS), Some("1700000005000"));
    assert_eq!(property(&m, REAL_TOPIC), Some("Real"));
    assert_eq!(property(&m, REAL_QID), Some("3"));
    assert_eq!(property(&m, "UNIQ_KEY"), Some("u1"));
    // an asked time on a slot boundary is delivered at that boundary
    let mut m = message(&[("TIMER_DELIVER_MS", "1700000010000")]);
    config.place(&mut m, NOW).unwrap();
    assert_eq!(property(&m, TIMER_OUT_MS), Some("1700000009000"));
    let mut m = message(&[("TIMER_DELAY_MS", "1500")]);
    config.place(&mut m, NOW).unwrap();
    assert_eq!(property(&m, TIMER_OUT_MS), Some("1700000001000"));
    // TIMER_DELAY_SEC wins over the others
    let mut m = message(&[("TIMER_DELIVER_MS", "1"), ("TIMER_DELAY_SEC", "2")]);
    assert!(config.place(&mut m, NOW).unwrap().is_some());
}

#[test]
fn what_is_not_a_pending_timer_is_stored_as_it_is_or_refused() {
    let mut config = TimerConfig::default();
    let past = message(&[("TIMER_DELIVER_MS", "5")]);
    let mut m = past.clone();
    assert_eq!(config.place(&mut m, NOW), Ok(None));
    assert_eq!(m, past, "due already: unchanged");
    let placed = message(&[("TIMER_DELAY_SEC", "5"), (TIMER_OUT_MS, "1")]);
    let mut m = placed.clone();
    assert_eq!(config.place(&mut m, NOW), Ok(None));
    assert_eq!(m, placed, "already a timer record");
    let mut m = message(&[("DELAY", "3"), ("TIMER_DELAY_SEC", "5"), ("KEYS", "k")]);
    assert_eq!(config.place(&mut m, NOW), Ok(None));
    assert_eq!(
        property(&m, "TIMER_DELAY_SEC"),
        None,
        "a level wins, as on Apache"
    );
    assert_eq!(property(&m, "KEYS"), Some("k"));
    let illegal = Err(TimerError::Illegal {
        max_delay_ms: TIMER_MAX_DELAY_SEC_DEFAULT * 1000,
    });
    for bad in [("TIMER_DELAY_SEC", "x"), ("TIMER_DELAY_MS", "1.5")] {
        assert_eq!(config.place(&mut message(&[bad]), NOW), illegal, "{bad:?}");
    }
    let too_far = (TIMER_MAX_DELAY_SEC_DEFAULT + 1).to_string();
    let mut m = message(&[("TIMER_DELAY_SEC", &too_far)]);
    assert_eq!(config.place(&mut m, NOW), illegal);
    let mut m = message(&[("TIMER_DELIVER_MS", "5"), (TIMER_DEL_UNIQKEY, "k")]);
    assert_eq!(config.place(&mut m, NOW), illegal);
    config.enabled = false;
    let mut m = message(&[("TIMER_DELAY_SEC", "5")]);
    assert_eq!(config.place(&mut m, NOW), Err(TimerError::NotEnabled));
}

#[test]
fn a_hop_ends_at_the_due_time_in_a_final_stage_and_after_its_delay_above() {
    let config = TimerConfig::default();
    let out = format_properties([(TIMER_OUT_MS, "1700000005000")]);
    // final stage 5 (up to 6 s): due …006 000, no later than store + 6 s
    assert_eq!(
        config.tags_code(TIMER_TOPIC, 5, NOW, &out),
        Some(1_700_000_006_000)
    );
    assert_eq!(
        config.tags_code(TIMER_TOPIC, 5, NOW - 3000, &out),
        Some(NOW + 3000)
    );
    // upper stage 16 (16 s): store + 16 s whatever the due time
    assert_eq!(
        config.tags_code(TIMER_TOPIC, 16, NOW, &out),
        Some(NOW + 16_000)
    );
    assert_eq!(config.tags_code("Real", 5, NOW, &out), None);
}

#[test]
fn a_due_record_goes_to_its_real_queue_and_one_not_due_to_the_next_stage() {
    let config = TimerConfig::default();
    let mut m = message(&[("TIMER_DELAY_SEC", "40"), ("TAGS", "TagA")]);
    config.place(&mut m, NOW).unwrap();
    let first = stored(&m, NOW);
    // 40 s: an upper hop of 32 s (digit 1, value 2), then the rest in a final stage
    assert_eq!(m.queue_id, 17);
    let again = config.next_hop(&first, NOW + 32_000).unwrap();
    assert_eq!(again.topic, TIMER_TOPIC);
    assert_eq!(
        again.queue_id, 8,
        "…041 000 is 8.5 s after the hop: final stage 9 s"
    );
    assert_eq!(property(&again, TIMER_ENQUEUE_MS), Some("1700000000500"));
    let second = stored(&again, NOW + 32_001);
    let due = 1_700_000_041_000;
    assert!(config.next_hop(&second, due - 1).unwrap().topic == TIMER_TOPIC);
    let delivered = config.next_hop(&second, due).unwrap();
    assert_eq!((delivered.topic.as_str(), delivered.queue_id), ("Real", 3));
    assert_eq!((delivered.flag, delivered.born_timestamp_ms), (7, NOW - 10));
    assert_eq!(delivered.body, Bytes::from_static(b"body"));
    assert_eq!(property(&delivered, REAL_TOPIC), None);
    assert_eq!(property(&delivered, REAL_QID), None);
    assert_eq!(
        property(&delivered, TIMER_ENQUEUE_MS),
        Some("1700000000500")
    );
    assert_eq!(
        property(&delivered, TIMER_DEQUEUE_MS),
        Some("1700000041000")
    );
    assert_eq!(property(&delivered, TIMER_OUT_MS), Some("1700000040000"));
    assert_eq!(property(&delivered, "TAGS"), Some("TagA"));
    let half = message(&[
        (TIMER_OUT_MS, "1"),
        (REAL_TOPIC, TRANS_HALF_TOPIC),
        (REAL_QID, "0"),
    ]);
    assert_eq!(
        config.next_hop(&stored(&half, NOW), NOW).unwrap_err(),
        HopError::Real(ScheduleError::HalfTopic)
    );
    let cancel = message(&[
        (TIMER_OUT_MS, "1"),
        (TIMER_DEL_UNIQKEY, "u"),
        (REAL_TOPIC, "Real"),
    ]);
    assert_eq!(
        config.next_hop(&stored(&cancel, NOW), NOW).unwrap_err(),
        HopError::Cancel
    );
    let lost = message(&[(TIMER_OUT_MS, "1")]);
    assert_eq!(
        config.next_hop(&stored(&lost, NOW), NOW).unwrap_err(),
        HopError::Real(ScheduleError::MissingRealQueue(REAL_TOPIC))
    );
}
