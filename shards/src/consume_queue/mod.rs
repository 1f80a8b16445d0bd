//! ConsumeQueues: per (topic, queueId), the ordered list of that queue's records in the
//! commit log. Entries are made in memory at append (the commit log is the source of truth)
//! and persisted lazily, as RocketMQ's 20-byte entries (`physical offset i64 | size i32 |
//! tag hash i64`), into fixed-size files `consumequeue/<topic>/<queueId>/<20-digit byte
//! offset of the file's first entry>` (Apache's names; [`FILE_ENTRIES`] entries each).
//!
//! Memory: a queue holds only its unpersisted tail in memory (24 bytes per entry, what one
//! persist interval appended) plus ~150 bytes of state; persisted entries are read from their
//! files on demand through the shard's bounded page cache ([`pages`]), so memory does not grow
//! with the messages stored. The two transaction queues are the exception ("resident": held
//! whole, as the broker's transaction book follows them without awaiting). Retention moves a
//! queue's min offset (`base`) and removes the files all of whose entries lie below it.

pub(crate) mod journal;
pub(crate) mod load;
mod lru;
pub(crate) mod pages;

use crate::error::{Result, StoreError};
use crate::event::Event;
use crate::io::BLOCK_BYTES;
use crate::offset::segment_file_name;
use crate::offset::PhysicalOffset;
use crate::transaction::{TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC};
use crate::FastMap;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
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

/// Entries of one cached page: 1024 × 20 bytes is 20 KiB, five whole blocks, so a page is
/// one aligned O_DIRECT read.
pub const PAGE_ENTRIES: u64 = 1024;
const _: () = assert!((PAGE_ENTRIES as usize * CQ_ENTRY_BYTES).is_multiple_of(BLOCK_BYTES));
/// Entries of one queue file: 64 pages (1.25 MiB). Apache's 300 000 entries (5.7 MiB) are no
/// whole number of block-aligned pages; and the smaller file lets retention free a queue's
/// disk closer behind the log's, since a file goes only once all its entries are trimmed.
pub const FILE_ENTRIES: u64 = 64 * PAGE_ENTRIES;
const _: () = assert!(FILE_ENTRIES.is_multiple_of(PAGE_ENTRIES));

/// Bytes of the queue file holding entry `offset` up to that entry: where it is written.
pub fn file_pos(offset: u64) -> u64 {
    (offset % FILE_ENTRIES) * CQ_ENTRY_BYTES as u64
}

/// The directory of a queue's files.
pub fn queue_dir(dir: &Path, topic: &str, queue_id: i32) -> PathBuf {
    dir.join("consumequeue")
        .join(topic_dir_name(topic))
        .join(queue_id.to_string())
}

/// The file holding entries `[file_no, file_no + 1) × FILE_ENTRIES` of a queue, named as
/// Apache names it: by the byte offset of its first entry.
pub fn file_path(dir: &Path, topic: &str, queue_id: i32, file_no: u64) -> PathBuf {
    let first_byte = file_no * FILE_ENTRIES * CQ_ENTRY_BYTES as u64;
    queue_dir(dir, topic, queue_id).join(segment_file_name(first_byte))
}

/// Whether a queue is held whole in memory: the transaction queues, which the broker's
/// transaction book follows synchronously ([`crate::Shard::queue_entries`]).
pub fn is_resident(topic: &str) -> bool {
    topic == TRANS_HALF_TOPIC || topic == TRANS_OP_HALF_TOPIC
}

/// One queue's offsets, its tail in memory and its wakeup event. Owned by the shard that owns
/// the queue; never sent across shards.
///
/// Entries `[base, tail_from)` are in the queue's files, `[tail_from, end)` in `tail`; the
/// files hold `[.., persisted)`, and `tail_from <= max(persisted, base)`.
pub struct ConsumeQueue {
    /// Keys the queue's cached pages: a queue deleted and made again gets a new one, so no
    /// page of the old one is served.
    pub id: u64,
    /// The queue's min offset. Entries below it went with their commit-log segment.
    pub base: u64,
    /// Commit-log offset of the entry at `base`; `None` exactly when the queue is empty
    /// (retention asks it of every queue without reading a file).
    pub first_local: Option<u64>,
    /// Queue offset below which entries are durably in the files.
    pub persisted: u64,
    /// Queue offset of `tail[0]`.
    pub tail_from: u64,
    pub tail: VecDeque<CqEntry>,
    /// Keeps its persisted entries in `tail` too ([`is_resident`]).
    pub resident: bool,
    /// What the queue-range journal holds of it ((0, 0, None): nothing).
    pub journaled: journal::Journaled,
    /// Notified when a new record becomes readable.
    pub event: Rc<Event>,
}

