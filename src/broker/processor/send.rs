//! SEND_MESSAGE, SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE.
//!
//! The connection's shard checks the request, resolves (or auto-creates) the topic, picks a
//! queue when the producer left it to the broker and builds the message(s); the queue's owner
//! stores them (`append::store`) and the connection's shard answers (REMOTING.md §4.2).
//!
//! Per send: one header decode (in `dispatch`), one properties rewrite per message, the body
//! never copied before the log's buffer, one hop to the owner when it is another shard.

use super::append::append_on;
use crate::broker::control::topics::RETRY_GROUP_TOPIC_PREFIX;
use crate::broker::error::{BrokerError, BrokerResult};
use crate::broker::shard::{SendTopic, Shard};
use crate::broker::transaction::message::{send_kind, SendKind};
use crate::broker::work::{Append, Origin};
use crate::protocol::body::PERM_WRITE;
use crate::protocol::codes::{request as code, response};
use crate::protocol::command::RemotingCommand;
use crate::protocol::command::Text;
use crate::protocol::header::{SendMessageRequestHeader, SendMessageResponseHeader};
use crate::protocol::message::record::{
    find_property, format_properties, properties_iter, property, Message, TransactionType,
};
use crate::protocol::message::{decode_batch, OffsetMsgId};
use crate::server::Response;
use bytes::Bytes;
use ringmq_shards::schedule::asked_delay;
use ringmq_shards::AppendResult;
use std::fmt::Write as _;

/// Property the Java broker (4.9+) adds to every stored message: the cluster that stored it.
const PROPERTY_CLUSTER: &str = "CLUSTER";
/// Properties the Java broker (5.x, `AbstractSendMessageProcessor.buildMsgContext`) sets on
/// every stored message, replacing the producer's, and answers in the send response: the
/// broker's region and whether tracing is on. Consumers' trace hooks read them.
const PROPERTY_MSG_REGION: &str = "MSG_REGION";
const PROPERTY_TRACE_ON: &str = "TRACE_ON";
/// What the Java broker answers in MSG_REGION when no region is configured.
const REGION_DEFAULT: &str = "DefaultRegion";
/// TRACE_ON as the Java broker answers by default (`traceOn`): clients may trace.
const TRACE_ON: &str = "true";
/// The properties the broker sets itself, whatever the producer sent in them.
const BROKER_SET_PROPERTIES: [&str; 3] = [PROPERTY_CLUSTER, PROPERTY_MSG_REGION, PROPERTY_TRACE_ON];
/// A DLQ has one queue (`MixAll.DLQ_NUMS_PER_GROUP`).
pub const DLQ_QUEUE_ID: i32 = 0;

/// A send as `dispatch` decoded it.
pub struct SendRequest {
    pub header: SendMessageRequestHeader,
    /// A slice of the connection's read buffer.
    pub body: Bytes,
    /// SEND_BATCH_MESSAGE, or a V1/V2 send flagged `batch`.
    pub batch: bool,
}

impl SendRequest {
    pub fn decode(command: &RemotingCommand) -> BrokerResult<Self> {
        let header = SendMessageRequestHeader::decode_from(command)?;
        let batch = command.code == code::SEND_BATCH_MESSAGE || header.batch == Some(true);
        Ok(Self {
            header,
            body: command.body.clone(),
            batch,
        })
    }
}

/// Serves a send on the connection's shard.
pub async fn serve(
    shard: &Shard,
    origin: Origin,
    command: &RemotingCommand,
    mut send: SendRequest,
) -> BrokerResult<Response> {
    redirect_exhausted_retry(shard, &mut send.header).await?;
    send.header.queue_id = writable_queue(shard, &send.header).await?;
    let half = is_half(shard, &send)?;
    let messages = messages(shard, origin, &send)?;
    let uniq_keys = uniq_keys(&messages);
    let owner = shard.owner_of(&send.header.topic, send.header.queue_id);
    let append = Append {
        messages,
        delayable: !send.batch,
        half,
    };
    let results = append_on(shard, owner, append).await?;
    Ok(response(shard, command, &send.header, &results, uniq_keys).into())
}

