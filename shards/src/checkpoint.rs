//! The checkpoint: how far the consume queues and the key index are persisted, plus what
//! retention and topic deletion need to survive a restart. Written crash-safely
//! (`meta_file`) by every persist; recovery loads the state it names and scans the log from
//! `log` on.
//!
//! Payload, version 4: `u64::MAX | u32 4 | log local u64 | chain u32 | queue ranges
//! generation u64 | valid bytes u64 |` then three lists, each `u32 count` and its items. The
//! queues' ranges are in the journal `queue_ranges.<generation>` (`consume_queue::journal`),
//! so the checkpoint's size does not grow with the queues: for each queue, entries `[min,
//! end)` of its files are valid (entries below `min` went with their segment), and the one at
//! `min` starts at `first local` in the log.
//! - segments `(start u64, newest store ms u64)`: the newest record of each segment, which
//!   says when it expires;
//! - index files `(segment start u64, valid bytes u64)`: the append-only key-index file of
//!   each unsealed segment, `index/<start>.hits` (hashed entries);
//! - deleted topics `(topic, log end u64)`: records of the topic below that log position
//!   belong to its deleted incarnation and are neither served nor recovered.
//!
//! Version 3 has, instead of the journal reference, a fourth list first: queues `(topic,
//! queue id u32, min offset u64, end offset u64)`, each queue's entries all in one file
//! `00000000000000000000` (before paged consume queues). Version 2 is version 3 with index
//! files `index/<start>` of keys (before hashed entries). Version 1 (before retention; no marker): `log local u64 | chain u32 | index bytes u64 |
//! u32 count, (topic, queue id u32, end u64)*`, with one index file `index/keys`. It is read
//! as min offsets 0, no segment times (segments count from the open), the single index file.

use crate::commit_log::LogPosition;
use crate::consume_queue::journal::JournalRef;
use crate::error::Result;
use crate::meta_file::{MetaReader, MetaWriter};

/// First 8 bytes of a versioned payload: a log position no shard reaches.
const VERSIONED: u64 = u64::MAX;
const VERSION: u32 = 4;
/// Queues in one file each, without their first entry's log offset.
const VERSION_SINGLE_QUEUE_FILES: u32 = 3;
/// Index files of keys, not hashes (and single queue files).
const VERSION_KEYED_INDEX: u32 = 2;

/// One queue's persisted range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueRange {
    pub topic: String,
    pub queue_id: i32,
    pub min: u64,
    pub end: u64,
    /// Log offset of the entry at `min`; unknown (`None`) in a version before 4, and for an
    /// empty queue (`min == end`).
    pub first_local: Option<u64>,
}

/// Where the key index lives on disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IndexFiles {
    /// Version 1: the single `index/keys` with this many valid bytes.
    Legacy(u64),
    /// Version 2: one file of keys per commit-log segment: (segment start, valid bytes).
    KeyedPerSegment(Vec<(u64, u64)>),
    /// One file of hashed entries per unsealed segment: (segment start, valid bytes).
    PerSegment(Vec<(u64, u64)>),
}

