//! The message-key index: `topic#key` → records, for every token of the KEYS property and for
//! UNIQ_KEY (RocketMQ's IndexFile semantics).
//!
//! A key is held as the 64-bit hash of `topic#key` ([`sealed::key_hash`]), never as a string:
//! indexing a message allocates nothing per key, and lookups match on the hash, as RocketMQ's
//! IndexFile does (colliding keys return each other's records; clients filter by key).
//!
//! The hits of segments the log still writes to, or has not made durable past, are held in
//! memory and persisted lazily, one append-only file per commit-log segment,
//! `index/<20-digit segment start>.hits`, of 24-byte entries `key hash u64 | local offset u64
//! | store timestamp i64` (a sealed page's entries); the checkpoint says how many bytes of each
//! are valid. Once the log has left a segment and its hits are durable, the segment is sealed
//! ([`sealed`]): its hits are written sorted by hash to `index/<start>.sealed`, leave memory
//! (oldest first, in bounded steps), and its append file goes. So memory and start-up hold
//! only the unsealed segments' hits (one or two segments), whatever the log's size. When
//! retention removes a segment, its files go with it.
//!
//! Stores made before hashed entries hold `key_len u16 | topic#key | local u64 | store ms
//! i64` entries, in `index/<start>` per segment (checkpoint version 2) or in one `index/keys`
//! (version 1): read once at start, their hits are rewritten as `.hits` files by the first
//! persist, which then removes them.
//!
//! Memory per unsealed hit: 16 bytes (`KeyHit`) in its key's list (inline for a key's only
//! hit, as every UNIQ_KEY's is) and its map slot, 8 (the hash) in the trimming order, 24 in
//! the segment's list to seal; per sealed hit about 0.05 bytes.

mod sealed;

use crate::append_file::AppendFile;
use crate::error::{Result, StoreError};
use crate::io::Disk;
use crate::offset::{parse_segment_file_name, segment_file_name};
use crate::record::{find_properties, property};
use crate::FastMap;
pub use sealed::SealedIndex;
use sealed::{key_hash, write_sealed, SealedEntry, ENTRY_BYTES};
use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// Hits dropped from memory per step once their segment is sealed, with a yield between.
const SEAL_TRIM_BATCH: usize = 4096;

/// The single index file of stores made before per-segment files (checkpoint version 1).
pub const LEGACY_INDEX_FILE: &str = "index/keys";
const HITS_SUFFIX: &str = ".hits";
const SEALED_SUFFIX: &str = ".sealed";

/// A lookup by key: records of `topic` carrying `key` (a KEYS token or the UNIQ_KEY) stored
/// within `[begin_ms, end_ms]`, at most `max` of them.
#[derive(Clone, Copy, Debug)]
pub struct KeyQuery<'a> {
    pub topic: &'a str,
    pub key: &'a str,
    pub begin_ms: i64,
    pub end_ms: i64,
    pub max: usize,
}

/// What the index reads of a record's properties: its UNIQ_KEY and its KEYS (space-separated
/// tokens). The append path finds them in the same scan as the TAGS.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecordKeys<'a> {
    pub uniq: Option<&'a str>,
    pub keys: Option<&'a str>,
}

impl<'a> RecordKeys<'a> {
    pub fn of(properties: &'a str) -> Self {
        let [uniq, keys] = find_properties(properties, [property::UNIQ_KEY, property::KEYS]);
        Self { uniq, keys }
    }
}

/// One indexed occurrence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyHit {
    pub local: u64,
    pub store_timestamp_ms: i64,
}

/// A key's hits, oldest first. Most keys (every UNIQ_KEY) have one, held inline: a list per
/// key cost an allocation for every message appended and every entry loaded at start.
enum Hits {
    One(KeyHit),
    Many(VecDeque<KeyHit>),
}

impl Hits {
    fn push(&mut self, hit: KeyHit) {
        match self {
            Hits::One(first) => *self = Hits::Many(VecDeque::from([*first, hit])),
            Hits::Many(list) => list.push_back(hit),
        }
    }

    fn front(&self) -> KeyHit {
        match self {
            Hits::One(hit) => *hit,
            Hits::Many(list) => *list.front().expect("a list holds two hits or more"),
        }
    }

    /// Drops the oldest hit; false when none is left.
    fn pop_front(&mut self) -> bool {
        match self {
            Hits::One(_) => false,
            Hits::Many(list) => {
                list.pop_front();
                if list.len() == 1 {
                    *self = Hits::One(list[0]);
                }
                true
            }
        }
    }

