//! Request-reply against a real `ringmq standalone` with 2 shards, with the project's own
//! client sending what the Java responder sends (SEND_REPLY_MESSAGE_V2 and _V1 to
//! `<cluster>_REPLY_TOPIC`, the properties `MessageUtil.createReplyMessage` sets): the reply
//! is pushed as PUSH_REPLY_MESSAGE_TO_CLIENT to the connection of the producer client named
//! by REPLY_TO_CLIENT, filled as Apache fills it, and stored (`storeReplyMessageEnable`); a
//! reply whose requester is not connected, or that names none, is answered SYSTEM_ERROR with
//! Apache's remark. The end-to-end round trip with the Java client's `request()` is the
//! compatibility matrix's `request-reply` scenario.
//!
//! Every wait is on an event: pushes are awaited as they arrive at the requester.

mod broker_support;

use broker_support::inbox::Inbox;
use broker_support::requests::{call, send, view_record};
use broker_support::Standalone;
use ringmq::client::{block_on, RemotingClient};
use ringmq::protocol::body::heartbeat::{HeartbeatData, ProducerData};
use ringmq::protocol::body::{self};
use ringmq::protocol::codes::{request as code, response};
use ringmq::protocol::command::RemotingCommand;
use ringmq::protocol::header::{
    ReplyMessageRequestHeader, SendMessageRequestHeader, SendMessageResponseHeader,
};
use ringmq::protocol::message::record::find_property;
use std::rc::Rc;
use std::time::Duration;

const REPLY_TOPIC: &str = "DefaultCluster_REPLY_TOPIC";
const REQUESTER: &str = "127.0.0.1@requester";
/// Responder connections: with 2 shards, replies arrive on both, so pushes go both to the
/// requester's own shard and across to it (connections are spread over the shards).
const RESPONDERS: usize = 4;
/// Bound on waiting for the pushes to arrive.
const WAIT: Duration = Duration::from_secs(30);

/// A requester: a producer client that heartbeats once and records what it is pushed.
async fn requester(addr: &str) -> (RemotingClient, Rc<Inbox>) {
    let inbox = Rc::new(Inbox::default());
    let client = RemotingClient::connect_with(addr, inbox.clone())
        .await
        .unwrap();
    let data = HeartbeatData {
        client_id: REQUESTER.into(),
        producer_data_set: vec![ProducerData {
            group_name: "P_requester".into(),
        }],
        ..HeartbeatData::default()
    };
    let heartbeat =
        RemotingCommand::request(code::HEART_BEAT).with_body(body::encode(&data).unwrap());
    let answer = call(&client, heartbeat).await;
    assert_eq!(answer.code, response::SUCCESS, "{:?}", answer.remark);
    (client, inbox)
}

/// A reply as `MessageUtil.createReplyMessage` makes it and the Java producer sends it
/// (SEND_REPLY_MESSAGE_V2, or SEND_REPLY_MESSAGE without `v2`).
fn reply(correlation: &str, reply_to: Option<&str>, body: &str, v2: bool) -> RemotingCommand {
    let uniq = format!("UNIQ-{correlation}");
    let mut props = vec![
        ("MSG_TYPE", "reply"),
        ("CORRELATION_ID", correlation),
        ("TTL", "3000"),
        ("UNIQ_KEY", uniq.as_str()),
    ];
    if let Some(reply_to) = reply_to {
        props.push(("REPLY_TO_CLIENT", reply_to));
    }
    let mut request = send(REPLY_TOPIC, 0, body.as_bytes(), &props);
    if v2 {
        request.code = code::SEND_REPLY_MESSAGE_V2;
        return request;
    }
    let header = SendMessageRequestHeader::decode_from(&request).unwrap();
    RemotingCommand::request(code::SEND_REPLY_MESSAGE)
        .with_header(&header)
        .with_body(request.body)
}

/// The pushes the requester got, by CORRELATION_ID.
fn pushes(inbox: &Inbox) -> Vec<(String, ReplyMessageRequestHeader, Vec<u8>)> {
    inbox
        .of_code(code::PUSH_REPLY_MESSAGE_TO_CLIENT)
        .into_iter()
        .map(|push| {
            let header: ReplyMessageRequestHeader = push.decode_header().expect("a push header");
            let props = header.properties.clone().unwrap_or_default();
            let correlation = find_property(&props, "CORRELATION_ID").unwrap_or("");
            (correlation.to_owned(), header, push.body.to_vec())
        })
        .collect()
}

