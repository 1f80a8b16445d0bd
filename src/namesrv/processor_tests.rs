//! Any request, however malformed, gets a well-formed answer and never a panic.

use super::*;
use proptest::prelude::*;

const CODES: [i32; 17] = [
    request::PUT_KV_CONFIG,
    request::GET_KV_CONFIG,
    request::DELETE_KV_CONFIG,
    request::REGISTER_BROKER,
    request::UNREGISTER_BROKER,
    request::GET_ROUTEINFO_BY_TOPIC,
    request::GET_BROKER_CLUSTER_INFO,
    request::WIPE_WRITE_PERM_OF_BROKER,
    request::GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
    request::DELETE_TOPIC_IN_NAMESRV,
    request::GET_KVLIST_BY_NAMESPACE,
    request::GET_TOPICS_BY_CLUSTER,
    request::GET_SYSTEM_TOPIC_LIST_FROM_NS,
    request::QUERY_DATA_VERSION,
    request::ADD_WRITE_PERM_OF_BROKER,
    request::BROKER_HEARTBEAT,
    9999,
];
const KEYS: [&str; 14] = [
    "topic",
    "brokerName",
    "brokerAddr",
    "clusterName",
    "haServerAddr",
    "brokerId",
    "namespace",
    "key",
    "value",
    "cluster",
    "bodyCrc32",
    "compressed",
    "acceptStandardJsonOnly",
    "heartbeatTimeoutMillis",
];
const VALUES: [&str; 8] = [
    "",
    "0",
    "-1",
    "x",
    "true",
    "99999999999999999999",
    "broker-a",
    "T",
];
const BODIES: [&str; 7] = [
    "",
    "{",
    "{}",
    "null",
    "[1]",
    r#"{"topicConfigSerializeWrapper":{"dataVersion":{"counter":1},"topicConfigTable":{"T":{"topicName":"T"},"U":{}}}}"#,
    r#"{"counter":"2","stateVersion":0,"timestamp":5}"#,
];
/// Codes a NameServer answers with (SYSTEM_ERROR also stands for a `RequestError`).
const ANSWERS: [i32; 5] = [
    response::SUCCESS,
    response::SYSTEM_ERROR,
    response::REQUEST_CODE_NOT_SUPPORTED,
    response::TOPIC_NOT_EXIST,
    response::QUERY_NOT_FOUND,
];

fn request_strategy() -> impl Strategy<Value = RemotingCommand> {
    (
        proptest::sample::select(&CODES[..]),
        proptest::collection::vec((0..KEYS.len(), 0..VALUES.len()), 0..10),
        prop_oneof![
            proptest::sample::select(&BODIES[..]).prop_map(|b| b.as_bytes().to_vec()),
            proptest::collection::vec(any::<u8>(), 0..64),
        ],
        proptest::sample::select(&[0, 317, 479][..]),
        any::<i32>(),
    )
        .prop_map(|(code, fields, body, version, opaque)| {
            let mut req = RemotingCommand::request(code).with_body(body);
            req.ext_fields = fields
                .into_iter()
                .map(|(k, v)| (KEYS[k].to_owned(), VALUES[v].to_owned()))
                .collect();
            req.version = version;
            req.opaque = opaque;
            req
        })
}

proptest! {
    #[test]
    fn every_request_gets_a_well_formed_answer(requests in proptest::collection::vec(request_strategy(), 1..16)) {
        let nameserver = NameServer::new(1000);
        for req in requests {
            match futures_lite::future::block_on(nameserver.process(ConnectionId(1), &req)) {
                Ok(resp) => {
                    prop_assert!(resp.is_response());
                    prop_assert_eq!(resp.opaque, req.opaque);
                    prop_assert!(ANSWERS.contains(&resp.code), "code {}", resp.code);
                }
                // Answered SYSTEM_ERROR with this text by the server loop.
                Err(err) => prop_assert!(!err.to_string().is_empty()),
            }
        }
        nameserver.connection_closed(ConnectionId(1));
        prop_assert_eq!(nameserver.routes().borrow().next_deadline_ms(), None);
    }
}
