//! Consumer groups as clients see them: heartbeats, the group's member list, the
//! NOTIFY_CONSUMER_IDS_CHANGED a member gets when the group changes (from whichever shard
//! holds its connection), filtering by the group's subscription on every shard, queue locks
//! and consume stats — against a real `ringmq standalone` with 2 shards.

mod broker_support;

use broker_support::inbox::Inbox;
use broker_support::requests::{call, create_topic, pull, send, update_offset};
use broker_support::Standalone;
use ringmq::client::{block_on, RemotingClient};
use ringmq::protocol::body::consumer_group::GetConsumerListByGroupResponseBody;
use ringmq::protocol::body::heartbeat::{
    ConsumeType, ConsumerData, HeartbeatData, MessageModel, SubscriptionData,
};
use ringmq::protocol::body::lock::{LockBatchRequestBody, LockBatchResponseBody, MessageQueue};
use ringmq::protocol::body::stats::ConsumeStats;
use ringmq::protocol::body::{self};
use ringmq::protocol::codes::{request as code, response};
use ringmq::protocol::command::RemotingCommand;
use ringmq::protocol::header::*;
use ringmq::protocol::message::split_records;
use std::rc::Rc;
use std::time::Duration;

const TOPIC: &str = "GroupTopic";
/// Bound on waiting for a notification (woken by its arrival): 5 s, as the 100 polls of
/// 50 ms this replaced.
const NOTIFY_WAIT: Duration = Duration::from_secs(5);
const GROUP: &str = "G";

/// NOTIFY_CONSUMER_IDS_CHANGED for [`GROUP`] that `inbox` got so far.
fn notifications(inbox: &Inbox) -> usize {
    inbox.count(|r| {
        r.code == code::NOTIFY_CONSUMER_IDS_CHANGED && r.ext("consumerGroup") == Some(GROUP)
    })
}

struct Member {
    id: String,
    client: RemotingClient,
    inbox: Rc<Inbox>,
}

async fn member(addr: &str, id: &str) -> Member {
    let inbox = Rc::new(Inbox::default());
    let client = RemotingClient::connect_with(addr, inbox.clone())
        .await
        .unwrap();
    Member {
        id: id.into(),
        client,
        inbox,
    }
}

fn consumer(group: &str, expression: &str, model: MessageModel) -> ConsumerData {
    ConsumerData {
        group_name: group.into(),
        consume_type: Some(ConsumeType::ConsumePassively),
        message_model: Some(model),
        subscription_data_set: vec![
            SubscriptionData::from_expression(TOPIC, expression, None).unwrap()
        ],
        ..ConsumerData::default()
    }
}

fn heartbeat_of(client_id: &str, consumers: Vec<ConsumerData>) -> RemotingCommand {
    let data = HeartbeatData {
        client_id: client_id.into(),
        consumer_data_set: consumers,
        ..HeartbeatData::default()
    };
    RemotingCommand::request(code::HEART_BEAT).with_body(body::encode(&data).unwrap())
}

fn heartbeat(client_id: &str, expression: &str, model: MessageModel) -> RemotingCommand {
    heartbeat_of(client_id, vec![consumer(GROUP, expression, model)])
}

async fn members(client: &RemotingClient) -> RemotingCommand {
    call(
        client,
        RemotingCommand::request(code::GET_CONSUMER_LIST_BY_GROUP).with_header(
            &ConsumerGroupRequestHeader {
                consumer_group: GROUP.into(),
            },
        ),
    )
    .await
}

/// Waits (bounded) until `inbox` has seen `count` notifications: they are oneway and may
/// trail the response that caused them.
async fn notified(inbox: &Inbox, count: usize) -> bool {
    let enough = |inbox: &Inbox| (notifications(inbox) >= count).then_some(());
    inbox.wait_for(NOTIFY_WAIT, enough).await.is_some()
}