    fn iter(&self) -> impl DoubleEndedIterator<Item = &KeyHit> {
        let (first, second): (&[KeyHit], &[KeyHit]) = match self {
            Hits::One(hit) => (std::slice::from_ref(hit), &[]),
            Hits::Many(list) => list.as_slices(),
        };
        first.iter().chain(second)
    }
}

/// One segment's index file.
pub struct IndexFile<F> {
    /// Valid (durable) bytes.
    pub bytes: u64,
    /// Open while the segment may still get entries; taken out while a persist writes it.
    pub file: Option<AppendFile<F>>,
}

impl<F> Default for IndexFile<F> {
    fn default() -> Self {
        Self {
            bytes: 0,
            file: None,
        }
    }
}

/// Owned by one shard.
pub struct KeyIndex<F> {
    map: FastMap<u64, Hits>,
    /// The key hash of every held hit, oldest first (hits are added in log order), so the
    /// hit at the front of `order` is the front of its key's list: what trimming walks.
    order: VecDeque<u64>,
    entries_max: usize,
    segment_bytes: u64,
    /// Entries not yet persisted, in log order.
    pending: Vec<SealedEntry>,
    /// The index files by segment start.
    pub files: BTreeMap<u64, IndexFile<F>>,
    /// Per unsealed segment (by start), its hits as they will be sealed.
    unsealed: BTreeMap<u64, Vec<SealedEntry>>,
    /// The sealed segments' indexes, by start; shared with lookups in flight.
    sealed: BTreeMap<u64, Rc<SealedIndex<F>>>,
    /// Every hit below this is in a sealed file (the end of the newest sealed segment).
    sealed_end: u64,
    /// Keys skipped because the index was full (reported, not silent).
    pub skipped: u64,
}

/// The append-only index file of the segment starting at `start`.
pub fn index_file_path(dir: &Path, start: u64) -> PathBuf {
    dir.join("index")
        .join(format!("{}{HITS_SUFFIX}", segment_file_name(start)))
}

/// A segment's index file as stores made before hashed entries named it (checkpoint v2).
pub fn keyed_index_file_path(dir: &Path, start: u64) -> PathBuf {
    dir.join("index").join(segment_file_name(start))
}

/// The segment start an index file's name says (append, sealed or keyed file), if it is one.
pub fn parse_index_file_name(name: &str) -> Option<u64> {
    let stem = name
        .strip_suffix(HITS_SUFFIX)
        .or_else(|| name.strip_suffix(SEALED_SUFFIX))
        .unwrap_or(name);
    parse_segment_file_name(stem)
}

/// The sealed index of the segment starting at `start`.
pub fn sealed_path(dir: &Path, start: u64) -> PathBuf {
    dir.join("index")
        .join(format!("{}{SEALED_SUFFIX}", segment_file_name(start)))
}

/// The segment start a sealed file's name says, if `name` is one.
pub fn parse_sealed_name(name: &str) -> Option<u64> {
    name.strip_suffix(SEALED_SUFFIX)
        .and_then(parse_segment_file_name)
}

impl<F> KeyIndex<F> {
    pub fn new(entries_max: usize, segment_bytes: u64) -> Self {
        Self {
            map: FastMap::default(),
            order: VecDeque::new(),
            entries_max,
            segment_bytes,
            pending: Vec::new(),
            files: BTreeMap::new(),
            unsealed: BTreeMap::new(),
            sealed: BTreeMap::new(),
            sealed_end: 0,
            skipped: 0,
        }
    }

    /// Hits held in memory.
    pub fn hits(&self) -> usize {
        self.order.len()
    }

    /// Holds a hit of the key hashed to `hash`; false when the index is full.
    fn insert(&mut self, hash: u64, hit: KeyHit) -> bool {
        if self.order.len() >= self.entries_max {
            self.skipped += 1;
            return false;
        }
        match self.map.get_mut(&hash) {
            Some(hits) => hits.push(hit),
            None => {
                self.map.insert(hash, Hits::One(hit));
            }
        }
        self.order.push_back(hash);
        let start = hit.local - hit.local % self.segment_bytes;
        self.unsealed
            .entry(start)
            .or_default()
            .push(SealedEntry::of(hash, hit));
        true
    }

