//! Requests as RocketMQ clients build them, for the broker tests: topic creation, sends,
//! pulls, offset commits and queries.

use bytes::Bytes;
use ringmq::client::RemotingClient;
use ringmq::protocol::codes::request as code;
use ringmq::protocol::codes::response;
use ringmq::protocol::command::RemotingCommand;
use ringmq::protocol::header::*;
use ringmq::protocol::message::record::{format_properties, RecordView};
use ringmq::protocol::message::{split_records, OffsetMsgId};
use std::time::Duration;

/// Per-request timeout; generous because the machine is shared.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// Sends `request` and returns the response, failing the test on a transport error.
pub async fn call(client: &RemotingClient, request: RemotingCommand) -> RemotingCommand {
    client.request(request, TIMEOUT).await.expect("response")
}

/// The records of a pull or view response's body.
pub fn records(response: &RemotingCommand) -> Vec<RecordView> {
    split_records(response.body.clone())
        .map(|r| r.expect("valid record"))
        .collect()
}

/// The record a send answered with, by its msgId (VIEW_MESSAGE_BY_ID).
pub async fn view_record(client: &RemotingClient, msg_id: &str) -> RecordView {
    let offset = OffsetMsgId::parse(msg_id)
        .expect("an offsetMsgId")
        .commit_log_offset;
    let request =
        RemotingCommand::request(code::VIEW_MESSAGE_BY_ID).with_header(&ViewMessageRequestHeader {
            topic: None,
            offset,
        });
    let got = call(client, request).await;
    assert_eq!(got.code, response::SUCCESS, "{:?}", got.remark);
    records(&got).remove(0)
}

/// UPDATE_AND_CREATE_TOPIC as mqadmin sends it (read-write, single tag).
pub fn create_topic(topic: &str, queues: i32) -> RemotingCommand {
    RemotingCommand::request(code::UPDATE_AND_CREATE_TOPIC).with_header(&CreateTopicRequestHeader {
        topic: topic.into(),
        default_topic: "TBW102".into(),
        read_queue_nums: queues,
        write_queue_nums: queues,
        perm: 6,
        topic_filter_type: "SINGLE_TAG".into(),
        topic_sys_flag: Some(0),
        order: false,
        attributes: None,
        force: false,
    })
}

/// SEND_MESSAGE_V2 of one message with these properties.
pub fn send(topic: &str, queue_id: i32, body: &[u8], props: &[(&str, &str)]) -> RemotingCommand {
    let header = SendMessageRequestHeader {
        producer_group: "PG".into(),
        topic: topic.to_owned().into(),
        default_topic: "TBW102".into(),
        default_topic_queue_nums: 4,
        queue_id,
        sys_flag: 0,
        born_timestamp: 1_700_000_000_000,
        flag: 0,
        properties: Some(format_properties(props.iter().copied()).into()),
        reconsume_times: Some(0),
        unit_mode: Some(false),
        max_reconsume_times: None,
        batch: Some(false),
        broker_name: None,
    };
    RemotingCommand::request(code::SEND_MESSAGE_V2)
        .with_header(&SendMessageRequestHeaderV2(header))
        .with_body(Bytes::copy_from_slice(body))
}

/// PULL_MESSAGE of group `group`; with `Some(expression)` the subscription travels with the
/// pull (flag 4), else the broker uses the group's from its heartbeats. Held up to
/// `suspend_ms` (flag 2) when non-zero.
pub fn pull(
    group: &str,
    topic: &str,
    queue_id: i32,
    offset: i64,
    subscription: Option<&str>,
    suspend_ms: i64,
) -> RemotingCommand {
    let sys_flag = if subscription.is_some() { 4 } else { 0 } | if suspend_ms > 0 { 2 } else { 0 };
    RemotingCommand::request(code::PULL_MESSAGE).with_header(&PullMessageRequestHeader {
        consumer_group: group.into(),
        topic: topic.into(),
        queue_id,
        queue_offset: offset,
        max_msg_nums: 1024,
        sys_flag,
        commit_offset: 0,
        suspend_timeout_millis: suspend_ms,
        subscription: subscription.map(str::to_owned),
        sub_version: 0,
        expression_type: subscription.map(|_| "TAG".to_owned()),
        max_msg_bytes: None,
        request_source: None,
        proxy_forward_client_id: None,
    })
}

/// A request built by [`pull`], also committing `commit_offset` for its group (flag 1), as a
/// push consumer's pull carries the offset it has consumed up to.
pub fn committing(pull: RemotingCommand, commit_offset: i64) -> RemotingCommand {
    let mut header: PullMessageRequestHeader = pull.decode_header().expect("a pull's header");
    header.sys_flag |= 1;
    header.commit_offset = commit_offset;
    RemotingCommand::request(code::PULL_MESSAGE).with_header(&header)
}

pub fn update_offset(group: &str, topic: &str, queue_id: i32, offset: i64) -> RemotingCommand {
    RemotingCommand::request(code::UPDATE_CONSUMER_OFFSET).with_header(
        &UpdateConsumerOffsetRequestHeader {
            consumer_group: group.into(),
            topic: topic.into(),
            queue_id,
            commit_offset: offset,
        },
    )
}

pub fn query_offset(group: &str, topic: &str, queue_id: i32) -> RemotingCommand {
    RemotingCommand::request(code::QUERY_CONSUMER_OFFSET).with_header(
        &QueryConsumerOffsetRequestHeader {
            consumer_group: group.into(),
            topic: topic.into(),
            queue_id,
            set_zero_if_not_found: None,
        },
    )
}
