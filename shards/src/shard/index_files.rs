//! The key index's files at start: the sealed segments' headers, the unsealed segments'
//! append files the checkpoint names, and the files of keys a store made before hashed
//! entries holds (see `key_index`).

use super::remove_if_there;
use crate::append_file::AppendFile;
use crate::checkpoint::IndexFiles;
use crate::error::Result;
use crate::io::Disk;
use crate::key_index::{
    index_file_path, keyed_index_file_path, parse_sealed_name, IndexFile, KeyIndex, SealedIndex,
    LEGACY_INDEX_FILE,
};
use crate::offset::parse_segment_file_name;
use std::path::{Path, PathBuf};

/// Loads what the checkpoint names of the key index into `index`. Returns the files of keys
/// whose entries are now pending: the caller removes them once a persist has rewritten those
/// entries as `.hits` files (and removes nothing else).
pub(super) async fn load<D: Disk>(
    disk: &D,
    dir: &Path,
    index: &mut KeyIndex<D::File>,
    files: &IndexFiles,
) -> Result<Vec<PathBuf>> {
    let keyed = load_sealed(disk, dir, index).await?;
    match files {
        IndexFiles::Legacy(bytes) => {
            load_keyed(disk, &dir.join(LEGACY_INDEX_FILE), *bytes, index).await?;
        }
        IndexFiles::KeyedPerSegment(files) => {
            for &(start, bytes) in files {
                if !index.is_sealed(start) {
                    load_keyed(disk, &keyed_index_file_path(dir, start), bytes, index).await?;
                }
            }
        }
        IndexFiles::PerSegment(files) => {
            for &(start, bytes) in files {
                let path = index_file_path(dir, start);
                if index.is_sealed(start) {
                    // Sealed after this checkpoint; its append file may not be gone yet.
                    remove_if_there(disk, &path).await?;
                    continue;
                }
                let file = AppendFile::open(disk, &path, bytes).await?;
                index.load(&file.read_prefix(bytes).await?)?;
                index.files.insert(start, IndexFile { bytes, file: None });
            }
            // Files of keys a crash left after the checkpoint that replaced them.
            for path in &keyed {
                remove_if_there(disk, path).await?;
            }
            return Ok(Vec::new());
        }
    }
    Ok(keyed)
}

/// The entries of a file of keys, as pending.
async fn load_keyed<D: Disk>(
    disk: &D,
    path: &Path,
    bytes: u64,
    index: &mut KeyIndex<D::File>,
) -> Result<()> {
    let file = AppendFile::open(disk, path, bytes).await?;
    index.load_keyed(&file.read_prefix(bytes).await?)
}

/// Opens every sealed index (headers only) and removes the half-written copy a crash during
/// sealing may have left. Returns the files of keys in the directory.
async fn load_sealed<D: Disk>(
    disk: &D,
    dir: &Path,
    index: &mut KeyIndex<D::File>,
) -> Result<Vec<PathBuf>> {
    let index_dir = dir.join("index");
    let mut keyed = Vec::new();
    for name in disk.list_dir(&index_dir).await? {
        let path = index_dir.join(&name);
        if let Some(start) = parse_sealed_name(&name) {
            let sealed = SealedIndex::open(disk, &path, start).await?;
            index.add_sealed(start, sealed);
        } else if name.ends_with(".sealed.tmp") {
            disk.remove(&path).await?;
        } else if parse_segment_file_name(&name).is_some() || path == dir.join(LEGACY_INDEX_FILE) {
            keyed.push(path);
        }
    }
    Ok(keyed)
}

#[cfg(test)]
mod tests {
    use crate::checkpoint::Checkpoint;
    use crate::meta_file::{read_meta, write_meta};
    use crate::record::{format_properties, Message};
    use crate::sim_io::{SimClock, SimDisk};
    use crate::{Disk, DiskFile, KeyQuery, Shard, ShardConfig};
    use futures_lite::future::block_on;
    use std::path::Path;

    const DIR: &str = "/shard";

