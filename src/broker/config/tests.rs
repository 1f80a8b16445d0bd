//! Tests of broker.conf and flag resolution.

use super::*;

/// Apache RocketMQ 4.9.7's distribution/conf/broker.conf, verbatim.
const APACHE_BROKER_CONF: &str = r#"# Licensed to the Apache Software Foundation (ASF) under one or more
# contributor license agreements.  See the NOTICE file distributed with
# this work for additional information regarding copyright ownership.
# The ASF licenses this file to You under the Apache License, Version 2.0
# (the "License"); you may not use this file except in compliance with
# the License.  You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
#  Unless required by applicable law or agreed to in writing, software
#  distributed under the License is distributed on an "AS IS" BASIS,
#  WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
#  See the License for the specific language governing permissions and
#  limitations under the License.

brokerClusterName = DefaultCluster
brokerName = broker-a
brokerId = 0
deleteWhen = 04
fileReservedTime = 48
brokerRole = ASYNC_MASTER
flushDiskType = ASYNC_FLUSH
"#;
/// Apache RocketMQ 4.9.7's distribution/conf/2m-2s-async/broker-a.properties, verbatim.
const APACHE_2M_2S_ASYNC: &str = r#"# Licensed to the Apache Software Foundation (ASF) under one or more
# contributor license agreements.  See the NOTICE file distributed with
# this work for additional information regarding copyright ownership.
# The ASF licenses this file to You under the Apache License, Version 2.0
# (the "License"); you may not use this file except in compliance with
# the License.  You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
brokerClusterName=DefaultCluster
brokerName=broker-a
brokerId=0
deleteWhen=04
fileReservedTime=48
brokerRole=ASYNC_MASTER
flushDiskType=ASYNC_FLUSH
"#;

fn conf_file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ringmq-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn with_file(path: &Path) -> BrokerArgs {
    BrokerArgs {
        config: Some(path.to_path_buf()),
        ..BrokerArgs::default()
    }
}

#[test]
fn reads_apaches_distributed_broker_confs() {
    for (name, text) in [
        ("broker.conf", APACHE_BROKER_CONF),
        ("broker-a.properties", APACHE_2M_2S_ASYNC),
    ] {
        let path = conf_file(name, text);
        let config = BrokerConfig::resolve_broker(&with_file(&path)).unwrap();
        assert_eq!(config.broker_cluster_name, "DefaultCluster");
        assert_eq!(
            (config.broker_name.as_str(), config.broker_id),
            ("broker-a", 0)
        );
        assert_eq!(config.retention.file_reserved_hours, 48);
        assert_eq!(config.retention.delete_when, "04");
        assert_eq!(config.flush_mode, FlushMode::AsyncFlush);
        let unknown: Vec<_> = config.unknown_keys.keys().map(String::as_str).collect();
        assert_eq!(unknown, ["brokerRole"]);
        // Defaults of everything the file leaves out.
        assert_eq!(config.listen, LISTEN_DEFAULT);
        assert!(config.auto_create_topic_enable && config.auto_create_subscription_group);
        assert_eq!(config.default_topic_queue_nums, 8);
        assert_eq!(config.commit_log_segment_bytes, 1 << 30);
        assert_eq!(config.message_bytes_max, 4 << 20);
        assert_eq!(config.register_period, Duration::from_secs(30));
        assert_eq!(config.broker_permission, 6);
        assert_eq!(config.message_delay_level.count(), 18);
        assert!(!config.broker_ip1.is_unspecified());
    }
}

#[test]
fn flags_win_over_the_file() {
    let path = conf_file(
        "flags.conf",
        "listenPort=10921\nbrokerIP1=10.0.0.5\nnamesrvAddr=10.0.0.1:9876;10.0.0.2:9876\n\
         storePathRootDir=/var/rmq\nflushDiskType=SYNC_FLUSH\nbrokerName=file-b\nshards=3\n",
    );
    let from_file = BrokerConfig::resolve_broker(&with_file(&path)).unwrap();
    assert_eq!(
        from_file.advertised_addr(),
        "10.0.0.5:10921".parse().unwrap()
    );
    assert_eq!(from_file.listen, "0.0.0.0:10921".parse().unwrap());
    assert_eq!(from_file.namesrv_addrs, ["10.0.0.1:9876", "10.0.0.2:9876"]);
    assert_eq!(from_file.store_path_root_dir, PathBuf::from("/var/rmq"));
    assert_eq!(
        (from_file.flush_mode, from_file.shards),
        (FlushMode::SyncFlush, 3)
    );
    let args = BrokerArgs {
        listen: Some("127.0.0.1:20911".parse().unwrap()),
        namesrv: Some("127.0.0.1:9876".into()),
        shards: Some(2),
        data: Some("/tmp/d".into()),
        flush_disk_type: Some(FlushMode::AsyncFlush),
        broker_name: Some("flag-b".into()),
        cluster: Some("C2".into()),
        ..with_file(&path)
    };
    let config = BrokerConfig::resolve_broker(&args).unwrap();
    assert_eq!(config.listen, "127.0.0.1:20911".parse().unwrap());
    assert_eq!(config.advertised_addr(), "10.0.0.5:20911".parse().unwrap());
    assert_eq!(config.namesrv_addrs, ["127.0.0.1:9876"]);
    assert_eq!(
        (config.shards, config.flush_mode),
        (2, FlushMode::AsyncFlush)
    );
    assert_eq!(config.store_path_root_dir, PathBuf::from("/tmp/d"));
    assert_eq!(
        (
            config.broker_name.as_str(),
            config.broker_cluster_name.as_str()
        ),
        ("flag-b", "C2")
    );
    let args = BrokerArgs {
        broker_ip: Some("192.168.1.9".parse().unwrap()),
        ..args
    };
    let config = BrokerConfig::resolve_broker(&args).unwrap();
    assert_eq!(
        config.advertised_addr(),
        "192.168.1.9:20911".parse().unwrap()
    );
}

