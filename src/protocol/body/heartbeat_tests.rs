use super::*;
use crate::protocol::body::{decode, encode};
use crate::protocol::fastjson::FastjsonError;

/// Captured from the real clients by tests/vectors/java/consumers/Capture*.java.
const JAVA_5_3_3: &str = include_str!("../../../tests/vectors/java/consumers/heartbeat_5_3_3.json");
const JAVA_4_9_8: &str = include_str!("../../../tests/vectors/java/consumers/heartbeat_4_9_8.json");
const JAVA_LITE_5_3_3: &str =
    include_str!("../../../tests/vectors/java/consumers/heartbeat_lite_5_3_3.json");
const JAVA_LITE_4_9_8: &str =
    include_str!("../../../tests/vectors/java/consumers/heartbeat_lite_4_9_8.json");
const JAVA_V2_FULL: &str =
    include_str!("../../../tests/vectors/java/consumers/heartbeat_v2_full_5_3_3.json");
const JAVA_V2_WITHOUT_SUB: &str =
    include_str!("../../../tests/vectors/java/consumers/heartbeat_v2_without_sub_5_3_3.json");
const FILTER_API: &str = include_str!("../../../tests/vectors/java/consumers/filter_api.tsv");

/// A Go v2.1.2 push consumer (`internal/model.go`, `internal/utils/set.go`,
/// `consumer/consumer.go#buildSubscriptionData`): struct field order, `codeSet` entries as
/// strings, `subVersion` in nanoseconds, `[]` for the empty sets of `*`.
const GO_2_1_2: &str = r#"{"clientID":"10.0.0.7@4242","producerDataSet":[{"groupName":"PG"}],"consumerDataSet":[{"groupName":"G1","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET","subscriptionDataSet":[{"classFilterMode":false,"topic":"T","subString":"TagA || TagB","tagsSet":["TagA","TagB"],"codeSet":["2598919","2598920"],"subVersion":1700000000123456789,"expressionType":"TAG"},{"classFilterMode":false,"topic":"%RETRY%G1","subString":"*","tagsSet":[],"codeSet":[],"subVersion":1700000000123456790,"expressionType":"TAG"}],"unitMode":false},{"groupName":"G3","consumeType":"CONSUME_ACTIVELY","messageModel":"BROADCASTING","consumeFromWhere":"UNKNOWN","subscriptionDataSet":[],"unitMode":false}]}"#;

/// The C++ 1.x client (REMOTING.md Appendix C): enums as ordinals, `subVersion` as a string,
/// `codeSet` from `atoi(tag)`, no `expressionType`, `classFilterMode` or `unitMode`.
const CPP_1_X: &str = r#"{"clientID":"127.0.0.1@31337","consumerDataSet":[{"consumeFromWhere":4,"consumeType":1,"groupName":"G1","messageModel":1,"subscriptionDataSet":[{"codeSet":[0,0],"subString":"TagA || TagB","subVersion":"1700000000000","tagsSet":["TagA","TagB"],"topic":"T"}]}],"producerDataSet":[{"groupName":"PG"}]}"#;

fn tags(sub: &SubscriptionData) -> Vec<&str> {
    sub.tags_set.iter().map(String::as_str).collect()
}

fn by_topic<'a>(data: &'a ConsumerData, topic: &str) -> &'a SubscriptionData {
    data.subscription_data_set
        .iter()
        .find(|s| s.topic == topic)
        .unwrap_or_else(|| panic!("no subscription to {topic}"))
}

