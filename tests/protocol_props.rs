//! Property tests: frames round-trip in both header serializations, streams of frames split
//! correctly at any byte boundary, and no input makes a decoder panic; message ids and batch
//! bodies round-trip.

use bytes::{Bytes, BytesMut};
use proptest::collection::{hash_map, vec};
use proptest::prelude::*;
use ringmq::protocol::command::{ExtFields, LanguageCode, RemotingCommand, SerializeType};
use ringmq::protocol::frame::{decode_frame, encode_frame, split_frame};
use ringmq::protocol::message::*;
use std::net::{IpAddr, SocketAddr};

fn language() -> impl Strategy<Value = LanguageCode> {
    (0u8..14).prop_map(LanguageCode::from_code)
}

/// Any command; codes and versions mostly in the binary header's 16 bits, sometimes beyond.
fn command() -> impl Strategy<Value = RemotingCommand> {
    let number = prop_oneof![4 => any::<i16>().prop_map(i32::from), 1 => any::<i32>()];
    (
        (
            number.clone(),
            language(),
            number,
            any::<i32>(),
            any::<i32>(),
        ),
        proptest::option::of(".{0,20}"),
        hash_map(".{0,8}", ".{0,16}", 0..6),
        prop_oneof![Just(SerializeType::Json), Just(SerializeType::RocketMq)],
        vec(any::<u8>(), 0..64),
    )
        .prop_map(
            |((code, language, version, opaque, flag), remark, ext, st, body)| RemotingCommand {
                code,
                language,
                version,
                opaque,
                flag,
                remark,
                ext_fields: ext.into_iter().collect(),
                serialize_type: st,
                body: Bytes::from(body),
            },
        )
}

/// What the peer sees of `cmd`: the binary header turns empty strings into nulls, and a
/// command that does not fit it travels as JSON.
fn as_received(cmd: &RemotingCommand) -> RemotingCommand {
    let mut cmd = cmd.clone();
    let fits = i16::try_from(cmd.code).is_ok() && i16::try_from(cmd.version).is_ok();
    if cmd.serialize_type == SerializeType::RocketMq && !fits {
        cmd.serialize_type = SerializeType::Json;
    }
    if cmd.serialize_type == SerializeType::RocketMq {
        cmd.remark = cmd.remark.filter(|r| !r.is_empty());
        cmd.ext_fields = cmd
            .ext_fields
            .into_iter()
            .filter(|(k, v)| !k.is_empty() && !v.is_empty())
            .collect::<ExtFields>();
    }
    cmd
}

fn frame_of(cmd: &RemotingCommand) -> BytesMut {
    let mut out = BytesMut::new();
    encode_frame(cmd, &mut out);
    out
}

proptest! {
    #[test]
    fn frames_round_trip_in_both_serializations(cmd in command()) {
        let frame = frame_of(&cmd);
        let (decoded, consumed) = decode_frame(&frame).unwrap().unwrap();
        prop_assert_eq!(consumed, frame.len());
        prop_assert_eq!(decoded, as_received(&cmd));
    }

    #[test]
    fn a_stream_of_frames_decodes_from_any_chunking(
        cmds in vec(command(), 1..5),
        cuts in vec(any::<prop::sample::Index>(), 0..6),
    ) {
        let mut stream = BytesMut::new();
        for cmd in &cmds {
            encode_frame(cmd, &mut stream);
        }
        // Feed the stream in chunks, as reads from a socket would deliver it.
        let mut cut_points: Vec<usize> = cuts.iter().map(|i| i.index(stream.len())).collect();
        cut_points.push(stream.len());
        cut_points.sort_unstable();
        let (mut buffer, mut fed, mut decoded) = (Vec::new(), 0, Vec::new());
        let (mut shared, mut split) = (BytesMut::new(), Vec::new());
        for cut in cut_points {
            buffer.extend_from_slice(&stream[fed..cut]);
            shared.extend_from_slice(&stream[fed..cut]);
            fed = cut;
            while let Some((cmd, consumed)) = decode_frame(&buffer).unwrap() {
                decoded.push(cmd);
                buffer.drain(..consumed);
            }
            while let Some(cmd) = split_frame(&mut shared).unwrap() {
                split.push(cmd);
            }
        }
        prop_assert!(buffer.is_empty() && shared.is_empty());
        prop_assert_eq!(&decoded, &cmds.iter().map(as_received).collect::<Vec<_>>());
        prop_assert_eq!(split, decoded);
    }

    #[test]
    fn arbitrary_bytes_never_panic_the_frame_decoder(bytes in vec(any::<u8>(), 0..256)) {
        let _ = decode_frame(&bytes);
    }

    #[test]
    fn corrupted_frames_never_panic_the_frame_decoder(
        cmd in command(),
        flips in vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
    ) {
        let mut frame = frame_of(&cmd).to_vec();
        for (at, value) in flips {
            let at = at.index(frame.len());
            frame[at] = value;
        }
        if let Ok(Some((_, consumed))) = decode_frame(&frame) {
            prop_assert!(consumed <= frame.len());
        }
    }

    #[test]
    fn batch_bodies_round_trip(
        entries in vec((any::<i32>(), vec(any::<u8>(), 0..40), vec(any::<u8>(), 0..40)), 0..5),
    ) {
        let entries: Vec<BatchEntry> = entries
            .into_iter()
            .map(|(flag, body, props)| BatchEntry {
                flag,
                body: body.into(),
                properties: props.into(),
            })
            .collect();
        let mut out = BytesMut::new();
        encode_batch(&entries, &mut out).unwrap();
        prop_assert_eq!(decode_batch(out.freeze(), &MessageLimits::default()).unwrap(), entries);
    }

    #[test]
    fn arbitrary_bytes_never_panic_the_message_decoders(bytes in vec(any::<u8>(), 0..300)) {
        let bytes = Bytes::from(bytes);
        let _ = decode_batch(bytes.clone(), &MessageLimits::default());
        prop_assert!(split_records(bytes).count() <= 3);
    }

    #[test]
    fn message_ids_round_trip(
        ip in any::<IpAddr>(), port in any::<u16>(), offset in any::<i64>(),
        fields in any::<(u16, i32, i32, u16)>(),
    ) {
        let id = OffsetMsgId { store_host: SocketAddr::new(ip, port), commit_log_offset: offset };
        let text = id.to_string();
        prop_assert_eq!(text.len(), if ip.is_ipv4() { 32 } else { 56 });
        prop_assert_eq!(OffsetMsgId::parse(&text).unwrap(), id);

        let key = UniqKey {
            ip,
            pid: fields.0,
            class_loader_hash: fields.1,
            ms_since_month_start: fields.2,
            counter: fields.3,
        };
        prop_assert_eq!(UniqKey::parse(&key.to_string()).unwrap(), key);
    }
}
