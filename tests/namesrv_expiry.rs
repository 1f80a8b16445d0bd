//! A broker that stops registering is dropped after the configured timeout, while its
//! connection stays open (so only expiry can have removed it).

mod namesrv_support;

use namesrv_support::*;
use ringmq::client::block_on;
use ringmq::protocol::body::{self, ClusterInfo};
use ringmq::protocol::codes::{request, response};
use ringmq::protocol::command::RemotingCommand;

#[test]
fn a_silent_broker_expires_after_the_configured_timeout() {
    let ns = NameServerProcess::start(Some(1));
    block_on(async {
        let broker_conn = connect(&ns).await;
        let broker = Broker::master("broker-a", "127.0.0.1:10911", &[("T", 4), ("U", 4)]);
        register(&broker_conn, &broker).await;
        let client = connect(&ns).await;
        assert_eq!(
            call(&client, route_request("T", 479)).await.code,
            response::SUCCESS
        );

        let line = ns.wait_for_log("broker expired, removed");
        assert!(line.contains("127.0.0.1:10911"), "{line}");
        assert_eq!(
            call(&client, route_request("T", 479)).await.code,
            response::TOPIC_NOT_EXIST
        );
        let info = call(
            &client,
            RemotingCommand::request(request::GET_BROKER_CLUSTER_INFO),
        )
        .await;
        let info: ClusterInfo = body::decode(&info.body).unwrap();
        assert!(info.broker_addr_table.is_empty() && info.cluster_addr_table.is_empty());
        // The broker's connection is untouched: registering again brings the route back.
        register(&broker_conn, &broker).await;
        assert_eq!(
            call(&client, route_request("T", 479)).await.code,
            response::SUCCESS
        );
    })
    .unwrap();
}
