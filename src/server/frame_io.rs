//! Where frames meet the socket, for both halves of a [`Connection`](super::connection::Connection):
//! - [`ReadBuffer`]: the socket writes into the spare room of one reused `BytesMut`, nothing is
//!   zero-filled first, and each frame is split off it, so a body handed on is a slice of the
//!   bytes the kernel wrote;
//! - [`FrameWriter`]: a batch of frames goes out as one `sendmsg` of an iovec list: the headers
//!   (and bodies up to [`BODY_COPIED_BYTES_MAX`]) encoded into one reused buffer, every larger
//!   body and every body part (a pull's records) referenced where it is.
//!
//! Both call the socket themselves with MSG_DONTWAIT and go through glommio only to wait: the
//! reader for readability, by peeking one byte (an io_uring recv that completes when data or
//! the end of the stream is there, and consumes nothing); the writer for writability, by
//! writing the first pending slice with glommio's `write`, which waits for room and then sends
//! at least part of it.
//!
//! Costs: per read, one `recv`, after a peek through io_uring when the last read emptied the
//! socket (one non-blocking peek syscall, and an io_uring recv if nothing is there yet); a
//! read buffer is copied only to move a partial frame to the front of a reclaimed chunk or
//! into a large frame's own buffer. Per batch of frames written, one `sendmsg` in the common
//! case; one more per [`libc::UIO_MAXIOV`] slices or [`WRITE_COPIED_BYTES_TARGET`] of
//! copied bytes, and per time the socket's send buffer is full. Bytes copied per frame written:
//! its header, and its body only when it is at most [`BODY_COPIED_BYTES_MAX`].

use super::Response;
use crate::protocol::command::RemotingCommand;
use crate::protocol::frame::{encode_frame_head, frame_bytes, split_frame, FrameError};
use bytes::BytesMut;
use futures_lite::AsyncWriteExt;
use glommio::net::TcpStream;
use std::borrow::Borrow;
use std::io;
use std::ops::Range;
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

/// Bodies up to this size are copied beside their header: one copy of a few KiB costs less
/// than the iovec, and keeps a batch of small responses to one slice.
pub const BODY_COPIED_BYTES_MAX: usize = 4 << 10;

/// A batch stops being encoded into one `sendmsg` once this many bytes have been copied into
/// the header buffer (the rest of the batch follows in the next call), so the buffer stays
/// around this size however many responses are queued.
pub const WRITE_COPIED_BYTES_TARGET: usize = 256 << 10;

/// Slices one `sendmsg` takes at most (Linux refuses more with EINVAL).
const IOVECS_PER_CALL_MAX: usize = libc::UIO_MAXIOV as usize;

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
    /// The last read took less than the room it had, so it emptied the socket: the next one
    /// waits for data first instead of making a `recv` that would only say "not yet".
    drained: bool,
}

