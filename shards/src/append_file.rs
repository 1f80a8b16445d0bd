//! An append-only file written durably in whole blocks: each append rewrites the partial
//! last block together with the new bytes, then syncs. Used for consume-queue and index
//! files, which are persisted lazily in batches (one write + one sync per batch).

use crate::error::Result;
use crate::io::{align_down, align_up, Disk, DiskFile};
use std::path::Path;

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
    pub async fn append(&mut self, data: &[u8]) -> Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        let block = align_down(self.len);
        let used = self.tail.len() + data.len();
        let mut buf = self.file.alloc_buffer(align_up(used as u64) as usize);
        let out = buf.as_mut();
        out[..self.tail.len()].copy_from_slice(&self.tail);
        out[self.tail.len()..used].copy_from_slice(data);
        out[used..].fill(0);
        let new_len = self.len + data.len() as u64;
        let new_block = align_down(new_len);
        let new_tail = out[(new_block - block) as usize..used].to_vec();
        self.file.write_at(block, buf).await?;
        self.file.sync().await?;
        self.len = new_len;
        self.tail = new_tail;
        Ok(())
    }

    pub fn len(&self) -> u64 {
        self.len
    }
}
