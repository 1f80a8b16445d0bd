//! SEND_REPLY_MESSAGE and SEND_REPLY_MESSAGE_V2 (Apache's `ReplyMessageProcessor`, 4.6+): a
//! responder's answer to a `request()`, sent to `<cluster>_REPLY_TOPIC` with the request's
//! CORRELATION_ID, REPLY_TO_CLIENT and TTL (the client's `MessageUtil.createReplyMessage`).
//!
//! The connection's shard checks it as a send (writable broker and topic, queue, body within
//! `maxMessageSize`), asks shard 0 for the connection of the producer client named by
//! REPLY_TO_CLIENT (the producers' heartbeats, the registry transaction checks use) and has
//! the shard holding that connection push it as PUSH_REPLY_MESSAGE_TO_CLIENT, a request the
//! requester answers (typed work, [`push`] on that shard). With `storeReplyMessageEnable`
//! (Apache's default) the reply is also stored in its queue, while the push is under way. The
//! answer is the push's, as Apache's: SUCCESS (with the stored copy's msgId and offset, or
//! `"0"` and 0 without one), else SYSTEM_ERROR with Apache's remark.
//!
//! Bounds: the body is bounded by `maxMessageSize` and is never copied on its way to the
//! requester (one `Bytes` crosses the bus); a push waits at most [`PUSH_REPLY_TIMEOUT`]; a
//! requester's connection holds at most `PENDING_REQUESTS_MAX` unanswered pushes and
//! `OUTBOX_COMMANDS_MAX` unwritten commands, past which a push fails at once (the responder
//! gets SYSTEM_ERROR; nothing waits for room).

use super::append::append_on;
use super::send::{response, response_header, single_message, uniq_keys};
use super::send::{writable_queue, SendRequest};
use crate::broker::control::ops::{ControlOp, ProducerChannel};
use crate::broker::error::BrokerResult;
use crate::broker::now_ms;
use crate::broker::shard::Shard;
use crate::broker::work::{Append, Origin, ReplyPush, Work};
use crate::protocol::codes::{request as code, response as response_code};
use crate::protocol::command::{RemotingCommand, Text};
use crate::protocol::header::{ReplyMessageRequestHeader, SendMessageRequestHeader};
use crate::protocol::message::record::{find_property, format_properties, properties_iter};
use crate::server::{ConnectionId, Response};
use bytes::Bytes;
use ringmq_shards::AppendResult;

/// `MessageConst.PROPERTY_MESSAGE_REPLY_TO_CLIENT`: the requester's client id.
pub const REPLY_TO_CLIENT: &str = "REPLY_TO_CLIENT";
/// `MessageConst.PROPERTY_PUSH_REPLY_TIME`: set on the pushed copy, when the broker pushed it.
pub const PUSH_REPLY_TIME: &str = "PUSH_REPLY_TIME";
/// How long a push waits for the requester's answer: Apache's `Broker2Client.callClient`.
pub const PUSH_REPLY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Why a reply did not reach its requester; each is SYSTEM_ERROR with Apache's remark.
#[derive(Debug, thiserror::Error)]
pub enum ReplyError {
    #[error("reply message properties[{REPLY_TO_CLIENT}] is null")]
    NoRequester,
    #[error("push reply message fail, channel of <{client_id}> not found.")]
    RequesterNotConnected { client_id: String },
    /// Apache's remark, its missing space included; the reason is ringmq's.
    #[error("push reply message to {client_id}fail. ({reason})")]
    PushFailed { client_id: String, reason: String },
}

/// Serves a reply on the responder's connection shard.
pub async fn serve(
    shard: &Shard,
    origin: Origin,
    command: &RemotingCommand,
    mut send: SendRequest,
) -> BrokerResult<Response> {
    send.header.queue_id = writable_queue(shard, &send.header).await?;
    // A reply is one message whatever its header's batch flag says (as Apache reads it).
    let message = single_message(shard, origin, &send.header, send.body.clone())?;
    let uniq_key = uniq_keys(std::slice::from_ref(&message));
    let stored = async {
        if !shard.config().store_reply_message_enable {
            return None;
        }
        let owner = shard.owner_of(&send.header.topic, send.header.queue_id);
        let append = Append {
            messages: vec![message],
            delayable: true,
            half: false,
        };
        match append_on(shard, owner, append).await {
            Ok(mut results) => results.pop(),
            // Apache answers by the push alone; the stored copy is a record of it.
            Err(err) => {
                tracing::warn!(%err, topic = %send.header.topic, "reply message not stored");
                None
            }
        }
    };
    let pushed = push_to_requester(shard, origin, &send.header, send.body.clone());
    let (pushed, stored) = futures_lite::future::zip(pushed, stored).await;
    pushed?;
    Ok(answer(shard, command, &send.header, stored, uniq_key).into())
}

