//! What real clients send that differs from the Java canonical form is accepted, and bytes that
//! cannot be a frame are refused with a typed error (never a panic).

mod protocol_support;

use protocol_support::json_frame;
use ringmq::protocol::command::{LanguageCode, RemotingCommand};
use ringmq::protocol::frame::{decode_frame, FrameError, FRAME_BYTES_MAX, HEADER_BYTES_MAX};

fn decode_json(header: &str) -> RemotingCommand {
    let frame = json_frame(header, b"");
    let (cmd, consumed) = decode_frame(&frame).unwrap().unwrap();
    assert_eq!(consumed, frame.len());
    cmd
}

fn decode_err(frame: &[u8]) -> FrameError {
    decode_frame(frame).expect_err("must be refused")
}

#[test]
fn go_client_header_without_serialize_type_and_with_empty_remark() {
    let cmd = decode_json(
        r#"{"code":105,"language":"GO","version":317,"opaque":1,"flag":0,"remark":"","extFields":{"topic":"T"}}"#,
    );
    assert_eq!((cmd.code, cmd.version, cmd.opaque), (105, 317, 1));
    assert_eq!(cmd.language, LanguageCode::Go);
    assert_eq!(cmd.remark.as_deref(), Some(""));
    assert_eq!(cmd.ext("topic"), Some("T"));
}

#[test]
fn cpp_client_ext_values_as_numbers_and_booleans_become_text() {
    let cmd = decode_json(
        r#"{"code":11,"language":"CPP","version":63,"opaque":9,"flag":0,"remark":"","extFields":{"queueId":1,"sysFlag":6,"commitOffset":-1,"unitMode":false,"AccessKey":"","gone":null}}"#,
    );
    assert_eq!(cmd.language, LanguageCode::Cpp);
    assert_eq!(cmd.ext("queueId"), Some("1"));
    assert_eq!(cmd.ext("sysFlag"), Some("6"));
    assert_eq!(cmd.ext("commitOffset"), Some("-1"));
    assert_eq!(cmd.ext("unitMode"), Some("false"));
    assert_eq!(cmd.ext("AccessKey"), Some(""));
    assert_eq!(cmd.ext("gone"), None, "a null value is an absent field");
}

