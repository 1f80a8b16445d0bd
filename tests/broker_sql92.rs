//! SQL92 subscriptions end to end: a real `ringmq standalone` process, driven with remoting
//! frames as a lite-pull consumer (subscription in the pull) and a Java push consumer's
//! CHECK_CLIENT_CONFIG drive it. The Java, Go, Node and Rust clients' own runs are the matrix
//! scenario `sql92` (tests/matrix).

mod broker_support;

use broker_support::process_support::TempDir;
use broker_support::requests::{call, create_topic, pull, records, send};
use broker_support::Standalone;
use bytes::Bytes;
use ringmq::client::{block_on, RemotingClient};
use ringmq::protocol::codes::{request as code, response};
use ringmq::protocol::command::RemotingCommand;
use ringmq::protocol::header::{PullMessageRequestHeader, PullMessageResponseHeader};
use std::time::Duration;

const GROUP: &str = "SG";

/// A broker with `enablePropertyFilter=true` in its broker.conf (kept alive with it).
fn filtering_broker() -> (Standalone, TempDir) {
    let conf_dir = TempDir::new("sql92-conf");
    let conf = conf_dir.path().join("broker.conf");
    std::fs::write(&conf, "enablePropertyFilter=true\n").unwrap();
    let broker = Standalone::start_with(2, &["--config", conf.to_str().unwrap()]);
    (broker, conf_dir)
}

/// A pull carrying the SQL92 subscription `expression`.
fn sql_pull(
    topic: &str,
    queue: i32,
    offset: i64,
    expression: &str,
    suspend_ms: i64,
) -> RemotingCommand {
    let mut header: PullMessageRequestHeader =
        pull(GROUP, topic, queue, offset, Some(expression), suspend_ms)
            .decode_header()
            .unwrap();
    header.expression_type = Some("SQL92".into());
    RemotingCommand::request(code::PULL_MESSAGE).with_header(&header)
}

/// CHECK_CLIENT_CONFIG as the Java push consumer sends it before it starts.
fn check_client_config(expression_type: &str, expression: &str) -> RemotingCommand {
    let body = format!(
        r#"{{"clientId":"127.0.0.1@t","group":"{GROUP}","subscriptionData":{{"classFilterMode":false,"codeSet":[],"expressionType":"{expression_type}","subString":"{expression}","subVersion":1,"tagsSet":[],"topic":"T"}}}}"#
    );
    RemotingCommand::request(code::CHECK_CLIENT_CONFIG).with_body(Bytes::from(body))
}

fn next_offset(response: &RemotingCommand) -> i64 {
    response
        .decode_header::<PullMessageResponseHeader>()
        .unwrap()
        .next_begin_offset
}

#[test]
fn pulls_get_only_the_messages_the_selector_matches_and_move_past_the_rest() {
    let (broker, _conf) = filtering_broker();
    block_on(async {
        let client = RemotingClient::connect(&broker.broker_addr).await.unwrap();
        assert_eq!(
            call(&client, create_topic("TS", 1)).await.code,
            response::SUCCESS
        );
        for (i, a) in ["1", "7", "x", "9"].iter().enumerate() {
            let body = format!("m{i}");
            let sent = call(&client, send("TS", 0, body.as_bytes(), &[("a", a)])).await;
            assert_eq!(sent.code, response::SUCCESS, "{:?}", sent.remark);
        }
        let got = call(&client, sql_pull("TS", 0, 0, "a > 5", 0)).await;
        assert_eq!(got.code, response::SUCCESS, "{:?}", got.remark);
        let bodies: Vec<_> = records(&got).iter().map(|r| r.body()).collect();
        assert_eq!(bodies, [&b"m1"[..], b"m3"], "7 and 9; x is no number");
        assert_eq!(next_offset(&got), 4);
        // Every message has `a`: the read is empty and moves past all four.
        let none = call(&client, sql_pull("TS", 0, 0, "a IS NULL", 0)).await;
        assert_eq!(none.code, response::PULL_RETRY_IMMEDIATELY);
        assert_eq!(none.remark.as_deref(), Some("NO_MATCHED_MESSAGE"));
        assert_eq!(next_offset(&none), 4);

        // A held pull is not answered by a message it does not match, but by the next one
        // that does; its next offset is past both.
        let held = client.request(
            sql_pull("TS", 0, 4, "a = 'wake'", 20_000),
            Duration::from_secs(30),
        );
        let sender = async {
            glommio::timer::Timer::new(Duration::from_millis(200)).await;
            let first = call(&client, send("TS", 0, b"skipped", &[("a", "other")])).await;
            glommio::timer::Timer::new(Duration::from_millis(200)).await;
            let second = call(&client, send("TS", 0, b"wake", &[("a", "wake")])).await;
            (first.code, second.code)
        };
        let (pulled, sent) = futures_lite::future::zip(held, sender).await;
        assert_eq!(sent, (response::SUCCESS, response::SUCCESS));
        let pulled = pulled.unwrap();
        assert_eq!(pulled.code, response::SUCCESS, "{:?}", pulled.remark);
        let bodies: Vec<_> = records(&pulled).iter().map(|r| r.body()).collect();
        assert_eq!(bodies, [&b"wake"[..]]);
        assert_eq!(next_offset(&pulled), 6);

        // An expression that does not compile is refused, at the pull and at the check.
        let bad = call(&client, sql_pull("TS", 0, 0, "a >", 0)).await;
        assert_eq!(bad.code, response::SUBSCRIPTION_PARSE_FAILED);
        let checked = call(&client, check_client_config("SQL92", "a > 5")).await;
        assert_eq!(checked.code, response::SUCCESS, "{:?}", checked.remark);
        let refused = call(&client, check_client_config("SQL92", "a >")).await;
        assert_eq!(refused.code, response::SUBSCRIPTION_PARSE_FAILED);
        assert!(refused
            .remark
            .unwrap()
            .starts_with("Invalid MessageSelector."));
    })
    .unwrap();
}

#[test]
fn without_enable_property_filter_sql92_is_refused_as_apache_refuses_it() {
    let broker = Standalone::start(2);
    block_on(async {
        let client = RemotingClient::connect(&broker.broker_addr).await.unwrap();
        assert_eq!(
            call(&client, create_topic("TS", 1)).await.code,
            response::SUCCESS
        );
        let refused = "The broker does not support consumer to filter message by SQL92";
        let checked = call(&client, check_client_config("SQL92", "a > 5")).await;
        assert_eq!(checked.code, response::SYSTEM_ERROR);
        assert_eq!(checked.remark.as_deref(), Some(refused));
        let pulled = call(&client, sql_pull("TS", 0, 0, "a > 5", 0)).await;
        assert_eq!(pulled.code, response::SYSTEM_ERROR);
        assert_eq!(pulled.remark.as_deref(), Some(refused));
        // Tag subscriptions need no property filter.
        let tags = call(&client, check_client_config("TAG", "*")).await;
        assert_eq!(tags.code, response::SUCCESS);
    })
    .unwrap();
}
