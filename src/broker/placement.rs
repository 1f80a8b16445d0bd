//! Which shard owns a queue: a pure function of (topic, queueId) and the shard count, which
//! is fixed when a data directory is created (recorded in `broker.meta`), so a queue's data,
//! offsets and waiters are always found on the shard that wrote them.

use ringmq_shards::record::java_string_hash;

/// The shard owning queue `queue_id` of `topic`. Consecutive queues of one topic land on
/// consecutive shards, so a topic's load spreads over all cores.
pub fn owner_of(topic: &str, queue_id: i32, shards: usize) -> usize {
    debug_assert!(shards > 0);
    let base = u64::from(java_string_hash(topic) as u32);
    let queue = u64::from(queue_id as u32);
    ((base + queue) % shards as u64) as usize
}

/// The shard that stored a record, from its client-visible physical offset (the shard id
/// is in the high bits; see `ringmq_shards::offset`).
pub fn owner_of_offset(physical_offset: i64, shards: usize) -> Option<usize> {
    let offset = ringmq_shards::PhysicalOffset::from_wire(physical_offset)?;
    let shard = usize::from(offset.shard_id());
    (shard < shards).then_some(shard)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_topics_queues_spread_over_every_shard() {
        for shards in 1..=8 {
            let mut seen = vec![0; shards];
            for queue in 0..(shards as i32 * 4) {
                seen[owner_of("TopicTest", queue, shards)] += 1;
            }
            assert!(seen.iter().all(|&n| n == 4), "{shards}: {seen:?}");
        }
    }

    #[test]
    fn owner_is_stable_and_in_range() {
        assert_eq!(owner_of("T", 3, 2), owner_of("T", 3, 2));
        assert!(owner_of("%RETRY%g", i32::MAX, 3) < 3);
        assert!(owner_of("negative-hash-\u{ffff}", -1, 5) < 5);
    }

    #[test]
    fn offsets_name_their_shard() {
        let offset = ringmq_shards::PhysicalOffset::new(1, 4096).to_wire();
        assert_eq!(owner_of_offset(offset, 2), Some(1));
        assert_eq!(owner_of_offset(offset, 1), None);
        assert_eq!(owner_of_offset(-5, 2), None);
    }
}
