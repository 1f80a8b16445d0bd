//! The broker's consumer-group settings (Java's `SubscriptionGroupManager`), persisted in
//! `DIR/config/subscriptionGroup.json` in Apache's shape, so a data directory moves between
//! Apache RocketMQ and ringmq with its groups.
//!
//! Owned and written by shard 0 alone; every change moves the data version on and is on disk
//! before its future completes (the write is awaited on shard 0's executor, not blocking it).
//! The other shards read [`GroupSnapshot`]s of it.
//! `forbiddenTable` (5.x per-topic consume bans) is written empty and not kept on load:
//! ringmq has no command that sets it yet.

use crate::broker::config::BrokerConfig;
use crate::broker::names::{has_illegal_chars, QUEUE_NUMS_MAX};
use crate::persist::{FileShape, PersistError, PersistedTable, Snapshot};
use crate::protocol::body::subscription_group::{
    SubscriptionGroupConfig, SubscriptionGroupWrapper,
};
use crate::protocol::body::{self, DataVersion};
use crate::protocol::fastjson::FastjsonError;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// Where the table lives under the data directory (Apache's `BrokerPathConfigHelper`).
pub const SUBSCRIPTION_GROUPS_FILE: &str = "config/subscriptionGroup.json";
/// Groups per broker. Groups are auto-created by any consumer that connects, so a client
/// generating group names must not grow the file (rewritten whole on every change) without
/// end; 100 k groups make a file of ~40 MB.
pub const SUBSCRIPTION_GROUPS_MAX: usize = 100_000;
/// TopicValidator's limit on a group name (5.x): its retry topic must fit 255 characters.
pub const GROUP_NAME_CHARS_MAX: usize = 120;
/// Groups named with this prefix are the broker's own and are created even when
/// autoCreateSubscriptionGroup is off (`MixAll.isSysConsumerGroup`).
pub const SYSTEM_GROUP_PREFIX: &str = "CID_RMQ_SYS_";

/// The groups Apache's `SubscriptionGroupManager` puts in its table before loading the file.
pub const SYSTEM_GROUPS: [&str; 8] = [
    "TOOLS_CONSUMER",
    "FILTERSRV_CONSUMER",
    "SELF_TEST_C_GROUP",
    "CID_ONS-HTTP-PROXY",
    "CID_ONSAPI_PULL",
    "CID_ONSAPI_PERMISSION",
    "CID_ONSAPI_OWNER",
    "CID_SYS_RMQ_TRANS",
];

/// A read-only copy of the group table for the other shards.
pub type GroupSnapshot = Snapshot<SubscriptionGroupConfig>;

/// Why a group change was refused.
#[derive(Debug, thiserror::Error)]
pub enum GroupError {
    #[error("the group name is blank")]
    Blank,
    #[error("group {0:?} may hold only letters, digits, %, |, - and _")]
    IllegalChars(String),
    #[error("group {0:?} is longer than {GROUP_NAME_CHARS_MAX} characters")]
    TooLong(String),
    #[error("group {group}: retryQueueNums {retry_queue_nums} not in 1..={QUEUE_NUMS_MAX}")]
    RetryQueueNums {
        group: String,
        retry_queue_nums: i32,
    },
    #[error("the broker already holds {SUBSCRIPTION_GROUPS_MAX} subscription groups")]
    Full,
    #[error(transparent)]
    Persist(#[from] PersistError),
}

/// TopicValidator.validateGroup: not blank, legal characters, not too long.
pub fn validate_group_name(group: &str) -> Result<(), GroupError> {
    if group.trim().is_empty() {
        return Err(GroupError::Blank);
    }
    if has_illegal_chars(group) {
        return Err(GroupError::IllegalChars(group.to_owned()));
    }
    if group.len() > GROUP_NAME_CHARS_MAX {
        return Err(GroupError::TooLong(group.to_owned()));
    }
    Ok(())
}

/// The file's shape: what Apache 5.x's `SubscriptionGroupManager` writes (4.9 lacks
/// `forbiddenTable`, which 4.9 ignores).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GroupsFile<'a> {
    data_version: &'a DataVersion,
    forbidden_table: BTreeMap<String, BTreeMap<String, i32>>,
    subscription_group_table: &'a BTreeMap<String, SubscriptionGroupConfig>,
}

fn file_shape() -> FileShape<SubscriptionGroupConfig> {
    FileShape {
        encode: |groups, data_version| {
            body::encode(&GroupsFile {
                data_version,
                forbidden_table: BTreeMap::new(),
                subscription_group_table: groups,
            })
        },
        decode: |bytes| -> Result<_, FastjsonError> {
            let wrapper: SubscriptionGroupWrapper = body::decode(bytes)?;
            Ok((wrapper.subscription_group_table, wrapper.data_version))
        },
    }
}

/// The broker's subscription groups. See the module doc.
#[derive(Clone)]
pub struct SubscriptionGroupTable {
    table: PersistedTable<SubscriptionGroupConfig>,
    auto_create_subscription_group: bool,
}

