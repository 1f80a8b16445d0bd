//! Retention and topic deletion against a real broker process, with raw requests: a broker
//! with 64 KiB segments and `fileReservedTime=0` removes every sealed segment (continuously,
//! within a second here), and then answers at the edges as Apache 5.x: pulls below the min
//! offset PULL_OFFSET_MOVED / OFFSET_TOO_SMALL to the min, past the max to the max, a group
//! with no offset QUERY_NOT_FOUND, GET_MIN_OFFSET, SEARCH_OFFSET_BY_TIMESTAMP and
//! GET_EARLIEST_MSG_STORETIME from the retained entries, nothing removed found by id, and a
//! lagging group logged. DELETE_TOPIC_IN_BROKER removes a topic's data on every shard, across
//! a clean restart and a crash, and the topic created again starts at 0.

mod broker_support;

use broker_support::process_support::TempDir;
use broker_support::requests::{call, create_topic, pull, query_offset, send, update_offset};
use broker_support::Standalone;
use ringmq::client::{block_on, RemotingClient};
use ringmq::protocol::body::{self, KvTable};
use ringmq::protocol::codes::{request as code, response};
use ringmq::protocol::command::RemotingCommand;
use ringmq::protocol::header::{
    GetEarliestMsgStoretimeResponseHeader, GetMaxOffsetRequestHeader, OffsetResponseHeader,
    PullMessageResponseHeader, QueryConsumerOffsetRequestHeader, QueryMessageRequestHeader,
    QueueRequestHeader, SearchOffsetRequestHeader, SendMessageResponseHeader, TopicRequestHeader,
    ViewMessageRequestHeader,
};
use ringmq::protocol::message::record::RecordView;
use ringmq::protocol::message::{split_records, OffsetMsgId};
use std::time::{Duration, Instant};

const QUEUES: i32 = 4;
/// Messages per queue: ~1 KiB each, ~200 KiB per shard, so ~3 sealed 64 KiB segments each.
const PER_QUEUE: i64 = 100;
/// How long the removals may take on a loaded machine (they take well under a second).
const REMOVAL_DEADLINE: Duration = Duration::from_secs(60);

/// A 2-shard standalone whose broker.conf removes every sealed segment at once.
fn start_retaining() -> (TempDir, Standalone) {
    let conf = TempDir::new("retention-conf");
    let path = conf.path().join("broker.conf");
    std::fs::write(
        &path,
        "mappedFileSizeCommitLog=65536\nfileReservedTime=0\ndeleteWhen=04\n\
         cleanResourceInterval=100\ndeleteCommitLogFilesInterval=10\n",
    )
    .unwrap();
    let broker = Standalone::start_with(2, &["-c", path.to_str().unwrap()]);
    (conf, broker)
}

fn queue_header(topic: &str, queue_id: i32) -> QueueRequestHeader {
    QueueRequestHeader {
        topic: topic.into(),
        queue_id,
    }
}

async fn offset_of(client: &RemotingClient, request: RemotingCommand) -> i64 {
    let resp = call(client, request).await;
    assert_eq!(resp.code, response::SUCCESS, "{:?}", resp.remark);
    resp.decode_header::<OffsetResponseHeader>().unwrap().offset
}

async fn min_offset(client: &RemotingClient, topic: &str, queue_id: i32) -> i64 {
    let request =
        RemotingCommand::request(code::GET_MIN_OFFSET).with_header(&queue_header(topic, queue_id));
    offset_of(client, request).await
}

async fn max_offset(client: &RemotingClient, topic: &str, queue_id: i32) -> i64 {
    let request =
        RemotingCommand::request(code::GET_MAX_OFFSET).with_header(&GetMaxOffsetRequestHeader {
            topic: topic.into(),
            queue_id,
            committed: true,
        });
    offset_of(client, request).await
}

fn records(response: &RemotingCommand) -> Vec<RecordView> {
    split_records(response.body.clone())
        .map(|r| r.unwrap())
        .collect()
}

/// Sends `n` messages to each queue of `topic` (key `<topic>-<i>`); returns the send answers.
async fn fill(client: &RemotingClient, topic: &str, n: i64) -> Vec<SendMessageResponseHeader> {
    let mut sent = Vec::new();
    for i in 0..n {
        for queue_id in 0..QUEUES {
            let body = format!("{topic}-{queue_id}-{i}-{}", "r".repeat(1000));
            let key = format!("{topic}-{i}");
            let request = send(topic, queue_id, body.as_bytes(), &[("KEYS", key.as_str())]);
            let resp = call(client, request).await;
            assert_eq!(resp.code, response::SUCCESS, "{:?}", resp.remark);
            sent.push(resp.decode_header().unwrap());
        }
    }
    sent
}

