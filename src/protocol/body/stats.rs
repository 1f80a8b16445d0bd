//! Statistics bodies: `TopicStatsTable` (GET_TOPIC_STATS_INFO, 202) and `ConsumeStats`
//! (GET_CONSUME_STATS, 208), keyed by `MessageQueue`.
//!
//! fastjson writes a map whose keys are beans with the key as a bare JSON object:
//! `{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{...}}}`. serde cannot write
//! a non-string key, so these bodies are written by [`TopicStatsTable::encode`] and
//! [`ConsumeStats::encode`], which produce exactly what fastjson 1.2.83 produces (doubles in
//! Java's `Double.toString` form included) apart from map order, which is a hash order in
//! Java and sorted here. Reading goes through [`crate::protocol::body::decode`]: the lenient
//! reader turns each object key into its JSON text, which [`queue_table`] parses back; a
//! key sent as a quoted JSON string (which fastjson also accepts) reads the same way.

use crate::protocol::fastjson::{lenient, FastjsonError};
use serde::de::{Deserializer, Error as _};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

pub use super::lock::MessageQueue;

/// One queue's offsets in a `TopicStatsTable`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicOffset {
    /// Store time of the newest message, 0 when the queue is empty.
    #[serde(deserialize_with = "lenient::int")]
    pub last_update_timestamp: i64,
    #[serde(deserialize_with = "lenient::int")]
    pub max_offset: i64,
    #[serde(deserialize_with = "lenient::int")]
    pub min_offset: i64,
}

/// Body of a GET_TOPIC_STATS_INFO response.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicStatsTable {
    #[serde(deserialize_with = "queue_table")]
    pub offset_table: BTreeMap<MessageQueue, TopicOffset>,
    #[serde(deserialize_with = "lenient_double")]
    pub topic_put_tps: f64,
}

impl TopicStatsTable {
    /// The body as fastjson writes it (see the module doc).
    pub fn encode(&self) -> Result<Vec<u8>, FastjsonError> {
        let mut out = b"{\"offsetTable\":".to_vec();
        write_queue_table(&mut out, &self.offset_table)?;
        out.extend_from_slice(b",\"topicPutTps\":");
        out.extend_from_slice(java_double(self.topic_put_tps).as_bytes());
        out.push(b'}');
        Ok(out)
    }
}

/// One queue's consumption progress in a `ConsumeStats`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OffsetWrapper {
    /// The queue's max offset (next offset to be written).
    #[serde(deserialize_with = "lenient::int")]
    pub broker_offset: i64,
    /// The group's committed offset.
    #[serde(deserialize_with = "lenient::int")]
    pub consumer_offset: i64,
    /// Store time of the last consumed message, 0 if none.
    #[serde(deserialize_with = "lenient::int")]
    pub last_timestamp: i64,
    /// How far the group has pulled (POP/pull progress); equals `consumer_offset` when the
    /// broker does not track it separately.
    #[serde(deserialize_with = "lenient::int")]
    pub pull_offset: i64,
}

/// Body of a GET_CONSUME_STATS response.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ConsumeStats {
    #[serde(deserialize_with = "lenient_double")]
    pub consume_tps: f64,
    #[serde(deserialize_with = "queue_table")]
    pub offset_table: BTreeMap<MessageQueue, OffsetWrapper>,
}

impl ConsumeStats {
    /// The body as fastjson writes it (see the module doc).
    pub fn encode(&self) -> Result<Vec<u8>, FastjsonError> {
        let mut out = b"{\"consumeTps\":".to_vec();
        out.extend_from_slice(java_double(self.consume_tps).as_bytes());
        out.extend_from_slice(b",\"offsetTable\":");
        write_queue_table(&mut out, &self.offset_table)?;
        out.push(b'}');
        Ok(out)
    }

    /// Messages stored but not yet consumed, over every queue (`computeTotalDiff`).
    pub fn total_diff(&self) -> i64 {
        self.offset_table
            .values()
            .map(|o| o.broker_offset - o.consumer_offset)
            .sum()
    }
}

/// Writes `{KEY:VALUE,...}` with each key as a bare JSON object, as fastjson does.
fn write_queue_table<V: Serialize>(
    out: &mut Vec<u8>,
    table: &BTreeMap<MessageQueue, V>,
) -> Result<(), FastjsonError> {
    out.push(b'{');
    for (i, (queue, value)) in table.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        serde_json::to_writer(&mut *out, queue)?;
        out.push(b':');
        serde_json::to_writer(&mut *out, value)?;
    }
    out.push(b'}');
    Ok(())
}

