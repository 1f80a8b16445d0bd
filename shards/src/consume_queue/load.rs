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
        if !checkpoint.single_queue_files {
            let queue = queues.get_mut(key.0, key.1).expect("inserted above");
            queue.journaled = queue.checkpointed();
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::Checkpoint;
    use crate::meta_file::{read_meta, write_meta};
    use crate::record::{format_properties, Message};
    use crate::sim_io::{SimClock, SimDisk};
    use crate::{QueueReadRequest, Shard, ShardConfig};
    use futures_lite::future::block_on;

    const DIR: &str = "/shard";

    async fn open(disk: &SimDisk) -> Shard<SimDisk, SimClock> {
        let mut config = ShardConfig::new(DIR, 1, "127.0.0.1:10911".parse().unwrap());
        config.log.segment_bytes = 4 << 20;
        config.log.hot_tail_bytes_max = 4 << 20;
        Shard::open(config, disk.clone(), SimClock::new(1_000))
            .await
            .unwrap()
    }

    async fn body_at(shard: &Shard<SimDisk, SimClock>, offset: u64) -> bytes::Bytes {
        let request = QueueReadRequest {
            topic: "T",
            queue_id: 0,
            offset: offset as i64,
            max_count: 1,
            max_bytes: usize::MAX,
            tag_filter: None,
            record_filter: None,
        };
        let read = shard.read_queue(request).await.unwrap();
        crate::record::RecordView::parse(read.records[0].clone())
            .unwrap()
            .body()
    }

    /// A store as ringmq wrote it before paged files (checkpoint version 3, every entry of a
    /// queue in one file) opens with every entry readable, in the files that hold them now.
    #[test]
    fn a_store_of_single_queue_files_is_split_into_paged_files() {
        block_on(async {
            let disk = SimDisk::new(3, 256 << 20);
            let shard = open(&disk).await;
            let n = FILE_ENTRIES + 50;
            let properties = format_properties([("TAGS", "t")]);
            for chunk in (0..n).collect::<Vec<_>>().chunks(2048) {
                let batch: Vec<Message> = (chunk.iter())
                    .map(|i| Message::for_test("T", format!("m{i}").into(), properties.clone()))
                    .collect();
                shard.append_batch(&batch).await.unwrap();
            }
            shard.flush().await.unwrap();
            shard.persist().await.unwrap();
            drop(shard);
            // Into the old shape: the second file's entries after the first's, in one file.
            let dir = Path::new(DIR);
            let (first, second) = (file_path(dir, "T", 0, 0), file_path(dir, "T", 0, 1));
            let tail = disk.open(&second, false).await.unwrap();
            let tail = crate::DiskFile::read_at(&tail, 0, 50 * CQ_ENTRY_BYTES).await;
            let first_len = FILE_ENTRIES * CQ_ENTRY_BYTES as u64;
            let mut single = AppendFile::open(&disk, &first, first_len).await.unwrap();
            single.append(&tail.unwrap()).await.unwrap();
            disk.remove(&second).await.unwrap();
            let (seq, payload) = read_meta(&disk, &dir.join("checkpoint"))
                .await
                .unwrap()
                .unwrap();
            let mut checkpoint = Checkpoint::decode(&payload).unwrap();
            checkpoint.queues =
                crate::consume_queue::journal::load(&disk, dir, checkpoint.queue_journal)
                    .await
                    .unwrap();
            assert_eq!(checkpoint.queues.len(), 1);
            let v3 = checkpoint.encode_as(3);
            write_meta(&disk, &dir.join("checkpoint"), seq + 1, &v3)
                .await
                .unwrap();

            let shard = open(&disk).await;
            assert_eq!(shard.max_offset("T", 0), n as i64);
            assert!(disk.exists(&second).await.unwrap(), "split out again");
            assert_eq!(
                &body_at(&shard, n - 1).await[..],
                format!("m{}", n - 1).as_bytes()
            );
            assert_eq!(&body_at(&shard, 7).await[..], b"m7");
            let (_, payload) = read_meta(&disk, &dir.join("checkpoint"))
                .await
                .unwrap()
                .unwrap();
            let checkpoint = Checkpoint::decode(&payload).unwrap();
            assert!(!checkpoint.single_queue_files, "named by a new checkpoint");
            assert!(
                checkpoint.queue_journal.bytes > 0,
                "its ranges in the journal"
            );
        });
    }
}
