//! The real `ringmq namesrv` process, driven the way Java brokers and clients drive a
//! NameServer: registration in both header serializations, DataVersion and CRC semantics,
//! route bodies per client version, and the admin-side request codes.

mod namesrv_support;

use namesrv_support::*;
use ringmq::client::block_on;
use ringmq::protocol::body::{self, ClusterInfo, DataVersion, KvTable, TopicList, TopicRouteData};
use ringmq::protocol::codes::{request, response};
use ringmq::protocol::command::{RemotingCommand, SerializeType};
use ringmq::protocol::header::*;

#[test]
fn brokers_register_in_both_header_serializations_and_clients_get_routes() {
    let ns = NameServerProcess::start(None);
    block_on(async {
        let broker_conn = connect(&ns).await;
        let a = Broker::master("broker-a", "127.0.0.1:10911", &[("T", 4), ("TBW102", 8)]);
        let b = Broker {
            serialize_type: SerializeType::RocketMq,
            ..Broker::master("broker-b", "127.0.0.1:20911", &[("T", 2), ("U", 1)])
        };
        for broker in [&a, &b] {
            let resp = call(&broker_conn, broker.register_request()).await;
            assert_eq!(resp.code, response::SUCCESS, "{:?}", resp.remark);
            // The server answers in the request's serialization; both decode.
            assert_eq!(resp.serialize_type, broker.serialize_type);
            let header: RegisterBrokerResponseHeader = resp.decode_header().unwrap();
            assert_eq!(header.master_addr, None, "a master has no master");
        }
        // A broker sending the compressed body form (header compressed=true) registers too.
        let c = Broker::master("broker-c", "127.0.0.1:30911", &[("T", 1), ("V", 1)]);
        let resp = call(&broker_conn, c.register_request_compressed()).await;
        assert_eq!(resp.code, response::SUCCESS, "{:?}", resp.remark);
        // A slave of broker-a learns its master and the master's HA address.
        let slave = Broker {
            id: 1,
            addr: "127.0.0.1:10921",
            ..a.clone()
        };
        let resp = call(&broker_conn, slave.register_request()).await;
        let header: RegisterBrokerResponseHeader = resp.decode_header().unwrap();
        assert_eq!(header.master_addr.as_deref(), Some("127.0.0.1:10911"));
        assert_eq!(header.ha_server_addr.as_deref(), Some("127.0.0.1:10911-ha"));

        let client = connect(&ns).await;
        let resp = call(&client, route_request("T", 479)).await;
        assert_eq!(resp.code, response::SUCCESS);
        let route: TopicRouteData = body::decode(&resp.body).unwrap();
        let mut queues: Vec<(String, i32)> = route
            .queue_datas
            .iter()
            .map(|q| (q.broker_name.clone(), q.write_queue_nums))
            .collect();
        queues.sort();
        assert_eq!(
            queues,
            [("broker-a", 4), ("broker-b", 2), ("broker-c", 1)].map(|(b, q)| (b.to_string(), q))
        );
        let a_data = route
            .broker_datas
            .iter()
            .find(|b| b.broker_name == "broker-a")
            .unwrap();
        assert_eq!(a_data.master_addr(), Some("127.0.0.1:10911"));
        assert_eq!(a_data.broker_addrs[&1], "127.0.0.1:10921");

        let resp = call(
            &client,
            RemotingCommand::request(request::GET_BROKER_CLUSTER_INFO),
        )
        .await;
        let info: ClusterInfo = body::decode(&resp.body).unwrap();
        assert_eq!(
            info.cluster_addr_table[CLUSTER].iter().collect::<Vec<_>>(),
            vec!["broker-a", "broker-b", "broker-c"]
        );
        assert_eq!(
            info.broker_addr_table["broker-b"].master_addr(),
            Some("127.0.0.1:20911")
        );
    })
    .unwrap();
}