/// Whether the send is a transaction's half message, which the owner holds until its producer
/// decides (`transaction::message::send_kind`). Apache refuses a batch whose sysFlag says
/// transactional, a rolled-back send is never stored, and with `rejectTransactionMessage` a
/// half message is refused as Apache words it.
fn is_half(shard: &Shard, send: &SendRequest) -> BrokerResult<bool> {
    let header = &send.header;
    if send.batch {
        if TransactionType::of(header.sys_flag) != TransactionType::NotType {
            return Err(BrokerError::MessageIllegal(
                "a batch message cannot be transactional".into(),
            ));
        }
        return Ok(false);
    }
    let properties = header.properties.as_deref().unwrap_or("");
    let reconsume_times = header.reconsume_times.unwrap_or(0);
    match send_kind(header.sys_flag, properties, reconsume_times) {
        SendKind::Plain => Ok(false),
        SendKind::RolledBack => Err(BrokerError::MessageIllegal(
            "a rolled-back transaction message is not stored".into(),
        )),
        SendKind::Half if shard.config().transaction.reject_transaction_message => {
            Err(BrokerError::NoPermission(format!(
                "the broker[{}] sending transaction message is forbidden",
                shard.config().broker_ip1
            )))
        }
        SendKind::Half => Ok(true),
    }
}

/// Refuses a send when the broker is not writable (brokerPermission).
pub fn check_writable(shard: &Shard) -> BrokerResult<()> {
    if shard.config().broker_permission & PERM_WRITE == 0 {
        return Err(BrokerError::NoPermission(format!(
            "the broker[{}] sending message is forbidden",
            shard.config().broker_ip1
        )));
    }
    Ok(())
}

/// Apache's `handleRetryAndDLQ`: a send to `%RETRY%group` (the consumer's own copy when its
/// send-back failed) whose reconsume times reached the maximum goes to `%DLQ%group` queue 0
/// instead. Its properties are left as sent, DELAY included, as Apache stores them: such a
/// copy reaches the DLQ after its delay.
async fn redirect_exhausted_retry(
    shard: &Shard,
    header: &mut SendMessageRequestHeader,
) -> BrokerResult<()> {
    let Some(group) = header.topic.strip_prefix(RETRY_GROUP_TOPIC_PREFIX) else {
        return Ok(());
    };
    let group = group.to_owned();
    let config = shard.group_config(&group).await?;
    let max_reconsume_times = header.max_reconsume_times.unwrap_or(config.retry_max_times);
    if header.reconsume_times.unwrap_or(0) < max_reconsume_times {
        return Ok(());
    }
    header.topic = shard.dlq_topic(&group).await?.into();
    header.queue_id = DLQ_QUEUE_ID;
    Ok(())
}

/// The queue a send (or a reply) goes to, in its topic, resolved or auto-created, on a
/// writable broker and topic.
pub(super) async fn writable_queue(
    shard: &Shard,
    header: &SendMessageRequestHeader,
) -> BrokerResult<i32> {
    check_writable(shard)?;
    let topic = shard
        .topic_for_send(
            &header.topic,
            &header.default_topic,
            header.default_topic_queue_nums,
        )
        .await?
        .ok_or_else(|| BrokerError::TopicNotExist(header.topic.to_string()))?;
    if topic.perm & PERM_WRITE == 0 {
        return Err(BrokerError::NoPermission(format!(
            "the topic[{}] sending message is forbidden",
            header.topic
        )));
    }
    queue_for_send(shard, header, &topic)
}

/// The queue the send goes to: the producer's, or one the broker picks when it sent < 0.
fn queue_for_send(
    shard: &Shard,
    header: &SendMessageRequestHeader,
    topic: &SendTopic,
) -> BrokerResult<i32> {
    if header.queue_id < 0 {
        return Ok(shard.pick_queue(topic.write_queue_nums));
    }
    if header.queue_id >= topic.write_queue_nums.max(topic.read_queue_nums) {
        return Err(BrokerError::Illegal(format!(
            "request queueId[{}] is illegal, {} Producer: {}",
            header.queue_id, header.topic, header.producer_group
        )));
    }
    Ok(header.queue_id)
}

/// The message(s) of a send as the store takes them.
fn messages(shard: &Shard, origin: Origin, send: &SendRequest) -> BrokerResult<Vec<Message>> {
    let header = &send.header;
    let properties = header.properties.as_deref().unwrap_or("");
    if !send.batch {
        return Ok(vec![single_message(
            shard,
            origin,
            header,
            send.body.clone(),
        )?]);
    }
    // Apache refuses a delayed batch (CommitLog.asyncPutMessages).
    if matches!(asked_delay(properties), Ok(Some(_))) {
        return Err(BrokerError::MessageIllegal(
            "a batch cannot be delayed".into(),
        ));
    }
    let entries = decode_batch(send.body.clone(), shard.limits())?;
    if entries.is_empty() {
        return Err(BrokerError::MessageIllegal("the batch is empty".into()));
    }
    entries
        .into_iter()
        .map(|entry| {
            let properties = std::str::from_utf8(&entry.properties).map_err(|_| {
                BrokerError::MessageIllegal("batch entry properties are not UTF-8".into())
            })?;
            Ok(message(
                shard, origin, header, entry.body, entry.flag, properties, false,
            ))
        })
        .collect()
}

