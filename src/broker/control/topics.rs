//! The broker's topic table (Java's `TopicConfigManager`), persisted in
//! `DIR/config/topics.json` in Apache's shape (`{"dataVersion":…,"topicConfigTable":…}`), so
//! a data directory moves between Apache RocketMQ and ringmq with its topics.
//!
//! Owned and written by shard 0 alone; every change moves the data version on and is on disk
//! before its future completes (the write is awaited on shard 0's executor, not blocking it).
//! The other shards read [`TopicSnapshot`]s of it.

use crate::broker::config::BrokerConfig;
pub use crate::broker::names::{has_illegal_chars, QUEUE_NUMS_MAX};
use crate::persist::{FileShape, PersistError, PersistedTable, Snapshot};
use crate::protocol::body::{
    self, DataVersion, TopicConfig, TopicConfigSerializeWrapper, PERM_INHERIT, PERM_READ,
    PERM_WRITE,
};
use crate::protocol::fastjson::FastjsonError;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Where the table lives under the data directory (Apache's `BrokerPathConfigHelper`).
pub const TOPICS_FILE: &str = "config/topics.json";
/// Topics per broker. Apache has no limit, but rewrites the whole file on every change, as
/// we do: 100 k topics make a file of ~20 MB, about the most a topic creation should rewrite.
pub const TOPICS_MAX: usize = 100_000;
/// TopicValidator's limit on a topic name.
pub const TOPIC_NAME_CHARS_MAX: usize = 127;
/// TopicValidator's limit on retry and DLQ topic names: prefix plus a group name.
pub const RETRY_OR_DLQ_TOPIC_CHARS_MAX: usize = 255;

/// The topic producers name as `defaultTopic` to have topics created on first send.
pub const AUTO_CREATE_TOPIC: &str = "TBW102";
pub use ringmq_shards::schedule::SCHEDULE_TOPIC;
pub const BENCHMARK_TOPIC: &str = "BenchmarkTest";
pub const TRANS_HALF_TOPIC: &str = "RMQ_SYS_TRANS_HALF_TOPIC";
pub const TRANS_OP_HALF_TOPIC: &str = "RMQ_SYS_TRANS_OP_HALF_TOPIC";
pub const TRANS_CHECK_MAX_TIME_TOPIC: &str = "TRANS_CHECK_MAX_TIME_TOPIC";
pub const TRACE_TOPIC: &str = "RMQ_SYS_TRACE_TOPIC";
pub const SELF_TEST_TOPIC: &str = "SELF_TEST_TOPIC";
pub const OFFSET_MOVED_EVENT_TOPIC: &str = "OFFSET_MOVED_EVENT";
/// Topics named with this prefix are system topics.
pub const SYSTEM_TOPIC_PREFIX: &str = "rmq_sys_";
/// `MixAll.RETRY_GROUP_TOPIC_PREFIX`: a consumer group's retry topic.
pub const RETRY_GROUP_TOPIC_PREFIX: &str = "%RETRY%";
/// `MixAll.DLQ_GROUP_TOPIC_PREFIX`: a consumer group's dead-letter topic.
pub const DLQ_GROUP_TOPIC_PREFIX: &str = "%DLQ%";
/// `<cluster>_REPLY_TOPIC` carries request-reply responses.
pub const REPLY_TOPIC_SUFFIX: &str = "_REPLY_TOPIC";
/// The delay levels of SCHEDULE_TOPIC_XXXX, one queue each.
const SCHEDULE_TOPIC_QUEUE_NUMS: i32 = 18;
/// Java's `TopicConfig(name)` queue counts, which the cluster-name topic keeps.
const TOPIC_QUEUE_NUMS_DEFAULT: i32 = 16;
/// A DLQ has one queue (`DLQ_NUMS_PER_GROUP`).
const DLQ_QUEUE_NUMS: i32 = 1;
/// `TRANS_CHECK_MAX_TIME_TOPIC` has one queue (`TCMT_QUEUE_NUMS`).
const TRANS_CHECK_MAX_TIME_QUEUE_NUMS: i32 = 1;
/// PermName's PRIORITY bit, the highest one defined.
const PERM_PRIORITY: i32 = 8;
const PERM_ALL: i32 = PERM_PRIORITY | PERM_READ | PERM_WRITE | PERM_INHERIT;

/// Topics fixed by name in TopicValidator's system set; the cluster and broker names and the
/// reply topic join them per broker.
const SYSTEM_TOPICS: [&str; 9] = [
    AUTO_CREATE_TOPIC,
    SCHEDULE_TOPIC,
    BENCHMARK_TOPIC,
    TRANS_HALF_TOPIC,
    TRACE_TOPIC,
    TRANS_OP_HALF_TOPIC,
    TRANS_CHECK_MAX_TIME_TOPIC,
    SELF_TEST_TOPIC,
    OFFSET_MOVED_EVENT_TOPIC,
];
/// Topics clients may not send to (TopicValidator's NOT_ALLOWED_SEND_TOPIC_SET).
const SEND_FORBIDDEN_TOPICS: [&str; 6] = [
    SCHEDULE_TOPIC,
    TRANS_HALF_TOPIC,
    TRANS_OP_HALF_TOPIC,
    TRANS_CHECK_MAX_TIME_TOPIC,
    SELF_TEST_TOPIC,
    OFFSET_MOVED_EVENT_TOPIC,
];

/// Why a topic change was refused.
#[derive(Debug, thiserror::Error)]
pub enum TopicError {
    #[error("the topic name is blank")]
    Blank,
    #[error("topic {0:?} may hold only letters, digits, %, |, - and _")]
    IllegalChars(String),
    #[error("topic {topic:?} is longer than {chars_max} characters")]
    TooLong { topic: String, chars_max: usize },
    #[error("topic {topic}: {queue_nums} queues, not in 1..={QUEUE_NUMS_MAX}")]
    QueueNums { topic: String, queue_nums: i32 },
    #[error("topic {topic}: perm {perm} has bits PermName does not define")]
    Perm { topic: String, perm: i32 },
    #[error("the topic[{0}] is conflict with system topic")]
    SystemTopic(String),
    #[error("topic {topic} cannot be auto-created: default topic {default_topic} {reason}")]
    NoAutoCreate {
        topic: String,
        default_topic: String,
        reason: &'static str,
    },
    #[error("the broker already holds {TOPICS_MAX} topics")]
    Full,
    #[error(transparent)]
    Persist(#[from] PersistError),
}

/// A topic looked up or created on demand, and whether this call created it (the broker
/// then registers with its NameServers at once, as Apache does).
#[derive(Debug, Clone, PartialEq)]
pub struct Ensured {
    pub config: TopicConfig,
    pub created: bool,
}

/// TopicValidator.validateTopic: not blank, legal characters, not too long.
pub fn validate_topic_name(topic: &str) -> Result<(), TopicError> {
    if topic.trim().is_empty() {
        return Err(TopicError::Blank);
    }
    if has_illegal_chars(topic) {
        return Err(TopicError::IllegalChars(topic.to_owned()));
    }
    let chars_max = if topic.starts_with(RETRY_GROUP_TOPIC_PREFIX)
        || topic.starts_with(DLQ_GROUP_TOPIC_PREFIX)
    {
        RETRY_OR_DLQ_TOPIC_CHARS_MAX
    } else {
        TOPIC_NAME_CHARS_MAX
    };
    if topic.len() > chars_max {
        return Err(TopicError::TooLong {
            topic: topic.to_owned(),
            chars_max,
        });
    }
    Ok(())
}

/// True for topics clients may not send to (SEND_MESSAGE answers NO_PERMISSION).
pub fn is_send_forbidden(topic: &str) -> bool {
    SEND_FORBIDDEN_TOPICS.contains(&topic)
}

/// `%RETRY%<group>`.
pub fn retry_topic(group: &str) -> String {
    format!("{RETRY_GROUP_TOPIC_PREFIX}{group}")
}

/// `%DLQ%<group>`.
pub fn dlq_topic(group: &str) -> String {
    format!("{DLQ_GROUP_TOPIC_PREFIX}{group}")
}

/// A read-only copy of the topic table for the other shards.
pub type TopicSnapshot = Snapshot<TopicConfig>;

/// The file's shape: what Apache's `TopicConfigManager.encode` writes.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TopicsFile<'a> {
    data_version: &'a DataVersion,
    topic_config_table: &'a BTreeMap<String, TopicConfig>,
}

fn file_shape() -> FileShape<TopicConfig> {
    FileShape {
        encode: |topics, data_version| {
            body::encode(&TopicsFile {
                data_version,
                topic_config_table: topics,
            })
        },
        decode: |bytes| -> Result<_, FastjsonError> {
            let wrapper: TopicConfigSerializeWrapper = body::decode(bytes)?;
            Ok((wrapper.topic_config_table, wrapper.data_version))
        },
    }
}

/// The broker's topics. See the module doc.
#[derive(Clone)]
pub struct TopicTable {
    table: PersistedTable<TopicConfig>,
    auto_create_topic_enable: bool,
    /// Per-broker system topics: the cluster name, the broker name, the reply topic.
    broker_system_topics: BTreeSet<String>,
}

impl TopicTable {
    /// Loads `dir/config/topics.json` over the system topics Apache creates at start, or
    /// starts with those alone.
    pub fn open(dir: &Path, config: &BrokerConfig) -> Result<Self, PersistError> {
        let reply_topic = format!("{}{REPLY_TOPIC_SUFFIX}", config.broker_cluster_name);
        let table = PersistedTable::open(
            dir.join(TOPICS_FILE),
            file_shape(),
            system_topics(config, &reply_topic),
            TOPICS_MAX,
        )?;
        Ok(Self {
            table,
            auto_create_topic_enable: config.auto_create_topic_enable,
            broker_system_topics: BTreeSet::from([
                config.broker_cluster_name.clone(),
                config.broker_name.clone(),
                reply_topic,
            ]),
        })
    }

    pub fn get(&self, topic: &str) -> Option<&TopicConfig> {
        self.table.get(topic)
    }

    pub fn data_version(&self) -> DataVersion {
        self.table.data_version()
    }

    pub fn len(&self) -> usize {
        self.table.len()
    }

    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// TopicValidator.isSystemTopic, with this broker's cluster, broker and reply topics.
    pub fn is_system_topic(&self, topic: &str) -> bool {
        SYSTEM_TOPICS.contains(&topic)
            || topic.starts_with(SYSTEM_TOPIC_PREFIX)
            || self.broker_system_topics.contains(topic)
    }

    /// UPDATE_AND_CREATE_TOPIC: creates or replaces a topic. System topics cannot be changed
    /// this way; an update that changes nothing keeps the version (Apache 5.x).
    pub async fn upsert(&mut self, config: TopicConfig, now_ms: i64) -> Result<(), TopicError> {
        let topic = config.topic_name.clone();
        validate_topic_name(&topic)?;
        if self.is_system_topic(&topic) {
            return Err(TopicError::SystemTopic(topic));
        }
        for queue_nums in [config.read_queue_nums, config.write_queue_nums] {
            check_queue_nums(&topic, queue_nums)?;
        }
        if config.perm & !PERM_ALL != 0 {
            return Err(TopicError::Perm {
                topic,
                perm: config.perm,
            });
        }
        if self.get(&topic) == Some(&config) {
            return Ok(());
        }
        self.put(config, now_ms).await
    }

    /// DELETE_TOPIC_IN_BROKER: `Ok(false)` when there was no such topic. System topics
    /// cannot be deleted.
    pub async fn delete(&mut self, topic: &str, now_ms: i64) -> Result<bool, TopicError> {
        if self.is_system_topic(topic) {
            return Err(TopicError::SystemTopic(topic.to_owned()));
        }
        Ok(self.table.remove(topic, now_ms).await?.is_some())
    }

    /// Java's `createTopicInSendMessageMethod`: a send to an unknown topic creates it from
    /// `default_topic` (normally TBW102) if that topic lets others inherit from it, with
    /// min(`queue_nums`, its write queues) queues and its permissions less INHERIT.
    pub async fn auto_create_for_send(
        &mut self,
        topic: &str,
        default_topic: &str,
        queue_nums: i32,
        now_ms: i64,
    ) -> Result<Ensured, TopicError> {
        if let Some(config) = self.get(topic) {
            return Ok(existing(config));
        }
        validate_topic_name(topic)?;
        let refuse = |reason| TopicError::NoAutoCreate {
            topic: topic.to_owned(),
            default_topic: default_topic.to_owned(),
            reason,
        };
        let default = self
            .get(default_topic)
            .ok_or_else(|| refuse("does not exist"))?;
        // With autoCreateTopicEnable off, Apache strips TBW102's INHERIT bit at this point.
        let inherits = default.perm & PERM_INHERIT != 0
            && (default_topic != AUTO_CREATE_TOPIC || self.auto_create_topic_enable);
        if !inherits {
            return Err(refuse("is not inheritable"));
        }
        let queue_nums = queue_nums.min(default.write_queue_nums).min(QUEUE_NUMS_MAX);
        check_queue_nums(topic, queue_nums)?;
        let config = TopicConfig {
            perm: default.perm & !PERM_INHERIT,
            topic_filter_type: default.topic_filter_type,
            ..TopicConfig::new(topic, queue_nums)
        };
        self.create(config, now_ms).await
    }

    /// The retry topic of `group` (`%RETRY%group`, read-write), created on first use with the
    /// group's `retryQueueNums`.
    pub async fn create_retry_topic(
        &mut self,
        group: &str,
        queue_nums: i32,
        now_ms: i64,
    ) -> Result<Ensured, TopicError> {
        let topic = retry_topic(group);
        if let Some(config) = self.get(&topic) {
            return Ok(existing(config));
        }
        validate_topic_name(&topic)?;
        check_queue_nums(&topic, queue_nums)?;
        self.create(read_write(TopicConfig::new(topic, queue_nums)), now_ms)
            .await
    }

    /// The dead-letter topic of `group` (`%DLQ%group`, one queue, read-write as from 4.9.2
    /// so that DLQ messages can be consumed again).
    pub async fn create_dlq_topic(
        &mut self,
        group: &str,
        now_ms: i64,
    ) -> Result<Ensured, TopicError> {
        let topic = dlq_topic(group);
        if let Some(config) = self.get(&topic) {
            return Ok(existing(config));
        }
        validate_topic_name(&topic)?;
        self.create(read_write(TopicConfig::new(topic, DLQ_QUEUE_NUMS)), now_ms)
            .await
    }

    /// `TRANS_CHECK_MAX_TIME_TOPIC` (one queue, read-write), created when the first half message
    /// is discarded after `transactionCheckMax` checks, as Apache's
    /// `createTopicOfTranCheckMaxTime` does.
    pub async fn create_check_max_time_topic(
        &mut self,
        now_ms: i64,
    ) -> Result<Ensured, TopicError> {
        if let Some(config) = self.get(TRANS_CHECK_MAX_TIME_TOPIC) {
            return Ok(existing(config));
        }
        let config = TopicConfig::new(TRANS_CHECK_MAX_TIME_TOPIC, TRANS_CHECK_MAX_TIME_QUEUE_NUMS);
        self.create(read_write(config), now_ms).await
    }

    /// For REGISTER_BROKER and GET_ALL_TOPIC_CONFIG.
    pub fn wrapper(&self) -> TopicConfigSerializeWrapper {
        TopicConfigSerializeWrapper {
            data_version: self.data_version(),
            topic_config_table: self.table.entries().clone(),
            ..TopicConfigSerializeWrapper::default()
        }
    }

    pub fn snapshot(&self) -> TopicSnapshot {
        self.table.snapshot()
    }

    async fn create(&mut self, config: TopicConfig, now_ms: i64) -> Result<Ensured, TopicError> {
        self.put(config.clone(), now_ms).await?;
        Ok(Ensured {
            config,
            created: true,
        })
    }

    async fn put(&mut self, config: TopicConfig, now_ms: i64) -> Result<(), TopicError> {
        let topic = config.topic_name.clone();
        if self.table.put(&topic, config, now_ms).await? {
            Ok(())
        } else {
            Err(TopicError::Full)
        }
    }
}

fn existing(config: &TopicConfig) -> Ensured {
    Ensured {
        config: config.clone(),
        created: false,
    }
}

fn read_write(config: TopicConfig) -> TopicConfig {
    TopicConfig {
        perm: PERM_READ | PERM_WRITE,
        ..config
    }
}

fn check_queue_nums(topic: &str, queue_nums: i32) -> Result<(), TopicError> {
    if (1..=QUEUE_NUMS_MAX).contains(&queue_nums) {
        Ok(())
    } else {
        Err(TopicError::QueueNums {
            topic: topic.to_owned(),
            queue_nums,
        })
    }
}

/// The topics Apache's `TopicConfigManager` puts in its table before loading the file.
/// Deviations: RMQ_SYS_TRACE_TOPIC is always created (Apache: only with traceTopicEnable), so
/// clients with message tracing on find it on every broker; the POP revive and broker-member
/// sync topics of 5.x are left out until those features exist.
fn system_topics(config: &BrokerConfig, reply_topic: &str) -> BTreeMap<String, TopicConfig> {
    let all = PERM_INHERIT | PERM_READ | PERM_WRITE;
    let mut topics = vec![
        TopicConfig::new(SELF_TEST_TOPIC, 1),
        TopicConfig::new(BENCHMARK_TOPIC, QUEUE_NUMS_MAX),
        TopicConfig {
            perm: all,
            ..TopicConfig::new(&config.broker_cluster_name, TOPIC_QUEUE_NUMS_DEFAULT)
        },
        TopicConfig {
            perm: all,
            ..TopicConfig::new(&config.broker_name, 1)
        },
        TopicConfig::new(OFFSET_MOVED_EVENT_TOPIC, 1),
        TopicConfig::new(SCHEDULE_TOPIC, SCHEDULE_TOPIC_QUEUE_NUMS),
        TopicConfig::new(TRACE_TOPIC, 1),
        TopicConfig::new(reply_topic, 1),
        TopicConfig::new(TRANS_HALF_TOPIC, 1),
        TopicConfig::new(TRANS_OP_HALF_TOPIC, 1),
    ];
    if config.auto_create_topic_enable {
        topics.push(TopicConfig {
            perm: all,
            ..TopicConfig::new(AUTO_CREATE_TOPIC, config.default_topic_queue_nums)
        });
    }
    topics
        .into_iter()
        .map(|topic| (topic.topic_name.clone(), topic))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::persist::run_local;
    use crate::persist::{test_dir, test_dir_with_file};

    /// topics.json as Apache RocketMQ 4.9 writes it: fastjson's pretty form of
    /// `TopicConfigSerializeWrapper` (4.9's DataVersion has no stateVersion, its TopicConfig
    /// no attributes).
    const APACHE_49_FILE: &str = r#"{
	"dataVersion":{
		"counter":5,
		"timestamp":1700000000456
	},
	"topicConfigTable":{
		"orders":{
			"order":false,
			"perm":6,
			"readQueueNums":4,
			"topicFilterType":"SINGLE_TAG",
			"topicName":"orders",
			"topicSysFlag":0,
			"writeQueueNums":4
		},
		"%RETRY%billing":{
			"order":false,
			"perm":6,
			"readQueueNums":1,
			"topicFilterType":"SINGLE_TAG",
			"topicName":"%RETRY%billing",
			"topicSysFlag":0,
			"writeQueueNums":1
		},
		"TBW102":{
			"order":false,
			"perm":7,
			"readQueueNums":4,
			"topicFilterType":"SINGLE_TAG",
			"topicName":"TBW102",
			"topicSysFlag":0,
			"writeQueueNums":4
		}
	}
}"#;

    fn config(auto_create_topic_enable: bool) -> BrokerConfig {
        BrokerConfig {
            auto_create_topic_enable,
            ..BrokerConfig::for_tests()
        }
    }

    #[test]
    fn starts_with_apaches_system_topics_and_writes_nothing() {
        let dir = test_dir("topics-fresh");
        let table = TopicTable::open(&dir, &config(true)).unwrap();
        let tbw = table.get(AUTO_CREATE_TOPIC).unwrap();
        assert_eq!((tbw.perm, tbw.write_queue_nums), (7, 8));
        assert_eq!(table.get(SCHEDULE_TOPIC).unwrap().read_queue_nums, 18);
        assert_eq!(table.get("DefaultCluster").unwrap().perm, 7);
        assert_eq!(table.get("broker-a").unwrap().write_queue_nums, 1);
        for topic in [
            SELF_TEST_TOPIC,
            OFFSET_MOVED_EVENT_TOPIC,
            TRACE_TOPIC,
            TRANS_HALF_TOPIC,
        ] {
            assert_eq!(table.get(topic).unwrap().perm, 6, "{topic}");
        }
        assert!(table.get("DefaultCluster_REPLY_TOPIC").is_some());
        assert!(table.is_system_topic("broker-a") && table.is_system_topic("rmq_sys_x"));
        assert!(!table.is_system_topic("orders"));
        assert_eq!(table.data_version(), DataVersion::default());
        assert!(!dir.exists());
        let without = TopicTable::open(&dir, &config(false)).unwrap();
        assert!(without.get(AUTO_CREATE_TOPIC).is_none());
    }

    #[test]
    fn loads_a_file_written_by_apache_49_over_the_system_topics() {
        // A crash during a write leaves a torn copy beside the file; it is never read.
        let dir = test_dir_with_file("topics-apache", TOPICS_FILE, APACHE_49_FILE);
        let table = TopicTable::open(&dir, &config(true)).unwrap();
        assert_eq!(table.data_version().counter, 5);
        assert_eq!(table.data_version().timestamp, 1_700_000_000_456);
        assert_eq!(table.get("orders").unwrap().write_queue_nums, 4);
        assert_eq!(table.get("%RETRY%billing").unwrap().perm, 6);
        // The file's TBW102 wins over the built-in one, as Apache's putAll does.
        assert_eq!(table.get(AUTO_CREATE_TOPIC).unwrap().write_queue_nums, 4);
        assert!(table.get(SCHEDULE_TOPIC).is_some());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn every_change_is_persisted_and_reloads_identically() {
        let dir = test_dir("topics-roundtrip");
        let mut table = TopicTable::open(&dir, &config(true)).unwrap();
        run_local(table.upsert(TopicConfig::new("orders", 4), 1_000)).unwrap();
        run_local(table.auto_create_for_send("auto", AUTO_CREATE_TOPIC, 4, 2_000)).unwrap();
        run_local(table.create_retry_topic("billing", 1, 3_000)).unwrap();
        run_local(table.create_dlq_topic("billing", 4_000)).unwrap();
        run_local(table.upsert(TopicConfig::new("gone", 1), 5_000)).unwrap();
        assert!(run_local(table.delete("gone", 6_000)).unwrap());
        assert!(!run_local(table.delete("gone", 7_000)).unwrap());
        let version = table.data_version();
        assert_eq!((version.counter, version.timestamp), (6, 6_000));
        let text = std::fs::read_to_string(dir.join(TOPICS_FILE)).unwrap();
        assert!(
            text.starts_with(r#"{"dataVersion":{"counter":6,"#),
            "{text}"
        );
        assert!(text.contains(r#""topicConfigTable":{"#));
        let reloaded = TopicTable::open(&dir, &config(true)).unwrap();
        assert_eq!(reloaded.wrapper(), table.wrapper());
        assert!(reloaded.get("gone").is_none());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn upsert_applies_topic_validators_rules() {
        let dir = test_dir("topics-validate");
        let mut table = TopicTable::open(&dir, &config(true)).unwrap();
        let bad = |table: &mut TopicTable, config: TopicConfig| {
            run_local(table.upsert(config, 1)).unwrap_err()
        };
        assert!(matches!(
            bad(&mut table, TopicConfig::new(" ", 1)),
            TopicError::Blank
        ));
        assert!(matches!(
            bad(&mut table, TopicConfig::new("a.b", 1)),
            TopicError::IllegalChars(_)
        ));
        let long = "t".repeat(TOPIC_NAME_CHARS_MAX + 1);
        assert!(matches!(
            bad(&mut table, TopicConfig::new(long, 1)),
            TopicError::TooLong { .. }
        ));
        let retry = format!("{RETRY_GROUP_TOPIC_PREFIX}{}", "g".repeat(200));
        run_local(table.upsert(TopicConfig::new(retry, 1), 1)).unwrap();
        for queue_nums in [0, QUEUE_NUMS_MAX + 1] {
            let error = bad(&mut table, TopicConfig::new("q", queue_nums));
            assert!(
                matches!(error, TopicError::QueueNums { .. }),
                "{queue_nums}"
            );
        }
        let perm = TopicConfig {
            perm: 16,
            ..TopicConfig::new("p", 1)
        };
        assert!(matches!(bad(&mut table, perm), TopicError::Perm { .. }));
        for system in [SCHEDULE_TOPIC, "DefaultCluster", "broker-a", "rmq_sys_x"] {
            let error = bad(&mut table, TopicConfig::new(system, 1));
            assert!(matches!(error, TopicError::SystemTopic(_)), "{system}");
            assert!(matches!(
                run_local(table.delete(system, 1)),
                Err(TopicError::SystemTopic(_))
            ));
        }
        assert_eq!(table.get(SCHEDULE_TOPIC).unwrap().write_queue_nums, 18);
        let version = table.data_version();
        run_local(table.upsert(TopicConfig::new("orders", 4), 2)).unwrap();
        run_local(table.upsert(TopicConfig::new("orders", 4), 3)).unwrap();
        assert_eq!(table.data_version().counter, version.counter + 1);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn auto_create_inherits_from_tbw102_as_apache_does() {
        let dir = test_dir("topics-auto");
        let mut table = TopicTable::open(&dir, &config(true)).unwrap();
        let made = run_local(table.auto_create_for_send("t1", AUTO_CREATE_TOPIC, 16, 1)).unwrap();
        assert!(made.created);
        assert_eq!((made.config.perm, made.config.read_queue_nums), (6, 8));
        let again = run_local(table.auto_create_for_send("t1", AUTO_CREATE_TOPIC, 2, 2)).unwrap();
        assert_eq!((again.created, again.config.write_queue_nums), (false, 8));
        assert_eq!(
            run_local(table.auto_create_for_send("t2", AUTO_CREATE_TOPIC, 2, 3))
                .unwrap()
                .config
                .write_queue_nums,
            2
        );
        // A plain topic has no INHERIT bit, so it cannot serve as a default topic.
        let error = run_local(table.auto_create_for_send("t3", "t1", 2, 4)).unwrap_err();
        assert!(matches!(
            error,
            TopicError::NoAutoCreate {
                reason: "is not inheritable",
                ..
            }
        ));
        let error = run_local(table.auto_create_for_send("t3", "missing", 2, 4)).unwrap_err();
        assert!(matches!(
            error,
            TopicError::NoAutoCreate {
                reason: "does not exist",
                ..
            }
        ));
        assert!(matches!(
            run_local(table.auto_create_for_send("t3", AUTO_CREATE_TOPIC, 0, 4)),
            Err(TopicError::QueueNums { .. })
        ));
        assert!(matches!(
            run_local(table.auto_create_for_send("t/3", AUTO_CREATE_TOPIC, 4, 4)),
            Err(TopicError::IllegalChars(_))
        ));
        assert!(table.get("t3").is_none());
        std::fs::remove_dir_all(&dir).unwrap();
        // With autoCreateTopicEnable off, a TBW102 left in the file from before is not used.
        std::fs::create_dir_all(dir.join("config")).unwrap();
        std::fs::write(dir.join(TOPICS_FILE), APACHE_49_FILE).unwrap();
        let mut table = TopicTable::open(&dir, &config(false)).unwrap();
        let error =
            run_local(table.auto_create_for_send("t4", AUTO_CREATE_TOPIC, 4, 5)).unwrap_err();
        assert!(matches!(error, TopicError::NoAutoCreate { .. }));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn retry_and_dlq_topics_are_read_write() {
        let dir = test_dir("topics-retry");
        let mut table = TopicTable::open(&dir, &config(true)).unwrap();
        let retry = run_local(table.create_retry_topic("g", 2, 1)).unwrap();
        assert_eq!(retry.config.topic_name, "%RETRY%g");
        assert_eq!((retry.config.perm, retry.config.write_queue_nums), (6, 2));
        let dlq = run_local(table.create_dlq_topic("g", 2)).unwrap();
        assert_eq!(dlq.config.topic_name, "%DLQ%g");
        assert_eq!(
            (dlq.config.perm, dlq.config.write_queue_nums, dlq.created),
            (6, 1, true)
        );
        assert!(!run_local(table.create_dlq_topic("g", 3)).unwrap().created);
        assert!(matches!(
            run_local(table.create_retry_topic("g!", 1, 4)),
            Err(TopicError::IllegalChars(_))
        ));
        assert!(is_send_forbidden(SCHEDULE_TOPIC) && !is_send_forbidden("%RETRY%g"));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn snapshots_are_plain_data_for_other_shards() {
        fn clone_and_send<T: Clone + Send + 'static>(_: &T) {}
        let dir = test_dir("topics-snapshot");
        let mut table = TopicTable::open(&dir, &config(true)).unwrap();
        let before = table.snapshot();
        clone_and_send(&before);
        run_local(table.upsert(TopicConfig::new("orders", 4), 1)).unwrap();
        let after = table.snapshot();
        assert!(before.get("orders").is_none());
        assert_eq!(after.get("orders").unwrap().read_queue_nums, 4);
        assert!(after.data_version.counter > before.data_version.counter);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
