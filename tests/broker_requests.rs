//! The broker's requests, end to end: a real `ringmq standalone` process with 2 shards, driven
//! with the project's remoting client the way RocketMQ clients drive a broker.

mod broker_support;

use broker_support::requests::{
    call, committing, create_topic, pull, query_offset, records, send, update_offset, TIMEOUT,
};
use broker_support::Standalone;
use bytes::Bytes;
use ringmq::client::{block_on, RemotingClient};
use ringmq::protocol::body::{self, TopicRouteData};
use ringmq::protocol::codes::{request as code, response};
use ringmq::protocol::command::RemotingCommand;
use ringmq::protocol::header::*;
use ringmq::protocol::message::record::format_properties;
use ringmq::protocol::message::{encode_batch, BatchEntry, OffsetMsgId};
use std::time::{Duration, Instant};

const QUEUES: i32 = 8;
/// The consumer group of every pull and offset request below.
const GROUP: &str = "CG";
/// Offset queries while waiting for a held pull's commit to be stored: a bound on the loop
/// besides its deadline; each query is one round trip, so the commit shows within a few.
const COMMIT_QUERIES_MAX: usize = 10_000;

#[test]
fn sends_land_in_their_queues_and_pulls_return_them_byte_for_byte() {
    let broker = Standalone::start(2);
    block_on(async {
        let client = RemotingClient::connect(&broker.broker_addr).await.unwrap();
        assert_eq!(
            call(&client, create_topic("T1", QUEUES)).await.code,
            response::SUCCESS
        );
        for queue in 0..QUEUES {
            for i in 0..3 {
                let body = format!("q{queue}-m{i}");
                let resp = call(
                    &client,
                    send(
                        "T1",
                        queue,
                        body.as_bytes(),
                        &[
                            ("TAGS", if i == 1 { "B" } else { "A" }),
                            ("KEYS", &format!("key-{queue}-{i}")),
                            ("u", "v"),
                        ],
                    ),
                )
                .await;
                assert_eq!(resp.code, response::SUCCESS, "{:?}", resp.remark);
                let header: SendMessageResponseHeader = resp.decode_header().unwrap();
                assert_eq!((header.queue_id, header.queue_offset), (queue, i));
                assert_eq!(header.msg_region.as_deref(), Some("DefaultRegion"));
                let id = OffsetMsgId::parse(&header.msg_id).unwrap();
                assert_eq!(id.store_host.to_string(), broker.broker_addr);
                // The id names the record: VIEW_MESSAGE_BY_ID finds it on whichever shard holds it.
                let view = call(
                    &client,
                    RemotingCommand::request(code::VIEW_MESSAGE_BY_ID).with_header(
                        &ViewMessageRequestHeader {
                            topic: None,
                            offset: id.commit_log_offset,
                        },
                    ),
                )
                .await;
                assert_eq!(view.code, response::SUCCESS, "{:?}", view.remark);
                assert_eq!(&records(&view)[0].body()[..], body.as_bytes());
            }
        }
        for queue in 0..QUEUES {
            let all = call(&client, pull(GROUP, "T1", queue, 0, Some("*"), 0)).await;
            assert_eq!(all.code, response::SUCCESS, "{:?}", all.remark);
            let got = records(&all);
            assert_eq!(got.len(), 3);
            for (i, record) in got.iter().enumerate() {
                assert_eq!(record.queue_id(), queue);
                assert_eq!(record.queue_offset(), i as i64);
                assert_eq!(&record.body()[..], format!("q{queue}-m{i}").as_bytes());
                assert_eq!(record.property("u"), Some("v"));
                assert!(
                    record.property("UNIQ_KEY").is_some(),
                    "the broker adds a UNIQ_KEY"
                );
            }
            let header: PullMessageResponseHeader = all.decode_header().unwrap();
            assert_eq!(
                (
                    header.next_begin_offset,
                    header.min_offset,
                    header.max_offset
                ),
                (3, 0, 3)
            );

            // Tag filtering by hash: only the B message.
            let only_b = call(&client, pull(GROUP, "T1", queue, 0, Some("B"), 0)).await;
            let got = records(&only_b);
            assert_eq!(got.len(), 1);
            assert_eq!(got[0].property("TAGS"), Some("B"));

            // At the end: not found; past the end: moved back to the end (Apache 5.x; 4.9
            // moved it to the min while the min was 0).
            let end = call(&client, pull(GROUP, "T1", queue, 3, Some("*"), 0)).await;
            assert_eq!(end.code, response::PULL_NOT_FOUND);
            assert_eq!(end.remark.as_deref(), Some("OFFSET_OVERFLOW_ONE"));
            let past = call(&client, pull(GROUP, "T1", queue, 99, Some("*"), 0)).await;
            assert_eq!(past.code, response::PULL_OFFSET_MOVED);
            assert_eq!(past.remark.as_deref(), Some("OFFSET_OVERFLOW_BADLY"));
            let header: PullMessageResponseHeader = past.decode_header().unwrap();
            assert_eq!(header.next_begin_offset, 3, "5.x corrects to the max");

            let max = call(
                &client,
                RemotingCommand::request(code::GET_MAX_OFFSET).with_header(
                    &GetMaxOffsetRequestHeader {
                        topic: "T1".into(),
                        queue_id: queue,
                        committed: true,
                    },
                ),
            )
            .await;
            assert_eq!(
                max.decode_header::<OffsetResponseHeader>().unwrap().offset,
                3
            );
        }
        // Query by key: every shard searches its index; the one holding key-5-2 answers.
        let by_key = |key: &str| {
            RemotingCommand::request(code::QUERY_MESSAGE).with_header(&QueryMessageRequestHeader {
                topic: "T1".into(),
                key: key.into(),
                max_num: 32,
                begin_timestamp: 0,
                end_timestamp: i64::MAX,
            })
        };
        let query = call(&client, by_key("key-5-2")).await;
        assert_eq!(query.code, response::SUCCESS, "{:?}", query.remark);
        let found = records(&query);
        assert_eq!(found.len(), 1);
        assert_eq!(&found[0].body()[..], b"q5-m2");
        let none = call(&client, by_key("no-such-key")).await;
        assert_eq!(none.code, response::QUERY_NOT_FOUND);
    })
    .unwrap();
}

