//! Tests of the stored-record format against VECTORS.md V4/V6 and malformed input.

use super::*;

/// VECTORS.md V4, byte for byte.
const V4: [u8; 115] = [
    0x00, 0x00, 0x00, 0x73, 0xda, 0xa3, 0x20, 0xa7, 0x36, 0x10, 0xa6, 0x86, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x00,
    0x7f, 0x00, 0x00, 0x01, 0x00, 0x00, 0xc3, 0x50, 0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x7b,
    0x7f, 0x00, 0x00, 0x01, 0x00, 0x00, 0x2a, 0x9f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05, 0x68, 0x65, 0x6c, 0x6c, 0x6f, 0x01, 0x54, 0x00,
    0x12, 0x54, 0x41, 0x47, 0x53, 0x01, 0x54, 0x61, 0x67, 0x41, 0x02, 0x4b, 0x45, 0x59, 0x53, 0x01,
    0x6b, 0x31, 0x02,
];

fn v4_message() -> (Message, StoreFields) {
    let props = format_properties([("TAGS", "TagA"), ("KEYS", "k1")]);
    let message = Message::for_test("T", Bytes::from_static(b"hello"), props);
    let store = StoreFields {
        queue_offset: 0,
        physical_offset: 0,
        store_timestamp_ms: 1_700_000_000_123,
        store_host: "127.0.0.1:10911".parse().unwrap(),
    };
    (message, store)
}

#[test]
fn encodes_v4_vector() {
    let (message, store) = v4_message();
    assert_eq!(encoded_len(&message, &store.store_host).unwrap(), 115);
    assert_eq!(&encode(&message, &store).unwrap()[..], &V4[..]);
}

#[test]
fn decodes_v4_vector() {
    let view = RecordView::parse(Bytes::from_static(&V4)).unwrap();
    assert_eq!(view.total_size(), 115);
    assert_eq!(view.magic(), MAGIC_V1);
    assert_eq!(view.body_crc(), 907_060_870);
    assert!(view.body_crc_ok());
    assert_eq!(view.queue_id(), 0);
    assert_eq!(view.queue_offset(), 0);
    assert_eq!(view.physical_offset(), 0);
    assert_eq!(view.sys_flag(), 0);
    assert_eq!(view.born_timestamp_ms(), 1_700_000_000_000);
    assert_eq!(view.born_host(), "127.0.0.1:50000".parse().unwrap());
    assert_eq!(view.store_timestamp_ms(), 1_700_000_000_123);
    assert_eq!(view.store_host(), "127.0.0.1:10911".parse().unwrap());
    assert_eq!(view.reconsume_times(), 0);
    assert_eq!(view.prepared_transaction_offset(), 0);
    assert_eq!(&view.body()[..], b"hello");
    assert_eq!(view.topic(), "T");
    assert_eq!(view.properties(), "TAGS\u{1}TagA\u{2}KEYS\u{1}k1\u{2}");
    assert_eq!(view.property(property::KEYS), Some("k1"));
    assert_eq!(view.tag_hash_code(), 2_598_919);
}

#[test]
fn tag_hash_codes_match_java_v6() {
    assert_eq!(java_string_hash("A"), 65);
    assert_eq!(java_string_hash("*"), 42);
    assert_eq!(java_string_hash("TagA"), 2_598_919);
    assert_eq!(java_string_hash("TagB"), 2_598_920);
    assert_eq!(java_string_hash("hello world"), 1_794_106_052);
    assert_eq!(tag_hash_code(None), 0);
    // A negative hash is sign-extended, as Java's int-to-long widening does.
    let negative = java_string_hash("polygenelubricants");
    assert_eq!(negative, i32::MIN);
    assert_eq!(
        tag_hash_code(Some("polygenelubricants")),
        i64::from(i32::MIN)
    );
    // Non-BMP characters hash as two UTF-16 units, as in Java.
    assert_eq!(java_string_hash("\u{1F600}"), 0xD83D * 31 + 0xDE00);
}

#[test]
fn body_crc_clears_the_sign_bit() {
    assert_eq!(body_crc(b"hello"), 0x3610_A686);
    // crc32("a") = 0xE8B7BE43 has the top bit set.
    assert_eq!(body_crc(b"a"), 0x68B7_BE43);
}

#[test]
fn ipv6_hosts_and_long_topic_round_trip() {
    let (mut message, mut store) = v4_message();
    message.born_host = "[2001:db8::1]:40000".parse().unwrap();
    store.store_host = "[::1]:10911".parse().unwrap();
    message.topic = "t".repeat(200);
    message.sys_flag = TransactionType::Commit.apply(sys_flag::COMPRESSED | 0x300);
    store.queue_offset = 42;
    store.physical_offset = (3 << 48) | 4096;
    let bytes = encode(&message, &store).unwrap();
    assert_eq!(bytes.len(), 115 + 24 + 199 + 1);
    let view = RecordView::parse(bytes).unwrap();
    assert_eq!(view.magic(), MAGIC_V2);
    assert_eq!(view.topic(), message.topic);
    assert_eq!(view.born_host(), message.born_host);
    assert_eq!(view.store_host(), store.store_host);
    assert_eq!(view.queue_offset(), 42);
    assert_eq!(view.physical_offset(), (3 << 48) | 4096);
    let flag = view.sys_flag();
    assert_eq!(
        flag & (sys_flag::BORNHOST_V6 | sys_flag::STOREHOST_V6),
        0x30
    );
    assert_eq!(TransactionType::of(flag), TransactionType::Commit);
    assert_eq!(CompressionType::of(flag), Some(CompressionType::Zlib));
    assert_eq!(&view.body()[..], b"hello");
}

