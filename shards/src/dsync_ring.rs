//! A second, small io_uring per executor, for the file operations glommio 0.9 either lacks or
//! hands to its blocking thread pool (whose completion comes back as a cross-thread wake-up,
//! the path on which glommio 0.9 can lose one): durable writes as `pwritev2(RWF_DSYNC)` (one
//! operation per group instead of glommio's write then fdatasync; glommio exposes no per-write
//! flags), `ftruncate`, `renameat` and `unlinkat`. Named for its first use, the RWF_DSYNC
//! writes.
//!
//! glommio cannot wait on another ring's completions directly, so each operation is
//! hard-linked to a one-byte send on a socket pair whose other end a reaper task reads through
//! glommio: the byte arrives once the operation has completed (successfully or not), the
//! reaper wakes, drains the ring's completion queue and notifies the waiters. What the kernel
//! reads for an operation (a write's buffer, a rename's paths) stays in the in-flight table
//! until the kernel is done with it, even if its future is dropped.
//!
//! A kernel without IORING_OP_FTRUNCATE (before 6.9) or IORING_OP_RENAMEAT / UNLINKAT (before
//! 5.11) gets the plain syscall on the executor's thread instead: they change metadata only and wait for
//! no data I/O (what waits for the disk is the `sync` that follows them).

use crate::event::Event;
use futures_lite::AsyncReadExt;
use glommio::io::DmaBuffer;
use io_uring::{opcode, squeue, types, IoUring};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::rc::Rc;

/// Submission-queue entries of the ring. A shard has at most a few operations in flight (the
/// group write and its zero-ahead companion, metadata file replaces); each takes two entries.
const RING_ENTRIES: u32 = 32;
/// Operations in flight at once; more wait for a slot, so the completion queue (twice the
/// entries) can never overflow.
const IN_FLIGHT_MAX: usize = (RING_ENTRIES / 2) as usize;
/// `user_data` of the hard-linked wake-up sends (operations use their sequence number).
const POKE: u64 = u64::MAX;
/// The byte each completed operation sends to the reaper.
static POKE_BYTE: [u8; 1] = [1];

/// What the kernel reads while an operation runs: kept alive until its completion is reaped,
/// never read here.
#[allow(dead_code)]
enum KernelReads {
    Buffer(DmaBuffer),
    Paths(CString, CString),
    Path(CString),
    Nothing,
}

struct InFlight {
    _reads: KernelReads,
    /// Its future was dropped: the reaper frees the slot on completion.
    abandoned: bool,
    result: Option<i32>,
}

/// One executor's side ring.
pub(crate) struct DsyncRing {
    ring: RefCell<IoUring>,
    /// Where the ring sends its wake-up bytes; the reaper owns the other end.
    poke_tx: OwnedFd,
    next_id: Cell<u64>,
    /// Writes submitted whose completion is not reaped yet.
    unreaped: Cell<usize>,
    in_flight: RefCell<HashMap<u64, InFlight>>,
    /// Notified after every reap (results arrived, slots freed).
    reaped: Event,
    executor_id: usize,
    /// The kernel runs these through io_uring (else the plain syscall; see the module doc).
    ftruncate_supported: bool,
    renameat_supported: bool,
    unlinkat_supported: bool,
}

thread_local! {
    /// The ring of the executor running on this thread (replaced when a new executor runs
    /// here: the old one's reaper task died with it).
    static RING: RefCell<Option<Rc<DsyncRing>>> = const { RefCell::new(None) };
}

