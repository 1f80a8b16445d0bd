//! The messages of a transaction, as Apache RocketMQ builds them: the half record a prepared
//! send is stored as (`TransactionalMessageBridge.parseHalfMessageInner`), the message a commit
//! puts in the real queue (`EndTransactionProcessor.endMessageTransaction`), the copy a check
//! stores (`renewHalfMessageInner`), the message a discard keeps
//! (`DefaultTransactionalMessageCheckListener.toMessageExtBrokerInner`), the op record
//! (`makeOpMessageInner`) and the body of CHECK_TRANSACTION_STATE (`sendCheckMessage`). Pure
//! functions of records and properties.

use crate::broker::control::topics::TRANS_CHECK_MAX_TIME_TOPIC;
use crate::protocol::message::record::{
    encode, find_properties, find_property, format_properties, parse_properties, property,
    sys_flag, Message, RecordError, RecordView, StoreFields, TransactionType,
};
use bytes::Bytes;
use ringmq_shards::schedule::property_name::{DELAY, REAL_QID, REAL_TOPIC};
use ringmq_shards::transaction::{
    op_body, origin_of, OP_REMOVE_TAG, PREPARED_QUEUE_OFFSET, TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC,
};
use std::net::SocketAddr;

/// `MessageConst` names of transactional messages.
pub mod property_name {
    /// `PROPERTY_TRANSACTION_PREPARED`: "true" on a prepared send.
    pub const TRANSACTION_PREPARED: &str = "TRAN_MSG";
    /// `PROPERTY_PRODUCER_GROUP`: the group a check goes to.
    pub const PRODUCER_GROUP: &str = "PGROUP";
    /// `PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS`: no check before this long after birth.
    pub const CHECK_IMMUNITY_TIME_IN_SECONDS: &str = "CHECK_IMMUNITY_TIME_IN_SECONDS";
    /// `PROPERTY_TRANSACTION_CHECK_TIMES`: checks made so far.
    pub const TRANSACTION_CHECK_TIMES: &str = "TRANSACTION_CHECK_TIMES";
    /// `TransactionalMessageUtil.TRANSACTION_ID`: the UNIQ_KEY, on the half record.
    pub const TRANSACTION_ID: &str = "__transactionId__";
}
use property_name::*;

/// What a single send is, for the transaction rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendKind {
    /// Stored in its queue as it came.
    Plain,
    /// Held as a half record until END_TRANSACTION (or the check-back) decides.
    Half,
    /// Sent already rolled back: never stored (Apache stores it outside every consume queue).
    RolledBack,
}

/// Apache's rule (`SendMessageProcessor`): `TRAN_MSG=true` makes a half message, unless it is
/// a consumer's retry copy asking for a delay. ringmq also holds a message whose sysFlag says
/// prepared without the property (Apache stores that one where no consumer reads it), so that
/// nothing undecided is ever delivered.
pub fn send_kind(sys_flag: i32, properties: &str, reconsume_times: i32) -> SendKind {
    let [prepared, delayed] = find_properties(properties, [TRANSACTION_PREPARED, DELAY]);
    let prepared = prepared.is_some_and(|flag| flag.eq_ignore_ascii_case("true"));
    let delayed = delayed
        .and_then(|level| level.parse::<i32>().ok())
        .is_some_and(|level| level > 0);
    match TransactionType::of(sys_flag) {
        _ if prepared && !(reconsume_times > 0 && delayed) => SendKind::Half,
        TransactionType::Prepared => SendKind::Half,
        TransactionType::Rollback => SendKind::RolledBack,
        TransactionType::NotType | TransactionType::Commit => SendKind::Plain,
    }
}

