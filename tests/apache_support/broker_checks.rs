//! The broker-command checks shared by the tests against Apache's broker
//! (`admin_apache_broker`) and ringmq's (`admin_ringmq_broker`): every broker command of
//! `ringmq admin`, each compared with what Apache's mqadmin prints for the same state.
//! Messages are sent with ringmq's client (SEND_MESSAGE_V2), a consumer group is made present
//! with a HEART_BEAT on a connection held open, and its offset committed with
//! UPDATE_CONSUMER_OFFSET.

use super::{BROKER_NAME, CLUSTER};
use crate::namesrv_support::{run_admin, TIMEOUT};
use ringmq::client::{block_on, RemotingClient};
use ringmq::protocol::codes::{request, response};
use ringmq::protocol::command::RemotingCommand;
use ringmq::protocol::header::{
    GetKvConfigResponseHeader, KvConfigKeyRequestHeader, PullMessageRequestHeader,
    SendMessageRequestHeader, SendMessageRequestHeaderV2, SendMessageResponseHeader,
    UpdateConsumerOffsetRequestHeader,
};
use ringmq::protocol::message::record::format_properties;
use ringmq::protocol::message::UniqKeyGenerator;
use std::collections::BTreeSet;
use std::time::Duration;

const TOPIC: &str = "AdminT";
const GROUP: &str = "AdminG";
/// A topic written after the keyed messages; pulling its message proves the broker has indexed
/// everything before it (Apache dispatches to queues and index in commit-log order).
const BARRIER_TOPIC: &str = "AdminBarrier";
const ORDERED_TOPIC: &str = "AdminOrderT";
const QUEUES: i32 = 4;
/// One GET_BROKER_RUNTIME_INFO key per commit-log directory starts with this.
const DISK_RATIO_PREFIX: &str = "commitLogDiskRatio_";
/// The keys of Apache 5.3.3's GET_BROKER_RUNTIME_INFO (timer wheel off, no delayed message
/// yet), as mqadmin brokerStatus printed them from Apache's broker.
const APACHE_RUNTIME_INFO_KEYS: [&str; 60] = [
    "EndTransactionQueueSize",
    "EndTransactionThreadPoolQueueCapacity",
    "ackThreadPoolQueueCapacity",
    "ackThreadPoolQueueHeadWaitTimeMills",
    "ackThreadPoolQueueSize",
    "bootTimestamp",
    "brokerActive",
    "brokerVersion",
    "brokerVersionDesc",
    "commitLogDirCapacity",
    "commitLogDiskRatio",
    "commitLogDiskRatio_<dir>",
    "commitLogMaxOffset",
    "commitLogMinOffset",
    "consumeQueueDiskRatio",
    "dispatchBehindBytes",
    "dispatchMaxBuffer",
    "earliestMessageTimeStamp",
    "getFoundTps",
    "getMessageEntireTimeMax",
    "getMissTps",
    "getTotalTps",
    "getTransferredTps",
    "litePullThreadPoolQueueCapacity",
    "litePullThreadPoolQueueHeadWaitTimeMills",
    "litePullThreadPoolQueueSize",
    "msgGetTotalTodayMorning",
    "msgGetTotalTodayNow",
    "msgGetTotalYesterdayMorning",
    "msgPutTotalTodayMorning",
    "msgPutTotalTodayNow",
    "msgPutTotalYesterdayMorning",
    "pageCacheLockTimeMills",
    "pullThreadPoolQueueCapacity",
    "pullThreadPoolQueueHeadWaitTimeMills",
    "pullThreadPoolQueueSize",
    "putLatency99",
    "putLatency999",
    "putMessageAverageSize",
    "putMessageDistributeTime",
    "putMessageEntireTimeMax",
    "putMessageFailedTimes",
    "putMessageSizeTotal",
    "putMessageTimesTotal",
    "putTps",
    "queryThreadPoolQueueCapacity",
    "queryThreadPoolQueueHeadWaitTimeMills",
    "queryThreadPoolQueueSize",
    "remainHowManyDataToFlush",
    "remainTransientStoreBufferNumbs",
    "runtime",
    "sendThreadPoolQueueCapacity",
    "sendThreadPoolQueueHeadWaitTimeMills",
    "sendThreadPoolQueueSize",
    "startAcceptSendRequestTimeStamp",
    "timerCongestNum",
    "timerDequeueTps",
    "timerEnqueueTps",
    "timerOffsetBehind",
    "timerReadBehind",
];
/// Apache 4.9's key for getTransferredTps: ringmq answers both, Apache 5.3.3 only the new one.
const LEGACY_TRANSFERRED_TPS: &str = "getTransferedTps";
const MESSAGES: i32 = 6;
/// Every message carries this key besides its own `key-<i>`.
const SHARED_KEY: &str = "shared";
/// Pull sysFlag bits: hold the pull until a message arrives; the subscription is in the header.
const PULL_SUSPEND: i32 = 2;
const PULL_SUBSCRIPTION: i32 = 4;
/// How long the broker may hold the barrier pull.
const PULL_HOLD: Duration = Duration::from_secs(15);

