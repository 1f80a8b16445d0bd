//! The seams: the disk and the clock, reached only through these traits, so the engine runs
//! the same code on the real disk (glommio DMA files, [`crate::real_io`]) and on the
//! simulated, fault-injecting one ([`crate::sim_io`]).
//!
//! Contract of a [`DiskFile`]: `write_at` positions and lengths are multiples of
//! [`BLOCK_BYTES`] (O_DIRECT); a write is durable only after a later `sync` returns Ok; until
//! then a crash may lose it or tear it (keep any prefix of it). A length change by `truncate`
//! likewise: a crash before the `sync` may keep it or not. Namespace changes (create, rename,
//! remove) are durable only after `sync_dir` of the directory.

use bytes::Bytes;
use std::io;
use std::path::Path;
use std::time::Duration;

/// Alignment and size unit of every write: O_DIRECT needs the logical block size, and 4 KiB
/// covers every device this runs on (glommio reports 512 or 4096).
pub const BLOCK_BYTES: usize = 4096;

/// Rounds `v` down to a block boundary.
pub fn align_down(v: u64) -> u64 {
    v & !(BLOCK_BYTES as u64 - 1)
}

/// Rounds `v` up to a block boundary.
pub fn align_up(v: u64) -> u64 {
    align_down(v + BLOCK_BYTES as u64 - 1)
}

/// One open file.
#[allow(async_fn_in_trait)] // Futures stay on the shard's thread; no Send bound wanted.
#[allow(clippy::len_without_is_empty)] // A file's emptiness is never asked.
pub trait DiskFile {
    /// Memory a write is made from (aligned, registered with io_uring on the real disk), so
    /// the engine gathers pending bytes straight into it: one copy per byte.
    type Buffer: AsRef<[u8]> + AsMut<[u8]>;
    /// A buffer of `len` bytes (a multiple of [`BLOCK_BYTES`]) with unspecified contents:
    /// the writer fills all of it, padding included, so no stale memory reaches the disk.
    fn alloc_buffer(&self, len: usize) -> Self::Buffer;
    /// Writes a whole buffer at a block-aligned position.
    async fn write_at(&self, pos: u64, buf: Self::Buffer) -> io::Result<()>;
    /// Reads up to `len` bytes at `pos` (any alignment); shorter at end of file.
    async fn read_at(&self, pos: u64, len: usize) -> io::Result<Bytes>;
    /// Makes every completed write durable (fdatasync).
    async fn sync(&self) -> io::Result<()>;
    /// Reserves space for `len` bytes so later writes below it cannot fail with ENOSPC.
    async fn allocate(&self, len: u64) -> io::Result<()>;
    /// Sets the length to `len` (any value), cutting the file or extending it with zeros:
    /// how a file written in whole blocks gets its exact length. Durable after a later `sync`.
    async fn truncate(&self, len: u64) -> io::Result<()>;
    /// Current file length.
    async fn len(&self) -> io::Result<u64>;
}

/// How full the file system holding a path is, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiskSpace {
    pub total: u64,
    /// Free blocks, including those reserved for the superuser.
    pub free: u64,
    /// Free blocks an unprivileged writer may use.
    pub usable: u64,
}

impl DiskSpace {
    /// Apache's `UtilAll.getDiskPartitionSpaceUsedPercent`: the used fraction of what is
    /// writable (used + usable), rounded up to a hundredth; -1 for a partition of no size.
    pub fn used_ratio(&self) -> f64 {
        if self.total == 0 {
            return -1.0;
        }
        let used = self.total - self.free.min(self.total);
        let entire = (used + self.usable).max(1);
        let percent = (used * 100).div_ceil(entire);
        percent as f64 / 100.0
    }
}

/// A file system holding one shard's directory tree.
#[allow(async_fn_in_trait)]
pub trait Disk: Clone {
    type File: DiskFile;
    /// Opens a file for reading and writing, creating it if `create` is set.
    async fn open(&self, path: &Path, create: bool) -> io::Result<Self::File>;
    async fn create_dir_all(&self, path: &Path) -> io::Result<()>;
    /// Names of the entries of a directory, unsorted.
    async fn list_dir(&self, path: &Path) -> io::Result<Vec<String>>;
    async fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    async fn remove(&self, path: &Path) -> io::Result<()>;
    /// Makes the namespace changes in `dir` durable.
    async fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Whether `path` exists.
    async fn exists(&self, path: &Path) -> io::Result<bool>;
    /// How full the file system holding `path` is (retention by disk usage reads it).
    async fn space(&self, path: &Path) -> io::Result<DiskSpace>;
}

/// Wall-clock time and timers.
#[allow(async_fn_in_trait)]
pub trait Clock {
    /// Milliseconds since the Unix epoch (the store timestamp of records).
    fn now_ms(&self) -> i64;
    /// Waits for `duration`.
    async fn sleep(&self, duration: Duration);
}
