//! Queue locks of orderly consumers (LOCK_BATCH_MQ / UNLOCK_BATCH_MQ; Java's
//! `RebalanceLockManager`): a queue of a group is consumed by one client at a time, which
//! renews its lock every 20 s; a lock not renewed for 60 s may be taken by another client.
//!
//! Owned by shard 0's executor; never sent across shards. Unlike Java, expired locks are
//! dropped by [`QueueLocks::expire`] (and when a bound is reached), so the table stays bounded.

use crate::protocol::body::lock::MessageQueue;
use std::collections::{HashMap, HashSet};

/// A lock not renewed for this long is free (Java's `REBALANCE_LOCK_MAX_LIVE_TIME`; clients
/// renew every 20 s, so a live client never loses it).
pub const LOCK_LIVE_MS: i64 = 60_000;

/// Queues one group may hold locked on this broker. An orderly group locks the queues of its
/// topics (plus its retry queue); eight thousand queues of one group on one broker is far past
/// real topics (the Java default is 16 queues per topic per broker).
pub const LOCKS_PER_GROUP_MAX: usize = 8_192;

/// Locks held on this broker over all groups: bounds the table's memory (~100 bytes a lock).
pub const LOCKS_MAX: usize = 262_144;

#[derive(Debug, Clone)]
struct LockEntry {
    client_id: String,
    last_update_ms: i64,
}

impl LockEntry {
    fn is_expired(&self, now_ms: i64) -> bool {
        now_ms - self.last_update_ms > LOCK_LIVE_MS
    }

    /// Held by `client_id` and still live.
    fn is_held_by(&self, client_id: &str, now_ms: i64) -> bool {
        self.client_id == client_id && !self.is_expired(now_ms)
    }
}

/// group → queue → lock.
#[derive(Debug, Default)]
pub struct QueueLocks {
    groups: HashMap<String, HashMap<MessageQueue, LockEntry>>,
    /// Locks over all groups, kept equal to the sum of the groups' sizes.
    count: usize,
}

impl QueueLocks {
    pub fn new() -> Self {
        Self::default()
    }

    /// LOCK_BATCH_MQ: locks for `client_id` every queue in `queues` that is free, expired, or
    /// already its own (which renews it), and returns those (each once). A queue locked by a
    /// live other client, or one that does not fit under [`LOCKS_PER_GROUP_MAX`] /
    /// [`LOCKS_MAX`] even after expired locks are dropped, is left out; the client tries
    /// again at its next renewal.
    pub fn lock_batch(
        &mut self,
        group: &str,
        client_id: &str,
        queues: &[MessageQueue],
        now_ms: i64,
    ) -> Vec<MessageQueue> {
        let mut locked = Vec::new();
        let mut seen = HashSet::new();
        // At most one sweep of expired locks per request, so a full table costs one scan.
        let mut swept = false;
        for queue in queues {
            if seen.insert(queue) && self.try_lock(group, client_id, queue, now_ms, &mut swept) {
                locked.push(queue.clone());
            }
        }
        if self.groups.get(group).is_some_and(HashMap::is_empty) {
            self.groups.remove(group);
        }
        locked
    }

    fn try_lock(
        &mut self,
        group: &str,
        client_id: &str,
        queue: &MessageQueue,
        now_ms: i64,
        swept: &mut bool,
    ) -> bool {
        if let Some(entry) = self.groups.get_mut(group).and_then(|g| g.get_mut(queue)) {
            if entry.client_id != client_id && !entry.is_expired(now_ms) {
                return false;
            }
            entry.client_id = client_id.to_string();
            entry.last_update_ms = now_ms;
            return true;
        }
        if !self.has_room(group, now_ms, swept) {
            return false;
        }
        let entry = LockEntry {
            client_id: client_id.to_string(),
            last_update_ms: now_ms,
        };
        self.groups
            .entry(group.to_string())
            .or_default()
            .insert(queue.clone(), entry);
        self.count += 1;
        true
    }

    /// Whether one more lock of `group` fits, dropping expired locks first (once per request)
    /// if it does not.
    fn has_room(&mut self, group: &str, now_ms: i64, swept: &mut bool) -> bool {
        let group_len = |locks: &Self| locks.groups.get(group).map_or(0, HashMap::len);
        if self.count < LOCKS_MAX && group_len(self) < LOCKS_PER_GROUP_MAX {
            return true;
        }
        if *swept {
            return false;
        }
        *swept = true;
        self.expire(now_ms);
        self.count < LOCKS_MAX && group_len(self) < LOCKS_PER_GROUP_MAX
    }

    /// UNLOCK_BATCH_MQ: releases the queues `client_id` holds (expired or not); queues held by
    /// another client are left alone, as in Java.
    pub fn unlock_batch(&mut self, group: &str, client_id: &str, queues: &[MessageQueue]) {
        let Some(locks) = self.groups.get_mut(group) else {
            return;
        };
        for queue in queues {
            if locks.get(queue).is_some_and(|e| e.client_id == client_id) {
                locks.remove(queue);
                self.count -= 1;
            }
        }
        if locks.is_empty() {
            self.groups.remove(group);
        }
    }

    /// Whether `client_id` holds a live lock on `queue` (the pull path of an orderly consumer).
    pub fn is_locked_by(
        &self,
        group: &str,
        queue: &MessageQueue,
        client_id: &str,
        now_ms: i64,
    ) -> bool {
        self.groups
            .get(group)
            .and_then(|locks| locks.get(queue))
            .is_some_and(|entry| entry.is_held_by(client_id, now_ms))
    }

    /// Drops every expired lock (call it with the consumers' expiry scan); returns how many.
    pub fn expire(&mut self, now_ms: i64) -> usize {
        let before = self.count;
        self.groups.retain(|_, locks| {
            locks.retain(|_, entry| !entry.is_expired(now_ms));
            !locks.is_empty()
        });
        self.count = self.groups.values().map(HashMap::len).sum();
        before - self.count
    }

    /// Locks held now (live or not yet dropped).
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

#[cfg(test)]
#[path = "queue_locks_tests.rs"]
mod tests;
