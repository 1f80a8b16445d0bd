//! RocketMQ's rules for names and queue counts, read by the configuration and by the control
//! tables alike (a leaf: it depends on nothing of the broker).

/// Queues per topic. Apache's own BenchmarkTest topic has 1024; every queue costs a consume
/// queue on its shard, so a typo like 100000 must not be accepted.
pub const QUEUE_NUMS_MAX: i32 = 1024;

/// True when `name` holds a character outside TopicValidator's `^[%|a-zA-Z0-9_-]+$`
/// (shared by topic and group names).
pub fn has_illegal_chars(name: &str) -> bool {
    !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'%' | b'|' | b'-' | b'_'))
}
