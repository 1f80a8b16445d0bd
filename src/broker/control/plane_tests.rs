//! The plane's answers and effects, on real tables in a temporary directory.

use super::*;
use crate::broker::config::BrokerConfig;
use crate::client::block_on;
use crate::persist::test_dir;
use crate::protocol::body::heartbeat::{
    ConsumeFromWhere, ConsumeType, ConsumerData, ProducerData, SubscriptionData,
};
use crate::protocol::command::LanguageCode;

const T0: i64 = 1_700_000_000_000;

fn plane(name: &str) -> ControlPlane {
    let dir = test_dir(name);
    let config = BrokerConfig::for_tests();
    let topics = TopicTable::open(&dir, &config).unwrap();
    let groups = SubscriptionGroupTable::open(&dir, &config).unwrap();
    ControlPlane::new(topics, groups)
}

fn client(shard: usize, connection: u64) -> ClientOrigin {
    ClientOrigin {
        shard,
        connection: ConnectionId(connection),
        peer: "10.0.0.5:53412".parse().unwrap(),
        language: LanguageCode::Java,
        version: 479,
    }
}

fn heartbeat(client_id: &str, group: &str, topic: &str) -> HeartbeatData {
    let subscription = SubscriptionData::from_expression(topic, "*", None).unwrap();
    HeartbeatData {
        client_id: client_id.to_owned(),
        consumer_data_set: vec![ConsumerData {
            consume_from_where: Some(ConsumeFromWhere::ConsumeFromLastOffset),
            consume_type: Some(ConsumeType::ConsumePassively),
            group_name: group.to_owned(),
            message_model: Some(MessageModel::Clustering),
            subscription_data_set: vec![subscription],
            unit_mode: false,
        }],
        ..HeartbeatData::default()
    }
}

#[test]
fn a_first_heartbeat_publishes_registers_its_retry_topic_and_notifies_its_group() {
    block_on(async {
        let mut plane = plane("plane-heartbeat");
        let first = plane
            .heartbeat(client(1, 7), heartbeat("c1", "G", "T"), T0)
            .await;
        assert!(first.answer.is_ok());
        let snapshot = first.effects.publish.expect("a new group is published");
        assert_eq!(snapshot.version, 2);
        assert!(snapshot.subscription("G", "T").is_some());
        assert!(snapshot.topics.get("%RETRY%G").is_some());
        let registered = first
            .effects
            .register
            .expect("the retry topic is registered");
        assert!(registered.topic_config_table.contains_key("%RETRY%G"));
        let expected = IdsChanged {
            shard: 1,
            connection: ConnectionId(7),
            group: "G".into(),
        };
        assert_eq!(first.effects.notify, [expected]);

        let again = plane
            .heartbeat(client(1, 7), heartbeat("c1", "G", "T"), T0 + 1)
            .await;
        assert!(again.answer.is_ok());
        assert!(again.effects.publish.is_none() && again.effects.register.is_none());
        assert!(again.effects.notify.is_empty());
    })
    .unwrap();
}

#[test]
fn a_closed_connection_notifies_the_members_left_without_publishing() {
    block_on(async {
        let mut plane = plane("plane-closed");
        plane
            .heartbeat(client(0, 1), heartbeat("c1", "G", "T"), T0)
            .await;
        plane
            .heartbeat(client(1, 2), heartbeat("c2", "G", "T"), T0)
            .await;
        let effects = plane.connection_closed(ConnectionId(1));
        assert!(effects.publish.is_none());
        let left: Vec<_> = effects
            .notify
            .iter()
            .map(|n| (n.shard, n.connection))
            .collect();
        assert_eq!(left, [(1, ConnectionId(2))]);
        assert_eq!(plane.consumer_ids("G").unwrap(), ["c2"]);
    })
    .unwrap();
}

#[test]
fn a_refused_change_has_no_effects_and_keeps_the_version() {
    block_on(async {
        let mut plane = plane("plane-refused");
        let refused = plane
            .upsert_topic(TopicConfig::new("bad name", 4), T0)
            .await;
        assert!(refused.answer.is_err());
        assert!(refused.effects.publish.is_none() && refused.effects.register.is_none());
        let no_template = plane
            .create_topic_for_send("New", "NoSuchTemplate", 4, T0)
            .await;
        assert!(matches!(no_template.answer, Ok(None)));
        assert!(no_template.effects.publish.is_none());

        let created = plane.create_topic_for_send("New", "TBW102", 4, T0).await;
        let config = created.answer.unwrap().expect("TBW102 lets topics inherit");
        assert_eq!(config.topic_name, "New");
        assert_eq!(created.effects.publish.expect("published").version, 2);
        assert!(created.effects.register.is_some());
        assert!(plane.snapshot().topics.get("New").is_some());
    })
    .unwrap();
}

