//! The queue-range journal: what the checkpoint knows of each queue (min offset, persisted
//! end, the first entry's log offset), appended to `queue_ranges.<generation>` one record per
//! queue that changed since the last persist, so a persist costs the queues written in that
//! second, not every queue the shard holds (100 000 queues are ~4 MB of ranges; rewritten
//! each second they were most of a persist). The checkpoint names the file and its valid
//! length; what lies past that length (a persist that crashed before its checkpoint) is
//! ignored at start, and the next append overwrites it.
//!
//! Record: `topic | queue id u32 | min u64 | end u64 | first local u64` (the last record of a
//! queue wins); a deleted queue's record has `min = u64::MAX`. When the file holds more than
//! [`JOURNAL_GROWTH_MAX`] times the live queues' records (plus [`JOURNAL_RECORDS_SLACK`]), a
//! persist writes the live ones into the next generation instead, and removes the old file
//! once the checkpoint names the new one.

use super::QueueMap;
use crate::append_file::AppendFile;
use crate::checkpoint::QueueRange;
use crate::error::Result;
use crate::io::{Disk, DiskFile};
use crate::meta_file::{MetaReader, MetaWriter};
use crate::shard::remove_if_there;
use crate::FastMap;
use std::cell::RefCell;
use std::path::{Path, PathBuf};

/// The journal is rewritten once it holds this many times the live queues' records: its
/// size and the start-up read stay within a small multiple of the live ranges.
pub const JOURNAL_GROWTH_MAX: u64 = 4;
/// Records a journal may hold beyond that before it is rewritten, so a shard of few queues
/// does not rewrite it every persist.
pub const JOURNAL_RECORDS_SLACK: u64 = 16_384;
/// `min` of a deleted queue's record.
const REMOVED: u64 = u64::MAX;
/// `first local` of an empty queue.
const NO_FIRST: u64 = u64::MAX;
const NAME_PREFIX: &str = "queue_ranges.";

/// What the checkpoint knows of one queue: (min offset, persisted end, first local).
pub type Journaled = (u64, u64, Option<u64>);

/// Where the journal is: the checkpoint's reference to it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JournalRef {
    pub generation: u64,
    pub bytes: u64,
}

pub fn journal_path(dir: &Path, generation: u64) -> PathBuf {
    dir.join(format!("{NAME_PREFIX}{generation:020}"))
}

/// The shard's journal. Owned by the shard; written only under its persist lock.
pub(crate) struct RangeJournal<F> {
    at: JournalRef,
    /// Open for appends (opened at the first).
    file: Option<AppendFile<F>>,
    /// Records in the file, and of how many queues.
    records: u64,
    live: u64,
    /// Queues deleted since the last persist (their removal records are due).
    removed: Vec<(String, i32)>,
}

/// What one persist writes: the records' bytes, and where.
pub(crate) struct JournalWrite {
    bytes: Vec<u8>,
    /// The ranges it records (to mark journaled once the checkpoint is durable).
    changed: Vec<((String, i32), Journaled)>,
    /// Into the next generation, from its start; else appended at the journal's end.
    fresh: bool,
    records: u64,
    removed: usize,
}

impl JournalWrite {
    pub(crate) fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

fn encode(w: &mut MetaWriter, (topic, queue_id): (&str, i32), (min, end, first): Journaled) {
    w.str(topic).u32(queue_id as u32).u64(min).u64(end);
    w.u64(first.unwrap_or(NO_FIRST));
}

/// The queues' ranges the journal `at` holds (the last record of each queue).
pub(crate) async fn load<D: Disk>(disk: &D, dir: &Path, at: JournalRef) -> Result<Vec<QueueRange>> {
    if at.bytes == 0 {
        return Ok(Vec::new());
    }
    let file = AppendFile::open(disk, &journal_path(dir, at.generation), at.bytes).await?;
    let bytes = file.read_prefix(at.bytes).await?;
    let mut r = MetaReader::new(&bytes, "queue ranges");
    let mut ranges: FastMap<(String, i32), (u64, u64, u64)> = FastMap::default();
    while !r.is_done() {
        let key = (r.str()?, r.u32()? as i32);
        let record = (r.u64()?, r.u64()?, r.u64()?);
        if record.0 == REMOVED {
            ranges.remove(&key);
        } else {
            ranges.insert(key, record);
        }
    }
    let mut out: Vec<QueueRange> = ranges
        .into_iter()
        .map(|((topic, queue_id), (min, end, first))| QueueRange {
            topic,
            queue_id,
            min,
            end,
            first_local: (first != NO_FIRST).then_some(first),
        })
        .collect();
    out.sort_by(|a, b| (&a.topic, a.queue_id).cmp(&(&b.topic, b.queue_id)));
    Ok(out)
}

impl<F: DiskFile> RangeJournal<F> {
    /// The journal the checkpoint names, holding the ranges of `live` queues.
    pub(crate) fn new(at: JournalRef, live: usize) -> Self {
        Self {
            at,
            file: None,
            // Unknown until rewritten: counted as if it were all live records.
            records: live as u64,
            live: live as u64,
            removed: Vec::new(),
        }
    }

    pub(crate) fn at(&self) -> JournalRef {
        self.at
    }

    /// A queue of `topic` was deleted.
    pub(crate) fn note_removed(&mut self, topic: &str, queue_id: i32) {
        self.removed.push((topic.to_owned(), queue_id));
    }

