//! `ringmq admin`'s broker commands against Apache RocketMQ 5.3.3's NameServer and broker,
//! each compared with what Apache's own mqadmin prints for the same state: updateTopic,
//! topicStatus, queryMsgByKey, queryMsgById (offsetMsgId and UNIQ_KEY), consumerProgress,
//! consumerConnection and brokerStatus. Messages are sent with ringmq's client
//! (SEND_MESSAGE_V2), a consumer group is made present with a HEART_BEAT on a connection held
//! open, and its offset committed with UPDATE_CONSUMER_OFFSET.
//!
//! Needs Java 17+ and the jars of tests/apache-servers/server-5.3.3/pom.xml in
//! ~/.m2, so it is ignored by default:
//! `cargo test -p ringmq --test admin_apache_broker -- --ignored`.

mod apache_support;
mod namesrv_support;

use apache_support::broker_checks::check_broker_commands;
use apache_support::ApacheCluster;

#[test]
#[ignore = "needs java and the rocketmq-broker 5.3.3 jars in ~/.m2; run with --ignored"]
fn admin_broker_commands_agree_with_apache_mqadmin() {
    let apache = ApacheCluster::start();
    check_broker_commands(&apache.namesrv.addr, &apache.broker_addr, &|args| {
        apache.mqadmin(args)
    });
}
