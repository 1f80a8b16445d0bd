//! Unit tests of the route table's RocketMQ semantics.

use super::*;

const CLUSTER: &str = "DefaultCluster";

fn version(counter: i64) -> DataVersion {
    DataVersion {
        counter,
        state_version: 0,
        timestamp: 1_700_000_000_000 + counter,
    }
}

fn registration(
    name: &str,
    id: i64,
    addr: &str,
    dv: DataVersion,
    topics: &[(&str, i32)],
) -> BrokerRegistration {
    let table = topics
        .iter()
        .map(|(topic, queues)| (topic.to_string(), TopicConfig::new(*topic, *queues)))
        .collect();
    BrokerRegistration {
        cluster_name: CLUSTER.into(),
        broker_addr: addr.into(),
        broker_name: name.into(),
        broker_id: id,
        ha_server_addr: format!("{addr}-ha"),
        enable_acting_master: Some(false),
        topics: TopicConfigSerializeWrapper {
            data_version: dv,
            topic_config_table: table,
            ..Default::default()
        },
        connection: Some(ConnectionId(id as u64 + 100)),
        ..BrokerRegistration::default()
    }
}

/// broker-a's master at a:1 with topics T1 and T2 (a full registration: two topics).
fn master_a() -> BrokerRegistration {
    registration("broker-a", 0, "a:1", version(1), &[("T1", 4), ("T2", 4)])
}

fn ok(table: &mut RouteTable, reg: BrokerRegistration, now_ms: u64) -> RegisterOutcome {
    table.register(reg, now_ms).expect("registration accepted")
}

fn key(addr: &str) -> BrokerAddrKey {
    BrokerAddrKey {
        cluster_name: CLUSTER.into(),
        broker_addr: addr.into(),
    }
}

fn write_queues(table: &RouteTable, topic: &str, broker: &str) -> Option<i32> {
    let route = table.route(topic)?;
    route
        .queue_datas
        .iter()
        .find(|q| q.broker_name == broker)
        .map(|q| q.write_queue_nums)
}

#[test]
fn master_registration_creates_routes_and_cluster_entries() {
    let mut table = RouteTable::new();
    ok(
        &mut table,
        registration(
            "broker-a",
            0,
            "10.0.0.1:10911",
            version(1),
            &[("T1", 4), ("TBW102", 8)],
        ),
        0,
    );
    let route = table.route("T1").unwrap();
    assert_eq!(route.broker_datas.len(), 1);
    assert_eq!(route.broker_datas[0].master_addr(), Some("10.0.0.1:10911"));
    assert_eq!(route.queue_datas[0].perm, 6);
    assert_eq!(write_queues(&table, "TBW102", "broker-a"), Some(8));
    assert!(table.route("nope").is_none());
    let info = table.cluster_info();
    assert!(info.cluster_addr_table[CLUSTER].contains("broker-a"));
    assert_eq!(table.topics().topic_list, vec!["T1", "TBW102"]);
}

#[test]
fn topic_changes_apply_only_when_the_data_version_changes_or_the_topic_is_new() {
    let mut table = RouteTable::new();
    ok(
        &mut table,
        registration("broker-a", 0, "a:1", version(1), &[("T0", 4), ("T1", 4)]),
        0,
    );
    // Same DataVersion: the changed queue count of a known topic is ignored, a new topic is not.
    ok(
        &mut table,
        registration("broker-a", 0, "a:1", version(1), &[("T1", 8), ("T2", 2)]),
        1,
    );
    assert_eq!(write_queues(&table, "T1", "broker-a"), Some(4));
    assert_eq!(write_queues(&table, "T2", "broker-a"), Some(2));
    // Bumped DataVersion: applied.
    ok(
        &mut table,
        registration("broker-a", 0, "a:1", version(2), &[("T1", 8), ("T2", 2)]),
        2,
    );
    assert_eq!(write_queues(&table, "T1", "broker-a"), Some(8));
}

#[test]
fn incremental_registration_keeps_topics_missing_from_the_body() {
    let mut table = RouteTable::new();
    // A one-topic registration before the first full one is refused, as in Java.
    let early = table.register(
        registration("broker-a", 0, "a:1", version(1), &[("T1", 4)]),
        0,
    );
    assert_eq!(early, Err(RouteTableError::NotYetRegistered));
    ok(&mut table, master_a(), 0);
    ok(
        &mut table,
        registration("broker-a", 0, "a:1", version(2), &[("T3", 1)]),
        1,
    );
    assert_eq!(table.topics().topic_list, vec!["T1", "T2", "T3"]);
}

