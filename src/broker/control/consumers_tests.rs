use super::*;
use crate::protocol::body::encode;

const T0: i64 = 1_700_000_000_000;

fn channel(client_id: &str, connection: u64, now_ms: i64) -> ClientChannel {
    ClientChannel {
        shard: 1,
        connection: ConnectionId(connection),
        client_id: client_id.to_string(),
        client_addr: "10.0.0.5:53412".into(),
        language: LanguageCode::Java,
        version: 479,
        last_update_ms: now_ms,
    }
}

fn subscription(topic: &str, expression: &str, sub_version: i64) -> SubscriptionData {
    let mut sub = SubscriptionData::from_expression(topic, expression, None).unwrap();
    sub.sub_version = sub_version;
    sub
}

fn push_consumer(group: &str, subs: Vec<SubscriptionData>) -> ConsumerData {
    ConsumerData {
        consume_from_where: Some(ConsumeFromWhere::ConsumeFromLastOffset),
        consume_type: Some(ConsumeType::ConsumePassively),
        group_name: group.to_string(),
        message_model: Some(MessageModel::Clustering),
        subscription_data_set: subs,
        unit_mode: false,
    }
}

fn g1() -> ConsumerData {
    push_consumer("G1", vec![subscription("T", "TagA", T0)])
}

const NOTHING: Registered = Registered {
    ids_changed: false,
    subscriptions_changed: false,
    snapshot_changed: false,
    sub_change: false,
};

#[test]
fn a_first_heartbeat_joins_and_an_identical_one_changes_nothing() {
    let mut groups = ConsumerGroups::new();
    let first = groups.register(channel("c1", 1, T0), &g1(), None).unwrap();
    assert_eq!(
        first,
        Registered {
            ids_changed: true,
            subscriptions_changed: true,
            snapshot_changed: true,
            sub_change: false,
        }
    );
    assert_eq!(groups.client_ids("G1"), ["c1"]);
    assert_eq!(groups.subscription("G1", "T").unwrap().code_set, [2598919]);
    let version = groups.snapshot_version();
    let again = groups
        .register(channel("c1", 1, T0 + 30_000), &g1(), None)
        .unwrap();
    assert_eq!(again, NOTHING);
    assert_eq!(groups.snapshot_version(), version);
    // The heartbeat refreshed the member.
    assert_eq!(
        groups.channels("G1").next().unwrap().last_update_ms,
        T0 + 30_000
    );
}

#[test]
fn a_second_member_changes_the_ids_but_not_the_subscriptions() {
    let mut groups = ConsumerGroups::new();
    groups.register(channel("c1", 1, T0), &g1(), None).unwrap();
    let second = groups.register(channel("c2", 2, T0), &g1(), None).unwrap();
    assert_eq!(
        second,
        Registered {
            ids_changed: true,
            ..NOTHING
        }
    );
    assert_eq!(groups.client_ids("G1"), ["c1", "c2"]);
    assert!(groups.client_ids("unknown").is_empty());
}

#[test]
fn subscriptions_are_replaced_only_by_newer_versions_and_follow_the_topic_set() {
    let mut groups = ConsumerGroups::new();
    groups.register(channel("c1", 1, T0), &g1(), None).unwrap();
    // Older version: ignored.
    let older = push_consumer("G1", vec![subscription("T", "TagB", T0 - 1)]);
    assert_eq!(
        groups.register(channel("c1", 1, T0), &older, None).unwrap(),
        NOTHING
    );
    assert_eq!(groups.subscription("G1", "T").unwrap().sub_string, "TagA");
    // Newer version: replaced; the topic set is the same, so no member needs telling, but
    // the shards need the new subVersion.
    let newer = push_consumer("G1", vec![subscription("T", "TagB", T0 + 1)]);
    assert_eq!(
        groups.register(channel("c1", 1, T0), &newer, None).unwrap(),
        Registered {
            snapshot_changed: true,
            ..NOTHING
        }
    );
    assert_eq!(groups.subscription("G1", "T").unwrap().code_set, [2598920]);
    // A topic added and one dropped.
    let moved = push_consumer("G1", vec![subscription("U", "*", T0 + 2)]);
    let registered = groups.register(channel("c1", 1, T0), &moved, None).unwrap();
    assert!(registered.subscriptions_changed && registered.snapshot_changed);
    assert!(groups.subscription("G1", "T").is_none());
    assert!(groups.subscription("G1", "U").is_some());
}

