//! Frames captured from the real Go client (rocketmq-client-go v2.1.2, `tests/vectors/go/`)
//! decode into typed headers and bodies.

mod protocol_support;

use bytes::Bytes;
use protocol_support::vector_raw;
use ringmq::protocol::codes::request;
use ringmq::protocol::command::{LanguageCode, RemotingCommand, SerializeType};
use ringmq::protocol::frame::decode_frame;
use ringmq::protocol::header::{GetRouteInfoRequestHeader, SendMessageRequestHeader};
use ringmq::protocol::message::{decode_batch, MessageLimits};

fn go_frame(name: &str) -> RemotingCommand {
    let frame = vector_raw(&format!("go/{name}.bin"));
    let (cmd, consumed) = decode_frame(&frame).unwrap().unwrap();
    assert_eq!(consumed, frame.len());
    assert_eq!((cmd.language, cmd.version), (LanguageCode::Go, 317));
    assert_eq!(cmd.serialize_type, SerializeType::Json);
    assert_eq!(cmd.remark.as_deref(), Some(""));
    cmd
}

#[test]
fn go_route_request() {
    let cmd = go_frame("route_request");
    assert_eq!((cmd.code, cmd.opaque), (request::GET_ROUTEINFO_BY_TOPIC, 1));
    let header: GetRouteInfoRequestHeader = cmd.decode_header().unwrap();
    assert_eq!(header.topic, "T");
    assert_eq!(header.accept_standard_json_only, None);
}

#[test]
fn go_single_send_uses_long_keys() {
    let cmd = go_frame("send_message_request");
    assert_eq!(cmd.code, request::SEND_MESSAGE);
    let header = SendMessageRequestHeader::decode_from(&cmd).unwrap();
    assert_eq!(
        (header.producer_group.as_str(), header.topic.as_str()),
        ("G", "T")
    );
    assert_eq!(header.default_topic, "TBW102");
    assert_eq!((header.queue_id, header.default_topic_queue_nums), (0, 4));
    assert_eq!(header.batch, Some(false));
    assert_eq!(header.max_reconsume_times, Some(0));
    assert_eq!(header.broker_name, None);
    let props = header.properties.unwrap();
    assert!(
        props.starts_with("TAGS\u{1}A\u{2}UNIQ_KEY\u{1}"),
        "{props:?}"
    );
    assert_eq!(&cmd.body[..], b"hi");
}

#[test]
fn go_batch_send_uses_short_keys_and_entries_without_properties() {
    let cmd = go_frame("send_batch_request");
    assert_eq!(cmd.code, request::SEND_BATCH_MESSAGE);
    let header = SendMessageRequestHeader::decode_from(&cmd).unwrap();
    assert_eq!(header.batch, Some(true));
    assert_eq!(header.properties.as_deref(), Some(""));
    let entries = decode_batch(cmd.body.clone(), &MessageLimits::default()).unwrap();
    let bodies: Vec<Bytes> = entries.iter().map(|e| e.body.clone()).collect();
    assert_eq!(
        bodies,
        [Bytes::from_static(b"a"), Bytes::from_static(b"bc")]
    );
    assert!(entries.iter().all(|e| e.properties.is_empty()));
}

#[test]
fn go_heartbeat_has_an_empty_ext_object_and_a_json_body() {
    let cmd = go_frame("heartbeat_request");
    assert_eq!(cmd.code, request::HEART_BEAT);
    assert!(cmd.ext_fields.is_empty());
    assert!(cmd.body.starts_with(b"{\"clientID\":"));
}
