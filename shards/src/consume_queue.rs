//! ConsumeQueues: per (topic, queueId), the ordered list of that queue's records in the
//! commit log. Entries are made in memory at append (the commit log is the source of truth)
//! and persisted lazily to `consumequeue/<topic>/<queueId>/00000000000000000000` as
//! RocketMQ's 20-byte entries: `physical offset i64 | size i32 | tag hash i64`.
//!
//! Memory: 24 bytes per entry in memory (the whole retained queue is held), so 10 M messages
//! in a shard's queues cost 240 MiB. Retention trims entries from the front when their
//! segment is removed; the queue's min offset (`base`) moves with it. The file keeps the
//! trimmed prefix (20 bytes per message) until paged consume queues replace the single file.

use crate::append_file::AppendFile;
use crate::error::{Result, StoreError};
use crate::event::Event;
use crate::offset::PhysicalOffset;
use crate::FastMap;
use std::collections::VecDeque;
use std::rc::Rc;

/// Bytes of one persisted entry (RocketMQ's `CQ_STORE_UNIT_SIZE`).
pub const CQ_ENTRY_BYTES: usize = 20;

/// One record of a queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CqEntry {
    /// Local commit-log offset.
    pub local: u64,
    pub size: u32,
    pub tag_hash: i64,
}

impl CqEntry {
    pub fn encode(&self, shard_id: u16) -> [u8; CQ_ENTRY_BYTES] {
        let mut out = [0u8; CQ_ENTRY_BYTES];
        let physical = PhysicalOffset::new(shard_id, self.local).to_wire();
        out[0..8].copy_from_slice(&physical.to_be_bytes());
        out[8..12].copy_from_slice(&(self.size as i32).to_be_bytes());
        out[12..20].copy_from_slice(&self.tag_hash.to_be_bytes());
        out
    }

    pub fn decode(bytes: &[u8], shard_id: u16) -> Option<Self> {
        let physical = i64::from_be_bytes(bytes.get(0..8)?.try_into().ok()?);
        let size = i32::from_be_bytes(bytes.get(8..12)?.try_into().ok()?);
        let tag_hash = i64::from_be_bytes(bytes.get(12..20)?.try_into().ok()?);
        let physical = PhysicalOffset::from_wire(physical)?;
        (physical.shard_id() == shard_id && size > 0).then_some(Self {
            local: physical.local(),
            size: size as u32,
            tag_hash,
        })
    }
}

/// One queue's entries and wakeup event. Owned by the shard that owns the queue; never sent
/// across shards.
pub struct ConsumeQueue<F> {
    /// Queue offset of `entries[0]`: the queue's min offset. Entries below it went with their
    /// commit-log segment.
    pub base: u64,
    pub entries: VecDeque<CqEntry>,
    /// Queue offset below which entries are durably in the file (never below `base`).
    pub persisted: u64,
    /// Taken out while a persist is in flight.
    pub file: Option<AppendFile<F>>,
    /// Notified when a new record becomes readable.
    pub event: Rc<Event>,
}

impl<F> Default for ConsumeQueue<F> {
    fn default() -> Self {
        Self {
            base: 0,
            entries: VecDeque::new(),
            persisted: 0,
            file: None,
            event: Rc::default(),
        }
    }
}

impl<F> ConsumeQueue<F> {
    /// One past the queue offset of the last entry whose record starts below `visible_end`.
    pub fn visible_end(&self, visible_end: u64) -> u64 {
        self.base + self.entries.partition_point(|e| e.local < visible_end) as u64
    }

    /// One past the last entry's queue offset: the next offset to assign.
    pub fn end(&self) -> u64 {
        self.base + self.entries.len() as u64
    }

    /// The entry at queue offset `offset`, if held.
    pub fn get(&self, offset: u64) -> Option<&CqEntry> {
        let i = offset.checked_sub(self.base)?;
        self.entries.get(usize::try_from(i).ok()?)
    }

    /// Entries of queue offsets `from..to` (clamped to what is held).
    pub fn range(&self, from: u64, to: u64) -> impl Iterator<Item = &CqEntry> {
        let at = |offset: u64| (offset.saturating_sub(self.base) as usize).min(self.entries.len());
        let (from, to) = (at(from), at(to));
        self.entries.range(from..to.max(from))
    }

    /// Drops the entries whose record starts below `local` (their segment is going away);
    /// returns the old and the new min offset.
    pub fn trim_below(&mut self, local: u64) -> (u64, u64) {
        let old = self.base;
        let n = self.entries.partition_point(|e| e.local < local);
        self.entries.drain(..n);
        self.base += n as u64;
        // Entries of a removed segment lie below a durable checkpoint, so they are persisted.
        debug_assert!(self.persisted >= self.base, "trimmed an unpersisted entry");
        (old, self.base)
    }
}

/// The shard's queues by topic, then queue id: looked up by `&str` without allocating (a
/// `(String, i32)` key would cost an allocation per append).
pub struct QueueMap<F> {
    topics: FastMap<String, FastMap<i32, ConsumeQueue<F>>>,
}

impl<F> Default for QueueMap<F> {
    fn default() -> Self {
        Self {
            topics: FastMap::default(),
        }
    }
}

impl<F> QueueMap<F> {
    pub fn get(&self, topic: &str, queue_id: i32) -> Option<&ConsumeQueue<F>> {
        self.topics.get(topic)?.get(&queue_id)
    }