    /// Indexes a record's UNIQ_KEY and KEYS tokens.
    pub fn add(&mut self, topic: &str, keys: RecordKeys<'_>, hit: KeyHit) {
        if hit.local < self.sealed_end {
            // Recovery re-reading a record of a segment sealed after the last checkpoint.
            return;
        }
        let tokens = keys.keys.unwrap_or("").split(' ').filter(|k| !k.is_empty());
        for key in keys.uniq.into_iter().chain(tokens) {
            let hash = key_hash(topic, key);
            if self.insert(hash, hit) {
                self.pending.push(SealedEntry::of(hash, hit));
            }
        }
    }

    /// The most recent records matching `query` at or above `served_from` (the local offset
    /// below which nothing is served any more), in log order: those of unsealed segments,
    /// then, while fewer than `query.max`, of sealed ones, newest segment first.
    pub async fn query(
        this: &RefCell<Self>,
        query: &KeyQuery<'_>,
        served_from: u64,
    ) -> Result<Vec<u64>>
    where
        F: crate::io::DiskFile,
    {
        let (mut found, sealed) = {
            let index = this.borrow();
            let found = index.query_unsealed(query, served_from.max(index.sealed_end));
            let sealed: Vec<_> = index
                .sealed
                .range(served_from - served_from % index.segment_bytes..)
                .rev()
                .map(|(_, s)| s.clone())
                .collect();
            (found, sealed)
        };
        let hash = key_hash(query.topic, query.key);
        let time = query.begin_ms..=query.end_ms;
        for segment in sealed {
            if found.len() >= query.max {
                break;
            }
            let keep =
                |e: &SealedEntry| e.local >= served_from && time.contains(&e.store_timestamp_ms);
            let older = segment.lookup(hash, query.max - found.len(), keep).await?;
            found.splice(0..0, older.into_iter().map(|e| e.local));
        }
        Ok(found)
    }

    fn query_unsealed(&self, query: &KeyQuery<'_>, served_from: u64) -> Vec<u64> {
        let Some(hits) = self.map.get(&key_hash(query.topic, query.key)) else {
            return Vec::new();
        };
        let mut found: Vec<u64> = hits
            .iter()
            .rev()
            .take_while(|h| h.local >= served_from)
            .filter(|h| (query.begin_ms..=query.end_ms).contains(&h.store_timestamp_ms))
            .take(query.max)
            .map(|h| h.local)
            .collect();
        found.reverse();
        found
    }

    /// Drops up to `budget` hits of records below `local` (oldest first); returns whether
    /// none is left. Bounded so that trimming a large segment's hits never holds the
    /// shard's executor for long.
    pub fn trim_below(&mut self, local: u64, budget: usize) -> bool {
        for _ in 0..budget {
            let Some(&key) = self.order.front() else {
                return true;
            };
            let hits = self.map.get_mut(&key).expect("every ordered key is mapped");
            if hits.front().local >= local {
                return true;
            }
            if !hits.pop_front() {
                self.map.remove(&key);
            }
            self.order.pop_front();
        }
        self.order
            .front()
            .is_none_or(|key| self.map[key].front().local >= local)
    }

    /// Encodes the pending entries of records below `boundary`, one piece per segment file in
    /// log order: (segment start, bytes, entries). They stay pending until
    /// [`KeyIndex::persisted`] confirms them, so a failed or abandoned persist loses nothing.
    pub fn encode_pending(&self, boundary: u64) -> Vec<(u64, Vec<u8>, usize)> {
        let n = self.pending.partition_point(|e| e.local < boundary);
        let mut out: Vec<(u64, Vec<u8>, usize)> = Vec::new();
        for entry in &self.pending[..n] {
            let start = entry.local - entry.local % self.segment_bytes;
            if out.last().is_none_or(|(s, _, _)| *s != start) {
                out.push((start, Vec::new(), 0));
            }
            let (_, bytes, count) = out.last_mut().expect("pushed above");
            bytes.extend_from_slice(&entry.encode());
            *count += 1;
        }
        out
    }

    /// The first `count` pending entries are durably in their files.
    pub fn persisted(&mut self, count: usize) {
        self.pending.drain(..count);
    }

    /// The oldest unsealed segment with hits that lies wholly below `below`.
    fn sealable(&self, below: u64) -> Option<u64> {
        let (&start, _) = self.unsealed.first_key_value()?;
        (start + self.segment_bytes <= below).then_some(start)
    }