#[test]
fn missing_keys_default_and_unknown_ones_are_ignored() {
    let cmd =
        decode_json(r#"{"opaque":"7","language":"KOTLIN","future":{"x":[1]},"extFields":null}"#);
    assert_eq!((cmd.code, cmd.version, cmd.opaque, cmd.flag), (0, 0, 7, 0));
    assert_eq!(cmd.language, LanguageCode::Other);
    assert!(cmd.ext_fields.is_empty());
    assert_eq!(decode_json("{}").language, LanguageCode::Java);
}

#[test]
fn duplicate_json_keys_keep_the_last_value() {
    let cmd = decode_json(r#"{"code":1,"code":2,"extFields":{"k":"a","k":"b"}}"#);
    assert_eq!(cmd.code, 2);
    assert_eq!(cmd.ext("k"), Some("b"));
}

#[test]
fn unusable_json_headers_are_frame_errors() {
    for (header, what) in [
        ("not json", "syntax"),
        ("[1,2]", "not an object"),
        (r#"{"code":{"a":1}}"#, "object code"),
        (r#"{"code":4294967296}"#, "code beyond i32"),
        (r#"{"opaque":"x"}"#, "non-numeric opaque"),
        (r#"{"extFields":"k=v"}"#, "extFields not an object"),
        (r#"{"remark":[1]}"#, "remark not a scalar"),
    ] {
        let err = decode_err(&json_frame(header, b""));
        assert!(
            matches!(
                err,
                FrameError::JsonSyntax(_) | FrameError::JsonNotObject | FrameError::JsonField(_)
            ),
            "{what}: {err}"
        );
    }
}

#[test]
fn length_below_the_header_word_is_refused() {
    let err = decode_err(&[0, 0, 0, 3, 0, 0, 0]);
    assert!(matches!(err, FrameError::LengthTooSmall(3)), "{err}");
    let err = decode_err(&(-1i32).to_be_bytes());
    assert!(matches!(err, FrameError::LengthTooSmall(-1)), "{err}");
}

#[test]
fn oversized_frame_is_refused_from_its_length_prefix_alone() {
    let length = (FRAME_BYTES_MAX - 4 + 1) as u32;
    let err = decode_err(&length.to_be_bytes());
    assert!(matches!(err, FrameError::TooLarge { bytes } if bytes == FRAME_BYTES_MAX + 1));
    // Exactly at the limit is a frame still arriving.
    let length = (FRAME_BYTES_MAX - 4) as u32;
    assert!(decode_frame(&length.to_be_bytes()).unwrap().is_none());
}

#[test]
fn header_bounds_are_checked() {
    // Header length 10 in a frame with 4 bytes after the header word.
    let err = decode_err(&[0, 0, 0, 8, 0, 0, 0, 10, b'{', b'}', 0, 0]);
    assert!(matches!(
        err,
        FrameError::HeaderLengthExceedsFrame {
            header: 10,
            available: 4
        }
    ));

    let too_big = HEADER_BYTES_MAX + 1;
    let mut frame = ((4 + too_big) as u32).to_be_bytes().to_vec();
    frame.extend((too_big as u32).to_be_bytes());
    frame.resize(4 + 4 + too_big, b' ');
    assert!(matches!(decode_err(&frame), FrameError::HeaderTooLarge(n) if n == too_big));

    let err = decode_err(&[0, 0, 0, 6, 7, 0, 0, 2, b'{', b'}']);
    assert!(matches!(err, FrameError::UnknownSerializeType(7)));
}

/// A binary header: fixed part for code 34, opaque 3, then `rest` (remark length onwards).
fn binary_frame(rest: &[u8]) -> Vec<u8> {
    let mut header = vec![0, 34, 0, 0x01, 0xdf, 0, 0, 0, 3, 0, 0, 0, 0];
    header.extend_from_slice(rest);
    let mut frame = ((4 + header.len()) as u32).to_be_bytes().to_vec();
    frame.extend((1u32 << 24 | header.len() as u32).to_be_bytes());
    frame.extend(header);
    frame
}

#[test]
fn binary_header_zero_lengths_are_null_and_duplicates_keep_the_last() {
    let mut rest = vec![0, 0, 0, 0]; // remark null
    let map: Vec<u8> = [
        &[0, 1, b'k', 0, 0, 0, 1, b'a'][..],
        &[0, 1, b'k', 0, 0, 0, 1, b'b'],
        &[0, 1, b'e', 0, 0, 0, 0], // empty value = null
    ]
    .concat();
    rest.extend((map.len() as u32).to_be_bytes());
    rest.extend(map);
    let (cmd, _) = decode_frame(&binary_frame(&rest)).unwrap().unwrap();
    assert_eq!((cmd.code, cmd.opaque), (34, 3));
    assert_eq!(cmd.remark, None);
    assert_eq!(cmd.ext("k"), Some("b"));
    assert_eq!(cmd.ext("e"), None);
}

#[test]
fn binary_header_bounds_violations_are_frame_errors() {
    let cases: [(&[u8], &str); 5] = [
        (&[0, 0], "truncated remark length"),
        (&[0, 0, 0, 9, b'x'], "remark beyond the header"),
        (&[0, 0, 0, 0, 0, 0, 0x7f, 0], "map longer than the header"),
        (
            &[0, 0, 0, 0, 0, 0, 0, 3, 0xff, 0xff, b'k'],
            "negative key length",
        ),
        (
            &[0, 0, 0, 0, 0, 0, 0, 4, 0, 1, b'k', 0],
            "entry overruns the map",
        ),
    ];
    for (rest, what) in cases {
        let err = decode_err(&binary_frame(rest));
        assert!(
            matches!(
                err,
                FrameError::BinaryTruncated(_) | FrameError::BinaryLength { .. }
            ),
            "{what}: {err}"
        );
    }
}

#[test]
fn an_unusable_header_is_a_request_error_not_a_frame_error() {
    use ringmq::protocol::codes::{request, response};
    use ringmq::protocol::header::{GetRouteInfoRequestHeader, HeaderError};

    // Two pipelined requests: the first lacks its required topic, the second is fine.
    let mut stream = json_frame(r#"{"code":105,"opaque":1,"extFields":{"topic ":"T"}}"#, b"");
    stream.extend(json_frame(
        r#"{"code":105,"opaque":2,"extFields":{"topic":"T"}}"#,
        b"",
    ));

    let (bad, consumed) = decode_frame(&stream).unwrap().unwrap();
    let err = bad
        .decode_header::<GetRouteInfoRequestHeader>()
        .unwrap_err();
    assert_eq!(err, HeaderError::Missing("topic"));
    let answer = RemotingCommand::response_to(&bad, response::SYSTEM_ERROR, Some(err.to_string()));
    assert_eq!((answer.opaque, answer.is_response()), (1, true));
    assert_eq!(
        answer.remark.as_deref(),
        Some("the custom field <topic> is null")
    );

    let (good, _) = decode_frame(&stream[consumed..]).unwrap().unwrap();
    assert_eq!(
        (good.code, good.opaque),
        (request::GET_ROUTEINFO_BY_TOPIC, 2)
    );
    let header: GetRouteInfoRequestHeader = good.decode_header().unwrap();
    assert_eq!(header.topic, "T");
}
