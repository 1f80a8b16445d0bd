//! CONSUMER_SEND_MSG_BACK against a real `ringmq standalone` with 2 shards, driven with raw
//! remoting requests: the copy lands in `%RETRY%group` with the properties Apache's broker
//! sets, in `%DLQ%group` once retried enough, and a bad offset or an unknown group is an
//! error response (and the broker goes on serving). The client's fallback (its own send to
//! `%RETRY%group`) goes to `%DLQ%group` past the maximum too.

mod broker_support;

use broker_support::requests::{call, create_topic, pull, send};
use broker_support::Standalone;
use bytes::Bytes;
use ringmq::client::{block_on, RemotingClient};
use ringmq::protocol::body::subscription_group::SubscriptionGroupConfig;
use ringmq::protocol::body::{self, TopicConfigSerializeWrapper};
use ringmq::protocol::codes::{request as code, response};
use ringmq::protocol::command::RemotingCommand;
use ringmq::protocol::header::*;
use ringmq::protocol::message::record::RecordView;
use ringmq::protocol::message::{split_records, OffsetMsgId};
use std::time::{Duration, Instant};

const TOPIC: &str = "SendBackTopic";
const GROUP: &str = "SendBackGroup";
const QUEUES: i32 = 4;
/// How long a retry copy may take to reach the retry queue: delay level 1 is 1 s; the rest is
/// room for a loaded 2-core host. Not a timing assertion: only a bound on the wait.
const RETRY_ARRIVAL_WAIT: Duration = Duration::from_secs(60);
/// Each wait for the retry copy is a long poll of this long, repeated until the bound above.
const LONG_POLL_MS: i64 = 5_000;

/// Delay level 1 in the default messageDelayLevel.
const LEVEL_1_MS: i64 = 1_000;

fn now_ms() -> i64 {
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970");
    since_epoch.as_millis() as i64
}

/// broker.conf for the test's broker: groups must be created first, so an unknown one is
/// refused as on an Apache broker with autoCreateSubscriptionGroup=false.
const BROKER_CONF: &str = "autoCreateSubscriptionGroup=false\n";

fn send_back(offset: i64, group: &str, delay_level: i32, max: Option<i32>) -> RemotingCommand {
    RemotingCommand::request(code::CONSUMER_SEND_MSG_BACK).with_header(
        &ConsumerSendMsgBackRequestHeader {
            offset,
            group: group.into(),
            delay_level,
            origin_msg_id: Some("client-side-id".into()),
            origin_topic: Some(TOPIC.into()),
            unit_mode: false,
            max_reconsume_times: max,
        },
    )
}

/// A consumer's fallback: SEND_MESSAGE_V2 of its own copy to the retry topic, with the
/// reconsume times and maximum in the header (no DELAY, so it is stored at once).
fn fallback_send(
    retry_topic: &str,
    body: &[u8],
    reconsume_times: i32,
    max: i32,
) -> RemotingCommand {
    let request = send(retry_topic, -1, body, &[("RETRY_TOPIC", TOPIC)]);
    let mut header = SendMessageRequestHeader::decode_from(&request).expect("send header");
    header.reconsume_times = Some(reconsume_times);
    header.max_reconsume_times = Some(max);
    RemotingCommand::request(code::SEND_MESSAGE_V2)
        .with_header(&SendMessageRequestHeaderV2(header))
        .with_body(request.body)
}

fn create_group(group: &str) -> RemotingCommand {
    let config = SubscriptionGroupConfig::new(group);
    RemotingCommand::request(code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP)
        .with_body(Bytes::from(body::encode(&config).expect("encode group")))
}

