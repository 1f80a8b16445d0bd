//! Layout of each command's output (mqadmin's printf formats) and its request headers.

use super::format::{date_time, human_millis};
use super::*;
use crate::protocol::body::consumer_group::ConsumerConnection;
use crate::protocol::body::stats::{
    ConsumeStats, MessageQueue, OffsetWrapper, TopicOffset, TopicStatsTable,
};
use crate::protocol::message::record::{self, RecordView, StoreFields};
use clap::Parser;
use std::collections::BTreeMap;

#[derive(Parser)]
struct Cli {
    #[command(subcommand)]
    command: AdminCommand,
}

fn parse(args: &[&str]) -> AdminCommand {
    Cli::try_parse_from(std::iter::once("admin").chain(args.iter().copied()))
        .expect("valid arguments")
        .command
}

#[test]
fn topic_status_lists_queues_in_java_order_with_fixed_columns() {
    let mut stats = TopicStatsTable::default();
    stats.offset_table.insert(
        MessageQueue::new("T", "broker-b", 0),
        TopicOffset {
            min_offset: 0,
            max_offset: 7,
            last_update_timestamp: 1_700_000_000_123,
        },
    );
    stats.offset_table.insert(
        MessageQueue::new("T", "broker-a", 1),
        TopicOffset::default(),
    );
    let text = render_topic_status(&stats);
    let expected = format!(
        "#Broker Name                      #QID  #Min Offset           #Max Offset             #Last Updated\n\
         broker-a                          1     0                     0                       \n\
         broker-b                          0     0                     7                       {}\n\
         \nTopic Put TPS: 0.0\n",
        human_millis(1_700_000_000_123)
    );
    assert_eq!(text, expected);
}

#[test]
fn consumer_progress_shows_diff_inflight_and_totals() {
    let mut stats = ConsumeStats {
        consume_tps: 2.345,
        offset_table: BTreeMap::new(),
    };
    stats.offset_table.insert(
        MessageQueue::new("T", "broker-a", 0),
        OffsetWrapper {
            broker_offset: 10,
            consumer_offset: 4,
            pull_offset: 6,
            last_timestamp: 0,
        },
    );
    stats.offset_table.insert(
        MessageQueue::new("T", "broker-a", 1),
        OffsetWrapper {
            broker_offset: 3,
            consumer_offset: 3,
            pull_offset: 3,
            last_timestamp: 1_700_000_000_000,
        },
    );
    let text = render_consumer_progress(&stats);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        format!(
            "{:<64}  {:<32}  #QID  #Broker Offset        #Consumer Offset      #Diff                #Inflight           #LastTime",
            "#Topic", "#Broker Name"
        )
    );
    assert_eq!(
        lines[1],
        format!(
            "{:<64}  {:<32}  0     10                    4                     6                    2                    N/A",
            "T", "broker-a"
        )
    );
    assert!(
        lines[2].ends_with(&format!(
            "0                    0                    {}",
            date_time(1_700_000_000_000)
        )),
        "{}",
        lines[2]
    );
    assert_eq!(
        &lines[3..],
        [
            "",
            "Consume TPS: 2.35",
            "Consume Diff Total: 6",
            "Consume Inflight Total: 2"
        ]
    );
}

#[test]
fn consumer_connection_lists_clients_then_subscriptions() {
    let body = br#"{"connectionSet":[{"clientAddr":"127.0.0.1:50001","clientId":"10.0.0.2@b","language":"JAVA","version":479},{"clientAddr":"127.0.0.1:50000","clientId":"10.0.0.1@a","language":"GO","version":401}],"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","subscriptionTable":{"T":{"classFilterMode":false,"codeSet":[],"expressionType":"TAG","subString":"a || b","subVersion":1,"tagsSet":["a","b"],"topic":"T"}}}"#;
    let cc: ConsumerConnection = crate::protocol::body::decode(body).unwrap();
    assert_eq!(
        render_consumer_connection(&cc),
        format!(
            "{:<36} {:<22} {:<10} #Version\n\
             {:<36} {:<22} {:<10} V4_9_4\n\
             {:<36} {:<22} {:<10} V5_3_3\n\
             \nBelow is subscription:\n\
             #Topic               #SubExpression\n\
             T                    a || b\n\
             \nConsumeType: CONSUME_PASSIVELY\nMessageModel: CLUSTERING\nConsumeFromWhere: CONSUME_FROM_LAST_OFFSET\n",
            "#ClientId", "#ClientAddr", "#Language",
            "10.0.0.1@a", "127.0.0.1:50000", "GO",
            "10.0.0.2@b", "127.0.0.1:50001", "JAVA",
        )
    );
}

fn stored(keys: &str, uniq: &str, body: &'static [u8]) -> RecordView {
    stored_with(keys, uniq, bytes::Bytes::from_static(body), 0)
}

fn stored_with(keys: &str, uniq: &str, body: bytes::Bytes, sys_flag: i32) -> RecordView {
    let props = record::format_properties([("KEYS", keys), ("UNIQ_KEY", uniq), ("TAGS", "tagA")]);
    let message = record::Message {
        topic: "T".into(),
        queue_id: 2,
        flag: 0,
        sys_flag,
        born_timestamp_ms: 1_700_000_000_000,
        born_host: "127.0.0.1:40000".parse().unwrap(),
        reconsume_times: 0,
        prepared_transaction_offset: 0,
        body,
        properties: props.into_bytes().into(),
    };
    let store = StoreFields {
        queue_offset: 5,
        physical_offset: 4096,
        store_timestamp_ms: 1_700_000_000_001,
        store_host: "127.0.0.1:10911".parse().unwrap(),
    };
    RecordView::parse(record::encode(&message, &store).unwrap()).unwrap()
}

