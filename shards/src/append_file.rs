//! An append-only file written durably in whole blocks: each append rewrites the partial
//! last block together with the new bytes, then syncs. Used for consume-queue and index
//! files, which are persisted lazily in batches (one write + one sync per batch).

use crate::error::Result;
use crate::io::{align_down, align_up, Disk, DiskFile};
use std::path::Path;

/// Largest write of one append: a persist's consume-queue or index append can be megabytes
/// (a second of appends' entries), and its buffer comes from the shard's registered arena,
/// which also holds the group commit's (see the broker's SHARD_IO_MEMORY_BYTES).
pub const APPEND_WRITE_BYTES_MAX: usize = 256 << 10;

pub(crate) struct AppendFile<F> {
    file: F,
    /// Durable length.
    len: u64,
    /// Bytes of the partial last block, `[align_down(len), len)`.
    tail: Vec<u8>,
}

impl<F: DiskFile> AppendFile<F> {
    /// Opens `path` whose first `len` bytes are known durable, creating it (durably named)
    /// if missing.
    pub async fn open<D: Disk<File = F>>(disk: &D, path: &Path, len: u64) -> Result<Self> {
        let existed = disk.exists(path).await?;
        if !existed {
            if let Some(parent) = path.parent() {
                disk.create_dir_all(parent).await?;
            }
        }
        let file = disk.open(path, true).await?;
        if !existed {
            // The file and its freshly made parent directories must survive a crash.
            for dir in path.ancestors().skip(1).take(3) {
                disk.sync_dir(dir).await?;
            }
        }
        let block = align_down(len);
        let tail = file.read_at(block, (len - block) as usize).await?.to_vec();
        if tail.len() as u64 != len - block {
            return Err(crate::error::StoreError::Corrupt {
                file: path.display().to_string(),
                reason: format!("shorter than its checkpointed {len} bytes"),
            });
        }
        Ok(Self { file, len, tail })
    }

    /// Reads back the first `len` bytes.
    pub async fn read_prefix(&self, len: u64) -> Result<bytes::Bytes> {
        self.read_range(0, len).await
    }

    /// Reads back `len` bytes at `from`.
    pub async fn read_range(&self, from: u64, len: u64) -> Result<bytes::Bytes> {
        Ok(self.file.read_at(from, len as usize).await?)
    }

    /// Appends `data` durably; on error nothing counts as written and a retry rewrites it.
    /// Written in pieces of at most [`APPEND_WRITE_BYTES_MAX`], then synced once.
    pub async fn append(&mut self, data: &[u8]) -> Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        let (mut len, mut tail) = (self.len, self.tail.clone());
        for piece in data.chunks(APPEND_WRITE_BYTES_MAX) {
            tail = self.write_piece(len, &tail, piece).await?;
            len += piece.len() as u64;
        }
        self.file.sync().await?;
        self.len = len;
        self.tail = tail;
        Ok(())
    }

    /// Writes `piece` after the first `len` bytes, whose partial last block is `tail`, in
    /// whole blocks; returns the partial last block after it.
    async fn write_piece(&self, len: u64, tail: &[u8], piece: &[u8]) -> Result<Vec<u8>> {
        let block = align_down(len);
        let used = tail.len() + piece.len();
        let mut buf = self.file.alloc_buffer(align_up(used as u64) as usize);
        let out = buf.as_mut();
        out[..tail.len()].copy_from_slice(tail);
        out[tail.len()..used].copy_from_slice(piece);
        out[used..].fill(0);
        let new_block = align_down(len + piece.len() as u64);
        let new_tail = out[(new_block - block) as usize..used].to_vec();
        self.file.write_at(block, buf).await?;
        Ok(new_tail)
    }

    pub fn len(&self) -> u64 {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim_io::SimDisk;
    use futures_lite::future::block_on;

    #[test]
    fn appends_larger_than_one_write_land_whole_and_continue_after_a_reopen() {
        block_on(async {
            let disk = SimDisk::new(7, 16 << 20);
            let path = Path::new("/a/file");
            let mut file = AppendFile::open(&disk, path, 0).await.unwrap();
            // Not block-aligned, and over two pieces' worth, after an unaligned start.
            let first: Vec<u8> = (0..1000u32).map(|i| i as u8).collect();
            let big: Vec<u8> = (0..2 * APPEND_WRITE_BYTES_MAX as u32 + 777)
                .map(|i| (i % 251) as u8)
                .collect();
            file.append(&first).await.unwrap();
            file.append(&big).await.unwrap();
            let len = (first.len() + big.len()) as u64;
            assert_eq!(file.len(), len);
            let expected: Vec<u8> = first.iter().chain(&big).copied().collect();
            assert_eq!(file.read_prefix(len).await.unwrap()[..], expected[..]);
            drop(file);
            disk.crash();
            let mut file = AppendFile::open(&disk, path, len).await.unwrap();
            file.append(b"tail").await.unwrap();
            let all = file.read_prefix(len + 4).await.unwrap();
            assert_eq!(&all[..len as usize], &expected[..]);
            assert_eq!(&all[len as usize..], b"tail");
        });
    }
}
