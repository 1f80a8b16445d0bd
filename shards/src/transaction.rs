//! Transactional messages, the part the store knows: which consume-queue tagsCode the records
//! of the two transaction queues carry, so that the broker can follow every shard's undecided
//! transactions from its consume queues alone, at start and while running, without reading a
//! record of the log.
//!
//! - A **half record** (`RMQ_SYS_TRANS_HALF_TOPIC`, queue 0) is a prepared message held until
//!   its producer decides. The check-back stores it again (a newer copy, same transaction) each
//!   time it asks the producer; a copy carries the half-queue offset of the transaction's first
//!   record in `TRAN_PREPARED_QUEUE_OFFSET` (the property Apache RocketMQ gives the copies it
//!   puts back, with this meaning). Its tagsCode is that offset, the transaction's **origin**;
//!   the first record's origin is its own queue offset.
//! - An **op record** (`RMQ_SYS_TRANS_OP_HALF_TOPIC`, queue 0) says a transaction is resolved
//!   (committed, rolled back or discarded after too many checks). Its body is Apache's: the
//!   half offset followed by a comma (`"17,"`), tag `d`; ringmq writes one offset per record,
//!   the origin. Its tagsCode is that origin, or -1 when the body names none.
//!
//! Both rules hold at append and again at recovery (from the same properties and body), so a
//! consume-queue entry rebuilt from the log equals the one made at append.

use crate::record::find_property;

/// The topic of half records: prepared transactional messages, invisible to consumers.
pub const TRANS_HALF_TOPIC: &str = "RMQ_SYS_TRANS_HALF_TOPIC";
/// The topic of op records: which transactions are resolved.
pub const TRANS_OP_HALF_TOPIC: &str = "RMQ_SYS_TRANS_OP_HALF_TOPIC";
/// `TransactionalMessageUtil.REMOVE_TAG`: the tag of an op record.
pub const OP_REMOVE_TAG: &str = "d";
/// `TransactionalMessageUtil.OFFSET_SEPARATOR`, after each offset of an op record's body.
pub const OP_OFFSET_SEPARATOR: char = ',';
/// `MessageConst.PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET`: on a copy of a half record, the
/// half-queue offset of the transaction's first record.
pub const PREPARED_QUEUE_OFFSET: &str = "TRAN_PREPARED_QUEUE_OFFSET";
/// The tagsCode of an op record whose body names no offset: no transaction.
pub const NO_ORIGIN: i64 = -1;

/// The origin of the half record stored at `queue_offset` with `properties`: its
/// `TRAN_PREPARED_QUEUE_OFFSET` when that names an earlier record, else its own offset.
pub fn origin_of(queue_offset: i64, properties: &str) -> i64 {
    find_property(properties, PREPARED_QUEUE_OFFSET)
        .and_then(|offset| offset.parse::<i64>().ok())
        .filter(|origin| (0..=queue_offset).contains(origin))
        .unwrap_or(queue_offset)
}

/// The body of the op record resolving the transaction of `origin`.
pub fn op_body(origin: i64) -> Vec<u8> {
    format!("{origin}{OP_OFFSET_SEPARATOR}").into_bytes()
}

/// The first offset an op record's body names, if it names one.
pub fn parse_op_body(body: &[u8]) -> Option<i64> {
    let text = std::str::from_utf8(body).ok()?;
    let first = text.split(OP_OFFSET_SEPARATOR).next()?;
    first
        .trim()
        .parse::<i64>()
        .ok()
        .filter(|origin| *origin >= 0)
}

/// The consume-queue tagsCode of a record of `topic` stored at `queue_offset`, for the two
/// transaction topics (`None` for every other topic: its tags decide).
pub fn tags_code(topic: &str, queue_offset: i64, properties: &str, body: &[u8]) -> Option<i64> {
    match topic {
        TRANS_HALF_TOPIC => Some(origin_of(queue_offset, properties)),
        TRANS_OP_HALF_TOPIC => Some(parse_op_body(body).unwrap_or(NO_ORIGIN)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::format_properties;

    #[test]
    fn a_first_half_is_its_own_origin_and_a_copy_names_its_first() {
        let none = format_properties([("UNIQ_KEY", "u")]);
        assert_eq!(tags_code(TRANS_HALF_TOPIC, 7, &none, b""), Some(7));
        let copy = format_properties([(PREPARED_QUEUE_OFFSET, "3")]);
        assert_eq!(tags_code(TRANS_HALF_TOPIC, 9, &copy, b""), Some(3));
        // A value naming no earlier record is not trusted: the record is its own origin.
        for bad in ["x", "-1", "10"] {
            let props = format_properties([(PREPARED_QUEUE_OFFSET, bad)]);
            assert_eq!(origin_of(9, &props), 9, "{bad}");
        }
    }

    #[test]
    fn an_op_record_names_the_origin_it_resolves() {
        assert_eq!(op_body(17), b"17,");
        assert_eq!(parse_op_body(&op_body(17)), Some(17));
        assert_eq!(parse_op_body(b"4,5,6,"), Some(4), "Apache's batched body");
        assert_eq!(tags_code(TRANS_OP_HALF_TOPIC, 0, "", b"12,"), Some(12));
        assert_eq!(
            tags_code(TRANS_OP_HALF_TOPIC, 0, "", b"junk"),
            Some(NO_ORIGIN)
        );
        assert_eq!(
            tags_code(TRANS_OP_HALF_TOPIC, 0, "", b"-3,"),
            Some(NO_ORIGIN)
        );
        assert_eq!(tags_code("TopicTest", 0, "", b"12,"), None);
    }
}
