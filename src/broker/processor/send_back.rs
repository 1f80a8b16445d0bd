//! CONSUMER_SEND_MSG_BACK: a push consumer failed a message (RECONSUME_LATER, an exception, a
//! timeout) and hands it back, by its physical offset, for a later retry.
//!
//! As Apache 4.9's `SendMessageProcessor.consumerSendMsgBack`: the original is read by its
//! offset (on the shard named in the offset's high bits), and a copy is stored for the group's
//! retry topic `%RETRY%group` with RETRY_TOPIC (the original topic, set once), one more
//! reconsume time, ORIGIN_MESSAGE_ID (the first failure's offset message id) and DELAY = the
//! level the client asked for, or 3 + reconsume times; the delay-level schedule delivers it to
//! the retry queue when due. Once the message has been reconsumed `maxReconsumeTimes` times
//! (the client's, else the group's `retryMaxTimes`), or when the client asks with a negative
//! level, the copy goes to `%DLQ%group` (one queue, read-write, registered with the
//! NameServers) at once. The copy is stored on the shard that owns its target queue.
//!
//! Per send-back: one record read (a cross-shard hop when another shard stored the original),
//! one append (a hop when another shard owns the target queue), no body copy (the body is the
//! read record's bytes).

use super::append::append_on;
use super::query::record_at;
use super::send::{check_writable, DLQ_QUEUE_ID};
use crate::broker::control::topics::retry_topic;
use crate::broker::error::{BrokerError, BrokerResult};
use crate::broker::shard::{SendTopic, Shard};
use crate::broker::work::Append;
use crate::protocol::body::subscription_group::SubscriptionGroupConfig;
use crate::protocol::body::PERM_WRITE;
use crate::protocol::codes::response;
use crate::protocol::command::RemotingCommand;
use crate::protocol::header::ConsumerSendMsgBackRequestHeader;
use crate::protocol::message::record::{format_properties, properties_iter, Message, RecordView};
use crate::protocol::message::{record_parts, OffsetMsgId};
use crate::server::Response;
use bytes::Bytes;

/// Properties a send-back sets (Apache's `MessageConst`).
pub mod property {
    /// The topic the message was first sent to; kept through every retry so the client can
    /// give its listener the original topic back.
    pub const RETRY_TOPIC: &str = "RETRY_TOPIC";
    /// The offset message id of the first failed copy.
    pub const ORIGIN_MESSAGE_ID: &str = "ORIGIN_MESSAGE_ID";
    /// The delay level the copy waits for before it is delivered (0: none).
    pub use ringmq_shards::schedule::property_name::DELAY;
    /// Apache's send-back sets `waitStoreMsgOK = false` on the copy: it is stored as "false".
    pub const WAIT: &str = "WAIT";
}

/// Apache's default for a first retry: level 3 (10 s), one level later per retry after it.
const DELAY_LEVEL_FIRST_RETRY: i32 = 3;

/// Where a failed message goes next.
struct Destination {
    topic: String,
    queue_id: i32,
    /// The DELAY property of the copy; 0 for the DLQ, as Apache stores it.
    delay_level: i32,
}

/// Serves a CONSUMER_SEND_MSG_BACK on the connection's shard: reads the original where it is
/// stored and stores the copy where its target queue is owned.
pub async fn serve(
    shard: &Shard,
    command: &RemotingCommand,
    header: ConsumerSendMsgBackRequestHeader,
) -> BrokerResult<Response> {
    let group = shard.group_config(&header.group).await?;
    check_writable(shard)?;
    let ok = RemotingCommand::response_to(command, response::SUCCESS, None);
    // Apache: a group without retry queues drops failed messages.
    if group.retry_queue_nums <= 0 {
        return Ok(ok.into());
    }
    let retry = retry_topic_of(shard, &header.group).await?;
    if retry.config.perm & PERM_WRITE == 0 {
        return Err(BrokerError::NoPermission(format!(
            "the topic[{}] sending message is forbidden",
            retry.name
        )));
    }
    let offset = header.offset;
    let not_found = || BrokerError::Illegal(format!("look message by offset failed, {offset}"));
    let original = record_at(shard, offset).await.map_err(|_| not_found())?;
    let original = RecordView::parse(original).map_err(|_| not_found())?;
    let destination = destination(shard, &header, &group, &retry, &original).await?;
    let message = resent(&original, &destination);
    let owner = shard.owner_of(&destination.topic, destination.queue_id);
    let append = Append {
        messages: vec![message],
        delayable: true,
        half: false,
    };
    append_on(shard, owner, append).await?;
    Ok(ok.into())
}

/// `%RETRY%group` as it is, or created with the group's retry queues (Apache's
/// `createTopicInSendMessageBackMethod`).
async fn retry_topic_of(shard: &Shard, group: &str) -> BrokerResult<RetryTopic> {
    let name = retry_topic(group);
    match shard.topic_for_send(&name, "", 1).await? {
        Some(config) => Ok(RetryTopic { name, config }),
        None => Err(BrokerError::Illegal(format!("topic[{name}] not exist"))),
    }
}

/// A group's retry topic, as a send back reads it.
struct RetryTopic {
    name: String,
    config: SendTopic,
}

