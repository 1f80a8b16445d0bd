//! The consume queues at start: made from the checkpoint alone (offsets, and where each
//! queue's first entry is in the log), without reading the queues' files, except the
//! resident queues' entries and, once, a store written before paged files.

use super::pages::{read_file_entries, read_span};
use super::{
    file_path, file_pos, is_resident, CqEntry, QueueMap, RecoveredRange, CQ_ENTRY_BYTES,
    FILE_ENTRIES,
};
use crate::append_file::AppendFile;
use crate::checkpoint::{Checkpoint, QueueRange};
use crate::error::{Result, StoreError};
use crate::io::Disk;
use std::path::Path;

/// The checkpointed part of every queue.
pub(crate) async fn load_queues<D: Disk>(
    disk: &D,
    dir: &Path,
    shard_id: u16,
    checkpoint: &Checkpoint,
) -> Result<QueueMap> {
    let mut queues = QueueMap::default();
    for range in &checkpoint.queues {
        let key = (range.topic.as_str(), range.queue_id);
        let corrupt = |reason: &str| StoreError::Corrupt {
            file: file_path(dir, key.0, key.1, range.min / FILE_ENTRIES)
                .display()
                .to_string(),
            reason: reason.into(),
        };
        if range.min > range.end {
            return Err(corrupt("min offset past the end"));
        }
        let first_local = if checkpoint.single_queue_files {
            split_single_file(disk, dir, range, shard_id).await?
        } else {
            range.first_local
        };
        if first_local.is_some() != (range.min < range.end) {
            return Err(corrupt("the first entry's log offset is missing"));
        }
        if first_local.is_some_and(|local| local >= checkpoint.log.local) {
            return Err(corrupt("entry past the checkpoint"));
        }
        let recovered = RecoveredRange {
            base: range.min,
            persisted: range.end,
            first_local,
        };
        queues.insert_recovered(key.0, key.1, recovered);
        if is_resident(key.0) {
            let entries = read_span(disk, dir, key, range.min..range.end, shard_id).await?;
            let queue = queues.get_mut(key.0, key.1).expect("inserted above");
            queue.tail = entries.into();
            queue.tail_from = range.min;
        }
    }
    Ok(queues)
}

/// A queue of a store from before paged files has all its entries in its first file: those
/// past that file's share are copied into the files that hold them now (from the start of
/// the min offset's file, so every file is whole up to its entries). Idempotent, so a crash
/// before the next checkpoint only repeats it. Returns the log offset of the entry at min.
async fn split_single_file<D: Disk>(
    disk: &D,
    dir: &Path,
    range: &QueueRange,
    shard_id: u16,
) -> Result<Option<u64>> {
    let (topic, queue_id) = (range.topic.as_str(), range.queue_id);
    let single = file_path(dir, topic, queue_id, 0);
    let pos_in_single = |offset: u64| offset * CQ_ENTRY_BYTES as u64;
    let first_local = if range.min < range.end {
        let first = read_file_entries(disk, &single, pos_in_single(range.min), 1, shard_id).await?;
        Some(first[0].local)
    } else {
        None
    };
    let mut at = FILE_ENTRIES.max(range.min - range.min % FILE_ENTRIES);
    while at < range.end {
        let n = (FILE_ENTRIES - at % FILE_ENTRIES).min(range.end - at);
        let entries: Vec<CqEntry> =
            read_file_entries(disk, &single, pos_in_single(at), n as usize, shard_id).await?;
        debug_assert_eq!(file_pos(at), 0, "copied from the start of each file");
        let path = file_path(dir, topic, queue_id, at / FILE_ENTRIES);
        let mut file = AppendFile::open(disk, &path, 0).await?;
        let data: Vec<u8> = entries.iter().flat_map(|e| e.encode(shard_id)).collect();
        file.append(&data).await?;
        at += n;
    }
    Ok(first_local)
}
