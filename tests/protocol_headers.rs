//! Typed headers: the send header of VECTORS.md V1 under both key forms, the broker headers'
//! Java defaults, and encode → decode round trips of generated headers.

mod protocol_support;

use proptest::prelude::*;
use protocol_support::vector_bytes;
use ringmq::protocol::codes::request;
use ringmq::protocol::command::{ext_fields as ext, ExtFields, RemotingCommand};
use ringmq::protocol::frame::decode_frame;
use ringmq::protocol::header::*;

fn v1_request() -> RemotingCommand {
    let frame = vector_bytes("v1_send_message_v2_request.hex");
    decode_frame(&frame).unwrap().unwrap().0
}

fn v1_header() -> SendMessageRequestHeader {
    SendMessageRequestHeader {
        producer_group: "G".into(),
        topic: "T".into(),
        default_topic: "TBW102".into(),
        default_topic_queue_nums: 4,
        queue_id: 0,
        sys_flag: 0,
        born_timestamp: 1_700_000_000_000,
        flag: 0,
        properties: Some("TAGS\u{1}A\u{2}".into()),
        reconsume_times: Some(0),
        unit_mode: Some(false),
        max_reconsume_times: None,
        batch: Some(false),
        broker_name: Some("b1".into()),
    }
}

#[test]
fn v1_send_header_decodes_from_short_keys() {
    let cmd = v1_request();
    assert_eq!(
        SendMessageRequestHeader::decode_from(&cmd).unwrap(),
        v1_header()
    );
    // Long keys are not where a V2 request keeps them.
    assert_eq!(
        cmd.decode_header::<SendMessageRequestHeader>(),
        Err(HeaderError::Missing("producerGroup"))
    );
}

#[test]
fn send_message_v1_uses_long_keys_and_bname() {
    let cmd = RemotingCommand::request(request::SEND_MESSAGE).with_header(&v1_header());
    assert_eq!(cmd.ext("producerGroup"), Some("G"));
    assert_eq!(cmd.ext("bname"), Some("b1"));
    assert_eq!(cmd.ext("a"), None);
    assert_eq!(
        SendMessageRequestHeader::decode_from(&cmd).unwrap(),
        v1_header()
    );

    let v2 = RemotingCommand::request(request::SEND_BATCH_MESSAGE)
        .with_header(&SendMessageRequestHeaderV2(v1_header()));
    assert_eq!(v2.ext("n"), Some("b1"));
    assert_eq!(
        SendMessageRequestHeader::decode_from(&v2).unwrap(),
        v1_header()
    );
}

#[test]
fn cpp_style_numeric_json_values_decode_into_typed_headers() {
    let header = r#"{"code":11,"language":"CPP","version":63,"opaque":1,"flag":0,"extFields":{"consumerGroup":"g","topic":"T","queueId":1,"queueOffset":0,"maxMsgNums":32,"sysFlag":6,"commitOffset":0,"suspendTimeoutMillis":15000,"subscription":"TagA || TagB","subVersion":0}}"#;
    let frame = protocol_support::json_frame(header, b"");
    let cmd = decode_frame(&frame).unwrap().unwrap().0;
    let pull: PullMessageRequestHeader = cmd.decode_header().unwrap();
    assert_eq!(
        (pull.queue_id, pull.sys_flag, pull.max_msg_nums),
        (1, 6, 32)
    );
    assert_eq!(pull.subscription.as_deref(), Some("TagA || TagB"));
    assert_eq!(pull.expression_type, None);
}

#[test]
fn java_field_defaults_apply_when_absent() {
    let max: GetMaxOffsetRequestHeader =
        GetMaxOffsetRequestHeader::decode(&ext(&[("topic", "T"), ("queueId", "3")])).unwrap();
    assert!(max.committed, "Java's `committed` defaults to true");
    assert!(GetMaxOffsetRequestHeader::default().committed);

    let reset = ResetOffsetRequestHeader::decode(&ext(&[
        ("group", "g"),
        ("topic", "T"),
        ("timestamp", "1"),
        ("isForce", "false"),
    ]))
    .unwrap();
    assert_eq!(reset.queue_id, -1);

    let search = SearchOffsetRequestHeader::decode(&ext(&[
        ("topic", "T"),
        ("queueId", "0"),
        ("timestamp", "5"),
    ]))
    .unwrap();
    assert_eq!(search.boundary_type, BoundaryType::Lower);
    let upper = ext(&[
        ("topic", "T"),
        ("queueId", "0"),
        ("timestamp", "5"),
        ("boundaryType", "upper"),
    ]);
    assert_eq!(
        SearchOffsetRequestHeader::decode(&upper)
            .unwrap()
            .boundary_type,
        BoundaryType::Upper
    );
}

