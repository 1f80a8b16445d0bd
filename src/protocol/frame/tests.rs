//! A frame written as a head plus a gathered body reads back as the frame `encode_frame` writes
//! for the joined body, in both header forms, however the body is split.

use super::*;
use crate::protocol::codes::response;

/// Bodies split in parts as a pull response gathers records: (own body, further parts).
fn layouts() -> Vec<(&'static [u8], Vec<&'static [u8]>)> {
    vec![
        (b"", vec![]),
        (b"own body only", vec![]),
        (b"", vec![b"first record|", b"second record|", b"third"]),
        (
            b"own|",
            vec![b"", b"after an empty part|", b"", b"last", b""],
        ),
        (b"", vec![b"", b""]),
    ]
}

fn command(serialize_type: SerializeType, own_body: &'static [u8]) -> RemotingCommand {
    let mut request = RemotingCommand::request(11);
    request.opaque = 77;
    let mut cmd = RemotingCommand::response_to(&request, response::SUCCESS, Some("ok".into()))
        .with_body(Bytes::from_static(own_body));
    cmd.serialize_type = serialize_type;
    cmd.ext_fields.insert("nextBeginOffset", "42");
    cmd
}

#[test]
fn a_head_and_a_gathered_body_decode_as_one_frame_in_both_header_forms() {
    for serialize_type in [SerializeType::Json, SerializeType::RocketMq] {
        for (own_body, parts) in layouts() {
            let cmd = command(serialize_type, own_body);
            let body_len = own_body.len() + parts.iter().map(|p| p.len()).sum::<usize>();
            let mut wire = BytesMut::new();
            encode_frame_head(&cmd, body_len, &mut wire);
            wire.extend_from_slice(own_body);
            for part in &parts {
                wire.extend_from_slice(part);
            }

            let joined: Vec<u8> = [own_body]
                .iter()
                .chain(&parts)
                .flat_map(|p| p.iter().copied())
                .collect();
            let whole = cmd.clone().with_body(joined.clone());
            let mut copied = BytesMut::new();
            encode_frame(&whole, &mut copied);
            assert_eq!(
                wire, copied,
                "{serialize_type:?} {parts:?}: same bytes as encode_frame"
            );

            let (decoded, consumed) = decode_frame(&wire).unwrap().expect("a whole frame");
            assert_eq!(consumed, wire.len());
            assert_eq!(decoded.serialize_type, serialize_type);
            assert_eq!(decoded.body, joined, "{serialize_type:?} {parts:?}");
            assert_eq!(decoded, whole);
            // Every cut short of the end asks for more bytes, as a reader sees it.
            for cut in 0..wire.len() {
                assert!(decode_frame(&wire[..cut]).unwrap().is_none());
            }
        }
    }
}

#[test]
fn frame_bytes_is_known_from_the_length_prefix_alone() {
    let cmd = command(SerializeType::Json, b"");
    let mut wire = BytesMut::new();
    encode_frame_head(&cmd, 1000, &mut wire);
    assert_eq!(frame_bytes(&wire[..3]).unwrap(), None);
    assert_eq!(frame_bytes(&wire[..4]).unwrap(), Some(wire.len() + 1000));
    let oversized = ((FRAME_BYTES_MAX - 3) as u32).to_be_bytes();
    assert!(matches!(
        frame_bytes(&oversized),
        Err(FrameError::TooLarge { bytes }) if bytes == FRAME_BYTES_MAX + 1
    ));
}

/// A split frame's long header fields are slices of the read buffer in both header forms (short
/// ones are copied inline); only a JSON value with escapes (a message's properties) is unescaped
/// into a string of its own.
#[test]
fn split_frame_header_fields_share_the_read_buffer() {
    for serialize_type in [SerializeType::Json, SerializeType::RocketMq] {
        let mut cmd = RemotingCommand::request(10);
        cmd.serialize_type = serialize_type;
        cmd.ext_fields
            .insert("b", "TopicTest-named-longer-than-an-inline-text");
        cmd.ext_fields.insert("c", "TBW102");
        cmd.ext_fields.insert(
            "i",
            "TAGS\u{1}a\u{2}KEYS\u{1}k\u{2}UNIQ_KEY\u{1}7F00000100014AA1BF0C1B0A2D3E0000\u{2}",
        );
        let mut wire = BytesMut::new();
        encode_frame(&cmd, &mut wire);
        let read = wire.as_ptr_range();
        let inside = |text: &str| {
            let range = text.as_bytes().as_ptr_range();
            read.start <= range.start && range.end <= read.end
        };
        let frame = split_frame(&mut wire).unwrap().unwrap();
        assert_eq!(frame.ext_fields, cmd.ext_fields, "{serialize_type:?}");
        let topic = frame.ext_fields.get("b").unwrap();
        assert!(inside(topic), "{serialize_type:?}: long value copied");
        // Short texts (every key here, the default topic) are copied inline instead.
        let (key, template) = frame.ext_fields.iter().find(|(k, _)| *k == "c").unwrap();
        assert!(
            !inside(key) && !inside(template),
            "{serialize_type:?}: short key and value shared"
        );
        let properties = frame.ext_fields.get("i").unwrap();
        let escaped = serialize_type == SerializeType::Json;
        assert_eq!(
            inside(properties),
            !escaped,
            "{serialize_type:?}: properties"
        );
    }
}