    /// Takes a sealed index in (at start, or once written): its segment's hits are served
    /// from it from now on. Returns the segment's end.
    pub fn add_sealed(&mut self, start: u64, index: SealedIndex<F>) -> u64 {
        let end = start + self.segment_bytes;
        self.sealed.insert(start, Rc::new(index));
        self.files.remove(&start);
        self.unsealed.remove(&start);
        self.sealed_end = self.sealed_end.max(end);
        end
    }

    pub fn is_sealed(&self, start: u64) -> bool {
        self.sealed.contains_key(&start)
    }

    /// Forgets a segment retention removes (its memory hits are trimmed apart).
    pub fn forget_segment(&mut self, start: u64) {
        self.files.remove(&start);
        self.unsealed.remove(&start);
        self.sealed.remove(&start);
    }

    /// Hits held in sealed files.
    pub fn sealed_hits(&self) -> u64 {
        self.sealed.values().map(|s| s.entries()).sum()
    }

    /// Loads an append file's entries (already durable, so not pending).
    pub fn load(&mut self, bytes: &[u8]) -> Result<()> {
        if !bytes.len().is_multiple_of(ENTRY_BYTES) {
            return Err(corrupt());
        }
        for raw in bytes.chunks_exact(ENTRY_BYTES) {
            let entry = SealedEntry::decode(raw);
            self.insert(entry.hash, entry.hit());
        }
        Ok(())
    }

    /// Loads the entries of a file of keys (a store made before hashed entries) as pending,
    /// so the next persist writes them into `.hits` files.
    pub fn load_keyed(&mut self, bytes: &[u8]) -> Result<()> {
        decode_keyed_entries(bytes, |key, hit| {
            let (topic, key) = key.split_once('#').unwrap_or((key, ""));
            let hash = key_hash(topic, key);
            if hit.local >= self.sealed_end && self.insert(hash, hit) {
                self.pending.push(SealedEntry::of(hash, hit));
            }
        })
    }
}

/// Writes the pending entries below `boundary` into their segments' files (opened as
/// needed), then closes the files of segments the log has left. No borrow of `index` is held
/// across an await; the caller keeps other persists and segment removals out meanwhile.
pub(crate) async fn persist_index<D: Disk>(
    index: &RefCell<KeyIndex<D::File>>,
    disk: &D,
    dir: &Path,
    boundary: u64,
) -> Result<()> {
    let pieces = index.borrow().encode_pending(boundary);
    for (start, data, count) in pieces {
        let (file, bytes) = {
            let mut index = index.borrow_mut();
            let entry = index.files.entry(start).or_default();
            (entry.file.take(), entry.bytes)
        };
        let mut file = match file {
            Some(file) => file,
            None => AppendFile::open(disk, &index_file_path(dir, start), bytes).await?,
        };
        let result = file.append(&data).await;
        let mut index = index.borrow_mut();
        let entry = index.files.entry(start).or_default();
        entry.bytes = file.len();
        entry.file = Some(file);
        result?;
        index.persisted(count);
    }
    let mut index = index.borrow_mut();
    let last = index.files.keys().next_back().copied();
    for (start, file) in index.files.iter_mut() {
        if Some(*start) != last {
            file.file = None;
        }
    }
    Ok(())
}

/// Seals every segment with hits wholly below `below` (the log has left it and its hits
/// are durable in its append file), oldest first: writes its sealed file, drops its hits from
/// memory in bounded steps, removes its append file. On an error the segment stays unsealed,
/// to be sealed by a later call.
pub(crate) async fn seal_segments<D: Disk>(
    index: &RefCell<KeyIndex<D::File>>,
    disk: &D,
    dir: &Path,
    below: u64,
) -> Result<()> {
    loop {
        let (start, mut entries) = {
            let mut index = index.borrow_mut();
            let Some(start) = index.sealable(below) else {
                return Ok(());
            };
            (start, index.unsealed.remove(&start).expect("sealable"))
        };
        let sealed = match write_sealed(disk, dir, start, &mut entries).await {
            Ok(sealed) => sealed,
            Err(err) => {
                index.borrow_mut().unsealed.insert(start, entries);
                return Err(err);
            }
        };
        let end = index.borrow_mut().add_sealed(start, sealed);
        while !index.borrow_mut().trim_below(end, SEAL_TRIM_BATCH) {
            futures_lite::future::yield_now().await;
        }
        if crate::shard::remove_if_there(disk, &index_file_path(dir, start)).await? {
            disk.sync_dir(&dir.join("index")).await?;
        }
    }
}

