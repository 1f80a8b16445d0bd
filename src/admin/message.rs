//! `queryMsgByKey` (QUERY_MESSAGE to every broker group of the topic) and `queryMsgById`
//! (VIEW_MESSAGE_BY_ID at the broker an offsetMsgId names, else a UNIQ_KEY query).

use super::format::human_millis;
use super::rpc::{self, broker_request, select_broker_addr};
use super::{AdminError, NamesrvArg};
use crate::client::REQUEST_TIMEOUT_DEFAULT;
use crate::protocol::codes::request;
use crate::protocol::command::RemotingCommand;
use crate::protocol::header::{QueryMessageRequestHeader, ViewMessageRequestHeader};
use crate::protocol::message::record::{
    self, properties_iter, property, CompressionType, RecordView,
};
use crate::protocol::message::{split_records, OffsetMsgId};
use miniz_oxide::inflate::decompress_to_vec_zlib_with_limit;
use std::net::SocketAddr;

/// mqadmin's `-m` default: at most this many messages per broker.
pub const QUERY_MAX_NUM_DEFAULT: i32 = 64;
/// `MQAdminImpl.queryMessageByUniqKey` asks each broker for at most this many candidates.
const UNIQ_KEY_MAX_NUM: i32 = 32;
/// ... stored within this many milliseconds before now (3 days).
const UNIQ_KEY_LOOKBACK_MS: i64 = 3 * 24 * 60 * 60 * 1000;
/// mqadmin waits three times the usual timeout for index queries.
const QUERY_TIMEOUT_FACTOR: u32 = 3;
/// The extFields key telling the broker `key` is a UNIQ_KEY (`MixAll.UNIQUE_MSG_QUERY_FLAG`).
const UNIQUE_KEY_QUERY_FLAG: &str = "_UNIQUE_KEY_QUERY";
/// `MessageConst.KEY_SEPARATOR`: a message's KEYS property holds keys separated by spaces.
const KEY_SEPARATOR: char = ' ';

/// One lookup of the message index.
pub struct KeyQuery<'a> {
    pub topic: &'a str,
    pub key: &'a str,
    pub max_num: i32,
    pub begin_timestamp: i64,
    pub end_timestamp: i64,
    /// `key` is a UNIQ_KEY (message id) rather than one of the KEYS.
    pub unique: bool,
}

/// `MQAdminImpl.queryMessage`: asks every broker group of the topic, keeps the records that
/// really match (the index is a hash, so collisions come back too). Brokers that fail are
/// skipped, as mqadmin does; finding nothing anywhere is an error (the last broker's failure,
/// if one failed).
pub async fn query_by_key(
    namesrv: &NamesrvArg,
    query: &KeyQuery<'_>,
) -> Result<Vec<RecordView>, AdminError> {
    let route = rpc::topic_route(namesrv, query.topic).await?;
    let header = QueryMessageRequestHeader {
        topic: query.topic.to_owned(),
        key: query.key.to_owned(),
        max_num: query.max_num,
        begin_timestamp: query.begin_timestamp,
        end_timestamp: query.end_timestamp,
    };
    let mut found = Vec::new();
    let mut failure = None;
    for broker in &route.broker_datas {
        let Some(addr) = select_broker_addr(broker) else {
            continue;
        };
        let mut req = RemotingCommand::request(request::QUERY_MESSAGE).with_header(&header);
        req.ext_fields
            .insert(UNIQUE_KEY_QUERY_FLAG.to_owned(), query.unique.to_string());
        let timeout = REQUEST_TIMEOUT_DEFAULT * QUERY_TIMEOUT_FACTOR;
        let resp = match broker_request(addr, req, timeout).await {
            Ok(resp) => resp,
            Err(err) => {
                failure = Some(err);
                continue;
            }
        };
        found.extend(
            split_records(resp.body)
                .map_while(Result::ok)
                .filter(|record| matches_query(record, query)),
        );
    }
    if found.is_empty() {
        return Err(failure.unwrap_or_else(|| {
            AdminError::NotFound("query message by key finished, but no message.".to_owned())
        }));
    }
    Ok(found)
}

fn matches_query(record: &RecordView, query: &KeyQuery<'_>) -> bool {
    if query.unique {
        return message_id(record) == query.key;
    }
    record.topic() == query.topic
        && record
            .property(property::KEYS)
            .is_some_and(|keys| keys.split(KEY_SEPARATOR).any(|k| k == query.key))
}

/// The id a Java client shows for a message (`MessageClientExt.getMsgId`): its UNIQ_KEY,
/// else its offsetMsgId.
pub fn message_id(record: &RecordView) -> String {
    record
        .property(property::UNIQ_KEY)
        .map_or_else(|| offset_msg_id(record).to_string(), str::to_owned)
}

fn offset_msg_id(record: &RecordView) -> OffsetMsgId {
    OffsetMsgId {
        store_host: record.store_host(),
        commit_log_offset: record.physical_offset(),
    }
}