#[test]
fn broker_ip1_defaults_to_the_listen_ip_unless_unspecified() {
    let args = BrokerArgs {
        listen: Some("127.0.0.1:0".parse().unwrap()),
        ..BrokerArgs::default()
    };
    let config = BrokerConfig::resolve_broker(&args).unwrap();
    assert_eq!(config.broker_ip1, IpAddr::V4(Ipv4Addr::LOCALHOST));
    let config = BrokerConfig::resolve_broker(&BrokerArgs::default()).unwrap();
    assert!(!config.broker_ip1.is_unspecified());
    if let Some(ip) = first_non_loopback_ipv4() {
        assert_eq!(config.broker_ip1, IpAddr::V4(ip));
    }
}

#[test]
fn standalone_registers_with_its_own_namesrv_and_keeps_data_local() {
    let args = StandaloneArgs::default();
    let (config, namesrv) = BrokerConfig::resolve_standalone(&args).unwrap();
    assert_eq!(namesrv, NAMESRV_LISTEN_DEFAULT);
    assert_eq!(config.namesrv_addrs, ["127.0.0.1:9876"]);
    assert_eq!(config.store_path_root_dir, PathBuf::from("./data"));
    let args = StandaloneArgs {
        broker: BrokerArgs {
            namesrv: Some("10.0.0.1:9876;127.0.0.2:9877".into()),
            ..BrokerArgs::default()
        },
        namesrv_listen: Some("127.0.0.2:9877".parse().unwrap()),
    };
    let (config, namesrv) = BrokerConfig::resolve_standalone(&args).unwrap();
    assert_eq!(namesrv, "127.0.0.2:9877".parse().unwrap());
    assert_eq!(config.namesrv_addrs, ["127.0.0.2:9877", "10.0.0.1:9876"]);
    let broker = BrokerConfig::resolve_broker(&BrokerArgs::default()).unwrap();
    assert!(broker.store_path_root_dir.ends_with(BROKER_DATA_IN_HOME));
}

#[test]
fn transaction_keys_have_apaches_defaults_and_names() {
    let defaults = BrokerConfig::resolve_broker(&BrokerArgs::default()).unwrap();
    assert_eq!(defaults.transaction.timeout, Duration::from_secs(6));
    assert_eq!(defaults.transaction.check_interval, Duration::from_secs(60));
    assert_eq!(defaults.transaction.check_max, 15);
    assert!(!defaults.transaction.reject_transaction_message);
    let text = "transactionTimeOut=1500\ntransactionCheckInterval=1000\n\
                transactionCheckMax=2\nrejectTransactionMessage=true\n";
    let path = conf_file("txn.conf", text);
    let config = BrokerConfig::resolve_broker(&with_file(&path)).unwrap();
    assert_eq!(config.transaction.timeout, Duration::from_millis(1500));
    assert_eq!(config.transaction.check_interval, Duration::from_secs(1));
    assert_eq!(config.transaction.check_max, 2);
    assert!(config.transaction.reject_transaction_message);
    assert!(config.unknown_keys.is_empty());
}

#[test]
fn store_reply_message_enable_is_on_by_default_as_apache() {
    let defaults = BrokerConfig::resolve_broker(&BrokerArgs::default()).unwrap();
    assert!(defaults.store_reply_message_enable);
    let path = conf_file("reply.conf", "storeReplyMessageEnable=false\n");
    let config = BrokerConfig::resolve_broker(&with_file(&path)).unwrap();
    assert!(!config.store_reply_message_enable);
    assert!(config.unknown_keys.is_empty());
}

