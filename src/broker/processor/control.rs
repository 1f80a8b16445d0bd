//! Client requests about the control plane (clients, groups, topics, locks): decoded on the
//! connection's shard, applied by shard 0 (the tables' only writer), answered here.

use crate::broker::control::ops::{ClientOrigin, ControlOp};
use crate::broker::error::{BrokerError, BrokerResult};
use crate::broker::shard::Shard;
use crate::broker::work::Origin;
use crate::protocol::body::consumer_group::GetConsumerListByGroupResponseBody;
use crate::protocol::body::heartbeat::HeartbeatData;
use crate::protocol::body::lock::{
    LockBatchRequestBody, LockBatchResponseBody, UnlockBatchRequestBody,
};
use crate::protocol::body::subscription_group::SubscriptionGroupConfig;
use crate::protocol::body::{self, TopicConfig, TopicFilterType};
use crate::protocol::codes::response;
use crate::protocol::command::RemotingCommand;
use crate::protocol::header::{CreateTopicRequestHeader, UnregisterClientRequestHeader};
use crate::server::Response;

/// A control-plane request as `dispatch` decoded it.
pub enum ControlRequest {
    Heartbeat(HeartbeatData),
    Unregister(UnregisterClientRequestHeader),
    ConsumerIds(String),
    ConsumerConnection(String),
    Lock(LockBatchRequestBody),
    Unlock(UnlockBatchRequestBody),
    UpsertTopic(TopicConfig),
    DeleteTopic(String),
    UpsertGroup(SubscriptionGroupConfig),
    DeleteGroup(String),
}

pub async fn serve(
    shard: &Shard,
    origin: Origin,
    command: &RemotingCommand,
    request: ControlRequest,
) -> BrokerResult<Response> {
    let ok = RemotingCommand::response_to(command, response::SUCCESS, None);
    let answer = match request {
        ControlRequest::Heartbeat(data) => {
            let client = ClientOrigin {
                shard: origin.shard,
                connection: origin.connection,
                peer: origin.peer,
                language: command.language,
                version: command.version,
            };
            let op = |reply| ControlOp::Heartbeat {
                client,
                data,
                reply,
            };
            shard.control(op).await?;
            ok
        }
        ControlRequest::Unregister(h) => {
            shard
                .control(|reply| ControlOp::UnregisterClient {
                    consumer_group: h.consumer_group,
                    producer_group: h.producer_group,
                    client_id: h.client_id,
                    reply,
                })
                .await?;
            ok
        }
        ControlRequest::ConsumerIds(group) => {
            let ids = shard
                .control(|reply| ControlOp::ConsumerIds { group, reply })
                .await?;
            let list = GetConsumerListByGroupResponseBody {
                consumer_id_list: ids,
            };
            ok.with_body(body::encode(&list)?)
        }
        ControlRequest::ConsumerConnection(group) => {
            let connection = shard
                .control(|reply| ControlOp::ConsumerConnection { group, reply })
                .await?;
            ok.with_body(body::encode(&connection)?)
        }
        ControlRequest::Lock(lock) => {
            let locked = shard
                .control(|reply| ControlOp::LockBatch { body: lock, reply })
                .await?;
            let answer = LockBatchResponseBody {
                lock_ok_mq_set: locked,
            };
            ok.with_body(body::encode(&answer)?)
        }
        ControlRequest::Unlock(unlock) => {
            shard
                .control(|reply| ControlOp::UnlockBatch {
                    body: unlock,
                    reply,
                })
                .await?;
            ok
        }
        ControlRequest::UpsertTopic(config) => {
            shard
                .control(|reply| ControlOp::UpsertTopic { config, reply })
                .await?;
            ok
        }
        ControlRequest::DeleteTopic(topic) => {
            shard
                .control(|reply| ControlOp::DeleteTopic { topic, reply })
                .await?;
            ok
        }
        ControlRequest::UpsertGroup(config) => {
            shard
                .control(|reply| ControlOp::UpsertGroup { config, reply })
                .await?;
            ok
        }
        ControlRequest::DeleteGroup(group) => {
            shard
                .control(|reply| ControlOp::DeleteGroup { group, reply })
                .await?;
            ok
        }
    };
    Ok(answer.into())
}

/// The topic an UPDATE_AND_CREATE_TOPIC asks for.
pub fn topic_from_header(h: &CreateTopicRequestHeader) -> BrokerResult<TopicConfig> {
    let filter = match h.topic_filter_type.as_str() {
        "MULTI_TAG" => TopicFilterType::MultiTag,
        "SINGLE_TAG" | "" => TopicFilterType::SingleTag,
        other => {
            return Err(BrokerError::InvalidParameter(format!(
                "unknown topicFilterType {other}"
            )))
        }
    };
    Ok(TopicConfig {
        read_queue_nums: h.read_queue_nums,
        write_queue_nums: h.write_queue_nums,
        perm: h.perm,
        topic_filter_type: filter,
        topic_sys_flag: h.topic_sys_flag.unwrap_or(0),
        order: h.order,
        ..TopicConfig::new(&h.topic, h.write_queue_nums)
    })
}