/// A `MessageQueue`-keyed map: each key is the JSON text of a `MessageQueue` (what the
/// lenient reader makes of fastjson's object keys); `null` is an empty map.
fn queue_table<'de, D, V>(deserializer: D) -> Result<BTreeMap<MessageQueue, V>, D::Error>
where
    D: Deserializer<'de>,
    V: Deserialize<'de>,
{
    let by_text: BTreeMap<String, V> = lenient::or_default(deserializer)?;
    by_text
        .into_iter()
        .map(|(key, value)| {
            let queue = crate::protocol::fastjson::from_slice::<MessageQueue>(key.as_bytes())
                .map_err(|err| D::Error::custom(format!("bad MessageQueue key {key:?}: {err}")))?;
            Ok((queue, value))
        })
        .collect()
}

/// A Java `double` field given as a number, a numeric string, or null (→ 0).
fn lenient_double<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    let value = Value::deserialize(deserializer)?;
    match &value {
        Value::Null => Some(0.0),
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
    .ok_or_else(|| D::Error::custom(format!("expected a number, got {value}")))
}

/// Java's `Double.toString` (which fastjson follows): plain decimal with at least one fraction
/// digit for magnitudes in [1e-3, 1e7), else `d.dddE±n`; shortest digits that read back
/// exactly. fastjson writes NaN and infinities as `null`.
pub(crate) fn java_double(value: f64) -> String {
    /// Java switches to scientific notation outside [1e-3, 1e7).
    const PLAIN_MIN: f64 = 1e-3;
    const PLAIN_MAX: f64 = 1e7;
    if !value.is_finite() {
        return "null".to_owned();
    }
    let magnitude = value.abs();
    if magnitude == 0.0 || (PLAIN_MIN..PLAIN_MAX).contains(&magnitude) {
        let text = format!("{value:?}");
        return if text.contains('.') {
            text
        } else {
            format!("{text}.0")
        };
    }
    let text = format!("{value:e}");
    let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
    if mantissa.contains('.') {
        format!("{mantissa}E{exponent}")
    } else {
        format!("{mantissa}.0E{exponent}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::body::decode;

    // Written by fastjson 1.2.83 through Apache RocketMQ 5.3.3's `RemotingSerializable.encode`.
    const TOPIC_STATS_JAVA: &str = r#"{"offsetTable":{{"brokerName":"broker-a","queueId":1,"topic":"T"}:{"lastUpdateTimestamp":1700000000123,"maxOffset":3,"minOffset":0}},"topicPutTps":0.0}"#;
    const CONSUME_STATS_JAVA: &str = r#"{"consumeTps":12.5,"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:{"brokerOffset":5,"consumerOffset":2,"lastTimestamp":1700000000456,"pullOffset":4}}}"#;

    fn topic_stats() -> TopicStatsTable {
        TopicStatsTable {
            offset_table: BTreeMap::from([(
                MessageQueue::new("T", "broker-a", 1),
                TopicOffset {
                    last_update_timestamp: 1_700_000_000_123,
                    max_offset: 3,
                    min_offset: 0,
                },
            )]),
            topic_put_tps: 0.0,
        }
    }

    fn consume_stats() -> ConsumeStats {
        ConsumeStats {
            consume_tps: 12.5,
            offset_table: BTreeMap::from([(
                MessageQueue::new("T", "broker-a", 0),
                OffsetWrapper {
                    broker_offset: 5,
                    consumer_offset: 2,
                    last_timestamp: 1_700_000_000_456,
                    pull_offset: 4,
                },
            )]),
        }
    }

    #[test]
    fn writes_what_fastjson_writes() {
        assert_eq!(
            String::from_utf8(topic_stats().encode().unwrap()).unwrap(),
            TOPIC_STATS_JAVA
        );
        assert_eq!(
            String::from_utf8(consume_stats().encode().unwrap()).unwrap(),
            CONSUME_STATS_JAVA
        );
        assert_eq!(
            ConsumeStats::default().encode().unwrap(),
            br#"{"consumeTps":0.0,"offsetTable":{}}"#
        );
    }

    #[test]
    fn writes_several_queues_as_the_java_client_parses_them() {
        // Apache RocketMQ 5.3.3's `ConsumeStats.decode` reads this text as two queues,
        // 1.0E7 TPS and a total diff of 2.
        const JAVA_PARSES: &str = r#"{"consumeTps":1.0E7,"offsetTable":{{"brokerName":"a","queueId":0,"topic":"T"}:{"brokerOffset":1,"consumerOffset":0,"lastTimestamp":0,"pullOffset":0},{"brokerName":"a","queueId":1,"topic":"T"}:{"brokerOffset":2,"consumerOffset":1,"lastTimestamp":5,"pullOffset":1}}}"#;
        let stats = ConsumeStats {
            consume_tps: 1e7,
            offset_table: BTreeMap::from([
                (
                    MessageQueue::new("T", "a", 1),
                    OffsetWrapper {
                        broker_offset: 2,
                        consumer_offset: 1,
                        last_timestamp: 5,
                        pull_offset: 1,
                    },
                ),
                (
                    MessageQueue::new("T", "a", 0),
                    OffsetWrapper {
                        broker_offset: 1,
                        ..OffsetWrapper::default()
                    },
                ),
            ]),
        };
        assert_eq!(
            String::from_utf8(stats.encode().unwrap()).unwrap(),
            JAVA_PARSES
        );
        assert_eq!(stats.total_diff(), 2);
    }

    #[test]
    fn reads_java_bodies_and_its_own() {
        assert_eq!(
            decode::<TopicStatsTable>(TOPIC_STATS_JAVA.as_bytes()).unwrap(),
            topic_stats()
        );
        assert_eq!(
            decode::<ConsumeStats>(CONSUME_STATS_JAVA.as_bytes()).unwrap(),
            consume_stats()
        );
        let mut many = consume_stats();
        for queue_id in [3, 1, 2] {
            many.offset_table.insert(
                MessageQueue::new("A", "broker-b", queue_id),
                OffsetWrapper::default(),
            );
        }
        let text = many.encode().unwrap();
        assert_eq!(decode::<ConsumeStats>(&text).unwrap(), many);
    }

    #[test]
    fn reads_quoted_keys_strings_for_numbers_and_nulls() {
        let text = br#"{"consumeTps":"1.5","offsetTable":{"{\"brokerName\":\"b\",\"queueId\":\"3\",\"topic\":\"X\"}":{"brokerOffset":"9"}}}"#;
        let stats: ConsumeStats = decode(text).unwrap();
        assert_eq!(stats.consume_tps, 1.5);
        assert_eq!(
            stats.offset_table[&MessageQueue::new("X", "b", 3)].broker_offset,
            9
        );
        let empty: TopicStatsTable = decode(br#"{"offsetTable":null}"#).unwrap();
        assert_eq!(empty, TopicStatsTable::default());
    }

    #[test]
    fn rejects_a_key_that_is_not_a_message_queue() {
        for bad in [
            &br#"{"offsetTable":{"T":{"minOffset":0}}}"#[..],
            br#"{"offsetTable":{{"queueId":"x"}:{}}}"#,
            br#"{"topicPutTps":[1]}"#,
        ] {
            assert!(
                matches!(decode::<TopicStatsTable>(bad), Err(FastjsonError::Shape(_))),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn orders_queues_as_java_compare_to() {
        let mut queues = [
            MessageQueue::new("B", "a", 0),
            MessageQueue::new("A", "b", 0),
            MessageQueue::new("A", "a", 10),
            MessageQueue::new("A", "a", 2),
        ];
        queues.sort();
        let order: Vec<_> = queues
            .iter()
            .map(|q| format!("{}/{}/{}", q.topic, q.broker_name, q.queue_id))
            .collect();
        assert_eq!(order, ["A/a/2", "A/a/10", "A/b/0", "B/a/0"]);
    }

    #[test]
    fn doubles_print_as_java_prints_them() {
        // Each pair: the value and what fastjson 1.2.83 wrote for it.
        for (value, java) in [
            (0.0, "0.0"),
            (12.5, "12.5"),
            (1e7, "1.0E7"),
            (1.5e10, "1.5E10"),
            (0.001, "0.001"),
            (1e-4, "1.0E-4"),
            (123_456.789, "123456.789"),
            (1e-5, "1.0E-5"),
            (-3.0, "-3.0"),
            (f64::NAN, "null"),
        ] {
            assert_eq!(java_double(value), java, "{value}");
        }
    }
}