/// The first message of `queue` from offset 0, waiting for it with long polls.
async fn first_record(client: &RemotingClient, topic: &str, queue: i32) -> RecordView {
    let deadline = Instant::now() + RETRY_ARRIVAL_WAIT;
    while Instant::now() < deadline {
        let got = call(
            client,
            pull(GROUP, topic, queue, 0, Some("*"), LONG_POLL_MS),
        )
        .await;
        if got.code == response::SUCCESS {
            let records: Vec<RecordView> = split_records(got.body.clone())
                .map(|r| r.expect("valid record"))
                .collect();
            return records
                .into_iter()
                .next()
                .expect("a pull SUCCESS has records");
        }
        assert!(
            matches!(
                got.code,
                response::PULL_NOT_FOUND | response::PULL_OFFSET_MOVED
            ),
            "pull {topic}: {} {:?}",
            got.code,
            got.remark
        );
    }
    panic!("nothing reached {topic} queue {queue} within {RETRY_ARRIVAL_WAIT:?}");
}

#[test]
fn send_back_retries_through_the_retry_topic_then_the_dlq_and_refuses_bad_requests() {
    let dir = broker_support::process_support::TempDir::new("send-back-conf");
    let conf = dir.path().join("broker.conf");
    std::fs::write(&conf, BROKER_CONF).expect("write broker.conf");
    let broker = Standalone::start_with(2, &["-c", conf.to_str().expect("utf-8 path")]);
    block_on(async {
        let client = RemotingClient::connect(&broker.broker_addr).await.unwrap();
        assert_eq!(
            call(&client, create_topic(TOPIC, QUEUES)).await.code,
            response::SUCCESS
        );

        // An unknown group is refused before anything is read.
        let unknown = call(&client, send_back(0, "NoSuchGroup", 0, None)).await;
        assert_eq!(
            unknown.code,
            response::SUBSCRIPTION_GROUP_NOT_EXIST,
            "{:?}",
            unknown.remark
        );
        assert_eq!(
            call(&client, create_group(GROUP)).await.code,
            response::SUCCESS
        );

        let props = [("TAGS", "TagA"), ("KEYS", "k1"), ("user", "v")];
        // Queue 1 and 2 live on different shards: the original and its copies cross the router.
        let sent = call(&client, send(TOPIC, 1, b"retry me", &props)).await;
        assert_eq!(sent.code, response::SUCCESS, "{:?}", sent.remark);
        let sent: SendMessageResponseHeader = sent.decode_header().unwrap();
        let original_id = OffsetMsgId::parse(&sent.msg_id).unwrap();
        let original = first_record(&client, TOPIC, 1).await;

        // First failure: to %RETRY%GROUP with delay level 1 (1 s), through the schedule.
        let asked_ms = now_ms();
        let back = call(
            &client,
            send_back(original_id.commit_log_offset, GROUP, 1, Some(2)),
        )
        .await;
        assert_eq!(back.code, response::SUCCESS, "{:?}", back.remark);
        let retry_topic = format!("%RETRY%{GROUP}");
        let retried = first_record(&client, &retry_topic, 0).await;
        assert_eq!(retried.topic(), retry_topic);
        assert_eq!(retried.reconsume_times(), 1);
        assert_eq!(&retried.body()[..], b"retry me");
        assert_eq!(retried.born_timestamp_ms(), original.born_timestamp_ms());
        assert_eq!(retried.born_host(), original.born_host());
        for (name, value) in props {
            assert_eq!(retried.property(name), Some(value), "{name}");
        }
        assert_eq!(retried.property("UNIQ_KEY"), original.property("UNIQ_KEY"));
        assert_eq!(retried.property("RETRY_TOPIC"), Some(TOPIC));
        assert_eq!(
            retried.property("ORIGIN_MESSAGE_ID"),
            Some(sent.msg_id.as_str())
        );
        // Delivered by the delay-level schedule: REAL_TOPIC kept and DELAY dropped as Apache's
        // messageTimeup does, and stored no sooner than level 1 after the request was made.
        assert_eq!(retried.property("REAL_TOPIC"), Some(retry_topic.as_str()));
        assert_eq!(retried.property("DELAY"), None);
        assert!(
            retried.store_timestamp_ms() >= asked_ms + LEVEL_1_MS,
            "stored at {} for a send-back asked at {asked_ms}",
            retried.store_timestamp_ms()
        );

        // Second failure with maxReconsumeTimes 1: to %DLQ%GROUP at once, the first topic and
        // id kept.
        let back = call(
            &client,
            send_back(retried.physical_offset(), GROUP, 0, Some(1)),
        )
        .await;
        assert_eq!(back.code, response::SUCCESS, "{:?}", back.remark);
        let dlq_topic = format!("%DLQ%{GROUP}");
        let dead = first_record(&client, &dlq_topic, 0).await;
        assert_eq!(dead.reconsume_times(), 2);
        assert_eq!(&dead.body()[..], b"retry me");
        assert_eq!(dead.property("RETRY_TOPIC"), Some(TOPIC));
        assert_eq!(
            dead.property("ORIGIN_MESSAGE_ID"),
            Some(sent.msg_id.as_str())
        );
        assert_eq!(dead.property("DELAY"), Some("0"));
        assert_eq!(dead.property("KEYS"), Some("k1"));

        // A negative level also sends it to the DLQ, whatever the count.
        let back = call(
            &client,
            send_back(original_id.commit_log_offset, GROUP, -1, None),
        )
        .await;
        assert_eq!(back.code, response::SUCCESS, "{:?}", back.remark);
        let dlq_max = call(
            &client,
            pull(GROUP, &dlq_topic, 0, 1, Some("*"), LONG_POLL_MS),
        )
        .await;
        assert_eq!(dlq_max.code, response::SUCCESS, "{:?}", dlq_max.remark);

        // The client's own copy (its fallback when a send-back fails) past the maximum: to
        // the DLQ too, whichever shard the retry queue and the DLQ live on.
        let fallback = fallback_send(&retry_topic, b"fallback", 1, 1);
        let sent = call(&client, fallback).await;
        assert_eq!(sent.code, response::SUCCESS, "{:?}", sent.remark);
        let dlq_third = call(
            &client,
            pull(GROUP, &dlq_topic, 0, 2, Some("*"), LONG_POLL_MS),
        )
        .await;
        assert_eq!(dlq_third.code, response::SUCCESS, "{:?}", dlq_third.remark);
        let records: Vec<RecordView> = split_records(dlq_third.body.clone())
            .map(|r| r.unwrap())
            .collect();
        assert_eq!(&records[0].body()[..], b"fallback");
        assert_eq!(records[0].topic(), dlq_topic);
        // Below the maximum it stays a retry.
        let retry_max = call(&client, pull(GROUP, &retry_topic, 0, 0, Some("*"), 0)).await;
        let retry_max: PullMessageResponseHeader = retry_max.decode_header().unwrap();
        let sent = call(&client, fallback_send(&retry_topic, b"retry", 0, 1)).await;
        assert_eq!(sent.code, response::SUCCESS, "{:?}", sent.remark);
        let next = call(
            &client,
            pull(
                GROUP,
                &retry_topic,
                0,
                retry_max.max_offset,
                Some("*"),
                LONG_POLL_MS,
            ),
        )
        .await;
        assert_eq!(next.code, response::SUCCESS, "{:?}", next.remark);

        // The DLQ is one read-write queue (perm 6, as from Apache 4.9.2), the retry topic too.
        let all = call(
            &client,
            RemotingCommand::request(code::GET_ALL_TOPIC_CONFIG),
        )
        .await;
        let topics: TopicConfigSerializeWrapper = body::decode(&all.body).unwrap();
        for topic in [&dlq_topic, &retry_topic] {
            let config = &topics.topic_config_table[topic.as_str()];
            assert_eq!((config.read_queue_nums, config.perm), (1, 6), "{topic}");
        }

        // Offsets naming no record: SYSTEM_ERROR, not a crash.
        let no_record = original_id.commit_log_offset + 1;
        let shard_9 = (9_i64 << 48) | 4096;
        for offset in [no_record, -1, shard_9, i64::MAX] {
            let bad = call(&client, send_back(offset, GROUP, 0, None)).await;
            assert_eq!(
                bad.code,
                response::SYSTEM_ERROR,
                "offset {offset}: {:?}",
                bad.remark
            );
        }
        let again = call(&client, send(TOPIC, 1, b"still serving", &[])).await;
        assert_eq!(again.code, response::SUCCESS, "{:?}", again.remark);
    })
    .expect("client executor");
}