#[test]
fn route_body_style_follows_the_client_version() {
    let ns = NameServerProcess::start(None);
    block_on(async {
        let broker_conn = connect(&ns).await;
        let broker = Broker::master("broker-a", "127.0.0.1:10911", &[("T", 4), ("TBW102", 8)]);
        register(&broker_conn, &broker).await;
        let client = connect(&ns).await;
        // VECTORS.md V9 (TopicConfig's default perm is 6, as in the vector).
        let standard = r#"{"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}"#;
        let legacy = standard.replace(r#"{"0":"#, r#"{0:"#);

        let java_5 = call(&client, route_request("T", 479)).await;
        assert_eq!(String::from_utf8_lossy(&java_5.body), standard);
        let java_494 = call(&client, route_request("T", 401)).await;
        assert_eq!(String::from_utf8_lossy(&java_494.body), standard);
        let go = call(&client, route_request("T", 317)).await;
        assert_eq!(String::from_utf8_lossy(&go.body), legacy);
        let mut asks_standard = route_request("T", 317);
        asks_standard.ext_fields.insert("acceptStandardJsonOnly", "true");
        assert_eq!(String::from_utf8_lossy(&call(&client, asks_standard).await.body), standard);
        // Both forms decode to the same route with the lenient reader.
        let a: TopicRouteData = body::decode(&java_5.body).unwrap();
        let b: TopicRouteData = body::decode(&go.body).unwrap();
        assert_eq!(a, b);
    })
    .unwrap();
}

#[test]
fn topic_changes_need_a_new_data_version_and_query_data_version_reports_it() {
    let ns = NameServerProcess::start(None);
    block_on(async {
        let conn = connect(&ns).await;
        let v1 = Broker::master("broker-a", "127.0.0.1:10911", &[("T", 4), ("TBW102", 8)]);
        register(&conn, &v1).await;
        let write_queues = |resp: RemotingCommand| {
            let route: TopicRouteData = body::decode(&resp.body).unwrap();
            route.queue_datas[0].write_queue_nums
        };
        let same_version = Broker {
            topics: vec![("T", 8), ("TBW102", 8)],
            ..v1.clone()
        };
        register(&conn, &same_version).await;
        assert_eq!(
            write_queues(call(&conn, route_request("T", 479)).await),
            4,
            "unchanged DataVersion: ignored"
        );
        let v2 = Broker {
            data_version: DataVersion {
                counter: 2,
                ..v1.data_version
            },
            ..same_version
        };
        register(&conn, &v2).await;
        assert_eq!(
            write_queues(call(&conn, route_request("T", 479)).await),
            8,
            "new DataVersion: applied"
        );

        let query = |version: DataVersion| {
            let header = QueryDataVersionRequestHeader {
                broker_name: "broker-a".into(),
                broker_addr: "127.0.0.1:10911".into(),
                cluster_name: CLUSTER.into(),
                broker_id: 0,
            };
            RemotingCommand::request(request::QUERY_DATA_VERSION)
                .with_header(&header)
                .with_body(body::encode(&version).unwrap())
        };
        let resp = call(&conn, query(v2.data_version)).await;
        assert!(
            !resp
                .decode_header::<QueryDataVersionResponseHeader>()
                .unwrap()
                .changed
        );
        assert_eq!(
            body::decode::<DataVersion>(&resp.body).unwrap(),
            v2.data_version
        );
        let resp = call(&conn, query(v1.data_version)).await;
        assert!(
            resp.decode_header::<QueryDataVersionResponseHeader>()
                .unwrap()
                .changed
        );
    })
    .unwrap();
}

#[test]
fn bad_crc_unusable_headers_and_unknown_codes_get_error_responses_on_a_live_connection() {
    let ns = NameServerProcess::start(None);
    block_on(async {
        let conn = connect(&ns).await;
        let broker = Broker::master("broker-a", "127.0.0.1:10911", &[("T", 4), ("TBW102", 8)]);
        let mut bad_crc = broker.register_request();
        bad_crc.ext_fields.insert("bodyCrc32", "12345");
        let resp = call(&conn, bad_crc).await;
        assert_eq!(
            (resp.code, resp.remark.as_deref()),
            (response::SYSTEM_ERROR, Some("crc32 not match"))
        );

        let no_topic = RemotingCommand::request(request::GET_ROUTEINFO_BY_TOPIC);
        let resp = call(&conn, no_topic).await;
        assert_eq!(
            (resp.code, resp.remark.as_deref()),
            (
                response::SYSTEM_ERROR,
                Some("the custom field <topic> is null")
            )
        );

        let mut bad_body = broker.register_request().with_body(&b"{not json"[..]);
        bad_body.ext_fields.insert("bodyCrc32", "0");
        let resp = call(&conn, bad_body).await;
        assert_eq!(resp.code, response::SYSTEM_ERROR);
        assert!(resp.remark.unwrap().starts_with("malformed body"));

        let resp = call(&conn, RemotingCommand::request(9999)).await;
        assert_eq!(
            (resp.code, resp.remark.as_deref()),
            (
                response::REQUEST_CODE_NOT_SUPPORTED,
                Some(" request type 9999 not supported")
            )
        );

        let resp = call(&conn, route_request("nowhere", 479)).await;
        assert_eq!(resp.code, response::TOPIC_NOT_EXIST);
        assert!(resp
            .remark
            .unwrap()
            .starts_with("No topic route info in name server for the topic: nowhere"));

        // The same connection still serves a good request.
        register(&conn, &broker).await;
    })
    .unwrap();
}

#[test]
fn admin_request_codes_kv_config_permissions_and_topic_deletion() {
    let ns = NameServerProcess::start(None);
    block_on(async {
        let conn = connect(&ns).await;
        call(
            &conn,
            Broker::master("broker-a", "127.0.0.1:10911", &[("T", 4), ("U", 4)]).register_request(),
        )
        .await;
        let other = Broker {
            cluster: "Other",
            ..Broker::master("broker-x", "127.0.0.1:30911", &[("T", 1), ("X", 1)])
        };
        register(&conn, &other).await;

        let topics = |resp: RemotingCommand| body::decode::<TopicList>(&resp.body).unwrap();
        let all = topics(
            call(
                &conn,
                RemotingCommand::request(request::GET_ALL_TOPIC_LIST_FROM_NAMESERVER),
            )
            .await,
        );
        assert_eq!(all.topic_list, vec!["T", "U", "X"]);
        let by_cluster = RemotingCommand::request(request::GET_TOPICS_BY_CLUSTER).with_header(
            &GetTopicsByClusterRequestHeader {
                cluster: "Other".into(),
            },
        );
        assert_eq!(
            topics(call(&conn, by_cluster).await).topic_list,
            vec!["T", "X"]
        );
        let system = topics(
            call(
                &conn,
                RemotingCommand::request(request::GET_SYSTEM_TOPIC_LIST_FROM_NS),
            )
            .await,
        );
        assert_eq!(
            system.topic_list,
            vec![CLUSTER, "Other", "broker-a", "broker-x"]
        );
        assert!(system.broker_addr.is_some());

        let wipe = RemotingCommand::request(request::WIPE_WRITE_PERM_OF_BROKER).with_header(
            &WipeWritePermOfBrokerRequestHeader {
                broker_name: "broker-a".into(),
            },
        );
        let resp = call(&conn, wipe).await;
        assert_eq!(
            resp.decode_header::<WipeWritePermOfBrokerResponseHeader>()
                .unwrap()
                .wipe_topic_count,
            2
        );
        let route: TopicRouteData =
            body::decode(&call(&conn, route_request("U", 479)).await.body).unwrap();
        assert_eq!(route.queue_datas[0].perm, 4);
        let add = RemotingCommand::request(request::ADD_WRITE_PERM_OF_BROKER).with_header(
            &AddWritePermOfBrokerRequestHeader {
                broker_name: "broker-a".into(),
            },
        );
        assert_eq!(
            call(&conn, add)
                .await
                .decode_header::<AddWritePermOfBrokerResponseHeader>()
                .unwrap()
                .add_topic_count,
            2
        );

        let delete = RemotingCommand::request(request::DELETE_TOPIC_IN_NAMESRV).with_header(
            &DeleteTopicFromNamesrvRequestHeader {
                topic: "T".into(),
                cluster_name: Some(CLUSTER.into()),
            },
        );
        assert_eq!(call(&conn, delete).await.code, response::SUCCESS);
        let route: TopicRouteData =
            body::decode(&call(&conn, route_request("T", 479)).await.body).unwrap();
        assert_eq!(route.queue_datas.len(), 1);
        assert_eq!(route.queue_datas[0].broker_name, "broker-x");

        let put = RemotingCommand::request(request::PUT_KV_CONFIG).with_header(
            &PutKvConfigRequestHeader {
                namespace: "ORDER_TOPIC_CONFIG".into(),
                key: "T".into(),
                value: "broker-a:4".into(),
            },
        );
        assert_eq!(call(&conn, put).await.code, response::SUCCESS);
        let key = KvConfigKeyRequestHeader {
            namespace: "ORDER_TOPIC_CONFIG".into(),
            key: "T".into(),
        };
        let get = || RemotingCommand::request(request::GET_KV_CONFIG).with_header(&key);
        let resp = call(&conn, get()).await;
        assert_eq!(
            resp.decode_header::<GetKvConfigResponseHeader>()
                .unwrap()
                .value
                .as_deref(),
            Some("broker-a:4")
        );
        // A registering broker gets the ORDER_TOPIC_CONFIG table back.
        let resp = call(
            &conn,
            Broker::master("broker-a", "127.0.0.1:10911", &[("T", 4), ("U", 4)]).register_request(),
        )
        .await;
        assert_eq!(
            body::decode::<KvTable>(&resp.body).unwrap().table["T"],
            "broker-a:4"
        );
        let list = |namespace: &str| {
            RemotingCommand::request(request::GET_KVLIST_BY_NAMESPACE).with_header(
                &GetKvListByNamespaceRequestHeader {
                    namespace: namespace.into(),
                },
            )
        };
        let resp = call(&conn, list("ORDER_TOPIC_CONFIG")).await;
        assert_eq!(body::decode::<KvTable>(&resp.body).unwrap().table.len(), 1);
        let delete = RemotingCommand::request(request::DELETE_KV_CONFIG).with_header(&key);
        assert_eq!(call(&conn, delete).await.code, response::SUCCESS);
        assert_eq!(call(&conn, get()).await.code, response::QUERY_NOT_FOUND);
        assert_eq!(
            call(&conn, list("ORDER_TOPIC_CONFIG")).await.code,
            response::QUERY_NOT_FOUND
        );
    })
    .unwrap();
}

#[test]
fn kv_config_survives_a_namesrv_restart() {
    let path = fresh_kv_config_path();
    let key = KvConfigKeyRequestHeader {
        namespace: "ORDER_TOPIC_CONFIG".into(),
        key: "T".into(),
    };
    let get = || RemotingCommand::request(request::GET_KV_CONFIG).with_header(&key);
    {
        let ns = NameServerProcess::start_with_kv_config(&path);
        block_on(async {
            let conn = connect(&ns).await;
            for (key, value) in [("T", "broker-a:4"), ("U", "broker-b:8")] {
                let put = RemotingCommand::request(request::PUT_KV_CONFIG).with_header(
                    &PutKvConfigRequestHeader {
                        namespace: "ORDER_TOPIC_CONFIG".into(),
                        key: key.into(),
                        value: value.into(),
                    },
                );
                assert_eq!(call(&conn, put).await.code, response::SUCCESS);
            }
            let delete = RemotingCommand::request(request::DELETE_KV_CONFIG).with_header(
                &KvConfigKeyRequestHeader {
                    namespace: "ORDER_TOPIC_CONFIG".into(),
                    key: "U".into(),
                },
            );
            assert_eq!(call(&conn, delete).await.code, response::SUCCESS);
        })
        .unwrap();
    } // killed here, as by SIGKILL: every acknowledged change must already be on disk
    let ns = NameServerProcess::start_with_kv_config(&path);
    block_on(async {
        let conn = connect(&ns).await;
        let resp = call(&conn, get()).await;
        assert_eq!(resp.code, response::SUCCESS, "{:?}", resp.remark);
        assert_eq!(
            resp.decode_header::<GetKvConfigResponseHeader>()
                .unwrap()
                .value
                .as_deref(),
            Some("broker-a:4")
        );
        let list = RemotingCommand::request(request::GET_KVLIST_BY_NAMESPACE).with_header(
            &GetKvListByNamespaceRequestHeader {
                namespace: "ORDER_TOPIC_CONFIG".into(),
            },
        );
        let table = body::decode::<KvTable>(&call(&conn, list).await.body).unwrap();
        assert_eq!(table.table.len(), 1, "the deleted key stays deleted");
    })
    .unwrap();
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

#[test]
fn unregistering_or_closing_the_broker_connection_removes_its_routes() {
    let ns = NameServerProcess::start(None);
    block_on(async {
        let client = connect(&ns).await;
        let a = Broker::master("broker-a", "127.0.0.1:10911", &[("T", 4), ("A", 4)]);
        let b = Broker::master("broker-b", "127.0.0.1:20911", &[("T", 4), ("B", 4)]);
        let conn_a = connect(&ns).await;
        register(&conn_a, &a).await;
        {
            let conn_b = connect(&ns).await;
            register(&conn_b, &b).await;
            assert_eq!(
                call(&client, route_request("B", 479)).await.code,
                response::SUCCESS
            );
        }
        // conn_b dropped: the NameServer notices the close and forgets broker-b.
        ns.wait_for_log("broker connection closed, broker removed");
        assert_eq!(
            call(&client, route_request("B", 479)).await.code,
            response::TOPIC_NOT_EXIST
        );

        let header = UnregisterBrokerRequestHeader {
            broker_name: "broker-a".into(),
            broker_addr: "127.0.0.1:10911".into(),
            cluster_name: CLUSTER.into(),
            broker_id: 0,
        };
        let unregister = RemotingCommand::request(request::UNREGISTER_BROKER).with_header(&header);
        assert_eq!(call(&conn_a, unregister).await.code, response::SUCCESS);
        assert_eq!(
            call(&client, route_request("T", 479)).await.code,
            response::TOPIC_NOT_EXIST
        );
    })
    .unwrap();
}

#[test]
fn a_sparse_body_with_numbers_as_strings_and_enums_as_ordinals_registers() {
    let ns = NameServerProcess::start(None);
    block_on(async {
        let conn = connect(&ns).await;
        // What non-Java brokers send: optional fields left out, numbers quoted, the filter type
        // as an ordinal, and no body CRC.
        let sparse = br#"{"topicConfigSerializeWrapper":{"dataVersion":{"counter":"1","timestamp":"5"},
            "topicConfigTable":{"S":{"topicName":"S","perm":"6","readQueueNums":"2","writeQueueNums":"2","topicFilterType":0},
                                "R":{"topicName":"R"}}}}"#;
        let mut req = Broker::master("broker-a", "127.0.0.1:10911", &[]).register_request().with_body(&sparse[..]);
        req.ext_fields.insert("bodyCrc32", "0");
        assert_eq!(call(&conn, req).await.code, response::SUCCESS);
        let route: TopicRouteData = body::decode(&call(&conn, route_request("S", 479)).await.body).unwrap();
        let queue = &route.queue_datas[0];
        assert_eq!((queue.perm, queue.read_queue_nums, queue.write_queue_nums), (6, 2, 2));
        // A topic with nothing but its name takes Java's TopicConfig defaults.
        let route: TopicRouteData = body::decode(&call(&conn, route_request("R", 479)).await.body).unwrap();
        assert_eq!((route.queue_datas[0].perm, route.queue_datas[0].write_queue_nums), (6, 16));
    })
    .unwrap();
}
