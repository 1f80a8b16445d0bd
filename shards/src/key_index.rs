//! The message-key index: `topic#key` → records, for every token of the KEYS property and for
//! UNIQ_KEY (RocketMQ's IndexFile semantics). Held in memory; persisted lazily as an
//! append-only file `index/keys` of entries `key_len u16 | key | local offset u64 |
//! store timestamp i64`, of which the checkpoint says how many bytes are valid.

use crate::append_file::AppendFile;
use crate::error::{Result, StoreError};
use crate::record::{find_property, property};
use crate::FastMap;

/// Longest key indexed (topic + '#' + key); longer keys are not indexed rather than stored
/// with a length that would not fit the entry format.
pub const INDEX_KEY_BYTES_MAX: usize = u16::MAX as usize;

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

/// One indexed occurrence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyHit {
    pub local: u64,
    pub store_timestamp_ms: i64,
}

/// Owned by one shard.
pub struct KeyIndex<F> {
    map: FastMap<String, Vec<KeyHit>>,
    entries: usize,
    entries_max: usize,
    /// Entries not yet persisted, in log order.
    pending: Vec<(String, KeyHit)>,
    pub persisted_bytes: u64,
    /// Taken out while a persist is in flight.
    pub file: Option<AppendFile<F>>,
    /// Keys skipped because the index was full (reported, not silent).
    pub skipped: u64,
}

fn index_key(topic: &str, key: &str) -> String {
    format!("{topic}#{key}")
}

impl<F> KeyIndex<F> {
    pub fn new(entries_max: usize) -> Self {
        Self {
            map: FastMap::default(),
            entries: 0,
            entries_max,
            pending: Vec::new(),
            persisted_bytes: 0,
            file: None,
            skipped: 0,
        }
    }

    fn insert(&mut self, key: String, hit: KeyHit) -> bool {
        if self.entries >= self.entries_max || key.len() > INDEX_KEY_BYTES_MAX {
            self.skipped += 1;
            return false;
        }
        self.entries += 1;
        self.map.entry(key).or_default().push(hit);
        true
    }

    /// Indexes a record's UNIQ_KEY and KEYS tokens.
    pub fn add(&mut self, topic: &str, properties: &str, hit: KeyHit) {
        let uniq = find_property(properties, property::UNIQ_KEY);
        let keys = find_property(properties, property::KEYS).unwrap_or("");
        for key in uniq
            .into_iter()
            .chain(keys.split(' ').filter(|k| !k.is_empty()))
        {
            let key = index_key(topic, key);
            if self.insert(key.clone(), hit) {
                self.pending.push((key, hit));
            }
        }
    }

    /// The most recent records matching `query`, in log order.
    pub fn query(&self, query: &KeyQuery<'_>) -> Vec<u64> {
        let Some(hits) = self.map.get(&index_key(query.topic, query.key)) else {
            return Vec::new();
        };
        let mut found: Vec<u64> = hits
            .iter()
            .rev()
            .filter(|h| (query.begin_ms..=query.end_ms).contains(&h.store_timestamp_ms))
            .take(query.max)
            .map(|h| h.local)
            .collect();
        found.reverse();
        found
    }

    /// Encodes the pending entries of records below `boundary` for the file; returns the
    /// bytes and how many entries they hold. They stay pending until
    /// [`KeyIndex::persisted`] confirms them, so a failed or abandoned persist loses nothing.
    pub fn encode_pending(&self, boundary: u64) -> (Vec<u8>, usize) {
        let n = self.pending.partition_point(|(_, h)| h.local < boundary);
        let mut out = Vec::new();
        for (key, hit) in &self.pending[..n] {
            out.extend_from_slice(&(key.len() as u16).to_be_bytes());
            out.extend_from_slice(key.as_bytes());
            out.extend_from_slice(&hit.local.to_be_bytes());
            out.extend_from_slice(&hit.store_timestamp_ms.to_be_bytes());
        }
        (out, n)
    }

    /// The first `count` pending entries are durably in the file.
    pub fn persisted(&mut self, count: usize) {
        self.pending.drain(..count);
    }

    /// Loads persisted entries (already durable, so not pending).
    pub fn load(&mut self, bytes: &[u8]) -> Result<()> {
        let mut loaded = Vec::new();
        decode_entries(bytes, |key, hit| loaded.push((key, hit)))?;
        for (key, hit) in loaded {
            self.insert(key, hit);
        }
        self.persisted_bytes = bytes.len() as u64;
        Ok(())
    }
}

fn decode_entries(mut bytes: &[u8], mut each: impl FnMut(String, KeyHit)) -> Result<()> {
    let corrupt = || StoreError::Corrupt {
        file: "index/keys".into(),
        reason: "truncated or invalid entry".into(),
    };
    while !bytes.is_empty() {
        let len = u16::from_be_bytes(bytes.get(0..2).ok_or_else(corrupt)?.try_into().expect("2"))
            as usize;
        let entry = bytes.get(2..2 + len + 16).ok_or_else(corrupt)?;
        let key = std::str::from_utf8(&entry[..len]).map_err(|_| corrupt())?;
        let local = u64::from_be_bytes(entry[len..len + 8].try_into().expect("8"));
        let store_timestamp_ms = i64::from_be_bytes(entry[len + 8..].try_into().expect("8"));
        each(
            key.to_owned(),
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

    #[test]
    fn indexes_keys_and_uniq_key_and_round_trips() {
        let mut index: KeyIndex<()> = KeyIndex::new(100);
        let props = "KEYS\u{1}a b\u{2}UNIQ_KEY\u{1}U1\u{2}";
        index.add(
            "T",
            props,
            KeyHit {
                local: 10,
                store_timestamp_ms: 1000,
            },
        );
        index.add(
            "T",
            "KEYS\u{1}a\u{2}",
            KeyHit {
                local: 20,
                store_timestamp_ms: 2000,
            },
        );
        assert_eq!(index.query(&q("T", "a", 0, i64::MAX, 10)), vec![10, 20]);
        assert_eq!(index.query(&q("T", "a", 1500, 2500, 10)), vec![20]);
        assert_eq!(index.query(&q("T", "a", 0, i64::MAX, 1)), vec![20]);
        assert_eq!(index.query(&q("T", "U1", 0, i64::MAX, 10)), vec![10]);
        assert!(index.query(&q("U", "a", 0, i64::MAX, 10)).is_empty());
        let (encoded, count) = index.encode_pending(15);
        assert_eq!(count, 3, "k a, k b and UNIQ_KEY of the first record");
        index.persisted(count);
        assert_eq!(index.encode_pending(u64::MAX).1, 1);
        let mut reloaded: KeyIndex<()> = KeyIndex::new(100);
        reloaded.load(&encoded).unwrap();
        assert_eq!(reloaded.query(&q("T", "b", 0, i64::MAX, 10)), vec![10]);
        assert!(reloaded.query(&q("T", "a", 1500, 2500, 10)).is_empty());
        assert!(reloaded.load(&encoded[..encoded.len() - 1]).is_err());
    }

    #[test]
    fn full_index_skips_and_counts() {
        let mut index: KeyIndex<()> = KeyIndex::new(1);
        index.add(
            "T",
            "KEYS\u{1}a b\u{2}",
            KeyHit {
                local: 1,
                store_timestamp_ms: 1,
            },
        );
        assert_eq!(index.skipped, 1);
        assert_eq!(index.query(&q("T", "a", 0, i64::MAX, 10)), vec![1]);
    }
}
