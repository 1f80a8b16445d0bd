//! The messages the bench sends: a body that starts with a marker and its send time, the
//! properties a Java producer would set, and the send request around them.
//!
//! Per message: one body copy of `--size` bytes (the template with the stamp written in), one
//! UNIQ_KEY and properties string, one header map; SEND_MESSAGE_V2 like the Java client's
//! default, SEND_BATCH_MESSAGE for batches.

use crate::cluster::{QueueRef, DEFAULT_TOPIC};
use bytes::{BufMut, Bytes, BytesMut};
use ringmq::protocol::codes::request;
use ringmq::protocol::command::{RemotingCommand, Text};
use ringmq::protocol::header::{SendMessageRequestHeader, SendMessageRequestHeaderV2};
use ringmq::protocol::message::record::{
    java_string_hash, property, NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR,
};
use ringmq::protocol::message::{encode_batch, BatchEntry, UniqKeyGenerator};
use std::time::{SystemTime, UNIX_EPOCH};

/// First bytes of every bench body; a body without them carries no send time.
pub const STAMP_MARKER: &[u8; 8] = b"rmqbench";

/// Producer group of every send (brokers only use it for statistics).
pub const PRODUCER_GROUP: &str = "ringmq-bench-producer";

/// Queues a topic auto-created from the template would get (Java's `defaultTopicQueueNums`).
const DEFAULT_TOPIC_QUEUE_NUMS: i32 = 4;

/// Wall-clock µs since the epoch: producer and consumer run on the same host, so the two
/// readings of an end-to-end latency come from the same clock.
pub fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// A body of `size` bytes (at least `STAMP_MARKER` + 8) stamped with `sent_us`.
pub fn stamped_body(size: usize, sent_us: u64) -> Bytes {
    debug_assert!(size >= STAMP_MARKER.len() + 8);
    let mut body = BytesMut::with_capacity(size);
    body.put_slice(STAMP_MARKER);
    body.put_u64(sent_us);
    // The rest is printable filler, so a body looks sane in a broker's tools.
    body.extend((body.len()..size).map(|i| b'a' + (i % 26) as u8));
    body.freeze()
}

/// The send time stamped in a bench body, `None` for any other body.
pub fn stamp_of(body: &[u8]) -> Option<u64> {
    let rest = body.strip_prefix(STAMP_MARKER.as_slice())?;
    Some(u64::from_be_bytes(rest.get(..8)?.try_into().ok()?))
}

/// The properties string a Java producer sends: UNIQ_KEY, WAIT=true, and KEYS when keyed.
pub fn properties(uniq_key: Option<&str>, key: Option<&str>) -> String {
    let mut props = String::new();
    let mut put = |name: &str, value: &str| {
        props.push_str(name);
        props.push(NAME_VALUE_SEPARATOR);
        props.push_str(value);
        props.push(PROPERTY_SEPARATOR);
    };
    if let Some(key) = key {
        put(property::KEYS, key);
    }
    if let Some(uniq_key) = uniq_key {
        put(property::UNIQ_KEY, uniq_key);
    }
    put("WAIT", "true");
    props
}

/// The queue for global message number `message`: round robin, or by the hash of its key.
pub fn pick_queue<'q>(queues: &'q [QueueRef], message: u64, key: Option<&str>) -> &'q QueueRef {
    let index = match key {
        Some(key) => (java_string_hash(key) as u32 as u64) % queues.len() as u64,
        None => message % queues.len() as u64,
    };
    &queues[index as usize]
}

/// The key of global message number `message` when sends are keyed over `keys` keys.
pub fn key_of(message: u64, keys: Option<u32>) -> Option<String> {
    keys.map(|keys| format!("key-{}", message % u64::from(keys)))
}

/// What every send of a run shares.
pub struct SendTemplate {
    /// Shared by every send's header (a clone is a reference count).
    pub topic: Text,
    pub size: usize,
    pub batch: u32,
    uniq_keys: UniqKeyGenerator,
}

impl SendTemplate {
    pub fn new(topic: String, size: usize, batch: u32, thread: u32) -> Self {
        let uniq_keys = UniqKeyGenerator::new(
            std::net::Ipv4Addr::LOCALHOST.into(),
            std::process::id(),
            thread as i32,
        );
        let topic = Bytes::from(topic);
        Self {
            topic: Text::from_frame(&topic, 0..topic.len()),
            size,
            batch,
            uniq_keys,
        }
    }

