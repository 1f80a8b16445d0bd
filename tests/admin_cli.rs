//! `ringmq admin` against a running `ringmq namesrv`: the tables it prints.

mod namesrv_support;

use namesrv_support::*;
use ringmq::client::block_on;

#[test]
fn cluster_list_topic_route_and_topic_list_print_what_the_namesrv_holds() {
    let ns = NameServerProcess::start(None);
    block_on(async {
        // The registering connection stays open while the admin commands run.
        let brokers = connect(&ns).await;
        let a = Broker::master(
            "broker-a",
            "127.0.0.1:10911",
            &[("OrderTopic", 4), ("TBW102", 8)],
        );
        let a_slave = Broker {
            id: 1,
            addr: "127.0.0.1:10921",
            ..a.clone()
        };
        let b = Broker {
            cluster: "OtherCluster",
            ..Broker::master(
                "broker-b",
                "127.0.0.1:20911",
                &[("OrderTopic", 2), ("Audit", 1)],
            )
        };
        for broker in [&a, &a_slave, &b] {
            register(&brokers, broker).await;
        }

        let (ok, out, err) = ns.admin(&["clusterList"]);
        assert!(ok, "{err}");
        assert_eq!(
            out,
            "#Cluster Name   #Broker Name  #BID  #Addr\n\
             DefaultCluster  broker-a      0     127.0.0.1:10911\n\
             DefaultCluster  broker-a      1     127.0.0.1:10921\n\
             OtherCluster    broker-b      0     127.0.0.1:20911\n"
        );

        let (ok, out, err) = ns.admin(&["topicRoute", "-t", "OrderTopic"]);
        assert!(ok, "{err}");
        assert_eq!(
            out,
            "Topic: OrderTopic\n\n\
             #Broker Name  #Cluster        #BID  #Addr\n\
             broker-a      DefaultCluster  0     127.0.0.1:10911\n\
             broker-a      DefaultCluster  1     127.0.0.1:10921\n\
             broker-b      OtherCluster    0     127.0.0.1:20911\n\n\
             #Broker Name  #Read Queues  #Write Queues  #Perm\n\
             broker-a      4             4              RW-\n\
             broker-b      2             2              RW-\n"
        );

        let (ok, out, err) = ns.admin(&["topicList"]);
        assert!(ok, "{err}");
        assert_eq!(out, "Audit\nOrderTopic\nTBW102\n");

        // Without -n, the address comes from NAMESRV_ADDR, as for mqadmin.
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_ringmq"))
            .args(["admin", "topicList"])
            .env("NAMESRV_ADDR", &ns.addr)
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            "Audit\nOrderTopic\nTBW102\n"
        );

        let (ok, _, err) = ns.admin(&["topicRoute", "-t", "Missing"]);
        assert!(!ok);
        assert!(err.contains("TOPIC_NOT_EXIST (17)"), "{err}");
    })
    .unwrap();
}