/// Why a record cannot be turned into the message a decision needs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransactionMessageError {
    #[error("half message has no valid {0} property")]
    MissingRealQueue(&'static str),
    #[error(transparent)]
    Record(#[from] RecordError),
}

/// Rewrites a prepared send into its half record: `REAL_TOPIC` / `REAL_QID` say where it
/// goes, `__transactionId__` is its UNIQ_KEY, the sysFlag's transaction bits are cleared, and
/// it is stored in the half topic's queue 0.
pub fn to_half(message: &mut Message) {
    let props = std::str::from_utf8(&message.properties).unwrap_or("");
    let mut pairs = parse_properties(props);
    if let Some(uniq) = find_property(props, property::UNIQ_KEY).filter(|u| !u.is_empty()) {
        set(&mut pairs, TRANSACTION_ID, uniq);
    }
    set(&mut pairs, REAL_TOPIC, &message.topic);
    set(&mut pairs, REAL_QID, &message.queue_id.to_string());
    message.properties = formatted(&pairs);
    message.sys_flag = TransactionType::NotType.apply(message.sys_flag);
    message.topic = TRANS_HALF_TOPIC.to_owned();
    message.queue_id = 0;
}

/// The origin of a half record: the half-queue offset of its transaction's first record.
pub fn origin(half: &RecordView) -> i64 {
    origin_of(half.queue_offset(), half.properties())
}

/// The real topic and queue a half record goes to.
pub fn real_queue(half: &RecordView) -> Result<(String, i32), TransactionMessageError> {
    let topic = half
        .property(REAL_TOPIC)
        .filter(|t| !t.is_empty())
        .ok_or(TransactionMessageError::MissingRealQueue(REAL_TOPIC))?;
    let queue_id = half
        .property(REAL_QID)
        .and_then(|q| q.parse::<i32>().ok())
        .filter(|q| *q >= 0)
        .ok_or(TransactionMessageError::MissingRealQueue(REAL_QID))?;
    Ok((topic.to_owned(), queue_id))
}

/// The message a commit stores in the real queue: the half's body, flag, born time and host,
/// reconsume times and properties without `REAL_TOPIC`, `REAL_QID`, `TRAN_MSG` (and ringmq's
/// `TRAN_PREPARED_QUEUE_OFFSET` of a checked copy), sysFlag COMMIT, and the half's physical
/// offset as the prepared-transaction offset. Its UNIQ_KEY, the producer's msgId, is kept.
pub fn committed(half: &RecordView, half_offset: i64) -> Result<Message, TransactionMessageError> {
    let (topic, queue_id) = real_queue(half)?;
    let dropped = [
        REAL_TOPIC,
        REAL_QID,
        TRANSACTION_PREPARED,
        PREPARED_QUEUE_OFFSET,
    ];
    let pairs: Vec<(String, String)> = parse_properties(half.properties())
        .into_iter()
        .filter(|(name, _)| !dropped.contains(&name.as_str()))
        .collect();
    Ok(Message {
        topic,
        queue_id,
        sys_flag: TransactionType::Commit.apply(half.sys_flag()),
        prepared_transaction_offset: half_offset,
        properties: formatted(&pairs),
        ..same_content(half)
    })
}

/// The copy of a half record a check stores (and names in its CHECK_TRANSACTION_STATE):
/// `TRANSACTION_CHECK_TIMES` is `check_times`, `TRAN_PREPARED_QUEUE_OFFSET` the transaction's
/// origin. Apache's copy drops the flag and reconsume times; ringmq keeps them, so a message
/// committed after a check is the message that was sent.
pub fn renewed(half: &RecordView, check_times: i32, origin: i64) -> Message {
    let mut pairs = parse_properties(half.properties());
    set(
        &mut pairs,
        TRANSACTION_CHECK_TIMES,
        &check_times.to_string(),
    );
    set(&mut pairs, PREPARED_QUEUE_OFFSET, &origin.to_string());
    Message {
        topic: TRANS_HALF_TOPIC.to_owned(),
        queue_id: 0,
        properties: formatted(&pairs),
        ..same_content(half)
    }
}

/// What a half checked too often becomes: the same message in `TRANS_CHECK_MAX_TIME_TOPIC`
/// queue 0, where no consumer of the real topic sees it.
pub fn discarded(half: &RecordView) -> Message {
    Message {
        topic: TRANS_CHECK_MAX_TIME_TOPIC.to_owned(),
        queue_id: 0,
        ..same_content(half)
    }
}

/// The op record that resolves the transaction of `origin`; `uniq_key` is its own message id
/// (Apache gives op records one too).
pub fn op_record(origin: i64, store_host: SocketAddr, now_ms: i64, uniq_key: &str) -> Message {
    let pairs = [
        (property::TAGS, OP_REMOVE_TAG),
        (property::UNIQ_KEY, uniq_key),
    ];
    Message {
        topic: TRANS_OP_HALF_TOPIC.to_owned(),
        queue_id: 0,
        flag: 0,
        sys_flag: 0,
        born_timestamp_ms: now_ms,
        born_host: store_host,
        reconsume_times: 0,
        prepared_transaction_offset: 0,
        body: Bytes::from(op_body(origin)),
        properties: Bytes::from(format_properties(pairs)),
    }
}

/// The body of CHECK_TRANSACTION_STATE for a stored copy: its record as stored, but in its
/// real topic and queue (Apache's `MessageDecoder.encode` of the copy after `sendCheckMessage`
/// set them), which the client decodes into the MessageExt its listener checks.
pub fn check_body(copy: &Message, stored: StoreFields) -> Result<Bytes, TransactionMessageError> {
    let props = std::str::from_utf8(&copy.properties).unwrap_or("");
    let real = |name: &'static str| {
        find_property(props, name).ok_or(TransactionMessageError::MissingRealQueue(name))
    };
    let topic = real(REAL_TOPIC)?.to_owned();
    let queue_id = real(REAL_QID)?
        .parse::<i32>()
        .map_err(|_| TransactionMessageError::MissingRealQueue(REAL_QID))?;
    let in_real_queue = Message {
        topic,
        queue_id,
        ..copy.clone()
    };
    Ok(encode(&in_real_queue, &stored)?)
}

