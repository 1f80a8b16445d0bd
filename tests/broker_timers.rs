//! 5.x timer messages against a real broker process, with raw requests: a timer send is
//! answered with its timer record (rmq_sys_wheel_timer, TIMER_OUT_MS as Apache rounds it), is
//! not in its real queue at once and arrives there at its slot's end with Apache's delivered
//! properties; a bad or too far timer is refused MESSAGE_ILLEGAL, and with
//! timerWheelEnable=false every timer SYSTEM_ERROR, as Apache answers them.

mod broker_support;

use broker_support::process_support::TempDir;
use broker_support::requests::{call, create_topic, pull, records, send, view_record};
use broker_support::Standalone;
use ringmq::client::{block_on, RemotingClient};
use ringmq::protocol::codes::response;
use ringmq::protocol::header::SendMessageResponseHeader;
use std::time::{SystemTime, UNIX_EPOCH};

const TOPIC: &str = "Timed";
const GROUP: &str = "TimedGroup";
/// A pull held this long waits for a 2 s timer with room for a loaded machine.
const HOLD_MS: i64 = 15_000;

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_millis() as i64
}

/// A 2-shard standalone with broker.conf `conf`, and the directory holding the file.
fn start_with(conf: &str) -> (TempDir, Standalone) {
    let dir = TempDir::new("timer-conf");
    let path = dir.path().join("broker.conf");
    std::fs::write(&path, conf).unwrap();
    let broker = Standalone::start_with(2, &["-c", path.to_str().unwrap()]);
    (dir, broker)
}

#[test]
fn a_timer_is_held_until_its_slot_ends_and_bad_ones_are_refused() {
    let (_conf, broker) = start_with("timerMaxDelaySec=60\n");
    block_on(async {
        let client = RemotingClient::connect(&broker.broker_addr).await.unwrap();
        let created = call(&client, create_topic(TOPIC, 4)).await;
        assert_eq!(created.code, response::SUCCESS, "{:?}", created.remark);
        for bad in [
            ("TIMER_DELAY_SEC", "soon"),
            ("TIMER_DELAY_MS", "61000"),
            ("TIMER_DELIVER_MS", &(now_ms() + 120_000).to_string()),
        ] {
            let refused = call(&client, send(TOPIC, 0, b"x", &[bad])).await;
            assert_eq!(refused.code, response::MESSAGE_ILLEGAL, "{bad:?}");
            let remark = refused.remark.unwrap_or_default();
            assert!(remark.contains("60000ms"), "Apache's remark: {remark}");
        }
        let before = now_ms();
        let props = [("TAGS", "TagT"), ("KEYS", "k1"), ("TIMER_DELAY_SEC", "2")];
        let resp = call(&client, send(TOPIC, 1, b"two", &props)).await;
        let after = now_ms();
        assert_eq!(resp.code, response::SUCCESS, "{:?}", resp.remark);
        let sent: SendMessageResponseHeader = resp.decode_header().unwrap();
        assert_eq!(sent.queue_id, 1, "the queue it was sent to, as Apache");
        let record = view_record(&client, &sent.msg_id).await;
        assert_eq!(record.topic(), "rmq_sys_wheel_timer");
        assert_eq!(record.property("REAL_TOPIC"), Some(TOPIC));
        assert_eq!(record.property("REAL_QID"), Some("1"));
        let out: i64 = record.property("TIMER_OUT_MS").unwrap().parse().unwrap();
        // the asked time (2 s after the broker got it) rounded down to the second
        assert!(((before + 2000) / 1000 - 1) * 1000 <= out && out <= (after + 2000) / 1000 * 1000);
        let empty = call(&client, pull(GROUP, TOPIC, 1, 0, Some("*"), 0)).await;
        assert_eq!(empty.code, response::PULL_NOT_FOUND, "not there at once");
        let got = call(&client, pull(GROUP, TOPIC, 1, 0, Some("*"), HOLD_MS)).await;
        let arrived = now_ms();
        assert_eq!(got.code, response::SUCCESS, "{:?}", got.remark);
        let delivered = records(&got);
        assert_eq!(delivered.len(), 1, "delivered once");
        let delivered = &delivered[0];
        let due = out + 1000;
        assert!(
            delivered.store_timestamp_ms() >= due && arrived >= due,
            "stored {} before its slot's end {due}",
            delivered.store_timestamp_ms()
        );
        assert_eq!(
            (delivered.topic(), delivered.body().as_ref()),
            (TOPIC, &b"two"[..])
        );
        assert_eq!(delivered.property("KEYS"), Some("k1"));
        assert_eq!(delivered.property("TAGS"), Some("TagT"));
        assert_eq!(delivered.property("REAL_TOPIC"), None);
        assert_eq!(
            delivered.property("TIMER_OUT_MS"),
            Some(out.to_string().as_str())
        );
        assert!(delivered.property("TIMER_ENQUEUE_MS").is_some());
        assert!(delivered.property("TIMER_DEQUEUE_MS").is_some());
        assert_eq!(
            delivered.property("UNIQ_KEY"),
            record.property("UNIQ_KEY"),
            "the consumer's msgId is the producer's"
        );
    })
    .unwrap();
}

#[test]
fn with_the_timer_wheel_off_a_timer_is_refused_system_error() {
    let (_conf, broker) = start_with("timerWheelEnable=false\n");
    block_on(async {
        let client = RemotingClient::connect(&broker.broker_addr).await.unwrap();
        let created = call(&client, create_topic(TOPIC, 4)).await;
        assert_eq!(created.code, response::SUCCESS, "{:?}", created.remark);
        let refused = call(&client, send(TOPIC, 0, b"x", &[("TIMER_DELAY_SEC", "5")])).await;
        assert_eq!(refused.code, response::SYSTEM_ERROR);
        let remark = refused.remark.unwrap_or_default();
        assert!(remark.contains("timerWheelEnable is false"), "{remark}");
        // as Apache, before looking at the time: one already due is refused too
        let past = call(&client, send(TOPIC, 0, b"x", &[("TIMER_DELIVER_MS", "1")])).await;
        assert_eq!(past.code, response::SYSTEM_ERROR);
        let plain = call(&client, send(TOPIC, 0, b"now", &[("KEYS", "k")])).await;
        assert_eq!(plain.code, response::SUCCESS, "{:?}", plain.remark);
    })
    .unwrap();
}