    async fn open(disk: &SimDisk, clock: &SimClock) -> Shard<SimDisk, SimClock> {
        let mut config = ShardConfig::new(Path::new(DIR), 1, "127.0.0.1:10911".parse().unwrap());
        config.log.segment_bytes = 64 << 10;
        config.log.hot_tail_bytes_max = 64 << 10;
        config.log.group_commit_bytes_max = 16 << 10;
        Shard::open(config, disk.clone(), clock.clone())
            .await
            .unwrap()
    }

    fn message(i: usize) -> Message {
        let keys = format!("k{i} all");
        let properties = format_properties([("KEYS", keys.as_str())]);
        Message::for_test("T", bytes::Bytes::from(format!("body-{i}")), properties)
    }

    async fn found(shard: &Shard<SimDisk, SimClock>, key: &str) -> usize {
        let query = KeyQuery {
            topic: "T",
            key,
            begin_ms: 0,
            end_ms: i64::MAX,
            max: 64,
        };
        shard.query_by_key(query).await.unwrap().len()
    }

    /// A store as ringmq wrote it before hashed entries (checkpoint version 2, its segment's
    /// index a file of keys) opens with every key found, and its first persist replaces the
    /// file of keys with a `.hits` file.
    #[test]
    fn a_store_with_index_files_of_keys_is_read_and_rewritten() {
        block_on(async {
            let disk = SimDisk::new(5, 64 << 20);
            let clock = SimClock::new(1_000);
            let shard = open(&disk, &clock).await;
            let mut keyed = Vec::new();
            for i in 0..10 {
                let appended = shard.append(&message(i)).await.unwrap();
                let local = appended.physical_offset as u64 & ((1 << 48) - 1);
                let ms = crate::Clock::now_ms(&clock);
                for key in [format!("T#k{i}"), "T#all".to_owned()] {
                    keyed.extend_from_slice(&(key.len() as u16).to_be_bytes());
                    keyed.extend_from_slice(key.as_bytes());
                    keyed.extend_from_slice(&local.to_be_bytes());
                    keyed.extend_from_slice(&ms.to_be_bytes());
                }
            }
            shard.flush().await.unwrap();
            shard.persist().await.unwrap();
            drop(shard);
            // Rewrite the store into the old shape: a file of keys, a version 2 checkpoint.
            let dir = Path::new(DIR);
            let hits = dir.join("index/00000000000000000000.hits");
            let old = dir.join("index/00000000000000000000");
            disk.remove(&hits).await.unwrap();
            let file = disk.open(&old, true).await.unwrap();
            let mut buf = file.alloc_buffer(crate::io::align_up(keyed.len() as u64) as usize);
            let bytes: &mut [u8] = buf.as_mut();
            bytes.fill(0);
            bytes[..keyed.len()].copy_from_slice(&keyed);
            file.write_at(0, buf).await.unwrap();
            file.truncate(keyed.len() as u64).await.unwrap();
            file.sync().await.unwrap();
            let (seq, payload) = read_meta(&disk, &dir.join("checkpoint"))
                .await
                .unwrap()
                .unwrap();
            let mut checkpoint = Checkpoint::decode(&payload).unwrap();
            checkpoint.queues =
                crate::consume_queue::journal::load(&disk, dir, checkpoint.queue_journal)
                    .await
                    .unwrap();
            checkpoint.index =
                crate::checkpoint::IndexFiles::PerSegment(vec![(0, keyed.len() as u64)]);
            let v2 = checkpoint.encode_as(2);
            write_meta(&disk, &dir.join("checkpoint"), seq + 1, &v2)
                .await
                .unwrap();

            let shard = open(&disk, &clock).await;
            assert_eq!(found(&shard, "all").await, 10);
            assert_eq!(found(&shard, "k7").await, 1);
            shard.persist().await.unwrap();
            assert!(
                !disk.exists(&old).await.unwrap(),
                "the file of keys is gone"
            );
            assert!(
                disk.exists(&hits).await.unwrap(),
                "its hits are in a .hits file"
            );
            drop(shard);
            disk.crash();
            let shard = open(&disk, &clock).await;
            assert_eq!(found(&shard, "all").await, 10);
            assert_eq!(found(&shard, "k3").await, 1);
        });
    }
}
