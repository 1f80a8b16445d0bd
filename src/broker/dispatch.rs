//! The broker's request table: every request code it serves, where it is served and by which
//! handler, in one place ([`Request::classify`]). A request is classified once, by its code,
//! on the shard whose connection it arrived on, and its header (and the body, where the
//! handler reads it) is decoded once, into the typed [`Request`] its handler takes.
//!
//! Where a request is served:
//! - **here**: the connection's shard answers from its own snapshot of the control plane;
//! - **queue owner**: the shard that owns (topic, queueId) (`placement::owner_of`);
//! - **offset owner**: the shard named in a physical offset's high bits;
//! - **shard 0**: the control plane's only writer;
//! - **every shard**: each answers for what it owns, the connection's shard merges the parts.
//!
//! What crosses to another shard is typed work (`broker::work`), served by `broker::inbox`.

use super::error::BrokerResult;
use super::processor::admin::{self, AdminRead};
use super::processor::control::{self, topic_from_header, ControlRequest};
use super::processor::send::{self, SendRequest};
use super::processor::{
    client_config, offsets, pull, query, reply, runtime_info, send_back, stats, transaction,
};
use super::shard::Shard;
use super::work::{OffsetRequest, Origin, Work};
use crate::broker::control::ops::ControlOp;
use crate::protocol::body;
use crate::protocol::body::check_client::CheckClientRequestBody;
use crate::protocol::codes::request as code;
use crate::protocol::command::RemotingCommand;
use crate::protocol::header::{
    ConsumerGroupRequestHeader, ConsumerSendMsgBackRequestHeader, CreateTopicRequestHeader,
    DeleteSubscriptionGroupRequestHeader, EndTransactionRequestHeader,
    GetConsumeStatsRequestHeader, PullMessageRequestHeader, QueryMessageRequestHeader,
    TopicRequestHeader, UnregisterClientRequestHeader, ViewMessageRequestHeader,
};
use crate::server::connection::Connection;
use crate::server::{not_supported, ConnectionId, RequestError, RequestHandler, Response};
use std::future::Future;
use std::rc::Rc;

/// A client request, classified by its code and decoded into what its handler reads.
pub enum Request {
    /// Checked here, stored by the queue owner.
    Send(SendRequest),
    /// A responder's reply: checked here, pushed by the shard holding the requester's
    /// connection, stored by the queue owner.
    Reply(SendRequest),
    /// Queue owner (long polls are held there).
    Pull(Box<PullMessageRequestHeader>),
    /// Queue owner.
    Offset(OffsetRequest),
    /// Offset owner.
    ViewMessage { offset: i64 },
    /// Every shard, merged here.
    QueryMessage(QueryMessageRequestHeader),
    /// Every shard, merged here.
    TopicStats { topic: String },
    /// Every shard, merged here.
    ConsumeStats(GetConsumeStatsRequestHeader),
    /// Every shard, merged here (with the online subscriptions of this shard's snapshot).
    ConsumedBy { topic: String },
    /// Every shard, merged here.
    RuntimeInfo,
    /// The original read at its offset owner, the copy stored by its queue owner.
    SendBack(ConsumerSendMsgBackRequestHeader),
    /// The shard named in the half message's offset (which stored it).
    EndTransaction(Box<EndTransactionRequestHeader>),
    /// Shard 0.
    Control(ControlRequest),
    /// Here.
    Admin(AdminRead),
    /// Here.
    CheckClientConfig(CheckClientRequestBody),
    /// A code the broker does not serve: answered REQUEST_CODE_NOT_SUPPORTED here.
    NotSupported,
}