impl DsyncRing {
    /// This executor's ring, created (with its reaper task) on first use.
    pub(crate) fn get() -> io::Result<Rc<DsyncRing>> {
        let executor_id = glommio::executor().id();
        if let Some(ring) = RING.with(|r| r.borrow().clone()) {
            if ring.executor_id == executor_id {
                return Ok(ring);
            }
        }
        let mut fds = [0 as RawFd; 2];
        // SAFETY: socketpair fills two fresh descriptors we then own.
        let rc = unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: both descriptors were just created and are owned by nobody else; only
        // glommio's end is made non-blocking (the ring's sends may then always wait).
        let (tx, rx) = unsafe {
            libc::fcntl(fds[1], libc::F_SETFL, libc::O_NONBLOCK);
            (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1]))
        };
        let uring = IoUring::new(RING_ENTRIES)?;
        let mut probe = io_uring::Probe::new();
        let probed = uring.submitter().register_probe(&mut probe).is_ok();
        let ring = Rc::new(DsyncRing {
            ftruncate_supported: probed && probe.is_supported(opcode::Ftruncate::CODE),
            renameat_supported: probed && probe.is_supported(opcode::RenameAt::CODE),
            unlinkat_supported: probed && probe.is_supported(opcode::UnlinkAt::CODE),
            ring: RefCell::new(uring),
            poke_tx: tx,
            next_id: Cell::new(0),
            unreaped: Cell::new(0),
            in_flight: RefCell::new(HashMap::new()),
            reaped: Event::default(),
            executor_id,
        });
        // SAFETY: `rx` is a connected stream socket handed over to glommio for good.
        let pokes = unsafe {
            glommio::net::UnixStream::from_raw_fd(std::os::fd::IntoRawFd::into_raw_fd(rx))
        };
        glommio::spawn_local(reap_forever(Rc::downgrade(&ring), pokes)).detach();
        RING.with(|r| *r.borrow_mut() = Some(ring.clone()));
        Ok(ring)
    }

    /// Writes all of `buf` at `pos` of `fd` with RWF_DSYNC: durable when this returns Ok.
    pub(crate) async fn write_at(&self, fd: RawFd, pos: u64, buf: DmaBuffer) -> io::Result<()> {
        let len = buf.len();
        let write = opcode::Write::new(types::Fd(fd), buf.as_ptr(), len as u32)
            .offset(pos)
            .rw_flags(libc::RWF_DSYNC)
            .build();
        let written = self.run(write, KernelReads::Buffer(buf)).await?;
        if written as usize != len {
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                "short RWF_DSYNC write",
            ));
        }
        Ok(())
    }

    /// `ftruncate(fd, len)`.
    pub(crate) async fn ftruncate(&self, fd: RawFd, len: u64) -> io::Result<()> {
        if !self.ftruncate_supported {
            let len = libc::off_t::try_from(len)
                .map_err(|_| io::Error::from_raw_os_error(libc::EFBIG))?;
            // SAFETY: plain syscall on a descriptor the caller keeps open.
            if unsafe { libc::ftruncate(fd, len) } != 0 {
                return Err(io::Error::last_os_error());
            }
            return Ok(());
        }
        let truncate = opcode::Ftruncate::new(types::Fd(fd), len).build();
        self.run(truncate, KernelReads::Nothing).await.map(drop)
    }

    /// `rename(from, to)`.
    pub(crate) async fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        if !self.renameat_supported {
            return std::fs::rename(from, to);
        }
        let c_path = |path: &Path| {
            CString::new(path.as_os_str().as_bytes())
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path holds a NUL byte"))
        };
        let (from, to) = (c_path(from)?, c_path(to)?);
        let cwd = types::Fd(libc::AT_FDCWD);
        let rename = opcode::RenameAt::new(cwd, from.as_ptr(), cwd, to.as_ptr()).build();
        self.run(rename, KernelReads::Paths(from, to))
            .await
            .map(drop)
    }

    /// `unlink(path)`: not glommio's remove, which runs on its blocking thread pool and comes
    /// back by a cross-thread wake-up.
    pub(crate) async fn remove(&self, path: &Path) -> io::Result<()> {
        if !self.unlinkat_supported {
            return std::fs::remove_file(path);
        }
        let path = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path holds a NUL byte"))?;
        let cwd = types::Fd(libc::AT_FDCWD);
        let unlink = opcode::UnlinkAt::new(cwd, path.as_ptr()).build();
        self.run(unlink, KernelReads::Path(path)).await.map(drop)
    }

    /// Submits `op` (whose kernel-side inputs `reads` holds) and waits for its result.
    async fn run(&self, op: squeue::Entry, reads: KernelReads) -> io::Result<i32> {
        loop {
            let seen = self.reaped.version();
            if self.unreaped.get() < IN_FLIGHT_MAX {
                break;
            }
            self.reaped.changed(seen).await;
        }
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        let op = op
            .user_data(id)
            // The send runs after the operation even when the operation fails.
            .flags(squeue::Flags::IO_HARDLINK);
        let poke = opcode::Send::new(types::Fd(self.poke_tx.as_raw_fd()), POKE_BYTE.as_ptr(), 1)
            .build()
            .user_data(POKE);
        {
            let mut ring = self.ring.borrow_mut();
            // SAFETY: what the kernel reads lives in `in_flight` until the operation's
            // completion is reaped, and POKE_BYTE is static; IN_FLIGHT_MAX keeps the queue
            // from filling.
            unsafe {
                let mut sq = ring.submission();
                sq.push(&op)
                    .and_then(|_| sq.push(&poke))
                    .map_err(|_| io::Error::other("side ring full"))?;
            }
            self.in_flight.borrow_mut().insert(
                id,
                InFlight {
                    _reads: reads,
                    abandoned: false,
                    result: None,
                },
            );
            self.unreaped.set(self.unreaped.get() + 1);
            // Queued entries stay queued when io_uring_enter fails, and go to the kernel with
            // the next submit: so retry an interrupted one, and on any other error leave the
            // slot to the reaper (what the kernel reads must outlive an operation that may
            // still run).
            let submitted = loop {
                match ring.submit() {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    other => break other,
                }
            };
            if let Err(e) = submitted {
                drop(ring);
                self.abandon(id);
                return Err(e);
            }
        }
        // If this future is dropped, the reaper frees the slot when the operation completes.
        let abandon = crate::commit_log::OnDrop(Some(|| self.abandon(id)));
        let result = loop {
            let seen = self.reaped.version();
            let done = self.in_flight.borrow().get(&id).and_then(|w| w.result);
            if let Some(result) = done {
                break result;
            }
            self.reaped.changed(seen).await;
        };
        std::mem::forget(abandon);
        self.in_flight.borrow_mut().remove(&id);
        if result < 0 {
            return Err(io::Error::from_raw_os_error(-result));
        }
        Ok(result)
    }

    /// A dropped waiter's slot: freed now if complete, else by the reaper.
    fn abandon(&self, id: u64) {
        let mut in_flight = self.in_flight.borrow_mut();
        if in_flight.get(&id).is_some_and(|w| w.result.is_some()) {
            in_flight.remove(&id);
        } else if let Some(w) = in_flight.get_mut(&id) {
            w.abandoned = true;
        }
    }

    /// Moves completions into the in-flight table and wakes the waiters; returns how many
    /// operation completions it found.
    fn reap(&self) -> u64 {
        let mut done = 0;
        let mut ring = self.ring.borrow_mut();
        let mut in_flight = self.in_flight.borrow_mut();
        for cqe in ring.completion() {
            if cqe.user_data() == POKE {
                continue;
            }
            done += 1;
            let id = cqe.user_data();
            let abandoned = in_flight.get(&id).is_some_and(|w| w.abandoned);
            if abandoned {
                in_flight.remove(&id);
            } else if let Some(w) = in_flight.get_mut(&id) {
                w.result = Some(cqe.result());
            }
        }
        drop((ring, in_flight));
        self.unreaped.set(self.unreaped.get() - done as usize);
        self.reaped.notify();
        done
    }
}