/// How long after birth a check waits: the message's `CHECK_IMMUNITY_TIME_IN_SECONDS` (in
/// ms), else `transactionTimeOut` (the check service's rule; a value that does not parse is
/// the timeout too).
pub fn check_immunity_ms(properties: &str, timeout_ms: i64) -> i64 {
    find_property(properties, CHECK_IMMUNITY_TIME_IN_SECONDS)
        .and_then(|seconds| seconds.trim().parse::<i64>().ok())
        .map_or(timeout_ms, |seconds| seconds.saturating_mul(1000))
}

/// Apache 5's rule for an END_TRANSACTION that is not a check's answer
/// (`rejectCommitOrRollback`): with `CHECK_IMMUNITY_TIME_IN_SECONDS` set, a decision arriving
/// later than that after birth (at least `transactionTimeOut`) is refused and left to the
/// check-back. `None` when the message has no such property.
pub fn end_deadline_ms(properties: &str, timeout_ms: i64) -> Option<i64> {
    let seconds = find_property(properties, CHECK_IMMUNITY_TIME_IN_SECONDS)?;
    if seconds.is_empty() {
        return None;
    }
    let immunity = seconds
        .trim()
        .parse::<i64>()
        .map_or(0, |s| s.saturating_mul(1000));
    Some(immunity.max(timeout_ms))
}

/// The checks a half record has had: its `TRANSACTION_CHECK_TIMES`, `None` before the first.
pub fn check_times(properties: &str) -> Option<i32> {
    find_property(properties, TRANSACTION_CHECK_TIMES).and_then(|n| n.trim().parse().ok())
}

/// The producer group a half record's checks go to.
pub fn producer_group(properties: &str) -> Option<&str> {
    find_property(properties, PRODUCER_GROUP).filter(|g| !g.is_empty())
}

/// The record's content, for the messages made from it (topic and queue still the record's).
fn same_content(record: &RecordView) -> Message {
    Message {
        topic: record.topic().to_owned(),
        queue_id: record.queue_id(),
        flag: record.flag(),
        sys_flag: record.sys_flag() & !(sys_flag::BORNHOST_V6 | sys_flag::STOREHOST_V6),
        born_timestamp_ms: record.born_timestamp_ms(),
        born_host: record.born_host(),
        reconsume_times: record.reconsume_times(),
        prepared_transaction_offset: 0,
        body: record.body(),
        properties: Bytes::copy_from_slice(record.properties().as_bytes()),
    }
}

fn set(pairs: &mut Vec<(String, String)>, name: &str, value: &str) {
    match pairs.iter_mut().find(|(n, _)| n == name) {
        Some(pair) => pair.1 = value.to_owned(),
        None => pairs.push((name.to_owned(), value.to_owned())),
    }
}

fn formatted(pairs: &[(String, String)]) -> Bytes {
    Bytes::from(format_properties(
        pairs.iter().map(|(n, v)| (n.as_str(), v.as_str())),
    ))
}

#[cfg(test)]
#[path = "message_tests.rs"]
mod tests;
