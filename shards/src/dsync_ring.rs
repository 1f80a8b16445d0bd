//! Durable writes as `pwritev2(RWF_DSYNC)` through a second, small io_uring per executor:
//! one operation per group instead of glommio's write then fdatasync, on an ordinary file
//! descriptor (glommio exposes no per-write flags).
//!
//! glommio cannot wait on another ring's completions directly, so each write is hard-linked
//! to a one-byte send on a socket pair whose other end a reaper task reads through glommio:
//! the byte arrives once the write has completed (successfully or not), the reaper wakes,
//! drains the ring's completion queue and notifies the writers. A write's buffer stays in
//! the in-flight table until the kernel is done with it, even if its future is dropped.

use crate::event::Event;
use futures_lite::AsyncReadExt;
use glommio::io::DmaBuffer;
use io_uring::{opcode, squeue, types, IoUring};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::rc::Rc;

/// Submission-queue entries of the ring. A shard has at most a few writes in flight (the
/// group write and its zero-ahead companion, metadata files); each takes two entries.
const RING_ENTRIES: u32 = 32;
/// Writes in flight at once; more wait for a slot, so the completion queue (twice the
/// entries) can never overflow.
const IN_FLIGHT_MAX: usize = (RING_ENTRIES / 2) as usize;
/// `user_data` of the hard-linked wake-up sends (writes use their sequence number).
const POKE: u64 = u64::MAX;
/// The byte each completed write sends to the reaper.
static POKE_BYTE: [u8; 1] = [1];

struct InFlight {
    /// Kept alive until the kernel has finished reading it.
    _buf: DmaBuffer,
    len: usize,
    result: Option<i32>,
}

/// One executor's RWF_DSYNC ring.
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
        let ring = Rc::new(DsyncRing {
            ring: RefCell::new(IoUring::new(RING_ENTRIES)?),
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
        loop {
            let seen = self.reaped.version();
            if self.unreaped.get() < IN_FLIGHT_MAX {
                break;
            }
            self.reaped.changed(seen).await;
        }
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        let len = buf.len();
        let write = opcode::Write::new(types::Fd(fd), buf.as_ptr(), len as u32)
            .offset(pos)
            .rw_flags(libc::RWF_DSYNC)
            .build()
            .user_data(id)
            // The send runs after the write even when the write fails.
            .flags(squeue::Flags::IO_HARDLINK);
        let poke = opcode::Send::new(types::Fd(self.poke_tx.as_raw_fd()), POKE_BYTE.as_ptr(), 1)
            .build()
            .user_data(POKE);
        {
            let mut ring = self.ring.borrow_mut();
            // SAFETY: the buffer lives in `in_flight` until the write's completion is reaped,
            // and POKE_BYTE is static; IN_FLIGHT_MAX keeps the queue from filling.
            unsafe {
                let mut sq = ring.submission();
                sq.push(&write)
                    .and_then(|_| sq.push(&poke))
                    .map_err(|_| io::Error::other("dsync ring full"))?;
            }
            self.in_flight.borrow_mut().insert(
                id,
                InFlight {
                    _buf: buf,
                    len,
                    result: None,
                },
            );
            self.unreaped.set(self.unreaped.get() + 1);
            // Queued entries stay queued when io_uring_enter fails, and go to the kernel with
            // the next submit: so retry an interrupted one, and on any other error leave the
            // slot to the reaper (the buffer must outlive a write that may still run).
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
        // If this future is dropped, the reaper frees the slot when the write completes.
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
        if result as usize != len {
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                "short RWF_DSYNC write",
            ));
        }
        Ok(())
    }

    /// A dropped writer's slot: freed now if complete, else by the reaper.
    fn abandon(&self, id: u64) {
        let mut in_flight = self.in_flight.borrow_mut();
        if in_flight.get(&id).is_some_and(|w| w.result.is_some()) {
            in_flight.remove(&id);
        } else if let Some(w) = in_flight.get_mut(&id) {
            // Marked with an impossible length: the reaper drops it on completion.
            w.len = usize::MAX;
        }
    }

    /// Moves completions into the in-flight table and wakes the writers; returns how many
    /// write completions it found.
    fn reap(&self) -> u64 {
        let mut writes = 0;
        let mut ring = self.ring.borrow_mut();
        let mut in_flight = self.in_flight.borrow_mut();
        for cqe in ring.completion() {
            if cqe.user_data() == POKE {
                continue;
            }
            writes += 1;
            let id = cqe.user_data();
            let abandoned = in_flight.get(&id).is_some_and(|w| w.len == usize::MAX);
            if abandoned {
                in_flight.remove(&id);
            } else if let Some(w) = in_flight.get_mut(&id) {
                w.result = Some(cqe.result());
            }
        }
        drop((ring, in_flight));
        self.unreaped.set(self.unreaped.get() - writes as usize);
        self.reaped.notify();
        writes
    }
}

/// Reads wake-up bytes and reaps, until the ring is gone or the socket fails. Each byte is
/// sent after one write completed, so once `n` bytes are read, `n` write completions are
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
}