#[test]
fn batch_sends_store_each_message_with_consecutive_offsets() {
    let broker = Standalone::start(2);
    block_on(async {
        let client = RemotingClient::connect(&broker.broker_addr).await.unwrap();
        assert_eq!(
            call(&client, create_topic("TB", 4)).await.code,
            response::SUCCESS
        );
        // Odd entries come without a UNIQ_KEY, as every entry of a Go client's batch does.
        let entries: Vec<BatchEntry> = (0..10)
            .map(|i| BatchEntry {
                flag: 0,
                body: Bytes::from(format!("batch-{i}")),
                properties: Bytes::from(if i % 2 == 0 {
                    format_properties([("KEYS", "k"), ("UNIQ_KEY", format!("U{i:030}").as_str())])
                } else {
                    format_properties([("KEYS", "k")])
                }),
            })
            .collect();
        let mut body = bytes::BytesMut::new();
        encode_batch(&entries, &mut body).unwrap();
        let mut request = send("TB", 2, b"", &[]);
        request.code = code::SEND_BATCH_MESSAGE;
        request.ext_fields.insert("m", "true");
        request.body = body.freeze();
        let resp = call(&client, request).await;
        assert_eq!(resp.code, response::SUCCESS, "{:?}", resp.remark);
        let header: SendMessageResponseHeader = resp.decode_header().unwrap();
        assert_eq!(header.msg_id.split(',').count(), 10);
        assert_eq!(header.queue_offset, 0);
        let got = records(&call(&client, pull(GROUP, "TB", 2, 0, Some("*"), 0)).await);
        assert_eq!(got.len(), 10);
        for (i, r) in got.iter().enumerate() {
            assert_eq!(&r.body()[..], format!("batch-{i}").as_bytes());
            assert_eq!(r.queue_offset(), i as i64);
            // Stored as sent: the broker makes no UNIQ_KEY for a batch entry (Java does not
            // either), so a client's msgId for it is the offsetMsgId the send returned.
            let uniq = format!("U{i:030}");
            let want = (i % 2 == 0).then_some(uniq.as_str());
            assert_eq!(r.property("UNIQ_KEY"), want, "entry {i}");
        }
    })
    .unwrap();
}

