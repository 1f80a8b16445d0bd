//! Consumer offsets of the shard's queues: (group, topic, queueId) → next offset to consume,
//! persisted crash-safely with [`crate::meta_file`].

use crate::error::{Result, StoreError};
use crate::meta_file::{MetaReader, MetaWriter};
use crate::FastMap;

/// Most (group, topic, queue) offsets one shard keeps: 1 M entries ≈ 100 MiB, far beyond a
/// real deployment's group × queue count, and it bounds the persisted file.
pub const CONSUMER_OFFSETS_MAX: usize = 1_000_000;

type OffsetKey = (String, String, i32);

/// Owned by one shard.
#[derive(Default)]
pub struct ConsumerOffsets {
    map: FastMap<OffsetKey, i64>,
    /// Sequence number of the last persisted copy.
    pub seq: u64,
    /// Bumped by every change.
    pub changes: u64,
    /// `changes` as of the last successful persist.
    pub changes_persisted: u64,
}

impl ConsumerOffsets {
    pub fn get(&self, group: &str, topic: &str, queue_id: i32) -> Option<i64> {
        self.map
            .get(&(group.to_owned(), topic.to_owned(), queue_id))
            .copied()
    }

    pub fn set(&mut self, group: &str, topic: &str, queue_id: i32, offset: i64) -> Result<()> {
        let key = (group.to_owned(), topic.to_owned(), queue_id);
        if !self.map.contains_key(&key) && self.map.len() >= CONSUMER_OFFSETS_MAX {
            return Err(StoreError::LimitReached("consumer offsets"));
        }
        self.map.insert(key, offset);
        self.changes += 1;
        Ok(())
    }

    /// Every (group, topic, queue id) with its offset.
    pub fn iter(&self) -> impl Iterator<Item = (&OffsetKey, &i64)> {
        self.map.iter()
    }

    /// Forgets every group's offsets of `topic` (the topic was deleted).
    pub fn remove_topic(&mut self, topic: &str) {
        let before = self.map.len();
        self.map.retain(|(_, t, _), _| t != topic);
        if self.map.len() != before {
            self.changes += 1;
        }
    }

    /// The groups holding an offset of `topic` (for "who consumes this topic").
    pub fn groups_of_topic(&self, topic: &str) -> Vec<String> {
        let mut groups: Vec<String> = self
            .map
            .keys()
            .filter(|(_, t, _)| t == topic)
            .map(|(g, _, _)| g.clone())
            .collect();
        groups.sort();
        groups.dedup();
        groups
    }

    /// The topics `group` holds an offset of (what it consumes, online or not).
    pub fn topics_of_group(&self, group: &str) -> Vec<String> {
        let mut topics: Vec<String> = self
            .map
            .keys()
            .filter(|(g, _, _)| g == group)
            .map(|(_, t, _)| t.clone())
            .collect();
        topics.sort();
        topics.dedup();
        topics
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut w = MetaWriter::default();
        w.u32(self.map.len() as u32);
        for ((group, topic, queue_id), offset) in &self.map {
            w.str(group)
                .str(topic)
                .u32(*queue_id as u32)
                .u64(*offset as u64);
        }
        w.0
    }

    pub fn decode(seq: u64, payload: &[u8]) -> Result<Self> {
        let mut r = MetaReader::new(payload, "consumer offsets");
        let count = r.u32()? as usize;
        let mut map =
            FastMap::with_capacity_and_hasher(count.min(CONSUMER_OFFSETS_MAX), Default::default());
        for _ in 0..count {
            let key = (r.str()?, r.str()?, r.u32()? as i32);
            map.insert(key, r.u64()? as i64);
        }
        r.finish()?;
        Ok(Self {
            map,
            seq,
            changes: 0,
            changes_persisted: 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_groups_of_a_topic_and_topics_of_a_group() {
        let mut offsets = ConsumerOffsets::default();
        offsets.set("g1", "t1", 0, 5).unwrap();
        offsets.set("g1", "t1", 1, 5).unwrap();
        offsets.set("g2", "t1", 0, 1).unwrap();
        offsets.set("g1", "t2", 3, 9).unwrap();
        assert_eq!(offsets.groups_of_topic("t1"), ["g1", "g2"]);
        assert_eq!(offsets.groups_of_topic("t3"), Vec::<String>::new());
        assert_eq!(offsets.topics_of_group("g1"), ["t1", "t2"]);
        assert_eq!(offsets.topics_of_group("g2"), ["t1"]);
    }
}
