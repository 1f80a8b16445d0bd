//! Where frames meet the socket, for a [`Connection`](super::connection::Connection)'s reader:
//! [`ReadBuffer`]: the socket writes into the spare room of one reused `BytesMut`, nothing is
//! zero-filled first, and each frame is split off it, so a body handed on is a slice of the
//! bytes the kernel wrote.
//!
//! It calls the socket itself with MSG_DONTWAIT and goes through glommio only to wait for
//! readability, by peeking one byte (an io_uring recv that completes when data or the end of
//! the stream is there, and consumes nothing).
//!
//! Costs: per read, one `recv` (plus, when nothing is there yet, a peek through io_uring); a
//! read buffer is copied only to move a partial frame to the front of a reclaimed chunk or
//! into a large frame's own buffer.

use crate::protocol::command::RemotingCommand;
use crate::protocol::frame::{frame_bytes, split_frame, FrameError};
use bytes::BytesMut;
use glommio::net::TcpStream;
use std::io;
use std::os::fd::AsRawFd;

/// Room the read buffer is given at a time; a frame larger than this takes several reads.
pub const READ_CHUNK_BYTES: usize = 64 << 10;

/// Below this much spare room a read would be a syscall for a few bytes, so a new chunk of
/// room is made first.
const READ_SPARE_MIN_BYTES: usize = 4 << 10;

/// The largest allocation the read buffer keeps reading into. Reserving a chunk while a
/// partial frame sits in the buffer can make `BytesMut` double its allocation once; past this
/// (a large frame's buffer reclaimed once that frame is dropped) the buffer starts afresh, so
/// a connection does not keep a 16 MiB buffer because one large frame once came by.
const READ_BUFFER_BYTES_KEPT_MAX: usize = 2 * READ_CHUNK_BYTES;

/// The reader's buffer. Frames are split off its front (`split_frame`), so their bodies share
/// its allocation with no copy.
///
/// Memory a body can pin: a body kept after its request is answered (by the store, or a
/// response body held by a client) keeps alive the allocation it was read into, whatever else
/// was in it. For a frame read with others that is one chunk of at most
/// [`READ_BUFFER_BYTES_KEPT_MAX`]; a frame larger than [`READ_CHUNK_BYTES`] is read into an
/// allocation of its own size, so it pins only itself. While no body is held, the reader keeps
/// reusing the same chunk (`BytesMut::reserve` reclaims it in place). A holder that keeps many
/// small bodies for long should copy them out.
pub struct ReadBuffer {
    buf: BytesMut,
}

impl Default for ReadBuffer {
    fn default() -> Self {
        Self {
            buf: BytesMut::with_capacity(READ_CHUNK_BYTES),
        }
    }
}

impl ReadBuffer {
    /// Takes the next whole frame off the buffer; Ok(None) = more bytes are needed. An error
    /// (an oversized frame is refused as soon as its length prefix is here) means frame
    /// boundaries are lost: the connection must close.
    pub fn next_frame(&mut self) -> Result<Option<RemotingCommand>, FrameError> {
        split_frame(&mut self.buf)
    }

    /// Reads what the socket has into the buffer's spare room, waiting until it has something.
    /// Ok(0) = the peer closed its side (or the socket was shut down).
    pub async fn read_from(&mut self, stream: &TcpStream) -> io::Result<usize> {
        self.make_room();
        loop {
            let spare = self.buf.spare_capacity_mut();
            // SAFETY: recv writes at most `spare.len()` bytes into the buffer's spare room,
            // which is valid for writes; uninitialised memory is fine to write into.
            let read = unsafe {
                libc::recv(
                    stream.as_raw_fd(),
                    spare.as_mut_ptr().cast(),
                    spare.len(),
                    libc::MSG_DONTWAIT,
                )
            };
            if let Ok(read) = usize::try_from(read) {
                // SAFETY: the kernel initialised the `read` bytes after the current length.
                unsafe { self.buf.set_len(self.buf.len() + read) };
                return Ok(read);
            }
            let err = io::Error::last_os_error();
            match err.kind() {
                io::ErrorKind::WouldBlock => {
                    // Completes when a byte or the end of the stream is there, taking nothing
                    // off the socket; the recv above then reads it.
                    stream.peek(&mut [0u8; 1]).await.map_err(io::Error::from)?;
                }
                io::ErrorKind::Interrupted => {}
                _ => return Err(err),
            }
        }
    }

    /// Ensures room for a useful read: for the rest of a large frame at once, in an allocation
    /// of its own (so it is not copied as it grows, and pins nothing else); else a chunk, when
    /// the rest of the pending frame does not fit or little room is left.
    fn make_room(&mut self) {
        let spare = self.buf.capacity() - self.buf.len();
        // The prefix was checked by `next_frame`, which found the frame incomplete.
        let frame_rest = match frame_bytes(&self.buf) {
            Ok(Some(frame)) => frame - self.buf.len(),
            _ => 0,
        };
        if frame_rest > spare {
            if frame_rest > READ_CHUNK_BYTES {
                // The buffer holds only the start of this frame: earlier ones were split off.
                self.start_afresh(frame_rest);
            } else {
                self.reserve_chunk(frame_rest);
            }
        } else if frame_rest == 0 && spare < READ_SPARE_MIN_BYTES {
            self.reserve_chunk(0);
        }
        // Else the rest of the pending frame fits where it is (the end of a large frame).
    }

    /// Reserves room so the buffer holds a chunk (or the rest of the pending frame, if more):
    /// in place if no split-off frame still uses the allocation (bytes then moves the pending
    /// bytes to its front), else in a new one.
    fn reserve_chunk(&mut self, frame_rest: usize) {
        let room = READ_CHUNK_BYTES
            .saturating_sub(self.buf.len())
            .max(frame_rest)
            .max(READ_SPARE_MIN_BYTES);
        self.buf.reserve(room);
        if self.buf.capacity() > READ_BUFFER_BYTES_KEPT_MAX {
            self.start_afresh(room);
        }
    }

    /// Moves the pending bytes into a new allocation with `spare` bytes of room after them.
    fn start_afresh(&mut self, spare: usize) {
        let mut fresh = BytesMut::with_capacity(self.buf.len() + spare);
        fresh.extend_from_slice(&self.buf);
        self.buf = fresh;
    }

    #[cfg(test)]
    pub fn bytes(&self) -> &BytesMut {
        &self.buf
    }
}

#[cfg(test)]
#[path = "frame_io_tests.rs"]
mod tests;
