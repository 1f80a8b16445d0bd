//! The NameServer's routing state (Java's `RouteInfoManager`): which brokers exist, which
//! topics they serve, and when each broker was last heard from.
//!
//! A pure struct: no I/O, no clock. Callers pass the current time in milliseconds (any
//! monotonic origin) and the connection a request came on, so the logic is tested directly.
//! Owned by the NameServer's single executor; never shared across threads.

use crate::protocol::body::{
    BrokerData, ClusterInfo, DataVersion, QueueData, TopicConfig, TopicConfigSerializeWrapper,
    TopicList, TopicRouteData, MASTER_ID, PERM_READ, PERM_WRITE,
};
use crate::server::ConnectionId;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// A broker silent this long is dropped unless it registered with its own timeout
/// (RocketMQ's `DEFAULT_BROKER_CHANNEL_EXPIRED_TIME`).
pub const BROKER_EXPIRY_MS_DEFAULT: u64 = 120_000;

/// Broker addresses the table will hold. RocketMQ deployments run tens to hundreds of brokers;
/// the bound keeps a misbehaving client from growing the table without end.
pub const LIVE_BROKERS_MAX: usize = 4096;

/// Topics the table will hold. Large RocketMQ clusters carry on the order of 100k topics.
pub const TOPICS_MAX: usize = 1 << 20;

/// One REGISTER_BROKER request, header and body together.
#[derive(Debug, Clone, Default)]
pub struct BrokerRegistration {
    pub cluster_name: String,
    pub broker_addr: String,
    pub broker_name: String,
    pub broker_id: i64,
    pub ha_server_addr: String,
    pub zone_name: Option<String>,
    pub heartbeat_timeout_ms: Option<u64>,
    /// Absent for brokers older than 5.x; then no slave may act as master.
    pub enable_acting_master: Option<bool>,
    pub topics: TopicConfigSerializeWrapper,
    pub connection: Option<ConnectionId>,
}

/// What a registering broker is told back (slaves learn their master).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegisterOutcome {
    pub master_addr: Option<String>,
    pub ha_server_addr: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteTableError {
    /// Java answers "register broker failed": an incremental one-topic registration may only
    /// follow the broker's first full registration.
    #[error(
        "register broker failed: single-topic registration before the broker's first registration"
    )]
    NotYetRegistered,
    #[error(
        "register broker failed: the NameServer already tracks {LIVE_BROKERS_MAX} broker addresses"
    )]
    TooManyBrokers,
    #[error("register broker failed: the NameServer already tracks {TOPICS_MAX} topics")]
    TooManyTopics,
}

/// Identity of a broker process: its address within a cluster.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BrokerAddrKey {
    pub cluster_name: String,
    pub broker_addr: String,
}

#[derive(Debug, Clone)]
struct BrokerLive {
    last_update_ms: u64,
    timeout_ms: u64,
    data_version: DataVersion,
    connection: Option<ConnectionId>,
    ha_server_addr: String,
}

impl BrokerLive {
    fn deadline_ms(&self) -> u64 {
        self.last_update_ms.saturating_add(self.timeout_ms)
    }
}

/// How WIPE/ADD_WRITE_PERM_OF_BROKER change a broker's queues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WritePerm {
    Wipe,
    /// Java sets the whole perm to READ|WRITE, not just the write bit.
    Add,
}

/// The routing table. See the module doc.
#[derive(Debug)]
pub struct RouteTable {
    topic_queues: BTreeMap<String, BTreeMap<String, QueueData>>,
    brokers: BTreeMap<String, BrokerData>,
    clusters: BTreeMap<String, BTreeSet<String>>,
    live: HashMap<BrokerAddrKey, BrokerLive>,
    /// Expiry for brokers that do not send their own `heartbeatTimeoutMillis`.
    broker_timeout_ms: u64,
}

impl Default for RouteTable {
    fn default() -> Self {
        Self::new()
    }
}

impl RouteTable {
    /// A table expiring silent brokers after RocketMQ's default 120 s.
    pub fn new() -> Self {
        Self::with_broker_timeout_ms(BROKER_EXPIRY_MS_DEFAULT)
    }