/// `QueryMsgByKeySubCommand`'s layout.
pub fn render_key_query(records: &[RecordView]) -> String {
    let mut out = format!("{:<50} {:>4} {:>40}\n", "#Message ID", "#QID", "#Offset");
    for record in records {
        out += &format!(
            "{:<50} {:>4} {:>40}\n",
            message_id(record),
            record.queue_id(),
            record.queue_offset()
        );
    }
    out
}

/// `queryMsgById` for one id. An id that parses as an offsetMsgId is looked up at the broker
/// it names, but only when that is a registered broker: a 32-digit UNIQ_KEY also parses as
/// one and would name an arbitrary address. Anything else is a UNIQ_KEY, looked up in
/// `topic`'s index as mqadmin does.
pub async fn query_by_id(
    namesrv: &NamesrvArg,
    topic: Option<&str>,
    id: &str,
    now_ms: i64,
) -> Result<RecordView, AdminError> {
    if let Ok(offset_id) = OffsetMsgId::parse(id) {
        let addr = offset_id.store_host.to_string();
        let info = rpc::cluster_info(namesrv).await?;
        let known = info
            .broker_addr_table
            .values()
            .any(|b| b.broker_addrs.values().any(|a| *a == addr));
        if known {
            let header = ViewMessageRequestHeader {
                topic: topic.map(str::to_owned),
                offset: offset_id.commit_log_offset,
            };
            let req = RemotingCommand::request(request::VIEW_MESSAGE_BY_ID).with_header(&header);
            let resp = broker_request(&addr, req, REQUEST_TIMEOUT_DEFAULT).await?;
            return split_records(resp.body)
                .next()
                .ok_or_else(|| AdminError::NotFound(format!("no message at {id}")))?
                .map_err(AdminError::from);
        }
    }
    let topic = topic.ok_or(AdminError::Usage(
        "the id is not the offsetMsgId of a registered broker; give -t topic to look it up as a message id (UNIQ_KEY)",
    ))?;
    let query = KeyQuery {
        topic,
        key: id,
        max_num: UNIQ_KEY_MAX_NUM,
        begin_timestamp: now_ms - UNIQ_KEY_LOOKBACK_MS,
        end_timestamp: i64::MAX,
        unique: true,
    };
    let mut found = query_by_key(namesrv, &query).await?;
    Ok(found.swap_remove(0))
}

/// The body as text: inflated first when the producer compressed it with zlib (as the Java
/// client does above 4 KiB); other compressions are described, not decoded.
fn body_text(record: &RecordView) -> String {
    let body = record.body();
    match CompressionType::of(record.sys_flag()) {
        None => String::from_utf8_lossy(&body).into_owned(),
        Some(CompressionType::Zlib) => {
            // A producer compresses at most one maximal body, so it inflates to at most that.
            match decompress_to_vec_zlib_with_limit(&body, record::BODY_BYTES_MAX) {
                Ok(plain) => String::from_utf8_lossy(&plain).into_owned(),
                Err(_) => format!(
                    "(zlib-compressed body of {} bytes that does not inflate)",
                    body.len()
                ),
            }
        }
        Some(other) => format!(
            "({other:?}-compressed body of {} bytes, not shown)",
            body.len()
        ),
    }
}

/// `host:port` as Java's `RemotingHelper.parseSocketAddressAddr` prints it (no brackets).
fn host_text(addr: SocketAddr) -> String {
    format!("{}:{}", addr.ip(), addr.port())
}

/// `QueryMsgByIdSubCommand.printMsg`'s layout; the body is printed (as with mqadmin's
/// `-f UTF-8`) instead of being written to a file under /tmp.
pub fn render_message(record: &RecordView) -> String {
    let bracketed = |name| format!("[{}]", record.property(name).unwrap_or("null"));
    let properties: Vec<String> = properties_iter(record.properties())
        .map(|(name, value)| format!("{name}={value}"))
        .collect();
    let lines = [
        ("OffsetID:", offset_msg_id(record).to_string()),
        ("Topic:", record.topic().to_owned()),
        ("Tags:", bracketed(property::TAGS)),
        ("Keys:", bracketed(property::KEYS)),
        ("Queue ID:", record.queue_id().to_string()),
        ("Queue Offset:", record.queue_offset().to_string()),
        ("CommitLog Offset:", record.physical_offset().to_string()),
        ("Reconsume Times:", record.reconsume_times().to_string()),
        ("Born Timestamp:", human_millis(record.born_timestamp_ms())),
        (
            "Store Timestamp:",
            human_millis(record.store_timestamp_ms()),
        ),
        ("Born Host:", host_text(record.born_host())),
        ("Store Host:", host_text(record.store_host())),
        ("System Flag:", record.sys_flag().to_string()),
        ("Properties:", format!("{{{}}}", properties.join(", "))),
        ("Message Body:", body_text(record)),
    ];
    lines
        .iter()
        .map(|(label, value)| format!("{label:<20} {value}\n"))
        .collect()
}