#[test]
fn unregister_removes_the_member_and_the_last_one_takes_the_group_away() {
    let mut groups = ConsumerGroups::new();
    groups.register(channel("c1", 1, T0), &g1(), None).unwrap();
    groups.register(channel("c2", 2, T0), &g1(), None).unwrap();
    assert!(groups.unregister("G1", "c1"));
    assert!(!groups.unregister("G1", "c1"));
    assert!(!groups.unregister("G9", "c2"));
    assert_eq!(groups.client_ids("G1"), ["c2"]);
    let version = groups.snapshot_version();
    assert!(groups.unregister("G1", "c2"));
    assert!(groups.group("G1").is_none());
    assert!(groups.subscription("G1", "T").is_none());
    assert!(groups.connection("G1").is_none());
    assert!(groups.snapshot_version() > version);
}

#[test]
fn a_closed_connection_leaves_every_group_but_not_after_a_reconnect() {
    let mut groups = ConsumerGroups::new();
    groups.register(channel("c1", 1, T0), &g1(), None).unwrap();
    groups
        .register(channel("c1", 1, T0), &push_consumer("G2", vec![]), None)
        .unwrap();
    groups.register(channel("c2", 2, T0), &g1(), None).unwrap();
    groups
        .register_producer("PG", channel("c1", 1, T0))
        .unwrap();
    assert_eq!(groups.connection_closed(ConnectionId(1)), ["G1", "G2"]);
    assert_eq!(groups.client_ids("G1"), ["c2"]);
    assert!(groups.group("G2").is_none());
    assert!(groups.producer_connection("PG").is_none());
    assert!(groups.connection_closed(ConnectionId(1)).is_empty());

    // c2 reconnects (connection 3) and heartbeats before the close of connection 2 is seen.
    let moved = groups.register(channel("c2", 3, T0), &g1(), None).unwrap();
    assert!(!moved.ids_changed);
    assert!(groups.connection_closed(ConnectionId(2)).is_empty());
    assert_eq!(groups.client_ids("G1"), ["c2"]);
    assert_eq!(
        groups.channels("G1").next().unwrap().connection,
        ConnectionId(3)
    );
}

#[test]
fn a_producer_client_is_found_by_its_id_on_its_newest_connection() {
    let mut groups = ConsumerGroups::new();
    assert!(groups.producer_by_client_id("c1").is_none());
    let producers = [
        ("PG", "c1", 1, T0),
        ("CLIENT_INNER_PRODUCER", "c1", 4, T0 + 1_000),
        ("PG", "c2", 2, T0),
    ];
    for (group, client_id, connection, at) in producers {
        let member = channel(client_id, connection, at);
        groups.register_producer(group, member).unwrap();
    }
    // A consumer heartbeat does not make a producer: the requester of a reply is a producer.
    groups.register(channel("c3", 3, T0), &g1(), None).unwrap();
    let found = groups.producer_by_client_id("c1").unwrap();
    assert_eq!(found.connection, ConnectionId(4));
    assert_eq!(
        groups.producer_by_client_id("c2").unwrap().connection,
        ConnectionId(2)
    );
    assert!(groups.producer_by_client_id("c3").is_none());
    groups.connection_closed(ConnectionId(4));
    assert_eq!(
        groups.producer_by_client_id("c1").unwrap().connection,
        ConnectionId(1)
    );
    groups.connection_closed(ConnectionId(1));
    assert!(groups.producer_by_client_id("c1").is_none());
}

#[test]
fn members_silent_for_more_than_120_seconds_expire() {
    let mut groups = ConsumerGroups::new();
    groups.register(channel("c1", 1, T0), &g1(), None).unwrap();
    groups
        .register(channel("c1", 1, T0), &push_consumer("G2", vec![]), None)
        .unwrap();
    groups
        .register(channel("c2", 2, T0 + 60_000), &g1(), None)
        .unwrap();
    groups
        .register_producer("PG", channel("c1", 1, T0))
        .unwrap();
    groups
        .register_producer("PG", channel("c3", 3, T0 + 60_000))
        .unwrap();

    assert_eq!(groups.expire(T0 + CHANNEL_EXPIRED_MS), Expired::default());
    let expired = groups.expire(T0 + CHANNEL_EXPIRED_MS + 1);
    assert_eq!(expired.groups, ["G1", "G2"]);
    // c1 was in two consumer groups and a producer group over one connection: closed once.
    assert_eq!(expired.channels.len(), 1);
    assert_eq!(expired.channels[0].connection, ConnectionId(1));
    assert_eq!(groups.client_ids("G1"), ["c2"]);
    assert!(groups.group("G2").is_none());
    let producers: Vec<&str> = groups
        .producer_channels("PG")
        .map(|c| c.client_id.as_str())
        .collect();
    assert_eq!(producers, ["c3"]);

    let rest = groups.expire(T0 + 60_000 + CHANNEL_EXPIRED_MS + 1);
    assert_eq!(rest.groups, ["G1"]);
    assert_eq!(rest.channels.len(), 2);
    assert!(groups.group("G1").is_none());
    assert!(groups.producer_connection("PG").is_none());
}