    /// A table expiring silent brokers after `broker_timeout_ms` unless they say otherwise.
    pub fn with_broker_timeout_ms(broker_timeout_ms: u64) -> Self {
        Self {
            topic_queues: BTreeMap::new(),
            brokers: BTreeMap::new(),
            clusters: BTreeMap::new(),
            live: HashMap::new(),
            broker_timeout_ms,
        }
    }

    /// REGISTER_BROKER, with RocketMQ's semantics (REMOTING.md §4.8).
    pub fn register(
        &mut self,
        reg: BrokerRegistration,
        now_ms: u64,
    ) -> Result<RegisterOutcome, RouteTableError> {
        let key = BrokerAddrKey {
            cluster_name: reg.cluster_name.clone(),
            broker_addr: reg.broker_addr.clone(),
        };
        if !self.live.contains_key(&key) && self.live.len() >= LIVE_BROKERS_MAX {
            return Err(RouteTableError::TooManyBrokers);
        }
        let new_topics = reg
            .topics
            .topic_config_table
            .keys()
            .filter(|t| !self.topic_queues.contains_key(*t))
            .count();
        if self.topic_queues.len() + new_topics > TOPICS_MAX {
            return Err(RouteTableError::TooManyTopics);
        }
        // Checked before anything is created (Java checks after adding the group and cluster
        // entries, and leaves them behind when it refuses).
        let id_known = self
            .brokers
            .get(&reg.broker_name)
            .is_some_and(|b| b.broker_addrs.contains_key(&reg.broker_id));
        if !id_known && reg.topics.topic_config_table.len() == 1 {
            return Err(RouteTableError::NotYetRegistered);
        }
        let previous_version = self.live.get(&key).map(|live| live.data_version);
        let version_changed = previous_version != Some(reg.topics.data_version);

        let broker = self
            .brokers
            .entry(reg.broker_name.clone())
            .or_insert_with(|| BrokerData {
                broker_name: reg.broker_name.clone(),
                cluster: reg.cluster_name.clone(),
                ..BrokerData::default()
            });
        let mut first_registration = broker.broker_addrs.is_empty();
        broker.enable_acting_master = reg.enable_acting_master.unwrap_or(false);
        broker.zone_name = reg.zone_name.clone();

        // One address has one id: a slave promoted to master re-registers under id 0.
        broker
            .broker_addrs
            .retain(|id, addr| *id == reg.broker_id || *addr != reg.broker_addr);

        // Another process under the same id with a newer state version wins.
        if let Some(old_addr) = broker
            .broker_addrs
            .get(&reg.broker_id)
            .filter(|a| **a != reg.broker_addr)
        {
            let old_key = BrokerAddrKey {
                cluster_name: reg.cluster_name.clone(),
                broker_addr: old_addr.clone(),
            };
            if let Some(old) = self.live.get(&old_key) {
                if old.data_version.state_version > reg.topics.data_version.state_version {
                    self.live.remove(&key);
                    self.clusters
                        .entry(reg.cluster_name)
                        .or_default()
                        .insert(reg.broker_name);
                    return Ok(RegisterOutcome::default());
                }
            }
        }
        self.clusters
            .entry(reg.cluster_name.clone())
            .or_default()
            .insert(reg.broker_name.clone());
        let old_addr = broker
            .broker_addrs
            .insert(reg.broker_id, reg.broker_addr.clone());
        first_registration |= old_addr.unwrap_or_default().is_empty();

        let is_master = reg.broker_id == MASTER_ID;
        let is_prime_slave = reg.enable_acting_master.is_some()
            && !is_master
            && broker.broker_addrs.keys().next() == Some(&reg.broker_id);
        let wipe_write = is_prime_slave && broker.enable_acting_master;
        if is_master || is_prime_slave {
            for (topic, config) in &reg.topics.topic_config_table {
                let topic_missing_here = !self
                    .topic_queues
                    .get(topic)
                    .is_some_and(|queues| queues.contains_key(&reg.broker_name));
                if first_registration || version_changed || topic_missing_here {
                    let mut queue = queue_data(&reg.broker_name, config);
                    if wipe_write {
                        queue.perm &= !PERM_WRITE;
                    }
                    self.topic_queues
                        .entry(topic_key(topic, config))
                        .or_default()
                        .insert(reg.broker_name.clone(), queue);
                }
            }
        }

        self.live.insert(
            key,
            BrokerLive {
                last_update_ms: now_ms,
                timeout_ms: reg.heartbeat_timeout_ms.unwrap_or(self.broker_timeout_ms),
                data_version: reg.topics.data_version,
                connection: reg.connection,
                ha_server_addr: reg.ha_server_addr,
            },
        );

        let mut outcome = RegisterOutcome::default();
        if reg.broker_id != MASTER_ID {
            let master = self
                .brokers
                .get(&reg.broker_name)
                .and_then(|b| b.master_addr())
                .map(str::to_owned);
            if let Some(master_addr) = master {
                let master_key = BrokerAddrKey {
                    cluster_name: reg.cluster_name,
                    broker_addr: master_addr.clone(),
                };
                if let Some(master_live) = self.live.get(&master_key) {
                    outcome.ha_server_addr = Some(master_live.ha_server_addr.clone());
                    outcome.master_addr = Some(master_addr);
                }
            }
        }
        Ok(outcome)
    }