impl Request {
    /// The table. A header or body that does not decode is the request's error (answered
    /// SYSTEM_ERROR with the reason); the connection stays open.
    pub fn classify(command: &RemotingCommand) -> BrokerResult<Self> {
        let offset = |request: OffsetRequest| Ok(Self::Offset(request));
        let control = |request: ControlRequest| Ok(Self::Control(request));
        let topic =
            || -> BrokerResult<String> { Ok(command.decode_header::<TopicRequestHeader>()?.topic) };
        let group = || -> BrokerResult<String> {
            Ok(command
                .decode_header::<ConsumerGroupRequestHeader>()?
                .consumer_group)
        };
        match command.code {
            code::SEND_MESSAGE | code::SEND_MESSAGE_V2 | code::SEND_BATCH_MESSAGE => {
                Ok(Self::Send(SendRequest::decode(command)?))
            }
            code::SEND_REPLY_MESSAGE | code::SEND_REPLY_MESSAGE_V2 => {
                Ok(Self::Reply(SendRequest::decode(command)?))
            }
            code::PULL_MESSAGE | code::LITE_PULL_MESSAGE => {
                Ok(Self::Pull(Box::new(command.decode_header()?)))
            }
            code::QUERY_CONSUMER_OFFSET => {
                offset(OffsetRequest::QueryConsumer(command.decode_header()?))
            }
            code::UPDATE_CONSUMER_OFFSET => {
                offset(OffsetRequest::UpdateConsumer(command.decode_header()?))
            }
            code::GET_MAX_OFFSET => offset(OffsetRequest::Max(command.decode_header()?)),
            code::GET_MIN_OFFSET => offset(OffsetRequest::Min(command.decode_header()?)),
            code::GET_EARLIEST_MSG_STORETIME => {
                offset(OffsetRequest::EarliestStoreTime(command.decode_header()?))
            }
            code::SEARCH_OFFSET_BY_TIMESTAMP => {
                offset(OffsetRequest::SearchByTime(command.decode_header()?))
            }
            code::VIEW_MESSAGE_BY_ID => Ok(Self::ViewMessage {
                offset: command.decode_header::<ViewMessageRequestHeader>()?.offset,
            }),
            code::QUERY_MESSAGE => Ok(Self::QueryMessage(command.decode_header()?)),
            code::GET_TOPIC_STATS_INFO => Ok(Self::TopicStats { topic: topic()? }),
            code::GET_CONSUME_STATS => Ok(Self::ConsumeStats(command.decode_header()?)),
            code::QUERY_TOPIC_CONSUME_BY_WHO => Ok(Self::ConsumedBy { topic: topic()? }),
            code::GET_BROKER_RUNTIME_INFO => Ok(Self::RuntimeInfo),
            code::CONSUMER_SEND_MSG_BACK => Ok(Self::SendBack(command.decode_header()?)),
            code::END_TRANSACTION => Ok(Self::EndTransaction(Box::new(command.decode_header()?))),
            code::HEART_BEAT => control(ControlRequest::Heartbeat(body::decode(&command.body)?)),
            code::UNREGISTER_CLIENT => control(ControlRequest::Unregister(
                command.decode_header::<UnregisterClientRequestHeader>()?,
            )),
            code::GET_CONSUMER_LIST_BY_GROUP => control(ControlRequest::ConsumerIds(group()?)),
            code::GET_CONSUMER_CONNECTION_LIST => {
                control(ControlRequest::ConsumerConnection(group()?))
            }
            code::LOCK_BATCH_MQ => control(ControlRequest::Lock(body::decode(&command.body)?)),
            code::UNLOCK_BATCH_MQ => control(ControlRequest::Unlock(body::decode(&command.body)?)),
            code::UPDATE_AND_CREATE_TOPIC => control(ControlRequest::UpsertTopic(
                topic_from_header(&command.decode_header::<CreateTopicRequestHeader>()?)?,
            )),
            code::DELETE_TOPIC_IN_BROKER => control(ControlRequest::DeleteTopic(topic()?)),
            code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP => {
                control(ControlRequest::UpsertGroup(body::decode(&command.body)?))
            }
            code::DELETE_SUBSCRIPTIONGROUP => control(ControlRequest::DeleteGroup(
                command
                    .decode_header::<DeleteSubscriptionGroupRequestHeader>()?
                    .group_name,
            )),
            code::GET_ALL_TOPIC_CONFIG => Ok(Self::Admin(AdminRead::AllTopics)),
            code::GET_TOPIC_CONFIG => Ok(Self::Admin(AdminRead::Topic(topic()?))),
            code::GET_ALL_SUBSCRIPTIONGROUP_CONFIG => Ok(Self::Admin(AdminRead::AllGroups)),
            code::GET_BROKER_CONFIG => Ok(Self::Admin(AdminRead::BrokerConfig)),
            // Apache reads a missing body as "nothing to check".
            code::CHECK_CLIENT_CONFIG if command.body.is_empty() => {
                Ok(Self::CheckClientConfig(CheckClientRequestBody::default()))
            }
            code::CHECK_CLIENT_CONFIG => Ok(Self::CheckClientConfig(body::decode(&command.body)?)),
            _ => Ok(Self::NotSupported),
        }
    }
}