#[test]
fn heartbeat_v2_keeps_subscriptions_and_asks_for_them_when_the_broker_has_none() {
    let mut groups = ConsumerGroups::new();
    let bare = push_consumer("G1", vec![]);
    let without_sub = |fingerprint| {
        Some(HeartbeatV2 {
            fingerprint,
            without_sub: true,
        })
    };
    // A broker that never saw the subscriptions (e.g. restarted) asks for them.
    let first = groups
        .register(channel("c1", 1, T0), &bare, without_sub(7))
        .unwrap();
    assert!(first.ids_changed && first.sub_change);
    assert!(groups.group("G1").unwrap().subscriptions().is_empty());

    let full = Some(HeartbeatV2 {
        fingerprint: 7,
        without_sub: false,
    });
    let sent = groups.register(channel("c1", 1, T0), &g1(), full).unwrap();
    assert!(sent.subscriptions_changed && !sent.sub_change);
    // Same fingerprint without subscriptions: keep them, nothing to ask.
    let kept = groups
        .register(channel("c1", 1, T0), &bare, without_sub(7))
        .unwrap();
    assert_eq!(kept, NOTHING);
    assert!(groups.subscription("G1", "T").is_some());
    // Another member with another fingerprint: the subscriptions differ, ask again.
    let other = groups
        .register(channel("c2", 2, T0), &bare, without_sub(8))
        .unwrap();
    assert!(other.ids_changed && other.sub_change);
    assert!(groups.subscription("G1", "T").is_some());
    // V1 heartbeats never carry sub_change.
    let v1 = groups.register(channel("c1", 1, T0), &g1(), None).unwrap();
    assert!(!v1.sub_change);
}

#[test]
fn stored_tag_codes_are_rebuilt_from_the_tags() {
    let mut groups = ConsumerGroups::new();
    let mut cpp = subscription("T", "TagA || TagB", T0);
    cpp.code_set = vec![0, 0];
    groups
        .register(channel("c1", 1, T0), &push_consumer("G1", vec![cpp]), None)
        .unwrap();
    let stored = groups.subscription("G1", "T").unwrap();
    assert_eq!(stored.code_set, [2598919, 2598920]);
    assert!(!stored.matches_tag_code(0));
}

/// End to end: a heartbeat registered, then listed as a Java broker lists it.
#[test]
fn lists_the_group_as_java_does_for_mqadmin() {
    const JAVA: &str =
        include_str!("../../../tests/vectors/java/consumers/consumer_connection.json");
    const PRODUCERS: &str =
        include_str!("../../../tests/vectors/java/consumers/producer_connection.json");
    let mut groups = ConsumerGroups::new();
    groups
        .register(channel("10.0.0.5@capture", 1, T0), &g1(), None)
        .unwrap();
    groups
        .register_producer("PG", channel("10.0.0.5@capture", 1, T0))
        .unwrap();
    assert_eq!(
        encode(&groups.connection("G1").unwrap()).unwrap(),
        JAVA.as_bytes()
    );
    assert_eq!(
        encode(&groups.producer_connection("PG").unwrap()).unwrap(),
        PRODUCERS.as_bytes()
    );
    assert!(groups.unregister_producer("PG", "10.0.0.5@capture"));
    assert!(groups.producer_connection("PG").is_none());
}

#[test]
fn snapshots_carry_the_subscriptions_and_a_growing_version() {
    fn assert_send_clone<T: Send + Clone>() {}
    assert_send_clone::<SubscriptionSnapshot>();

    let mut groups = ConsumerGroups::new();
    let empty = groups.snapshot();
    groups.register(channel("c1", 1, T0), &g1(), None).unwrap();
    let first = groups.snapshot();
    assert!(first.is_newer_than(&empty));
    assert!(!empty.is_newer_than(&first));
    assert_eq!(first.subscription("G1", "T").unwrap().sub_string, "TagA");
    assert_eq!(
        first.group("G1").unwrap().message_model,
        Some(MessageModel::Clustering)
    );
    assert!(first.subscription("G1", "U").is_none());
    // A new member alone does not change what the shards need.
    groups.register(channel("c2", 2, T0), &g1(), None).unwrap();
    assert!(!groups.snapshot().is_newer_than(&first));
    // A switch to broadcasting does.
    let broadcast = ConsumerData {
        message_model: Some(MessageModel::Broadcasting),
        ..g1()
    };
    let registered = groups
        .register(channel("c2", 2, T0), &broadcast, None)
        .unwrap();
    assert!(registered.snapshot_changed);
    assert!(groups.snapshot().is_newer_than(&first));
}