fn delete_topic(topic: &str) -> RemotingCommand {
    RemotingCommand::request(code::DELETE_TOPIC_IN_BROKER).with_header(&TopicRequestHeader {
        topic: topic.into(),
    })
}

fn by_key(topic: &str, key: &str) -> RemotingCommand {
    RemotingCommand::request(code::QUERY_MESSAGE).with_header(&QueryMessageRequestHeader {
        topic: topic.into(),
        key: key.into(),
        max_num: 32,
        begin_timestamp: 0,
        end_timestamp: i64::MAX,
    })
}

#[test]
fn after_retention_the_edges_answer_as_apache_5() {
    let (_conf, broker) = start_retaining();
    block_on(async {
        let client = RemotingClient::connect(&broker.broker_addr).await.unwrap();
        let resp = call(&client, create_topic("R", QUEUES)).await;
        assert_eq!(resp.code, response::SUCCESS);
        for queue_id in 0..QUEUES {
            let commit = call(&client, update_offset("Lagging", "R", queue_id, 1)).await;
            assert_eq!(commit.code, response::SUCCESS, "{:?}", commit.remark);
        }
        let sent = fill(&client, "R", PER_QUEUE).await;

        // Every queue loses its first segments' messages; the active segments stay.
        let started = Instant::now();
        let mut mins = vec![0; QUEUES as usize];
        while mins.contains(&0) {
            assert!(started.elapsed() < REMOVAL_DEADLINE, "no removal: {mins:?}");
            for queue_id in 0..QUEUES {
                mins[queue_id as usize] = min_offset(&client, "R", queue_id).await;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        broker.wait_for_any_log(&["retention removed messages a group had not consumed yet"]);

        for queue_id in 0..QUEUES {
            let min = min_offset(&client, "R", queue_id).await;
            let max = max_offset(&client, "R", queue_id).await;
            assert!(
                0 < min && min < max && max == PER_QUEUE,
                "{queue_id}: {min}..{max}"
            );

            let below = call(&client, pull("G", "R", queue_id, 0, Some("*"), 0)).await;
            assert_eq!(below.code, response::PULL_OFFSET_MOVED);
            assert_eq!(below.remark.as_deref(), Some("OFFSET_TOO_SMALL"));
            let header: PullMessageResponseHeader = below.decode_header().unwrap();
            assert!(header.next_begin_offset >= min && header.min_offset >= min);
            let min = header.min_offset;

            let from_min = call(&client, pull("G", "R", queue_id, min, Some("*"), 0)).await;
            assert_eq!(from_min.code, response::SUCCESS, "{:?}", from_min.remark);
            let got = records(&from_min);
            assert_eq!(got.len() as i64, max - min);
            assert_eq!(got[0].queue_offset(), min);

            let past = call(&client, pull("G", "R", queue_id, max + 5, Some("*"), 0)).await;
            assert_eq!(past.code, response::PULL_OFFSET_MOVED);
            assert_eq!(past.remark.as_deref(), Some("OFFSET_OVERFLOW_BADLY"));
            let header: PullMessageResponseHeader = past.decode_header().unwrap();
            assert_eq!(header.next_begin_offset, max, "5.x: to the max");
            let at_end = call(&client, pull("G", "R", queue_id, max, Some("*"), 0)).await;
            assert_eq!(at_end.code, response::PULL_NOT_FOUND);

            // A new group has no offset and the first message is gone: not found, so the
            // client's CONSUME_FROM_* applies.
            let fresh = call(&client, query_offset("New", "R", queue_id)).await;
            assert_eq!(fresh.code, response::QUERY_NOT_FOUND);
            // The lagging group keeps its offset; its pull is moved to the min.
            let lagging = query_offset("Lagging", "R", queue_id);
            assert_eq!(offset_of(&client, lagging).await, 1);

            let search = |timestamp| {
                RemotingCommand::request(code::SEARCH_OFFSET_BY_TIMESTAMP).with_header(
                    &SearchOffsetRequestHeader {
                        topic: "R".into(),
                        queue_id,
                        timestamp,
                        boundary_type: Default::default(),
                    },
                )
            };
            assert_eq!(offset_of(&client, search(0)).await, min);
            assert_eq!(offset_of(&client, search(i64::MAX)).await, max);
            let earliest = RemotingCommand::request(code::GET_EARLIEST_MSG_STORETIME)
                .with_header(&queue_header("R", queue_id));
            let earliest = call(&client, earliest).await;
            let earliest: GetEarliestMsgStoretimeResponseHeader = earliest.decode_header().unwrap();
            assert_eq!(earliest.timestamp, got[0].store_timestamp_ms());
        }

        // The first message is gone by id and by key; a retained one is found.
        let view = |msg_id: &str| {
            let offset = OffsetMsgId::parse(msg_id).unwrap().commit_log_offset;
            RemotingCommand::request(code::VIEW_MESSAGE_BY_ID).with_header(
                &ViewMessageRequestHeader {
                    topic: None,
                    offset,
                },
            )
        };
        assert_ne!(
            call(&client, view(&sent[0].msg_id)).await.code,
            response::SUCCESS
        );
        let last = sent.last().unwrap();
        assert_eq!(
            call(&client, view(&last.msg_id)).await.code,
            response::SUCCESS
        );
        assert_eq!(
            call(&client, by_key("R", "R-0")).await.code,
            response::QUERY_NOT_FOUND
        );
        let found = call(&client, by_key("R", &format!("R-{}", PER_QUEUE - 1))).await;
        assert_eq!(records(&found).len(), QUEUES as usize);

        let info = call(
            &client,
            RemotingCommand::request(code::GET_BROKER_RUNTIME_INFO),
        )
        .await;
        let table: KvTable = body::decode(&info.body).unwrap();
        let log_min: u64 = table.table["commitLogMinOffset"].parse().unwrap();
        assert!(
            log_min >= 2 * 65536,
            "both shards removed segments: {log_min}"
        );
    })
    .unwrap();
}

#[test]
fn a_group_without_an_offset_starts_at_zero_only_while_the_first_message_is_in_memory() {
    let broker = Standalone::start(2);
    block_on(async {
        let client = RemotingClient::connect(&broker.broker_addr).await.unwrap();
        assert_eq!(
            call(&client, create_topic("Z", QUEUES)).await.code,
            response::SUCCESS
        );
        // An empty queue: nothing in memory, so not found (Apache 5.x too); the client then
        // starts at the max, 0.
        assert_eq!(
            call(&client, query_offset("G", "Z", 0)).await.code,
            response::QUERY_NOT_FOUND
        );
        fill(&client, "Z", 1).await;
        assert_eq!(offset_of(&client, query_offset("G", "Z", 0)).await, 0);
        let no_zero = RemotingCommand::request(code::QUERY_CONSUMER_OFFSET).with_header(
            &QueryConsumerOffsetRequestHeader {
                consumer_group: "G".into(),
                topic: "Z".into(),
                queue_id: 0,
                set_zero_if_not_found: Some(false),
            },
        );
        let resp = call(&client, no_zero).await;
        assert_eq!(resp.code, response::QUERY_NOT_FOUND);
    })
    .unwrap();
}

#[test]
fn a_deleted_topic_has_no_data_left_on_any_shard_and_starts_again_at_zero() {
    let mut broker = Standalone::start(2);
    let check_gone = |broker: &Standalone| {
        block_on(async {
            let client = RemotingClient::connect(&broker.broker_addr).await.unwrap();
            for queue_id in 0..QUEUES {
                assert_eq!(max_offset(&client, "D", queue_id).await, 0);
            }
            assert_eq!(
                call(&client, by_key("D", "D-0")).await.code,
                response::QUERY_NOT_FOUND
            );
        })
        .unwrap();
    };
    block_on(async {
        let client = RemotingClient::connect(&broker.broker_addr).await.unwrap();
        assert_eq!(
            call(&client, create_topic("D", QUEUES)).await.code,
            response::SUCCESS
        );
        fill(&client, "D", 5).await;
        for queue_id in 0..QUEUES {
            let commit = call(&client, update_offset("G", "D", queue_id, 3)).await;
            assert_eq!(commit.code, response::SUCCESS);
        }
        let deleted = call(&client, delete_topic("D")).await;
        assert_eq!(deleted.code, response::SUCCESS, "{:?}", deleted.remark);
        // Its consumer offsets went with it (Apache's cleanOffsetByTopic).
        assert_eq!(
            call(&client, query_offset("G", "D", 0)).await.code,
            response::QUERY_NOT_FOUND
        );
    })
    .unwrap();
    check_gone(&broker);
    broker.stop();
    broker.start_again();
    check_gone(&broker);
    broker.kill();
    broker.start_again();
    check_gone(&broker);
    block_on(async {
        let client = RemotingClient::connect(&broker.broker_addr).await.unwrap();
        assert_eq!(
            call(&client, create_topic("D", QUEUES)).await.code,
            response::SUCCESS
        );
        let sent = fill(&client, "D", 2).await;
        for queue_id in 0..QUEUES {
            let got = call(&client, pull("G2", "D", queue_id, 0, Some("*"), 0)).await;
            let offsets: Vec<i64> = records(&got).iter().map(|r| r.queue_offset()).collect();
            assert_eq!(offsets, [0, 1], "queue {queue_id} starts clean");
        }
        assert!(sent.iter().all(|s| s.queue_offset < 2));
        assert_eq!(
            records(&call(&client, by_key("D", "D-0")).await).len(),
            QUEUES as usize
        );
    })
    .unwrap();
}