#[test]
fn sys_flag_helpers() {
    assert_eq!(CompressionType::of(0), None);
    assert_eq!(CompressionType::of(0x1), Some(CompressionType::Zlib));
    assert_eq!(CompressionType::of(0x101), Some(CompressionType::Lz4));
    assert_eq!(CompressionType::of(0x201), Some(CompressionType::Zstd));
    assert_eq!(CompressionType::of(0x701), None);
    assert_eq!(TransactionType::of(0x4), TransactionType::Prepared);
    assert_eq!(TransactionType::of(0xC), TransactionType::Rollback);
    assert_eq!(TransactionType::NotType.apply(0xD), 0x1);
    // The v6 bits follow the addresses, whatever the producer sent.
    let v4: SocketAddr = "1.2.3.4:5".parse().unwrap();
    assert_eq!(stored_sys_flag(0x30 | sys_flag::MULTI_TAGS, &v4, &v4), 0x2);
}

#[test]
fn properties_parse_like_java() {
    let props = "TAGS\u{1}TagA\u{2}KEYS\u{1}k1 k2\u{2}x\u{2}\u{1}v\u{2}E\u{1}\u{2}TAGS\u{1}B\u{2}";
    assert_eq!(
        parse_properties(props),
        vec![
            ("TAGS".to_string(), "B".to_string()),
            ("KEYS".to_string(), "k1 k2".to_string()),
        ]
    );
    assert_eq!(find_property(props, "TAGS"), Some("B"));
    assert_eq!(find_property(props, "E"), None);
    assert_eq!(
        find_properties(props, ["KEYS", "E", "TAGS", "x"]),
        [Some("k1 k2"), None, Some("B"), None]
    );
    // Names and values keep every byte but the separators, multi-byte chars included.
    let wide = "\u{e9}t\u{e9}\u{1}\u{4e2d}\u{1}\u{6587}\u{2}\u{2}no-value\u{1}";
    assert_eq!(
        properties_iter(wide).collect::<Vec<_>>(),
        [("\u{e9}t\u{e9}", "\u{4e2d}\u{1}\u{6587}")]
    );
    let formatted = format_properties([("a", "1"), ("b", "2")]);
    assert_eq!(formatted, "a\u{1}1\u{2}b\u{1}2\u{2}");
    assert_eq!(parse_properties(&formatted).len(), 2);
}

#[test]
fn rejects_malformed_records_without_panicking() {
    // Every truncation of a valid record is an error, never a panic.
    for len in 0..V4.len() {
        assert!(RecordView::parse(Bytes::copy_from_slice(&V4[..len])).is_err());
    }
    let mut bad_magic = V4;
    bad_magic[4] = 0;
    assert!(matches!(
        RecordView::parse(Bytes::copy_from_slice(&bad_magic)),
        Err(RecordError::BadMagic(_))
    ));
    // A body length pointing past the end.
    let mut bad_body = V4;
    bad_body[87] = 0x50;
    assert!(RecordView::parse(Bytes::copy_from_slice(&bad_body)).is_err());
    // Negative properties length.
    let mut bad_props = V4;
    bad_props[95] = 0xFF;
    assert!(RecordView::parse(Bytes::copy_from_slice(&bad_props)).is_err());
    // A flipped body byte parses but fails the CRC.
    let mut bad_crc = V4;
    bad_crc[88] ^= 1;
    let view = RecordView::parse(Bytes::copy_from_slice(&bad_crc)).unwrap();
    assert!(!view.body_crc_ok());
    // The IPv6 flag on a record too short for v6 hosts.
    let mut bad_v6 = V4;
    bad_v6[39] = 0x30;
    assert!(RecordView::parse(Bytes::copy_from_slice(&bad_v6)).is_err());
}

#[test]
fn encode_enforces_limits() {
    let (mut message, store) = v4_message();
    message.body = Bytes::from(vec![0u8; BODY_BYTES_MAX + 1]);
    assert!(matches!(
        encode(&message, &store),
        Err(RecordError::TooLong { field: "body", .. })
    ));
    let (mut message, store) = v4_message();
    message.properties = Bytes::from(vec![b'a'; PROPERTIES_BYTES_MAX + 1]);
    assert!(matches!(
        encode(&message, &store),
        Err(RecordError::TooLong {
            field: "properties",
            ..
        })
    ));
    let mut small = [0u8; 10];
    assert!(encode_into(&v4_message().0, &store, &mut small).is_err());
}