impl SubscriptionGroupTable {
    /// Loads `dir/config/subscriptionGroup.json` over the system groups, or starts with those
    /// alone.
    pub fn open(dir: &Path, config: &BrokerConfig) -> Result<Self, PersistError> {
        let system = SYSTEM_GROUPS
            .iter()
            .map(|name| (name.to_string(), SubscriptionGroupConfig::new(*name)))
            .collect();
        let table = PersistedTable::open(
            dir.join(SUBSCRIPTION_GROUPS_FILE),
            file_shape(),
            system,
            SUBSCRIPTION_GROUPS_MAX,
        )?;
        Ok(Self {
            table,
            auto_create_subscription_group: config.auto_create_subscription_group,
        })
    }

    pub fn get(&self, group: &str) -> Option<&SubscriptionGroupConfig> {
        self.table.get(group)
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

    /// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: creates or replaces the group named in `config`.
    pub async fn upsert(
        &mut self,
        config: SubscriptionGroupConfig,
        now_ms: i64,
    ) -> Result<(), GroupError> {
        validate_group_name(&config.group_name)?;
        if !(1..=QUEUE_NUMS_MAX).contains(&config.retry_queue_nums) {
            return Err(GroupError::RetryQueueNums {
                group: config.group_name,
                retry_queue_nums: config.retry_queue_nums,
            });
        }
        let group = config.group_name.clone();
        if self.table.put(&group, config, now_ms).await? {
            Ok(())
        } else {
            Err(GroupError::Full)
        }
    }

    /// DELETE_SUBSCRIPTIONGROUP: `Ok(false)` when there was no such group.
    pub async fn delete(&mut self, group: &str, now_ms: i64) -> Result<bool, GroupError> {
        Ok(self.table.remove(group, now_ms).await?.is_some())
    }

    /// Java's `findSubscriptionGroupConfig`: the group's settings, created with the defaults
    /// on first use when autoCreateSubscriptionGroup is on or the group is a system one;
    /// `Ok(None)` when it does not exist and may not be created (the caller answers
    /// SUBSCRIPTION_GROUP_NOT_EXIST).
    pub async fn find_or_auto_create(
        &mut self,
        group: &str,
        now_ms: i64,
    ) -> Result<Option<SubscriptionGroupConfig>, GroupError> {
        if let Some(config) = self.get(group) {
            return Ok(Some(config.clone()));
        }
        if !self.auto_create_subscription_group && !group.starts_with(SYSTEM_GROUP_PREFIX) {
            return Ok(None);
        }
        let config = SubscriptionGroupConfig::new(group);
        self.upsert(config.clone(), now_ms).await?;
        Ok(Some(config))
    }

    /// For GET_ALL_SUBSCRIPTIONGROUP_CONFIG.
    pub fn wrapper(&self) -> SubscriptionGroupWrapper {
        SubscriptionGroupWrapper {
            data_version: self.data_version(),
            forbidden_table: BTreeMap::new(),
            subscription_group_table: self.table.entries().clone(),
        }
    }

    pub fn snapshot(&self) -> GroupSnapshot {
        self.table.snapshot()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::persist::run_local;
    use crate::persist::{test_dir, test_dir_with_file};

    /// subscriptionGroup.json as Apache RocketMQ 4.9 writes it (fastjson's pretty form of
    /// `SubscriptionGroupManager`: no forbiddenTable, no 5.x group fields).
    const APACHE_49_FILE: &str = r#"{
	"dataVersion":{
		"counter":3,
		"timestamp":1700000000789
	},
	"subscriptionGroupTable":{
		"billing":{
			"brokerId":0,
			"consumeBroadcastEnable":true,
			"consumeEnable":true,
			"consumeFromMinEnable":true,
			"groupName":"billing",
			"notifyConsumerIdsChangedEnable":true,
			"retryMaxTimes":5,
			"retryQueueNums":2,
			"whichBrokerWhenConsumeSlowly":1
		},
		"TOOLS_CONSUMER":{
			"brokerId":0,
			"consumeBroadcastEnable":true,
			"consumeEnable":false,
			"consumeFromMinEnable":true,
			"groupName":"TOOLS_CONSUMER",
			"notifyConsumerIdsChangedEnable":true,
			"retryMaxTimes":16,
			"retryQueueNums":1,
			"whichBrokerWhenConsumeSlowly":1
		}
	}
}"#;

    fn config(auto_create_subscription_group: bool) -> BrokerConfig {
        BrokerConfig {
            auto_create_subscription_group,
            ..BrokerConfig::for_tests()
        }
    }

    #[test]
    fn starts_with_apaches_system_groups() {
        let dir = test_dir("groups-fresh");
        let table = SubscriptionGroupTable::open(&dir, &config(true)).unwrap();
        assert_eq!(table.len(), SYSTEM_GROUPS.len());
        let proxy = table.get("CID_ONS-HTTP-PROXY").unwrap();
        assert!(proxy.consume_broadcast_enable && proxy.consume_enable);
        assert_eq!(proxy.retry_max_times, 16);
        assert!(table.get("CID_SYS_RMQ_TRANS").is_some());
        assert_eq!(table.data_version(), DataVersion::default());
        assert!(!dir.exists());
    }

    #[test]
    fn loads_a_file_written_by_apache_49_and_ignores_a_torn_tmp() {
        let dir = test_dir_with_file("groups-apache", SUBSCRIPTION_GROUPS_FILE, APACHE_49_FILE);
        let table = SubscriptionGroupTable::open(&dir, &config(true)).unwrap();
        assert_eq!(table.data_version().counter, 3);
        let billing = table.get("billing").unwrap();
        assert_eq!((billing.retry_max_times, billing.retry_queue_nums), (5, 2));
        assert!(!table.get("TOOLS_CONSUMER").unwrap().consume_enable);
        assert!(table.get("CID_ONSAPI_OWNER").is_some());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn every_change_is_persisted_and_reloads_identically() {
        let dir = test_dir("groups-roundtrip");
        let mut table = SubscriptionGroupTable::open(&dir, &config(true)).unwrap();
        let orders = SubscriptionGroupConfig {
            retry_max_times: 3,
            consume_broadcast_enable: false,
            ..SubscriptionGroupConfig::new("orders")
        };
        run_local(table.upsert(orders.clone(), 10)).unwrap();
        run_local(table.find_or_auto_create("auto", 20))
            .unwrap()
            .unwrap();
        run_local(table.upsert(SubscriptionGroupConfig::new("gone"), 30)).unwrap();
        assert!(run_local(table.delete("gone", 40)).unwrap());
        assert!(!run_local(table.delete("gone", 50)).unwrap());
        assert_eq!(table.data_version().counter, 4);
        let text = std::fs::read_to_string(dir.join(SUBSCRIPTION_GROUPS_FILE)).unwrap();
        let head = r#"{"dataVersion":{"counter":4,"stateVersion":0,"timestamp":40},"#;
        assert!(text.starts_with(head), "{text}");
        assert!(text.contains(r#""forbiddenTable":{},"subscriptionGroupTable":{"#));
        let reloaded = SubscriptionGroupTable::open(&dir, &config(true)).unwrap();
        assert_eq!(reloaded.wrapper(), table.wrapper());
        assert_eq!(reloaded.get("orders"), Some(&orders));
        assert!(reloaded.get("gone").is_none());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn auto_creates_only_when_allowed() {
        let dir = test_dir("groups-auto");
        let mut table = SubscriptionGroupTable::open(&dir, &config(false)).unwrap();
        assert_eq!(
            run_local(table.find_or_auto_create("app", 1)).unwrap(),
            None
        );
        assert!(table.get("app").is_none());
        let system = run_local(table.find_or_auto_create("CID_RMQ_SYS_X", 2))
            .unwrap()
            .unwrap();
        assert_eq!(system.group_name, "CID_RMQ_SYS_X");
        let before = table.data_version();
        assert!(run_local(table.find_or_auto_create("CID_RMQ_SYS_X", 3))
            .unwrap()
            .is_some());
        assert_eq!(table.data_version(), before);
        let mut table = SubscriptionGroupTable::open(&dir, &config(true)).unwrap();
        let app = run_local(table.find_or_auto_create("app", 4))
            .unwrap()
            .unwrap();
        assert_eq!((app.retry_queue_nums, app.retry_max_times), (1, 16));
        assert!(matches!(
            run_local(table.find_or_auto_create("a b", 5)),
            Err(GroupError::IllegalChars(_))
        ));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn upsert_validates_the_group() {
        let dir = test_dir("groups-validate");
        let mut table = SubscriptionGroupTable::open(&dir, &config(true)).unwrap();
        let mut bad = |config| run_local(table.upsert(config, 1)).unwrap_err();
        assert!(matches!(
            bad(SubscriptionGroupConfig::new("")),
            GroupError::Blank
        ));
        assert!(matches!(
            bad(SubscriptionGroupConfig::new("g.1")),
            GroupError::IllegalChars(_)
        ));
        let long = "g".repeat(GROUP_NAME_CHARS_MAX + 1);
        assert!(matches!(
            bad(SubscriptionGroupConfig::new(long)),
            GroupError::TooLong(_)
        ));
        let zero = SubscriptionGroupConfig {
            retry_queue_nums: 0,
            ..SubscriptionGroupConfig::new("g")
        };
        assert!(matches!(bad(zero), GroupError::RetryQueueNums { .. }));
        assert!(table.get("g").is_none());
        assert!(!dir.exists());
    }

    #[test]
    fn snapshots_follow_the_table() {
        let dir = test_dir("groups-snapshot");
        let mut table = SubscriptionGroupTable::open(&dir, &config(true)).unwrap();
        let before = table.snapshot();
        run_local(table.upsert(SubscriptionGroupConfig::new("g"), 1)).unwrap();
        let after = table.snapshot();
        assert!(before.get("g").is_none() && after.get("g").is_some());
        assert!(after.data_version.counter > before.data_version.counter);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
