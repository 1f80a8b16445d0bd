//! One remoting connection, either side of it: the server's accepted sockets and the client's
//! outgoing ones run the same machinery, because both sides of a RocketMQ connection send
//! requests (REMOTING.md §1.1): a broker asks its clients to check transactions, a NameServer
//! client may be asked for its running info.
//!
//! Two tasks per connection on the current glommio executor, each with its own descriptor of
//! the socket (a `dup`), so neither needs a lock:
//! - the reader splits frames off its [`ReadBuffer`] (bodies stay slices of what the socket
//!   wrote); a response completes the pending request with its opaque, a request is handed to
//!   the [`RequestHandler`], whose future is polled once right there: answered at once, its
//!   response is queued with no task; waiting (a long poll), it gets a task of its own, so it
//!   does not stall the requests behind it. Bounded by [`REQUESTS_IN_FLIGHT_MAX`];
//! - the writer drains the outbox into a [`FrameWriter`]: headers and small bodies encoded into
//!   one reused buffer, large bodies and body parts referenced, all written with one
//!   `sendmsg`, so a burst of responses costs one syscall.
//!
//! A frame that does not decode closes this connection only, with a log line.
//! Costs per request: one header decode (the body is not copied), one boxed future polled
//! in place (a task spawn only if the handler waits), one header encode (and a copy of the
//! body if it is at most 4 KiB). Per read, one `recv` into uninitialised room, after one
//! non-blocking peek when the last read emptied the socket (the price of waiting through
//! glommio without handing it the buffer). Per batch of responses, one `sendmsg`. Per
//! connection, two descriptors.
//!
//! Measured with tests/namesrv_throughput.rs (release build, client and NameServer on 2 cores
//! shared with other builds), in runs interleaved with the code before this one (a copy per
//! body, a task per request, 64 KiB zero-filled per read): equal within the noise, which is
//! large (medians of 13 runs each: ~6k route lookups/s one at a time for both, 175k/s against
//! 152k/s with 128 in flight; single runs spread 3-17k and 100-310k). A route lookup's time goes
//! to JSON coding and glommio's wake-ups (~9 `io_uring_enter` per lookup made one at a time);
//! the costs removed here were ~2% of the NameServer's CPU in a profile. Syscalls counted per
//! lookup one at a time: one peek, one `recv`, one `sendmsg` (before: one `recv`, one `send`).

use super::frame_io::{FrameWriter, ReadBuffer};
use super::{ConnectionId, RequestError, RequestHandler, Response};
use crate::protocol::codes::response;
use crate::protocol::command::RemotingCommand;
use glommio::channels::local_channel::{self, LocalSender};
use glommio::net::TcpStream;
use glommio::sync::{Semaphore, StaticPermit};
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::future::poll_fn;
use std::future::Future;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

/// Requests of one peer being handled at once. A consumer parks one long-poll per queue it
/// owns on its broker connection (tens to a few hundred); past this bound the reader stops
/// reading, which pushes back on the peer through TCP.
pub const REQUESTS_IN_FLIGHT_MAX: usize = 4096;

/// Requests this side may await answers to on one connection (Java's client allows 65535
/// async requests per process; one connection needs far fewer).
pub const PENDING_REQUESTS_MAX: usize = 4096;

/// Commands waiting for the writer. Responses are bounded by the in-flight bound and requests
/// by the pending bound; the rest of the room is for oneway sends, which fail past it.
pub const OUTBOX_COMMANDS_MAX: usize = REQUESTS_IN_FLIGHT_MAX + PENDING_REQUESTS_MAX + 1024;

/// Why a request to the peer did not get its response.
#[derive(Debug, thiserror::Error)]
pub enum RemotingError {
    #[error("connect to {addr}: {source}")]
    Connect {
        addr: String,
        source: std::io::Error,
    },
    #[error("connection to {0} is closed")]
    Closed(SocketAddr),
    #[error("no response from {peer} within {timeout:?}")]
    Timeout { peer: SocketAddr, timeout: Duration },
    #[error("{0} requests already await a response on this connection")]
    TooManyPending(usize),
    #[error("{0} commands already wait to be written on this connection")]
    OutboxFull(usize),
}