/// PUSH_REPLY_MESSAGE_TO_CLIENT as the Java client's `receiveReplyMessage` reads it: Java's
/// field names, `unitMode` defaulting to false, bornHost and storeHost required.
#[test]
fn push_reply_header_uses_javas_names_and_requires_the_hosts() {
    let fields = [
        ("producerGroup", "PG"),
        ("topic", "DefaultCluster_REPLY_TOPIC"),
        ("defaultTopic", "TBW102"),
        ("defaultTopicQueueNums", "4"),
        ("queueId", "0"),
        ("sysFlag", "1"),
        ("bornTimestamp", "1700000000000"),
        ("flag", "0"),
        ("bornHost", "127.0.0.1:50000"),
        ("storeHost", "127.0.0.1:10911"),
        ("storeTimestamp", "1700000000001"),
    ];
    let header = ReplyMessageRequestHeader::decode(&ext(&fields)).unwrap();
    assert_eq!(header.sys_flag, 1);
    assert!(!header.unit_mode);
    assert_eq!(header.properties, None);
    assert_eq!(header.store_timestamp, 1_700_000_000_001);
    let cmd = RemotingCommand::request(request::PUSH_REPLY_MESSAGE_TO_CLIENT).with_header(&header);
    for (key, value) in fields {
        assert_eq!(cmd.ext(key), Some(value), "{key}");
    }
    let without_store_host: Vec<_> = fields
        .iter()
        .filter(|(k, _)| *k != "storeHost")
        .copied()
        .collect();
    assert_eq!(
        ReplyMessageRequestHeader::decode(&ext(&without_store_host)),
        Err(HeaderError::Missing("storeHost"))
    );
}

#[test]
fn pull_response_of_v8_decodes() {
    let header = protocol_support::vector_text("v8_pull_not_found_header.json");
    let frame = protocol_support::json_frame(&header, b"");
    let cmd = decode_frame(&frame).unwrap().unwrap().0;
    let pull: PullMessageResponseHeader = cmd.decode_header().unwrap();
    assert_eq!(
        (
            pull.suggest_which_broker_id,
            pull.next_begin_offset,
            pull.min_offset,
            pull.max_offset
        ),
        (0, 5, 0, 5)
    );
    assert_eq!(
        (pull.topic_sys_flag, pull.group_sys_flag),
        (Some(0), Some(0))
    );
}

/// Header text as a Java peer could send it: anything but the empty string, which the binary
/// header cannot carry.
fn text() -> impl Strategy<Value = String> {
    "[ -~\u{1}\u{2}é中]{1,12}"
}

fn send_header() -> impl Strategy<Value = SendMessageRequestHeader> {
    (
        (
            text(),
            text(),
            text(),
            any::<i32>(),
            any::<i32>(),
            any::<i32>(),
            any::<i64>(),
        ),
        (
            any::<i32>(),
            proptest::option::of(text()),
            any::<Option<i32>>(),
            any::<Option<bool>>(),
        ),
        (
            any::<Option<i32>>(),
            any::<Option<bool>>(),
            proptest::option::of(text()),
        ),
    )
        .prop_map(|((a, b, c, d, e, f, g), (h, i, j, k), (l, m, n))| {
            SendMessageRequestHeader {
                producer_group: a.into(),
                topic: b.into(),
                default_topic: c.into(),
                default_topic_queue_nums: d,
                queue_id: e,
                sys_flag: f,
                born_timestamp: g,
                flag: h,
                properties: i.map(Into::into),
                reconsume_times: j,
                unit_mode: k,
                max_reconsume_times: l,
                batch: m,
                broker_name: n.map(Into::into),
            }
        })
}

fn round_trip<H: CommandHeader + PartialEq + std::fmt::Debug>(header: &H) {
    let mut ext = ExtFields::new();
    header.encode(&mut ext);
    assert_eq!(&H::decode(&ext).unwrap(), header);
}