/// What every Java capture of the push consumer holds, 4.9.8 or 5.3.3.
fn assert_java_push_consumer(heartbeat: &HeartbeatData) {
    assert_eq!(heartbeat.client_id, "10.0.0.5@capture");
    let mut producers: Vec<&str> = heartbeat
        .producer_data_set
        .iter()
        .map(|p| p.group_name.as_str())
        .collect();
    producers.sort_unstable();
    assert_eq!(producers, ["CLIENT_INNER_PRODUCER", "PG1"]);
    let [consumer] = heartbeat.consumer_data_set.as_slice() else {
        panic!("one consumer group expected");
    };
    assert_eq!(consumer.group_name, "G1");
    assert_eq!(consumer.consume_type, Some(ConsumeType::ConsumePassively));
    assert_eq!(consumer.message_model, Some(MessageModel::Clustering));
    assert_eq!(
        consumer.consume_from_where,
        Some(ConsumeFromWhere::ConsumeFromFirstOffset)
    );
    assert!(!consumer.unit_mode);
    let tagged = by_topic(consumer, "T");
    assert_eq!(tagged.sub_string, "TagA || TagB");
    assert_eq!(tags(tagged), ["TagA", "TagB"]);
    assert_eq!(tagged.code_set, [2598919, 2598920]);
    assert_eq!(tagged.expression_type, EXPRESSION_TYPE_TAG);
    assert!(tagged.sub_version > 1_700_000_000_000);
    let retry = by_topic(consumer, "%RETRY%G1");
    assert_eq!(retry.sub_string, SUB_ALL);
    assert!(retry.tags_set.is_empty() && retry.code_set.is_empty());
}

#[test]
fn reads_what_the_java_5_3_3_client_sends_and_writes_it_back_byte_for_byte() {
    let heartbeat: HeartbeatData = decode(JAVA_5_3_3.as_bytes()).unwrap();
    assert_java_push_consumer(&heartbeat);
    assert_eq!(heartbeat.v2(), None);
    assert_eq!(encode(&heartbeat).unwrap(), JAVA_5_3_3.as_bytes());
}

#[test]
fn reads_what_the_java_4_9_8_client_sends() {
    let heartbeat: HeartbeatData = decode(JAVA_4_9_8.as_bytes()).unwrap();
    assert_java_push_consumer(&heartbeat);
    // 4.9.8 has no V2 fields; they default to a V1 heartbeat.
    assert_eq!(heartbeat.heartbeat_fingerprint, 0);
    assert!(!heartbeat.without_sub);
    assert_eq!(heartbeat.v2(), None);
}

#[test]
fn reads_java_lite_pull_consumers_with_sql92_in_both_versions() {
    for (text, client_id) in [
        (JAVA_LITE_5_3_3, "10.0.0.5@capture@STREAM"),
        (JAVA_LITE_4_9_8, "10.0.0.5@capture-lite@STREAM"),
    ] {
        let heartbeat: HeartbeatData = decode(text.as_bytes()).unwrap();
        assert_eq!(heartbeat.client_id, client_id);
        let consumer = &heartbeat.consumer_data_set[0];
        assert_eq!(consumer.group_name, "G2");
        assert_eq!(consumer.consume_type, Some(ConsumeType::ConsumeActively));
        assert_eq!(consumer.message_model, Some(MessageModel::Broadcasting));
        let sql = by_topic(consumer, "T2");
        assert_eq!(sql.expression_type, EXPRESSION_TYPE_SQL92);
        assert_eq!(sql.sub_string, "a > 1");
        // SQL92 is not decided by tag codes: everything passes the ConsumeQueue check.
        assert_eq!(sql.code_filter(), None);
        assert!(sql.matches_tag_code(12345));
    }
}

#[test]
fn reads_heartbeat_v2_with_and_without_subscriptions() {
    let full: HeartbeatData = decode(JAVA_V2_FULL.as_bytes()).unwrap();
    let bare: HeartbeatData = decode(JAVA_V2_WITHOUT_SUB.as_bytes()).unwrap();
    let v2 = full.v2().expect("a V2 heartbeat");
    assert_ne!(v2.fingerprint, 0);
    assert!(!v2.without_sub);
    assert_eq!(
        bare.v2(),
        Some(HeartbeatV2 {
            fingerprint: v2.fingerprint,
            without_sub: true
        })
    );
    assert!(bare.consumer_data_set[0].subscription_data_set.is_empty());
    assert_eq!(encode(&bare).unwrap(), JAVA_V2_WITHOUT_SUB.as_bytes());
}