/// The message of a single send (or a reply), its body within `maxMessageSize`.
pub(super) fn single_message(
    shard: &Shard,
    origin: Origin,
    header: &SendMessageRequestHeader,
    body: Bytes,
) -> BrokerResult<Message> {
    shard.limits().check_body(body.len())?;
    let properties = header.properties.as_deref().unwrap_or("");
    Ok(message(shard, origin, header, body, 0, properties, true))
}

/// One message; `entry_flag` is the batch entry's (a single message's comes from the
/// header). Sets CLUSTER, MSG_REGION and TRACE_ON, and a UNIQ_KEY when the client sent none
/// and `add_uniq_key` (single sends only: Java stores batch entries as they came, so a
/// consumer's msgId for an entry without one is the offsetMsgId the send returned, as the Go
/// client's batches rely on).
fn message(
    shard: &Shard,
    origin: Origin,
    header: &SendMessageRequestHeader,
    body: Bytes,
    entry_flag: i32,
    properties: &str,
    add_uniq_key: bool,
) -> Message {
    let uniq = (add_uniq_key && find_property(properties, property::UNIQ_KEY).is_none())
        .then(|| shard.next_uniq_key());
    let pairs = properties_iter(properties)
        .filter(|(name, _)| !BROKER_SET_PROPERTIES.contains(name))
        .chain(uniq.as_deref().map(|uniq| (property::UNIQ_KEY, uniq)))
        .chain([
            (PROPERTY_CLUSTER, &*shard.config().broker_cluster_name),
            (PROPERTY_MSG_REGION, REGION_DEFAULT),
            (PROPERTY_TRACE_ON, TRACE_ON),
        ]);
    let flag = if entry_flag != 0 {
        entry_flag
    } else {
        header.flag
    };
    Message {
        topic: header.topic.to_string(),
        queue_id: header.queue_id,
        flag,
        sys_flag: header.sys_flag,
        born_timestamp_ms: header.born_timestamp,
        born_host: origin.peer,
        reconsume_times: header.reconsume_times.unwrap_or(0),
        prepared_transaction_offset: 0,
        body,
        properties: Bytes::from(format_properties(pairs)),
    }
}

/// The messages' UNIQ_KEYs, comma-separated, as the response's transactionId carries them
/// (copied inline: a slice of the properties would cost a shared header for them).
pub(super) fn uniq_keys(messages: &[Message]) -> Text {
    fn uniq_key(message: &Message) -> Option<&str> {
        let props = std::str::from_utf8(&message.properties).ok()?;
        find_property(props, property::UNIQ_KEY)
    }
    match messages {
        [one] => uniq_key(one).map(Text::display).unwrap_or_default(),
        many => comma_separated(many.iter().filter_map(uniq_key)),
    }
}

/// `items` displayed and joined by `,`, as Java joins a batch's ids (a batch's ids are
/// longer than an inline text, so the string is kept as it is, not formatted again).
fn comma_separated<T: std::fmt::Display>(items: impl Iterator<Item = T>) -> Text {
    let mut joined = String::new();
    for (i, item) in items.enumerate() {
        if i > 0 {
            joined.push(',');
        }
        write!(joined, "{item}").expect("writing to a String cannot fail");
    }
    joined.into()
}

/// Answers as Apache: a delayed message's queueId is the one it was sent to, its
/// queueOffset and msgId those of its schedule record; a half message's likewise those of its
/// half record, which END_TRANSACTION names (tranStateTableOffset, commitLogOffset).
pub(super) fn response(
    shard: &Shard,
    command: &RemotingCommand,
    sent: &SendMessageRequestHeader,
    results: &[AppendResult],
    uniq_keys: Text,
) -> RemotingCommand {
    let store_host = shard.store_host();
    let msg_id = |r: &AppendResult| OffsetMsgId {
        store_host,
        commit_log_offset: r.physical_offset,
    };
    let msg_id = match results {
        [one] => Text::display(msg_id(one)),
        many => comma_separated(many.iter().map(msg_id)),
    };
    let header = response_header(msg_id, sent.queue_id, results[0].queue_offset, uniq_keys);
    RemotingCommand::response_to(command, response::SUCCESS, None).with_header(&header)
}

/// A send response's header, with the region and trace switch Apache adds to every one.
pub(super) fn response_header(
    msg_id: Text,
    queue_id: i32,
    queue_offset: i64,
    uniq_keys: Text,
) -> SendMessageResponseHeader {
    SendMessageResponseHeader {
        msg_id,
        queue_id,
        queue_offset,
        transaction_id: Some(uniq_keys),
        batch_uniq_id: None,
        recall_handle: None,
        msg_region: Some(REGION_DEFAULT.into()),
        trace_on: Some(TRACE_ON.into()),
    }
}