#[test]
fn bad_heartbeats_are_refused_with_typed_errors_and_leave_no_trace() {
    let mut groups = ConsumerGroups::new();
    assert_eq!(
        groups.register(channel("c1", 1, T0), &push_consumer("", vec![]), None),
        Err(ConsumersError::EmptyGroup)
    );
    assert_eq!(
        groups.register(channel("", 1, T0), &g1(), None),
        Err(ConsumersError::EmptyClientId)
    );
    let many: Vec<SubscriptionData> = (0..=SUBSCRIPTIONS_PER_CLIENT_MAX)
        .map(|i| subscription(&format!("T{i}"), "*", T0))
        .collect();
    assert_eq!(
        groups.register(channel("c1", 1, T0), &push_consumer("G1", many), None),
        Err(ConsumersError::TooManySubscriptions {
            group: "G1".into(),
            count: SUBSCRIPTIONS_PER_CLIENT_MAX + 1
        })
    );
    assert!(groups.group("G1").is_none());
    assert_eq!(groups.snapshot_version(), 0);
    assert_eq!(
        groups.register_producer("", channel("c1", 1, T0)),
        Err(ConsumersError::EmptyGroup)
    );
}

#[test]
fn groups_and_members_are_bounded() {
    let mut groups = ConsumerGroups::new();
    for g in 0..CONSUMER_GROUPS_MAX {
        let data = push_consumer(&format!("G{g}"), vec![]);
        groups.register(channel("c", 1, T0), &data, None).unwrap();
    }
    let late = push_consumer("late", vec![]);
    assert_eq!(
        groups.register(channel("c", 1, T0), &late, None),
        Err(ConsumersError::TooManyConsumerGroups)
    );
    // Known groups still take heartbeats.
    let known = push_consumer("G0", vec![]);
    assert_eq!(
        groups.register(channel("c", 1, T0), &known, None),
        Ok(NOTHING)
    );

    let mut crowd = ConsumerGroups::new();
    for c in 0..CLIENTS_PER_GROUP_MAX {
        crowd
            .register(channel(&format!("c{c}"), c as u64, T0), &g1(), None)
            .unwrap();
        crowd
            .register_producer("PG", channel(&format!("c{c}"), c as u64, T0))
            .unwrap();
    }
    let full = Err(ConsumersError::TooManyClients { group: "G1".into() });
    assert_eq!(
        crowd.register(channel("one-more", 0, T0), &g1(), None),
        full
    );
    assert_eq!(
        crowd.register_producer("PG", channel("one-more", 0, T0)),
        Err(ConsumersError::TooManyClients { group: "PG".into() })
    );
    // A refused new group is not left behind empty.
    let mut one = ConsumerGroups::new();
    for g in 0..PRODUCER_GROUPS_MAX {
        one.register_producer(&format!("P{g}"), channel("c", 1, T0))
            .unwrap();
    }
    assert_eq!(
        one.register_producer("late", channel("c", 1, T0)),
        Err(ConsumersError::TooManyProducerGroups)
    );
}

#[test]
fn a_held_snapshot_never_changes_and_unchanged_groups_are_shared_not_copied() {
    let mut groups = ConsumerGroups::new();
    groups.register(channel("c1", 1, T0), &g1(), None).unwrap();
    let other = push_consumer("G2", vec![subscription("U", "*", T0)]);
    groups.register(channel("c1", 1, T0), &other, None).unwrap();
    let held = groups.snapshot();

    let newer = push_consumer("G1", vec![subscription("T", "TagB", T0 + 1)]);
    groups.register(channel("c1", 1, T0), &newer, None).unwrap();
    // Heartbeats that change nothing leave the view alone.
    groups.register(channel("c1", 1, T0), &other, None).unwrap();
    let fresh = groups.snapshot();

    assert_eq!(held.subscription("G1", "T").unwrap().sub_string, "TagA");
    assert_eq!(fresh.subscription("G1", "T").unwrap().sub_string, "TagB");
    assert!(!Arc::ptr_eq(&held.groups["G1"], &fresh.groups["G1"]));
    assert!(Arc::ptr_eq(&held.groups["G2"], &fresh.groups["G2"]));
}

