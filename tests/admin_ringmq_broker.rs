//! `ringmq admin` and Apache's own mqadmin (5.3.3) against ringmq's broker: `ringmq
//! standalone --shards 2` runs the same broker-command checks as `admin_apache_broker` runs
//! against Apache's broker, so every table Apache's tool prints from ringmq's broker is the one
//! ringmq's tool prints, and (through the Apache test) the one Apache's broker makes it print.
//!
//! Needs Java 17+ and the jars of tests/apache-servers/server-5.3.3/pom.xml in
//! ~/.m2, so it is ignored by default:
//! `cargo test -p ringmq --test admin_ringmq_broker -- --ignored`.

// broker_support and namesrv_support each include process_support privately; this is the one
// test that needs both, and the two copies share nothing at run time.
#![allow(clippy::duplicate_mod)]

mod apache_support;
mod broker_support;
mod namesrv_support;

use apache_support::broker_checks::check_broker_commands;
use apache_support::JavaEnv;
use broker_support::Standalone;

/// Two shards, so the topic's queues (and the commands' answers) are spread over both.
const SHARDS: usize = 2;

#[test]
#[ignore = "needs java and the rocketmq-tools 5.3.3 jars in ~/.m2; run with --ignored"]
fn apache_mqadmin_and_ringmq_admin_agree_on_ringmq_broker() {
    let broker = Standalone::start(SHARDS);
    let java = JavaEnv::new();
    check_broker_commands(&broker.namesrv_addr, &broker.broker_addr, &|args| {
        java.mqadmin(&broker.namesrv_addr, args)
    });
}