    /// The records of the ranges that changed since they were last journaled and of the
    /// queues deleted since the last write; or, once the journal has grown too far, of every
    /// live range, for the next generation.
    pub(crate) fn prepare(&self, queues: &QueueMap) -> JournalWrite {
        let changed: Vec<((String, i32), Journaled)> = queues
            .iter()
            .filter(|(_, _, q)| q.journaled != q.checkpointed())
            .map(|(topic, queue_id, q)| ((topic.to_owned(), queue_id), q.checkpointed()))
            .collect();
        let mut w = MetaWriter::default();
        if changed.is_empty() && self.removed.is_empty() {
            return JournalWrite {
                bytes: w.0,
                changed,
                fresh: false,
                records: self.records,
                removed: 0,
            };
        }
        let grown = self.records + (self.removed.len() + changed.len()) as u64;
        let fresh = grown > JOURNAL_GROWTH_MAX * self.live + JOURNAL_RECORDS_SLACK;
        let records = if fresh {
            let live = queues.iter().filter(|(_, _, q)| q.checkpointed().1 > 0);
            let mut n = 0;
            for (topic, queue_id, q) in live {
                encode(&mut w, (topic, queue_id), q.checkpointed());
                n += 1;
            }
            n
        } else {
            for (topic, queue_id) in &self.removed {
                encode(&mut w, (topic, *queue_id), (REMOVED, 0, None));
            }
            for ((topic, queue_id), range) in &changed {
                encode(&mut w, (topic, *queue_id), *range);
            }
            grown
        };
        JournalWrite {
            bytes: w.0,
            changed,
            fresh,
            records,
            removed: self.removed.len(),
        }
    }

    /// Takes the open file out for `write` (none if it goes into a new generation).
    pub(crate) fn take_file(&mut self, write: &JournalWrite) -> Option<AppendFile<F>> {
        let file = self.file.take();
        if write.fresh {
            None
        } else {
            file
        }
    }

    /// Where `write` goes: (generation, the valid bytes before it).
    pub(crate) fn target(&self, write: &JournalWrite) -> JournalRef {
        if write.fresh {
            JournalRef {
                generation: self.at.generation + 1,
                bytes: 0,
            }
        } else {
            self.at
        }
    }

    /// `write` is in `file` (durably): the journal now ends after it.
    pub(crate) fn written(&mut self, file: AppendFile<F>, write: &JournalWrite) -> JournalRef {
        let old = self.at;
        self.at = JournalRef {
            generation: self.target(write).generation,
            bytes: file.len(),
        };
        self.file = Some(file);
        self.records = write.records;
        self.removed.drain(..write.removed);
        old
    }

    /// The checkpoint naming the journal after `write` is durable: marks its ranges as
    /// journaled; returns the generation it replaced, if any, to remove.
    pub(crate) fn confirm(
        &mut self,
        queues: &mut QueueMap,
        write: JournalWrite,
        old: JournalRef,
    ) -> Option<u64> {
        for ((topic, queue_id), range) in write.changed {
            if let Some(queue) = queues.get_mut(&topic, queue_id) {
                queue.journaled = range;
            }
        }
        self.live = queues.iter().filter(|(_, _, q)| q.journaled.1 > 0).count() as u64;
        (write.fresh && old.generation != self.at.generation).then_some(old.generation)
    }
}

/// Writes `write` into `file` (or a new file of its generation when `file` is `None`) at
/// `target`; returns the file.
pub(crate) async fn append<D: Disk>(
    disk: &D,
    dir: &Path,
    file: Option<AppendFile<D::File>>,
    target: JournalRef,
    write: &JournalWrite,
) -> Result<AppendFile<D::File>> {
    let mut file = match file {
        Some(file) if file.len() == target.bytes => file,
        _ => AppendFile::open(disk, &journal_path(dir, target.generation), target.bytes).await?,
    };
    file.append(&write.bytes).await?;
    Ok(file)
}

/// Removes journal files other than generation `keep` (a crash between a rewrite's
/// checkpoint and the old file's removal leaves one).
pub(crate) async fn remove_stale<D: Disk>(disk: &D, dir: &Path, keep: u64) -> Result<()> {
    for name in disk.list_dir(dir).await? {
        let generation = name
            .strip_prefix(NAME_PREFIX)
            .and_then(|g| g.parse::<u64>().ok());
        if generation.is_some_and(|g| g != keep) {
            remove_if_there(disk, &dir.join(&name)).await?;
        }
    }
    Ok(())
}

/// A persist's journal write, before its checkpoint: writes the changed ranges (if any);
/// returns what [`confirm_ranges`] confirms once the checkpoint is durable.
pub(crate) async fn write_ranges<D: Disk>(
    disk: &D,
    dir: &Path,
    journal: &RefCell<RangeJournal<D::File>>,
    queues: &RefCell<QueueMap>,
) -> Result<Option<(JournalWrite, JournalRef)>> {
    let (write, file, target) = {
        let mut journal = journal.borrow_mut();
        let write = journal.prepare(&queues.borrow());
        if write.is_empty() {
            return Ok(None);
        }
        let file = journal.take_file(&write);
        let target = journal.target(&write);
        (write, file, target)
    };
    let file = append(disk, dir, file, target, &write).await?;
    let old = journal.borrow_mut().written(file, &write);
    Ok(Some((write, old)))
}

/// The checkpoint naming the journal is durable: see [`RangeJournal::confirm`].
pub(crate) async fn confirm_ranges<D: Disk>(
    disk: &D,
    dir: &Path,
    journal: &RefCell<RangeJournal<D::File>>,
    queues: &RefCell<QueueMap>,
    (write, old): (JournalWrite, JournalRef),
) -> Result<()> {
    let stale = journal
        .borrow_mut()
        .confirm(&mut queues.borrow_mut(), write, old);
    if let Some(generation) = stale {
        remove_if_there(disk, &journal_path(dir, generation)).await?;
    }
    Ok(())
}