impl ConsumeQueue {
    /// An empty queue at offset `base` (of which `persisted` are in its files).
    pub fn new(id: u64, topic: &str, base: u64, persisted: u64) -> Self {
        Self {
            id,
            base,
            first_local: None,
            persisted,
            tail_from: persisted.max(base),
            tail: VecDeque::new(),
            resident: is_resident(topic),
            journaled: (0, 0, None),
            event: Rc::default(),
        }
    }

    /// One past the queue offset of the last entry whose record starts below `visible_end`
    /// (every entry in the files does: they lie below the durable log).
    pub fn visible_end(&self, visible_end: u64) -> u64 {
        self.tail_from + self.tail.partition_point(|e| e.local < visible_end) as u64
    }

    /// One past the last entry's queue offset: the next offset to assign.
    pub fn end(&self) -> u64 {
        self.tail_from + self.tail.len() as u64
    }

    /// What the checkpoint is to know of it: min offset, persisted end, and the log offset of
    /// the entry at min if that is persisted.
    pub fn checkpointed(&self) -> journal::Journaled {
        let persisted = self.persisted.max(self.base);
        let first = self.first_local.filter(|_| self.base < persisted);
        (self.base, persisted, first)
    }

    /// Adds the next entry (at append or recovery).
    pub fn push(&mut self, entry: CqEntry) {
        debug_assert!(self.tail.back().is_none_or(|e| e.local < entry.local));
        if self.base == self.end() {
            self.first_local = Some(entry.local);
        }
        self.tail.push_back(entry);
    }

    /// The entry at queue offset `offset`, if it is in memory.
    pub fn tail_get(&self, offset: u64) -> Option<&CqEntry> {
        if offset < self.base {
            return None;
        }
        let i = offset.checked_sub(self.tail_from)?;
        self.tail.get(usize::try_from(i).ok()?)
    }

    /// Entries of queue offsets `from..to` held in memory (clamped to the tail).
    pub fn tail_range(&self, from: u64, to: u64) -> impl Iterator<Item = &CqEntry> {
        let at = |offset: u64| {
            (offset.max(self.base).saturating_sub(self.tail_from) as usize).min(self.tail.len())
        };
        let (from, to) = (at(from), at(to));
        self.tail.range(from..to.max(from))
    }

    /// Drops from memory what the files now hold (unless the queue is resident).
    pub fn drop_persisted(&mut self) {
        if self.resident || self.persisted <= self.tail_from {
            return;
        }
        let n = ((self.persisted - self.tail_from) as usize).min(self.tail.len());
        self.tail.drain(..n);
        self.tail_from += n as u64;
        // A burst's capacity goes with its entries: 100 000 idle queues hold no tail memory.
        self.tail.shrink_to(self.tail.len());
    }

    /// Moves the min offset to `base`, whose entry's record starts at `first_local` (`None`:
    /// `base` is the end); returns the old and the new min offset.
    pub fn trim_to(&mut self, base: u64, first_local: Option<u64>) -> (u64, u64) {
        debug_assert!(base <= self.end() && first_local.is_some() == (base < self.end()));
        // Entries of a removed segment lie below a durable checkpoint, so they are persisted.
        debug_assert!(self.persisted >= base, "trimmed an unpersisted entry");
        let old = self.base;
        let n = (base.saturating_sub(self.tail_from) as usize).min(self.tail.len());
        self.tail.drain(..n);
        self.tail_from += n as u64;
        self.base = base.max(old);
        self.first_local = first_local;
        (old, self.base)
    }
}

/// The shard's queues by topic, then queue id: looked up by `&str` without allocating (a
/// `(String, i32)` key would cost an allocation per append).
#[derive(Default)]
pub struct QueueMap {
    topics: FastMap<String, FastMap<i32, ConsumeQueue>>,
    /// The next queue's [`ConsumeQueue::id`].
    id_next: u64,
}

impl QueueMap {
    pub fn get(&self, topic: &str, queue_id: i32) -> Option<&ConsumeQueue> {
        self.topics.get(topic)?.get(&queue_id)
    }

    pub fn get_mut(&mut self, topic: &str, queue_id: i32) -> Option<&mut ConsumeQueue> {
        self.topics.get_mut(topic)?.get_mut(&queue_id)
    }

