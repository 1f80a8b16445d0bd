use super::*;
use crate::protocol::message::record::format_properties;

fn host(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// A prepared send as the Java client makes it.
fn prepared() -> Message {
    let props = format_properties([
        ("TAGS", "TagA"),
        ("UNIQ_KEY", "C0A8000100002A9F0000000000000001"),
        ("TRAN_MSG", "true"),
        ("PGROUP", "P_group"),
        ("seq", "4"),
    ]);
    Message {
        topic: "Orders".into(),
        queue_id: 3,
        flag: 7,
        sys_flag: sys_flag::TRANSACTION_PREPARED | sys_flag::COMPRESSED,
        born_timestamp_ms: 1_000,
        born_host: host(40000),
        reconsume_times: 0,
        prepared_transaction_offset: 0,
        body: Bytes::from_static(b"body"),
        properties: props.into(),
    }
}

/// `message` as stored at queue offset `queue_offset`, physical offset `physical`.
fn stored(message: &Message, queue_offset: i64, physical: i64) -> RecordView {
    let fields = StoreFields {
        queue_offset,
        physical_offset: physical,
        store_timestamp_ms: 2_000,
        store_host: host(10911),
    };
    RecordView::parse(encode(message, &fields).unwrap()).unwrap()
}

fn props_of(message: &Message) -> String {
    String::from_utf8(message.properties.to_vec()).unwrap()
}

#[test]
fn tran_msg_or_a_prepared_sys_flag_makes_a_half_message() {
    let tran = format_properties([("TRAN_MSG", "True")]);
    assert_eq!(send_kind(0, &tran, 0), SendKind::Half);
    assert_eq!(
        send_kind(sys_flag::TRANSACTION_PREPARED, "", 0),
        SendKind::Half
    );
    assert_eq!(
        send_kind(sys_flag::TRANSACTION_ROLLBACK, "", 0),
        SendKind::RolledBack
    );
    assert_eq!(
        send_kind(sys_flag::TRANSACTION_COMMIT, "", 0),
        SendKind::Plain
    );
    assert_eq!(send_kind(0, "", 0), SendKind::Plain);
    let no = format_properties([("TRAN_MSG", "false")]);
    assert_eq!(send_kind(0, &no, 0), SendKind::Plain);
    // Apache's exception: a consumer's retry copy asking for a delay is stored as it is.
    let retry = format_properties([("TRAN_MSG", "true"), ("DELAY", "3")]);
    assert_eq!(send_kind(0, &retry, 1), SendKind::Plain);
    assert_eq!(send_kind(0, &retry, 0), SendKind::Half);
}

#[test]
fn a_half_record_names_its_real_queue_and_clears_the_transaction_bits() {
    let mut half = prepared();
    to_half(&mut half);
    assert_eq!((half.topic.as_str(), half.queue_id), (TRANS_HALF_TOPIC, 0));
    assert_eq!(half.sys_flag, sys_flag::COMPRESSED);
    let props = props_of(&half);
    assert_eq!(find_property(&props, REAL_TOPIC), Some("Orders"));
    assert_eq!(find_property(&props, REAL_QID), Some("3"));
    assert_eq!(
        find_property(&props, TRANSACTION_ID),
        Some("C0A8000100002A9F0000000000000001")
    );
    assert_eq!(find_property(&props, TRANSACTION_PREPARED), Some("true"));
    let view = stored(&half, 5, 777);
    assert_eq!(origin(&view), 5, "a first half is its own origin");
    assert_eq!(real_queue(&view).unwrap(), ("Orders".to_owned(), 3));
}

#[test]
fn a_commit_stores_the_sent_message_in_its_real_queue_with_the_same_id() {
    let mut half = prepared();
    to_half(&mut half);
    let view = stored(&half, 5, 777);
    let commit = committed(&view, 777).unwrap();
    assert_eq!((commit.topic.as_str(), commit.queue_id), ("Orders", 3));
    assert_eq!(
        commit.sys_flag,
        sys_flag::TRANSACTION_COMMIT | sys_flag::COMPRESSED
    );
    assert_eq!(commit.prepared_transaction_offset, 777);
    assert_eq!((commit.flag, commit.born_timestamp_ms), (7, 1_000));
    assert_eq!(commit.born_host, host(40000));
    assert_eq!(commit.body, Bytes::from_static(b"body"));
    let props = props_of(&commit);
    for gone in [
        REAL_TOPIC,
        REAL_QID,
        TRANSACTION_PREPARED,
        PREPARED_QUEUE_OFFSET,
    ] {
        assert_eq!(find_property(&props, gone), None, "{gone}");
    }
    for (kept, value) in [
        ("UNIQ_KEY", "C0A8000100002A9F0000000000000001"),
        ("TAGS", "TagA"),
        ("PGROUP", "P_group"),
        ("seq", "4"),
    ] {
        assert_eq!(find_property(&props, kept), Some(value), "{kept}");
    }
    // A half without its real queue cannot be committed anywhere.
    let no_queue = Message {
        properties: format_properties([("UNIQ_KEY", "u")]).into(),
        ..half
    };
    assert!(committed(&stored(&no_queue, 0, 1), 1).is_err());
}

#[test]
fn a_checked_copy_counts_its_checks_and_keeps_its_origin() {
    let mut half = prepared();
    to_half(&mut half);
    let first = stored(&half, 5, 777);
    assert_eq!(check_times(first.properties()), None);
    let copy = renewed(&first, 1, origin(&first));
    let second = stored(&copy, 9, 900);
    assert_eq!(check_times(second.properties()), Some(1));
    assert_eq!(origin(&second), 5);
    assert_eq!((second.flag(), second.reconsume_times()), (7, 0));
    let again = renewed(&second, 2, origin(&second));
    let third = stored(&again, 12, 1000);
    assert_eq!(
        (check_times(third.properties()), origin(&third)),
        (Some(2), 5)
    );
    // The commit of a copy is the message that was sent.
    let commit = committed(&third, 1000).unwrap();
    assert_eq!(
        find_property(&props_of(&commit), PREPARED_QUEUE_OFFSET),
        None
    );
    assert_eq!(find_property(&props_of(&commit), "seq"), Some("4"));
}

#[test]
fn a_check_body_is_the_copy_in_its_real_queue_at_the_copys_offsets() {
    let mut half = prepared();
    to_half(&mut half);
    let copy = renewed(&stored(&half, 5, 777), 1, 5);
    let fields = StoreFields {
        queue_offset: 9,
        physical_offset: 900,
        store_timestamp_ms: 3_000,
        store_host: host(10911),
    };
    let body = check_body(&copy, fields).unwrap();
    let view = RecordView::parse(body).unwrap();
    assert_eq!((view.topic(), view.queue_id()), ("Orders", 3));
    assert_eq!((view.queue_offset(), view.physical_offset()), (9, 900));
    assert_eq!(view.property("seq"), Some("4"));
    assert_eq!(
        view.property("UNIQ_KEY"),
        Some("C0A8000100002A9F0000000000000001")
    );
}

#[test]
fn a_discarded_half_keeps_its_content_outside_the_real_topic() {
    let mut half = prepared();
    to_half(&mut half);
    let gone = discarded(&stored(&half, 5, 777));
    assert_eq!(
        (gone.topic.as_str(), gone.queue_id),
        (TRANS_CHECK_MAX_TIME_TOPIC, 0)
    );
    assert_eq!(find_property(&props_of(&gone), REAL_TOPIC), Some("Orders"));
    assert_eq!(gone.body, Bytes::from_static(b"body"));
}

#[test]
fn an_op_record_resolves_one_origin() {
    let op = op_record(42, host(10911), 5_000, "U");
    assert_eq!((op.topic.as_str(), op.queue_id), (TRANS_OP_HALF_TOPIC, 0));
    assert_eq!(&op.body[..], b"42,");
    let view = stored(&op, 0, 10);
    assert_eq!(view.property("TAGS"), Some("d"));
    assert_eq!(
        ringmq_shards::transaction::tags_code(view.topic(), 0, view.properties(), &view.body()),
        Some(42)
    );
}

#[test]
fn immunity_is_the_property_or_the_timeout() {
    let none = format_properties([("seq", "1")]);
    assert_eq!(check_immunity_ms(&none, 6_000), 6_000);
    let ten = format_properties([(CHECK_IMMUNITY_TIME_IN_SECONDS, "10")]);
    assert_eq!(check_immunity_ms(&ten, 6_000), 10_000);
    let two = format_properties([(CHECK_IMMUNITY_TIME_IN_SECONDS, "2")]);
    assert_eq!(
        check_immunity_ms(&two, 6_000),
        2_000,
        "the check service does not clamp"
    );
    let bad = format_properties([(CHECK_IMMUNITY_TIME_IN_SECONDS, "x")]);
    assert_eq!(check_immunity_ms(&bad, 6_000), 6_000);
    // END_TRANSACTION's deadline (Apache 5) is at least the timeout.
    assert_eq!(end_deadline_ms(&none, 6_000), None);
    assert_eq!(end_deadline_ms(&ten, 6_000), Some(10_000));
    assert_eq!(end_deadline_ms(&two, 6_000), Some(6_000));
    assert_eq!(end_deadline_ms(&bad, 6_000), Some(6_000));
}
