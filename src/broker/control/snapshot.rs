//! What every shard knows of the control plane: a read-only copy, replaced whole. Shard 0
//! makes a new one after every change the other shards must see (topics, groups, the groups'
//! subscriptions) and installs it everywhere before it answers the request that caused it, so
//! a client that heartbeats and then pulls through another shard finds its subscription there.

use super::consumers::SubscriptionSnapshot;
use super::subscription_groups::{GroupSnapshot, SubscriptionGroupTable};
use super::topics::{TopicSnapshot, TopicTable};
use crate::protocol::body::heartbeat::SubscriptionData;

/// One version of the control plane as the shards read it; plain data behind `Arc`s, so it
/// crosses shards without a copy.
#[derive(Clone)]
pub struct ControlSnapshot {
    /// Grows with every snapshot shard 0 makes; a shard never installs an older one.
    pub version: u64,
    pub topics: TopicSnapshot,
    pub groups: GroupSnapshot,
    pub subscriptions: SubscriptionSnapshot,
}

impl ControlSnapshot {
    /// The snapshot of the given tables at `version`.
    pub fn of(
        version: u64,
        topics: &TopicTable,
        groups: &SubscriptionGroupTable,
        subscriptions: SubscriptionSnapshot,
    ) -> Self {
        Self {
            version,
            topics: topics.snapshot(),
            groups: groups.snapshot(),
            subscriptions,
        }
    }

    pub fn subscription(&self, group: &str, topic: &str) -> Option<&SubscriptionData> {
        self.subscriptions.subscription(group, topic)
    }
}
