//! The real disk and clock: glommio DMA files (O_DIRECT through io_uring) and glommio timers.
//! Must run inside a glommio executor. Truncation and renames go through the executor's side
//! ring ([`crate::dsync_ring`]), not glommio's blocking thread pool. Directory listing and
//! creation and `exists` use blocking std calls: metadata only, when a shard opens or creates
//! a queue or a small file is replaced, never per message.

use crate::dsync_ring::DsyncRing;
use crate::io::{Clock, Disk, DiskFile, DiskSpace};
use bytes::Bytes;
use glommio::io::{DmaBuffer, DmaFile, OpenOptions};
use std::cell::{Cell, RefCell};
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::rc::Rc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How a write is made durable on the real disk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durability {
    /// DMA write, then an fdatasync through io_uring: two dependent operations per group.
    #[default]
    Fdatasync,
    /// Files opened O_DSYNC: a DMA write is durable when it completes, one operation per
    /// group; `sync` only flushes what `allocate` changed.
    WriteThrough,
    /// Writes are `pwritev2(RWF_DSYNC)` through a small io_uring of the executor's own
    /// ([`crate::dsync_ring`]), durable when they complete; `sync` as for `WriteThrough`.
    RwfDsync,
}

/// The host's file system, reached through glommio.
#[derive(Clone, Copy, Debug, Default)]
pub struct RealDisk {
    pub durability: Durability,
}

/// An O_DIRECT file.
pub struct RealFile {
    file: DmaFile,
    /// Writes are durable on completion (`WriteThrough`, `RwfDsync`).
    write_through: bool,
    /// Set under `RwfDsync`: the ring the writes go through.
    dsync_ring: Option<Rc<DsyncRing>>,
    /// An allocation or truncation changed metadata that only an fdatasync makes durable.
    metadata_changed: Cell<bool>,
}

impl DiskFile for RealFile {
    type Buffer = DmaBuffer;

    fn alloc_buffer(&self, len: usize) -> DmaBuffer {
        self.file.alloc_dma_buffer(len)
    }

    async fn write_at(&self, pos: u64, buf: DmaBuffer) -> io::Result<()> {
        if let Some(ring) = &self.dsync_ring {
            return ring.write_at(self.file.as_raw_fd(), pos, buf).await;
        }
        let len = buf.len();
        let written = self.file.write_at(buf, pos).await?;
        if written != len {
            return Err(io::Error::new(io::ErrorKind::WriteZero, "short DMA write"));
        }
        Ok(())
    }

    async fn read_at(&self, pos: u64, len: usize) -> io::Result<Bytes> {
        if len == 0 {
            // glommio turns an empty read into a zero-sized DMA read the kernel refuses.
            return Ok(Bytes::new());
        }
        let read = self.file.read_at(pos, len).await?;
        Ok(Bytes::copy_from_slice(&read))
    }

    async fn sync(&self) -> io::Result<()> {
        if self.write_through && !self.metadata_changed.replace(false) {
            return Ok(());
        }
        Ok(self.file.fdatasync().await?)
    }

    async fn allocate(&self, len: u64) -> io::Result<()> {
        // Set the size now too, so later writes never change it: fdatasync then has no
        // inode size to journal.
        self.file.pre_allocate(len, false).await?;
        self.metadata_changed.set(true);
        Ok(())
    }

    async fn truncate(&self, len: u64) -> io::Result<()> {
        // Not glommio's DmaFile::truncate: that runs on its blocking thread pool.
        DsyncRing::get()?
            .ftruncate(self.file.as_raw_fd(), len)
            .await?;
        self.metadata_changed.set(true);
        Ok(())
    }

    async fn len(&self) -> io::Result<u64> {
        Ok(self.file.file_size().await?)
    }
}

thread_local! {
    /// Devices whose io_uring poll support glommio has probed correctly on this thread
    /// (glommio keeps that knowledge per thread, i.e. per executor).
    static PROBED_DEVICES: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}
const PROBE_FILE_NAME: &str = ".ringmq-iopoll-probe";

/// glommio decides once per device whether reads go to its poll ring, by reading the first
/// block of the first DMA file opened there. If that file is empty the read "succeeds" at
/// EOF, the device is taken as poll-capable, and every later read on it fails with
/// EOPNOTSUPP (seen on virtio disks). So before the first real open on a device, open a
/// one-block file there to make the probe meaningful. Only runs at file open, never per I/O.
async fn probe_device_once(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let device = std::fs::metadata(dir)?.dev();
    if PROBED_DEVICES.with(|d| d.borrow().contains(&device)) {
        return Ok(());
    }
    let probe = dir.join(PROBE_FILE_NAME);
    std::fs::write(&probe, [0u8; crate::io::BLOCK_BYTES])?;
    let opened = DmaFile::open(&probe).await;
    std::fs::remove_file(&probe)?;
    opened?.close().await?;
    PROBED_DEVICES.with(|d| d.borrow_mut().push(device));
    Ok(())
}

impl Disk for RealDisk {
    type File = RealFile;

    async fn open(&self, path: &Path, create: bool) -> io::Result<RealFile> {
        probe_device_once(path.parent().unwrap_or(Path::new("."))).await?;
        let flags = match self.durability {
            Durability::WriteThrough => libc::O_DSYNC,
            Durability::Fdatasync | Durability::RwfDsync => 0,
        };
        let dsync_ring = match self.durability {
            Durability::RwfDsync => Some(DsyncRing::get()?),
            Durability::Fdatasync | Durability::WriteThrough => None,
        };
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .custom_flags(flags)
            .dma_open(path)
            .await?;
        Ok(RealFile {
            file,
            write_through: self.durability != Durability::Fdatasync,
            dsync_ring,
            metadata_changed: Cell::new(false),
        })
    }

    async fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        std::fs::create_dir_all(path)
    }

    async fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        std::fs::read_dir(path)?
            .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect()
    }

    async fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        // Not glommio::io::rename: that runs on its blocking thread pool.
        DsyncRing::get()?.rename(from, to).await
    }

    async fn remove(&self, path: &Path) -> io::Result<()> {
        // Not glommio::io::remove: that runs on its blocking thread pool.
        DsyncRing::get()?.remove(path).await
    }

    async fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        // glommio's Directory::open fails with EBADF on relative paths.
        let dir = glommio::io::Directory::open(std::path::absolute(dir)?).await?;
        dir.sync().await?;
        Ok(dir.close().await?)
    }

    async fn exists(&self, path: &Path) -> io::Result<bool> {
        path.try_exists()
    }

    async fn space(&self, path: &Path) -> io::Result<DiskSpace> {
        disk_space(path)
    }
}

/// statvfs of the file system holding `path`: one metadata syscall, made by retention once per
/// check interval and by the broker's runtime info, never per message.
pub fn disk_space(path: &Path) -> io::Result<DiskSpace> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path holds a NUL byte"))?;
    // SAFETY: statvfs fills the zeroed struct it is given; the path is NUL-terminated.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(path.as_ptr(), &mut stat) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let block = stat.f_frsize as u64;
    Ok(DiskSpace {
        total: stat.f_blocks as u64 * block,
        free: stat.f_bfree as u64 * block,
        usable: stat.f_bavail as u64 * block,
    })
}

/// System time and glommio timers.
#[derive(Clone, Copy, Debug, Default)]
pub struct RealClock;

impl Clock for RealClock {
    fn now_ms(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64)
    }

    async fn sleep(&self, duration: Duration) {
        glommio::timer::sleep(duration).await;
    }
}