#[test]
fn finds_a_member_by_client_id_and_the_groups_of_a_topic() {
    let mut groups = ConsumerGroups::new();
    groups.register(channel("c1", 1, T0), &g1(), None).unwrap();
    groups.register(channel("c2", 2, T0), &g1(), None).unwrap();
    let both = push_consumer(
        "G0",
        vec![subscription("T", "*", T0), subscription("U", "*", T0)],
    );
    groups.register(channel("c3", 3, T0), &both, None).unwrap();
    assert_eq!(
        groups.channel("G1", "c2").unwrap().connection,
        ConnectionId(2)
    );
    assert!(groups.channel("G1", "c3").is_none());
    assert!(groups.channel("G9", "c1").is_none());
    assert_eq!(groups.groups_consuming("T"), ["G0", "G1"]);
    assert_eq!(groups.groups_consuming("U"), ["G0"]);
    assert!(groups.groups_consuming("V").is_empty());
}

/// One step of the randomized model test below.
#[derive(Debug, Clone)]
enum Step {
    /// client, connection, group, topics (index into TOPICS) with versions, broadcasting,
    /// V2 without subscriptions.
    Register {
        client: u8,
        connection: u8,
        group: u8,
        subs: Vec<(u8, u8)>,
        broadcasting: bool,
        without_sub: bool,
    },
    Unregister {
        client: u8,
        group: u8,
    },
    Close {
        connection: u8,
    },
    /// Advance the clock by this many seconds and expire.
    Expire {
        seconds: u8,
    },
}

const TOPICS: [&str; 3] = ["T", "U", "%RETRY%G"];

fn step() -> impl proptest::strategy::Strategy<Value = Step> {
    use proptest::prelude::*;
    prop_oneof![
        4 => (0..4u8, 0..4u8, 0..3u8, proptest::collection::vec((0..3u8, 0..3u8), 0..3), any::<bool>(), any::<bool>())
            .prop_map(|(client, connection, group, subs, broadcasting, without_sub)| Step::Register {
                client, connection, group, subs, broadcasting, without_sub
            }),
        1 => (0..4u8, 0..3u8).prop_map(|(client, group)| Step::Unregister { client, group }),
        1 => (0..4u8).prop_map(|connection| Step::Close { connection }),
        1 => (0..200u8).prop_map(|seconds| Step::Expire { seconds }),
    ]
}

proptest::proptest! {
    /// Whatever the order of heartbeats, leaves, closes and expiries: no group is left
    /// without members, every change of what the shards read bumps the snapshot version
    /// (shards drop snapshots that are not newer), and the snapshot always equals the table.
    #[test]
    fn every_change_the_shards_see_bumps_the_snapshot_version(
        steps in proptest::collection::vec(step(), 1..40)
    ) {
        let mut groups = ConsumerGroups::new();
        let mut now = T0;
        let mut held = groups.snapshot();
        for step in steps {
            match step {
                Step::Register { client, connection, group, subs, broadcasting, without_sub } => {
                    let subs = subs
                        .iter()
                        .map(|&(topic, version)| subscription(TOPICS[topic as usize], "*", T0 + i64::from(version)))
                        .collect();
                    let data = ConsumerData {
                        message_model: Some(if broadcasting {
                            MessageModel::Broadcasting
                        } else {
                            MessageModel::Clustering
                        }),
                        ..push_consumer(&format!("G{group}"), subs)
                    };
                    let v2 = without_sub.then_some(HeartbeatV2 { fingerprint: 1, without_sub });
                    let ch = channel(&format!("c{client}"), u64::from(connection), now);
                    groups.register(ch, &data, v2).unwrap();
                }
                Step::Unregister { client, group } => {
                    groups.unregister(&format!("G{group}"), &format!("c{client}"));
                }
                Step::Close { connection } => {
                    groups.connection_closed(ConnectionId(u64::from(connection)));
                }
                Step::Expire { seconds } => {
                    now += i64::from(seconds) * 1000;
                    groups.expire(now);
                }
            }
            let fresh = groups.snapshot();
            if fresh.groups.len() != held.groups.len()
                || fresh.groups.iter().any(|(name, view)| held.group(name) != Some(view.as_ref()))
            {
                proptest::prop_assert!(fresh.is_newer_than(&held), "changed without a new version");
            } else {
                proptest::prop_assert_eq!(fresh.version, held.version);
            }
            for (name, group) in &groups.consumers {
                proptest::prop_assert!(group.channels().next().is_some(), "{} left empty", name);
                proptest::prop_assert_eq!(fresh.group(name), Some(group.view.as_ref()));
            }
            held = fresh;
        }
    }
}
