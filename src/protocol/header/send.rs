//! Headers of message sends (REMOTING.md §4.2): SEND_MESSAGE (long keys), SEND_MESSAGE_V2 and
//! SEND_BATCH_MESSAGE (one-letter keys), the send response, and request/reply.
//!
//! The send headers' texts are [`Text`]s: a request's are slices of its frame and a
//! response's are inline or static, so the hottest request costs no allocation per field.

use super::{header, CommandHeader, HeaderError};
use crate::protocol::codes::request;
use crate::protocol::command::RemotingCommand;
use crate::protocol::command::Text;

header! {
    /// SEND_MESSAGE request (`SendMessageRequestHeader`). Single or batch is decided by
    /// `batch`, not by the request code.
    pub struct SendMessageRequestHeader /
    /// SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE / SEND_REPLY_MESSAGE_V2 request
    /// (`SendMessageRequestHeaderV2`): the same fields under the keys `a`..`n`.
    SendMessageRequestHeaderV2 {
        req producer_group: Text = "producerGroup" / "a",
        req topic: Text = "topic" / "b",
        /// Template for auto-creating `topic`, normally `TBW102`.
        req default_topic: Text = "defaultTopic" / "c",
        req default_topic_queue_nums: i32 = "defaultTopicQueueNums" / "d",
        /// Negative: the broker picks a queue.
        req queue_id: i32 = "queueId" / "e",
        /// Message sysFlag bits (compression, transaction type).
        req sys_flag: i32 = "sysFlag" / "f",
        req born_timestamp: i64 = "bornTimestamp" / "g",
        /// The user's flag, stored as is.
        req flag: i32 = "flag" / "h",
        /// The properties string (`name 0x01 value 0x02`…).
        opt properties: Text = "properties" / "i",
        opt reconsume_times: i32 = "reconsumeTimes" / "j",
        opt unit_mode: bool = "unitMode" / "k",
        /// Only for `%RETRY%` topics.
        opt max_reconsume_times: i32 = "maxReconsumeTimes" / "l",
        /// `true`: the body is a batch (`MessageDecoder.encodeMessages`).
        opt batch: bool = "batch" / "m",
        /// The broker name the client believes it is talking to (`bname` in long form).
        opt broker_name: Text = "bname" / "n",
    }
}

impl SendMessageRequestHeader {
    /// Reads the send header under the keys the request code implies: one-letter keys for
    /// SEND_MESSAGE_V2, SEND_BATCH_MESSAGE and SEND_REPLY_MESSAGE_V2, long keys otherwise (as the
    /// Java broker's `parseRequestHeader` does).
    pub fn decode_from(cmd: &RemotingCommand) -> Result<Self, HeaderError> {
        match cmd.code {
            request::SEND_MESSAGE_V2
            | request::SEND_BATCH_MESSAGE
            | request::SEND_REPLY_MESSAGE_V2 => {
                SendMessageRequestHeaderV2::decode(&cmd.ext_fields).map(|v2| v2.0)
            }
            _ => Self::decode(&cmd.ext_fields),
        }
    }
}

header! {
    /// Send response (`SendMessageResponseHeader`), plus the two keys the Java broker adds to
    /// every send response. The Java client reads `msgId`/`queueId`/`queueOffset` unconditionally.
    pub struct SendMessageResponseHeader {
        /// The offsetMsgId (store host + commit-log offset); for a batch, all of them joined by `,`.
        req msg_id: Text = "msgId",
        req queue_id: i32 = "queueId",
        /// Queue offset of the (first) message.
        req queue_offset: i64 = "queueOffset",
        /// The message's UNIQ_KEY.
        opt transaction_id: Text = "transactionId",
        opt batch_uniq_id: Text = "batchUniqId",
        opt recall_handle: Text = "recallHandle",
        /// The broker's region, `DefaultRegion` by default.
        opt msg_region: Text = "MSG_REGION",
        /// `"true"`/`"false"`: whether the broker traces messages.
        opt trace_on: Text = "TRACE_ON",
    }
}

header! {
    /// PUSH_REPLY_MESSAGE_TO_CLIENT request (`ReplyMessageRequestHeader`), broker → requester.
    pub struct ReplyMessageRequestHeader {
        req producer_group: String = "producerGroup",
        req topic: String = "topic",
        req default_topic: String = "defaultTopic",
        req default_topic_queue_nums: i32 = "defaultTopicQueueNums",
        req queue_id: i32 = "queueId",
        req sys_flag: i32 = "sysFlag",
        req born_timestamp: i64 = "bornTimestamp",
        req flag: i32 = "flag",
        opt properties: String = "properties",
        opt reconsume_times: i32 = "reconsumeTimes",
        def unit_mode: bool = "unitMode",
        req born_host: String = "bornHost",
        req store_host: String = "storeHost",
        req store_timestamp: i64 = "storeTimestamp",
    }
}