    /// The queue, created empty if it did not exist.
    pub fn get_or_create(&mut self, topic: &str, queue_id: i32) -> &mut ConsumeQueue {
        if !self.topics.contains_key(topic) {
            self.topics.insert(topic.to_owned(), FastMap::default());
        }
        let queues = self.topics.get_mut(topic).expect("inserted above");
        let id_next = &mut self.id_next;
        queues.entry(queue_id).or_insert_with(|| {
            *id_next += 1;
            ConsumeQueue::new(*id_next, topic, 0, 0)
        })
    }

    /// A queue recovered at `base` with `persisted` entries in its files, the first of which
    /// (if any) starts at `first_local` in the log.
    pub fn insert_recovered(&mut self, topic: &str, queue_id: i32, range: RecoveredRange) {
        let queue = self.get_or_create(topic, queue_id);
        *queue = ConsumeQueue::new(queue.id, topic, range.base, range.persisted);
        queue.first_local = range.first_local;
    }

    /// Takes every queue of `topic` out of the map.
    pub fn remove_topic(&mut self, topic: &str) -> Vec<(i32, ConsumeQueue)> {
        self.topics
            .remove(topic)
            .map(|queues| queues.into_iter().collect())
            .unwrap_or_default()
    }

    /// Every (topic, queue id) with its queue.
    pub fn iter(&self) -> impl Iterator<Item = (&str, i32, &ConsumeQueue)> {
        self.topics
            .iter()
            .flat_map(|(t, qs)| qs.iter().map(move |(id, q)| (t.as_str(), *id, q)))
    }

    /// Every (topic, queue id), for a walk that awaits between queues.
    pub fn keys(&self) -> Vec<(String, i32)> {
        self.iter().map(|(t, id, _)| (t.to_owned(), id)).collect()
    }
}

/// What the checkpoint says of one queue.
#[derive(Clone, Copy, Debug)]
pub struct RecoveredRange {
    pub base: u64,
    pub persisted: u64,
    pub first_local: Option<u64>,
}

/// Decodes persisted entries, all `count` of which must be valid and ascending.
pub fn decode_entries(
    bytes: &[u8],
    count: usize,
    shard_id: u16,
    what: &str,
) -> Result<Vec<CqEntry>> {
    let corrupt = |reason: &str| StoreError::Corrupt {
        file: what.into(),
        reason: reason.into(),
    };
    if bytes.len() < count * CQ_ENTRY_BYTES {
        return Err(corrupt("shorter than its checkpointed entry count"));
    }
    let mut entries: Vec<CqEntry> = Vec::with_capacity(count);
    for raw in bytes.chunks_exact(CQ_ENTRY_BYTES).take(count) {
        let entry = CqEntry::decode(raw, shard_id).ok_or_else(|| corrupt("invalid entry"))?;
        if entries.last().is_some_and(|prev| prev.local >= entry.local) {
            return Err(corrupt("entries out of order"));
        }
        entries.push(entry);
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
        let mut queue = ConsumeQueue::new(1, "T", 0, 0);
        for local in [10, 20, 30, 40] {
            queue.push(CqEntry {
                local,
                size: 5,
                tag_hash: 0,
            });
        }
        assert_eq!(queue.first_local, Some(10));
        queue.persisted = 4;
        assert_eq!(queue.trim_to(2, Some(30)), (0, 2));
        assert_eq!((queue.base, queue.end()), (2, 4));
        assert_eq!(queue.tail_get(1), None);
        assert_eq!(queue.tail_get(2).map(|e| e.local), Some(30));
        let held: Vec<u64> = queue.tail_range(0, 9).map(|e| e.local).collect();
        assert_eq!(held, [30, 40]);
        assert_eq!(queue.visible_end(35), 3);
        queue.drop_persisted();
        assert_eq!((queue.tail_from, queue.tail.len(), queue.end()), (4, 0, 4));
        assert_eq!(queue.trim_to(4, None), (2, 4));
        assert_eq!((queue.base, queue.end(), queue.visible_end(100)), (4, 4, 4));
    }

    #[test]
    fn files_are_named_by_their_first_entry_s_byte_offset() {
        let dir = Path::new("/s");
        assert_eq!(
            file_path(dir, "T", 3, 0),
            Path::new("/s/consumequeue/T/3/00000000000000000000")
        );
        assert_eq!(
            file_path(dir, "T", 3, 2),
            Path::new("/s/consumequeue/T/3/00000000000002621440")
        );
        assert_eq!(file_pos(FILE_ENTRIES + 3), 60);
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