#[test]
fn consumer_lists_answer_from_the_tables_and_follow_unregister() {
    block_on(async {
        let mut plane = plane("plane-lists");
        assert!(plane.consumer_ids("G").is_err());
        assert!(matches!(
            plane.consumer_connection("G"),
            Err(BrokerError::ConsumerNotOnline(_))
        ));
        plane
            .heartbeat(client(0, 1), heartbeat("c1", "G", "T"), T0)
            .await;
        assert_eq!(
            plane.consumer_connection("G").unwrap().connection_set.len(),
            1
        );
        let groups = ClientGroups {
            consumer: Some("G"),
            producer: None,
        };
        let unregistered = plane.unregister_client(groups, "c1");
        assert!(unregistered.answer.is_ok());
        assert!(plane.consumer_ids("G").is_err());
    })
    .unwrap();
}

#[test]
fn deleting_a_topic_unregisters_it_and_has_every_shard_drop_its_data() {
    block_on(async {
        let mut plane = plane("plane-delete-topic");
        let created = plane.upsert_topic(TopicConfig::new("Doomed", 4), T0).await;
        assert!(created.answer.is_ok() && created.effects.drop_topic.is_none());
        let deleted = plane.delete_topic("Doomed", T0 + 1).await;
        assert!(deleted.answer.is_ok());
        assert_eq!(deleted.effects.drop_topic.as_deref(), Some("Doomed"));
        let snapshot = deleted
            .effects
            .publish
            .expect("published without the topic");
        assert!(snapshot.topics.get("Doomed").is_none());
        let registered = deleted.effects.register.expect("registered without it");
        assert!(!registered.topic_config_table.contains_key("Doomed"));
        // Data of a topic whose configuration is already gone is dropped all the same.
        let again = plane.delete_topic("Doomed", T0 + 2).await;
        assert_eq!(again.effects.drop_topic.as_deref(), Some("Doomed"));
        // A system topic is refused, and nothing is dropped.
        let system = plane.delete_topic("SCHEDULE_TOPIC_XXXX", T0 + 3).await;
        assert!(system.answer.is_err() && system.effects.drop_topic.is_none());
    })
    .unwrap();
}

fn producer_heartbeat(client_id: &str, group: &str) -> HeartbeatData {
    HeartbeatData {
        client_id: client_id.to_owned(),
        producer_data_set: vec![
            ProducerData {
                group_name: group.to_owned(),
            },
            ProducerData {
                group_name: "CLIENT_INNER_PRODUCER".to_owned(),
            },
        ],
        ..HeartbeatData::default()
    }
}

#[test]
fn producer_heartbeats_give_transaction_checks_a_live_member_in_turn() {
    block_on(async {
        let mut plane = plane("plane-producers");
        assert_eq!(plane.producer_channel("P"), None);
        let first = plane
            .heartbeat(client(1, 7), producer_heartbeat("p1", "P"), T0)
            .await;
        assert!(first.answer.is_ok());
        assert!(
            first.effects.publish.is_none(),
            "producers are not in the shards' snapshot"
        );
        plane
            .heartbeat(client(0, 8), producer_heartbeat("p2", "P"), T0)
            .await;
        let turns: Vec<_> = (0..4)
            .map(|_| plane.producer_channel("P").unwrap().connection)
            .collect();
        assert_eq!(turns.iter().filter(|c| **c == ConnectionId(7)).count(), 2);
        assert_eq!(turns.iter().filter(|c| **c == ConnectionId(8)).count(), 2);
        // UNREGISTER_CLIENT with the producer group, and a closed connection, take them out.
        let groups = ClientGroups {
            consumer: None,
            producer: Some("P"),
        };
        assert!(plane.unregister_client(groups, "p1").answer.is_ok());
        let left = plane.producer_channel("P").unwrap();
        assert_eq!((left.shard, left.connection), (0, ConnectionId(8)));
        plane.connection_closed(ConnectionId(8));
        assert_eq!(plane.producer_channel("P"), None);
    })
    .unwrap();
}
