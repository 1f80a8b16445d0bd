//! Bodies describing a group's live members: `GetConsumerListByGroupResponseBody`
//! (GET_CONSUMER_LIST_BY_GROUP, 38), `ConsumerConnection` (GET_CONSUMER_CONNECTION_LIST, 203,
//! what `mqadmin consumerConnection` prints), `ProducerConnection` (GET_PRODUCER_CONNECTION_LIST,
//! 204) and the `Connection` inside the last two (REMOTING.md §5.2).

use crate::protocol::body::heartbeat::{
    optional_enum, ConsumeFromWhere, ConsumeType, MessageModel, SubscriptionData,
};
use crate::protocol::command::LanguageCode;
use crate::protocol::fastjson::lenient;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use std::collections::BTreeMap;

/// Every live client id of a consumer group; clients allocate queues from this list.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GetConsumerListByGroupResponseBody {
    #[serde(deserialize_with = "lenient::or_default")]
    pub consumer_id_list: Vec<String>,
}

/// One client's connection to the broker, as the heartbeat's frame header described it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Connection {
    /// `ip:port` of the client's end of the connection.
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub client_addr: String,
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub client_id: String,
    #[serde(
        default = "language_default",
        serialize_with = "language_name",
        deserialize_with = "language"
    )]
    pub language: LanguageCode,
    /// The client's `MQVersion` ordinal.
    #[serde(default, deserialize_with = "lenient::int")]
    pub version: i32,
}

fn language_default() -> LanguageCode {
    LanguageCode::Other
}

fn language_name<S: Serializer>(language: &LanguageCode, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(language.name())
}

/// A language by name (fastjson) or wire byte; anything else is `OTHER`, since the language
/// is only informative.
fn language<'de, D: Deserializer<'de>>(deserializer: D) -> Result<LanguageCode, D::Error> {
    Ok(match Value::deserialize(deserializer)? {
        Value::String(name) => LanguageCode::from_name(&name),
        Value::Number(n) => n
            .as_u64()
            .and_then(|code| u8::try_from(code).ok())
            .map_or(LanguageCode::Other, LanguageCode::from_code),
        _ => LanguageCode::Other,
    })
}

/// A consumer group's members and what they consume. Read from any broker (ringmq's or
/// Apache's, `mqadmin consumerConnection`): an enum value this build does not know (a newer
/// broker's) reads as absent, as fastjson reads it, rather than failing the whole body.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ConsumerConnection {
    #[serde(deserialize_with = "lenient::or_default")]
    pub connection_set: Vec<Connection>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "optional_enum"
    )]
    pub consume_from_where: Option<ConsumeFromWhere>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "optional_enum"
    )]
    pub consume_type: Option<ConsumeType>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "optional_enum"
    )]
    pub message_model: Option<MessageModel>,
    #[serde(deserialize_with = "lenient::or_default")]
    pub subscription_table: BTreeMap<String, SubscriptionData>,
}

/// A producer group's members.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ProducerConnection {
    #[serde(deserialize_with = "lenient::or_default")]
    pub connection_set: Vec<Connection>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::body::{decode, encode};

    /// Written by Java 5.3.3's own classes (tests/vectors/java/consumers/CaptureConsumers.java).
    const CONSUMER_CONNECTION: &str =
        include_str!("../../../tests/vectors/java/consumers/consumer_connection.json");
    const PRODUCER_CONNECTION: &str =
        include_str!("../../../tests/vectors/java/consumers/producer_connection.json");
    const CONSUMER_LIST: &str =
        include_str!("../../../tests/vectors/java/consumers/consumer_list_by_group.json");

    fn connection() -> Connection {
        Connection {
            client_addr: "10.0.0.5:53412".into(),
            client_id: "10.0.0.5@capture".into(),
            language: LanguageCode::Java,
            version: 479,
        }
    }

    #[test]
    fn writes_consumer_connection_as_a_java_broker_does() {
        let mut subscription = SubscriptionData::from_expression("T", "TagA", None).unwrap();
        subscription.sub_version = 1_700_000_000_000;
        let body = ConsumerConnection {
            connection_set: vec![connection()],
            consume_from_where: Some(ConsumeFromWhere::ConsumeFromLastOffset),
            consume_type: Some(ConsumeType::ConsumePassively),
            message_model: Some(MessageModel::Clustering),
            subscription_table: BTreeMap::from([("T".to_string(), subscription)]),
        };
        assert_eq!(encode(&body).unwrap(), CONSUMER_CONNECTION.as_bytes());
        assert_eq!(
            decode::<ConsumerConnection>(CONSUMER_CONNECTION.as_bytes()).unwrap(),
            body
        );
    }

    #[test]
    fn writes_producer_connection_and_consumer_list_as_java_does() {
        let producers = ProducerConnection {
            connection_set: vec![connection()],
        };
        assert_eq!(encode(&producers).unwrap(), PRODUCER_CONNECTION.as_bytes());
        let ids = GetConsumerListByGroupResponseBody {
            consumer_id_list: vec!["10.0.0.5@capture".into()],
        };
        assert_eq!(encode(&ids).unwrap(), CONSUMER_LIST.as_bytes());
    }

    #[test]
    fn reads_unknown_enum_values_as_absent_and_ordinals_as_their_variant() {
        let cc: ConsumerConnection = decode(
            br#"{"connectionSet":[{"clientId":"a","language":"NODE_JS","version":"479"}],"consumeType":"CONSUME_SOMEHOW","messageModel":1,"consumeFromWhere":null}"#,
        )
        .unwrap();
        assert_eq!(cc.connection_set[0].language, LanguageCode::NodeJs);
        assert_eq!(cc.connection_set[0].version, 479);
        assert_eq!(cc.consume_type, None);
        assert_eq!(cc.message_model, Some(MessageModel::Clustering));
        assert_eq!(cc.consume_from_where, None);
    }

    #[test]
    fn reads_a_language_by_name_or_wire_byte() {
        let read = |text: &str| decode::<Connection>(text.as_bytes()).unwrap().language;
        assert_eq!(read(r#"{"language":"GO"}"#), LanguageCode::Go);
        assert_eq!(read(r#"{"language":1}"#), LanguageCode::Cpp);
        assert_eq!(read(r#"{"language":"KLINGON"}"#), LanguageCode::Other);
        assert_eq!(read("{}"), LanguageCode::Other);
    }
}