fn admin(namesrv: &str, args: &[&str]) -> String {
    let (ok, out, err) = run_admin(namesrv, args);
    assert!(ok, "ringmq admin {args:?}: {err}");
    println!("ringmq admin {args:?}:\n{out}");
    out
}

/// A sent message: its offsetMsgId (from the send response) and UNIQ_KEY.
struct Sent {
    offset_msg_id: String,
    uniq_key: String,
}

async fn send(
    client: &RemotingClient,
    ids: &mut UniqKeyGenerator,
    topic: &str,
    queue_id: i32,
    keys: &str,
    body: String,
) -> Sent {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let uniq_key = ids.next(now_ms).to_string();
    let header = SendMessageRequestHeaderV2(SendMessageRequestHeader {
        producer_group: "AdminP".into(),
        topic: topic.to_owned().into(),
        default_topic: "TBW102".into(),
        default_topic_queue_nums: QUEUES,
        queue_id,
        sys_flag: 0,
        born_timestamp: now_ms,
        flag: 0,
        properties: Some(
            format_properties([
                ("KEYS", keys),
                ("UNIQ_KEY", uniq_key.as_str()),
                ("TAGS", "tagA"),
                ("WAIT", "true"),
            ])
            .into(),
        ),
        reconsume_times: Some(0),
        unit_mode: Some(false),
        max_reconsume_times: None,
        batch: Some(false),
        broker_name: Some(BROKER_NAME.into()),
    });
    let req = RemotingCommand::request(request::SEND_MESSAGE_V2)
        .with_header(&header)
        .with_body(body.into_bytes());
    let resp = client.request(req, TIMEOUT).await.expect("send response");
    assert_eq!(resp.code, response::SUCCESS, "send: {:?}", resp.remark);
    let sent: SendMessageResponseHeader = resp.decode_header().unwrap();
    Sent {
        offset_msg_id: sent.msg_id.to_string(),
        uniq_key,
    }
}

/// Pulls the barrier topic's first message, waiting for it if it is not there yet.
async fn await_barrier(client: &RemotingClient) {
    let header = PullMessageRequestHeader {
        consumer_group: GROUP.into(),
        topic: BARRIER_TOPIC.into(),
        queue_id: 0,
        queue_offset: 0,
        max_msg_nums: 1,
        sys_flag: PULL_SUSPEND | PULL_SUBSCRIPTION,
        commit_offset: 0,
        suspend_timeout_millis: PULL_HOLD.as_millis() as i64,
        subscription: Some("*".into()),
        sub_version: 0,
        expression_type: Some("TAG".into()),
        max_msg_bytes: None,
        request_source: None,
        proxy_forward_client_id: None,
    };
    let req = RemotingCommand::request(request::PULL_MESSAGE).with_header(&header);
    let resp = client
        .request(req, PULL_HOLD + TIMEOUT)
        .await
        .expect("pull response");
    assert_eq!(
        resp.code,
        response::SUCCESS,
        "barrier pull: {:?}",
        resp.remark
    );
}

