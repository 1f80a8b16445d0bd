//! One shard's wake primitive: the [`Armed`] flag plus a nonblocking AF_UNIX socket pair.
//! Any thread rings by writing one byte to the pair's sending end; the receiver sleeps in a
//! read of the other end through glommio, so its wake-up is an I/O completion on its own
//! io_uring (how glommio's reactor sleeps anyway), never one of glommio's foreign wakers.
//!
//! Cost: while the receiver works it is disarmed and a sender pays one fence and one swap,
//! no syscall. Only the first sender after the receiver armed writes (one `send`), and the
//! receiver pays one `recv` per sleep (glommio tries it before it polls) and one poll.

use crate::armed::Armed;
use glommio::net::UnixStream;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};

/// Bytes read per `recv` when draining the socket: each arming yields at most one byte, and
/// the few left by rings that raced with a disarm fit in one read.
const DRAIN_BYTES_MAX: usize = 64;

/// The sending side: shared (in an `Arc`) by every thread that may wake this receiver.
#[derive(Debug)]
pub(crate) struct WakeSender {
    pub(crate) armed: Armed,
    socket: OwnedFd,
}

impl WakeSender {
    /// Call after every push the receiver must see. Writes only when the receiver is armed.
    pub(crate) fn notify(&self) {
        if self.armed.take() {
            self.ring();
        }
    }

    fn ring(&self) {
        let byte = 1u8;
        // SAFETY: `socket` is an open socket for as long as `self` lives; one byte is read.
        let sent = unsafe {
            libc::send(
                self.socket.as_raw_fd(),
                (&byte as *const u8).cast(),
                1,
                libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
            )
        };
        if sent != 1 {
            // EAGAIN: the socket is full of unread bytes, which already wake the receiver.
            // EPIPE/ECONNRESET: the receiving shard is gone (the broker is stopping).
            let err = io::Error::last_os_error().raw_os_error();
            assert!(
                matches!(err, Some(libc::EAGAIN | libc::EPIPE | libc::ECONNRESET)),
                "wake socket send failed: {err:?}"
            );
        }
    }
}

/// Makes the pair: the shared sending side and the receiving end, which becomes a
/// [`WakeReceiver`] on the receiver's executor (glommio sockets are bound to one).
pub(crate) fn wake_pair() -> (WakeSender, OwnedFd) {
    let mut fds = [0; 2];
    let kind = libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC;
    // SAFETY: socketpair writes two descriptors into `fds` on success.
    let made = unsafe { libc::socketpair(libc::AF_UNIX, kind, 0, fds.as_mut_ptr()) };
    assert_eq!(made, 0, "socketpair: {}", io::Error::last_os_error());
    // SAFETY: both descriptors are fresh and owned by nobody else.
    let (tx, rx) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let sender = WakeSender {
        armed: Armed::default(),
        socket: tx,
    };
    (sender, rx)
}

/// The receiving side, on the receiver's executor. One receiver per [`WakeSender`].
pub(crate) struct WakeReceiver {
    stream: UnixStream,
    /// `stream`'s descriptor (glommio's UnixStream does not give it back), for draining.
    fd: RawFd,
    sleeps: u64,
}

impl WakeReceiver {
    /// Must run on the executor that will wait.
    pub(crate) fn new(socket: OwnedFd) -> Self {
        let fd = socket.into_raw_fd();
        // SAFETY: the descriptor is a nonblocking stream socket whose ownership moves here.
        let stream = unsafe { UnixStream::from_raw_fd(fd) };
        Self {
            stream,
            fd,
            sleeps: 0,
        }
    }

    /// Times this receiver slept on its socket (a test proves with it that sleeps happened).
    pub(crate) fn sleeps(&self) -> u64 {
        self.sleeps
    }

    /// Returns once `has_work()` is true; in between, sleeps on the socket without losing a
    /// ring from `sender` (the protocol in `armed.rs`).
    pub(crate) async fn until(&mut self, sender: &WakeSender, has_work: impl Fn() -> bool) {
        while !has_work() {
            if sender.armed.arm(&has_work) {
                self.sleep().await;
                sender.armed.disarm();
            }
        }
    }

    /// Waits for at least one byte, then drains what else is there without waiting. A short
    /// read took every byte there was (a stream socket returns all it holds, up to the
    /// buffer), so only a full one needs another read.
    async fn sleep(&mut self) {
        use futures_lite::AsyncReadExt;
        let mut bytes = [0u8; DRAIN_BYTES_MAX];
        let read = self.stream.read(&mut bytes).await;
        let mut read = read.unwrap_or_else(|err| panic!("wake socket read failed: {err}"));
        // The sending end lives in the same shared state as this receiver's own handle.
        assert!(read > 0, "wake socket closed while its receiver waits");
        self.sleeps += 1;
        while read == DRAIN_BYTES_MAX {
            read = read_now(self.fd, &mut bytes);
        }
    }
}

/// One nonblocking read; 0 when nothing is there.
fn read_now(fd: RawFd, bytes: &mut [u8]) -> usize {
    // SAFETY: `bytes` is writable for its length; `fd` is open while the receiver lives.
    let read = unsafe {
        libc::recv(
            fd,
            bytes.as_mut_ptr().cast(),
            bytes.len(),
            libc::MSG_DONTWAIT,
        )
    };
    usize::try_from(read).unwrap_or(0)
}