/// SUCCESS with the stored copy's msgId and offset, or `"0"` and 0 without one (Apache sets
/// them so the client's decoding does not fail).
fn answer(
    shard: &Shard,
    command: &RemotingCommand,
    header: &SendMessageRequestHeader,
    stored: Option<AppendResult>,
    uniq_key: Text,
) -> RemotingCommand {
    if let Some(stored) = stored {
        return response(shard, command, header, &[stored], uniq_key);
    }
    let header = response_header("0".into(), header.queue_id, 0, uniq_key);
    RemotingCommand::response_to(command, response_code::SUCCESS, None).with_header(&header)
}

/// Finds the requester's connection and has its shard push the reply.
async fn push_to_requester(
    shard: &Shard,
    origin: Origin,
    header: &SendMessageRequestHeader,
    body: Bytes,
) -> BrokerResult<()> {
    let properties = header.properties.as_deref().unwrap_or("");
    let client_id = find_property(properties, REPLY_TO_CLIENT)
        .ok_or(ReplyError::NoRequester)?
        .to_owned();
    let requester = shard
        .control(|reply| ControlOp::ProducerOfClient {
            client_id: client_id.clone(),
            reply,
        })
        .await?;
    let Some(ProducerChannel {
        shard: to,
        connection,
    }) = requester
    else {
        return Err(ReplyError::RequesterNotConnected { client_id }.into());
    };
    let push = ReplyPush {
        header: push_header(shard, origin, header, properties),
        body,
        client_id,
    };
    if to == shard.id() {
        return self::push(shard, connection, &push).await;
    }
    let push = Box::new(push);
    shard
        .ask(to, |reply| Work::PushReply {
            connection,
            push,
            reply,
        })
        .await
}

/// PUSH_REPLY_MESSAGE_TO_CLIENT's header as Apache fills it: the reply's send header, the
/// responder's address as bornHost, this broker as storeHost, PUSH_REPLY_TIME added.
fn push_header(
    shard: &Shard,
    origin: Origin,
    header: &SendMessageRequestHeader,
    properties: &str,
) -> ReplyMessageRequestHeader {
    let now = now_ms();
    let now_text = now.to_string();
    let pushed_properties = properties_iter(properties)
        .filter(|(name, _)| *name != PUSH_REPLY_TIME)
        .chain([(PUSH_REPLY_TIME, now_text.as_str())]);
    ReplyMessageRequestHeader {
        producer_group: header.producer_group.to_string(),
        topic: header.topic.to_string(),
        default_topic: header.default_topic.to_string(),
        default_topic_queue_nums: header.default_topic_queue_nums,
        queue_id: header.queue_id,
        sys_flag: header.sys_flag,
        born_timestamp: header.born_timestamp,
        flag: header.flag,
        properties: Some(format_properties(pushed_properties)),
        reconsume_times: header.reconsume_times,
        unit_mode: header.unit_mode.unwrap_or(false),
        born_host: origin.peer.to_string(),
        store_host: shard.store_host().to_string(),
        store_timestamp: now,
    }
}

/// Owner half, on the shard holding the requester's connection: pushes the reply and waits
/// (bounded) for the requester's answer. A closed connection, a full one, no answer in time or
/// an answer other than SUCCESS all fail the push.
pub async fn push(shard: &Shard, connection: ConnectionId, push: &ReplyPush) -> BrokerResult<()> {
    let failed = |reason: String| ReplyError::PushFailed {
        client_id: push.client_id.clone(),
        reason,
    };
    let open = shard
        .open_connection(connection)
        .ok_or_else(|| failed("its connection closed".into()))?;
    let request = RemotingCommand::request(code::PUSH_REPLY_MESSAGE_TO_CLIENT)
        .with_header(&push.header)
        .with_body(push.body.clone());
    let answered = open
        .request(request, PUSH_REPLY_TIMEOUT)
        .await
        .map_err(|err| failed(err.to_string()))?;
    if answered.code != response_code::SUCCESS {
        let reason = format!("it answered {}: {:?}", answered.code, answered.remark);
        return Err(failed(reason).into());
    }
    Ok(())
}
