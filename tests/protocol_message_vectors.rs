//! Message formats against VECTORS.md V4 (stored record), V5 (batch body), V6 (tag hash and
//! ConsumeQueue entry) and V10 (message ids).

mod protocol_support;

use bytes::{Bytes, BytesMut};
use protocol_support::vector_bytes;
use ringmq::protocol::message::record::{self, RecordView};
use ringmq::protocol::message::*;

fn v4() -> Bytes {
    Bytes::from(vector_bytes("v4_stored_record.hex"))
}

#[test]
fn v4_record_decodes_and_reencodes_through_the_shared_codec() {
    let view = RecordView::parse(v4()).unwrap();
    assert_eq!(view.topic(), "T");
    assert_eq!(&view.body()[..], b"hello");
    assert_eq!(view.body_crc(), 0x3610_A686);
    assert!(view.body_crc_ok());
    assert_eq!(view.property("TAGS"), Some("TagA"));
    assert_eq!(view.property("KEYS"), Some("k1"));
    assert_eq!(view.store_host(), "127.0.0.1:10911".parse().unwrap());

    // Re-encoding what the view reads gives back every byte.
    let (message, store) = record_parts(&view);
    assert_eq!(record::encode(&message, &store).unwrap(), v4());
}

#[test]
fn v4_offset_msg_id_is_derived_from_store_host_and_offset() {
    let view = RecordView::parse(v4()).unwrap();
    let id = OffsetMsgId {
        store_host: view.store_host(),
        commit_log_offset: view.physical_offset(),
    };
    assert_eq!(id.to_string(), "7F00000100002A9F0000000000000000");
}

#[test]
fn pull_body_splits_into_records_and_stops_at_the_first_bad_one() {
    let mut body = BytesMut::new();
    body.extend_from_slice(&v4());
    body.extend_from_slice(&v4());
    let records: Vec<_> = split_records(body.clone().freeze()).collect();
    assert_eq!(records.len(), 2);
    assert!(records.iter().all(|r| r.as_ref().unwrap().topic() == "T"));

    body.extend_from_slice(&v4()[..50]); // a torn third record
    body.extend_from_slice(&v4());
    let records: Vec<_> = split_records(body.freeze()).collect();
    assert_eq!(records.len(), 3);
    assert!(records[2].is_err());
}

fn v5_entries() -> Vec<BatchEntry> {
    ["a", "bc"]
        .iter()
        .zip(["K1", "K2"])
        .map(|(body, key)| BatchEntry {
            flag: 0,
            body: Bytes::copy_from_slice(body.as_bytes()),
            properties: record::format_properties([("UNIQ_KEY", key), ("WAIT", "true")]).into(),
        })
        .collect()
}

#[test]
fn v5_batch_body_decodes_and_encodes() {
    let bytes = vector_bytes("v5_batch_body.hex");
    assert_eq!(bytes.len(), 91);
    let entries = decode_batch(Bytes::from(bytes.clone()), &MessageLimits::default()).unwrap();
    assert_eq!(entries, v5_entries());
    let mut out = BytesMut::new();
    encode_batch(&entries, &mut out).unwrap();
    assert_eq!(&out[..], &bytes[..]);
}

#[test]
fn batch_body_limits_and_truncation_are_typed_errors() {
    let bytes = Bytes::from(vector_bytes("v5_batch_body.hex"));
    let tight = MessageLimits { body_bytes_max: 1 };
    assert_eq!(
        decode_batch(bytes.clone(), &tight),
        Err(MessageError::BodyTooLarge { bytes: 2, max: 1 })
    );
    for cut in 1..bytes.len() {
        if cut == 45 {
            continue; // exactly the first entry: a valid batch of one
        }
        let err = decode_batch(bytes.slice(..cut), &MessageLimits::default()).unwrap_err();
        assert!(
            matches!(err, MessageError::BatchTruncated { .. }),
            "cut {cut}: {err}"
        );
    }
}

#[test]
fn v6_tag_hash_codes_and_consume_queue_entry() {
    for (tag, hash) in [
        ("A", 65),
        ("*", 42),
        ("TagA", 2_598_919),
        ("TagB", 2_598_920),
        ("hello world", 1_794_106_052),
    ] {
        assert_eq!(record::java_string_hash(tag), hash, "{tag}");
    }
    let view = RecordView::parse(v4()).unwrap();
    let mut entry = Vec::new();
    entry.extend(view.physical_offset().to_be_bytes());
    entry.extend(view.total_size().to_be_bytes());
    entry.extend(view.tag_hash_code().to_be_bytes());
    assert_eq!(entry, vector_bytes("v6_consume_queue_entry.hex"));
}

#[test]
fn v10_offset_msg_id_decomposes() {
    let id = OffsetMsgId::parse("7F00000100002A9F0000000000000000").unwrap();
    assert_eq!(id.store_host, "127.0.0.1:10911".parse().unwrap());
    assert_eq!(id.commit_log_offset, 0);
    assert_eq!(
        OffsetMsgId::parse("7f00000100002a9f0000000000000000").unwrap(),
        id
    );

    let v6 = OffsetMsgId {
        store_host: "[2001:db8::1]:10911".parse().unwrap(),
        commit_log_offset: 1 << 40,
    };
    let text = v6.to_string();
    assert_eq!(text.len(), 56, "16-byte address + port + offset");
    assert_eq!(OffsetMsgId::parse(&text).unwrap(), v6);

    for bad in [
        "",
        "7F000001",
        "7F00000100002A9F000000000000000G",
        "7F00000100002A9F00000000000000000",
    ] {
        assert!(OffsetMsgId::parse(bad).is_err(), "{bad:?}");
    }
    assert!(matches!(
        OffsetMsgId::parse("7F000001FFFFFFFF0000000000000000"),
        Err(MessageError::BadIdPort { port: -1, .. })
    ));
}

#[test]
fn v10_uniq_key_decomposes() {
    let key = UniqKey::parse("C0A8000212341B6D35860A1B2C3D0001").unwrap();
    assert_eq!(key.ip, "192.168.0.2".parse::<std::net::IpAddr>().unwrap());
    assert_eq!(key.pid, 0x1234);
    assert_eq!(key.class_loader_hash, 0x1B6D_3586);
    assert_eq!(key.ms_since_month_start, 169_552_957);
    assert_eq!(key.counter, 1);
    assert_eq!(key.to_string(), "C0A8000212341B6D35860A1B2C3D0001");
}