#[test]
fn a_held_pull_is_answered_by_the_next_send_to_its_queue() {
    let broker = Standalone::start(2);
    block_on(async {
        let client = RemotingClient::connect(&broker.broker_addr).await.unwrap();
        assert_eq!(
            call(&client, create_topic("TL", 4)).await.code,
            response::SUCCESS
        );
        for queue in 0..4 {
            // Held up to 20 s; the send below wakes it, whichever shard owns the queue.
            let held = client.request(
                pull(GROUP, "TL", queue, 0, Some("*"), 20_000),
                Duration::from_secs(30),
            );
            let sender = async {
                glommio::timer::Timer::new(Duration::from_millis(200)).await;
                call(&client, send("TL", queue, b"wake", &[])).await
            };
            let (pulled, sent) = futures_lite::future::zip(held, sender).await;
            assert_eq!(sent.code, response::SUCCESS);
            let pulled = pulled.unwrap();
            assert_eq!(pulled.code, response::SUCCESS, "{:?}", pulled.remark);
            assert_eq!(&records(&pulled)[0].body()[..], b"wake");
        }
        // A held pull with nothing arriving comes back PULL_NOT_FOUND after its hold time.
        let empty = call(&client, pull(GROUP, "TL", 0, 1, Some("*"), 300)).await;
        assert_eq!(empty.code, response::PULL_NOT_FOUND);
    })
    .unwrap();
}

#[test]
fn sends_to_an_unknown_topic_create_it_from_tbw102_and_register_its_route() {
    let broker = Standalone::start(2);
    block_on(async {
        let client = RemotingClient::connect(&broker.broker_addr).await.unwrap();
        let resp = call(&client, send("AutoTopic", 1, b"x", &[])).await;
        assert_eq!(resp.code, response::SUCCESS, "{:?}", resp.remark);
        let ns = RemotingClient::connect(&broker.namesrv_addr).await.unwrap();
        // Registration after a topic is created happens at once, but asynchronously: poll
        // the route for a bounded time.
        let mut route = None;
        for _ in 0..100 {
            let answer = call(
                &ns,
                RemotingCommand::request(code::GET_ROUTEINFO_BY_TOPIC).with_header(
                    &GetRouteInfoRequestHeader {
                        topic: "AutoTopic".into(),
                        accept_standard_json_only: None,
                    },
                ),
            )
            .await;
            if answer.code == response::SUCCESS {
                route = Some(body::decode::<TopicRouteData>(&answer.body).unwrap());
                break;
            }
            glommio::timer::Timer::new(Duration::from_millis(100)).await;
        }
        let route = route.expect("AutoTopic registered");
        assert_eq!(
            route.queue_datas[0].write_queue_nums, 4,
            "min(client's 4, TBW102's 8)"
        );
        assert_eq!(route.broker_datas[0].broker_addrs[&0], broker.broker_addr);
    })
    .unwrap();
}