/// A command queued for the writer, with the in-flight permit of the request it answers: the
/// permit is released only once the response is written, so a peer that stops reading stops
/// being served.
struct Outgoing {
    frame: Response,
    _permit: Option<StaticPermit>,
}

impl std::borrow::Borrow<Response> for Outgoing {
    fn borrow(&self) -> &Response {
        &self.frame
    }
}

#[derive(Default)]
struct Outbox {
    queue: RefCell<VecDeque<Outgoing>>,
    writer: RefCell<Option<Waker>>,
}

/// A live connection. Cheap to share (`Rc`); every method works from any task of the executor
/// that owns it.
pub struct Connection {
    id: ConnectionId,
    peer: SocketAddr,
    outbox: Outbox,
    pending: RefCell<HashMap<i32, LocalSender<RemotingCommand>>>,
    opaque_next: Cell<i32>,
    closed: Cell<bool>,
    /// Requests of the peer whose handler waited, so they were given a task of their own.
    requests_deferred: Cell<u64>,
    /// The writer's descriptor, owned by the writer task; `write_fd_open` turns false when that
    /// task ends or is dropped with its executor, after which the number may be reused.
    write_fd: RawFd,
    write_fd_open: Cell<bool>,
}

static CONNECTION_ID_NEXT: AtomicU64 = AtomicU64::new(1);

impl Connection {
    /// Starts the reader and writer tasks of `stream` on the current executor.
    pub fn start<H: RequestHandler>(
        stream: TcpStream,
        handler: Rc<H>,
    ) -> std::io::Result<Rc<Connection>> {
        Self::start_holding(stream, handler, None)
    }

    /// As [`Connection::start`], keeping `slot` (the server's connection-count permit) until
    /// the connection has ended.
    pub(super) fn start_holding<H: RequestHandler>(
        stream: TcpStream,
        handler: Rc<H>,
        slot: Option<StaticPermit>,
    ) -> std::io::Result<Rc<Connection>> {
        let peer = stream.peer_addr()?;
        // SAFETY: `dup` returns a new descriptor that nothing else owns; the writer's stream
        // takes ownership of it and closes it on drop.
        let write_fd = unsafe { libc::dup(stream.as_raw_fd()) };
        if write_fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let write_stream = unsafe { TcpStream::from_raw_fd(write_fd) };
        let conn = Rc::new(Connection {
            id: ConnectionId(CONNECTION_ID_NEXT.fetch_add(1, Ordering::Relaxed)),
            peer,
            outbox: Outbox::default(),
            pending: RefCell::new(HashMap::new()),
            opaque_next: Cell::new(1),
            closed: Cell::new(false),
            requests_deferred: Cell::new(0),
            write_fd,
            write_fd_open: Cell::new(true),
        });
        glommio::spawn_local(write_loop(conn.clone(), write_stream)).detach();
        glommio::spawn_local(read_loop(conn.clone(), stream, handler, slot)).detach();
        Ok(conn)
    }

    pub fn id(&self) -> ConnectionId {
        self.id
    }

    pub fn peer_addr(&self) -> SocketAddr {
        self.peer
    }

    pub fn is_closed(&self) -> bool {
        self.closed.get()
    }

    /// How many of the peer's requests so far had a handler that did not answer at once and so
    /// ran in a task of its own; the others were answered where they were read.
    pub fn requests_deferred(&self) -> u64 {
        self.requests_deferred.get()
    }