    /// UNREGISTER_BROKER (also used for expiry and closed connections).
    pub fn unregister(&mut self, key: &BrokerAddrKey, broker_name: &str) {
        self.live.remove(key);
        let Some(broker) = self.brokers.get_mut(broker_name) else {
            return;
        };
        broker
            .broker_addrs
            .retain(|_, addr| *addr != key.broker_addr);
        if broker.broker_addrs.is_empty() {
            self.brokers.remove(broker_name);
            // From every cluster, not only this key's: a broker re-registered under another
            // cluster name is listed in both, and Java's NameServer leaks the second listing.
            self.clusters.retain(|_, names| {
                names.remove(broker_name);
                !names.is_empty()
            });
            self.topic_queues.retain(|_, queues| {
                queues.remove(broker_name);
                !queues.is_empty()
            });
        } else if broker.enable_acting_master && broker.master_addr().is_none() {
            // The master left a group whose slaves may act for it: they serve reads only.
            for queues in self.topic_queues.values_mut() {
                if let Some(queue) = queues.get_mut(broker_name) {
                    queue.perm &= !PERM_WRITE;
                }
            }
        }
    }

    /// Drops every broker whose deadline has passed; returns the ones dropped.
    pub fn expire(&mut self, now_ms: u64) -> Vec<BrokerAddrKey> {
        let expired: Vec<BrokerAddrKey> = self
            .live
            .iter()
            .filter(|(_, live)| live.deadline_ms() < now_ms)
            .map(|(key, _)| key.clone())
            .collect();
        for key in &expired {
            self.unregister_by_addr(key);
        }
        expired
    }

    /// The earliest moment a broker could expire, if any broker is registered.
    pub fn next_deadline_ms(&self) -> Option<u64> {
        self.live.values().map(BrokerLive::deadline_ms).min()
    }

    /// A broker's connection closed: every broker registered on it is gone.
    pub fn connection_closed(&mut self, connection: ConnectionId) -> Vec<BrokerAddrKey> {
        let gone: Vec<BrokerAddrKey> = self
            .live
            .iter()
            .filter(|(_, live)| live.connection == Some(connection))
            .map(|(key, _)| key.clone())
            .collect();
        for key in &gone {
            self.unregister_by_addr(key);
        }
        gone
    }

    /// Unregisters the broker at `key`'s address from every group that lists it. The process
    /// at that address is gone, so no listing of it is current; looking only in the group of
    /// the key's cluster (as Java does) leaves a group behind when its member re-registered
    /// under another cluster or broker name.
    fn unregister_by_addr(&mut self, key: &BrokerAddrKey) {
        self.live.remove(key);
        let names: Vec<String> = self
            .brokers
            .values()
            .filter(|b| b.broker_addrs.values().any(|a| *a == key.broker_addr))
            .map(|b| b.broker_name.clone())
            .collect();
        for name in names {
            self.unregister(key, &name);
        }
    }

    /// QUERY_DATA_VERSION / BROKER_HEARTBEAT: the broker is alive.
    pub fn refresh(&mut self, key: &BrokerAddrKey, now_ms: u64) {
        if let Some(live) = self.live.get_mut(key) {
            live.last_update_ms = now_ms;
        }
    }

    /// The DataVersion last registered by this broker.
    pub fn data_version(&self, key: &BrokerAddrKey) -> Option<DataVersion> {
        self.live.get(key).map(|live| live.data_version)
    }