/// Reads wake-up bytes and reaps, until the ring is gone or the socket fails. Each byte is
/// sent after one operation completed, so once `n` bytes are read, `n` completions are
/// due; should one not be visible yet, the reaper yields and reaps again until it is.
async fn reap_forever(ring: std::rc::Weak<DsyncRing>, mut pokes: glommio::net::UnixStream) {
    let mut bytes = [0u8; 256];
    let (mut poked, mut reaped) = (0u64, 0u64);
    loop {
        match pokes.read(&mut bytes).await {
            Ok(n) if n > 0 => poked += n as u64,
            _ => return,
        }
        loop {
            match ring.upgrade() {
                Some(ring) => reaped += ring.reap(),
                None => return,
            }
            if reaped >= poked {
                break;
            }
            futures_lite::future::yield_now().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glommio::io::DmaFile;

    fn run<T: Send + 'static, F: std::future::Future<Output = T> + 'static>(
        f: impl FnOnce() -> F + Send + 'static,
    ) -> T {
        glommio::LocalExecutorBuilder::default()
            .spawn(f)
            .unwrap()
            .join()
            .unwrap()
    }

    #[test]
    fn writes_land_and_a_failed_write_is_an_error_not_a_hang() {
        let dir = std::env::temp_dir().join(format!("ringmq-dsync-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        let read_only = dir.join("ro");
        std::fs::write(&read_only, [0u8; 4096]).unwrap();
        let (p, ro) = (path.clone(), read_only.clone());
        run(move || async move {
            let ring = DsyncRing::get().unwrap();
            assert!(
                Rc::ptr_eq(&ring, &DsyncRing::get().unwrap()),
                "one ring per executor"
            );
            let file = DmaFile::create(&p).await.unwrap();
            for (i, byte) in [7u8, 9].into_iter().enumerate() {
                let mut buf = file.alloc_dma_buffer(4096);
                buf.as_bytes_mut().fill(byte);
                ring.write_at(file.as_raw_fd(), i as u64 * 4096, buf)
                    .await
                    .unwrap();
            }
            // A descriptor open for reading only: the kernel refuses the write (EBADF).
            let ro = std::fs::File::open(&ro).unwrap();
            let buf = file.alloc_dma_buffer(4096);
            let err = ring.write_at(ro.as_raw_fd(), 0, buf).await.unwrap_err();
            assert_eq!(err.raw_os_error(), Some(libc::EBADF));
            // A write whose future is dropped before completion does not wedge the ring.
            let buf = file.alloc_dma_buffer(4096);
            let dropped = ring.write_at(file.as_raw_fd(), 2 * 4096, buf);
            futures_lite::future::poll_once(Box::pin(dropped)).await;
            let mut buf = file.alloc_dma_buffer(4096);
            buf.as_bytes_mut().fill(3);
            ring.write_at(file.as_raw_fd(), 3 * 4096, buf)
                .await
                .unwrap();
            file.close().await.unwrap();
        });
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes.len(), 4 * 4096);
        assert!(bytes[..4096].iter().all(|b| *b == 7));
        assert!(bytes[4096..8192].iter().all(|b| *b == 9));
        assert!(bytes[3 * 4096..].iter().all(|b| *b == 3));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn truncates_renames_and_removes_through_the_ring() {
        let dir = std::env::temp_dir().join(format!("ringmq-side-ring-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (from, to) = (dir.join("from"), dir.join("to"));
        std::fs::write(&from, [5u8; 3 * 4096]).unwrap();
        std::fs::write(&to, b"old").unwrap();
        let (f, t) = (from.clone(), to.clone());
        let supported = run(move || async move {
            let ring = DsyncRing::get().unwrap();
            let mut open = glommio::io::OpenOptions::new();
            let file = open.read(true).write(true).dma_open(&f).await.unwrap();
            ring.ftruncate(file.as_raw_fd(), 5000).await.unwrap();
            assert_eq!(file.file_size().await.unwrap(), 5000);
            file.close().await.unwrap();
            ring.rename(&f, &t).await.unwrap();
            let err = ring.rename(&f, &t).await.unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::NotFound);
            let kept = std::fs::read(&t).unwrap();
            ring.remove(&t).await.unwrap();
            let err = ring.remove(&t).await.unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::NotFound);
            let supported = (
                ring.ftruncate_supported,
                ring.renameat_supported,
                ring.unlinkat_supported,
            );
            (supported, kept)
        });
        let (supported, kept) = supported;
        assert!(!from.exists() && !to.exists());
        assert_eq!(kept, [5u8; 5000]);
        // All run through io_uring on any kernel from 6.9 on (the module doc's fallback else).
        eprintln!("io_uring ftruncate, renameat, unlinkat: {supported:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