impl Default for ReadBuffer {
    fn default() -> Self {
        Self {
            buf: BytesMut::with_capacity(READ_CHUNK_BYTES),
            drained: false,
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
        let mut wait_first = self.drained;
        loop {
            if wait_first {
                // Completes when a byte or the end of the stream is there (at once if it
                // already is), taking nothing off the socket; the recv below then reads it.
                stream.peek(&mut [0u8; 1]).await.map_err(io::Error::from)?;
            }
            let spare = self.buf.spare_capacity_mut();
            let room = spare.len();
            // SAFETY: recv writes at most `spare.len()` bytes into the buffer's spare room,
            // which is valid for writes; uninitialised memory is fine to write into.
            let read = unsafe {
                libc::recv(
                    stream.as_raw_fd(),
                    spare.as_mut_ptr().cast(),
                    room,
                    libc::MSG_DONTWAIT,
                )
            };
            if let Ok(read) = usize::try_from(read) {
                // SAFETY: the kernel initialised the `read` bytes after the current length.
                unsafe { self.buf.set_len(self.buf.len() + read) };
                self.drained = read < room;
                return Ok(read);
            }
            let err = io::Error::last_os_error();
            match err.kind() {
                io::ErrorKind::WouldBlock => wait_first = true,
                io::ErrorKind::Interrupted => wait_first = false,
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

/// One slice of a planned `sendmsg`, named by where its bytes live.
enum Piece {
    /// Bytes of the writer's own buffer: headers, and the small bodies copied after them.
    Copied(Range<usize>),
    /// The own body of the frame with this index in the batch.
    Body(usize),
    /// A body part: (frame index, part index).
    Part(usize, usize),
}

/// What the writer did, for tests and the cost lines above.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct WriteCounts {
    /// `sendmsg` calls made (each of up to [`IOVECS_PER_CALL_MAX`] slices).
    pub sendmsg_calls: u64,
    /// Calls that sent less than they were given.
    pub partial_sends: u64,
    /// Times the send buffer was full and the writer waited for room.
    pub writable_waits: u64,
}

/// The writer's state, reused for every batch of its connection.
#[derive(Default)]
pub struct FrameWriter {
    copied: BytesMut,
    pieces: Vec<Piece>,
    /// Built from `pieces` once `copied` no longer moves; pointers are only valid during a
    /// write, and the vector is cleared before the next.
    iovecs: Vec<libc::iovec>,
    pub counts: WriteCounts,
}

impl FrameWriter {
    /// Writes every frame of `frames`, in order, to `stream`.
    pub async fn write<F: Borrow<Response>>(
        &mut self,
        stream: &mut TcpStream,
        frames: &[F],
    ) -> io::Result<()> {
        let mut next = 0;
        while next < frames.len() {
            next = self.plan(frames, next);
            self.send_planned(stream, frames).await?;
        }
        Ok(())
    }

    /// Encodes the frames from `first` on into `copied` and `pieces`, until the copied bytes
    /// pass their target; returns the index of the first frame left for the next call.
    fn plan<F: Borrow<Response>>(&mut self, frames: &[F], first: usize) -> usize {
        self.copied.clear();
        self.pieces.clear();
        // `copied[copied_from..]` is not yet named by a piece.
        let mut copied_from = 0;
        let mut next = first;
        for frame in &frames[first..] {
            if next > first && self.copied.len() >= WRITE_COPIED_BYTES_TARGET {
                break;
            }
            let frame: &Response = frame.borrow();
            encode_frame_head(&frame.command, frame.body_len(), &mut self.copied);
            if frame.command.body.len() <= BODY_COPIED_BYTES_MAX {
                self.copied.extend_from_slice(&frame.command.body);
            } else {
                self.name_copied(&mut copied_from);
                self.pieces.push(Piece::Body(next));
            }
            for (part, bytes) in frame.body_parts.iter().enumerate() {
                if !bytes.is_empty() {
                    self.name_copied(&mut copied_from);
                    self.pieces.push(Piece::Part(next, part));
                }
            }
            next += 1;
        }
        self.name_copied(&mut copied_from);
        next
    }

    /// Ends the current run of copied bytes with a piece naming it, if it has any.
    fn name_copied(&mut self, copied_from: &mut usize) {
        let end = self.copied.len();
        if *copied_from < end {
            self.pieces.push(Piece::Copied(*copied_from..end));
        }
        *copied_from = end;
    }

    /// Sends the planned slices, however many calls the socket makes that take.
    async fn send_planned<F: Borrow<Response>>(
        &mut self,
        stream: &mut TcpStream,
        frames: &[F],
    ) -> io::Result<()> {
        self.iovecs.clear();
        for piece in &self.pieces {
            let bytes: &[u8] = match piece {
                Piece::Copied(range) => &self.copied[range.clone()],
                Piece::Body(frame) => &frames[*frame].borrow().command.body,
                Piece::Part(frame, part) => &frames[*frame].borrow().body_parts[*part],
            };
            self.iovecs.push(libc::iovec {
                iov_base: bytes.as_ptr() as *mut libc::c_void,
                iov_len: bytes.len(),
            });
        }
        // Every iovec points into `self.copied` or into `frames`, neither of which changes
        // until this function returns.
        let mut pending: &mut [libc::iovec] = &mut self.iovecs;
        while !pending.is_empty() {
            let call = pending.len().min(IOVECS_PER_CALL_MAX);
            let offered: usize = pending[..call].iter().map(|iov| iov.iov_len).sum();
            // SAFETY: the msghdr names `call` iovecs of readable memory (see above); sendmsg
            // only reads them.
            let sent = unsafe {
                let mut msg: libc::msghdr = std::mem::zeroed();
                msg.msg_iov = pending.as_mut_ptr();
                msg.msg_iovlen = call as _;
                libc::sendmsg(
                    stream.as_raw_fd(),
                    &msg,
                    libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
                )
            };
            self.counts.sendmsg_calls += 1;
            if let Ok(sent) = usize::try_from(sent) {
                if sent < offered {
                    self.counts.partial_sends += 1;
                }
                advance(&mut pending, sent);
                continue;
            }
            let err = io::Error::last_os_error();
            match err.kind() {
                io::ErrorKind::WouldBlock => {
                    self.counts.writable_waits += 1;
                    // SAFETY: as above; the first pending iovec is non-empty readable memory.
                    let first = unsafe {
                        std::slice::from_raw_parts(
                            pending[0].iov_base as *const u8,
                            pending[0].iov_len,
                        )
                    };
                    // Waits for room in the send buffer, then sends at least part of it.
                    let sent = stream.write(first).await?;
                    if sent == 0 {
                        return Err(io::ErrorKind::WriteZero.into());
                    }
                    advance(&mut pending, sent);
                }
                io::ErrorKind::Interrupted => {}
                _ => return Err(err),
            }
        }
        Ok(())
    }
}

/// Drops `sent` bytes off the front of `pending`: whole slices, then part of the next.
fn advance(pending: &mut &mut [libc::iovec], mut sent: usize) {
    let slices = std::mem::take(pending);
    let mut whole = 0;
    while whole < slices.len() && slices[whole].iov_len <= sent {
        sent -= slices[whole].iov_len;
        whole += 1;
    }
    let rest = &mut slices[whole..];
    match rest.first_mut() {
        Some(first) => {
            // SAFETY: `sent` is less than this slice's length, so the pointer stays inside it.
            first.iov_base = unsafe { first.iov_base.cast::<u8>().add(sent) }.cast();
            first.iov_len -= sent;
        }
        None => debug_assert_eq!(sent, 0, "sent more than was offered"),
    }
    *pending = rest;
}

#[cfg(test)]
#[path = "frame_io_tests.rs"]
mod tests;