/// A queue of `retry` with the copy's delay, or the DLQ once the message has been retried
/// enough.
async fn destination(
    shard: &Shard,
    header: &ConsumerSendMsgBackRequestHeader,
    group: &SubscriptionGroupConfig,
    retry: &RetryTopic,
    original: &RecordView,
) -> BrokerResult<Destination> {
    let max_reconsume_times = header.max_reconsume_times.unwrap_or(group.retry_max_times);
    if original.reconsume_times() >= max_reconsume_times || header.delay_level < 0 {
        return Ok(Destination {
            topic: shard.dlq_topic(&header.group).await?,
            queue_id: DLQ_QUEUE_ID,
            delay_level: 0,
        });
    }
    let delay_level = match header.delay_level {
        // Saturating: the count comes from a stored record; the schedule clamps the level.
        0 => DELAY_LEVEL_FIRST_RETRY.saturating_add(original.reconsume_times()),
        asked => asked,
    };
    Ok(Destination {
        topic: retry.name.clone(),
        // The topic's own queue count: it may predate the group's retryQueueNums.
        queue_id: shard.pick_queue(retry.config.write_queue_nums),
        delay_level,
    })
}

/// The copy of `original` for `destination`: body, flag, sys flag, born time and host kept;
/// reconsume times + 1; RETRY_TOPIC and ORIGIN_MESSAGE_ID set if absent; DELAY and WAIT set.
fn resent(original: &RecordView, destination: &Destination) -> Message {
    let (mut message, store) = record_parts(original);
    let origin_id = OffsetMsgId {
        store_host: store.store_host,
        commit_log_offset: store.physical_offset,
    }
    .to_string();
    let delay = destination.delay_level.to_string();
    let replaced = [property::DELAY, property::WAIT];
    let props = original.properties();
    let mut pairs: Vec<(&str, &str)> = properties_iter(props)
        .filter(|(name, _)| !replaced.contains(name))
        .collect();
    if original.property(property::RETRY_TOPIC).is_none() {
        pairs.push((property::RETRY_TOPIC, original.topic()));
    }
    if original.property(property::ORIGIN_MESSAGE_ID).is_none() {
        pairs.push((property::ORIGIN_MESSAGE_ID, &origin_id));
    }
    pairs.push((property::WAIT, "false"));
    pairs.push((property::DELAY, &delay));
    message.properties = Bytes::from(format_properties(pairs));
    message.topic = destination.topic.clone();
    message.queue_id = destination.queue_id;
    message.reconsume_times = message.reconsume_times.saturating_add(1);
    message
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::message::record::{encode, StoreFields};

    fn stored(topic: &str, props: &[(&str, &str)], reconsume_times: i32) -> RecordView {
        let message = Message {
            topic: topic.into(),
            queue_id: 3,
            flag: 7,
            sys_flag: 0,
            born_timestamp_ms: 1_700_000_000_000,
            born_host: "10.0.0.9:5555".parse().unwrap(),
            reconsume_times,
            prepared_transaction_offset: 0,
            body: Bytes::from_static(b"payload"),
            properties: Bytes::from(format_properties(props.iter().copied())),
        };
        let store = StoreFields {
            queue_offset: 11,
            physical_offset: 4096,
            store_timestamp_ms: 1_700_000_000_100,
            store_host: "127.0.0.1:10911".parse().unwrap(),
        };
        RecordView::parse(encode(&message, &store).unwrap()).unwrap()
    }

    fn props(message: &Message) -> Vec<(String, String)> {
        let text = std::str::from_utf8(&message.properties).unwrap();
        crate::protocol::message::record::parse_properties(text)
    }

    #[test]
    fn a_first_retry_names_the_original_topic_and_id_and_counts_one() {
        let original = stored(
            "T",
            &[("TAGS", "a"), ("UNIQ_KEY", "U1"), ("WAIT", "true")],
            0,
        );
        let to = Destination {
            topic: "%RETRY%g".into(),
            queue_id: 0,
            delay_level: 3,
        };
        let copy = resent(&original, &to);
        assert_eq!((copy.topic.as_str(), copy.queue_id), ("%RETRY%g", 0));
        assert_eq!(copy.reconsume_times, 1);
        assert_eq!((copy.flag, &copy.body[..]), (7, &b"payload"[..]));
        assert_eq!(copy.born_host, original.born_host());
        let origin_id = OffsetMsgId {
            store_host: "127.0.0.1:10911".parse().unwrap(),
            commit_log_offset: 4096,
        }
        .to_string();
        let expected: Vec<(String, String)> = [
            ("TAGS", "a"),
            ("UNIQ_KEY", "U1"),
            ("RETRY_TOPIC", "T"),
            ("ORIGIN_MESSAGE_ID", origin_id.as_str()),
            ("WAIT", "false"),
            ("DELAY", "3"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(props(&copy), expected);
    }

    #[test]
    fn a_forged_reconsume_count_saturates_instead_of_overflowing() {
        let original = stored("T", &[], i32::MAX);
        let to = Destination {
            topic: "%DLQ%g".into(),
            queue_id: 0,
            delay_level: 0,
        };
        assert_eq!(resent(&original, &to).reconsume_times, i32::MAX);
    }

    #[test]
    fn a_later_retry_keeps_the_first_topic_and_id() {
        let original = stored(
            "%RETRY%g",
            &[
                ("RETRY_TOPIC", "T"),
                ("ORIGIN_MESSAGE_ID", "ID0"),
                ("DELAY", "3"),
            ],
            1,
        );
        let to = Destination {
            topic: "%DLQ%g".into(),
            queue_id: 0,
            delay_level: 0,
        };
        let copy = resent(&original, &to);
        assert_eq!(copy.reconsume_times, 2);
        let p = props(&copy);
        let get = |k: &str| p.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("RETRY_TOPIC"), Some("T"));
        assert_eq!(get("ORIGIN_MESSAGE_ID"), Some("ID0"));
        assert_eq!(get("DELAY"), Some("0"));
        assert_eq!(p.iter().filter(|(n, _)| n == "DELAY").count(), 1);
    }
}