/// As Apache's updateTopic, ringmq answers once the NameServer has been sent the new topic:
/// a client asking for the route right after the answer finds it (the C++ client of the
/// compatibility matrix sends at once, and failed with "No route info" while it did not).
/// Creations from several connections at once, so that most land while a registration round
/// (of the whole, growing topic table) is already on its way without them.
#[test]
fn a_created_topic_has_its_route_as_soon_as_the_creation_is_answered() {
    const CREATORS: usize = 4;
    const TOPICS_EACH: usize = 25;
    let broker = Standalone::start(2);
    let create_and_look_up = |creator: usize| {
        let (broker_addr, namesrv_addr) = (broker.broker_addr.clone(), broker.namesrv_addr.clone());
        async move {
            let client = RemotingClient::connect(&broker_addr).await.unwrap();
            let ns = RemotingClient::connect(&namesrv_addr).await.unwrap();
            for i in 0..TOPICS_EACH {
                let topic = format!("Created{creator}x{i}");
                let created = call(&client, create_topic(&topic, 4)).await;
                assert_eq!(created.code, response::SUCCESS, "{:?}", created.remark);
                let route = RemotingCommand::request(code::GET_ROUTEINFO_BY_TOPIC).with_header(
                    &GetRouteInfoRequestHeader {
                        topic: topic.clone(),
                        accept_standard_json_only: None,
                    },
                );
                let answer = call(&ns, route).await;
                assert_eq!(
                    answer.code,
                    response::SUCCESS,
                    "{topic}: {:?}",
                    answer.remark
                );
            }
        }
    };
    block_on(async {
        let creators: Vec<_> = (0..CREATORS)
            .map(|c| glommio::spawn_local(create_and_look_up(c)))
            .collect();
        for creator in creators {
            creator.await;
        }
    })
    .unwrap();
}

#[test]
fn consumer_offsets_are_kept_per_group_and_queue() {
    let broker = Standalone::start(2);
    block_on(async {
        let client = RemotingClient::connect(&broker.broker_addr).await.unwrap();
        assert_eq!(
            call(&client, create_topic("TO", 4)).await.code,
            response::SUCCESS
        );
        for queue in 0..4 {
            let update = update_offset("G1", "TO", queue, 10 + i64::from(queue));
            assert_eq!(call(&client, update).await.code, response::SUCCESS);
        }
        for queue in 0..4 {
            let got = call(&client, query_offset("G1", "TO", queue)).await;
            assert_eq!(
                got.decode_header::<OffsetResponseHeader>().unwrap().offset,
                10 + i64::from(queue)
            );
            // A group that never committed: not found on these empty queues, as Apache 5.x
            // answers (0 only while a first message is in memory: tests/broker_retention.rs).
            let other = call(&client, query_offset("G2", "TO", queue)).await;
            assert_eq!(other.code, response::QUERY_NOT_FOUND);
        }
    })
    .unwrap();
}

#[test]
fn bad_requests_get_error_responses_and_the_connection_survives() {
    let broker = Standalone::start(2);
    block_on(async {
        let client = RemotingClient::connect(&broker.broker_addr).await.unwrap();
        let bad_heartbeat = RemotingCommand::request(code::HEART_BEAT).with_body(&b"{not json"[..]);
        assert_eq!(
            call(&client, bad_heartbeat).await.code,
            response::SYSTEM_ERROR
        );
        let mut missing_header = RemotingCommand::request(code::SEND_MESSAGE_V2);
        missing_header.ext_fields.insert("b", "T");
        let resp = call(&client, missing_header).await;
        assert_eq!(resp.code, response::SYSTEM_ERROR);
        assert!(resp.remark.unwrap().contains("is null"));
        let mut wrong_type = pull(GROUP, "T", 0, 0, Some("*"), 0);
        wrong_type.ext_fields.insert("queueOffset", "not-a-number");
        assert_eq!(call(&client, wrong_type).await.code, response::SYSTEM_ERROR);
        let unknown = call(&client, RemotingCommand::request(9999)).await;
        assert_eq!(unknown.code, response::REQUEST_CODE_NOT_SUPPORTED);
        // Still served.
        assert_eq!(
            call(&client, create_topic("Alive", 1)).await.code,
            response::SUCCESS
        );
    })
    .unwrap();
}

