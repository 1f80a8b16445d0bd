//! The hand-derived vectors and our codec against bytes written by Apache RocketMQ 5.3.3's own
//! Java encoders (`tests/vectors/java/`, made by `Capture.java`): the real client wins.

mod protocol_support;

use bytes::{Bytes, BytesMut};
use protocol_support::{json_frame, vector_bytes, vector_raw, vector_text};
use ringmq::protocol::frame::{decode_frame, encode_frame};
use ringmq::protocol::message::record::{self, RecordView};
use ringmq::protocol::message::{decode_batch, record_parts, MessageLimits};

fn java(name: &str) -> Vec<u8> {
    vector_raw(&format!("java/{name}.bin"))
}

#[test]
fn hand_derived_frames_are_what_java_writes() {
    for name in [
        "v1_send_message_v2_request",
        "v2_send_response_rocketmq",
        "v3_unknown_code_response",
    ] {
        assert_eq!(vector_bytes(&format!("{name}.hex")), java(name), "{name}");
    }
    for (header, bin) in [
        ("v2b_send_response_header.json", "v2b_send_response_json"),
        ("v8_pull_not_found_header.json", "v8_pull_not_found_json"),
    ] {
        assert_eq!(json_frame(&vector_text(header), b""), java(bin), "{bin}");
    }
    assert_eq!(vector_bytes("v5_batch_body.hex"), java("v5_batch_body"));
}

#[test]
fn java_frames_decode_and_reencode_to_equal_commands() {
    for name in [
        "v1_send_message_v2_request",
        "v2_send_response_rocketmq",
        "v2b_send_response_json",
        "v3_unknown_code_response",
        "v8_pull_not_found_json",
    ] {
        let frame = java(name);
        let (cmd, consumed) = decode_frame(&frame).unwrap().unwrap();
        assert_eq!(consumed, frame.len(), "{name}");
        let mut ours = BytesMut::new();
        encode_frame(&cmd, &mut ours);
        assert_eq!(
            ours.len(),
            frame.len(),
            "{name}: same bytes, maybe another key order"
        );
        assert_eq!(decode_frame(&ours).unwrap().unwrap().0, cmd, "{name}");
    }
}

#[test]
fn java_v4_record_differs_only_in_property_order() {
    let ours = RecordView::parse(Bytes::from(vector_bytes("v4_stored_record.hex"))).unwrap();
    let theirs = RecordView::parse(Bytes::from(java("v4_stored_record"))).unwrap();
    assert_eq!(theirs.properties(), "KEYS\u{1}k1\u{2}TAGS\u{1}TagA\u{2}");
    let mut a = record::parse_properties(ours.properties());
    let mut b = record::parse_properties(theirs.properties());
    a.sort();
    b.sort();
    assert_eq!(a, b);
    assert_eq!(
        ours.as_bytes()[..97],
        theirs.as_bytes()[..97],
        "all but the properties"
    );
    assert_eq!(theirs.tag_hash_code(), 2_598_919);

    // Encoding the Java record's fields with its properties string gives Java's bytes.
    let (message, store) = record_parts(&theirs);
    assert_eq!(record::encode(&message, &store).unwrap(), theirs.as_bytes());
}

#[test]
fn java_batch_body_decodes() {
    let entries = decode_batch(
        Bytes::from(java("v5_batch_body")),
        &MessageLimits::default(),
    )
    .unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!(&entries[1].body[..], b"bc");
    assert_eq!(
        std::str::from_utf8(&entries[1].properties).unwrap(),
        "UNIQ_KEY\u{1}K2\u{2}WAIT\u{1}true\u{2}"
    );
}

/// Writes frames of ours for `java/Decode.java` (the Java decoder's check of our encoder; see
/// `tests/vectors/java/README.md`) and checks them with our own decoder meanwhile.
#[test]
fn frames_for_the_java_decoder() {
    use ringmq::protocol::codes::{request, response};
    use ringmq::protocol::command::{RemotingCommand, SerializeType};
    use ringmq::protocol::header::*;

    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("java-interop");
    std::fs::create_dir_all(&dir).unwrap();
    let mut frames = Vec::new();
    let mut req = RemotingCommand::request(request::SEND_MESSAGE_V2);
    req.opaque = 7;
    for st in [SerializeType::Json, SerializeType::RocketMq] {
        req.serialize_type = st;
        let send = SendMessageResponseHeader {
            msg_id: "7F00000100002A9F0000000000000000".into(),
            queue_id: 3,
            queue_offset: 42,
            transaction_id: Some("C0A80002123400000000000000000001".into()),
            msg_region: Some("DefaultRegion".into()),
            trace_on: Some("true".into()),
            ..Default::default()
        };
        let pull = PullMessageResponseHeader {
            next_begin_offset: 5,
            max_offset: 5,
            topic_sys_flag: Some(0),
            group_sys_flag: Some(0),
            ..Default::default()
        };
        let remark = "the custom field <topic> is null \u{1}\u{2} é中\"\\\n";
        frames.push((
            format!("send_response_{st:?}"),
            RemotingCommand::response_to(&req, response::SUCCESS, None).with_header(&send),
        ));
        frames.push((
            format!("pull_response_{st:?}"),
            RemotingCommand::response_to(
                &req,
                response::PULL_NOT_FOUND,
                Some("OFFSET_OVERFLOW_ONE".into()),
            )
            .with_header(&pull)
            .with_body(&b"body"[..]),
        ));
        frames.push((
            format!("error_response_{st:?}"),
            RemotingCommand::response_to(&req, response::SYSTEM_ERROR, Some(remark.into())),
        ));
    }
    let notify = ConsumerGroupRequestHeader {
        consumer_group: "g".into(),
    };
    frames.push((
        "notify_oneway".into(),
        RemotingCommand::request(request::NOTIFY_CONSUMER_IDS_CHANGED)
            .oneway()
            .with_header(&notify),
    ));
    for (name, cmd) in frames {
        let mut out = BytesMut::new();
        encode_frame(&cmd, &mut out);
        assert_eq!(decode_frame(&out).unwrap().unwrap().0, cmd, "{name}");
        std::fs::write(dir.join(format!("{name}.bin")), &out[..]).unwrap();
    }
}

#[test]
fn json_strings_are_escaped_byte_for_byte_as_fastjson_does() {
    use ringmq::protocol::command::RemotingCommand;

    let mut all: String = (0u8..0x80).map(char::from).collect();
    all.push_str("é中\u{2028}\u{2029}😀");
    let mut request = RemotingCommand::request(0);
    request.opaque = 3;
    let mut response = RemotingCommand::response_to(&request, 1, Some(all.clone()));
    response.ext_fields.insert("k\u{1}", all);

    let theirs = java("escapes_response");
    let mut ours = BytesMut::new();
    encode_frame(&response, &mut ours);
    assert_eq!(
        String::from_utf8_lossy(&ours[8..]),
        String::from_utf8_lossy(&theirs[8..])
    );
    assert_eq!(&ours[..], &theirs[..]);
    assert_eq!(decode_frame(&theirs).unwrap().unwrap().0, response);
}