fn corrupt() -> StoreError {
    StoreError::Corrupt {
        file: "index".into(),
        reason: "truncated or invalid entry".into(),
    }
}

/// Decodes `key_len u16 | topic#key | local u64 | store ms i64` entries.
fn decode_keyed_entries(mut bytes: &[u8], mut each: impl FnMut(&str, KeyHit)) -> Result<()> {
    while !bytes.is_empty() {
        let len = u16::from_be_bytes(bytes.get(0..2).ok_or_else(corrupt)?.try_into().expect("2"))
            as usize;
        let entry = bytes.get(2..2 + len + 16).ok_or_else(corrupt)?;
        let key = std::str::from_utf8(&entry[..len]).map_err(|_| corrupt())?;
        let local = u64::from_be_bytes(entry[len..len + 8].try_into().expect("8"));
        let store_timestamp_ms = i64::from_be_bytes(entry[len + 8..].try_into().expect("8"));
        each(
            key,
            KeyHit {
                local,
                store_timestamp_ms,
            },
        );
        bytes = &bytes[2 + len + 16..];
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q<'a>(topic: &'a str, key: &'a str, begin_ms: i64, end_ms: i64, max: usize) -> KeyQuery<'a> {
        KeyQuery {
            topic,
            key,
            begin_ms,
            end_ms,
            max,
        }
    }

    fn hit(local: u64, store_timestamp_ms: i64) -> KeyHit {
        KeyHit {
            local,
            store_timestamp_ms,
        }
    }

    #[test]
    fn a_keys_hits_stay_in_order_as_they_grow_and_shrink() {
        let mut hits = Hits::One(hit(1, 10));
        assert_eq!(hits.iter().map(|h| h.local).collect::<Vec<_>>(), [1]);
        hits.push(hit(2, 20));
        hits.push(hit(3, 30));
        assert_eq!(
            hits.iter().rev().map(|h| h.local).collect::<Vec<_>>(),
            [3, 2, 1]
        );
        assert!(hits.pop_front());
        assert_eq!(hits.front(), hit(2, 20));
        assert!(hits.pop_front());
        assert!(
            matches!(hits, Hits::One(h) if h == hit(3, 30)),
            "one hit is inline again"
        );
        assert!(!hits.pop_front(), "the last hit leaves none");
    }

    #[test]
    fn indexes_keys_and_uniq_key_and_round_trips() {
        let mut index: KeyIndex<()> = KeyIndex::new(100, 4096);
        let props = "KEYS\u{1}a b\u{2}UNIQ_KEY\u{1}U1\u{2}";
        index.add("T", RecordKeys::of(props), hit(10, 1000));
        index.add("T", RecordKeys::of("KEYS\u{1}a\u{2}"), hit(20, 2000));
        assert_eq!(
            index.query_unsealed(&q("T", "a", 0, i64::MAX, 10), 0),
            vec![10, 20]
        );
        assert_eq!(
            index.query_unsealed(&q("T", "a", 1500, 2500, 10), 0),
            vec![20]
        );
        assert_eq!(
            index.query_unsealed(&q("T", "a", 0, i64::MAX, 1), 0),
            vec![20]
        );
        assert_eq!(
            index.query_unsealed(&q("T", "U1", 0, i64::MAX, 10), 0),
            vec![10]
        );
        assert_eq!(
            index.query_unsealed(&q("T", "a", 0, i64::MAX, 10), 15),
            vec![20]
        );
        assert!(index
            .query_unsealed(&q("U", "a", 0, i64::MAX, 10), 0)
            .is_empty());
        let pieces = index.encode_pending(15);
        assert_eq!(pieces.len(), 1);
        let (start, encoded, count) = &pieces[0];
        assert_eq!(
            (*start, *count),
            (0, 3),
            "k a, k b and UNIQ_KEY of the first record"
        );
        index.persisted(*count);
        assert_eq!(index.encode_pending(u64::MAX)[0].2, 1);
        let mut reloaded: KeyIndex<()> = KeyIndex::new(100, 4096);
        reloaded.load(encoded).unwrap();
        assert_eq!(
            reloaded.query_unsealed(&q("T", "b", 0, i64::MAX, 10), 0),
            vec![10]
        );
        assert!(reloaded
            .query_unsealed(&q("T", "a", 1500, 2500, 10), 0)
            .is_empty());
        assert!(
            reloaded.encode_pending(u64::MAX).is_empty(),
            "loaded is durable"
        );
        assert!(reloaded.load(&encoded[..encoded.len() - 1]).is_err());
        assert_eq!(encoded.len(), 3 * ENTRY_BYTES, "no key bytes, only hashes");
    }

    /// `key_len u16 | topic#key | local u64 | store ms i64`, as stores before hashed entries wrote.
    fn keyed(entries: &[(&str, u64, i64)]) -> Vec<u8> {
        let mut out = Vec::new();
        for (key, local, ms) in entries {
            out.extend_from_slice(&(key.len() as u16).to_be_bytes());
            out.extend_from_slice(key.as_bytes());
            out.extend_from_slice(&local.to_be_bytes());
            out.extend_from_slice(&ms.to_be_bytes());
        }
        out
    }

    #[test]
    fn files_of_keys_load_as_pending_hashed_entries() {
        let mut index: KeyIndex<()> = KeyIndex::new(100, 4096);
        let old = keyed(&[("T#a", 10, 1000), ("T#b#c", 20, 2000), ("U#a", 30, 3000)]);
        index.load_keyed(&old).unwrap();
        assert_eq!(
            index.query_unsealed(&q("T", "a", 0, i64::MAX, 10), 0),
            vec![10]
        );
        assert_eq!(
            index.query_unsealed(&q("T", "b#c", 0, i64::MAX, 10), 0),
            vec![20],
            "a key may hold '#'; the topic cannot"
        );
        assert_eq!(
            index.query_unsealed(&q("U", "a", 0, i64::MAX, 10), 0),
            vec![30]
        );
        let pieces = index.encode_pending(u64::MAX);
        assert_eq!(pieces[0].2, 3, "rewritten as hashed entries");
        let mut reloaded: KeyIndex<()> = KeyIndex::new(100, 4096);
        reloaded.load(&pieces[0].1).unwrap();
        assert_eq!(
            reloaded.query_unsealed(&q("T", "b#c", 0, i64::MAX, 10), 0),
            vec![20]
        );
        assert!(index.load_keyed(&old[..old.len() - 1]).is_err());
    }

    #[test]
    fn pending_entries_split_by_segment() {
        let mut index: KeyIndex<()> = KeyIndex::new(100, 100);
        for local in [10, 90, 120, 250] {
            index.add("T", RecordKeys::of("KEYS\u{1}k\u{2}"), hit(local, 1));
        }
        let pieces: Vec<(u64, usize)> = index
            .encode_pending(200)
            .into_iter()
            .map(|(start, _, count)| (start, count))
            .collect();
        assert_eq!(pieces, [(0, 2), (100, 1)]);
    }

    #[test]
    fn trimming_drops_the_oldest_hits_in_bounded_steps() {
        let mut index: KeyIndex<()> = KeyIndex::new(100, 4096);
        for local in 0..10u64 {
            let props = format!("KEYS\u{1}k{} all\u{2}", local % 3);
            index.add("T", RecordKeys::of(&props), hit(local * 10, 1));
        }
        assert_eq!(index.hits(), 20);
        assert!(!index.trim_below(55, 4), "12 hits lie below 55");
        assert_eq!(index.hits(), 16);
        assert!(index.trim_below(55, 100));
        assert_eq!(index.hits(), 8);
        assert_eq!(
            index.query_unsealed(&q("T", "all", 0, i64::MAX, 10), 0),
            [60, 70, 80, 90]
        );
        assert_eq!(
            index.query_unsealed(&q("T", "k0", 0, i64::MAX, 10), 0),
            [60, 90]
        );
        assert!(index.trim_below(1000, 100));
        assert_eq!(index.hits(), 0);
        assert!(index
            .query_unsealed(&q("T", "all", 0, i64::MAX, 10), 0)
            .is_empty());
        index.add("T", RecordKeys::of("KEYS\u{1}all\u{2}"), hit(2000, 1));
        assert_eq!(
            index.query_unsealed(&q("T", "all", 0, i64::MAX, 10), 0),
            [2000]
        );
    }

    #[test]
    fn full_index_skips_and_counts() {
        let mut index: KeyIndex<()> = KeyIndex::new(1, 4096);
        index.add("T", RecordKeys::of("KEYS\u{1}a b\u{2}"), hit(1, 1));
        assert_eq!(index.skipped, 1);
        assert_eq!(
            index.query_unsealed(&q("T", "a", 0, i64::MAX, 10), 0),
            vec![1]
        );
    }
}