/// Regression (found by the Java 4.9.8 restart scenario): a held pull carries the commit
/// offset of when it was sent; it is stored on arrival, so waking it later must not write it
/// over offsets committed meanwhile.
#[test]
fn a_held_pull_does_not_roll_back_offsets_committed_while_it_waited() {
    let broker = Standalone::start(2);
    block_on(async {
        let client = RemotingClient::connect(&broker.broker_addr).await.unwrap();
        assert_eq!(
            call(&client, create_topic("TC", 1)).await.code,
            response::SUCCESS
        );
        for i in 0..2 {
            let sent = call(&client, send("TC", 0, format!("m{i}").as_bytes(), &[])).await;
            assert_eq!(sent.code, response::SUCCESS);
        }
        // Commits offset 1, held at the end of the queue (offset 2).
        let held = committing(pull(GROUP, "TC", 0, 2, Some("*"), 20_000), 1);
        let held = client.request(held, Duration::from_secs(30));
        let meanwhile = async {
            // The update must come after the held pull's commit of 1 is stored, so wait until
            // that commit shows (a fixed delay lost that race on a loaded machine).
            let deadline = Instant::now() + TIMEOUT;
            let mut committed = 0;
            for _ in 0..COMMIT_QUERIES_MAX {
                committed = call(&client, query_offset(GROUP, "TC", 0))
                    .await
                    .decode_header::<OffsetResponseHeader>()
                    .unwrap()
                    .offset;
                if committed == 1 || Instant::now() > deadline {
                    break;
                }
            }
            assert_eq!(committed, 1, "the held pull's commit arrived");
            let update = update_offset(GROUP, "TC", 0, 2);
            assert_eq!(call(&client, update).await.code, response::SUCCESS);
            call(&client, send("TC", 0, b"wake", &[])).await
        };
        let (pulled, _) = futures_lite::future::zip(held, meanwhile).await;
        assert_eq!(pulled.unwrap().code, response::SUCCESS);
        let offset = call(&client, query_offset(GROUP, "TC", 0))
            .await
            .decode_header::<OffsetResponseHeader>()
            .unwrap()
            .offset;
        assert_eq!(
            offset, 2,
            "the held pull's commit of 1 was stored before the update to 2"
        );
    })
    .unwrap();
}

#[test]
fn topic_config_is_served_for_a_known_topic_and_refused_for_an_unknown_one() {
    // mqadmin topicStatus and updateTopic ask GET_TOPIC_CONFIG before anything else.
    let broker = Standalone::start(2);
    block_on(async {
        let client = RemotingClient::connect(&broker.broker_addr).await.unwrap();
        assert_eq!(
            call(&client, create_topic("TC", 3)).await.code,
            response::SUCCESS
        );
        let get = |topic: &str| {
            RemotingCommand::request(code::GET_TOPIC_CONFIG).with_header(&TopicRequestHeader {
                topic: topic.into(),
            })
        };
        let found = call(&client, get("TC")).await;
        assert_eq!(found.code, response::SUCCESS, "{:?}", found.remark);
        let config: body::TopicConfig = body::decode(&found.body).unwrap();
        assert_eq!(
            (
                config.topic_name.as_str(),
                config.read_queue_nums,
                config.perm
            ),
            ("TC", 3, 6)
        );
        let missing = call(&client, get("Nope")).await;
        assert_eq!(missing.code, response::TOPIC_NOT_EXIST);
        assert_eq!(
            missing.remark.as_deref(),
            Some("No topic in this broker. topic: Nope")
        );
    })
    .unwrap();
}