#[test]
fn members_are_listed_and_told_when_the_group_changes() {
    let broker = Standalone::start(2);
    block_on(async {
        // Several connections, so SO_REUSEPORT spreads them over both shards.
        let mut group = Vec::new();
        for i in 0..4 {
            group.push(member(&broker.broker_addr, &format!("client-{i}")).await);
        }
        for (joined, m) in group.iter().enumerate() {
            let resp = call(&m.client, heartbeat(&m.id, "*", MessageModel::Clustering)).await;
            assert_eq!(resp.code, response::SUCCESS, "{:?}", resp.remark);
            // Everyone already in the group is told about the newcomer (and the newcomer too).
            for earlier in &group[..=joined] {
                assert!(
                    notified(
                        &earlier.inbox,
                        joined + 1 - group.iter().position(|g| g.id == earlier.id).unwrap()
                    )
                    .await
                );
            }
        }
        let listed: GetConsumerListByGroupResponseBody =
            body::decode(&members(&group[0].client).await.body).unwrap();
        let mut ids = listed.consumer_id_list.clone();
        ids.sort();
        assert_eq!(ids, ["client-0", "client-1", "client-2", "client-3"]);

        // A heartbeat that changes nothing notifies nobody.
        let before: Vec<usize> = group.iter().map(|m| notifications(&m.inbox)).collect();
        call(
            &group[1].client,
            heartbeat("client-1", "*", MessageModel::Clustering),
        )
        .await;
        glommio::timer::Timer::new(Duration::from_millis(300)).await;
        let after: Vec<usize> = group.iter().map(|m| notifications(&m.inbox)).collect();
        assert_eq!(before, after);

        // Leaving by UNREGISTER_CLIENT, and by closing the connection.
        let unregister = RemotingCommand::request(code::UNREGISTER_CLIENT).with_header(
            &UnregisterClientRequestHeader {
                client_id: "client-3".into(),
                producer_group: None,
                consumer_group: Some(GROUP.into()),
            },
        );
        assert_eq!(
            call(&group[3].client, unregister).await.code,
            response::SUCCESS
        );
        assert!(notified(&group[0].inbox, after[0] + 1).await);
        let gone = group.remove(2);
        drop(gone);
        assert!(notified(&group[0].inbox, after[0] + 2).await);
        let listed: GetConsumerListByGroupResponseBody =
            body::decode(&members(&group[0].client).await.body).unwrap();
        let mut ids = listed.consumer_id_list;
        ids.sort();
        assert_eq!(ids, ["client-0", "client-1"]);
    })
    .unwrap();
}

/// Regression (found by the C++ rows of the compatibility matrix): the C++ clients accept any
/// consumer group name, e.g. `app.consumer`, which TopicValidator rejects. A heartbeat carrying
/// one failed whole with SYSTEM_ERROR, so the client's other groups were never registered;
/// Apache answers SUCCESS and registers them (5.x skips the illegal group, 4.9 keeps it too).
#[test]
fn a_heartbeat_with_an_illegal_group_name_still_registers_the_clients_other_groups() {
    let broker = Standalone::start(2);
    block_on(async {
        let client = RemotingClient::connect(&broker.broker_addr).await.unwrap();
        let beat = heartbeat_of(
            "cpp-client",
            vec![
                consumer("app.consumer", "*", MessageModel::Clustering),
                consumer(GROUP, "*", MessageModel::Clustering),
            ],
        );
        let resp = call(&client, beat).await;
        assert_eq!(resp.code, response::SUCCESS, "{:?}", resp.remark);
        let listed = members(&client).await;
        assert_eq!(listed.code, response::SUCCESS, "{:?}", listed.remark);
        let listed: GetConsumerListByGroupResponseBody = body::decode(&listed.body).unwrap();
        assert_eq!(listed.consumer_id_list, ["cpp-client"]);
    })
    .unwrap();
}

#[test]
fn pulls_on_every_shard_filter_by_the_groups_heartbeat_subscription() {
    let broker = Standalone::start(2);
    block_on(async {
        let m = member(&broker.broker_addr, "filtering-client").await;
        let created = call(&m.client, create_topic(TOPIC, 4)).await;
        assert_eq!(created.code, response::SUCCESS);
        assert_eq!(
            call(
                &m.client,
                heartbeat(&m.id, "TagA || TagC", MessageModel::Clustering)
            )
            .await
            .code,
            response::SUCCESS
        );
        for queue in 0..4 {
            for tag in ["TagA", "TagB", "TagC"] {
                let sent = call(&m.client, send(TOPIC, queue, b"x", &[("TAGS", tag)])).await;
                assert_eq!(sent.code, response::SUCCESS);
            }
        }
        for queue in 0..4 {
            // No subscription flag: the broker uses the group's subscription from the heartbeat,
            // which every shard holds in its snapshot.
            let got = call(&m.client, pull(GROUP, TOPIC, queue, 0, None, 0)).await;
            assert_eq!(got.code, response::SUCCESS, "{:?}", got.remark);
            let tags: Vec<String> = split_records(got.body.clone())
                .map(|r| r.unwrap().property("TAGS").unwrap().to_owned())
                .collect();
            assert_eq!(tags, ["TagA", "TagC"], "queue {queue}");
        }
        // An unknown group has no subscription: SUBSCRIPTION_NOT_EXIST, as Java answers.
        let unknown = pull("nobody", TOPIC, 0, 0, None, 0);
        assert_eq!(
            call(&m.client, unknown).await.code,
            response::SUBSCRIPTION_NOT_EXIST
        );

        // Consume stats cover the queues of both shards.
        for queue in 0..4 {
            let update = update_offset(GROUP, TOPIC, queue, 1);
            assert_eq!(call(&m.client, update).await.code, response::SUCCESS);
        }
        let stats = call(
            &m.client,
            RemotingCommand::request(code::GET_CONSUME_STATS).with_header(
                &GetConsumeStatsRequestHeader {
                    consumer_group: GROUP.into(),
                    topic: Some(TOPIC.into()),
                    topic_list: None,
                },
            ),
        )
        .await;
        assert_eq!(stats.code, response::SUCCESS, "{:?}", stats.remark);
        let stats: ConsumeStats = body::decode(&stats.body).unwrap();
        assert_eq!(stats.offset_table.len(), 4);
        assert!(stats
            .offset_table
            .values()
            .all(|o| (o.broker_offset, o.consumer_offset) == (3, 1)));
        assert_eq!(stats.total_diff(), 8);
    })
    .unwrap();
}