#[test]
fn timer_keys_have_apaches_defaults_and_names() {
    let defaults = BrokerConfig::resolve_broker(&BrokerArgs::default()).unwrap();
    assert_eq!(defaults.timers, TimerConfig::default());
    assert_eq!(defaults.timers.precision_ms(), 1000);
    assert_eq!(defaults.timers.max_delay_sec, 3 * 24 * 3600);
    assert!(defaults.timers.enabled);
    let text = "timerWheelEnable=false\ntimerPrecisionMs=250\ntimerMaxDelaySec=60\n";
    let path = conf_file("timer.conf", text);
    let config = BrokerConfig::resolve_broker(&with_file(&path)).unwrap();
    assert!(!config.timers.enabled);
    assert_eq!(
        config.timers.precision_ms(),
        200,
        "rounded down as Apache's setter"
    );
    assert_eq!(config.timers.max_delay_sec, 60);
    assert!(config.unknown_keys.is_empty());
}

#[test]
fn bad_values_name_the_key_and_the_file() {
    let cases = [
        ("listenPort=70000", "listenPort"),
        ("brokerId=-1", "brokerId"),
        ("flushDiskType=SOMETIMES", "flushDiskType"),
        ("autoCreateTopicEnable=yes", "autoCreateTopicEnable"),
        ("defaultTopicQueueNums=0", "defaultTopicQueueNums"),
        ("brokerIP1=localhost", "brokerIP1"),
        ("maxMessageSize=5000000", "maxMessageSize"),
        ("mapedFileSizeCommitLog=1G", "mappedFileSizeCommitLog"),
        ("brokerPermission=9", "brokerPermission"),
        ("namesrvAddr=10.0.0.1", "namesrvAddr"),
        ("brokerName=a b", "brokerName"),
        ("shards=0", "shards"),
        ("storePathRootDir=", "storePathRootDir"),
        ("messageDelayLevel=1s 5q", "messageDelayLevel"),
        ("messageDelayLevel=", "messageDelayLevel"),
        ("transactionTimeOut=-1", "transactionTimeOut"),
        ("transactionTimeOut=86400001", "transactionTimeOut"),
        ("transactionCheckInterval=10", "transactionCheckInterval"),
        ("transactionCheckMax=many", "transactionCheckMax"),
        ("rejectTransactionMessage=1", "rejectTransactionMessage"),
        ("storeReplyMessageEnable=yes", "storeReplyMessageEnable"),
        ("timerWheelEnable=no", "timerWheelEnable"),
        ("timerPrecisionMs=0", "timerPrecisionMs"),
        ("timerMaxDelaySec=315360001", "timerMaxDelaySec"),
    ];
    for (line, expected_key) in cases {
        let path = conf_file("bad.conf", line);
        match BrokerConfig::resolve_broker(&with_file(&path)) {
            Err(ConfigError::BadValue { origin, key, .. }) => {
                assert_eq!(
                    (origin.as_str(), key),
                    (path.to_str().unwrap(), expected_key)
                );
            }
            other => panic!("{line}: {other:?}"),
        }
    }
    let args = BrokerArgs {
        shards: Some(SHARDS_MAX + 1),
        ..BrokerArgs::default()
    };
    let error = BrokerConfig::resolve_broker(&args).unwrap_err();
    assert!(
        matches!(
            error,
            ConfigError::BadValue {
                key: "--shards",
                ..
            }
        ),
        "{error}"
    );
    let missing = BrokerArgs {
        config: Some("/nonexistent/broker.conf".into()),
        ..BrokerArgs::default()
    };
    assert!(matches!(
        BrokerConfig::resolve_broker(&missing),
        Err(ConfigError::Read { .. })
    ));
    let path = conf_file("escape.conf", "key=\\u12");
    assert!(matches!(
        BrokerConfig::resolve_broker(&with_file(&path)),
        Err(ConfigError::Syntax { line: 1, .. })
    ));
}

#[test]
fn the_clap_flags_parse() {
    use clap::Parser;
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        standalone: StandaloneArgs,
    }
    let cli = Cli::try_parse_from([
        "ringmq",
        "--listen",
        "127.0.0.1:1",
        "--namesrv-listen",
        "127.0.0.1:2",
        "--shards",
        "2",
        "--data",
        "/d",
        "--flush-disk-type",
        "SYNC_FLUSH",
        "--broker-ip",
        "127.0.0.1",
        "-c",
        "/c.conf",
        "--cluster",
        "C",
        "--broker-name",
        "b",
        "--namesrv",
        "x:1;y:2",
    ])
    .unwrap();
    let args = &cli.standalone.broker;
    assert_eq!(args.flush_disk_type, Some(FlushMode::SyncFlush));
    assert_eq!(args.config.as_deref(), Some(Path::new("/c.conf")));
    assert_eq!(
        cli.standalone.namesrv_listen,
        Some("127.0.0.1:2".parse().unwrap())
    );
    assert!(Cli::try_parse_from(["ringmq", "--flush-disk-type", "NEVER"]).is_err());
}