#[test]
fn reads_what_the_go_2_1_2_client_sends() {
    let heartbeat: HeartbeatData = decode(GO_2_1_2.as_bytes()).unwrap();
    assert_eq!(heartbeat.client_id, "10.0.0.7@4242");
    assert_eq!(heartbeat.v2(), None);
    let push = &heartbeat.consumer_data_set[0];
    assert_eq!(push.message_model, Some(MessageModel::Clustering));
    let tagged = by_topic(push, "T");
    assert_eq!(tagged.code_set, [2598919, 2598920]);
    assert_eq!(tagged.sub_version, 1_700_000_000_123_456_789);
    assert!(tagged.matches_tag_code(2598920));
    assert!(!tagged.matches_tag_code(0));
    let pull = &heartbeat.consumer_data_set[1];
    assert_eq!(pull.consume_type, Some(ConsumeType::ConsumeActively));
    assert_eq!(pull.message_model, Some(MessageModel::Broadcasting));
    // Go writes "UNKNOWN" for a consumeFromWhere outside its three: absent, as fastjson reads it.
    assert_eq!(pull.consume_from_where, None);
}

#[test]
fn reads_what_the_cpp_client_sends_and_repairs_its_tag_codes() {
    let heartbeat: HeartbeatData = decode(CPP_1_X.as_bytes()).unwrap();
    let consumer = &heartbeat.consumer_data_set[0];
    assert_eq!(consumer.consume_type, Some(ConsumeType::ConsumePassively));
    assert_eq!(consumer.message_model, Some(MessageModel::Clustering));
    assert_eq!(
        consumer.consume_from_where,
        Some(ConsumeFromWhere::ConsumeFromFirstOffset)
    );
    let mut sub = consumer.subscription_data_set[0].clone();
    assert_eq!(sub.sub_version, 1_700_000_000_000);
    assert_eq!(sub.expression_type, EXPRESSION_TYPE_TAG);
    assert_eq!(sub.code_set, [0, 0]);
    sub.normalize_codes();
    assert_eq!(sub.code_set, [2598919, 2598920]);
}