#[test]
fn replies_are_pushed_to_the_requesters_connection_and_stored() {
    let broker = Standalone::start(2);
    block_on(async {
        let (_requester, inbox) = requester(&broker.broker_addr).await;
        let mut sent = Vec::new();
        for r in 0..RESPONDERS {
            let responder = RemotingClient::connect(&broker.broker_addr).await.unwrap();
            let correlation = format!("corr-{r}");
            let body = format!("answer {r}");
            let answer = call(
                &responder,
                reply(&correlation, Some(REQUESTER), &body, r % 2 == 0),
            )
            .await;
            assert_eq!(answer.code, response::SUCCESS, "{:?}", answer.remark);
            let header: SendMessageResponseHeader = answer.decode_header().unwrap();
            assert_eq!(header.queue_id, 0);
            // Stored (Apache's default): the stored copy's id, and it reads back intact.
            let stored = view_record(&responder, &header.msg_id).await;
            assert_eq!(stored.topic(), REPLY_TOPIC);
            assert_eq!(&stored.body()[..], body.as_bytes());
            assert_eq!(
                stored.property("CORRELATION_ID"),
                Some(correlation.as_str())
            );
            sent.push((correlation, body));
        }
        // The replies were answered SUCCESS only once the requester took them: all are there.
        let got = pushes(&inbox);
        assert_eq!(got.len(), RESPONDERS, "one push per reply");
        for (correlation, body) in &sent {
            let (_, header, pushed) = got
                .iter()
                .find(|(c, _, _)| c == correlation)
                .unwrap_or_else(|| panic!("no push for {correlation}"));
            assert_eq!(pushed, body.as_bytes());
            assert_eq!(header.topic, REPLY_TOPIC);
            assert_eq!(header.queue_id, 0);
            assert_eq!(header.producer_group, "PG");
            assert_eq!(header.store_host, broker.broker_addr);
            assert!(
                header.born_host.starts_with("127.0.0.1:"),
                "{}",
                header.born_host
            );
            assert!(header.store_timestamp > 0);
            let props = header.properties.as_deref().unwrap();
            assert_eq!(find_property(props, "REPLY_TO_CLIENT"), Some(REQUESTER));
            assert_eq!(find_property(props, "MSG_TYPE"), Some("reply"));
            assert!(
                find_property(props, "PUSH_REPLY_TIME").is_some_and(|t| t.parse::<i64>().is_ok())
            );
        }
    })
    .unwrap();
}

#[test]
fn a_reply_without_a_connected_requester_is_refused_as_apache_refuses_it() {
    let broker = Standalone::start(2);
    block_on(async {
        let responder = RemotingClient::connect(&broker.broker_addr).await.unwrap();
        let answer = call(&responder, reply("c1", Some("127.0.0.1@gone"), "x", true)).await;
        assert_eq!(answer.code, response::SYSTEM_ERROR);
        assert_eq!(
            answer.remark.as_deref(),
            Some("push reply message fail, channel of <127.0.0.1@gone> not found.")
        );
        let answer = call(&responder, reply("c2", None, "x", false)).await;
        assert_eq!(answer.code, response::SYSTEM_ERROR);
        assert_eq!(
            answer.remark.as_deref(),
            Some("reply message properties[REPLY_TO_CLIENT] is null")
        );
        // A requester that left: its connection is gone, so is its registration (or, while
        // the close is on its way to the registry, the push fails): SYSTEM_ERROR either way.
        let (requester, _inbox) = requester(&broker.broker_addr).await;
        drop(requester);
        let answer = call(&responder, reply("c3", Some(REQUESTER), "x", true)).await;
        assert_eq!(answer.code, response::SYSTEM_ERROR, "{:?}", answer.remark);
    })
    .unwrap();
}

#[test]
fn without_store_reply_message_enable_a_reply_is_pushed_only() {
    let dir = broker_support::process_support::TempDir::new("reply-conf");
    let conf = dir.path().join("broker.conf");
    std::fs::write(&conf, "storeReplyMessageEnable=false\n").unwrap();
    let broker = Standalone::start_with(2, &["-c", conf.to_str().unwrap()]);
    block_on(async {
        let (_requester, inbox) = requester(&broker.broker_addr).await;
        let responder = RemotingClient::connect(&broker.broker_addr).await.unwrap();
        let answer = call(
            &responder,
            reply("c1", Some(REQUESTER), "only pushed", true),
        )
        .await;
        assert_eq!(answer.code, response::SUCCESS, "{:?}", answer.remark);
        let header: SendMessageResponseHeader = answer.decode_header().unwrap();
        // Apache's answer for a reply it did not store.
        assert_eq!(header.msg_id, "0");
        assert_eq!(header.queue_offset, 0);
        let got = inbox
            .wait_for(WAIT, |inbox| Some(pushes(inbox)).filter(|p| !p.is_empty()))
            .await
            .expect("the push");
        assert_eq!(got[0].2, b"only pushed");
    })
    .unwrap();
}