    /// GET_ROUTEINFO_BY_TOPIC: `None` when no live broker serves the topic.
    pub fn route(&self, topic: &str) -> Option<TopicRouteData> {
        let queues = self.topic_queues.get(topic)?;
        let broker_datas: Vec<BrokerData> = queues
            .keys()
            .filter_map(|name| self.brokers.get(name))
            .cloned()
            .collect();
        if broker_datas.is_empty() {
            return None;
        }
        Some(TopicRouteData {
            broker_datas,
            queue_datas: queues.values().cloned().collect(),
            ..TopicRouteData::default()
        })
    }

    /// GET_BROKER_CLUSTER_INFO.
    pub fn cluster_info(&self) -> ClusterInfo {
        ClusterInfo {
            broker_addr_table: self.brokers.clone(),
            cluster_addr_table: self.clusters.clone(),
        }
    }

    /// GET_ALL_TOPIC_LIST_FROM_NAMESERVER.
    pub fn topics(&self) -> TopicList {
        TopicList {
            broker_addr: None,
            topic_list: self.topic_queues.keys().cloned().collect(),
        }
    }

    /// GET_TOPICS_BY_CLUSTER: topics with a queue on any broker of the cluster.
    pub fn topics_of_cluster(&self, cluster: &str) -> TopicList {
        let names = self.clusters.get(cluster);
        let topic_list = self
            .topic_queues
            .iter()
            .filter(|(_, queues)| {
                names.is_some_and(|names| queues.keys().any(|b| names.contains(b)))
            })
            .map(|(topic, _)| topic.clone())
            .collect();
        TopicList {
            broker_addr: None,
            topic_list,
        }
    }

    /// GET_SYSTEM_TOPIC_LIST_FROM_NS: cluster and broker names (each is a system topic in
    /// RocketMQ), plus one broker address to ask for more.
    pub fn system_topics(&self) -> TopicList {
        let mut names = BTreeSet::new();
        for (cluster, brokers) in &self.clusters {
            names.insert(cluster.clone());
            names.extend(brokers.iter().cloned());
        }
        let broker_addr = self
            .brokers
            .values()
            .find_map(|b| b.broker_addrs.values().next().cloned());
        TopicList {
            broker_addr,
            topic_list: names.into_iter().collect(),
        }
    }

    /// DELETE_TOPIC_IN_NAMESRV: everywhere, or only on the brokers of one cluster.
    pub fn delete_topic(&mut self, topic: &str, cluster: Option<&str>) {
        let Some(cluster) = cluster else {
            self.topic_queues.remove(topic);
            return;
        };
        let (Some(names), Some(queues)) =
            (self.clusters.get(cluster), self.topic_queues.get_mut(topic))
        else {
            return;
        };
        queues.retain(|broker, _| !names.contains(broker));
        if queues.is_empty() {
            self.topic_queues.remove(topic);
        }
    }

    /// WIPE/ADD_WRITE_PERM_OF_BROKER; returns how many topics were changed.
    pub fn set_write_perm(&mut self, broker_name: &str, change: WritePerm) -> usize {
        let mut changed = 0;
        for queue in self
            .topic_queues
            .values_mut()
            .filter_map(|queues| queues.get_mut(broker_name))
        {
            queue.perm = match change {
                WritePerm::Wipe => queue.perm & !PERM_WRITE,
                WritePerm::Add => PERM_READ | PERM_WRITE,
            };
            changed += 1;
        }
        changed
    }
}

fn queue_data(broker_name: &str, config: &TopicConfig) -> QueueData {
    QueueData {
        broker_name: broker_name.to_owned(),
        perm: config.perm,
        read_queue_nums: config.read_queue_nums,
        topic_sys_flag: config.topic_sys_flag,
        write_queue_nums: config.write_queue_nums,
    }
}

/// Java keys queue data by the config's own `topicName`; fall back to the table key when a
/// sparse body left the name out.
fn topic_key(table_key: &str, config: &TopicConfig) -> String {
    if config.topic_name.is_empty() {
        table_key.to_owned()
    } else {
        config.topic_name.clone()
    }
}

#[cfg(test)]
#[path = "route_table_tests.rs"]
mod tests;