#[test]
fn a_key_query_answers_the_newest_matches_of_every_shard_oldest_first() {
    // Java's index query answers the newest `maxNum` matches sorted by commit-log offset, and
    // mqadmin queryMsgByKey lists them in that order.
    const SENT: usize = 6;
    /// Store times one apart at least, so the order across shards is the order sent.
    const GAP: Duration = Duration::from_millis(2);
    let broker = Standalone::start(2);
    block_on(async {
        let client = RemotingClient::connect(&broker.broker_addr).await.unwrap();
        assert_eq!(
            call(&client, create_topic("TQ", 4)).await.code,
            response::SUCCESS
        );
        let bodies: Vec<String> = (0..SENT).map(|i| format!("m{i}")).collect();
        for (i, body) in bodies.iter().enumerate() {
            let uniq = format!("U{i:030}");
            let props = [("KEYS", "same"), ("UNIQ_KEY", uniq.as_str())];
            // Queues 0..3 in turn: both shards hold some of the matches.
            let sent = call(&client, send("TQ", i as i32 % 4, body.as_bytes(), &props)).await;
            assert_eq!(sent.code, response::SUCCESS, "{:?}", sent.remark);
            glommio::timer::Timer::new(GAP).await;
        }
        let query = |max_num: i32| {
            RemotingCommand::request(code::QUERY_MESSAGE).with_header(&QueryMessageRequestHeader {
                topic: "TQ".into(),
                key: "same".into(),
                max_num,
                begin_timestamp: 0,
                end_timestamp: i64::MAX,
            })
        };
        let bodies_of = |response: &RemotingCommand| -> Vec<String> {
            records(response)
                .iter()
                .map(|r| String::from_utf8(r.body().to_vec()).unwrap())
                .collect()
        };
        let all = call(&client, query(32)).await;
        assert_eq!(all.code, response::SUCCESS, "{:?}", all.remark);
        assert_eq!(bodies_of(&all), bodies);
        let newest = call(&client, query(3)).await;
        assert_eq!(bodies_of(&newest), bodies[SENT - 3..]);
    })
    .unwrap();
}

#[test]
fn stored_messages_carry_the_brokers_cluster_region_and_trace_switch() {
    // As Java 5.x's broker stores them (AbstractSendMessageProcessor.buildMsgContext), whatever
    // the producer put there; consumers' trace hooks and mqadmin queryMsgById show them.
    let broker = Standalone::start(2);
    block_on(async {
        let client = RemotingClient::connect(&broker.broker_addr).await.unwrap();
        assert_eq!(
            call(&client, create_topic("TP", 1)).await.code,
            response::SUCCESS
        );
        let props = [
            ("UNIQ_KEY", "U000000000000000000000000000001"),
            ("TRACE_ON", "false"),
            ("MSG_REGION", "Elsewhere"),
            ("CLUSTER", "Other"),
        ];
        let sent = call(&client, send("TP", 0, b"p", &props)).await;
        assert_eq!(sent.code, response::SUCCESS, "{:?}", sent.remark);
        let pulled = call(&client, pull("CG", "TP", 0, 0, Some("*"), 0)).await;
        assert_eq!(pulled.code, response::SUCCESS, "{:?}", pulled.remark);
        let stored = records(&pulled);
        assert_eq!(stored.len(), 1);
        for (name, value) in [
            ("CLUSTER", "DefaultCluster"),
            ("MSG_REGION", "DefaultRegion"),
            ("TRACE_ON", "true"),
            ("UNIQ_KEY", "U000000000000000000000000000001"),
        ] {
            assert_eq!(stored[0].property(name), Some(value), "{name}");
        }
        // Each once: the producer's values are replaced, not repeated.
        assert_eq!(stored[0].properties().matches("TRACE_ON").count(), 1);
    })
    .unwrap();
}

