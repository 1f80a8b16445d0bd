//! The frame codec against the hand-derived frames of VECTORS.md (V1, V2, V2b, V3, V8), kept in
//! `tests/vectors/`.

mod protocol_support;

use bytes::BytesMut;
use protocol_support::{json_frame, vector_bytes, vector_text};
use ringmq::protocol::codes::{request, response};
use ringmq::protocol::command::{LanguageCode, RemotingCommand, SerializeType};
use ringmq::protocol::frame::{decode_frame, encode_frame};

fn encode(cmd: &RemotingCommand) -> Vec<u8> {
    let mut out = BytesMut::new();
    encode_frame(cmd, &mut out);
    out.to_vec()
}

/// Decodes a whole frame, checking that every proper prefix of it asks for more bytes.
fn decode_whole(frame: &[u8]) -> RemotingCommand {
    for cut in 0..frame.len() {
        assert!(
            decode_frame(&frame[..cut]).unwrap().is_none(),
            "prefix {cut}"
        );
    }
    let mut stream = frame.to_vec();
    stream.extend_from_slice(&frame[..5]); // the start of a next frame is not consumed
    let (cmd, consumed) = decode_frame(&stream).unwrap().unwrap();
    assert_eq!(consumed, frame.len());
    cmd
}

#[test]
fn v1_json_send_message_v2_request() {
    let frame = vector_bytes("v1_send_message_v2_request.hex");
    let cmd = decode_whole(&frame);
    assert_eq!(cmd.code, request::SEND_MESSAGE_V2);
    assert_eq!(cmd.language, LanguageCode::Java);
    assert_eq!((cmd.version, cmd.opaque, cmd.flag), (479, 1, 0));
    assert_eq!(cmd.remark, None);
    assert_eq!(cmd.serialize_type, SerializeType::Json);
    assert_eq!(&cmd.body[..], b"hi");
    assert_eq!(cmd.ext_fields.len(), 13);
    assert_eq!(cmd.ext("a"), Some("G"));
    assert_eq!(cmd.ext("g"), Some("1700000000000"));
    assert_eq!(cmd.ext("i"), Some("TAGS\u{1}A\u{2}"));
    assert_eq!(cmd.ext("n"), Some("b1"));
    assert_eq!(cmd.ext("l"), None);
    // Keys a..n sorted are also the Java HashMap order, so the encoder reproduces every byte.
    assert_eq!(encode(&cmd), frame);
}

fn send_response_fields() -> [(&'static str, &'static str); 3] {
    [
        ("msgId", "7F00000100002A9F0000000000000000"),
        ("queueId", "0"),
        ("queueOffset", "0"),
    ]
}

#[test]
fn v2_rocketmq_send_response() {
    let frame = vector_bytes("v2_send_response_rocketmq.hex");
    let cmd = decode_whole(&frame);
    assert_eq!(cmd.serialize_type, SerializeType::RocketMq);
    assert_eq!(
        (cmd.code, cmd.version, cmd.opaque, cmd.flag),
        (0, 479, 1, 1)
    );
    assert!(cmd.is_response());
    assert_eq!(cmd.remark, None);
    assert!(cmd.body.is_empty());
    for (key, value) in send_response_fields() {
        assert_eq!(cmd.ext(key), Some(value));
    }
    assert_eq!(cmd.ext_fields.len(), 3);

    // The same frame built as a broker would: the response to V1, mirroring a binary request.
    let mut req = decode_whole(&vector_bytes("v1_send_message_v2_request.hex"));
    req.serialize_type = SerializeType::RocketMq;
    let mut resp = RemotingCommand::response_to(&req, response::SUCCESS, None);
    for (key, value) in send_response_fields() {
        resp.ext_fields.insert(key.to_string(), value.to_string());
    }
    assert_eq!(encode(&resp), frame);
}

#[test]
fn v2b_json_send_response_with_all_fields() {
    let header = vector_text("v2b_send_response_header.json");
    let frame = json_frame(&header, b"");
    assert_eq!(frame.len(), 290);
    assert_eq!(frame[..8], [0x00, 0x00, 0x01, 0x1e, 0x00, 0x00, 0x01, 0x1a]);
    let cmd = decode_whole(&frame);
    assert_eq!((cmd.code, cmd.opaque, cmd.flag), (0, 1, 1));
    assert_eq!(
        cmd.ext("transactionId"),
        Some("C0A80002123400000000000000000001")
    );
    assert_eq!(cmd.ext("MSG_REGION"), Some("DefaultRegion"));
    assert_eq!(cmd.ext("TRACE_ON"), Some("true"));
    assert_eq!(cmd.ext_fields.len(), 6);
    // Our encoder sorts keys where Java writes HashMap order: same bytes, other order.
    let ours = encode(&cmd);
    assert_eq!(ours.len(), frame.len());
    assert_eq!(decode_whole(&ours), cmd);
}

#[test]
fn v3_json_unknown_code_response() {
    let frame = vector_bytes("v3_unknown_code_response.hex");
    let mut req = RemotingCommand::request(9999);
    req.opaque = 5;
    let resp = RemotingCommand::response_to(
        &req,
        response::REQUEST_CODE_NOT_SUPPORTED,
        Some(" request type 9999 not supported".into()),
    );
    assert_eq!(encode(&resp), frame);
    assert_eq!(decode_whole(&frame), resp);
}

#[test]
fn v8_json_pull_not_found_response() {
    let header = vector_text("v8_pull_not_found_header.json");
    let frame = json_frame(&header, b"");
    assert_eq!(frame[..8], [0x00, 0x00, 0x01, 0x09, 0x00, 0x00, 0x01, 0x05]);
    let cmd = decode_whole(&frame);
    assert_eq!((cmd.code, cmd.opaque), (response::PULL_NOT_FOUND, 42));
    assert_eq!(cmd.remark.as_deref(), Some("OFFSET_OVERFLOW_ONE"));
    for (key, value) in [
        ("suggestWhichBrokerId", "0"),
        ("nextBeginOffset", "5"),
        ("minOffset", "0"),
        ("maxOffset", "5"),
    ] {
        assert_eq!(cmd.ext(key), Some(value));
    }
    let ours = encode(&cmd);
    assert_eq!(ours.len(), frame.len());
    assert_eq!(decode_whole(&ours), cmd);
}

#[test]
fn split_frame_shares_the_body_with_the_read_buffer() {
    use ringmq::protocol::frame::split_frame;

    let frame = vector_bytes("v1_send_message_v2_request.hex");
    let mut buf = BytesMut::from(&frame[..frame.len() - 1]);
    assert!(split_frame(&mut buf).unwrap().is_none());
    assert_eq!(
        buf.len(),
        frame.len() - 1,
        "an incomplete frame stays in the buffer"
    );
    buf.extend_from_slice(&frame[frame.len() - 1..]);
    buf.extend_from_slice(&frame[..3]); // the start of the next frame
    let body_at = buf.as_ptr() as usize + frame.len() - 2;

    let cmd = split_frame(&mut buf).unwrap().unwrap();
    assert_eq!(cmd, decode_whole(&frame));
    assert_eq!(
        cmd.body.as_ptr() as usize,
        body_at,
        "the body is not a copy"
    );
    assert_eq!(&buf[..], &frame[..3]);
}