#[test]
fn slaves_do_not_change_topics_and_learn_their_master() {
    let mut table = RouteTable::new();
    let mut slave = registration("broker-a", 1, "a:2", version(1), &[("T1", 4), ("T9", 4)]);
    slave.enable_acting_master = None; // a 4.x slave: never the prime slave
    assert_eq!(ok(&mut table, slave.clone(), 0), RegisterOutcome::default());
    assert!(table.route("T9").is_none());
    ok(&mut table, master_a(), 0);
    let outcome = ok(&mut table, slave, 1);
    assert_eq!(outcome.master_addr.as_deref(), Some("a:1"));
    assert_eq!(outcome.ha_server_addr.as_deref(), Some("a:1-ha"));
    assert!(table.route("T9").is_none());
    assert_eq!(
        table.route("T1").unwrap().broker_datas[0]
            .broker_addrs
            .len(),
        2
    );
}

#[test]
fn a_prime_slave_of_an_acting_master_group_registers_read_only_queues() {
    let mut table = RouteTable::new();
    let mut slave = registration("broker-a", 1, "a:2", version(1), &[("T1", 4), ("T2", 4)]);
    slave.enable_acting_master = Some(true);
    ok(&mut table, slave, 0);
    assert_eq!(table.route("T1").unwrap().queue_datas[0].perm, PERM_READ);
}

#[test]
fn a_slave_promoted_to_master_keeps_one_id_per_address() {
    let mut table = RouteTable::new();
    ok(
        &mut table,
        registration("broker-a", 1, "a:2", version(1), &[("T1", 4), ("T2", 4)]),
        0,
    );
    ok(
        &mut table,
        registration("broker-a", 0, "a:2", version(2), &[("T1", 4), ("T2", 4)]),
        1,
    );
    let addrs = &table.cluster_info().broker_addr_table["broker-a"].broker_addrs;
    assert_eq!(addrs.len(), 1);
    assert_eq!(addrs[&0], "a:2");
}

#[test]
fn a_registration_with_an_older_state_version_than_the_current_holder_is_ignored() {
    let mut table = RouteTable::new();
    let mut current = master_a();
    current.topics.data_version.state_version = 5;
    ok(&mut table, current, 0);
    let stale = registration("broker-a", 0, "a:9", version(7), &[("T1", 16), ("T2", 4)]);
    ok(&mut table, stale, 1);
    assert_eq!(
        table.cluster_info().broker_addr_table["broker-a"].master_addr(),
        Some("a:1")
    );
    assert_eq!(write_queues(&table, "T1", "broker-a"), Some(4));
    assert!(table.data_version(&key("a:9")).is_none());
}

#[test]
fn silent_brokers_expire_after_their_timeout() {
    let mut table = RouteTable::new();
    ok(&mut table, master_a(), 1_000);
    let mut short = registration("broker-b", 0, "b:1", version(1), &[("T1", 4), ("T2", 4)]);
    short.heartbeat_timeout_ms = Some(10_000);
    ok(&mut table, short, 1_000);
    assert_eq!(table.next_deadline_ms(), Some(11_000));
    assert!(
        table.expire(11_000).is_empty(),
        "expiry is strictly after the deadline"
    );
    assert_eq!(table.expire(11_001), vec![key("b:1")]);
    assert_eq!(table.route("T1").unwrap().broker_datas.len(), 1);
    // A refresh (QUERY_DATA_VERSION) moves the deadline.
    table.refresh(&key("a:1"), 100_000);
    assert!(table.expire(BROKER_EXPIRY_MS_DEFAULT + 1_001).is_empty());
    assert_eq!(table.expire(220_001), vec![key("a:1")]);
    assert!(table.route("T1").is_none());
    assert!(table.cluster_info().cluster_addr_table.is_empty());
    assert_eq!(table.next_deadline_ms(), None);
}

#[test]
fn a_closed_connection_removes_the_brokers_registered_on_it() {
    let mut table = RouteTable::new();
    let reg = master_a();
    let connection = reg.connection.unwrap();
    ok(&mut table, reg, 0);
    assert!(table.connection_closed(ConnectionId(999)).is_empty());
    assert_eq!(table.connection_closed(connection), vec![key("a:1")]);
    assert!(table.route("T1").is_none());
}

#[test]
fn unregistering_one_of_two_brokers_keeps_the_others_queues() {
    let mut table = RouteTable::new();
    ok(&mut table, master_a(), 0);
    ok(
        &mut table,
        registration("broker-b", 0, "b:1", version(1), &[("T1", 4), ("T3", 4)]),
        0,
    );
    table.unregister(&key("a:1"), "broker-a");
    let route = table.route("T1").unwrap();
    assert_eq!(route.queue_datas.len(), 1);
    assert_eq!(route.queue_datas[0].broker_name, "broker-b");
    assert!(table.route("T2").is_none());
    assert_eq!(
        table.topics_of_cluster(CLUSTER).topic_list,
        vec!["T1", "T3"]
    );
}

