//! Bodies of LOCK_BATCH_MQ (41) and UNLOCK_BATCH_MQ (42), which orderly consumers use to own a
//! queue exclusively, and the `MessageQueue` they name (REMOTING.md §5.2).

use crate::protocol::fastjson::lenient;
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;

/// One queue of one broker; identity is all three fields, as Java's `MessageQueue.equals`,
/// and order is Java's `compareTo` (topic, broker name, queue id), the order mqadmin prints
/// rows in. Fields are declared alphabetically, as fastjson writes them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct MessageQueue {
    #[serde(deserialize_with = "lenient::or_default")]
    pub broker_name: String,
    #[serde(deserialize_with = "lenient::int")]
    pub queue_id: i32,
    #[serde(deserialize_with = "lenient::or_default")]
    pub topic: String,
}

impl MessageQueue {
    pub fn new(topic: &str, broker_name: &str, queue_id: i32) -> Self {
        Self {
            broker_name: broker_name.to_owned(),
            queue_id,
            topic: topic.to_owned(),
        }
    }
}

impl Ord for MessageQueue {
    fn cmp(&self, other: &Self) -> Ordering {
        (&self.topic, &self.broker_name, self.queue_id).cmp(&(
            &other.topic,
            &other.broker_name,
            other.queue_id,
        ))
    }
}

impl PartialOrd for MessageQueue {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Body of LOCK_BATCH_MQ: lock these queues of `consumer_group` for `client_id`.
/// `only_this_broker` = do not forward to the other brokers of the group (5.x proxy use).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LockBatchRequestBody {
    #[serde(deserialize_with = "lenient::or_default")]
    pub client_id: String,
    #[serde(deserialize_with = "lenient::or_default")]
    pub consumer_group: String,
    #[serde(deserialize_with = "lenient::or_default")]
    pub mq_set: Vec<MessageQueue>,
    #[serde(deserialize_with = "lenient::boolean")]
    pub only_this_broker: bool,
}

/// Body of UNLOCK_BATCH_MQ: the same four fields as a lock request (Java has two classes of
/// identical shape).
pub type UnlockBatchRequestBody = LockBatchRequestBody;

/// Response body of LOCK_BATCH_MQ: the queues now locked by the requester.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LockBatchResponseBody {
    #[serde(rename = "lockOKMQSet", deserialize_with = "lenient::or_default")]
    pub lock_ok_mq_set: Vec<MessageQueue>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::body::{decode, encode};
    use std::collections::HashSet;

    /// Written by Java 5.3.3's own classes (tests/vectors/java/consumers/CaptureConsumers.java).
    const LOCK_REQUEST: &str =
        include_str!("../../../tests/vectors/java/consumers/lock_batch_request.json");
    const LOCK_RESPONSE: &str =
        include_str!("../../../tests/vectors/java/consumers/lock_batch_response.json");
    const UNLOCK_REQUEST: &str =
        include_str!("../../../tests/vectors/java/consumers/unlock_batch_request.json");

    fn queue(topic: &str, queue_id: i32) -> MessageQueue {
        MessageQueue::new(topic, "broker-a", queue_id)
    }

    #[test]
    fn reads_and_writes_the_java_lock_bodies_byte_for_byte() {
        let request: LockBatchRequestBody = decode(LOCK_REQUEST.as_bytes()).unwrap();
        assert_eq!(
            request,
            LockBatchRequestBody {
                client_id: "10.0.0.5@capture".into(),
                consumer_group: "G1".into(),
                mq_set: vec![queue("T", 3)],
                only_this_broker: true,
            }
        );
        assert_eq!(encode(&request).unwrap(), LOCK_REQUEST.as_bytes());
        let unlock: UnlockBatchRequestBody = decode(UNLOCK_REQUEST.as_bytes()).unwrap();
        assert!(!unlock.only_this_broker);
        assert_eq!(encode(&unlock).unwrap(), UNLOCK_REQUEST.as_bytes());
        let response = LockBatchResponseBody {
            lock_ok_mq_set: vec![queue("T", 3)],
        };
        assert_eq!(encode(&response).unwrap(), LOCK_RESPONSE.as_bytes());
    }

    #[test]
    fn reads_the_cpp_lock_request_without_only_this_broker() {
        // rocketmq-client-cpp LockBatchBody.cpp: insertion order, no onlyThisBroker.
        let text = br#"{"consumerGroup":"G","clientId":"c","mqSet":[{"topic":"T","brokerName":"broker-a","queueId":"1"}]}"#;
        let request: LockBatchRequestBody = decode(text).unwrap();
        assert_eq!(request.mq_set, [queue("T", 1)]);
        assert!(!request.only_this_broker);
    }

    #[test]
    fn queue_identity_is_all_three_fields() {
        let set: HashSet<MessageQueue> = [
            queue("T", 1),
            queue("T", 1),
            queue("T", 2),
            queue("U", 1),
            MessageQueue::new("T", "broker-b", 1),
        ]
        .into_iter()
        .collect();
        assert_eq!(set.len(), 4);
    }

    #[test]
    fn queues_sort_as_java_compare_to() {
        let mut queues = vec![
            MessageQueue::new("T", "broker-b", 0),
            MessageQueue::new("U", "broker-a", 0),
            MessageQueue::new("T", "broker-a", 10),
            MessageQueue::new("T", "broker-a", 2),
        ];
        queues.sort();
        assert_eq!(
            queues,
            [
                MessageQueue::new("T", "broker-a", 2),
                MessageQueue::new("T", "broker-a", 10),
                MessageQueue::new("T", "broker-b", 0),
                MessageQueue::new("U", "broker-a", 0),
            ]
        );
    }
}