/// Answers one client request; an error becomes its RocketMQ response code here
/// (`BrokerError::response_to`).
pub async fn dispatch(shard: &Shard, origin: Origin, command: RemotingCommand) -> Response {
    let served = match Request::classify(&command) {
        Ok(request) => serve(shard, origin, &command, request).await,
        Err(err) => Err(err),
    };
    served.unwrap_or_else(|err| {
        tracing::debug!(code = command.code, %err, "request failed");
        err.response_to(&command).into()
    })
}

async fn serve(
    shard: &Shard,
    origin: Origin,
    command: &RemotingCommand,
    request: Request,
) -> BrokerResult<Response> {
    match request {
        Request::Send(send) => send::serve(shard, origin, command, send).await,
        Request::Reply(reply) => reply::serve(shard, origin, command, reply).await,
        Request::Pull(header) => pull::serve(shard, origin, command, *header).await,
        Request::Offset(request) => offsets::serve(shard, command, request).await,
        Request::ViewMessage { offset } => query::serve_view(shard, command, offset).await,
        Request::QueryMessage(header) => query::serve_query(shard, command, header).await,
        Request::TopicStats { topic } => stats::serve_topic_stats(shard, command, topic).await,
        Request::ConsumeStats(header) => stats::serve_consume_stats(shard, command, header).await,
        Request::ConsumedBy { topic } => stats::serve_consumed_by(shard, command, topic).await,
        Request::RuntimeInfo => runtime_info::serve(shard, command).await,
        Request::SendBack(header) => send_back::serve(shard, command, header).await,
        Request::EndTransaction(header) => transaction::serve(shard, command, *header).await,
        Request::Control(request) => control::serve(shard, origin, command, request).await,
        Request::Admin(read) => admin::serve(shard, command, read),
        Request::CheckClientConfig(body) => client_config::serve(shard, command, body),
        Request::NotSupported => Ok(not_supported(command).into()),
    }
}