#[test]
fn a_locked_queue_belongs_to_one_client_until_it_unlocks() {
    let broker = Standalone::start(2);
    block_on(async {
        let a = member(&broker.broker_addr, "locker-a").await;
        let b = member(&broker.broker_addr, "locker-b").await;
        let queues: Vec<MessageQueue> = (0..4)
            .map(|q| MessageQueue::new(TOPIC, "broker-a", q))
            .collect();
        let lock = |client: &str, code_: i32| {
            let body = LockBatchRequestBody {
                consumer_group: GROUP.into(),
                client_id: client.into(),
                mq_set: queues.clone(),
                only_this_broker: false,
            };
            RemotingCommand::request(code_).with_body(body::encode(&body).unwrap())
        };
        let locked = |resp: RemotingCommand| {
            assert_eq!(resp.code, response::SUCCESS, "{:?}", resp.remark);
            body::decode::<LockBatchResponseBody>(&resp.body)
                .unwrap()
                .lock_ok_mq_set
                .len()
        };
        assert_eq!(
            locked(call(&a.client, lock("locker-a", code::LOCK_BATCH_MQ)).await),
            4
        );
        assert_eq!(
            locked(call(&b.client, lock("locker-b", code::LOCK_BATCH_MQ)).await),
            0
        );
        // Re-locking by the holder renews.
        assert_eq!(
            locked(call(&a.client, lock("locker-a", code::LOCK_BATCH_MQ)).await),
            4
        );
        assert_eq!(
            call(&a.client, lock("locker-a", code::UNLOCK_BATCH_MQ))
                .await
                .code,
            response::SUCCESS
        );
        assert_eq!(
            locked(call(&b.client, lock("locker-b", code::LOCK_BATCH_MQ)).await),
            4
        );
    })
    .unwrap();
}

#[test]
fn topic_consume_by_who_lists_online_groups_and_groups_with_offsets() {
    // What mqadmin queryMsgById asks to track a message through its consumer groups.
    let broker = Standalone::start(2);
    block_on(async {
        let m = member(&broker.broker_addr, "client-1").await;
        let by_who = |topic: &str| {
            RemotingCommand::request(code::QUERY_TOPIC_CONSUME_BY_WHO).with_header(
                &TopicRequestHeader {
                    topic: topic.into(),
                },
            )
        };
        let groups = |resp: RemotingCommand| -> serde_json::Value {
            assert_eq!(resp.code, response::SUCCESS, "{:?}", resp.remark);
            serde_json::from_slice::<serde_json::Value>(&resp.body).unwrap()["groupList"].clone()
        };
        assert_eq!(
            groups(call(&m.client, by_who(TOPIC)).await),
            serde_json::json!([])
        );
        let resp = call(&m.client, heartbeat(&m.id, "*", MessageModel::Clustering)).await;
        assert_eq!(resp.code, response::SUCCESS);
        // Asked on a second connection too, which may sit on the other shard.
        let other = member(&broker.broker_addr, "client-2").await;
        for client in [&m.client, &other.client] {
            assert_eq!(
                groups(call(client, by_who(TOPIC)).await),
                serde_json::json!([GROUP])
            );
            assert_eq!(
                groups(call(client, by_who("Other")).await),
                serde_json::json!([])
            );
        }
        // A group with committed offsets but no consumer online counts too (Java's
        // whichGroupByTopic), wherever its queues' shards are.
        assert_eq!(
            call(&m.client, create_topic(TOPIC, 4)).await.code,
            response::SUCCESS
        );
        for queue in 0..4 {
            let update = update_offset("Offline", TOPIC, queue, 1);
            assert_eq!(call(&m.client, update).await.code, response::SUCCESS);
        }
        assert_eq!(
            groups(call(&other.client, by_who(TOPIC)).await),
            serde_json::json!([GROUP, "Offline"])
        );
    })
    .unwrap();
}