#[test]
fn runtime_info_adds_up_every_shard_in_javas_formats() {
    // What mqadmin brokerStatus/clusterList and the dashboard read (admin_apache_broker and
    // admin_ringmq_broker check the whole key set against Apache 5.3.3's).
    let broker = Standalone::start(2);
    block_on(async {
        let client = RemotingClient::connect(&broker.broker_addr).await.unwrap();
        let info = || async {
            let resp = call(
                &client,
                RemotingCommand::request(code::GET_BROKER_RUNTIME_INFO),
            )
            .await;
            assert_eq!(resp.code, response::SUCCESS, "{:?}", resp.remark);
            body::decode::<body::KvTable>(&resp.body).unwrap().table
        };
        let empty = info().await;
        assert_eq!(empty["earliestMessageTimeStamp"], "-1");
        assert_eq!(empty["putMessageAverageSize"], "0.0");
        assert_eq!(empty["brokerActive"], "true");
        // Apache 4.9 mqadmin's clusterList reads the 4.9 spelling and fails without it.
        assert_eq!(empty["getTransferedTps"], empty["getTransferredTps"]);
        assert!(
            empty["runtime"].starts_with("[ 0 days, 0 hours, "),
            "{empty:?}"
        );
        assert_eq!(
            empty
                .keys()
                .filter(|k| k.starts_with("commitLogDiskRatio_"))
                .count(),
            2,
            "one per shard directory: {empty:?}"
        );

        assert_eq!(
            call(&client, create_topic("TR", 4)).await.code,
            response::SUCCESS
        );
        let mut stored_at = Vec::new();
        for queue in 0..4 {
            let uniq = format!("U{queue:030}");
            let props = [("UNIQ_KEY", uniq.as_str())];
            let sent = call(&client, send("TR", queue, b"body", &props)).await;
            assert_eq!(sent.code, response::SUCCESS, "{:?}", sent.remark);
            let pulled = call(&client, pull("CG", "TR", queue, 0, Some("*"), 0)).await;
            stored_at.push(records(&pulled)[0].store_timestamp_ms());
        }
        let full = info().await;
        assert_eq!(full["msgPutTotalTodayNow"], "4");
        assert_eq!(full["putMessageTimesTotal"], "4");
        assert_eq!(full["msgGetTotalTodayNow"], "4");
        let size: f64 = full["putMessageSizeTotal"].parse().unwrap();
        let average: f64 = full["putMessageAverageSize"].parse().unwrap();
        assert_eq!(average, size / 4.0);
        // Every shard holds some of the four queues; the earliest is the least of theirs.
        assert_eq!(
            full["earliestMessageTimeStamp"],
            stored_at.iter().min().unwrap().to_string()
        );
        assert!(full["commitLogMaxOffset"].parse::<u64>().unwrap() > 0);
        assert!(full["remainHowManyDataToFlush"].ends_with('B'), "{full:?}");
    })
    .unwrap();
}

#[test]
fn broker_config_is_served_as_java_properties() {
    // mqadmin getBrokerConfig and the dashboard's config page read it.
    let broker = Standalone::start_with(2, &["--flush-disk-type", "SYNC_FLUSH"]);
    block_on(async {
        let client = RemotingClient::connect(&broker.broker_addr).await.unwrap();
        let resp = call(&client, RemotingCommand::request(code::GET_BROKER_CONFIG)).await;
        assert_eq!(resp.code, response::SUCCESS, "{:?}", resp.remark);
        let version: GetBrokerConfigResponseHeader = resp.decode_header().unwrap();
        let version: body::DataVersion = body::decode(version.version.as_bytes()).unwrap();
        assert!(version.timestamp > 0);
        let text = String::from_utf8(resp.body.to_vec()).unwrap();
        let settings: std::collections::BTreeMap<&str, &str> =
            text.lines().filter_map(|l| l.split_once('=')).collect();
        let port = broker.broker_addr.rsplit(':').next().unwrap();
        for (key, value) in [
            ("brokerName", "broker-a"),
            ("brokerClusterName", "DefaultCluster"),
            ("brokerId", "0"),
            ("listenPort", port),
            ("namesrvAddr", broker.namesrv_addr.as_str()),
            ("flushDiskType", "SYNC_FLUSH"),
            ("shards", "2"),
        ] {
            assert_eq!(settings.get(key), Some(&value), "{key} in {text}");
        }
    })
    .unwrap();
}