#[test]
fn enums_read_by_name_in_any_case_by_ordinal_or_not_at_all() {
    let read = |text: &str| decode::<ConsumerData>(text.as_bytes()).unwrap();
    assert_eq!(
        read(r#"{"messageModel":"Clustering"}"#).message_model,
        Some(MessageModel::Clustering)
    );
    assert_eq!(
        read(r#"{"messageModel":"0"}"#).message_model,
        Some(MessageModel::Broadcasting)
    );
    assert_eq!(
        read(r#"{"consumeType":2}"#).consume_type,
        Some(ConsumeType::ConsumePop)
    );
    let unknown = read(r#"{"consumeType":7,"messageModel":-1,"consumeFromWhere":[1]}"#);
    assert_eq!(
        (
            unknown.consume_type,
            unknown.message_model,
            unknown.consume_from_where
        ),
        (None, None, None)
    );
    // Absent enums are not written, as fastjson skips nulls.
    assert_eq!(
        encode(&ConsumerData::default()).unwrap(),
        br#"{"groupName":"","subscriptionDataSet":[],"unitMode":false}"#
    );
}

#[test]
fn odd_shapes_read_as_defaults_and_bad_codes_as_a_typed_error() {
    // Go's set can marshal as {}; nulls everywhere; unknown fields.
    let sub: SubscriptionData = decode(
        br#"{"topic":"T","subString":null,"tagsSet":{},"codeSet":null,"expressionType":"","extra":{"a":1},"filterClassSource":"x"}"#,
    )
    .unwrap();
    assert!(sub.tags_set.is_empty() && sub.code_set.is_empty());
    assert_eq!(sub.expression_type, EXPRESSION_TYPE_TAG);
    assert_eq!(sub.filter_class_source.as_deref(), Some("x"));
    assert!(!String::from_utf8(encode(&sub).unwrap())
        .unwrap()
        .contains("filterClassSource"));
    assert!(matches!(
        decode::<SubscriptionData>(br#"{"codeSet":["x"]}"#),
        Err(FastjsonError::Shape(_))
    ));
    assert!(matches!(
        decode::<HeartbeatData>(br#"{"clientID":"c","consumerDataSet":[{"#),
        Err(FastjsonError::Syntax { .. })
    ));
}

/// Every line of filter_api.tsv is what Java's `FilterAPI.buildSubscriptionData` made of an
/// expression: `expr \t subString \t [sorted tags] \t [sorted codes]`, or `expr \t ERROR`.
#[test]
fn builds_tag_subscriptions_exactly_as_java_filter_api() {
    let mut lines = 0;
    for line in FILTER_API.lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        let built = SubscriptionData::from_expression("T", fields[0], None);
        lines += 1;
        if fields[1] == "ERROR" {
            assert!(
                matches!(built, Err(FilterError::NoTags(_))),
                "{line:?}: {built:?}"
            );
            continue;
        }
        let built = built.unwrap_or_else(|e| panic!("{line:?}: {e}"));
        assert_eq!(built.sub_string, fields[1], "{line:?}");
        let mut tags = built.tags_set.clone();
        tags.sort();
        assert_eq!(format!("[{}]", tags.join(", ")), fields[2], "{line:?}");
        let mut codes = built.code_set.clone();
        codes.sort_unstable();
        let codes: Vec<String> = codes.iter().map(i32::to_string).collect();
        assert_eq!(format!("[{}]", codes.join(", ")), fields[3], "{line:?}");
    }
    assert_eq!(lines, 8);
}

#[test]
fn tag_filter_matches_java_hash_codes_including_negative_ones() {
    let all = SubscriptionData::from_expression("T", "*", Some("TAG")).unwrap();
    assert_eq!(all.code_filter(), None);
    assert!(all.matches_tag_code(0) && all.matches_tag_code(-1));

    // "polygenelubricants".hashCode() == Integer.MIN_VALUE; the ConsumeQueue stores it
    // sign-extended.
    let sub = SubscriptionData::from_expression("T", "TagA || polygenelubricants", None).unwrap();
    assert_eq!(sub.code_set, [2598919, i32::MIN]);
    assert!(sub.matches_tag_code(tag_hash_code(Some("polygenelubricants"))));
    assert!(sub.matches_tag_code(2598919));
    assert!(!sub.matches_tag_code(2598920));
    // An untagged message has tag code 0.
    assert!(!sub.matches_tag_code(tag_hash_code(None)));

    let classic = SubscriptionData {
        class_filter_mode: true,
        ..sub.clone()
    };
    assert!(classic.matches_tag_code(2598920));
}

#[test]
fn sql92_keeps_the_text_and_refuses_an_empty_one() {
    let sql = SubscriptionData::from_expression("T", "a > 1 || b < 2", Some("SQL92")).unwrap();
    assert_eq!(sql.sub_string, "a > 1 || b < 2");
    assert_eq!(sql.expression_type, EXPRESSION_TYPE_SQL92);
    assert!(sql.tags_set.is_empty() && sql.code_set.is_empty());
    assert_eq!(
        SubscriptionData::from_expression("T", "", Some("SQL92")),
        Err(FilterError::EmptyExpression("SQL92".into()))
    );
    // An empty type is TAG, as ExpressionType.isTagType says.
    let tag = SubscriptionData::from_expression("T", "A", Some("")).unwrap();
    assert_eq!(tag.code_set, [65]);
}

/// Any JSON value, biased to the heartbeat's own field names so the adapters are reached.
fn json_value() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    let key = prop_oneof![
        Just("clientID".to_string()),
        Just("consumerDataSet".to_string()),
        Just("producerDataSet".to_string()),
        Just("heartbeatFingerprint".to_string()),
        Just("withoutSub".to_string()),
        Just("groupName".to_string()),
        Just("consumeType".to_string()),
        Just("messageModel".to_string()),
        Just("consumeFromWhere".to_string()),
        Just("subscriptionDataSet".to_string()),
        Just("codeSet".to_string()),
        Just("tagsSet".to_string()),
        Just("subVersion".to_string()),
        Just("expressionType".to_string()),
        "[a-z]{1,4}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| Value::Number(n.into())),
        any::<f64>().prop_map(|f| serde_json::json!(f)),
        "\\PC{0,6}".prop_map(Value::String),
        Just(Value::String("CLUSTERING".into())),
    ];
    leaf.prop_recursive(5, 48, 5, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::vec((key.clone(), inner), 0..6)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

fn heartbeat() -> impl proptest::strategy::Strategy<Value = HeartbeatData> {
    use proptest::prelude::*;
    let sub = (
        "[A-Za-z%]{1,8}",
        "[A-Za-z |*]{0,12}",
        any::<i64>(),
        any::<bool>(),
    )
        .prop_map(|(topic, expression, sub_version, sql)| {
            let kind = if sql {
                EXPRESSION_TYPE_SQL92
            } else {
                EXPRESSION_TYPE_TAG
            };
            let mut data = SubscriptionData::from_expression(&topic, &expression, Some(kind))
                .unwrap_or_else(|_| SubscriptionData::from_expression(&topic, "*", None).unwrap());
            data.sub_version = sub_version;
            data
        });
    let consumer = (
        "[A-Za-z0-9_-]{0,10}",
        proptest::option::of(0..3u64),
        proptest::option::of(0..2u64),
        proptest::option::of(0..6u64),
        proptest::collection::vec(sub, 0..3),
        any::<bool>(),
    )
        .prop_map(
            |(group_name, kind, model, from, subscription_data_set, unit_mode)| ConsumerData {
                consume_from_where: from.and_then(|n| ConsumeFromWhere::from_json(&n.into())),
                consume_type: kind.and_then(|n| ConsumeType::from_json(&n.into())),
                group_name,
                message_model: model.and_then(|n| MessageModel::from_json(&n.into())),
                subscription_data_set,
                unit_mode,
            },
        );
    (
        "\\PC{0,12}",
        proptest::collection::vec(consumer, 0..3),
        any::<i32>(),
        proptest::collection::vec("[A-Z_]{0,8}", 0..3),
        any::<bool>(),
    )
        .prop_map(
            |(client_id, consumer_data_set, heartbeat_fingerprint, producers, without_sub)| {
                HeartbeatData {
                    client_id,
                    consumer_data_set,
                    heartbeat_fingerprint,
                    producer_data_set: producers
                        .into_iter()
                        .map(|group_name| ProducerData { group_name })
                        .collect(),
                    without_sub,
                }
            },
        )
}

proptest::proptest! {
    #[test]
    fn arbitrary_json_gives_a_heartbeat_or_a_typed_error_never_a_panic(value in json_value()) {
        let text = serde_json::to_vec(&value).unwrap();
        let _ = decode::<HeartbeatData>(&text);
        let _ = decode::<ConsumerData>(&text);
        let _ = decode::<SubscriptionData>(&text);
    }

    #[test]
    fn what_we_encode_decodes_to_itself(heartbeat in heartbeat()) {
        let text = encode(&heartbeat).unwrap();
        proptest::prop_assert_eq!(decode::<HeartbeatData>(&text).unwrap(), heartbeat);
    }
}