/// HEARTBEAT body of a push consumer in `GROUP` subscribed to every tag of `TOPIC`.
fn heartbeat_body() -> Vec<u8> {
    format!(
        r#"{{"clientID":"127.0.0.1@admin-test","consumerDataSet":[{{"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","consumeType":"CONSUME_PASSIVELY","groupName":"{GROUP}","messageModel":"CLUSTERING","subscriptionDataSet":[{{"classFilterMode":false,"codeSet":[],"expressionType":"TAG","subString":"*","subVersion":0,"tagsSet":[],"topic":"{TOPIC}"}}],"unitMode":false}}],"producerDataSet":[]}}"#
    )
    .into_bytes()
}

/// The `topicStatus` lines without the TPS line (mqadmin always prints 0.0 there: it never
/// adds up the brokers' TPS, which ringmq does).
fn status_rows(out: &str) -> Vec<&str> {
    out.lines()
        .filter(|l| !l.starts_with("Topic Put TPS:"))
        .collect()
}

/// The `queryMsgById` lines both tools print the same way (mqadmin's properties come in
/// HashMap order, and it writes the body to a file).
fn message_fields(out: &str) -> Vec<&str> {
    const SAME: [&str; 13] = [
        "OffsetID:",
        "Topic:",
        "Tags:",
        "Keys:",
        "Queue ID:",
        "Queue Offset:",
        "CommitLog Offset:",
        "Reconsume Times:",
        "Born Timestamp:",
        "Store Timestamp:",
        "Born Host:",
        "Store Host:",
        "System Flag:",
    ];
    out.lines()
        .filter(|l| SAME.iter().any(|label| l.starts_with(label)))
        .collect()
}