/// extFields as a hostile or sloppy peer could send them: real keys, any values.
fn sloppy_ext() -> impl Strategy<Value = ExtFields> {
    let key = prop_oneof![
        Just("topic".to_string()),
        Just("queueId".to_string()),
        Just("brokerId".to_string()),
        Just("committed".to_string()),
        Just("boundaryType".to_string()),
        Just("a".to_string()),
        Just("e".to_string()),
        Just("m".to_string()),
        ".{0,4}",
    ];
    let value = prop_oneof![
        ".{0,6}",
        any::<i64>().prop_map(|n| n.to_string()),
        Just("true".into())
    ];
    proptest::collection::hash_map(key, value, 0..8).prop_map(|map| map.into_iter().collect())
}

proptest! {
    #[test]
    fn any_ext_fields_decode_to_a_header_or_a_header_error(ext in sloppy_ext()) {
        // Ok or a typed error; a panic fails the test.
        let _ = GetRouteInfoRequestHeader::decode(&ext);
        let _ = SendMessageRequestHeaderV2::decode(&ext);
        let _ = RegisterBrokerRequestHeader::decode(&ext);
        let _ = SearchOffsetRequestHeader::decode(&ext);
        if let Ok(max) = GetMaxOffsetRequestHeader::decode(&ext) {
            prop_assert_eq!(Some(max.topic.as_str()), ext.get("topic"));
        }
    }

    #[test]
    fn send_header_round_trips_in_both_key_forms(header in send_header()) {
        round_trip(&header);
        round_trip(&SendMessageRequestHeaderV2(header));
    }

    #[test]
    fn pull_header_round_trips(
        group in text(), topic in text(), nums in any::<(i32, i64, i32, i32, i64, i64, i64)>(),
        sub in proptest::option::of(text()), bytes in any::<Option<i32>>(),
    ) {
        round_trip(&PullMessageRequestHeader {
            consumer_group: group,
            topic,
            queue_id: nums.0,
            queue_offset: nums.1,
            max_msg_nums: nums.2,
            sys_flag: nums.3,
            commit_offset: nums.4,
            suspend_timeout_millis: nums.5,
            subscription: sub,
            sub_version: nums.6,
            max_msg_bytes: bytes,
            ..Default::default()
        });
    }

    #[test]
    fn register_broker_header_round_trips(
        names in (text(), text(), text(), text()), id in any::<i64>(),
        timeout in any::<Option<i64>>(), acting in any::<Option<bool>>(),
        compressed in any::<bool>(), crc in any::<i32>(),
    ) {
        round_trip(&RegisterBrokerRequestHeader {
            broker_name: names.0,
            broker_addr: names.1,
            cluster_name: names.2,
            ha_server_addr: names.3,
            broker_id: id,
            heartbeat_timeout_millis: timeout,
            enable_acting_master: acting,
            compressed,
            body_crc32: crc,
        });
    }

    #[test]
    fn push_reply_header_round_trips(
        names in (text(), text(), text()), ints in any::<(i32, i32, i32, i32)>(),
        times in any::<(i64, i64)>(), properties in proptest::option::of(text()),
        reconsume_times in proptest::option::of(any::<i32>()), unit_mode in any::<bool>(),
        hosts in (text(), text()),
    ) {
        round_trip(&ReplyMessageRequestHeader {
            producer_group: names.0,
            topic: names.1,
            default_topic: names.2,
            default_topic_queue_nums: ints.0,
            queue_id: ints.1,
            sys_flag: ints.2,
            born_timestamp: times.0,
            flag: ints.3,
            properties,
            reconsume_times,
            unit_mode,
            born_host: hosts.0,
            store_host: hosts.1,
            store_timestamp: times.1,
        });
    }

    #[test]
    fn end_transaction_header_round_trips(
        topic in proptest::option::of(text()), group in text(), offsets in any::<(i64, i64, i32, bool)>(),
        msg_id in text(), tx in proptest::option::of(text()),
    ) {
        round_trip(&EndTransactionRequestHeader {
            topic,
            producer_group: group,
            tran_state_table_offset: offsets.0,
            commit_log_offset: offsets.1,
            commit_or_rollback: offsets.2,
            from_transaction_check: offsets.3,
            msg_id,
            transaction_id: tx,
        });
    }
}