    /// Sends a request and waits for the response with its opaque.
    pub async fn request(
        &self,
        mut command: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand, RemotingError> {
        if self.closed.get() {
            return Err(RemotingError::Closed(self.peer));
        }
        let pending = self.pending.borrow().len();
        if pending >= PENDING_REQUESTS_MAX {
            return Err(RemotingError::TooManyPending(pending));
        }
        let opaque = self.next_opaque();
        command.opaque = opaque;
        let (sender, receiver) = local_channel::new_bounded(1);
        self.pending.borrow_mut().insert(opaque, sender);
        if let Err(err) = self.push(Outgoing {
            frame: command.into(),
            _permit: None,
        }) {
            self.pending.borrow_mut().remove(&opaque);
            return Err(err);
        }
        let answer = glommio::timer::timeout(timeout, async { Ok(receiver.recv().await) }).await;
        self.pending.borrow_mut().remove(&opaque);
        match answer {
            Ok(Some(response)) => Ok(response),
            Ok(None) => Err(RemotingError::Closed(self.peer)),
            Err(_) => Err(RemotingError::Timeout {
                peer: self.peer,
                timeout,
            }),
        }
    }

    /// Sends a request the peer will not answer.
    pub fn oneway(&self, command: RemotingCommand) -> Result<(), RemotingError> {
        let mut command = command.oneway();
        command.opaque = self.next_opaque();
        self.push(Outgoing {
            frame: command.into(),
            _permit: None,
        })
    }

    /// Closes the connection: queued commands are dropped, pending requests fail.
    pub fn close(&self) {
        if self.closed.replace(true) {
            return;
        }
        // Shut the socket down now rather than in the writer task, so the peer sees the close
        // even if this executor is busy; it also ends the reader's pending read.
        if self.write_fd_open.get() {
            // SAFETY: the writer task still owns `write_fd`, so it is this connection's socket.
            unsafe { libc::shutdown(self.write_fd, libc::SHUT_RDWR) };
        }
        self.outbox.queue.borrow_mut().clear();
        // Dropping the senders wakes every waiting `request` with "closed".
        self.pending.borrow_mut().clear();
        self.wake_writer();
    }

    fn next_opaque(&self) -> i32 {
        let opaque = self.opaque_next.get();
        self.opaque_next.set(opaque.wrapping_add(1));
        opaque
    }

    fn push(&self, outgoing: Outgoing) -> Result<(), RemotingError> {
        if self.closed.get() {
            return Err(RemotingError::Closed(self.peer));
        }
        let mut queue = self.outbox.queue.borrow_mut();
        if queue.len() >= OUTBOX_COMMANDS_MAX {
            return Err(RemotingError::OutboxFull(queue.len()));
        }
        queue.push_back(outgoing);
        drop(queue);
        self.wake_writer();
        Ok(())
    }

    fn wake_writer(&self) {
        if let Some(waker) = self.outbox.writer.borrow_mut().take() {
            waker.wake();
        }
    }

    /// Waits until commands are queued and moves them all into `batch` (true), or until the
    /// connection is closed (false).
    async fn next_batch(&self, batch: &mut Vec<Outgoing>) -> bool {
        poll_fn(|cx| {
            if self.closed.get() {
                return Poll::Ready(false);
            }
            let mut queue = self.outbox.queue.borrow_mut();
            if queue.is_empty() {
                *self.outbox.writer.borrow_mut() = Some(cx.waker().clone());
                return Poll::Pending;
            }
            batch.extend(queue.drain(..));
            Poll::Ready(true)
        })
        .await
    }

    fn complete(&self, response: RemotingCommand) {
        let sender = self.pending.borrow_mut().remove(&response.opaque);
        match sender {
            // The receiver may have timed out meanwhile; then the answer has no taker.
            Some(sender) => drop(sender.try_send(response)),
            None => {
                tracing::debug!(peer = %self.peer, opaque = response.opaque, "response to no pending request, dropped")
            }
        }
    }
}

/// Marks the writer's descriptor closed however the writer task ends: finished, or dropped
/// with its executor (a client handle may outlive the executor it was made on).
struct WriteFdOwner(Rc<Connection>);

impl Drop for WriteFdOwner {
    fn drop(&mut self) {
        self.0.write_fd_open.set(false);
    }
}

async fn write_loop(conn: Rc<Connection>, mut stream: TcpStream) {
    let _owner = WriteFdOwner(conn.clone());
    let mut writer = FrameWriter::default();
    let mut batch = Vec::new();
    while conn.next_batch(&mut batch).await {
        if let Err(err) = writer.write(&mut stream, &batch).await {
            tracing::debug!(peer = %conn.peer, %err, "write failed, closing connection");
            conn.close();
        }
        // The batch's commands, and with them the in-flight permits of the requests they
        // answered, drop here; the vector is kept for the next batch.
        batch.clear();
    }
}

async fn read_loop<H: RequestHandler>(
    conn: Rc<Connection>,
    stream: TcpStream,
    handler: Rc<H>,
    _slot: Option<StaticPermit>,
) {
    let in_flight = Rc::new(Semaphore::new(REQUESTS_IN_FLIGHT_MAX as u64));
    let mut buf = ReadBuffer::default();
    'reading: loop {
        let mut handed_on = false;
        loop {
            match buf.next_frame() {
                Ok(Some(command)) => {
                    handed_on = true;
                    if command.is_response() {
                        conn.complete(command);
                        continue;
                    }
                    // Waiting here stops reading: the bound pushes back on the peer.
                    let Ok(permit) = in_flight.acquire_static_permit(1).await else {
                        break 'reading;
                    };
                    let mut serving = Box::pin(serve_request(
                        conn.clone(),
                        handler.clone(),
                        command,
                        permit,
                    ));
                    // Polled with a no-op waker, not the reader's: thousands of parked long
                    // polls would otherwise each keep a clone of the reader task's waker, and
                    // glommio counts a task's waker clones in an i16. The spawned task polls
                    // again at once and registers its own.
                    let mut inline = Context::from_waker(Waker::noop());
                    if serving.as_mut().poll(&mut inline).is_pending() {
                        conn.requests_deferred.set(conn.requests_deferred.get() + 1);
                        glommio::spawn_local(serving).detach();
                    }
                }
                Ok(None) => break,
                Err(err) => {
                    tracing::warn!(peer = %conn.peer, %err, "undecodable frame, closing connection");
                    break 'reading;
                }
            }
        }
        if conn.closed.get() {
            break;
        }
        if handed_on {
            // Let what these frames woke (the writer with their answers, a task awaiting a
            // response) run before this task spends a syscall on waiting for more: that
            // syscall would otherwise delay every answer. It also keeps a peer that keeps the
            // socket full from starving the writer.
            futures_lite::future::yield_now().await;
        } else {
            glommio::yield_if_needed().await;
        }
        match buf.read_from(&stream).await {
            Ok(0) => break,
            Ok(_) => {}
            Err(err) => {
                tracing::debug!(peer = %conn.peer, %err, "read failed, closing connection");
                break;
            }
        }
    }
    conn.close();
    handler.connection_closed(conn.id);
}

async fn serve_request<H: RequestHandler>(
    conn: Rc<Connection>,
    handler: Rc<H>,
    request: RemotingCommand,
    permit: StaticPermit,
) {
    let oneway = request.is_oneway();
    let code = request.code;
    // What an error answer needs of the request, kept as the handler takes the request.
    let asked = RemotingCommand::response_to(&request, code, None);
    let response = match handler.handle(conn.clone(), request).await {
        Ok(response) => response,
        Err(err) => {
            tracing::debug!(peer = %conn.peer, code, %err, "request failed");
            system_error(&asked, &err).into()
        }
    };
    if oneway {
        return;
    }
    if let Err(err) = conn.push(Outgoing {
        frame: response,
        _permit: Some(permit),
    }) {
        tracing::debug!(peer = %conn.peer, code, %err, "response not sent");
    }
}

/// Java answers a request its processor threw on with SYSTEM_ERROR and the exception text.
fn system_error(request: &RemotingCommand, err: &RequestError) -> RemotingCommand {
    RemotingCommand::response_to(request, response::SYSTEM_ERROR, Some(err.to_string()))
}

#[cfg(test)]
#[path = "connection_tests.rs"]
mod tests;