    pub fn get_mut(&mut self, topic: &str, queue_id: i32) -> Option<&mut ConsumeQueue<F>> {
        self.topics.get_mut(topic)?.get_mut(&queue_id)
    }

    /// The queue, created empty if it did not exist.
    pub fn get_or_create(&mut self, topic: &str, queue_id: i32) -> &mut ConsumeQueue<F> {
        if !self.topics.contains_key(topic) {
            self.topics.insert(topic.to_owned(), FastMap::default());
        }
        let queues = self.topics.get_mut(topic).expect("inserted above");
        queues.entry(queue_id).or_default()
    }

    pub fn insert(&mut self, topic: &str, queue_id: i32, queue: ConsumeQueue<F>) {
        *self.get_or_create(topic, queue_id) = queue;
    }

    /// Takes every queue of `topic` out of the map.
    pub fn remove_topic(&mut self, topic: &str) -> Vec<(i32, ConsumeQueue<F>)> {
        self.topics
            .remove(topic)
            .map(|queues| queues.into_iter().collect())
            .unwrap_or_default()
    }

    /// Every (topic, queue id) with its queue, mutably.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&str, i32, &mut ConsumeQueue<F>)> {
        self.topics
            .iter_mut()
            .flat_map(|(t, qs)| qs.iter_mut().map(move |(id, q)| (t.as_str(), *id, q)))
    }

    /// Every (topic, queue id) with its queue.
    pub fn iter(&self) -> impl Iterator<Item = (&str, i32, &ConsumeQueue<F>)> {
        self.topics
            .iter()
            .flat_map(|(t, qs)| qs.iter().map(move |(id, q)| (t.as_str(), *id, q)))
    }
}

/// Decodes a persisted queue, all `count` entries of which must be valid and ascending.
pub fn decode_entries(
    bytes: &[u8],
    count: usize,
    shard_id: u16,
    what: &str,
) -> Result<VecDeque<CqEntry>> {
    let corrupt = |reason: &str| StoreError::Corrupt {
        file: what.into(),
        reason: reason.into(),
    };
    if bytes.len() < count * CQ_ENTRY_BYTES {
        return Err(corrupt("shorter than its checkpointed entry count"));
    }
    let mut entries: VecDeque<CqEntry> = VecDeque::with_capacity(count);
    for raw in bytes.chunks_exact(CQ_ENTRY_BYTES).take(count) {
        let entry = CqEntry::decode(raw, shard_id).ok_or_else(|| corrupt("invalid entry"))?;
        if entries.back().is_some_and(|prev| prev.local >= entry.local) {
            return Err(corrupt("entries out of order"));
        }
        entries.push_back(entry);
    }
    Ok(entries)
}

/// Directory name of a topic: the name itself when it is made of RocketMQ's topic
/// characters, else `~` and its hex bytes, so no topic can escape the directory.
pub fn topic_dir_name(topic: &str) -> String {
    let plain = !topic.is_empty()
        && topic
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"%|-_".contains(&b));
    if plain {
        topic.to_owned()
    } else {
        let hex: String = topic.bytes().map(|b| format!("{b:02x}")).collect();
        format!("~{hex}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_matches_v6_vector() {
        let entry = CqEntry {
            local: 0,
            size: 115,
            tag_hash: 2_598_919,
        };
        let expected = [
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x73, 0, 0, 0, 0, 0, 0x27, 0xa8, 0x07,
        ];
        assert_eq!(entry.encode(0), expected);
        assert_eq!(CqEntry::decode(&expected, 0), Some(entry));
        assert_eq!(CqEntry::decode(&expected, 1), None, "wrong shard");
    }

    #[test]
    fn topic_dirs_cannot_escape() {
        assert_eq!(topic_dir_name("%RETRY%g-1"), "%RETRY%g-1");
        assert_eq!(topic_dir_name(".."), "~2e2e");
        assert_eq!(topic_dir_name("a/b"), "~612f62");
    }

    #[test]
    fn trimming_moves_the_min_offset_and_keeps_offsets() {
        let mut queue: ConsumeQueue<()> = ConsumeQueue::default();
        for local in [10, 20, 30, 40] {
            queue.entries.push_back(CqEntry {
                local,
                size: 5,
                tag_hash: 0,
            });
        }
        queue.persisted = 4;
        assert_eq!(queue.trim_below(25), (0, 2));
        assert_eq!((queue.base, queue.end()), (2, 4));
        assert_eq!(queue.get(1), None);
        assert_eq!(queue.get(2).map(|e| e.local), Some(30));
        let held: Vec<u64> = queue.range(0, 9).map(|e| e.local).collect();
        assert_eq!(held, [30, 40]);
        assert_eq!(queue.visible_end(35), 3);
        assert_eq!(queue.trim_below(100), (2, 4));
        assert_eq!((queue.base, queue.end(), queue.visible_end(100)), (4, 4, 4));
    }

    #[test]
    fn decode_rejects_disorder_and_short_files() {
        let a = CqEntry {
            local: 100,
            size: 10,
            tag_hash: 0,
        }
        .encode(0);
        let b = CqEntry {
            local: 50,
            size: 10,
            tag_hash: 0,
        }
        .encode(0);
        let bytes = [a, b].concat();
        assert!(decode_entries(&bytes, 2, 0, "q").is_err());
        assert_eq!(decode_entries(&bytes, 1, 0, "q").unwrap().len(), 1);
        assert!(decode_entries(&bytes, 3, 0, "q").is_err());
    }
}