impl Default for IndexFiles {
    fn default() -> Self {
        Self::PerSegment(Vec::new())
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Checkpoint {
    pub log: LogPosition,
    /// Version 4: where the queues' ranges are.
    pub queue_journal: JournalRef,
    /// Versions 1 to 3: the queues' ranges (read from the journal, for version 4).
    pub queues: Vec<QueueRange>,
    /// (segment start, newest store time in ms); segments missing here are timed at open.
    pub segments: Vec<(u64, i64)>,
    pub index: IndexFiles,
    /// (topic, log end at its deletion).
    pub deleted_topics: Vec<(String, u64)>,
    /// Written before paged consume queues: each queue's entries are all in its first file.
    pub single_queue_files: bool,
}

impl Checkpoint {
    pub fn encode(&self) -> Vec<u8> {
        self.encode_as(VERSION)
    }

    /// The payload in `version` (only tests write an older one, to make an older store);
    /// the index files are written as hashed ones either way.
    pub(crate) fn encode_as(&self, version: u32) -> Vec<u8> {
        let mut w = MetaWriter::default();
        w.u64(VERSIONED).u32(version);
        w.u64(self.log.local).u32(self.log.chain);
        if version == VERSION {
            let journal = self.queue_journal;
            w.u64(journal.generation).u64(journal.bytes);
        } else {
            w.u32(self.queues.len() as u32);
            for q in &self.queues {
                w.str(&q.topic).u32(q.queue_id as u32).u64(q.min).u64(q.end);
            }
        }
        w.u32(self.segments.len() as u32);
        for (start, newest_ms) in &self.segments {
            w.u64(*start).u64(*newest_ms as u64);
        }
        let files: &[(u64, u64)] = match &self.index {
            IndexFiles::PerSegment(files) => files,
            IndexFiles::Legacy(_) | IndexFiles::KeyedPerSegment(_) => {
                unreachable!("a checkpoint is written in version {VERSION}")
            }
        };
        w.u32(files.len() as u32);
        for (start, bytes) in files {
            w.u64(*start).u64(*bytes);
        }
        w.u32(self.deleted_topics.len() as u32);
        for (topic, end) in &self.deleted_topics {
            w.str(topic).u64(*end);
        }
        w.0
    }

    pub fn decode(payload: &[u8]) -> Result<Self> {
        let mut r = MetaReader::new(payload, "checkpoint");
        let first = r.u64()?;
        if first != VERSIONED {
            return Self::decode_v1(first, r);
        }
        let version = r.u32()?;
        if !(VERSION_KEYED_INDEX..=VERSION).contains(&version) {
            return Err(crate::error::StoreError::Corrupt {
                file: "checkpoint".into(),
                reason: format!("version {version} unknown"),
            });
        }
        let log = LogPosition {
            local: r.u64()?,
            chain: r.u32()?,
        };
        let (queue_journal, queues) = if version == VERSION {
            let journal = JournalRef {
                generation: r.u64()?,
                bytes: r.u64()?,
            };
            (journal, Vec::new())
        } else {
            let queues = (0..r.u32()?)
                .map(|_| {
                    Ok(QueueRange {
                        topic: r.str()?,
                        queue_id: r.u32()? as i32,
                        min: r.u64()?,
                        end: r.u64()?,
                        first_local: None,
                    })
                })
                .collect::<Result<_>>()?;
            (JournalRef::default(), queues)
        };
        let segments = (0..r.u32()?)
            .map(|_| Ok((r.u64()?, r.u64()? as i64)))
            .collect::<Result<_>>()?;
        let files = (0..r.u32()?)
            .map(|_| Ok((r.u64()?, r.u64()?)))
            .collect::<Result<_>>()?;
        let deleted_topics = (0..r.u32()?)
            .map(|_| Ok((r.str()?, r.u64()?)))
            .collect::<Result<_>>()?;
        r.finish()?;
        Ok(Self {
            log,
            queue_journal,
            queues,
            segments,
            index: if version == VERSION_KEYED_INDEX {
                IndexFiles::KeyedPerSegment(files)
            } else {
                IndexFiles::PerSegment(files)
            },
            deleted_topics,
            single_queue_files: version <= VERSION_SINGLE_QUEUE_FILES,
        })
    }

    fn decode_v1(local: u64, mut r: MetaReader<'_>) -> Result<Self> {
        let log = LogPosition {
            local,
            chain: r.u32()?,
        };
        let index_bytes = r.u64()?;
        let queues = (0..r.u32()?)
            .map(|_| {
                Ok(QueueRange {
                    topic: r.str()?,
                    queue_id: r.u32()? as i32,
                    min: 0,
                    end: r.u64()?,
                    first_local: None,
                })
            })
            .collect::<Result<_>>()?;
        r.finish()?;
        Ok(Self {
            log,
            queue_journal: JournalRef::default(),
            queues,
            segments: Vec::new(),
            index: IndexFiles::Legacy(index_bytes),
            deleted_topics: Vec::new(),
            single_queue_files: true,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_4_round_trips_and_older_ones_name_their_files() {
        let checkpoint = Checkpoint {
            log: LogPosition {
                local: 8192,
                chain: 7,
            },
            queue_journal: JournalRef {
                generation: 2,
                bytes: 777,
            },
            queues: Vec::new(),
            segments: vec![(0, 1_700_000_000_000), (4096, -1)],
            index: IndexFiles::PerSegment(vec![(0, 100), (4096, 20)]),
            deleted_topics: vec![("Gone".into(), 4000)],
            single_queue_files: false,
        };
        assert_eq!(
            Checkpoint::decode(&checkpoint.encode()).unwrap(),
            checkpoint
        );
        let mut truncated = checkpoint.encode();
        truncated.pop();
        assert!(Checkpoint::decode(&truncated).is_err());
        // Version 3 lists the queues instead of naming the journal.
        let listed = Checkpoint {
            queues: vec![QueueRange {
                topic: "T".into(),
                queue_id: 3,
                min: 5,
                end: 9,
                first_local: None,
            }],
            ..checkpoint.clone()
        };
        let v3 = Checkpoint::decode(&listed.encode_as(VERSION_SINGLE_QUEUE_FILES)).unwrap();
        assert!(v3.single_queue_files);
        assert_eq!(
            (v3.queue_journal, &v3.queues),
            (JournalRef::default(), &listed.queues)
        );
        let v2 = Checkpoint::decode(&checkpoint.encode_as(VERSION_KEYED_INDEX)).unwrap();
        assert_eq!(
            v2.index,
            IndexFiles::KeyedPerSegment(vec![(0, 100), (4096, 20)])
        );
    }

    #[test]
    fn version_1_reads_as_untrimmed_queues_and_the_single_index_file() {
        let mut w = MetaWriter::default();
        w.u64(4096).u32(9).u64(321).u32(1);
        w.str("T").u32(2).u64(17);
        let checkpoint = Checkpoint::decode(&w.0).unwrap();
        assert_eq!(
            checkpoint.log,
            LogPosition {
                local: 4096,
                chain: 9
            }
        );
        assert_eq!(checkpoint.index, IndexFiles::Legacy(321));
        assert_eq!(
            checkpoint.queues,
            [QueueRange {
                topic: "T".into(),
                queue_id: 2,
                min: 0,
                end: 17,
                first_local: None,
            }]
        );
        assert!(checkpoint.segments.is_empty() && checkpoint.deleted_topics.is_empty());
        assert!(checkpoint.single_queue_files);
    }
}
