//! ringmq against Apache RocketMQ's own NameServer and mqadmin (5.3.3, run from the Maven
//! jars): `ringmq admin` reads Apache's NameServer, mqadmin reads ringmq's, ringmq's client
//! registers brokers with Apache's in both header serializations, and for the same
//! registrations ringmq's NameServer sends route bodies byte-identical to Apache's, for a
//! 4.9.4+ client and for an older one.
//!
//! Needs Java 17+ and the jars of tests/apache-servers/server-5.3.3/pom.xml in
//! ~/.m2 (resolved offline), so it is ignored by default:
//! `cargo test -p ringmq --test admin_apache_namesrv -- --ignored`.

mod apache_support;
mod namesrv_support;

use apache_support::ApacheNameServer;
use namesrv_support::*;
use ringmq::client::{block_on, RemotingClient};
use ringmq::protocol::codes::response;
use ringmq::protocol::command::SerializeType;

/// The same brokers, registered with whichever NameServer `conn` is connected to.
async fn register_brokers(conn: &RemotingClient) {
    let a = Broker::master("broker-a", "127.0.0.1:10911", &[("T", 4), ("A", 2)]);
    register(conn, &a).await;
    register(
        conn,
        &Broker {
            id: 1,
            addr: "127.0.0.1:10921",
            ..a
        },
    )
    .await;
    let b = Broker::master("broker-b", "127.0.0.1:20911", &[("T", 2), ("B", 1)]);
    register(
        conn,
        &Broker {
            serialize_type: SerializeType::RocketMq,
            ..b
        },
    )
    .await;
}

#[test]
#[ignore = "needs java and rocketmq-namesrv 5.3.3 in ~/.m2; run with --ignored"]
fn admin_reads_apache_namesrv_and_route_bodies_match_it_byte_for_byte() {
    let apache = ApacheNameServer::start();
    let ours = NameServerProcess::start(None);
    block_on(async {
        // Each NameServer's registering connection stays open for the whole test.
        let apache_conn = RemotingClient::connect(&apache.addr)
            .await
            .expect("connect to Apache NameServer");
        let ours_conn = connect(&ours).await;
        register_brokers(&apache_conn).await;
        register_brokers(&ours_conn).await;

        // Topic A lives on one broker group only, so no HashMap order can differ.
        for version in [479, 317] {
            let from_apache = call(&apache_conn, route_request("A", version)).await;
            let from_ours = call(&ours_conn, route_request("A", version)).await;
            assert_eq!(from_apache.code, response::SUCCESS);
            assert_eq!(
                String::from_utf8_lossy(&from_ours.body),
                String::from_utf8_lossy(&from_apache.body),
                "route body for version {version}"
            );
        }
        let missing = call(&apache_conn, route_request("Missing", 479)).await;
        assert_eq!(missing.code, response::TOPIC_NOT_EXIST);
        assert_eq!(
            missing.remark,
            call(&ours_conn, route_request("Missing", 479)).await.remark
        );

        // ringmq admin prints the same tables from either NameServer (Apache's ClusterInfo
        // has unquoted broker ids; the lenient reader takes it).
        for args in [
            &["clusterList"][..],
            &["topicRoute", "-t", "T"],
            &["topicList"],
        ] {
            let (ok, from_apache, err) = run_admin(&apache.addr, args);
            assert!(ok, "{args:?} against Apache: {err}");
            let (ok, from_ours, err) = run_admin(&ours.addr, args);
            assert!(ok, "{args:?} against ringmq: {err}");
            assert_eq!(from_apache, from_ours, "{args:?}");
            println!("{args:?}:\n{from_apache}");
        }

        // Apache's mqadmin reads ringmq's NameServer as it reads Apache's. (Not clusterList:
        // it asks every broker for runtime statistics, and these brokers do not exist.)
        for args in [&["topicList"][..], &["topicRoute", "-t", "A"]] {
            let from_apache = apache.java.mqadmin(&apache.addr, args);
            let from_ours = apache.java.mqadmin(&ours.addr, args);
            assert!(from_ours.contains('A'), "{args:?}: {from_ours}");
            assert_eq!(from_ours, from_apache, "mqadmin {args:?}");
            println!("mqadmin {args:?}:\n{from_ours}");
        }
    })
    .unwrap();
}