#[test]
fn delete_topic_everywhere_or_per_cluster() {
    let mut table = RouteTable::new();
    ok(&mut table, master_a(), 0);
    let mut other = registration("broker-x", 0, "x:1", version(1), &[("T1", 4), ("T2", 4)]);
    other.cluster_name = "Other".into();
    ok(&mut table, other, 0);
    table.delete_topic("T1", Some(CLUSTER));
    assert_eq!(
        table.route("T1").unwrap().queue_datas[0].broker_name,
        "broker-x"
    );
    assert_eq!(table.topics_of_cluster(CLUSTER).topic_list, vec!["T2"]);
    table.delete_topic("T2", None);
    assert!(table.route("T2").is_none());
    table.delete_topic("T1", Some("Other"));
    assert!(table.topics().topic_list.is_empty());
}

#[test]
fn write_perm_is_wiped_and_restored_per_broker() {
    let mut table = RouteTable::new();
    ok(&mut table, master_a(), 0);
    assert_eq!(table.set_write_perm("broker-a", WritePerm::Wipe), 2);
    assert_eq!(table.route("T1").unwrap().queue_datas[0].perm, PERM_READ);
    assert_eq!(table.set_write_perm("broker-a", WritePerm::Add), 2);
    assert_eq!(
        table.route("T2").unwrap().queue_datas[0].perm,
        PERM_READ | PERM_WRITE
    );
    assert_eq!(table.set_write_perm("nobody", WritePerm::Wipe), 0);
}

#[test]
fn system_topics_are_cluster_and_broker_names() {
    let mut table = RouteTable::new();
    ok(&mut table, master_a(), 0);
    let list = table.system_topics();
    assert_eq!(list.topic_list, vec![CLUSTER, "broker-a"]);
    assert_eq!(list.broker_addr.as_deref(), Some("a:1"));
}

#[test]
fn the_table_refuses_brokers_beyond_its_bound() {
    let mut table = RouteTable::new();
    for i in 0..LIVE_BROKERS_MAX {
        let addr = format!("10.0.{}.{}:10911", i / 256, i % 256);
        ok(
            &mut table,
            registration(&format!("b{i}"), 0, &addr, version(1), &[]),
            0,
        );
    }
    let over = table.register(registration("late", 0, "late:1", version(1), &[]), 0);
    assert_eq!(over, Err(RouteTableError::TooManyBrokers));
    // Re-registering a known broker still works at the bound.
    ok(
        &mut table,
        registration("b0", 0, "10.0.0.0:10911", version(2), &[]),
        1,
    );
}

/// Found by `nothing_outlives_the_brokers`; Apache's NameServer leaks in all three cases.
#[test]
fn refused_and_moved_registrations_leave_nothing_behind() {
    let mut table = RouteTable::new();
    // A one-topic body before the first full registration is refused without a trace.
    let early = registration("broker-a", 0, "a:1", version(1), &[("T1", 4)]);
    assert!(table.register(early, 0).is_err());
    assert_eq!(table.cluster_info(), ClusterInfo::default());

    // The same broker re-registered under another cluster name, then silent.
    ok(&mut table, master_a(), 0);
    ok(
        &mut table,
        BrokerRegistration {
            cluster_name: "Other".into(),
            ..master_a()
        },
        1,
    );
    // The same address re-registered under another broker name, then silent.
    let renamed = registration("broker-z", 0, "a:1", version(1), &[("T1", 4), ("T9", 4)]);
    ok(&mut table, renamed, 2);
    table.expire(u64::MAX);
    assert_eq!(table.cluster_info(), ClusterInfo::default());
    assert!(table.topics().topic_list.is_empty());
}

proptest::proptest! {
    /// Whatever brokers registered (names, ids and addresses colliding at will, full or
    /// incremental bodies), once every one of them has expired nothing is left behind.
    #[test]
    fn nothing_outlives_the_brokers(
        regs in proptest::collection::vec((0..3usize, 0..3i64, 0..4usize, 0..4usize, 1..3i64, 0..3usize), 1..24)
    ) {
        let names = ["broker-a", "broker-b", "broker-c"];
        let addrs = ["a:1", "a:2", "b:1", "b:2"];
        let topic_sets: [&[(&str, i32)]; 4] = [&[("T1", 4), ("T2", 4)], &[("T3", 1)], &[("T1", 8), ("T4", 2)], &[]];
        let mut table = RouteTable::new();
        for (now_ms, (name, id, addr, topics, counter, cluster)) in regs.into_iter().enumerate() {
            let mut reg = registration(names[name], id, addrs[addr], version(counter), topic_sets[topics]);
            reg.cluster_name = ["C1", "C2", "C3"][cluster].into();
            // Refusals (an incremental body before a full one) are part of the game.
            let _ = table.register(reg, now_ms as u64);
        }
        table.expire(u64::MAX);
        proptest::prop_assert_eq!(table.topics().topic_list, Vec::<String>::new());
        let info = table.cluster_info();
        proptest::prop_assert!(info.broker_addr_table.is_empty(), "{:?}", info.broker_addr_table);
        proptest::prop_assert!(info.cluster_addr_table.is_empty(), "{:?}", info.cluster_addr_table);
        proptest::prop_assert_eq!(table.next_deadline_ms(), None);
    }
}
