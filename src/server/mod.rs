//! The remoting server loop shared by the NameServer and (later) the broker: accept, then run
//! each connection with [`connection::Connection`], handing requests to a [`RequestHandler`].

pub mod connection;
mod frame_io;

use crate::protocol::codes::response;
use crate::protocol::command::RemotingCommand;
use crate::protocol::fastjson::FastjsonError;
use crate::protocol::frame::FRAME_BYTES_MAX;
use crate::protocol::header::HeaderError;
use bytes::Bytes;
use connection::Connection;
use glommio::net::TcpListener;
use glommio::sync::Semaphore;
use glommio::timer::Timer;
use std::future::Future;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;

/// Connections served at once. Every RocketMQ client process keeps one connection per
/// NameServer and per broker, so this is roughly the number of client processes; past it the
/// server stops accepting until one closes (and the file-descriptor limit is not hit first).
pub const CONNECTIONS_MAX: usize = 16_384;

/// Identifies one connection for the life of the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConnectionId(pub u64);

/// Why a request could not be served; it is answered with SYSTEM_ERROR and this text as the
/// remark (as Java does when a processor throws), and the connection stays open.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error(transparent)]
    Header(#[from] HeaderError),
    #[error("malformed body: {0}")]
    Body(#[from] FastjsonError),
    #[error("{0}")]
    Refused(String),
}

/// What a handler answers: the command, and after its own body further body parts written as
/// they are (a pull's records straight from the store's buffers), so no record is copied to be
/// sent. On the wire the frame's body is `command.body` followed by every part, and the whole
/// frame stays within `FRAME_BYTES_MAX`.
#[derive(Debug)]
pub struct Response {
    pub command: RemotingCommand,
    pub body_parts: Vec<Bytes>,
}

impl From<RemotingCommand> for Response {
    fn from(command: RemotingCommand) -> Self {
        Self {
            command,
            body_parts: Vec::new(),
        }
    }
}

impl Response {
    /// `command` with `parts` sent after its own body.
    pub fn gathered(command: RemotingCommand, parts: Vec<Bytes>) -> Self {
        let response = Self {
            command,
            body_parts: parts,
        };
        debug_assert!(
            response.body_len() < FRAME_BYTES_MAX,
            "a body of {} bytes cannot fit a frame",
            response.body_len()
        );
        response
    }

    /// The frame body's length: the command's own body and every part.
    pub fn body_len(&self) -> usize {
        self.command.body.len() + self.body_parts.iter().map(Bytes::len).sum::<usize>()
    }
}

/// What a server (or a client, for requests its peer sends it) does with a request.
pub trait RequestHandler: 'static {
    /// Produces the response to `request`, built with `RemotingCommand::response_to`. The
    /// future owns what it needs, so the connection polls it once where the request was read
    /// and gives it a task of its own only if it waits: a handler that can answer at once should
    /// (no task is spawned then). It may take as long as it likes (long polling); other
    /// requests are served meanwhile. For a oneway request the response is dropped.
    fn handle(
        self: Rc<Self>,
        connection: Rc<Connection>,
        request: RemotingCommand,
    ) -> impl Future<Output = Result<Response, RequestError>> + 'static;

    /// The connection is gone (closed by either side, or dropped after a bad frame).
    fn connection_closed(&self, _connection: ConnectionId) {}
}

/// After a failed accept (or a failed start of an accepted socket) the loop pauses, doubling
/// from the first to the longest pause while failures repeat (as Go's net/http does): a
/// persistent failure such as the descriptor limit then costs a log line per second, not a
/// spinning core.
const ACCEPT_RETRY_PAUSE_FIRST: Duration = Duration::from_millis(5);
const ACCEPT_RETRY_PAUSE_MAX: Duration = Duration::from_secs(1);

/// Accepts connections on `listener` and serves each with `handler`, forever. Runs on the
/// current glommio executor.
pub async fn serve<H: RequestHandler>(listener: TcpListener, handler: Rc<H>) {
    let slots = Rc::new(Semaphore::new(CONNECTIONS_MAX as u64));
    let mut pause = ACCEPT_RETRY_PAUSE_FIRST;
    loop {
        let Ok(slot) = slots.acquire_static_permit(1).await else {
            return;
        };
        let started = match listener.accept().await {
            Ok(stream) => {
                let _ = stream.set_nodelay(true);
                Connection::start_holding(stream, handler.clone(), Some(slot))
                    .map_err(|err| format!("could not start a connection: {err}"))
            }
            Err(err) => Err(format!("accept failed: {err}")),
        };
        match started {
            Ok(connection) => {
                pause = ACCEPT_RETRY_PAUSE_FIRST;
                tracing::debug!(peer = %connection.peer_addr(), id = connection.id().0, "connection accepted");
            }
            Err(err) => {
                // Transient (a peer reset before accept, the descriptor limit): keep serving.
                tracing::warn!(?pause, "{err}");
                Timer::new(pause).await;
                pause = (pause * 2).min(ACCEPT_RETRY_PAUSE_MAX);
            }
        }
    }
}

/// How long [`claim_port`] waits to learn whether something already listens on a port.
const PORT_PROBE_TIMEOUT: Duration = Duration::from_secs(1);
/// How long [`claim_port`] lets a port held by a listener go free. A process that just exited
/// (a restart after SIGKILL) leaves its io_uring torn down asynchronously by the kernel, and
/// its listening socket keeps accepting until the pending accepts are cancelled, typically
/// for well under a second.
const PORT_RELEASE_PATIENCE: Duration = Duration::from_secs(5);
const PORT_RELEASE_RECHECK: Duration = Duration::from_millis(100);

/// Makes sure no other process listens on `addr`, and turns port 0 into a free port.
/// glommio sets SO_REUSEPORT on every listener (that is how a broker's shards share one port),
/// and the kernel would let a second process of the same user join that group and take part of
/// the connections. So a fixed port is probed by connecting to it: an answer means another
/// listener. (A probe bind without SO_REUSEPORT would also fail on the previous run's
/// connections still in TIME_WAIT, refusing a legitimate restart.) Blocking; for start-up.
pub fn claim_port(addr: SocketAddr) -> std::io::Result<SocketAddr> {
    if addr.port() == 0 {
        return std::net::TcpListener::bind(addr)?.local_addr();
    }
    let mut probe = addr;
    if probe.ip().is_unspecified() {
        probe.set_ip(match probe {
            SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    let deadline = std::time::Instant::now() + PORT_RELEASE_PATIENCE;
    loop {
        let listened = match std::net::TcpStream::connect_timeout(&probe, PORT_PROBE_TIMEOUT) {
            // A port in the ephemeral range can be picked as the probe's own source port:
            // TCP then connects the socket to itself (simultaneous open), which is no listener.
            Ok(stream) => stream.local_addr().ok() != stream.peer_addr().ok(),
            Err(_) => false,
        };
        if !listened {
            return Ok(addr);
        }
        if std::time::Instant::now() >= deadline {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AddrInUse,
                format!("Address already in use: another process listens on {addr}"),
            ));
        }
        std::thread::sleep(PORT_RELEASE_RECHECK);
    }
}

/// The answer to a request code nobody serves, worded as Java words it (leading space included).
pub fn not_supported(request: &RemotingCommand) -> RemotingCommand {
    let remark = format!(" request type {} not supported", request.code);
    RemotingCommand::response_to(request, response::REQUEST_CODE_NOT_SUPPORTED, Some(remark))
}