    /// One send request to `queue` (of broker `broker_name`), stamped now.
    pub fn request(
        &mut self,
        queue: &QueueRef,
        broker_name: Option<&str>,
        key: Option<&str>,
    ) -> RemotingCommand {
        let sent_us = now_us();
        let now_ms = (sent_us / 1000) as i64;
        let batched = self.batch > 1;
        let (code, properties, body) = if batched {
            let entries: Vec<BatchEntry> = (0..self.batch)
                .map(|_| BatchEntry {
                    flag: 0,
                    body: stamped_body(self.size, sent_us),
                    properties: properties(Some(&self.uniq_keys.next(now_ms).to_string()), key)
                        .into(),
                })
                .collect();
            let mut body = BytesMut::new();
            encode_batch(&entries, &mut body).expect("bench entries are within the batch limits");
            (
                request::SEND_BATCH_MESSAGE,
                properties(None, key),
                body.freeze(),
            )
        } else {
            let uniq_key = self.uniq_keys.next(now_ms).to_string();
            (
                request::SEND_MESSAGE_V2,
                properties(Some(&uniq_key), key),
                stamped_body(self.size, sent_us),
            )
        };
        let header = SendMessageRequestHeaderV2(SendMessageRequestHeader {
            producer_group: PRODUCER_GROUP.into(),
            topic: self.topic.clone(),
            default_topic: DEFAULT_TOPIC.into(),
            default_topic_queue_nums: DEFAULT_TOPIC_QUEUE_NUMS,
            queue_id: queue.queue_id,
            sys_flag: 0,
            born_timestamp: now_ms,
            flag: 0,
            properties: Some(properties.into()),
            reconsume_times: Some(0),
            unit_mode: Some(false),
            max_reconsume_times: None,
            batch: Some(batched),
            broker_name: broker_name.map(|name| name.to_owned().into()),
        });
        RemotingCommand::request(code)
            .with_header(&header)
            .with_body(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringmq::protocol::message::{decode_batch, MessageLimits};

    #[test]
    fn a_stamp_reads_back_and_other_bodies_have_none() {
        let body = stamped_body(1024, 1_764_000_000_123_456);
        assert_eq!(body.len(), 1024);
        assert_eq!(stamp_of(&body), Some(1_764_000_000_123_456));
        assert_eq!(stamp_of(b"hello world, not a bench body"), None);
        assert_eq!(stamp_of(b"rmqbench123"), None, "marker but a short stamp");
    }

    #[test]
    fn keyed_messages_of_one_key_go_to_one_queue() {
        let queues = crate::cluster::queues(2, 4);
        let keys = Some(3);
        for message in 0..30u64 {
            let key = key_of(message, keys).unwrap();
            let again = key_of(message + 3, keys).unwrap();
            assert_eq!(key, again);
            assert_eq!(
                pick_queue(&queues, message, Some(&key)),
                pick_queue(&queues, message + 3, Some(&again))
            );
        }
        // Round robin visits every queue in turn.
        let picked: Vec<_> = (0..8).map(|m| *pick_queue(&queues, m, None)).collect();
        assert_eq!(picked, queues);
    }

    #[test]
    fn a_single_send_is_send_message_v2_with_short_keys() {
        let mut template = SendTemplate::new("t".into(), 64, 1, 0);
        let queue = QueueRef {
            broker: 0,
            queue_id: 3,
        };
        let req = template.request(&queue, Some("broker-a"), Some("key-1"));
        assert_eq!(req.code, request::SEND_MESSAGE_V2);
        assert_eq!(req.ext("b"), Some("t"));
        assert_eq!(req.ext("e"), Some("3"));
        assert_eq!(req.ext("n"), Some("broker-a"));
        assert_eq!(req.ext("m"), Some("false"));
        let props = req.ext("i").unwrap();
        assert!(props.contains("KEYS\u{1}key-1\u{2}") && props.contains("UNIQ_KEY\u{1}"));
        assert_eq!(req.body.len(), 64);
        assert!(stamp_of(&req.body).is_some());
    }

    #[test]
    fn a_batch_send_carries_every_message_with_its_own_uniq_key() {
        let mut template = SendTemplate::new("t".into(), 32, 5, 0);
        let queue = QueueRef {
            broker: 0,
            queue_id: 0,
        };
        let req = template.request(&queue, None, None);
        assert_eq!(req.code, request::SEND_BATCH_MESSAGE);
        assert_eq!(req.ext("m"), Some("true"));
        let entries = decode_batch(req.body.clone(), &MessageLimits::default()).unwrap();
        assert_eq!(entries.len(), 5);
        let uniq: std::collections::BTreeSet<_> =
            entries.iter().map(|e| e.properties.clone()).collect();
        assert_eq!(uniq.len(), 5);
        assert!(entries.iter().all(|e| stamp_of(&e.body).is_some()));
    }
}