impl RequestHandler for Shard {
    fn handle(
        self: Rc<Self>,
        connection: Rc<Connection>,
        request: RemotingCommand,
    ) -> impl Future<Output = Result<Response, RequestError>> + 'static {
        self.track(&connection);
        let origin = Origin {
            shard: self.id(),
            connection: connection.id(),
            peer: connection.peer_addr(),
        };
        async move { Ok(dispatch(&self, origin, request).await) }
    }

    fn connection_closed(&self, connection: ConnectionId) {
        self.untrack(connection);
        // Shard 0 drops the client's memberships. Fire and forget: the connection is gone, and
        // a membership missed here expires after 120 s anyway.
        let closed = Work::Control(Box::new(ControlOp::ConnectionClosed(connection)));
        if let Err(err) = self.bus().send(0, closed) {
            tracing::debug!(%err, "could not report a closed connection");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::command::ext_fields;

    fn command(code: i32, fields: &[(&str, &str)], body: &[u8]) -> RemotingCommand {
        let mut command = RemotingCommand::request(code);
        command.ext_fields = ext_fields(fields);
        command.body = bytes::Bytes::copy_from_slice(body);
        command
    }

    fn classify(code: i32, fields: &[(&str, &str)], body: &[u8]) -> Request {
        Request::classify(&command(code, fields, body)).unwrap()
    }

    #[test]
    fn every_served_code_has_its_family() {
        let queue = [("topic", "T"), ("queueId", "1")];
        let group_queue = [
            ("consumerGroup", "g"),
            ("topic", "T"),
            ("queueId", "1"),
            ("commitOffset", "5"),
            ("timestamp", "7"),
        ];
        assert!(matches!(
            classify(code::GET_MAX_OFFSET, &queue, b""),
            Request::Offset(OffsetRequest::Max(_))
        ));
        assert!(matches!(
            classify(code::UPDATE_CONSUMER_OFFSET, &group_queue, b""),
            Request::Offset(OffsetRequest::UpdateConsumer(_))
        ));
        assert!(matches!(
            classify(code::SEARCH_OFFSET_BY_TIMESTAMP, &group_queue, b""),
            Request::Offset(OffsetRequest::SearchByTime(_))
        ));
        assert!(matches!(
            classify(code::VIEW_MESSAGE_BY_ID, &[("offset", "42")], b""),
            Request::ViewMessage { offset: 42 }
        ));
        assert!(matches!(
            classify(code::GET_TOPIC_STATS_INFO, &[("topic", "T")], b""),
            Request::TopicStats { .. }
        ));
        assert!(matches!(
            classify(code::GET_BROKER_RUNTIME_INFO, &[], b""),
            Request::RuntimeInfo
        ));
        assert!(matches!(
            classify(code::GET_CONSUMER_LIST_BY_GROUP, &[("consumerGroup", "g")], b""),
            Request::Control(ControlRequest::ConsumerIds(g)) if g == "g"
        ));
        assert!(matches!(
            classify(code::HEART_BEAT, &[], br#"{"clientID":"c"}"#),
            Request::Control(ControlRequest::Heartbeat(_))
        ));
        let reply_v1 = [
            ("producerGroup", "PG"),
            ("topic", "DefaultCluster_REPLY_TOPIC"),
            ("defaultTopic", "TBW102"),
            ("defaultTopicQueueNums", "4"),
            ("queueId", "0"),
            ("sysFlag", "0"),
            ("bornTimestamp", "1"),
            ("flag", "0"),
        ];
        assert!(matches!(
            classify(code::SEND_REPLY_MESSAGE, &reply_v1, b"r"),
            Request::Reply(r) if r.header.topic == "DefaultCluster_REPLY_TOPIC"
        ));
        let reply_v2 = reply_v1.map(|(key, value)| {
            let short = ["a", "b", "c", "d", "e", "f", "g", "h"];
            let at = reply_v1.iter().position(|(k, _)| *k == key).unwrap();
            (short[at], value)
        });
        assert!(matches!(
            classify(code::SEND_REPLY_MESSAGE_V2, &reply_v2, b"r"),
            Request::Reply(r) if r.header.queue_id == 0 && &r.body[..] == b"r"
        ));
        assert!(matches!(
            classify(code::GET_ALL_TOPIC_CONFIG, &[], b""),
            Request::Admin(AdminRead::AllTopics)
        ));
        let end = [
            ("producerGroup", "P"),
            ("tranStateTableOffset", "3"),
            ("commitLogOffset", "4096"),
            ("commitOrRollback", "8"),
            ("msgId", "M"),
        ];
        assert!(matches!(
            classify(code::END_TRANSACTION, &end, b""),
            Request::EndTransaction(h) if h.commit_log_offset == 4096 && !h.from_transaction_check
        ));
    }

    #[test]
    fn an_unknown_code_is_not_supported_and_a_bad_header_is_the_requests_error() {
        assert!(matches!(classify(9999, &[], b""), Request::NotSupported));
        let missing_queue = command(code::PULL_MESSAGE, &[("topic", "T")], b"");
        assert!(Request::classify(&missing_queue).is_err());
        let bad_body = command(code::LOCK_BATCH_MQ, &[], b"{not json");
        assert!(Request::classify(&bad_body).is_err());
    }
}