/// Runs every broker command of `ringmq admin` against the broker at `broker` (named
/// `broker-a` in `DefaultCluster`, registered with the NameServer at `ns`, topics
/// auto-created, empty at first) and compares with what `mqadmin` prints for the same state:
/// point it at Apache's broker or at ringmq's, with Apache's mqadmin from
/// `apache_support::JavaEnv` either way.
pub fn check_broker_commands(ns: &str, broker: &str, mqadmin: &dyn Fn(&[&str]) -> String) {
    // The broker is registered (the helper waited for it), so tools can find it.
    assert!(admin(ns, &["clusterList"]).contains(broker));
    // updateTopic: ringmq's output is mqadmin's for the same arguments.
    let queues = QUEUES.to_string();
    let update = |topic| {
        [
            "updateTopic",
            "-t",
            topic,
            "-c",
            CLUSTER,
            "-r",
            &queues,
            "-w",
            &queues,
        ]
    };
    let ours = admin(ns, &update(TOPIC));
    let theirs = mqadmin(&update("MqadminT"));
    assert_eq!(ours, theirs.replace("MqadminT", TOPIC));
    assert_eq!(
        ours,
        format!(
            "create topic to {broker} success.\nTopicConfig [topicName={TOPIC}, readQueueNums=4, \
             writeQueueNums=4, perm=RW-, topicFilterType=SINGLE_TAG, topicSysFlag=0, \
             order=false, attributes={{}}]\n"
        )
    );
    // An ordered topic on one broker: its order config lands in the NameServer's KV table.
    let ordered = |topic| {
        [
            "updateTopic",
            "-t",
            topic,
            "-b",
            broker,
            "-r",
            "2",
            "-w",
            "2",
            "-o",
            "true",
        ]
    };
    let ours = admin(ns, &ordered(ORDERED_TOPIC));
    let theirs = mqadmin(&ordered("MqadminOrderT"));
    assert_eq!(ours, theirs.replace("MqadminOrderT", ORDERED_TOPIC));
    assert!(
        ours.starts_with("set broker orderConf. isOrder=true, orderConf=[broker-a:2]\n"),
        "{ours}"
    );

    // The group's retry topic (tools find a group's brokers through it) and the barrier topic,
    // one queue each on the broker.
    for topic in [format!("%RETRY%{GROUP}"), BARRIER_TOPIC.to_owned()] {
        admin(
            ns,
            &[
                "updateTopic",
                "-t",
                &topic,
                "-b",
                broker,
                "-r",
                "1",
                "-w",
                "1",
            ],
        );
    }
    assert!(admin(ns, &["topicRoute", "-t", TOPIC]).contains(BROKER_NAME));

    block_on(async {
        let namesrv = RemotingClient::connect(ns)
            .await
            .expect("connect to namesrv");
        for topic in [ORDERED_TOPIC, "MqadminOrderT"] {
            let key = KvConfigKeyRequestHeader {
                namespace: "ORDER_TOPIC_CONFIG".into(),
                key: topic.into(),
            };
            let req = RemotingCommand::request(request::GET_KV_CONFIG).with_header(&key);
            let resp = namesrv.request(req, TIMEOUT).await.expect("kv config");
            let value: GetKvConfigResponseHeader = resp.decode_header().unwrap();
            assert_eq!(value.value.as_deref(), Some("broker-a:2"), "{topic}");
        }

        let client = RemotingClient::connect(broker)
            .await
            .expect("connect to broker");
        let heartbeat = RemotingCommand::request(request::HEART_BEAT).with_body(heartbeat_body());
        let resp = client.request(heartbeat, TIMEOUT).await.expect("heartbeat");
        assert_eq!(resp.code, response::SUCCESS, "heartbeat: {:?}", resp.remark);

        let mut ids = UniqKeyGenerator::new([127, 0, 0, 1].into(), std::process::id(), 7);
        let mut sent = Vec::new();
        for i in 0..MESSAGES {
            let keys = format!("key-{i} {SHARED_KEY}");
            sent.push(
                send(
                    &client,
                    &mut ids,
                    TOPIC,
                    i % QUEUES,
                    &keys,
                    format!("body-{i}"),
                )
                .await,
            );
        }
        send(
            &client,
            &mut ids,
            BARRIER_TOPIC,
            0,
            "barrier",
            "barrier".into(),
        )
        .await;
        await_barrier(&client).await;

        let commit = UpdateConsumerOffsetRequestHeader {
            consumer_group: GROUP.into(),
            topic: TOPIC.into(),
            queue_id: 0,
            commit_offset: 1,
        };
        let req = RemotingCommand::request(request::UPDATE_CONSUMER_OFFSET).with_header(&commit);
        let resp = client.request(req, TIMEOUT).await.expect("commit offset");
        assert_eq!(resp.code, response::SUCCESS, "commit: {:?}", resp.remark);

        // topicStatus: the max offsets add up to what was sent; the table is mqadmin's.
        let ours = admin(ns, &["topicStatus", "-t", TOPIC]);
        let max_sum: i64 = ours
            .lines()
            .skip(1)
            .filter_map(|l| l.split_whitespace().nth(3)?.parse::<i64>().ok())
            .sum();
        assert_eq!(max_sum, i64::from(MESSAGES), "{ours}");
        let theirs = mqadmin(&["topicStatus", "-t", TOPIC]);
        assert_eq!(status_rows(&ours), status_rows(&theirs));

        // queryMsgByKey: every message by the shared key, one by its own; as mqadmin lists them.
        let ours = admin(ns, &["queryMsgByKey", "-t", TOPIC, "-k", SHARED_KEY]);
        for message in &sent {
            assert!(ours.contains(&message.uniq_key), "{ours}");
        }
        assert_eq!(ours.lines().count(), 1 + MESSAGES as usize, "{ours}");
        assert_eq!(
            ours,
            mqadmin(&["queryMsgByKey", "-t", TOPIC, "-k", SHARED_KEY])
        );
        let ours = admin(ns, &["queryMsgByKey", "-t", TOPIC, "-k", "key-3"]);
        assert_eq!(ours.lines().count(), 2, "{ours}");
        assert!(ours.contains(&sent[3].uniq_key), "{ours}");

        // queryMsgById by offsetMsgId and by UNIQ_KEY: the same message, body and keys shown.
        let by_offset_id = admin(ns, &["queryMsgById", "-i", &sent[2].offset_msg_id]);
        assert!(
            by_offset_id.contains("Keys:                [key-2 shared]"),
            "{by_offset_id}"
        );
        assert!(
            by_offset_id.contains("Message Body:        body-2"),
            "{by_offset_id}"
        );
        assert!(by_offset_id.contains(&format!("OffsetID:            {}", sent[2].offset_msg_id)));
        let by_uniq_key = admin(ns, &["queryMsgById", "-t", TOPIC, "-i", &sent[2].uniq_key]);
        assert_eq!(by_uniq_key, by_offset_id);
        let theirs = mqadmin(&["queryMsgById", "-t", TOPIC, "-i", &sent[2].offset_msg_id]);
        assert_eq!(message_fields(&by_offset_id), message_fields(&theirs));
        assert_eq!(message_fields(&by_offset_id).len(), 13);

        // consumerProgress: queue 0 consumed up to 1, so 5 of the 6 are left; as mqadmin.
        let ours = admin(ns, &["consumerProgress", "-g", GROUP]);
        assert!(ours.contains("Consume Diff Total: 5\n"), "{ours}");
        assert_eq!(ours, mqadmin(&["consumerProgress", "-g", GROUP]));
        let ours = admin(ns, &["consumerProgress"]);
        assert!(
            ours.lines()
                .any(|l| l.starts_with(GROUP) && l.contains("V5_3_3")),
            "{ours}"
        );
        assert_eq!(ours, mqadmin(&["consumerProgress"]));

        // consumerConnection: the heartbeat's connection and subscription; as mqadmin.
        let ours = admin(ns, &["consumerConnection", "-g", GROUP]);
        assert!(ours.contains("127.0.0.1@admin-test"), "{ours}");
        assert!(ours.contains("MessageModel: CLUSTERING"), "{ours}");
        assert_eq!(ours, mqadmin(&["consumerConnection", "-g", GROUP]));

        // brokerStatus: the same statistics (values move between the two calls), under the
        // keys Apache 5.3.3's broker answers.
        let keys = |out: &str| -> Vec<String> {
            out.lines()
                .filter_map(|l| l.split_once(':').map(|(k, _)| k.trim().to_owned()))
                .collect()
        };
        let ours = admin(ns, &["brokerStatus", "-b", broker]);
        assert!(ours.contains("brokerVersionDesc"), "{ours}");
        assert_eq!(keys(&ours), keys(&mqadmin(&["brokerStatus", "-b", broker])));
        let key_set: BTreeSet<String> = keys(&ours)
            .into_iter()
            // ringmq also answers Apache 4.9's spelling, for 4.9 mqadmin (broker_requests.rs).
            .filter(|key| key != LEGACY_TRANSFERRED_TPS)
            .map(|key| match key.strip_prefix(DISK_RATIO_PREFIX) {
                Some(_) => format!("{DISK_RATIO_PREFIX}<dir>"),
                None => key,
            })
            .collect();
        assert_eq!(
            key_set,
            APACHE_RUNTIME_INFO_KEYS
                .iter()
                .map(|k| k.to_string())
                .collect::<BTreeSet<_>>()
        );
        drop(client);
    })
    .unwrap();
}