#[test]
fn key_query_lists_message_ids_right_aligned_numbers() {
    let uniq = "7F0000010001000000000000000A0001";
    let text = render_key_query(&[stored("k1 k2", uniq, b"hello")]);
    assert_eq!(
        text,
        format!(
            "{:<50} #QID {:>40}\n{:<50}    2 {:>40}\n",
            "#Message ID", "#Offset", uniq, 5
        )
    );
}

#[test]
fn message_shows_ids_keys_hosts_properties_and_body() {
    let view = stored("k1 k2", "UNIQ1", b"hello");
    let text = render_message(&view);
    let offset_id = crate::protocol::message::OffsetMsgId {
        store_host: "127.0.0.1:10911".parse().unwrap(),
        commit_log_offset: 4096,
    };
    assert_eq!(
        text,
        format!(
            "OffsetID:            {offset_id}\n\
             Topic:               T\n\
             Tags:                [tagA]\n\
             Keys:                [k1 k2]\n\
             Queue ID:            2\n\
             Queue Offset:        5\n\
             CommitLog Offset:    4096\n\
             Reconsume Times:     0\n\
             Born Timestamp:      {}\n\
             Store Timestamp:     {}\n\
             Born Host:           127.0.0.1:40000\n\
             Store Host:          127.0.0.1:10911\n\
             System Flag:         0\n\
             Properties:          {{KEYS=k1 k2, UNIQ_KEY=UNIQ1, TAGS=tagA}}\n\
             Message Body:        hello\n",
            human_millis(1_700_000_000_000),
            human_millis(1_700_000_000_001)
        )
    );
}

#[test]
fn compressed_bodies_are_inflated_or_described() {
    let plain = "x".repeat(5000);
    let zlib = miniz_oxide::deflate::compress_to_vec_zlib(plain.as_bytes(), 5);
    let compressed = record::sys_flag::COMPRESSED;
    let view = stored_with("k", "U", zlib.into(), compressed);
    assert!(render_message(&view).contains(&format!("Message Body:        {plain}\n")));
    let lz4 = compressed | (1 << record::sys_flag::COMPRESSION_SHIFT);
    let view = stored_with("k", "U", bytes::Bytes::from_static(b"????"), lz4);
    assert!(render_message(&view)
        .contains("Message Body:        (Lz4-compressed body of 4 bytes, not shown)\n"));
    let view = stored_with("k", "U", bytes::Bytes::from_static(b"not zlib"), compressed);
    assert!(
        render_message(&view).contains("(zlib-compressed body of 8 bytes that does not inflate)")
    );
}

#[test]
fn broker_status_prints_sorted_keys() {
    let table = KvTable {
        table: BTreeMap::from([
            ("putTps".to_string(), "0.0 0.0 0.0".to_string()),
            ("brokerVersion".to_string(), "479".to_string()),
        ]),
    };
    assert_eq!(
        render_broker_status(&table, None),
        format!(
            "{:<32}: 479\n{:<32}: 0.0 0.0 0.0\n",
            "brokerVersion", "putTps"
        )
    );
    assert_eq!(
        render_broker_status(&table, Some("127.0.0.1:10911")),
        format!(
            "127.0.0.1:10911          {:<32}: 479\n127.0.0.1:10911          {:<32}: 0.0 0.0 0.0\n",
            "brokerVersion", "putTps"
        )
    );
    assert!(Cli::try_parse_from(["admin", "brokerStatus"]).is_err());
}

#[test]
fn update_topic_defaults_and_header_follow_mqadmin() {
    let AdminCommand::UpdateTopic(args) = parse(&["updateTopic", "-t", "T", "-c", "C"]) else {
        panic!("not updateTopic");
    };
    let header = args.header();
    assert_eq!(
        (header.read_queue_nums, header.write_queue_nums, header.perm),
        (8, 8, 6)
    );
    assert_eq!(header.default_topic, "TBW102");
    assert_eq!(header.topic_filter_type, "SINGLE_TAG");
    assert!(!header.order);
    assert_eq!(
        args.config_text(),
        "TopicConfig [topicName=T, readQueueNums=8, writeQueueNums=8, perm=RW-, \
         topicFilterType=SINGLE_TAG, topicSysFlag=0, order=false, attributes={}]"
    );
    let AdminCommand::UpdateTopic(args) = parse(&[
        "updateTopic",
        "-t",
        "T",
        "-b",
        "127.0.0.1:10911",
        "-r",
        "2",
        "-w",
        "3",
        "-p",
        "4",
        "-o",
        "true",
    ]) else {
        panic!("not updateTopic");
    };
    let header = args.header();
    assert_eq!(
        (
            header.read_queue_nums,
            header.write_queue_nums,
            header.perm,
            header.order
        ),
        (2, 3, 4, true)
    );
    // -b and -c exclude each other, as in mqadmin's option group.
    assert!(
        Cli::try_parse_from(["admin", "updateTopic", "-t", "T", "-b", "x", "-c", "C"]).is_err()
    );
}
